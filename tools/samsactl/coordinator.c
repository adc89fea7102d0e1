/* Talking to a coordinator: see coordinator.h. */
#include "coordinator.h"

#include <stdio.h>

#include "proto/kerr.h"
#include "util/clock.h"

static const char *key_noun(const struct coordinator *co)
{
    return co->key_type == COORD_KEY_TRANSACTION ? "transactional id" : "group";
}

bool coordinator_retriable(int code)
{
    return code == KERR_COORDINATOR_NOT_AVAILABLE || code == KERR_NOT_COORDINATOR ||
           code == KERR_COORDINATOR_LOAD_IN_PROGRESS || code == KERR_NETWORK_EXCEPTION;
}

int coordinator_next_backoff(int ms) { return ms * 2 > 1000 ? 1000 : ms * 2; }

/* The coordinator an answer names for co->key (v0-3 at the top, v4+ in
 * a list): 0 with co filled, or the error it gives. */
static int16_t coordinator_answer(const struct kc_response *r, struct coordinator *co)
{
    const find_coordinator_response_t *m = r->msg;
    int16_t err = m->error_code;
    int32_t node = m->node_id, port = m->port;
    kstr_t host = m->host;
    if (r->version >= 4) {
        const find_coordinator_response_coordinator_t *k = NULL;
        for (int32_t i = 0; i < m->coordinators.n; i++)
            if (kstr_eqc(m->coordinators.a[i].key, co->key))
                k = &m->coordinators.a[i];
        if (!k)
            return KERR_UNKNOWN_SERVER_ERROR;
        err = k->error_code;
        node = k->node_id;
        port = k->port;
        host = k->host;
    }
    if (err)
        return err;
    if (node < 0)
        return KERR_COORDINATOR_NOT_AVAILABLE;
    co->node = node;
    snprintf(co->addr, sizeof co->addr, "%.*s:%d", host.len > 0 ? (int)host.len : 0, host.len > 0 ? host.p : "",
             port);
    return 0;
}

int coordinator_find(struct kc_client *c, struct coordinator *co, int64_t deadline)
{
    for (int backoff = 50;; backoff = coordinator_next_backoff(backoff)) {
        struct kc_conn *conn;
        int rc = kc_any_conn(c, &conn);
        if (rc)
            return rc;
        find_coordinator_request_t req;
        find_coordinator_request_init(&req);
        kstr_t key = KSTR(co->key);
        /* v0-3 ask for one key, v4+ for a list: fill both */
        req.key = key;
        req.key_type = co->key_type;
        req.coordinator_keys.a = &key;
        req.coordinator_keys.n = 1;
        struct kc_response r;
        rc = kc_call(c, conn, KAPI_FIND_COORDINATOR, &req, &r);
        if (rc == 0) {
            int16_t err = coordinator_answer(&r, co);
            kc_response_free(&r);
            if (err == 0)
                return 0;
            rc = kc_fail(c, err, "no coordinator for %s '%s': %s", key_noun(co), co->key, kc_default_message(err));
        }
        if (!coordinator_retriable(rc) || clock_mono_ms() >= deadline)
            return rc;
        if (!kc_sleep_ms(backoff))
            return kc_fail(c, KC_INTERRUPTED, "interrupted");
    }
}

int coordinator_conn(struct kc_client *c, struct coordinator *co, int64_t deadline, struct kc_conn **out)
{
    int rc;
    if (co->node < 0 && (rc = coordinator_find(c, co, deadline)) != 0)
        return rc;
    /* the connection is found through the metadata cache */
    if (!kc_meta_broker(c, co->node) && (rc = kc_metadata(c, NULL, 0, false)) != 0)
        return rc;
    return kc_node_conn(c, co->node, out);
}

int coordinator_call(struct kc_client *c, struct coordinator *co, int16_t key, const void *req,
                     struct kc_response *out, coordinator_error_fn key_error)
{
    int64_t deadline = clock_mono_ms() + c->timeout_ms;
    for (int backoff = 50;; backoff = coordinator_next_backoff(backoff)) {
        struct kc_conn *conn;
        int rc = coordinator_conn(c, co, deadline, &conn);
        if (rc == 0) {
            rc = kc_call(c, conn, key, req, out);
            if (rc == 0) {
                int e = key_error(out);
                if (!coordinator_retriable(e))
                    return 0;
                kc_response_free(out);
                rc = kc_fail(c, e, "%s '%s': %s", key_noun(co), co->key, kc_default_message(e));
            }
        }
        if (!coordinator_retriable(rc) || clock_mono_ms() >= deadline)
            return rc;
        co->node = -1;
        if (!kc_sleep_ms(backoff))
            return kc_fail(c, KC_INTERRUPTED, "interrupted");
    }
}
