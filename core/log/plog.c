#include "log/plog.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log/batch_cursor.h"
#include "log/checkpoint.h"
#include "log/fsutil.h"
#include "log/partition_metadata.h"
#include "log/plog_internal.h"
#include "log/producer_state.h"
#include "log/segment.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/fdcache.h"
#include "util/sfile.h"
#include "util/slog.h"
#include "util/uuid.h"

/* A Fetch looks at a handful of headers: read a page at a time. */
#define READ_READAHEAD 4096

/* ---- helpers ---- */

void plog_mark_failed(struct plog *l)
{
    if (!atomic_exchange(&l->failed, true) && l->hooks->failed)
        l->hooks->failed(l->hooks_ctx, l);
}

bool plog_has_failed(const struct plog *l)
{
    return atomic_load(&l->failed) || (l->dir_offline && atomic_load(l->dir_offline));
}

bool plog_offline(const struct plog *l) { return plog_has_failed(l); }

int64_t plog_now_ms(void) { return clock_wall_ms(); }

static char *path_in(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = xmalloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static void push_segment(struct plog *l, struct segment *s)
{
    if (l->nsegs == l->segcap) {
        /* An idle partition has one segment: the log's seg1 holds it. */
        l->segcap *= 2;
        if (l->segs == &l->seg1) {
            l->segs = xmalloc(l->segcap * sizeof *l->segs);
            l->segs[0] = l->seg1;
        } else {
            l->segs = xrealloc(l->segs, l->segcap * sizeof *l->segs);
        }
    }
    l->segs[l->nsegs++] = s;
}

/* Atomically raises *a to v (never lowers it). */
/* Raises *a to v; whether it moved. */
static bool raise_to(_Atomic int64_t *a, int64_t v)
{
    int64_t cur = atomic_load(a);
    while (cur < v && !atomic_compare_exchange_weak(a, &cur, v))
        ;
    return cur < v;
}

/* plog_recovery_point_changes / plog_high_watermark_changes: counted
 * (release) after the value is stored, and the log manager reads the
 * count (acquire) before the values: it sees the new value, or a count
 * that moved again at its next interval. */
static _Atomic uint64_t rp_changes, hw_changes;

uint64_t plog_recovery_point_changes(void) { return atomic_load(&rp_changes); }
uint64_t plog_high_watermark_changes(void) { return atomic_load(&hw_changes); }

static void set_recovery_point(struct plog *l, int64_t v)
{
    if (atomic_exchange(&l->recovery_point, v) != v)
        atomic_fetch_add_explicit(&rp_changes, 1, memory_order_release);
}

static void set_high_watermark(struct plog *l, int64_t v)
{
    if (atomic_exchange(&l->high_watermark, v) != v)
        atomic_fetch_add_explicit(&hw_changes, 1, memory_order_release);
}

size_t plog_floor_index(const struct plog *l, int64_t offset)
{
    size_t lo = 0, hi = l->nsegs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->segs[mid]->base_offset <= offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 ? lo - 1 : 0;
}

/* The first segment with a base offset above base, or nsegs. Searching by
 * base offset rather than keeping an index keeps working when retention
 * or the cleaner change the list between two lock holds. */
size_t plog_index_after(const struct plog *l, int64_t base)
{
    size_t lo = 0, hi = l->nsegs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->segs[mid]->base_offset <= base)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A log opened without hooks or codecs points at these. */
static const struct plog_hooks no_hooks;
static const struct plog_codecs no_codecs;

/* xorshift64*: jitter draws need spread, not secrecy. */
static uint64_t next_random(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* A log's jitter seed: one getrandom per process, then a splitmix64
 * step per log (a system call per log was one of ~40 per idle log's
 * open at start-up). Never 0 (xorshift's fixed point). */
static uint64_t log_seed(void)
{
    static _Atomic uint64_t state;
    uint64_t s = atomic_load_explicit(&state, memory_order_relaxed);
    if (s == 0) {
        uint64_t r;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
            r = (uint64_t)clock_mono_us();
        uint64_t zero = 0;
        atomic_compare_exchange_strong(&state, &zero, r | 1);
    }
    uint64_t z = atomic_fetch_add_explicit(&state, 0x9E3779B97F4A7C15ULL, memory_order_relaxed) + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return z ? z : 1;
}

struct segment_opts plog_segment_opts(struct plog *l)
{
    struct segment_opts o = {l->cfg->index_interval_bytes, l->cfg->segment_index_bytes, 0, false};
    /* Kafka's LogConfig.randomSegmentJitter. */
    if (l->cfg->segment_jitter_ms > 0) {
        int64_t range = l->cfg->segment_jitter_ms < l->cfg->segment_ms ? l->cfg->segment_jitter_ms : l->cfg->segment_ms;
        if (range > 0)
            o.roll_jitter_ms = (int64_t)(next_random(&l->rng) % (uint64_t)range);
    }
    return o;
}

/* Process-wide counts that let the log manager's scheduler skip its
 * per-tick walk over every log (issue 12: 100 000 idle partitions): logs
 * whose flush.ms is finite (only they can become due by time; the other
 * reasons to flush queue the log themselves), and segments waiting in
 * some log's trash. Conservative: a count above 0 means "walk". */
static atomic_long timed_flush_logs, trashed_segments;

/* Counts c's log (d = 1 in, -1 out) where it counts. */
static void count_timed(const struct plog_config *c, long d)
{
    if (c->flush_ms != INT64_MAX)
        atomic_fetch_add(&timed_flush_logs, d);
}

long plog_timed_flush_logs(void) { return atomic_load(&timed_flush_logs); }
long plog_trashed_segments(void) { return atomic_load(&trashed_segments); }

static void plog_free(struct plog *l)
{
    if (l->cfg)
        count_timed(l->cfg, -1);
    plog_config_release(l->cfg);
    struct plog_txs *t = atomic_load(&l->txs);
    atomic_fetch_sub(&trashed_segments, (long)t->ntrash);
    for (size_t i = 0; i < l->nsegs; i++)
        segment_free(l->segs[i]);
    if (l->segs != &l->seg1)
        free(l->segs);
    for (size_t i = 0; i < t->ntrash; i++)
        segment_free(t->trash[i].seg);
    free(l->epochs);
    plog_producers_free(l);
    plog_txn_free(l);
    free(l);
}

static int64_t record_timestamp(const struct rb_header *h, const struct rb_record *r)
{
    /* Java's wrapping long addition, without signed-overflow UB. */
    return (int64_t)((uint64_t)h->base_timestamp + (uint64_t)r->timestamp_delta);
}

static int check_config(const char *dir, struct plog_config *c)
{
    if (c->segment_bytes < PLOG_MIN_SEGMENT_BYTES || c->segment_bytes > PLOG_MAX_SEGMENT_BYTES ||
        c->index_interval_bytes < 0 || c->segment_ms < 1 || c->segment_jitter_ms < 0 || c->flush_messages < 1 ||
        c->flush_ms < 0 || c->file_delete_delay_ms < 0) {
        slog_error("log: %s: a topic config is out of range (segment.bytes %" PRId64 ", index.interval.bytes %" PRId32
                   ", segment.ms %" PRId64 ", segment.jitter.ms %" PRId64 ", flush.messages %" PRId64
                   ", flush.ms %" PRId64 ")",
                   dir, c->segment_bytes, c->index_interval_bytes, c->segment_ms, c->segment_jitter_ms,
                   c->flush_messages, c->flush_ms);
        return KERR_INVALID_CONFIG;
    }
    /* Kafka accepts segment.index.bytes down to 4 and rounds it down to
     * whole entries: keep room for one entry of each index. */
    if (c->segment_index_bytes < PLOG_MIN_INDEX_BYTES)
        c->segment_index_bytes = PLOG_MIN_INDEX_BYTES;
    return 0;
}

/* ---- leader-epoch cache ---- */

/* Under epoch_lock. Kafka's LeaderEpochFileCache.assign: a new epoch
 * starts at offset; anything else is ignored. True when it changed. */
static bool epoch_assign_locked(struct plog *l, int32_t epoch, int64_t offset)
{
    if (epoch < 0)
        return false;
    if (l->nepochs > 0) {
        struct epoch_entry *last = &l->epochs[l->nepochs - 1];
        if (epoch <= last->epoch || offset < last->start_offset)
            return false;
    }
    if (l->nepochs == l->epochcap) {
        l->epochcap = l->epochcap ? l->epochcap * 2 : 1; /* most logs keep one epoch for long */
        l->epochs = xrealloc(l->epochs, l->epochcap * sizeof *l->epochs);
    }
    l->epochs[l->nepochs++] = (struct epoch_entry){epoch, offset};
    return true;
}

/* Under epoch_lock: entries starting at or after end go. */
static bool epoch_truncate_end_locked(struct plog *l, int64_t end)
{
    size_t n = l->nepochs;
    while (l->nepochs > 0 && l->epochs[l->nepochs - 1].start_offset >= end)
        l->nepochs--;
    return n != l->nepochs;
}

/* Under epoch_lock: Kafka's truncateFromStart: entries before start go,
 * except the last of them, which now starts at start. */
static bool epoch_truncate_start_locked(struct plog *l, int64_t start)
{
    size_t k = 0;
    while (k + 1 < l->nepochs && l->epochs[k + 1].start_offset <= start)
        k++;
    bool changed = k > 0;
    if (k > 0) {
        memmove(l->epochs, l->epochs + k, (l->nepochs - k) * sizeof *l->epochs);
        l->nepochs -= k;
    }
    if (l->nepochs > 0 && l->epochs[0].start_offset < start) {
        l->epochs[0].start_offset = start;
        changed = true;
    }
    return changed;
}

/* Under epoch_lock: the cache changed; leader-epoch-checkpoint must
 * follow (epoch_persist, or the flusher's next plog_flush). */
static void epoch_changed_locked(struct plog *l)
{
    l->epoch_gen++;
}

/* Not under epoch_lock: writes leader-epoch-checkpoint (fsync, rename,
 * directory sync) when it is behind the cache. Writers are serialised
 * by epoch_file_lock and each writes the cache as it is once it holds
 * that lock, so an older copy never lands after a newer one. Appenders
 * only take epoch_lock, for the copy: the file I/O never stalls them. */
static int epoch_persist(struct plog *l)
{
    int e = 0;
    slock_lock(&l->epoch_file_lock);
    slock_lock(&l->epoch_lock);
    uint64_t gen = l->epoch_gen;
    size_t n = l->nepochs;
    struct epoch_entry *copy = NULL;
    if (gen != l->epoch_saved_gen) {
        copy = xmalloc((n ? n : 1) * sizeof *copy);
        if (n)
            memcpy(copy, l->epochs, n * sizeof *copy);
    }
    slock_unlock(&l->epoch_lock);
    if (copy) {
        char *p = path_in(l->dir, CKPT_LEADER_EPOCH_FILE);
        e = ckpt_write_epochs(p, copy, n);
        if (e)
            slog_error("log: cannot write %s: %s", p, strerror(e));
        else
            l->epoch_saved_gen = gen;
        free(p);
        free(copy);
    }
    slock_unlock(&l->epoch_file_lock);
    return e;
}

static void epoch_load(struct plog *l)
{
    char *p = path_in(l->dir, CKPT_LEADER_EPOCH_FILE);
    struct epoch_entry *v;
    size_t n;
    int e = ckpt_read_epochs(p, &v, &n);
    if (e == 0) {
        free(l->epochs);
        l->epochs = v;
        l->nepochs = l->epochcap = n;
    } else if (e != ENOENT) {
        /* Rebuilt from the batches of the recovered segments; entries
         * from segments opened through their indexes are lost, as when
         * Kafka finds the file unreadable. */
        slog_warn("log: %s: ignoring unreadable %s: %s", l->dir, CKPT_LEADER_EPOCH_FILE, strerror(e));
    }
    free(p);
}

/* Recovery rebuilds the cache from the batches it reads. ctx is a
 * struct epoch_rebuild; changed tells whether the file must be written. */
struct epoch_rebuild {
    struct plog *l;
    bool changed;
};

static void epoch_visit(void *ctx, const struct rb_header *h)
{
    struct epoch_rebuild *er = ctx;
    if (epoch_assign_locked(er->l, h->partition_leader_epoch, h->base_offset))
        er->changed = true;
}

void plog_latest_epoch(struct plog *l, int32_t *epoch, int64_t *start_offset)
{
    slock_lock(&l->epoch_lock);
    *epoch = l->nepochs ? l->epochs[l->nepochs - 1].epoch : -1;
    *start_offset = l->nepochs ? l->epochs[l->nepochs - 1].start_offset : -1;
    slock_unlock(&l->epoch_lock);
}

/* Where epoch ended, under the epoch lock. The replicas' lookup (a
 * follower's truncation point) takes the largest epoch <= epoch, which
 * ends where the next starts or at the log end. A client's (Kafka's
 * endOffsetFor) differs in two corners: an epoch above the latest is
 * unknown, and one below the earliest ends where the earliest starts. */
static void end_offset_for_epoch(struct plog *l, int32_t epoch, bool client, int32_t *end_epoch, int64_t *end_offset)
{
    *end_epoch = -1;
    *end_offset = -1;
    if (epoch < 0)
        return;
    slock_lock(&l->epoch_lock);
    /* hi: the first entry above epoch; from the end, as most ask for
     * the latest epoch */
    size_t n = l->nepochs, hi = n;
    while (hi > 0 && l->epochs[hi - 1].epoch > epoch)
        hi--;
    if (hi > 0 && (!client || hi < n || l->epochs[n - 1].epoch == epoch)) {
        *end_epoch = l->epochs[hi - 1].epoch;
        *end_offset = hi < n ? l->epochs[hi].start_offset : plog_log_end_offset(l);
    } else if (client && hi == 0 && n > 0) {
        *end_epoch = epoch;
        *end_offset = l->epochs[0].start_offset;
    }
    slock_unlock(&l->epoch_lock);
}

void plog_end_offset_for_epoch(struct plog *l, int32_t epoch, int32_t *end_epoch, int64_t *end_offset)
{
    end_offset_for_epoch(l, epoch, false, end_epoch, end_offset);
}

void plog_offset_for_leader_epoch(struct plog *l, int32_t epoch, int32_t *end_epoch, int64_t *end_offset)
{
    end_offset_for_epoch(l, epoch, true, end_epoch, end_offset);
}

/* ---- open ---- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

struct dir_listing {
    int64_t *logs, *swaps, *snaps;
    size_t nlogs, nswaps, nsnaps;
    bool clean_marker; /* PLOG_CLEAN_SHUTDOWN_FILE is there */
    /* Files an open would otherwise look for one by one: an idle log
     * has neither (two failed opens a log at every start-up). */
    bool epoch_file, txnindex;
};

static void push_i64(int64_t **v, size_t *n, int64_t x)
{
    /* Capacity: 16, then doubling at each power of two. */
    if (*n == 0 || (*n >= 16 && (*n & (*n - 1)) == 0))
        *v = xrealloc(*v, (*n ? *n * 2 : 16) * sizeof **v);
    (*v)[(*n)++] = x;
}

/* Lists the segments (and .swap segments) of dir, ascending; removes
 * what an interrupted deletion or cleaning left behind: *.deleted files
 * (their segments were already out of the log) and *.cleaned files (a
 * replacement that never got as far as .swap). */
static int list_dir(struct plog *l, struct dir_listing *out)
{
    memset(out, 0, sizeof *out);
    DIR *d = fdc_opendir(l->dir);
    if (!d) {
        slog_error("log: cannot read directory %s: %s", l->dir, strerror(errno));
        return KERR_KAFKA_STORAGE_ERROR;
    }
    struct dirent *de;
    int removed = 0;
    /* readdir reports errors only through errno. */
    for (errno = 0; (de = readdir(d)) != NULL; errno = 0) {
        const char *name = de->d_name;
        int64_t base;
        if (segment_parse_name(name, SEGMENT_LOG_SUFFIX, &base)) {
            push_i64(&out->logs, &out->nlogs, base);
        } else if (strlen(name) > SEGMENT_NAME_DIGITS &&
                   (has_suffix(name, SEGMENT_DELETED_SUFFIX) || has_suffix(name, SEGMENT_CLEANED_SUFFIX))) {
            char *p = path_in(l->dir, name);
            if (unlink(p) == 0)
                removed++;
            free(p);
        } else if (segment_parse_name(name, SEGMENT_LOG_SUFFIX SEGMENT_SWAP_SUFFIX, &base)) {
            push_i64(&out->swaps, &out->nswaps, base);
        } else if (segment_parse_name(name, PSTATE_SNAPSHOT_SUFFIX, &base)) {
            /* for plog_producers_load_listed: one listing per open */
            push_i64(&out->snaps, &out->nsnaps, base);
        } else if (strcmp(name, PLOG_CLEAN_SHUTDOWN_FILE) == 0) {
            out->clean_marker = true; /* the listing answers what an lstat would */
        } else if (strcmp(name, CKPT_LEADER_EPOCH_FILE) == 0) {
            out->epoch_file = true;
        } else if (has_suffix(name, SEGMENT_TXNINDEX_SUFFIX)) {
            out->txnindex = true;
        }
    }
    int e = errno;
    closedir(d);
    if (e) {
        slog_error("log: cannot read directory %s: %s", l->dir, strerror(e));
        free(out->logs);
        free(out->swaps);
        free(out->snaps);
        return KERR_KAFKA_STORAGE_ERROR;
    }
    if (removed) {
        fs_sync_dir(l->dir);
        slog_info("log: %s: removed %d file(s) left by an interrupted deletion or cleaning", l->dir, removed);
    }
    if (out->nlogs > 1)
        qsort(out->logs, out->nlogs, sizeof *out->logs, cmp_i64);
    if (out->nswaps > 1)
        qsort(out->swaps, out->nswaps, sizeof *out->swaps, cmp_i64);
    return 0;
}

/* Unlinks the three files of the plain segment at base. */
static int unlink_segment_files(const char *dir, int64_t base)
{
    const char *exts[] = {SEGMENT_LOG_SUFFIX, INDEX_SUFFIX, TIMEINDEX_SUFFIX, SEGMENT_TXNINDEX_SUFFIX};
    int rc = 0;
    for (int i = 0; i < 4; i++) {
        char *p = segment_file_path(dir, base, exts[i]);
        if (unlink(p) != 0 && errno != ENOENT && !rc)
            rc = errno;
        free(p);
    }
    return rc;
}

/* Finishes a cleaner swap a crash interrupted (Kafka's LogLoader): a
 * .swap segment was complete and durable before it got that name, so it
 * replaces the segments in its offset range, then takes its plain name. */
static int complete_swaps(struct plog *l, struct dir_listing *ls)
{
    struct segment_opts o = plog_segment_opts(l);
    for (size_t i = 0; i < ls->nswaps; i++) {
        struct segment *s;
        int rc = segment_open(l->dir, ls->swaps[i], &o, SEGMENT_SWAP_SUFFIX, &s);
        if (rc)
            return rc;
        struct segment_load_result r;
        rc = segment_load(s, SEGMENT_LOAD_REBUILD, INT64_MAX, false, &r, NULL);
        if (rc) {
            segment_free(s);
            return rc;
        }
        int64_t from = s->base_offset, to = s->next_offset;
        size_t k = 0;
        for (size_t j = 0; j < ls->nlogs; j++) {
            int64_t b = ls->logs[j];
            /* The swap segment replaces those its range covers; keep the
             * rest (j is rewritten in place). */
            if (b >= from && b < to) {
                int e = unlink_segment_files(l->dir, b);
                if (e) {
                    slog_error("log: %s: cannot remove segment %020" PRId64 " replaced by a cleaned one: %s",
                               l->dir, b, strerror(e));
                    segment_free(s);
                    return KERR_KAFKA_STORAGE_ERROR;
                }
            } else {
                ls->logs[k++] = b;
            }
        }
        ls->nlogs = k;
        rc = segment_rename(s, "");
        if (rc == 0) {
            push_i64(&ls->logs, &ls->nlogs, from);
            qsort(ls->logs, ls->nlogs, sizeof *ls->logs, cmp_i64);
            slog_info("log: %s: completed the swap of cleaned segment %020" PRId64, l->dir, from);
        }
        segment_free(s);
        if (rc)
            return rc;
    }
    if (ls->nswaps) {
        int e = fs_sync_dir(l->dir);
        if (e) {
            slog_error("log: cannot sync directory %s: %s", l->dir, strerror(e));
            return KERR_KAFKA_STORAGE_ERROR;
        }
    }
    return 0;
}

static int load_topic_id(struct plog *l, const kuuid_t *given, bool durable, bool given_on_disk)
{
    if (given_on_disk && given && !kuuid_is_zero(given)) {
        l->topic_id = *given;
        l->has_topic_id = true;
        return 0;
    }
    bool found;
    kuuid_t on_disk;
    int rc = partition_metadata_read(l->dir, &found, &on_disk);
    if (rc)
        return rc;
    bool have_given = given && !kuuid_is_zero(given);
    if (found && have_given && !kuuid_eq(&on_disk, given)) {
        char a[UUID_STR_LEN + 1], b[UUID_STR_LEN + 1];
        uuid_to_string(on_disk.b, a);
        uuid_to_string(given->b, b);
        slog_error("log: %s: %s holds topic id %s, expected %s", l->dir, PARTITION_METADATA_FILE, a, b);
        return KERR_INCONSISTENT_TOPIC_ID;
    }
    if (!found && have_given) {
        rc = partition_metadata_write_ex(l->dir, given, durable);
        if (rc)
            return rc;
    }
    if (found) {
        l->topic_id = on_disk;
        l->has_topic_id = true;
    } else if (have_given) {
        l->topic_id = *given;
        l->has_topic_id = true;
    }
    return 0;
}

/* Deletes the segments bases[from..n) after a recovery cut an earlier
 * segment short: batches after a hole must not survive it. Returns the
 * bytes they held (for the one WARN line), or -1 on error. */
static int64_t drop_later_segments(struct plog *l, const int64_t *bases, size_t from, size_t n)
{
    int64_t bytes = 0;
    for (size_t j = from; j < n; j++) {
        char *p = segment_file_path(l->dir, bases[j], SEGMENT_LOG_SUFFIX);
        struct stat st;
        if (stat(p, &st) == 0)
            bytes += st.st_size;
        free(p);
        int e = unlink_segment_files(l->dir, bases[j]);
        if (e) {
            slog_error("log: %s: cannot delete segment %020" PRId64 ": %s", l->dir, bases[j], strerror(e));
            return -1;
        }
    }
    int e = fs_sync_dir(l->dir);
    if (e) {
        slog_error("log: cannot sync directory %s: %s", l->dir, strerror(e));
        return -1;
    }
    return bytes;
}

static const char *mode_name(enum segment_load_mode m)
{
    return m == SEGMENT_LOAD_TRUST ? "trusted" : m == SEGMENT_LOAD_RECOVER ? "recovered" : "rebuilt";
}

static int load_segments(struct plog *l, const int64_t *bases, size_t n, bool clean, int64_t recovery_point,
                         int64_t *recovered_batches, bool *epochs_changed)
{
    /* From the segment holding the recovery point on, data may not have
     * reached the disk before the crash. */
    size_t recover_from = n;
    if (!clean) {
        recover_from = 0;
        for (size_t i = 0; i < n; i++)
            if (bases[i] <= recovery_point)
                recover_from = i;
    }
    struct segment_opts o = plog_segment_opts(l);
    struct epoch_rebuild er = {l, false};
    struct segment_visitor v = {epoch_visit, &er};
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        struct segment *s;
        rc = segment_open(l->dir, bases[i], &o, "", &s);
        if (rc)
            break;
        bool last = i + 1 == n;
        enum segment_load_mode mode = i >= recover_from ? SEGMENT_LOAD_RECOVER : SEGMENT_LOAD_TRUST;
        struct segment_load_result r;
        slock_lock(&l->epoch_lock);
        rc = segment_load(s, mode, last ? INT64_MAX : bases[i + 1], last, &r, &v);
        slock_unlock(&l->epoch_lock);
        if (rc) {
            segment_free(s);
            break;
        }
        if (mode == SEGMENT_LOAD_RECOVER)
            *recovered_batches += r.batches;
        if (r.rebuild_reason)
            slog_info("log: %s: rebuilt the indexes of %020" PRId64 ".log: %s", l->dir, s->base_offset,
                      r.rebuild_reason);
        else
            slog_debug("log: %s: %020" PRId64 ".log %s, %d batch(es) read", l->dir, s->base_offset,
                       mode_name(mode), r.batches);
        push_segment(l, s);
        if (r.truncated_bytes == 0)
            continue;
        int64_t dropped = last ? 0 : drop_later_segments(l, bases, i + 1, n);
        if (dropped < 0) {
            rc = KERR_KAFKA_STORAGE_ERROR;
            break;
        }
        if (!last) {
            /* It is the last segment now: it takes appends. */
            int e = segment_unseal(s);
            if (e) {
                slog_error("log: %s: cannot resize indexes: %s", l->dir, strerror(e));
                rc = KERR_KAFKA_STORAGE_ERROR;
                break;
            }
        }
        char more[96] = "";
        if (!last)
            snprintf(more, sizeof more, "; deleted %zu later segment(s) of %" PRId64 " bytes", n - i - 1, dropped);
        slog_warn("log: %s: recovery after %s shutdown: %s in %020" PRId64 ".log at position %" PRId64
                  ", cut %" PRId64 " bytes%s; log now ends at offset %" PRId64,
                  l->dir, clean ? "clean" : "unclean", r.reason, s->base_offset, r.truncated_at,
                  r.truncated_bytes, more, s->next_offset);
        break;
    }
    *epochs_changed = er.changed;
    return rc;
}

int plog_open(const char *dir, const kuuid_t *topic_id, const struct plog_config *cfg, struct plog **out)
{
    return plog_open_ex(dir, topic_id, cfg, NULL, out);
}

int plog_open_ex(const char *dir, const kuuid_t *topic_id, const struct plog_config *cfg,
                 const struct plog_open_opts *opts, struct plog **out)
{
    *out = NULL;
    struct plog_config c = PLOG_CONFIG_INIT;
    if (cfg)
        c = *cfg;
    int rc = check_config(dir, &c);
    if (rc)
        return rc;
    struct plog_open_opts oo = PLOG_OPEN_OPTS_INIT;
    if (opts)
        oo = *opts;
    int64_t t0 = clock_mono_us();

    struct plog *l = xcalloc(1, sizeof *l + strlen(dir) + 1);
    memcpy(l->dir, dir, strlen(dir) + 1);
    size_t dl = strlen(l->dir);
    while (dl > 1 && l->dir[dl - 1] == '/')
        l->dir[--dl] = '\0';
    const char *slash = strrchr(l->dir, '/');
    l->name = slash ? slash + 1 : l->dir;
    l->cfg = plog_config_intern(&c);
    count_timed(l->cfg, 1);
    l->hooks = oo.hooks ? oo.hooks : &no_hooks;
    l->hooks_ctx = oo.hooks_ctx;
    l->codecs = oo.codecs ? oo.codecs : &no_codecs;
    l->dir_offline = oo.dir_offline;
    srw_init(&l->seg_lock);
    l->segs = &l->seg1;
    l->segcap = 1;
    struct dir_listing ls = {0};
    plog_txn_init(l);
    if (plog_producers_init(l) != 0) {
        rc = KERR_KAFKA_STORAGE_ERROR;
        goto fail;
    }
    atomic_init(&l->end_offset, 0);
    atomic_init(&l->start_offset, 0);
    atomic_init(&l->size_bytes, 0);
    atomic_init(&l->recovery_point, 0);
    atomic_init(&l->high_watermark, -1);
    atomic_init(&l->cleaner_offset, oo.cleaner_offset);
    atomic_init(&l->tombstone_expiry, INT64_MAX);
    atomic_init(&l->last_flush_ms, clock_wall_ms());
    atomic_init(&l->roll_flush_pending, false);
    atomic_init(&l->abort_clean, false);
    atomic_init(&l->failed, false);
    atomic_init(&l->retention_wanted, false);
    atomic_init(&l->clean_changed, true);
    l->rng = log_seed();

    /* The caller has just read a file in it: it exists. */
    int e = oo.topic_id_on_disk ? 0 : fs_mkdirs_ex(l->dir, NULL, !oo.defer_sync);
    if (e) {
        slog_error("log: cannot create directory %s: %s", l->dir, strerror(e));
        rc = KERR_KAFKA_STORAGE_ERROR;
        goto fail;
    }
    rc = load_topic_id(l, topic_id, !oo.defer_sync, oo.topic_id_on_disk);
    if (rc)
        goto fail;

    char *marker = path_in(l->dir, PLOG_CLEAN_SHUTDOWN_FILE);
    rc = list_dir(l, &ls);
    /* The owner vouches for a clean shutdown (its log dir's marker), or
     * the log has a marker of its own: samsa before the marker moved to
     * the log dir wrote one per partition directory. */
    bool clean = rc == 0 && (oo.clean_shutdown || ls.clean_marker);
    if (rc == 0)
        rc = complete_swaps(l, &ls);
    if (rc == 0 && (ls.epoch_file || ls.nswaps > 0))
        epoch_load(l);
    /* Without a .txnindex (none can come from elsewhere: no swap to
     * complete) the transaction index files are loaded: there are none. */
    if (rc == 0 && !ls.txnindex && ls.nswaps == 0)
        l->txn_files_loaded = true;
    int64_t recovered = 0;
    bool epochs_changed = false;
    if (rc == 0)
        rc = load_segments(l, ls.logs, ls.nlogs, clean, oo.recovery_point, &recovered, &epochs_changed);
    if (rc == 0 && l->nsegs == 0) {
        /* An empty log starts where its checkpoint said it started. */
        int64_t base = oo.log_start_offset > 0 ? oo.log_start_offset : 0;
        struct segment_opts so = plog_segment_opts(l);
        so.defer_index_room = true;
        struct segment *s;
        rc = segment_create(l->dir, base, &so, "", !oo.defer_sync, &s);
        if (rc == 0)
            push_segment(l, s);
    }
    /* From here on a crash must count as unclean: an old per-partition
     * marker goes (durably) before the first append. The log dir's
     * marker is its owner's to remove (logmgr_create). */
    if (rc == 0 && ls.clean_marker) {
        e = unlink(marker) == 0 ? fs_sync_dir(l->dir) : errno;
        if (e) {
            slog_error("log: cannot remove %s: %s", marker, strerror(e));
            rc = KERR_KAFKA_STORAGE_ERROR;
        }
    }
    free(marker);
    if (rc)
        goto fail;

    int64_t size = 0;
    for (size_t i = 0; i < l->nsegs; i++)
        size += l->segs[i]->size;
    int64_t first = l->segs[0]->base_offset, end = l->segs[l->nsegs - 1]->next_offset;
    int64_t start = oo.log_start_offset > first ? oo.log_start_offset : first;
    if (start > end)
        start = end;
    int64_t rp = clean ? end : oo.recovery_point;
    if (rp < first)
        rp = first;
    if (rp > end)
        rp = end;
    atomic_store(&l->size_bytes, size);
    atomic_store(&l->start_offset, start);
    atomic_store(&l->end_offset, end);
    set_recovery_point(l, rp);
    if (oo.high_watermark >= 0)
        set_high_watermark(l, oo.high_watermark < end ? oo.high_watermark : end);
    /* The listing's snapshots are still those on disk: nothing since
     * removed or added one. */
    rc = plog_producers_load_listed(l, ls.snaps, ls.nsnaps);
    if (rc)
        goto fail;

    slock_lock(&l->epoch_lock);
    bool ch = epoch_truncate_end_locked(l, end);
    ch |= epoch_truncate_start_locked(l, start);
    if (ch || epochs_changed)
        epoch_changed_locked(l);
    slock_unlock(&l->epoch_lock);
    epoch_persist(l);

    int64_t took_ms = (clock_mono_us() - t0) / 1000;
    /* A log with nothing to check (its segments from the recovery point
     * on were empty: an idle partition) has nothing to report; the log
     * manager's summary counts it. */
    if (!clean && ls.nlogs > 0 && recovered > 0)
        slog_info("log: %s: recovered after an unclean shutdown in %" PRId64 " ms: %zu segment(s), %" PRId64
                  " batch(es) checked from the recovery point %" PRId64 ", offsets %" PRId64 "..%" PRId64,
                  l->dir, took_ms, l->nsegs, recovered, oo.recovery_point, start, end);
    else if (!clean && ls.nlogs > 0)
        slog_debug("log: %s: nothing to recover after an unclean shutdown (%zu segment(s), empty from the "
                   "recovery point %" PRId64 "), offsets %" PRId64 "..%" PRId64,
                   l->dir, l->nsegs, oo.recovery_point, start, end);
    else
        slog_debug("log: opened %s after a clean shutdown in %" PRId64 " ms: %zu segment(s), offsets %" PRId64
                   "..%" PRId64 ", %" PRId64 " bytes",
                   l->dir, took_ms, l->nsegs, start, end, size);
    free(ls.logs);
    free(ls.swaps);
    free(ls.snaps);
    /* Recovered data is in the page cache only: have it flushed. */
    if (rp < end && l->hooks->flush_wanted)
        l->hooks->flush_wanted(l->hooks_ctx, l);
    *out = l;
    return 0;

fail:
    free(ls.logs);
    free(ls.swaps);
    free(ls.snaps);
    plog_free(l);
    return rc;
}

int plog_sync_created(struct plog *l)
{
    return fs_sync_dir(l->dir);
}

int plog_set_config(struct plog *l, const struct plog_config *cfg)
{
    struct plog_config c = *cfg;
    int rc = check_config(l->dir, &c);
    if (rc)
        return rc;
    const struct plog_config *nc = plog_config_intern(&c);
    slock_lock(&l->append_lock);
    slock_lock(&l->cfg_lock);
    const struct plog_config *old = l->cfg;
    count_timed(old, -1);
    l->cfg = nc;
    count_timed(l->cfg, 1);
    slock_unlock(&l->cfg_lock);
    /* The active segment indexes at the new interval from now on. */
    srw_wrlock(&l->seg_lock);
    l->segs[l->nsegs - 1]->index_interval_bytes = c.index_interval_bytes;
    srw_unlock(&l->seg_lock);
    slock_unlock(&l->append_lock);
    /* Every reader of the old one held append_lock or cfg_lock. */
    plog_config_release(old);
    /* Interned: the same pointer is the same config. The registry applies
     * a topic's config to each of its partitions whenever the topic
     * changes in the metadata image (100 000 of them at start-up): those
     * ask nothing. */
    if (nc != old)
        plog_note_changed(l, true, true);
    return 0;
}

void plog_get_config(struct plog *l, struct plog_config *out)
{
    slock_lock(&l->cfg_lock);
    *out = *l->cfg;
    slock_unlock(&l->cfg_lock);
}

/* ---- append ---- */

/* The new segment's directory entry must become durable: the flusher's
 * next plog_flush syncs the directory before it raises the recovery
 * point. */
static void want_meta_flush(struct plog *l)
{
    atomic_store(&l->roll_flush_pending, true);
    if (l->hooks->flush_wanted)
        l->hooks->flush_wanted(l->hooks_ctx, l);
}

/* Called with append_lock held. Starts a new active segment at base. The
 * rolled one is sealed (final time-index entry, trimmed index files) and
 * flushed later by the flusher, not here, and so is the directory entry
 * of the new one. The rule: no fsync under the append lock, which runs on
 * a network worker and would stall every producer of the partition and
 * every connection of that worker. Until that flush the recovery point
 * stays in the rolled segment, so a crash recovers it; the flush syncs
 * the directory before the recovery point may enter the new segment. */
static int roll(struct plog *l, int64_t base, struct segment **active)
{
    struct segment *old = *active;
    struct segment_opts o = plog_segment_opts(l);
    struct segment *s;
    int rc = segment_create(l->dir, base, &o, "", false, &s);
    if (rc)
        return rc;
    /* Kafka snapshots the producer state at every roll, so that an open
     * replays at most the active segment. Written by the next flush. */
    plog_producers_take_snapshot(l, base);
    /* Trimming the old segment's index files (open, ftruncate, close of
     * two files; unmapping too, for a plain segment_seal) waits on the
     * filesystem: 2-4 ms here on a quiet machine, up to 95 ms on a busy
     * one, 1-3 ms of it on a CPU. Under seg_lock every Fetch of the
     * partition (the followers' included) waited for it; after it, on
     * the appender's thread, everything else on that network worker or
     * replica fetcher loop did. So the roll publishes the new segment with
     * the final time-index entry stored and leaves the trim, without
     * unmapping (readers read only the entries), to the flusher, whose
     * flush the roll asks for anyway (plog_flush trims before it syncs).
     * The trim needs maint_lock, which keeps the cleaner, retention and
     * truncations from renaming or dropping the segment meanwhile: the
     * flusher only tries it, and a holder trims what is pending as it
     * lets go (plog_maint_unlock). A log without a flusher (no
     * flush_wanted hook) trims here, after seg_lock, when maint_lock is
     * free. A trim still pending at a crash makes the next open rebuild
     * that segment's indexes. */
    bool flusher = l->hooks->flush_wanted != NULL;
    bool quick = !flusher && slock_trylock(&l->maint_lock);
    int e = 0;
    srw_wrlock(&l->seg_lock);
    segment_seal_entries(old);
    if (!quick) {
        old->trim_pending = true;
        atomic_store(&l->trims_pending, true);
    }
    push_segment(l, s);
    srw_unlock(&l->seg_lock);
    if (quick) {
        e = segment_seal_files(old);
        plog_maint_unlock(l);
    } else if (!flusher && slock_trylock(&l->maint_lock)) {
        /* Let go between the two tries: the holder may have looked for
         * pending trims before this one was set. (The flusher tries after
         * this roll's flush_wanted, later than the flag.) */
        plog_maint_unlock(l);
    }
    if (e) {
        /* Untrimmed index files are rebuilt at the next open. */
        slog_warn("log: %s: cannot trim the indexes of %s: %s", l->dir, old->log_path, strerror(e));
    }
    *active = s;
    want_meta_flush(l);
    plog_note_changed(l, false, true); /* a new closed segment may be cleanable */
    return 0;
}

/* With maint_lock held: the trims rolls left to its holder. */
static void trim_pending_segments(struct plog *l)
{
    if (!atomic_exchange(&l->trims_pending, false))
        return;
    /* The list changes only under maint_lock, but for rolls, which
     * append to it under seg_lock; a listed segment stays alive while
     * maint_lock is held. */
    struct segment **todo = NULL;
    size_t n = 0;
    srw_rdlock(&l->seg_lock);
    for (size_t i = 0; i < l->nsegs; i++) {
        if (!l->segs[i]->trim_pending)
            continue;
        if (!todo)
            todo = xmalloc(l->nsegs * sizeof *todo);
        todo[n++] = l->segs[i];
    }
    srw_unlock(&l->seg_lock);
    for (size_t i = 0; i < n; i++) {
        int e = segment_seal_files(todo[i]);
        if (e)
            slog_warn("log: %s: cannot trim the indexes of %s: %s", l->dir, todo[i]->log_path, strerror(e));
        srw_wrlock(&l->seg_lock);
        todo[i]->trim_pending = false;
        srw_unlock(&l->seg_lock);
    }
    free(todo);
}

void plog_maint_unlock(struct plog *l)
{
    for (;;) {
        trim_pending_segments(l);
        slock_unlock(&l->maint_lock);
        /* A roll that set trims_pending after the look above, or the
         * flusher, tries the lock after the flag is set: one of the two
         * sees the other. */
        if (!atomic_load(&l->trims_pending) || !slock_trylock(&l->maint_lock))
            return;
    }
}

/* Kafka's LogSegment.shouldRoll (all but "empty segments take anything",
 * which the caller checks). */
static bool should_roll(const struct plog *l, const struct segment *seg, size_t len, int64_t last, size_t nbatches,
                        int64_t max_ts, int64_t now)
{
    if (seg->size > l->cfg->segment_bytes - (int64_t)len)
        return true;
    if (last - seg->base_offset > INT32_MAX)
        return true;
    if (segment_index_room(seg) < nbatches)
        return true;
    int64_t waited = seg->first_batch_timestamp >= 0 ? max_ts - seg->first_batch_timestamp : now - seg->created_ms;
    return waited > l->cfg->segment_ms - seg->roll_jitter_ms;
}

/* Who appends: Kafka's AppendOrigin. */
enum append_origin { ORIGIN_CLIENT, ORIGIN_REPLICATION, ORIGIN_COORDINATOR };

static int append_impl(struct plog *l, uint8_t *batches, size_t len, int32_t leader_epoch,
                       int64_t append_time_ms_or_minus1, enum append_origin origin, uint64_t guard,
                       struct plog_append_result *res);

/* A marker batch now in the segment of seg_base: the producer state and
 * the transaction side (LSO, .txnindex) follow. Under append_lock. */
static void producers_marker(struct plog *l, const uint8_t *batch, size_t size, const struct rb_header *h,
                             int64_t seg_base)
{
    int16_t type;
    int32_t cepoch;
    if (plog_marker_of(batch, size, &type, &cepoch) != 0)
        return; /* not a marker Kafka would act on either */
    struct ps_completed_txn done;
    if (l->txs->nverify)
        plog_txn_verify_clear(l, h->producer_id);
    int c = pstate_update_marker(&l->ps, h, type, cepoch, &done);
    if (c != 0 && c != 1) {
        slog_warn("log: %s: out of memory recording the marker of producer %" PRId64, l->dir, h->producer_id);
        return;
    }
    if (c == 1 && plog_txn_completed(l, &done, seg_base) != 0)
        slog_warn("log: %s: the aborted transaction of producer %" PRId64 " at %" PRId64
                  " is not in its .txnindex file; the next open rebuilds it only from the snapshot's offset",
                  l->dir, h->producer_id, h->base_offset);
}

int plog_append(struct plog *l, uint8_t *batches, size_t len, int32_t leader_epoch, int64_t append_time_ms_or_minus1,
                struct plog_append_result *res)
{
    return append_impl(l, batches, len, leader_epoch, append_time_ms_or_minus1, ORIGIN_CLIENT, PLOG_GUARD_UNCHECKED,
                       res);
}

int plog_append_verified(struct plog *l, uint8_t *batches, size_t len, int32_t leader_epoch,
                         int64_t append_time_ms_or_minus1, uint64_t guard, struct plog_append_result *res)
{
    return append_impl(l, batches, len, leader_epoch, append_time_ms_or_minus1, ORIGIN_CLIENT, guard, res);
}

int plog_append_coordinator(struct plog *l, uint8_t *batches, size_t len, int32_t leader_epoch, uint64_t guard,
                            struct plog_append_result *res)
{
    return append_impl(l, batches, len, leader_epoch, -1, ORIGIN_COORDINATOR, guard, res);
}

int plog_append_follower(struct plog *l, const uint8_t *batches, size_t len, struct plog_append_result *res)
{
    /* Nothing is written into the batches on this path. */
    return append_impl(l, (uint8_t *)batches, len, -1, -1, ORIGIN_REPLICATION, PLOG_GUARD_UNCHECKED, res);
}

static int append_impl(struct plog *l, uint8_t *batches, size_t len, int32_t leader_epoch,
                       int64_t append_time_ms_or_minus1, enum append_origin origin, uint64_t guard,
                       struct plog_append_result *res)
{
    struct sfile *pin = NULL; /* the active file while it is written */
    bool follower = origin == ORIGIN_REPLICATION;
    if (res) {
        res->base_offset = res->last_offset = -1;
        res->log_append_time = -1;
        res->log_start_offset = atomic_load(&l->start_offset);
        res->duplicate = false;
    }
    if (len == 0)
        return KERR_CORRUPT_MESSAGE;
    if (len > INT32_MAX)
        return KERR_RECORD_LIST_TOO_LARGE;

    /* Check the framing of every batch before touching any of them. */
    int64_t noffsets = 0, max_ts = RB_NO_TIMESTAMP;
    int64_t first_base = -1, prev_last = -1;
    size_t nbatches = 0;
    bool has_pid = false;
    for (size_t pos = 0; pos < len;) {
        size_t size;
        struct rb_header h;
        if (rb_frame(batches + pos, len - pos, &size) != 0 || rb_parse_header(batches + pos, size, &h) != 0 ||
            h.last_offset_delta < 0)
            return KERR_CORRUPT_MESSAGE;
        if (follower) {
            /* The leader's offsets are kept: they must go up, and the
             * bytes must be what the producer's CRC covers. */
            if (!rb_crc_ok(batches + pos, size) || h.base_offset <= prev_last || h.base_offset < 0)
                return KERR_CORRUPT_MESSAGE;
            if (first_base < 0)
                first_base = h.base_offset;
            prev_last = rb_last_offset(&h);
        }
        noffsets += (int64_t)h.last_offset_delta + 1;
        has_pid |= rb_has_producer_id(&h);
        if (h.max_timestamp > max_ts)
            max_ts = h.max_timestamp;
        nbatches++;
        pos += size;
    }
    if (plog_has_failed(l))
        return KERR_KAFKA_STORAGE_ERROR;

    /* The LogAppendTime rewrite touches CRC-covered bytes but not the
     * offsets, so its CRC pass runs before taking the lock. */
    if (append_time_ms_or_minus1 != -1) {
        for (size_t pos = 0; pos < len;) {
            size_t size = (size_t)be32_read(batches + pos + RB_OFF_BATCH_LENGTH) + RB_LOG_OVERHEAD;
            rb_set_max_timestamp_and_type(batches + pos, size, RB_LOG_APPEND_TIME, append_time_ms_or_minus1);
            pos += size;
        }
        max_ts = append_time_ms_or_minus1;
    }

    int rc = 0;
    slock_lock(&l->append_lock);
    if (plog_has_failed(l)) {
        rc = KERR_KAFKA_STORAGE_ERROR;
        goto out;
    }
    for (size_t pos = 0; pos < len;) {
        size_t size = (size_t)be32_read(batches + pos + RB_OFF_BATCH_LENGTH) + RB_LOG_OVERHEAD;
        if ((int64_t)size > l->cfg->segment_bytes) {
            rc = KERR_RECORD_LIST_TOO_LARGE;
            goto out;
        }
        pos += size;
    }
    int64_t base = atomic_load_explicit(&l->end_offset, memory_order_relaxed);
    if (follower) {
        /* Kafka's UnexpectedAppendOffsetException: a follower appends
         * only past its log end (compaction may leave gaps). */
        if (first_base < base) {
            rc = KERR_OFFSET_OUT_OF_RANGE;
            goto out;
        }
        base = first_base;
        noffsets = prev_last - first_base + 1;
    }
    if (noffsets > INT64_MAX - base) {
        rc = KERR_RECORD_LIST_TOO_LARGE;
        goto out;
    }
    if (has_pid && !follower) {
        /* Kafka's analyzeAndValidateProducerState (origins CLIENT and COORDINATOR): under
         * the append lock, so a retry racing its original sees it. */
        for (size_t pos = 0; pos < len;) {
            struct rb_header h;
            rb_parse_header(batches + pos, len - pos, &h);
            struct ps_batch dup;
            int c;
            if (rb_is_control(&h)) {
                /* A transaction marker (WriteTxnMarkers): its control
                 * record carries the coordinator epoch. */
                int16_t type;
                int32_t cepoch;
                c = plog_marker_of(batches + pos, (size_t)rb_batch_size(&h), &type, &cepoch);
                if (c == 0)
                    c = pstate_check_marker(&l->ps, &h, cepoch);
            } else {
                c = origin == ORIGIN_COORDINATOR ? pstate_check_coordinator(&l->ps, &h) : pstate_check(&l->ps, &h, &dup);
                if (c == 0 && guard != PLOG_GUARD_UNCHECKED && rb_is_transactional(&h)) {
                    const struct ps_entry *pe = pstate_find(&l->ps, h.producer_id);
                    if (!pe || pe->current_txn_first_offset < 0)
                        c = plog_txn_verify_check(l, h.producer_id, guard);
                }
            }
            if (c == PSTATE_DUPLICATE) {
                if (res) {
                    res->base_offset = dup.first_offset;
                    res->last_offset = dup.last_offset;
                    res->duplicate = true;
                }
                goto out;
            }
            if (c) {
                rc = c;
                goto out;
            }
            pos += (size_t)rb_batch_size(&h);
        }
    }
    int64_t last = base + noffsets - 1;
    struct segment *seg = l->segs[l->nsegs - 1];
    if (seg->unseal_pending) {
        /* The first append since a clean open: the index files get their
         * room now (segment.h, unseal_pending). Once per log life; a
         * resize unmaps, so readers are held out meanwhile. */
        srw_wrlock(&l->seg_lock);
        int e = segment_unseal(seg);
        srw_unlock(&l->seg_lock);
        if (e) {
            slog_error("log: %s: cannot resize indexes: %s", l->dir, strerror(e));
            rc = KERR_KAFKA_STORAGE_ERROR; /* nothing written; retriable */
            goto out;
        }
    }
    /* An empty segment takes anything (a batch above segment.bytes was
     * refused above). */
    if (seg->size > 0 && should_roll(l, seg, len, last, nbatches, max_ts, clock_wall_ms())) {
        rc = roll(l, base, &seg);
        if (rc)
            goto out;
    }
    if (last - seg->base_offset > INT32_MAX) {
        rc = KERR_RECORD_LIST_TOO_LARGE;
        goto out;
    }
    /* The index pages this append may store into get their disk blocks
     * now: on a full disk, a store into a hole of the (sparse, mapped)
     * index would be SIGBUS after the bytes were written; this way the
     * append fails whole, with nothing written, and the log stays online. */
    /* The active file stays open (pinned) from the write to its fsync, so
     * the fsync cannot meet EMFILE after a successful write. */
    int pin_err;
    pin = segment_file(seg, &pin_err);
    if (!pin) {
        rc = KERR_KAFKA_STORAGE_ERROR; /* nothing written; retriable */
        goto out;
    }
    int re = segment_reserve_index(seg, nbatches);
    if (re) {
        slog_error("log: %s: cannot allocate index space for %zu batch(es): %s", seg->log_path, nbatches,
                   strerror(re));
        rc = KERR_KAFKA_STORAGE_ERROR;
        goto out;
    }
    /* A new leader epoch goes into the cache here; the checkpoint file is
     * written by the next plog_flush (the flusher's; no fsync under
     * append_lock, see roll()), before the recovery point passes the
     * epoch's first offset. A crash before that recovers the batches from
     * the recovery point on and rebuilds the epoch from them. */
    slock_lock(&l->epoch_lock);
    bool epochs_changed = false;
    if (follower) {
        /* The leader's epochs, from the batches (Kafka's follower
         * append assigns each batch's partitionLeaderEpoch). */
        for (size_t pos = 0; pos < len;) {
            struct rb_header h;
            rb_parse_header(batches + pos, len - pos, &h);
            epochs_changed |= epoch_assign_locked(l, h.partition_leader_epoch, h.base_offset);
            pos += (size_t)rb_batch_size(&h);
        }
    } else {
        epochs_changed = epoch_assign_locked(l, leader_epoch, base);
    }
    if (epochs_changed)
        epoch_changed_locked(l);
    slock_unlock(&l->epoch_lock);

    int64_t next = base;
    for (size_t pos = 0; !follower && pos < len;) {
        size_t size = (size_t)be32_read(batches + pos + RB_OFF_BATCH_LENGTH) + RB_LOG_OVERHEAD;
        int32_t delta = (int32_t)be32_read(batches + pos + RB_OFF_LAST_OFFSET_DELTA);
        rb_set_base_offset(batches + pos, next);
        rb_set_partition_leader_epoch(batches + pos, leader_epoch);
        next += (int64_t)delta + 1;
        pos += size;
    }
    if (follower)
        next = last + 1;

    bool cut_ok;
    int e = segment_write(seg, batches, len, &cut_ok);
    if (e) {
        slog_error("log: %s: write of %zu bytes at %" PRId64 " failed: %s%s", seg->log_path, len, seg->size,
                   strerror(e), cut_ok ? "" : "; could not cut the partial write, log taken offline");
        if (!cut_ok)
            plog_mark_failed(l);
        rc = KERR_KAFKA_STORAGE_ERROR;
        goto out;
    }
    if (l->cfg->fsync_each_append) {
        e = segment_sync(seg);
        if (e) {
            /* After a failed fsync the page cache may say "clean" for data
             * that never reached the disk; nothing about the file can be
             * trusted, so the log goes offline (as Kafka's log dir does). */
            slog_error("log: %s: fdatasync failed: %s; log taken offline", seg->log_path, strerror(e));
            segment_cut_to_size(seg);
            plog_mark_failed(l);
            rc = KERR_KAFKA_STORAGE_ERROR;
            goto out;
        }
    }

    int64_t start_pos = seg->size;
    srw_wrlock(&l->seg_lock);
    for (size_t pos = 0; pos < len;) {
        struct rb_header h;
        rb_parse_header(batches + pos, len - pos, &h);
        segment_note_batch(seg, &h, start_pos + (int64_t)pos);
        pos += (size_t)rb_batch_size(&h);
    }
    srw_unlock(&l->seg_lock);
    for (size_t pos = 0; has_pid && pos < len;) {
        struct rb_header h;
        rb_parse_header(batches + pos, len - pos, &h);
        size_t size = (size_t)rb_batch_size(&h);
        if (rb_is_control(&h)) {
            producers_marker(l, batches + pos, size, &h, seg->base_offset);
        } else {
            const struct ps_entry *pe = rb_is_transactional(&h) ? pstate_find(&l->ps, h.producer_id) : NULL;
            bool opens = rb_is_transactional(&h) && (!pe || pe->current_txn_first_offset < 0);
            if (pstate_update(&l->ps, &h) != 0)
                slog_warn("log: %s: out of memory recording producer %" PRId64 "; a retry of this batch may be "
                          "appended again", l->dir, h.producer_id);
            else if (opens)
                plog_txn_opened(l, h.base_offset);
            if (opens && l->txs->nverify)
                plog_txn_verify_clear(l, h.producer_id);
        }
        pos += size;
    }
    /* Retention can become due earlier than the owner was told: for the
     * first data of an empty log (time), and for any append with a
     * finite retention.bytes. Once per retention check at most: a
     * relaxed load while the request is pending. */
    bool was_empty = atomic_fetch_add(&l->size_bytes, (int64_t)len) == 0;
    atomic_store_explicit(&l->end_offset, next, memory_order_release);
    if (was_empty || (l->cfg->retention_bytes >= 0 && l->cfg->cleanup_delete))
        plog_note_changed(l, true, false);

    if (!l->cfg->fsync_each_append && l->hooks->flush_wanted &&
        next - atomic_load(&l->recovery_point) >= l->cfg->flush_messages)
        l->hooks->flush_wanted(l->hooks_ctx, l);

    if (res) {
        res->base_offset = base;
        res->last_offset = next - 1;
        res->log_append_time = append_time_ms_or_minus1;
        res->log_start_offset = atomic_load(&l->start_offset);
    }
out:
    slock_unlock(&l->append_lock);
    sfile_unref(pin);
    return rc;
}

/* ---- read ---- */

/* Reads batch headers of [pos, limit) of one segment. *found is false
 * when no batch there ends at or after offset (look in the next segment).
 * Otherwise res describes the batches taken (possibly none, when the first
 * one is past the cap or, without min_one, larger than max_bytes). */
static int read_segment(struct plog *l, const char *what, struct sfile *f, int64_t pos, int64_t limit, int64_t offset,
                        int64_t cap, int32_t max_bytes, bool min_one, bool *found, struct plog_read_result *res)
{
    struct bcursor c;
    bcur_init(&c, f->fd, pos, limit, READ_READAHEAD);
    struct rb_header h = {0};
    int st;
    *found = false;
    while ((st = bcur_header(&c, &h)) == BCUR_OK) {
        if (rb_last_offset(&h) >= offset) {
            *found = true;
            break;
        }
        bcur_advance(&c, rb_batch_size(&h));
    }
    int64_t first_pos = c.pos, first_base = h.base_offset, total = 0, next = offset;
    while (st == BCUR_OK) {
        int64_t size = rb_batch_size(&h);
        if (rb_last_offset(&h) >= cap)
            break;
        if (total + size > max_bytes && !(total == 0 && min_one))
            break;
        if (total + size > INT32_MAX)
            break;
        total += size;
        next = rb_last_offset(&h) + 1;
        bcur_advance(&c, size);
        st = bcur_header(&c, &h);
    }
    bcur_free(&c);
    if (st == BCUR_IOERR || st == BCUR_BAD) {
        /* Published bytes are whole batches: anything else is damage. */
        slog_error("log: %s/%s: reading at %" PRId64 ": %s", l->dir, what, c.pos,
                   st == BCUR_IOERR ? strerror(c.err) : c.reason);
        return KERR_KAFKA_STORAGE_ERROR;
    }
    if (total > 0) {
        res->file = sfile_ref(f);
        res->file_pos = first_pos;
        res->len = (int32_t)total;
        res->first_base_offset = first_base;
        res->next_offset = next;
    }
    return 0;
}

int plog_read(struct plog *l, int64_t offset, int32_t max_bytes, bool min_one_batch, int64_t max_offset_exclusive,
              struct plog_read_result *res)
{
    res->file = NULL;
    res->file_pos = 0;
    res->len = 0;
    res->first_base_offset = -1;
    res->next_offset = offset;
    if (plog_has_failed(l))
        return KERR_KAFKA_STORAGE_ERROR;
    int64_t end = atomic_load_explicit(&l->end_offset, memory_order_acquire);
    int64_t start = atomic_load(&l->start_offset);
    if (offset < start || offset > end)
        return KERR_OFFSET_OUT_OF_RANGE;
    int64_t cap = end;
    if (max_offset_exclusive >= 0 && max_offset_exclusive < cap)
        cap = max_offset_exclusive;
    if (offset >= cap)
        return 0;
    if (max_bytes < 0)
        max_bytes = 0;

    /* Walk forward from the floor segment: a segment may hold no batch at
     * or after offset (offsets can have gaps), as in Kafka's LocalLog.read. */
    int64_t seg_base = -1;
    for (;;) {
        srw_rdlock(&l->seg_lock);
        size_t i = seg_base < 0 ? plog_floor_index(l, offset) : plog_index_after(l, seg_base);
        if (i >= l->nsegs) {
            srw_unlock(&l->seg_lock);
            return 0;
        }
        struct segment *s = l->segs[i];
        seg_base = s->base_offset;
        int64_t pos = oidx_lookup(&s->oidx, offset).position;
        int64_t limit = s->size;
        int fe;
        struct sfile *f = segment_file(s, &fe);
        srw_unlock(&l->seg_lock);
        if (!f)
            return KERR_KAFKA_STORAGE_ERROR; /* retriable; nothing goes offline (fdc_is_resource) */

        char what[SEGMENT_NAME_DIGITS + sizeof SEGMENT_LOG_SUFFIX];
        snprintf(what, sizeof what, "%020" PRId64 "%s", seg_base, SEGMENT_LOG_SUFFIX);
        bool found;
        int rc = read_segment(l, what, f, pos, limit, offset, cap, max_bytes, min_one_batch, &found, res);
        sfile_unref(f);
        if (rc || found)
            return rc;
    }
}

/* ---- timestamps ---- */

/* Iterates the records of the batch at c->pos (header h), decompressing
 * through the log's codec when needed. *it points into c's buffer or
 * into *scratch (the caller frees it). KERR_UNSUPPORTED_COMPRESSION_TYPE
 * when the batch is compressed and no codec is there. */
static int batch_records(struct plog *l, struct bcursor *c, const struct rb_header *h, struct buf *scratch,
                         struct rb_record_iter *it)
{
    const uint8_t *p;
    size_t size = (size_t)rb_batch_size(h);
    int st = bcur_batch(c, size, &p);
    if (st != BCUR_OK)
        return st == BCUR_IOERR ? KERR_KAFKA_STORAGE_ERROR : KERR_CORRUPT_MESSAGE;
    if (rb_codec(h) == RB_CODEC_NONE)
        return rb_record_iter_init_batch(it, p, size) == 0 ? 0 : KERR_CORRUPT_MESSAGE;
    if (!l->codecs->decompress)
        return KERR_UNSUPPORTED_COMPRESSION_TYPE;
    buf_reset(scratch);
    int rc = l->codecs->decompress(l->codecs->ctx, rb_codec(h), p + RB_HEADER_SIZE, size - RB_HEADER_SIZE, scratch);
    if (rc)
        return rc;
    rb_record_iter_init(it, scratch->data, scratch->len, h->records_count);
    return 0;
}

/* *offset: the first record of the batch at c->pos (header h) whose
 * timestamp is == target (exact) or >= target, at or above min_offset;
 * -1 when none. For CreateTime batches; a compressed batch without a
 * codec gives KERR_UNSUPPORTED_COMPRESSION_TYPE. */
static int find_record(struct plog *l, struct bcursor *c, const struct rb_header *h, int64_t target, bool exact,
                       int64_t min_offset, int64_t *offset, int64_t *timestamp)
{
    *offset = -1;
    struct buf scratch = BUF_INIT;
    struct rb_record_iter it;
    int rc = batch_records(l, c, h, &scratch, &it);
    if (rc) {
        buf_free(&scratch);
        return rc;
    }
    struct rb_record r;
    int n;
    while ((n = rb_record_next(&it, &r)) == 1) {
        int64_t ts = record_timestamp(h, &r);
        int64_t off = h->base_offset + r.offset_delta;
        if ((exact ? ts == target : ts >= target) && off >= min_offset) {
            *offset = off;
            *timestamp = ts;
            break;
        }
    }
    buf_free(&scratch);
    return n < 0 ? KERR_CORRUPT_MESSAGE : 0;
}

/* Searches [pos, limit) of one segment for the first record with
 * timestamp >= ts and offset >= min_offset, as Kafka's
 * FileRecords.searchForTimestamp. */
static int search_timestamp(struct plog *l, struct sfile *f, int64_t pos, int64_t limit, int64_t ts,
                            int64_t min_offset, int64_t *offset, int64_t *timestamp)
{
    struct bcursor c;
    bcur_init(&c, f->fd, pos, limit, READ_READAHEAD);
    struct rb_header h;
    int st, rc = 0;
    while ((st = bcur_header(&c, &h)) == BCUR_OK) {
        if (h.max_timestamp >= ts && rb_last_offset(&h) >= min_offset) {
            if (rb_timestamp_type(&h) == RB_LOG_APPEND_TIME) {
                /* Every record's timestamp is maxTimestamp. */
                *offset = h.base_offset > min_offset ? h.base_offset : min_offset;
                *timestamp = h.max_timestamp;
                break;
            }
            rc = find_record(l, &c, &h, ts, false, min_offset, offset, timestamp);
            if (rc == KERR_UNSUPPORTED_COMPRESSION_TYPE) {
                /* No codec: batch granularity; the base offset may be a
                 * few records early, which a consumer seeking by time
                 * tolerates. */
                rc = 0;
                *offset = h.base_offset > min_offset ? h.base_offset : min_offset;
                *timestamp = h.max_timestamp;
                break;
            }
            if (rc || *offset >= 0)
                break;
        }
        bcur_advance(&c, rb_batch_size(&h));
    }
    bcur_free(&c);
    if (rc == 0 && (st == BCUR_IOERR || st == BCUR_BAD)) {
        slog_error("log: %s: timestamp search at %" PRId64 ": %s", l->dir, c.pos,
                   st == BCUR_IOERR ? strerror(c.err) : c.reason);
        rc = KERR_KAFKA_STORAGE_ERROR;
    }
    return rc;
}

int plog_offset_for_timestamp(struct plog *l, int64_t ts, int64_t *offset, int64_t *timestamp)
{
    *offset = -1;
    *timestamp = -1;
    if (plog_has_failed(l))
        return KERR_KAFKA_STORAGE_ERROR;
    int64_t start = atomic_load(&l->start_offset);
    int64_t seg_base = -1;
    for (;;) {
        srw_rdlock(&l->seg_lock);
        size_t i = seg_base < 0 ? 0 : plog_index_after(l, seg_base);
        if (i >= l->nsegs) {
            srw_unlock(&l->seg_lock);
            return 0;
        }
        struct segment *s = l->segs[i];
        seg_base = s->base_offset;
        /* Kafka picks the first segment whose largest timestamp reaches ts. */
        if (s->max_timestamp < ts || s->next_offset <= start) {
            srw_unlock(&l->seg_lock);
            continue;
        }
        int64_t from = tidx_lookup(&s->tidx, ts).offset;
        if (from < start)
            from = start;
        int64_t pos = oidx_lookup(&s->oidx, from).position;
        int64_t limit = s->size;
        int fe;
        struct sfile *f = segment_file(s, &fe);
        srw_unlock(&l->seg_lock);
        if (!f)
            return KERR_KAFKA_STORAGE_ERROR;

        int rc = search_timestamp(l, f, pos, limit, ts, start, offset, timestamp);
        sfile_unref(f);
        if (rc || *offset >= 0)
            return rc;
        /* Only a maxTimestamp field above every record's timestamp gets
         * here; keep looking in later segments. */
    }
}

int plog_max_timestamp(struct plog *l, int64_t *offset, int64_t *timestamp)
{
    *offset = -1;
    *timestamp = -1;
    if (plog_has_failed(l))
        return KERR_KAFKA_STORAGE_ERROR;
    srw_rdlock(&l->seg_lock);
    /* The first segment holding the largest timestamp (Scala's maxBy). */
    struct segment *best = NULL;
    for (size_t i = 0; i < l->nsegs; i++)
        if (l->segs[i]->max_timestamp != RB_NO_TIMESTAMP &&
            (!best || l->segs[i]->max_timestamp > best->max_timestamp))
            best = l->segs[i];
    if (!best) {
        srw_unlock(&l->seg_lock);
        return 0;
    }
    int64_t max_ts = best->max_timestamp;
    int64_t pos = oidx_lookup(&best->oidx, best->offset_of_max_timestamp).position;
    int64_t limit = best->size;
    int fe;
    struct sfile *f = segment_file(best, &fe);
    srw_unlock(&l->seg_lock);
    if (!f)
        return KERR_KAFKA_STORAGE_ERROR;

    struct bcursor c;
    bcur_init(&c, f->fd, pos, limit, READ_READAHEAD);
    struct rb_header h;
    int st, rc = 0;
    while ((st = bcur_header(&c, &h)) == BCUR_OK) {
        if (h.max_timestamp == max_ts) {
            *timestamp = max_ts;
            *offset = h.base_offset;
            /* LogAppendTime: all records share the timestamp, the first
             * has it. Otherwise the first record that has it, which for a
             * compressed batch needs its codec (base offset without). */
            if (rb_timestamp_type(&h) == RB_CREATE_TIME) {
                int64_t off, ts;
                rc = find_record(l, &c, &h, max_ts, true, h.base_offset, &off, &ts);
                if (rc == KERR_UNSUPPORTED_COMPRESSION_TYPE)
                    rc = 0;
                else if (rc == 0 && off >= 0)
                    *offset = off;
            }
            break;
        }
        bcur_advance(&c, rb_batch_size(&h));
    }
    bcur_free(&c);
    sfile_unref(f);
    if (rc == 0 && (st == BCUR_IOERR || st == BCUR_BAD)) {
        slog_error("log: %s: max timestamp lookup at %" PRId64 ": %s", l->dir, c.pos,
                   st == BCUR_IOERR ? strerror(c.err) : c.reason);
        rc = KERR_KAFKA_STORAGE_ERROR;
    }
    if (rc) {
        *offset = -1;
        *timestamp = -1;
    }
    return rc;
}

/* ---- getters ---- */

int64_t plog_log_end_offset(const struct plog *l)
{
    return atomic_load_explicit(&l->end_offset, memory_order_acquire);
}

int64_t plog_log_start_offset(const struct plog *l) { return atomic_load(&l->start_offset); }

int64_t plog_recovery_point(const struct plog *l) { return atomic_load(&l->recovery_point); }

int64_t plog_size_bytes(const struct plog *l) { return atomic_load(&l->size_bytes); }

int64_t plog_cleaner_offset(const struct plog *l) { return atomic_load(&l->cleaner_offset); }

int plog_segment_count(struct plog *l)
{
    srw_rdlock(&l->seg_lock);
    int n = (int)l->nsegs;
    srw_unlock(&l->seg_lock);
    return n;
}

int plog_segment_bases(struct plog *l, int64_t *bases, int max)
{
    srw_rdlock(&l->seg_lock);
    int n = (int)l->nsegs;
    for (int i = 0; i < n && i < max; i++)
        bases[i] = l->segs[i]->base_offset;
    srw_unlock(&l->seg_lock);
    return n;
}

const kuuid_t *plog_topic_id(const struct plog *l) { return l->has_topic_id ? &l->topic_id : NULL; }

const char *plog_dir(const struct plog *l) { return l->dir; }
const char *plog_name(const struct plog *l) { return l->name; }
const struct plog_hooks *plog_hooks(const struct plog *l) { return l->hooks; }
void *plog_hooks_ctx(const struct plog *l) { return l->hooks_ctx; }

bool plog_topic_partition(const struct plog *l, const char **topic, size_t *topic_len, int32_t *partition)
{
    const char *dash = strrchr(l->name, '-');
    if (!dash || dash == l->name || !dash[1])
        return false;
    int64_t v = 0;
    for (const char *q = dash + 1; *q; q++) {
        if (*q < '0' || *q > '9' || v > INT32_MAX / 10)
            return false;
        v = v * 10 + (*q - '0');
    }
    if (v > INT32_MAX)
        return false;
    *topic = l->name;
    *topic_len = (size_t)(dash - l->name);
    *partition = (int32_t)v;
    return true;
}

void plog_set_high_watermark(struct plog *l, int64_t hw) { set_high_watermark(l, hw); }

int64_t plog_known_high_watermark(const struct plog *l) { return atomic_load(&l->high_watermark); }

int64_t plog_high_watermark(const struct plog *l)
{
    int64_t hw = atomic_load(&l->high_watermark);
    int64_t end = plog_log_end_offset(l);
    return hw < 0 || hw > end ? end : hw;
}

/* ---- flush ---- */

int plog_flush(struct plog *l)
{
    if (plog_has_failed(l))
        return KERR_KAFKA_STORAGE_ERROR;
    uint64_t res0 = fdc_resource_failures();
    /* Rolls leave the old segments' index trims here (roll), done before
     * the sync so that it covers the trimmed lengths; a holder of
     * maint_lock does them instead as it lets go. */
    if (atomic_load(&l->trims_pending) && slock_trylock(&l->maint_lock))
        plog_maint_unlock(l);
    slock_lock(&l->flush_lock);
    int64_t target = atomic_load_explicit(&l->end_offset, memory_order_acquire);
    int64_t rp = atomic_load(&l->recovery_point);
    bool rolled = atomic_exchange(&l->roll_flush_pending, false);
    if (target <= rp && !rolled) {
        slock_unlock(&l->flush_lock);
        return 0;
    }
    /* The segments from the one holding the recovery point to the one
     * holding target: the data below target is in them (appends publish
     * the end offset after the write). Index files only for the segments
     * before the last: recovery trusts the indexes of segments wholly
     * below the recovery point's segment and rebuilds that segment's, so
     * an fsync per flush is one file, not three. */
    /* The fds: the log files' through the fd cache (pinned until synced),
     * the dirty index files' opened for the sync. Running out of
     * descriptors is no disk failure: the flush gives up without taking
     * the log offline and the next one tries again. */
    srw_rdlock(&l->seg_lock);
    size_t from = plog_floor_index(l, rp), to = plog_floor_index(l, target);
    size_t n = (to - from + 1) * 3;
    struct sfile **files = xmalloc(n * sizeof *files);
    size_t k = 0;
    int64_t sealed_below = to < l->nsegs ? l->segs[to]->base_offset : INT64_MAX;
    int fe = 0;
    for (size_t i = from; i <= to && i < l->nsegs && fe == 0; i++) {
        struct segment *s = l->segs[i];
        struct sfile *f = segment_file(s, &fe);
        if (!f)
            break;
        files[k++] = f;
        struct idx_file *ix[] = {&s->oidx.f, &s->tidx.f};
        for (int j = 0; j < 2 && i < to; j++) {
            if (!ix[j]->dirty)
                continue;
            int fd = idxf_open_fd(ix[j]);
            if (fd < 0) {
                fe = errno;
                char ip[PATH_MAX];
                idxf_path(ix[j], ip, sizeof ip);
                slog_error("log: cannot open %s: %s", ip, strerror(fe));
                break;
            }
            files[k++] = sfile_wrap(fd);
        }
    }
    srw_unlock(&l->seg_lock);
    int rc = 0;
    if (fe) {
        for (size_t i = 0; i < k; i++)
            sfile_unref(files[i]);
        free(files);
        if (rolled)
            atomic_store(&l->roll_flush_pending, true);
        slock_unlock(&l->flush_lock);
        if (fdc_is_resource(fe))
            return KERR_KAFKA_STORAGE_ERROR; /* retriable: the log stays online */
        plog_mark_failed(l);
        return KERR_KAFKA_STORAGE_ERROR;
    }
    for (size_t i = 0; i < k; i++) {
        while (rc == 0 && fdatasync(files[i]->fd) != 0) {
            if (errno == EINTR)
                continue;
            /* After a failed fsync the page cache may claim clean pages
             * that never reached the disk: the log goes offline. */
            slog_error("log: %s: fdatasync failed: %s; log taken offline", l->dir, strerror(errno));
            rc = KERR_KAFKA_STORAGE_ERROR;
        }
        sfile_unref(files[i]);
    }
    free(files);
    fdc_trim(); /* a flush of many segments pinned them all at once */
    if (rc == 0 && rolled) {
        /* A roll since the last flush: the new segment's name is durable
         * before the recovery point may move into it. */
        int e = fs_sync_dir(l->dir);
        if (e) {
            slog_error("log: cannot sync directory %s: %s; log taken offline", l->dir, strerror(e));
            rc = KERR_KAFKA_STORAGE_ERROR;
        }
    }
    /* A leader epoch the append path added (a no-op when the checkpoint
     * is current): durable before the recovery point passes its start. */
    if (rc == 0 && epoch_persist(l) != 0)
        rc = KERR_KAFKA_STORAGE_ERROR; /* logged; as a failed fsync */
    /* The .txnindex files written since the last flush (also done by
     * plog_producers_flush before a snapshot that would skip their
     * markers). */
    if (rc == 0)
        rc = plog_txn_flush(l);
    if (rc == 0)
        rc = plog_producers_flush(l);
    if (rc && fdc_resource_failures() != res0) {
        /* A file could not be opened for want of descriptors: nothing
         * was lost, the recovery point stays, the next flush retries. */
        if (rolled)
            atomic_store(&l->roll_flush_pending, true);
    } else if (rc) {
        plog_mark_failed(l);
    } else {
        if (raise_to(&l->recovery_point, target))
            atomic_fetch_add_explicit(&rp_changes, 1, memory_order_release);
        atomic_store(&l->last_flush_ms, clock_wall_ms());
        /* The sealed segments just synced never change again (but for a
         * truncation, which reopens): their indexes are durable. */
        srw_wrlock(&l->seg_lock);
        for (size_t i = 0; i < l->nsegs && l->segs[i]->base_offset < sealed_below; i++)
            segment_mark_indexes_synced(l->segs[i]);
        srw_unlock(&l->seg_lock);
    }
    slock_unlock(&l->flush_lock);
    return rc;
}

bool plog_flush_due(struct plog *l, int64_t now_ms, int64_t *next_due_ms)
{
    *next_due_ms = INT64_MAX;
    if (plog_has_failed(l))
        return false;
    if (atomic_load(&l->roll_flush_pending))
        return true;
    int64_t unflushed = plog_log_end_offset(l) - atomic_load(&l->recovery_point);
    if (unflushed <= 0)
        return false;
    slock_lock(&l->cfg_lock);
    int64_t fm = l->cfg->flush_messages, fms = l->cfg->flush_ms;
    slock_unlock(&l->cfg_lock);
    if (unflushed >= fm)
        return true;
    if (fms == INT64_MAX)
        return false;
    int64_t due = atomic_load(&l->last_flush_ms) + fms;
    if (now_ms >= due)
        return true;
    *next_due_ms = due;
    return false;
}

/* ---- retention, DeleteRecords, truncation ---- */

void plog_trash_segment(struct plog *l, struct segment *s, int64_t now_ms)
{
    if (segment_rename(s, SEGMENT_DELETED_SUFFIX) != 0) {
        /* Not renamed: remove at once rather than leave a segment that
         * would come back at the next open. */
        segment_unlink(s);
        segment_free(s);
        return;
    }
    slock_lock(&l->cfg_lock);
    int64_t delay = l->cfg->file_delete_delay_ms;
    slock_unlock(&l->cfg_lock);
    slock_lock(&l->trash_lock);
    struct plog_txs *t = plog_txs_own(l);
    if (t->ntrash == t->trashcap) {
        t->trashcap = t->trashcap ? t->trashcap * 2 : 8;
        t->trash = xrealloc(t->trash, t->trashcap * sizeof *t->trash);
    }
    t->trash[t->ntrash++] = (struct plog_trash){s, delay > INT64_MAX - now_ms ? INT64_MAX : now_ms + delay};
    atomic_fetch_add(&trashed_segments, 1);
    slock_unlock(&l->trash_lock);
}

int plog_purge_deleted(struct plog *l, int64_t now_ms, bool force)
{
    slock_lock(&l->trash_lock);
    struct plog_txs *t = atomic_load(&l->txs); /* the empty one has ntrash 0 */
    if (t->ntrash == 0) {
        slock_unlock(&l->trash_lock);
        return 0;
    }
    struct segment **due = xmalloc(t->ntrash * sizeof *due);
    size_t nd = 0, k = 0;
    for (size_t i = 0; i < t->ntrash; i++) {
        if (force || t->trash[i].due_ms <= now_ms)
            due[nd++] = t->trash[i].seg;
        else
            t->trash[k++] = t->trash[i];
    }
    t->ntrash = k;
    atomic_fetch_sub(&trashed_segments, (long)nd);
    slock_unlock(&l->trash_lock);
    for (size_t i = 0; i < nd; i++) {
        int e = segment_unlink(due[i]);
        if (e)
            slog_warn("log: %s: cannot remove %s: %s", l->dir, due[i]->log_path, strerror(e));
        segment_free(due[i]);
    }
    free(due);
    return (int)k;
}

/* Removes the first k segments from the list (they are below the new
 * start offset, published before this) and trashes them. Called with
 * maint_lock held. */
static void drop_front(struct plog *l, size_t k, int64_t now_ms)
{
    if (k == 0)
        return;
    struct segment **gone = xmalloc(k * sizeof *gone);
    int64_t bytes = 0;
    srw_wrlock(&l->seg_lock);
    for (size_t i = 0; i < k; i++) {
        gone[i] = l->segs[i];
        bytes += l->segs[i]->size;
    }
    memmove(l->segs, l->segs + k, (l->nsegs - k) * sizeof *l->segs);
    l->nsegs -= k;
    srw_unlock(&l->seg_lock);
    atomic_fetch_sub(&l->size_bytes, bytes);
    for (size_t i = 0; i < k; i++)
        plog_trash_segment(l, gone[i], now_ms);
    free(gone);
    fs_sync_dir(l->dir);
    plog_note_changed(l, false, true);
}

/* Decides how many segments from the front retention removes (Kafka's
 * deleteRetentionMsBreachedSegments, deleteRetentionSizeBreachedSegments
 * and deleteLogStartOffsetBreachedSegments, taken together: a segment
 * goes when any of them wants it, in order from the front). Under
 * seg_lock. *reason gets a word for the log line. */
static size_t deletable(struct plog *l, const struct plog_config *c, int64_t now, int64_t hw, const char **reason)
{
    int64_t start = atomic_load(&l->start_offset);
    int64_t end = plog_log_end_offset(l);
    int64_t excess = c->retention_bytes >= 0 ? atomic_load(&l->size_bytes) - c->retention_bytes : -1;
    size_t k = 0;
    *reason = NULL;
    for (; k < l->nsegs; k++) {
        struct segment *s = l->segs[k];
        bool last = k + 1 == l->nsegs;
        int64_t upper = last ? end : l->segs[k + 1]->base_offset;
        if (upper > hw || (last && s->size == 0))
            break;
        const char *why = NULL;
        if (!last && upper <= start)
            why = "log start offset";
        else if (c->cleanup_delete && c->retention_ms >= 0 && now - segment_largest_timestamp(s) > c->retention_ms)
            why = "retention.ms";
        else if (c->cleanup_delete && excess >= 0 && excess - s->size >= 0)
            why = "retention.bytes";
        if (!why)
            break;
        if (excess >= 0)
            excess -= s->size;
        if (!*reason)
            *reason = why;
    }
    return k;
}

int64_t plog_retention_due(struct plog *l, int64_t now_ms)
{
    if (plog_has_failed(l))
        return INT64_MAX;
    struct plog_config c;
    plog_get_config(l, &c);
    const char *why;
    int64_t due = INT64_MAX;
    srw_rdlock(&l->seg_lock);
    struct segment *s = l->segs[0];
    if (deletable(l, &c, now_ms, INT64_MAX, &why) > 0) {
        /* Deletable now, or but for the high watermark (which moves
         * without telling retention) or a holder of maint_lock: Kafka's
         * periodic check would find it, so every check looks. */
        due = now_ms;
    } else if (c.cleanup_delete && c.retention_ms >= 0 && !(l->nsegs == 1 && s->size == 0)) {
        /* deletable() takes segments from the front only: the oldest
         * one's largest timestamp decides when time deletes anything.
         * Appends only raise it; what lowers it (a cleaning, a
         * truncation) calls the hook. */
        int64_t ts = segment_largest_timestamp(s);
        due = ts > INT64_MAX - 1 - c.retention_ms ? INT64_MAX : ts + c.retention_ms + 1;
    }
    srw_unlock(&l->seg_lock);
    return due;
}

bool plog_take_retention_wanted(struct plog *l) { return atomic_exchange(&l->retention_wanted, false); }
bool plog_retention_wanted(const struct plog *l) { return atomic_load(&l->retention_wanted); }

void plog_note_changed(struct plog *l, bool retention, bool clean)
{
    if (clean && !atomic_load_explicit(&l->clean_changed, memory_order_relaxed))
        atomic_store(&l->clean_changed, true);
    if (retention && !atomic_load_explicit(&l->retention_wanted, memory_order_relaxed) &&
        !atomic_exchange(&l->retention_wanted, true) && l->hooks->retention_wanted)
        l->hooks->retention_wanted(l->hooks_ctx, l);
}

int plog_retention(struct plog *l, int64_t now_ms, int *deleted)
{
    if (deleted)
        *deleted = 0;
    if (plog_has_failed(l))
        return KERR_KAFKA_STORAGE_ERROR;
    if (!slock_trylock(&l->maint_lock))
        return 0; /* the cleaner or a truncation has it: next time */
    struct plog_config c;
    plog_get_config(l, &c);
    int64_t hw = plog_high_watermark(l);
    const char *why;
    srw_rdlock(&l->seg_lock);
    size_t k = deletable(l, &c, now_ms, hw, &why);
    bool all = k == l->nsegs;
    srw_unlock(&l->seg_lock);
    if (k == 0) {
        plog_maint_unlock(l);
        return 0;
    }
    if (all) {
        /* Everything expired, the active segment too: roll it so that it
         * is a closed segment when it goes (Kafka rolls the same way). */
        slock_lock(&l->append_lock);
        struct segment *seg = l->segs[l->nsegs - 1];
        int rc = seg->size > 0 ? roll(l, plog_log_end_offset(l), &seg) : 0;
        slock_unlock(&l->append_lock);
        if (rc) {
            plog_maint_unlock(l);
            return rc;
        }
        /* Appends may have come in meanwhile: decide again (the new
         * active segment is empty, so it stays). */
        srw_rdlock(&l->seg_lock);
        k = deletable(l, &c, now_ms, plog_high_watermark(l), &why);
        srw_unlock(&l->seg_lock);
        if (k == 0) {
            plog_maint_unlock(l);
            return 0;
        }
    }
    srw_rdlock(&l->seg_lock);
    int64_t new_start = l->segs[k]->base_offset;
    int64_t first = l->segs[0]->base_offset;
    int64_t *bases = xmalloc(k * sizeof *bases);
    for (size_t i = 0; i < k; i++)
        bases[i] = l->segs[i]->base_offset;
    srw_unlock(&l->seg_lock);
    /* Readers see the new start before the segments go, so they get
     * OFFSET_OUT_OF_RANGE rather than a missing file. */
    int64_t old_start = atomic_load(&l->start_offset);
    raise_to(&l->start_offset, new_start);
    drop_front(l, k, now_ms);
    plog_producers_segments_deleted(l, bases, k);
    plog_txn_segments_deleted(l, bases, k);
    free(bases);
    slock_lock(&l->epoch_lock);
    if (epoch_truncate_start_locked(l, atomic_load(&l->start_offset)))
        epoch_changed_locked(l);
    slock_unlock(&l->epoch_lock);
    epoch_persist(l);
    plog_maint_unlock(l);
    slog_info("log: %s: deleted %zu segment(s) (offsets %" PRId64 "..%" PRId64 ") for %s; log start offset %" PRId64,
              l->dir, k, first, new_start - 1, why, atomic_load(&l->start_offset));
    if (deleted)
        *deleted = (int)k;
    if (atomic_load(&l->start_offset) != old_start && l->hooks->start_offset_moved)
        l->hooks->start_offset_moved(l->hooks_ctx, l);
    return 0;
}

int plog_delete_records(struct plog *l, int64_t offset, int64_t *low_watermark)
{
    if (low_watermark)
        *low_watermark = atomic_load(&l->start_offset);
    if (plog_has_failed(l))
        return KERR_KAFKA_STORAGE_ERROR;
    if (offset < 0 || offset > plog_high_watermark(l))
        return KERR_OFFSET_OUT_OF_RANGE;
    int64_t old = atomic_load(&l->start_offset);
    raise_to(&l->start_offset, offset);
    int64_t now = atomic_load(&l->start_offset);
    if (low_watermark)
        *low_watermark = now;
    if (now != old) {
        /* On a network worker (DeleteRecords): the checkpoint is the
         * next flush's to write; a crash before it only leaves entries
         * below the log start, which the next open trims. */
        slock_lock(&l->epoch_lock);
        if (epoch_truncate_start_locked(l, now))
            epoch_changed_locked(l);
        slock_unlock(&l->epoch_lock);
        slog_info("log: %s: log start offset moved from %" PRId64 " to %" PRId64 " (DeleteRecords)", l->dir, old,
                  now);
        /* Before the hook: its owner sees the request pending (and
         * retention runs on this log soon, logmgr.c). */
        plog_note_changed(l, true, true);
        if (l->hooks->start_offset_moved)
            l->hooks->start_offset_moved(l->hooks_ctx, l);
    }
    return 0;
}

/* With maint_lock and append_lock held: removes segments [from, nsegs). */
static void drop_back(struct plog *l, size_t from, int64_t now_ms)
{
    size_t k = l->nsegs - from;
    if (k == 0)
        return;
    struct segment **gone = xmalloc(k * sizeof *gone);
    int64_t bytes = 0;
    srw_wrlock(&l->seg_lock);
    for (size_t i = 0; i < k; i++) {
        gone[i] = l->segs[from + i];
        bytes += gone[i]->size;
    }
    l->nsegs = from;
    srw_unlock(&l->seg_lock);
    atomic_fetch_sub(&l->size_bytes, bytes);
    for (size_t i = 0; i < k; i++)
        plog_trash_segment(l, gone[i], now_ms);
    free(gone);
}

int plog_truncate_fully(struct plog *l, int64_t offset)
{
    if (plog_has_failed(l))
        return KERR_KAFKA_STORAGE_ERROR;
    uint64_t res0 = fdc_resource_failures();
    atomic_store(&l->abort_clean, true);
    slock_lock(&l->maint_lock);
    atomic_store(&l->abort_clean, false);
    slock_lock(&l->append_lock);
    slock_lock(&l->flush_lock);
    struct segment_opts o = plog_segment_opts(l);
    struct segment *s;
    /* The new segment may have the base of an old one: that one is
     * renamed .deleted before the new file of its name is created. */
    int64_t now = clock_wall_ms();
    drop_back(l, 0, now);
    int rc = segment_create(l->dir, offset, &o, "", true, &s);
    if (rc == 0) {
        srw_wrlock(&l->seg_lock);
        push_segment(l, s);
        srw_unlock(&l->seg_lock);
        atomic_store(&l->size_bytes, 0);
        atomic_store(&l->start_offset, offset);
        atomic_store_explicit(&l->end_offset, offset, memory_order_release);
        set_recovery_point(l, offset);
        atomic_store(&l->cleaner_offset, -1);
        int64_t hw = atomic_load(&l->high_watermark);
        if (hw >= 0)
            set_high_watermark(l, offset);
        slock_lock(&l->epoch_lock);
        l->nepochs = 0;
        epoch_changed_locked(l);
        slock_unlock(&l->epoch_lock);
        epoch_persist(l);
        /* Kafka's truncateFullyAndStartAt: no producer survives. */
        if (plog_producers_truncated(l, -1) != 0)
            plog_mark_failed(l);
        slog_info("log: %s: truncated fully; starts again at offset %" PRId64, l->dir, offset);
        plog_note_changed(l, true, true);
    } else if (fdc_resource_failures() != res0) {
        /* The old segments are gone and the new one could not be created
         * for want of descriptors: this log cannot serve until it is
         * opened again, but its dir is fine (no hook: no dir offline). */
        slog_error("log: %s: out of file descriptors while truncating fully; the log is offline until restart",
                   l->dir);
        atomic_store(&l->failed, true);
    } else {
        plog_mark_failed(l);
    }
    slock_unlock(&l->flush_lock);
    slock_unlock(&l->append_lock);
    plog_maint_unlock(l);
    return rc;
}

int plog_truncate_to(struct plog *l, int64_t offset)
{
    if (plog_has_failed(l))
        return KERR_KAFKA_STORAGE_ERROR;
    if (offset >= plog_log_end_offset(l))
        return 0;
    if (offset < plog_log_start_offset(l))
        return plog_truncate_fully(l, offset);
    atomic_store(&l->abort_clean, true);
    slock_lock(&l->maint_lock);
    atomic_store(&l->abort_clean, false);
    slock_lock(&l->append_lock);
    slock_lock(&l->flush_lock);
    int rc = 0;
    if (l->segs[0]->base_offset >= offset) {
        slock_unlock(&l->flush_lock);
        slock_unlock(&l->append_lock);
        plog_maint_unlock(l);
        return plog_truncate_fully(l, offset);
    }
    int64_t now = clock_wall_ms();
    srw_rdlock(&l->seg_lock);
    size_t keep = plog_index_after(l, offset - 1);
    /* The segment cut below, pinned before anything changes: without a
     * descriptor the truncation fails whole (retriable) instead of
     * half-done. */
    int pin_err;
    struct sfile *pin = segment_file(l->segs[keep - 1], &pin_err);
    srw_unlock(&l->seg_lock);
    if (!pin) {
        slock_unlock(&l->flush_lock);
        slock_unlock(&l->append_lock);
        plog_maint_unlock(l);
        return KERR_KAFKA_STORAGE_ERROR;
    }
    /* Segments from the first with base >= offset go whole. */
    drop_back(l, keep, now);
    struct segment *s = l->segs[l->nsegs - 1];
    srw_wrlock(&l->seg_lock);
    rc = segment_truncate_to(s, offset);
    if (rc == 0) {
        int e = segment_unseal(s);
        if (e) {
            slog_error("log: %s: cannot resize indexes: %s", l->dir, strerror(e));
            rc = KERR_KAFKA_STORAGE_ERROR;
        }
    }
    srw_unlock(&l->seg_lock);
    sfile_unref(pin);
    if (rc) {
        plog_mark_failed(l);
    } else {
        int64_t end = s->next_offset;
        int64_t size = 0;
        for (size_t i = 0; i < l->nsegs; i++)
            size += l->segs[i]->size;
        atomic_store(&l->size_bytes, size);
        atomic_store_explicit(&l->end_offset, end, memory_order_release);
        if (atomic_load(&l->recovery_point) > end)
            set_recovery_point(l, end);
        int64_t hw = atomic_load(&l->high_watermark);
        if (hw > end)
            set_high_watermark(l, end);
        if (atomic_load(&l->cleaner_offset) > end)
            atomic_store(&l->cleaner_offset, end);
        slock_lock(&l->epoch_lock);
        if (epoch_truncate_end_locked(l, end))
            epoch_changed_locked(l);
        slock_unlock(&l->epoch_lock);
        epoch_persist(l);
        /* Kafka's truncateAndReload: the producers as of the new end. */
        if (plog_producers_truncated(l, end) != 0)
            plog_mark_failed(l);
        slog_info("log: %s: truncated to offset %" PRId64, l->dir, end);
        plog_note_changed(l, true, true);
    }
    slock_unlock(&l->flush_lock);
    slock_unlock(&l->append_lock);
    plog_maint_unlock(l);
    return rc;
}

/* ---- close, delete ---- */

int plog_close(struct plog *l, bool clean)
{
    if (!l)
        return 0;
    int rc = clean ? 0 : KERR_KAFKA_STORAGE_ERROR;
    if (clean && plog_has_failed(l))
        rc = KERR_KAFKA_STORAGE_ERROR;
    if (rc == 0) {
        /* Trims rolls left to the flusher or a maint_lock holder that
         * nobody did yet: done now, so the next open trusts the
         * indexes. */
        if (atomic_load(&l->trims_pending)) {
            slock_lock(&l->maint_lock);
            plog_maint_unlock(l);
        }
        struct segment *active = l->segs[l->nsegs - 1];
        /* As Kafka's LogSegment.close: the final max timestamp goes into
         * the time index and both files are trimmed, so the next open
         * takes them as they are (untouched since a clean open when
         * unseal_pending: nothing to do). */
        int e = active->unseal_pending ? 0 : segment_seal(active);
        if (e)
            slog_warn("log: %s: cannot trim the indexes of %s: %s", l->dir, active->log_path, strerror(e));
        rc = plog_flush(l);
        if (rc == 0 && epoch_persist(l) != 0)
            rc = KERR_KAFKA_STORAGE_ERROR; /* no clean marker over a stale checkpoint */
        if (rc == 0)
            rc = plog_producers_close(l); /* the next open replays nothing */
        if (rc == 0) {
            /* plog_flush skips work when nothing is unflushed; the trim
             * of the active segment's indexes must be durable too (an
             * index untouched since the open is not dirty: no sync). */
            e = idxf_sync(&active->oidx.f);
            if (e == 0)
                e = idxf_sync(&active->tidx.f);
            if (e) {
                slog_error("log: %s: fdatasync of the indexes failed at close: %s", l->dir, strerror(e));
                rc = KERR_KAFKA_STORAGE_ERROR;
            }
        }
    }
    plog_free(l);
    return rc;
}

int plog_delete(struct plog *l)
{
    /* Kafka's "<topic>-<partition>.<uuid without dashes>-delete". */
    uint8_t rnd[16];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        uint64_t t = (uint64_t)clock_mono_us() ^ ((uint64_t)getpid() << 32);
        for (size_t i = 0; i < sizeof rnd; i++)
            rnd[i] = (uint8_t)(t >> ((i % 8) * 8)) ^ (uint8_t)((uintptr_t)l >> (i % 8));
    }
    size_t n = strlen(l->dir) + 2 + 2 * sizeof rnd + sizeof "-delete";
    char *gone = xmalloc(n);
    int off = snprintf(gone, n, "%s.", l->dir);
    for (size_t i = 0; i < sizeof rnd; i++)
        off += snprintf(gone + off, n - (size_t)off, "%02x", rnd[i]);
    snprintf(gone + off, n - (size_t)off, "-delete");

    int rc = 0;
    const char *victim = gone;
    if (rename(l->dir, gone) != 0) {
        slog_error("log: cannot rename %s to %s: %s; removing it in place", l->dir, gone, strerror(errno));
        victim = l->dir;
    } else {
        fs_sync_parent(gone);
    }
    /* Open sfile references (queued Fetch responses) keep their files
     * readable after the unlink below. */
    char *victim_copy = xstrdup(victim);
    free(gone);
    plog_free(l);
    int e = fs_remove_tree(victim_copy);
    if (e == 0)
        e = fs_sync_parent(victim_copy);
    if (e) {
        slog_error("log: cannot remove %s: %s", victim_copy, strerror(e));
        rc = KERR_KAFKA_STORAGE_ERROR;
    }
    free(victim_copy);
    return rc;
}
