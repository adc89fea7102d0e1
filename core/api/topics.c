/* CreateTopics (v0-7), DeleteTopics (v0-6), CreatePartitions (v0-3), as a
 * KRaft controller answers them (Kafka's ControllerApis in front of
 * ReplicationControlManager): duplicates, authorization, then the
 * controller's own checks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/forward.h"
#include "api/handlers.h"
#include "api/quota_mgr.h"
#include "api/request.h"
#include "auth/authz.h"
#include "broker.h"
#include "config.h"
#include "controller/controller.h"
#include "proto/gen/create_partitions_request.h"
#include "proto/gen/create_partitions_response.h"
#include "proto/gen/create_topics_request.h"
#include "proto/gen/create_topics_response.h"
#include "proto/gen/delete_topics_request.h"
#include "proto/gen/delete_topics_response.h"
#include "proto/kerr.h"
#include "topic_config.h"
#include "util/hmap.h"
#include "util/slog.h"

/* Kafka's default messages (Errors.message()), which ApiError(Errors)
 * puts in responses. */
#define MSG_TOPIC_AUTHORIZATION_FAILED "Topic authorization failed."
#define MSG_UNKNOWN_TOPIC_OR_PARTITION "This server does not host this topic-partition."
#define MSG_UNKNOWN_TOPIC_ID "This server does not host this topic ID."

/* An error message for the response: null when the controller gave none
 * (Kafka's ApiError.fromThrowable drops default messages). */

/* Copies a client-supplied name for a log line: printable ASCII as is,
 * anything else as \xNN, truncated to fit. */
static void escape_name(kstr_t n, char *out, size_t outlen)
{
    size_t o = 0;
    for (int32_t i = 0; i < n.len && o + 5 < outlen; i++) {
        unsigned char c = (unsigned char)n.p[i];
        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'')
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
    }
    out[o] = 0;
}

static kstr_t msg_or_null(struct request *req, const char *msg)
{
    return msg[0] ? kstr_arena(&req->arena, msg) : KSTR_NULL;
}

/* ------------------------------------------------------------------ */
/* Name sets keyed by "/" + name (so that "" is a key as well).        */

struct name_set {
    struct hmap m;
    struct arena *a;
};

static void ns_init(struct name_set *s, struct arena *a)
{
    hmap_init(&s->m);
    s->a = a;
}

static char *ns_key(struct name_set *s, kstr_t name, size_t *klen)
{
    size_t n = (size_t)(name.len > 0 ? name.len : 0);
    char *k = arena_alloc(s->a, n + 1);
    k[0] = '/';
    if (n)
        memcpy(k + 1, name.p, n);
    *klen = n + 1;
    return k;
}

static intptr_t ns_get(struct name_set *s, kstr_t name)
{
    size_t kl;
    char *k = ns_key(s, name, &kl);
    return (intptr_t)hmap_get(&s->m, k, kl);
}

static void ns_put(struct name_set *s, kstr_t name, intptr_t v)
{
    size_t kl;
    char *k = ns_key(s, name, &kl);
    hmap_put(&s->m, k, kl, (void *)v);
}

/* ------------------------------------------------------------------ */
/* CreateTopics                                                        */

static int kv_name_cmp(const void *a, const void *b)
{
    const create_topics_response_creatable_topic_configs_t *x = a, *y = b;
    int n = x->name.len < y->name.len ? x->name.len : y->name.len;
    int c = memcmp(x->name.p, y->name.p, (size_t)n);
    return c ? c : (x->name.len > y->name.len) - (x->name.len < y->name.len);
}

/* The v5+ answer: partitions, replication factor and every topic config
 * with its effective value and source, sorted by name (Kafka's
 * computeEffectiveTopicConfigs). */
static void fill_created(struct request *req, const create_topics_request_creatable_topic_t *t,
                         create_topics_response_creatable_topic_result_t *r)
{
    const struct samsa_config *cfg = req->broker->cfg;
    struct arena *a = &req->arena;
    if (t->assignments.n > 0) {
        r->num_partitions = t->assignments.n;
        r->replication_factor = (int16_t)t->assignments.a[0].broker_ids.n;
    } else {
        r->num_partitions = t->num_partitions == -1 ? cfg->num_partitions : t->num_partitions;
        r->replication_factor = t->replication_factor == -1 ? (int16_t)cfg->default_replication_factor
                                                            : t->replication_factor;
    }
    int32_t nc = t->configs.n > 0 ? t->configs.n : 0;
    struct topic_config_kv *kv = arena_alloc(a, (size_t)(nc ? nc : 1) * sizeof *kv);
    size_t nkv = 0;
    for (int32_t i = 0; i < nc; i++) {
        const char *k = kstr_dup(a, t->configs.a[i].name);
        size_t j;
        for (j = 0; j < nkv; j++)
            if (strcmp(kv[j].key, k) == 0)
                break;
        kv[j].key = k;
        kv[j].value = kstr_dup(a, t->configs.a[i].value);
        if (j == nkv)
            nkv++;
    }
    r->configs.a = create_topics_response_creatable_topic_configs_new_array(a, (int32_t)topic_config_defs_count);
    r->configs.n = 0;
    struct config_entry *e = arena_alloc(a, sizeof *e);
    for (size_t i = 0; i < topic_config_defs_count; i++) {
        topic_config_describe(cfg, kv, nkv, i, e);
        create_topics_response_creatable_topic_configs_t *o = &r->configs.a[r->configs.n++];
        o->name = kstr_arena(a, e->name);
        o->value = (e->sensitive || !e->value) ? KSTR_NULL : kstr_arena(a, e->value);
        o->read_only = e->read_only;
        o->config_source = (int8_t)e->source;
        o->is_sensitive = e->sensitive;
    }
    qsort(r->configs.a, (size_t)r->configs.n, sizeof *r->configs.a, kv_name_cmp);
}

/* One line per refused topic, as Kafka's controller logs its
 * CreateTopics results: a client's bad input is visible to the
 * operator. Names are escaped (they may hold any byte). */
static void log_refused(struct request *req, const create_topics_response_t *resp)
{
    for (int32_t i = 0; i < resp->topics.n; i++) {
        const create_topics_response_creatable_topic_result_t *r = &resp->topics.a[i];
        if (!r->error_code || r->error_code == KERR_TOPIC_ALREADY_EXISTS)
            continue;
        char name[128];
        escape_name(r->name, name, sizeof name);
        slog_info("CreateTopics from %s: topic '%s' refused: %s%s%.*s", req_peer(req), name,
                  kerr_name(r->error_code), r->error_message.len > 0 ? ": " : "",
                  r->error_message.len > 0 ? r->error_message.len : 0, r->error_message.p);
    }
}

/* Every topic answered with err (forwarding failed, not the controller). */
static void create_topics_fail(struct request *req, int16_t err)
{
    const create_topics_request_t *q = req->body;
    create_topics_response_t resp;
    create_topics_response_init(&resp);
    int32_t n = q->topics.n > 0 ? q->topics.n : 0;
    resp.topics.a = create_topics_response_creatable_topic_result_new_array(&req->arena, n);
    for (int32_t i = 0; i < n; i++) {
        create_topics_response_creatable_topic_result_t *r = &resp.topics.a[resp.topics.n++];
        r->name = q->topics.a[i].name;
        r->error_code = err;
        r->error_message = KSTR_NULL;
    }
    req_respond(req, &resp);
}

/* Proposals of a CreateTopics (or CreatePartitions, DeleteTopics): which
 * answer entry each one decides. */
struct pending_results {
    void *resp;
    int32_t *index;
    int n;
};

static void create_topics_finish(struct request *req, void *arg, const int16_t *errs)
{
    struct pending_results *pr = arg;
    create_topics_response_t *resp = pr->resp;
    for (int i = 0; i < pr->n; i++) {
        if (!errs[i])
            continue;
        create_topics_response_creatable_topic_result_t *r = &resp->topics.a[pr->index[i]];
        r->error_code = errs[i];
        r->error_message = KSTR_NULL;
        r->topic_id = (kuuid_t){{0}};
        r->num_partitions = -1;
        r->replication_factor = -1;
        r->configs.n = 0;
        r->topic_config_error_code = 0;
    }
    log_refused(req, resp);
    req_respond(req, resp);
}

void api_handle_create_topics(struct request *req)
{
    const create_topics_request_t *q = req->body;
    int16_t v = req->api_version;
    struct broker *b = req->broker;
    struct arena *a = &req->arena;
    bool not_controller;
    if (api_should_forward(req, &not_controller)) {
        api_forward(req, q->timeout_ms, create_topics_fail);
        return;
    }
    if (not_controller) {
        create_topics_fail(req, KERR_NOT_CONTROLLER);
        return;
    }
    bool validate_only = v >= 1 && q->validate_only;
    create_topics_response_t *respp = arena_alloc(a, sizeof *respp);
    create_topics_response_t resp;
    create_topics_response_init(&resp);
    int32_t n = q->topics.n > 0 ? q->topics.n : 0;
    resp.topics.a = create_topics_response_creatable_topic_result_new_array(a, n);
    struct ctl_op **ops = arena_alloc(a, (size_t)(n ? n : 1) * sizeof *ops);
    int32_t *opidx = arena_alloc(a, (size_t)(n ? n : 1) * sizeof *opidx);
    int nops = 0;

    struct name_set seen;
    ns_init(&seen, a);
    for (int32_t i = 0; i < n; i++)
        ns_put(&seen, q->topics.a[i].name, ns_get(&seen, q->topics.a[i].name) + 1);
    bool cluster_create = authz_filter(req, ACL_OP_CREATE, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME);
    /* controller_mutation_rate: strict from v6, as Kafka's ControllerApis */
    struct quota_mutation mq;
    quota_mutation_begin(req, v >= 6, &mq);

    for (int32_t i = 0; i < n; i++) {
        const create_topics_request_creatable_topic_t *t = &q->topics.a[i];
        intptr_t count = ns_get(&seen, t->name);
        if (count < 0)
            continue; /* answered already */
        ns_put(&seen, t->name, -1);
        create_topics_response_creatable_topic_result_t *r = &resp.topics.a[resp.topics.n++];
        r->name = t->name;
        r->error_message = KSTR_NULL;
        if (count > 1) {
            /* Kafka logs "Create topics request from client ... contains
             * multiple entries for the following topics" and answers: */
            r->error_code = KERR_INVALID_REQUEST;
            r->error_message = KSTR_LIT("Duplicate topic name.");
            continue;
        }
        if (kstr_eqc(t->name, "__cluster_metadata")) {
            r->error_code = KERR_INVALID_REQUEST;
            r->error_message = KSTR_LIT("Creation of internal topic __cluster_metadata is prohibited.");
            continue;
        }
        if (!cluster_create && !authz_allowed(req, ACL_OP_CREATE, ACL_RES_TOPIC, t->name)) {
            r->error_code = KERR_TOPIC_AUTHORIZATION_FAILED;
            r->error_message = KSTR_LIT("Authorization failed.");
            continue;
        }
        bool describable = authz_allowed(req, ACL_OP_DESCRIBE_CONFIGS, ACL_RES_TOPIC, t->name);
        if (quota_mutation_check(&mq)) {
            r->error_code = KERR_THROTTLING_QUOTA_EXCEEDED;
            r->error_message = KSTR_LIT("The throttling quota has been exceeded.");
            continue;
        }

        struct topic_spec spec;
        memset(&spec, 0, sizeof spec);
        spec.name = t->name;
        spec.num_partitions = t->num_partitions;
        spec.replication_factor = t->replication_factor;
        int32_t na = t->assignments.n > 0 ? t->assignments.n : 0;
        const int32_t **assign = arena_alloc(a, (size_t)(na ? na : 1) * sizeof *assign);
        int32_t *alen = arena_alloc(a, (size_t)(na ? na : 1) * sizeof *alen);
        int32_t *aidx = arena_alloc(a, (size_t)(na ? na : 1) * sizeof *aidx);
        for (int32_t j = 0; j < na; j++) {
            assign[j] = t->assignments.a[j].broker_ids.a;
            alen[j] = t->assignments.a[j].broker_ids.n > 0 ? t->assignments.a[j].broker_ids.n : 0;
            aidx[j] = t->assignments.a[j].partition_index;
        }
        spec.nassign = na;
        spec.assign = (const int32_t *const *)assign;
        spec.assign_len = alen;
        spec.assign_index = aidx;
        int32_t nc = t->configs.n > 0 ? t->configs.n : 0;
        kstr_t *keys = arena_alloc(a, (size_t)(nc ? nc : 1) * sizeof *keys);
        kstr_t *vals = arena_alloc(a, (size_t)(nc ? nc : 1) * sizeof *vals);
        for (int32_t j = 0; j < nc; j++) {
            keys[j] = t->configs.a[j].name;
            vals[j] = t->configs.a[j].value;
        }
        spec.nconfigs = nc;
        spec.config_keys = keys;
        spec.config_values = vals;

        char msg[1024];
        kuuid_t id;
        struct ctl_op *op = NULL;
        int rc = controller_create_topic(b->controller, &spec, validate_only, &id, msg, sizeof msg, &op);
        if (rc != 0) {
            r->error_code = (int16_t)rc;
            r->error_message = msg_or_null(req, msg);
            continue;
        }
        /* the partitions it creates count against the quota */
        quota_mutation_add(&mq, t->assignments.n > 0      ? (double)t->assignments.n
                                : t->num_partitions > 0 ? (double)t->num_partitions
                                                        : (double)b->cfg->num_partitions);
        if (op) {
            opidx[nops] = resp.topics.n - 1;
            ops[nops++] = op;
        }
        r->topic_id = id;
        if (describable) {
            fill_created(req, t, r);
        } else {
            r->topic_config_error_code = KERR_TOPIC_AUTHORIZATION_FAILED;
        }
    }
    hmap_free(&seen.m);
    resp.throttle_time_ms = mq.throttle_ms > INT32_MAX ? INT32_MAX : (int32_t)mq.throttle_ms;
    *respp = resp;
    struct pending_results *pr = arena_alloc(a, sizeof *pr);
    pr->resp = respp;
    pr->index = opidx;
    pr->n = nops;
    /* Answered when the records are committed (Kafka's controller
     * answers then too). */
    api_wait_ops(req, ops, nops, q->timeout_ms, create_topics_finish, pr);
}

/* ------------------------------------------------------------------ */
/* DeleteTopics                                                        */

struct del_ctx {
    struct request *req;
    delete_topics_response_t resp;
    int32_t cap;
};

static void del_result(struct del_ctx *x, kstr_t name, const kuuid_t *id, int16_t code, kstr_t msg)
{
    if (x->resp.responses.n == x->cap) {
        int32_t ncap = x->cap ? 2 * x->cap : 8;
        delete_topics_response_deletable_topic_result_t *na =
            delete_topics_response_deletable_topic_result_new_array(&x->req->arena, ncap);
        if (x->resp.responses.n)
            memcpy(na, x->resp.responses.a, (size_t)x->resp.responses.n * sizeof *na);
        x->resp.responses.a = na;
        x->cap = ncap;
    }
    delete_topics_response_deletable_topic_result_t *r = &x->resp.responses.a[x->resp.responses.n++];
    r->name = name;
    r->topic_id = id ? *id : (kuuid_t){{0}};
    r->error_code = code;
    r->error_message = msg;
}

/* A topic to delete, once resolved to an id and authorized. */
struct del_cand {
    kuuid_t id;
    kstr_t name;
    bool live;
    int32_t npartitions; /* what its deletion counts against controller_mutation_rate */
};

static void delete_topics_fail(struct request *req, int16_t err)
{
    const delete_topics_request_t *q = req->body;
    int16_t v = req->api_version;
    struct del_ctx x = {.req = req};
    delete_topics_response_init(&x.resp);
    int32_t n = v >= 6 ? q->topics.n : q->topic_names.n;
    for (int32_t i = 0; i < n; i++) {
        if (v >= 6)
            del_result(&x, q->topics.a[i].name, &q->topics.a[i].topic_id, err, KSTR_NULL);
        else
            del_result(&x, q->topic_names.a[i], NULL, err, KSTR_NULL);
    }
    req_respond(req, &x.resp);
}

static void delete_topics_finish(struct request *req, void *arg, const int16_t *errs)
{
    struct pending_results *pr = arg;
    struct del_ctx *x = pr->resp;
    for (int i = 0; i < pr->n; i++)
        if (errs[i]) {
            x->resp.responses.a[pr->index[i]].error_code = errs[i];
            x->resp.responses.a[pr->index[i]].error_message = KSTR_NULL;
        }
    req_respond(req, &x->resp);
}

void api_handle_delete_topics(struct request *req)
{
    const delete_topics_request_t *q = req->body;
    int16_t v = req->api_version;
    struct broker *b = req->broker;
    struct arena *a = &req->arena;
    bool not_controller;
    if (api_should_forward(req, &not_controller)) {
        api_forward(req, q->timeout_ms, delete_topics_fail);
        return;
    }
    if (not_controller) {
        delete_topics_fail(req, KERR_NOT_CONTROLLER);
        return;
    }
    struct del_ctx *xp = arena_alloc(a, sizeof *xp);
    xp->req = req;
    delete_topics_response_init(&xp->resp);
    int32_t n = v >= 6 ? q->topics.n : q->topic_names.n;
    if (n < 0)
        n = 0;

    if (!b->cfg->delete_topic_enable) {
        /* Kafka throws for the whole request: INVALID_REQUEST before v3. */
        int16_t code = v < 3 ? KERR_INVALID_REQUEST : KERR_TOPIC_DELETION_DISABLED;
        for (int32_t i = 0; i < n; i++) {
            if (v >= 6)
                del_result(xp, q->topics.a[i].name, &q->topics.a[i].topic_id, code, KSTR_NULL);
            else
                del_result(xp, q->topic_names.a[i], NULL, code, KSTR_NULL);
        }
        req_respond(req, &xp->resp);
        return;
    }

    /* ControllerApis.deleteTopics: names and ids provided, duplicates. */
    struct name_set names;
    ns_init(&names, a);
    kstr_t *name_order = arena_alloc(a, (size_t)(n ? n : 1) * sizeof *name_order);
    int32_t nnames = 0;
    struct hmap ids;
    hmap_init(&ids);
    kuuid_t *id_order = arena_alloc(a, (size_t)(n ? n : 1) * sizeof *id_order);
    int32_t nids = 0;
    for (int32_t i = 0; i < n; i++) {
        kstr_t name = v >= 6 ? q->topics.a[i].name : q->topic_names.a[i];
        kuuid_t id = v >= 6 ? q->topics.a[i].topic_id : (kuuid_t){{0}};
        bool zero = kuuid_is_zero(&id);
        if (name.len < 0 && zero) {
            del_result(xp, KSTR_NULL, NULL, KERR_INVALID_REQUEST,
                       KSTR_LIT("Neither topic name nor id were specified."));
        } else if (name.len < 0) {
            intptr_t c = (intptr_t)hmap_get(&ids, id.b, 16);
            if (!c)
                id_order[nids++] = id;
            hmap_put(&ids, id.b, 16, (void *)(c + 1));
        } else if (zero) {
            intptr_t c = ns_get(&names, name);
            if (!c)
                name_order[nnames++] = name;
            ns_put(&names, name, c + 1);
        } else {
            del_result(xp, name, &id, KERR_INVALID_REQUEST,
                       KSTR_LIT("You may not specify both topic name and topic id."));
        }
    }
    for (int32_t i = 0; i < nnames; i++)
        if (ns_get(&names, name_order[i]) > 1)
            del_result(xp, name_order[i], NULL, KERR_INVALID_REQUEST, KSTR_LIT("Duplicate topic name."));
    for (int32_t i = 0; i < nids; i++)
        if ((intptr_t)hmap_get(&ids, id_order[i].b, 16) > 1)
            del_result(xp, KSTR_NULL, &id_order[i], KERR_INVALID_REQUEST, KSTR_LIT("Duplicate topic id."));

    struct mimage *img = controller_image(b->controller);
    bool cluster_delete = authz_filter(req, ACL_OP_DELETE, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME);
    struct del_cand *cand = arena_alloc(a, (size_t)(n ? n : 1) * sizeof *cand);
    int32_t ncand = 0;

    /* By id: resolve, then authorize by the name found. */
    for (int32_t i = 0; i < nids; i++) {
        if ((intptr_t)hmap_get(&ids, id_order[i].b, 16) > 1)
            continue;
        const struct mi_topic *t = mimage_topic_by_id(img, &id_order[i]);
        if (!t) {
            del_result(xp, KSTR_NULL, &id_order[i], KERR_UNKNOWN_TOPIC_ID, KSTR_LIT(MSG_UNKNOWN_TOPIC_ID));
            continue;
        }
        kstr_t name = kstr_arena(a, t->name);
        bool deletable = cluster_delete || authz_allowed(req, ACL_OP_DELETE, ACL_RES_TOPIC, name);
        if (!deletable) {
            bool describable = cluster_delete || authz_allowed(req, ACL_OP_DESCRIBE, ACL_RES_TOPIC, name);
            del_result(xp, describable ? name : KSTR_NULL, &id_order[i], KERR_TOPIC_AUTHORIZATION_FAILED,
                       KSTR_LIT(MSG_TOPIC_AUTHORIZATION_FAILED));
            continue;
        }
        cand[ncand++] = (struct del_cand){t->id, name, true, t->npartitions};
    }
    /* By name. */
    for (int32_t i = 0; i < nnames; i++) {
        kstr_t name = name_order[i];
        if (ns_get(&names, name) > 1)
            continue;
        bool describable = cluster_delete || authz_allowed(req, ACL_OP_DESCRIBE, ACL_RES_TOPIC, name);
        const struct mi_topic *t = mimage_topic(img, name);
        if (!describable) {
            del_result(xp, name, NULL, KERR_TOPIC_AUTHORIZATION_FAILED, KSTR_LIT(MSG_TOPIC_AUTHORIZATION_FAILED));
        } else if (!t) {
            del_result(xp, name, NULL, KERR_UNKNOWN_TOPIC_OR_PARTITION,
                       KSTR_LIT(MSG_UNKNOWN_TOPIC_OR_PARTITION));
        } else if (cluster_delete || authz_allowed(req, ACL_OP_DELETE, ACL_RES_TOPIC, name)) {
            /* A name that maps to an id given too: Kafka answers the name
             * and drops both. */
            bool clash = (intptr_t)hmap_get(&ids, t->id.b, 16) > 1;
            for (int32_t j = 0; j < ncand && !clash; j++)
                if (cand[j].live && kuuid_eq(&cand[j].id, &t->id)) {
                    cand[j].live = false;
                    clash = true;
                }
            if (clash)
                del_result(xp, name, &t->id, KERR_INVALID_REQUEST,
                           KSTR_LIT("The provided topic name maps to an ID that was already supplied."));
            else
                cand[ncand++] = (struct del_cand){t->id, name, true, t->npartitions};
        } else {
            del_result(xp, name, NULL, KERR_TOPIC_AUTHORIZATION_FAILED, KSTR_LIT(MSG_TOPIC_AUTHORIZATION_FAILED));
        }
    }
    mimage_release(img);

    struct ctl_op **ops = arena_alloc(a, (size_t)(ncand ? ncand : 1) * sizeof *ops);
    int32_t *opidx = arena_alloc(a, (size_t)(ncand ? ncand : 1) * sizeof *opidx);
    int nops = 0;
    /* controller_mutation_rate: strict from v5, as Kafka's ControllerApis */
    struct quota_mutation mq;
    quota_mutation_begin(req, v >= 5, &mq);
    for (int32_t i = 0; i < ncand; i++) {
        if (!cand[i].live)
            continue;
        if (quota_mutation_check(&mq)) {
            del_result(xp, cand[i].name, &cand[i].id, KERR_THROTTLING_QUOTA_EXCEEDED,
                       KSTR_LIT("The throttling quota has been exceeded."));
            continue;
        }
        char msg[512];
        struct ctl_op *op = NULL;
        int rc = controller_delete_topic(b->controller, &cand[i].id, msg, sizeof msg, &op);
        if (rc == 0)
            quota_mutation_add(&mq, (double)cand[i].npartitions);
        del_result(xp, cand[i].name, &cand[i].id, (int16_t)rc, rc ? msg_or_null(req, msg) : KSTR_NULL);
        if (op) {
            opidx[nops] = xp->resp.responses.n - 1;
            ops[nops++] = op;
        }
    }
    hmap_free(&names.m);
    hmap_free(&ids);
    xp->resp.throttle_time_ms = mq.throttle_ms > INT32_MAX ? INT32_MAX : (int32_t)mq.throttle_ms;
    struct pending_results *pr = arena_alloc(a, sizeof *pr);
    pr->resp = xp;
    pr->index = opidx;
    pr->n = nops;
    api_wait_ops(req, ops, nops, q->timeout_ms, delete_topics_finish, pr);
}

/* ------------------------------------------------------------------ */
/* CreatePartitions                                                    */

static void create_partitions_fail(struct request *req, int16_t err)
{
    const create_partitions_request_t *q = req->body;
    create_partitions_response_t resp;
    create_partitions_response_init(&resp);
    int32_t n = q->topics.n > 0 ? q->topics.n : 0;
    resp.results.a = create_partitions_response_create_partitions_topic_result_new_array(&req->arena, n);
    for (int32_t i = 0; i < n; i++) {
        create_partitions_response_create_partitions_topic_result_t *r = &resp.results.a[resp.results.n++];
        r->name = q->topics.a[i].name;
        r->error_code = err;
        r->error_message = KSTR_NULL;
    }
    req_respond(req, &resp);
}

static void create_partitions_finish(struct request *req, void *arg, const int16_t *errs)
{
    struct pending_results *pr = arg;
    create_partitions_response_t *resp = pr->resp;
    for (int i = 0; i < pr->n; i++)
        if (errs[i]) {
            resp->results.a[pr->index[i]].error_code = errs[i];
            resp->results.a[pr->index[i]].error_message = KSTR_NULL;
        }
    req_respond(req, resp);
}

void api_handle_create_partitions(struct request *req)
{
    const create_partitions_request_t *q = req->body;
    struct broker *b = req->broker;
    struct arena *a = &req->arena;
    bool not_controller;
    if (api_should_forward(req, &not_controller)) {
        api_forward(req, q->timeout_ms, create_partitions_fail);
        return;
    }
    if (not_controller) {
        create_partitions_fail(req, KERR_NOT_CONTROLLER);
        return;
    }
    create_partitions_response_t *respp = arena_alloc(a, sizeof *respp);
    create_partitions_response_init(respp);
    int32_t n = q->topics.n > 0 ? q->topics.n : 0;
    respp->results.a = create_partitions_response_create_partitions_topic_result_new_array(a, n);
    struct ctl_op **ops = arena_alloc(a, (size_t)(n ? n : 1) * sizeof *ops);
    int32_t *opidx = arena_alloc(a, (size_t)(n ? n : 1) * sizeof *opidx);
    int nops = 0;
    struct name_set seen;
    ns_init(&seen, a);
    for (int32_t i = 0; i < n; i++)
        ns_put(&seen, q->topics.a[i].name, ns_get(&seen, q->topics.a[i].name) + 1);
    /* controller_mutation_rate: strict from v3, as Kafka's ControllerApis;
     * the partitions added count */
    struct quota_mutation mq;
    quota_mutation_begin(req, req->api_version >= 3, &mq);
    struct mimage *img = mq.s ? controller_image(b->controller) : NULL;
    for (int32_t i = 0; i < n; i++) {
        const create_partitions_request_create_partitions_topic_t *t = &q->topics.a[i];
        intptr_t count = ns_get(&seen, t->name);
        if (count < 0)
            continue;
        ns_put(&seen, t->name, -1);
        create_partitions_response_create_partitions_topic_result_t *r = &respp->results.a[respp->results.n++];
        r->name = t->name;
        r->error_message = KSTR_NULL;
        if (count > 1) {
            r->error_code = KERR_INVALID_REQUEST;
            r->error_message = KSTR_LIT("Duplicate topic name.");
            continue;
        }
        if (!authz_allowed(req, ACL_OP_ALTER, ACL_RES_TOPIC, t->name)) {
            r->error_code = KERR_TOPIC_AUTHORIZATION_FAILED;
            continue;
        }
        if (quota_mutation_check(&mq)) {
            r->error_code = KERR_THROTTLING_QUOTA_EXCEEDED;
            r->error_message = KSTR_LIT("The throttling quota has been exceeded.");
            continue;
        }
        const struct mi_topic *cur = img ? mimage_topic(img, t->name) : NULL;
        int32_t added = cur && t->count > cur->npartitions ? t->count - cur->npartitions : 0;
        int32_t na = t->assignments.n;
        const int32_t **assign = arena_alloc(a, (size_t)(na > 0 ? na : 1) * sizeof *assign);
        int32_t *alen = arena_alloc(a, (size_t)(na > 0 ? na : 1) * sizeof *alen);
        for (int32_t j = 0; j < na; j++) {
            assign[j] = t->assignments.a[j].broker_ids.a;
            alen[j] = t->assignments.a[j].broker_ids.n > 0 ? t->assignments.a[j].broker_ids.n : 0;
        }
        char msg[1024];
        struct ctl_op *op = NULL;
        int rc = controller_create_partitions(b->controller, t->name, t->count, na < 0 ? -1 : na,
                                              (const int32_t *const *)assign, alen, q->validate_only, msg,
                                              sizeof msg, &op);
        r->error_code = (int16_t)rc;
        r->error_message = rc ? msg_or_null(req, msg) : KSTR_NULL;
        if (rc == 0)
            quota_mutation_add(&mq, (double)added);
        if (op) {
            opidx[nops] = respp->results.n - 1;
            ops[nops++] = op;
        }
    }
    mimage_release(img);
    respp->throttle_time_ms = mq.throttle_ms > INT32_MAX ? INT32_MAX : (int32_t)mq.throttle_ms;
    hmap_free(&seen.m);
    struct pending_results *pr = arena_alloc(a, sizeof *pr);
    pr->resp = respp;
    pr->index = opidx;
    pr->n = nops;
    api_wait_ops(req, ops, nops, q->timeout_ms, create_partitions_finish, pr);
}
