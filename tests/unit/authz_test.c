/* The authorizer chain (auth/authz.c): authorizer.class.name unset allows
 * everything; the built-in ACL authorizer under both of its names; a
 * plugin authorizer found by name (the fixture-authz fixture, loaded
 * from the plugin directory because no loaded plugin provides it), its
 * ALLOW / DENY / DEFER in either order with the ACL authorizer, the end
 * of the chain denying, resource_name NULL for "any resource of the
 * type"; super.users and allow.everyone.if.no.acl.found; an unknown name
 * refused with one line. Without an image source the ACL link sees no
 * ACLs; the decision cache test gives it images whose ACLs change; the
 * lua module's decisions go through the same cache (counted calls). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "auth/authz.h"
#include "config.h"
#include "controller/image.h"
#include "controller/image_build.h"
#include "net/conn.h"
#include "plugin/registry.h"
#include "proto/gen/access_control_entry_record.h"
#include "proto/gen/kmeta.h"
#include "util/buf.h"

static struct samsa_config *cfg;
static struct plugin_registry *reg;

static void setup_chain(const char *chain, const char *super_users, const char *allow_if_none)
{
    char err[512];
    cfg = config_new();
    assert_int_equal(config_set(cfg, "plugin.dir", FIXTURE_DIR, err, sizeof err), 0);
    if (chain)
        assert_int_equal(config_set(cfg, "authorizer.class.name", chain, err, sizeof err), 0);
    if (super_users)
        assert_int_equal(config_set(cfg, "super.users", super_users, err, sizeof err), 0);
    if (allow_if_none)
        assert_int_equal(config_set(cfg, "allow.everyone.if.no.acl.found", allow_if_none, err, sizeof err), 0);
    reg = plugin_registry_new(cfg);
    err[0] = 0;
    int rc = authz_setup(cfg, reg, err, sizeof err);
    if (rc)
        fail_msg("authz_setup: %s", err);
}

static void teardown_chain(void)
{
    authz_reset();
    plugin_registry_free(reg);
    config_free(cfg);
    reg = NULL;
    cfg = NULL;
}

static bool decide(const char *principal, enum acl_op op, const char *name)
{
    struct authz_subject s = {principal, "127.0.0.1", "SASL_PLAINTEXT", "test", 0, 9};
    return authz_decide(&s, op, ACL_RES_TOPIC, name, name ? strlen(name) : 0, false, NULL);
}

static void test_unset_allows_all(void **st)
{
    (void)st;
    setup_chain(NULL, NULL, NULL);
    assert_false(authz_enabled());
    assert_false(authz_acl_enabled());
    assert_true(decide("User:anyone", ACL_OP_WRITE, "t"));
    teardown_chain();
    setup_chain(" ", NULL, NULL); /* empty names are skipped */
    assert_false(authz_enabled());
    teardown_chain();
}

static void test_builtin_names(void **st)
{
    (void)st;
    const char *names[] = {"acl", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"};
    for (size_t i = 0; i < 2; i++) {
        setup_chain(names[i], "User:root ; User:ops", "false");
        assert_true(authz_enabled());
        assert_true(authz_acl_enabled());
        assert_true(decide("User:root", ACL_OP_WRITE, "t"));
        assert_true(decide("User:ops", ACL_OP_ALTER, "t"));
        assert_false(decide("User:alice", ACL_OP_WRITE, "t"));
        assert_false(decide("User:alice", ACL_OP_WRITE, NULL));
        teardown_chain();
    }
    setup_chain("acl", NULL, "true"); /* no ACLs anywhere: everyone */
    assert_true(decide("User:alice", ACL_OP_WRITE, "t"));
    assert_true(decide("User:alice", ACL_OP_WRITE, NULL));
    teardown_chain();
}

static void test_plugin_then_acl(void **st)
{
    (void)st;
    setup_chain("fixture-authz, acl", "User:root", "false");
    assert_non_null(plugin_find(reg, SAMSA_CAP_AUTHORIZER, "fixture-authz")); /* loaded by name */
    assert_true(decide("User:plugin-allowed", ACL_OP_WRITE, "t"));
    assert_false(decide("User:plugin-denied", ACL_OP_WRITE, "t"));
    assert_true(decide("User:root", ACL_OP_READ, "t"));  /* deferred, then super user */
    assert_false(decide("User:alice", ACL_OP_READ, "t")); /* deferred, then no ACL */
    /* any resource of the type: the plugin sees resource_name NULL */
    assert_true(decide("User:alice", ACL_OP_WRITE, NULL));
    assert_false(decide("User:alice", ACL_OP_READ, NULL));
    teardown_chain();
}

static void test_acl_then_plugin(void **st)
{
    (void)st;
    /* the ACL link never defers: the plugin after it is never asked */
    setup_chain("acl,fixture-authz", NULL, "true");
    assert_true(decide("User:plugin-denied", ACL_OP_WRITE, "t"));
    teardown_chain();
}

static void test_plugin_alone_end_denies(void **st)
{
    (void)st;
    setup_chain("fixture-authz", NULL, NULL);
    assert_true(authz_enabled());
    assert_false(authz_acl_enabled());
    assert_true(decide("User:plugin-allowed", ACL_OP_READ, "t"));
    assert_false(decide("User:someone", ACL_OP_READ, "t")); /* deferred by all: denied */
    teardown_chain();
}

/* An image with one ACL per (principal, op, topic) triple, or none. */
static struct mimage *image_with(const char *const *acl, size_t n)
{
    struct mi_draft *d = mi_draft_begin(NULL, NULL, 1);
    for (size_t i = 0; i < n; i += 3) {
        access_control_entry_record_t r;
        access_control_entry_record_init(&r);
        memset(r.id.b, 0, sizeof r.id.b);
        r.id.b[0] = (uint8_t)(i + 1);
        r.resource_type = ACL_RES_TOPIC;
        r.resource_name = KSTR(acl[i + 2]);
        r.pattern_type = 3;
        r.principal = KSTR(acl[i]);
        r.host = KSTR("*");
        r.operation = (int8_t)(!strcmp(acl[i + 1], "READ") ? ACL_OP_READ : ACL_OP_WRITE);
        r.permission_type = 3;
        char err[128];
        assert_int_equal(mi_draft_apply(d, (int64_t)i, KMETA_ACCESS_CONTROL_ENTRY_RECORD, 0, &r, err, sizeof err), 0);
    }
    return mi_draft_finish(d);
}

static struct mimage *current;
static struct mimage *current_image(void *arg)
{
    (void)arg;
    return current ? mimage_ref(current) : NULL;
}

static bool decide_on(struct conn *c, const char *principal, enum acl_op op, const char *name)
{
    struct authz_subject s = {principal, "127.0.0.1", "SASL_PLAINTEXT", "test", 0, 9};
    return authz_decide(&s, op, ACL_RES_TOPIC, name, strlen(name), false, c);
}

static void test_cache_follows_acl_generations(void **st)
{
    (void)st;
    setup_chain("acl", NULL, "false");
    authz_set_image_source(current_image, NULL);
    static const char *const one[] = {"User:alice", "READ", "t"};
    static const char *const two[] = {"User:alice", "READ", "t", "User:alice", "WRITE", "t"};
    struct mimage *a = image_with(one, 3), *b = image_with(NULL, 0), *c2 = image_with(two, 6);
    struct conn *c = xcalloc(1, sizeof *c);
    current = a;
    for (int i = 0; i < 3; i++) { /* the first decision is made, the others come from the cache */
        assert_true(decide_on(c, "User:alice", ACL_OP_READ, "t"));
        assert_true(decide_on(c, "User:alice", ACL_OP_DESCRIBE, "t"));
        assert_false(decide_on(c, "User:alice", ACL_OP_WRITE, "t"));
        assert_false(decide_on(c, "User:bob", ACL_OP_READ, "t"));
    }
    assert_non_null(c->authz_cache);
    current = b; /* every ACL gone */
    assert_false(decide_on(c, "User:alice", ACL_OP_READ, "t"));
    current = c2; /* a WRITE added */
    assert_true(decide_on(c, "User:alice", ACL_OP_WRITE, "t"));
    assert_true(decide_on(c, "User:alice", ACL_OP_READ, "t"));
    current = a;
    assert_false(decide_on(c, "User:alice", ACL_OP_WRITE, "t"));
    current = NULL;
    authz_conn_free(c);
    assert_null(c->authz_cache);
    free(c);
    mimage_release(a);
    mimage_release(b);
    mimage_release(c2);
    teardown_chain();
}

/* The decisions of a plugin authorizer go through the connection's
 * cache: the lua module with a script that counts its calls (a
 * resource "calls-N" asks, uncacheably, whether this is call N), so the
 * test sees exactly how often the script ran. Kept: a decision for the
 * same action, API and client; not kept: r.cacheable = false, no
 * connection. Dropped: a reload (the plugins' generation), an ACL
 * change. */
static const char *const COUNTING =
    "calls = 0\n"
    "function authorize(r)\n"
    "  calls = calls + 1\n"
    "  local want = r.resource_name and tonumber(r.resource_name:match('^calls%-(%d+)$'))\n"
    "  if want then r.cacheable = false; return calls == want end\n"
    "  if r.resource_name == 'window' then r.cacheable = false end\n"
    "  return r.resource_name ~= 'denied'\n"
    "end\n";

static bool decide_api(struct conn *c, int16_t api, const char *name)
{
    struct authz_subject s = {"User:alice", "127.0.0.1", "SASL_PLAINTEXT", "test", api, 9};
    return authz_decide(&s, ACL_OP_READ, ACL_RES_TOPIC, name, strlen(name), false, c);
}

static bool calls_were(struct conn *c, int n)
{
    char name[32];
    snprintf(name, sizeof name, "calls-%d", n);
    return decide_api(c, 0, name);
}

static void test_plugin_decisions_cached(void **st)
{
    (void)st;
    if (access(MODULE_DIR "/lua.so", F_OK) != 0)
        skip();
    char path[] = "/tmp/authz-test-XXXXXX.lua", err[512];
    int fd = mkstemps(path, 4);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, COUNTING, strlen(COUNTING)), (ssize_t)strlen(COUNTING));
    close(fd);
    cfg = config_new();
    assert_int_equal(config_set(cfg, "plugin.dir", MODULE_DIR, err, sizeof err), 0);
    assert_int_equal(config_set(cfg, "authorizer.class.name", "lua", err, sizeof err), 0);
    assert_int_equal(config_set(cfg, "plugin.lua.authorizer.script", path, err, sizeof err), 0);
    reg = plugin_registry_new(cfg);
    if (authz_setup(cfg, reg, err, sizeof err) != 0)
        fail_msg("authz_setup: %s", err);
    struct conn *c = xcalloc(1, sizeof *c);
    for (int i = 0; i < 5; i++) {
        assert_true(decide_api(c, 0, "t"));
        assert_false(decide_api(c, 0, "denied"));
    }
    assert_true(calls_were(c, 3)); /* t, denied, this one */
    /* uncacheable decisions: asked every time */
    for (int i = 0; i < 5; i++)
        assert_true(decide_api(c, 0, "window"));
    assert_true(calls_were(c, 9));
    /* no connection, no cache */
    for (int i = 0; i < 3; i++)
        assert_true(decide_api(NULL, 0, "t"));
    assert_true(calls_were(c, 13));
    /* another API (scripts see r.api): asked once */
    assert_true(decide_api(c, 3, "t"));
    assert_true(decide_api(c, 3, "t"));
    assert_true(calls_were(c, 15));
    /* a reload (a new state: calls starts over) drops what was cached */
    assert_int_equal(plugin_registry_reload(reg), 0);
    assert_true(decide_api(c, 0, "t"));
    assert_true(decide_api(c, 0, "t"));
    assert_true(calls_were(c, 2));
    /* so does an ACL change */
    static const char *const one[] = {"User:bob", "READ", "x"};
    struct mimage *a = image_with(one, 3);
    current = a;
    authz_set_image_source(current_image, NULL);
    assert_true(decide_api(c, 0, "t"));
    assert_true(decide_api(c, 0, "t"));
    assert_true(calls_were(c, 4));
    current = NULL;
    authz_conn_free(c);
    free(c);
    mimage_release(a);
    teardown_chain();
    unlink(path);
}

static void test_unknown_refused(void **st)
{
    (void)st;
    char err[512];
    cfg = config_new();
    assert_int_equal(config_set(cfg, "plugin.dir", FIXTURE_DIR, err, sizeof err), 0);
    assert_int_equal(config_set(cfg, "authorizer.class.name", "acl,nope", err, sizeof err), 0);
    reg = plugin_registry_new(cfg);
    err[0] = 0;
    assert_int_equal(authz_setup(cfg, reg, err, sizeof err), -1);
    assert_non_null(strstr(err, "config 'authorizer.class.name': no authorizer 'nope'"));
    assert_null(strchr(err, '\n'));
    assert_false(authz_enabled());
    teardown_chain();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unset_allows_all),
        cmocka_unit_test(test_builtin_names),
        cmocka_unit_test(test_plugin_then_acl),
        cmocka_unit_test(test_acl_then_plugin),
        cmocka_unit_test(test_plugin_alone_end_denies),
        cmocka_unit_test(test_unknown_refused),
        cmocka_unit_test(test_cache_follows_acl_generations),
        cmocka_unit_test(test_plugin_decisions_cached),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
