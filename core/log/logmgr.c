#include "log/logmgr.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "log/checkpoint.h"
#include "log/cleaner.h"
#include "log/fsutil.h"
#include "proto/kerr.h"
#include "topic_config.h"
#include "util/thread.h"
#include "util/fdcache.h"
#include "util/buf.h"
#include "util/chgen.h"
#include "util/clock.h"
#include "util/hmap.h"
#include "util/slog.h"
#include "util/throttle.h"

/* The scheduler looks at every log at least this often (flush.ms due
 * times, pokes), so config changes take effect without a wakeup. */
#define SCHED_MAX_SLEEP_MS 500
/* After DeleteRecords or retention moved a start offset, the checkpoint
 * follows within this long. */
#define START_OFFSET_CKPT_DELAY_MS 1000
/* Key map memory when log.cleaner.dedupe.buffer.size is unset. */
#define DEFAULT_DEDUPE_BYTES (128LL * 1024 * 1024)

/* hidx/cidx of a log in neither. */
#define NO_SLOT UINT32_MAX

/* One per partition: no padding, no name of its own (the log's, once
 * open: mlog_name). */
struct mlog {
    struct mlog *qnext;       /* flush queue */
    struct logmgr *m;
    struct plog *l;           /* NULL until open */
    logmgr_flushed_fn flushed;
    void *ctx;
    uint32_t dir;
    /* Its slot in m->rheap (a log whose retention can become due by
     * time) and in m->compacted (cleanup.policy compact); NO_SLOT when
     * not there. Under m->lock. */
    uint32_t hidx, cidx;
    uint32_t aidx;            /* its slot in m->all while registered and not closing */
    int busy;                 /* background users; close waits for 0 */
    bool registered;
    bool flush_queued, flush_pending_open;
    bool cleaning, closing;
    /* The cleaner met a batch it cannot read (a malformed record): left
     * alone until the log is opened again, as Kafka's uncleanable
     * partitions, instead of failing again at every backoff. */
    bool uncleanable;
};

/* "<topic>-<partition>": the last component of the log's dir. */
static const char *mlog_name(const struct mlog *ml) { return plog_name(ml->l); }

struct mdir {
    char *path;
    atomic_bool offline;
    /* Checkpointed offsets of logs not open right now (not yet opened at
     * start-up, or closed), by "<topic>-<partition>"; value is offset + 1
     * (NULL means absent). */
    struct hmap rp, ls, co, hw;
    /* The clean-shutdown marker (under m->lock): clean_start when it
     * said every log of the dir closed cleanly (it is removed before any
     * log opens); tainted once a log of the dir may be unclean on disk
     * without that being known from the dir alone (an unclean or failed
     * close, a failed open, a log not recovered after an unclean start):
     * no log is vouched for from then on, and no marker is written at
     * shutdown. */
    bool clean_start, tainted;
    int64_t prev_epoch; /* the marker's brokerEpoch, -1 none */
};

struct open_job {
    struct open_job *next;
    size_t dir;
    char *name;
    kuuid_t topic_id;
    bool has_id;
    bool id_on_disk;
    struct plog_config cfg;
    logmgr_flushed_fn flushed;
    logmgr_opened_fn done;
    void *ctx;
};

/* A log in the retention heap: when plog_retention may next delete
 * something in it (wall clock; INT64_MIN: its retention_wanted hook ran). */
struct rslot {
    int64_t due;
    struct mlog *ml;
};

/* A compacted log, for the cleaners: until recheck_at (wall clock) its
 * cleanable state cannot change unless plog_take_clean_changed says so
 * (INT64_MIN: look every time). */
struct cslot {
    int64_t recheck_at;
    struct mlog *ml;
};

struct logmgr {
    struct mdir *dirs;
    size_t ndirs;
    struct plog_codecs codecs;

    /* settings read once at creation */
    int64_t retention_check_ms;
    int64_t pid_expiration_ms, pid_check_ms; /* producer.id.expiration{,.check.interval}.ms */
    int64_t rp_ckpt_ms, ls_ckpt_ms, hw_ckpt_ms;
    int nflushers, ncleaners, nrecovery;
    int64_t cleaner_backoff_ms;
    size_t map_budget; /* per cleaner thread */
    struct throttle clean_io; /* log.cleaner.io.max.bytes.per.second, all cleaners */

    pthread_mutex_t lock;
    pthread_cond_t work_cond;  /* flush queue, recovery queue */
    pthread_cond_t sched_cond; /* scheduler pokes, stop */
    pthread_cond_t idle_cond;  /* a log's busy count or snap_users fell, a pool thread ended */
    pthread_cond_t clean_cond; /* cleaner backoff, stop */
    /* The registered logs but those closing, dense, so that a snapshot
     * (snap_take) is a copy under the lock, not a walk: with 100 000
     * logs the walk held the lock for milliseconds, and the hooks a
     * network worker calls (flush_wanted, retention_wanted) take it.
     * snap_users counts the snapshots in use: a log leaving waits for
     * them, as their holders use its entry unlocked. */
    struct mlog **all;
    size_t nall, allcap;
    int snap_users;
    struct mlog *qhead, *qtail;
    bool stop;
    atomic_bool stop_flag;     /* for plog_clean */
    bool started;
    bool retention_poke, ls_dirty, co_dirty;
    bool flush_retry; /* a flush failed: the scheduler's next tick checks every log */
    /* Counts changes to the set of logs and to the dirs' maps of logs not
     * open (under lock): with plog_{recovery_point,high_watermark}_changes
     * it tells the scheduler whether those checkpoints can have changed
     * since it last wrote them. */
    _Atomic uint64_t shape_changes;
    /* Retention looks only at the logs whose due time came (issue 12:
     * the walk over 100 000 idle partitions every check): a min-heap on
     * rslot.due of the logs with one (an empty log, or one without
     * time-based retention, is not in it until its hook puts it there).
     * Under lock. */
    struct rslot *rheap;
    size_t rn, rcap;
    /* The logs with cleanup.policy compact (the cleaners look at no
     * other). Under lock. */
    struct cslot *compacted;
    size_t ncompacted, ccap;
    /* Logs looked at by retention ticks and by the cleaners' searches
     * (logmgr_scan_stats). */
    _Atomic uint64_t retention_visits, cleaner_visits;

    _Atomic int64_t broker_epoch; /* for the markers written at shutdown */

    pthread_t *flushers;
    pthread_t scheduler;
    pthread_t *cleaners;

    struct open_job *jhead, *jtail;
    int pool_running, pool_active;
    /* the recovery pool's opens, for its one line when it is done; not
     * before every batch of opens being queued was (logmgr_opens_hold) */
    long pool_opened, pool_clean, pool_failed;
    int pool_holds;
    int64_t pool_t0_ms;
    /* a long run's progress lines: logs queued in this run, when the last
     * line went out, how often one may (logmgr_set_progress_interval_ms) */
    long pool_queued;
    int64_t pool_progress_ms, progress_interval_ms;
};

/* ---- helpers ---- */

static void *box(int64_t v) { return (void *)(uintptr_t)(v + 1); }
static int64_t unbox(void *p) { return p ? (int64_t)(uintptr_t)p - 1 : -1; }

static void map_set(struct hmap *h, const char *name, int64_t v)
{
    if (v < 0)
        hmap_del(h, name, strlen(name));
    else
        hmap_put(h, name, strlen(name), box(v));
}

static int64_t map_get(const struct hmap *h, const char *name) { return unbox(hmap_get(h, name, strlen(name))); }

static char *path_in(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = xmalloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static void load_ckpt(struct mdir *d, const char *file, struct hmap *into)
{
    char *p = path_in(d->path, file);
    struct ckpt_entry *e;
    size_t n;
    int rc = ckpt_read(p, &e, &n);
    if (rc == 0) {
        for (size_t i = 0; i < n; i++) {
            char name[512];
            snprintf(name, sizeof name, "%s-%" PRId32, e[i].topic, e[i].partition);
            map_set(into, name, e[i].offset);
        }
        ckpt_free(e, n);
    } else if (rc == EINVAL) {
        /* As Kafka: an unreadable checkpoint means "unknown", i.e. full
         * recovery of an uncleanly closed log, not a failed dir. */
        slog_warn("log dir %s: %s is malformed; ignoring it", d->path, file);
    } else if (rc != ENOENT) {
        slog_error("log dir %s: cannot read %s: %s", d->path, file, strerror(rc));
        if (rc == EIO)
            atomic_store(&d->offline, true);
    }
    free(p);
}

/* ---- the clean-shutdown marker ---- */

/* Kafka's LogManager writes one `.kafka_cleanshutdown` per log dir once
 * every log of it is closed; its content carries the broker epoch for
 * KIP-966. samsa's adds "logsClosed": before it, samsa wrote a file of
 * that name and content in the log dir before closing the logs (the
 * broker epoch alone; the logs had markers of their own), which says
 * nothing about them. A marker without the key (that one, or Kafka's)
 * gives its epoch but no log is trusted on its word. */
#define MARKER_LOGS_KEY "\"logsClosed\":true"

static void read_marker(struct mdir *d)
{
    d->prev_epoch = -1;
    char *p = path_in(d->path, PLOG_CLEAN_SHUTDOWN_FILE);
    char *text = NULL;
    size_t len = 0;
    int e = fs_read_small(p, 4096, &text, &len);
    if (e == 0) {
        char *z = xmalloc(len + 1);
        memcpy(z, text, len);
        z[len] = '\0';
        const char *k = strstr(z, "\"brokerEpoch\":");
        if (k) {
            k += strlen("\"brokerEpoch\":");
            k += *k == '"'; /* Kafka writes the value as a string */
            char *end;
            long long v = strtoll(k, &end, 10);
            if (end != k)
                d->prev_epoch = v;
        }
        bool logs = strstr(z, MARKER_LOGS_KEY) != NULL;
        free(z);
        free(text);
        /* From now on a crash counts as unclean: removed, durably, before
         * any log of the dir opens (so before its first append). */
        e = unlink(p) == 0 ? fs_sync_dir(d->path) : errno;
        if (e) {
            slog_error("log dir %s: cannot remove %s: %s; its logs are recovered", d->path, p, strerror(e));
        } else {
            d->clean_start = logs;
            slog_info("log dir %s: %s", d->path,
                      logs ? "clean shutdown marker found: its logs open without recovery"
                           : "clean shutdown marker without its logs' state: its logs are recovered");
        }
    } else if (e != ENOENT) {
        slog_warn("log dir %s: cannot read %s: %s; its logs are recovered", d->path, p, strerror(e));
    }
    free(p);
}

/* After the final checkpoints: the marker, when every log of the dir
 * closed cleanly. 0 or an errno value. */
static int write_marker(struct logmgr *m, struct mdir *d)
{
    char text[160];
    int n = snprintf(text, sizeof text, "{\"version\":0,\"brokerEpoch\":%" PRId64 "," MARKER_LOGS_KEY "}",
                     atomic_load(&m->broker_epoch));
    char *p = path_in(d->path, PLOG_CLEAN_SHUTDOWN_FILE);
    int e = fs_write_atomic(p, text, (size_t)n); /* the file's fsync, then the dir's */
    if (e)
        slog_error("log dir %s: cannot write %s: %s; its logs will be recovered", d->path, p, strerror(e));
    free(p);
    return e;
}

void logmgr_set_broker_epoch(struct logmgr *m, int64_t epoch) { atomic_store(&m->broker_epoch, epoch); }

int64_t logmgr_previous_broker_epoch(const struct logmgr *m)
{
    /* Kafka's readBrokerEpochFromCleanShutdownFiles: every dir live and
     * marked, with one epoch. */
    int64_t epoch = -1;
    for (size_t i = 0; i < m->ndirs; i++) {
        const struct mdir *d = &m->dirs[i];
        if (atomic_load(&d->offline) || d->prev_epoch < 0 || (epoch >= 0 && d->prev_epoch != epoch))
            return -1;
        epoch = d->prev_epoch;
    }
    return epoch;
}

int logmgr_clean_dirs(const struct logmgr *m)
{
    int n = 0;
    for (size_t i = 0; i < m->ndirs; i++)
        n += m->dirs[i].clean_start;
    return n;
}

void logmgr_note_unopened(struct logmgr *m, size_t dir)
{
    if (dir >= m->ndirs)
        return;
    pthread_mutex_lock(&m->lock);
    if (!m->dirs[dir].clean_start)
        m->dirs[dir].tainted = true;
    pthread_mutex_unlock(&m->lock);
}

/* ---- creation ---- */

static int64_t cfg_long(const struct samsa_config *cfg, const char *key, int64_t dflt)
{
    int64_t v;
    return config_get_long(cfg, key, &v) ? v : dflt;
}

struct logmgr *logmgr_create(const struct samsa_config *cfg)
{
    struct logmgr *m = xcalloc(1, sizeof *m);
    struct samsa_config *dflt = NULL;
    if (!cfg)
        cfg = dflt = config_new();
    /* Without a config (unit tests) there is no log dir. */
    m->ndirs = dflt ? 0 : cfg->n_log_dirs;
    m->dirs = xcalloc(m->ndirs ? m->ndirs : 1, sizeof *m->dirs);
    pthread_mutex_init(&m->lock, NULL);
    clock_cond_init_mono(&m->work_cond);
    clock_cond_init_mono(&m->sched_cond);
    clock_cond_init_mono(&m->idle_cond);
    clock_cond_init_mono(&m->clean_cond);
    atomic_init(&m->stop_flag, false);
    atomic_init(&m->broker_epoch, -1);

    m->retention_check_ms = cfg->log_retention_check_interval_ms;
    m->pid_expiration_ms = cfg_long(cfg, "producer.id.expiration.ms", 86400000);
    m->pid_check_ms = cfg_long(cfg, "producer.id.expiration.check.interval.ms", 600000);
    m->progress_interval_ms = 5000;
    m->rp_ckpt_ms = cfg_long(cfg, "log.flush.offset.checkpoint.interval.ms", 60000);
    m->ls_ckpt_ms = cfg_long(cfg, "log.flush.start.offset.checkpoint.interval.ms", 60000);
    m->hw_ckpt_ms = cfg_long(cfg, "replica.high.watermark.checkpoint.interval.ms", 5000);
    /* Kafka's default of one recovery thread per dir recovers partitions
     * one after the other; unless set, use every CPU, and at least 8:
     * creating or opening an idle log (CreateTopics of thousands of
     * partitions, a restart after a clean shutdown) waits on file and
     * directory fsyncs, not on the CPU, and concurrent fsyncs overlap. */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 8)
        ncpu = 8;
    int64_t per_dir = config_is_set(cfg, "num.recovery.threads.per.data.dir")
                          ? cfg_long(cfg, "num.recovery.threads.per.data.dir", 1)
                          : ncpu;
    m->nrecovery = (int)(per_dir * (int64_t)(m->ndirs ? m->ndirs : 1));
    /* fsyncs of different logs overlap on the device: a few flushers. */
    m->nflushers = m->nrecovery < 2 ? 2 : m->nrecovery > 8 ? 8 : m->nrecovery;
    bool enable = true;
    config_get_bool(cfg, "log.cleaner.enable", &enable);
    m->ncleaners = enable ? cfg->log_cleaner_threads : 0;
    m->cleaner_backoff_ms = cfg_long(cfg, "log.cleaner.backoff.ms", 15000);
    int64_t dedupe = cfg_long(cfg, "log.cleaner.dedupe.buffer.size", DEFAULT_DEDUPE_BYTES);
    if (dedupe < 1024 * 1024)
        dedupe = 1024 * 1024;
    m->map_budget = (size_t)(dedupe / (m->ncleaners > 0 ? m->ncleaners : 1));
    throttle_init(&m->clean_io, cfg->log_cleaner_io_max_bytes_per_second, clock_mono_ms());

    for (size_t i = 0; i < m->ndirs; i++) {
        struct mdir *d = &m->dirs[i];
        d->path = xstrdup(cfg->log_dirs[i]);
        d->prev_epoch = -1;
        atomic_init(&d->offline, false);
        hmap_init(&d->rp);
        hmap_init(&d->ls);
        hmap_init(&d->co);
        hmap_init(&d->hw);
        DIR *dd = fdc_opendir(d->path);
        if (!dd && fdc_is_resource(errno)) {
            /* No descriptor to spare is no disk failure. */
            slog_warn("log dir %s: cannot check it now: %s; assuming it is online", d->path, strerror(errno));
        } else if (!dd) {
            slog_error("log dir %s is offline: cannot read it: %s", d->path, strerror(errno));
            atomic_store(&d->offline, true);
            continue;
        } else {
            closedir(dd);
        }
        if (access(d->path, W_OK | X_OK) != 0) {
            slog_error("log dir %s is offline: %s", d->path, strerror(errno));
            atomic_store(&d->offline, true);
            continue;
        }
        read_marker(d);
        load_ckpt(d, CKPT_RECOVERY_POINT_FILE, &d->rp);
        load_ckpt(d, CKPT_LOG_START_FILE, &d->ls);
        load_ckpt(d, CKPT_CLEANER_FILE, &d->co);
        load_ckpt(d, CKPT_REPLICATION_FILE, &d->hw);
    }
    config_free(dflt);
    return m;
}

void logmgr_set_codecs(struct logmgr *m, const struct plog_codecs *c) { m->codecs = *c; }

size_t logmgr_ndirs(const struct logmgr *m) { return m->ndirs; }
const char *logmgr_dir(const struct logmgr *m, size_t dir) { return m->dirs[dir].path; }
bool logmgr_dir_offline(const struct logmgr *m, size_t dir) { return atomic_load(&m->dirs[dir].offline); }

bool logmgr_dir_space(const struct logmgr *m, size_t dir, int64_t *total, int64_t *usable)
{
    struct statvfs vfs;
    if (logmgr_dir_offline(m, dir) || statvfs(m->dirs[dir].path, &vfs) != 0)
        return false;
    *total = (int64_t)vfs.f_blocks * (int64_t)vfs.f_frsize;
    *usable = (int64_t)vfs.f_bavail * (int64_t)vfs.f_frsize;
    return true;
}

void logmgr_fail_dir(struct logmgr *m, size_t dir, const char *why)
{
    if (!atomic_exchange(&m->dirs[dir].offline, true))
        slog_error("log dir %s is offline: %s; its partitions answer KAFKA_STORAGE_ERROR", m->dirs[dir].path, why);
    chgen_bump_all(); /* fetch sessions skipping its topics answer the error */
}

/* ---- hooks ---- */

/* Under m->lock. */
static void enqueue_flush(struct logmgr *m, struct mlog *ml)
{
    if (ml->flush_queued || ml->closing)
        return;
    if (!ml->registered) {
        ml->flush_pending_open = true;
        return;
    }
    ml->flush_queued = true;
    ml->qnext = NULL;
    if (m->qtail)
        m->qtail->qnext = ml;
    else
        m->qhead = ml;
    m->qtail = ml;
    pthread_cond_signal(&m->work_cond);
}

/* ---- the retention heap and the compacted set (under m->lock) ---- */

static void rheap_put(struct logmgr *m, size_t i, struct rslot e)
{
    m->rheap[i] = e;
    e.ml->hidx = (uint32_t)i;
}

static void rheap_up(struct logmgr *m, size_t i)
{
    struct rslot e = m->rheap[i];
    while (i > 0 && m->rheap[(i - 1) / 2].due > e.due) {
        rheap_put(m, i, m->rheap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    rheap_put(m, i, e);
}

static void rheap_down(struct logmgr *m, size_t i)
{
    struct rslot e = m->rheap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m->rn)
            break;
        if (c + 1 < m->rn && m->rheap[c + 1].due < m->rheap[c].due)
            c++;
        if (m->rheap[c].due >= e.due)
            break;
        rheap_put(m, i, m->rheap[c]);
        i = c;
    }
    rheap_put(m, i, e);
}

/* The log's due time: INT64_MAX takes it out of the heap. */
static void rheap_set(struct logmgr *m, struct mlog *ml, int64_t due)
{
    if (ml->hidx == NO_SLOT) {
        if (due == INT64_MAX)
            return;
        if (m->rn == m->rcap) {
            m->rcap = m->rcap ? m->rcap * 2 : 64;
            m->rheap = xrealloc(m->rheap, m->rcap * sizeof *m->rheap);
        }
        rheap_put(m, m->rn++, (struct rslot){due, ml});
        rheap_up(m, m->rn - 1);
        return;
    }
    size_t i = ml->hidx;
    if (due == INT64_MAX) {
        ml->hidx = NO_SLOT;
        struct rslot last = m->rheap[--m->rn];
        if (i == m->rn)
            return;
        rheap_put(m, i, last);
        rheap_up(m, i);
        rheap_down(m, last.ml->hidx);
        return;
    }
    int64_t was = m->rheap[i].due;
    m->rheap[i].due = due;
    if (due < was)
        rheap_up(m, i);
    else
        rheap_down(m, i);
}

static int64_t rheap_due(const struct logmgr *m, const struct mlog *ml)
{
    return ml->hidx == NO_SLOT ? INT64_MAX : m->rheap[ml->hidx].due;
}

/* In or out of m->compacted. */
static void compacted_set(struct logmgr *m, struct mlog *ml, bool in)
{
    if (in && ml->cidx == NO_SLOT) {
        if (m->ncompacted == m->ccap) {
            m->ccap = m->ccap ? m->ccap * 2 : 16;
            m->compacted = xrealloc(m->compacted, m->ccap * sizeof *m->compacted);
        }
        ml->cidx = (uint32_t)m->ncompacted;
        m->compacted[m->ncompacted++] = (struct cslot){INT64_MIN, ml};
    } else if (!in && ml->cidx != NO_SLOT) {
        struct cslot last = m->compacted[--m->ncompacted];
        if (ml->cidx != m->ncompacted) {
            m->compacted[ml->cidx] = last;
            last.ml->cidx = ml->cidx;
        }
        ml->cidx = NO_SLOT;
    }
}

static void hook_flush_wanted(void *ctx, struct plog *l)
{
    (void)l;
    struct mlog *ml = ctx;
    pthread_mutex_lock(&ml->m->lock);
    enqueue_flush(ml->m, ml);
    pthread_mutex_unlock(&ml->m->lock);
}

static void hook_start_offset_moved(void *ctx, struct plog *l)
{
    struct mlog *ml = ctx;
    struct logmgr *m = ml->m;
    pthread_mutex_lock(&m->lock);
    m->ls_dirty = true;
    /* DeleteRecords (its retention request is pending): the segments
     * below the new start go now, as before, not at the next check.
     * (Retention itself, which moved it, took the request before.) */
    if (plog_retention_wanted(l))
        m->retention_poke = true;
    pthread_cond_signal(&m->sched_cond);
    pthread_mutex_unlock(&m->lock);
    /* fetch sessions skipping the partition answer its new log start */
    const kuuid_t *id = plog_topic_id(l);
    const char *topic;
    size_t topic_len;
    int32_t index;
    if (id && plog_topic_partition(l, &topic, &topic_len, &index))
        chgen_bump(id->b, index);
    else
        chgen_bump_all();
}

/* Puts the log at the head of the retention heap: the next retention
 * tick (or poke) looks at it. On a network worker for an append:
 * O(log n) under m->lock, once per check interval at most (the log's
 * flag). */
static void hook_retention_wanted(void *ctx, struct plog *l)
{
    (void)l;
    struct mlog *ml = ctx;
    struct logmgr *m = ml->m;
    pthread_mutex_lock(&m->lock);
    if (ml->registered && !ml->closing)
        rheap_set(m, ml, INT64_MIN);
    pthread_mutex_unlock(&m->lock);
}

static void hook_failed(void *ctx, struct plog *l)
{
    struct mlog *ml = ctx;
    char why[600];
    snprintf(why, sizeof why, "an I/O error in %s", plog_dir(l));
    logmgr_fail_dir(ml->m, ml->dir, why);
}

/* ---- registration ---- */

/* Every registered log's hooks; their ctx is its mlog. One table for
 * all (not a copy in each mlog: 40 bytes a partition). */
static const struct plog_hooks mlog_hooks = {hook_flush_wanted, hook_start_offset_moved, hook_failed,
                                             hook_retention_wanted};

static struct mlog *mlog_new(struct logmgr *m, size_t dir, logmgr_flushed_fn flushed, void *ctx)
{
    struct mlog *ml = xcalloc(1, sizeof *ml);
    ml->m = m;
    ml->dir = (uint32_t)dir;
    ml->flushed = flushed;
    ml->ctx = ctx;
    ml->hidx = ml->cidx = NO_SLOT;
    return ml;
}

static void mlog_free(struct mlog *ml)
{
    free(ml);
}

/* logmgr_open's tries when out of descriptors, and the first backoff
 * (doubled each time: 25 ms up to 0.4 s, under a second in all). */
#define OPEN_RESOURCE_TRIES 5
#define OPEN_RESOURCE_BACKOFF_US 25000

static int open_log(struct logmgr *m, struct mlog *ml, const char *name, const kuuid_t *topic_id,
                    const struct plog_config *cfg, bool defer_sync, bool id_on_disk, bool *resource)
{
    struct mdir *d = &m->dirs[ml->dir];
    if (atomic_load(&d->offline))
        return KERR_KAFKA_STORAGE_ERROR;
    struct plog_open_opts o = PLOG_OPEN_OPTS_INIT;
    pthread_mutex_lock(&m->lock);
    o.recovery_point = map_get(&d->rp, name);
    o.log_start_offset = map_get(&d->ls, name);
    o.cleaner_offset = map_get(&d->co, name);
    o.high_watermark = map_get(&d->hw, name);
    o.clean_shutdown = d->clean_start && !d->tainted;
    pthread_mutex_unlock(&m->lock);
    o.dir_offline = &d->offline;
    o.hooks = &mlog_hooks;
    o.hooks_ctx = ml;
    o.codecs = &m->codecs;
    o.defer_sync = defer_sync;
    o.topic_id_on_disk = id_on_disk;
    char *path = path_in(d->path, name);
    struct plog *l;
    uint64_t res0 = fdc_resource_failures();
    int rc = plog_open_ex(path, topic_id, cfg, &o, &l);
    if (rc == KERR_KAFKA_STORAGE_ERROR && fdc_resource_failures() != res0) {
        /* Out of file descriptors even after the fd cache shed: not a
         * disk failure, the dir stays online and the open may be tried
         * again (logmgr_open's callers and the recovery pool do). */
        slog_warn("log: cannot open %s for want of file descriptors; the log dir stays online", path);
        rc = KERR_KAFKA_STORAGE_ERROR;
        if (resource)
            *resource = true;
    } else if (rc == KERR_KAFKA_STORAGE_ERROR) {
        char why[600];
        snprintf(why, sizeof why, "cannot open %s", path);
        logmgr_fail_dir(m, ml->dir, why);
    }
    free(path);
    if (rc) {
        /* Whatever the failed open left (a log vouched for, or one not
         * recovered) is not vouched for by the next marker. */
        pthread_mutex_lock(&m->lock);
        d->tainted = true;
        pthread_mutex_unlock(&m->lock);
        return rc;
    }
    /* Nothing runs on the log before it is returned: no event is lost
     * between these and the registration. A request the open itself
     * made (its hook found the log unregistered) is taken, or the flag
     * would stay set and no later event would call the hook. */
    plog_take_retention_wanted(l);
    int64_t due = plog_retention_due(l, clock_wall_ms());
    struct plog_config lc;
    plog_get_config(l, &lc);
    pthread_mutex_lock(&m->lock);
    ml->l = l;
    ml->registered = true;
    rheap_set(m, ml, due);
    compacted_set(m, ml, lc.cleanup_compact);
    if (m->nall == m->allcap) {
        m->allcap = m->allcap ? 2 * m->allcap : 64;
        m->all = xrealloc(m->all, m->allcap * sizeof *m->all);
    }
    ml->aidx = (uint32_t)m->nall;
    m->all[m->nall++] = ml;
    atomic_fetch_add(&m->shape_changes, 1);
    /* The log holds its checkpointed values now (write_ckpt reads them
     * from the log, and logmgr_close puts them back): the start-up maps'
     * entries would only cost memory, four keys and slots per log (0.3
     * KiB per idle partition after a restart). */
    struct hmap *maps[] = {&d->rp, &d->ls, &d->co, &d->hw};
    for (size_t i = 0; i < 4; i++) {
        hmap_del(maps[i], name, strlen(name));
        if (hmap_count(maps[i]) == 0 && maps[i]->cap > 0) {
            hmap_free(maps[i]); /* its slots too */
        }
    }
    if (ml->flush_pending_open)
        enqueue_flush(m, ml);
    pthread_mutex_unlock(&m->lock);
    return 0;
}

static int open_retrying(struct logmgr *m, size_t dir, const char *name, const kuuid_t *topic_id,
                         const struct plog_config *cfg, logmgr_flushed_fn flushed, void *ctx, bool defer_sync,
                         bool id_on_disk, struct plog **out)
{
    *out = NULL;
    if (dir >= m->ndirs)
        return KERR_KAFKA_STORAGE_ERROR;
    /* Out of descriptors: the fd cache shed what it could; other opens
     * and requests finishing free more, so try again a few times. */
    struct mlog *ml = mlog_new(m, dir, flushed, ctx);
    int rc = 0;
    for (int t = 0; t < OPEN_RESOURCE_TRIES; t++) {
        bool resource = false;
        rc = open_log(m, ml, name, topic_id, cfg, defer_sync, id_on_disk, &resource);
        if (!resource)
            break;
        fdc_shed(fdc_capacity());
        usleep(OPEN_RESOURCE_BACKOFF_US << t);
    }
    if (rc) {
        mlog_free(ml);
        return rc;
    }
    *out = ml->l;
    return 0;
}

int logmgr_open(struct logmgr *m, size_t dir, const char *name, const kuuid_t *topic_id,
                const struct plog_config *cfg, logmgr_flushed_fn flushed, void *ctx, struct plog **out)
{
    return open_retrying(m, dir, name, topic_id, cfg, flushed, ctx, false, false, out);
}

int logmgr_open_deferred(struct logmgr *m, size_t dir, const char *name, const kuuid_t *topic_id,
                         const struct plog_config *cfg, logmgr_flushed_fn flushed, void *ctx, struct plog **out)
{
    return open_retrying(m, dir, name, topic_id, cfg, flushed, ctx, true, false, out);
}

/* An fsync of a directory, retried as an open is when out of
 * descriptors (fs_sync_dir opens it through the fd cache); any other
 * error is an I/O error of the dir. */
static int sync_dir_of(struct logmgr *m, size_t dir, const char *path)
{
    int e = 0;
    for (int t = 0; t < OPEN_RESOURCE_TRIES; t++) {
        e = fs_sync_dir(path);
        if (!fdc_is_resource(e))
            break;
        fdc_shed(fdc_capacity());
        usleep(OPEN_RESOURCE_BACKOFF_US << t);
    }
    if (e == 0)
        return 0;
    if (fdc_is_resource(e)) {
        slog_warn("log: cannot sync %s for want of file descriptors; the log dir stays online", path);
    } else {
        char why[600];
        snprintf(why, sizeof why, "cannot sync %s: %s", path, strerror(e));
        logmgr_fail_dir(m, dir, why);
    }
    return KERR_KAFKA_STORAGE_ERROR;
}

int logmgr_sync_created(struct logmgr *m, size_t dir, struct plog *l)
{
    if (dir >= m->ndirs)
        return KERR_KAFKA_STORAGE_ERROR;
    return sync_dir_of(m, dir, plog_dir(l));
}

int logmgr_sync_dir(struct logmgr *m, size_t dir)
{
    if (dir >= m->ndirs)
        return KERR_KAFKA_STORAGE_ERROR;
    return sync_dir_of(m, dir, m->dirs[dir].path);
}

/* The pool's lines, taken under m->lock and written after it is
 * released: a line is I/O, and the lock is every open's and every
 * registration's. */
struct open_report {
    bool summary; /* else a progress line */
    long opened, queued, clean, failed;
    int64_t ms;
    bool more_queued;
};

static void print_report(const struct open_report *r)
{
    if (r->summary)
        slog_info("log manager: %ld log(s) opened in %" PRId64 " ms: %ld on their log dir's clean-shutdown "
                  "marker, %ld checked from their recovery points, %ld failed",
                  r->opened, r->ms, r->clean, r->opened - r->clean - r->failed, r->failed);
    else
        slog_info("log manager: opening logs: %ld of %ld done in %" PRId64 " s (%ld checked from their recovery "
                  "points, %ld failed so far)%s",
                  r->opened, r->queued, r->ms / 1000, r->opened - r->clean - r->failed, r->failed,
                  r->more_queued ? "; more being queued" : "");
}

static void take_report_locked(struct logmgr *m, bool summary, int64_t now, struct open_report *r)
{
    *r = (struct open_report){summary, m->pool_opened, m->pool_queued, m->pool_clean, m->pool_failed,
                              now - m->pool_t0_ms, m->pool_holds > 0};
}

/* Under m->lock: the recovery pool's one line is due once it has
 * nothing left to open and nobody is still queueing a batch (a
 * start-up's image sync queues its logs one by one: the pool must not
 * report the first few it drained before the rest arrived). running: the
 * pool threads that may still be busy (the caller, when it is one). */
static bool summary_due_locked(struct logmgr *m, int running, struct open_report *r)
{
    if (m->pool_running > running || m->jhead || m->pool_holds > 0 || m->pool_opened == 0)
        return false;
    take_report_locked(m, true, clock_mono_ms(), r);
    m->pool_opened = m->pool_clean = m->pool_failed = m->pool_queued = 0;
    return true;
}

/* Under m->lock, after an open: a line every progress_interval_ms while
 * a run lasts (a recovery after a crash can check logs for minutes; the
 * operator sees it move, as Kafka logs its recovery's progress). */
static bool progress_due_locked(struct logmgr *m, struct open_report *r)
{
    if (!m->jhead)
        return false; /* the run is ending: its one line follows */
    int64_t now = clock_mono_ms();
    if (now - m->pool_t0_ms < m->progress_interval_ms || now - m->pool_progress_ms < m->progress_interval_ms)
        return false;
    m->pool_progress_ms = now;
    take_report_locked(m, false, now, r);
    return true;
}

void logmgr_set_progress_interval_ms(struct logmgr *m, int64_t ms)
{
    pthread_mutex_lock(&m->lock);
    m->progress_interval_ms = ms;
    pthread_mutex_unlock(&m->lock);
}

void logmgr_opens_hold(struct logmgr *m)
{
    pthread_mutex_lock(&m->lock);
    if (m->pool_holds++ == 0 && !m->jhead && m->pool_running == 0)
        m->pool_t0_ms = clock_mono_ms();
    pthread_mutex_unlock(&m->lock);
}

void logmgr_opens_release(struct logmgr *m)
{
    struct open_report r;
    pthread_mutex_lock(&m->lock);
    m->pool_holds--;
    bool due = summary_due_locked(m, 0, &r);
    pthread_mutex_unlock(&m->lock);
    if (due)
        print_report(&r);
}

static void *pool_main(void *arg)
{
    struct logmgr *m = arg;
    thread_set_name("samsa-logopen");
    struct open_report r;
    pthread_mutex_lock(&m->lock);
    for (;;) {
        struct open_job *j = m->jhead;
        if (!j) {
            /* the last one busy writes the run's line, before it counts
             * itself out: a waiter (logmgr_wait_opens) sees the line first */
            if (!summary_due_locked(m, 1, &r))
                break;
            pthread_mutex_unlock(&m->lock);
            print_report(&r);
            pthread_mutex_lock(&m->lock);
            continue; /* jobs may have come meanwhile */
        }
        m->jhead = j->next;
        if (!m->jhead)
            m->jtail = NULL;
        m->pool_active++;
        bool vouched = j->dir < m->ndirs && m->dirs[j->dir].clean_start && !m->dirs[j->dir].tainted;
        pthread_mutex_unlock(&m->lock);
        struct plog *l = NULL;
        int rc = open_retrying(m, j->dir, j->name, j->has_id ? &j->topic_id : NULL, &j->cfg, j->flushed, j->ctx,
                               false, j->has_id && j->id_on_disk, &l);
        j->done(j->ctx, rc, l);
        free(j->name);
        free(j);
        pthread_mutex_lock(&m->lock);
        m->pool_active--;
        m->pool_opened++;
        m->pool_clean += rc == 0 && vouched;
        m->pool_failed += rc != 0;
        if (progress_due_locked(m, &r)) {
            pthread_mutex_unlock(&m->lock);
            print_report(&r);
            pthread_mutex_lock(&m->lock);
        }
    }
    m->pool_running--;
    bool last = m->pool_running == 0;
    pthread_cond_broadcast(&m->idle_cond);
    pthread_mutex_unlock(&m->lock);
#ifdef __GLIBC__
    /* The opens ran on several threads, each allocating in its own malloc
     * arena, and left their temporaries (listings, read buffers) free
     * between the logs' long-lived structures: give those pages back
     * once the start-up recovery is done. */
    if (last)
        malloc_trim(0);
#else
    (void)last;
#endif
    return NULL;
}

void logmgr_open_async(struct logmgr *m, size_t dir, const char *name, const kuuid_t *topic_id, bool id_on_disk,
                       const struct plog_config *cfg, logmgr_flushed_fn flushed, logmgr_opened_fn done, void *ctx)
{
    struct open_job *j = xcalloc(1, sizeof *j);
    j->dir = dir;
    j->name = xstrdup(name);
    if (topic_id) {
        j->topic_id = *topic_id;
        j->has_id = true;
        j->id_on_disk = id_on_disk;
    }
    j->cfg = *cfg;
    j->flushed = flushed;
    j->done = done;
    j->ctx = ctx;
    pthread_mutex_lock(&m->lock);
    if (!m->jhead && m->pool_running == 0 && m->pool_holds == 0)
        m->pool_t0_ms = clock_mono_ms();
    m->pool_queued++;
    if (m->jtail)
        m->jtail->next = j;
    else
        m->jhead = j;
    m->jtail = j;
    /* Pool threads live while there is work; start one more when all
     * are taken, up to the limit. */
    if (m->pool_running < m->nrecovery) {
        pthread_t t;
        if (pthread_create(&t, NULL, pool_main, m) == 0) {
            pthread_detach(t);
            m->pool_running++;
        }
    }
    bool none = m->pool_running == 0;
    pthread_mutex_unlock(&m->lock);
    if (none) {
        /* No thread could be started: open here. */
        pthread_mutex_lock(&m->lock);
        m->pool_running++;
        pthread_mutex_unlock(&m->lock);
        pool_main(m);
    }
}

int logmgr_wait_opens(struct logmgr *m, int64_t timeout_ms)
{
    struct timespec ts;
    clock_deadline_after(&ts, timeout_ms);
    pthread_mutex_lock(&m->lock);
    int rc = 0;
    while ((m->pool_running > 0 || m->jhead) && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&m->idle_cond, &m->lock, &ts);
    int pending = m->pool_active;
    for (struct open_job *j = m->jhead; j; j = j->next)
        pending++;
    pthread_mutex_unlock(&m->lock);
    return pending;
}

/* Under m->lock: takes ml out of the flush queue. */
static void dequeue_flush(struct logmgr *m, struct mlog *ml)
{
    if (!ml->flush_queued)
        return;
    struct mlog **pp = &m->qhead, *prev = NULL;
    while (*pp && *pp != ml) {
        prev = *pp;
        pp = &(*pp)->qnext;
    }
    if (*pp) {
        *pp = ml->qnext;
        if (m->qtail == ml)
            m->qtail = prev;
    }
    ml->flush_queued = false;
}

/* l's mlog when m registered it (under m->lock), else NULL. No map from
 * logs to mlogs (a slot per partition, issue 12): a log opened here has
 * mlog_hooks, whose ctx is its mlog. */
static struct mlog *mlog_of(struct logmgr *m, struct plog *l)
{
    if (plog_hooks(l) != &mlog_hooks)
        return NULL;
    struct mlog *ml = plog_hooks_ctx(l);
    return ml->m == m && ml->l == l && ml->registered ? ml : NULL;
}

/* Takes l's mlog out of every list once no background work uses it. */
static struct mlog *unregister(struct logmgr *m, struct plog *l)
{
    pthread_mutex_lock(&m->lock);
    struct mlog *ml = mlog_of(m, l);
    if (!ml) {
        pthread_mutex_unlock(&m->lock);
        return NULL;
    }
    if (!ml->closing) {
        /* No snapshot from now on has it. */
        struct mlog *last = m->all[--m->nall];
        m->all[ml->aidx] = last;
        last->aidx = ml->aidx;
    }
    ml->closing = true;
    dequeue_flush(m, ml);
    while (ml->busy > 0 || m->snap_users > 0)
        pthread_cond_wait(&m->idle_cond, &m->lock);
    rheap_set(m, ml, INT64_MAX);
    compacted_set(m, ml, false);
    ml->registered = false;
    pthread_mutex_unlock(&m->lock);
    return ml;
}

void logmgr_close(struct logmgr *m, struct plog *l, bool clean)
{
    if (!l)
        return;
    struct mlog *ml = unregister(m, l);
    if (clean && !plog_offline(l))
        plog_flush(l);
    if (ml) {
        struct mdir *d = &m->dirs[ml->dir];
        pthread_mutex_lock(&m->lock);
        map_set(&d->rp, mlog_name(ml), plog_recovery_point(l));
        map_set(&d->ls, mlog_name(ml), plog_log_start_offset(l));
        map_set(&d->co, mlog_name(ml), plog_cleaner_offset(l));
        map_set(&d->hw, mlog_name(ml), plog_known_high_watermark(l));
        atomic_fetch_add(&m->shape_changes, 1);
        pthread_mutex_unlock(&m->lock);
    }
    /* The log keeps ml as its hooks' ctx: ml goes after it. */
    size_t dir = ml ? ml->dir : m->ndirs;
    int rc = plog_close(l, clean);
    if (rc && dir < m->ndirs) {
        pthread_mutex_lock(&m->lock);
        m->dirs[dir].tainted = true;
        pthread_mutex_unlock(&m->lock);
    }
    mlog_free(ml);
}

int logmgr_delete(struct logmgr *m, struct plog *l)
{
    struct mlog *ml = unregister(m, l);
    if (ml) {
        struct mdir *d = &m->dirs[ml->dir];
        pthread_mutex_lock(&m->lock);
        map_set(&d->rp, mlog_name(ml), -1);
        map_set(&d->ls, mlog_name(ml), -1);
        map_set(&d->co, mlog_name(ml), -1);
        map_set(&d->hw, mlog_name(ml), -1);
        atomic_fetch_add(&m->shape_changes, 1);
        pthread_mutex_unlock(&m->lock);
    }
    int rc = plog_delete(l); /* before ml: the log keeps ml as its hooks' ctx */
    mlog_free(ml);
    return rc;
}

int logmgr_set_config(struct logmgr *m, struct plog *l, const struct plog_config *cfg)
{
    /* The log asks for retention itself (its hook); the compacted set
     * follows cleanup.policy here. */
    int rc = plog_set_config(l, cfg);
    if (rc)
        return rc;
    struct plog_config c;
    plog_get_config(l, &c);
    pthread_mutex_lock(&m->lock);
    struct mlog *ml = mlog_of(m, l);
    if (ml && !ml->closing)
        compacted_set(m, ml, c.cleanup_compact);
    pthread_mutex_unlock(&m->lock);
    return 0;
}

void logmgr_config_from_topic(const struct topic_config *tc, struct plog_config *out)
{
    struct plog_config c = PLOG_CONFIG_INIT;
    c.segment_bytes = tc->segment_bytes;
    c.index_interval_bytes = tc->index_interval_bytes;
    c.segment_index_bytes = tc->segment_index_bytes;
    c.segment_ms = tc->segment_ms;
    c.segment_jitter_ms = tc->segment_jitter_ms;
    c.fsync_each_append = false;
    c.flush_messages = tc->flush_messages;
    c.flush_ms = tc->flush_ms;
    c.retention_ms = tc->retention_ms;
    c.retention_bytes = tc->retention_bytes;
    c.cleanup_delete = tc->cleanup_delete;
    c.cleanup_compact = tc->cleanup_compact;
    c.min_cleanable_dirty_ratio = tc->min_cleanable_dirty_ratio;
    c.min_compaction_lag_ms = tc->min_compaction_lag_ms;
    c.max_compaction_lag_ms = tc->max_compaction_lag_ms;
    c.delete_retention_ms = tc->delete_retention_ms;
    c.file_delete_delay_ms = tc->file_delete_delay_ms;
    *out = c;
}

/* ---- snapshots for background passes ---- */

struct snap {
    struct mlog **v;
    size_t n;
};

/* Every registered log not closing; none leaves (its entry and log stay
 * valid) until snap_release. */
static void snap_take(struct logmgr *m, struct snap *s)
{
    /* The copy's memory is allocated and touched outside the lock: at
     * 100 000 logs a fresh 800 KB mapping faulted in under it held the
     * lock for milliseconds. */
    size_t cap = 0;
    s->v = NULL;
    pthread_mutex_lock(&m->lock);
    while (!s->v || m->nall > cap) {
        cap = m->nall + m->nall / 16 + 16;
        pthread_mutex_unlock(&m->lock);
        free(s->v);
        s->v = xmalloc(cap * sizeof *s->v);
        memset(s->v, 0, cap * sizeof *s->v);
        pthread_mutex_lock(&m->lock);
    }
    s->n = m->nall;
    if (s->n)
        memcpy(s->v, m->all, s->n * sizeof *s->v); /* m->all is NULL until a log registers */
    m->snap_users++;
    pthread_mutex_unlock(&m->lock);
}

static void snap_release(struct logmgr *m, struct snap *s)
{
    if (!s->v)
        return; /* none taken */
    pthread_mutex_lock(&m->lock);
    if (--m->snap_users == 0)
        pthread_cond_broadcast(&m->idle_cond);
    pthread_mutex_unlock(&m->lock);
    free(s->v);
}

/* ---- checkpoints ---- */

enum ckpt_kind { CK_RP, CK_LS, CK_CO, CK_HW };

static int64_t ckpt_value(struct plog *l, enum ckpt_kind k)
{
    switch (k) {
    case CK_RP: return plog_recovery_point(l);
    case CK_LS: return plog_log_start_offset(l);
    case CK_CO: return plog_cleaner_offset(l);
    case CK_HW: return plog_known_high_watermark(l);
    }
    return -1;
}

/* One dir's file: open logs, plus the checkpointed values of logs not
 * open (yet): a checkpoint written while start-up recovery still runs
 * must not forget the partitions it has not reached. */
static int write_ckpt(struct logmgr *m, const struct snap *s, size_t dir, enum ckpt_kind k)
{
    struct mdir *d = &m->dirs[dir];
    if (atomic_load(&d->offline))
        return EIO;
    struct hmap *h = k == CK_RP ? &d->rp : k == CK_LS ? &d->ls : k == CK_CO ? &d->co : &d->hw;
    const char *file = k == CK_RP   ? CKPT_RECOVERY_POINT_FILE
                       : k == CK_LS ? CKPT_LOG_START_FILE
                       : k == CK_CO ? CKPT_CLEANER_FILE
                                    : CKPT_REPLICATION_FILE;
    struct hmap seen;
    hmap_init(&seen);
    size_t cap = s->n + 16, n = 0;
    struct ckpt_entry *e = xmalloc(cap * sizeof *e);
    for (size_t i = 0; i < s->n; i++) {
        struct mlog *ml = s->v[i];
        if (ml->dir != dir)
            continue;
        hmap_put_borrowed(&seen, mlog_name(ml), strlen(mlog_name(ml)), ml); /* in a snapshot: its name stays */
        const char *topic;
        size_t tl;
        int32_t part;
        int64_t v = ckpt_value(ml->l, k);
        if (v < 0 || !plog_topic_partition(ml->l, &topic, &tl, &part))
            continue;
        e[n++] = (struct ckpt_entry){xstrndup(topic, tl), part, v};
    }
    pthread_mutex_lock(&m->lock);
    const void *key;
    size_t kl;
    void *val;
    for (size_t it = 0; hmap_next(h, &it, &key, &kl, &val);) {
        if (hmap_get(&seen, key, kl))
            continue;
        /* Keys are "<topic>-<partition>", stored without a NUL. */
        char name[512];
        if (kl >= sizeof name)
            continue;
        memcpy(name, key, kl);
        name[kl] = '\0';
        char *dash = strrchr(name, '-');
        if (!dash || dash == name)
            continue;
        long part = strtol(dash + 1, NULL, 10);
        if (n == cap) {
            cap *= 2;
            e = xrealloc(e, cap * sizeof *e);
        }
        e[n++] = (struct ckpt_entry){xstrndup(name, (size_t)(dash - name)), (int32_t)part, unbox(val)};
    }
    pthread_mutex_unlock(&m->lock);
    hmap_free(&seen);
    char *p = path_in(d->path, file);
    int rc = ckpt_write(p, e, n);
    if (rc == ENOSPC || rc == EDQUOT || fdc_is_resource(rc)) {
        /* A full disk is not a failed one, nor is a process out of file
         * descriptors (util/fdcache.h). The file is replaced by
         * rename, so the previous one is intact and merely older: recovery
         * starts earlier, and a log start offset that moved since may come
         * back lower after a crash -- as in Kafka, which cannot write it
         * either. Appends on a full disk fail one by one and keep their
         * log online (plog_append); taking the dir offline here would make
         * the outcome of a disk-full depend on whether a checkpoint fell
         * due during it, and stop reads that need no space. Retried at
         * the next interval. */
        slog_warn("log dir %s: cannot write %s: %s; keeping the previous one", d->path, file, strerror(rc));
    } else if (rc) {
        char why[700];
        snprintf(why, sizeof why, "cannot write %s: %s", p, strerror(rc));
        logmgr_fail_dir(m, dir, why);
    }
    free(p);
    ckpt_free(e, n);
    return rc;
}

/* True when every dir's file was written. */
static bool write_all(struct logmgr *m, const struct snap *s, enum ckpt_kind k)
{
    bool ok = true;
    for (size_t d = 0; d < m->ndirs; d++)
        ok &= write_ckpt(m, s, d, k) == 0;
    return ok;
}

/* What the recovery-point (k CK_RP) or high-watermark checkpoint holds
 * can have changed since a write only if this moved from what it was
 * before that write (both counts only grow, so their sum moves when
 * either does). */
static uint64_t ckpt_changes(struct logmgr *m, enum ckpt_kind k)
{
    return atomic_load(&m->shape_changes) +
           (k == CK_RP ? plog_recovery_point_changes() : plog_high_watermark_changes());
}

void logmgr_write_checkpoints(struct logmgr *m)
{
    struct snap s;
    snap_take(m, &s);
    write_all(m, &s, CK_RP);
    write_all(m, &s, CK_LS);
    write_all(m, &s, CK_CO);
    write_all(m, &s, CK_HW);
    snap_release(m, &s);
}

void logmgr_run_retention(struct logmgr *m)
{
    struct snap s;
    snap_take(m, &s);
    int64_t now = clock_wall_ms();
    for (size_t i = 0; i < s.n; i++) {
        plog_retention(s.v[i]->l, now, NULL);
        plog_purge_deleted(s.v[i]->l, now, false);
    }
    snap_release(m, &s);
}

/* A due time above every real one short of "never": a log being
 * worked on by retention_tick stays in the heap with it, so that its
 * hook meanwhile is not lost. */
#define DUE_IN_WORK (INT64_MAX - 1)

size_t logmgr_retention_tick(struct logmgr *m, int64_t now_ms, bool wanted_only)
{
    int64_t upto = wanted_only ? INT64_MIN : now_ms;
    struct mlog **v = NULL;
    size_t n = 0, cap = 0;
    pthread_mutex_lock(&m->lock);
    while (m->rn > 0 && m->rheap[0].due <= upto) {
        struct mlog *ml = m->rheap[0].ml;
        if (ml->closing) {
            rheap_set(m, ml, INT64_MAX);
            continue;
        }
        rheap_set(m, ml, DUE_IN_WORK);
        ml->busy++;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            v = xrealloc(v, cap * sizeof *v);
        }
        v[n++] = ml;
    }
    pthread_mutex_unlock(&m->lock);
    for (size_t i = 0; i < n; i++) {
        struct plog *l = v[i]->l;
        /* Taken first: an event from here on asks again. */
        plog_take_retention_wanted(l);
        plog_retention(l, now_ms, NULL);
        int64_t due = plog_retention_due(l, now_ms);
        pthread_mutex_lock(&m->lock);
        int64_t cur = rheap_due(m, v[i]);
        if (cur != DUE_IN_WORK && cur < due)
            due = cur; /* its hook ran meanwhile */
        if (!v[i]->closing)
            rheap_set(m, v[i], due);
        v[i]->busy--;
        pthread_mutex_unlock(&m->lock);
    }
    if (n) {
        pthread_mutex_lock(&m->lock);
        pthread_cond_broadcast(&m->idle_cond);
        pthread_mutex_unlock(&m->lock);
    }
    free(v);
    atomic_fetch_add(&m->retention_visits, n);
    return n;
}

void logmgr_scan_stats(struct logmgr *m, struct logmgr_scan_stats *out)
{
    pthread_mutex_lock(&m->lock);
    out->retention_logs = m->rn;
    out->compacted_logs = m->ncompacted;
    out->uncleanable_logs = 0;
    for (size_t i = 0; i < m->ncompacted; i++)
        out->uncleanable_logs += m->compacted[i].ml->uncleanable;
    pthread_mutex_unlock(&m->lock);
    out->retention_visits = atomic_load(&m->retention_visits);
    out->cleaner_visits = atomic_load(&m->cleaner_visits);
}

/* ---- threads ---- */

static void *flusher_main(void *arg)
{
    struct logmgr *m = arg;
    thread_set_name("samsa-logflush");
    pthread_mutex_lock(&m->lock);
    while (!m->stop) {
        struct mlog *ml = m->qhead;
        if (!ml) {
            pthread_cond_wait(&m->work_cond, &m->lock);
            continue;
        }
        m->qhead = ml->qnext;
        if (!m->qhead)
            m->qtail = NULL;
        ml->flush_queued = false;
        ml->busy++;
        pthread_mutex_unlock(&m->lock);
        /* Appends that arrive during this fsync queue the log again and
         * are covered by the next one: group commit. */
        int rc = plog_flush(ml->l);
        if (ml->flushed)
            ml->flushed(ml->ctx, ml->l);
        pthread_mutex_lock(&m->lock);
        if (rc)
            m->flush_retry = true; /* out of descriptors: retried from the scheduler */
        ml->busy--;
        pthread_cond_broadcast(&m->idle_cond);
    }
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

static void *scheduler_main(void *arg)
{
    struct logmgr *m = arg;
    thread_set_name("samsa-logsched");
    (void)thread_set_background();
    int64_t now = clock_mono_ms();
    int64_t next_retention = now + m->retention_check_ms;
    int64_t next_rp = now + m->rp_ckpt_ms, next_ls = now + m->ls_ckpt_ms, next_hw = now + m->hw_ckpt_ms;
    int64_t ls_soon = INT64_MAX;
    int64_t next_pid_check = now + m->pid_check_ms;
    /* ckpt_changes as read before the last successful write of each:
     * a checkpoint nothing changed since is not written again (with 100
     * 000 idle partitions the high-watermark file, every 5 s, was most of
     * the idle node's CPU: a walk over every log and a 3 MB file). */
    uint64_t rp_written = UINT64_MAX, hw_written = UINT64_MAX;
    pthread_mutex_lock(&m->lock);
    while (!m->stop) {
        bool poke = m->retention_poke, ls_dirty = m->ls_dirty, co_dirty = m->co_dirty;
        bool retry = m->flush_retry;
        m->retention_poke = m->ls_dirty = m->co_dirty = m->flush_retry = false;
        pthread_mutex_unlock(&m->lock);

        now = clock_mono_ms();
        int64_t wall = clock_wall_ms();
        int64_t next = now + SCHED_MAX_SLEEP_MS;
        /* A tick walks every log only for what can be due: with 100 000
         * idle partitions the walk every 500 ms was most of the idle
         * CPU. Flushes are queued by whoever makes them due (an append
         * reaching flush.messages, a roll, a recovery) but for flush.ms,
         * which only logs with a finite one have, and for a retry after a
         * flush that failed; trash is purged while there is some. */
        bool scan_flush = retry || plog_timed_flush_logs() > 0;
        bool scan_trash = plog_trashed_segments() > 0;
        uint64_t rp_now = ckpt_changes(m, CK_RP), hw_now = ckpt_changes(m, CK_HW);
        if (now >= next_rp && rp_now == rp_written)
            next_rp = now + m->rp_ckpt_ms;
        if (now >= next_hw && hw_now == hw_written)
            next_hw = now + m->hw_ckpt_ms;
        bool ckpt_due = now >= next_rp || now >= next_hw || now >= next_ls || now >= ls_soon || co_dirty ||
                        (ls_dirty && ls_soon == INT64_MAX);
        struct snap s = {0};
        if (scan_flush || scan_trash || ckpt_due || now >= next_pid_check)
            snap_take(m, &s);
        for (size_t i = 0; i < s.n && scan_flush; i++) {
            int64_t due;
            if (plog_flush_due(s.v[i]->l, wall, &due)) {
                pthread_mutex_lock(&m->lock);
                enqueue_flush(m, s.v[i]);
                pthread_mutex_unlock(&m->lock);
            } else if (due != INT64_MAX && now + (due - wall) < next) {
                next = now + (due - wall);
            }
        }
        /* Only the logs whose due time came, or (a poke: DeleteRecords)
         * whose hook asked. */
        if (now >= next_retention || poke) {
            int64_t t0 = clock_mono_us();
            size_t n = logmgr_retention_tick(m, wall, now < next_retention);
            if (n > 0)
                slog_debug("log manager: retention looked at %zu log(s) in %.1f ms", n,
                           (double)(clock_mono_us() - t0) / 1000.0);
            if (now >= next_retention)
                next_retention = now + m->retention_check_ms;
        }
        for (size_t i = 0; i < s.n && scan_trash; i++)
            plog_purge_deleted(s.v[i]->l, wall, false);
        if (now >= next_pid_check) {
            for (size_t i = 0; i < s.n; i++)
                plog_expire_producers(s.v[i]->l, wall, m->pid_expiration_ms);
            next_pid_check = now + m->pid_check_ms;
        }
        if (ls_dirty && ls_soon == INT64_MAX)
            ls_soon = now + START_OFFSET_CKPT_DELAY_MS;
        if (now >= next_rp) {
            if (write_all(m, &s, CK_RP))
                rp_written = rp_now;
            next_rp = now + m->rp_ckpt_ms;
        }
        if (now >= next_hw) {
            if (write_all(m, &s, CK_HW))
                hw_written = hw_now;
            next_hw = now + m->hw_ckpt_ms;
        }
        if (now >= next_ls || now >= ls_soon) {
            write_all(m, &s, CK_LS);
            next_ls = now + m->ls_ckpt_ms;
            ls_soon = INT64_MAX;
        }
        if (co_dirty)
            write_all(m, &s, CK_CO);
        snap_release(m, &s);

        int64_t wake = next;
        if (next_retention < wake)
            wake = next_retention;
        if (next_rp < wake)
            wake = next_rp;
        if (next_hw < wake)
            wake = next_hw;
        if (next_ls < wake)
            wake = next_ls;
        if (ls_soon < wake)
            wake = ls_soon;
        if (next_pid_check < wake)
            wake = next_pid_check;
        int64_t sleep_ms = wake - clock_mono_ms();
        pthread_mutex_lock(&m->lock);
        if (sleep_ms > 0 && !m->stop && !m->retention_poke && !m->ls_dirty && !m->co_dirty) {
            struct timespec ts;
            clock_deadline_after(&ts, sleep_ms);
            pthread_cond_timedwait(&m->sched_cond, &m->lock, &ts);
        }
    }
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

/* Picks the dirtiest log that wants cleaning (Kafka's
 * LogCleanerManager.grabFilthiestCompactedLog): a log past
 * max.compaction.lag.ms first, else the highest dirty ratio at or above
 * its min.cleanable.dirty.ratio. Marks it cleaning and busy. Looks only
 * at compacted logs, and of those only at the ones whose cleanable state
 * can have changed since it was last found wanting (issue 12: with 100
 * 000 partitions the walk over all of them every log.cleaner.backoff.ms
 * was the idle node's largest cost once any log was compacted). */
static struct mlog *grab_filthiest(struct logmgr *m, int64_t now)
{
    pthread_mutex_lock(&m->lock);
    struct mlog **v = xmalloc((m->ncompacted ? m->ncompacted : 1) * sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < m->ncompacted; i++) {
        struct cslot *c = &m->compacted[i];
        if (c->ml->cleaning || c->ml->closing || c->ml->uncleanable)
            continue;
        /* Taken before the look below: a change during it is seen next time. */
        bool changed = plog_take_clean_changed(c->ml->l);
        if (!changed && now < c->recheck_at)
            continue;
        c->ml->busy++;
        v[n++] = c->ml;
    }
    pthread_mutex_unlock(&m->lock);
    int64_t *recheck = xmalloc((n ? n : 1) * sizeof *recheck);
    struct mlog *best = NULL;
    double best_ratio = -1;
    bool best_must = false;
    for (size_t i = 0; i < n; i++) {
        struct mlog *ml = v[i];
        recheck[i] = INT64_MAX;
        if (plog_offline(ml->l))
            continue;
        struct plog_config c;
        plog_get_config(ml->l, &c);
        struct plog_clean_state st;
        bool cleanable = plog_cleanable(ml->l, now, &st);
        recheck[i] = st.recheck_ms;
        if (!cleanable)
            continue;
        if (!st.must_clean && !st.tombstones_due && st.dirty_ratio < c.min_cleanable_dirty_ratio)
            continue;
        recheck[i] = INT64_MIN; /* wants cleaning: looked at until cleaned */
        if ((st.must_clean && !best_must) || (st.must_clean == best_must && st.dirty_ratio > best_ratio)) {
            best = ml;
            best_ratio = st.dirty_ratio;
            best_must = st.must_clean;
        }
    }
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < n; i++) {
        if (v[i]->cidx != NO_SLOT)
            m->compacted[v[i]->cidx].recheck_at = recheck[i];
        v[i]->busy--;
    }
    if (best && !best->closing && !best->cleaning) {
        best->cleaning = true;
        best->busy++;
    } else {
        best = NULL;
    }
    pthread_cond_broadcast(&m->idle_cond);
    pthread_mutex_unlock(&m->lock);
    atomic_fetch_add(&m->cleaner_visits, n);
    free(recheck);
    free(v);
    return best;
}

bool logmgr_clean_one(struct logmgr *m, int64_t now_ms)
{
    struct mlog *ml = grab_filthiest(m, now_ms);
    if (!ml)
        return false;
    struct plog_clean_stats st;
    int64_t t0 = clock_mono_ms();
    int rc = plog_clean_throttled(ml->l, now_ms, m->map_budget, &m->stop_flag, &m->clean_io, &st);
    if (rc == 0 && st.segments_in > 0)
        slog_info("log cleaner: %s: cleaned offsets %" PRId64 "..%" PRId64 " in %" PRId64
                  " ms: %d segment(s) into %d, %" PRId64 " -> %" PRId64 " bytes, %" PRId64 " of %" PRId64
                  " records kept, %" PRId64 " keys",
                  plog_dir(ml->l), st.first_dirty, st.end_offset - 1, clock_mono_ms() - t0, st.segments_in,
                  st.segments_out, st.bytes_read, st.bytes_written, st.records_kept, st.records_read, st.map_keys);
    if (rc == KERR_CORRUPT_MESSAGE)
        slog_error("log cleaner: %s: marked uncleanable: it holds a batch the cleaner cannot read (above); "
                   "not cleaned until it is opened again", plog_dir(ml->l));
    pthread_mutex_lock(&m->lock);
    ml->cleaning = false;
    ml->uncleanable |= rc == KERR_CORRUPT_MESSAGE;
    ml->busy--;
    /* Looked at again next time, whatever this pass did (a failure
     * for want of descriptors changed nothing the log would report). */
    if (ml->cidx != NO_SLOT)
        m->compacted[ml->cidx].recheck_at = INT64_MIN;
    m->co_dirty = true;
    pthread_cond_broadcast(&m->idle_cond);
    pthread_cond_signal(&m->sched_cond);
    pthread_mutex_unlock(&m->lock);
    return rc == 0 && st.segments_in > 0;
}

static void *cleaner_main(void *arg)
{
    struct logmgr *m = arg;
    thread_set_name("samsa-cleaner");
    (void)thread_set_background();
    for (;;) {
        pthread_mutex_lock(&m->lock);
        bool stop = m->stop;
        pthread_mutex_unlock(&m->lock);
        if (stop)
            break;
        if (logmgr_clean_one(m, clock_wall_ms()))
            continue;
        pthread_mutex_lock(&m->lock);
        if (!m->stop) {
            struct timespec ts;
            clock_deadline_after(&ts, m->cleaner_backoff_ms);
            pthread_cond_timedwait(&m->clean_cond, &m->lock, &ts);
        }
        pthread_mutex_unlock(&m->lock);
    }
    return NULL;
}

/* Without its threads the node would accept data it never flushes or
 * cleans: a start-up failure, as any other. */
static void die_thread(const char *which)
{
    slog_error("log manager: cannot start %s thread: %s", which, strerror(errno));
    abort();
}

void logmgr_start(struct logmgr *m)
{
    if (m->started)
        return;
    m->started = true;
    m->flushers = xcalloc((size_t)m->nflushers, sizeof *m->flushers);
    for (int i = 0; i < m->nflushers; i++)
        if ((errno = pthread_create(&m->flushers[i], NULL, flusher_main, m)) != 0)
            die_thread("a flusher");
    if ((errno = pthread_create(&m->scheduler, NULL, scheduler_main, m)) != 0)
        die_thread("the scheduler");
    m->cleaners = xcalloc((size_t)(m->ncleaners > 0 ? m->ncleaners : 1), sizeof *m->cleaners);
    for (int i = 0; i < m->ncleaners; i++)
        if ((errno = pthread_create(&m->cleaners[i], NULL, cleaner_main, m)) != 0)
            die_thread("a cleaner");
}

void logmgr_stop(struct logmgr *m)
{
    pthread_mutex_lock(&m->lock);
    /* Start-up recovery still running: let it finish (it cannot be
     * interrupted half way without leaving work for the next start). */
    while (m->pool_running > 0 || m->jhead)
        pthread_cond_wait(&m->idle_cond, &m->lock);
    m->stop = true;
    atomic_store(&m->stop_flag, true);
    pthread_cond_broadcast(&m->work_cond);
    pthread_cond_broadcast(&m->sched_cond);
    pthread_cond_broadcast(&m->clean_cond);
    pthread_mutex_unlock(&m->lock);
    if (!m->started)
        return;
    for (int i = 0; i < m->nflushers; i++)
        pthread_join(m->flushers[i], NULL);
    pthread_join(m->scheduler, NULL);
    for (int i = 0; i < m->ncleaners; i++)
        pthread_join(m->cleaners[i], NULL);
    m->started = false;
}

void logmgr_destroy(struct logmgr *m)
{
    if (!m)
        return;
    logmgr_stop(m);
    if (m->nall > 0)
        slog_error("log manager: destroyed with logs still open");
    /* Every log is closed: the maps hold their final offsets. Then, as
     * Kafka's LogManager.shutdown, each dir whose logs all closed cleanly
     * gets its clean-shutdown marker (after its checkpoints). */
    struct snap s = {NULL, 0};
    s.v = NULL;
    for (size_t i = 0; i < m->ndirs; i++) {
        struct mdir *d = &m->dirs[i];
        int e = 0;
        for (int k = CK_RP; k <= CK_HW; k++)
            if (write_ckpt(m, &s, i, (enum ckpt_kind)k) != 0)
                e = -1;
        bool open_left = false;
        for (size_t k = 0; k < m->nall; k++)
            open_left |= m->all[k]->dir == i;
        if (e == 0 && !open_left && !d->tainted && !atomic_load(&d->offline))
            write_marker(m, d);
    }
    for (size_t i = 0; i < m->ndirs; i++) {
        free(m->dirs[i].path);
        hmap_free(&m->dirs[i].rp);
        hmap_free(&m->dirs[i].hw);
        hmap_free(&m->dirs[i].ls);
        hmap_free(&m->dirs[i].co);
    }
    free(m->dirs);
    free(m->rheap);
    free(m->compacted);
    free(m->all);
    free(m->flushers);
    free(m->cleaners);
    pthread_mutex_destroy(&m->lock);
    pthread_cond_destroy(&m->work_cond);
    pthread_cond_destroy(&m->sched_cond);
    pthread_cond_destroy(&m->idle_cond);
    pthread_cond_destroy(&m->clean_cond);
    throttle_destroy(&m->clean_io);
    free(m);
}
