/* AlterClientQuotas and DescribeClientQuotas, as Kafka's ControllerApis
 * and KafkaApis serve them: changes go to the active controller
 * (forwarded from a broker) as ClientQuotaRecords, descriptions come from
 * this node's image (Kafka's ClientQuotasImage.describe). Enforcement is
 * api/quota_mgr.c. */
#include <stdio.h>
#include <string.h>

#include "api/forward.h"
#include "api/handlers.h"
#include "api/request.h"
#include "auth/authz.h"
#include "broker.h"
#include "controller/controller.h"
#include "controller/image.h"
#include "proto/gen/alter_client_quotas_request.h"
#include "proto/gen/alter_client_quotas_response.h"
#include "proto/gen/describe_client_quotas_request.h"
#include "proto/gen/describe_client_quotas_response.h"
#include "proto/kerr.h"

/* ------------------------------------------------------------------ */
/* AlterClientQuotas                                                   */

struct alter_state {
    int16_t *errs;
    const char **msgs;
};

static void alter_answer(struct request *req, const struct alter_state *st, int16_t all_err)
{
    const alter_client_quotas_request_t *q = req->body;
    alter_client_quotas_response_t resp;
    alter_client_quotas_response_init(&resp);
    int32_t n = q->entries.n > 0 ? q->entries.n : 0;
    resp.entries.a = alter_client_quotas_response_entry_data_new_array(&req->arena, n);
    resp.entries.n = n;
    for (int32_t i = 0; i < n; i++) {
        const alter_client_quotas_request_entry_data_t *en = &q->entries.a[i];
        alter_client_quotas_response_entry_data_t *r = &resp.entries.a[i];
        int16_t e = st && st->errs[i] ? st->errs[i] : all_err;
        r->error_code = e;
        r->error_message = st && st->errs[i] && st->msgs[i] ? KSTR(st->msgs[i]) : KSTR_NULL;
        r->entity.a = alter_client_quotas_response_entity_data_new_array(&req->arena, en->entity.n);
        r->entity.n = en->entity.n > 0 ? en->entity.n : 0;
        for (int32_t k = 0; k < r->entity.n; k++) {
            r->entity.a[k].entity_type = en->entity.a[k].entity_type;
            r->entity.a[k].entity_name = en->entity.a[k].entity_name;
        }
    }
    req_respond(req, &resp);
}

static void alter_fail(struct request *req, int16_t err) { alter_answer(req, NULL, err); }

static void alter_done(struct request *req, void *arg, const int16_t *errs) { alter_answer(req, arg, errs[0]); }

void api_handle_alter_client_quotas(struct request *req)
{
    const alter_client_quotas_request_t *q = req->body;
    bool not_controller;
    if (api_should_forward(req, &not_controller)) {
        api_forward(req, 30000, alter_fail);
        return;
    }
    if (not_controller) {
        alter_fail(req, KERR_NOT_CONTROLLER);
        return;
    }
    if (!authz_allowed(req, ACL_OP_ALTER_CONFIGS, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME)) {
        alter_fail(req, KERR_CLUSTER_AUTHORIZATION_FAILED);
        return;
    }
    int32_t n = q->entries.n > 0 ? q->entries.n : 0;
    struct alter_state *st = arena_alloc(&req->arena, sizeof *st);
    st->errs = arena_alloc(&req->arena, (size_t)(n ? n : 1) * sizeof *st->errs);
    st->msgs = arena_alloc(&req->arena, (size_t)(n ? n : 1) * sizeof *st->msgs);
    struct ctl_op *op = NULL;
    int rc = controller_alter_client_quotas(req->broker->controller, q, &req->arena, st->errs, st->msgs, &op);
    if (rc) {
        alter_fail(req, (int16_t)rc);
        return;
    }
    api_wait_ops(req, &op, 1, 30000, alter_done, st);
}

/* ------------------------------------------------------------------ */
/* DescribeClientQuotas                                                */

enum { MATCH_EXACT = 0, MATCH_DEFAULT = 1, MATCH_SPECIFIED = 2 };

static void describe_fail(struct request *req, int16_t err, const char *msg)
{
    describe_client_quotas_response_t resp;
    describe_client_quotas_response_init(&resp);
    resp.error_code = err;
    resp.error_message = msg ? kstr_arena(&req->arena, msg) : KSTR_NULL;
    resp.entries.n = -1;
    resp.entries.a = NULL;
    req_respond(req, &resp);
}

/* One filter per entity type: unset, or what to match (EXACT: that
 * name; DEFAULT: the default entity; SPECIFIED: any entity of the type,
 * the default one included, as Kafka's ClientQuotasImage matches). */
struct want {
    bool set;
    int8_t match;
    kstr_t name;
};

static bool name_matches(const struct mi_quota_name *n, const struct want *w)
{
    if (!w->set)
        return true;
    switch (w->match) {
    case MATCH_EXACT: return n->kind == MI_QN_NAMED && kstr_eqc(w->name, n->name);
    case MATCH_DEFAULT: return n->kind == MI_QN_DEFAULT;
    default: return n->kind != MI_QN_ABSENT; /* any entity of the type, the default one too */
    }
}

void api_handle_describe_client_quotas(struct request *req)
{
    const describe_client_quotas_request_t *q = req->body;
    if (!authz_allowed(req, ACL_OP_DESCRIBE_CONFIGS, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME)) {
        describe_fail(req, KERR_CLUSTER_AUTHORIZATION_FAILED, NULL);
        return;
    }
    /* Kafka's ClientQuotasImage.describe: checks, then a scan */
    struct want w[3]; /* user, client-id, ip */
    memset(w, 0, sizeof w);
    int nwant = 0;
    for (int32_t i = 0; i < q->components.n; i++) {
        const describe_client_quotas_request_component_data_t *c = &q->components.a[i];
        int t = kstr_eqc(c->entity_type, "user") ? 0 : kstr_eqc(c->entity_type, "client-id") ? 1
                                                     : kstr_eqc(c->entity_type, "ip")        ? 2
                                                                                             : -1;
        char m[600];
        if (c->entity_type.len <= 0) {
            describe_fail(req, KERR_INVALID_REQUEST, "Invalid empty entity type.");
            return;
        }
        if (t >= 0 && w[t].set) {
            snprintf(m, sizeof m, "Entity type %.*s cannot appear more than once in the filter.",
                     (int)c->entity_type.len, c->entity_type.p);
            describe_fail(req, KERR_INVALID_REQUEST, m);
            return;
        }
        if (t < 0) {
            snprintf(m, sizeof m, "Unsupported entity type %.*s", (int)c->entity_type.len, c->entity_type.p);
            describe_fail(req, KERR_UNSUPPORTED_VERSION, m);
            return;
        }
        switch (c->match_type) {
        case MATCH_EXACT:
            if (c->match.len < 0) {
                describe_fail(req, KERR_INVALID_REQUEST,
                              "Request specified MATCH_TYPE_EXACT, but set match string to null.");
                return;
            }
            break;
        case MATCH_DEFAULT:
            if (c->match.len >= 0) {
                describe_fail(req, KERR_INVALID_REQUEST,
                              "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.");
                return;
            }
            break;
        case MATCH_SPECIFIED:
            if (c->match.len >= 0) {
                describe_fail(req, KERR_INVALID_REQUEST,
                              "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.");
                return;
            }
            break;
        default:
            snprintf(m, sizeof m, "Unknown match type %d", (int)c->match_type);
            describe_fail(req, KERR_INVALID_REQUEST, m);
            return;
        }
        w[t] = (struct want){true, c->match_type, c->match};
        nwant++;
    }
    if (w[2].set && (w[0].set || w[1].set)) {
        describe_fail(req, KERR_INVALID_REQUEST,
                      "Invalid entity filter component combination. IP filter component should not be used with "
                      "user or clientId filter component.");
        return;
    }
    struct mimage *img = controller_image(req->broker->controller);
    describe_client_quotas_response_t resp;
    describe_client_quotas_response_init(&resp);
    resp.entries.a = describe_client_quotas_response_entry_data_new_array(&req->arena, img->nquotas);
    resp.entries.n = 0;
    for (int32_t i = 0; i < img->nquotas; i++) {
        const struct mi_quota *mq = &img->quotas[i];
        const struct mi_quota_name *names[3] = {&mq->user, &mq->client_id, &mq->ip};
        static const char *const types[3] = {"user", "client-id", "ip"};
        int ncomp = 0;
        bool ok = true;
        for (int t = 0; t < 3 && ok; t++) {
            ncomp += names[t]->kind != MI_QN_ABSENT;
            ok = name_matches(names[t], &w[t]);
        }
        if (!ok || (q->strict && ncomp != nwant))
            continue;
        describe_client_quotas_response_entry_data_t *e = &resp.entries.a[resp.entries.n++];
        e->entity.a = describe_client_quotas_response_entity_data_new_array(&req->arena, ncomp);
        e->entity.n = 0;
        for (int t = 0; t < 3; t++) {
            if (names[t]->kind == MI_QN_ABSENT)
                continue;
            e->entity.a[e->entity.n].entity_type = KSTR(types[t]);
            e->entity.a[e->entity.n++].entity_name =
                names[t]->kind == MI_QN_NAMED ? kstr_arena(&req->arena, names[t]->name) : KSTR_NULL;
        }
        e->values.a = describe_client_quotas_response_value_data_new_array(&req->arena, MI_QUOTA_NKEYS);
        e->values.n = 0;
        for (int k = 0; k < MI_QUOTA_NKEYS; k++)
            if (mq->set & (1u << k)) {
                e->values.a[e->values.n].key = KSTR(mi_quota_key_name(k));
                e->values.a[e->values.n++].value = mq->values[k];
            }
    }
    /* the response is encoded now: the image's strings were copied */
    req_respond(req, &resp);
    mimage_release(img);
}
