/* SPDX-License-Identifier: Apache-2.0
 *
 * sasl-scram: SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) on
 * the server side, as Kafka's ScramSaslServer.
 *
 *   client-first  n,,n=<user>,r=<cnonce>[,ext...]
 *   server-first  r=<cnonce><snonce>,s=<base64 salt>,i=<iterations>
 *   client-final  c=biws,r=<cnonce><snonce>[,ext...],p=<base64 proof>
 *   server-final  v=<base64 ServerSignature>
 *
 * Credentials (salt, iterations, StoredKey, ServerKey) are the cluster's:
 * UserScramCredentialRecords in the metadata log, written with Kafka's
 * AlterUserScramCredentials (kafka-configs.sh --alter --add-config
 * 'SCRAM-SHA-256=[password=...]', samsactl users scram set), read
 * through the host's scram_credential_get (ABI 1.1). Channel binding
 * ("p=") is refused, as Kafka does; the delegation-token extension
 * (tokenauth=true) is refused (samsa has no delegation tokens); other
 * extensions are ignored. Every failure answers Kafka's text
 * "Authentication failed during authentication due to invalid
 * credentials with SASL mechanism <M>". Compiled against include/samsa
 * only; OpenSSL's libcrypto does the hashing. */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samsa/sasl.h"

#ifndef SAMSA_MODULE_VERSION
#define SAMSA_MODULE_VERSION "0"
#endif

/* Kafka's ScramMechanism minimum. */
#define SCRAM_MIN_ITERATIONS 4096
#define SCRAM_FIELD_MAX 1024

struct scram_mech_info {
    samsa_sasl_mech_t vt;
    int id;        /* SAMSA_SCRAM_SHA_* */
    const char *name;
    const EVP_MD *(*md)(void);
};

/* ------------------------------------------------------------------ */
/* Base64 (RFC 4648, with padding)                                     */

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Returns the length written (NUL-terminated), or -1 if it does not fit. */
static int scram_b64_encode(const uint8_t *in, size_t len, char *out, size_t outlen)
{
    size_t need = (len + 2) / 3 * 4;
    if (need + 1 > outlen)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < len)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < len)
            v |= in[i + 2];
        out[o++] = b64chars[(v >> 18) & 63];
        out[o++] = b64chars[(v >> 12) & 63];
        out[o++] = i + 1 < len ? b64chars[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? b64chars[v & 63] : '=';
    }
    out[o] = '\0';
    return (int)o;
}

static int b64val(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Strict: length a multiple of 4, padding only at the end. Returns the
 * decoded length or -1. */
static int scram_b64_decode(const char *in, size_t len, uint8_t *out, size_t outlen)
{
    if (len % 4)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            if (in[i + k] == '=' && i + 4 == len && k >= 2) {
                v[k] = 0;
                pad++;
                continue;
            }
            if (pad)
                return -1;
            v[k] = b64val(in[i + k]);
            if (v[k] < 0)
                return -1;
        }
        uint32_t x = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        uint8_t b[3] = {(uint8_t)(x >> 16), (uint8_t)(x >> 8), (uint8_t)x};
        for (int k = 0; k < 3 - pad; k++) {
            if (o >= outlen)
                return -1;
            out[o++] = b[k];
        }
    }
    return (int)o;
}

/* ------------------------------------------------------------------ */
/* Messages (pure parsing; static, but tests/unit/sasl_test.c and the  */
/* fuzz target compile this file in and call them)                     */

struct scram_client_first {
    char gs2[SCRAM_FIELD_MAX];        /* "n,," or "y,," or "n,a=x," */
    char bare[2 * SCRAM_FIELD_MAX];   /* client-first-message-bare */
    char user[SCRAM_FIELD_MAX];       /* saslname decoded (=2C =3D) */
    char nonce[SCRAM_FIELD_MAX];
    bool tokenauth;                   /* extension tokenauth=true */
};

/* RFC 5802 saslname: "=2C" is ',', "=3D" is '=', any other '=' is an
 * error, and ',' cannot appear. */
static int decode_saslname(const char *s, size_t n, char *out, size_t outlen)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == ',' || c == '\0')
            return -1;
        if (c == '=') {
            if (n - i >= 3 && s[i + 1] == '2' && s[i + 2] == 'C')
                c = ',';
            else if (n - i >= 3 && s[i + 1] == '3' && s[i + 2] == 'D')
                c = '=';
            else
                return -1;
            i += 2;
        }
        if (o + 1 >= outlen)
            return -1;
        out[o++] = c;
    }
    out[o] = '\0';
    return 0;
}

/* A printable nonce: %x21-2B / %x2D-7E (RFC 5802 "printable"). */
static bool valid_nonce(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x21 || s[i] > 0x7e || s[i] == ',')
            return false;
    return true;
}

/* Parses client-first. Returns 0 or -1 with why. */
static int scram_parse_client_first(const uint8_t *in, size_t len, struct scram_client_first *m, const char **why)
{
    const char *s = (const char *)in;
    memset(m, 0, sizeof *m);
    if (len == 0 || len >= sizeof m->bare || memchr(s, '\0', len)) {
        *why = "empty, too long or holding NUL";
        return -1;
    }
    /* gs2-cbind-flag */
    if (len < 3 || (s[0] != 'n' && s[0] != 'y') || s[1] != ',') {
        *why = s[0] == 'p' ? "channel binding is not supported" : "invalid GS2 header";
        return -1;
    }
    size_t i = 2;
    if (s[i] == 'a' && i + 1 < len && s[i + 1] == '=') {
        const char *c = memchr(s + i, ',', len - i);
        if (!c) {
            *why = "invalid authzid";
            return -1;
        }
        i = (size_t)(c - s);
    }
    if (i >= len || s[i] != ',') {
        *why = "invalid GS2 header";
        return -1;
    }
    i++;
    if (i >= sizeof m->gs2) {
        *why = "authzid too long";
        return -1;
    }
    memcpy(m->gs2, s, i);
    m->gs2[i] = '\0';
    memcpy(m->bare, s + i, len - i);
    m->bare[len - i] = '\0';
    /* bare: n=<saslname>,r=<nonce>[,<ext>=<value>...] */
    const char *b = m->bare;
    size_t bl = len - i;
    if (bl < 2 || b[0] != 'n' || b[1] != '=') {
        *why = "client-first does not start with n=";
        return -1;
    }
    const char *comma = memchr(b, ',', bl);
    if (!comma || decode_saslname(b + 2, (size_t)(comma - b - 2), m->user, sizeof m->user) < 0 || !m->user[0]) {
        *why = "invalid user name";
        return -1;
    }
    const char *r = comma + 1;
    size_t rl = bl - (size_t)(r - b);
    if (rl < 2 || r[0] != 'r' || r[1] != '=') {
        *why = "no nonce";
        return -1;
    }
    const char *end = memchr(r, ',', rl);
    size_t nl = end ? (size_t)(end - r - 2) : rl - 2;
    if (!valid_nonce(r + 2, nl) || nl >= sizeof m->nonce) {
        *why = "invalid nonce";
        return -1;
    }
    memcpy(m->nonce, r + 2, nl);
    m->nonce[nl] = '\0';
    /* extensions: key=value, comma-separated */
    while (end) {
        const char *e = end + 1;
        size_t el = bl - (size_t)(e - b);
        end = memchr(e, ',', el);
        size_t one = end ? (size_t)(end - e) : el;
        const char *eq = memchr(e, '=', one);
        if (!eq || eq == e) {
            *why = "invalid extension";
            return -1;
        }
        if ((size_t)(eq - e) == 9 && !memcmp(e, "tokenauth", 9) && one == 14 && !memcmp(eq + 1, "true", 4))
            m->tokenauth = true;
    }
    return 0;
}

struct scram_client_final {
    char channel[SCRAM_FIELD_MAX];   /* c= value (base64) */
    char nonce[SCRAM_FIELD_MAX];
    uint8_t proof[EVP_MAX_MD_SIZE];
    size_t proof_len;
    size_t without_proof_len;        /* bytes before ",p=" */
};

/* Parses client-final: c=...,r=...[,ext...],p=... with p last. */
static int scram_parse_client_final(const uint8_t *in, size_t len, struct scram_client_final *m, const char **why)
{
    const char *s = (const char *)in;
    memset(m, 0, sizeof *m);
    if (len == 0 || len >= 4 * SCRAM_FIELD_MAX || memchr(s, '\0', len)) {
        *why = "empty, too long or holding NUL";
        return -1;
    }
    if (len < 2 || s[0] != 'c' || s[1] != '=') {
        *why = "client-final does not start with c=";
        return -1;
    }
    const char *comma = memchr(s, ',', len);
    if (!comma || (size_t)(comma - s - 2) >= sizeof m->channel) {
        *why = "invalid channel binding";
        return -1;
    }
    memcpy(m->channel, s + 2, (size_t)(comma - s - 2));
    const char *r = comma + 1;
    size_t rl = len - (size_t)(r - s);
    if (rl < 2 || r[0] != 'r' || r[1] != '=') {
        *why = "no nonce";
        return -1;
    }
    const char *end = memchr(r, ',', rl);
    if (!end) {
        *why = "no proof";
        return -1;
    }
    size_t nl = (size_t)(end - r - 2);
    if (!valid_nonce(r + 2, nl) || nl >= sizeof m->nonce) {
        *why = "invalid nonce";
        return -1;
    }
    memcpy(m->nonce, r + 2, nl);
    /* the proof is the last attribute */
    const char *p = NULL;
    for (const char *q = end; q && q < s + len;) {
        size_t left = len - (size_t)(q - s);
        if (left >= 3 && q[0] == ',' && q[1] == 'p' && q[2] == '=')
            p = q;
        q = memchr(q + 1, ',', left - 1);
    }
    if (!p) {
        *why = "no proof";
        return -1;
    }
    m->without_proof_len = (size_t)(p - s);
    const char *pv = p + 3;
    size_t pl = len - (size_t)(pv - s);
    if (memchr(pv, ',', pl)) {
        *why = "proof is not the last attribute";
        return -1;
    }
    int n = scram_b64_decode(pv, pl, m->proof, sizeof m->proof);
    if (n <= 0) {
        *why = "invalid proof";
        return -1;
    }
    m->proof_len = (size_t)n;
    return 0;
}

/* ------------------------------------------------------------------ */
/* The math (RFC 5802 section 3)                                       */

/* SaltedPassword := Hi(Normalize(password), salt, i) (PBKDF2). */
static __attribute__((unused)) int scram_salted_password(const EVP_MD *md, const char *password, const uint8_t *salt, size_t salt_len,
                          int iterations, uint8_t *out)
{
    return PKCS5_PBKDF2_HMAC(password, (int)strlen(password), salt, (int)salt_len, iterations, md,
                             EVP_MD_size(md), out) == 1
               ? 0
               : -1;
}

/* StoredKey and ServerKey from SaltedPassword. */
static __attribute__((unused)) int scram_keys(const EVP_MD *md, const uint8_t *salted, uint8_t *stored_key, uint8_t *server_key)
{
    uint8_t ck[EVP_MAX_MD_SIZE];
    unsigned int n = 0, m = 0;
    int sz = EVP_MD_size(md);
    if (!HMAC(md, salted, sz, (const uint8_t *)"Client Key", 10, ck, &n) ||
        !EVP_Digest(ck, n, stored_key, &m, md, NULL) ||
        !HMAC(md, salted, sz, (const uint8_t *)"Server Key", 10, server_key, &n))
        return -1;
    return 0;
}

/* Checks proof against stored_key over auth_message; on success writes
 * the ServerSignature (EVP_MD_size bytes) to server_sig. 0 or -1. */
static int scram_verify(const EVP_MD *md, const uint8_t *stored_key, const uint8_t *server_key, const char *auth_message,
                 size_t am_len, const uint8_t *proof, size_t proof_len, uint8_t *server_sig)
{
    int sz = EVP_MD_size(md);
    if ((int)proof_len != sz)
        return -1;
    uint8_t sig[EVP_MAX_MD_SIZE], ck[EVP_MAX_MD_SIZE], h[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (!HMAC(md, stored_key, sz, (const uint8_t *)auth_message, am_len, sig, &n))
        return -1;
    for (int i = 0; i < sz; i++)
        ck[i] = proof[i] ^ sig[i];
    if (!EVP_Digest(ck, (size_t)sz, h, &n, md, NULL))
        return -1;
    if (CRYPTO_memcmp(h, stored_key, (size_t)sz) != 0)
        return -1;
    if (!HMAC(md, server_key, sz, (const uint8_t *)auth_message, am_len, server_sig, &n))
        return -1;
    return 0;
}

/* ------------------------------------------------------------------ */
/* The mechanism                                                       */

struct scram_state {
    samsa_host_t *host;
    const samsa_host_api_t *api;
    samsa_metric_t *ok, *failed;
};

static struct scram_state g_scram;

/* For tests: a fixed server nonce instead of a random one. */
static const char *scram_fixed_server_nonce;

struct scram_session {
    int stage; /* 0: awaiting client-first, 1: client-final, 2: done */
    char gs2[SCRAM_FIELD_MAX];
    char *auth_prefix; /* client-first-bare "," server-first "," */
    size_t auth_prefix_len;
    char nonce[2 * SCRAM_FIELD_MAX];
    char principal[SCRAM_FIELD_MAX + 8];
    samsa_scram_credential_t cred;
};

static int scram_session_new(void *cap_state, const samsa_sasl_conn_t *conn, void **session)
{
    (void)cap_state;
    (void)conn;
    struct scram_session *s = calloc(1, sizeof *s);
    if (!s)
        return SAMSA_ENOMEM;
    *session = s;
    return SAMSA_OK;
}

static int auth_fail(const struct scram_mech_info *mi, struct scram_state *st, char *errstr, size_t errlen,
                const char *why)
{
    st->api->metric_add(st->failed, 1);
    snprintf(errstr, errlen,
             "Authentication failed during authentication due to invalid credentials with SASL mechanism %s",
             mi->name);
    st->api->log(st->host, SAMSA_LOG_DEBUG, "%s: %s", mi->name, why);
    return SAMSA_EAUTH;
}

static int put(samsa_out_t *out, const char *s, size_t n)
{
    size_t avail = 0;
    uint8_t *p = out->reserve(out, n, &avail);
    if (!p)
        return SAMSA_ENOSPC;
    memcpy(p, s, n);
    out->commit(out, n);
    return SAMSA_OK;
}

static int step_first(const struct scram_mech_info *mi, struct scram_state *st, struct scram_session *s,
                      const uint8_t *in, size_t in_len, samsa_out_t *out, char *errstr, size_t errlen)
{
    struct scram_client_first *m = malloc(sizeof *m);
    if (!m)
        return SAMSA_ENOMEM;
    const char *why = NULL;
    if (scram_parse_client_first(in, in_len, m, &why) < 0) {
        free(m);
        return auth_fail(mi, st, errstr, errlen, why);
    }
    if (m->tokenauth) {
        free(m);
        return auth_fail(mi, st, errstr, errlen, "delegation tokens are not supported");
    }
    s->cred.struct_size = sizeof s->cred;
    int rc = SAMSA_HOST_HAS(st->api, scram_credential_get)
                 ? st->api->scram_credential_get(st->host, mi->id, m->user, &s->cred)
                 : SAMSA_EUNSUPPORTED;
    int md_size = EVP_MD_size(mi->md());
    if (rc != SAMSA_OK || s->cred.stored_key_len != (size_t)md_size || s->cred.server_key_len != (size_t)md_size) {
        free(m);
        return auth_fail(mi, st, errstr, errlen, "Authentication failed: Invalid user credentials");
    }
    if (s->cred.iterations < SCRAM_MIN_ITERATIONS) {
        free(m);
        return auth_fail(mi, st, errstr, errlen, "too few iterations");
    }
    char snonce[64];
    if (scram_fixed_server_nonce) {
        snprintf(snonce, sizeof snonce, "%s", scram_fixed_server_nonce);
    } else {
        uint8_t rnd[24];
        if (RAND_bytes(rnd, sizeof rnd) != 1) {
            free(m);
            return auth_fail(mi, st, errstr, errlen, "RAND_bytes failed");
        }
        scram_b64_encode(rnd, sizeof rnd, snonce, sizeof snonce);
    }
    snprintf(s->nonce, sizeof s->nonce, "%s%s", m->nonce, snonce);
    char salt64[SAMSA_SCRAM_SALT_MAX * 2];
    scram_b64_encode(s->cred.salt, s->cred.salt_len, salt64, sizeof salt64);
    size_t sf_cap = strlen(s->nonce) + strlen(salt64) + 32;
    char *sf = malloc(sf_cap);
    if (!sf) {
        free(m);
        return SAMSA_ENOMEM;
    }
    int sfl = snprintf(sf, sf_cap, "r=%s,s=%s,i=%d", s->nonce, salt64, (int)s->cred.iterations);
    size_t bl = strlen(m->bare);
    s->auth_prefix_len = bl + 1 + (size_t)sfl + 1;
    s->auth_prefix = malloc(s->auth_prefix_len + 1);
    if (!s->auth_prefix) {
        free(sf);
        free(m);
        return SAMSA_ENOMEM;
    }
    snprintf(s->auth_prefix, s->auth_prefix_len + 1, "%s,%s,", m->bare, sf);
    snprintf(s->gs2, sizeof s->gs2, "%s", m->gs2);
    snprintf(s->principal, sizeof s->principal, "User:%s", m->user);
    free(m);
    rc = put(out, sf, (size_t)sfl);
    free(sf);
    if (rc != SAMSA_OK)
        return auth_fail(mi, st, errstr, errlen, "server-first does not fit");
    s->stage = 1;
    return SAMSA_SASL_CONTINUE;
}

static int step_final(const struct scram_mech_info *mi, struct scram_state *st, struct scram_session *s,
                      const uint8_t *in, size_t in_len, samsa_out_t *out, char *errstr, size_t errlen)
{
    struct scram_client_final *m = malloc(sizeof *m);
    if (!m)
        return SAMSA_ENOMEM;
    const char *why = NULL;
    if (scram_parse_client_final(in, in_len, m, &why) < 0) {
        free(m);
        return auth_fail(mi, st, errstr, errlen, why);
    }
    char gs2b64[2 * SCRAM_FIELD_MAX];
    scram_b64_encode((const uint8_t *)s->gs2, strlen(s->gs2), gs2b64, sizeof gs2b64);
    if (strcmp(m->channel, gs2b64) != 0) {
        free(m);
        return auth_fail(mi, st, errstr, errlen, "channel binding does not match the GS2 header");
    }
    /* Kafka's ScramSaslServer checks endsWith, not equality: librdkafka
     * up to 2.x sends its own nonce again in front of the combined one */
    size_t gl = strlen(m->nonce), wl = strlen(s->nonce);
    if (gl < wl || strcmp(m->nonce + gl - wl, s->nonce) != 0) {
        free(m);
        return auth_fail(mi, st, errstr, errlen, "Invalid client nonce in the final client message.");
    }
    size_t am_len = s->auth_prefix_len + m->without_proof_len;
    char *am = malloc(am_len + 1);
    if (!am) {
        free(m);
        return SAMSA_ENOMEM;
    }
    memcpy(am, s->auth_prefix, s->auth_prefix_len);
    memcpy(am + s->auth_prefix_len, in, m->without_proof_len);
    am[am_len] = '\0';
    uint8_t sig[EVP_MAX_MD_SIZE];
    const EVP_MD *md = mi->md();
    int bad = scram_verify(md, s->cred.stored_key, s->cred.server_key, am, am_len, m->proof, m->proof_len, sig);
    free(am);
    free(m);
    if (bad)
        return auth_fail(mi, st, errstr, errlen, "Invalid client credentials");
    char v[2 * EVP_MAX_MD_SIZE + 8] = "v=";
    scram_b64_encode(sig, (size_t)EVP_MD_size(md), v + 2, sizeof v - 2);
    if (put(out, v, strlen(v)) != SAMSA_OK)
        return auth_fail(mi, st, errstr, errlen, "server-final does not fit");
    s->stage = 2;
    st->api->metric_add(st->ok, 1);
    return SAMSA_OK;
}

static int scram_step(void *cap_state, void *session, const uint8_t *in, size_t in_len, samsa_out_t *out,
                      samsa_async_t *token, char *errstr, size_t errlen)
{
    (void)token;
    const struct scram_mech_info *mi = cap_state;
    struct scram_session *s = session;
    if (s->stage == 0)
        return step_first(mi, &g_scram, s, in, in_len, out, errstr, errlen);
    if (s->stage == 1)
        return step_final(mi, &g_scram, s, in, in_len, out, errstr, errlen);
    return auth_fail(mi, &g_scram, errstr, errlen, "exchange already complete");
}

static const char *scram_principal(void *cap_state, void *session)
{
    (void)cap_state;
    return ((struct scram_session *)session)->principal;
}

static void scram_session_free(void *cap_state, void *session)
{
    (void)cap_state;
    struct scram_session *s = session;
    if (!s)
        return;
    free(s->auth_prefix);
    OPENSSL_cleanse(&s->cred, sizeof s->cred);
    free(s);
}

#define SCRAM_VT(nm)                                                                                      \
    {                                                                                                     \
        .hdr = {.struct_size = sizeof(samsa_sasl_mech_t), .kind = SAMSA_CAP_SASL, .name = nm},            \
        .session_new = scram_session_new, .step = scram_step, .principal = scram_principal,             \
        .session_lifetime_ms = NULL, .session_free = scram_session_free,                                  \
    }

static struct scram_mech_info scram_mechs[2] = {
    {SCRAM_VT("SCRAM-SHA-256"), SAMSA_SCRAM_SHA_256, "SCRAM-SHA-256", EVP_sha256},
    {SCRAM_VT("SCRAM-SHA-512"), SAMSA_SCRAM_SHA_512, "SCRAM-SHA-512", EVP_sha512},
};

static int scram_init(samsa_host_t *host, const samsa_host_api_t *api, void **state, char *errstr, size_t errlen)
{
    (void)state;
    if (!SAMSA_HOST_HAS(api, scram_credential_get)) {
        snprintf(errstr, errlen, "this samsa has no scram_credential_get (needs ABI 1.1)");
        return SAMSA_EUNSUPPORTED;
    }
    g_scram.host = host;
    g_scram.api = api;
    g_scram.ok = api->metric_register(host, "authentications", SAMSA_METRIC_COUNTER,
                                      "Successful SASL/SCRAM authentications.");
    g_scram.failed = api->metric_register(host, "authentication_failures", SAMSA_METRIC_COUNTER,
                                          "Failed SASL/SCRAM authentications.");
    for (int i = 0; i < 2; i++) {
        int rc = api->register_capability(host, &scram_mechs[i].vt.hdr, &scram_mechs[i]);
        if (rc != SAMSA_OK)
            return rc;
    }
    return SAMSA_OK;
}

static const samsa_plugin_info_t scram_info = {
    SAMSA_PLUGIN_INFO_HEADER,
    .name = "sasl-scram",
    .version = SAMSA_MODULE_VERSION,
    .description = "SASL/SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, 7677) over the cluster's SCRAM credentials",
    .license = "Apache-2.0",
    .init = scram_init,
};

#ifndef SAMSA_SASL_NO_ENTRY
SAMSA_PLUGIN_DECLARE(sasl_scram, scram_info)
#endif
