/* Fixture: init refuses with its own reason. */
#include "fixture_common.h"

static int fail_init(samsa_host_t *host, const samsa_host_api_t *api, void **state, char *errstr, size_t errlen)
{
    (void)host;
    (void)api;
    (void)state;
    strncpy(errstr, "plugin.init-fail.token is not set", errlen - 1);
    errstr[errlen - 1] = '\0';
    return SAMSA_EINVAL;
}

static const samsa_plugin_info_t info = {SAMSA_PLUGIN_INFO_HEADER, .name = "init-fail", .init = fail_init};
SAMSA_PLUGIN_DECLARE(init_fail, info)
