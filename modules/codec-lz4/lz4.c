/* SPDX-License-Identifier: Apache-2.0
 *
 * codec-lz4: Kafka compression id 3, the LZ4 frame format with liblz4.
 *
 * What Kafka clients write: one LZ4 frame (magic 04 22 4D 18), blocks of
 * at most 64 KiB, compressed independently (Java's KafkaLZ4Block*Stream
 * decompresses each block on its own, so linked blocks are unreadable to
 * it), no content size and no checksums needed.
 *
 * The quirk: before Kafka 0.10 (KAFKA-3160) the Java client computed the
 * frame descriptor's header checksum (HC, the second byte of xxh32 of the
 * descriptor) over the magic number as well; librdkafka still writes that
 * broken HC for message format v0 and fixes it up when reading. This
 * codec accepts a frame whose HC matches either the correct or the legacy
 * computation (checking it, rather than ignoring it as Java's v0 reader
 * does) and always writes the correct one.
 *
 * Levels are Kafka's compression.lz4.level, 1..17 (default 9): 1 is the
 * fast compressor, higher levels LZ4 HC.
 * Compiled against include/samsa only. */
#include <lz4frame.h>
#include <stdlib.h>
#include <string.h>

#include "samsa/codec.h"

#ifndef SAMSA_MODULE_VERSION
#define SAMSA_MODULE_VERSION "0"
#endif

#define LZ4F_MAGIC 0x184D2204u

struct lz_state {
    samsa_host_t *host;
    const samsa_host_api_t *api;
    samsa_metric_t *in_batches, *out_batches, *legacy_hc;
};

struct lz_thread {
    LZ4F_dctx *d;
    LZ4F_cctx *c;
};

static struct lz_state g_state;

/* ---- xxh32, only for the frame descriptor checksum (a few bytes) ---- */

#define P1 2654435761u
#define P2 2246822519u
#define P3 3266489917u
#define P4 668265263u
#define P5 374761393u

static uint32_t rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static uint32_t xxh32(const uint8_t *p, size_t len, uint32_t seed)
{
    const uint8_t *end = p + len;
    uint32_t h;
    if (len >= 16) {
        uint32_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;
        const uint8_t *limit = end - 16;
        do {
            v1 = rotl(v1 + le32(p) * P2, 13) * P1;
            v2 = rotl(v2 + le32(p + 4) * P2, 13) * P1;
            v3 = rotl(v3 + le32(p + 8) * P2, 13) * P1;
            v4 = rotl(v4 + le32(p + 12) * P2, 13) * P1;
            p += 16;
        } while (p <= limit);
        h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    } else {
        h = seed + P5;
    }
    h += (uint32_t)len;
    while (p + 4 <= end) {
        h = rotl(h + le32(p) * P3, 17) * P4;
        p += 4;
    }
    while (p < end) {
        h = rotl(h + (*p) * P5, 11) * P1;
        p++;
    }
    h ^= h >> 15;
    h *= P2;
    h ^= h >> 13;
    h *= P3;
    h ^= h >> 16;
    return h;
}

/* ---- per-thread contexts ---- */

static struct lz_thread *thread_ctx(struct lz_state *s)
{
    void **slot = s->api->worker_local(s->host);
    if (!*slot)
        *slot = calloc(1, sizeof(struct lz_thread));
    return *slot;
}

static void lz_worker_fini(void *state, void *ws)
{
    (void)state;
    struct lz_thread *t = ws;
    if (t->d)
        LZ4F_freeDecompressionContext(t->d);
    if (t->c)
        LZ4F_freeCompressionContext(t->c);
    free(t);
}

/* Length of the frame descriptor incl. magic and HC, or 0 if in does not
 * start with a complete one. */
static size_t header_len(const uint8_t *in, size_t len)
{
    if (len < 7 || le32(in) != LZ4F_MAGIC)
        return 0;
    uint8_t flg = in[4];
    size_t n = 4 + 2 + ((flg & 0x08) ? 8 : 0) + ((flg & 0x01) ? 4 : 0) + 1;
    return len >= n ? n : 0;
}

static int lz_decompress(void *cap_state, const uint8_t *in, size_t in_len, samsa_out_t *out)
{
    struct lz_state *s = cap_state;
    struct lz_thread *t = thread_ctx(s);
    if (!t)
        return SAMSA_ENOMEM;
    if (!t->d && LZ4F_isError(LZ4F_createDecompressionContext(&t->d, LZ4F_VERSION)))
        return SAMSA_ENOMEM;
    size_t hl = header_len(in, in_len);
    if (!hl)
        return SAMSA_ECORRUPT;
    uint8_t hc = in[hl - 1];
    uint8_t fixed[4 + 2 + 8 + 4 + 1];
    const uint8_t *src = in;
    size_t src_len = in_len;
    bool legacy = false;
    if (hc != (uint8_t)(xxh32(in + 4, hl - 5, 0) >> 8)) {
        if (hc != (uint8_t)(xxh32(in, hl - 1, 0) >> 8))
            return SAMSA_ECORRUPT;
        /* Legacy HC: feed liblz4 a corrected copy of the descriptor, then
         * the rest of the frame from the caller's buffer. */
        memcpy(fixed, in, hl);
        fixed[hl - 1] = (uint8_t)(xxh32(in + 4, hl - 5, 0) >> 8);
        legacy = true;
    }
    LZ4F_resetDecompressionContext(t->d);
    size_t r = 1;
    if (legacy) {
        size_t consumed = hl, produced = 0;
        r = LZ4F_decompress(t->d, NULL, &produced, fixed, &consumed, NULL);
        if (LZ4F_isError(r) || consumed != hl)
            return SAMSA_ECORRUPT;
        src = in + hl;
        src_len = in_len - hl;
        s->api->metric_add(s->legacy_hc, 1);
    }
    size_t pos = 0;
    int rc = SAMSA_OK;
    while (r != 0) {
        if (pos >= src_len && r != 0) {
            rc = SAMSA_ECORRUPT; /* truncated frame */
            break;
        }
        size_t avail;
        uint8_t *p = out->reserve(out, 1, &avail);
        if (!p) {
            rc = SAMSA_ENOSPC;
            break;
        }
        size_t produced = avail, consumed = src_len - pos;
        r = LZ4F_decompress(t->d, p, &produced, src + pos, &consumed, NULL);
        if (LZ4F_isError(r)) {
            rc = SAMSA_ECORRUPT;
            break;
        }
        out->commit(out, produced);
        pos += consumed;
    }
    if (rc == SAMSA_OK && pos != src_len)
        rc = SAMSA_ECORRUPT; /* bytes after the frame */
    if (rc == SAMSA_OK)
        s->api->metric_add(s->in_batches, 1);
    return rc;
}

static int lz_compress(void *cap_state, int32_t level, const uint8_t *in, size_t in_len, samsa_out_t *out)
{
    struct lz_state *s = cap_state;
    struct lz_thread *t = thread_ctx(s);
    if (!t)
        return SAMSA_ENOMEM;
    if (!t->c && LZ4F_isError(LZ4F_createCompressionContext(&t->c, LZ4F_VERSION)))
        return SAMSA_ENOMEM;
    LZ4F_preferences_t prefs;
    memset(&prefs, 0, sizeof prefs);
    prefs.frameInfo.blockSizeID = LZ4F_max64KB;
    prefs.frameInfo.blockMode = LZ4F_blockIndependent;
    prefs.compressionLevel = level == SAMSA_CODEC_LEVEL_DEFAULT ? 9 : level;
    /* Streaming calls reuse the thread's context (and its HC tables);
     * the bound covers the footer, LZ4F_HEADER_SIZE_MAX the header. */
    size_t bound = LZ4F_HEADER_SIZE_MAX + LZ4F_compressBound(in_len, &prefs);
    size_t avail;
    uint8_t *p = out->reserve(out, bound, &avail);
    if (!p)
        return SAMSA_ENOSPC;
    size_t n = LZ4F_compressBegin(t->c, p, avail, &prefs);
    if (LZ4F_isError(n))
        return SAMSA_ENOMEM;
    size_t m = LZ4F_compressUpdate(t->c, p + n, avail - n, in, in_len, NULL);
    if (LZ4F_isError(m))
        return SAMSA_ENOMEM;
    n += m;
    m = LZ4F_compressEnd(t->c, p + n, avail - n, NULL);
    if (LZ4F_isError(m))
        return SAMSA_ENOMEM;
    n += m;
    out->commit(out, n);
    s->api->metric_add(s->out_batches, 1);
    return SAMSA_OK;
}

static const samsa_codec_t lz4_codec = {
    .hdr = {.struct_size = sizeof(samsa_codec_t), .kind = SAMSA_CAP_CODEC, .name = "lz4"},
    .id = SAMSA_CODEC_LZ4,
    .level_min = 1,
    .level_max = 17,
    .level_default = 9,
    .compress = lz_compress,
    .decompress = lz_decompress,
};

static int lz_init(samsa_host_t *host, const samsa_host_api_t *api, void **state, char *errstr, size_t errlen)
{
    (void)errstr;
    (void)errlen;
    g_state.host = host;
    g_state.api = api;
    g_state.in_batches = api->metric_register(host, "batches_decompressed", SAMSA_METRIC_COUNTER,
                                              "record batches decompressed");
    g_state.out_batches = api->metric_register(host, "batches_compressed", SAMSA_METRIC_COUNTER,
                                               "record batches compressed");
    g_state.legacy_hc = api->metric_register(host, "legacy_header_checksums", SAMSA_METRIC_COUNTER,
                                             "frames read with the pre-0.10 Kafka header checksum");
    *state = &g_state;
    return api->register_capability(host, &lz4_codec.hdr, &g_state);
}

static const samsa_plugin_info_t lz4_info = {
    SAMSA_PLUGIN_INFO_HEADER,
    .name = "codec-lz4",
    .version = SAMSA_MODULE_VERSION,
    .description = "LZ4 frame compression (Kafka codec 3), legacy header checksum read",
    .license = "Apache-2.0",
    .init = lz_init,
    .worker_fini = lz_worker_fini,
};

SAMSA_PLUGIN_DECLARE(codec_lz4, lz4_info)
