/* The group coordinator service: shards, loading, timers, appends. See
 * coord.h for the threading model and group.c for the group logic. */
#include "coord/coord.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "controller/controller.h"
#include "coord/consumer.h"
#include "coord/logscan.h"
#include "coord/records.h"
#include "coord/shards.h"
#include "log/plog.h"
#include "plugin/codec.h"
#include "plugin/registry.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "replica/partition.h"
#include "util/thread.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/sfile.h"
#include "util/slog.h"

/* How often the thread looks at the metadata image when nothing else
 * wakes it (leadership changes), in ms. */
#define IMAGE_POLL_MS 200

struct coord_shard {
    CSHARD_HEAD;
    struct coord *c;
    struct hmap groups;   /* id -> struct cgroup* */
    /* Open transactions with offsets here: producer id (int64) ->
     * struct txn_groups*, the groups their offsets went to (Kafka's
     * pendingTransactionalOffsets by producer id). */
    struct hmap txns;
    struct cgroup **heap; /* by next deadline */
    int32_t nheap, capheap;
};

/* Settings read once (all read-only broker configs). */
struct coord_settings {
    int32_t initial_rebalance_delay_ms;
    int32_t max_size;
    int32_t metadata_max_bytes;
    int64_t retention_ms;
    int64_t retention_check_ms;
    int32_t load_buffer;
    int64_t commit_timeout_ms; /* offsets.commit.timeout.ms: every write's */
    int compression;           /* offsets.topic.compression.codec: every write's codec id */
    /* KIP-848 consumer groups */
    int32_t cg_session_timeout_ms;
    int32_t cg_heartbeat_interval_ms;
    int32_t cg_max_size;
    char **assignors; /* group.consumer.assignors: the first is the default */
    int32_t nassignors;
};

struct coord {
    struct coord_env env;
    struct coord_settings s;
    struct cshard_table shards;

    pthread_mutex_t lock; /* the fields below */
    pthread_cond_t cond;
    bool stop, started;
    bool kicked;     /* look at the image now (a shard to load) */
    bool timer_kick; /* a deadline moved closer */
    int64_t next_wake; /* monotonic ms the thread sleeps until */
    pthread_t thread;
};

static int64_t cfg_long(const struct samsa_config *cfg, const char *key, int64_t dflt)
{
    int64_t v;
    return config_get_long(cfg, key, &v) ? v : dflt;
}

/* ------------------------------------------------------------------ */
/* thread wakeups                                                      */

static void kick(struct coord *c)
{
    pthread_mutex_lock(&c->lock);
    c->kicked = true;
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

/* A timer of some group moved to deadline: wake the thread if it would
 * sleep past it. */
static void wake_by(struct coord *c, int64_t deadline)
{
    pthread_mutex_lock(&c->lock);
    if (deadline < c->next_wake) {
        c->next_wake = deadline;
        c->timer_kick = true;
        pthread_cond_signal(&c->cond);
    }
    pthread_mutex_unlock(&c->lock);
}

/* ------------------------------------------------------------------ */
/* deadline heap (per shard, under its lock)                           */

static void heap_swap(struct coord_shard *s, int32_t i, int32_t j)
{
    struct cgroup *t = s->heap[i];
    s->heap[i] = s->heap[j];
    s->heap[j] = t;
    s->heap[i]->heap_index = i;
    s->heap[j]->heap_index = j;
}

static void heap_fix(struct coord_shard *s, int32_t i)
{
    while (i > 0 && s->heap[(i - 1) / 2]->heap_key > s->heap[i]->heap_key) {
        heap_swap(s, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < s->nheap && s->heap[l]->heap_key < s->heap[m]->heap_key)
            m = l;
        if (r < s->nheap && s->heap[r]->heap_key < s->heap[m]->heap_key)
            m = r;
        if (m == i)
            return;
        heap_swap(s, i, m);
        i = m;
    }
}

static void heap_remove(struct coord_shard *s, struct cgroup *g)
{
    int32_t i = g->heap_index;
    if (i < 0)
        return;
    g->heap_index = -1;
    s->nheap--;
    if (i != s->nheap) {
        s->heap[i] = s->heap[s->nheap];
        s->heap[i]->heap_index = i;
        heap_fix(s, i);
    }
}

/* Files g under its next deadline (or takes it out). */
static void refile(struct coord_shard *s, struct cgroup *g)
{
    int64_t d = cg_next_deadline(g);
    if (d == CG_NO_DEADLINE) {
        heap_remove(s, g);
        return;
    }
    g->heap_key = d;
    if (g->heap_index < 0) {
        if (s->nheap == s->capheap) {
            s->capheap = s->capheap ? 2 * s->capheap : 16;
            s->heap = xrealloc(s->heap, (size_t)s->capheap * sizeof *s->heap);
        }
        g->heap_index = s->nheap;
        s->heap[s->nheap++] = g;
    }
    heap_fix(s, g->heap_index);
    wake_by(s->c, d);
}

/* ------------------------------------------------------------------ */
/* appends                                                             */

int16_t coord_append_error(int err)
{
    switch (err) {
    case 0:
        return 0;
    case KERR_UNKNOWN_TOPIC_OR_PARTITION:
    case KERR_NOT_ENOUGH_REPLICAS:
    case KERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
    case KERR_REQUEST_TIMED_OUT:
        return KERR_COORDINATOR_NOT_AVAILABLE;
    case KERR_NOT_LEADER_OR_FOLLOWER:
    case KERR_KAFKA_STORAGE_ERROR:
        return KERR_NOT_COORDINATOR;
    case KERR_MESSAGE_TOO_LARGE:
    case KERR_RECORD_LIST_TOO_LARGE:
    case KERR_INVALID_FETCH_SIZE:
    case KERR_CORRUPT_MESSAGE:
        return KERR_UNKNOWN_SERVER_ERROR;
    default:
        return (int16_t)err;
    }
}

/* Records of one operation: one batch, as Kafka writes them. */
struct batch {
    struct buf out;
    struct rb_builder b;
    struct buf k, v;
    int n;
    uint64_t guard; /* KIP-890's (a verified transactional commit), else PLOG_GUARD_UNCHECKED */
};

/* opts NULL: a plain batch; else a producer's (transactional). */
static void batch_begin_opts(struct batch *bt, const struct rb_batch_opts *opts)
{
    buf_init(&bt->out);
    buf_init(&bt->k);
    buf_init(&bt->v);
    rb_builder_begin(&bt->b, &bt->out, 0, clock_wall_ms(), opts);
    bt->n = 0;
    bt->guard = PLOG_GUARD_UNCHECKED;
}

static void batch_begin(struct batch *bt)
{
    batch_begin_opts(bt, NULL);
}

/* k/v hold the record; v.len 0 with tombstone: null value. */
static int batch_add(struct batch *bt, bool tombstone)
{
    kbytes_t key = {bt->k.data, (int32_t)bt->k.len};
    kbytes_t value = tombstone ? (kbytes_t){NULL, -1} : (kbytes_t){bt->v.data, (int32_t)bt->v.len};
    int rc = rb_builder_add(&bt->b, clock_wall_ms(), key, value, NULL, 0);
    buf_reset(&bt->k);
    buf_reset(&bt->v);
    if (!rc)
        bt->n++;
    return rc;
}

static void batch_free(struct batch *bt)
{
    buf_free(&bt->out);
    buf_free(&bt->k);
    buf_free(&bt->v);
}

/* Appends the batch to the shard's partition (under the shard's lock).
 * Returns 0 with *last and *epoch (the leader epoch of the append) set,
 * or the coordinator-mapped error. Frees bt. */
static int16_t batch_append(struct coord_shard *s, struct batch *bt, int64_t *last, int32_t *epoch)
{
    int16_t err = 0;
    if (bt->n == 0) {
        rb_builder_abort(&bt->b);
        batch_free(bt);
        return 0;
    }
    size_t len = 0;
    int rc;
    if (s->c->s.compression != 0) {
        /* checked at startup: a loaded plugin provides the codec */
        struct codec_ctx cx = {.reg = s->c->env.plugins, .level = SAMSA_CODEC_LEVEL_DEFAULT};
        rc = rb_builder_finish_compressed(&bt->b, s->c->s.compression, codec_rb_compress, &cx, &len);
    } else {
        rc = rb_builder_finish(&bt->b, &len);
    }
    if (rc) {
        err = coord_append_error(rc);
    } else if (!s->p || s->state != CSHARD_ACTIVE) {
        err = KERR_NOT_COORDINATOR;
    } else {
        /* Unlike an acks=all Produce, no NOT_ENOUGH_REPLICAS refusal
         * before the append: the operation already changed the groups in
         * memory, and a refused append would leave them ahead of the log.
         * The wait (coord_ack_check) answers an ISR below
         * min.insync.replicas with NOT_ENOUGH_REPLICAS_AFTER_APPEND,
         * which the client hears as the same COORDINATOR_NOT_AVAILABLE. */
        struct plog_append_result res;
        int32_t ep = atomic_load(&s->p->leader_epoch);
        /* as the coordinator: a transactional batch's producer epoch is
         * checked, not its sequence (the coordinator writes each at 0) */
        rc = partition_append_coordinator(s->p, bt->out.data + bt->out.len - len, len, bt->guard, &res);
        if (rc) {
            /* a fenced producer's transactional commit is the producer's
             * error, not the log's */
            slog(rc == KERR_INVALID_PRODUCER_EPOCH ? SLOG_INFO : SLOG_WARN,
                 "group coordinator: append to %s-%d failed: %s", COORD_OFFSETS_TOPIC, s->index,
                 kerr_name((int16_t)rc));
            err = coord_append_error(rc);
        } else {
            if (last)
                *last = res.last_offset;
            if (epoch)
                *epoch = ep;
        }
    }
    batch_free(bt);
    return err;
}

/* cg_env.store: one GroupMetadata record. */
static int store_group(struct cg_env *e, struct cgroup *g, const kbytes_t *assign)
{
    struct coord_shard *s = e->ctx;
    struct batch bt;
    batch_begin(&bt);
    crec_group_key(&bt.k, (kstr_t){g->id, g->id_len});
    crec_group_value(&bt.v, g, assign);
    int rc = batch_add(&bt, false);
    if (rc) {
        batch_free(&bt);
        return coord_append_error(rc);
    }
    int64_t last = -1;
    int32_t epoch = -1;
    int16_t err = batch_append(s, &bt, &last, &epoch);
    if (!err) {
        e->ack_offset = last;
        e->ack_epoch = epoch;
        g->has_record = true;
    }
    return err;
}

static void env_init(struct coord_shard *s, struct cg_env *e)
{
    memset(e, 0, sizeof *e);
    e->now = clock_mono_ms();
    e->wall_now = clock_wall_ms();
    e->initial_rebalance_delay_ms = s->c->s.initial_rebalance_delay_ms;
    e->new_member_join_timeout_ms = CG_NEW_MEMBER_JOIN_TIMEOUT_MS;
    e->max_size = s->c->s.max_size;
    e->store = store_group;
    e->ctx = s;
    e->ack_offset = -1;
    e->ack_epoch = -1;
}

/* After an operation on g: re-file its timers, drop it when nothing is
 * left of it. */
static void after_op(struct coord_shard *s, struct cgroup *g)
{
    if (cg_is_disposable(g)) {
        heap_remove(s, g);
        hmap_del(&s->groups, g->id, (size_t)g->id_len);
        cg_free(g, KERR_UNKNOWN_MEMBER_ID);
        return;
    }
    refile(s, g);
}

static struct cgroup *group_get(struct coord_shard *s, kstr_t id, bool create)
{
    size_t len = (size_t)(id.len > 0 ? id.len : 0);
    struct cgroup *g = hmap_get(&s->groups, id.p ? id.p : "", len);
    if (!g && create) {
        g = cg_new(id.p ? id.p : "", (int32_t)len, clock_wall_ms());
        hmap_put(&s->groups, g->id, len, g);
    }
    return g;
}

static void drop_group(struct coord_shard *s, struct cgroup *g, int16_t err)
{
    heap_remove(s, g);
    hmap_del(&s->groups, g->id, (size_t)g->id_len);
    cg_free(g, err);
}

/* ------------------------------------------------------------------ */
/* consumer groups (KIP-848): the world of one operation               */

struct ccg_ctx {
    struct coord_shard *s;
    struct mimage *img;
    struct batch own;
    struct batch *bt; /* where records go: own, or the caller's */
};

const samsa_assignor_t *coord_assignor_find(char *const *names, int32_t n, const struct plugin_registry *plugins,
                                             const char *name, void **state)
{
    *state = NULL;
    if (n == 0)
        return NULL;
    if (!name)
        name = names[0];
    bool listed = false;
    for (int32_t i = 0; i < n && !listed; i++)
        listed = strcmp(names[i], name) == 0;
    if (!listed)
        return NULL;
    const struct plugin_cap *cap = plugins ? plugin_find(plugins, SAMSA_CAP_ASSIGNOR, name) : NULL;
    if (!cap)
        return NULL;
    *state = cap->state;
    return &cap->vt.assignor;
}

static const samsa_assignor_t *env_assignor(void *ctx, const char *name, void **state)
{
    struct ccg_ctx *x = ctx;
    const struct coord *c = x->s->c;
    return coord_assignor_find(c->s.assignors, c->s.nassignors, c->env.plugins, name, state);
}

static bool env_topic(void *ctx, kstr_t name, kuuid_t *id, int32_t *nparts)
{
    struct ccg_ctx *x = ctx;
    const struct mi_topic *t = x->img ? mimage_topic(x->img, name) : NULL;
    if (!t || t->npartitions <= 0)
        return false;
    *id = t->id;
    *nparts = t->npartitions;
    return true;
}

static size_t env_racks(void *ctx, const kuuid_t *topic, int32_t partition, const char **racks, size_t cap)
{
    struct ccg_ctx *x = ctx;
    const struct mi_topic *t = x->img ? mimage_topic_by_id(x->img, topic) : NULL;
    if (!t || partition < 0 || partition >= t->npartitions)
        return 0;
    const struct mi_partition *p = &t->partitions[partition];
    size_t n = 0;
    const char *seen[64];
    size_t nseen = 0;
    for (int32_t i = 0; i < p->nreplicas; i++) {
        const struct mi_broker *b = mimage_broker(x->img, p->replicas[i]);
        if (!b || !b->rack || !b->rack[0])
            continue;
        bool dup = false;
        for (size_t k = 0; k < nseen && !dup; k++)
            dup = strcmp(seen[k], b->rack) == 0;
        if (dup)
            continue;
        if (nseen < sizeof seen / sizeof seen[0])
            seen[nseen++] = b->rack;
        if (n < cap)
            racks[n] = b->rack;
        n++;
    }
    return n;
}

static void env_each_topic(void *ctx, void (*fn)(void *arg, const char *name), void *arg)
{
    struct ccg_ctx *x = ctx;
    for (int32_t i = 0; x->img && i < x->img->ntopics; i++)
        fn(arg, x->img->topics[i]->name);
}

static void env_emit(struct ccg_env *e, const struct cgroup *g, enum ccg_rec kind, const struct ccg_member *m,
                     const char *member_id, bool tombstone)
{
    struct ccg_ctx *x = e->ctx;
    crec_ccg_key(&x->bt->k, kind, (kstr_t){g->id, g->id_len}, member_id ? KSTR(member_id) : KSTR_NULL);
    if (!tombstone)
        crec_ccg_value(&x->bt->v, kind, g, m);
    batch_add(x->bt, tombstone);
}

/* into: a batch being built to add the records to, NULL for a new one
 * (ccg_env_finish appends it). */
static void ccg_env_init_into(struct coord_shard *s, struct ccg_env *e, struct ccg_ctx *x, struct batch *into)
{
    memset(e, 0, sizeof *e);
    x->s = s;
    x->img = controller_image(s->c->env.controller);
    if (into) {
        x->bt = into;
    } else {
        batch_begin(&x->own);
        x->bt = &x->own;
    }
    e->now = clock_mono_ms();
    e->session_timeout_ms = s->c->s.cg_session_timeout_ms;
    e->heartbeat_interval_ms = s->c->s.cg_heartbeat_interval_ms;
    e->max_size = s->c->s.cg_max_size;
    e->assignor = env_assignor;
    e->topic = env_topic;
    e->each_topic = env_each_topic;
    e->racks = env_racks;
    e->topics_version = x->img ? x->img->offset : -1;
    e->ctx = x;
    e->emit = env_emit;
}

static void ccg_env_init(struct coord_shard *s, struct ccg_env *e, struct ccg_ctx *x)
{
    ccg_env_init_into(s, e, x, NULL);
}

/* Appends what the operation emitted; returns 0 or the error, *last the
 * offset to wait for and *epoch its leader epoch (either may be NULL). */
static int16_t ccg_env_finish(struct ccg_ctx *x, int64_t *last, int32_t *epoch)
{
    if (x->img)
        mimage_release(x->img);
    x->img = NULL;
    int64_t l = -1;
    int32_t ep = -1;
    int16_t err = batch_append(x->s, x->bt, &l, &ep);
    if (last)
        *last = l;
    if (epoch)
        *epoch = ep;
    return err;
}


/* ------------------------------------------------------------------ */
/* open transactions of a shard                                        */

struct txn_group_id {
    char *id;
    int32_t len;
};

struct txn_groups {
    struct txn_group_id *v;
    int32_t n, cap;
};

/* producer_id's transaction has offsets of g. */
static void txn_index_add(struct hmap *txns, int64_t producer_id, const struct cgroup *g)
{
    struct txn_groups *t = hmap_get(txns, &producer_id, sizeof producer_id);
    if (!t) {
        t = xcalloc(1, sizeof *t);
        hmap_put(txns, &producer_id, sizeof producer_id, t);
    }
    for (int32_t i = 0; i < t->n; i++)
        if (t->v[i].len == g->id_len && memcmp(t->v[i].id, g->id, (size_t)g->id_len) == 0)
            return;
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 4;
        t->v = xrealloc(t->v, (size_t)t->cap * sizeof *t->v);
    }
    t->v[t->n++] = (struct txn_group_id){xstrndup(g->id, (size_t)g->id_len), g->id_len};
}

static void txn_groups_free(struct txn_groups *t)
{
    if (!t)
        return;
    for (int32_t i = 0; i < t->n; i++)
        free(t->v[i].id);
    free(t->v);
    free(t);
}

static void txn_index_free(struct hmap *txns)
{
    size_t it = 0;
    const void *k;
    size_t kl;
    void *v;
    while (hmap_next(txns, &it, &k, &kl, &v))
        txn_groups_free(v);
    hmap_free(txns);
    hmap_init(txns);
}

/* Kafka's replayEndTransactionMarker: producer_id's transaction ended in
 * the log (commit or abort). Its groups are returned (the caller frees
 * the list with txn_groups_free), NULL when it had no offsets here. */
static struct txn_groups *txn_index_end(struct hmap *groups, struct hmap *txns, int64_t producer_id, bool commit)
{
    struct txn_groups *t = hmap_del(txns, &producer_id, sizeof producer_id);
    for (int32_t i = 0; t && i < t->n; i++) {
        struct cgroup *g = hmap_get(groups, t->v[i].id, (size_t)t->v[i].len);
        if (g)
            cg_txn_end(g, producer_id, commit);
    }
    return t;
}

/* ------------------------------------------------------------------ */
/* shards                                                              */

static struct cshard *shard_make(void *ctx, int32_t index)
{
    struct coord_shard *s = xcalloc(1, sizeof *s);
    cshard_init(&s->base, index);
    s->c = ctx;
    hmap_init(&s->groups);
    hmap_init(&s->txns);
    return &s->base;
}

static void shard_destroy(struct cshard *b)
{
    struct coord_shard *s = (struct coord_shard *)b;
    hmap_free(&s->groups);
    txn_index_free(&s->txns);
    hmap_free(&s->txns);
    free(s->heap);
    free(s);
}

static struct coord_shard *shard_at(struct coord *c, int32_t index, bool create)
{
    return (struct coord_shard *)cshard_at(&c->shards, index, create);
}

int32_t coord_num_partitions(const struct samsa_config *cfg, const struct mimage *img)
{
    const struct mi_topic *t = img ? mimage_topic(img, KSTR_LIT(COORD_OFFSETS_TOPIC)) : NULL;
    if (t && t->npartitions > 0)
        return t->npartitions;
    return cfg->offsets_topic_num_partitions > 0 ? cfg->offsets_topic_num_partitions : 50;
}

/* Finds the shard of group and locks it, or says why not. */
static int16_t acquire(struct coord *c, kstr_t group, struct coord_shard **out)
{
    struct cshard *b;
    bool want_load;
    int16_t err = cshard_acquire(&c->shards, c->env.controller, c->env.node_id, group, &b, &want_load);
    *out = (struct coord_shard *)b;
    if (want_load)
        kick(c);
    return err;
}

static void release(struct coord_shard *s)
{
    pthread_mutex_unlock(&s->lock);
}

void coord_ack_init(struct coord_ack *a)
{
    a->shard = NULL;
    a->offset = -1;
    a->epoch = -1;
    a->deadline = INT64_MAX;
    a->next = NULL;
}

/* Records the append an operation's answer depends on; the wait for it
 * ends offsets.commit.timeout.ms from now (Kafka's write timeout). */
static void ack_set(struct coord_ack *a, struct coord_shard *s, int64_t offset, int32_t epoch)
{
    a->shard = s;
    a->offset = offset;
    a->epoch = epoch;
    a->deadline = offset >= 0 && s ? clock_mono_ms() + s->c->s.commit_timeout_ms : INT64_MAX;
}

/* One element: as an acks=all Produce waits (the epoch check makes a
 * write truncated away by a leadership change fail instead of being
 * mistaken for whatever the new leader wrote at that offset). */
static enum ack_state ack_check_one(const struct coord_ack *a, int16_t *err)
{
    if (!a->shard || a->offset < 0)
        return ACK_READY;
    struct coord_shard *s = a->shard;
    pthread_mutex_lock(&s->lock);
    enum ack_state st;
    int16_t e = 0;
    if (s->state != CSHARD_ACTIVE || !s->p) {
        st = ACK_FAILED;
        e = KERR_NOT_COORDINATOR;
    } else {
        st = partition_ack_wait_all(s->p, a->offset, a->epoch, &e);
    }
    pthread_mutex_unlock(&s->lock);
    if (st == ACK_WAIT && clock_mono_ms() >= a->deadline) {
        st = ACK_FAILED;
        e = KERR_REQUEST_TIMED_OUT;
    }
    if (st == ACK_FAILED)
        *err = coord_append_error(e);
    return st;
}

enum ack_state coord_ack_check(const struct coord_ack *a, int16_t *err)
{
    enum ack_state st = ACK_READY;
    for (; a; a = a->next) {
        enum ack_state one = ack_check_one(a, err);
        if (one == ACK_FAILED)
            return one;
        if (one == ACK_WAIT)
            st = ACK_WAIT;
    }
    return st;
}

struct partition *coord_ack_partition(const struct coord_ack *a)
{
    return a->shard && a->offset >= 0 ? cshard_partition(&a->shard->base) : NULL;
}

/* ------------------------------------------------------------------ */
/* loading and unloading                                               */

static void unload(struct coord_shard *s, const char *why)
{
    pthread_mutex_lock(&s->lock);
    if (s->state == CSHARD_ACTIVE && hmap_count(&s->groups) > 0)
        slog_info("group coordinator: unloading %s-%d (%s): %zu group(s)", COORD_OFFSETS_TOPIC, s->index, why,
                  hmap_count(&s->groups));
    size_t it = 0;
    const void *k;
    size_t kl;
    void *v;
    while (hmap_next(&s->groups, &it, &k, &kl, &v))
        cg_free(v, KERR_NOT_COORDINATOR);
    hmap_free(&s->groups);
    hmap_init(&s->groups);
    txn_index_free(&s->txns);
    s->nheap = 0;
    if (s->p)
        partition_put(s->p);
    s->p = NULL;
    s->state = CSHARD_UNLOADED;
    s->epoch = -1;
    pthread_mutex_unlock(&s->lock);
}

static void tp_load(struct ctp_set *dst, const void *arr, int32_t n)
{
    /* the TopicPartitions structs of the schemas share one layout */
    const consumer_group_current_member_assignment_value_topic_partitions_t *v = arr;
    ctp_set_free(dst);
    for (int32_t i = 0; i < n; i++)
        for (int32_t k = 0; k < v[i].partitions.n; k++)
            ctp_set_add(dst, &v[i].topic_id, v[i].partitions.a[k]);
}

/* Replays one consumer group record (Kafka's GroupMetadataManager.replay). */
static void replay_ccg(struct hmap *groups, const struct crec *r, int64_t wall_now)
{
    kstr_t gid = r->ccg_group;
    size_t gl = (size_t)(gid.len > 0 ? gid.len : 0);
    struct cgroup *g = hmap_get(groups, gid.p ? gid.p : "", gl);
    if (r->tombstone && (!g || !g->cc))
        return;
    if (r->ccg_kind == CCG_REC_METADATA && r->tombstone) {
        ccg_free(g->cc);
        g->cc = NULL;
        return;
    }
    if (!g) {
        g = cg_new(gid.p ? gid.p : "", (int32_t)gl, wall_now);
        hmap_put(groups, g->id, gl, g);
    }
    if (!g->cc)
        g->cc = ccg_new();
    struct ccgroup *cc = g->cc;
    cc->has_records = true;
    struct ccg_member *m;
    switch (r->ccg_kind) {
    case CCG_REC_METADATA:
        cc->epoch = r->cmeta.epoch;
        break;
    case CCG_REC_PARTITION_META:
        for (int32_t i = 0; i < cc->nmeta; i++)
            free(cc->meta[i].name);
        free(cc->meta);
        cc->meta = NULL;
        cc->nmeta = 0;
        if (r->tombstone)
            break;
        cc->meta = xcalloc((size_t)(r->cpmeta.topics.n + 1), sizeof *cc->meta);
        for (int32_t i = 0; i < r->cpmeta.topics.n; i++) {
            const consumer_group_partition_metadata_value_topic_metadata_t *t = &r->cpmeta.topics.a[i];
            cc->meta[i] = (struct ccg_topic){t->topic_id, ccg_strdup(t->topic_name), t->num_partitions};
            if (!cc->meta[i].name)
                cc->meta[i].name = xstrdup("");
        }
        cc->nmeta = r->cpmeta.topics.n;
        break;
    case CCG_REC_MEMBER:
        if (r->tombstone) {
            ccg_member_remove(cc, r->ccg_member);
            break;
        }
        m = ccg_member_get_or_add(cc, r->ccg_member);
        free(m->instance_id);
        m->instance_id = ccg_strdup(r->cmember.instance_id);
        free(m->rack_id);
        m->rack_id = ccg_strdup(r->cmember.rack_id);
        free(m->client_id);
        m->client_id = ccg_strdup(r->cmember.client_id.len >= 0 ? r->cmember.client_id : KSTR_LIT(""));
        free(m->client_host);
        m->client_host = ccg_strdup(r->cmember.client_host.len >= 0 ? r->cmember.client_host : KSTR_LIT(""));
        free(m->regex);
        m->regex = ccg_strdup(r->cmember.subscribed_topic_regex);
        free(m->assignor);
        m->assignor = ccg_strdup(r->cmember.server_assignor);
        m->rebalance_timeout_ms = r->cmember.rebalance_timeout_ms;
        ccg_member_set_topics(m, r->cmember.subscribed_topic_names.n > 0 ? r->cmember.subscribed_topic_names.n : 0,
                              r->cmember.subscribed_topic_names.a);
        m->has_metadata = true;
        break;
    case CCG_REC_TARGET_META:
        cc->assign_epoch = r->tombstone ? 0 : r->ctmeta.assignment_epoch;
        break;
    case CCG_REC_TARGET_MEMBER:
        m = r->tombstone ? ccg_member_find(cc, r->ccg_member) : ccg_member_get_or_add(cc, r->ccg_member);
        if (!m)
            break;
        if (r->tombstone)
            ctp_set_free(&m->target);
        else
            tp_load(&m->target, r->ctmember.topic_partitions.a, r->ctmember.topic_partitions.n);
        break;
    case CCG_REC_CURRENT:
        m = r->tombstone ? ccg_member_find(cc, r->ccg_member) : ccg_member_get_or_add(cc, r->ccg_member);
        if (!m)
            break;
        if (r->tombstone) {
            ctp_set_free(&m->assigned);
            ctp_set_free(&m->revoking);
            break;
        }
        m->epoch = r->ccurrent.member_epoch;
        m->prev_epoch = r->ccurrent.previous_member_epoch;
        m->state = r->ccurrent.state;
        tp_load(&m->assigned, r->ccurrent.assigned_partitions.a, r->ccurrent.assigned_partitions.n);
        tp_load(&m->revoking, r->ccurrent.partitions_pending_revocation.a,
                r->ccurrent.partitions_pending_revocation.n);
        break;
    }
}

/* Replays one record into groups and txns (maps being built), the
 * record at offset of a transactional batch of producer_id (-1: not
 * transactional), as Kafka's OffsetMetadataManager.replay. */
static void replay(struct hmap *groups, struct hmap *txns, const struct crec *r, int64_t offset,
                   int64_t producer_id, int64_t wall_now)
{
    if (r->kind == CREC_CCG) {
        replay_ccg(groups, r, wall_now);
        return;
    }
    if (r->kind == CREC_OFFSET) {
        kstr_t gid = r->okey.group;
        size_t gl = (size_t)(gid.len > 0 ? gid.len : 0);
        struct cgroup *g = hmap_get(groups, gid.p ? gid.p : "", gl);
        if (r->tombstone) {
            if (g) {
                cg_offset_del(g, r->okey.topic, r->okey.partition);
                cg_txn_del(g, r->okey.topic, r->okey.partition);
            }
            return;
        }
        if (!g) {
            g = cg_new(gid.p ? gid.p : "", (int32_t)gl, wall_now);
            hmap_put(groups, g->id, gl, g);
        }
        struct cg_offset o = {
            .offset = r->ovalue.offset,
            .leader_epoch = r->ovalue.leader_epoch,
            .metadata = (char *)(r->ovalue.metadata.p ? r->ovalue.metadata.p : ""),
            .metadata_len = r->ovalue.metadata.len > 0 ? r->ovalue.metadata.len : 0,
            .commit_ts = r->ovalue.commit_timestamp,
            .expire_ts = r->ovalue.expire_timestamp,
            .record_offset = offset,
        };
        if (producer_id >= 0) {
            cg_txn_put(g, producer_id, r->okey.topic, r->okey.partition, &o);
            txn_index_add(txns, producer_id, g);
        } else {
            cg_offset_put(g, r->okey.topic, r->okey.partition, &o);
        }
        return;
    }
    if (r->kind != CREC_GROUP)
        return;
    kstr_t gid = r->gkey.group;
    size_t gl = (size_t)(gid.len > 0 ? gid.len : 0);
    struct cgroup *g = hmap_get(groups, gid.p ? gid.p : "", gl);
    if (r->tombstone) {
        if (!g)
            return;
        /* the group is gone; offsets written after it (a simple group)
         * would stay */
        cg_load_metadata(g, KSTR_LIT(""), 0, KSTR_NULL, KSTR_NULL, wall_now, 0, NULL);
        g->has_record = false;
        return;
    }
    if (!g) {
        g = cg_new(gid.p ? gid.p : "", (int32_t)gl, wall_now);
        hmap_put(groups, g->id, gl, g);
    }
    const group_metadata_value_t *v = &r->gvalue;
    struct cg_loaded_member *lm = xcalloc((size_t)(v->members.n > 0 ? v->members.n : 1), sizeof *lm);
    for (int32_t i = 0; i < v->members.n; i++) {
        const group_metadata_value_member_metadata_t *m = &v->members.a[i];
        lm[i] = (struct cg_loaded_member){m->member_id,         m->group_instance_id, m->client_id,
                                          m->client_host,       m->rebalance_timeout, m->session_timeout,
                                          m->subscription,      m->assignment};
    }
    cg_load_metadata(g, v->protocol_type, v->generation, v->protocol, v->leader, v->current_state_timestamp,
                     v->members.n, lm);
    free(lm);
}

/* Reads the whole partition into groups. Returns 0 or a Kafka error. */
struct read_ctx {
    struct hmap *groups;
    struct hmap *txns;
    int64_t *nrecords;
    int64_t wall;
    int32_t index;
    bool warned_other;
};

static void read_one(void *arg, int64_t offset, int64_t producer_id, kbytes_t key, kbytes_t value)
{
    struct read_ctx *x = arg;
    struct arena a = ARENA_INIT;
    struct crec cr;
    if (crec_parse(key, value, &a, &cr) < 0) {
        slog_warn("group coordinator: %s-%d offset %lld: record does not parse; skipped", COORD_OFFSETS_TOPIC,
                  x->index, (long long)offset);
    } else if (cr.kind == CREC_OTHER) {
        if (!x->warned_other)
            slog_warn("group coordinator: %s-%d holds records of key version %d (not classic "
                      "groups); ignored",
                      COORD_OFFSETS_TOPIC, x->index, cr.key_version);
        x->warned_other = true;
    } else {
        replay(x->groups, x->txns, &cr, offset, producer_id, x->wall);
        (*x->nrecords)++;
    }
    arena_free(&a);
}

static void read_marker(void *arg, int64_t offset, int64_t producer_id, bool commit)
{
    (void)offset;
    struct read_ctx *x = arg;
    txn_groups_free(txn_index_end(x->groups, x->txns, producer_id, commit));
}

/* Transactional offset commits are replayed pending, their markers
 * commit or drop them in log order; a transaction still open at the end
 * of the log stays pending (its marker comes later). */
static int read_partition(struct coord *c, struct partition *p, struct hmap *groups, struct hmap *txns,
                          int64_t *nrecords)
{
    struct read_ctx x = {groups, txns, nrecords, clock_wall_ms(), p->index, false};
    static const struct coord_scan_fns fns = {read_one, read_marker};
    return coord_log_scan_txn(p, c->env.plugins, c->s.load_buffer, COORD_OFFSETS_TOPIC, &fns, &x);
}

static void load(struct coord *c, struct coord_shard *s, const kuuid_t *topic_id, int32_t epoch)
{
    struct partition *p = preg_get(c->env.partitions, topic_id, s->index);
    if (!p)
        return; /* its log is not open yet: next round */
    pthread_mutex_lock(&s->lock);
    s->state = CSHARD_LOADING;
    pthread_mutex_unlock(&s->lock);

    int64_t t0 = clock_mono_ms();
    struct hmap groups, txns;
    hmap_init(&groups);
    hmap_init(&txns);
    int64_t nrec = 0;
    int err = read_partition(c, p, &groups, &txns, &nrec);

    pthread_mutex_lock(&s->lock);
    if (err) {
        slog_error("group coordinator: loading %s-%d failed: %s", COORD_OFFSETS_TOPIC, s->index,
                   kerr_name((int16_t)err));
        s->state = CSHARD_UNLOADED;
        pthread_mutex_unlock(&s->lock);
        size_t it = 0;
        const void *k;
        size_t kl;
        void *v;
        while (hmap_next(&groups, &it, &k, &kl, &v))
            cg_free(v, KERR_NOT_COORDINATOR);
        hmap_free(&groups);
        txn_index_free(&txns);
        partition_put(p);
        return;
    }
    s->groups = groups;
    txn_index_free(&s->txns);
    s->txns = txns;
    s->p = p;
    s->topic_id = *topic_id;
    s->epoch = epoch;
    s->nheap = 0;
    s->state = CSHARD_ACTIVE;
    struct cg_env e;
    env_init(s, &e);
    size_t it = 0, n = 0;
    const void *k;
    size_t kl;
    void *v;
    /* collect first: dropping groups changes the map */
    struct cgroup **all = xcalloc(hmap_count(&s->groups) + 1, sizeof *all);
    while (hmap_next(&s->groups, &it, &k, &kl, &v))
        all[n++] = v;
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        struct cgroup *g = all[i];
        if (cg_is_disposable(g)) {
            drop_group(s, g, KERR_NOT_COORDINATOR);
            continue;
        }
        cg_loaded(&e, g);
        if (g->cc) {
            struct ccg_env ce;
            struct ccg_ctx cx;
            ccg_env_init(s, &ce, &cx);
            ccg_loaded(&ce, g->cc);
            if (cx.img)
                mimage_release(cx.img);
            rb_builder_abort(&cx.own.b);
            batch_free(&cx.own);
        }
        refile(s, g);
        kept++;
    }
    free(all);
    /* an empty partition (most of the 50) is not worth a line */
    slog(kept || nrec ? SLOG_INFO : SLOG_DEBUG,
         "group coordinator: loaded %s-%d (epoch %d): %zu group(s), %zu open transaction(s) from %lld record(s) "
         "in %lld ms",
         COORD_OFFSETS_TOPIC, s->index, epoch, kept, hmap_count(&s->txns), (long long)nrec,
         (long long)(clock_mono_ms() - t0));
    pthread_mutex_unlock(&s->lock);
}

/* Brings the shards in line with the image: load what this node leads,
 * unload what it no longer does. */
static void load_cb(void *ctx, struct cshard *s, const kuuid_t *topic_id, int32_t epoch)
{
    load(ctx, (struct coord_shard *)s, topic_id, epoch);
}

static void unload_cb(void *ctx, struct cshard *s, const char *why)
{
    (void)ctx;
    unload((struct coord_shard *)s, why);
}

static void sync_image(struct coord *c)
{
    cshard_sync(&c->shards, c->env.controller, c->env.node_id, load_cb, unload_cb, c);
}

/* ------------------------------------------------------------------ */
/* offset expiration (offsets.retention.minutes)                       */

/* Kafka's ClassicGroup.offsetExpirationCondition: the timestamp an
 * offset's retention counts from, or -1 when it does not expire. */
static int64_t expiry_base(const struct cgroup *g, kstr_t topic, const struct cg_offset *o)
{
    if (g->cc) /* ConsumerGroup: offsets of subscribed topics stay */
        return ccg_subscribed_to(g->cc, topic) ? -1 : o->commit_ts;
    if (!g->protocol_type)
        return o->commit_ts; /* simple group */
    if (g->state == CG_EMPTY)
        return g->state_ts >= 0 ? g->state_ts : o->commit_ts;
    if (g->state == CG_STABLE && strcmp(g->protocol_type, "consumer") == 0 && g->subscribed_known &&
        !cg_subscribed_to(g, topic))
        return o->commit_ts;
    return -1;
}

static void expire_offsets(struct coord_shard *s, int64_t retention_ms)
{
    int64_t now = clock_wall_ms();
    size_t it = 0, n = 0;
    const void *k;
    size_t kl;
    void *v;
    struct cgroup **all = xcalloc(hmap_count(&s->groups) + 1, sizeof *all);
    while (hmap_next(&s->groups, &it, &k, &kl, &v))
        all[n++] = v;
    for (size_t i = 0; i < n; i++) {
        struct cgroup *g = all[i];
        struct batch bt;
        batch_begin(&bt);
        size_t oit = 0;
        kstr_t topic;
        int32_t part;
        const struct cg_offset *o;
        /* collected as (topic, partition) pairs to delete after the append */
        struct arena a = ARENA_INIT;
        kstr_t *dt = NULL;
        int32_t *dp = NULL;
        int32_t nd = 0, capd = 0;
        while (cg_offset_next(g, &oit, &topic, &part, &o)) {
            int64_t base = expiry_base(g, topic, o);
            bool expired = o->expire_ts >= 0 ? now >= o->expire_ts : base >= 0 && now - base >= retention_ms;
            /* Kafka keeps an offset a transaction is about to replace */
            if (!expired || cg_txn_pending(g, topic, part))
                continue;
            if (nd == capd) {
                capd = capd ? 2 * capd : 16;
                kstr_t *ndt = arena_alloc(&a, (size_t)capd * sizeof *ndt);
                int32_t *ndp = arena_alloc(&a, (size_t)capd * sizeof *ndp);
                if (nd) {
                    memcpy(ndt, dt, (size_t)nd * sizeof *dt);
                    memcpy(ndp, dp, (size_t)nd * sizeof *dp);
                }
                dt = ndt;
                dp = ndp;
            }
            dt[nd] = (kstr_t){arena_strndup(&a, topic.p, (size_t)topic.len), topic.len};
            dp[nd++] = part;
            crec_offset_key(&bt.k, (kstr_t){g->id, g->id_len}, topic, part);
            batch_add(&bt, true);
        }
        /* not while a transaction has offsets of the group */
        bool drop = g->state == CG_EMPTY && cg_offset_count(g) == (size_t)nd && g->npending == 0 &&
                    (!g->cc || g->cc->nmembers == 0) && cg_txn_count(g) == 0;
        if (drop && g->cc) {
            if (g->cc->has_records) {
                struct ccg_env ce;
                struct ccg_ctx cx;
                ccg_env_init_into(s, &ce, &cx, &bt); /* one batch */
                ccg_emit_tombstones(&ce, g);
                mimage_release(cx.img);
            }
        } else if (drop && (g->has_record || nd > 0)) {
            crec_group_key(&bt.k, (kstr_t){g->id, g->id_len});
            batch_add(&bt, true);
        }
        if (bt.n == 0) {
            batch_free(&bt);
            arena_free(&a);
            continue;
        }
        int16_t err = batch_append(s, &bt, NULL, NULL);
        if (err) {
            slog_warn("group coordinator: expiring offsets of group %s failed: %s", g->id, kerr_name(err));
        } else {
            for (int32_t j = 0; j < nd; j++)
                cg_offset_del(g, dt[j], dp[j]);
            if (nd)
                slog_info("group coordinator: group %s: %d offset(s) expired", g->id, nd);
            if (drop) {
                slog_info("group coordinator: group %s removed (empty, no offsets)", g->id);
                drop_group(s, g, KERR_UNKNOWN_MEMBER_ID);
            }
        }
        arena_free(&a);
    }
    free(all);
}

/* ------------------------------------------------------------------ */
/* the thread                                                          */

static void run_timers(struct coord *c, int64_t now, int64_t *next)
{
    int32_t n = cshard_count(&c->shards);
    for (int32_t i = 0; i < n; i++) {
        struct coord_shard *s = shard_at(c, i, false);
        if (!s)
            continue;
        pthread_mutex_lock(&s->lock);
        if (s->state == CSHARD_ACTIVE) {
            /* take the due groups out first: a group still due after
             * its tick comes back in the next round, not this one */
            int32_t ndue = 0;
            struct cgroup **due = NULL;
            while (s->nheap > 0 && s->heap[0]->heap_key <= now) {
                due = xrealloc(due, (size_t)(ndue + 1) * sizeof *due);
                due[ndue] = s->heap[0];
                heap_remove(s, due[ndue]);
                ndue++;
            }
            for (int32_t k = 0; k < ndue; k++) {
                if (due[k]->cc) {
                    struct ccg_env ce;
                    struct ccg_ctx cx;
                    ccg_env_init(s, &ce, &cx);
                    ce.now = now;
                    ccg_tick(&ce, due[k]);
                    int16_t err = ccg_env_finish(&cx, NULL, NULL);
                    if (err)
                        slog_warn("group coordinator: consumer group %s: writing its records failed: %s",
                                  due[k]->id, kerr_name(err));
                    after_op(s, due[k]);
                    continue;
                }
                struct cg_env e;
                env_init(s, &e);
                e.now = now;
                cg_tick(&e, due[k]);
                after_op(s, due[k]);
            }
            free(due);
            if (s->nheap > 0 && s->heap[0]->heap_key < *next)
                *next = s->heap[0]->heap_key;
        }
        pthread_mutex_unlock(&s->lock);
    }
}

static void run_expiration(struct coord *c)
{
    int32_t n = cshard_count(&c->shards);
    for (int32_t i = 0; i < n; i++) {
        struct coord_shard *s = shard_at(c, i, false);
        pthread_mutex_lock(&s->lock);
        if (s->state == CSHARD_ACTIVE)
            expire_offsets(s, c->s.retention_ms);
        pthread_mutex_unlock(&s->lock);
    }
}

static void *coord_main(void *arg)
{
    struct coord *c = arg;
    thread_set_name("samsa-groups");
    int64_t next_expire = clock_mono_ms() + c->s.retention_check_ms;
    int64_t next_image = 0;
    for (;;) {
        int64_t now = clock_mono_ms();
        if (now >= next_image) {
            sync_image(c);
            next_image = now + IMAGE_POLL_MS;
        }
        now = clock_mono_ms();
        int64_t next = next_image;
        run_timers(c, now, &next);
        if (now >= next_expire) {
            run_expiration(c);
            next_expire = now + c->s.retention_check_ms;
        }
        if (next_expire < next)
            next = next_expire;

        pthread_mutex_lock(&c->lock);
        if (c->stop) {
            pthread_mutex_unlock(&c->lock);
            break;
        }
        if (c->kicked || c->timer_kick) {
            /* a request wants a shard loaded, or a timer moved closer */
            bool k = c->kicked;
            c->kicked = c->timer_kick = false;
            pthread_mutex_unlock(&c->lock);
            if (k)
                next_image = 0;
            continue;
        }
        c->next_wake = next;
        int64_t wait = next - clock_mono_ms();
        if (wait > 0) {
            struct timespec ts;
            clock_deadline_after(&ts, wait);
            while (!c->kicked && !c->timer_kick && !c->stop) {
                if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) == ETIMEDOUT)
                    break;
            }
        }
        c->next_wake = INT64_MAX;
        bool kicked = c->kicked;
        c->kicked = c->timer_kick = false;
        pthread_mutex_unlock(&c->lock);
        if (kicked)
            next_image = 0;
    }
    return NULL;
}

/* Kafka refuses to start when group.consumer.assignors names a class it
 * cannot load; so does samsa for a name no loaded plugin offers as an
 * assignor. Unset, the key means Kafka's default (uniform,range) as far
 * as this site's build has those modules, so a build without them still
 * starts (KIP-848 groups then need a ServerAssignor it has, or get
 * UNSUPPORTED_ASSIGNOR). */
char **coord_assignor_names(const struct samsa_config *cfg, const struct plugin_registry *plugins, int32_t *n,
                            char *err, size_t errlen)
{
    bool set = config_is_set(cfg, "group.consumer.assignors");
    const char *as = set ? config_get(cfg, "group.consumer.assignors") : COORD_DEFAULT_ASSIGNORS;
    char *list = xstrdup(as ? as : ""), *save = NULL;
    char **v = xcalloc(1, sizeof *v);
    int32_t k = 0;
    bool bad = false;
    for (char *t = strtok_r(list, ", ", &save); t && !bad; t = strtok_r(NULL, ", ", &save)) {
        if (!(plugins && plugin_find(plugins, SAMSA_CAP_ASSIGNOR, t))) {
            if (!set)
                continue;
            snprintf(err, errlen,
                     "config 'group.consumer.assignors': no assignor '%s' (no loaded plugin offers it; uniform "
                     "and range come from the modules assignor-uniform and assignor-range, see samsa "
                     "--list-plugins)",
                     t);
            bad = true;
            break;
        }
        v = xrealloc(v, (size_t)(k + 2) * sizeof *v);
        v[k++] = xstrdup(t);
    }
    if (!bad && set && k == 0) {
        snprintf(err, errlen, "config 'group.consumer.assignors': names no assignor");
        bad = true;
    }
    free(list);
    if (bad) {
        for (int32_t i = 0; i < k; i++)
            free(v[i]);
        free(v);
        return NULL;
    }
    v[k] = NULL;
    *n = k;
    return v;
}

int coord_check_assignors(const struct samsa_config *cfg, const struct plugin_registry *plugins, char *err,
                          size_t errlen)
{
    int32_t n = 0;
    char **v = coord_assignor_names(cfg, plugins, &n, err, errlen);
    if (!v)
        return -1;
    for (int32_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
    return 0;
}

struct coord *coord_create(const struct coord_env *env)
{
    struct coord *c = xcalloc(1, sizeof *c);
    c->env = *env;
    const struct samsa_config *cfg = env->cfg;
    c->s.initial_rebalance_delay_ms = cfg->group_initial_rebalance_delay_ms;
    c->s.max_size = (int32_t)cfg_long(cfg, "group.max.size", INT32_MAX);
    c->s.metadata_max_bytes = (int32_t)cfg_long(cfg, "offset.metadata.max.bytes", 4096);
    c->s.retention_ms = cfg_long(cfg, "offsets.retention.minutes", 10080) * 60 * 1000;
    c->s.retention_check_ms = cfg_long(cfg, "offsets.retention.check.interval.ms", 600000);
    c->s.load_buffer = (int32_t)cfg_long(cfg, "offsets.load.buffer.size", 5242880);
    c->s.commit_timeout_ms = cfg_long(cfg, "offsets.commit.timeout.ms", 5000);
    c->s.compression = cfg->offsets_topic_compression_codec;
    if (c->s.load_buffer < 4096)
        c->s.load_buffer = 4096;
    c->s.cg_session_timeout_ms = (int32_t)cfg_long(cfg, "group.consumer.session.timeout.ms", 45000);
    c->s.cg_heartbeat_interval_ms = (int32_t)cfg_long(cfg, "group.consumer.heartbeat.interval.ms", 5000);
    c->s.cg_max_size = (int32_t)cfg_long(cfg, "group.consumer.max.size", INT32_MAX);
    char aerr[512] = "";
    c->s.assignors = coord_assignor_names(cfg, env->plugins, &c->s.nassignors, aerr, sizeof aerr);
    if (!c->s.assignors) { /* checked at startup (main.c); not reached */
        slog_warn("group coordinator: %s", aerr);
        c->s.assignors = xcalloc(1, sizeof *c->s.assignors);
        c->s.nassignors = 0;
    } else if (c->s.nassignors == 0) {
        slog_warn("group coordinator: no server-side assignor is loaded (this build or plugins= leaves out "
                  "assignor-uniform and assignor-range): KIP-848 consumer groups are refused with "
                  "UNSUPPORTED_ASSIGNOR");
    }
    cshard_table_init(&c->shards, COORD_OFFSETS_TOPIC, shard_make, c);
    pthread_mutex_init(&c->lock, NULL);
    clock_cond_init_mono(&c->cond);
    c->next_wake = INT64_MAX;
    return c;
}

void coord_start(struct coord *c)
{
    if (pthread_create(&c->thread, NULL, coord_main, c) == 0)
        c->started = true;
    else
        slog_error("group coordinator: cannot start its thread");
}

void coord_stop(struct coord *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    c->stop = true;
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->lock);
    if (c->started)
        pthread_join(c->thread, NULL);
    c->started = false;
    for (int32_t i = 0; i < cshard_count(&c->shards); i++)
        unload(shard_at(c, i, false), "shutdown");
}

void coord_destroy(struct coord *c)
{
    if (!c)
        return;
    cshard_table_free(&c->shards, shard_destroy);
    for (int32_t i = 0; i < c->s.nassignors; i++)
        free(c->s.assignors[i]);
    free(c->s.assignors);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cond);
    free(c);
}

/* ------------------------------------------------------------------ */
/* operations                                                          */

int16_t coord_join(struct coord *c, kstr_t group, const struct cg_join_req *rq, struct cg_waiter *w,
                   bool *waiting)
{
    *waiting = false;
    struct coord_shard *s;
    int16_t err = acquire(c, group, &s);
    if (err)
        return err;
    w->owner = s;
    /* A known member id names a group that must exist. */
    struct cgroup *g = group_get(s, group, rq->member_id.len <= 0);
    int64_t tomb_last = -1;
    int32_t tomb_epoch = -1;
    if (g && g->cc) {
        if (g->cc->nmembers > 0) {
            /* a consumer group with members (no online migration) */
            w->error = KERR_INCONSISTENT_GROUP_PROTOCOL;
            w->member_id = rq->member_id;
            atomic_store_explicit(&w->done, true, memory_order_release);
            release(s);
            return 0;
        }
        /* an empty consumer group becomes a classic one */
        struct ccg_env ce;
        struct ccg_ctx cx;
        ccg_env_init(s, &ce, &cx);
        if (g->cc->has_records)
            ccg_emit_tombstones(&ce, g);
        int16_t terr = ccg_env_finish(&cx, &tomb_last, &tomb_epoch);
        if (terr) {
            w->error = terr;
            w->member_id = rq->member_id;
            atomic_store_explicit(&w->done, true, memory_order_release);
            release(s);
            return 0;
        }
        ccg_free(g->cc);
        g->cc = NULL;
    }
    if (!g) {
        w->error = KERR_UNKNOWN_MEMBER_ID;
        w->member_id = rq->member_id;
        atomic_store_explicit(&w->done, true, memory_order_release);
        release(s);
        return 0;
    }
    struct cg_env e;
    env_init(s, &e);
    /* an answer given now waits for the tombstones too (a later store
     * moves the wait past them) */
    e.ack_offset = tomb_last;
    e.ack_epoch = tomb_epoch;
    cg_join(&e, g, rq, w);
    *waiting = w->member != NULL; /* under the lock: done or attached */
    after_op(s, g);
    release(s);
    return 0;
}

int16_t coord_sync(struct coord *c, kstr_t group, const struct cg_sync_req *rq, struct cg_waiter *w,
                   bool *waiting)
{
    *waiting = false;
    struct coord_shard *s;
    int16_t err = acquire(c, group, &s);
    if (err)
        return err;
    w->owner = s;
    struct cgroup *g = group_get(s, group, false);
    if (!g) {
        w->error = KERR_UNKNOWN_MEMBER_ID;
        atomic_store_explicit(&w->done, true, memory_order_release);
        release(s);
        return 0;
    }
    struct cg_env e;
    env_init(s, &e);
    cg_sync(&e, g, rq, w);
    *waiting = w->member != NULL;
    after_op(s, g);
    release(s);
    return 0;
}

bool coord_cancel(struct cg_waiter *w)
{
    struct coord_shard *s = w->owner;
    if (!s)
        return false;
    pthread_mutex_lock(&s->lock);
    bool r = cg_waiter_detach(w);
    pthread_mutex_unlock(&s->lock);
    return r;
}

void coord_waiter_ack(const struct cg_waiter *w, struct coord_ack *out)
{
    coord_ack_init(out);
    ack_set(out, w->owner, w->ack_offset, w->ack_epoch);
}

int16_t coord_heartbeat(struct coord *c, kstr_t group, kstr_t member_id, kstr_t instance_id, int32_t generation,
                        struct coord_ack *ack)
{
    coord_ack_init(ack);
    struct coord_shard *s;
    int16_t err = acquire(c, group, &s);
    if (err)
        return err == KERR_COORDINATOR_LOAD_IN_PROGRESS ? 0 : err; /* Kafka answers a heartbeat NONE then */
    struct cgroup *g = group_get(s, group, false);
    if (!g) {
        release(s);
        return KERR_UNKNOWN_MEMBER_ID;
    }
    struct cg_env e;
    env_init(s, &e);
    err = cg_heartbeat(&e, g, member_id, instance_id, generation);
    after_op(s, g);
    ack_set(ack, s, e.ack_offset, e.ack_epoch);
    release(s);
    return err;
}

int16_t coord_leave(struct coord *c, kstr_t group, int32_t n, const kstr_t *member_ids, const kstr_t *instance_ids,
                    int16_t *errs, struct coord_ack *ack)
{
    coord_ack_init(ack);
    struct coord_shard *s;
    int16_t err = acquire(c, group, &s);
    if (err)
        return err;
    struct cgroup *g = group_get(s, group, false);
    if (!g) {
        for (int32_t i = 0; i < n; i++)
            errs[i] = KERR_UNKNOWN_MEMBER_ID;
        release(s);
        return 0;
    }
    struct cg_env e;
    env_init(s, &e);
    err = cg_leave(&e, g, n, member_ids, instance_ids, errs);
    after_op(s, g);
    ack_set(ack, s, e.ack_offset, e.ack_epoch);
    release(s);
    return err;
}

int16_t coord_commit(struct coord *c, kstr_t group, kstr_t member_id, kstr_t instance_id, int32_t generation,
                     int16_t version, int64_t retention_ms, struct coord_commit *parts, int32_t n,
                     struct coord_ack *ack)
{
    coord_ack_init(ack);
    struct coord_shard *s;
    int16_t err = acquire(c, group, &s);
    if (err)
        return err;
    struct cgroup *g = group_get(s, group, false);
    bool created = false;
    if (!g) {
        if (generation >= 0) {
            release(s);
            /* v9+ says so; older versions keep ILLEGAL_GENERATION */
            return version >= 9 ? KERR_GROUP_ID_NOT_FOUND : KERR_ILLEGAL_GENERATION;
        }
        /* a "simple" group: offsets without group management */
        g = group_get(s, group, true);
        created = true;
    }
    struct cg_env e;
    env_init(s, &e);
    err = g->cc ? ccg_validate_commit(g->cc, member_id, generation, version)
                : cg_validate_commit(&e, g, member_id, instance_id, generation);
    if (err) {
        after_op(s, g);
        release(s);
        return err;
    }
    if (created)
        slog_info("group coordinator: group %.*s created by a manual offset commit", (int)group.len, group.p);
    int64_t now = e.wall_now;
    int64_t expire = retention_ms == -1 ? -1 : now + retention_ms;
    struct batch bt;
    batch_begin(&bt);
    struct cg_offset *vals = xcalloc((size_t)(n > 0 ? n : 1), sizeof *vals);
    int32_t *rec = xcalloc((size_t)(n > 0 ? n : 1), sizeof *rec); /* index of its record in the batch */
    for (int32_t i = 0; i < n; i++) {
        struct coord_commit *p = &parts[i];
        if (p->error)
            continue;
        if (p->metadata.len > c->s.metadata_max_bytes) {
            p->error = KERR_OFFSET_METADATA_TOO_LARGE;
            continue;
        }
        rec[i] = bt.n;
        vals[i] = (struct cg_offset){
            .offset = p->offset,
            .leader_epoch = p->leader_epoch,
            .metadata = (char *)(p->metadata.len > 0 ? p->metadata.p : ""),
            .metadata_len = p->metadata.len > 0 ? p->metadata.len : 0,
            .commit_ts = p->commit_ts == -1 ? now : p->commit_ts,
            .expire_ts = expire,
        };
        crec_offset_key(&bt.k, group, p->topic, p->partition);
        crec_offset_value(&bt.v, &vals[i]);
        int rc = batch_add(&bt, false);
        if (rc)
            p->error = coord_append_error(rc);
    }
    int64_t last = -1;
    int32_t epoch = -1;
    int32_t nrec = bt.n;
    err = batch_append(s, &bt, &last, &epoch);
    for (int32_t i = 0; i < n; i++) {
        struct coord_commit *p = &parts[i];
        if (p->error)
            continue;
        if (err) {
            p->error = err;
        } else {
            vals[i].record_offset = last - nrec + 1 + rec[i];
            cg_offset_put(g, p->topic, p->partition, &vals[i]);
        }
    }
    free(vals);
    free(rec);
    after_op(s, g);
    ack_set(ack, s, last, epoch);
    release(s);
    return 0;
}

static int cmp_fetched(const void *a, const void *b)
{
    const struct coord_fetched *x = a, *y = b;
    int32_t n = x->topic.len < y->topic.len ? x->topic.len : y->topic.len;
    int c = memcmp(x->topic.p, y->topic.p, (size_t)n);
    if (c)
        return c;
    if (x->topic.len != y->topic.len)
        return x->topic.len < y->topic.len ? -1 : 1;
    return x->partition < y->partition ? -1 : x->partition > y->partition;
}

static void fill_fetched(struct arena *a, struct coord_fetched *f, const struct cg_offset *o)
{
    if (!o) {
        f->offset = -1;
        f->leader_epoch = -1;
        f->metadata = KSTR_LIT("");
        return;
    }
    f->offset = o->offset;
    f->leader_epoch = o->leader_epoch;
    f->metadata = (kstr_t){arena_strndup(a, o->metadata, (size_t)o->metadata_len), o->metadata_len};
}

int16_t coord_fetch_offsets(struct coord *c, kstr_t group, struct coord_fetched *parts, int32_t n, bool all,
                            bool require_stable, struct arena *a, struct coord_fetched **out, int32_t *nout)
{
    if (out) {
        *out = NULL;
        *nout = 0;
    }
    struct coord_shard *s;
    int16_t err = acquire(c, group, &s);
    if (err)
        return err;
    struct cgroup *g = group_get(s, group, false);
    if (g && g->state == CG_DEAD)
        g = NULL; /* Kafka: GroupIdNotFound, every partition without offset */
    for (int32_t i = 0; i < n; i++) {
        parts[i].error = 0;
        if (require_stable && g && cg_txn_pending(g, parts[i].topic, parts[i].partition)) {
            fill_fetched(a, &parts[i], NULL);
            parts[i].error = KERR_UNSTABLE_OFFSET_COMMIT;
            continue;
        }
        fill_fetched(a, &parts[i], g ? cg_offset_get(g, parts[i].topic, parts[i].partition) : NULL);
    }
    if (all && g) {
        size_t cnt = cg_offset_count(g);
        struct coord_fetched *v = arena_alloc(a, (cnt + 1) * sizeof *v);
        size_t it = 0, k = 0;
        kstr_t topic;
        int32_t part;
        const struct cg_offset *o;
        while (cg_offset_next(g, &it, &topic, &part, &o) && k < cnt) {
            v[k].topic = (kstr_t){arena_strndup(a, topic.p, (size_t)topic.len), topic.len};
            v[k].partition = part;
            v[k].error = 0;
            if (require_stable && cg_txn_pending(g, topic, part)) {
                v[k].error = KERR_UNSTABLE_OFFSET_COMMIT;
                o = NULL;
            }
            fill_fetched(a, &v[k], o);
            k++;
        }
        qsort(v, k, sizeof *v, cmp_fetched);
        *out = v;
        *nout = (int32_t)k;
    }
    release(s);
    return 0;
}

int16_t coord_delete_offsets(struct coord *c, kstr_t group, int32_t n, const kstr_t *topics,
                             const int32_t *partitions, int16_t *errs, struct coord_ack *ack)
{
    coord_ack_init(ack);
    struct coord_shard *s;
    int16_t err = acquire(c, group, &s);
    if (err)
        return err;
    struct cgroup *g = group_get(s, group, false);
    if (!g || g->state == CG_DEAD) {
        release(s);
        return KERR_GROUP_ID_NOT_FOUND;
    }
    /* ClassicGroup.validateOffsetDelete */
    if (g->state != CG_EMPTY && !(g->protocol_type && strcmp(g->protocol_type, "consumer") == 0)) {
        release(s);
        return KERR_NON_EMPTY_GROUP;
    }
    struct batch bt;
    batch_begin(&bt);
    bool *del = xcalloc((size_t)(n > 0 ? n : 1), sizeof *del);
    for (int32_t i = 0; i < n; i++) {
        if (errs[i])
            continue;
        if (cg_subscribed_to(g, topics[i]) || (g->cc && ccg_subscribed_to(g->cc, topics[i]))) {
            errs[i] = KERR_GROUP_SUBSCRIBED_TO_TOPIC;
            continue;
        }
        /* a tombstone when committed or pending in a transaction */
        if (cg_offset_get(g, topics[i], partitions[i]) || cg_txn_pending(g, topics[i], partitions[i])) {
            crec_offset_key(&bt.k, group, topics[i], partitions[i]);
            if (batch_add(&bt, true) == 0)
                del[i] = true;
        }
    }
    int64_t last = -1;
    int32_t epoch = -1;
    err = batch_append(s, &bt, &last, &epoch);
    if (!err) {
        for (int32_t i = 0; i < n; i++)
            if (del[i]) {
                cg_offset_del(g, topics[i], partitions[i]);
                cg_txn_del(g, topics[i], partitions[i]);
            }
    }
    free(del);
    after_op(s, g);
    ack_set(ack, s, last, epoch);
    release(s);
    return err;
}

int16_t coord_delete_group(struct coord *c, kstr_t group, struct coord_ack *ack)
{
    coord_ack_init(ack);
    struct coord_shard *s;
    int16_t err = acquire(c, group, &s);
    if (err)
        return err;
    struct cgroup *g = group_get(s, group, false);
    if (!g || g->state == CG_DEAD) {
        release(s);
        return KERR_GROUP_ID_NOT_FOUND;
    }
    if (g->state != CG_EMPTY || (g->cc && g->cc->nmembers > 0)) {
        release(s);
        return KERR_NON_EMPTY_GROUP;
    }
    /* the answer waits for the later of the two appends (the first one
     * alone when the second has nothing to write) */
    int64_t last = -1;
    int32_t epoch = -1;
    if (g->cc && g->cc->has_records) {
        struct ccg_env ce;
        struct ccg_ctx cx;
        ccg_env_init(s, &ce, &cx);
        ccg_emit_tombstones(&ce, g);
        int16_t terr = ccg_env_finish(&cx, &last, &epoch);
        if (terr) {
            release(s);
            return terr;
        }
        g->cc->has_records = false;
    }
    struct batch bt;
    batch_begin(&bt);
    size_t it = 0;
    kstr_t topic;
    int32_t part;
    const struct cg_offset *o;
    while (cg_offset_next(g, &it, &topic, &part, &o)) {
        crec_offset_key(&bt.k, group, topic, part);
        batch_add(&bt, true);
    }
    /* Kafka's deleteAllOffsets: the pending offsets of open transactions
     * get tombstones too, unless committed ones had theirs above */
    size_t t1 = 0, t2 = 0;
    while (cg_txn_next(g, &t1, &t2, &topic, &part)) {
        if (cg_offset_get(g, topic, part))
            continue;
        crec_offset_key(&bt.k, group, topic, part);
        batch_add(&bt, true);
    }
    if (!g->cc || g->has_record) {
        crec_group_key(&bt.k, group);
        batch_add(&bt, true);
    }
    err = batch_append(s, &bt, &last, &epoch);
    if (!err) {
        slog_info("group coordinator: group %.*s deleted", (int)group.len, group.p);
        drop_group(s, g, KERR_GROUP_ID_NOT_FOUND);
    }
    ack_set(ack, s, last, epoch);
    release(s);
    return err;
}

static kstr_t ak(struct arena *a, const char *s)
{
    return s ? kstr_arena(a, s) : KSTR_NULL;
}

int16_t coord_describe_group(struct coord *c, kstr_t group, struct arena *a, struct coord_group_desc *out)
{
    memset(out, 0, sizeof *out);
    struct coord_shard *s;
    int16_t err = acquire(c, group, &s);
    if (err)
        return err;
    struct cgroup *g = group_get(s, group, false);
    if (!g) {
        out->state = KSTR_LIT("Dead");
        out->protocol_type = KSTR_LIT("");
        out->protocol_data = KSTR_LIT("");
        release(s);
        return 0;
    }
    if (g->cc) {
        /* Kafka answers DescribeGroups v0-5 for a group that is not a
         * classic one as for an unknown group: Dead, no error (v6+ adds
         * GROUP_ID_NOT_FOUND "Group ... is not a classic group.") */
        out->state = KSTR_LIT("Dead");
        out->protocol_type = KSTR_LIT("");
        out->protocol_data = KSTR_LIT("");
        release(s);
        return 0;
    }
    out->state = KSTR(cg_state_name(g->state));
    out->protocol_type = g->protocol_type ? ak(a, g->protocol_type) : KSTR_LIT("");
    bool stable = g->state == CG_STABLE;
    out->protocol_data = stable && g->protocol_name ? ak(a, g->protocol_name) : KSTR_LIT("");
    out->members = arena_alloc(a, (size_t)(g->nmembers > 0 ? g->nmembers : 1) * sizeof *out->members);
    out->nmembers = g->nmembers;
    for (int32_t i = 0; i < g->nmembers; i++) {
        const struct cg_member *m = g->members[i];
        struct coord_member_desc *d = &out->members[i];
        d->member_id = ak(a, m->member_id);
        d->instance_id = ak(a, m->instance_id);
        d->client_id = ak(a, m->client_id);
        d->client_host = ak(a, m->client_host);
        d->metadata = (kbytes_t){NULL, 0};
        d->assignment = (kbytes_t){NULL, 0};
        if (!stable)
            continue; /* Kafka: describeNoMetadata outside Stable */
        for (int32_t k = 0; k < m->nprotocols; k++) {
            if (g->protocol_name && strcmp(m->protocols[k].name, g->protocol_name) == 0 &&
                m->protocols[k].meta_len > 0) {
                uint8_t *p = arena_alloc(a, (size_t)m->protocols[k].meta_len);
                memcpy(p, m->protocols[k].meta, (size_t)m->protocols[k].meta_len);
                d->metadata = (kbytes_t){p, m->protocols[k].meta_len};
            }
        }
        if (m->assignment_len > 0) {
            uint8_t *p = arena_alloc(a, (size_t)m->assignment_len);
            memcpy(p, m->assignment, (size_t)m->assignment_len);
            d->assignment = (kbytes_t){p, m->assignment_len};
        }
    }
    release(s);
    return 0;
}

int16_t coord_list_groups(struct coord *c, struct arena *a, struct coord_listed **out, int32_t *n)
{
    *out = NULL;
    *n = 0;
    struct mimage *img = controller_image(c->env.controller);
    const struct mi_topic *t = mimage_topic(img, KSTR_LIT(COORD_OFFSETS_TOPIC));
    int16_t err = 0;
    int32_t cap = 0;
    for (int32_t i = 0; t && i < t->npartitions && !err; i++) {
        const struct mi_partition *mp = mi_topic_partition(t, i);
        if (!mp || mp->leader != c->env.node_id)
            continue;
        struct coord_shard *s = shard_at(c, i, true);
        pthread_mutex_lock(&s->lock);
        if (s->state != CSHARD_ACTIVE || s->epoch != mp->leader_epoch) {
            err = KERR_COORDINATOR_LOAD_IN_PROGRESS;
            pthread_mutex_unlock(&s->lock);
            kick(c);
            break;
        }
        size_t it = 0;
        const void *k;
        size_t kl;
        void *v;
        while (hmap_next(&s->groups, &it, &k, &kl, &v)) {
            const struct cgroup *g = v;
            if (*n == cap) {
                int32_t ncap = cap ? 2 * cap : 16;
                struct coord_listed *nv = arena_alloc(a, (size_t)ncap * sizeof *nv);
                if (*n)
                    memcpy(nv, *out, (size_t)*n * sizeof *nv);
                *out = nv;
                cap = ncap;
            }
            struct coord_listed *l = &(*out)[(*n)++];
            l->group_id = (kstr_t){arena_strndup(a, g->id, (size_t)g->id_len), g->id_len};
            if (g->cc) {
                l->protocol_type = KSTR_LIT("consumer");
                l->state = KSTR(ccg_state_name(ccg_state(g->cc)));
                l->type = KSTR_LIT("consumer");
                continue;
            }
            l->protocol_type = g->protocol_type ? ak(a, g->protocol_type) : KSTR_LIT("");
            l->state = KSTR(cg_state_name(g->state));
            l->type = KSTR_LIT("classic");
        }
        pthread_mutex_unlock(&s->lock);
    }
    mimage_release(img);
    return err;
}

/* ------------------------------------------------------------------ */
/* KIP-848 consumer groups                                             */

int16_t coord_consumer_heartbeat(struct coord *c, kstr_t group, const struct ccg_hb_req *rq, struct arena *a,
                                 struct ccg_hb_resp *out, struct coord_ack *ack)
{
    coord_ack_init(ack);
    memset(out, 0, sizeof *out);
    out->member_id = rq->member_id;
    out->epoch = rq->epoch;
    struct coord_shard *s;
    int16_t err = acquire(c, group, &s);
    if (err)
        return err;
    struct ccg_env ce;
    struct ccg_ctx cx;
    ccg_env_init(s, &ce, &cx);
    const char *msg = NULL;
    int16_t verr = ccg_validate(rq, &ce, &msg);
    struct cgroup *g = NULL;
    if (verr) {
        out->error = verr;
        out->message = msg;
    } else {
        g = group_get(s, group, false);
        if (g && !g->cc) {
            if (rq->epoch == CCG_JOIN_EPOCH && g->nmembers == 0 && g->npending == 0 && g->state == CG_EMPTY) {
                /* an empty classic group becomes a consumer group */
                if (g->has_record) {
                    crec_group_key(&cx.bt->k, group);
                    batch_add(cx.bt, true);
                    g->has_record = false;
                }
                free(g->protocol_type);
                g->protocol_type = NULL;
                g->cc = ccg_new();
            } else {
                out->error = KERR_GROUP_ID_NOT_FOUND;
                out->message = "The group is not a consumer group.";
                g = NULL;
            }
        } else if (!g) {
            if (rq->epoch == CCG_JOIN_EPOCH) {
                g = group_get(s, group, true);
                g->cc = ccg_new();
            } else {
                out->error = KERR_GROUP_ID_NOT_FOUND;
                out->message = "The consumer group does not exist.";
            }
        }
        if (g) {
            ccg_heartbeat(&ce, g, rq, a, out);
            if (out->message)
                out->message = arena_strndup(a, out->message, strlen(out->message));
        }
    }
    int64_t last = -1;
    int32_t epoch = -1;
    err = ccg_env_finish(&cx, &last, &epoch);
    if (err && !out->error)
        out->error = err;
    if (g)
        after_op(s, g);
    ack_set(ack, s, last, epoch);
    release(s);
    return 0;
}

static struct ctp *ctp_copy(struct arena *a, const struct ctp_set *set)
{
    struct ctp *v = arena_alloc(a, (size_t)(set->n + 1) * sizeof *v);
    if (set->n)
        memcpy(v, set->v, (size_t)set->n * sizeof *v);
    return v;
}

int16_t coord_consumer_describe(struct coord *c, kstr_t group, struct arena *a, struct coord_ccg_desc *out)
{
    memset(out, 0, sizeof *out);
    struct coord_shard *s;
    int16_t err = acquire(c, group, &s);
    if (err)
        return err;
    struct cgroup *g = group_get(s, group, false);
    if (!g || !g->cc) {
        out->error = KERR_GROUP_ID_NOT_FOUND;
        out->message = g ? "Group is not a consumer group." : "Group does not exist.";
        release(s);
        return 0;
    }
    const struct ccgroup *cc = g->cc;
    out->state = KSTR(ccg_state_name(ccg_state(cc)));
    out->epoch = cc->epoch;
    out->assign_epoch = cc->assign_epoch;
    out->assignor = cc->last_assignor ? ak(a, cc->last_assignor)
                                      : (c->s.nassignors ? ak(a, c->s.assignors[0]) : KSTR_LIT(""));
    out->nmembers = cc->nmembers;
    out->members = arena_alloc(a, (size_t)(cc->nmembers + 1) * sizeof *out->members);
    for (int32_t i = 0; i < cc->nmembers; i++) {
        const struct ccg_member *m = cc->members[i];
        struct coord_ccg_member_desc *d = &out->members[i];
        d->member_id = ak(a, m->id);
        d->instance_id = ak(a, m->instance_id);
        d->rack_id = ak(a, m->rack_id);
        d->client_id = ak(a, m->client_id ? m->client_id : "");
        d->client_host = ak(a, m->client_host ? m->client_host : "");
        d->regex = ak(a, m->regex);
        d->epoch = m->epoch;
        d->ntopics = m->ntopics;
        d->topics = arena_alloc(a, (size_t)(m->ntopics + 1) * sizeof *d->topics);
        for (int32_t k = 0; k < m->ntopics; k++)
            d->topics[k] = ak(a, m->topics[k]);
        d->assigned = ctp_copy(a, &m->assigned);
        d->nassigned = m->assigned.n;
        d->target = ctp_copy(a, &m->target);
        d->ntarget = m->target.n;
    }
    release(s);
    return 0;
}

int16_t coord_validate_fetch(struct coord *c, kstr_t group, kstr_t member_id, int32_t member_epoch)
{
    struct coord_shard *s;
    int16_t err = acquire(c, group, &s);
    if (err)
        return err;
    struct cgroup *g = group_get(s, group, false);
    err = g && g->cc ? ccg_validate_fetch(g->cc, member_id, member_epoch) : 0;
    release(s);
    return err;
}

/* ------------------------------------------------------------------ */
/* transactions                                                        */

int16_t coord_txn_commit(struct coord *c, kstr_t group, kstr_t member_id, kstr_t instance_id, int32_t generation,
                         int64_t producer_id, int16_t producer_epoch, uint64_t guard, struct coord_commit *parts,
                         int32_t n, struct coord_ack *ack)
{
    coord_ack_init(ack);
    struct coord_shard *s;
    int16_t err = acquire(c, group, &s);
    if (err)
        return err;
    struct cgroup *g = group_get(s, group, false);
    if (!g) {
        if (generation >= 0) {
            release(s);
            return KERR_ILLEGAL_GENERATION;
        }
        g = group_get(s, group, true); /* a simple group */
    }
    if (g->cc) {
        /* a member of a consumer group commits with its member epoch;
         * a stale one is ILLEGAL_GENERATION here (Kafka maps it) */
        err = ccg_validate_commit(g->cc, member_id, generation, 9);
        if (err == KERR_STALE_MEMBER_EPOCH)
            err = KERR_ILLEGAL_GENERATION;
    } else {
        err = cg_validate_txn_commit(g, member_id, instance_id, generation);
    }
    if (err) {
        after_op(s, g);
        release(s);
        return err;
    }
    int64_t now = clock_wall_ms();
    struct rb_batch_opts opts = RB_BATCH_OPTS_INIT;
    opts.producer_id = producer_id;
    opts.producer_epoch = producer_epoch;
    opts.base_sequence = 0;
    opts.transactional = true;
    struct batch bt;
    batch_begin_opts(&bt, &opts);
    bt.guard = guard;
    struct cg_offset *vals = xcalloc((size_t)(n > 0 ? n : 1), sizeof *vals);
    int32_t *rec = xcalloc((size_t)(n > 0 ? n : 1), sizeof *rec);
    for (int32_t i = 0; i < n; i++) {
        struct coord_commit *p = &parts[i];
        if (p->error)
            continue;
        if (p->metadata.len > c->s.metadata_max_bytes) {
            p->error = KERR_OFFSET_METADATA_TOO_LARGE;
            continue;
        }
        rec[i] = bt.n;
        vals[i] = (struct cg_offset){
            .offset = p->offset,
            .leader_epoch = p->leader_epoch,
            .metadata = (char *)(p->metadata.len > 0 ? p->metadata.p : ""),
            .metadata_len = p->metadata.len > 0 ? p->metadata.len : 0,
            .commit_ts = now,
            .expire_ts = -1,
        };
        crec_offset_key(&bt.k, group, p->topic, p->partition);
        crec_offset_value(&bt.v, &vals[i]);
        int rc = batch_add(&bt, false);
        if (rc)
            p->error = coord_append_error(rc);
    }
    int64_t last = -1;
    int32_t epoch = -1;
    int32_t nrec = bt.n;
    err = batch_append(s, &bt, &last, &epoch);
    if (err == KERR_INVALID_PRODUCER_EPOCH || err == KERR_PRODUCER_FENCED || err == KERR_INVALID_TXN_STATE ||
        err == KERR_INVALID_PRODUCER_ID_MAPPING) {
        /* the producer's, for the whole request */
        free(vals);
        free(rec);
        after_op(s, g);
        release(s);
        return err;
    }
    for (int32_t i = 0; i < n; i++) {
        struct coord_commit *p = &parts[i];
        if (p->error)
            continue;
        if (err) {
            p->error = err;
            continue;
        }
        vals[i].record_offset = last - nrec + 1 + rec[i];
        cg_txn_put(g, producer_id, p->topic, p->partition, &vals[i]);
        txn_index_add(&s->txns, producer_id, g);
    }
    free(vals);
    free(rec);
    after_op(s, g);
    ack_set(ack, s, last, epoch);
    release(s);
    return 0;
}

int16_t coord_write_txn_marker(struct coord *c, struct partition *p, int64_t producer_id, int16_t producer_epoch,
                               int32_t coordinator_epoch, bool commit, int64_t *offset, int32_t *epoch)
{
    *offset = -1;
    *epoch = -1;
    struct coord_shard *s = shard_at(c, p->index, true);
    pthread_mutex_lock(&s->lock);
    int32_t ep = atomic_load(&p->leader_epoch);
    if (s->state != CSHARD_ACTIVE || s->p != p || s->epoch != ep) {
        bool idle = s->state != CSHARD_LOADING;
        pthread_mutex_unlock(&s->lock);
        if (idle)
            kick(c);
        return idle ? KERR_NOT_COORDINATOR : KERR_COORDINATOR_LOAD_IN_PROGRESS;
    }
    struct buf b;
    buf_init(&b);
    int err = rb_build_txn_marker(&b, 0, clock_wall_ms(), producer_id, producer_epoch, RB_NO_PARTITION_LEADER_EPOCH,
                                  commit ? RB_CONTROL_COMMIT : RB_CONTROL_ABORT, coordinator_epoch, NULL);
    struct plog_append_result res;
    if (!err)
        err = partition_append(p, b.data, b.len, false, &res);
    buf_free(&b);
    if (err) {
        pthread_mutex_unlock(&s->lock);
        return (int16_t)err;
    }
    *offset = res.last_offset;
    *epoch = ep;
    /* replayed at once, in log order with the shard's other appends
     * (this lock); the transaction coordinator hears of it once the ISR
     * has the marker */
    struct txn_groups *t = txn_index_end(&s->groups, &s->txns, producer_id, commit);
    for (int32_t i = 0; t && i < t->n; i++) {
        struct cgroup *g = hmap_get(&s->groups, t->v[i].id, (size_t)t->v[i].len);
        if (g)
            after_op(s, g); /* an aborted simple group may be left with nothing */
    }
    if (t)
        slog_debug("group coordinator: %s-%d: transaction of producer %lld %s at offset %lld (%d group(s))",
                   COORD_OFFSETS_TOPIC, s->index, (long long)producer_id, commit ? "committed" : "aborted",
                   (long long)res.last_offset, t->n);
    txn_groups_free(t);
    pthread_mutex_unlock(&s->lock);
    return 0;
}

bool coord_txn_verify_begin(struct coord *c, kstr_t group, int64_t producer_id, int16_t producer_epoch,
                            uint64_t *guard, int32_t *partition)
{
    *guard = PLOG_GUARD_UNCHECKED;
    *partition = -1;
    struct coord_shard *s;
    if (acquire(c, group, &s))
        return false;
    bool ok = plog_verify_begin(s->p->log, producer_id, producer_epoch, guard) == 0;
    *partition = s->index;
    release(s);
    if (!ok)
        *guard = PLOG_GUARD_UNCHECKED;
    return ok;
}
