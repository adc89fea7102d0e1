/* samsactl transactions describe-producers|abort: see transactions.h.
 *
 *   samsactl transactions describe-producers --topic T --partition P
 *   samsactl transactions abort --topic T --partition P --start-offset O
 *   samsactl transactions abort --topic T --partition P --producer-id ID
 *            --producer-epoch E --coordinator-epoch C
 *
 * describe-producers prints kafka-transactions.sh's table (ProducerId,
 * ProducerEpoch, LatestCoordinatorEpoch, LastSequence, LastTimestamp,
 * CurrentTransactionStartOffset). abort with --start-offset looks up the
 * producer whose open transaction starts there (DescribeProducers), as
 * kafka-transactions.sh does, and writes an ABORT marker for it on the
 * partition's leader (WriteTxnMarkers; the broker requires CLUSTER_ACTION
 * on the cluster). */
#include "transactions.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "proto/gen/describe_producers_request.h"
#include "proto/gen/describe_producers_response.h"
#include "proto/gen/write_txn_markers_request.h"
#include "proto/gen/write_txn_markers_response.h"
#include "proto/kerr.h"

enum { OPT_TOPIC = 1, OPT_PARTITION, OPT_START_OFFSET, OPT_PRODUCER_ID, OPT_PRODUCER_EPOCH, OPT_COORDINATOR_EPOCH };

static const struct opt_def txn_defs[] = {
    {"topic", true, OPT_TOPIC},
    {"partition", true, OPT_PARTITION},
    {"start-offset", true, OPT_START_OFFSET},
    {"producer-id", true, OPT_PRODUCER_ID},
    {"producer-epoch", true, OPT_PRODUCER_EPOCH},
    {"coordinator-epoch", true, OPT_COORDINATOR_EPOCH},
    {NULL, false, 0},
};

static void txn_usage(FILE *f)
{
    fputs("Usage: samsactl transactions describe-producers --topic T --partition P\n"
          "       samsactl transactions abort --topic T --partition P --start-offset O\n"
          "       samsactl transactions abort --topic T --partition P --producer-id ID\n"
          "                                   --producer-epoch E --coordinator-epoch C\n"
          "\n"
          "describe-producers lists the producers the partition's leader knows (their\n"
          "epochs, last sequence and the start of an open transaction). abort ends a\n"
          "hanging transaction by writing an ABORT marker on the partition's leader,\n"
          "as kafka-transactions.sh abort does; with --start-offset the producer is the\n"
          "one whose open transaction starts at that offset.\n",
          f);
}

struct txn_opts {
    const char *action;
    const char *topic;
    int32_t partition;
    int64_t start_offset, producer_id;
    int32_t producer_epoch, coordinator_epoch;
};

static int parse(int argc, char **argv, struct txn_opts *o, struct global_opts *g, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->partition = -1;
    o->start_offset = o->producer_id = -1;
    o->producer_epoch = o->coordinator_epoch = -1;
    if (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")))
        return ARGS_HELP;
    if (argc < 1 || (strcmp(argv[0], "describe-producers") && strcmp(argv[0], "abort"))) {
        snprintf(err, errlen, "expected 'describe-producers' or 'abort'");
        return ARGS_ERROR;
    }
    o->action = argv[0];
    struct opt_iter it;
    opt_iter_init(&it, argc - 1, argv + 1, txn_defs, err, errlen);
    int id;
    while ((id = opt_next(&it)) > 0) {
        if (global_opt_apply(g, id, it.arg))
            continue;
        bool ok = true;
        switch (id) {
        case OPT_HELP: return ARGS_HELP;
        case OPT_TOPIC: o->topic = it.arg; break;
        case OPT_PARTITION: ok = parse_i32(it.arg, 0, INT32_MAX, &o->partition); break;
        case OPT_START_OFFSET: ok = parse_i64(it.arg, 0, INT64_MAX, &o->start_offset); break;
        case OPT_PRODUCER_ID: ok = parse_i64(it.arg, 0, INT64_MAX, &o->producer_id); break;
        case OPT_PRODUCER_EPOCH: ok = parse_i32(it.arg, 0, INT16_MAX, &o->producer_epoch); break;
        case OPT_COORDINATOR_EPOCH: ok = parse_i32(it.arg, 0, INT32_MAX, &o->coordinator_epoch); break;
        default: snprintf(err, errlen, "option '--%s' is not valid here", it.name); return ARGS_ERROR;
        }
        if (!ok) {
            snprintf(err, errlen, "invalid --%s '%s'", it.name, it.arg);
            return ARGS_ERROR;
        }
    }
    if (id < 0)
        return ARGS_ERROR;
    if (!o->topic || o->partition < 0) {
        snprintf(err, errlen, "--topic and --partition are required");
        return ARGS_ERROR;
    }
    if (!strcmp(o->action, "abort")) {
        bool by_offset = o->start_offset >= 0;
        bool by_ids = o->producer_id >= 0 || o->producer_epoch >= 0 || o->coordinator_epoch >= 0;
        if (by_offset == by_ids || (by_ids && (o->producer_id < 0 || o->producer_epoch < 0 ||
                                               o->coordinator_epoch < 0))) {
            snprintf(err, errlen, "abort needs --start-offset, or all of --producer-id, --producer-epoch and "
                                  "--coordinator-epoch");
            return ARGS_ERROR;
        }
    }
    return ARGS_OK;
}

/* The connection to the partition's leader, from fresh metadata. */
static int leader_of(struct kc_client *c, const struct txn_opts *o, struct kc_conn **conn)
{
    const kc_topic_t *topic;
    int rc = kc_topic_metadata(c, o->topic, false, &topic);
    return rc ? rc : kc_leader_conn(c, o->topic, o->partition, conn);
}

/* DescribeProducers of the partition, asked of its leader. */
static int describe(struct kc_client *c, const struct txn_opts *o, struct kc_response *resp,
                    const describe_producers_response_partition_response_t **out)
{
    *out = NULL;
    struct kc_conn *conn;
    int rc = leader_of(c, o, &conn);
    if (rc)
        return rc;
    describe_producers_request_t q;
    describe_producers_request_init(&q);
    describe_producers_request_topic_request_t t;
    describe_producers_request_topic_request_init(&t);
    t.name = (kstr_t){o->topic, (int32_t)strlen(o->topic)};
    int32_t part = o->partition;
    t.partition_indexes.a = &part;
    t.partition_indexes.n = 1;
    q.topics.a = &t;
    q.topics.n = 1;
    rc = kc_call(c, conn, KAPI_DESCRIBE_PRODUCERS, &q, resp);
    if (rc)
        return rc;
    const describe_producers_response_t *m = resp->msg;
    if (m->topics.n != 1 || m->topics.a[0].partitions.n != 1)
        return kc_fail(c, KERR_UNKNOWN_SERVER_ERROR, "DescribeProducers answered for another partition");
    const describe_producers_response_partition_response_t *p = &m->topics.a[0].partitions.a[0];
    if (p->error_code)
        return kc_fail(c, p->error_code, "%.*s", p->error_message.len > 0 ? (int)p->error_message.len : 0,
                       p->error_message.len > 0 ? p->error_message.p : "");
    *out = p;
    return 0;
}

static int do_describe(struct kc_client *c, const struct txn_opts *o)
{
    struct kc_response resp = {0};
    const describe_producers_response_partition_response_t *p;
    int rc = describe(c, o, &resp, &p);
    if (rc == 0) {
        printf("%-20s %-14s %-23s %-13s %-20s %s\n", "ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch",
               "LastSequence", "LastTimestamp", "CurrentTransactionStartOffset");
        for (int32_t i = 0; i < p->active_producers.n; i++) {
            const describe_producers_response_producer_state_t *s = &p->active_producers.a[i];
            char start[32] = "None";
            if (s->current_txn_start_offset >= 0)
                snprintf(start, sizeof start, "%" PRId64, s->current_txn_start_offset);
            printf("%-20" PRId64 " %-14d %-23d %-13d %-20" PRId64 " %s\n", s->producer_id, (int)s->producer_epoch,
                   (int)s->coordinator_epoch, (int)s->last_sequence, s->last_timestamp, start);
        }
    }
    kc_response_free(&resp);
    return rc;
}

static int do_abort(struct kc_client *c, struct txn_opts *o)
{
    int rc = 0;
    if (o->start_offset >= 0) {
        struct kc_response resp = {0};
        const describe_producers_response_partition_response_t *p;
        rc = describe(c, o, &resp, &p);
        bool found = false;
        for (int32_t i = 0; rc == 0 && i < p->active_producers.n; i++) {
            const describe_producers_response_producer_state_t *s = &p->active_producers.a[i];
            if (s->current_txn_start_offset == o->start_offset) {
                o->producer_id = s->producer_id;
                o->producer_epoch = s->producer_epoch;
                /* As Kafka's admin client: an epoch the partition never
                 * saw (-1) is sent as 0. */
                o->coordinator_epoch = s->coordinator_epoch < 0 ? 0 : s->coordinator_epoch;
                found = true;
            }
        }
        kc_response_free(&resp);
        if (rc)
            return rc;
        if (!found)
            return kc_fail(c, KERR_INVALID_REQUEST, "no open transaction starts at offset %" PRId64 " of %s-%d",
                           o->start_offset, o->topic, (int)o->partition);
    }
    struct kc_conn *conn;
    rc = leader_of(c, o, &conn);
    if (rc)
        return rc;
    write_txn_markers_request_t q;
    write_txn_markers_request_init(&q);
    write_txn_markers_request_writable_txn_marker_t mk;
    write_txn_markers_request_writable_txn_marker_init(&mk);
    write_txn_markers_request_writable_txn_marker_topic_t t;
    write_txn_markers_request_writable_txn_marker_topic_init(&t);
    t.name = (kstr_t){o->topic, (int32_t)strlen(o->topic)};
    int32_t part = o->partition;
    t.partition_indexes.a = &part;
    t.partition_indexes.n = 1;
    mk.producer_id = o->producer_id;
    mk.producer_epoch = (int16_t)o->producer_epoch;
    mk.transaction_result = false; /* ABORT */
    mk.coordinator_epoch = o->coordinator_epoch;
    mk.topics.a = &t;
    mk.topics.n = 1;
    q.markers.a = &mk;
    q.markers.n = 1;
    struct kc_response resp = {0};
    rc = kc_call(c, conn, KAPI_WRITE_TXN_MARKERS, &q, &resp);
    if (rc == 0) {
        const write_txn_markers_response_t *m = resp.msg;
        int16_t err = KERR_UNKNOWN_SERVER_ERROR;
        if (m->markers.n == 1 && m->markers.a[0].topics.n == 1 && m->markers.a[0].topics.a[0].partitions.n == 1)
            err = m->markers.a[0].topics.a[0].partitions.a[0].error_code;
        if (err)
            rc = kc_fail(c, err, "aborting the transaction of producer %" PRId64 " on %s-%d", o->producer_id,
                         o->topic, (int)o->partition);
        else
            printf("Aborted the transaction of producer %" PRId64 " (epoch %d, coordinator epoch %d) on %s-%d\n",
                   o->producer_id, (int)o->producer_epoch, (int)o->coordinator_epoch, o->topic, (int)o->partition);
    }
    kc_response_free(&resp);
    return rc;
}

int cmd_transactions(int argc, char **argv, const struct global_opts *g0)
{
    struct global_opts g = *g0;
    struct txn_opts o;
    char err[512];
    int a = parse(argc, argv, &o, &g, err, sizeof err);
    if (a == ARGS_HELP) {
        txn_usage(stdout);
        return EXIT_OK;
    }
    if (a == ARGS_ERROR) {
        fprintf(stderr, "samsactl transactions: %s (see samsactl transactions --help)\n", err);
        return EXIT_USAGE;
    }
    struct kc_client c;
    if (kc_client_init(&c, global_bootstrap(&g), err, sizeof err) < 0) {
        fprintf(stderr, "samsactl transactions: %s\n", err);
        return EXIT_USAGE;
    }
    kc_catch_signals();
    int rc = !strcmp(o.action, "describe-producers") ? do_describe(&c, &o) : do_abort(&c, &o);
    fflush(stdout);
    int status = rc ? kc_report(&c) : EXIT_OK;
    kc_client_free(&c);
    return status;
}
