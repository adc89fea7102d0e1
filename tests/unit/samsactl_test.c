/* samsactl without a server: Kafka's murmur2 against the Java client's
 * values, partition choice, command-line parsing into the option structs,
 * the console producer's line splitting, the console consumer's record
 * layout, consumer group assignments, lag and offset resets, bootstrap
 * lists and line input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "client.h"
#include "cluster.h"
#include "configs.h"
#include "logdirs.h"
#include "consume.h"
#include "groups.h"
#include "linereader.h"
#include "opts.h"
#include "partitioner.h"
#include "produce.h"
#include "net/sasl_client.h"
#include "sasl.h"
#include "table.h"
#include "transactions.h"
#include "proto/gen/consumer_protocol_assignment.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "topics.h"
#include "util/uuid.h"

/* ---- murmur2 ---- */

struct hash_case {
    const char *key;
    int32_t hash;
};

static void test_murmur2_kafka_utils_test(void **state)
{
    (void)state;
    /* org.apache.kafka.common.utils.UtilsTest.testMurmur2 */
    static const struct hash_case cases[] = {
        {"21", -973932308},
        {"foobar", -790332482},
        {"a-little-bit-long-string", -985981536},
        {"a-little-bit-longer-string", -1486304829},
        {"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
        {"abc", 479470107},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(kafka_murmur2(cases[i].key, strlen(cases[i].key)), cases[i].hash);
}

static void test_murmur2_java_generated(void **state)
{
    (void)state;
    /* Generated with the Java client's Utils.murmur2 (kafkajs keeps the
     * table for its JavaCompatiblePartitioner), and the empty key. */
    static const struct hash_case cases[] = {
        {"0", 971027396},          {"1", -1993445489},        {"128", -326012175},
        {"2187", -1508407203},     {"16384", -325739742},     {"78125", -1654490814},
        {"279936", 1462227128},    {"823543", -2014198330},   {"2097152", 607668903},
        {"4782969", -1182699775},  {"10000000", -1830336757}, {"19487171", -1603849305},
        {"35831808", -857013643},  {"62748517", -1167431028}, {"105413504", -381294639},
        {"170859375", -1658323481}, {"100:48069", 1009543857}, {"", 275646681},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(kafka_murmur2(cases[i].key, strlen(cases[i].key)), cases[i].hash);
    /* librdkafka's rdmurmur2.c unit test (its murmur2 partitioner must
     * agree with Java), with its unaligned suffixes. */
    static const struct hash_case rdkafka[] = {
        {"kafka", (int32_t)0xd067cf64},
        {"giberish123456789", (int32_t)0x8f552b0c},
        {"1234", (int32_t)0x9fc97b14},
        {"234", (int32_t)0xe7c009ca},
        {"34", (int32_t)0x873930da},
        {"4", (int32_t)0x5a4b5ca1},
        {"PreAmbleWillBeRemoved,ThePrePartThatIs", (int32_t)0x78424f1c},
        {"reAmbleWillBeRemoved,ThePrePartThatIs", (int32_t)0x4a62b377},
        {"eAmbleWillBeRemoved,ThePrePartThatIs", (int32_t)0xe0e4e09e},
        {"AmbleWillBeRemoved,ThePrePartThatIs", (int32_t)0x62b8b43f},
        {"", (int32_t)0x106e08d9},
    };
    for (size_t i = 0; i < sizeof rdkafka / sizeof rdkafka[0]; i++)
        assert_int_equal(kafka_murmur2(rdkafka[i].key, strlen(rdkafka[i].key)), rdkafka[i].hash);
    /* An older version of that test listed the positive form. */
    assert_int_equal(kafka_to_positive(kafka_murmur2("amqp", 4)), 767747138);
}

static void test_partition_choice(void **state)
{
    (void)state;
    /* toPositive(-790332482) = 1357151166 */
    assert_int_equal(kafka_to_positive(-790332482), 1357151166);
    assert_int_equal(partition_for_key("foobar", 6, 10), 6);
    assert_int_equal(partition_for_key("foobar", 6, 50), 16);
    /* toPositive clears the sign bit; it is not abs(). */
    assert_int_equal(kafka_to_positive(INT32_MIN), 0);
    assert_int_equal(kafka_to_positive(-1), INT32_MAX);
    /* "21": -973932308 & 0x7fffffff = 1173551340 */
    assert_int_equal(partition_for_key("21", 2, 7), 1173551340 % 7);
    for (int n = 1; n < 100; n++) {
        int32_t p = partition_for_key("some key", 8, n);
        assert_true(p >= 0 && p < n);
    }
    struct round_robin rr = {0};
    int32_t seq[7];
    for (int i = 0; i < 7; i++)
        seq[i] = round_robin_next(&rr, 3);
    int32_t want[7] = {0, 1, 2, 0, 1, 2, 0};
    assert_memory_equal(seq, want, sizeof want);
}

/* ---- command lines ---- */

#define ARGV(...) ((char *[]){__VA_ARGS__})
#define ARGC(...) ((int)(sizeof((char *[]){__VA_ARGS__}) / sizeof(char *)))
#define PARSE(fn, o, g, ...) fn(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), o, g, err, sizeof err)

static void test_produce_args(void **state)
{
    (void)state;
    char err[256];
    struct produce_opts o;
    struct global_opts g = {0};
    assert_int_equal(PARSE(produce_parse_args, &o, &g, "--topic", "t1", "--partition=3", "--acks", "all",
                           "--batch-size", "100", "--linger-ms", "5", "--property", "parse.key=true",
                           "--property", "key.separator=\\t::", "--property", "null.marker=NULL",
                           "--bootstrap-server", "h:1"),
                     ARGS_OK);
    assert_string_equal(o.topic, "t1");
    assert_int_equal(o.partition, 3);
    assert_int_equal(o.acks, -1);
    assert_int_equal(o.batch_size, 100);
    assert_int_equal(o.linger_ms, 5);
    assert_true(o.parse_key);
    assert_false(o.parse_headers);
    assert_string_equal(o.key_separator, "\t::");
    assert_string_equal(o.null_marker, "NULL");
    assert_string_equal(g.bootstrap, "h:1");
    produce_opts_free(&o);

    /* Defaults, as Kafka's console producer and LineMessageReader. */
    assert_int_equal(PARSE(produce_parse_args, &o, &g, "--topic", "t"), ARGS_OK);
    assert_int_equal(o.partition, -1);
    assert_int_equal(o.acks, -1);
    assert_int_equal(o.batch_size, 16384);
    assert_string_equal(o.key_separator, "\t");
    assert_string_equal(o.headers_delimiter, "\t");
    assert_string_equal(o.headers_separator, ",");
    assert_string_equal(o.headers_key_separator, ":");
    assert_null(o.null_marker);
    produce_opts_free(&o);

    assert_int_equal(PARSE(produce_parse_args, &o, &g, "--acks", "1"), ARGS_ERROR);
    assert_string_equal(err, "--topic is required");
    produce_opts_free(&o);
    assert_int_equal(PARSE(produce_parse_args, &o, &g, "--topic", "t", "--acks", "2"), ARGS_ERROR);
    produce_opts_free(&o);
    assert_int_equal(PARSE(produce_parse_args, &o, &g, "--topic", "t", "--partition", "-1"), ARGS_ERROR);
    produce_opts_free(&o);
    assert_int_equal(PARSE(produce_parse_args, &o, &g, "--topic", "t", "--bogus"), ARGS_ERROR);
    assert_string_equal(err, "unknown option '--bogus'");
    produce_opts_free(&o);
    assert_int_equal(PARSE(produce_parse_args, &o, &g, "--topic"), ARGS_ERROR);
    assert_string_equal(err, "option '--topic' requires a value");
    produce_opts_free(&o);
    assert_int_equal(PARSE(produce_parse_args, &o, &g, "--topic", "t", "stray"), ARGS_ERROR);
    produce_opts_free(&o);
    assert_int_equal(PARSE(produce_parse_args, &o, &g, "--topic", "t", "--property", "headers.separator=:"),
                     ARGS_ERROR);
    assert_string_equal(err, "headers.separator and headers.key.separator may not be equal");
    produce_opts_free(&o);
    assert_int_equal(PARSE(produce_parse_args, &o, &g, "--topic", "t", "--property", "null.marker=\\t"),
                     ARGS_ERROR);
    produce_opts_free(&o);
    assert_int_equal(PARSE(produce_parse_args, &o, &g, "--help"), ARGS_HELP);
    produce_opts_free(&o);

    /* Compression: Kafka's console producer option and producer property. */
    assert_int_equal(PARSE(produce_parse_args, &o, &g, "--topic", "t"), ARGS_OK);
    assert_int_equal(o.compression, RB_CODEC_NONE);
    produce_opts_free(&o);
    static char *codecs[] = {"none", "gzip", "snappy", "lz4", "zstd"};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(PARSE(produce_parse_args, &o, &g, "--topic", "t", "--compression-codec", codecs[i]),
                         ARGS_OK);
        assert_int_equal(o.compression, i);
        produce_opts_free(&o);
    }
    assert_int_equal(PARSE(produce_parse_args, &o, &g, "--topic", "t", "--producer-property", "compression.type=lz4"),
                     ARGS_OK);
    assert_int_equal(o.compression, RB_CODEC_LZ4);
    produce_opts_free(&o);
    assert_int_equal(PARSE(produce_parse_args, &o, &g, "--topic", "t", "--compression-codec", "brotli"), ARGS_ERROR);
    assert_string_equal(err, "invalid --compression-codec 'brotli' (want none, gzip, snappy, lz4 or zstd)");
    produce_opts_free(&o);
    assert_int_equal(PARSE(produce_parse_args, &o, &g, "--topic", "t", "--compression-codec", "uncompressed"),
                     ARGS_ERROR);
    produce_opts_free(&o);
}

static void test_cluster_plugins_value(void **state)
{
    (void)state;
    char err[256];
    struct cluster_plugin *v;
    char empty[] = "";
    assert_int_equal(cluster_plugins_parse(empty, &v, err, sizeof err), 0);
    assert_null(v);
    char value[] = "codec-zstd:0.1.0:1.0:codec:zstd(4),lua::1.0:authorizer:lua+partitioner:lua,bare:1:1.0:";
    assert_int_equal(cluster_plugins_parse(value, &v, err, sizeof err), 3);
    assert_string_equal(v[0].name, "codec-zstd");
    assert_string_equal(v[0].version, "0.1.0");
    assert_string_equal(v[0].abi, "1.0");
    assert_string_equal(v[0].caps, "codec:zstd(4)");
    assert_string_equal(v[1].name, "lua");
    assert_string_equal(v[1].version, "");
    assert_string_equal(v[1].caps, "authorizer:lua,partitioner:lua");
    assert_string_equal(v[2].name, "bare");
    assert_string_equal(v[2].caps, "");
    free(v);
    char bad[] = "ok:1:1.0:codec:gzip(1),broken:1";
    assert_int_equal(cluster_plugins_parse(bad, &v, err, sizeof err), -1);
    assert_string_equal(err, "malformed samsa.plugins.loaded entry 'broken'");

    struct cluster_plugins_opts o;
    struct global_opts g = {0};
    assert_int_equal(PARSE(cluster_plugins_parse_args, &o, &g, "--bootstrap-server", "h:2"), ARGS_OK);
    assert_int_equal(o.broker, -1);
    assert_int_equal(PARSE(cluster_plugins_parse_args, &o, &g, "--broker", "3", "--bootstrap-server", "h:1"),
                     ARGS_OK);
    assert_int_equal(o.broker, 3);
    assert_string_equal(g.bootstrap, "h:1");
    assert_int_equal(PARSE(cluster_plugins_parse_args, &o, &g, "--broker", "x"), ARGS_ERROR);
    assert_string_equal(err, "invalid --broker 'x' (want a node id >= 0)");
}

static void test_consume_args(void **state)
{
    (void)state;
    char err[256];
    struct consume_opts o;
    struct global_opts g = {0};
    assert_int_equal(PARSE(consume_parse_args, &o, &g, "--topic", "t", "--partition", "2", "--offset", "42",
                           "--max-messages", "10", "--timeout-ms", "1500", "--isolation-level", "read_committed",
                           "--property", "print.key=true", "--property", "print.offset=TRUE ",
                           "--property", "print.value=false", "--property", "key.separator=|"),
                     ARGS_OK);
    assert_string_equal(o.topic, "t");
    assert_int_equal(o.partition, 2);
    assert_int_equal(o.offset_kind, OFFSET_ABSOLUTE);
    assert_int_equal(o.offset, 42);
    assert_int_equal(o.max_messages, 10);
    assert_int_equal(o.timeout_ms, 1500);
    assert_int_equal(o.isolation_level, 1);
    assert_true(o.fmt.print_key);
    assert_true(o.fmt.print_offset);
    assert_false(o.fmt.print_value);
    assert_false(o.fmt.print_timestamp);
    assert_string_equal(o.fmt.key_separator, "|");
    consume_opts_free(&o);

    assert_int_equal(PARSE(consume_parse_args, &o, &g, "--topic", "t", "--from-beginning"), ARGS_OK);
    assert_int_equal(o.offset_kind, OFFSET_EARLIEST);
    assert_int_equal(o.partition, -1);
    assert_int_equal(o.max_messages, -1);
    assert_int_equal(o.timeout_ms, -1);
    assert_int_equal(o.isolation_level, 0);
    assert_true(o.fmt.print_value);
    consume_opts_free(&o);

    assert_int_equal(PARSE(consume_parse_args, &o, &g, "--topic", "t"), ARGS_OK);
    assert_int_equal(o.offset_kind, OFFSET_DEFAULT);
    consume_opts_free(&o);
    assert_int_equal(PARSE(consume_parse_args, &o, &g, "--topic", "t", "--offset", "earliest"), ARGS_OK);
    assert_int_equal(o.offset_kind, OFFSET_EARLIEST);
    consume_opts_free(&o);
    assert_int_equal(PARSE(consume_parse_args, &o, &g, "--topic", "t", "--offset", "latest"), ARGS_OK);
    assert_int_equal(o.offset_kind, OFFSET_LATEST);
    consume_opts_free(&o);

    assert_int_equal(PARSE(consume_parse_args, &o, &g, "--topic", "t", "--offset", "-3"), ARGS_ERROR);
    consume_opts_free(&o);
    assert_int_equal(PARSE(consume_parse_args, &o, &g, "--topic", "t", "--offset", "1", "--from-beginning"),
                     ARGS_ERROR);
    consume_opts_free(&o);
    assert_int_equal(PARSE(consume_parse_args, &o, &g, "--topic", "t", "--isolation-level", "x"), ARGS_ERROR);
    consume_opts_free(&o);
    assert_int_equal(PARSE(consume_parse_args, &o, &g, "--topic", "t", "--max-messages", "0"), ARGS_ERROR);
    consume_opts_free(&o);
    assert_int_equal(PARSE(consume_parse_args, &o, &g, "--from-beginning=yes", "--topic", "t"), ARGS_ERROR);
    assert_string_equal(err, "option '--from-beginning' takes no value");
    consume_opts_free(&o);
}

static void test_logdirs_args(void **state)
{
    (void)state;
    char err[256];
    struct logdirs_opts o;
    struct global_opts g = {0};
    assert_int_equal(PARSE(logdirs_parse_args, &o, &g, "describe"), ARGS_OK);
    assert_int_equal(o.nbrokers, 0);
    assert_int_equal(o.ntopics, 0);
    assert_false(o.json);
    logdirs_opts_free(&o);
    /* kafka-log-dirs.sh's spelling too */
    assert_int_equal(PARSE(logdirs_parse_args, &o, &g, "--describe", "--broker-list", "3,1", "--topic-list=a,b.c",
                           "--json", "--bootstrap-server", "h:1"),
                     ARGS_OK);
    assert_int_equal(o.nbrokers, 2);
    assert_int_equal(o.brokers[0], 3);
    assert_int_equal(o.brokers[1], 1);
    assert_int_equal(o.ntopics, 2);
    assert_string_equal(o.topics[1], "b.c");
    assert_true(o.json);
    assert_string_equal(g.bootstrap, "h:1");
    logdirs_opts_free(&o);
    assert_int_equal(PARSE(logdirs_parse_args, &o, &g, "describe", "--broker-list", "1,,2"), ARGS_ERROR);
    assert_string_equal(err, "invalid --broker-list '1,,2'");
    logdirs_opts_free(&o);
    assert_int_equal(PARSE(logdirs_parse_args, &o, &g, "describe", "--broker-list", "x"), ARGS_ERROR);
    assert_string_equal(err, "invalid broker id 'x' in --broker-list");
    logdirs_opts_free(&o);
    assert_int_equal(PARSE(logdirs_parse_args, &o, &g, "alter"), ARGS_ERROR);
    assert_string_equal(err, "expected 'describe'");
    logdirs_opts_free(&o);
    assert_int_equal(PARSE(logdirs_parse_args, &o, &g, "--help"), ARGS_HELP);
    logdirs_opts_free(&o);
}

static void test_configs_args(void **state)
{
    (void)state;
    char err[256];
    struct configs_opts o;
    struct global_opts g = {0};
    /* kafka-configs.sh's list: commas inside [ ] stay in the value */
    assert_int_equal(PARSE(configs_parse_args, &o, &g, "alter", "--topic", "t", "--add-config",
                           "cleanup.policy=[compact,delete],retention.ms=5", "--add-config", "a=,b=x=y",
                           "--delete-config", "c,d"),
                     ARGS_OK);
    assert_true(o.alter);
    assert_int_equal(o.resource, 2);
    assert_string_equal(o.name, "t");
    assert_int_equal(o.nset, 4);
    assert_string_equal(o.set_key[0], "cleanup.policy");
    assert_string_equal(o.set_value[0], "compact,delete");
    assert_string_equal(o.set_key[1], "retention.ms");
    assert_string_equal(o.set_value[1], "5");
    assert_string_equal(o.set_key[2], "a");
    assert_string_equal(o.set_value[2], "");
    assert_string_equal(o.set_key[3], "b");
    assert_string_equal(o.set_value[3], "x=y");
    assert_int_equal(o.ndel, 2);
    assert_string_equal(o.del_key[1], "d");
    configs_opts_free(&o);

    /* Kafka's spellings */
    assert_int_equal(PARSE(configs_parse_args, &o, &g, "--describe", "--entity-type", "brokers", "--entity-default",
                           "--all"),
                     ARGS_OK);
    assert_false(o.alter);
    assert_int_equal(o.resource, 4);
    assert_string_equal(o.name, "");
    assert_true(o.all);
    configs_opts_free(&o);
    assert_int_equal(PARSE(configs_parse_args, &o, &g, "--alter", "--broker", "3", "--add-config", "x=1"), ARGS_OK);
    assert_int_equal(o.resource, 4);
    assert_string_equal(o.name, "3");
    configs_opts_free(&o);

    /* refusals, one line each */
    assert_int_equal(PARSE(configs_parse_args, &o, &g, "describe"), ARGS_ERROR);
    assert_string_equal(err, "which entity: --broker ID, --broker-defaults or --topic NAME");
    configs_opts_free(&o);
    assert_int_equal(PARSE(configs_parse_args, &o, &g, "alter", "--broker", "1"), ARGS_ERROR);
    assert_string_equal(err, "configs alter needs --add-config or --delete-config");
    configs_opts_free(&o);
    assert_int_equal(PARSE(configs_parse_args, &o, &g, "alter", "--broker", "x", "--add-config", "a=1"), ARGS_ERROR);
    assert_string_equal(err, "--broker wants a broker id, not 'x'");
    configs_opts_free(&o);
    assert_int_equal(PARSE(configs_parse_args, &o, &g, "alter", "--topic", "t", "--add-config", "novalue"),
                     ARGS_ERROR);
    assert_string_equal(err, "invalid --add-config entry 'novalue' (want key=value)");
    configs_opts_free(&o);
    assert_int_equal(PARSE(configs_parse_args, &o, &g, "describe", "--topic", "t", "--broker", "1"), ARGS_ERROR);
    assert_string_equal(err, "one entity at a time");
    configs_opts_free(&o);
    assert_int_equal(PARSE(configs_parse_args, &o, &g, "describe", "--entity-type", "users", "--entity-name", "u"),
                     ARGS_ERROR);
    configs_opts_free(&o);
    assert_int_equal(PARSE(configs_parse_args, &o, &g, "describe", "--entity-type", "topics", "--entity-default"),
                     ARGS_ERROR);
    assert_string_equal(err, "topics have no default entity");
    configs_opts_free(&o);
    assert_int_equal(PARSE(configs_parse_args, &o, &g, "describe", "--topic", "t", "--add-config", "a=1"),
                     ARGS_ERROR);
    configs_opts_free(&o);
}

static void test_topics_args(void **state)
{
    (void)state;
    char err[256];
    struct topics_opts o;
    struct global_opts g = {0};
    assert_int_equal(PARSE(topics_parse_args, &o, &g, "create", "--topic", "t", "--partitions", "3",
                           "--replication-factor", "2", "--config", "cleanup.policy=compact", "--config",
                           " retention.ms = 1000 ", "--if-not-exists", "--validate-only"),
                     ARGS_OK);
    assert_int_equal(o.action, TOPICS_CREATE);
    assert_string_equal(o.topic, "t");
    assert_int_equal(o.partitions, 3);
    assert_int_equal(o.replication_factor, 2);
    assert_int_equal(o.nconfigs, 2);
    assert_string_equal(o.configs[0].key, "cleanup.policy");
    assert_string_equal(o.configs[0].value, "compact");
    assert_string_equal(o.configs[1].key, "retention.ms");
    assert_string_equal(o.configs[1].value, "1000");
    assert_true(o.if_not_exists);
    assert_true(o.validate_only);
    topics_opts_free(&o);

    /* Kafka's spelling of the action. */
    assert_int_equal(PARSE(topics_parse_args, &o, &g, "--describe", "--topic", "t", "--bootstrap-server", "x:1"),
                     ARGS_OK);
    assert_int_equal(o.action, TOPICS_DESCRIBE);
    topics_opts_free(&o);
    assert_int_equal(PARSE(topics_parse_args, &o, &g, "list", "--exclude-internal"), ARGS_OK);
    assert_int_equal(o.action, TOPICS_LIST);
    assert_true(o.exclude_internal);
    topics_opts_free(&o);
    assert_int_equal(PARSE(topics_parse_args, &o, &g, "alter", "--topic", "t", "--config", "a=b", "--delete-config",
                           "c"),
                     ARGS_OK);
    assert_int_equal(o.ndelete_configs, 1);
    assert_string_equal(o.delete_configs[0], "c");
    topics_opts_free(&o);

    assert_int_equal(PARSE(topics_parse_args, &o, &g, "create", "--topic", "t", "--replica-assignment", "0:1, 1:2",
                           "--config", "x=y"),
                     ARGS_OK);
    assert_int_equal(o.nassignment, 2);
    assert_int_equal(o.assignment[0].n, 2);
    assert_int_equal(o.assignment[0].ids[0], 0);
    assert_int_equal(o.assignment[0].ids[1], 1);
    assert_int_equal(o.assignment[1].ids[0], 1);
    assert_int_equal(o.assignment[1].ids[1], 2);
    topics_opts_free(&o);

    static const char *const bad[][8] = {
        {"create", "--partitions", "1"},                                  /* no topic */
        {"create", "--topic", "t", "--partitions", "0"},                  /* must be > 0 */
        {"create", "--topic", "t", "--replication-factor", "40000"},
        {"create", "--topic", "t", "--config", "x"},                      /* not key=val */
        {"create", "--topic", "t", "--config", "x=y=z"},
        {"create", "--topic", "t", "--config", "x="},
        {"create", "--topic", "t", "--replica-assignment", "0:1", "--partitions", "1"},
        {"create", "--topic", "t", "--replica-assignment", "0:0"},        /* duplicate */
        {"create", "--topic", "t", "--replica-assignment", "0:1,2"},      /* uneven */
        {"create", "--topic", "t", "--replica-assignment", "0:x"},
        {"create", "--topic", "bad name"},
        {"create", "--topic", "t", "--if-exists"},
        {"alter", "--topic", "t"},                                        /* nothing to alter */
        {"list", "--partitions", "2"},
        {"delete"},
        {"frobnicate"},
        {"--list", "--delete", "--topic", "t"},
        {"describe", "--topic", "(unclosed"},
        {"--topic", "t"},                                                 /* no action */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int n = 0;
        while (n < 8 && bad[i][n])
            n++;
        int rc = topics_parse_args(n, (char **)bad[i], &o, &g, err, sizeof err);
        if (rc != ARGS_ERROR)
            fail_msg("case %zu parsed", i);
        assert_true(strlen(err) > 0);
        topics_opts_free(&o);
    }
}

static void test_topic_selection(void **state)
{
    (void)state;
    assert_false(topic_is_pattern("my.topic_name-1"));
    assert_true(topic_is_pattern("my.*"));
    assert_true(topic_matches(NULL, "x"));
    assert_true(topic_matches("a.b", "a.b"));
    assert_false(topic_matches("a.b", "axb")); /* an exact name, not a regex */
    assert_true(topic_matches("a.*", "a.b"));
    assert_true(topic_matches("a.*", "a"));
    assert_false(topic_matches("a.*", "ba")); /* anchored, as Java's matches() */
    assert_true(topic_matches("foo|bar", "bar"));
}

/* ---- groups ---- */

static void test_groups_args(void **state)
{
    (void)state;
    char err[256];
    struct groups_opts o;
    struct global_opts g = {0};
    assert_int_equal(PARSE(groups_parse_args, &o, &g, "list", "--bootstrap-server", "h:3"), ARGS_OK);
    assert_int_equal(o.action, GROUPS_LIST);
    assert_null(o.group);
    assert_string_equal(g.bootstrap, "h:3");
    groups_opts_free(&o);

    /* Kafka's spelling of the action; describe shows every section
     * unless some are picked */
    assert_int_equal(PARSE(groups_parse_args, &o, &g, "--describe", "--group", "g1"), ARGS_OK);
    assert_int_equal(o.action, GROUPS_DESCRIBE);
    assert_string_equal(o.group, "g1");
    assert_int_equal(o.show, GROUPS_SHOW_ALL);
    groups_opts_free(&o);
    assert_int_equal(PARSE(groups_parse_args, &o, &g, "describe", "--group=g1", "--members", "--verbose"), ARGS_OK);
    assert_int_equal(o.show, GROUPS_SHOW_MEMBERS);
    groups_opts_free(&o);
    assert_int_equal(PARSE(groups_parse_args, &o, &g, "describe", "--group", "g1", "--state", "--offsets"), ARGS_OK);
    assert_int_equal(o.show, GROUPS_SHOW_STATE | GROUPS_SHOW_OFFSETS);
    groups_opts_free(&o);
    assert_int_equal(PARSE(groups_parse_args, &o, &g, "delete", "--group", "g1"), ARGS_OK);
    assert_int_equal(o.action, GROUPS_DELETE);
    groups_opts_free(&o);

    /* reset-offsets: a dry run unless --execute */
    assert_int_equal(PARSE(groups_parse_args, &o, &g, "reset-offsets", "--group", "g", "--topic", "t", "--to-earliest"),
                     ARGS_OK);
    assert_int_equal(o.action, GROUPS_RESET_OFFSETS);
    assert_int_equal(o.reset, RESET_EARLIEST);
    assert_false(o.execute);
    assert_false(o.dry_run);
    assert_int_equal(o.ntopics, 1);
    assert_string_equal(o.topics[0].topic, "t");
    assert_int_equal(o.topics[0].n, 0);
    groups_opts_free(&o);
    assert_int_equal(PARSE(groups_parse_args, &o, &g, "--reset-offsets", "--group", "g", "--topic", "t:2,0",
                           "--topic", "u", "--to-offset", "42", "--execute"),
                     ARGS_OK);
    assert_int_equal(o.reset, RESET_TO_OFFSET);
    assert_int_equal(o.to_offset, 42);
    assert_true(o.execute);
    assert_int_equal(o.ntopics, 2);
    assert_string_equal(o.topics[0].topic, "t");
    assert_int_equal(o.topics[0].n, 2);
    assert_int_equal(o.topics[0].partitions[0], 2);
    assert_int_equal(o.topics[0].partitions[1], 0);
    assert_string_equal(o.topics[1].topic, "u");
    assert_int_equal(o.topics[1].n, 0);
    groups_opts_free(&o);
    assert_int_equal(PARSE(groups_parse_args, &o, &g, "reset-offsets", "--group", "g", "--all-topics", "--to-latest",
                           "--dry-run"),
                     ARGS_OK);
    assert_true(o.all_topics);
    assert_int_equal(o.reset, RESET_LATEST);
    assert_true(o.dry_run);
    groups_opts_free(&o);
    assert_int_equal(PARSE(groups_parse_args, &o, &g, "describe", "--help"), ARGS_HELP);
    groups_opts_free(&o);

    /* the messages of the checks that are Kafka's own */
    assert_int_equal(PARSE(groups_parse_args, &o, &g, "reset-offsets", "--group", "g", "--to-latest"), ARGS_ERROR);
    assert_string_equal(err, "One of the reset scopes should be defined: --all-topics, --topic.");
    groups_opts_free(&o);
    assert_int_equal(PARSE(groups_parse_args, &o, &g, "reset-offsets", "--group", "g", "--topic", "t"), ARGS_ERROR);
    assert_string_equal(err, "One of the reset specifications should be defined: --to-earliest, --to-latest, "
                             "--to-offset.");
    groups_opts_free(&o);
    assert_int_equal(PARSE(groups_parse_args, &o, &g, "describe"), ARGS_ERROR);
    assert_string_equal(err, "--group is required for groups describe");
    groups_opts_free(&o);
    assert_int_equal(PARSE(groups_parse_args, &o, &g, "describe", "--group", "g", "--to-latest"), ARGS_ERROR);
    assert_string_equal(err, "option '--to-latest' is not valid with groups describe");
    groups_opts_free(&o);
    assert_int_equal(PARSE(groups_parse_args, &o, &g, "reset-offsets", "--group", "g", "--topic", "t", "--to-offset",
                           "-1"),
                     ARGS_ERROR);
    assert_string_equal(err, "invalid --to-offset '-1' (want an offset >= 0)");
    groups_opts_free(&o);

    static const char *const bad[][9] = {
        {"frobnicate"},
        {"--group", "g"},                                                  /* no action */
        {"list", "--group", "g"},
        {"list", "--members"},
        {"delete", "--group", "g", "--execute"},
        {"delete", "--group", ""},
        {"describe", "--group", "a", "--group", "b"},
        {"--list", "--describe", "--group", "g"},
        {"describe", "--group", "g", "stray"},
        {"reset-offsets", "--group", "g", "--topic", "t", "--to-earliest", "--to-latest"},
        {"reset-offsets", "--group", "g", "--topic", "t", "--to-offset", "x"},
        {"reset-offsets", "--group", "g", "--topic", "t", "--all-topics", "--to-latest"},
        {"reset-offsets", "--group", "g", "--topic", "t", "--to-latest", "--execute", "--dry-run"},
        {"reset-offsets", "--group", "g", "--topic", "t:", "--to-latest"},
        {"reset-offsets", "--group", "g", "--topic", ":1", "--to-latest"},
        {"reset-offsets", "--group", "g", "--topic", "t:0,,1", "--to-latest"},
        {"reset-offsets", "--group", "g", "--topic", "t:-1", "--to-latest"},
        {"reset-offsets", "--topic", "t", "--to-latest"},                  /* no group */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int n = 0;
        while (n < 9 && bad[i][n])
            n++;
        int rc = groups_parse_args(n, (char **)bad[i], &o, &g, err, sizeof err);
        if (rc != ARGS_ERROR)
            fail_msg("case %zu parsed", i);
        assert_true(strlen(err) > 0);
        groups_opts_free(&o);
    }
}

static void expect_format(const struct group_assignment *as, const char *want)
{
    struct buf b;
    buf_init(&b);
    group_assignment_format(as, &b);
    buf_append(&b, "", 1);
    assert_string_equal((const char *)b.data, want);
    buf_free(&b);
}

static void test_group_assignment(void **state)
{
    (void)state;
    struct arena a = ARENA_INIT;
    struct group_assignment as;
    /* ConsumerProtocolAssignment v1 written by hand: version, topics
     * [("t", [2, 0]), ("ab", [1])], null user data */
    static const uint8_t golden[] = {
        0x00, 0x01,                                     /* version 1 */
        0x00, 0x00, 0x00, 0x02,                         /* 2 topics */
        0x00, 0x01, 't',                                /* "t" */
        0x00, 0x00, 0x00, 0x02, 0, 0, 0, 2, 0, 0, 0, 0, /* [2, 0] */
        0x00, 0x02, 'a', 'b',                           /* "ab" */
        0x00, 0x00, 0x00, 0x01, 0, 0, 0, 1,             /* [1] */
        0xff, 0xff, 0xff, 0xff,                         /* user data: null */
    };
    assert_int_equal(group_assignment_decode(golden, sizeof golden, &a, &as), 0);
    assert_int_equal(as.ntopics, 2);
    assert_string_equal(as.topics[0].topic, "t");
    assert_int_equal(as.topics[0].n, 2);
    assert_int_equal(as.topics[0].partitions[0], 2);
    assert_string_equal(as.topics[1].topic, "ab");
    assert_int_equal(group_assignment_count(&as), 3);
    expect_format(&as, "ab(1),t(0,2)");

    /* a newer version is read with the fields samsactl knows, trailing
     * ones ignored, as Kafka's ConsumerProtocol does */
    uint8_t future[sizeof golden + 6];
    memcpy(future, golden, sizeof golden);
    future[1] = 9;
    memcpy(future + sizeof golden, "\x00\x00\x00\x07\x01\x02", 6);
    assert_int_equal(group_assignment_decode(future, sizeof future, &a, &as), 0);
    assert_int_equal(group_assignment_count(&as), 3);

    /* what the generated encoder writes round-trips (v0, user data) */
    consumer_protocol_assignment_t m;
    consumer_protocol_assignment_init(&m);
    m.assigned_partitions.a = consumer_protocol_assignment_topic_partition_new_array(&a, 1);
    m.assigned_partitions.n = 1;
    int32_t ps[] = {5, 4, 3};
    m.assigned_partitions.a[0].topic = KSTR_LIT("orders");
    m.assigned_partitions.a[0].partitions.a = ps;
    m.assigned_partitions.a[0].partitions.n = 3;
    m.user_data = (kbytes_t){(const uint8_t *)"ud", 2};
    struct kwriter w;
    kw_init(&w);
    kw_i16(&w, 0);
    consumer_protocol_assignment_encode(&w, 0, &m);
    assert_int_equal(group_assignment_decode(w.b.data, (int32_t)w.b.len, &a, &as), 0);
    expect_format(&as, "orders(3,4,5)");
    kw_free(&w);

    /* no assignment yet (between JoinGroup and SyncGroup), or one of
     * nothing */
    assert_int_equal(group_assignment_decode(NULL, 0, &a, &as), 0);
    assert_int_equal(as.ntopics, 0);
    expect_format(&as, "-");
    static const uint8_t nothing[] = {0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(group_assignment_decode(nothing, sizeof nothing, &a, &as), 0);
    assert_int_equal(group_assignment_count(&as), 0);
    expect_format(&as, "-");

    /* not an assignment: truncated anywhere, a negative version */
    for (size_t len = 1; len < sizeof golden - 4; len++)
        if (group_assignment_decode(golden, (int32_t)len, &a, &as) != -1)
            fail_msg("a truncation to %zu bytes decoded", len);
    static const uint8_t negative[] = {0xff, 0xfe, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(group_assignment_decode(negative, sizeof negative, &a, &as), -1);
    arena_free(&a);
}

static void test_group_lag_and_reset(void **state)
{
    (void)state;
    int64_t lag = 99;
    assert_true(group_lag(5, 10, &lag));
    assert_int_equal(lag, 5);
    assert_true(group_lag(10, 10, &lag));
    assert_int_equal(lag, 0);
    /* a log truncated below the committed offset: Kafka shows it */
    assert_true(group_lag(12, 10, &lag));
    assert_int_equal(lag, -2);
    assert_false(group_lag(-1, 10, &lag)); /* nothing committed */
    assert_false(group_lag(3, -1, &lag));  /* log end unknown */

    bool clamped;
    assert_int_equal(group_reset_target(RESET_EARLIEST, 0, 3, 20, &clamped), 3);
    assert_false(clamped);
    assert_int_equal(group_reset_target(RESET_LATEST, 0, 3, 20, &clamped), 20);
    assert_false(clamped);
    assert_int_equal(group_reset_target(RESET_TO_OFFSET, 7, 3, 20, &clamped), 7);
    assert_false(clamped);
    assert_int_equal(group_reset_target(RESET_TO_OFFSET, 20, 3, 20, &clamped), 20);
    assert_false(clamped);
    assert_int_equal(group_reset_target(RESET_TO_OFFSET, 21, 3, 20, &clamped), 20);
    assert_true(clamped);
    assert_int_equal(group_reset_target(RESET_TO_OFFSET, 2, 3, 20, &clamped), 3);
    assert_true(clamped);
}

static void test_group_offset_rows(void **state)
{
    (void)state;
    struct arena a = ARENA_INIT;
    int32_t m0t[] = {1, 0}, m1t[] = {2}, m1u[] = {0};
    struct group_assigned_topic t0[] = {{"t", m0t, 2}};
    struct group_assigned_topic t1[] = {{"u", m1u, 1}, {"t", m1t, 1}};
    struct group_assignment as[] = {{t0, 1}, {t1, 2}, {NULL, 0}};
    const struct group_committed cm[] = {{"t", 0, 5}, {"t", 3, 7}, {"a", 0, 1}, {"u", 0, 0}};
    struct group_offset_row *rows;
    int n = group_offset_rows(&a, as, 3, cm, 4, &rows);
    struct {
        const char *topic;
        int32_t partition;
        int64_t committed;
        int member;
    } want[] = {
        {"a", 0, 1, -1}, /* committed, assigned to nobody */
        {"t", 0, 5, 0},  {"t", 1, -1, 0}, {"t", 2, -1, 1},
        {"t", 3, 7, -1}, {"u", 0, 0, 1},
    };
    assert_int_equal(n, 6);
    for (int i = 0; i < n; i++) {
        assert_string_equal(rows[i].topic, want[i].topic);
        assert_int_equal(rows[i].partition, want[i].partition);
        assert_int_equal(rows[i].committed, want[i].committed);
        assert_int_equal(rows[i].member, want[i].member);
        assert_int_equal(rows[i].log_end, -1);
    }
    assert_int_equal(group_offset_rows(&a, NULL, 0, NULL, 0, &rows), 0);
    arena_free(&a);
}

static void test_bootstrap_list(void **state)
{
    (void)state;
    char err[256];
    struct kc_address *a;
    int n = kc_parse_bootstrap("127.0.0.1:9092, broker-2:19092,[::1]:9093", &a, err, sizeof err);
    assert_int_equal(n, 3);
    assert_string_equal(a[0].host, "127.0.0.1");
    assert_int_equal(a[0].port, 9092);
    assert_string_equal(a[1].host, "broker-2");
    assert_int_equal(a[1].port, 19092);
    assert_string_equal(a[2].host, "::1");
    assert_int_equal(a[2].port, 9093);
    kc_addresses_free(a, n);
    static const char *const bad[] = {"", "host", "host:", ":9092", "host:0", "host:70000", "h:1,", "[::1]9092",
                                      "h:12x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(kc_parse_bootstrap(bad[i], &a, err, sizeof err), -1);
}

/* ---- console producer lines ---- */

static struct produce_opts line_opts(void)
{
    struct produce_opts o;
    char err[128];
    struct global_opts g = {0};
    char *argv[] = {"--topic", "t"};
    assert_int_equal(produce_parse_args(2, argv, &o, &g, err, sizeof err), ARGS_OK);
    return o;
}

#define ASSERT_BYTES(b, s) \
    do { \
        assert_int_equal((b).len, (int32_t)strlen(s)); \
        assert_memory_equal((b).p, s, strlen(s)); \
    } while (0)

static void test_line_parsing(void **state)
{
    (void)state;
    char err[512];
    struct produce_line l = {0};
    struct produce_opts o = line_opts();

    /* Plain: the whole line is the value, no key. */
    const char *s = "hello\tworld";
    assert_int_equal(produce_parse_line(&o, s, strlen(s), 1, &l, err, sizeof err), 0);
    assert_int_equal(l.key.len, -1);
    ASSERT_BYTES(l.value, "hello\tworld");
    assert_int_equal(l.nheaders, 0);
    s = "";
    assert_int_equal(produce_parse_line(&o, s, 0, 1, &l, err, sizeof err), 0);
    assert_int_equal(l.value.len, 0);

    o.parse_key = true;
    s = "k1\tv1\tmore";
    assert_int_equal(produce_parse_line(&o, s, strlen(s), 1, &l, err, sizeof err), 0);
    ASSERT_BYTES(l.key, "k1");
    ASSERT_BYTES(l.value, "v1\tmore");
    s = "novalue";
    assert_int_equal(produce_parse_line(&o, s, strlen(s), 7, &l, err, sizeof err), -1);
    assert_string_equal(err, "No key separator found on line number 7: 'novalue'");
    o.ignore_error = true;
    assert_int_equal(produce_parse_line(&o, s, strlen(s), 7, &l, err, sizeof err), 0);
    assert_int_equal(l.key.len, -1);
    ASSERT_BYTES(l.value, "novalue");
    o.ignore_error = false;

    /* Headers, then key, then value; the null marker. */
    o.parse_headers = true;
    o.null_marker = "NULL";
    s = "h1:v1,h2:NULL,h3:\tNULL\tvalue";
    assert_int_equal(produce_parse_line(&o, s, strlen(s), 1, &l, err, sizeof err), 0);
    assert_int_equal(l.nheaders, 3);
    assert_int_equal(l.headers[0].key.len, 2);
    assert_memory_equal(l.headers[0].key.p, "h1", 2);
    ASSERT_BYTES(l.headers[0].value, "v1");
    assert_int_equal(l.headers[1].value.len, -1);
    assert_memory_equal(l.headers[2].key.p, "h3", 2);
    assert_int_equal(l.headers[2].value.len, 0);
    assert_int_equal(l.key.len, -1);
    ASSERT_BYTES(l.value, "value");

    /* Trailing empty pieces vanish, as with Java's String.split. */
    s = "a:1,,\tk\tv";
    assert_int_equal(produce_parse_line(&o, s, strlen(s), 1, &l, err, sizeof err), 0);
    assert_int_equal(l.nheaders, 1);
    /* Headers equal to the null marker: none at all. */
    s = "NULL\tk\tNULL";
    assert_int_equal(produce_parse_line(&o, s, strlen(s), 1, &l, err, sizeof err), 0);
    assert_int_equal(l.nheaders, 0);
    ASSERT_BYTES(l.key, "k");
    assert_int_equal(l.value.len, -1);

    s = "h1\tk\tv";
    assert_int_equal(produce_parse_line(&o, s, strlen(s), 3, &l, err, sizeof err), -1);
    assert_string_equal(err, "No header key separator found in pair 'h1' on line number 3");
    s = "NULL:x\tk\tv";
    assert_int_equal(produce_parse_line(&o, s, strlen(s), 3, &l, err, sizeof err), -1);
    assert_string_equal(err, "Header keys should not be equal to the null marker 'NULL' as they can't be null");
    s = "no delimiter";
    assert_int_equal(produce_parse_line(&o, s, strlen(s), 4, &l, err, sizeof err), -1);
    assert_string_equal(err, "No headers delimiter found on line number 4: 'no delimiter'");
    o.ignore_error = true;
    s = "h1\tk\tv";
    assert_int_equal(produce_parse_line(&o, s, strlen(s), 3, &l, err, sizeof err), 0);
    assert_int_equal(l.nheaders, 1);
    assert_int_equal(l.headers[0].value.len, -1);

    produce_line_free(&l);
    produce_opts_free(&o);
}

/* ---- console consumer layout ---- */

static void format_one(const struct fmt_opts *f, int ts_type, const char *expect)
{
    struct buf b = BUF_INIT, out = BUF_INIT;
    struct rb_builder bld;
    rb_builder_begin(&bld, &b, 0, 1700000000000LL, NULL);
    struct rb_header_kv h[2] = {
        {KSTR_LIT("h1"), {(const uint8_t *)"v1", 2}},
        {KSTR_LIT("h2"), KBYTES_NULL},
    };
    assert_int_equal(rb_builder_add(&bld, 1700000000000LL, (kbytes_t){(const uint8_t *)"key", 3},
                                    (kbytes_t){(const uint8_t *)"value", 5}, h, 2),
                     0);
    size_t len;
    assert_int_equal(rb_builder_finish(&bld, &len), 0);
    struct rb_record_iter it;
    struct rb_record rec;
    assert_int_equal(rb_record_iter_init_batch(&it, b.data, len), 0);
    assert_int_equal(rb_record_next(&it, &rec), 1);
    struct fmt_record r = {0, 5, ts_type, 1700000000000LL, &rec};
    format_record(&out, f, &r);
    assert_int_equal(out.len, strlen(expect));
    assert_memory_equal(out.data, expect, out.len);
    buf_free(&b);
    buf_free(&out);
}

static void test_format_record(void **state)
{
    (void)state;
    struct fmt_opts f;
    fmt_opts_default(&f);
    format_one(&f, RB_CREATE_TIME, "value\n");

    f.print_timestamp = f.print_partition = f.print_offset = f.print_key = true;
    format_one(&f, RB_CREATE_TIME, "CreateTime:1700000000000\tPartition:0\tOffset:5\tkey\tvalue\n");
    format_one(&f, RB_LOG_APPEND_TIME, "LogAppendTime:1700000000000\tPartition:0\tOffset:5\tkey\tvalue\n");

    f.print_headers = true;
    format_one(&f, RB_CREATE_TIME, "CreateTime:1700000000000\tPartition:0\tOffset:5\th1:v1,h2:null\tkey\tvalue\n");

    /* The last column ends with the line separator, whichever it is. */
    f.print_value = false;
    f.key_separator = " | ";
    f.null_literal = "<nil>";
    f.headers_separator = ";";
    format_one(&f, RB_CREATE_TIME, "CreateTime:1700000000000 | Partition:0 | Offset:5 | h1:v1;h2:<nil> | key\n");
    fmt_opts_default(&f);
    f.print_value = false;
    format_one(&f, RB_CREATE_TIME, "");
    f.print_offset = true;
    format_one(&f, RB_CREATE_TIME, "Offset:5\n");
}

static void test_format_null_key_no_headers(void **state)
{
    (void)state;
    struct buf b = BUF_INIT, out = BUF_INIT;
    struct rb_builder bld;
    rb_builder_begin(&bld, &b, 0, 1, NULL);
    assert_int_equal(rb_builder_add(&bld, 1, KBYTES_NULL, KBYTES_NULL, NULL, 0), 0);
    size_t len;
    assert_int_equal(rb_builder_finish(&bld, &len), 0);
    struct rb_record_iter it;
    struct rb_record rec;
    assert_int_equal(rb_record_iter_init_batch(&it, b.data, len), 0);
    assert_int_equal(rb_record_next(&it, &rec), 1);
    struct fmt_opts f;
    fmt_opts_default(&f);
    f.print_headers = f.print_key = true;
    struct fmt_record r = {3, 0, RB_CREATE_TIME, 1, &rec};
    format_record(&out, &f, &r);
    const char *expect = "NO_HEADERS\tnull\tnull\n";
    assert_int_equal(out.len, strlen(expect));
    assert_memory_equal(out.data, expect, out.len);
    buf_free(&b);
    buf_free(&out);
}

/* ---- console consumer over fetched batches ---- */

static void add_batch(struct buf *b, int64_t base, int64_t pid, const char *const *values, int n)
{
    struct rb_batch_opts opts = RB_BATCH_OPTS_INIT;
    if (pid >= 0) {
        opts.producer_id = pid;
        opts.producer_epoch = 0;
        opts.base_sequence = 0;
        opts.transactional = true;
    }
    struct rb_builder bld;
    rb_builder_begin(&bld, b, base, 1000, &opts);
    for (int i = 0; i < n; i++)
        assert_int_equal(rb_builder_add(&bld, 1000 + i, KBYTES_NULL,
                                        (kbytes_t){(const uint8_t *)values[i], (int32_t)strlen(values[i])}, NULL, 0),
                         0);
    assert_int_equal(rb_builder_finish(&bld, NULL), 0);
}

/* Offsets 0-2 plain, 3-4 transaction of producer 7 then its ABORT at 5,
 * 6 plain, 7 transaction of producer 8 then its COMMIT at 8. */
static void build_log(struct buf *b)
{
    add_batch(b, 0, -1, (const char *const[]){"a0", "a1", "a2"}, 3);
    add_batch(b, 3, 7, (const char *const[]){"t3", "t4"}, 2);
    assert_int_equal(rb_build_txn_marker(b, 5, 1000, 7, 0, -1, RB_CONTROL_ABORT, 0, NULL), 0);
    add_batch(b, 6, -1, (const char *const[]){"c6"}, 1);
    add_batch(b, 7, 8, (const char *const[]){"u7"}, 1);
    assert_int_equal(rb_build_txn_marker(b, 8, 1000, 8, 0, -1, RB_CONTROL_COMMIT, 0, NULL), 0);
}

static struct consume_opts consume_test_opts(const char *isolation, const char *max)
{
    struct consume_opts o;
    char err[128];
    struct global_opts g = {0};
    char *argv[] = {"--topic", "t", "--isolation-level", (char *)isolation, "--max-messages", (char *)max};
    assert_int_equal(consume_parse_args(max ? 6 : 4, argv, &o, &g, err, sizeof err), ARGS_OK);
    return o;
}

static void expect_out(struct buf *out, const char *s)
{
    assert_int_equal(out->len, strlen(s));
    assert_memory_equal(out->data, s, out->len);
    buf_reset(out);
}

static void test_consume_records(void **state)
{
    (void)state;
    struct buf log = BUF_INIT, out = BUF_INIT;
    build_log(&log);
    fetch_response_aborted_transaction_t aborted[1] = {{7, 3}};

    struct consume_opts o = consume_test_opts("read_uncommitted", NULL);
    struct records_ctx x = {.o = &o, .topic = "t", .partition = 0, .pos = 1, .max_bytes = 100, .out = &out};
    assert_int_equal(consume_records(&x, log.data, log.len, aborted, 1), 0);
    expect_out(&out, "a1\na2\nt3\nt4\nc6\nu7\n");
    assert_int_equal(x.pos, 9);
    assert_int_equal(x.count, 6);
    assert_false(x.done);
    consume_opts_free(&o);

    o = consume_test_opts("read_committed", NULL);
    x = (struct records_ctx){.o = &o, .topic = "t", .partition = 0, .pos = 0, .max_bytes = 100, .out = &out};
    assert_int_equal(consume_records(&x, log.data, log.len, aborted, 1), 0);
    expect_out(&out, "a0\na1\na2\nc6\nu7\n");
    assert_int_equal(x.pos, 9);
    /* Without the AbortedTransactions entry nothing is dropped. */
    x.pos = 0;
    assert_int_equal(consume_records(&x, log.data, log.len, NULL, 0), 0);
    expect_out(&out, "a0\na1\na2\nt3\nt4\nc6\nu7\n");
    consume_opts_free(&o);

    /* --max-messages stops inside a batch. */
    o = consume_test_opts("read_uncommitted", "2");
    x = (struct records_ctx){.o = &o, .topic = "t", .partition = 0, .pos = 0, .max_bytes = 100, .out = &out};
    assert_int_equal(consume_records(&x, log.data, log.len, NULL, 0), 0);
    expect_out(&out, "a0\na1\n");
    assert_true(x.done);
    assert_int_equal(x.pos, 2);
    consume_opts_free(&o);

    /* A partial trailing batch is left for the next fetch; a lone partial
     * batch doubles the partition's byte limit. */
    o = consume_test_opts("read_uncommitted", NULL);
    x = (struct records_ctx){.o = &o, .topic = "t", .partition = 0, .pos = 0, .max_bytes = 100, .out = &out};
    struct rb_header h;
    assert_int_equal(rb_parse_header(log.data, log.len, &h), 0);
    size_t first = (size_t)rb_batch_size(&h);
    assert_int_equal(consume_records(&x, log.data, first + 20, NULL, 0), 0);
    expect_out(&out, "a0\na1\na2\n");
    assert_int_equal(x.pos, 3);
    assert_int_equal(x.max_bytes, 100);
    x.pos = 0;
    assert_int_equal(consume_records(&x, log.data, first - 1, NULL, 0), 0);
    expect_out(&out, "");
    assert_int_equal(x.max_bytes, 200);

    /* A batch marked gzip whose records are not gzip is refused by
     * name: CORRUPT_MESSAGE when the codec-gzip module is loaded (a build
     * tree's modules are), UNSUPPORTED_COMPRESSION_TYPE when it is not. */
    struct buf gz = BUF_INIT;
    add_batch(&gz, 0, -1, (const char *const[]){"z"}, 1);
    gz.data[RB_OFF_ATTRIBUTES + 1] |= RB_CODEC_GZIP;
    assert_int_equal(rb_recompute_crc(gz.data, gz.len), 0);
    x.pos = 0;
    int zrc = consume_records(&x, gz.data, gz.len, NULL, 0);
    assert_true(zrc == KERR_CORRUPT_MESSAGE || zrc == KERR_UNSUPPORTED_COMPRESSION_TYPE);
    assert_non_null(strstr(x.err, "gzip"));
    expect_out(&out, "");

    /* A flipped bit fails the CRC. */
    gz.data[gz.len - 1] ^= 1;
    assert_int_equal(consume_records(&x, gz.data, gz.len, NULL, 0), KERR_CORRUPT_MESSAGE);
    /* Garbage is no batch. */
    uint8_t junk[70];
    memset(junk, 0xff, sizeof junk);
    assert_int_equal(consume_records(&x, junk, sizeof junk, NULL, 0), KERR_CORRUPT_MESSAGE);
    buf_free(&gz);
    consume_opts_free(&o);
    buf_free(&log);
    buf_free(&out);
}

/* ---- against a fake broker ---- */

/* A one-thread broker that answers ApiVersions (refusing v3+ in the v0
 * layout, as KIP-511 prescribes for an unknown version), Metadata and
 * DescribeConfigs with the generated encoders. */
struct fake_broker {
    int lfd;
    int port;
    pthread_t thread;
    int api_versions_calls;
};

static const kuuid_t fake_topic_id = {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}};

static bool read_full(int fd, void *p, size_t n)
{
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r <= 0)
            return false;
        p = (char *)p + r;
        n -= (size_t)r;
    }
    return true;
}

static void fake_answer(struct fake_broker *fb, int fd, const uint8_t *frame, size_t len)
{
    struct arena ar = ARENA_INIT;
    int16_t key = (int16_t)be16_read(frame), v = (int16_t)be16_read(frame + 2);
    const struct kapi *api = kapi_get(key);
    struct kreader r;
    kr_init(&r, frame, len, &ar);
    request_header_t h;
    request_header_decode(&r, (int16_t)kapi_request_header_version(api, v), &h);
    struct kwriter w;
    kw_init(&w);
    kw_i32(&w, 0);
    response_header_t rh = {h.correlation_id};
    response_header_encode(&w, (int16_t)kapi_response_header_version(api, v), &rh);
    if (key == KAPI_API_VERSIONS) {
        fb->api_versions_calls++;
        api_versions_response_t m;
        api_versions_response_init(&m);
        static const int16_t keys[][3] = {{KAPI_API_VERSIONS, 0, 2}, {KAPI_METADATA, 0, 12},
                                          {KAPI_DESCRIBE_CONFIGS, 0, 4}};
        m.api_keys.a = api_versions_response_api_version_new_array(&ar, 3);
        m.api_keys.n = v > 2 ? 1 : 3;
        for (int i = 0; i < 3; i++)
            m.api_keys.a[i] = (api_versions_response_api_version_t){keys[i][0], keys[i][1], keys[i][2]};
        m.error_code = v > 2 ? KERR_UNSUPPORTED_VERSION : 0;
        api_versions_response_encode(&w, v > 2 ? 0 : v, &m);
    } else if (key == KAPI_METADATA) {
        metadata_response_t m;
        metadata_response_init(&m);
        m.brokers.a = metadata_response_metadata_response_broker_new_array(&ar, 1);
        m.brokers.n = 1;
        m.brokers.a[0].node_id = 1;
        m.brokers.a[0].host = KSTR_LIT("127.0.0.1");
        m.brokers.a[0].port = fb->port;
        m.controller_id = 1;
        m.cluster_id = KSTR_LIT("fake");
        m.topics.a = metadata_response_metadata_response_topic_new_array(&ar, 1);
        m.topics.n = 1;
        metadata_response_metadata_response_topic_t *t = &m.topics.a[0];
        t->name = KSTR_LIT("t");
        t->topic_id = fake_topic_id;
        t->partitions.a = metadata_response_metadata_response_partition_new_array(&ar, 2);
        t->partitions.n = 2;
        static int32_t one[1] = {1}, two[2] = {1, 2};
        for (int i = 0; i < 2; i++) {
            /* Listed out of order: describe sorts them. */
            t->partitions.a[i].partition_index = 1 - i;
            t->partitions.a[i].leader_id = i ? 1 : -1;
            t->partitions.a[i].replica_nodes.a = two;
            t->partitions.a[i].replica_nodes.n = 2;
            t->partitions.a[i].isr_nodes.a = one;
            t->partitions.a[i].isr_nodes.n = 1;
        }
        metadata_response_encode(&w, v, &m);
    } else if (key == KAPI_DESCRIBE_CONFIGS) {
        describe_configs_response_t m;
        describe_configs_response_init(&m);
        m.results.a = describe_configs_response_describe_configs_result_new_array(&ar, 1);
        m.results.n = 1;
        m.results.a[0].resource_type = 2;
        m.results.a[0].resource_name = KSTR_LIT("t");
        m.results.a[0].configs.a = describe_configs_response_describe_configs_resource_result_new_array(&ar, 3);
        m.results.a[0].configs.n = 3;
        describe_configs_response_describe_configs_resource_result_t *c = m.results.a[0].configs.a;
        c[0].name = KSTR_LIT("cleanup.policy");
        c[0].value = KSTR_LIT("compact");
        c[0].config_source = 1;
        c[1].name = KSTR_LIT("retention.ms");
        c[1].value = KSTR_LIT("604800000");
        c[1].config_source = 5; /* default: not shown */
        c[1].is_default = true;
        c[2].name = KSTR_LIT("segment.bytes");
        c[2].value = KSTR_LIT("1048576");
        c[2].config_source = 4;
        describe_configs_response_encode(&w, v, &m);
    }
    be32_write(w.b.data, (uint32_t)(w.b.len - 4));
    assert_int_equal(write(fd, w.b.data, w.b.len), (ssize_t)w.b.len);
    kw_free(&w);
    arena_free(&ar);
}

static void *fake_main(void *arg)
{
    struct fake_broker *fb = arg;
    int fd;
    while ((fd = accept(fb->lfd, NULL, NULL)) >= 0) {
        uint8_t sz[4];
        while (read_full(fd, sz, 4)) {
            uint32_t n = be32_read(sz);
            uint8_t *frame = malloc(n);
            if (!read_full(fd, frame, n)) {
                free(frame);
                break;
            }
            fake_answer(fb, fd, frame, n);
            free(frame);
        }
        close(fd);
    }
    return NULL;
}

static void fake_start(struct fake_broker *fb)
{
    memset(fb, 0, sizeof *fb);
    fb->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fb->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(fb->lfd, 4), 0);
    socklen_t sl = sizeof sa;
    getsockname(fb->lfd, (struct sockaddr *)&sa, &sl);
    fb->port = ntohs(sa.sin_port);
    assert_int_equal(pthread_create(&fb->thread, NULL, fake_main, fb), 0);
}

static void fake_stop(struct fake_broker *fb)
{
    shutdown(fb->lfd, SHUT_RDWR);
    close(fb->lfd);
    pthread_join(fb->thread, NULL);
}

/* Runs a command with stdout captured into out (NUL-terminated). */
static int run_captured(int (*cmd)(int, char **, const struct global_opts *), int argc, char **argv,
                        const struct global_opts *g, char *out, size_t cap)
{
    char path[] = "/tmp/samsactl_out_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    fflush(stdout);
    int saved = dup(1);
    dup2(fd, 1);
    int rc = cmd(argc, argv, g);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, out, cap - 1);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    return rc;
}

static void test_describe_against_fake_broker(void **state)
{
    (void)state;
    struct fake_broker fb;
    fake_start(&fb);
    char bootstrap[64];
    snprintf(bootstrap, sizeof bootstrap, "127.0.0.1:%d", fb.port);
    struct global_opts g = {bootstrap, NULL};
    char out[2048];
    char *argv[] = {"describe", "--topic", "t"};
    assert_int_equal(run_captured(cmd_topics, 3, argv, &g, out, sizeof out), EXIT_OK);
    /* v4 refused, then v2: two ApiVersions on the one connection. */
    assert_int_equal(fb.api_versions_calls, 2);
    char id[UUID_STR_LEN + 1], expect[1024];
    uuid_to_string(fake_topic_id.b, id);
    snprintf(expect, sizeof expect,
             "Topic: t\tTopicId: %s\tPartitionCount: 2\tReplicationFactor: 2\t"
             "Configs: cleanup.policy=compact,segment.bytes=1048576\n"
             "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1\n"
             "\tTopic: t\tPartition: 1\tLeader: none\tReplicas: 1,2\tIsr: 1\n",
             id);
    assert_string_equal(out, expect);

    char *list[] = {"list"};
    assert_int_equal(run_captured(cmd_topics, 1, list, &g, out, sizeof out), EXIT_OK);
    assert_string_equal(out, "t\n");
    fake_stop(&fb);
}

/* ---- line input ---- */

static void test_linereader(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    const char in[] = "a\nbb\r\nccc\rd\n\nlast";
    assert_int_equal(write(fds[1], in, sizeof in - 1), (ssize_t)(sizeof in - 1));
    struct linereader lr;
    lr_init(&lr, fds[0]);
    const char *line;
    size_t len;
    static const char *const want[] = {"a", "bb", "ccc", "d", ""};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(lr_next(&lr, 1000, &line, &len), LR_LINE);
        assert_int_equal(len, strlen(want[i]));
        assert_memory_equal(line, want[i], len);
    }
    /* "last" has no terminator yet: no line until EOF says it is whole. */
    assert_int_equal(lr_next(&lr, 10, &line, &len), LR_TIMEOUT);
    close(fds[1]);
    assert_int_equal(lr_next(&lr, 1000, &line, &len), LR_LINE);
    assert_int_equal(len, 4);
    assert_memory_equal(line, "last", 4);
    assert_int_equal(lr_next(&lr, 1000, &line, &len), LR_EOF);
    lr_free(&lr);
    close(fds[0]);
}

static void test_linereader_long_line(void **state)
{
    (void)state;
    /* A line far beyond any pipe or read chunk: 8 MiB through a file. */
    char path[] = "/tmp/samsactl_test_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    size_t big = 8u << 20;
    char *data = malloc(big + 1);
    memset(data, 'x', big);
    data[big] = '\n';
    assert_int_equal(write(fd, data, big + 1), (ssize_t)(big + 1));
    assert_int_equal(write(fd, "y", 1), 1);
    lseek(fd, 0, SEEK_SET);
    struct linereader lr;
    lr_init(&lr, fd);
    const char *line;
    size_t len;
    assert_int_equal(lr_next(&lr, -1, &line, &len), LR_LINE);
    assert_int_equal(len, big);
    assert_memory_equal(line, data, big);
    assert_int_equal(lr_next(&lr, -1, &line, &len), LR_LINE);
    assert_int_equal(len, 1);
    assert_int_equal(lr_next(&lr, -1, &line, &len), LR_EOF);
    lr_free(&lr);
    free(data);
    close(fd);
}

static void test_error_text(void **state)
{
    (void)state;
    assert_string_equal(kerr_name(KERR_TOPIC_ALREADY_EXISTS), "TOPIC_ALREADY_EXISTS");
    assert_true(strlen(kc_default_message(KERR_UNKNOWN_TOPIC_OR_PARTITION)) > 0);
    assert_string_equal(kc_default_message(KERR_NONE), "");
}

/* ---- SASL settings (sasl.c) ---- */

static void test_sasl_settings(void **st)
{
    (void)st;
    char *u, *p;
    assert_int_equal(kc_jaas_credentials("org.apache.kafka.common.security.scram.ScramLoginModule required "
                                         "username=\"al ice\" password=\"p\\\"w\";", &u, &p), 2);
    assert_string_equal(u, "al ice");
    assert_string_equal(p, "p\"w");
    free(u);
    free(p);
    assert_int_equal(kc_jaas_credentials("X required user_bob=\"b\";", &u, &p), 0);
    assert_null(u);
    assert_null(p);

    char path[] = "/tmp/samsactl-props-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *props = "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
                        "  username=\"carol\" password=\"c-pw\";\n";
    assert_int_equal(write(fd, props, strlen(props)), (ssize_t)strlen(props));
    close(fd);
    char err[256];
    memset(&kc_security, 0, sizeof kc_security);
    assert_int_equal(kc_security_load(path, err, sizeof err), 0);
    assert_string_equal(kc_security.mechanism, "SCRAM-SHA-512");
    assert_string_equal(kc_security.username, "carol");
    assert_string_equal(kc_security.password, "c-pw");
    free(kc_security.mechanism);
    free(kc_security.username);
    free(kc_security.password);
    /* command-line options win over the file */
    memset(&kc_security, 0, sizeof kc_security);
    kc_security.username = strdup("dave");
    assert_int_equal(kc_security_load(path, err, sizeof err), 0);
    assert_string_equal(kc_security.username, "dave");
    assert_string_equal(kc_security.password, "c-pw");
    free(kc_security.mechanism);
    free(kc_security.username);
    free(kc_security.password);
    /* SASL_SSL: TLS with Kafka's and librdkafka's PEM file names, SASL
     * over it; the host name is checked unless identification is off */
    fd = open(path, O_WRONLY | O_TRUNC);
    const char *tls = "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\nsasl.username=u\n"
                      "sasl.password=p\nssl.ca.location=/ca.pem\nssl.keystore.location=/client.pem\n"
                      "ssl.key.password=kp\n";
    assert_int_equal(write(fd, tls, strlen(tls)), (ssize_t)strlen(tls));
    close(fd);
    memset(&kc_security, 0, sizeof kc_security);
    assert_int_equal(kc_security_load(path, err, sizeof err), 0);
    assert_true(kc_security.tls);
    assert_true(kc_security.verify_host);
    assert_string_equal(kc_security.mechanism, "SCRAM-SHA-256");
    assert_string_equal(kc_security.ca_file, "/ca.pem");
    assert_string_equal(kc_security.cert_file, "/client.pem");
    assert_string_equal(kc_security.key_file, "/client.pem");
    assert_string_equal(kc_security.key_password, "kp");
    free(kc_security.mechanism);
    free(kc_security.username);
    free(kc_security.password);
    free(kc_security.ca_file);
    free(kc_security.cert_file);
    free(kc_security.key_file);
    free(kc_security.key_password);
    /* SSL with identification off; only PEM stores */
    fd = open(path, O_WRONLY | O_TRUNC);
    const char *ssl = "security.protocol=SSL\nssl.truststore.location=/t.pem\n"
                      "ssl.endpoint.identification.algorithm=\n";
    assert_int_equal(write(fd, ssl, strlen(ssl)), (ssize_t)strlen(ssl));
    close(fd);
    memset(&kc_security, 0, sizeof kc_security);
    assert_int_equal(kc_security_load(path, err, sizeof err), 0);
    assert_true(kc_security.tls);
    assert_false(kc_security.verify_host);
    assert_null(kc_security.mechanism);
    assert_string_equal(kc_security.ca_file, "/t.pem");
    free(kc_security.ca_file);
    fd = open(path, O_WRONLY | O_TRUNC);
    const char *p12 = "security.protocol=SSL\nssl.truststore.type=PKCS12\nssl.truststore.location=/t.p12\n";
    assert_int_equal(write(fd, p12, strlen(p12)), (ssize_t)strlen(p12));
    close(fd);
    memset(&kc_security, 0, sizeof kc_security);
    assert_int_equal(kc_security_load(path, err, sizeof err), -1);
    assert_non_null(strstr(err, "PEM"));
    fd = open(path, O_WRONLY | O_TRUNC);
    const char *plain = "security.protocol=PLAINTEXT\nsasl.mechanism=PLAIN\n";
    assert_int_equal(write(fd, plain, strlen(plain)), (ssize_t)strlen(plain));
    close(fd);
    assert_int_equal(kc_security_load(path, err, sizeof err), 0);
    assert_null(kc_security.mechanism);
    unlink(path);
    assert_int_equal(kc_security_load(path, err, sizeof err), -1);
    uint8_t out[64];
    size_t n;
    assert_int_equal(sasl_scram_mechanism("SCRAM-SHA-256"), 1);
    assert_int_equal(sasl_scram_mechanism("SCRAM-SHA-1"), -1);
    assert_int_equal(sasl_scram_salted_password(1, "pencil", (const uint8_t *)"salt", 4, 4096, out, &n), 0);
    assert_int_equal(n, 32);
    memset(&kc_security, 0, sizeof kc_security);
}

/* Kafka's tools' tables: columns as wide as their widest cell, one
 * space apart, the last one unpadded (an empty last cell included). */
static void test_table_print(void **state)
{
    (void)state;
    static const char *const hdr[] = {"TransactionalId", "Coordinator", "TopicPartitions"};
    struct table t;
    table_init(&t, 3, hdr);
    const char *r1[] = {"a-very-long-transactional-id", "1", "t-0,t-1"};
    const char *r2[] = {"b", "12", ""};
    table_row(&t, r1);
    table_row(&t, r2);
    char out[512];
    char path[] = "/tmp/samsactl_table_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    fflush(stdout);
    int saved = dup(1);
    dup2(fd, 1);
    table_print(&t);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, out, sizeof out - 1);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    table_free(&t);
    assert_string_equal(out, "TransactionalId              Coordinator TopicPartitions\n"
                             "a-very-long-transactional-id 1           t-0,t-1\n"
                             "b                            12          \n");
}

/* samsactl transactions: what each action accepts, refused before any
 * connection (the bootstrap address is never dialled). */
static void test_transactions_args(void **state)
{
    (void)state;
    struct global_opts g = {"127.0.0.1:1", NULL};
    char out[4096];
    char *help[] = {"--help"};
    assert_int_equal(run_captured(cmd_transactions, 1, help, &g, out, sizeof out), EXIT_OK);
    assert_non_null(strstr(out, "samsactl transactions list [--duration-filter MS]"));
    assert_non_null(strstr(out, "samsactl transactions describe ID | --transactional-id ID"));
    char *bad[][4] = {
        {"list", "--topic", "t", NULL},
        {"list", "--duration-filter", "-5", NULL},
        {"describe", NULL, NULL, NULL},
        {"describe", "a", "--transactional-id", "b"},
        {"describe", "--transactional-id", "", NULL},
        {"describe-producers", "--transactional-id", "a", NULL},
        {"bogus", NULL, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int argc = 0;
        while (argc < 4 && bad[i][argc])
            argc++;
        assert_int_equal(run_captured(cmd_transactions, argc, bad[i], &g, out, sizeof out), EXIT_USAGE);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_murmur2_kafka_utils_test),
        cmocka_unit_test(test_murmur2_java_generated),
        cmocka_unit_test(test_partition_choice),
        cmocka_unit_test(test_produce_args),
        cmocka_unit_test(test_cluster_plugins_value),
        cmocka_unit_test(test_consume_args),
        cmocka_unit_test(test_configs_args),
        cmocka_unit_test(test_logdirs_args),
        cmocka_unit_test(test_topics_args),
        cmocka_unit_test(test_topic_selection),
        cmocka_unit_test(test_groups_args),
        cmocka_unit_test(test_group_assignment),
        cmocka_unit_test(test_group_lag_and_reset),
        cmocka_unit_test(test_group_offset_rows),
        cmocka_unit_test(test_bootstrap_list),
        cmocka_unit_test(test_line_parsing),
        cmocka_unit_test(test_format_record),
        cmocka_unit_test(test_format_null_key_no_headers),
        cmocka_unit_test(test_consume_records),
        cmocka_unit_test(test_describe_against_fake_broker),
        cmocka_unit_test(test_linereader),
        cmocka_unit_test(test_linereader_long_line),
        cmocka_unit_test(test_error_text),
        cmocka_unit_test(test_sasl_settings),
        cmocka_unit_test(test_table_print),
        cmocka_unit_test(test_transactions_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
