#include "auth/acl.h"

#include <stdlib.h>
#include <string.h>

/* Kafka's codes (AclOperation, PatternType, AclPermissionType). */
#define OP_ALL 2
#define OP_READ 3
#define OP_WRITE 4
#define OP_DELETE 6
#define OP_ALTER 7
#define OP_DESCRIBE 8
#define OP_DESCRIBE_CONFIGS 10
#define OP_ALTER_CONFIGS 11
#define PT_LITERAL 3
#define PT_PREFIXED 4
#define PERM_DENY 2
#define PERM_ALLOW 3

static bool principal_matches(const struct mi_acl *a, const char *principal)
{
    return strcmp(a->principal, principal) == 0 || strcmp(a->principal, "User:*") == 0;
}

static bool host_matches(const struct mi_acl *a, const char *host)
{
    return strcmp(a->host, "*") == 0 || strcmp(a->host, host) == 0;
}

/* StandardAuthorizerData.findResult's operation rule: ALL matches every
 * operation; an ALLOW of READ, WRITE, DELETE or ALTER also allows
 * DESCRIBE, of ALTER_CONFIGS also DESCRIBE_CONFIGS; a DENY denies only
 * its own operation (a DENY of READ does not deny DESCRIBE). */
static bool op_matches(const struct mi_acl *a, int op)
{
    if (a->operation == OP_ALL || a->operation == op)
        return true;
    if (a->permission != PERM_ALLOW)
        return false;
    if (op == OP_DESCRIBE)
        return a->operation == OP_READ || a->operation == OP_WRITE || a->operation == OP_DELETE ||
               a->operation == OP_ALTER;
    if (op == OP_DESCRIBE_CONFIGS)
        return a->operation == OP_ALTER_CONFIGS;
    return false;
}

struct verdict {
    bool has_resource_acls;
    const struct mi_acl *allow, *deny;
};

/* The ACLs of one (type, pattern, name) section, which all apply to the
 * resource: records whether any exist and the first ALLOW and DENY that
 * match the principal, host and operation. */
static void check_section(const struct mi_acls *acls, int type, int pattern, const char *name, size_t len,
                          const char *principal, const char *host, int op, struct verdict *v)
{
    int32_t n;
    int32_t i = mi_acls_find(acls, (int8_t)type, (int8_t)pattern, name, len, &n);
    for (int32_t k = 0; k < n && !v->deny; k++) {
        const struct mi_acl *a = &acls->a[i + k];
        v->has_resource_acls = true;
        if (!principal_matches(a, principal) || !host_matches(a, host) || !op_matches(a, op))
            continue;
        if (a->permission == PERM_DENY)
            v->deny = a;
        else if (a->permission == PERM_ALLOW && !v->allow)
            v->allow = a;
    }
}

/* First index in [lo, hi) whose ACL does not sort before (type, pattern). */
static int32_t section_start(const struct mi_acls *acls, int32_t lo, int32_t hi, int type, int pattern)
{
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        const struct mi_acl *a = &acls->a[mid];
        if (a->resource_type < type || (a->resource_type == type && a->pattern_type < pattern))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The PREFIXED ACLs whose name is a prefix of name, as Kafka's
 * checkSection walks them: the last ACL not after name[0..m) either is
 * such a prefix (its ACLs apply; shorter prefixes sort before it) or
 * shares only c < m bytes with it, and then no prefix longer than c can
 * exist (it would sort after that ACL). Each step shortens m: a few
 * binary searches instead of one per prefix length. */
static void check_prefixed(const struct mi_acls *acls, int type, const char *name, size_t len,
                           const char *principal, const char *host, int op, struct verdict *v)
{
    if (!acls || acls->n == 0)
        return;
    int32_t lo = section_start(acls, 0, acls->n, type, PT_PREFIXED);
    int32_t end = section_start(acls, lo, acls->n, type, PT_PREFIXED + 1);
    size_t m = len;
    while (m > 0 && lo < end && !v->deny) {
        int32_t a_lo = lo, a_hi = end; /* last ACL with name <= name[0..m) */
        while (a_lo < a_hi) {
            int32_t mid = a_lo + (a_hi - a_lo) / 2;
            const struct mi_acl *a = &acls->a[mid];
            size_t al = (size_t)a->name_len;
            int c = memcmp(a->resource_name, name, al < m ? al : m);
            if (c < 0 || (c == 0 && al <= m))
                a_lo = mid + 1;
            else
                a_hi = mid;
        }
        int32_t i = a_lo - 1;
        if (i < lo)
            return;
        const struct mi_acl *a = &acls->a[i];
        size_t al = (size_t)a->name_len, c = 0;
        while (c < al && c < m && a->resource_name[c] == name[c])
            c++;
        if (c == al) { /* a prefix: its whole group applies */
            int32_t g = i;
            while (g > lo && acls->a[g - 1].name_len == a->name_len &&
                   memcmp(acls->a[g - 1].resource_name, a->resource_name, al) == 0)
                g--;
            check_section(acls, type, PT_PREFIXED, a->resource_name, al, principal, host, op, v);
            end = g;
            m = al - 1;
        } else {
            end = i;
            m = c;
        }
    }
}

bool acl_authorize(const struct mi_acls *acls, const char *principal, const char *host, int op, int type,
                   const char *name, size_t len, bool allow_if_none, enum acl_rule *rule, const struct mi_acl **acl)
{
    struct verdict v = {false, NULL, NULL};
    /* the literal name, every prefix of it (a PREFIXED "foo" applies to
     * "foobar" and to "foo"), then the wildcard; a DENY ends the search */
    check_section(acls, type, PT_LITERAL, name, len, principal, host, op, &v);
    if (!v.deny)
        check_prefixed(acls, type, name, len, principal, host, op, &v);
    if (!v.deny && !(len == 1 && name[0] == '*'))
        check_section(acls, type, PT_LITERAL, "*", 1, principal, host, op, &v);
    enum acl_rule r;
    const struct mi_acl *why = NULL;
    bool ok;
    if (v.deny) {
        r = ACL_RULE_MATCH_DENY;
        why = v.deny;
        ok = false;
    } else if (v.allow) {
        r = ACL_RULE_MATCH_ALLOW;
        why = v.allow;
        ok = true;
    } else if (!v.has_resource_acls && allow_if_none) {
        r = ACL_RULE_DEFAULT_ALLOW;
        ok = true;
    } else {
        r = ACL_RULE_DEFAULT_DENY;
        ok = false;
    }
    if (rule)
        *rule = r;
    if (acl)
        *acl = why;
    return ok;
}

/* Whether some prefix of s (s itself included) is one of the names. */
static bool prefix_denied(const char *s, const char *const *names, size_t n)
{
    size_t sl = strlen(s);
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(names[i]);
        if (l <= sl && memcmp(s, names[i], l) == 0)
            return true;
    }
    return false;
}

bool acl_authorize_any(const struct mi_acls *acls, const char *principal, const char *host, int op, int type,
                       bool allow_if_none)
{
    /* Kafka checks a hard-coded name first, so that super users and
     * allow.everyone.if.no.acl.found answer as for any named resource */
    if (acl_authorize(acls, principal, host, op, type, "hardcode", 8, allow_if_none, NULL, NULL))
        return true;
    if (!acls || acls->n == 0)
        return false;
    /* the section of the type: ACLs are sorted by type first */
    int32_t lo = 0, hi = acls->n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (acls->a[mid].resource_type < type)
            lo = mid + 1;
        else
            hi = mid;
    }
    int32_t end = lo;
    while (end < acls->n && acls->a[end].resource_type == type)
        end++;
    size_t cap = (size_t)(end - lo) + 1;
    const char **names = malloc(4 * cap * sizeof *names); /* owned here */
    if (!names)
        return false;
    const char **deny_lit = names, **deny_pre = names + cap, **allow_lit = names + 2 * cap,
               **allow_pre = names + 3 * cap;
    size_t ndl = 0, ndp = 0, nal = 0, nap = 0;
    bool wildcard_allow = false, ok = false;
    for (int32_t i = lo; i < end; i++) {
        const struct mi_acl *a = &acls->a[i];
        if (!host_matches(a, host) || !principal_matches(a, principal))
            continue;
        if (a->operation != op && a->operation != OP_ALL)
            continue;
        bool wildcard = a->pattern_type == PT_LITERAL && strcmp(a->resource_name, "*") == 0;
        if (a->permission == PERM_DENY) {
            if (wildcard)
                goto out;
            if (a->pattern_type == PT_LITERAL)
                deny_lit[ndl++] = a->resource_name;
            else if (a->pattern_type == PT_PREFIXED)
                deny_pre[ndp++] = a->resource_name;
        } else if (a->permission == PERM_ALLOW) {
            if (wildcard)
                wildcard_allow = true; /* wins unless a wildcard DENY turns up */
            if (a->pattern_type == PT_LITERAL)
                allow_lit[nal++] = a->resource_name;
            else if (a->pattern_type == PT_PREFIXED)
                allow_pre[nap++] = a->resource_name;
        }
    }
    /* an allowed literal neither denied literally nor under a denied
     * prefix; an allowed prefix not under a denied prefix */
    ok = wildcard_allow;
    for (size_t i = 0; i < nal && !ok; i++) {
        bool denied = false;
        for (size_t k = 0; k < ndl && !denied; k++)
            denied = strcmp(allow_lit[i], deny_lit[k]) == 0;
        ok = !denied && !prefix_denied(allow_lit[i], deny_pre, ndp);
    }
    for (size_t i = 0; i < nap && !ok; i++)
        ok = !prefix_denied(allow_pre[i], deny_pre, ndp);
out:
    free(names);
    return ok;
}

bool acl_super_user(const char *super_users, const char *principal)
{
    if (!super_users || !principal)
        return false;
    size_t pl = strlen(principal);
    const char *p = super_users;
    while (*p) {
        const char *e = strchr(p, ';');
        if (!e)
            e = p + strlen(p);
        const char *s = p, *t = e;
        while (s < t && (*s == ' ' || *s == '\t'))
            s++;
        while (t > s && (t[-1] == ' ' || t[-1] == '\t'))
            t--;
        if ((size_t)(t - s) == pl && memcmp(s, principal, pl) == 0)
            return true;
        p = *e ? e + 1 : e;
    }
    return false;
}
