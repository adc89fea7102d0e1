/* Fixture: a descriptor with only the frozen fields (16 bytes), so the
 * 1.0 fields the host needs are missing. */
#include "fixture_common.h"

struct frozen_only {
    uint32_t magic;
    uint16_t abi_major, abi_minor;
    uint32_t struct_size;
    uint32_t build_sig;
};

static const struct frozen_only info = {SAMSA_PLUGIN_MAGIC, SAMSA_ABI_MAJOR, SAMSA_ABI_MINOR,
                                        sizeof(struct frozen_only), SAMSA_BUILD_SIG};

SAMSA_PLUGIN_EXPORT const samsa_plugin_info_t *samsa_plugin_entry(void)
{
    return (const samsa_plugin_info_t *)(const void *)&info;
}
