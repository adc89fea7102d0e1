/* The partition log: the storage under one topic partition.
 *
 * On disk, Kafka's layout:
 *   <log.dir>/<topic>-<partition>/
 *       00000000000000000000.log   record batches exactly as produced, with
 *                                  baseOffset and partitionLeaderEpoch set by
 *                                  the leader (both outside the CRC)
 *       00000000000000012345.log   the next segment, named by its base offset
 *       partition.metadata         "version: 0\ntopic_id: <base64url>\n"
 *       .kafka_cleanshutdown       see below
 * A segment is rolled when the next append would take the active one past
 * segment.bytes. Each segment keeps a sparse offset index (an entry every
 * index.interval.bytes) and a time index in memory, rebuilt at open from
 * the batch headers; the on-disk .index/.timeindex files come later.
 *
 * Clean shutdown: Kafka writes one `.kafka_cleanshutdown` file in the
 * log-dir root after closing every log. samsa writes a file of that name
 * in each partition directory instead, so a partition is judged on its own
 * (a log manager that closes partitions one by one, or a crash half way
 * through shutdown, still gives the right answer for each): plog_close
 * with clean=true flushes and then writes it; plog_open reads and removes
 * it (durably) before accepting appends, so any later crash counts as
 * unclean. Without it, plog_open checks the CRC of every batch of the last
 * segment and cuts the file at the first torn or corrupt batch. Rolled
 * segments are fsync'ed when they are rolled, so only the last one can
 * hold a torn tail.
 *
 * Threads: plog_append may be called from several threads (it takes the
 * log's append lock: offsets are assigned and the write issued under it).
 * plog_read, plog_offset_for_timestamp, plog_max_timestamp, plog_flush and
 * the getters may run concurrently with appends and with each other: they
 * hold a lock only for an in-memory lookup, never during file I/O. The end
 * offset is published atomically after the write has completed, so a
 * reader never sees a partially written batch. plog_open, plog_close and
 * plog_delete must not run concurrently with anything else on that log.
 *
 * Errors: functions return Kafka error codes (proto/kerr.h), 0 = ok. I/O
 * failures are logged once and returned as KERR_KAFKA_STORAGE_ERROR. */
#ifndef SAMSA_LOG_PLOG_H
#define SAMSA_LOG_PLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/kcodec.h"

struct sfile;
struct plog;

#define PLOG_CLEAN_SHUTDOWN_FILE ".kafka_cleanshutdown"

#define PLOG_DEFAULT_SEGMENT_BYTES (1024LL * 1024 * 1024) /* segment.bytes */
#define PLOG_DEFAULT_INDEX_INTERVAL_BYTES 4096            /* index.interval.bytes */
/* Kafka's minimum for segment.bytes (LegacyRecord.RECORD_OVERHEAD_V0);
 * positions in Kafka's index files are int32, hence the maximum. */
#define PLOG_MIN_SEGMENT_BYTES 14
#define PLOG_MAX_SEGMENT_BYTES INT32_MAX

struct plog_config {
    int64_t segment_bytes;        /* segment.bytes */
    int32_t index_interval_bytes; /* index.interval.bytes */
    bool fsync_each_append;       /* flush.messages=1: fdatasync before the
                                   * append returns and before it is visible */
};

#define PLOG_CONFIG_INIT {PLOG_DEFAULT_SEGMENT_BYTES, PLOG_DEFAULT_INDEX_INTERVAL_BYTES, false}

/* Opens the log in dir, creating the directory (and an empty first
 * segment) when missing. topic_id may be NULL or zero ("unknown"): then
 * partition.metadata is neither written nor checked. Otherwise a missing
 * file is written and an existing one must carry the same id
 * (KERR_INCONSISTENT_TOPIC_ID when not).
 *
 * Recovery: see the clean-shutdown note above. Every segment's batch
 * headers are scanned to rebuild sizes and indexes; a batch that does not
 * fit (bad length or magic, offsets not increasing, torn at the end, or a
 * bad CRC in the last segment after an unclean shutdown) ends the log
 * there: the file is cut, later segments are deleted, and one WARN line
 * says how many bytes went.
 *
 * Returns 0 with *out set, KERR_INVALID_CONFIG for a config out of range,
 * KERR_INCONSISTENT_TOPIC_ID, or KERR_KAFKA_STORAGE_ERROR when the
 * directory cannot be created or read. cfg is copied. The caller owns
 * *out and releases it with plog_close or plog_delete. */
int plog_open(const char *dir, const kuuid_t *topic_id, const struct plog_config *cfg, struct plog **out);

struct plog_append_result {
    int64_t base_offset;     /* offset given to the first record */
    int64_t last_offset;     /* offset of the last record */
    int64_t log_append_time; /* the append time for LogAppendTime, else -1 */
    int64_t log_start_offset;
};

/* Appends len bytes of one or more whole v2 batches (already validated,
 * e.g. by rb_validate_produce). The caller's memory is modified in place:
 * each batch gets its baseOffset (the next offsets, contiguous; a batch
 * takes lastOffsetDelta + 1 of them) and partitionLeaderEpoch =
 * leader_epoch; when append_time_ms_or_minus1 != -1 (a LogAppendTime
 * topic) each batch also gets the LogAppendTime bit, maxTimestamp = that
 * time and a new CRC. All batches go to one segment with one write.
 *
 * KERR_CORRUPT_MESSAGE when the bytes are not whole v2 batches (nothing
 * is changed then), KERR_RECORD_LIST_TOO_LARGE for a batch larger than
 * segment.bytes, KERR_KAFKA_STORAGE_ERROR when the write fails (the
 * partial write is cut off again so the log stays as it was; when even
 * that fails, or when an fsync fails, the log refuses further appends and
 * reads with the same error). res may be NULL. */
int plog_append(struct plog *l, uint8_t *batches, size_t len, int32_t leader_epoch, int64_t append_time_ms_or_minus1,
                struct plog_append_result *res);

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
/* The first offset in the log (the first segment's base offset until
 * DeleteRecords and retention exist). */
int64_t plog_log_start_offset(const struct plog *l);
/* Bytes in all segments. */
int64_t plog_size_bytes(const struct plog *l);
int plog_segment_count(struct plog *l);
/* The topic id given at open or read from partition.metadata; NULL when
 * none. Points into l. */
const kuuid_t *plog_topic_id(const struct plog *l);
const char *plog_dir(const struct plog *l);

/* Kafka's ListOffsets by timestamp: the earliest offset (>= log start)
 * whose record timestamp is >= ts, and that record's timestamp. For a
 * LogAppendTime batch every record carries the batch's maxTimestamp. For a
 * compressed batch the records are not decompressed yet: the batch's base
 * offset and maxTimestamp are returned, which may be a few records early.
 * -1/-1 when no record qualifies. The caller caps the answer at the high
 * watermark / LSO as ListOffsets requires. */
int plog_offset_for_timestamp(struct plog *l, int64_t ts, int64_t *offset, int64_t *timestamp);

/* ListOffsets MAX_TIMESTAMP (-3): the largest timestamp in the log and
 * the offset of the first record that has it (base offset for
 * LogAppendTime and, until decompression is wired in, compressed
 * batches). -1/-1 for a log without timestamps. */
int plog_max_timestamp(struct plog *l, int64_t *offset, int64_t *timestamp);

/* fdatasync of the active segment (rolled ones were synced at the roll). */
int plog_flush(struct plog *l);

/* Releases l. With clean, flushes and writes the clean-shutdown marker
 * (unless the log has failed), so the next open skips the CRC scan. */
void plog_close(struct plog *l, bool clean);

/* Removes the log: the directory is first renamed to
 * "<dir>.<32 hex>-delete" (Kafka's naming, so a crash half way through
 * never leaves a partial partition to be reopened), then emptied and
 * removed. l is released in every case. sfile references held by readers
 * stay valid: the files stay open until their last reference goes.
 * KERR_KAFKA_STORAGE_ERROR when the directory could not be removed
 * entirely (a "-delete" directory may then be left behind). */
int plog_delete(struct plog *l);

#endif
