/* One log segment: the file NNNNNNNNNNNNNNNNNNNN.log (20-digit base
 * offset) holding whole record batches back to back, and the in-memory
 * state derived from them: size, next offset, the sparse offset and time
 * indexes, and the largest timestamp.
 *
 * Locking is the owner's (struct plog): the appender alone writes the
 * file and calls segment_note_batch under the plog's segment lock;
 * readers copy what they need (size, index lookups, a file reference)
 * under that lock and then read the file without it.
 *
 * Room for the storage-engine work: the indexes are struct offset_index /
 * struct time_index (log/index.h), whose entries already have Kafka's
 * on-disk layout; .index/.timeindex/.txnindex files, a "last modified"
 * time for retention and segment.ms rolling belong in this struct. */
#ifndef SAMSA_LOG_SEGMENT_H
#define SAMSA_LOG_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/index.h"
#include "proto/record_batch.h"

struct sfile;

#define SEGMENT_NAME_DIGITS 20
#define SEGMENT_LOG_SUFFIX ".log"

struct segment {
    int64_t base_offset;
    char *log_path;      /* owned */
    struct sfile *file;  /* the segment's own reference */
    int64_t size;        /* bytes of whole, published batches */
    int64_t next_offset; /* last offset + 1 of the last batch; base_offset when empty */
    /* Largest batch maxTimestamp (-1 when none) and the last offset of
     * the first batch that reached it: Kafka's "shallow" offset, from
     * which a MAX_TIMESTAMP lookup finds the record. */
    int64_t max_timestamp;
    int64_t offset_of_max_timestamp;
    int32_t index_interval_bytes;
    int64_t bytes_since_last_index_entry;
    struct offset_index oidx;
    struct time_index tidx;
};

/* "<dir>/<20-digit base><suffix>", malloc'ed. */
char *segment_file_path(const char *dir, int64_t base_offset, const char *suffix);
/* Parses a file name of exactly 20 digits followed by suffix. */
bool segment_parse_name(const char *name, const char *suffix, int64_t *base_offset);

/* Creates an empty segment file (truncating a leftover one of that name)
 * and makes its directory entry durable. 0 or KERR_KAFKA_STORAGE_ERROR
 * (logged). */
int segment_create(const char *dir, int64_t base_offset, int32_t index_interval_bytes, struct segment **out);

/* Opens an existing segment file; its state is empty until segment_load. */
int segment_open(const char *dir, int64_t base_offset, int32_t index_interval_bytes, struct segment **out);

struct segment_load_result {
    int64_t truncated_bytes; /* cut from the end of the file */
    int64_t truncated_at;    /* file position of the first bad batch */
    const char *reason;      /* static text, when truncated_bytes > 0 */
    int batches;
};

/* Scans the file from the start and rebuilds size, next offset, max
 * timestamp and both indexes from the 61-byte batch headers. Every batch
 * must have a sane length, magic 2, offsets above the previous batch's
 * and below next_segment_base (INT64_MAX for the last segment), and a
 * relative offset that fits an int32; with check_crc its CRC must match
 * too (this reads whole batches). The file is cut at the first batch that
 * fails, and the cut made durable. Returns 0 or KERR_KAFKA_STORAGE_ERROR
 * (logged) on an I/O error. */
int segment_load(struct segment *s, bool check_crc, int64_t next_segment_base, struct segment_load_result *res);

/* Records a batch written at position in the in-memory state: size, next
 * offset, max timestamp, and an index entry once index_interval_bytes
 * have gone by since the last one (Kafka's LogSegment.append rule). */
void segment_note_batch(struct segment *s, const struct rb_header *h, int64_t position);

/* Kafka adds the final max timestamp to the time index when a segment
 * stops being the active one (and after recovery). */
void segment_seal(struct segment *s);

/* Writes len bytes at s->size (without changing s->size: the caller
 * publishes with segment_note_batch). On failure the partial write is cut
 * off again; returns 0, or an errno value with *cut_ok telling whether the
 * file is back to s->size. */
int segment_write(struct segment *s, const void *data, size_t len, bool *cut_ok);

/* fdatasync. 0 or an errno value. */
int segment_sync(struct segment *s);

/* Cuts the file back to s->size (after a failed write or sync). 0 or an
 * errno value. */
int segment_cut_to_size(struct segment *s);

/* Drops the segment's file reference and frees it; readers' references
 * keep the file open. */
void segment_free(struct segment *s);

#endif
