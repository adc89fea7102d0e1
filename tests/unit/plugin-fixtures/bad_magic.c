/* Fixture: the descriptor's magic is wrong. */
#include "fixture_common.h"

static const samsa_plugin_info_t info = {
    .magic = 0xdeadbeefu, .abi_major = SAMSA_ABI_MAJOR, .abi_minor = SAMSA_ABI_MINOR,
    .struct_size = sizeof(samsa_plugin_info_t), .build_sig = SAMSA_BUILD_SIG,
    .name = "bad-magic", .init = fixture_ok_init,
};
SAMSA_PLUGIN_DECLARE(bad_magic, info)
