/* Plugin ABI, loader and registry; the codec modules; the codec glue of
 * the produce path (validation of compressed batches, recompression).
 *
 * Fixtures (tests/unit/plugin-fixtures, built by `make check`) are
 * deliberately wrong plugins, each refused with its exact line, and one
 * well-formed plugin per released ABI minor (abi_1_0.c, compiled against
 * the frozen 1.0 headers), which must keep loading forever.
 * The codec modules are loaded from the build's modules/.libs; tests of a
 * module this build does not include are skipped. */
#include <pthread.h>
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
#include "api/produce_codec.h"
#include "plugin/codec.h"
#include "plugin/metrics.h"
#include "plugin/registry.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "topic_config.h"

#ifndef FIXTURE_DIR
#error FIXTURE_DIR must name the built fixtures
#endif
#ifndef MODULE_DIR
#error MODULE_DIR must name the built modules
#endif

#define ABI "samsa ABI 1.3)"

static char errbuf[4096];

static const char *fixture(const char *name)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s.so", FIXTURE_DIR, name);
    return path;
}

/* Expected refusal line for fixture NAME. */
static const char *refusal(const char *name, const char *reason, const char *plugin_abi)
{
    static char want[4096];
    snprintf(want, sizeof want, "plugin %s refused: %s (plugin ABI %s, %s", fixture(name), reason, plugin_abi, ABI);
    return want;
}

static void expect_refused(const char *name, const char *want_name, const char *reason, const char *abi)
{
    struct plugin_registry *reg = plugin_registry_new(NULL);
    int rc = plugin_load_file(reg, fixture(name), want_name, errbuf, sizeof errbuf);
    assert_int_equal(rc, -1);
    assert_string_equal(errbuf, refusal(name, reason, abi));
    assert_int_equal(plugin_count(reg), 0);
    plugin_registry_free(reg);
}

/* ---- refusals, one per fixture ---- */

static void test_refuse_missing_file(void **st)
{
    (void)st;
    expect_refused("does_not_exist", NULL, "cannot open: No such file or directory", "unknown");
}

static void test_refuse_no_entry(void **st)
{
    (void)st;
    expect_refused("no_entry", NULL, "no entry symbol samsa_plugin_entry", "unknown");
}

static void test_refuse_bad_magic(void **st)
{
    (void)st;
    expect_refused("bad_magic", NULL, "bad magic 0xdeadbeef (expected 0x534d5341)", "unknown");
}

static void test_refuse_next_major(void **st)
{
    (void)st;
    expect_refused("next_major", NULL, "built for another ABI major version", "2.0");
}

static void test_refuse_newer_minor(void **st)
{
    (void)st;
    expect_refused("newer_minor", NULL, "built for a newer ABI minor version", "1.4");
}

static void test_refuse_truncated(void **st)
{
    (void)st;
    char reason[128];
    snprintf(reason, sizeof reason, "descriptor truncated (16 bytes, ABI 1.0 needs %zu)",
             (size_t)SAMSA_PLUGIN_INFO_SIZE_1_0);
    expect_refused("truncated", NULL, reason, "1.3");
}

static void test_refuse_bad_sig(void **st)
{
    (void)st;
    char reason[128];
    snprintf(reason, sizeof reason, "not binary compatible (build signature 0x%06x, samsa 0x%06x)",
             (unsigned)(SAMSA_BUILD_SIG ^ 0x0c), (unsigned)SAMSA_BUILD_SIG);
    expect_refused("bad_sig", NULL, reason, "1.3");
}

static void test_refuse_init_fail(void **st)
{
    (void)st;
    expect_refused("init_fail", NULL, "init failed: plugin.init-fail.token is not set", "1.3");
}

static void test_refuse_name_mismatch(void **st)
{
    (void)st;
    expect_refused("abi_1_0", "other", "its descriptor names it \"abi-1-0\", configured as \"other\"", "1.0");
}

static void test_refuse_duplicate(void **st)
{
    (void)st;
    struct plugin_registry *reg = plugin_registry_new(NULL);
    assert_int_equal(plugin_load_file(reg, fixture("abi_1_0"), NULL, errbuf, sizeof errbuf), 0);
    /* the same plugin twice */
    char want[4096];
    assert_int_equal(plugin_load_file(reg, fixture("abi_1_0"), NULL, errbuf, sizeof errbuf), -1);
    snprintf(want, sizeof want, "plugin %s refused: a plugin named \"abi-1-0\" is already loaded from %s (plugin ABI 1.0, %s",
             fixture("abi_1_0"), fixture("abi_1_0"), ABI);
    assert_string_equal(errbuf, want);
    /* another plugin with a capability of the same name and id */
    assert_int_equal(plugin_load_file(reg, fixture("dup_cap"), NULL, errbuf, sizeof errbuf), -1);
    assert_string_equal(errbuf, refusal("dup_cap",
                                        "duplicate codec \"fixture-xor\" (id 6): already provided by abi-1-0 as "
                                        "\"fixture-xor\" (id 6)",
                                        "1.3"));
    assert_int_equal(plugin_count(reg), 1);
    plugin_registry_free(reg);
}

/* ---- the ABI 1.0 fixture keeps loading, every kind registered ---- */

static int64_t metric(const char *name)
{
    struct metric *m = metrics_find(name);
    assert_non_null(m);
    return metric_value(m);
}

static void *decompress_on_thread(void *arg)
{
    const struct plugin_registry *reg = arg;
    struct buf out = BUF_INIT;
    const uint8_t in[3] = {'a' ^ 0x5a, 'b' ^ 0x5a, 'c' ^ 0x5a};
    int rc = codec_decompress(reg, 6, in, sizeof in, &out, 100);
    intptr_t ok = rc == 0 && out.len == 3 && memcmp(out.data, "abc", 3) == 0;
    buf_free(&out);
    return (void *)ok;
}

struct async_result {
    int calls;
    int status;
};

static void on_done(void *arg, int status, const void *result, size_t len)
{
    (void)result;
    (void)len;
    struct async_result *r = arg;
    r->calls++;
    r->status = status;
}

static void test_abi_1_0_fixture(void **st)
{
    (void)st;
    char err[512];
    struct samsa_config *cfg = config_new();
    assert_int_equal(config_set(cfg, "plugin.abi-1-0.greeting", "hello, samsa", err, sizeof err), 0);
    struct plugin_registry *reg = plugin_registry_new(cfg);
    assert_int_equal(plugin_load_file(reg, fixture("abi_1_0"), "abi-1-0", errbuf, sizeof errbuf), 0);
    config_free(cfg); /* values were copied at load */
    assert_int_equal(plugin_count(reg), 1);
    struct plugin_desc d;
    assert_true(plugin_describe(reg, 0, &d));
    assert_string_equal(d.name, "abi-1-0");
    assert_string_equal(d.version, "1.0-fixture");
    assert_int_equal(d.abi_major, 1);
    assert_int_equal(d.abi_minor, 0);
    char caps[512];
    plugin_caps_text(reg, 0, caps, sizeof caps);
    assert_string_equal(caps, "codec:fixture-xor(6),sasl:FIXTURE,assignor:fixture,tier:fixture,"
                              "authorizer:fixture,partitioner:fixture");
    /* what the server reports as samsa.plugins.loaded */
    char *loaded = plugin_registry_loaded_text(reg);
    assert_string_equal(loaded, "abi-1-0:1.0-fixture:1.0:codec:fixture-xor(6)+sasl:FIXTURE+assignor:fixture+"
                                "tier:fixture+authorizer:fixture+partitioner:fixture");
    free(loaded);
    assert_int_equal(metric("samsa.plugin.abi-1-0.greeting_len"), (int64_t)strlen("hello, samsa"));

    /* codec through the registry, on this thread and on another one whose
     * exit runs worker_fini */
    struct buf out = BUF_INIT;
    assert_int_equal(codec_compress(reg, 6, SAMSA_CODEC_LEVEL_DEFAULT, (const uint8_t *)"xyz", 3, &out), 0);
    assert_int_equal(out.len, 3);
    assert_int_equal(out.data[0], 'x' ^ 0x5a);
    buf_free(&out);
    int64_t wf = metric("samsa.plugin.abi-1-0.worker_fini");
    pthread_t th;
    void *ok = NULL;
    assert_int_equal(pthread_create(&th, NULL, decompress_on_thread, reg), 0);
    assert_int_equal(pthread_join(th, &ok), 0);
    assert_true(ok != NULL);
    assert_int_equal(metric("samsa.plugin.abi-1-0.worker_fini"), wf + 1);
    /* the host bounds the output: 3 bytes do not fit in 2 */
    const uint8_t in[3] = {1, 2, 3};
    assert_int_equal(codec_decompress(reg, 6, in, 3, &out, 2), KERR_MESSAGE_TOO_LARGE);
    assert_int_equal(out.len, 0);
    buf_free(&out);

    /* every other kind, called through the host's copy of its vtable */
    const struct plugin_cap *c = plugin_find(reg, SAMSA_CAP_PARTITIONER, "fixture");
    assert_non_null(c);
    assert_int_equal(c->vt.partitioner.partition(c->state, "t", (const uint8_t *)"abcde", 5, 3), 2);
    assert_int_equal(c->vt.partitioner.partition(c->state, "t", NULL, -1, 3), SAMSA_PARTITION_DEFER);
    c = plugin_find(reg, SAMSA_CAP_AUTHORIZER, "fixture");
    assert_non_null(c);
    samsa_authz_action_t acts[3] = {{3, 2, "t", false, true}, {4, 2, "t", false, true}, {8, 2, "t", false, true}};
    samsa_authz_ctx_t actx = {sizeof actx, "User:alice", "127.0.0.1", "PLAINTEXT", "cli", 0, 9, NULL, NULL};
    uint8_t res[3];
    assert_int_equal(c->vt.authorizer.authorize(c->state, &actx, acts, 3, res), SAMSA_OK);
    assert_int_equal(res[0], SAMSA_AUTHZ_ALLOW);
    assert_int_equal(res[1], SAMSA_AUTHZ_DENY);
    assert_int_equal(res[2], SAMSA_AUTHZ_DEFER);
    c = plugin_find(reg, SAMSA_CAP_SASL, "FIXTURE");
    assert_non_null(c);
    void *sess = NULL;
    samsa_sasl_conn_t conn = {sizeof conn, "SASL_PLAINTEXT", "127.0.0.1", "cli", false, NULL};
    assert_int_equal(c->vt.sasl.session_new(c->state, &conn, &sess), SAMSA_OK);
    char serr[64];
    assert_int_equal(c->vt.sasl.step(c->state, sess, (const uint8_t *)"bob", 3, NULL, NULL, serr, sizeof serr),
                     SAMSA_OK);
    assert_string_equal(c->vt.sasl.principal(c->state, sess), "User:bob");
    assert_null(c->vt.sasl.session_lifetime_ms); /* optional, not set by the fixture */
    c->vt.sasl.session_free(c->state, sess);
    c = plugin_find(reg, SAMSA_CAP_TIER, "fixture");
    assert_non_null(c);
    struct samsa_async tok;
    struct async_result ar = {0, 99};
    plugin_async_init(&tok, on_done, &ar);
    samsa_remote_segment_t seg;
    memset(&seg, 0, sizeof seg);
    assert_int_equal(c->vt.tier.delete_segment(c->state, &seg, &tok), SAMSA_EAGAIN);
    assert_int_equal(ar.calls, 1);
    assert_int_equal(ar.status, SAMSA_OK);
    plugin_host_api()->complete(&tok, SAMSA_EIO, NULL, 0); /* a second completion is ignored */
    assert_int_equal(ar.calls, 1);
    int64_t size = 0;
    assert_int_equal(c->vt.tier.remote_log_size(c->state, &seg.topic_id, 0, &size, NULL), SAMSA_OK);
    assert_int_equal(size, 42);
    assert_non_null(plugin_find(reg, SAMSA_CAP_ASSIGNOR, "fixture"));
    assert_null(plugin_find(reg, SAMSA_CAP_ASSIGNOR, "nope"));

    int64_t fini = metric("samsa.plugin.abi-1-0.fini");
    plugin_registry_free(reg);
    assert_int_equal(metric("samsa.plugin.abi-1-0.fini"), fini + 1);
}

static void test_host_api_table(void **st)
{
    (void)st;
    const samsa_host_api_t *api = plugin_host_api();
    assert_int_equal(api->struct_size, sizeof(samsa_host_api_t));
    assert_int_equal(api->abi_major, SAMSA_ABI_MAJOR);
    assert_int_equal(api->abi_minor, SAMSA_ABI_MINOR);
    assert_true(SAMSA_HOST_HAS(api, complete));
    /* a 1.0-sized table seen by a newer plugin: fields past it are absent */
    samsa_host_api_t small = *api;
    small.struct_size = (uint32_t)offsetof(samsa_host_api_t, complete);
    assert_false(SAMSA_HOST_HAS(&small, complete));
    assert_true(SAMSA_HOST_HAS(&small, worker_local));
    /* ABI 1.1: the server's config and SCRAM credentials */
    assert_true(SAMSA_HOST_HAS(api, server_config_get));
    assert_true(SAMSA_HOST_HAS(api, scram_credential_get));
    small.struct_size = (uint32_t)offsetof(samsa_host_api_t, server_config_get);
    assert_true(SAMSA_HOST_HAS(&small, complete));
    assert_false(SAMSA_HOST_HAS(&small, server_config_get));
    assert_false(SAMSA_HOST_HAS(&small, scram_credential_get));
    int64_t a = api->monotonic_ns(), b = api->monotonic_ns();
    assert_true(b >= a);
    assert_true(api->wall_ms() > 1600000000000LL);
    void *p = api->alloc(0);
    assert_non_null(p);
    api->free(p);
    /* the frozen fields never move */
    assert_int_equal(offsetof(samsa_plugin_info_t, magic), 0);
    assert_int_equal(offsetof(samsa_plugin_info_t, abi_major), 4);
    assert_int_equal(offsetof(samsa_plugin_info_t, abi_minor), 6);
    assert_int_equal(offsetof(samsa_plugin_info_t, struct_size), 8);
    assert_int_equal(offsetof(samsa_plugin_info_t, build_sig), 12);
}

/* A module linked into the test binary, as configure's static modules
 * are, with one misregistration to check vtable validation. */
static int st_compress(void *s, int32_t l, const uint8_t *in, size_t n, samsa_out_t *o)
{
    (void)s, (void)l, (void)in, (void)n, (void)o;
    return SAMSA_OK;
}
static int st_decompress(void *s, const uint8_t *in, size_t n, samsa_out_t *o)
{
    (void)s, (void)in, (void)n, (void)o;
    return SAMSA_OK;
}
static const samsa_codec_t st_codec_bad_levels = {
    .hdr = {sizeof(samsa_codec_t), SAMSA_CAP_CODEC, "bad-levels"},
    .id = 5, .level_min = 5, .level_max = 1, .level_default = 3,
    .compress = st_compress, .decompress = st_decompress,
};
static const samsa_codec_t st_codec_short = {
    .hdr = {8, SAMSA_CAP_CODEC, "short"},
    .id = 5, .compress = st_compress, .decompress = st_decompress,
};
static int st_which;
static int st_init(samsa_host_t *h, const samsa_host_api_t *api, void **state, char *e, size_t el)
{
    (void)state, (void)e, (void)el;
    static const samsa_cap_hdr_t unknown_kind = {sizeof(samsa_cap_hdr_t), 99, "future"};
    /* an unknown kind is reported to the plugin, not fatal */
    if (api->register_capability(h, &unknown_kind, NULL) != SAMSA_EUNSUPPORTED)
        return SAMSA_EINVAL;
    if (st_which == 1)
        api->register_capability(h, &st_codec_bad_levels.hdr, NULL);
    if (st_which == 2)
        api->register_capability(h, &st_codec_short.hdr, NULL);
    return SAMSA_OK;
}
static const samsa_plugin_info_t st_info = {SAMSA_PLUGIN_INFO_HEADER, .name = "static-test", .version = "s",
                                            .init = st_init};
static const samsa_plugin_info_t *st_entry(void) { return &st_info; }

static void test_static_and_vtable_checks(void **st)
{
    (void)st;
    struct plugin_registry *reg = plugin_registry_new(NULL);
    st_which = 1;
    assert_int_equal(plugin_load_static(reg, st_entry, "static-test", errbuf, sizeof errbuf), -1);
    assert_string_equal(errbuf, "plugin static:static-test refused: codec \"bad-levels\" lacks level_min <= "
                                "level_default <= level_max (plugin ABI 1.3, samsa ABI 1.3)");
    st_which = 2;
    assert_int_equal(plugin_load_static(reg, st_entry, "static-test", errbuf, sizeof errbuf), -1);
    char want[512];
    snprintf(want, sizeof want, "plugin static:static-test refused: codec \"short\" vtable truncated (8 bytes, ABI 1.0 "
                                "needs %zu) (plugin ABI 1.3, samsa ABI 1.3)", (size_t)SAMSA_CODEC_SIZE_1_0);
    assert_string_equal(errbuf, want);
    st_which = 0;
    assert_int_equal(plugin_load_static(reg, st_entry, "static-test", errbuf, sizeof errbuf), 0);
    struct plugin_desc d;
    assert_true(plugin_describe(reg, 0, &d));
    assert_string_equal(d.origin, "static");
    plugin_registry_free(reg);
}

static void test_metrics(void **st)
{
    (void)st;
    struct metric *c = metrics_register("test.counter", METRIC_COUNTER, "c");
    assert_non_null(c);
    assert_ptr_equal(metrics_register("test.counter", METRIC_COUNTER, "again"), c);
    assert_null(metrics_register("test.counter", METRIC_GAUGE, "other type"));
    metric_add(c, 5);
    metric_add(c, -3); /* counters only go up */
    metric_set(c, 100);
    assert_int_equal(metric_value(c), 5);
    struct metric *g = metrics_register("test.gauge", METRIC_GAUGE, "g");
    metric_set(g, -7);
    metric_add(g, 2);
    assert_int_equal(metric_value(g), -5);
    metric_add(NULL, 1);
}

/* ---- configured loading ---- */

static bool have_modules(void)
{
    return access(MODULE_DIR "/codec-gzip.so", R_OK) == 0 && access(MODULE_DIR "/codec-snappy.so", R_OK) == 0 &&
           access(MODULE_DIR "/codec-lz4.so", R_OK) == 0 && access(MODULE_DIR "/codec-zstd.so", R_OK) == 0;
}

static struct plugin_registry *modules_registry(void)
{
    if (!have_modules())
        return NULL;
    struct plugin_registry *reg = plugin_registry_new(NULL);
    const char *names[] = {"codec-gzip", "codec-snappy", "codec-lz4", "codec-zstd"};
    for (int i = 0; i < 4; i++)
        assert_int_equal(plugin_load_name(reg, MODULE_DIR, names[i], errbuf, sizeof errbuf), 0);
    return reg;
}

static void test_load_config(void **st)
{
    (void)st;
    char err[512];
    struct samsa_config *cfg = config_new();
    assert_int_equal(config_set(cfg, "plugin.dir", FIXTURE_DIR, err, sizeof err), 0);
    assert_int_equal(config_set(cfg, "plugins", "abi_1_0", err, sizeof err), 0);
    struct plugin_registry *reg = plugin_registry_new(cfg);
    /* configured under the file's name, the descriptor says abi-1-0 */
    assert_int_equal(plugin_registry_load_config(reg, cfg, errbuf, sizeof errbuf), -1);
    assert_string_equal(errbuf, refusal("abi_1_0", "its descriptor names it \"abi-1-0\", configured as \"abi_1_0\"", "1.0"));
    plugin_registry_free(reg);
    /* the first failure stops the list */
    assert_int_equal(config_set(cfg, "plugins", "bad_magic,abi_1_0", err, sizeof err), 0);
    reg = plugin_registry_new(cfg);
    assert_int_equal(plugin_registry_load_config(reg, cfg, errbuf, sizeof errbuf), -1);
    assert_string_equal(errbuf, refusal("bad_magic", "bad magic 0xdeadbeef (expected 0x534d5341)", "unknown"));
    assert_int_equal(plugin_count(reg), 0);
    char *loaded = plugin_registry_loaded_text(reg);
    assert_string_equal(loaded, "");
    free(loaded);
    plugin_registry_free(reg);
    config_free(cfg);

    if (!have_modules())
        return;
    /* plugins unset: every module of the build found in plugin.dir */
    cfg = config_new();
    assert_int_equal(config_set(cfg, "plugin.dir", MODULE_DIR, err, sizeof err), 0);
    reg = plugin_registry_new(cfg);
    assert_int_equal(plugin_registry_load_config(reg, cfg, errbuf, sizeof errbuf), 0);
    for (int id = 1; id <= 4; id++)
        assert_non_null(plugin_codec(reg, id));
    plugin_registry_free(reg);
    /* plugins set: only those */
    assert_int_equal(config_set(cfg, "plugins", "codec-zstd", err, sizeof err), 0);
    reg = plugin_registry_new(cfg);
    assert_int_equal(plugin_registry_load_config(reg, cfg, errbuf, sizeof errbuf), 0);
    assert_null(plugin_codec(reg, 1));
    assert_non_null(plugin_codec(reg, 4));
    plugin_registry_free(reg);
    config_free(cfg);
}

/* ---- codec modules ---- */

static void fill(uint8_t *p, size_t n, unsigned seed, bool compressible)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = compressible ? (uint8_t)("kafka samsa record "[i % 19] + ((x >> 28) == 0)) : (uint8_t)(x >> 16);
    }
}

static void test_codec_round_trips(void **st)
{
    (void)st;
    struct plugin_registry *reg = modules_registry();
    if (!reg)
        skip();
    static const size_t sizes[] = {0, 1, 100, 32767, 32768, 32769, 65536, 200000, 1 << 20};
    static const int32_t levels[][3] = {{-1, 1, 9}, {0, 0, 0}, {1, 9, 17}, {-5, 3, 19}};
    uint8_t *src = malloc(1 << 20);
    for (int id = 1; id <= 4; id++) {
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            for (int comp = 0; comp < 2; comp++) {
                fill(src, sizes[s], (unsigned)(id * 100 + s), comp);
                for (int l = 0; l < 3; l++) {
                    struct buf z = BUF_INIT, back = BUF_INIT;
                    int rc = codec_compress(reg, id, levels[id - 1][l], src, sizes[s], &z);
                    assert_int_equal(rc, 0);
                    rc = codec_decompress(reg, id, z.data, z.len, &back, sizes[s] + 1);
                    if (rc != 0)
                        fail_msg("codec %d size %zu level %d: decompress %d", id, sizes[s], levels[id - 1][l], rc);
                    assert_int_equal(back.len, sizes[s]);
                    if (sizes[s])
                        assert_memory_equal(back.data, src, sizes[s]);
                    if (comp && sizes[s] >= 65536 && id != 2)
                        assert_true(z.len < sizes[s] / 2);
                    buf_free(&z);
                    buf_free(&back);
                }
            }
        }
    }
    free(src);
    plugin_registry_free(reg);
}

/* Decompression bombs stop at the host's limit, whatever the codec. */
static void test_codec_bounds(void **st)
{
    (void)st;
    struct plugin_registry *reg = modules_registry();
    if (!reg)
        skip();
    size_t n = 8 << 20;
    uint8_t *zeros = calloc(1, n);
    for (int id = 1; id <= 4; id++) {
        struct buf z = BUF_INIT, back = BUF_INIT;
        assert_int_equal(codec_compress(reg, id, SAMSA_CODEC_LEVEL_DEFAULT, zeros, n, &z), 0);
        assert_int_equal(codec_decompress(reg, id, z.data, z.len, &back, 1 << 20), KERR_MESSAGE_TOO_LARGE);
        assert_int_equal(back.len, 0);
        assert_true(back.cap <= (2u << 20)); /* never allocated the whole */
        buf_free(&back);
        assert_int_equal(codec_decompress(reg, id, z.data, z.len, &back, n), 0);
        assert_int_equal(back.len, n);
        buf_free(&back);
        buf_free(&z);
    }
    free(zeros);
    plugin_registry_free(reg);
}

/* Truncated or garbled input is CORRUPT_MESSAGE, never a crash. */
static void test_codec_corrupt(void **st)
{
    (void)st;
    struct plugin_registry *reg = modules_registry();
    if (!reg)
        skip();
    uint8_t src[5000];
    fill(src, sizeof src, 7, true);
    for (int id = 1; id <= 4; id++) {
        struct buf z = BUF_INIT, back = BUF_INIT;
        assert_int_equal(codec_compress(reg, id, SAMSA_CODEC_LEVEL_DEFAULT, src, sizeof src, &z), 0);
        for (size_t cut = 0; cut < z.len; cut += (cut < 40 ? 1 : 97)) {
            int rc = codec_decompress(reg, id, z.data, cut, &back, 1 << 20);
            /* xerial snappy has no end mark: a cut at a block boundary
             * reads as a shorter stream (the record count check of the
             * batch catches it); every other cut is corrupt. */
            if (id == 2 && rc == 0 && back.len < sizeof src && back.len % 32768 == 0) {
                buf_reset(&back);
                continue;
            }
            if (rc != KERR_CORRUPT_MESSAGE)
                fail_msg("codec %d cut at %zu of %zu: %d", id, cut, z.len, rc);
            assert_int_equal(back.len, 0);
        }
        /* trailing garbage */
        buf_append(&z, "XY", 2);
        assert_int_equal(codec_decompress(reg, id, z.data, z.len, &back, 1 << 20), KERR_CORRUPT_MESSAGE);
        /* flipped bytes: any answer but a crash; success must not exceed */
        z.len -= 2;
        for (size_t i = 0; i < z.len; i += 13) {
            z.data[i] ^= 0x55;
            int rc = codec_decompress(reg, id, z.data, z.len, &back, sizeof src);
            assert_true(rc == 0 || rc == KERR_CORRUPT_MESSAGE || rc == KERR_MESSAGE_TOO_LARGE);
            assert_true(back.len <= sizeof src);
            buf_reset(&back);
            z.data[i] ^= 0x55;
        }
        buf_free(&z);
        buf_free(&back);
    }
    assert_int_equal(codec_decompress(reg, 5, src, 10, NULL, 10), KERR_UNSUPPORTED_COMPRESSION_TYPE);
    plugin_registry_free(reg);
}

/* snappy: raw snappy (librdkafka, kafkajs-snappy) and xerial framing
 * (Java) both read; the module writes xerial. */
static void test_snappy_framings(void **st)
{
    (void)st;
    struct plugin_registry *reg = modules_registry();
    if (!reg)
        skip();
    uint8_t src[70000];
    fill(src, sizeof src, 3, true);
    struct buf z = BUF_INIT, back = BUF_INIT;
    assert_int_equal(codec_compress(reg, 2, 0, src, sizeof src, &z), 0);
    static const uint8_t magic[16] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1};
    assert_memory_equal(z.data, magic, 16);
    /* three blocks of 32768, 32768 and 4464 bytes: take the first block
     * as a raw snappy stream of its own */
    uint32_t b1 = be32_read(z.data + 16);
    assert_int_equal(codec_decompress(reg, 2, z.data + 20, b1, &back, 1 << 20), 0);
    assert_int_equal(back.len, 32768);
    assert_memory_equal(back.data, src, 32768);
    buf_free(&back);
    buf_free(&z);
    plugin_registry_free(reg);
}

/* xxh32 (for the LZ4 header checksum), from the xxHash spec. */
static uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
static uint32_t xxh32_small(const uint8_t *p, size_t len)
{
    /* len < 16 only: a frame descriptor */
    uint32_t h = 374761393u + (uint32_t)len;
    size_t i = 0;
    for (; i + 4 <= len; i += 4) {
        uint32_t k = (uint32_t)p[i] | ((uint32_t)p[i + 1] << 8) | ((uint32_t)p[i + 2] << 16) | ((uint32_t)p[i + 3] << 24);
        h = rotl32(h + k * 3266489917u, 17) * 668265263u;
    }
    for (; i < len; i++)
        h = rotl32(h + p[i] * 374761393u, 11) * 2654435761u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    h *= 3266489917u;
    h ^= h >> 16;
    return h;
}

/* LZ4: the pre-0.10 Kafka header checksum (computed over the magic too)
 * is read, a checksum matching neither computation is refused. */
static void test_lz4_legacy_checksum(void **st)
{
    (void)st;
    struct plugin_registry *reg = modules_registry();
    if (!reg)
        skip();
    uint8_t src[3000];
    fill(src, sizeof src, 9, true);
    struct buf z = BUF_INIT, back = BUF_INIT;
    assert_int_equal(codec_compress(reg, 3, 1, src, sizeof src, &z), 0);
    assert_int_equal(z.data[4] & 0x08, 0); /* no content size: HC at byte 6 */
    size_t hc = 6;
    assert_int_equal(z.data[hc], (uint8_t)(xxh32_small(z.data + 4, 2) >> 8));
    uint8_t legacy = (uint8_t)(xxh32_small(z.data, 6) >> 8);
    assert_int_not_equal(legacy, z.data[hc]);
    z.data[hc] = legacy;
    assert_int_equal(codec_decompress(reg, 3, z.data, z.len, &back, 1 << 20), 0);
    assert_int_equal(back.len, sizeof src);
    assert_memory_equal(back.data, src, sizeof src);
    buf_reset(&back);
    z.data[hc] = (uint8_t)(legacy + 1) == (uint8_t)(xxh32_small(z.data + 4, 2) >> 8) ? (uint8_t)(legacy + 2)
                                                                                     : (uint8_t)(legacy + 1);
    assert_int_equal(codec_decompress(reg, 3, z.data, z.len, &back, 1 << 20), KERR_CORRUPT_MESSAGE);
    buf_free(&back);
    buf_free(&z);
    plugin_registry_free(reg);
}

/* gzip: concatenated members are read (Java's GZIPInputStream does). */
static void test_gzip_members(void **st)
{
    (void)st;
    struct plugin_registry *reg = modules_registry();
    if (!reg)
        skip();
    struct buf z = BUF_INIT, back = BUF_INIT;
    assert_int_equal(codec_compress(reg, 1, 6, (const uint8_t *)"hello ", 6, &z), 0);
    assert_int_equal(codec_compress(reg, 1, 1, (const uint8_t *)"world", 5, &z), 0);
    assert_int_equal(codec_decompress(reg, 1, z.data, z.len, &back, 100), 0);
    assert_int_equal(back.len, 11);
    assert_memory_equal(back.data, "hello world", 11);
    buf_free(&back);
    buf_free(&z);
    plugin_registry_free(reg);
}

/* ---- batches: validation of compressed batches and rebuilds ---- */

static size_t build_batch(struct buf *out, const struct plugin_registry *reg, int codec, int n, int64_t base_ts,
                          const struct rb_batch_opts *bo)
{
    struct rb_builder b;
    rb_builder_begin(&b, out, 0, base_ts, bo);
    for (int i = 0; i < n; i++) {
        char k[32], v[64];
        snprintf(k, sizeof k, "key-%d", i);
        snprintf(v, sizeof v, "value %d of the batch, compressible compressible", i);
        struct rb_header_kv h[2] = {{KSTR("h1"), {(const uint8_t *)"x", 1}}, {KSTR("h2"), KBYTES_NULL}};
        kbytes_t key = i % 3 == 2 ? KBYTES_NULL : (kbytes_t){(const uint8_t *)k, (int32_t)strlen(k)};
        assert_int_equal(rb_builder_add(&b, base_ts + i * 7 - (i == 1 ? 20 : 0), key,
                                        (kbytes_t){(const uint8_t *)v, (int32_t)strlen(v)}, h, i % 2 ? 2 : 0),
                         0);
    }
    size_t len = 0;
    struct codec_ctx cc = {.reg = reg, .level = SAMSA_CODEC_LEVEL_DEFAULT};
    int rc = codec ? rb_builder_finish_compressed(&b, codec, codec_rb_compress, &cc, &len) : rb_builder_finish(&b, &len);
    assert_int_equal(rc, 0);
    return len;
}

/* Compares the records of two batches field by field. */
static void same_records(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
                         const struct plugin_registry *reg)
{
    struct rb_header ha, hb;
    assert_int_equal(rb_parse_header(a, alen, &ha), 0);
    assert_int_equal(rb_parse_header(b, blen, &hb), 0);
    assert_int_equal(ha.records_count, hb.records_count);
    assert_int_equal(ha.last_offset_delta, hb.last_offset_delta);
    assert_int_equal(ha.base_timestamp, hb.base_timestamp);
    assert_int_equal(ha.max_timestamp, hb.max_timestamp);
    assert_int_equal(ha.producer_id, hb.producer_id);
    assert_int_equal(ha.producer_epoch, hb.producer_epoch);
    assert_int_equal(ha.base_sequence, hb.base_sequence);
    assert_int_equal(ha.attributes & ~RB_ATTR_CODEC_MASK, hb.attributes & ~RB_ATTR_CODEC_MASK);
    struct buf da = BUF_INIT, db = BUF_INIT;
    const uint8_t *ra = a + RB_OFF_RECORDS, *rbp = b + RB_OFF_RECORDS;
    size_t la = alen - RB_OFF_RECORDS, lb = blen - RB_OFF_RECORDS;
    if (rb_codec(&ha)) {
        assert_int_equal(codec_decompress(reg, rb_codec(&ha), ra, la, &da, 1 << 24), 0);
        ra = da.data;
        la = da.len;
    }
    if (rb_codec(&hb)) {
        assert_int_equal(codec_decompress(reg, rb_codec(&hb), rbp, lb, &db, 1 << 24), 0);
        rbp = db.data;
        lb = db.len;
    }
    /* the same record encoding on both sides: the decompressed blocks are
     * byte-identical, which compares every field of every record */
    assert_int_equal(la, lb);
    assert_memory_equal(ra, rbp, la);
    buf_free(&da);
    buf_free(&db);
}

static void test_rebuild_batches(void **st)
{
    (void)st;
    struct plugin_registry *reg = modules_registry();
    if (!reg)
        skip();
    struct rb_batch_opts bo = RB_BATCH_OPTS_INIT;
    bo.producer_id = 4711;
    bo.producer_epoch = 3;
    bo.base_sequence = 100;
    bo.transactional = true;
    for (int from = 0; from <= 4; from++) {
        struct buf orig = BUF_INIT;
        size_t len = build_batch(&orig, reg, from, 25, 1700000000000LL, &bo);
        for (int to = 0; to <= 4; to++) {
            struct buf out = BUF_INIT, dec = BUF_INIT;
            const uint8_t *recs = NULL;
            size_t rlen = 0;
            if (from) {
                assert_int_equal(codec_decompress(reg, from, orig.data + RB_OFF_RECORDS, len - RB_OFF_RECORDS, &dec,
                                                  1 << 24),
                                 0);
                recs = dec.data;
                rlen = dec.len;
            }
            char reason[192];
            assert_int_equal(codec_rebuild_batch(reg, orig.data, len, recs, rlen, to, SAMSA_CODEC_LEVEL_DEFAULT,
                                                 &out, reason, sizeof reason),
                             0);
            assert_true(rb_crc_ok(out.data, out.len));
            struct rb_header h;
            assert_int_equal(rb_parse_header(out.data, out.len, &h), 0);
            assert_int_equal(rb_codec(&h), to);
            same_records(orig.data, len, out.data, out.len, reg);
            if (from == 0 && to == 0) /* an uncompressed rebuild is the builder's own batch */
                assert_memory_equal(out.data, orig.data, len);
            buf_free(&out);
            buf_free(&dec);
        }
        buf_free(&orig);
    }
    plugin_registry_free(reg);
}

static struct topic_config topic(int compression, int32_t max_message_bytes)
{
    struct topic_config tc;
    memset(&tc, 0, sizeof tc);
    tc.compression_type = (enum topic_compression)compression;
    tc.compression_gzip_level = -1;
    tc.compression_lz4_level = 9;
    tc.compression_zstd_level = 3;
    tc.max_message_bytes = max_message_bytes;
    return tc;
}

/* The produce path: validate through the codec, then keep or rebuild. */
static int produce(const struct plugin_registry *reg, const struct topic_config *tc, uint8_t *batch, size_t len,
                   uint8_t **out, size_t *out_len, struct produce_codec *pc, struct rb_validate_result *vr)
{
    produce_codec_init(pc, reg, tc, batch, len);
    struct rb_validate_opts o = {
        .max_message_bytes = tc->max_message_bytes,
        .timestamp_type = RB_CREATE_TIME,
        .timestamp_before_max_ms = INT64_MAX,
        .timestamp_after_max_ms = INT64_MAX,
        .now_ms = 1700000000000LL,
        .decompress = produce_codec_decompress,
        .decompress_ctx = pc,
    };
    int rc = rb_validate_produce(batch, len, 9, &o, vr);
    *out = batch;
    *out_len = len;
    if (!rc)
        rc = produce_codec_apply(pc, out, out_len, vr, vr->reason, sizeof vr->reason);
    return rc;
}

static void test_produce_codec(void **st)
{
    (void)st;
    struct plugin_registry *reg = modules_registry();
    if (!reg)
        skip();
    struct rb_batch_opts bo = RB_BATCH_OPTS_INIT;
    for (int from = 0; from <= 4; from++) {
        for (int target = -1; target <= 4; target++) {
            struct buf orig = BUF_INIT;
            size_t len = build_batch(&orig, reg, from, 50, 1700000000000LL, &bo);
            uint8_t *copy = malloc(len);
            memcpy(copy, orig.data, len);
            struct topic_config tc = topic(target, 1 << 20);
            struct produce_codec pc;
            struct rb_validate_result vr;
            uint8_t *out;
            size_t out_len;
            int rc = produce(reg, &tc, orig.data, len, &out, &out_len, &pc, &vr);
            if (rc)
                fail_msg("from %d target %d: %d %s", from, target, rc, vr.reason);
            assert_int_equal(vr.records, 50);
            if (target < 0 || target == from) {
                /* kept as the producer sent it, byte for byte */
                assert_false(produce_codec_rebuilt(&pc));
                assert_ptr_equal(out, orig.data);
                assert_memory_equal(out, copy, len);
            } else {
                assert_true(produce_codec_rebuilt(&pc));
                assert_int_equal(out[RB_OFF_ATTRIBUTES + 1] & RB_ATTR_CODEC_MASK, target);
                same_records(copy, len, out, out_len, reg);
                /* the rebuilt batch passes validation in its turn */
                struct rb_validate_result vr2;
                struct codec_ctx cc = {.reg = reg, .limit = 1 << 24};
                struct rb_validate_opts o2 = {.timestamp_type = RB_CREATE_TIME,
                                              .timestamp_before_max_ms = INT64_MAX,
                                              .timestamp_after_max_ms = INT64_MAX,
                                              .decompress = codec_rb_decompress,
                                              .decompress_ctx = &cc};
                assert_int_equal(rb_validate_produce(out, out_len, 9, &o2, &vr2), 0);
                assert_int_equal(vr2.records, 50);
            }
            produce_codec_free(&pc);
            free(copy);
            buf_free(&orig);
        }
    }
    /* a rebuilt batch over max.message.bytes: MESSAGE_TOO_LARGE (Kafka's
     * UnifiedLog re-check after recompression) */
    struct buf orig = BUF_INIT;
    size_t len = build_batch(&orig, reg, 4, 50, 1700000000000LL, &bo);
    struct topic_config tc = topic(0, (int32_t)len + 10);
    struct produce_codec pc;
    struct rb_validate_result vr;
    uint8_t *out;
    size_t out_len;
    assert_int_equal(produce(reg, &tc, orig.data, len, &out, &out_len, &pc, &vr), KERR_MESSAGE_TOO_LARGE);
    produce_codec_free(&pc);
    /* no codec loaded for the batch: UNSUPPORTED_COMPRESSION_TYPE */
    struct plugin_registry *empty = plugin_registry_new(NULL);
    tc = topic(-1, 1 << 20);
    assert_int_equal(produce(empty, &tc, orig.data, len, &out, &out_len, &pc, &vr), KERR_UNSUPPORTED_COMPRESSION_TYPE);
    produce_codec_free(&pc);
    /* a topic codec that is not loaded */
    buf_reset(&orig);
    len = build_batch(&orig, reg, 0, 5, 1700000000000LL, &bo);
    tc = topic(2, 1 << 20);
    assert_int_equal(produce(empty, &tc, orig.data, len, &out, &out_len, &pc, &vr), KERR_UNSUPPORTED_COMPRESSION_TYPE);
    assert_string_equal(vr.reason, "topic compression.type is snappy but no codec module for it is loaded");
    produce_codec_free(&pc);
    plugin_registry_free(empty);
    /* corrupt compressed records (CRC made right): CORRUPT_MESSAGE */
    buf_reset(&orig);
    len = build_batch(&orig, reg, 3, 20, 1700000000000LL, &bo);
    orig.data[RB_OFF_RECORDS] ^= 0xff; /* the LZ4 frame magic */
    rb_recompute_crc(orig.data, len);
    tc = topic(-1, 1 << 20);
    assert_int_equal(produce(reg, &tc, orig.data, len, &out, &out_len, &pc, &vr), KERR_CORRUPT_MESSAGE);
    produce_codec_free(&pc);
    buf_free(&orig);
    plugin_registry_free(reg);
}

static void test_records_limit(void **st)
{
    (void)st;
    assert_int_equal(codec_records_limit(1, 1000), 1064);
    assert_int_equal(codec_records_limit(10, 1000), 10640);
    assert_int_equal(codec_records_limit(0, 1000), 1064);
    assert_int_equal(codec_records_limit(1000000, 1 << 20), CODEC_DECOMPRESS_CEILING);
    assert_int_equal(codec_records_limit(2, 0), 2 * ((1 << 20) + 64));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refuse_missing_file),
        cmocka_unit_test(test_refuse_no_entry),
        cmocka_unit_test(test_refuse_bad_magic),
        cmocka_unit_test(test_refuse_next_major),
        cmocka_unit_test(test_refuse_newer_minor),
        cmocka_unit_test(test_refuse_truncated),
        cmocka_unit_test(test_refuse_bad_sig),
        cmocka_unit_test(test_refuse_init_fail),
        cmocka_unit_test(test_refuse_name_mismatch),
        cmocka_unit_test(test_refuse_duplicate),
        cmocka_unit_test(test_abi_1_0_fixture),
        cmocka_unit_test(test_host_api_table),
        cmocka_unit_test(test_static_and_vtable_checks),
        cmocka_unit_test(test_metrics),
        cmocka_unit_test(test_load_config),
        cmocka_unit_test(test_codec_round_trips),
        cmocka_unit_test(test_codec_bounds),
        cmocka_unit_test(test_codec_corrupt),
        cmocka_unit_test(test_snappy_framings),
        cmocka_unit_test(test_lz4_legacy_checksum),
        cmocka_unit_test(test_gzip_members),
        cmocka_unit_test(test_rebuild_batches),
        cmocka_unit_test(test_produce_codec),
        cmocka_unit_test(test_records_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
