/* Broker config, topic config, properties syntax and meta.properties. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "log/meta_properties.h"
#include "topic_config.h"
#include "util/slog.h"
#include "util/uuid.h"

/* ------------------------------------------------------------------ */
/* Helpers                                                             */

static char tmpdir[64];

static int setup_dir(void **state)
{
    (void)state;
    strcpy(tmpdir, "/tmp/samsa-config-test-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    slog_set_level(SLOG_ERROR); /* keep the expected WARN lines out of test output */
    return 0;
}

static int teardown_dir(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Writes text to a file in tmpdir and returns its path (static buffer). */
static const char *write_file(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* Expects config_set to fail with exactly msg. */
static void expect_set_error(const char *key, const char *value, const char *msg)
{
    struct samsa_config *c = config_new();
    char err[512] = "";
    assert_int_equal(config_set(c, key, value, err, sizeof err), -1);
    assert_string_equal(err, msg);
    config_free(c);
}

/* Loads a config from text; expects config_validate to give msg (NULL: ok). */
static void expect_validate(const char *text, const char *msg)
{
    struct samsa_config *c = config_new();
    char err[1024] = "";
    const char *path = write_file("v.properties", text);
    assert_int_equal(config_load_file(c, path, err, sizeof err), 0);
    int rc = config_validate(c, err, sizeof err);
    if (msg) {
        assert_int_equal(rc, -1);
        assert_string_equal(err, msg);
    } else {
        if (rc != 0)
            fail_msg("unexpected validation error: %s", err);
    }
    config_free(c);
}

/* ------------------------------------------------------------------ */
/* The tables                                                          */

static void test_enum_numbers(void **state)
{
    (void)state;
    /* DescribeConfigs wire values. */
    assert_int_equal(CONFIG_SOURCE_UNKNOWN, 0);
    assert_int_equal(CONFIG_SOURCE_DYNAMIC_TOPIC, 1);
    assert_int_equal(CONFIG_SOURCE_DYNAMIC_BROKER, 2);
    assert_int_equal(CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER, 3);
    assert_int_equal(CONFIG_SOURCE_STATIC_BROKER, 4);
    assert_int_equal(CONFIG_SOURCE_DEFAULT, 5);
    assert_int_equal(CONFIG_SOURCE_DYNAMIC_BROKER_LOGGER, 6);
    assert_int_equal(CONFIG_TYPE_BOOLEAN, 1);
    assert_int_equal(CONFIG_TYPE_STRING, 2);
    assert_int_equal(CONFIG_TYPE_INT, 3);
    assert_int_equal(CONFIG_TYPE_SHORT, 4);
    assert_int_equal(CONFIG_TYPE_LONG, 5);
    assert_int_equal(CONFIG_TYPE_DOUBLE, 6);
    assert_int_equal(CONFIG_TYPE_LIST, 7);
    assert_int_equal(CONFIG_TYPE_CLASS, 8);
    assert_int_equal(CONFIG_TYPE_PASSWORD, 9);
}

static void check_def_default(const struct config_def *d)
{
    assert_non_null(d->doc);
    assert_true(d->doc[0] != 0);
    assert_true(d->type >= CONFIG_TYPE_BOOLEAN && d->type <= CONFIG_TYPE_PASSWORD);
    if (!d->dflt)
        return;
    char why[256] = "", *norm = NULL;
    if (config_def_check(d, d->dflt, &norm, why, sizeof why) != 0)
        fail_msg("default '%s' of %s fails its own check: %s", d->dflt, d->name, why);
    /* Defaults are written as DescribeConfigs reports them. */
    assert_string_equal(norm, d->dflt);
    free(norm);
}

static void test_every_default_passes_its_validator(void **state)
{
    (void)state;
    for (size_t i = 0; i < config_defs_count; i++) {
        check_def_default(&config_defs[i]);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(config_defs[i].name, config_defs[j].name))
                fail_msg("%s defined twice", config_defs[i].name);
    }
    for (size_t i = 0; i < topic_config_defs_count; i++) {
        const struct topic_config_def *t = &topic_config_defs[i];
        check_def_default(&t->def);
        for (size_t k = 0; t->synonyms && t->synonyms[k]; k++)
            if (!config_def_find(t->synonyms[k]))
                fail_msg("synonym %s of %s is not a broker config", t->synonyms[k], t->def.name);
    }
}

/* Brace expansion of one README pattern ("a.{b,c}.d"), then fnmatch. */
static bool pattern_matches(const char *pat, const char *key)
{
    const char *open = strchr(pat, '{');
    if (!open)
        return fnmatch(pat, key, 0) == 0;
    const char *close = strchr(open, '}');
    if (!close)
        return false;
    for (const char *alt = open + 1; alt < close;) {
        const char *end = alt;
        while (end < close && *end != ',')
            end++;
        char buf[256];
        int n = snprintf(buf, sizeof buf, "%.*s%.*s%s", (int)(open - pat), pat, (int)(end - alt), alt, close + 1);
        if (n > 0 && (size_t)n < sizeof buf && pattern_matches(buf, key))
            return true;
        alt = end + 1;
    }
    return false;
}

/* The key patterns of the README's "Configs accepted without effect yet"
 * table (its first column's `key` names), at most max. */
static size_t readme_no_effect_patterns(char pats[][128], size_t max)
{
    const char *srcdir = getenv("srcdir");
    char path[512];
    snprintf(path, sizeof path, "%s/README.md", srcdir ? srcdir : ".");
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[4096];
    bool in = false;
    size_t npats = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "### Configs accepted without effect yet", 39)) {
            in = true;
            continue;
        }
        if (in && !strncmp(line, "## ", 3))
            break;
        if (!in || line[0] != '|')
            continue;
        char *end = strchr(line + 1, '|');
        for (char *q = line + 1; end && q < end;) {
            char *a = strchr(q, '`');
            if (!a || a > end)
                break;
            char *b = strchr(a + 1, '`');
            if (!b || b > end)
                break;
            if (npats < max && (size_t)(b - a - 1) < sizeof pats[0]) {
                memcpy(pats[npats], a + 1, (size_t)(b - a - 1));
                pats[npats++][b - a - 1] = 0;
            }
            q = b + 1;
        }
    }
    fclose(f);
    return npats;
}

/* Every key samsa accepts without acting on it is named in the README's
 * "Configs accepted without effect yet" table, and every name there is
 * such a key: the operator's list of what does nothing stays true. */
static void test_no_effect_keys_are_documented(void **state)
{
    (void)state;
    char pats[128][128];
    size_t npats = readme_no_effect_patterns(pats, 128);
    assert_true(npats > 10);
    bool used[128] = {false};
    for (size_t i = 0; i < config_defs_count; i++) {
        const struct config_def *d = &config_defs[i];
        if (!(d->flags & CONFIG_F_NO_EFFECT))
            continue;
        bool named = false;
        for (size_t k = 0; k < npats; k++)
            if (pattern_matches(pats[k], d->name))
                named = used[k] = true;
        if (!named)
            fail_msg("%s has no effect but the README's table does not name it", d->name);
    }
    for (size_t k = 0; k < npats; k++)
        if (!used[k])
            fail_msg("the README's table names %s, which matches no key without effect", pats[k]);
}

/* Loads one "key=value" file; 0 or -1 with err, and whether a WARN line
 * naming the key went to stderr. */
static int load_one(const char *key, const char *value, char *err, size_t errlen, bool *warned)
{
    char text[512];
    snprintf(text, sizeof text, "%s=%s\n", key, value);
    const char *path = write_file("one.conf", text);
    char logpath[300];
    snprintf(logpath, sizeof logpath, "%s/stderr.txt", tmpdir);
    fflush(stderr);
    int saved = dup(2);
    FILE *lf = fopen(logpath, "w+");
    assert_non_null(lf);
    dup2(fileno(lf), 2);
    enum slog_level lvl = slog_get_level();
    slog_set_level(SLOG_WARN);
    struct samsa_config *c = config_new();
    int rc = config_load_file(c, path, err, errlen);
    config_free(c);
    slog_set_level(lvl);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char line[1024];
    char quoted[300];
    snprintf(quoted, sizeof quoted, "'%s'", key);
    *warned = false;
    rewind(lf);
    while (fgets(line, sizeof line, lf))
        if (strstr(line, "WARN") && strstr(line, quoted))
            *warned = true;
    fclose(lf);
    return rc;
}

/* Kafka's documented broker keys (tests/unit/kafka_broker_keys.txt) and
 * every key of etc/samsa.conf: each is in samsa's table, and then
 * loads (warned by name when it has no effect, which the README's table
 * names), or is refused by name with the reason samsa does not support
 * it. None is accepted silently, none is an "unknown config". */
static void test_kafka_broker_keys(void **state)
{
    (void)state;
    char pats[128][128];
    size_t npats = readme_no_effect_patterns(pats, 128);
    const char *srcdir = getenv("srcdir");
    char path[512];
    size_t checked = 0, refused = 0;
    for (int file = 0; file < 2; file++) {
        snprintf(path, sizeof path, "%s/%s", srcdir ? srcdir : ".",
                 file == 0 ? "tests/unit/kafka_broker_keys.txt" : "etc/samsa.conf");
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        char line[512];
        while (fgets(line, sizeof line, f)) {
            char *k = line;
            while (*k == ' ' || *k == '\t')
                k++;
            if (*k == '#' || *k == '!' || *k == '\n' || *k == 0)
                continue;
            size_t n = strcspn(k, "=:\r\n \t");
            k[n] = 0;
            checked++;
            const struct config_def *d = config_def_find(k);
            char err[512] = "";
            bool warned;
            if (d) {
                /* its default, or a value its type takes */
                const char *v = d->dflt ? d->dflt : "";
                if (!strcmp(k, "node.id") || !strcmp(k, "broker.id"))
                    v = "1";
                int rc = load_one(k, v, err, sizeof err, &warned);
                if (rc != 0) {
                    /* a key whose value needs other keys (listeners, ...) is still named */
                    if (!strstr(err, k))
                        fail_msg("%s=%s: refused without naming the key: %s", k, v, err);
                    continue;
                }
                bool ne = d->flags & CONFIG_F_NO_EFFECT;
                if (ne != warned)
                    fail_msg("%s: %s", k, ne ? "has no effect but loads without a warning naming it"
                                             : "has an effect but loads with a no-effect warning");
                if (ne) {
                    bool named = false;
                    for (size_t p = 0; p < npats; p++)
                        named |= pattern_matches(pats[p], k);
                    if (!named)
                        fail_msg("%s has no effect but the README's table does not name it", k);
                }
                continue;
            }
            if (file == 1)
                fail_msg("etc/samsa.conf sets %s, which is not a samsa config", k);
            int rc = load_one(k, "1", err, sizeof err, &warned);
            char want[700];
            snprintf(want, sizeof want, "config '%s': a Kafka broker config samsa does not support: ", k);
            if (rc == 0)
                fail_msg("Kafka's %s is accepted silently", k);
            if (!strstr(err, want) || strchr(err, '\n'))
                fail_msg("Kafka's %s is not refused with its reason: %s", k, err);
            refused++;
        }
        fclose(f);
    }
    assert_true(checked > 300);
    assert_true(refused > 0);
}

static void test_defaults(void **state)
{
    (void)state;
    struct samsa_config *c = config_new();
    char err[512] = "";
    if (config_validate(c, err, sizeof err) != 0)
        fail_msg("defaults do not validate: %s", err);
    assert_int_equal(c->node_id, 1);
    assert_true(c->role_broker);
    assert_true(c->role_controller);
    assert_null(c->broker_rack);
    assert_int_equal(c->n_listeners, 2);
    assert_string_equal(c->listeners[0].name, "PLAINTEXT");
    assert_string_equal(c->listeners[0].host, "127.0.0.1");
    assert_int_equal(c->listeners[0].port, 9092);
    assert_int_equal(c->listeners[0].protocol, SECURITY_PLAINTEXT);
    assert_false(c->listeners[0].is_controller);
    assert_string_equal(c->listeners[1].name, "CONTROLLER");
    assert_int_equal(c->listeners[1].port, 9093);
    /* The default protocol map has no CONTROLLER: KRaft maps it to PLAINTEXT. */
    assert_int_equal(c->listeners[1].protocol, SECURITY_PLAINTEXT);
    assert_true(c->listeners[1].is_controller);
    assert_int_equal(c->n_advertised, 1);
    assert_string_equal(c->advertised[0].name, "PLAINTEXT");
    assert_int_equal(c->n_controller_listener_names, 1);
    assert_string_equal(c->controller_listener_names[0], "CONTROLLER");
    assert_string_equal(c->inter_broker_listener_name, "PLAINTEXT");
    assert_int_equal(c->n_voters, 1);
    assert_int_equal(c->voters[0].id, 1);
    assert_string_equal(c->voters[0].host, "127.0.0.1");
    assert_int_equal(c->voters[0].port, 9093);
    assert_int_equal(c->n_log_dirs, 1);
    assert_string_equal(c->log_dirs[0], "./data");
    assert_int_equal(c->num_partitions, 1);
    assert_int_equal(c->default_replication_factor, 1);
    assert_int_equal(c->min_insync_replicas, 1);
    assert_true(c->auto_create_topics_enable);
    assert_true(c->delete_topic_enable);
    assert_int_equal(c->message_max_bytes, 1048588);
    assert_int_equal(c->socket_request_max_bytes, 104857600);
    assert_int_equal(c->num_network_threads, sysconf(_SC_NPROCESSORS_ONLN));
    assert_int_equal(c->log_segment_bytes, 1073741824);
    assert_int_equal(c->log_roll_ms, 168LL * 3600 * 1000);
    assert_int_equal(c->log_retention_ms, 168LL * 3600 * 1000);
    assert_int_equal(c->log_retention_bytes, -1);
    assert_int_equal(c->log_retention_check_interval_ms, 300000);
    assert_int_equal(c->log_flush_interval_messages, INT64_MAX);
    assert_int_equal(c->log_flush_interval_ms, INT64_MAX);
    assert_int_equal(c->log_index_interval_bytes, 4096);
    assert_true(c->log_cleanup_delete);
    assert_false(c->log_cleanup_compact);
    assert_string_equal(c->compression_type, "producer");
    assert_false(c->log_message_timestamp_log_append);
    assert_int_equal(c->log_message_timestamp_before_max_ms, INT64_MAX);
    assert_int_equal(c->log_cleaner_threads, 1);
    assert_true(c->log_cleaner_min_cleanable_ratio == 0.5);
    assert_int_equal(c->log_cleaner_delete_retention_ms, 86400000);
    assert_int_equal(c->log_segment_delete_delay_ms, 60000);
    assert_int_equal(c->offsets_topic_replication_factor, 3);
    assert_int_equal(c->offsets_topic_num_partitions, 50);
    assert_int_equal(c->transaction_state_log_replication_factor, 3);
    assert_int_equal(c->transaction_state_log_min_isr, 2);
    assert_int_equal(c->group_initial_rebalance_delay_ms, 3000);
    assert_int_equal(c->log_level, SLOG_INFO);
    assert_null(c->plugin_dir);
    assert_int_equal(c->n_plugins, 0);
    assert_string_equal(config_get(c, "listener.security.protocol.map"),
                        "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT");
    assert_null(config_get(c, "log.retention.ms"));
    assert_false(config_is_set(c, "num.partitions"));
    config_free(c);
}

static void test_shipped_conf_equals_defaults(void **state)
{
    (void)state;
    const char *srcdir = getenv("srcdir");
    char path[512];
    snprintf(path, sizeof path, "%s/etc/samsa.conf", srcdir ? srcdir : ".");
    struct samsa_config *c = config_new(), *d = config_new();
    char err[512] = "";
    if (config_load_file(c, path, err, sizeof err) != 0)
        fail_msg("%s", err);
    if (config_validate(c, err, sizeof err) != 0)
        fail_msg("%s", err);
    /* Every effective value matches the built-in default. */
    for (size_t i = 0; i < config_defs_count; i++) {
        const char *name = config_defs[i].name;
        if (!strcmp(name, "log.dirs") || !strcmp(name, "log.dir"))
            continue;
        const char *a = config_get(c, name), *b = config_get(d, name);
        if ((a == NULL) != (b == NULL) || (a && strcmp(a, b)))
            fail_msg("%s: file says %s, default is %s", name, a ? a : "(null)", b ? b : "(null)");
    }
    assert_int_equal(c->n_log_dirs, 1);
    assert_string_equal(c->log_dirs[0], d->log_dirs[0]);
    config_free(c);
    config_free(d);
}

/* ------------------------------------------------------------------ */
/* Bad values                                                          */

static void test_bad_values(void **state)
{
    (void)state;
    expect_set_error("num.partitions", "x", "config 'num.partitions' value 'x': not an integer");
    expect_set_error("num.partitions", "0", "config 'num.partitions' value '0': must be at least 1");
    expect_set_error("num.partitions", "3000000000",
                     "config 'num.partitions' value '3000000000': out of range for a 32-bit integer");
    expect_set_error("num.partitions", "1.5", "config 'num.partitions' value '1.5': not an integer");
    expect_set_error("log.retention.ms", "99999999999999999999",
                     "config 'log.retention.ms' value '99999999999999999999': out of range for a "
                     "64-bit integer");
    expect_set_error("offsets.topic.replication.factor", "40000",
                     "config 'offsets.topic.replication.factor' value '40000': out of range for a "
                     "16-bit integer");
    expect_set_error("auto.create.topics.enable", "yes",
                     "config 'auto.create.topics.enable' value 'yes': must be true or false");
    expect_set_error("log.cleaner.min.cleanable.ratio", "1.5",
                     "config 'log.cleaner.min.cleanable.ratio' value '1.5': must be between 0 and 1");
    expect_set_error("log.cleaner.min.cleanable.ratio", "half",
                     "config 'log.cleaner.min.cleanable.ratio' value 'half': not a number");
    expect_set_error("compression.type", "brotli",
                     "config 'compression.type' value 'brotli': must be one of: uncompressed, zstd, "
                     "lz4, snappy, gzip, producer");
    expect_set_error("compression.gzip.level", "10",
                     "config 'compression.gzip.level' value '10': must be between 1 and 9, or -1");
    expect_set_error("compression.zstd.level", "23",
                     "config 'compression.zstd.level' value '23': must be between -131072 and 22");
    expect_set_error("log.cleanup.policy", "delete,compat",
                     "config 'log.cleanup.policy' value 'delete,compat': 'compat' is not one of: "
                     "compact, delete");
    expect_set_error("log.message.timestamp.type", "createtime",
                     "config 'log.message.timestamp.type' value 'createtime': must be one of: "
                     "CreateTime, LogAppendTime");
    expect_set_error("process.roles", "broker,broker",
                     "config 'process.roles' value 'broker,broker': role 'broker' appears twice");
    expect_set_error("process.roles", "worker",
                     "config 'process.roles' value 'worker': 'worker' is not one of: broker, "
                     "controller");
    expect_set_error("listeners", "PLAINTEXT:/x:1",
                     "config 'listeners' value 'PLAINTEXT:/x:1': 'PLAINTEXT:/x:1' is not of the "
                     "form NAME://host:port");
    expect_set_error("listeners", "PLAINTEXT://:99999",
                     "config 'listeners' value 'PLAINTEXT://:99999': port 99999 of ':99999' is not "
                     "in 0..65535");
    expect_set_error("listeners", "PLAINTEXT://host",
                     "config 'listeners' value 'PLAINTEXT://host': 'host' is not host:port");
    expect_set_error("listeners", "A://:9092,a://:9093",
                     "config 'listeners' value 'A://:9092,a://:9093': each listener must have a "
                     "different name (A appears twice)");
    expect_set_error("listeners", "A://:9092,B://h:9092",
                     "config 'listeners' value 'A://:9092,B://h:9092': each listener must have a "
                     "different port (9092 appears twice)");
    expect_set_error("controller.quorum.voters", "1@host",
                     "config 'controller.quorum.voters' value '1@host': 'host' is not host:port");
    expect_set_error("controller.quorum.voters", "x@h:1",
                     "config 'controller.quorum.voters' value 'x@h:1': 'x' is not a node id");
    expect_set_error("controller.quorum.voters", "1@h:1,1@h:2",
                     "config 'controller.quorum.voters' value '1@h:1,1@h:2': voter 1 appears twice");
    expect_set_error("controller.quorum.voters", "1@:9093",
                     "config 'controller.quorum.voters' value '1@:9093': ':9093' has no host");
    expect_set_error("listener.security.protocol.map", "A:TLS",
                     "config 'listener.security.protocol.map' value 'A:TLS': 'TLS' is not a "
                     "security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)");
    expect_set_error("log.dirs", "/a,/b,/a",
                     "config 'log.dirs' value '/a,/b,/a': directory '/a' appears twice");
    expect_set_error("log.dirs", " , ", "config 'log.dirs' value ' , ': no directory given");
    expect_set_error("samsa.log.level", "verbose",
                     "config 'samsa.log.level' value 'verbose': must be one of: debug, info, warn, "
                     "error");
    expect_set_error("plugins", "codec-zstd,bad name",
                     "config 'plugins' value 'codec-zstd,bad name': 'bad name' is not a plugin "
                     "name (letters, digits, '-', '_')");
    expect_set_error("node.id", "-1", "config 'node.id' value '-1': must be at least 0");
    expect_set_error("no.such.key", "1", "unknown config 'no.such.key'");
    expect_set_error("plugin.", "1", "unknown config 'plugin.'");
    expect_set_error("zookeeper.connect", "localhost:2181",
                     "config 'zookeeper.connect': a Kafka broker config samsa does not support: samsa runs in "
                     "KRaft mode only, without ZooKeeper");
    expect_set_error("remote.log.manager.thread.pool.size", "10",
                     "config 'remote.log.manager.thread.pool.size': a Kafka broker config samsa does not "
                     "support: tiered storage is not supported yet");
}

static void test_value_normalisation(void **state)
{
    (void)state;
    struct samsa_config *c = config_new();
    char err[256];
    assert_int_equal(config_set(c, "num.partitions", " +7 ", err, sizeof err), 0);
    assert_string_equal(config_get(c, "num.partitions"), "7");
    assert_int_equal(c->num_partitions, 7);
    assert_int_equal(config_set(c, "auto.create.topics.enable", "FALSE", err, sizeof err), 0);
    assert_string_equal(config_get(c, "auto.create.topics.enable"), "false");
    assert_false(c->auto_create_topics_enable);
    assert_int_equal(config_set(c, "log.cleanup.policy", " compact , delete ", err, sizeof err), 0);
    assert_string_equal(config_get(c, "log.cleanup.policy"), "compact,delete");
    assert_true(c->log_cleanup_compact && c->log_cleanup_delete);
    assert_int_equal(config_set(c, "process.roles", "controller, broker", err, sizeof err), 0);
    assert_true(c->role_broker && c->role_controller);
    assert_int_equal(config_set(c, "samsa.log.level", "debug", err, sizeof err), 0);
    assert_int_equal(c->log_level, SLOG_DEBUG);
    config_free(c);
}

static void test_listener_parsing(void **state)
{
    (void)state;
    struct samsa_config *c = config_new();
    char err[256];
    assert_int_equal(config_set(c, "listeners",
                                "PLAINTEXT://:9092, SSL://[::1]:9093,internal://host.example:9094,"
                                "V6://::1:9095",
                                err, sizeof err),
                     0);
    assert_int_equal(config_set(c, "listener.security.protocol.map",
                                "PLAINTEXT:PLAINTEXT,SSL:SSL,INTERNAL:sasl_ssl,V6:PLAINTEXT,"
                                "CONTROLLER:PLAINTEXT",
                                err, sizeof err),
                     0);
    assert_int_equal(c->n_listeners, 4);
    assert_string_equal(c->listeners[0].host, "");
    assert_string_equal(c->listeners[1].name, "SSL");
    assert_string_equal(c->listeners[1].host, "::1");
    assert_int_equal(c->listeners[1].port, 9093);
    assert_int_equal(c->listeners[1].protocol, SECURITY_SSL);
    assert_string_equal(c->listeners[2].name, "INTERNAL");
    assert_string_equal(c->listeners[2].host, "host.example");
    assert_int_equal(c->listeners[2].protocol, SECURITY_SASL_SSL);
    assert_string_equal(c->listeners[3].host, "::1");
    assert_int_equal(c->listeners[3].port, 9095);
    /* Port 0 may repeat (ephemeral ports), as may an IPv4/IPv6 pair. */
    assert_int_equal(config_set(c, "listeners", "A://:0,B://:0", err, sizeof err), 0);
    assert_int_equal(config_set(c, "listeners", "A://127.0.0.1:9092,B://[::1]:9092", err,
                                sizeof err),
                     0);
    config_free(c);
}

/* ------------------------------------------------------------------ */
/* Properties syntax                                                   */

struct kvs {
    char keys[16][64], vals[16][64];
    int lines[16];
    int n;
};

static int collect(void *ctx, const char *key, const char *value, int line)
{
    struct kvs *k = ctx;
    assert_true(k->n < 16);
    snprintf(k->keys[k->n], 64, "%s", key);
    snprintf(k->vals[k->n], 64, "%s", value);
    k->lines[k->n++] = line;
    return 0;
}

static void test_properties_syntax(void **state)
{
    (void)state;
    const char *text = "# comment\n"
                       "! another comment \\\n"
                       "   a.key = value with spaces   \n"
                       "b.key:colon\r\n"
                       "c.key value\\\n"
                       "    continued\\\\\n"
                       "d\\ key=x\n"
                       "\n"
                       "e.key=tab\\tnl\\n\\u0041\\u00e9\\q\n"
                       "f.key\n"
                       "g.key   =   \n"
                       "h.key=a=b:c\n"
                       "\\#i.key=\n"
                       "\tj=\\uD83D\\uDE00";
    struct kvs k = {0};
    char err[128] = "";
    assert_int_equal(properties_parse(text, strlen(text), collect, &k, err, sizeof err), 0);
    assert_int_equal(k.n, 10);
    assert_string_equal(k.keys[0], "a.key");
    assert_string_equal(k.vals[0], "value with spaces   ");
    assert_int_equal(k.lines[0], 3);
    assert_string_equal(k.keys[1], "b.key");
    assert_string_equal(k.vals[1], "colon");
    assert_string_equal(k.keys[2], "c.key");
    assert_string_equal(k.vals[2], "valuecontinued\\");
    assert_int_equal(k.lines[2], 5);
    assert_string_equal(k.keys[3], "d key");
    assert_string_equal(k.vals[3], "x");
    assert_int_equal(k.lines[3], 7);
    assert_string_equal(k.keys[4], "e.key");
    assert_string_equal(k.vals[4], "tab\tnl\nA\xc3\xa9q");
    assert_int_equal(k.lines[4], 9);
    assert_string_equal(k.keys[5], "f.key");
    assert_string_equal(k.vals[5], "");
    assert_string_equal(k.keys[6], "g.key");
    assert_string_equal(k.vals[6], "");
    assert_string_equal(k.keys[7], "h.key");
    assert_string_equal(k.vals[7], "a=b:c");
    assert_string_equal(k.keys[8], "#i.key");
    assert_string_equal(k.vals[8], "");
    assert_string_equal(k.keys[9], "j");
    assert_string_equal(k.vals[9], "\xf0\x9f\x98\x80"); /* U+1F600 from a surrogate pair */
    assert_int_equal(k.lines[9], 14);

    const char *bad = "ok=1\nbad=\\u12x4\n";
    struct kvs k2 = {0};
    assert_int_equal(properties_parse(bad, strlen(bad), collect, &k2, err, sizeof err), -1);
    assert_string_equal(err, "2: malformed \\uxxxx escape");
}

static void test_load_file(void **state)
{
    (void)state;
    char err[512], want[512];
    struct samsa_config *c = config_new();
    const char *path = write_file("ok.properties",
                                  "# test\n"
                                  "num.partitions = 3\n"
                                  "log.dirs=/var/a, /var/b\n"
                                  "num.partitions=4\n"
                                  "plugins=codec-zstd\n"
                                  "plugin.codec-zstd.level=5\n"
                                  "listener.name.plaintext.sasl.enabled.mechanisms=PLAIN\n"
                                  "num.io.threads=16\n");
    assert_int_equal(config_load_file(c, path, err, sizeof err), 0);
    assert_int_equal(c->num_partitions, 4); /* the last value wins */
    assert_int_equal(c->n_log_dirs, 2);
    assert_string_equal(c->log_dirs[1], "/var/b");
    assert_int_equal(c->n_plugins, 1);
    assert_string_equal(c->plugins[0], "codec-zstd");
    assert_string_equal(config_plugin_value(c, "codec-zstd", "level"), "5");
    assert_null(config_plugin_value(c, "codec-zstd", "other"));
    assert_null(config_plugin_value(c, "codec", "zstd.level"));
    assert_int_equal(config_extra_count(c), 2);
    assert_true(config_is_set(c, "listener.name.plaintext.sasl.enabled.mechanisms"));
    int64_t io;
    assert_true(config_get_long(c, "num.io.threads", &io));
    assert_int_equal(io, 16);
    config_free(c);

    c = config_new();
    path = write_file("bad.properties", "node.id=1\n\nnum.partitions=x\n");
    assert_int_equal(config_load_file(c, path, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s:3: config 'num.partitions' value 'x': not an integer", path);
    assert_string_equal(err, want);
    config_free(c);

    c = config_new();
    path = write_file("unknown.properties", "# x\nnope=1\n");
    assert_int_equal(config_load_file(c, path, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s:2: unknown config 'nope'", path);
    assert_string_equal(err, want);
    config_free(c);

    c = config_new();
    path = write_file("esc.properties", "num.partitions=1\nnum.partitions=\\u00zz\n");
    assert_int_equal(config_load_file(c, path, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s:2: malformed \\uxxxx escape", path);
    assert_string_equal(err, want);
    config_free(c);

    c = config_new();
    char missing[256];
    snprintf(missing, sizeof missing, "%s/none.properties", tmpdir);
    assert_int_equal(config_load_file(c, missing, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: No such file or directory", missing);
    assert_string_equal(err, want);
    config_free(c);
}

/* ------------------------------------------------------------------ */
/* Derived values                                                      */

static void test_retention_precedence(void **state)
{
    (void)state;
    char err[256];
    struct samsa_config *c = config_new();
    assert_int_equal(c->log_retention_ms, 604800000);
    assert_int_equal(config_set(c, "log.retention.hours", "1", err, sizeof err), 0);
    assert_int_equal(c->log_retention_ms, 3600000);
    assert_int_equal(config_set(c, "log.retention.minutes", "2", err, sizeof err), 0);
    assert_int_equal(c->log_retention_ms, 120000);
    assert_int_equal(config_set(c, "log.retention.ms", "5000", err, sizeof err), 0);
    assert_int_equal(c->log_retention_ms, 5000);
    assert_int_equal(config_set(c, "log.retention.ms", "-5", err, sizeof err), 0);
    assert_int_equal(c->log_retention_ms, -1); /* any negative means forever */
    config_free(c);

    /* Order in the file does not matter, only the key. */
    c = config_new();
    const char *path = write_file("ret.properties", "log.retention.ms=7000\n"
                                                    "log.retention.hours=2\n"
                                                    "log.roll.hours=3\n"
                                                    "log.flush.scheduler.interval.ms=500\n");
    assert_int_equal(config_load_file(c, path, err, sizeof err), 0);
    assert_int_equal(c->log_retention_ms, 7000);
    assert_int_equal(c->log_roll_ms, 3 * 3600000LL);
    assert_int_equal(c->log_flush_interval_ms, 500);
    assert_int_equal(config_set(c, "log.roll.ms", "100", err, sizeof err), 0);
    assert_int_equal(c->log_roll_ms, 100);
    assert_int_equal(config_set(c, "log.flush.interval.ms", "50", err, sizeof err), 0);
    assert_int_equal(c->log_flush_interval_ms, 50);
    /* A dynamic cluster default beats the static value. */
    struct config_alter a = {"log.retention.ms", CONFIG_OP_SET, "9000"};
    assert_int_equal(config_alter_broker(c, true, &a, 1, false, err, sizeof err), 0);
    assert_int_equal(c->log_retention_ms, 9000);
    config_free(c);
}

/* ------------------------------------------------------------------ */
/* Cross-key validation                                                */

static void test_validate(void **state)
{
    (void)state;
    expect_validate("", NULL);
    expect_validate("process.roles=broker,controller\n",
                    "config 'node.id' must be set when 'process.roles' or the controller quorum "
                    "is configured");
    expect_validate("controller.quorum.voters=1@127.0.0.1:9093\n",
                    "config 'node.id' must be set when 'process.roles' or the controller quorum "
                    "is configured");
    expect_validate("process.roles=\n",
                    "config 'process.roles' is empty: samsa runs in KRaft mode only (broker, "
                    "controller, or broker,controller)");
    expect_validate("node.id=1\nbroker.id=5\n",
                    "You must set `node.id` to the same value as `broker.id`.");
    /* broker.id alone stands for node.id, as in Kafka. */
    expect_validate("process.roles=broker,controller\nbroker.id=1\n", NULL);

    /* KIP-848 timeouts within their bounds (Kafka's GroupCoordinatorConfig) */
    expect_validate("group.consumer.session.timeout.ms=6000\n",
                    "group.consumer.session.timeout.ms (6000) must be between "
                    "group.consumer.min.session.timeout.ms (45000) and group.consumer.max.session.timeout.ms (60000)");
    expect_validate("group.consumer.session.timeout.ms=6000\ngroup.consumer.min.session.timeout.ms=6000\n", NULL);
    expect_validate("group.consumer.heartbeat.interval.ms=300\n",
                    "group.consumer.heartbeat.interval.ms (300) must be between "
                    "group.consumer.min.heartbeat.interval.ms (5000) and group.consumer.max.heartbeat.interval.ms "
                    "(15000)");
    expect_validate("group.consumer.session.timeout.ms=6000\ngroup.consumer.min.session.timeout.ms=6000\n"
                    "group.consumer.heartbeat.interval.ms=6000\ngroup.consumer.max.heartbeat.interval.ms=6000\n",
                    "group.consumer.heartbeat.interval.ms (6000) must be less than "
                    "group.consumer.session.timeout.ms (6000)");

    /* A follower's parked Fetch outlives its socket timeout (Kafka's rule). */
    expect_validate("replica.fetch.wait.max.ms=40000\n",
                    "replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms to prevent "
                    "unnecessary socket timeouts");
    expect_validate("replica.fetch.wait.max.ms=40000\nreplica.socket.timeout.ms=40000\n", NULL);

    /* A broker-only node of a three-controller cluster. */
    const char *broker = "process.roles=broker\nnode.id=4\n"
                         "controller.quorum.voters=1@c1:9093,2@c2:9093,3@c3:9093\n"
                         "listeners=PLAINTEXT://:9092\n"
                         "advertised.listeners=PLAINTEXT://b4.example:9092\n";
    expect_validate(broker, NULL);
    expect_validate("process.roles=broker\nnode.id=2\n"
                    "controller.quorum.voters=1@c1:9093,3@c3:9093,2@c2:9093\n"
                    "listeners=PLAINTEXT://:9092\n",
                    "If process.roles contains just the 'broker' role, the node id 2 must not be "
                    "included in the set of voters controller.quorum.voters=Set(1, 2, 3)");
    expect_validate("process.roles=broker\nnode.id=4\ncontroller.quorum.voters=1@c1:9093\n",
                    "controller.listener.names must not contain a value appearing in the "
                    "'listeners' configuration when running KRaft with just the broker role");
    expect_validate("process.roles=broker\nnode.id=4\ncontroller.quorum.voters=1@c1:9093\n"
                    "listeners=PLAINTEXT://:9092\ncontroller.listener.names=\n",
                    "controller.listener.names must contain at least one value when running "
                    "KRaft with just the broker role");
    expect_validate("process.roles=broker\nnode.id=4\nlisteners=PLAINTEXT://:9092\n"
                    "controller.quorum.bootstrap.servers=c1:9093\n",
                    NULL);
    expect_validate("process.roles=broker\nnode.id=4\nlisteners=PLAINTEXT://:9092\n"
                    "controller.quorum.voters=\n",
                    "If using process.roles, either controller.quorum.bootstrap.servers must "
                    "contain the set of bootstrap controllers or controller.quorum.voters must "
                    "contain a parseable set of controllers.");

    /* Controller-only. */
    expect_validate("process.roles=controller\nnode.id=1\n"
                    "controller.quorum.voters=1@c1:9093\nlisteners=CONTROLLER://c1:9093\n",
                    NULL);
    expect_validate("process.roles=controller\nnode.id=1\n"
                    "controller.quorum.voters=1@c1:9093\n",
                    "The listeners config must only contain KRaft controller listeners from "
                    "controller.listener.names when process.roles=controller");
    expect_validate("process.roles=controller\nnode.id=2\n"
                    "controller.quorum.voters=1@c1:9093\nlisteners=CONTROLLER://c1:9093\n",
                    "If process.roles contains the 'controller' role, the node id 2 must be "
                    "included in the set of voters controller.quorum.voters=Set(1)");

    /* Combined. */
    expect_validate("process.roles=broker,controller\nnode.id=1\n"
                    "listeners=PLAINTEXT://127.0.0.1:9092\n",
                    "controller.listener.names must contain at least one value appearing in the "
                    "'listeners' configuration when running the KRaft controller role");
    expect_validate("controller.listener.names=CONTROLLER,CTRL2\n",
                    "controller.listener.names must only contain values appearing in the "
                    "'listeners' configuration when running the KRaft controller role");
    expect_validate("advertised.listeners=PLAINTEXT://0.0.0.0:9092\n",
                    "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a "
                    "routable IP address.");
    /* Without advertised.listeners the listeners are advertised, as Kafka. */
    expect_validate("listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://127.0.0.1:9093\n",
                    "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a "
                    "routable IP address.");
    expect_validate("listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://127.0.0.1:9093\n"
                    "advertised.listeners=PLAINTEXT://localhost:9092\n",
                    NULL);
    expect_validate("advertised.listeners=PLAINTEXT://h:9092,OTHER://h:9094\n"
                    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT,"
                    "CONTROLLER:PLAINTEXT\n",
                    "advertised.listeners listener names must be equal to or a subset of the ones "
                    "defined in listeners. Found PLAINTEXT,OTHER. The valid options based on the "
                    "current configuration are PLAINTEXT,CONTROLLER");
    expect_validate("listeners=PLAINTEXT://:9092,INTERNAL://:9094,CONTROLLER://:9093\n",
                    "No security protocol defined for listener INTERNAL");
    expect_validate("listeners=PLAINTEXT://:9092,INTERNAL://:9094,CONTROLLER://:9093\n"
                    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT\n",
                    "No security protocol defined for listener CONTROLLER");
    expect_validate("listeners=PLAINTEXT://:9092,INTERNAL://:9094,CONTROLLER://:9093\n"
                    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,"
                    "CONTROLLER:PLAINTEXT\ninter.broker.listener.name=internal\n",
                    NULL);
    expect_validate("inter.broker.listener.name=FOO\n",
                    "Listener with name FOO defined in inter.broker.listener.name not found in "
                    "listener.security.protocol.map.");
    expect_validate("inter.broker.listener.name=SSL\n",
                    "inter.broker.listener.name must be a listener name defined in "
                    "advertised.listeners. The valid options based on currently configured "
                    "listeners are PLAINTEXT");
    expect_validate("inter.broker.listener.name=PLAINTEXT\nsecurity.inter.broker.protocol=SSL\n",
                    "Only one of inter.broker.listener.name and security.inter.broker.protocol "
                    "should be set.");
    expect_validate("log.retention.ms=0\n",
                    "log.retention.ms must be unlimited (-1) or, greater than or equal to 1");
    expect_validate("log.roll.ms=0\n", "log.roll.ms must be greater than or equal to 1");
}

/* ------------------------------------------------------------------ */
/* DescribeConfigs                                                     */

static void test_describe_broker(void **state)
{
    (void)state;
    char err[256];
    struct samsa_config *c = config_new();
    struct config_entry e;

    assert_true(config_describe_key(c, "num.partitions", false, &e));
    assert_string_equal(e.name, "num.partitions");
    assert_string_equal(e.value, "1");
    assert_int_equal(e.type, CONFIG_TYPE_INT);
    assert_int_equal(e.source, CONFIG_SOURCE_DEFAULT);
    assert_true(e.read_only);
    assert_false(e.sensitive);
    assert_non_null(e.doc);
    assert_int_equal(e.n_synonyms, 1);
    assert_int_equal(e.synonyms[0].source, CONFIG_SOURCE_DEFAULT);

    assert_int_equal(config_set(c, "num.partitions", "3", err, sizeof err), 0);
    assert_true(config_describe_key(c, "num.partitions", false, &e));
    assert_string_equal(e.value, "3");
    assert_int_equal(e.source, CONFIG_SOURCE_STATIC_BROKER);
    assert_int_equal(e.n_synonyms, 2);
    assert_string_equal(e.synonyms[0].value, "3");
    assert_int_equal(e.synonyms[0].source, CONFIG_SOURCE_STATIC_BROKER);
    assert_string_equal(e.synonyms[1].value, "1");
    assert_int_equal(e.synonyms[1].source, CONFIG_SOURCE_DEFAULT);

    /* Unset without default: no value, DEFAULT_CONFIG, no synonyms. */
    assert_true(config_describe_key(c, "log.retention.ms", false, &e));
    assert_null(e.value);
    assert_int_equal(e.source, CONFIG_SOURCE_DEFAULT);
    assert_int_equal(e.n_synonyms, 0);
    assert_false(e.read_only); /* cluster-wide dynamic */

    /* Synonyms ranked above the described key are dropped, as Kafka does. */
    assert_int_equal(config_set(c, "log.retention.ms", "1000", err, sizeof err), 0);
    assert_true(config_describe_key(c, "log.retention.hours", false, &e));
    assert_string_equal(e.value, "168");
    assert_int_equal(e.source, CONFIG_SOURCE_DEFAULT);
    assert_int_equal(e.n_synonyms, 1);
    assert_string_equal(e.synonyms[0].name, "log.retention.hours");
    assert_true(e.read_only);
    assert_true(config_describe_key(c, "log.retention.ms", false, &e));
    assert_string_equal(e.value, "1000");
    assert_int_equal(e.source, CONFIG_SOURCE_STATIC_BROKER);
    assert_int_equal(e.n_synonyms, 2); /* itself, then log.retention.hours' default */
    assert_string_equal(e.synonyms[1].name, "log.retention.hours");

    /* Sensitive values never leave the broker. */
    assert_int_equal(config_set(c, "ssl.keystore.password", "secret", err, sizeof err), 0);
    assert_true(config_describe_key(c, "ssl.keystore.password", false, &e));
    assert_null(e.value);
    assert_true(e.sensitive);
    assert_int_equal(e.type, CONFIG_TYPE_PASSWORD);
    assert_int_equal(e.source, CONFIG_SOURCE_STATIC_BROKER);
    assert_null(e.synonyms[0].value);

    /* num.network.threads: one per CPU, reported as a default. */
    char ncpu[16];
    snprintf(ncpu, sizeof ncpu, "%ld", sysconf(_SC_NPROCESSORS_ONLN));
    assert_true(config_describe_key(c, "num.network.threads", false, &e));
    assert_string_equal(e.value, ncpu);
    assert_int_equal(e.source, CONFIG_SOURCE_DEFAULT);

    /* Extra keys: Kafka's custom configs. */
    assert_int_equal(config_set(c, "plugin.x.y", "z", err, sizeof err), 0);
    assert_true(config_describe_key(c, "plugin.x.y", false, &e));
    assert_int_equal(e.type, CONFIG_TYPE_UNKNOWN);
    assert_true(e.sensitive);
    assert_null(e.value);
    assert_false(config_describe_key(c, "plugin.x.z", false, &e));

    /* Iteration covers the table and the extras. */
    size_t total = config_describe_count(c), listed = 0;
    assert_int_equal(total, config_defs_count + 1);
    for (size_t i = 0; i < total; i++)
        if (config_describe(c, i, false, &e))
            listed++;
    assert_int_equal(listed, total);

    /* The cluster-default resource lists only dynamic defaults. */
    listed = 0;
    for (size_t i = 0; i < total; i++)
        if (config_describe(c, i, true, &e))
            listed++;
    assert_int_equal(listed, 0);
    struct config_alter a = {"message.max.bytes", CONFIG_OP_SET, "2000000"};
    assert_int_equal(config_alter_broker(c, true, &a, 1, false, err, sizeof err), 0);
    listed = 0;
    for (size_t i = 0; i < total; i++)
        if (config_describe(c, i, true, &e)) {
            listed++;
            assert_string_equal(e.name, "message.max.bytes");
            assert_string_equal(e.value, "2000000");
            assert_int_equal(e.source, CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER);
            assert_int_equal(e.n_synonyms, 1);
        }
    assert_int_equal(listed, 1);
    assert_true(config_describe_key(c, "message.max.bytes", false, &e));
    assert_int_equal(e.source, CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER);
    assert_int_equal(e.n_synonyms, 2);
    config_free(c);
}

/* samsa.plugins.loaded: only the server sets it (plugin registry), and
 * DescribeConfigs reports it read-only with source DEFAULT_CONFIG. */
static void test_server_set_key(void **state)
{
    (void)state;
    char err[512] = "";
    struct samsa_config *c = config_new();
    struct config_entry e;
    assert_true(config_describe_key(c, "samsa.plugins.loaded", false, &e));
    assert_string_equal(e.value, "");

    expect_set_error("samsa.plugins.loaded", "x:1:1.0:",
                     "config 'samsa.plugins.loaded' value 'x:1:1.0:': read-only; the server sets it "
                     "at startup");
    const char *path = write_file("loaded.properties", "num.partitions=2\nsamsa.plugins.loaded=a\n");
    assert_int_equal(config_load_file(c, path, err, sizeof err), -1);
    char want[600];
    snprintf(want, sizeof want,
             "%s:2: config 'samsa.plugins.loaded' value 'a': read-only; the server sets it at "
             "startup",
             path);
    assert_string_equal(err, want);

    const char *v = "codec-zstd:0.1.0:1.0:codec:zstd(4),lua:0.2:1.0:authorizer:lua+partitioner:lua";
    config_set_server_value(c, "samsa.plugins.loaded", v);
    assert_true(config_describe_key(c, "samsa.plugins.loaded", false, &e));
    assert_string_equal(e.value, v);
    assert_int_equal(e.type, CONFIG_TYPE_LIST);
    assert_int_equal(e.source, CONFIG_SOURCE_DEFAULT);
    assert_true(e.read_only);
    assert_int_equal(e.n_synonyms, 1);
    assert_string_equal(e.synonyms[0].value, v);
    assert_int_equal(e.synonyms[0].source, CONFIG_SOURCE_DEFAULT);
    assert_false(config_describe_key(c, "samsa.plugins.loaded", true, &e));

    /* AlterConfigs: Kafka's refusal of a read-only key, at both levels. */
    struct config_alter a = {"samsa.plugins.loaded", CONFIG_OP_SET, "x"};
    assert_int_equal(config_alter_broker(c, false, &a, 1, false, err, sizeof err),
                     CONFIG_ERR_INVALID_REQUEST);
    assert_string_equal(err, "Cannot update these configs dynamically: Set(samsa.plugins.loaded)");
    a.op = CONFIG_OP_DELETE;
    assert_int_equal(config_alter_broker(c, true, &a, 1, false, err, sizeof err),
                     CONFIG_ERR_INVALID_REQUEST);
    assert_string_equal(err, "Cannot update these configs dynamically: Set(samsa.plugins.loaded)");
    assert_int_equal(config_set_dynamic(c, false, "samsa.plugins.loaded", "x", err, sizeof err), -1);

    /* A dynamic change publishes a copy: the value goes along. */
    struct config_alter m = {"message.max.bytes", CONFIG_OP_SET, "2000000"};
    assert_int_equal(config_alter_broker(c, false, &m, 1, false, err, sizeof err), 0);
    struct samsa_config *d = config_dup(c);
    assert_string_equal(config_get(d, "samsa.plugins.loaded"), v);
    config_free(d);
    config_free(c);
}

/* ------------------------------------------------------------------ */
/* Dynamic broker configs                                              */

static void expect_alter(struct samsa_config *c, bool cluster_default, const char *key,
                         enum config_op op, const char *value, int code, const char *msg)
{
    char err[512] = "";
    struct config_alter a = {key, op, value};
    assert_int_equal(config_alter_broker(c, cluster_default, &a, 1, false, err, sizeof err), code);
    if (msg)
        assert_string_equal(err, msg);
}

static void test_alter_broker(void **state)
{
    (void)state;
    char err[512];
    struct samsa_config *c = config_new();

    expect_alter(c, false, "num.partitions", CONFIG_OP_SET, "3", CONFIG_ERR_INVALID_REQUEST,
                 "Cannot update these configs dynamically: Set(num.partitions)");
    expect_alter(c, false, "log.retention.hours", CONFIG_OP_SET, "1", CONFIG_ERR_INVALID_REQUEST,
                 "Cannot update these configs dynamically: Set(log.retention.hours)");
    expect_alter(c, false, "ssl.keystore.location", CONFIG_OP_SET, "/k",
                 CONFIG_ERR_INVALID_REQUEST,
                 "These security configs can be dynamically updated only per-listener using the "
                 "listener prefix: Set(ssl.keystore.location)");
    expect_alter(c, true, "listeners", CONFIG_OP_SET, "PLAINTEXT://127.0.0.1:9092",
                 CONFIG_ERR_INVALID_REQUEST,
                 "Cannot update these configs at default cluster level, broker id must be "
                 "specified: Set(listeners)");
    expect_alter(c, false, "message.max.bytes", CONFIG_OP_SET, "-1", CONFIG_ERR_INVALID_REQUEST,
                 "Invalid value -1 for configuration message.max.bytes: must be at least 0");
    expect_alter(c, false, "message.max.bytes", CONFIG_OP_APPEND, "1", CONFIG_ERR_INVALID_CONFIG,
                 "Config value append is not allowed for config key: message.max.bytes");
    expect_alter(c, false, "no.such.config", CONFIG_OP_SET, "1", CONFIG_ERR_INVALID_REQUEST,
                 "Unknown broker config name: no.such.config");
    expect_alter(c, false, "message.max.bytes", CONFIG_OP_SET, NULL, CONFIG_ERR_INVALID_REQUEST,
                 "Null value not supported for : message.max.bytes");
    expect_alter(c, false, "message.max.bytes", (enum config_op)9, "1",
                 CONFIG_ERR_INVALID_REQUEST,
                 "Unknown config operation 9 for config key: message.max.bytes");
    /* The result must still be a valid config: dropping the controller
     * listener is refused, and nothing changes. */
    expect_alter(c, false, "listeners", CONFIG_OP_SET, "PLAINTEXT://127.0.0.1:9092",
                 CONFIG_ERR_INVALID_REQUEST,
                 "controller.listener.names must contain at least one value appearing in the "
                 "'listeners' configuration when running the KRaft controller role");
    assert_int_equal(c->n_listeners, 2);

    /* Several keys at once: all or nothing. */
    struct config_alter two[2] = {{"log.retention.ms", CONFIG_OP_SET, "1000"},
                                  {"log.segment.bytes", CONFIG_OP_SET, "1"}};
    assert_int_equal(config_alter_broker(c, false, two, 2, false, err, sizeof err),
                     CONFIG_ERR_INVALID_REQUEST);
    assert_string_equal(err, "Invalid value 1 for configuration log.segment.bytes: must be at "
                             "least 14");
    assert_int_equal(c->log_retention_ms, 604800000);

    /* validate_only changes nothing. */
    struct config_alter r = {"log.retention.ms", CONFIG_OP_SET, "1000"};
    assert_int_equal(config_alter_broker(c, false, &r, 1, true, err, sizeof err), 0);
    assert_int_equal(c->log_retention_ms, 604800000);
    assert_false(config_is_set(c, "log.retention.ms"));

    /* Per-broker beats cluster default; deleting falls back. */
    expect_alter(c, true, "log.retention.ms", CONFIG_OP_SET, "2000", 0, NULL);
    assert_int_equal(c->log_retention_ms, 2000);
    expect_alter(c, false, "log.retention.ms", CONFIG_OP_SET, "1000", 0, NULL);
    assert_int_equal(c->log_retention_ms, 1000);
    struct config_entry e;
    assert_true(config_describe_key(c, "log.retention.ms", false, &e));
    assert_int_equal(e.source, CONFIG_SOURCE_DYNAMIC_BROKER);
    assert_int_equal(e.n_synonyms, 3);
    assert_int_equal(e.synonyms[0].source, CONFIG_SOURCE_DYNAMIC_BROKER);
    assert_int_equal(e.synonyms[1].source, CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER);
    assert_int_equal(e.synonyms[2].source, CONFIG_SOURCE_DEFAULT); /* log.retention.hours */
    expect_alter(c, false, "log.retention.ms", CONFIG_OP_DELETE, NULL, 0, NULL);
    assert_int_equal(c->log_retention_ms, 2000);

    /* APPEND / SUBTRACT on lists start from the effective value. */
    expect_alter(c, false, "log.cleanup.policy", CONFIG_OP_APPEND, "compact", 0, NULL);
    assert_string_equal(config_get(c, "log.cleanup.policy"), "delete,compact");
    assert_true(c->log_cleanup_compact && c->log_cleanup_delete);
    expect_alter(c, false, "log.cleanup.policy", CONFIG_OP_SUBTRACT, "delete", 0, NULL);
    assert_string_equal(config_get(c, "log.cleanup.policy"), "compact");
    expect_alter(c, false, "log.cleanup.policy", CONFIG_OP_APPEND, "compcat",
                 CONFIG_ERR_INVALID_REQUEST,
                 "Invalid value compact,compcat for configuration log.cleanup.policy: 'compcat' "
                 "is not one of: compact, delete");

    /* Per-broker listeners may change when the result is consistent. */
    expect_alter(c, false, "listeners", CONFIG_OP_SET,
                 "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:9093", 0, NULL);
    assert_int_equal(c->listeners[0].port, 19092);

    /* Replay of stored records. */
    assert_int_equal(config_set_dynamic(c, false, "min.insync.replicas", "2", err, sizeof err), 0);
    assert_int_equal(c->min_insync_replicas, 2);
    assert_int_equal(config_set_dynamic(c, false, "min.insync.replicas", NULL, err, sizeof err), 0);
    assert_int_equal(c->min_insync_replicas, 1);
    assert_int_equal(config_set_dynamic(c, false, "min.insync.replicas", "x", err, sizeof err), -1);
    assert_string_equal(err, "config 'min.insync.replicas' value 'x': not an integer");

    /* A copy has every layer. */
    struct samsa_config *d = config_dup(c);
    assert_int_equal(d->log_retention_ms, 2000);
    assert_int_equal(d->listeners[0].port, 19092);
    assert_string_equal(config_get(d, "log.cleanup.policy"), "compact");
    config_free(d);
    config_free(c);
}

static void test_list_apply(void **state)
{
    (void)state;
    char *s = config_list_apply("a,b", CONFIG_OP_APPEND, "b,c");
    assert_string_equal(s, "a,b,c");
    free(s);
    s = config_list_apply("a,b,a,c", CONFIG_OP_SUBTRACT, "a");
    assert_string_equal(s, "b,c");
    free(s);
    s = config_list_apply(NULL, CONFIG_OP_APPEND, "x");
    assert_string_equal(s, "x");
    free(s);
    s = config_list_apply("x", CONFIG_OP_SUBTRACT, "x");
    assert_string_equal(s, "");
    free(s);
}

/* ------------------------------------------------------------------ */
/* Topic configs                                                       */

static void expect_topic_error(const char *key, const char *value, const char *msg)
{
    char err[512] = "";
    assert_int_equal(topic_config_validate(key, value, err, sizeof err), CONFIG_ERR_INVALID_CONFIG);
    assert_string_equal(err, msg);
}

static void test_topic_validate(void **state)
{
    (void)state;
    char err[512];
    expect_topic_error("retention.hours", "1", "Unknown topic config name: retention.hours");
    expect_topic_error("retention.ms", "-2",
                       "Invalid value -2 for configuration retention.ms: must be at least -1");
    expect_topic_error("retention.ms", "1d",
                       "Invalid value 1d for configuration retention.ms: not an integer");
    expect_topic_error("segment.bytes", "13",
                       "Invalid value 13 for configuration segment.bytes: must be at least 14");
    expect_topic_error("segment.ms", "0",
                       "Invalid value 0 for configuration segment.ms: must be at least 1");
    expect_topic_error("cleanup.policy", "delete,foo",
                       "Invalid value delete,foo for configuration cleanup.policy: 'foo' is not one "
                       "of: compact, delete");
    expect_topic_error("compression.type", "brotli",
                       "Invalid value brotli for configuration compression.type: must be one of: "
                       "uncompressed, zstd, lz4, snappy, gzip, producer");
    expect_topic_error("message.timestamp.type", "createtime",
                       "Invalid value createtime for configuration message.timestamp.type: must be "
                       "one of: CreateTime, LogAppendTime");
    expect_topic_error("min.cleanable.dirty.ratio", "2",
                       "Invalid value 2 for configuration min.cleanable.dirty.ratio: must be "
                       "between 0 and 1");
    expect_topic_error("compression.lz4.level", "0",
                       "Invalid value 0 for configuration compression.lz4.level: must be between 1 "
                       "and 17");
    expect_topic_error("preallocate", "1",
                       "Invalid value 1 for configuration preallocate: must be true or false");
    expect_topic_error("max.compaction.lag.ms", "0",
                       "Invalid value 0 for configuration max.compaction.lag.ms: must be at least 1");
    expect_topic_error("local.retention.ms", "-3",
                       "Invalid value -3 for configuration local.retention.ms: must be at least -2");
    expect_topic_error("leader.replication.throttled.replicas", "0:1,x",
                       "Invalid value 0:1,x for configuration leader.replication.throttled.replicas: "
                       "must be the wildcard (*) or a list of the form "
                       "[PartitionId]:[ReplicaId],[PartitionId]:[ReplicaId],...");
    assert_int_equal(topic_config_validate("leader.replication.throttled.replicas", "0:1, 1:2",
                                           err, sizeof err),
                     0);
    assert_int_equal(topic_config_validate("follower.replication.throttled.replicas", "*", err,
                                           sizeof err),
                     0);
    assert_int_equal(topic_config_validate("cleanup.policy", "compact,delete", err, sizeof err), 0);
    assert_int_equal(topic_config_validate("retention.ms", "-1", err, sizeof err), 0);

    struct samsa_config *c = config_new();
    struct topic_config_kv lag[] = {{"min.compaction.lag.ms", "10"},
                                    {"max.compaction.lag.ms", "5"}};
    assert_int_equal(topic_config_validate_all(c, lag, 2, err, sizeof err),
                     CONFIG_ERR_INVALID_CONFIG);
    assert_string_equal(err, "conflict topic config setting min.compaction.lag.ms (10) > "
                             "max.compaction.lag.ms (5)");
    struct topic_config_kv remote[] = {{"remote.storage.enable", "true"}};
    assert_int_equal(topic_config_validate_all(c, remote, 1, err, sizeof err),
                     CONFIG_ERR_INVALID_CONFIG);
    assert_string_equal(err, "Tiered Storage functionality is disabled in the broker. Topic "
                             "cannot be configured with remote log storage.");
    assert_int_equal(config_set(c, "remote.log.storage.system.enable", "true", err, sizeof err), 0);
    assert_int_equal(topic_config_validate_all(c, remote, 1, err, sizeof err), 0);
    struct topic_config_kv remote_local[] = {{"remote.storage.enable", "true"},
                                             {"retention.ms", "1000"},
                                             {"local.retention.ms", "2000"}};
    assert_int_equal(topic_config_validate_all(c, remote_local, 3, err, sizeof err),
                     CONFIG_ERR_INVALID_CONFIG);
    assert_string_equal(err, "Invalid value 2000 for configuration local.retention.ms: Value must "
                             "not be more than retention.ms property value: 1000");
    struct topic_config_kv remote_compact[] = {{"remote.storage.enable", "true"},
                                               {"cleanup.policy", "compact"}};
    assert_int_equal(topic_config_validate_all(c, remote_compact, 2, err, sizeof err),
                     CONFIG_ERR_INVALID_CONFIG);
    assert_string_equal(err, "Remote log storage is unsupported for the compacted topics");
    struct topic_config_kv unknown[] = {{"retention.ms", "1"}, {"bogus", "1"}};
    assert_int_equal(topic_config_validate_all(c, unknown, 2, err, sizeof err),
                     CONFIG_ERR_INVALID_CONFIG);
    assert_string_equal(err, "Unknown topic config name: bogus");
    config_free(c);
}

static void test_topic_resolve(void **state)
{
    (void)state;
    char err[256];
    struct samsa_config *c = config_new();
    struct topic_config t;
    topic_config_resolve(c, NULL, 0, &t);
    assert_true(t.cleanup_delete);
    assert_false(t.cleanup_compact);
    assert_int_equal(t.compression_type, TOPIC_COMPRESSION_PRODUCER);
    assert_int_equal(t.compression_gzip_level, -1);
    assert_int_equal(t.compression_lz4_level, 9);
    assert_int_equal(t.compression_zstd_level, 3);
    assert_int_equal(t.retention_ms, 604800000);
    assert_int_equal(t.retention_bytes, -1);
    assert_int_equal(t.local_retention_ms, 604800000); /* -2 follows retention.ms */
    assert_int_equal(t.local_retention_bytes, -1);
    assert_int_equal(t.segment_bytes, 1073741824);
    assert_int_equal(t.segment_ms, 604800000);
    assert_int_equal(t.segment_jitter_ms, 0);
    assert_int_equal(t.segment_index_bytes, 10485760);
    assert_int_equal(t.max_message_bytes, 1048588);
    assert_int_equal(t.flush_messages, INT64_MAX);
    assert_int_equal(t.flush_ms, INT64_MAX);
    assert_int_equal(t.index_interval_bytes, 4096);
    assert_int_equal(t.delete_retention_ms, 86400000);
    assert_int_equal(t.file_delete_delay_ms, 60000);
    assert_int_equal(t.min_compaction_lag_ms, 0);
    assert_int_equal(t.max_compaction_lag_ms, INT64_MAX);
    assert_true(t.min_cleanable_dirty_ratio == 0.5);
    assert_int_equal(t.min_insync_replicas, 1);
    assert_false(t.message_timestamp_log_append);
    assert_int_equal(t.message_timestamp_before_max_ms, INT64_MAX);
    assert_true(t.message_downconversion_enable);
    assert_false(t.preallocate);
    assert_false(t.remote_storage_enable);
    assert_false(t.unclean_leader_election_enable);

    /* Broker keys supply the defaults, converted to the topic's unit. */
    assert_int_equal(config_set(c, "log.retention.hours", "2", err, sizeof err), 0);
    assert_int_equal(config_set(c, "log.segment.bytes", "1048576", err, sizeof err), 0);
    assert_int_equal(config_set(c, "message.max.bytes", "5000", err, sizeof err), 0);
    assert_int_equal(config_set(c, "log.roll.jitter.hours", "1", err, sizeof err), 0);
    assert_int_equal(config_set(c, "compression.type", "zstd", err, sizeof err), 0);
    assert_int_equal(config_set(c, "log.cleaner.min.cleanable.ratio", "0.25", err, sizeof err), 0);
    topic_config_resolve(c, NULL, 0, &t);
    assert_int_equal(t.retention_ms, 7200000);
    assert_int_equal(t.segment_bytes, 1048576);
    assert_int_equal(t.max_message_bytes, 5000);
    assert_int_equal(t.segment_jitter_ms, 3600000);
    assert_int_equal(t.compression_type, TOPIC_COMPRESSION_ZSTD);
    assert_true(t.min_cleanable_dirty_ratio == 0.25);

    /* Overrides win; the deprecated difference bound fills an unset side. */
    struct topic_config_kv kv[] = {
        {"retention.ms", "5000"},
        {"cleanup.policy", "compact,delete"},
        {"compression.type", "uncompressed"},
        {"message.timestamp.type", "LogAppendTime"},
        {"message.timestamp.difference.max.ms", "60000"},
        {"message.timestamp.after.max.ms", "1000"},
        {"retention.ms", "6000"}, /* the last one wins */
    };
    topic_config_resolve(c, kv, 7, &t);
    assert_int_equal(t.retention_ms, 6000);
    assert_true(t.cleanup_compact && t.cleanup_delete);
    assert_int_equal(t.compression_type, TOPIC_COMPRESSION_NONE);
    assert_true(t.message_timestamp_log_append);
    assert_int_equal(t.message_timestamp_before_max_ms, 60000);
    assert_int_equal(t.message_timestamp_after_max_ms, 1000);
    assert_int_equal(t.segment_bytes, 1048576);

    /* Negative broker retention means forever. */
    assert_int_equal(config_set(c, "log.retention.ms", "-100", err, sizeof err), 0);
    topic_config_resolve(c, NULL, 0, &t);
    assert_int_equal(t.retention_ms, -1);
    config_free(c);
}

static void test_topic_describe(void **state)
{
    (void)state;
    char err[256];
    struct samsa_config *c = config_new();
    struct config_entry e;

    assert_true(topic_config_describe_key(c, NULL, 0, "retention.ms", &e));
    assert_string_equal(e.value, "604800000");
    assert_int_equal(e.source, CONFIG_SOURCE_DEFAULT);
    assert_int_equal(e.type, CONFIG_TYPE_LONG);
    assert_false(e.read_only);
    assert_int_equal(e.n_synonyms, 1);
    assert_string_equal(e.synonyms[0].name, "log.retention.hours");
    assert_string_equal(e.synonyms[0].value, "168");
    assert_int_equal(e.synonyms[0].source, CONFIG_SOURCE_DEFAULT);

    assert_int_equal(config_set(c, "log.retention.hours", "24", err, sizeof err), 0);
    assert_true(topic_config_describe_key(c, NULL, 0, "retention.ms", &e));
    assert_string_equal(e.value, "86400000");
    assert_int_equal(e.source, CONFIG_SOURCE_STATIC_BROKER);
    assert_int_equal(e.n_synonyms, 2);
    assert_string_equal(e.synonyms[0].value, "24");
    assert_int_equal(e.synonyms[0].source, CONFIG_SOURCE_STATIC_BROKER);
    assert_string_equal(e.synonyms[1].value, "168");
    assert_int_equal(e.synonyms[1].source, CONFIG_SOURCE_DEFAULT);

    struct topic_config_kv kv[] = {{"retention.ms", " 1000 "}, {"cleanup.policy", "compact"}};
    assert_true(topic_config_describe_key(c, kv, 2, "retention.ms", &e));
    assert_string_equal(e.value, "1000");
    assert_int_equal(e.source, CONFIG_SOURCE_DYNAMIC_TOPIC);
    assert_int_equal(e.n_synonyms, 3);
    assert_string_equal(e.synonyms[0].name, "retention.ms");
    assert_string_equal(e.synonyms[0].value, "1000");
    assert_int_equal(e.synonyms[0].source, CONFIG_SOURCE_DYNAMIC_TOPIC);
    assert_string_equal(e.synonyms[1].name, "log.retention.hours");

    assert_true(topic_config_describe_key(c, kv, 2, "cleanup.policy", &e));
    assert_string_equal(e.value, "compact");
    assert_int_equal(e.type, CONFIG_TYPE_LIST);
    assert_int_equal(e.source, CONFIG_SOURCE_DYNAMIC_TOPIC);

    /* A topic config with no broker synonym. */
    assert_true(topic_config_describe_key(c, kv, 2, "remote.storage.enable", &e));
    assert_string_equal(e.value, "false");
    assert_int_equal(e.source, CONFIG_SOURCE_DEFAULT);
    assert_int_equal(e.n_synonyms, 0);

    /* max.message.bytes comes from message.max.bytes. */
    assert_true(topic_config_describe_key(c, NULL, 0, "max.message.bytes", &e));
    assert_string_equal(e.value, "1048588");
    assert_string_equal(e.synonyms[0].name, "message.max.bytes");
    assert_false(topic_config_describe_key(c, NULL, 0, "retention.hours", &e));

    for (size_t i = 0; i < topic_config_defs_count; i++) {
        topic_config_describe(c, NULL, 0, i, &e);
        assert_non_null(e.value);
        assert_non_null(e.doc);
    }
    config_free(c);
}

/* ------------------------------------------------------------------ */
/* meta.properties                                                     */

static void test_meta_properties(void **state)
{
    (void)state;
    char err[512] = "", want[512], dir[128];
    snprintf(dir, sizeof dir, "%s/logdir", tmpdir);
    assert_int_equal(mkdir(dir, 0755), 0);

    struct meta_properties mp, back;
    assert_int_equal(meta_properties_read(dir, &back, err, sizeof err), 1); /* not formatted */
    assert_int_equal(meta_properties_init(&mp, 7, "MkU3OEVBNTcwNTJENDM2Qk", err, sizeof err), 0);
    assert_int_equal(meta_properties_write(dir, &mp, err, sizeof err), 0);
    assert_int_equal(meta_properties_read(dir, &back, err, sizeof err), 0);
    assert_int_equal(back.version, 1);
    assert_string_equal(back.cluster_id, "MkU3OEVBNTcwNTJENDM2Qk");
    assert_int_equal(back.node_id, 7);
    assert_true(back.has_directory_id);
    assert_memory_equal(back.directory_id, mp.directory_id, UUID_LEN);

    /* The file is what Kafka's Properties.store writes. */
    char path[256], text[512], dirid[UUID_STR_LEN + 1];
    snprintf(path, sizeof path, "%s/meta.properties", dir);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    uuid_to_string(mp.directory_id, dirid);
    char *date_end = strchr(text + 2, '\n');
    assert_non_null(date_end);
    assert_memory_equal(text, "#\n#", 3);
    snprintf(want, sizeof want, "\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\ndirectory.id=%s\n"
             "node.id=7\nversion=1\n", dirid);
    assert_string_equal(date_end, want);
    snprintf(path, sizeof path, "%s/meta.properties.tmp", dir);
    assert_int_equal(access(path, F_OK), -1); /* no temporary left behind */

    assert_int_equal(meta_properties_check(&back, dir, 7, "MkU3OEVBNTcwNTJENDM2Qk", err,
                                           sizeof err),
                     0);
    assert_int_equal(meta_properties_check(&back, dir, 3, NULL, err, sizeof err), -1);
    snprintf(want, sizeof want,
             "%s/meta.properties: stored node.id 7 does not match the configured node.id 3. If you "
             "moved your data, make sure the configured node.id matches; to start a new node, "
             "remove all data in its log directories.", dir);
    assert_string_equal(err, want);
    assert_int_equal(meta_properties_check(&back, dir, 7, "AAAAAAAAAAAAAAAAAAAAAQ", err,
                                           sizeof err),
                     -1);
    snprintf(want, sizeof want, "%s/meta.properties: cluster.id MkU3OEVBNTcwNTJENDM2Qk does not "
             "match cluster.id AAAAAAAAAAAAAAAAAAAAAQ of the other log directories", dir);
    assert_string_equal(err, want);

    /* A fresh cluster id is a Kafka UUID string. */
    assert_int_equal(meta_properties_init(&mp, 1, NULL, err, sizeof err), 0);
    uint8_t id[UUID_LEN];
    assert_int_equal(strlen(mp.cluster_id), UUID_STR_LEN);
    assert_int_equal(uuid_from_string(mp.cluster_id, id), 0);
    assert_int_equal(meta_properties_write(dir, &mp, err, sizeof err), 0); /* overwrite */
    assert_int_equal(meta_properties_read(dir, &back, err, sizeof err), 0);
    assert_string_equal(back.cluster_id, mp.cluster_id);

    /* Files Kafka itself might hold, good and bad. */
    snprintf(path, sizeof path, "%s/meta.properties", dir);
    f = fopen(path, "wb");
    fputs("#\n#Thu Feb 01 12:00:00 UTC 2024\nnode.id=2\nversion=1\ncluster.id=abc\n", f);
    fclose(f);
    assert_int_equal(meta_properties_read(dir, &back, err, sizeof err), 0);
    assert_int_equal(back.node_id, 2);
    assert_string_equal(back.cluster_id, "abc");
    assert_false(back.has_directory_id);

    static const struct {
        const char *text, *why;
    } bad[] = {
        {"broker.id=1\ncluster.id=abc\n",
         "version 0 (a ZooKeeper-mode directory) is not supported; samsa needs version=1"},
        {"version=2\nnode.id=1\ncluster.id=abc\n", "unknown meta.properties version '2'"},
        {"version=1\ncluster.id=abc\n", "node.id was not found"},
        {"version=1\nnode.id=one\ncluster.id=abc\n", "node.id 'one' is not a base-10 node id"},
        {"version=1\nnode.id=1\n", "cluster.id was not found"},
        {"version=1\nnode.id=1\ncluster.id=abc\ndirectory.id=xyz\n",
         "directory.id 'xyz' is not a Kafka UUID"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        f = fopen(path, "wb");
        fputs(bad[i].text, f);
        fclose(f);
        assert_int_equal(meta_properties_read(dir, &back, err, sizeof err), -1);
        snprintf(want, sizeof want, "%s: %s", path, bad[i].why);
        assert_string_equal(err, want);
    }

    snprintf(path, sizeof path, "%s/missing", tmpdir);
    assert_int_equal(meta_properties_write(path, &mp, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s/meta.properties.tmp: No such file or directory", path);
    assert_string_equal(err, want);
}

/* KIP-226: a listener's ssl.* keys change per broker in a dynamic layer
 * above their static value, through the registered reconfig check. */
static int reconfig_calls;
static int refuse_missing(const struct samsa_config *next, bool prepare, char *err, size_t errlen)
{
    (void)prepare;
    reconfig_calls++;
    const char *v = config_get_any(next, "listener.name.ssl.ssl.keystore.location");
    if (v && !strcmp(v, "/missing")) {
        snprintf(err, errlen, "cannot be opened");
        return -1;
    }
    return 0;
}

static void test_listener_keys_dynamic(void **state)
{
    (void)state;
    char err[512];
    struct samsa_config *c = config_new();
    assert_int_equal(config_set(c, "listener.name.ssl.ssl.keystore.location", "/a.pem", err, sizeof err), 0);
    config_set_reconfig_check(refuse_missing);
    const char *key = "listener.name.ssl.ssl.keystore.location";
    expect_alter(c, false, key, CONFIG_OP_SET, "/b.pem", 0, NULL);
    /* the check reads files: config_alter_broker leaves it to its caller,
     * which makes it off the network worker (api/configs.c) */
    assert_int_equal(reconfig_calls, 0);
    assert_string_equal(config_get_any(c, key), "/b.pem");
    struct config_entry e;
    assert_true(config_describe_key(c, key, false, &e));
    assert_int_equal(e.source, CONFIG_SOURCE_DYNAMIC_BROKER);
    assert_false(e.read_only);
    assert_string_equal(e.value, "/b.pem");
    assert_int_equal(e.n_synonyms, 2);
    assert_string_equal(e.synonyms[1].value, "/a.pem");
    assert_int_equal(e.synonyms[1].source, CONFIG_SOURCE_STATIC_BROKER);
    struct samsa_config *d = config_dup(c);
    assert_string_equal(config_get_any(d, key), "/b.pem");
    config_free(d);
    /* the preview is the changed config, c untouched; the check on it
     * refuses */
    struct config_alter ch = {key, CONFIG_OP_SET, "/missing"};
    struct samsa_config *next = NULL;
    assert_true(config_alter_names_listener_key(&ch, 1));
    assert_int_equal(config_alter_broker_preview(c, false, &ch, 1, &next, err, sizeof err), 0);
    assert_non_null(next);
    assert_string_equal(config_get_any(next, key), "/missing");
    assert_string_equal(config_get_any(c, key), "/b.pem");
    assert_int_equal(config_reconfig_check(next, false, err, sizeof err), CONFIG_ERR_INVALID_CONFIG);
    assert_string_equal(err, "cannot be opened");
    assert_int_equal(reconfig_calls, 1);
    config_free(next);
    struct config_alter bad = {key, CONFIG_OP_SET, NULL};
    assert_int_equal(config_alter_broker_preview(c, false, &bad, 1, &next, err, sizeof err), CONFIG_ERR_INVALID_REQUEST);
    assert_null(next);
    /* per broker only; the table key itself only with the prefix; a
     * listener key whose table key is read-only stays read-only */
    expect_alter(c, true, key, CONFIG_OP_SET, "/b.pem", CONFIG_ERR_INVALID_REQUEST,
                 "Cannot update these configs at default cluster level, broker id must be specified: "
                 "Set(listener.name.ssl.ssl.keystore.location)");
    expect_alter(c, false, "ssl.keystore.location", CONFIG_OP_SET, "/b.pem", CONFIG_ERR_INVALID_REQUEST,
                 "These security configs can be dynamically updated only per-listener using the listener "
                 "prefix: Set(ssl.keystore.location)");
    expect_alter(c, false, "listener.name.ssl.sasl.oauthbearer.expected.issuer", CONFIG_OP_SET, "x",
                 CONFIG_ERR_INVALID_REQUEST,
                 "Cannot update these configs dynamically: Set(listener.name.ssl.sasl.oauthbearer.expected.issuer)");
    expect_alter(c, false, "listener.name.ssl.ssl.allow.dn.changes", CONFIG_OP_SET, "maybe",
                 CONFIG_ERR_INVALID_REQUEST, NULL);
    /* a dynamic-only key, then deleting both falls back to the static */
    expect_alter(c, false, "listener.name.ssl.ssl.allow.dn.changes", CONFIG_OP_SET, "TRUE", 0, NULL);
    assert_string_equal(config_get_any(c, "listener.name.ssl.ssl.allow.dn.changes"), "true");
    expect_alter(c, false, "listener.name.ssl.ssl.allow.dn.changes", CONFIG_OP_DELETE, NULL, 0, NULL);
    assert_null(config_get_any(c, "listener.name.ssl.ssl.allow.dn.changes"));
    expect_alter(c, false, key, CONFIG_OP_DELETE, NULL, 0, NULL);
    assert_string_equal(config_get_any(c, key), "/a.pem");
    /* the metadata log replays it */
    assert_int_equal(config_set_dynamic(c, false, key, "/c.pem", err, sizeof err), 0);
    assert_string_equal(config_get_any(c, key), "/c.pem");
    assert_int_equal(config_set_dynamic(c, true, key, "/c.pem", err, sizeof err), -1);
    assert_int_equal(config_set_dynamic(c, false, key, NULL, err, sizeof err), 0);
    assert_string_equal(config_get_any(c, key), "/a.pem");
    config_set_reconfig_check(NULL);
    config_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_enum_numbers),
        cmocka_unit_test(test_every_default_passes_its_validator),
        cmocka_unit_test(test_no_effect_keys_are_documented),
        cmocka_unit_test(test_kafka_broker_keys),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_shipped_conf_equals_defaults),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_value_normalisation),
        cmocka_unit_test(test_listener_parsing),
        cmocka_unit_test(test_properties_syntax),
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_retention_precedence),
        cmocka_unit_test(test_validate),
        cmocka_unit_test(test_describe_broker),
        cmocka_unit_test(test_alter_broker),
        cmocka_unit_test(test_list_apply),
        cmocka_unit_test(test_topic_validate),
        cmocka_unit_test(test_topic_resolve),
        cmocka_unit_test(test_topic_describe),
        cmocka_unit_test(test_meta_properties),
        cmocka_unit_test(test_server_set_key),
        cmocka_unit_test(test_listener_keys_dynamic),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
