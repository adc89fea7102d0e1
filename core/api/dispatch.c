#include "api/dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/handlers.h"
#include "api/quota_mgr.h"
#include "api/request.h"
#include "auth/sasl.h"
#include "broker.h"
#include "net/conn.h"
#include "proto/kerr.h"
#include "util/clock.h"
#include "util/slog.h"

/* The advertised table. Keep minimum versions that clients key features
 * on (librdkafka: Produce v3 + Fetch v4 for message format v2, etc.). */
const struct api_handler api_handlers[] = {
    {KAPI_PRODUCE, 0, 11, api_handle_produce},
    {KAPI_FETCH, 0, 17, api_handle_fetch},
    {KAPI_LIST_OFFSETS, 0, 10, api_handle_list_offsets},
    {KAPI_DELETE_RECORDS, 0, 2, api_handle_delete_records},
    {KAPI_DESCRIBE_PRODUCERS, 0, 0, api_handle_describe_producers},
    {KAPI_OFFSET_FOR_LEADER_EPOCH, 0, 4, api_handle_offset_for_leader_epoch},
    {KAPI_METADATA, 0, 12, api_handle_metadata},
    {KAPI_CREATE_TOPICS, 0, 7, api_handle_create_topics},
    {KAPI_DELETE_TOPICS, 0, 6, api_handle_delete_topics},
    {KAPI_CREATE_PARTITIONS, 0, 3, api_handle_create_partitions},
    {KAPI_DESCRIBE_CLUSTER, 0, 1, api_handle_describe_cluster},
    {KAPI_DESCRIBE_LOG_DIRS, 0, 4, api_handle_describe_log_dirs},
    {KAPI_DESCRIBE_CONFIGS, 0, 4, api_handle_describe_configs},
    {KAPI_ALTER_CONFIGS, 0, 2, api_handle_alter_configs},
    {KAPI_INCREMENTAL_ALTER_CONFIGS, 0, 1, api_handle_incremental_alter_configs},
    {KAPI_API_VERSIONS, 0, 4, api_handle_api_versions},
    {KAPI_DESCRIBE_QUORUM, 0, 2, api_handle_describe_quorum},
    /* Groups (api/groups.c). OffsetCommit from v1 and OffsetFetch from
     * v1, as librdkafka's balanced consumer requires (OffsetCommit 1-2,
     * OffsetFetch v1, the group APIs and FindCoordinator from v0). */
    {KAPI_FIND_COORDINATOR, 0, 4, api_handle_find_coordinator},
    {KAPI_JOIN_GROUP, 0, 9, api_handle_join_group},
    {KAPI_SYNC_GROUP, 0, 5, api_handle_sync_group},
    {KAPI_HEARTBEAT, 0, 4, api_handle_heartbeat},
    {KAPI_LEAVE_GROUP, 0, 5, api_handle_leave_group},
    {KAPI_OFFSET_COMMIT, 1, 9, api_handle_offset_commit},
    {KAPI_OFFSET_FETCH, 1, 9, api_handle_offset_fetch},
    {KAPI_TXN_OFFSET_COMMIT, 0, 4, api_handle_txn_offset_commit},
    {KAPI_LIST_GROUPS, 0, 5, api_handle_list_groups},
    {KAPI_DESCRIBE_GROUPS, 0, 5, api_handle_describe_groups},
    {KAPI_DELETE_GROUPS, 0, 2, api_handle_delete_groups},
    {KAPI_OFFSET_DELETE, 0, 0, api_handle_offset_delete},
    {KAPI_CONSUMER_GROUP_HEARTBEAT, 0, 1, api_handle_consumer_group_heartbeat},
    {KAPI_CONSUMER_GROUP_DESCRIBE, 0, 0, api_handle_consumer_group_describe},
    {KAPI_UPDATE_FEATURES, 0, 2, api_handle_update_features},
    /* Idempotent and transactional producers (api/init_producer_id.c,
     * api/txn.c). Transactions V1; AddPartitionsToTxn v4+ is the
     * brokers' batch (KIP-890 verification); EndTxn v5 is transactions
     * V2, which transaction.version 0 keeps off. */
    {KAPI_INIT_PRODUCER_ID, 0, 5, api_handle_init_producer_id},
    {KAPI_ADD_PARTITIONS_TO_TXN, 0, 5, api_handle_add_partitions_to_txn},
    {KAPI_ADD_OFFSETS_TO_TXN, 0, 4, api_handle_add_offsets_to_txn},
    {KAPI_END_TXN, 0, 4, api_handle_end_txn},
    /* The partition side of transactions (api/txn_markers.c) */
    {KAPI_WRITE_TXN_MARKERS, 0, 1, api_handle_write_txn_markers},
    /* What the transaction coordinator knows (api/txn_describe.c) */
    {KAPI_DESCRIBE_TRANSACTIONS, 0, 0, api_handle_describe_transactions},
    {KAPI_LIST_TRANSACTIONS, 0, 1, api_handle_list_transactions},
    /* SASL and SCRAM credentials (api/sasl.c) */
    {KAPI_SASL_HANDSHAKE, 0, 1, api_handle_sasl_handshake},
    {KAPI_SASL_AUTHENTICATE, 0, 2, api_handle_sasl_authenticate},
    {KAPI_DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0, api_handle_describe_user_scram_credentials},
    {KAPI_ALTER_USER_SCRAM_CREDENTIALS, 0, 0, api_handle_alter_user_scram_credentials},
    /* ACLs (api/acls.c) */
    {KAPI_DESCRIBE_ACLS, 0, 3, api_handle_describe_acls},
    {KAPI_CREATE_ACLS, 0, 3, api_handle_create_acls},
    {KAPI_DELETE_ACLS, 0, 3, api_handle_delete_acls},
    /* Client quotas (api/quotas.c) */
    {KAPI_ALTER_CLIENT_QUOTAS, 0, 1, api_handle_alter_client_quotas},
    {KAPI_DESCRIBE_CLIENT_QUOTAS, 0, 1, api_handle_describe_client_quotas},
};
const int api_handlers_len = (int)(sizeof api_handlers / sizeof api_handlers[0]);

const struct api_handler *api_handler_get(int16_t key)
{
    for (int i = 0; i < api_handlers_len; i++)
        if (api_handlers[i].key == key)
            return &api_handlers[i];
    return NULL;
}

const struct api_handler *api_table(const struct request *req, int *n)
{
    if (req->conn && req->conn->controller_listener) {
        *n = api_controller_handlers_len;
        return api_controller_handlers;
    }
    *n = api_handlers_len;
    return api_handlers;
}

static const struct api_handler *handler_for(const struct request *req, int16_t key)
{
    int n;
    const struct api_handler *t = api_table(req, &n);
    for (int i = 0; i < n; i++)
        if (t[i].key == key)
            return &t[i];
    return NULL;
}

const char *req_peer(const struct request *req) { return req->conn->peer; }

void req_close(struct request *req, const char *why)
{
    req->done = true;
    req->no_response = true;
    if (req->parent) {
        /* an enveloped request: its envelope answers, the forwarding
         * broker's connection stays */
        req->close_after = true;
        req->close_why = why ? arena_strndup(&req->arena, why, strlen(why)) : "closed";
        req->on_inner_done(req);
        return;
    }
    conn_close(req->conn, why);
}

static void begin_response(struct request *req, int header_version)
{
    struct kwriter *w = &req->out;
    kw_i32(w, 0); /* size, patched at the end */
    kw_i32(w, req->correlation_id);
    if (header_version >= 1)
        kw_uvarint(w, 0); /* no tagged fields */
}

static void end_response(struct request *req)
{
    struct kwriter *w = &req->out;
    be32_write(w->b.data, (uint32_t)(kw_size(w) - 4));
    req->done = true;
    if (req->parent)
        req->on_inner_done(req);
    else
        conn_request_done(req->conn);
}

/* request_percentage as Kafka's sendResponseMaybeThrottle: the
 * handler's time is recorded as its answer is written (or earlier, when
 * the handler asks: Fetch); over the quota the connection is muted and
 * the time returned for the answer. */
int64_t req_request_throttle(struct request *req)
{
    if (!req->quota_t0_ns)
        return 0;
    int64_t ns = req->quota_ns >= 0 ? req->quota_ns : clock_mono_ns() - req->quota_t0_ns;
    req->quota_t0_ns = 0;
    int64_t t = quota_request_record(req, ns);
    quota_throttle(req, t);
    return t;
}

void req_respond(struct request *req, const void *resp)
{
    int64_t t = req_request_throttle(req);
    const struct kapi *a = req->api;
    if (t > 0 && a->resp_throttle_off >= 0 && req->api_version >= a->resp_throttle_min) {
        /* the larger of this and a byte-rate throttle the handler set
         * (Produce, Fetch), in a shallow copy: resp is the handler's */
        void *copy = arena_alloc(&req->arena, a->resp_size);
        memcpy(copy, resp, a->resp_size);
        int32_t *f = (int32_t *)((char *)copy + a->resp_throttle_off);
        if (t > *f)
            *f = t > INT32_MAX ? INT32_MAX : (int32_t)t;
        resp = copy;
    }
    begin_response(req, kapi_response_header_version(req->api, req->api_version));
    req->api->resp_encode(&req->out, req->api_version, resp);
    end_response(req);
}

void req_respond_body(struct request *req, const struct kwriter *body)
{
    /* a forwarded answer carries the controller's throttle (api/forward.c
     * mutes for it); Kafka records no request time for it here */
    req->quota_t0_ns = 0;
    begin_response(req, kapi_response_header_version(req->api, req->api_version));
    /* memory pieces as they are, file ranges spliced (own references) */
    size_t from = 0;
    for (int i = 0; i < body->nsplices; i++) {
        const struct kw_splice *sp = &body->splices[i];
        kw_raw(&req->out, body->b.data + from, sp->at - from);
        kw_splice_file(&req->out, sp->file, sp->off, sp->len);
        from = sp->at;
    }
    kw_raw(&req->out, body->b.data + from, body->b.len - from);
    end_response(req);
}

void req_respond_none(struct request *req)
{
    req->quota_t0_ns = 0; /* acks=0: Kafka records no request time */
    req->done = true;
    req->no_response = true;
    if (req->parent)
        req->on_inner_done(req);
    else
        conn_request_done(req->conn);
}

/* KIP-511: an ApiVersions request of a version samsa does not know gets
 * a v0 response saying UNSUPPORTED_VERSION with the supported ranges, so
 * the client can retry with a version both sides speak. */
static void respond_api_versions_unsupported(struct request *req)
{
    api_versions_response_t resp;
    api_versions_response_init(&resp);
    resp.error_code = KERR_UNSUPPORTED_VERSION;
    int nt;
    const struct api_handler *t = api_table(req, &nt);
    resp.api_keys.a = api_versions_response_api_version_new_array(&req->arena, nt);
    resp.api_keys.n = nt;
    for (int i = 0; i < nt; i++) {
        resp.api_keys.a[i].api_key = t[i].key;
        resp.api_keys.a[i].min_version = t[i].min_version;
        resp.api_keys.a[i].max_version = t[i].max_version;
    }
    begin_response(req, 0);
    api_versions_response_encode(&req->out, 0, &resp);
    end_response(req);
}

void api_dispatch(struct request *req)
{
    if (req->conn && req->conn->sasl_state == SASL_STATE_RAW) {
        api_sasl_raw_token(req); /* after SaslHandshake v0: no header */
        return;
    }
    struct kreader r;
    kr_init(&r, req->frame, req->frame_len, &req->arena);
    req->api_key = kr_i16(&r);
    req->api_version = kr_i16(&r);
    req->correlation_id = kr_i32(&r);
    char why[200];
    req->api = kapi_get(req->api_key);
    const struct api_handler *h = handler_for(req, req->api_key);
    if (!req->api || !h) {
        snprintf(why, sizeof why, "unknown or unsupported API key %d (version %d)", req->api_key,
                 req->api_version);
        req_close(req, why);
        return;
    }
    int hv = kapi_request_header_version(req->api, req->api_version);
    req->client_id = KSTR_NULL;
    if (hv >= 1)
        req->client_id = kr_string(&r, false);
    if (hv >= 2) {
        uint32_t ntags = kr_uvarint(&r);
        for (uint32_t i = 0; i < ntags && !r.err; i++) {
            (void)kr_uvarint(&r);
            kr_skip(&r, kr_uvarint(&r));
        }
    }
    if (r.err) {
        snprintf(why, sizeof why, "malformed request header (API key %d)", req->api_key);
        req_close(req, why);
        return;
    }
    if (req->conn && !sasl_request_allowed(req->conn, req->api_key)) {
        /* Kafka's IllegalSaslStateException */
        snprintf(why, sizeof why, "unexpected Kafka request of type %s %s (ILLEGAL_SASL_STATE)", req->api->name,
                 sasl_refusal(req->conn));
        req_close(req, why);
        return;
    }
    if (req->api_version < h->min_version || req->api_version > h->max_version) {
        if (req->api_key == KAPI_API_VERSIONS) {
            respond_api_versions_unsupported(req);
            return;
        }
        snprintf(why, sizeof why, "unsupported version %d of %s (samsa serves %d-%d)", req->api_version,
                 req->api->name, h->min_version, h->max_version);
        req_close(req, why);
        return;
    }
    if (req->conn && req->conn->controller_listener && api_controller_raw(h->key)) {
        struct api_raw_body *rb = arena_alloc(&req->arena, sizeof *rb);
        rb->p = r.p;
        rb->len = kr_left(&r);
        req->body = rb;
        h->handle(req);
        return;
    }
    req->body = arena_alloc(&req->arena, req->api->req_size);
    if (req->api->req_decode(&r, req->api_version, req->body) < 0 || r.err) {
        snprintf(why, sizeof why, "malformed %s request v%d (%zu bytes)", req->api->name, req->api_version,
                 req->frame_len);
        req_close(req, why);
        return;
    }
    if (!quota_request_timed(req)) {
        h->handle(req);
        return;
    }
    /* request_percentage: the handler's time on this worker, recorded
     * when the answer is written (req_request_throttle); one that answers
     * later counts the time the handler ran (the connection is busy
     * dispatching: req outlives the handler) */
    int64_t t0 = clock_mono_ns();
    req->quota_t0_ns = t0 > 0 ? t0 : 1;
    req->quota_ns = -1;
    h->handle(req);
    if (req->quota_t0_ns)
        req->quota_ns = clock_mono_ns() - t0;
}
