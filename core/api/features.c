/* UpdateFeatures (v0-2), as Kafka's ControllerApis and QuorumController
 * answer it (brokers forward it to the active controller), and the
 * feature fields of ApiVersions. The rules are the controller's
 * (controller_update_features). */
#include "api/features.h"

#include <stdio.h>
#include <string.h>

#include "api/forward.h"
#include "api/handlers.h"
#include "api/request.h"
#include "auth/authz.h"
#include "broker.h"
#include "controller/controller.h"
#include "proto/gen/api_versions_response.h"
#include "proto/gen/update_features_request.h"
#include "proto/gen/update_features_response.h"
#include "proto/kerr.h"

#define MSG_CLUSTER_AUTHORIZATION_FAILED "Cluster authorization failed."

/* ------------------------------------------------------------------ */
/* ApiVersions                                                         */

void api_versions_add_features(struct request *req, struct api_versions_response_s *resp)
{
    struct arena *a = &req->arena;
    int16_t min, max;
    resp->supported_features.a = api_versions_response_supported_feature_key_new_array(a, 1);
    resp->supported_features.n = 0;
    if (controller_supported_feature("metadata.version", &min, &max) && !(req->api_version < 4 && min == 0)) {
        /* (Kafka leaves out ranges starting at 0 before v4: KAFKA-17492) */
        api_versions_response_supported_feature_key_t *k = &resp->supported_features.a[resp->supported_features.n++];
        k->name = KSTR_LIT("metadata.version");
        k->min_version = min;
        k->max_version = max;
    }
    struct controller *c = req->broker ? req->broker->controller : NULL;
    if (!c)
        return;
    struct mimage *img = controller_image(c);
    /* Kafka's KRaftMetadataCache.features: metadata.version and the other
     * finalized features, level 0 left out; the epoch is the offset the
     * image stands at. */
    resp->finalized_features.a = api_versions_response_finalized_feature_key_new_array(a, img->nfeatures + 1);
    resp->finalized_features.n = 0;
    if (img->metadata_version > 0) {
        api_versions_response_finalized_feature_key_t *k = &resp->finalized_features.a[resp->finalized_features.n++];
        k->name = KSTR_LIT("metadata.version");
        k->min_version_level = k->max_version_level = img->metadata_version;
    }
    for (int32_t i = 0; i < img->nfeatures; i++) {
        if (img->features[i].level == 0)
            continue;
        api_versions_response_finalized_feature_key_t *k = &resp->finalized_features.a[resp->finalized_features.n++];
        k->name = kstr_arena(a, img->features[i].name);
        k->min_version_level = k->max_version_level = img->features[i].level;
    }
    resp->finalized_features_epoch = img->offset;
    mimage_release(img);
}

/* ------------------------------------------------------------------ */
/* UpdateFeatures                                                      */

static void update_features_fail_msg(struct request *req, int16_t err, kstr_t msg)
{
    update_features_response_t resp;
    update_features_response_init(&resp);
    resp.error_code = err;
    resp.error_message = msg;
    req_respond(req, &resp);
}

static void update_features_fail(struct request *req, int16_t err) { update_features_fail_msg(req, err, KSTR_NULL); }

static void update_features_done(struct request *req, void *arg, const int16_t *errs)
{
    (void)arg;
    if (errs[0]) {
        update_features_fail(req, errs[0]);
        return;
    }
    const update_features_request_t *q = req->body;
    update_features_response_t resp;
    update_features_response_init(&resp);
    resp.error_code = 0;
    resp.error_message = KSTR_NULL;
    if (req->api_version <= 1) {
        /* One result per update, with what Kafka's Errors.NONE.message()
         * says. */
        int32_t n = q->feature_updates.n > 0 ? q->feature_updates.n : 0;
        resp.results.a = update_features_response_updatable_feature_result_new_array(&req->arena, n);
        resp.results.n = n;
        for (int32_t i = 0; i < n; i++) {
            resp.results.a[i].feature = q->feature_updates.a[i].feature;
            resp.results.a[i].error_code = 0;
            resp.results.a[i].error_message = KSTR_LIT("NONE");
        }
    }
    req_respond(req, &resp);
}

void api_handle_update_features(struct request *req)
{
    const update_features_request_t *q = req->body;
    bool not_controller;
    if (api_should_forward(req, &not_controller)) {
        api_forward(req, q->timeout_ms, update_features_fail);
        return;
    }
    if (not_controller) {
        update_features_fail(req, KERR_NOT_CONTROLLER);
        return;
    }
    if (!authz_allowed(req, ACL_OP_ALTER, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME)) {
        update_features_fail_msg(req, KERR_CLUSTER_AUTHORIZATION_FAILED, KSTR_LIT(MSG_CLUSTER_AUTHORIZATION_FAILED));
        return;
    }
    int32_t n = q->feature_updates.n > 0 ? q->feature_updates.n : 0;
    struct arena *a = &req->arena;
    kstr_t *names = arena_alloc(a, (size_t)(n ? n : 1) * sizeof *names);
    int16_t *levels = arena_alloc(a, (size_t)(n ? n : 1) * sizeof *levels);
    int8_t *types = arena_alloc(a, (size_t)(n ? n : 1) * sizeof *types);
    for (int32_t i = 0; i < n; i++) {
        const update_features_request_feature_update_key_t *u = &q->feature_updates.a[i];
        names[i] = u->feature;
        levels[i] = u->max_version_level;
        /* v0 says AllowDowngrade instead (UpdateFeaturesRequest.getFeature). */
        types[i] = req->api_version == 0
                       ? (u->allow_downgrade ? CONTROLLER_FEATURE_SAFE_DOWNGRADE : CONTROLLER_FEATURE_UPGRADE)
                       : u->upgrade_type;
    }
    char msg[1024];
    struct ctl_op *op = NULL;
    int rc = controller_update_features(req->broker->controller, n, names, levels, types,
                                        req->api_version >= 1 && q->validate_only, msg, sizeof msg, &op);
    if (rc == KERR_NOT_CONTROLLER) {
        update_features_fail(req, (int16_t)rc);
        return;
    }
    if (rc) {
        char *m = arena_alloc(a, strlen(msg) + 96);
        sprintf(m, "The update failed for all features since the following feature had an error: %s", msg);
        update_features_fail_msg(req, (int16_t)rc, KSTR(m));
        return;
    }
    api_wait_ops(req, &op, 1, q->timeout_ms > 0 ? q->timeout_ms : 60000, update_features_done, NULL);
}
