/* KIP-848 consumer groups (coord/consumer.c) driven
 * directly with a fake clock, fake topic metadata and a record sink:
 * the assignor modules' (uniform, range) exact assignments, the reconciliation of
 * Kafka's CurrentAssignmentBuilder (a partition reaches its new owner
 * only after the old one revoked it; member epochs, UNREVOKED and
 * UNRELEASED states), fencing, leaving, session and revocation
 * timeouts, static members, regex subscriptions, offset commit checks, and the records
 * written (kinds, order, and their schemas decoding back). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "coord/consumer.h"
#include "coord/group.h"
#include "coord/records.h"
#include "proto/kerr.h"
#include "util/buf.h"

#include "assignor_modules.h"

/* ------------------------------------------------------------------ */
/* fixture                                                             */

#define T3 "three" /* id 01..., 3 partitions */
#define T6 "six"   /* id 02..., 6 partitions */

static kuuid_t tid(int n)
{
    kuuid_t u;
    memset(u.b, 0, 16);
    u.b[0] = (uint8_t)n;
    u.b[15] = 0x42;
    return u;
}

struct rec {
    enum ccg_rec kind;
    char member[64];
    bool tombstone;
};

struct fx {
    struct cgroup *g;
    struct ccg_env e;
    struct arena a;
    struct rec recs[256];
    int nrecs;
    int t6_parts; /* partitions of T6 (0: the topic is gone) */
    struct buf k, v; /* the last record, encoded */
};

/* "rackprobe": an assignor that records what the coordinator's
 * describer answers about racks (the replicas' broker.rack) and the
 * members' rack_id, and assigns nothing. */
static char probe_racks[128];

static int probe_assign(void *st, const samsa_group_spec_t *g, const samsa_topic_describer_t *topics,
                        const samsa_assignment_builder_t *out, char *errstr, size_t errlen)
{
    (void)st, (void)out, (void)errstr, (void)errlen;
    size_t l = 0;
    for (size_t i = 0; i < g->n_members; i++)
        for (size_t k = 0; k < g->members[i].n_subscribed; k++)
            for (int32_t p = 0; p < 2; p++) {
                const char *r[4];
                size_t n = topics->racks_for_partition(topics->ctx, &g->members[i].subscribed_topic_ids[k], p, r, 4);
                l += (size_t)snprintf(probe_racks + l, sizeof probe_racks - l, "%sp%d:", l ? " " : "", p);
                for (size_t j = 0; j < n && j < 4; j++)
                    l += (size_t)snprintf(probe_racks + l, sizeof probe_racks - l, "%s%s", j ? "," : "", r[j]);
            }
    return SAMSA_OK;
}

static const samsa_assignor_t probe_assignor = {
    .hdr = {.struct_size = sizeof(samsa_assignor_t), .kind = SAMSA_CAP_ASSIGNOR, .name = "rackprobe"},
    .assign = probe_assign,
};

/* T6's partition p: replicas on racks "r<p>" and "r<p+1>" */
static size_t fake_racks(void *ctx, const kuuid_t *topic, int32_t partition, const char **racks, size_t cap)
{
    (void)ctx;
    static const char *names[] = {"r0", "r1", "r2", "r3", "r4", "r5", "r6"};
    if (topic->b[0] != 2 || partition < 0 || partition > 5)
        return 0;
    for (size_t i = 0; i < 2 && i < cap; i++)
        racks[i] = names[partition + (int32_t)i];
    return 2;
}

static const samsa_assignor_t *fake_assignor(void *ctx, const char *name, void **state)
{
    (void)ctx;
    *state = NULL;
    if (name && strcmp(name, "rackprobe") == 0)
        return &probe_assignor;
    return module_assignor(name ? name : "uniform");
}

static bool fake_topic(void *ctx, kstr_t name, kuuid_t *id, int32_t *nparts)
{
    struct fx *f = ctx;
    if (kstr_eq(name, KSTR_LIT(T3))) {
        *id = tid(1);
        *nparts = 3;
        return true;
    }
    if (kstr_eq(name, KSTR_LIT(T6)) && f->t6_parts > 0) {
        *id = tid(2);
        *nparts = f->t6_parts;
        return true;
    }
    return false;
}

static void fake_each_topic(void *ctx, void (*fn)(void *arg, const char *name), void *arg)
{
    struct fx *f = ctx;
    fn(arg, "__consumer_offsets");
    if (f->t6_parts > 0)
        fn(arg, T6);
    fn(arg, T3);
}

static void fake_emit(struct ccg_env *e, const struct cgroup *g, enum ccg_rec kind, const struct ccg_member *m,
                      const char *member_id, bool tombstone)
{
    struct fx *f = e->ctx;
    assert_true(f->nrecs < 256);
    struct rec *r = &f->recs[f->nrecs++];
    r->kind = kind;
    snprintf(r->member, sizeof r->member, "%s", member_id ? member_id : "");
    r->tombstone = tombstone;
    buf_reset(&f->k);
    buf_reset(&f->v);
    crec_ccg_key(&f->k, kind, (kstr_t){g->id, g->id_len}, member_id ? KSTR(member_id) : KSTR_NULL);
    if (!tombstone)
        crec_ccg_value(&f->v, kind, g, m);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    f->g = cg_new("g1", 2, 1000);
    f->g->cc = ccg_new();
    f->e.now = 1000000;
    f->e.session_timeout_ms = 45000;
    f->e.heartbeat_interval_ms = 5000;
    f->e.max_size = 100;
    f->e.assignor = fake_assignor;
    f->e.topic = fake_topic;
    f->e.each_topic = fake_each_topic;
    f->e.racks = fake_racks;
    f->e.topics_version = -1;
    f->e.emit = fake_emit;
    f->e.ctx = f;
    f->t6_parts = 6;
    buf_init(&f->k);
    buf_init(&f->v);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    cg_free(f->g, KERR_NOT_COORDINATOR);
    arena_free(&f->a);
    buf_free(&f->k);
    buf_free(&f->v);
    free(f);
    return 0;
}

/* ------------------------------------------------------------------ */
/* helpers                                                             */

/* "0,1,2" -> owned partitions of T6 */
struct owned {
    kuuid_t topics[2];
    int32_t parts[2][16];
    const int32_t *pp[2];
    int32_t np[2];
    int n;
};

static void parse_owned(struct owned *o, const char *t6, const char *t3)
{
    memset(o, 0, sizeof *o);
    const char *specs[2] = {t6, t3};
    int ids[2] = {2, 1};
    for (int i = 0; i < 2; i++) {
        if (!specs[i])
            continue;
        int k = o->n++;
        o->topics[k] = tid(ids[i]);
        o->pp[k] = o->parts[k];
        for (const char *p = specs[i]; *p;) {
            if (*p == ',') {
                p++;
                continue;
            }
            o->parts[k][o->np[k]++] = (int32_t)strtol(p, (char **)&p, 10);
        }
    }
}

struct hb {
    const char *member;
    int32_t epoch;
    const char *instance;
    const char *topics[3]; /* NULL-terminated, topics[0] NULL: not sent */
    bool send_topics;
    const char *owned6, *owned3; /* T6 and T3 partitions owned, NULL: not listed */
    bool owned_null;
    const char *assignor;
    const char *regex;
    int16_t version;
};

static struct ccg_hb_resp heartbeat(struct fx *f, struct hb h)
{
    kstr_t topics[3];
    int32_t nt = 0;
    for (int i = 0; i < 3 && h.topics[i]; i++)
        topics[nt++] = KSTR(h.topics[i]);
    struct owned o;
    parse_owned(&o, h.owned6, h.owned3); /* neither: [] (or null with owned_null) */
    struct ccg_hb_req rq = {
        .version = h.version,
        .member_id = h.member ? KSTR(h.member) : KSTR_LIT(""),
        .epoch = h.epoch,
        .instance_id = h.instance ? KSTR(h.instance) : KSTR_NULL,
        .rack_id = KSTR_NULL,
        .rebalance_timeout_ms = 10000,
        .has_topics = h.send_topics || nt > 0,
        .ntopics = nt,
        .topics = topics,
        .regex = h.regex ? KSTR(h.regex) : KSTR_NULL,
        .assignor = h.assignor ? KSTR(h.assignor) : KSTR_NULL,
        .has_owned = !h.owned_null,
        .nowned = o.n,
        .owned_topics = o.topics,
        .owned_parts = o.pp,
        .owned_nparts = o.np,
        .client_id = KSTR_LIT("cid"),
        .client_host = KSTR_LIT("/127.0.0.1"),
    };
    struct ccg_hb_resp r;
    const char *msg;
    int16_t err = ccg_validate(&rq, &f->e, &msg);
    if (err) {
        memset(&r, 0, sizeof r);
        r.error = err;
        r.message = msg;
        return r;
    }
    ccg_heartbeat(&f->e, f->g, &rq, &f->a, &r);
    return r;
}

/* The T6 partitions of a set or an answer, as "0,1,2". */
static const char *fmt_parts(const struct ctp *v, int32_t n, int topic)
{
    static char bufs[8][128];
    static int which;
    char *s = bufs[which++ % 8];
    s[0] = 0;
    kuuid_t t = tid(topic);
    for (int32_t i = 0; i < n; i++) {
        if (!kuuid_eq(&v[i].topic, &t))
            continue;
        size_t l = strlen(s);
        snprintf(s + l, 128 - l, "%s%d", l ? "," : "", v[i].part);
    }
    return s;
}

static const char *assigned(struct ccg_member *m)
{
    return fmt_parts(m->assigned.v, m->assigned.n, 2);
}

static const char *revoking(struct ccg_member *m)
{
    return fmt_parts(m->revoking.v, m->revoking.n, 2);
}

static const char *answer(const struct ccg_hb_resp *r)
{
    return r->has_assignment ? fmt_parts(r->assignment, r->nassignment, 2) : "(none)";
}

static struct ccg_member *member(struct fx *f, const char *id)
{
    struct ccg_member *m = ccg_member_find(f->g->cc, KSTR(id));
    assert_non_null(m);
    return m;
}

static int count_kind(struct fx *f, enum ccg_rec kind, bool tombstone)
{
    int n = 0;
    for (int i = 0; i < f->nrecs; i++)
        n += f->recs[i].kind == kind && f->recs[i].tombstone == tombstone;
    return n;
}

/* ------------------------------------------------------------------ */
/* assignors                                                           */

struct collect {
    char out[8][128];
    size_t n;
};

static int collect_assign(void *ctx, size_t member_index, const samsa_uuid_t *topic, int32_t partition)
{
    struct collect *c = ctx;
    if (member_index >= c->n)
        return SAMSA_EINVAL;
    char *s = c->out[member_index];
    size_t l = strlen(s);
    snprintf(s + l, 128 - l, "%s%c%d", l ? "," : "", topic->b[0] == 1 ? 'a' : 'b', partition);
    return SAMSA_OK;
}

static int32_t spec_partitions(void *ctx, const samsa_uuid_t *t)
{
    (void)ctx;
    return t->b[0] == 1 ? 3 : t->b[0] == 2 ? 6 : -1;
}

static size_t no_racks(void *ctx, const samsa_uuid_t *t, int32_t p, const char **r, size_t cap)
{
    (void)ctx, (void)t, (void)p, (void)r, (void)cap;
    return 0;
}

/* members: ids; subs: "a" (T3), "b" (T6), "ab"; cur: current T6 partitions */
static void run_assignor(const samsa_assignor_t *as, size_t n, const char **ids, const char **subs,
                         const char **cur, struct collect *c)
{
    samsa_uuid_t t3, t6;
    memcpy(t3.b, tid(1).b, 16);
    memcpy(t6.b, tid(2).b, 16);
    samsa_group_member_t m[8];
    samsa_uuid_t sub[8][2];
    samsa_topic_partitions_t curp[8];
    int32_t parts[8][16];
    memset(c, 0, sizeof *c);
    c->n = n;
    for (size_t i = 0; i < n; i++) {
        size_t ns = 0;
        if (strchr(subs[i], 'a'))
            sub[i][ns++] = t3;
        if (strchr(subs[i], 'b'))
            sub[i][ns++] = t6;
        size_t np = 0;
        for (const char *p = cur && cur[i] ? cur[i] : ""; *p;) {
            if (*p == ',') {
                p++;
                continue;
            }
            parts[i][np++] = (int32_t)strtol(p, (char **)&p, 10);
        }
        curp[i] = (samsa_topic_partitions_t){t6, parts[i], np};
        m[i] = (samsa_group_member_t){ids[i], NULL, NULL, sub[i], ns, &curp[i], np ? 1 : 0};
    }
    int type = SAMSA_SUBSCRIPTION_HOMOGENEOUS;
    for (size_t i = 1; i < n; i++)
        if (strcmp(subs[i], subs[0]) != 0)
            type = SAMSA_SUBSCRIPTION_HETEROGENEOUS;
    samsa_group_spec_t g = {sizeof g, "g", type, m, n};
    samsa_topic_describer_t d = {sizeof d, NULL, spec_partitions, no_racks};
    samsa_assignment_builder_t b = {sizeof b, c, collect_assign};
    char err[64];
    assert_int_equal(as->assign(NULL, &g, &d, &b, err, sizeof err), SAMSA_OK);
}

static void test_uniform_assignor(void **state)
{
    (void)state;
    struct collect c;
    const char *ids3[] = {"m0", "m1", "m2"}, *b3[] = {"b", "b", "b"};
    run_assignor(module_assignor("uniform"), 3, ids3, b3, NULL, &c);
    assert_string_equal(c.out[0], "b0,b1");
    assert_string_equal(c.out[1], "b2,b3");
    assert_string_equal(c.out[2], "b4,b5");
    /* sticky: the first member keeps the lower half of what it had */
    const char *ids2[] = {"m0", "m1"}, *b2[] = {"b", "b"}, *cur2[] = {"0,1,2,3,4,5", ""};
    run_assignor(module_assignor("uniform"), 2, ids2, b2, cur2, &c);
    assert_string_equal(c.out[0], "b0,b1,b2");
    assert_string_equal(c.out[1], "b3,b4,b5");
    /* a third member takes one from each */
    const char *cur3[] = {"0,1,2", "3,4,5", ""};
    run_assignor(module_assignor("uniform"), 3, ids3, b3, cur3, &c);
    assert_string_equal(c.out[0], "b0,b1");
    assert_string_equal(c.out[1], "b3,b4");
    assert_string_equal(c.out[2], "b2,b5");
    /* the second leaves: its partitions go to the least loaded, first first */
    const char *ids_ac[] = {"m0", "m2"}, *cur_ac[] = {"0,1", "2,5"};
    run_assignor(module_assignor("uniform"), 2, ids_ac, b2, cur_ac, &c);
    assert_string_equal(c.out[0], "b0,b1,b3");
    assert_string_equal(c.out[1], "b2,b4,b5");
    /* heterogeneous: only m0 can take T6, so m1 gets all of T3 */
    const char *het[] = {"ab", "a"};
    run_assignor(module_assignor("uniform"), 2, ids2, het, NULL, &c);
    assert_string_equal(c.out[0], "b0,b1,b2,b3,b4,b5");
    assert_string_equal(c.out[1], "a0,a1,a2");
}

/* The assignor's describer answers racks_for_partition from the
 * coordinator's metadata (the env's racks), for partitions of the
 * subscribed topics. */
static void test_assignor_sees_racks(void **state)
{
    struct fx *f = *state;
    probe_racks[0] = 0;
    struct ccg_hb_resp r = heartbeat(f, (struct hb){.member = "A", .epoch = 0, .topics = {T6}, .assignor = "rackprobe"});
    assert_int_equal(r.error, 0);
    assert_string_equal(probe_racks, "p0:r0,r1 p1:r1,r2");
}

static void test_range_assignor(void **state)
{
    (void)state;
    struct collect c;
    /* sorted by member id, whatever the group's order */
    const char *ids[] = {"b", "a", "c"}, *subs[] = {"b", "b", "b"};
    run_assignor(module_assignor("range"), 3, ids, subs, NULL, &c);
    assert_string_equal(c.out[1], "b0,b1");
    assert_string_equal(c.out[0], "b2,b3");
    assert_string_equal(c.out[2], "b4,b5");
    const char *ids4[] = {"a", "b", "c", "d"}, *subs4[] = {"ab", "ab", "b", "b"};
    run_assignor(module_assignor("range"), 4, ids4, subs4, NULL, &c);
    assert_string_equal(c.out[0], "a0,a1,b0,b1");
    assert_string_equal(c.out[1], "a2,b2,b3");
    assert_string_equal(c.out[2], "b4");
    assert_string_equal(c.out[3], "b5");
}

/* ------------------------------------------------------------------ */
/* reconciliation                                                      */

static void test_join_revoke_then_assign(void **state)
{
    struct fx *f = *state;
    struct ccg_hb_resp r = heartbeat(f, (struct hb){.member = "A", .epoch = 0, .topics = {T6}});
    assert_int_equal(r.error, 0);
    assert_int_equal(r.epoch, 1);
    assert_string_equal(answer(&r), "0,1,2,3,4,5");
    assert_int_equal(r.heartbeat_interval_ms, 5000);
    assert_int_equal(f->g->cc->epoch, 1);
    assert_int_equal(ccg_state(f->g->cc), CCG_G_STABLE);
    /* Kafka's order: member, partition metadata, epoch, target, current */
    assert_int_equal(f->nrecs, 6);
    assert_int_equal(f->recs[0].kind, CCG_REC_MEMBER);
    assert_int_equal(f->recs[1].kind, CCG_REC_PARTITION_META);
    assert_int_equal(f->recs[2].kind, CCG_REC_METADATA);
    assert_int_equal(f->recs[3].kind, CCG_REC_TARGET_MEMBER);
    assert_int_equal(f->recs[4].kind, CCG_REC_TARGET_META);
    assert_int_equal(f->recs[5].kind, CCG_REC_CURRENT);

    /* B joins: epoch 2, its target is 3,4,5 but A still owns them */
    r = heartbeat(f, (struct hb){.member = "B", .epoch = 0, .topics = {T6}});
    assert_int_equal(r.error, 0);
    assert_int_equal(r.epoch, 2);
    assert_string_equal(answer(&r), "");
    assert_int_equal(member(f, "B")->state, CCG_UNRELEASED_PARTITIONS);
    assert_int_equal(ccg_state(f->g->cc), CCG_G_RECONCILING);

    /* A must revoke 3,4,5 first: it stays in epoch 1 */
    r = heartbeat(f, (struct hb){.member = "A", .epoch = 1, .owned6 = "0,1,2,3,4,5"});
    assert_int_equal(r.error, 0);
    assert_int_equal(r.epoch, 1);
    assert_string_equal(answer(&r), "0,1,2");
    assert_int_equal(member(f, "A")->state, CCG_UNREVOKED_PARTITIONS);
    assert_string_equal(revoking(member(f, "A")), "3,4,5");

    /* B still waits */
    r = heartbeat(f, (struct hb){.member = "B", .epoch = 2, .owned6 = ""});
    assert_int_equal(r.epoch, 2);
    assert_string_equal(assigned(member(f, "B")), "");
    /* A heartbeating without having revoked stays where it is */
    r = heartbeat(f, (struct hb){.member = "A", .epoch = 1, .owned6 = "0,1,2,3"});
    assert_int_equal(r.epoch, 1);
    assert_int_equal(member(f, "A")->state, CCG_UNREVOKED_PARTITIONS);

    /* A revoked: epoch 2, stable */
    r = heartbeat(f, (struct hb){.member = "A", .epoch = 1, .owned6 = "0,1,2"});
    assert_int_equal(r.epoch, 2);
    assert_int_equal(member(f, "A")->state, CCG_STABLE);
    assert_int_equal(member(f, "A")->prev_epoch, 1);
    assert_string_equal(assigned(member(f, "A")), "0,1,2");
    assert_string_equal(revoking(member(f, "A")), "");

    /* now B gets them */
    r = heartbeat(f, (struct hb){.member = "B", .epoch = 2, .owned6 = ""});
    assert_int_equal(r.epoch, 2);
    assert_true(r.has_assignment);
    assert_string_equal(answer(&r), "3,4,5");
    assert_int_equal(member(f, "B")->state, CCG_STABLE);
    assert_int_equal(ccg_state(f->g->cc), CCG_G_STABLE);
    assert_int_equal(f->g->cc->assign_epoch, 2);
}

static void test_epoch_checks(void **state)
{
    struct fx *f = *state;
    heartbeat(f, (struct hb){.member = "A", .epoch = 0, .topics = {T6}});
    heartbeat(f, (struct hb){.member = "B", .epoch = 0, .topics = {T6}});
    struct ccg_hb_resp r = heartbeat(f, (struct hb){.member = "A", .epoch = 2, .owned6 = "0,1,2,3,4,5"});
    assert_int_equal(r.error, KERR_FENCED_MEMBER_EPOCH);
    r = heartbeat(f, (struct hb){.member = "A", .epoch = 1, .owned6 = "0,1,2,3,4,5"});
    assert_int_equal(r.epoch, 1);
    r = heartbeat(f, (struct hb){.member = "A", .epoch = 1, .owned6 = "0,1,2"});
    assert_int_equal(r.epoch, 2);
    /* the answer was lost: the previous epoch with a subset of what it
     * has is accepted (Kafka's throwIfMemberEpochIsInvalid) */
    r = heartbeat(f, (struct hb){.member = "A", .epoch = 1, .owned6 = "0,1,2"});
    assert_int_equal(r.error, 0);
    assert_int_equal(r.epoch, 2);
    /* ... but not with partitions it does not have */
    r = heartbeat(f, (struct hb){.member = "A", .epoch = 1, .owned6 = "0,1,2,3"});
    assert_int_equal(r.error, KERR_FENCED_MEMBER_EPOCH);
    r = heartbeat(f, (struct hb){.member = "A", .epoch = 0, .owned_null = true});
    assert_int_equal(r.error, KERR_INVALID_REQUEST); /* a join needs an empty owned list */
    r = heartbeat(f, (struct hb){.member = "Z", .epoch = 3, .owned6 = ""});
    assert_int_equal(r.error, KERR_UNKNOWN_MEMBER_ID);
    r = heartbeat(f, (struct hb){.member = "", .epoch = 0, .topics = {T6}, .version = 1});
    assert_int_equal(r.error, KERR_INVALID_REQUEST);
    assert_string_equal(r.message, "MemberId can't be empty.");
    r = heartbeat(f, (struct hb){.member = "C", .epoch = 0, .topics = {T6}, .assignor = "sticky"});
    assert_int_equal(r.error, KERR_UNSUPPORTED_ASSIGNOR);
    r = heartbeat(f, (struct hb){.member = "C", .epoch = -3, .owned6 = ""});
    assert_int_equal(r.error, KERR_INVALID_REQUEST);
    /* v0: an empty member id on a join gets a generated one */
    r = heartbeat(f, (struct hb){.member = "", .epoch = 0, .topics = {T6}});
    assert_int_equal(r.error, 0);
    assert_int_equal(r.member_id.len, 22);
}

static void test_leave_and_timeouts(void **state)
{
    struct fx *f = *state;
    heartbeat(f, (struct hb){.member = "A", .epoch = 0, .topics = {T6}});
    heartbeat(f, (struct hb){.member = "B", .epoch = 0, .topics = {T6}});
    heartbeat(f, (struct hb){.member = "A", .epoch = 1, .owned6 = "0,1,2,3,4,5"}); /* revoking 3,4,5 */
    assert_int_equal(member(f, "A")->state, CCG_UNREVOKED_PARTITIONS);
    assert_int_equal(ccg_next_deadline(f->g->cc), f->e.now + 10000); /* its rebalance timeout */
    f->nrecs = 0;
    /* A does not revoke within its rebalance timeout: it is removed */
    f->e.now += 10000;
    ccg_tick(&f->e, f->g);
    assert_null(ccg_member_find(f->g->cc, KSTR_LIT("A")));
    assert_int_equal(f->g->cc->epoch, 3);
    assert_int_equal(count_kind(f, CCG_REC_CURRENT, true), 1);
    assert_int_equal(count_kind(f, CCG_REC_TARGET_MEMBER, true), 1);
    assert_int_equal(count_kind(f, CCG_REC_MEMBER, true), 1);
    assert_int_equal(count_kind(f, CCG_REC_METADATA, false), 1);
    /* B's next heartbeat takes everything */
    struct ccg_hb_resp r = heartbeat(f, (struct hb){.member = "B", .epoch = 2, .owned6 = ""});
    assert_int_equal(r.epoch, 3);
    assert_string_equal(answer(&r), "0,1,2,3,4,5");
    /* session timeout */
    f->e.now += 45000;
    ccg_tick(&f->e, f->g);
    assert_int_equal(f->g->cc->nmembers, 0);
    assert_int_equal(ccg_state(f->g->cc), CCG_G_EMPTY);
    assert_int_equal(f->g->cc->epoch, 4);
    /* leave */
    heartbeat(f, (struct hb){.member = "C", .epoch = 0, .topics = {T6}});
    r = heartbeat(f, (struct hb){.member = "C", .epoch = -1, .owned6 = ""});
    assert_int_equal(r.error, 0);
    assert_int_equal(r.epoch, -1);
    assert_string_equal((char *)r.member_id.p, "C");
    assert_int_equal(f->g->cc->nmembers, 0);
    assert_int_equal(f->g->cc->epoch, 6);
    r = heartbeat(f, (struct hb){.member = "C", .epoch = -1, .owned6 = ""});
    assert_int_equal(r.error, KERR_UNKNOWN_MEMBER_ID);
}

static void test_static_member(void **state)
{
    struct fx *f = *state;
    heartbeat(f, (struct hb){.member = "A", .epoch = 0, .instance = "i1", .topics = {T6}});
    heartbeat(f, (struct hb){.member = "B", .epoch = 0, .topics = {T6}});
    heartbeat(f, (struct hb){.member = "A", .epoch = 1, .instance = "i1", .owned6 = "0,1,2,3,4,5"});
    heartbeat(f, (struct hb){.member = "A", .epoch = 1, .instance = "i1", .owned6 = "0,1,2"});
    assert_int_equal(member(f, "A")->epoch, 2);
    /* the instance id is taken */
    struct ccg_hb_resp r = heartbeat(f, (struct hb){.member = "A2", .epoch = 0, .instance = "i1", .topics = {T6}});
    assert_int_equal(r.error, KERR_UNRELEASED_INSTANCE_ID);
    /* a temporary leave keeps its partitions and the group epoch */
    r = heartbeat(f, (struct hb){.member = "A", .epoch = -2, .instance = "i1", .owned6 = "0,1,2"});
    assert_int_equal(r.error, 0);
    assert_int_equal(r.epoch, -2);
    assert_int_equal(f->g->cc->epoch, 2);
    assert_string_equal(assigned(member(f, "A")), "0,1,2");
    /* it comes back under a new member id with its assignment and epoch */
    r = heartbeat(f, (struct hb){.member = "A2", .epoch = 0, .instance = "i1", .topics = {T6}});
    assert_int_equal(r.error, 0);
    assert_int_equal(r.epoch, 2);
    assert_string_equal(answer(&r), "0,1,2");
    assert_null(ccg_member_find(f->g->cc, KSTR_LIT("A")));
    assert_int_equal(f->g->cc->epoch, 2); /* no rebalance */
}

static void test_metadata_change(void **state)
{
    struct fx *f = *state;
    heartbeat(f, (struct hb){.member = "A", .epoch = 0, .topics = {T6, T3}});
    assert_int_equal(f->g->cc->epoch, 1);
    /* the topic grows: a new epoch and target at the next heartbeat */
    f->t6_parts = 8;
    struct ccg_hb_resp r = heartbeat(f, (struct hb){.member = "A", .epoch = 1, .owned6 = "0,1,2,3,4,5",
                                                    .owned3 = "0,1,2"});
    assert_int_equal(f->g->cc->epoch, 2);
    assert_int_equal(r.epoch, 2);
    assert_string_equal(answer(&r), "0,1,2,3,4,5,6,7");
    /* the topic is deleted: its partitions are revoked */
    f->t6_parts = 0;
    r = heartbeat(f, (struct hb){.member = "A", .epoch = 2, .owned6 = "0,1,2,3,4,5,6,7", .owned3 = "0,1,2"});
    assert_int_equal(f->g->cc->epoch, 3);
    assert_int_equal(r.epoch, 2);
    assert_string_equal(revoking(member(f, "A")), "0,1,2,3,4,5,6,7");
    r = heartbeat(f, (struct hb){.member = "A", .epoch = 2, .owned6 = "", .owned3 = "0,1,2"});
    assert_int_equal(r.epoch, 3);
    assert_int_equal(member(f, "A")->state, CCG_STABLE);
}

static void test_regex_subscription(void **state)
{
    struct fx *f = *state;
    struct ccg_hb_resp r = heartbeat(f, (struct hb){.member = "A", .epoch = 0, .regex = "(", .version = 1});
    assert_int_equal(r.error, KERR_INVALID_REGULAR_EXPRESSION_CODE);
    /* whole names only: "s.*" is six, not three; T6 does not exist yet */
    f->t6_parts = 0;
    r = heartbeat(f, (struct hb){.member = "A", .epoch = 0, .regex = "s.*", .version = 1});
    assert_int_equal(r.error, 0);
    assert_int_equal(r.epoch, 1);
    assert_string_equal(answer(&r), "");
    assert_int_equal(f->g->cc->nmeta, 0);
    /* the topic is created: the next heartbeat subscribes to it */
    f->t6_parts = 6;
    r = heartbeat(f, (struct hb){.member = "A", .epoch = 1, .owned6 = "", .version = 1});
    assert_int_equal(r.epoch, 2);
    assert_string_equal(answer(&r), "0,1,2,3,4,5");
    assert_true(ccg_subscribed_to(f->g->cc, KSTR_LIT(T6)));
    assert_false(ccg_subscribed_to(f->g->cc, KSTR_LIT(T3)));
    /* ".*" matches every topic but the internal ones */
    r = heartbeat(f, (struct hb){.member = "B", .epoch = 0, .regex = ".*", .version = 1});
    assert_int_equal(r.error, 0);
    assert_int_equal(f->g->cc->nmeta, 2);
    assert_false(ccg_subscribed_to(f->g->cc, KSTR_LIT("__consumer_offsets")));
    /* uniform over heterogeneous subscriptions: B takes T3 at once and
     * T6's partition 5 once A let it go (5 and 4 partitions) */
    assert_int_equal(r.epoch, 3);
    assert_string_equal(fmt_parts(r.assignment, r.nassignment, 1), "0,1,2");
    assert_string_equal(answer(&r), "");
    assert_int_equal(member(f, "B")->state, CCG_UNRELEASED_PARTITIONS);
    r = heartbeat(f, (struct hb){.member = "A", .epoch = 2, .owned6 = "0,1,2,3,4,5", .version = 1});
    assert_int_equal(r.epoch, 2);
    assert_string_equal(revoking(member(f, "A")), "5");
    r = heartbeat(f, (struct hb){.member = "A", .epoch = 2, .owned6 = "0,1,2,3,4", .version = 1});
    assert_int_equal(r.epoch, 3);
    r = heartbeat(f, (struct hb){.member = "B", .epoch = 3, .owned6 = "", .owned3 = "0,1,2", .version = 1});
    assert_int_equal(r.epoch, 3);
    assert_string_equal(answer(&r), "5");
    assert_string_equal(fmt_parts(r.assignment, r.nassignment, 1), "0,1,2");
    assert_int_equal(ccg_state(f->g->cc), CCG_G_STABLE);
}

static void test_regex_resolved_once_per_metadata(void **state)
{
    struct fx *f = *state;
    f->e.topics_version = 5;
    f->t6_parts = 0;
    struct ccg_hb_resp r = heartbeat(f, (struct hb){.member = "A", .epoch = 0, .regex = "s.*", .version = 1});
    assert_int_equal(r.epoch, 1);
    /* the same metadata: the regex is not evaluated again */
    f->t6_parts = 6;
    r = heartbeat(f, (struct hb){.member = "A", .epoch = 1, .owned6 = "", .version = 1});
    assert_int_equal(r.epoch, 1);
    assert_int_equal(f->g->cc->nmeta, 0);
    /* new metadata: it is */
    f->e.topics_version = 6;
    r = heartbeat(f, (struct hb){.member = "A", .epoch = 1, .owned6 = "", .version = 1});
    assert_int_equal(r.epoch, 2);
    assert_string_equal(answer(&r), "0,1,2,3,4,5");
}

static void test_commit_checks(void **state)
{
    struct fx *f = *state;
    struct ccgroup *cc = f->g->cc;
    assert_int_equal(ccg_validate_commit(cc, KSTR_LIT(""), -1, 9), 0); /* admin, empty group */
    heartbeat(f, (struct hb){.member = "A", .epoch = 0, .topics = {T6}});
    assert_int_equal(ccg_validate_commit(cc, KSTR_LIT(""), -1, 9), KERR_UNKNOWN_MEMBER_ID);
    assert_int_equal(ccg_validate_commit(cc, KSTR_LIT("A"), 1, 9), 0);
    assert_int_equal(ccg_validate_commit(cc, KSTR_LIT("A"), 0, 9), KERR_STALE_MEMBER_EPOCH);
    assert_int_equal(ccg_validate_commit(cc, KSTR_LIT("A"), 2, 9), KERR_STALE_MEMBER_EPOCH);
    assert_int_equal(ccg_validate_commit(cc, KSTR_LIT("A"), 1, 8), KERR_UNSUPPORTED_VERSION);
    assert_int_equal(ccg_validate_fetch(cc, KSTR_NULL, -1), 0);
    assert_int_equal(ccg_validate_fetch(cc, KSTR_LIT("A"), 1), 0);
    assert_int_equal(ccg_validate_fetch(cc, KSTR_LIT("A"), 5), KERR_STALE_MEMBER_EPOCH);
    assert_int_equal(ccg_validate_fetch(cc, KSTR_LIT("B"), 1), KERR_UNKNOWN_MEMBER_ID);
}

static void test_records_decode(void **state)
{
    struct fx *f = *state;
    heartbeat(f, (struct hb){.member = "A", .epoch = 0, .topics = {T6}});
    heartbeat(f, (struct hb){.member = "B", .epoch = 0, .topics = {T6}});
    heartbeat(f, (struct hb){.member = "A", .epoch = 1, .owned6 = "0,1,2,3,4,5"});
    /* the last record: A's current assignment while revoking */
    assert_int_equal(f->recs[f->nrecs - 1].kind, CCG_REC_CURRENT);
    struct arena a = ARENA_INIT;
    struct crec cr;
    assert_int_equal(crec_parse((kbytes_t){f->k.data, (int32_t)f->k.len}, (kbytes_t){f->v.data, (int32_t)f->v.len},
                                &a, &cr),
                     0);
    assert_int_equal(cr.kind, CREC_CCG);
    assert_int_equal(cr.key_version, 8);
    assert_true(kstr_eq(cr.ccg_group, KSTR_LIT("g1")));
    assert_true(kstr_eq(cr.ccg_member, KSTR_LIT("A")));
    assert_int_equal(cr.ccurrent.member_epoch, 1);
    assert_int_equal(cr.ccurrent.state, CCG_UNREVOKED_PARTITIONS);
    assert_int_equal(cr.ccurrent.assigned_partitions.n, 1);
    assert_int_equal(cr.ccurrent.assigned_partitions.a[0].partitions.n, 3);
    assert_int_equal(cr.ccurrent.partitions_pending_revocation.a[0].partitions.a[0], 3);
    arena_free(&a);
    /* a tombstone key */
    f->e.now += 45000;
    ccg_tick(&f->e, f->g);
    assert_int_equal(f->recs[f->nrecs - 1].kind, CCG_REC_METADATA);
    assert_int_equal(crec_parse((kbytes_t){f->k.data, (int32_t)f->k.len}, (kbytes_t){f->v.data, (int32_t)f->v.len},
                                &a, &cr),
                     0);
    assert_int_equal(cr.cmeta.epoch, f->g->cc->epoch);
    arena_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uniform_assignor),
        cmocka_unit_test(test_range_assignor),
        cmocka_unit_test_setup_teardown(test_assignor_sees_racks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_join_revoke_then_assign, setup, teardown),
        cmocka_unit_test_setup_teardown(test_epoch_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leave_and_timeouts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_static_member, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metadata_change, setup, teardown),
        cmocka_unit_test_setup_teardown(test_regex_subscription, setup, teardown),
        cmocka_unit_test_setup_teardown(test_regex_resolved_once_per_metadata, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commit_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_records_decode, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
