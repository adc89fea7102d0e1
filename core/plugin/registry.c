/* Plugin loader, ABI checks, host API and the registry of capabilities.
 * See registry.h for the contract and include/samsa/plugin.h for the ABI.
 *
 * Ownership: the registry owns its plugin records, their copies of the
 * descriptor, config values and capability vtables. Plugin code and the
 * strings and vtables it hands over stay mapped for the life of the
 * process (no dlclose once init has run), so the registry may point into
 * them. */
#include "plugin/registry.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "autoconfig.h"
#include "config.h"
#include "core/plugin/paths.h"
#include "plugin/metrics.h"
#include "util/buf.h"
#include "util/slog.h"

#define HOST_MAGIC 0x484f5354u  /* "HOST": guards samsa_host_t handles */
#define ASYNC_MAGIC 0x4153594eu /* "ASYN" */

/* Modules linked into this binary, from configure (--enable-X=static):
 * SAMSA_STATIC_MODULES is a list of SAMSA_STATIC_MODULE(ident, "name"). */
#ifndef SAMSA_STATIC_MODULES
#define SAMSA_STATIC_MODULES
#endif
#ifndef SAMSA_BUILD_MODULES
#define SAMSA_BUILD_MODULES ""
#endif
#ifndef SAMSA_BUILD_STATIC_MODULES
#define SAMSA_BUILD_STATIC_MODULES ""
#endif

#define SAMSA_STATIC_MODULE(ident, name) const samsa_plugin_info_t *samsa_plugin_entry_##ident(void);
SAMSA_STATIC_MODULES
#undef SAMSA_STATIC_MODULE

static const struct static_module {
    const char *name;
    const samsa_plugin_info_t *(*entry)(void);
} static_modules[] = {
#define SAMSA_STATIC_MODULE(ident, name) {name, samsa_plugin_entry_##ident},
    SAMSA_STATIC_MODULES
#undef SAMSA_STATIC_MODULE
    {NULL, NULL},
};

struct conf_kv {
    char *key; /* after "plugin.<name>." */
    char *value;
};

/* The host's record of one plugin; samsa_host_t for the plugin. */
struct samsa_host {
    uint32_t magic;
    struct plugin_registry *reg;
    size_t index; /* position in reg->plugins once committed */
    char *origin; /* path, or "static:<name>" */
    bool is_static;
    samsa_plugin_info_t info; /* zero-extended copy */
    char *name;
    void *state;
    bool in_init;
    struct conf_kv *conf;
    size_t nconf;
    /* Capabilities registered during init, committed on success. */
    struct plugin_cap **staged;
    size_t nstaged;
    char reg_error[256]; /* first registration refusal, "" if none */
};

struct plugin_registry {
    struct samsa_host **plugins;
    size_t n;
    struct plugin_cap **caps;
    size_t ncaps;
    const struct plugin_cap *codec_by_id[SAMSA_CODEC_ID_MAX + 1];
    const struct samsa_config *cfg;
    plugin_scram_lookup_fn scram_fn;
    void *scram_arg;
    pthread_key_t tls_key;
    bool tls_key_ok;
    _Atomic uint64_t generation; /* successful plugin reloads */
};

/* ------------------------------------------------------------------ */
/* Helpers                                                             */

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

static bool valid_plugin_name(const char *s)
{
    if (!s || !*s || strlen(s) > 64)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_' || *p == '.'))
            return false;
    return true;
}

static bool valid_cap_name(const char *s)
{
    if (!s || !*s || strlen(s) > 64)
        return false;
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == ',' || *p == ':' || (unsigned char)*p >= 0x7f)
            return false;
    return true;
}

static const char *kind_name(int kind)
{
    switch (kind) {
    case SAMSA_CAP_CODEC: return "codec";
    case SAMSA_CAP_SASL: return "sasl";
    case SAMSA_CAP_ASSIGNOR: return "assignor";
    case SAMSA_CAP_TIER: return "tier";
    case SAMSA_CAP_AUTHORIZER: return "authorizer";
    case SAMSA_CAP_PARTITIONER: return "partitioner";
    default: return "unknown";
    }
}

const char *plugin_codec_name(int id)
{
    static const char *names[] = {"none", "gzip", "snappy", "lz4", "zstd"};
    return id >= 0 && id <= SAMSA_CODEC_ZSTD ? names[id] : "unknown";
}

/* The one refusal line. abi is NULL when the descriptor is unknown. */
static int refuse(char *err, size_t errlen, const char *origin, const samsa_plugin_info_t *abi,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int refuse(char *err, size_t errlen, const char *origin, const samsa_plugin_info_t *abi,
                  const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    char ver[32] = "unknown";
    if (abi)
        snprintf(ver, sizeof ver, "%u.%u", (unsigned)abi->abi_major, (unsigned)abi->abi_minor);
    snprintf(err, errlen, "plugin %s refused: %s (plugin ABI %s, samsa ABI %d.%d)", origin, why, ver,
             SAMSA_ABI_MAJOR, SAMSA_ABI_MINOR);
    return -1;
}

/* ------------------------------------------------------------------ */
/* Host API                                                            */

static struct samsa_host *host_of(samsa_host_t *h)
{
    /* A plugin passing something else is a bug in the plugin; crash
     * loudly rather than write through a wild pointer later. */
    if (!h || h->magic != HOST_MAGIC) {
        slog_error("plugin API called with an invalid host handle %p", (void *)h);
        abort();
    }
    return h;
}

static void api_log(samsa_host_t *h, int level, const char *fmt, ...)
{
    struct samsa_host *p = host_of(h);
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    enum slog_level lvl = level <= SAMSA_LOG_DEBUG ? SLOG_DEBUG
                          : level == SAMSA_LOG_INFO ? SLOG_INFO
                          : level == SAMSA_LOG_WARN ? SLOG_WARN
                                                    : SLOG_ERROR;
    if (lvl == SLOG_DEBUG && slog_get_level() > SLOG_DEBUG)
        return;
    slog(lvl, "plugin %s: %s", p->name, line);
}

static const char *api_config_get(samsa_host_t *h, const char *key)
{
    struct samsa_host *p = host_of(h);
    if (!key)
        return NULL;
    for (size_t i = 0; i < p->nconf; i++)
        if (strcmp(p->conf[i].key, key) == 0)
            return p->conf[i].value;
    return NULL;
}

static size_t cap_min_size(int kind)
{
    switch (kind) {
    case SAMSA_CAP_CODEC: return SAMSA_CODEC_SIZE_1_0;
    case SAMSA_CAP_SASL: return SAMSA_SASL_MECH_SIZE_1_0;
    case SAMSA_CAP_ASSIGNOR: return SAMSA_ASSIGNOR_SIZE_1_0;
    case SAMSA_CAP_TIER: return SAMSA_TIER_SIZE_1_0;
    case SAMSA_CAP_AUTHORIZER: return SAMSA_AUTHORIZER_SIZE_1_0;
    case SAMSA_CAP_PARTITIONER: return SAMSA_PARTITIONER_SIZE_1_0;
    default: return 0;
    }
}

static size_t cap_host_size(int kind)
{
    switch (kind) {
    case SAMSA_CAP_CODEC: return sizeof(samsa_codec_t);
    case SAMSA_CAP_SASL: return sizeof(samsa_sasl_mech_t);
    case SAMSA_CAP_ASSIGNOR: return sizeof(samsa_assignor_t);
    case SAMSA_CAP_TIER: return sizeof(samsa_tier_t);
    case SAMSA_CAP_AUTHORIZER: return sizeof(samsa_authorizer_t);
    case SAMSA_CAP_PARTITIONER: return sizeof(samsa_partitioner_t);
    default: return 0;
    }
}

/* The 1.0 callbacks a capability must have. */
static const char *cap_missing(const struct plugin_cap *c)
{
    switch (c->kind) {
    case SAMSA_CAP_CODEC: {
        const samsa_codec_t *v = &c->vt.codec;
        if (v->id < 1 || v->id > SAMSA_CODEC_ID_MAX)
            return "a compression id within 1..7";
        if (!v->compress || !v->decompress)
            return "compress and decompress";
        if (v->level_min > v->level_max || v->level_default < v->level_min ||
            v->level_default > v->level_max)
            return "level_min <= level_default <= level_max";
        return NULL;
    }
    case SAMSA_CAP_SASL: {
        const samsa_sasl_mech_t *v = &c->vt.sasl;
        return v->session_new && v->step && v->principal && v->session_free
                   ? NULL
                   : "session_new, step, principal and session_free";
    }
    case SAMSA_CAP_ASSIGNOR: return c->vt.assignor.assign ? NULL : "assign";
    case SAMSA_CAP_TIER: {
        const samsa_tier_t *v = &c->vt.tier;
        return v->copy_segment && v->fetch_segment && v->fetch_index && v->delete_segment &&
                       v->put_segment_metadata && v->list_segments && v->remote_log_size
                   ? NULL
                   : "every storage and metadata manager function";
    }
    case SAMSA_CAP_AUTHORIZER: return c->vt.authorizer.authorize ? NULL : "authorize";
    case SAMSA_CAP_PARTITIONER: return c->vt.partitioner.partition ? NULL : "partition";
    default: return "a known kind";
    }
}

static const struct plugin_cap *find_cap(const struct plugin_registry *reg, struct samsa_host *self,
                                         int kind, const char *name, int codec_id)
{
    for (size_t i = 0; i < reg->ncaps; i++) {
        const struct plugin_cap *c = reg->caps[i];
        if (c->kind == kind &&
            (strcmp(c->name, name) == 0 || (kind == SAMSA_CAP_CODEC && c->vt.codec.id == codec_id)))
            return c;
    }
    for (size_t i = 0; self && i < self->nstaged; i++) {
        const struct plugin_cap *c = self->staged[i];
        if (c->kind == kind &&
            (strcmp(c->name, name) == 0 || (kind == SAMSA_CAP_CODEC && c->vt.codec.id == codec_id)))
            return c;
    }
    return NULL;
}

static void set_reg_error(struct samsa_host *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_reg_error(struct samsa_host *p, const char *fmt, ...)
{
    if (p->reg_error[0])
        return; /* the first refusal is the one reported */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->reg_error, sizeof p->reg_error, fmt, ap);
    va_end(ap);
}

static int api_register_capability(samsa_host_t *h, const samsa_cap_hdr_t *cap, void *cap_state)
{
    struct samsa_host *p = host_of(h);
    if (!p->in_init) {
        slog_warn("plugin %s: register_capability outside init ignored", p->name);
        return SAMSA_EINVAL;
    }
    if (!cap) {
        set_reg_error(p, "register_capability called with NULL");
        return SAMSA_EINVAL;
    }
    int kind = (int)cap->kind;
    size_t need = cap_min_size(kind);
    if (need == 0) {
        /* Not fatal: a newer plugin may offer a kind this host lacks and
         * work without it; it learns from the return value. */
        slog_info("plugin %s: capability kind %d is unknown to this samsa; ignored", p->name, kind);
        return SAMSA_EUNSUPPORTED;
    }
    const char *name = cap->name;
    if (!valid_cap_name(name)) {
        set_reg_error(p, "%s capability with an invalid name", kind_name(kind));
        return SAMSA_EINVAL;
    }
    if (cap->struct_size < need) {
        set_reg_error(p, "%s \"%s\" vtable truncated (%u bytes, ABI 1.0 needs %zu)", kind_name(kind), name,
                      (unsigned)cap->struct_size, need);
        return SAMSA_EINVAL;
    }
    struct plugin_cap *c = xcalloc(1, sizeof *c);
    c->kind = kind;
    memcpy(&c->vt, cap, min_size(cap->struct_size, cap_host_size(kind)));
    c->vt.hdr.struct_size = (uint32_t)cap_host_size(kind);
    c->name = name;
    c->state = cap_state;
    c->owner = p;
    const char *missing = cap_missing(c);
    if (missing) {
        set_reg_error(p, "%s \"%s\" lacks %s", kind_name(kind), name, missing);
        free(c);
        return SAMSA_EINVAL;
    }
    const struct plugin_cap *dup =
        find_cap(p->reg, p, kind, name, kind == SAMSA_CAP_CODEC ? c->vt.codec.id : -1);
    if (dup) {
        if (kind == SAMSA_CAP_CODEC)
            set_reg_error(p, "duplicate codec \"%s\" (id %d): already provided by %s as \"%s\" (id %d)", name,
                          c->vt.codec.id, dup->owner == p ? "this plugin" : dup->owner->name, dup->name,
                          dup->vt.codec.id);
        else
            set_reg_error(p, "duplicate %s \"%s\": already provided by %s", kind_name(kind), name,
                          dup->owner == p ? "this plugin" : dup->owner->name);
        free(c);
        return SAMSA_EEXIST;
    }
    p->staged = xrealloc(p->staged, (p->nstaged + 1) * sizeof *p->staged);
    p->staged[p->nstaged++] = c;
    return SAMSA_OK;
}

static samsa_metric_t *api_metric_register(samsa_host_t *h, const char *name, int type, const char *help)
{
    struct samsa_host *p = host_of(h);
    if (!name || !*name)
        return NULL;
    char full[256];
    snprintf(full, sizeof full, "samsa.plugin.%s.%s", p->name, name);
    return (samsa_metric_t *)metrics_register(full, (enum metric_type)type, help);
}

static void api_metric_add(samsa_metric_t *m, int64_t delta) { metric_add((struct metric *)m, delta); }
static void api_metric_set(samsa_metric_t *m, int64_t value) { metric_set((struct metric *)m, value); }

static int64_t api_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t api_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *api_alloc(size_t n) { return malloc(n ? n : 1); }
static void *api_realloc(void *p, size_t n) { return realloc(p, n ? n : 1); }
static void api_free(void *p) { free(p); }

/* Per-thread slots: one array per (thread, registry), reached through the
 * registry's pthread key, whose destructor runs each plugin's
 * worker_fini as the thread ends. */
struct tls_slots {
    struct plugin_registry *reg;
    size_t n;
    void *v[];
};

static void tls_destroy(void *arg)
{
    struct tls_slots *t = arg;
    for (size_t i = 0; i < t->n && i < t->reg->n; i++) {
        struct samsa_host *p = t->reg->plugins[i];
        if (t->v[i] && p->info.worker_fini)
            p->info.worker_fini(p->state, t->v[i]);
    }
    free(t);
}

/* A refused plugin may have used this thread's slot during init: give
 * what it left to its worker_fini (when its init succeeded) and empty the
 * slot, which the next plugin loaded will own. */
static void release_slot(struct samsa_host *p, bool call_fini)
{
    struct tls_slots *t = pthread_getspecific(p->reg->tls_key);
    if (!t || p->index >= t->n || !t->v[p->index])
        return;
    if (call_fini && p->info.worker_fini)
        p->info.worker_fini(p->state, t->v[p->index]);
    t->v[p->index] = NULL;
}

static void **api_worker_local(samsa_host_t *h)
{
    struct samsa_host *p = host_of(h);
    struct plugin_registry *reg = p->reg;
    struct tls_slots *t = pthread_getspecific(reg->tls_key);
    /* During init the plugin is not committed yet: its slot is the next
     * index, which commit will give it. */
    size_t need = p->index + 1;
    if (!t || t->n < need) {
        size_t n = need < 8 ? 8 : need * 2;
        struct tls_slots *nt = xcalloc(1, sizeof *nt + n * sizeof(void *));
        nt->reg = reg;
        nt->n = n;
        if (t) {
            memcpy(nt->v, t->v, t->n * sizeof(void *));
            free(t);
        }
        t = nt;
        pthread_setspecific(reg->tls_key, t);
    }
    return &t->v[p->index];
}

void plugin_async_init(struct samsa_async *a, void (*done)(void *, int, const void *, size_t), void *arg)
{
    a->magic = ASYNC_MAGIC;
    a->done = done;
    a->arg = arg;
    atomic_init(&a->completed, 0);
}

static void api_complete(samsa_async_t *token, int status, const void *result, size_t result_len)
{
    if (!token || token->magic != ASYNC_MAGIC) {
        slog_error("plugin called complete with an invalid token %p", (void *)token);
        return;
    }
    if (atomic_exchange(&token->completed, 1)) {
        slog_error("plugin completed token %p twice; second completion ignored", (void *)token);
        return;
    }
    if (token->done)
        token->done(token->arg, status, result, result_len);
}

static const char *api_server_config_get(samsa_host_t *h, const char *key)
{
    struct samsa_host *p = host_of(h);
    const struct samsa_config *cfg = p->reg->cfg;
    return cfg && key ? config_get_any(cfg, key) : NULL;
}

static int api_scram_credential_get(samsa_host_t *h, int mechanism, const char *user,
                                    struct samsa_scram_credential *cred)
{
    struct samsa_host *p = host_of(h);
    if (!user || !cred || cred->struct_size < sizeof(samsa_scram_credential_t))
        return SAMSA_EINVAL;
    if (!p->reg->scram_fn)
        return SAMSA_EUNSUPPORTED;
    return p->reg->scram_fn(p->reg->scram_arg, mechanism, user, cred);
}

void plugin_registry_set_scram_lookup(struct plugin_registry *reg, plugin_scram_lookup_fn fn, void *arg)
{
    reg->scram_fn = fn;
    reg->scram_arg = arg;
}

static const samsa_host_api_t host_api = {
    .struct_size = sizeof(samsa_host_api_t),
    .abi_major = SAMSA_ABI_MAJOR,
    .abi_minor = SAMSA_ABI_MINOR,
    .log = api_log,
    .config_get = api_config_get,
    .register_capability = api_register_capability,
    .metric_register = api_metric_register,
    .metric_add = api_metric_add,
    .metric_set = api_metric_set,
    .monotonic_ns = api_monotonic_ns,
    .wall_ms = api_wall_ms,
    .alloc = api_alloc,
    .realloc = api_realloc,
    .free = api_free,
    .worker_local = api_worker_local,
    .complete = api_complete,
    .server_config_get = api_server_config_get,
    .scram_credential_get = api_scram_credential_get,
};

const samsa_host_api_t *plugin_host_api(void) { return &host_api; }

/* ------------------------------------------------------------------ */
/* Registry                                                            */

struct plugin_registry *plugin_registry_new(const struct samsa_config *config)
{
    struct plugin_registry *reg = xcalloc(1, sizeof *reg);
    reg->cfg = config;
    reg->tls_key_ok = pthread_key_create(&reg->tls_key, tls_destroy) == 0;
    if (!reg->tls_key_ok) {
        slog_error("plugin registry: pthread_key_create failed");
        abort();
    }
    return reg;
}

static void host_free(struct samsa_host *p)
{
    for (size_t i = 0; i < p->nconf; i++) {
        free(p->conf[i].key);
        free(p->conf[i].value);
    }
    free(p->conf);
    for (size_t i = 0; i < p->nstaged; i++)
        free(p->staged[i]);
    free(p->staged);
    free(p->origin);
    free(p->name);
    p->magic = 0;
    free(p);
}

void plugin_registry_free(struct plugin_registry *reg)
{
    if (!reg)
        return;
    /* This thread's slots first (the destructor does not run for a
     * thread whose key is deleted), then fini in reverse load order. */
    struct tls_slots *t = pthread_getspecific(reg->tls_key);
    if (t) {
        pthread_setspecific(reg->tls_key, NULL);
        tls_destroy(t);
    }
    for (size_t i = reg->n; i-- > 0;) {
        struct samsa_host *p = reg->plugins[i];
        if (p->info.fini)
            p->info.fini(p->state);
    }
    pthread_key_delete(reg->tls_key);
    for (size_t i = 0; i < reg->ncaps; i++)
        free(reg->caps[i]);
    free(reg->caps);
    for (size_t i = 0; i < reg->n; i++) {
        reg->plugins[i]->nstaged = 0; /* moved to reg->caps */
        host_free(reg->plugins[i]);
    }
    free(reg->plugins);
    free(reg);
}

static void copy_config(struct samsa_host *p, const struct samsa_config *cfg)
{
    if (!cfg)
        return;
    char prefix[128];
    int plen = snprintf(prefix, sizeof prefix, "plugin.%s.", p->name);
    if (plen <= 0 || (size_t)plen >= sizeof prefix)
        return;
    size_t n = config_extra_count(cfg);
    for (size_t i = 0; i < n; i++) {
        const char *k, *v;
        config_extra_get(cfg, i, &k, &v);
        if (!k || strncmp(k, prefix, (size_t)plen) != 0 || !k[plen])
            continue;
        p->conf = xrealloc(p->conf, (p->nconf + 1) * sizeof *p->conf);
        p->conf[p->nconf].key = xstrdup(k + plen);
        p->conf[p->nconf].value = xstrdup(v ? v : "");
        p->nconf++;
    }
    /* the plugin keys of the config table (those that may change at run
     * time): their value at startup */
    for (size_t i = 0; i < config_defs_count; i++) {
        const char *k = config_defs[i].name, *v;
        if (strncmp(k, prefix, (size_t)plen) != 0 || !k[plen] || !(v = config_get(cfg, k)))
            continue;
        p->conf = xrealloc(p->conf, (p->nconf + 1) * sizeof *p->conf);
        p->conf[p->nconf].key = xstrdup(k + plen);
        p->conf[p->nconf].value = xstrdup(v);
        p->nconf++;
    }
}

static struct samsa_host *find_plugin(const struct plugin_registry *reg, const char *name)
{
    for (size_t i = 0; i < reg->n; i++)
        if (strcmp(reg->plugins[i]->name, name) == 0)
            return reg->plugins[i];
    return NULL;
}

static void log_loaded(const struct plugin_registry *reg, const struct samsa_host *p)
{
    char caps[512];
    plugin_caps_text(reg, p->index, caps, sizeof caps);
    slog_info("plugin %s %s (ABI %u.%u) loaded from %s: %s", p->name, p->info.version ? p->info.version : "?",
              (unsigned)p->info.abi_major, (unsigned)p->info.abi_minor, p->origin, caps[0] ? caps : "no capabilities");
}

/* Checks the descriptor d of origin, runs init and commits. handle is the
 * dlopen handle (NULL for static), closed when the plugin is refused
 * before its init ran. */
static int load_descriptor(struct plugin_registry *reg, const samsa_plugin_info_t *d, const char *origin,
                           bool is_static, const char *want_name, void *handle, char *err, size_t errlen)
{
    int rc = -1;
    if (!d) {
        refuse(err, errlen, origin, NULL, "samsa_plugin_entry returned no descriptor");
        goto close;
    }
    if (d->magic != SAMSA_PLUGIN_MAGIC) {
        refuse(err, errlen, origin, NULL, "bad magic 0x%08x (expected 0x%08x)", (unsigned)d->magic,
               SAMSA_PLUGIN_MAGIC);
        goto close;
    }
    if (d->abi_major != SAMSA_ABI_MAJOR) {
        refuse(err, errlen, origin, d, "built for another ABI major version");
        goto close;
    }
    if (d->abi_minor > SAMSA_ABI_MINOR) {
        refuse(err, errlen, origin, d, "built for a newer ABI minor version");
        goto close;
    }
    if (d->struct_size < SAMSA_PLUGIN_INFO_SIZE_1_0) {
        refuse(err, errlen, origin, d, "descriptor truncated (%u bytes, ABI 1.0 needs %zu)",
               (unsigned)d->struct_size, (size_t)SAMSA_PLUGIN_INFO_SIZE_1_0);
        goto close;
    }
    if (d->build_sig != SAMSA_BUILD_SIG) {
        refuse(err, errlen, origin, d, "not binary compatible (build signature 0x%06x, samsa 0x%06x)",
               (unsigned)d->build_sig, (unsigned)SAMSA_BUILD_SIG);
        goto close;
    }

    struct samsa_host *p = xcalloc(1, sizeof *p);
    p->magic = HOST_MAGIC;
    p->reg = reg;
    p->index = reg->n;
    p->origin = xstrdup(origin);
    p->is_static = is_static;
    memcpy(&p->info, d, min_size(d->struct_size, sizeof p->info));
    p->info.struct_size = sizeof p->info;
    if (!valid_plugin_name(p->info.name)) {
        refuse(err, errlen, origin, d, "descriptor has no valid name ([A-Za-z0-9._-], at most 64)");
        host_free(p);
        goto close;
    }
    if (!p->info.init) {
        refuse(err, errlen, origin, d, "descriptor has no init function");
        host_free(p);
        goto close;
    }
    p->name = xstrdup(p->info.name);
    if (want_name && strcmp(want_name, p->name) != 0) {
        refuse(err, errlen, origin, d, "its descriptor names it \"%s\", configured as \"%s\"", p->name, want_name);
        host_free(p);
        goto close;
    }
    const struct samsa_host *other = find_plugin(reg, p->name);
    if (other) {
        refuse(err, errlen, origin, d, "a plugin named \"%s\" is already loaded from %s", p->name, other->origin);
        host_free(p);
        goto close;
    }
    copy_config(p, reg->cfg);

    char ierr[256] = "";
    p->in_init = true;
    int irc = p->info.init(p, &host_api, &p->state, ierr, sizeof ierr);
    p->in_init = false;
    if (irc != SAMSA_OK) {
        ierr[sizeof ierr - 1] = '\0';
        refuse(err, errlen, origin, d, "init failed: %s", ierr[0] ? ierr : "no reason given");
        /* init ran: the plugin may have left threads or handlers behind,
         * so its code stays mapped. */
        release_slot(p, false);
        host_free(p);
        return -1;
    }
    if (p->reg_error[0]) {
        refuse(err, errlen, origin, d, "%s", p->reg_error);
        release_slot(p, true);
        if (p->info.fini)
            p->info.fini(p->state);
        host_free(p);
        return -1;
    }

    /* Commit. */
    reg->plugins = xrealloc(reg->plugins, (reg->n + 1) * sizeof *reg->plugins);
    reg->plugins[reg->n++] = p;
    reg->caps = xrealloc(reg->caps, (reg->ncaps + p->nstaged) * sizeof *reg->caps);
    for (size_t i = 0; i < p->nstaged; i++) {
        struct plugin_cap *c = p->staged[i];
        reg->caps[reg->ncaps++] = c;
        if (c->kind == SAMSA_CAP_CODEC)
            reg->codec_by_id[c->vt.codec.id] = c;
    }
    free(p->staged);
    p->staged = NULL;
    log_loaded(reg, p);
    return 0;

close:
    if (handle)
        dlclose(handle);
    return rc;
}

int plugin_load_file(struct plugin_registry *reg, const char *path, const char *name, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return refuse(err, errlen, path, NULL, "cannot open: %s", strerror(errno));
    if (!S_ISREG(st.st_mode))
        return refuse(err, errlen, path, NULL, "cannot open: not a regular file");
    dlerror();
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        return refuse(err, errlen, path, NULL, "cannot load: %s", e ? e : "dlopen failed");
    }
    dlerror();
    /* POSIX allows the data-to-function pointer conversion for dlsym. */
    void *sym = dlsym(h, "samsa_plugin_entry");
    if (!sym) {
        dlclose(h);
        return refuse(err, errlen, path, NULL, "no entry symbol samsa_plugin_entry");
    }
    const samsa_plugin_info_t *(*entry)(void);
    memcpy(&entry, &sym, sizeof entry);
    return load_descriptor(reg, entry(), path, false, name, h, err, errlen);
}

int plugin_load_static(struct plugin_registry *reg, const samsa_plugin_info_t *(*entry)(void), const char *name,
                       char *err, size_t errlen)
{
    char origin[128];
    snprintf(origin, sizeof origin, "static:%s", name ? name : "?");
    if (!entry)
        return refuse(err, errlen, origin, NULL, "no entry symbol samsa_plugin_entry");
    return load_descriptor(reg, entry(), origin, true, name, NULL, err, errlen);
}

static const struct static_module *find_static(const char *name)
{
    for (const struct static_module *m = static_modules; m->name; m++)
        if (strcmp(m->name, name) == 0)
            return m;
    return NULL;
}

static void module_path(char *out, size_t n, const char *dir, const char *name)
{
    /* A path too long to fit fails at open, with its own message. */
    if (snprintf(out, n, "%s/%s.so", dir && *dir ? dir : ".", name) >= (int)n)
        out[n - 1] = '\0';
}

int plugin_load_name(struct plugin_registry *reg, const char *dir, const char *name, char *err, size_t errlen)
{
    const struct static_module *sm = find_static(name);
    if (sm)
        return plugin_load_static(reg, sm->entry, sm->name, err, errlen);
    char path[PATH_MAX];
    module_path(path, sizeof path, dir, name);
    return plugin_load_file(reg, path, name, err, errlen);
}

/* Calls fn for each element of a comma-separated list. */
static void each_name(const char *list, void (*fn)(void *arg, const char *name), void *arg)
{
    const char *p = list;
    while (p && *p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char name[128];
        if (n > 0 && n < sizeof name) {
            memcpy(name, p, n);
            name[n] = '\0';
            fn(arg, name);
        }
        p = e ? e + 1 : NULL;
    }
}

struct default_load {
    struct plugin_registry *reg;
    const char *dir;
    bool quiet; /* tools: nothing above DEBUG */
    char missing[512];
};

static void load_default_one(void *arg, const char *name)
{
    struct default_load *dl = arg;
    char err[768];
    if (find_plugin(dl->reg, name))
        return;
    if (!find_static(name)) {
        char path[PATH_MAX];
        module_path(path, sizeof path, dl->dir, name);
        if (access(path, F_OK) != 0) {
            size_t l = strlen(dl->missing);
            snprintf(dl->missing + l, sizeof dl->missing - l, "%s%s", l ? ", " : "", name);
            return;
        }
    }
    if (plugin_load_name(dl->reg, dl->dir, name, err, sizeof err) < 0) {
        if (dl->quiet)
            slog_debug("%s", err);
        else
            slog_warn("%s", err);
    }
}

int plugin_registry_load_config(struct plugin_registry *reg, const struct samsa_config *cfg, char *err,
                                size_t errlen)
{
    const char *dir = cfg && cfg->plugin_dir && *cfg->plugin_dir ? cfg->plugin_dir : plugin_default_dir();
    if (cfg && config_is_set(cfg, "plugins")) {
        for (size_t i = 0; i < cfg->n_plugins; i++) {
            if (find_plugin(reg, cfg->plugins[i]))
                continue; /* listed twice */
            if (plugin_load_name(reg, dir, cfg->plugins[i], err, errlen) < 0)
                return -1;
        }
        return 0;
    }
    struct default_load dl = {.reg = reg, .dir = dir, .quiet = false, .missing = ""};
    each_name(SAMSA_BUILD_MODULES, load_default_one, &dl);
    if (dl.missing[0])
        slog_info("plugins: %s not found in %s (skipped; set plugin.dir or plugins=)", dl.missing, dir);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Paths and build facts                                               */

static bool under_dir(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static pthread_once_t dir_once = PTHREAD_ONCE_INIT;
static char default_dir[PATH_MAX];

static void compute_default_dir(void)
{
    snprintf(default_dir, sizeof default_dir, "%s", SAMSA_PKGLIBDIR);
    char exe[PATH_MAX], tree[PATH_MAX];
    if (!realpath("/proc/self/exe", exe) || !realpath(SAMSA_ABS_BUILDDIR, tree))
        return;
    /* Only a binary that lives inside the tree it was built in: an
     * installed binary never looks at a build directory. */
    if (under_dir(exe, tree) && snprintf(default_dir, sizeof default_dir, "%s/modules/.libs", tree) >=
                                    (int)sizeof default_dir)
        snprintf(default_dir, sizeof default_dir, "%s", SAMSA_PKGLIBDIR);
}

const char *plugin_default_dir(void)
{
    pthread_once(&dir_once, compute_default_dir);
    return default_dir;
}

const char *plugin_build_modules(void) { return SAMSA_BUILD_MODULES; }
const char *plugin_build_static_modules(void) { return SAMSA_BUILD_STATIC_MODULES; }

/* Reloads and reconfigurations, one at a time (the descriptor's
 * @locality for both). */
static pthread_mutex_t reload_mu = PTHREAD_MUTEX_INITIALIZER;

int plugin_registry_reconfigure(struct plugin_registry *reg, const char *key, const char *value,
                                bool validate_only, char *err, size_t errlen)
{
    err[0] = '\0';
    if (!reg || strncmp(key, "plugin.", 7) != 0)
        return 0;
    const char *name = key + 7, *dot = strchr(name, '.');
    if (!dot || !dot[1])
        return 0;
    struct samsa_host *p = NULL;
    for (size_t i = 0; i < reg->n && !p; i++)
        if (strlen(reg->plugins[i]->name) == (size_t)(dot - name) &&
            strncmp(reg->plugins[i]->name, name, (size_t)(dot - name)) == 0)
            p = reg->plugins[i];
    if (!p)
        return 0; /* stored for a plugin this node does not load */
    if (!p->info.reconfigure) {
        snprintf(err, errlen, "plugin %s cannot change %s at run time", p->name, key);
        return -1;
    }
    char why[512] = "";
    pthread_mutex_lock(&reload_mu);
    int rc = p->info.reconfigure(p->state, dot + 1, value, validate_only, why, sizeof why);
    if (rc == SAMSA_OK && !validate_only)
        atomic_fetch_add(&reg->generation, 1);
    pthread_mutex_unlock(&reload_mu);
    why[sizeof why - 1] = '\0';
    if (rc == SAMSA_OK)
        return 0;
    if (rc == SAMSA_EUNSUPPORTED && !why[0])
        snprintf(err, errlen, "plugin %s cannot change %s at run time", p->name, key);
    else
        snprintf(err, errlen, "%s", why[0] ? why : "refused, no reason given");
    return -1;
}

int plugin_registry_reload(struct plugin_registry *reg)
{
    int failed = 0;
    if (!reg)
        return 0;
    pthread_mutex_lock(&reload_mu);
    for (size_t i = 0; i < reg->n; i++) {
        struct samsa_host *p = reg->plugins[i];
        if (!p->info.reload)
            continue;
        char err[512] = "";
        int rc = p->info.reload(p->state, err, sizeof err);
        err[sizeof err - 1] = '\0';
        if (rc != SAMSA_OK) {
            slog_warn("plugin %s: reload failed: %s", p->name, err[0] ? err : "no reason given");
            failed++;
        } else {
            slog_info("plugin %s: reloaded", p->name);
            atomic_fetch_add(&reg->generation, 1);
        }
    }
    pthread_mutex_unlock(&reload_mu);
    return failed;
}

uint64_t plugin_registry_generation(const struct plugin_registry *reg)
{
    return reg ? atomic_load(&((struct plugin_registry *)reg)->generation) : 0;
}

/* ------------------------------------------------------------------ */
/* Lookups and listing                                                 */

const struct plugin_cap *plugin_find(const struct plugin_registry *reg, int kind, const char *name)
{
    if (!reg || !name)
        return NULL;
    for (size_t i = 0; i < reg->ncaps; i++)
        if (reg->caps[i]->kind == kind && strcmp(reg->caps[i]->name, name) == 0)
            return reg->caps[i];
    return NULL;
}

const struct plugin_cap *plugin_codec(const struct plugin_registry *reg, int id)
{
    if (!reg || id < 1 || id > SAMSA_CODEC_ID_MAX)
        return NULL;
    return reg->codec_by_id[id];
}

const struct plugin_cap *plugin_cap_at(const struct plugin_registry *reg, int kind, size_t i)
{
    if (!reg)
        return NULL;
    for (size_t k = 0; k < reg->ncaps; k++)
        if (reg->caps[k]->kind == kind && i-- == 0)
            return reg->caps[k];
    return NULL;
}

size_t plugin_count(const struct plugin_registry *reg) { return reg ? reg->n : 0; }

bool plugin_describe(const struct plugin_registry *reg, size_t i, struct plugin_desc *out)
{
    if (!reg || i >= reg->n)
        return false;
    const struct samsa_host *p = reg->plugins[i];
    out->name = p->name;
    out->version = p->info.version ? p->info.version : "";
    out->description = p->info.description ? p->info.description : "";
    out->origin = p->is_static ? "static" : p->origin;
    out->abi_major = p->info.abi_major;
    out->abi_minor = p->info.abi_minor;
    return true;
}

void plugin_caps_text(const struct plugin_registry *reg, size_t i, char *buf, size_t len)
{
    if (len == 0)
        return;
    buf[0] = '\0';
    if (!reg || i >= reg->n)
        return;
    size_t off = 0;
    for (size_t k = 0; k < reg->ncaps && off < len; k++) {
        const struct plugin_cap *c = reg->caps[k];
        if (c->owner != reg->plugins[i])
            continue;
        int w;
        if (c->kind == SAMSA_CAP_CODEC)
            w = snprintf(buf + off, len - off, "%scodec:%s(%d)", off ? "," : "", c->name, c->vt.codec.id);
        else
            w = snprintf(buf + off, len - off, "%s%s:%s", off ? "," : "", kind_name(c->kind), c->name);
        if (w < 0)
            break;
        off += (size_t)w;
    }
}

void plugin_registry_print(const struct plugin_registry *reg, FILE *f)
{
    fprintf(f, "%-20s %-10s %-5s %-28s %s\n", "NAME", "VERSION", "ABI", "CAPABILITIES", "ORIGIN");
    for (size_t i = 0; i < plugin_count(reg); i++) {
        struct plugin_desc d;
        plugin_describe(reg, i, &d);
        char caps[512], abi[16];
        plugin_caps_text(reg, i, caps, sizeof caps);
        snprintf(abi, sizeof abi, "%u.%u", d.abi_major, d.abi_minor);
        fprintf(f, "%-20s %-10s %-5s %-28s %s\n", d.name, d.version[0] ? d.version : "-", abi,
                caps[0] ? caps : "-", d.origin);
    }
}

/* Appends s to b with the characters that separate the fields of
 * samsa.plugins.loaded (and anything that would break a table column)
 * written as '_'. */
static void append_field(struct buf *b, const char *s, const char *seps)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        char out = ch <= ' ' || ch >= 0x7f || strchr(seps, ch) ? '_' : (char)ch;
        buf_put_u8(b, (uint8_t)out);
    }
}

char *plugin_registry_loaded_text(const struct plugin_registry *reg)
{
    struct buf b = BUF_INIT;
    for (size_t i = 0; i < plugin_count(reg); i++) {
        const struct samsa_host *p = reg->plugins[i];
        if (i)
            buf_put_u8(&b, ',');
        append_field(&b, p->name, ",:+");
        buf_put_u8(&b, ':');
        append_field(&b, p->info.version ? p->info.version : "", ",:+");
        char abi[32];
        snprintf(abi, sizeof abi, ":%u.%u:", (unsigned)p->info.abi_major, (unsigned)p->info.abi_minor);
        buf_append(&b, abi, strlen(abi));
        bool first = true;
        for (size_t k = 0; k < reg->ncaps; k++) {
            const struct plugin_cap *c = reg->caps[k];
            if (c->owner != p)
                continue;
            if (!first)
                buf_put_u8(&b, '+');
            first = false;
            /* the same text as plugin_caps_text; cap names hold no ',' or
             * ':' (valid_cap_name), only '+' needs replacing */
            buf_append(&b, kind_name(c->kind), strlen(kind_name(c->kind)));
            buf_put_u8(&b, ':');
            append_field(&b, c->name, "+");
            if (c->kind == SAMSA_CAP_CODEC) {
                char id[16];
                snprintf(id, sizeof id, "(%d)", c->vt.codec.id);
                buf_append(&b, id, strlen(id));
            }
        }
    }
    buf_put_u8(&b, 0);
    return (char *)buf_steal(&b, NULL);
}

/* ------------------------------------------------------------------ */
/* Tools                                                               */

static pthread_once_t tools_once = PTHREAD_ONCE_INIT;
static struct plugin_registry *tools_reg;

static void tools_init(void)
{
    tools_reg = plugin_registry_new(NULL);
    const char *dir = getenv("SAMSA_PLUGIN_DIR");
    struct default_load dl = {.reg = tools_reg, .dir = dir && *dir ? dir : plugin_default_dir(), .quiet = true,
                              .missing = ""};
    /* A tool's stderr is the user's: plugin load lines only at DEBUG. */
    enum slog_level lvl = slog_get_level();
    if (lvl < SLOG_WARN)
        slog_set_level(SLOG_WARN);
    each_name(SAMSA_BUILD_MODULES, load_default_one, &dl);
    slog_set_level(lvl);
}

const struct plugin_registry *plugin_tools_registry(void)
{
    pthread_once(&tools_once, tools_init);
    return tools_reg;
}
