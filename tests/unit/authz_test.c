/* The authorizer chain (auth/authz.c): authorizer.class.name unset allows
 * everything; the built-in ACL authorizer under both of its names; a
 * plugin authorizer found by name (the fixture-authz fixture, loaded
 * from the plugin directory because no loaded plugin provides it), its
 * ALLOW / DENY / DEFER in either order with the ACL authorizer, the end
 * of the chain denying, resource_name NULL for "any resource of the
 * type"; super.users and allow.everyone.if.no.acl.found; an unknown name
 * refused with one line. No controller is set: the ACL link sees no
 * ACLs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "auth/authz.h"
#include "config.h"
#include "plugin/registry.h"

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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
