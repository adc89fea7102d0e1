#include "log/cleaner.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "log/batch_cursor.h"
#include "log/fsutil.h"
#include "log/plog_internal.h"
#include "log/segment.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/hmap.h"
#include "util/fdcache.h"
#include "util/sfile.h"
#include "util/slog.h"
#include "util/throttle.h"

/* Batches are read this much at a time. */
#define CLEAN_READAHEAD (1024 * 1024)
/* Cleaned batches are written in chunks of about this size. */
#define CLEAN_WRITE_CHUNK (1024 * 1024)
/* Rough memory of one map entry beyond its key: the slot and the key
 * copy's allocation. */
#define MAP_ENTRY_OVERHEAD 64

/* ---- the dirty section ---- */

/* Under seg_lock; c is the config in effect. */
static void clean_state_locked(struct plog *l, const struct plog_config *c, int64_t now,
                               struct plog_clean_state *st)
{
    memset(st, 0, sizeof *st);
    int64_t start = atomic_load(&l->start_offset);
    int64_t co = atomic_load(&l->cleaner_offset);
    st->first_dirty = co > start ? co : start;
    int64_t fu = l->segs[l->nsegs - 1]->base_offset;
    /* Kafka cleans nothing at or past the last stable offset: the fate
     * of an open transaction's records is not known yet. */
    int64_t lso = plog_last_stable_offset(l, plog_high_watermark(l));
    st->recheck_ms = INT64_MAX;
    if (lso < fu) {
        fu = lso;
        st->recheck_ms = INT64_MIN;
    }
    size_t from = plog_floor_index(l, st->first_dirty);
    if (c->min_compaction_lag_ms > 0) {
        for (size_t i = from; i + 1 < l->nsegs; i++) {
            int64_t ts = segment_largest_timestamp(l->segs[i]);
            if (ts > now - c->min_compaction_lag_ms) {
                if (l->segs[i]->base_offset < fu)
                    fu = l->segs[i]->base_offset;
                /* old enough then */
                int64_t at = ts > INT64_MAX - c->min_compaction_lag_ms ? INT64_MAX : ts + c->min_compaction_lag_ms;
                if (at < st->recheck_ms)
                    st->recheck_ms = at;
                break;
            }
        }
    }
    st->first_uncleanable = fu;
    for (size_t i = 0; i + 1 < l->nsegs; i++) {
        struct segment *s = l->segs[i];
        if (s->next_offset <= st->first_dirty)
            st->clean_bytes += s->size;
        else if (s->base_offset < fu)
            st->dirty_bytes += s->size;
    }
    int64_t total = st->clean_bytes + st->dirty_bytes;
    st->dirty_ratio = total > 0 ? (double)st->dirty_bytes / (double)total : 0;
    int64_t te = atomic_load(&l->tombstone_expiry);
    st->tombstones_due = te <= now && l->nsegs > 1;
    if (te > now && te < st->recheck_ms)
        st->recheck_ms = te;
    /* Kafka: the first dirty segment's first batch waited past
     * max.compaction.lag.ms. */
    if (c->max_compaction_lag_ms < INT64_MAX && st->dirty_bytes > 0) {
        struct segment *s = l->segs[from];
        int64_t first_ts = s->first_batch_timestamp >= 0 ? s->first_batch_timestamp : segment_last_modified(s);
        st->must_clean = now - first_ts > c->max_compaction_lag_ms;
        int64_t at = first_ts > INT64_MAX - 1 - c->max_compaction_lag_ms ? INT64_MAX
                                                                          : first_ts + c->max_compaction_lag_ms + 1;
        if (!st->must_clean && at < st->recheck_ms)
            st->recheck_ms = at;
    }
}

bool plog_take_clean_changed(struct plog *l) { return atomic_exchange(&l->clean_changed, false); }

bool plog_cleanable(struct plog *l, int64_t now_ms, struct plog_clean_state *st)
{
    memset(st, 0, sizeof *st);
    st->recheck_ms = INT64_MAX; /* a config change or nothing makes it cleanable */
    struct plog_config c;
    plog_get_config(l, &c);
    if (!c.cleanup_compact || plog_has_failed(l))
        return false;
    srw_rdlock(&l->seg_lock);
    clean_state_locked(l, &c, now_ms, st);
    srw_unlock(&l->seg_lock);
    return (st->first_dirty < st->first_uncleanable && st->dirty_bytes > 0) || st->tombstones_due;
}

/* ---- the key map ---- */

struct offset_map {
    struct hmap h;
    size_t bytes, budget;
};

/* Records key -> offset; false when the budget is spent (nothing added). */
static bool map_put(struct offset_map *m, kbytes_t key, int64_t offset)
{
    const uint8_t *k = key.len > 0 ? key.p : (const uint8_t *)"";
    size_t kl = (size_t)key.len;
    if (hmap_get(&m->h, k, kl)) {
        hmap_put(&m->h, k, kl, (void *)(uintptr_t)(offset + 1));
        return true;
    }
    size_t cost = kl + MAP_ENTRY_OVERHEAD;
    if (m->bytes + cost > m->budget)
        return false;
    hmap_put(&m->h, k, kl, (void *)(uintptr_t)(offset + 1));
    m->bytes += cost;
    return true;
}

static int64_t map_get(const struct offset_map *m, kbytes_t key)
{
    const uint8_t *k = key.len > 0 ? key.p : (const uint8_t *)"";
    void *v = hmap_get(&m->h, k, (size_t)key.len);
    return v ? (int64_t)(uintptr_t)v - 1 : -1;
}

/* The records of a whole batch p (header h): decompressed into scratch
 * when needed. KERR_UNSUPPORTED_COMPRESSION_TYPE without a codec. */
static int records_of(struct plog *l, const uint8_t *p, size_t size, const struct rb_header *h, struct buf *scratch,
                      struct rb_record_iter *it)
{
    if (rb_codec(h) == RB_CODEC_NONE)
        return rb_record_iter_init_batch(it, p, size) == 0 ? 0 : KERR_CORRUPT_MESSAGE;
    if (!l->codecs->decompress)
        return KERR_UNSUPPORTED_COMPRESSION_TYPE;
    buf_reset(scratch);
    int rc = l->codecs->decompress(l->codecs->ctx, rb_codec(h), p + RB_HEADER_SIZE, size - RB_HEADER_SIZE, scratch);
    if (rc == KERR_UNSUPPORTED_COMPRESSION_TYPE)
        return rc;
    if (rc) {
        slog_error("log cleaner: %s: cannot decompress the batch at offset %" PRId64 ": %s", l->dir, h->base_offset,
                   kerr_name((int16_t)rc));
        return KERR_CORRUPT_MESSAGE;
    }
    rb_record_iter_init(it, scratch->data, scratch->len, h->records_count);
    return 0;
}

/* Adds the records of [first_dirty, end) of one segment to the map.
 * *stop_at: the base offset of the first batch that did not fit (the map
 * ends there), else unchanged. */
/* The cleaner's I/O bound (log.cleaner.io.max.bytes.per.second): every
 * byte read or written is counted against the throttle shared by the
 * cleaner threads, and a pass over it sleeps here, in short slices so
 * that a stop or a truncation is not kept waiting. */
struct clean_io {
    struct plog *l;
    struct throttle *t; /* NULL: no bound */
    const atomic_bool *stop;
};

static void io_pace(const struct clean_io *io, int64_t n)
{
    if (!io->t)
        return;
    int64_t ms = throttle_record(io->t, n, clock_mono_ms());
    while (ms > 0 && !(io->stop && atomic_load(io->stop)) && !atomic_load(&io->l->abort_clean)) {
        int64_t slice = ms < 50 ? ms : 50;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)slice * 1000000L};
        nanosleep(&ts, NULL);
        ms -= slice;
    }
}

static int map_segment(struct plog *l, struct sfile *f, int64_t size, int64_t first_dirty, int64_t end,
                       struct offset_map *m, int64_t *stop_at, int64_t *bytes_read, const struct clean_io *io)
{
    struct bcursor c;
    bcur_init(&c, f->fd, 0, size, CLEAN_READAHEAD);
    struct buf scratch = BUF_INIT;
    struct rb_header h;
    int st, rc = 0;
    while ((st = bcur_header(&c, &h)) == BCUR_OK) {
        int64_t bs = rb_batch_size(&h);
        if (h.base_offset >= end)
            break;
        if (rb_last_offset(&h) < first_dirty || rb_is_control(&h)) {
            bcur_advance(&c, bs);
            continue;
        }
        const uint8_t *p;
        if (bcur_batch(&c, (size_t)bs, &p) != BCUR_OK) {
            st = c.err ? BCUR_IOERR : BCUR_BAD;
            break;
        }
        *bytes_read += bs;
        io_pace(io, bs);
        /* Records of an aborted transaction supersede nothing (Kafka's
         * buildOffsetMap skips them); the filter drops them. */
        if (rb_is_transactional(&h) && plog_txn_is_aborted(l, h.producer_id, h.base_offset)) {
            bcur_advance(&c, bs);
            continue;
        }
        struct rb_record_iter it;
        rc = records_of(l, p, (size_t)bs, &h, &scratch, &it);
        if (rc == KERR_UNSUPPORTED_COMPRESSION_TYPE) {
            /* Unknown keys: they supersede nothing, and the batch is kept
             * whole when cleaning. */
            rc = 0;
            bcur_advance(&c, bs);
            continue;
        }
        if (rc)
            break;
        /* All records of a batch go in, or none: the map ends at a batch
         * boundary. Check the room first with a dry count. */
        struct rb_record r;
        size_t need = 0;
        struct rb_record_iter it2 = it;
        int n;
        while ((n = rb_record_next(&it2, &r)) == 1)
            if (r.key.len >= 0 && map_get(m, r.key) < 0)
                need += (size_t)r.key.len + MAP_ENTRY_OVERHEAD;
        if (n < 0) {
            slog_error("log cleaner: %s: malformed record in the batch at offset %" PRId64 ": %s", l->dir,
                       h.base_offset, it2.reason ? it2.reason : "?");
            rc = KERR_CORRUPT_MESSAGE;
            break;
        }
        if (m->bytes + need > m->budget) {
            *stop_at = h.base_offset;
            break;
        }
        while (rb_record_next(&it, &r) == 1) {
            int64_t off = h.base_offset + r.offset_delta;
            if (r.key.len >= 0 && off >= first_dirty && off < end)
                map_put(m, r.key, off);
        }
        bcur_advance(&c, bs);
    }
    bcur_free(&c);
    buf_free(&scratch);
    if (rc == 0 && (st == BCUR_IOERR || st == BCUR_BAD)) {
        slog_error("log cleaner: %s: reading at %" PRId64 " failed: %s", l->dir, c.pos,
                   st == BCUR_IOERR ? strerror(c.err) : c.reason);
        rc = KERR_KAFKA_STORAGE_ERROR;
    }
    return rc;
}

/* ---- rewriting ---- */

struct writer {
    const struct clean_io *io;
    struct segment *s;
    struct buf pending;      /* batches not yet written */
    struct rb_header *hdrs;  /* their headers, positions relative to pending */
    size_t *rel;
    size_t n, cap;
};

static int writer_flush(struct plog *l, struct writer *w)
{
    if (w->pending.len == 0)
        return 0;
    int64_t start = w->s->size;
    bool cut_ok;
    int e = segment_write(w->s, w->pending.data, w->pending.len, &cut_ok);
    if (e) {
        slog_error("log cleaner: %s: write to %s failed: %s", l->dir, w->s->log_path, strerror(e));
        return KERR_KAFKA_STORAGE_ERROR;
    }
    for (size_t i = 0; i < w->n; i++)
        segment_note_batch(w->s, &w->hdrs[i], start + (int64_t)w->rel[i]);
    io_pace(w->io, (int64_t)w->pending.len);
    buf_reset(&w->pending);
    w->n = 0;
    return 0;
}

static int writer_add(struct plog *l, struct writer *w, const uint8_t *batch, size_t len)
{
    if (w->n == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 256;
        w->hdrs = xrealloc(w->hdrs, w->cap * sizeof *w->hdrs);
        w->rel = xrealloc(w->rel, w->cap * sizeof *w->rel);
    }
    rb_parse_header(batch, len, &w->hdrs[w->n]);
    w->rel[w->n] = w->pending.len;
    w->n++;
    buf_append(&w->pending, batch, len);
    return w->pending.len >= CLEAN_WRITE_CHUNK ? writer_flush(l, w) : 0;
}

/* ---- transactions (Kafka's CleanedTransactionMetadata) ---- */

/* A transaction of the pass, from its first batch (an aborted one: from
 * its first offset) to its marker. */
struct txn_seen {
    bool seen; /* a batch of it was read in this pass */
    bool kept; /* one of them stays (for an aborted one: emptied, as its
                * producer's last batch) */
};

/* What one pass learns of transactions, in offset order across its
 * groups: a marker may go once its transaction has no batch left. */
struct txn_track {
    struct plog_aborted_txn *pending; /* the aborted ones, by first offset */
    size_t npending, next;
    struct hmap aborted;   /* producer id -> struct txn_seen *, reached */
    struct hmap committed; /* producer id -> struct txn_seen *, not aborted */
    /* The ABORT markers of the current group whose data the pass did not
     * see: their .txnindex entries go (Kafka writes only the others to
     * the cleaned segment's index). Ascending. */
    int64_t *drop;
    size_t ndrop, dropcap;
    /* A marker stayed only for batches this pass removed: the next pass
     * can start its delete horizon. */
    bool revisit;
};

static int cmp_first_offset(const void *a, const void *b)
{
    int64_t x = ((const struct plog_aborted_txn *)a)->first_offset;
    int64_t y = ((const struct plog_aborted_txn *)b)->first_offset;
    return x < y ? -1 : x > y;
}

static void txn_track_init(struct plog *l, struct txn_track *t)
{
    memset(t, 0, sizeof *t);
    t->npending = plog_txn_aborted_before(l, INT64_MAX, &t->pending);
    if (t->npending > 1)
        qsort(t->pending, t->npending, sizeof *t->pending, cmp_first_offset);
    hmap_init(&t->aborted);
    hmap_init(&t->committed);
}

static void free_values(struct hmap *m)
{
    const void *k;
    size_t kl;
    void *v;
    for (size_t i = 0; hmap_next(m, &i, &k, &kl, &v);)
        free(v);
    hmap_free(m);
}

static void txn_track_free(struct txn_track *t)
{
    free(t->pending);
    free(t->drop);
    free_values(&t->aborted);
    free_values(&t->committed);
}

/* The aborted transactions that started at or before offset are
 * reached (Kafka's consumeAbortedTxnsUpTo). */
static void txn_reach(struct txn_track *t, int64_t offset)
{
    while (t->next < t->npending && t->pending[t->next].first_offset <= offset) {
        int64_t pid = t->pending[t->next++].producer_id;
        if (!hmap_get(&t->aborted, &pid, sizeof pid))
            hmap_put(&t->aborted, &pid, sizeof pid, xcalloc(1, sizeof(struct txn_seen)));
    }
}

/* A data batch read (Kafka's onBatchRead): true when it belongs to an
 * aborted transaction (its records go). */
static bool txn_on_batch(struct txn_track *t, const struct rb_header *h)
{
    txn_reach(t, rb_last_offset(h));
    if (!rb_is_transactional(h))
        return false;
    struct txn_seen *s = hmap_get(&t->aborted, &h->producer_id, sizeof h->producer_id);
    if (s) {
        s->seen = true;
        return true;
    }
    s = hmap_get(&t->committed, &h->producer_id, sizeof h->producer_id);
    if (!s) {
        s = xcalloc(1, sizeof *s);
        hmap_put(&t->committed, &h->producer_id, sizeof h->producer_id, s);
    }
    s->seen = true;
    return false;
}

/* A transactional data batch stays in the cleaned segment. */
static void txn_note_kept(struct txn_track *t, const struct rb_header *h)
{
    if (!rb_is_transactional(h))
        return;
    struct txn_seen *s = hmap_get(&t->aborted, &h->producer_id, sizeof h->producer_id);
    if (!s)
        s = hmap_get(&t->committed, &h->producer_id, sizeof h->producer_id);
    if (s)
        s->kept = true;
}

/* A control batch read (Kafka's onControlBatchRead): true when its
 * transaction has no batch left before it, so the marker may go once
 * its delete horizon passes. An ABORT marker kept for its data keeps
 * its .txnindex entry; the entry of any other goes. */
static bool txn_on_control(struct txn_track *t, const uint8_t *p, size_t size, const struct rb_header *h)
{
    txn_reach(t, rb_last_offset(h));
    /* an empty control batch was a removable marker already */
    if (h->records_count <= 0)
        return true;
    int16_t type;
    int32_t cepoch;
    if (plog_marker_of(p, size, &type, &cepoch) != 0)
        return false; /* not a COMMIT or ABORT: kept */
    struct hmap *m = type == RB_CONTROL_ABORT ? &t->aborted : &t->committed;
    struct txn_seen *s = hmap_del(m, &h->producer_id, sizeof h->producer_id);
    bool removable = !s || !s->seen;
    if (!removable && !s->kept)
        t->revisit = true;
    free(s);
    if (removable && type == RB_CONTROL_ABORT) {
        if (t->ndrop == t->dropcap) {
            t->dropcap = t->dropcap ? t->dropcap * 2 : 16;
            t->drop = xrealloc(t->drop, t->dropcap * sizeof *t->drop);
        }
        t->drop[t->ndrop++] = h->base_offset;
    }
    return removable;
}

/* ---- filtering ---- */

struct filter_ctx {
    struct plog *l;
    struct txn_track txn;
    const struct offset_map *map;
    /* producer id -> last offset of its last batch, for the producers the
     * log knows (taken when the clean starts; values are int64_t *). */
    const struct hmap *last_batches;
    int64_t now;
    int64_t delete_retention_ms;
    /* earliest delete horizon of a kept tombstone or removable marker */
    int64_t min_horizon;
    struct plog_clean_stats *st;
    struct buf scratch, out, recs;
};

/* Kafka's Cleaner.shouldRetainRecord, without the transaction parts:
 * the latest record of its key, and for a tombstone, the batch's delete
 * horizon not passed yet (a batch without one has not been cleaned
 * before: its tombstones stay and get one). */
static bool retain(const struct filter_ctx *fc, const struct rb_header *h, const struct rb_record *r, int64_t offset)
{
    if (r->key.len < 0)
        return false;
    if (offset < map_get(fc->map, r->key))
        return false;
    if (r->value.len >= 0)
        return true;
    return !rb_has_delete_horizon(h) || fc->now < h->base_timestamp;
}

/* ---- record re-encoding (a new base timestamp) ---- */

static const uint8_t *skip_varint(const uint8_t *p, const uint8_t *end)
{
    while (p < end && (*p & 0x80))
        p++;
    return p < end ? p + 1 : end;
}

static void put_varlong(struct buf *b, int64_t v)
{
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    while (z >= 0x80) {
        buf_put_u8(b, (uint8_t)(z | 0x80));
        z >>= 7;
    }
    buf_put_u8(b, (uint8_t)z);
}

/* Appends the record (its raw bytes at p, size bytes, parsed as r) with
 * its timestamp delta taken against new_base instead of old_base. */
static void reencode_record(struct buf *out, const uint8_t *p, size_t size, const struct rb_record *r,
                            int64_t old_base, int64_t new_base)
{
    const uint8_t *end = p + size;
    const uint8_t *body = skip_varint(p, end);        /* after the length */
    const uint8_t *rest = skip_varint(body + 1, end); /* after the timestamp delta */
    rest = skip_varint(rest, end);                     /* after the offset delta */
    int64_t ts = (int64_t)((uint64_t)old_base + (uint64_t)r->timestamp_delta);
    struct buf nb = BUF_INIT;
    buf_put_u8(&nb, (uint8_t)r->attributes);
    put_varlong(&nb, (int64_t)((uint64_t)ts - (uint64_t)new_base));
    put_varlong(&nb, r->offset_delta);
    buf_append(&nb, rest, (size_t)(end - rest));
    put_varlong(out, (int64_t)nb.len);
    buf_append(out, nb.data, nb.len);
    buf_free(&nb);
}

/* Filters one batch into the writer (Kafka's MemoryRecords.filterTo for
 * the cleaner). A batch that keeps tombstones and has no delete horizon
 * yet gets one, now + delete.retention.ms (KIP-534): its baseTimestamp
 * becomes the horizon, the delete-horizon attribute is set and the
 * records' timestamp deltas are re-encoded against it, so every record
 * keeps its timestamp. A later pass drops those tombstones once the
 * horizon has passed. */
static bool is_last_batch_of_producer(const struct filter_ctx *fc, const struct rb_header *h)
{
    if (!rb_has_producer_id(h) || !fc->last_batches)
        return false;
    const struct plog_last_record *last = hmap_get(fc->last_batches, &h->producer_id, sizeof h->producer_id);
    if (!last)
        return false;
    /* Kafka's isBatchLastRecordOfProducer: the batch of the last
     * sequence, or, when the producer's last entry is a marker (an epoch
     * bump dropped its batches), the markers of its epoch, which fence
     * older epochs. */
    if (last->last_data_offset >= 0)
        return last->last_data_offset == rb_last_offset(h);
    return rb_is_control(h) && h->producer_epoch == last->epoch;
}

/* Kafka's BatchRetention.RETAIN_EMPTY: the batch that holds a
 * producer's last sequence stays, emptied, so that a replica rebuilding
 * its producer state from this log still knows the producer (else a
 * retry of that batch after a leader change would be appended twice). */
static int retain_empty(struct filter_ctx *fc, struct writer *w, const uint8_t *p, const struct rb_header *h)
{
    fc->st->batches_rebuilt++;
    buf_reset(&fc->out);
    buf_append(&fc->out, p, RB_HEADER_SIZE);
    uint8_t *b = fc->out.data;
    be32_write(b + RB_OFF_BATCH_LENGTH, (uint32_t)(RB_HEADER_SIZE - RB_LOG_OVERHEAD));
    /* As Kafka's writeEmptyHeader: both timestamps the batch's max
     * timestamp, no delete horizon. */
    be16_write(b + RB_OFF_ATTRIBUTES, (uint16_t)(h->attributes & ~(RB_ATTR_CODEC_MASK | RB_ATTR_DELETE_HORIZON)));
    be64_write(b + RB_OFF_BASE_TIMESTAMP, (uint64_t)h->max_timestamp);
    be32_write(b + RB_OFF_RECORDS_COUNT, 0);
    rb_recompute_crc(b, fc->out.len);
    return writer_add(fc->l, w, fc->out.data, fc->out.len);
}

/* Writes the batch p (header h, records it) again with the records
 * retain() keeps (all of them when all), kept of them; with set_horizon
 * its base timestamp becomes base_ts, the delete horizon, and the
 * records' timestamp deltas are re-encoded against it. */
static int write_rebuilt(struct filter_ctx *fc, struct writer *w, const uint8_t *p, const struct rb_header *h,
                         struct rb_record_iter *it, bool all, bool set_horizon, int64_t base_ts, int32_t kept)
{
    struct plog *l = fc->l;
    fc->st->batches_rebuilt++;
    buf_reset(&fc->recs);
    int64_t max_ts = RB_NO_TIMESTAMP;
    const uint8_t *at = it->p;
    struct rb_record r;
    while (rb_record_next(it, &r) == 1) {
        if (all || retain(fc, h, &r, h->base_offset + r.offset_delta)) {
            if (set_horizon)
                reencode_record(&fc->recs, at, r.size, &r, h->base_timestamp, base_ts);
            else
                buf_append(&fc->recs, at, r.size);
            int64_t ts = (int64_t)((uint64_t)h->base_timestamp + (uint64_t)r.timestamp_delta);
            if (ts > max_ts)
                max_ts = ts;
        }
        at = it->p;
    }
    /* The header as it was (offsets, producer fields), then the records. */
    buf_reset(&fc->out);
    buf_append(&fc->out, p, RB_HEADER_SIZE);
    int16_t attrs = h->attributes;
    if (set_horizon)
        attrs = (int16_t)(attrs | RB_ATTR_DELETE_HORIZON);
    if (rb_codec(h) != RB_CODEC_NONE) {
        bool recompressed = false;
        if (l->codecs->compress) {
            size_t before = fc->out.len;
            if (l->codecs->compress(l->codecs->ctx, rb_codec(h), fc->recs.data, fc->recs.len, &fc->out) == 0)
                recompressed = true;
            else
                fc->out.len = before;
        }
        if (!recompressed) {
            attrs = (int16_t)(attrs & ~RB_ATTR_CODEC_MASK);
            buf_append(&fc->out, fc->recs.data, fc->recs.len);
        }
    } else {
        buf_append(&fc->out, fc->recs.data, fc->recs.len);
    }
    uint8_t *b = fc->out.data;
    be32_write(b + RB_OFF_BATCH_LENGTH, (uint32_t)(fc->out.len - RB_LOG_OVERHEAD));
    be16_write(b + RB_OFF_ATTRIBUTES, (uint16_t)attrs);
    be64_write(b + RB_OFF_BASE_TIMESTAMP, (uint64_t)base_ts);
    be32_write(b + RB_OFF_RECORDS_COUNT, (uint32_t)kept);
    if (rb_timestamp_type(h) == RB_CREATE_TIME)
        be64_write(b + RB_OFF_MAX_TIMESTAMP, (uint64_t)max_ts);
    rb_recompute_crc(b, fc->out.len);
    return writer_add(l, w, fc->out.data, fc->out.len);
}

/* A transaction marker (Kafka's cleaner, KIP-534): it stays while its
 * transaction has batches left before it. Once it has none, the first
 * pass stamps its delete horizon (now + delete.retention.ms, as for
 * tombstones) and a pass after the horizon removes it, so a consumer
 * that was behind still sees it; the producer's last batch stays
 * (emptied once removable: it holds the epoch that fences). */
static int filter_control(struct filter_ctx *fc, struct writer *w, const uint8_t *p, size_t size,
                          const struct rb_header *h)
{
    struct plog_clean_stats *st = fc->st;
    bool removable = txn_on_control(&fc->txn, p, size, h);
    bool has_horizon = rb_has_delete_horizon(h);
    if (h->records_count <= 0 || (removable && has_horizon && h->base_timestamp <= fc->now)) {
        if (is_last_batch_of_producer(fc, h))
            return retain_empty(fc, w, p, h);
        st->batches_dropped++;
        return 0;
    }
    struct rb_record_iter it;
    int rc = removable && !has_horizon ? records_of(fc->l, p, size, h, &fc->scratch, &it) : 0;
    if (rc && rc != KERR_UNSUPPORTED_COMPRESSION_TYPE)
        return rc;
    st->records_kept += h->records_count;
    if (!removable || has_horizon || rc) {
        if (removable && has_horizon && h->base_timestamp < fc->min_horizon)
            fc->min_horizon = h->base_timestamp;
        st->batches_copied++;
        return writer_add(fc->l, w, p, size);
    }
    int64_t horizon = fc->now + fc->delete_retention_ms;
    if (horizon < fc->min_horizon)
        fc->min_horizon = horizon;
    return write_rebuilt(fc, w, p, h, &it, true, true, horizon, h->records_count);
}

/* Filters one batch into the writer (Kafka's MemoryRecords.filterTo for
 * the cleaner). A batch that keeps tombstones and has no delete horizon
 * yet gets one, now + delete.retention.ms (KIP-534): its baseTimestamp
 * becomes the horizon, the delete-horizon attribute is set and the
 * records' timestamp deltas are re-encoded against it, so every record
 * keeps its timestamp. A later pass drops those tombstones once the
 * horizon has passed. A batch left without records goes, unless it holds
 * its producer's last sequence. */
static int filter_batch(struct filter_ctx *fc, struct writer *w, const uint8_t *p, size_t size,
                        const struct rb_header *h)
{
    struct plog *l = fc->l;
    struct plog_clean_stats *st = fc->st;
    st->records_read += h->records_count > 0 ? h->records_count : 0;
    if (rb_is_control(h))
        return filter_control(fc, w, p, size, h);
    /* Kafka's cleaner removes the data of aborted transactions. */
    if (txn_on_batch(&fc->txn, h)) {
        if (is_last_batch_of_producer(fc, h)) {
            txn_note_kept(&fc->txn, h);
            return retain_empty(fc, w, p, h);
        }
        st->batches_dropped++;
        return 0;
    }
    struct rb_record_iter it;
    int rc = records_of(l, p, size, h, &fc->scratch, &it);
    if (rc == KERR_UNSUPPORTED_COMPRESSION_TYPE) {
        st->batches_copied++;
        st->records_kept += h->records_count > 0 ? h->records_count : 0;
        txn_note_kept(&fc->txn, h);
        return writer_add(l, w, p, size);
    }
    if (rc)
        return rc;
    bool has_horizon = rb_has_delete_horizon(h);
    /* First pass: which records stay. */
    struct rb_record_iter it0 = it;
    struct rb_record r;
    int32_t kept = 0, total = 0, tombstones = 0;
    int n;
    while ((n = rb_record_next(&it0, &r)) == 1) {
        total++;
        if (retain(fc, h, &r, h->base_offset + r.offset_delta)) {
            kept++;
            tombstones += r.value.len < 0;
        }
    }
    if (n < 0) {
        slog_error("log cleaner: %s: malformed record in the batch at offset %" PRId64 ": %s", l->dir,
                   h->base_offset, it0.reason ? it0.reason : "?");
        return KERR_CORRUPT_MESSAGE;
    }
    if (kept == 0) {
        if (is_last_batch_of_producer(fc, h)) {
            txn_note_kept(&fc->txn, h);
            return retain_empty(fc, w, p, h);
        }
        st->batches_dropped++;
        return 0;
    }
    st->records_kept += kept;
    txn_note_kept(&fc->txn, h);
    bool set_horizon = !has_horizon && tombstones > 0;
    int64_t base_ts = set_horizon ? fc->now + fc->delete_retention_ms : h->base_timestamp;
    /* With tombstones kept, base_ts is the batch's horizon either way. */
    if (tombstones > 0 && base_ts < fc->min_horizon)
        fc->min_horizon = base_ts;
    if (kept == total && !set_horizon) {
        st->batches_copied++;
        return writer_add(l, w, p, size);
    }
    /* Second pass: the kept records, as they are or against the new base
     * timestamp. */
    return write_rebuilt(fc, w, p, h, &it, false, set_horizon, base_ts, kept);
}

/* Rewrites one segment's batches through the filter. 0 (also when a
 * truncation aborts the pass: *aborted is then set) or a Kafka error code. */
static int clean_segment(struct filter_ctx *fc, struct writer *w, struct segment *s, struct sfile *f, int64_t size,
                         bool *aborted)
{
    struct bcursor c;
    bcur_init(&c, f->fd, 0, size, CLEAN_READAHEAD);
    struct rb_header h;
    int st, rc = 0;
    while ((st = bcur_header(&c, &h)) == BCUR_OK) {
        if (atomic_load(&fc->l->abort_clean)) {
            *aborted = true;
            break;
        }
        int64_t bs = rb_batch_size(&h);
        const uint8_t *p;
        if (bcur_batch(&c, (size_t)bs, &p) != BCUR_OK) {
            st = c.err ? BCUR_IOERR : BCUR_BAD;
            break;
        }
        fc->st->bytes_read += bs;
        io_pace(w->io, bs);
        rc = filter_batch(fc, w, p, (size_t)bs, &h);
        if (rc)
            break;
        bcur_advance(&c, bs);
    }
    bcur_free(&c);
    if (rc == 0 && (st == BCUR_IOERR || st == BCUR_BAD)) {
        slog_error("log cleaner: %s: reading %s at %" PRId64 " failed: %s", fc->l->dir, s->log_path, c.pos,
                   st == BCUR_IOERR ? strerror(c.err) : c.reason);
        rc = KERR_KAFKA_STORAGE_ERROR;
    }
    return rc;
}

/* ---- the swap ---- */

static void set_mtime(struct segment *s, int64_t ms)
{
    struct timespec t[2];
    t[0].tv_sec = 0;
    t[0].tv_nsec = UTIME_OMIT;
    t[1].tv_sec = (time_t)(ms / 1000);
    t[1].tv_nsec = (long)(ms % 1000) * 1000000L;
    /* By name: the cleaned segment's fd may have left the fd cache. */
    utimensat(AT_FDCWD, s->log_path, t, 0);
}

/* Replaces segs[from, from + k) by cleaned (named .cleaned, complete and
 * durable). Called with maint_lock held. */
static int swap_in(struct plog *l, size_t from, size_t k, struct segment *cleaned, int64_t now,
                   const struct txn_track *t)
{
    /* The aborted transactions of the replaced segments go with the
     * cleaned one (its .txnindex is renamed with it from here on). */
    srw_rdlock(&l->seg_lock); /* a roll may grow the list meanwhile */
    int64_t first_base = l->segs[from]->base_offset, last_base = l->segs[from + k - 1]->base_offset;
    srw_unlock(&l->seg_lock);
    int rc = plog_txn_write_merged(l, cleaned->base_offset, first_base, last_base + 1, cleaned->suffix, t->drop,
                                   t->ndrop);
    if (rc)
        return rc;
    rc = segment_rename(cleaned, SEGMENT_SWAP_SUFFIX);
    if (rc)
        return rc;
    int e = fs_sync_dir(l->dir);
    if (e) {
        slog_error("log cleaner: cannot sync directory %s: %s", l->dir, strerror(e));
        return KERR_KAFKA_STORAGE_ERROR;
    }
    struct segment **old = xmalloc(k * sizeof *old);
    int64_t old_bytes = 0;
    srw_wrlock(&l->seg_lock);
    for (size_t i = 0; i < k; i++) {
        old[i] = l->segs[from + i];
        old_bytes += old[i]->size;
    }
    l->segs[from] = cleaned;
    memmove(l->segs + from + 1, l->segs + from + k, (l->nsegs - from - k) * sizeof *l->segs);
    l->nsegs -= k - 1;
    srw_unlock(&l->seg_lock);
    atomic_fetch_add(&l->size_bytes, cleaned->size - old_bytes);
    /* From here a crash leaves the .swap file, which plog_open puts in
     * place of whatever of the old segments is still there. */
    for (size_t i = 0; i < k; i++)
        plog_trash_segment(l, old[i], now);
    free(old);
    plog_txn_segments_merged(l, cleaned->base_offset, first_base, last_base + 1, t->drop, t->ndrop);
    rc = segment_rename(cleaned, "");
    e = fs_sync_dir(l->dir);
    if (rc == 0 && e) {
        slog_error("log cleaner: cannot sync directory %s: %s", l->dir, strerror(e));
        rc = KERR_KAFKA_STORAGE_ERROR;
    }
    return rc;
}

/* ---- a pass ---- */

int plog_clean(struct plog *l, int64_t now_ms, size_t map_budget, const atomic_bool *stop,
               struct plog_clean_stats *stp)
{
    return plog_clean_throttled(l, now_ms, map_budget, stop, NULL, stp);
}

int plog_clean_throttled(struct plog *l, int64_t now_ms, size_t map_budget, const atomic_bool *stop,
                         struct throttle *io_bound, struct plog_clean_stats *stp)
{
    const struct clean_io io = {.l = l, .t = io_bound, .stop = stop};
    struct plog_clean_stats st_local;
    struct plog_clean_stats *st = stp ? stp : &st_local;
    memset(st, 0, sizeof *st);
    if (plog_has_failed(l))
        return KERR_KAFKA_STORAGE_ERROR;
    slock_lock(&l->maint_lock);
    struct plog_config c;
    plog_get_config(l, &c);
    struct plog_clean_state cs;
    srw_rdlock(&l->seg_lock);
    clean_state_locked(l, &c, now_ms, &cs);
    /* The segments the map reads: copy what the scan needs, then read
     * without the lock (appends only add segments after these). Their
     * files are taken after it, too: an open (fd cache miss) is a system
     * call, and the cleaner runs at nice +5: preempted while it holds
     * seg_lock, it would hold every append of this log (a network worker,
     * a replica fetcher) waiting for its wrlock until it gets a CPU back.
     * The segments stay listed meanwhile: only holders of maint_lock
     * (held here) remove segments. */
    size_t from = plog_floor_index(l, cs.first_dirty), nseg = 0;
    struct segment **segs = xmalloc((l->nsegs ? l->nsegs : 1) * sizeof *segs);
    struct sfile **files = xmalloc((l->nsegs ? l->nsegs : 1) * sizeof *files);
    int64_t *sizes = xmalloc((l->nsegs ? l->nsegs : 1) * sizeof *sizes);
    int rc = 0, fe;
    for (size_t i = from; i + 1 < l->nsegs && l->segs[i]->base_offset < cs.first_uncleanable; i++) {
        segs[nseg] = l->segs[i];
        sizes[nseg] = l->segs[i]->size;
        nseg++;
    }
    srw_unlock(&l->seg_lock);
    for (size_t i = 0; i < nseg; i++) {
        files[i] = segment_file(segs[i], &fe);
        if (!files[i]) {
            /* Out of descriptors (or the file is gone): no clean this
             * time; the cleaner comes back after its backoff. */
            rc = KERR_KAFKA_STORAGE_ERROR;
            nseg = i;
            break;
        }
    }
    free(segs);
    if (rc) {
        for (size_t i = 0; i < nseg; i++)
            sfile_unref(files[i]);
        free(files);
        free(sizes);
        plog_maint_unlock(l);
        return rc;
    }
    /* Nothing dirty, but tombstones whose delete horizon passed: a pass
     * over the clean segments alone (Kafka cleans such a log too). */
    bool dirty = cs.first_dirty < cs.first_uncleanable && nseg > 0;
    if (!c.cleanup_compact || (!dirty && !cs.tombstones_due)) {
        for (size_t i = 0; i < nseg; i++)
            sfile_unref(files[i]);
        free(files);
        free(sizes);
        fdc_trim();
        plog_maint_unlock(l);
        return 0;
    }

    /* 2. The map. */
    struct offset_map map;
    hmap_init(&map.h);
    map.bytes = 0;
    map.budget = map_budget;
    int64_t end = cs.first_uncleanable;
    for (size_t i = 0; i < nseg && rc == 0 && dirty; i++) {
        int64_t stop_at = -1;
        rc = map_segment(l, files[i], sizes[i], cs.first_dirty, end, &map, &stop_at, &st->bytes_read, &io);
        if (stop_at >= 0) {
            end = stop_at;
            break;
        }
    }
    for (size_t i = 0; i < nseg; i++)
        sfile_unref(files[i]);
    free(files);
    free(sizes);
    fdc_trim(); /* the map pinned every dirty segment at once */
    st->map_keys = (int64_t)hmap_count(&map.h);
    st->first_dirty = cs.first_dirty;
    st->end_offset = end;
    if (rc || (dirty && end <= cs.first_dirty)) {
        if (rc == 0)
            slog_warn("log cleaner: %s: the key map (%zu bytes) cannot hold one batch; raise "
                      "log.cleaner.dedupe.buffer.size",
                      l->dir, map_budget);
        hmap_free(&map.h);
        plog_maint_unlock(l);
        return rc;
    }

    /* 3-4. Segments below end, in groups that fit one segment. */
    struct hmap last_batches;
    plog_producers_last_offsets(l, &last_batches);
    struct filter_ctx fc = {.l = l,
                            .map = &map,
                            .last_batches = &last_batches,
                            .now = now_ms,
                            .delete_retention_ms = c.delete_retention_ms,
                            .min_horizon = INT64_MAX,
                            .st = st};
    txn_track_init(l, &fc.txn);
    int64_t read_bytes = st->bytes_read;
    st->bytes_read = 0;
    size_t first = 0;
    for (;;) {
        if ((stop && atomic_load(stop)) || atomic_load(&l->abort_clean))
            break;
        /* The next group, from the list as it is now. */
        srw_rdlock(&l->seg_lock);
        size_t i = first, k = 0;
        int64_t bytes = 0, entries = 0;
        int64_t max_entries = c.segment_index_bytes / OIDX_ENTRY_SIZE;
        while (i + k + 1 < l->nsegs && l->segs[i + k]->base_offset < end) {
            struct segment *s = l->segs[i + k];
            if (k > 0 && (bytes + s->size > c.segment_bytes || entries + (int64_t)s->oidx.f.n > max_entries ||
                          s->next_offset - l->segs[i]->base_offset - 1 > INT32_MAX))
                break;
            bytes += s->size;
            entries += (int64_t)s->oidx.f.n;
            k++;
        }
        if (k == 0) {
            srw_unlock(&l->seg_lock);
            break;
        }
        struct segment **group = xmalloc(k * sizeof *group);
        struct sfile **gf = xmalloc(k * sizeof *gf);
        int64_t *gs = xmalloc(k * sizeof *gs);
        int64_t mtime = 0;
        int ge = 0;
        for (size_t j = 0; j < k; j++) {
            group[j] = l->segs[i + j];
            gs[j] = group[j]->size;
        }
        int64_t base = group[0]->base_offset;
        struct segment_opts so = plog_segment_opts(l);
        srw_unlock(&l->seg_lock);
        /* Opens and stats without seg_lock (see the map's files above):
         * the group stays listed while maint_lock is held. */
        for (size_t j = 0; j < k; j++) {
            gf[j] = ge ? NULL : segment_file(group[j], &ge);
            int64_t mt = segment_last_modified(group[j]);
            if (mt > mtime)
                mtime = mt;
        }

        struct segment *cleaned = NULL;
        rc = ge ? KERR_KAFKA_STORAGE_ERROR : segment_create(l->dir, base, &so, SEGMENT_CLEANED_SUFFIX, true, &cleaned);
        struct writer w = {.io = &io, .s = cleaned};
        fc.txn.ndrop = 0; /* the group's own */
        bool aborted = false;
        for (size_t j = 0; j < k && rc == 0 && !aborted; j++)
            rc = clean_segment(&fc, &w, group[j], gf[j], gs[j], &aborted);
        if (rc == 0 && !aborted)
            rc = writer_flush(l, &w);
        if (rc == 0 && !aborted) {
            int e = segment_seal(cleaned);
            if (e == 0)
                e = segment_sync(cleaned);
            if (e == 0)
                e = idxf_sync(&cleaned->oidx.f);
            if (e == 0)
                e = idxf_sync(&cleaned->tidx.f);
            if (e) {
                slog_error("log cleaner: %s: cannot finish %s: %s", l->dir, cleaned->log_path, strerror(e));
                rc = KERR_KAFKA_STORAGE_ERROR;
            }
        }
        if (rc == 0 && !aborted) {
            set_mtime(cleaned, mtime);
            st->bytes_written += cleaned->size;
            rc = swap_in(l, i, k, cleaned, now_ms, &fc.txn);
            if (rc) {
                /* The old segments may already be gone from the list: the
                 * log is consistent on disk (open completes the swap) but
                 * not here, so it goes offline. */
                plog_mark_failed(l);
            }
            st->segments_in += (int)k;
            st->segments_out++;
            first = i + 1;
        } else if (cleaned) {
            segment_unlink(cleaned);
            segment_free(cleaned);
        }
        for (size_t j = 0; j < k; j++)
            sfile_unref(gf[j]);
        free(group);
        free(gf);
        free(gs);
        buf_free(&w.pending);
        free(w.hdrs);
        free(w.rel);
        if (rc || aborted)
            break; /* an abort by a truncation is not an error */
    }
    st->bytes_read += read_bytes;
    bool finished = rc == 0 && !(stop && atomic_load(stop)) && !atomic_load(&l->abort_clean);
    if (finished) {
        if (end > atomic_load(&l->cleaner_offset))
            atomic_store(&l->cleaner_offset, end);
        /* Every segment below end was rewritten: the earliest horizon
         * seen is when a pass can next drop tombstones or markers; a
         * marker whose transaction lost its last batches in this pass
         * can get its horizon in the next one, now. */
        int64_t due = fc.min_horizon;
        if (fc.txn.revisit && now_ms < due)
            due = now_ms;
        atomic_store(&l->tombstone_expiry, due);
    }
    buf_free(&fc.scratch);
    buf_free(&fc.out);
    buf_free(&fc.recs);
    hmap_free(&map.h);
    plog_producers_last_offsets_free(&last_batches);
    txn_track_free(&fc.txn);
    plog_maint_unlock(l);
    /* Cleaned segments can have lower largest timestamps (retention) and
     * leave a new dirty section (the cleaner). */
    plog_note_changed(l, true, true);
    return rc;
}
