/* The partition log: the storage under one topic partition.
 *
 * On disk, Kafka's layout:
 *   <log.dir>/<topic>-<partition>/
 *       00000000000000000000.log        record batches exactly as produced,
 *                                       with baseOffset and
 *                                       partitionLeaderEpoch set by the
 *                                       leader (both outside the CRC)
 *       00000000000000000000.index      sparse offset index (log/index.h)
 *       00000000000000000000.timeindex  sparse time index
 *       00000000000000012345.log ...    the next segment, named by its base offset
 *       leader-epoch-checkpoint         "0\nN\n<epoch> <start offset>\n..."
 *       partition.metadata              "version: 0\ntopic_id: <base64url>\n"
 *       00000000000000012345.snapshot   producer state below that offset
 *                                       (log/plog_producers.c)
 *       00000000000000012345.txnindex   aborted transactions whose marker
 *                                       is in that segment (log/plog_txn.c)
 *   <log.dir>/.kafka_cleanshutdown      see below (the log dir's, not the log's)
 *
 * Idempotent producers: the log keeps each producer id's epoch and last
 * batches (log/producer_state.h). plog_append checks a batch with a
 * producer id against it (a retried batch is not appended again, see
 * plog_append); every append, a follower's included, updates it.
 *
 * Transactions: transactional batches open a transaction of their
 * producer, markers (control batches, WriteTxnMarkers) end it; plog_append
 * checks a marker's producer and coordinator epochs. The log keeps the
 * first unstable offset for plog_last_stable_offset and the aborted
 * transactions (.txnindex) for plog_aborted_txns (log/plog_txn.c).
 *
 * A segment is rolled when the next append would take the active one past
 * segment.bytes, when segment.ms (less this segment's share of
 * segment.jitter.ms) has passed between its first batch's timestamp and
 * the new batches' (Kafka's rule), when an index is full, or when the
 * offsets would not fit the indexes' relative int32.
 *
 * Durability: the recovery point is the offset below which everything
 * (batches and indexes) is known to be on disk. plog_flush advances it;
 * who calls it when is the flush policy's business (log/logmgr.h: a
 * background flusher for flush.messages / flush.ms and after each roll).
 * The owner persists the recovery point (recovery-point-offset-
 * checkpoint) and gives it back to plog_open.
 *
 * Clean shutdown: as Kafka, one `.kafka_cleanshutdown` per log dir, not
 * per partition: the owner (log/logmgr.h) writes it once every log of
 * the dir closed cleanly (plog_close returned 0), reads and removes it
 * (durably) before any log of the dir opens, and vouches for each log it
 * opens on it (plog_open_opts.clean_shutdown); a crash at any later
 * point, shutdown included, leaves no marker and every log of the dir is
 * recovered. So neither a clean close nor a clean open writes anything
 * for the marker. A `.kafka_cleanshutdown` inside the partition
 * directory (samsa before this scheme wrote one per log) still marks
 * its log clean and is removed (unlink, directory fsync) by the open,
 * before any append. After a clean shutdown every segment is opened through its
 * index files (a few header reads per segment). After an unclean one the
 * segments before the one holding the recovery point are opened the same
 * way, and from that segment on every batch's length and CRC is checked
 * and the indexes rebuilt (entries the files already hold as the rebuild
 * would store them are kept, not rewritten: an idle segment's files stay
 * untouched, log/segment.h SEGMENT_LOAD_RECOVER); the log is cut at the
 * first torn or corrupt batch and later segments are deleted.
 *
 * Threads: plog_append may be called from several threads (it takes the
 * log's append lock: offsets are assigned and the write issued under it).
 * plog_read, plog_offset_for_timestamp, plog_max_timestamp, plog_flush,
 * retention, cleaning and the getters may run concurrently with appends
 * and with each other: they hold a lock only for an in-memory lookup,
 * never during file I/O, except for the short renames that publish a
 * segment change. The end offset is published atomically after the write
 * has completed, so a reader never sees a partially written batch.
 * plog_open, plog_close and plog_delete must not run concurrently with
 * anything else on that log.
 *
 * Errors: functions return Kafka error codes (proto/kerr.h), 0 = ok. I/O
 * failures are logged once and returned as KERR_KAFKA_STORAGE_ERROR. */
#ifndef SAMSA_LOG_PLOG_H
#define SAMSA_LOG_PLOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/kcodec.h"
#include "proto/record_batch.h"

struct sfile;
struct plog;

#define PLOG_CLEAN_SHUTDOWN_FILE ".kafka_cleanshutdown"

#define PLOG_DEFAULT_SEGMENT_BYTES (1024LL * 1024 * 1024) /* segment.bytes */
#define PLOG_DEFAULT_INDEX_INTERVAL_BYTES 4096            /* index.interval.bytes */
/* Kafka's minimum for segment.bytes (LegacyRecord.RECORD_OVERHEAD_V0);
 * positions in Kafka's index files are int32, hence the maximum. */
#define PLOG_MIN_SEGMENT_BYTES 14
#define PLOG_MAX_SEGMENT_BYTES INT32_MAX
/* Kafka's minimum segment.index.bytes: room for one entry of each index. */
#define PLOG_MIN_INDEX_BYTES 12

/* The topic configs the log acts on (Kafka's names). */
struct plog_config {
    int64_t segment_bytes;        /* segment.bytes */
    int32_t index_interval_bytes; /* index.interval.bytes */
    int32_t segment_index_bytes;  /* segment.index.bytes */
    int64_t segment_ms;           /* segment.ms */
    int64_t segment_jitter_ms;    /* segment.jitter.ms */
    int64_t flush_messages;       /* flush.messages: flush once this many are unflushed */
    int64_t flush_ms;             /* flush.ms: flush data older than this */
    int64_t retention_ms;         /* retention.ms, -1 = unlimited */
    int64_t retention_bytes;      /* retention.bytes, -1 = unlimited */
    double min_cleanable_dirty_ratio;
    int64_t min_compaction_lag_ms;
    int64_t max_compaction_lag_ms;
    int64_t delete_retention_ms;  /* delete.retention.ms: tombstones */
    int64_t file_delete_delay_ms; /* file.delete.delay.ms */
    /* The flags last, together (a copy of this is in every log). */
    bool cleanup_delete;          /* cleanup.policy has delete */
    bool cleanup_compact;         /* cleanup.policy has compact */
    /* fdatasync inside plog_append, before it returns and before the
     * batch is visible. For logs without a flusher (the metadata log);
     * partition logs use flush_messages = 1 and the flusher instead. */
    bool fsync_each_append;
};

#define PLOG_DAY_MS (24LL * 60 * 60 * 1000)
/* Kafka's topic defaults. */
#define PLOG_CONFIG_INIT                                                                                      \
    {                                                                                                         \
        .segment_bytes = PLOG_DEFAULT_SEGMENT_BYTES, .index_interval_bytes = PLOG_DEFAULT_INDEX_INTERVAL_BYTES, \
        .segment_index_bytes = 10 * 1024 * 1024, .segment_ms = 7 * PLOG_DAY_MS, .segment_jitter_ms = 0,      \
        .fsync_each_append = false, .flush_messages = INT64_MAX, .flush_ms = INT64_MAX,                       \
        .retention_ms = 7 * PLOG_DAY_MS, .retention_bytes = -1, .cleanup_delete = true,                       \
        .cleanup_compact = false, .min_cleanable_dirty_ratio = 0.5, .min_compaction_lag_ms = 0,               \
        .max_compaction_lag_ms = INT64_MAX, .delete_retention_ms = PLOG_DAY_MS, .file_delete_delay_ms = 60000 \
    }

/* Where a log reports to its owner (log/logmgr.c), each called with
 * plog_open_opts.hooks_ctx: a table the owner's logs can share (no copy
 * per partition). Every callback may run
 * on any thread that uses the log, some under the log's append lock: they
 * must be quick and must not call back into the log. */
struct plog_hooks {
    /* The flush policy wants a flush (flush.messages reached, or a
     * segment was rolled). */
    void (*flush_wanted)(void *ctx, struct plog *l);
    /* The log start offset moved (DeleteRecords, retention). */
    void (*start_offset_moved)(void *ctx, struct plog *l);
    /* An I/O error took the log offline (Kafka then fails its log dir). */
    void (*failed)(void *ctx, struct plog *l);
    /* Retention may now be due earlier than plog_retention_due said when
     * last asked: an append into an empty log, an append while
     * retention.bytes is finite, a config change, a truncation, a
     * cleaning, DeleteRecords. Called at most once until the owner takes
     * the request (plog_take_retention_wanted), so an append pays a
     * relaxed load of a flag when one is pending. */
    void (*retention_wanted)(void *ctx, struct plog *l);
};

/* Codecs, for record-level work on compressed batches (the cleaner,
 * exact timestamp lookups). Provided by the codec plugins (core/plugin)
 * once they exist; NULL functions: compressed batches are handled whole. */
struct plog_codecs {
    rb_codec_fn decompress;
    rb_codec_fn compress;
    void *ctx;
};

struct plog_open_opts {
    /* From recovery-point-offset-checkpoint; -1 when unknown (after an
     * unclean shutdown every segment is then recovered). */
    int64_t recovery_point;
    /* From log-start-offset-checkpoint; -1 when unknown. */
    int64_t log_start_offset;
    /* From cleaner-offset-checkpoint; -1 when unknown. */
    int64_t cleaner_offset;
    /* From replication-offset-checkpoint: the high watermark the owner
     * last had (capped at the log end); -1 when unknown. */
    int64_t high_watermark;
    /* Set by the owner when the log dir fails: the log then refuses
     * everything with KERR_KAFKA_STORAGE_ERROR. May be NULL. */
    const atomic_bool *dir_offline;
    /* May be NULL; kept by pointer (not copied: a table the owner's logs
     * share), so both must outlive the log. */
    const struct plog_hooks *hooks;
    void *hooks_ctx; /* the hooks' ctx argument */
    const struct plog_codecs *codecs;
    /* A new log's directory, partition.metadata and first segment are
     * created without a single fsync: the caller makes them durable
     * (plog_sync_created, then an fsync of the log's parent directory)
     * before it acknowledges the creation, so that many new logs share
     * their syncs. A crash before that leaves at worst a missing
     * directory or files, or an empty partition.metadata, which the next
     * open creates again. */
    bool defer_sync;
    /* The caller has just read partition.metadata and it holds the
     * topic_id given (the registry's start-up scan): not read again. */
    bool topic_id_on_disk;
    /* The owner vouches that the log was closed cleanly (plog_close
     * returned 0) and not written since: its log dir's clean-shutdown
     * marker (log/logmgr.h). The log then skips recovery. */
    bool clean_shutdown;
};

#define PLOG_OPEN_OPTS_INIT {-1, -1, -1, -1, NULL, NULL, NULL, NULL, false, false, false}

/* Opens the log in dir, creating the directory (and an empty first
 * segment) when missing. topic_id may be NULL or zero ("unknown"): then
 * partition.metadata is neither written nor checked. Otherwise a missing
 * file is written and an existing one must carry the same id
 * (KERR_INCONSISTENT_TOPIC_ID when not). Leftovers of an interrupted
 * cleaning or deletion (.cleaned, .swap, .deleted files) are resolved
 * first, then recovery runs as described above.
 *
 * Returns 0 with *out set, KERR_INVALID_CONFIG for a config out of range,
 * KERR_INCONSISTENT_TOPIC_ID, or KERR_KAFKA_STORAGE_ERROR when the
 * directory cannot be created or read. cfg is shared with the logs of
 * an equal config (interned, see plog_set_config); opts is copied (it
 * may be NULL), its hooks and codecs kept by pointer. The caller owns *out and releases it with plog_close or
 * plog_delete. */
int plog_open_ex(const char *dir, const kuuid_t *topic_id, const struct plog_config *cfg,
                 const struct plog_open_opts *opts, struct plog **out);
/* After plog_open_ex with defer_sync: fsyncs the log's directory (the
 * entries of its files; the new files are empty, and like Kafka's
 * segment creation their contents need no fsync). The log's own entry
 * in its parent is the caller's to sync. 0 or an errno value. */
int plog_sync_created(struct plog *l);
/* plog_open_ex without options. */
int plog_open(const char *dir, const kuuid_t *topic_id, const struct plog_config *cfg, struct plog **out);

/* Replaces the config (a topic config change). KERR_INVALID_CONFIG when
 * out of range (nothing changes then). A log keeps no copy of its own:
 * every log with an equal config shares one (log/plog_config.c), and
 * this moves the log to the shared copy of the new one. */
int plog_set_config(struct plog *l, const struct plog_config *cfg);
/* A copy of the config in effect. */
void plog_get_config(struct plog *l, struct plog_config *out);

struct plog_append_result {
    int64_t base_offset;     /* offset given to the first record */
    int64_t last_offset;     /* offset of the last record */
    int64_t log_append_time; /* the append time for LogAppendTime, else -1 */
    int64_t log_start_offset;
    /* The batch was a producer's retry of one already in the log: nothing
     * was appended and the offsets are the original's. */
    bool duplicate;
};

/* Appends len bytes of one or more whole v2 batches (already validated,
 * e.g. by rb_validate_produce). The caller's memory is modified in place:
 * each batch gets its baseOffset (the next offsets, contiguous; a batch
 * takes lastOffsetDelta + 1 of them) and partitionLeaderEpoch =
 * leader_epoch; when append_time_ms_or_minus1 != -1 (a LogAppendTime
 * topic) each batch also gets the LogAppendTime bit, maxTimestamp = that
 * time and a new CRC. All batches go to one segment with one write. A
 * new leader epoch is recorded in leader-epoch-checkpoint first.
 *
 * A batch with a producer id is checked first against the producer
 * state (pstate_check): a duplicate of one of the producer's last five
 * batches appends nothing and answers with that batch's offsets
 * (res->duplicate); KERR_INVALID_PRODUCER_EPOCH,
 * KERR_OUT_OF_ORDER_SEQUENCE_NUMBER and KERR_INVALID_TXN_STATE refuse
 * the append. A transaction marker (a control batch) is checked with
 * pstate_check_marker: KERR_INVALID_PRODUCER_EPOCH,
 * KERR_TRANSACTION_COORDINATOR_FENCED, or KERR_INVALID_RECORD when its
 * control record cannot be read.
 *
 * KERR_CORRUPT_MESSAGE when the bytes are not whole v2 batches (nothing
 * is changed then), KERR_RECORD_LIST_TOO_LARGE for a batch larger than
 * segment.bytes, KERR_KAFKA_STORAGE_ERROR when the write fails (the
 * partial write is cut off again so the log stays as it was; when even
 * that fails, or when an fsync fails, the log refuses further appends and
 * reads with the same error). res may be NULL. */
int plog_append(struct plog *l, uint8_t *batches, size_t len, int32_t leader_epoch, int64_t append_time_ms_or_minus1,
                struct plog_append_result *res);

/* KIP-890 part 1 (Kafka's UnifiedLog.maybeStartTransactionVerification
 * and VerificationGuard): before the first transactional batch of a
 * transaction is appended, the leader asks the transaction coordinator
 * whether the partition is in the producer's transaction.
 * plog_verify_begin: 0 with *guard 0 when the producer has an open
 * transaction here already (nothing to verify), else a guard (non-zero,
 * the same while the producer's verification is pending, a new one after
 * its transaction opened or ended) to pass to plog_append_verified once
 * the coordinator said yes. */
#define PLOG_GUARD_UNCHECKED UINT64_MAX /* verification is off */
int plog_verify_begin(struct plog *l, int64_t producer_id, int16_t epoch, uint64_t *guard);
/* plog_append with the guard of plog_verify_begin (PLOG_GUARD_UNCHECKED:
 * as plog_append). A transactional data batch of a producer without an
 * open transaction here needs the producer's current guard: else
 * KERR_INVALID_TXN_STATE (a marker ended the transaction after the
 * verification, or it was never verified). */
int plog_append_verified(struct plog *l, uint8_t *batches, size_t len, int32_t leader_epoch,
                         int64_t append_time_ms_or_minus1, uint64_t guard, struct plog_append_result *res);

/* plog_append for a coordinator's own write (Kafka's AppendOrigin.
 * COORDINATOR): a data batch with a producer id is checked with
 * pstate_check_coordinator (its epoch only) instead of pstate_check;
 * guard as plog_append_verified (the group coordinator's transactional
 * offset commits are verified like a producer's first batch). */
int plog_append_coordinator(struct plog *l, uint8_t *batches, size_t len, int32_t leader_epoch, uint64_t guard,
                            struct plog_append_result *res);

/* A follower's append (Kafka's appendAsFollower): whole v2 batches as
 * the leader stored them, kept byte for byte (offsets and
 * partitionLeaderEpoch included). Each batch's CRC is checked and the
 * offsets must go up, starting at or after the log end offset
 * (KERR_OFFSET_OUT_OF_RANGE when below it, KERR_CORRUPT_MESSAGE for bad
 * framing or CRC: nothing is written then). The leader-epoch cache
 * takes each new partitionLeaderEpoch at its batch's base offset. Other
 * errors as plog_append. */
int plog_append_follower(struct plog *l, const uint8_t *batches, size_t len, struct plog_append_result *res);

struct plog_read_result {
    struct sfile *file;        /* NULL when len == 0; else a reference the caller must sfile_unref */
    int64_t file_pos;          /* where the first batch starts in file */
    int32_t len;               /* whole batches only */
    int64_t first_base_offset; /* baseOffset of the first batch; -1 when len == 0 */
    int64_t next_offset;       /* lastOffset + 1 of the last batch returned; offset when len == 0 */
};

/* Reads whole batches from the batch that contains offset (the whole
 * batch, even when offset is in its middle), all within one segment, up to
 * max_bytes in total; with min_one_batch the first batch is returned even
 * when larger than max_bytes. Only batches whose last offset is below
 * max_offset_exclusive (pass -1 for "no cap"; e.g. the high watermark) are
 * returned. len 0 when offset is the log end offset or at/after the cap.
 * KERR_OFFSET_OUT_OF_RANGE when offset < log start offset or > log end
 * offset. *res is always initialised. */
int plog_read(struct plog *l, int64_t offset, int32_t max_bytes, bool min_one_batch, int64_t max_offset_exclusive,
              struct plog_read_result *res);

/* The next offset to be assigned; an atomic read. */
int64_t plog_log_end_offset(const struct plog *l);
/* The first offset readable: the first segment's base offset, moved up
 * by DeleteRecords (plog_delete_records) and retention. */
int64_t plog_log_start_offset(const struct plog *l);
/* Everything below it is on disk. */
int64_t plog_recovery_point(const struct plog *l);
/* Bytes in all segments. */
int64_t plog_size_bytes(const struct plog *l);
int plog_segment_count(struct plog *l);
/* Base offsets of the segments, ascending (at most max of them);
 * returns the segment count. */
int plog_segment_bases(struct plog *l, int64_t *bases, int max);
/* The topic id given at open or read from partition.metadata; NULL when
 * none. Points into l. */
const kuuid_t *plog_topic_id(const struct plog *l);
const char *plog_dir(const struct plog *l);
/* The last component of the dir ("<topic>-<partition>"). */
const char *plog_name(const struct plog *l);
/* The hooks given at open (an empty set when none: never NULL), and
 * their ctx. */
const struct plog_hooks *plog_hooks(const struct plog *l);
void *plog_hooks_ctx(const struct plog *l);
/* "<topic>-<partition>" split from the directory name: topic (points into
 * l, not NUL-terminated: *topic_len bytes) and partition; false when the
 * name is not of that form. */
bool plog_topic_partition(const struct plog *l, const char **topic, size_t *topic_len, int32_t *partition);
/* Whether the log refuses I/O (its own failure or its dir's). */
bool plog_offline(const struct plog *l);

/* An aborted transaction (Kafka's AbortedTxn, an entry of a .txnindex):
 * its producer, its first offset, the offset of its ABORT marker, and the
 * last stable offset when the marker was written. */
struct plog_aborted_txn {
    int64_t producer_id;
    int64_t first_offset;
    int64_t last_offset;
    int64_t last_stable_offset;
};
/* Kafka's lastStableOffset: min(first unstable offset, hw), where the
 * first unstable offset is the smallest first offset of the transactions
 * that are open or whose marker is not below hw yet. hw is the owner's
 * high watermark (replica/partition.c). Lock-free unless a completed
 * transaction awaits replication. */
int64_t plog_last_stable_offset(struct plog *l, int64_t hw);
/* Kafka's collectAbortedTransactions: the aborted transactions whose
 * marker is at or after from and whose first offset is below upper
 * (Fetch's AbortedTransactions for the batches of [from, upper)), in
 * marker order. Returns their count; *out is malloc'ed (the caller
 * frees; NULL when 0). */
size_t plog_aborted_txns(struct plog *l, int64_t from, int64_t upper, struct plog_aborted_txn **out);
/* The owner's high watermark (replication): retention and the cleaner
 * never go past it. Until set, the log end offset stands in. */
void plog_set_high_watermark(struct plog *l, int64_t hw);
int64_t plog_high_watermark(const struct plog *l);
/* The high watermark the owner set (or plog_open_opts gave), -1 when
 * none: what replication-offset-checkpoint records. */
int64_t plog_known_high_watermark(const struct plog *l);
/* Process-wide counts of changes to any log's recovery point and known
 * high watermark (they only grow): the log manager writes those
 * checkpoints, a walk over every log, only when its count moved since
 * the last write, so idle partitions cost no periodic work. A change is
 * counted after it is stored. */
uint64_t plog_recovery_point_changes(void);
uint64_t plog_high_watermark_changes(void);

/* Kafka's ListOffsets by timestamp: the earliest offset (>= log start)
 * whose record timestamp is >= ts, and that record's timestamp. For a
 * LogAppendTime batch every record carries the batch's maxTimestamp. A
 * compressed batch is decompressed through the codecs given at open;
 * without a codec for it the batch's base offset and maxTimestamp are
 * returned, which may be a few records early. -1/-1 when no record
 * qualifies. The caller caps the answer at the high watermark / LSO as
 * ListOffsets requires. */
int plog_offset_for_timestamp(struct plog *l, int64_t ts, int64_t *offset, int64_t *timestamp);

/* ListOffsets MAX_TIMESTAMP (-3): the largest timestamp in the log and
 * the offset of the first record that has it (base offset for
 * LogAppendTime and, without a codec, compressed batches). -1/-1 for a
 * log without timestamps. */
int plog_max_timestamp(struct plog *l, int64_t *offset, int64_t *timestamp);

/* Makes everything appended so far durable: fdatasync of the segments
 * holding data above the recovery point, and of the index files of those
 * before the last (recovery rebuilds the last one's), after which the
 * recovery point moves to the log end offset read at the start. The
 * sealed segments' index fds are closed then (their mappings stay).
 * Concurrent appends go on meanwhile (group commit: one flush covers
 * every append before it). 0 or KERR_KAFKA_STORAGE_ERROR (the log is
 * then offline). */
int plog_flush(struct plog *l);

/* The flush policy: true when the log has unflushed data and
 * flush.messages is reached, flush.ms has passed since the last flush,
 * or a rolled segment awaits its flush. *next_due_ms (wall clock) is
 * when flush.ms will next make it due (INT64_MAX: never). */
bool plog_flush_due(struct plog *l, int64_t now_ms, int64_t *next_due_ms);

/* DeleteRecords: moves the log start offset up to offset (never down).
 * KERR_OFFSET_OUT_OF_RANGE when offset is above the high watermark.
 * Whole segments below the new start go at the next retention pass.
 * *low_watermark (may be NULL) gets the log start offset after. */
int plog_delete_records(struct plog *l, int64_t offset, int64_t *low_watermark);

/* Retention (Kafka's deleteOldSegments): with cleanup.policy delete,
 * removes whole segments from the front whose largest timestamp is older
 * than retention.ms, and while the log is larger than retention.bytes by
 * at least a segment; in every case segments entirely below the log
 * start offset. Never beyond the high watermark; the active segment is
 * rolled first when it has to go too. Removed segments are renamed
 * .deleted and their files removed after file.delete.delay.ms
 * (plog_purge_deleted). *deleted (may be NULL) counts them. Skipped
 * (0, nothing deleted) while the cleaner works on the log. */
int plog_retention(struct plog *l, int64_t now_ms, int *deleted);

/* When plog_retention can next delete something (wall clock, ms),
 * assuming none of the events of plog_hooks.retention_wanted happens
 * meanwhile: now_ms when something is deletable now or would be but for
 * the high watermark or a cleaning or truncation in progress (look again
 * at the next check); the time the oldest segment's largest timestamp
 * passes retention.ms; INT64_MAX when time alone deletes nothing (an
 * empty log, retention.ms -1, no delete policy). Never earlier than the
 * deletion it stands for, so its owner may look at the log only then. */
int64_t plog_retention_due(struct plog *l, int64_t now_ms);
/* The owner takes a retention_wanted request (true when one was
 * pending): the next event calls the hook again. Take it before
 * plog_retention and plog_retention_due, so an event after them is not
 * lost. plog_retention_wanted only reads the flag. */
bool plog_take_retention_wanted(struct plog *l);
bool plog_retention_wanted(const struct plog *l);

/* Removes the files of segments deleted at least file.delete.delay.ms
 * ago (all of them with force). Returns how many are still waiting. */
int plog_purge_deleted(struct plog *l, int64_t now_ms, bool force);

/* Over all logs of the process: how many have a finite flush.ms, and how
 * many deleted segments wait for plog_purge_deleted. While both are 0 a
 * periodic walk calling plog_flush_due and plog_purge_deleted on every
 * log would find nothing to do. */
long plog_timed_flush_logs(void);
long plog_trashed_segments(void);

/* Truncates the log to end at offset: batches whose last offset is >=
 * offset go (whole batches), and so does everything after them. The
 * recovery point and the leader-epoch cache follow. For a replica whose
 * tail diverged from the leader's. */
int plog_truncate_to(struct plog *l, int64_t offset);

/* Empties the log and restarts it at offset (a replica too far behind). */
int plog_truncate_fully(struct plog *l, int64_t offset);

/* Leader-epoch cache (Kafka's LeaderEpochFileCache): the latest epoch
 * and its start offset (-1/-1 when empty), and for OffsetForLeaderEpoch
 * the end offset of epoch: the start offset of the first larger epoch, or
 * the log end offset for the latest (*end_epoch gets the largest epoch <=
 * epoch; -1/-1 when none). */
void plog_latest_epoch(struct plog *l, int32_t *epoch, int64_t *start_offset);
void plog_end_offset_for_epoch(struct plog *l, int32_t epoch, int32_t *end_epoch, int64_t *end_offset);
/* The answer OffsetForLeaderEpoch gives a client, as Kafka's
 * LeaderEpochFileCache.endOffsetFor: unlike the above, an epoch above the
 * latest, or -1, is unknown (-1/-1), and one below the earliest ends
 * where the earliest starts (with *end_epoch = epoch). */
void plog_offset_for_leader_epoch(struct plog *l, int32_t epoch, int32_t *end_epoch, int64_t *end_offset);

/* Kafka's removeExpiredProducers (producer.id.expiration.ms): forgets
 * the producers idle for expiration_ms. Returns how many went. */
size_t plog_expire_producers(struct plog *l, int64_t now_ms, int64_t expiration_ms);

/* Calls fn for each producer of the log (DescribeProducers), under the
 * append lock: fn must be quick and must not call into l. */
struct ps_entry;
void plog_producers_foreach(struct plog *l, void (*fn)(void *ctx, const struct ps_entry *e), void *ctx);

/* The cleaner's checkpoint: the first offset not yet cleaned (-1 when
 * the log was never cleaned). */
int64_t plog_cleaner_offset(const struct plog *l);

/* Releases l. With clean, flushes, seals the active segment's indexes
 * and makes them durable (unless the log has failed): an idle log with
 * nothing unflushed and indexes untouched since its open needs no write
 * and no fsync. Returns 0 when the log closed cleanly (its owner may then
 * vouch for it at the next open, plog_open_opts.clean_shutdown), else a
 * Kafka error code (KERR_KAFKA_STORAGE_ERROR; also for clean = false). */
int plog_close(struct plog *l, bool clean);

/* Removes the log: the directory is first renamed to
 * "<dir>.<32 hex>-delete" (Kafka's naming, so a crash half way through
 * never leaves a partial partition to be reopened), then emptied and
 * removed. l is released in every case. sfile references held by readers
 * stay valid: the files stay open until their last reference goes.
 * KERR_KAFKA_STORAGE_ERROR when the directory could not be removed
 * entirely (a "-delete" directory may then be left behind). */
int plog_delete(struct plog *l);

#endif
