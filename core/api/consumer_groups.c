/* The KIP-848 consumer group APIs: ConsumerGroupHeartbeat (68) and
 * ConsumerGroupDescribe (69), as Kafka's KafkaApis and
 * GroupCoordinatorService answer them. The group logic is
 * coord/consumer.c; an answer that depends on an append waits until it
 * is durable (flush.messages=1), like Produce. */
#include <string.h>

#include "api/dispatch.h"
#include "api/handlers.h"
#include "api/request.h"
#include "auth/authz.h"
#include "broker.h"
#include "config.h"
#include "controller/controller.h"
#include "coord/coord.h"
#include "net/park.h"
#include "proto/gen/consumer_group_describe_request.h"
#include "proto/gen/consumer_group_describe_response.h"
#include "proto/gen/consumer_group_heartbeat_request.h"
#include "proto/gen/consumer_group_heartbeat_response.h"
#include "proto/kerr.h"
#include "replica/partition.h"

/* A heartbeat answer waiting for its records to be durable. */
struct hb_op {
    struct parked pk; /* first */
    struct request *req;
    struct coord_ack ack;
    consumer_group_heartbeat_response_t resp;
};

static void hb_answer(struct hb_op *op, int st)
{
    if (st > 0) {
        op->resp.error_code = (int16_t)st;
        op->resp.error_message = KSTR_NULL;
        op->resp.assignment = NULL;
    }
    req_respond(op->req, &op->resp);
}

static bool hb_try_complete(struct parked *pk, bool expired)
{
    struct hb_op *op = (struct hb_op *)pk;
    int16_t err = 0;
    enum ack_state st = coord_ack_check(&op->ack, &err);
    if (st == ACK_WAIT) {
        if (!expired)
            return false;
        err = KERR_COORDINATOR_NOT_AVAILABLE;
    }
    hb_answer(op, err);
    return true;
}

static void hb_cancel(struct request *req)
{
    struct hb_op *op = req->handler_state;
    park_stop(&op->pk);
}

static void hb_error(struct request *req, int16_t err, const char *msg)
{
    consumer_group_heartbeat_response_t resp;
    consumer_group_heartbeat_response_init(&resp);
    resp.error_code = err;
    resp.error_message = msg ? KSTR(msg) : KSTR_NULL;
    req_respond(req, &resp);
}

void api_handle_consumer_group_heartbeat(struct request *req)
{
    const consumer_group_heartbeat_request_t *q = req->body;
    struct arena *a = &req->arena;
    if (!authz_allowed(req, ACL_OP_READ, ACL_RES_GROUP, q->group_id)) {
        hb_error(req, KERR_GROUP_AUTHORIZATION_FAILED, NULL);
        return;
    }
    if (q->group_id.len <= 0) {
        hb_error(req, KERR_INVALID_REQUEST, "GroupId can't be empty.");
        return;
    }
    /* Kafka authorizes READ on every subscribed topic name (KIP-848) */
    for (int32_t i = 0; i < q->subscribed_topic_names.n; i++) {
        if (!authz_allowed(req, ACL_OP_DESCRIBE, ACL_RES_TOPIC, q->subscribed_topic_names.a[i])) {
            hb_error(req, KERR_TOPIC_AUTHORIZATION_FAILED, NULL);
            return;
        }
    }
    struct ccg_hb_req rq = {
        .version = req->api_version,
        .member_id = q->member_id,
        .epoch = q->member_epoch,
        .instance_id = q->instance_id,
        .rack_id = q->rack_id,
        .rebalance_timeout_ms = q->rebalance_timeout_ms,
        .has_topics = q->subscribed_topic_names.n >= 0,
        .ntopics = q->subscribed_topic_names.n > 0 ? q->subscribed_topic_names.n : 0,
        .topics = q->subscribed_topic_names.a,
        .regex = q->subscribed_topic_regex,
        .assignor = q->server_assignor,
        .has_owned = q->topic_partitions.n >= 0,
        .nowned = q->topic_partitions.n > 0 ? q->topic_partitions.n : 0,
        .client_id = req->client_id.len >= 0 ? req->client_id : KSTR_LIT(""),
        .client_host = api_client_host(req),
    };
    kuuid_t *ot = arena_alloc(a, (size_t)(rq.nowned + 1) * sizeof *ot);
    const int32_t **op_ = arena_alloc(a, (size_t)(rq.nowned + 1) * sizeof *op_);
    int32_t *on = arena_alloc(a, (size_t)(rq.nowned + 1) * sizeof *on);
    for (int32_t i = 0; i < rq.nowned; i++) {
        ot[i] = q->topic_partitions.a[i].topic_id;
        op_[i] = q->topic_partitions.a[i].partitions.a;
        on[i] = q->topic_partitions.a[i].partitions.n > 0 ? q->topic_partitions.a[i].partitions.n : 0;
    }
    rq.owned_topics = ot;
    rq.owned_parts = op_;
    rq.owned_nparts = on;

    struct hb_op *op = arena_alloc(a, sizeof *op);
    memset(op, 0, sizeof *op);
    op->req = req;
    struct ccg_hb_resp r;
    int16_t err = coord_consumer_heartbeat(req->broker->coord, q->group_id, &rq, a, &r, &op->ack);
    consumer_group_heartbeat_response_t *resp = &op->resp;
    consumer_group_heartbeat_response_init(resp);
    if (err) {
        hb_error(req, err, NULL);
        return;
    }
    resp->error_code = r.error;
    resp->error_message = r.message ? KSTR(r.message) : KSTR_NULL;
    if (!r.error) {
        resp->member_id = r.member_id;
        resp->member_epoch = r.epoch;
        resp->heartbeat_interval_ms = r.heartbeat_interval_ms;
        if (r.has_assignment) {
            consumer_group_heartbeat_response_assignment_t *as = arena_alloc(a, sizeof *as);
            consumer_group_heartbeat_response_assignment_init(as);
            int32_t nt = 0;
            for (int32_t i = 0; i < r.nassignment; i++)
                if (i == 0 || !kuuid_eq(&r.assignment[i].topic, &r.assignment[i - 1].topic))
                    nt++;
            as->topic_partitions.a = consumer_group_heartbeat_response_topic_partitions_new_array(a, nt);
            as->topic_partitions.n = nt;
            int32_t t = -1;
            for (int32_t i = 0; i < r.nassignment;) {
                int32_t j = i;
                while (j < r.nassignment && kuuid_eq(&r.assignment[j].topic, &r.assignment[i].topic))
                    j++;
                t++;
                as->topic_partitions.a[t].topic_id = r.assignment[i].topic;
                as->topic_partitions.a[t].partitions.a = arena_alloc(a, (size_t)(j - i) * sizeof(int32_t));
                as->topic_partitions.a[t].partitions.n = j - i;
                for (int32_t k = i; k < j; k++)
                    as->topic_partitions.a[t].partitions.a[k - i] = r.assignment[k].part;
                i = j;
            }
            resp->assignment = as;
        }
    } else {
        resp->member_id = KSTR_NULL;
        resp->member_epoch = 0;
    }
    int16_t ack_err = 0;
    if (coord_ack_check(&op->ack, &ack_err) != ACK_WAIT) {
        hb_answer(op, ack_err);
        return;
    }
    req->handler_state = op;
    req->cancel = hb_cancel;
    park_init(&op->pk, req, hb_try_complete);
    api_watch_coord_ack(&op->pk, &op->ack);
    park_start(&op->pk, api_commit_timeout_ms(req));
}

/* Kafka's AclEntry.supportedOperations for GROUP, as a bit set. */
static int32_t group_authorized_ops(struct request *req, kstr_t group)
{
    static const enum acl_op ops[] = {ACL_OP_READ, ACL_OP_DESCRIBE, ACL_OP_DELETE};
    uint32_t bits = 0;
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (authz_filter(req, ops[i], ACL_RES_GROUP, group))
            bits |= 1u << ops[i];
    return (int32_t)bits;
}

static void describe_assignment(struct arena *a, const struct mimage *img, const struct ctp *v, int32_t n,
                                consumer_group_describe_response_assignment_t *out)
{
    consumer_group_describe_response_assignment_init(out);
    int32_t nt = 0;
    for (int32_t i = 0; i < n; i++)
        if (i == 0 || !kuuid_eq(&v[i].topic, &v[i - 1].topic))
            nt++;
    out->topic_partitions.a = consumer_group_describe_response_topic_partitions_new_array(a, nt);
    out->topic_partitions.n = nt;
    int32_t t = -1;
    for (int32_t i = 0; i < n;) {
        int32_t j = i;
        while (j < n && kuuid_eq(&v[j].topic, &v[i].topic))
            j++;
        t++;
        consumer_group_describe_response_topic_partitions_t *tp = &out->topic_partitions.a[t];
        tp->topic_id = v[i].topic;
        const struct mi_topic *mt = img ? mimage_topic_by_id(img, &v[i].topic) : NULL;
        tp->topic_name = mt ? kstr_arena(a, mt->name) : KSTR_LIT("");
        tp->partitions.a = arena_alloc(a, (size_t)(j - i) * sizeof(int32_t));
        tp->partitions.n = j - i;
        for (int32_t k = i; k < j; k++)
            tp->partitions.a[k - i] = v[k].part;
        i = j;
    }
}

void api_handle_consumer_group_describe(struct request *req)
{
    const consumer_group_describe_request_t *q = req->body;
    struct arena *a = &req->arena;
    consumer_group_describe_response_t resp;
    consumer_group_describe_response_init(&resp);
    int32_t n = q->group_ids.n > 0 ? q->group_ids.n : 0;
    resp.groups.a = consumer_group_describe_response_described_group_new_array(a, n);
    resp.groups.n = n;
    struct mimage *img = controller_image(req->broker->controller);
    for (int32_t i = 0; i < n; i++) {
        kstr_t gid = q->group_ids.a[i];
        consumer_group_describe_response_described_group_t *o = &resp.groups.a[i];
        o->group_id = gid;
        if (!authz_allowed(req, ACL_OP_DESCRIBE, ACL_RES_GROUP, gid)) {
            o->error_code = KERR_GROUP_AUTHORIZATION_FAILED;
            continue;
        }
        struct coord_ccg_desc d;
        int16_t err = coord_consumer_describe(req->broker->coord, gid, a, &d);
        if (err || d.error) {
            o->error_code = err ? err : d.error;
            o->error_message = !err && d.message ? KSTR(d.message) : KSTR_NULL;
            continue;
        }
        o->group_state = d.state;
        o->group_epoch = d.epoch;
        o->assignment_epoch = d.assign_epoch;
        o->assignor_name = d.assignor;
        o->members.a = consumer_group_describe_response_member_new_array(a, d.nmembers);
        o->members.n = d.nmembers;
        for (int32_t k = 0; k < d.nmembers; k++) {
            const struct coord_ccg_member_desc *md = &d.members[k];
            consumer_group_describe_response_member_t *m = &o->members.a[k];
            m->member_id = md->member_id;
            m->instance_id = md->instance_id;
            m->rack_id = md->rack_id;
            m->member_epoch = md->epoch;
            m->client_id = md->client_id;
            m->client_host = md->client_host;
            m->subscribed_topic_names.a = md->topics;
            m->subscribed_topic_names.n = md->ntopics;
            m->subscribed_topic_regex = md->regex;
            describe_assignment(a, img, md->assigned, md->nassigned, &m->assignment);
            describe_assignment(a, img, md->target, md->ntarget, &m->target_assignment);
        }
        if (q->include_authorized_operations)
            o->authorized_operations = group_authorized_ops(req, gid);
    }
    mimage_release(img);
    req_respond(req, &resp);
}
