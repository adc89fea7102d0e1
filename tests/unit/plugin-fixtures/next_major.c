/* Fixture: built for the next ABI major. */
#include "fixture_common.h"

static const samsa_plugin_info_t info = {
    .magic = SAMSA_PLUGIN_MAGIC, .abi_major = SAMSA_ABI_MAJOR + 1, .abi_minor = 0,
    .struct_size = sizeof(samsa_plugin_info_t), .build_sig = SAMSA_BUILD_SIG,
    .name = "next-major", .init = fixture_ok_init,
};
SAMSA_PLUGIN_DECLARE(next_major, info)
