/* The transaction coordinator service: shards of __transaction_state,
 * their loading, the writes of transitions and their application once
 * replicated, markers, timeouts and expiry. See txn_coord.h for the
 * model and txn_meta.c for the rules of each transition. */
#include "coord/txn_coord.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "controller/controller.h"
#include "coord/coord.h"
#include "coord/logscan.h"
#include "coord/records.h"
#include "coord/shards.h"
#include "coord/txn_log.h"
#include "coord/txn_markers_send.h"
#include "log/plog.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "replica/partition.h"
#include "util/thread.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/hmap.h"
#include "util/slog.h"

/* How often the thread looks at the image when nothing wakes it, and
 * how soon it looks again at writes waiting for the ISR that no request
 * watches (Complete*, timeouts' aborts, tombstones), in ms. */
#define IMAGE_POLL_MS 200
#define SETTLE_POLL_MS 10

/* A transition written and not yet replicated. */
struct txn_write {
    struct txn_meta *m;     /* the id's metadata, in the shard's map */
    struct txn_meta target; /* what m becomes (unused for a tombstone) */
    bool tombstone;
    int64_t offset;
    int32_t epoch;
};

struct txn_shard {
    CSHARD_HEAD; /* epoch: the coordinator epoch */
    struct txn_coord *tc;
    struct hmap ids; /* transactional id -> struct txn_meta* */
    struct txn_write *writes;
    int32_t nwrites, capwrites;
    /* Prepared transactions whose markers are done but whose Complete*
     * is not written yet (the id was busy, or the append failed): the
     * thread's settle passes look for them only while this is set. */
    bool complete_due;
};

struct txn_settings {
    int32_t max_timeout_ms;
    int64_t id_expiration_ms;
    int64_t abort_interval_ms;
    int64_t expire_interval_ms;
    int32_t load_buffer;
    int64_t write_timeout_ms; /* Kafka's request.timeout.ms for its appends */
};

struct txn_coord {
    struct coord_env env;
    struct txn_settings s;
    struct txn_sender *sender;
    struct cshard_table shards;

    pthread_mutex_t lock; /* the fields below */
    pthread_cond_t cond;
    bool stop, started, kicked;
    pthread_t thread;
};

static int64_t cfg_long(const struct samsa_config *cfg, const char *key, int64_t dflt)
{
    int64_t v;
    return config_get_long(cfg, key, &v) ? v : dflt;
}

static void kick(struct txn_coord *tc)
{
    pthread_mutex_lock(&tc->lock);
    tc->kicked = true;
    pthread_cond_signal(&tc->cond);
    pthread_mutex_unlock(&tc->lock);
}

/* ------------------------------------------------------------------ */
/* shards                                                              */

static struct cshard *shard_make(void *ctx, int32_t index)
{
    struct txn_shard *s = xcalloc(1, sizeof *s);
    cshard_init(&s->base, index);
    s->tc = ctx;
    hmap_init(&s->ids);
    return &s->base;
}

static void shard_destroy(struct cshard *b)
{
    struct txn_shard *s = (struct txn_shard *)b;
    hmap_free(&s->ids);
    free(s->writes);
    free(s);
}

static struct txn_shard *shard_at(struct txn_coord *tc, int32_t index, bool create)
{
    return (struct txn_shard *)cshard_at(&tc->shards, index, create);
}

static void send_markers(struct txn_shard *s, const struct txn_meta *m)
{
    struct txn_marker_job job = {
        .id = {m->id, m->id_len},
        .txn_partition = s->index,
        .coord_epoch = s->epoch,
        .producer_id = m->producer_id,
        .producer_epoch = m->epoch,
        .commit = m->state == TXN_PREPARE_COMMIT,
        .parts = m->parts,
        .nparts = m->nparts,
    };
    txn_sender_send(s->tc->sender, &job);
}

/* Applies every write the ISR has, in the order written; drops those
 * that failed (the leadership moved, the ISR shrank: the metadata stays
 * as it was, as Kafka resets its pending state). Under the lock. */
static void settle(struct txn_shard *s)
{
    if (s->state != CSHARD_ACTIVE || !s->p)
        return;
    int32_t kept = 0;
    for (int32_t i = 0; i < s->nwrites; i++) {
        struct txn_write *w = &s->writes[i];
        int16_t err = 0;
        enum ack_state st = partition_ack_wait_all(s->p, w->offset, w->epoch, &err);
        if (st == ACK_WAIT) {
            s->writes[kept++] = *w;
            continue;
        }
        struct txn_meta *m = w->m;
        m->pending = false;
        if (st == ACK_FAILED) {
            slog_warn("transaction coordinator: the write of %s's %s at %s-%d offset %lld failed: %s", m->id,
                      w->tombstone ? "removal" : txn_state_name(w->target.state), TXN_STATE_TOPIC, s->index,
                      (long long)w->offset, kerr_name(err));
            if (!w->tombstone)
                txn_meta_clear(&w->target);
            if (m->markers_done)
                s->complete_due = true; /* its Complete* is written again */
            continue;
        }
        if (w->tombstone) {
            hmap_del(&s->ids, m->id, (size_t)m->id_len);
            txn_meta_free(m);
            continue;
        }
        txn_meta_apply(m, &w->target);
        m->markers_done = false;
        if (m->state == TXN_PREPARE_COMMIT || m->state == TXN_PREPARE_ABORT)
            send_markers(s, m);
    }
    s->nwrites = kept;
}

/* Appends m's transition (target, or a tombstone when NULL) and records
 * the write; target's contents move into it. Returns 0 with ack set, or
 * the client's error (target cleared, m unchanged). Under the lock. */
static int16_t write_meta(struct txn_shard *s, struct txn_meta *m, struct txn_meta *target, struct txn_ack *ack)
{
    struct buf out, k, v;
    buf_init(&out);
    buf_init(&k);
    buf_init(&v);
    txn_log_key(&k, (kstr_t){m->id, m->id_len});
    if (target)
        txn_log_value(&v, target);
    struct rb_builder bld;
    int64_t now = clock_wall_ms();
    rb_builder_begin(&bld, &out, 0, now, NULL);
    kbytes_t key = {k.data, (int32_t)k.len};
    kbytes_t value = target ? (kbytes_t){v.data, (int32_t)v.len} : (kbytes_t){NULL, -1};
    int rc = rb_builder_add(&bld, now, key, value, NULL, 0);
    size_t len = 0;
    if (!rc)
        rc = rb_builder_finish(&bld, &len);
    else
        rb_builder_abort(&bld);
    struct plog_append_result res;
    int32_t epoch = s->p ? atomic_load(&s->p->leader_epoch) : -1;
    if (!rc) {
        if (s->state != CSHARD_ACTIVE || !s->p || epoch != s->epoch)
            rc = KERR_NOT_COORDINATOR;
        else
            rc = partition_append(s->p, out.data + out.len - len, len, false, &res);
    }
    buf_free(&out);
    buf_free(&k);
    buf_free(&v);
    if (rc) {
        slog_warn("transaction coordinator: append for %s to %s-%d failed: %s", m->id, TXN_STATE_TOPIC, s->index,
                  kerr_name((int16_t)rc));
        if (target)
            txn_meta_clear(target);
        return coord_append_error(rc);
    }
    if (s->nwrites == s->capwrites) {
        s->capwrites = s->capwrites ? s->capwrites * 2 : 8;
        s->writes = xrealloc(s->writes, (size_t)s->capwrites * sizeof *s->writes);
    }
    struct txn_write *w = &s->writes[s->nwrites++];
    memset(w, 0, sizeof *w);
    w->m = m;
    w->tombstone = !target;
    if (target) {
        w->target = *target;
        memset(target, 0, sizeof *target);
    }
    w->offset = res.last_offset;
    w->epoch = epoch;
    m->pending = true;
    if (ack) {
        ack->shard = s;
        ack->offset = res.last_offset;
        ack->epoch = epoch;
        ack->deadline = clock_mono_ms() + s->tc->s.write_timeout_ms;
    }
    return 0;
}

/* Finds the shard of id, locks it and applies what is replicated. */
static int16_t acquire(struct txn_coord *tc, kstr_t id, struct txn_shard **out)
{
    struct cshard *b;
    bool want_load;
    int16_t err = cshard_acquire(&tc->shards, tc->env.controller, tc->env.node_id, id, &b, &want_load);
    *out = (struct txn_shard *)b;
    if (want_load)
        kick(tc);
    if (!err)
        settle(*out);
    return err;
}

static struct txn_meta *meta_get(struct txn_shard *s, kstr_t id)
{
    return hmap_get(&s->ids, id.p, (size_t)(id.len > 0 ? id.len : 0));
}

/* ------------------------------------------------------------------ */
/* acks                                                                */

void txn_ack_init(struct txn_ack *a)
{
    a->shard = NULL;
    a->offset = -1;
    a->epoch = -1;
    a->deadline = INT64_MAX;
}

enum ack_state txn_ack_check(const struct txn_ack *a, int16_t *err)
{
    if (!a->shard || a->offset < 0)
        return ACK_READY;
    struct txn_shard *s = a->shard;
    pthread_mutex_lock(&s->lock);
    enum ack_state st;
    int16_t e = 0;
    if (s->state != CSHARD_ACTIVE || !s->p || s->epoch != a->epoch) {
        st = ACK_FAILED;
        e = KERR_NOT_COORDINATOR;
    } else {
        settle(s);
        st = partition_ack_wait_all(s->p, a->offset, a->epoch, &e);
    }
    pthread_mutex_unlock(&s->lock);
    if (st == ACK_WAIT && clock_mono_ms() >= a->deadline) {
        /* the write stays pending in the shard: it is applied or
         * dropped when its fate is known, and the client's retry hears
         * CONCURRENT_TRANSACTIONS meanwhile */
        st = ACK_FAILED;
        e = KERR_REQUEST_TIMED_OUT;
    }
    if (st == ACK_FAILED)
        *err = coord_append_error(e);
    return st;
}

struct partition *txn_ack_partition(const struct txn_ack *a)
{
    return a->shard && a->offset >= 0 ? cshard_partition(&a->shard->base) : NULL;
}

/* ------------------------------------------------------------------ */
/* operations                                                          */

int16_t txn_coord_init_pid(struct txn_coord *tc, kstr_t id, int32_t timeout_ms, int64_t req_pid, int16_t req_epoch,
                           int64_t new_pid, bool *need_pid, int64_t *pid, int16_t *epoch, int16_t *then_err,
                           struct txn_ack *ack)
{
    *need_pid = false;
    *then_err = 0;
    *pid = TXN_NO_PRODUCER_ID;
    *epoch = TXN_NO_PRODUCER_EPOCH;
    if (timeout_ms <= 0 || timeout_ms > tc->s.max_timeout_ms)
        return KERR_INVALID_TRANSACTION_TIMEOUT;
    struct txn_shard *s;
    int16_t err = acquire(tc, id, &s);
    if (err)
        return err;
    int64_t now = clock_wall_ms();
    struct txn_meta *m = meta_get(s, id);
    bool created = false;
    bool expected = req_pid != TXN_NO_PRODUCER_ID;
    if (!m || (!m->pending && txn_init_needs_pid(m, expected ? req_epoch : TXN_NO_PRODUCER_EPOCH))) {
        if (new_pid < 0) {
            *need_pid = true;
            pthread_mutex_unlock(&s->lock);
            return 0;
        }
        if (!m) {
            m = txn_meta_new(id, new_pid, timeout_ms, now);
            hmap_put(&s->ids, m->id, (size_t)m->id_len, m);
            created = true;
        }
    }
    struct txn_meta target;
    memset(&target, 0, sizeof target);
    enum txn_init_action action;
    err = txn_prepare_init(m, req_pid, req_epoch, timeout_ms, new_pid, now, &target, &action);
    if (!err && action == TXN_INIT_RETRY) {
        *pid = m->producer_id;
        *epoch = m->epoch;
    } else if (!err) {
        int64_t tp = target.producer_id;
        int16_t te = target.epoch;
        err = write_meta(s, m, &target, ack);
        if (!err && action == TXN_INIT_FENCE) {
            slog_info("transaction coordinator: %s: a new producer fences producer %lld's open transaction "
                      "(aborting it)",
                      m->id, (long long)m->producer_id);
            *then_err = KERR_CONCURRENT_TRANSACTIONS;
        } else if (!err) {
            *pid = tp;
            *epoch = te;
        }
    }
    if (err && created) {
        hmap_del(&s->ids, m->id, (size_t)m->id_len);
        txn_meta_free(m);
    }
    pthread_mutex_unlock(&s->lock);
    return err;
}

int16_t txn_coord_add_partitions(struct txn_coord *tc, kstr_t id, int64_t pid, int16_t epoch, int32_t n,
                                 const kstr_t *topics, const int32_t *partitions, struct txn_ack *ack)
{
    struct txn_shard *s;
    int16_t err = acquire(tc, id, &s);
    if (err)
        return err;
    struct txn_meta *m = meta_get(s, id);
    if (!m) {
        err = KERR_INVALID_PRODUCER_ID_MAPPING;
    } else {
        struct txn_meta target;
        memset(&target, 0, sizeof target);
        bool write = false;
        err = txn_prepare_add(m, pid, epoch, n, topics, partitions, clock_wall_ms(), &target, &write);
        if (!err && write)
            err = write_meta(s, m, &target, ack);
    }
    pthread_mutex_unlock(&s->lock);
    return err;
}

int16_t txn_coord_end(struct txn_coord *tc, kstr_t id, int64_t pid, int16_t epoch, bool commit, struct txn_ack *ack)
{
    struct txn_shard *s;
    int16_t err = acquire(tc, id, &s);
    if (err)
        return err;
    struct txn_meta *m = meta_get(s, id);
    if (!m) {
        err = KERR_INVALID_PRODUCER_ID_MAPPING;
    } else {
        struct txn_meta target;
        memset(&target, 0, sizeof target);
        bool write = false;
        err = txn_prepare_end(m, pid, epoch, commit, clock_wall_ms(), &target, &write);
        if (!err && write)
            err = write_meta(s, m, &target, ack);
    }
    pthread_mutex_unlock(&s->lock);
    return err;
}

void txn_coord_verify(struct txn_coord *tc, kstr_t id, int64_t pid, int16_t epoch, int32_t n, const kstr_t *topics,
                      const int32_t *partitions, int16_t *errs)
{
    int16_t all = 0;
    struct txn_shard *s = NULL;
    if (id.len <= 0)
        all = KERR_INVALID_REQUEST;
    else
        all = acquire(tc, id, &s);
    if (!all) {
        const struct txn_meta *m = meta_get(s, id);
        /* the pending state is not looked at: the append checks the
         * guard last (Kafka's comment); partitions are in the metadata
         * once their AddPartitions record is replicated */
        if (!m || m->producer_id != pid)
            all = KERR_INVALID_PRODUCER_ID_MAPPING;
        else if (m->epoch != epoch)
            all = KERR_PRODUCER_FENCED;
        else if (m->state == TXN_PREPARE_COMMIT || m->state == TXN_PREPARE_ABORT)
            all = KERR_CONCURRENT_TRANSACTIONS;
        else
            for (int32_t i = 0; i < n; i++)
                errs[i] = txn_meta_has_part(m, topics[i], partitions[i]) ? 0 : KERR_TRANSACTION_ABORTABLE;
        pthread_mutex_unlock(&s->lock);
    }
    if (all)
        for (int32_t i = 0; i < n; i++)
            errs[i] = all;
}

struct txn_sender *txn_coord_sender(struct txn_coord *tc)
{
    return tc->sender;
}

const struct coord_env *txn_coord_env(const struct txn_coord *tc)
{
    return &tc->env;
}

/* Writes the Complete* of a prepared transaction whose markers are all
 * written. Under the lock. */
static void complete(struct txn_shard *s, struct txn_meta *m)
{
    struct txn_meta target;
    memset(&target, 0, sizeof target);
    if (txn_prepare_complete(m, clock_wall_ms(), &target) == 0 && write_meta(s, m, &target, NULL) != 0)
        s->complete_due = true; /* retried by the thread (markers_done) */
}

void txn_coord_markers_done(struct txn_coord *tc, int32_t partition, int32_t coord_epoch, kstr_t id, int64_t pid,
                            int16_t epoch, bool commit)
{
    struct txn_shard *s = shard_at(tc, partition, false);
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    struct txn_meta *m = s->state == CSHARD_ACTIVE && s->epoch == coord_epoch ? meta_get(s, id) : NULL;
    enum txn_state want = commit ? TXN_PREPARE_COMMIT : TXN_PREPARE_ABORT;
    if (m && m->state == want && m->producer_id == pid && m->epoch == epoch && !m->markers_done) {
        m->markers_done = true;
        if (!m->pending)
            complete(s, m);
        else
            s->complete_due = true;
    }
    pthread_mutex_unlock(&s->lock);
}

/* ------------------------------------------------------------------ */
/* describe, list                                                      */

static kstr_t akstr(struct arena *a, const char *s, int32_t len)
{
    char *p = arena_alloc(a, (size_t)len + 1);
    memcpy(p, s, (size_t)len);
    p[len] = 0;
    return (kstr_t){p, len};
}

void txn_coord_describe(struct txn_coord *tc, kstr_t id, struct arena *a, struct txn_coord_desc *out)
{
    memset(out, 0, sizeof *out);
    out->producer_id = TXN_NO_PRODUCER_ID;
    out->producer_epoch = TXN_NO_PRODUCER_EPOCH;
    out->start_ts = -1;
    out->state = KSTR_LIT("");
    struct txn_shard *s;
    int16_t err = acquire(tc, id, &s);
    if (err) {
        out->error = err;
        return;
    }
    const struct txn_meta *m = meta_get(s, id);
    if (!m || m->state == TXN_DEAD) {
        out->error = KERR_TRANSACTIONAL_ID_NOT_FOUND;
    } else {
        out->state = KSTR(txn_state_name(m->state));
        out->timeout_ms = m->timeout_ms;
        out->start_ts = m->start_ts;
        out->producer_id = m->producer_id;
        out->producer_epoch = m->epoch;
        out->nparts = m->nparts;
        out->parts = m->nparts ? arena_alloc(a, (size_t)m->nparts * sizeof *out->parts) : NULL;
        for (int32_t i = 0; i < m->nparts; i++) {
            out->parts[i].topic = (char *)akstr(a, m->parts[i].topic, (int32_t)strlen(m->parts[i].topic)).p;
            out->parts[i].partition = m->parts[i].partition;
        }
    }
    pthread_mutex_unlock(&s->lock);
}

int16_t txn_coord_list(struct txn_coord *tc, const kstr_t *states, int32_t nstates, const int64_t *pids,
                       int32_t npids, int64_t min_duration_ms, struct arena *a, struct txn_coord_listed **out,
                       int32_t *n)
{
    *out = NULL;
    *n = 0;
    int32_t cap = 0;
    int64_t now = clock_wall_ms();
    int32_t nshards = cshard_count(&tc->shards);
    for (int32_t i = 0; i < nshards; i++) {
        struct txn_shard *s = shard_at(tc, i, false);
        pthread_mutex_lock(&s->lock);
        if (s->state == CSHARD_LOADING) {
            pthread_mutex_unlock(&s->lock);
            return KERR_COORDINATOR_LOAD_IN_PROGRESS;
        }
        if (s->state != CSHARD_ACTIVE) {
            pthread_mutex_unlock(&s->lock);
            continue;
        }
        settle(s);
        size_t it = 0;
        const void *k;
        size_t kl;
        void *v;
        while (hmap_next(&s->ids, &it, &k, &kl, &v)) {
            const struct txn_meta *m = v;
            if (m->state == TXN_DEAD)
                continue;
            bool ok = npids == 0;
            for (int32_t j = 0; j < npids && !ok; j++)
                ok = pids[j] == m->producer_id;
            if (!ok)
                continue;
            ok = nstates == 0;
            for (int32_t j = 0; j < nstates && !ok; j++)
                ok = txn_state_parse(states[j]) == (int)m->state;
            if (!ok)
                continue;
            if (min_duration_ms >= 0 && now - m->start_ts <= min_duration_ms)
                continue;
            if (*n == cap) {
                int32_t nc = cap ? cap * 2 : 16;
                struct txn_coord_listed *nv = arena_alloc(a, (size_t)nc * sizeof *nv);
                if (*n)
                    memcpy(nv, *out, (size_t)*n * sizeof *nv);
                *out = nv;
                cap = nc;
            }
            (*out)[*n].id = akstr(a, m->id, m->id_len);
            (*out)[*n].producer_id = m->producer_id;
            (*out)[*n].state = KSTR(txn_state_name(m->state));
            (*n)++;
        }
        pthread_mutex_unlock(&s->lock);
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* loading                                                             */

static void free_ids(struct hmap *ids)
{
    size_t it = 0;
    const void *k;
    size_t kl;
    void *v;
    while (hmap_next(ids, &it, &k, &kl, &v))
        txn_meta_free(v);
    hmap_free(ids);
    hmap_init(ids);
}

static void unload(struct txn_shard *s, const char *why)
{
    pthread_mutex_lock(&s->lock);
    if (s->state == CSHARD_ACTIVE && hmap_count(&s->ids) > 0)
        slog_info("transaction coordinator: unloading %s-%d (%s): %zu transactional id(s)", TXN_STATE_TOPIC,
                  s->index, why, hmap_count(&s->ids));
    for (int32_t i = 0; i < s->nwrites; i++)
        if (!s->writes[i].tombstone)
            txn_meta_clear(&s->writes[i].target);
    s->nwrites = 0;
    free_ids(&s->ids);
    if (s->p)
        partition_put(s->p);
    s->p = NULL;
    /* Its markers are the next leader's to send (it loads the prepared
     * transactions); reports would be dropped here anyway. */
    if (s->epoch >= 0)
        txn_sender_forget(s->tc->sender, s->index, s->epoch);
    s->state = CSHARD_UNLOADED;
    s->epoch = -1;
    pthread_mutex_unlock(&s->lock);
}

struct load_ctx {
    struct hmap *ids;
    int32_t index;
    int64_t nrecords;
    bool warned;
};

/* TransactionStateManager.loadTransactionMetadata: the last record of
 * each id wins; a tombstone removes it. */
static void load_one(void *arg, int64_t offset, kbytes_t key, kbytes_t value)
{
    struct load_ctx *x = arg;
    kstr_t id;
    bool tomb = false;
    struct txn_meta *m = NULL;
    int rc = txn_log_parse(key, value, &id, &tomb, &m);
    if (rc < 0) {
        slog_warn("transaction coordinator: %s-%d offset %lld: record does not parse; skipped", TXN_STATE_TOPIC,
                  x->index, (long long)offset);
        return;
    }
    if (rc > 0) {
        if (!x->warned)
            slog_warn("transaction coordinator: %s-%d holds records of an unknown key version; ignored",
                      TXN_STATE_TOPIC, x->index);
        x->warned = true;
        return;
    }
    x->nrecords++;
    size_t kl = (size_t)(id.len > 0 ? id.len : 0);
    struct txn_meta *old = tomb ? hmap_del(x->ids, id.p, kl) : NULL;
    if (tomb) {
        txn_meta_free(old);
        return;
    }
    old = hmap_get(x->ids, m->id, (size_t)m->id_len);
    hmap_put(x->ids, m->id, (size_t)m->id_len, m);
    txn_meta_free(old);
}

static void load(struct txn_coord *tc, struct txn_shard *s, const kuuid_t *topic_id, int32_t epoch)
{
    struct partition *p = preg_get(tc->env.partitions, topic_id, s->index);
    if (!p)
        return; /* its log is not open yet: next round */
    pthread_mutex_lock(&s->lock);
    s->state = CSHARD_LOADING;
    pthread_mutex_unlock(&s->lock);
    int64_t t0 = clock_mono_ms();
    struct hmap ids;
    hmap_init(&ids);
    struct load_ctx x = {&ids, s->index, 0, false};
    int err = coord_log_scan(p, tc->env.plugins, tc->s.load_buffer, TXN_STATE_TOPIC, load_one, &x);
    pthread_mutex_lock(&s->lock);
    if (err) {
        slog_error("transaction coordinator: loading %s-%d failed: %s", TXN_STATE_TOPIC, s->index,
                   kerr_name((int16_t)err));
        s->state = CSHARD_UNLOADED;
        pthread_mutex_unlock(&s->lock);
        free_ids(&ids);
        hmap_free(&ids);
        partition_put(p);
        return;
    }
    s->ids = ids;
    s->p = p;
    s->topic_id = *topic_id;
    s->epoch = epoch;
    s->nwrites = 0;
    s->state = CSHARD_ACTIVE;
    /* Prepared transactions finish here: their markers go out again
     * (a partition that has one already refuses nothing: the producer
     * state takes a repeated marker of the same epoch). */
    size_t it = 0, prepared = 0;
    const void *k;
    size_t kl;
    void *v;
    while (hmap_next(&s->ids, &it, &k, &kl, &v)) {
        struct txn_meta *m = v;
        if (m->state == TXN_PREPARE_COMMIT || m->state == TXN_PREPARE_ABORT) {
            send_markers(s, m);
            prepared++;
        }
    }
    slog(hmap_count(&s->ids) ? SLOG_INFO : SLOG_DEBUG,
         "transaction coordinator: loaded %s-%d (epoch %d): %zu transactional id(s), %zu prepared, from %lld "
         "record(s) in %lld ms",
         TXN_STATE_TOPIC, s->index, epoch, hmap_count(&s->ids), prepared, (long long)x.nrecords,
         (long long)(clock_mono_ms() - t0));
    pthread_mutex_unlock(&s->lock);
}

static void load_cb(void *ctx, struct cshard *s, const kuuid_t *topic_id, int32_t epoch)
{
    load(ctx, (struct txn_shard *)s, topic_id, epoch);
}

static void unload_cb(void *ctx, struct cshard *s, const char *why)
{
    (void)ctx;
    unload((struct txn_shard *)s, why);
}

static void sync_image(struct txn_coord *tc)
{
    cshard_sync(&tc->shards, tc->env.controller, tc->env.node_id, load_cb, unload_cb, tc);
}

/* ------------------------------------------------------------------ */
/* the thread: settling, completes, timeouts, expiry                   */

enum sweep { SWEEP_SETTLE, SWEEP_TIMEOUTS, SWEEP_EXPIRY };

/* One pass over the active shards. Returns true while writes still wait
 * for the ISR somewhere. */
static bool sweep(struct txn_coord *tc, enum sweep what)
{
    bool waiting = false;
    int64_t now = clock_wall_ms();
    int32_t nshards = cshard_count(&tc->shards);
    for (int32_t i = 0; i < nshards; i++) {
        struct txn_shard *s = shard_at(tc, i, false);
        pthread_mutex_lock(&s->lock);
        if (s->state != CSHARD_ACTIVE) {
            pthread_mutex_unlock(&s->lock);
            continue;
        }
        settle(s);
        if (what == SWEEP_SETTLE && !s->complete_due) {
            if (s->nwrites > 0)
                waiting = true;
            pthread_mutex_unlock(&s->lock);
            continue;
        }
        s->complete_due = false;
        size_t it = 0;
        const void *k;
        size_t kl;
        void *v;
        /* collect first: settling a write may remove an id */
        size_t cnt = hmap_count(&s->ids), nm = 0;
        struct txn_meta **ms = cnt ? xcalloc(cnt, sizeof *ms) : NULL;
        while (hmap_next(&s->ids, &it, &k, &kl, &v))
            ms[nm++] = v;
        for (size_t j = 0; j < nm; j++) {
            struct txn_meta *m = ms[j];
            bool prepared = m->state == TXN_PREPARE_COMMIT || m->state == TXN_PREPARE_ABORT;
            if (m->pending)
                continue; /* a prepared one's is its Complete* (settle says if it fails) */
            if (m->markers_done && prepared) {
                complete(s, m);
            } else if (what == SWEEP_TIMEOUTS && txn_timed_out(m, now)) {
                struct txn_meta target;
                memset(&target, 0, sizeof target);
                if (txn_prepare_fence_abort(m, now, &target) == 0) {
                    slog_info("transaction coordinator: aborting %s (producer %lld, epoch %d): open for more than "
                              "its timeout of %d ms",
                              m->id, (long long)m->producer_id, m->epoch, m->timeout_ms);
                    write_meta(s, m, &target, NULL);
                }
            } else if (what == SWEEP_EXPIRY && txn_expired(m, tc->s.id_expiration_ms, now)) {
                /* pending until the tombstone is replicated: an
                 * InitProducerId meanwhile hears CONCURRENT_TRANSACTIONS */
                slog_info("transaction coordinator: %s idle for transactional.id.expiration.ms; removing it", m->id);
                write_meta(s, m, NULL, NULL);
            }
        }
        free(ms);
        if (s->nwrites > 0)
            waiting = true;
        pthread_mutex_unlock(&s->lock);
    }
    return waiting;
}

static void *txn_main(void *arg)
{
    struct txn_coord *tc = arg;
    thread_set_name("samsa-txncoord");
    int64_t now = clock_mono_ms();
    int64_t next_image = 0, next_abort = now + tc->s.abort_interval_ms, next_expire = now + tc->s.expire_interval_ms;
    for (;;) {
        now = clock_mono_ms();
        if (now >= next_image) {
            sync_image(tc);
            next_image = now + IMAGE_POLL_MS;
        }
        enum sweep what = SWEEP_SETTLE;
        if (now >= next_abort) {
            what = SWEEP_TIMEOUTS;
            next_abort = now + tc->s.abort_interval_ms;
        } else if (now >= next_expire) {
            what = SWEEP_EXPIRY;
            next_expire = now + tc->s.expire_interval_ms;
        }
        bool waiting = sweep(tc, what);
        int64_t next = next_image;
        if (waiting && now + SETTLE_POLL_MS < next)
            next = now + SETTLE_POLL_MS;
        if (next_abort < next)
            next = next_abort;
        if (next_expire < next)
            next = next_expire;

        pthread_mutex_lock(&tc->lock);
        int64_t wait = next - clock_mono_ms();
        if (!tc->stop && !tc->kicked && wait > 0) {
            struct timespec ts;
            clock_deadline_after(&ts, wait);
            while (!tc->kicked && !tc->stop)
                if (pthread_cond_timedwait(&tc->cond, &tc->lock, &ts) == ETIMEDOUT)
                    break;
        }
        bool stop = tc->stop, kicked = tc->kicked;
        tc->kicked = false;
        pthread_mutex_unlock(&tc->lock);
        if (stop)
            break;
        if (kicked)
            next_image = 0;
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* life cycle                                                          */

struct txn_coord *txn_coord_create(const struct coord_env *env)
{
    struct txn_coord *tc = xcalloc(1, sizeof *tc);
    tc->env = *env;
    const struct samsa_config *cfg = env->cfg;
    tc->s.max_timeout_ms = (int32_t)cfg_long(cfg, "transaction.max.timeout.ms", 900000);
    tc->s.id_expiration_ms = cfg_long(cfg, "transactional.id.expiration.ms", 604800000);
    tc->s.abort_interval_ms = cfg_long(cfg, "transaction.abort.timed.out.transaction.cleanup.interval.ms", 10000);
    tc->s.expire_interval_ms = cfg_long(cfg, "transaction.remove.expired.transaction.cleanup.interval.ms", 3600000);
    tc->s.load_buffer = (int32_t)cfg_long(cfg, "transaction.state.log.load.buffer.size", 5242880);
    if (tc->s.load_buffer < 4096)
        tc->s.load_buffer = 4096;
    tc->s.write_timeout_ms = 30000;
    tc->sender = txn_sender_create(&tc->env, tc);
    cshard_table_init(&tc->shards, TXN_STATE_TOPIC, shard_make, tc);
    pthread_mutex_init(&tc->lock, NULL);
    clock_cond_init_mono(&tc->cond);
    return tc;
}

void txn_coord_start(struct txn_coord *tc)
{
    txn_sender_start(tc->sender);
    if (pthread_create(&tc->thread, NULL, txn_main, tc) == 0)
        tc->started = true;
    else
        slog_error("transaction coordinator: cannot start its thread");
}

void txn_coord_stop(struct txn_coord *tc)
{
    if (!tc)
        return;
    pthread_mutex_lock(&tc->lock);
    tc->stop = true;
    pthread_cond_signal(&tc->cond);
    pthread_mutex_unlock(&tc->lock);
    if (tc->started)
        pthread_join(tc->thread, NULL);
    tc->started = false;
    txn_sender_stop(tc->sender);
    for (int32_t i = 0; i < cshard_count(&tc->shards); i++)
        unload(shard_at(tc, i, false), "shutdown");
}

void txn_coord_destroy(struct txn_coord *tc)
{
    if (!tc)
        return;
    txn_sender_destroy(tc->sender);
    cshard_table_free(&tc->shards, shard_destroy);
    pthread_mutex_destroy(&tc->lock);
    pthread_cond_destroy(&tc->cond);
    free(tc);
}
