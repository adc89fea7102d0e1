/* Requests brokers send to the active controller over its controller
 * listener (Kafka's ControllerApis): AlterPartition (v0-3) and
 * AllocateProducerIds (v0). Both need CLUSTER_ACTION on the cluster; the
 * controller decides (controller_alter_partition,
 * controller_allocate_producer_ids) and the answer goes out once its
 * records are committed. A failure after validation (the leadership was
 * lost, the commit timed out) is answered as Kafka's getErrorResponse
 * does: the top-level error alone. */
#include <string.h>

#include "api/forward.h"
#include "api/handlers.h"
#include "api/request.h"
#include "auth/authz.h"
#include "broker.h"
#include "controller/controller.h"
#include "proto/gen/allocate_producer_ids_request.h"
#include "proto/gen/allocate_producer_ids_response.h"
#include "proto/gen/alter_partition_request.h"
#include "proto/gen/alter_partition_response.h"
#include "proto/kerr.h"

/* How long an answer waits for its commit (Kafka's ControllerApis gives
 * these requests no deadline of their own; the broker's request timeout
 * is 30 s). */
#define COMMIT_WAIT_MS 30000

/* ------------------------------------------------------------------ */
/* AlterPartition                                                      */

static void alter_partition_error(struct request *req, int16_t err)
{
    alter_partition_response_t resp;
    alter_partition_response_init(&resp);
    resp.error_code = err;
    req_respond(req, &resp);
}

static void alter_partition_done(struct request *req, void *arg, const int16_t *errs)
{
    if (errs[0])
        alter_partition_error(req, errs[0]);
    else
        req_respond(req, arg);
}

void api_handle_alter_partition(struct request *req)
{
    const alter_partition_request_t *q = req->body;
    if (!authz_allowed(req, ACL_OP_CLUSTER_ACTION, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME)) {
        alter_partition_error(req, KERR_CLUSTER_AUTHORIZATION_FAILED);
        return;
    }
    alter_partition_response_t *resp = arena_alloc(&req->arena, sizeof *resp);
    struct ctl_op *op = NULL;
    int rc = controller_alter_partition(req->broker->controller, q, req->api_version, resp, &req->arena, &op);
    if (rc) {
        alter_partition_error(req, (int16_t)rc);
        return;
    }
    api_wait_ops(req, &op, 1, COMMIT_WAIT_MS, alter_partition_done, resp);
}

/* ------------------------------------------------------------------ */
/* AllocateProducerIds                                                 */

struct pid_block {
    int64_t first;
    int32_t len;
};

static void allocate_error(struct request *req, int16_t err)
{
    allocate_producer_ids_response_t resp;
    allocate_producer_ids_response_init(&resp);
    resp.error_code = err;
    req_respond(req, &resp);
}

static void allocate_done(struct request *req, void *arg, const int16_t *errs)
{
    const struct pid_block *blk = arg;
    if (errs[0]) {
        allocate_error(req, errs[0]);
        return;
    }
    allocate_producer_ids_response_t resp;
    allocate_producer_ids_response_init(&resp);
    resp.producer_id_start = blk->first;
    resp.producer_id_len = blk->len;
    req_respond(req, &resp);
}

void api_handle_allocate_producer_ids(struct request *req)
{
    const allocate_producer_ids_request_t *q = req->body;
    if (!authz_allowed(req, ACL_OP_CLUSTER_ACTION, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME)) {
        allocate_error(req, KERR_CLUSTER_AUTHORIZATION_FAILED);
        return;
    }
    struct pid_block *blk = arena_alloc(&req->arena, sizeof *blk);
    struct ctl_op *op = NULL;
    int rc = controller_allocate_producer_ids(req->broker->controller, q->broker_id, q->broker_epoch, &blk->first,
                                              &blk->len, &op);
    if (rc) {
        allocate_error(req, (int16_t)rc);
        return;
    }
    api_wait_ops(req, &op, 1, COMMIT_WAIT_MS, allocate_done, blk);
}
