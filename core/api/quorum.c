/* The controller listener (Kafka's ControllerApis): the KRaft APIs
 * (Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch and FetchSnapshot of
 * __cluster_metadata), DescribeQuorum, BrokerRegistration and
 * BrokerHeartbeat, and the admin requests brokers forward.
 *
 * Raft requests are handed to the quorum thread as jobs carrying a copy
 * of the body (the request may die before the answer comes); the worker
 * parks the request and writes the answer the node gave, file ranges of
 * the metadata log included (sent with sendfile). */
#include <stdio.h>
#include <string.h>

#include "api/envelope.h"
#include "api/dispatch.h"
#include "api/forward.h"
#include "api/handlers.h"
#include "api/request.h"
#include "auth/authz.h"
#include "broker.h"
#include "controller/controller.h"
#include "net/conn.h"
#include "net/park.h"
#include "proto/gen/broker_heartbeat_request.h"
#include "proto/gen/broker_heartbeat_response.h"
#include "proto/gen/broker_registration_request.h"
#include "proto/gen/broker_registration_response.h"
#include "proto/gen/describe_quorum_request.h"
#include "proto/gen/describe_quorum_response.h"
#include "proto/kerr.h"
#include "quorum/quorum.h"
#include "raft/raft.h"

/* The node parks a Fetch for at most its fetch wait; anything that takes
 * much longer means the job is lost, and the connection goes (the peer
 * retries on a new one). */
#define RAFT_JOB_TIMEOUT_MS 35000

struct qwait {
    struct parked pk; /* first */
    struct request *req;
    struct qin *job;
};

/* Runs with the connection held (park.h): req_close below defers the
 * teardown, so w (in the request's arena) stays readable. */
static bool qwait_try(struct parked *pk, bool expired)
{
    struct qwait *w = (struct qwait *)pk;
    if (!atomic_load_explicit(&w->job->done, memory_order_acquire) && !expired)
        return false;
    w->req->cancel = NULL;
    if (!atomic_load_explicit(&w->job->done, memory_order_acquire))
        req_close(w->req, "the metadata quorum did not answer in time");
    else if (w->job->error)
        req_close(w->req, w->job->error == KERR_INVALID_REQUEST ? "malformed metadata quorum request"
                                                                 : "the metadata quorum is shutting down");
    else
        req_respond_body(w->req, &w->job->resp);
    qin_release(w->job);
    w->job = NULL;
    return true;
}

static void qwait_cancel(struct request *req)
{
    struct qwait *w = req->handler_state;
    park_stop(&w->pk);
    qin_release(w->job);
    w->job = NULL;
}

static void submit_and_park(struct request *req, struct qin *job)
{
    struct qwait *w = arena_alloc(&req->arena, sizeof *w);
    w->req = req;
    w->job = job;
    quorum_submit(controller_quorum(req->broker->controller), job);
    req->handler_state = w;
    req->cancel = qwait_cancel;
    park_init(&w->pk, req, qwait_try);
    park_watch(&w->pk, park_key_object(job));
    park_start(&w->pk, RAFT_JOB_TIMEOUT_MS);
}

/* Kafka's ControllerApis: the quorum's and the brokers' requests to
 * the controller need CLUSTER_ACTION on the cluster (nodes are super
 * users, or have that ACL). */
static bool cluster_action(struct request *req)
{
    return authz_allowed(req, ACL_OP_CLUSTER_ACTION, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME);
}

static void handle_raft(struct request *req, enum raft_msg_type type)
{
    const struct api_raw_body *rb = req->body;
    if (!cluster_action(req)) {
        /* the bodies stay raw here: refused by closing, with a log line */
        req_close(req, "CLUSTER_AUTHORIZATION_FAILED: a metadata quorum request without CLUSTER_ACTION");
        return;
    }
    if (!req->broker->controller || !quorum_is_voter(controller_quorum(req->broker->controller))) {
        req_close(req, "a metadata quorum request to a node that is not a voter");
        return;
    }
    int16_t version = req->api_version;
    bool pre_vote = false;
    size_t len = rb->len;
    const uint8_t *p = rb->p;
    uint8_t *copy = NULL;
    if (type == RAFT_MSG_VOTE_REQ && version >= 2) {
        /* v2 = v1 with PreVote before the three empty tag sections (see
         * quorum.h): strip it, decode as v1. */
        if (len < 4 || p[len - 1] || p[len - 2] || p[len - 3] || p[len - 4] > 1) {
            req_close(req, "malformed VoteRequest v2");
            return;
        }
        pre_vote = p[len - 4] == 1;
        copy = arena_alloc(&req->arena, len);
        memcpy(copy, p, len - 4);
        memcpy(copy + len - 4, p + len - 3, 3);
        p = copy;
        len -= 1;
        version = RAFT_VOTE_VERSION;
    }
    struct qin *job = qin_new(QIN_RAFT, type, version, pre_vote, -1, p, len);
    submit_and_park(req, job);
}

static void handle_vote(struct request *req) { handle_raft(req, RAFT_MSG_VOTE_REQ); }
static void handle_begin(struct request *req) { handle_raft(req, RAFT_MSG_BEGIN_EPOCH_REQ); }
static void handle_end(struct request *req) { handle_raft(req, RAFT_MSG_END_EPOCH_REQ); }
static void handle_fetch(struct request *req) { handle_raft(req, RAFT_MSG_FETCH_REQ); }
static void handle_fetch_snapshot(struct request *req) { handle_raft(req, RAFT_MSG_FETCH_SNAPSHOT_REQ); }

/* ------------------------------------------------------------------ */
/* DescribeQuorum                                                      */

static void describe_fail(struct request *req, int16_t err)
{
    describe_quorum_response_t resp;
    describe_quorum_response_init(&resp);
    resp.error_code = err;
    req_respond(req, &resp);
}

void api_handle_describe_quorum(struct request *req)
{
    /* Kafka's ControllerApis: DESCRIBE on the cluster */
    if (!authz_allowed(req, ACL_OP_DESCRIBE, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME)) {
        describe_fail(req, KERR_CLUSTER_AUTHORIZATION_FAILED);
        return;
    }
    struct controller *c = req->broker->controller;
    struct quorum *q = c ? controller_quorum(c) : NULL;
    /* A voter answers itself (only the leader knows the replicas'
     * progress; the others say NOT_LEADER_OR_FOLLOWER with what they
     * know); on a broker listener, a non-leader asks the leader. */
    bool local = q && quorum_is_voter(q) &&
                 ((req->conn && req->conn->controller_listener) || quorum_leader_id(q) == quorum_node_id(q));
    if (!local) {
        if (!c) {
            describe_fail(req, KERR_NOT_CONTROLLER);
            return;
        }
        api_forward(req, 10000, describe_fail);
        return;
    }
    struct qin *job = qin_new(QIN_DESCRIBE, 0, req->api_version, false, -1, NULL, 0);
    submit_and_park(req, job);
}

/* ------------------------------------------------------------------ */
/* BrokerRegistration and BrokerHeartbeat                              */

static void registration_done(struct request *req, void *arg, const int16_t *errs)
{
    struct ctl_op *op = arg;
    broker_registration_response_t resp;
    broker_registration_response_init(&resp);
    resp.error_code = errs[0];
    resp.broker_epoch = errs[0] ? -1 : ctl_op_broker_epoch(op);
    req_respond(req, &resp);
}

static void handle_broker_registration(struct request *req)
{
    const broker_registration_request_t *q = req->body;
    broker_registration_response_t resp;
    broker_registration_response_init(&resp);
    if (!cluster_action(req)) {
        resp.error_code = KERR_CLUSTER_AUTHORIZATION_FAILED;
        resp.broker_epoch = -1;
        req_respond(req, &resp);
        return;
    }
    int64_t epoch = -1;
    struct ctl_op *op = NULL;
    int rc = controller_register_broker(req->broker->controller, q, &epoch, &op);
    if (rc || !op) {
        resp.error_code = (int16_t)rc;
        resp.broker_epoch = rc ? -1 : epoch;
        req_respond(req, &resp);
        return;
    }
    /* the op stays referenced by the wait until finish has run */
    api_wait_ops(req, &op, 1, 30000, registration_done, op);
}

static void heartbeat_done(struct request *req, void *arg, const int16_t *errs)
{
    struct ctl_op *op = arg;
    broker_heartbeat_response_t resp;
    broker_heartbeat_response_init(&resp);
    resp.error_code = errs[0];
    if (!errs[0])
        ctl_op_heartbeat(op, &resp.is_fenced, &resp.is_caught_up, &resp.should_shut_down);
    else
        resp.is_fenced = true;
    req_respond(req, &resp);
}

static void handle_broker_heartbeat(struct request *req)
{
    const broker_heartbeat_request_t *q = req->body;
    broker_heartbeat_response_t resp;
    broker_heartbeat_response_init(&resp);
    if (!cluster_action(req)) {
        resp.error_code = KERR_CLUSTER_AUTHORIZATION_FAILED;
        resp.is_fenced = true;
        req_respond(req, &resp);
        return;
    }
    struct ctl_op *op = NULL;
    bool fenced, caught_up, shut;
    int rc = controller_broker_heartbeat(req->broker->controller, q, &fenced, &caught_up, &shut, &op);
    if (rc || !op) {
        resp.error_code = (int16_t)rc;
        resp.is_fenced = rc ? true : fenced;
        resp.is_caught_up = caught_up;
        resp.should_shut_down = shut;
        req_respond(req, &resp);
        return;
    }
    api_wait_ops(req, &op, 1, 30000, heartbeat_done, op);
}

/* ------------------------------------------------------------------ */
/* What a controller listener serves                                   */

const struct api_handler api_controller_handlers[] = {
    {KAPI_FETCH, 13, 17, handle_fetch},
    {KAPI_CREATE_TOPICS, 0, 7, api_handle_create_topics},
    {KAPI_DELETE_TOPICS, 0, 6, api_handle_delete_topics},
    {KAPI_CREATE_PARTITIONS, 0, 3, api_handle_create_partitions},
    {KAPI_ALTER_CONFIGS, 0, 2, api_handle_alter_configs},
    {KAPI_INCREMENTAL_ALTER_CONFIGS, 0, 1, api_handle_incremental_alter_configs},
    {KAPI_API_VERSIONS, 0, 4, api_handle_api_versions},
    /* a SASL_PLAINTEXT or SASL_SSL controller listener (Kafka's
     * ControllerApis serves both) */
    {KAPI_SASL_HANDSHAKE, 0, 1, api_handle_sasl_handshake},
    {KAPI_SASL_AUTHENTICATE, 0, 2, api_handle_sasl_authenticate},
    {KAPI_VOTE, 0, 2, handle_vote},
    {KAPI_BEGIN_QUORUM_EPOCH, 0, 1, handle_begin},
    {KAPI_END_QUORUM_EPOCH, 0, 1, handle_end},
    {KAPI_DESCRIBE_QUORUM, 0, 2, api_handle_describe_quorum},
    {KAPI_FETCH_SNAPSHOT, 0, 1, handle_fetch_snapshot},
    {KAPI_BROKER_REGISTRATION, 0, 4, handle_broker_registration},
    {KAPI_BROKER_HEARTBEAT, 0, 1, handle_broker_heartbeat},
    {KAPI_ALTER_PARTITION, 0, 3, api_handle_alter_partition},
    {KAPI_ALLOCATE_PRODUCER_IDS, 0, 0, api_handle_allocate_producer_ids},
    {KAPI_UPDATE_FEATURES, 0, 2, api_handle_update_features},
    {KAPI_ALTER_USER_SCRAM_CREDENTIALS, 0, 0, api_handle_alter_user_scram_credentials},
    {KAPI_DESCRIBE_ACLS, 0, 3, api_handle_describe_acls},
    {KAPI_CREATE_ACLS, 0, 3, api_handle_create_acls},
    {KAPI_DELETE_ACLS, 0, 3, api_handle_delete_acls},
    {KAPI_ALTER_CLIENT_QUOTAS, 0, 1, api_handle_alter_client_quotas},
    {KAPI_DESCRIBE_CLIENT_QUOTAS, 0, 1, api_handle_describe_client_quotas},
    /* what brokers forward, with the client's principal (api/envelope.c) */
    {KAPI_ENVELOPE, 0, 0, api_handle_envelope},
};
const int api_controller_handlers_len = (int)(sizeof api_controller_handlers / sizeof api_controller_handlers[0]);

bool api_controller_raw(int16_t key)
{
    return key == KAPI_FETCH || key == KAPI_VOTE || key == KAPI_BEGIN_QUORUM_EPOCH || key == KAPI_END_QUORUM_EPOCH ||
           key == KAPI_FETCH_SNAPSHOT;
}
