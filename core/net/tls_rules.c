/* ssl.principal.mapping.rules (see tls_rules.h). */
#include "net/tls_rules.h"

#include <ctype.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

#define MAX_GROUPS 10

struct rule {
    bool is_default;
    regex_t re;
    char *replacement; /* as written: \x escapes, $n groups */
    char fold;         /* 'L', 'U' or 0 */
};

struct tls_rules {
    struct rule *v;
    size_t n;
};

void tls_rules_free(struct tls_rules *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        if (!r->v[i].is_default)
            regfree(&r->v[i].re);
        free(r->v[i].replacement);
    }
    free(r->v);
    free(r);
}

/* Copies up to the next unescaped '/' (escapes kept) into *out; returns
 * the position after the '/', or NULL when there is none. */
static const char *upto_slash(const char *p, char **out)
{
    const char *s = p;
    while (*p && *p != '/') {
        if (*p == '\\' && p[1])
            p++;
        p++;
    }
    if (*p != '/')
        return NULL;
    size_t n = (size_t)(p - s);
    *out = xmalloc(n + 1);
    memcpy(*out, s, n);
    (*out)[n] = '\0';
    return p + 1;
}

/* Java's lazy quantifiers as POSIX greedy ones: "*?" "+?" "??" "}?". */
static char *posix_pattern(const char *java)
{
    size_t n = strlen(java);
    char *out = xmalloc(n + 1), *o = out;
    for (size_t i = 0; i < n; i++) {
        if (java[i] == '\\' && i + 1 < n) {
            *o++ = java[i++];
            *o++ = java[i];
            continue;
        }
        if (java[i] == '?' && i > 0 && strchr("*+?}", java[i - 1]) && !(i > 1 && java[i - 2] == '\\'))
            continue;
        *o++ = java[i];
    }
    *o = '\0';
    return out;
}

int tls_rules_parse(const char *text, struct tls_rules **out, char *err, size_t errlen)
{
    struct tls_rules *r = xcalloc(1, sizeof *r);
    const char *p = text ? text : "";
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        struct rule ru;
        memset(&ru, 0, sizeof ru);
        if (!strncmp(p, "DEFAULT", 7)) {
            ru.is_default = true;
            p += 7;
        } else if (!strncmp(p, "RULE:", 5)) {
            char *pat = NULL;
            const char *q = upto_slash(p + 5, &pat);
            if (q)
                q = upto_slash(q, &ru.replacement);
            if (!q) {
                free(pat);
                free(ru.replacement);
                snprintf(err, errlen, "invalid rule (RULE:pattern/replacement/[LU]): %.60s", p);
                tls_rules_free(r);
                return -1;
            }
            if (*q == 'L' || *q == 'U')
                ru.fold = *q++;
            char *posix = posix_pattern(pat);
            int rc = regcomp(&ru.re, posix, REG_EXTENDED);
            free(posix);
            if (rc != 0) {
                char why[128];
                regerror(rc, &ru.re, why, sizeof why);
                snprintf(err, errlen, "rule pattern %.60s: %s", pat, why);
                free(pat);
                free(ru.replacement);
                tls_rules_free(r);
                return -1;
            }
            free(pat);
            p = q;
        } else {
            snprintf(err, errlen, "invalid rule: %.60s (DEFAULT or RULE:pattern/replacement/[LU])", p);
            tls_rules_free(r);
            return -1;
        }
        r->v = xrealloc(r->v, (r->n + 1) * sizeof *r->v);
        r->v[r->n++] = ru;
        /* Kafka ignores what follows a rule up to its separator */
        while (*p && *p != ',' && *p != '\n')
            p++;
        if (*p)
            p++;
    }
    if (r->n == 0) {
        snprintf(err, errlen, "no rule (use DEFAULT for the subject as it is)");
        tls_rules_free(r);
        return -1;
    }
    *out = r;
    return 0;
}

static char *substitute(const struct rule *ru, const char *dn, const regmatch_t *m)
{
    struct buf b;
    buf_init(&b);
    for (const char *s = ru->replacement; *s; s++) {
        if (*s == '\\' && s[1]) {
            s++;
            buf_append(&b, s, 1);
        } else if (*s == '$' && isdigit((unsigned char)s[1])) {
            int g = s[1] - '0';
            s++;
            if (g < MAX_GROUPS && m[g].rm_so >= 0)
                buf_append(&b, dn + m[g].rm_so, (size_t)(m[g].rm_eo - m[g].rm_so));
        } else {
            buf_append(&b, s, 1);
        }
    }
    char *out = xmalloc(b.len + 1);
    memcpy(out, b.data, b.len);
    out[b.len] = '\0';
    buf_free(&b);
    for (char *c = out; ru->fold && *c; c++)
        *c = (char)(ru->fold == 'L' ? tolower((unsigned char)*c) : toupper((unsigned char)*c));
    return out;
}

char *tls_rules_apply(const struct tls_rules *r, const char *dn)
{
    size_t len = strlen(dn);
    for (size_t i = 0; r && i < r->n; i++) {
        const struct rule *ru = &r->v[i];
        if (ru->is_default)
            return xstrdup(dn);
        regmatch_t m[MAX_GROUPS];
        /* Java's matches(): the whole subject */
        if (regexec(&ru->re, dn, MAX_GROUPS, m, 0) == 0 && m[0].rm_so == 0 && (size_t)m[0].rm_eo == len)
            return substitute(ru, dn, m);
    }
    return NULL;
}
