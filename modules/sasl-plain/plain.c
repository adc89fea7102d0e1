/* SPDX-License-Identifier: Apache-2.0
 *
 * sasl-plain: the SASL/PLAIN mechanism (RFC 4616) on the server side, as
 * Kafka's PlainSaslServer with its PlainServerCallbackHandler.
 *
 * The client sends one message, [authzid] NUL authcid NUL passwd; the
 * user is authcid, the principal User:<authcid>. Users and passwords
 * come, as a Kafka operator writes them, from the listener's JAAS
 * configuration
 *
 *   listener.name.sasl_plaintext.plain.sasl.jaas.config=\
 *     org.apache.kafka.common.security.plain.PlainLoginModule required \
 *     user_alice="alice-secret" user_bob="bob-secret";
 *
 * (the user_<name>="<password>" options; username/password, the
 * broker's own client login, are ignored), read through the host's
 * server_config_get (ABI 1.1). A listener without that key uses
 * plugin.sasl-plain.users=alice:alice-secret,bob:bob-secret (a name
 * ends at the first ':', a password at the next ','). The error messages
 * are Kafka's. Compiled against include/samsa only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samsa/sasl.h"

#ifndef SAMSA_MODULE_VERSION
#define SAMSA_MODULE_VERSION "0"
#endif

/* ------------------------------------------------------------------ */
/* Parsing (pure; static, but tests/unit/sasl_test.c and the fuzz      */
/* target compile this file in and call them)                          */

struct plain_msg {
    const char *authzid, *user, *pass;
    size_t authzid_len, user_len, pass_len;
};

/* Kafka's PlainSaslServer.extractTokens: exactly three NUL-separated
 * tokens. Returns 0, or -1 with the number of tokens found in *ntokens. */
static int plain_parse(const uint8_t *in, size_t len, struct plain_msg *m, int *ntokens)
{
    const char *s = (const char *)in;
    const char *tok[4];
    size_t tlen[4];
    int n = 0;
    size_t start = 0;
    for (int i = 0; i < 4; i++) {
        const char *nul = start <= len ? memchr(s + start, '\0', len - start) : NULL;
        if (!nul) {
            tok[n] = s + start;
            tlen[n++] = len - start;
            break;
        }
        tok[n] = s + start;
        tlen[n++] = (size_t)(nul - (s + start));
        start = (size_t)(nul - s) + 1;
    }
    if (ntokens)
        *ntokens = n;
    if (n != 3)
        return -1;
    m->authzid = tok[0];
    m->authzid_len = tlen[0];
    m->user = tok[1];
    m->user_len = tlen[1];
    m->pass = tok[2];
    m->pass_len = tlen[2];
    return 0;
}

/* Skips blanks; returns the new position. */
static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

/* Finds option user_<user>="<password>" in a JAAS configuration (the
 * options of its first login module). The password, unquoted (Java's
 * StreamTokenizer escapes \\ \" \n \t \r), goes to out. Returns 1 when
 * found, 0 when not, -1 when out is too small. */
static int plain_jaas_password(const char *jaas, const char *user, size_t user_len, char *out, size_t outlen)
{
    const char *p = skip_ws(jaas);
    /* login module class and control flag */
    for (int word = 0; word < 2; word++) {
        while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r' && *p != ';')
            p++;
        p = skip_ws(p);
    }
    while (*p && *p != ';') {
        const char *k = p;
        while (*p && *p != '=' && *p != ' ' && *p != '\t' && *p != ';')
            p++;
        size_t klen = (size_t)(p - k);
        p = skip_ws(p);
        if (*p != '=')
            return 0; /* malformed: no more options we can read */
        p = skip_ws(p + 1);
        size_t o = 0;
        bool over = false;
        if (*p == '"') {
            p++;
            while (*p && *p != '"') {
                char ch = *p++;
                if (ch == '\\' && *p) {
                    ch = *p++;
                    ch = ch == 'n' ? '\n' : ch == 't' ? '\t' : ch == 'r' ? '\r' : ch;
                }
                if (o + 1 < outlen)
                    out[o++] = ch;
                else
                    over = true;
            }
            if (*p == '"')
                p++;
        } else {
            while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != ';') {
                if (o + 1 < outlen)
                    out[o++] = *p;
                else
                    over = true;
                p++;
            }
        }
        if (outlen)
            out[o < outlen ? o : outlen - 1] = '\0';
        if (klen == 5 + user_len && memcmp(k, "user_", 5) == 0 && memcmp(k + 5, user, user_len) == 0)
            return over ? -1 : 1;
        p = skip_ws(p);
    }
    return 0;
}

/* The same in plugin.sasl-plain.users: name:password,name:password. */
static int plain_users_password(const char *users, const char *user, size_t user_len, char *out, size_t outlen)
{
    const char *p = users;
    while (*p) {
        while (*p == ' ' || *p == '\t')
            p++;
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        const char *colon = memchr(p, ':', n);
        if (colon && (size_t)(colon - p) == user_len && memcmp(p, user, user_len) == 0) {
            size_t pl = n - (size_t)(colon + 1 - p);
            while (pl > 0 && (colon[pl] == ' ' || colon[pl] == '\t'))
                pl--;
            if (pl + 1 > outlen)
                return -1;
            memcpy(out, colon + 1, pl);
            out[pl] = '\0';
            return 1;
        }
        p = e ? e + 1 : p + n;
    }
    return 0;
}

/* Constant time for equal lengths. */
static bool same_secret(const char *a, size_t alen, const char *b, size_t blen)
{
    unsigned char d = alen != blen;
    size_t n = alen < blen ? alen : blen;
    for (size_t i = 0; i < n; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

/* ------------------------------------------------------------------ */
/* The mechanism                                                       */

struct plain_state {
    samsa_host_t *host;
    const samsa_host_api_t *api;
    samsa_metric_t *ok, *failed;
};

struct plain_session {
    char listener[128];
    char principal[320];
};

static struct plain_state g_plain;

static int plain_session_new(void *cap_state, const samsa_sasl_conn_t *conn, void **session)
{
    (void)cap_state;
    struct plain_session *s = calloc(1, sizeof *s);
    if (!s)
        return SAMSA_ENOMEM;
    snprintf(s->listener, sizeof s->listener, "%s", conn && conn->listener ? conn->listener : "");
    *session = s;
    return SAMSA_OK;
}

/* The password configured for user; 1 found, 0 not, -1 config error. */
static int lookup(struct plain_state *st, const char *listener, const char *user, size_t user_len, char *pw,
                  size_t pwlen)
{
    if (SAMSA_HOST_HAS(st->api, server_config_get)) {
        /* Kafka: listener.name.<listener>.<mechanism>.sasl.jaas.config,
         * both lower case */
        char key[256];
        int n = snprintf(key, sizeof key, "listener.name.");
        for (const char *p = listener; *p && n < 200; p++)
            key[n++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
        snprintf(key + n, sizeof key - (size_t)n, ".plain.sasl.jaas.config");
        const char *jaas = st->api->server_config_get(st->host, key);
        if (jaas)
            return plain_jaas_password(jaas, user, user_len, pw, pwlen);
    }
    const char *users = st->api->config_get(st->host, "users");
    return users ? plain_users_password(users, user, user_len, pw, pwlen) : 0;
}

static int plain_step(void *cap_state, void *session, const uint8_t *in, size_t in_len, samsa_out_t *out,
                      samsa_async_t *token, char *errstr, size_t errlen)
{
    (void)out;
    (void)token;
    struct plain_state *st = cap_state;
    struct plain_session *s = session;
    struct plain_msg m;
    int ntok = 0;
    if (plain_parse(in, in_len, &m, &ntok) < 0) {
        /* a SaslException in Kafka: the client sees the generic text */
        st->api->metric_add(st->failed, 1);
        snprintf(errstr, errlen, "Authentication failed during authentication due to invalid credentials with "
                                 "SASL mechanism PLAIN");
        st->api->log(st->host, SAMSA_LOG_DEBUG, "Invalid SASL/PLAIN response: expected 3 tokens, got %d", ntok);
        return SAMSA_EAUTH;
    }
    if (m.user_len == 0) {
        st->api->metric_add(st->failed, 1);
        snprintf(errstr, errlen, "Authentication failed: username not specified");
        return SAMSA_EAUTH;
    }
    if (m.pass_len == 0) {
        st->api->metric_add(st->failed, 1);
        snprintf(errstr, errlen, "Authentication failed: password not specified");
        return SAMSA_EAUTH;
    }
    char pw[1024];
    int found = memchr(m.user, '\0', m.user_len) ? 0 : lookup(st, s->listener, m.user, m.user_len, pw, sizeof pw);
    if (found != 1 || !same_secret(pw, strlen(pw), m.pass, m.pass_len)) {
        st->api->metric_add(st->failed, 1);
        snprintf(errstr, errlen, "Authentication failed: Invalid username or password");
        return SAMSA_EAUTH;
    }
    if (m.authzid_len && (m.authzid_len != m.user_len || memcmp(m.authzid, m.user, m.user_len) != 0)) {
        st->api->metric_add(st->failed, 1);
        snprintf(errstr, errlen,
                 "Authentication failed: Client requested an authorization id that is different from username");
        return SAMSA_EAUTH;
    }
    if (m.user_len + 6 > sizeof s->principal) {
        snprintf(errstr, errlen, "Authentication failed: Invalid username or password");
        return SAMSA_EAUTH;
    }
    snprintf(s->principal, sizeof s->principal, "User:%.*s", (int)m.user_len, m.user);
    st->api->metric_add(st->ok, 1);
    return SAMSA_OK;
}

static const char *plain_principal(void *cap_state, void *session)
{
    (void)cap_state;
    return ((struct plain_session *)session)->principal;
}

static void plain_session_free(void *cap_state, void *session)
{
    (void)cap_state;
    free(session);
}

static const samsa_sasl_mech_t plain_mech = {
    .hdr = {.struct_size = sizeof(samsa_sasl_mech_t), .kind = SAMSA_CAP_SASL, .name = "PLAIN"},
    .session_new = plain_session_new,
    .step = plain_step,
    .principal = plain_principal,
    .session_lifetime_ms = NULL,
    .session_free = plain_session_free,
};

static int plain_init(samsa_host_t *host, const samsa_host_api_t *api, void **state, char *errstr, size_t errlen)
{
    (void)state;
    (void)errstr;
    (void)errlen;
    g_plain.host = host;
    g_plain.api = api;
    g_plain.ok = api->metric_register(host, "authentications", SAMSA_METRIC_COUNTER,
                                      "Successful SASL/PLAIN authentications.");
    g_plain.failed = api->metric_register(host, "authentication_failures", SAMSA_METRIC_COUNTER,
                                          "Failed SASL/PLAIN authentications.");
    return api->register_capability(host, &plain_mech.hdr, &g_plain);
}

static const samsa_plugin_info_t plain_info = {
    SAMSA_PLUGIN_INFO_HEADER,
    .name = "sasl-plain",
    .version = SAMSA_MODULE_VERSION,
    .description = "SASL/PLAIN (RFC 4616): users from the listener's JAAS config or plugin.sasl-plain.users",
    .license = "Apache-2.0",
    .init = plain_init,
};

#ifndef SAMSA_SASL_NO_ENTRY
SAMSA_PLUGIN_DECLARE(sasl_plain, plain_info)
#endif
