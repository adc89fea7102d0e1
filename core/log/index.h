/* The two sparse indexes of one log segment, kept in memory for now.
 *
 * Entries have exactly the fields of Kafka's on-disk files, so the
 * storage-engine work can back these arrays with mmap'ed
 * NNNNNNNNNNNNNNNNNNNN.index / .timeindex files without changing callers:
 *   offset index: (relative offset int32, file position int32), 8 bytes;
 *   time index:   (timestamp int64, relative offset int32), 12 bytes.
 * Offsets are stored relative to the segment's base offset, as in Kafka.
 *
 * Not thread-safe: the owning segment's lock protects them. */
#ifndef SAMSA_LOG_INDEX_H
#define SAMSA_LOG_INDEX_H

#include <stddef.h>
#include <stdint.h>

struct oidx_entry {
    int32_t rel_offset; /* last offset of the batch, minus the base offset */
    int32_t position;   /* where that batch starts in the .log file */
};

struct offset_index {
    int64_t base_offset;
    struct oidx_entry *e;
    size_t n, cap;
};

struct offset_position {
    int64_t offset;
    int64_t position;
};

void oidx_init(struct offset_index *x, int64_t base_offset);
void oidx_free(struct offset_index *x);
void oidx_reset(struct offset_index *x);
/* offset must be larger than the last entry's and fit a relative int32,
 * position must fit an int32 (the segment layer guarantees both). */
void oidx_append(struct offset_index *x, int64_t offset, int64_t position);
/* The entry with the largest offset <= target, or (base_offset, 0) when
 * there is none: a scan for target starts there. */
struct offset_position oidx_lookup(const struct offset_index *x, int64_t target);

struct tidx_entry {
    int64_t timestamp;  /* largest batch maxTimestamp seen so far */
    int32_t rel_offset; /* last offset of the first batch that reached it */
};

struct time_index {
    int64_t base_offset;
    struct tidx_entry *e;
    size_t n, cap;
};

struct timestamp_offset {
    int64_t timestamp;
    int64_t offset;
};

void tidx_init(struct time_index *x, int64_t base_offset);
void tidx_free(struct time_index *x);
void tidx_reset(struct time_index *x);
/* Adds (timestamp, offset) only when timestamp is larger than the last
 * entry's, as Kafka's TimeIndex.maybeAppend: entries then rise strictly
 * in both fields and a binary search on either works. */
void tidx_maybe_append(struct time_index *x, int64_t timestamp, int64_t offset);
/* The entry with the largest timestamp <= target, or (-1, base_offset):
 * every batch before that offset's batch has a smaller maxTimestamp, so a
 * search for the first timestamp >= target may start at that batch. */
struct timestamp_offset tidx_lookup(const struct time_index *x, int64_t target);

#endif
