/* InitProducerId (v0-5), as Kafka's KafkaApis.handleInitProducerIdRequest
 * and TransactionCoordinator.handleInitProducerId answer it.
 *
 * A null transactional id (an idempotent producer, not transactional):
 * always a fresh producer id with epoch 0 from this broker's blocks
 * (controller_next_producer_id), whatever ProducerId/ProducerEpoch the
 * request carries (Kafka "blindly accepts" it; a KIP-360 producer that
 * lost its state simply starts over with a new id);
 * TransactionTimeoutMs means nothing for it. With no id at hand (the
 * first block, or the next one, still on its way from the controller)
 * the request parks, without holding its worker, until a block arrives;
 * past ID_WAIT_MS it gets COORDINATOR_LOAD_IN_PROGRESS, which Kafka
 * answers at once in that case and every client retries.
 *
 * A transactional id goes to the transaction coordinator (api/txn.c).
 */
#include <stdbool.h>
#include <stdint.h>

#include "api/handlers.h"
#include "api/request.h"
#include "auth/authz.h"
#include "broker.h"
#include "controller/controller.h"
#include "net/park.h"
#include "proto/gen/init_producer_id_request.h"
#include "proto/gen/init_producer_id_response.h"
#include "proto/kerr.h"

/* How long a request waits for a block. Kafka does not wait at all;
 * waiting a little spares the client a retry round while the first
 * block is fetched, and stays well below every client's request timeout
 * (30 s). */
#define ID_WAIT_MS 5000
/* RecordBatch.NO_PRODUCER_ID / NO_PRODUCER_EPOCH */
#define NO_PRODUCER_ID (-1)
#define NO_PRODUCER_EPOCH (-1)

static void respond(struct request *req, int16_t err, int64_t id)
{
    init_producer_id_response_t resp;
    init_producer_id_response_init(&resp);
    resp.error_code = err;
    resp.producer_id = err ? NO_PRODUCER_ID : id;
    resp.producer_epoch = err ? NO_PRODUCER_EPOCH : 0;
    req_respond(req, &resp);
}

struct id_wait {
    struct parked pk; /* first: the parked request is the wait */
    struct controller *c;
};

static bool id_try(struct parked *pk, bool expired)
{
    struct id_wait *w = (struct id_wait *)pk;
    int64_t id = NO_PRODUCER_ID;
    int rc = controller_next_producer_id(w->c, &id);
    if (rc && !expired)
        return false;
    pk->req->cancel = NULL;
    respond(pk->req, (int16_t)rc, id);
    return true;
}

static void id_cancel(struct request *req)
{
    struct id_wait *w = req->handler_state;
    park_stop(&w->pk);
}

void api_handle_init_producer_id(struct request *req)
{
    const init_producer_id_request_t *q = req->body;
    bool transactional = q->transactional_id.len >= 0;
    if (transactional && !authz_allowed(req, ACL_OP_WRITE, ACL_RES_TRANSACTIONAL_ID, q->transactional_id)) {
        respond(req, KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED, 0);
        return;
    }
    if (!transactional && !authz_allowed(req, ACL_OP_IDEMPOTENT_WRITE, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME) &&
        !authz_allowed_any(req, ACL_OP_WRITE, ACL_RES_TOPIC)) {
        respond(req, KERR_CLUSTER_AUTHORIZATION_FAILED, 0);
        return;
    }
    /* v3+: an id without an epoch or the reverse is malformed. */
    if ((q->producer_id == NO_PRODUCER_ID) != (q->producer_epoch == NO_PRODUCER_EPOCH)) {
        respond(req, KERR_INVALID_REQUEST, 0);
        return;
    }
    if (transactional) {
        if (q->transactional_id.len == 0)
            respond(req, KERR_INVALID_REQUEST, 0);
        else
            api_txn_init_producer_id(req); /* api/txn.c */
        return;
    }
    struct controller *c = req->broker->controller;
    int64_t id;
    if (controller_next_producer_id(c, &id) == 0) {
        respond(req, 0, id);
        return;
    }
    struct id_wait *w = arena_alloc(&req->arena, sizeof *w);
    w->c = c;
    req->handler_state = w;
    req->cancel = id_cancel;
    park_init(&w->pk, req, id_try);
    park_watch(&w->pk, park_key_object(controller_producer_ids_waitable(c)));
    park_start(&w->pk, ID_WAIT_MS);
}
