/* Fixture: registers a codec whose name ("fixture-xor") and id (6) the
 * abi-1-0 fixture already registered. */
#include "fixture_common.h"

static int nop_codec(void *s, const uint8_t *in, size_t n, samsa_out_t *out)
{
    (void)s;
    (void)in;
    (void)n;
    (void)out;
    return SAMSA_ECORRUPT;
}

static int nop_compress(void *s, int32_t level, const uint8_t *in, size_t n, samsa_out_t *out)
{
    (void)level;
    return nop_codec(s, in, n, out);
}

static const samsa_codec_t dup = {
    .hdr = {sizeof(samsa_codec_t), SAMSA_CAP_CODEC, "fixture-xor"},
    .id = 6,
    .compress = nop_compress,
    .decompress = nop_codec,
};

static int dup_init(samsa_host_t *host, const samsa_host_api_t *api, void **state, char *errstr, size_t errlen)
{
    (void)state;
    (void)errstr;
    (void)errlen;
    /* Ignores the result on purpose: the host must refuse the plugin
     * even when the plugin does not check. */
    api->register_capability(host, &dup.hdr, NULL);
    return SAMSA_OK;
}

static const samsa_plugin_info_t info = {SAMSA_PLUGIN_INFO_HEADER, .name = "dup-cap", .init = dup_init};
SAMSA_PLUGIN_DECLARE(dup_cap, info)
