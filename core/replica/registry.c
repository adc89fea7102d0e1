/* The partition registry: which partitions this node hosts, keyed by
 * (topic id, partition), each with its open log. preg_sync makes it match
 * a metadata image; handlers find partitions with preg_get and hold a
 * reference while they use one.
 *
 * Logs are opened through the log manager (log/logmgr.h). At the first
 * sync (start-up) the partitions found on disk are opened on its recovery
 * pool, in parallel: each is in the map from the start but preg_get
 * ignores it until its log is open, and handlers answer
 * NOT_LEADER_OR_FOLLOWER for it meanwhile (what Kafka answers for a
 * partition the metadata has but the replica manager has not made leader
 * yet; clients retry). A partition whose log cannot be opened, or whose
 * log dir is offline, stays in the map offline: KAFKA_STORAGE_ERROR
 * (preg_unavailable_error), and the rest of the node carries on.
 *
 * Locking: the map is sharded (PREG_SHARDS, by key) so that a Produce or
 * Fetch looking up its partitions takes one of several read locks: each
 * shard's rwlock guards its map only and is held for a lookup or an
 * insert, never during file I/O, and never two at once. preg_sync (the
 * only writer, under sync_lock) scans for removed partitions under the
 * read locks and write-locks a shard only to delete from it. sync_lock serialises
 * preg_sync (opening and removing logs). del_lock guards the set of
 * removed partitions whose log is still referenced, so a topic deleted and
 * created again waits for the old directory to be renamed away. */
#include "replica/partition.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "config.h"
#include "controller/image.h"
#include "log/fsutil.h"
#include "log/logmgr.h"
#include "log/partition_metadata.h"
#include "log/plog.h"
#include "replica/env.h"
#include "net/park.h"
#include "plugin/codec.h"
#include "proto/kerr.h"
#include "topic_config.h"
#include "util/buf.h"
#include "util/chgen.h"
#include "util/slog.h"
#include "util/uuid.h"

#define METADATA_DIR_PREFIX "__cluster_metadata"
/* How long a re-created partition waits for the log of its deleted
 * predecessor (held by an in-flight request) to be released. */
#define DELETE_WAIT_SECONDS 10
/* Threads that create an image's new logs together (create_logs) and
 * read the partition.metadata files at start-up (scan_dirs): the work
 * is file system calls, so they overlap their waits even on few cores. */
#define CREATE_THREADS 8
#define CREATE_PER_THREAD 16 /* fewer logs than this per thread: fewer threads */

/* Every struct partition is the head of one of these, so partition_put
 * finds the registry's bookkeeping from the handler's pointer. */
struct preg_part {
    struct partition p;
    struct partition_registry *reg;
    uint32_t dir;    /* index of its log dir */
    bool close_clean;
    bool replicated; /* counted in the registry's nreplicated (sync_lock) */
    /* false while the log is being opened on the recovery pool (p.log is
     * NULL until then); set with release order after p.log. */
    atomic_bool ready;
    atomic_bool offline; /* the log could not be opened: storage error */
    /* After the struct, in its allocation (no pointer to it: 8 bytes a
     * partition): the partition directory's path, then p.topic. */
};

static char *part_path(struct preg_part *pp) { return (char *)(pp + 1); }

#define PREG_SHARDS 16

struct partition_registry {
    struct replica_env env;    /* a copy of preg_create's */
    struct logmgr *logs;       /* env.logs, else own_logs */
    struct preg_shard {
        pthread_rwlock_t lock;
        struct hmap map;       /* 20-byte key (make_key, borrowed from p) -> struct preg_part* */
    } shards[PREG_SHARDS];
    pthread_mutex_t sync_lock;
    bool scanned;
    struct hmap found;         /* "<topic>-<n>" -> (log dir index + 1) * 2 + id on disk, from the scan */
    size_t ndirs;
    char **dirs;
    int64_t *counts;           /* partitions hosted per log dir (sync_lock) */
    pthread_mutex_t del_lock;
    pthread_cond_t del_cond;
    struct hmap deleting;      /* path -> non-NULL while the removed log is referenced */
    struct codec_ctx codec;    /* the logs' codecs (plugins) */
    /* A broker built without a log manager (unit tests) gets a private
     * one, without background threads; its logs open inline. */
    struct logmgr *own_logs;
    bool async_open;
    atomic_size_t nreplicated; /* preg_replicated */
    /* The last image preg_sync applied without an error (a reference),
     * or NULL: a topic it shares with the next image (the image is copy
     * on write, an unchanged topic is the same pointer) has nothing new
     * for its partitions. Under sync_lock. */
    struct mimage *synced;
    /* Bumped (under gen_lock, written) whenever partitions leave the map,
     * before the map's references are put: a pointer preg_get returned
     * while removals was G is still in the map, hence alive, as long as
     * removals is G (preg_get_cached). */
    pthread_rwlock_t gen_lock;
    uint64_t removals;
};

static struct preg_shard *shard_of(struct partition_registry *r, const uint8_t key[20])
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < 20; i++)
        h = (h ^ key[i]) * 16777619u;
    return &r->shards[h % PREG_SHARDS];
}

/* Under sync_lock (preg_sync): keeps nreplicated in step with the
 * partition's state in the image. */
static void count_replicated(struct partition_registry *r, struct preg_part *pp, const struct mi_partition *mp)
{
    bool want = mp && (mp->leader != r->env.node_id || mp->nreplicas > 1 || mp->nisr > 1);
    if (pp->replicated == want)
        return;
    pp->replicated = want;
    if (want)
        atomic_fetch_add(&r->nreplicated, 1);
    else
        atomic_fetch_sub(&r->nreplicated, 1);
}

size_t preg_replicated(struct partition_registry *r) { return atomic_load(&r->nreplicated); }

_Static_assert(sizeof(kuuid_t) == 16 && offsetof(struct partition, index) == 16,
               "the registry's map key is struct partition's first 20 bytes");

static void make_key(uint8_t key[20], const kuuid_t *id, int32_t index)
{
    /* The bytes of struct partition's topic_id and index (in memory only:
     * the map borrows them from the partition). */
    memcpy(key, id->b, 16);
    memcpy(key + 16, &index, 4);
}

static int failf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int failf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

struct partition_registry *preg_create(const struct replica_env *env)
{
    struct partition_registry *r = xcalloc(1, sizeof *r);
    r->env = *env;
    for (int i = 0; i < PREG_SHARDS; i++) {
        pthread_rwlock_init(&r->shards[i].lock, NULL);
        hmap_init(&r->shards[i].map);
    }
    pthread_mutex_init(&r->sync_lock, NULL);
    pthread_rwlock_init(&r->gen_lock, NULL);
    pthread_mutex_init(&r->del_lock, NULL);
    pthread_cond_init(&r->del_cond, NULL);
    hmap_init(&r->found);
    hmap_init(&r->deleting);
    const struct samsa_config *cfg = env->cfg ? atomic_load(env->cfg) : NULL;
    r->ndirs = cfg ? cfg->n_log_dirs : 0;
    r->dirs = xcalloc(r->ndirs ? r->ndirs : 1, sizeof *r->dirs);
    r->counts = xcalloc(r->ndirs ? r->ndirs : 1, sizeof *r->counts);
    for (size_t i = 0; i < r->ndirs; i++)
        r->dirs[i] = xstrdup(cfg->log_dirs[i]);
    r->async_open = env->logs != NULL;
    r->logs = env->logs ? env->logs : (r->own_logs = logmgr_create(cfg));
    if (env->plugins) {
        /* The cleaner and timestamp lookups decompress through the codec
         * plugins; recompression uses each codec's default level. */
        r->codec = (struct codec_ctx){env->plugins, CODEC_DECOMPRESS_CEILING, SAMSA_CODEC_LEVEL_DEFAULT};
        struct plog_codecs pc = {codec_rb_decompress, codec_rb_compress, &r->codec};
        logmgr_set_codecs(r->logs, &pc);
    }
    return r;
}

/* Releases the partition once nobody uses it: its log is closed, or, for
 * a removed partition, deleted (readers' sfile references stay valid). */
void partition_put(struct partition *p)
{
    if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
        return;
    struct preg_part *pp = (struct preg_part *)p;
    struct logmgr *lm = p->logmgr;
    if (!p->log) {
        /* Never opened (offline): nothing on disk is touched. */
        if (atomic_load(&p->deleted)) {
            struct partition_registry *r = pp->reg;
            pthread_mutex_lock(&r->del_lock);
            hmap_del(&r->deleting, part_path(pp), strlen(part_path(pp)));
            pthread_cond_broadcast(&r->del_cond);
            pthread_mutex_unlock(&r->del_lock);
        }
    } else if (atomic_load(&p->deleted)) {
        int rc = logmgr_delete(lm, p->log);
        if (rc != 0)
            slog_error("partition %s-%d: removing %s failed: %s", p->topic, (int)p->index, part_path(pp),
                       kerr_name((int16_t)rc));
        else
            slog_info("partition %s-%d: log deleted", p->topic, (int)p->index);
        struct partition_registry *r = pp->reg;
        pthread_mutex_lock(&r->del_lock);
        hmap_del(&r->deleting, part_path(pp), strlen(part_path(pp)));
        pthread_cond_broadcast(&r->del_cond);
        pthread_mutex_unlock(&r->del_lock);
    } else {
        logmgr_close(lm, p->log, pp->close_clean);
    }
    partition_repl_free(p);
    free(pp);
}

struct partition *preg_get(struct partition_registry *r, const kuuid_t *topic_id, int32_t index)
{
    uint8_t key[20];
    make_key(key, topic_id, index);
    struct preg_shard *sh = shard_of(r, key);
    pthread_rwlock_rdlock(&sh->lock);
    struct preg_part *pp = hmap_get(&sh->map, key, sizeof key);
    if (pp && !atomic_load(&pp->p.deleted) && atomic_load_explicit(&pp->ready, memory_order_acquire) &&
        !atomic_load(&pp->offline))
        atomic_fetch_add(&pp->p.refs, 1);
    else
        pp = NULL;
    pthread_rwlock_unlock(&sh->lock);
    return pp ? &pp->p : NULL;
}

uint64_t preg_generation(struct partition_registry *r)
{
    pthread_rwlock_rdlock(&r->gen_lock);
    uint64_t g = r->removals;
    pthread_rwlock_unlock(&r->gen_lock);
    return g;
}

size_t preg_get_cached(struct partition_registry *r, uint64_t gen, struct partition **ps, size_t n)
{
    size_t got = 0;
    pthread_rwlock_rdlock(&r->gen_lock);
    if (r->removals != gen) {
        memset(ps, 0, n * sizeof *ps);
    } else {
        /* Nothing left the map since gen: each ps[i] is alive (the map
         * holds it); the checks are preg_get's. */
        for (size_t i = 0; i < n; i++) {
            struct preg_part *pp = (struct preg_part *)ps[i];
            if (pp && !atomic_load(&pp->p.deleted) && atomic_load_explicit(&pp->ready, memory_order_acquire) &&
                !atomic_load(&pp->offline)) {
                atomic_fetch_add(&pp->p.refs, 1);
                got++;
            } else {
                ps[i] = NULL;
            }
        }
    }
    pthread_rwlock_unlock(&r->gen_lock);
    return got;
}

size_t preg_list(struct partition_registry *r, struct partition ***out)
{
    size_t n = 0, k = 0;
    struct partition **a = NULL;
    for (int i = 0; i < PREG_SHARDS; i++) {
        struct preg_shard *sh = &r->shards[i];
        pthread_rwlock_rdlock(&sh->lock);
        size_t m = hmap_count(&sh->map);
        if (k + m > n) {
            n = k + m + (n - k > 64 ? n - k : 64);
            a = xrealloc(a, n * sizeof *a);
        }
        const void *key;
        size_t kl;
        void *v;
        for (size_t it = 0; hmap_next(&sh->map, &it, &key, &kl, &v);) {
            struct preg_part *pp = v;
            if (atomic_load(&pp->p.deleted) || !atomic_load_explicit(&pp->ready, memory_order_acquire) ||
                atomic_load(&pp->offline) || !pp->p.log)
                continue;
            atomic_fetch_add(&pp->p.refs, 1);
            a[k++] = &pp->p;
        }
        pthread_rwlock_unlock(&sh->lock);
    }
    if (k == 0) {
        free(a);
        a = NULL;
    }
    *out = a;
    return k;
}

int16_t preg_unavailable_error(struct partition_registry *r, const kuuid_t *topic_id, int32_t index)
{
    uint8_t key[20];
    make_key(key, topic_id, index);
    struct preg_shard *sh = shard_of(r, key);
    pthread_rwlock_rdlock(&sh->lock);
    struct preg_part *pp = hmap_get(&sh->map, key, sizeof key);
    bool offline = pp && (atomic_load(&pp->offline) ||
                          (!atomic_load(&pp->ready) && logmgr_dir_offline(r->logs, pp->dir)));
    pthread_rwlock_unlock(&sh->lock);
    return offline ? KERR_KAFKA_STORAGE_ERROR : KERR_NOT_LEADER_OR_FOLLOWER;
}

int16_t preg_get_led(struct partition_registry *r, int32_t node_id, const struct mi_topic *t, int32_t index,
                     struct partition **out)
{
    *out = NULL;
    const struct mi_partition *mp = mi_topic_partition(t, index);
    if (!mp)
        return KERR_UNKNOWN_TOPIC_OR_PARTITION;
    if (mp->leader != node_id)
        return KERR_NOT_LEADER_OR_FOLLOWER;
    *out = preg_get(r, &t->id, index);
    return *out ? 0 : preg_unavailable_error(r, &t->id, index);
}

static bool wait_deleted(struct partition_registry *r, const char *path)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += DELETE_WAIT_SECONDS;
    pthread_mutex_lock(&r->del_lock);
    int rc = 0;
    while (hmap_get(&r->deleting, path, strlen(path)) && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&r->del_cond, &r->del_lock, &deadline);
    bool gone = !hmap_get(&r->deleting, path, strlen(path));
    pthread_mutex_unlock(&r->del_lock);
    return gone;
}

/* Runs fn(arg) on this thread and on up to max_threads - 1 more, one
 * more for every per_thread of the n items fn takes from arg in turn
 * (each fn loops until the items run out); returns when all are done. A
 * thread that cannot start only leaves more for the others. */
#define PARALLEL_MAX_THREADS 8
static void run_parallel(void *(*fn)(void *), void *arg, size_t n, size_t per_thread, size_t max_threads)
{
    size_t want = n / per_thread;
    if (max_threads > PARALLEL_MAX_THREADS)
        max_threads = PARALLEL_MAX_THREADS;
    if (want > max_threads - 1)
        want = max_threads - 1;
    pthread_t t[PARALLEL_MAX_THREADS];
    size_t started = 0;
    while (started < want && pthread_create(&t[started], NULL, fn, arg) == 0)
        started++;
    fn(arg); /* this thread too: all done here if none started */
    for (size_t i = 0; i < started; i++)
        pthread_join(t[i], NULL);
}

/* A clean close of a log is a few fsyncs (its index trims, its
 * shutdown marker) and no CPU to speak of: closed one after the other,
 * 100 000 idle partitions took as many fsync round trips as that. Closed
 * by several threads, the fsyncs overlap (ext4 and xfs commit concurrent
 * ones together). Logs are independent: a close takes only its own log's
 * locks and the log manager's and fd cache's leaf locks. */
#define CLOSE_THREADS 8
#define CLOSE_PER_THREAD 64 /* fewer logs than this per thread: fewer threads */

struct close_run {
    struct preg_part **all;
    size_t n;
    atomic_size_t next;
};

static void *close_main(void *arg)
{
    struct close_run *c = arg;
    for (size_t i; (i = atomic_fetch_add(&c->next, 1)) < c->n;)
        partition_put(&c->all[i]->p);
    return NULL;
}

/* Releases the registry's reference of all[0..n) (closing those nobody
 * else holds); all stays the caller's. */
static void close_parallel(struct preg_part **all, size_t n)
{
    struct close_run c = {.all = all, .n = n};
    atomic_init(&c.next, 0);
    run_parallel(close_main, &c, n, CLOSE_PER_THREAD, CLOSE_THREADS);
}

void preg_destroy(struct partition_registry *r, bool clean)
{
    if (!r)
        return;
    size_t n = 0, k = 0;
    for (int i = 0; i < PREG_SHARDS; i++)
        n += hmap_count(&r->shards[i].map); /* no writer is left: preg_sync is done */
    struct preg_part **all = xcalloc(n ? n : 1, sizeof *all);
    for (int i = 0; i < PREG_SHARDS; i++) {
        struct preg_shard *sh = &r->shards[i];
        pthread_rwlock_wrlock(&sh->lock);
        const void *key;
        size_t kl;
        void *v;
        for (size_t it = 0; hmap_next(&sh->map, &it, &key, &kl, &v);)
            all[k++] = v;
        hmap_free(&sh->map);
        pthread_rwlock_unlock(&sh->lock);
    }
    for (size_t i = 0; i < k; i++)
        all[i]->close_clean = clean;
    close_parallel(all, k);
    free(all);
    /* Removed partitions still referenced report back to the registry
     * when released; the network is down by now, so this is short. */
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += DELETE_WAIT_SECONDS;
    pthread_mutex_lock(&r->del_lock);
    int rc = 0;
    while (hmap_count(&r->deleting) > 0 && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&r->del_cond, &r->del_lock, &deadline);
    if (hmap_count(&r->deleting) > 0)
        slog_error("partition registry: %zu deleted partition(s) still in use at shutdown",
                   hmap_count(&r->deleting));
    pthread_mutex_unlock(&r->del_lock);
    hmap_free(&r->deleting);
    hmap_free(&r->found);
    mimage_release(r->synced);
    for (size_t i = 0; i < r->ndirs; i++)
        free(r->dirs[i]);
    free(r->dirs);
    free(r->counts);
    if (r->own_logs) {
        logmgr_destroy(r->own_logs);
        r->logs = NULL;
    }
    for (int i = 0; i < PREG_SHARDS; i++)
        pthread_rwlock_destroy(&r->shards[i].lock);
    pthread_mutex_destroy(&r->sync_lock);
    pthread_rwlock_destroy(&r->gen_lock);
    pthread_mutex_destroy(&r->del_lock);
    pthread_cond_destroy(&r->del_cond);
    free(r);
}

static bool hosted_here(const struct mi_partition *part, int32_t node)
{
    for (int32_t i = 0; i < part->nreplicas; i++)
        if (part->replicas[i] == node)
            return true;
    return false;
}

/* "<topic>-<n>": the topic and the partition, or false. */
static bool parse_partition_dir(const char *name, size_t *topic_len, int32_t *index)
{
    const char *dash = strrchr(name, '-');
    if (!dash || dash == name || !dash[1])
        return false;
    int64_t v = 0;
    for (const char *q = dash + 1; *q; q++) {
        if (*q < '0' || *q > '9' || v > INT32_MAX / 10)
            return false;
        v = v * 10 + (*q - '0');
    }
    if (v > INT32_MAX)
        return false;
    *topic_len = (size_t)(dash - name);
    *index = (int32_t)v;
    return true;
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Kafka's stray handling (3.7+): a directory of a topic incarnation the
 * metadata no longer has is renamed "<topic>-<n>.<id>-stray" and kept
 * for the operator, freeing the name for a new topic. */
static void mark_stray(const char *dir, const char *name)
{
    uint8_t u[UUID_LEN];
    char hex[33];
    if (uuid_random(u) < 0)
        memset(u, 0, sizeof u);
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", u[i]);
    char from[4096], to[4096];
    snprintf(from, sizeof from, "%s/%s", dir, name);
    snprintf(to, sizeof to, "%s/%s.%s-stray", dir, name, hex);
    if (rename(from, to) != 0) {
        slog_error("log dir %s: cannot rename stray partition %s: %s", dir, name, strerror(errno));
        return;
    }
    fs_sync_dir(dir);
    slog_warn("log dir %s: %s belongs to a deleted topic; renamed to %s", dir, name, to);
}

/* A partition directory the start-up scan found, its partition.metadata
 * read on the scan's threads. */
struct scan_entry {
    char *name; /* malloc'ed */
    size_t dir;
    size_t tlen;
    int32_t index;
    const struct mi_topic *t;
    int rc; /* partition_metadata_read's */
    bool has_id;
    kuuid_t id;
};

struct scan_run {
    struct partition_registry *r;
    struct scan_entry *e;
    size_t n;
    atomic_size_t next;
};

static void *scan_main(void *arg)
{
    struct scan_run *c = arg;
    for (size_t i; (i = atomic_fetch_add(&c->next, 1)) < c->n;) {
        struct scan_entry *e = &c->e[i];
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", c->r->dirs[e->dir], e->name);
        e->rc = partition_metadata_read(path, &e->has_id, &e->id);
    }
    return NULL;
}

/* First sync: learns where existing partitions live, finishes deletions
 * interrupted by a crash and sets strays aside. The partition.metadata
 * files (one open and read each: 10 s for 100 000 partitions, serially,
 * before the broker could be unfenced) are read on up to CREATE_THREADS
 * threads; everything else is done here in the listing's order. */
static void scan_dirs(struct partition_registry *r, const struct mimage *img)
{
    int32_t node = r->env.node_id;
    struct scan_entry *es = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < r->ndirs; i++) {
        DIR *d = opendir(r->dirs[i]);
        if (!d) {
            if (errno != ENOENT)
                slog_error("log dir %s: %s", r->dirs[i], strerror(errno));
            continue;
        }
        struct dirent *de;
        while ((de = readdir(d))) {
            const char *name = de->d_name;
            if (name[0] == '.' || strncmp(name, METADATA_DIR_PREFIX, strlen(METADATA_DIR_PREFIX)) == 0 ||
                has_suffix(name, "-stray"))
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", r->dirs[i], name);
            /* readdir's type spares a stat per partition (100 000 at
             * start-up) where the file system reports it; a symlink is
             * followed as before */
            struct stat st;
            bool maybe = de->d_type == DT_UNKNOWN || de->d_type == DT_LNK;
            if (de->d_type != DT_DIR && (!maybe || stat(path, &st) != 0 || !S_ISDIR(st.st_mode)))
                continue;
            if (has_suffix(name, "-delete")) {
                /* plog_delete renames first; a crash left the rest. */
                if (fs_remove_tree(path) == 0)
                    slog_info("log dir %s: removed %s left by an interrupted deletion", r->dirs[i], name);
                continue;
            }
            size_t tlen;
            int32_t index;
            if (!parse_partition_dir(name, &tlen, &index))
                continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 256;
                es = xrealloc(es, cap * sizeof *es);
            }
            es[n] = (struct scan_entry){.name = xstrdup(name), .dir = i, .tlen = tlen, .index = index};
            es[n].t = mimage_topic(img, (kstr_t){name, (int32_t)tlen});
            n++;
        }
        closedir(d);
    }

    struct scan_run c = {.r = r, .e = es, .n = n};
    atomic_init(&c.next, 0);
    run_parallel(scan_main, &c, n, 256, CREATE_THREADS);

    for (size_t k = 0; k < n; k++) {
        struct scan_entry *e = &es[k];
        const char *name = e->name;
        size_t i = e->dir;
        const struct mi_topic *t = e->t;
        if (e->rc != 0) {
            logmgr_note_unopened(r->logs, i);
            goto next; /* unreadable: leave it for plog_open to report */
        }
        if (e->has_id && (!t || !kuuid_eq(&t->id, &e->id))) {
            mark_stray(r->dirs[i], name);
            goto next;
        }
        if (hmap_get(&r->found, name, strlen(name))) {
            slog_error("log dir %s: %s also exists in another log dir; using the first", r->dirs[i], name);
            logmgr_note_unopened(r->logs, i);
            goto next;
        }
        /* (dir index + 1) * 2, plus 1 when partition.metadata holds the
         * topic's id: the open need not read it again */
        hmap_put(&r->found, name, strlen(name), (void *)(uintptr_t)((i + 1) * 2 + (e->has_id ? 1 : 0)));
        const struct mi_partition *part = t ? mi_topic_partition(t, e->index) : NULL;
        if (part && hosted_here(part, node))
            r->counts[i]++;
        else
            logmgr_note_unopened(r->logs, i); /* not opened now: not recovered */
    next:
        free(e->name);
    }
    free(es);
    r->scanned = true;
}

static void part_config(const struct mi_topic *t, struct plog_config *pc)
{
    struct plog_config d = PLOG_CONFIG_INIT;
    *pc = d;
    if (t->cfg)
        logmgr_config_from_topic(t->cfg, pc);
}

/* A log open finished (recovery pool or inline): publish the partition. */
static void log_opened(void *ctx, int rc, struct plog *l)
{
    struct preg_part *pp = ctx;
    struct partition *p = &pp->p;
    if (rc) {
        slog_error("partition %s-%d: cannot open its log in %s: %s; the partition is offline", p->topic,
                   (int)p->index, part_path(pp), kerr_name((int16_t)rc));
        atomic_store(&pp->offline, true);
    } else {
        p->log = l;
        partition_log_ready(p);
    }
    atomic_store(&pp->ready, true);
    /* Once more after publishing: a preg_sync that made this node the
     * leader between the call above and the store saw the partition not
     * ready and left the high watermark to us, but the call above may
     * have computed it as a follower's (0 after a restart). Both sides
     * are sequentially consistent, so one of the two calls sees the
     * leadership. */
    if (!rc)
        partition_log_ready(p);
    partition_put(p); /* the open's reference */
}

/* A new partition whose log preg_sync creates with the others of the
 * same image (create_logs). */
struct pending_log {
    struct preg_part *pp;
    struct preg_shard *sh;
    const struct mi_partition *part; /* in the image being applied */
    struct plog_config pc;
    struct plog *log; /* NULL until opened */
    int rc;           /* a Kafka error code */
};

/* Creates the partition's entry and opens its log on the recovery pool
 * (async) for one found on disk at start-up; any other is left to
 * create_logs, with the others of the image: *pending is then true and
 * pend filled (the entry is counted in its dir but in no map yet). */
static int open_partition(struct partition_registry *r, const struct mi_topic *t,
                          const struct mi_partition *part, bool first_sync, struct pending_log *pend,
                          bool *pending, struct preg_part **out, char *err, size_t errlen)
{
    *pending = false;
    struct logmgr *lm = r->logs;
    if (r->ndirs == 0)
        return failf(err, errlen, "no log.dirs to place %s-%d in", t->name, (int)part->index);
    char base[512];
    snprintf(base, sizeof base, "%s-%d", t->name, (int)part->index);
    size_t dir = 0;
    void *where = hmap_del(&r->found, base, strlen(base));
    if (where && hmap_count(&r->found) == 0)
        hmap_free(&r->found); /* its slots: ~50 B a partition after a restart */
    bool counted = where != NULL;
    bool offline = false;
    bool id_on_disk = false;
    if (where) {
        dir = (size_t)(uintptr_t)where / 2 - 1;
        id_on_disk = ((uintptr_t)where & 1) != 0;
    } else if (first_sync) {
        /* At start-up every hosted partition should be on disk: one that
         * is not is presumed to live in an offline dir (Kafka knows from
         * the directory id in its metadata record). */
        for (size_t i = 0; i < r->ndirs; i++)
            if (logmgr_dir_offline(lm, i)) {
                dir = i;
                offline = true;
                break;
            }
    }
    if (!where && !offline) {
        /* Kafka's LogManager.nextLogDirs: the online dir with the fewest. */
        dir = r->ndirs;
        for (size_t i = 0; i < r->ndirs; i++)
            if (!logmgr_dir_offline(lm, i) && (dir == r->ndirs || r->counts[i] < r->counts[dir]))
                dir = i;
        if (dir == r->ndirs)
            return failf(err, errlen, "every log dir is offline: cannot place %s-%d", t->name, (int)part->index);
    }
    if (logmgr_dir_offline(lm, dir))
        offline = true;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", r->dirs[dir], base);
    if (!wait_deleted(r, path))
        return failf(err, errlen, "%s: the log of a deleted topic of the same name is still in use", path);

    /* The path and the topic name follow the struct in its allocation
     * (two malloc chunks less per partition). */
    size_t pl = strlen(path) + 1, tl = strlen(t->name) + 1;
    struct preg_part *pp = xcalloc(1, sizeof *pp + pl + tl);
    pp->reg = r;
    memcpy(part_path(pp), path, pl);
    pp->dir = (uint32_t)dir;
    atomic_init(&pp->ready, false);
    atomic_init(&pp->offline, offline);
    struct partition *p = &pp->p;
    p->topic_id = t->id;
    p->topic = memcpy(part_path(pp) + pl, t->name, tl);
    p->index = part->index;
    p->log = NULL;
    atomic_init(&p->high_watermark, 0);
    atomic_init(&p->leader_epoch, part->leader_epoch);
    atomic_init(&p->refs, 1); /* the registry's */
    atomic_init(&p->deleted, false);
    atomic_init(&p->ack_after_flush, t->cfg && t->cfg->flush_messages == 1);
    p->logmgr = r->logs;
    p->wake = r->env.wake;
    atomic_init(&p->is_leader, false);
    atomic_init(&p->leader_id, -1);
    atomic_init(&p->min_isr, t->cfg ? t->cfg->min_insync_replicas : 1);
    p->partition_epoch = -1;
    partition_set_state(p, part, r->env.node_id);
    if (offline) {
        slog_error("partition %s-%d: its log dir %s is offline; the partition is offline", t->name,
                   (int)part->index, r->dirs[dir]);
        atomic_store(&pp->ready, true);
    } else {
        struct plog_config pc;
        part_config(t, &pc);
        if (where && first_sync && r->async_open) {
            atomic_fetch_add(&p->refs, 1); /* the open's */
            logmgr_open_async(lm, dir, base, &t->id, id_on_disk, &pc, partition_log_flushed, log_opened, pp);
        } else {
            pend->pp = pp;
            pend->part = part;
            pend->pc = pc;
            pend->log = NULL;
            pend->rc = 0;
            *pending = true;
            if (!counted)
                r->counts[dir]++; /* placement of the next ones sees it */
            *out = pp;
            return 0;
        }
    }
    if (!counted)
        r->counts[dir]++;
    count_replicated(r, pp, part);
    *out = pp;
    return 0;
}

/* Creating a partition's log is a directory, partition.metadata and
 * three empty segment files. One after the other, each made durable on
 * its own (an fsync after every step: four per partition), 1 000
 * partitions took 2-8 s on the test VM, most of it waiting for those
 * syncs or in the file system's inode allocation. So the logs of one
 * image are created on up to CREATE_THREADS threads with no sync
 * (logmgr_open_deferred); each thread then fsyncs the directories of its
 * logs (their entries) while the others go on, and once all are done
 * each log dir that got new partitions is fsynced once (their entries in
 * it). Only then are they published, and only then does the image's
 * proposal complete: an acknowledged creation is durable; a crash
 * before leaves missing or empty files that the next open creates. */

struct create_run {
    struct partition_registry *r;
    struct pending_log *pend;
    size_t n;
    atomic_size_t next;
};

static void *create_main(void *arg)
{
    struct create_run *c = arg;
    struct logmgr *lm = c->r->logs;
    for (size_t i; (i = atomic_fetch_add(&c->next, 1)) < c->n;) {
        struct pending_log *pl = &c->pend[i];
        struct preg_part *pp = pl->pp;
        const char *slash = strrchr(part_path(pp), '/');
        const char *base = slash ? slash + 1 : part_path(pp);
        pl->rc = logmgr_open_deferred(lm, pp->dir, base, &pp->p.topic_id, &pl->pc, partition_log_flushed, &pp->p,
                                      &pl->log);
        if (pl->rc == 0)
            pl->rc = logmgr_sync_created(lm, pp->dir, pl->log);
    }
    return NULL;
}

/* Under sync_lock: opens the logs of pend[0..n) (see above), then
 * publishes each in the map, or, for one that failed, drops its entry
 * and notes the first error in err when note_err. Returns 0 or -1 (some
 * failed). pend stays the caller's. */
static int create_logs(struct partition_registry *r, struct pending_log *pend, size_t n, char *err, size_t errlen,
                       bool note_err)
{
    struct create_run c = {.r = r, .pend = pend, .n = n};
    atomic_init(&c.next, 0);
    run_parallel(create_main, &c, n, CREATE_PER_THREAD, CREATE_THREADS);

    /* The new directories' entries in their log dirs: one fsync each. */
    for (size_t d = 0; d < r->ndirs; d++) {
        bool any = false;
        for (size_t i = 0; i < n && !any; i++)
            any = pend[i].rc == 0 && pend[i].pp->dir == d;
        int e = any ? logmgr_sync_dir(r->logs, d) : 0;
        for (size_t i = 0; e && i < n; i++)
            if (pend[i].rc == 0 && pend[i].pp->dir == d)
                pend[i].rc = e;
    }

    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        struct pending_log *pl = &pend[i];
        struct preg_part *pp = pl->pp;
        struct partition *p = &pp->p;
        if (pl->rc != 0) {
            if (pl->log)
                logmgr_close(r->logs, pl->log, false);
            if (rc == 0 && note_err)
                snprintf(err, errlen, "%s: cannot create the log: %s", part_path(pp), kerr_name((int16_t)pl->rc));
            slog_error("partition registry: %s: cannot create the log: %s", part_path(pp), kerr_name((int16_t)pl->rc));
            rc = -1;
            r->counts[pp->dir]--;
            partition_repl_free(p);
            free(pp);
            continue;
        }
        p->log = pl->log;
        partition_log_ready(p);
        atomic_store_explicit(&pp->ready, true, memory_order_release);
        count_replicated(r, pp, pl->part);
        pthread_rwlock_wrlock(&pl->sh->lock);
        hmap_put_borrowed(&pl->sh->map, &pp->p.topic_id, 20, pp); /* make_key's bytes, in pp */
        pthread_rwlock_unlock(&pl->sh->lock);
    }
    return rc;
}

int preg_sync(struct partition_registry *r, const struct mimage *img, char *err, size_t errlen)
{
    int32_t node = r->env.node_id;
    int rc = 0;
    err[0] = 0;
    pthread_mutex_lock(&r->sync_lock);
    bool first_sync = !r->scanned;
    if (!r->scanned)
        scan_dirs(r, img);
    /* The first sync queues the logs found on disk for the recovery
     * pool: its summary line counts them all. */
    bool held = first_sync && r->async_open;
    if (held)
        logmgr_opens_hold(r->logs);

    /* Images follow each other for reasons that do not touch a topic
     * (broker registrations and heartbeats, features, configs of other
     * resources): with 100 000 partitions the walks below cost 10-20 ms
     * a time, most of an idle node's CPU. Same topics: nothing to do. */
    const struct mimage *prev = r->synced;
    bool same = prev && prev->ntopics == img->ntopics;
    for (int32_t i = 0; same && i < img->ntopics; i++)
        same = img->topics[i] == prev->topics[i];
    if (same) {
        if (held)
            logmgr_opens_release(r->logs);
        pthread_mutex_unlock(&r->sync_lock);
        return 0;
    }

    /* Removed: partitions the image no longer places here. Found under
     * each shard's read lock (this is the only writer: sync_lock), then
     * deleted under its write lock, so a scan of 100 000 partitions does
     * not hold lookups off. */
    size_t n = 0, k = 0;
    struct preg_part **gone = NULL;
    for (int i = 0; i < PREG_SHARDS; i++) {
        struct preg_shard *sh = &r->shards[i];
        size_t k0 = k;
        pthread_rwlock_rdlock(&sh->lock);
        const void *key;
        size_t kl;
        void *v;
        for (size_t it = 0; hmap_next(&sh->map, &it, &key, &kl, &v);) {
            struct preg_part *pp = v;
            const struct mi_topic *t = mimage_topic_by_id(img, &pp->p.topic_id);
            const struct mi_partition *part = t ? mi_topic_partition(t, pp->p.index) : NULL;
            if (part && hosted_here(part, node))
                continue;
            if (k == n) {
                n = n ? 2 * n : 64;
                gone = xrealloc(gone, n * sizeof *gone);
            }
            gone[k++] = pp;
        }
        pthread_rwlock_unlock(&sh->lock);
        if (k == k0)
            continue;
        pthread_rwlock_wrlock(&sh->lock);
        for (size_t j = k0; j < k; j++) {
            uint8_t mk[20];
            make_key(mk, &gone[j]->p.topic_id, gone[j]->p.index);
            hmap_del(&sh->map, mk, sizeof mk);
            atomic_store(&gone[j]->p.deleted, true);
        }
        pthread_rwlock_unlock(&sh->lock);
    }
    if (k > 0) {
        /* before the map's references go (preg_get_cached) */
        pthread_rwlock_wrlock(&r->gen_lock);
        r->removals++;
        pthread_rwlock_unlock(&r->gen_lock);
    }
    for (size_t i = 0; i < k; i++) {
        struct preg_part *pp = gone[i];
        r->counts[pp->dir]--;
        pthread_mutex_lock(&r->del_lock);
        hmap_put(&r->deleting, part_path(pp), strlen(part_path(pp)), pp);
        pthread_mutex_unlock(&r->del_lock);
        count_replicated(r, pp, NULL);
        /* requests parked on it answer (UNKNOWN_TOPIC_OR_PARTITION...) */
        partition_changed(&pp->p);
        park_notify(r->env.wake, partition_park_key(&pp->p));
        partition_put(&pp->p);
    }
    free(gone);

    /* Added, or updated in place. New logs are created together at the
     * end (create_logs). */
    struct pending_log *pend = NULL;
    size_t npend = 0, pendcap = 0;
    for (int32_t ti = 0; ti < img->ntopics; ti++) {
        const struct mi_topic *t = img->topics[ti];
        if (prev && mimage_topic_by_id(prev, &t->id) == t)
            continue; /* the same topic as at the last complete sync */
        /* Its partitions' leadership or existence may have changed: fetch
         * sessions that skipped the topic look again (the image is
         * visible already: a reader after this bump sees it). */
        chgen_bump_topic(t->id.b, t->npartitions);
        for (int32_t pi = 0; pi < t->npartitions; pi++) {
            const struct mi_partition *part = &t->partitions[pi];
            if (!hosted_here(part, node))
                continue;
            uint8_t mk[20];
            make_key(mk, &t->id, part->index);
            struct preg_shard *sh = shard_of(r, mk);
            pthread_rwlock_rdlock(&sh->lock);
            struct preg_part *have = hmap_get(&sh->map, mk, sizeof mk);
            bool loaded = false;
            if (have) {
                atomic_store(&have->p.min_isr, t->cfg ? t->cfg->min_insync_replicas : 1);
                partition_set_state(&have->p, part, node);
                count_replicated(r, have, part);
                atomic_store(&have->p.ack_after_flush, t->cfg && t->cfg->flush_messages == 1);
                loaded = atomic_load(&have->ready) && have->p.log;
                if (loaded)
                    atomic_fetch_add(&have->p.refs, 1);
            }
            pthread_rwlock_unlock(&sh->lock);
            if (loaded) {
                /* A topic config change reaches the log (outside the map
                 * lock: it waits for the log's append lock). */
                struct plog_config pc;
                part_config(t, &pc);
                logmgr_set_config(r->logs, have->p.log, &pc);
                partition_log_ready(&have->p); /* the ISR may have changed */
                partition_put(&have->p);
            }
            if (have)
                continue;
            struct preg_part *pp = NULL;
            char why[512];
            if (npend == pendcap) {
                pendcap = pendcap ? 2 * pendcap : 64;
                pend = xrealloc(pend, pendcap * sizeof *pend);
            }
            bool pending;
            if (open_partition(r, t, part, first_sync, &pend[npend], &pending, &pp, why, sizeof why) != 0) {
                /* Keep going: one bad directory must not hide the rest. */
                if (rc == 0)
                    snprintf(err, errlen, "%s", why);
                slog_error("partition registry: %s", why);
                rc = -1;
                continue;
            }
            if (pending) {
                pend[npend].sh = sh;
                npend++;
                continue;
            }
            pthread_rwlock_wrlock(&sh->lock);
            hmap_put_borrowed(&sh->map, &pp->p.topic_id, sizeof mk, pp); /* = mk, in pp */
            pthread_rwlock_unlock(&sh->lock);
        }
    }
    if (npend > 0 && create_logs(r, pend, npend, err, errlen, rc == 0) != 0)
        rc = -1;
    free(pend);
    mimage_release(r->synced);
    /* After an error every partition is looked at again next time. */
    r->synced = rc == 0 ? mimage_ref((struct mimage *)img) : NULL;
    if (held)
        logmgr_opens_release(r->logs);
    pthread_mutex_unlock(&r->sync_lock);
    return rc;
}
