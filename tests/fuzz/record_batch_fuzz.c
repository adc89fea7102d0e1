/* libFuzzer target for record batches: Produce validation, the record and
 * header iterators and the control-record parsers over arbitrary bytes,
 * plus a builder round trip that must always validate.
 *
 * The first input byte picks a mode; without the header-fixing modes
 * nearly every mutation would stop at the CRC and the record parser would
 * never be reached. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/kerr.h"
#include "proto/record_batch.h"

/* Stand-in codec (XOR), so compressed batches reach the record checks. */
static int xor_codec(void *ctx, int codec, const uint8_t *in, size_t in_len, struct buf *out)
{
    (void)ctx;
    if (codec == RB_CODEC_SNAPPY)
        return KERR_CORRUPT_MESSAGE;
    if (in_len == 0) /* buf_extend(.., 0) on an empty buf computes NULL + 0 */
        return 0;
    uint8_t *w = buf_extend(out, in_len);
    for (size_t i = 0; i < in_len; i++)
        w[i] = in[i] ^ 0x5A;
    return 0;
}

static void walk_records(const uint8_t *p, size_t n, int32_t count, bool control)
{
    struct rb_record_iter it;
    struct rb_record rec;
    rb_record_iter_init(&it, p, n, count);
    while (rb_record_next(&it, &rec) == 1) {
        struct rb_header_iter hi;
        kstr_t k;
        kbytes_t v;
        size_t total = 0;
        rb_header_iter_init(&hi, &rec);
        while (rb_header_next(&hi, &k, &v) == 1)
            total += (size_t)k.len + (v.len > 0 ? (size_t)v.len : 0);
        if (total > rec.headers_len)
            abort();
        if (control) {
            int16_t type;
            int32_t epoch;
            (void)rb_parse_control_record(&rec, &type, &epoch);
        }
    }
}

static void check_batch(const uint8_t *p, size_t n, const uint8_t *knobs)
{
    struct rb_validate_opts o = {
        .max_message_bytes = (knobs[0] & 1) ? 1000 : 0,
        .compacted = knobs[0] & 2,
        .timestamp_type = (knobs[0] & 4) ? RB_LOG_APPEND_TIME : RB_CREATE_TIME,
        .timestamp_before_max_ms = (knobs[0] & 8) ? 3600000 : INT64_MAX,
        .timestamp_after_max_ms = (knobs[0] & 16) ? 3600000 : INT64_MAX,
        .now_ms = 1700000000000LL,
        .decompress = (knobs[0] & 32) ? xor_codec : NULL,
    };
    struct rb_validate_result r;
    int rc = rb_validate_produce(p, n, (int16_t)(knobs[1] % 13), &o, &r);
    if (rc == 0 && r.batches == 1 && r.valid_bytes != n)
        abort();
    if (rc == 0 && r.batches == 1 && !rb_crc_ok(p, n))
        abort();
    /* The single-pass walk must agree with the general one. */
    struct rb_validate_result g;
    rb_validate_use_fast_walk(false);
    int rg = rb_validate_produce(p, n, (int16_t)(knobs[1] % 13), &o, &g);
    rb_validate_use_fast_walk(true);
    if (rg != rc || g.error_record_index != r.error_record_index || g.max_timestamp != r.max_timestamp ||
        g.max_timestamp_offset_delta != r.max_timestamp_offset_delta || strcmp(g.reason, r.reason) != 0)
        abort();
    /* samsa.record.validation=batch: the records unread, but the
     * batch's frame and CRC still hold for anything it accepts. */
    o.header_only = true;
    rc = rb_validate_produce(p, n, (int16_t)(knobs[1] % 13), &o, &r);
    if (rc == 0 && r.batches == 1 && (r.valid_bytes != n || !rb_crc_ok(p, n)))
        abort();

    struct rb_header h;
    if (rb_parse_header(p, n, &h) == 0 && rb_batch_size(&h) <= (int64_t)n) {
        size_t size = (size_t)rb_batch_size(&h);
        struct rb_record_iter it;
        if (rb_record_iter_init_batch(&it, p, size) == 0)
            walk_records(p + RB_HEADER_SIZE, size - RB_HEADER_SIZE, h.records_count, rb_is_control(&h));
        (void)rb_crc_ok(p, size);
    }
}

/* Builds a batch from the input and insists it validates and reads back. */
static void round_trip(const uint8_t *d, size_t n)
{
    struct buf out = BUF_INIT;
    struct rb_builder b;
    struct rb_batch_opts bo = RB_BATCH_OPTS_INIT;
    struct rb_header_kv hs[3];
    int64_t base = 1700000000000LL;
    size_t i = 0;
    int count = 0;
    bool compress = n > 0 && (d[0] & 1);
    if (n > 0 && (d[0] & 2)) {
        bo.producer_id = 7;
        bo.producer_epoch = 1;
        bo.base_sequence = 0;
        bo.transactional = d[0] & 4;
    }
    buf_append(&out, "pre", 3);
    rb_builder_begin(&b, &out, 0, base, &bo);
    while (i + 4 <= n && count < 64) {
        uint8_t flags = d[i], kl = d[i + 1], vl = d[i + 2];
        int64_t ts = base + (int8_t)d[i + 3] * 1000LL;
        i += 4;
        kbytes_t key = kl == 255 ? KBYTES_NULL : (kbytes_t){d + i, (int32_t)(kl <= n - i ? kl : n - i)};
        if (key.len > 0)
            i += (size_t)key.len;
        kbytes_t val = vl == 255 ? KBYTES_NULL : (kbytes_t){d + i, (int32_t)(vl <= n - i ? vl : n - i)};
        if (val.len > 0)
            i += (size_t)val.len;
        int nh = flags & 3;
        for (int j = 0; j < nh; j++) {
            hs[j].key = (kstr_t){(const char *)d, (int32_t)(j < (int)n ? j : 0)};
            hs[j].value = (flags & 4) ? KBYTES_NULL : (kbytes_t){d, (int32_t)(n < 9 ? n : 9)};
        }
        if (rb_builder_add(&b, ts, key, val, hs, nh) != 0)
            abort();
        count++;
    }
    size_t len = 0;
    int rc = compress ? rb_builder_finish_compressed(&b, RB_CODEC_GZIP, xor_codec, NULL, &len)
                      : rb_builder_finish(&b, &len);
    if (count == 0) {
        if (rc != KERR_INVALID_RECORD || out.len != 3)
            abort();
        buf_free(&out);
        return;
    }
    if (rc != 0 || len != out.len - 3)
        abort();
    struct rb_validate_opts o = {
        .timestamp_type = RB_CREATE_TIME,
        .timestamp_before_max_ms = INT64_MAX,
        .timestamp_after_max_ms = INT64_MAX,
        .decompress = xor_codec,
    };
    struct rb_validate_result r;
    uint8_t *batch = out.data + 3;
    rc = rb_validate_produce(batch, len, 9, &o, &r);
    if (rc != 0 || r.records != count || r.max_timestamp_stale)
        abort();
    if (!compress) {
        struct rb_record_iter it;
        struct rb_record rec;
        int k = 0;
        if (rb_record_iter_init_batch(&it, batch, len) != 0)
            abort();
        while (rb_record_next(&it, &rec) == 1)
            if (rec.offset_delta != k++)
                abort();
        if (it.err || k != count)
            abort();
    }
    /* Stamping keeps the CRC valid. */
    rb_set_base_offset(batch, 123456789);
    rb_set_partition_leader_epoch(batch, 42);
    if (!rb_crc_ok(batch, len))
        abort();
    if (rb_set_max_timestamp_and_type(batch, len, RB_LOG_APPEND_TIME, base) != 0 || !rb_crc_ok(batch, len))
        abort();
    buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    uint8_t mode = data[0] % 4;
    const uint8_t *knobs = data + 1;
    data += 3;
    size -= 3;

    /* An exact-size private copy: ASan flags any read past the input, and
     * the fixing modes may write. */
    uint8_t *p = malloc(size ? size : 1);
    if (!p)
        return 0;
    if (size)
        memcpy(p, data, size);

    switch (mode) {
    case 0: /* raw bytes, as a client could send them */
        check_batch(p, size, knobs);
        break;
    case 1: /* a header that frames and a good CRC: exercise the records */
        if (size >= RB_HEADER_SIZE) {
            be64_write(p, 0);
            be32_write(p + RB_OFF_BATCH_LENGTH, (uint32_t)(size - RB_LOG_OVERHEAD));
            p[RB_OFF_MAGIC] = RB_MAGIC_V2;
            rb_recompute_crc(p, size);
        }
        check_batch(p, size, knobs);
        break;
    case 2: /* a bare records block */
        walk_records(p, size, (int32_t)(knobs[0] | knobs[1] << 8) - 256, knobs[0] & 1);
        break;
    default:
        round_trip(p, size);
        break;
    }
    free(p);
    return 0;
}
