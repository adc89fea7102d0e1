/* The assignor modules uniform and range (modules/assignor-uniform,
 * modules/assignor-range) against the scenarios of Kafka's own unit
 * tests of its KIP-848 assignors (group-coordinator's
 * OptimizedUniformAssignmentBuilderTest,
 * UniformHeterogeneousAssignmentBuilderTest and RangeAssignorTest, Kafka
 * 4.0): the same topics (the same topic ids where Kafka fixes them,
 * since the uniform assignor's order depends on them), members,
 * subscriptions and current assignments give the same expected
 * assignments. Written anew in this test's own notation; plus the
 * validity and balance of a large group, and the member order taken
 * from Java's HashMap (hash buckets, then the host's order). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "assignor_modules.h"

/* Kafka's test topic ids T1.. T4 (Uuid.fromString of its base64 names) */
static const samsa_uuid_t kafka_topic[5] = {
    {{0}},
    {{0x4f, 0x5f, 0x80, 0xe2, 0xcd, 0xd5, 0x4f, 0x08, 0x88, 0xe4, 0x24, 0xdb, 0x12, 0x9e, 0x8f, 0x3b}},
    {{0x4f, 0x6f, 0x81, 0xe2, 0xcd, 0xd5, 0x4f, 0x08, 0x88, 0xe5, 0x81, 0xdb, 0x3e, 0x9e, 0x98, 0x51}},
    {{0x4f, 0x7f, 0x82, 0x53, 0xc7, 0xd5, 0x4c, 0xb0, 0xb3, 0xe5, 0x83, 0x24, 0x2e, 0x80, 0xd0, 0xb1}},
    {{0x4f, 0x8f, 0x93, 0xc3, 0xd7, 0xd5, 0x4c, 0xb0, 0xb3, 0xe4, 0x76, 0xcf, 0xa7, 0xa6, 0x10, 0xb1}},
};

static int topic_no(const samsa_uuid_t *u)
{
    for (int i = 1; i <= 4; i++)
        if (memcmp(u->b, kafka_topic[i].b, 16) == 0)
            return i;
    return 0;
}

/* A member: subs "13" = T1 and T3; cur "1:0,2 2:0" = its current
 * assignment in that order (the order the host lists it in). */
struct mspec {
    const char *id;
    const char *instance; /* or NULL */
    const char *subs;
    const char *cur;
};

#define MAXM 64
#define MAXP 64

struct result {
    bool has[MAXM][5][MAXP];
    size_t n;
    int32_t np[5];
    int given[5][MAXP];
};

static int32_t t_partitions(void *ctx, const samsa_uuid_t *t)
{
    struct result *r = ctx;
    int k = topic_no(t);
    return k ? r->np[k] : -1;
}

static size_t t_racks(void *ctx, const samsa_uuid_t *t, int32_t p, const char **racks, size_t cap)
{
    (void)ctx, (void)t, (void)p, (void)racks, (void)cap;
    return 0;
}

static int t_assign(void *ctx, size_t member, const samsa_uuid_t *topic, int32_t p)
{
    struct result *r = ctx;
    int k = topic_no(topic);
    if (member >= r->n || !k || p < 0 || p >= r->np[k] || r->given[k][p])
        return SAMSA_EINVAL;
    r->given[k][p]++;
    r->has[member][k][p] = true;
    return SAMSA_OK;
}

/* Runs name over the group; returns the assign's result code. */
static int run(const char *name, int type, const int32_t np[5], const struct mspec *ms, size_t n,
               struct result *r)
{
    static samsa_group_member_t m[MAXM];
    static samsa_uuid_t subs[MAXM][4];
    static samsa_topic_partitions_t cur[MAXM][4];
    static int32_t parts[MAXM][4][MAXP];
    memset(r, 0, sizeof *r);
    r->n = n;
    memcpy(r->np, np, sizeof r->np);
    for (size_t i = 0; i < n; i++) {
        size_t ns = 0, nc = 0;
        for (const char *s = ms[i].subs; *s; s++)
            subs[i][ns++] = kafka_topic[*s - '0'];
        for (const char *s = ms[i].cur ? ms[i].cur : ""; *s;) {
            if (*s == ' ') {
                s++;
                continue;
            }
            int k = *s - '0';
            s += 2; /* "k:" */
            size_t np_ = 0;
            while (*s && *s != ' ') {
                if (*s == ',') {
                    s++;
                    continue;
                }
                char *end;
                parts[i][nc][np_++] = (int32_t)strtol(s, &end, 10);
                s = end;
            }
            cur[i][nc] = (samsa_topic_partitions_t){kafka_topic[k], parts[i][nc], np_};
            nc++;
        }
        m[i] = (samsa_group_member_t){ms[i].id, ms[i].instance, NULL, subs[i], ns, cur[i], nc};
    }
    samsa_group_spec_t g = {sizeof g, "g", type, m, n};
    samsa_topic_describer_t d = {sizeof d, r, t_partitions, t_racks};
    samsa_assignment_builder_t b = {sizeof b, r, t_assign};
    char err[256] = "";
    return module_assignor(name)->assign(NULL, &g, &d, &b, err, sizeof err);
}

/* "1:0,1,2 3:4": member i's assignment, topics and partitions ascending */
static const char *render(const struct result *r, size_t i)
{
    static char buf[1024];
    size_t l = 0;
    buf[0] = 0;
    for (int k = 1; k <= 4; k++) {
        const char *sep = l ? " " : "";
        bool first = true;
        for (int p = 0; p < MAXP; p++) {
            if (!r->has[i][k][p])
                continue;
            if (first)
                l += (size_t)snprintf(buf + l, sizeof buf - l, "%s%d:%d", sep, k, p);
            else
                l += (size_t)snprintf(buf + l, sizeof buf - l, ",%d", p);
            first = false;
        }
    }
    return buf;
}

static void expect(const char *name, int type, const int32_t np[5], const struct mspec *ms, size_t n,
                   const char *const *want)
{
    struct result r;
    assert_int_equal(run(name, type, np, ms, n, &r), SAMSA_OK);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(render(&r, i), want[i]) != 0)
            fail_msg("%s: member %s got \"%s\", want \"%s\"", name, ms[i].id, render(&r, i), want[i]);
    }
}

#define HOM SAMSA_SUBSCRIPTION_HOMOGENEOUS
#define HET SAMSA_SUBSCRIPTION_HETEROGENEOUS
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------ */
/* uniform, homogeneous (OptimizedUniformAssignmentBuilderTest)        */

static void test_uniform_homogeneous(void **st)
{
    (void)st;
    struct result r;
    /* one member without subscriptions: nothing */
    {
        const int32_t np[5] = {0, 3, 0, 0, 0};
        const struct mspec m[] = {{"A", NULL, "", NULL}};
        assert_int_equal(run("uniform", HOM, np, m, 1, &r), SAMSA_OK);
        assert_string_equal(render(&r, 0), "");
    }
    /* subscribed to a topic the metadata lacks: the assignor fails */
    {
        const int32_t np[5] = {0, 3, -1, 0, 0};
        const struct mspec m[] = {{"A", NULL, "2", NULL}};
        assert_int_not_equal(run("uniform", HOM, np, m, 1, &r), SAMSA_OK);
    }
    /* first assignment, two members, T1 (3) and T3 (2): T3 comes
     * first in the HashSet of the topic ids */
    {
        const int32_t np[5] = {0, 3, 0, 2, 0};
        const struct mspec m[] = {{"A", NULL, "13", NULL}, {"B", NULL, "13", NULL}};
        const char *want[] = {"1:0 3:0,1", "1:1,2"};
        expect("uniform", HOM, np, m, N(m), want);
    }
    /* more members than partitions */
    {
        const int32_t np[5] = {0, 0, 0, 2, 0};
        const struct mspec m[] = {{"A", NULL, "3", NULL}, {"B", NULL, "3", NULL}, {"C", NULL, "3", NULL}};
        const char *want[] = {"3:0", "3:1", ""};
        expect("uniform", HOM, np, m, N(m), want);
    }
    /* unbalanced previous assignment */
    {
        const int32_t np[5] = {0, 3, 3, 0, 0};
        const struct mspec m[] = {{"A", NULL, "12", "1:0,1 2:0,1"}, {"B", NULL, "12", "1:2 2:2"}};
        const char *want[] = {"1:0,1 2:0", "1:2 2:1,2"};
        expect("uniform", HOM, np, m, N(m), want);
    }
    /* partitions added: T1 3 -> 6, T2 3 -> 5 */
    {
        const int32_t np[5] = {0, 6, 5, 0, 0};
        const struct mspec m[] = {{"A", NULL, "12", "1:0,2 2:0"}, {"B", NULL, "12", "1:1 2:1,2"}};
        const char *want[] = {"1:0,2,3 2:0,3,4", "1:1,4,5 2:1,2"};
        expect("uniform", HOM, np, m, N(m), want);
    }
    /* a member added */
    {
        const int32_t np[5] = {0, 3, 3, 0, 0};
        const struct mspec m[] = {
            {"A", NULL, "12", "1:0,2 2:0"}, {"B", NULL, "12", "1:1 2:1,2"}, {"C", NULL, "12", NULL}};
        const char *want[] = {"1:0,2", "1:1 2:1", "2:0,2"};
        expect("uniform", HOM, np, m, N(m), want);
    }
    /* a member removed (C had T1-2 and T2-2) */
    {
        const int32_t np[5] = {0, 3, 3, 0, 0};
        const struct mspec m[] = {{"A", NULL, "12", "1:0 2:0"}, {"B", NULL, "12", "1:1 2:1"}};
        const char *want[] = {"1:0 2:0,2", "1:1,2 2:1"};
        expect("uniform", HOM, np, m, N(m), want);
    }
    /* a subscription removed (T1) */
    {
        const int32_t np[5] = {0, 2, 2, 0, 0};
        const struct mspec m[] = {{"A", NULL, "2", "1:0 2:0"}, {"B", NULL, "2", "1:1 2:1"}};
        const char *want[] = {"2:0", "2:1"};
        expect("uniform", HOM, np, m, N(m), want);
    }
}

/* ------------------------------------------------------------------ */
/* uniform, heterogeneous (UniformHeterogeneousAssignmentBuilderTest)  */

static void test_uniform_heterogeneous(void **st)
{
    (void)st;
    struct result r;
    /* two members without subscriptions: nothing */
    {
        const int32_t np[5] = {0, 3, 0, 0, 0};
        const struct mspec m[] = {{"A", NULL, "", NULL}, {"B", NULL, "", NULL}};
        assert_int_equal(run("uniform", HET, np, m, 2, &r), SAMSA_OK);
        assert_string_equal(render(&r, 0), "");
        assert_string_equal(render(&r, 1), "");
    }
    /* subscribed to topics the metadata lacks */
    {
        const int32_t np[5] = {0, 3, -1, 0, -1};
        const struct mspec m[] = {{"A", NULL, "4", NULL}, {"B", NULL, "2", NULL}};
        assert_int_not_equal(run("uniform", HET, np, m, 2, &r), SAMSA_OK);
    }
    /* first assignment */
    {
        const int32_t np[5] = {0, 3, 0, 6, 0};
        const struct mspec m[] = {{"A", NULL, "13", NULL}, {"B", NULL, "3", NULL}};
        const char *want[] = {"1:0,1,2 3:4", "3:0,1,2,3,5"};
        expect("uniform", HET, np, m, N(m), want);
    }
    /* more members than partitions */
    {
        const int32_t np[5] = {0, 2, 0, 1, 0};
        const struct mspec m[] = {{"A", NULL, "3", NULL}, {"B", NULL, "3", NULL}, {"C", NULL, "1", NULL}};
        const char *want[] = {"3:0", "", "1:0,1"};
        expect("uniform", HET, np, m, N(m), want);
    }
    /* unbalanced previous assignment, three topics */
    {
        const int32_t np[5] = {0, 6, 4, 4, 0};
        const struct mspec m[] = {{"A", NULL, "1", "1:0,1,2"},
                                  {"B", NULL, "12", "1:3 2:0"},
                                  {"C", NULL, "123", "1:4,5 2:1,2,3 3:0,1,2,3"}};
        const char *want[] = {"1:0,1,2,5", "1:3 2:0,1,2,3", "1:4 3:0,1,2,3"};
        expect("uniform", HET, np, m, N(m), want);
    }
    /* partitions added to T1, T2, T3 */
    {
        const int32_t np[5] = {0, 6, 5, 3, 3};
        const struct mspec m[] = {{"A", NULL, "13", "1:0,1,2,3 3:0,1"},
                                  {"B", NULL, "1234", "2:0,1,2 4:0,1,2"}};
        const char *want[] = {"1:0,1,2,3,4,5 3:0,1,2", "2:0,1,2,3,4 4:0,1,2"};
        expect("uniform", HET, np, m, N(m), want);
    }
    /* a member and partitions added */
    {
        const int32_t np[5] = {0, 6, 7, 0, 0};
        const struct mspec m[] = {
            {"A", NULL, "1", "1:0,2 2:0"}, {"B", NULL, "12", "1:1 2:1,2"}, {"C", NULL, "12", NULL}};
        const char *want[] = {"1:0,2,3,4,5", "1:1 2:1,2,6", "2:0,3,4,5"};
        expect("uniform", HET, np, m, N(m), want);
    }
    /* a member removed, three topics */
    {
        const int32_t np[5] = {0, 3, 8, 3, 0};
        const struct mspec m[] = {{"A", NULL, "13", "1:0,1,2 3:0,1"}, {"B", NULL, "2", "2:3,4,5,6"}};
        const char *want[] = {"1:0,1,2 3:0,1,2", "2:0,1,2,3,4,5,6,7"};
        expect("uniform", HET, np, m, N(m), want);
    }
    /* a subscription removed */
    {
        const int32_t np[5] = {0, 3, 5, 0, 0};
        const struct mspec m[] = {{"A", NULL, "1", "1:0,2 2:1,3"}, {"B", NULL, "12", "1:1 2:0,2,4"}};
        const char *want[] = {"1:0,1,2", "2:0,1,2,3,4"};
        expect("uniform", HET, np, m, N(m), want);
    }
    /* partitions run out before the subscribers are balanced */
    {
        const int32_t np[5] = {0, 2, 2, 2, 0};
        const struct mspec m[] = {{"A", NULL, "123", "1:0,1 2:0,1 3:0,1"}, {"B", NULL, "123", NULL}};
        const char *want[] = {"2:0 3:0,1", "1:0,1 2:1"};
        expect("uniform", HET, np, m, N(m), want);
    }
    /* one member without subscriptions */
    {
        const int32_t np[5] = {0, 3, 0, 0, 0};
        const struct mspec m[] = {{"A", NULL, "1", NULL}, {"B", NULL, "", NULL}};
        const char *want[] = {"1:0,1,2", ""};
        expect("uniform", HET, np, m, N(m), want);
    }
}

/* ------------------------------------------------------------------ */
/* uniform: member order, validity and balance                          */

/* The members in the order of Java's HashMap of their ids: "Aa" and
 * "BB" share a hashCode, so they share a bucket and keep the host's
 * order; "C" hashes to an earlier bucket than both. */
static void test_uniform_member_order(void **st)
{
    (void)st;
    const int32_t np[5] = {0, 0, 0, 5, 0};
    const struct mspec m[] = {{"BB", NULL, "3", NULL}, {"Aa", NULL, "3", NULL}};
    const char *want[] = {"3:0,1,2", "3:3,4"};
    expect("uniform", HOM, np, m, N(m), want);
    const struct mspec m2[] = {{"Aa", NULL, "3", NULL}, {"BB", NULL, "3", NULL}};
    const char *want2[] = {"3:0,1,2", "3:3,4"};
    expect("uniform", HOM, np, m2, N(m2), want2);
    /* "C" (67) sits in bucket 3, "Aa"/"BB" (2112) in bucket 0 */
    const struct mspec m3[] = {{"C", NULL, "3", NULL}, {"Aa", NULL, "3", NULL}};
    const char *want3[] = {"3:3,4", "3:0,1,2"};
    expect("uniform", HOM, np, m3, N(m3), want3);
}

/* 20 members: Kafka's HashMap of member ids has grown to 32 buckets;
 * the five members first in its order get the extra partitions, in
 * order (expected values from String.hashCode by hand: member19,
 * member17, member18, member8, member11, member9, ...). */
static void test_uniform_member_order_grown_map(void **st)
{
    (void)st;
    static struct mspec m[20];
    static char ids[20][16];
    for (int i = 0; i < 20; i++) {
        snprintf(ids[i], sizeof ids[i], "member%d", i + 1);
        m[i] = (struct mspec){ids[i], NULL, "3", NULL};
    }
    const int32_t np[5] = {0, 0, 0, 25, 0};
    const char *want[20] = {"3:24", "3:20",  "3:22", "3:16", "3:18", "3:12", "3:14",
                            "3:6,7", "3:10", "3:15", "3:8,9", "3:11", "3:21", "3:23",
                            "3:17", "3:19", "3:2,3", "3:4,5", "3:0,1", "3:13"};
    expect("uniform", HOM, np, m, 20, want);
}

/* Every partition exactly once, to a subscriber; counts within one
 * (homogeneous). Kafka's testValidityAndBalanceForLargeSampleSet in
 * miniature: 49 members over T1..T4 of 16 partitions each. */
static void test_uniform_validity_and_balance(void **st)
{
    (void)st;
    static struct mspec m[49];
    static char ids[49][16];
    for (int i = 0; i < 49; i++) {
        snprintf(ids[i], sizeof ids[i], "member%d", i + 1);
        m[i] = (struct mspec){ids[i], NULL, "1234", NULL};
    }
    const int32_t np[5] = {0, 16, 16, 16, 16};
    struct result r;
    assert_int_equal(run("uniform", HOM, np, m, 49, &r), SAMSA_OK);
    int lo = 1 << 30, hi = 0;
    for (int i = 0; i < 49; i++) {
        int c = 0;
        for (int k = 1; k <= 4; k++)
            for (int p = 0; p < 16; p++)
                c += r.has[i][k][p];
        lo = c < lo ? c : lo;
        hi = c > hi ? c : hi;
    }
    assert_true(hi - lo <= 1);
    for (int k = 1; k <= 4; k++)
        for (int p = 0; p < 16; p++)
            assert_int_equal(r.given[k][p], 1);
    /* heterogeneous: half subscribe to T1, T2, the others to T2..T4;
     * from a lopsided start (member1 owns all of T2) */
    for (int i = 0; i < 49; i++)
        m[i].subs = i % 2 ? "12" : "234";
    m[0].cur = "2:0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15";
    assert_int_equal(run("uniform", HET, np, m, 49, &r), SAMSA_OK);
    for (int k = 1; k <= 4; k++)
        for (int p = 0; p < 16; p++)
            assert_int_equal(r.given[k][p], 1);
    lo = 1 << 30, hi = 0;
    for (int i = 0; i < 49; i++) {
        int c = 0;
        for (int k = 1; k <= 4; k++)
            for (int p = 0; p < 16; p++) {
                c += r.has[i][k][p];
                if (r.has[i][k][p])
                    assert_non_null(strchr(m[i].subs, '0' + k));
            }
        lo = c < lo ? c : lo;
        hi = c > hi ? c : hi;
    }
    assert_true(hi - lo <= 1);
    m[0].cur = NULL;
}

/* ------------------------------------------------------------------ */
/* range (RangeAssignorTest)                                           */

static void test_range(void **st)
{
    (void)st;
    struct result r;
    {
        const int32_t np[5] = {0, 3, 0, 0, 0};
        const struct mspec m[] = {{"A", NULL, "", NULL}};
        assert_int_equal(run("range", HOM, np, m, 1, &r), SAMSA_OK);
        assert_string_equal(render(&r, 0), "");
        const struct mspec m2[] = {{"A", NULL, "2", NULL}};
        const int32_t np2[5] = {0, 3, -1, 0, 0};
        assert_int_not_equal(run("range", HOM, np2, m2, 1, &r), SAMSA_OK);
    }
    {
        const int32_t np[5] = {0, 3, 0, 2, 0};
        const struct mspec m[] = {{"A", NULL, "13", NULL}, {"B", NULL, "13", NULL}};
        const char *want[] = {"1:0,1 3:0", "1:2 3:1"};
        expect("range", HOM, np, m, N(m), want);
    }
    {
        const int32_t np[5] = {0, 3, 3, 2, 0};
        const struct mspec m[] = {{"A", NULL, "12", NULL}, {"B", NULL, "3", NULL}, {"C", NULL, "23", NULL}};
        const char *want[] = {"1:0,1,2 2:0,1", "3:0", "2:2 3:1"};
        expect("range", HET, np, m, N(m), want);
    }
    {
        const int32_t np[5] = {0, 3, 0, 2, 0};
        const struct mspec m[] = {{"A", NULL, "13", NULL}, {"B", NULL, "13", NULL}, {"C", NULL, "13", NULL}};
        const char *want[] = {"1:0 3:0", "1:1 3:1", "1:2"};
        expect("range", HOM, np, m, N(m), want);
    }
    /* static members: a rejoin under a new member id with the same
     * instance id keeps the assignment */
    {
        const int32_t np[5] = {0, 3, 0, 0, 0};
        const struct mspec m[] = {{"A", "instanceA", "1", NULL}, {"B", "instanceB", "1", NULL}};
        const char *want[] = {"1:0,1", "1:2"};
        expect("range", HOM, np, m, N(m), want);
        const struct mspec m2[] = {{"memberA1", "instanceA", "1", NULL}, {"B", "instanceB", "1", NULL}};
        expect("range", HOM, np, m2, N(m2), want);
    }
    /* mixed: static members first (by instance id), then the others */
    {
        const int32_t np[5] = {0, 5, 0, 0, 0};
        const struct mspec m[] = {
            {"A", "instanceA", "1", NULL}, {"C", "instanceC", "1", NULL}, {"B", NULL, "1", NULL}};
        const char *want[] = {"1:0,1", "1:2,3", "1:4"};
        expect("range", HOM, np, m, N(m), want);
        const struct mspec m2[] = {
            {"memberA1", "instanceA", "1", NULL}, {"C", "instanceC", "1", NULL}, {"B", NULL, "1", NULL}};
        expect("range", HOM, np, m2, N(m2), want);
    }
    /* a member added: more members than partitions (no stickiness, the
     * result only depends on the order) */
    {
        const int32_t np[5] = {0, 2, 2, 0, 0};
        const struct mspec m[] = {
            {"A", NULL, "12", "1:0 2:0"}, {"B", NULL, "12", "1:1 2:1"}, {"C", NULL, "12", NULL}};
        const char *want[] = {"1:0 2:0", "1:1 2:1", ""};
        expect("range", HOM, np, m, N(m), want);
    }
    {
        const int32_t np[5] = {0, 4, 4, 0, 0};
        const struct mspec m[] = {{"A", NULL, "12", "1:0,1 2:0,1"}, {"B", NULL, "12", "1:2 2:2"}};
        const char *want[] = {"1:0,1 2:0,1", "1:2,3 2:2,3"};
        expect("range", HOM, np, m, N(m), want);
    }
    {
        const int32_t np[5] = {0, 3, 3, 0, 0};
        const struct mspec m[] = {
            {"A", NULL, "12", "1:0,1 2:0,1"}, {"B", NULL, "12", "1:2 2:2"}, {"C", NULL, "12", NULL}};
        const char *want[] = {"1:0 2:0", "1:1 2:1", "1:2 2:2"};
        expect("range", HOM, np, m, N(m), want);
    }
    {
        const int32_t np[5] = {0, 4, 3, 0, 0};
        const struct mspec m[] = {
            {"A", NULL, "12", "1:0,1 2:0,1"}, {"B", NULL, "12", "1:2 2:2"}, {"C", NULL, "1", NULL}};
        const char *want[] = {"1:0,1 2:0,1", "1:2 2:2", "1:3"};
        expect("range", HET, np, m, N(m), want);
    }
    {
        const int32_t np[5] = {0, 3, 3, 0, 0};
        const struct mspec m[] = {{"B", NULL, "12", "1:2 2:2"}};
        const char *want[] = {"1:0,1,2 2:0,1,2"};
        expect("range", HOM, np, m, N(m), want);
    }
    {
        const int32_t np[5] = {0, 3, 3, 2, 0};
        const struct mspec m[] = {{"A", NULL, "1", "1:0,1,2 2:0"},
                                  {"B", NULL, "123", "2:1"},
                                  {"C", NULL, "2", "2:2 3:0,1"}};
        const char *want[] = {"1:0,1", "1:2 2:0,1 3:0,1", "2:2"};
        expect("range", HET, np, m, N(m), want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uniform_homogeneous),
        cmocka_unit_test(test_uniform_heterogeneous),
        cmocka_unit_test(test_uniform_member_order),
        cmocka_unit_test(test_uniform_member_order_grown_map),
        cmocka_unit_test(test_uniform_validity_and_balance),
        cmocka_unit_test(test_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
