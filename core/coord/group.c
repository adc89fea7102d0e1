/* The classic group state machine: Kafka's ClassicGroup and the classic
 * part of GroupMetadataManager (group-coordinator, Kafka 3.9), function
 * for function where the names below mirror theirs. See group.h. */
#include "coord/group.h"
#include "coord/consumer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/gen/consumer_protocol_subscription.h"
#include "proto/kerr.h"
#include "util/buf.h"
#include "util/slog.h"
#include "util/uuid.h"

#define CONSUMER_PROTOCOL_TYPE "consumer"
/* Kafka's unbounded loop guard has no equivalent: timers that fire at
 * once (a zero delay) are run again in the same tick, at most this many
 * rounds. */
#define TICK_ROUNDS 16

static const char *const state_names[] = {"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"};

const char *cg_state_name(enum cg_state s)
{
    return s >= CG_EMPTY && s <= CG_DEAD ? state_names[s] : "Unknown";
}

/* ------------------------------------------------------------------ */
/* small helpers                                                       */

static char *kdup(kstr_t s)
{
    if (s.len < 0)
        return NULL;
    return xstrndup(s.p ? s.p : "", (size_t)s.len);
}

static bool eqk(const char *a, kstr_t b)
{
    if (!a || b.len < 0)
        return false;
    size_t n = strlen(a);
    return n == (size_t)b.len && memcmp(a, b.p, n) == 0;
}

static bool eqs(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

static kstr_t ks(const char *s)
{
    return s ? KSTR(s) : KSTR_NULL;
}

static kstr_t arena_ks(struct arena *a, const char *s)
{
    if (!s)
        return KSTR_NULL;
    size_t n = strlen(s);
    return (kstr_t){arena_strndup(a, s, n), (int32_t)n};
}

static kbytes_t arena_kb(struct arena *a, const uint8_t *p, int32_t len)
{
    if (len <= 0)
        return (kbytes_t){NULL, 0};
    uint8_t *c = arena_alloc(a, (size_t)len);
    memcpy(c, p, (size_t)len);
    return (kbytes_t){c, len};
}

static uint8_t *bdup(const uint8_t *p, int32_t len)
{
    if (len <= 0)
        return NULL;
    uint8_t *c = xmalloc((size_t)len);
    memcpy(c, p, (size_t)len);
    return c;
}

/* Java's UUID.randomUUID().toString(). */
static void java_uuid(char out[37])
{
    uint8_t b[16];
    if (uuid_random(b) < 0) {
        /* getrandom failing leaves ids unique enough through the clock */
        int64_t t = (int64_t)(uintptr_t)out ^ (int64_t)clock();
        for (int i = 0; i < 16; i++)
            b[i] = (uint8_t)(t >> ((i % 8) * 8)) ^ (uint8_t)i;
    }
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
             b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* ClassicGroup.generateMemberId: "<instance id or client id>-<uuid>". */
static char *generate_member_id(kstr_t client_id, kstr_t instance_id)
{
    kstr_t prefix = instance_id.len >= 0 ? instance_id : client_id;
    int32_t n = prefix.len > 0 ? prefix.len : 0;
    char u[37];
    java_uuid(u);
    char *id = xmalloc((size_t)n + 1 + 36 + 1);
    if (n)
        memcpy(id, prefix.p, (size_t)n);
    id[n] = '-';
    memcpy(id + n + 1, u, 37);
    return id;
}

static void free_protocols(struct cg_protocol *p, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        free(p[i].name);
        free(p[i].meta);
    }
    free(p);
}

static struct cg_protocol *copy_protocols(const kstr_t *names, const kbytes_t *meta, int32_t n)
{
    struct cg_protocol *p = xcalloc((size_t)(n > 0 ? n : 1), sizeof *p);
    for (int32_t i = 0; i < n; i++) {
        p[i].name = kdup(names[i].len >= 0 ? names[i] : KSTR_LIT(""));
        p[i].meta_len = meta[i].len > 0 ? meta[i].len : 0;
        p[i].meta = bdup(meta[i].p, p[i].meta_len);
    }
    return p;
}

static void member_free(struct cg_member *m)
{
    free(m->member_id);
    free(m->instance_id);
    free(m->client_id);
    free(m->client_host);
    free(m->protocol_type);
    free_protocols(m->protocols, m->nprotocols);
    free(m->assignment);
    free(m);
}

static const struct cg_protocol *member_protocol(const struct cg_member *m, const char *name)
{
    for (int32_t i = 0; i < m->nprotocols; i++)
        if (eqs(m->protocols[i].name, name))
            return &m->protocols[i];
    return NULL;
}

static bool member_supports(const struct cg_member *m, const char *name)
{
    return member_protocol(m, name) != NULL;
}

/* ClassicGroupMember.matches: the same protocols, in the same order. */
static bool member_matches(const struct cg_member *m, const struct cg_join_req *rq)
{
    if (m->nprotocols != rq->nprotocols)
        return false;
    for (int32_t i = 0; i < rq->nprotocols; i++) {
        const struct cg_protocol *p = &m->protocols[i];
        kbytes_t b = rq->protocol_metadata[i];
        int32_t bl = b.len > 0 ? b.len : 0;
        if (!eqk(p->name, rq->protocol_names[i].len >= 0 ? rq->protocol_names[i] : KSTR_LIT("")) ||
            p->meta_len != bl || (bl && memcmp(p->meta, b.p, (size_t)bl) != 0))
            return false;
    }
    return true;
}

static bool has_satisfied_heartbeat(const struct cg_member *m)
{
    if (m->is_new)
        return false;
    return m->awaiting_join || m->awaiting_sync;
}

static void set_assignment(struct cg_member *m, const uint8_t *p, int32_t len)
{
    free(m->assignment);
    m->assignment_len = len > 0 ? len : 0;
    m->assignment = bdup(p, m->assignment_len);
}

/* ------------------------------------------------------------------ */
/* waiters                                                             */

void cg_waiter_init(struct cg_waiter *w, int kind, void (*notify)(void *, const struct cg_waiter *), void *arg)
{
    memset(w, 0, sizeof *w);
    w->kind = kind;
    atomic_init(&w->done, false);
    w->notify = notify;
    w->notify_arg = arg;
    arena_init(&w->arena);
    w->ack_offset = -1;
    w->ack_epoch = -1;
    w->generation = -1;
    w->member_id = KSTR_LIT("");
    w->leader = KSTR_LIT("");
    w->protocol_type = KSTR_NULL;
    w->protocol_name = KSTR_NULL;
}

void cg_waiter_release(struct cg_waiter *w)
{
    arena_free(&w->arena);
}

bool cg_waiter_detach(struct cg_waiter *w)
{
    struct cg_member *m = w->member;
    if (!m)
        return false;
    if (m->join_waiter == w)
        m->join_waiter = NULL;
    if (m->sync_waiter == w)
        m->sync_waiter = NULL;
    w->member = NULL;
    return true;
}

/* Publishes w: after the release store its request may run (and free
 * w) on its own worker, so nothing touches w afterwards. */
static void waiter_finish(struct cg_env *e, struct cg_waiter *w)
{
    w->member = NULL;
    w->ack_offset = e ? e->ack_offset : -1;
    w->ack_epoch = e ? e->ack_epoch : -1;
    void (*notify)(void *, const struct cg_waiter *) = w->notify;
    void *arg = w->notify_arg;
    atomic_store_explicit(&w->done, true, memory_order_release);
    if (notify)
        notify(arg, w);
}

struct join_resp {
    int16_t error;
    int32_t generation;
    const char *member_id;
    const char *leader;
    const char *protocol_type;
    const char *protocol_name;
    bool skip_assignment;
    bool with_members;
};

/* ClassicGroup.currentClassicGroupMembers, copied into the waiter. */
static void fill_members(const struct cgroup *g, struct cg_waiter *w)
{
    w->members = arena_alloc(&w->arena, (size_t)(g->nmembers > 0 ? g->nmembers : 1) * sizeof *w->members);
    w->nmembers = g->nmembers;
    for (int32_t i = 0; i < g->nmembers; i++) {
        const struct cg_member *m = g->members[i];
        const struct cg_protocol *p = member_protocol(m, g->protocol_name);
        w->members[i].member_id = arena_ks(&w->arena, m->member_id);
        w->members[i].instance_id = arena_ks(&w->arena, m->instance_id);
        w->members[i].metadata = p ? arena_kb(&w->arena, p->meta, p->meta_len) : (kbytes_t){NULL, 0};
    }
}

static void fill_join(const struct cgroup *g, struct cg_waiter *w, const struct join_resp *r)
{
    w->error = r->error;
    w->generation = r->generation;
    w->member_id = r->member_id ? arena_ks(&w->arena, r->member_id) : KSTR_LIT("");
    w->leader = r->leader ? arena_ks(&w->arena, r->leader) : KSTR_LIT("");
    w->protocol_type = arena_ks(&w->arena, r->protocol_type);
    w->protocol_name = arena_ks(&w->arena, r->protocol_name);
    w->skip_assignment = r->skip_assignment;
    if (r->with_members)
        fill_members(g, w);
}

/* A JoinGroup answered at once (not through a member). */
static void respond_join(struct cg_env *e, const struct cgroup *g, struct cg_waiter *w, const struct join_resp *r)
{
    fill_join(g, w, r);
    waiter_finish(e, w);
}

static void respond_join_error(struct cg_env *e, struct cg_waiter *w, int16_t err, const char *member_id)
{
    struct join_resp r = {.error = err, .generation = -1, .member_id = member_id};
    respond_join(e, NULL, w, &r);
}

/* ClassicGroup.completeJoinFuture. */
static bool complete_join(struct cg_env *e, struct cgroup *g, struct cg_member *m, const struct join_resp *r)
{
    if (!m->awaiting_join)
        return false;
    m->awaiting_join = false;
    g->num_awaiting_join--;
    struct cg_waiter *w = m->join_waiter;
    m->join_waiter = NULL;
    if (w) {
        fill_join(g, w, r);
        waiter_finish(e, w);
    }
    return true;
}

/* ClassicGroup.completeSyncFuture. */
static bool complete_sync(struct cg_env *e, struct cg_member *m, int16_t err, const char *ptype, const char *pname,
                          const uint8_t *assign, int32_t assign_len)
{
    if (!m->awaiting_sync)
        return false;
    m->awaiting_sync = false;
    struct cg_waiter *w = m->sync_waiter;
    m->sync_waiter = NULL;
    if (w) {
        w->error = err;
        w->protocol_type = arena_ks(&w->arena, ptype);
        w->protocol_name = arena_ks(&w->arena, pname);
        w->assignment = arena_kb(&w->arena, assign, assign_len);
        waiter_finish(e, w);
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* membership (ClassicGroup)                                           */

struct cgroup *cg_new(const char *id, int32_t len, int64_t wall_now)
{
    struct cgroup *g = xcalloc(1, sizeof *g);
    g->id = xstrndup(id, (size_t)len);
    g->id_len = len;
    g->state = CG_EMPTY;
    g->prev_state = CG_DEAD;
    g->state_ts = wall_now;
    g->join_deadline = CG_NO_DEADLINE;
    g->sync_deadline = CG_NO_DEADLINE;
    g->heap_index = -1;
    hmap_init(&g->offsets);
    hmap_init(&g->txn);
    return g;
}

static int32_t member_index(const struct cgroup *g, kstr_t member_id)
{
    for (int32_t i = 0; i < g->nmembers; i++)
        if (eqk(g->members[i]->member_id, member_id))
            return i;
    return -1;
}

struct cg_member *cg_member_find(const struct cgroup *g, kstr_t member_id)
{
    int32_t i = member_index(g, member_id);
    return i >= 0 ? g->members[i] : NULL;
}

static struct cg_member *static_member(const struct cgroup *g, kstr_t instance_id)
{
    if (instance_id.len < 0)
        return NULL;
    for (int32_t i = 0; i < g->nmembers; i++)
        if (eqk(g->members[i]->instance_id, instance_id))
            return g->members[i];
    return NULL;
}

static int32_t pending_index(const struct cgroup *g, kstr_t member_id)
{
    for (int32_t i = 0; i < g->npending; i++)
        if (eqk(g->pending[i].member_id, member_id))
            return i;
    return -1;
}

bool cg_is_pending(const struct cgroup *g, kstr_t member_id)
{
    return pending_index(g, member_id) >= 0;
}

static void pending_remove_at(struct cgroup *g, int32_t i)
{
    free(g->pending[i].member_id);
    g->pending[i] = g->pending[--g->npending];
}

static void pending_add(struct cgroup *g, const char *member_id, int64_t deadline)
{
    if (g->npending == g->cappending) {
        g->cappending = g->cappending ? 2 * g->cappending : 4;
        g->pending = xrealloc(g->pending, (size_t)g->cappending * sizeof *g->pending);
    }
    g->pending[g->npending++] = (struct cg_pending_member){xstrdup(member_id), deadline};
}

bool cg_is_disposable(const struct cgroup *g)
{
    if (g->cc && (g->cc->nmembers > 0 || g->cc->has_records))
        return false;
    return g->state == CG_EMPTY && g->nmembers == 0 && g->npending == 0 && hmap_count(&g->offsets) == 0 &&
           hmap_count(&g->txn) == 0 && !g->has_record;
}

static bool is_leader(const struct cgroup *g, const char *member_id)
{
    return eqs(g->leader, member_id);
}

static void set_leader(struct cgroup *g, const char *member_id)
{
    char *c = member_id ? xstrdup(member_id) : NULL;
    free(g->leader);
    g->leader = c;
}

static void set_str(char **dst, const char *s)
{
    char *c = s ? xstrdup(s) : NULL;
    free(*dst);
    *dst = c;
}

static int32_t rebalance_timeout(const struct cgroup *g)
{
    int32_t t = 0;
    for (int32_t i = 0; i < g->nmembers; i++)
        if (g->members[i]->rebalance_timeout_ms > t)
            t = g->members[i]->rebalance_timeout_ms;
    return t;
}

static bool has_all_members_joined(const struct cgroup *g)
{
    return g->nmembers == g->num_awaiting_join && g->npending == 0;
}

/* A protocol name every member supports. */
static bool supported_by_all(const struct cgroup *g, const char *name)
{
    for (int32_t i = 0; i < g->nmembers; i++)
        if (!member_supports(g->members[i], name))
            return false;
    return true;
}

/* ClassicGroup.supportsProtocols. */
static bool supports_protocols(const struct cgroup *g, kstr_t ptype, int32_t n, const kstr_t *names)
{
    if (g->state == CG_EMPTY)
        return ptype.len > 0 && n > 0;
    if (!eqk(g->protocol_type, ptype))
        return false;
    for (int32_t i = 0; i < n; i++) {
        char *name = kdup(names[i].len >= 0 ? names[i] : KSTR_LIT(""));
        bool ok = supported_by_all(g, name);
        free(name);
        if (ok)
            return true;
    }
    return false;
}

/* ClassicGroup.selectProtocol: each member votes for its first
 * protocol that all support; most votes wins (ties: the first voted). */
static char *select_protocol(const struct cgroup *g)
{
    if (g->nmembers == 0)
        return NULL;
    const char **names = xcalloc((size_t)g->nmembers, sizeof *names);
    int32_t *votes = xcalloc((size_t)g->nmembers, sizeof *votes);
    int32_t n = 0;
    for (int32_t i = 0; i < g->nmembers; i++) {
        const struct cg_member *m = g->members[i];
        const char *vote = NULL;
        for (int32_t k = 0; k < m->nprotocols && !vote; k++)
            if (supported_by_all(g, m->protocols[k].name))
                vote = m->protocols[k].name;
        if (!vote)
            continue;
        int32_t j = 0;
        while (j < n && strcmp(names[j], vote) != 0)
            j++;
        if (j == n)
            names[n++] = vote;
        votes[j]++;
    }
    int32_t best = -1;
    for (int32_t j = 0; j < n; j++)
        if (best < 0 || votes[j] > votes[best])
            best = j;
    char *r = best >= 0 ? xstrdup(names[best]) : NULL;
    free(names);
    free(votes);
    return r;
}

static void clear_subscribed(struct cgroup *g)
{
    for (int32_t i = 0; i < g->nsubscribed; i++)
        free(g->subscribed[i]);
    free(g->subscribed);
    g->subscribed = NULL;
    g->nsubscribed = 0;
    g->subscribed_known = false;
}

static void add_subscribed(struct cgroup *g, kstr_t topic)
{
    for (int32_t i = 0; i < g->nsubscribed; i++)
        if (eqk(g->subscribed[i], topic))
            return;
    g->subscribed = xrealloc(g->subscribed, (size_t)(g->nsubscribed + 1) * sizeof *g->subscribed);
    g->subscribed[g->nsubscribed++] = kdup(topic);
}

/* ClassicGroup.computeSubscribedTopics: the topics of every member's
 * ConsumerProtocolSubscription, read as version 0 (the prefix of all). */
static void compute_subscribed(struct cgroup *g)
{
    clear_subscribed(g);
    if (!eqs(g->protocol_type, CONSUMER_PROTOCOL_TYPE))
        return;
    if (g->nmembers == 0) {
        g->subscribed_known = true;
        return;
    }
    if (!g->protocol_name)
        return;
    for (int32_t i = 0; i < g->nmembers; i++) {
        const struct cg_protocol *p = member_protocol(g->members[i], g->protocol_name);
        if (!p) {
            clear_subscribed(g);
            return;
        }
        struct arena a = ARENA_INIT;
        struct kreader r;
        kr_init(&r, p->meta, (size_t)p->meta_len, &a);
        (void)kr_i16(&r); /* version */
        consumer_protocol_subscription_t sub;
        int rc = consumer_protocol_subscription_decode(&r, 0, &sub);
        if (rc < 0 || r.err) {
            arena_free(&a);
            slog_warn("group %s: the consumer protocol subscription of member %s does not parse; "
                      "the coordinator does not know the subscribed topics",
                      g->id, g->members[i]->member_id);
            clear_subscribed(g);
            return;
        }
        for (int32_t t = 0; t < sub.topics.n; t++)
            add_subscribed(g, sub.topics.a[t]);
        arena_free(&a);
    }
    g->subscribed_known = true;
}

bool cg_subscribed_to(const struct cgroup *g, kstr_t topic)
{
    if (g->subscribed_known) {
        for (int32_t i = 0; i < g->nsubscribed; i++)
            if (eqk(g->subscribed[i], topic))
                return true;
        return false;
    }
    return eqs(g->protocol_type, CONSUMER_PROTOCOL_TYPE);
}

static bool valid_transition(enum cg_state from, enum cg_state to)
{
    switch (to) {
    case CG_PREPARING_REBALANCE:
        return from == CG_STABLE || from == CG_COMPLETING_REBALANCE || from == CG_EMPTY;
    case CG_COMPLETING_REBALANCE:
        return from == CG_PREPARING_REBALANCE;
    case CG_STABLE:
        return from == CG_COMPLETING_REBALANCE;
    case CG_EMPTY:
        return from == CG_PREPARING_REBALANCE;
    case CG_DEAD:
        return true;
    }
    return false;
}

static void transition(struct cg_env *e, struct cgroup *g, enum cg_state to)
{
    if (!valid_transition(g->state, to))
        slog_error("group %s: invalid transition %s -> %s", g->id, cg_state_name(g->state), cg_state_name(to));
    g->prev_state = g->state;
    g->state = to;
    g->state_ts = e->wall_now;
}

/* ClassicGroup.add. w NULL: a member loaded from the log. */
static void add_member(struct cgroup *g, struct cg_member *m, struct cg_waiter *w)
{
    if (g->nmembers == 0)
        set_str(&g->protocol_type, m->protocol_type);
    if (!g->leader)
        set_leader(g, m->member_id);
    if (g->nmembers == g->capmembers) {
        g->capmembers = g->capmembers ? 2 * g->capmembers : 4;
        g->members = xrealloc(g->members, (size_t)g->capmembers * sizeof *g->members);
    }
    g->members[g->nmembers++] = m;
    if (w) {
        m->awaiting_join = true;
        m->join_waiter = w;
        w->member = m;
        g->num_awaiting_join++;
    }
    int32_t p = pending_index(g, ks(m->member_id));
    if (p >= 0)
        pending_remove_at(g, p);
}

/* ClassicGroup.remove, then the member is freed. A waiter still
 * attached is answered (Kafka leaves it to its request timeout). */
static void remove_member(struct cg_env *e, struct cgroup *g, kstr_t member_id)
{
    int32_t i = member_index(g, member_id);
    if (i >= 0) {
        struct cg_member *m = g->members[i];
        struct join_resp r = {.error = KERR_UNKNOWN_MEMBER_ID, .generation = -1, .member_id = ""};
        complete_join(e, g, m, &r);
        complete_sync(e, m, KERR_UNKNOWN_MEMBER_ID, NULL, NULL, NULL, 0);
        memmove(&g->members[i], &g->members[i + 1], (size_t)(g->nmembers - i - 1) * sizeof *g->members);
        g->nmembers--;
        bool was_leader = is_leader(g, m->member_id);
        member_free(m);
        if (was_leader)
            set_leader(g, g->nmembers > 0 ? g->members[0]->member_id : NULL);
    } else if (eqk(g->leader, member_id)) {
        set_leader(g, g->nmembers > 0 ? g->members[0]->member_id : NULL);
    }
    int32_t p = pending_index(g, member_id);
    if (p >= 0)
        pending_remove_at(g, p);
}

/* ClassicGroup.updateMember. */
static void update_member(struct cg_env *e, struct cgroup *g, struct cg_member *m, int32_t nprotocols,
                          const kstr_t *names, const kbytes_t *meta, int32_t rebalance_timeout_ms,
                          int32_t session_timeout_ms, struct cg_waiter *w)
{
    struct cg_protocol *np = copy_protocols(names, meta, nprotocols);
    free_protocols(m->protocols, m->nprotocols);
    m->protocols = np;
    m->nprotocols = nprotocols;
    m->rebalance_timeout_ms = rebalance_timeout_ms;
    m->session_timeout_ms = session_timeout_ms;
    if (m->join_waiter && m->join_waiter != w) {
        /* Kafka replaces the future and the old request never hears
         * back; answering it lets its client rejoin at once. */
        struct cg_waiter *old = m->join_waiter;
        m->join_waiter = NULL;
        struct join_resp r = {.error = KERR_REBALANCE_IN_PROGRESS, .generation = -1, .member_id = m->member_id};
        respond_join(e, g, old, &r);
    }
    if (w && !m->awaiting_join)
        g->num_awaiting_join++;
    else if (!w && m->awaiting_join)
        g->num_awaiting_join--;
    m->awaiting_join = w != NULL;
    m->join_waiter = w;
    if (w)
        w->member = m;
}

static void reschedule_heartbeat(struct cg_env *e, struct cg_member *m, int64_t timeout_ms)
{
    m->hb_deadline = e->now + timeout_ms;
    e->timers_changed = true;
}

/* ------------------------------------------------------------------ */
/* rebalance (GroupMetadataManager)                                    */

static void complete_group_join(struct cg_env *e, struct cgroup *g);
static void maybe_prepare_rebalance_or_complete_join(struct cg_env *e, struct cgroup *g);

static void propagate_assignment(struct cg_env *e, struct cgroup *g, int16_t err)
{
    const char *pname = err ? NULL : g->protocol_name;
    const char *ptype = err ? NULL : g->protocol_type;
    for (int32_t i = 0; i < g->nmembers; i++) {
        struct cg_member *m = g->members[i];
        if (!m->assignment_len && !err)
            slog_debug("group %s: empty assignment for member %s, generation %d", g->id, m->member_id,
                       g->generation);
        if (complete_sync(e, m, err, ptype, pname, m->assignment, m->assignment_len))
            reschedule_heartbeat(e, m, m->session_timeout_ms);
    }
}

static void reset_and_propagate_assignment_with_error(struct cg_env *e, struct cgroup *g, int16_t err)
{
    for (int32_t i = 0; i < g->nmembers; i++)
        set_assignment(g->members[i], NULL, 0);
    propagate_assignment(e, g, err);
}

static void remove_sync_expiration(struct cg_env *e, struct cgroup *g)
{
    for (int32_t i = 0; i < g->nmembers; i++)
        g->members[i]->pending_sync = false;
    g->sync_deadline = CG_NO_DEADLINE;
    e->timers_changed = true;
}

static bool received_sync_from_all(const struct cgroup *g)
{
    for (int32_t i = 0; i < g->nmembers; i++)
        if (g->members[i]->pending_sync)
            return false;
    return true;
}

static void schedule_join(struct cg_env *e, struct cgroup *g, enum cg_join_timer kind, int64_t delay)
{
    g->join_timer = kind;
    g->join_deadline = e->now + delay;
    e->timers_changed = true;
}

static void cancel_join(struct cg_env *e, struct cgroup *g)
{
    g->join_timer = CG_JOIN_NONE;
    g->join_deadline = CG_NO_DEADLINE;
    e->timers_changed = true;
}

static void maybe_complete_join_else_schedule(struct cg_env *e, struct cgroup *g)
{
    if (has_all_members_joined(g))
        complete_group_join(e, g);
    else
        schedule_join(e, g, CG_JOIN_COMPLETE, rebalance_timeout(g));
}

static void prepare_rebalance(struct cg_env *e, struct cgroup *g, const char *reason)
{
    if (g->state == CG_COMPLETING_REBALANCE)
        reset_and_propagate_assignment_with_error(e, g, KERR_REBALANCE_IN_PROGRESS);
    remove_sync_expiration(e, g);
    bool initial = g->state == CG_EMPTY;
    if (initial) {
        int32_t delay = e->initial_rebalance_delay_ms;
        int32_t remaining = rebalance_timeout(g) - delay;
        g->initial_delay_ms = delay;
        g->initial_remaining_ms = remaining > 0 ? remaining : 0;
        schedule_join(e, g, CG_JOIN_INITIAL, delay);
    }
    slog_info("group %s: preparing to rebalance in state %s with old generation %d (reason: %s)", g->id,
              cg_state_name(g->state), g->generation, reason);
    transition(e, g, CG_PREPARING_REBALANCE);
    if (!initial)
        maybe_complete_join_else_schedule(e, g);
}

static bool can_rebalance(const struct cgroup *g)
{
    return g->state == CG_STABLE || g->state == CG_COMPLETING_REBALANCE || g->state == CG_EMPTY;
}

static void maybe_complete_join_phase(struct cg_env *e, struct cgroup *g)
{
    if (g->state != CG_PREPARING_REBALANCE || g->prev_state == CG_EMPTY || !has_all_members_joined(g))
        return;
    complete_group_join(e, g);
}

static void maybe_prepare_rebalance_or_complete_join(struct cg_env *e, struct cgroup *g)
{
    if (can_rebalance(g))
        prepare_rebalance(e, g, "membership change");
    else
        maybe_complete_join_phase(e, g);
}

/* ClassicGroup.maybeElectNewJoinedLeader. */
static bool maybe_elect_new_joined_leader(struct cgroup *g)
{
    if (!g->leader)
        return false;
    struct cg_member *cur = cg_member_find(g, ks(g->leader));
    if (cur && cur->awaiting_join)
        return true;
    for (int32_t i = 0; i < g->nmembers; i++) {
        if (g->members[i]->awaiting_join) {
            slog_info("group %s: leader %s did not join before the rebalance timeout; %s is the new leader", g->id,
                      g->leader, g->members[i]->member_id);
            set_leader(g, g->members[i]->member_id);
            return true;
        }
    }
    return false;
}

static void init_next_generation(struct cg_env *e, struct cgroup *g)
{
    g->generation++;
    if (g->nmembers > 0) {
        char *p = select_protocol(g);
        free(g->protocol_name);
        g->protocol_name = p;
        compute_subscribed(g);
        transition(e, g, CG_COMPLETING_REBALANCE);
    } else {
        free(g->protocol_name);
        g->protocol_name = NULL;
        compute_subscribed(g);
        transition(e, g, CG_EMPTY);
    }
    for (int32_t i = 0; i < g->nmembers; i++)
        g->members[i]->pending_sync = false;
}

/* GroupMetadataManager.completeClassicGroupJoin. */
static void complete_group_join(struct cg_env *e, struct cgroup *g)
{
    cancel_join(e, g);
    /* dynamic members that did not rejoin are dropped */
    for (int32_t i = 0; i < g->nmembers;) {
        struct cg_member *m = g->members[i];
        if (!m->awaiting_join && !m->instance_id) {
            slog_info("group %s: removing member %s, which did not rejoin", g->id, m->member_id);
            char *id = xstrdup(m->member_id);
            remove_member(e, g, KSTR(id));
            free(id);
            continue;
        }
        i++;
    }
    if (g->state == CG_DEAD)
        return;
    if (!maybe_elect_new_joined_leader(g) && g->nmembers > 0) {
        slog_error("group %s could not complete its rebalance because no member rejoined", g->id);
        schedule_join(e, g, CG_JOIN_COMPLETE, rebalance_timeout(g));
        return;
    }
    init_next_generation(e, g);
    if (g->state == CG_EMPTY) {
        slog_info("group %s with generation %d is now empty", g->id, g->generation);
        int rc = e->store(e, g, NULL);
        if (rc)
            slog_warn("group %s: storing the empty group failed: %s", g->id, kerr_name((int16_t)rc));
        return;
    }
    slog_info("group %s: stabilized generation %d with %d member(s), protocol %s", g->id, g->generation,
              g->nmembers, g->protocol_name ? g->protocol_name : "(none)");
    for (int32_t i = 0; i < g->nmembers; i++) {
        struct cg_member *m = g->members[i];
        bool lead = is_leader(g, m->member_id);
        struct join_resp r = {.error = 0,
                              .generation = g->generation,
                              .member_id = m->member_id,
                              .leader = g->leader,
                              .protocol_type = g->protocol_type,
                              .protocol_name = g->protocol_name,
                              .with_members = lead};
        complete_join(e, g, m, &r);
        reschedule_heartbeat(e, m, m->session_timeout_ms);
        m->is_new = false;
        m->pending_sync = true;
    }
    g->sync_deadline = e->now + rebalance_timeout(g);
    g->sync_generation = g->generation;
    e->timers_changed = true;
}

static void try_complete_initial_rebalance(struct cg_env *e, struct cgroup *g)
{
    int32_t delay = g->initial_delay_ms, remaining = g->initial_remaining_ms;
    if (g->new_member_added && remaining != 0) {
        g->new_member_added = false;
        int32_t nd = e->initial_rebalance_delay_ms < remaining ? e->initial_rebalance_delay_ms : remaining;
        int32_t nr = remaining - delay > 0 ? remaining - delay : 0;
        g->initial_delay_ms = nd;
        g->initial_remaining_ms = nr;
        schedule_join(e, g, CG_JOIN_INITIAL, nd);
    } else {
        complete_group_join(e, g);
    }
}

static void remove_member_and_update(struct cg_env *e, struct cgroup *g, struct cg_member *m)
{
    struct join_resp r = {.error = KERR_UNKNOWN_MEMBER_ID, .generation = -1, .member_id = ""};
    complete_join(e, g, m, &r);
    char *id = xstrdup(m->member_id);
    remove_member(e, g, KSTR(id));
    free(id);
    if (g->state == CG_STABLE || g->state == CG_COMPLETING_REBALANCE)
        maybe_prepare_rebalance_or_complete_join(e, g);
    else if (g->state == CG_PREPARING_REBALANCE && has_all_members_joined(g))
        complete_group_join(e, g);
}

static void add_member_then_rebalance_or_complete_join(struct cg_env *e, struct cgroup *g,
                                                       const struct cg_join_req *rq, const char *member_id,
                                                       struct cg_waiter *w)
{
    struct cg_member *m = xcalloc(1, sizeof *m);
    m->member_id = xstrdup(member_id);
    m->instance_id = kdup(rq->instance_id);
    m->client_id = kdup(rq->client_id.len >= 0 ? rq->client_id : KSTR_LIT(""));
    m->client_host = kdup(rq->client_host.len >= 0 ? rq->client_host : KSTR_LIT(""));
    m->rebalance_timeout_ms = rq->rebalance_timeout_ms;
    m->session_timeout_ms = rq->session_timeout_ms;
    m->protocol_type = kdup(rq->protocol_type);
    m->protocols = copy_protocols(rq->protocol_names, rq->protocol_metadata, rq->nprotocols);
    m->nprotocols = rq->nprotocols;
    m->is_new = true;
    m->hb_deadline = CG_NO_DEADLINE;
    if (g->state == CG_PREPARING_REBALANCE && g->prev_state == CG_EMPTY)
        g->new_member_added = true;
    add_member(g, m, w);
    /* A new member cannot heartbeat before it knows its id; a JoinGroup
     * that never comes back must not keep it forever. */
    reschedule_heartbeat(e, m, e->new_member_join_timeout_ms);
    maybe_prepare_rebalance_or_complete_join(e, g);
}

static void update_member_then_rebalance_or_complete_join(struct cg_env *e, struct cgroup *g, struct cg_member *m,
                                                          const struct cg_join_req *rq, struct cg_waiter *w)
{
    update_member(e, g, m, rq->nprotocols, rq->protocol_names, rq->protocol_metadata, rq->rebalance_timeout_ms,
                  rq->session_timeout_ms, w);
    maybe_prepare_rebalance_or_complete_join(e, g);
}

/* ClassicGroup.replaceStaticMember: the old id is fenced at once. The
 * member keeps its place, protocols, timeouts and assignment. */
static struct cg_member *replace_static_member(struct cg_env *e, struct cgroup *g, struct cg_member *m,
                                               const char *new_id)
{
    struct join_resp r = {.error = KERR_FENCED_INSTANCE_ID, .generation = -1, .member_id = m->member_id,
                          .leader = ""};
    complete_join(e, g, m, &r);
    complete_sync(e, m, KERR_FENCED_INSTANCE_ID, NULL, NULL, NULL, 0);
    bool lead = is_leader(g, m->member_id);
    free(m->member_id);
    m->member_id = xstrdup(new_id);
    m->is_new = false;
    if (lead)
        set_leader(g, new_id);
    return m;
}

static void update_static_member_then_rebalance_or_complete_join(struct cg_env *e, struct cgroup *g,
                                                                 const struct cg_join_req *rq, struct cg_member *m,
                                                                 const char *new_id, struct cg_waiter *w)
{
    char *current_leader = g->leader ? xstrdup(g->leader) : NULL;
    char *old_id = xstrdup(m->member_id);
    replace_static_member(e, g, m, new_id);
    reschedule_heartbeat(e, m, m->session_timeout_ms);
    /* kept to revert if the store fails */
    struct cg_protocol *old_protocols = m->protocols;
    int32_t old_nprotocols = m->nprotocols;
    int32_t old_rebalance = m->rebalance_timeout_ms, old_session = m->session_timeout_ms;
    m->protocols = NULL;
    m->nprotocols = 0;
    update_member(e, g, m, rq->nprotocols, rq->protocol_names, rq->protocol_metadata, rq->rebalance_timeout_ms,
                  rq->session_timeout_ms, w);

    if (g->state == CG_STABLE) {
        char *sel = select_protocol(g);
        bool same = eqs(g->protocol_name ? g->protocol_name : "", sel ? sel : "");
        free(sel);
        if (same) {
            slog_info("group %s: static member %s rejoined as %s without changing the selected protocol: "
                      "no rebalance",
                      g->id, m->instance_id, new_id);
            int rc = e->store(e, g, NULL);
            if (rc) {
                slog_warn("group %s: storing static member %s failed (%s); reverting to member id %s", g->id,
                          m->instance_id, kerr_name((int16_t)rc), old_id);
                /* take w back (it is answered below) and restore the old member */
                if (m->join_waiter == w) {
                    m->join_waiter = NULL;
                    w->member = NULL;
                }
                update_member(e, g, m, 0, NULL, NULL, old_rebalance, old_session, NULL);
                free_protocols(m->protocols, m->nprotocols);
                m->protocols = old_protocols;
                m->nprotocols = old_nprotocols;
                old_protocols = NULL;
                replace_static_member(e, g, m, old_id);
                reschedule_heartbeat(e, m, m->session_timeout_ms);
                int16_t err = (int16_t)rc;
                struct join_resp r = {.error = err,
                                      .generation = g->generation,
                                      .member_id = "",
                                      .leader = current_leader,
                                      .protocol_type = g->protocol_type,
                                      .protocol_name = g->protocol_name};
                respond_join(e, g, w, &r);
            } else if (rq->version >= 9) {
                bool lead = is_leader(g, new_id);
                struct join_resp r = {.generation = g->generation,
                                      .member_id = new_id,
                                      .leader = g->leader,
                                      .protocol_type = g->protocol_type,
                                      .protocol_name = g->protocol_name,
                                      .skip_assignment = lead,
                                      .with_members = lead};
                complete_join(e, g, m, &r);
            } else {
                struct join_resp r = {.generation = g->generation,
                                      .member_id = new_id,
                                      .leader = current_leader,
                                      .protocol_type = g->protocol_type,
                                      .protocol_name = g->protocol_name};
                complete_join(e, g, m, &r);
            }
        } else {
            maybe_prepare_rebalance_or_complete_join(e, g);
        }
    } else if (g->state == CG_COMPLETING_REBALANCE) {
        /* the leader may be assigning for the old id: rebalance */
        prepare_rebalance(e, g, "static member rejoined during CompletingRebalance");
    } else {
        maybe_complete_join_phase(e, g);
    }
    if (old_protocols)
        free_protocols(old_protocols, old_nprotocols);
    free(current_leader);
    free(old_id);
}

/* ClassicGroup.validateMember. */
static int16_t validate_member(const struct cgroup *g, kstr_t member_id, kstr_t instance_id)
{
    if (instance_id.len >= 0) {
        struct cg_member *s = static_member(g, instance_id);
        if (!s)
            return KERR_UNKNOWN_MEMBER_ID;
        if (!eqk(s->member_id, member_id)) {
            slog_info("group %s: member id %.*s of static member %s is fenced by %s", g->id, (int)member_id.len,
                      member_id.p, s->instance_id, s->member_id);
            return KERR_FENCED_INSTANCE_ID;
        }
    }
    if (!cg_member_find(g, member_id))
        return KERR_UNKNOWN_MEMBER_ID;
    return 0;
}

static bool accept_joining_member(const struct cgroup *g, kstr_t member_id, int32_t max_size)
{
    struct cg_member *m = cg_member_find(g, member_id);
    switch (g->state) {
    case CG_EMPTY:
    case CG_DEAD:
        return true;
    case CG_PREPARING_REBALANCE:
        return (m && m->awaiting_join) || g->num_awaiting_join < max_size;
    case CG_COMPLETING_REBALANCE:
    case CG_STABLE:
        return m || g->nmembers < max_size;
    }
    return false;
}

static void join_current_generation(struct cg_env *e, struct cgroup *g, struct cg_waiter *w, const char *member_id,
                                    bool with_members)
{
    struct join_resp r = {.generation = g->generation,
                          .member_id = member_id,
                          .leader = g->leader,
                          .protocol_type = g->protocol_type,
                          .protocol_name = g->protocol_name,
                          .with_members = with_members};
    respond_join(e, g, w, &r);
}

static void join_new_member(struct cg_env *e, struct cgroup *g, const struct cg_join_req *rq, struct cg_waiter *w)
{
    if (g->state == CG_DEAD) {
        respond_join_error(e, w, KERR_COORDINATOR_NOT_AVAILABLE, "");
        return;
    }
    if (!supports_protocols(g, rq->protocol_type, rq->nprotocols, rq->protocol_names)) {
        respond_join_error(e, w, KERR_INCONSISTENT_GROUP_PROTOCOL, "");
        return;
    }
    char *new_id = generate_member_id(rq->client_id, rq->instance_id);
    if (rq->instance_id.len >= 0) {
        struct cg_member *existing = static_member(g, rq->instance_id);
        if (existing) {
            slog_info("group %s: static member %.*s joins with an unknown member id in state %s; replacing %s",
                      g->id, (int)rq->instance_id.len, rq->instance_id.p, cg_state_name(g->state),
                      existing->member_id);
            update_static_member_then_rebalance_or_complete_join(e, g, rq, existing, new_id, w);
        } else {
            add_member_then_rebalance_or_complete_join(e, g, rq, new_id, w);
        }
    } else if (rq->version >= 4) {
        /* KIP-394: the member learns its id first and joins with it */
        pending_add(g, new_id, e->now + rq->session_timeout_ms);
        e->timers_changed = true;
        respond_join_error(e, w, KERR_MEMBER_ID_REQUIRED, new_id);
    } else {
        add_member_then_rebalance_or_complete_join(e, g, rq, new_id, w);
    }
    free(new_id);
}

static void join_existing_member(struct cg_env *e, struct cgroup *g, const struct cg_join_req *rq,
                                 struct cg_waiter *w)
{
    char *mid = kdup(rq->member_id);
    if (g->state == CG_DEAD) {
        respond_join_error(e, w, KERR_COORDINATOR_NOT_AVAILABLE, mid);
    } else if (!supports_protocols(g, rq->protocol_type, rq->nprotocols, rq->protocol_names)) {
        respond_join_error(e, w, KERR_INCONSISTENT_GROUP_PROTOCOL, mid);
    } else if (cg_is_pending(g, rq->member_id)) {
        if (rq->instance_id.len >= 0)
            respond_join_error(e, w, KERR_UNKNOWN_SERVER_ERROR, mid); /* Kafka: IllegalStateException */
        else
            add_member_then_rebalance_or_complete_join(e, g, rq, mid, w);
    } else {
        int16_t err = validate_member(g, rq->member_id, rq->instance_id);
        struct cg_member *m = err ? NULL : cg_member_find(g, rq->member_id);
        if (err) {
            respond_join_error(e, w, err, mid);
        } else if (g->state == CG_PREPARING_REBALANCE) {
            update_member_then_rebalance_or_complete_join(e, g, m, rq, w);
        } else if (g->state == CG_COMPLETING_REBALANCE) {
            if (member_matches(m, rq))
                join_current_generation(e, g, w, mid, is_leader(g, mid));
            else
                update_member_then_rebalance_or_complete_join(e, g, m, rq, w);
        } else if (g->state == CG_STABLE) {
            if (is_leader(g, mid) || !member_matches(m, rq))
                update_member_then_rebalance_or_complete_join(e, g, m, rq, w);
            else
                join_current_generation(e, g, w, mid, false);
        } else {
            slog_warn("group %s: rejoining member %s in unexpected state %s", g->id, mid, cg_state_name(g->state));
            respond_join_error(e, w, KERR_UNKNOWN_MEMBER_ID, mid);
        }
    }
    free(mid);
}

void cg_join(struct cg_env *e, struct cgroup *g, const struct cg_join_req *rq, struct cg_waiter *w)
{
    if (!accept_joining_member(g, rq->member_id, e->max_size)) {
        remove_member(e, g, rq->member_id);
        respond_join_error(e, w, KERR_GROUP_MAX_SIZE_REACHED, "");
        return;
    }
    if (rq->member_id.len <= 0)
        join_new_member(e, g, rq, w);
    else
        join_existing_member(e, g, rq, w);
}

/* ------------------------------------------------------------------ */
/* SyncGroup                                                           */

static void remove_pending_sync_member(struct cg_env *e, struct cgroup *g, struct cg_member *m)
{
    m->pending_sync = false;
    switch (g->state) {
    case CG_DEAD:
    case CG_EMPTY:
    case CG_PREPARING_REBALANCE:
        g->sync_deadline = CG_NO_DEADLINE;
        e->timers_changed = true;
        break;
    case CG_COMPLETING_REBALANCE:
    case CG_STABLE:
        if (received_sync_from_all(g)) {
            g->sync_deadline = CG_NO_DEADLINE;
            e->timers_changed = true;
        }
        break;
    }
}

static bool protocol_inconsistent(kstr_t req, const char *group)
{
    return req.len >= 0 && group && !eqk(group, req);
}

static void respond_sync(struct cg_env *e, struct cg_waiter *w, int16_t err, const char *ptype, const char *pname,
                         const uint8_t *assign, int32_t len)
{
    w->error = err;
    w->protocol_type = arena_ks(&w->arena, ptype);
    w->protocol_name = arena_ks(&w->arena, pname);
    w->assignment = arena_kb(&w->arena, assign, len);
    waiter_finish(e, w);
}

void cg_sync(struct cg_env *e, struct cgroup *g, const struct cg_sync_req *rq, struct cg_waiter *w)
{
    if (g->state == CG_EMPTY) {
        respond_sync(e, w, KERR_UNKNOWN_MEMBER_ID, NULL, NULL, NULL, 0);
        return;
    }
    int16_t err = 0;
    if (g->state == CG_DEAD)
        err = KERR_COORDINATOR_NOT_AVAILABLE;
    else if ((err = validate_member(g, rq->member_id, rq->instance_id)))
        ;
    else if (rq->generation != g->generation)
        err = KERR_ILLEGAL_GENERATION;
    else if (protocol_inconsistent(rq->protocol_type, g->protocol_type) ||
             protocol_inconsistent(rq->protocol_name, g->protocol_name))
        err = KERR_INCONSISTENT_GROUP_PROTOCOL;
    if (err) {
        respond_sync(e, w, err, NULL, NULL, NULL, 0);
        return;
    }
    struct cg_member *m = cg_member_find(g, rq->member_id);
    if (g->state == CG_PREPARING_REBALANCE) {
        respond_sync(e, w, KERR_REBALANCE_IN_PROGRESS, NULL, NULL, NULL, 0);
    } else if (g->state == CG_COMPLETING_REBALANCE) {
        if (m->sync_waiter && m->sync_waiter != w) {
            struct cg_waiter *old = m->sync_waiter;
            m->sync_waiter = NULL;
            respond_sync(e, old, KERR_REBALANCE_IN_PROGRESS, NULL, NULL, NULL, 0);
        }
        m->awaiting_sync = true;
        m->sync_waiter = w;
        w->member = m;
        remove_pending_sync_member(e, g, m);
        if (!is_leader(g, m->member_id))
            return;
        slog_info("group %s: assignment received from leader %s for generation %d (%d member(s))", g->id,
                  m->member_id, g->generation, g->nmembers);
        /* every member gets the leader's bytes for it, exactly; a member
         * the leader left out gets an empty assignment */
        kbytes_t *assign = xcalloc((size_t)(g->nmembers > 0 ? g->nmembers : 1), sizeof *assign);
        for (int32_t i = 0; i < g->nmembers; i++) {
            assign[i] = (kbytes_t){NULL, 0};
            for (int32_t k = 0; k < rq->nassignments; k++)
                if (eqk(g->members[i]->member_id, rq->assign_members[k]))
                    assign[i] = rq->assignments[k].len > 0 ? rq->assignments[k] : (kbytes_t){NULL, 0};
        }
        int rc = e->store(e, g, assign);
        if (rc) {
            int16_t mapped = (int16_t)rc;
            reset_and_propagate_assignment_with_error(e, g, mapped);
            maybe_prepare_rebalance_or_complete_join(e, g);
        } else {
            for (int32_t i = 0; i < g->nmembers; i++)
                set_assignment(g->members[i], assign[i].p, assign[i].len);
            propagate_assignment(e, g, 0);
            transition(e, g, CG_STABLE);
        }
        free(assign);
    } else if (g->state == CG_STABLE) {
        remove_pending_sync_member(e, g, m);
        respond_sync(e, w, 0, g->protocol_type, g->protocol_name, m->assignment, m->assignment_len);
    }
}

/* ------------------------------------------------------------------ */
/* Heartbeat, LeaveGroup, OffsetCommit checks                          */

int16_t cg_heartbeat(struct cg_env *e, struct cgroup *g, kstr_t member_id, kstr_t instance_id, int32_t generation)
{
    if (g->state == CG_DEAD)
        return KERR_COORDINATOR_NOT_AVAILABLE;
    int16_t err = validate_member(g, member_id, instance_id);
    if (err)
        return err;
    if (generation != g->generation)
        return KERR_ILLEGAL_GENERATION;
    struct cg_member *m = cg_member_find(g, member_id);
    switch (g->state) {
    case CG_EMPTY:
        return KERR_UNKNOWN_MEMBER_ID;
    case CG_PREPARING_REBALANCE:
        reschedule_heartbeat(e, m, m->session_timeout_ms);
        return KERR_REBALANCE_IN_PROGRESS;
    case CG_COMPLETING_REBALANCE:
    case CG_STABLE:
        reschedule_heartbeat(e, m, m->session_timeout_ms);
        return 0;
    case CG_DEAD:
        break;
    }
    return KERR_COORDINATOR_NOT_AVAILABLE;
}

static void remove_current_member(struct cg_env *e, struct cgroup *g, struct cg_member *m)
{
    slog_info("group %s: member %s left", g->id, m->member_id);
    struct join_resp r = {.error = KERR_UNKNOWN_MEMBER_ID, .generation = -1, .member_id = ""};
    complete_join(e, g, m, &r);
    char *id = xstrdup(m->member_id);
    remove_member(e, g, KSTR(id));
    free(id);
}

int16_t cg_leave(struct cg_env *e, struct cgroup *g, int32_t n, const kstr_t *member_ids, const kstr_t *instance_ids,
                 int16_t *errs)
{
    if (g->state == CG_DEAD)
        return KERR_COORDINATOR_NOT_AVAILABLE;
    int32_t left = 0;
    for (int32_t i = 0; i < n; i++) {
        errs[i] = 0;
        if (member_ids[i].len <= 0) {
            /* admin removal of a static member by instance id */
            struct cg_member *s = static_member(g, instance_ids[i]);
            if (s) {
                remove_current_member(e, g, s);
                left++;
            } else {
                errs[i] = KERR_UNKNOWN_MEMBER_ID;
            }
        } else if (cg_is_pending(g, member_ids[i])) {
            remove_member(e, g, member_ids[i]);
            left++;
        } else {
            int16_t err = validate_member(g, member_ids[i], instance_ids[i]);
            if (err) {
                errs[i] = err;
            } else {
                remove_current_member(e, g, cg_member_find(g, member_ids[i]));
                left++;
            }
        }
    }
    if (left > 0) {
        if (g->state == CG_STABLE || g->state == CG_COMPLETING_REBALANCE)
            maybe_prepare_rebalance_or_complete_join(e, g);
        else if (g->state == CG_PREPARING_REBALANCE)
            maybe_complete_join_phase(e, g);
    }
    return 0;
}

int16_t cg_validate_commit(struct cg_env *e, struct cgroup *g, kstr_t member_id, kstr_t instance_id,
                           int32_t generation)
{
    if (g->state == CG_DEAD)
        return KERR_COORDINATOR_NOT_AVAILABLE;
    if (generation < 0 && g->state == CG_EMPTY)
        return 0; /* admin clients and consumers without group management */
    if (generation >= 0 || member_id.len > 0 || instance_id.len >= 0) {
        int16_t err = validate_member(g, member_id, instance_id);
        if (err)
            return err;
        if (generation != g->generation)
            return KERR_ILLEGAL_GENERATION;
    } else if (g->state != CG_EMPTY) {
        return KERR_UNKNOWN_MEMBER_ID;
    }
    if (g->state == CG_COMPLETING_REBALANCE)
        return KERR_REBALANCE_IN_PROGRESS;
    if (g->state == CG_STABLE || g->state == CG_PREPARING_REBALANCE) {
        struct cg_member *m = cg_member_find(g, member_id);
        if (m)
            reschedule_heartbeat(e, m, m->session_timeout_ms);
    }
    return 0;
}

int16_t cg_validate_txn_commit(const struct cgroup *g, kstr_t member_id, kstr_t instance_id, int32_t generation)
{
    if (g->state == CG_DEAD)
        return KERR_COORDINATOR_NOT_AVAILABLE;
    if (generation < 0 && g->state == CG_EMPTY)
        return 0;
    if (generation >= 0 || member_id.len > 0 || instance_id.len >= 0) {
        int16_t err = validate_member(g, member_id, instance_id);
        if (err)
            return err;
        if (generation != g->generation)
            return KERR_ILLEGAL_GENERATION;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* timers                                                              */

static void expire_heartbeat(struct cg_env *e, struct cgroup *g, struct cg_member *m)
{
    m->hb_deadline = CG_NO_DEADLINE;
    e->timers_changed = true;
    if (g->state == CG_DEAD || has_satisfied_heartbeat(m))
        return;
    slog_info("group %s: member %s failed (session timeout), removing it", g->id, m->member_id);
    remove_member_and_update(e, g, m);
}

static void expire_pending_sync(struct cg_env *e, struct cgroup *g)
{
    g->sync_deadline = CG_NO_DEADLINE;
    e->timers_changed = true;
    if (g->sync_generation != g->generation)
        return;
    if (g->state != CG_COMPLETING_REBALANCE && g->state != CG_STABLE)
        return;
    if (received_sync_from_all(g))
        return;
    for (int32_t i = 0; i < g->nmembers;) {
        struct cg_member *m = g->members[i];
        if (m->pending_sync) {
            slog_info("group %s: removing member %s, which did not sync in time", g->id, m->member_id);
            char *id = xstrdup(m->member_id);
            remove_member(e, g, KSTR(id));
            free(id);
            continue;
        }
        i++;
    }
    prepare_rebalance(e, g, "pending sync expired");
}

int64_t cg_next_deadline(const struct cgroup *g)
{
    int64_t d = g->join_deadline < g->sync_deadline ? g->join_deadline : g->sync_deadline;
    for (int32_t i = 0; i < g->nmembers; i++)
        if (g->members[i]->hb_deadline < d)
            d = g->members[i]->hb_deadline;
    for (int32_t i = 0; i < g->npending; i++)
        if (g->pending[i].deadline < d)
            d = g->pending[i].deadline;
    if (g->cc) {
        int64_t c = ccg_next_deadline(g->cc);
        if (c < d)
            d = c;
    }
    return d;
}

void cg_tick(struct cg_env *e, struct cgroup *g)
{
    for (int round = 0; round < TICK_ROUNDS && cg_next_deadline(g) <= e->now; round++) {
        if (g->join_deadline <= e->now) {
            enum cg_join_timer kind = g->join_timer;
            cancel_join(e, g);
            if (kind == CG_JOIN_INITIAL)
                try_complete_initial_rebalance(e, g);
            else if (kind == CG_JOIN_COMPLETE)
                complete_group_join(e, g);
        }
        if (g->sync_deadline <= e->now)
            expire_pending_sync(e, g);
        for (int32_t i = 0; i < g->npending;) {
            if (g->pending[i].deadline <= e->now) {
                slog_info("group %s: pending member %s removed after its session timeout", g->id,
                          g->pending[i].member_id);
                pending_remove_at(g, i);
                e->timers_changed = true;
                if (g->state == CG_PREPARING_REBALANCE && has_all_members_joined(g))
                    complete_group_join(e, g);
                i = 0;
                continue;
            }
            i++;
        }
        /* one member at a time: an expiry may remove others */
        for (;;) {
            struct cg_member *due = NULL;
            for (int32_t i = 0; i < g->nmembers && !due; i++)
                if (g->members[i]->hb_deadline <= e->now)
                    due = g->members[i];
            if (!due)
                break;
            expire_heartbeat(e, g, due);
        }
    }
}

void cg_make_dead(struct cgroup *g, int16_t err)
{
    for (int32_t i = 0; i < g->nmembers; i++) {
        struct cg_member *m = g->members[i];
        struct join_resp r = {.error = err, .generation = -1, .member_id = m->member_id};
        complete_join(NULL, g, m, &r);
        complete_sync(NULL, m, err, NULL, NULL, NULL, 0);
    }
    g->prev_state = g->state;
    g->state = CG_DEAD;
    g->join_timer = CG_JOIN_NONE;
    g->join_deadline = CG_NO_DEADLINE;
    g->sync_deadline = CG_NO_DEADLINE;
}

/* Frees an offsets map's values and the map. */
static void offsets_free(struct hmap *m)
{
    size_t it = 0;
    const void *k;
    size_t kl;
    void *v;
    while (hmap_next(m, &it, &k, &kl, &v)) {
        struct cg_offset *o = v;
        free(o->metadata);
        free(o);
    }
    hmap_free(m);
}

void cg_free(struct cgroup *g, int16_t err)
{
    if (!g)
        return;
    cg_make_dead(g, err);
    for (int32_t i = 0; i < g->nmembers; i++)
        member_free(g->members[i]);
    free(g->members);
    for (int32_t i = 0; i < g->npending; i++)
        free(g->pending[i].member_id);
    free(g->pending);
    clear_subscribed(g);
    size_t it = 0;
    const void *k;
    size_t kl;
    void *v;
    offsets_free(&g->offsets);
    while (hmap_next(&g->txn, &it, &k, &kl, &v)) {
        offsets_free(v);
        free(v);
    }
    hmap_free(&g->txn);
    free(g->protocol_type);
    free(g->protocol_name);
    free(g->leader);
    ccg_free(g->cc);
    free(g->id);
    free(g);
}

/* ------------------------------------------------------------------ */
/* offsets                                                             */

/* topic bytes, a NUL, the partition big-endian */
static size_t offset_key(struct buf *b, kstr_t topic, int32_t partition)
{
    buf_reset(b);
    buf_append(b, topic.p, (size_t)(topic.len > 0 ? topic.len : 0));
    buf_put_u8(b, 0);
    buf_put_be32(b, (uint32_t)partition);
    return b->len;
}

const struct cg_offset *cg_offset_get(const struct cgroup *g, kstr_t topic, int32_t partition)
{
    struct buf b = BUF_INIT;
    offset_key(&b, topic, partition);
    const struct cg_offset *o = hmap_get(&g->offsets, b.data, b.len);
    buf_free(&b);
    return o;
}

/* Puts a copy of o (key: offset_key's bytes) into m. */
static void map_put_key(struct hmap *m, const void *key, size_t klen, const struct cg_offset *o)
{
    struct cg_offset *c = xmalloc(sizeof *c);
    *c = *o;
    c->metadata_len = o->metadata_len > 0 ? o->metadata_len : 0;
    c->metadata = xstrndup(o->metadata ? o->metadata : "", (size_t)c->metadata_len);
    struct cg_offset *old = hmap_put(m, key, klen, c);
    if (old) {
        free(old->metadata);
        free(old);
    }
}

static void map_put(struct hmap *m, kstr_t topic, int32_t partition, const struct cg_offset *o)
{
    struct buf b = BUF_INIT;
    offset_key(&b, topic, partition);
    map_put_key(m, b.data, b.len, o);
    buf_free(&b);
}

static bool map_del(struct hmap *m, kstr_t topic, int32_t partition)
{
    struct buf b = BUF_INIT;
    offset_key(&b, topic, partition);
    struct cg_offset *old = hmap_del(m, b.data, b.len);
    buf_free(&b);
    if (!old)
        return false;
    free(old->metadata);
    free(old);
    return true;
}

void cg_offset_put(struct cgroup *g, kstr_t topic, int32_t partition, const struct cg_offset *o)
{
    map_put(&g->offsets, topic, partition, o);
}

bool cg_offset_del(struct cgroup *g, kstr_t topic, int32_t partition)
{
    return map_del(&g->offsets, topic, partition);
}

bool cg_offset_next(const struct cgroup *g, size_t *iter, kstr_t *topic, int32_t *partition,
                    const struct cg_offset **o)
{
    const void *k;
    size_t kl;
    void *v;
    if (!hmap_next(&g->offsets, iter, &k, &kl, &v))
        return false;
    const uint8_t *kb = k;
    *topic = (kstr_t){(const char *)kb, (int32_t)(kl - 5)};
    *partition = (int32_t)be32_read(kb + kl - 4);
    *o = v;
    return true;
}

size_t cg_offset_count(const struct cgroup *g)
{
    return hmap_count(&g->offsets);
}

/* ---- transactional offsets ---- */

void cg_txn_put(struct cgroup *g, int64_t producer_id, kstr_t topic, int32_t partition, const struct cg_offset *o)
{
    struct hmap *m = hmap_get(&g->txn, &producer_id, sizeof producer_id);
    if (!m) {
        m = xmalloc(sizeof *m);
        hmap_init(m);
        hmap_put(&g->txn, &producer_id, sizeof producer_id, m);
    }
    map_put(m, topic, partition, o);
}

int32_t cg_txn_end(struct cgroup *g, int64_t producer_id, bool commit)
{
    struct hmap *m = hmap_del(&g->txn, &producer_id, sizeof producer_id);
    if (!m)
        return 0;
    int32_t n = 0;
    size_t it = 0;
    const void *k;
    size_t kl;
    void *v;
    while (commit && hmap_next(m, &it, &k, &kl, &v)) {
        const struct cg_offset *o = v;
        const struct cg_offset *cur = hmap_get(&g->offsets, k, kl);
        /* Kafka keeps the most recent commit of a mix of transactional
         * and regular ones, by the position of their records: compaction
         * of __consumer_offsets keeps the later one too */
        if (cur && o->record_offset <= cur->record_offset)
            continue;
        map_put_key(&g->offsets, k, kl, o);
        n++;
    }
    offsets_free(m);
    free(m);
    return n;
}

void cg_txn_del(struct cgroup *g, kstr_t topic, int32_t partition)
{
    size_t it = 0;
    const void *k;
    size_t kl;
    void *v;
    while (hmap_next(&g->txn, &it, &k, &kl, &v))
        map_del(v, topic, partition); /* the transaction stays open, maybe empty, until its marker */
}

bool cg_txn_pending(const struct cgroup *g, kstr_t topic, int32_t partition)
{
    if (hmap_count(&g->txn) == 0)
        return false;
    struct buf b = BUF_INIT;
    offset_key(&b, topic, partition);
    bool found = false;
    size_t it = 0;
    const void *k;
    size_t kl;
    void *v;
    while (!found && hmap_next(&g->txn, &it, &k, &kl, &v))
        found = hmap_get(v, b.data, b.len) != NULL;
    buf_free(&b);
    return found;
}

size_t cg_txn_count(const struct cgroup *g)
{
    return hmap_count(&g->txn);
}

bool cg_txn_next(const struct cgroup *g, size_t *iter1, size_t *iter2, kstr_t *topic, int32_t *partition)
{
    for (;;) {
        size_t i1 = *iter1;
        const void *k;
        size_t kl;
        void *v;
        if (!hmap_next(&g->txn, &i1, &k, &kl, &v))
            return false;
        /* *iter1 stays on this transaction until its offsets are done */
        const void *ok;
        size_t okl;
        void *ov;
        if (hmap_next(v, iter2, &ok, &okl, &ov)) {
            const uint8_t *kb = ok;
            *topic = (kstr_t){(const char *)kb, (int32_t)(okl - 5)};
            *partition = (int32_t)be32_read(kb + okl - 4);
            return true;
        }
        *iter1 = i1;
        *iter2 = 0;
    }
}

/* ------------------------------------------------------------------ */
/* loading                                                             */

void cg_load_metadata(struct cgroup *g, kstr_t protocol_type, int32_t generation, kstr_t protocol, kstr_t leader,
                      int64_t state_ts, int32_t n, const struct cg_loaded_member *members)
{
    for (int32_t i = 0; i < g->nmembers; i++)
        member_free(g->members[i]);
    g->nmembers = 0;
    g->num_awaiting_join = 0;
    free(g->leader);
    g->leader = NULL;
    free(g->protocol_type);
    g->protocol_type = protocol_type.len > 0 ? kdup(protocol_type) : NULL;
    free(g->protocol_name);
    g->protocol_name = kdup(protocol);
    g->generation = generation;
    g->state = n > 0 ? CG_STABLE : CG_EMPTY;
    g->prev_state = CG_DEAD;
    g->state_ts = state_ts;
    g->has_record = true;
    for (int32_t i = 0; i < n; i++) {
        const struct cg_loaded_member *lm = &members[i];
        struct cg_member *m = xcalloc(1, sizeof *m);
        m->member_id = kdup(lm->member_id.len >= 0 ? lm->member_id : KSTR_LIT(""));
        m->instance_id = kdup(lm->instance_id);
        m->client_id = kdup(lm->client_id.len >= 0 ? lm->client_id : KSTR_LIT(""));
        m->client_host = kdup(lm->client_host.len >= 0 ? lm->client_host : KSTR_LIT(""));
        m->session_timeout_ms = lm->session_timeout_ms;
        m->rebalance_timeout_ms = lm->rebalance_timeout_ms == -1 ? lm->session_timeout_ms : lm->rebalance_timeout_ms;
        m->protocol_type = kdup(protocol_type.len >= 0 ? protocol_type : KSTR_LIT(""));
        kstr_t pn = protocol.len >= 0 ? protocol : KSTR_LIT("");
        m->protocols = copy_protocols(&pn, &lm->subscription, 1);
        m->nprotocols = 1;
        set_assignment(m, lm->assignment.p, lm->assignment.len);
        m->hb_deadline = CG_NO_DEADLINE;
        add_member(g, m, NULL);
    }
    if (leader.len >= 0 && cg_member_find(g, leader))
        set_leader(g, g->members[member_index(g, leader)]->member_id);
    compute_subscribed(g);
}

void cg_loaded(struct cg_env *e, struct cgroup *g)
{
    for (int32_t i = 0; i < g->nmembers; i++)
        reschedule_heartbeat(e, g->members[i], g->members[i]->session_timeout_ms);
}
