/* Leader-epoch cache of a Raft log: the start offset of each epoch that
 * has records in the log (Kafka's LeaderEpochFileCache, as KRaft uses it
 * for __cluster_metadata).
 *
 * Entries are strictly increasing in both epoch and start offset. Below
 * the first entry lies the log's base: either offset 0 with the
 * "primordial" epoch 0, or the end of the snapshot the log starts from,
 * with that snapshot's epoch. Epochs are >= 1 for records (a leader is
 * never elected in epoch 0), so epoch 0 always means "no records".
 *
 * Pure in-memory structure; the owner serialises access. */
#ifndef SAMSA_RAFT_EPOCH_CACHE_H
#define SAMSA_RAFT_EPOCH_CACHE_H

#include <stdbool.h>
#include <stdint.h>

struct raft_epoch_entry {
    int32_t epoch;
    int64_t start_offset;
};

struct raft_epoch_cache {
    struct raft_epoch_entry *e; /* owned */
    int32_t n, cap;
    int64_t base_offset; /* log start offset */
    int32_t base_epoch;  /* epoch of the record at base_offset - 1 (0 if none) */
};

/* (offset, epoch) pair as used by Raft: an end offset and the epoch of
 * the record just below it. */
struct raft_offset_epoch {
    int64_t offset;
    int32_t epoch;
};

void rec_init(struct raft_epoch_cache *c);
void rec_free(struct raft_epoch_cache *c);
void rec_clear(struct raft_epoch_cache *c, int64_t base_offset, int32_t base_epoch);

/* Records that epoch starts at start_offset. An epoch equal to the last
 * one is a no-op. Returns false (and changes nothing) when it would break
 * monotonicity: an older epoch, or a start below the last entry's start,
 * or a start below the base. */
bool rec_assign(struct raft_epoch_cache *c, int32_t epoch, int64_t start_offset);
/* Forgets everything at or after offset (the log was truncated to offset). */
void rec_truncate_from(struct raft_epoch_cache *c, int64_t offset);
/* The log now starts at base_offset (a snapshot ending there with
 * base_epoch replaced the prefix): drops entries wholly below it and
 * clips the one straddling it. */
void rec_trim_before(struct raft_epoch_cache *c, int64_t base_offset, int32_t base_epoch);

/* The epoch of the last record of a log ending at log_end (the base epoch
 * when the log holds no records). */
int32_t rec_last_epoch(const struct raft_epoch_cache *c);
/* The epoch of the record at offset (base epoch for offset < base; -1 for
 * a negative offset). The caller checks offset < log end. */
int32_t rec_epoch_at(const struct raft_epoch_cache *c, int64_t offset);
/* Kafka's endOffsetForEpoch: the largest epoch <= epoch present in the
 * log and the offset where it ends (the next epoch's start, or log_end
 * for the last). When no such epoch has records, the base. */
struct raft_offset_epoch rec_end_offset_for_epoch(const struct raft_epoch_cache *c, int32_t epoch, int64_t log_end);

#endif
