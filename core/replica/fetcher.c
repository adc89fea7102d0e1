/* Follower fetchers and the leader's ISR maintenance (see fetcher.h).
 *
 * As Kafka's num.replica.fetchers: that many lanes, each a thread with
 * its own loop and its own connection to every source broker; a
 * partition belongs to lane hash(topic id, partition) % n (Kafka's
 * AbstractFetcherManager.getFetcherId). Each step of a lane (a timer, an
 * answer, or a wakeup) lists the hosted partitions, groups its followed
 * ones by leader, and sends one Fetch to each leader with none in
 * flight. Lane 0 also runs the ISR maintenance of the partitions this
 * node leads. */
#include "replica/fetcher.h"

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
#include "log/plog.h"
#include "net/kclient.h"
#include "plugin/metrics.h"
#include "proto/gen/alter_partition_request.h"
#include "proto/gen/alter_partition_response.h"
#include "proto/gen/fetch_request.h"
#include "proto/gen/fetch_response.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "replica/env.h"
#include "replica/partition.h"
#include "replica/repl.h"
#include "util/loopwatch.h"
#include "util/thread.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/slog.h"

#define STEP_MS 100
/* What one loop pass appends of the leaders' answers: a Fetch answer
 * holds up to replica.fetch.max.bytes (1 MiB) per partition and
 * replica.fetch.response.max.bytes (10 MiB) in all, and appending 1-2
 * MiB took one pass 10-25 ms on a CPU here (a follower catching up),
 * while the loop's other answers, its ISR checks and its Fetches to
 * other leaders waited. A pass appends about this many bytes, counting
 * each partition's append as APPEND_CALL_COST more; the rest is copied
 * and appended in the next passes (an idle watcher: after whatever
 * else the loop has to do). 256 KiB still took the pass that read the
 * answer 2-6 ms on a CPU here (new page cache pages cost this VM a
 * host fault each). */
#define APPEND_SLICE_BYTES (128 * 1024)
#define APPEND_CALL_COST 4096
/* The highest Fetch version the follower speaks: ReplicaState (v15) and
 * DivergingEpoch (v12+); the leader's ApiVersions may lower it. */
#define FETCH_VERSION_MAX 16

struct source {
    int32_t id;
    char host[256];
    int port;
    struct kclient *kc;
    /* A Fetch in flight, or its answer's records still being appended
     * (applying > 0): the next Fetch asks from the log end after them. */
    bool inflight;
    int32_t applying;
    int64_t backoff_until;
};

/* The rest of a partition's records in an answer, past what its pass
 * appended: whole batches, appended in order, a slice per pass. */
struct pending_append {
    struct pending_append *next;
    struct source *s;
    struct partition *p; /* reference */
    int32_t epoch;       /* the leader epoch the Fetch was sent in */
    int64_t leader_hw;
    uint8_t *data;       /* owned */
    size_t len, off;
};

struct lane {
    struct replica_env env;                /* a copy of fetcher_start's */
    struct controller *controller;         /* the metadata image; NULL: none */
    struct partition_registry *partitions; /* what it follows and leads */
    int index, nlanes;
    struct ev_loop *loop;
    pthread_t thread;
    bool started;
    ev_async wake;
    ev_timer tick;
    atomic_bool stop;
    struct source **sources; /* stable pointers: fetches in flight hold them */
    size_t nsources;
    int32_t max_wait_ms, min_bytes, max_bytes, partition_max_bytes, backoff_ms;
    int32_t socket_timeout_ms, recv_buffer_bytes;
    int64_t lag_max_ms;
    /* Controller clients for AlterPartition, one per voter. */
    struct kclient **ctl;
    size_t nctl;
    /* Answers' records left for the next passes, oldest first. */
    struct pending_append *pa_head, *pa_tail;
    ev_idle slice;
};

/* One Fetch in flight: the partitions asked for, with references. */
struct fetch_ctx {
    struct lane *f;
    struct source *s;
    int32_t n;
    struct partition **parts;
    int32_t *epochs;
};

static int64_t cfg_long(const struct samsa_config *cfg, const char *key, int64_t dflt)
{
    int64_t v;
    return config_get_long(cfg, key, &v) ? v : dflt;
}

static struct source *source_for(struct lane *f, int32_t id)
{
    for (size_t i = 0; i < f->nsources; i++)
        if (f->sources[i]->id == id)
            return f->sources[i];
    f->sources = xrealloc(f->sources, (f->nsources + 1) * sizeof *f->sources);
    struct source *s = xcalloc(1, sizeof *s);
    s->id = id;
    f->sources[f->nsources++] = s;
    return s;
}

/* The leader's broker endpoint from the image; (re)creates the client
 * when it changed. False when the leader is not registered. */
static bool source_connect(struct lane *f, struct source *s, const struct mimage *img)
{
    const struct mi_broker *br = mimage_broker(img, s->id);
    if (!br || !br->host)
        return false;
    /* the leader's inter-broker listener, as Kafka's fetchers use */
    const char *host = NULL;
    int32_t port = 0;
    const struct samsa_config *cfg = atomic_load(f->env.cfg);
    mi_broker_address(br, cfg->inter_broker_listener_name, &host, &port);
    if (!host || port <= 0)
        return false;
    if (s->kc && (strcmp(s->host, host) != 0 || s->port != port)) {
        if (s->inflight)
            return false;
        kclient_free(s->kc);
        s->kc = NULL;
    }
    if (!s->kc) {
        snprintf(s->host, sizeof s->host, "%s", host);
        s->port = port;
        char cid[64];
        snprintf(cid, sizeof cid, "samsa-replica-fetcher-%d", (int)f->env.node_id);
        /* Kafka's fetcher NetworkClient: replica.socket.timeout.ms is
         * its request timeout, replica.socket.receive.buffer.bytes its
         * SO_RCVBUF. */
        struct kclient_opts ko = {.host = s->host, .port = s->port, .client_id = cid,
                                  .request_timeout_ms = f->socket_timeout_ms,
                                  .connect_timeout_ms = (int32_t)cfg->socket_connection_setup_timeout_ms,
                                  .connect_timeout_max_ms = (int32_t)cfg->socket_connection_setup_timeout_max_ms,
                                  .recv_buffer_bytes = f->recv_buffer_bytes};
        ko.security = f->env.to_brokers;
        s->kc = kclient_new(f->loop, &ko);
    }
    return true;
}

static void ctx_free(struct fetch_ctx *x)
{
    for (int32_t i = 0; i < x->n; i++)
        partition_put(x->parts[i]);
    free(x->parts);
    free(x->epochs);
    free(x);
}

static int find_part(const struct fetch_ctx *x, const kuuid_t *id, kstr_t name, int32_t index, bool by_id)
{
    for (int32_t i = 0; i < x->n; i++) {
        struct partition *p = x->parts[i];
        if (p->index != index)
            continue;
        if (by_id ? kuuid_eq(&p->topic_id, id) : kstr_eqc(name, p->topic))
            return i;
    }
    return -1;
}

/* Whole batches at the front of records (a leader may cut the last one). */
static size_t whole_batches(const uint8_t *p, size_t len)
{
    size_t pos = 0, size;
    while (pos < len && rb_frame(p + pos, len - pos, &size) == 0)
        pos += size;
    return pos;
}

static void truncate_diverging(struct partition *p, const fetch_response_partition_data_t *pd)
{
    int32_t div_epoch = pd->diverging_epoch.epoch;
    int64_t div_end = pd->diverging_epoch.end_offset;
    int32_t local_epoch = -1;
    int64_t local_end = -1;
    if (div_epoch >= 0)
        plog_end_offset_for_epoch(p->log, div_epoch, &local_epoch, &local_end);
    int64_t leo = plog_log_end_offset(p->log);
    bool complete;
    int64_t to = repl_truncation_offset(div_epoch, div_end, local_epoch >= 0, local_epoch, local_end, leo,
                                        atomic_load(&p->high_watermark), &complete);
    if (to < leo) {
        slog_info("partition %s-%d: log diverged from the leader's (epoch %d ends at %" PRId64
                  " there); truncating %" PRId64 " -> %" PRId64,
                  p->topic, (int)p->index, (int)div_epoch, div_end, leo, to);
        int err = partition_truncate(p, to);
        if (err)
            slog_error("partition %s-%d: truncation to %" PRId64 " failed: %s", p->topic, (int)p->index, to,
                       kerr_name((int16_t)err));
    }
}

/* Answers to a fetch sent under another leadership are stale. */
static bool stale(struct partition *p, int32_t epoch)
{
    return atomic_load(&p->deleted) || atomic_load(&p->is_leader) || atomic_load(&p->leader_epoch) != epoch;
}

/* How many bytes of whole batches at the front of p[0..len) fit in
 * budget: at least one batch (len is whole batches). */
static size_t slice_of(const uint8_t *p, size_t len, size_t budget)
{
    size_t pos = 0, size;
    while (pos < len && rb_frame(p + pos, len - pos, &size) == 0) {
        if (pos > 0 && pos + size > budget)
            break;
        pos += size;
    }
    return pos;
}

/* Appends a slice of the leader's batches; false when the rest of them
 * is to be dropped (an error, logged unless the log end moved). */
static bool append_slice(struct partition *p, const uint8_t *b, size_t len, int64_t leader_hw)
{
    int err = partition_append_follower(p, b, len, leader_hw);
    if (err && err != KERR_OFFSET_OUT_OF_RANGE)
        slog_error("partition %s-%d: appending the leader's batches failed: %s", p->topic, (int)p->index,
                   kerr_name((int16_t)err));
    return err == 0;
}

static void slice_start(struct lane *f)
{
    if (!ev_is_active(&f->slice))
        ev_idle_start(f->loop, &f->slice);
}

/* budget: what this pass may still append (APPEND_SLICE_BYTES); what
 * does not fit is queued for the next passes, and s stays busy until it
 * is appended. */
static void handle_partition(struct lane *f, struct source *s, struct partition *p, int32_t epoch,
                             const fetch_response_partition_data_t *pd, size_t *budget)
{
    if (stale(p, epoch))
        return;
    switch (pd->error_code) {
    case 0:
        break;
    case KERR_OFFSET_OUT_OF_RANGE: {
        int64_t leo = plog_log_end_offset(p->log);
        if (pd->log_start_offset > leo) {
            slog_warn("partition %s-%d: the leader's log starts at %" PRId64 ", after this log's end %" PRId64
                      "; starting over there",
                      p->topic, (int)p->index, pd->log_start_offset, leo);
            plog_truncate_fully(p->log, pd->log_start_offset);
        } else {
            /* Ahead of the leader without epochs to tell where: back to
             * what is known to be committed. */
            partition_truncate(p, atomic_load(&p->high_watermark));
        }
        return;
    }
    default:
        /* NOT_LEADER_OR_FOLLOWER, epoch errors, ...: the image will
         * bring the news; the next step asks again. */
        return;
    }
    if (pd->diverging_epoch.epoch >= 0 || pd->diverging_epoch.end_offset >= 0) {
        truncate_diverging(p, pd);
        return;
    }
    size_t n = pd->records.len > 0 && pd->records.p ? whole_batches(pd->records.p, (size_t)pd->records.len) : 0;
    if (n == 0) {
        partition_follower_hw(p, pd->high_watermark);
        return;
    }
    const uint8_t *b = pd->records.p;
    if (*budget > 0) {
        size_t k = slice_of(b, n, *budget);
        *budget = *budget > k + APPEND_CALL_COST ? *budget - (k + APPEND_CALL_COST) : 0;
        if (!append_slice(p, b, k, pd->high_watermark) || k == n)
            return;
        b += k;
        n -= k;
    }
    /* The rest waits for the next passes: a copy, as the answer lives
     * only during this call. */
    struct pending_append *a = xcalloc(1, sizeof *a);
    a->s = s;
    atomic_fetch_add(&p->refs, 1);
    a->p = p;
    a->epoch = epoch;
    a->leader_hw = pd->high_watermark;
    a->data = xmalloc(n);
    memcpy(a->data, b, n);
    a->len = n;
    if (f->pa_tail)
        f->pa_tail->next = a;
    else
        f->pa_head = a;
    f->pa_tail = a;
    s->applying++;
    slice_start(f);
}

static void pending_free(struct pending_append *a)
{
    partition_put(a->p);
    free(a->data);
    free(a);
}

static void step(struct lane *f, bool isr);

/* The next slices of the queued records, APPEND_SLICE_BYTES per pass;
 * a source whose answer is wholly appended may be asked again. */
static void on_slice(struct ev_loop *loop, ev_idle *w, int revents)
{
    (void)revents;
    struct lane *f = w->data;
    size_t budget = APPEND_SLICE_BYTES;
    bool freed = false;
    while (f->pa_head && budget > 0) {
        struct pending_append *a = f->pa_head;
        bool done = true;
        if (!atomic_load(&f->stop) && !stale(a->p, a->epoch)) {
            size_t k = slice_of(a->data + a->off, a->len - a->off, budget);
            budget = budget > k + APPEND_CALL_COST ? budget - (k + APPEND_CALL_COST) : 0;
            if (append_slice(a->p, a->data + a->off, k, a->leader_hw)) {
                a->off += k;
                done = a->off >= a->len;
            }
        }
        if (!done)
            break;
        f->pa_head = a->next;
        if (!f->pa_head)
            f->pa_tail = NULL;
        if (--a->s->applying == 0) {
            a->s->inflight = false;
            freed = true;
        }
        pending_free(a);
    }
    if (!f->pa_head)
        ev_idle_stop(loop, w);
    if (freed && !atomic_load(&f->stop))
        step(f, false);
}

static void fetch_done(void *arg, int err, int16_t version, void *resp, struct arena *ar)
{
    (void)ar;
    struct fetch_ctx *x = arg;
    struct lane *f = x->f;
    struct source *s = x->s;
    s->inflight = false;
    const fetch_response_t *r = resp;
    size_t budget = APPEND_SLICE_BYTES;
    if (err || r->error_code) {
        int16_t e = err ? (int16_t)err : r->error_code;
        if (!atomic_load(&f->stop))
            slog_debug("replica fetcher: fetch from broker %d failed: %s", (int)s->id, kerr_name(e));
        s->backoff_until = clock_mono_ms() + f->backoff_ms;
        ctx_free(x);
        return;
    }
    bool by_id = version >= 13;
    bool trouble = false;
    for (int32_t t = 0; t < r->responses.n; t++) {
        const fetch_response_fetchable_topic_response_t *tr = &r->responses.a[t];
        for (int32_t i = 0; i < tr->partitions.n; i++) {
            const fetch_response_partition_data_t *pd = &tr->partitions.a[i];
            int k = find_part(x, &tr->topic_id, tr->topic, pd->partition_index, by_id);
            if (k < 0)
                continue;
            if (pd->error_code)
                trouble = true;
            handle_partition(f, s, x->parts[k], x->epochs[k], pd, &budget);
        }
    }
    if (s->applying > 0)
        s->inflight = true; /* until on_slice has appended the rest */
    if (trouble)
        s->backoff_until = clock_mono_ms() + (f->backoff_ms < 200 ? f->backoff_ms : 200);
    ctx_free(x);
    if (!atomic_load(&f->stop))
        step(f, false);
}

static void send_fetch(struct lane *f, struct source *s, struct partition **parts, int32_t n)
{
    int16_t v = kclient_version(s->kc, FETCH_REQUEST_API_KEY, FETCH_VERSION_MAX);
    if (v < 0)
        v = FETCH_VERSION_MAX; /* not connected yet: samsa's own range */
    struct arena ar;
    arena_init(&ar);
    fetch_request_t q;
    fetch_request_init(&q);
    q.replica_id = f->env.node_id;
    q.replica_state.replica_id = f->env.node_id;
    q.replica_state.replica_epoch = -1;
    q.max_wait_ms = f->max_wait_ms;
    q.min_bytes = f->min_bytes;
    q.max_bytes = f->max_bytes;
    q.isolation_level = 0;
    q.session_id = 0;
    q.session_epoch = -1; /* sessionless: every request is full */
    q.topics.a = fetch_request_fetch_topic_new_array(&ar, n);
    q.topics.n = n;
    struct fetch_ctx *x = xcalloc(1, sizeof *x);
    x->f = f;
    x->s = s;
    x->n = n;
    x->parts = xcalloc((size_t)n, sizeof *x->parts);
    x->epochs = xcalloc((size_t)n, sizeof *x->epochs);
    for (int32_t i = 0; i < n; i++) {
        struct partition *p = parts[i];
        atomic_fetch_add(&p->refs, 1);
        x->parts[i] = p;
        x->epochs[i] = atomic_load(&p->leader_epoch);
        fetch_request_fetch_topic_t *ft = &q.topics.a[i];
        ft->topic = KSTR(p->topic);
        ft->topic_id = p->topic_id;
        ft->partitions.a = fetch_request_fetch_partition_new_array(&ar, 1);
        ft->partitions.n = 1;
        fetch_request_fetch_partition_t *fp = &ft->partitions.a[0];
        fp->partition = p->index;
        fp->current_leader_epoch = x->epochs[i];
        fp->fetch_offset = plog_log_end_offset(p->log);
        int32_t last_epoch;
        int64_t start;
        plog_latest_epoch(p->log, &last_epoch, &start);
        fp->last_fetched_epoch = last_epoch;
        fp->log_start_offset = plog_log_start_offset(p->log);
        fp->partition_max_bytes = f->partition_max_bytes;
    }
    s->inflight = true;
    if (kclient_send(s->kc, FETCH_REQUEST_API_KEY, v, &q, fetch_done, x) != 0) {
        s->inflight = false;
        ctx_free(x);
    }
    arena_free(&ar);
}

/* ------------------------------------------------------------------ */
/* The leader side: ISR shrink and expansion through AlterPartition.    */

#define ALTER_VERSION_MAX 3
#define ALTER_RETRY_MS 1000
/* An answered AlterPartition whose state never shows up in the image is
 * given up after this long (and sent again if still wanted). */
#define ALTER_STALE_MS 15000

struct alter_ctx {
    struct lane *f;
    struct partition *p; /* reference */
    int32_t *isr_before; /* the ISR and partition epoch when it was sent (owned) */
    int32_t nisr_before, epoch_before;
};

/* Kafka's IsrShrinksPerSec and IsrExpandsPerSec: ISR changes of the
 * partitions led here that the controller committed (metrics endpoint). */
static struct metric *isr_shrinks, *isr_expands;
static pthread_once_t isr_metrics_once = PTHREAD_ONCE_INIT;

static void isr_metrics_register(void)
{
    isr_shrinks = metrics_register("samsa.isr.shrinks", METRIC_COUNTER,
                                   "ISR shrinks of partitions led here, committed by the controller.");
    isr_expands = metrics_register("samsa.isr.expands", METRIC_COUNTER,
                                   "ISR expansions of partitions led here, committed by the controller.");
}

static struct kclient *controller_client(struct lane *f, int32_t id)
{
    const struct samsa_config *cfg = atomic_load(f->env.cfg);
    if (!f->ctl) {
        f->nctl = cfg->n_voters;
        f->ctl = xcalloc(f->nctl ? f->nctl : 1, sizeof *f->ctl);
    }
    for (size_t i = 0; i < f->nctl && i < cfg->n_voters; i++) {
        if (cfg->voters[i].id != id)
            continue;
        if (!f->ctl[i]) {
            char cid[64];
            snprintf(cid, sizeof cid, "samsa-alter-partition-%d", (int)f->env.node_id);
            struct kclient_opts ko = {.host = cfg->voters[i].host, .port = cfg->voters[i].port, .client_id = cid,
                                      .request_timeout_ms = 10000,
                                      .connect_timeout_ms = (int32_t)cfg->socket_connection_setup_timeout_ms,
                                      .connect_timeout_max_ms = (int32_t)cfg->socket_connection_setup_timeout_max_ms};
            ko.security = f->env.to_controllers;
            f->ctl[i] = kclient_new(f->loop, &ko);
        }
        return f->ctl[i];
    }
    return NULL;
}

static void alter_settle(struct partition *p, int64_t retry_in_ms)
{
    slock_lock(&p->repl_lock);
    p->alter_inflight = false;
    p->npending = 0;
    p->alter_retry_ms = clock_mono_ms() + retry_in_ms;
    slock_unlock(&p->repl_lock);
}

static void alter_done(void *arg, int err, int16_t version, void *resp, struct arena *ar)
{
    (void)version;
    (void)ar;
    struct alter_ctx *x = arg;
    struct partition *p = x->p;
    const alter_partition_response_t *r = resp;
    int16_t e = err ? (int16_t)err : r->error_code;
    const alter_partition_response_partition_data_t *pd = NULL;
    if (!e && r->topics.n == 1 && r->topics.a[0].partitions.n == 1)
        pd = &r->topics.a[0].partitions.a[0];
    if (!e && pd)
        e = pd->error_code;
    if (e) {
        if (e != KERR_NOT_CONTROLLER && e != KERR_NETWORK_EXCEPTION)
            slog_info("partition %s-%d: AlterPartition refused: %s", p->topic, (int)p->index, kerr_name(e));
        alter_settle(p, e == KERR_NOT_CONTROLLER ? 200 : ALTER_RETRY_MS);
    } else if (pd) {
        /* The new state comes with the image (partition_set_state);
         * when the controller had nothing to change, it is settled. */
        slock_lock(&p->repl_lock);
        if (pd->partition_epoch <= p->partition_epoch) {
            p->alter_inflight = false;
            p->npending = 0;
        }
        slock_unlock(&p->repl_lock);
        if (pd->partition_epoch > x->epoch_before) {
            /* a member gone is a shrink, a member new an expansion (a
             * change may be both, as Kafka counts it) */
            bool gone = false, added = false;
            for (int32_t i = 0; i < x->nisr_before; i++)
                gone |= !repl_contains(pd->isr.a, pd->isr.n, x->isr_before[i]);
            for (int32_t i = 0; i < pd->isr.n; i++)
                added |= !repl_contains(x->isr_before, x->nisr_before, pd->isr.a[i]);
            metric_add(isr_shrinks, gone);
            metric_add(isr_expands, added);
        }
    } else {
        alter_settle(p, ALTER_RETRY_MS);
    }
    partition_put(p);
    free(x->isr_before);
    free(x);
}

static bool same_set(const int32_t *a, int32_t na, const int32_t *b, int32_t nb)
{
    if (na != nb)
        return false;
    for (int32_t i = 0; i < na; i++)
        if (!repl_contains(b, nb, a[i]))
            return false;
    return true;
}

/* Kafka's maybeShrinkIsr / maybeExpandIsr for one partition this node
 * leads: the ISR it wants, and an AlterPartition when that differs. */
static void isr_check(struct lane *f, struct partition *p, const struct mimage *img, int64_t now)
{
    int32_t me = f->env.node_id;
    slock_lock(&p->repl_lock);
    bool alone = p->nfollowers == 0 && p->nisr <= 1;
    slock_unlock(&p->repl_lock);
    if (alone)
        return; /* a single replica: nothing to decide */
    int64_t leo = plog_log_end_offset(p->log);
    int32_t epoch = atomic_load(&p->leader_epoch);
    int32_t last_epoch;
    int64_t epoch_start;
    plog_latest_epoch(p->log, &last_epoch, &epoch_start);
    if (last_epoch != epoch)
        epoch_start = leo; /* nothing appended in this epoch yet */

    slock_lock(&p->repl_lock);
    if (p->alter_inflight && now - p->alter_sent_ms > ALTER_STALE_MS) {
        p->alter_inflight = false;
        p->npending = 0;
    }
    if (p->alter_inflight || now < p->alter_retry_ms || p->nisr == 0) {
        slock_unlock(&p->repl_lock);
        return;
    }
    int64_t hw = atomic_load(&p->high_watermark);
    int32_t cap = p->nisr + p->nfollowers + 1;
    int32_t *out = xcalloc((size_t)cap, sizeof *out);
    int32_t *want = xcalloc((size_t)cap, sizeof *want);
    int32_t nout = repl_out_of_sync(me, leo, p->isr, p->nisr, p->followers, p->nfollowers, now, f->lag_max_ms, out);
    int32_t nwant = 0;
    for (int32_t i = 0; i < p->nisr; i++) {
        bool drop = false;
        for (int32_t j = 0; j < nout && !drop; j++)
            drop = out[j] == p->isr[i];
        if (!drop)
            want[nwant++] = p->isr[i];
    }
    for (int32_t i = 0; i < p->nfollowers; i++) {
        const struct repl_follower *fl = &p->followers[i];
        bool in = false;
        for (int32_t j = 0; j < p->nisr && !in; j++)
            in = p->isr[j] == fl->id;
        const struct mi_broker *br = mimage_broker(img, fl->id);
        if (!in && br && !br->fenced && !br->in_controlled_shutdown && repl_can_join_isr(fl, hw, epoch_start))
            want[nwant++] = fl->id;
    }
    bool change = !same_set(want, nwant, p->isr, p->nisr);
    int32_t partition_epoch = p->partition_epoch;
    int32_t nisr_before = p->nisr, *isr_before = NULL;
    if (change) {
        isr_before = xmalloc((size_t)(nisr_before > 0 ? nisr_before : 1) * sizeof *isr_before);
        memcpy(isr_before, p->isr, (size_t)nisr_before * sizeof *isr_before);
        p->alter_inflight = true;
        p->alter_sent_ms = now;
        free(p->pending_isr);
        p->pending_isr = xcalloc((size_t)nwant, sizeof *p->pending_isr);
        memcpy(p->pending_isr, want, (size_t)nwant * sizeof *want);
        p->npending = nwant;
        slog_info("partition %s-%d: asking the controller to change the ISR from %d to %d member(s)%s", p->topic,
                  (int)p->index, (int)p->nisr, (int)nwant, nout ? " (followers out of sync)" : "");
    }
    slock_unlock(&p->repl_lock);
    free(out);
    if (!change) {
        free(want);
        return;
    }
    const struct mi_broker *self = mimage_broker(img, me);
    int32_t ctl = f->controller ? controller_leader_id(f->controller) : -1;
    struct kclient *kc = ctl >= 0 && self ? controller_client(f, ctl) : NULL;
    if (!kc) {
        free(want);
        free(isr_before);
        alter_settle(p, 200);
        return;
    }
    int16_t v = kclient_version(kc, ALTER_PARTITION_REQUEST_API_KEY, ALTER_VERSION_MAX);
    if (v < 0)
        v = ALTER_VERSION_MAX;
    struct arena ar;
    arena_init(&ar);
    alter_partition_request_t q;
    alter_partition_request_init(&q);
    q.broker_id = me;
    q.broker_epoch = self->epoch;
    q.topics.a = alter_partition_request_topic_data_new_array(&ar, 1);
    q.topics.n = 1;
    alter_partition_request_topic_data_t *td = &q.topics.a[0];
    td->topic_name = KSTR(p->topic);
    td->topic_id = p->topic_id;
    td->partitions.a = alter_partition_request_partition_data_new_array(&ar, 1);
    td->partitions.n = 1;
    alter_partition_request_partition_data_t *pd = &td->partitions.a[0];
    pd->partition_index = p->index;
    pd->leader_epoch = epoch;
    pd->partition_epoch = partition_epoch;
    pd->leader_recovery_state = 0;
    pd->new_isr.a = want;
    pd->new_isr.n = nwant;
    pd->new_isr_with_epochs.a = alter_partition_request_broker_state_new_array(&ar, nwant);
    pd->new_isr_with_epochs.n = nwant;
    for (int32_t i = 0; i < nwant; i++) {
        const struct mi_broker *br = mimage_broker(img, want[i]);
        pd->new_isr_with_epochs.a[i].broker_id = want[i];
        pd->new_isr_with_epochs.a[i].broker_epoch = br ? br->epoch : -1;
    }
    struct alter_ctx *x = xcalloc(1, sizeof *x);
    x->f = f;
    x->p = p;
    x->isr_before = isr_before;
    x->nisr_before = nisr_before;
    x->epoch_before = partition_epoch;
    atomic_fetch_add(&p->refs, 1);
    if (kclient_send(kc, ALTER_PARTITION_REQUEST_API_KEY, v, &q, alter_done, x) != 0) {
        alter_settle(p, ALTER_RETRY_MS);
        partition_put(p);
        free(x->isr_before);
        free(x);
    }
    arena_free(&ar);
    free(want);
}

/* Sends the Fetches due; with isr (the timer's steps), the ISR checks
 * of the partitions led here too. */
/* Kafka's getFetcherId: Utils.abs(31 * topic.hashCode + partition) %
 * numFetchers, here over the topic id. */
static int lane_of(const struct partition *p, int nlanes)
{
    if (nlanes <= 1)
        return 0;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < sizeof p->topic_id.b; i++)
        h = (h ^ p->topic_id.b[i]) * 16777619u;
    h = 31 * h + (uint32_t)p->index;
    return (int)(h % (uint32_t)nlanes);
}

static void step(struct lane *f, bool isr)
{
    /* Nothing followed here and nothing led here with other replicas
     * (every partition of a single node): no Fetch to send, no ISR to
     * check, and no walk over 100 000 idle partitions ten times a
     * second. */
    if (preg_replicated(f->partitions) == 0)
        return;
    struct partition **all;
    size_t n = preg_list(f->partitions, &all);
    struct mimage *img = f->controller ? controller_image(f->controller) : NULL;
    int64_t now = clock_mono_ms();
    int32_t me = f->env.node_id;
    struct partition **mine = n ? xcalloc(n, sizeof *mine) : NULL;
    bool *done = n ? xcalloc(n, sizeof *done) : NULL;
    /* Followed partitions, by leader: one Fetch per idle leader. */
    for (size_t i = 0; i < n && img; i++) {
        if (done[i])
            continue;
        struct partition *p = all[i];
        int32_t leader = atomic_load(&p->leader_id);
        if (atomic_load(&p->is_leader) || leader < 0 || leader == me || lane_of(p, f->nlanes) != f->index)
            continue;
        int32_t k = 0;
        for (size_t j = i; j < n; j++) {
            struct partition *q = all[j];
            if (!done[j] && !atomic_load(&q->is_leader) && atomic_load(&q->leader_id) == leader &&
                lane_of(q, f->nlanes) == f->index) {
                done[j] = true;
                mine[k++] = q;
            }
        }
        struct source *s = source_for(f, leader);
        if (s->inflight || now < s->backoff_until)
            continue;
        if (source_connect(f, s, img))
            send_fetch(f, s, mine, k); /* takes references of its own */
    }
    for (size_t i = 0; i < n && img && isr && f->index == 0; i++)
        if (atomic_load(&all[i]->is_leader))
            isr_check(f, all[i], img, now);
    for (size_t i = 0; i < n; i++)
        partition_put(all[i]);
    free(done);
    free(mine);
    free(all);
    mimage_release(img);
}

static void on_tick(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    step(t->data, true);
}

static void on_wake(struct ev_loop *loop, ev_async *a, int revents)
{
    (void)revents;
    struct lane *f = a->data;
    if (atomic_load(&f->stop)) {
        ev_break(loop, EVBREAK_ALL);
        return;
    }
    step(f, false);
}

static void *fetcher_main(void *arg)
{
    struct lane *f = arg;
    thread_set_name("samsa-fetch-%d", f->index);
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    struct loopwatch lw;
    char name[24];
    snprintf(name, sizeof name, "fetch-%d", f->index);
    loopwatch_start(&lw, f->loop, name);
    ev_run(f->loop, 0);
    loopwatch_stop(&lw, f->loop);
    return NULL;
}

static struct lane *lane_start(const struct replica_env *env, struct controller *c,
                               struct partition_registry *reg, int index, int nlanes)
{
    struct lane *f = xcalloc(1, sizeof *f);
    f->env = *env;
    f->controller = c;
    f->partitions = reg;
    f->index = index;
    f->nlanes = nlanes;
    const struct samsa_config *cfg = atomic_load(env->cfg);
    f->max_wait_ms = (int32_t)cfg_long(cfg, "replica.fetch.wait.max.ms", 500);
    f->min_bytes = (int32_t)cfg_long(cfg, "replica.fetch.min.bytes", 1);
    f->max_bytes = (int32_t)cfg_long(cfg, "replica.fetch.response.max.bytes", 10485760);
    f->partition_max_bytes = (int32_t)cfg_long(cfg, "replica.fetch.max.bytes", 1048576);
    f->backoff_ms = (int32_t)cfg_long(cfg, "replica.fetch.backoff.ms", 1000);
    f->socket_timeout_ms = (int32_t)cfg_long(cfg, "replica.socket.timeout.ms", 30000);
    f->recv_buffer_bytes = (int32_t)cfg_long(cfg, "replica.socket.receive.buffer.bytes", 65536);
    f->lag_max_ms = cfg_long(cfg, "replica.lag.time.max.ms", 30000);
    atomic_init(&f->stop, false);
    f->loop = ev_loop_new(EVFLAG_AUTO);
    if (!f->loop) {
        slog_error("replica fetcher %d: cannot create its loop", index);
        free(f);
        return NULL;
    }
    ev_idle_init(&f->slice, on_slice);
    f->slice.data = f;
    ev_async_init(&f->wake, on_wake);
    f->wake.data = f;
    ev_async_start(f->loop, &f->wake);
    ev_timer_init(&f->tick, on_tick, STEP_MS / 1000.0, STEP_MS / 1000.0);
    f->tick.data = f;
    ev_timer_start(f->loop, &f->tick);
    if (pthread_create(&f->thread, NULL, fetcher_main, f) != 0) {
        slog_error("replica fetcher %d: cannot start its thread", index);
        ev_loop_destroy(f->loop);
        free(f);
        return NULL;
    }
    f->started = true;
    return f;
}

static void lane_stop(struct lane *f)
{
    if (!f)
        return;
    atomic_store(&f->stop, true);
    ev_async_send(f->loop, &f->wake);
    pthread_join(f->thread, NULL);
    while (f->pa_head) {
        struct pending_append *a = f->pa_head;
        f->pa_head = a->next;
        pending_free(a);
    }
    f->pa_tail = NULL;
    /* The loop is stopped: what kclient_free fails calls back here. */
    for (size_t i = 0; i < f->nsources; i++) {
        if (f->sources[i]->kc)
            kclient_free(f->sources[i]->kc);
        free(f->sources[i]);
    }
    for (size_t i = 0; i < f->nctl; i++)
        if (f->ctl[i])
            kclient_free(f->ctl[i]);
    free(f->ctl);
    free(f->sources);
    ev_loop_destroy(f->loop);
    free(f);
}

struct fetcher {
    struct lane **lanes;
    int n;
};

struct fetcher *fetcher_start(const struct replica_env *env, struct controller *c, struct partition_registry *reg)
{
    int n = (int)cfg_long(atomic_load(env->cfg), "num.replica.fetchers", 1);
    if (n < 1)
        n = 1;
    pthread_once(&isr_metrics_once, isr_metrics_register);
    struct fetcher *fs = xcalloc(1, sizeof *fs);
    fs->lanes = xcalloc((size_t)n, sizeof *fs->lanes);
    for (int i = 0; i < n; i++) {
        fs->lanes[i] = lane_start(env, c, reg, i, n);
        if (!fs->lanes[i]) {
            fs->n = i;
            fetcher_stop(fs);
            return NULL;
        }
    }
    fs->n = n;
    return fs;
}

void fetcher_wake(struct fetcher *fs)
{
    if (!fs)
        return;
    for (int i = 0; i < fs->n; i++)
        ev_async_send(fs->lanes[i]->loop, &fs->lanes[i]->wake);
}

void fetcher_stop(struct fetcher *fs)
{
    if (!fs)
        return;
    for (int i = 0; i < fs->n; i++)
        lane_stop(fs->lanes[i]);
    free(fs->lanes);
    free(fs);
}
