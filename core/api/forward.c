/* Waiting for proposals and forwarding to the active controller. See
 * forward.h. */
#include "api/forward.h"

#include <stdlib.h>
#include <string.h>

#include "api/envelope.h"
#include "api/quota_mgr.h"
#include "api/request.h"
#include "broker.h"
#include "controller/controller.h"
#include "net/conn.h"
#include "net/park.h"
#include "proto/kerr.h"

/* ------------------------------------------------------------------ */
/* Waiting for proposals                                               */

struct ops_wait {
    struct parked pk;
    struct request *req;
    struct ctl_op **ops;
    int16_t *errs;
    int n;
    api_ops_finish_fn finish;
    void *arg;
};

static void ops_release(struct ops_wait *w)
{
    for (int i = 0; i < w->n; i++) {
        ctl_op_release(w->ops[i]);
        w->ops[i] = NULL;
    }
}

static bool ops_try(struct parked *pk, bool expired)
{
    struct ops_wait *w = (struct ops_wait *)pk;
    bool all = true;
    for (int i = 0; i < w->n; i++) {
        int err = 0;
        if (!w->ops[i])
            continue;
        if (ctl_op_done(w->ops[i], &err))
            w->errs[i] = (int16_t)err;
        else if (expired)
            w->errs[i] = KERR_REQUEST_TIMED_OUT;
        else
            all = false;
    }
    if (!all)
        return false;
    w->req->cancel = NULL;
    w->finish(w->req, w->arg, w->errs);
    ops_release(w);
    return true;
}

static void ops_cancel(struct request *req)
{
    struct ops_wait *w = req->handler_state;
    park_stop(&w->pk);
    ops_release(w);
}

void api_wait_ops(struct request *req, struct ctl_op **ops, int n, int64_t timeout_ms, api_ops_finish_fn finish,
                  void *arg)
{
    struct ops_wait *w = arena_alloc(&req->arena, sizeof *w);
    w->req = req;
    w->n = n;
    w->ops = arena_alloc(&req->arena, (size_t)(n > 0 ? n : 1) * sizeof *w->ops);
    w->errs = arena_alloc(&req->arena, (size_t)(n > 0 ? n : 1) * sizeof *w->errs);
    bool pending = false;
    for (int i = 0; i < n; i++) {
        w->ops[i] = ops[i];
        pending |= ops[i] != NULL;
    }
    w->finish = finish;
    w->arg = arg;
    if (!pending) {
        finish(req, arg, w->errs);
        return;
    }
    req->handler_state = w;
    req->cancel = ops_cancel;
    park_init(&w->pk, req, ops_try);
    for (int i = 0; i < n; i++)
        if (ops[i])
            park_watch(&w->pk, park_key_object(ops[i]));
    park_start(&w->pk, timeout_ms > 0 ? timeout_ms : 30000);
}

/* ------------------------------------------------------------------ */
/* Forwarding                                                          */

struct fwd_wait {
    struct parked pk;
    struct request *req;
    struct ctl_fwd *f;
    api_fail_fn fail;
    api_fwd_answer_fn answer; /* instead of relaying the answer as it is */
    void *arg;
};

/* Kafka's sendForwardedResponse: the client's connection is muted for
 * the throttle time the controller's answer carries (its
 * controller_mutation_rate or request quota there), the answer itself
 * passed on as it is. */
static void mute_as_answered(struct request *req, const uint8_t *body, size_t len)
{
    const struct kapi *a = req->api;
    if (a->resp_throttle_off < 0 || req->api_version < a->resp_throttle_min)
        return;
    void *m = arena_alloc(&req->arena, a->resp_size);
    a->resp_init(m);
    struct kreader r;
    kr_init(&r, body, len, &req->arena);
    if (a->resp_decode(&r, req->api_version, m) < 0 || r.err)
        return;
    quota_throttle(req, *(const int32_t *)((const char *)m + a->resp_throttle_off));
}

static bool fwd_try(struct parked *pk, bool expired)
{
    struct fwd_wait *w = (struct fwd_wait *)pk;
    int err;
    const uint8_t *resp;
    size_t len;
    if (!ctl_fwd_done(w->f, &err, &resp, &len)) {
        if (!expired)
            return false;
        err = KERR_REQUEST_TIMED_OUT;
        resp = NULL;
    }
    if (!err && resp) {
        /* the controller's answer to the envelope: the inner answer */
        const uint8_t *body = NULL;
        size_t blen = 0;
        err = envelope_unwrap(w->req->api_key, w->req->api_version, resp, len, &body, &blen);
        resp = err ? NULL : body;
        len = err ? 0 : blen;
    }
    w->req->cancel = NULL;
    if (!err && resp)
        mute_as_answered(w->req, resp, len);
    if (w->answer) {
        w->answer(w->req, w->arg, (int16_t)(err || !resp ? (err ? err : KERR_UNKNOWN_SERVER_ERROR) : 0), resp,
                  resp ? len : 0);
    } else if (err || !resp) {
        w->fail(w->req, (int16_t)(err ? err : KERR_UNKNOWN_SERVER_ERROR));
    } else {
        struct kwriter body;
        kw_init(&body);
        kw_raw(&body, resp, len);
        req_respond_body(w->req, &body);
        kw_free(&body);
    }
    ctl_fwd_release(w->f);
    w->f = NULL;
    return true;
}

static void fwd_cancel(struct request *req)
{
    struct fwd_wait *w = req->handler_state;
    park_stop(&w->pk);
    ctl_fwd_release(w->f);
    w->f = NULL;
}

static void forward(struct request *req, const void *body, int64_t timeout_ms, api_fail_fn fail,
                    api_fwd_answer_fn answer, void *arg)
{
    if (timeout_ms <= 0)
        timeout_ms = 30000;
    struct kwriter w;
    kw_init(&w);
    envelope_wrap(req, body, &w);
    struct fwd_wait *fw = arena_alloc(&req->arena, sizeof *fw);
    fw->req = req;
    fw->fail = fail;
    fw->answer = answer;
    fw->arg = arg;
    fw->f = controller_forward(req->broker->controller, KAPI_ENVELOPE, 0, w.b.data, w.b.len, timeout_ms);
    kw_free(&w);
    req->handler_state = fw;
    req->cancel = fwd_cancel;
    park_init(&fw->pk, req, fwd_try);
    park_watch(&fw->pk, park_key_object(fw->f));
    /* A little longer than the forward's own deadline, which answers. */
    park_start(&fw->pk, timeout_ms + 1000);
}

void api_forward(struct request *req, int64_t timeout_ms, api_fail_fn fail)
{
    forward(req, req->body, timeout_ms, fail, NULL, NULL);
}

void api_forward_body(struct request *req, const void *body, int64_t timeout_ms, api_fwd_answer_fn answer, void *arg)
{
    forward(req, body, timeout_ms, NULL, answer, arg);
}

bool api_should_forward(struct request *req, bool *not_controller)
{
    *not_controller = false;
    struct controller *c = req->broker->controller;
    if (!c || controller_is_active(c))
        return false;
    if (req->conn && req->conn->controller_listener) {
        *not_controller = true;
        return false;
    }
    return true;
}
