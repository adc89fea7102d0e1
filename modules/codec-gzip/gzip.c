/* SPDX-License-Identifier: Apache-2.0
 *
 * codec-gzip: Kafka compression id 1 with zlib.
 *
 * Kafka's Java client writes one gzip member (GZIPOutputStream) and
 * reads any number of concatenated members (GZIPInputStream); librdkafka
 * and kafkajs write one member. This codec reads concatenated members
 * (and, leniently, a zlib stream) and writes one gzip member.
 *
 * Levels are Kafka's compression.gzip.level: 1..9, or -1 for zlib's
 * default (6). Per-thread z_streams live in the host's worker slot, so
 * the 256 KiB deflate state is allocated once per thread, not per batch.
 * Compiled against include/samsa only. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "samsa/codec.h"

#ifndef SAMSA_MODULE_VERSION
#define SAMSA_MODULE_VERSION "0"
#endif

struct gz_state {
    samsa_host_t *host;
    const samsa_host_api_t *api;
    samsa_metric_t *in_batches, *out_batches;
};

/* Per-thread streams, created lazily. */
struct gz_thread {
    z_stream inf;
    bool inf_ok;
    z_stream def;
    int def_level;
    bool def_ok;
};

static struct gz_state g_state;

static struct gz_thread *thread_ctx(struct gz_state *s)
{
    void **slot = s->api->worker_local(s->host);
    if (!*slot)
        *slot = calloc(1, sizeof(struct gz_thread));
    return *slot;
}

static void gz_worker_fini(void *state, void *ws)
{
    (void)state;
    struct gz_thread *t = ws;
    if (t->inf_ok)
        inflateEnd(&t->inf);
    if (t->def_ok)
        deflateEnd(&t->def);
    free(t);
}

static int gz_decompress(void *cap_state, const uint8_t *in, size_t in_len, samsa_out_t *out)
{
    struct gz_state *s = cap_state;
    struct gz_thread *t = thread_ctx(s);
    if (!t)
        return SAMSA_ENOMEM;
    if (!t->inf_ok) {
        memset(&t->inf, 0, sizeof t->inf);
        /* 32 + 15: gzip or zlib header, detected; 32 KiB window. */
        if (inflateInit2(&t->inf, 32 + 15) != Z_OK)
            return SAMSA_ENOMEM;
        t->inf_ok = true;
    } else if (inflateReset(&t->inf) != Z_OK) {
        return SAMSA_ENOMEM;
    }
    z_stream *z = &t->inf;
    z->next_in = (Bytef *)in;
    z->avail_in = 0;
    size_t left = in_len;
    if (in_len == 0)
        return SAMSA_ECORRUPT;
    for (;;) {
        if (z->avail_in == 0 && left > 0) {
            uInt chunk = left > (1u << 30) ? (1u << 30) : (uInt)left;
            z->avail_in = chunk;
            left -= chunk;
        }
        size_t avail;
        uint8_t *p = out->reserve(out, 1, &avail);
        if (!p)
            return SAMSA_ENOSPC;
        if (avail > (1u << 30))
            avail = 1u << 30;
        z->next_out = p;
        z->avail_out = (uInt)avail;
        int rc = inflate(z, Z_NO_FLUSH);
        out->commit(out, avail - z->avail_out);
        if (rc == Z_STREAM_END) {
            if (z->avail_in == 0 && left == 0)
                break;
            /* Another gzip member follows (Java reads them all). */
            if (z->avail_in == 0) {
                uInt chunk = left > (1u << 30) ? (1u << 30) : (uInt)left;
                z->avail_in = chunk;
                left -= chunk;
            }
            if (z->avail_in < 2 || z->next_in[0] != 0x1f || z->next_in[1] != 0x8b)
                return SAMSA_ECORRUPT; /* trailing garbage */
            Bytef *next = z->next_in;
            uInt avail_in = z->avail_in;
            if (inflateReset(z) != Z_OK)
                return SAMSA_ENOMEM;
            z->next_in = next;
            z->avail_in = avail_in;
            continue;
        }
        if (rc == Z_BUF_ERROR) {
            /* No progress possible: out of input (truncated stream) or
             * out of output room (loop to reserve more). */
            if (z->avail_in == 0 && left == 0)
                return SAMSA_ECORRUPT;
            continue;
        }
        if (rc != Z_OK)
            return rc == Z_MEM_ERROR ? SAMSA_ENOMEM : SAMSA_ECORRUPT;
    }
    s->api->metric_add(s->in_batches, 1);
    return SAMSA_OK;
}

static int gz_compress(void *cap_state, int32_t level, const uint8_t *in, size_t in_len, samsa_out_t *out)
{
    struct gz_state *s = cap_state;
    struct gz_thread *t = thread_ctx(s);
    if (!t)
        return SAMSA_ENOMEM;
    int zl = (level == SAMSA_CODEC_LEVEL_DEFAULT || level < 0) ? Z_DEFAULT_COMPRESSION : level;
    if (t->def_ok && t->def_level != zl) {
        deflateEnd(&t->def);
        t->def_ok = false;
    }
    if (!t->def_ok) {
        memset(&t->def, 0, sizeof t->def);
        /* 16 + 15: a gzip wrapper, as Java's GZIPOutputStream writes. */
        if (deflateInit2(&t->def, zl, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
            return SAMSA_ENOMEM;
        t->def_ok = true;
        t->def_level = zl;
    } else if (deflateReset(&t->def) != Z_OK) {
        return SAMSA_ENOMEM;
    }
    z_stream *z = &t->def;
    if (in_len > (1u << 30))
        return SAMSA_ENOSPC; /* a batch is far smaller; keeps uInt safe */
    z->next_in = (Bytef *)in;
    z->avail_in = (uInt)in_len;
    size_t bound = deflateBound(z, (uLong)in_len);
    int rc;
    do {
        size_t avail;
        uint8_t *p = out->reserve(out, bound < 64 ? 64 : bound, &avail);
        if (!p)
            return SAMSA_ENOSPC;
        if (avail > (1u << 30))
            avail = 1u << 30;
        z->next_out = p;
        z->avail_out = (uInt)avail;
        rc = deflate(z, Z_FINISH);
        out->commit(out, avail - z->avail_out);
        if (rc == Z_STREAM_ERROR)
            return SAMSA_EINVAL;
        bound = 64;
    } while (rc != Z_STREAM_END);
    s->api->metric_add(s->out_batches, 1);
    return SAMSA_OK;
}

static const samsa_codec_t gzip_codec = {
    .hdr = {.struct_size = sizeof(samsa_codec_t), .kind = SAMSA_CAP_CODEC, .name = "gzip"},
    .id = SAMSA_CODEC_GZIP,
    .level_min = -1,
    .level_max = 9,
    .level_default = -1,
    .compress = gz_compress,
    .decompress = gz_decompress,
};

static int gz_init(samsa_host_t *host, const samsa_host_api_t *api, void **state, char *errstr, size_t errlen)
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
    return api->register_capability(host, &gzip_codec.hdr, &g_state);
}

static const samsa_plugin_info_t gzip_info = {
    SAMSA_PLUGIN_INFO_HEADER,
    .name = "codec-gzip",
    .version = SAMSA_MODULE_VERSION,
    .description = "gzip compression (Kafka codec 1) with zlib",
    .license = "Apache-2.0",
    .init = gz_init,
    .worker_fini = gz_worker_fini,
};

SAMSA_PLUGIN_DECLARE(codec_gzip, gzip_info)
