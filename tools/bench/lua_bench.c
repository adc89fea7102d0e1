/* lua_bench: the price of a Lua script on the request path, one thread,
 * through the ABI as the server calls it (the lua module loaded by the
 * plugin registry): authorization decisions per second of the tenant
 * policy (lua/authz/tenant.lua) next to a script that allows everything
 * (the cost of the call itself) and a C authorizer doing the tenant check
 * (the floor), then partitions per second of lua/partitioners/murmur2.lua
 * next to the C murmur2 samsactl uses. These are uncached numbers; the
 * tenant policy is measured once more through the authorizer chain
 * (authz_decide, authorizer.class.name=lua) with a connection's decision
 * cache, the path a request takes.
 * Usage: lua_bench MODULE_DIR LUA_DIR [seconds per phase, default 1] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "auth/authz.h"
#include "config.h"
#include "net/conn.h"
#include "plugin/registry.h"
#include "tools/samsactl/partitioner.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const struct plugin_cap *load(struct plugin_registry **reg, struct samsa_config **cfg, const char *dir,
                                     const char *key, const char *script, int kind)
{
    char err[768];
    *cfg = config_new();
    if (config_set(*cfg, key, script, err, sizeof err) < 0) {
        fprintf(stderr, "lua_bench: %s\n", err);
        exit(1);
    }
    *reg = plugin_registry_new(*cfg);
    if (plugin_load_name(*reg, dir, "lua", err, sizeof err) < 0) {
        fprintf(stderr, "lua_bench: %s\n", err);
        exit(1);
    }
    return plugin_find(*reg, kind, "lua");
}

static const char *const names[] = {"alice.orders", "alice.billing", "bob.orders", "carol.x"};

/* The tenant rule in C: the floor for (a). */
static int c_tenant(const char *principal, const char *name)
{
    const char *t = strncmp(principal, "User:", 5) == 0 ? principal + 5 : NULL;
    size_t n = t ? strlen(t) : 0;
    return t && strncmp(name, t, n) == 0 && name[n] == '.';
}

static double authz_rate(const struct plugin_cap *c, double secs)
{
    samsa_authz_ctx_t ctx = {.struct_size = sizeof ctx, .principal = "User:alice", .client_host = "127.0.0.1",
                             .listener = "SASL_PLAINTEXT", .client_id = "bench", .api_key = 0, .api_version = 9};
    long calls = 0;
    double t0 = now_s(), t;
    do {
        for (int i = 0; i < 1000; i++) {
            samsa_authz_action_t a = {4, 2, names[i & 3], true, true};
            uint8_t r;
            c->vt.authorizer.authorize(c->state, &ctx, &a, 1, &r);
        }
        calls += 1000;
    } while ((t = now_s()) - t0 < secs);
    return (double)calls / (t - t0);
}

/* The tenant policy through the chain, with a connection's cache. */
static double chain_rate(const char *dir, const char *script, double secs)
{
    char err[768];
    struct samsa_config *cfg = config_new();
    if (config_set(cfg, "plugin.lua.authorizer.script", script, err, sizeof err) < 0 ||
        config_set(cfg, "authorizer.class.name", "lua", err, sizeof err) < 0 ||
        config_set(cfg, "plugin.dir", dir, err, sizeof err) < 0) {
        fprintf(stderr, "lua_bench: %s\n", err);
        exit(1);
    }
    struct plugin_registry *reg = plugin_registry_new(cfg);
    if (authz_setup(cfg, reg, err, sizeof err) != 0) {
        fprintf(stderr, "lua_bench: %s\n", err);
        exit(1);
    }
    struct conn *c = xcalloc(1, sizeof *c);
    struct authz_subject sub = {"User:alice", "127.0.0.1", "SASL_PLAINTEXT", "bench", 0, 9};
    size_t lens[4];
    for (int i = 0; i < 4; i++)
        lens[i] = strlen(names[i]);
    long calls = 0, sink = 0;
    double t0 = now_s(), t;
    do {
        for (int i = 0; i < 1000; i++)
            sink += authz_decide(&sub, ACL_OP_WRITE, ACL_RES_TOPIC, names[i & 3], lens[i & 3], false, c);
        calls += 1000;
    } while ((t = now_s()) - t0 < secs);
    authz_conn_free(c);
    free(c);
    authz_reset();
    plugin_registry_free(reg);
    config_free(cfg);
    return sink == -1 ? 0 : (double)calls / (t - t0);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: lua_bench MODULE_DIR LUA_DIR [seconds]\n");
        return 2;
    }
    const char *dir = argv[1], *lua = argv[2];
    double secs = argc > 3 ? atof(argv[3]) : 1.0;
    char path[1024], allow[1024];
    snprintf(path, sizeof path, "%s/authz/tenant.lua", lua);
    snprintf(allow, sizeof allow, "/tmp/lua_bench_allow_%d.lua", (int)getpid());
    FILE *f = fopen(allow, "w");
    if (!f)
        return 1;
    fputs("function authorize(r) return true end\n", f);
    fclose(f);

    struct plugin_registry *reg;
    struct samsa_config *cfg;
    const struct plugin_cap *c =
        load(&reg, &cfg, dir, "plugin.lua.authorizer.script", path, SAMSA_CAP_AUTHORIZER);
    double tenant = authz_rate(c, secs);
    plugin_registry_free(reg);
    config_free(cfg);
    double cached = chain_rate(dir, path, secs);
    c = load(&reg, &cfg, dir, "plugin.lua.authorizer.script", allow, SAMSA_CAP_AUTHORIZER);
    double all = authz_rate(c, secs);
    plugin_registry_free(reg);
    config_free(cfg);
    remove(allow);
    long n = 0, hits = 0;
    double t0 = now_s(), t;
    do {
        for (int i = 0; i < 100000; i++)
            hits += c_tenant("User:alice", names[i & 3]);
        n += 100000;
    } while ((t = now_s()) - t0 < secs);
    double cfloor = (double)n / (t - t0);

    snprintf(path, sizeof path, "%s/partitioners/murmur2.lua", lua);
    c = load(&reg, &cfg, dir, "plugin.lua.partitioner.script", path, SAMSA_CAP_PARTITIONER);
    char key[32];
    long parts = 0;
    t0 = now_s();
    do {
        for (int i = 0; i < 1000; i++) {
            int len = snprintf(key, sizeof key, "key-%ld", parts + i);
            hits += c->vt.partitioner.partition_record(c->state, "t", (const uint8_t *)key, len, NULL, -1, 12);
        }
        parts += 1000;
    } while ((t = now_s()) - t0 < secs);
    double lpart = (double)parts / (t - t0);
    plugin_registry_free(reg);
    config_free(cfg);
    parts = 0;
    t0 = now_s();
    do {
        for (int i = 0; i < 100000; i++) {
            int len = snprintf(key, sizeof key, "key-%ld", parts + i);
            hits += partition_for_key(key, (size_t)len, 12);
        }
        parts += 100000;
    } while ((t = now_s()) - t0 < secs);
    double cpart = (double)parts / (t - t0);

    printf("lua_bench (one thread, %.1fs per phase)\n", secs);
    printf("  authorize, lua/authz/tenant.lua:     %10.0f decisions/s (%.2f us each)\n", tenant, 1e6 / tenant);
    printf("  the same through the chain, cached:  %10.0f decisions/s (%.3f us each)\n", cached, 1e6 / cached);
    printf("  authorize, allow-all Lua script:     %10.0f decisions/s (%.2f us each)\n", all, 1e6 / all);
    printf("  the tenant rule in C (floor):        %10.0f decisions/s\n", cfloor);
    printf("  partition, murmur2.lua:              %10.0f records/s (%.2f us each)\n", lpart, 1e6 / lpart);
    printf("  partition, C murmur2 (samsactl):     %10.0f records/s\n", cpart);
    return hits == -1; /* keep the loops */
}
