/* The client's side of transactions (transactions V1): InitProducerId
 * with a transactional id, AddPartitionsToTxn (v0-3, the client's
 * versions), AddOffsetsToTxn and EndTxn, as Kafka's KafkaApis checks
 * them, answered by the transaction coordinator (coord/txn_coord.h).
 *
 * A request whose transition was written parks until the ISR has it
 * (the coordinator applies it then), on the __transaction_state
 * partition's key, bounded by the write's deadline; InitProducerId for a
 * new id first parks for a producer id when this broker's block is
 * empty, as the idempotent path does. */
#include <string.h>

#include "api/handlers.h"
#include "api/request.h"
#include "auth/authz.h"
#include "broker.h"
#include "controller/controller.h"
#include "coord/coord.h"
#include "coord/records.h"
#include "coord/txn_coord.h"
#include "net/park.h"
#include "proto/gen/add_offsets_to_txn_request.h"
#include "proto/gen/add_offsets_to_txn_response.h"
#include "proto/gen/add_partitions_to_txn_request.h"
#include "proto/gen/add_partitions_to_txn_response.h"
#include "proto/gen/end_txn_request.h"
#include "proto/gen/end_txn_response.h"
#include "proto/gen/init_producer_id_request.h"
#include "proto/gen/init_producer_id_response.h"
#include "proto/gen/kapi.h"
#include "proto/kerr.h"
#include "util/clock.h"

/* How long InitProducerId waits for a producer id block (as
 * api/init_producer_id.c). */
#define ID_WAIT_MS 5000

/* A transaction request on its way to an answer. */
struct txop {
    struct parked pk; /* first */
    struct request *req;
    struct txn_ack ack;
    enum { OP_ACK, OP_PID, OP_ANSWERED } stage; /* OP_PID: InitProducerId waits for a producer id */
    /* the answer, given once the ack is ready: err replaces it */
    void (*finish)(struct txop *op, int16_t err);
    int64_t pid;
    int16_t epoch;
    int16_t then_err;
    add_partitions_to_txn_response_t *add_resp; /* AddPartitionsToTxn's answer (arena) */
};

static int16_t by_version(const struct request *req, int16_t err)
{
    return txn_error_for_version(err, req->api_key, req->api_version);
}

static void watch_ack(struct txop *op)
{
    struct partition *p = txn_ack_partition(&op->ack);
    if (p) {
        park_watch(&op->pk, partition_park_key(p));
        partition_put(p);
    }
    if (op->ack.offset >= 0)
        park_set_timeout(&op->pk, op->ack.deadline - clock_mono_ms());
}

/* InitProducerId waiting for a producer id: true once it has one (then
 * answered, or waiting for its ack). */
static bool init_pid_step(struct txop *op);

static bool txop_try(struct parked *pk, bool expired)
{
    struct txop *op = (struct txop *)pk;
    if (op->stage == OP_PID) {
        if (!init_pid_step(op)) {
            if (!expired)
                return false;
            op->req->cancel = NULL;
            op->finish(op, KERR_COORDINATOR_LOAD_IN_PROGRESS);
            return true;
        }
        if (op->stage == OP_ANSWERED) {
            op->req->cancel = NULL;
            return true;
        }
        watch_ack(op);
    }
    int16_t err = 0;
    enum ack_state st = txn_ack_check(&op->ack, &err);
    if (st == ACK_WAIT) {
        if (!expired)
            return false;
        err = KERR_COORDINATOR_NOT_AVAILABLE;
    }
    op->req->cancel = NULL;
    op->finish(op, err);
    return true;
}

static void txop_cancel(struct request *req)
{
    struct txop *op = req->handler_state;
    park_stop(&op->pk);
}

static struct txop *txop_new(struct request *req, void (*finish)(struct txop *, int16_t))
{
    struct txop *op = arena_alloc(&req->arena, sizeof *op);
    memset(op, 0, sizeof *op);
    op->req = req;
    op->finish = finish;
    txn_ack_init(&op->ack);
    return op;
}

/* Answers now when the ack is ready, else parks. */
static void txop_run(struct txop *op)
{
    struct request *req = op->req;
    int16_t err = 0;
    if (op->stage == OP_ACK && txn_ack_check(&op->ack, &err) != ACK_WAIT) {
        op->finish(op, err);
        return;
    }
    req->handler_state = op;
    req->cancel = txop_cancel;
    park_init(&op->pk, req, txop_try);
    if (op->stage == OP_PID) {
        park_watch(&op->pk, park_key_object(controller_producer_ids_waitable(req->broker->controller)));
        park_start(&op->pk, ID_WAIT_MS);
        return;
    }
    watch_ack(op);
    park_start(&op->pk, op->ack.deadline - clock_mono_ms());
}

/* ------------------------------------------------------------------ */
/* InitProducerId                                                      */

static void init_finish(struct txop *op, int16_t err)
{
    init_producer_id_response_t resp;
    init_producer_id_response_init(&resp);
    if (!err)
        err = op->then_err;
    resp.error_code = by_version(op->req, err);
    resp.producer_id = err ? TXN_NO_PRODUCER_ID : op->pid;
    resp.producer_epoch = err ? TXN_NO_PRODUCER_EPOCH : op->epoch;
    req_respond(op->req, &resp);
}

/* One call of the coordinator with new_pid (-1: none yet); sets
 * op->stage: OP_PID when it wants a fresh producer id, OP_ANSWERED
 * when it refused (answered), OP_ACK when the answer waits for op->ack. */
static void init_call(struct txop *op, int64_t new_pid)
{
    const init_producer_id_request_t *q = op->req->body;
    bool need = false;
    int16_t err = txn_coord_init_pid(op->req->broker->txn_coord, q->transactional_id, q->transaction_timeout_ms,
                                     q->producer_id, q->producer_epoch, new_pid, &need, &op->pid, &op->epoch,
                                     &op->then_err, &op->ack);
    if (err) {
        init_finish(op, err);
        op->stage = OP_ANSWERED;
    } else {
        op->stage = need ? OP_PID : OP_ACK;
    }
}

static bool init_pid_step(struct txop *op)
{
    int64_t id;
    while (op->stage == OP_PID) {
        if (controller_next_producer_id(op->req->broker->controller, &id) != 0)
            return false;
        /* a fresh id is spent even if, meanwhile, another request made
         * the transactional id known; ids are plentiful */
        init_call(op, id);
    }
    return true;
}

void api_txn_init_producer_id(struct request *req)
{
    struct txop *op = txop_new(req, init_finish);
    init_call(op, -1);
    if (op->stage == OP_PID)
        init_pid_step(op);
    if (op->stage != OP_ANSWERED)
        txop_run(op);
}

/* ------------------------------------------------------------------ */
/* AddPartitionsToTxn                                                  */

static void add_parts_set_all(add_partitions_to_txn_response_t *resp, int16_t err)
{
    for (int32_t i = 0; i < resp->results_by_topic_v3_and_below.n; i++) {
        add_partitions_to_txn_response_add_partitions_to_txn_topic_result_t *t =
            &resp->results_by_topic_v3_and_below.a[i];
        for (int32_t j = 0; j < t->results_by_partition.n; j++)
            t->results_by_partition.a[j].partition_error_code = err;
    }
}

static void add_parts_finish(struct txop *op, int16_t err)
{
    add_parts_set_all(op->add_resp, by_version(op->req, err));
    req_respond(op->req, op->add_resp);
}

/* v4+: brokers' batches (KIP-890). VerifyOnly transactions are checked
 * at once; others are added as a client's would be, and the answer waits
 * for all their writes. */
struct add_batch {
    struct parked pk; /* first */
    struct request *req;
    add_partitions_to_txn_response_t resp;
    struct txn_ack *acks; /* one per transaction (offset -1: none) */
    int32_t n;
};

static void add_batch_set(add_partitions_to_txn_response_add_partitions_to_txn_result_t *tr, int16_t err,
                          bool only_ok)
{
    for (int32_t j = 0; j < tr->topic_results.n; j++)
        for (int32_t k = 0; k < tr->topic_results.a[j].results_by_partition.n; k++) {
            int16_t *e = &tr->topic_results.a[j].results_by_partition.a[k].partition_error_code;
            if (!only_ok || !*e)
                *e = err;
        }
}

static bool add_batch_try(struct parked *pk, bool expired)
{
    struct add_batch *ab = (struct add_batch *)pk;
    bool waiting = false;
    for (int32_t i = 0; i < ab->n; i++) {
        if (ab->acks[i].offset < 0)
            continue; /* answered (or nothing written) */
        int16_t err = 0;
        enum ack_state st = txn_ack_check(&ab->acks[i], &err);
        if (st == ACK_WAIT && !expired) {
            waiting = true;
            continue;
        }
        if (st == ACK_WAIT)
            err = KERR_COORDINATOR_NOT_AVAILABLE;
        if (err)
            add_batch_set(&ab->resp.results_by_transaction.a[i], err, true);
        ab->acks[i].offset = -1; /* its outcome is in the answer */
    }
    if (waiting)
        return false;
    ab->req->cancel = NULL;
    req_respond(ab->req, &ab->resp);
    return true;
}

static void add_batch_cancel(struct request *req)
{
    struct add_batch *ab = req->handler_state;
    park_stop(&ab->pk);
}

static void add_partitions_batch(struct request *req)
{
    const add_partitions_to_txn_request_t *q = req->body;
    struct arena *ar = &req->arena;
    struct add_batch *ab = arena_alloc(ar, sizeof *ab);
    memset(ab, 0, sizeof *ab);
    ab->req = req;
    add_partitions_to_txn_response_t *resp = &ab->resp;
    add_partitions_to_txn_response_init(resp);
    /* Kafka: brokers only (CLUSTER_ACTION), the whole request refused */
    if (!authz_allowed(req, ACL_OP_CLUSTER_ACTION, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME)) {
        resp->error_code = KERR_CLUSTER_AUTHORIZATION_FAILED;
        req_respond(req, resp);
        return;
    }
    int32_t nt = q->transactions.n > 0 ? q->transactions.n : 0;
    resp->results_by_transaction.a = add_partitions_to_txn_response_add_partitions_to_txn_result_new_array(ar, nt);
    resp->results_by_transaction.n = nt;
    ab->acks = arena_alloc(ar, (size_t)(nt ? nt : 1) * sizeof *ab->acks);
    ab->n = nt;
    bool waiting = false;
    for (int32_t i = 0; i < nt; i++) {
        const add_partitions_to_txn_request_add_partitions_to_txn_transaction_t *tx = &q->transactions.a[i];
        add_partitions_to_txn_response_add_partitions_to_txn_result_t *tr = &resp->results_by_transaction.a[i];
        txn_ack_init(&ab->acks[i]);
        tr->transactional_id = tx->transactional_id;
        int32_t ntop = tx->topics.n > 0 ? tx->topics.n : 0, total = 0;
        tr->topic_results.a = add_partitions_to_txn_response_add_partitions_to_txn_topic_result_new_array(ar, ntop);
        tr->topic_results.n = ntop;
        for (int32_t j = 0; j < ntop; j++)
            total += tx->topics.a[j].partitions.n > 0 ? tx->topics.a[j].partitions.n : 0;
        kstr_t *topics = arena_alloc(ar, (size_t)(total ? total : 1) * sizeof *topics);
        int32_t *parts = arena_alloc(ar, (size_t)(total ? total : 1) * sizeof *parts);
        int16_t *errs = arena_alloc(ar, (size_t)(total ? total : 1) * sizeof *errs);
        int32_t n = 0;
        for (int32_t j = 0; j < ntop; j++) {
            const add_partitions_to_txn_request_add_partitions_to_txn_topic_t *t = &tx->topics.a[j];
            int32_t np = t->partitions.n > 0 ? t->partitions.n : 0;
            tr->topic_results.a[j].name = t->name;
            tr->topic_results.a[j].results_by_partition.a =
                add_partitions_to_txn_response_add_partitions_to_txn_partition_result_new_array(ar, np);
            tr->topic_results.a[j].results_by_partition.n = np;
            for (int32_t k = 0; k < np; k++) {
                tr->topic_results.a[j].results_by_partition.a[k].partition_index = t->partitions.a[k];
                topics[n] = t->name;
                parts[n] = t->partitions.a[k];
                n++;
            }
        }
        if (tx->verify_only) {
            txn_coord_verify(req->broker->txn_coord, tx->transactional_id, tx->producer_id, tx->producer_epoch, n,
                             topics, parts, errs);
            int32_t at = 0;
            for (int32_t j = 0; j < ntop; j++)
                for (int32_t k = 0; k < tr->topic_results.a[j].results_by_partition.n; k++)
                    tr->topic_results.a[j].results_by_partition.a[k].partition_error_code = errs[at++];
            continue;
        }
        int16_t err = txn_coord_add_partitions(req->broker->txn_coord, tx->transactional_id, tx->producer_id,
                                               tx->producer_epoch, n, topics, parts, &ab->acks[i]);
        if (err)
            add_batch_set(tr, err, false);
        else if (ab->acks[i].offset >= 0)
            waiting = true;
    }
    if (!waiting) {
        req_respond(req, resp);
        return;
    }
    req->handler_state = ab;
    req->cancel = add_batch_cancel;
    park_init(&ab->pk, req, add_batch_try);
    int64_t deadline = INT64_MAX;
    for (int32_t i = 0; i < nt; i++) {
        struct partition *p = txn_ack_partition(&ab->acks[i]);
        if (p) {
            park_watch(&ab->pk, partition_park_key(p));
            partition_put(p);
        }
        if (ab->acks[i].offset >= 0 && ab->acks[i].deadline < deadline)
            deadline = ab->acks[i].deadline;
    }
    park_start(&ab->pk, deadline == INT64_MAX ? 0 : deadline - clock_mono_ms());
}

void api_handle_add_partitions_to_txn(struct request *req)
{
    const add_partitions_to_txn_request_t *q = req->body;
    if (req->api_version >= 4) {
        add_partitions_batch(req);
        return;
    }
    struct arena *ar = &req->arena;
    struct txop *op = txop_new(req, add_parts_finish);
    add_partitions_to_txn_response_t *resp = arena_alloc(ar, sizeof *resp);
    add_partitions_to_txn_response_init(resp);
    op->add_resp = resp;
    int32_t nt = q->v3_and_below_topics.n > 0 ? q->v3_and_below_topics.n : 0;
    resp->results_by_topic_v3_and_below.a =
        add_partitions_to_txn_response_add_partitions_to_txn_topic_result_new_array(ar, nt);
    resp->results_by_topic_v3_and_below.n = nt;
    int32_t total = 0;
    for (int32_t i = 0; i < nt; i++) {
        const add_partitions_to_txn_request_add_partitions_to_txn_topic_t *t = &q->v3_and_below_topics.a[i];
        add_partitions_to_txn_response_add_partitions_to_txn_topic_result_t *rt =
            &resp->results_by_topic_v3_and_below.a[i];
        int32_t np = t->partitions.n > 0 ? t->partitions.n : 0;
        rt->name = t->name;
        rt->results_by_partition.a =
            add_partitions_to_txn_response_add_partitions_to_txn_partition_result_new_array(ar, np);
        rt->results_by_partition.n = np;
        for (int32_t j = 0; j < np; j++)
            rt->results_by_partition.a[j].partition_index = t->partitions.a[j];
        total += np;
    }
    kstr_t id = q->v3_and_below_transactional_id;
    if (!authz_allowed(req, ACL_OP_WRITE, ACL_RES_TRANSACTIONAL_ID, id)) {
        add_parts_finish(op, KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
        return;
    }
    /* KafkaApis: unauthorized topics and unknown partitions fail, and
     * then every other partition is OPERATION_NOT_ATTEMPTED. */
    kstr_t *topics = arena_alloc(ar, (size_t)(total ? total : 1) * sizeof *topics);
    int32_t *parts = arena_alloc(ar, (size_t)(total ? total : 1) * sizeof *parts);
    int32_t n = 0;
    bool failed = false;
    struct mimage *img = controller_image(req->broker->controller);
    for (int32_t i = 0; i < nt; i++) {
        add_partitions_to_txn_response_add_partitions_to_txn_topic_result_t *rt =
            &resp->results_by_topic_v3_and_below.a[i];
        bool allowed = authz_allowed(req, ACL_OP_WRITE, ACL_RES_TOPIC, rt->name);
        const struct mi_topic *t = allowed ? mimage_topic(img, rt->name) : NULL;
        for (int32_t j = 0; j < rt->results_by_partition.n; j++) {
            int32_t p = rt->results_by_partition.a[j].partition_index;
            int16_t e = 0;
            if (!allowed)
                e = KERR_TOPIC_AUTHORIZATION_FAILED;
            else if (!t || !mi_topic_partition(t, p))
                e = KERR_UNKNOWN_TOPIC_OR_PARTITION;
            rt->results_by_partition.a[j].partition_error_code = e;
            if (e) {
                failed = true;
            } else {
                topics[n] = rt->name;
                parts[n] = p;
                n++;
            }
        }
    }
    mimage_release(img);
    if (failed) {
        for (int32_t i = 0; i < nt; i++) {
            add_partitions_to_txn_response_add_partitions_to_txn_topic_result_t *rt =
                &resp->results_by_topic_v3_and_below.a[i];
            for (int32_t j = 0; j < rt->results_by_partition.n; j++)
                if (!rt->results_by_partition.a[j].partition_error_code)
                    rt->results_by_partition.a[j].partition_error_code = KERR_OPERATION_NOT_ATTEMPTED;
        }
        req_respond(req, resp);
        return;
    }
    int16_t err = txn_coord_add_partitions(req->broker->txn_coord, id, q->v3_and_below_producer_id,
                                           q->v3_and_below_producer_epoch, n, topics, parts, &op->ack);
    if (err) {
        add_parts_finish(op, err);
        return;
    }
    txop_run(op);
}

/* ------------------------------------------------------------------ */
/* AddOffsetsToTxn                                                     */

static void add_offsets_finish(struct txop *op, int16_t err)
{
    add_offsets_to_txn_response_t resp;
    add_offsets_to_txn_response_init(&resp);
    resp.error_code = by_version(op->req, err);
    req_respond(op->req, &resp);
}

void api_handle_add_offsets_to_txn(struct request *req)
{
    const add_offsets_to_txn_request_t *q = req->body;
    struct txop *op = txop_new(req, add_offsets_finish);
    if (!authz_allowed(req, ACL_OP_WRITE, ACL_RES_TRANSACTIONAL_ID, q->transactional_id)) {
        add_offsets_finish(op, KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
        return;
    }
    if (!authz_allowed(req, ACL_OP_READ, ACL_RES_GROUP, q->group_id)) {
        add_offsets_finish(op, KERR_GROUP_AUTHORIZATION_FAILED);
        return;
    }
    /* the group's __consumer_offsets partition joins the transaction:
     * its TxnOffsetCommit records get the transaction's marker */
    struct mimage *img = controller_image(req->broker->controller);
    int32_t n = coord_num_partitions(req->broker->cfg, img);
    mimage_release(img);
    kstr_t topic = KSTR_LIT(COORD_OFFSETS_TOPIC);
    int32_t part = coord_partition_for(q->group_id, n);
    int16_t err = txn_coord_add_partitions(req->broker->txn_coord, q->transactional_id, q->producer_id,
                                           q->producer_epoch, 1, &topic, &part, &op->ack);
    if (err) {
        add_offsets_finish(op, err);
        return;
    }
    txop_run(op);
}

/* ------------------------------------------------------------------ */
/* EndTxn                                                              */

static void end_finish(struct txop *op, int16_t err)
{
    end_txn_response_t resp;
    end_txn_response_init(&resp);
    resp.error_code = by_version(op->req, err);
    req_respond(op->req, &resp);
}

void api_handle_end_txn(struct request *req)
{
    const end_txn_request_t *q = req->body;
    struct txop *op = txop_new(req, end_finish);
    if (!authz_allowed(req, ACL_OP_WRITE, ACL_RES_TRANSACTIONAL_ID, q->transactional_id)) {
        end_finish(op, KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
        return;
    }
    int16_t err = txn_coord_end(req->broker->txn_coord, q->transactional_id, q->producer_id, q->producer_epoch,
                                q->committed, &op->ack);
    if (err) {
        end_finish(op, err);
        return;
    }
    txop_run(op);
}
