/* Fixture: an authorizer capability named "fixture-authz", to prove the
 * server's chain calls plugins (tests/unit/authz_test.c). It allows
 * User:plugin-allowed, denies User:plugin-denied and defers everyone
 * else; asked about any resource of a type (resource_name NULL) it
 * allows WRITE only, so the test can see the NULL arrive. */
#include <string.h>

#include "samsa/authz.h"
#include "samsa/plugin.h"

static int authorize(void *state, const samsa_authz_ctx_t *ctx, const samsa_authz_action_t *actions, size_t n,
                     uint8_t *results)
{
    (void)state;
    for (size_t i = 0; i < n; i++) {
        if (!actions[i].resource_name)
            results[i] = actions[i].operation == 4 /* WRITE */ ? SAMSA_AUTHZ_ALLOW : SAMSA_AUTHZ_DEFER;
        else if (!strcmp(ctx->principal, "User:plugin-allowed"))
            results[i] = SAMSA_AUTHZ_ALLOW;
        else if (!strcmp(ctx->principal, "User:plugin-denied"))
            results[i] = SAMSA_AUTHZ_DENY;
        else
            results[i] = SAMSA_AUTHZ_DEFER;
    }
    return SAMSA_OK;
}

static const samsa_authorizer_t authz = {
    .hdr = {sizeof(samsa_authorizer_t), SAMSA_CAP_AUTHORIZER, "fixture-authz"},
    .authorize = authorize,
};

static int init(samsa_host_t *host, const samsa_host_api_t *api, void **state, char *errstr, size_t errlen)
{
    (void)state;
    (void)errstr;
    (void)errlen;
    return api->register_capability(host, &authz.hdr, NULL);
}

static const samsa_plugin_info_t info = {SAMSA_PLUGIN_INFO_HEADER, .name = "fixture-authz", .version = "1.0-fixture", .init = init};
SAMSA_PLUGIN_DECLARE(fixture_authz, info)
