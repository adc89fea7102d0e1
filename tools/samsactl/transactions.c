/* samsactl transactions list|describe|describe-producers|abort: see
 * transactions.h.
 *
 *   samsactl transactions list [--duration-filter MS]
 *   samsactl transactions describe ID | --transactional-id ID
 *   samsactl transactions describe-producers --topic T --partition P
 *   samsactl transactions abort --topic T --partition P --start-offset O
 *   samsactl transactions abort --topic T --partition P --producer-id ID
 *            --producer-epoch E --coordinator-epoch C
 *
 * Tables as kafka-transactions.sh prints them. list asks every broker
 * (ListTransactions; each answers for the __transaction_state partitions
 * it leads) and merges the answers: TransactionalId, Coordinator,
 * ProducerId, TransactionState. describe asks the id's coordinator
 * (FindCoordinator key type 1, then DescribeTransactions): CoordinatorId,
 * TransactionalId, ProducerId, ProducerEpoch, TransactionState,
 * TransactionTimeoutMs, CurrentTransactionStartTimeMs,
 * TransactionDurationMs, TopicPartitions. describe-producers prints the
 * partition leader's producers (ProducerId, ProducerEpoch,
 * LatestCoordinatorEpoch, LastSequence, LastTimestamp,
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
#include "coordinator.h"
#include "proto/gen/describe_producers_request.h"
#include "proto/gen/describe_producers_response.h"
#include "proto/gen/describe_transactions_request.h"
#include "proto/gen/describe_transactions_response.h"
#include "proto/gen/list_transactions_request.h"
#include "proto/gen/list_transactions_response.h"
#include "proto/gen/write_txn_markers_request.h"
#include "proto/gen/write_txn_markers_response.h"
#include "proto/kerr.h"
#include "table.h"
#include "util/buf.h"
#include "util/clock.h"

enum {
    OPT_TOPIC = 1,
    OPT_PARTITION,
    OPT_START_OFFSET,
    OPT_PRODUCER_ID,
    OPT_PRODUCER_EPOCH,
    OPT_COORDINATOR_EPOCH,
    OPT_TRANSACTIONAL_ID,
    OPT_DURATION_FILTER,
};

static const struct opt_def txn_defs[] = {
    {"topic", true, OPT_TOPIC},
    {"partition", true, OPT_PARTITION},
    {"start-offset", true, OPT_START_OFFSET},
    {"producer-id", true, OPT_PRODUCER_ID},
    {"producer-epoch", true, OPT_PRODUCER_EPOCH},
    {"coordinator-epoch", true, OPT_COORDINATOR_EPOCH},
    {"transactional-id", true, OPT_TRANSACTIONAL_ID},
    {"duration-filter", true, OPT_DURATION_FILTER},
    {NULL, false, 0},
};

static void txn_usage(FILE *f)
{
    fputs("Usage: samsactl transactions list [--duration-filter MS]\n"
          "       samsactl transactions describe ID | --transactional-id ID\n"
          "       samsactl transactions describe-producers --topic T --partition P\n"
          "       samsactl transactions abort --topic T --partition P --start-offset O\n"
          "       samsactl transactions abort --topic T --partition P --producer-id ID\n"
          "                                   --producer-epoch E --coordinator-epoch C\n"
          "\n"
          "list prints the transactional ids every broker coordinates (TransactionalId,\n"
          "Coordinator, ProducerId, TransactionState); --duration-filter keeps those\n"
          "whose transaction has run longer than MS milliseconds. describe prints one\n"
          "id's state from its coordinator: producer id and epoch, state, timeout, the\n"
          "start and duration of its transaction and the partitions in it.\n"
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
    const char *transactional_id;
    int64_t duration_filter; /* -1: none */
};

/* The options each action takes (bit i: option id i). */
static unsigned action_options(const char *action)
{
    if (!strcmp(action, "list"))
        return 1u << OPT_DURATION_FILTER;
    if (!strcmp(action, "describe"))
        return 1u << OPT_TRANSACTIONAL_ID;
    if (!strcmp(action, "describe-producers"))
        return 1u << OPT_TOPIC | 1u << OPT_PARTITION;
    return 1u << OPT_TOPIC | 1u << OPT_PARTITION | 1u << OPT_START_OFFSET | 1u << OPT_PRODUCER_ID |
           1u << OPT_PRODUCER_EPOCH | 1u << OPT_COORDINATOR_EPOCH;
}

static int parse(int argc, char **argv, struct txn_opts *o, struct global_opts *g, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->partition = -1;
    o->start_offset = o->producer_id = -1;
    o->producer_epoch = o->coordinator_epoch = -1;
    o->duration_filter = -1;
    if (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")))
        return ARGS_HELP;
    if (argc < 1 || (strcmp(argv[0], "list") && strcmp(argv[0], "describe") &&
                     strcmp(argv[0], "describe-producers") && strcmp(argv[0], "abort"))) {
        snprintf(err, errlen, "expected 'list', 'describe', 'describe-producers' or 'abort'");
        return ARGS_ERROR;
    }
    o->action = argv[0];
    int first = 1;
    /* describe ID: the id may come first, as a word */
    if (!strcmp(o->action, "describe") && argc >= 2 && strncmp(argv[1], "-", 1) != 0) {
        o->transactional_id = argv[1];
        first = 2;
    }
    unsigned allowed = action_options(o->action);
    struct opt_iter it;
    opt_iter_init(&it, argc - first, argv + first, txn_defs, err, errlen);
    int id;
    while ((id = opt_next(&it)) > 0) {
        if (global_opt_apply(g, id, it.arg))
            continue;
        if (id == OPT_HELP)
            return ARGS_HELP;
        if (id >= OPT_GLOBAL_BASE || !(allowed & (1u << id))) {
            snprintf(err, errlen, "option '--%s' is not valid for %s", it.name, o->action);
            return ARGS_ERROR;
        }
        bool ok = true;
        switch (id) {
        case OPT_TOPIC: o->topic = it.arg; break;
        case OPT_PARTITION: ok = parse_i32(it.arg, 0, INT32_MAX, &o->partition); break;
        case OPT_START_OFFSET: ok = parse_i64(it.arg, 0, INT64_MAX, &o->start_offset); break;
        case OPT_PRODUCER_ID: ok = parse_i64(it.arg, 0, INT64_MAX, &o->producer_id); break;
        case OPT_PRODUCER_EPOCH: ok = parse_i32(it.arg, 0, INT16_MAX, &o->producer_epoch); break;
        case OPT_COORDINATOR_EPOCH: ok = parse_i32(it.arg, 0, INT32_MAX, &o->coordinator_epoch); break;
        case OPT_TRANSACTIONAL_ID:
            if (o->transactional_id) {
                snprintf(err, errlen, "the transactional id is given twice");
                return ARGS_ERROR;
            }
            o->transactional_id = it.arg;
            ok = it.arg[0] != '\0';
            break;
        case OPT_DURATION_FILTER: ok = parse_i64(it.arg, 0, INT64_MAX, &o->duration_filter); break;
        default: snprintf(err, errlen, "option '--%s' is not valid here", it.name); return ARGS_ERROR;
        }
        if (!ok) {
            snprintf(err, errlen, "invalid --%s '%s'", it.name, it.arg);
            return ARGS_ERROR;
        }
    }
    if (id < 0)
        return ARGS_ERROR;
    if (!strcmp(o->action, "list"))
        return ARGS_OK;
    if (!strcmp(o->action, "describe")) {
        if (!o->transactional_id) {
            snprintf(err, errlen, "describe needs a transactional id (describe ID or --transactional-id ID)");
            return ARGS_ERROR;
        }
        return ARGS_OK;
    }
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

static const char *num(struct arena *a, int64_t v)
{
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%" PRId64, v);
    return arena_strndup(a, tmp, (size_t)n);
}

/* ---- list ---- */

struct listed {
    const char *id, *state;
    int32_t coordinator;
    int64_t producer_id;
};

static int cmp_listed(const void *a, const void *b)
{
    const struct listed *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    return c ? c : (x->coordinator > y->coordinator) - (x->coordinator < y->coordinator);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* ListTransactions on one broker, retried while its coordinator loads
 * (as the admin client does; any other error fails the listing). The
 * rows are appended to *v (strings in arena a). */
static int list_broker(struct kc_client *c, int32_t node, const struct txn_opts *o, struct arena *a,
                       struct listed **v, int *n, int *cap)
{
    int64_t deadline = clock_mono_ms() + c->timeout_ms;
    for (int backoff = 50;; backoff = coordinator_next_backoff(backoff)) {
        struct kc_conn *conn;
        int rc = kc_node_conn(c, node, &conn);
        if (rc)
            return rc;
        if (o->duration_filter >= 0 && kc_version(conn, KAPI_LIST_TRANSACTIONS) < 1)
            return kc_fail(c, KERR_UNSUPPORTED_VERSION,
                           "broker %d does not support ListTransactions v1 (--duration-filter)", node);
        list_transactions_request_t req;
        list_transactions_request_init(&req);
        req.duration_filter = o->duration_filter;
        struct kc_response r;
        rc = kc_call(c, conn, KAPI_LIST_TRANSACTIONS, &req, &r);
        if (rc)
            return rc;
        const list_transactions_response_t *m = r.msg;
        int e = m->error_code;
        if (e == 0) {
            for (int32_t i = 0; i < m->transaction_states.n; i++) {
                const list_transactions_response_transaction_state_t *s = &m->transaction_states.a[i];
                if (*n == *cap) {
                    *cap = *cap ? *cap * 2 : 16;
                    *v = xrealloc(*v, (size_t)*cap * sizeof **v);
                }
                (*v)[(*n)++] = (struct listed){kstr_dup(a, s->transactional_id), kstr_dup(a, s->transaction_state),
                                               node, s->producer_id};
            }
            kc_response_free(&r);
            return 0;
        }
        kc_response_free(&r);
        rc = kc_fail(c, e, "Failed to list transactions: ListTransactions on broker %d: %s", node,
                     kc_default_message(e));
        if (e != KERR_COORDINATOR_LOAD_IN_PROGRESS || clock_mono_ms() >= deadline)
            return rc;
        if (!kc_sleep_ms(backoff))
            return kc_fail(c, KC_INTERRUPTED, "interrupted");
    }
}

static int do_list(struct kc_client *c, const struct txn_opts *o)
{
    int rc = kc_metadata(c, NULL, 0, false);
    if (rc)
        return rc;
    const metadata_response_t *m = kc_meta(c);
    int32_t nb = m->brokers.n > 0 ? m->brokers.n : 0;
    int32_t *ids = xcalloc((size_t)nb + 1, sizeof *ids);
    for (int32_t i = 0; i < nb; i++)
        ids[i] = m->brokers.a[i].node_id;
    qsort(ids, (size_t)nb, sizeof *ids, cmp_i32);
    struct arena a = ARENA_INIT;
    struct listed *v = NULL;
    int n = 0, cap = 0;
    for (int32_t i = 0; i < nb && rc == 0; i++)
        rc = list_broker(c, ids[i], o, &a, &v, &n, &cap);
    if (rc == 0) {
        /* each coordinator's ids, merged; an id moving between
         * coordinators is shown by both, as Kafka's tool shows it */
        if (n > 1) /* v is NULL when nothing is listed */
            qsort(v, (size_t)n, sizeof *v, cmp_listed);
        static const char *const hdr[] = {"TransactionalId", "Coordinator", "ProducerId", "TransactionState"};
        struct table t;
        table_init(&t, 4, hdr);
        for (int i = 0; i < n; i++) {
            const char *row[] = {v[i].id, num(&a, v[i].coordinator), num(&a, v[i].producer_id), v[i].state};
            table_row(&t, row);
        }
        table_print(&t);
        table_free(&t);
    }
    free(v);
    free(ids);
    arena_free(&a);
    return rc;
}

/* ---- describe ---- */

static int describe_txn_error(const struct kc_response *r)
{
    const describe_transactions_response_t *m = r->msg;
    return m->transaction_states.n > 0 ? m->transaction_states.a[0].error_code : 0;
}

static int do_describe_txn(struct kc_client *c, const struct txn_opts *o)
{
    struct coordinator co = {o->transactional_id, COORD_KEY_TRANSACTION, -1, ""};
    describe_transactions_request_t q;
    describe_transactions_request_init(&q);
    kstr_t id = KSTR(o->transactional_id);
    q.transactional_ids.a = &id;
    q.transactional_ids.n = 1;
    struct kc_response r;
    int rc = coordinator_call(c, &co, KAPI_DESCRIBE_TRANSACTIONS, &q, &r, describe_txn_error);
    if (rc)
        return rc;
    const describe_transactions_response_t *m = r.msg;
    const describe_transactions_response_transaction_state_t *s = NULL;
    for (int32_t i = 0; i < m->transaction_states.n; i++)
        if (kstr_eqc(m->transaction_states.a[i].transactional_id, o->transactional_id))
            s = &m->transaction_states.a[i];
    if (!s)
        rc = kc_fail(c, KERR_UNKNOWN_SERVER_ERROR, "DescribeTransactions answer does not mention '%s'",
                     o->transactional_id);
    else if (s->error_code)
        rc = kc_fail(c, s->error_code, "Failed to describe transaction state of transactional-id `%s`: %s",
                     o->transactional_id, kc_default_message(s->error_code));
    if (rc == 0) {
        struct arena a = ARENA_INIT;
        /* TopicPartitions: "topic-partition" joined by commas, as Java's
         * TopicPartition prints */
        struct buf tps;
        buf_init(&tps);
        for (int32_t t = 0; t < s->topics.n; t++) {
            const describe_transactions_response_topic_data_t *td = &s->topics.a[t];
            for (int32_t p = 0; p < td->partitions.n; p++) {
                char tmp[32];
                int len = snprintf(tmp, sizeof tmp, "-%d", (int)td->partitions.a[p]);
                if (tps.len)
                    buf_append(&tps, ",", 1);
                buf_append(&tps, td->topic.p, (size_t)(td->topic.len > 0 ? td->topic.len : 0));
                buf_append(&tps, tmp, (size_t)len);
            }
        }
        const char *start = "None", *duration = "None";
        if (s->transaction_start_time_ms >= 0) {
            start = num(&a, s->transaction_start_time_ms);
            duration = num(&a, clock_wall_ms() - s->transaction_start_time_ms);
        }
        static const char *const hdr[] = {"CoordinatorId",
                                          "TransactionalId",
                                          "ProducerId",
                                          "ProducerEpoch",
                                          "TransactionState",
                                          "TransactionTimeoutMs",
                                          "CurrentTransactionStartTimeMs",
                                          "TransactionDurationMs",
                                          "TopicPartitions"};
        const char *row[] = {num(&a, co.node),
                             o->transactional_id,
                             num(&a, s->producer_id),
                             num(&a, s->producer_epoch),
                             kstr_dup(&a, s->transaction_state),
                             num(&a, s->transaction_timeout_ms),
                             start,
                             duration,
                             arena_strndup(&a, tps.len ? (const char *)tps.data : "", tps.len)};
        struct table t;
        table_init(&t, 9, hdr);
        table_row(&t, row);
        table_print(&t);
        table_free(&t);
        buf_free(&tps);
        arena_free(&a);
    }
    kc_response_free(&r);
    return rc;
}

/* ---- describe-producers, abort ---- */

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

static int parse_any(int argc, char **argv, void *o, struct global_opts *g, char *err, size_t n)
{
    return parse(argc, argv, o, g, err, n);
}
static int run_any(struct kc_client *c, void *v)
{
    struct txn_opts *o = v;
    if (!strcmp(o->action, "list"))
        return do_list(c, o);
    if (!strcmp(o->action, "describe"))
        return do_describe_txn(c, o);
    if (!strcmp(o->action, "describe-producers"))
        return do_describe(c, o);
    return do_abort(c, o);
}

int cmd_transactions(int argc, char **argv, const struct global_opts *g)
{
    static const struct kc_command cmd = {"transactions", txn_usage, parse_any, run_any, NULL};
    struct txn_opts o;
    return kc_command_main(&cmd, &o, argc, argv, g);
}
