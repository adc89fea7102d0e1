/* The group APIs: FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
 * LeaveGroup, ListGroups, DescribeGroups, DeleteGroups, OffsetCommit,
 * TxnOffsetCommit, OffsetFetch and OffsetDelete, as Kafka's KafkaApis and
 * GroupCoordinatorService answer them. The group logic is the
 * coordinator's (coord/); this file checks requests, authorizes,
 * resolves topics, and parks the requests that wait: JoinGroup and
 * SyncGroup until their group completes them, and any answer that
 * depends on an append until the ISR has it (the high watermark passed
 * it, as for an acks=all Produce: coord_ack_check). */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "api/dispatch.h"
#include "api/handlers.h"
#include "api/request.h"
#include "net/conn.h"
#include "auth/authz.h"
#include "broker.h"
#include "config.h"
#include "controller/controller.h"
#include "coord/coord.h"
#include "coord/records.h"
#include "coord/txn_meta.h"
#include "coord/txn_verify.h"
#include "log/plog.h"
#include "net/net.h"
#include "coord/txn_log.h"
#include "net/park.h"
#include "proto/gen/delete_groups_request.h"
#include "proto/gen/delete_groups_response.h"
#include "proto/gen/describe_groups_request.h"
#include "proto/gen/describe_groups_response.h"
#include "proto/gen/find_coordinator_request.h"
#include "proto/gen/find_coordinator_response.h"
#include "proto/gen/heartbeat_request.h"
#include "proto/gen/heartbeat_response.h"
#include "proto/gen/join_group_request.h"
#include "proto/gen/join_group_response.h"
#include "proto/gen/leave_group_request.h"
#include "proto/gen/leave_group_response.h"
#include "proto/gen/list_groups_request.h"
#include "proto/gen/list_groups_response.h"
#include "proto/gen/offset_commit_request.h"
#include "proto/gen/offset_commit_response.h"
#include "proto/gen/offset_delete_request.h"
#include "proto/gen/offset_delete_response.h"
#include "proto/gen/offset_fetch_request.h"
#include "proto/gen/offset_fetch_response.h"
#include "proto/gen/sync_group_request.h"
#include "proto/gen/sync_group_response.h"
#include "proto/gen/txn_offset_commit_request.h"
#include "proto/gen/txn_offset_commit_response.h"
#include "proto/kerr.h"
#include "replica/partition.h"
#include "util/clock.h"
#include "util/slog.h"

#define KEY_TYPE_GROUP 0
#define KEY_TYPE_TRANSACTION 1
/* A JoinGroup waits for its group at most the rebalance timeout; the
 * park timer is only a backstop in case the group never answers. */
#define JOIN_PARK_SLACK_MS 30000

/* ------------------------------------------------------------------ */
/* parking                                                             */

/* A group request on its way to an answer: first, for JoinGroup and
 * SyncGroup, waiting for the group (w attached); then, when the answer
 * depends on an append, waiting until the append is durable. */
struct gop {
    struct parked pk; /* first */
    struct request *req;
    struct cg_waiter w;
    bool uses_waiter; /* w initialised */
    bool waiting;     /* w attached to a member */
    struct coord_ack ack;
    void *resp; /* the answer (in req->arena) for the other APIs */
    /* Answers req; err != 0 replaces the answer's errors (the group or
     * the durability wait failed). */
    void (*finish)(struct gop *op, int16_t err);
};

/* Any thread: the group completed w (arg: the broker's park hub). */
static void waiter_done(void *arg, const struct cg_waiter *w)
{
    park_notify(arg, park_key_object(w));
}

static struct gop *gop_new(struct request *req, void (*finish)(struct gop *, int16_t))
{
    struct gop *op = arena_alloc(&req->arena, sizeof *op);
    op->req = req;
    op->finish = finish;
    coord_ack_init(&op->ack);
    return op;
}

static void gop_waiter(struct gop *op, int kind)
{
    cg_waiter_init(&op->w, kind, waiter_done, op->req->broker->wake);
    op->uses_waiter = true;
}

static void gop_done(struct gop *op, int16_t err)
{
    op->finish(op, err);
    if (op->uses_waiter)
        cg_waiter_release(&op->w);
}

static bool gop_try_complete(struct parked *pk, bool expired)
{
    struct gop *op = (struct gop *)pk;
    if (op->waiting) {
        if (!atomic_load_explicit(&op->w.done, memory_order_acquire)) {
            if (!expired)
                return false;
            if (coord_cancel(&op->w)) {
                /* the group never answered: let the client retry */
                op->waiting = false;
                gop_done(op, KERR_REBALANCE_IN_PROGRESS);
                return true;
            }
            /* completed in between (under the lock coord_cancel took) */
        }
        op->waiting = false;
        coord_waiter_ack(&op->w, &op->ack);
        /* watched before the check below (park.h); the write's own
         * deadline bounds the wait from now on */
        api_watch_coord_ack(&op->pk, &op->ack);
    }
    int16_t err = 0;
    if (coord_ack_check(&op->ack, &err) == ACK_WAIT) {
        if (!expired)
            return false;
        err = KERR_COORDINATOR_NOT_AVAILABLE; /* Kafka's REQUEST_TIMED_OUT mapping */
    }
    gop_done(op, err);
    return true;
}

static void gop_cancel(struct request *req)
{
    struct gop *op = req->handler_state;
    park_stop(&op->pk);
    if (op->waiting)
        coord_cancel(&op->w);
    op->waiting = false;
    if (op->uses_waiter)
        cg_waiter_release(&op->w);
}

void api_watch_coord_ack(struct parked *pk, const struct coord_ack *a)
{
    int64_t deadline = INT64_MAX;
    for (; a; a = a->next) {
        struct partition *p = coord_ack_partition(a);
        if (p) {
            park_watch(pk, partition_park_key(p));
            partition_put(p);
        }
        if (a->offset >= 0 && a->deadline < deadline)
            deadline = a->deadline;
    }
    if (deadline != INT64_MAX)
        park_set_timeout(pk, deadline - clock_mono_ms());
}

/* Answers now when nothing is pending, else parks for at most
 * timeout_ms. */
static void gop_run(struct gop *op, int64_t timeout_ms)
{
    struct request *req = op->req;
    if (!op->waiting) {
        if (op->uses_waiter) {
            /* completed within the call, by this thread */
            coord_waiter_ack(&op->w, &op->ack);
        }
        int16_t err = 0;
        if (coord_ack_check(&op->ack, &err) != ACK_WAIT) {
            gop_done(op, err);
            return;
        }
    }
    req->handler_state = op;
    req->cancel = gop_cancel;
    park_init(&op->pk, req, gop_try_complete);
    if (op->waiting)
        park_watch(&op->pk, park_key_object(&op->w));
    else
        api_watch_coord_ack(&op->pk, &op->ack);
    park_start(&op->pk, timeout_ms);
}

int64_t api_commit_timeout_ms(const struct request *req)
{
    const struct samsa_config *cfg = req->broker->cfg;
    return cfg->offsets_commit_timeout_ms;
}

/* Kafka's clientHost: InetAddress.toString() of the peer, "/1.2.3.4". */
kstr_t api_client_host(struct request *req)
{
    const char *peer = req_peer(req);
    const char *colon = strrchr(peer, ':');
    size_t n = colon ? (size_t)(colon - peer) : strlen(peer);
    const char *start = peer;
    if (n >= 2 && peer[0] == '[' && peer[n - 1] == ']') {
        start++;
        n -= 2;
    }
    char *s = arena_alloc(&req->arena, n + 2);
    s[0] = '/';
    memcpy(s + 1, start, n);
    return (kstr_t){s, (int32_t)(n + 1)};
}

static bool group_id_empty(kstr_t g)
{
    return g.len <= 0;
}

/* ------------------------------------------------------------------ */
/* FindCoordinator                                                     */

/* Errors.message() as FindCoordinator v1+ carries it. */
static const char *error_message(int16_t err)
{
    switch (err) {
    case KERR_NONE:
        return "NONE";
    case KERR_COORDINATOR_NOT_AVAILABLE:
        return "The coordinator is not available.";
    case KERR_GROUP_AUTHORIZATION_FAILED:
        return "Group authorization failed.";
    case KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
        return "Transactional Id authorization failed.";
    case KERR_INVALID_REQUEST:
        return "This most likely occurs because of a request being malformed by the client library or the "
               "message was sent to an incompatible broker. See the broker logs for more details.";
    default:
        return kerr_name(err);
    }
}

struct coordinator_answer {
    int16_t error;
    int32_t node_id;
    kstr_t host;
    int32_t port;
};

static void find_one(struct request *req, struct mimage **img, kstr_t key, int8_t key_type, bool *created,
                     struct coordinator_answer *out)
{
    struct broker *b = req->broker;
    *out = (struct coordinator_answer){0, -1, KSTR_LIT(""), -1};
    kstr_t topic;
    if (key_type == KEY_TYPE_TRANSACTION) {
        if (!authz_allowed(req, ACL_OP_DESCRIBE, ACL_RES_TRANSACTIONAL_ID, key)) {
            out->error = KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
            return;
        }
        /* Kafka: an empty transactional id has no coordinator */
        if (key.len <= 0) {
            out->error = KERR_INVALID_REQUEST;
            return;
        }
        topic = KSTR_LIT(TXN_STATE_TOPIC);
    } else if (key_type == KEY_TYPE_GROUP) {
        if (!authz_allowed(req, ACL_OP_DESCRIBE, ACL_RES_GROUP, key)) {
            out->error = KERR_GROUP_AUTHORIZATION_FAILED;
            return;
        }
        topic = KSTR_LIT(COORD_OFFSETS_TOPIC);
    } else {
        out->error = KERR_INVALID_REQUEST;
        return;
    }
    const struct mi_topic *t = mimage_topic(*img, topic);
    if (!t) {
        /* Kafka creates its internal topics on first use, whatever
         * auto.create.topics.enable says; the client retries meanwhile. */
        if (!*created) {
            *created = true;
            char msg[256];
            struct ctl_op *op = NULL;
            int rc = controller_auto_create_topic(b->controller, topic, msg, sizeof msg, &op);
            if (op)
                ctl_op_release(op);
            if (rc == KERR_INVALID_REPLICATION_FACTOR) {
                /* not enough brokers yet: normal while a cluster starts;
                 * clients retry every few hundred ms, so say it now and
                 * then */
                static _Atomic int64_t last_said;
                int64_t now = clock_mono_ms(), then = atomic_load(&last_said);
                if (now - then >= 10000 && atomic_compare_exchange_strong(&last_said, &then, now))
                    slog_info("FindCoordinator: not creating %.*s yet: %s", topic.len, topic.p, msg);
            } else if (rc)
                slog_warn("FindCoordinator: creating %.*s failed: %s %s", topic.len, topic.p, kerr_name((int16_t)rc),
                          msg);
            else
                slog_info("FindCoordinator from %s: creating %.*s", req_peer(req), topic.len, topic.p);
        }
        out->error = KERR_COORDINATOR_NOT_AVAILABLE;
        return;
    }
    const struct mi_partition *mp = mi_topic_partition(t, coord_partition_for(key, t->npartitions));
    const struct mi_broker *br = mp ? mimage_broker(*img, mp->leader) : NULL;
    if (!br || br->fenced) {
        out->error = KERR_COORDINATOR_NOT_AVAILABLE;
        return;
    }
    out->node_id = br->id;
    const char *host;
    mi_broker_address(br, req->conn ? req->conn->listener : NULL, &host, &out->port);
    out->host = KSTR(host);
}

void api_handle_find_coordinator(struct request *req)
{
    const find_coordinator_request_t *q = req->body;
    int16_t v = req->api_version;
    find_coordinator_response_t resp;
    find_coordinator_response_init(&resp);
    struct mimage *img = controller_image(req->broker->controller);
    bool created = false;
    int8_t key_type = v >= 1 ? q->key_type : KEY_TYPE_GROUP;
    if (v < 4) {
        struct coordinator_answer a;
        find_one(req, &img, q->key, key_type, &created, &a);
        resp.error_code = a.error;
        resp.error_message = KSTR(error_message(a.error));
        resp.node_id = a.node_id;
        resp.host = a.host;
        resp.port = a.port;
    } else {
        int32_t n = q->coordinator_keys.n > 0 ? q->coordinator_keys.n : 0;
        resp.coordinators.a = find_coordinator_response_coordinator_new_array(&req->arena, n);
        resp.coordinators.n = n;
        for (int32_t i = 0; i < n; i++) {
            struct coordinator_answer a;
            find_one(req, &img, q->coordinator_keys.a[i], key_type, &created, &a);
            find_coordinator_response_coordinator_t *c = &resp.coordinators.a[i];
            c->key = q->coordinator_keys.a[i];
            c->error_code = a.error;
            c->error_message = KSTR(error_message(a.error));
            c->node_id = a.node_id;
            c->host = a.host;
            c->port = a.port;
        }
    }
    req_respond(req, &resp);
    mimage_release(img);
}

/* ------------------------------------------------------------------ */
/* JoinGroup                                                           */

static void join_finish(struct gop *op, int16_t err)
{
    struct request *req = op->req;
    join_group_response_t resp;
    join_group_response_init(&resp);
    const struct cg_waiter *w = &op->w;
    if (err) {
        resp.error_code = err;
        resp.member_id = w->member_id;
    } else {
        resp.error_code = w->error;
        resp.generation_id = w->generation;
        resp.protocol_type = w->protocol_type;
        resp.protocol_name = w->protocol_name;
        resp.leader = w->leader;
        resp.skip_assignment = w->skip_assignment;
        resp.member_id = w->member_id;
        resp.members.a = join_group_response_join_group_response_member_new_array(&req->arena, w->nmembers);
        resp.members.n = w->nmembers;
        for (int32_t i = 0; i < w->nmembers; i++) {
            resp.members.a[i].member_id = w->members[i].member_id;
            resp.members.a[i].group_instance_id = w->members[i].instance_id;
            resp.members.a[i].metadata = w->members[i].metadata;
        }
    }
    req_respond(req, &resp);
}

static void join_error(struct request *req, int16_t err, kstr_t member_id)
{
    join_group_response_t resp;
    join_group_response_init(&resp);
    resp.error_code = err;
    resp.member_id = member_id;
    req_respond(req, &resp);
}

void api_handle_join_group(struct request *req)
{
    const join_group_request_t *q = req->body;
    const struct samsa_config *cfg = req->broker->cfg;
    int64_t min_st = cfg->group_min_session_timeout_ms, max_st = cfg->group_max_session_timeout_ms;
    if (!authz_allowed(req, ACL_OP_READ, ACL_RES_GROUP, q->group_id)) {
        join_error(req, KERR_GROUP_AUTHORIZATION_FAILED, q->member_id);
        return;
    }
    if (group_id_empty(q->group_id)) {
        join_error(req, KERR_INVALID_GROUP_ID, q->member_id);
        return;
    }
    if (q->session_timeout_ms < min_st || q->session_timeout_ms > max_st) {
        join_error(req, KERR_INVALID_SESSION_TIMEOUT, q->member_id);
        return;
    }
    struct cg_join_req rq = {
        .member_id = q->member_id,
        .instance_id = req->api_version >= 5 ? q->group_instance_id : KSTR_NULL,
        .protocol_type = q->protocol_type,
        .client_id = req->client_id.len >= 0 ? req->client_id : KSTR_LIT(""),
        .client_host = api_client_host(req),
        .session_timeout_ms = q->session_timeout_ms,
        /* v0 has no rebalance timeout: the session timeout stands in */
        .rebalance_timeout_ms = req->api_version >= 1 ? q->rebalance_timeout_ms : q->session_timeout_ms,
        .version = req->api_version,
        .nprotocols = q->protocols.n > 0 ? q->protocols.n : 0,
    };
    kstr_t *names = arena_alloc(&req->arena, (size_t)(rq.nprotocols + 1) * sizeof *names);
    kbytes_t *meta = arena_alloc(&req->arena, (size_t)(rq.nprotocols + 1) * sizeof *meta);
    for (int32_t i = 0; i < rq.nprotocols; i++) {
        names[i] = q->protocols.a[i].name;
        meta[i] = q->protocols.a[i].metadata;
    }
    rq.protocol_names = names;
    rq.protocol_metadata = meta;

    struct gop *op = gop_new(req, join_finish);
    gop_waiter(op, CG_WAIT_JOIN);
    int16_t err = coord_join(req->broker->coord, q->group_id, &rq, &op->w, &op->waiting);
    if (err) {
        cg_waiter_release(&op->w);
        join_error(req, err, q->member_id);
        return;
    }
    int64_t timeout = (int64_t)(rq.rebalance_timeout_ms > rq.session_timeout_ms ? rq.rebalance_timeout_ms
                                                                                  : rq.session_timeout_ms) +
                      JOIN_PARK_SLACK_MS;
    gop_run(op, timeout);
}

/* ------------------------------------------------------------------ */
/* SyncGroup                                                           */

static void sync_finish(struct gop *op, int16_t err)
{
    sync_group_response_t resp;
    sync_group_response_init(&resp);
    if (err) {
        resp.error_code = err;
    } else {
        resp.error_code = op->w.error;
        resp.protocol_type = op->w.protocol_type;
        resp.protocol_name = op->w.protocol_name;
        resp.assignment = op->w.assignment;
    }
    req_respond(op->req, &resp);
}

static void sync_error(struct request *req, int16_t err)
{
    sync_group_response_t resp;
    sync_group_response_init(&resp);
    resp.error_code = err;
    req_respond(req, &resp);
}

void api_handle_sync_group(struct request *req)
{
    const sync_group_request_t *q = req->body;
    if (!authz_allowed(req, ACL_OP_READ, ACL_RES_GROUP, q->group_id)) {
        sync_error(req, KERR_GROUP_AUTHORIZATION_FAILED);
        return;
    }
    if (group_id_empty(q->group_id)) {
        sync_error(req, KERR_INVALID_GROUP_ID);
        return;
    }
    int32_t n = q->assignments.n > 0 ? q->assignments.n : 0;
    kstr_t *ids = arena_alloc(&req->arena, (size_t)(n + 1) * sizeof *ids);
    kbytes_t *as = arena_alloc(&req->arena, (size_t)(n + 1) * sizeof *as);
    for (int32_t i = 0; i < n; i++) {
        ids[i] = q->assignments.a[i].member_id;
        as[i] = q->assignments.a[i].assignment;
    }
    struct cg_sync_req rq = {
        .member_id = q->member_id,
        .instance_id = req->api_version >= 3 ? q->group_instance_id : KSTR_NULL,
        .protocol_type = req->api_version >= 5 ? q->protocol_type : KSTR_NULL,
        .protocol_name = req->api_version >= 5 ? q->protocol_name : KSTR_NULL,
        .generation = q->generation_id,
        .nassignments = n,
        .assign_members = ids,
        .assignments = as,
    };
    struct gop *op = gop_new(req, sync_finish);
    gop_waiter(op, CG_WAIT_SYNC);
    int16_t err = coord_sync(req->broker->coord, q->group_id, &rq, &op->w, &op->waiting);
    if (err) {
        cg_waiter_release(&op->w);
        sync_error(req, err);
        return;
    }
    /* a member waits for the leader at most the rebalance timeout,
     * which only the group knows: the group's pending-sync timer ends
     * the wait; this is the backstop */
    gop_run(op, 30 * 60 * 1000);
}

/* ------------------------------------------------------------------ */
/* Heartbeat                                                           */

static void heartbeat_finish(struct gop *op, int16_t err)
{
    heartbeat_response_t *resp = op->resp;
    if (err)
        resp->error_code = err;
    req_respond(op->req, resp);
}

void api_handle_heartbeat(struct request *req)
{
    const heartbeat_request_t *q = req->body;
    struct gop *op = gop_new(req, heartbeat_finish);
    heartbeat_response_t *resp = arena_alloc(&req->arena, sizeof *resp);
    heartbeat_response_init(resp);
    op->resp = resp;
    if (!authz_allowed(req, ACL_OP_READ, ACL_RES_GROUP, q->group_id))
        resp->error_code = KERR_GROUP_AUTHORIZATION_FAILED;
    else if (group_id_empty(q->group_id))
        resp->error_code = KERR_INVALID_GROUP_ID;
    else
        resp->error_code =
            coord_heartbeat(req->broker->coord, q->group_id, q->member_id,
                            req->api_version >= 3 ? q->group_instance_id : KSTR_NULL, q->generation_id, &op->ack);
    gop_run(op, api_commit_timeout_ms(req));
}

/* ------------------------------------------------------------------ */
/* LeaveGroup                                                          */

static void leave_finish(struct gop *op, int16_t err)
{
    leave_group_response_t *resp = op->resp;
    if (err) {
        resp->error_code = err;
        resp->members.n = 0;
    }
    if (op->req->api_version < 3 && !resp->error_code && resp->members.n > 0)
        resp->error_code = resp->members.a[0].error_code; /* v0-2: one member, its error on top */
    req_respond(op->req, resp);
}

void api_handle_leave_group(struct request *req)
{
    const leave_group_request_t *q = req->body;
    struct gop *op = gop_new(req, leave_finish);
    leave_group_response_t *resp = arena_alloc(&req->arena, sizeof *resp);
    leave_group_response_init(resp);
    op->resp = resp;
    bool batch = req->api_version >= 3;
    int32_t n = batch ? (q->members.n > 0 ? q->members.n : 0) : 1;
    kstr_t *ids = arena_alloc(&req->arena, (size_t)(n + 1) * sizeof *ids);
    kstr_t *inst = arena_alloc(&req->arena, (size_t)(n + 1) * sizeof *inst);
    int16_t *errs = arena_alloc(&req->arena, (size_t)(n + 1) * sizeof *errs);
    for (int32_t i = 0; i < n; i++) {
        ids[i] = batch ? q->members.a[i].member_id : q->member_id;
        inst[i] = batch ? q->members.a[i].group_instance_id : KSTR_NULL;
    }
    if (!authz_allowed(req, ACL_OP_READ, ACL_RES_GROUP, q->group_id))
        resp->error_code = KERR_GROUP_AUTHORIZATION_FAILED;
    else if (group_id_empty(q->group_id))
        resp->error_code = KERR_INVALID_GROUP_ID;
    else
        resp->error_code = coord_leave(req->broker->coord, q->group_id, n, ids, inst, errs, &op->ack);
    if (!resp->error_code) {
        resp->members.a = leave_group_response_member_response_new_array(&req->arena, n);
        resp->members.n = n;
        for (int32_t i = 0; i < n; i++) {
            resp->members.a[i].member_id = ids[i];
            resp->members.a[i].group_instance_id = inst[i];
            resp->members.a[i].error_code = errs[i];
        }
    }
    gop_run(op, api_commit_timeout_ms(req));
}

/* ------------------------------------------------------------------ */
/* ListGroups, DescribeGroups, DeleteGroups                            */

static bool state_matches(const list_groups_request_t *q, int16_t v, kstr_t state, kstr_t type)
{
    if (v >= 4 && q->states_filter.n > 0) {
        bool ok = false;
        for (int32_t i = 0; i < q->states_filter.n && !ok; i++)
            ok = q->states_filter.a[i].len == state.len &&
                 strncasecmp(q->states_filter.a[i].p, state.p, (size_t)state.len) == 0;
        if (!ok)
            return false;
    }
    if (v >= 5 && q->types_filter.n > 0) {
        bool ok = false;
        for (int32_t i = 0; i < q->types_filter.n && !ok; i++)
            ok = q->types_filter.a[i].len == type.len &&
                 strncasecmp(q->types_filter.a[i].p, type.p, (size_t)type.len) == 0;
        if (!ok)
            return false;
    }
    return true;
}

void api_handle_list_groups(struct request *req)
{
    const list_groups_request_t *q = req->body;
    list_groups_response_t resp;
    list_groups_response_init(&resp);
    struct coord_listed *all;
    int32_t n;
    resp.error_code = coord_list_groups(req->broker->coord, &req->arena, &all, &n);
    if (!resp.error_code) {
        bool cluster = authz_filter(req, ACL_OP_DESCRIBE, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME);
        resp.groups.a = list_groups_response_listed_group_new_array(&req->arena, n);
        resp.groups.n = 0;
        for (int32_t i = 0; i < n; i++) {
            if (!cluster && !authz_filter(req, ACL_OP_DESCRIBE, ACL_RES_GROUP, all[i].group_id))
                continue;
            if (!state_matches(q, req->api_version, all[i].state, all[i].type))
                continue;
            list_groups_response_listed_group_t *g = &resp.groups.a[resp.groups.n++];
            g->group_id = all[i].group_id;
            g->protocol_type = all[i].protocol_type;
            g->group_state = all[i].state;
            g->group_type = all[i].type;
        }
    }
    req_respond(req, &resp);
}

/* Kafka's AclEntry.supportedOperations for GROUP. */
static int32_t group_authorized_ops(struct request *req, kstr_t group)
{
    static const enum acl_op ops[] = {ACL_OP_READ, ACL_OP_DESCRIBE, ACL_OP_DELETE};
    uint32_t bits = 0;
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (authz_filter(req, ops[i], ACL_RES_GROUP, group))
            bits |= 1u << ops[i];
    return (int32_t)bits;
}

void api_handle_describe_groups(struct request *req)
{
    const describe_groups_request_t *q = req->body;
    describe_groups_response_t resp;
    describe_groups_response_init(&resp);
    int32_t n = q->groups.n > 0 ? q->groups.n : 0;
    resp.groups.a = describe_groups_response_described_group_new_array(&req->arena, n);
    resp.groups.n = n;
    for (int32_t i = 0; i < n; i++) {
        describe_groups_response_described_group_t *o = &resp.groups.a[i];
        kstr_t gid = q->groups.a[i];
        o->group_id = gid;
        o->group_state = KSTR_LIT("");
        o->protocol_type = KSTR_LIT("");
        o->protocol_data = KSTR_LIT("");
        if (!authz_allowed(req, ACL_OP_DESCRIBE, ACL_RES_GROUP, gid)) {
            o->error_code = KERR_GROUP_AUTHORIZATION_FAILED;
            continue;
        }
        struct coord_group_desc d;
        o->error_code = coord_describe_group(req->broker->coord, gid, &req->arena, &d);
        if (o->error_code)
            continue;
        o->group_state = d.state;
        o->protocol_type = d.protocol_type;
        o->protocol_data = d.protocol_data;
        o->members.a = describe_groups_response_described_group_member_new_array(&req->arena, d.nmembers);
        o->members.n = d.nmembers;
        for (int32_t k = 0; k < d.nmembers; k++) {
            describe_groups_response_described_group_member_t *m = &o->members.a[k];
            m->member_id = d.members[k].member_id;
            m->group_instance_id = d.members[k].instance_id;
            m->client_id = d.members[k].client_id;
            m->client_host = d.members[k].client_host;
            m->member_metadata = d.members[k].metadata;
            m->member_assignment = d.members[k].assignment;
        }
        if (req->api_version >= 3 && q->include_authorized_operations)
            o->authorized_operations = group_authorized_ops(req, gid);
    }
    req_respond(req, &resp);
}

static void delete_groups_finish(struct gop *op, int16_t err)
{
    delete_groups_response_t *resp = op->resp;
    for (int32_t i = 0; err && i < resp->results.n; i++)
        if (!resp->results.a[i].error_code)
            resp->results.a[i].error_code = err;
    req_respond(op->req, resp);
}

void api_handle_delete_groups(struct request *req)
{
    const delete_groups_request_t *q = req->body;
    struct gop *op = gop_new(req, delete_groups_finish);
    delete_groups_response_t *resp = arena_alloc(&req->arena, sizeof *resp);
    delete_groups_response_init(resp);
    op->resp = resp;
    int32_t n = q->groups_names.n > 0 ? q->groups_names.n : 0;
    resp->results.a = delete_groups_response_deletable_group_result_new_array(&req->arena, n);
    resp->results.n = n;
    /* Groups of several shards: each shard's last append is waited for
     * (a list of acks, one per shard; a failure of one fails the groups
     * not yet failed). */
    for (int32_t i = 0; i < n; i++) {
        kstr_t gid = q->groups_names.a[i];
        delete_groups_response_deletable_group_result_t *r = &resp->results.a[i];
        r->group_id = gid;
        if (!authz_allowed(req, ACL_OP_DELETE, ACL_RES_GROUP, gid)) {
            r->error_code = KERR_GROUP_AUTHORIZATION_FAILED;
            continue;
        }
        struct coord_ack ack;
        r->error_code = coord_delete_group(req->broker->coord, gid, &ack);
        if (r->error_code || ack.offset < 0)
            continue;
        struct coord_ack *a = &op->ack;
        while (a->shard && a->shard != ack.shard && a->next)
            a = a->next;
        if (!a->shard || a->shard == ack.shard) {
            ack.next = a->next;
            *a = ack; /* the shard's later append */
        } else {
            a->next = arena_alloc(&req->arena, sizeof *a->next);
            *a->next = ack;
        }
    }
    gop_run(op, api_commit_timeout_ms(req));
}

/* ------------------------------------------------------------------ */
/* OffsetCommit                                                        */

static void commit_finish(struct gop *op, int16_t err)
{
    offset_commit_response_t *resp = op->resp;
    for (int32_t t = 0; err && t < resp->topics.n; t++)
        for (int32_t p = 0; p < resp->topics.a[t].partitions.n; p++)
            if (!resp->topics.a[t].partitions.a[p].error_code)
                resp->topics.a[t].partitions.a[p].error_code = err;
    req_respond(op->req, resp);
}

void api_handle_offset_commit(struct request *req)
{
    const offset_commit_request_t *q = req->body;
    struct broker *b = req->broker;
    struct gop *op = gop_new(req, commit_finish);
    offset_commit_response_t *resp = arena_alloc(&req->arena, sizeof *resp);
    offset_commit_response_init(resp);
    op->resp = resp;

    int32_t total = 0;
    for (int32_t t = 0; t < q->topics.n; t++)
        total += q->topics.a[t].partitions.n > 0 ? q->topics.a[t].partitions.n : 0;
    struct coord_commit *parts = arena_alloc(&req->arena, (size_t)(total + 1) * sizeof *parts);
    int16_t group_err = 0;
    if (!authz_allowed(req, ACL_OP_READ, ACL_RES_GROUP, q->group_id))
        group_err = KERR_GROUP_AUTHORIZATION_FAILED;
    else if (group_id_empty(q->group_id))
        group_err = KERR_INVALID_GROUP_ID;

    struct mimage *img = controller_image(b->controller);
    resp->topics.a = offset_commit_response_offset_commit_response_topic_new_array(&req->arena, q->topics.n);
    resp->topics.n = q->topics.n > 0 ? q->topics.n : 0;
    int32_t k = 0;
    for (int32_t t = 0; t < resp->topics.n; t++) {
        const offset_commit_request_offset_commit_request_topic_t *rt = &q->topics.a[t];
        offset_commit_response_offset_commit_response_topic_t *ot = &resp->topics.a[t];
        ot->name = rt->name;
        int32_t np = rt->partitions.n > 0 ? rt->partitions.n : 0;
        ot->partitions.a = offset_commit_response_offset_commit_response_partition_new_array(&req->arena, np);
        ot->partitions.n = np;
        bool topic_ok = authz_allowed(req, ACL_OP_READ, ACL_RES_TOPIC, rt->name);
        const struct mi_topic *mt = mimage_topic(img, rt->name);
        for (int32_t p = 0; p < np; p++) {
            const offset_commit_request_offset_commit_request_partition_t *rp = &rt->partitions.a[p];
            struct coord_commit *c = &parts[k++];
            c->topic = rt->name;
            c->partition = rp->partition_index;
            c->offset = rp->committed_offset;
            c->leader_epoch = req->api_version >= 6 ? rp->committed_leader_epoch : -1;
            c->metadata = rp->committed_metadata;
            c->commit_ts = req->api_version == 1 ? rp->commit_timestamp : -1;
            c->error = group_err              ? group_err
                       : !topic_ok            ? KERR_TOPIC_AUTHORIZATION_FAILED
                       : !mt || !mi_topic_partition(mt, rp->partition_index) ? KERR_UNKNOWN_TOPIC_OR_PARTITION
                                                                              : 0;
        }
    }
    mimage_release(img);
    if (!group_err) {
        bool any = false;
        for (int32_t i = 0; i < k && !any; i++)
            any = parts[i].error == 0;
        if (any) {
            int64_t retention = req->api_version >= 2 && req->api_version <= 4 ? q->retention_time_ms : -1;
            int16_t err = coord_commit(b->coord, q->group_id, q->member_id,
                                       req->api_version >= 7 ? q->group_instance_id : KSTR_NULL,
                                       q->generation_id_or_member_epoch, req->api_version, retention, parts, k,
                                       &op->ack);
            for (int32_t i = 0; err && i < k; i++)
                if (!parts[i].error)
                    parts[i].error = err;
        }
    }
    k = 0;
    for (int32_t t = 0; t < resp->topics.n; t++)
        for (int32_t p = 0; p < resp->topics.a[t].partitions.n; p++) {
            resp->topics.a[t].partitions.a[p].partition_index = parts[k].partition;
            resp->topics.a[t].partitions.a[p].error_code = parts[k].error;
            k++;
        }
    gop_run(op, api_commit_timeout_ms(req));
}

/* ------------------------------------------------------------------ */
/* TxnOffsetCommit                                                     */

/* An error for the whole request, as Kafka answers it to this version:
 * COORDINATOR_LOAD_IN_PROGRESS is COORDINATOR_NOT_AVAILABLE before v2
 * (clients before 2.0 did not expect it), PRODUCER_FENCED is
 * INVALID_PRODUCER_EPOCH before v3 (KIP-588). */
static int16_t txn_commit_error(int16_t err, int16_t version)
{
    if (err == KERR_COORDINATOR_LOAD_IN_PROGRESS && version < 2)
        return KERR_COORDINATOR_NOT_AVAILABLE;
    return txn_error_for_version(err, KAPI_TXN_OFFSET_COMMIT, version);
}

static void txn_commit_finish(struct gop *op, int16_t err)
{
    txn_offset_commit_response_t *resp = op->resp;
    err = txn_commit_error(err, op->req->api_version);
    for (int32_t t = 0; err && t < resp->topics.n; t++)
        for (int32_t p = 0; p < resp->topics.a[t].partitions.n; p++)
            if (!resp->topics.a[t].partitions.a[p].error_code)
                resp->topics.a[t].partitions.a[p].error_code = err;
    req_respond(op->req, resp);
}

/* A TxnOffsetCommit: first, with KIP-890 verification, parked until the
 * transaction coordinator confirms the group's partition is in the
 * producer's transaction; then the commit (op), which parks until the ISR
 * has its batch. */
struct txo {
    struct parked pk; /* first */
    struct gop *op;
    struct coord_commit *parts;
    int32_t n;
    uint64_t guard;
    struct txn_verify *job; /* NULL: nothing asked */
};

/* Runs the commit (unless verr, the verification's produce-style error,
 * or the partitions' own errors stop it) and answers, now or once
 * replicated. */
static void txo_finish(struct txo *t, int16_t verr)
{
    struct request *req = t->op->req;
    const txn_offset_commit_request_t *q = req->body;
    int16_t v = req->api_version;
    txn_offset_commit_response_t *resp = t->op->resp;
    if (t->job) {
        txn_verify_release(t->job);
        t->job = NULL;
    }
    bool any = false;
    for (int32_t i = 0; i < t->n && !any; i++)
        any = t->parts[i].error == 0;
    if (any) {
        /* the verification's retriable answer (NOT_ENOUGH_REPLICAS) as
         * Kafka's runtime maps it: COORDINATOR_NOT_AVAILABLE */
        int16_t err = verr ? coord_append_error(verr)
                           : coord_txn_commit(req->broker->coord, q->group_id, v >= 3 ? q->member_id : KSTR_LIT(""),
                                              v >= 3 ? q->group_instance_id : KSTR_NULL,
                                              v >= 3 ? q->generation_id : -1, q->producer_id, q->producer_epoch,
                                              t->guard, t->parts, t->n, &t->op->ack);
        err = txn_commit_error(err, v);
        for (int32_t i = 0; err && i < t->n; i++)
            if (!t->parts[i].error)
                t->parts[i].error = err;
    }
    int32_t k = 0;
    for (int32_t x = 0; x < resp->topics.n; x++)
        for (int32_t p = 0; p < resp->topics.a[x].partitions.n; p++) {
            resp->topics.a[x].partitions.a[p].partition_index = t->parts[k].partition;
            resp->topics.a[x].partitions.a[p].error_code = t->parts[k].error;
            k++;
        }
    gop_run(t->op, api_commit_timeout_ms(req));
}

static bool txo_try(struct parked *pk, bool expired)
{
    struct txo *t = (struct txo *)pk;
    int16_t verr;
    if (txn_verify_done(t->job))
        verr = txn_verify_error(t->job, 0);
    else if (expired)
        verr = KERR_NOT_ENOUGH_REPLICAS; /* the client retries */
    else
        return false;
    t->op->req->cancel = NULL;
    txo_finish(t, verr);
    return true;
}

static void txo_cancel(struct request *req)
{
    struct txo *t = req->handler_state;
    park_stop(&t->pk);
    txn_verify_release(t->job);
    t->job = NULL;
}

void api_handle_txn_offset_commit(struct request *req)
{
    const txn_offset_commit_request_t *q = req->body;
    struct broker *b = req->broker;
    int16_t v = req->api_version;
    struct gop *op = gop_new(req, txn_commit_finish);
    txn_offset_commit_response_t *resp = arena_alloc(&req->arena, sizeof *resp);
    txn_offset_commit_response_init(resp);
    op->resp = resp;

    int32_t total = 0;
    for (int32_t t = 0; t < q->topics.n; t++)
        total += q->topics.a[t].partitions.n > 0 ? q->topics.a[t].partitions.n : 0;
    struct coord_commit *parts = arena_alloc(&req->arena, (size_t)(total + 1) * sizeof *parts);
    /* KafkaApis: the transactional id (WRITE; the producer id is implied
     * by it), then the group (READ), then each topic (READ) */
    int16_t group_err = 0;
    if (!authz_allowed(req, ACL_OP_WRITE, ACL_RES_TRANSACTIONAL_ID, q->transactional_id))
        group_err = KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
    else if (!authz_allowed(req, ACL_OP_READ, ACL_RES_GROUP, q->group_id))
        group_err = KERR_GROUP_AUTHORIZATION_FAILED;
    else if (group_id_empty(q->group_id))
        group_err = KERR_INVALID_GROUP_ID;

    struct mimage *img = controller_image(b->controller);
    resp->topics.a = txn_offset_commit_response_txn_offset_commit_response_topic_new_array(&req->arena, q->topics.n);
    resp->topics.n = q->topics.n > 0 ? q->topics.n : 0;
    int32_t k = 0;
    for (int32_t t = 0; t < resp->topics.n; t++) {
        const txn_offset_commit_request_txn_offset_commit_request_topic_t *rt = &q->topics.a[t];
        txn_offset_commit_response_txn_offset_commit_response_topic_t *ot = &resp->topics.a[t];
        ot->name = rt->name;
        int32_t np = rt->partitions.n > 0 ? rt->partitions.n : 0;
        ot->partitions.a = txn_offset_commit_response_txn_offset_commit_response_partition_new_array(&req->arena, np);
        ot->partitions.n = np;
        bool topic_ok = group_err || authz_allowed(req, ACL_OP_READ, ACL_RES_TOPIC, rt->name);
        const struct mi_topic *mt = mimage_topic(img, rt->name);
        for (int32_t p = 0; p < np; p++) {
            const txn_offset_commit_request_txn_offset_commit_request_partition_t *rp = &rt->partitions.a[p];
            struct coord_commit *c = &parts[k++];
            c->topic = rt->name;
            c->partition = rp->partition_index;
            c->offset = rp->committed_offset;
            c->leader_epoch = v >= 2 ? rp->committed_leader_epoch : -1;
            c->metadata = rp->committed_metadata;
            c->commit_ts = -1;
            c->error = group_err              ? group_err
                       : !topic_ok            ? KERR_TOPIC_AUTHORIZATION_FAILED
                       : !mt || !mi_topic_partition(mt, rp->partition_index) ? KERR_UNKNOWN_TOPIC_OR_PARTITION
                                                                              : 0;
        }
    }
    mimage_release(img);
    struct txo *t = arena_alloc(&req->arena, sizeof *t);
    memset(t, 0, sizeof *t);
    t->op = op;
    t->parts = parts;
    t->n = k;
    t->guard = PLOG_GUARD_UNCHECKED;
    bool any = false;
    for (int32_t i = 0; i < k && !any; i++)
        any = parts[i].error == 0;
    if (group_err || !any) {
        txo_finish(t, 0);
        return;
    }
    /* KIP-890: the coordinator runtime verifies a transactional write
     * whose producer has no open transaction in the partition yet */
    int32_t part = -1;
    if (b->cfg->transaction_partition_verification_enable && b->txn_coord &&
        coord_txn_verify_begin(b->coord, q->group_id, q->producer_id, q->producer_epoch, &t->guard, &part) &&
        t->guard != 0) {
        kstr_t topic = KSTR_LIT(COORD_OFFSETS_TOPIC);
        t->job = txn_verify_start(b->txn_coord, q->transactional_id, q->producer_id, q->producer_epoch, 1, &topic, &part);
        if (!txn_verify_done(t->job)) {
            req->handler_state = t;
            req->cancel = txo_cancel;
            park_init(&t->pk, req, txo_try);
            park_watch(&t->pk, park_key_object(t->job));
            park_start(&t->pk, api_commit_timeout_ms(req));
            return;
        }
    }
    txo_finish(t, t->job ? txn_verify_error(t->job, 0) : 0);
}

/* ------------------------------------------------------------------ */
/* OffsetFetch                                                         */

/* One group's answer: topics (NULL: all) of a v0-7 or v8+ request. The
 * caller's arrays are generic: this fills parallel topic/partition
 * lists, later copied into the version's shape. */
struct fetch_group {
    int16_t error;
    int32_t ntopics;
    kstr_t *topics;
    int32_t *nparts;
    struct coord_fetched **parts;
};

static void fetch_group(struct request *req, kstr_t group, bool all, bool stable, int32_t nt, const kstr_t *tnames,
                        const int32_t *const *tparts, const int32_t *tnparts, struct fetch_group *out)
{
    struct arena *a = &req->arena;
    memset(out, 0, sizeof *out);
    if (!authz_allowed(req, ACL_OP_DESCRIBE, ACL_RES_GROUP, group)) {
        out->error = KERR_GROUP_AUTHORIZATION_FAILED;
        return;
    }
    if (all) {
        struct coord_fetched *v;
        int32_t n;
        out->error = coord_fetch_offsets(req->broker->coord, group, NULL, 0, true, stable, a, &v, &n);
        if (out->error)
            return;
        /* group by topic (sorted already), leaving out topics the
         * principal may not describe (Kafka filters them) */
        out->topics = arena_alloc(a, (size_t)(n + 1) * sizeof *out->topics);
        out->nparts = arena_alloc(a, (size_t)(n + 1) * sizeof *out->nparts);
        out->parts = arena_alloc(a, (size_t)(n + 1) * sizeof *out->parts);
        for (int32_t i = 0; i < n;) {
            int32_t j = i;
            while (j < n && kstr_eq(v[j].topic, v[i].topic))
                j++;
            if (authz_allowed(req, ACL_OP_DESCRIBE, ACL_RES_TOPIC, v[i].topic)) {
                out->topics[out->ntopics] = v[i].topic;
                out->nparts[out->ntopics] = j - i;
                out->parts[out->ntopics] = &v[i];
                out->ntopics++;
            }
            i = j;
        }
        return;
    }
    int32_t total = 0;
    for (int32_t t = 0; t < nt; t++)
        total += tnparts[t];
    struct coord_fetched *v = arena_alloc(a, (size_t)(total + 1) * sizeof *v);
    out->topics = arena_alloc(a, (size_t)(nt + 1) * sizeof *out->topics);
    out->nparts = arena_alloc(a, (size_t)(nt + 1) * sizeof *out->nparts);
    out->parts = arena_alloc(a, (size_t)(nt + 1) * sizeof *out->parts);
    out->ntopics = nt;
    int32_t k = 0;
    for (int32_t t = 0; t < nt; t++) {
        out->topics[t] = tnames[t];
        out->nparts[t] = tnparts[t];
        out->parts[t] = &v[k];
        for (int32_t p = 0; p < tnparts[t]; p++) {
            v[k].topic = tnames[t];
            v[k].partition = tparts[t][p];
            k++;
        }
    }
    out->error = coord_fetch_offsets(req->broker->coord, group, v, total, false, stable, a, NULL, NULL);
    /* topics the principal may not describe */
    for (int32_t t = 0; t < nt; t++) {
        if (authz_allowed(req, ACL_OP_DESCRIBE, ACL_RES_TOPIC, tnames[t]))
            continue;
        for (int32_t p = 0; p < tnparts[t]; p++) {
            out->parts[t][p].offset = -1;
            out->parts[t][p].leader_epoch = -1;
            out->parts[t][p].metadata = KSTR_LIT("");
            out->parts[t][p].error = KERR_TOPIC_AUTHORIZATION_FAILED;
        }
    }
}

/* A partition's answer, the group's error applied as Kafka's
 * OffsetFetchRequest.getErrorResponse does for v0-7. */
static void fetched_or_error(const struct coord_fetched *f, int16_t gerr, int64_t *off, int32_t *epoch,
                             kstr_t *meta, int16_t *err)
{
    if (gerr) {
        *off = -1;
        *epoch = -1;
        *meta = KSTR_LIT("");
        *err = gerr;
        return;
    }
    *off = f->offset;
    *epoch = f->leader_epoch;
    *meta = f->metadata;
    *err = f->error;
}

void api_handle_offset_fetch(struct request *req)
{
    const offset_fetch_request_t *q = req->body;
    int16_t v = req->api_version;
    struct arena *a = &req->arena;
    offset_fetch_response_t resp;
    offset_fetch_response_init(&resp);
    /* require_stable (v7+): UNSTABLE_OFFSET_COMMIT for a partition an
     * open transaction holds an offset of (the client retries) */
    bool stable = v >= 7 && q->require_stable;
    if (v < 8) {
        bool all = v >= 2 && q->topics.n < 0;
        int32_t nt = q->topics.n > 0 ? q->topics.n : 0;
        kstr_t *names = arena_alloc(a, (size_t)(nt + 1) * sizeof *names);
        const int32_t **pl = arena_alloc(a, (size_t)(nt + 1) * sizeof *pl);
        int32_t *pn = arena_alloc(a, (size_t)(nt + 1) * sizeof *pn);
        for (int32_t t = 0; t < nt; t++) {
            names[t] = q->topics.a[t].name;
            pl[t] = q->topics.a[t].partition_indexes.a;
            pn[t] = q->topics.a[t].partition_indexes.n > 0 ? q->topics.a[t].partition_indexes.n : 0;
        }
        struct fetch_group fg;
        fetch_group(req, q->group_id, all, stable, nt, names, pl, pn, &fg);
        resp.error_code = fg.error;
        if (fg.error) {
            /* OffsetFetchRequest.getErrorResponse: every partition asked
             * for carries the group's error (v0-1 have no other place) */
            resp.topics.a = offset_fetch_response_offset_fetch_response_topic_new_array(a, all ? 0 : nt);
            resp.topics.n = all ? 0 : nt;
            for (int32_t t = 0; t < resp.topics.n; t++) {
                offset_fetch_response_offset_fetch_response_topic_t *ot = &resp.topics.a[t];
                ot->name = names[t];
                ot->partitions.a = offset_fetch_response_offset_fetch_response_partition_new_array(a, pn[t]);
                ot->partitions.n = pn[t];
                for (int32_t p = 0; p < pn[t]; p++) {
                    offset_fetch_response_offset_fetch_response_partition_t *op = &ot->partitions.a[p];
                    op->partition_index = pl[t][p];
                    fetched_or_error(NULL, fg.error, &op->committed_offset, &op->committed_leader_epoch,
                                     &op->metadata, &op->error_code);
                }
            }
            req_respond(req, &resp);
            return;
        }
        resp.topics.a = offset_fetch_response_offset_fetch_response_topic_new_array(a, fg.ntopics);
        resp.topics.n = fg.ntopics;
        for (int32_t t = 0; t < fg.ntopics; t++) {
            offset_fetch_response_offset_fetch_response_topic_t *ot = &resp.topics.a[t];
            ot->name = fg.topics[t];
            ot->partitions.a = offset_fetch_response_offset_fetch_response_partition_new_array(a, fg.nparts[t]);
            ot->partitions.n = fg.nparts[t];
            for (int32_t p = 0; p < fg.nparts[t]; p++) {
                offset_fetch_response_offset_fetch_response_partition_t *op = &ot->partitions.a[p];
                const struct coord_fetched *f = &fg.parts[t][p];
                op->partition_index = f->partition;
                fetched_or_error(f, 0, &op->committed_offset, &op->committed_leader_epoch, &op->metadata,
                                 &op->error_code);
            }
        }
        req_respond(req, &resp);
        return;
    }
    int32_t ng = q->groups.n > 0 ? q->groups.n : 0;
    resp.groups.a = offset_fetch_response_offset_fetch_response_group_new_array(a, ng);
    resp.groups.n = ng;
    for (int32_t g = 0; g < ng; g++) {
        const offset_fetch_request_offset_fetch_request_group_t *rg = &q->groups.a[g];
        offset_fetch_response_offset_fetch_response_group_t *og = &resp.groups.a[g];
        og->group_id = rg->group_id;
        bool all = rg->topics.n < 0;
        int32_t nt = rg->topics.n > 0 ? rg->topics.n : 0;
        kstr_t *names = arena_alloc(a, (size_t)(nt + 1) * sizeof *names);
        const int32_t **pl = arena_alloc(a, (size_t)(nt + 1) * sizeof *pl);
        int32_t *pn = arena_alloc(a, (size_t)(nt + 1) * sizeof *pn);
        for (int32_t t = 0; t < nt; t++) {
            names[t] = rg->topics.a[t].name;
            pl[t] = rg->topics.a[t].partition_indexes.a;
            pn[t] = rg->topics.a[t].partition_indexes.n > 0 ? rg->topics.a[t].partition_indexes.n : 0;
        }
        struct fetch_group fg;
        fetch_group(req, rg->group_id, all, stable, nt, names, pl, pn, &fg);
        if (!fg.error && v >= 9) /* a KIP-848 member's fetch: its epoch must be current */
            fg.error = coord_validate_fetch(req->broker->coord, rg->group_id, rg->member_id, rg->member_epoch);
        og->error_code = fg.error;
        if (fg.error) {
            /* v8+: the group's error alone, as Kafka answers it */
            og->topics.n = 0;
            continue;
        }
        og->topics.a = offset_fetch_response_offset_fetch_response_topics_new_array(a, fg.ntopics);
        og->topics.n = fg.ntopics;
        for (int32_t t = 0; t < fg.ntopics; t++) {
            offset_fetch_response_offset_fetch_response_topics_t *ot = &og->topics.a[t];
            ot->name = fg.topics[t];
            ot->partitions.a = offset_fetch_response_offset_fetch_response_partitions_new_array(a, fg.nparts[t]);
            ot->partitions.n = fg.nparts[t];
            for (int32_t p = 0; p < fg.nparts[t]; p++) {
                offset_fetch_response_offset_fetch_response_partitions_t *op = &ot->partitions.a[p];
                const struct coord_fetched *f = &fg.parts[t][p];
                op->partition_index = f->partition;
                fetched_or_error(f, 0, &op->committed_offset, &op->committed_leader_epoch, &op->metadata,
                                 &op->error_code);
            }
        }
    }
    req_respond(req, &resp);
}

/* ------------------------------------------------------------------ */
/* OffsetDelete                                                        */

static void offset_delete_finish(struct gop *op, int16_t err)
{
    offset_delete_response_t *resp = op->resp;
    if (err && !resp->error_code) {
        resp->error_code = err;
        resp->topics.n = 0;
    }
    req_respond(op->req, resp);
}

void api_handle_offset_delete(struct request *req)
{
    const offset_delete_request_t *q = req->body;
    struct arena *a = &req->arena;
    struct gop *op = gop_new(req, offset_delete_finish);
    offset_delete_response_t *resp = arena_alloc(a, sizeof *resp);
    offset_delete_response_init(resp);
    op->resp = resp;
    if (!authz_allowed(req, ACL_OP_DELETE, ACL_RES_GROUP, q->group_id)) {
        resp->error_code = KERR_GROUP_AUTHORIZATION_FAILED;
        req_respond(req, resp);
        return;
    }
    if (group_id_empty(q->group_id)) {
        resp->error_code = KERR_INVALID_GROUP_ID;
        req_respond(req, resp);
        return;
    }
    int32_t nt = q->topics.n > 0 ? q->topics.n : 0, total = 0;
    for (int32_t t = 0; t < nt; t++)
        total += q->topics.a[t].partitions.n > 0 ? q->topics.a[t].partitions.n : 0;
    kstr_t *topics = arena_alloc(a, (size_t)(total + 1) * sizeof *topics);
    int32_t *parts = arena_alloc(a, (size_t)(total + 1) * sizeof *parts);
    int16_t *errs = arena_alloc(a, (size_t)(total + 1) * sizeof *errs);
    struct mimage *img = controller_image(req->broker->controller);
    int32_t k = 0;
    for (int32_t t = 0; t < nt; t++) {
        const offset_delete_request_offset_delete_request_topic_t *rt = &q->topics.a[t];
        bool ok = authz_allowed(req, ACL_OP_READ, ACL_RES_TOPIC, rt->name);
        const struct mi_topic *mt = mimage_topic(img, rt->name);
        for (int32_t p = 0; p < rt->partitions.n; p++) {
            topics[k] = rt->name;
            parts[k] = rt->partitions.a[p].partition_index;
            errs[k] = !ok                                        ? KERR_TOPIC_AUTHORIZATION_FAILED
                      : !mt || !mi_topic_partition(mt, parts[k]) ? KERR_UNKNOWN_TOPIC_OR_PARTITION
                                                                 : 0;
            k++;
        }
    }
    mimage_release(img);
    resp->error_code = coord_delete_offsets(req->broker->coord, q->group_id, k, topics, parts, errs, &op->ack);
    if (!resp->error_code) {
        resp->topics.a = offset_delete_response_offset_delete_response_topic_new_array(a, nt);
        resp->topics.n = nt;
        k = 0;
        for (int32_t t = 0; t < nt; t++) {
            const offset_delete_request_offset_delete_request_topic_t *rt = &q->topics.a[t];
            offset_delete_response_offset_delete_response_topic_t *ot = &resp->topics.a[t];
            ot->name = rt->name;
            int32_t np = rt->partitions.n > 0 ? rt->partitions.n : 0;
            ot->partitions.a = offset_delete_response_offset_delete_response_partition_new_array(a, np);
            ot->partitions.n = np;
            for (int32_t p = 0; p < np; p++) {
                ot->partitions.a[p].partition_index = parts[k];
                ot->partitions.a[p].error_code = errs[k];
                k++;
            }
        }
    }
    gop_run(op, api_commit_timeout_ms(req));
}
