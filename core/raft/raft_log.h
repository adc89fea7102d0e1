/* The log a Raft node replicates (__cluster_metadata-0), as the node sees
 * it: whole v2 record batches with contiguous offsets starting at the log
 * start offset, plus the snapshots that replace the prefix below it.
 *
 * The node is the log's only writer. Every call is synchronous and local
 * (no network); flushing is the one slow operation and is asynchronous:
 * the node asks for it with a RAFT_OUT_FLUSH output and the host reports
 * completion with raft_flushed(). Two implementations exist or are
 * planned: memlog (memory, for the simulation and unit tests) and a
 * plog-backed one (core/log) at integration.
 *
 * Errors: functions returning int return 0 or a Kafka error code
 * (proto/kerr.h). The node treats any error from a mutating call as fatal
 * for that operation and reports it in its stats; the log must then be
 * unchanged. */
#ifndef SAMSA_RAFT_RAFT_LOG_H
#define SAMSA_RAFT_RAFT_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/kcodec.h"

struct raft_snapshot_id {
    int64_t end_offset; /* first offset not in the snapshot */
    int32_t epoch;      /* epoch of the record at end_offset - 1 */
};

typedef void (*raft_log_batch_fn)(void *arg, int64_t base_offset, int64_t last_offset, int32_t epoch);

struct raft_log_ops {
    int64_t (*start_offset)(void *ctx);
    int64_t (*end_offset)(void *ctx);
    /* Appends len bytes of whole batches whose baseOffset and
     * partitionLeaderEpoch are already set; the first batch starts at the
     * log end offset. Copies the bytes. */
    int (*append)(void *ctx, const uint8_t *batches, size_t len);
    /* Removes every batch whose base offset is >= offset. offset is a batch
     * boundary between start and end offset. Durable by the time the next
     * flush completes; a flush that began before it must not be reported
     * as covering anything appended after it. (plog: plog_truncate_to.) */
    int (*truncate_to)(void *ctx, int64_t offset);
    /* Whole batches starting with the one whose base offset is offset, up
     * to max_bytes in total but at least one batch. *out is memory (p/len)
     * or a file range (file/off/len) that stays valid until the next call
     * on this log; len 0 at the log end. KERR_OFFSET_OUT_OF_RANGE outside
     * [start, end]. */
    int (*read)(void *ctx, int64_t offset, int32_t max_bytes, krecords_t *out);
    /* Calls fn, in offset order, for the batches from the log start; used
     * once at start-up to rebuild the epoch cache, for which the first
     * batch of each epoch is enough (a plog adapter can walk its
     * leader-epoch cache instead of the segments). */
    int (*scan)(void *ctx, raft_log_batch_fn fn, void *arg);

    /* ---- snapshots ---- */
    /* The newest / oldest complete snapshot; false when there is none.
     * When the log start offset is past 0, the oldest snapshot ends
     * exactly there (the log keeps it until the start moves again). */
    bool (*latest_snapshot)(void *ctx, struct raft_snapshot_id *out);
    bool (*oldest_snapshot)(void *ctx, struct raft_snapshot_id *out);
    /* Size in bytes of a complete snapshot, -1 when there is no such one. */
    int64_t (*snapshot_size)(void *ctx, const struct raft_snapshot_id *id);
    /* Up to max_bytes of the snapshot from pos (len 0 at the end); same
     * lifetime as read. KERR_SNAPSHOT_NOT_FOUND, KERR_POSITION_OUT_OF_RANGE. */
    int (*snapshot_read)(void *ctx, const struct raft_snapshot_id *id, int64_t pos, int32_t max_bytes,
                         krecords_t *out);
    /* Starts writing snapshot id (a partial one of that id is discarded);
     * snapshot_append adds bytes at its end (copied); snapshot_finish makes
     * it complete and durable. Used by the node for snapshots fetched from
     * the leader and by the host for its own. */
    int (*snapshot_begin)(void *ctx, const struct raft_snapshot_id *id);
    int (*snapshot_append)(void *ctx, const struct raft_snapshot_id *id, const uint8_t *p, size_t n);
    int (*snapshot_finish)(void *ctx, const struct raft_snapshot_id *id);
    /* The log now starts at id->end_offset: batches below it are deleted.
     * When id->end_offset is past the log end the log becomes empty with
     * start = end = id->end_offset (a fetched snapshot replacing a log that
     * was behind). A complete snapshot id must exist. Older snapshots may
     * be deleted. */
    int (*reset_start)(void *ctx, const struct raft_snapshot_id *id);
};

/* A log handle: ops plus the implementation's state. Not owned by the
 * node; it must outlive the node. */
struct raft_log {
    const struct raft_log_ops *ops;
    void *ctx;
};

#endif
