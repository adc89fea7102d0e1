/* SPDX-License-Identifier: Apache-2.0
 *
 * codec-zstd: Kafka compression id 4 (KIP-110) with libzstd.
 *
 * Java clients (zstd-jni's streaming output) write frames without a
 * content size; librdkafka writes one frame with it. This codec reads
 * any sequence of frames in streaming mode, so an absent or lying
 * content size cannot make it allocate past the host's bound, and writes
 * one frame with the content size.
 *
 * Levels are Kafka's compression.zstd.level (ZSTD_minCLevel()..22,
 * default 3). One compression and one decompression context per thread.
 * Compiled against include/samsa only. */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "samsa/codec.h"

#ifndef SAMSA_MODULE_VERSION
#define SAMSA_MODULE_VERSION "0"
#endif

struct zs_state {
    samsa_host_t *host;
    const samsa_host_api_t *api;
    samsa_metric_t *in_batches, *out_batches;
};

struct zs_thread {
    ZSTD_DCtx *d;
    ZSTD_CCtx *c;
};

static struct zs_state g_state;

static struct zs_thread *thread_ctx(struct zs_state *s)
{
    void **slot = s->api->worker_local(s->host);
    if (!*slot)
        *slot = calloc(1, sizeof(struct zs_thread));
    return *slot;
}

static void zs_worker_fini(void *state, void *ws)
{
    (void)state;
    struct zs_thread *t = ws;
    ZSTD_freeDCtx(t->d);
    ZSTD_freeCCtx(t->c);
    free(t);
}

static int zs_decompress(void *cap_state, const uint8_t *in, size_t in_len, samsa_out_t *out)
{
    struct zs_state *s = cap_state;
    struct zs_thread *t = thread_ctx(s);
    if (!t)
        return SAMSA_ENOMEM;
    if (!t->d && !(t->d = ZSTD_createDCtx()))
        return SAMSA_ENOMEM;
    ZSTD_DCtx_reset(t->d, ZSTD_reset_session_only);
    if (in_len == 0)
        return SAMSA_ECORRUPT;
    ZSTD_inBuffer ib = {in, in_len, 0};
    size_t r = 1;
    while (ib.pos < ib.size || r != 0) {
        size_t avail;
        uint8_t *p = out->reserve(out, 1, &avail);
        if (!p)
            return SAMSA_ENOSPC;
        ZSTD_outBuffer ob = {p, avail, 0};
        r = ZSTD_decompressStream(t->d, &ob, &ib);
        if (ZSTD_isError(r))
            return ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation ? SAMSA_ENOMEM : SAMSA_ECORRUPT;
        out->commit(out, ob.pos);
        /* Input used up, frame unfinished, output room left: truncated. */
        if (r != 0 && ib.pos == ib.size && ob.pos < ob.size)
            return SAMSA_ECORRUPT;
    }
    s->api->metric_add(s->in_batches, 1);
    return SAMSA_OK;
}

static int zs_compress(void *cap_state, int32_t level, const uint8_t *in, size_t in_len, samsa_out_t *out)
{
    struct zs_state *s = cap_state;
    struct zs_thread *t = thread_ctx(s);
    if (!t)
        return SAMSA_ENOMEM;
    if (!t->c && !(t->c = ZSTD_createCCtx()))
        return SAMSA_ENOMEM;
    ZSTD_CCtx_reset(t->c, ZSTD_reset_session_and_parameters);
    if (ZSTD_isError(ZSTD_CCtx_setParameter(t->c, ZSTD_c_compressionLevel,
                                            level == SAMSA_CODEC_LEVEL_DEFAULT ? 3 : level)))
        return SAMSA_EINVAL;
    size_t bound = ZSTD_compressBound(in_len);
    size_t avail;
    uint8_t *p = out->reserve(out, bound, &avail);
    if (!p)
        return SAMSA_ENOSPC;
    size_t n = ZSTD_compress2(t->c, p, avail, in, in_len);
    if (ZSTD_isError(n))
        return SAMSA_ENOMEM;
    out->commit(out, n);
    s->api->metric_add(s->out_batches, 1);
    return SAMSA_OK;
}

static samsa_codec_t zstd_codec = {
    .hdr = {.struct_size = sizeof(samsa_codec_t), .kind = SAMSA_CAP_CODEC, .name = "zstd"},
    .id = SAMSA_CODEC_ZSTD,
    .level_min = -131072, /* replaced by ZSTD_minCLevel() at init */
    .level_max = 22,
    .level_default = 3,
    .compress = zs_compress,
    .decompress = zs_decompress,
};

static int zs_init(samsa_host_t *host, const samsa_host_api_t *api, void **state, char *errstr, size_t errlen)
{
    (void)errstr;
    (void)errlen;
    g_state.host = host;
    g_state.api = api;
    g_state.in_batches = api->metric_register(host, "batches_decompressed", SAMSA_METRIC_COUNTER,
                                              "record batches decompressed");
    g_state.out_batches = api->metric_register(host, "batches_compressed", SAMSA_METRIC_COUNTER,
                                               "record batches compressed");
    /* The host copies the vtable at registration: setting this before is
     * enough, and the library in use decides the range. */
    zstd_codec.level_min = ZSTD_minCLevel();
    zstd_codec.level_max = ZSTD_maxCLevel();
    *state = &g_state;
    return api->register_capability(host, &zstd_codec.hdr, &g_state);
}

static const samsa_plugin_info_t zstd_info = {
    SAMSA_PLUGIN_INFO_HEADER,
    .name = "codec-zstd",
    .version = SAMSA_MODULE_VERSION,
    .description = "zstd compression (Kafka codec 4)",
    .license = "Apache-2.0",
    .init = zs_init,
    .worker_fini = zs_worker_fini,
};

SAMSA_PLUGIN_DECLARE(codec_zstd, zstd_info)
