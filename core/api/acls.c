/* CreateAcls, DescribeAcls, DeleteAcls (Kafka's AclApis). Create and
 * Delete change the metadata log: they go to the active controller
 * (forwarded, as CreateTopics is) and are answered once committed;
 * Describe reads this node's image. All three need the built-in ACL
 * authorizer in authorizer.class.name (SECURITY_DISABLED without it),
 * ALTER on the cluster for Create and Delete, DESCRIBE for Describe. */
#include <string.h>

#include "api/forward.h"
#include "api/handlers.h"
#include "api/request.h"
#include "auth/authz.h"
#include "broker.h"
#include "controller/controller.h"
#include "proto/gen/create_acls_request.h"
#include "proto/gen/create_acls_response.h"
#include "proto/gen/delete_acls_request.h"
#include "proto/gen/delete_acls_response.h"
#include "proto/gen/describe_acls_request.h"
#include "proto/gen/describe_acls_response.h"
#include "proto/kerr.h"

#define ACL_TIMEOUT_MS 30000

static const char *const no_authorizer = "No Authorizer is configured.";
static const char *const cluster_denied = "Cluster authorization failed.";

/* ------------------------------------------------------------------ */
/* CreateAcls                                                          */

struct create_state {
    int16_t *errs;
    char **msgs;
};

static void create_answer(struct request *req, const int16_t *errs, char *const *msgs, int16_t all_err,
                          const char *all_msg)
{
    const create_acls_request_t *q = req->body;
    int32_t n = q->creations.n > 0 ? q->creations.n : 0;
    create_acls_response_t resp;
    create_acls_response_init(&resp);
    resp.results.a = create_acls_response_acl_creation_result_new_array(&req->arena, n);
    resp.results.n = n;
    for (int32_t i = 0; i < n; i++) {
        int16_t e = errs && errs[i] ? errs[i] : all_err;
        const char *m = errs && errs[i] ? (msgs ? msgs[i] : NULL) : (all_err ? all_msg : NULL);
        resp.results.a[i].error_code = e;
        resp.results.a[i].error_message = m ? kstr_arena(&req->arena, m) : KSTR_NULL;
    }
    req_respond(req, &resp);
}

static void create_fail(struct request *req, int16_t err)
{
    create_answer(req, NULL, NULL, err, err == KERR_CLUSTER_AUTHORIZATION_FAILED ? cluster_denied : NULL);
}

static void create_done(struct request *req, void *arg, const int16_t *errs)
{
    struct create_state *st = arg;
    create_answer(req, st->errs, st->msgs, errs[0], NULL);
}

void api_handle_create_acls(struct request *req)
{
    const create_acls_request_t *q = req->body;
    if (!authz_acl_enabled()) {
        create_answer(req, NULL, NULL, KERR_SECURITY_DISABLED, no_authorizer);
        return;
    }
    /* authorized by the controller, which a forwarded request reaches
     * in an envelope naming the client */
    bool not_controller;
    if (api_should_forward(req, &not_controller)) {
        api_forward(req, ACL_TIMEOUT_MS, create_fail);
        return;
    }
    if (not_controller) {
        create_fail(req, KERR_NOT_CONTROLLER);
        return;
    }
    if (!authz_allowed(req, ACL_OP_ALTER, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME)) {
        create_fail(req, KERR_CLUSTER_AUTHORIZATION_FAILED);
        return;
    }
    struct arena *a = &req->arena;
    int32_t n = q->creations.n > 0 ? q->creations.n : 0;
    struct controller_acl *in = arena_alloc(a, (size_t)(n ? n : 1) * sizeof *in);
    for (int32_t i = 0; i < n; i++) {
        const create_acls_request_acl_creation_t *c = &q->creations.a[i];
        in[i] = (struct controller_acl){.resource_type = c->resource_type,
                                        .pattern_type = c->resource_pattern_type,
                                        .operation = c->operation,
                                        .permission = c->permission_type,
                                        .resource_name = c->resource_name,
                                        .principal = c->principal,
                                        .host = c->host};
    }
    struct create_state *st = arena_alloc(a, sizeof *st);
    st->errs = arena_alloc(a, (size_t)(n ? n : 1) * sizeof *st->errs);
    st->msgs = arena_alloc(a, (size_t)(n ? n : 1) * sizeof *st->msgs);
    struct ctl_op *op = NULL;
    int rc = controller_create_acls(req->broker->controller, in, n, st->errs, st->msgs, a, &op);
    if (rc) {
        create_fail(req, (int16_t)rc);
        return;
    }
    api_wait_ops(req, &op, 1, ACL_TIMEOUT_MS, create_done, st);
}

/* ------------------------------------------------------------------ */
/* DescribeAcls                                                        */

static void describe_fail(struct request *req, int16_t err, const char *msg)
{
    describe_acls_response_t resp;
    describe_acls_response_init(&resp);
    resp.error_code = err;
    resp.error_message = msg ? kstr_arena(&req->arena, msg) : KSTR_NULL;
    req_respond(req, &resp);
}

void api_handle_describe_acls(struct request *req)
{
    const describe_acls_request_t *q = req->body;
    if (!authz_allowed(req, ACL_OP_DESCRIBE, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME)) {
        describe_fail(req, KERR_CLUSTER_AUTHORIZATION_FAILED, cluster_denied);
        return;
    }
    if (!authz_acl_enabled()) {
        describe_fail(req, KERR_SECURITY_DISABLED, "No Authorizer is configured on the broker");
        return;
    }
    struct controller_acl f = {.resource_type = q->resource_type_filter,
                               .pattern_type = q->pattern_type_filter,
                               .operation = q->operation,
                               .permission = q->permission_type,
                               .resource_name = q->resource_name_filter,
                               .principal = q->principal_filter,
                               .host = q->host_filter};
    const char *msg = NULL;
    int16_t err = controller_acl_filter_check(&f, &msg);
    if (err) {
        describe_fail(req, err, msg);
        return;
    }
    struct arena *a = &req->arena;
    struct mimage *img = controller_image(req->broker->controller);
    const struct mi_acls *set = img->acls;
    int32_t total = set ? set->n : 0, nres = 0, nacl = 0;
    /* the set is sorted by resource: one pass groups each resource's ACLs */
    for (int32_t i = 0; i < total; i++)
        nacl += controller_acl_filter_match(&f, &set->a[i]);
    describe_acls_response_t resp;
    describe_acls_response_init(&resp);
    resp.resources.a = describe_acls_response_describe_acls_resource_new_array(a, nacl);
    describe_acls_response_acl_description_t *d = describe_acls_response_acl_description_new_array(a, nacl);
    describe_acls_response_describe_acls_resource_t *cur = NULL;
    const struct mi_acl *first = NULL; /* of cur's resource */
    for (int32_t i = 0; i < total; i++) {
        const struct mi_acl *x = &set->a[i];
        if (!controller_acl_filter_match(&f, x))
            continue;
        if (!first || first->resource_type != x->resource_type || first->pattern_type != x->pattern_type ||
            strcmp(first->resource_name, x->resource_name) != 0) {
            first = x;
            cur = &resp.resources.a[nres++];
            cur->resource_type = x->resource_type;
            cur->pattern_type = x->pattern_type;
            cur->resource_name = kstr_arena(a, x->resource_name);
            cur->acls.a = d;
            cur->acls.n = 0;
        }
        describe_acls_response_acl_description_t *e = &cur->acls.a[cur->acls.n++];
        e->principal = kstr_arena(a, x->principal);
        e->host = kstr_arena(a, x->host);
        e->operation = x->operation;
        e->permission_type = x->permission;
        d++;
    }
    resp.resources.n = nres;
    mimage_release(img);
    req_respond(req, &resp);
}

/* ------------------------------------------------------------------ */
/* DeleteAcls                                                          */

struct delete_state {
    struct controller_acl_deleted *res;
};

static void delete_answer(struct request *req, const struct controller_acl_deleted *res, int16_t all_err,
                          const char *all_msg)
{
    const delete_acls_request_t *q = req->body;
    struct arena *a = &req->arena;
    int32_t n = q->filters.n > 0 ? q->filters.n : 0;
    delete_acls_response_t resp;
    delete_acls_response_init(&resp);
    resp.filter_results.a = delete_acls_response_delete_acls_filter_result_new_array(a, n);
    resp.filter_results.n = n;
    for (int32_t i = 0; i < n; i++) {
        delete_acls_response_delete_acls_filter_result_t *fr = &resp.filter_results.a[i];
        const struct controller_acl_deleted *r = res ? &res[i] : NULL;
        if (!r || r->err || all_err) {
            fr->error_code = r && r->err ? r->err : all_err;
            const char *m = r && r->err ? r->msg : all_msg;
            fr->error_message = m ? kstr_arena(a, m) : KSTR_NULL;
            continue;
        }
        fr->matching_acls.a = delete_acls_response_delete_acls_matching_acl_new_array(a, r->n);
        fr->matching_acls.n = r->n;
        for (int32_t k = 0; k < r->n; k++) {
            delete_acls_response_delete_acls_matching_acl_t *m = &fr->matching_acls.a[k];
            const struct mi_acl *x = &r->acls[k];
            m->error_code = 0;
            m->error_message = KSTR_NULL;
            m->resource_type = x->resource_type;
            m->resource_name = KSTR(x->resource_name);
            m->pattern_type = x->pattern_type;
            m->principal = KSTR(x->principal);
            m->host = KSTR(x->host);
            m->operation = x->operation;
            m->permission_type = x->permission;
        }
    }
    req_respond(req, &resp);
}

static void delete_fail(struct request *req, int16_t err)
{
    delete_answer(req, NULL, err, err == KERR_CLUSTER_AUTHORIZATION_FAILED ? cluster_denied : NULL);
}

static void delete_done(struct request *req, void *arg, const int16_t *errs)
{
    struct delete_state *st = arg;
    delete_answer(req, st->res, errs[0], NULL);
}

void api_handle_delete_acls(struct request *req)
{
    const delete_acls_request_t *q = req->body;
    if (!authz_acl_enabled()) {
        delete_answer(req, NULL, KERR_SECURITY_DISABLED, no_authorizer);
        return;
    }
    bool not_controller;
    if (api_should_forward(req, &not_controller)) {
        api_forward(req, ACL_TIMEOUT_MS, delete_fail);
        return;
    }
    if (not_controller) {
        delete_fail(req, KERR_NOT_CONTROLLER);
        return;
    }
    if (!authz_allowed(req, ACL_OP_ALTER, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME)) {
        delete_fail(req, KERR_CLUSTER_AUTHORIZATION_FAILED);
        return;
    }
    struct arena *a = &req->arena;
    int32_t n = q->filters.n > 0 ? q->filters.n : 0;
    struct controller_acl *f = arena_alloc(a, (size_t)(n ? n : 1) * sizeof *f);
    for (int32_t i = 0; i < n; i++) {
        const delete_acls_request_delete_acls_filter_t *x = &q->filters.a[i];
        f[i] = (struct controller_acl){.resource_type = x->resource_type_filter,
                                       .pattern_type = x->pattern_type_filter,
                                       .operation = x->operation,
                                       .permission = x->permission_type,
                                       .resource_name = x->resource_name_filter,
                                       .principal = x->principal_filter,
                                       .host = x->host_filter};
    }
    struct delete_state *st = arena_alloc(a, sizeof *st);
    st->res = arena_alloc(a, (size_t)(n ? n : 1) * sizeof *st->res);
    struct ctl_op *op = NULL;
    int rc = controller_delete_acls(req->broker->controller, f, n, st->res, a, &op);
    if (rc) {
        delete_fail(req, (int16_t)rc);
        return;
    }
    api_wait_ops(req, &op, 1, ACL_TIMEOUT_MS, delete_done, st);
}
