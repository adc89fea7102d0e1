/* EnvelopeRequest on both sides: see envelope.h. */
#include "api/envelope.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/dispatch.h"
#include "api/request.h"
#include "auth/authz.h"
#include "auth/sasl.h"
#include "net/conn.h"
#include "proto/gen/default_principal_data.h"
#include "proto/gen/envelope_request.h"
#include "proto/gen/envelope_response.h"
#include "proto/kerr.h"
#include "util/clock.h"
#include "util/slog.h"

/* ---- broker side ---- */

void envelope_wrap(struct request *req, const void *body, struct kwriter *w)
{
    /* the inner request: its header as the client sent it, its body
     * encoded again at its version */
    struct kwriter in;
    kw_init(&in);
    kw_i16(&in, req->api_key);
    kw_i16(&in, req->api_version);
    kw_i32(&in, req->correlation_id);
    int hv = kapi_request_header_version(req->api, req->api_version);
    if (hv >= 1)
        kw_string(&in, req->client_id, false);
    if (hv >= 2)
        kw_uvarint(&in, 0);
    req->api->req_encode(&in, req->api_version, body);

    /* the principal as Kafka's DefaultKafkaPrincipalBuilder serializes
     * it: a version prefix, then DefaultPrincipalData */
    const char *principal = req_principal(req);
    const char *colon = strchr(principal, ':');
    default_principal_data_t pd;
    default_principal_data_init(&pd);
    pd.type = colon ? (kstr_t){principal, (int32_t)(colon - principal)} : KSTR_LIT("User");
    pd.name = KSTR(colon ? colon + 1 : principal);
    struct kwriter pw;
    kw_init(&pw);
    kw_i16(&pw, 0);
    default_principal_data_encode(&pw, 0, &pd);

    char host[64];
    req_client_host(req, host, sizeof host);
    uint8_t addr[16];
    size_t alen = 0;
    if (inet_pton(AF_INET, host, addr) == 1)
        alen = 4;
    else if (inet_pton(AF_INET6, host, addr) == 1)
        alen = 16;

    envelope_request_t e;
    envelope_request_init(&e);
    e.request_data = (kbytes_t){in.b.data, (int32_t)in.b.len};
    e.request_principal = (kbytes_t){pw.b.data, (int32_t)pw.b.len};
    e.client_host_address = (kbytes_t){addr, (int32_t)alen};
    envelope_request_encode(w, 0, &e);
    kw_free(&in);
    kw_free(&pw);
}

int16_t envelope_unwrap(int16_t api_key, int16_t version, const uint8_t *p, size_t len, const uint8_t **body,
                        size_t *body_len)
{
    struct arena ar = ARENA_INIT;
    struct kreader r;
    kr_init(&r, p, len, &ar);
    envelope_response_t e;
    int16_t err = 0;
    if (envelope_response_decode(&r, 0, &e) < 0 || r.err) {
        err = KERR_UNKNOWN_SERVER_ERROR;
    } else if (e.error_code) {
        err = e.error_code;
    } else if (e.response_data.len < 4) {
        err = KERR_UNKNOWN_SERVER_ERROR;
    } else {
        /* the inner response: its header, then the body */
        struct kreader h;
        kr_init(&h, e.response_data.p, (size_t)e.response_data.len, &ar);
        (void)kr_i32(&h); /* correlation id */
        const struct kapi *a = kapi_get(api_key);
        if (a && kapi_response_header_version(a, version) >= 1) {
            uint32_t ntags = kr_uvarint(&h);
            for (uint32_t i = 0; i < ntags && !h.err; i++) {
                (void)kr_uvarint(&h);
                kr_skip(&h, kr_uvarint(&h));
            }
        }
        if (h.err || !a) {
            err = KERR_UNKNOWN_SERVER_ERROR;
        } else {
            *body = h.p;
            *body_len = kr_left(&h);
        }
    }
    arena_free(&ar);
    return err;
}

/* ---- controller side ---- */

static void answer(struct request *req, int16_t err, const uint8_t *data, size_t len)
{
    envelope_response_t resp;
    envelope_response_init(&resp);
    resp.error_code = err;
    resp.response_data = data ? (kbytes_t){data, (int32_t)len} : (kbytes_t){NULL, -1};
    req_respond(req, &resp);
}

/* The inner request answered (or was refused): the envelope answers. */
static void inner_done(struct request *inner)
{
    struct request *req = inner->parent;
    req->cancel = NULL;
    if (inner->close_after) {
        /* Kafka closes a forwarded request that does not parse and
         * answers the broker with the error */
        slog_info("enveloped request from %s (for %s) refused: %s", req_peer(req), req_principal(inner),
                  inner->close_why ? inner->close_why : "");
        answer(req, KERR_INVALID_REQUEST, NULL, 0);
    } else if (inner->no_response) {
        answer(req, 0, NULL, 0);
    } else if (inner->out.nsplices) {
        answer(req, KERR_UNKNOWN_SERVER_ERROR, NULL, 0); /* file ranges: not an admin answer */
    } else {
        /* the response without its size prefix */
        answer(req, 0, inner->out.b.data + 4, inner->out.b.len - 4);
    }
}

static void envelope_cancel(struct request *req)
{
    struct request *inner = req->inner;
    if (inner && !inner->done && inner->cancel)
        inner->cancel(inner);
}

void api_handle_envelope(struct request *req)
{
    const envelope_request_t *q = req->body;
    if (req->parent) {
        answer(req, KERR_INVALID_REQUEST, NULL, 0); /* an envelope in an envelope */
        return;
    }
    if (!authz_allowed(req, ACL_OP_CLUSTER_ACTION, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME)) {
        answer(req, KERR_CLUSTER_AUTHORIZATION_FAILED, NULL, 0);
        return;
    }
    /* the principal: a version prefix and DefaultPrincipalData v0 */
    struct kreader r;
    kr_init(&r, q->request_principal.p, q->request_principal.len > 0 ? (size_t)q->request_principal.len : 0,
            &req->arena);
    int16_t pv = kr_i16(&r);
    default_principal_data_t pd;
    if (r.err || pv != 0 || default_principal_data_decode(&r, 0, &pd) < 0 || r.err || pd.type.len <= 0 ||
        pd.name.len < 0) {
        answer(req, KERR_PRINCIPAL_DESERIALIZATION_FAILURE, NULL, 0);
        return;
    }
    char host[INET6_ADDRSTRLEN] = "";
    int alen = q->client_host_address.len;
    if ((alen != 4 && alen != 16) ||
        !inet_ntop(alen == 4 ? AF_INET : AF_INET6, q->client_host_address.p, host, sizeof host) ||
        q->request_data.len < 8 || (int16_t)be16_read(q->request_data.p) == KAPI_ENVELOPE) {
        /* (Kafka: an envelope may not be nested) */
        answer(req, KERR_INVALID_REQUEST, NULL, 0);
        return;
    }
    struct request *inner = xcalloc(1, sizeof *inner);
    inner->conn = req->conn;
    inner->worker = req->worker;
    inner->broker = req->broker;
    inner->frame_len = (size_t)q->request_data.len;
    inner->frame = xmalloc(inner->frame_len);
    memcpy(inner->frame, q->request_data.p, inner->frame_len);
    inner->received_us = clock_mono_us();
    inner->parent = req;
    inner->on_inner_done = inner_done;
    size_t plen = (size_t)pd.type.len + 1 + (size_t)pd.name.len;
    char *principal = arena_alloc(&req->arena, plen + 1);
    snprintf(principal, plen + 1, "%.*s:%.*s", (int)pd.type.len, pd.type.p, (int)pd.name.len, pd.name.p);
    inner->principal = principal;
    inner->client_host = arena_strndup(&req->arena, host, strlen(host));
    req->inner = inner; /* freed with req */
    req->handler_state = inner;
    req->cancel = envelope_cancel;
    api_dispatch(inner);
}
