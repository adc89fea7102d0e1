/* SPDX-License-Identifier: Apache-2.0
 *
 * samsa-partitioner.so: a librdkafka plugin that lets any librdkafka
 * client (confluent-kafka for Python/Go/.NET, ...) partition with a
 * samsa partitioner, without code changes:
 *
 *   plugin.library.paths=/path/samsa-partitioner.so
 *   samsa.partitioner.script=/path/policy.lua     (the lua module's
 *                                                  partitioner, built in)
 *   samsa.partitioner.module=/path/module.so      (any module with a
 *                                                  SAMSA_CAP_PARTITIONER)
 *
 * librdkafka calls conf_init when it loads the plugin; the plugin claims
 * the samsa.partitioner.* properties through an on_conf_set interceptor,
 * loads the partitioner into a small samsa host of its own (the same ABI
 * checks as the server's loader, a thread-local slot per calling thread)
 * and installs it as the partitioner of the configuration's default
 * topic configuration (rd_kafka_topic_conf_set_partitioner_cb), which
 * every topic the client creates without a topic configuration of its
 * own copies. The partition callback gets no value from librdkafka, so
 * a Lua script sees value = nil here. When the partitioner defers (nil)
 * or answers out of range, librdkafka's default (consistent_random)
 * decides.
 *
 * A partitioner loaded for one path stays loaded for the life of the
 * process (as samsa never unloads plugins): configurations are copied
 * and destroyed freely, and a copy keeps pointing at the same
 * partitioner. At most MAX_PARTITIONERS different ones per process.
 * Needs only include/samsa, librdkafka and the lua module's sources. */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <librdkafka/rdkafka.h>

#include "samsa/partitioner.h"
#include "samsa/plugin.h"

#define MAX_PARTITIONERS 8
#define IC_NAME "samsa-partitioner"

/* The lua module, compiled into this plugin (-DSAMSA_PLUGIN_STATIC). */
const samsa_plugin_info_t *samsa_plugin_entry_lua(void);

/* ------------------------------------------------------------------ */
/* A small samsa host: one per loaded partitioner                      */

struct samsa_host {
    char key[512];   /* "script:PATH" or "module:PATH" */
    char script[512]; /* plugin config partitioner.script, "" if none */
    const samsa_plugin_info_t *info;
    void *state;
    samsa_partitioner_t vt; /* zero-extended copy */
    void *cap_state;
    bool have_cap;
    pthread_key_t tls;
};

static void host_log(samsa_host_t *h, int level, const char *fmt, ...)
{
    if (level < SAMSA_LOG_WARN)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%%samsa-partitioner %s: %s\n", h->key, line);
}

static const char *host_config_get(samsa_host_t *h, const char *key)
{
    return strcmp(key, "partitioner.script") == 0 && h->script[0] ? h->script : NULL;
}

static int host_register(samsa_host_t *h, const samsa_cap_hdr_t *cap, void *cap_state)
{
    if (!cap || cap->kind != SAMSA_CAP_PARTITIONER)
        return SAMSA_OK; /* other kinds are of no use here: accepted, unused */
    if (h->have_cap)
        return SAMSA_OK; /* the first partitioner of the module serves */
    if (cap->struct_size < SAMSA_PARTITIONER_SIZE_1_0)
        return SAMSA_EINVAL;
    size_t n = cap->struct_size < sizeof h->vt ? cap->struct_size : sizeof h->vt;
    memset(&h->vt, 0, sizeof h->vt);
    memcpy(&h->vt, cap, n);
    if (!h->vt.partition)
        return SAMSA_EINVAL;
    h->cap_state = cap_state;
    h->have_cap = true;
    return SAMSA_OK;
}

static samsa_metric_t *host_metric_register(samsa_host_t *h, const char *name, int type, const char *help)
{
    (void)h, (void)name, (void)type, (void)help;
    return NULL;
}

static void host_metric_noop(samsa_metric_t *m, int64_t v) { (void)m, (void)v; }

static int64_t host_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t host_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *host_alloc(size_t n) { return malloc(n ? n : 1); }
static void *host_realloc(void *p, size_t n) { return realloc(p, n ? n : 1); }

struct slot {
    struct samsa_host *h;
    void *v;
};

static void tls_destroy(void *p)
{
    struct slot *s = p;
    if (s->v && s->h->info->worker_fini)
        s->h->info->worker_fini(s->h->state, s->v);
    free(s);
}

static void **host_worker_local(samsa_host_t *h)
{
    struct slot *s = pthread_getspecific(h->tls);
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s)
            abort(); /* the API promises a slot; nothing sane is left */
        s->h = h;
        pthread_setspecific(h->tls, s);
    }
    return &s->v;
}

static void host_complete(samsa_async_t *t, int status, const void *r, size_t n) { (void)t, (void)status, (void)r, (void)n; }

static const char *host_server_config_get(samsa_host_t *h, const char *key) { (void)h, (void)key; return NULL; }

static int host_scram(samsa_host_t *h, int mech, const char *user, struct samsa_scram_credential *c)
{
    (void)h, (void)mech, (void)user, (void)c;
    return SAMSA_EUNSUPPORTED;
}

static const samsa_host_api_t host_api = {
    .struct_size = sizeof(samsa_host_api_t),
    .abi_major = SAMSA_ABI_MAJOR,
    .abi_minor = SAMSA_ABI_MINOR,
    .log = host_log,
    .config_get = host_config_get,
    .register_capability = host_register,
    .metric_register = host_metric_register,
    .metric_add = host_metric_noop,
    .metric_set = host_metric_noop,
    .monotonic_ns = host_mono,
    .wall_ms = host_wall,
    .alloc = host_alloc,
    .realloc = host_realloc,
    .free = free,
    .worker_local = host_worker_local,
    .complete = host_complete,
    .server_config_get = host_server_config_get,
    .scram_credential_get = host_scram,
};

/* The server loader's checks (core/plugin/registry.c), in short. */
static int check_info(const samsa_plugin_info_t *d, char *err, size_t errlen)
{
    if (!d)
        snprintf(err, errlen, "samsa_plugin_entry returned no descriptor");
    else if (d->magic != SAMSA_PLUGIN_MAGIC)
        snprintf(err, errlen, "bad magic 0x%08x", (unsigned)d->magic);
    else if (d->abi_major != SAMSA_ABI_MAJOR || d->abi_minor > SAMSA_ABI_MINOR)
        snprintf(err, errlen, "built for ABI %u.%u, this plugin hosts %d.%d", (unsigned)d->abi_major,
                 (unsigned)d->abi_minor, SAMSA_ABI_MAJOR, SAMSA_ABI_MINOR);
    else if (d->struct_size < SAMSA_PLUGIN_INFO_SIZE_1_0 || d->build_sig != SAMSA_BUILD_SIG || !d->init)
        snprintf(err, errlen, "not binary compatible");
    else
        return 0;
    return -1;
}

/* ------------------------------------------------------------------ */
/* Loaded partitioners and their trampolines                           */

static pthread_mutex_t hosts_mu = PTHREAD_MUTEX_INITIALIZER;
static struct samsa_host *_Atomic hosts[MAX_PARTITIONERS];

static int32_t partition_with(int i, const rd_kafka_topic_t *rkt, const void *key, size_t keylen, int32_t cnt,
                              void *rkt_opaque, void *msg_opaque)
{
    struct samsa_host *h = atomic_load_explicit(&hosts[i], memory_order_acquire);
    int32_t p = SAMSA_PARTITION_DEFER;
    if (h && cnt > 0) {
        const char *topic = rd_kafka_topic_name(rkt);
        int32_t klen = key ? (int32_t)keylen : -1;
        p = h->vt.partition_record ? h->vt.partition_record(h->cap_state, topic, key, klen, NULL, -1, cnt)
                                   : h->vt.partition(h->cap_state, topic, key, klen, cnt);
    }
    if (p >= 0 && p < cnt)
        return p;
    return rd_kafka_msg_partitioner_consistent_random(rkt, key, keylen, cnt, rkt_opaque, msg_opaque);
}

#define TRAMPOLINE(i)                                                                                     \
    static int32_t partition_##i(const rd_kafka_topic_t *rkt, const void *key, size_t keylen, int32_t cnt, \
                                 void *ro, void *mo)                                                      \
    {                                                                                                     \
        return partition_with(i, rkt, key, keylen, cnt, ro, mo);                                          \
    }
TRAMPOLINE(0)
TRAMPOLINE(1)
TRAMPOLINE(2)
TRAMPOLINE(3)
TRAMPOLINE(4)
TRAMPOLINE(5)
TRAMPOLINE(6)
TRAMPOLINE(7)

typedef int32_t(partition_cb)(const rd_kafka_topic_t *, const void *, size_t, int32_t, void *, void *);
static partition_cb *const trampolines[MAX_PARTITIONERS] = {
    partition_0, partition_1, partition_2, partition_3, partition_4, partition_5, partition_6, partition_7,
};

/* The slot of the partitioner for (kind, path), loaded on first use.
 * Returns the slot, or -1 with err. */
static int load_partitioner(bool script, const char *path, char *err, size_t errlen)
{
    char key[512];
    snprintf(key, sizeof key, "%s:%s", script ? "script" : "module", path);
    pthread_mutex_lock(&hosts_mu);
    int free_slot = -1;
    for (int i = 0; i < MAX_PARTITIONERS; i++) {
        struct samsa_host *h = atomic_load_explicit(&hosts[i], memory_order_relaxed);
        if (h && strcmp(h->key, key) == 0) {
            pthread_mutex_unlock(&hosts_mu);
            return i;
        }
        if (!h && free_slot < 0)
            free_slot = i;
    }
    int rc = -1;
    if (free_slot < 0) {
        snprintf(err, errlen, "more than %d different samsa partitioners in one process", MAX_PARTITIONERS);
        goto out;
    }
    struct samsa_host *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    snprintf(h->key, sizeof h->key, "%s", key);
    const samsa_plugin_info_t *d;
    if (script) {
        snprintf(h->script, sizeof h->script, "%s", path);
        d = samsa_plugin_entry_lua();
    } else {
        void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        void *sym = dl ? dlsym(dl, "samsa_plugin_entry") : NULL;
        if (!sym) {
            snprintf(err, errlen, "%s: %s", path, dl ? "no entry symbol samsa_plugin_entry" : dlerror());
            if (dl)
                dlclose(dl);
            free(h);
            goto out;
        }
        const samsa_plugin_info_t *(*entry)(void);
        memcpy(&entry, &sym, sizeof entry);
        d = entry();
    }
    char why[256];
    if (check_info(d, why, sizeof why) < 0) {
        snprintf(err, errlen, "%s refused: %s", path, why);
        free(h);
        goto out;
    }
    h->info = d;
    if (pthread_key_create(&h->tls, tls_destroy) != 0) {
        snprintf(err, errlen, "out of thread-local keys");
        free(h);
        goto out;
    }
    why[0] = '\0';
    if (d->init(h, &host_api, &h->state, why, sizeof why) != SAMSA_OK) {
        snprintf(err, errlen, "%s: %s", path, why[0] ? why : "init failed");
        goto out; /* init ran: h stays (the plugin may point into it) */
    }
    if (!h->have_cap) {
        snprintf(err, errlen, "%s offers no partitioner", path);
        goto out;
    }
    atomic_store_explicit(&hosts[free_slot], h, memory_order_release);
    rc = free_slot;
out:
    pthread_mutex_unlock(&hosts_mu);
    return rc;
}

/* ------------------------------------------------------------------ */
/* The librdkafka side                                                 */

/* Per configuration object: which partitioner it installed (-1: none). */
struct conf_state {
    int slot;
};

static rd_kafka_conf_res_t on_conf_set(rd_kafka_conf_t *conf, const char *name, const char *val, char *errstr,
                                       size_t errstr_size, void *ic_opaque);
static rd_kafka_resp_err_t on_conf_dup(rd_kafka_conf_t *new_conf, const rd_kafka_conf_t *old_conf,
                                       size_t filter_cnt, const char **filter, void *ic_opaque);
static rd_kafka_resp_err_t on_conf_destroy(void *ic_opaque);

static void install(rd_kafka_conf_t *conf, int slot)
{
    rd_kafka_topic_conf_t *tc = rd_kafka_conf_get_default_topic_conf(conf);
    if (!tc) {
        tc = rd_kafka_topic_conf_new();
        rd_kafka_conf_set_default_topic_conf(conf, tc);
    }
    rd_kafka_topic_conf_set_partitioner_cb(tc, trampolines[slot]);
}

static rd_kafka_resp_err_t add_interceptors(rd_kafka_conf_t *conf, int slot)
{
    struct conf_state *st = calloc(1, sizeof *st);
    if (!st)
        return RD_KAFKA_RESP_ERR__FAIL;
    st->slot = slot;
    rd_kafka_conf_interceptor_add_on_conf_set(conf, IC_NAME, on_conf_set, st);
    rd_kafka_conf_interceptor_add_on_conf_dup(conf, IC_NAME, on_conf_dup, st);
    rd_kafka_conf_interceptor_add_on_conf_destroy(conf, IC_NAME, on_conf_destroy, st);
    return RD_KAFKA_RESP_ERR_NO_ERROR;
}

static rd_kafka_conf_res_t on_conf_set(rd_kafka_conf_t *conf, const char *name, const char *val, char *errstr,
                                       size_t errstr_size, void *ic_opaque)
{
    struct conf_state *st = ic_opaque;
    bool script = strcmp(name, "samsa.partitioner.script") == 0;
    if (!script && strcmp(name, "samsa.partitioner.module") != 0)
        return RD_KAFKA_CONF_UNKNOWN;
    if (!val || !*val) {
        snprintf(errstr, errstr_size, "%s: a path is required", name);
        return RD_KAFKA_CONF_INVALID;
    }
    int slot = load_partitioner(script, val, errstr, errstr_size);
    if (slot < 0)
        return RD_KAFKA_CONF_INVALID;
    st->slot = slot;
    install(conf, slot);
    return RD_KAFKA_CONF_OK;
}

static rd_kafka_resp_err_t on_conf_dup(rd_kafka_conf_t *new_conf, const rd_kafka_conf_t *old_conf,
                                       size_t filter_cnt, const char **filter, void *ic_opaque)
{
    (void)old_conf, (void)filter_cnt, (void)filter;
    struct conf_state *st = ic_opaque;
    rd_kafka_resp_err_t err = add_interceptors(new_conf, st->slot);
    if (!err && st->slot >= 0)
        install(new_conf, st->slot);
    return err;
}

static rd_kafka_resp_err_t on_conf_destroy(void *ic_opaque)
{
    free(ic_opaque);
    return RD_KAFKA_RESP_ERR_NO_ERROR;
}

/* librdkafka's plugin entry point. */
__attribute__((visibility("default"))) rd_kafka_resp_err_t conf_init(rd_kafka_conf_t *conf, void **plug_opaquep,
                                                                     char *errstr, size_t errstr_size);

rd_kafka_resp_err_t conf_init(rd_kafka_conf_t *conf, void **plug_opaquep, char *errstr, size_t errstr_size)
{
    (void)plug_opaquep;
    rd_kafka_resp_err_t err = add_interceptors(conf, -1);
    if (err)
        snprintf(errstr, errstr_size, "samsa-partitioner: out of memory");
    return err;
}
