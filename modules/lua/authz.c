/* SPDX-License-Identifier: Apache-2.0
 *
 * The Lua authorizer (capability SAMSA_CAP_AUTHORIZER "lua"): for each
 * action the script's authorize(r) answers true (ALLOW), false (DENY)
 * or nil (DEFER: the next authorizer of the chain decides). r holds
 * principal, host, listener, security_protocol, client_id, api ("Produce"),
 * api_version, operation ("WRITE"), resource_type ("TOPIC"),
 * resource_name and pattern_type ("LITERAL": an action names one
 * resource; resource_name nil and pattern_type "ANY" when the host asks
 * whether the principal may act on at least one resource of the type,
 * Kafka's authorizeByResourceType). A script that sets r.cacheable = false asks the host not to
 * cache that decision. An error, the budget, the memory cap or another
 * return type denies the action (one rate-limited log line). */
#define _POSIX_C_SOURCE 200809L

#include <stddef.h>
#include <string.h>
#include <strings.h>

#include <lua5.4/lauxlib.h>

#include "module.h"

struct authz_call {
    const samsa_authz_ctx_t *ctx;
    const char *security_protocol;
    const samsa_authz_action_t *action;
    uint8_t result;
    bool uncacheable;
};

static void set_str(lua_State *L, const char *k, const char *v)
{
    lua_pushstring(L, v ? v : "");
    lua_setfield(L, -2, k);
}

static void authz_fn(lua_State *L, void *arg)
{
    struct authz_call *c = arg;
    const samsa_authz_ctx_t *ctx = c->ctx;
    const samsa_authz_action_t *a = c->action;
    lua_createtable(L, 0, 12);
    set_str(L, "principal", ctx->principal);
    set_str(L, "host", ctx->client_host);
    set_str(L, "listener", ctx->listener);
    set_str(L, "security_protocol", c->security_protocol);
    set_str(L, "client_id", ctx->client_id);
    const char *api = lua_api_name(ctx->api_key);
    if (api)
        set_str(L, "api", api);
    else {
        lua_pushfstring(L, "Unknown%d", (int)ctx->api_key);
        lua_setfield(L, -2, "api");
    }
    lua_pushinteger(L, ctx->api_version);
    lua_setfield(L, -2, "api_version");
    const char *op = lua_operation_name(a->operation);
    set_str(L, "operation", op ? op : "UNKNOWN");
    const char *rt = lua_resource_type_name(a->resource_type);
    set_str(L, "resource_type", rt ? rt : "UNKNOWN");
    if (a->resource_name)
        set_str(L, "resource_name", a->resource_name);
    set_str(L, "pattern_type", a->resource_name ? "LITERAL" : "ANY");

    sbx_push_entry(L);
    lua_pushvalue(L, -2); /* r stays at index 1 to read cacheable back */
    lua_call(L, 1, 1);
    switch (lua_type(L, -1)) {
    case LUA_TNIL: c->result = SAMSA_AUTHZ_DEFER; break;
    case LUA_TBOOLEAN: c->result = lua_toboolean(L, -1) ? SAMSA_AUTHZ_ALLOW : SAMSA_AUTHZ_DENY; break;
    default:
        lua_pushfstring(L, "authorize returned a %s (want true, false or nil)", luaL_typename(L, -1));
        sbx_error(L, lua_tostring(L, -1));
    }
    lua_getfield(L, 1, "cacheable");
    c->uncacheable = lua_isboolean(L, -1) && !lua_toboolean(L, -1);
}

/* listener.security.protocol.map's protocol for listener, else the
 * listener's own name when it is a protocol name (Kafka's default map). */
static const char *security_protocol(const struct lua_module *m, const char *listener)
{
    if (!listener)
        return NULL;
    for (size_t i = 0; m->map_names && m->map_names[i]; i++)
        if (strcasecmp(m->map_names[i], listener) == 0)
            return m->map_protos[i];
    static const char *const protos[] = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", NULL};
    for (int i = 0; protos[i]; i++)
        if (strcasecmp(protos[i], listener) == 0)
            return protos[i];
    return NULL;
}

static int lua_authorize(void *cap_state, const samsa_authz_ctx_t *ctx, const samsa_authz_action_t *actions,
                         size_t n, uint8_t *results)
{
    struct lua_module *m = cap_state;
    if (!ctx || (n && (!actions || !results)))
        return SAMSA_EINVAL;
    bool v12 = ctx->struct_size >= offsetof(samsa_authz_ctx_t, uncacheable) + sizeof(uint8_t *);
    uint8_t *uncacheable = v12 ? ctx->uncacheable : NULL;
    struct sbx *sb = script_sandbox(&m->authz);
    if (!sb) {
        /* No script: a misconfiguration (the chain names lua without
         * plugin.lua.authorizer.script), or this thread could not build
         * its sandbox (logged): the safe answer is no. */
        if (!script_active(&m->authz) && !m->warned_no_script) {
            m->warned_no_script = true; /* a benign race: at worst two lines */
            m->env.api->log(m->env.host, SAMSA_LOG_WARN,
                            "authorizer lua has no script (set plugin.lua.authorizer.script): denying");
        }
        for (size_t i = 0; i < n; i++) {
            results[i] = SAMSA_AUTHZ_DENY;
            if (uncacheable)
                uncacheable[i] = 1;
        }
        return SAMSA_OK;
    }
    struct authz_call c = {.ctx = ctx};
    c.security_protocol = v12 && ctx->security_protocol ? ctx->security_protocol : security_protocol(m, ctx->listener);
    for (size_t i = 0; i < n; i++) {
        c.action = &actions[i];
        c.result = SAMSA_AUTHZ_DENY;
        c.uncacheable = false;
        char err[512];
        if (sbx_run(sb, authz_fn, &c, err, sizeof err) < 0) {
            script_log_error(&m->authz, "authorize failed, denying", err);
            c.result = SAMSA_AUTHZ_DENY;
            c.uncacheable = true; /* a fixed script must not meet a cached failure */
        }
        results[i] = c.result;
        if (uncacheable)
            uncacheable[i] = c.uncacheable;
    }
    return SAMSA_OK;
}

const samsa_authorizer_t lua_authorizer = {
    .hdr = {.struct_size = sizeof(samsa_authorizer_t), .kind = SAMSA_CAP_AUTHORIZER, .name = "lua"},
    .authorize = lua_authorize,
};
