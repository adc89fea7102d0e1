/* core/raft rules in isolation: the epoch cache, vote granting (standard
 * and pre-vote), fetch validation (diverging epoch, snapshot id), the
 * high-watermark rule of the current epoch, follower truncation and
 * snapshot download, restart states, and hostile input. One node at a
 * time, driven by hand-built messages; outputs are captured in order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "raft/epoch_cache.h"
#include "raft/memlog.h"
#include "raft/raft.h"
#include "raft/raft_msg.h"
#include "util/arena.h"
#include "util/buf.h"

/* ---- harness ---- */

#define MAXOUT 512

struct out {
    enum raft_out_type type;
    int32_t to;
    struct raft_msg msg; /* decoded copy, structs in the harness arena */
    int32_t q_epoch, q_leader, q_voted;
    int64_t value; /* flush end, commit hw, snapshot end */
    enum raft_role role;
};

struct h {
    struct memlog log;
    struct raft *r;
    struct out out[MAXOUT];
    int nout;
    struct arena ar;
    int64_t now;
};

static void on_out(void *arg, const struct raft_output *o)
{
    struct h *h = arg;
    assert_true(h->nout < MAXOUT);
    struct out *c = &h->out[h->nout++];
    memset(c, 0, sizeof *c);
    c->type = o->type;
    switch (o->type) {
    case RAFT_OUT_SEND: {
        c->to = o->u.send.to;
        struct kwriter w;
        kw_init(&w);
        raft_msg_encode(&w, o->u.send.msg);
        uint8_t *copy = arena_alloc(&h->ar, w.b.len + 1);
        memcpy(copy, w.b.data, w.b.len);
        const struct raft_msg *m = o->u.send.msg;
        assert_int_equal(raft_msg_decode(&c->msg, m->type, m->version, m->correlation_id, m->pre_vote, copy, w.b.len,
                                         &h->ar),
                         0);
        kw_free(&w);
        break;
    }
    case RAFT_OUT_PERSIST:
        c->q_epoch = o->u.persist->leader_epoch;
        c->q_leader = o->u.persist->leader_id;
        c->q_voted = o->u.persist->voted_id;
        break;
    case RAFT_OUT_FLUSH: c->value = o->u.flush.end_offset; break;
    case RAFT_OUT_COMMIT: c->value = o->u.commit.high_watermark; break;
    case RAFT_OUT_LOAD_SNAPSHOT: c->value = o->u.load_snapshot.end_offset; break;
    case RAFT_OUT_ROLE: c->role = o->u.role.role; break;
    }
}

static const int32_t VOTERS3[] = {1, 2, 3};

static void h_init(struct h *h)
{
    memset(h, 0, sizeof *h);
    memlog_init(&h->log);
    arena_init(&h->ar);
}

static void h_start(struct h *h, int32_t id, const int32_t *voters, int32_t nvoters, const quorum_state_data_t *qs)
{
    struct raft_config cfg;
    raft_config_defaults(&cfg);
    cfg.node_id = id;
    cfg.voters = voters;
    cfg.nvoters = nvoters;
    cfg.cluster_id = "unit";
    cfg.random_seed = 42;
    cfg.log = memlog_raft_log(&h->log);
    cfg.output = on_out;
    cfg.output_arg = h;
    assert_int_equal(raft_create(&cfg, qs, &h->r), 0);
}

static void h_free(struct h *h)
{
    raft_destroy(h->r);
    memlog_free(&h->log);
    arena_free(&h->ar);
}

static void h_clear(struct h *h) { h->nout = 0; }

static void h_tick(struct h *h, int64_t now)
{
    h->now = now;
    raft_tick(h->r, now);
}

/* The last output of a type (and message type for sends), or NULL. */
static struct out *h_last(struct h *h, enum raft_out_type t, enum raft_msg_type mt)
{
    for (int i = h->nout - 1; i >= 0; i--)
        if (h->out[i].type == t && (t != RAFT_OUT_SEND || h->out[i].msg.type == mt))
            return &h->out[i];
    return NULL;
}

static int h_index(struct h *h, const struct out *o) { return (int)(o - h->out); }

/* Appends a one-record batch of epoch at the log end. */
static void log_add(struct memlog *l, int32_t epoch)
{
    struct buf b = BUF_INIT;
    struct rb_batch_opts o = RB_BATCH_OPTS_INIT;
    o.partition_leader_epoch = epoch;
    struct rb_builder bld;
    rb_builder_begin(&bld, &b, l->end, 1000, &o);
    uint8_t v[8];
    memcpy(v, &l->end, 8);
    assert_int_equal(rb_builder_add(&bld, 1000, KBYTES_NULL, (kbytes_t){v, 8}, NULL, 0), 0);
    size_t len;
    assert_int_equal(rb_builder_finish(&bld, &len), 0);
    assert_int_equal(memlog_raft_log(l).ops->append(l, b.data, len), 0);
    l->durable_end = l->end;
    buf_free(&b);
}

/* ---- message builders (structs in arena a) ---- */

static struct raft_msg vote_req(struct arena *a, int32_t cand, int32_t epoch, int32_t last_epoch, int64_t last_off,
                                bool pre, int32_t corr)
{
    vote_request_t *q = vote_request_new_array(a, 1);
    q->cluster_id = KSTR_LIT("unit");
    q->topics.a = vote_request_topic_data_new_array(a, 1);
    q->topics.n = 1;
    q->topics.a[0].topic_name = KSTR_LIT(RAFT_METADATA_TOPIC);
    q->topics.a[0].partitions.a = vote_request_partition_data_new_array(a, 1);
    q->topics.a[0].partitions.n = 1;
    vote_request_partition_data_t *p = &q->topics.a[0].partitions.a[0];
    p->candidate_id = cand;
    p->candidate_epoch = epoch;
    p->last_offset_epoch = last_epoch;
    p->last_offset = last_off;
    struct raft_msg m = {.type = RAFT_MSG_VOTE_REQ, .version = 1, .correlation_id = corr, .pre_vote = pre};
    m.u.vote_req = q;
    return m;
}

static struct raft_msg vote_resp(struct arena *a, int32_t epoch, bool granted, bool pre, int32_t corr)
{
    vote_response_t *s = vote_response_new_array(a, 1);
    s->topics.a = vote_response_topic_data_new_array(a, 1);
    s->topics.n = 1;
    s->topics.a[0].topic_name = KSTR_LIT(RAFT_METADATA_TOPIC);
    s->topics.a[0].partitions.a = vote_response_partition_data_new_array(a, 1);
    s->topics.a[0].partitions.n = 1;
    vote_response_partition_data_t *p = &s->topics.a[0].partitions.a[0];
    p->leader_id = -1;
    p->leader_epoch = epoch;
    p->vote_granted = granted;
    struct raft_msg m = {.type = RAFT_MSG_VOTE_RESP, .version = 1, .correlation_id = corr, .pre_vote = pre};
    m.u.vote_resp = s;
    return m;
}

static struct raft_msg fetch_req(struct arena *a, int32_t replica, int32_t epoch, int64_t off, int32_t last_epoch,
                                 int32_t max_wait, int32_t corr)
{
    fetch_request_t *q = fetch_request_new_array(a, 1);
    q->cluster_id = KSTR_LIT("unit");
    q->replica_state.replica_id = replica;
    q->max_wait_ms = max_wait;
    q->topics.a = fetch_request_fetch_topic_new_array(a, 1);
    q->topics.n = 1;
    q->topics.a[0].topic_id = RAFT_METADATA_TOPIC_ID;
    q->topics.a[0].partitions.a = fetch_request_fetch_partition_new_array(a, 1);
    q->topics.a[0].partitions.n = 1;
    fetch_request_fetch_partition_t *p = &q->topics.a[0].partitions.a[0];
    p->current_leader_epoch = epoch;
    p->fetch_offset = off;
    p->last_fetched_epoch = last_epoch;
    p->partition_max_bytes = 1 << 20;
    struct raft_msg m = {.type = RAFT_MSG_FETCH_REQ, .version = 17, .correlation_id = corr};
    m.u.fetch_req = q;
    return m;
}

static fetch_response_partition_data_t *fetch_resp(struct arena *a, struct raft_msg *m, int32_t leader, int32_t epoch,
                                                   int32_t corr)
{
    fetch_response_t *s = fetch_response_new_array(a, 1);
    s->responses.a = fetch_response_fetchable_topic_response_new_array(a, 1);
    s->responses.n = 1;
    s->responses.a[0].topic_id = RAFT_METADATA_TOPIC_ID;
    s->responses.a[0].partitions.a = fetch_response_partition_data_new_array(a, 1);
    s->responses.a[0].partitions.n = 1;
    fetch_response_partition_data_t *p = &s->responses.a[0].partitions.a[0];
    p->current_leader.leader_id = leader;
    p->current_leader.leader_epoch = epoch;
    p->high_watermark = -1;
    *m = (struct raft_msg){.type = RAFT_MSG_FETCH_RESP, .version = 17, .correlation_id = corr};
    m->u.fetch_resp = s;
    return p;
}

static const vote_response_partition_data_t *vote_answer(struct out *o)
{
    assert_non_null(o);
    assert_int_equal(o->msg.u.vote_resp->error_code, 0);
    assert_int_equal(o->msg.u.vote_resp->topics.n, 1);
    return &o->msg.u.vote_resp->topics.a[0].partitions.a[0];
}

static const fetch_response_partition_data_t *fetch_answer(struct out *o)
{
    assert_non_null(o);
    assert_int_equal(o->msg.u.fetch_resp->error_code, 0);
    assert_int_equal(o->msg.u.fetch_resp->responses.n, 1);
    return &o->msg.u.fetch_resp->responses.a[0].partitions.a[0];
}

/* Drives a 3-voter node 1 to leadership of epoch+1 by answering its
 * pre-votes and votes. */
static void elect(struct h *h)
{
    struct arena a = ARENA_INIT;
    h_tick(h, h->now + 5000); /* election timeout: prospective */
    assert_int_equal(raft_role(h->r), RAFT_PROSPECTIVE);
    struct out *pv = h_last(h, RAFT_OUT_SEND, RAFT_MSG_VOTE_REQ);
    assert_non_null(pv);
    assert_true(pv->msg.pre_vote);
    int32_t epoch = raft_epoch(h->r);
    struct raft_msg m = vote_resp(&a, epoch, true, true, pv->msg.correlation_id);
    raft_receive(h->r, pv->to, &m);
    assert_int_equal(raft_role(h->r), RAFT_CANDIDATE);
    assert_int_equal(raft_epoch(h->r), epoch + 1);
    struct out *v = h_last(h, RAFT_OUT_SEND, RAFT_MSG_VOTE_REQ);
    assert_false(v->msg.pre_vote);
    assert_int_equal(v->msg.u.vote_req->topics.a[0].partitions.a[0].candidate_epoch, epoch + 1);
    m = vote_resp(&a, epoch + 1, true, false, v->msg.correlation_id);
    raft_receive(h->r, v->to, &m);
    assert_int_equal(raft_role(h->r), RAFT_LEADER);
    arena_free(&a);
}

/* ---- tests ---- */

static void test_epoch_cache(void **state)
{
    (void)state;
    struct raft_epoch_cache c;
    rec_init(&c);
    assert_int_equal(rec_last_epoch(&c), 0);
    assert_true(rec_assign(&c, 1, 0));
    assert_true(rec_assign(&c, 1, 3)); /* same epoch: no-op */
    assert_true(rec_assign(&c, 3, 5));
    assert_true(rec_assign(&c, 4, 9));
    assert_false(rec_assign(&c, 2, 12)); /* epochs only grow */
    assert_false(rec_assign(&c, 5, 8));  /* and so do offsets */
    struct raft_offset_epoch e = rec_end_offset_for_epoch(&c, 2, 20);
    assert_int_equal(e.epoch, 1); /* largest epoch <= 2 is 1, ending where 3 starts */
    assert_int_equal(e.offset, 5);
    e = rec_end_offset_for_epoch(&c, 3, 20);
    assert_int_equal(e.epoch, 3);
    assert_int_equal(e.offset, 9);
    e = rec_end_offset_for_epoch(&c, 7, 20);
    assert_int_equal(e.epoch, 4);
    assert_int_equal(e.offset, 20);
    e = rec_end_offset_for_epoch(&c, 0, 20);
    assert_int_equal(e.epoch, 0);
    assert_int_equal(e.offset, 0);
    assert_int_equal(rec_epoch_at(&c, 4), 1);
    assert_int_equal(rec_epoch_at(&c, 5), 3);
    assert_int_equal(rec_epoch_at(&c, 19), 4);
    rec_truncate_from(&c, 9);
    assert_int_equal(rec_last_epoch(&c), 3);
    rec_truncate_from(&c, 6); /* epoch 3 still starts below 6 */
    assert_int_equal(rec_last_epoch(&c), 3);
    assert_true(rec_assign(&c, 4, 7));
    /* a snapshot at 6 whose last record is of epoch 3 */
    rec_trim_before(&c, 6, 3);
    assert_int_equal(c.base_offset, 6);
    assert_int_equal(c.e[0].epoch, 3);
    assert_int_equal(c.e[0].start_offset, 6);
    e = rec_end_offset_for_epoch(&c, 2, 10);
    assert_int_equal(e.epoch, 3); /* nothing older than the snapshot: the base */
    assert_int_equal(e.offset, 6);
    rec_clear(&c, 50, 7);
    assert_int_equal(rec_last_epoch(&c), 7);
    assert_int_equal(rec_epoch_at(&c, 10), 7);
    rec_free(&c);
}

static void test_single_voter(void **state)
{
    (void)state;
    struct h h;
    h_init(&h);
    static const int32_t one[] = {1};
    h_start(&h, 1, one, 1, NULL);
    h_tick(&h, 0);
    assert_int_equal(raft_role(h.r), RAFT_LEADER);
    assert_int_equal(raft_epoch(h.r), 1);
    /* the LeaderChange control batch opens the epoch */
    assert_int_equal(h.log.n, 1);
    assert_int_equal(h.log.b[0].epoch, 1);
    struct rb_header hd;
    assert_int_equal(rb_parse_header(h.log.b[0].data, h.log.b[0].len, &hd), 0);
    assert_true(rb_is_control(&hd));
    /* nothing is committed before it is flushed */
    assert_null(h_last(&h, RAFT_OUT_COMMIT, 0));
    struct out *f = h_last(&h, RAFT_OUT_FLUSH, 0);
    assert_non_null(f);
    assert_int_equal(f->value, 1);
    raft_flushed(h.r, 1);
    assert_int_equal(raft_high_watermark(h.r), 1);
    kbytes_t v = {(const uint8_t *)"x", 1};
    assert_int_equal(raft_propose(h.r, 1, &v, 1, 5), 1);
    assert_int_equal(raft_propose(h.r, 2, &v, 1, 5), RAFT_ERR_NOT_LEADER); /* stale epoch view */
    raft_flushed(h.r, 2);
    assert_int_equal(h_last(&h, RAFT_OUT_COMMIT, 0)->value, 2);

    /* prebuilt batches (the controller's rb_builder output) get their base
     * offset and epoch stamped */
    struct buf b = BUF_INIT;
    struct rb_builder bld;
    for (int i = 0; i < 2; i++) {
        rb_builder_begin(&bld, &b, 0, 7, NULL);
        assert_int_equal(rb_builder_add(&bld, 7, KBYTES_NULL, v, NULL, 0), 0);
        assert_int_equal(rb_builder_add(&bld, 7, KBYTES_NULL, v, NULL, 0), 0);
        assert_int_equal(rb_builder_finish(&bld, NULL), 0);
    }
    assert_int_equal(raft_propose_batches(h.r, 1, b.data, b.len), 2);
    assert_int_equal(h.log.end, 6);
    assert_int_equal(h.log.b[h.log.n - 1].base_offset, 4);
    assert_int_equal(h.log.b[h.log.n - 1].epoch, 1);
    assert_true(rb_crc_ok(h.log.b[h.log.n - 1].data, h.log.b[h.log.n - 1].len));
    assert_int_equal(raft_propose_batches(h.r, 1, b.data, b.len - 1), RAFT_ERR_INVALID); /* torn */
    buf_free(&b);
    struct raft_replica_info vi[3], oi[2];
    struct raft_quorum_info qi = {.voters = vi, .max_voters = 3, .observers = oi, .max_observers = 2};
    raft_describe(h.r, &qi);
    assert_int_equal(qi.leader_id, 1);
    assert_int_equal(qi.leader_epoch, 1);
    assert_int_equal(qi.nvoters, 1);
    assert_int_equal(qi.voters[0].replica_id, 1);
    h_free(&h);

    /* restart: a former only voter comes back leader of a new epoch */
    h_init(&h);
    log_add(&h.log, 1);
    quorum_state_data_t qs;
    quorum_state_data_init(&qs);
    qs.leader_epoch = 1;
    qs.leader_id = 1;
    qs.voted_id = 1;
    h_start(&h, 1, one, 1, &qs);
    h_tick(&h, 0);
    assert_int_equal(raft_role(h.r), RAFT_LEADER);
    assert_int_equal(raft_epoch(h.r), 2);
    h_free(&h);
}

static void test_vote_rules(void **state)
{
    (void)state;
    struct h h;
    h_init(&h);
    log_add(&h.log, 1);
    log_add(&h.log, 1);
    log_add(&h.log, 2); /* last (epoch 2, end 3) */
    h_start(&h, 1, VOTERS3, 3, NULL);
    h_tick(&h, 0);
    struct arena a = ARENA_INIT;

    /* a candidate with an up-to-date log gets the vote, persisted first */
    h_clear(&h);
    struct raft_msg m = vote_req(&a, 2, 3, 2, 3, false, 7);
    raft_receive(h.r, 2, &m);
    struct out *p = h_last(&h, RAFT_OUT_PERSIST, 0);
    struct out *s = h_last(&h, RAFT_OUT_SEND, RAFT_MSG_VOTE_RESP);
    assert_non_null(p);
    assert_int_equal(p->q_voted, 2);
    assert_int_equal(p->q_epoch, 3);
    assert_true(h_index(&h, p) < h_index(&h, s));
    assert_true(vote_answer(s)->vote_granted);
    assert_int_equal(s->msg.correlation_id, 7);
    assert_int_equal(raft_voted_id(h.r), 2);

    /* one vote per epoch */
    h_clear(&h);
    m = vote_req(&a, 3, 3, 2, 10, false, 8);
    raft_receive(h.r, 3, &m);
    assert_false(vote_answer(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_VOTE_RESP))->vote_granted);
    /* the same candidate asking again gets the same answer */
    m = vote_req(&a, 2, 3, 2, 3, false, 9);
    raft_receive(h.r, 2, &m);
    assert_true(vote_answer(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_VOTE_RESP))->vote_granted);

    /* a higher epoch with a shorter log: epoch adopted, vote refused */
    h_clear(&h);
    m = vote_req(&a, 3, 4, 2, 2, false, 10);
    raft_receive(h.r, 3, &m);
    assert_int_equal(raft_epoch(h.r), 4);
    assert_false(vote_answer(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_VOTE_RESP))->vote_granted);
    assert_int_equal(raft_voted_id(h.r), -1);
    /* older last epoch, longer log: still behind */
    m = vote_req(&a, 3, 4, 1, 50, false, 11);
    raft_receive(h.r, 3, &m);
    assert_false(vote_answer(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_VOTE_RESP))->vote_granted);

    /* a pre-vote is granted on the log alone and changes nothing durable */
    h_clear(&h);
    m = vote_req(&a, 3, 4, 2, 3, true, 12);
    raft_receive(h.r, 3, &m);
    s = h_last(&h, RAFT_OUT_SEND, RAFT_MSG_VOTE_RESP);
    assert_true(vote_answer(s)->vote_granted);
    assert_true(s->msg.pre_vote);
    assert_null(h_last(&h, RAFT_OUT_PERSIST, 0));
    assert_int_equal(raft_voted_id(h.r), -1);

    /* invalid: a standard vote whose last epoch is not below its epoch */
    m = vote_req(&a, 3, 4, 4, 3, false, 13);
    raft_receive(h.r, 3, &m);
    assert_int_equal(vote_answer(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_VOTE_RESP))->error_code, KERR_INVALID_REQUEST);
    /* stale epoch */
    m = vote_req(&a, 3, 2, 1, 3, false, 14);
    raft_receive(h.r, 3, &m);
    assert_int_equal(vote_answer(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_VOTE_RESP))->error_code,
                     KERR_FENCED_LEADER_EPOCH);
    /* not a voter of ours */
    m = vote_req(&a, 9, 5, 2, 3, false, 15);
    raft_receive(h.r, 9, &m);
    const vote_response_partition_data_t *vp = vote_answer(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_VOTE_RESP));
    assert_false(vp->vote_granted);
    assert_int_equal(vp->error_code, KERR_INCONSISTENT_VOTER_SET);
    assert_int_equal(raft_voted_id(h.r), -1);
    assert_int_equal(raft_epoch(h.r), 4); /* and it does not move our epoch */
    /* another cluster */
    vote_request_t *q = (vote_request_t *)vote_req(&a, 3, 5, 2, 3, false, 16).u.vote_req;
    q->cluster_id = KSTR_LIT("other");
    m = (struct raft_msg){.type = RAFT_MSG_VOTE_REQ, .version = 1, .correlation_id = 16};
    m.u.vote_req = q;
    raft_receive(h.r, 3, &m);
    assert_int_equal(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_VOTE_RESP)->msg.u.vote_resp->error_code,
                     KERR_INCONSISTENT_CLUSTER_ID);
    assert_int_equal(raft_get_stats(h.r)->invariant_violations, 0);
    arena_free(&a);
    h_free(&h);
}

static void test_prevote_follower(void **state)
{
    (void)state;
    struct h h;
    h_init(&h);
    log_add(&h.log, 1);
    quorum_state_data_t qs;
    quorum_state_data_init(&qs);
    qs.leader_epoch = 1;
    qs.leader_id = 2;
    h_start(&h, 1, VOTERS3, 3, &qs);
    h_tick(&h, 0);
    assert_int_equal(raft_role(h.r), RAFT_FOLLOWER);
    struct arena a = ARENA_INIT;
    /* not heard from the leader yet: a pre-vote may be granted */
    struct raft_msg m = vote_req(&a, 3, 1, 1, 1, true, 1);
    raft_receive(h.r, 3, &m);
    assert_true(vote_answer(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_VOTE_RESP))->vote_granted);
    /* a successful fetch from the leader... */
    struct out *f = h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_REQ);
    assert_non_null(f);
    assert_int_equal(f->to, 2);
    const fetch_request_fetch_partition_t *fp = &f->msg.u.fetch_req->topics.a[0].partitions.a[0];
    assert_int_equal(fp->fetch_offset, 1);
    assert_int_equal(fp->last_fetched_epoch, 1);
    struct raft_msg r;
    fetch_response_partition_data_t *p = fetch_resp(&a, &r, 2, 1, f->msg.correlation_id);
    p->high_watermark = 1;
    raft_receive(h.r, 2, &r);
    assert_int_equal(raft_high_watermark(h.r), 1);
    /* ...and pre-votes are refused: the leader is alive */
    m = vote_req(&a, 3, 1, 1, 1, true, 2);
    raft_receive(h.r, 3, &m);
    assert_false(vote_answer(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_VOTE_RESP))->vote_granted);
    /* standard votes in the leader's epoch are refused too */
    m = vote_req(&a, 3, 1, 0, 0, false, 3);
    raft_receive(h.r, 3, &m);
    assert_false(vote_answer(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_VOTE_RESP))->vote_granted);
    /* after the fetch timeout it stands itself, asking pre-votes first */
    h_tick(&h, 2500);
    assert_int_equal(raft_role(h.r), RAFT_PROSPECTIVE);
    assert_int_equal(raft_epoch(h.r), 1);
    arena_free(&a);
    h_free(&h);

    /* EndQuorumEpoch: the leader's first preferred successor stands at once */
    h_init(&h);
    log_add(&h.log, 1);
    h_start(&h, 1, VOTERS3, 3, &qs);
    h_tick(&h, 0);
    end_quorum_epoch_request_t *q = end_quorum_epoch_request_new_array(&a, 1);
    q->topics.a = end_quorum_epoch_request_topic_data_new_array(&a, 1);
    q->topics.n = 1;
    q->topics.a[0].topic_name = KSTR_LIT(RAFT_METADATA_TOPIC);
    q->topics.a[0].partitions.a = end_quorum_epoch_request_partition_data_new_array(&a, 1);
    q->topics.a[0].partitions.n = 1;
    end_quorum_epoch_request_partition_data_t *ep = &q->topics.a[0].partitions.a[0];
    ep->leader_id = 2;
    ep->leader_epoch = 1;
    ep->preferred_candidates.a = end_quorum_epoch_request_replica_info_new_array(&a, 2);
    ep->preferred_candidates.n = 2;
    ep->preferred_candidates.a[0].candidate_id = 1;
    ep->preferred_candidates.a[1].candidate_id = 3;
    m = (struct raft_msg){.type = RAFT_MSG_END_EPOCH_REQ, .version = 1, .correlation_id = 5};
    m.u.end_req = q;
    raft_receive(h.r, 2, &m);
    struct out *er = h_last(&h, RAFT_OUT_SEND, RAFT_MSG_END_EPOCH_RESP);
    assert_non_null(er);
    assert_int_equal(er->msg.u.end_resp->topics.a[0].partitions.a[0].error_code, 0);
    /* first in line: no wait at all */
    assert_int_equal(raft_role(h.r), RAFT_PROSPECTIVE);
    arena_free(&a);
    h_free(&h);
}

static void test_leader_fetch_validation(void **state)
{
    (void)state;
    struct h h;
    h_init(&h);
    for (int i = 0; i < 5; i++)
        log_add(&h.log, 1); /* 0..4 epoch 1 */
    for (int i = 0; i < 5; i++)
        log_add(&h.log, 2); /* 5..9 epoch 2 */
    quorum_state_data_t qs;
    quorum_state_data_init(&qs);
    qs.leader_epoch = 2;
    h_start(&h, 1, VOTERS3, 3, &qs);
    h_tick(&h, 0);
    elect(&h);
    assert_int_equal(raft_epoch(h.r), 3);
    assert_int_equal(h.log.end, 11); /* LeaderChange at 10 */
    assert_int_equal(h.log.b[10].epoch, 3);
    struct arena a = ARENA_INIT;

    /* follower with a divergent epoch-1 tail: truncate to where epoch 1 ends */
    h_clear(&h);
    struct raft_msg m = fetch_req(&a, 2, 3, 8, 1, 0, 100);
    raft_receive(h.r, 2, &m);
    const fetch_response_partition_data_t *p = fetch_answer(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_RESP));
    assert_int_equal(p->diverging_epoch.epoch, 1);
    assert_int_equal(p->diverging_epoch.end_offset, 5);
    assert_int_equal(p->records.len, 0);
    /* an epoch we never had (2 < 2.5 < 3): answer the largest below */
    m = fetch_req(&a, 2, 3, 12, 2, 0, 101);
    raft_receive(h.r, 2, &m);
    p = fetch_answer(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_RESP));
    assert_int_equal(p->diverging_epoch.epoch, 2);
    assert_int_equal(p->diverging_epoch.end_offset, 10);
    /* a consistent prefix gets records */
    m = fetch_req(&a, 2, 3, 5, 1, 0, 102);
    raft_receive(h.r, 2, &m);
    p = fetch_answer(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_RESP));
    assert_int_equal(p->diverging_epoch.epoch, -1);
    assert_true(p->records.len > 0);
    assert_int_equal(p->high_watermark, -1); /* not established in epoch 3 yet */

    /* Raft's commit rule: a majority at offset 10 has every record of
     * epochs 1-2 but not the leader's own first record: nothing commits */
    raft_flushed(h.r, 11);
    m = fetch_req(&a, 2, 3, 10, 2, 0, 103);
    raft_receive(h.r, 2, &m);
    assert_int_equal(raft_high_watermark(h.r), -1);
    assert_null(h_last(&h, RAFT_OUT_COMMIT, 0));
    /* once the LeaderChange record is on a majority, all of it commits */
    m = fetch_req(&a, 3, 3, 11, 3, 0, 104);
    raft_receive(h.r, 3, &m);
    assert_int_equal(raft_high_watermark(h.r), 11);
    assert_int_equal(h_last(&h, RAFT_OUT_COMMIT, 0)->value, 11);
    struct raft_replica_info vi[3];
    struct raft_quorum_info qi = {.voters = vi, .max_voters = 3};
    raft_describe(h.r, &qi);
    assert_int_equal(qi.high_watermark, 11);
    assert_int_equal(qi.nvoters, 3);
    assert_int_equal(qi.voters[1].replica_id, 2);
    assert_int_equal(qi.voters[1].log_end_offset, 10);
    assert_int_equal(qi.voters[2].log_end_offset, 11);

    /* wrong epochs */
    m = fetch_req(&a, 2, 2, 11, 2, 0, 105);
    raft_receive(h.r, 2, &m);
    assert_int_equal(fetch_answer(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_RESP))->error_code,
                     KERR_FENCED_LEADER_EPOCH);
    m = fetch_req(&a, 2, 4, 11, 3, 0, 106);
    raft_receive(h.r, 2, &m);
    assert_int_equal(fetch_answer(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_RESP))->error_code,
                     KERR_UNKNOWN_LEADER_EPOCH);
    /* malformed */
    m = fetch_req(&a, 2, 3, -1, 3, 0, 107);
    raft_receive(h.r, 2, &m);
    assert_int_equal(fetch_answer(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_RESP))->error_code, KERR_INVALID_REQUEST);
    m = fetch_req(&a, 2, 3, 11, 4, 0, 108); /* last fetched epoch above the leader's */
    raft_receive(h.r, 2, &m);
    assert_int_equal(fetch_answer(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_RESP))->error_code, KERR_INVALID_REQUEST);

    /* Node 3 committed 11 after node 2 last heard a high watermark (-1):
     * node 2's up-to-date fetch is answered at once, without records,
     * so that it learns the commit now, not after max wait (KIP-1166's
     * rule; a broker whose leader died before telling it would lack a
     * created topic until the next leader commits) */
    h_clear(&h);
    m = fetch_req(&a, 2, 3, 11, 3, 500, 109);
    raft_receive(h.r, 2, &m);
    p = fetch_answer(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_RESP));
    assert_non_null(p);
    assert_int_equal(p->high_watermark, 11);
    assert_int_equal(p->records.len, 0);
    /* once it has heard it, an up-to-date fetch with max wait is parked,
     * then answered when data arrives */
    h_clear(&h);
    m = fetch_req(&a, 2, 3, 11, 3, 500, 110);
    raft_receive(h.r, 2, &m);
    assert_null(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_RESP));
    kbytes_t v = {(const uint8_t *)"y", 1};
    assert_int_equal(raft_propose(h.r, 3, &v, 1, 0), 11);
    struct out *o = h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_RESP);
    assert_non_null(o);
    assert_int_equal(o->msg.correlation_id, 110);
    assert_true(fetch_answer(o)->records.len > 0);
    assert_int_equal(fetch_answer(o)->high_watermark, 11);
    /* and an idle one (node 3 heard 11 when it committed it) times out
     * into an empty answer */
    h_clear(&h);
    m = fetch_req(&a, 3, 3, 12, 3, 500, 111);
    raft_receive(h.r, 3, &m);
    assert_null(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_RESP));
    h_tick(&h, h.now + 501);
    o = h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_RESP);
    assert_non_null(o);
    assert_int_equal(o->msg.correlation_id, 111);

    /* the leader and node 3 commit 12 while node 2 is between fetches:
     * its next fetch, with nothing to read, is answered at once with 12,
     * and the one after that waits again */
    h_clear(&h);
    raft_flushed(h.r, 12);
    assert_int_equal(raft_high_watermark(h.r), 12);
    m = fetch_req(&a, 2, 3, 12, 3, 500, 112);
    raft_receive(h.r, 2, &m);
    o = h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_RESP);
    assert_non_null(o);
    assert_int_equal(o->msg.correlation_id, 112);
    assert_int_equal(fetch_answer(o)->high_watermark, 12);
    assert_int_equal(fetch_answer(o)->records.len, 0);
    h_clear(&h);
    m = fetch_req(&a, 2, 3, 12, 3, 500, 113);
    raft_receive(h.r, 2, &m);
    assert_null(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_RESP));
    h_tick(&h, h.now + 501);
    assert_int_equal(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_RESP)->msg.correlation_id, 113);

    /* snapshot: the log start moves past a follower, which gets the id */
    struct raft_snapshot_id id;
    assert_int_equal(raft_snapshot_id_at(h.r, 11, &id), 0);
    assert_int_equal(id.epoch, 3);
    assert_int_equal(raft_snapshot_id_at(h.r, 13, &id), RAFT_ERR_INVALID); /* not committed */
    assert_int_equal(raft_snapshot_id_at(h.r, 11, &id), 0);
    assert_int_equal(memlog_write_snapshot(&h.log, &id, (const uint8_t *)"0123456789", 10), 0);
    assert_int_equal(raft_snapshot_done(h.r, &id), 0);
    assert_int_equal(h.log.start, 11);
    m = fetch_req(&a, 2, 3, 7, 1, 0, 114);
    raft_receive(h.r, 2, &m);
    p = fetch_answer(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_RESP));
    assert_int_equal(p->snapshot_id.end_offset, 11);
    assert_int_equal(p->snapshot_id.epoch, 3);
    /* and continuing right after the snapshot is fine */
    m = fetch_req(&a, 2, 3, 11, 3, 0, 115);
    raft_receive(h.r, 2, &m);
    p = fetch_answer(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_RESP));
    assert_int_equal(p->snapshot_id.epoch, -1);
    assert_true(p->records.len > 0);
    assert_int_equal(raft_get_stats(h.r)->invariant_violations, 0);
    arena_free(&a);
    h_free(&h);
}

static void test_follower_truncate_and_snapshot(void **state)
{
    (void)state;
    struct h h;
    h_init(&h);
    for (int i = 0; i < 3; i++)
        log_add(&h.log, 1);
    for (int i = 0; i < 3; i++)
        log_add(&h.log, 2); /* uncommitted epoch-2 tail 3..5 */
    quorum_state_data_t qs;
    quorum_state_data_init(&qs);
    qs.leader_epoch = 4;
    qs.leader_id = 3;
    h_start(&h, 1, VOTERS3, 3, &qs);
    h_tick(&h, 0);
    struct arena a = ARENA_INIT;
    struct out *f = h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_REQ);
    assert_non_null(f);
    /* the leader never had epoch 2: it says epoch 1 ends at 3 */
    struct raft_msg r;
    fetch_response_partition_data_t *p = fetch_resp(&a, &r, 3, 4, f->msg.correlation_id);
    p->diverging_epoch.epoch = 1;
    p->diverging_epoch.end_offset = 3;
    h_clear(&h);
    raft_receive(h.r, 3, &r);
    assert_int_equal(h.log.end, 3);
    assert_int_equal(raft_get_stats(h.r)->truncations, 1);
    f = h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_REQ);
    assert_non_null(f);
    assert_int_equal(f->msg.u.fetch_req->topics.a[0].partitions.a[0].fetch_offset, 3);
    assert_int_equal(f->msg.u.fetch_req->topics.a[0].partitions.a[0].last_fetched_epoch, 1);

    /* then the leader's log start is past us: download its snapshot */
    p = fetch_resp(&a, &r, 3, 4, f->msg.correlation_id);
    p->snapshot_id.end_offset = 40;
    p->snapshot_id.epoch = 4;
    h_clear(&h);
    raft_receive(h.r, 3, &r);
    struct out *fs = h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_SNAPSHOT_REQ);
    assert_non_null(fs);
    const fetch_snapshot_request_partition_snapshot_t *sp = &fs->msg.u.fsnap_req->topics.a[0].partitions.a[0];
    assert_int_equal(sp->snapshot_id.end_offset, 40);
    assert_int_equal(sp->position, 0);
    const char *content = "snapshot-bytes-in-two-chunks";
    int32_t total = (int32_t)strlen(content);
    for (int chunk = 0; chunk < 2; chunk++) {
        fetch_snapshot_response_t *s = fetch_snapshot_response_new_array(&a, 1);
        s->topics.a = fetch_snapshot_response_topic_snapshot_new_array(&a, 1);
        s->topics.n = 1;
        s->topics.a[0].name = KSTR_LIT(RAFT_METADATA_TOPIC);
        s->topics.a[0].partitions.a = fetch_snapshot_response_partition_snapshot_new_array(&a, 1);
        s->topics.a[0].partitions.n = 1;
        fetch_snapshot_response_partition_snapshot_t *ps = &s->topics.a[0].partitions.a[0];
        ps->current_leader.leader_id = 3;
        ps->current_leader.leader_epoch = 4;
        ps->snapshot_id.end_offset = 40;
        ps->snapshot_id.epoch = 4;
        ps->size = total;
        ps->position = chunk == 0 ? 0 : 10;
        ps->unaligned_records = (krecords_t){(const uint8_t *)content + ps->position,
                                             chunk == 0 ? 10 : total - 10, NULL, 0};
        struct raft_msg sm = {.type = RAFT_MSG_FETCH_SNAPSHOT_RESP, .version = 1, .correlation_id = fs->msg.correlation_id};
        sm.u.fsnap_resp = s;
        h_clear(&h);
        raft_receive(h.r, 3, &sm);
        fs = h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_SNAPSHOT_REQ);
        if (chunk == 0) {
            assert_non_null(fs);
            assert_int_equal(fs->msg.u.fsnap_req->topics.a[0].partitions.a[0].position, 10);
        }
    }
    struct out *ld = h_last(&h, RAFT_OUT_LOAD_SNAPSHOT, 0);
    assert_non_null(ld);
    assert_int_equal(ld->value, 40);
    assert_int_equal(h.log.start, 40);
    assert_int_equal(h.log.end, 40);
    assert_int_equal(raft_high_watermark(h.r), 40);
    struct raft_snapshot_id id = {40, 4};
    const struct memlog_snapshot *ms = memlog_snapshot(&h.log, &id);
    assert_non_null(ms);
    assert_memory_equal(ms->data.data, content, (size_t)total);
    /* next Fetch continues after the snapshot */
    f = h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_REQ);
    assert_non_null(f);
    assert_int_equal(f->msg.u.fetch_req->topics.a[0].partitions.a[0].fetch_offset, 40);
    assert_int_equal(f->msg.u.fetch_req->topics.a[0].partitions.a[0].last_fetched_epoch, 4);
    assert_int_equal(raft_get_stats(h.r)->invariant_violations, 0);
    assert_int_equal(raft_get_stats(h.r)->protocol_errors, 0);
    arena_free(&a);
    h_free(&h);
}

static void test_restart_states(void **state)
{
    (void)state;
    quorum_state_data_t qs;
    quorum_state_data_init(&qs);
    struct arena a = ARENA_INIT;
    struct h h;

    /* a former leader comes back resigned: no second term in its epoch,
     * no vote in it */
    h_init(&h);
    log_add(&h.log, 5);
    qs.leader_epoch = 5;
    qs.leader_id = 1;
    qs.voted_id = 1;
    h_start(&h, 1, VOTERS3, 3, &qs);
    h_tick(&h, 0);
    assert_int_equal(raft_role(h.r), RAFT_RESIGNED);
    assert_int_equal(raft_epoch(h.r), 5);
    assert_non_null(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_END_EPOCH_REQ));
    struct raft_msg m = vote_req(&a, 2, 5, 4, 9, false, 1);
    raft_receive(h.r, 2, &m);
    assert_false(vote_answer(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_VOTE_RESP))->vote_granted);
    h_free(&h);

    /* a candidate that lost to a known leader follows it after a restart */
    h_init(&h);
    qs.leader_epoch = 3;
    qs.leader_id = 2;
    qs.voted_id = 1;
    h_start(&h, 1, VOTERS3, 3, &qs);
    h_tick(&h, 0);
    assert_int_equal(raft_role(h.r), RAFT_FOLLOWER);
    assert_int_equal(raft_leader_id(h.r), 2);
    assert_int_equal(raft_voted_id(h.r), 1);
    h_free(&h);

    /* a state file older than the log: the log's epoch wins */
    h_init(&h);
    log_add(&h.log, 7);
    qs.leader_epoch = 3;
    qs.leader_id = -1;
    qs.voted_id = 2;
    h_start(&h, 1, VOTERS3, 3, &qs);
    h_tick(&h, 0);
    assert_int_equal(raft_epoch(h.r), 7);
    assert_int_equal(raft_voted_id(h.r), -1);
    h_free(&h);

    /* an observer never stands */
    h_init(&h);
    h_start(&h, 9, VOTERS3, 3, NULL);
    h_tick(&h, 0);
    h_tick(&h, 100000);
    assert_int_equal(raft_role(h.r), RAFT_UNATTACHED);
    assert_false(raft_is_voter(h.r));
    assert_non_null(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_FETCH_REQ));
    assert_null(h_last(&h, RAFT_OUT_SEND, RAFT_MSG_VOTE_REQ));
    h_free(&h);
    arena_free(&a);
}

static void test_bad_config(void **state)
{
    (void)state;
    struct memlog l;
    memlog_init(&l);
    struct raft_config cfg;
    raft_config_defaults(&cfg);
    cfg.node_id = 1;
    static const int32_t dup[] = {1, 2, 2};
    cfg.voters = dup;
    cfg.nvoters = 3;
    cfg.log = memlog_raft_log(&l);
    cfg.output = on_out;
    struct raft *r;
    assert_int_equal(raft_create(&cfg, NULL, &r), KERR_INVALID_CONFIG);
    cfg.voters = VOTERS3;
    cfg.request_timeout_ms = cfg.fetch_max_wait_ms; /* a parked fetch would always time out */
    assert_int_equal(raft_create(&cfg, NULL, &r), KERR_INVALID_CONFIG);
    cfg.request_timeout_ms = 2000;
    cfg.nvoters = 0;
    assert_int_equal(raft_create(&cfg, NULL, &r), KERR_INVALID_CONFIG);
    memlog_free(&l);
}

/* Hostile bytes through the decoders and odd-but-decodable messages
 * through the node: nothing may crash or be trusted. */
static void test_hostile_input(void **state)
{
    (void)state;
    struct h h;
    h_init(&h);
    log_add(&h.log, 1);
    h_start(&h, 1, VOTERS3, 3, NULL);
    h_tick(&h, 0);
    uint64_t x = 12345;
    uint8_t bytes[256];
    for (int iter = 0; iter < 20000; iter++) {
        size_t len = (size_t)(x % sizeof bytes);
        for (size_t i = 0; i < len; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            bytes[i] = (uint8_t)(x >> 56);
            /* small values make counts and lengths plausible */
            if ((x >> 20) % 3 == 0)
                bytes[i] &= 0x03;
        }
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        enum raft_msg_type t = (enum raft_msg_type)(1 + (x >> 33) % 10);
        int16_t v = (int16_t)((x >> 40) % 18);
        struct arena a = ARENA_INIT;
        struct raft_msg m;
        if (raft_msg_decode(&m, t, v, (int32_t)iter, (x >> 50) & 1, bytes, len, &a) == 0)
            raft_receive(h.r, (int32_t)(1 + (x >> 45) % 4), &m);
        arena_free(&a);
        h.nout = 0;
        arena_free(&h.ar);
    }
    /* a vote response nobody asked for changes nothing */
    struct arena a = ARENA_INIT;
    int32_t epoch = raft_epoch(h.r);
    enum raft_role role = raft_role(h.r);
    struct raft_msg m = vote_resp(&a, epoch, true, false, 424242);
    raft_receive(h.r, 2, &m);
    assert_int_equal(raft_role(h.r), role);
    /* a message from an unknown node id */
    m = vote_req(&a, -5, epoch + 1, 0, 0, false, 1);
    raft_receive(h.r, -5, &m);
    assert_int_equal(raft_voted_id(h.r), -1);
    assert_int_equal(raft_get_stats(h.r)->invariant_violations, 0);
    arena_free(&a);
    h_free(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_epoch_cache),
        cmocka_unit_test(test_single_voter),
        cmocka_unit_test(test_vote_rules),
        cmocka_unit_test(test_prevote_follower),
        cmocka_unit_test(test_leader_fetch_validation),
        cmocka_unit_test(test_follower_truncate_and_snapshot),
        cmocka_unit_test(test_restart_states),
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_hostile_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
