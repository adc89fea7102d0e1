/* SaslHandshake (v0-1), SaslAuthenticate (v0-2) and the raw tokens that
 * follow a v0 handshake, as Kafka's SaslServerAuthenticator answers
 * them on a SASL listener and KafkaApis elsewhere (auth/sasl.h); and
 * DescribeUserScramCredentials / AlterUserScramCredentials, as Kafka's
 * KafkaApis and ScramControlManager answer them (controller/scram.c). */
#include <stdio.h>
#include <string.h>

#include "api/forward.h"
#include "api/handlers.h"
#include "api/request.h"
#include "auth/authz.h"
#include "auth/sasl.h"
#include "broker.h"
#include "config.h"
#include "controller/controller.h"
#include "net/conn.h"
#include "net/park.h"
#include "plugin/registry.h"
#include "proto/gen/alter_user_scram_credentials_request.h"
#include "proto/gen/alter_user_scram_credentials_response.h"
#include "proto/gen/describe_user_scram_credentials_request.h"
#include "proto/gen/describe_user_scram_credentials_response.h"
#include "proto/gen/sasl_authenticate_request.h"
#include "proto/gen/sasl_authenticate_response.h"
#include "proto/gen/sasl_handshake_request.h"
#include "proto/gen/sasl_handshake_response.h"
#include "proto/kerr.h"
#include "util/slog.h"

/* Answer, then close the connection once it is written. */
static void close_after(struct request *req, const char *fmt, const char *a, const char *b)
{
    char line[1200];
    snprintf(line, sizeof line, fmt, a, b);
    req->close_after = true;
    req->close_why = kstr_dup(&req->arena, KSTR(line));
}

static void respond_handshake(struct request *req, int16_t err, const char *enabled)
{
    sasl_handshake_response_t resp;
    sasl_handshake_response_init(&resp);
    resp.error_code = err;
    int32_t n = 0;
    for (const char *p = enabled; *p; p++)
        if (*p == ',')
            n++;
    n = enabled[0] ? n + 1 : 0;
    resp.mechanisms.a = arena_alloc(&req->arena, (size_t)(n ? n : 1) * sizeof(kstr_t));
    resp.mechanisms.n = 0;
    const char *p = enabled;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        resp.mechanisms.a[resp.mechanisms.n++] = kstr_arena(&req->arena, p) /* trimmed below */;
        resp.mechanisms.a[resp.mechanisms.n - 1].len = (int32_t)len;
        p = e ? e + 1 : p + len;
    }
    req_respond(req, &resp);
}

void api_handle_sasl_handshake(struct request *req)
{
    const sasl_handshake_request_t *q = req->body;
    struct conn *c = req->conn;
    const struct samsa_config *cfg = req->broker->cfg;
    char enabled[512];
    sasl_enabled_mechanisms(cfg, c->listener, enabled, sizeof enabled);
    bool reauth = sasl_may_reauthenticate(c) && req->api_version >= 1; /* KIP-368 */
    if (c->sasl_state != SASL_STATE_HANDSHAKE && !reauth) {
        /* Kafka's KafkaApis.handleSaslHandshakeRequest: not during an
         * authentication (a PLAINTEXT listener, or after it) */
        respond_handshake(req, KERR_ILLEGAL_SASL_STATE, c->sasl_state == SASL_STATE_NONE ? "" : enabled);
        return;
    }
    char mech[128];
    snprintf(mech, sizeof mech, "%.*s", q->mechanism.len > 0 ? (int)q->mechanism.len : 0,
             q->mechanism.len > 0 ? q->mechanism.p : "");
    if (q->mechanism.len <= 0 || q->mechanism.len >= (int32_t)sizeof mech ||
        !sasl_list_has(enabled, q->mechanism.p, (size_t)q->mechanism.len)) {
        respond_handshake(req, KERR_UNSUPPORTED_SASL_MECHANISM, enabled);
        close_after(req, "SASL handshake: unsupported SASL mechanism %s%s (UNSUPPORTED_SASL_MECHANISM)", mech, "");
        return;
    }
    char err[256];
    if (sasl_start(c, req->broker->plugins, mech, req->api_version == 0, err, sizeof err) != SAMSA_OK) {
        respond_handshake(req, KERR_UNSUPPORTED_SASL_MECHANISM, enabled);
        close_after(req, "SASL handshake: %s%s", err, "");
        return;
    }
    respond_handshake(req, 0, enabled);
}

static void respond_authenticate(struct request *req, int16_t err, const char *msg, const struct buf *token)
{
    sasl_authenticate_response_t resp;
    sasl_authenticate_response_init(&resp);
    resp.error_code = err;
    resp.error_message = msg ? kstr_arena(&req->arena, msg) : KSTR_NULL;
    resp.auth_bytes = token ? (kbytes_t){token->data ? token->data : (const uint8_t *)"", (int32_t)token->len}
                            : (kbytes_t){(const uint8_t *)"", 0};
    /* KIP-368: the authenticated session's lifetime (0: no limit) */
    resp.session_lifetime_ms = err == 0 && req->conn->sasl_state == SASL_STATE_DONE ? req->conn->sasl_lifetime_ms : 0;
    req_respond(req, &resp);
}

/* KIP-306: a failed authentication is answered (SaslAuthenticate) or
 * closed (a raw v0 token) only connection.failed.authentication.delay.ms
 * later, so that a client guessing passwords cannot retry at the
 * network's speed. The worker does not wait: the request is parked on a
 * timer meanwhile. */
struct auth_delay {
    struct parked pk; /* first */
    struct request *req;
    const char *msg;  /* the answer's error message (arena); NULL: raw */
    const char *why;  /* the closing log line (arena) */
};

static void auth_fail_now(struct auth_delay *d)
{
    struct request *req = d->req;
    if (!d->msg) {
        req_close(req, d->why); /* Kafka closes a v0 exchange without an answer */
        return;
    }
    req->close_after = true;
    req->close_why = d->why;
    respond_authenticate(req, KERR_SASL_AUTHENTICATION_FAILED, d->msg, NULL);
}

static bool auth_delay_try(struct parked *pk, bool expired)
{
    struct auth_delay *d = (struct auth_delay *)pk;
    if (!expired)
        return false;
    d->req->cancel = NULL;
    auth_fail_now(d);
    return true;
}

static void auth_delay_cancel(struct request *req)
{
    struct auth_delay *d = req->handler_state;
    park_stop(&d->pk);
}

/* msg NULL: a raw token's failure (no answer). */
static void auth_fail(struct request *req, const char *msg, const char *why)
{
    struct auth_delay *d = arena_alloc(&req->arena, sizeof *d);
    memset(d, 0, sizeof *d);
    d->req = req;
    d->msg = msg ? kstr_dup(&req->arena, KSTR(msg)) : NULL;
    d->why = kstr_dup(&req->arena, KSTR(why));
    const struct samsa_config *cfg = req->broker ? req->broker->cfg : NULL;
    int32_t ms = cfg ? cfg->connection_failed_authentication_delay_ms : 0;
    if (ms <= 0) {
        auth_fail_now(d);
        return;
    }
    req->handler_state = d;
    req->cancel = auth_delay_cancel;
    park_init(&d->pk, req, auth_delay_try);
    park_start(&d->pk, ms);
}

void api_handle_sasl_authenticate(struct request *req)
{
    const sasl_authenticate_request_t *q = req->body;
    struct conn *c = req->conn;
    if (c->sasl_state != SASL_STATE_AUTHENTICATE) {
        /* KafkaApis.handleSaslAuthenticateRequest */
        respond_authenticate(req, KERR_ILLEGAL_SASL_STATE,
                             "SaslAuthenticate request received after successful authentication", NULL);
        return;
    }
    const char *mech = c->sasl_mech ? c->sasl_mech->name : "?";
    struct buf out = BUF_INIT;
    char err[512];
    int rc = sasl_step(c, q->auth_bytes.p, q->auth_bytes.len > 0 ? (size_t)q->auth_bytes.len : 0, &out, err,
                       sizeof err);
    if (rc == SAMSA_SASL_CONTINUE || rc == SAMSA_OK) {
        /* the response struct points into out: copy it into the arena */
        struct buf *keep = arena_alloc(&req->arena, sizeof *keep);
        keep->data = out.len ? arena_alloc(&req->arena, out.len) : NULL;
        keep->len = out.len;
        keep->cap = out.len;
        if (out.len)
            memcpy(keep->data, out.data, out.len);
        buf_free(&out);
        respond_authenticate(req, 0, NULL, keep);
        return;
    }
    buf_free(&out);
    char why[1200];
    snprintf(why, sizeof why, "SASL authentication with %s failed: %s", mech, err);
    auth_fail(req, err, why);
}

void api_sasl_raw_token(struct request *req)
{
    struct conn *c = req->conn;
    const char *mech = c->sasl_mech ? c->sasl_mech->name : "?";
    struct buf out = BUF_INIT;
    char err[512];
    int rc = sasl_step(c, req->frame, req->frame_len, &out, err, sizeof err);
    if (rc == SAMSA_SASL_CONTINUE || rc == SAMSA_OK) {
        /* a raw token goes back as it is, length-prefixed, no header */
        kw_i32(&req->out, (int32_t)out.len);
        if (out.len)
            kw_raw(&req->out, out.data, out.len);
        buf_free(&out);
        req->done = true;
        conn_request_done(c);
        return;
    }
    buf_free(&out);
    char why[1024];
    snprintf(why, sizeof why, "SASL authentication with %s failed: %s", mech, err);
    auth_fail(req, NULL, why);
}

/* ------------------------------------------------------------------ */
/* DescribeUserScramCredentials                                        */

static void describe_fail(struct request *req, int16_t err, const char *msg)
{
    describe_user_scram_credentials_response_t resp;
    describe_user_scram_credentials_response_init(&resp);
    resp.error_code = err;
    resp.error_message = msg ? kstr_arena(&req->arena, msg) : KSTR_NULL;
    req_respond(req, &resp);
}

void api_handle_describe_user_scram_credentials(struct request *req)
{
    const describe_user_scram_credentials_request_t *q = req->body;
    if (!authz_allowed(req, ACL_OP_DESCRIBE, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME)) {
        describe_fail(req, KERR_CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.");
        return;
    }
    struct arena *a = &req->arena;
    struct mimage *img = controller_image(req->broker->controller);
    /* Kafka's ScramImage.describe: no users named means every user */
    int32_t cap = q->users.n > 0 ? q->users.n : img->nscram;
    kstr_t *users = arena_alloc(a, (size_t)(cap ? cap : 1) * sizeof *users);
    bool *dup = arena_alloc(a, (size_t)(cap ? cap : 1) * sizeof *dup);
    int32_t nu = 0;
    if (q->users.n > 0) {
        for (int32_t i = 0; i < q->users.n; i++) {
            kstr_t u = q->users.a[i].name;
            int32_t k = 0;
            while (k < nu && !kstr_eq(users[k], u))
                k++;
            if (k < nu) {
                dup[k] = true;
                continue;
            }
            users[nu] = u;
            dup[nu++] = false;
        }
    } else {
        for (int32_t i = 0; i < img->nscram; i++) {
            kstr_t u = KSTR(img->scram[i].user);
            if (nu > 0 && kstr_eq(users[nu - 1], u))
                continue;
            users[nu] = kstr_arena(a, img->scram[i].user);
            dup[nu++] = false;
        }
    }
    describe_user_scram_credentials_response_t resp;
    describe_user_scram_credentials_response_init(&resp);
    resp.results.a = describe_user_scram_credentials_response_describe_user_scram_credentials_result_new_array(a, nu);
    resp.results.n = nu;
    for (int32_t i = 0; i < nu; i++) {
        describe_user_scram_credentials_response_describe_user_scram_credentials_result_t *r = &resp.results.a[i];
        r->user = users[i];
        r->error_message = KSTR_NULL;
        char name[600];
        snprintf(name, sizeof name, "%.*s", users[i].len > 0 ? (int)users[i].len : 0, users[i].len > 0 ? users[i].p : "");
        if (dup[i]) {
            char m[700];
            snprintf(m, sizeof m, "describeDuplicateUsers: %s", name);
            r->error_code = KERR_DUPLICATE_RESOURCE;
            r->error_message = kstr_arena(a, m);
            continue;
        }
        r->credential_infos.a = describe_user_scram_credentials_response_credential_info_new_array(a, 2);
        r->credential_infos.n = 0;
        for (int8_t m = SAMSA_SCRAM_SHA_256; m <= SAMSA_SCRAM_SHA_512; m++) {
            const struct mi_scram *s =
                users[i].len > 0 ? mimage_scram(img, users[i].p, (size_t)users[i].len, m) : NULL;
            if (!s)
                continue;
            r->credential_infos.a[r->credential_infos.n].mechanism = m;
            r->credential_infos.a[r->credential_infos.n++].iterations = s->iterations;
        }
        if (r->credential_infos.n == 0) {
            char m[700];
            snprintf(m, sizeof m, "attemptToDescribeUserThatDoesNotExist: %s", name);
            r->error_code = KERR_RESOURCE_NOT_FOUND;
            r->error_message = kstr_arena(a, m);
        }
    }
    mimage_release(img);
    req_respond(req, &resp);
}

/* ------------------------------------------------------------------ */
/* AlterUserScramCredentials                                           */

struct alter_scram_state {
    struct controller_scram_result *res;
    int32_t nres;
};

static void alter_scram_answer(struct request *req, const struct alter_scram_state *st, int16_t all_err)
{
    alter_user_scram_credentials_response_t resp;
    alter_user_scram_credentials_response_init(&resp);
    resp.results.a =
        alter_user_scram_credentials_response_alter_user_scram_credentials_result_new_array(&req->arena, st->nres);
    resp.results.n = st->nres;
    for (int32_t i = 0; i < st->nres; i++) {
        const struct controller_scram_result *r = &st->res[i];
        resp.results.a[i].user = r->user;
        int16_t e = r->err ? r->err : all_err;
        resp.results.a[i].error_code = e;
        resp.results.a[i].error_message = r->err && r->msg ? KSTR(r->msg) : KSTR_NULL;
    }
    req_respond(req, &resp);
}

/* Every user of the request answered with err (NOT_CONTROLLER, ...). */
static void alter_scram_fail(struct request *req, int16_t err)
{
    const alter_user_scram_credentials_request_t *q = req->body;
    struct alter_scram_state st;
    int32_t n = (q->deletions.n > 0 ? q->deletions.n : 0) + (q->upsertions.n > 0 ? q->upsertions.n : 0);
    st.res = arena_alloc(&req->arena, (size_t)(n ? n : 1) * sizeof *st.res);
    st.nres = 0;
    for (int32_t i = 0; i < n; i++) {
        kstr_t u = i < q->deletions.n ? q->deletions.a[i].name : q->upsertions.a[i - q->deletions.n].name;
        int32_t k = 0;
        while (k < st.nres && !kstr_eq(st.res[k].user, u))
            k++;
        if (k == st.nres)
            st.res[st.nres++] = (struct controller_scram_result){.user = u, .err = err};
    }
    alter_scram_answer(req, &st, err);
}

static void alter_scram_done(struct request *req, void *arg, const int16_t *errs)
{
    alter_scram_answer(req, arg, errs[0]);
}

void api_handle_alter_user_scram_credentials(struct request *req)
{
    const alter_user_scram_credentials_request_t *q = req->body;
    bool not_controller;
    if (api_should_forward(req, &not_controller)) {
        api_forward(req, 30000, alter_scram_fail);
        return;
    }
    if (not_controller) {
        alter_scram_fail(req, KERR_NOT_CONTROLLER);
        return;
    }
    if (!authz_allowed(req, ACL_OP_ALTER, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME)) {
        alter_scram_fail(req, KERR_CLUSTER_AUTHORIZATION_FAILED);
        return;
    }
    struct arena *a = &req->arena;
    int32_t nd = q->deletions.n > 0 ? q->deletions.n : 0, nu = q->upsertions.n > 0 ? q->upsertions.n : 0;
    int32_t n = nd + nu;
    struct controller_scram_change *ch = arena_alloc(a, (size_t)(n ? n : 1) * sizeof *ch);
    for (int32_t i = 0; i < nd; i++)
        ch[i] = (struct controller_scram_change){.user = q->deletions.a[i].name,
                                                  .mechanism = q->deletions.a[i].mechanism,
                                                  .is_delete = true};
    for (int32_t i = 0; i < nu; i++) {
        const alter_user_scram_credentials_request_scram_credential_upsertion_t *u = &q->upsertions.a[i];
        ch[nd + i] = (struct controller_scram_change){.user = u->name,
                                                       .mechanism = u->mechanism,
                                                       .is_delete = false,
                                                       .iterations = u->iterations,
                                                       .salt = u->salt,
                                                       .salted_password = u->salted_password};
    }
    struct alter_scram_state *st = arena_alloc(a, sizeof *st);
    st->res = arena_alloc(a, (size_t)(n ? n : 1) * sizeof *st->res);
    struct ctl_op *op = NULL;
    int rc = controller_alter_scram_credentials(req->broker->controller, ch, n, st->res, &st->nres, &op);
    if (rc) {
        alter_scram_fail(req, (int16_t)rc);
        return;
    }
    api_wait_ops(req, &op, 1, 30000, alter_scram_done, st);
}
