/* SPDX-License-Identifier: Apache-2.0
 *
 * Capability kind SAMSA_CAP_TIER: tiered storage (KIP-405), the two
 * halves of Kafka's plugin interface in one vtable:
 *   - storage manager (RemoteStorageManager): copy a closed segment with
 *     its indexes, fetch a byte range of it or one of its indexes,
 *     delete it;
 *   - metadata manager (RemoteLogMetadataManager): record segment
 *     metadata and its state changes, list a partition's segments.
 *
 * Every callback runs on the host's tiered-storage pool and may block
 * (network, object store). It either finishes synchronously (returns
 * SAMSA_OK or an error) or returns SAMSA_EAGAIN and later calls
 * api->complete(token, status, result, len) from any thread.
 *
 * Declared in ABI 1.0; the host's tiering subsystem lands later.
 */
#ifndef SAMSA_TIER_H
#define SAMSA_TIER_H

#include "samsa/assignor.h" /* samsa_uuid_t */
#include "samsa/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* RemoteLogSegmentState */
#define SAMSA_SEGMENT_COPY_STARTED 0
#define SAMSA_SEGMENT_COPY_FINISHED 1
#define SAMSA_SEGMENT_DELETE_STARTED 2
#define SAMSA_SEGMENT_DELETE_FINISHED 3

/* RemoteStorageManager.IndexType */
#define SAMSA_INDEX_OFFSET 0
#define SAMSA_INDEX_TIMESTAMP 1
#define SAMSA_INDEX_PRODUCER_SNAPSHOT 2
#define SAMSA_INDEX_TRANSACTION 3
#define SAMSA_INDEX_LEADER_EPOCH 4

/* RemoteLogSegmentMetadata; borrowed for the call. */
typedef struct samsa_remote_segment {
    uint32_t struct_size;
    samsa_uuid_t topic_id;
    const char *topic;
    int32_t partition;
    samsa_uuid_t segment_id;   /* RemoteLogSegmentId.id */
    int64_t start_offset;
    int64_t end_offset;
    int64_t max_timestamp_ms;
    int32_t broker_id;
    int64_t event_timestamp_ms;
    int64_t segment_size;      /* bytes of the .log file */
    int state;                 /* SAMSA_SEGMENT_* */
    /* Leader epoch -> start offset pairs of this segment. */
    const int32_t *epochs;
    const int64_t *epoch_start_offsets;
    size_t n_epochs;
    /* Opaque bytes the plugin returned from copy_segment (custom
     * metadata, KIP-917), or NULL/0. */
    const uint8_t *custom_metadata;
    size_t custom_metadata_len;
} samsa_remote_segment_t;

/* Local files of a closed segment (LogSegmentData); paths borrowed. */
typedef struct samsa_segment_files {
    uint32_t struct_size;
    const char *log;
    const char *offset_index;
    const char *time_index;
    const char *txn_index;          /* NULL when absent */
    const char *producer_snapshot;
    const uint8_t *leader_epoch_index; /* checkpoint contents */
    size_t leader_epoch_index_len;
} samsa_segment_files_t;

/* list_segments answers through this sink, one call per segment. */
typedef struct samsa_segment_sink {
    uint32_t struct_size;
    void *ctx;
    int (*add)(void *ctx, const samsa_remote_segment_t *seg);
} samsa_segment_sink_t;

typedef struct samsa_tier {
    /* hdr.kind = SAMSA_CAP_TIER; hdr.name = the store, e.g. "fs", "s3". */
    samsa_cap_hdr_t hdr;

    /* ---- ABI 1.0: storage manager ---- */

    /* Copies the segment. Custom metadata for later calls may be written
     * to custom_out (bounded by the host). */
    int (*copy_segment)(void *cap_state, const samsa_remote_segment_t *seg,
                        const samsa_segment_files_t *files, samsa_out_t *custom_out,
                        samsa_async_t *token);
    /* Bytes [start_pos, end_pos] (inclusive, as Kafka's fetchLogSegment;
     * end_pos -1 = to the end) of the remote .log into out. */
    int (*fetch_segment)(void *cap_state, const samsa_remote_segment_t *seg, int64_t start_pos,
                         int64_t end_pos, samsa_out_t *out, samsa_async_t *token);
    /* One index (SAMSA_INDEX_*) into out. */
    int (*fetch_index)(void *cap_state, const samsa_remote_segment_t *seg, int index_type,
                       samsa_out_t *out, samsa_async_t *token);
    /* Deletes everything stored for the segment; deleting a missing
     * segment succeeds. */
    int (*delete_segment)(void *cap_state, const samsa_remote_segment_t *seg, samsa_async_t *token);

    /* ---- ABI 1.0: metadata manager ---- */

    /* Records new metadata (state COPY_STARTED) or a state change. */
    int (*put_segment_metadata)(void *cap_state, const samsa_remote_segment_t *seg,
                                samsa_async_t *token);
    /* Every segment of a partition, in start offset order. */
    int (*list_segments)(void *cap_state, const samsa_uuid_t *topic_id, int32_t partition,
                         const samsa_segment_sink_t *sink, samsa_async_t *token);
    /* Total remote bytes of a partition into *size (RemoteLogMetadataManager.remoteLogSize). */
    int (*remote_log_size)(void *cap_state, const samsa_uuid_t *topic_id, int32_t partition,
                           int64_t *size, samsa_async_t *token);

    /* ---- ABI 1.1+: append here ---- */
} samsa_tier_t;

#define SAMSA_TIER_SIZE_1_0 (offsetof(samsa_tier_t, remote_log_size) + sizeof(void *))

#ifdef __cplusplus
}
#endif

#endif /* SAMSA_TIER_H */
