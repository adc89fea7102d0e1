/* Dynamic broker configs through the controller, the path configs.c's
 * AlterConfigs / IncrementalAlterConfigs take for BROKER resources: the
 * published config is never modified (a new one is swapped in), the
 * image's effective topic configs follow a changed broker default,
 * validate-only and refused changes leave everything as it was, the
 * legacy API replaces a whole layer, and the ConfigRecords bring it all
 * back after a restart, into a fresh config. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "broker.h"
#include "config.h"
#include "controller/controller.h"
#include "log/fsutil.h"
#include "proto/kerr.h"
#include "replica/partition.h"
#include "topic_config.h"
#include "node_fixture.h"

struct fx {
    char dir[256];
    struct samsa_config *cfg; /* the caller's config, as main.c holds it */
    struct broker b;
    struct controller *c;
    char msg[1024];
};

static void fx_open(struct fx *f)
{
    char err[512];
    f->b.cfg = f->cfg;
    f->b.partitions = fixture_preg_create(&f->b);
    f->c = fixture_controller_open(&f->b, f->dir, err, sizeof err);
    if (!f->c)
        fail_msg("controller_open: %s", err);
    f->b.controller = f->c;
}

static void fx_close(struct fx *f)
{
    controller_close(f->c, true);
    preg_destroy(f->b.partitions, true);
    f->c = NULL;
    f->b.partitions = NULL;
}

static struct samsa_config *new_cfg(const struct fx *f)
{
    struct samsa_config *cfg = config_new();
    char err[256];
    assert_int_equal(config_set(cfg, "log.dirs", f->dir, err, sizeof err), 0);
    return cfg;
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/samsa-configs-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    f->cfg = new_cfg(f);
    f->b.node_id = f->cfg->node_id;
    snprintf(f->b.cluster_id, sizeof f->b.cluster_id, "test-cluster");
    snprintf(f->b.advertised_host, sizeof f->b.advertised_host, "127.0.0.1");
    f->b.advertised_port = 9092;
    fx_open(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    if (f->c)
        fx_close(f);
    config_free(f->cfg);
    fs_remove_tree(f->dir);
    free(f);
    return 0;
}

static void create(struct fx *f, const char *name, const char *key, const char *value)
{
    struct topic_spec s;
    memset(&s, 0, sizeof s);
    s.name = KSTR(name);
    s.num_partitions = 1;
    s.replication_factor = 1;
    kstr_t k = key ? KSTR(key) : KSTR_NULL, v = value ? KSTR(value) : KSTR_NULL;
    if (key) {
        s.nconfigs = 1;
        s.config_keys = &k;
        s.config_values = &v;
    }
    assert_int_equal(controller_create_topic(f->c, &s, false, NULL, f->msg, sizeof f->msg, NULL), 0);
}

static int alter1(struct fx *f, bool cluster_default, bool replace, enum config_op op, const char *key,
                  const char *value, bool validate_only)
{
    struct config_alter ch = {key, op, value};
    return controller_alter_broker_configs(f->c, cluster_default, replace, &ch, 1, validate_only, f->msg,
                                           sizeof f->msg, NULL);
}

static int64_t topic_retention(struct fx *f, const char *name)
{
    struct mimage *m = controller_image(f->c);
    const struct mi_topic *t = mimage_topic(m, KSTR(name));
    assert_non_null(t);
    int64_t v = t->cfg->retention_ms;
    mimage_release(m);
    return v;
}

static const char *layer(struct fx *f, bool cluster_default, const char *key, char *out, size_t n)
{
    struct mimage *m = controller_image(f->c);
    const struct mi_config *c = cluster_default ? m->broker_default_configs : m->broker_configs;
    int32_t nc = cluster_default ? m->nbroker_default_configs : m->nbroker_configs;
    const char *r = NULL;
    for (int32_t i = 0; i < nc; i++)
        if (strcmp(c[i].key, key) == 0) {
            snprintf(out, n, "%s", c[i].value);
            r = out;
        }
    mimage_release(m);
    return r;
}

/* ------------------------------------------------------------------ */

static void test_cluster_default_reaches_topics(void **state)
{
    struct fx *f = *state;
    create(f, "plain", NULL, NULL);
    create(f, "own", "retention.ms", "5000");
    const struct samsa_config *before = f->b.cfg;
    assert_int_equal(topic_retention(f, "plain"), 604800000);

    assert_int_equal(alter1(f, true, false, CONFIG_OP_SET, "log.retention.ms", "60000", false), 0);
    const struct samsa_config *after = f->b.cfg;
    assert_ptr_not_equal(after, before); /* a new config was published ... */
    assert_int_equal(before->log_retention_ms, 604800000); /* ... the old one left as it was */
    assert_int_equal(after->log_retention_ms, 60000);
    assert_int_equal(topic_retention(f, "plain"), 60000);
    assert_int_equal(topic_retention(f, "own"), 5000);
    char buf[64];
    assert_string_equal(layer(f, true, "log.retention.ms", buf, sizeof buf), "60000");
    assert_null(layer(f, false, "log.retention.ms", buf, sizeof buf));

    /* per broker beats the cluster default */
    assert_int_equal(alter1(f, false, false, CONFIG_OP_SET, "log.retention.ms", "70000", false), 0);
    assert_int_equal(topic_retention(f, "plain"), 70000);
    assert_string_equal(layer(f, false, "log.retention.ms", buf, sizeof buf), "70000");
    assert_int_equal(alter1(f, false, false, CONFIG_OP_DELETE, "log.retention.ms", NULL, false), 0);
    assert_int_equal(topic_retention(f, "plain"), 60000);
    assert_null(layer(f, false, "log.retention.ms", buf, sizeof buf));
}

static void test_refused_and_validate_only_change_nothing(void **state)
{
    struct fx *f = *state;
    create(f, "t", NULL, NULL);
    const struct samsa_config *before = f->b.cfg;
    assert_int_equal(alter1(f, true, false, CONFIG_OP_SET, "log.retention.ms", "1000", true), 0);
    assert_ptr_equal(f->b.cfg, before);
    assert_int_equal(topic_retention(f, "t"), 604800000);

    assert_int_equal(alter1(f, true, false, CONFIG_OP_SET, "num.partitions", "3", false),
                     KERR_INVALID_REQUEST);
    assert_string_equal(f->msg, "Cannot update these configs dynamically: Set(num.partitions)");
    assert_int_equal(alter1(f, false, false, CONFIG_OP_APPEND, "log.retention.ms", "1", false),
                     KERR_INVALID_CONFIG);
    assert_string_equal(f->msg, "Config value append is not allowed for config key: log.retention.ms");
    assert_int_equal(alter1(f, false, false, CONFIG_OP_SET, "message.max.bytes", "-1", false),
                     KERR_INVALID_REQUEST);
    assert_ptr_equal(f->b.cfg, before);
    char buf[64];
    assert_null(layer(f, true, "num.partitions", buf, sizeof buf));
    assert_null(layer(f, false, "message.max.bytes", buf, sizeof buf));
}

static void test_legacy_replaces_the_layer(void **state)
{
    struct fx *f = *state;
    struct config_alter two[] = {{"log.retention.ms", CONFIG_OP_SET, "60000"},
                                 {"message.max.bytes", CONFIG_OP_SET, "2000"}};
    assert_int_equal(controller_alter_broker_configs(f->c, true, false, two, 2, false, f->msg, sizeof f->msg, NULL),
                     0);
    assert_int_equal(alter1(f, true, true, CONFIG_OP_SET, "log.cleaner.threads", "2", false), 0);
    char buf[64];
    assert_null(layer(f, true, "log.retention.ms", buf, sizeof buf));
    assert_null(layer(f, true, "message.max.bytes", buf, sizeof buf));
    assert_string_equal(layer(f, true, "log.cleaner.threads", buf, sizeof buf), "2");
    assert_int_equal(f->b.cfg->message_max_bytes, 1048588);
    assert_int_equal(f->b.cfg->log_cleaner_threads, 2);
    /* an empty legacy change clears it */
    assert_int_equal(controller_alter_broker_configs(f->c, true, true, NULL, 0, false, f->msg, sizeof f->msg, NULL),
                     0);
    assert_null(layer(f, true, "log.cleaner.threads", buf, sizeof buf));
    assert_int_equal(f->b.cfg->log_cleaner_threads, 1);
}

static void test_restart_replays_into_a_fresh_config(void **state)
{
    struct fx *f = *state;
    create(f, "plain", NULL, NULL);
    assert_int_equal(alter1(f, true, false, CONFIG_OP_SET, "log.retention.ms", "60000", false), 0);
    assert_int_equal(alter1(f, false, false, CONFIG_OP_SET, "message.max.bytes", "3000", false), 0);
    assert_int_equal(alter1(f, true, false, CONFIG_OP_SET, "log.cleanup.policy", "delete", false), 0);
    assert_int_equal(alter1(f, true, false, CONFIG_OP_APPEND, "log.cleanup.policy", "compact", false), 0);
    fx_close(f);
    /* the caller's config got the newest contents back */
    assert_ptr_equal(f->b.cfg, f->cfg);
    assert_int_equal(f->cfg->log_retention_ms, 60000);
    assert_int_equal(f->cfg->message_max_bytes, 3000);

    config_free(f->cfg);
    f->cfg = new_cfg(f);
    fx_open(f);
    assert_int_equal(f->b.cfg->log_retention_ms, 60000);
    assert_int_equal(f->b.cfg->message_max_bytes, 3000);
    assert_true(f->b.cfg->log_cleanup_delete && f->b.cfg->log_cleanup_compact);
    assert_int_equal(topic_retention(f, "plain"), 60000);
    struct config_entry e;
    assert_true(config_describe_key(f->b.cfg, "log.retention.ms", false, &e));
    assert_int_equal(e.source, CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER);
    assert_true(config_describe_key(f->b.cfg, "message.max.bytes", false, &e));
    assert_int_equal(e.source, CONFIG_SOURCE_DYNAMIC_BROKER);
    assert_true(config_describe_key(f->b.cfg, "log.cleanup.policy", true, &e));
    assert_string_equal(e.value, "delete,compact");

    /* deletions persist too */
    assert_int_equal(alter1(f, true, false, CONFIG_OP_DELETE, "log.retention.ms", NULL, false), 0);
    fx_close(f);
    config_free(f->cfg);
    f->cfg = new_cfg(f);
    fx_open(f);
    assert_int_equal(f->b.cfg->log_retention_ms, 604800000);
    assert_int_equal(topic_retention(f, "plain"), 604800000);
    assert_int_equal(f->b.cfg->message_max_bytes, 3000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cluster_default_reaches_topics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_and_validate_only_change_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_legacy_replaces_the_layer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_replays_into_a_fresh_config, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
