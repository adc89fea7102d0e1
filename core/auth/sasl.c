/* SASL on the server side: see sasl.h. */
#include "auth/sasl.h"

#include "auth/authz.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "controller/controller.h"
#include "net/conn.h"
#include "net/request.h"
#include "plugin/registry.h"
#include "proto/gen/kapi.h"
#include "net/worker.h"
#include "util/clock.h"
#include "util/slog.h"

/* Bound of one server token (SCRAM's are under 300 bytes). */
#define SASL_OUT_LIMIT 65536

void sasl_conn_init(struct conn *c, const char *listener, int protocol)
{
    c->listener = listener ? listener : "";
    c->protocol = (uint8_t)protocol;
    c->sasl_state = protocol == SECURITY_SASL_PLAINTEXT || protocol == SECURITY_SASL_SSL ? SASL_STATE_HANDSHAKE
                                                                                          : SASL_STATE_NONE;
    c->sasl_mech = NULL;
    c->sasl_session = NULL;
    c->principal = NULL;
    c->sasl_expiry_ms = 0;
    c->sasl_lifetime_ms = 0;
    c->sasl_done_mech = NULL;
}

static void end_session(struct conn *c)
{
    if (c->sasl_mech && c->sasl_session)
        c->sasl_mech->vt.sasl.session_free(c->sasl_mech->state, c->sasl_session);
    c->sasl_session = NULL;
}

void sasl_conn_free(struct conn *c)
{
    end_session(c);
    free(c->principal);
    c->principal = NULL;
    authz_conn_free(c);
}

const char *conn_principal(const struct conn *c) { return c->principal ? c->principal : SASL_ANONYMOUS; }

const char *req_principal(const struct request *req)
{
    return req->principal ? req->principal : conn_principal(req->conn);
}

void req_client_host(const struct request *req, char *out, size_t outlen)
{
    const char *p = req->client_host ? req->client_host : req->conn->peer;
    size_t n = strlen(p);
    if (!req->client_host) {
        const char *colon = strrchr(p, ':'); /* "host:port", host maybe IPv6 */
        if (colon)
            n = (size_t)(colon - p);
    }
    snprintf(out, outlen, "%.*s", (int)n, p);
}

static bool expired(const struct conn *c)
{
    return c->sasl_state == SASL_STATE_DONE && c->sasl_expiry_ms > 0 && clock_mono_ms() >= c->sasl_expiry_ms;
}

bool sasl_request_allowed(const struct conn *c, int16_t api_key)
{
    switch (c->sasl_state) {
    case SASL_STATE_HANDSHAKE: return api_key == KAPI_API_VERSIONS || api_key == KAPI_SASL_HANDSHAKE;
    case SASL_STATE_AUTHENTICATE: return api_key == KAPI_SASL_AUTHENTICATE;
    case SASL_STATE_RAW: return false;
    case SASL_STATE_DONE: return !expired(c) || api_key == KAPI_SASL_HANDSHAKE;
    default: return true;
    }
}

const char *sasl_refusal(const struct conn *c)
{
    switch (c->sasl_state) {
    case SASL_STATE_HANDSHAKE: return "during SASL handshake";
    case SASL_STATE_AUTHENTICATE: return c->sasl_done_mech ? "during SASL re-authentication" : "during SASL authentication";
    default: return "after the SASL session expired (connections.max.reauth.ms)";
    }
}

bool sasl_may_reauthenticate(const struct conn *c)
{
    return c->sasl_state == SASL_STATE_DONE && c->sasl_expiry_ms > 0;
}

static void trim_copy(char *out, size_t outlen, const char *s, size_t n)
{
    while (n && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n >= outlen)
        n = outlen - 1;
    memcpy(out, s, n);
    out[n] = '\0';
}

void sasl_enabled_mechanisms(const struct samsa_config *cfg, const char *listener, char *out, size_t outlen)
{
    out[0] = '\0';
    if (!cfg)
        return;
    /* Kafka's ListenerName.configPrefix: the name in lower case */
    char key[160];
    int n = snprintf(key, sizeof key, "listener.name.");
    for (const char *p = listener; *p && n < (int)sizeof key - 1; p++)
        key[n++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    key[n] = '\0';
    snprintf(key + n, sizeof key - (size_t)n, ".sasl.enabled.mechanisms");
    const char *list = NULL;
    size_t ne = config_extra_count(cfg);
    for (size_t i = 0; i < ne; i++) {
        const char *k, *v;
        config_extra_get(cfg, i, &k, &v);
        if (k && !strcmp(k, key))
            list = v;
    }
    if (!list)
        list = config_get(cfg, "sasl.enabled.mechanisms");
    if (!list)
        return;
    size_t off = 0;
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char one[128];
        trim_copy(one, sizeof one, p, len);
        if (one[0] && off + strlen(one) + 2 < outlen)
            off += (size_t)snprintf(out + off, outlen - off, "%s%s", off ? "," : "", one);
        p = e ? e + 1 : p + len;
    }
}

bool sasl_list_has(const char *list, const char *mech, size_t mech_len)
{
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == mech_len && memcmp(p, mech, len) == 0)
            return true;
        p = e ? e + 1 : p + len;
    }
    return false;
}

int sasl_start(struct conn *c, const struct plugin_registry *reg, const char *mech, bool raw, char *errstr,
               size_t errlen)
{
    const struct plugin_cap *cap = plugin_find(reg, SAMSA_CAP_SASL, mech);
    if (!cap) {
        snprintf(errstr, errlen, "no plugin provides SASL mechanism %s", mech);
        return SAMSA_EUNSUPPORTED;
    }
    if (c->sasl_done_mech && c->sasl_done_mech != cap) {
        /* Kafka: a re-authentication keeps the mechanism */
        snprintf(errstr, errlen, "SASL mechanism %s is not the one the connection authenticated with (%s)", mech,
                 c->sasl_done_mech->name);
        return SAMSA_EINVAL;
    }
    samsa_sasl_conn_t info = {
        .struct_size = sizeof info,
        .listener = c->listener,
        .client_host = c->peer,
        .client_id = "",
        .tls = false,
        .tls_peer_dn = NULL,
    };
    void *session = NULL;
    int rc = cap->vt.sasl.session_new(cap->state, &info, &session);
    if (rc != SAMSA_OK) {
        snprintf(errstr, errlen, "mechanism %s could not start a session (error %d)", mech, rc);
        return rc;
    }
    c->sasl_mech = cap;
    c->sasl_session = session;
    c->sasl_state = raw ? SASL_STATE_RAW : SASL_STATE_AUTHENTICATE;
    c->headerless_frames = raw;
    return SAMSA_OK;
}

/* samsa_out_t over a struct buf, bounded */
struct sasl_out {
    samsa_out_t pub;
    struct buf *b;
    size_t start;
};

static uint8_t *so_reserve(samsa_out_t *o, size_t min, size_t *avail)
{
    struct sasl_out *s = (struct sasl_out *)o;
    size_t used = s->b->len - s->start;
    if (min > SASL_OUT_LIMIT - used)
        return NULL;
    size_t want = min < 256 ? 256 : min;
    if (want > SASL_OUT_LIMIT - used)
        want = SASL_OUT_LIMIT - used;
    uint8_t *p = buf_reserve(s->b, want);
    if (avail)
        *avail = want;
    return p;
}

static void so_commit(samsa_out_t *o, size_t n)
{
    struct sasl_out *s = (struct sasl_out *)o;
    s->b->len += n;
}

int sasl_step(struct conn *c, const uint8_t *in, size_t len, struct buf *out, char *errstr, size_t errlen)
{
    errstr[0] = '\0';
    const struct plugin_cap *cap = c->sasl_mech;
    if (!cap || !c->sasl_session) {
        snprintf(errstr, errlen, "no SASL exchange in progress");
        return SAMSA_EINVAL;
    }
    struct sasl_out so = {.pub = {.struct_size = sizeof(samsa_out_t), .reserve = so_reserve, .commit = so_commit,
                                  .limit = SASL_OUT_LIMIT},
                          .b = out,
                          .start = out->len};
    int rc = cap->vt.sasl.step(cap->state, c->sasl_session, in ? in : (const uint8_t *)"", len, &so.pub, NULL,
                               errstr, errlen);
    errstr[errlen - 1] = '\0';
    if (rc == SAMSA_SASL_CONTINUE)
        return rc;
    if (rc == SAMSA_OK) {
        const char *p = cap->vt.sasl.principal(cap->state, c->sasl_session);
        if (!p || strncmp(p, "User:", 5) != 0 || !p[5]) {
            snprintf(errstr, errlen, "Authentication failed during authentication due to invalid credentials with "
                                     "SASL mechanism %s", cap->name);
            slog_warn("SASL mechanism %s named no principal of the form User:<name> ('%s')", cap->name,
                      p ? p : "(null)");
            end_session(c);
            return SAMSA_EAUTH;
        }
        if (c->sasl_done_mech && c->principal && strcmp(c->principal, p) != 0) {
            /* Kafka's SaslServerAuthenticator.ReauthInfo */
            snprintf(errstr, errlen, "Cannot change principals during re-authentication from %s: %s", c->principal, p);
            end_session(c);
            return SAMSA_EAUTH;
        }
        /* KIP-368: the session lives connections.max.reauth.ms, or less
         * when the mechanism's credentials end sooner */
        const struct samsa_config *cfg = c->w && c->w->cfg ? atomic_load(c->w->cfg) : NULL;
        int64_t life = cfg ? cfg->connections_max_reauth_ms : 0;
        if (cap->vt.sasl.session_lifetime_ms) {
            int64_t m = cap->vt.sasl.session_lifetime_ms(cap->state, c->sasl_session);
            if (m > 0 && (life <= 0 || m < life))
                life = m;
        }
        c->sasl_lifetime_ms = life > 0 ? life : 0;
        c->sasl_expiry_ms = life > 0 ? clock_mono_ms() + life : 0;
        c->sasl_done_mech = cap;
        free(c->principal);
        c->principal = xstrdup(p);
        c->sasl_state = SASL_STATE_DONE;
        c->headerless_frames = false;
        end_session(c);
        slog_debug("connection from %s on %s authenticated as %s (%s)", c->peer, c->listener, c->principal, cap->name);
        return SAMSA_OK;
    }
    if (rc == SAMSA_EAGAIN)
        slog_warn("SASL mechanism %s answered SAMSA_EAGAIN, which this samsa does not take yet", cap->name);
    if (rc != SAMSA_EAUTH || !errstr[0])
        /* Kafka's SaslServerAuthenticator: no detail of a SaslException
         * goes to the client. */
        snprintf(errstr, errlen, "Authentication failed during authentication due to invalid credentials with "
                                 "SASL mechanism %s", cap->name);
    end_session(c);
    return rc == SAMSA_EAUTH ? SAMSA_EAUTH : SAMSA_EAUTH;
}

int sasl_check_config(const struct samsa_config *cfg, const struct plugin_registry *reg, char *err, size_t errlen)
{
    for (size_t i = 0; i < cfg->n_listeners; i++) {
        const struct config_endpoint *l = &cfg->listeners[i];
        if (l->protocol != SECURITY_SASL_PLAINTEXT && l->protocol != SECURITY_SASL_SSL)
            continue;
        char list[512];
        sasl_enabled_mechanisms(cfg, l->name, list, sizeof list);
        if (!list[0]) {
            snprintf(err, errlen, "listener %s: no SASL mechanism enabled (sasl.enabled.mechanisms)", l->name);
            return -1;
        }
        const char *p = list;
        while (*p) {
            const char *e = strchr(p, ',');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            char mech[128];
            trim_copy(mech, sizeof mech, p, len);
            if (!plugin_find(reg, SAMSA_CAP_SASL, mech)) {
                snprintf(err, errlen, "listener %s: SASL mechanism %s is enabled but no loaded plugin provides it "
                         "(modules sasl-plain: PLAIN, sasl-scram: SCRAM-SHA-256 and SCRAM-SHA-512, sasl-oauthbearer: "
                         "OAUTHBEARER)", l->name, mech);
                return -1;
            }
            p = e ? e + 1 : p + len;
        }
    }
    /* Kafka's KafkaConfig: the mechanism a node logs in to its peers
     * with must be one their listener enables (all nodes share it) */
    for (size_t i = 0; i < cfg->n_listeners; i++) {
        const struct config_endpoint *l = &cfg->listeners[i];
        if (l->protocol != SECURITY_SASL_PLAINTEXT && l->protocol != SECURITY_SASL_SSL)
            continue;
        const char *key = NULL;
        if (cfg->role_broker && cfg->inter_broker_listener_name && !strcmp(l->name, cfg->inter_broker_listener_name))
            key = "sasl.mechanism.inter.broker.protocol";
        else if (l->is_controller && cfg->n_controller_listener_names &&
                 !strcmp(l->name, cfg->controller_listener_names[0]))
            key = "sasl.mechanism.controller.protocol";
        if (!key)
            continue;
        const char *mech = config_get(cfg, key);
        char list[512];
        sasl_enabled_mechanisms(cfg, l->name, list, sizeof list);
        bool found = false;
        for (const char *p = list; *p && !found;) {
            const char *e = strchr(p, ',');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            char one[128];
            trim_copy(one, sizeof one, p, len);
            found = mech && !strcmp(one, mech);
            p = e ? e + 1 : p + len;
        }
        if (!found) {
            snprintf(err, errlen, "%s=%s must be one of the mechanisms listener %s enables (%s)", key,
                     mech ? mech : "", l->name, list);
            return -1;
        }
    }
    return 0;
}

int sasl_scram_lookup(void *controller, int mechanism, const char *user, samsa_scram_credential_t *cred)
{
    struct controller *c = controller;
    if (!c)
        return SAMSA_EUNSUPPORTED;
    struct mimage *img = controller_image(c);
    const struct mi_scram *s = mimage_scram(img, user, strlen(user), (int8_t)mechanism);
    int rc = SAMSA_ENOTFOUND;
    if (s && (size_t)s->salt_len <= sizeof cred->salt && (size_t)s->stored_key_len <= sizeof cred->stored_key &&
        (size_t)s->server_key_len <= sizeof cred->server_key) {
        cred->iterations = s->iterations;
        cred->salt_len = (size_t)s->salt_len;
        memcpy(cred->salt, s->salt, cred->salt_len);
        cred->stored_key_len = (size_t)s->stored_key_len;
        memcpy(cred->stored_key, s->stored_key, cred->stored_key_len);
        cred->server_key_len = (size_t)s->server_key_len;
        memcpy(cred->server_key, s->server_key, cred->server_key_len);
        rc = SAMSA_OK;
    }
    mimage_release(img);
    return rc;
}
