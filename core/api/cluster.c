/* DescribeCluster (v0-1), as Kafka's KafkaApis.handleDescribeCluster and
 * AuthHelper.computeDescribeClusterResponse answer it on a broker. */
#include <stdio.h>

#include "api/handlers.h"
#include "api/request.h"
#include "net/conn.h"
#include "auth/authz.h"
#include "broker.h"
#include "controller/controller.h"
#include "proto/gen/describe_cluster_request.h"
#include "proto/gen/describe_cluster_response.h"
#include "proto/kerr.h"

/* Kafka's EndpointType ids. */
#define ENDPOINT_BROKER 1
#define ENDPOINT_CONTROLLER 2

static const enum acl_op cluster_ops[] = {ACL_OP_CREATE,        ACL_OP_CLUSTER_ACTION,   ACL_OP_DESCRIBE_CONFIGS,
                                          ACL_OP_ALTER_CONFIGS, ACL_OP_IDEMPOTENT_WRITE, ACL_OP_ALTER,
                                          ACL_OP_DESCRIBE};

void api_handle_describe_cluster(struct request *req)
{
    const describe_cluster_request_t *q = req->body;
    int16_t v = req->api_version;
    describe_cluster_response_t resp;
    describe_cluster_response_init(&resp);
    int8_t want = v >= 1 ? q->endpoint_type : ENDPOINT_BROKER;
    if (want != ENDPOINT_BROKER) {
        char *m = arena_alloc(&req->arena, 128);
        if (want != ENDPOINT_CONTROLLER) {
            resp.error_code = v == 0 ? KERR_INVALID_REQUEST : KERR_UNSUPPORTED_ENDPOINT_TYPE;
            snprintf(m, 128, "Unsupported endpoint type %d", (int)want);
        } else {
            resp.error_code = v == 0 ? KERR_INVALID_REQUEST : KERR_MISMATCHED_ENDPOINT_TYPE;
            snprintf(m, 128, "The request was sent to an endpoint of type BROKER, but we wanted an "
                             "endpoint of type CONTROLLER");
        }
        resp.error_message = KSTR(m);
        req_respond(req, &resp);
        return;
    }
    /* Kafka answers a principal without DESCRIBE on the cluster too, with
     * no authorized operations; only the bit set depends on it. */
    bool describe = authz_allowed(req, ACL_OP_DESCRIBE, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME);
    if (q->include_cluster_authorized_operations) {
        uint32_t bits = 0;
        if (describe)
            for (size_t i = 0; i < sizeof cluster_ops / sizeof cluster_ops[0]; i++)
                if (authz_filter(req, cluster_ops[i], ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME))
                    bits |= 1u << cluster_ops[i];
        resp.cluster_authorized_operations = (int32_t)bits;
    }
    struct broker *b = req->broker;
    struct mimage *img = controller_image(b->controller);
    resp.cluster_id = KSTR(b->cluster_id);
    resp.endpoint_type = ENDPOINT_BROKER;
    resp.brokers.a = describe_cluster_response_describe_cluster_broker_new_array(&req->arena, img->nbrokers);
    for (int32_t i = 0; i < img->nbrokers; i++) {
        const struct mi_broker *br = &img->brokers[i];
        if (br->fenced)
            continue;
        describe_cluster_response_describe_cluster_broker_t *o = &resp.brokers.a[resp.brokers.n++];
        o->broker_id = br->id;
        const char *host;
        mi_broker_address(br, req->conn ? req->conn->listener : NULL, &host, &o->port);
        o->host = KSTR(host);
        o->rack = br->rack ? KSTR(br->rack) : KSTR_NULL;
    }
    /* As Metadata: a live broker (this one) takes admin requests and
     * forwards them to the active controller. */
    resp.controller_id = mimage_broker_alive(img, b->node_id) ? b->node_id
                         : resp.brokers.n > 0                 ? resp.brokers.a[0].broker_id
                                                              : -1;
    req_respond(req, &resp);
    mimage_release(img);
}
