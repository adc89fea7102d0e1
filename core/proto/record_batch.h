/* Kafka record batches, magic v2 (the only format samsa stores).
 *
 *   off size field                    covered by the CRC
 *     0   8  baseOffset               no  (set by the leader)
 *     8   4  batchLength              no  (bytes after this field)
 *    12   4  partitionLeaderEpoch     no  (set by the leader)
 *    16   1  magic (2)                no
 *    17   4  crc (CRC-32C, unsigned)  -
 *    21   2  attributes               yes, and everything after it
 *    23   4  lastOffsetDelta
 *    27   8  baseTimestamp
 *    35   8  maxTimestamp
 *    43   8  producerId
 *    51   2  producerEpoch
 *    53   4  baseSequence
 *    57   4  recordsCount
 *    61      records (compressed as one block when the codec is not 0)
 *
 * A record: length varint, attributes int8, timestampDelta varlong,
 * offsetDelta varint, key (varint length, -1 = null), value (same),
 * headers count varint, then per header: key (varint length >= 0, UTF-8),
 * value (varint length, -1 = null). Varints are zigzag (protobuf sint).
 *
 * Conventions: functions return 0 or a Kafka error code (enum kerr);
 * nothing here aborts on bad input, every length read from the input is
 * bounds-checked. Pointers handed out (keys, values, headers) point into
 * the caller's memory and live as long as it does; nothing here keeps a
 * pointer after returning unless the struct says so. */
#ifndef SAMSA_PROTO_RECORD_BATCH_H
#define SAMSA_PROTO_RECORD_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/kcodec.h"
#include "util/buf.h"

#define RB_LOG_OVERHEAD 12 /* baseOffset + batchLength */
#define RB_HEADER_SIZE 61  /* header up to the first record */
#define RB_MIN_BATCH_LENGTH (RB_HEADER_SIZE - RB_LOG_OVERHEAD) /* 49 */
#define RB_MAGIC_V2 2

#define RB_OFF_BASE_OFFSET 0
#define RB_OFF_BATCH_LENGTH 8
#define RB_OFF_PARTITION_LEADER_EPOCH 12
#define RB_OFF_MAGIC 16
#define RB_OFF_CRC 17
#define RB_OFF_ATTRIBUTES 21
#define RB_OFF_LAST_OFFSET_DELTA 23
#define RB_OFF_BASE_TIMESTAMP 27
#define RB_OFF_MAX_TIMESTAMP 35
#define RB_OFF_PRODUCER_ID 43
#define RB_OFF_PRODUCER_EPOCH 51
#define RB_OFF_BASE_SEQUENCE 53
#define RB_OFF_RECORDS_COUNT 57
#define RB_OFF_RECORDS 61

#define RB_ATTR_CODEC_MASK 0x07
#define RB_ATTR_TIMESTAMP_TYPE 0x08 /* set = LogAppendTime */
#define RB_ATTR_TRANSACTIONAL 0x10
#define RB_ATTR_CONTROL 0x20
#define RB_ATTR_DELETE_HORIZON 0x40

enum rb_codec {
    RB_CODEC_NONE = 0,
    RB_CODEC_GZIP = 1,
    RB_CODEC_SNAPPY = 2,
    RB_CODEC_LZ4 = 3,
    RB_CODEC_ZSTD = 4,
};

enum rb_timestamp_type {
    RB_CREATE_TIME = 0,
    RB_LOG_APPEND_TIME = 1,
};

#define RB_NO_TIMESTAMP (-1LL)
#define RB_NO_PRODUCER_ID (-1LL)
#define RB_NO_PRODUCER_EPOCH (-1)
#define RB_NO_SEQUENCE (-1)
#define RB_NO_PARTITION_LEADER_EPOCH (-1)

/* ---- header ---- */

struct rb_header {
    int64_t base_offset;
    int32_t batch_length;
    int32_t partition_leader_epoch;
    int8_t magic;
    uint32_t crc;
    int16_t attributes;
    int32_t last_offset_delta;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    int32_t records_count;
};

static inline int rb_attr_codec(int16_t a) { return a & RB_ATTR_CODEC_MASK; }
static inline int rb_attr_timestamp_type(int16_t a) { return (a & RB_ATTR_TIMESTAMP_TYPE) ? RB_LOG_APPEND_TIME : RB_CREATE_TIME; }
static inline bool rb_attr_is_transactional(int16_t a) { return (a & RB_ATTR_TRANSACTIONAL) != 0; }
static inline bool rb_attr_is_control(int16_t a) { return (a & RB_ATTR_CONTROL) != 0; }
static inline bool rb_attr_has_delete_horizon(int16_t a) { return (a & RB_ATTR_DELETE_HORIZON) != 0; }

static inline int rb_codec(const struct rb_header *h) { return rb_attr_codec(h->attributes); }
static inline int rb_timestamp_type(const struct rb_header *h) { return rb_attr_timestamp_type(h->attributes); }
static inline bool rb_is_transactional(const struct rb_header *h) { return rb_attr_is_transactional(h->attributes); }
static inline bool rb_is_control(const struct rb_header *h) { return rb_attr_is_control(h->attributes); }
static inline bool rb_has_delete_horizon(const struct rb_header *h) { return rb_attr_has_delete_horizon(h->attributes); }
/* Whole batch on the wire / on disk, log overhead included. */
static inline int64_t rb_batch_size(const struct rb_header *h) { return (int64_t)h->batch_length + RB_LOG_OVERHEAD; }
static inline int64_t rb_last_offset(const struct rb_header *h) { return h->base_offset + h->last_offset_delta; }
static inline bool rb_has_producer_id(const struct rb_header *h) { return h->producer_id > RB_NO_PRODUCER_ID; }

/* Decodes the 61-byte header at p (n bytes readable; the records need not
 * be there). Returns 0, or KERR_CORRUPT_MESSAGE when n < RB_HEADER_SIZE,
 * batchLength < RB_MIN_BATCH_LENGTH or magic != 2. The fields up to magic
 * are filled whenever n >= 17, so a caller can tell an old magic apart. */
int rb_parse_header(const uint8_t *p, size_t n, struct rb_header *h);

/* Splits a byte range holding consecutive batches (a Produce or Fetch
 * records field, a segment file). With n bytes at p:
 *   0                    a whole batch of *size bytes starts at p;
 *   RB_FRAME_TRUNCATED   p holds only part of a batch (*size is the
 *                        whole size when known, else 0);
 *   KERR_CORRUPT_MESSAGE the length or magic cannot belong to a batch.
 * Follows Kafka's ByteBufferLogInputStream: any magic 0..2 frames (old
 * message sets share the first 17 bytes), so the caller decides what to
 * do with magic 0/1. */
#define RB_FRAME_TRUNCATED (-2)
int rb_frame(const uint8_t *p, size_t n, size_t *size);

/* ---- in-place stamping (the leader's two writes outside the CRC) ---- */

/* batch must have at least RB_LOG_OVERHEAD resp. 16 writable bytes. */
void rb_set_base_offset(uint8_t *batch, int64_t base_offset);
void rb_set_partition_leader_epoch(uint8_t *batch, int32_t epoch);

/* len is the whole batch (batchLength + 12). False when len is not that,
 * is below RB_HEADER_SIZE, or the stored CRC does not match. */
bool rb_crc_ok(const uint8_t *batch, size_t len);
uint32_t rb_compute_crc(const uint8_t *batch, size_t len); /* len >= RB_HEADER_SIZE */
/* Rewrites the CRC field. KERR_CORRUPT_MESSAGE when len is not the size
 * the batch declares. */
int rb_recompute_crc(uint8_t *batch, size_t len);
/* Kafka's DefaultRecordBatch.setMaxTimestamp: sets the timestamp-type bit
 * and maxTimestamp and rewrites the CRC, or leaves the batch untouched
 * when both already match. Used for LogAppendTime topics and to correct a
 * producer's wrong maxTimestamp (see rb_validate_result.max_timestamp_stale). */
int rb_set_max_timestamp_and_type(uint8_t *batch, size_t len, int timestamp_type, int64_t max_timestamp);

/* ---- records ---- */

struct rb_record {
    int8_t attributes;
    int64_t timestamp_delta;
    int32_t offset_delta;
    kbytes_t key;   /* len -1 = null */
    kbytes_t value; /* len -1 = null */
    int32_t header_count;
    const uint8_t *headers; /* header_count headers, already bounds-checked */
    size_t headers_len;
    size_t size; /* bytes of the record, its length varint included */
};

/* Iterates the records of an uncompressed batch, or of the decompressed
 * records block of a compressed one. Points into the caller's bytes. */
struct rb_record_iter {
    const uint8_t *p, *end;
    int32_t left;  /* records still to read */
    int32_t index; /* index of the next record */
    int err;       /* Kafka error code after next() returned -1 */
    const char *reason; /* static text for the log line, with err */
};

/* records/len: the bytes after the header (decompressed when needed);
 * count: the header's recordsCount. As in Kafka, a count of 0 yields no
 * records whatever the bytes, a negative count fails on the first next(). */
void rb_record_iter_init(struct rb_record_iter *it, const uint8_t *records, size_t len, int32_t count);
/* The same over a whole uncompressed batch of len bytes (the CRC is not
 * checked here). Returns KERR_CORRUPT_MESSAGE for a bad header or len, and
 * KERR_UNSUPPORTED_COMPRESSION_TYPE when the batch is compressed (the
 * caller decompresses and uses rb_record_iter_init). */
int rb_record_iter_init_batch(struct rb_record_iter *it, const uint8_t *batch, size_t len);
/* 1: *rec is the next record; 0: done, and no bytes were left over;
 * -1: malformed (it->err = KERR_INVALID_RECORD, it->reason says why; the
 * iterator stays failed). A record whose length varint disagrees with
 * its fields, a field running past it, a count larger or smaller than the
 * records present: all -1, as Kafka's DefaultRecord.readFrom and
 * DefaultRecordBatch.RecordIterator reject them. */
int rb_record_next(struct rb_record_iter *it, struct rb_record *rec);

struct rb_header_iter {
    const uint8_t *p, *end;
    int32_t left;
    int err;
};

void rb_header_iter_init(struct rb_header_iter *it, const struct rb_record *rec);
/* 1: *key and *value set (value.len -1 = null); 0: done; -1: malformed
 * (it->err = KERR_INVALID_RECORD). Records from rb_record_next have been
 * checked already, so -1 only happens for hand-made rb_record values. */
int rb_header_next(struct rb_header_iter *it, kstr_t *key, kbytes_t *value);

/* ---- validation of a Produce request's records for one partition ---- */

/* Compression callback shared by validation and the builder: appends the
 * (de)compressed form of in to out and returns 0 or a Kafka error code
 * (codecs should answer CORRUPT_MESSAGE for undecodable input and bound
 * their output, e.g. through ctx, against decompression bombs). */
typedef int (*rb_codec_fn)(void *ctx, int codec, const uint8_t *in, size_t in_len, struct buf *out);

struct rb_validate_opts {
    int32_t max_message_bytes;       /* max.message.bytes; <= 0: no limit */
    bool compacted;                  /* cleanup.policy includes compact */
    int timestamp_type;              /* message.timestamp.type */
    int64_t timestamp_before_max_ms; /* message.timestamp.before.max.ms */
    int64_t timestamp_after_max_ms;  /* message.timestamp.after.max.ms */
    int64_t now_ms;                  /* wall clock */
    rb_codec_fn decompress;          /* NULL: compressed batches are refused */
    void *decompress_ctx;
    /* samsa.record.validation=batch: the records are not read (nor
     * decompressed) unless compacted is set; the header's timestamps
     * stand for the records'. */
    bool header_only;
};

struct rb_validate_result {
    int32_t batches;
    int32_t records;
    int32_t first_offset_delta;
    int32_t last_offset_delta;
    /* What Kafka would log as the batch's max timestamp: the largest record
     * timestamp (CreateTime topic) or now_ms (LogAppendTime topic), and the
     * offset delta it belongs to (the last one for LogAppendTime). */
    int64_t max_timestamp;
    int32_t max_timestamp_offset_delta;
    /* The header's maxTimestamp or timestamp type differs from the above:
     * Kafka rewrites them in place; do the same with
     * rb_set_max_timestamp_and_type(batch, size, opts->timestamp_type,
     * max_timestamp) before appending. */
    bool max_timestamp_stale;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    bool is_transactional;
    int codec;
    int timestamp_type;  /* of the batch as sent */
    size_t valid_bytes;  /* size of the batch(es), log overhead included */
    /* For a key or timestamp error, the first record it is about (Produce
     * v8+ RecordErrors.BatchIndex, as Kafka's RecordValidationException);
     * -1 for errors about the batch as a whole. */
    int32_t error_record_index;
    char reason[192];    /* human-readable cause when the result is not 0 */
};

/* Validates records (len bytes at p, the Records field of one partition of
 * a Produce request of version produce_version) as Kafka's broker does
 * before appending: ProduceRequest.validateRecords, then
 * UnifiedLog.analyzeAndValidateRecords, then LogValidator. opts may be
 * NULL (no size limit, not compacted, CreateTime without bounds, no
 * codecs). Returns 0 or the Kafka error code for the partition; out is
 * always filled (reason set on error). Reads p only; on success the batch
 * is p[0 .. out->valid_bytes). Allocates only for decompression and frees
 * it before returning. */
int rb_validate_produce(const uint8_t *p, size_t len, int16_t produce_version,
                        const struct rb_validate_opts *opts, struct rb_validate_result *out);

/* Tests and fuzz targets only: turns the single-pass walk for well-formed
 * uncompressed records off (on by default), so that they can check that
 * it accepts exactly what the general walk accepts. Not thread-safe. */
void rb_validate_use_fast_walk(bool on);

/* ---- builder (the broker's own writes, samsactl's producer) ---- */

struct rb_header_kv {
    kstr_t key;     /* must not be null */
    kbytes_t value; /* len -1 = null */
};

struct rb_batch_opts {
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    int32_t partition_leader_epoch;
    bool transactional;
    bool control;
};

#define RB_BATCH_OPTS_INIT {RB_NO_PRODUCER_ID, RB_NO_PRODUCER_EPOCH, RB_NO_SEQUENCE, RB_NO_PARTITION_LEADER_EPOCH, false, false}

/* Builds one batch at the end of a caller-owned buffer. The builder keeps
 * offsets, not pointers, so out may grow (and move) in between calls, but
 * nothing else may append to out until finish or abort. */
struct rb_builder {
    struct buf *out;
    size_t start;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int32_t count;
};

/* Appends the header (filled in by finish) to out. opts NULL = a plain
 * non-idempotent batch. Record timestamps are stored as deltas from
 * base_timestamp (Kafka's producer uses the first record's). */
void rb_builder_begin(struct rb_builder *b, struct buf *out, int64_t base_offset, int64_t base_timestamp,
                      const struct rb_batch_opts *opts);
/* Appends one record; offset delta = its index. Copies key, value and
 * headers. Returns 0, KERR_INVALID_RECORD (null header key, nheaders < 0,
 * a length below -1) or KERR_MESSAGE_TOO_LARGE (a record or the count
 * past int32); on error out is as before the call. */
int rb_builder_add(struct rb_builder *b, int64_t timestamp, kbytes_t key, kbytes_t value,
                   const struct rb_header_kv *headers, int nheaders);
/* Fills batchLength, lastOffsetDelta, maxTimestamp, recordsCount and the
 * CRC. *batch_len (may be NULL) gets the batch size; the batch starts at
 * out->data + out->len - *batch_len. An empty batch is refused
 * (KERR_INVALID_RECORD) and removed from out, as is a batch past int32
 * (KERR_MESSAGE_TOO_LARGE). */
int rb_builder_finish(struct rb_builder *b, size_t *batch_len);
/* The same, compressing the records with compress(ctx, codec, ...). On
 * error the batch is removed from out and the codec's error returned. */
int rb_builder_finish_compressed(struct rb_builder *b, int codec, rb_codec_fn compress, void *ctx,
                                 size_t *batch_len);
/* Drops the unfinished batch from out. */
void rb_builder_abort(struct rb_builder *b);

/* ---- control records (ControlRecordType, EndTransactionMarker) ---- */

enum rb_control_type {
    RB_CONTROL_UNKNOWN = -1,
    RB_CONTROL_ABORT = 0,
    RB_CONTROL_COMMIT = 1,
    RB_CONTROL_LEADER_CHANGE = 2, /* KRaft */
    RB_CONTROL_SNAPSHOT_HEADER = 3,
    RB_CONTROL_SNAPSHOT_FOOTER = 4,
    RB_CONTROL_KRAFT_VERSION = 5,
    RB_CONTROL_KRAFT_VOTERS = 6,
};

#define RB_CONTROL_KEY_SIZE 4       /* version int16 (0), type int16 */
#define RB_TXN_MARKER_VALUE_SIZE 6  /* version int16 (0), coordinatorEpoch int32 */

void rb_control_key_encode(uint8_t out[RB_CONTROL_KEY_SIZE], int16_t type);
/* As ControlRecordType.parseTypeId: at least 4 bytes, version >= 0 (a
 * newer version is read as version 0). *type gets the raw type id.
 * KERR_INVALID_RECORD otherwise. */
int rb_control_key_parse(kbytes_t key, int16_t *type);
void rb_txn_marker_value_encode(uint8_t out[RB_TXN_MARKER_VALUE_SIZE], int32_t coordinator_epoch);
/* As EndTransactionMarker.deserializeValue: at least 6 bytes, version >= 0. */
int rb_txn_marker_value_parse(kbytes_t value, int32_t *coordinator_epoch);

/* Appends a transaction marker batch to out, as Kafka's
 * MemoryRecords.withEndTransactionMarker: one control record, transactional
 * and control bits set, baseSequence -1, CreateTime timestamp. type is
 * RB_CONTROL_ABORT or RB_CONTROL_COMMIT (else KERR_INVALID_RECORD). */
int rb_build_txn_marker(struct buf *out, int64_t base_offset, int64_t timestamp, int64_t producer_id,
                        int16_t producer_epoch, int32_t partition_leader_epoch, int16_t type,
                        int32_t coordinator_epoch, size_t *batch_len);

/* For a control batch's record: its type and, for ABORT/COMMIT, the
 * coordinator epoch (-1 for other types). KERR_INVALID_RECORD when the key
 * or a marker value is malformed. */
int rb_parse_control_record(const struct rb_record *rec, int16_t *type, int32_t *coordinator_epoch);

#endif
