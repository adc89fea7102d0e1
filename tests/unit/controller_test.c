/* The controller against a real metadata log in a temporary directory:
 * topic creation, deletion and partition growth with every Kafka error
 * code and message, validate-only, replay after reopen, the partition
 * registry following the image, and the log's bytes decoded back as
 * record batches of KRaft-framed metadata records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "broker.h"
#include "config.h"
#include "controller/controller.h"
#include "controller/image_build.h"
#include "log/fsutil.h"
#include "log/plog.h"
#include "proto/gen/broker_registration_change_record.h"
#include "proto/gen/config_record.h"
#include "proto/gen/feature_level_record.h"
#include "proto/gen/kmeta.h"
#include "proto/gen/partition_record.h"
#include "proto/gen/register_broker_record.h"
#include "proto/gen/remove_topic_record.h"
#include "proto/gen/topic_record.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "replica/partition.h"
#include "topic_config.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/slog.h"
#include "util/uuid.h"
#include "node_fixture.h"

struct fx {
    char dir[256];
    struct samsa_config *cfg;
    struct broker b;
    struct controller *c;
    char msg[1024];
};

static void fx_open(struct fx *f)
{
    char err[512];
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

static struct fx *fx_new(const char *const *extra)
{
    struct fx *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/samsa-controller-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    f->cfg = config_new();
    char err[256];
    assert_int_equal(config_set(f->cfg, "log.dirs", f->dir, err, sizeof err), 0);
    assert_int_equal(config_set(f->cfg, "offsets.topic.num.partitions", "3", err, sizeof err), 0);
    for (size_t i = 0; extra && extra[i]; i += 2)
        assert_int_equal(config_set(f->cfg, extra[i], extra[i + 1], err, sizeof err), 0);
    f->b.cfg = f->cfg;
    f->b.node_id = f->cfg->node_id;
    snprintf(f->b.cluster_id, sizeof f->b.cluster_id, "test-cluster");
    snprintf(f->b.advertised_host, sizeof f->b.advertised_host, "127.0.0.1");
    f->b.advertised_port = 9092;
    return f;
}

static int setup(void **state)
{
    struct fx *f = fx_new(NULL);
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

static int create(struct fx *f, const char *name, int32_t np, int16_t rf)
{
    struct topic_spec s;
    memset(&s, 0, sizeof s);
    s.name = KSTR(name);
    s.num_partitions = np;
    s.replication_factor = rf;
    return controller_create_topic(f->c, &s, false, NULL, f->msg, sizeof f->msg, NULL);
}

static void expect(int rc, int code, const char *msg, const struct fx *f)
{
    assert_int_equal(rc, code);
    assert_string_equal(f->msg, msg);
}

static bool dir_exists(const struct fx *f, const char *name)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ------------------------------------------------------------------ */

static void test_bootstrap_image(void **state)
{
    struct fx *f = *state;
    struct mimage *m = controller_image(f->c);
    assert_int_equal(m->metadata_version, CONTROLLER_METADATA_VERSION);
    assert_int_equal(m->controller_id, 1);
    assert_int_equal(m->nbrokers, 1);
    assert_int_equal(m->brokers[0].id, 1);
    assert_string_equal(m->brokers[0].host, "127.0.0.1");
    assert_int_equal(m->brokers[0].port, 9092);
    assert_null(m->brokers[0].rack);
    assert_false(m->brokers[0].fenced);
    assert_int_equal(m->brokers[0].nendpoints, 1);
    assert_string_equal(m->brokers[0].endpoints[0].name, "PLAINTEXT");
    assert_int_equal(m->ntopics, 0);
    /* LeaderChange (control), FeatureLevelRecord, RegisterBrokerRecord
     * (fenced), BrokerRegistrationChangeRecord (unfenced) */
    assert_int_equal(m->offset, 3);
    mimage_release(m);
    assert_true(dir_exists(f, "__cluster_metadata-0"));
}

/* metadata.max.idle.interval.ms: the active controller appends a
 * NoOpRecord each interval (KIP-835), so an idle log still advances;
 * 0 turns it off. */
static void test_noop_records(void **state)
{
    (void)state;
    const char *const every100[] = {"metadata.max.idle.interval.ms", "100", NULL};
    struct fx *f = fx_new(every100);
    fx_open(f);
    struct mimage *m = controller_image(f->c);
    int64_t start = m->offset;
    mimage_release(m);
    int64_t now = start;
    for (int i = 0; i < 300 && now < start + 3; i++) {
        usleep(10000);
        m = controller_image(f->c);
        now = m->offset;
        mimage_release(m);
    }
    assert_true(now >= start + 3);
    m = controller_image(f->c);
    int32_t ntopics = m->ntopics, nbrokers = m->nbrokers;
    mimage_release(m);
    assert_int_equal(ntopics, 0); /* nothing but no-ops was appended */
    assert_int_equal(nbrokers, 1);
    fx_close(f);
    config_free(f->cfg);
    fs_remove_tree(f->dir);
    free(f);

    const char *const never[] = {"metadata.max.idle.interval.ms", "0", NULL};
    f = fx_new(never);
    fx_open(f);
    m = controller_image(f->c);
    start = m->offset;
    mimage_release(m);
    usleep(600000);
    m = controller_image(f->c);
    assert_int_equal(m->offset, start);
    mimage_release(m);
    fx_close(f);
    config_free(f->cfg);
    fs_remove_tree(f->dir);
    free(f);
}

static void test_create_topic(void **state)
{
    struct fx *f = *state;
    expect(create(f, "orders", 3, -1), 0, "", f);
    struct mimage *m = controller_image(f->c);
    const struct mi_topic *t = mimage_topic(m, KSTR("orders"));
    assert_non_null(t);
    assert_false(kuuid_is_zero(&t->id));
    assert_ptr_equal(mimage_topic_by_id(m, &t->id), t);
    assert_false(t->internal);
    assert_int_equal(t->npartitions, 3);
    for (int32_t i = 0; i < 3; i++) {
        const struct mi_partition *p = mi_topic_partition(t, i);
        assert_int_equal(p->index, i);
        assert_int_equal(p->leader, 1);
        assert_int_equal(p->leader_epoch, 0);
        assert_int_equal(p->partition_epoch, 0);
        assert_int_equal(p->nreplicas, 1);
        assert_int_equal(p->replicas[0], 1);
        assert_int_equal(p->nisr, 1);
        assert_int_equal(p->isr[0], 1);
        assert_non_null(p->directories); /* PartitionRecord v1 */
        struct partition *pp = preg_get(f->b.partitions, &t->id, i);
        assert_non_null(pp);
        assert_int_equal(pp->index, i);
        assert_string_equal(pp->topic, "orders");
        partition_put(pp);
    }
    assert_null(mi_topic_partition(t, 3));
    assert_null(preg_get(f->b.partitions, &t->id, 3));
    assert_non_null(t->cfg);
    assert_int_equal(t->cfg->segment_bytes, f->cfg->log_segment_bytes);
    assert_true(dir_exists(f, "orders-0"));
    assert_true(dir_exists(f, "orders-2"));
    mimage_release(m);

    /* Defaults: num.partitions (1) and default.replication.factor (1). */
    expect(create(f, "dflt", -1, -1), 0, "", f);
    m = controller_image(f->c);
    assert_int_equal(mimage_topic(m, KSTR("dflt"))->npartitions, 1);
    /* Sorted by name. */
    assert_int_equal(m->ntopics, 2);
    assert_string_equal(m->topics[0]->name, "dflt");
    assert_string_equal(m->topics[1]->name, "orders");
    mimage_release(m);
}

static void test_create_name_errors(void **state)
{
    struct fx *f = *state;
    expect(create(f, "", 1, 1), KERR_INVALID_TOPIC_EXCEPTION,
           "Topic name is invalid: the empty string is not allowed", f);
    expect(create(f, ".", 1, 1), KERR_INVALID_TOPIC_EXCEPTION, "Topic name is invalid: '.' is not allowed", f);
    expect(create(f, "..", 1, 1), KERR_INVALID_TOPIC_EXCEPTION, "Topic name is invalid: '..' is not allowed",
           f);
    char long_name[251];
    memset(long_name, 'x', 250);
    long_name[250] = 0;
    char want[600];
    snprintf(want, sizeof want,
             "Topic name is invalid: the length of '%s' is longer than the max allowed length 249", long_name);
    expect(create(f, long_name, 1, 1), KERR_INVALID_TOPIC_EXCEPTION, want, f);
    long_name[249] = 0; /* 249 is fine */
    expect(create(f, long_name, 1, 1), 0, "", f);
    expect(create(f, "bad/name", 1, 1), KERR_INVALID_TOPIC_EXCEPTION,
           "Topic name is invalid: 'bad/name' contains one or more characters other than ASCII "
           "alphanumerics, '.', '_' and '-'",
           f);
    expect(create(f, "a.b", 1, 1), 0, "", f);
    expect(create(f, "a.b", 1, 1), KERR_TOPIC_ALREADY_EXISTS, "Topic 'a.b' already exists.", f);
    expect(create(f, "a_b", 1, 1), KERR_INVALID_TOPIC_EXCEPTION, "Topic 'a_b' collides with existing topic: a.b",
           f);
    expect(create(f, "__cluster_metadata", 1, 1), KERR_INVALID_REQUEST,
           "Creation of internal topic __cluster_metadata is prohibited.", f);
    expect(create(f, "Valid-Name_1.x", 1, 1), 0, "", f);
}

static void test_create_count_errors(void **state)
{
    struct fx *f = *state;
    expect(create(f, "t", 0, 1), KERR_INVALID_PARTITIONS,
           "Number of partitions was set to an invalid non-positive value.", f);
    expect(create(f, "t", -2, 1), KERR_INVALID_PARTITIONS,
           "Number of partitions was set to an invalid non-positive value.", f);
    expect(create(f, "t", 1, 0), KERR_INVALID_REPLICATION_FACTOR,
           "Replication factor must be larger than 0, or -1 to use the default value.", f);
    expect(create(f, "t", 1, -3), KERR_INVALID_REPLICATION_FACTOR,
           "Replication factor must be larger than 0, or -1 to use the default value.", f);
    expect(create(f, "t", 1, 3), KERR_INVALID_REPLICATION_FACTOR,
           "Unable to replicate the partition 3 time(s): The target replication factor of 3 cannot be "
           "reached because only 1 broker(s) are registered.",
           f);
    expect(create(f, "t", CONTROLLER_MAX_RECORDS_PER_OP, 1), KERR_POLICY_VIOLATION,
           "Unable to perform excessively large batch operation.", f);
    expect(create(f, "t", INT32_MAX, 1), KERR_POLICY_VIOLATION,
           "Unable to perform excessively large batch operation.", f);
    struct mimage *m = controller_image(f->c);
    assert_int_equal(m->ntopics, 0);
    mimage_release(m);
}

static int create_assigned(struct fx *f, const char *name, int32_t np, int16_t rf, int32_t n,
                           const int32_t *const *assign, const int32_t *len, const int32_t *index)
{
    struct topic_spec s;
    memset(&s, 0, sizeof s);
    s.name = KSTR(name);
    s.num_partitions = np;
    s.replication_factor = rf;
    s.nassign = n;
    s.assign = assign;
    s.assign_len = len;
    s.assign_index = index;
    return controller_create_topic(f->c, &s, false, NULL, f->msg, sizeof f->msg, NULL);
}

static void test_create_assignment_errors(void **state)
{
    struct fx *f = *state;
    static const int32_t one[] = {1}, seven_one[] = {7, 1}, one_one[] = {1, 1};
    const int32_t *a1[] = {one};
    int32_t l1[] = {1};
    expect(create_assigned(f, "t", -1, 1, 1, a1, l1, NULL), KERR_INVALID_REQUEST,
           "A manual partition assignment was specified, but replication factor was not set to -1.", f);
    expect(create_assigned(f, "t", 1, -1, 1, a1, l1, NULL), KERR_INVALID_REQUEST,
           "A manual partition assignment was specified, but numPartitions was not set to -1.", f);
    const int32_t *a2[] = {seven_one};
    int32_t l2[] = {2};
    expect(create_assigned(f, "t", -1, -1, 1, a2, l2, NULL), KERR_INVALID_REPLICA_ASSIGNMENT,
           "The manual partition assignment includes broker 7, but no such broker is registered.", f);
    const int32_t *a3[] = {one_one};
    expect(create_assigned(f, "t", -1, -1, 1, a3, l2, NULL), KERR_INVALID_REPLICA_ASSIGNMENT,
           "The manual partition assignment includes the broker 1 more than once.", f);
    int32_t l0[] = {0};
    expect(create_assigned(f, "t", -1, -1, 1, a1, l0, NULL), KERR_INVALID_REPLICA_ASSIGNMENT,
           "The manual partition assignment includes an empty replica list.", f);
    const int32_t *a4[] = {one, one};
    int32_t l4[] = {1, 1};
    int32_t gap[] = {0, 2}, dup[] = {0, 0}, rev[] = {1, 0};
    expect(create_assigned(f, "t", -1, -1, 2, a4, l4, gap), KERR_INVALID_REPLICA_ASSIGNMENT,
           "partitions should be a consecutive 0-based integer sequence", f);
    expect(create_assigned(f, "t", -1, -1, 2, a4, l4, dup), KERR_INVALID_REPLICA_ASSIGNMENT,
           "Found multiple manual partition assignments for partition 0", f);
    /* Indexes in any order are fine. */
    expect(create_assigned(f, "t", -1, -1, 2, a4, l4, rev), 0, "", f);
    struct mimage *m = controller_image(f->c);
    const struct mi_topic *t = mimage_topic(m, KSTR("t"));
    assert_int_equal(t->npartitions, 2);
    assert_int_equal(t->partitions[1].leader, 1);
    mimage_release(m);
}

static void test_create_config_errors(void **state)
{
    struct fx *f = *state;
    struct topic_spec s;
    memset(&s, 0, sizeof s);
    s.name = KSTR("c");
    s.num_partitions = 1;
    s.replication_factor = 1;
    kstr_t keys[] = {KSTR_LIT("retention.ms"), KSTR_LIT("cleanup.policy"), KSTR_LIT("no.such.config")};
    kstr_t vals[] = {KSTR_NULL, KSTR_NULL, KSTR_LIT("1")};
    s.config_keys = keys;
    s.config_values = vals;
    s.nconfigs = 3;
    expect(controller_create_topic(f->c, &s, false, NULL, f->msg, sizeof f->msg, NULL), KERR_INVALID_CONFIG,
           "Null value not supported for topic configs: retention.ms,cleanup.policy", f);
    char want[512];
    assert_int_equal(topic_config_validate("no.such.config", "1", want, sizeof want), CONFIG_ERR_INVALID_CONFIG);
    s.config_keys = &keys[2];
    s.config_values = &vals[2];
    s.nconfigs = 1;
    expect(controller_create_topic(f->c, &s, false, NULL, f->msg, sizeof f->msg, NULL), KERR_INVALID_CONFIG, want, f);
    kstr_t bk[] = {KSTR_LIT("retention.ms")}, bv[] = {KSTR_LIT("soon")};
    assert_int_equal(topic_config_validate("retention.ms", "soon", want, sizeof want), CONFIG_ERR_INVALID_CONFIG);
    s.config_keys = bk;
    s.config_values = bv;
    expect(controller_create_topic(f->c, &s, false, NULL, f->msg, sizeof f->msg, NULL), KERR_INVALID_CONFIG, want, f);
    /* Valid overrides land in the image and in the effective config;
     * a duplicate key keeps the last value, as Kafka's map does. */
    kstr_t gk[] = {KSTR_LIT("retention.ms"), KSTR_LIT("cleanup.policy"), KSTR_LIT("retention.ms")};
    kstr_t gv[] = {KSTR_LIT("1000"), KSTR_LIT("compact"), KSTR_LIT("60000")};
    s.config_keys = gk;
    s.config_values = gv;
    s.nconfigs = 3;
    expect(controller_create_topic(f->c, &s, false, NULL, f->msg, sizeof f->msg, NULL), 0, "", f);
    struct mimage *m = controller_image(f->c);
    const struct mi_topic *t = mimage_topic(m, KSTR("c"));
    assert_int_equal(t->nconfigs, 2);
    assert_string_equal(t->configs[0].key, "cleanup.policy");
    assert_string_equal(mi_topic_config(t, "retention.ms"), "60000");
    assert_null(mi_topic_config(t, "segment.bytes"));
    assert_int_equal(t->cfg->retention_ms, 60000);
    assert_true(t->cfg->cleanup_compact);
    assert_false(t->cfg->cleanup_delete);
    mimage_release(m);
}

static void test_validate_only(void **state)
{
    struct fx *f = *state;
    struct mimage *before = controller_image(f->c);
    struct topic_spec s;
    memset(&s, 0, sizeof s);
    s.name = KSTR("vo");
    s.num_partitions = 4;
    s.replication_factor = 1;
    kuuid_t id = {{0}};
    assert_int_equal(controller_create_topic(f->c, &s, true, &id, f->msg, sizeof f->msg, NULL), 0);
    assert_false(kuuid_is_zero(&id));
    s.num_partitions = 0;
    expect(controller_create_topic(f->c, &s, true, &id, f->msg, sizeof f->msg, NULL), KERR_INVALID_PARTITIONS,
           "Number of partitions was set to an invalid non-positive value.", f);
    struct mimage *after = controller_image(f->c);
    assert_ptr_equal(before, after); /* nothing published */
    assert_int_equal(after->ntopics, 0);
    assert_false(dir_exists(f, "vo-0"));
    mimage_release(after);

    expect(create(f, "grow", 2, 1), 0, "", f);
    struct mimage *m1 = controller_image(f->c);
    expect(controller_create_partitions(f->c, KSTR("grow"), 5, -1, NULL, NULL, true, f->msg, sizeof f->msg, NULL), 0,
           "", f);
    struct mimage *m2 = controller_image(f->c);
    assert_ptr_equal(m1, m2);
    assert_int_equal(mimage_topic(m2, KSTR("grow"))->npartitions, 2);
    mimage_release(m1);
    mimage_release(m2);
    mimage_release(before);
}

static void test_delete_topic(void **state)
{
    struct fx *f = *state;
    kuuid_t unknown = {{1, 2, 3}};
    expect(controller_delete_topic(f->c, &unknown, f->msg, sizeof f->msg, NULL), KERR_UNKNOWN_TOPIC_ID, "", f);
    expect(create(f, "gone", 2, 1), 0, "", f);
    expect(create(f, "kept", 1, 1), 0, "", f);
    struct mimage *m = controller_image(f->c);
    kuuid_t id = mimage_topic(m, KSTR("gone"))->id;
    mimage_release(m);
    struct partition *held = preg_get(f->b.partitions, &id, 1);
    assert_non_null(held);
    assert_true(dir_exists(f, "gone-0"));
    expect(controller_delete_topic(f->c, &id, f->msg, sizeof f->msg, NULL), 0, "", f);
    m = controller_image(f->c);
    assert_null(mimage_topic(m, KSTR("gone")));
    assert_null(mimage_topic_by_id(m, &id));
    assert_non_null(mimage_topic(m, KSTR("kept")));
    assert_int_equal(m->ntopics, 1);
    mimage_release(m);
    /* Partition 0 had no other holder: removed at once. Partition 1 is
     * still held: marked deleted, removed at the last put. */
    assert_false(dir_exists(f, "gone-0"));
    assert_null(preg_get(f->b.partitions, &id, 0));
    assert_null(preg_get(f->b.partitions, &id, 1));
    assert_true(atomic_load(&held->deleted));
    assert_true(dir_exists(f, "gone-1"));
    partition_put(held);
    assert_false(dir_exists(f, "gone-1"));
    expect(controller_delete_topic(f->c, &id, f->msg, sizeof f->msg, NULL), KERR_UNKNOWN_TOPIC_ID, "", f);

    /* Same name again: a new incarnation with a new id. */
    expect(create(f, "gone", 1, 1), 0, "", f);
    m = controller_image(f->c);
    assert_false(kuuid_eq(&mimage_topic(m, KSTR("gone"))->id, &id));
    mimage_release(m);
    assert_true(dir_exists(f, "gone-0"));
}

static void test_create_partitions(void **state)
{
    struct fx *f = *state;
    expect(controller_create_partitions(f->c, KSTR("nope"), 2, -1, NULL, NULL, false, f->msg, sizeof f->msg, NULL),
           KERR_UNKNOWN_TOPIC_OR_PARTITION, "", f);
    expect(create(f, "orders", 3, 1), 0, "", f);
    expect(controller_create_partitions(f->c, KSTR("orders"), 3, -1, NULL, NULL, false, f->msg, sizeof f->msg, NULL),
           KERR_INVALID_PARTITIONS, "Topic already has 3 partition(s).", f);
    expect(controller_create_partitions(f->c, KSTR("orders"), 2, -1, NULL, NULL, false, f->msg, sizeof f->msg, NULL),
           KERR_INVALID_PARTITIONS, "The topic orders currently has 3 partition(s); 2 would not be an increase.",
           f);
    static const int32_t one[] = {1}, seven[] = {7}, one_one[] = {1, 1};
    const int32_t *a[] = {one};
    int32_t l[] = {1};
    expect(controller_create_partitions(f->c, KSTR("orders"), 5, 1, a, l, false, f->msg, sizeof f->msg, NULL),
           KERR_INVALID_REPLICA_ASSIGNMENT,
           "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.", f);
    expect(controller_create_partitions(f->c, KSTR("orders"), 5, 0, a, l, false, f->msg, sizeof f->msg, NULL),
           KERR_INVALID_REPLICA_ASSIGNMENT,
           "Attempted to add 2 additional partition(s), but only 0 assignment(s) were specified.", f);
    const int32_t *b[] = {seven};
    expect(controller_create_partitions(f->c, KSTR("orders"), 4, 1, b, l, false, f->msg, sizeof f->msg, NULL),
           KERR_INVALID_REPLICA_ASSIGNMENT,
           "The manual partition assignment includes broker 7, but no such broker is registered.", f);
    const int32_t *c[] = {one_one};
    int32_t l2[] = {2};
    expect(controller_create_partitions(f->c, KSTR("orders"), 4, 1, c, l2, false, f->msg, sizeof f->msg, NULL),
           KERR_INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes the broker 1 more than once.",
           f);
    expect(controller_create_partitions(f->c, KSTR("orders"), CONTROLLER_MAX_RECORDS_PER_OP + 4, -1, NULL, NULL,
                                        false, f->msg, sizeof f->msg, NULL),
           KERR_POLICY_VIOLATION, "Unable to perform excessively large batch operation.", f);
    expect(controller_create_partitions(f->c, KSTR("orders"), 4, 1, a, l, false, f->msg, sizeof f->msg, NULL), 0, "", f);
    expect(controller_create_partitions(f->c, KSTR("orders"), 6, -1, NULL, NULL, false, f->msg, sizeof f->msg, NULL), 0,
           "", f);
    struct mimage *m = controller_image(f->c);
    const struct mi_topic *t = mimage_topic(m, KSTR("orders"));
    assert_int_equal(t->npartitions, 6);
    for (int32_t i = 0; i < 6; i++) {
        assert_int_equal(t->partitions[i].index, i);
        assert_int_equal(t->partitions[i].leader, 1);
        struct partition *p = preg_get(f->b.partitions, &t->id, i);
        assert_non_null(p);
        partition_put(p);
    }
    assert_true(dir_exists(f, "orders-5"));
    mimage_release(m);
}

static void test_alter_configs(void **state)
{
    struct fx *f = *state;
    expect(create(f, "cfg", 1, 1), 0, "", f);
    kstr_t k[] = {KSTR_LIT("retention.ms"), KSTR_LIT("max.message.bytes")};
    kstr_t v[] = {KSTR_LIT("5000"), KSTR_LIT("2048")};
    expect(controller_alter_configs(f->c, CONTROLLER_RESOURCE_TOPIC, KSTR("none"), 1, k, v, false, f->msg,
                                    sizeof f->msg, NULL),
           KERR_UNKNOWN_TOPIC_OR_PARTITION, "", f);
    expect(controller_alter_configs(f->c, CONTROLLER_RESOURCE_TOPIC, KSTR("cfg"), 2, k, v, false, f->msg,
                                    sizeof f->msg, NULL),
           0, "", f);
    struct mimage *m = controller_image(f->c);
    const struct mi_topic *t = mimage_topic(m, KSTR("cfg"));
    assert_int_equal(t->nconfigs, 2);
    assert_int_equal(t->cfg->retention_ms, 5000);
    assert_int_equal(t->cfg->max_message_bytes, 2048);
    mimage_release(m);
    kstr_t del[] = {KSTR_NULL};
    expect(controller_alter_configs(f->c, CONTROLLER_RESOURCE_TOPIC, KSTR("cfg"), 1, k, del, false, f->msg,
                                    sizeof f->msg, NULL),
           0, "", f);
    m = controller_image(f->c);
    t = mimage_topic(m, KSTR("cfg"));
    assert_int_equal(t->nconfigs, 1);
    assert_null(mi_topic_config(t, "retention.ms"));
    assert_int_equal(t->cfg->retention_ms, f->cfg->log_retention_ms);
    mimage_release(m);
    kstr_t bad[] = {KSTR_LIT("-5")};
    char want[512];
    kstr_t kb[] = {KSTR_LIT("max.message.bytes")};
    assert_int_equal(topic_config_validate("max.message.bytes", "-5", want, sizeof want), CONFIG_ERR_INVALID_CONFIG);
    expect(controller_alter_configs(f->c, CONTROLLER_RESOURCE_TOPIC, KSTR("cfg"), 1, kb, bad, false, f->msg,
                                    sizeof f->msg, NULL),
           KERR_INVALID_CONFIG, want, f);
    /* Broker resource: this node's id or the cluster default only. */
    kstr_t bk[] = {KSTR_LIT("log.retention.ms")}, bv[] = {KSTR_LIT("7000")};
    expect(controller_alter_configs(f->c, CONTROLLER_RESOURCE_BROKER, KSTR("9"), 1, bk, bv, false, f->msg,
                                    sizeof f->msg, NULL),
           KERR_INVALID_REQUEST, "Unexpected broker id, expected 1, but received 9", f);
    expect(controller_alter_configs(f->c, CONTROLLER_RESOURCE_BROKER, KSTR(""), 1, bk, bv, false, f->msg,
                                    sizeof f->msg, NULL),
           0, "", f);
    m = controller_image(f->c);
    assert_int_equal(m->nbroker_default_configs, 1);
    assert_string_equal(m->broker_default_configs[0].key, "log.retention.ms");
    assert_string_equal(m->broker_default_configs[0].value, "7000");
    mimage_release(m);
}

static void test_auto_create(void **state)
{
    struct fx *f = *state;
    expect(controller_auto_create_topic(f->c, KSTR("__consumer_offsets"), f->msg, sizeof f->msg, NULL), 0, "", f);
    expect(controller_auto_create_topic(f->c, KSTR("__consumer_offsets"), f->msg, sizeof f->msg, NULL), 0, "", f);
    expect(controller_auto_create_topic(f->c, KSTR("plain"), f->msg, sizeof f->msg, NULL), 0, "", f);
    expect(controller_auto_create_topic(f->c, KSTR("bad name"), f->msg, sizeof f->msg, NULL),
           KERR_INVALID_TOPIC_EXCEPTION,
           "Topic name is invalid: 'bad name' contains one or more characters other than ASCII "
           "alphanumerics, '.', '_' and '-'",
           f);
    struct mimage *m = controller_image(f->c);
    const struct mi_topic *t = mimage_topic(m, KSTR("__consumer_offsets"));
    assert_true(t->internal);
    assert_int_equal(t->npartitions, 3);
    assert_string_equal(mi_topic_config(t, "cleanup.policy"), "compact");
    assert_string_equal(mi_topic_config(t, "compression.type"), "producer");
    assert_string_equal(mi_topic_config(t, "segment.bytes"), "104857600");
    assert_true(t->cfg->cleanup_compact);
    assert_int_equal(mimage_topic(m, KSTR("plain"))->npartitions, f->cfg->num_partitions);
    /* the zero-config node is alone: the internal topics' replication
     * (3 by default, min ISR 2) is capped at 1 */
    assert_true(controller_node_alone(f->cfg, m));
    assert_int_equal(f->cfg->offsets_topic_replication_factor, 3);
    for (int32_t i = 0; i < t->npartitions; i++)
        assert_int_equal(mi_topic_partition(t, i)->nreplicas, 1);
    mimage_release(m);
    expect(controller_auto_create_topic(f->c, KSTR("__transaction_state"), f->msg, sizeof f->msg, NULL), 0, "", f);
    m = controller_image(f->c);
    t = mimage_topic(m, KSTR("__transaction_state"));
    assert_int_equal(mi_topic_partition(t, 0)->nreplicas, 1);
    assert_string_equal(mi_topic_config(t, "min.insync.replicas"), "1");
    mimage_release(m);
}

/* ------------------------------------------------------------------ */
/* Replay                                                              */

/* Every start of the node appends to the log (its leader epoch's
 * LeaderChange, the broker side registering again, fenced, then
 * unfenced), so offsets and broker epochs move; the rest is the same. */
static void assert_same_image(const struct mimage *a, const struct mimage *b)
{
    assert_int_equal(a->metadata_version, b->metadata_version);
    assert_int_equal(a->controller_id, b->controller_id);
    assert_int_equal(a->ntopics, b->ntopics);
    for (int32_t i = 0; i < a->ntopics; i++) {
        const struct mi_topic *x = a->topics[i], *y = b->topics[i];
        assert_string_equal(x->name, y->name);
        assert_memory_equal(x->id.b, y->id.b, 16);
        assert_int_equal(x->internal, y->internal);
        assert_int_equal(x->npartitions, y->npartitions);
        for (int32_t p = 0; p < x->npartitions; p++) {
            const struct mi_partition *u = &x->partitions[p], *w = &y->partitions[p];
            assert_int_equal(u->index, w->index);
            assert_int_equal(u->leader, w->leader);
            assert_int_equal(u->leader_epoch, w->leader_epoch);
            assert_int_equal(u->partition_epoch, w->partition_epoch);
            assert_int_equal(u->nreplicas, w->nreplicas);
            assert_memory_equal(u->replicas, w->replicas, (size_t)u->nreplicas * 4);
            assert_int_equal(u->nisr, w->nisr);
            assert_memory_equal(u->isr, w->isr, (size_t)u->nisr * 4);
            assert_memory_equal(u->directories, w->directories, (size_t)u->nreplicas * 16);
        }
        assert_int_equal(x->nconfigs, y->nconfigs);
        for (int32_t c = 0; c < x->nconfigs; c++) {
            assert_string_equal(x->configs[c].key, y->configs[c].key);
            assert_string_equal(x->configs[c].value, y->configs[c].value);
        }
        assert_int_equal(x->cfg->retention_ms, y->cfg->retention_ms);
        assert_int_equal(x->cfg->retention_bytes, y->cfg->retention_bytes);
        assert_int_equal(x->cfg->segment_bytes, y->cfg->segment_bytes);
        assert_int_equal(x->cfg->max_message_bytes, y->cfg->max_message_bytes);
        assert_int_equal(x->cfg->cleanup_compact, y->cfg->cleanup_compact);
        assert_int_equal(x->cfg->cleanup_delete, y->cfg->cleanup_delete);
        assert_int_equal(x->cfg->flush_messages, y->cfg->flush_messages);
    }
    assert_int_equal(a->nbrokers, b->nbrokers);
    for (int32_t i = 0; i < a->nbrokers; i++) {
        assert_int_equal(a->brokers[i].id, b->brokers[i].id);
        assert_string_equal(a->brokers[i].host, b->brokers[i].host);
        assert_int_equal(a->brokers[i].port, b->brokers[i].port);
        assert_int_equal(a->brokers[i].fenced, b->brokers[i].fenced);
    }
    assert_int_equal(a->nbroker_default_configs, b->nbroker_default_configs);
}

static void populate(struct fx *f)
{
    expect(create(f, "orders", 3, 1), 0, "", f);
    expect(create(f, "gone", 2, 1), 0, "", f);
    struct topic_spec s;
    memset(&s, 0, sizeof s);
    s.name = KSTR("compacted");
    s.num_partitions = 2;
    s.replication_factor = -1;
    kstr_t k[] = {KSTR_LIT("cleanup.policy"), KSTR_LIT("segment.bytes")};
    kstr_t v[] = {KSTR_LIT("compact"), KSTR_LIT("1048576")};
    s.config_keys = k;
    s.config_values = v;
    s.nconfigs = 2;
    expect(controller_create_topic(f->c, &s, false, NULL, f->msg, sizeof f->msg, NULL), 0, "", f);
    expect(controller_create_partitions(f->c, KSTR("orders"), 5, -1, NULL, NULL, false, f->msg, sizeof f->msg, NULL), 0,
           "", f);
    struct mimage *m = controller_image(f->c);
    kuuid_t id = mimage_topic(m, KSTR("gone"))->id;
    mimage_release(m);
    expect(controller_delete_topic(f->c, &id, f->msg, sizeof f->msg, NULL), 0, "", f);
    kstr_t ck[] = {KSTR_LIT("retention.ms")}, cv[] = {KSTR_LIT("12345")};
    expect(controller_alter_configs(f->c, CONTROLLER_RESOURCE_TOPIC, KSTR("orders"), 1, ck, cv, false, f->msg,
                                    sizeof f->msg, NULL),
           0, "", f);
    /* A dynamic cluster default: the caller applies it to the config,
     * then records it; replay at open applies it again. */
    char err[256];
    assert_int_equal(config_set_dynamic(f->cfg, true, "log.retention.ms", "7000", err, sizeof err), 0);
    kstr_t bk[] = {KSTR_LIT("log.retention.ms")}, bv[] = {KSTR_LIT("7000")};
    expect(controller_alter_configs(f->c, CONTROLLER_RESOURCE_BROKER, KSTR(""), 1, bk, bv, false, f->msg,
                                    sizeof f->msg, NULL),
           0, "", f);
    struct mimage *img = controller_image(f->c);
    assert_int_equal(mimage_topic(img, KSTR("compacted"))->cfg->retention_ms, 7000);
    assert_int_equal(mimage_topic(img, KSTR("orders"))->cfg->retention_ms, 12345);
    mimage_release(img);
}

static void test_reopen_replays(void **state)
{
    struct fx *f = *state;
    populate(f);
    struct mimage *before = controller_image(f->c);
    fx_close(f);
    fx_open(f);
    struct mimage *after = controller_image(f->c);
    assert_same_image(before, after);
    assert_true(after->offset > before->offset); /* registered again */
    const struct mi_topic *t = mimage_topic(after, KSTR("compacted"));
    assert_int_equal(t->cfg->segment_bytes, 1048576);
    for (int32_t i = 0; i < after->ntopics; i++)
        for (int32_t p = 0; p < after->topics[i]->npartitions; p++) {
            struct partition *pp = preg_get(f->b.partitions, &after->topics[i]->id, p);
            assert_non_null(pp);
            partition_put(pp);
        }
    assert_false(dir_exists(f, "gone-0"));
    mimage_release(before);

    /* An unclean stop with a torn tail: the half-written batch is cut
     * and the image is what was acknowledged. */
    controller_close(f->c, false);
    preg_destroy(f->b.partitions, false);
    char path[512];
    snprintf(path, sizeof path, "%s/__cluster_metadata-0/00000000000000000000.log", f->dir);
    FILE *fp = fopen(path, "ab");
    assert_non_null(fp);
    static const uint8_t torn[] = {0, 0, 0, 0, 0, 0, 0, 99, 0, 0, 1, 0, 0, 0, 0, 1, 2, 7, 7};
    fwrite(torn, 1, sizeof torn, fp);
    fclose(fp);
    fx_open(f);
    struct mimage *again = controller_image(f->c);
    assert_same_image(after, again);
    mimage_release(after);
    mimage_release(again);
    /* And the log takes appends again. */
    expect(create(f, "later", 1, 1), 0, "", f);
}

static void test_reregisters_on_change(void **state)
{
    struct fx *f = *state;
    struct mimage *m = controller_image(f->c);
    int64_t off = m->offset;
    mimage_release(m);
    fx_close(f);
    snprintf(f->b.advertised_host, sizeof f->b.advertised_host, "10.0.0.7");
    char err[256];
    assert_int_equal(config_set(f->cfg, "advertised.listeners", "PLAINTEXT://10.0.0.7:9192", err, sizeof err), 0);
    assert_int_equal(config_set(f->cfg, "broker.rack", "r1", err, sizeof err), 0);
    snprintf(f->b.rack, sizeof f->b.rack, "r1");
    fx_open(f);
    m = controller_image(f->c);
    /* LeaderChange, RegisterBrokerRecord, unfencing */
    assert_int_equal(m->offset, off + 3);
    assert_int_equal(m->nbrokers, 1);
    assert_string_equal(m->brokers[0].host, "10.0.0.7");
    assert_int_equal(m->brokers[0].port, 9192);
    assert_string_equal(m->brokers[0].rack, "r1");
    assert_int_equal(m->brokers[0].epoch, off + 2); /* the registration's offset */
    assert_false(m->brokers[0].fenced);
    mimage_release(m);
}

/* ------------------------------------------------------------------ */
/* The log's bytes, decoded without the controller's code              */

struct decoded {
    int16_t type, version;
    void *rec;
};

/* Splits the segment into batches, checks each CRC and decodes every
 * record value with KRaft's framing by hand. The records point into
 * *data_out, which the caller frees. */
static size_t decode_log(const struct fx *f, struct arena *a, struct decoded *out, size_t cap, int32_t *nbatches,
                         char **data_out)
{
    char path[512], *data;
    size_t len;
    snprintf(path, sizeof path, "%s/__cluster_metadata-0/00000000000000000000.log", f->dir);
    assert_int_equal(fs_read_small(path, 1 << 24, &data, &len), 0);
    size_t pos = 0, n = 0;
    int64_t expect_offset = 0;
    *nbatches = 0;
    while (pos < len) {
        size_t size;
        assert_int_equal(rb_frame((const uint8_t *)data + pos, len - pos, &size), 0);
        const uint8_t *batch = (const uint8_t *)data + pos;
        assert_true(rb_crc_ok(batch, size));
        struct rb_header h;
        assert_int_equal(rb_parse_header(batch, size, &h), 0);
        assert_int_equal(h.base_offset, expect_offset);
        assert_int_equal(rb_codec(&h), 0);
        if (rb_is_control(&h)) {
            /* a leader epoch's LeaderChange: one control record */
            assert_int_equal(h.records_count, 1);
            expect_offset = rb_last_offset(&h) + 1;
            pos += size;
            continue;
        }
        struct rb_record_iter it;
        assert_int_equal(rb_record_iter_init_batch(&it, batch, size), 0);
        struct rb_record rec;
        int r;
        while ((r = rb_record_next(&it, &rec)) == 1) {
            assert_int_equal(rec.key.len, -1);
            assert_int_equal(rec.header_count, 0);
            const uint8_t *p = rec.value.p;
            size_t left = (size_t)rec.value.len;
            uint32_t frame, type, version;
            size_t k = varint_decode_u32(p, left, &frame);
            assert_true(k > 0);
            p += k, left -= k;
            k = varint_decode_u32(p, left, &type);
            assert_true(k > 0);
            p += k, left -= k;
            k = varint_decode_u32(p, left, &version);
            assert_true(k > 0);
            p += k, left -= k;
            assert_int_equal(frame, 1);
            const struct kmeta *km = kmeta_get((int16_t)type);
            assert_non_null(km);
            assert_in_range(version, (uint32_t)km->min_version, (uint32_t)km->max_version);
            void *m = arena_alloc(a, km->size);
            struct kreader kr;
            kr_init(&kr, p, left, a);
            assert_int_equal(km->decode(&kr, (int16_t)version, m), 0);
            assert_int_equal(kr.err, 0);
            assert_int_equal(kr_left(&kr), 0); /* no garbage after the record */
            assert_true(n < cap);
            out[n++] = (struct decoded){(int16_t)type, (int16_t)version, m};
            expect_offset++;
        }
        assert_int_equal(r, 0);
        assert_int_equal(rb_last_offset(&h) + 1, expect_offset);
        (*nbatches)++;
        pos += size;
    }
    *data_out = data;
    return n;
}

static void test_log_bytes(void **state)
{
    struct fx *f = *state;
    struct topic_spec s;
    memset(&s, 0, sizeof s);
    s.name = KSTR("framed");
    s.num_partitions = 2;
    s.replication_factor = 1;
    kstr_t k[] = {KSTR_LIT("retention.ms")}, v[] = {KSTR_LIT("1000")};
    s.config_keys = k;
    s.config_values = v;
    s.nconfigs = 1;
    kuuid_t id;
    assert_int_equal(controller_create_topic(f->c, &s, false, &id, f->msg, sizeof f->msg, NULL), 0);
    assert_int_equal(controller_delete_topic(f->c, &id, f->msg, sizeof f->msg, NULL), 0);

    struct arena a = ARENA_INIT;
    struct decoded all[32], *d = all;
    int32_t nb;
    char *data;
    size_t n = decode_log(f, &a, all, 32, &nb, &data);
    /* bootstrap, registration, unfencing, create, delete: one batch each */
    assert_int_equal(nb, 5);
    assert_int_equal(n, 3 + 4 + 1);

    assert_int_equal(d[0].type, KMETA_FEATURE_LEVEL_RECORD);
    const feature_level_record_t *fl = d[0].rec;
    assert_true(kstr_eqc(fl->name, "metadata.version"));
    assert_int_equal(fl->feature_level, CONTROLLER_METADATA_VERSION);

    assert_int_equal(d[1].type, KMETA_REGISTER_BROKER_RECORD);
    assert_int_equal(d[1].version, 3);
    const register_broker_record_t *rb = d[1].rec;
    assert_int_equal(rb->broker_id, 1);
    assert_int_equal(rb->broker_epoch, 2); /* its own offset (after LeaderChange, FeatureLevel) */
    assert_true(rb->fenced);
    assert_int_equal(rb->end_points.n, 1);
    assert_true(kstr_eqc(rb->end_points.a[0].host, "127.0.0.1"));
    assert_int_equal(rb->end_points.a[0].port, 9092);
    assert_int_equal(rb->rack.len, -1);

    assert_int_equal(d[2].type, KMETA_BROKER_REGISTRATION_CHANGE_RECORD);
    const broker_registration_change_record_t *rc = d[2].rec;
    assert_int_equal(rc->broker_id, 1);
    assert_int_equal(rc->broker_epoch, 2);
    assert_int_equal(rc->fenced, -1); /* unfenced */

    d += 1; /* the topic's records follow as they always did */
    assert_int_equal(d[2].type, KMETA_TOPIC_RECORD);
    const topic_record_t *tr = d[2].rec;
    assert_true(kstr_eqc(tr->name, "framed"));
    assert_memory_equal(tr->topic_id.b, id.b, 16);

    assert_int_equal(d[3].type, KMETA_CONFIG_RECORD);
    const config_record_t *cr = d[3].rec;
    assert_int_equal(cr->resource_type, 2);
    assert_true(kstr_eqc(cr->resource_name, "framed"));
    assert_true(kstr_eqc(cr->name, "retention.ms"));
    assert_true(kstr_eqc(cr->value, "1000"));

    for (int i = 0; i < 2; i++) {
        assert_int_equal(d[4 + i].type, KMETA_PARTITION_RECORD);
        assert_int_equal(d[4 + i].version, 1);
        const partition_record_t *pr = d[4 + i].rec;
        assert_int_equal(pr->partition_id, i);
        assert_memory_equal(pr->topic_id.b, id.b, 16);
        assert_int_equal(pr->replicas.n, 1);
        assert_int_equal(pr->replicas.a[0], 1);
        assert_int_equal(pr->isr.n, 1);
        assert_int_equal(pr->isr.a[0], 1);
        assert_int_equal(pr->leader, 1);
        assert_int_equal(pr->leader_epoch, 0);
        assert_int_equal(pr->partition_epoch, 0);
        assert_int_equal(pr->directories.n, 1);
    }
    assert_int_equal(d[6].type, KMETA_REMOVE_TOPIC_RECORD);
    assert_memory_equal(((const remove_topic_record_t *)d[6].rec)->topic_id.b, id.b, 16);
    arena_free(&a);
    free(data);
}

/* A log written by someone else (here: by hand) with a second broker:
 * replay takes its records, and placement and assignment checks see two
 * brokers. */
static void test_second_broker_from_log(void **state)
{
    struct fx *f = *state;
    fx_close(f);
    fs_remove_tree(f->dir);
    char err[256];
    assert_int_equal(fs_mkdirs(f->dir, NULL), 0);

    char path[512];
    snprintf(path, sizeof path, "%s/__cluster_metadata-0", f->dir);
    kuuid_t meta_id;
    memcpy(meta_id.b, uuid_metadata_topic_id, 16);
    struct plog_config pc = PLOG_CONFIG_INIT;
    struct plog *log;
    assert_int_equal(plog_open(path, &meta_id, &pc, &log), 0);
    struct arena a = ARENA_INIT;
    feature_level_record_t fl;
    feature_level_record_init(&fl);
    fl.name = KSTR_LIT("metadata.version");
    fl.feature_level = CONTROLLER_METADATA_VERSION;
    register_broker_record_t rb[2];
    for (int i = 0; i < 2; i++) {
        register_broker_record_init(&rb[i]);
        rb[i].broker_id = 2 + i;
        rb[i].broker_epoch = 1 + i;
        rb[i].end_points.a = register_broker_record_broker_endpoint_new_array(&a, 1);
        rb[i].end_points.n = 1;
        rb[i].end_points.a[0].name = KSTR_LIT("PLAINTEXT");
        rb[i].end_points.a[0].host = KSTR_LIT("10.0.0.2");
        rb[i].end_points.a[0].port = (uint16_t)(9093 + i);
        rb[i].rack = KSTR_NULL;
        rb[i].fenced = i == 1; /* broker 3 is fenced */
    }
    struct buf out = BUF_INIT;
    struct kwriter w;
    kw_init(&w);
    struct rb_builder bld;
    int64_t now = clock_wall_ms();
    rb_builder_begin(&bld, &out, 0, now, NULL);
    mrec_write(&w, KMETA_FEATURE_LEVEL_RECORD, 0, &fl);
    assert_int_equal(rb_builder_add(&bld, now, KBYTES_NULL, (kbytes_t){w.b.data, (int32_t)w.b.len}, NULL, 0), 0);
    for (int i = 0; i < 2; i++) {
        buf_reset(&w.b);
        mrec_write(&w, KMETA_REGISTER_BROKER_RECORD, 3, &rb[i]);
        assert_int_equal(rb_builder_add(&bld, now, KBYTES_NULL, (kbytes_t){w.b.data, (int32_t)w.b.len}, NULL, 0),
                         0);
    }
    size_t len;
    assert_int_equal(rb_builder_finish(&bld, &len), 0);
    assert_int_equal(plog_append(log, out.data, len, 1, -1, NULL), 0);
    plog_close(log, true);
    kw_free(&w);
    buf_free(&out);
    arena_free(&a);
    (void)err;

    fx_open(f);
    struct mimage *m = controller_image(f->c);
    assert_int_equal(m->nbrokers, 3); /* 1 registered itself at open */
    assert_int_equal(m->brokers[0].id, 1);
    assert_int_equal(m->brokers[1].id, 2);
    assert_true(m->brokers[2].fenced);
    assert_int_equal(m->offset, 5); /* then LeaderChange, broker 1 registered and unfenced */
    /* not alone any more: __consumer_offsets needs 3 unfenced brokers */
    assert_false(controller_node_alone(f->cfg, m));
    mimage_release(m);
    expect(controller_auto_create_topic(f->c, KSTR("__consumer_offsets"), f->msg, sizeof f->msg, NULL),
           KERR_INVALID_REPLICATION_FACTOR,
           "Number of alive brokers '2' does not meet the required replication factor '3' for the offsets "
           "topic (configured via 'offsets.topic.replication.factor'). This error can be ignored if the cluster "
           "is starting up and not all brokers are up yet.",
           f);
    m = controller_image(f->c);
    assert_null(mimage_topic(m, KSTR("__consumer_offsets")));
    mimage_release(m);

    static const int32_t one[] = {1}, one_two[] = {1, 2}, three[] = {3};
    const int32_t *a1[] = {one, one_two};
    int32_t l1[] = {1, 2};
    expect(create_assigned(f, "t", -1, -1, 2, a1, l1, NULL), KERR_INVALID_REPLICA_ASSIGNMENT,
           "The manual partition assignment includes a partition with 2 replica(s), but this is not "
           "consistent with previous partitions, which have 1 replica(s).",
           f);
    const int32_t *a2[] = {three};
    int32_t l2[] = {1};
    expect(create_assigned(f, "t", -1, -1, 1, a2, l2, NULL), KERR_INVALID_REPLICA_ASSIGNMENT,
           "All brokers specified in the manual partition assignment for partition 0 are fenced or in "
           "controlled shutdown.",
           f);
    expect(create(f, "t", 1, 4), KERR_INVALID_REPLICATION_FACTOR,
           "Unable to replicate the partition 4 time(s): The target replication factor of 4 cannot be "
           "reached because only 3 broker(s) are registered.",
           f);
    /* RF 2: the two unfenced brokers, leaders alternating; the fenced
     * broker 3 only when needed (RF 3), and then not in the ISR. */
    expect(create(f, "two", 4, 2), 0, "", f);
    expect(create(f, "three", 1, 3), 0, "", f);
    expect(create(f, "one", 4, 1), 0, "", f);
    m = controller_image(f->c);
    const struct mi_topic *t = mimage_topic(m, KSTR("two"));
    for (int32_t p = 0; p < 4; p++) {
        const struct mi_partition *part = &t->partitions[p];
        assert_int_equal(part->nreplicas, 2);
        assert_int_equal(part->replicas[0], 1 + p % 2);
        assert_int_equal(part->replicas[1], 1 + (p + 1) % 2);
        assert_int_equal(part->leader, part->replicas[0]);
        assert_int_equal(part->nisr, 2);
    }
    t = mimage_topic(m, KSTR("three"));
    assert_int_equal(t->partitions[0].nreplicas, 3);
    assert_int_equal(t->partitions[0].replicas[2], 3);
    assert_int_equal(t->partitions[0].nisr, 2);
    /* Only the replicas on this node get a local log. A new topic's
     * placement goes on where the last one stopped (5 partitions so far),
     * so leaders spread over topics too. */
    t = mimage_topic(m, KSTR("one"));
    for (int32_t p = 0; p < 4; p++) {
        struct partition *pp = preg_get(f->b.partitions, &t->id, p);
        assert_int_equal(pp != NULL, t->partitions[p].replicas[0] == 1);
        assert_int_equal(t->partitions[p].replicas[0], 1 + (p + 1) % 2);
        if (pp)
            partition_put(pp);
    }
    assert_false(dir_exists(f, "one-0"));
    assert_true(dir_exists(f, "one-1"));
    mimage_release(m);
}

/* Racks: brokers 2-7 in racks a, a, b, b, c, c (from a hand-written log)
 * and this node without one. RF 3: every partition's replicas sit in
 * three different racks, and leaders spread over the brokers. */
static void test_rack_aware_placement(void **state)
{
    struct fx *f = *state;
    fx_close(f);
    fs_remove_tree(f->dir);
    assert_int_equal(fs_mkdirs(f->dir, NULL), 0);
    char path[512];
    snprintf(path, sizeof path, "%s/__cluster_metadata-0", f->dir);
    kuuid_t meta_id;
    memcpy(meta_id.b, uuid_metadata_topic_id, 16);
    struct plog_config pc = PLOG_CONFIG_INIT;
    struct plog *log;
    assert_int_equal(plog_open(path, &meta_id, &pc, &log), 0);
    struct arena a = ARENA_INIT;
    struct buf out = BUF_INIT;
    struct kwriter w;
    kw_init(&w);
    struct rb_builder bld;
    int64_t now = clock_wall_ms();
    rb_builder_begin(&bld, &out, 0, now, NULL);
    feature_level_record_t fl;
    feature_level_record_init(&fl);
    fl.name = KSTR_LIT("metadata.version");
    fl.feature_level = CONTROLLER_METADATA_VERSION;
    mrec_write(&w, KMETA_FEATURE_LEVEL_RECORD, 0, &fl);
    assert_int_equal(rb_builder_add(&bld, now, KBYTES_NULL, (kbytes_t){w.b.data, (int32_t)w.b.len}, NULL, 0), 0);
    static const char *const racks[] = {"a", "a", "b", "b", "c", "c"};
    for (int i = 0; i < 6; i++) {
        register_broker_record_t rb;
        register_broker_record_init(&rb);
        rb.broker_id = 2 + i;
        rb.broker_epoch = 1 + i;
        rb.end_points.a = register_broker_record_broker_endpoint_new_array(&a, 1);
        rb.end_points.n = 1;
        rb.end_points.a[0].name = KSTR_LIT("PLAINTEXT");
        rb.end_points.a[0].host = KSTR_LIT("10.0.0.2");
        rb.end_points.a[0].port = (uint16_t)(9100 + i);
        rb.rack = KSTR(racks[i]);
        rb.fenced = false;
        buf_reset(&w.b);
        mrec_write(&w, KMETA_REGISTER_BROKER_RECORD, 3, &rb);
        assert_int_equal(rb_builder_add(&bld, now, KBYTES_NULL, (kbytes_t){w.b.data, (int32_t)w.b.len}, NULL, 0),
                         0);
    }
    size_t len;
    assert_int_equal(rb_builder_finish(&bld, &len), 0);
    assert_int_equal(plog_append(log, out.data, len, 1, -1, NULL), 0);
    plog_close(log, true);
    kw_free(&w);
    buf_free(&out);
    arena_free(&a);

    fx_open(f);
    expect(create(f, "racked", 14, 3), 0, "", f);
    struct mimage *m = controller_image(f->c);
    const struct mi_topic *t = mimage_topic(m, KSTR("racked"));
    int leads[8] = {0};
    for (int32_t p = 0; p < t->npartitions; p++) {
        const struct mi_partition *part = &t->partitions[p];
        assert_int_equal(part->nreplicas, 3);
        const char *seen[3];
        for (int32_t r = 0; r < 3; r++) {
            const struct mi_broker *br = mimage_broker(m, part->replicas[r]);
            seen[r] = br->rack ? br->rack : "";
            for (int32_t q = 0; q < r; q++)
                assert_string_not_equal(seen[q], seen[r]);
        }
        leads[part->leader]++;
    }
    for (int b = 1; b <= 7; b++)
        assert_int_equal(leads[b], 2); /* 14 partitions, 7 brokers */
    mimage_release(m);
}

/* Several log dirs: new partitions go to the dir with the fewest, and a
 * restart finds them where they are. Leftovers are dealt with at start:
 * an interrupted deletion is finished, a partition of a topic the
 * metadata does not know is set aside as "-stray". */
static void test_log_dirs_and_leftovers(void **state)
{
    struct fx *f = *state;
    fx_close(f);
    char d1[300], d2[300], both[700], err[256];
    snprintf(d1, sizeof d1, "%s/d1", f->dir);
    snprintf(d2, sizeof d2, "%s/d2", f->dir);
    snprintf(both, sizeof both, "%s,%s", d1, d2);
    assert_int_equal(config_set(f->cfg, "log.dirs", both, err, sizeof err), 0);
    assert_int_equal(fs_mkdirs(d1, NULL), 0);
    assert_int_equal(fs_mkdirs(d2, NULL), 0);
    char path[512];
    snprintf(path, sizeof path, "%s/old-0.0123456789abcdef0123456789abcdef-delete", d2);
    assert_int_equal(fs_mkdirs(path, NULL), 0);
    kuuid_t ghost_id = {{9, 9, 9}};
    struct plog *log;
    struct plog_config pc = PLOG_CONFIG_INIT;
    snprintf(path, sizeof path, "%s/ghost-0", d2);
    assert_int_equal(plog_open(path, &ghost_id, &pc, &log), 0);
    plog_close(log, true);
    /* The metadata log lives in the first dir. */
    snprintf(path, sizeof path, "%s", d1);
    f->b.partitions = fixture_preg_create(&f->b);
    f->c = fixture_controller_open(&f->b, path, err, sizeof err);
    assert_non_null(f->c);

    snprintf(path, sizeof path, "%s/old-0.0123456789abcdef0123456789abcdef-delete", d2);
    struct stat st;
    assert_int_not_equal(stat(path, &st), 0);
    snprintf(path, sizeof path, "%s/ghost-0", d2);
    assert_int_not_equal(stat(path, &st), 0);
    int strays = 0;
    DIR *dir = opendir(d2);
    assert_non_null(dir);
    for (struct dirent *de; (de = readdir(dir));)
        strays += strncmp(de->d_name, "ghost-0.", 8) == 0 && strstr(de->d_name, "-stray") != NULL;
    closedir(dir);
    assert_int_equal(strays, 1);

    expect(create(f, "spread", 4, 1), 0, "", f);
    int in1 = 0, in2 = 0;
    for (int i = 0; i < 4; i++) {
        char a[400], b[400];
        snprintf(a, sizeof a, "%s/spread-%d", d1, i);
        snprintf(b, sizeof b, "%s/spread-%d", d2, i);
        in1 += stat(a, &st) == 0;
        in2 += stat(b, &st) == 0;
    }
    assert_int_equal(in1, 2);
    assert_int_equal(in2, 2);
    /* spread-1 went to d2 (d1 had spread-0); after a restart it is found
     * there, and nothing is created in d1 for it. */
    snprintf(path, sizeof path, "%s/spread-1", d2);
    assert_int_equal(stat(path, &st), 0);
    controller_close(f->c, true);
    preg_destroy(f->b.partitions, true);
    f->b.partitions = fixture_preg_create(&f->b);
    f->c = fixture_controller_open(&f->b, d1, err, sizeof err);
    assert_non_null(f->c);
    struct mimage *m = controller_image(f->c);
    const struct mi_topic *t = mimage_topic(m, KSTR("spread"));
    for (int i = 0; i < 4; i++) {
        struct partition *pp = preg_get(f->b.partitions, &t->id, i);
        assert_non_null(pp);
        partition_put(pp);
    }
    mimage_release(m);
    snprintf(path, sizeof path, "%s/spread-1", d1);
    assert_int_not_equal(stat(path, &st), 0);
}

int main(void)
{
    slog_set_level(SLOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bootstrap_image, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_topic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_name_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_count_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_assignment_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_config_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_validate_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_topic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_partitions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alter_configs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auto_create, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reopen_replays, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reregisters_on_change, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_second_broker_from_log, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rack_aware_placement, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_dirs_and_leftovers, setup, teardown),
        cmocka_unit_test(test_noop_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
