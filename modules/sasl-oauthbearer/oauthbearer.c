/* SPDX-License-Identifier: Apache-2.0
 *
 * sasl-oauthbearer: the SASL/OAUTHBEARER mechanism (RFC 7628) on the
 * server side, as Kafka's OAuthBearerSaslServer with its default
 * validator, OAuthBearerUnsecuredValidatorCallbackHandler: the token is
 * an unsecured JWS ("alg":"none", no signature), for development and
 * for sites whose token issuer is trusted by the network path.
 *
 * The client's initial response is "n,[a=authzid],\x01auth=Bearer
 * <token>\x01[key=value\x01]*\x01". The token's claims decide: the
 * principal claim (default "sub") names the principal User:<value>;
 * "exp" is required and must be in the future, "iat" (optional) not in
 * it, both within the allowable clock skew; a required scope must be in
 * the "scope" claim (a space-separated string or a list). The options
 * are Kafka's, from the listener's JAAS configuration:
 *
 *   listener.name.<l>.oauthbearer.sasl.jaas.config=\
 *     org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
 *     unsecuredValidatorPrincipalClaimName="sub" \
 *     unsecuredValidatorScopeClaimName="scope" \
 *     unsecuredValidatorRequiredScope="kafka" \
 *     unsecuredValidatorAllowableClockSkewMs="0";
 *
 * A token that does not validate is answered, as Kafka does, with the
 * JSON error challenge {"status":"invalid_token"} (or
 * "insufficient_scope" with the scope); the client acknowledges with a
 * lone 0x01 and the exchange fails with that JSON as the message. The
 * token's expiry is the session lifetime (KIP-368).
 *
 * With listener.name.<l>.oauthbearer.sasl.server.callback.handler.class=
 * org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler
 * (KIP-768) tokens must be signed (RS256/384/512, ES256/384/512) by a key
 * of the JWKS at sasl.oauthbearer.jwks.endpoint.url (https:, or file:),
 * which the module's own thread fetches at startup, every
 * sasl.oauthbearer.jwks.endpoint.refresh.ms and early when a token names
 * a key it lacks (logins never wait on it), with exp and iat, and the
 * sasl.oauthbearer.expected.audience / expected.issuer / sub.claim.name /
 * clock.skew.seconds checks. Compiled against include/samsa only;
 * libcrypto verifies. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* getaddrinfo, strncasecmp */
#endif
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include "samsa/sasl.h"

#ifndef SAMSA_MODULE_VERSION
#define SAMSA_MODULE_VERSION "0"
#endif

/* ------------------------------------------------------------------ */
/* Parsing (pure; static, but tests/unit/oauthbearer_test.c and the    */
/* fuzz target compile this file in and call them)                     */

#define OB_MAX_TOKEN 16384
#define OB_MAX_CLAIMS 64
#define OB_MAX_DEPTH 16

/* The initial response's parts (pointing into the message). */
struct ob_initial {
    const char *authzid, *token;
    size_t authzid_len, token_len;
};

/* RFC 7628 / Kafka's OAuthBearerClientInitialResponse: 0 or -1. */
static int ob_parse_initial(const uint8_t *in, size_t len, struct ob_initial *m)
{
    const char *s = (const char *)in, *end = s + len;
    memset(m, 0, sizeof *m);
    if (len < 4 || s[0] != 'n' || s[1] != ',')
        return -1;
    const char *p = s + 2;
    if (p < end && *p == 'a') {
        if (end - p < 2 || p[1] != '=')
            return -1;
        p += 2;
        m->authzid = p;
        while (p < end && *p != ',')
            p++;
        m->authzid_len = (size_t)(p - m->authzid);
    }
    if (p >= end || *p != ',')
        return -1;
    p++;
    if (p >= end || *p != '\x01')
        return -1;
    p++;
    /* key=value\x01 pairs, then a final \x01 */
    bool have_auth = false;
    while (p < end && *p != '\x01') {
        const char *kv = p;
        while (p < end && *p != '\x01')
            p++;
        if (p >= end)
            return -1;
        const char *eq = memchr(kv, '=', (size_t)(p - kv));
        if (!eq || eq == kv)
            return -1;
        for (const char *k = kv; k < eq; k++)
            if (!isalpha((unsigned char)*k))
                return -1; /* Kafka's KEY: [A-Za-z]+ */
        if ((size_t)(eq - kv) == 4 && !memcmp(kv, "auth", 4)) {
            /* "Bearer <token>": scheme, spaces, token [-_~+/.a-zA-Z0-9]+=* */
            const char *v = eq + 1;
            if ((size_t)(p - v) < 7 || strncasecmp(v, "Bearer", 6) != 0 || v[6] != ' ')
                return -1;
            v += 6;
            while (v < p && *v == ' ')
                v++;
            const char *t = v;
            while (v < p && (isalnum((unsigned char)*v) || strchr("-_~+/.", *v)))
                v++;
            if (v == t)
                return -1;
            while (v < p && *v == '=')
                v++;
            if (v != p)
                return -1;
            m->token = t;
            m->token_len = (size_t)(p - t);
            have_auth = true;
        }
        p++; /* the pair's \x01 */
    }
    if (p >= end || *p != '\x01' || p + 1 != end || !have_auth)
        return -1;
    return 0;
}

/* Base64 (URL-safe or standard, padding optional) into out; the
 * decoded length, or -1. */
static long ob_b64_decode(const char *s, size_t n, uint8_t *out, size_t cap)
{
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    while (n > 0 && s[n - 1] == '=')
        n--;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i], v;
        if (c >= 'A' && c <= 'Z')
            v = c - 'A';
        else if (c >= 'a' && c <= 'z')
            v = c - 'a' + 26;
        else if (c >= '0' && c <= '9')
            v = c - '0' + 52;
        else if (c == '-' || c == '+')
            v = 62;
        else if (c == '_' || c == '/')
            v = 63;
        else
            return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o >= cap)
                return -1;
            out[o++] = (uint8_t)(acc >> bits);
        }
    }
    if (bits >= 6)
        return -1; /* a lone sixth of a byte: not base64 */
    return (long)o;
}

/* A top-level JSON object's members, as much as validation needs. */
enum ob_kind { OB_STRING, OB_NUMBER, OB_ARRAY, OB_OTHER };
struct ob_claim {
    char key[64];
    enum ob_kind kind;
    char *str;        /* OB_STRING: unescaped; OB_ARRAY: its strings, space-joined */
    double num;
};
struct ob_claims {
    struct ob_claim c[OB_MAX_CLAIMS];
    int n;
};

struct ob_json {
    const char *p, *end;
};

static void ob_ws(struct ob_json *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

/* A JSON string at j->p (the quote); its UTF-8 into out (malloc'd when
 * out != NULL). 0 or -1. */
static int ob_string(struct ob_json *j, char **out)
{
    if (j->p >= j->end || *j->p != '"')
        return -1;
    j->p++;
    size_t cap = (size_t)(j->end - j->p) + 1, o = 0;
    char *buf = out ? malloc(cap) : NULL;
    if (out && !buf)
        return -1;
    while (j->p < j->end && *j->p != '"') {
        unsigned char c = (unsigned char)*j->p++;
        if (c < 0x20)
            goto bad;
        if (c == '\\') {
            if (j->p >= j->end)
                goto bad;
            char e = *j->p++;
            const char *map = strchr("\"\\/bfnrt", e);
            if (map && e != 'u') {
                static const char rep[] = "\"\\/\b\f\n\r\t";
                c = (unsigned char)rep[map - "\"\\/bfnrt"];
            } else if (e == 'u') {
                if (j->end - j->p < 4)
                    goto bad;
                unsigned cp = 0;
                for (int i = 0; i < 4; i++) {
                    int h = j->p[i];
                    cp = cp * 16 + (unsigned)(isdigit(h) ? h - '0' : (h | 32) >= 'a' && (h | 32) <= 'f' ? (h | 32) - 'a' + 10 : 99);
                    if (cp > 0xffff)
                        goto bad;
                }
                j->p += 4;
                /* BMP only, as UTF-8 (surrogates kept as they are) */
                if (buf) {
                    if (cp < 0x80) {
                        buf[o++] = (char)cp;
                    } else if (cp < 0x800) {
                        buf[o++] = (char)(0xc0 | (cp >> 6));
                        buf[o++] = (char)(0x80 | (cp & 0x3f));
                    } else {
                        buf[o++] = (char)(0xe0 | (cp >> 12));
                        buf[o++] = (char)(0x80 | ((cp >> 6) & 0x3f));
                        buf[o++] = (char)(0x80 | (cp & 0x3f));
                    }
                }
                continue;
            } else {
                goto bad;
            }
        }
        if (buf)
            buf[o++] = (char)c;
    }
    if (j->p >= j->end)
        goto bad;
    j->p++;
    if (buf) {
        buf[o] = '\0';
        if (strlen(buf) != o) /* an escaped NUL: not a usable name */
            goto bad;
        *out = buf;
    }
    return 0;
bad:
    free(buf);
    return -1;
}

static int ob_number(struct ob_json *j, double *out)
{
    const char *s = j->p;
    if (j->p < j->end && *j->p == '-')
        j->p++;
    if (j->p >= j->end || !isdigit((unsigned char)*j->p))
        return -1;
    while (j->p < j->end && (isdigit((unsigned char)*j->p) || strchr(".eE+-", *j->p)))
        j->p++;
    char tmp[64];
    size_t n = (size_t)(j->p - s);
    if (n >= sizeof tmp)
        return -1;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    char *e;
    *out = strtod(tmp, &e);
    return *e || !isfinite(*out) ? -1 : 0;
}

static int ob_value(struct ob_json *j, int depth, struct ob_claim *c);

/* An array; with c, its strings space-joined into c->str. */
static int ob_array(struct ob_json *j, int depth, struct ob_claim *c)
{
    j->p++;
    ob_ws(j);
    if (j->p < j->end && *j->p == ']') {
        j->p++;
        return 0;
    }
    for (;;) {
        ob_ws(j);
        if (c && j->p < j->end && *j->p == '"') {
            char *s;
            if (ob_string(j, &s) < 0)
                return -1;
            size_t old = c->str ? strlen(c->str) : 0, add = strlen(s);
            char *joined = realloc(c->str, old + add + 2);
            if (!joined) {
                free(s);
                return -1;
            }
            if (old)
                joined[old++] = ' ';
            memcpy(joined + old, s, add + 1);
            c->str = joined;
            free(s);
        } else if (ob_value(j, depth + 1, NULL) < 0) {
            return -1;
        }
        ob_ws(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (j->p < j->end && *j->p == ']') {
            j->p++;
            return 0;
        }
        return -1;
    }
}

static int ob_object(struct ob_json *j, int depth, struct ob_claims *out)
{
    if (j->p >= j->end || *j->p != '{')
        return -1;
    j->p++;
    ob_ws(j);
    if (j->p < j->end && *j->p == '}') {
        j->p++;
        return 0;
    }
    for (;;) {
        ob_ws(j);
        char *key = NULL;
        if (ob_string(j, out ? &key : NULL) < 0)
            return -1;
        ob_ws(j);
        if (j->p >= j->end || *j->p != ':') {
            free(key);
            return -1;
        }
        j->p++;
        ob_ws(j);
        struct ob_claim *c = NULL;
        if (out && strlen(key) < sizeof out->c[0].key) {
            /* a repeated key: the last one counts, as Jackson's */
            for (int i = 0; i < out->n && !c; i++)
                if (!strcmp(out->c[i].key, key)) {
                    c = &out->c[i];
                    free(c->str);
                    memset(c, 0, sizeof *c);
                }
            if (!c && out->n < OB_MAX_CLAIMS)
                c = &out->c[out->n++];
            if (c)
                snprintf(c->key, sizeof c->key, "%s", key);
        }
        free(key);
        if (ob_value(j, depth + 1, c) < 0)
            return -1;
        ob_ws(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (j->p < j->end && *j->p == '}') {
            j->p++;
            return 0;
        }
        return -1;
    }
}

static int ob_value(struct ob_json *j, int depth, struct ob_claim *c)
{
    if (depth > OB_MAX_DEPTH || j->p >= j->end)
        return -1;
    char ch = *j->p;
    if (ch == '"') {
        if (c)
            c->kind = OB_STRING;
        return ob_string(j, c ? &c->str : NULL);
    }
    if (ch == '-' || isdigit((unsigned char)ch)) {
        double d;
        if (ob_number(j, &d) < 0)
            return -1;
        if (c) {
            c->kind = OB_NUMBER;
            c->num = d;
        }
        return 0;
    }
    if (ch == '[') {
        if (c)
            c->kind = OB_ARRAY;
        return ob_array(j, depth, c);
    }
    if (c)
        c->kind = OB_OTHER;
    if (ch == '{')
        return ob_object(j, depth, NULL);
    static const char *const lits[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(lits[i]);
        if ((size_t)(j->end - j->p) >= n && !memcmp(j->p, lits[i], n)) {
            j->p += n;
            return 0;
        }
    }
    return -1;
}

static void ob_claims_free(struct ob_claims *cl)
{
    for (int i = 0; i < cl->n; i++)
        free(cl->c[i].str);
    cl->n = 0;
}

/* A whole JSON text that is one object; 0 or -1 (cl freed on error). */
static int ob_parse_object(const uint8_t *p, size_t len, struct ob_claims *cl)
{
    memset(cl, 0, sizeof *cl);
    struct ob_json j = {(const char *)p, (const char *)p + len};
    ob_ws(&j);
    int rc = ob_object(&j, 0, cl);
    ob_ws(&j);
    if (rc < 0 || j.p != j.end) {
        ob_claims_free(cl);
        return -1;
    }
    return 0;
}

static const struct ob_claim *ob_claim(const struct ob_claims *cl, const char *key)
{
    for (int i = 0; i < cl->n; i++)
        if (!strcmp(cl->c[i].key, key))
            return &cl->c[i];
    return NULL;
}

/* Kafka's unsecured validator options. */
struct ob_opts {
    char principal_claim[64], scope_claim[64];
    char required_scope[512]; /* space-separated */
    long clock_skew_ms;
};

/* The outcome of validating a token. */
struct ob_result {
    char principal[320]; /* "User:<name>" */
    int64_t expiry_ms;   /* exp in ms since the epoch */
    /* on failure: Kafka's JSON error and the reason for the log */
    char error_json[700];
    char reason[300];
};

static bool ob_word_in(const char *words, const char *w, size_t wl)
{
    for (const char *p = words; *p;) {
        while (*p == ' ')
            p++;
        const char *e = p;
        while (*e && *e != ' ')
            e++;
        if ((size_t)(e - p) == wl && !memcmp(p, w, wl))
            return true;
        p = e;
    }
    return false;
}

static int ob_fail(struct ob_result *r, const char *scope, const char *fmt, const char *a)
{
    snprintf(r->reason, sizeof r->reason, fmt, a);
    if (scope) {
        /* Kafka writes the required scope as a Java list: [a, b] */
        char list[520];
        size_t o = 0;
        for (const char *p = scope; *p && o + 3 < sizeof list; p++) {
            if (*p == ' ') {
                while (p[1] == ' ')
                    p++;
                if (!p[1] || !o)
                    continue;
                list[o++] = ',';
            }
            list[o++] = *p;
        }
        list[o] = '\0';
        snprintf(r->error_json, sizeof r->error_json, "{\"status\":\"insufficient_scope\", \"scope\":\"[%.520s]\"}",
                 list);
    }
    else
        snprintf(r->error_json, sizeof r->error_json, "{\"status\":\"invalid_token\"}");
    return -1;
}

/* A JWS compact serialization split at its two dots, its header and
 * claims parsed (both validators start here). */
struct ob_jws {
    const char *sig;  /* the third part */
    size_t sig_len;
    size_t signed_len; /* header.payload: what the signature covers */
    struct ob_claims hdr, cl;
};

/* 0, or -1 with r's error (nothing to free). three_parts: the message
 * for a token that is not three dot-separated parts. */
static int ob_jws_open(const char *tok, size_t len, const char *three_parts, struct ob_jws *j, struct ob_result *r)
{
    memset(r, 0, sizeof *r);
    memset(j, 0, sizeof *j);
    if (len > OB_MAX_TOKEN)
        return ob_fail(r, NULL, "token longer than %s bytes", "16384");
    const char *d1 = memchr(tok, '.', len);
    const char *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - tok)) : NULL;
    if (!d1 || !d2 || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - tok)))
        return ob_fail(r, NULL, "%s", three_parts);
    if (d2 == d1 + 1)
        return ob_fail(r, NULL, "%s", "Malformed compact serialization contains '..'");
    uint8_t *hb = malloc(OB_MAX_TOKEN), *pb = malloc(OB_MAX_TOKEN);
    long hl = hb ? ob_b64_decode(tok, (size_t)(d1 - tok), hb, OB_MAX_TOKEN) : -1;
    long pl = pb ? ob_b64_decode(d1 + 1, (size_t)(d2 - d1 - 1), pb, OB_MAX_TOKEN) : -1;
    int rc = -1;
    if (hl < 0 || pl < 0)
        ob_fail(r, NULL, "%s", "malformed Base64 URL encoded value");
    else if (ob_parse_object(hb, (size_t)hl, &j->hdr) < 0)
        ob_fail(r, NULL, "%s", "malformed JSON");
    else if (ob_parse_object(pb, (size_t)pl, &j->cl) < 0) {
        ob_claims_free(&j->hdr);
        ob_fail(r, NULL, "%s", "malformed JSON");
    } else
        rc = 0;
    free(hb);
    free(pb);
    j->sig = d2 + 1;
    j->sig_len = len - (size_t)(d2 + 1 - tok);
    j->signed_len = (size_t)(d2 - tok);
    return rc;
}

static void ob_jws_close(struct ob_jws *j)
{
    ob_claims_free(&j->hdr);
    ob_claims_free(&j->cl);
}

/* Kafka's OAuthBearerUnsecuredJws plus the validator's checks at now_ms.
 * 0 with r->principal and r->expiry_ms, or -1 with r's error. */
static int ob_validate(const char *tok, size_t len, const struct ob_opts *o, int64_t now_ms, struct ob_result *r)
{
    struct ob_jws j;
    if (ob_jws_open(tok, len, "Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values",
                    &j, r) < 0)
        return -1;
    const struct ob_claims *hdr = &j.hdr, *cl = &j.cl;
    int rc = -1;
    const struct ob_claim *alg = ob_claim(hdr, "alg");
    if (!alg || alg->kind != OB_STRING || strcmp(alg->str, "none") != 0) {
        ob_fail(r, NULL, "%s", alg ? "Unsecured JWS must have 'none' for an algorithm"
                                   : "JWS header must have an Algorithm value");
        goto out;
    }
    if (j.sig_len) {
        ob_fail(r, NULL, "%s", "Unsecured JWS must not contain a digital signature");
        goto out;
    }
    const struct ob_claim *exp = ob_claim(cl, "exp"), *iat = ob_claim(cl, "iat");
    const struct ob_claim *sub = ob_claim(cl, o->principal_claim), *scope = ob_claim(cl, o->scope_claim);
    if (!exp) {
        ob_fail(r, NULL, "%s", "No expiration time in JWT");
        goto out;
    }
    if (exp->kind != OB_NUMBER || (iat && iat->kind != OB_NUMBER)) {
        ob_fail(r, NULL, "The '%s' claim was not of type Number", exp->kind != OB_NUMBER ? "exp" : "iat");
        goto out;
    }
    if (!sub || sub->kind != OB_STRING || !sub->str[0] || strspn(sub->str, " \t") == strlen(sub->str)) {
        ob_fail(r, NULL, "No principal name in JWT claim: %s", o->principal_claim);
        goto out;
    }
    if (iat && 1000 * iat->num > (double)(now_ms + o->clock_skew_ms)) {
        ob_fail(r, NULL, "%s", "The Issued At value was after the indicated time plus allowable clock skew");
        goto out;
    }
    if ((double)(now_ms - o->clock_skew_ms) >= 1000 * exp->num) {
        ob_fail(r, NULL, "%s", "The indicated time minus allowable clock skew was on or after the Expiration Time value");
        goto out;
    }
    if (iat && exp->num <= iat->num) {
        ob_fail(r, NULL, "%s", "The Expiration Time time was not after the Issued At time");
        goto out;
    }
    const char *have = scope && (scope->kind == OB_STRING || scope->kind == OB_ARRAY) && scope->str ? scope->str : "";
    for (const char *p = o->required_scope; *p;) {
        while (*p == ' ')
            p++;
        const char *e = p;
        while (*e && *e != ' ')
            e++;
        if (e > p && !ob_word_in(have, p, (size_t)(e - p))) {
            char one[128];
            snprintf(one, sizeof one, "%.*s", (int)(e - p < 120 ? e - p : 120), p);
            ob_fail(r, o->required_scope, "The provided scope was missing a required scope (%s)", one);
            goto out;
        }
        p = e;
    }
    if (strlen(sub->str) + 6 > sizeof r->principal) {
        ob_fail(r, NULL, "%s", "principal name too long");
        goto out;
    }
    snprintf(r->principal, sizeof r->principal, "User:%s", sub->str);
    r->expiry_ms = (int64_t)(exp->num * 1000);
    rc = 0;
out:
    ob_jws_close(&j);
    return rc;
}

/* The options of a JAAS configuration: key="value" (or key=value). */
static void ob_jaas_option(const char *jaas, const char *key, char *out, size_t outlen)
{
    out[0] = '\0';
    size_t kl = strlen(key);
    for (const char *p = jaas; jaas && (p = strstr(p, key)) != NULL; p += kl) {
        if (p > jaas && !isspace((unsigned char)p[-1]))
            continue;
        const char *q = p + kl;
        while (*q == ' ')
            q++;
        if (*q != '=')
            continue;
        q++;
        while (*q == ' ')
            q++;
        size_t o = 0;
        if (*q == '"') {
            q++;
            while (*q && *q != '"' && o + 1 < outlen) {
                if (*q == '\\' && q[1])
                    q++;
                out[o++] = *q++;
            }
        } else {
            while (*q && !isspace((unsigned char)*q) && *q != ';' && o + 1 < outlen)
                out[o++] = *q++;
        }
        out[o] = '\0';
        return;
    }
}

/* Kafka's option names; "" for a bad clock skew. 0 or -1. */
static int ob_opts_from_jaas(const char *jaas, struct ob_opts *o, char *why, size_t whylen)
{
    memset(o, 0, sizeof *o);
    ob_jaas_option(jaas, "unsecuredValidatorPrincipalClaimName", o->principal_claim, sizeof o->principal_claim);
    ob_jaas_option(jaas, "unsecuredValidatorScopeClaimName", o->scope_claim, sizeof o->scope_claim);
    ob_jaas_option(jaas, "unsecuredValidatorRequiredScope", o->required_scope, sizeof o->required_scope);
    char skew[32];
    ob_jaas_option(jaas, "unsecuredValidatorAllowableClockSkewMs", skew, sizeof skew);
    if (!o->principal_claim[0])
        snprintf(o->principal_claim, sizeof o->principal_claim, "sub");
    if (!o->scope_claim[0])
        snprintf(o->scope_claim, sizeof o->scope_claim, "scope");
    if (skew[0]) {
        char *e;
        long v = strtol(skew, &e, 10);
        if (*e || v < 0 || v > 86400000L) {
            snprintf(why, whylen, "unsecuredValidatorAllowableClockSkewMs=%s: not a non-negative number of ms", skew);
            return -1;
        }
        o->clock_skew_ms = v;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Signed tokens: Kafka's OAuthBearerValidatorCallbackHandler (KIP-768) */
/* with a JWKS read from a file (sasl.oauthbearer.jwks.endpoint.url    */
/* file:...); RS256/384/512 and ES256/384/512                          */

#define OB_MAX_KEYS 32

struct ob_jwk {
    char kid[128];
    char kty[8]; /* "RSA", "EC" */
    EVP_PKEY *key;
};

struct ob_jwks {
    struct ob_jwk k[OB_MAX_KEYS];
    int n;
};

static void ob_jwks_free(struct ob_jwks *ks)
{
    for (int i = 0; i < ks->n; i++)
        EVP_PKEY_free(ks->k[i].key);
    ks->n = 0;
}

static BIGNUM *ob_b64_bn(const char *s)
{
    uint8_t buf[1024];
    long n = s ? ob_b64_decode(s, strlen(s), buf, sizeof buf) : -1;
    return n > 0 ? BN_bin2bn(buf, (int)n, NULL) : NULL;
}

/* One JWK's public key; NULL when it is not a usable RSA or EC key. */
static EVP_PKEY *ob_jwk_key(const struct ob_claims *c, char *kty_out)
{
    const struct ob_claim *kty = ob_claim(c, "kty"), *use = ob_claim(c, "use");
    if (!kty || kty->kind != OB_STRING || (use && use->kind == OB_STRING && strcmp(use->str, "sig") != 0))
        return NULL;
    EVP_PKEY *pk = NULL;
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = NULL;
    BIGNUM *n = NULL, *e = NULL;
    /* the builder keeps pointers to what it is given until to_param */
    uint8_t x[80], y[80], pt[1 + 2 * 66];
    if (!bld)
        return NULL;
    if (!strcmp(kty->str, "RSA")) {
        const struct ob_claim *cn = ob_claim(c, "n"), *ce = ob_claim(c, "e");
        n = ob_b64_bn(cn && cn->kind == OB_STRING ? cn->str : NULL);
        e = ob_b64_bn(ce && ce->kind == OB_STRING ? ce->str : NULL);
        if (!n || !e || !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n) ||
            !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e))
            goto out;
        ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
    } else if (!strcmp(kty->str, "EC")) {
        const struct ob_claim *crv = ob_claim(c, "crv"), *cx = ob_claim(c, "x"), *cy = ob_claim(c, "y");
        const char *group = NULL;
        size_t sz = 0;
        if (crv && crv->kind == OB_STRING) {
            if (!strcmp(crv->str, "P-256"))
                group = "prime256v1", sz = 32;
            else if (!strcmp(crv->str, "P-384"))
                group = "secp384r1", sz = 48;
            else if (!strcmp(crv->str, "P-521"))
                group = "secp521r1", sz = 66;
        }
        long xl = cx && cx->kind == OB_STRING ? ob_b64_decode(cx->str, strlen(cx->str), x, sizeof x) : -1;
        long yl = cy && cy->kind == OB_STRING ? ob_b64_decode(cy->str, strlen(cy->str), y, sizeof y) : -1;
        if (!group || xl <= 0 || yl <= 0 || (size_t)xl > sz || (size_t)yl > sz)
            goto out;
        memset(pt, 0, sizeof pt);
        pt[0] = 4; /* uncompressed point: 04 || x || y, each padded */
        memcpy(pt + 1 + sz - (size_t)xl, x, (size_t)xl);
        memcpy(pt + 1 + 2 * sz - (size_t)yl, y, (size_t)yl);
        if (!OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, group, 0) ||
            !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pt, 1 + 2 * sz))
            goto out;
        ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    } else {
        goto out;
    }
    params = OSSL_PARAM_BLD_to_param(bld);
    if (!ctx || !params || EVP_PKEY_fromdata_init(ctx) <= 0 ||
        EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_PUBLIC_KEY, params) <= 0)
        pk = NULL;
    if (pk)
        snprintf(kty_out, 8, "%s", kty->str);
out:
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    BN_free(n);
    BN_free(e);
    return pk;
}

/* {"keys":[{...}, ...]}: the usable keys into ks. 0, or -1 when the
 * text is not a JWKS. */
static int ob_jwks_parse(const uint8_t *p, size_t len, struct ob_jwks *ks)
{
    memset(ks, 0, sizeof *ks);
    struct ob_json j = {(const char *)p, (const char *)p + len};
    ob_ws(&j);
    if (j.p >= j.end || *j.p != '{')
        return -1;
    j.p++;
    bool found = false;
    for (;;) {
        ob_ws(&j);
        if (j.p < j.end && *j.p == '}' && !found)
            break;
        char *key = NULL;
        if (ob_string(&j, &key) < 0)
            goto bad;
        ob_ws(&j);
        if (j.p >= j.end || *j.p != ':') {
            free(key);
            goto bad;
        }
        j.p++;
        ob_ws(&j);
        bool keys = !strcmp(key, "keys");
        free(key);
        if (keys && j.p < j.end && *j.p == '[') {
            found = true;
            j.p++;
            ob_ws(&j);
            while (j.p < j.end && *j.p != ']') {
                struct ob_claims c;
                memset(&c, 0, sizeof c);
                if (*j.p == '{') {
                    int rc = ob_object(&j, 2, &c);
                    if (rc == 0 && ks->n < OB_MAX_KEYS) {
                        struct ob_jwk *k = &ks->k[ks->n];
                        const struct ob_claim *kid = ob_claim(&c, "kid");
                        k->key = ob_jwk_key(&c, k->kty);
                        if (k->key) {
                            snprintf(k->kid, sizeof k->kid, "%s", kid && kid->kind == OB_STRING ? kid->str : "");
                            ks->n++;
                        }
                    }
                    ob_claims_free(&c);
                    if (rc < 0)
                        goto bad;
                } else if (ob_value(&j, 2, NULL) < 0) {
                    goto bad;
                }
                ob_ws(&j);
                if (j.p < j.end && *j.p == ',') {
                    j.p++;
                    ob_ws(&j);
                }
            }
            if (j.p >= j.end)
                goto bad;
            j.p++;
        } else if (ob_value(&j, 1, NULL) < 0) {
            goto bad;
        }
        ob_ws(&j);
        if (j.p < j.end && *j.p == ',') {
            j.p++;
            continue;
        }
        if (j.p < j.end && *j.p == '}')
            break;
        goto bad;
    }
    if (found)
        return 0;
bad:
    ob_jwks_free(ks);
    return -1;
}

/* The secured validator's settings (Kafka's sasl.oauthbearer.* keys). */
struct ob_secured {
    char sub_claim[64], scope_claim[64];
    char audience[512]; /* comma-separated; "" for any */
    char issuer[256];   /* "" for any */
    long clock_skew_s;
};

static const EVP_MD *ob_alg_md(const char *alg, char *kty)
{
    if (strlen(alg) != 5)
        return NULL;
    if (!strncmp(alg, "RS", 2))
        snprintf(kty, 8, "RSA");
    else if (!strncmp(alg, "ES", 2))
        snprintf(kty, 8, "EC");
    else
        return NULL;
    return !strcmp(alg + 2, "256") ? EVP_sha256() : !strcmp(alg + 2, "384") ? EVP_sha384()
                                                  : !strcmp(alg + 2, "512") ? EVP_sha512() : NULL;
}

/* Verifies sig over data with key; ES signatures are JWS's r || s. */
static bool ob_verify(EVP_PKEY *key, const EVP_MD *md, bool ec, const uint8_t *data, size_t dlen, const uint8_t *sig,
                      size_t slen)
{
    uint8_t *der = NULL;
    int derlen = 0;
    if (ec) {
        if (slen == 0 || slen % 2 || slen > 132)
            return false;
        ECDSA_SIG *es = ECDSA_SIG_new();
        BIGNUM *r = BN_bin2bn(sig, (int)(slen / 2), NULL), *s = BN_bin2bn(sig + slen / 2, (int)(slen / 2), NULL);
        if (!es || !r || !s || !ECDSA_SIG_set0(es, r, s)) {
            BN_free(r);
            BN_free(s);
            ECDSA_SIG_free(es);
            return false;
        }
        derlen = i2d_ECDSA_SIG(es, &der);
        ECDSA_SIG_free(es);
        if (derlen <= 0)
            return false;
        sig = der;
        slen = (size_t)derlen;
    }
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    bool ok = ctx && EVP_DigestVerifyInit(ctx, NULL, md, NULL, key) == 1 &&
              EVP_DigestVerify(ctx, sig, slen, data, dlen) == 1;
    EVP_MD_CTX_free(ctx);
    OPENSSL_free(der);
    return ok;
}

/* A signed JWT against the keys: the signature (alg none refused), then
 * Kafka's claim rules (exp and iat required, sub, nbf, aud, iss, with
 * the clock skew). 0 with r filled, or -1 with r's error. */
static int ob_validate_signed(const char *tok, size_t len, const struct ob_jwks *ks, const struct ob_secured *o,
                              int64_t now_ms, struct ob_result *r)
{
    struct ob_jws j;
    if (ob_jws_open(tok, len, "a JWS compact serialization has 3 dot-separated parts", &j, r) < 0)
        return -1;
    const struct ob_claims *hdr = &j.hdr, *cl = &j.cl;
    uint8_t *sb = malloc(OB_MAX_TOKEN);
    long sl = sb ? ob_b64_decode(j.sig, j.sig_len, sb, OB_MAX_TOKEN) : -1;
    int rc = -1;
    if (sl < 0) {
        ob_fail(r, NULL, "%s", "malformed Base64 URL encoded value");
        goto out;
    }
    const struct ob_claim *alg = ob_claim(hdr, "alg"), *kid = ob_claim(hdr, "kid");
    char want_kty[8] = "";
    const EVP_MD *md = alg && alg->kind == OB_STRING ? ob_alg_md(alg->str, want_kty) : NULL;
    if (!md) {
        ob_fail(r, NULL, "Could not validate the access token: algorithm %s is not accepted",
                alg && alg->kind == OB_STRING ? alg->str : "(none)");
        goto out;
    }
    if (sl == 0) {
        ob_fail(r, NULL, "%s", "Could not validate the access token: it has no signature");
        goto out;
    }
    bool verified = false, tried = false;
    for (int i = 0; i < ks->n && !verified; i++) {
        const struct ob_jwk *k = &ks->k[i];
        if (strcmp(k->kty, want_kty) != 0 || (kid && kid->kind == OB_STRING && strcmp(k->kid, kid->str) != 0))
            continue;
        tried = true;
        verified = ob_verify(k->key, md, want_kty[0] == 'E', (const uint8_t *)tok, j.signed_len, sb, (size_t)sl);
    }
    if (!verified) {
        ob_fail(r, NULL, "%s", tried ? "Could not validate the access token: the signature does not verify"
                                     : "Could not validate the access token: no key of the JWKS matches it");
        goto out;
    }
    const struct ob_claim *exp = ob_claim(cl, "exp"), *iat = ob_claim(cl, "iat"), *nbf = ob_claim(cl, "nbf");
    const struct ob_claim *sub = ob_claim(cl, o->sub_claim), *aud = ob_claim(cl, "aud"), *iss = ob_claim(cl, "iss");
    int64_t skew = (int64_t)o->clock_skew_s * 1000;
    if (!exp || exp->kind != OB_NUMBER || !iat || iat->kind != OB_NUMBER) {
        ob_fail(r, NULL, "Could not validate the access token: the %s claim is required", !exp ? "exp" : "iat");
        goto out;
    }
    if ((double)(now_ms - skew) >= 1000 * exp->num) {
        ob_fail(r, NULL, "%s", "Could not validate the access token: the token has expired");
        goto out;
    }
    if (nbf && (nbf->kind != OB_NUMBER || 1000 * nbf->num > (double)(now_ms + skew))) {
        ob_fail(r, NULL, "%s", "Could not validate the access token: the token is not valid yet (nbf)");
        goto out;
    }
    if (o->issuer[0] && (!iss || iss->kind != OB_STRING || strcmp(iss->str, o->issuer) != 0)) {
        ob_fail(r, NULL, "Could not validate the access token: the issuer is not %.200s", o->issuer);
        goto out;
    }
    if (o->audience[0]) {
        const char *have = aud && (aud->kind == OB_STRING || aud->kind == OB_ARRAY) && aud->str ? aud->str : "";
        bool any = false;
        for (const char *p = o->audience; *p && !any;) {
            while (*p == ',' || *p == ' ')
                p++;
            const char *e = p;
            while (*e && *e != ',')
                e++;
            const char *t = e;
            while (t > p && t[-1] == ' ')
                t--;
            /* aud is a string (one audience, spaces and all) or a list */
            if (t > p)
                any = aud && aud->kind == OB_STRING ? strlen(have) == (size_t)(t - p) && !memcmp(have, p, (size_t)(t - p))
                                                    : ob_word_in(have, p, (size_t)(t - p));
            p = e;
        }
        if (!any) {
            ob_fail(r, NULL, "%s", "Could not validate the access token: no expected audience in aud");
            goto out;
        }
    }
    if (!sub || sub->kind != OB_STRING || !sub->str[0] || strspn(sub->str, " \t") == strlen(sub->str)) {
        ob_fail(r, NULL, "Could not validate the access token: no subject in claim %s", o->sub_claim);
        goto out;
    }
    if (strlen(sub->str) + 6 > sizeof r->principal) {
        ob_fail(r, NULL, "%s", "principal name too long");
        goto out;
    }
    snprintf(r->principal, sizeof r->principal, "User:%s", sub->str);
    r->expiry_ms = (int64_t)(exp->num * 1000);
    rc = 0;
out:
    ob_jws_close(&j);
    free(sb);
    return rc;
}

/* ------------------------------------------------------------------ */
/* The mechanism                                                       */

/* One JWKS source (a sasl.oauthbearer.jwks.endpoint.url): its keys as
 * the background thread last fetched them. Fields under jwks_lock. */
#define OB_MAX_SOURCES 8
struct ob_source {
    char url[512];
    int64_t refresh_ms;
    char cafile[512];     /* the JAAS option ssl.truststore.location (PEM); "": the system's */
    bool verify_host;     /* ssl.endpoint.identification.algorithm https (the default) */
    struct ob_jwks keys;
    bool loaded;          /* keys were fetched once */
    int64_t next_ns;      /* when the thread fetches next (monotonic) */
    int64_t last_ns;      /* the last fetch's start; 0: never */
    char last_err[1200];  /* the last failure logged */
};

struct ob_state {
    samsa_host_t *host;
    const samsa_host_api_t *api;
    samsa_metric_t *ok, *failed;
    /* The JWKS sources of the secured validator. A background thread
     * fetches them (a file, or HTTPS) at startup, every
     * sasl.oauthbearer.jwks.endpoint.refresh.ms and early when a token
     * names a key a source lacks; logins only read the keys under the
     * lock (a verification takes microseconds), never a file or the
     * network. */
    pthread_mutex_t jwks_lock;
    pthread_cond_t jwks_cv;
    pthread_t thread;
    bool thread_started, stopping;
    struct ob_source src[OB_MAX_SOURCES];
    int nsrc;
};

struct ob_session {
    char listener[128];
    bool failed;         /* the error challenge was sent */
    char error_json[700];
    char principal[320];
    int64_t expiry_ms;
};

static struct ob_state g_ob = {.jwks_lock = PTHREAD_MUTEX_INITIALIZER, .jwks_cv = PTHREAD_COND_INITIALIZER};

static int ob_session_new(void *cap_state, const samsa_sasl_conn_t *conn, void **session)
{
    (void)cap_state;
    struct ob_session *s = calloc(1, sizeof *s);
    if (!s)
        return SAMSA_ENOMEM;
    snprintf(s->listener, sizeof s->listener, "%s", conn && conn->listener ? conn->listener : "");
    *session = s;
    return SAMSA_OK;
}

/* listener.name.<l>.oauthbearer.<suffix>, or NULL. */
static const char *ob_listener_config(struct ob_state *st, const char *listener, const char *suffix)
{
    if (!SAMSA_HOST_HAS(st->api, server_config_get))
        return NULL;
    char key[256];
    int n = snprintf(key, sizeof key, "listener.name.");
    for (const char *p = listener; *p && n < 180; p++)
        key[n++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    snprintf(key + n, sizeof key - (size_t)n, ".oauthbearer.%s", suffix);
    return st->api->server_config_get(st->host, key);
}

/* A key for listener: listener.name.<l>.oauthbearer.<key>, then
 * listener.name.<l>.<key>, then the broker-wide key, as Kafka's brokers
 * look for a mechanism's settings. NULL when none is set. */
static const char *ob_setting(struct ob_state *st, const char *listener, const char *key)
{
    const char *v = ob_listener_config(st, listener, key);
    if (v)
        return v;
    char k[256];
    int n = snprintf(k, sizeof k, "listener.name.");
    for (const char *p = listener; *p && n < 180; p++)
        k[n++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    snprintf(k + n, sizeof k - (size_t)n, ".%s", key);
    v = st->api->server_config_get(st->host, k);
    return v ? v : st->api->server_config_get(st->host, key);
}

#define OB_JWKS_MAX (1 << 20)

/* Reads the file of a file: URL. 0 with *out (malloc'ed, the caller
 * frees it), or -1 with why. Background thread. */
static int ob_read_file(const char *url, uint8_t **out, size_t *outlen, char *why, size_t wl)
{
    const char *path = !strncmp(url, "file://", 7) ? url + 7 : url + 5;
    if (path[0] != '/') {
        snprintf(why, wl, "%s: a file: URL needs an absolute path", url);
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, wl, "cannot open the JWKS %.512s", path);
        return -1;
    }
    uint8_t *buf = malloc(OB_JWKS_MAX);
    size_t n = buf ? fread(buf, 1, OB_JWKS_MAX, f) : 0;
    fclose(f);
    if (!buf || n >= OB_JWKS_MAX) {
        free(buf);
        snprintf(why, wl, "%.512s: more than 1 MiB", path);
        return -1;
    }
    *out = buf;
    *outlen = n;
    return 0;
}

/* OpenSSL's reason for the last failure, or fallback. */
static void ob_ssl_err(char *out, size_t n, const char *fallback)
{
    unsigned long e = ERR_get_error();
    if (e)
        ERR_error_string_n(e, out, n);
    else
        snprintf(out, n, "%s", fallback);
    ERR_clear_error();
}

/* The body of an HTTP/1.1 answer in buf (status 200 only; Content-Length,
 * chunked, or up to the close). 0 with *body and *blen pointing into buf
 * (a chunked body is decoded in place), or -1 with why. */
static int ob_http_body(uint8_t *buf, size_t len, uint8_t **body, size_t *blen, char *why, size_t wl)
{
    char *p = (char *)buf;
    char *end = NULL;
    for (size_t i = 0; i + 3 < len; i++)
        if (!memcmp(p + i, "\r\n\r\n", 4)) {
            end = p + i;
            break;
        }
    int status = 0;
    if (!end || sscanf(p, "HTTP/1.%*d %d", &status) != 1) {
        snprintf(why, wl, "not an HTTP answer");
        return -1;
    }
    if (status != 200) {
        snprintf(why, wl, "HTTP status %d", status);
        return -1;
    }
    *end = '\0';
    bool chunked = false;
    long clen = -1;
    for (char *h = strstr(p, "\r\n"); h && h < end; h = strstr(h + 2, "\r\n")) {
        char *line = h + 2;
        if (!strncasecmp(line, "transfer-encoding:", 18) && strstr(line, "chunked"))
            chunked = true;
        else if (!strncasecmp(line, "content-length:", 15))
            clen = atol(line + 15);
    }
    uint8_t *b = (uint8_t *)end + 4;
    size_t have = len - (size_t)(b - buf);
    if (!chunked) {
        if (clen >= 0 && (size_t)clen > have) {
            snprintf(why, wl, "HTTP answer cut short (%zu of %ld bytes)", have, clen);
            return -1;
        }
        *body = b;
        *blen = clen >= 0 ? (size_t)clen : have;
        return 0;
    }
    size_t in = 0, out = 0;
    for (;;) {
        char *q;
        unsigned long n = strtoul((char *)b + in, &q, 16);
        char *crlf = strstr(q, "\r\n");
        if (!crlf || (size_t)((uint8_t *)crlf + 2 - b) > have) {
            snprintf(why, wl, "bad chunked HTTP body");
            return -1;
        }
        in = (size_t)((uint8_t *)crlf + 2 - b);
        if (n == 0)
            break;
        if (in + n > have) {
            snprintf(why, wl, "bad chunked HTTP body");
            return -1;
        }
        memmove(b + out, b + in, n);
        out += n;
        in += n + 2;
    }
    *body = b;
    *blen = out;
    return 0;
}

/* GET of an https: URL with OpenSSL on a blocking socket (each step
 * bounded by 10 s), the peer verified against cafile (PEM; "": the
 * system's CAs) and, with verify_host, named by its certificate. 0 with
 * *out (the JWKS, malloc'ed: the caller frees it), or -1 with why.
 * Background thread only. */
static int ob_https_get(const char *url, const char *cafile, bool verify_host, uint8_t **out, size_t *outlen,
                        char *why, size_t wl)
{
    const char *h = url + 8, *slash = strchr(h, '/');
    size_t hl = slash ? (size_t)(slash - h) : strlen(h);
    char host[256], port[16] = "443";
    const char *path = slash ? slash : "/";
    if (hl == 0 || hl >= sizeof host) {
        snprintf(why, wl, "%s: no host", url);
        return -1;
    }
    memcpy(host, h, hl);
    host[hl] = '\0';
    char *colon = host[0] == '[' ? strstr(host, "]:") : strrchr(host, ':');
    if (colon) {
        if (host[0] == '[')
            colon++;
        snprintf(port, sizeof port, "%s", colon + 1);
        *colon = '\0';
    }
    if (host[0] == '[') {
        size_t n = strlen(host);
        memmove(host, host + 1, n);
        if (n >= 2 && host[n - 2] == ']')
            host[n - 2] = '\0';
    }
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(host, port, &hints, &res);
    if (gai != 0 || !res) {
        snprintf(why, wl, "%s: cannot resolve %s: %s", url, host, gai_strerror(gai));
        return -1;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = {10, 0};
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv); /* bounds connect() too */
    }
    int crc = fd >= 0 ? connect(fd, res->ai_addr, res->ai_addrlen) : -1;
    freeaddrinfo(res);
    if (crc < 0) {
        snprintf(why, wl, "%s: cannot connect to %s port %s", url, host, port);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int rc = -1;
    char detail[256];
    uint8_t *buf = NULL;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL *ssl = NULL;
    if (!ctx)
        goto out;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* servers that close without close_notify (Connection: close); a
     * cut answer is caught by its Content-Length or chunk sizes */
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (cafile[0] ? SSL_CTX_load_verify_locations(ctx, cafile, NULL) != 1 : SSL_CTX_set_default_verify_paths(ctx) != 1) {
        ob_ssl_err(detail, sizeof detail, "no trust store");
        snprintf(why, wl, "%.300s: cannot load the trust store %.300s: %.200s", url, cafile[0] ? cafile : "(system)",
                 detail);
        goto out;
    }
    ssl = SSL_new(ctx);
    if (!ssl || SSL_set_fd(ssl, fd) != 1)
        goto out;
    unsigned char ipbuf[16];
    bool is_ip = inet_pton(AF_INET, host, ipbuf) == 1 || inet_pton(AF_INET6, host, ipbuf) == 1;
    if (!is_ip)
        SSL_set_tlsext_host_name(ssl, host);
    X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);
    if (verify_host && (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(vp, host) : X509_VERIFY_PARAM_set1_host(vp, host, 0)) != 1)
        goto out;
    if (SSL_connect(ssl) != 1) {
        long vr = SSL_get_verify_result(ssl);
        if (vr != X509_V_OK)
            snprintf(detail, sizeof detail, "certificate verification failed: %s", X509_verify_cert_error_string(vr));
        else
            ob_ssl_err(detail, sizeof detail, "handshake failed");
        snprintf(why, wl, "%s: TLS: %s", url, detail);
        goto out;
    }
    char req[1024];
    int rl = snprintf(req, sizeof req,
                      "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\nUser-Agent: samsa\r\n"
                      "Connection: close\r\n\r\n", path, host);
    if (rl <= 0 || rl >= (int)sizeof req || SSL_write(ssl, req, rl) != rl) {
        snprintf(why, wl, "%s: cannot send the request", url);
        goto out;
    }
    size_t cap = OB_JWKS_MAX + 65536, len = 0;
    buf = malloc(cap + 1);
    if (!buf)
        goto out;
    for (;;) {
        if (len == cap) {
            snprintf(why, wl, "%s: the answer is larger than 1 MiB", url);
            goto out;
        }
        int n = SSL_read(ssl, buf + len, (int)(cap - len));
        if (n > 0) {
            len += (size_t)n;
            continue;
        }
        int e = SSL_get_error(ssl, n);
        if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && len > 0))
            break; /* the server closed (Connection: close) */
        ob_ssl_err(detail, sizeof detail, "read failed or timed out");
        snprintf(why, wl, "%s: %s", url, detail);
        goto out;
    }
    buf[len] = '\0';
    uint8_t *body;
    size_t blen;
    char hwhy[128];
    if (ob_http_body(buf, len, &body, &blen, hwhy, sizeof hwhy) < 0) {
        snprintf(why, wl, "%s: %s", url, hwhy);
        goto out;
    }
    memmove(buf, body, blen);
    *out = buf;
    *outlen = blen;
    buf = NULL;
    rc = 0;
out:
    if (rc < 0 && !why[0])
        snprintf(why, wl, "%s: cannot set up TLS", url);
    free(buf);
    if (ssl) {
        SSL_shutdown(ssl);
        SSL_free(ssl);
    }
    SSL_CTX_free(ctx);
    ERR_clear_error();
    close(fd);
    return rc;
}

/* Fetches source i (a copy of its settings taken under the lock) and
 * installs the keys, or keeps the old ones with one warning per
 * distinct failure. Background thread; takes the lock itself. */
static void ob_fetch(struct ob_state *st, int i)
{
    pthread_mutex_lock(&st->jwks_lock);
    struct ob_source c = st->src[i];
    pthread_mutex_unlock(&st->jwks_lock);
    char why[1200] = "";
    uint8_t *doc = NULL;
    size_t len = 0;
    int rc;
    if (!strncmp(c.url, "file:", 5)) {
        rc = ob_read_file(c.url, &doc, &len, why, sizeof why);
    } else if (!strncmp(c.url, "https://", 8)) {
        rc = ob_https_get(c.url, c.cafile, c.verify_host, &doc, &len, why, sizeof why);
    } else {
        snprintf(why, sizeof why, "sasl.oauthbearer.jwks.endpoint.url=%s: use an https: or a file: URL", c.url);
        rc = -1;
    }
    struct ob_jwks ks;
    if (rc == 0 && ob_jwks_parse(doc, len, &ks) < 0) {
        snprintf(why, sizeof why, "%s is not a JWKS ({\"keys\":[...]})", c.url);
        rc = -1;
    }
    free(doc);
    int64_t now = st->api->monotonic_ns();
    pthread_mutex_lock(&st->jwks_lock);
    struct ob_source *s = &st->src[i];
    if (rc == 0) {
        ob_jwks_free(&s->keys);
        s->keys = ks;
        s->loaded = true;
        s->last_err[0] = '\0';
        s->next_ns = now + s->refresh_ms * 1000000;
    } else {
        /* retried sooner than a refresh, as Kafka's backoff does */
        int64_t retry_ms = s->refresh_ms < 5000 ? s->refresh_ms : 5000;
        s->next_ns = now + (retry_ms > 0 ? retry_ms : 1000) * 1000000;
    }
    bool log_err = rc < 0 && strcmp(s->last_err, why) != 0;
    if (log_err)
        snprintf(s->last_err, sizeof s->last_err, "%s", why);
    pthread_mutex_unlock(&st->jwks_lock);
    if (rc == 0)
        st->api->log(st->host, SAMSA_LOG_INFO, "OAUTHBEARER: read %d usable key(s) from %s", ks.n, c.url);
    else if (log_err)
        st->api->log(st->host, SAMSA_LOG_WARN, "OAUTHBEARER: cannot refresh the JWKS (the previous keys stay): %s",
                     why);
}

/* The background thread: fetches each source when it is due. */
static void *ob_thread(void *arg)
{
    struct ob_state *st = arg;
    pthread_mutex_lock(&st->jwks_lock);
    while (!st->stopping) {
        int64_t now = st->api->monotonic_ns(), next = INT64_MAX;
        int due = -1;
        for (int i = 0; i < st->nsrc; i++) {
            if (st->src[i].next_ns <= now && due < 0)
                due = i;
            if (st->src[i].next_ns < next)
                next = st->src[i].next_ns;
        }
        if (due >= 0) {
            st->src[due].last_ns = now;
            st->src[due].next_ns = INT64_MAX; /* until fetched */
            pthread_mutex_unlock(&st->jwks_lock);
            ob_fetch(st, due);
            pthread_mutex_lock(&st->jwks_lock);
            continue;
        }
        /* CLOCK_REALTIME deadline for the condition variable: the wait
         * is at most a minute, then the sources are looked at again */
        int64_t wait_ns = next == INT64_MAX ? 60000000000LL : next - now;
        if (wait_ns > 60000000000LL)
            wait_ns = 60000000000LL;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t t = (int64_t)ts.tv_nsec + wait_ns;
        ts.tv_sec += (time_t)(t / 1000000000LL);
        ts.tv_nsec = (long)(t % 1000000000LL);
        pthread_cond_timedwait(&st->jwks_cv, &st->jwks_lock, &ts);
    }
    pthread_mutex_unlock(&st->jwks_lock);
    return NULL;
}

/* The source of url (added, and the thread started, when new; its
 * first fetch is due at once). NULL when the table is full. Under
 * jwks_lock. */
static struct ob_source *ob_source_locked(struct ob_state *st, const char *url, int64_t refresh_ms, const char *jaas)
{
    for (int i = 0; i < st->nsrc; i++)
        if (!strcmp(st->src[i].url, url))
            return &st->src[i];
    if (st->nsrc == OB_MAX_SOURCES || strlen(url) >= sizeof st->src[0].url)
        return NULL;
    struct ob_source *s = &st->src[st->nsrc];
    memset(s, 0, sizeof *s);
    snprintf(s->url, sizeof s->url, "%s", url);
    s->refresh_ms = refresh_ms > 0 ? refresh_ms : 1000;
    /* Kafka takes the HTTPS settings of the OAuth endpoints from the JAAS
     * options (JaasOptionsUtils): ssl.truststore.location (PEM here) and
     * ssl.endpoint.identification.algorithm */
    char alg[32];
    ob_jaas_option(jaas, "ssl.truststore.location", s->cafile, sizeof s->cafile);
    ob_jaas_option(jaas, "ssl.endpoint.identification.algorithm", alg, sizeof alg);
    s->verify_host = !jaas || !strstr(jaas, "ssl.endpoint.identification.algorithm") || alg[0];
    s->next_ns = 0;
    st->nsrc++;
    if (!st->thread_started && pthread_create(&st->thread, NULL, ob_thread, st) == 0)
        st->thread_started = true;
    pthread_cond_signal(&st->jwks_cv);
    return s;
}

/* The secured validator for listener: settings, keys, validation. */
static int ob_validate_listener_signed(struct ob_state *st, const char *listener, const char *tok, size_t len,
                                       struct ob_result *r)
{
    struct ob_secured o;
    memset(&o, 0, sizeof o);
    const char *v;
    snprintf(o.sub_claim, sizeof o.sub_claim, "%s",
             (v = ob_setting(st, listener, "sasl.oauthbearer.sub.claim.name")) && v[0] ? v : "sub");
    snprintf(o.scope_claim, sizeof o.scope_claim, "%s",
             (v = ob_setting(st, listener, "sasl.oauthbearer.scope.claim.name")) && v[0] ? v : "scope");
    snprintf(o.audience, sizeof o.audience, "%s", (v = ob_setting(st, listener, "sasl.oauthbearer.expected.audience")) ? v : "");
    snprintf(o.issuer, sizeof o.issuer, "%s", (v = ob_setting(st, listener, "sasl.oauthbearer.expected.issuer")) ? v : "");
    o.clock_skew_s = (v = ob_setting(st, listener, "sasl.oauthbearer.clock.skew.seconds")) ? atol(v) : 30;
    int64_t refresh = (v = ob_setting(st, listener, "sasl.oauthbearer.jwks.endpoint.refresh.ms")) ? atoll(v) : 3600000;
    const char *url = ob_setting(st, listener, "sasl.oauthbearer.jwks.endpoint.url");
    if (!url || !url[0]) {
        memset(r, 0, sizeof *r);
        st->api->log(st->host, SAMSA_LOG_WARN, "listener %s: OAUTHBEARER with signed tokens needs "
                     "sasl.oauthbearer.jwks.endpoint.url", listener);
        return ob_fail(r, NULL, "%s", "no JWKS configured");
    }
    const char *jaas = ob_listener_config(st, listener, "sasl.jaas.config");
    int rc;
    pthread_mutex_lock(&st->jwks_lock);
    struct ob_source *src = ob_source_locked(st, url, refresh, jaas);
    if (!src) {
        memset(r, 0, sizeof *r);
        rc = ob_fail(r, NULL, "%s", "too many JWKS URLs (at most 8)");
    } else if (!src->loaded) {
        memset(r, 0, sizeof *r);
        rc = ob_fail(r, NULL, "the JWKS of %s has not been retrieved yet", url);
    } else {
        rc = ob_validate_signed(tok, len, &src->keys, &o, st->api->wall_ms(), r);
        /* a key the JWKS lacks: the issuer may have rotated its keys. As
         * Kafka's RefreshingHttpsJwks, the refresh is brought forward
         * (at most once a second) and this token stays refused. */
        int64_t now = st->api->monotonic_ns();
        if (rc < 0 && strstr(r->reason, "no key of the JWKS") && now - src->last_ns >= 1000000000LL &&
            src->next_ns != INT64_MAX) {
            src->next_ns = now;
            pthread_cond_signal(&st->jwks_cv);
        }
    }
    pthread_mutex_unlock(&st->jwks_lock);
    return rc;
}

static int ob_step(void *cap_state, void *session, const uint8_t *in, size_t in_len, samsa_out_t *out,
                   samsa_async_t *token, char *errstr, size_t errlen)
{
    (void)token;
    struct ob_state *st = cap_state;
    struct ob_session *s = session;
    if (s->failed) {
        /* the client's acknowledgement of the error challenge (0x01), or
         * anything else: the exchange fails with the JSON, as Kafka's */
        st->api->metric_add(st->failed, 1);
        snprintf(errstr, errlen, "%.*s", (int)(errlen > 0 ? errlen - 1 : 0), s->error_json);
        return SAMSA_EAUTH;
    }
    struct ob_initial m;
    if (ob_parse_initial(in, in_len, &m) < 0) {
        st->api->metric_add(st->failed, 1);
        snprintf(errstr, errlen, "Authentication failed during authentication due to invalid credentials with "
                                 "SASL mechanism OAUTHBEARER");
        st->api->log(st->host, SAMSA_LOG_DEBUG, "Invalid OAUTHBEARER client first message");
        return SAMSA_EAUTH;
    }
    const char *handler = ob_listener_config(st, s->listener, "sasl.server.callback.handler.class");
    bool secured = handler && handler[0] && !strstr(handler, "OAuthBearerUnsecuredValidatorCallbackHandler");
    if (secured && !strstr(handler, "OAuthBearerValidatorCallbackHandler")) {
        st->api->log(st->host, SAMSA_LOG_WARN, "listener %s: OAUTHBEARER validator %s is not available in "
                     "samsa: refusing the login", s->listener, handler);
        snprintf(errstr, errlen, "Authentication failed: the listener's OAUTHBEARER validator is not available");
        st->api->metric_add(st->failed, 1);
        return SAMSA_EAUTH;
    }
    struct ob_result r;
    int vrc;
    if (secured) {
        vrc = ob_validate_listener_signed(st, s->listener, m.token, m.token_len, &r);
    } else {
        struct ob_opts o;
        char why[200];
        if (ob_opts_from_jaas(ob_listener_config(st, s->listener, "sasl.jaas.config"), &o, why, sizeof why) < 0) {
            st->api->log(st->host, SAMSA_LOG_WARN, "listener %s: %s", s->listener, why);
            snprintf(errstr, errlen, "Authentication failed: the listener's OAUTHBEARER options are invalid");
            st->api->metric_add(st->failed, 1);
            return SAMSA_EAUTH;
        }
        vrc = ob_validate(m.token, m.token_len, &o, st->api->wall_ms(), &r);
    }
    if (vrc < 0) {
        st->api->log(st->host, SAMSA_LOG_DEBUG, "OAUTHBEARER token refused: %s", r.reason);
        s->failed = true;
        snprintf(s->error_json, sizeof s->error_json, "%s", r.error_json);
        size_t avail = 0, n = strlen(r.error_json);
        uint8_t *w = out->reserve(out, n, &avail);
        if (!w || avail < n) {
            snprintf(errstr, errlen, "%s", r.error_json);
            return SAMSA_EAUTH;
        }
        memcpy(w, r.error_json, n);
        out->commit(out, n);
        return SAMSA_SASL_CONTINUE;
    }
    if (m.authzid_len &&
        (m.authzid_len != strlen(r.principal) - 5 || memcmp(m.authzid, r.principal + 5, m.authzid_len) != 0)) {
        st->api->metric_add(st->failed, 1);
        snprintf(errstr, errlen, "Authentication failed: Client requested an authorization id (%.*s) that is "
                 "different from the token's principal name (%.100s)", (int)(m.authzid_len < 100 ? m.authzid_len : 100),
                 m.authzid, r.principal + 5);
        return SAMSA_EAUTH;
    }
    snprintf(s->principal, sizeof s->principal, "%s", r.principal);
    s->expiry_ms = r.expiry_ms;
    st->api->metric_add(st->ok, 1);
    return SAMSA_OK;
}

static const char *ob_principal(void *cap_state, void *session)
{
    (void)cap_state;
    return ((struct ob_session *)session)->principal;
}

/* KIP-368: the session lasts as long as the token. */
static int64_t ob_session_lifetime_ms(void *cap_state, void *session)
{
    struct ob_state *st = cap_state;
    int64_t left = ((struct ob_session *)session)->expiry_ms - st->api->wall_ms();
    return left > 0 ? left : 1;
}

static void ob_session_free(void *cap_state, void *session)
{
    (void)cap_state;
    free(session);
}

static const samsa_sasl_mech_t ob_mech = {
    .hdr = {.struct_size = sizeof(samsa_sasl_mech_t), .kind = SAMSA_CAP_SASL, .name = "OAUTHBEARER"},
    .session_new = ob_session_new,
    .step = ob_step,
    .principal = ob_principal,
    .session_lifetime_ms = ob_session_lifetime_ms,
    .session_free = ob_session_free,
};

/* The secured validator's JWKS of every listener in `listeners` start
 * being fetched at startup (Kafka's brokers retrieve them when they
 * configure the validator), not at the first login. */
static void ob_discover(struct ob_state *st)
{
    if (!SAMSA_HOST_HAS(st->api, server_config_get))
        return;
    const char *ls = st->api->server_config_get(st->host, "listeners");
    for (const char *p = ls; p && *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *sep = strstr(p, "://");
        const char *comma = strchr(p, ',');
        if (!sep || (comma && comma < sep))
            break;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(sep - p < 127 ? sep - p : 127), p);
        p = comma ? comma + 1 : p + strlen(p);
        const char *handler = ob_listener_config(st, name, "sasl.server.callback.handler.class");
        if (!handler || !strstr(handler, "OAuthBearerValidatorCallbackHandler") ||
            strstr(handler, "OAuthBearerUnsecuredValidatorCallbackHandler"))
            continue;
        const char *url = ob_setting(st, name, "sasl.oauthbearer.jwks.endpoint.url");
        const char *v = ob_setting(st, name, "sasl.oauthbearer.jwks.endpoint.refresh.ms");
        if (!url || !url[0])
            continue;
        pthread_mutex_lock(&st->jwks_lock);
        ob_source_locked(st, url, v ? atoll(v) : 3600000, ob_listener_config(st, name, "sasl.jaas.config"));
        pthread_mutex_unlock(&st->jwks_lock);
    }
}

static int ob_init(samsa_host_t *host, const samsa_host_api_t *api, void **state, char *errstr, size_t errlen)
{
    (void)state;
    (void)errstr;
    (void)errlen;
    g_ob.host = host;
    g_ob.api = api;
    g_ob.ok = api->metric_register(host, "authentications", SAMSA_METRIC_COUNTER,
                                   "Successful SASL/OAUTHBEARER authentications.");
    g_ob.failed = api->metric_register(host, "authentication_failures", SAMSA_METRIC_COUNTER,
                                       "Failed SASL/OAUTHBEARER authentications.");
    int rc = api->register_capability(host, &ob_mech.hdr, &g_ob);
    if (rc == SAMSA_OK)
        ob_discover(&g_ob);
    return rc;
}

static void ob_fini(void *state)
{
    (void)state;
    struct ob_state *st = &g_ob;
    pthread_mutex_lock(&st->jwks_lock);
    st->stopping = true;
    pthread_cond_signal(&st->jwks_cv);
    bool started = st->thread_started;
    pthread_mutex_unlock(&st->jwks_lock);
    if (started)
        pthread_join(st->thread, NULL);
    for (int i = 0; i < st->nsrc; i++)
        ob_jwks_free(&st->src[i].keys);
    st->nsrc = 0;
    st->thread_started = false;
    st->stopping = false;
}

static const samsa_plugin_info_t ob_info = {
    SAMSA_PLUGIN_INFO_HEADER,
    .name = "sasl-oauthbearer",
    .version = SAMSA_MODULE_VERSION,
    .description = "SASL/OAUTHBEARER (RFC 7628): Kafka's unsecured JWS validator, or signed JWTs against a JWKS (https: or file:)",
    .license = "Apache-2.0",
    .init = ob_init,
    .fini = ob_fini,
};

#ifndef SAMSA_SASL_NO_ENTRY
SAMSA_PLUGIN_DECLARE(sasl_oauthbearer, ob_info)
#endif
