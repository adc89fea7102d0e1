/* Unit tests of the lua module (modules/lua): the module is loaded as
 * the server loads it (dlopen of modules/.libs/lua.so) and driven
 * through the ABI with a fake host that records log lines and metrics:
 * the fields of r, the sandbox (escapes and abuse: each refused or cut
 * off, the action denied, the state usable for the next call), reload
 * (a broken script leaves the old one, every thread switches), threads,
 * the example policies of lua/authz and partitioners of lua/partitioners
 * (the Java-compatible murmur2 against Kafka's test vectors), and once
 * through the real registry (plugin_registry_reload, and
 * plugin_registry_reconfigure: a script path changed at run time). */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "config.h"
#include "plugin/registry.h"
#include "samsa/authz.h"
#include "samsa/partitioner.h"
#include "samsa/plugin.h"

#ifndef MODULE_DIR
#define MODULE_DIR "modules/.libs"
#endif
#ifndef LUA_DIR
#define LUA_DIR "lua"
#endif

/* ---- a fake host ---- */

static const char *conf_keys[8], *conf_vals[8];
static char logs[16384];
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t metric_vals[4];
static int nmetrics;
static __thread void *tls_slot;
static const samsa_authorizer_t *authz_vt;
static const samsa_partitioner_t *part_vt;
static void *cap_state;
static const samsa_plugin_info_t *info;
static void *mstate;
static char tmpdir[64];

static void fake_log(samsa_host_t *h, int level, const char *fmt, ...)
{
    (void)h;
    (void)level;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&log_mu);
    size_t l = strlen(logs);
    snprintf(logs + l, sizeof logs - l, "%s\n", line);
    pthread_mutex_unlock(&log_mu);
}

static const char *fake_config_get(samsa_host_t *h, const char *key)
{
    (void)h;
    for (int i = 0; conf_keys[i]; i++)
        if (strcmp(conf_keys[i], key) == 0)
            return conf_vals[i];
    return NULL;
}

static const char *fake_server_config_get(samsa_host_t *h, const char *key)
{
    (void)h;
    static const char *const kv[][2] = {
        {"node.id", "7"},
        {"broker.rack", "r1"},
        {"listeners", "SASL_PLAINTEXT://127.0.0.1:9092, INTERNAL://127.0.0.1:9093"},
        {"listener.security.protocol.map", "SASL_PLAINTEXT:SASL_PLAINTEXT,INTERNAL:PLAINTEXT"},
    };
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        if (strcmp(kv[i][0], key) == 0)
            return kv[i][1];
    return NULL;
}

static int fake_register(samsa_host_t *h, const samsa_cap_hdr_t *cap, void *state)
{
    (void)h;
    if (cap->kind == SAMSA_CAP_AUTHORIZER)
        authz_vt = (const samsa_authorizer_t *)cap;
    else if (cap->kind == SAMSA_CAP_PARTITIONER)
        part_vt = (const samsa_partitioner_t *)cap;
    else
        return SAMSA_EUNSUPPORTED;
    cap_state = state;
    return SAMSA_OK;
}

static samsa_metric_t *fake_metric_register(samsa_host_t *h, const char *name, int type, const char *help)
{
    (void)h;
    (void)name;
    (void)type;
    (void)help;
    return nmetrics < 4 ? (samsa_metric_t *)&metric_vals[nmetrics++] : NULL;
}

static void fake_metric_add(samsa_metric_t *m, int64_t d)
{
    if (m)
        __atomic_add_fetch((int64_t *)m, d, __ATOMIC_RELAXED);
}

static void fake_metric_set(samsa_metric_t *m, int64_t v) { (void)m, (void)v; }

static int64_t fake_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t fake_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *fake_alloc(size_t n) { return malloc(n ? n : 1); }
static void *fake_realloc(void *p, size_t n) { return realloc(p, n ? n : 1); }
static void **fake_worker_local(samsa_host_t *h)
{
    (void)h;
    return &tls_slot;
}

static const samsa_host_api_t fake_api = {
    .struct_size = sizeof(samsa_host_api_t),
    .abi_major = SAMSA_ABI_MAJOR,
    .abi_minor = SAMSA_ABI_MINOR,
    .log = fake_log,
    .config_get = fake_config_get,
    .register_capability = fake_register,
    .metric_register = fake_metric_register,
    .metric_add = fake_metric_add,
    .metric_set = fake_metric_set,
    .monotonic_ns = fake_mono,
    .wall_ms = fake_wall,
    .alloc = fake_alloc,
    .realloc = fake_realloc,
    .free = free,
    .worker_local = fake_worker_local,
    .server_config_get = fake_server_config_get,
};

/* ---- helpers ---- */

static const char *write_script(const char *name, const char *text)
{
    static char paths[8][160];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 160, "%s/%s", tmpdir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return p;
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

/* Loads the module with the config pairs k1, v1, k2, v2, ..., NULL.
 * Returns init's result; err gets its line. */
static void unload_module(void);
static int load_module(char *err, size_t errlen, ...)
{
    va_list ap;
    va_start(ap, errlen);
    int i = 0;
    const char *k;
    while ((k = va_arg(ap, const char *)) && i < 7) {
        conf_keys[i] = k;
        conf_vals[i++] = va_arg(ap, const char *);
    }
    conf_keys[i] = NULL;
    va_end(ap);
    if (!info) {
        if (access(MODULE_DIR "/lua.so", F_OK) != 0) {
            /* a build with the lua module static or left out */
            fprintf(stderr, "no %s/lua.so: skipped\n", MODULE_DIR);
            skip();
        }
        void *h = dlopen(MODULE_DIR "/lua.so", RTLD_NOW | RTLD_LOCAL);
        if (!h)
            fail_msg("dlopen %s/lua.so: %s", MODULE_DIR, dlerror());
        void *sym = dlsym(h, "samsa_plugin_entry");
        assert_non_null(sym);
        const samsa_plugin_info_t *(*entry)(void);
        memcpy(&entry, &sym, sizeof entry);
        info = entry();
        assert_int_equal(info->abi_minor, SAMSA_ABI_MINOR);
        assert_non_null(info->reload);
    }
    if (mstate) /* a failed test left its module loaded */
        unload_module();
    logs[0] = '\0';
    nmetrics = 0;
    memset(metric_vals, 0, sizeof metric_vals);
    authz_vt = NULL;
    part_vt = NULL;
    mstate = NULL;
    err[0] = '\0';
    return info->init((samsa_host_t *)&fake_api, &fake_api, &mstate, err, errlen);
}

static void unload_module(void)
{
    if (tls_slot && info->worker_fini)
        info->worker_fini(mstate, tls_slot);
    tls_slot = NULL;
    info->fini(mstate);
    mstate = NULL;
}

/* Loads with an authorizer script and the test's limits. */
static void load_authz(const char *path)
{
    char err[512];
    int rc = load_module(err, sizeof err, "authorizer.script", path, "memory.limit.bytes", "8388608",
                         "instruction.limit", "1000000", NULL);
    if (rc != SAMSA_OK)
        fail_msg("init: %s", err);
    assert_non_null(authz_vt);
    assert_non_null(part_vt);
}

struct req {
    const char *principal, *listener;
    int16_t api;
    int op, rt;
    const char *name;
};

static uint8_t last_uncacheable;

static int authorize(struct req r)
{
    samsa_authz_ctx_t ctx = {
        .struct_size = sizeof ctx,
        .principal = r.principal ? r.principal : "User:alice",
        .client_host = "127.0.0.1",
        .listener = r.listener ? r.listener : "SASL_PLAINTEXT",
        .client_id = "cid",
        .api_key = r.api,
        .api_version = 9,
    };
    uint8_t unc = 0;
    ctx.uncacheable = &unc;
    samsa_authz_action_t a = {.operation = r.op ? r.op : 4, .resource_type = r.rt ? r.rt : 2,
                              .resource_name = r.name ? r.name : "t"};
    uint8_t res = 0xff;
    assert_int_equal(authz_vt->authorize(cap_state, &ctx, &a, 1, &res), SAMSA_OK);
    last_uncacheable = unc;
    return res;
}

#define AUTHZ(...) authorize((struct req){__VA_ARGS__})
enum { OP_READ = 3, OP_WRITE = 4, OP_CREATE = 5, OP_ALTER = 7, OP_DESCRIBE = 8, OP_IDEMPOTENT_WRITE = 12 };
enum { RT_TOPIC = 2, RT_GROUP = 3, RT_CLUSTER = 4, RT_TXN = 5 };

static int setup(void **st)
{
    (void)st;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/samsa-lua-test.XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- the authorizer ---- */

static void test_fields_and_answers(void **st)
{
    (void)st;
    const char *path = write_script("fields.lua",
        "function authorize(r)\n"
        "  assert(r.principal == 'User:alice', r.principal)\n"
        "  assert(r.host == '127.0.0.1' and r.listener == 'SASL_PLAINTEXT')\n"
        "  assert(r.security_protocol == 'SASL_PLAINTEXT', r.security_protocol)\n"
        "  assert(r.client_id == 'cid' and r.api == 'Produce' and r.api_version == 9)\n"
        "  assert(r.operation == 'WRITE' and r.resource_type == 'TOPIC', r.operation)\n"
        "  assert(r.pattern_type == (r.resource_name and 'LITERAL' or 'ANY'))\n"
        "  assert(broker.node_id == 7 and broker.rack == 'r1', 'facts')\n"
        "  assert(broker.listeners[1] == 'SASL_PLAINTEXT' and broker.listeners[2] == 'INTERNAL')\n"
        "  assert(not pcall(function() broker.rack = 'x' end), 'broker is read-only')\n"
        "  if r.resource_name == 'allow' then return true end\n"
        "  if r.resource_name == 'deny' then return false end\n"
        "  if r.resource_name == 'nocache' then r.cacheable = false return true end\n"
        "  return nil\n"
        "end\n");
    load_authz(path);
    assert_int_equal(AUTHZ(.name = "allow"), SAMSA_AUTHZ_ALLOW);
    assert_int_equal(last_uncacheable, 0);
    assert_int_equal(AUTHZ(.name = "deny"), SAMSA_AUTHZ_DENY);
    assert_int_equal(AUTHZ(.name = "other"), SAMSA_AUTHZ_DEFER);
    assert_int_equal(AUTHZ(.name = "nocache"), SAMSA_AUTHZ_ALLOW);
    assert_int_equal(last_uncacheable, 1);
    assert_int_equal(metric_vals[0], 0);
    /* a field that does not match: the assert fails, the action is denied */
    assert_int_equal(AUTHZ(.name = "allow", .api = 1), SAMSA_AUTHZ_DENY);
    assert_int_equal(metric_vals[0], 1);
    assert_non_null(strstr(logs, "fields.lua:5:"));
    /* a batch: one answer per action */
    samsa_authz_ctx_t ctx = {.struct_size = SAMSA_AUTHZ_CTX_SIZE_1_0, .principal = "User:alice",
                             .client_host = "127.0.0.1", .listener = "SASL_PLAINTEXT", .client_id = "cid",
                             .api_version = 9};
    samsa_authz_action_t a[3] = {{4, 2, "allow", 0, 0}, {4, 2, "deny", 0, 0}, {4, 2, "x", 0, 0}};
    uint8_t res[3];
    assert_int_equal(authz_vt->authorize(cap_state, &ctx, a, 3, res), SAMSA_OK);
    assert_int_equal(res[0], SAMSA_AUTHZ_ALLOW);
    assert_int_equal(res[1], SAMSA_AUTHZ_DENY);
    assert_int_equal(res[2], SAMSA_AUTHZ_DEFER);
    unload_module();
}

static const char escapes_lua[] =
    "local cases = {}\n"
    "cases.io = function() return io.open('/etc/passwd') ~= nil end\n"
    "cases.os = function() os.execute('touch /tmp/samsa-lua-pwned') return true end\n"
    "cases.require = function() require('os') return true end\n"
    "cases.dofile = function() dofile('/etc/passwd') return true end\n"
    "cases.loadfile = function() return loadfile('/etc/passwd') ~= nil end\n"
    "cases.debug = function() debug.sethook() return true end\n"
    "cases.package = function() return package.loadlib ~= nil end\n"
    "cases.bytecode = function()\n"
    "  local f, e = load('\\27LuaT\\0\\25\\147\\13\\10\\26\\10', 'x', 'b')\n"
    "  if f then return true end\n"
    "  error(e)\n"
    "end\n"
    "cases.dump = function() return load(string.dump(function() return true end))() end\n"
    "cases.rep = function() local s = string.rep('x', 1 << 30) return #s > 0 end\n"
    "cases.grow = function() local t = {} for i = 1, 1e9 do t[i] = {i} end return true end\n"
    "cases.concat = function() local s = 'x' while true do s = s .. s end end\n"
    "cases.loop = function() while true do end end\n"
    "cases.pcall_loop = function()\n"
    "  for i = 1, 100 do pcall(function() while true do end end) end\n"
    "  return true\n"
    "end\n"
    "cases.xpcall_loop = function()\n"
    "  xpcall(function() while true do end end, function() while true do end end)\n"
    "  return true\n"
    "end\n"
    "cases.recursion = function() local function f(n) return 1 + f(n + 1) end return f(1) > 0 end\n"
    "cases.coroutine = function()\n"
    "  local co = coroutine.wrap(function() while true do coroutine.yield() end end)\n"
    "  co() return true\n"
    "end\n"
    "cases.error = function() error('boom') end\n"
    "cases.type = function() return 'yes' end\n"
    "cases.gcstop = function() collectgarbage('stop') return true end\n"
    "cases.gcmeta = function() setmetatable({}, {__gc = function() while true do end end}) return true end\n"
    "cases.strmeta = function() getmetatable('').__index = {} return true end\n"
    "cases.facts = function() broker.node_id = 99 return true end\n"
    "cases.globals = function() _G.authorize = function() return true end error('replaced') end\n"
    "function authorize(r)\n"
    "  if r.resource_name == 'ok' then return true end\n"
    "  return cases[r.resource_name]()\n"
    "end\n";

static void test_escapes(void **st)
{
    (void)st;
    const char *path = write_script("escapes.lua", escapes_lua);
    load_authz(path);
    static const char *const cases[] = {
        "io", "os", "require", "dofile", "loadfile", "debug", "package", "bytecode", "dump",
        "rep", "grow", "concat", "loop", "pcall_loop", "xpcall_loop", "recursion", "coroutine", "error",
        "type", "gcstop", "gcmeta", "strmeta", "facts",
    };
    if (AUTHZ(.name = "ok") != SAMSA_AUTHZ_ALLOW)
        fail_msg("ok: %s", logs);
    int64_t t0 = fake_mono();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t before = metric_vals[0];
        int got = AUTHZ(.name = cases[i]);
        if (got != SAMSA_AUTHZ_DENY)
            fail_msg("case %s: got %d, want DENY", cases[i], got);
        if (metric_vals[0] != before + 1)
            fail_msg("case %s: not counted as an error", cases[i]);
        /* the same state serves the next call */
        if (AUTHZ(.name = "ok") != SAMSA_AUTHZ_ALLOW)
            fail_msg("case %s: the next call was not served", cases[i]);
    }
    assert_int_equal(access("/tmp/samsa-lua-pwned", F_OK), -1);
    /* a script replacing its own authorize only changes its own state */
    assert_int_equal(AUTHZ(.name = "globals"), SAMSA_AUTHZ_DENY);
    assert_int_equal(AUTHZ(.name = "ok"), SAMSA_AUTHZ_ALLOW);
    /* one line, rate-limited, naming the script and the line */
    assert_non_null(strstr(logs, "authorizer script: authorize failed, denying: "));
    assert_non_null(strstr(logs, "escapes.lua:2:"));
    int lines = 0;
    for (const char *p = logs; (p = strchr(p, '\n')); p++)
        lines++;
    /* at most one line per second (and the first) */
    assert_true(lines <= 2 + (fake_mono() - t0) / 1000000000);
    unload_module();
}

/* Each kind of cut-off names the script and line, logged one by one. */
static void test_error_lines(void **st)
{
    (void)st;
    const char *path = write_script("lines.lua",
        "function authorize(r)\n"
        "  if r.resource_name == 'loop' then\n"
        "    while true do end\n"
        "  elseif r.resource_name == 'mem' then\n"
        "    local s = string.rep('x', 1 << 28)\n"
        "  elseif r.resource_name == 'rep' then\n"
        "    return string.rep()\n"
        "  end\n"
        "  return 42\n"
        "end\n");
    struct {
        const char *name, *want;
    } c[] = {
        {"loop", "lines.lua:3: instruction limit (1000000) exceeded"},
        {"mem", "lines.lua:5: memory limit (8388608 bytes) exceeded"},
        {"rep", "lines.lua:7: bad argument #1 to 'rep'"},
        {"x", "lines.lua:1: authorize returned a number (want true, false or nil)"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        load_authz(path); /* a fresh module: a fresh rate limit */
        assert_int_equal(AUTHZ(.name = c[i].name), SAMSA_AUTHZ_DENY);
        if (!strstr(logs, c[i].want))
            fail_msg("case %s: log\n%s\nlacks \"%s\"", c[i].name, logs, c[i].want);
        unload_module();
    }
}

static void test_no_script_denies(void **st)
{
    (void)st;
    char err[512];
    assert_int_equal(load_module(err, sizeof err, NULL), SAMSA_OK);
    assert_int_equal(AUTHZ(.name = "t"), SAMSA_AUTHZ_DENY);
    assert_int_equal(last_uncacheable, 1);
    assert_int_equal(part_vt->partition(cap_state, "t", (const uint8_t *)"k", 1, 3), SAMSA_PARTITION_DEFER);
    assert_non_null(strstr(logs, "no script"));
    unload_module();
    /* a configured script that does not compile refuses the module */
    const char *bad = write_script("bad.lua", "function authorize(r) return true\n");
    assert_int_not_equal(load_module(err, sizeof err, "authorizer.script", bad, NULL), SAMSA_OK);
    assert_non_null(strstr(err, "bad.lua:2:"));
    const char *noentry = write_script("noentry.lua", "function authorise(r) return true end\n");
    assert_int_not_equal(load_module(err, sizeof err, "authorizer.script", noentry, NULL), SAMSA_OK);
    assert_non_null(strstr(err, "defines no function authorize"));
    assert_int_not_equal(load_module(err, sizeof err, "instruction.limit", "lots", NULL), SAMSA_OK);
    assert_non_null(strstr(err, "plugin.lua.instruction.limit"));
}

struct thread_arg {
    int calls, allowed, denied;
    int want_after; /* the answer expected once the main thread reloaded */
    pthread_barrier_t *go, *reloaded, *checked;
};

static void *reload_thread(void *p)
{
    struct thread_arg *a = p;
    assert_int_equal(AUTHZ(.name = "x"), SAMSA_AUTHZ_ALLOW);
    pthread_barrier_wait(a->go);
    pthread_barrier_wait(a->reloaded);
    a->want_after = AUTHZ(.name = "x");
    pthread_barrier_wait(a->checked);
    if (tls_slot)
        info->worker_fini(mstate, tls_slot);
    tls_slot = NULL;
    return NULL;
}

static void test_reload(void **st)
{
    (void)st;
    const char *path = write_script("reload.lua", "function authorize(r) return true end\n");
    load_authz(path);
    pthread_barrier_t go, reloaded, checked;
    pthread_barrier_init(&go, NULL, 2);
    pthread_barrier_init(&reloaded, NULL, 2);
    pthread_barrier_init(&checked, NULL, 2);
    struct thread_arg ta = {.go = &go, .reloaded = &reloaded, .checked = &checked};
    pthread_t t;
    pthread_create(&t, NULL, reload_thread, &ta);
    pthread_barrier_wait(&go);
    assert_int_equal(AUTHZ(.name = "x"), SAMSA_AUTHZ_ALLOW);

    /* broken: syntax, no entry, an error at load, an endless top level */
    static const char *const broken[] = {
        "function authorize(r) return false\n",
        "function other(r) return false end\n",
        "error('no')\nfunction authorize(r) return false end\n",
        "while true do end\n",
    };
    char err[512];
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        write_script("reload.lua", broken[i]);
        assert_int_not_equal(info->reload(mstate, err, sizeof err), SAMSA_OK);
        assert_non_null(strstr(err, "reload.lua"));
        assert_non_null(strstr(err, "the old script stays in force"));
        assert_int_equal(AUTHZ(.name = "x"), SAMSA_AUTHZ_ALLOW);
    }
    /* good: this thread and the other switch */
    write_script("reload.lua", "function authorize(r) return false end\n");
    assert_int_equal(info->reload(mstate, err, sizeof err), SAMSA_OK);
    assert_int_equal(AUTHZ(.name = "x"), SAMSA_AUTHZ_DENY);
    pthread_barrier_wait(&reloaded);
    pthread_barrier_wait(&checked);
    pthread_join(t, NULL);
    assert_int_equal(ta.want_after, SAMSA_AUTHZ_DENY);
    pthread_barrier_destroy(&go);
    pthread_barrier_destroy(&reloaded);
    pthread_barrier_destroy(&checked);
    unload_module();
}

/* Per-thread state: each thread counts its own calls in a Lua global. */
static void *count_thread(void *p)
{
    struct thread_arg *a = p;
    for (int i = 0; i < a->calls; i++) {
        int r = AUTHZ(.name = "x");
        if (r == SAMSA_AUTHZ_ALLOW)
            a->allowed++;
        else
            a->denied++;
    }
    if (tls_slot)
        info->worker_fini(mstate, tls_slot);
    tls_slot = NULL;
    return NULL;
}

static void test_threads(void **st)
{
    (void)st;
    /* allows the first 500 calls of each thread, denies the rest */
    const char *path = write_script("count.lua",
                                    "local n = 0\n"
                                    "function authorize(r) n = n + 1 return n <= 500 end\n");
    load_authz(path);
    enum { N = 4 };
    pthread_t t[N];
    struct thread_arg a[N];
    for (int i = 0; i < N; i++) {
        a[i] = (struct thread_arg){.calls = 800};
        pthread_create(&t[i], NULL, count_thread, &a[i]);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(a[i].allowed, 500);
        assert_int_equal(a[i].denied, 300);
    }
    unload_module();
}

/* ---- the example policies (lua/authz) ---- */

static void test_example_tenant(void **st)
{
    (void)st;
    load_authz(LUA_DIR "/authz/tenant.lua");
    assert_int_equal(AUTHZ(.principal = "User:alice", .op = OP_WRITE, .name = "alice.orders"), SAMSA_AUTHZ_ALLOW);
    assert_int_equal(AUTHZ(.principal = "User:alice", .op = OP_READ, .rt = RT_GROUP, .name = "alice.g"),
                     SAMSA_AUTHZ_ALLOW);
    assert_int_equal(AUTHZ(.principal = "User:alice", .op = OP_WRITE, .rt = RT_TXN, .name = "alice.tx"),
                     SAMSA_AUTHZ_ALLOW);
    assert_int_equal(AUTHZ(.principal = "User:alice", .op = OP_WRITE, .name = "bob.orders"), SAMSA_AUTHZ_DENY);
    assert_int_equal(AUTHZ(.principal = "User:alice", .op = OP_DESCRIBE, .name = "alice"), SAMSA_AUTHZ_DENY);
    assert_int_equal(AUTHZ(.principal = "User:alice", .op = OP_DESCRIBE, .name = "aliceX.t"), SAMSA_AUTHZ_DENY);
    assert_int_equal(AUTHZ(.principal = "User:tenant-a", .op = OP_READ, .name = "tenant-a.x"), SAMSA_AUTHZ_ALLOW);
    assert_int_equal(AUTHZ(.principal = "User:tenant-a", .op = OP_READ, .name = "tenant-b.x"), SAMSA_AUTHZ_DENY);
    assert_int_equal(AUTHZ(.principal = "User:alice", .op = OP_IDEMPOTENT_WRITE, .rt = RT_CLUSTER,
                           .name = "kafka-cluster"),
                     SAMSA_AUTHZ_ALLOW);
    assert_int_equal(AUTHZ(.principal = "User:alice", .op = OP_ALTER, .rt = RT_CLUSTER, .name = "kafka-cluster"),
                     SAMSA_AUTHZ_DENY);
    assert_int_equal(AUTHZ(.principal = "User:admin", .op = OP_ALTER, .rt = RT_CLUSTER, .name = "kafka-cluster"),
                     SAMSA_AUTHZ_DEFER);
    assert_int_equal(AUTHZ(.principal = "User:ANONYMOUS", .op = OP_READ, .name = "ANONYMOUS.x"), SAMSA_AUTHZ_DENY);
    /* authorizeByResourceType: a NULL name, "may alice write some topic?" */
    samsa_authz_ctx_t ctx = {.struct_size = sizeof ctx, .principal = "User:alice", .listener = "SASL_PLAINTEXT"};
    samsa_authz_action_t any = {.operation = OP_WRITE, .resource_type = RT_TOPIC, .resource_name = NULL};
    uint8_t res = 0xff;
    assert_int_equal(authz_vt->authorize(cap_state, &ctx, &any, 1, &res), SAMSA_OK);
    assert_int_equal(res, SAMSA_AUTHZ_ALLOW);
    assert_int_equal(metric_vals[0], 0);
    unload_module();
}

static void test_example_readonly(void **st)
{
    (void)st;
    load_authz(LUA_DIR "/authz/readonly.lua");
    assert_int_equal(AUTHZ(.principal = "User:auditor", .op = OP_READ, .name = "x"), SAMSA_AUTHZ_ALLOW);
    assert_int_equal(AUTHZ(.principal = "User:auditor", .op = OP_DESCRIBE, .name = "x"), SAMSA_AUTHZ_ALLOW);
    assert_int_equal(AUTHZ(.principal = "User:auditor", .op = OP_READ, .rt = RT_GROUP, .name = "g"),
                     SAMSA_AUTHZ_ALLOW);
    assert_int_equal(AUTHZ(.principal = "User:auditor", .op = OP_WRITE, .name = "x"), SAMSA_AUTHZ_DENY);
    assert_int_equal(AUTHZ(.principal = "User:auditor", .op = OP_CREATE, .name = "x"), SAMSA_AUTHZ_DENY);
    assert_int_equal(AUTHZ(.principal = "User:alice", .op = OP_WRITE, .name = "x"), SAMSA_AUTHZ_DEFER);
    assert_int_equal(metric_vals[0], 0);
    unload_module();
}

/* The maintenance example with its window moved around the current
 * minute (inside) or away from it (outside). */
static const char *maintenance_variant(const char *name, int start_off_min, int len_min)
{
    char *src = read_text(LUA_DIR "/authz/maintenance.lua");
    const char *line = "WINDOW = { start = \"02:00\", stop = \"03:00\" }";
    char *at = strstr(src, line);
    assert_non_null(at);
    time_t now = time(NULL);
    int m = (int)((now / 60) % 1440);
    int a = ((m + start_off_min) % 1440 + 1440) % 1440, b = (a + len_min) % 1440;
    char repl[128];
    snprintf(repl, sizeof repl, "WINDOW = { start = \"%02d:%02d\", stop = \"%02d:%02d\" }", a / 60, a % 60, b / 60,
             b % 60);
    size_t outlen = strlen(src) + 64;
    char *out = malloc(outlen);
    snprintf(out, outlen, "%.*s%s%s", (int)(at - src), src, repl, at + strlen(line));
    const char *p = write_script(name, out);
    free(out);
    free(src);
    return p;
}

static void test_example_maintenance(void **st)
{
    (void)st;
    load_authz(maintenance_variant("inside.lua", -1, 3));
    assert_int_equal(AUTHZ(.op = OP_WRITE, .name = "x"), SAMSA_AUTHZ_DENY);
    assert_int_equal(last_uncacheable, 1);
    assert_int_equal(AUTHZ(.op = OP_IDEMPOTENT_WRITE, .rt = RT_CLUSTER, .name = "kafka-cluster"), SAMSA_AUTHZ_DENY);
    assert_int_equal(AUTHZ(.op = OP_READ, .name = "x"), SAMSA_AUTHZ_DEFER);
    assert_int_equal(last_uncacheable, 1);
    unload_module();
    load_authz(maintenance_variant("outside.lua", 10, 60));
    assert_int_equal(AUTHZ(.op = OP_WRITE, .name = "x"), SAMSA_AUTHZ_DEFER);
    assert_int_equal(last_uncacheable, 1);
    unload_module();
    /* a window across midnight holds the minutes on both sides */
    load_authz(maintenance_variant("midnight.lua", -1440 + 1, 1438));
    assert_int_equal(AUTHZ(.op = OP_WRITE, .name = "x"), SAMSA_AUTHZ_DEFER);
    unload_module();
    assert_int_equal(metric_vals[0], 0);
}

static void test_example_listeners(void **st)
{
    (void)st;
    load_authz(LUA_DIR "/authz/listeners.lua");
    /* INTERNAL maps to PLAINTEXT, but it is trusted */
    assert_int_equal(AUTHZ(.listener = "INTERNAL", .op = OP_ALTER, .rt = RT_CLUSTER, .name = "kafka-cluster"),
                     SAMSA_AUTHZ_ALLOW);
    assert_int_equal(AUTHZ(.listener = "PLAINTEXT", .op = OP_READ, .name = "x"), SAMSA_AUTHZ_DENY);
    assert_int_equal(AUTHZ(.listener = "SASL_PLAINTEXT", .op = OP_READ, .name = "x"), SAMSA_AUTHZ_DEFER);
    assert_int_equal(AUTHZ(.listener = "SASL_PLAINTEXT", .op = OP_ALTER, .rt = RT_CLUSTER, .name = "kafka-cluster"),
                     SAMSA_AUTHZ_DENY);
    assert_int_equal(AUTHZ(.listener = "SASL_PLAINTEXT", .op = OP_IDEMPOTENT_WRITE, .rt = RT_CLUSTER,
                           .name = "kafka-cluster"),
                     SAMSA_AUTHZ_DEFER);
    assert_int_equal(metric_vals[0], 0);
    unload_module();
}

/* ---- the partitioner (lua/partitioners) ---- */

static void load_part(const char *path)
{
    char err[512];
    int rc = load_module(err, sizeof err, "partitioner.script", path, "instruction.limit", "100000", NULL);
    if (rc != SAMSA_OK)
        fail_msg("init: %s", err);
    assert_non_null(part_vt);
    assert_non_null(part_vt->partition_record);
}

static int32_t part(const char *key, const char *value, int32_t n)
{
    return part_vt->partition_record(cap_state, "t", (const uint8_t *)key, key ? (int32_t)strlen(key) : -1,
                                     (const uint8_t *)value, value ? (int32_t)strlen(value) : -1, n);
}

/* Kafka's UtilsTest.testMurmur2 vectors: the example agrees with the
 * Java client (toPositive(murmur2) % n, with n = 2^31 - 1 the hash
 * itself shows through). */
static uint32_t fnv1a(const char *s, size_t n);

static void check_murmur2_vectors(void)
{
    static const struct {
        const char *key;
        int32_t hash;
    } v[] = {
        {"21", -973932308},
        {"foobar", -790332482},
        {"a-little-bit-long-string", -985981536},
        {"a-little-bit-longer-string", -1486304829},
        {"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
        {"abc", 479470107},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        int32_t want = (v[i].hash & 0x7fffffff) % INT32_MAX;
        assert_int_equal(part(v[i].key, NULL, INT32_MAX), want);
        assert_int_equal(part(v[i].key, "value", 12), (v[i].hash & 0x7fffffff) % 12);
        assert_int_equal(part_vt->partition(cap_state, "t", (const uint8_t *)v[i].key, (int32_t)strlen(v[i].key), 7),
                         (v[i].hash & 0x7fffffff) % 7);
    }
    assert_int_equal(part(NULL, "v", 3), SAMSA_PARTITION_DEFER);
    assert_int_equal(metric_vals[1], 0);
}

static void test_partitioner_murmur2(void **st)
{
    (void)st;
    load_part(LUA_DIR "/partitioners/murmur2.lua");
    check_murmur2_vectors();
    unload_module();
    /* The pure-Lua fallback, for a host without samsa.murmur2. */
    char *src = read_text(LUA_DIR "/partitioners/murmur2.lua");
    size_t n = strlen(src) + 32;
    char *out = malloc(n);
    snprintf(out, n, "samsa = nil\n%s", src);
    const char *path = write_script("murmur2-fallback.lua", out);
    free(out);
    free(src);
    load_part(path);
    check_murmur2_vectors();
    unload_module();
}

/* The C hashes in the read-only `samsa` table: values, argument checks
 * (an error falls back to the default), and that a script cannot
 * replace them. */
static void test_partitioner_hash_helpers(void **st)
{
    (void)st;
    const char *path = write_script("hashes.lua",
        "function partition(topic, key, value, n)\n"
        "  if key == 'ro' then samsa.murmur2 = function() return 0 end end\n"
        "  if key == 'badarg' then return samsa.murmur2({}) % n end\n"
        "  assert(samsa.murmur2('21') == (-973932308 & 0xffffffff))\n"
        "  assert(samsa.murmur2('') == 275646681)\n"
        "  assert(samsa.murmur2(21) == samsa.murmur2('21'))\n"
        "  assert(samsa.fnv1a('') == 2166136261 and samsa.fnv1a('a') == 0xe40c292c)\n"
        "  assert(samsa.fnv1a('acme') == tonumber(value))\n"
        "  return samsa.murmur2(key) % n\n"
        "end\n");
    load_part(path);
    char acme[16];
    snprintf(acme, sizeof acme, "%u", (unsigned)fnv1a("acme", 4));
    assert_int_equal(part("foobar", acme, 1000), (int32_t)((uint32_t)-790332482 % 1000));
    assert_int_equal(metric_vals[1], 0);
    assert_int_equal(part("ro", acme, 4), SAMSA_PARTITION_DEFER);
    assert_int_equal(part("badarg", acme, 4), SAMSA_PARTITION_DEFER);
    assert_int_equal(metric_vals[1], 2);
    assert_int_equal(part("foobar", acme, 1000), (int32_t)((uint32_t)-790332482 % 1000));
    unload_module();
}

static uint32_t fnv1a(const char *s, size_t n)
{
    uint32_t h = 0x811c9dc5u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 0x01000193u;
    return h;
}

static void test_partitioner_examples(void **st)
{
    (void)st;
    load_part(LUA_DIR "/partitioners/prefix.lua");
    assert_int_equal(part("eu-17", NULL, 3), 0);
    assert_int_equal(part("us-17", NULL, 3), 1);
    assert_int_equal(part("ap-17", NULL, 3), 2);
    assert_int_equal(part("ap-17", NULL, 2), 0);
    assert_int_equal(part("xx-17", NULL, 3), SAMSA_PARTITION_DEFER);
    assert_int_equal(part(NULL, "eu-1", 3), SAMSA_PARTITION_DEFER);
    unload_module();

    load_part(LUA_DIR "/partitioners/tenant.lua");
    int32_t acme = (int32_t)(fnv1a("acme", 4) % 10);
    assert_int_equal(part("acme:order-1", NULL, 10), acme);
    assert_int_equal(part("acme:order-2", "x", 10), acme);
    assert_int_equal(part(NULL, "acme:payload", 10), acme);
    assert_int_equal(part("globex:1", NULL, 10), (int32_t)(fnv1a("globex", 6) % 10));
    assert_int_equal(part("no-tenant", NULL, 10), SAMSA_PARTITION_DEFER);
    assert_int_equal(part(NULL, NULL, 10), SAMSA_PARTITION_DEFER);
    assert_int_equal(metric_vals[1], 0);
    unload_module();
}

/* Wrong answers fall back to the default (DEFER), counted and logged. */
static void test_partitioner_errors(void **st)
{
    (void)st;
    const char *path = write_script("perr.lua",
        "function partition(topic, key, value, n)\n"
        "  if key == 'range' then return n end\n"
        "  if key == 'neg' then return -1 end\n"
        "  if key == 'str' then return '1' end\n"
        "  if key == 'float' then return 1.5 end\n"
        "  if key == 'loop' then while true do end end\n"
        "  if key == 'err' then error('no') end\n"
        "  assert(topic == 't' and value == 'v' and n == 4)\n"
        "  return 3\n"
        "end\n");
    load_part(path);
    static const char *const bad[] = {"range", "neg", "str", "float", "loop", "err"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(part(bad[i], "v", 4), SAMSA_PARTITION_DEFER);
        assert_int_equal(metric_vals[1], (int64_t)i + 1);
        assert_int_equal(part("good", "v", 4), 3);
    }
    assert_non_null(strstr(logs, "partitioner script: partition failed, using the default partitioner: "));
    assert_non_null(strstr(logs, "partition returned 4, not within [0, 4)"));
    assert_int_equal(part_vt->partition(cap_state, "t", (const uint8_t *)"good", 4, 0), SAMSA_PARTITION_DEFER);
    unload_module();
}

/* ---- through the real registry ---- */

static void test_registry_reload(void **st)
{
    (void)st;
    const char *path = write_script("reg.lua", "function authorize(r) return r.resource_name == 'a' end\n");
    struct samsa_config *cfg = config_new();
    char err[512];
    assert_int_equal(config_set(cfg, "plugin.lua.authorizer.script", path, err, sizeof err), 0);
    struct plugin_registry *reg = plugin_registry_new(cfg);
    if (access(MODULE_DIR "/lua.so", F_OK) != 0)
        skip();
    if (plugin_load_file(reg, MODULE_DIR "/lua.so", "lua", err, sizeof err) != 0)
        fail_msg("%s", err);
    const struct plugin_cap *c = plugin_find(reg, SAMSA_CAP_AUTHORIZER, "lua");
    assert_non_null(c);
    assert_non_null(plugin_find(reg, SAMSA_CAP_PARTITIONER, "lua"));
    samsa_authz_ctx_t ctx = {.struct_size = sizeof ctx, .principal = "User:x", .listener = "PLAINTEXT"};
    samsa_authz_action_t a[2] = {{3, 2, "a", 0, 0}, {3, 2, "b", 0, 0}};
    uint8_t res[2];
    assert_int_equal(c->vt.authorizer.authorize(c->state, &ctx, a, 2, res), SAMSA_OK);
    assert_int_equal(res[0], SAMSA_AUTHZ_ALLOW);
    assert_int_equal(res[1], SAMSA_AUTHZ_DENY);
    write_script("reg.lua", "function authorize(r) return r.resource_name == 'b' end\n");
    assert_int_equal(plugin_registry_generation(reg), 0);
    assert_int_equal(plugin_registry_reload(reg), 0);
    assert_int_equal(plugin_registry_generation(reg), 1);
    assert_int_equal(c->vt.authorizer.authorize(c->state, &ctx, a, 2, res), SAMSA_OK);
    assert_int_equal(res[0], SAMSA_AUTHZ_DENY);
    assert_int_equal(res[1], SAMSA_AUTHZ_ALLOW);
    write_script("reg.lua", "function authorize(r) return r.resource_name == \n");
    assert_int_equal(plugin_registry_reload(reg), 1);
    assert_int_equal(plugin_registry_generation(reg), 1);
    assert_int_equal(c->vt.authorizer.authorize(c->state, &ctx, a, 2, res), SAMSA_OK);
    assert_int_equal(res[1], SAMSA_AUTHZ_ALLOW);
    plugin_registry_free(reg);
    config_free(cfg);
}

/* plugin.lua.authorizer.script changed at run time (ABI 1.3): checked
 * without effect, refused with the script's error, applied. */
static void test_registry_reconfigure(void **st)
{
    (void)st;
    const char *first = write_script("rc1.lua", "function authorize(r) return r.resource_name == 'a' end\n");
    struct samsa_config *cfg = config_new();
    char err[512];
    assert_int_equal(config_set(cfg, "plugin.lua.authorizer.script", first, err, sizeof err), 0);
    struct plugin_registry *reg = plugin_registry_new(cfg);
    if (access(MODULE_DIR "/lua.so", F_OK) != 0)
        skip();
    if (plugin_load_file(reg, MODULE_DIR "/lua.so", "lua", err, sizeof err) != 0)
        fail_msg("%s", err);
    const struct plugin_cap *c = plugin_find(reg, SAMSA_CAP_AUTHORIZER, "lua");
    assert_non_null(c);
    samsa_authz_ctx_t ctx = {.struct_size = sizeof ctx, .principal = "User:x", .listener = "PLAINTEXT"};
    samsa_authz_action_t a[1] = {{3, 2, "b", 0, 0}};
    uint8_t res[1];
    const char *second = write_script("rc2.lua", "function authorize(r) return r.resource_name == 'b' end\n");
    const char *broken = write_script("rc3.lua", "function authorize(r) return\n");
    /* a check changes nothing */
    assert_int_equal(plugin_registry_reconfigure(reg, "plugin.lua.authorizer.script", second, true, err, sizeof err),
                     0);
    assert_int_equal(c->vt.authorizer.authorize(c->state, &ctx, a, 1, res), SAMSA_OK);
    assert_int_equal(res[0], SAMSA_AUTHZ_DENY);
    /* a broken script: refused with its error, in either mode */
    for (int validate = 1; validate >= 0; validate--) {
        assert_int_equal(
            plugin_registry_reconfigure(reg, "plugin.lua.authorizer.script", broken, validate, err, sizeof err), -1);
        assert_non_null(strstr(err, "plugin.lua.authorizer.script: "));
        assert_non_null(strstr(err, "rc3.lua:2: 'end' expected"));
    }
    assert_int_equal(plugin_registry_generation(reg), 0);
    /* applied */
    assert_int_equal(plugin_registry_reconfigure(reg, "plugin.lua.authorizer.script", second, false, err, sizeof err),
                     0);
    assert_int_equal(plugin_registry_generation(reg), 1);
    assert_int_equal(c->vt.authorizer.authorize(c->state, &ctx, a, 1, res), SAMSA_OK);
    assert_int_equal(res[0], SAMSA_AUTHZ_ALLOW);
    /* other keys, removal, plugins not loaded */
    assert_int_equal(plugin_registry_reconfigure(reg, "plugin.lua.instruction.limit", "5", true, err, sizeof err), -1);
    assert_string_equal(err, "plugin lua cannot change plugin.lua.instruction.limit at run time");
    assert_int_equal(plugin_registry_reconfigure(reg, "plugin.lua.authorizer.script", NULL, true, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot be removed at run time"));
    assert_int_equal(plugin_registry_reconfigure(reg, "plugin.other.x", "1", true, err, sizeof err), 0);
    plugin_registry_free(reg);
    config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields_and_answers),
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_error_lines),
        cmocka_unit_test(test_no_script_denies),
        cmocka_unit_test(test_reload),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_example_tenant),
        cmocka_unit_test(test_example_readonly),
        cmocka_unit_test(test_example_maintenance),
        cmocka_unit_test(test_example_listeners),
        cmocka_unit_test(test_partitioner_murmur2),
        cmocka_unit_test(test_partitioner_hash_helpers),
        cmocka_unit_test(test_partitioner_examples),
        cmocka_unit_test(test_partitioner_errors),
        cmocka_unit_test(test_registry_reload),
        cmocka_unit_test(test_registry_reconfigure),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
