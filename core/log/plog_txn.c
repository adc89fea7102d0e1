/* The partition side of transactions, as Kafka's UnifiedLog,
 * ProducerStateManager and TransactionIndex keep it:
 *
 * - The first unstable offset: the smallest first offset of the open
 *   transactions (the producer state's), and of the transactions whose
 *   marker is in the log but not yet below the high watermark (Kafka's
 *   unreplicatedTxns: until the ISR has the marker, a read_committed
 *   reader must not pass the transaction's first offset). The open part
 *   is published atomically under the append lock; the unreplicated list
 *   is short and read under txn_lock. The last stable offset is
 *   min(first unstable offset, high watermark).
 * - The aborted-transaction index: "<segment base>.txnindex" next to each
 *   segment, 34-byte entries (int16 version 0, int64 producer id, int64
 *   first offset, int64 last offset = the ABORT marker's, int64 the last
 *   stable offset when the marker was written), appended when an ABORT
 *   marker goes into that segment (leader and follower alike). The whole
 *   log's entries are also kept in memory, in marker order, for Fetch's
 *   AbortedTransactions (Kafka's collectAbortedTransactions).
 *
 * The files follow their segments: segment_rename and segment_unlink
 * (log/segment.c) take the .txnindex along (retention, file.delete.delay,
 * truncation's dropped segments). The cleaner merges the files of the
 * segments it replaces, less the entries of transactions whose data it
 * found gone (log/cleaner.c). A log that opens reads the files of its
 * segments, then drops the entries at or after the offset where the
 * producer-state replay starts (plog_producers.c), which re-creates them
 * from the markers it reads: an unclean stop, a torn tail or a
 * truncation leaves each file exactly as the remaining markers say. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log/fsutil.h"
#include "log/plog_internal.h"
#include "log/producer_state.h"
#include "log/segment.h"
#include "log/txnindex.h"
#include "proto/kerr.h"
#include "util/fdcache.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/slog.h"

/* A .txnindex larger than this is not one of ours. */
#define TXN_FILE_MAX_BYTES (64LL * 1024 * 1024)

/* Every log's transaction state until its first write (txs_own): all
 * empty, never written (writers check for it). */
static struct plog_txs empty_txs = {.snap_pending_offset = -1};

void plog_txn_init(struct plog *l)
{
    atomic_init(&l->first_unstable, -1);
    atomic_init(&l->nunrepl_pub, 0);
    l->txn_files_loaded = false;
    atomic_init(&l->txs, &empty_txs);
}

void plog_txn_free(struct plog *l)
{
    struct plog_txs *t = atomic_load(&l->txs);
    if (!t || t == &empty_txs)
        return;
    free(t->trash);
    buf_free(&t->snap_pending);
    free(t->aborted);
    free(t->unrepl);
    free(t->txn_dirty);
    free(t->verify);
    free(t);
}

/* l's own transaction state, allocated now if l still has the shared
 * empty one; before any write to it. Two writers may race here (one under
 * txn_lock, one under append_lock): the loser frees its copy. */
struct plog_txs *plog_txs_own(struct plog *l)
{
    struct plog_txs *cur = atomic_load(&l->txs);
    if (cur != &empty_txs)
        return cur;
    struct plog_txs *t = xcalloc(1, sizeof *t);
    t->snap_pending_offset = -1;
    if (atomic_compare_exchange_strong(&l->txs, &cur, t))
        return t;
    free(t);
    return cur;
}

/* ---- KIP-890 verification guards ---- */

/* A guard unverified this long is dropped (its produce request is long
 * answered; Kafka drops them with the producer's expiry). */
#define VERIFY_ENTRY_MAX_AGE_MS (10 * 60 * 1000)

static _Atomic uint64_t next_guard = 1;

static struct plog_verify_entry *verify_find(struct plog *l, int64_t pid)
{
    for (size_t i = 0; i < l->txs->nverify; i++)
        if (l->txs->verify[i].producer_id == pid)
            return &l->txs->verify[i];
    return NULL;
}

int plog_verify_begin(struct plog *l, int64_t producer_id, int16_t epoch, uint64_t *guard)
{
    slock_lock(&l->append_lock);
    const struct ps_entry *pe = pstate_find(&l->ps, producer_id);
    if (pe && pe->current_txn_first_offset >= 0) {
        *guard = 0;
        slock_unlock(&l->append_lock);
        return 0;
    }
    int64_t now = clock_mono_ms();
    struct plog_verify_entry *v = verify_find(l, producer_id);
    if (!v) {
        plog_txs_own(l);
        /* few at a time: producers between their verification and
         * their first append */
        size_t kept = 0;
        for (size_t i = 0; i < l->txs->nverify; i++)
            if (now - l->txs->verify[i].created_ms < VERIFY_ENTRY_MAX_AGE_MS)
                l->txs->verify[kept++] = l->txs->verify[i];
        l->txs->nverify = kept;
        if (l->txs->nverify == l->txs->verifycap) {
            size_t cap = l->txs->verifycap ? l->txs->verifycap * 2 : 4;
            struct plog_verify_entry *nv = realloc(l->txs->verify, cap * sizeof *nv);
            if (!nv) {
                slock_unlock(&l->append_lock);
                return KERR_KAFKA_STORAGE_ERROR;
            }
            l->txs->verify = nv;
            l->txs->verifycap = cap;
        }
        v = &l->txs->verify[l->txs->nverify++];
        v->producer_id = producer_id;
        v->epoch = epoch;
        v->guard = atomic_fetch_add(&next_guard, 1);
        v->created_ms = now;
    } else if (epoch > v->epoch) {
        /* Kafka's maybeUpdateLowestSequenceAndEpoch: the guard stays */
        v->epoch = epoch;
    }
    *guard = v->guard;
    slock_unlock(&l->append_lock);
    return 0;
}

int plog_txn_verify_check(struct plog *l, int64_t producer_id, uint64_t guard)
{
    const struct plog_verify_entry *v = verify_find(l, producer_id);
    return v && guard != 0 && v->guard == guard ? 0 : KERR_INVALID_TXN_STATE;
}

void plog_txn_verify_clear(struct plog *l, int64_t producer_id)
{
    for (size_t i = 0; i < l->txs->nverify; i++)
        if (l->txs->verify[i].producer_id == producer_id) {
            l->txs->verify[i] = l->txs->verify[--l->txs->nverify];
            return;
        }
}

/* Under txn_lock. */
static void push_aborted(struct plog *l, const struct plog_aborted_txn *a, int64_t seg_base)
{
    plog_txs_own(l);
    if (l->txs->naborted == l->txs->abortedcap) {
        l->txs->abortedcap = l->txs->abortedcap ? l->txs->abortedcap * 2 : 16;
        l->txs->aborted = xrealloc(l->txs->aborted, l->txs->abortedcap * sizeof *l->txs->aborted);
    }
    l->txs->aborted[l->txs->naborted].a = *a;
    l->txs->aborted[l->txs->naborted].seg_base = seg_base;
    l->txs->naborted++;
    if (a->last_offset - a->first_offset > l->txs->aborted_max_span)
        l->txs->aborted_max_span = a->last_offset - a->first_offset;
}

/* Under txn_lock: the file of seg_base wants an fsync at the next flush. */
static void mark_dirty(struct plog *l, int64_t seg_base)
{
    plog_txs_own(l);
    for (size_t i = 0; i < l->txs->ntxn_dirty; i++)
        if (l->txs->txn_dirty[i] == seg_base)
            return;
    if (l->txs->ntxn_dirty == l->txs->txn_dirtycap) {
        l->txs->txn_dirtycap = l->txs->txn_dirtycap ? l->txs->txn_dirtycap * 2 : 4;
        l->txs->txn_dirty = xrealloc(l->txs->txn_dirty, l->txs->txn_dirtycap * sizeof *l->txs->txn_dirty);
    }
    l->txs->txn_dirty[l->txs->ntxn_dirty++] = seg_base;
}

/* Reads the .txnindex of seg_base (a missing file is an empty index).
 * Entries that are not version 0 or whose offsets make no sense end the
 * file's entries (as a torn tail; the replay re-creates what is after
 * the snapshot); *rewrite is then set, and for a partial last entry. */
struct load_ctx {
    struct plog *l;
    int64_t seg_base;
};

static void load_entry(void *ctx, const struct plog_aborted_txn *a)
{
    struct load_ctx *x = ctx;
    push_aborted(x->l, a, x->seg_base);
}

static int load_file(struct plog *l, int64_t seg_base, bool *rewrite)
{
    char *p = segment_file_path(l->dir, seg_base, SEGMENT_TXNINDEX_SUFFIX);
    char *data;
    size_t len;
    int e = fs_read_small(p, TXN_FILE_MAX_BYTES, &data, &len);
    if (e == ENOENT) {
        free(p);
        return 0;
    }
    if (e) {
        slog_error("log: cannot read %s: %s", p, strerror(e));
        free(p);
        return KERR_KAFKA_STORAGE_ERROR;
    }
    /* A torn entry at the end (a crash in the middle of an append) would
     * misalign the next append, and an invalid one ends what can be
     * trusted: the file is rewritten by the reset. */
    struct load_ctx x = {l, seg_base};
    int clean;
    size_t n = txnindex_decode((const uint8_t *)data, len, load_entry, &x, &clean);
    if (!clean) {
        if (n < len / TXNINDEX_ENTRY_SIZE)
            slog_warn("log: %s: ignoring entries from %zu on: not a version 0 entry", p, n);
        *rewrite = true;
    }
    free(data);
    free(p);
    return 0;
}

/* Rewrites the file of seg_base from the in-memory entries (none: the
 * file goes). Under txn_lock. */
static int rewrite_file(struct plog *l, int64_t seg_base)
{
    struct buf b;
    buf_init(&b);
    for (size_t i = 0; i < l->txs->naborted; i++)
        if (l->txs->aborted[i].seg_base == seg_base)
            txnindex_encode(buf_extend(&b, TXNINDEX_ENTRY_SIZE), &l->txs->aborted[i].a);
    char *p = segment_file_path(l->dir, seg_base, SEGMENT_TXNINDEX_SUFFIX);
    int e = 0;
    if (b.len)
        e = fs_write_atomic(p, b.data, b.len);
    else if (unlink(p) != 0 && errno != ENOENT)
        e = errno;
    if (e)
        slog_error("log: cannot rewrite %s: %s", p, strerror(e));
    free(p);
    buf_free(&b);
    return e ? KERR_KAFKA_STORAGE_ERROR : 0;
}

int plog_txn_reset(struct plog *l, int64_t from)
{
    int rc = 0;
    bool changed = false;
    slock_lock(&l->txn_lock);
    if (!l->txn_files_loaded) {
        for (size_t i = 0; i < l->nsegs && rc == 0; i++) {
            bool rewrite = false;
            rc = load_file(l, l->segs[i]->base_offset, &rewrite);
            if (rewrite) {
                mark_dirty(l, l->segs[i]->base_offset);
                changed = true;
            }
        }
        l->txn_files_loaded = true;
    }
    /* Kafka's TransactionIndex.truncateTo: the entries of markers at or
     * after from go; the replay from there writes them again. */
    size_t k = 0;
    for (size_t i = 0; i < l->txs->naborted; i++) {
        if (l->txs->aborted[i].a.last_offset < from) {
            l->txs->aborted[k++] = l->txs->aborted[i];
            continue;
        }
        int64_t base = l->txs->aborted[i].seg_base;
        bool exists = false;
        for (size_t j = 0; j < l->nsegs && !exists; j++)
            exists = l->segs[j]->base_offset == base;
        if (exists)
            mark_dirty(l, base);
    }
    if (k != l->txs->naborted) {
        changed = true;
        l->txs->naborted = k;
    }
    if (changed) {
        /* The dirty list names exactly the files that lost entries. */
        for (size_t i = 0; i < l->txs->ntxn_dirty && rc == 0; i++)
            rc = rewrite_file(l, l->txs->txn_dirty[i]);
    }
    if (l->txs->nunrepl) /* else maybe the shared empty state */
        l->txs->nunrepl = 0;
    atomic_store(&l->nunrepl_pub, 0);
    slock_unlock(&l->txn_lock);
    atomic_store(&l->first_unstable, -1);
    return rc;
}

void plog_txn_publish_first_unstable(struct plog *l)
{
    atomic_store_explicit(&l->first_unstable, pstate_first_unstable_offset(&l->ps, -1), memory_order_release);
}

void plog_txn_opened(struct plog *l, int64_t first_offset)
{
    int64_t cur = atomic_load_explicit(&l->first_unstable, memory_order_relaxed);
    if (cur < 0 || first_offset < cur)
        atomic_store_explicit(&l->first_unstable, first_offset, memory_order_release);
}

int plog_txn_completed(struct plog *l, const struct ps_completed_txn *t, int64_t seg_base)
{
    int rc = 0;
    /* Kafka's lastStableOffset(completedTxn): the next open transaction's
     * first offset (this one is already closed in the state), else the
     * offset after the marker. */
    int64_t next_open = pstate_first_unstable_offset(&l->ps, t->producer_id);
    slock_lock(&l->txn_lock);
    plog_txs_own(l);
    if (l->txs->nunrepl == l->txs->unreplcap) {
        l->txs->unreplcap = l->txs->unreplcap ? l->txs->unreplcap * 2 : 8;
        l->txs->unrepl = xrealloc(l->txs->unrepl, l->txs->unreplcap * sizeof *l->txs->unrepl);
    }
    l->txs->unrepl[l->txs->nunrepl++] = (struct plog_txn_range){t->first_offset, t->last_offset};
    atomic_store(&l->nunrepl_pub, l->txs->nunrepl);
    if (t->aborted) {
        struct plog_aborted_txn a = {
            .producer_id = t->producer_id,
            .first_offset = t->first_offset,
            .last_offset = t->last_offset,
            .last_stable_offset = next_open >= 0 ? next_open : t->last_offset + 1,
        };
        push_aborted(l, &a, seg_base);
        uint8_t e[TXNINDEX_ENTRY_SIZE];
        txnindex_encode(e, &a);
        char *p = segment_file_path(l->dir, seg_base, SEGMENT_TXNINDEX_SUFFIX);
        /* A small write, no fsync: the flusher syncs it (plog_txn_flush)
         * before the producer-state snapshot that would skip its marker. */
        int fd = fdc_open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        ssize_t w = fd >= 0 ? write(fd, e, sizeof e) : -1;
        if (w != (ssize_t)sizeof e) {
            slog_error("log: cannot append to %s: %s", p, w < 0 ? strerror(errno) : "short write");
            rc = KERR_KAFKA_STORAGE_ERROR;
        }
        if (fd >= 0)
            close(fd);
        free(p);
        mark_dirty(l, seg_base);
    }
    slock_unlock(&l->txn_lock);
    plog_txn_publish_first_unstable(l);
    return rc;
}

int plog_txn_flush(struct plog *l)
{
    slock_lock(&l->txn_lock);
    size_t n = l->txs->ntxn_dirty;
    int64_t *v = n ? xmalloc(n * sizeof *v) : NULL;
    if (n)
        memcpy(v, l->txs->txn_dirty, n * sizeof *v);
    if (n)
        l->txs->ntxn_dirty = 0;
    slock_unlock(&l->txn_lock);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char *p = segment_file_path(l->dir, v[i], SEGMENT_TXNINDEX_SUFFIX);
        int fd = fdc_open(p, O_RDONLY | O_CLOEXEC, 0);
        if (fd >= 0) {
            if (fdatasync(fd) != 0) {
                slog_error("log: fdatasync of %s failed: %s", p, strerror(errno));
                rc = KERR_KAFKA_STORAGE_ERROR;
            }
            close(fd);
        } else if (errno != ENOENT) {
            slog_error("log: cannot open %s: %s", p, strerror(errno));
            rc = KERR_KAFKA_STORAGE_ERROR;
        }
        free(p);
    }
    free(v);
    return rc;
}

void plog_txn_segments_deleted(struct plog *l, const int64_t *bases, size_t n)
{
    slock_lock(&l->txn_lock);
    size_t k = 0;
    for (size_t i = 0; i < l->txs->naborted; i++) {
        bool gone = false;
        for (size_t j = 0; j < n && !gone; j++)
            gone = l->txs->aborted[i].seg_base == bases[j];
        if (!gone)
            l->txs->aborted[k++] = l->txs->aborted[i];
    }
    if (k != l->txs->naborted)
        l->txs->naborted = k;
    slock_unlock(&l->txn_lock);
}

/* Whether the entry of a marker at offset is in drop (ascending). */
static bool in_drop(const int64_t *drop, size_t ndrop, int64_t offset)
{
    size_t lo = 0, hi = ndrop;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (drop[mid] < offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ndrop && drop[lo] == offset;
}

int plog_txn_write_merged(struct plog *l, int64_t base, int64_t from, int64_t to, const char *suffix,
                          const int64_t *drop, size_t ndrop)
{
    /* Kafka's cleaner gives the cleaned segment the aborted transactions
     * of the segments it replaces whose data it still saw (the others'
     * markers are on their way out, Kafka's CleanedTransactionMetadata):
     * its .txnindex is written (durably, with the cleaned segment's
     * suffix) before the swap renames it. */
    struct buf b;
    buf_init(&b);
    slock_lock(&l->txn_lock);
    for (size_t i = 0; i < l->txs->naborted; i++) {
        int64_t sb = l->txs->aborted[i].seg_base;
        if (sb >= from && sb < to && !in_drop(drop, ndrop, l->txs->aborted[i].a.last_offset))
            txnindex_encode(buf_extend(&b, TXNINDEX_ENTRY_SIZE), &l->txs->aborted[i].a);
    }
    slock_unlock(&l->txn_lock);
    int e = 0;
    if (b.len) {
        size_t n = strlen(SEGMENT_TXNINDEX_SUFFIX) + strlen(suffix) + 1;
        char *sfx = xmalloc(n);
        snprintf(sfx, n, "%s%s", SEGMENT_TXNINDEX_SUFFIX, suffix);
        char *p = segment_file_path(l->dir, base, sfx);
        e = fs_write_atomic(p, b.data, b.len);
        if (e)
            slog_error("log cleaner: cannot write %s: %s", p, strerror(e));
        free(p);
        free(sfx);
    }
    buf_free(&b);
    return e ? KERR_KAFKA_STORAGE_ERROR : 0;
}

void plog_txn_segments_merged(struct plog *l, int64_t base, int64_t from, int64_t to, const int64_t *drop,
                              size_t ndrop)
{
    slock_lock(&l->txn_lock);
    size_t k = 0;
    for (size_t i = 0; i < l->txs->naborted; i++) {
        int64_t b = l->txs->aborted[i].seg_base;
        if (b >= from && b < to) {
            if (in_drop(drop, ndrop, l->txs->aborted[i].a.last_offset))
                continue;
            l->txs->aborted[i].seg_base = base;
        }
        l->txs->aborted[k++] = l->txs->aborted[i];
    }
    if (k != l->txs->naborted)
        l->txs->naborted = k;
    slock_unlock(&l->txn_lock);
}

size_t plog_txn_aborted_before(struct plog *l, int64_t upper, struct plog_aborted_txn **out)
{
    *out = NULL;
    size_t n = 0;
    slock_lock(&l->txn_lock);
    if (l->txs->naborted > 0)
        *out = xmalloc(l->txs->naborted * sizeof **out);
    for (size_t i = 0; i < l->txs->naborted; i++)
        if (l->txs->aborted[i].a.first_offset < upper)
            (*out)[n++] = l->txs->aborted[i].a;
    slock_unlock(&l->txn_lock);
    return n;
}

int64_t plog_last_stable_offset(struct plog *l, int64_t hw)
{
    int64_t fuo = atomic_load_explicit(&l->first_unstable, memory_order_acquire);
    if (atomic_load(&l->nunrepl_pub) > 0) {
        slock_lock(&l->txn_lock);
        /* Kafka's onHighWatermarkUpdated: a transaction whose marker is
         * below the high watermark is replicated. */
        size_t k = 0;
        for (size_t i = 0; i < l->txs->nunrepl; i++) {
            if (l->txs->unrepl[i].last_offset < hw)
                continue;
            l->txs->unrepl[k++] = l->txs->unrepl[i];
            if (fuo < 0 || l->txs->unrepl[i].first_offset < fuo)
                fuo = l->txs->unrepl[i].first_offset;
        }
        l->txs->nunrepl = k;
        atomic_store(&l->nunrepl_pub, k);
        slock_unlock(&l->txn_lock);
    }
    return fuo >= 0 && fuo < hw ? fuo : hw;
}

bool plog_txn_is_aborted(struct plog *l, int64_t producer_id, int64_t offset)
{
    bool found = false;
    slock_lock(&l->txn_lock);
    size_t lo = 0, hi = l->txs->naborted;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->txs->aborted[mid].a.last_offset < offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* The markers after offset, up to the longest transaction's span. */
    for (size_t i = lo; i < l->txs->naborted && !found; i++) {
        const struct plog_aborted_txn *a = &l->txs->aborted[i].a;
        if (a->last_offset - offset > l->txs->aborted_max_span)
            break;
        found = a->producer_id == producer_id && a->first_offset <= offset;
    }
    slock_unlock(&l->txn_lock);
    return found;
}

size_t plog_aborted_txns(struct plog *l, int64_t from, int64_t upper, struct plog_aborted_txn **out)
{
    *out = NULL;
    size_t n = 0, cap = 0;
    slock_lock(&l->txn_lock);
    /* Entries are in marker order: the first whose marker is at or after
     * from starts the search; it ends after the first whose marker is at
     * or after upper (Kafka's collectAbortedTxns stops there too). */
    size_t lo = 0, hi = l->txs->naborted;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->txs->aborted[mid].a.last_offset < from)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < l->txs->naborted; i++) {
        const struct plog_aborted_txn *a = &l->txs->aborted[i].a;
        if (a->first_offset < upper) {
            if (n == cap) {
                cap = cap ? cap * 2 : 8;
                *out = xrealloc(*out, cap * sizeof **out);
            }
            (*out)[n++] = *a;
        }
        if (a->last_offset >= upper)
            break;
    }
    slock_unlock(&l->txn_lock);
    return n;
}

int plog_marker_of(const uint8_t *batch, size_t size, int16_t *type, int32_t *coordinator_epoch)
{
    struct rb_record_iter it;
    int rc = rb_record_iter_init_batch(&it, batch, size);
    if (rc)
        return rc == KERR_UNSUPPORTED_COMPRESSION_TYPE ? KERR_INVALID_RECORD : rc;
    struct rb_record rec;
    /* Kafka reads the first record only; an empty control batch (its
     * transaction cleaned away) is no marker. */
    if (rb_record_next(&it, &rec) != 1)
        return KERR_INVALID_RECORD;
    return rb_parse_control_record(&rec, type, coordinator_epoch);
}
