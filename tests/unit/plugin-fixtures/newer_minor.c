/* Fixture: built for a newer ABI minor than the host's. */
#include "fixture_common.h"

static const samsa_plugin_info_t info = {
    .magic = SAMSA_PLUGIN_MAGIC, .abi_major = SAMSA_ABI_MAJOR, .abi_minor = SAMSA_ABI_MINOR + 1,
    .struct_size = sizeof(samsa_plugin_info_t), .build_sig = SAMSA_BUILD_SIG,
    .name = "newer-minor", .init = fixture_ok_init,
};
SAMSA_PLUGIN_DECLARE(newer_minor, info)
