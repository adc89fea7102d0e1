/* The controller: admin operations become metadata records proposed to
 * the Raft quorum; committed batches are applied, on every node, into
 * the next image. Validation and messages follow Kafka's ControllerApis
 * and ReplicationControlManager (KRaft mode). See controller.h for the
 * model and controller_internal.h for the state. */
#include "controller/controller.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "controller/controller_internal.h"
#include "controller/image_build.h"
#include "log/meta_properties.h"
#include "net/park.h"
#include "proto/gen/config_record.h"
#include "proto/gen/create_topics_request.h"
#include "proto/gen/feature_level_record.h"
#include "proto/gen/kmeta.h"
#include "proto/gen/partition_record.h"
#include "proto/gen/register_broker_record.h"
#include "proto/gen/remove_topic_record.h"
#include "proto/gen/topic_record.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "quorum/quorum.h"
#include "quorum/rlog.h"
#include "topic_config.h"
#include "util/thread.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/slog.h"
#include "util/uuid.h"

#define METADATA_DIR_NAME "__cluster_metadata-0"
#define CLUSTER_METADATA_TOPIC "__cluster_metadata"
#define MAX_TOPIC_NAME_LENGTH 249
/* How long a synchronous operation (start-up, tests) waits for its commit. */
#define SYNC_WAIT_MS 30000
/* How long the only voter waits in controller_open to lead and be ready. */
#define OPEN_WAIT_MS 30000

/* Kafka's DirectoryId markers. */
static const kuuid_t dir_migrating = {{0}};
static const kuuid_t dir_unassigned = {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}};

/* ------------------------------------------------------------------ */
/* Helpers                                                             */

static int err_msg(char *msg, size_t msglen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int err_msg(char *msg, size_t msglen, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msglen, fmt, ap);
    va_end(ap);
    return code;
}

void recs_init(struct recs *r) { memset(r, 0, sizeof *r); }

void recs_free(struct recs *r)
{
    free(r->a);
    arena_free(&r->arena);
}

void recs_add(struct recs *r, int16_t type, int16_t version, const void *rec)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 16;
        r->a = xrealloc(r->a, r->cap * sizeof *r->a);
    }
    r->a[r->n++] = (struct mrec){type, version, rec};
}

/* Generations of published images, process-wide (see img_gen). */
static _Atomic uint64_t img_seq;

static void publish(struct controller *c, struct mimage *img)
{
    uint64_t gen = atomic_fetch_add_explicit(&img_seq, 1, memory_order_relaxed) + 1;
    pthread_mutex_lock(&c->img_lock);
    struct mimage *old = c->cur;
    c->cur = img;
    atomic_store_explicit(&c->img_gen, gen, memory_order_release);
    atomic_store_explicit(&c->acl_gen, img && img->acls ? img->acls->gen : 0, memory_order_release);
    pthread_mutex_unlock(&c->img_lock);
    mimage_release(old);
}

/* The partition registry follows the image on a thread of its own (the
 * publisher): creating and deleting partition logs costs fsyncs, and
 * the quorum loop must keep answering Raft meanwhile. It follows only
 * once this node has caught up with the quorum: an image still being
 * replayed lacks topics that exist, and their logs would be set aside as
 * strays. c->synced tells the loop how far it got: a proposal completes
 * once its partitions' logs exist, as a single node always promised. */
static void sync_partitions(struct controller *c)
{
    if (!atomic_load(&c->caught_up))
        return;
    pthread_mutex_lock(&c->pub_mu);
    c->pub_want = true;
    pthread_cond_signal(&c->pub_cv);
    pthread_mutex_unlock(&c->pub_mu);
}

static void *publisher_main(void *arg)
{
    struct controller *c = arg;
    thread_set_name("samsa-publish");
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pthread_mutex_lock(&c->pub_mu);
    for (;;) {
        while (!c->pub_want && !c->pub_stop)
            pthread_cond_wait(&c->pub_cv, &c->pub_mu);
        if (c->pub_stop)
            break;
        c->pub_want = false;
        pthread_mutex_unlock(&c->pub_mu);
        struct mimage *img = controller_image(c);
        char err[512];
        if (c->env.image_published && c->env.image_published(c->env.hook_arg, img, err, sizeof err) < 0) {
            slog_error("partition registry: %s (retried at the next metadata change)", err);
            pthread_mutex_lock(&c->pub_mu);
            snprintf(c->pub_err, sizeof c->pub_err, "%s", err);
            pthread_mutex_unlock(&c->pub_mu);
        }
        atomic_store(&c->synced, img->offset);
        mimage_release(img);
        quorum_wake(c->q); /* proposals waiting for their logs complete */
        pthread_mutex_lock(&c->pub_mu);
    }
    pthread_mutex_unlock(&c->pub_mu);
    return NULL;
}

/* Publishes cfg into the node's config slot (a dynamic broker config change); the
 * controller owns it from now on. Loop thread (or open). */
static void publish_cfg(struct controller *c, struct samsa_config *cfg)
{
    struct samsa_config *old = atomic_load_explicit(c->env.cfg, memory_order_relaxed);
    c->cfgs = xrealloc(c->cfgs, (c->ncfgs + 1) * sizeof *c->cfgs);
    c->cfgs[c->ncfgs++] = cfg;
    atomic_store_explicit(c->env.cfg, cfg, memory_order_release);
    /* samsa.log.level is a cluster-wide dynamic key: it takes effect now. */
    if (cfg->log_level != old->log_level)
        slog_set_level((enum slog_level)cfg->log_level);
    if (c->env.config_published)
        c->env.config_published(c->env.hook_arg, old, cfg);
}



void ctl_wake_waiters(struct controller *c)
{
    pthread_mutex_lock(&c->wait_mu);
    pthread_cond_broadcast(&c->wait_cv);
    pthread_mutex_unlock(&c->wait_mu);
}

/* ------------------------------------------------------------------ */
/* Proposals                                                           */

bool ctl_op_done(struct ctl_op *op, int *err)
{
    if (!atomic_load_explicit(&op->done, memory_order_acquire))
        return false;
    if (err)
        *err = op->err;
    return true;
}

void ctl_op_release(struct ctl_op *op)
{
    if (!op || atomic_fetch_sub(&op->refs, 1) != 1)
        return;
    free(op->batch);
    free(op);
}

int64_t ctl_op_broker_epoch(const struct ctl_op *op) { return op->broker_epoch; }

void ctl_op_heartbeat(const struct ctl_op *op, bool *fenced, bool *caught_up, bool *shut_down)
{
    *fenced = op->hb_fenced;
    *caught_up = op->hb_caught_up;
    *shut_down = op->hb_shut_down;
}

int32_t ctl_node_id(const struct controller *c) { return c->env.node_id; }

void ctl_notify_object(const struct controller *c, const void *obj)
{
    park_notify(c->env.wake, park_key_object(obj));
}

/* Completes op on the loop: its hook, then waiters and parked requests. */
static void op_complete(struct controller *c, struct ctl_op *op, int16_t err)
{
    op->err = err;
    atomic_store_explicit(&op->done, true, memory_order_release);
    if (op->on_done)
        op->on_done(op->on_done_arg, op);
    ctl_op_release(op);
    park_notify(c->env.wake, park_key_object(op)); /* an identity only */
}

/* Blocks the calling thread until op is done or timeout_ms has passed.
 * Never on the quorum loop (the loop completes ops, so it would only wait
 * out the timeout) and never on a network worker (requests park on the
 * op instead: api/forward.h api_wait_ops). Its one caller is op_finish
 * when the caller passed no op out-parameter: tools and unit tests. */
int ctl_wait_op(struct controller *c, struct ctl_op *op, int64_t timeout_ms)
{
    int64_t deadline = clock_mono_ms() + timeout_ms;
    pthread_mutex_lock(&c->wait_mu);
    while (!atomic_load(&op->done) && clock_mono_ms() < deadline) {
        struct timespec ts;
        clock_deadline_after(&ts, 20);
        pthread_cond_timedwait(&c->wait_cv, &c->wait_mu, &ts);
    }
    pthread_mutex_unlock(&c->wait_mu);
    int err;
    if (!ctl_op_done(op, &err))
        return KERR_REQUEST_TIMED_OUT;
    return err;
}

/* The records as one batch at the next offset of the active epoch,
 * applied to the speculative image (the very bytes that go to the log,
 * so what validation sees next is what replay will build), and queued
 * for the loop to propose. Caller holds op_lock and checked active. */
int ctl_submit_locked(struct controller *c, const struct recs *rs, char *msg, size_t msglen, struct ctl_op **out)
{
    *out = NULL;
    int64_t now = clock_wall_ms();
    int64_t base = c->next_offset;
    struct buf bb = BUF_INIT;
    struct kwriter w;
    kw_init(&w);
    struct rb_batch_opts opts = RB_BATCH_OPTS_INIT;
    opts.partition_leader_epoch = c->active_epoch;
    struct rb_builder bld;
    rb_builder_begin(&bld, &bb, base, now, &opts);
    int rc = 0;
    for (size_t i = 0; i < rs->n && rc == 0; i++) {
        buf_reset(&w.b);
        mrec_write(&w, rs->a[i].type, rs->a[i].version, rs->a[i].rec);
        rc = rb_builder_add(&bld, now, KBYTES_NULL, (kbytes_t){w.b.data, (int32_t)w.b.len}, NULL, 0);
    }
    size_t len = 0;
    if (rc == 0)
        rc = rb_builder_finish(&bld, &len);
    else
        rb_builder_abort(&bld);
    kw_free(&w);
    if (rc != 0) {
        buf_free(&bb);
        slog_error("metadata: cannot build a batch of %zu records: %s", rs->n, kerr_name((int16_t)rc));
        return err_msg(msg, msglen, KERR_UNKNOWN_SERVER_ERROR, "%s", "");
    }
    char err[512];
    struct mi_draft *d = mi_draft_begin(c->spec, ctl_cfg(c), c->env.node_id);
    if (mi_draft_apply_batch(d, bb.data + bb.len - len, len, err, sizeof err) < 0) {
        mi_draft_abort(d);
        buf_free(&bb);
        slog_error("metadata: refusing a change that does not apply: %s", err);
        return err_msg(msg, msglen, KERR_UNKNOWN_SERVER_ERROR, "%s", "");
    }
    struct mimage *next = mi_draft_finish(d);
    mimage_release(c->spec);
    c->spec = next;
    struct ctl_op *op = xcalloc(1, sizeof *op);
    atomic_init(&op->refs, 2);
    atomic_init(&op->done, false);
    op->len = len;
    op->batch = xmalloc(len);
    memcpy(op->batch, bb.data + bb.len - len, len);
    buf_free(&bb);
    op->epoch = c->active_epoch;
    op->gen = c->spec_gen;
    op->base = base;
    op->end = base + (int64_t)rs->n;
    c->next_offset = op->end;
    if (c->queue_tail)
        c->queue_tail->next = op;
    else
        c->queue_head = op;
    c->queue_tail = op;
    quorum_wake(c->q);
    *out = op;
    return 0;
}

void ctl_noop_step(struct controller *c, int64_t now_ms)
{
    int32_t interval = ctl_cfg(c)->metadata_max_idle_interval_ms;
    if (interval <= 0)
        return;
    pthread_mutex_lock(&c->op_lock);
    if (ctl_not_active(c)) {
        c->noop_due_ms = -1;
    } else if (c->noop_due_ms < 0) {
        c->noop_due_ms = now_ms + interval;
    } else if (now_ms >= c->noop_due_ms) {
        c->noop_due_ms = now_ms + interval;
        no_op_record_t r;
        no_op_record_init(&r);
        struct recs rs;
        recs_init(&rs);
        recs_add(&rs, KMETA_NO_OP_RECORD, 0, &r);
        struct ctl_op *op = NULL;
        (void)ctl_submit_locked(c, &rs, NULL, 0, &op);
        if (op)
            ctl_op_release(op);
        recs_free(&rs);
    }
    pthread_mutex_unlock(&c->op_lock);
}

/* Caller holds op_lock. */
static int not_active(struct controller *c, char *msg, size_t msglen)
{
    (void)msg;
    (void)msglen;
    return atomic_load(&c->active) && c->spec ? 0 : KERR_NOT_CONTROLLER;
}

/* The end of an operation: hands the op over, or waits for it. */
static int op_finish(struct controller *c, int rc, struct ctl_op *mine, struct ctl_op **op)
{
    if (rc != 0) {
        ctl_op_release(mine);
        if (op)
            *op = NULL;
        return rc;
    }
    if (op) {
        *op = mine;
        return 0;
    }
    if (!mine)
        return 0;
    rc = ctl_wait_op(c, mine, SYNC_WAIT_MS);
    ctl_op_release(mine);
    return rc;
}

int ctl_not_active(struct controller *c) { return not_active(c, NULL, 0); }

int ctl_op_finish(struct controller *c, int rc, struct ctl_op *mine, struct ctl_op **op)
{
    return op_finish(c, rc, mine, op);
}

static int64_t log_end(struct controller *c)
{
    struct raft_log l = rlog_raft_log(quorum_rlog(c->q));
    return l.ops->end_offset(l.ctx);
}

static int64_t raft_log_start(struct controller *c)
{
    struct raft_log l = rlog_raft_log(quorum_rlog(c->q));
    return l.ops->start_offset(l.ctx);
}

/* Rebuilds the speculative image from the committed one and the
 * proposals still in flight (a proposal failed: everything queued after
 * it was built on it and fails too). Loop thread, op_lock held. */
static void respec_locked(struct controller *c)
{
    c->spec_gen++;
    struct ctl_op *q = c->queue_head;
    c->queue_head = c->queue_tail = NULL;
    while (q) {
        struct ctl_op *n = q->next;
        op_complete(c, q, KERR_NOT_CONTROLLER);
        q = n;
    }
    mimage_release(c->spec);
    c->spec = NULL;
    if (!atomic_load(&c->active))
        return;
    struct mi_draft *d = mi_draft_begin(c->cur, ctl_cfg(c), c->env.node_id);
    for (struct ctl_op *op = c->inflight_head; op; op = op->next) {
        char err[256];
        if (op->end <= c->applied)
            continue; /* committed: in cur already */
        if (op->batch && mi_draft_apply_batch(d, op->batch, op->len, err, sizeof err) < 0)
            slog_error("metadata: proposal at offset %" PRId64 " no longer applies: %s", op->base, err);
    }
    c->spec = mi_draft_finish(d);
    c->next_offset = log_end(c);
}

/* This node stops being the active controller: everything in flight
 * fails with NOT_CONTROLLER (it may still commit under the next leader,
 * as in Kafka; clients retry and see it). Loop thread. */
static void deactivate(struct controller *c)
{
    pthread_mutex_lock(&c->op_lock);
    bool was = atomic_exchange(&c->active, false);
    respec_locked(c);
    pthread_mutex_unlock(&c->op_lock);
    struct ctl_op *op = c->inflight_head;
    c->inflight_head = c->inflight_tail = NULL;
    while (op) {
        struct ctl_op *n = op->next;
        /* committed (only its logs pending) is a success all the same */
        op_complete(c, op, op->end <= c->applied ? 0 : KERR_NOT_CONTROLLER);
        op = n;
    }
    if (was) {
        slog_info("metadata: node %d is no longer the active controller", (int)c->env.node_id);
        ctl_wake_waiters(c);
    }
}

/* ------------------------------------------------------------------ */
/* The loop: proposing, applying, activation, snapshots                */

/* Hands queued proposals to Raft, in order. */
static void propose_queued(struct controller *c)
{
    pthread_mutex_lock(&c->op_lock);
    struct ctl_op *q = c->queue_head;
    c->queue_head = c->queue_tail = NULL;
    bool failed = false;
    while (q) {
        struct ctl_op *op = q;
        q = q->next;
        op->next = NULL;
        int64_t base = RAFT_ERR_NOT_LEADER;
        if (!failed && op->gen == c->spec_gen && atomic_load(&c->active))
            base = raft_propose_batches(quorum_raft(c->q), op->epoch, op->batch, op->len);
        if (base < 0) {
            if (!failed && op->gen == c->spec_gen && base != RAFT_ERR_NOT_LEADER)
                slog_error("metadata: proposal refused: %" PRId64, base);
            failed = true;
            op_complete(c, op, KERR_NOT_CONTROLLER);
            continue;
        }
        if (base != op->base) {
            /* Offsets inside the records (broker epochs) were predicted
             * from op->base; the log is the truth from here on. */
            slog_warn("metadata: proposal landed at offset %" PRId64 ", expected %" PRId64, base, op->base);
            op->end = base + (op->end - op->base);
            op->base = base;
            failed = true; /* rebuild the speculative state below */
        }
        if (c->inflight_tail)
            c->inflight_tail->next = op;
        else
            c->inflight_head = op;
        c->inflight_tail = op;
    }
    if (failed)
        respec_locked(c); /* rebuilt from what is really in flight */
    pthread_mutex_unlock(&c->op_lock);
}

static bool configs_equal(const struct mi_config *a, int32_t na, const struct mi_config *b, int32_t nb)
{
    if (na != nb)
        return false;
    for (int32_t i = 0; i < na; i++)
        if (strcmp(a[i].key, b[i].key) || strcmp(a[i].value ? a[i].value : "", b[i].value ? b[i].value : ""))
            return false;
    return true;
}

/* The broker config the dynamic layers of d make: a copy of the one in
 * effect with those two layers replaced. NULL when they did not change from base. */
static struct samsa_config *cfg_from_draft(struct controller *c, const struct mimage *base, struct mi_draft *d)
{
    int32_t nd, nn;
    const struct mi_config *dd = mi_draft_broker_configs(d, true, &nd);
    const struct mi_config *dn = mi_draft_broker_configs(d, false, &nn);
    if (base && configs_equal(dd, nd, base->broker_default_configs, base->nbroker_default_configs) &&
        configs_equal(dn, nn, base->broker_configs, base->nbroker_configs))
        return NULL;
    if (!base && nd == 0 && nn == 0)
        return NULL;
    struct samsa_config *next = config_dup(ctl_cfg(c));
    for (int k = 0; k < 2; k++) {
        bool dflt = k == 0;
        const struct mi_config *old = base ? (dflt ? base->broker_default_configs : base->broker_configs) : NULL;
        int32_t nold = base ? (dflt ? base->nbroker_default_configs : base->nbroker_configs) : 0;
        const struct mi_config *now = dflt ? dd : dn;
        int32_t nnow = dflt ? nd : nn;
        char why[256];
        for (int32_t i = 0; i < nold; i++) {
            bool kept = false;
            for (int32_t j = 0; j < nnow && !kept; j++)
                kept = !strcmp(now[j].key, old[i].key);
            if (!kept)
                (void)config_set_dynamic(next, dflt, old[i].key, NULL, why, sizeof why);
        }
        for (int32_t j = 0; j < nnow; j++)
            if (config_set_dynamic(next, dflt, now[j].key, now[j].value, why, sizeof why) != 0)
                slog_warn("metadata: stored dynamic broker config %s=%s ignored: %s", now[j].key,
                          now[j].value ? now[j].value : "(null)", why);
    }
    return next;
}

/* Finishes a draft into the published image (with the broker config its
 * records make), then the partition registry follows. */
static void publish_draft(struct controller *c, struct mi_draft *d, const struct mimage *base)
{
    struct samsa_config *ncfg = cfg_from_draft(c, base, d);
    if (ncfg) {
        mi_draft_set_config(d, ncfg);
        mi_draft_touch_all_configs(d);
    }
    struct mimage *img = mi_draft_finish(d);
    img->controller_id = c->leader_id >= 0 ? c->leader_id : c->env.node_id;
    if (ncfg)
        publish_cfg(c, ncfg);
    publish(c, img);
}

/* apply_committed keeps a read buffer up to this size between calls. */
#define RBUF_KEEP_BYTES (64 * 1024)

/* Applies the committed batches after c->applied, in log order. */
static void apply_committed(struct controller *c)
{
    if (c->applied >= c->hw)
        return;
    struct rlog *log = quorum_rlog(c->q);
    struct mimage *base = c->cur;
    struct mi_draft *d = mi_draft_begin(base, ctl_cfg(c), c->env.node_id);
    int64_t start = c->applied;
    while (c->applied < c->hw) {
        int rc = rlog_read_mem(log, c->applied, 1 << 20, &c->rbuf);
        if (rc != 0 || c->rbuf.len == 0) {
            if (rc == KERR_OFFSET_OUT_OF_RANGE && c->applied < raft_log_start(c)) {
                /* a snapshot replaced that part: LOAD_SNAPSHOT follows */
                break;
            }
            slog_error("metadata: cannot read the log at offset %" PRId64 ": %s", c->applied,
                       kerr_name((int16_t)rc));
            break;
        }
        size_t pos = 0;
        bool stop = false;
        while (pos < c->rbuf.len) {
            size_t size = 0;
            struct rb_header h;
            if (rb_frame(c->rbuf.data + pos, c->rbuf.len - pos, &size) != 0 ||
                rb_parse_header(c->rbuf.data + pos, size, &h) != 0) {
                slog_error("metadata: malformed batch at offset %" PRId64, c->applied);
                stop = true;
                break;
            }
            if (rb_last_offset(&h) >= c->hw) {
                stop = true; /* not committed yet */
                break;
            }
            char why[512];
            if (h.base_offset >= c->applied &&
                mi_draft_apply_batch(d, c->rbuf.data + pos, size, why, sizeof why) < 0) {
                /* The proposer applied these very bytes before proposing
                 * them, so this is a bug or a corrupt log: say so, skip
                 * the batch, keep the node serving. */
                slog_error("metadata: committed batch at offset %" PRId64 " does not apply: %s", h.base_offset,
                           why);
            }
            c->applied = rb_last_offset(&h) + 1;
            c->bytes_since_snap += (int64_t)size;
            pos += size;
        }
        if (stop)
            break;
    }
    /* Reads of up to 1 MiB (a start-up replay, a burst of CreateTopics)
     * leave a large buffer behind; an idle node's batches are small, so
     * give it back rather than hold it for the node's life (issue 12:
     * ~100 B per partition at 20 000 partitions). */
    if (c->rbuf.cap > RBUF_KEEP_BYTES)
        buf_free(&c->rbuf);
    if (c->applied == start) {
        mi_draft_abort(d);
        return;
    }
    publish_draft(c, d, base);
    sync_partitions(c);
    /* Nothing in flight: the speculative image is the committed one. */
    pthread_mutex_lock(&c->op_lock);
    if (atomic_load(&c->active) && !c->inflight_head && !c->queue_head) {
        mimage_release(c->spec);
        c->spec = mimage_ref(c->cur);
    }
    pthread_mutex_unlock(&c->op_lock);
    ctl_wake_waiters(c);
}

/* Proposals whose batches are in the image and whose partitions the
 * registry has caught up with are done. */
static void complete_synced(struct controller *c)
{
    int64_t synced = atomic_load(&c->synced);
    bool any = false;
    while (c->inflight_head && c->inflight_head->end <= c->applied && c->inflight_head->end - 1 <= synced) {
        struct ctl_op *op = c->inflight_head;
        c->inflight_head = op->next;
        if (!c->inflight_head)
            c->inflight_tail = NULL;
        op_complete(c, op, 0);
        any = true;
    }
    if (any) {
        ctl_wake_waiters(c);
    }
}

/* Once per start: this node has applied what the quorum had committed
 * when it first heard (Kafka's initial catch-up). From now on its image
 * is complete enough to act on: the partition registry syncs and the
 * broker side stops asking to stay fenced. */
static void check_caught_up(struct controller *c)
{
    if (atomic_load(&c->caught_up) || !c->hw_known || c->applied < c->hw)
        return;
    atomic_store(&c->caught_up, true);
    slog_info("metadata: caught up with the quorum at offset %" PRId64, c->applied);
    sync_partitions(c);
}

/* A snapshot replaced the log (fetched from the leader): the image is
 * rebuilt from it. */
static void load_snapshot(struct controller *c, const struct raft_snapshot_id *id)
{
    char err[512];
    struct mi_draft *d = ctl_snapshot_load(c, id, ctl_cfg(c), err, sizeof err);
    if (!d) {
        slog_error("metadata: cannot load snapshot %" PRId64 "-%d: %s", id->end_offset, (int)id->epoch, err);
        return;
    }
    struct mimage *base = c->cur;
    publish_draft(c, d, base);
    sync_partitions(c);
    c->applied = id->end_offset;
    c->snap_end = id->end_offset;
    c->bytes_since_snap = 0;
    c->snap_at_ms = clock_mono_ms();
    slog_info("metadata: loaded snapshot %" PRId64 "-%d: %d topic(s), %d broker(s)", id->end_offset, (int)id->epoch,
              (int)c->cur->ntopics, (int)c->cur->nbrokers);
    ctl_wake_waiters(c);
}

/* Kafka's snapshot policy: after metadata.log.max.record.bytes.between.
 * snapshots bytes, or metadata.log.max.snapshot.interval.ms when there
 * is anything new; the log prefix it covers goes. */
static void maybe_snapshot(struct controller *c)
{
    if (c->applied <= c->snap_end || c->applied > c->hw)
        return;
    int64_t now = clock_mono_ms();
    bool due = c->bytes_since_snap >= c->snap_max_bytes ||
               (c->snap_max_interval_ms > 0 && now - c->snap_at_ms >= c->snap_max_interval_ms);
    if (!due)
        return;
    struct raft_snapshot_id id;
    if (raft_snapshot_id_at(quorum_raft(c->q), c->applied, &id) != 0)
        return;
    int64_t t0 = clock_mono_ms();
    int rc = ctl_snapshot_write(c, c->cur, &id);
    if (rc == 0)
        rc = raft_snapshot_done(quorum_raft(c->q), &id) == 0 ? 0 : KERR_KAFKA_STORAGE_ERROR;
    c->snap_at_ms = now;
    if (rc != 0) {
        slog_error("metadata: snapshot at offset %" PRId64 " failed: %s", id.end_offset, kerr_name((int16_t)rc));
        return;
    }
    c->snap_end = id.end_offset;
    c->bytes_since_snap = 0;
    slog_info("metadata: wrote snapshot %" PRId64 "-%d in %" PRId64 " ms", id.end_offset, (int)id.epoch,
              clock_mono_ms() - t0);
}

/* The first active controller of a cluster writes its bootstrap records
 * (Kafka's bootstrap metadata: metadata.version). */
static void bootstrap_locked(struct controller *c)
{
    if (c->spec->metadata_version != 0)
        return;
    struct recs rs;
    recs_init(&rs);
    feature_level_record_t *fr = arena_alloc(&rs.arena, sizeof *fr);
    feature_level_record_init(fr);
    fr->name = KSTR_LIT("metadata.version");
    fr->feature_level = CONTROLLER_METADATA_VERSION;
    recs_add(&rs, KMETA_FEATURE_LEVEL_RECORD, 0, fr);
    char msg[128];
    struct ctl_op *op = NULL;
    if (ctl_submit_locked(c, &rs, msg, sizeof msg, &op) == 0)
        ctl_op_release(op);
    recs_free(&rs);
}

/* A leader becomes the active controller once it has applied everything
 * committed before its epoch (its LeaderChange batch is committed). */
static void maybe_activate(struct controller *c)
{
    if (c->role != RAFT_LEADER || atomic_load(&c->active) || c->applied <= c->epoch_start ||
        c->hw <= c->epoch_start)
        return;
    pthread_mutex_lock(&c->op_lock);
    atomic_store(&c->active, true);
    c->active_epoch = c->epoch;
    c->spec_gen++;
    mimage_release(c->spec);
    c->spec = mimage_ref(c->cur);
    c->next_offset = log_end(c);
    bootstrap_locked(c);
    ctl_brokers_activate(c, clock_mono_ms());
    pthread_mutex_unlock(&c->op_lock);
    slog_info("metadata: node %d is the active controller (epoch %d, log end %" PRId64 ")", (int)c->env.node_id,
              (int)c->epoch, c->next_offset);
    ctl_wake_waiters(c);
}

static void host_commit(void *arg, int64_t hw)
{
    struct controller *c = arg;
    c->hw_known = true;
    if (hw > c->hw)
        c->hw = hw;
}

static void host_load_snapshot(void *arg, const struct raft_snapshot_id *id)
{
    struct controller *c = arg;
    c->load_pending = true;
    c->load_id = *id;
    if (id->end_offset > c->hw)
        c->hw = id->end_offset;
}

static void host_role(void *arg, enum raft_role role, int32_t epoch, int32_t leader, int64_t log_end_offset)
{
    struct controller *c = arg;
    bool was_leader = c->role == RAFT_LEADER;
    int32_t old_epoch = c->epoch;
    c->role = role;
    c->epoch = epoch;
    c->leader_id = leader;
    if (role == RAFT_LEADER && (!was_leader || epoch != old_epoch))
        c->epoch_start = log_end_offset;
    if (atomic_load(&c->active) && (role != RAFT_LEADER || epoch != c->active_epoch))
        deactivate(c);
}

static void host_idle(void *arg)
{
    struct controller *c = arg;
    if (c->load_pending) {
        c->load_pending = false;
        load_snapshot(c, &c->load_id);
    }
    apply_committed(c);
    check_caught_up(c);
    complete_synced(c);
    maybe_activate(c);
    propose_queued(c);
    ctl_brokers_idle(c);
    maybe_snapshot(c);
}

/* Auto-creation on a node that is not the active controller: one
 * CreateTopics, not waited for. */
static void forward_create(struct controller *c, const struct topic_spec *spec)
{
    struct arena a = ARENA_INIT;
    create_topics_request_t q;
    create_topics_request_init(&q);
    q.timeout_ms = 30000;
    q.topics.a = create_topics_request_creatable_topic_new_array(&a, 1);
    q.topics.n = 1;
    create_topics_request_creatable_topic_t *t = &q.topics.a[0];
    t->name = spec->name;
    t->num_partitions = spec->num_partitions;
    t->replication_factor = spec->replication_factor;
    t->configs.a = create_topics_request_creatable_topic_config_new_array(&a, spec->nconfigs);
    t->configs.n = spec->nconfigs;
    for (int32_t i = 0; i < spec->nconfigs; i++) {
        t->configs.a[i].name = spec->config_keys[i];
        t->configs.a[i].value = spec->config_values[i];
    }
    struct kwriter w;
    kw_init(&w);
    create_topics_request_encode(&w, 5, &q);
    ctl_fwd_release(controller_forward(c, CREATE_TOPICS_REQUEST_API_KEY, 5, w.b.data, w.b.len, 30000));
    kw_free(&w);
    arena_free(&a);
}

/* ------------------------------------------------------------------ */
/* Brokers and placement                                               */

/* Kafka's ClusterControlManager.isActive: registered, not fenced, not in
 * controlled shutdown. */
static bool broker_active(const struct mimage *img, int32_t id)
{
    const struct mi_broker *b = mimage_broker(img, id);
    return b && !b->fenced && !b->in_controlled_shutdown;
}

/* Kafka's ClusterControlManager.defaultDir. */
static kuuid_t default_dir(const struct mimage *img, int32_t id)
{
    const struct mi_broker *b = mimage_broker(img, id);
    if (!b)
        return dir_unassigned;
    if (b->nlog_dirs == 0)
        return dir_migrating;
    if (b->nlog_dirs == 1)
        return b->log_dirs[0];
    return dir_unassigned;
}

static int16_t partition_record_version(const struct mimage *img)
{
    if (img->metadata_version >= 23) /* IBP_4_0_IV1: ELR */
        return 2;
    if (img->metadata_version >= 17) /* IBP_3_7_IV2: directory assignment */
        return 1;
    return 0;
}

bool ctl_broker_active(const struct mimage *img, int32_t id) { return broker_active(img, id); }

/* Kafka's MetadataVersion.partitionChangeRecordVersion. */
int16_t ctl_partition_change_record_version(const struct mimage *img)
{
    return partition_record_version(img);
}

int16_t register_broker_record_version(const struct mimage *img)
{
    int16_t mv = img->metadata_version;
    if (mv >= 17)
        return 3;
    if (mv >= 8) /* IBP_3_4_IV0 */
        return 2;
    if (mv >= 7) /* IBP_3_3_IV3 */
        return 1;
    return 0;
}

/* Adds a PartitionRecord with the replicas given; the ISR is the active
 * ones and the leader the first of those (Kafka's
 * buildPartitionRegistration). */
static void add_partition_record(struct recs *rs, const struct mimage *img, const kuuid_t *topic_id,
                                 int32_t index, const int32_t *replicas, int32_t n)
{
    partition_record_t *pr = arena_alloc(&rs->arena, sizeof *pr);
    partition_record_init(pr);
    pr->partition_id = index;
    pr->topic_id = *topic_id;
    pr->replicas.a = arena_alloc(&rs->arena, (size_t)n * sizeof(int32_t));
    pr->replicas.n = n;
    memcpy(pr->replicas.a, replicas, (size_t)n * sizeof(int32_t));
    pr->isr.a = arena_alloc(&rs->arena, (size_t)n * sizeof(int32_t));
    pr->isr.n = 0;
    for (int32_t i = 0; i < n; i++)
        if (broker_active(img, replicas[i]))
            pr->isr.a[pr->isr.n++] = replicas[i];
    pr->removing_replicas.n = 0;
    pr->adding_replicas.n = 0;
    pr->leader = pr->isr.n > 0 ? pr->isr.a[0] : -1;
    pr->leader_recovery_state = 0;
    pr->leader_epoch = 0;
    pr->partition_epoch = 0;
    int16_t v = partition_record_version(img);
    if (v >= 1) {
        pr->directories.a = arena_alloc(&rs->arena, (size_t)n * sizeof(kuuid_t));
        pr->directories.n = n;
        for (int32_t i = 0; i < n; i++)
            pr->directories.a[i] = default_dir(img, replicas[i]);
    }
    recs_add(rs, KMETA_PARTITION_RECORD, v, pr);
}

/* Kafka's StripedReplicaPlacer checks, then a round-robin placement over
 * the registered brokers (unfenced first). Fills out[p * rf + r]. On
 * error the message is the placer's (callers add their prefix). */
/* Placement order of the unfenced brokers: racks interleaved (the first
 * broker of each rack, then the second of each, ...; racks by name,
 * brokers by id), so consecutive brokers sit in different racks (Kafka's
 * rack-alternated list). Without racks: by id. */
struct rack_ent {
    const char *rack;
    int32_t id;
};

static int rack_ent_cmp(const void *a, const void *b)
{
    const struct rack_ent *x = a, *y = b;
    int c = strcmp(x->rack, y->rack);
    return c ? c : (x->id > y->id) - (x->id < y->id);
}

static int32_t rack_order(const struct mimage *img, int32_t *ids, const char **racks)
{
    struct rack_ent *e = xmalloc((size_t)(img->nbrokers > 0 ? img->nbrokers : 1) * sizeof *e);
    int32_t n = 0;
    for (int32_t i = 0; i < img->nbrokers; i++)
        if (!img->brokers[i].in_controlled_shutdown && !img->brokers[i].fenced)
            e[n++] = (struct rack_ent){img->brokers[i].rack ? img->brokers[i].rack : "", img->brokers[i].id};
    if (n > 1)
        qsort(e, (size_t)n, sizeof *e, rack_ent_cmp);
    /* round k takes the k-th broker of every rack */
    bool *used = xcalloc((size_t)(n > 0 ? n : 1), sizeof *used);
    int32_t out = 0;
    while (out < n) {
        const char *last = NULL;
        for (int32_t i = 0; i < n; i++) {
            if (used[i] || (last && !strcmp(last, e[i].rack)))
                continue;
            used[i] = true;
            last = e[i].rack;
            racks[out] = e[i].rack;
            ids[out++] = e[i].id;
        }
    }
    free(used);
    free(e);
    return n;
}

/* Kafka's StripedReplicaPlacer checks, then a rack-aware round robin
 * over the unfenced brokers: partition k (start + p) is led by the k-th
 * broker of the rack-alternated order, so leaders spread over brokers
 * and racks; its followers walk on from there, shifted once per round
 * over the brokers (Kafka's AdminUtils secondReplicaShift) so that the
 * same pairs do not always go together, each preferring a rack the
 * partition does not use yet. Fenced brokers only when the unfenced
 * are too few (as Kafka's placer does). Fills out[p * rf + r]. On error
 * the message is the placer's (callers add their prefix). */
static int place(const struct mimage *img, int32_t start, int32_t nparts, int32_t rf, int32_t *out,
                 char *msg, size_t msglen)
{
    if (rf <= 0)
        return err_msg(msg, msglen, KERR_INVALID_REPLICATION_FACTOR,
                       "Invalid replication factor %d: the replication factor must be positive.", (int)rf);
    size_t cap = (size_t)(img->nbrokers > 0 ? img->nbrokers : 1);
    int32_t *ids = xmalloc(cap * sizeof *ids);
    const char **racks = xmalloc(cap * sizeof *racks);
    int32_t nunfenced = rack_order(img, ids, racks);
    int32_t nids = nunfenced;
    for (int32_t i = 0; i < img->nbrokers; i++)
        if (!img->brokers[i].in_controlled_shutdown && img->brokers[i].fenced)
            ids[nids++] = img->brokers[i].id;
    int rc = 0;
    if (nunfenced == 0)
        rc = err_msg(msg, msglen, KERR_INVALID_REPLICATION_FACTOR, "All brokers are currently fenced.");
    else if (rf > nids)
        rc = err_msg(msg, msglen, KERR_INVALID_REPLICATION_FACTOR,
                     "The target replication factor of %d cannot be reached because only %d broker(s) "
                     "are registered.",
                     (int)rf, (int)nids);
    bool *taken = xcalloc((size_t)(nunfenced > 0 ? nunfenced : 1), sizeof *taken);
    for (int32_t p = 0; p < nparts && rc == 0; p++) {
        int32_t *o = &out[(size_t)p * (size_t)rf];
        int64_t k = (int64_t)start + p;
        int32_t lead = (int32_t)(k % nunfenced);
        int32_t shift = nunfenced > 1 ? (int32_t)((k / nunfenced) % (nunfenced - 1)) : 0;
        memset(taken, 0, (size_t)nunfenced * sizeof *taken);
        o[0] = ids[lead];
        taken[lead] = true;
        for (int32_t r = 1; r < rf && r < nunfenced; r++) {
            /* the first free broker from the shifted position whose rack
             * is new to this partition, else the first free one */
            int32_t pick = -1, any = -1;
            for (int32_t j = 0; j < nunfenced - 1 && pick < 0; j++) {
                int32_t c = (int32_t)((lead + 1 + (shift + j) % (nunfenced - 1)) % nunfenced);
                if (taken[c])
                    continue;
                if (any < 0)
                    any = c;
                bool rack_used = false;
                for (int32_t u = 0; u < r && !rack_used; u++)
                    for (int32_t t = 0; t < nunfenced; t++)
                        if (ids[t] == o[u] && !strcmp(racks[t], racks[c]))
                            rack_used = true;
                if (!rack_used)
                    pick = c;
            }
            if (pick < 0)
                pick = any;
            o[r] = ids[pick];
            taken[pick] = true;
        }
        for (int32_t r = nunfenced; r < rf; r++)
            o[r] = ids[nunfenced + (int32_t)((k + r - nunfenced) % (nids - nunfenced))];
    }
    free(taken);
    free(ids);
    free(racks);
    return rc;
}

/* Where a new topic's placement starts: after every partition placed so
 * far, so that one-partition topics do not all get the same leader. */
static int32_t place_start(const struct mimage *img)
{
    int64_t n = 0;
    for (int32_t i = 0; i < img->ntopics; i++)
        n += img->topics[i]->npartitions;
    return (int32_t)(n % 1000000007);
}

static int int_cmp(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

/* Kafka's ReplicationControlManager.validateManualPartitionAssignment;
 * rf < 0: no previous partition to be consistent with. */
static int validate_manual(const struct mimage *img, const int32_t *replicas, int32_t n, int32_t rf,
                           char *msg, size_t msglen)
{
    if (n <= 0)
        return err_msg(msg, msglen, KERR_INVALID_REPLICA_ASSIGNMENT,
                       "The manual partition assignment includes an empty replica list.");
    int32_t *sorted = xmalloc((size_t)n * sizeof *sorted);
    memcpy(sorted, replicas, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, int_cmp);
    int rc = 0;
    for (int32_t i = 0; i < n && rc == 0; i++) {
        if (!mimage_broker(img, sorted[i]))
            rc = err_msg(msg, msglen, KERR_INVALID_REPLICA_ASSIGNMENT,
                         "The manual partition assignment includes broker %d, but no such broker is "
                         "registered.",
                         (int)sorted[i]);
        else if (i > 0 && sorted[i] == sorted[i - 1])
            rc = err_msg(msg, msglen, KERR_INVALID_REPLICA_ASSIGNMENT,
                         "The manual partition assignment includes the broker %d more than once.",
                         (int)sorted[i]);
    }
    free(sorted);
    if (rc == 0 && rf >= 0 && n != rf)
        rc = err_msg(msg, msglen, KERR_INVALID_REPLICA_ASSIGNMENT,
                     "The manual partition assignment includes a partition with %d replica(s), but "
                     "this is not consistent with previous partitions, which have %d replica(s).",
                     (int)n, (int)rf);
    return rc;
}

static bool any_active(const struct mimage *img, const int32_t *replicas, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        if (broker_active(img, replicas[i]))
            return true;
    return false;
}

/* ------------------------------------------------------------------ */
/* Topic names                                                         */

/* Java String.length() of UTF-8 bytes (UTF-16 units), for the length
 * rule; non-ASCII names fail the character rule anyway. */
static size_t java_length(const char *p, size_t n)
{
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        if ((ch & 0xC0) != 0x80)
            len += (ch >= 0xF0) ? 2 : 1;
    }
    return len;
}

/* Kafka's Topic.validate. */
static int validate_topic_name(kstr_t name, char *msg, size_t msglen)
{
    const char *pfx = "Topic name is invalid: ";
    int32_t n = name.len > 0 ? name.len : 0;
    if (n == 0)
        return err_msg(msg, msglen, KERR_INVALID_TOPIC_EXCEPTION, "%sthe empty string is not allowed", pfx);
    if (n == 1 && name.p[0] == '.')
        return err_msg(msg, msglen, KERR_INVALID_TOPIC_EXCEPTION, "%s'.' is not allowed", pfx);
    if (n == 2 && name.p[0] == '.' && name.p[1] == '.')
        return err_msg(msg, msglen, KERR_INVALID_TOPIC_EXCEPTION, "%s'..' is not allowed", pfx);
    if (java_length(name.p, (size_t)n) > MAX_TOPIC_NAME_LENGTH)
        return err_msg(msg, msglen, KERR_INVALID_TOPIC_EXCEPTION,
                       "%sthe length of '%.*s' is longer than the max allowed length %d", pfx, (int)n,
                       name.p, MAX_TOPIC_NAME_LENGTH);
    for (int32_t i = 0; i < n; i++) {
        char ch = name.p[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                  ch == '.' || ch == '_' || ch == '-';
        if (!ok)
            return err_msg(msg, msglen, KERR_INVALID_TOPIC_EXCEPTION,
                           "%s'%.*s' contains one or more characters other than ASCII alphanumerics, "
                           "'.', '_' and '-'",
                           pfx, (int)n, name.p);
    }
    return 0;
}

static bool has_collision_chars(kstr_t s)
{
    for (int32_t i = 0; i < s.len; i++)
        if (s.p[i] == '.' || s.p[i] == '_')
            return true;
    return false;
}

/* Kafka's Topic.hasCollision: equal once every '.' becomes '_'. */
static bool names_collide(kstr_t a, const char *b, int32_t blen)
{
    if (a.len != blen)
        return false;
    for (int32_t i = 0; i < blen; i++) {
        char x = a.p[i] == '.' ? '_' : a.p[i];
        char y = b[i] == '.' ? '_' : b[i];
        if (x != y)
            return false;
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* CreateTopics                                                        */

struct kv_list {
    struct topic_config_kv *kv;
    size_t n;
};

/* Kafka's computeConfigChanges + the topic config validation: null
 * values first, then each pair and the cross-key checks. Duplicate keys:
 * the last value wins (Kafka builds a map). Strings go to arena. */
static int check_create_configs(struct controller *c, const struct topic_spec *spec, struct arena *a,
                                struct kv_list *out, char *msg, size_t msglen)
{
    out->kv = arena_alloc(a, (size_t)(spec->nconfigs > 0 ? spec->nconfigs : 1) * sizeof *out->kv);
    out->n = 0;
    struct buf nulls = BUF_INIT;
    for (int32_t i = 0; i < spec->nconfigs; i++) {
        if (spec->config_values[i].len < 0) {
            if (nulls.len)
                buf_put_u8(&nulls, ',');
            if (spec->config_keys[i].len > 0)
                buf_append(&nulls, spec->config_keys[i].p, (size_t)spec->config_keys[i].len);
        }
    }
    if (nulls.len) {
        int rc = err_msg(msg, msglen, KERR_INVALID_CONFIG, "Null value not supported for topic configs: %.*s",
                         (int)nulls.len, (const char *)nulls.data);
        buf_free(&nulls);
        return rc;
    }
    buf_free(&nulls);
    for (int32_t i = 0; i < spec->nconfigs; i++) {
        char *key = kstr_dup(a, spec->config_keys[i]);
        char *value = kstr_dup(a, spec->config_values[i]);
        size_t j;
        for (j = 0; j < out->n; j++)
            if (strcmp(out->kv[j].key, key) == 0)
                break;
        out->kv[j].key = key;
        out->kv[j].value = value;
        if (j == out->n)
            out->n++;
    }
    if (out->n == 0)
        return 0;
    char err[512];
    if (topic_config_validate_all(ctl_cfg(c), out->kv, out->n, err, sizeof err) != 0)
        return err_msg(msg, msglen, KERR_INVALID_CONFIG, "%s", err);
    return 0;
}

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const struct topic_config_kv *)a)->key, ((const struct topic_config_kv *)b)->key);
}

static const char *POLICY_TOO_LARGE = "Unable to perform excessively large batch operation.";

/* Everything of createTopic after the configs: the partitions and their
 * replicas, as records appended to rs. */
static int plan_partitions(const struct controller *c, const struct mimage *img,
                           const struct topic_spec *spec, const kuuid_t *id, size_t nother_records,
                           struct recs *rs, char *msg, size_t msglen)
{
    if (spec->nassign > 0) {
        if (spec->replication_factor != -1)
            return err_msg(msg, msglen, KERR_INVALID_REQUEST,
                           "A manual partition assignment was specified, but replication factor was "
                           "not set to -1.");
        if (spec->num_partitions != -1)
            return err_msg(msg, msglen, KERR_INVALID_REQUEST,
                           "A manual partition assignment was specified, but numPartitions was not set "
                           "to -1.");
        if ((size_t)spec->nassign + nother_records > CONTROLLER_MAX_RECORDS_PER_OP)
            return err_msg(msg, msglen, KERR_POLICY_VIOLATION, "%s", POLICY_TOO_LARGE);
        /* slot[i]: which assignment gives partition i, -1 none yet. */
        int32_t *slot = xmalloc((size_t)spec->nassign * sizeof *slot);
        for (int32_t i = 0; i < spec->nassign; i++)
            slot[i] = -1;
        int rc = 0;
        int32_t rf = -1;
        for (int32_t i = 0; i < spec->nassign && rc == 0; i++) {
            int32_t idx = spec->assign_index ? spec->assign_index[i] : i;
            bool dup = false;
            for (int32_t j = 0; j < i && !dup; j++)
                dup = (spec->assign_index ? spec->assign_index[j] : j) == idx;
            if (dup) {
                rc = err_msg(msg, msglen, KERR_INVALID_REPLICA_ASSIGNMENT,
                             "Found multiple manual partition assignments for partition %d", (int)idx);
                break;
            }
            rc = validate_manual(img, spec->assign[i], spec->assign_len[i], rf, msg, msglen);
            if (rc)
                break;
            rf = spec->assign_len[i];
            if (!any_active(img, spec->assign[i], spec->assign_len[i])) {
                rc = err_msg(msg, msglen, KERR_INVALID_REPLICA_ASSIGNMENT,
                             "All brokers specified in the manual partition assignment for partition %d "
                             "are fenced or in controlled shutdown.",
                             (int)idx);
                break;
            }
            if (idx >= 0 && idx < spec->nassign)
                slot[idx] = i;
        }
        for (int32_t i = 0; i < spec->nassign && rc == 0; i++)
            if (slot[i] < 0)
                rc = err_msg(msg, msglen, KERR_INVALID_REPLICA_ASSIGNMENT,
                             "partitions should be a consecutive 0-based integer sequence");
        for (int32_t i = 0; i < spec->nassign && rc == 0; i++)
            add_partition_record(rs, img, id, i, spec->assign[slot[i]], spec->assign_len[slot[i]]);
        free(slot);
        return rc;
    }
    if (spec->replication_factor < -1 || spec->replication_factor == 0)
        return err_msg(msg, msglen, KERR_INVALID_REPLICATION_FACTOR,
                       "Replication factor must be larger than 0, or -1 to use the default value.");
    if (spec->num_partitions < -1 || spec->num_partitions == 0)
        return err_msg(msg, msglen, KERR_INVALID_PARTITIONS,
                       "Number of partitions was set to an invalid non-positive value.");
    int32_t nparts = spec->num_partitions == -1 ? ctl_cfg(c)->num_partitions : spec->num_partitions;
    int32_t rf = spec->replication_factor == -1 ? ctl_cfg(c)->default_replication_factor
                                                : spec->replication_factor;
    /* The placer's checks come before the batch limit in Kafka (it runs
     * first); make them without placing anything. */
    char why[256];
    int32_t none;
    int rc = place(img, 0, 0, rf, &none, why, sizeof why);
    if (rc)
        return err_msg(msg, msglen, rc, "Unable to replicate the partition %d time(s): %s", (int)rf, why);
    if ((size_t)nparts + nother_records > CONTROLLER_MAX_RECORDS_PER_OP)
        return err_msg(msg, msglen, KERR_POLICY_VIOLATION, "%s", POLICY_TOO_LARGE);
    int32_t *rep = xmalloc((size_t)nparts * (size_t)rf * sizeof *rep);
    place(img, place_start(img), nparts, rf, rep, why, sizeof why);
    for (int32_t p = 0; p < nparts && rc == 0; p++) {
        const int32_t *r = &rep[(size_t)p * (size_t)rf];
        if (!any_active(img, r, rf))
            rc = err_msg(msg, msglen, KERR_INVALID_REPLICATION_FACTOR,
                         "Unable to replicate the partition %d time(s): All brokers are currently fenced "
                         "or in controlled shutdown.",
                         (int)rf);
        else
            add_partition_record(rs, img, id, p, r, rf);
    }
    free(rep);
    return rc;
}

/* Caller holds op_lock. */
static int create_topic_locked(struct controller *c, const struct topic_spec *spec, bool validate_only,
                               kuuid_t *id_out, char *msg, size_t msglen, struct ctl_op **op)
{
    const struct mimage *img = c->spec;
    /* ControllerApis refuses the metadata topic before anything else. */
    if (kstr_eqc(spec->name, CLUSTER_METADATA_TOPIC))
        return err_msg(msg, msglen, KERR_INVALID_REQUEST, "Creation of internal topic %s is prohibited.",
                       CLUSTER_METADATA_TOPIC);
    /* validateNewTopicNames, then "already exists" overrides it. */
    if (mimage_topic(img, spec->name))
        return err_msg(msg, msglen, KERR_TOPIC_ALREADY_EXISTS, "Topic '%.*s' already exists.",
                       (int)spec->name.len, spec->name.p);
    int rc = validate_topic_name(spec->name, msg, msglen);
    if (rc)
        return rc;
    if (has_collision_chars(spec->name)) {
        for (int32_t i = 0; i < img->ntopics; i++) {
            const struct mi_topic *t = img->topics[i];
            if (names_collide(spec->name, t->name, t->name_len))
                return err_msg(msg, msglen, KERR_INVALID_TOPIC_EXCEPTION,
                               "Topic '%.*s' collides with existing topic: %s", (int)spec->name.len,
                               spec->name.p, t->name);
        }
    }
    struct recs rs;
    recs_init(&rs);
    struct kv_list kv;
    rc = check_create_configs(c, spec, &rs.arena, &kv, msg, msglen);
    if (rc) {
        recs_free(&rs);
        return rc;
    }
    kuuid_t id;
    if (uuid_random(id.b) < 0) {
        recs_free(&rs);
        slog_error("metadata: no randomness for a topic id: %s", strerror(errno));
        return err_msg(msg, msglen, KERR_UNKNOWN_SERVER_ERROR, "%s", "");
    }
    topic_record_t *tr = arena_alloc(&rs.arena, sizeof *tr);
    topic_record_init(tr);
    tr->name = (kstr_t){kstr_dup(&rs.arena, spec->name), spec->name.len};
    tr->topic_id = id;
    recs_add(&rs, KMETA_TOPIC_RECORD, 0, tr);
    /* ConfigRecords go after the TopicRecord and before the partitions,
     * as Kafka writes them. */
    if (kv.n > 1)
        qsort(kv.kv, kv.n, sizeof *kv.kv, kv_cmp);
    for (size_t i = 0; i < kv.n; i++) {
        config_record_t *cr = arena_alloc(&rs.arena, sizeof *cr);
        config_record_init(cr);
        cr->resource_type = CONTROLLER_RESOURCE_TOPIC;
        cr->resource_name = tr->name;
        cr->name = KSTR(kv.kv[i].key);
        cr->value = KSTR(kv.kv[i].value);
        recs_add(&rs, KMETA_CONFIG_RECORD, 0, cr);
    }
    rc = plan_partitions(c, img, spec, &id, rs.n, &rs, msg, msglen);
    if (rc == 0 && !validate_only)
        rc = ctl_submit_locked(c, &rs, msg, msglen, op);
    recs_free(&rs);
    if (rc == 0) {
        if (id_out)
            *id_out = id;
        if (!validate_only)
            slog_info("metadata: created topic %.*s with %d partition(s)", (int)spec->name.len,
                      spec->name.p, (int)mimage_topic(c->spec, spec->name)->npartitions);
    }
    return rc;
}

int controller_create_topic(struct controller *c, const struct topic_spec *spec, bool validate_only,
                            kuuid_t *id_out, char *msg, size_t msglen, struct ctl_op **op)
{
    msg[0] = 0;
    struct ctl_op *mine = NULL;
    pthread_mutex_lock(&c->op_lock);
    int rc = not_active(c, msg, msglen);
    if (rc == 0)
        rc = create_topic_locked(c, spec, validate_only, id_out, msg, msglen, &mine);
    pthread_mutex_unlock(&c->op_lock);
    return op_finish(c, rc, mine, op);
}

bool controller_node_alone(const struct samsa_config *cfg, const struct mimage *img)
{
    return cfg->n_voters == 1 && cfg->voters[0].id == cfg->node_id && cfg->role_broker && img &&
           img->nbrokers == 1 && img->brokers[0].id == cfg->node_id;
}

/* The replication factor (and min.insync.replicas, min_isr NULL: none
 * set) an internal topic gets here: the configured ones, at most 1 on a
 * node that is alone (controller_node_alone). Returns 0, or
 * INVALID_REPLICATION_FACTOR with msg while fewer brokers are registered
 * and unfenced than that factor: Kafka refuses to create the topic then
 * too, and the client retries (COORDINATOR_NOT_AVAILABLE). */
static int internal_replication(struct controller *c, const char *topic_word, const char *key, int16_t *rf,
                                int32_t *min_isr, char *msg, size_t msglen)
{
    const struct samsa_config *cfg = ctl_cfg(c);
    struct mimage *img = controller_image(c);
    bool alone = controller_node_alone(cfg, img);
    int32_t live = 0;
    for (int32_t i = 0; img && i < img->nbrokers; i++)
        live += !img->brokers[i].fenced && !img->brokers[i].in_controlled_shutdown;
    mimage_release(img);
    if (alone && *rf > 1)
        *rf = 1;
    if (alone && min_isr && *min_isr > 1)
        *min_isr = 1;
    if (live < *rf)
        return err_msg(msg, msglen, KERR_INVALID_REPLICATION_FACTOR,
                       "Number of alive brokers '%d' does not meet the required replication factor '%d' for "
                       "the %s topic (configured via '%s'). This error can be ignored if the cluster is "
                       "starting up and not all brokers are up yet.",
                       (int)live, (int)*rf, topic_word, key);
    return 0;
}

int controller_auto_create_topic(struct controller *c, kstr_t name, char *msg, size_t msglen, struct ctl_op **op)
{
    const struct samsa_config *cfg = ctl_cfg(c);
    struct topic_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.name = name;
    spec.num_partitions = cfg->num_partitions;
    spec.replication_factor = (int16_t)cfg->default_replication_factor;
    char seg[32], isr[32];
    kstr_t keys[5], values[5];
    int64_t v;
    if (op)
        *op = NULL;
    msg[0] = 0;
    /* Kafka's GroupCoordinatorService.groupMetadataTopicConfigs and
     * TransactionStateManager.transactionTopicConfigs: __consumer_offsets
     * sets no min.insync.replicas (the broker's applies). */
    if (kstr_eqc(name, "__consumer_offsets")) {
        spec.num_partitions = cfg->offsets_topic_num_partitions;
        spec.replication_factor = cfg->offsets_topic_replication_factor;
        int rc = internal_replication(c, "offsets", "offsets.topic.replication.factor", &spec.replication_factor,
                                      NULL, msg, msglen);
        if (rc)
            return rc;
        snprintf(seg, sizeof seg, "%lld",
                 (long long)(config_get_long(cfg, "offsets.topic.segment.bytes", &v) ? v : 104857600));
        keys[0] = KSTR_LIT("cleanup.policy"), values[0] = KSTR_LIT("compact");
        keys[1] = KSTR_LIT("compression.type"), values[1] = KSTR_LIT("producer");
        keys[2] = KSTR_LIT("segment.bytes"), values[2] = KSTR(seg);
        spec.nconfigs = 3;
    } else if (kstr_eqc(name, "__transaction_state")) {
        spec.num_partitions =
            config_get_long(cfg, "transaction.state.log.num.partitions", &v) ? (int32_t)v : 50;
        spec.replication_factor = cfg->transaction_state_log_replication_factor;
        int32_t min_isr = cfg->transaction_state_log_min_isr;
        int rc = internal_replication(c, "transactions", "transaction.state.log.replication.factor",
                                      &spec.replication_factor, &min_isr, msg, msglen);
        if (rc)
            return rc;
        snprintf(seg, sizeof seg, "%lld",
                 (long long)(config_get_long(cfg, "transaction.state.log.segment.bytes", &v) ? v
                                                                                             : 104857600));
        snprintf(isr, sizeof isr, "%d", (int)min_isr);
        keys[0] = KSTR_LIT("unclean.leader.election.enable"), values[0] = KSTR_LIT("false");
        keys[1] = KSTR_LIT("compression.type"), values[1] = KSTR_LIT("uncompressed");
        keys[2] = KSTR_LIT("cleanup.policy"), values[2] = KSTR_LIT("compact");
        keys[3] = KSTR_LIT("min.insync.replicas"), values[3] = KSTR(isr);
        keys[4] = KSTR_LIT("segment.bytes"), values[4] = KSTR(seg);
        spec.nconfigs = 5;
    }
    spec.config_keys = keys;
    spec.config_values = values;
    if (!controller_is_active(c)) {
        /* Kafka's AutoTopicCreationManager: a CreateTopics to the active
         * controller, not waited for (the client retries Metadata). */
        forward_create(c, &spec);
        msg[0] = 0;
        return 0;
    }
    int rc = controller_create_topic(c, &spec, false, NULL, msg, msglen, op);
    if (rc == KERR_TOPIC_ALREADY_EXISTS) {
        msg[0] = 0;
        rc = 0;
    }
    return rc;
}

/* ------------------------------------------------------------------ */
/* DeleteTopics                                                        */

int controller_delete_topic(struct controller *c, const kuuid_t *id, char *msg, size_t msglen,
                            struct ctl_op **op)
{
    msg[0] = 0;
    struct ctl_op *mine = NULL;
    pthread_mutex_lock(&c->op_lock);
    int rc = not_active(c, msg, msglen);
    const struct mi_topic *t = rc ? NULL : mimage_topic_by_id(c->spec, id);
    if (rc) {
        /* not the active controller */
    } else if (!t) {
        /* Kafka throws UnknownTopicIdException with the default message,
         * which ApiError.fromThrowable drops. */
        rc = KERR_UNKNOWN_TOPIC_ID;
    } else {
        char name[MAX_TOPIC_NAME_LENGTH * 4 + 1];
        snprintf(name, sizeof name, "%s", t->name);
        struct recs rs;
        recs_init(&rs);
        remove_topic_record_t *rr = arena_alloc(&rs.arena, sizeof *rr);
        remove_topic_record_init(rr);
        rr->topic_id = *id;
        recs_add(&rs, KMETA_REMOVE_TOPIC_RECORD, 0, rr);
        rc = ctl_submit_locked(c, &rs, msg, msglen, &mine);
        recs_free(&rs);
        if (rc == 0)
            slog_info("metadata: deleting topic %s", name);
    }
    pthread_mutex_unlock(&c->op_lock);
    return op_finish(c, rc, mine, op);
}

/* ------------------------------------------------------------------ */
/* CreatePartitions                                                    */

static int create_partitions_locked(struct controller *c, kstr_t topic, int32_t count, int32_t nassign,
                                    const int32_t *const *assign, const int32_t *assign_len,
                                    bool validate_only, char *msg, size_t msglen, struct ctl_op **op)
{
    const struct mimage *img = c->spec;
    const struct mi_topic *t = mimage_topic(img, topic);
    if (!t)
        return KERR_UNKNOWN_TOPIC_OR_PARTITION;
    if (count == t->npartitions)
        return err_msg(msg, msglen, KERR_INVALID_PARTITIONS, "Topic already has %d partition(s).",
                       (int)t->npartitions);
    if (count < t->npartitions)
        return err_msg(msg, msglen, KERR_INVALID_PARTITIONS,
                       "The topic %s currently has %d partition(s); %d would not be an increase.", t->name,
                       (int)t->npartitions, (int)count);
    int32_t additional = count - t->npartitions;
    if (nassign >= 0 && nassign != additional)
        return err_msg(msg, msglen, KERR_INVALID_REPLICA_ASSIGNMENT,
                       "Attempted to add %d additional partition(s), but only %d assignment(s) were "
                       "specified.",
                       (int)additional, (int)nassign);
    if (t->npartitions == 0)
        return err_msg(msg, msglen, KERR_UNKNOWN_SERVER_ERROR,
                       "Invalid state: topic %s appears to have no partitions.", t->name);
    int32_t rf = t->partitions[0].nreplicas;
    if (additional > CONTROLLER_MAX_RECORDS_PER_OP)
        return err_msg(msg, msglen, KERR_POLICY_VIOLATION, "%s", POLICY_TOO_LARGE);
    struct recs rs;
    recs_init(&rs);
    int rc = 0;
    int32_t start = t->npartitions;
    if (nassign >= 0) {
        for (int32_t i = 0; i < nassign && rc == 0; i++) {
            rc = validate_manual(img, assign[i], assign_len[i], rf, msg, msglen);
            if (rc == 0 && !any_active(img, assign[i], assign_len[i]))
                rc = err_msg(msg, msglen, KERR_INVALID_REPLICA_ASSIGNMENT,
                             "All brokers specified in the manual partition assignment for partition %d are "
                             "fenced or in controlled shutdown.",
                             (int)(start + i));
            if (rc == 0)
                add_partition_record(&rs, img, &t->id, start + i, assign[i], assign_len[i]);
        }
    } else {
        int32_t *rep = xmalloc((size_t)additional * (size_t)(rf > 0 ? rf : 1) * sizeof *rep);
        rc = place(img, start, additional, rf, rep, msg, msglen);
        for (int32_t p = 0; p < additional && rc == 0; p++) {
            const int32_t *r = &rep[(size_t)p * (size_t)rf];
            if (!any_active(img, r, rf))
                rc = err_msg(msg, msglen, KERR_INVALID_REPLICATION_FACTOR,
                             "Unable to replicate the partition %d time(s): All brokers are currently "
                             "fenced or in controlled shutdown.",
                             (int)rf);
            else
                add_partition_record(&rs, img, &t->id, start + p, r, rf);
        }
        free(rep);
    }
    if (rc == 0 && !validate_only) {
        char name[MAX_TOPIC_NAME_LENGTH * 4 + 1];
        snprintf(name, sizeof name, "%s", t->name);
        rc = ctl_submit_locked(c, &rs, msg, msglen, op);
        if (rc == 0)
            slog_info("metadata: topic %s growing to %d partition(s)", name, (int)count);
    }
    recs_free(&rs);
    return rc;
}

int controller_create_partitions(struct controller *c, kstr_t topic, int32_t count, int32_t nassign,
                                 const int32_t *const *assign, const int32_t *assign_len,
                                 bool validate_only, char *msg, size_t msglen, struct ctl_op **op)
{
    msg[0] = 0;
    struct ctl_op *mine = NULL;
    pthread_mutex_lock(&c->op_lock);
    int rc = not_active(c, msg, msglen);
    if (rc == 0)
        rc = create_partitions_locked(c, topic, count, nassign, assign, assign_len, validate_only, msg, msglen,
                                      &mine);
    pthread_mutex_unlock(&c->op_lock);
    return op_finish(c, rc, mine, op);
}

/* ------------------------------------------------------------------ */
/* Configs                                                             */

static int alter_configs_locked(struct controller *c, int8_t type, kstr_t resource, int32_t n,
                                const kstr_t *keys, const kstr_t *values, bool validate_only, char *msg,
                                size_t msglen, struct ctl_op **op)
{
    const struct mimage *img = c->spec;
    struct recs rs;
    recs_init(&rs);
    int rc = 0;
    if (type == CONTROLLER_RESOURCE_TOPIC) {
        const struct mi_topic *t = mimage_topic(img, resource);
        if (!t) {
            recs_free(&rs);
            return KERR_UNKNOWN_TOPIC_OR_PARTITION;
        }
        /* The overrides as they will be: current ones, then the changes. */
        size_t cap = (size_t)t->nconfigs + (size_t)(n > 0 ? n : 0) + 1;
        struct topic_config_kv *kv = arena_alloc(&rs.arena, cap * sizeof *kv);
        size_t nkv = 0;
        for (int32_t i = 0; i < t->nconfigs; i++)
            kv[nkv++] = (struct topic_config_kv){t->configs[i].key, t->configs[i].value};
        for (int32_t i = 0; i < n; i++) {
            char *key = kstr_dup(&rs.arena, keys[i]);
            size_t j;
            for (j = 0; j < nkv; j++)
                if (strcmp(kv[j].key, key) == 0)
                    break;
            if (values[i].len < 0) {
                if (j < nkv)
                    kv[j] = kv[--nkv];
                continue;
            }
            kv[j].key = key;
            kv[j].value = kstr_dup(&rs.arena, values[i]);
            if (j == nkv)
                nkv++;
        }
        char err[512];
        if (topic_config_validate_all(ctl_cfg(c), kv, nkv, err, sizeof err) != 0)
            rc = err_msg(msg, msglen, KERR_INVALID_CONFIG, "%s", err);
    } else if (type == CONTROLLER_RESOURCE_BROKER) {
        char node[16];
        snprintf(node, sizeof node, "%d", (int)c->env.node_id);
        if (resource.len > 0 && !kstr_eqc(resource, node))
            rc = err_msg(msg, msglen, KERR_INVALID_REQUEST, "Unexpected broker id, expected %s, but received %.*s",
                         node, (int)resource.len, resource.p);
    } else {
        rc = err_msg(msg, msglen, KERR_INVALID_REQUEST, "Unsupported resource type %d", (int)type);
    }
    for (int32_t i = 0; i < n && rc == 0; i++) {
        config_record_t *cr = arena_alloc(&rs.arena, sizeof *cr);
        config_record_init(cr);
        cr->resource_type = type;
        cr->resource_name = (kstr_t){kstr_dup(&rs.arena, resource), resource.len > 0 ? resource.len : 0};
        cr->name = (kstr_t){kstr_dup(&rs.arena, keys[i]), keys[i].len};
        cr->value = values[i].len < 0 ? KSTR_NULL
                                      : (kstr_t){kstr_dup(&rs.arena, values[i]), values[i].len};
        recs_add(&rs, KMETA_CONFIG_RECORD, 0, cr);
    }
    if (rc == 0 && !validate_only && rs.n > 0)
        rc = ctl_submit_locked(c, &rs, msg, msglen, op);
    recs_free(&rs);
    return rc;
}

int controller_alter_configs(struct controller *c, int8_t resource_type, kstr_t resource_name, int32_t n,
                             const kstr_t *keys, const kstr_t *values, bool validate_only, char *msg,
                             size_t msglen, struct ctl_op **op)
{
    msg[0] = 0;
    struct ctl_op *mine = NULL;
    pthread_mutex_lock(&c->op_lock);
    int rc = not_active(c, msg, msglen);
    if (rc == 0)
        rc = alter_configs_locked(c, resource_type, resource_name, n, keys, values, validate_only, msg, msglen,
                                  &mine);
    pthread_mutex_unlock(&c->op_lock);
    return op_finish(c, rc, mine, op);
}

/* The value key has at one dynamic layer of cfg (NULL: none), read back
 * through DescribeConfigs' synonyms, which list every layer's value. */
static const char *layer_value(const struct samsa_config *cfg, const char *key, bool cluster_default,
                               struct config_entry *e)
{
    if (!config_describe_key(cfg, key, cluster_default, e))
        return NULL;
    enum config_source want =
        cluster_default ? CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER : CONFIG_SOURCE_DYNAMIC_BROKER;
    for (size_t i = 0; i < e->n_synonyms; i++)
        if (e->synonyms[i].source == want && strcmp(e->synonyms[i].name, key) == 0)
            return e->synonyms[i].value;
    return NULL;
}

static bool alter_names_key(const struct config_alter *ch, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(ch[i].name, key) == 0)
            return true;
    return false;
}

static int alter_broker_locked(struct controller *c, bool cluster_default, bool replace,
                               const struct config_alter *ch, size_t n, bool validate_only, char *msg,
                               size_t msglen, struct ctl_op **op)
{
    /* Never touch the published config: workers read it concurrently.
     * The copy only validates and normalises: every node publishes the
     * config the committed records make (publish_draft). */
    struct samsa_config *next = config_dup(ctl_cfg(c));
    const struct mimage *img = c->spec;
    const struct mi_config *layer = cluster_default ? img->broker_default_configs : img->broker_configs;
    int32_t nlayer = cluster_default ? img->nbroker_default_configs : img->nbroker_configs;
    char why[256];
    /* Legacy AlterConfigs: keys of the layer the request leaves out go,
     * unchecked, as Kafka's legacyAlterConfigResource drops them without
     * validating them (a stored key may no longer be dynamic). */
    if (replace)
        for (int32_t i = 0; i < nlayer; i++)
            if (!alter_names_key(ch, n, layer[i].key))
                (void)config_set_dynamic(next, cluster_default, layer[i].key, NULL, why, sizeof why);
    int rc = config_alter_broker(next, cluster_default, ch, n, validate_only, msg, msglen);
    if (rc != 0 || validate_only) {
        config_free(next);
        return rc;
    }

    struct recs rs;
    recs_init(&rs);
    char node[16] = "";
    if (!cluster_default)
        snprintf(node, sizeof node, "%d", (int)c->env.node_id);
    kstr_t resource = kstr_arena(&rs.arena, node);
    struct config_entry *e = arena_alloc(&rs.arena, sizeof *e);
    size_t nrec = n + (replace ? (size_t)nlayer : 0);
    for (size_t i = 0; i < nrec; i++) {
        const char *key, *value;
        if (i < n) {
            key = ch[i].name;
            /* The stored form is the value as the config now holds it
             * (normalised; APPEND/SUBTRACT resolved). Kafka writes a record
             * for every key of a broker change, changed or not
             * (ConfigurationControlManager, KAFKA-14136). */
            value = ch[i].op == CONFIG_OP_DELETE ? NULL : layer_value(next, key, cluster_default, e);
            if (ch[i].op != CONFIG_OP_DELETE && !value)
                value = ch[i].value; /* sensitive: not reported, stored as given */
        } else {
            key = layer[i - n].key;
            if (alter_names_key(ch, n, key))
                continue;
            value = NULL;
        }
        config_record_t *cr = arena_alloc(&rs.arena, sizeof *cr);
        config_record_init(cr);
        cr->resource_type = CONTROLLER_RESOURCE_BROKER;
        cr->resource_name = resource;
        cr->name = kstr_arena(&rs.arena, key);
        cr->value = value ? kstr_arena(&rs.arena, value) : KSTR_NULL;
        recs_add(&rs, KMETA_CONFIG_RECORD, 0, cr);
    }
    rc = rs.n > 0 ? ctl_submit_locked(c, &rs, msg, msglen, op) : 0;
    config_free(next);
    recs_free(&rs);
    return rc;
}

int controller_alter_broker_configs(struct controller *c, bool cluster_default, bool replace,
                                    const struct config_alter *changes, size_t n, bool validate_only,
                                    char *msg, size_t msglen, struct ctl_op **op)
{
    msg[0] = 0;
    struct ctl_op *mine = NULL;
    pthread_mutex_lock(&c->op_lock);
    int rc = not_active(c, msg, msglen);
    if (rc == 0)
        rc = alter_broker_locked(c, cluster_default, replace, changes, n, validate_only, msg, msglen, &mine);
    pthread_mutex_unlock(&c->op_lock);
    return op_finish(c, rc, mine, op);
}

/* Java's Integer.valueOf, as Kafka's ControllerConfigurationValidator
 * parses a broker resource name. */
static bool java_int(kstr_t s, int32_t *out)
{
    int32_t i = 0;
    if (s.len <= 0)
        return false;
    bool neg = s.p[0] == '-';
    if (s.p[0] == '-' || s.p[0] == '+')
        i = 1;
    if (i == s.len)
        return false;
    int64_t v = 0;
    for (; i < s.len; i++) {
        if (s.p[i] < '0' || s.p[i] > '9')
            return false;
        v = v * 10 + (s.p[i] - '0');
        if (v > (int64_t)INT32_MAX + 1)
            return false;
    }
    v = neg ? -v : v;
    if (v > INT32_MAX || v < INT32_MIN)
        return false;
    *out = (int32_t)v;
    return true;
}

static const char *op_name(enum config_op op)
{
    return op == CONFIG_OP_APPEND ? "APPEND" : "SUBTRACT";
}

/* Kafka's ConfigurationControlManager for a BROKER resource naming a
 * broker, on the raw values the image keeps (the named broker validated
 * the change against its own config before forwarding it, as Kafka's
 * ConfigAdminManager does; every broker applies its own layer when the
 * records come). Caller holds op_lock, active. */
static int alter_broker_resource_locked(struct controller *c, kstr_t name, bool replace, const struct config_alter *ch,
                                        size_t n, bool validate_only, char *msg, size_t msglen, struct ctl_op **op)
{
    struct recs rs;
    recs_init(&rs);
    char *rname = kstr_dup(&rs.arena, name);
    const struct mi_broker_configs *layer = mimage_broker_configs(c->spec, rname);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const char *value = NULL;
        if (replace || ch[i].op == CONFIG_OP_SET) {
            value = ch[i].value;
        } else if (ch[i].op == CONFIG_OP_APPEND || ch[i].op == CONFIG_OP_SUBTRACT) {
            const struct config_def *d = config_def_find(ch[i].name);
            if (!d || d->type != CONFIG_TYPE_LIST) {
                rc = err_msg(msg, msglen, KERR_INVALID_CONFIG, "Can't %s to key %s because its type is not LIST.",
                             op_name(ch[i].op), ch[i].name);
                break;
            }
            const char *cur = NULL;
            for (int32_t k = 0; layer && k < layer->n && !cur; k++)
                if (strcmp(layer->configs[k].key, ch[i].name) == 0)
                    cur = layer->configs[k].value;
            char *next = config_list_apply(cur ? cur : d->dflt, ch[i].op, ch[i].value ? ch[i].value : "");
            value = arena_strndup(&rs.arena, next, strlen(next));
            free(next);
        }
        /* Kafka writes a record for every key of a broker change, changed
         * or not (KAFKA-14136: brokers reload on it). */
        config_record_t *cr = arena_alloc(&rs.arena, sizeof *cr);
        config_record_init(cr);
        cr->resource_type = CONTROLLER_RESOURCE_BROKER;
        cr->resource_name = KSTR(rname);
        cr->name = kstr_arena(&rs.arena, ch[i].name);
        cr->value = value ? kstr_arena(&rs.arena, value) : KSTR_NULL;
        recs_add(&rs, KMETA_CONFIG_RECORD, 0, cr);
    }
    /* The legacy API removes the keys it does not name. */
    for (int32_t k = 0; rc == 0 && replace && layer && k < layer->n; k++) {
        bool named = false;
        for (size_t i = 0; i < n && !named; i++)
            named = strcmp(ch[i].name, layer->configs[k].key) == 0;
        if (named)
            continue;
        config_record_t *cr = arena_alloc(&rs.arena, sizeof *cr);
        config_record_init(cr);
        cr->resource_type = CONTROLLER_RESOURCE_BROKER;
        cr->resource_name = KSTR(rname);
        cr->name = kstr_arena(&rs.arena, layer->configs[k].key);
        cr->value = KSTR_NULL;
        recs_add(&rs, KMETA_CONFIG_RECORD, 0, cr);
    }
    /* ControllerConfigurationValidator.validateBrokerName, then the
     * existence check (QuorumController.ConfigResourceExistenceChecker:
     * a registered broker or a voter). */
    int32_t id = 0;
    if (rc == 0 && !java_int(name, &id))
        rc = err_msg(msg, msglen, KERR_INVALID_REQUEST, "Unable to parse broker name as a base 10 number.");
    else if (rc == 0 && id < 0)
        rc = err_msg(msg, msglen, KERR_INVALID_REQUEST, "Invalid negative broker ID.");
    if (rc == 0 && !mimage_broker(c->spec, id)) {
        bool voter = false;
        for (size_t v = 0; v < ctl_cfg(c)->n_voters && !voter; v++)
            voter = ctl_cfg(c)->voters[v].id == id;
        if (!voter)
            rc = err_msg(msg, msglen, KERR_BROKER_ID_NOT_REGISTERED, "No node with id %d found.", (int)id);
    }
    if (rc == 0 && !validate_only && rs.n > 0) {
        rc = ctl_submit_locked(c, &rs, msg, msglen, op);
        if (rc == 0)
            slog_info("metadata: %zu dynamic config change(s) for broker %s", rs.n, rname);
    }
    recs_free(&rs);
    return rc;
}

int controller_alter_broker_resource(struct controller *c, kstr_t name, bool replace, const struct config_alter *changes,
                                     size_t n, bool validate_only, char *msg, size_t msglen, struct ctl_op **op)
{
    msg[0] = 0;
    struct ctl_op *mine = NULL;
    pthread_mutex_lock(&c->op_lock);
    int rc = not_active(c, msg, msglen);
    if (rc == 0)
        rc = alter_broker_resource_locked(c, name, replace, changes, n, validate_only, msg, msglen, &mine);
    pthread_mutex_unlock(&c->op_lock);
    return op_finish(c, rc, mine, op);
}

int controller_check_broker_configs(struct controller *c, bool cluster_default, bool replace,
                                    const struct config_alter *changes, size_t n, struct samsa_config **out,
                                    char *msg, size_t msglen)
{
    msg[0] = 0;
    if (out)
        *out = NULL;
    /* The layer as committed here (a broker that is not the active
     * controller has no speculative state). */
    struct samsa_config *next = config_dup(ctl_cfg(c));
    struct mimage *img = controller_image(c);
    const struct mi_config *layer = cluster_default ? img->broker_default_configs : img->broker_configs;
    int32_t nlayer = cluster_default ? img->nbroker_default_configs : img->nbroker_configs;
    char why[256];
    if (replace)
        for (int32_t i = 0; i < nlayer; i++)
            if (!alter_names_key(changes, n, layer[i].key))
                (void)config_set_dynamic(next, cluster_default, layer[i].key, NULL, why, sizeof why);
    int rc = out ? config_alter_broker_preview(next, cluster_default, changes, n, out, msg, msglen)
                 : config_alter_broker(next, cluster_default, changes, n, true, msg, msglen);
    mimage_release(img);
    config_free(next);
    return rc;
}

int controller_check_topic_name(kstr_t name, char *msg, size_t msglen)
{
    msg[0] = 0;
    return validate_topic_name(name, msg, msglen);
}


/* ------------------------------------------------------------------ */
/* Open and close                                                      */

uint64_t controller_acl_gen(struct controller *c) { return atomic_load_explicit(&c->acl_gen, memory_order_acquire); }

/* Every thread keeps a reference to the last image it took and the
 * generation it was published at: while the generation has not moved,
 * a reader takes its reference from there with one atomic load and the
 * image's refcount, and no lock (every request takes the image; under a
 * process-wide mutex the workers would meet there). A cached image is
 * kept alive until its thread takes another one or exits (the key's
 * destructor), or the thread closes its controller: at most one image
 * per thread beyond the current one. */
struct img_cache {
    uint64_t gen;
    struct controller *c;
    struct mimage *img; /* one reference, owned by the cache */
    bool keyed;         /* img_key is set on this thread */
};
static _Thread_local struct img_cache tl_img;
static pthread_key_t img_key;
static pthread_once_t img_key_once = PTHREAD_ONCE_INIT;

static void img_cache_drop(void *arg)
{
    struct img_cache *ic = arg;
    struct mimage *old = ic->img;
    ic->img = NULL;
    ic->c = NULL;
    ic->gen = 0;
    mimage_release(old);
}

static void img_key_init(void) { pthread_key_create(&img_key, img_cache_drop); }

struct mimage *controller_image(struct controller *c)
{
    struct img_cache *ic = &tl_img;
    uint64_t gen = atomic_load_explicit(&c->img_gen, memory_order_acquire);
    if (ic->img && ic->gen == gen)
        return mimage_ref(ic->img);
    pthread_mutex_lock(&c->img_lock);
    struct mimage *m = c->cur ? mimage_ref(c->cur) : NULL;
    gen = atomic_load_explicit(&c->img_gen, memory_order_relaxed);
    pthread_mutex_unlock(&c->img_lock);
    if (!ic->keyed) {
        pthread_once(&img_key_once, img_key_init);
        pthread_setspecific(img_key, ic);
        ic->keyed = true;
    }
    struct mimage *old = ic->img;
    ic->img = m;
    ic->gen = gen;
    ic->c = c;
    mimage_release(old);
    return m ? mimage_ref(m) : NULL;
}

bool controller_is_active(struct controller *c) { return atomic_load(&c->active); }
int32_t controller_leader_id(struct controller *c) { return quorum_leader_id(c->q); }
bool controller_ready(struct controller *c) { return atomic_load(&c->ready); }
struct quorum *controller_quorum(struct controller *c) { return c->q; }

static bool ends_with_metadata_dir(const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    size_t m = strlen(METADATA_DIR_NAME);
    return n >= m && memcmp(dir + n - m, METADATA_DIR_NAME, m) == 0 && (n == m || dir[n - m - 1] == '/');
}

static void job_done(void *arg, const struct qin *j)
{
    struct controller *c = arg;
    park_notify(c->env.wake, park_key_object(j));
}

static int32_t cfg_int(const struct samsa_config *cfg, const char *key, int32_t dflt)
{
    int64_t v;
    return config_get_long(cfg, key, &v) && v > 0 && v <= INT32_MAX ? (int32_t)v : dflt;
}

/* The image at start: the newest snapshot, or empty. The log after it is
 * applied as the quorum says it is committed. */
static int load_initial(struct controller *c, char *err, size_t errlen)
{
    struct raft_log l = rlog_raft_log(quorum_rlog(c->q));
    struct raft_snapshot_id id;
    struct mi_draft *d;
    if (l.ops->latest_snapshot(l.ctx, &id)) {
        d = ctl_snapshot_load(c, &id, ctl_cfg(c), err, errlen);
        if (!d)
            return -1;
        c->applied = id.end_offset;
        c->snap_end = id.end_offset;
        c->hw = id.end_offset;
    } else {
        d = mi_draft_begin(NULL, ctl_cfg(c), c->env.node_id);
        c->applied = l.ops->start_offset(l.ctx);
        c->snap_end = -1;
    }
    publish_draft(c, d, NULL);
    return 0;
}

struct controller *controller_open(const struct controller_env *env, const char *dir, char *err, size_t errlen)
{
    struct controller *c = xcalloc(1, sizeof *c);
    c->env = *env;
    if (!c->env.cluster_id)
        c->env.cluster_id = "";
    if (!c->env.advertised_host)
        c->env.advertised_host = "";
    if (!c->env.rack)
        c->env.rack = "";
    c->orig_cfg = atomic_load(env->cfg);
    c->leader_id = -1;
    c->epoch_start = INT64_MAX;
    pthread_mutex_init(&c->op_lock, NULL);
    pthread_mutex_init(&c->img_lock, NULL);
    pthread_mutex_init(&c->fwd_lock, NULL);
    pthread_mutex_init(&c->wait_mu, NULL);
    clock_cond_init_mono(&c->wait_cv);
    pthread_mutex_init(&c->pub_mu, NULL);
    pthread_cond_init(&c->pub_cv, NULL);
    atomic_init(&c->synced, -1);
    buf_init(&c->rbuf);
    if (ends_with_metadata_dir(dir)) {
        c->dir = xstrdup(dir);
    } else {
        size_t n = strlen(dir) + sizeof METADATA_DIR_NAME + 2;
        c->dir = xmalloc(n);
        snprintf(c->dir, n, "%s/%s", dir, METADATA_DIR_NAME);
    }
    const struct samsa_config *cfg = c->orig_cfg;
    if (cfg->n_voters == 0) {
        snprintf(err, errlen, "config 'controller.quorum.voters': required (dynamic quorums through "
                              "controller.quorum.bootstrap.servers are not supported yet)");
        goto fail;
    }
    int64_t v;
    c->snap_max_bytes = config_get_long(cfg, "metadata.log.max.record.bytes.between.snapshots", &v) ? v : 20971520;
    c->snap_max_interval_ms = config_get_long(cfg, "metadata.log.max.snapshot.interval.ms", &v) ? v : 3600000;
    c->snap_at_ms = clock_mono_ms();
    c->hb_interval_ms = cfg_int(cfg, "broker.heartbeat.interval.ms", 2000);
    c->session_timeout_ms = cfg_int(cfg, "broker.session.timeout.ms", 9000);
    struct quorum_config qc;
    memset(&qc, 0, sizeof qc);
    qc.node_id = c->env.node_id;
    qc.cluster_id = c->env.cluster_id[0] ? c->env.cluster_id : NULL;
    qc.voters = cfg->voters;
    qc.nvoters = cfg->n_voters;
    qc.dir = c->dir;
    qc.segment_bytes = config_get_long(cfg, "metadata.log.segment.bytes", &v) ? v : 0;
    qc.election_timeout_ms = cfg_int(cfg, "controller.quorum.election.timeout.ms", 1000);
    qc.fetch_timeout_ms = cfg_int(cfg, "controller.quorum.fetch.timeout.ms", 2000);
    qc.election_backoff_max_ms = cfg_int(cfg, "controller.quorum.election.backoff.max.ms", 1000);
    qc.request_timeout_ms = cfg_int(cfg, "controller.quorum.request.timeout.ms", 2000);
    qc.retry_backoff_ms = cfg_int(cfg, "controller.quorum.retry.backoff.ms", 20);
    qc.host = (struct quorum_host){.arg = c, .commit = host_commit, .load_snapshot = host_load_snapshot,
                                   .role = host_role, .idle = host_idle};
    qc.wake = job_done;
    qc.security = c->env.to_controllers;
    qc.wake_arg = c;
    if (quorum_open(&qc, &c->q, err, errlen) != 0)
        goto fail;
    if (load_initial(c, err, errlen) < 0)
        goto fail;
    ctl_pids_init(c);
    c->balance_due_ms = -1;
    c->noop_due_ms = -1;
    ctl_brokers_start(c);
    if (pthread_create(&c->pub_thread, NULL, publisher_main, c) != 0) {
        snprintf(err, errlen, "metadata: cannot start the publisher thread");
        goto fail;
    }
    c->pub_started = true;
    quorum_start(c->q);

    /* The only voter leads at once: wait for it to be what a single node
     * always was at this point, ready to serve. */
    bool solo = cfg->n_voters == 1 && cfg->voters[0].id == c->env.node_id;
    if (solo) {
        int64_t deadline = clock_mono_ms() + OPEN_WAIT_MS;
        pthread_mutex_lock(&c->wait_mu);
        while (clock_mono_ms() < deadline &&
               !(cfg->role_broker ? atomic_load(&c->ready) : atomic_load(&c->active))) {
            struct timespec ts;
            clock_deadline_after(&ts, 20);
            pthread_cond_timedwait(&c->wait_cv, &c->wait_mu, &ts);
        }
        pthread_mutex_unlock(&c->wait_mu);
        if (!(cfg->role_broker ? atomic_load(&c->ready) : atomic_load(&c->active))) {
            snprintf(err, errlen, "metadata quorum %s: the only voter did not become ready within %d s", c->dir,
                     OPEN_WAIT_MS / 1000);
            goto fail;
        }
        /* A partition registry that cannot follow the image at start
         * (a log dir gone bad) stops startup, as it always did. */
        pthread_mutex_lock(&c->pub_mu);
        bool bad = c->pub_err[0] != 0;
        if (bad)
            snprintf(err, errlen, "%s", c->pub_err);
        pthread_mutex_unlock(&c->pub_mu);
        if (bad)
            goto fail;
    }
    struct mimage *img = controller_image(c);
    slog_info("metadata: %s at offset %lld: %d topic(s), %d broker(s)", c->dir, (long long)img->offset,
              (int)img->ntopics, (int)img->nbrokers);
    mimage_release(img);
    return c;
fail:
    controller_close(c, false);
    return NULL;
}

void controller_close(struct controller *c, bool clean)
{
    if (!c)
        return;
    if (c->q)
        quorum_stop(c->q, 300);
    if (c->pub_started) {
        pthread_mutex_lock(&c->pub_mu);
        c->pub_stop = true;
        pthread_cond_signal(&c->pub_cv);
        pthread_mutex_unlock(&c->pub_mu);
        pthread_join(c->pub_thread, NULL);
    }
    ctl_brokers_stop(c, clean);
    /* Nothing runs on the loop any more: fail what is still pending. */
    pthread_mutex_lock(&c->op_lock);
    atomic_store(&c->active, false);
    struct ctl_op *op = c->queue_head;
    c->queue_head = c->queue_tail = NULL;
    pthread_mutex_unlock(&c->op_lock);
    while (op) {
        struct ctl_op *n = op->next;
        op_complete(c, op, KERR_NOT_CONTROLLER);
        op = n;
    }
    op = c->inflight_head;
    c->inflight_head = c->inflight_tail = NULL;
    while (op) {
        struct ctl_op *n = op->next;
        op_complete(c, op, KERR_NOT_CONTROLLER);
        op = n;
    }
    quorum_close(c->q, clean);
    /* Nothing reads the config slot any more: the newest config's contents move
     * into the caller's own config object (which it frees), so its
     * pointer stays valid and current, and the copies die here. */
    if (c->ncfgs > 0) {
        struct samsa_config *last = c->cfgs[c->ncfgs - 1];
        struct samsa_config tmp = *c->orig_cfg;
        *c->orig_cfg = *last;
        *last = tmp;
        atomic_store(c->env.cfg, c->orig_cfg);
        for (size_t i = 0; i < c->ncfgs; i++)
            config_free(c->cfgs[i]);
    }
    free(c->cfgs);
    mimage_release(c->spec);
    mimage_release(c->cur);
    if (tl_img.c == c) /* other threads drop theirs at their next image or exit */
        img_cache_drop(&tl_img);
    buf_free(&c->rbuf);
    free(c->sessions);
    free(c->dir);
    ctl_pids_free(c);
    pthread_mutex_destroy(&c->op_lock);
    pthread_mutex_destroy(&c->img_lock);
    pthread_mutex_destroy(&c->fwd_lock);
    pthread_mutex_destroy(&c->wait_mu);
    pthread_cond_destroy(&c->wait_cv);
    pthread_mutex_destroy(&c->pub_mu);
    pthread_cond_destroy(&c->pub_cv);
    free(c);
}
