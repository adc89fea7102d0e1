/* Codec glue between the core's record batches and codec plugins. See
 * codec.h. Memory: every output goes into a caller's struct buf; a codec
 * writes only through the bounded samsa_out_t below, so a decompression
 * bomb stops at the limit instead of exhausting memory. */
#include "plugin/codec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/registry.h"
#include "proto/kerr.h"
#include "util/slog.h"

/* samsa_out_t over a struct buf, bounded to limit bytes past start. */
struct buf_out {
    samsa_out_t pub; /* first: the plugin sees only this */
    struct buf *b;
    size_t start;
    size_t limit;
    size_t granted; /* room handed out by the last reserve */
    bool over;      /* a reserve was refused for the limit */
};

static uint8_t *bo_reserve(samsa_out_t *o, size_t min, size_t *avail)
{
    struct buf_out *bo = (struct buf_out *)o;
    size_t used = bo->b->len - bo->start;
    size_t room = bo->limit > used ? bo->limit - used : 0;
    if (min == 0)
        min = 1;
    if (min > room) {
        bo->over = true;
        *avail = 0;
        bo->granted = 0;
        return NULL;
    }
    /* Grow geometrically so a codec asking for a byte at a time still
     * costs O(n) copies, but never past the limit. */
    size_t want = used < 65536 ? 65536 : used;
    if (want < min)
        want = min;
    if (want > room)
        want = room;
    uint8_t *p = buf_reserve(bo->b, want);
    size_t a = bo->b->cap - bo->b->len;
    if (a > room)
        a = room;
    bo->granted = a;
    *avail = a;
    return p;
}

static void bo_commit(samsa_out_t *o, size_t n)
{
    struct buf_out *bo = (struct buf_out *)o;
    if (n > bo->granted) {
        /* The codec wrote past what it was given: memory is already
         * corrupt, so stop here rather than later. */
        slog_error("codec committed %zu bytes with only %zu reserved", n, bo->granted);
        abort();
    }
    bo->b->len += n;
    bo->granted -= n;
}

static void bo_init(struct buf_out *bo, struct buf *b, size_t limit)
{
    memset(bo, 0, sizeof *bo);
    bo->pub.struct_size = sizeof bo->pub;
    bo->pub.reserve = bo_reserve;
    bo->pub.commit = bo_commit;
    bo->pub.limit = limit;
    bo->b = b;
    bo->start = b->len;
    bo->limit = limit;
}

static int map_status(int rc, const struct buf_out *bo)
{
    switch (rc) {
    case SAMSA_OK: return 0;
    case SAMSA_ECORRUPT: return KERR_CORRUPT_MESSAGE;
    case SAMSA_ENOSPC: return bo->over ? KERR_MESSAGE_TOO_LARGE : KERR_CORRUPT_MESSAGE;
    case SAMSA_EINVAL: return KERR_CORRUPT_MESSAGE;
    default: return KERR_UNKNOWN_SERVER_ERROR;
    }
}

int codec_decompress(const struct plugin_registry *reg, int id, const uint8_t *in, size_t in_len, struct buf *out,
                     size_t limit)
{
    const struct plugin_cap *c = plugin_codec(reg, id);
    if (!c)
        return KERR_UNSUPPORTED_COMPRESSION_TYPE;
    struct buf_out bo;
    bo_init(&bo, out, limit);
    int rc = c->vt.codec.decompress(c->state, in, in_len, &bo.pub);
    if (rc != SAMSA_OK)
        out->len = bo.start;
    return map_status(rc, &bo);
}

static int32_t clamp_level(const samsa_codec_t *c, int32_t level)
{
    if (level == SAMSA_CODEC_LEVEL_DEFAULT)
        return level;
    if (level < c->level_min)
        return c->level_min;
    if (level > c->level_max)
        return c->level_max;
    return level;
}

int codec_compress(const struct plugin_registry *reg, int id, int32_t level, const uint8_t *in, size_t in_len,
                   struct buf *out)
{
    const struct plugin_cap *c = plugin_codec(reg, id);
    if (!c)
        return KERR_UNSUPPORTED_COMPRESSION_TYPE;
    struct buf_out bo;
    /* A compressed batch must still fit a batchLength (int32). */
    bo_init(&bo, out, (size_t)INT32_MAX - RB_HEADER_SIZE);
    int rc = c->vt.codec.compress(c->state, clamp_level(&c->vt.codec, level), in, in_len, &bo.pub);
    if (rc != SAMSA_OK)
        out->len = bo.start;
    return map_status(rc, &bo);
}

int codec_rb_decompress(void *ctx, int codec, const uint8_t *in, size_t in_len, struct buf *out)
{
    const struct codec_ctx *c = ctx;
    return codec_decompress(c->reg, codec, in, in_len, out, c->limit);
}

int codec_rb_compress(void *ctx, int codec, const uint8_t *in, size_t in_len, struct buf *out)
{
    const struct codec_ctx *c = ctx;
    return codec_compress(c->reg, codec, c->level, in, in_len, out);
}

size_t codec_records_limit(int32_t count, int32_t max_message_bytes)
{
    uint64_t per = max_message_bytes > 0 ? (uint64_t)max_message_bytes : (uint64_t)1 << 20;
    uint64_t n = count > 0 ? (uint64_t)count : 1;
    /* + record framing: length, attributes, deltas, lengths, headers */
    uint64_t lim = n * (per + 64);
    return lim > CODEC_DECOMPRESS_CEILING ? CODEC_DECOMPRESS_CEILING : (size_t)lim;
}

static int why(char *reason, size_t n, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int why(char *reason, size_t n, int code, const char *fmt, ...)
{
    if (reason && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(reason, n, fmt, ap);
        va_end(ap);
    }
    return code;
}

int codec_rebuild_batch(const struct plugin_registry *reg, const uint8_t *batch, size_t len, const uint8_t *records,
                        size_t records_len, int target, int32_t level, struct buf *out, char *reason,
                        size_t reason_len)
{
    struct rb_header h;
    if (rb_parse_header(batch, len, &h) != 0 || rb_batch_size(&h) != (int64_t)len)
        return why(reason, reason_len, KERR_CORRUPT_MESSAGE, "malformed record batch");
    if (target != RB_CODEC_NONE && !plugin_codec(reg, target))
        return why(reason, reason_len, KERR_UNSUPPORTED_COMPRESSION_TYPE, "no codec module for %s is loaded",
                   plugin_codec_name(target));
    struct rb_record_iter it;
    if (records)
        rb_record_iter_init(&it, records, records_len, h.records_count);
    else if (rb_record_iter_init_batch(&it, batch, len) != 0)
        return why(reason, reason_len, KERR_CORRUPT_MESSAGE, "record batch is compressed or malformed");

    struct rb_batch_opts bo = {
        .producer_id = h.producer_id,
        .producer_epoch = h.producer_epoch,
        .base_sequence = h.base_sequence,
        .partition_leader_epoch = h.partition_leader_epoch,
        .transactional = rb_is_transactional(&h),
        .control = rb_is_control(&h),
    };
    size_t start = out->len;
    struct rb_builder b;
    rb_builder_begin(&b, out, h.base_offset, h.base_timestamp, &bo);
    bool lat = rb_timestamp_type(&h) == RB_LOG_APPEND_TIME;
    struct rb_header_kv *hv = NULL;
    size_t hcap = 0;
    struct rb_record rec;
    int r, rc = 0;
    while ((r = rb_record_next(&it, &rec)) == 1) {
        if ((size_t)rec.header_count > hcap) {
            hcap = (size_t)rec.header_count;
            hv = xrealloc(hv, hcap * sizeof *hv);
        }
        int nh = 0, hr = 0;
        if (rec.header_count > 0) {
            struct rb_header_iter hi;
            rb_header_iter_init(&hi, &rec);
            while (nh < rec.header_count && (hr = rb_header_next(&hi, &hv[nh].key, &hv[nh].value)) == 1)
                nh++;
        }
        if (hr < 0) {
            rc = why(reason, reason_len, KERR_INVALID_RECORD, "record %d has malformed headers", it.index - 1);
            break;
        }
        /* A LogAppendTime batch's records all read as its maxTimestamp. */
        int64_t ts = lat ? h.max_timestamp : h.base_timestamp + rec.timestamp_delta;
        rc = rb_builder_add(&b, ts, rec.key, rec.value, hv, nh);
        if (rc) {
            why(reason, reason_len, rc, "cannot rebuild record %d: %s", it.index - 1, kerr_name((int16_t)rc));
            break;
        }
    }
    free(hv);
    if (!rc && r < 0)
        rc = why(reason, reason_len, it.err ? it.err : KERR_INVALID_RECORD, "%s (record %d)",
                 it.reason ? it.reason : "malformed record", it.index);
    if (rc) {
        rb_builder_abort(&b);
        out->len = start;
        return rc;
    }
    struct codec_ctx cc = {.reg = reg, .limit = 0, .level = level};
    size_t blen = 0;
    rc = target == RB_CODEC_NONE ? rb_builder_finish(&b, &blen)
                                 : rb_builder_finish_compressed(&b, target, codec_rb_compress, &cc, &blen);
    if (rc) {
        out->len = start;
        return why(reason, reason_len, rc, "cannot %s the rebuilt batch: %s",
                   target == RB_CODEC_NONE ? "finish" : "compress", kerr_name((int16_t)rc));
    }
    if (lat)
        rb_set_max_timestamp_and_type(out->data + start, blen, RB_LOG_APPEND_TIME, h.max_timestamp);
    return 0;
}
