/* The Raft loop and its transport. See quorum.h. */
#include "quorum/quorum.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "net/kclient.h"
#include "proto/gen/describe_quorum_response.h"
#include "proto/kerr.h"
#include "quorum/qstate.h"
#include "quorum/rlog.h"
#include "raft/raft_msg.h"
#include "util/loopwatch.h"
#include "util/thread.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/slog.h"

/* An inbound request the node never answered (a bug or a lost job) is
 * failed after this long, so its worker can close the connection. */
#define INBOUND_MAX_MS 30000
#define WIRE_VOTE_VERSION 2

struct qpeer {
    int32_t id;
    char *host;
    uint16_t port;
    struct kclient *kc; /* NULL for this node */
};

/* A closure posted from another thread. */
struct qpost {
    struct qpost *next;
    void (*fn)(void *arg);
    void *arg;
};

/* A response (or a transport failure) to a request the node sent,
 * queued so that it reaches the node outside any of its callbacks. */
struct qresp {
    struct qresp *next;
    int32_t from;
    enum raft_msg_type type; /* the request's */
    int16_t version;
    int32_t corr;
    bool pre_vote;
    int err;
    uint8_t *body;
    size_t len;
};

struct qsend_ctx {
    struct quorum *q;
    int32_t to;
    enum raft_msg_type type;
    int16_t version;
    int32_t corr;
    bool pre_vote;
};

struct quorum {
    int32_t node_id;
    char *cluster_id;
    struct qpeer *peers;
    size_t npeers;
    bool is_voter;
    struct quorum_host host;
    void (*wake)(void *arg, const struct qin *j);
    void *wake_arg;

    struct rlog *log;
    struct raft *raft;
    char *dir;

    struct ev_loop *loop;
    ev_async async;
    ev_prepare prepare;
    ev_timer timer;
    pthread_t thread;
    bool started, stopped;
    atomic_bool stop_req;

    pthread_mutex_t lock; /* inq, posts */
    struct qin *inq_head, *inq_tail;
    struct qpost *posts_head, *posts_tail;

    /* loop-private */
    struct qin *pending; /* inbound requests awaiting the node's answer */
    struct qresp *resp_head, *resp_tail;
    int32_t next_corr;
    struct arena ar;

    /* flusher */
    pthread_t fthread;
    pthread_mutex_t flock;
    pthread_cond_t fcond;
    bool fwant, fstop, fres_valid;
    int64_t fres_end;
    uint64_t fres_gen;
    int fres_rc;

    atomic_int leader_id;
    atomic_int epoch;
    atomic_int role;
    /* The node's clock: monotonic, but started at the wall clock, since
     * its timestamps end up in batches (LeaderChange) and DescribeQuorum. */
    int64_t clock_offset;
};

static int64_t qnow(const struct quorum *q) { return clock_mono_ms() + q->clock_offset; }

/* ------------------------------------------------------------------ */
/* jobs                                                                */

struct qin *qin_new(enum qin_kind kind, enum raft_msg_type type, int16_t version, bool pre_vote, int32_t from,
                    const uint8_t *body, size_t len)
{
    struct qin *j = xcalloc(1, sizeof *j);
    atomic_init(&j->refs, 2);
    atomic_init(&j->done, false);
    j->kind = kind;
    j->type = type;
    j->version = version;
    j->pre_vote = pre_vote;
    j->from = from;
    j->body = xmalloc(len ? len : 1);
    if (len)
        memcpy(j->body, body, len);
    j->len = len;
    kw_init(&j->resp);
    return j;
}

void qin_release(struct qin *j)
{
    if (!j || atomic_fetch_sub(&j->refs, 1) != 1)
        return;
    kw_free(&j->resp);
    free(j->body);
    free(j);
}

static void job_done(struct quorum *q, struct qin *j, int16_t error)
{
    j->error = error;
    atomic_store_explicit(&j->done, true, memory_order_release);
    qin_release(j);
    if (q->wake)
        q->wake(q->wake_arg, j);
}

/* ------------------------------------------------------------------ */
/* small accessors                                                     */

struct ev_loop *quorum_loop(struct quorum *q) { return q->loop; }
struct raft *quorum_raft(struct quorum *q) { return q->raft; }
struct rlog *quorum_rlog(struct quorum *q) { return q->log; }
int32_t quorum_leader_id(const struct quorum *q) { return atomic_load(&q->leader_id); }
int32_t quorum_epoch(const struct quorum *q) { return atomic_load(&q->epoch); }
bool quorum_is_voter(const struct quorum *q) { return q->is_voter; }
int32_t quorum_node_id(const struct quorum *q) { return q->node_id; }
bool quorum_on_loop(const struct quorum *q) { return q->started && pthread_equal(pthread_self(), q->thread); }

bool quorum_voter_address(const struct quorum *q, int32_t id, const char **host, uint16_t *port)
{
    for (size_t i = 0; i < q->npeers; i++)
        if (q->peers[i].id == id) {
            *host = q->peers[i].host;
            *port = q->peers[i].port;
            return true;
        }
    return false;
}

static struct qpeer *peer(struct quorum *q, int32_t id)
{
    for (size_t i = 0; i < q->npeers; i++)
        if (q->peers[i].id == id)
            return &q->peers[i];
    return NULL;
}

/* ------------------------------------------------------------------ */
/* outbound                                                            */

static void raw_done(void *ctx, int err, int16_t version, const uint8_t *body, size_t len)
{
    struct qsend_ctx *c = ctx;
    struct quorum *q = c->q;
    struct qresp *r = xcalloc(1, sizeof *r);
    r->from = c->to;
    r->type = c->type;
    r->version = c->version;
    r->corr = c->corr;
    r->pre_vote = c->pre_vote;
    r->err = err;
    (void)version;
    if (!err) {
        r->body = xmalloc(len ? len : 1);
        if (len)
            memcpy(r->body, body, len);
        r->len = len;
    }
    if (q->resp_tail)
        q->resp_tail->next = r;
    else
        q->resp_head = r;
    q->resp_tail = r;
    free(c);
}

/* VoteRequest v2 = the v1 body with PreVote after LastOffset of the one
 * partition. With no tagged fields, v1 ends with three empty tag
 * sections (partition, topic, request); the byte goes before them. */
static bool vote_v1_to_v2(struct buf *b, bool pre_vote)
{
    if (b->len < 3 || b->data[b->len - 1] || b->data[b->len - 2] || b->data[b->len - 3])
        return false;
    buf_put_u8(b, 0);
    memmove(b->data + b->len - 3, b->data + b->len - 4, 3);
    b->data[b->len - 4] = pre_vote ? 1 : 0;
    return true;
}

static void send_request(struct quorum *q, int32_t to, const struct raft_msg *m)
{
    struct qpeer *p = peer(q, to);
    struct qsend_ctx *c = xcalloc(1, sizeof *c);
    c->q = q;
    c->to = to;
    c->type = m->type;
    c->version = m->version;
    c->corr = m->correlation_id;
    c->pre_vote = m->pre_vote;
    if (!p || !p->kc) {
        raw_done(c, KERR_BROKER_NOT_AVAILABLE, 0, NULL, 0);
        return;
    }
    struct kwriter w;
    kw_init(&w);
    raft_msg_encode(&w, m);
    int16_t wire = m->version;
    if (m->type == RAFT_MSG_VOTE_REQ) {
        wire = WIRE_VOTE_VERSION;
        if (!vote_v1_to_v2(&w.b, m->pre_vote)) {
            kw_free(&w);
            raw_done(c, KERR_INVALID_REQUEST, 0, NULL, 0);
            return;
        }
    }
    if (kclient_send_raw(p->kc, raft_msg_api_key(m->type), wire, w.b.data, w.b.len, raw_done, c) != 0)
        raw_done(c, KERR_NETWORK_EXCEPTION, 0, NULL, 0);
    kw_free(&w);
}

/* A response to an inbound request: into its job. */
static void send_response(struct quorum *q, const struct raft_msg *m)
{
    for (struct qin **pp = &q->pending; *pp; pp = &(*pp)->next) {
        struct qin *j = *pp;
        if (j->corr != m->correlation_id)
            continue;
        *pp = j->next;
        raft_msg_encode(&j->resp, m);
        job_done(q, j, 0);
        return;
    }
    /* the request's connection died, or it was expired: nobody waits */
}

static int64_t raft_log_end_of(struct quorum *q);

/* ------------------------------------------------------------------ */
/* the node's outputs                                                  */

static void on_output(void *arg, const struct raft_output *o)
{
    struct quorum *q = arg;
    switch (o->type) {
    case RAFT_OUT_SEND:
        if (raft_msg_is_request(o->u.send.msg->type))
            send_request(q, o->u.send.to, o->u.send.msg);
        else
            send_response(q, o->u.send.msg);
        break;
    case RAFT_OUT_PERSIST: {
        int e = qstate_write(q->dir, o->u.persist);
        if (e) {
            /* A vote that is not durable could be cast twice after a
             * restart: Kafka stops here too. */
            slog_error("metadata quorum: cannot write %s/%s: %s; stopping", q->dir, QSTATE_FILE, strerror(e));
            abort();
        }
        break;
    }
    case RAFT_OUT_FLUSH:
        pthread_mutex_lock(&q->flock);
        q->fwant = true;
        pthread_cond_signal(&q->fcond);
        pthread_mutex_unlock(&q->flock);
        break;
    case RAFT_OUT_COMMIT:
        if (q->host.commit)
            q->host.commit(q->host.arg, o->u.commit.high_watermark);
        break;
    case RAFT_OUT_LOAD_SNAPSHOT:
        if (q->host.load_snapshot)
            q->host.load_snapshot(q->host.arg, &o->u.load_snapshot);
        break;
    case RAFT_OUT_ROLE: {
        int32_t prev_leader = atomic_load(&q->leader_id), prev_epoch = atomic_load(&q->epoch);
        atomic_store(&q->leader_id, o->u.role.leader_id);
        atomic_store(&q->epoch, o->u.role.epoch);
        atomic_store(&q->role, (int)o->u.role.role);
        if (o->u.role.leader_id != prev_leader || o->u.role.epoch != prev_epoch)
            slog_info("metadata quorum: %s, epoch %d, leader %d", raft_role_name(o->u.role.role),
                      (int)o->u.role.epoch, (int)o->u.role.leader_id);
        else
            slog_debug("metadata quorum: %s, epoch %d, leader %d", raft_role_name(o->u.role.role),
                       (int)o->u.role.epoch, (int)o->u.role.leader_id);
        if (q->host.role)
            q->host.role(q->host.arg, o->u.role.role, o->u.role.epoch, o->u.role.leader_id,
                         raft_log_end_of(q));
        break;
    }
    }
}

/* ------------------------------------------------------------------ */
/* error responses for requests the transport could not deliver        */

static void deliver_error(struct quorum *q, const struct qresp *r, int16_t err)
{
    struct raft_msg m = {.type = (enum raft_msg_type)(r->type + 1), .version = r->version,
                         .correlation_id = r->corr, .pre_vote = r->pre_vote};
    vote_response_t vr;
    begin_quorum_epoch_response_t br;
    end_quorum_epoch_response_t er;
    fetch_response_t fr;
    fetch_snapshot_response_t sr;
    switch (m.type) {
    case RAFT_MSG_VOTE_RESP:
        vote_response_init(&vr);
        vr.error_code = err;
        m.u.vote_resp = &vr;
        break;
    case RAFT_MSG_BEGIN_EPOCH_RESP:
        begin_quorum_epoch_response_init(&br);
        br.error_code = err;
        m.u.begin_resp = &br;
        break;
    case RAFT_MSG_END_EPOCH_RESP:
        end_quorum_epoch_response_init(&er);
        er.error_code = err;
        m.u.end_resp = &er;
        break;
    case RAFT_MSG_FETCH_RESP:
        fetch_response_init(&fr);
        fr.error_code = err;
        m.u.fetch_resp = &fr;
        break;
    case RAFT_MSG_FETCH_SNAPSHOT_RESP:
        fetch_snapshot_response_init(&sr);
        sr.error_code = err;
        m.u.fsnap_resp = &sr;
        break;
    default:
        return;
    }
    raft_receive(q->raft, r->from, &m);
}

static void deliver_response(struct quorum *q, struct qresp *r)
{
    if (r->err) {
        deliver_error(q, r, (int16_t)r->err);
        return;
    }
    struct raft_msg m;
    /* Vote v2's response has v1's layout. */
    int16_t v = r->type == RAFT_MSG_VOTE_REQ ? RAFT_VOTE_VERSION : r->version;
    if (raft_msg_decode(&m, (enum raft_msg_type)(r->type + 1), v, r->corr, r->pre_vote, r->body, r->len, &q->ar) !=
        0) {
        slog_warn("metadata quorum: malformed %s from node %d", raft_msg_type_name((enum raft_msg_type)(r->type + 1)),
                  (int)r->from);
        deliver_error(q, r, KERR_NETWORK_EXCEPTION);
    } else {
        raft_receive(q->raft, r->from, &m);
    }
    arena_free(&q->ar);
}

/* ------------------------------------------------------------------ */
/* DescribeQuorum                                                      */



void quorum_describe(struct quorum *q, int16_t version, struct kwriter *w)
{
    struct arena ar = ARENA_INIT;
    struct raft_replica_info voters[RAFT_MAX_VOTERS], observers[64];
    struct raft_quorum_info info = {.voters = voters, .max_voters = RAFT_MAX_VOTERS, .observers = observers,
                                    .max_observers = 64};
    raft_describe(q->raft, &info);
    describe_quorum_response_t resp;
    describe_quorum_response_init(&resp);
    resp.topics.a = describe_quorum_response_topic_data_new_array(&ar, 1);
    resp.topics.n = 1;
    resp.topics.a[0].topic_name = KSTR_LIT(RAFT_METADATA_TOPIC);
    describe_quorum_response_partition_data_t *p = describe_quorum_response_partition_data_new_array(&ar, 1);
    resp.topics.a[0].partitions.a = p;
    resp.topics.a[0].partitions.n = 1;
    p->partition_index = RAFT_METADATA_PARTITION;
    if (raft_role(q->raft) != RAFT_LEADER) {
        /* Only the leader knows the replicas' progress (Kafka answers
         * the same). */
        p->error_code = KERR_NOT_LEADER_OR_FOLLOWER;
        p->error_message = KSTR_NULL;
    }
    p->leader_id = info.leader_id;
    p->leader_epoch = info.leader_epoch;
    p->high_watermark = info.high_watermark;
    p->current_voters.a = describe_quorum_response_replica_state_new_array(&ar, info.nvoters);
    p->current_voters.n = info.nvoters;
    for (int32_t i = 0; i < info.nvoters; i++) {
        describe_quorum_response_replica_state_t *s = &p->current_voters.a[i];
        s->replica_id = voters[i].replica_id;
        s->log_end_offset = voters[i].log_end_offset;
        s->last_fetch_timestamp = voters[i].last_fetch_ms;
        s->last_caught_up_timestamp = voters[i].last_caught_up_ms;
    }
    p->observers.a = describe_quorum_response_replica_state_new_array(&ar, info.nobservers);
    p->observers.n = info.nobservers;
    for (int32_t i = 0; i < info.nobservers; i++) {
        describe_quorum_response_replica_state_t *s = &p->observers.a[i];
        s->replica_id = observers[i].replica_id;
        s->log_end_offset = observers[i].log_end_offset;
        s->last_fetch_timestamp = observers[i].last_fetch_ms;
        s->last_caught_up_timestamp = observers[i].last_caught_up_ms;
    }
    /* v2: where the voters listen. */
    resp.nodes.a = describe_quorum_response_node_new_array(&ar, (int32_t)q->npeers);
    resp.nodes.n = (int32_t)q->npeers;
    for (size_t i = 0; i < q->npeers; i++) {
        describe_quorum_response_node_t *n = &resp.nodes.a[i];
        n->node_id = q->peers[i].id;
        n->listeners.a = describe_quorum_response_listener_new_array(&ar, 1);
        n->listeners.n = 1;
        n->listeners.a[0].name = KSTR_LIT("CONTROLLER");
        n->listeners.a[0].host = KSTR(q->peers[i].host);
        n->listeners.a[0].port = q->peers[i].port;
    }
    describe_quorum_response_encode(w, version, &resp);
    arena_free(&ar);
}

/* ------------------------------------------------------------------ */
/* the loop                                                            */

static int64_t raft_log_end_of(struct quorum *q)
{
    struct raft_log l = rlog_raft_log(q->log);
    return l.ops->end_offset(l.ctx);
}

/* Who sent a request, from its body (the node answers and counts by
 * node id); -1 when the body does not say (the node then refuses it). */
static int32_t sender_of(const struct raft_msg *m)
{
    switch (m->type) {
    case RAFT_MSG_VOTE_REQ: {
        const vote_request_t *r = m->u.vote_req;
        return r->topics.n > 0 && r->topics.a[0].partitions.n > 0 ? r->topics.a[0].partitions.a[0].candidate_id : -1;
    }
    case RAFT_MSG_BEGIN_EPOCH_REQ: {
        const begin_quorum_epoch_request_t *r = m->u.begin_req;
        return r->topics.n > 0 && r->topics.a[0].partitions.n > 0 ? r->topics.a[0].partitions.a[0].leader_id : -1;
    }
    case RAFT_MSG_END_EPOCH_REQ: {
        const end_quorum_epoch_request_t *r = m->u.end_req;
        return r->topics.n > 0 && r->topics.a[0].partitions.n > 0 ? r->topics.a[0].partitions.a[0].leader_id : -1;
    }
    case RAFT_MSG_FETCH_REQ:
        return m->version >= 15 ? m->u.fetch_req->replica_state.replica_id : m->u.fetch_req->replica_id;
    case RAFT_MSG_FETCH_SNAPSHOT_REQ:
        return m->u.fsnap_req->replica_id;
    default:
        return -1;
    }
}

static void handle_inbound(struct quorum *q, struct qin *j)
{
    if (j->kind == QIN_DESCRIBE) {
        quorum_describe(q, j->version, &j->resp);
        job_done(q, j, 0);
        return;
    }
    j->corr = q->next_corr++;
    if (q->next_corr < 0)
        q->next_corr = 1;
    struct raft_msg m;
    if (raft_msg_decode(&m, j->type, j->version, j->corr, j->pre_vote, j->body, j->len, &q->ar) != 0) {
        arena_free(&q->ar);
        job_done(q, j, KERR_INVALID_REQUEST);
        return;
    }
    if (j->from < 0)
        j->from = sender_of(&m);
    j->submitted_ms = qnow(q);
    j->next = q->pending;
    q->pending = j;
    raft_receive(q->raft, j->from, &m);
    arena_free(&q->ar);
}

static void expire_pending(struct quorum *q, int64_t now)
{
    for (struct qin **pp = &q->pending; *pp;) {
        struct qin *j = *pp;
        if (now - j->submitted_ms >= INBOUND_MAX_MS) {
            *pp = j->next;
            job_done(q, j, KERR_REQUEST_TIMED_OUT);
        } else {
            pp = &j->next;
        }
    }
}

static bool process_once(struct quorum *q)
{
    bool work = false;
    pthread_mutex_lock(&q->lock);
    struct qpost *posts = q->posts_head;
    q->posts_head = q->posts_tail = NULL;
    struct qin *in = q->inq_head;
    q->inq_head = q->inq_tail = NULL;
    pthread_mutex_unlock(&q->lock);

    int64_t now = qnow(q);
    raft_tick(q->raft, now);
    while (posts) {
        struct qpost *p = posts;
        posts = p->next;
        p->fn(p->arg);
        free(p);
        work = true;
    }
    while (in) {
        struct qin *j = in;
        in = j->next;
        j->next = NULL;
        handle_inbound(q, j);
        work = true;
    }
    while (q->resp_head) {
        struct qresp *r = q->resp_head;
        q->resp_head = r->next;
        if (!q->resp_head)
            q->resp_tail = NULL;
        deliver_response(q, r);
        free(r->body);
        free(r);
        work = true;
    }
    pthread_mutex_lock(&q->flock);
    bool fres = q->fres_valid;
    int64_t fend = q->fres_end;
    uint64_t fgen = q->fres_gen;
    int frc = q->fres_rc;
    q->fres_valid = false;
    pthread_mutex_unlock(&q->flock);
    if (fres) {
        work = true;
        if (frc == 0 && fgen == rlog_gen(q->log)) {
            raft_flushed(q->raft, fend);
        } else {
            if (frc != 0)
                slog_error("metadata log: flush failed: %s", kerr_name((int16_t)frc));
            /* A truncation came in between: that flush proves nothing
             * about what is there now; flush again. */
            pthread_mutex_lock(&q->flock);
            q->fwant = true;
            pthread_cond_signal(&q->fcond);
            pthread_mutex_unlock(&q->flock);
        }
    }
    expire_pending(q, now);
    if (q->host.idle)
        q->host.idle(q->host.arg);
    return work || q->resp_head;
}

static void arm_timer(struct quorum *q)
{
    int64_t now = qnow(q);
    int64_t d = raft_next_deadline(q->raft) - now;
    if (d < 1)
        d = 1;
    if (d > 1000)
        d = 1000; /* pending inbound expiry and the owner's timers */
    ev_timer_stop(q->loop, &q->timer);
    ev_timer_set(&q->timer, (double)d / 1000.0, 0.);
    ev_timer_start(q->loop, &q->timer);
}

static void process(struct quorum *q)
{
    for (int i = 0; i < 64 && process_once(q); i++)
        ;
    arm_timer(q);
}

static void on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
    (void)loop;
    (void)revents;
    process(w->data);
}

static void on_async(struct ev_loop *loop, ev_async *w, int revents)
{
    (void)revents;
    struct quorum *q = w->data;
    if (atomic_load(&q->stop_req))
        ev_break(loop, EVBREAK_ALL);
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)w;
    (void)revents;
    /* the prepare watcher ticks the node */
}

static void *loop_main(void *arg)
{
    struct quorum *q = arg;
    thread_set_name("samsa-quorum");
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    struct loopwatch lw;
    loopwatch_start(&lw, q->loop, "quorum");
    ev_run(q->loop, 0);
    loopwatch_stop(&lw, q->loop);
    return NULL;
}

static void *flusher_main(void *arg)
{
    struct quorum *q = arg;
    thread_set_name("samsa-qflush");
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pthread_mutex_lock(&q->flock);
    for (;;) {
        while (!q->fwant && !q->fstop)
            pthread_cond_wait(&q->fcond, &q->flock);
        if (q->fstop)
            break;
        q->fwant = false;
        pthread_mutex_unlock(&q->flock);
        int64_t end;
        uint64_t gen;
        int rc = rlog_flush(q->log, &end, &gen);
        pthread_mutex_lock(&q->flock);
        q->fres_valid = true;
        q->fres_end = end;
        q->fres_gen = gen;
        q->fres_rc = rc;
        ev_async_send(q->loop, &q->async);
    }
    pthread_mutex_unlock(&q->flock);
    return NULL;
}

/* ------------------------------------------------------------------ */
/* any thread                                                          */

void quorum_post(struct quorum *q, void (*fn)(void *arg), void *arg)
{
    struct qpost *p = xcalloc(1, sizeof *p);
    p->fn = fn;
    p->arg = arg;
    pthread_mutex_lock(&q->lock);
    if (q->posts_tail)
        q->posts_tail->next = p;
    else
        q->posts_head = p;
    q->posts_tail = p;
    pthread_mutex_unlock(&q->lock);
    ev_async_send(q->loop, &q->async);
}

void quorum_wake(struct quorum *q) { ev_async_send(q->loop, &q->async); }

void quorum_submit(struct quorum *q, struct qin *j)
{
    j->next = NULL;
    pthread_mutex_lock(&q->lock);
    bool stopping = q->stopped;
    if (!stopping) {
        if (q->inq_tail)
            q->inq_tail->next = j;
        else
            q->inq_head = j;
        q->inq_tail = j;
    }
    pthread_mutex_unlock(&q->lock);
    if (stopping) {
        job_done(q, j, KERR_NOT_CONTROLLER);
        return;
    }
    ev_async_send(q->loop, &q->async);
}

/* ------------------------------------------------------------------ */
/* open / start / stop / close                                         */

/* samsa.log.level=debug: the Raft node's transitions and messages, as
 * the simulation prints them, for diagnosing elections on a live cluster. */
static void raft_trace_to_log(void *arg, const struct raft *r, const char *line)
{
    (void)arg;
    (void)r;
    slog_debug("raft: %s", line);
}

int quorum_open(const struct quorum_config *cfg, struct quorum **out, char *err, size_t errlen)
{
    *out = NULL;
    struct quorum *q = xcalloc(1, sizeof *q);
    q->node_id = cfg->node_id;
    q->cluster_id = cfg->cluster_id && cfg->cluster_id[0] ? xstrdup(cfg->cluster_id) : NULL;
    q->host = cfg->host;
    q->wake = cfg->wake;
    q->wake_arg = cfg->wake_arg;
    q->dir = xstrdup(cfg->dir);
    q->next_corr = 1;
    q->clock_offset = clock_wall_ms() - clock_mono_ms();
    atomic_init(&q->leader_id, -1);
    atomic_init(&q->epoch, 0);
    atomic_init(&q->role, RAFT_UNATTACHED);
    atomic_init(&q->stop_req, false);
    pthread_mutex_init(&q->lock, NULL);
    pthread_mutex_init(&q->flock, NULL);
    pthread_cond_init(&q->fcond, NULL);
    q->loop = ev_loop_new(EVFLAG_AUTO);
    ev_async_init(&q->async, on_async);
    q->async.data = q;
    ev_async_start(q->loop, &q->async);
    ev_prepare_init(&q->prepare, on_prepare);
    q->prepare.data = q;
    ev_prepare_start(q->loop, &q->prepare);
    ev_init(&q->timer, on_timer);
    q->timer.data = q;

    int32_t ids[RAFT_MAX_VOTERS];
    if (cfg->nvoters < 1 || cfg->nvoters > RAFT_MAX_VOTERS) {
        snprintf(err, errlen, "config 'controller.quorum.voters': %zu voters (1 to %d supported)", cfg->nvoters,
                 RAFT_MAX_VOTERS);
        goto fail;
    }
    q->peers = xcalloc(cfg->nvoters, sizeof *q->peers);
    q->npeers = cfg->nvoters;
    for (size_t i = 0; i < cfg->nvoters; i++) {
        struct qpeer *p = &q->peers[i];
        p->id = cfg->voters[i].id;
        p->host = xstrdup(cfg->voters[i].host);
        p->port = cfg->voters[i].port;
        ids[i] = p->id;
        if (p->id == q->node_id) {
            q->is_voter = true;
            continue;
        }
        char cid[32];
        snprintf(cid, sizeof cid, "raft-%d", (int)q->node_id);
        struct kclient_opts ko = {.host = p->host, .port = p->port, .client_id = cid,
                                  .request_timeout_ms = cfg->request_timeout_ms > 0 ? cfg->request_timeout_ms : 2000,
                                  .connect_timeout_ms = 2000, .reconnect_backoff_ms = 50};
        ko.security = cfg->security;
        p->kc = kclient_new(q->loop, &ko);
    }

    int rc = rlog_open(cfg->dir, cfg->segment_bytes, &q->log, err, errlen);
    if (rc != 0)
        goto fail;
    quorum_state_data_t qs;
    int qrc = qstate_read(cfg->dir, &qs, err, errlen);
    if (qrc < 0)
        goto fail;
    struct raft_config rc_cfg;
    raft_config_defaults(&rc_cfg);
    rc_cfg.node_id = q->node_id;
    rc_cfg.voters = ids;
    rc_cfg.nvoters = (int32_t)cfg->nvoters;
    rc_cfg.cluster_id = q->cluster_id;
    if (cfg->election_timeout_ms > 0)
        rc_cfg.election_timeout_ms = cfg->election_timeout_ms;
    if (cfg->fetch_timeout_ms > 0)
        rc_cfg.fetch_timeout_ms = cfg->fetch_timeout_ms;
    if (cfg->election_backoff_max_ms > 0)
        rc_cfg.election_backoff_max_ms = cfg->election_backoff_max_ms;
    if (cfg->request_timeout_ms > rc_cfg.fetch_max_wait_ms)
        rc_cfg.request_timeout_ms = cfg->request_timeout_ms;
    if (cfg->retry_backoff_ms >= 0)
        rc_cfg.retry_backoff_ms = cfg->retry_backoff_ms;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    rc_cfg.random_seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)q->node_id * 0x9E3779B97F4A7C15ull;
    rc_cfg.log = rlog_raft_log(q->log);
    rc_cfg.output = on_output;
    rc_cfg.output_arg = q;
    rc = raft_create(&rc_cfg, qrc == 0 ? &qs : NULL, &q->raft);
    if (rc != 0) {
        snprintf(err, errlen, "metadata quorum: cannot start the Raft node: %s", kerr_name((int16_t)rc));
        goto fail;
    }
    if (slog_get_level() <= SLOG_DEBUG)
        raft_set_trace(q->raft, raft_trace_to_log, NULL);
    *out = q;
    return 0;
fail:
    quorum_close(q, false);
    return -1;
}

void quorum_start(struct quorum *q)
{
    if (pthread_create(&q->fthread, NULL, flusher_main, q) != 0) {
        slog_error("metadata quorum: cannot start the flusher thread");
        abort();
    }
    q->started = true;
    if (pthread_create(&q->thread, NULL, loop_main, q) != 0) {
        slog_error("metadata quorum: cannot start the Raft thread");
        abort();
    }
}

static void resign_now(void *arg)
{
    struct quorum *q = arg;
    if (raft_role(q->raft) == RAFT_LEADER)
        (void)raft_resign(q->raft, raft_epoch(q->raft));
}

void quorum_stop(struct quorum *q, int grace_ms)
{
    if (!q || !q->started || q->stopped)
        return;
    if (q->npeers > 1 && q->is_voter && grace_ms > 0) {
        /* Graceful resignation: EndQuorumEpoch lets the others elect at
         * once instead of waiting out the fetch timeout. */
        quorum_post(q, resign_now, q);
        struct timespec d = {grace_ms / 1000, (long)(grace_ms % 1000) * 1000000L};
        nanosleep(&d, NULL);
    }
    pthread_mutex_lock(&q->lock);
    q->stopped = true;
    pthread_mutex_unlock(&q->lock);
    atomic_store(&q->stop_req, true);
    ev_async_send(q->loop, &q->async);
    pthread_join(q->thread, NULL);
    pthread_mutex_lock(&q->flock);
    q->fstop = true;
    pthread_cond_signal(&q->fcond);
    pthread_mutex_unlock(&q->flock);
    pthread_join(q->fthread, NULL);
}

void quorum_close(struct quorum *q, bool clean)
{
    if (!q)
        return;
    quorum_stop(q, 0);
    for (size_t i = 0; i < q->npeers; i++) {
        kclient_free(q->peers[i].kc);
        free(q->peers[i].host);
    }
    free(q->peers);
    /* failures queued by kclient_free and jobs nobody will answer */
    while (q->resp_head) {
        struct qresp *r = q->resp_head;
        q->resp_head = r->next;
        free(r->body);
        free(r);
    }
    while (q->pending) {
        struct qin *j = q->pending;
        q->pending = j->next;
        job_done(q, j, KERR_NOT_CONTROLLER);
    }
    while (q->inq_head) {
        struct qin *j = q->inq_head;
        q->inq_head = j->next;
        job_done(q, j, KERR_NOT_CONTROLLER);
    }
    while (q->posts_head) {
        struct qpost *p = q->posts_head;
        q->posts_head = p->next;
        free(p);
    }
    raft_destroy(q->raft);
    rlog_close(q->log, clean);
    ev_timer_stop(q->loop, &q->timer);
    ev_prepare_stop(q->loop, &q->prepare);
    ev_async_stop(q->loop, &q->async);
    ev_loop_destroy(q->loop);
    arena_free(&q->ar);
    pthread_mutex_destroy(&q->lock);
    pthread_mutex_destroy(&q->flock);
    pthread_cond_destroy(&q->fcond);
    free(q->cluster_id);
    free(q->dir);
    free(q);
}
