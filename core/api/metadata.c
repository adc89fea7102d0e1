/* Metadata (v0-12): brokers, cluster and controller ids, and topics with
 * their partitions, as Kafka's KafkaApis.handleTopicMetadataRequest and
 * KRaftMetadataCache answer them. On the active controller a request
 * that auto-creates topics parks until the creations are committed
 * (net/park.h: the worker goes on serving), so a created topic is
 * answered with its real metadata; elsewhere the creation is forwarded
 * and the client hears LEADER_NOT_AVAILABLE until it shows up, as from
 * Kafka. */
#include <stdio.h>
#include <string.h>

#include "api/forward.h"
#include "api/handlers.h"
#include "api/request.h"
#include "net/conn.h"
#include "auth/authz.h"
#include "broker.h"
#include "config.h"
#include "controller/controller.h"
#include "proto/gen/metadata_request.h"
#include "proto/gen/metadata_response.h"
#include "proto/kerr.h"
#include "util/slog.h"

/* Kafka's AclEntry.supportedOperations. */
static const enum acl_op topic_ops[] = {ACL_OP_READ,   ACL_OP_WRITE, ACL_OP_CREATE,           ACL_OP_DESCRIBE,
                                        ACL_OP_DELETE, ACL_OP_ALTER, ACL_OP_DESCRIBE_CONFIGS, ACL_OP_ALTER_CONFIGS};
static const enum acl_op cluster_ops[] = {ACL_OP_CREATE,         ACL_OP_CLUSTER_ACTION,   ACL_OP_DESCRIBE_CONFIGS,
                                          ACL_OP_ALTER_CONFIGS,  ACL_OP_IDEMPOTENT_WRITE, ACL_OP_ALTER,
                                          ACL_OP_DESCRIBE};

/* Kafka's AuthHelper.authorizedOperations: one bit (1 << op code) per
 * supported operation the principal is allowed. */
static int32_t authorized_ops(const struct request *req, enum acl_resource type, kstr_t name)
{
    const enum acl_op *ops = type == ACL_RES_CLUSTER ? cluster_ops : topic_ops;
    size_t n = type == ACL_RES_CLUSTER ? sizeof cluster_ops / sizeof *ops : sizeof topic_ops / sizeof *ops;
    uint32_t bits = 0;
    for (size_t i = 0; i < n; i++)
        if (authz_filter(req, ops[i], type, name))
            bits |= 1u << ops[i];
    return (int32_t)bits;
}

/* Kafka's Topic.isValid (the messages are the controller's business). */
static bool topic_name_valid(kstr_t s)
{
    if (s.len <= 0 || s.len > 249 || (s.len == 1 && s.p[0] == '.') ||
        (s.len == 2 && s.p[0] == '.' && s.p[1] == '.'))
        return false;
    for (int32_t i = 0; i < s.len; i++) {
        char c = s.p[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-'))
            return false;
    }
    return true;
}

struct md_ctx {
    struct request *req;
    int16_t v;
    metadata_response_t *resp;
    int32_t cap;
    /* Images whose memory the response points into; released after the
     * response is encoded. Auto-creation adds newer ones. */
    struct mimage **imgs;
    int32_t nimgs, capimgs;
    /* per requested topic: how its auto-creation went (NULL: not tried) */
    int16_t *create_err;
};

static metadata_response_metadata_response_topic_t *add_topic(struct md_ctx *x)
{
    if (x->resp->topics.n == x->cap) {
        int32_t ncap = x->cap ? 2 * x->cap : 8;
        metadata_response_metadata_response_topic_t *a =
            metadata_response_metadata_response_topic_new_array(&x->req->arena, ncap);
        if (x->resp->topics.n)
            memcpy(a, x->resp->topics.a, (size_t)x->resp->topics.n * sizeof *a);
        x->resp->topics.a = a;
        x->cap = ncap;
    }
    metadata_response_metadata_response_topic_t *t = &x->resp->topics.a[x->resp->topics.n++];
    metadata_response_metadata_response_topic_init(t);
    return t;
}

static struct mimage *hold(struct md_ctx *x, struct mimage *img)
{
    if (x->nimgs == x->capimgs) {
        int32_t ncap = x->capimgs ? 2 * x->capimgs : 4;
        struct mimage **a = arena_alloc(&x->req->arena, (size_t)ncap * sizeof *a);
        if (x->nimgs)
            memcpy(a, x->imgs, (size_t)x->nimgs * sizeof *a);
        x->imgs = a;
        x->capimgs = ncap;
    }
    x->imgs[x->nimgs++] = img;
    return img;
}

/* Kafka's maybeFilterAliveReplicas (v0 only filters). */
static int32_t filter_alive(struct md_ctx *x, const struct mimage *img, const int32_t *ids, int32_t n,
                            int32_t **out)
{
    if (x->v > 0) {
        *out = (int32_t *)ids;
        return n;
    }
    int32_t *a = arena_alloc(&x->req->arena, (size_t)(n > 0 ? n : 1) * sizeof *a);
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++)
        if (mimage_broker_alive(img, ids[i]))
            a[k++] = ids[i];
    *out = a;
    return k;
}

/* Kafka's KRaftMetadataCache.getPartitionMetadata. */
static void fill_topic(struct md_ctx *x, const struct mimage *img, const struct mi_topic *t,
                       metadata_response_metadata_response_topic_t *out)
{
    out->error_code = KERR_NONE;
    out->name = (kstr_t){t->name, t->name_len};
    out->topic_id = t->id;
    out->is_internal = t->internal;
    out->partitions.a =
        metadata_response_metadata_response_partition_new_array(&x->req->arena, t->npartitions);
    out->partitions.n = t->npartitions;
    for (int32_t i = 0; i < t->npartitions; i++) {
        const struct mi_partition *p = &t->partitions[i];
        metadata_response_metadata_response_partition_t *o = &out->partitions.a[i];
        o->partition_index = p->index;
        o->leader_epoch = p->leader_epoch;
        o->replica_nodes.n = filter_alive(x, img, p->replicas, p->nreplicas, &o->replica_nodes.a);
        o->isr_nodes.n = filter_alive(x, img, p->isr, p->nisr, &o->isr_nodes.a);
        int32_t noff = 0;
        for (int32_t r = 0; r < p->nreplicas; r++)
            noff += !mimage_broker_alive(img, p->replicas[r]);
        o->offline_replicas.a = arena_alloc(&x->req->arena, (size_t)(noff > 0 ? noff : 1) * sizeof(int32_t));
        o->offline_replicas.n = 0;
        for (int32_t r = 0; r < p->nreplicas; r++)
            if (!mimage_broker_alive(img, p->replicas[r]))
                o->offline_replicas.a[o->offline_replicas.n++] = p->replicas[r];
        if (!mimage_broker_alive(img, p->leader)) {
            o->error_code = KERR_LEADER_NOT_AVAILABLE;
            o->leader_id = -1;
        } else {
            o->leader_id = p->leader;
            o->error_code = (o->replica_nodes.n < p->nreplicas || o->isr_nodes.n < p->nisr)
                                ? KERR_REPLICA_NOT_AVAILABLE
                                : KERR_NONE;
        }
    }
}

static void error_topic(metadata_response_metadata_response_topic_t *out, int16_t code, kstr_t name,
                        bool internal)
{
    out->error_code = code;
    out->name = name;
    out->is_internal = internal;
    out->partitions.n = 0;
}

/* Whether this request may auto-create name: 0, or the error to answer
 * for it instead (Kafka's KafkaApis.getTopicMetadata gating). */
static int16_t create_refusal(struct md_ctx *x, const metadata_request_t *q, kstr_t name, bool *cluster_create,
                              int *cluster_create_known)
{
    struct broker *b = x->req->broker;
    bool allow = b->cfg->auto_create_topics_enable && (x->v < 4 || q->allow_auto_topic_creation);
    if (!allow)
        return topic_name_valid(name) ? KERR_UNKNOWN_TOPIC_OR_PARTITION : KERR_INVALID_TOPIC_EXCEPTION;
    if (!*cluster_create_known) {
        *cluster_create = authz_filter(x->req, ACL_OP_CREATE, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME);
        *cluster_create_known = 1;
    }
    if (!*cluster_create && !authz_allowed(x->req, ACL_OP_CREATE, ACL_RES_TOPIC, name))
        return KERR_TOPIC_AUTHORIZATION_FAILED;
    if (!topic_name_valid(name))
        return KERR_INVALID_TOPIC_EXCEPTION;
    return 0;
}

/* A topic named in the request (its index i) that the image lacks: say
 * why it cannot be created, or how its creation went. img may be
 * replaced by a newer image. */
static void missing_topic(struct md_ctx *x, const metadata_request_t *q, int32_t i, bool *cluster_create,
                          int *cluster_create_known, struct mimage **img,
                          metadata_response_metadata_response_topic_t *out)
{
    struct broker *b = x->req->broker;
    kstr_t name = q->topics.a[i].name;
    bool internal = mi_topic_name_is_internal(name.p, (size_t)(name.len > 0 ? name.len : 0));
    int16_t rc = create_refusal(x, q, name, cluster_create, cluster_create_known);
    if (!rc && x->create_err)
        rc = x->create_err[i];
    if (rc) {
        error_topic(out, rc, name, rc == KERR_INVALID_TOPIC_EXCEPTION ? false : internal);
        return;
    }
    *img = hold(x, controller_image(b->controller));
    const struct mi_topic *t = mimage_topic(*img, name);
    if (t)
        fill_topic(x, *img, t, out);
    else if (!controller_is_active(b->controller) || !x->create_err) /* being created (forwarded) */
        error_topic(out, KERR_LEADER_NOT_AVAILABLE, name, internal);
    else /* deleted again in between */
        error_topic(out, KERR_UNKNOWN_TOPIC_OR_PARTITION, name, internal);
}

static void respond(struct request *req, int16_t *create_err);

/* The auto-creations of one request, waited for together. */
struct md_create {
    int16_t *create_err; /* per requested topic: its creation's error */
    int32_t *topic_of;   /* per op: the requested topic's index */
};

static void created(struct request *req, void *arg, const int16_t *errs)
{
    struct md_create *mc = arg;
    const metadata_request_t *q = req->body;
    for (int32_t j = 0; errs && mc->topic_of[j] >= 0; j++)
        if (errs[j]) {
            kstr_t name = q->topics.a[mc->topic_of[j]].name;
            slog_warn("metadata: auto-creation of topic %.*s for %s failed: %s", (int)name.len, name.p, req_peer(req),
                      kerr_name(errs[j]));
            mc->create_err[mc->topic_of[j]] = errs[j];
        }
    respond(req, mc->create_err);
}

/* Starts the auto-creation of every requested topic the image lacks and
 * this request may create, and answers once they are committed (parked
 * meanwhile) or at once when none is pending. */
static void start_creations(struct request *req, const metadata_request_t *q)
{
    struct broker *b = req->broker;
    struct md_ctx x = {.req = req, .v = req->api_version};
    struct mimage *img = controller_image(b->controller);
    struct md_create *mc = arena_alloc(&req->arena, sizeof *mc);
    mc->create_err = arena_alloc(&req->arena, (size_t)q->topics.n * sizeof *mc->create_err);
    mc->topic_of = arena_alloc(&req->arena, (size_t)(q->topics.n + 1) * sizeof *mc->topic_of);
    struct ctl_op **ops = arena_alloc(&req->arena, (size_t)(q->topics.n + 1) * sizeof *ops);
    int32_t nops = 0;
    bool cluster_create = false;
    int cluster_create_known = 0;
    for (int32_t i = 0; i < q->topics.n; i++) {
        kstr_t name = q->topics.a[i].name;
        if (name.len < 0 || mimage_topic(img, name) || !authz_allowed(req, ACL_OP_DESCRIBE, ACL_RES_TOPIC, name) ||
            create_refusal(&x, q, name, &cluster_create, &cluster_create_known))
            continue;
        char msg[512];
        struct ctl_op *op = NULL;
        int rc = controller_auto_create_topic(b->controller, name, msg, sizeof msg, &op);
        if (rc != 0) {
            slog_warn("metadata: auto-creation of topic %.*s for %s failed: %s %s", (int)name.len, name.p,
                      req_peer(req), kerr_name((int16_t)rc), msg);
            mc->create_err[i] = (int16_t)rc;
        } else if (op) {
            mc->topic_of[nops] = i;
            ops[nops++] = op;
        }
    }
    mimage_release(img);
    mc->topic_of[nops] = -1;
    if (nops == 0)
        respond(req, mc->create_err);
    else
        api_wait_ops(req, ops, nops, 30000, created, mc);
}

/* Builds and sends the answer from the newest image. create_err: per
 * requested topic, how its auto-creation went (NULL: none was tried). */
static void respond(struct request *req, int16_t *create_err)
{
    const metadata_request_t *q = req->body;
    struct broker *b = req->broker;
    int16_t v = req->api_version;
    metadata_response_t resp;
    metadata_response_init(&resp);
    struct md_ctx x = {.req = req, .v = v, .resp = &resp, .create_err = create_err};
    bool all = q->topics.n < 0 || (v == 0 && q->topics.n == 0);

    /* Kafka refuses names left null and topic ids before v12 with
     * INVALID_REQUEST for every topic (MetadataRequest.getErrorResponse). */
    if (!all && v < 12) {
        bool bad = false;
        for (int32_t i = 0; i < q->topics.n && !bad; i++)
            bad = q->topics.a[i].name.len < 0 || !kuuid_is_zero(&q->topics.a[i].topic_id);
        if (bad) {
            for (int32_t i = 0; i < q->topics.n; i++) {
                metadata_response_metadata_response_topic_t *t = add_topic(&x);
                t->error_code = KERR_INVALID_REQUEST;
                t->name = q->topics.a[i].name.len < 0 ? KSTR_LIT("") : q->topics.a[i].name;
                t->topic_id = q->topics.a[i].topic_id;
            }
            req_respond(req, &resp);
            return;
        }
    }

    struct mimage *img = hold(&x, controller_image(b->controller));
    /* Brokers: the live ones (KRaftMetadataCache.getAliveBrokerNodes). */
    resp.brokers.a = metadata_response_metadata_response_broker_new_array(&req->arena, img->nbrokers);
    for (int32_t i = 0; i < img->nbrokers; i++) {
        const struct mi_broker *br = &img->brokers[i];
        if (br->fenced)
            continue;
        metadata_response_metadata_response_broker_t *o = &resp.brokers.a[resp.brokers.n++];
        o->node_id = br->id;
        const char *host;
        mi_broker_address(br, req->conn ? req->conn->listener : NULL, &host, &o->port);
        o->host = KSTR(host);
        o->rack = br->rack ? KSTR(br->rack) : KSTR_NULL;
    }
    resp.cluster_id = KSTR(b->cluster_id);
    /* KRaft brokers name a live broker as the controller (admin clients
     * send CreateTopics etc. there, and that broker forwards them to the
     * active controller): this one when it is live, so the answer never
     * names a controller that has just died. */
    resp.controller_id = mimage_broker_alive(img, b->node_id) ? b->node_id
                         : resp.brokers.n > 0                 ? resp.brokers.a[0].node_id
                                                              : -1;

    bool want_ops = v >= 8 && q->include_topic_authorized_operations;
    bool cluster_create = false;
    int cluster_create_known = 0;
    if (all) {
        for (int32_t i = 0; i < img->ntopics; i++) {
            const struct mi_topic *t = img->topics[i];
            kstr_t name = {t->name, t->name_len};
            if (!authz_filter(req, ACL_OP_DESCRIBE, ACL_RES_TOPIC, name))
                continue; /* all topics: the unauthorized ones are left out */
            metadata_response_metadata_response_topic_t *o = add_topic(&x);
            fill_topic(&x, img, t, o);
            if (want_ops)
                o->topic_authorized_operations = authorized_ops(req, ACL_RES_TOPIC, name);
        }
    } else {
        bool by_id = false;
        for (int32_t i = 0; i < q->topics.n && !by_id; i++)
            by_id = !kuuid_is_zero(&q->topics.a[i].topic_id);
        struct hmap seen;
        hmap_init(&seen);
        for (int32_t i = 0; i < q->topics.n; i++) {
            const metadata_request_metadata_request_topic_t *rt = &q->topics.a[i];
            if (by_id) {
                /* v12+: the ids decide; names are ignored (as Kafka). */
                if (kuuid_is_zero(&rt->topic_id) || hmap_get(&seen, rt->topic_id.b, 16))
                    continue;
                hmap_put(&seen, rt->topic_id.b, 16, (void *)1);
                const struct mi_topic *t = mimage_topic_by_id(img, &rt->topic_id);
                metadata_response_metadata_response_topic_t *o = add_topic(&x);
                if (!t) {
                    o->error_code = KERR_UNKNOWN_TOPIC_ID;
                    o->name = KSTR_NULL;
                    o->topic_id = rt->topic_id;
                    continue;
                }
                kstr_t name = {t->name, t->name_len};
                if (!authz_allowed(req, ACL_OP_DESCRIBE, ACL_RES_TOPIC, name)) {
                    /* Ids are not secret; names are. */
                    o->error_code = KERR_TOPIC_AUTHORIZATION_FAILED;
                    o->name = KSTR_NULL;
                    o->topic_id = rt->topic_id;
                    continue;
                }
                fill_topic(&x, img, t, o);
                if (want_ops)
                    o->topic_authorized_operations = authorized_ops(req, ACL_RES_TOPIC, name);
                continue;
            }
            kstr_t name = rt->name;
            /* A set in Kafka: each name is answered once. The map is
             * keyed by '/' + name so that "" is a key too. */
            if (name.len < 0)
                continue;
            size_t klen = (size_t)name.len;
            char *key = arena_alloc(&req->arena, klen + 1);
            key[0] = '/';
            memcpy(key + 1, name.p, klen);
            if (hmap_get(&seen, key, klen + 1))
                continue;
            hmap_put(&seen, key, klen + 1, (void *)1);
            metadata_response_metadata_response_topic_t *o = add_topic(&x);
            if (!authz_allowed(req, ACL_OP_DESCRIBE, ACL_RES_TOPIC, name)) {
                /* Existence is not disclosed: zero id, no partitions. */
                error_topic(o, KERR_TOPIC_AUTHORIZATION_FAILED, name, false);
                continue;
            }
            const struct mi_topic *t = mimage_topic(img, name);
            if (t)
                fill_topic(&x, img, t, o);
            else
                missing_topic(&x, q, i, &cluster_create, &cluster_create_known, &img, o);
            if (want_ops && o->error_code != KERR_TOPIC_AUTHORIZATION_FAILED)
                o->topic_authorized_operations = authorized_ops(req, ACL_RES_TOPIC, name);
        }
        hmap_free(&seen);
    }

    if (v >= 8 && v <= 10 && q->include_cluster_authorized_operations)
        resp.cluster_authorized_operations =
            authz_allowed(req, ACL_OP_DESCRIBE, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME)
                ? authorized_ops(req, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME)
                : 0;
    req_respond(req, &resp);
    for (int32_t i = 0; i < x.nimgs; i++)
        mimage_release(x.imgs[i]);
}

void api_handle_metadata(struct request *req)
{
    const metadata_request_t *q = req->body;
    int16_t v = req->api_version;
    bool all = q->topics.n < 0 || (v == 0 && q->topics.n == 0);
    /* Nothing to create when asking for all topics or by id; and a name
     * left null (refused with INVALID_REQUEST) creates nothing either. */
    bool skip = all;
    for (int32_t i = 0; !skip && i < q->topics.n; i++)
        skip = !kuuid_is_zero(&q->topics.a[i].topic_id) || q->topics.a[i].name.len < 0;
    if (skip)
        respond(req, NULL);
    else
        start_creations(req, q);
}
