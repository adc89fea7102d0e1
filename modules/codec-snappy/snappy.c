/* SPDX-License-Identifier: Apache-2.0
 *
 * codec-snappy: Kafka compression id 2 with libsnappy.
 *
 * Two framings meet on the wire:
 *  - xerial (snappy-java's SnappyOutputStream), which Java producers and
 *    Kafka brokers write: a 16-byte header, the magic 82 'SNAPPY' 00 then
 *    two big-endian int32 (version, minimum compatible version, both 1),
 *    followed by blocks, each a big-endian int32 length and one raw
 *    snappy block (of at most 32 KiB of input in snappy-java);
 *  - raw snappy, one block for the whole records, which librdkafka and
 *    kafkajs-snappy write.
 * Every Kafka client reads both (snappy-java falls back to raw when the
 * magic is absent), so this codec reads both and writes xerial, as a
 * Kafka broker's recompression does.
 * Compiled against include/samsa only. */
#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>

#include "samsa/codec.h"

#ifndef SAMSA_MODULE_VERSION
#define SAMSA_MODULE_VERSION "0"
#endif

#define XERIAL_HEADER_LEN 16
#define XERIAL_BLOCK 32768 /* snappy-java's default block size */

static const uint8_t xerial_magic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};

struct sn_state {
    samsa_host_t *host;
    const samsa_host_api_t *api;
    samsa_metric_t *in_batches, *out_batches;
};

static struct sn_state g_state;

static uint32_t rd32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static void wr32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* One raw snappy block into out. The declared length is checked against
 * the host's limit before anything is allocated. */
static int raw_block(const uint8_t *in, size_t len, samsa_out_t *out)
{
    size_t n;
    if (snappy_uncompressed_length((const char *)in, len, &n) != SNAPPY_OK)
        return SAMSA_ECORRUPT;
    if (n == 0)
        return snappy_validate_compressed_buffer((const char *)in, len) == SNAPPY_OK ? SAMSA_OK : SAMSA_ECORRUPT;
    size_t avail;
    uint8_t *p = out->reserve(out, n, &avail);
    if (!p)
        return SAMSA_ENOSPC;
    size_t got = n;
    if (snappy_uncompress((const char *)in, len, (char *)p, &got) != SNAPPY_OK || got != n)
        return SAMSA_ECORRUPT;
    out->commit(out, n);
    return SAMSA_OK;
}

static bool is_xerial(const uint8_t *in, size_t len)
{
    return len >= XERIAL_HEADER_LEN && memcmp(in, xerial_magic, sizeof xerial_magic) == 0;
}

static int sn_decompress(void *cap_state, const uint8_t *in, size_t in_len, samsa_out_t *out)
{
    struct sn_state *s = cap_state;
    int rc;
    if (is_xerial(in, in_len)) {
        size_t pos = XERIAL_HEADER_LEN;
        rc = SAMSA_OK;
        while (rc == SAMSA_OK && pos < in_len) {
            if (in_len - pos < 4)
                return SAMSA_ECORRUPT;
            uint32_t n = rd32(in + pos);
            pos += 4;
            if (n > in_len - pos)
                return SAMSA_ECORRUPT;
            if (n > 0)
                rc = raw_block(in + pos, n, out);
            pos += n;
        }
    } else {
        rc = raw_block(in, in_len, out);
    }
    if (rc == SAMSA_OK)
        s->api->metric_add(s->in_batches, 1);
    return rc;
}

static int sn_compress(void *cap_state, int32_t level, const uint8_t *in, size_t in_len, samsa_out_t *out)
{
    struct sn_state *s = cap_state;
    (void)level;
    size_t avail;
    uint8_t *p = out->reserve(out, XERIAL_HEADER_LEN, &avail);
    if (!p)
        return SAMSA_ENOSPC;
    memcpy(p, xerial_magic, sizeof xerial_magic);
    wr32(p + 8, 1);
    wr32(p + 12, 1);
    out->commit(out, XERIAL_HEADER_LEN);
    for (size_t pos = 0; pos < in_len;) {
        size_t n = in_len - pos < XERIAL_BLOCK ? in_len - pos : XERIAL_BLOCK;
        size_t max = snappy_max_compressed_length(n);
        p = out->reserve(out, 4 + max, &avail);
        if (!p)
            return SAMSA_ENOSPC;
        size_t got = max;
        if (snappy_compress((const char *)in + pos, n, (char *)p + 4, &got) != SNAPPY_OK)
            return SAMSA_ENOMEM;
        wr32(p, (uint32_t)got);
        out->commit(out, 4 + got);
        pos += n;
    }
    s->api->metric_add(s->out_batches, 1);
    return SAMSA_OK;
}

static const samsa_codec_t snappy_codec = {
    .hdr = {.struct_size = sizeof(samsa_codec_t), .kind = SAMSA_CAP_CODEC, .name = "snappy"},
    .id = SAMSA_CODEC_SNAPPY,
    .level_min = 0,
    .level_max = 0,
    .level_default = 0,
    .compress = sn_compress,
    .decompress = sn_decompress,
};

static int sn_init(samsa_host_t *host, const samsa_host_api_t *api, void **state, char *errstr, size_t errlen)
{
    (void)errstr;
    (void)errlen;
    g_state.host = host;
    g_state.api = api;
    g_state.in_batches = api->metric_register(host, "batches_decompressed", SAMSA_METRIC_COUNTER,
                                              "record batches decompressed");
    g_state.out_batches = api->metric_register(host, "batches_compressed", SAMSA_METRIC_COUNTER,
                                               "record batches compressed");
    *state = &g_state;
    return api->register_capability(host, &snappy_codec.hdr, &g_state);
}

static const samsa_plugin_info_t snappy_info = {
    SAMSA_PLUGIN_INFO_HEADER,
    .name = "codec-snappy",
    .version = SAMSA_MODULE_VERSION,
    .description = "snappy compression (Kafka codec 2), xerial and raw framing",
    .license = "Apache-2.0",
    .init = sn_init,
};

SAMSA_PLUGIN_DECLARE(codec_snappy, snappy_info)
