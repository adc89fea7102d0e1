/* The log cleaner: compaction of logs with cleanup.policy compact (Kafka's
 * LogCleaner), one log at a time per cleaner thread (log/logmgr.c runs the
 * threads and picks the logs).
 *
 * A pass over a log:
 *   1. the dirty section is [first dirty offset, first uncleanable offset):
 *      from the cleaner checkpoint (or the log start) up to the smallest of
 *      the active segment's base offset (the active segment is never
 *      cleaned), the high watermark, and the base of the first segment
 *      holding records younger than min.compaction.lag.ms;
 *   2. a key -> latest offset map is built over the dirty section (keys
 *      compared as bytes; bounded by the memory budget: a smaller dirty
 *      section is cleaned when the map fills);
 *   3. every segment below the end of the map is rewritten, in groups that
 *      fit segment.bytes, into NNN.log.cleaned (+ indexes): a record stays
 *      when no later record has its key. A tombstone (null value) stays
 *      too the first time; its batch then gets a delete horizon, now +
 *      delete.retention.ms (KIP-534: the delete-horizon attribute, with
 *      baseTimestamp holding the horizon and record timestamps kept), and
 *      a pass after the horizon drops it, so consumers get
 *      delete.retention.ms to see it. A log whose earliest horizon has
 *      passed is cleaned even without dirty data. Keyless records are
 *      dropped, as Kafka's cleaner does. Batches keep their base offset
 *      and lastOffsetDelta, records their offsets: offsets keep their
 *      gaps. A batch whose records all stay (and needs no horizon) is
 *      copied byte for byte; one that loses all of them is dropped,
 *      except the batch holding its producer's last sequence (Kafka's
 *      RETAIN_EMPTY: it stays without records, so a replica rebuilding
 *      the producer state from this log still deduplicates);
 *   4. the cleaned group replaces the old segments by renames:
 *      .cleaned -> .swap, old segments -> .deleted, .swap -> plain name;
 *      plog_open completes or discards a swap a crash interrupted, so the
 *      log is valid at every step;
 *   5. the cleaner checkpoint moves to the end of the map.
 *
 * Transactions (Kafka's CleanedTransactionMetadata): nothing at or past
 * the last stable offset is cleaned; the records of aborted transactions
 * supersede nothing and are dropped; a COMMIT or ABORT marker stays while
 * a batch of its transaction is left before it, then gets a delete
 * horizon as a tombstone does (the first pass that finds it removable)
 * and goes in a pass after the horizon, unless it is its producer's last
 * entry. The .txnindex entry of an ABORT marker goes with the pass that
 * finds the transaction's data gone. A pass that removed a transaction's
 * last batches brings the cleaner back at once, to start the marker's
 * horizon.
 *
 * Compressed batches are cleaned through the codecs given to plog_open;
 * without a codec for one, the batch is kept whole. */
#ifndef SAMSA_LOG_CLEANER_H
#define SAMSA_LOG_CLEANER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct plog;

struct plog_clean_state {
    int64_t first_dirty;       /* first offset not yet cleaned */
    int64_t first_uncleanable; /* the dirty section ends here */
    int64_t clean_bytes;       /* bytes of segments wholly below first_dirty */
    int64_t dirty_bytes;       /* bytes of segments in [first_dirty, first_uncleanable) */
    double dirty_ratio;        /* dirty / (clean + dirty) */
    bool must_clean;           /* max.compaction.lag.ms exceeded */
    bool tombstones_due;       /* a tombstone's or marker's delete horizon has passed */
    /* Until this wall time (ms) the state stays as it is unless the log
     * rolls, is cleaned, truncated or reconfigured or its start offset
     * moves (plog_take_clean_changed tells): when a tombstone's horizon,
     * min.compaction.lag.ms or max.compaction.lag.ms next matter.
     * INT64_MIN while it follows the high watermark or last stable
     * offset (below the active segment), which move unannounced. */
    int64_t recheck_ms;
};

/* The dirty section of a compacted log now. False when there is nothing
 * to clean (not compacted, no dirty segment and no tombstone due). The
 * earliest delete horizon is kept in memory only: after a restart,
 * tombstones wait for the next pass that dirty data triggers (as in
 * Kafka). */
bool plog_cleanable(struct plog *l, int64_t now_ms, struct plog_clean_state *st);
/* True when one of the events of plog_clean_state.recheck_ms happened
 * since the last call (and at first); clears the flag. Call before
 * plog_cleanable, so that an event during it is not lost. */
bool plog_take_clean_changed(struct plog *l);

struct plog_clean_stats {
    int64_t bytes_read, bytes_written;
    int64_t records_read, records_kept;
    int64_t batches_copied, batches_rebuilt, batches_dropped;
    int64_t map_keys;
    int segments_in, segments_out;
    int64_t first_dirty, end_offset; /* the range the map covered */
};

/* One cleaning pass (steps 1-5 above). map_budget bounds the key map's
 * memory. Gives up (returning 0, nothing swapped for the group in
 * progress) when *stop becomes true or the log is truncated. 0, or
 * KERR_KAFKA_STORAGE_ERROR on an I/O error (logged; the log is left as it
 * was before the failing group). st may be NULL. */
int plog_clean(struct plog *l, int64_t now_ms, size_t map_budget, const atomic_bool *stop,
               struct plog_clean_stats *st);
/* The same, with every byte read and written counted against io_bound
 * (shared by the cleaner threads; NULL: no bound), sleeping when over
 * it (log.cleaner.io.max.bytes.per.second, Kafka's cleaner Throttler). */
struct throttle;
int plog_clean_throttled(struct plog *l, int64_t now_ms, size_t map_budget, const atomic_bool *stop,
                         struct throttle *io_bound, struct plog_clean_stats *st);

#endif
