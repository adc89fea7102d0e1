/* SASL client exchanges: see sasl_client.h. */
#include "net/sasl_client.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

enum step { ST_FIRST, ST_SERVER_FIRST, ST_SERVER_FINAL, ST_DONE };

struct sasl_client {
    int scram; /* 0 PLAIN, else the SCRAM mechanism id */
    char *user, *pass;
    char *nonce;          /* client nonce (SCRAM) */
    enum step step;
    char *bare;           /* client-first-message-bare */
    char *auth_message;   /* for the server's signature */
    uint8_t salted[EVP_MAX_MD_SIZE];
    size_t salted_len;
};

int sasl_scram_mechanism(const char *name)
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

int sasl_scram_salted_password(int mechanism, const char *password, const uint8_t *salt, size_t salt_len,
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

char *sasl_jaas_option(const char *jaas, const char *key)
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
        char *out = xmalloc(strlen(q) + 1);
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

struct sasl_client *sasl_client_new(const char *mechanism, const char *username, const char *password, char *err,
                                    size_t errlen)
{
    int scram = 0;
    if (strcmp(mechanism, "PLAIN") != 0 && (scram = sasl_scram_mechanism(mechanism)) < 0) {
        snprintf(err, errlen, "SASL mechanism %s: samsa's client speaks PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512",
                 mechanism);
        return NULL;
    }
    struct sasl_client *c = xcalloc(1, sizeof *c);
    c->scram = scram;
    c->user = xstrdup(username);
    c->pass = xstrdup(password);
    return c;
}

void sasl_client_free(struct sasl_client *c)
{
    if (!c)
        return;
    if (c->pass)
        OPENSSL_cleanse(c->pass, strlen(c->pass));
    OPENSSL_cleanse(c->salted, sizeof c->salted);
    free(c->user);
    free(c->pass);
    free(c->nonce);
    free(c->bare);
    free(c->auth_message);
    free(c);
}

void sasl_client_set_nonce(struct sasl_client *c, const char *nonce)
{
    free(c->nonce);
    c->nonce = xstrdup(nonce);
}

static char *b64(const uint8_t *p, size_t n)
{
    char *out = xmalloc(4 * ((n + 2) / 3) + 1);
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

/* "n=" saslname: ',' as =2C, '=' as =3D */
static char *saslname(const char *user)
{
    char *out = xmalloc(strlen(user) * 3 + 1);
    size_t o = 0;
    for (const char *p = user; *p; p++) {
        if (*p == ',' || *p == '=') {
            memcpy(out + o, *p == ',' ? "=2C" : "=3D", 3);
            o += 3;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
    return out;
}

/* Attribute a= of a SCRAM message (NUL-terminated), or NULL. */
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

static char *fmt_alloc(const char *f, const char *a, const char *b, const char *c)
{
    size_t n = strlen(f) + strlen(a) + strlen(b) + strlen(c) + 1;
    char *out = xmalloc(n);
    snprintf(out, n, f, a, b, c);
    return out;
}

static int out_str(char *s, uint8_t **out, size_t *outlen)
{
    *outlen = strlen(s);
    *out = (uint8_t *)s;
    return 1;
}

static int plain_step(struct sasl_client *c, uint8_t **out, size_t *outlen)
{
    if (c->step != ST_FIRST) {
        c->step = ST_DONE;
        return 0; /* PLAIN's server answers with an empty token */
    }
    size_t ul = strlen(c->user), pl = strlen(c->pass);
    uint8_t *tok = xmalloc(ul + pl + 2);
    tok[0] = '\0';
    memcpy(tok + 1, c->user, ul);
    tok[1 + ul] = '\0';
    memcpy(tok + 2 + ul, c->pass, pl);
    *out = tok;
    *outlen = ul + pl + 2;
    c->step = ST_SERVER_FIRST;
    return 1;
}

static int scram_client_final(struct sasl_client *c, const char *sf, uint8_t **out, size_t *outlen, char *err,
                              size_t errlen)
{
    size_t nl = 0, sl = 0, il = 0;
    const char *nonce = attr(sf, 'r', &nl);
    const char *salt64 = attr(sf, 's', &sl);
    const char *iter = attr(sf, 'i', &il);
    size_t cnl = strlen(c->nonce);
    if (!nonce || !salt64 || !iter || nl <= cnl || strncmp(nonce, c->nonce, cnl) != 0) {
        snprintf(err, errlen, "invalid SCRAM server-first message");
        return -1;
    }
    uint8_t salt[512];
    int saltn = unb64(salt64, sl, salt, sizeof salt);
    int iterations = atoi(iter);
    if (saltn <= 0 || iterations <= 0 || iterations > 100000000) {
        snprintf(err, errlen, "invalid SCRAM salt or iteration count");
        return -1;
    }
    const EVP_MD *md = scram_md(c->scram);
    int sz = EVP_MD_size(md);
    sasl_scram_salted_password(c->scram, c->pass, salt, (size_t)saltn, iterations, c->salted, &c->salted_len);
    char nonce_s[1024];
    if (nl >= sizeof nonce_s) {
        snprintf(err, errlen, "SCRAM server nonce too long");
        return -1;
    }
    memcpy(nonce_s, nonce, nl);
    nonce_s[nl] = '\0';
    char *without_proof = fmt_alloc("c=biws,r=%s%s%s", nonce_s, "", "");
    free(c->auth_message);
    c->auth_message = fmt_alloc("%s,%s,%s", c->bare, sf, without_proof);
    uint8_t ck[EVP_MAX_MD_SIZE], stored[EVP_MAX_MD_SIZE], sig[EVP_MAX_MD_SIZE], proof[EVP_MAX_MD_SIZE];
    unsigned int n;
    HMAC(md, c->salted, sz, (const uint8_t *)"Client Key", 10, ck, &n);
    EVP_Digest(ck, (size_t)sz, stored, &n, md, NULL);
    HMAC(md, stored, sz, (const uint8_t *)c->auth_message, strlen(c->auth_message), sig, &n);
    for (int i = 0; i < sz; i++)
        proof[i] = ck[i] ^ sig[i];
    char *proof64 = b64(proof, (size_t)sz);
    char *final = fmt_alloc("%s,p=%s%s", without_proof, proof64, "");
    free(without_proof);
    free(proof64);
    OPENSSL_cleanse(ck, sizeof ck);
    c->step = ST_SERVER_FINAL;
    return out_str(final, out, outlen);
}

static int scram_verify_final(struct sasl_client *c, const char *sfin, char *err, size_t errlen)
{
    size_t el = 0;
    const char *e = attr(sfin, 'e', &el);
    if (e) {
        snprintf(err, errlen, "SCRAM server error: %.*s", (int)(el < 200 ? el : 200), e);
        return -1;
    }
    const EVP_MD *md = scram_md(c->scram);
    int sz = EVP_MD_size(md);
    uint8_t sk[EVP_MAX_MD_SIZE], ssig[EVP_MAX_MD_SIZE], got[EVP_MAX_MD_SIZE + 3];
    unsigned int n;
    HMAC(md, c->salted, sz, (const uint8_t *)"Server Key", 10, sk, &n);
    HMAC(md, sk, sz, (const uint8_t *)c->auth_message, strlen(c->auth_message), ssig, &n);
    size_t vl = 0;
    const char *v = attr(sfin, 'v', &vl);
    if (!v || unb64(v, vl, got, sizeof got) != sz || CRYPTO_memcmp(got, ssig, (size_t)sz) != 0) {
        snprintf(err, errlen, "the server's SCRAM signature does not verify");
        return -1;
    }
    c->step = ST_DONE;
    return 0;
}

int sasl_client_step(struct sasl_client *c, const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen,
                     char *err, size_t errlen)
{
    *out = NULL;
    *outlen = 0;
    if (c->step == ST_DONE) {
        snprintf(err, errlen, "SASL exchange already complete");
        return -1;
    }
    if (!c->scram)
        return plain_step(c, out, outlen);
    if (c->step == ST_FIRST) {
        if (!c->nonce) {
            uint8_t rnd[24];
            RAND_bytes(rnd, sizeof rnd);
            c->nonce = b64(rnd, sizeof rnd);
        }
        char *name = saslname(c->user);
        c->bare = fmt_alloc("n=%s,r=%s%s", name, c->nonce, "");
        free(name);
        c->step = ST_SERVER_FIRST;
        return out_str(fmt_alloc("n,,%s%s%s", c->bare, "", ""), out, outlen);
    }
    /* the server's messages as C strings (they are printable ASCII) */
    if (inlen > 4096 || (in == NULL && inlen)) {
        snprintf(err, errlen, "SCRAM server message too long");
        return -1;
    }
    char msg[4097];
    if (inlen)
        memcpy(msg, in, inlen);
    msg[inlen] = '\0';
    if (strlen(msg) != inlen) {
        snprintf(err, errlen, "SCRAM server message contains NUL");
        return -1;
    }
    if (c->step == ST_SERVER_FIRST)
        return scram_client_final(c, msg, out, outlen, err, errlen);
    return scram_verify_final(c, msg, err, errlen);
}
