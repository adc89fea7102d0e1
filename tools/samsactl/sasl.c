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

/* value of option key in a JAAS config ("key=\"v\"" or key=v) */
static char *jaas_option(const char *jaas, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = jaas; (p = strstr(p, key)) != NULL; p += kl) {
        if (p > jaas && p[-1] != ' ' && p[-1] != '\t' && p[-1] != '\n')
            continue;
        const char *q = p + kl;
        while (*q == ' ')
            q++;
        if (*q != '=')
            continue;
        q++;
        while (*q == ' ')
            q++;
        char *out = malloc(strlen(q) + 1);
        size_t o = 0;
        if (*q == '"') {
            q++;
            while (*q && *q != '"') {
                if (*q == '\\' && q[1])
                    q++;
                out[o++] = *q++;
            }
        } else {
            while (*q && *q != ' ' && *q != ';' && *q != '\n')
                out[o++] = *q++;
        }
        out[o] = '\0';
        return out;
    }
    return NULL;
}

int kc_jaas_credentials(const char *jaas, char **username, char **password)
{
    *username = jaas_option(jaas, "username");
    *password = jaas_option(jaas, "password");
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

int kc_scram_mechanism(const char *name)
{
    if (!strcmp(name, "SCRAM-SHA-256"))
        return 1;
    if (!strcmp(name, "SCRAM-SHA-512"))
        return 2;
    return -1;
}

static const EVP_MD *scram_md(int mechanism)
{
    return mechanism == 1 ? EVP_sha256() : mechanism == 2 ? EVP_sha512() : NULL;
}

int kc_scram_salted_password(int mechanism, const char *password, const uint8_t *salt, size_t salt_len,
                             int iterations, uint8_t *out, size_t *out_len)
{
    const EVP_MD *md = scram_md(mechanism);
    if (!md)
        return -1;
    int n = EVP_MD_size(md);
    if (PKCS5_PBKDF2_HMAC(password, (int)strlen(password), salt, (int)salt_len, iterations, md, n, out) != 1)
        return -1;
    *out_len = (size_t)n;
    return 0;
}

static char *b64(const uint8_t *p, size_t n)
{
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    EVP_EncodeBlock((unsigned char *)out, p, (int)n);
    return out;
}

/* Strict enough for a server's base64; -1 on error. */
static int unb64(const char *s, size_t n, uint8_t *out, size_t cap)
{
    if (n % 4 || n / 4 * 3 > cap)
        return -1;
    int r = EVP_DecodeBlock(out, (const unsigned char *)s, (int)n);
    if (r < 0)
        return -1;
    if (n >= 1 && s[n - 1] == '=')
        r--;
    if (n >= 2 && s[n - 2] == '=')
        r--;
    return r;
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

/* "n=" saslname: ',' as =2C, '=' as =3D */
static char *saslname(const char *user)
{
    char *out = malloc(strlen(user) * 3 + 1);
    size_t o = 0;
    for (const char *p = user; *p; p++) {
        if (*p == ',') {
            memcpy(out + o, "=2C", 3);
            o += 3;
        } else if (*p == '=') {
            memcpy(out + o, "=3D", 3);
            o += 3;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
    return out;
}

/* attribute a= of a SCRAM message, or NULL */
static const char *attr(const char *msg, char a, size_t *len)
{
    const char *p = msg;
    while (p && *p) {
        if (p[0] == a && p[1] == '=') {
            const char *e = strchr(p, ',');
            *len = e ? (size_t)(e - p - 2) : strlen(p + 2);
            return p + 2;
        }
        p = strchr(p, ',');
        if (p)
            p++;
    }
    return NULL;
}

static int scram_login(struct kc_client *c, struct kc_conn *conn, int mechanism)
{
    const EVP_MD *md = scram_md(mechanism);
    int sz = EVP_MD_size(md);
    uint8_t rnd[24];
    RAND_bytes(rnd, sizeof rnd);
    char *cnonce = b64(rnd, sizeof rnd);
    char *name = saslname(kc_security.username);
    size_t bare_cap = strlen(name) + strlen(cnonce) + 16;
    char *bare = malloc(bare_cap);
    snprintf(bare, bare_cap, "n=%s,r=%s", name, cnonce);
    free(name);
    char *first = malloc(bare_cap + 4);
    snprintf(first, bare_cap + 4, "n,,%s", bare);
    uint8_t *sf = NULL;
    size_t sf_len = 0;
    int rc = authenticate(c, conn, (const uint8_t *)first, strlen(first), &sf, &sf_len);
    free(first);
    char *final = NULL, *am = NULL;
    uint8_t *sfin = NULL;
    if (rc)
        goto out;
    size_t nl = 0, sl = 0, il = 0;
    const char *nonce = attr((char *)sf, 'r', &nl);
    const char *salt64 = attr((char *)sf, 's', &sl);
    const char *iter = attr((char *)sf, 'i', &il);
    if (!nonce || !salt64 || !iter || nl <= strlen(cnonce) || strncmp(nonce, cnonce, strlen(cnonce)) != 0) {
        rc = kc_fail(c, KERR_SASL_AUTHENTICATION_FAILED, "invalid SCRAM server-first message");
        goto out;
    }
    uint8_t salt[512];
    int saltn = unb64(salt64, sl, salt, sizeof salt);
    int iterations = atoi(iter);
    if (saltn <= 0 || iterations <= 0) {
        rc = kc_fail(c, KERR_SASL_AUTHENTICATION_FAILED, "invalid SCRAM salt or iteration count");
        goto out;
    }
    uint8_t salted[EVP_MAX_MD_SIZE], ck[EVP_MAX_MD_SIZE], stored[EVP_MAX_MD_SIZE], sig[EVP_MAX_MD_SIZE],
        sk[EVP_MAX_MD_SIZE], ssig[EVP_MAX_MD_SIZE], proof[EVP_MAX_MD_SIZE];
    size_t slen;
    unsigned int n;
    kc_scram_salted_password(mechanism, kc_security.password, salt, (size_t)saltn, iterations, salted, &slen);
    size_t wp_cap = nl + 32;
    char *without_proof = malloc(wp_cap);
    snprintf(without_proof, wp_cap, "c=biws,r=%.*s", (int)nl, nonce);
    size_t am_cap = strlen(bare) + sf_len + strlen(without_proof) + 4;
    am = malloc(am_cap);
    snprintf(am, am_cap, "%s,%s,%s", bare, (char *)sf, without_proof);
    HMAC(md, salted, sz, (const uint8_t *)"Client Key", 10, ck, &n);
    EVP_Digest(ck, (size_t)sz, stored, &n, md, NULL);
    HMAC(md, stored, sz, (const uint8_t *)am, strlen(am), sig, &n);
    for (int i = 0; i < sz; i++)
        proof[i] = ck[i] ^ sig[i];
    char *proof64 = b64(proof, (size_t)sz);
    size_t fcap = strlen(without_proof) + strlen(proof64) + 8;
    final = malloc(fcap);
    snprintf(final, fcap, "%s,p=%s", without_proof, proof64);
    free(without_proof);
    free(proof64);
    size_t sfin_len = 0;
    rc = authenticate(c, conn, (const uint8_t *)final, strlen(final), &sfin, &sfin_len);
    if (rc)
        goto out;
    HMAC(md, salted, sz, (const uint8_t *)"Server Key", 10, sk, &n);
    HMAC(md, sk, sz, (const uint8_t *)am, strlen(am), ssig, &n);
    size_t vl = 0;
    const char *v = attr((char *)sfin, 'v', &vl);
    uint8_t got[EVP_MAX_MD_SIZE + 3];
    if (!v || unb64(v, vl, got, sizeof got) != sz || CRYPTO_memcmp(got, ssig, (size_t)sz) != 0)
        rc = kc_fail(c, KERR_SASL_AUTHENTICATION_FAILED, "the server's SCRAM signature does not verify");
out:
    free(cnonce);
    free(bare);
    free(sf);
    free(sfin);
    free(final);
    free(am);
    return rc;
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
    if (!strcmp(mech, "PLAIN")) {
        size_t ul = strlen(kc_security.username), pl = strlen(kc_security.password);
        uint8_t *tok = malloc(ul + pl + 2);
        tok[0] = '\0';
        memcpy(tok + 1, kc_security.username, ul);
        tok[1 + ul] = '\0';
        memcpy(tok + 2 + ul, kc_security.password, pl);
        uint8_t *back = NULL;
        size_t bl = 0;
        rc = authenticate(c, conn, tok, ul + pl + 2, &back, &bl);
        free(tok);
        free(back);
        return rc;
    }
    int sm = kc_scram_mechanism(mech);
    if (sm > 0)
        return scram_login(c, conn, sm);
    return kc_fail(c, KERR_UNSUPPORTED_SASL_MECHANISM, "samsactl does not speak SASL mechanism %s (PLAIN, "
                   "SCRAM-SHA-256, SCRAM-SHA-512)", mech);
}
