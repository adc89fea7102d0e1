/* The transaction coordinator's marker sender (see txn_markers_send.h).
 *
 * Jobs arrive on any thread into a queue under the lock and an ev_async
 * wakes the sender's loop; everything else lives on that loop's thread
 * alone. Each step takes the due partitions of every job, looks up their
 * leaders in the current image, and sends one WriteTxnMarkers to each
 * leader that has none in flight (Kafka's marker channel allows one in
 * flight per broker too), with one marker entry per job. Partitions
 * waiting for their broker's request in flight go with its next one, so
 * markers of transactions that end together share a request. */
#include "coord/txn_markers_send.h"

#include <ev.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "controller/controller.h"
#include "controller/image.h"
#include "coord/txn_coord.h"
#include "net/kclient.h"
#include "proto/gen/write_txn_markers_request.h"
#include "proto/gen/write_txn_markers_response.h"
#include "proto/kerr.h"
#include "util/thread.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/slog.h"

#define MARKERS_VERSION_MAX 1
/* A partition that failed retriably, or whose leader is unknown, is
 * tried again after this long against the image of that moment. */
#define RETRY_BACKOFF_MS 100
/* Kafka's marker channel uses the broker's request.timeout.ms (default
 * 30 s), the time a leader may take to get a marker to the ISR. */
#define REQUEST_TIMEOUT_MS 30000

enum { TP_PENDING, TP_INFLIGHT, TP_DONE };

/* A queued job: the caller's job copied, and per partition its state and
 * when it may be sent (monotonic ms). */
struct sjob {
    struct sjob *next;
    char *id; /* owned */
    int32_t id_len;
    int32_t txn_partition, coord_epoch;
    int64_t producer_id;
    int16_t producer_epoch;
    bool commit;
    struct txn_tp *parts; /* owned, topic strings too */
    int32_t nparts;
    uint8_t *state;
    int64_t *due;
    int32_t left;     /* partitions not TP_DONE */
    int32_t inflight; /* partitions TP_INFLIGHT */
    bool dropped;     /* forgotten: freed unreported once none is in flight */
};

/* A txn_sender_forget not yet applied to the active jobs. */
struct forget {
    int32_t txn_partition, coord_epoch;
};

/* A partition leader the sender talks to. */
struct dest {
    int32_t id;
    char host[256];
    int port;
    struct kclient *kc;
    bool inflight;
};

struct txn_sender {
    struct coord_env env;
    struct txn_coord *tc;
    struct ev_loop *loop;
    ev_async wake;
    ev_timer retry;
    pthread_t thread;
    bool started;
    atomic_bool stop;
    atomic_int pending; /* jobs queued or active */

    pthread_mutex_t lock; /* the queue and the forgets */
    struct sjob *qhead, *qtail;
    struct forget *forgets;
    int32_t nforgets, capforgets;
    struct sender_call *calls, *calls_tail; /* txn_sender_run */

    /* Loop thread only. */
    struct sjob **active;
    int32_t nactive, capactive;
    struct dest **dests; /* stable pointers: requests in flight hold them */
    int32_t ndests;
};

/* One request in flight: which partitions of which jobs it carries. */
struct sent_marker {
    struct sjob *job;
    int32_t *idx; /* into job->parts */
    int32_t n;
};
struct send_ctx {
    struct txn_sender *s;
    struct dest *d;
    struct sent_marker *m;
    int32_t n;
};

static void job_free(struct sjob *j)
{
    if (!j)
        return;
    for (int32_t i = 0; i < j->nparts; i++)
        free(j->parts[i].topic);
    free(j->parts);
    free(j->state);
    free(j->due);
    free(j->id);
    free(j);
}

static void ctx_free(struct send_ctx *x)
{
    for (int32_t i = 0; i < x->n; i++)
        free(x->m[i].idx);
    free(x->m);
    free(x);
}

static struct dest *dest_for(struct txn_sender *s, int32_t id)
{
    for (int32_t i = 0; i < s->ndests; i++)
        if (s->dests[i]->id == id)
            return s->dests[i];
    s->dests = xrealloc(s->dests, (size_t)(s->ndests + 1) * sizeof *s->dests);
    struct dest *d = xcalloc(1, sizeof *d);
    d->id = id;
    s->dests[s->ndests++] = d;
    return d;
}

/* The client for d at the address the broker registered for the
 * inter-broker listener (as Kafka's channel manager picks it); recreated
 * when that moved. False when the broker or its address is unknown, or
 * it moved while a request is in flight. Nodes do not authenticate to
 * each other (auth/sasl.c): the connection is the replica fetcher's kind,
 * plain, on the inter-broker listener. */
static bool dest_connect(struct txn_sender *s, struct dest *d, const struct mimage *img)
{
    const struct mi_broker *br = mimage_broker(img, d->id);
    if (!br)
        return false;
    const struct samsa_config *cfg = s->env.cfg;
    const char *host = NULL;
    int32_t port = 0;
    mi_broker_address(br, cfg->inter_broker_listener_name, &host, &port);
    if (!host || port <= 0)
        return false;
    if (d->kc && (strcmp(d->host, host) != 0 || d->port != port)) {
        if (d->inflight)
            return false;
        kclient_free(d->kc);
        d->kc = NULL;
    }
    if (!d->kc) {
        snprintf(d->host, sizeof d->host, "%s", host);
        d->port = port;
        char cid[64];
        snprintf(cid, sizeof cid, "broker-%d-txn-marker-sender", (int)s->env.node_id);
        struct kclient_opts ko = {.host = d->host, .port = d->port, .client_id = cid,
                                  .request_timeout_ms = REQUEST_TIMEOUT_MS,
                                  .connect_timeout_ms = (int32_t)cfg->socket_connection_setup_timeout_ms,
                                  .connect_timeout_max_ms = (int32_t)cfg->socket_connection_setup_timeout_max_ms,
                                  .recv_buffer_bytes = cfg->socket_receive_buffer_bytes};
        ko.security = s->env.to_brokers;
        d->kc = kclient_new(s->loop, &ko);
    }
    return true;
}

static void job_part_done(struct sjob *j, int32_t i)
{
    if (j->state[i] != TP_DONE) {
        j->state[i] = TP_DONE;
        j->left--;
    }
}

static void job_part_retry(struct sjob *j, int32_t i, int64_t now)
{
    j->state[i] = TP_PENDING;
    j->due[i] = now + RETRY_BACKOFF_MS;
}

/* What a leader's answer for one partition means (Kafka's
 * TransactionMarkerRequestCompletionHandler): true to send it again. */
static bool retriable(int16_t err)
{
    switch (err) {
    case KERR_UNKNOWN_TOPIC_OR_PARTITION: /* done if the topic is gone, at the retry */
    case KERR_NOT_LEADER_OR_FOLLOWER:
    case KERR_NOT_ENOUGH_REPLICAS:
    case KERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
    case KERR_REQUEST_TIMED_OUT:
    case KERR_KAFKA_STORAGE_ERROR:
    case KERR_NETWORK_EXCEPTION:
    case KERR_COORDINATOR_LOAD_IN_PROGRESS:
        return true;
    default:
        return false;
    }
}

static void partition_answer(struct sjob *j, int32_t i, int16_t err, int32_t leader, int64_t now)
{
    const struct txn_tp *tp = &j->parts[i];
    if (err == 0) {
        job_part_done(j, i);
    } else if (retriable(err)) {
        slog_debug("transaction %.*s: the marker for %s-%d failed at broker %d (%s); retrying", (int)j->id_len,
                   j->id, tp->topic, (int)tp->partition, (int)leader, kerr_name(err));
        job_part_retry(j, i, now);
    } else {
        /* INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED: a newer
         * producer or coordinator epoch has moved on; the partition needs
         * no marker from this job. The rest (CORRUPT_MESSAGE,
         * UNSUPPORTED_FOR_MESSAGE_FORMAT, ...) cannot get better by
         * trying again. */
        slog_info("transaction %.*s (producer %" PRId64 " epoch %d): the %s marker for %s-%d was refused by "
                  "broker %d (%s); not sending it again",
                  (int)j->id_len, j->id, j->producer_id, (int)j->producer_epoch, j->commit ? "COMMIT" : "ABORT",
                  tp->topic, (int)tp->partition, (int)leader, kerr_name(err));
        job_part_done(j, i);
    }
}

static const write_txn_markers_response_writable_txn_marker_partition_result_t *
find_result(const write_txn_markers_response_t *r, int64_t pid, const char *topic, int32_t partition)
{
    for (int32_t m = 0; m < r->markers.n; m++) {
        const write_txn_markers_response_writable_txn_marker_result_t *mr = &r->markers.a[m];
        if (mr->producer_id != pid)
            continue;
        for (int32_t t = 0; t < mr->topics.n; t++) {
            if (!kstr_eqc(mr->topics.a[t].name, topic))
                continue;
            for (int32_t p = 0; p < mr->topics.a[t].partitions.n; p++)
                if (mr->topics.a[t].partitions.a[p].partition_index == partition)
                    return &mr->topics.a[t].partitions.a[p];
        }
    }
    return NULL;
}

static void on_response(void *arg, int err, int16_t version, void *resp, struct arena *ar)
{
    (void)version;
    (void)ar;
    struct send_ctx *x = arg;
    struct txn_sender *s = x->s;
    x->d->inflight = false;
    if (atomic_load(&s->stop)) {
        ctx_free(x); /* the jobs are dropped with the sender */
        return;
    }
    const write_txn_markers_response_t *r = resp;
    int64_t now = clock_mono_ms();
    if (err)
        slog_debug("marker sender: WriteTxnMarkers to broker %d failed: %s; retrying", (int)x->d->id,
                   kerr_name((int16_t)err));
    for (int32_t k = 0; k < x->n; k++) {
        struct sjob *j = x->m[k].job;
        for (int32_t q = 0; q < x->m[k].n; q++) {
            int32_t i = x->m[k].idx[q];
            j->inflight--;
            if (j->dropped) {
                job_part_done(j, i);
                continue;
            }
            if (err) {
                job_part_retry(j, i, now);
                continue;
            }
            const write_txn_markers_response_writable_txn_marker_partition_result_t *pr =
                find_result(r, j->producer_id, j->parts[i].topic, j->parts[i].partition);
            /* An answer without the partition: ask again. */
            partition_answer(j, i, pr ? pr->error_code : KERR_NETWORK_EXCEPTION, x->d->id, now);
        }
    }
    ctx_free(x);
    /* The next step runs from the loop, not inside this client's
     * callback (it may replace the client). */
    ev_async_send(s->loop, &s->wake);
}

/* Sends what is due for d: the (job, partition) pairs of sel (njobs
 * entries, partitions in idx) in one request. Takes ownership of the idx
 * arrays. */
static void send_markers(struct txn_sender *s, struct dest *d, struct sent_marker *sel, int32_t n)
{
    int16_t v = kclient_version(d->kc, WRITE_TXN_MARKERS_REQUEST_API_KEY, MARKERS_VERSION_MAX);
    if (v < 0)
        v = MARKERS_VERSION_MAX; /* not connected yet: checked against the peer once it is */
    struct arena ar;
    arena_init(&ar);
    write_txn_markers_request_t q;
    write_txn_markers_request_init(&q);
    q.markers.a = write_txn_markers_request_writable_txn_marker_new_array(&ar, n);
    q.markers.n = n;
    for (int32_t k = 0; k < n; k++) {
        struct sjob *j = sel[k].job;
        write_txn_markers_request_writable_txn_marker_t *m = &q.markers.a[k];
        m->producer_id = j->producer_id;
        m->producer_epoch = j->producer_epoch;
        m->transaction_result = j->commit;
        m->coordinator_epoch = j->coord_epoch;
        m->topics.a = write_txn_markers_request_writable_txn_marker_topic_new_array(&ar, sel[k].n);
        m->topics.n = 0;
        for (int32_t e = 0; e < sel[k].n; e++) {
            const struct txn_tp *tp = &j->parts[sel[k].idx[e]];
            j->state[sel[k].idx[e]] = TP_INFLIGHT;
            j->inflight++;
            write_txn_markers_request_writable_txn_marker_topic_t *t = NULL;
            for (int32_t u = 0; u < m->topics.n && !t; u++)
                if (kstr_eqc(m->topics.a[u].name, tp->topic))
                    t = &m->topics.a[u];
            if (!t) {
                t = &m->topics.a[m->topics.n++];
                t->name = KSTR(tp->topic);
                t->partition_indexes.a = arena_alloc(&ar, (size_t)sel[k].n * sizeof(int32_t));
                t->partition_indexes.n = 0;
            }
            t->partition_indexes.a[t->partition_indexes.n++] = tp->partition;
        }
    }
    struct send_ctx *x = xcalloc(1, sizeof *x);
    x->s = s;
    x->d = d;
    x->m = sel;
    x->n = n;
    d->inflight = true;
    if (kclient_send(d->kc, WRITE_TXN_MARKERS_REQUEST_API_KEY, v, &q, on_response, x) != 0) {
        d->inflight = false;
        int64_t now = clock_mono_ms();
        for (int32_t k = 0; k < n; k++)
            for (int32_t e = 0; e < sel[k].n; e++) {
                sel[k].job->inflight--;
                job_part_retry(sel[k].job, sel[k].idx[e], now);
            }
        ctx_free(x);
    }
    arena_free(&ar);
}

static bool forgotten(const struct sjob *j, const struct forget *f)
{
    return j->txn_partition == f->txn_partition && j->coord_epoch <= f->coord_epoch;
}

/* A due partition and where it goes. */
struct due {
    int32_t leader;
    int32_t job; /* index in s->active */
    int32_t idx;
};

static void arm_retry(struct txn_sender *s, int64_t now)
{
    int64_t next = INT64_MAX;
    for (int32_t a = 0; a < s->nactive; a++) {
        struct sjob *j = s->active[a];
        for (int32_t i = 0; i < j->nparts && !j->dropped; i++)
            if (j->state[i] == TP_PENDING && j->due[i] > now && j->due[i] < next)
                next = j->due[i];
    }
    ev_timer_stop(s->loop, &s->retry);
    if (next != INT64_MAX) {
        ev_timer_set(&s->retry, (double)(next - now) / 1000.0, 0.);
        ev_timer_start(s->loop, &s->retry);
    }
}

static void step(struct txn_sender *s)
{
    pthread_mutex_lock(&s->lock);
    for (struct sjob *j = s->qhead; j; j = j->next) {
        if (s->nactive == s->capactive) {
            s->capactive = s->capactive ? 2 * s->capactive : 8;
            s->active = xrealloc(s->active, (size_t)s->capactive * sizeof *s->active);
        }
        s->active[s->nactive++] = j;
    }
    s->qhead = s->qtail = NULL;
    struct forget *fg = s->forgets;
    int32_t nfg = s->nforgets;
    s->forgets = NULL;
    s->nforgets = s->capforgets = 0;
    pthread_mutex_unlock(&s->lock);
    for (int32_t a = 0; a < s->nactive; a++)
        for (int32_t k = 0; k < nfg; k++)
            if (forgotten(s->active[a], &fg[k]))
                s->active[a]->dropped = true;
    free(fg);
    if (s->nactive == 0)
        return;

    int64_t now = clock_mono_ms();
    struct mimage *img = s->env.controller ? controller_image(s->env.controller) : NULL;
    struct due *due = NULL;
    int32_t ndue = 0, capdue = 0;
    for (int32_t a = 0; a < s->nactive && img; a++) {
        struct sjob *j = s->active[a];
        for (int32_t i = 0; i < j->nparts && !j->dropped; i++) {
            if (j->state[i] != TP_PENDING || j->due[i] > now)
                continue;
            const struct txn_tp *tp = &j->parts[i];
            const struct mi_topic *t = mimage_topic(img, KSTR(tp->topic));
            const struct mi_partition *mp = t ? mi_topic_partition(t, tp->partition) : NULL;
            if (!mp) {
                slog_info("transaction %.*s: %s-%d no longer exists; it needs no marker", (int)j->id_len, j->id,
                          tp->topic, (int)tp->partition);
                job_part_done(j, i);
                continue;
            }
            if (mp->leader < 0 || !mimage_broker(img, mp->leader)) {
                j->due[i] = now + RETRY_BACKOFF_MS;
                continue;
            }
            if (ndue == capdue) {
                capdue = capdue ? 2 * capdue : 16;
                due = xrealloc(due, (size_t)capdue * sizeof *due);
            }
            due[ndue++] = (struct due){mp->leader, a, i};
        }
    }

    /* One request per idle leader, one marker entry per job in it. */
    for (int32_t f = 0; f < ndue; f++) {
        if (due[f].leader < 0)
            continue; /* taken by an earlier leader's pass */
        int32_t leader = due[f].leader;
        struct dest *d = dest_for(s, leader);
        if (d->inflight || !dest_connect(s, d, img)) {
            /* Busy: they go with the next request, the answer in flight
             * brings the next step. Unreachable: after a backoff. */
            bool later = !d->inflight;
            for (int32_t g = f; g < ndue; g++) {
                if (due[g].leader != leader)
                    continue;
                if (later)
                    s->active[due[g].job]->due[due[g].idx] = now + RETRY_BACKOFF_MS;
                due[g].leader = -1;
            }
            continue;
        }
        struct sent_marker *sel = NULL;
        int32_t nsel = 0;
        for (int32_t g = f; g < ndue; g++) {
            if (due[g].leader != leader)
                continue;
            struct sjob *j = s->active[due[g].job];
            struct sent_marker *m = NULL;
            bool clash = false; /* the answer is keyed by producer id: one entry per id */
            for (int32_t k = 0; k < nsel && !m && !clash; k++) {
                if (sel[k].job == j)
                    m = &sel[k];
                else if (sel[k].job->producer_id == j->producer_id)
                    clash = true;
            }
            due[g].leader = -1;
            if (clash)
                continue; /* pending still: goes with the next request */
            if (!m) {
                sel = xrealloc(sel, (size_t)(nsel + 1) * sizeof *sel);
                m = &sel[nsel++];
                m->job = j;
                m->idx = xcalloc((size_t)j->nparts, sizeof *m->idx);
                m->n = 0;
            }
            m->idx[m->n++] = due[g].idx;
        }
        send_markers(s, d, sel, nsel);
    }
    free(due);
    mimage_release(img);
    if (!img)
        for (int32_t a = 0; a < s->nactive; a++)
            for (int32_t i = 0; i < s->active[a]->nparts; i++)
                if (s->active[a]->state[i] == TP_PENDING)
                    s->active[a]->due[i] = now + RETRY_BACKOFF_MS;

    /* Jobs with every partition done are reported, no lock held. */
    int32_t keep = 0;
    for (int32_t a = 0; a < s->nactive; a++) {
        struct sjob *j = s->active[a];
        if (j->dropped ? j->inflight > 0 : j->left > 0) {
            s->active[keep++] = j;
            continue;
        }
        if (!j->dropped)
            txn_coord_markers_done(s->tc, j->txn_partition, j->coord_epoch, (kstr_t){j->id, j->id_len},
                                   j->producer_id, j->producer_epoch, j->commit);
        job_free(j);
        atomic_fetch_sub(&s->pending, 1);
    }
    s->nactive = keep;
    arm_retry(s, now);
}

/* A function another module runs on this loop (txn_sender_run). */
struct sender_call {
    struct sender_call *next;
    void (*fn)(void *arg);
    void *arg;
};

static void run_calls(struct txn_sender *s)
{
    pthread_mutex_lock(&s->lock);
    struct sender_call *c = s->calls;
    s->calls = s->calls_tail = NULL;
    pthread_mutex_unlock(&s->lock);
    while (c) {
        struct sender_call *next = c->next;
        c->fn(c->arg);
        free(c);
        c = next;
    }
}

static void on_wake(struct ev_loop *loop, ev_async *w, int revents)
{
    (void)revents;
    struct txn_sender *s = w->data;
    if (atomic_load(&s->stop)) {
        ev_break(loop, EVBREAK_ALL);
        return;
    }
    run_calls(s);
    step(s);
}

static void on_retry(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    struct txn_sender *s = t->data;
    if (!atomic_load(&s->stop))
        step(s);
}

static void *sender_main(void *arg)
{
    struct txn_sender *s = arg;
    thread_set_name("samsa-txnmarks");
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    ev_run(s->loop, 0);
    return NULL;
}

struct txn_sender *txn_sender_create(const struct coord_env *env, struct txn_coord *tc)
{
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    if (!loop) {
        slog_error("transaction marker sender: cannot create its loop");
        return NULL;
    }
    struct txn_sender *s = xcalloc(1, sizeof *s);
    s->env = *env;
    s->tc = tc;
    s->loop = loop;
    atomic_init(&s->stop, false);
    atomic_init(&s->pending, 0);
    pthread_mutex_init(&s->lock, NULL);
    ev_async_init(&s->wake, on_wake);
    s->wake.data = s;
    ev_async_start(loop, &s->wake);
    ev_timer_init(&s->retry, on_retry, 0., 0.);
    s->retry.data = s;
    return s;
}

void txn_sender_start(struct txn_sender *s)
{
    if (!s || s->started || atomic_load(&s->stop))
        return;
    if (pthread_create(&s->thread, NULL, sender_main, s) != 0) {
        slog_error("transaction marker sender: cannot start its thread");
        return;
    }
    s->started = true;
}

void txn_sender_stop(struct txn_sender *s)
{
    if (!s || atomic_exchange(&s->stop, true))
        return;
    if (s->started) {
        ev_async_send(s->loop, &s->wake);
        pthread_join(s->thread, NULL);
        s->started = false;
    }
    /* Calls queued meanwhile still run (their owners wait for an
     * answer: a request they send is failed by kclient_free below). */
    run_calls(s);
    /* The loop is stopped: the requests kclient_free fails call back
     * here and see stop. */
    for (int32_t i = 0; i < s->ndests; i++) {
        if (s->dests[i]->kc)
            kclient_free(s->dests[i]->kc);
        free(s->dests[i]);
    }
    free(s->dests);
    s->dests = NULL;
    s->ndests = 0;
    for (int32_t a = 0; a < s->nactive; a++) {
        job_free(s->active[a]);
        atomic_fetch_sub(&s->pending, 1);
    }
    s->nactive = 0;
    pthread_mutex_lock(&s->lock);
    struct sjob *q = s->qhead;
    s->qhead = s->qtail = NULL;
    free(s->forgets);
    s->forgets = NULL;
    s->nforgets = s->capforgets = 0;
    pthread_mutex_unlock(&s->lock);
    while (q) {
        struct sjob *next = q->next;
        job_free(q);
        atomic_fetch_sub(&s->pending, 1);
        q = next;
    }
}

void txn_sender_destroy(struct txn_sender *s)
{
    if (!s)
        return;
    txn_sender_stop(s);
    free(s->active);
    ev_loop_destroy(s->loop);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

void txn_sender_send(struct txn_sender *s, const struct txn_marker_job *job)
{
    if (!s || atomic_load(&s->stop))
        return;
    struct sjob *j = xcalloc(1, sizeof *j);
    j->id_len = job->id.len > 0 ? job->id.len : 0;
    j->id = xmalloc((size_t)j->id_len + 1);
    if (j->id_len)
        memcpy(j->id, job->id.p, (size_t)j->id_len);
    j->id[j->id_len] = '\0';
    j->txn_partition = job->txn_partition;
    j->coord_epoch = job->coord_epoch;
    j->producer_id = job->producer_id;
    j->producer_epoch = job->producer_epoch;
    j->commit = job->commit;
    j->nparts = job->nparts > 0 ? job->nparts : 0;
    j->parts = xcalloc((size_t)(j->nparts ? j->nparts : 1), sizeof *j->parts);
    j->state = xcalloc((size_t)(j->nparts ? j->nparts : 1), sizeof *j->state);
    j->due = xcalloc((size_t)(j->nparts ? j->nparts : 1), sizeof *j->due);
    for (int32_t i = 0; i < j->nparts; i++) {
        j->parts[i].topic = xstrdup(job->parts[i].topic);
        j->parts[i].partition = job->parts[i].partition;
        j->state[i] = TP_PENDING;
    }
    j->left = j->nparts;
    atomic_fetch_add(&s->pending, 1);
    pthread_mutex_lock(&s->lock);
    if (s->qtail)
        s->qtail->next = j;
    else
        s->qhead = j;
    s->qtail = j;
    pthread_mutex_unlock(&s->lock);
    ev_async_send(s->loop, &s->wake);
}

void txn_sender_forget(struct txn_sender *s, int32_t txn_partition, int32_t coord_epoch)
{
    if (!s || atomic_load(&s->stop))
        return;
    struct forget f = {txn_partition, coord_epoch};
    struct sjob *gone = NULL;
    pthread_mutex_lock(&s->lock);
    /* Queued ones go now; the active ones at the sender's next step. */
    struct sjob **pp = &s->qhead, *last = NULL;
    while (*pp) {
        struct sjob *j = *pp;
        if (forgotten(j, &f)) {
            *pp = j->next;
            j->next = gone;
            gone = j;
        } else {
            last = j;
            pp = &j->next;
        }
    }
    s->qtail = last;
    if (s->nforgets == s->capforgets) {
        s->capforgets = s->capforgets ? 2 * s->capforgets : 4;
        s->forgets = xrealloc(s->forgets, (size_t)s->capforgets * sizeof *s->forgets);
    }
    s->forgets[s->nforgets++] = f;
    pthread_mutex_unlock(&s->lock);
    while (gone) {
        struct sjob *next = gone->next;
        job_free(gone);
        atomic_fetch_sub(&s->pending, 1);
        gone = next;
    }
    ev_async_send(s->loop, &s->wake);
}

int32_t txn_sender_pending(struct txn_sender *s)
{
    return s ? atomic_load(&s->pending) : 0;
}

bool txn_sender_run(struct txn_sender *s, void (*fn)(void *arg), void *arg)
{
    if (!s || atomic_load(&s->stop))
        return false;
    struct sender_call *c = xcalloc(1, sizeof *c);
    c->fn = fn;
    c->arg = arg;
    pthread_mutex_lock(&s->lock);
    if (s->calls_tail)
        s->calls_tail->next = c;
    else
        s->calls = c;
    s->calls_tail = c;
    pthread_mutex_unlock(&s->lock);
    ev_async_send(s->loop, &s->wake);
    return true;
}

struct kclient *txn_sender_client(struct txn_sender *s, const struct mimage *img, int32_t broker_id)
{
    struct dest *d = dest_for(s, broker_id);
    return dest_connect(s, d, img) ? d->kc : NULL;
}
