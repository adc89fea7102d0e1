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
 * token's expiry is the session lifetime (KIP-368). Signed tokens
 * (Kafka's OAuthBearerValidatorCallbackHandler, JWKS) are not validated
 * here: a listener configured for them is refused at the first login
 * with a log line. Compiled against include/samsa only. */
#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* Kafka's OAuthBearerUnsecuredJws plus the validator's checks at now_ms.
 * 0 with r->principal and r->expiry_ms, or -1 with r's error. */
static int ob_validate(const char *tok, size_t len, const struct ob_opts *o, int64_t now_ms, struct ob_result *r)
{
    memset(r, 0, sizeof *r);
    if (len > OB_MAX_TOKEN)
        return ob_fail(r, NULL, "token longer than %s bytes", "16384");
    const char *d1 = memchr(tok, '.', len);
    const char *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - tok)) : NULL;
    if (!d1 || !d2 || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - tok)))
        return ob_fail(r, NULL, "%s", "Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values");
    if (d2 == d1 + 1)
        return ob_fail(r, NULL, "%s", "Malformed compact serialization contains '..'");
    uint8_t *hb = malloc(OB_MAX_TOKEN), *pb = malloc(OB_MAX_TOKEN);
    if (!hb || !pb) {
        free(hb);
        free(pb);
        return ob_fail(r, NULL, "%s", "out of memory");
    }
    long hl = ob_b64_decode(tok, (size_t)(d1 - tok), hb, OB_MAX_TOKEN);
    long pl = ob_b64_decode(d1 + 1, (size_t)(d2 - d1 - 1), pb, OB_MAX_TOKEN);
    struct ob_claims hdr, cl;
    int rc = -1;
    if (hl < 0 || pl < 0) {
        ob_fail(r, NULL, "%s", "malformed Base64 URL encoded value");
        goto out_bufs;
    }
    if (ob_parse_object(hb, (size_t)hl, &hdr) < 0) {
        ob_fail(r, NULL, "%s", "malformed JSON");
        goto out_bufs;
    }
    if (ob_parse_object(pb, (size_t)pl, &cl) < 0) {
        ob_claims_free(&hdr);
        ob_fail(r, NULL, "%s", "malformed JSON");
        goto out_bufs;
    }
    const struct ob_claim *alg = ob_claim(&hdr, "alg");
    if (!alg || alg->kind != OB_STRING || strcmp(alg->str, "none") != 0) {
        ob_fail(r, NULL, "%s", alg ? "Unsecured JWS must have 'none' for an algorithm"
                                   : "JWS header must have an Algorithm value");
        goto out;
    }
    if (d2 + 1 != tok + len) {
        ob_fail(r, NULL, "%s", "Unsecured JWS must not contain a digital signature");
        goto out;
    }
    const struct ob_claim *exp = ob_claim(&cl, "exp"), *iat = ob_claim(&cl, "iat");
    const struct ob_claim *sub = ob_claim(&cl, o->principal_claim), *scope = ob_claim(&cl, o->scope_claim);
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
    ob_claims_free(&hdr);
    ob_claims_free(&cl);
out_bufs:
    free(hb);
    free(pb);
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
/* The mechanism                                                       */

struct ob_state {
    samsa_host_t *host;
    const samsa_host_api_t *api;
    samsa_metric_t *ok, *failed;
};

struct ob_session {
    char listener[128];
    bool failed;         /* the error challenge was sent */
    char error_json[700];
    char principal[320];
    int64_t expiry_ms;
};

static struct ob_state g_ob;

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
    if (handler && handler[0] && !strstr(handler, "OAuthBearerUnsecuredValidatorCallbackHandler")) {
        st->api->log(st->host, SAMSA_LOG_WARN, "listener %s: OAUTHBEARER validator %s is not available in "
                     "samsa (only the unsecured validator is): refusing the login", s->listener, handler);
        snprintf(errstr, errlen, "Authentication failed: the listener's OAUTHBEARER validator is not available");
        st->api->metric_add(st->failed, 1);
        return SAMSA_EAUTH;
    }
    struct ob_opts o;
    char why[200];
    if (ob_opts_from_jaas(ob_listener_config(st, s->listener, "sasl.jaas.config"), &o, why, sizeof why) < 0) {
        st->api->log(st->host, SAMSA_LOG_WARN, "listener %s: %s", s->listener, why);
        snprintf(errstr, errlen, "Authentication failed: the listener's OAUTHBEARER options are invalid");
        st->api->metric_add(st->failed, 1);
        return SAMSA_EAUTH;
    }
    struct ob_result r;
    if (ob_validate(m.token, m.token_len, &o, st->api->wall_ms(), &r) < 0) {
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
    return api->register_capability(host, &ob_mech.hdr, &g_ob);
}

static const samsa_plugin_info_t ob_info = {
    SAMSA_PLUGIN_INFO_HEADER,
    .name = "sasl-oauthbearer",
    .version = SAMSA_MODULE_VERSION,
    .description = "SASL/OAUTHBEARER (RFC 7628) with Kafka's unsecured JWS validator",
    .license = "Apache-2.0",
    .init = ob_init,
};

#ifndef SAMSA_SASL_NO_ENTRY
SAMSA_PLUGIN_DECLARE(sasl_oauthbearer, ob_info)
#endif
