/* A log's producer state (log/producer_state.h) and its snapshot files,
 * as Kafka's UnifiedLog and ProducerStateManager keep them:
 *
 * - "<offset>.snapshot" holds the state of every batch below offset. One
 *   is taken at each segment roll (named by the new segment's base) and
 *   at a clean close (the log end offset).
 * - Opening a log loads the latest snapshot at or below the log end and
 *   replays the batch headers after it; later snapshots (the log was cut
 *   by recovery) are deleted, and so are older ones not at a segment's
 *   base (an earlier close's). No snapshot: the whole log is replayed.
 * - Truncation deletes the snapshots above the new end and reloads the
 *   same way; retention deletes the snapshot of each segment it deletes
 *   (Kafka's deleteProducerSnapshots), never the latest.
 *
 * The append path holds the log's append lock, which runs on network
 * workers and must not wait for a disk: a roll encodes the snapshot in
 * memory and the next plog_flush (the flusher's thread) writes it. A
 * crash before that costs only a longer replay from an older snapshot. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log/batch_cursor.h"
#include "log/fsutil.h"
#include "log/plog_internal.h"
#include "log/producer_state.h"
#include "log/segment.h"
#include "proto/kerr.h"
#include "util/fdcache.h"
#include "util/buf.h"
#include "util/hmap.h"
#include "util/sfile.h"
#include "util/slog.h"

/* Recovery reads headers sequentially: large reads. */
#define REPLAY_READAHEAD (1024 * 1024)
/* A snapshot larger than this is not one of ours (40 bytes a producer). */
#define SNAPSHOT_MAX_BYTES (256LL * 1024 * 1024)

int plog_producers_init(struct plog *l)
{
    pstate_init(&l->ps);
    return 0;
}

void plog_producers_free(struct plog *l)
{
    pstate_clear(&l->ps);
}

static int cmp_i64_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x > y ? -1 : x < y;
}

/* The offsets of dir's snapshot files, newest first (malloc'ed into *out,
 * the caller frees). -1 when the directory cannot be read. */
static ssize_t list_snapshots(const char *dir, int64_t **out)
{
    *out = NULL;
    DIR *d = fdc_opendir(dir);
    if (!d)
        return -1;
    size_t n = 0, cap = 0;
    int64_t *v = NULL;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        int64_t off;
        if (!segment_parse_name(de->d_name, PSTATE_SNAPSHOT_SUFFIX, &off))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            v = xrealloc(v, cap * sizeof *v);
        }
        v[n++] = off;
    }
    closedir(d);
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_i64_desc);
    *out = v;
    return (ssize_t)n;
}

static bool remove_snapshot(struct plog *l, int64_t offset)
{
    char *p = segment_file_path(l->dir, offset, PSTATE_SNAPSHOT_SUFFIX);
    bool ok = unlink(p) == 0 || errno == ENOENT;
    if (!ok)
        slog_warn("log: cannot delete %s: %s", p, strerror(errno));
    free(p);
    return ok;
}

/* Removes the snapshots above offset (their batches are gone), and the
 * pending one. */
static void remove_snapshots_above(struct plog *l, int64_t offset)
{
    slock_lock(&l->snap_lock);
    struct plog_txs *t = atomic_load(&l->txs); /* the empty one: offset -1 */
    if (t->snap_pending_offset > offset) {
        buf_reset(&t->snap_pending);
        t->snap_pending_offset = -1;
    }
    slock_unlock(&l->snap_lock);
    int64_t *offs;
    ssize_t n = list_snapshots(l->dir, &offs);
    bool removed = false;
    for (ssize_t i = 0; i < n && offs[i] > offset; i++)
        removed |= remove_snapshot(l, offs[i]);
    free(offs);
    if (removed)
        fs_sync_dir(l->dir);
}

/* Feeds the headers of every batch whose last offset is >= from to the
 * state. Under append_lock (or before the log is shared). */
static int replay(struct plog *l, int64_t from, int64_t *batches)
{
    *batches = 0;
    for (size_t i = 0; i < l->nsegs; i++) {
        struct segment *s = l->segs[i];
        if (s->next_offset <= from || s->size == 0)
            continue;
        int fe;
        struct sfile *f = segment_file(s, &fe);
        if (!f)
            return KERR_KAFKA_STORAGE_ERROR;
        struct bcursor c;
        bcur_init(&c, f->fd, 0, s->size, REPLAY_READAHEAD);
        int st;
        struct rb_header h;
        while ((st = bcur_header(&c, &h)) == BCUR_OK) {
            if (rb_last_offset(&h) >= from && rb_is_control(&h) && rb_has_producer_id(&h)) {
                /* A marker: its record is needed (type, coordinator
                 * epoch); markers are a few dozen bytes. */
                const uint8_t *b;
                int16_t type;
                int32_t cepoch;
                struct ps_completed_txn done;
                size_t size = (size_t)rb_batch_size(&h);
                if (bcur_batch(&c, size, &b) == BCUR_OK && plog_marker_of(b, size, &type, &cepoch) == 0) {
                    int u = pstate_update_marker(&l->ps, &h, type, cepoch, &done);
                    if ((u != 0 && u != 1) || (u == 1 && plog_txn_completed(l, &done, s->base_offset) != 0)) {
                        bcur_free(&c);
                        sfile_unref(f);
                        return KERR_KAFKA_STORAGE_ERROR;
                    }
                }
                (*batches)++;
            } else if (rb_last_offset(&h) >= from) {
                if (pstate_update(&l->ps, &h) != 0) {
                    bcur_free(&c);
                    sfile_unref(f);
                    return KERR_KAFKA_STORAGE_ERROR;
                }
                (*batches)++;
            }
            bcur_advance(&c, rb_batch_size(&h));
        }
        bcur_free(&c);
        sfile_unref(f);
        if (st != BCUR_END) {
            /* The segment was checked when it was loaded or written. */
            slog_error("log: %s: cannot read %s while rebuilding producer state: %s", l->dir, s->log_path,
                       st == BCUR_IOERR ? strerror(c.err) : c.reason);
            return KERR_KAFKA_STORAGE_ERROR;
        }
    }
    return 0;
}

static int load_from(struct plog *l, const int64_t *offs, ssize_t n);

int plog_producers_load(struct plog *l)
{
    int64_t *offs;
    ssize_t n = list_snapshots(l->dir, &offs);
    if (n < 0) {
        slog_error("log: cannot read directory %s: %s", l->dir, strerror(errno));
        return KERR_KAFKA_STORAGE_ERROR;
    }
    int rc = load_from(l, offs, n);
    free(offs);
    return rc;
}

int plog_producers_load_listed(struct plog *l, const int64_t *snaps, size_t n)
{
    int64_t *offs = NULL;
    if (n > 0) {
        offs = xmalloc(n * sizeof *offs);
        memcpy(offs, snaps, n * sizeof *offs);
        if (n > 1)
            qsort(offs, n, sizeof *offs, cmp_i64_desc);
    }
    int rc = load_from(l, offs, (ssize_t)n);
    free(offs);
    return rc;
}

/* Whether a segment of l starts at offset (segments in base order). */
static bool segment_base(const struct plog *l, int64_t offset)
{
    size_t lo = 0, hi = l->nsegs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int64_t b = l->segs[mid]->base_offset;
        if (b == offset)
            return true;
        if (b < offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* offs: the snapshots' offsets, newest first (the caller's). */
static int load_from(struct plog *l, const int64_t *offs, ssize_t n)
{
    int64_t end = atomic_load(&l->end_offset);
    pstate_clear(&l->ps);
    int64_t from = -1;
    bool removed = false;
    for (ssize_t i = 0; i < n; i++) {
        if (offs[i] > end) {
            /* Taken before a crash cut the log below it. */
            removed |= remove_snapshot(l, offs[i]);
            continue;
        }
        char *p = segment_file_path(l->dir, offs[i], PSTATE_SNAPSHOT_SUFFIX);
        char *data;
        size_t len;
        int e = fs_read_small(p, SNAPSHOT_MAX_BYTES, &data, &len);
        int rc = e ? KERR_KAFKA_STORAGE_ERROR : pstate_snapshot_decode(&l->ps, (const uint8_t *)data, len);
        if (!e)
            free(data);
        if (rc == 0) {
            free(p);
            from = offs[i];
            /* Kafka's removeStraySnapshots: older ones not at a segment's
             * base (a clean close's, at the end it had then) are never
             * loaded again but for a truncation below the newest, which
             * a base's serves as well: without this every restart of a
             * log that does not roll left one more file behind. */
            for (ssize_t j = i + 1; j < n; j++)
                if (!segment_base(l, offs[j]))
                    removed |= remove_snapshot(l, offs[j]);
            break;
        }
        /* Kafka deletes a snapshot it cannot read and tries an older one. */
        slog_warn("log: %s: ignoring producer snapshot %s: %s", l->dir, p,
                  e ? strerror(e) : "corrupt (version, CRC or length)");
        free(p);
        removed |= remove_snapshot(l, offs[i]);
    }
    if (removed)
        fs_sync_dir(l->dir);
    int64_t batches = 0;
    /* The aborted-transaction entries from the replay's start are
     * written again by the replay (log/plog_txn.c). */
    int rc = plog_txn_reset(l, from < 0 ? 0 : from);
    if (rc == 0)
        rc = replay(l, from < 0 ? 0 : from, &batches);
    if (rc == 0)
        plog_txn_publish_first_unstable(l);
    if (rc == 0 && (batches > 0 || pstate_count(&l->ps) > 0))
        slog_debug("log: %s: producer state of %zu producer(s) from %s%" PRId64 " and %" PRId64 " batch(es)",
                   l->dir, pstate_count(&l->ps), from < 0 ? "no snapshot, offset " : "the snapshot at ",
                   from < 0 ? 0 : from, batches);
    return rc;
}

void plog_producers_take_snapshot(struct plog *l, int64_t offset)
{
    struct buf b;
    buf_init(&b);
    if (pstate_snapshot_encode(&l->ps, &b) != 0) {
        buf_free(&b);
        return; /* out of memory: the next open replays more */
    }
    slock_lock(&l->snap_lock);
    struct plog_txs *t = plog_txs_own(l);
    struct buf old = t->snap_pending;
    t->snap_pending = b;
    t->snap_pending_offset = offset;
    slock_unlock(&l->snap_lock);
    buf_free(&old);
}

int plog_producers_flush(struct plog *l)
{
    slock_lock(&l->snap_lock);
    struct plog_txs *t = atomic_load(&l->txs);
    struct buf b;
    buf_init(&b);
    int64_t offset = t->snap_pending_offset;
    if (offset >= 0) { /* never the shared empty one, which stays unwritten */
        b = t->snap_pending;
        buf_init(&t->snap_pending);
        t->snap_pending_offset = -1;
    }
    slock_unlock(&l->snap_lock);
    if (offset < 0) {
        buf_free(&b);
        return 0;
    }
    /* The .txnindex entries of markers below the snapshot are durable
     * before it: a reload replays only what is after it. */
    if (plog_txn_flush(l) != 0) {
        buf_free(&b);
        return KERR_KAFKA_STORAGE_ERROR;
    }
    char *p = segment_file_path(l->dir, offset, PSTATE_SNAPSHOT_SUFFIX);
    int e = fs_write_atomic(p, b.data, b.len);
    if (e)
        slog_error("log: cannot write %s: %s", p, strerror(e));
    free(p);
    buf_free(&b);
    return e ? KERR_KAFKA_STORAGE_ERROR : 0;
}

int plog_producers_close(struct plog *l)
{
    /* The pending roll snapshot first: retention deletes a segment's
     * snapshot with it, and the next open wants the one at the end. */
    int rc = plog_producers_flush(l);
    if (rc)
        return rc;
    /* As Kafka's takeSnapshot, none when one at the log end exists; and
     * none for a log that never had a batch: replaying nothing gives the
     * empty state. An idle node of 100 000 partitions spares three
     * syncs per partition at shutdown. */
    int64_t end = atomic_load(&l->end_offset);
    if (end == 0 && pstate_count(&l->ps) == 0)
        return 0;
    char *p = segment_file_path(l->dir, end, PSTATE_SNAPSHOT_SUFFIX);
    struct stat st;
    bool have = stat(p, &st) == 0;
    free(p);
    if (have)
        return 0;
    plog_producers_take_snapshot(l, end);
    return plog_producers_flush(l);
}

void plog_producers_segments_deleted(struct plog *l, const int64_t *bases, size_t n)
{
    int64_t *offs;
    ssize_t k = list_snapshots(l->dir, &offs);
    int64_t latest = k > 0 ? offs[0] : -1;
    free(offs);
    bool removed = false;
    for (size_t i = 0; i < n; i++)
        if (bases[i] != latest)
            removed |= remove_snapshot(l, bases[i]);
    if (removed)
        fs_sync_dir(l->dir);
}

int plog_producers_truncated(struct plog *l, int64_t end)
{
    remove_snapshots_above(l, end);
    return plog_producers_load(l);
}

size_t plog_expire_producers(struct plog *l, int64_t now_ms, int64_t expiration_ms)
{
    slock_lock(&l->append_lock);
    size_t n = pstate_expire(&l->ps, now_ms, expiration_ms);
    slock_unlock(&l->append_lock);
    return n;
}

void plog_producers_foreach(struct plog *l, void (*fn)(void *ctx, const struct ps_entry *e), void *ctx)
{
    slock_lock(&l->append_lock);
    pstate_foreach(&l->ps, fn, ctx);
    slock_unlock(&l->append_lock);
}

struct last_offsets {
    struct hmap *m;
};

static void add_last_offset(void *ctx, const struct ps_entry *e)
{
    struct last_offsets *lo = ctx;
    struct plog_last_record *v = xmalloc(sizeof *v);
    /* No batches: the producer's last entry is a marker (an epoch bump
     * dropped its batches), Kafka's LastRecord without a data offset. */
    v->last_data_offset = e->nbatches > 0 ? e->batches[e->nbatches - 1].last_offset : -1;
    v->epoch = e->epoch;
    hmap_put(lo->m, &e->producer_id, sizeof e->producer_id, v);
}

void plog_producers_last_offsets(struct plog *l, struct hmap *out)
{
    hmap_init(out);
    struct last_offsets lo = {out};
    plog_producers_foreach(l, add_last_offset, &lo);
}

void plog_producers_last_offsets_free(struct hmap *m)
{
    const void *k;
    size_t kl;
    void *v;
    for (size_t i = 0; hmap_next(m, &i, &k, &kl, &v);)
        free(v);
    hmap_free(m);
}
