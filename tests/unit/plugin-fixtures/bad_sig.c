/* Fixture: right versions, wrong build signature (as a plugin built for
 * another pointer size or byte order would carry). */
#include "fixture_common.h"

static const samsa_plugin_info_t info = {
    .magic = SAMSA_PLUGIN_MAGIC, .abi_major = SAMSA_ABI_MAJOR, .abi_minor = SAMSA_ABI_MINOR,
    .struct_size = sizeof(samsa_plugin_info_t), .build_sig = SAMSA_BUILD_SIG ^ 0x0c,
    .name = "bad-sig", .init = fixture_ok_init,
};
SAMSA_PLUGIN_DECLARE(bad_sig, info)
