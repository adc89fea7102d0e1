#include "proto/record_batch.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "proto/crc32c.h"
#include "proto/kerr.h"

/* Kafka computes timestamps with Java's wrapping long arithmetic; these
 * reproduce it without signed-overflow UB on hostile deltas. */
static inline int64_t wadd64(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static inline int64_t wsub64(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static inline int64_t wneg64(int64_t a) { return (int64_t)(0 - (uint64_t)a); }

/* Smallest message set Kafka's framing accepts (LegacyRecord.RECORD_OVERHEAD_V0):
 * below it the length cannot belong to any magic. */
#define RB_MIN_LEGACY_LENGTH 14

/* ---- header ---- */

int rb_parse_header(const uint8_t *p, size_t n, struct rb_header *h)
{
    memset(h, 0, sizeof *h);
    if (n < RB_OFF_MAGIC + 1)
        return KERR_CORRUPT_MESSAGE;
    h->base_offset = (int64_t)be64_read(p + RB_OFF_BASE_OFFSET);
    h->batch_length = (int32_t)be32_read(p + RB_OFF_BATCH_LENGTH);
    h->partition_leader_epoch = (int32_t)be32_read(p + RB_OFF_PARTITION_LEADER_EPOCH);
    h->magic = (int8_t)p[RB_OFF_MAGIC];
    if (n < RB_HEADER_SIZE)
        return KERR_CORRUPT_MESSAGE;
    h->crc = be32_read(p + RB_OFF_CRC);
    h->attributes = (int16_t)be16_read(p + RB_OFF_ATTRIBUTES);
    h->last_offset_delta = (int32_t)be32_read(p + RB_OFF_LAST_OFFSET_DELTA);
    h->base_timestamp = (int64_t)be64_read(p + RB_OFF_BASE_TIMESTAMP);
    h->max_timestamp = (int64_t)be64_read(p + RB_OFF_MAX_TIMESTAMP);
    h->producer_id = (int64_t)be64_read(p + RB_OFF_PRODUCER_ID);
    h->producer_epoch = (int16_t)be16_read(p + RB_OFF_PRODUCER_EPOCH);
    h->base_sequence = (int32_t)be32_read(p + RB_OFF_BASE_SEQUENCE);
    h->records_count = (int32_t)be32_read(p + RB_OFF_RECORDS_COUNT);
    if (h->batch_length < RB_MIN_BATCH_LENGTH || h->magic != RB_MAGIC_V2)
        return KERR_CORRUPT_MESSAGE;
    return 0;
}

int rb_frame(const uint8_t *p, size_t n, size_t *size)
{
    *size = 0;
    if (n < RB_LOG_OVERHEAD)
        return RB_FRAME_TRUNCATED;
    int32_t len = (int32_t)be32_read(p + RB_OFF_BATCH_LENGTH);
    if (len < RB_MIN_LEGACY_LENGTH)
        return KERR_CORRUPT_MESSAGE;
    size_t total = (size_t)len + RB_LOG_OVERHEAD;
    if (n < RB_OFF_MAGIC + 1) {
        *size = total;
        return RB_FRAME_TRUNCATED;
    }
    int8_t magic = (int8_t)p[RB_OFF_MAGIC];
    if (magic < 0 || magic > RB_MAGIC_V2)
        return KERR_CORRUPT_MESSAGE;
    *size = total;
    return n < total ? RB_FRAME_TRUNCATED : 0;
}

/* ---- stamping and CRC ---- */

void rb_set_base_offset(uint8_t *batch, int64_t base_offset)
{
    be64_write(batch + RB_OFF_BASE_OFFSET, (uint64_t)base_offset);
}

void rb_set_partition_leader_epoch(uint8_t *batch, int32_t epoch)
{
    be32_write(batch + RB_OFF_PARTITION_LEADER_EPOCH, (uint32_t)epoch);
}

/* True when len is exactly the size the batch declares. */
static bool size_matches(const uint8_t *batch, size_t len)
{
    if (len < RB_HEADER_SIZE)
        return false;
    int32_t bl = (int32_t)be32_read(batch + RB_OFF_BATCH_LENGTH);
    return bl >= RB_MIN_BATCH_LENGTH && (size_t)bl + RB_LOG_OVERHEAD == len;
}

uint32_t rb_compute_crc(const uint8_t *batch, size_t len)
{
    return crc32c(0, batch + RB_OFF_ATTRIBUTES, len - RB_OFF_ATTRIBUTES);
}

bool rb_crc_ok(const uint8_t *batch, size_t len)
{
    return size_matches(batch, len) && be32_read(batch + RB_OFF_CRC) == rb_compute_crc(batch, len);
}

int rb_recompute_crc(uint8_t *batch, size_t len)
{
    if (!size_matches(batch, len))
        return KERR_CORRUPT_MESSAGE;
    be32_write(batch + RB_OFF_CRC, rb_compute_crc(batch, len));
    return 0;
}

int rb_set_max_timestamp_and_type(uint8_t *batch, size_t len, int timestamp_type, int64_t max_timestamp)
{
    if (!size_matches(batch, len))
        return KERR_CORRUPT_MESSAGE;
    uint16_t attrs = be16_read(batch + RB_OFF_ATTRIBUTES);
    int cur_type = rb_attr_timestamp_type((int16_t)attrs);
    int64_t cur_max = (int64_t)be64_read(batch + RB_OFF_MAX_TIMESTAMP);
    /* Unchanged batches keep their CRC untouched, as Kafka does, so a
     * corrupt batch is never "repaired" by accident. */
    if (cur_type == timestamp_type && cur_max == max_timestamp)
        return 0;
    if (timestamp_type == RB_LOG_APPEND_TIME)
        attrs |= RB_ATTR_TIMESTAMP_TYPE;
    else
        attrs &= (uint16_t)~RB_ATTR_TIMESTAMP_TYPE;
    be16_write(batch + RB_OFF_ATTRIBUTES, attrs);
    be64_write(batch + RB_OFF_MAX_TIMESTAMP, (uint64_t)max_timestamp);
    be32_write(batch + RB_OFF_CRC, rb_compute_crc(batch, len));
    return 0;
}

/* ---- records ---- */

struct rd {
    const uint8_t *p, *end;
};

static inline size_t rd_left(const struct rd *r) { return (size_t)(r->end - r->p); }

static bool rd_varint(struct rd *r, int32_t *v)
{
    uint32_t u;
    size_t k = varint_decode_u32(r->p, rd_left(r), &u);
    if (!k)
        return false;
    r->p += k;
    *v = unzigzag32(u);
    return true;
}

static bool rd_varlong(struct rd *r, int64_t *v)
{
    uint64_t u;
    size_t k = varint_decode_u64(r->p, rd_left(r), &u);
    if (!k)
        return false;
    r->p += k;
    *v = unzigzag64(u);
    return true;
}

/* A varint length (-1 = null when nullable) followed by that many bytes. */
static const char *rd_lenbytes(struct rd *r, bool nullable, kbytes_t *out)
{
    int32_t len;
    if (!rd_varint(r, &len))
        return "truncated or overlong length varint";
    if (len < 0) {
        if (len == -1 && nullable) {
            *out = KBYTES_NULL;
            return NULL;
        }
        return "negative length";
    }
    if ((size_t)len > rd_left(r))
        return "length past the end of the record";
    *out = (kbytes_t){r->p, len};
    r->p += len;
    return NULL;
}

void rb_record_iter_init(struct rb_record_iter *it, const uint8_t *records, size_t len, int32_t count)
{
    it->p = records;
    it->end = records ? records + len : NULL; /* NULL + 0 is undefined */
    it->left = count;
    it->index = 0;
    it->err = 0;
    it->reason = NULL;
    /* Kafka hands out an empty iterator for count 0 without looking at the
     * bytes (DefaultRecordBatch.iterator), e.g. batches emptied by compaction. */
    if (count == 0)
        it->p = it->end;
}

int rb_record_iter_init_batch(struct rb_record_iter *it, const uint8_t *batch, size_t len)
{
    struct rb_header h;
    rb_record_iter_init(it, NULL, 0, 0);
    if (rb_parse_header(batch, len, &h) || rb_batch_size(&h) != (int64_t)len)
        return KERR_CORRUPT_MESSAGE;
    if (rb_codec(&h) != RB_CODEC_NONE)
        return KERR_UNSUPPORTED_COMPRESSION_TYPE;
    rb_record_iter_init(it, batch + RB_OFF_RECORDS, len - RB_OFF_RECORDS, h.records_count);
    return 0;
}

static int iter_fail(struct rb_record_iter *it, const char *reason)
{
    it->err = KERR_INVALID_RECORD;
    it->reason = reason;
    it->left = 0;
    it->p = it->end;
    return -1;
}

/* Walks count headers in r; NULL or the reason they are malformed. */
static const char *skip_headers(struct rd *r, int32_t count)
{
    for (int32_t i = 0; i < count; i++) {
        kbytes_t k, v;
        const char *e = rd_lenbytes(r, false, &k);
        if (e)
            return "malformed header key";
        e = rd_lenbytes(r, true, &v);
        if (e)
            return "malformed header value";
    }
    return NULL;
}

int rb_record_next(struct rb_record_iter *it, struct rb_record *rec)
{
    if (it->err)
        return -1;
    if (it->left < 0)
        return iter_fail(it, "invalid record count");
    if (it->left == 0) {
        if (it->p != it->end)
            return iter_fail(it, "Incorrect declared batch size, records still remaining in file");
        return 0;
    }

    struct rd r = {it->p, it->end};
    int32_t len;
    if (!rd_varint(&r, &len))
        return iter_fail(it, "Incorrect declared batch size, premature EOF reached");
    if (len < 0)
        return iter_fail(it, "negative record length");
    if ((size_t)len > rd_left(&r))
        return iter_fail(it, "Incorrect declared batch size, premature EOF reached");

    /* Fields are read within the declared length only; a record whose
     * fields need more or fewer bytes than it declares is invalid. */
    struct rd b = {r.p, r.p + len};
    memset(rec, 0, sizeof *rec);
    if (rd_left(&b) < 1)
        return iter_fail(it, "record shorter than its attributes");
    rec->attributes = (int8_t)*b.p++;
    if (!rd_varlong(&b, &rec->timestamp_delta))
        return iter_fail(it, "malformed record timestamp delta");
    if (!rd_varint(&b, &rec->offset_delta))
        return iter_fail(it, "malformed record offset delta");
    if (rd_lenbytes(&b, true, &rec->key))
        return iter_fail(it, "malformed record key");
    if (rd_lenbytes(&b, true, &rec->value))
        return iter_fail(it, "malformed record value");
    if (!rd_varint(&b, &rec->header_count))
        return iter_fail(it, "malformed record header count");
    if (rec->header_count < 0)
        return iter_fail(it, "Found invalid number of record headers");
    if ((size_t)rec->header_count > rd_left(&b))
        return iter_fail(it, "Found invalid number of record headers, larger than the remaining size");
    rec->headers = b.p;
    const char *e = skip_headers(&b, rec->header_count);
    if (e)
        return iter_fail(it, e);
    rec->headers_len = (size_t)(b.p - rec->headers);
    if (b.p != b.end)
        return iter_fail(it, "Invalid record size: record length disagrees with its fields");

    rec->size = (size_t)(b.end - it->p);
    it->p = b.end;
    it->left--;
    it->index++;
    return 1;
}

void rb_header_iter_init(struct rb_header_iter *it, const struct rb_record *rec)
{
    it->p = rec->headers;
    it->end = rec->headers ? rec->headers + rec->headers_len : NULL;
    it->left = rec->header_count;
    it->err = 0;
}

int rb_header_next(struct rb_header_iter *it, kstr_t *key, kbytes_t *value)
{
    if (it->err)
        return -1;
    if (it->left <= 0) {
        if (it->left < 0 || it->p != it->end) {
            it->err = KERR_INVALID_RECORD;
            return -1;
        }
        return 0;
    }
    struct rd r = {it->p, it->end};
    kbytes_t k;
    if (rd_lenbytes(&r, false, &k) || rd_lenbytes(&r, true, value)) {
        it->err = KERR_INVALID_RECORD;
        it->left = 0;
        return -1;
    }
    *key = (kstr_t){(const char *)k.p, k.len};
    it->p = r.p;
    it->left--;
    return 1;
}

/* ---- produce validation ---- */

__attribute__((format(printf, 4, 5)))
static int verr(struct rb_validate_result *out, int code, int32_t record, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->reason, sizeof out->reason, fmt, ap);
    va_end(ap);
    out->error_record_index = record;
    return code;
}

static const char *codec_name(int codec)
{
    static const char *names[] = {"none", "gzip", "snappy", "lz4", "zstd"};
    return codec >= 0 && codec <= RB_CODEC_ZSTD ? names[codec] : "unknown";
}

/* Per-record checks of LogValidator.validateRecord over the records block.
 * Structural problems fail at once (Kafka throws from the iterator); key
 * and timestamp problems are collected and, as processRecordErrors does,
 * INVALID_TIMESTAMP wins over INVALID_RECORD when both occur. */
/* The walk below in one pass without a call or a struct per record, for
 * the batches clients send: every field present and well formed, offset
 * deltas 0..n-1, keys present where compaction needs them, timestamps in
 * range, CreateTime. On anything else it returns false and the general
 * walk runs from the start to find and name the error as Kafka does; the
 * two accept exactly the same batches (record_batch_test and the
 * record_batch fuzz target run both on mutated batches and compare). perf put the general walk at
 * about a sixth of the server's CPU for 100-byte records. */
static inline bool fast_varint(const uint8_t **pp, const uint8_t *end, int32_t *v)
{
    uint32_t u;
    size_t k = varint_decode_u32(*pp, (size_t)(end - *pp), &u);
    if (!k)
        return false;
    *pp += k;
    *v = unzigzag32(u);
    return true;
}

static inline bool fast_skip_bytes(const uint8_t **pp, const uint8_t *end, bool nullable, bool *is_null)
{
    int32_t len;
    if (!fast_varint(pp, end, &len))
        return false;
    if (len < 0) {
        *is_null = true;
        return len == -1 && nullable;
    }
    *is_null = false;
    if ((size_t)len > (size_t)(end - *pp))
        return false;
    *pp += len;
    return true;
}

/* A CreateTime timestamp within message.timestamp.{before,after}.max.ms
 * of now; RB_NO_TIMESTAMP (-1) always is, as Kafka skips it. */
static bool timestamp_in_range(const struct rb_validate_opts *o, int64_t ts)
{
    if (ts == RB_NO_TIMESTAMP)
        return true;
    int64_t diff = wsub64(o->now_ms, ts);
    return diff <= o->timestamp_before_max_ms && wneg64(diff) <= o->timestamp_after_max_ms;
}

static bool use_fast_walk = true;

void rb_validate_use_fast_walk(bool on) { use_fast_walk = on; }

/* The walk's state between calls, so that it can follow the CRC through
 * the batch block by block (rb_validate_produce) while the bytes are in
 * the cache the CRC just loaded them into. */
struct fast_walk {
    const uint8_t *p, *end;
    int32_t i, count;
    int64_t max_ts;
    int32_t max_delta;
    bool failed;
};

static bool fast_walk_init(struct fast_walk *w, const uint8_t *p, size_t recs_len, const struct rb_header *h)
{
    *w = (struct fast_walk){.p = p, .end = p ? p + recs_len : NULL, .count = h->records_count,
                            .max_ts = RB_NO_TIMESTAMP, .max_delta = -1};
    w->failed = !p || rb_timestamp_type(h) == RB_LOG_APPEND_TIME || h->records_count <= 0;
    return !w->failed;
}

/* Walks the records that start before limit (all of them when limit is
 * the end). Returns false once the walk has failed. */
static bool fast_walk_run(struct fast_walk *w, const uint8_t *limit, const struct rb_header *h,
                          const struct rb_validate_opts *o)
{
    if (w->failed)
        return false;
    const uint8_t *p = w->p, *end = w->end;
    const bool check_ts = o->timestamp_type == RB_CREATE_TIME;
    int64_t max_ts = w->max_ts;
    int32_t max_delta = w->max_delta;
    int32_t i = w->i;
    for (; i < w->count && p < limit; i++) {
        int32_t len;
        if (!fast_varint(&p, end, &len) || len < 1 || (size_t)len > (size_t)(end - p))
            goto fail;
        const uint8_t *rend = p + len;
        p++; /* attributes */
        uint64_t u;
        size_t k = varint_decode_u64(p, (size_t)(rend - p), &u);
        if (!k)
            goto fail;
        p += k;
        int64_t ts = wadd64(h->base_timestamp, unzigzag64(u));
        int32_t off, nh;
        bool null_key, null_value;
        if (!fast_varint(&p, rend, &off) || off != i || !fast_skip_bytes(&p, rend, true, &null_key) ||
            (null_key && o->compacted) || !fast_skip_bytes(&p, rend, true, &null_value) ||
            !fast_varint(&p, rend, &nh) || nh < 0 || (size_t)nh > (size_t)(rend - p))
            goto fail;
        for (int32_t j = 0; j < nh; j++)
            if (!fast_skip_bytes(&p, rend, false, &null_key) || !fast_skip_bytes(&p, rend, true, &null_value))
                goto fail;
        if (p != rend)
            goto fail;
        if (ts > max_ts) {
            max_ts = ts;
            max_delta = off;
        }
        if (check_ts && !timestamp_in_range(o, ts))
            goto fail;
    }
    w->p = p;
    w->i = i;
    w->max_ts = max_ts;
    w->max_delta = max_delta;
    return true;
fail:
    w->failed = true;
    return false;
}

/* After the last run: whether every record passed and the records end
 * exactly where the batch does. */
static bool fast_walk_ok(const struct fast_walk *w)
{
    return !w->failed && w->i == w->count && w->p == w->end;
}

static bool validate_records_fast(const uint8_t *p, size_t recs_len, const struct rb_header *h,
                                  const struct rb_validate_opts *o, int64_t *max_ts_out, int32_t *max_delta_out)
{
    struct fast_walk w;
    if (!fast_walk_init(&w, p, recs_len, h) || !fast_walk_run(&w, w.end, h, o) || !fast_walk_ok(&w))
        return false;
    *max_ts_out = w.max_ts;
    *max_delta_out = w.max_delta;
    return true;
}

/* Bytes of CRC between two steps of the walk in crc_and_walk: one round
 * of crc32c's six 4 KiB streams (its fastest stride), inside L1. */
#define FUSED_BLOCK (6 * 4096)

/* The batch's CRC with the single-pass walk of its (uncompressed)
 * records run behind it block by block: both read every byte, and run
 * one after the other over a whole 1 MB batch the walk found it gone from
 * L1/L2 (validation 16 -> 10.7 ns per 100-byte record cold, micro-benchmark).
 * The walk's outcome is in *w; the CRC is returned, and is checked
 * before anything the walk found, as Kafka does. */
static uint32_t crc_and_walk(const uint8_t *batch, size_t size, const struct rb_header *h,
                             const struct rb_validate_opts *o, struct fast_walk *w)
{
    const uint8_t *p = batch + RB_OFF_ATTRIBUTES, *end = batch + size;
    uint32_t crc = 0;
    bool walking = fast_walk_init(w, batch + RB_OFF_RECORDS, size - RB_OFF_RECORDS, h);
    while (p < end) {
        size_t n = (size_t)(end - p) < FUSED_BLOCK ? (size_t)(end - p) : FUSED_BLOCK;
        crc = crc32c(crc, p, n);
        p += n;
        if (walking)
            walking = fast_walk_run(w, p, h, o);
    }
    return crc;
}

static int timestamp_range_error(struct rb_validate_result *out, const struct rb_validate_opts *o, int64_t ts,
                                 int32_t record)
{
    return verr(out, KERR_INVALID_TIMESTAMP, record, "Timestamp %lld of record %d is out of range: must be within [%lld, %lld]",
                (long long)ts, record, (long long)wsub64(o->now_ms, o->timestamp_before_max_ms),
                (long long)wadd64(o->now_ms, o->timestamp_after_max_ms));
}

/* Only the broker may choose LogAppendTime. */
static int timestamp_type_error(struct rb_validate_result *out, int32_t record)
{
    return verr(out, KERR_INVALID_TIMESTAMP, record,
                "Invalid timestamp type in record %d: producer should not set timestamp type to LogAppendTime", record);
}

/* max_ts: the records' largest timestamp (CreateTime), at offset delta
 * max_delta. */
static void set_max_timestamp(struct rb_validate_result *out, const struct rb_header *h,
                              const struct rb_validate_opts *o, int64_t max_ts, int32_t max_delta)
{
    if (o->timestamp_type == RB_LOG_APPEND_TIME) {
        out->max_timestamp = o->now_ms;
        out->max_timestamp_offset_delta = h->last_offset_delta;
    } else {
        out->max_timestamp = max_ts;
        out->max_timestamp_offset_delta = max_delta;
    }
    out->max_timestamp_stale = rb_timestamp_type(h) != o->timestamp_type || h->max_timestamp != out->max_timestamp;
}

/* pre: the single-pass walk crc_and_walk already ran over these records,
 * or NULL. */
static int validate_records(const uint8_t *recs, size_t recs_len, const struct rb_header *h,
                            const struct rb_validate_opts *o, const struct fast_walk *pre,
                            struct rb_validate_result *out)
{
    struct rb_record_iter it;
    struct rb_record rec;
    bool lat_batch = rb_timestamp_type(h) == RB_LOG_APPEND_TIME;
    int64_t max_ts = RB_NO_TIMESTAMP;
    int32_t max_ts_delta = -1;
    int32_t first_key_err = -1, first_ts_err = -1;
    int64_t bad_ts = 0;
    bool bad_ts_type = false;
    int r;

    if (pre) {
        if (fast_walk_ok(pre)) {
            max_ts = pre->max_ts;
            max_ts_delta = pre->max_delta;
            goto valid;
        }
    } else if (use_fast_walk && validate_records_fast(recs, recs_len, h, o, &max_ts, &max_ts_delta)) {
        goto valid;
    }
    max_ts = RB_NO_TIMESTAMP;
    max_ts_delta = -1;
    rb_record_iter_init(&it, recs, recs_len, h->records_count);
    while ((r = rb_record_next(&it, &rec)) == 1) {
        int32_t idx = it.index - 1;
        /* Kafka rewrites a compressed batch whose inner offsets are not
         * 0..n-1; samsa stores batches as produced, so it cannot. */
        if (rec.offset_delta != idx)
            return verr(out, KERR_INVALID_RECORD, -1, "record %d has offset delta %d, expected %d",
                        idx, rec.offset_delta, idx);
        /* A LogAppendTime batch's records all carry its maxTimestamp
         * (DefaultRecordBatch.RecordIterator). */
        int64_t ts = lat_batch ? h->max_timestamp : wadd64(h->base_timestamp, rec.timestamp_delta);
        if (ts > max_ts) {
            max_ts = ts;
            max_ts_delta = rec.offset_delta;
        }
        if (o->compacted && rec.key.len < 0) {
            if (first_key_err < 0)
                first_key_err = idx;
            continue;
        }
        if (o->timestamp_type == RB_CREATE_TIME && ts != RB_NO_TIMESTAMP) {
            if (!timestamp_in_range(o, ts) && first_ts_err < 0) {
                first_ts_err = idx;
                bad_ts = ts;
            }
        } else if (lat_batch && first_ts_err < 0) {
            first_ts_err = idx;
            bad_ts_type = true;
        }
    }
    /* Kafka throws these from the iterator as a batch-level error, with no
     * RecordErrors entry, hence index -1. */
    if (r < 0)
        return verr(out, it.err, -1, "%s (record %d of %d)", it.reason, it.index, h->records_count);

    if (first_ts_err >= 0)
        return bad_ts_type ? timestamp_type_error(out, first_ts_err)
                           : timestamp_range_error(out, o, bad_ts, first_ts_err);
    if (first_key_err >= 0)
        return verr(out, KERR_INVALID_RECORD, first_key_err,
                    "Compacted topic cannot accept message without key (record %d)", first_key_err);

valid:
    set_max_timestamp(out, h, o, max_ts, max_ts_delta);
    return 0;
}

/* samsa.record.validation=batch: LogValidator's per-record timestamp
 * checks made on what the header says of its records, the first
 * timestamp and the largest; the records are not read. */
static int validate_header_only(const struct rb_header *h, const struct rb_validate_opts *o,
                                struct rb_validate_result *out)
{
    if (o->timestamp_type == RB_CREATE_TIME && rb_timestamp_type(h) == RB_LOG_APPEND_TIME) {
        /* As the records would read: each carries maxTimestamp, and
         * only -1 is refused for its type. */
        if (h->max_timestamp == RB_NO_TIMESTAMP)
            return timestamp_type_error(out, 0);
        if (!timestamp_in_range(o, h->max_timestamp))
            return timestamp_range_error(out, o, h->max_timestamp, 0);
    } else if (o->timestamp_type == RB_CREATE_TIME) {
        if (!timestamp_in_range(o, h->base_timestamp))
            return timestamp_range_error(out, o, h->base_timestamp, 0);
        /* which record has it is not known without reading them */
        if (!timestamp_in_range(o, h->max_timestamp))
            return timestamp_range_error(out, o, h->max_timestamp, -1);
    }
    set_max_timestamp(out, h, o, h->max_timestamp, h->last_offset_delta);
    return 0;
}

int rb_validate_produce(const uint8_t *p, size_t len, int16_t produce_version,
                        const struct rb_validate_opts *opts, struct rb_validate_result *out)
{
    static const struct rb_validate_opts defaults = {
        .max_message_bytes = 0,
        .compacted = false,
        .timestamp_type = RB_CREATE_TIME,
        .timestamp_before_max_ms = INT64_MAX,
        .timestamp_after_max_ms = INT64_MAX,
    };
    const struct rb_validate_opts *o = opts ? opts : &defaults;
    size_t size = 0;
    int rc;

    memset(out, 0, sizeof *out);
    out->error_record_index = -1;
    out->last_offset_delta = -1;
    out->max_timestamp = RB_NO_TIMESTAMP;
    out->max_timestamp_offset_delta = -1;
    out->producer_id = RB_NO_PRODUCER_ID;
    out->producer_epoch = RB_NO_PRODUCER_EPOCH;
    out->base_sequence = RB_NO_SEQUENCE;
    if (!p)
        len = 0;

    /* Framing, as ByteBufferLogInputStream walks the records while
     * ProduceRequest.validateRecords looks at the first batches. */
    rc = rb_frame(p, len, &size);
    if (rc == RB_FRAME_TRUNCATED) {
        /* Kafka 3.x appends nothing and answers NONE for empty v0-v2 data. */
        if (len == 0 && produce_version < 3)
            return 0;
        if (len == 0)
            return verr(out, KERR_INVALID_RECORD, -1,
                        "Produce requests with version %d must have at least one record batch per partition",
                        produce_version);
        return verr(out, KERR_INVALID_RECORD, -1,
                    "truncated record batch: %zu bytes present, batch needs %zu", len, size);
    }
    if (rc)
        return verr(out, KERR_CORRUPT_MESSAGE, -1, "record batch has invalid length %d or magic %d",
                    len >= RB_LOG_OVERHEAD ? (int)(int32_t)be32_read(p + RB_OFF_BATCH_LENGTH) : -1,
                    len > RB_OFF_MAGIC ? (int)(int8_t)p[RB_OFF_MAGIC] : -1);

    int8_t magic = (int8_t)p[RB_OFF_MAGIC];
    if (magic != RB_MAGIC_V2) {
        /* Kafka 3.x/4.x, ProduceRequest.validateRecords: v3+ must carry
         * magic 2, else InvalidRecordException. Produce v0-v2 are refused
         * before their records are read by Kafka 4.x (KIP-896: "Received
         * request for api with key 0 (Produce) and unsupported version");
         * Kafka 3.x up-converted their v0/v1 message sets in LogValidator,
         * which samsa, storing batches as produced, does not do. */
        if (produce_version >= 3)
            return verr(out, KERR_INVALID_RECORD, -1,
                        "Produce requests with version %d are only allowed to contain record batches "
                        "with magic version 2 (got magic %d)", produce_version, magic);
        return verr(out, KERR_UNSUPPORTED_VERSION, -1,
                    "magic v%d message sets (Produce v%d) are not supported; use Produce v3+ with magic 2",
                    magic, produce_version);
    }
    /* ProduceRequest.validateRecords: zstd needs Produce v7+ (KIP-110);
     * like the rest of that method it only looks at v3+. */
    if (produce_version >= 3 && produce_version < 7 && size > RB_OFF_ATTRIBUTES + 1 &&
        rb_attr_codec((int16_t)be16_read(p + RB_OFF_ATTRIBUTES)) == RB_CODEC_ZSTD)
        return verr(out, KERR_UNSUPPORTED_COMPRESSION_TYPE, -1,
                    "Produce requests with version %d are not allowed to use ZStandard compression",
                    produce_version);
    if (len > size) {
        size_t next;
        rc = rb_frame(p + size, len - size, &next);
        if (rc == KERR_CORRUPT_MESSAGE)
            return verr(out, KERR_CORRUPT_MESSAGE, -1, "second record batch at byte %zu has an invalid length or magic",
                        size);
        /* Kafka trims a partial trailing batch silently; a client never
         * sends one, so it is refused as the malformed data it is. */
        if (rc == RB_FRAME_TRUNCATED)
            return verr(out, KERR_INVALID_RECORD, -1, "%zu stray bytes after the record batch", len - size);
        /* v3+: ProduceRequest.validateRecords; v0-v2 with magic 2:
         * LogValidator.getFirstBatchAndMaybeValidateNoMoreBatches. */
        return verr(out, KERR_INVALID_RECORD, -1,
                    "Produce requests are only allowed to contain exactly one record batch per partition");
    }

    /* UnifiedLog.analyzeAndValidateRecords, in its order. */
    int64_t base_offset = (int64_t)be64_read(p + RB_OFF_BASE_OFFSET);
    if (base_offset != 0)
        return verr(out, KERR_INVALID_RECORD, -1,
                    "The baseOffset of the record batch should be 0, but it is %lld", (long long)base_offset);
    /* Kafka compares batch.sizeInBytes (log overhead included) with
     * max.message.bytes and throws RecordTooLargeException. */
    if (o->max_message_bytes > 0 && size > (size_t)o->max_message_bytes)
        return verr(out, KERR_MESSAGE_TOO_LARGE, -1,
                    "The record batch size is %zu bytes which exceeds the maximum configured value of %d",
                    size, o->max_message_bytes);
    if (size < RB_HEADER_SIZE)
        return verr(out, KERR_CORRUPT_MESSAGE, -1,
                    "Record batch is corrupt (the size %zu is smaller than the minimum allowed overhead %d)",
                    size, RB_HEADER_SIZE);
    struct rb_header h;
    rb_parse_header(p, size, &h);
    bool header_only = o->header_only && !o->compacted;
    struct fast_walk walked;
    bool fused = use_fast_walk && rb_codec(&h) == RB_CODEC_NONE && !header_only;
    uint32_t crc = fused ? crc_and_walk(p, size, &h, o, &walked) : rb_compute_crc(p, size);
    if (crc != h.crc)
        return verr(out, KERR_CORRUPT_MESSAGE, -1, "Record is corrupt (stored crc = %u, computed crc = %u)",
                    h.crc, crc);

    out->batches = 1;
    out->valid_bytes = size;
    out->first_offset_delta = 0;
    out->last_offset_delta = h.last_offset_delta;
    out->producer_id = h.producer_id;
    out->producer_epoch = h.producer_epoch;
    out->base_sequence = h.base_sequence;
    out->is_transactional = rb_is_transactional(&h);
    out->codec = rb_codec(&h);
    out->timestamp_type = rb_timestamp_type(&h);

    /* Kafka fails on an unknown codec id with an internal error; this is
     * the code a client can act on. */
    if (out->codec > RB_CODEC_ZSTD)
        return verr(out, KERR_UNSUPPORTED_COMPRESSION_TYPE, -1, "unknown compression codec %d", out->codec);

    /* LogValidator.validateBatch, origin CLIENT. */
    int64_t count_from_offsets = (int64_t)h.last_offset_delta + 1;
    if (count_from_offsets <= 0)
        return verr(out, KERR_INVALID_RECORD, -1, "Batch has an invalid offset range: [0, %d]",
                    h.last_offset_delta);
    if (h.records_count <= 0)
        return verr(out, KERR_INVALID_RECORD, -1, "Invalid reported count for record batch: %d", h.records_count);
    if (count_from_offsets != h.records_count)
        return verr(out, KERR_INVALID_RECORD, -1,
                    "Inconsistent batch offset range [0, %d] and count of records %d",
                    h.last_offset_delta, h.records_count);
    if (rb_is_control(&h))
        return verr(out, KERR_INVALID_RECORD, -1, "Clients are not allowed to write control records");
    if (rb_has_producer_id(&h) && h.base_sequence < 0)
        return verr(out, KERR_INVALID_RECORD, -1,
                    "Invalid sequence number %d in record batch with producerId %lld",
                    h.base_sequence, (long long)h.producer_id);
    out->records = h.records_count;
    if (header_only)
        return validate_header_only(&h, o, out);

    const uint8_t *recs = p + RB_OFF_RECORDS;
    size_t recs_len = size - RB_OFF_RECORDS;
    struct buf dec = BUF_INIT;
    if (out->codec != RB_CODEC_NONE) {
        if (!o->decompress)
            return verr(out, KERR_UNSUPPORTED_COMPRESSION_TYPE, -1, "compression codec %s is not available",
                        codec_name(out->codec));
        rc = o->decompress(o->decompress_ctx, out->codec, recs, recs_len, &dec);
        if (rc) {
            buf_free(&dec);
            return verr(out, rc, -1, "cannot decompress %s record batch: %s", codec_name(out->codec),
                        kerr_name((int16_t)rc));
        }
        recs = dec.data;
        recs_len = dec.len;
    }
    rc = validate_records(recs, recs_len, &h, o, fused ? &walked : NULL, out);
    buf_free(&dec);
    return rc;
}

/* ---- builder ---- */

void rb_builder_begin(struct rb_builder *b, struct buf *out, int64_t base_offset, int64_t base_timestamp,
                      const struct rb_batch_opts *opts)
{
    static const struct rb_batch_opts plain = RB_BATCH_OPTS_INIT;
    const struct rb_batch_opts *o = opts ? opts : &plain;
    b->out = out;
    b->start = out->len;
    b->base_timestamp = base_timestamp;
    b->max_timestamp = RB_NO_TIMESTAMP;
    b->count = 0;

    uint8_t *h = buf_extend(out, RB_HEADER_SIZE);
    memset(h, 0, RB_HEADER_SIZE);
    uint16_t attrs = 0;
    if (o->transactional)
        attrs |= RB_ATTR_TRANSACTIONAL;
    if (o->control)
        attrs |= RB_ATTR_CONTROL;
    be64_write(h + RB_OFF_BASE_OFFSET, (uint64_t)base_offset);
    be32_write(h + RB_OFF_PARTITION_LEADER_EPOCH, (uint32_t)o->partition_leader_epoch);
    h[RB_OFF_MAGIC] = RB_MAGIC_V2;
    be16_write(h + RB_OFF_ATTRIBUTES, attrs);
    be64_write(h + RB_OFF_BASE_TIMESTAMP, (uint64_t)base_timestamp);
    be64_write(h + RB_OFF_PRODUCER_ID, (uint64_t)o->producer_id);
    be16_write(h + RB_OFF_PRODUCER_EPOCH, (uint16_t)o->producer_epoch);
    be32_write(h + RB_OFF_BASE_SEQUENCE, (uint32_t)o->base_sequence);
}

static size_t put_varint(uint8_t *w, int32_t v) { return varint_encode_u32(w, zigzag32(v)); }
static size_t varint_len(int32_t v) { return varint_size_u32(zigzag32(v)); }

static size_t put_lenbytes(uint8_t *w, const uint8_t *p, int32_t len)
{
    size_t n = put_varint(w, len < 0 ? -1 : len);
    if (len > 0) {
        memcpy(w + n, p, (size_t)len);
        n += (size_t)len;
    }
    return n;
}

static uint64_t lenbytes_size(int32_t len) { return varint_len(len < 0 ? -1 : len) + (uint64_t)(len > 0 ? len : 0); }

int rb_builder_add(struct rb_builder *b, int64_t timestamp, kbytes_t key, kbytes_t value,
                   const struct rb_header_kv *headers, int nheaders)
{
    if (nheaders < 0 || (nheaders > 0 && !headers) || key.len < -1 || value.len < -1)
        return KERR_INVALID_RECORD;
    if ((key.len > 0 && !key.p) || (value.len > 0 && !value.p))
        return KERR_INVALID_RECORD;
    if (b->count == INT32_MAX)
        return KERR_MESSAGE_TOO_LARGE;

    int64_t ts_delta = wsub64(timestamp, b->base_timestamp);
    int32_t off_delta = b->count;
    uint64_t body = 1 + varint_size_u64(zigzag64(ts_delta)) + varint_len(off_delta) + lenbytes_size(key.len) +
                    lenbytes_size(value.len) + varint_len(nheaders);
    for (int i = 0; i < nheaders && body <= INT32_MAX; i++) {
        if (headers[i].key.len < 0 || headers[i].value.len < -1 ||
            (headers[i].key.len > 0 && !headers[i].key.p) || (headers[i].value.len > 0 && !headers[i].value.p))
            return KERR_INVALID_RECORD;
        body += lenbytes_size(headers[i].key.len) + lenbytes_size(headers[i].value.len);
    }
    if (body > INT32_MAX)
        return KERR_MESSAGE_TOO_LARGE;

    uint8_t *w0 = buf_extend(b->out, varint_len((int32_t)body) + (size_t)body);
    uint8_t *w = w0;
    w += put_varint(w, (int32_t)body);
    *w++ = 0; /* record attributes: unused in v2 */
    w += varint_encode_u64(w, zigzag64(ts_delta));
    w += put_varint(w, off_delta);
    w += put_lenbytes(w, key.p, key.len);
    w += put_lenbytes(w, value.p, value.len);
    w += put_varint(w, nheaders);
    for (int i = 0; i < nheaders; i++) {
        w += put_lenbytes(w, (const uint8_t *)headers[i].key.p, headers[i].key.len);
        w += put_lenbytes(w, headers[i].value.p, headers[i].value.len);
    }
    if (timestamp > b->max_timestamp)
        b->max_timestamp = timestamp;
    b->count++;
    return 0;
}

void rb_builder_abort(struct rb_builder *b)
{
    b->out->len = b->start;
    b->count = 0;
}

static int finish_header(struct rb_builder *b, int codec, size_t *batch_len)
{
    size_t total = b->out->len - b->start;
    if (total - RB_LOG_OVERHEAD > INT32_MAX) {
        rb_builder_abort(b);
        return KERR_MESSAGE_TOO_LARGE;
    }
    uint8_t *h = b->out->data + b->start;
    uint16_t attrs = (uint16_t)((be16_read(h + RB_OFF_ATTRIBUTES) & ~RB_ATTR_CODEC_MASK) | (codec & RB_ATTR_CODEC_MASK));
    be32_write(h + RB_OFF_BATCH_LENGTH, (uint32_t)(total - RB_LOG_OVERHEAD));
    be16_write(h + RB_OFF_ATTRIBUTES, attrs);
    be32_write(h + RB_OFF_LAST_OFFSET_DELTA, (uint32_t)(b->count - 1));
    be64_write(h + RB_OFF_MAX_TIMESTAMP, (uint64_t)b->max_timestamp);
    be32_write(h + RB_OFF_RECORDS_COUNT, (uint32_t)b->count);
    be32_write(h + RB_OFF_CRC, rb_compute_crc(h, total));
    if (batch_len)
        *batch_len = total;
    return 0;
}

int rb_builder_finish(struct rb_builder *b, size_t *batch_len)
{
    if (b->count == 0) {
        rb_builder_abort(b);
        return KERR_INVALID_RECORD;
    }
    return finish_header(b, RB_CODEC_NONE, batch_len);
}

int rb_builder_finish_compressed(struct rb_builder *b, int codec, rb_codec_fn compress, void *ctx,
                                 size_t *batch_len)
{
    if (codec == RB_CODEC_NONE)
        return rb_builder_finish(b, batch_len);
    if (b->count == 0) {
        rb_builder_abort(b);
        return KERR_INVALID_RECORD;
    }
    if (codec < 0 || codec > RB_CODEC_ZSTD || !compress) {
        rb_builder_abort(b);
        return KERR_UNSUPPORTED_COMPRESSION_TYPE;
    }
    struct buf z = BUF_INIT;
    size_t recs = b->start + RB_OFF_RECORDS;
    int rc = compress(ctx, codec, b->out->data + recs, b->out->len - recs, &z);
    if (rc) {
        buf_free(&z);
        rb_builder_abort(b);
        return rc;
    }
    b->out->len = recs;
    buf_append(b->out, z.data, z.len);
    buf_free(&z);
    return finish_header(b, codec, batch_len);
}

/* ---- control records ---- */

void rb_control_key_encode(uint8_t out[RB_CONTROL_KEY_SIZE], int16_t type)
{
    be16_write(out, 0);
    be16_write(out + 2, (uint16_t)type);
}

int rb_control_key_parse(kbytes_t key, int16_t *type)
{
    if (key.len < RB_CONTROL_KEY_SIZE)
        return KERR_INVALID_RECORD;
    if ((int16_t)be16_read(key.p) < 0)
        return KERR_INVALID_RECORD;
    *type = (int16_t)be16_read(key.p + 2);
    return 0;
}

void rb_txn_marker_value_encode(uint8_t out[RB_TXN_MARKER_VALUE_SIZE], int32_t coordinator_epoch)
{
    be16_write(out, 0);
    be32_write(out + 2, (uint32_t)coordinator_epoch);
}

int rb_txn_marker_value_parse(kbytes_t value, int32_t *coordinator_epoch)
{
    if (value.len < RB_TXN_MARKER_VALUE_SIZE)
        return KERR_INVALID_RECORD;
    if ((int16_t)be16_read(value.p) < 0)
        return KERR_INVALID_RECORD;
    *coordinator_epoch = (int32_t)be32_read(value.p + 2);
    return 0;
}

int rb_build_txn_marker(struct buf *out, int64_t base_offset, int64_t timestamp, int64_t producer_id,
                        int16_t producer_epoch, int32_t partition_leader_epoch, int16_t type,
                        int32_t coordinator_epoch, size_t *batch_len)
{
    if (type != RB_CONTROL_ABORT && type != RB_CONTROL_COMMIT)
        return KERR_INVALID_RECORD;
    struct rb_batch_opts o = {
        .producer_id = producer_id,
        .producer_epoch = producer_epoch,
        .base_sequence = RB_NO_SEQUENCE,
        .partition_leader_epoch = partition_leader_epoch,
        .transactional = true,
        .control = true,
    };
    uint8_t k[RB_CONTROL_KEY_SIZE], v[RB_TXN_MARKER_VALUE_SIZE];
    rb_control_key_encode(k, type);
    rb_txn_marker_value_encode(v, coordinator_epoch);
    struct rb_builder b;
    rb_builder_begin(&b, out, base_offset, timestamp, &o);
    int rc = rb_builder_add(&b, timestamp, (kbytes_t){k, sizeof k}, (kbytes_t){v, sizeof v}, NULL, 0);
    if (rc) {
        rb_builder_abort(&b);
        return rc;
    }
    return rb_builder_finish(&b, batch_len);
}

int rb_parse_control_record(const struct rb_record *rec, int16_t *type, int32_t *coordinator_epoch)
{
    int rc = rb_control_key_parse(rec->key, type);
    if (rc)
        return rc;
    *coordinator_epoch = -1;
    if (*type == RB_CONTROL_ABORT || *type == RB_CONTROL_COMMIT)
        return rb_txn_marker_value_parse(rec->value, coordinator_epoch);
    return 0;
}
