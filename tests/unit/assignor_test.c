/* The assignor capability kind as the group coordinator uses it: the
 * example module assignor-roundrobin loaded from the build's modules
 * like any plugin, called through its vtable with an exact result;
 * group.consumer.assignors checked at startup (unset with or without
 * the assignor modules, a plugin's name, a missing one);
 * coord_assignor_find choosing by name (the default, a plugin's, the
 * modules' uniform and range, a name not listed); and a
 * KIP-848 heartbeat naming ServerAssignor "roundrobin" getting exactly
 * that assignor's target, or UNSUPPORTED_ASSIGNOR for an unknown name.
 * Skipped when the build has no assignor-roundrobin module. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "coord/consumer.h"
#include "coord/coord.h"
#include "coord/group.h"
#include "plugin/registry.h"
#include "proto/kerr.h"
#include "samsa/assignor.h"

#include "assignor_modules.h"

#ifndef MODULE_DIR
#error MODULE_DIR must name the built modules
#endif

static char errbuf[512];

static bool have_module(void) { return access(MODULE_DIR "/assignor-roundrobin.so", R_OK) == 0; }

static struct plugin_registry *load_rr(void)
{
    struct plugin_registry *reg = plugin_registry_new(NULL);
    assert_int_equal(plugin_load_name(reg, MODULE_DIR, "assignor-roundrobin", errbuf, sizeof errbuf), 0);
    assignor_modules_load(reg);
    return reg;
}

/* ---- calling the module through the vtable ---- */

static samsa_uuid_t uid(int n)
{
    samsa_uuid_t u;
    memset(u.b, 0, 16);
    u.b[0] = (uint8_t)n;
    return u;
}

static int32_t nparts(void *ctx, const samsa_uuid_t *t)
{
    (void)ctx;
    return t->b[0] == 1 ? 5 : t->b[0] == 2 ? 2 : -1;
}

static size_t no_racks(void *ctx, const samsa_uuid_t *t, int32_t p, const char **racks, size_t cap)
{
    (void)ctx, (void)t, (void)p, (void)racks, (void)cap;
    return 0;
}

/* what each member got, as "t1p0 t1p3 " */
struct got {
    char s[3][128];
};

static int put(void *ctx, size_t member, const samsa_uuid_t *t, int32_t p)
{
    struct got *g = ctx;
    if (member >= 3)
        return SAMSA_EINVAL;
    size_t l = strlen(g->s[member]);
    snprintf(g->s[member] + l, sizeof g->s[member] - l, "t%dp%d ", t->b[0], p);
    return SAMSA_OK;
}

static void test_module_assigns(void **st)
{
    (void)st;
    if (!have_module())
        skip();
    struct plugin_registry *reg = load_rr();
    const struct plugin_cap *cap = plugin_find(reg, SAMSA_CAP_ASSIGNOR, "roundrobin");
    assert_non_null(cap);
    assert_non_null(plugin_find(reg, SAMSA_CAP_ASSIGNOR, "uniform")); /* the module's, loaded too */
    /* members out of id order; "m-b" alone subscribes to topic 2 */
    samsa_uuid_t t1 = uid(1), both[2] = {uid(2), uid(1)};
    samsa_group_member_t m[3] = {
        {.member_id = "m-c", .subscribed_topic_ids = &t1, .n_subscribed = 1},
        {.member_id = "m-a", .subscribed_topic_ids = &t1, .n_subscribed = 1},
        {.member_id = "m-b", .subscribed_topic_ids = both, .n_subscribed = 2},
    };
    samsa_group_spec_t spec = {sizeof spec, "g", SAMSA_SUBSCRIPTION_HETEROGENEOUS, m, 3};
    samsa_topic_describer_t d = {sizeof d, NULL, nparts, no_racks};
    struct got g;
    memset(&g, 0, sizeof g);
    samsa_assignment_builder_t out = {sizeof out, &g, put};
    char err[128] = "";
    assert_int_equal(cap->vt.assignor.assign(cap->state, &spec, &d, &out, err, sizeof err), SAMSA_OK);
    /* order m-a, m-b, m-c; topic 1 (5 partitions) dealt a b c a b; topic
     * 2 goes on from m-c, which does not subscribe: m-b twice */
    assert_string_equal(g.s[1], "t1p0 t1p3 ");
    assert_string_equal(g.s[2], "t1p1 t1p4 t2p0 t2p1 ");
    assert_string_equal(g.s[0], "t1p2 ");
    plugin_registry_free(reg);
}

/* ---- group.consumer.assignors at startup ---- */

static int check(const char *list, struct plugin_registry *reg)
{
    char err[256];
    struct samsa_config *cfg = config_new();
    if (list)
        assert_int_equal(config_set(cfg, "group.consumer.assignors", list, err, sizeof err), 0);
    errbuf[0] = 0;
    int rc = coord_check_assignors(cfg, reg, errbuf, sizeof errbuf);
    config_free(cfg);
    return rc;
}

static void test_startup_check(void **st)
{
    (void)st;
    /* a build (or plugins=) without the assignor modules: unset, the
     * key is Kafka's default as far as the build has it (here: none) */
    assert_int_equal(check(NULL, NULL), 0);
    /* naming one of them refuses to start, with one line */
    assert_int_equal(check("roundrobin,range", NULL), -1);
    assert_string_equal(errbuf, "config 'group.consumer.assignors': no assignor 'roundrobin' (no loaded plugin "
                                "offers it; uniform and range come from the modules assignor-uniform and "
                                "assignor-range, see samsa --list-plugins)");
    struct plugin_registry *only = plugin_registry_new(NULL);
    assert_int_equal(plugin_load_static(only, samsa_plugin_entry_assignor_range, "assignor-range", errbuf,
                                        sizeof errbuf),
                     0);
    assert_int_equal(check("range", only), 0);
    assert_int_equal(check(NULL, only), 0);
    assert_int_equal(check("uniform,range", only), -1);
    assert_non_null(strstr(errbuf, "no assignor 'uniform'"));
    /* the unset default keeps what is loaded, in Kafka's order */
    struct samsa_config *cfg = config_new();
    int32_t n = -1;
    char **v = coord_assignor_names(cfg, only, &n, errbuf, sizeof errbuf);
    assert_non_null(v);
    assert_int_equal(n, 1);
    assert_string_equal(v[0], "range");
    free(v[0]), free(v);
    plugin_registry_free(only);
    config_free(cfg);
    assert_int_equal(check("", NULL), -1);
    assert_string_equal(errbuf, "config 'group.consumer.assignors': names no assignor");
    if (!have_module())
        skip();
    struct plugin_registry *reg = load_rr();
    assert_int_equal(check("uniform,range,roundrobin", reg), 0);
    assert_int_equal(check("roundrobin,sticky", reg), -1);
    assert_non_null(strstr(errbuf, "no assignor 'sticky'"));
    plugin_registry_free(reg);
}

/* ---- choosing by name ---- */

static void test_find_by_name(void **st)
{
    (void)st;
    if (!have_module())
        skip();
    struct plugin_registry *reg = load_rr();
    char *names[] = {"uniform", "range", "roundrobin"};
    void *state = (void *)1;
    assert_string_equal(coord_assignor_find(names, 3, reg, NULL, &state)->hdr.name, "uniform");
    assert_null(state);
    assert_string_equal(coord_assignor_find(names, 3, reg, "range", &state)->hdr.name, "range");
    const samsa_assignor_t *a = coord_assignor_find(names, 3, reg, "roundrobin", &state);
    assert_non_null(a);
    assert_string_equal(a->hdr.name, "roundrobin");
    assert_null(coord_assignor_find(names, 3, reg, "sticky", &state));
    /* offered only when listed */
    assert_null(coord_assignor_find(names, 2, reg, "roundrobin", &state));
    /* the first listed is the default */
    char *rr_first[] = {"roundrobin", "uniform"};
    assert_ptr_equal(coord_assignor_find(rr_first, 2, reg, NULL, &state), a);
    /* without the plugins no name is served, uniform neither */
    assert_null(coord_assignor_find(names, 3, NULL, "roundrobin", &state));
    assert_null(coord_assignor_find(names, 3, NULL, NULL, &state));
    plugin_registry_free(reg);
}

/* ---- a KIP-848 heartbeat naming the module's assignor ---- */

struct hfx {
    struct plugin_registry *reg;
    char **names;
    int32_t nnames;
};

static const samsa_assignor_t *hf_assignor(void *ctx, const char *name, void **state)
{
    struct hfx *f = ctx;
    return coord_assignor_find(f->names, f->nnames, f->reg, name, state);
}

static kuuid_t six_id(void)
{
    kuuid_t u;
    memset(u.b, 0, 16);
    u.b[0] = 6;
    return u;
}

static bool hf_topic(void *ctx, kstr_t name, kuuid_t *id, int32_t *n)
{
    (void)ctx;
    if (!kstr_eq(name, KSTR_LIT("six")))
        return false;
    *id = six_id();
    *n = 6;
    return true;
}

static void hf_each(void *ctx, void (*fn)(void *arg, const char *name), void *arg)
{
    (void)ctx;
    fn(arg, "six");
}

static void hf_emit(struct ccg_env *e, const struct cgroup *g, enum ccg_rec kind, const struct ccg_member *m,
                    const char *member_id, bool tombstone)
{
    (void)e, (void)g, (void)kind, (void)m, (void)member_id, (void)tombstone;
}

static int16_t join(struct ccg_env *e, struct cgroup *g, struct arena *a, const char *id, const char *assignor)
{
    kstr_t topics[1] = {KSTR_LIT("six")};
    struct ccg_hb_req rq = {
        .version = 1,
        .member_id = KSTR(id),
        .epoch = 0,
        .instance_id = KSTR_NULL,
        .rack_id = KSTR_NULL,
        .rebalance_timeout_ms = 10000,
        .has_topics = true,
        .ntopics = 1,
        .topics = topics,
        .regex = KSTR_NULL,
        .assignor = assignor ? KSTR(assignor) : KSTR_NULL,
        .has_owned = true,
        .client_id = KSTR_LIT("cid"),
        .client_host = KSTR_LIT("/127.0.0.1"),
    };
    const char *msg;
    int16_t err = ccg_validate(&rq, e, &msg);
    if (err)
        return err;
    struct ccg_hb_resp r;
    ccg_heartbeat(e, g, &rq, a, &r);
    return r.error;
}

static const char *target(struct cgroup *g, const char *id)
{
    static char s[64];
    struct ccg_member *m = ccg_member_find(g->cc, KSTR(id));
    assert_non_null(m);
    s[0] = 0;
    for (int32_t i = 0; i < m->target.n; i++) {
        size_t l = strlen(s);
        snprintf(s + l, sizeof s - l, "%s%d", l ? "," : "", m->target.v[i].part);
    }
    return s;
}

static void test_heartbeat_chooses(void **st)
{
    (void)st;
    if (!have_module())
        skip();
    char *names[] = {"uniform", "range", "roundrobin"};
    struct hfx f = {load_rr(), names, 3};
    struct ccg_env e = {
        .now = 1000000,
        .session_timeout_ms = 45000,
        .heartbeat_interval_ms = 5000,
        .max_size = 100,
        .assignor = hf_assignor,
        .topic = hf_topic,
        .each_topic = hf_each,
        .topics_version = -1,
        .emit = hf_emit,
        .ctx = &f,
    };
    struct arena a;
    memset(&a, 0, sizeof a);
    struct cgroup *g = cg_new("g-rr", 4, 1000);
    g->cc = ccg_new();
    assert_int_equal(join(&e, g, &a, "m-z", "sticky"), KERR_UNSUPPORTED_ASSIGNOR);
    assert_int_equal(join(&e, g, &a, "m-z", "roundrobin"), 0);
    assert_int_equal(join(&e, g, &a, "m-a", "roundrobin"), 0);
    assert_int_equal(join(&e, g, &a, "m-m", NULL), 0);
    /* two of three name roundrobin: it computes the target; by id,
     * m-a m-m m-z take partitions 0 1 2, 3 4 5 */
    assert_string_equal(g->cc->last_assignor, "roundrobin");
    assert_string_equal(target(g, "m-a"), "0,3");
    assert_string_equal(target(g, "m-m"), "1,4");
    assert_string_equal(target(g, "m-z"), "2,5");
    cg_free(g, KERR_NOT_COORDINATOR);
    arena_free(&a);
    plugin_registry_free(f.reg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_module_assigns),
        cmocka_unit_test(test_startup_check),
        cmocka_unit_test(test_find_by_name),
        cmocka_unit_test(test_heartbeat_chooses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
