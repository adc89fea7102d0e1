/* Record batch v2: golden bytes built by hand from the spec, builder and
 * parser round trips, stamping, every Produce validation error with its
 * Kafka code, truncation and bit flips. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto/crc32c.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"

/* Golden batch, laid out field by field from the "Record Batch" section
 * of Kafka's implementation docs. Two records, CreateTime, no producer id:
 *   record 0: ts delta 0, offset delta 0, key "k1", value "hello",
 *             one header "h" = "v"
 *   record 1: ts delta 5, offset delta 1, key null, value "world", no headers
 * The CRC was computed independently of samsa with this bitwise CRC-32C
 * over bytes 21..90 (attributes to the end):
 *
 *   def crc32c(data):
 *       crc = 0xFFFFFFFF
 *       for b in data:
 *           crc ^= b
 *           for _ in range(8):
 *               crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
 *       return crc ^ 0xFFFFFFFF        # crc32c(b"123456789") == 0xe3069283
 */
static const uint8_t golden[] = {
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* baseOffset 0 */
    0x00, 0x00, 0x00, 0x4f,                         /* batchLength 79 */
    0xff, 0xff, 0xff, 0xff,                         /* partitionLeaderEpoch -1 */
    0x02,                                           /* magic 2 */
    0x4b, 0xf4, 0x2f, 0x08,                         /* crc 0x4BF42F08 */
    0x00, 0x00,                                     /* attributes */
    0x00, 0x00, 0x00, 0x01,                         /* lastOffsetDelta 1 */
    0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00, /* baseTimestamp 1700000000000 */
    0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x05, /* maxTimestamp 1700000000005 */
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* producerId -1 */
    0xff, 0xff,                                     /* producerEpoch -1 */
    0xff, 0xff, 0xff, 0xff,                         /* baseSequence -1 */
    0x00, 0x00, 0x00, 0x02,                         /* recordsCount 2 */
    /* record 0 */
    0x22,                   /* length 17 (zigzag 34) */
    0x00,                   /* attributes */
    0x00,                   /* timestampDelta 0 */
    0x00,                   /* offsetDelta 0 */
    0x04, 'k', '1',         /* key length 2 */
    0x0a, 'h', 'e', 'l', 'l', 'o', /* value length 5 */
    0x02,                   /* 1 header */
    0x02, 'h', 0x02, 'v',
    /* record 1 */
    0x16,                   /* length 11 */
    0x00, 0x0a,             /* attributes, timestampDelta 5 */
    0x02,                   /* offsetDelta 1 */
    0x01,                   /* key length -1: null */
    0x0a, 'w', 'o', 'r', 'l', 'd',
    0x00,                   /* no headers */
};

#define GOLDEN_TS 1700000000000LL

/* Transaction marker (COMMIT) as Kafka's MemoryRecords.withEndTransactionMarker
 * lays it out: baseOffset 42, leader epoch 3, attributes transactional|control,
 * producer 1000/5, baseSequence -1, key {0, 1}, value {0, coordinatorEpoch 7}.
 * CRC 0x40D514E9 computed with the function above. */
static const uint8_t golden_marker[] = {
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a, 0x00, 0x00, 0x00, 0x42, 0x00, 0x00, 0x00, 0x03,
    0x02, 0x40, 0xd5, 0x14, 0xe9, 0x00, 0x30, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x8b, 0xcf,
    0xe5, 0x68, 0x00, 0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x03, 0xe8, 0x00, 0x05, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01,
    0x20, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x01, 0x0c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07,
    0x00,
};

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static kbytes_t kb(const char *s) { return s ? (kbytes_t){(const uint8_t *)s, (int32_t)strlen(s)} : KBYTES_NULL; }

static bool kb_eq(kbytes_t a, const char *s)
{
    if (!s)
        return a.len == -1;
    return a.len == (int32_t)strlen(s) && memcmp(a.p, s, (size_t)a.len) == 0;
}

/* Options matching a default CreateTime topic with "now" near the golden
 * timestamps and no time bounds. */
static struct rb_validate_opts vopts(void)
{
    return (struct rb_validate_opts){
        .max_message_bytes = 1048588,
        .compacted = false,
        .timestamp_type = RB_CREATE_TIME,
        .timestamp_before_max_ms = INT64_MAX,
        .timestamp_after_max_ms = INT64_MAX,
        .now_ms = GOLDEN_TS + 1000,
    };
}

/* A private copy of exactly n bytes so ASan sees any read past the end. */
static uint8_t *dup_exact(const uint8_t *p, size_t n)
{
    uint8_t *q = malloc(n ? n : 1);
    assert_non_null(q);
    if (n)
        memcpy(q, p, n);
    return q;
}

static int validate(const uint8_t *p, size_t n, int16_t ver, const struct rb_validate_opts *o,
                    struct rb_validate_result *res)
{
    uint8_t *q = dup_exact(p, n);
    int rc = rb_validate_produce(q, n, ver, o, res);
    free(q);
    return rc;
}

/* ---- hand-made batches for the error cases ---- */

/* Appends one record with the given fields, its length computed. */
static void put_rec(struct buf *b, int64_t ts_delta, int32_t off_delta, const char *key, const char *value)
{
    uint8_t tmp[64];
    size_t n = 0;
    tmp[n++] = 0;
    n += varint_encode_u64(tmp + n, zigzag64(ts_delta));
    n += varint_encode_u32(tmp + n, zigzag32(off_delta));
    n += varint_encode_u32(tmp + n, zigzag32(key ? (int32_t)strlen(key) : -1));
    if (key) {
        memcpy(tmp + n, key, strlen(key));
        n += strlen(key);
    }
    n += varint_encode_u32(tmp + n, zigzag32(value ? (int32_t)strlen(value) : -1));
    if (value) {
        memcpy(tmp + n, value, strlen(value));
        n += strlen(value);
    }
    tmp[n++] = 0; /* no headers */
    uint8_t *w = buf_reserve(b, 5);
    b->len += varint_encode_u32(w, zigzag32((int32_t)n));
    buf_append(b, tmp, n);
}

struct hdr {
    uint16_t attrs;
    int32_t lod;
    int64_t base_ts, max_ts;
    int64_t pid;
    int16_t epoch;
    int32_t seq;
    int32_t count;
};

static struct hdr plain_hdr(int32_t count)
{
    return (struct hdr){0, count - 1, GOLDEN_TS, GOLDEN_TS + count - 1, -1, -1, -1, count};
}

/* Wraps records in a v2 header with a correct CRC. */
static void mk_batch(struct buf *out, const struct hdr *h, const struct buf *recs)
{
    buf_reset(out);
    uint8_t *p = buf_extend(out, RB_HEADER_SIZE);
    memset(p, 0, RB_HEADER_SIZE);
    be32_write(p + RB_OFF_BATCH_LENGTH, (uint32_t)(RB_HEADER_SIZE - RB_LOG_OVERHEAD + recs->len));
    be32_write(p + RB_OFF_PARTITION_LEADER_EPOCH, 0xffffffffu);
    p[RB_OFF_MAGIC] = 2;
    be16_write(p + RB_OFF_ATTRIBUTES, h->attrs);
    be32_write(p + RB_OFF_LAST_OFFSET_DELTA, (uint32_t)h->lod);
    be64_write(p + RB_OFF_BASE_TIMESTAMP, (uint64_t)h->base_ts);
    be64_write(p + RB_OFF_MAX_TIMESTAMP, (uint64_t)h->max_ts);
    be64_write(p + RB_OFF_PRODUCER_ID, (uint64_t)h->pid);
    be16_write(p + RB_OFF_PRODUCER_EPOCH, (uint16_t)h->epoch);
    be32_write(p + RB_OFF_BASE_SEQUENCE, (uint32_t)h->seq);
    be32_write(p + RB_OFF_RECORDS_COUNT, (uint32_t)h->count);
    buf_append(out, recs->data, recs->len);
    assert_int_equal(rb_recompute_crc(out->data, out->len), 0);
}

/* A fake codec: XOR with 0x5A, so a path that forgets to decompress sees
 * garbage rather than passing by luck. ctx non-NULL makes it fail. */
static int xor_codec(void *ctx, int codec, const uint8_t *in, size_t in_len, struct buf *out)
{
    if (ctx)
        return *(int *)ctx;
    if (codec != RB_CODEC_GZIP && codec != RB_CODEC_LZ4)
        return KERR_UNSUPPORTED_COMPRESSION_TYPE;
    if (in_len == 0) /* buf_extend(.., 0) on an empty buf computes NULL + 0 */
        return 0;
    uint8_t *w = buf_extend(out, in_len);
    for (size_t i = 0; i < in_len; i++)
        w[i] = in[i] ^ 0x5A;
    return 0;
}

/* ---- golden ---- */

static void test_golden_parse(void **state)
{
    (void)state;
    struct rb_header h;
    assert_int_equal(sizeof golden, 91);
    assert_int_equal(rb_parse_header(golden, sizeof golden, &h), 0);
    assert_int_equal(h.base_offset, 0);
    assert_int_equal(h.batch_length, 79);
    assert_int_equal(rb_batch_size(&h), sizeof golden);
    assert_int_equal(h.partition_leader_epoch, -1);
    assert_int_equal(h.magic, 2);
    assert_int_equal(h.crc, 0x4BF42F08u);
    assert_int_equal(h.attributes, 0);
    assert_int_equal(rb_codec(&h), RB_CODEC_NONE);
    assert_int_equal(rb_timestamp_type(&h), RB_CREATE_TIME);
    assert_false(rb_is_transactional(&h));
    assert_false(rb_is_control(&h));
    assert_false(rb_has_delete_horizon(&h));
    assert_false(rb_has_producer_id(&h));
    assert_int_equal(h.last_offset_delta, 1);
    assert_int_equal(h.base_timestamp, GOLDEN_TS);
    assert_int_equal(h.max_timestamp, GOLDEN_TS + 5);
    assert_int_equal(h.producer_id, -1);
    assert_int_equal(h.producer_epoch, -1);
    assert_int_equal(h.base_sequence, -1);
    assert_int_equal(h.records_count, 2);
    assert_true(rb_crc_ok(golden, sizeof golden));
    assert_int_equal(rb_compute_crc(golden, sizeof golden), 0x4BF42F08u);
    /* The CRC is CRC-32C of bytes 21.. and nothing else. */
    assert_int_equal(crc32c(0, golden + 21, sizeof golden - 21), 0x4BF42F08u);

    struct rb_record_iter it;
    struct rb_record rec;
    assert_int_equal(rb_record_iter_init_batch(&it, golden, sizeof golden), 0);
    assert_int_equal(rb_record_next(&it, &rec), 1);
    assert_int_equal(rec.offset_delta, 0);
    assert_int_equal(rec.timestamp_delta, 0);
    assert_int_equal(rec.attributes, 0);
    assert_true(kb_eq(rec.key, "k1"));
    assert_true(kb_eq(rec.value, "hello"));
    assert_int_equal(rec.header_count, 1);
    assert_int_equal(rec.size, 18);
    struct rb_header_iter hi;
    kstr_t hk;
    kbytes_t hv;
    rb_header_iter_init(&hi, &rec);
    assert_int_equal(rb_header_next(&hi, &hk, &hv), 1);
    assert_true(kstr_eqc(hk, "h"));
    assert_true(kb_eq(hv, "v"));
    assert_int_equal(rb_header_next(&hi, &hk, &hv), 0);

    assert_int_equal(rb_record_next(&it, &rec), 1);
    assert_int_equal(rec.offset_delta, 1);
    assert_int_equal(rec.timestamp_delta, 5);
    assert_true(kb_eq(rec.key, NULL));
    assert_true(kb_eq(rec.value, "world"));
    assert_int_equal(rec.header_count, 0);
    rb_header_iter_init(&hi, &rec);
    assert_int_equal(rb_header_next(&hi, &hk, &hv), 0);
    assert_int_equal(rb_record_next(&it, &rec), 0);
    assert_int_equal(rb_record_next(&it, &rec), 0);
}

static void test_golden_build(void **state)
{
    (void)state;
    struct buf out = BUF_INIT;
    struct rb_builder b;
    size_t n = 0;
    struct rb_header_kv hdr = {KSTR_LIT("h"), kb("v")};
    rb_builder_begin(&b, &out, 0, GOLDEN_TS, NULL);
    assert_int_equal(rb_builder_add(&b, GOLDEN_TS, kb("k1"), kb("hello"), &hdr, 1), 0);
    assert_int_equal(rb_builder_add(&b, GOLDEN_TS + 5, KBYTES_NULL, kb("world"), NULL, 0), 0);
    assert_int_equal(rb_builder_finish(&b, &n), 0);
    assert_int_equal(n, sizeof golden);
    assert_int_equal(out.len, sizeof golden);
    assert_memory_equal(out.data, golden, sizeof golden);
    buf_free(&out);
}

static void test_golden_validate(void **state)
{
    (void)state;
    struct rb_validate_opts o = vopts();
    struct rb_validate_result r;
    for (int16_t ver = 3; ver <= 12; ver++) {
        assert_int_equal(validate(golden, sizeof golden, ver, &o, &r), 0);
        assert_int_equal(r.batches, 1);
        assert_int_equal(r.records, 2);
        assert_int_equal(r.first_offset_delta, 0);
        assert_int_equal(r.last_offset_delta, 1);
        assert_int_equal(r.max_timestamp, GOLDEN_TS + 5);
        assert_int_equal(r.max_timestamp_offset_delta, 1);
        assert_false(r.max_timestamp_stale);
        assert_int_equal(r.producer_id, -1);
        assert_int_equal(r.producer_epoch, -1);
        assert_int_equal(r.base_sequence, -1);
        assert_false(r.is_transactional);
        assert_int_equal(r.codec, RB_CODEC_NONE);
        assert_int_equal(r.timestamp_type, RB_CREATE_TIME);
        assert_int_equal(r.valid_bytes, sizeof golden);
        assert_int_equal(r.error_record_index, -1);
    }
    /* NULL opts: defaults, no limits. */
    assert_int_equal(validate(golden, sizeof golden, 9, NULL, &r), 0);
    /* Produce v0-v2 carrying magic 2 were accepted by Kafka 3.x. */
    assert_int_equal(validate(golden, sizeof golden, 2, &o, &r), 0);
}

static void test_golden_marker(void **state)
{
    (void)state;
    struct buf out = BUF_INIT;
    size_t n = 0;
    buf_append(&out, "xyz", 3); /* the builder appends after existing bytes */
    assert_int_equal(rb_build_txn_marker(&out, 42, GOLDEN_TS, 1000, 5, 3, RB_CONTROL_COMMIT, 7, &n), 0);
    assert_int_equal(n, sizeof golden_marker);
    assert_int_equal(out.len, 3 + sizeof golden_marker);
    assert_memory_equal(out.data + 3, golden_marker, sizeof golden_marker);

    struct rb_header h;
    assert_int_equal(rb_parse_header(golden_marker, sizeof golden_marker, &h), 0);
    assert_true(rb_is_control(&h));
    assert_true(rb_is_transactional(&h));
    assert_int_equal(h.base_sequence, RB_NO_SEQUENCE);
    assert_true(rb_crc_ok(golden_marker, sizeof golden_marker));

    struct rb_record_iter it;
    struct rb_record rec;
    int16_t type;
    int32_t epoch;
    assert_int_equal(rb_record_iter_init_batch(&it, golden_marker, sizeof golden_marker), 0);
    assert_int_equal(rb_record_next(&it, &rec), 1);
    assert_int_equal(rec.size, 17); /* EndTransactionMarker.CURRENT_END_TXN_SCHEMA_RECORD_SIZE */
    assert_int_equal(rb_parse_control_record(&rec, &type, &epoch), 0);
    assert_int_equal(type, RB_CONTROL_COMMIT);
    assert_int_equal(epoch, 7);
    assert_int_equal(rb_record_next(&it, &rec), 0);

    /* ABORT, and a bad type. */
    buf_reset(&out);
    assert_int_equal(rb_build_txn_marker(&out, 0, GOLDEN_TS, 1, 0, 0, RB_CONTROL_ABORT, -5, &n), 0);
    assert_int_equal(rb_record_iter_init_batch(&it, out.data, out.len), 0);
    assert_int_equal(rb_record_next(&it, &rec), 1);
    assert_int_equal(rb_parse_control_record(&rec, &type, &epoch), 0);
    assert_int_equal(type, RB_CONTROL_ABORT);
    assert_int_equal(epoch, -5);
    size_t len_before = out.len;
    assert_int_equal(rb_build_txn_marker(&out, 0, GOLDEN_TS, 1, 0, 0, RB_CONTROL_LEADER_CHANGE, 0, &n),
                     KERR_INVALID_RECORD);
    assert_int_equal(out.len, len_before);
    buf_free(&out);
}

static void test_control_key_value(void **state)
{
    (void)state;
    uint8_t k[RB_CONTROL_KEY_SIZE], v[RB_TXN_MARKER_VALUE_SIZE];
    int16_t type = 99;
    int32_t epoch = 0;
    rb_control_key_encode(k, RB_CONTROL_SNAPSHOT_HEADER);
    assert_int_equal(rb_control_key_parse((kbytes_t){k, 4}, &type), 0);
    assert_int_equal(type, RB_CONTROL_SNAPSHOT_HEADER);
    assert_int_equal(rb_control_key_parse((kbytes_t){k, 3}, &type), KERR_INVALID_RECORD);
    assert_int_equal(rb_control_key_parse(KBYTES_NULL, &type), KERR_INVALID_RECORD);
    k[0] = 0x80; /* negative version */
    assert_int_equal(rb_control_key_parse((kbytes_t){k, 4}, &type), KERR_INVALID_RECORD);
    k[0] = 0;
    k[1] = 7; /* a newer version is read as v0 */
    assert_int_equal(rb_control_key_parse((kbytes_t){k, 4}, &type), 0);

    rb_txn_marker_value_encode(v, 123456);
    assert_int_equal(rb_txn_marker_value_parse((kbytes_t){v, 6}, &epoch), 0);
    assert_int_equal(epoch, 123456);
    assert_int_equal(rb_txn_marker_value_parse((kbytes_t){v, 5}, &epoch), KERR_INVALID_RECORD);
    v[0] = 0xff;
    assert_int_equal(rb_txn_marker_value_parse((kbytes_t){v, 6}, &epoch), KERR_INVALID_RECORD);

    /* A control record whose value is too short. */
    struct rb_record rec = {0};
    rb_control_key_encode(k, RB_CONTROL_ABORT);
    rec.key = (kbytes_t){k, 4};
    rec.value = (kbytes_t){v, 2};
    assert_int_equal(rb_parse_control_record(&rec, &type, &epoch), KERR_INVALID_RECORD);
    /* Non-marker control types carry their own value schema. */
    rb_control_key_encode(k, RB_CONTROL_LEADER_CHANGE);
    assert_int_equal(rb_parse_control_record(&rec, &type, &epoch), 0);
    assert_int_equal(epoch, -1);
}

/* ---- round trips ---- */

static void test_round_trip_random(void **state)
{
    (void)state;
    for (int iter = 0; iter < 200; iter++) {
        struct buf out = BUF_INIT;
        struct rb_builder b;
        int n = 1 + (int)(rnd() % 40);
        int64_t base_ts = (int64_t)(rnd() % 4000000000000ull) - 1000;
        struct rb_batch_opts bo = RB_BATCH_OPTS_INIT;
        if (iter & 1) {
            bo.producer_id = (int64_t)(rnd() >> 1);
            bo.producer_epoch = (int16_t)(rnd() & 0x7fff);
            bo.base_sequence = (int32_t)(rnd() & 0x7fffffff);
            bo.transactional = iter & 2;
        }
        static uint8_t blob[70000];
        for (size_t i = 0; i < sizeof blob; i++)
            blob[i] = (uint8_t)(i * 31 + 7);
        struct {
            int64_t ts;
            kbytes_t k, v;
            int nh;
            struct rb_header_kv h[4];
        } recs[40];
        int64_t max_ts = -1;
        rb_builder_begin(&b, &out, 0, base_ts, &bo);
        for (int i = 0; i < n; i++) {
            recs[i].ts = base_ts + (int64_t)(rnd() % 2000000) - 1000000;
            int kl = (int)(rnd() % 4) == 0 ? -1 : (int)(rnd() % 300);
            int vl = (int)(rnd() % 5) == 0 ? -1 : (int)(rnd() % (i == 3 ? 70000 : 200));
            recs[i].k = kl < 0 ? KBYTES_NULL : (kbytes_t){blob + rnd() % 1000, kl};
            recs[i].v = vl < 0 ? KBYTES_NULL : (kbytes_t){blob, vl};
            recs[i].nh = (int)(rnd() % 5);
            for (int j = 0; j < recs[i].nh; j++) {
                recs[i].h[j].key = (kstr_t){(const char *)blob + j, (int32_t)(rnd() % 20)};
                recs[i].h[j].value = rnd() % 3 == 0 ? KBYTES_NULL : (kbytes_t){blob + 100, (int32_t)(rnd() % 200)};
            }
            if (recs[i].ts > max_ts)
                max_ts = recs[i].ts;
            assert_int_equal(rb_builder_add(&b, recs[i].ts, recs[i].k, recs[i].v, recs[i].h, recs[i].nh), 0);
        }
        size_t blen = 0;
        assert_int_equal(rb_builder_finish(&b, &blen), 0);
        assert_int_equal(blen, out.len);

        struct rb_header h;
        assert_int_equal(rb_parse_header(out.data, out.len, &h), 0);
        assert_int_equal(rb_batch_size(&h), out.len);
        assert_int_equal(h.records_count, n);
        assert_int_equal(h.last_offset_delta, n - 1);
        assert_int_equal(h.max_timestamp, max_ts);
        assert_int_equal(h.base_timestamp, base_ts);
        assert_int_equal(h.producer_id, bo.producer_id);
        assert_int_equal(h.producer_epoch, bo.producer_epoch);
        assert_int_equal(h.base_sequence, bo.base_sequence);
        assert_int_equal(rb_is_transactional(&h), bo.transactional);
        assert_true(rb_crc_ok(out.data, out.len));

        struct rb_record_iter it;
        struct rb_record rec;
        assert_int_equal(rb_record_iter_init_batch(&it, out.data, out.len), 0);
        for (int i = 0; i < n; i++) {
            assert_int_equal(rb_record_next(&it, &rec), 1);
            assert_int_equal(rec.offset_delta, i);
            assert_int_equal(base_ts + rec.timestamp_delta, recs[i].ts);
            assert_int_equal(rec.key.len, recs[i].k.len);
            if (rec.key.len > 0)
                assert_memory_equal(rec.key.p, recs[i].k.p, (size_t)rec.key.len);
            assert_int_equal(rec.value.len, recs[i].v.len);
            if (rec.value.len > 0)
                assert_memory_equal(rec.value.p, recs[i].v.p, (size_t)rec.value.len);
            assert_int_equal(rec.header_count, recs[i].nh);
            struct rb_header_iter hi;
            kstr_t hk;
            kbytes_t hv;
            rb_header_iter_init(&hi, &rec);
            for (int j = 0; j < recs[i].nh; j++) {
                assert_int_equal(rb_header_next(&hi, &hk, &hv), 1);
                assert_true(kstr_eq(hk, recs[i].h[j].key));
                assert_int_equal(hv.len, recs[i].h[j].value.len);
                if (hv.len > 0)
                    assert_memory_equal(hv.p, recs[i].h[j].value.p, (size_t)hv.len);
            }
            assert_int_equal(rb_header_next(&hi, &hk, &hv), 0);
        }
        assert_int_equal(rb_record_next(&it, &rec), 0);

        struct rb_validate_result r;
        struct rb_validate_opts o = vopts();
        o.max_message_bytes = 0;
        assert_int_equal(validate(out.data, out.len, 9, &o, &r), 0);
        assert_int_equal(r.records, n);
        assert_int_equal(r.max_timestamp, max_ts);
        assert_false(r.max_timestamp_stale);
        assert_int_equal(r.producer_id, bo.producer_id);
        assert_int_equal(r.is_transactional, bo.transactional);
        buf_free(&out);
    }
}

static void test_builder_errors(void **state)
{
    (void)state;
    struct buf out = BUF_INIT;
    struct rb_builder b;
    size_t n = 1234;
    buf_append(&out, "prefix", 6);
    rb_builder_begin(&b, &out, 0, 0, NULL);
    assert_int_equal(rb_builder_finish(&b, &n), KERR_INVALID_RECORD);
    assert_int_equal(out.len, 6);

    rb_builder_begin(&b, &out, 0, 0, NULL);
    struct rb_header_kv bad = {KSTR_NULL, kb("v")};
    size_t before = out.len;
    assert_int_equal(rb_builder_add(&b, 0, kb("k"), kb("v"), &bad, 1), KERR_INVALID_RECORD);
    assert_int_equal(out.len, before);
    assert_int_equal(rb_builder_add(&b, 0, kb("k"), kb("v"), NULL, -1), KERR_INVALID_RECORD);
    assert_int_equal(rb_builder_add(&b, 0, (kbytes_t){NULL, -2}, kb("v"), NULL, 0), KERR_INVALID_RECORD);
    assert_int_equal(rb_builder_add(&b, 0, kb("k"), kb("v"), NULL, 0), 0);
    /* Extreme timestamps wrap like Java longs and come back unchanged. */
    assert_int_equal(rb_builder_add(&b, INT64_MIN, kb(""), KBYTES_NULL, NULL, 0), 0);
    assert_int_equal(rb_builder_add(&b, INT64_MAX, kb(""), KBYTES_NULL, NULL, 0), 0);
    assert_int_equal(rb_builder_finish(&b, &n), 0);
    assert_int_equal(n, out.len - 6);
    assert_memory_equal(out.data, "prefix", 6);
    struct rb_record_iter it;
    struct rb_record rec;
    assert_int_equal(rb_record_iter_init_batch(&it, out.data + 6, n), 0);
    assert_int_equal(rb_record_next(&it, &rec), 1);
    assert_true(kb_eq(rec.key, "k"));
    assert_int_equal(rb_record_next(&it, &rec), 1);
    assert_int_equal(rec.timestamp_delta, INT64_MIN);
    assert_int_equal(rec.key.len, 0);
    assert_int_equal(rec.value.len, -1);
    assert_int_equal(rb_record_next(&it, &rec), 1);
    assert_int_equal(rec.timestamp_delta, INT64_MAX);
    assert_int_equal(rb_record_next(&it, &rec), 0);

    /* Abort leaves only what was there. */
    rb_builder_begin(&b, &out, 0, 0, NULL);
    assert_int_equal(rb_builder_add(&b, 0, kb("k"), kb("v"), NULL, 0), 0);
    rb_builder_abort(&b);
    assert_int_equal(out.len, 6 + n);
    buf_free(&out);
}

static void test_builder_compressed(void **state)
{
    (void)state;
    struct buf out = BUF_INIT;
    struct rb_builder b;
    size_t n = 0;
    struct rb_batch_opts bo = RB_BATCH_OPTS_INIT;
    bo.producer_id = 77;
    bo.producer_epoch = 1;
    bo.base_sequence = 10;
    rb_builder_begin(&b, &out, 0, GOLDEN_TS, &bo);
    for (int i = 0; i < 5; i++)
        assert_int_equal(rb_builder_add(&b, GOLDEN_TS + i, kb("key"), kb("value"), NULL, 0), 0);
    assert_int_equal(rb_builder_finish_compressed(&b, RB_CODEC_GZIP, xor_codec, NULL, &n), 0);
    assert_int_equal(n, out.len);
    struct rb_header h;
    assert_int_equal(rb_parse_header(out.data, out.len, &h), 0);
    assert_int_equal(rb_codec(&h), RB_CODEC_GZIP);
    assert_true(rb_crc_ok(out.data, out.len));
    struct rb_record_iter it;
    assert_int_equal(rb_record_iter_init_batch(&it, out.data, out.len), KERR_UNSUPPORTED_COMPRESSION_TYPE);

    struct rb_validate_opts o = vopts();
    struct rb_validate_result r;
    assert_int_equal(validate(out.data, out.len, 9, &o, &r), KERR_UNSUPPORTED_COMPRESSION_TYPE);
    assert_int_equal(r.codec, RB_CODEC_GZIP);
    o.decompress = xor_codec;
    assert_int_equal(validate(out.data, out.len, 9, &o, &r), 0);
    assert_int_equal(r.records, 5);
    assert_int_equal(r.producer_id, 77);
    assert_int_equal(r.base_sequence, 10);
    assert_int_equal(r.max_timestamp, GOLDEN_TS + 4);
    assert_int_equal(r.max_timestamp_offset_delta, 4);
    int fail = KERR_CORRUPT_MESSAGE;
    o.decompress_ctx = &fail;
    assert_int_equal(validate(out.data, out.len, 9, &o, &r), KERR_CORRUPT_MESSAGE);

    /* A codec failure or unknown codec drops the batch. */
    buf_reset(&out);
    rb_builder_begin(&b, &out, 0, GOLDEN_TS, NULL);
    assert_int_equal(rb_builder_add(&b, GOLDEN_TS, kb("k"), kb("v"), NULL, 0), 0);
    assert_int_equal(rb_builder_finish_compressed(&b, RB_CODEC_ZSTD, xor_codec, NULL, &n),
                     KERR_UNSUPPORTED_COMPRESSION_TYPE);
    assert_int_equal(out.len, 0);
    rb_builder_begin(&b, &out, 0, GOLDEN_TS, NULL);
    assert_int_equal(rb_builder_add(&b, GOLDEN_TS, kb("k"), kb("v"), NULL, 0), 0);
    assert_int_equal(rb_builder_finish_compressed(&b, 9, xor_codec, NULL, &n), KERR_UNSUPPORTED_COMPRESSION_TYPE);
    assert_int_equal(out.len, 0);
    buf_free(&out);
}

/* ---- stamping ---- */

static void test_stamping(void **state)
{
    (void)state;
    uint8_t *b = dup_exact(golden, sizeof golden);
    rb_set_base_offset(b, 0x0102030405060708LL);
    rb_set_partition_leader_epoch(b, 17);
    assert_true(rb_crc_ok(b, sizeof golden));
    struct rb_header h;
    assert_int_equal(rb_parse_header(b, sizeof golden, &h), 0);
    assert_int_equal(h.base_offset, 0x0102030405060708LL);
    assert_int_equal(h.partition_leader_epoch, 17);
    assert_int_equal(rb_last_offset(&h), 0x0102030405060709LL);
    assert_memory_equal(b + 16, golden + 16, sizeof golden - 16);

    /* Unchanged: not a byte written. */
    assert_int_equal(rb_set_max_timestamp_and_type(b, sizeof golden, RB_CREATE_TIME, GOLDEN_TS + 5), 0);
    assert_memory_equal(b + 16, golden + 16, sizeof golden - 16);

    assert_int_equal(rb_set_max_timestamp_and_type(b, sizeof golden, RB_LOG_APPEND_TIME, 1800000000000LL), 0);
    assert_true(rb_crc_ok(b, sizeof golden));
    assert_int_equal(rb_parse_header(b, sizeof golden, &h), 0);
    assert_int_equal(rb_timestamp_type(&h), RB_LOG_APPEND_TIME);
    assert_int_equal(h.max_timestamp, 1800000000000LL);
    assert_int_equal(h.attributes, RB_ATTR_TIMESTAMP_TYPE);
    assert_int_equal(rb_set_max_timestamp_and_type(b, sizeof golden, RB_CREATE_TIME, 5), 0);
    assert_true(rb_crc_ok(b, sizeof golden));
    assert_int_equal(rb_parse_header(b, sizeof golden, &h), 0);
    assert_int_equal(h.attributes, 0);

    /* Length checks. */
    assert_false(rb_crc_ok(b, sizeof golden - 1));
    assert_false(rb_crc_ok(b, 20));
    assert_int_equal(rb_recompute_crc(b, sizeof golden + 1), KERR_CORRUPT_MESSAGE);
    assert_int_equal(rb_set_max_timestamp_and_type(b, 60, RB_CREATE_TIME, 5), KERR_CORRUPT_MESSAGE);
    b[30] ^= 1;
    assert_false(rb_crc_ok(b, sizeof golden));
    assert_int_equal(rb_recompute_crc(b, sizeof golden), 0);
    assert_true(rb_crc_ok(b, sizeof golden));
    free(b);
}

/* ---- header and framing ---- */

static void test_parse_header_errors(void **state)
{
    (void)state;
    struct rb_header h;
    uint8_t b[RB_HEADER_SIZE];
    memcpy(b, golden, sizeof b);
    assert_int_equal(rb_parse_header(b, sizeof b, &h), 0); /* records need not be present */
    assert_int_equal(rb_parse_header(b, 60, &h), KERR_CORRUPT_MESSAGE);
    assert_int_equal(h.magic, 2);
    assert_int_equal(rb_parse_header(b, 16, &h), KERR_CORRUPT_MESSAGE);
    b[RB_OFF_MAGIC] = 1;
    assert_int_equal(rb_parse_header(b, sizeof b, &h), KERR_CORRUPT_MESSAGE);
    assert_int_equal(h.magic, 1);
    b[RB_OFF_MAGIC] = 2;
    be32_write(b + RB_OFF_BATCH_LENGTH, 48);
    assert_int_equal(rb_parse_header(b, sizeof b, &h), KERR_CORRUPT_MESSAGE);
    be32_write(b + RB_OFF_BATCH_LENGTH, 0x80000000u);
    assert_int_equal(rb_parse_header(b, sizeof b, &h), KERR_CORRUPT_MESSAGE);
}

static void test_frame(void **state)
{
    (void)state;
    size_t size;
    uint8_t two[2 * sizeof golden];
    memcpy(two, golden, sizeof golden);
    memcpy(two + sizeof golden, golden, sizeof golden);
    assert_int_equal(rb_frame(two, sizeof two, &size), 0);
    assert_int_equal(size, sizeof golden);
    assert_int_equal(rb_frame(two + size, sizeof two - size, &size), 0);
    assert_int_equal(rb_frame(golden, 0, &size), RB_FRAME_TRUNCATED);
    assert_int_equal(size, 0);
    assert_int_equal(rb_frame(golden, 11, &size), RB_FRAME_TRUNCATED);
    assert_int_equal(rb_frame(golden, 12, &size), RB_FRAME_TRUNCATED);
    assert_int_equal(size, sizeof golden);
    assert_int_equal(rb_frame(golden, sizeof golden - 1, &size), RB_FRAME_TRUNCATED);
    assert_int_equal(size, sizeof golden);
    uint8_t b[sizeof golden];
    memcpy(b, golden, sizeof b);
    be32_write(b + 8, 13);
    assert_int_equal(rb_frame(b, sizeof b, &size), KERR_CORRUPT_MESSAGE);
    be32_write(b + 8, 0xffffffffu);
    assert_int_equal(rb_frame(b, sizeof b, &size), KERR_CORRUPT_MESSAGE);
    be32_write(b + 8, 79);
    b[16] = 3;
    assert_int_equal(rb_frame(b, sizeof b, &size), KERR_CORRUPT_MESSAGE);
    b[16] = 0x80;
    assert_int_equal(rb_frame(b, sizeof b, &size), KERR_CORRUPT_MESSAGE);
    b[16] = 0; /* old magics frame; the caller decides */
    assert_int_equal(rb_frame(b, sizeof b, &size), 0);
}

/* ---- validation errors, one by one ---- */

static void expect(const struct buf *b, int16_t ver, const struct rb_validate_opts *o, int code)
{
    struct rb_validate_result r;
    int rc = validate(b->data, b->len, ver, o, &r);
    if (rc != code)
        fail_msg("expected %s, got %s (%s)", kerr_name((int16_t)code), kerr_name((int16_t)rc), r.reason);
    if (code)
        assert_true(r.reason[0] != 0);
    if (getenv("RB_TEST_VERBOSE")) /* shows which check fired */
        print_message("%s: %s\n", kerr_name((int16_t)rc), r.reason);
}

static void test_validate_framing(void **state)
{
    (void)state;
    struct rb_validate_opts o = vopts();
    struct rb_validate_result r;
    struct buf b = BUF_INIT;

    /* No data. */
    assert_int_equal(rb_validate_produce(NULL, 0, 3, &o, &r), KERR_INVALID_RECORD);
    assert_int_equal(rb_validate_produce(NULL, 0, 12, &o, &r), KERR_INVALID_RECORD);
    assert_int_equal(rb_validate_produce(NULL, 0, 2, &o, &r), 0); /* Kafka 3.x: nothing to append */
    assert_int_equal(r.batches, 0);

    /* Two batches, or one and stray bytes. */
    buf_append(&b, golden, sizeof golden);
    buf_append(&b, golden, sizeof golden);
    expect(&b, 3, &o, KERR_INVALID_RECORD);
    expect(&b, 9, &o, KERR_INVALID_RECORD);
    expect(&b, 2, &o, KERR_INVALID_RECORD);
    b.len = sizeof golden + 5;
    expect(&b, 9, &o, KERR_INVALID_RECORD);
    b.len = sizeof golden + 20;
    b.data[sizeof golden + 16] = 9; /* second header with a bad magic */
    expect(&b, 9, &o, KERR_CORRUPT_MESSAGE);

    /* Lengths and magics. */
    buf_reset(&b);
    buf_append(&b, golden, sizeof golden);
    be32_write(b.data + 8, 13);
    expect(&b, 9, &o, KERR_CORRUPT_MESSAGE);
    be32_write(b.data + 8, 0xfffffff0u);
    expect(&b, 9, &o, KERR_CORRUPT_MESSAGE);
    be32_write(b.data + 8, 30); /* frames as 42 bytes: too short for v2 */
    b.len = 42;
    expect(&b, 9, &o, KERR_CORRUPT_MESSAGE);
    b.len = sizeof golden;
    be32_write(b.data + 8, 80); /* claims one byte more than present */
    expect(&b, 9, &o, KERR_INVALID_RECORD);
    be32_write(b.data + 8, 78); /* one byte less: a stray byte follows */
    expect(&b, 9, &o, KERR_INVALID_RECORD);
    b.len = 78 + 12; /* and cut to it: the CRC no longer matches */
    expect(&b, 9, &o, KERR_CORRUPT_MESSAGE);

    buf_reset(&b);
    buf_append(&b, golden, sizeof golden);
    b.data[16] = 3;
    expect(&b, 9, &o, KERR_CORRUPT_MESSAGE);
    b.data[16] = 0xff;
    expect(&b, 9, &o, KERR_CORRUPT_MESSAGE);
    buf_free(&b);
}

static void test_validate_magic(void **state)
{
    (void)state;
    struct rb_validate_opts o = vopts();
    /* A v1 message set (offset, size, crc, magic 1, attributes, timestamp,
     * key null, value "x"): framed, then refused by magic. */
    uint8_t v1[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 23, 0xde, 0xad, 0xbe, 0xef, 1, 0,
                    0, 0, 1, 0x8b, 0xcf, 0xe5, 0x68, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 'x'};
    struct buf b = BUF_INIT;
    buf_append(&b, v1, sizeof v1);
    for (int16_t ver = 3; ver <= 12; ver++)
        expect(&b, ver, &o, KERR_INVALID_RECORD);
    for (int16_t ver = 0; ver <= 2; ver++)
        expect(&b, ver, &o, KERR_UNSUPPORTED_VERSION);
    b.data[16] = 0;
    expect(&b, 3, &o, KERR_INVALID_RECORD);
    expect(&b, 0, &o, KERR_UNSUPPORTED_VERSION);
    buf_free(&b);
}

static void test_validate_batch_fields(void **state)
{
    (void)state;
    struct rb_validate_opts o = vopts();
    struct rb_validate_result r;
    struct buf b = BUF_INIT;

    /* baseOffset must be 0 from a client (UnifiedLog.analyzeAndValidateRecords). */
    buf_append(&b, golden, sizeof golden);
    rb_set_base_offset(b.data, 5);
    expect(&b, 9, &o, KERR_INVALID_RECORD);

    /* max.message.bytes compares the size with the log overhead included. */
    buf_reset(&b);
    buf_append(&b, golden, sizeof golden);
    o.max_message_bytes = (int32_t)sizeof golden;
    expect(&b, 9, &o, 0);
    o.max_message_bytes = (int32_t)sizeof golden - 1;
    expect(&b, 9, &o, KERR_MESSAGE_TOO_LARGE);
    o.max_message_bytes = 79; /* == batchLength: still too large */
    expect(&b, 9, &o, KERR_MESSAGE_TOO_LARGE);
    o = vopts();

    /* CRC. */
    b.data[sizeof golden - 1] ^= 0x40;
    expect(&b, 9, &o, KERR_CORRUPT_MESSAGE);
    b.data[sizeof golden - 1] ^= 0x40;
    b.data[RB_OFF_CRC] ^= 1;
    expect(&b, 9, &o, KERR_CORRUPT_MESSAGE);
    b.data[RB_OFF_CRC] ^= 1;
    expect(&b, 9, &o, 0);

    /* Codecs. */
    be16_write(b.data + RB_OFF_ATTRIBUTES, RB_CODEC_ZSTD);
    rb_recompute_crc(b.data, b.len);
    for (int16_t ver = 3; ver < 7; ver++)
        expect(&b, ver, &o, KERR_UNSUPPORTED_COMPRESSION_TYPE);
    expect(&b, 7, &o, KERR_UNSUPPORTED_COMPRESSION_TYPE); /* no decompressor */
    o.decompress = xor_codec;
    expect(&b, 7, &o, KERR_UNSUPPORTED_COMPRESSION_TYPE); /* the codec refuses zstd */
    be16_write(b.data + RB_OFF_ATTRIBUTES, 5);
    rb_recompute_crc(b.data, b.len);
    expect(&b, 9, &o, KERR_UNSUPPORTED_COMPRESSION_TYPE);
    be16_write(b.data + RB_OFF_ATTRIBUTES, 7);
    rb_recompute_crc(b.data, b.len);
    expect(&b, 9, &o, KERR_UNSUPPORTED_COMPRESSION_TYPE);
    be16_write(b.data + RB_OFF_ATTRIBUTES, RB_CODEC_LZ4);
    rb_recompute_crc(b.data, b.len);
    expect(&b, 9, &o, KERR_INVALID_RECORD); /* "decompresses" to garbage */
    for (size_t i = RB_OFF_RECORDS; i < b.len; i++)
        b.data[i] ^= 0x5A;
    rb_recompute_crc(b.data, b.len);
    expect(&b, 9, &o, 0);
    assert_int_equal(validate(b.data, b.len, 9, &o, &r), 0);
    assert_int_equal(r.codec, RB_CODEC_LZ4);
    assert_int_equal(r.records, 2);
    o = vopts();

    /* Offsets and counts (LogValidator.validateBatch). */
    struct hdr h = plain_hdr(3);
    struct buf recs = BUF_INIT;
    put_rec(&recs, 0, 0, "a", "1");
    put_rec(&recs, 1, 1, "b", "2");
    put_rec(&recs, 2, 2, "c", "3");
    mk_batch(&b, &h, &recs);
    expect(&b, 9, &o, 0);
    h.lod = 1;
    mk_batch(&b, &h, &recs);
    expect(&b, 9, &o, KERR_INVALID_RECORD);
    h.lod = -1;
    mk_batch(&b, &h, &recs);
    expect(&b, 9, &o, KERR_INVALID_RECORD);
    h.lod = INT32_MAX;
    mk_batch(&b, &h, &recs);
    expect(&b, 9, &o, KERR_INVALID_RECORD);
    h = plain_hdr(3);
    h.count = 0;
    h.lod = -1;
    mk_batch(&b, &h, &recs);
    expect(&b, 9, &o, KERR_INVALID_RECORD);
    h.lod = 2; /* offsets fine, count not */
    mk_batch(&b, &h, &recs);
    expect(&b, 9, &o, KERR_INVALID_RECORD);
    h.count = -3;
    mk_batch(&b, &h, &recs);
    expect(&b, 9, &o, KERR_INVALID_RECORD);
    /* Count larger than the records present. */
    h = plain_hdr(4);
    mk_batch(&b, &h, &recs);
    expect(&b, 9, &o, KERR_INVALID_RECORD);
    /* Smaller: records remain. */
    h = plain_hdr(2);
    mk_batch(&b, &h, &recs);
    expect(&b, 9, &o, KERR_INVALID_RECORD);

    /* Control batches only come from the coordinator. */
    h = plain_hdr(3);
    h.attrs = RB_ATTR_CONTROL;
    mk_batch(&b, &h, &recs);
    expect(&b, 9, &o, KERR_INVALID_RECORD);
    buf_reset(&b);
    assert_int_equal(rb_build_txn_marker(&b, 0, GOLDEN_TS, 1, 0, 0, RB_CONTROL_COMMIT, 0, NULL), 0);
    expect(&b, 9, &o, KERR_INVALID_RECORD);

    /* A producer id needs a sequence. */
    h = plain_hdr(3);
    h.pid = 1000;
    h.epoch = 0;
    mk_batch(&b, &h, &recs);
    expect(&b, 9, &o, KERR_INVALID_RECORD);
    h.seq = 0;
    mk_batch(&b, &h, &recs);
    expect(&b, 9, &o, 0);
    h.attrs = RB_ATTR_TRANSACTIONAL;
    mk_batch(&b, &h, &recs);
    assert_int_equal(validate(b.data, b.len, 9, &o, &r), 0);
    assert_true(r.is_transactional);
    assert_int_equal(r.producer_id, 1000);
    assert_int_equal(r.producer_epoch, 0);
    assert_int_equal(r.base_sequence, 0);
    buf_free(&recs);
    buf_free(&b);
}

static void test_validate_records(void **state)
{
    (void)state;
    struct rb_validate_opts o = vopts();
    struct rb_validate_result r;
    struct buf b = BUF_INIT, recs = BUF_INIT;
    struct hdr h = plain_hdr(2);

    /* Offset deltas must be 0..n-1. */
    put_rec(&recs, 0, 0, "a", "1");
    put_rec(&recs, 1, 5, "b", "2");
    mk_batch(&b, &h, &recs);
    assert_int_equal(validate(b.data, b.len, 9, &o, &r), KERR_INVALID_RECORD);
    assert_int_equal(r.error_record_index, -1); /* batch-level, as Kafka's iterator errors */
    buf_reset(&recs);
    put_rec(&recs, 0, 1, "a", "1");
    put_rec(&recs, 1, 0, "b", "2");
    mk_batch(&b, &h, &recs);
    expect(&b, 9, &o, KERR_INVALID_RECORD);

    /* Declared record length disagrees with the fields: one byte of
     * padding inside the record, and a record one byte short. */
    buf_reset(&recs);
    put_rec(&recs, 0, 0, "a", "1");
    size_t r1 = recs.len;
    put_rec(&recs, 1, 1, "b", "2");
    recs.data[r1] += 2; /* zigzag: length + 1 */
    buf_put_u8(&recs, 0);
    mk_batch(&b, &h, &recs);
    expect(&b, 9, &o, KERR_INVALID_RECORD);
    recs.data[r1] -= 4; /* length - 1: the headers count falls outside */
    recs.len--;
    mk_batch(&b, &h, &recs);
    expect(&b, 9, &o, KERR_INVALID_RECORD);

    /* Key length past the record, negative lengths, bad header counts. */
    static const uint8_t bad_recs[][12] = {
        {0x10, 0, 0, 0, 0x20, 'a', 'b', 0x02, 'x', 0},    /* key 16 bytes, record 8 */
        {0x10, 0, 0, 0, 0x03, 0x02, 'x', 0, 0},           /* key length -2 */
        {0x0e, 0, 0, 0, 0x01, 0x02, 'x', 0x01},           /* header count -1 */
        {0x0e, 0, 0, 0, 0x01, 0x02, 'x', 0x7e},           /* header count 63 */
        {0x12, 0, 0, 0, 0x01, 0x02, 'x', 0x02, 0x01, 0x00}, /* header key length -1 */
        {0x12, 0, 0, 0, 0x01, 0x02, 'x', 0x02, 0x00, 0x05}, /* header value length -3 */
        {0x03},                                           /* record length -2 */
        {0xff, 0xff, 0xff, 0xff, 0xff, 0x01},             /* overlong length varint */
        {0x04, 0, 0x80},                                  /* timestamp varint runs past the record */
    };
    static const size_t bad_len[] = {10, 9, 8, 8, 10, 10, 1, 6, 3};
    h = plain_hdr(1);
    for (size_t i = 0; i < sizeof bad_len / sizeof bad_len[0]; i++) {
        buf_reset(&recs);
        buf_append(&recs, bad_recs[i], bad_len[i]);
        mk_batch(&b, &h, &recs);
        struct rb_validate_result rr;
        int rc = validate(b.data, b.len, 9, &o, &rr);
        if (rc != KERR_INVALID_RECORD)
            fail_msg("bad record %zu: got %s (%s)", i, kerr_name((int16_t)rc), rr.reason);
    }
    /* A header with a null value and an empty key is fine. */
    buf_reset(&recs);
    static const uint8_t ok_rec[] = {0x12, 0, 0, 0, 0x01, 0x02, 'x', 0x02, 0x00, 0x01};
    buf_append(&recs, ok_rec, sizeof ok_rec);
    mk_batch(&b, &h, &recs);
    expect(&b, 9, &o, 0);
    struct rb_record_iter it;
    struct rb_record rec;
    struct rb_header_iter hi;
    kstr_t hk;
    kbytes_t hv;
    assert_int_equal(rb_record_iter_init_batch(&it, b.data, b.len), 0);
    assert_int_equal(rb_record_next(&it, &rec), 1);
    rb_header_iter_init(&hi, &rec);
    assert_int_equal(rb_header_next(&hi, &hk, &hv), 1);
    assert_int_equal(hk.len, 0);
    assert_int_equal(hv.len, -1);
    assert_int_equal(rb_header_next(&hi, &hk, &hv), 0);
    assert_int_equal(rb_record_next(&it, &rec), 0);

    buf_free(&recs);
    buf_free(&b);
}

static void test_validate_keys_and_timestamps(void **state)
{
    (void)state;
    struct rb_validate_opts o = vopts();
    struct rb_validate_result r;
    struct buf b = BUF_INIT;
    buf_append(&b, golden, sizeof golden);

    /* Compacted topics need keys; golden's record 1 has none. */
    o.compacted = true;
    assert_int_equal(validate(b.data, b.len, 9, &o, &r), KERR_INVALID_RECORD);
    assert_int_equal(r.error_record_index, 1);
    o.compacted = false;

    /* now - ts > before.max: too old; ts - now > after.max: too new. */
    o.now_ms = GOLDEN_TS + 1000;
    o.timestamp_before_max_ms = 1000;
    expect(&b, 9, &o, 0); /* record 0 is exactly at the edge */
    o.timestamp_before_max_ms = 999;
    assert_int_equal(validate(b.data, b.len, 9, &o, &r), KERR_INVALID_TIMESTAMP);
    assert_int_equal(r.error_record_index, 0);
    o = vopts();
    o.now_ms = GOLDEN_TS;
    o.timestamp_after_max_ms = 5;
    expect(&b, 9, &o, 0);
    o.timestamp_after_max_ms = 4;
    assert_int_equal(validate(b.data, b.len, 9, &o, &r), KERR_INVALID_TIMESTAMP);
    assert_int_equal(r.error_record_index, 1);
    /* A key error and a timestamp error: INVALID_TIMESTAMP wins
     * (LogValidator.processRecordErrors). */
    o = vopts();
    o.compacted = true;
    o.now_ms = GOLDEN_TS + 10;
    o.timestamp_before_max_ms = 5; /* record 0 too old, record 1 without key */
    assert_int_equal(validate(b.data, b.len, 9, &o, &r), KERR_INVALID_TIMESTAMP);
    assert_int_equal(r.error_record_index, 0);
    /* Bounds are not applied on a LogAppendTime topic. */
    o = vopts();
    o.timestamp_type = RB_LOG_APPEND_TIME;
    o.timestamp_before_max_ms = 0;
    o.timestamp_after_max_ms = 0;
    o.now_ms = 42;
    assert_int_equal(validate(b.data, b.len, 9, &o, &r), 0);
    assert_int_equal(r.max_timestamp, 42);
    assert_int_equal(r.max_timestamp_offset_delta, 1);
    assert_true(r.max_timestamp_stale);
    /* ...and stamping as Kafka does leaves a batch that reads back so. */
    assert_int_equal(rb_set_max_timestamp_and_type(b.data, b.len, RB_LOG_APPEND_TIME, r.max_timestamp), 0);
    assert_true(rb_crc_ok(b.data, b.len));

    /* Now b is a LogAppendTime batch: a producer may not send that. */
    assert_int_equal(validate(b.data, b.len, 9, &o, &r), KERR_INVALID_TIMESTAMP);
    o = vopts();
    o.now_ms = 42;
    /* On a CreateTime topic Kafka checks the records' (== maxTimestamp)
     * time first and only complains about the type for -1. */
    expect(&b, 9, &o, 0);
    assert_int_equal(rb_set_max_timestamp_and_type(b.data, b.len, RB_LOG_APPEND_TIME, -1), 0);
    expect(&b, 9, &o, KERR_INVALID_TIMESTAMP);

    /* Records without timestamps (-1) skip the bounds. */
    struct buf recs = BUF_INIT;
    struct hdr h = plain_hdr(2);
    h.base_ts = -1;
    h.max_ts = -1;
    put_rec(&recs, 0, 0, "a", "1");
    put_rec(&recs, 0, 1, "b", "2");
    mk_batch(&b, &h, &recs);
    o = vopts();
    o.timestamp_before_max_ms = 0;
    o.timestamp_after_max_ms = 0;
    assert_int_equal(validate(b.data, b.len, 9, &o, &r), 0);
    assert_int_equal(r.max_timestamp, -1);
    assert_false(r.max_timestamp_stale);

    /* A wrong maxTimestamp is reported stale, as Kafka would rewrite it. */
    h = plain_hdr(2);
    h.max_ts = GOLDEN_TS + 100;
    buf_reset(&recs);
    put_rec(&recs, 3, 0, "a", "1");
    put_rec(&recs, 1, 1, "b", "2");
    mk_batch(&b, &h, &recs);
    o = vopts();
    assert_int_equal(validate(b.data, b.len, 9, &o, &r), 0);
    assert_int_equal(r.max_timestamp, GOLDEN_TS + 3);
    assert_int_equal(r.max_timestamp_offset_delta, 0);
    assert_true(r.max_timestamp_stale);

    /* Hostile timestamps wrap instead of overflowing. */
    h.base_ts = INT64_MAX;
    buf_reset(&recs);
    put_rec(&recs, INT64_MAX, 0, "a", "1");
    put_rec(&recs, INT64_MIN, 1, "b", "2");
    mk_batch(&b, &h, &recs);
    o.timestamp_before_max_ms = 1000;
    o.timestamp_after_max_ms = 1000;
    expect(&b, 9, &o, KERR_INVALID_TIMESTAMP);
    buf_free(&recs);
    buf_free(&b);
}

/* samsa.record.validation=batch: the header and the CRC are checked, the
 * records are not read (nor decompressed), unless the topic is
 * compacted. */
static void test_validate_header_only(void **state)
{
    (void)state;
    struct rb_validate_opts o = vopts();
    struct rb_validate_result r;
    struct buf b = BUF_INIT, recs = BUF_INIT;
    struct hdr h = plain_hdr(1);

    /* A record whose key runs past it, under a valid CRC: refused by the
     * full check, stored as sent by the header-only one. */
    static const uint8_t bad_rec[] = {0x10, 0, 0, 0, 0x20, 'a', 'b', 0x02, 'x', 0};
    buf_append(&recs, bad_rec, sizeof bad_rec);
    mk_batch(&b, &h, &recs);
    expect(&b, 9, &o, KERR_INVALID_RECORD);
    o.header_only = true;
    assert_int_equal(validate(b.data, b.len, 9, &o, &r), 0);
    assert_int_equal(r.records, 1);
    assert_int_equal(r.valid_bytes, b.len);
    assert_int_equal(r.max_timestamp, GOLDEN_TS);
    assert_false(r.max_timestamp_stale);
    /* The CRC and the header's own fields are still checked. */
    b.data[b.len - 1] ^= 1;
    expect(&b, 9, &o, KERR_CORRUPT_MESSAGE);
    h.count = 2;
    mk_batch(&b, &h, &recs);
    expect(&b, 9, &o, KERR_INVALID_RECORD);

    /* A compacted topic's records are read: golden's record 1 has no key. */
    buf_reset(&b);
    buf_append(&b, golden, sizeof golden);
    o.compacted = true;
    assert_int_equal(validate(b.data, b.len, 9, &o, &r), KERR_INVALID_RECORD);
    assert_int_equal(r.error_record_index, 1);
    o.compacted = false;
    expect(&b, 9, &o, 0);

    /* Timestamp bounds on the header's first and largest timestamps. */
    o.now_ms = GOLDEN_TS + 1000;
    o.timestamp_before_max_ms = 999;
    assert_int_equal(validate(b.data, b.len, 9, &o, &r), KERR_INVALID_TIMESTAMP);
    assert_int_equal(r.error_record_index, 0);
    o.timestamp_before_max_ms = INT64_MAX;
    o.now_ms = GOLDEN_TS;
    o.timestamp_after_max_ms = 4; /* golden's largest is GOLDEN_TS + 5 */
    assert_int_equal(validate(b.data, b.len, 9, &o, &r), KERR_INVALID_TIMESTAMP);
    assert_int_equal(r.error_record_index, -1);
    o.timestamp_after_max_ms = 5;
    assert_int_equal(validate(b.data, b.len, 9, &o, &r), 0);
    assert_int_equal(r.max_timestamp, GOLDEN_TS + 5);

    /* LogAppendTime topic: stamped with now; a producer's LogAppendTime
     * batch on a CreateTime topic is refused. */
    o.timestamp_type = RB_LOG_APPEND_TIME;
    o.now_ms = 42;
    assert_int_equal(validate(b.data, b.len, 9, &o, &r), 0);
    assert_int_equal(r.max_timestamp, 42);
    assert_true(r.max_timestamp_stale);
    /* As in full mode: a LogAppendTime batch's records carry its
     * maxTimestamp, checked for range; only -1 is refused for its type. */
    assert_int_equal(rb_set_max_timestamp_and_type(b.data, b.len, RB_LOG_APPEND_TIME, 42), 0);
    o.timestamp_type = RB_CREATE_TIME;
    for (int mode = 0; mode < 2; mode++) {
        o.header_only = mode;
        o.now_ms = 42;
        assert_int_equal(validate(b.data, b.len, 9, &o, &r), 0);
        assert_int_equal(r.max_timestamp, 42);
        assert_true(r.max_timestamp_stale); /* back to CreateTime */
        o.now_ms = 48;
        o.timestamp_before_max_ms = 5;
        assert_int_equal(validate(b.data, b.len, 9, &o, &r), KERR_INVALID_TIMESTAMP);
        assert_int_equal(r.error_record_index, 0);
        o.timestamp_before_max_ms = INT64_MAX;
    }
    assert_int_equal(rb_set_max_timestamp_and_type(b.data, b.len, RB_LOG_APPEND_TIME, -1), 0);
    for (int mode = 0; mode < 2; mode++) {
        o.header_only = mode;
        assert_int_equal(validate(b.data, b.len, 9, &o, &r), KERR_INVALID_TIMESTAMP);
        assert_int_equal(r.error_record_index, 0);
        assert_non_null(strstr(r.reason, "timestamp type"));
    }

    /* A compressed batch is not decompressed: no codec is given, and its
     * (uncompressed) records would not decompress anyway. */
    o = vopts();
    o.header_only = true;
    buf_reset(&b);
    buf_append(&b, golden, sizeof golden);
    be16_write(b.data + RB_OFF_ATTRIBUTES, (uint16_t)(be16_read(b.data + RB_OFF_ATTRIBUTES) | RB_CODEC_LZ4));
    assert_int_equal(rb_recompute_crc(b.data, b.len), 0);
    assert_int_equal(validate(b.data, b.len, 9, &o, &r), 0);
    assert_int_equal(r.codec, RB_CODEC_LZ4);
    o.header_only = false;
    expect(&b, 9, &o, KERR_UNSUPPORTED_COMPRESSION_TYPE);

    buf_free(&recs);
    buf_free(&b);
}

/* ---- robustness ---- */

static void check_truncations(const uint8_t *batch, size_t n, const struct rb_validate_opts *o)
{
    struct rb_validate_result r;
    for (size_t cut = 0; cut < n; cut++) {
        uint8_t *q = dup_exact(batch, cut);
        int rc = rb_validate_produce(q, cut, 9, o, &r);
        if (rc == 0)
            fail_msg("truncated to %zu of %zu bytes and accepted", cut, n);
        /* The records region cut short, with the header's count. */
        if (cut >= RB_HEADER_SIZE) {
            struct rb_record_iter it;
            struct rb_record rec;
            int x;
            rb_record_iter_init(&it, q + RB_HEADER_SIZE, cut - RB_HEADER_SIZE,
                                (int32_t)be32_read(batch + RB_OFF_RECORDS_COUNT));
            while ((x = rb_record_next(&it, &rec)) == 1) {
                struct rb_header_iter hi;
                kstr_t hk;
                kbytes_t hv;
                rb_header_iter_init(&hi, &rec);
                while (rb_header_next(&hi, &hk, &hv) == 1)
                    ;
            }
            assert_int_equal(x, -1);
            assert_int_equal(it.err, KERR_INVALID_RECORD);
        }
        free(q);
    }
}

static void test_truncation(void **state)
{
    (void)state;
    struct rb_validate_opts o = vopts();
    check_truncations(golden, sizeof golden, &o);

    struct buf b = BUF_INIT;
    struct rb_builder bl;
    struct rb_header_kv hs[3] = {{KSTR_LIT("a"), kb("1")}, {KSTR_LIT(""), KBYTES_NULL}, {KSTR_LIT("ccc"), kb("")}};
    rb_builder_begin(&bl, &b, 0, GOLDEN_TS, NULL);
    for (int i = 0; i < 6; i++)
        assert_int_equal(rb_builder_add(&bl, GOLDEN_TS + i, i % 2 ? KBYTES_NULL : kb("key"),
                                        kb("some value of a few bytes"), hs, i % 4), 0);
    assert_int_equal(rb_builder_finish(&bl, NULL), 0);
    check_truncations(b.data, b.len, &o);
    buf_free(&b);
}

static void test_bit_flips(void **state)
{
    (void)state;
    struct rb_validate_opts o = vopts();
    struct rb_validate_result r;
    uint8_t *q = dup_exact(golden, sizeof golden);
    /* Every bit from the CRC field to the end: CORRUPT_MESSAGE. */
    for (size_t i = RB_OFF_CRC; i < sizeof golden; i++) {
        for (int bit = 0; bit < 8; bit++) {
            q[i] ^= (uint8_t)(1u << bit);
            int rc = rb_validate_produce(q, sizeof golden, 9, &o, &r);
            if (rc != KERR_CORRUPT_MESSAGE)
                fail_msg("flip byte %zu bit %d: got %s (%s)", i, bit, kerr_name((int16_t)rc), r.reason);
            assert_false(rb_crc_ok(q, sizeof golden));
            q[i] ^= (uint8_t)(1u << bit);
        }
    }
    /* The two fields the leader stamps are outside the CRC. */
    for (size_t i = RB_OFF_PARTITION_LEADER_EPOCH; i < RB_OFF_MAGIC; i++) {
        q[i] ^= 0xff;
        assert_int_equal(rb_validate_produce(q, sizeof golden, 9, &o, &r), 0);
        q[i] ^= 0xff;
    }
    free(q);

    /* Random multi-byte garbage anywhere never crashes. */
    for (int iter = 0; iter < 20000; iter++) {
        size_t n = sizeof golden;
        q = dup_exact(golden, n);
        int flips = 1 + (int)(rnd() % 4);
        for (int k = 0; k < flips; k++)
            q[rnd() % n] = (uint8_t)rnd();
        if (iter & 1)
            rb_recompute_crc(q, n); /* get past the CRC to the records */
        (void)rb_validate_produce(q, n, (int16_t)(rnd() % 13), &o, &r);
        struct rb_record_iter it;
        struct rb_record rec;
        if (rb_record_iter_init_batch(&it, q, n) == 0)
            while (rb_record_next(&it, &rec) == 1)
                ;
        free(q);
    }
}

/* The varint decoders' inline one- and two-byte paths and their call for
 * longer ones agree with the encoder at every length boundary, and refuse
 * truncated and overlong input. */
static void test_varint_boundaries(void **state)
{
    (void)state;
    const uint64_t vals[] = {0, 1, 0x7f, 0x80, 0x3fff, 0x4000, 0x1fffff, 0x200000, 0xfffffff, 0x10000000,
                             0xffffffffu, 0x100000000ull, UINT64_MAX};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        uint8_t b[10];
        size_t n = varint_encode_u64(b, vals[i]);
        uint64_t v64 = 0;
        assert_int_equal(varint_decode_u64(b, n, &v64), n);
        assert_true(v64 == vals[i]);
        assert_int_equal(varint_decode_u64(b, n - 1, &v64), 0); /* truncated */
        uint32_t v32 = 0;
        if (vals[i] <= 0xffffffffu) {
            assert_int_equal(varint_decode_u32(b, n, &v32), n);
            assert_int_equal(v32, (uint32_t)vals[i]);
            assert_int_equal(varint_decode_u32(b, n - 1, &v32), 0);
        } else {
            assert_int_equal(varint_decode_u32(b, n, &v32), 0); /* over 32 bits */
        }
    }
    uint32_t v;
    const uint8_t two[] = {0x81, 0x01};
    assert_int_equal(varint_decode_u32(two, 2, &v), 2);
    assert_int_equal(v, 0x81);
    assert_int_equal(varint_decode_u32(two, 0, &v), 0);
    const uint8_t six[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
    assert_int_equal(varint_decode_u32(six, 6, &v), 0); /* more than five bytes */
}

/* Options the walk-agreement tests below draw: compaction now and then,
 * a timestamp window of window_ms either side a third of the time. */
static struct rb_validate_opts random_opts(int64_t window_ms)
{
    struct rb_validate_opts o = vopts();
    o.compacted = rnd() % 4 == 0;
    if (rnd() % 3 == 0) {
        o.timestamp_before_max_ms = window_ms;
        o.timestamp_after_max_ms = window_ms;
        o.now_ms = GOLDEN_TS;
    }
    return o;
}

/* Validates q with the single-pass walk and with the general one: false
 * (and a line) when they disagree on the code, the reason, the failing
 * record or the max timestamp. *rf gets the single-pass walk's code. */
static bool walks_agree(const uint8_t *q, size_t len, const struct rb_validate_opts *o, int iter, int *rf)
{
    struct rb_validate_result fast, slow;
    *rf = rb_validate_produce(q, len, 9, o, &fast);
    rb_validate_use_fast_walk(false);
    int rs = rb_validate_produce(q, len, 9, o, &slow);
    rb_validate_use_fast_walk(true);
    if (*rf == rs && fast.error_record_index == slow.error_record_index && fast.max_timestamp == slow.max_timestamp &&
        fast.max_timestamp_offset_delta == slow.max_timestamp_offset_delta &&
        fast.max_timestamp_stale == slow.max_timestamp_stale && strcmp(fast.reason, slow.reason) == 0)
        return true;
    print_error("iter %d (%zu bytes): fast %s (%s) slow %s (%s)\n", iter, len, kerr_name((int16_t)*rf), fast.reason,
                kerr_name((int16_t)rs), slow.reason);
    return false;
}

/* The same on batches of several of crc_and_walk's 24 KiB blocks, with
 * records of up to 3 000 bytes across the block edges, mutated in their
 * lengths and fields: the walk that follows the CRC block by block agrees
 * with the general walk, and an unmutated batch passes. */
static void test_fused_walk_agrees(void **state)
{
    (void)state;
    static uint8_t val[3000];
    for (size_t i = 0; i < sizeof val; i++)
        val[i] = (uint8_t)rnd();
    int mismatches = 0, accepted = 0;
    for (int iter = 0; iter < 400; iter++) {
        struct buf b = BUF_INIT;
        struct rb_builder bl;
        rb_builder_begin(&bl, &b, 0, GOLDEN_TS, NULL);
        int n = 20 + (int)(rnd() % 200);
        for (int i = 0; i < n; i++) {
            int64_t ts = GOLDEN_TS + (int64_t)(rnd() % 5000) - 2500;
            kbytes_t v = {.p = val, .len = (int32_t)(rnd() % 4 ? rnd() % 3000 : rnd() % 100)};
            kbytes_t k = rnd() % 2 ? (kbytes_t){.p = val + 7, .len = (int32_t)(rnd() % 20)} : kb(NULL);
            assert_int_equal(rb_builder_add(&bl, ts, k, v, NULL, 0), 0);
        }
        size_t len;
        assert_int_equal(rb_builder_finish(&bl, &len), 0);
        uint8_t *q = dup_exact(b.data, len);
        buf_free(&b);
        int flips = iter % 4 == 0 ? 0 : 1 + (int)(rnd() % 2);
        for (int k = 0; k < flips; k++)
            q[RB_OFF_RECORDS + rnd() % (len - RB_OFF_RECORDS)] = (uint8_t)(rnd() % 4 ? rnd() % 8 : rnd());
        rb_recompute_crc(q, len);
        struct rb_validate_opts o = random_opts(1000);
        int rf;
        mismatches += !walks_agree(q, len, &o, iter, &rf);
        if (flips == 0 && !o.compacted && o.timestamp_after_max_ms == INT64_MAX)
            assert_int_equal(rf, 0);
        accepted += rf == 0;
        free(q);
    }
    assert_int_equal(mismatches, 0);
    assert_true(accepted > 50 && accepted < 400);
}

/* The single-pass walk and the general one give the same answer (code,
 * reason, failing record, max timestamp) on mutations of batches with keys,
 * nulls and headers, under each option that changes the checks. */
static void test_fast_walk_agrees(void **state)
{
    (void)state;
    static const char *vals[] = {NULL, "", "v", "a longer value of some bytes"};
    int mismatches = 0, accepted = 0;
    for (int iter = 0; iter < 20000; iter++) {
        struct buf b = BUF_INIT;
        struct rb_builder bl;
        rb_builder_begin(&bl, &b, 0, GOLDEN_TS, NULL);
        int n = 1 + (int)(rnd() % 6);
        for (int i = 0; i < n; i++) {
            struct rb_header_kv hd[2] = {{KSTR_LIT("h"), kb(vals[rnd() % 4])}, {KSTR_LIT(""), kb(NULL)}};
            int64_t ts = GOLDEN_TS + (int64_t)(rnd() % 5000) - 2500;
            assert_int_equal(rb_builder_add(&bl, ts, kb(vals[rnd() % 4]), kb(vals[rnd() % 4]), hd, (int)(rnd() % 3)),
                             0);
        }
        size_t len;
        assert_int_equal(rb_builder_finish(&bl, &len), 0);
        uint8_t *q = dup_exact(b.data, len);
        buf_free(&b);
        int flips = (int)(rnd() % 3);
        for (int k = 0; k < flips; k++)
            q[RB_OFF_RECORDS + rnd() % (len - RB_OFF_RECORDS)] = (uint8_t)(rnd() % 4 ? rnd() % 8 : rnd());
        rb_recompute_crc(q, len);
        struct rb_validate_opts o = random_opts(1000);
        if (rnd() % 8 == 0)
            o.timestamp_type = RB_LOG_APPEND_TIME;
        int rf;
        mismatches += !walks_agree(q, len, &o, iter, &rf);
        accepted += rf == 0;
        free(q);
    }
    assert_int_equal(mismatches, 0);
    /* Both outcomes were exercised. */
    assert_true(accepted > 1000 && accepted < 19000);
}

/* The same on batches shaped like a producer's (tens of small records,
 * null or short keys, now and then a header), mutated anywhere in the
 * records with any byte (so that varints grow, lengths overrun and
 * continuation bits appear): the single-pass walk accepts exactly what
 * the general walk accepts, on the records a faster walk would most want
 * to take shortcuts over. */
static void test_unchecked_walk_agrees(void **state)
{
    (void)state;
    static uint8_t val[200];
    for (size_t i = 0; i < sizeof val; i++)
        val[i] = (uint8_t)rnd();
    int mismatches = 0, accepted = 0;
    for (int iter = 0; iter < 20000; iter++) {
        struct buf b = BUF_INIT;
        struct rb_builder bl;
        rb_builder_begin(&bl, &b, 0, GOLDEN_TS, NULL);
        int n = 2 + (int)(rnd() % 80);
        for (int i = 0; i < n; i++) {
            struct rb_header_kv hd[1] = {{KSTR_LIT("h"), {.p = val, .len = (int32_t)(rnd() % 3)}}};
            int64_t ts = GOLDEN_TS + (int64_t)(rnd() % 40000) - 20000;
            kbytes_t k = rnd() % 3 ? kb(NULL) : (kbytes_t){.p = val + 3, .len = (int32_t)(rnd() % 70)};
            kbytes_t v = rnd() % 16 ? (kbytes_t){.p = val, .len = (int32_t)(rnd() % 200)} : kb(NULL);
            assert_int_equal(rb_builder_add(&bl, ts, k, v, hd, rnd() % 8 == 0), 0);
        }
        size_t len;
        assert_int_equal(rb_builder_finish(&bl, &len), 0);
        uint8_t *q = dup_exact(b.data, len);
        buf_free(&b);
        int flips = iter % 4 == 0 ? 0 : 1 + (int)(rnd() % 2);
        for (int k = 0; k < flips; k++)
            q[RB_OFF_RECORDS + rnd() % (len - RB_OFF_RECORDS)] = (uint8_t)(rnd() % 2 ? rnd() % 8 : rnd());
        rb_recompute_crc(q, len);
        struct rb_validate_opts o = random_opts(10000);
        int rf;
        mismatches += !walks_agree(q, len, &o, iter, &rf);
        accepted += rf == 0;
        free(q);
    }
    assert_int_equal(mismatches, 0);
    assert_true(accepted > 2000 && accepted < 18000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_varint_boundaries),
        cmocka_unit_test(test_golden_parse),
        cmocka_unit_test(test_golden_build),
        cmocka_unit_test(test_golden_validate),
        cmocka_unit_test(test_golden_marker),
        cmocka_unit_test(test_control_key_value),
        cmocka_unit_test(test_round_trip_random),
        cmocka_unit_test(test_builder_errors),
        cmocka_unit_test(test_builder_compressed),
        cmocka_unit_test(test_stamping),
        cmocka_unit_test(test_parse_header_errors),
        cmocka_unit_test(test_frame),
        cmocka_unit_test(test_validate_framing),
        cmocka_unit_test(test_validate_magic),
        cmocka_unit_test(test_validate_batch_fields),
        cmocka_unit_test(test_validate_records),
        cmocka_unit_test(test_validate_keys_and_timestamps),
        cmocka_unit_test(test_validate_header_only),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_bit_flips),
        cmocka_unit_test(test_fast_walk_agrees),
        cmocka_unit_test(test_fused_walk_agrees),
        cmocka_unit_test(test_unchecked_walk_agrees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
