/* The produce path's compression policy (see produce_codec.h): Kafka's
 * LogValidator decision to keep the producer's batch or recompress it to
 * the topic's compression.type. The codecs themselves are the plugin
 * layer's (plugin/codec.h). */
#include "api/produce_codec.h"

#include <stdio.h>
#include <string.h>

#include "plugin/registry.h"
#include "proto/kerr.h"
#include "topic_config.h"

/* The reason for an error, in the caller's buffer. */
#define FAIL(code, ...) (snprintf(reason, reason_len, __VA_ARGS__), (code))

static int32_t topic_level(const struct topic_config *tc, int codec)
{
    switch (codec) {
    case RB_CODEC_GZIP: return tc->compression_gzip_level;
    case RB_CODEC_LZ4: return tc->compression_lz4_level;
    case RB_CODEC_ZSTD: return tc->compression_zstd_level;
    default: return SAMSA_CODEC_LEVEL_DEFAULT;
    }
}

void produce_codec_init(struct produce_codec *pc, const struct plugin_registry *reg, const struct topic_config *tc,
                        const uint8_t *records, size_t len)
{
    memset(pc, 0, sizeof *pc);
    pc->reg = reg;
    pc->target = tc->compression_type == TOPIC_COMPRESSION_PRODUCER ? -1 : (int)tc->compression_type;
    pc->level = pc->target > 0 ? topic_level(tc, pc->target) : SAMSA_CODEC_LEVEL_DEFAULT;
    pc->max_message_bytes = tc->max_message_bytes;
    int32_t count = 1;
    pc->source = -1;
    if (records && len >= RB_HEADER_SIZE) {
        count = (int32_t)be32_read(records + RB_OFF_RECORDS_COUNT);
        pc->source = rb_attr_codec((int16_t)be16_read(records + RB_OFF_ATTRIBUTES));
    }
    pc->ctx.reg = reg;
    pc->ctx.limit = codec_records_limit(count, tc->max_message_bytes);
    pc->ctx.level = pc->level;
    buf_init(&pc->records);
    buf_init(&pc->rebuilt);
}

int produce_codec_decompress(void *ctx, int codec, const uint8_t *in, size_t in_len, struct buf *out)
{
    struct produce_codec *pc = ctx;
    size_t start = out->len;
    int rc = codec_decompress(pc->reg, codec, in, in_len, out, pc->ctx.limit);
    /* The validator frees its copy; a rebuild needs the records again,
     * and a copy costs far less than decompressing twice. */
    if (rc == 0 && pc->target >= 0 && pc->target != codec) {
        buf_reset(&pc->records);
        buf_append(&pc->records, out->data + start, out->len - start);
        pc->have_records = true;
    }
    return rc;
}

int produce_codec_apply(struct produce_codec *pc, uint8_t **batch, size_t *len, const struct rb_validate_result *vr,
                        char *reason, size_t reason_len)
{
    int src = vr->codec;
    int target = pc->target < 0 ? src : pc->target;
    /* LogValidator: same source and target codec means in-place
     * assignment; the producer's bytes are kept. */
    if (target == src)
        return 0;
    if (src != RB_CODEC_NONE && !pc->have_records)
        return FAIL(KERR_UNKNOWN_SERVER_ERROR, "decompressed records were not kept");
    buf_reset(&pc->rebuilt);
    int rc = codec_rebuild_batch(pc->reg, *batch, *len, src != RB_CODEC_NONE ? pc->records.data : NULL,
                                 pc->records.len, target, pc->level, &pc->rebuilt, reason, reason_len);
    if (rc) {
        if (rc == KERR_UNSUPPORTED_COMPRESSION_TYPE)
            (void)FAIL(rc, "topic compression.type is %s but no codec module for it is loaded",
                       plugin_codec_name(target));
        return rc;
    }
    /* UnifiedLog re-checks sizes after a recompression. */
    if (pc->max_message_bytes > 0 && pc->rebuilt.len > (size_t)pc->max_message_bytes)
        return FAIL(KERR_MESSAGE_TOO_LARGE,
                   "Message batch size is %zu bytes in append to partition which exceeds the maximum "
                   "configured size of %d.",
                   pc->rebuilt.len, pc->max_message_bytes);
    *batch = pc->rebuilt.data;
    *len = pc->rebuilt.len;
    pc->rebuilt_used = true;
    return 0;
}

bool produce_codec_keeps(const struct produce_codec *pc)
{
    if (pc->source < 0 || (pc->target >= 0 && pc->target != pc->source))
        return false;
    return pc->source == RB_CODEC_NONE || plugin_codec(pc->reg, pc->source) != NULL;
}

void produce_codec_free(struct produce_codec *pc)
{
    buf_free(&pc->records);
    buf_free(&pc->rebuilt);
}
