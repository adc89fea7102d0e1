/* The controller's broker-facing operations against a real metadata log:
 * AlterPartition (every error Kafka's ReplicationControlManager answers,
 * the PartitionChangeRecord and the state it makes), AllocateProducerIds
 * (blocks of 1000, broker epochs), UpdateFeatures and the finalized
 * features, controlled shutdown on the controller side, and per-broker
 * dynamic configs of other brokers kept through snapshots. Node 1 is a
 * combined single node; brokers 2 and 3 register through the
 * controller's own entry points, as a BrokerRegistration and
 * BrokerHeartbeat from the network would. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

#include <cmocka.h>

#include "broker.h"
#include "config.h"
#include "controller/controller.h"
#include "log/fsutil.h"
#include "proto/gen/alter_partition_request.h"
#include "proto/gen/alter_partition_response.h"
#include "proto/gen/broker_heartbeat_request.h"
#include "proto/gen/broker_registration_request.h"
#include "proto/kerr.h"
#include "replica/partition.h"
#include "util/arena.h"
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
    int64_t epoch[16]; /* broker epochs by id */
};

static void fx_open(struct fx *f)
{
    char err[512];
    f->b.partitions = fixture_preg_create(&f->b);
    f->c = fixture_controller_open(&f->b, f->dir, err, sizeof err);
    if (!f->c)
        fail_msg("controller_open: %s", err);
    f->b.controller = f->c;
    /* This node's broker side registers at every open. */
    struct mimage *m = controller_image(f->c);
    f->epoch[1] = mimage_broker(m, 1)->epoch;
    mimage_release(m);
}

static void fx_close(struct fx *f)
{
    controller_close(f->c, true);
    preg_destroy(f->b.partitions, true);
    f->c = NULL;
    f->b.partitions = NULL;
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/samsa-ctlops-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    f->cfg = config_new();
    char err[256];
    assert_int_equal(config_set(f->cfg, "log.dirs", f->dir, err, sizeof err), 0);
    /* Brokers 2 and 3 exist only through this test's calls: sessions
     * must not run out under a slow (sanitized) run. */
    assert_int_equal(config_set(f->cfg, "broker.session.timeout.ms", "600000", err, sizeof err), 0);
    /* This node's own broker reports its metadata offset often (a
     * controlled shutdown waits for every active broker's report). */
    assert_int_equal(config_set(f->cfg, "broker.heartbeat.interval.ms", "50", err, sizeof err), 0);
    f->b.cfg = f->cfg;
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

/* Waits for op (bounded) and releases it: its error. */
static int wait_op(struct ctl_op *op)
{
    if (!op)
        return 0;
    int err = KERR_REQUEST_TIMED_OUT;
    for (int i = 0; i < 20000 && !ctl_op_done(op, &err); i++)
        usleep(1000);
    ctl_op_release(op);
    return err;
}

/* Broker id registers with metadata.version 1-mv_max: the registration's
 * error (then nothing else happens). */
static int register_broker(struct fx *f, int32_t id, int16_t mv_max)
{
    struct arena a = ARENA_INIT;
    broker_registration_request_t q;
    broker_registration_request_init(&q);
    q.broker_id = id;
    q.cluster_id = KSTR("test-cluster");
    assert_int_equal(uuid_random(q.incarnation_id.b), 0);
    q.listeners.a = broker_registration_request_listener_new_array(&a, 1);
    q.listeners.n = 1;
    q.listeners.a[0].name = KSTR_LIT("PLAINTEXT");
    q.listeners.a[0].host = KSTR_LIT("127.0.0.1");
    q.listeners.a[0].port = (uint16_t)(9092 + id);
    q.features.a = broker_registration_request_feature_new_array(&a, 1);
    q.features.n = 1;
    q.features.a[0].name = KSTR_LIT("metadata.version");
    q.features.a[0].min_supported_version = 1;
    q.features.a[0].max_supported_version = mv_max;
    q.rack = KSTR_NULL;
    q.previous_broker_epoch = -1;
    int64_t epoch;
    struct ctl_op *op;
    int rc = controller_register_broker(f->c, &q, &epoch, &op);
    arena_free(&a);
    if (rc)
        return rc;
    assert_int_equal(wait_op(op), 0);
    f->epoch[id] = epoch;
    return 0;
}

/* Broker id registers (features: metadata.version 1-21 as samsa's own
 * broker side sends) and, caught up, is unfenced. */
static void add_broker_mv(struct fx *f, int32_t id, int16_t mv_max)
{
    assert_int_equal(register_broker(f, id, mv_max), 0);
    struct ctl_op *op;
    int64_t epoch = f->epoch[id];
    broker_heartbeat_request_t h;
    broker_heartbeat_request_init(&h);
    h.broker_id = id;
    h.broker_epoch = epoch;
    h.current_metadata_offset = epoch;
    bool fenced, caught_up, shut;
    assert_int_equal(controller_broker_heartbeat(f->c, &h, &fenced, &caught_up, &shut, &op), 0);
    assert_false(fenced);
    assert_int_equal(wait_op(op), 0);
}

static void add_broker(struct fx *f, int32_t id) { add_broker_mv(f, id, CONTROLLER_METADATA_VERSION); }

static kuuid_t topic_id(struct fx *f, const char *name)
{
    struct mimage *m = controller_image(f->c);
    const struct mi_topic *t = mimage_topic(m, KSTR(name));
    assert_non_null(t);
    kuuid_t id = t->id;
    mimage_release(m);
    return id;
}

static int create_rf(struct fx *f, const char *name, int16_t rf)
{
    struct topic_spec s;
    memset(&s, 0, sizeof s);
    s.name = KSTR(name);
    s.num_partitions = 1;
    s.replication_factor = rf;
    return controller_create_topic(f->c, &s, false, NULL, f->msg, sizeof f->msg, NULL);
}

/* topic "isr": one partition on replicas 1, 2, 3 (leader 1). */
static kuuid_t three_replicas(struct fx *f)
{
    add_broker(f, 2);
    add_broker(f, 3);
    static const int32_t r123[] = {1, 2, 3};
    const int32_t *assign[] = {r123};
    int32_t len[] = {3};
    struct topic_spec s;
    memset(&s, 0, sizeof s);
    s.name = KSTR("isr");
    s.num_partitions = -1;
    s.replication_factor = -1;
    s.nassign = 1;
    s.assign = assign;
    s.assign_len = len;
    assert_int_equal(controller_create_topic(f->c, &s, false, NULL, f->msg, sizeof f->msg, NULL), 0);
    return topic_id(f, "isr");
}

/* ------------------------------------------------------------------ */
/* AlterPartition                                                      */

struct ap {
    struct arena a;
    alter_partition_request_t q;
    alter_partition_response_t r;
    int16_t version;
};

/* One partition of one topic (by id from v2, by name before). isr: n
 * ids; epochs (v3): NULL means each member's registered epoch. */
static void ap_build(struct fx *f, struct ap *x, int16_t version, int32_t broker, const kuuid_t *tid, const char *name,
                     int32_t partition, int32_t leader_epoch, int32_t partition_epoch, const int32_t *isr, int32_t n,
                     const int64_t *epochs, int8_t lrs)
{
    memset(x, 0, sizeof *x);
    x->version = version;
    alter_partition_request_init(&x->q);
    x->q.broker_id = broker;
    x->q.broker_epoch = f->epoch[broker];
    x->q.topics.a = alter_partition_request_topic_data_new_array(&x->a, 1);
    x->q.topics.n = 1;
    alter_partition_request_topic_data_t *t = &x->q.topics.a[0];
    if (tid)
        t->topic_id = *tid;
    t->topic_name = name ? KSTR(name) : KSTR_LIT("");
    t->partitions.a = alter_partition_request_partition_data_new_array(&x->a, 1);
    t->partitions.n = 1;
    alter_partition_request_partition_data_t *p = &t->partitions.a[0];
    p->partition_index = partition;
    p->leader_epoch = leader_epoch;
    p->partition_epoch = partition_epoch;
    p->leader_recovery_state = lrs;
    if (version >= 3) {
        p->new_isr_with_epochs.a = alter_partition_request_broker_state_new_array(&x->a, n);
        p->new_isr_with_epochs.n = n;
        for (int32_t i = 0; i < n; i++) {
            p->new_isr_with_epochs.a[i].broker_id = isr[i];
            p->new_isr_with_epochs.a[i].broker_epoch = epochs ? epochs[i] : f->epoch[isr[i]];
        }
    } else {
        p->new_isr.a = arena_alloc(&x->a, (size_t)(n ? n : 1) * sizeof(int32_t));
        memcpy(p->new_isr.a, isr, (size_t)n * sizeof(int32_t));
        p->new_isr.n = n;
    }
}

/* Sends x; the top-level error (then nothing else), else the partition's
 * error, after waiting for the commit. */
static int ap_send(struct fx *f, struct ap *x, int *top)
{
    struct ctl_op *op = NULL;
    *top = controller_alter_partition(f->c, &x->q, x->version, &x->r, &x->a, &op);
    if (*top)
        return -1;
    *top = wait_op(op);
    assert_int_equal(x->r.topics.n, 1);
    assert_int_equal(x->r.topics.a[0].partitions.n, 1);
    return x->r.topics.a[0].partitions.a[0].error_code;
}

static int ap_error(struct fx *f, int16_t version, int32_t broker, const kuuid_t *tid, const char *name, int32_t part,
                    int32_t le, int32_t pe, const int32_t *isr, int32_t n, const int64_t *epochs, int8_t lrs)
{
    struct ap x;
    ap_build(f, &x, version, broker, tid, name, part, le, pe, isr, n, epochs, lrs);
    int top;
    int err = ap_send(f, &x, &top);
    arena_free(&x.a);
    return err < 0 ? -top : err;
}

static void assert_partition(struct fx *f, const char *topic, int32_t leader, int32_t le, int32_t pe, const int32_t *isr,
                             int32_t n)
{
    struct mimage *m = controller_image(f->c);
    const struct mi_partition *p = &mimage_topic(m, KSTR(topic))->partitions[0];
    assert_int_equal(p->leader, leader);
    assert_int_equal(p->leader_epoch, le);
    assert_int_equal(p->partition_epoch, pe);
    assert_int_equal(p->nisr, n);
    assert_memory_equal(p->isr, isr, (size_t)n * sizeof *isr);
    mimage_release(m);
}

static void test_alter_partition_changes_isr(void **state)
{
    struct fx *f = *state;
    kuuid_t id = three_replicas(f);
    static const int32_t all[] = {1, 2, 3}, one_two[] = {1, 2};
    assert_partition(f, "isr", 1, 0, 0, all, 3);

    /* v2 (topic ids): shrink to [1, 2]. */
    struct ap x;
    ap_build(f, &x, 2, 1, &id, NULL, 0, 0, 0, one_two, 2, NULL, 0);
    int top;
    assert_int_equal(ap_send(f, &x, &top), 0);
    assert_int_equal(top, 0);
    const alter_partition_response_partition_data_t *o = &x.r.topics.a[0].partitions.a[0];
    assert_int_equal(x.r.error_code, 0);
    assert_memory_equal(x.r.topics.a[0].topic_id.b, id.b, 16);
    assert_int_equal(o->partition_index, 0);
    assert_int_equal(o->leader_id, 1);
    assert_int_equal(o->leader_epoch, 0); /* no bump on a shrink since 3.6 */
    assert_int_equal(o->partition_epoch, 1);
    assert_int_equal(o->isr.n, 2);
    assert_memory_equal(o->isr.a, one_two, sizeof one_two);
    assert_int_equal(o->leader_recovery_state, 0);
    arena_free(&x.a);
    assert_partition(f, "isr", 1, 0, 1, one_two, 2);

    /* The same request again: its partition epoch is now stale. */
    assert_int_equal(ap_error(f, 2, 1, &id, NULL, 0, 0, 0, one_two, 2, NULL, 0), KERR_INVALID_UPDATE_VERSION);
    /* Asking for the ISR it has: nothing written, the state answered. */
    ap_build(f, &x, 2, 1, &id, NULL, 0, 0, 1, one_two, 2, NULL, 0);
    struct ctl_op *op = (struct ctl_op *)1;
    assert_int_equal(controller_alter_partition(f->c, &x.q, 2, &x.r, &x.a, &op), 0);
    assert_null(op);
    assert_int_equal(x.r.topics.a[0].partitions.a[0].error_code, 0);
    assert_int_equal(x.r.topics.a[0].partitions.a[0].partition_epoch, 1);
    arena_free(&x.a);

    /* v3 with broker epochs: expand back to all three. */
    ap_build(f, &x, 3, 1, &id, NULL, 0, 0, 1, all, 3, NULL, 0);
    assert_int_equal(ap_send(f, &x, &top), 0);
    o = &x.r.topics.a[0].partitions.a[0];
    assert_int_equal(o->partition_epoch, 2);
    assert_int_equal(o->isr.n, 3);
    arena_free(&x.a);
    assert_partition(f, "isr", 1, 0, 2, all, 3);

    /* v1 and v0 by name. */
    assert_int_equal(ap_error(f, 1, 1, NULL, "isr", 0, 0, 2, one_two, 2, NULL, 0), 0);
    assert_int_equal(ap_error(f, 0, 1, NULL, "isr", 0, 0, 3, all, 3, NULL, 0), 0);
    assert_partition(f, "isr", 1, 0, 4, all, 3);

    /* The changes survive a restart (replayed from the log). */
    fx_close(f);
    fx_open(f);
    assert_partition(f, "isr", 1, 0, 4, all, 3);
}

static void test_alter_partition_errors(void **state)
{
    struct fx *f = *state;
    kuuid_t id = three_replicas(f);
    static const int32_t one_two[] = {1, 2}, two_three[] = {2, 3}, one_four[] = {1, 4}, one_one[] = {1, 1},
                         neg[] = {1, -1}, all[] = {1, 2, 3};

    /* Top level: the sender's broker epoch. */
    struct ap x;
    int top;
    ap_build(f, &x, 2, 1, &id, NULL, 0, 0, 0, one_two, 2, NULL, 0);
    x.q.broker_epoch = f->epoch[1] + 100;
    assert_int_equal(ap_send(f, &x, &top), -1);
    assert_int_equal(top, KERR_STALE_BROKER_EPOCH);
    arena_free(&x.a);
    ap_build(f, &x, 2, 9, &id, NULL, 0, 0, 0, one_two, 2, NULL, 0);
    assert_int_equal(ap_send(f, &x, &top), -1);
    assert_int_equal(top, KERR_STALE_BROKER_EPOCH); /* never registered */
    arena_free(&x.a);

    /* Topics and partitions that do not exist. */
    kuuid_t nope = {{7, 7, 7}}, zero = {{0}};
    assert_int_equal(ap_error(f, 2, 1, &nope, NULL, 0, 0, 0, one_two, 2, NULL, 0), KERR_UNKNOWN_TOPIC_ID);
    assert_int_equal(ap_error(f, 2, 1, &zero, "isr", 0, 0, 0, one_two, 2, NULL, 0), KERR_UNKNOWN_TOPIC_ID);
    assert_int_equal(ap_error(f, 1, 1, NULL, "nope", 0, 0, 0, one_two, 2, NULL, 0), KERR_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(ap_error(f, 2, 1, &id, NULL, 1, 0, 0, one_two, 2, NULL, 0), KERR_UNKNOWN_TOPIC_OR_PARTITION);

    /* Epochs: ahead of the controller's, behind it. */
    assert_int_equal(ap_error(f, 2, 1, &id, NULL, 0, 1, 0, one_two, 2, NULL, 0), KERR_NOT_CONTROLLER);
    assert_int_equal(ap_error(f, 2, 1, &id, NULL, 0, 0, 5, one_two, 2, NULL, 0), KERR_NOT_CONTROLLER);
    assert_int_equal(ap_error(f, 2, 1, &id, NULL, 0, -1, 0, one_two, 2, NULL, 0), KERR_FENCED_LEADER_EPOCH);
    /* Not the leader. */
    assert_int_equal(ap_error(f, 2, 2, &id, NULL, 0, 0, 0, one_two, 2, NULL, 0), KERR_INVALID_REQUEST);
    /* ISRs that cannot be: without the leader, a broker that is not a
     * replica, a member twice, a negative id. */
    assert_int_equal(ap_error(f, 2, 1, &id, NULL, 0, 0, 0, two_three, 2, NULL, 0), KERR_INVALID_REQUEST);
    assert_int_equal(ap_error(f, 2, 1, &id, NULL, 0, 0, 0, one_four, 2, NULL, 0), KERR_INVALID_REQUEST);
    assert_int_equal(ap_error(f, 2, 1, &id, NULL, 0, 0, 0, one_one, 2, NULL, 0), KERR_INVALID_REQUEST);
    assert_int_equal(ap_error(f, 2, 1, &id, NULL, 0, 0, 0, neg, 2, NULL, 0), KERR_INVALID_REQUEST);
    /* Leader recovery: RECOVERED cannot go back to RECOVERING, and a
     * recovering leader's ISR is itself alone. */
    static const int32_t one[] = {1};
    assert_int_equal(ap_error(f, 2, 1, &id, NULL, 0, 0, 0, one, 1, NULL, 1), KERR_INVALID_REQUEST);
    assert_int_equal(ap_error(f, 2, 1, &id, NULL, 0, 0, 0, one_two, 2, NULL, 1), KERR_INVALID_REQUEST);
    /* v3: a member's epoch that is not its registration's. */
    int64_t stale[] = {-1, 12345};
    assert_int_equal(ap_error(f, 3, 1, &id, NULL, 0, 0, 0, one_two, 2, stale, 0), KERR_INELIGIBLE_REPLICA);
    int64_t unchecked[] = {-1, -1};
    assert_int_equal(ap_error(f, 3, 1, &id, NULL, 0, 0, 0, one_two, 2, unchecked, 0), 0);

    /* A member in controlled shutdown is not eligible: INELIGIBLE_REPLICA
     * from v2, OPERATION_NOT_ATTEMPTED before. */
    broker_heartbeat_request_t h;
    broker_heartbeat_request_init(&h);
    h.broker_id = 3;
    h.broker_epoch = f->epoch[3];
    h.current_metadata_offset = f->epoch[3];
    h.want_shut_down = true;
    bool fenced, caught_up, shut;
    struct ctl_op *op;
    assert_int_equal(controller_broker_heartbeat(f->c, &h, &fenced, &caught_up, &shut, &op), 0);
    assert_int_equal(wait_op(op), 0);
    assert_int_equal(ap_error(f, 2, 1, &id, NULL, 0, 0, 1, all, 3, NULL, 0), KERR_INELIGIBLE_REPLICA);
    assert_int_equal(ap_error(f, 1, 1, NULL, "isr", 0, 0, 1, all, 3, NULL, 0), KERR_OPERATION_NOT_ATTEMPTED);
    assert_partition(f, "isr", 1, 0, 1, one_two, 2);

    /* An empty request is answered as it is. */
    memset(&x, 0, sizeof x);
    alter_partition_request_init(&x.q);
    op = (struct ctl_op *)1;
    assert_int_equal(controller_alter_partition(f->c, &x.q, 3, &x.r, &x.a, &op), 0);
    assert_null(op);
    assert_int_equal(x.r.topics.n, 0);
    arena_free(&x.a);
}

/* ------------------------------------------------------------------ */
/* AllocateProducerIds                                                 */

static void test_allocate_producer_ids(void **state)
{
    struct fx *f = *state;
    add_broker(f, 2);
    int64_t first;
    int32_t len;
    struct ctl_op *op;
    struct mimage *m = controller_image(f->c);
    assert_int_equal(m->next_producer_id, -1);
    mimage_release(m);
    assert_int_equal(controller_allocate_producer_ids(f->c, 2, f->epoch[2], &first, &len, &op), 0);
    assert_int_equal(first, 0);
    assert_int_equal(len, 1000);
    assert_int_equal(wait_op(op), 0);
    assert_int_equal(controller_allocate_producer_ids(f->c, 1, f->epoch[1], &first, &len, &op), 0);
    assert_int_equal(first, 1000);
    assert_int_equal(len, 1000);
    assert_int_equal(wait_op(op), 0);
    m = controller_image(f->c);
    assert_int_equal(m->next_producer_id, 2000);
    mimage_release(m);
    /* Broker epochs are checked; nothing is handed out then. */
    assert_int_equal(controller_allocate_producer_ids(f->c, 2, f->epoch[2] - 1, &first, &len, &op),
                     KERR_STALE_BROKER_EPOCH);
    assert_null(op);
    assert_int_equal(controller_allocate_producer_ids(f->c, 7, 0, &first, &len, &op), KERR_STALE_BROKER_EPOCH);
    /* A restart goes on after the last block. */
    fx_close(f);
    fx_open(f);
    assert_int_equal(controller_allocate_producer_ids(f->c, 2, f->epoch[2], &first, &len, &op), 0);
    assert_int_equal(first, 2000);
    assert_int_equal(wait_op(op), 0);
}

/* ------------------------------------------------------------------ */
/* Features                                                            */

/* One feature update: its error, with Kafka's message in f->msg. */
static int update(struct fx *f, const char *name, int16_t level, int8_t type, bool validate_only)
{
    kstr_t n = KSTR(name);
    struct ctl_op *op = NULL;
    int rc = controller_update_features(f->c, 1, &n, &level, &type, validate_only, f->msg, sizeof f->msg, &op);
    if (rc == 0) {
        assert_true(validate_only ? op == NULL : op != NULL);
        assert_int_equal(wait_op(op), 0);
    } else {
        assert_null(op);
    }
    return rc;
}

static void expect_msg(int rc, int code, const char *msg, const struct fx *f)
{
    assert_int_equal(rc, code);
    assert_string_equal(f->msg, msg);
}

static int16_t finalized(struct fx *f, const char *name)
{
    struct mimage *m = controller_image(f->c);
    int16_t v = mimage_feature_level(m, name);
    mimage_release(m);
    return v;
}

enum { UP = CONTROLLER_FEATURE_UPGRADE, SAFE = CONTROLLER_FEATURE_SAFE_DOWNGRADE,
       UNSAFE = CONTROLLER_FEATURE_UNSAFE_DOWNGRADE };

static void test_update_features(void **state)
{
    struct fx *f = *state;
    int16_t min, max;
    assert_true(controller_supported_feature("metadata.version", &min, &max));
    assert_int_equal(min, 1);
    assert_int_equal(max, CONTROLLER_METADATA_VERSION);
    /* What clients key behaviour on stays off: samsa lacks it. */
    assert_false(controller_supported_feature("transaction.version", &min, &max));
    assert_int_equal(max, 0);
    assert_false(controller_supported_feature("group.version", &min, &max));
    assert_false(controller_supported_feature("kraft.version", &min, &max));
    assert_int_equal(finalized(f, "metadata.version"), 21);

    expect_msg(update(f, "transaction.version", 2, UP, false), KERR_INVALID_UPDATE_VERSION,
               "Invalid update version 2 for feature transaction.version. Local controller 1 does not support this "
               "feature.",
               f);
    expect_msg(update(f, "group.version", 1, UP, false), KERR_INVALID_UPDATE_VERSION,
               "Invalid update version 1 for feature group.version. Local controller 1 does not support this feature.",
               f);
    expect_msg(update(f, "kraft.version", 0, UP, false), 0, "", f); /* level 0 is "off": valid */
    assert_int_equal(finalized(f, "kraft.version"), 0);
    expect_msg(update(f, "no.such.feature", 0, UP, false), KERR_INVALID_UPDATE_VERSION,
               "Invalid update version 0 for feature no.such.feature. Feature no.such.feature not found.", f);
    expect_msg(update(f, "metadata.version", 21, 4, false), KERR_INVALID_UPDATE_VERSION,
               "Invalid update version 21 for feature metadata.version. The controller does not support the given "
               "upgrade type.",
               f);
    expect_msg(update(f, "metadata.version", -1, UP, false), KERR_INVALID_UPDATE_VERSION,
               "Invalid update version -1 for feature metadata.version. A feature version cannot be less than 0.", f);
    expect_msg(update(f, "metadata.version", 22, UP, false), KERR_INVALID_UPDATE_VERSION,
               "Invalid update version 22 for feature metadata.version. Local controller 1 only supports versions 1-21",
               f);
    expect_msg(update(f, "metadata.version", 20, UP, false), KERR_INVALID_UPDATE_VERSION,
               "Invalid update version 20 for feature metadata.version. Can't downgrade the version of this feature "
               "without setting the upgrade type to either safe or unsafe downgrade.",
               f);
    /* 3.9-IV0 -> 3.8-IV0 changes no metadata: a safe downgrade. */
    expect_msg(update(f, "metadata.version", 20, SAFE, true), 0, "", f);
    assert_int_equal(finalized(f, "metadata.version"), 21); /* validate only */
    expect_msg(update(f, "metadata.version", 20, SAFE, false), 0, "", f);
    assert_int_equal(finalized(f, "metadata.version"), 20);
    expect_msg(update(f, "metadata.version", 21, SAFE, false), KERR_INVALID_UPDATE_VERSION,
               "Invalid update version 21 for feature metadata.version. Can't downgrade to a newer version.", f);
    /* Below 3.7-IV2 (directory assignment) the metadata changed. */
    expect_msg(update(f, "metadata.version", 17, SAFE, true), 0, "", f);
    expect_msg(update(f, "metadata.version", 16, SAFE, false), KERR_INVALID_UPDATE_VERSION,
               "Invalid metadata.version 16. Refusing to perform the requested downgrade because it might delete "
               "metadata information.",
               f);
    expect_msg(update(f, "metadata.version", 16, UNSAFE, false), KERR_INVALID_UPDATE_VERSION,
               "Invalid metadata.version 16. Unsafe metadata downgrade is not supported in this version.", f);
    expect_msg(update(f, "metadata.version", 3, SAFE, false), KERR_INVALID_UPDATE_VERSION,
               "Invalid metadata.version 3. Unable to set a metadata.version less than 3.3-IV0", f);

    /* Registered brokers must support the level; a broker must support
     * the finalized level to register. */
    assert_int_equal(register_broker(f, 3, 19), KERR_UNSUPPORTED_VERSION);
    add_broker_mv(f, 2, 20);
    expect_msg(update(f, "metadata.version", 21, UP, false), KERR_INVALID_UPDATE_VERSION,
               "Invalid update version 21 for feature metadata.version. Broker 2 only supports versions 1-20", f);
    /* All or nothing. */
    kstr_t names[] = {KSTR_LIT("kraft.version"), KSTR_LIT("metadata.version")};
    int16_t levels[] = {0, 21};
    int8_t types[] = {UP, UP};
    struct ctl_op *op = NULL;
    assert_int_equal(controller_update_features(f->c, 2, names, levels, types, false, f->msg, sizeof f->msg, &op),
                     KERR_INVALID_UPDATE_VERSION);
    assert_null(op);
    assert_int_equal(finalized(f, "metadata.version"), 20);

    /* The finalized level survives a restart. */
    fx_close(f);
    fx_open(f);
    assert_int_equal(finalized(f, "metadata.version"), 20);
}

/* ------------------------------------------------------------------ */
/* Controlled shutdown (controller side)                               */

struct hb {
    int rc;
    bool fenced, caught_up, shut;
};

/* A heartbeat from broker id reporting the current image offset. */
static struct hb heartbeat(struct fx *f, int32_t id, bool want_shut_down, int64_t offset)
{
    broker_heartbeat_request_t h;
    broker_heartbeat_request_init(&h);
    h.broker_id = id;
    h.broker_epoch = f->epoch[id];
    if (offset < 0) {
        struct mimage *m = controller_image(f->c);
        offset = m->offset;
        mimage_release(m);
    }
    h.current_metadata_offset = offset;
    h.want_shut_down = want_shut_down;
    struct hb r;
    struct ctl_op *op = NULL;
    r.rc = controller_broker_heartbeat(f->c, &h, &r.fenced, &r.caught_up, &r.shut, &op);
    if (r.rc == 0 && op) {
        bool fenced, caught_up, shut;
        ctl_op_heartbeat(op, &fenced, &caught_up, &shut);
        assert_int_equal(fenced, r.fenced);
        assert_int_equal(shut, r.shut);
        r.rc = wait_op(op);
    }
    return r;
}

static const struct mi_broker *broker_of(const struct mimage *m, int32_t id)
{
    const struct mi_broker *b = mimage_broker(m, id);
    assert_non_null(b);
    return b;
}

static void test_controlled_shutdown(void **state)
{
    struct fx *f = *state;
    add_broker(f, 2);
    add_broker(f, 3);
    add_broker(f, 4);
    static const int32_t r21[] = {2, 1}, r32[] = {3, 2}, r12[] = {1, 2}, r2[] = {2};
    const int32_t *assign[] = {r21, r32, r12};
    int32_t len[] = {2, 2, 2};
    struct topic_spec s;
    memset(&s, 0, sizeof s);
    s.name = KSTR("cs");
    s.num_partitions = -1;
    s.replication_factor = -1;
    s.nassign = 3;
    s.assign = assign;
    s.assign_len = len;
    assert_int_equal(controller_create_topic(f->c, &s, false, NULL, f->msg, sizeof f->msg, NULL), 0);
    const int32_t *solo[] = {r2};
    int32_t len1[] = {1};
    s.name = KSTR("solo");
    s.nassign = 1;
    s.assign = solo;
    s.assign_len = len1;
    assert_int_equal(controller_create_topic(f->c, &s, false, NULL, f->msg, sizeof f->msg, NULL), 0);
    /* Broker 3 has applied everything so far; 2 asks to shut down. */
    struct hb r = heartbeat(f, 3, false, -1);
    assert_int_equal(r.rc, 0);
    r = heartbeat(f, 2, true, -1);
    assert_int_equal(r.rc, 0);
    assert_false(r.fenced);
    assert_false(r.shut);
    struct mimage *m = controller_image(f->c);
    assert_true(broker_of(m, 2)->in_controlled_shutdown);
    assert_false(broker_of(m, 2)->fenced);
    const struct mi_topic *t = mimage_topic(m, KSTR("cs"));
    /* Its leaderships moved to the other ISR member, or (the only
     * member) to nobody; it left every ISR it was not alone in. */
    assert_int_equal(t->partitions[0].leader, 1);
    assert_int_equal(t->partitions[0].nisr, 1);
    assert_int_equal(t->partitions[1].leader, 3);
    assert_int_equal(t->partitions[1].nisr, 1);
    assert_int_equal(t->partitions[1].isr[0], 3);
    assert_int_equal(t->partitions[2].nisr, 1);
    t = mimage_topic(m, KSTR("solo"));
    assert_int_equal(t->partitions[0].leader, -1);
    assert_int_equal(t->partitions[0].nisr, 1);
    int64_t moved = m->offset;
    mimage_release(m);
    /* A broker in controlled shutdown is not placed on. */
    expect_msg(create_rf(f, "later", 4), KERR_INVALID_REPLICATION_FACTOR,
               "Unable to replicate the partition 4 time(s): The target replication factor of 4 cannot be reached "
               "because only 3 broker(s) are registered.",
               f);
    /* Not yet: broker 3 has not reported the changes. */
    r = heartbeat(f, 2, true, -1);
    assert_false(r.shut);
    assert_false(r.fenced);
    r = heartbeat(f, 4, false, moved - 1);
    r = heartbeat(f, 3, false, moved - 1);
    r = heartbeat(f, 2, true, -1);
    assert_false(r.shut);
    /* Once broker 3 and 4 (and this node's own broker, which heartbeats
     * on its own) have, it may go: fenced. */
    heartbeat(f, 3, false, -1);
    heartbeat(f, 4, false, -1);
    for (int i = 0; i < 500 && !r.shut; i++) {
        usleep(10000);
        r = heartbeat(f, 2, true, -1);
    }
    assert_true(r.shut);
    assert_true(r.fenced);
    m = controller_image(f->c);
    assert_true(broker_of(m, 2)->fenced);
    mimage_release(m);
    /* A fenced broker may go at once. */
    r = heartbeat(f, 2, true, -1);
    assert_true(r.shut);
    assert_true(r.fenced);
    /* So may one that leads nothing: fenced at once. */
    r = heartbeat(f, 4, true, -1);
    assert_int_equal(r.rc, 0);
    assert_true(r.shut);
    assert_true(r.fenced);
    m = controller_image(f->c);
    assert_true(broker_of(m, 4)->fenced);
    assert_false(broker_of(m, 4)->in_controlled_shutdown);
    mimage_release(m);
}

/* ------------------------------------------------------------------ */
/* Other brokers' dynamic configs, and snapshots                       */

static int alter_other(struct fx *f, const char *name, bool replace, const struct config_alter *ch, size_t n)
{
    return controller_alter_broker_resource(f->c, KSTR(name), replace, ch, n, false, f->msg, sizeof f->msg, NULL);
}

/* Broker resource name's value for key in the image, NULL if none. */
static char *layer_value(struct fx *f, const char *name, const char *key)
{
    struct mimage *m = controller_image(f->c);
    const struct mi_broker_configs *l = mimage_broker_configs(m, name);
    char *v = NULL;
    for (int32_t i = 0; l && i < l->n && !v; i++)
        if (strcmp(l->configs[i].key, key) == 0)
            v = strdup(l->configs[i].value);
    mimage_release(m);
    return v;
}

static void assert_layer(struct fx *f, const char *name, const char *key, const char *want)
{
    char *v = layer_value(f, name, key);
    if (!want)
        assert_null(v);
    else
        assert_string_equal(v, want);
    free(v);
}

/* The newest snapshot's end offset in the metadata log dir (-1: none). */
static int64_t newest_snapshot(struct fx *f)
{
    char path[512];
    snprintf(path, sizeof path, "%s/__cluster_metadata-0", f->dir);
    DIR *d = opendir(path);
    assert_non_null(d);
    int64_t best = -1;
    for (struct dirent *de; (de = readdir(d));) {
        size_t n = strlen(de->d_name);
        if (n > 11 && strcmp(de->d_name + n - 11, ".checkpoint") == 0) {
            int64_t end = strtoll(de->d_name, NULL, 10);
            if (end > best)
                best = end;
        }
    }
    closedir(d);
    return best;
}

static void test_other_broker_configs(void **state)
{
    struct fx *f = *state;
    add_broker(f, 2);
    struct config_alter set[] = {{"log.retention.ms", CONFIG_OP_SET, "5000"},
                                 {"log.cleanup.policy", CONFIG_OP_APPEND, "compact"}};
    expect_msg(alter_other(f, "2", false, set, 2), 0, "", f);
    assert_layer(f, "2", "log.retention.ms", "5000");
    assert_layer(f, "2", "log.cleanup.policy", "delete,compact"); /* on the default */
    /* This node's own config and layer are not broker 2's. */
    assert_layer(f, "1", "log.retention.ms", NULL);
    struct mimage *m = controller_image(f->c);
    assert_int_equal(m->nbroker_configs, 0);
    mimage_release(m);
    assert_int_equal(f->b.cfg->log_retention_ms, 604800000);

    struct config_alter sub[] = {{"log.cleanup.policy", CONFIG_OP_SUBTRACT, "delete"},
                                 {"log.retention.ms", CONFIG_OP_DELETE, NULL}};
    expect_msg(alter_other(f, "2", false, sub, 2), 0, "", f);
    assert_layer(f, "2", "log.cleanup.policy", "compact");
    assert_layer(f, "2", "log.retention.ms", NULL);
    struct config_alter bad[] = {{"log.retention.ms", CONFIG_OP_APPEND, "1"}};
    expect_msg(alter_other(f, "2", false, bad, 1), KERR_INVALID_CONFIG,
               "Can't APPEND to key log.retention.ms because its type is not LIST.", f);
    expect_msg(alter_other(f, "two", false, set, 1), KERR_INVALID_REQUEST,
               "Unable to parse broker name as a base 10 number.", f);
    expect_msg(alter_other(f, "-2", false, set, 1), KERR_INVALID_REQUEST, "Invalid negative broker ID.", f);
    expect_msg(alter_other(f, "9", false, set, 1), KERR_BROKER_ID_NOT_REGISTERED, "No node with id 9 found.", f);
    /* The legacy API replaces the whole layer. */
    struct config_alter only[] = {{"log.segment.bytes", CONFIG_OP_SET, "1048576"}};
    expect_msg(alter_other(f, "2", true, only, 1), 0, "", f);
    assert_layer(f, "2", "log.segment.bytes", "1048576");
    assert_layer(f, "2", "log.cleanup.policy", NULL);

    /* Snapshots carry every broker's layer, the finalized features and
     * the producer id blocks: a restart that starts from one has them. */
    fx_close(f);
    char err[256];
    assert_int_equal(config_set(f->cfg, "metadata.log.max.record.bytes.between.snapshots", "1", err, sizeof err), 0);
    fx_open(f);
    int64_t first;
    int32_t len;
    struct ctl_op *op;
    assert_int_equal(controller_allocate_producer_ids(f->c, 2, f->epoch[2], &first, &len, &op), 0);
    assert_int_equal(wait_op(op), 0);
    expect_msg(update(f, "metadata.version", 20, SAFE, false), 0, "", f);
    m = controller_image(f->c);
    int64_t end = m->offset + 1;
    mimage_release(m);
    for (int i = 0; i < 2000 && newest_snapshot(f) < end; i++)
        usleep(5000);
    assert_true(newest_snapshot(f) >= end);
    fx_close(f);
    fx_open(f);
    assert_layer(f, "2", "log.segment.bytes", "1048576");
    assert_int_equal(finalized(f, "metadata.version"), 20);
    m = controller_image(f->c);
    assert_int_equal(m->next_producer_id, 1000);
    const struct mi_broker *b2 = mimage_broker(m, 2);
    assert_non_null(b2);
    assert_int_equal(b2->nfeatures, 1);
    assert_string_equal(b2->features[0].name, "metadata.version");
    assert_int_equal(b2->features[0].max, CONTROLLER_METADATA_VERSION);
    mimage_release(m);
}

int main(void)
{
    slog_set_level(SLOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_alter_partition_changes_isr, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alter_partition_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_allocate_producer_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_update_features, setup, teardown),
        cmocka_unit_test_setup_teardown(test_controlled_shutdown, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_broker_configs, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
