/* DescribeTransactions (v0) and ListTransactions (v0-v1): what the
 * transaction coordinator (coord/txn_coord.h) knows of the transactional
 * ids it coordinates, as KafkaApis and TransactionCoordinator answer them.
 *
 * DescribeTransactions: per id, TRANSACTIONAL_ID_AUTHORIZATION_FAILED
 * without DESCRIBE on it, else the coordinator's answer
 * (TRANSACTIONAL_ID_NOT_FOUND, NOT_COORDINATOR,
 * COORDINATOR_LOAD_IN_PROGRESS, ...); the partitions of topics the
 * principal may not DESCRIBE are left out.
 *
 * ListTransactions: the ids of every shard this node leads, filtered by
 * state, producer id and (v1, KIP-994) a minimum running time; only the
 * ids the principal may DESCRIBE are listed; filter names that are not
 * states come back in UnknownStateFilters. Clients send it to every
 * broker and merge the answers. */
#include <string.h>

#include "api/dispatch.h"
#include "api/handlers.h"
#include "api/request.h"
#include "auth/authz.h"
#include "broker.h"
#include "coord/txn_coord.h"
#include "coord/txn_meta.h"
#include "proto/kerr.h"

/* The answer for one authorized id: the coordinator's description with
 * its partitions grouped by topic (in the order the coordinator lists
 * them), less the topics the principal may not DESCRIBE. Everything
 * lives in req's arena. */
static void describe_one(struct request *req, struct txn_coord *tc, kstr_t id,
                         describe_transactions_response_transaction_state_t *out)
{
    struct arena *ar = &req->arena;
    /* TransactionCoordinator.handleDescribeTransactions: an inactive
     * coordinator first, then an empty id. */
    if (!tc) {
        out->error_code = KERR_COORDINATOR_NOT_AVAILABLE;
        return;
    }
    if (id.len <= 0) {
        out->error_code = KERR_INVALID_REQUEST;
        return;
    }
    struct txn_coord_desc d;
    memset(&d, 0, sizeof d);
    txn_coord_describe(tc, id, ar, &d);
    if (d.error) {
        out->error_code = d.error;
        return;
    }
    out->transaction_state = d.state;
    out->transaction_timeout_ms = d.timeout_ms;
    out->transaction_start_time_ms = d.start_ts;
    out->producer_id = d.producer_id;
    out->producer_epoch = d.producer_epoch;

    int32_t n = d.nparts > 0 ? d.nparts : 0;
    describe_transactions_response_topic_data_t *topics = describe_transactions_response_topic_data_new_array(ar, n);
    int32_t *parts = arena_alloc(ar, (size_t)(n > 0 ? n : 1) * sizeof *parts);
    int32_t *topic_of = arena_alloc(ar, (size_t)(n > 0 ? n : 1) * sizeof *topic_of);
    int32_t ntopics = 0;
    /* Pass 1: the topics and their sizes; pass 2 places the partitions
     * in one array, each topic's run contiguous. */
    for (int32_t i = 0; i < n; i++) {
        kstr_t name = KSTR(d.parts[i].topic);
        int32_t t = 0;
        while (t < ntopics && !kstr_eq(topics[t].topic, name))
            t++;
        if (t == ntopics)
            topics[ntopics++].topic = name;
        topics[t].partitions.n++;
        topic_of[i] = t;
    }
    int32_t at = 0;
    for (int32_t t = 0; t < ntopics; t++) {
        topics[t].partitions.a = parts + at;
        at += topics[t].partitions.n;
        topics[t].partitions.n = 0;
    }
    for (int32_t i = 0; i < n; i++) {
        describe_transactions_response_topic_data_t *t = &topics[topic_of[i]];
        t->partitions.a[t->partitions.n++] = d.parts[i].partition;
    }
    int32_t kept = 0;
    for (int32_t t = 0; t < ntopics; t++)
        if (authz_allowed(req, ACL_OP_DESCRIBE, ACL_RES_TOPIC, topics[t].topic))
            topics[kept++] = topics[t];
    out->topics.a = topics;
    out->topics.n = kept;
}

void api_handle_describe_transactions(struct request *req)
{
    const describe_transactions_request_t *q = req->body;
    struct arena *ar = &req->arena;
    struct txn_coord *tc = req->broker->txn_coord;
    describe_transactions_response_t resp;
    describe_transactions_response_init(&resp);
    int32_t n = q->transactional_ids.n > 0 ? q->transactional_ids.n : 0;
    resp.transaction_states.a = describe_transactions_response_transaction_state_new_array(ar, n);
    resp.transaction_states.n = n;
    for (int32_t i = 0; i < n; i++) {
        describe_transactions_response_transaction_state_t *out = &resp.transaction_states.a[i];
        kstr_t id = q->transactional_ids.a[i];
        out->transactional_id = id;
        if (!authz_allowed(req, ACL_OP_DESCRIBE, ACL_RES_TRANSACTIONAL_ID, id))
            out->error_code = KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
        else
            describe_one(req, tc, id, out);
    }
    req_respond(req, &resp);
}

void api_handle_list_transactions(struct request *req)
{
    const list_transactions_request_t *q = req->body;
    struct arena *ar = &req->arena;
    struct txn_coord *tc = req->broker->txn_coord;
    list_transactions_response_t resp;
    list_transactions_response_init(&resp);
    if (!tc) {
        resp.error_code = KERR_COORDINATOR_NOT_AVAILABLE;
        req_respond(req, &resp);
        return;
    }
    /* The known state names go to the coordinator; the others are
     * answered back. A filter of unknown names only matches nothing (Kafka
     * keeps the filter non-empty), so the coordinator is then asked only
     * whether it is loading. */
    int32_t nstates = q->state_filters.n > 0 ? q->state_filters.n : 0;
    kstr_t *known = arena_alloc(ar, (size_t)(nstates > 0 ? nstates : 1) * sizeof *known);
    kstr_t *unknown = arena_alloc(ar, (size_t)(nstates > 0 ? nstates : 1) * sizeof *unknown);
    int32_t nknown = 0, nunknown = 0;
    for (int32_t i = 0; i < nstates; i++) {
        kstr_t s = q->state_filters.a[i];
        if (txn_state_parse(s) >= 0)
            known[nknown++] = s;
        else
            unknown[nunknown++] = s;
    }
    bool match_none = nstates > 0 && nknown == 0;
    int32_t npids = q->producer_id_filters.n > 0 ? q->producer_id_filters.n : 0;
    struct txn_coord_listed *listed = NULL;
    int32_t nlisted = 0;
    int16_t err = txn_coord_list(tc, known, nknown, q->producer_id_filters.a, npids, q->duration_filter, ar, &listed,
                                 &nlisted);
    if (err) {
        resp.error_code = err;
        req_respond(req, &resp);
        return;
    }
    if (match_none)
        nlisted = 0;
    resp.unknown_state_filters.a = unknown;
    resp.unknown_state_filters.n = nunknown;
    resp.transaction_states.a =
        list_transactions_response_transaction_state_new_array(ar, nlisted > 0 ? nlisted : 0);
    for (int32_t i = 0; i < nlisted; i++) {
        if (!authz_filter(req, ACL_OP_DESCRIBE, ACL_RES_TRANSACTIONAL_ID, listed[i].id))
            continue;
        list_transactions_response_transaction_state_t *o = &resp.transaction_states.a[resp.transaction_states.n++];
        o->transactional_id = listed[i].id;
        o->producer_id = listed[i].producer_id;
        o->transaction_state = listed[i].state;
    }
    req_respond(req, &resp);
}
