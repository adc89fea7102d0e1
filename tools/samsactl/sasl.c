/* samsactl SASL client: see sasl.h. */
#include "sasl.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/sasl_client.h"
#include "client.h"
#include "config.h"
#include "proto/gen/sasl_authenticate_request.h"
#include "proto/gen/sasl_authenticate_response.h"
#include "proto/gen/sasl_handshake_request.h"
#include "proto/gen/sasl_handshake_response.h"
#include "proto/kerr.h"

struct kc_security kc_security;

static void set_str(char **dst, const char *v)
{
    free(*dst);
    *dst = v ? strdup(v) : NULL;
}

int kc_jaas_credentials(const char *jaas, char **username, char **password)
{
    *username = sasl_jaas_option(jaas, "username");
    *password = sasl_jaas_option(jaas, "password");
    return (*username != NULL) + (*password != NULL);
}

struct props {
    char *protocol, *mechanism, *jaas, *user, *pass;
    char *ca, *keystore, *cert, *key, *keypass, *ident, *ts_type, *ks_type;
};

static int prop_cb(void *ctx, const char *key, const char *value, int line)
{
    (void)line;
    struct props *p = ctx;
    if (!strcmp(key, "security.protocol"))
        set_str(&p->protocol, value);
    else if (!strcmp(key, "sasl.mechanism") || !strcmp(key, "sasl.mechanisms"))
        set_str(&p->mechanism, value);
    else if (!strcmp(key, "sasl.jaas.config"))
        set_str(&p->jaas, value);
    else if (!strcmp(key, "sasl.username"))
        set_str(&p->user, value);
    else if (!strcmp(key, "sasl.password"))
        set_str(&p->pass, value);
    else if (!strcmp(key, "ssl.truststore.location") || !strcmp(key, "ssl.ca.location"))
        set_str(&p->ca, value);
    else if (!strcmp(key, "ssl.truststore.type"))
        set_str(&p->ts_type, value);
    else if (!strcmp(key, "ssl.keystore.location"))
        set_str(&p->keystore, value);
    else if (!strcmp(key, "ssl.keystore.type"))
        set_str(&p->ks_type, value);
    else if (!strcmp(key, "ssl.certificate.location"))
        set_str(&p->cert, value);
    else if (!strcmp(key, "ssl.key.location"))
        set_str(&p->key, value);
    else if (!strcmp(key, "ssl.key.password"))
        set_str(&p->keypass, value);
    else if (!strcmp(key, "ssl.endpoint.identification.algorithm"))
        set_str(&p->ident, value);
    return 0;
}

int kc_security_load(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "--command-config %s: cannot read it", path);
        return -1;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 > cap) {
            cap = cap ? cap * 2 : 8192;
            text = realloc(text, cap);
        }
        size_t n = fread(text + len, 1, cap - len, f);
        if (n == 0)
            break;
        len += n;
    }
    fclose(f);
    struct props p = {0};
    char perr[256];
    int rc = properties_parse(text ? text : "", len, prop_cb, &p, perr, sizeof perr);
    free(text);
    if (rc != 0) {
        snprintf(err, errlen, "--command-config %s: %s", path, perr);
        rc = -1;
        goto out;
    }
    const char *proto = p.protocol ? p.protocol : "PLAINTEXT";
    if (strcasecmp(proto, "SASL_PLAINTEXT") && strcasecmp(proto, "PLAINTEXT") && strcasecmp(proto, "SSL") &&
        strcasecmp(proto, "SASL_SSL")) {
        snprintf(err, errlen, "--command-config %s: unknown security.protocol %s", path, proto);
        rc = -1;
        goto out;
    }
    if (!strcasecmp(proto, "SSL") || !strcasecmp(proto, "SASL_SSL")) {
        /* samsactl reads PEM files only (Kafka's PEM key store type) */
        if ((p.ts_type && strcasecmp(p.ts_type, "PEM")) || (p.ks_type && strcasecmp(p.ks_type, "PEM"))) {
            snprintf(err, errlen, "--command-config %s: samsactl reads PEM trust and key stores only "
                                  "(ssl.truststore.type / ssl.keystore.type PEM)", path);
            rc = -1;
            goto out;
        }
        kc_security.tls = true;
        set_str(&kc_security.ca_file, p.ca);
        set_str(&kc_security.cert_file, p.keystore ? p.keystore : p.cert);
        set_str(&kc_security.key_file, p.keystore ? p.keystore : p.key);
        set_str(&kc_security.key_password, p.keypass);
        /* Kafka's default is https (check the host name); "" turns it off */
        kc_security.verify_host = !p.ident || strcasecmp(p.ident, "https") == 0;
    }
    bool sasl = !strcasecmp(proto, "SASL_PLAINTEXT") || !strcasecmp(proto, "SASL_SSL");
    if (sasl) {
        if (!kc_security.mechanism)
            set_str(&kc_security.mechanism, p.mechanism ? p.mechanism : "GSSAPI");
        char *u = NULL, *pw = NULL;
        if (p.jaas)
            kc_jaas_credentials(p.jaas, &u, &pw);
        if (!kc_security.username)
            set_str(&kc_security.username, u ? u : p.user);
        if (!kc_security.password)
            set_str(&kc_security.password, pw ? pw : p.pass);
        free(u);
        free(pw);
    }
    rc = 0;
out:
    free(p.protocol);
    free(p.mechanism);
    free(p.jaas);
    free(p.user);
    free(p.pass);
    free(p.ca);
    free(p.keystore);
    free(p.cert);
    free(p.key);
    free(p.keypass);
    free(p.ident);
    free(p.ts_type);
    free(p.ks_type);
    return rc;
}

/* One SaslAuthenticate round: token out, server token back (malloc'd). */
static int authenticate(struct kc_client *c, struct kc_conn *conn, const uint8_t *tok, size_t len, uint8_t **back,
                        size_t *back_len)
{
    int16_t v = kc_version(conn, KAPI_SASL_AUTHENTICATE);
    if (v < 0)
        return kc_fail(c, KERR_UNSUPPORTED_VERSION, "%s:%d does not offer SaslAuthenticate", conn->host, conn->port);
    sasl_authenticate_request_t req;
    sasl_authenticate_request_init(&req);
    req.auth_bytes = (kbytes_t){tok, (int32_t)len};
    struct kc_response resp;
    int rc = kc_call_version(c, conn, KAPI_SASL_AUTHENTICATE, v, &req, &resp);
    if (rc)
        return rc;
    const sasl_authenticate_response_t *m = resp.msg;
    if (m->error_code) {
        rc = kc_fail(c, m->error_code, "%.*s", m->error_message.len > 0 ? (int)m->error_message.len : 0,
                     m->error_message.len > 0 ? m->error_message.p : "");
        kc_response_free(&resp);
        return rc;
    }
    *back_len = m->auth_bytes.len > 0 ? (size_t)m->auth_bytes.len : 0;
    *back = malloc(*back_len + 1);
    if (*back_len)
        memcpy(*back, m->auth_bytes.p, *back_len);
    (*back)[*back_len] = '\0';
    kc_response_free(&resp);
    return 0;
}

int kc_sasl_login(struct kc_client *c, struct kc_conn *conn)
{
    const char *mech = kc_security.mechanism;
    if (!kc_security.username || !kc_security.password)
        return kc_fail(c, KERR_SASL_AUTHENTICATION_FAILED, "SASL %s needs a username and a password "
                       "(--sasl-username/--sasl-password or sasl.jaas.config)", mech);
    sasl_handshake_request_t hs;
    sasl_handshake_request_init(&hs);
    hs.mechanism = KSTR(mech);
    struct kc_response resp;
    int rc = kc_call_version(c, conn, KAPI_SASL_HANDSHAKE, 1, &hs, &resp);
    if (rc)
        return rc;
    const sasl_handshake_response_t *m = resp.msg;
    if (m->error_code) {
        char list[256] = "";
        size_t off = 0;
        for (int32_t i = 0; i < m->mechanisms.n && off < sizeof list; i++)
            off += (size_t)snprintf(list + off, sizeof list - off, "%s%.*s", i ? ", " : "",
                                    (int)m->mechanisms.a[i].len, m->mechanisms.a[i].p);
        rc = m->error_code == KERR_UNSUPPORTED_SASL_MECHANISM
                 ? kc_fail(c, rc = m->error_code, "%s:%d does not enable SASL mechanism %s (enabled: %s)",
                           conn->host, conn->port, mech, list[0] ? list : "none")
                 : kc_fail(c, m->error_code, "SaslHandshake to %s:%d failed", conn->host, conn->port);
        kc_response_free(&resp);
        return rc;
    }
    kc_response_free(&resp);
    char why[256];
    struct sasl_client *sc = sasl_client_new(mech, kc_security.username, kc_security.password, why, sizeof why);
    if (!sc)
        return kc_fail(c, KERR_UNSUPPORTED_SASL_MECHANISM, "samsactl: %s", why);
    uint8_t *back = NULL, *tok = NULL;
    size_t bl = 0, tl = 0;
    while ((rc = sasl_client_step(sc, back, bl, &tok, &tl, why, sizeof why)) == 1) {
        free(back);
        back = NULL;
        rc = authenticate(c, conn, tok, tl, &back, &bl);
        free(tok);
        if (rc)
            break;
    }
    if (rc < 0)
        rc = kc_fail(c, KERR_SASL_AUTHENTICATION_FAILED, "%s", why);
    free(back);
    sasl_client_free(sc);
    return rc;
}
