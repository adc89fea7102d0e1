/* The ACL matcher (auth/acl.c) against Kafka's StandardAuthorizer rules,
 * over ACL sets built the way every node builds them: AccessControlEntry
 * and RemoveAccessControlEntry records applied to metadata images
 * (controller/image.c), which also shows the set staying sorted, shared
 * between images and given a new generation on every change; and the
 * binding filters of DescribeAcls / DeleteAcls (controller/acls.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "auth/acl.h"
#include "config.h"
#include "controller/controller.h"
#include "controller/image.h"
#include "controller/image_build.h"
#include "proto/gen/access_control_entry_record.h"
#include "proto/gen/kmeta.h"
#include "proto/gen/remove_access_control_entry_record.h"

enum { TOPIC = 2, GROUP = 3, CLUSTER = 4, TXN = 5 };
enum { LIT = 3, PRE = 4 };
enum { ALL = 2, READ = 3, WRITE = 4, CREATE = 5, DELETE = 6, ALTER = 7, DESCRIBE = 8, DESCRIBE_CONFIGS = 10,
       ALTER_CONFIGS = 11 };
enum { DENY = 2, ALLOW = 3 };

struct spec {
    int type;
    const char *name;
    int pattern;
    const char *principal;
    const char *host;
    int op;
    int perm;
};

static struct mimage *image_of(const struct mimage *base, const struct spec *s, size_t n, int id0)
{
    struct mi_draft *d = mi_draft_begin(base, NULL, 1);
    for (size_t i = 0; i < n; i++) {
        access_control_entry_record_t r;
        access_control_entry_record_init(&r);
        memset(r.id.b, 0, sizeof r.id.b);
        r.id.b[0] = (uint8_t)(id0 + (int)i);
        r.id.b[1] = (uint8_t)((id0 + (int)i) >> 8);
        r.resource_type = (int8_t)s[i].type;
        r.resource_name = KSTR(s[i].name);
        r.pattern_type = (int8_t)s[i].pattern;
        r.principal = KSTR(s[i].principal);
        r.host = KSTR(s[i].host);
        r.operation = (int8_t)s[i].op;
        r.permission_type = (int8_t)s[i].perm;
        char err[256];
        assert_int_equal(mi_draft_apply(d, (int64_t)i, KMETA_ACCESS_CONTROL_ENTRY_RECORD, 0, &r, err, sizeof err), 0);
    }
    return mi_draft_finish(d);
}

static bool ok(const struct mimage *m, const char *p, int op, int type, const char *name)
{
    return acl_authorize(m->acls, p, "127.0.0.1", op, type, name, strlen(name), false, NULL, NULL);
}

static void test_literal_prefixed_wildcard(void **state)
{
    (void)state;
    const struct spec s[] = {
        {TOPIC, "orders", LIT, "User:alice", "*", WRITE, ALLOW},
        {TOPIC, "logs-", PRE, "User:bob", "*", READ, ALLOW},
        {TOPIC, "*", LIT, "User:carol", "*", READ, ALLOW},
        {GROUP, "g", LIT, "User:*", "*", READ, ALLOW},
    };
    struct mimage *m = image_of(NULL, s, 4, 1);
    assert_true(ok(m, "User:alice", WRITE, TOPIC, "orders"));
    assert_false(ok(m, "User:alice", WRITE, TOPIC, "orders2")); /* literal is exact */
    assert_false(ok(m, "User:alice", READ, TOPIC, "orders"));
    assert_true(ok(m, "User:bob", READ, TOPIC, "logs-a"));
    assert_true(ok(m, "User:bob", READ, TOPIC, "logs-"));
    assert_false(ok(m, "User:bob", READ, TOPIC, "logs"));
    assert_true(ok(m, "User:carol", READ, TOPIC, "anything"));
    assert_true(ok(m, "User:dave", READ, GROUP, "g"));     /* User:* */
    assert_false(ok(m, "User:dave", READ, GROUP, "g2"));
    assert_false(ok(m, "User:alice", WRITE, GROUP, "orders")); /* other type */
    mimage_release(m);
}

/* Prefixed ACLs are found by jumping between the candidates (as Kafka's
 * checkSection does): every prefix of the name must be seen, shorter and
 * longer ones, with non-prefixes sorting between them. */
static void test_prefix_walk(void **state)
{
    (void)state;
    const struct spec s[] = {
        {TOPIC, "a", PRE, "User:u", "*", READ, ALLOW},     {TOPIC, "aa", PRE, "User:u", "*", WRITE, ALLOW},
        {TOPIC, "ab", PRE, "User:u", "*", DELETE, ALLOW},  {TOPIC, "abc", PRE, "User:u", "*", ALTER, ALLOW},
        {TOPIC, "abd", PRE, "User:u", "*", CREATE, ALLOW}, {TOPIC, "abcdz", PRE, "User:u", "*", ALL, ALLOW},
        {TOPIC, "b", PRE, "User:u", "*", WRITE, ALLOW},    {TOPIC, "a", PRE, "User:v", "*", READ, DENY},
        {TOPIC, "abcd", PRE, "User:v", "*", READ, ALLOW},  {GROUP, "ab", PRE, "User:u", "*", READ, ALLOW},
        {TOPIC, "abc", LIT, "User:u", "*", DESCRIBE_CONFIGS, ALLOW},
    };
    struct mimage *m = image_of(NULL, s, sizeof s / sizeof s[0], 1);
    const char *n = "abcde";
    assert_true(ok(m, "User:u", READ, TOPIC, n));    /* "a" */
    assert_false(ok(m, "User:u", WRITE, TOPIC, n));  /* "aa", "b" do not apply */
    assert_true(ok(m, "User:u", DELETE, TOPIC, n));  /* "ab" */
    assert_true(ok(m, "User:u", ALTER, TOPIC, n));   /* "abc" */
    assert_false(ok(m, "User:u", CREATE, TOPIC, n)); /* "abd" does not apply */
    assert_false(ok(m, "User:u", DESCRIBE_CONFIGS, TOPIC, n)); /* literal "abc" only for "abc" */
    assert_true(ok(m, "User:u", DESCRIBE_CONFIGS, TOPIC, "abc"));
    assert_true(ok(m, "User:u", ALTER, TOPIC, "abc"));
    assert_false(ok(m, "User:u", ALTER, TOPIC, "ab"));
    assert_true(ok(m, "User:u", CREATE, TOPIC, "abdx"));
    assert_true(ok(m, "User:u", WRITE, TOPIC, "aaa"));
    assert_true(ok(m, "User:u", WRITE, TOPIC, "abcdzz")); /* ALL on "abcdz" */
    assert_false(ok(m, "User:u", WRITE, TOPIC, "abcdy"));
    assert_false(ok(m, "User:u", READ, TOPIC, "c"));
    assert_false(ok(m, "User:v", READ, TOPIC, n)); /* the DENY on "a" is found past the ALLOW on "abcd" */
    assert_false(ok(m, "User:u", READ, GROUP, "a"));
    assert_true(ok(m, "User:u", READ, GROUP, "abx"));
    mimage_release(m);
}

/* Kafka's rules written the slow, obvious way: every ACL looked at. */
static bool reference(const struct mi_acls *set, const char *p, int op, int type, const char *name, bool none)
{
    bool any = false, allow = false;
    size_t len = strlen(name);
    for (int32_t i = 0; set && i < set->n; i++) {
        const struct mi_acl *a = &set->a[i];
        if (a->resource_type != type)
            continue;
        size_t al = strlen(a->resource_name);
        bool applies = a->pattern_type == LIT ? (!strcmp(a->resource_name, name) || !strcmp(a->resource_name, "*"))
                                              : (al <= len && !memcmp(a->resource_name, name, al));
        if (!applies)
            continue;
        any = true;
        if (strcmp(a->principal, p) && strcmp(a->principal, "User:*"))
            continue;
        if (strcmp(a->host, "*") && strcmp(a->host, "127.0.0.1"))
            continue;
        bool opm = a->operation == ALL || a->operation == op;
        if (!opm && a->permission == ALLOW)
            opm = (op == DESCRIBE && (a->operation == READ || a->operation == WRITE || a->operation == DELETE ||
                                      a->operation == ALTER)) ||
                  (op == DESCRIBE_CONFIGS && a->operation == ALTER_CONFIGS);
        if (!opm)
            continue;
        if (a->permission == DENY)
            return false;
        allow = true;
    }
    return allow || (!any && none);
}

static void test_against_reference(void **state)
{
    (void)state;
    static const char *const names[] = {"*", "a", "ab", "abc", "abcd", "b", "ba", "bab", "x", "aab", "abd", "abcde"};
    static const char *const principals[] = {"User:p", "User:q", "User:*"};
    static const char *const hosts[] = {"*", "127.0.0.1", "10.0.0.1"};
    static const int ops[] = {ALL, READ, WRITE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS, CREATE};
    unsigned seed = 12345;
#define RND(n) ((seed = seed * 1103515245u + 12345u), (int)((seed >> 16) % (unsigned)(n)))
    for (int round = 0; round < 200; round++) {
        struct spec s[24];
        int n = 1 + RND(24);
        for (int i = 0; i < n; i++)
            s[i] = (struct spec){RND(2) ? TOPIC : GROUP, names[RND(12)], RND(2) ? LIT : PRE, principals[RND(3)],
                                 hosts[RND(3)], ops[RND(9)], RND(3) ? ALLOW : DENY};
        struct mimage *m = image_of(NULL, s, (size_t)n, 1);
        for (int k = 0; k < 60; k++) {
            const char *nm = names[RND(12)] + 0;
            if (!strcmp(nm, "*"))
                nm = "zz";
            const char *p = principals[RND(2)];
            int op = ops[1 + RND(8)], type = RND(2) ? TOPIC : GROUP;
            bool none = RND(2);
            bool got = acl_authorize(m->acls, p, "127.0.0.1", op, type, nm, strlen(nm), none, NULL, NULL);
            if (got != reference(m->acls, p, op, type, nm, none))
                fail_msg("round %d: %s %d on %d:%s (allow if none %d): got %d", round, p, op, type, nm, none, got);
        }
        mimage_release(m);
    }
#undef RND
}

static void test_deny_beats_allow(void **state)
{
    (void)state;
    const struct spec s[] = {
        {TOPIC, "*", LIT, "User:alice", "*", ALL, ALLOW},
        {TOPIC, "secret", PRE, "User:alice", "*", READ, DENY},
        {TOPIC, "t", LIT, "User:*", "*", WRITE, DENY},
        {TOPIC, "t", LIT, "User:bob", "*", WRITE, ALLOW},
    };
    struct mimage *m = image_of(NULL, s, 4, 1);
    enum acl_rule rule;
    const struct mi_acl *why = NULL;
    assert_true(ok(m, "User:alice", READ, TOPIC, "public"));
    assert_false(acl_authorize(m->acls, "User:alice", "1.2.3.4", READ, TOPIC, "secret-1", 8, false, &rule, &why));
    assert_int_equal(rule, ACL_RULE_MATCH_DENY);
    assert_string_equal(why->resource_name, "secret");
    /* a DENY of READ does not deny DESCRIBE */
    assert_true(ok(m, "User:alice", DESCRIBE, TOPIC, "secret-1"));
    assert_true(ok(m, "User:alice", WRITE, TOPIC, "secret-1"));
    assert_false(ok(m, "User:bob", WRITE, TOPIC, "t")); /* User:* DENY wins */
    assert_false(ok(m, "User:alice", WRITE, TOPIC, "t"));
    mimage_release(m);
}

static void test_implied_operations(void **state)
{
    (void)state;
    const struct spec s[] = {
        {TOPIC, "r", LIT, "User:u", "*", READ, ALLOW},       {TOPIC, "w", LIT, "User:u", "*", WRITE, ALLOW},
        {TOPIC, "d", LIT, "User:u", "*", DELETE, ALLOW},     {TOPIC, "a", LIT, "User:u", "*", ALTER, ALLOW},
        {TOPIC, "c", LIT, "User:u", "*", CREATE, ALLOW},     {TOPIC, "ac", LIT, "User:u", "*", ALTER_CONFIGS, ALLOW},
        {TOPIC, "all", LIT, "User:u", "*", ALL, ALLOW},
    };
    struct mimage *m = image_of(NULL, s, 7, 1);
    assert_true(ok(m, "User:u", DESCRIBE, TOPIC, "r"));
    assert_true(ok(m, "User:u", DESCRIBE, TOPIC, "w"));
    assert_true(ok(m, "User:u", DESCRIBE, TOPIC, "d"));
    assert_true(ok(m, "User:u", DESCRIBE, TOPIC, "a"));
    assert_false(ok(m, "User:u", DESCRIBE, TOPIC, "c")); /* CREATE implies nothing */
    assert_false(ok(m, "User:u", WRITE, TOPIC, "r"));
    assert_true(ok(m, "User:u", DESCRIBE_CONFIGS, TOPIC, "ac"));
    assert_false(ok(m, "User:u", DESCRIBE, TOPIC, "ac"));
    assert_false(ok(m, "User:u", DESCRIBE_CONFIGS, TOPIC, "a"));
    for (int op = READ; op <= 14; op++)
        assert_true(ok(m, "User:u", op, TOPIC, "all"));
    mimage_release(m);
}

static void test_hosts(void **state)
{
    (void)state;
    const struct spec s[] = {
        {TOPIC, "t", LIT, "User:u", "10.0.0.1", READ, ALLOW},
        {TOPIC, "t", LIT, "User:v", "*", READ, ALLOW},
        {TOPIC, "t", LIT, "User:v", "10.0.0.9", READ, DENY},
    };
    struct mimage *m = image_of(NULL, s, 3, 1);
    assert_true(acl_authorize(m->acls, "User:u", "10.0.0.1", READ, TOPIC, "t", 1, false, NULL, NULL));
    assert_false(acl_authorize(m->acls, "User:u", "10.0.0.2", READ, TOPIC, "t", 1, false, NULL, NULL));
    assert_true(acl_authorize(m->acls, "User:v", "10.0.0.2", READ, TOPIC, "t", 1, false, NULL, NULL));
    assert_false(acl_authorize(m->acls, "User:v", "10.0.0.9", READ, TOPIC, "t", 1, false, NULL, NULL));
    mimage_release(m);
}

static void test_allow_everyone_if_no_acl(void **state)
{
    (void)state;
    const struct spec s[] = {{TOPIC, "guarded", LIT, "User:alice", "*", READ, ALLOW}};
    struct mimage *m = image_of(NULL, s, 1, 1);
    enum acl_rule rule;
    /* no ACL on the resource: the setting decides */
    assert_true(acl_authorize(m->acls, "User:x", "h", READ, TOPIC, "open", 4, true, &rule, NULL));
    assert_int_equal(rule, ACL_RULE_DEFAULT_ALLOW);
    assert_false(acl_authorize(m->acls, "User:x", "h", READ, TOPIC, "open", 4, false, &rule, NULL));
    assert_int_equal(rule, ACL_RULE_DEFAULT_DENY);
    /* ACLs on the resource, none for this principal: denied either way */
    assert_false(acl_authorize(m->acls, "User:x", "h", READ, TOPIC, "guarded", 7, true, &rule, NULL));
    assert_int_equal(rule, ACL_RULE_DEFAULT_DENY);
    /* no ACLs at all */
    assert_true(acl_authorize(NULL, "User:x", "h", READ, TOPIC, "t", 1, true, NULL, NULL));
    assert_false(acl_authorize(NULL, "User:x", "h", READ, TOPIC, "t", 1, false, NULL, NULL));
    mimage_release(m);
}

static void test_by_resource_type(void **state)
{
    (void)state;
    const struct spec s[] = {
        {TOPIC, "a", LIT, "User:lit", "*", WRITE, ALLOW},
        {TOPIC, "a", LIT, "User:litdenied", "*", WRITE, ALLOW},
        {TOPIC, "a", LIT, "User:litdenied", "*", WRITE, DENY},
        {TOPIC, "pre", PRE, "User:pre", "*", WRITE, ALLOW},
        {TOPIC, "pre", PRE, "User:predenied", "*", WRITE, ALLOW},
        {TOPIC, "p", PRE, "User:predenied", "*", ALL, DENY},
        {TOPIC, "*", LIT, "User:wild", "*", WRITE, ALLOW},
        {TOPIC, "*", LIT, "User:wilddenied", "*", WRITE, ALLOW},
        {TOPIC, "*", LIT, "User:wilddenied", "*", WRITE, DENY},
        {GROUP, "g", LIT, "User:grouponly", "*", WRITE, ALLOW},
    };
    struct mimage *m = image_of(NULL, s, 10, 1);
    assert_true(acl_authorize_any(m->acls, "User:lit", "h", WRITE, TOPIC, false));
    assert_false(acl_authorize_any(m->acls, "User:litdenied", "h", WRITE, TOPIC, false));
    assert_true(acl_authorize_any(m->acls, "User:pre", "h", WRITE, TOPIC, false));
    assert_false(acl_authorize_any(m->acls, "User:predenied", "h", WRITE, TOPIC, false));
    assert_true(acl_authorize_any(m->acls, "User:wild", "h", WRITE, TOPIC, false));
    assert_false(acl_authorize_any(m->acls, "User:wilddenied", "h", WRITE, TOPIC, false));
    assert_false(acl_authorize_any(m->acls, "User:grouponly", "h", WRITE, TOPIC, false));
    assert_false(acl_authorize_any(m->acls, "User:lit", "h", READ, TOPIC, false));
    /* no ACLs of the type: allow.everyone.if.no.acl.found decides */
    assert_true(acl_authorize_any(m->acls, "User:x", "h", WRITE, TXN, true));
    assert_false(acl_authorize_any(m->acls, "User:x", "h", WRITE, TXN, false));
    mimage_release(m);
}

static void test_super_users(void **state)
{
    (void)state;
    assert_true(acl_super_user("User:admin;User:ops", "User:ops"));
    assert_true(acl_super_user(" User:admin ; User:ops ", "User:admin"));
    assert_false(acl_super_user("User:admin;User:ops", "User:op"));
    assert_false(acl_super_user("User:admin", "User:admin2"));
    assert_false(acl_super_user("", "User:admin"));
    assert_false(acl_super_user(NULL, "User:admin"));
}

static void test_removal_generation_sharing(void **state)
{
    (void)state;
    const struct spec s[] = {
        {TOPIC, "b", LIT, "User:u", "*", READ, ALLOW},
        {TOPIC, "a", LIT, "User:u", "*", READ, ALLOW},
        {CLUSTER, "kafka-cluster", LIT, "User:u", "*", ALTER, ALLOW},
    };
    struct mimage *m1 = image_of(NULL, s, 3, 1);
    assert_int_equal(m1->acls->n, 3);
    for (int32_t i = 1; i < m1->acls->n; i++)
        assert_true(mi_acl_cmp(&m1->acls->a[i - 1], &m1->acls->a[i]) < 0);
    /* an image change without ACL records shares the set */
    struct mi_draft *d = mi_draft_begin(m1, NULL, 1);
    struct mimage *m2 = mi_draft_finish(d);
    assert_ptr_equal(m2->acls, m1->acls);
    /* removing one makes a new set with a new generation */
    d = mi_draft_begin(m2, NULL, 1);
    remove_access_control_entry_record_t r;
    remove_access_control_entry_record_init(&r);
    memset(r.id.b, 0, sizeof r.id.b);
    r.id.b[0] = 2; /* "a" */
    char err[256];
    assert_int_equal(mi_draft_apply(d, 10, KMETA_REMOVE_ACCESS_CONTROL_ENTRY_RECORD, 0, &r, err, sizeof err), 0);
    /* an unknown id is refused, as Kafka's replay throws */
    r.id.b[0] = 99;
    assert_int_equal(mi_draft_apply(d, 11, KMETA_REMOVE_ACCESS_CONTROL_ENTRY_RECORD, 0, &r, err, sizeof err), -1);
    struct mimage *m3 = mi_draft_finish(d);
    assert_int_equal(m3->acls->n, 2);
    assert_true(m3->acls->gen != m1->acls->gen);
    assert_false(ok(m3, "User:u", READ, TOPIC, "a"));
    assert_true(ok(m3, "User:u", READ, TOPIC, "b"));
    assert_true(ok(m1, "User:u", READ, TOPIC, "a")); /* the old image is untouched */
    mimage_release(m1);
    mimage_release(m2);
    mimage_release(m3);
}

static struct controller_acl filter(int type, const char *name, int pattern, const char *principal, int op,
                                    int perm)
{
    return (struct controller_acl){.resource_type = (int8_t)type,
                                   .pattern_type = (int8_t)pattern,
                                   .operation = (int8_t)op,
                                   .permission = (int8_t)perm,
                                   .resource_name = name ? KSTR(name) : KSTR_NULL,
                                   .principal = principal ? KSTR(principal) : KSTR_NULL,
                                   .host = KSTR_NULL};
}

static void test_filters(void **state)
{
    (void)state;
    struct mi_acl lit = {.resource_type = TOPIC, .pattern_type = LIT, .operation = READ, .permission = ALLOW,
                         .resource_name = "foo", .principal = "User:u", .host = "*"};
    struct mi_acl pre = lit, wild = lit;
    pre.pattern_type = PRE;
    pre.resource_name = "fo";
    wild.resource_name = "*";
    struct controller_acl any = filter(1, NULL, 1, NULL, 1, 1);
    assert_true(controller_acl_filter_match(&any, &lit));
    struct controller_acl f = filter(TOPIC, "foo", 2 /* MATCH */, NULL, 1, 1);
    assert_true(controller_acl_filter_match(&f, &lit));
    assert_true(controller_acl_filter_match(&f, &pre));
    assert_true(controller_acl_filter_match(&f, &wild));
    f = filter(TOPIC, "foo", 1 /* ANY: exact name */, NULL, 1, 1);
    assert_true(controller_acl_filter_match(&f, &lit));
    assert_false(controller_acl_filter_match(&f, &pre));
    assert_false(controller_acl_filter_match(&f, &wild));
    f = filter(TOPIC, "fo", PRE, "User:u", READ, ALLOW);
    assert_true(controller_acl_filter_match(&f, &pre));
    assert_false(controller_acl_filter_match(&f, &lit));
    f = filter(TOPIC, NULL, 1, "User:v", 1, 1);
    assert_false(controller_acl_filter_match(&f, &lit));
    f = filter(GROUP, NULL, 1, NULL, 1, 1);
    assert_false(controller_acl_filter_match(&f, &lit));
    f = filter(TOPIC, NULL, 1, NULL, WRITE, 1);
    assert_false(controller_acl_filter_match(&f, &lit));
    const char *msg = NULL;
    f = filter(0, NULL, 1, NULL, 1, 1);
    assert_int_equal(controller_acl_filter_check(&f, &msg), 42);
    assert_string_equal(msg, "Unknown patternFilter.");
    f = filter(TOPIC, NULL, 1, NULL, 0, 1);
    assert_int_equal(controller_acl_filter_check(&f, &msg), 42);
    assert_string_equal(msg, "Unknown entryFilter.");
    f = filter(TOPIC, NULL, 2, NULL, 1, 1);
    assert_int_equal(controller_acl_filter_check(&f, &msg), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_literal_prefixed_wildcard),
        cmocka_unit_test(test_prefix_walk),
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_deny_beats_allow),
        cmocka_unit_test(test_implied_operations),
        cmocka_unit_test(test_hosts),
        cmocka_unit_test(test_allow_everyone_if_no_acl),
        cmocka_unit_test(test_by_resource_type),
        cmocka_unit_test(test_super_users),
        cmocka_unit_test(test_removal_generation_sharing),
        cmocka_unit_test(test_filters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
