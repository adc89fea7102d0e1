/* The group coordinator's classic group state machine (coord/group.c)
 * driven directly with a fake clock and a fake store: Kafka's answers
 * for JoinGroup (MEMBER_ID_REQUIRED, the initial rebalance delay,
 * rejoins), SyncGroup (the leader's bytes passed through exactly),
 * Heartbeat, LeaveGroup, session and rebalance timeouts, static
 * membership, protocol selection, offset commit checks; and the
 * __consumer_offsets records (coord/records.c): Java's hash and the
 * key/value schemas round-tripping through a reload. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "coord/group.h"
#include "coord/records.h"
#include "proto/kerr.h"

/* ------------------------------------------------------------------ */
/* fixture                                                             */

struct fx {
    struct cgroup *g;
    struct cg_env e;
    int stores;
    int store_err;
    int64_t next_offset;
    int last_store_members; /* members written by the last store */
    int notified;
    struct buf last_value;  /* the last GroupMetadataValue written */
};

static struct fx *FX;

static int fake_store(struct cg_env *e, struct cgroup *g, const kbytes_t *assign)
{
    struct fx *f = e->ctx;
    f->stores++;
    if (f->store_err)
        return f->store_err;
    f->last_store_members = g->state == CG_EMPTY ? 0 : g->nmembers;
    buf_reset(&f->last_value);
    crec_group_value(&f->last_value, g, assign);
    e->ack_offset = f->next_offset++;
    g->has_record = true;
    return 0;
}

static void on_notify(void *arg, const struct cg_waiter *w)
{
    (void)w;
    ((struct fx *)arg)->notified++;
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    f->g = cg_new("g1", 2, 1000);
    f->e.now = 1000000;
    f->e.wall_now = 1700000000000;
    f->e.initial_rebalance_delay_ms = 3000;
    f->e.new_member_join_timeout_ms = CG_NEW_MEMBER_JOIN_TIMEOUT_MS;
    f->e.max_size = 100;
    f->e.store = fake_store;
    f->e.ctx = f;
    f->e.ack_offset = -1;
    buf_init(&f->last_value);
    FX = f;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    cg_free(f->g, KERR_NOT_COORDINATOR);
    buf_free(&f->last_value);
    free(f);
    return 0;
}

struct w {
    struct cg_waiter w;
};

static struct cg_waiter *waiter(int kind)
{
    struct cg_waiter *w = calloc(1, sizeof *w);
    cg_waiter_init(w, kind, on_notify, FX);
    return w;
}

static void wfree(struct cg_waiter *w)
{
    if (w->member)
        cg_waiter_detach(w);
    cg_waiter_release(w);
    free(w);
}

static bool done(struct cg_waiter *w)
{
    return atomic_load(&w->done);
}

static char *kcopy(kstr_t s)
{
    return s.len < 0 ? NULL : strndup(s.p, (size_t)s.len);
}

/* A JoinGroup with one or two protocols ("range" first unless given). */
struct join_opts {
    const char *member_id;
    const char *instance_id;
    const char *ptype;
    int16_t version;
    const char *p1, *p2;
    const char *meta1, *meta2;
    int32_t session_ms, rebalance_ms;
};

static struct cg_waiter *join_opts(struct fx *f, struct join_opts o)
{
    struct cg_waiter *w = waiter(CG_WAIT_JOIN);
    kstr_t names[2];
    kbytes_t meta[2];
    int n = 0;
    names[n] = KSTR(o.p1 ? o.p1 : "range");
    const char *m1 = o.meta1 ? o.meta1 : "sub-1";
    meta[n++] = (kbytes_t){(const uint8_t *)m1, (int32_t)strlen(m1)};
    if (o.p2) {
        names[n] = KSTR(o.p2);
        const char *m2 = o.meta2 ? o.meta2 : "sub-2";
        meta[n++] = (kbytes_t){(const uint8_t *)m2, (int32_t)strlen(m2)};
    }
    struct cg_join_req rq = {
        .member_id = KSTR(o.member_id ? o.member_id : ""),
        .instance_id = o.instance_id ? KSTR(o.instance_id) : KSTR_NULL,
        .protocol_type = KSTR(o.ptype ? o.ptype : "consumer"),
        .client_id = KSTR_LIT("client"),
        .client_host = KSTR_LIT("/127.0.0.1"),
        .session_timeout_ms = o.session_ms ? o.session_ms : 10000,
        .rebalance_timeout_ms = o.rebalance_ms ? o.rebalance_ms : 60000,
        .version = o.version ? o.version : 7,
        .nprotocols = n,
        .protocol_names = names,
        .protocol_metadata = meta,
    };
    cg_join(&f->e, f->g, &rq, w);
    return w;
}

static struct cg_waiter *join(struct fx *f, const char *member_id)
{
    return join_opts(f, (struct join_opts){.member_id = member_id});
}

/* The MEMBER_ID_REQUIRED round trip: returns the new member's id. */
static char *new_member(struct fx *f)
{
    struct cg_waiter *w = join(f, NULL);
    assert_true(done(w));
    assert_int_equal(w->error, KERR_MEMBER_ID_REQUIRED);
    char *id = kcopy(w->member_id);
    wfree(w);
    return id;
}

static void advance(struct fx *f, int64_t ms)
{
    f->e.now += ms;
    f->e.wall_now += ms;
    cg_tick(&f->e, f->g);
}

static struct cg_waiter *sync_with(struct fx *f, const char *member_id, int32_t gen, int n, const char **ids,
                                   const char **assign)
{
    struct cg_waiter *w = waiter(CG_WAIT_SYNC);
    kstr_t k[8];
    kbytes_t b[8];
    for (int i = 0; i < n; i++) {
        k[i] = KSTR(ids[i]);
        b[i] = (kbytes_t){(const uint8_t *)assign[i], (int32_t)strlen(assign[i])};
    }
    struct cg_sync_req rq = {
        .member_id = KSTR(member_id),
        .instance_id = KSTR_NULL,
        .protocol_type = KSTR_NULL,
        .protocol_name = KSTR_NULL,
        .generation = gen,
        .nassignments = n,
        .assign_members = k,
        .assignments = b,
    };
    cg_sync(&f->e, f->g, &rq, w);
    return w;
}

static void assert_kstr(kstr_t s, const char *want)
{
    assert_non_null(want);
    assert_int_equal(s.len, (int32_t)strlen(want));
    assert_memory_equal(s.p, want, strlen(want));
}

static void assert_bytes(kbytes_t b, const char *want)
{
    assert_int_equal(b.len, (int32_t)strlen(want));
    if (b.len)
        assert_memory_equal(b.p, want, strlen(want));
}

/* One member joined and stable at generation 1; returns its id. */
static char *stable_one(struct fx *f)
{
    char *id = new_member(f);
    struct cg_waiter *w = join(f, id);
    assert_false(done(w));
    advance(f, 3000);
    assert_true(done(w));
    assert_int_equal(w->error, 0);
    wfree(w);
    const char *ids[] = {id};
    const char *as[] = {"A1"};
    w = sync_with(f, id, 1, 1, ids, as);
    assert_true(done(w));
    assert_int_equal(w->error, 0);
    wfree(w);
    assert_int_equal(f->g->state, CG_STABLE);
    return id;
}

/* ------------------------------------------------------------------ */
/* JoinGroup                                                           */

static void test_member_id_required(void **state)
{
    struct fx *f = *state;
    struct cg_waiter *w = join(f, NULL);
    assert_true(done(w));
    assert_int_equal(w->error, KERR_MEMBER_ID_REQUIRED);
    /* Kafka's ClassicGroup.generateMemberId: client id, '-', a UUID */
    assert_true(w->member_id.len == (int32_t)strlen("client-") + 36);
    assert_memory_equal(w->member_id.p, "client-", 7);
    assert_int_equal(f->g->npending, 1);
    assert_int_equal(f->g->state, CG_EMPTY);
    char *id = kcopy(w->member_id);
    wfree(w);

    w = join(f, id);
    assert_false(done(w)); /* the initial rebalance delay */
    assert_int_equal(f->g->state, CG_PREPARING_REBALANCE);
    assert_int_equal(f->g->npending, 0);
    advance(f, 2999);
    assert_false(done(w));
    advance(f, 1);
    assert_true(done(w));
    assert_int_equal(w->error, 0);
    assert_int_equal(w->generation, 1);
    assert_kstr(w->member_id, id);
    assert_kstr(w->leader, id);
    assert_kstr(w->protocol_name, "range");
    assert_kstr(w->protocol_type, "consumer");
    assert_int_equal(w->nmembers, 1); /* the leader gets the members */
    assert_kstr(w->members[0].member_id, id);
    assert_bytes(w->members[0].metadata, "sub-1");
    assert_int_equal(w->ack_offset, -1);
    assert_true(f->notified > 0);
    assert_int_equal(f->g->state, CG_COMPLETING_REBALANCE);
    wfree(w);
    free(id);
}

static void test_pending_member_expires(void **state)
{
    struct fx *f = *state;
    char *id = new_member(f);
    assert_int_equal(f->g->npending, 1);
    advance(f, 10000); /* its session timeout */
    assert_int_equal(f->g->npending, 0);
    /* joining with the forgotten id now: the group has no such member */
    struct cg_waiter *w = join(f, id);
    assert_true(done(w));
    assert_int_equal(w->error, KERR_UNKNOWN_MEMBER_ID);
    wfree(w);
    free(id);
}

static void test_old_version_joins_directly(void **state)
{
    struct fx *f = *state;
    struct cg_waiter *w = join_opts(f, (struct join_opts){.version = 3});
    assert_false(done(w));
    assert_int_equal(f->g->nmembers, 1);
    advance(f, 3000);
    assert_true(done(w));
    assert_int_equal(w->error, 0);
    assert_int_equal(w->generation, 1);
    wfree(w);
}

static void test_initial_delay_extends(void **state)
{
    struct fx *f = *state;
    char *a = new_member(f);
    struct cg_waiter *wa = join(f, a);
    advance(f, 2000);
    char *b = new_member(f);
    struct cg_waiter *wb = join(f, b);
    /* the first delay ends; a member came meanwhile: it is extended */
    advance(f, 1000);
    assert_false(done(wa));
    assert_false(done(wb));
    advance(f, 3000);
    assert_true(done(wa));
    assert_true(done(wb));
    assert_int_equal(wa->generation, 1);
    assert_int_equal(wb->generation, 1);
    assert_kstr(wa->leader, a);
    assert_int_equal(wa->nmembers, 2);
    assert_int_equal(wb->nmembers, 0);
    wfree(wa);
    wfree(wb);
    free(a);
    free(b);
}

static void test_inconsistent_protocol(void **state)
{
    struct fx *f = *state;
    char *a = stable_one(f);
    struct cg_waiter *w = join_opts(f, (struct join_opts){.ptype = "connect", .version = 3});
    assert_true(done(w));
    assert_int_equal(w->error, KERR_INCONSISTENT_GROUP_PROTOCOL);
    wfree(w);
    w = join_opts(f, (struct join_opts){.p1 = "cooperative-sticky", .version = 3});
    assert_true(done(w));
    assert_int_equal(w->error, KERR_INCONSISTENT_GROUP_PROTOCOL);
    wfree(w);
    /* an empty protocol list never starts a group */
    cg_free(f->g, 0);
    f->g = cg_new("g2", 2, 0);
    w = join_opts(f, (struct join_opts){.ptype = "", .version = 3});
    assert_int_equal(w->error, KERR_INCONSISTENT_GROUP_PROTOCOL);
    wfree(w);
    free(a);
}

static void test_protocol_selection(void **state)
{
    struct fx *f = *state;
    f->e.initial_rebalance_delay_ms = 0;
    struct cg_waiter *wa =
        join_opts(f, (struct join_opts){.version = 3, .p1 = "range", .p2 = "roundrobin", .meta2 = "rr-a"});
    struct cg_waiter *wb = join_opts(f, (struct join_opts){.version = 3, .p1 = "roundrobin", .meta1 = "rr-b"});
    advance(f, 0);
    assert_true(done(wa));
    assert_int_equal(wa->error, 0);
    assert_kstr(wa->protocol_name, "roundrobin");
    assert_kstr(wb->protocol_name, "roundrobin");
    /* the leader sees each member's metadata for the chosen protocol */
    const struct cg_waiter *lw = wa->nmembers ? wa : wb;
    assert_int_equal(lw->nmembers, 2);
    for (int i = 0; i < 2; i++) {
        kbytes_t m = lw->members[i].metadata;
        assert_true((m.len == 4 && !memcmp(m.p, "rr-a", 4)) || (m.len == 4 && !memcmp(m.p, "rr-b", 4)));
    }
    wfree(wa);
    wfree(wb);
}

/* ------------------------------------------------------------------ */
/* SyncGroup                                                           */

static void test_sync_passes_assignment_exactly(void **state)
{
    struct fx *f = *state;
    f->e.initial_rebalance_delay_ms = 0;
    char *a = new_member(f);
    char *b = new_member(f);
    struct cg_waiter *wa = join(f, a), *wb = join(f, b);
    advance(f, 0);
    assert_true(done(wa) && done(wb));
    int32_t gen = wa->generation;
    bool a_leads = wa->nmembers == 2;
    const char *leader = a_leads ? a : b, *follower = a_leads ? b : a;
    wfree(wa);
    wfree(wb);

    /* the follower waits for the leader */
    struct cg_waiter *wf = sync_with(f, follower, gen, 0, NULL, NULL);
    assert_false(done(wf));
    const char *ids[] = {leader, follower};
    const char *as[] = {"leader-bytes", "F"};
    struct cg_waiter *wl = sync_with(f, leader, gen, 2, ids, as);
    assert_true(done(wl));
    assert_true(done(wf));
    assert_int_equal(wl->error, 0);
    assert_int_equal(wf->error, 0);
    assert_bytes(wl->assignment, "leader-bytes");
    assert_bytes(wf->assignment, "F");
    assert_kstr(wf->protocol_name, "range");
    assert_kstr(wf->protocol_type, "consumer");
    assert_int_equal(f->stores, 1);
    assert_int_equal(f->last_store_members, 2);
    assert_int_equal(wl->ack_offset, 0); /* answers wait for that record */
    assert_int_equal(wf->ack_offset, 0);
    assert_int_equal(f->g->state, CG_STABLE);
    wfree(wl);
    wfree(wf);

    /* a sync in Stable gets the current assignment at once */
    wf = sync_with(f, follower, gen, 0, NULL, NULL);
    assert_true(done(wf));
    assert_bytes(wf->assignment, "F");
    wfree(wf);
    free(a);
    free(b);
}

static void test_sync_errors(void **state)
{
    struct fx *f = *state;
    char *a = stable_one(f);
    struct cg_waiter *w = sync_with(f, a, 7, 0, NULL, NULL);
    assert_int_equal(w->error, KERR_ILLEGAL_GENERATION);
    wfree(w);
    w = sync_with(f, "nobody", 1, 0, NULL, NULL);
    assert_int_equal(w->error, KERR_UNKNOWN_MEMBER_ID);
    wfree(w);
    /* v5's protocol name must match the group's */
    w = waiter(CG_WAIT_SYNC);
    struct cg_sync_req rq = {.member_id = KSTR(a), .instance_id = KSTR_NULL, .protocol_type = KSTR_LIT("consumer"),
                             .protocol_name = KSTR_LIT("roundrobin"), .generation = 1};
    cg_sync(&f->e, f->g, &rq, w);
    assert_int_equal(w->error, KERR_INCONSISTENT_GROUP_PROTOCOL);
    wfree(w);
    /* during a rebalance */
    struct cg_waiter *wj = join(f, a); /* the leader rejoins: rebalance */
    assert_int_equal(f->g->state, CG_COMPLETING_REBALANCE); /* alone: completes at once */
    assert_true(done(wj));
    assert_int_equal(wj->generation, 2);
    wfree(wj);
    w = sync_with(f, a, 1, 0, NULL, NULL);
    assert_int_equal(w->error, KERR_ILLEGAL_GENERATION);
    wfree(w);
    free(a);
}

static void test_store_failure_on_sync(void **state)
{
    struct fx *f = *state;
    char *a = new_member(f);
    struct cg_waiter *w = join(f, a);
    advance(f, 3000);
    wfree(w);
    f->store_err = KERR_NOT_COORDINATOR;
    const char *ids[] = {a};
    const char *as[] = {"x"};
    w = sync_with(f, a, 1, 1, ids, as);
    assert_true(done(w));
    assert_int_equal(w->error, KERR_NOT_COORDINATOR);
    assert_int_equal(f->g->state, CG_PREPARING_REBALANCE);
    wfree(w);
    free(a);
}

/* ------------------------------------------------------------------ */
/* rebalances                                                          */

static void test_second_member_rebalance(void **state)
{
    struct fx *f = *state;
    char *a = stable_one(f);
    assert_int_equal(cg_heartbeat(&f->e, f->g, KSTR(a), KSTR_NULL, 1), 0);
    char *b = new_member(f);
    struct cg_waiter *wb = join(f, b);
    assert_false(done(wb));
    assert_int_equal(f->g->state, CG_PREPARING_REBALANCE);
    /* the existing member hears of it from its heartbeat */
    assert_int_equal(cg_heartbeat(&f->e, f->g, KSTR(a), KSTR_NULL, 1), KERR_REBALANCE_IN_PROGRESS);
    /* an offset commit of the old generation still passes */
    assert_int_equal(cg_validate_commit(&f->e, f->g, KSTR(a), KSTR_NULL, 1), 0);
    struct cg_waiter *wa = join(f, a);
    /* not the initial rebalance: completes as soon as all joined */
    assert_true(done(wa));
    assert_true(done(wb));
    assert_int_equal(wa->generation, 2);
    assert_int_equal(wb->generation, 2);
    assert_kstr(wa->leader, a);
    assert_int_equal(wa->nmembers, 2);
    assert_int_equal(cg_validate_commit(&f->e, f->g, KSTR(a), KSTR_NULL, 2), KERR_REBALANCE_IN_PROGRESS);
    assert_int_equal(cg_validate_commit(&f->e, f->g, KSTR(a), KSTR_NULL, 1), KERR_ILLEGAL_GENERATION);
    wfree(wa);
    wfree(wb);
    free(a);
    free(b);
}

/* A member syncing while a new member joins gets REBALANCE_IN_PROGRESS,
 * never UNKNOWN_MEMBER_ID, and keeps its id for the next generation. */
static void test_concurrent_rebalance_keeps_members(void **state)
{
    struct fx *f = *state;
    f->e.initial_rebalance_delay_ms = 0;
    char *a = new_member(f), *b = new_member(f);
    struct cg_waiter *wa = join(f, a), *wb = join(f, b);
    advance(f, 0);
    bool a_leads = wa->nmembers == 2;
    const char *leader = a_leads ? a : b, *follower = a_leads ? b : a;
    wfree(wa);
    wfree(wb);
    struct cg_waiter *wf = sync_with(f, follower, 1, 0, NULL, NULL);
    assert_false(done(wf));
    char *c = new_member(f);
    struct cg_waiter *wc = join(f, c);
    assert_true(done(wf));
    assert_int_equal(wf->error, KERR_REBALANCE_IN_PROGRESS);
    wfree(wf);
    /* the leader's late sync of the old generation */
    const char *ids[] = {leader};
    const char *as[] = {"x"};
    struct cg_waiter *wl = sync_with(f, leader, 1, 1, ids, as);
    assert_int_equal(wl->error, KERR_REBALANCE_IN_PROGRESS);
    wfree(wl);
    /* everyone rejoins with the same ids */
    struct cg_waiter *j1 = join(f, leader);
    assert_false(done(j1));
    struct cg_waiter *j2 = join(f, follower);
    assert_true(done(j1) && done(j2) && done(wc));
    assert_int_equal(j1->error, 0);
    assert_int_equal(j2->error, 0);
    assert_int_equal(wc->error, 0);
    assert_int_equal(j1->generation, 2);
    assert_int_equal(f->g->nmembers, 3);
    wfree(j1);
    wfree(j2);
    wfree(wc);
    free(a);
    free(b);
    free(c);
}

static void test_rejoin_same_metadata_no_rebalance(void **state)
{
    struct fx *f = *state;
    f->e.initial_rebalance_delay_ms = 0;
    char *a = new_member(f), *b = new_member(f);
    struct cg_waiter *wa = join(f, a), *wb = join(f, b);
    advance(f, 0);
    bool a_leads = wa->nmembers == 2;
    const char *leader = a_leads ? a : b, *follower = a_leads ? b : a;
    wfree(wa);
    wfree(wb);
    const char *ids[] = {leader, follower};
    const char *as[] = {"L", "F"};
    wfree(sync_with(f, leader, 1, 2, ids, as));
    wfree(sync_with(f, follower, 1, 0, NULL, NULL));
    assert_int_equal(f->g->state, CG_STABLE);
    /* a follower rejoining with the same metadata: current generation */
    struct cg_waiter *w = join(f, follower);
    assert_true(done(w));
    assert_int_equal(w->error, 0);
    assert_int_equal(w->generation, 1);
    assert_int_equal(f->g->state, CG_STABLE);
    wfree(w);
    /* with other metadata: a rebalance */
    w = join_opts(f, (struct join_opts){.member_id = follower, .meta1 = "changed"});
    assert_false(done(w));
    assert_int_equal(f->g->state, CG_PREPARING_REBALANCE);
    wfree(w);
    free(a);
    free(b);
}

static void test_session_timeout_removes_member(void **state)
{
    struct fx *f = *state;
    f->e.initial_rebalance_delay_ms = 0;
    char *a = new_member(f), *b = new_member(f);
    struct cg_waiter *wa = join(f, a), *wb = join(f, b);
    advance(f, 0);
    bool a_leads = wa->nmembers == 2;
    const char *leader = a_leads ? a : b, *follower = a_leads ? b : a;
    wfree(wa);
    wfree(wb);
    const char *ids[] = {leader, follower};
    const char *as[] = {"L", "F"};
    wfree(sync_with(f, leader, 1, 2, ids, as));
    wfree(sync_with(f, follower, 1, 0, NULL, NULL));
    advance(f, 5000);
    assert_int_equal(cg_heartbeat(&f->e, f->g, KSTR(leader), KSTR_NULL, 1), 0);
    advance(f, 4999);
    assert_non_null(cg_member_find(f->g, KSTR(follower)));
    advance(f, 1);
    /* the follower's session (10 s) ran out: gone, and a rebalance began */
    assert_null(cg_member_find(f->g, KSTR(follower)));
    assert_int_equal(f->g->state, CG_PREPARING_REBALANCE);
    assert_int_equal(cg_heartbeat(&f->e, f->g, KSTR(follower), KSTR_NULL, 1), KERR_UNKNOWN_MEMBER_ID);
    struct cg_waiter *w = join(f, leader);
    assert_true(done(w));
    assert_int_equal(w->generation, 2);
    assert_int_equal(w->nmembers, 1);
    wfree(w);
    free(a);
    free(b);
}

static void test_rebalance_timeout_drops_laggard(void **state)
{
    struct fx *f = *state;
    f->e.initial_rebalance_delay_ms = 0;
    char *a = new_member(f), *b = new_member(f);
    struct cg_waiter *wa = join_opts(f, (struct join_opts){.member_id = a, .rebalance_ms = 20000});
    struct cg_waiter *wb = join_opts(f, (struct join_opts){.member_id = b, .rebalance_ms = 20000});
    advance(f, 0);
    bool a_leads = wa->nmembers == 2;
    const char *leader = a_leads ? a : b, *follower = a_leads ? b : a;
    wfree(wa);
    wfree(wb);
    const char *ids[] = {leader, follower};
    const char *as[] = {"L", "F"};
    wfree(sync_with(f, leader, 1, 2, ids, as));
    wfree(sync_with(f, follower, 1, 0, NULL, NULL));
    /* the leader rejoins; the follower keeps heartbeating but never rejoins */
    struct cg_waiter *w = join_opts(f, (struct join_opts){.member_id = leader, .rebalance_ms = 20000});
    assert_false(done(w));
    for (int i = 0; i < 3; i++) {
        advance(f, 6000);
        (void)cg_heartbeat(&f->e, f->g, KSTR(follower), KSTR_NULL, 1);
    }
    advance(f, 2000);
    assert_true(done(w));
    assert_int_equal(w->error, 0);
    assert_int_equal(w->generation, 2);
    assert_int_equal(w->nmembers, 1);
    assert_null(cg_member_find(f->g, KSTR(follower)));
    wfree(w);
    free(a);
    free(b);
}

static void test_pending_sync_expires(void **state)
{
    struct fx *f = *state;
    f->e.initial_rebalance_delay_ms = 0;
    char *a = new_member(f), *b = new_member(f);
    struct cg_waiter *wa = join_opts(f, (struct join_opts){.member_id = a, .rebalance_ms = 15000});
    struct cg_waiter *wb = join_opts(f, (struct join_opts){.member_id = b, .rebalance_ms = 15000});
    advance(f, 0);
    bool a_leads = wa->nmembers == 2;
    const char *leader = a_leads ? a : b, *follower = a_leads ? b : a;
    wfree(wa);
    wfree(wb);
    const char *ids[] = {leader, follower};
    const char *as[] = {"L", "F"};
    wfree(sync_with(f, leader, 1, 2, ids, as));
    assert_int_equal(f->g->state, CG_STABLE);
    /* the follower heartbeats but never syncs */
    for (int i = 0; i < 2; i++) {
        advance(f, 5000);
        assert_int_equal(cg_heartbeat(&f->e, f->g, KSTR(leader), KSTR_NULL, 1), 0);
        assert_int_equal(cg_heartbeat(&f->e, f->g, KSTR(follower), KSTR_NULL, 1), 0);
    }
    advance(f, 5000);
    assert_null(cg_member_find(f->g, KSTR(follower)));
    assert_int_equal(f->g->state, CG_PREPARING_REBALANCE);
    free(a);
    free(b);
}

static void test_leave(void **state)
{
    struct fx *f = *state;
    char *a = stable_one(f);
    int stores = f->stores;
    int16_t errs[2];
    kstr_t ids[2] = {KSTR_LIT("nobody"), KSTR(a)};
    kstr_t inst[2] = {KSTR_NULL, KSTR_NULL};
    assert_int_equal(cg_leave(&f->e, f->g, 2, ids, inst, errs), 0);
    assert_int_equal(errs[0], KERR_UNKNOWN_MEMBER_ID);
    assert_int_equal(errs[1], 0);
    /* the last member left: Empty, next generation, written down */
    assert_int_equal(f->g->state, CG_EMPTY);
    assert_int_equal(f->g->generation, 2);
    assert_int_equal(f->stores, stores + 1);
    assert_int_equal(f->last_store_members, 0);
    /* offsets may be committed by anyone now (generation -1) */
    assert_int_equal(cg_validate_commit(&f->e, f->g, KSTR_LIT(""), KSTR_NULL, -1), 0);
    assert_int_equal(cg_validate_commit(&f->e, f->g, KSTR(a), KSTR_NULL, 1), KERR_UNKNOWN_MEMBER_ID);
    free(a);
}

static void test_commit_checks(void **state)
{
    struct fx *f = *state;
    assert_int_equal(cg_validate_commit(&f->e, f->g, KSTR_LIT(""), KSTR_NULL, -1), 0);
    char *a = stable_one(f);
    assert_int_equal(cg_validate_commit(&f->e, f->g, KSTR(a), KSTR_NULL, 1), 0);
    assert_int_equal(cg_validate_commit(&f->e, f->g, KSTR(a), KSTR_NULL, 2), KERR_ILLEGAL_GENERATION);
    assert_int_equal(cg_validate_commit(&f->e, f->g, KSTR_LIT("x"), KSTR_NULL, 1), KERR_UNKNOWN_MEMBER_ID);
    /* a non-empty group refuses commits without a member */
    assert_int_equal(cg_validate_commit(&f->e, f->g, KSTR_LIT(""), KSTR_NULL, -1), KERR_UNKNOWN_MEMBER_ID);
    free(a);
}

/* ------------------------------------------------------------------ */
/* static membership                                                   */

static void test_static_rejoin_without_rebalance(void **state)
{
    struct fx *f = *state;
    f->e.initial_rebalance_delay_ms = 0;
    /* static members skip MEMBER_ID_REQUIRED */
    struct cg_waiter *w = join_opts(f, (struct join_opts){.instance_id = "inst-1", .version = 7});
    advance(f, 0);
    assert_true(done(w));
    assert_int_equal(w->error, 0);
    char *old = kcopy(w->member_id);
    assert_memory_equal(old, "inst-1-", 7);
    wfree(w);
    const char *ids[] = {old};
    const char *as[] = {"P0"};
    wfree(sync_with(f, old, 1, 1, ids, as));
    assert_int_equal(f->g->state, CG_STABLE);
    int stores = f->stores;

    /* the same instance restarts: unknown member id, same protocols */
    w = join_opts(f, (struct join_opts){.instance_id = "inst-1", .version = 7});
    assert_true(done(w));
    assert_int_equal(w->error, 0);
    assert_int_equal(w->generation, 1); /* no rebalance */
    assert_int_equal(f->g->state, CG_STABLE);
    char *nid = kcopy(w->member_id);
    assert_string_not_equal(nid, old);
    /* Kafka answers with the leader as it was: the old id, so the
     * client syncs as a follower and gets its assignment back */
    assert_kstr(w->leader, old);
    assert_int_equal(f->stores, stores + 1);
    wfree(w);
    struct cg_waiter *s = waiter(CG_WAIT_SYNC);
    struct cg_sync_req rq = {.member_id = KSTR(nid), .instance_id = KSTR_LIT("inst-1"), .protocol_type = KSTR_NULL,
                             .protocol_name = KSTR_NULL, .generation = 1};
    cg_sync(&f->e, f->g, &rq, s);
    assert_true(done(s));
    assert_int_equal(s->error, 0);
    assert_bytes(s->assignment, "P0");
    wfree(s);
    /* the old id is fenced */
    assert_int_equal(cg_heartbeat(&f->e, f->g, KSTR(old), KSTR_LIT("inst-1"), 1), KERR_FENCED_INSTANCE_ID);
    assert_int_equal(cg_heartbeat(&f->e, f->g, KSTR(nid), KSTR_LIT("inst-1"), 1), 0);
    free(old);
    free(nid);
}

static void test_static_member_outlives_rebalance_timeout(void **state)
{
    struct fx *f = *state;
    f->e.initial_rebalance_delay_ms = 0;
    struct cg_waiter *w1 = join_opts(f, (struct join_opts){.instance_id = "s1", .rebalance_ms = 10000});
    struct cg_waiter *w2 = join_opts(f, (struct join_opts){.instance_id = "s2", .rebalance_ms = 10000});
    advance(f, 0);
    char *m1 = kcopy(w1->member_id), *m2 = kcopy(w2->member_id);
    bool one_leads = w1->nmembers == 2;
    wfree(w1);
    wfree(w2);
    const char *ids[] = {m1, m2};
    const char *as[] = {"1", "2"};
    wfree(sync_with(f, one_leads ? m1 : m2, 1, 2, ids, as));
    /* one static member rejoins and the other does not in time: it
     * stays (static), unlike a dynamic member */
    struct cg_waiter *w = join_opts(f, (struct join_opts){.member_id = one_leads ? m1 : m2, .instance_id =
                                                                                            one_leads ? "s1" : "s2",
                                                          .rebalance_ms = 10000});
    advance(f, 5000);
    (void)cg_heartbeat(&f->e, f->g, KSTR(one_leads ? m2 : m1), KSTR(one_leads ? "s2" : "s1"), 1);
    advance(f, 5000);
    assert_true(done(w));
    assert_int_equal(w->error, 0);
    assert_int_equal(w->generation, 2);
    assert_int_equal(f->g->nmembers, 2);
    wfree(w);
    free(m1);
    free(m2);
}

static void test_fenced_static_member(void **state)
{
    struct fx *f = *state;
    f->e.initial_rebalance_delay_ms = 0;
    struct cg_waiter *w = join_opts(f, (struct join_opts){.instance_id = "i"});
    advance(f, 0);
    char *id = kcopy(w->member_id);
    wfree(w);
    /* a JoinGroup with a known instance id but another member id */
    w = join_opts(f, (struct join_opts){.member_id = "someone-else", .instance_id = "i"});
    assert_true(done(w));
    assert_int_equal(w->error, KERR_FENCED_INSTANCE_ID);
    wfree(w);
    free(id);
}

/* ------------------------------------------------------------------ */
/* waiters whose request went away                                     */

static void test_detached_waiter(void **state)
{
    struct fx *f = *state;
    char *a = new_member(f);
    struct cg_waiter *w = join(f, a);
    assert_false(done(w));
    assert_true(cg_waiter_detach(w));
    assert_false(cg_waiter_detach(w));
    wfree(w);
    /* the member still takes part: the join completes without it */
    advance(f, 3000);
    assert_int_equal(f->g->state, CG_COMPLETING_REBALANCE);
    assert_int_equal(f->g->nmembers, 1);
    assert_int_equal(f->g->num_awaiting_join, 0);
    free(a);
}

static void test_dead_group_answers_waiters(void **state)
{
    struct fx *f = *state;
    char *a = new_member(f);
    struct cg_waiter *w = join(f, a);
    cg_make_dead(f->g, KERR_NOT_COORDINATOR);
    assert_true(done(w));
    assert_int_equal(w->error, KERR_NOT_COORDINATOR);
    wfree(w);
    free(a);
}

static void test_max_size(void **state)
{
    struct fx *f = *state;
    f->e.max_size = 1;
    char *a = stable_one(f);
    struct cg_waiter *w = join_opts(f, (struct join_opts){.version = 3});
    assert_true(done(w));
    assert_int_equal(w->error, KERR_GROUP_MAX_SIZE_REACHED);
    wfree(w);
    free(a);
}

/* ------------------------------------------------------------------ */
/* offsets and records                                                 */

static void test_offsets(void **state)
{
    struct fx *f = *state;
    struct cg_offset o = {.offset = 42, .leader_epoch = 3, .metadata = "meta\0data", .metadata_len = 9,
                          .commit_ts = 5, .expire_ts = -1};
    cg_offset_put(f->g, KSTR_LIT("t"), 0, &o);
    o.offset = 7;
    cg_offset_put(f->g, KSTR_LIT("t"), 1, &o);
    const struct cg_offset *got = cg_offset_get(f->g, KSTR_LIT("t"), 0);
    assert_non_null(got);
    assert_int_equal(got->offset, 42);
    assert_int_equal(got->metadata_len, 9);
    assert_memory_equal(got->metadata, "meta\0data", 9);
    assert_null(cg_offset_get(f->g, KSTR_LIT("t"), 2));
    assert_null(cg_offset_get(f->g, KSTR_LIT("u"), 0));
    assert_int_equal(cg_offset_count(f->g), 2);
    assert_true(cg_offset_del(f->g, KSTR_LIT("t"), 1));
    assert_false(cg_offset_del(f->g, KSTR_LIT("t"), 1));
    size_t it = 0;
    kstr_t topic;
    int32_t p;
    const struct cg_offset *v;
    assert_true(cg_offset_next(f->g, &it, &topic, &p, &v));
    assert_kstr(topic, "t");
    assert_int_equal(p, 0);
    assert_false(cg_offset_next(f->g, &it, &topic, &p, &v));
}

/* ------------------------------------------------------------------ */
/* transactional offsets (Kafka's OffsetMetadataManager rules)         */

static struct cg_offset off_at(int64_t offset, int64_t record_offset)
{
    return (struct cg_offset){.offset = offset, .leader_epoch = -1, .metadata = "", .metadata_len = 0,
                              .commit_ts = 5, .expire_ts = -1, .record_offset = record_offset};
}

static int64_t committed_at(const struct cgroup *g, const char *topic, int32_t p)
{
    const struct cg_offset *o = cg_offset_get(g, KSTR(topic), p);
    return o ? o->offset : -1;
}

static void test_txn_offsets_commit_and_abort(void **state)
{
    struct fx *f = *state;
    struct cgroup *g = f->g;
    struct cg_offset o = off_at(5, 10); /* a regular commit, record at 10 */
    cg_offset_put(g, KSTR_LIT("t"), 0, &o);
    o = off_at(100, 11);
    cg_txn_put(g, 7, KSTR_LIT("t"), 0, &o);
    o = off_at(200, 12);
    cg_txn_put(g, 7, KSTR_LIT("t"), 1, &o);
    o = off_at(300, 13);
    cg_txn_put(g, 8, KSTR_LIT("t"), 2, &o);
    /* pending: invisible, but known per partition */
    assert_int_equal(committed_at(g, "t", 0), 5);
    assert_int_equal(committed_at(g, "t", 1), -1);
    assert_true(cg_txn_pending(g, KSTR_LIT("t"), 0));
    assert_true(cg_txn_pending(g, KSTR_LIT("t"), 1));
    assert_true(cg_txn_pending(g, KSTR_LIT("t"), 2));
    assert_false(cg_txn_pending(g, KSTR_LIT("t"), 3));
    assert_false(cg_txn_pending(g, KSTR_LIT("u"), 0));
    assert_int_equal(cg_txn_count(g), 2);
    /* the same partition again in the same transaction: the later one */
    o = off_at(101, 14);
    cg_txn_put(g, 7, KSTR_LIT("t"), 0, &o);
    /* COMMIT of 7 (marker): both become committed, with their record
     * offsets */
    assert_int_equal(cg_txn_end(g, 7, true), 2);
    assert_int_equal(committed_at(g, "t", 0), 101);
    assert_int_equal(cg_offset_get(g, KSTR_LIT("t"), 0)->record_offset, 14);
    assert_int_equal(committed_at(g, "t", 1), 200);
    assert_false(cg_txn_pending(g, KSTR_LIT("t"), 0));
    assert_true(cg_txn_pending(g, KSTR_LIT("t"), 2));
    assert_int_equal(cg_txn_count(g), 1);
    /* ABORT of 8: dropped */
    assert_int_equal(cg_txn_end(g, 8, false), 0);
    assert_int_equal(committed_at(g, "t", 2), -1);
    assert_int_equal(cg_txn_count(g), 0);
    /* a marker of a producer without offsets here changes nothing */
    assert_int_equal(cg_txn_end(g, 9, true), 0);
    assert_int_equal(cg_offset_count(g), 2);
}

static void test_txn_offsets_record_order(void **state)
{
    struct fx *f = *state;
    struct cgroup *g = f->g;
    /* transactional at 20, then a regular commit at 21: the commit of the
     * transaction (marker at 22) does not replace the later record */
    struct cg_offset o = off_at(40, 20);
    cg_txn_put(g, 7, KSTR_LIT("t"), 0, &o);
    o = off_at(41, 20);
    cg_txn_put(g, 7, KSTR_LIT("t"), 1, &o);
    o = off_at(45, 21);
    cg_offset_put(g, KSTR_LIT("t"), 0, &o);
    assert_int_equal(cg_txn_end(g, 7, true), 1);
    assert_int_equal(committed_at(g, "t", 0), 45);
    assert_int_equal(committed_at(g, "t", 1), 41);
    /* a regular commit before the transactional record: replaced */
    o = off_at(50, 30);
    cg_offset_put(g, KSTR_LIT("t"), 2, &o);
    o = off_at(60, 31);
    cg_txn_put(g, 8, KSTR_LIT("t"), 2, &o);
    assert_int_equal(cg_txn_end(g, 8, true), 1);
    assert_int_equal(committed_at(g, "t", 2), 60);
    assert_int_equal(cg_offset_get(g, KSTR_LIT("t"), 2)->record_offset, 31);
}

static void test_txn_offsets_tombstone_and_disposal(void **state)
{
    struct fx *f = *state;
    struct cgroup *g = f->g;
    assert_true(cg_is_disposable(g));
    struct cg_offset o = off_at(1, 3);
    cg_txn_put(g, 7, KSTR_LIT("t"), 0, &o);
    o = off_at(2, 3);
    cg_txn_put(g, 7, KSTR_LIT("t"), 1, &o);
    o = off_at(3, 4);
    cg_txn_put(g, 8, KSTR_LIT("t"), 1, &o);
    /* a group with only pending offsets is kept */
    assert_false(cg_is_disposable(g));
    size_t i1 = 0, i2 = 0, n = 0;
    kstr_t topic;
    int32_t p;
    int seen = 0;
    while (cg_txn_next(g, &i1, &i2, &topic, &p)) {
        assert_kstr(topic, "t");
        seen |= 1 << p;
        n++;
    }
    assert_int_equal(n, 3);
    assert_int_equal(seen, 3);
    /* a tombstone of t-1 (OffsetDelete / DeleteGroups) drops it from
     * every open transaction; the transactions stay open */
    cg_txn_del(g, KSTR_LIT("t"), 1);
    assert_false(cg_txn_pending(g, KSTR_LIT("t"), 1));
    assert_true(cg_txn_pending(g, KSTR_LIT("t"), 0));
    assert_int_equal(cg_txn_count(g), 2);
    assert_int_equal(cg_txn_end(g, 8, true), 0);
    assert_int_equal(committed_at(g, "t", 1), -1);
    assert_int_equal(cg_txn_end(g, 7, false), 0);
    assert_int_equal(cg_txn_count(g), 0);
    assert_true(cg_is_disposable(g));
}

static void test_txn_commit_checks(void **state)
{
    struct fx *f = *state;
    struct cgroup *g = f->g;
    /* an empty group: anyone, with or without generation */
    assert_int_equal(cg_validate_txn_commit(g, KSTR_LIT(""), KSTR_NULL, -1), 0);
    assert_int_equal(cg_validate_txn_commit(g, KSTR_LIT("m"), KSTR_NULL, 1), KERR_UNKNOWN_MEMBER_ID);
    /* one member, generation 1, CompletingRebalance (joined, not synced) */
    char *mid = new_member(f);
    struct cg_waiter *w = join(f, mid);
    advance(f, 3000);
    assert_true(done(w));
    assert_int_equal(w->error, 0);
    int32_t gen = w->generation;
    wfree(w);
    assert_int_equal(g->state, CG_COMPLETING_REBALANCE);
    /* not REBALANCE_IN_PROGRESS (the state is not enforced) */
    assert_int_equal(cg_validate_txn_commit(g, KSTR(mid), KSTR_NULL, gen), 0);
    assert_int_equal(cg_validate_commit(&f->e, g, KSTR(mid), KSTR_NULL, gen), KERR_REBALANCE_IN_PROGRESS);
    assert_int_equal(cg_validate_txn_commit(g, KSTR(mid), KSTR_NULL, gen + 1), KERR_ILLEGAL_GENERATION);
    assert_int_equal(cg_validate_txn_commit(g, KSTR_LIT("other"), KSTR_NULL, gen), KERR_UNKNOWN_MEMBER_ID);
    assert_int_equal(cg_validate_txn_commit(g, KSTR(mid), KSTR_LIT("inst"), gen), KERR_UNKNOWN_MEMBER_ID);
    /* v0-2 (no member, no generation) pass whatever the state; an
     * OffsetCommit the same way does not */
    assert_int_equal(cg_validate_txn_commit(g, KSTR_LIT(""), KSTR_NULL, -1), 0);
    assert_int_equal(cg_validate_commit(&f->e, g, KSTR_LIT(""), KSTR_NULL, -1), KERR_UNKNOWN_MEMBER_ID);
    free(mid);
}

static void test_java_hash(void **state)
{
    (void)state;
    assert_int_equal(coord_java_hash("hello", 5), 99162322);
    assert_int_equal(coord_java_hash("", 0), 0);
    assert_int_equal(coord_java_hash("my-group", 8), -1906497762);
    assert_int_equal(coord_java_hash("caf\xc3\xa9", 5), 3045921);
    /* a code point outside the BMP hashes as its two UTF-16 units */
    assert_int_equal(coord_java_hash("\xf0\x9f\x98\x80", 4), 1772899);
    assert_int_equal(coord_partition_for(KSTR_LIT("hello"), 50), 22);
    assert_int_equal(coord_partition_for(KSTR_LIT("my-group"), 50), 12);
    /* hashCode == Integer.MIN_VALUE: Utils.abs makes it 0 */
    assert_int_equal(coord_java_hash("polygenelubricants", 18), INT32_MIN);
    assert_int_equal(coord_partition_for(KSTR_LIT("polygenelubricants"), 50), 0);
}

static void test_records_round_trip(void **state)
{
    struct fx *f = *state;
    struct arena a = ARENA_INIT;
    struct buf k = BUF_INIT, v = BUF_INIT;
    struct cg_offset o = {.offset = 99, .leader_epoch = 4, .metadata = "m", .metadata_len = 1,
                          .commit_ts = 1234, .expire_ts = -1};
    crec_offset_key(&k, KSTR_LIT("grp"), KSTR_LIT("topic"), 7);
    crec_offset_value(&v, &o);
    /* OffsetCommitKey v1, OffsetCommitValue v3 (no expiry) */
    assert_int_equal(be16_read(k.data), 1);
    assert_int_equal(be16_read(v.data), 3);
    struct crec r;
    assert_int_equal(crec_parse((kbytes_t){k.data, (int32_t)k.len}, (kbytes_t){v.data, (int32_t)v.len}, &a, &r), 0);
    assert_int_equal(r.kind, CREC_OFFSET);
    assert_kstr(r.okey.group, "grp");
    assert_kstr(r.okey.topic, "topic");
    assert_int_equal(r.okey.partition, 7);
    assert_int_equal(r.ovalue.offset, 99);
    assert_int_equal(r.ovalue.leader_epoch, 4);
    assert_kstr(r.ovalue.metadata, "m");
    assert_int_equal(r.ovalue.commit_timestamp, 1234);
    /* an expiry needs version 1 */
    buf_reset(&v);
    o.expire_ts = 5678;
    crec_offset_value(&v, &o);
    assert_int_equal(be16_read(v.data), 1);
    assert_int_equal(crec_parse((kbytes_t){k.data, (int32_t)k.len}, (kbytes_t){v.data, (int32_t)v.len}, &a, &r), 0);
    assert_int_equal(r.ovalue.expire_timestamp, 5678);
    /* tombstone */
    assert_int_equal(crec_parse((kbytes_t){k.data, (int32_t)k.len}, (kbytes_t){NULL, -1}, &a, &r), 0);
    assert_true(r.tombstone);

    /* a stable group written, read back and loaded into a new group */
    char *id = stable_one(f);
    buf_reset(&k);
    crec_group_key(&k, KSTR_LIT("g1"));
    assert_int_equal(be16_read(k.data), 2);
    assert_int_equal(be16_read(f->last_value.data), 3);
    assert_int_equal(crec_parse((kbytes_t){k.data, (int32_t)k.len},
                                (kbytes_t){f->last_value.data, (int32_t)f->last_value.len}, &a, &r),
                     0);
    assert_int_equal(r.kind, CREC_GROUP);
    assert_int_equal(r.gvalue.generation, 1);
    assert_kstr(r.gvalue.protocol, "range");
    assert_kstr(r.gvalue.protocol_type, "consumer");
    assert_int_equal(r.gvalue.members.n, 1);
    const group_metadata_value_member_metadata_t *m = &r.gvalue.members.a[0];
    assert_kstr(m->member_id, id);
    assert_bytes(m->assignment, "A1");
    assert_bytes(m->subscription, "sub-1");
    struct cg_loaded_member lm = {m->member_id,       m->group_instance_id, m->client_id,    m->client_host,
                                  m->rebalance_timeout, m->session_timeout,  m->subscription, m->assignment};
    struct cgroup *g2 = cg_new("g1", 2, 0);
    cg_load_metadata(g2, r.gvalue.protocol_type, r.gvalue.generation, r.gvalue.protocol, r.gvalue.leader,
                     r.gvalue.current_state_timestamp, 1, &lm);
    assert_int_equal(g2->state, CG_STABLE);
    assert_int_equal(g2->generation, 1);
    cg_loaded(&f->e, g2);
    /* the loaded member carries on: heartbeat and sync of generation 1 */
    assert_int_equal(cg_heartbeat(&f->e, g2, KSTR(id), KSTR_NULL, 1), 0);
    struct cg_waiter *w = waiter(CG_WAIT_SYNC);
    struct cg_sync_req rq = {.member_id = KSTR(id), .instance_id = KSTR_NULL, .protocol_type = KSTR_NULL,
                             .protocol_name = KSTR_NULL, .generation = 1};
    cg_sync(&f->e, g2, &rq, w);
    assert_int_equal(w->error, 0);
    assert_bytes(w->assignment, "A1");
    wfree(w);
    /* and its session runs out if it never comes back */
    struct cg_env e2 = f->e;
    e2.now += 11000;
    cg_tick(&e2, g2);
    assert_int_equal(g2->nmembers, 0);
    cg_free(g2, 0);
    free(id);
    buf_free(&k);
    buf_free(&v);
    arena_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_member_id_required, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pending_member_expires, setup, teardown),
        cmocka_unit_test_setup_teardown(test_old_version_joins_directly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_initial_delay_extends, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inconsistent_protocol, setup, teardown),
        cmocka_unit_test_setup_teardown(test_protocol_selection, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sync_passes_assignment_exactly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sync_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_failure_on_sync, setup, teardown),
        cmocka_unit_test_setup_teardown(test_second_member_rebalance, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_rebalance_keeps_members, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rejoin_same_metadata_no_rebalance, setup, teardown),
        cmocka_unit_test_setup_teardown(test_session_timeout_removes_member, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rebalance_timeout_drops_laggard, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pending_sync_expires, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leave, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commit_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_static_rejoin_without_rebalance, setup, teardown),
        cmocka_unit_test_setup_teardown(test_static_member_outlives_rebalance_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fenced_static_member, setup, teardown),
        cmocka_unit_test_setup_teardown(test_detached_waiter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dead_group_answers_waiters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offsets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_txn_offsets_commit_and_abort, setup, teardown),
        cmocka_unit_test_setup_teardown(test_txn_offsets_record_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_txn_offsets_tombstone_and_disposal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_txn_commit_checks, setup, teardown),
        cmocka_unit_test(test_java_hash),
        cmocka_unit_test_setup_teardown(test_records_round_trip, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
