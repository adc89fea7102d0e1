/* KIP-848 consumer groups: see consumer.h. */
#include "coord/consumer.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord/group.h"
#include "proto/kerr.h"
#include "util/slog.h"
#include "util/uuid.h"

static const char *const state_names[] = {"Empty", "Assigning", "Reconciling", "Stable"};

const char *ccg_state_name(enum ccg_state s)
{
    return s >= CCG_G_EMPTY && s <= CCG_G_STABLE ? state_names[s] : "Unknown";
}

char *ccg_strdup(kstr_t s)
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
    return n == (size_t)b.len && (n == 0 || memcmp(a, b.p, n) == 0);
}

static bool eqs_null(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

static void set_str(char **dst, kstr_t s, bool *changed)
{
    if (eqk(*dst, s) || (!*dst && s.len < 0))
        return;
    free(*dst);
    *dst = ccg_strdup(s);
    *changed = true;
}

/* ------------------------------------------------------------------ */
/* partition sets                                                      */

static int ctp_cmp(const kuuid_t *t1, int32_t p1, const kuuid_t *t2, int32_t p2)
{
    int c = memcmp(t1->b, t2->b, 16);
    if (c)
        return c;
    return p1 < p2 ? -1 : p1 > p2;
}

/* Index of (topic, part), or -(insertion point) - 1. */
static int32_t ctp_find(const struct ctp_set *s, const kuuid_t *topic, int32_t part)
{
    int32_t lo = 0, hi = s->n;
    while (lo < hi) {
        int32_t mid = (lo + hi) / 2;
        int c = ctp_cmp(&s->v[mid].topic, s->v[mid].part, topic, part);
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -lo - 1;
}

void ctp_set_free(struct ctp_set *s)
{
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

void ctp_set_add(struct ctp_set *s, const kuuid_t *topic, int32_t part)
{
    int32_t i = ctp_find(s, topic, part);
    if (i >= 0)
        return;
    i = -i - 1;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->v = xrealloc(s->v, (size_t)s->cap * sizeof *s->v);
    }
    memmove(&s->v[i + 1], &s->v[i], (size_t)(s->n - i) * sizeof *s->v);
    s->v[i].topic = *topic;
    s->v[i].part = part;
    s->n++;
}

bool ctp_set_has(const struct ctp_set *s, const kuuid_t *topic, int32_t part)
{
    return ctp_find(s, topic, part) >= 0;
}

bool ctp_set_eq(const struct ctp_set *a, const struct ctp_set *b)
{
    if (a->n != b->n)
        return false;
    for (int32_t i = 0; i < a->n; i++)
        if (ctp_cmp(&a->v[i].topic, a->v[i].part, &b->v[i].topic, b->v[i].part) != 0)
            return false;
    return true;
}

void ctp_set_copy(struct ctp_set *dst, const struct ctp_set *src)
{
    ctp_set_free(dst);
    if (src->n == 0)
        return;
    dst->v = xmalloc((size_t)src->n * sizeof *dst->v);
    memcpy(dst->v, src->v, (size_t)src->n * sizeof *dst->v);
    dst->n = dst->cap = src->n;
}

/* ------------------------------------------------------------------ */
/* group and members                                                   */

struct ccgroup *ccg_new(void)
{
    return xcalloc(1, sizeof(struct ccgroup));
}

static void member_free(struct ccg_member *m)
{
    if (!m)
        return;
    free(m->id);
    free(m->instance_id);
    free(m->rack_id);
    free(m->client_id);
    free(m->client_host);
    free(m->assignor);
    ccg_member_set_regex(m, NULL);
    for (int32_t i = 0; i < m->ntopics; i++)
        free(m->topics[i]);
    free(m->topics);
    ctp_set_free(&m->assigned);
    ctp_set_free(&m->revoking);
    ctp_set_free(&m->target);
    free(m);
}

static void meta_free(struct ccgroup *cc)
{
    for (int32_t i = 0; i < cc->nmeta; i++)
        free(cc->meta[i].name);
    free(cc->meta);
    cc->meta = NULL;
    cc->nmeta = 0;
}

void ccg_free(struct ccgroup *cc)
{
    if (!cc)
        return;
    for (int32_t i = 0; i < cc->nmembers; i++)
        member_free(cc->members[i]);
    free(cc->members);
    meta_free(cc);
    free(cc->last_assignor);
    free(cc);
}

static int32_t member_index(const struct ccgroup *cc, kstr_t id)
{
    for (int32_t i = 0; i < cc->nmembers; i++)
        if (eqk(cc->members[i]->id, id))
            return i;
    return -1;
}

struct ccg_member *ccg_member_find(const struct ccgroup *cc, kstr_t member_id)
{
    int32_t i = member_index(cc, member_id);
    return i < 0 ? NULL : cc->members[i];
}

static struct ccg_member *static_member(const struct ccgroup *cc, kstr_t instance_id)
{
    for (int32_t i = 0; i < cc->nmembers; i++)
        if (eqk(cc->members[i]->instance_id, instance_id))
            return cc->members[i];
    return NULL;
}

static struct ccg_member *member_add(struct ccgroup *cc, kstr_t id)
{
    struct ccg_member *m = xcalloc(1, sizeof *m);
    m->id = ccg_strdup(id.len >= 0 ? id : KSTR_LIT(""));
    m->state = CCG_STABLE;
    m->rebalance_timeout_ms = -1;
    m->session_deadline = CG_NO_DEADLINE;
    m->revoke_deadline = CG_NO_DEADLINE;
    m->re_version = -1;
    m->client_id = xstrdup("");
    m->client_host = xstrdup("");
    if (cc->nmembers == cc->capmembers) {
        cc->capmembers = cc->capmembers ? 2 * cc->capmembers : 8;
        cc->members = xrealloc(cc->members, (size_t)cc->capmembers * sizeof *cc->members);
    }
    cc->members[cc->nmembers++] = m;
    return m;
}

struct ccg_member *ccg_member_get_or_add(struct ccgroup *cc, kstr_t member_id)
{
    struct ccg_member *m = ccg_member_find(cc, member_id);
    return m ? m : member_add(cc, member_id);
}

void ccg_member_remove(struct ccgroup *cc, kstr_t member_id)
{
    int32_t i = member_index(cc, member_id);
    if (i < 0)
        return;
    member_free(cc->members[i]);
    memmove(&cc->members[i], &cc->members[i + 1], (size_t)(cc->nmembers - i - 1) * sizeof *cc->members);
    cc->nmembers--;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void ccg_member_set_topics(struct ccg_member *m, int32_t n, const kstr_t *topics)
{
    for (int32_t i = 0; i < m->ntopics; i++)
        free(m->topics[i]);
    free(m->topics);
    m->topics = xcalloc((size_t)(n > 0 ? n : 1), sizeof *m->topics);
    m->ntopics = 0;
    for (int32_t i = 0; i < n; i++) {
        if (topics[i].len < 0)
            continue;
        char *t = ccg_strdup(topics[i]);
        bool dup = false;
        for (int32_t k = 0; k < m->ntopics && !dup; k++)
            dup = strcmp(m->topics[k], t) == 0;
        if (dup)
            free(t);
        else
            m->topics[m->ntopics++] = t;
    }
    qsort(m->topics, (size_t)m->ntopics, sizeof *m->topics, cmp_str);
}

static void free_rtopics(struct ccg_member *m)
{
    for (int32_t i = 0; i < m->nrtopics; i++)
        free(m->rtopics[i]);
    free(m->rtopics);
    m->rtopics = NULL;
    m->nrtopics = 0;
    m->re_version = -1;
}

/* The pattern anchored at both ends: Kafka matches whole names. */
static bool compile_regex(const char *regex, regex_t *re)
{
    size_t n = strlen(regex);
    char *anchored = xmalloc(n + 5);
    snprintf(anchored, n + 5, "^(%s)$", regex);
    int rc = regcomp(re, anchored, REG_EXTENDED | REG_NOSUB);
    free(anchored);
    return rc == 0;
}

bool ccg_member_set_regex(struct ccg_member *m, const char *regex)
{
    if (m->re) {
        regfree(m->re);
        free(m->re);
        m->re = NULL;
    }
    free(m->regex);
    m->regex = NULL;
    free_rtopics(m);
    if (!regex)
        return true;
    m->regex = xstrdup(regex);
    regex_t *re = xmalloc(sizeof *re);
    if (!compile_regex(regex, re)) {
        free(re);
        return false;
    }
    m->re = re;
    return true;
}

struct regex_walk {
    struct ccg_member *m;
    int32_t cap;
};

static void regex_visit(void *arg, const char *name)
{
    struct regex_walk *w = arg;
    struct ccg_member *m = w->m;
    if (strncmp(name, "__", 2) == 0 || regexec(m->re, name, 0, NULL, 0) != 0)
        return; /* internal topics never match */
    if (m->nrtopics == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 8;
        m->rtopics = xrealloc(m->rtopics, (size_t)w->cap * sizeof *m->rtopics);
    }
    m->rtopics[m->nrtopics++] = xstrdup(name);
}

/* Re-resolves the member's regex against the topics there are now. */
static void resolve_regex(struct ccg_env *e, struct ccg_member *m)
{
    if (!m->re || !e->each_topic)
        return;
    if (e->topics_version >= 0 && m->re_version == e->topics_version)
        return; /* no topic came or went since */
    free_rtopics(m);
    m->re_version = e->topics_version;
    struct regex_walk w = {m, 0};
    e->each_topic(e->ctx, regex_visit, &w);
    if (m->nrtopics > 1)
        qsort(m->rtopics, (size_t)m->nrtopics, sizeof *m->rtopics, cmp_str);
}

/* The i-th topic of the member's subscription (names, then regex matches). */
static const char *sub_topic(const struct ccg_member *m, int32_t i)
{
    return i < m->ntopics ? m->topics[i] : m->rtopics[i - m->ntopics];
}

static int32_t sub_count(const struct ccg_member *m)
{
    return m->ntopics + m->nrtopics;
}

static bool topics_equal(const struct ccg_member *m, int32_t n, const kstr_t *topics)
{
    struct ccg_member tmp = {0};
    ccg_member_set_topics(&tmp, n, topics);
    bool eq = tmp.ntopics == m->ntopics;
    for (int32_t i = 0; eq && i < m->ntopics; i++)
        eq = strcmp(tmp.topics[i], m->topics[i]) == 0;
    for (int32_t i = 0; i < tmp.ntopics; i++)
        free(tmp.topics[i]);
    free(tmp.topics);
    return eq;
}

bool ccg_subscribed_to(const struct ccgroup *cc, kstr_t topic)
{
    for (int32_t i = 0; i < cc->nmembers; i++)
        for (int32_t k = 0; k < sub_count(cc->members[i]); k++)
            if (eqk(sub_topic(cc->members[i], k), topic))
                return true;
    return false;
}

enum ccg_state ccg_state(const struct ccgroup *cc)
{
    if (cc->nmembers == 0)
        return CCG_G_EMPTY;
    if (cc->epoch != cc->assign_epoch)
        return CCG_G_ASSIGNING;
    for (int32_t i = 0; i < cc->nmembers; i++) {
        const struct ccg_member *m = cc->members[i];
        if (m->state != CCG_STABLE || (m->epoch != cc->assign_epoch && m->epoch != CCG_STATIC_LEAVE_EPOCH))
            return CCG_G_RECONCILING;
    }
    return CCG_G_STABLE;
}

int64_t ccg_next_deadline(const struct ccgroup *cc)
{
    int64_t d = CG_NO_DEADLINE;
    for (int32_t i = 0; i < cc->nmembers; i++) {
        const struct ccg_member *m = cc->members[i];
        if (m->session_deadline < d)
            d = m->session_deadline;
        if (m->revoke_deadline < d)
            d = m->revoke_deadline;
    }
    return d;
}

/* ------------------------------------------------------------------ */
/* subscription metadata and the group epoch                           */

static int cmp_meta(const void *a, const void *b)
{
    return strcmp(((const struct ccg_topic *)a)->name, ((const struct ccg_topic *)b)->name);
}

/* Recomputes the metadata of the subscribed topics; true when it
 * changed (Kafka's computeSubscriptionMetadata + its comparison). */
static bool refresh_metadata(struct ccg_env *e, struct ccgroup *cc)
{
    int32_t cap = 0, n = 0;
    struct ccg_topic *v = NULL;
    for (int32_t i = 0; i < cc->nmembers; i++) {
        struct ccg_member *m = cc->members[i];
        resolve_regex(e, m);
        for (int32_t k = 0; k < sub_count(m); k++) {
            const char *name = sub_topic(m, k);
            bool seen = false;
            for (int32_t j = 0; j < n && !seen; j++)
                seen = strcmp(v[j].name, name) == 0;
            kuuid_t id;
            int32_t np;
            if (seen || !e->topic || !e->topic(e->ctx, KSTR(name), &id, &np))
                continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 8;
                v = xrealloc(v, (size_t)cap * sizeof *v);
            }
            v[n++] = (struct ccg_topic){id, xstrdup(name), np};
        }
    }
    if (n)
        qsort(v, (size_t)n, sizeof *v, cmp_meta);
    bool same = n == cc->nmeta;
    for (int32_t i = 0; same && i < n; i++)
        same = strcmp(v[i].name, cc->meta[i].name) == 0 && kuuid_eq(&v[i].id, &cc->meta[i].id) &&
               v[i].nparts == cc->meta[i].nparts;
    if (same) {
        for (int32_t i = 0; i < n; i++)
            free(v[i].name);
        free(v);
        return false;
    }
    meta_free(cc);
    cc->meta = v;
    cc->nmeta = n;
    return true;
}

static const struct ccg_topic *meta_by_name(const struct ccgroup *cc, const char *name)
{
    for (int32_t i = 0; i < cc->nmeta; i++)
        if (strcmp(cc->meta[i].name, name) == 0)
            return &cc->meta[i];
    return NULL;
}

static const struct ccg_topic *meta_by_id(const struct ccgroup *cc, const kuuid_t *id)
{
    for (int32_t i = 0; i < cc->nmeta; i++)
        if (kuuid_eq(&cc->meta[i].id, id))
            return &cc->meta[i];
    return NULL;
}

static void emit(struct ccg_env *e, const struct cgroup *g, enum ccg_rec kind, const struct ccg_member *m,
                 const char *member_id, bool tombstone)
{
    if (e->emit)
        e->emit(e, g, kind, m, member_id, tombstone);
    g->cc->has_records = true;
}

static void bump_epoch(struct ccg_env *e, struct cgroup *g, const char *why)
{
    g->cc->epoch++;
    slog_debug("group coordinator: consumer group %s: epoch %d (%s)", g->id, g->cc->epoch, why);
    emit(e, g, CCG_REC_METADATA, NULL, NULL, false);
}

/* ------------------------------------------------------------------ */
/* target assignment                                                   */

struct describer_ctx {
    const struct ccgroup *cc;
    struct ccg_env *e;
};

static int32_t desc_num_partitions(void *ctx, const samsa_uuid_t *topic_id)
{
    const struct describer_ctx *d = ctx;
    const struct ccg_topic *t = meta_by_id(d->cc, (const kuuid_t *)topic_id);
    return t ? t->nparts : -1;
}

/* What Kafka's SubscribedTopicDescriber.racksForPartition answers: the
 * racks of the partition's replicas, from the metadata image. */
static size_t desc_racks(void *ctx, const samsa_uuid_t *topic_id, int32_t partition, const char **racks, size_t cap)
{
    const struct describer_ctx *d = ctx;
    const struct ccg_topic *t = meta_by_id(d->cc, (const kuuid_t *)topic_id);
    if (!t || partition < 0 || partition >= t->nparts || !d->e->racks)
        return 0;
    return d->e->racks(d->e->ctx, (const kuuid_t *)topic_id, partition, racks, cap);
}

struct builder_ctx {
    const struct ccgroup *cc;
    struct ctp_set *out; /* per member */
    size_t n;
    struct ctp_set given; /* every partition given so far */
};

static int builder_assign(void *ctx, size_t member_index, const samsa_uuid_t *topic_id, int32_t partition)
{
    struct builder_ctx *b = ctx;
    const struct ccg_topic *t = meta_by_id(b->cc, (const kuuid_t *)topic_id);
    if (member_index >= b->n || !t || partition < 0 || partition >= t->nparts ||
        ctp_set_has(&b->given, (const kuuid_t *)topic_id, partition))
        return SAMSA_EINVAL;
    ctp_set_add(&b->given, (const kuuid_t *)topic_id, partition);
    ctp_set_add(&b->out[member_index], (const kuuid_t *)topic_id, partition);
    return SAMSA_OK;
}

/* Kafka's coordinator hands its assignors each member's assignment as
 * a java.util.HashMap of topic id to a HashSet of partitions, and its
 * uniform assignor keeps and revokes partitions in their iteration
 * order; so the host lists `current` in that order: ascending hash
 * bucket (String/Uuid/Integer hashCode, spread as HashMap does), ties
 * in the previous order. The table sizes are HashMap's after n puts
 * (topics) and a HashSet's copied from n partitions. */
static uint32_t java_spread(uint32_t h) { return h ^ (h >> 16); }

static uint32_t java_uuid_hash(const samsa_uuid_t *u)
{
    uint64_t hi = 0, lo = 0;
    for (int i = 0; i < 8; i++) {
        hi = hi << 8 | u->b[i];
        lo = lo << 8 | u->b[8 + i];
    }
    uint64_t h = hi ^ lo;
    return (uint32_t)(h >> 32) ^ (uint32_t)h;
}

static void java_order_current(samsa_topic_partitions_t *cur, size_t nt)
{
    size_t cap = 16;
    while ((double)nt > (double)cap * 0.75)
        cap *= 2;
    for (size_t i = 1; i < nt; i++) {
        samsa_topic_partitions_t x = cur[i];
        uint32_t b = java_spread(java_uuid_hash(&x.topic_id)) & (uint32_t)(cap - 1);
        size_t j = i;
        for (; j > 0 && (java_spread(java_uuid_hash(&cur[j - 1].topic_id)) & (uint32_t)(cap - 1)) > b; j--)
            cur[j] = cur[j - 1];
        cur[j] = x;
    }
    for (size_t t = 0; t < nt; t++) {
        size_t n = cur[t].n_partitions, want = (size_t)((float)n / 0.75f) + 1, pcap = 1;
        if (want < 16)
            want = 16;
        while (pcap < want)
            pcap *= 2;
        int32_t *p = (int32_t *)cur[t].partitions;
        for (size_t i = 1; i < n; i++) {
            int32_t x = p[i];
            uint32_t b = java_spread((uint32_t)x) & (uint32_t)(pcap - 1);
            size_t j = i;
            for (; j > 0 && (java_spread((uint32_t)p[j - 1]) & (uint32_t)(pcap - 1)) > b; j--)
                p[j] = p[j - 1];
            p[j] = x;
        }
    }
}

/* The assignor the members prefer: as Kafka's
 * ConsumerGroup.computePreferredServerAssignor, the ServerAssignor most
 * members name (a tie goes to the one named first in join order, where
 * Kafka's answer depends on a HashMap's order), else the default. */
static const samsa_assignor_t *pick_assignor(struct ccg_env *e, const struct ccgroup *cc, void **state)
{
    if (!e->assignor)
        return NULL;
    const char *best = NULL;
    int32_t best_n = 0;
    for (int32_t i = 0; i < cc->nmembers; i++) {
        const char *name = cc->members[i]->assignor;
        if (!name)
            continue;
        bool seen = false;
        for (int32_t j = 0; j < i && !seen; j++)
            seen = cc->members[j]->assignor && strcmp(cc->members[j]->assignor, name) == 0;
        if (seen)
            continue;
        int32_t n = 0;
        for (int32_t j = i; j < cc->nmembers; j++)
            n += cc->members[j]->assignor && strcmp(cc->members[j]->assignor, name) == 0;
        if (n > best_n && e->assignor(e->ctx, name, state)) {
            best = name;
            best_n = n;
        }
    }
    return e->assignor(e->ctx, best, state);
}

/* Kafka's TargetAssignmentBuilder: a new target for every member at
 * the group epoch; a record for each member whose target changed. */
static void compute_target(struct ccg_env *e, struct cgroup *g)
{
    struct ccgroup *cc = g->cc;
    size_t n = (size_t)cc->nmembers;
    void *state = NULL;
    const samsa_assignor_t *as = pick_assignor(e, cc, &state);
    struct ctp_set *out = xcalloc(n + 1, sizeof *out);
    int rc = SAMSA_OK;
    char errstr[256] = "";
    if (as && n > 0) {
        samsa_group_member_t *gm = xcalloc(n, sizeof *gm);
        samsa_uuid_t **subs = xcalloc(n, sizeof *subs);
        samsa_topic_partitions_t **cur = xcalloc(n, sizeof *cur);
        bool homogeneous = true;
        for (size_t i = 0; i < n; i++) {
            const struct ccg_member *m = cc->members[i];
            subs[i] = xcalloc((size_t)sub_count(m) + 1, sizeof **subs);
            size_t ns = 0;
            for (int32_t k = 0; k < sub_count(m); k++) {
                const struct ccg_topic *t = meta_by_name(cc, sub_topic(m, k));
                bool dup = false;
                for (size_t x = 0; t && x < ns && !dup; x++)
                    dup = memcmp(subs[i][x].b, t->id.b, 16) == 0;
                if (t && !dup)
                    memcpy(subs[i][ns++].b, t->id.b, 16);
            }
            /* current target per topic (stickiness) */
            cur[i] = xcalloc((size_t)m->target.n + 1, sizeof **cur);
            size_t nt = 0;
            for (int32_t k = 0; k < m->target.n;) {
                int32_t j = k;
                while (j < m->target.n && kuuid_eq(&m->target.v[j].topic, &m->target.v[k].topic))
                    j++;
                int32_t *parts = xcalloc((size_t)(j - k), sizeof *parts);
                for (int32_t x = k; x < j; x++)
                    parts[x - k] = m->target.v[x].part;
                memcpy(cur[i][nt].topic_id.b, m->target.v[k].topic.b, 16);
                cur[i][nt].partitions = parts;
                cur[i][nt].n_partitions = (size_t)(j - k);
                nt++;
                k = j;
            }
            java_order_current(cur[i], nt);
            gm[i] = (samsa_group_member_t){
                .member_id = m->id,
                .instance_id = m->instance_id,
                .rack_id = m->rack_id,
                .subscribed_topic_ids = subs[i],
                .n_subscribed = ns,
                .current = cur[i],
                .n_current = nt,
            };
            if (i > 0 && (ns != gm[0].n_subscribed || memcmp(subs[i], subs[0], ns * sizeof **subs) != 0))
                homogeneous = false;
        }
        samsa_group_spec_t spec = {
            .struct_size = sizeof spec,
            .group_id = g->id,
            .subscription_type = homogeneous ? SAMSA_SUBSCRIPTION_HOMOGENEOUS : SAMSA_SUBSCRIPTION_HETEROGENEOUS,
            .members = gm,
            .n_members = n,
        };
        struct describer_ctx dctx = {cc, e};
        samsa_topic_describer_t desc = {sizeof desc, &dctx, desc_num_partitions, desc_racks};
        struct builder_ctx bctx = {cc, out, n, {0}};
        samsa_assignment_builder_t bld = {sizeof bld, &bctx, builder_assign};
        rc = as->assign(state, &spec, &desc, &bld, errstr, sizeof errstr);
        ctp_set_free(&bctx.given);
        for (size_t i = 0; i < n; i++) {
            for (size_t k = 0; k < gm[i].n_current; k++)
                free((void *)cur[i][k].partitions);
            free(cur[i]);
            free(subs[i]);
        }
        free(cur);
        free(subs);
        free(gm);
        free(cc->last_assignor);
        cc->last_assignor = xstrdup(as->hdr.name);
    }
    if (rc != SAMSA_OK) {
        slog_warn("group coordinator: group %s: assignor %s failed (%s); the target assignment stays", g->id,
                  as ? as->hdr.name : "?", errstr);
    } else {
        for (size_t i = 0; i < n; i++) {
            struct ccg_member *m = cc->members[i];
            if (ctp_set_eq(&m->target, &out[i]))
                continue;
            ctp_set_copy(&m->target, &out[i]);
            emit(e, g, CCG_REC_TARGET_MEMBER, m, m->id, false);
        }
    }
    for (size_t i = 0; i < n; i++)
        ctp_set_free(&out[i]);
    free(out);
    cc->assign_epoch = cc->epoch;
    emit(e, g, CCG_REC_TARGET_META, NULL, NULL, false);
}

/* ------------------------------------------------------------------ */
/* reconciliation (Kafka's CurrentAssignmentBuilder)                   */

/* Any member but skip owns (assigned or pending revocation) tp. */
static bool owned_by_other(const struct ccgroup *cc, const struct ccg_member *skip, const struct ctp *tp)
{
    for (int32_t i = 0; i < cc->nmembers; i++) {
        const struct ccg_member *o = cc->members[i];
        if (o == skip)
            continue;
        if (ctp_set_has(&o->assigned, &tp->topic, tp->part) || ctp_set_has(&o->revoking, &tp->topic, tp->part))
            return true;
    }
    return false;
}

/* The client still owns some of revoking: true when owned is unknown. */
static bool owns_revoked(const struct ctp_set *owned, const struct ctp_set *revoking)
{
    if (!owned)
        return true;
    for (int32_t i = 0; i < revoking->n; i++)
        if (ctp_set_has(owned, &revoking->v[i].topic, revoking->v[i].part))
            return true;
    return false;
}

struct next_assignment {
    int8_t state;
    int32_t epoch;
    struct ctp_set assigned, revoking;
};

static void compute_next(const struct ccgroup *cc, const struct ccg_member *m, int32_t member_epoch,
                         const struct ctp_set *owned, struct next_assignment *nx)
{
    int32_t target_epoch = cc->assign_epoch;
    struct ctp_set kept = {0}, revoke = {0}, pending = {0};
    bool unreleased = false;
    for (int32_t i = 0; i < m->assigned.n; i++) {
        const struct ctp *tp = &m->assigned.v[i];
        if (ctp_set_has(&m->target, &tp->topic, tp->part))
            ctp_set_add(&kept, &tp->topic, tp->part);
        else
            ctp_set_add(&revoke, &tp->topic, tp->part);
    }
    for (int32_t i = 0; i < m->target.n; i++) {
        const struct ctp *tp = &m->target.v[i];
        if (ctp_set_has(&kept, &tp->topic, tp->part))
            continue;
        /* partitions the member itself still revokes count as owned */
        if (owned_by_other(cc, m, tp) || ctp_set_has(&m->revoking, &tp->topic, tp->part))
            unreleased = true;
        else
            ctp_set_add(&pending, &tp->topic, tp->part);
    }
    memset(nx, 0, sizeof *nx);
    if (revoke.n > 0 && owns_revoked(owned, &revoke)) {
        /* revoke first, in the current epoch */
        nx->state = CCG_UNREVOKED_PARTITIONS;
        nx->epoch = member_epoch;
        nx->assigned = kept;
        nx->revoking = revoke;
        ctp_set_free(&pending);
        return;
    }
    ctp_set_free(&revoke);
    for (int32_t i = 0; i < pending.n; i++)
        ctp_set_add(&kept, &pending.v[i].topic, pending.v[i].part);
    ctp_set_free(&pending);
    nx->state = unreleased ? CCG_UNRELEASED_PARTITIONS : CCG_STABLE;
    nx->epoch = target_epoch;
    nx->assigned = kept;
}

/* Moves m one step towards its target; true when it changed. */
static bool reconcile(struct ccg_env *e, struct cgroup *g, struct ccg_member *m, const struct ctp_set *owned)
{
    struct ccgroup *cc = g->cc;
    struct next_assignment nx;
    switch (m->state) {
    case CCG_UNREVOKED_PARTITIONS:
        if (owns_revoked(owned, &m->revoking))
            return false;
        compute_next(cc, m, m->epoch, owned, &nx);
        break;
    case CCG_UNRELEASED_PARTITIONS:
        compute_next(cc, m, m->epoch, owned, &nx);
        break;
    default: /* STABLE, UNKNOWN */
        if (m->epoch == cc->assign_epoch && m->state == CCG_STABLE)
            return false;
        compute_next(cc, m, m->epoch, owned, &nx);
        break;
    }
    bool changed = nx.state != m->state || nx.epoch != m->epoch || !ctp_set_eq(&nx.assigned, &m->assigned) ||
                   !ctp_set_eq(&nx.revoking, &m->revoking);
    if (!changed) {
        ctp_set_free(&nx.assigned);
        ctp_set_free(&nx.revoking);
        return false;
    }
    if (nx.epoch != m->epoch)
        m->prev_epoch = m->epoch;
    m->epoch = nx.epoch;
    bool was_revoking = m->state == CCG_UNREVOKED_PARTITIONS;
    m->state = nx.state;
    ctp_set_free(&m->assigned);
    ctp_set_free(&m->revoking);
    m->assigned = nx.assigned;
    m->revoking = nx.revoking;
    if (m->state == CCG_UNREVOKED_PARTITIONS) {
        if (!was_revoking) {
            int32_t t = m->rebalance_timeout_ms > 0 ? m->rebalance_timeout_ms : e->session_timeout_ms;
            m->revoke_deadline = e->now + t;
            e->timers_changed = true;
        }
    } else if (m->revoke_deadline != CG_NO_DEADLINE) {
        m->revoke_deadline = CG_NO_DEADLINE;
        e->timers_changed = true;
    }
    emit(e, g, CCG_REC_CURRENT, m, m->id, false);
    return true;
}

/* ------------------------------------------------------------------ */
/* removal                                                             */

static void remove_member(struct ccg_env *e, struct cgroup *g, struct ccg_member *m, const char *why)
{
    struct ccgroup *cc = g->cc;
    char *id = xstrdup(m->id);
    slog_info("group coordinator: consumer group %s: member %s removed (%s)", g->id, id, why);
    emit(e, g, CCG_REC_CURRENT, NULL, id, true);
    emit(e, g, CCG_REC_TARGET_MEMBER, NULL, id, true);
    emit(e, g, CCG_REC_MEMBER, NULL, id, true);
    ccg_member_remove(cc, KSTR(id));
    free(id);
    if (refresh_metadata(e, cc))
        emit(e, g, CCG_REC_PARTITION_META, NULL, NULL, false);
    bump_epoch(e, g, "a member left");
    e->timers_changed = true;
}

void ccg_tick(struct ccg_env *e, struct cgroup *g)
{
    struct ccgroup *cc = g->cc;
    for (int32_t i = 0; i < cc->nmembers;) {
        struct ccg_member *m = cc->members[i];
        if (m->session_deadline <= e->now) {
            remove_member(e, g, m, "session timeout");
            continue;
        }
        if (m->revoke_deadline <= e->now) {
            remove_member(e, g, m, "did not revoke its partitions within the rebalance timeout");
            continue;
        }
        i++;
    }
}

void ccg_emit_tombstones(struct ccg_env *e, const struct cgroup *g)
{
    const struct ccgroup *cc = g->cc;
    for (int32_t i = 0; i < cc->nmembers; i++) {
        e->emit(e, g, CCG_REC_CURRENT, NULL, cc->members[i]->id, true);
        e->emit(e, g, CCG_REC_TARGET_MEMBER, NULL, cc->members[i]->id, true);
        e->emit(e, g, CCG_REC_MEMBER, NULL, cc->members[i]->id, true);
    }
    e->emit(e, g, CCG_REC_TARGET_META, NULL, NULL, true);
    e->emit(e, g, CCG_REC_PARTITION_META, NULL, NULL, true);
    e->emit(e, g, CCG_REC_METADATA, NULL, NULL, true);
}

/* ------------------------------------------------------------------ */
/* the heartbeat                                                       */

int16_t ccg_validate(const struct ccg_hb_req *rq, struct ccg_env *e, const char **message)
{
    *message = NULL;
    if (rq->epoch < CCG_STATIC_LEAVE_EPOCH) {
        *message = "MemberEpoch is invalid.";
        return KERR_INVALID_REQUEST;
    }
    if ((rq->version >= 1 || rq->epoch != CCG_JOIN_EPOCH) && rq->member_id.len <= 0) {
        *message = "MemberId can't be empty.";
        return KERR_INVALID_REQUEST;
    }
    if (rq->instance_id.len == 0) {
        *message = "InstanceId can't be empty.";
        return KERR_INVALID_REQUEST;
    }
    if (rq->rack_id.len == 0) {
        *message = "RackId can't be empty.";
        return KERR_INVALID_REQUEST;
    }
    if (rq->epoch == CCG_STATIC_LEAVE_EPOCH && rq->instance_id.len < 0) {
        *message = "InstanceId can't be null.";
        return KERR_INVALID_REQUEST;
    }
    if (rq->epoch == CCG_JOIN_EPOCH) {
        if (rq->rebalance_timeout_ms == -1) {
            *message = "RebalanceTimeoutMs must be provided in first request.";
            return KERR_INVALID_REQUEST;
        }
        if (!rq->has_owned || rq->nowned > 0) {
            *message = "TopicPartitions must be empty when (re-)joining.";
            return KERR_INVALID_REQUEST;
        }
        if (!rq->has_topics && rq->regex.len < 0) {
            *message = "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.";
            return KERR_INVALID_REQUEST;
        }
    }
    if (rq->regex.len >= 0) {
        char *rx = ccg_strdup(rq->regex);
        regex_t re;
        bool ok = rq->regex.len > 0 && compile_regex(rx, &re);
        if (ok)
            regfree(&re);
        free(rx);
        if (!ok) {
            *message = "SubscribedTopicRegex is not a valid regular expression.";
            return KERR_INVALID_REGULAR_EXPRESSION_CODE;
        }
    }
    if (rq->assignor.len >= 0) {
        char *name = ccg_strdup(rq->assignor);
        void *st;
        bool ok = e->assignor && e->assignor(e->ctx, name, &st) != NULL;
        free(name);
        if (!ok) {
            *message = "ServerAssignor is not supported by this broker.";
            return KERR_UNSUPPORTED_ASSIGNOR;
        }
    } else if (rq->epoch == CCG_JOIN_EPOCH) {
        /* no default assignor: a build or plugins= without any */
        void *st;
        if (!e->assignor || !e->assignor(e->ctx, NULL, &st)) {
            *message = "No server-side assignor is loaded on this broker.";
            return KERR_UNSUPPORTED_ASSIGNOR;
        }
    }
    return 0;
}

/* A base64url random id, as Kafka's Uuid.randomUuid().toString(). */
static char *new_member_id(void)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    uint8_t b[16];
    if (uuid_random(b) < 0)
        for (int i = 0; i < 16; i++)
            b[i] = (uint8_t)rand();
    char *s = xmalloc(23);
    int k = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (int i = 0; i < 16; i++) {
        acc = (acc << 8) | b[i];
        bits += 8;
        while (bits >= 6) {
            s[k++] = tbl[(acc >> (bits - 6)) & 63];
            bits -= 6;
        }
    }
    if (bits > 0)
        s[k++] = tbl[(acc << (6 - bits)) & 63];
    s[k] = 0;
    return s;
}

static void owned_set(const struct ccg_hb_req *rq, struct ctp_set *s)
{
    for (int32_t i = 0; i < rq->nowned; i++)
        for (int32_t k = 0; k < rq->owned_nparts[i]; k++)
            ctp_set_add(s, &rq->owned_topics[i], rq->owned_parts[i][k]);
}

static bool is_subset(const struct ctp_set *a, const struct ctp_set *b)
{
    for (int32_t i = 0; i < a->n; i++)
        if (!ctp_set_has(b, &a->v[i].topic, a->v[i].part))
            return false;
    return true;
}

static void respond(struct ccg_hb_resp *out, struct arena *a, const struct ccg_member *m, int32_t epoch,
                    int32_t interval, bool with_assignment)
{
    out->member_id = kstr_arena(a, m->id);
    out->epoch = epoch;
    out->heartbeat_interval_ms = interval;
    out->has_assignment = with_assignment;
    if (with_assignment) {
        out->assignment = arena_alloc(a, (size_t)(m->assigned.n + 1) * sizeof *out->assignment);
        if (m->assigned.n > 0)
            memcpy(out->assignment, m->assigned.v, (size_t)m->assigned.n * sizeof *out->assignment);
        out->nassignment = m->assigned.n;
    }
}

static void fail(struct ccg_hb_resp *out, int16_t err, const char *msg)
{
    out->error = err;
    out->message = msg;
}

void ccg_heartbeat(struct ccg_env *e, struct cgroup *g, const struct ccg_hb_req *rq, struct arena *a,
                   struct ccg_hb_resp *out)
{
    struct ccgroup *cc = g->cc;
    memset(out, 0, sizeof *out);
    out->member_id = rq->member_id;
    out->epoch = rq->epoch;

    /* leaving */
    if (rq->epoch == CCG_LEAVE_EPOCH || rq->epoch == CCG_STATIC_LEAVE_EPOCH) {
        struct ccg_member *m = ccg_member_find(cc, rq->member_id);
        if (!m && rq->instance_id.len >= 0)
            m = static_member(cc, rq->instance_id);
        if (!m) {
            fail(out, KERR_UNKNOWN_MEMBER_ID, NULL);
            return;
        }
        if (rq->instance_id.len >= 0 && !eqk(m->instance_id, rq->instance_id)) {
            fail(out, KERR_FENCED_INSTANCE_ID, NULL);
            return;
        }
        out->member_id = kstr_arena(a, m->id);
        out->epoch = rq->epoch;
        if (rq->epoch == CCG_STATIC_LEAVE_EPOCH && m->instance_id) {
            /* a static member leaves for a while: it keeps its
             * partitions until its session ends or it comes back */
            if (m->epoch != CCG_STATIC_LEAVE_EPOCH)
                m->prev_epoch = m->epoch;
            m->epoch = CCG_STATIC_LEAVE_EPOCH;
            m->session_deadline = e->now + e->session_timeout_ms;
            e->timers_changed = true;
            emit(e, g, CCG_REC_CURRENT, m, m->id, false);
            return;
        }
        remove_member(e, g, m, "left the group");
        return;
    }

    bool bump = false, full = false;
    struct ccg_member *m;
    struct ctp_set prev_assigned = {0};
    if (rq->epoch == CCG_JOIN_EPOCH) {
        full = true;
        struct ccg_member *old = rq->instance_id.len >= 0 ? static_member(cc, rq->instance_id) : NULL;
        m = rq->member_id.len > 0 ? ccg_member_find(cc, rq->member_id) : NULL;
        if (old && old != m && old->epoch != CCG_STATIC_LEAVE_EPOCH) {
            fail(out, KERR_UNRELEASED_INSTANCE_ID,
                 "Static member with this instance id is already in the group; it must leave first.");
            return;
        }
        if (!m) {
            if (!old && cc->nmembers >= e->max_size) {
                fail(out, KERR_GROUP_MAX_SIZE_REACHED, NULL);
                return;
            }
            char *id = rq->member_id.len > 0 ? ccg_strdup(rq->member_id) : new_member_id();
            m = member_add(cc, KSTR(id));
            free(id);
            if (old) {
                /* the static member comes back under a new member id:
                 * it takes over the old one's assignment */
                m->instance_id = xstrdup(old->instance_id);
                m->rack_id = old->rack_id ? xstrdup(old->rack_id) : NULL;
                m->assignor = old->assignor ? xstrdup(old->assignor) : NULL;
                m->rebalance_timeout_ms = old->rebalance_timeout_ms;
                if (old->regex)
                    ccg_member_set_regex(m, old->regex);
                m->topics = xcalloc((size_t)old->ntopics + 1, sizeof *m->topics);
                for (int32_t k = 0; k < old->ntopics; k++)
                    m->topics[k] = xstrdup(old->topics[k]);
                m->ntopics = old->ntopics;
                m->epoch = old->prev_epoch;
                m->prev_epoch = old->prev_epoch;
                m->state = old->state;
                ctp_set_copy(&m->assigned, &old->assigned);
                ctp_set_copy(&m->revoking, &old->revoking);
                ctp_set_copy(&m->target, &old->target);
                char *oid = xstrdup(old->id);
                emit(e, g, CCG_REC_CURRENT, NULL, oid, true);
                emit(e, g, CCG_REC_TARGET_MEMBER, NULL, oid, true);
                emit(e, g, CCG_REC_MEMBER, NULL, oid, true);
                ccg_member_remove(cc, KSTR(oid));
                free(oid);
                emit(e, g, CCG_REC_TARGET_MEMBER, m, m->id, false);
                emit(e, g, CCG_REC_CURRENT, m, m->id, false);
            } else {
                bump = true;
            }
            slog_info("group coordinator: consumer group %s: member %s joined", g->id, m->id);
        } else if (m->epoch == CCG_STATIC_LEAVE_EPOCH) {
            m->epoch = m->prev_epoch;
        }
    } else {
        m = ccg_member_find(cc, rq->member_id);
        if (!m) {
            fail(out, KERR_UNKNOWN_MEMBER_ID, NULL);
            return;
        }
        if (rq->instance_id.len >= 0 && !eqk(m->instance_id, rq->instance_id)) {
            fail(out, KERR_FENCED_INSTANCE_ID, NULL);
            return;
        }
        /* Kafka's throwIfMemberEpochIsInvalid */
        if (rq->epoch > m->epoch) {
            fail(out, KERR_FENCED_MEMBER_EPOCH, "The consumer group member has a greater member epoch than "
                                                "the one known by the coordinator.");
            return;
        }
        if (rq->epoch < m->epoch) {
            bool ok = false;
            if (rq->epoch == m->prev_epoch && rq->has_owned) {
                struct ctp_set own = {0};
                owned_set(rq, &own);
                ok = is_subset(&own, &m->assigned);
                ctp_set_free(&own);
            }
            if (!ok) {
                fail(out, KERR_FENCED_MEMBER_EPOCH, "The consumer group member has a smaller member epoch "
                                                    "than the one known by the coordinator.");
                return;
            }
        }
        full = rq->rebalance_timeout_ms != -1 && rq->has_topics && rq->has_owned;
    }
    ctp_set_copy(&prev_assigned, &m->assigned);

    /* the member's metadata */
    bool meta_changed = false, sub_changed = false;
    if (rq->has_topics && !topics_equal(m, rq->ntopics, rq->topics)) {
        slog_debug("group coordinator: consumer group %s: member %s subscribes to %d topic(s) (was %d)%s%.*s", g->id,
                   m->id, rq->ntopics, m->ntopics, rq->ntopics > 0 ? ", first " : "",
                   rq->ntopics > 0 ? (int)rq->topics[0].len : 0, rq->ntopics > 0 ? rq->topics[0].p : "");
        ccg_member_set_topics(m, rq->ntopics, rq->topics);
        sub_changed = true;
    }
    if (rq->regex.len >= 0 && !eqk(m->regex, rq->regex)) {
        char *rx = ccg_strdup(rq->regex);
        ccg_member_set_regex(m, rx); /* validated */
        free(rx);
        sub_changed = true;
    }
    set_str(&m->instance_id, rq->instance_id.len >= 0 ? rq->instance_id : KSTR_NULL, &meta_changed);
    if (rq->rack_id.len >= 0)
        set_str(&m->rack_id, rq->rack_id, &meta_changed);
    if (rq->assignor.len >= 0)
        set_str(&m->assignor, rq->assignor, &meta_changed);
    if (rq->rebalance_timeout_ms != -1 && rq->rebalance_timeout_ms != m->rebalance_timeout_ms) {
        m->rebalance_timeout_ms = rq->rebalance_timeout_ms;
        meta_changed = true;
    }
    set_str(&m->client_id, rq->client_id.len >= 0 ? rq->client_id : KSTR_LIT(""), &meta_changed);
    set_str(&m->client_host, rq->client_host.len >= 0 ? rq->client_host : KSTR_LIT(""), &meta_changed);
    m->has_metadata = true;
    if (sub_changed || meta_changed || bump)
        emit(e, g, CCG_REC_MEMBER, m, m->id, false);
    const char *why = bump ? "a member joined" : sub_changed ? "a subscription changed" : NULL;
    if (sub_changed)
        bump = true;
    if (refresh_metadata(e, cc)) {
        emit(e, g, CCG_REC_PARTITION_META, NULL, NULL, false);
        if (!bump)
            why = "the subscribed topics' metadata changed";
        bump = true;
    }
    if (bump)
        bump_epoch(e, g, why);
    if (cc->epoch > cc->assign_epoch)
        compute_target(e, g);

    /* reconcile */
    struct ctp_set own = {0};
    if (rq->has_owned)
        owned_set(rq, &own);
    reconcile(e, g, m, rq->has_owned ? &own : NULL);
    ctp_set_free(&own);

    m->session_deadline = e->now + e->session_timeout_ms;
    e->timers_changed = true;
    bool changed = !ctp_set_eq(&prev_assigned, &m->assigned);
    ctp_set_free(&prev_assigned);
    respond(out, a, m, m->epoch, e->heartbeat_interval_ms, full || changed);
}

/* ------------------------------------------------------------------ */
/* offsets                                                             */

int16_t ccg_validate_commit(const struct ccgroup *cc, kstr_t member_id, int32_t epoch, int16_t version)
{
    /* the admin client, or a consumer without group management: only
     * while the group has no members */
    if (epoch < 0 && cc->nmembers == 0)
        return 0;
    const struct ccg_member *m = ccg_member_find(cc, member_id);
    if (!m)
        return KERR_UNKNOWN_MEMBER_ID;
    if (version < 9)
        return KERR_UNSUPPORTED_VERSION;
    if (epoch != m->epoch)
        return KERR_STALE_MEMBER_EPOCH;
    return 0;
}

int16_t ccg_validate_fetch(const struct ccgroup *cc, kstr_t member_id, int32_t epoch)
{
    if (epoch < 0 && member_id.len < 0)
        return 0;
    if (epoch < 0 && member_id.len <= 0)
        return 0;
    const struct ccg_member *m = ccg_member_find(cc, member_id);
    if (!m)
        return KERR_UNKNOWN_MEMBER_ID;
    if (epoch != m->epoch)
        return KERR_STALE_MEMBER_EPOCH;
    return 0;
}

/* ------------------------------------------------------------------ */
/* loading                                                             */

void ccg_loaded(struct ccg_env *e, struct ccgroup *cc)
{
    for (int32_t i = 0; i < cc->nmembers;) {
        struct ccg_member *m = cc->members[i];
        if (!m->has_metadata) {
            ccg_member_remove(cc, KSTR(m->id));
            continue;
        }
        if (m->regex && !m->re) {
            char *rx = xstrdup(m->regex);
            ccg_member_set_regex(m, rx);
            free(rx);
        }
        m->session_deadline = e->now + e->session_timeout_ms;
        m->revoke_deadline = CG_NO_DEADLINE;
        if (m->state == CCG_UNREVOKED_PARTITIONS)
            m->revoke_deadline =
                e->now + (m->rebalance_timeout_ms > 0 ? m->rebalance_timeout_ms : e->session_timeout_ms);
        i++;
    }
    (void)eqs_null;
}
