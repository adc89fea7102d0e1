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
#include "log/fsutil.h"
#include "log/partition_metadata.h"
#include "log/segment.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/sfile.h"
#include "util/slog.h"
#include "util/uuid.h"

/* A Fetch looks at a handful of headers: read a page at a time. */
#define READ_READAHEAD 4096

struct plog {
    char *dir;        /* owned, without trailing slashes */
    const char *name; /* last component of dir ("topic-3"), for log lines */
    struct plog_config cfg;
    kuuid_t topic_id;
    bool has_topic_id;

    /* Lock order: append_lock, then seg_lock.
     * append_lock serialises writers: offset assignment, rolling and the
     *   write itself. Only its holder changes the active segment's file,
     *   so it may read the segment list and the active segment's state
     *   without seg_lock.
     * seg_lock guards the segment list and every segment's in-memory state
     *   (size, indexes, timestamps). Writers hold it exclusively only to
     *   publish a finished write or add a segment; readers hold it shared
     *   for an index lookup and drop it before any file I/O. */
    pthread_mutex_t append_lock;
    pthread_rwlock_t seg_lock;
    struct segment **segs; /* ascending base offsets; the last one is active */
    size_t nsegs, segcap;

    /* Published after the data they cover is in the file (release), so a
     * reader that loads them (acquire) finds those bytes there. */
    _Atomic int64_t end_offset;
    _Atomic int64_t start_offset;
    _Atomic int64_t size_bytes;
    /* Set when the file may no longer match the in-memory state (a
     * partial write that could not be cut off, a failed fsync): Kafka
     * takes such a log offline, and so do we. */
    atomic_bool failed;
};

/* ---- helpers ---- */

static void mark_failed(struct plog *l) { atomic_store(&l->failed, true); }
static bool has_failed(const struct plog *l) { return atomic_load(&l->failed); }

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
        l->segcap = l->segcap ? l->segcap * 2 : 8;
        l->segs = xrealloc(l->segs, l->segcap * sizeof *l->segs);
    }
    l->segs[l->nsegs++] = s;
}

/* Under seg_lock. The segment whose range holds offset: the last one with
 * base_offset <= offset (the first when offset is below them all). */
static size_t floor_index(const struct plog *l, int64_t offset)
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

/* Under seg_lock. The first segment with a base offset above base, or
 * nsegs. Searching by base offset rather than keeping an index keeps
 * working once retention removes segments between two lock holds. */
static size_t index_after(const struct plog *l, int64_t base)
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

static void plog_free(struct plog *l)
{
    for (size_t i = 0; i < l->nsegs; i++)
        segment_free(l->segs[i]);
    free(l->segs);
    pthread_mutex_destroy(&l->append_lock);
    pthread_rwlock_destroy(&l->seg_lock);
    free(l->dir);
    free(l);
}

static int64_t record_timestamp(const struct rb_header *h, const struct rb_record *r)
{
    /* Java's wrapping long addition, without signed-overflow UB. */
    return (int64_t)((uint64_t)h->base_timestamp + (uint64_t)r->timestamp_delta);
}

/* ---- open ---- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Base offsets of the NNNNNNNNNNNNNNNNNNNN.log files in dir, ascending. */
static int list_segments(const char *dir, int64_t **bases, size_t *n)
{
    *bases = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        slog_error("log: cannot read directory %s: %s", dir, strerror(errno));
        return KERR_KAFKA_STORAGE_ERROR;
    }
    size_t cap = 0;
    struct dirent *de;
    /* readdir reports errors only through errno. */
    for (errno = 0; (de = readdir(d)) != NULL; errno = 0) {
        int64_t base;
        if (!segment_parse_name(de->d_name, SEGMENT_LOG_SUFFIX, &base))
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            *bases = xrealloc(*bases, cap * sizeof **bases);
        }
        (*bases)[(*n)++] = base;
    }
    int e = errno;
    closedir(d);
    if (e) {
        slog_error("log: cannot read directory %s: %s", dir, strerror(e));
        free(*bases);
        *bases = NULL;
        *n = 0;
        return KERR_KAFKA_STORAGE_ERROR;
    }
    if (*n > 1)
        qsort(*bases, *n, sizeof **bases, cmp_i64);
    return 0;
}

static int load_topic_id(struct plog *l, const kuuid_t *given)
{
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
        rc = partition_metadata_write(l->dir, given);
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

/* Deletes the segment files bases[from..n) after a recovery cut an
 * earlier segment short: batches after a hole must not survive it.
 * Returns the bytes they held (for the one WARN line), or -1 on error. */
static int64_t drop_later_segments(struct plog *l, const int64_t *bases, size_t from, size_t n)
{
    int64_t bytes = 0;
    for (size_t j = from; j < n; j++) {
        char *p = segment_file_path(l->dir, bases[j], SEGMENT_LOG_SUFFIX);
        struct stat st;
        if (stat(p, &st) == 0)
            bytes += st.st_size;
        if (unlink(p) != 0 && errno != ENOENT) {
            slog_error("log: cannot delete %s: %s", p, strerror(errno));
            free(p);
            return -1;
        }
        free(p);
    }
    int e = fs_sync_dir(l->dir);
    if (e) {
        slog_error("log: cannot sync directory %s: %s", l->dir, strerror(e));
        return -1;
    }
    return bytes;
}

static int load_segments(struct plog *l, bool clean)
{
    int64_t *bases;
    size_t n;
    int rc = list_segments(l->dir, &bases, &n);
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++) {
        struct segment *s;
        rc = segment_open(l->dir, bases[i], l->cfg.index_interval_bytes, &s);
        if (rc)
            break;
        bool last = i + 1 == n;
        struct segment_load_result r;
        /* Rolled segments were fsync'ed at the roll; only the last one can
         * end in a torn write, so only it gets the (slow) CRC check. */
        rc = segment_load(s, !clean && last, last ? INT64_MAX : bases[i + 1], &r);
        if (rc) {
            segment_free(s);
            break;
        }
        push_segment(l, s);
        if (r.truncated_bytes == 0)
            continue;
        int64_t dropped = last ? 0 : drop_later_segments(l, bases, i + 1, n);
        if (dropped < 0) {
            rc = KERR_KAFKA_STORAGE_ERROR;
            break;
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
    free(bases);
    return rc;
}

int plog_open(const char *dir, const kuuid_t *topic_id, const struct plog_config *cfg, struct plog **out)
{
    *out = NULL;
    struct plog_config c = PLOG_CONFIG_INIT;
    if (cfg)
        c = *cfg;
    if (c.segment_bytes < PLOG_MIN_SEGMENT_BYTES || c.segment_bytes > PLOG_MAX_SEGMENT_BYTES ||
        c.index_interval_bytes < 0) {
        slog_error("log: %s: segment.bytes %" PRId64 " or index.interval.bytes %" PRId32 " out of range", dir,
                   c.segment_bytes, c.index_interval_bytes);
        return KERR_INVALID_CONFIG;
    }

    struct plog *l = xcalloc(1, sizeof *l);
    l->dir = xstrdup(dir);
    size_t dl = strlen(l->dir);
    while (dl > 1 && l->dir[dl - 1] == '/')
        l->dir[--dl] = '\0';
    const char *slash = strrchr(l->dir, '/');
    l->name = slash ? slash + 1 : l->dir;
    l->cfg = c;
    pthread_mutex_init(&l->append_lock, NULL);
    pthread_rwlock_init(&l->seg_lock, NULL);
    atomic_init(&l->end_offset, 0);
    atomic_init(&l->start_offset, 0);
    atomic_init(&l->size_bytes, 0);
    atomic_init(&l->failed, false);

    int rc;
    int e = fs_mkdirs(l->dir, NULL);
    if (e) {
        slog_error("log: cannot create directory %s: %s", l->dir, strerror(e));
        rc = KERR_KAFKA_STORAGE_ERROR;
        goto fail;
    }
    rc = load_topic_id(l, topic_id);
    if (rc)
        goto fail;

    char *marker = path_in(l->dir, PLOG_CLEAN_SHUTDOWN_FILE);
    struct stat st;
    bool clean = lstat(marker, &st) == 0;
    if (!clean && errno != ENOENT) {
        slog_error("log: cannot stat %s: %s", marker, strerror(errno));
        free(marker);
        rc = KERR_KAFKA_STORAGE_ERROR;
        goto fail;
    }

    rc = load_segments(l, clean);
    if (rc == 0 && l->nsegs == 0) {
        struct segment *s;
        rc = segment_create(l->dir, 0, c.index_interval_bytes, &s);
        if (rc == 0)
            push_segment(l, s);
    }
    /* From here on a crash must count as unclean. */
    if (rc == 0 && clean) {
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
    atomic_store(&l->size_bytes, size);
    atomic_store(&l->start_offset, l->segs[0]->base_offset);
    atomic_store(&l->end_offset, l->segs[l->nsegs - 1]->next_offset);
    slog_debug("log: opened %s after %s shutdown: %zu segment(s), offsets %" PRId64 "..%" PRId64 ", %" PRId64
               " bytes",
               l->dir, clean ? "clean" : "unclean", l->nsegs, l->segs[0]->base_offset,
               l->segs[l->nsegs - 1]->next_offset, size);
    *out = l;
    return 0;

fail:
    plog_free(l);
    return rc;
}

/* ---- append ---- */

/* Called with append_lock held. Makes the current active segment durable
 * (so that only the last segment can ever need a CRC check at recovery)
 * and starts a new one at base. */
static int roll(struct plog *l, int64_t base, struct segment **active)
{
    struct segment *old = *active;
    int e = segment_sync(old);
    if (e) {
        slog_error("log: %s: fdatasync failed: %s", old->log_path, strerror(e));
        mark_failed(l);
        return KERR_KAFKA_STORAGE_ERROR;
    }
    struct segment *s;
    int rc = segment_create(l->dir, base, l->cfg.index_interval_bytes, &s);
    if (rc)
        return rc;
    pthread_rwlock_wrlock(&l->seg_lock);
    segment_seal(old);
    push_segment(l, s);
    pthread_rwlock_unlock(&l->seg_lock);
    *active = s;
    return 0;
}

int plog_append(struct plog *l, uint8_t *batches, size_t len, int32_t leader_epoch, int64_t append_time_ms_or_minus1,
                struct plog_append_result *res)
{
    if (res) {
        res->base_offset = res->last_offset = -1;
        res->log_append_time = -1;
        res->log_start_offset = atomic_load(&l->start_offset);
    }
    if (len == 0)
        return KERR_CORRUPT_MESSAGE;
    if (len > INT32_MAX)
        return KERR_RECORD_LIST_TOO_LARGE;

    /* Check the framing of every batch before touching any of them. */
    int64_t noffsets = 0;
    for (size_t pos = 0; pos < len;) {
        size_t size;
        struct rb_header h;
        if (rb_frame(batches + pos, len - pos, &size) != 0 || rb_parse_header(batches + pos, size, &h) != 0 ||
            h.last_offset_delta < 0)
            return KERR_CORRUPT_MESSAGE;
        if ((int64_t)size > l->cfg.segment_bytes)
            return KERR_RECORD_LIST_TOO_LARGE;
        noffsets += (int64_t)h.last_offset_delta + 1;
        pos += size;
    }
    if (has_failed(l))
        return KERR_KAFKA_STORAGE_ERROR;

    /* The LogAppendTime rewrite touches CRC-covered bytes but not the
     * offsets, so its CRC pass runs before taking the lock. */
    if (append_time_ms_or_minus1 != -1) {
        for (size_t pos = 0; pos < len;) {
            size_t size = (size_t)be32_read(batches + pos + RB_OFF_BATCH_LENGTH) + RB_LOG_OVERHEAD;
            rb_set_max_timestamp_and_type(batches + pos, size, RB_LOG_APPEND_TIME, append_time_ms_or_minus1);
            pos += size;
        }
    }

    int rc = 0;
    pthread_mutex_lock(&l->append_lock);
    if (has_failed(l)) {
        rc = KERR_KAFKA_STORAGE_ERROR;
        goto out;
    }
    int64_t base = atomic_load_explicit(&l->end_offset, memory_order_relaxed);
    if (noffsets > INT64_MAX - base) {
        rc = KERR_RECORD_LIST_TOO_LARGE;
        goto out;
    }
    int64_t last = base + noffsets - 1;
    struct segment *seg = l->segs[l->nsegs - 1];
    /* Kafka's shouldRoll: the append would pass segment.bytes, or its
     * offsets would not fit the index's relative int32. An empty segment
     * takes anything (a batch above segment.bytes was refused above). */
    if (seg->size > 0 &&
        (seg->size > l->cfg.segment_bytes - (int64_t)len || last - seg->base_offset > INT32_MAX)) {
        rc = roll(l, base, &seg);
        if (rc)
            goto out;
    }
    if (last - seg->base_offset > INT32_MAX) {
        rc = KERR_RECORD_LIST_TOO_LARGE;
        goto out;
    }

    int64_t next = base;
    for (size_t pos = 0; pos < len;) {
        size_t size = (size_t)be32_read(batches + pos + RB_OFF_BATCH_LENGTH) + RB_LOG_OVERHEAD;
        int32_t delta = (int32_t)be32_read(batches + pos + RB_OFF_LAST_OFFSET_DELTA);
        rb_set_base_offset(batches + pos, next);
        rb_set_partition_leader_epoch(batches + pos, leader_epoch);
        next += (int64_t)delta + 1;
        pos += size;
    }

    bool cut_ok;
    int e = segment_write(seg, batches, len, &cut_ok);
    if (e) {
        slog_error("log: %s: write of %zu bytes at %" PRId64 " failed: %s%s", seg->log_path, len, seg->size,
                   strerror(e), cut_ok ? "" : "; could not cut the partial write, log taken offline");
        if (!cut_ok)
            mark_failed(l);
        rc = KERR_KAFKA_STORAGE_ERROR;
        goto out;
    }
    if (l->cfg.fsync_each_append) {
        e = segment_sync(seg);
        if (e) {
            /* After a failed fsync the page cache may say "clean" for data
             * that never reached the disk; nothing about the file can be
             * trusted, so the log goes offline (as Kafka's log dir does). */
            slog_error("log: %s: fdatasync failed: %s; log taken offline", seg->log_path, strerror(e));
            segment_cut_to_size(seg);
            mark_failed(l);
            rc = KERR_KAFKA_STORAGE_ERROR;
            goto out;
        }
    }

    int64_t start_pos = seg->size;
    pthread_rwlock_wrlock(&l->seg_lock);
    for (size_t pos = 0; pos < len;) {
        struct rb_header h;
        rb_parse_header(batches + pos, len - pos, &h);
        segment_note_batch(seg, &h, start_pos + (int64_t)pos);
        pos += (size_t)rb_batch_size(&h);
    }
    pthread_rwlock_unlock(&l->seg_lock);
    atomic_fetch_add(&l->size_bytes, (int64_t)len);
    atomic_store_explicit(&l->end_offset, next, memory_order_release);

    if (res) {
        res->base_offset = base;
        res->last_offset = next - 1;
        res->log_append_time = append_time_ms_or_minus1;
        res->log_start_offset = atomic_load(&l->start_offset);
    }
out:
    pthread_mutex_unlock(&l->append_lock);
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
    if (has_failed(l))
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
        pthread_rwlock_rdlock(&l->seg_lock);
        size_t i = seg_base < 0 ? floor_index(l, offset) : index_after(l, seg_base);
        if (i >= l->nsegs) {
            pthread_rwlock_unlock(&l->seg_lock);
            return 0;
        }
        struct segment *s = l->segs[i];
        seg_base = s->base_offset;
        int64_t pos = oidx_lookup(&s->oidx, offset).position;
        int64_t limit = s->size;
        struct sfile *f = sfile_ref(s->file);
        pthread_rwlock_unlock(&l->seg_lock);

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

/* *offset: the first record of the batch at c->pos (header h) whose
 * timestamp is == target (exact) or >= target, at or above min_offset;
 * -1 when none. Only for uncompressed CreateTime batches. */
static int find_record(struct bcursor *c, const struct rb_header *h, int64_t target, bool exact, int64_t min_offset,
                       int64_t *offset, int64_t *timestamp)
{
    *offset = -1;
    const uint8_t *p;
    size_t size = (size_t)rb_batch_size(h);
    int st = bcur_batch(c, size, &p);
    if (st != BCUR_OK)
        return st == BCUR_IOERR ? KERR_KAFKA_STORAGE_ERROR : KERR_CORRUPT_MESSAGE;
    struct rb_record_iter it;
    if (rb_record_iter_init_batch(&it, p, size) != 0)
        return KERR_CORRUPT_MESSAGE;
    struct rb_record r;
    int n;
    while ((n = rb_record_next(&it, &r)) == 1) {
        int64_t ts = record_timestamp(h, &r);
        int64_t off = h->base_offset + r.offset_delta;
        if ((exact ? ts == target : ts >= target) && off >= min_offset) {
            *offset = off;
            *timestamp = ts;
            return 0;
        }
    }
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
            if (rb_timestamp_type(&h) == RB_LOG_APPEND_TIME || rb_codec(&h) != RB_CODEC_NONE) {
                /* LogAppendTime: every record's timestamp is maxTimestamp.
                 * Compressed: batch granularity until the log can
                 * decompress; the base offset may be a few records early,
                 * which a consumer seeking by time tolerates. */
                *offset = h.base_offset > min_offset ? h.base_offset : min_offset;
                *timestamp = h.max_timestamp;
                break;
            }
            rc = find_record(&c, &h, ts, false, min_offset, offset, timestamp);
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
    if (has_failed(l))
        return KERR_KAFKA_STORAGE_ERROR;
    int64_t start = atomic_load(&l->start_offset);
    int64_t seg_base = -1;
    for (;;) {
        pthread_rwlock_rdlock(&l->seg_lock);
        size_t i = seg_base < 0 ? 0 : index_after(l, seg_base);
        if (i >= l->nsegs) {
            pthread_rwlock_unlock(&l->seg_lock);
            return 0;
        }
        struct segment *s = l->segs[i];
        seg_base = s->base_offset;
        /* Kafka picks the first segment whose largest timestamp reaches ts. */
        if (s->max_timestamp < ts || s->next_offset <= start) {
            pthread_rwlock_unlock(&l->seg_lock);
            continue;
        }
        int64_t from = tidx_lookup(&s->tidx, ts).offset;
        if (from < start)
            from = start;
        int64_t pos = oidx_lookup(&s->oidx, from).position;
        int64_t limit = s->size;
        struct sfile *f = sfile_ref(s->file);
        pthread_rwlock_unlock(&l->seg_lock);

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
    if (has_failed(l))
        return KERR_KAFKA_STORAGE_ERROR;
    pthread_rwlock_rdlock(&l->seg_lock);
    /* The first segment holding the largest timestamp (Scala's maxBy). */
    struct segment *best = NULL;
    for (size_t i = 0; i < l->nsegs; i++)
        if (l->segs[i]->max_timestamp != RB_NO_TIMESTAMP &&
            (!best || l->segs[i]->max_timestamp > best->max_timestamp))
            best = l->segs[i];
    if (!best) {
        pthread_rwlock_unlock(&l->seg_lock);
        return 0;
    }
    int64_t max_ts = best->max_timestamp;
    int64_t pos = oidx_lookup(&best->oidx, best->offset_of_max_timestamp).position;
    int64_t limit = best->size;
    struct sfile *f = sfile_ref(best->file);
    pthread_rwlock_unlock(&l->seg_lock);

    struct bcursor c;
    bcur_init(&c, f->fd, pos, limit, READ_READAHEAD);
    struct rb_header h;
    int st, rc = 0;
    while ((st = bcur_header(&c, &h)) == BCUR_OK) {
        if (h.max_timestamp == max_ts) {
            *timestamp = max_ts;
            *offset = h.base_offset;
            /* LogAppendTime: all records share the timestamp, the first
             * has it. Compressed: base offset until decompression is
             * available here (Kafka decompresses to find the record). */
            if (rb_timestamp_type(&h) == RB_CREATE_TIME && rb_codec(&h) == RB_CODEC_NONE) {
                int64_t off, ts;
                rc = find_record(&c, &h, max_ts, true, h.base_offset, &off, &ts);
                if (rc == 0 && off >= 0)
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

int64_t plog_size_bytes(const struct plog *l) { return atomic_load(&l->size_bytes); }

int plog_segment_count(struct plog *l)
{
    pthread_rwlock_rdlock(&l->seg_lock);
    int n = (int)l->nsegs;
    pthread_rwlock_unlock(&l->seg_lock);
    return n;
}

const kuuid_t *plog_topic_id(const struct plog *l) { return l->has_topic_id ? &l->topic_id : NULL; }

const char *plog_dir(const struct plog *l) { return l->dir; }

/* ---- flush, close, delete ---- */

int plog_flush(struct plog *l)
{
    if (has_failed(l))
        return KERR_KAFKA_STORAGE_ERROR;
    pthread_rwlock_rdlock(&l->seg_lock);
    struct sfile *f = sfile_ref(l->segs[l->nsegs - 1]->file);
    pthread_rwlock_unlock(&l->seg_lock);
    int rc = 0;
    while (fdatasync(f->fd) != 0) {
        if (errno == EINTR)
            continue;
        slog_error("log: %s: fdatasync failed: %s; log taken offline", l->dir, strerror(errno));
        mark_failed(l);
        rc = KERR_KAFKA_STORAGE_ERROR;
        break;
    }
    sfile_unref(f);
    return rc;
}

void plog_close(struct plog *l, bool clean)
{
    if (!l)
        return;
    if (clean && !has_failed(l)) {
        struct segment *active = l->segs[l->nsegs - 1];
        int e = segment_sync(active);
        if (e) {
            slog_error("log: %s: fdatasync failed at close: %s", active->log_path, strerror(e));
        } else {
            char *marker = path_in(l->dir, PLOG_CLEAN_SHUTDOWN_FILE);
            e = fs_write_atomic(marker, "", 0);
            if (e)
                slog_error("log: cannot write %s: %s", marker, strerror(e));
            free(marker);
        }
    }
    plog_free(l);
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
