#include "auth/authz.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/acl.h"
#include "auth/sasl.h"
#include "config.h"
#include "controller/controller.h"
#include "net/conn.h"
#include "net/request.h"
#include "plugin/registry.h"
#include "proto/kacl.h"
#include "samsa/authz.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/slog.h"

#define AUTHZ_MAX_LINKS 16
/* Denial log lines per second; the rest are counted and reported with
 * the next line that gets through. */
#define DENIAL_LINES_PER_S 10
/* Decision cache slots per connection (two-way: a key may sit in its
 * slot or the one next to it, the older of the two is replaced). */
#define CACHE_SLOTS 128

struct link {
    const struct plugin_cap *cap; /* NULL: the built-in ACL authorizer */
};

/* Set once at startup (authz_setup, authz_set_controller) before any
 * worker runs; read-only afterwards. */
static struct {
    struct link links[AUTHZ_MAX_LINKS];
    int n;
    bool acl;
    char *super_users;
    bool allow_if_none;
    struct plugin_registry *reg;        /* the plugins' reload generation */
    struct mimage *(*image)(void *arg); /* NULL: no ACLs */
    uint64_t (*acl_gen)(void *arg);     /* NULL: from the image */
    void *image_arg;
} A;

static pthread_mutex_t denial_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t denial_second;
static int denial_lines;
static long denial_dropped;

bool authz_enabled(void) { return A.n > 0; }
bool authz_acl_enabled(void) { return A.acl; }
static struct mimage *controller_image_of(void *arg) { return controller_image(arg); }

static uint64_t controller_acl_gen_of(void *arg) { return controller_acl_gen(arg); }

void authz_set_controller(struct controller *c)
{
    authz_set_image_source(controller_image_of, c);
    A.acl_gen = controller_acl_gen_of;
}

void authz_set_image_source(struct mimage *(*fn)(void *arg), void *arg)
{
    A.image = fn;
    A.acl_gen = NULL;
    A.image_arg = arg;
}

void authz_reset(void)
{
    free(A.super_users);
    memset(&A, 0, sizeof A);
}

static bool is_builtin(const char *name)
{
    return !strcmp(name, "acl") || !strcmp(name, "org.apache.kafka.metadata.authorizer.StandardAuthorizer");
}

int authz_setup(const struct samsa_config *cfg, struct plugin_registry *reg, char *err, size_t errlen)
{
    authz_reset();
    A.reg = reg;
    const char *names = config_get(cfg, "authorizer.class.name");
    const char *su = config_get(cfg, "super.users");
    A.super_users = su ? xstrdup(su) : NULL;
    bool b = false;
    A.allow_if_none = config_get_bool(cfg, "allow.everyone.if.no.acl.found", &b) && b;
    if (!names)
        return 0;
    const char *p = names;
    while (*p) {
        const char *e = strchr(p, ',');
        if (!e)
            e = p + strlen(p);
        char name[256];
        const char *s = p, *t = e;
        while (s < t && (*s == ' ' || *s == '\t'))
            s++;
        while (t > s && (t[-1] == ' ' || t[-1] == '\t'))
            t--;
        p = *e ? e + 1 : e;
        if (s == t)
            continue;
        snprintf(name, sizeof name, "%.*s", (int)(t - s), s);
        if (A.n == AUTHZ_MAX_LINKS) {
            snprintf(err, errlen, "config 'authorizer.class.name': more than %d authorizers", AUTHZ_MAX_LINKS);
            authz_reset();
            return -1;
        }
        if (is_builtin(name)) {
            A.links[A.n++].cap = NULL;
            A.acl = true;
            continue;
        }
        const struct plugin_cap *cap = plugin_find(reg, SAMSA_CAP_AUTHORIZER, name);
        if (!cap) {
            /* not loaded yet: the plugin of that name may provide it */
            char why[512] = "";
            const char *dir = cfg->plugin_dir && *cfg->plugin_dir ? cfg->plugin_dir : plugin_default_dir();
            if (plugin_load_name(reg, dir, name, why, sizeof why) == 0)
                cap = plugin_find(reg, SAMSA_CAP_AUTHORIZER, name);
            if (!cap) {
                snprintf(err, errlen,
                         "config 'authorizer.class.name': no authorizer '%s' (not 'acl' or "
                         "org.apache.kafka.metadata.authorizer.StandardAuthorizer, and no plugin provides it%s%s)",
                         name, why[0] ? ": " : "", why);
                authz_reset();
                return -1;
            }
        }
        if (!cap->vt.authorizer.authorize) {
            snprintf(err, errlen, "config 'authorizer.class.name': authorizer '%s' has no authorize function", name);
            authz_reset();
            return -1;
        }
        A.links[A.n++].cap = cap;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* The decision cache of a connection                                  */

/* One decision of one link of the chain. The ACL link's (link -1) hold
 * under an ACL generation; a plugin's (link i) also depend on the API
 * of the request (scripts see r.api) and hold under both the ACL
 * generation and the plugins' reload generation, so that a reloaded or
 * reconfigured script, or an ACL change, is in force at the next
 * request. A plugin marks a decision that must not be kept (a time
 * window) through samsa_authz_ctx_t.uncacheable. */
struct cache_slot {
    uint64_t gen;               /* 0: empty; the ACL generation (+1 for a plugin's) */
    uint64_t pgen;              /* plugin_registry_generation; 0 for the ACL link's */
    uint64_t hash;
    int8_t op, type;
    int8_t link;                /* -1: the ACL link */
    int16_t api;                /* the request's API key; -1 for the ACL link's */
    bool any;
    bool allowed;               /* the ACL link's answer */
    uint8_t result;             /* a plugin's: SAMSA_AUTHZ_ALLOW, DENY or DEFER */
    char *name;                 /* owned; NULL for any */
};

/* A connection's principal and host do not change (KIP-368 keeps the
 * principal), but the cache says whose decisions it holds and starts
 * over for anyone else rather than rely on it; so for a client id,
 * which a plugin sees (r.client_id) and a client may change between
 * requests. */
struct cache {
    char *principal;            /* owned */
    char *host;                 /* owned */
    char *client_id;            /* owned */
    struct cache_slot s[CACHE_SLOTS];
    uint8_t last_used[CACHE_SLOTS / 2]; /* per pair: the way used last */
};

static void cache_clear(struct cache *k)
{
    for (int i = 0; i < CACHE_SLOTS; i++) {
        free(k->s[i].name);
        k->s[i].name = NULL;
        k->s[i].gen = 0;
    }
    free(k->principal);
    free(k->host);
    free(k->client_id);
    k->principal = k->host = k->client_id = NULL;
}

void authz_conn_free(struct conn *c)
{
    struct cache *k = c->authz_cache;
    if (!k)
        return;
    cache_clear(k);
    free(k);
    c->authz_cache = NULL;
}

static uint64_t key_hash(int op, int type, const char *name, size_t len)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)(op * 31 + type);
    for (size_t i = 0; name && i < len; i++)
        h = (h ^ (uint8_t)name[i]) * 1099511628211ull;
    return name ? h : h ^ 0x9e3779b97f4a7c15ull;
}

/* What a decision is cached under. */
struct ckey {
    int link, api;
    uint64_t gen, pgen, hash;
    int op, type;
    const char *name; /* NULL: any */
    size_t len;
};

static struct cache_slot *cache_lookup(struct conn *c, const struct authz_subject *sub, const struct ckey *q,
                                       bool *hit)
{
    *hit = false;
    if (!c)
        return NULL;
    struct cache *k = c->authz_cache;
    if (!k)
        k = c->authz_cache = xcalloc(1, sizeof *k);
    const char *cid = sub->client_id ? sub->client_id : "";
    if (!k->principal || strcmp(k->principal, sub->principal) || strcmp(k->host, sub->host) ||
        strcmp(k->client_id, cid)) {
        cache_clear(k);
        k->principal = xstrdup(sub->principal);
        k->host = xstrdup(sub->host);
        k->client_id = xstrdup(cid);
    }
    struct cache_slot *pair = &k->s[(q->hash % CACHE_SLOTS) & ~(uint64_t)1];
    for (int w = 0; w < 2; w++) {
        struct cache_slot *s = &pair[w];
        if (s->gen == q->gen && s->pgen == q->pgen && s->hash == q->hash && s->op == q->op && s->type == q->type &&
            s->link == q->link && s->api == q->api && s->any == (q->name == NULL) &&
            (!q->name || (s->name && strlen(s->name) == q->len && memcmp(s->name, q->name, q->len) == 0))) {
            *hit = true;
            k->last_used[(s - k->s) / 2] = (uint8_t)w;
            return s;
        }
    }
    /* replace a slot of older generations first, else the one not used
     * last */
    bool old0 = pair[0].gen != q->gen || pair[0].pgen != q->pgen;
    bool old1 = pair[1].gen != q->gen || pair[1].pgen != q->pgen;
    int w = old0 ? 0 : old1 ? 1 : !k->last_used[(pair - k->s) / 2];
    k->last_used[(pair - k->s) / 2] = (uint8_t)w;
    return &pair[w];
}

static void cache_store(struct cache_slot *s, const struct ckey *q, bool allowed, uint8_t result)
{
    if (!s)
        return;
    free(s->name);
    s->name = q->name ? xstrndup(q->name, q->len) : NULL;
    s->gen = q->gen;
    s->pgen = q->pgen;
    s->hash = q->hash;
    s->op = (int8_t)q->op;
    s->type = (int8_t)q->type;
    s->link = (int8_t)q->link;
    s->api = (int16_t)q->api;
    s->any = q->name == NULL;
    s->allowed = allowed;
    s->result = result;
}

/* ------------------------------------------------------------------ */
/* The chain                                                           */

/* Why the chain decided, for the denial log: a static rule, or text
 * written only when a denial is to be logged (formatting costs more
 * than a cached decision). */
struct why {
    const char *rule;
    char text[400];
};

static void why_text(struct why *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void why_text(struct why *why, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why->text, sizeof why->text, fmt, ap);
    va_end(ap);
    why->rule = why->text;
}

static int acl_link(const struct authz_subject *sub, int op, int type, const char *name, size_t len,
                    struct conn *cachec, bool log_denied, struct why *why)
{
    if (acl_super_user(A.super_users, sub->principal)) {
        why->rule = "SuperUser";
        return SAMSA_AUTHZ_ALLOW;
    }
    /* a hit costs no image: the controller's published generation says
     * whether the cached decision still holds */
    struct mimage *img = NULL;
    uint64_t gen;
    if (A.acl_gen) {
        gen = A.acl_gen(A.image_arg);
    } else {
        img = A.image ? A.image(A.image_arg) : NULL;
        gen = img && img->acls ? img->acls->gen : 0;
    }
    /* generation 0 is "no ACLs yet": a slot's gen 0 means empty, so
     * such decisions are not cached (they cost nothing to make) */
    struct ckey q = {.link = -1, .api = -1, .gen = gen, .hash = key_hash(op, type, name, len), .op = op,
                     .type = type, .name = name, .len = len};
    bool hit = false;
    struct cache_slot *slot = gen ? cache_lookup(cachec, sub, &q, &hit) : NULL;
    if (hit && (slot->allowed || !log_denied || !name)) {
        mimage_release(img);
        why->rule = slot->allowed ? "Allow (cached)" : "Deny (cached)";
        return slot->allowed ? SAMSA_AUTHZ_ALLOW : SAMSA_AUTHZ_DENY;
    }
    if (!img && A.image) {
        img = A.image(A.image_arg);
        /* the image of this moment decides; what it is cached under is
         * its own generation */
        uint64_t g2 = img && img->acls ? img->acls->gen : 0;
        if (g2 != gen) {
            gen = q.gen = g2;
            hit = false;
            slot = gen ? cache_lookup(cachec, sub, &q, &hit) : NULL;
        }
    }
    const struct mi_acls *acls = img ? img->acls : NULL;
    bool ok;
    if (!name) {
        ok = acl_authorize_any(acls, sub->principal, sub->host, op, type, A.allow_if_none);
        why->rule = ok ? "Allow by resource type" : "Deny by resource type";
        cache_store(slot, &q, ok, 0);
    } else {
        /* a denial to be logged is decided again for its rule */
        enum acl_rule rule;
        const struct mi_acl *a = NULL;
        ok = acl_authorize(acls, sub->principal, sub->host, op, type, name, len, A.allow_if_none, &rule, &a);
        if (a && !ok && log_denied)
            why_text(why,
                     "MatchingAcl(acl=StandardAcl(resourceType=%s, resourceName=%s, patternType=%s, principal=%s, "
                     "host=%s, operation=%s, permissionType=%s))",
                     kacl_resource_type_name(a->resource_type), a->resource_name,
                     kacl_pattern_type_name(a->pattern_type), a->principal, a->host, kacl_operation_name(a->operation),
                     kacl_permission_name(a->permission));
        else
            why->rule = a ? "MatchingAcl" : ok ? "DefaultAllow" : "DefaultDeny";
        if (!hit)
            cache_store(slot, &q, ok, 0);
    }
    mimage_release(img);
    return ok ? SAMSA_AUTHZ_ALLOW : SAMSA_AUTHZ_DENY;
}

/* The ACL generation now, for the plugins' cache keys (an ACL change
 * drops their decisions too). */
static uint64_t acl_gen_now(void)
{
    if (A.acl_gen)
        return A.acl_gen(A.image_arg);
    struct mimage *img = A.image ? A.image(A.image_arg) : NULL;
    uint64_t gen = img && img->acls ? img->acls->gen : 0;
    mimage_release(img);
    return gen;
}

static int plugin_link(const struct plugin_cap *cap, int link, const struct authz_subject *sub, int op, int type,
                       const char *name, size_t len, struct conn *cachec, bool log_denied, struct why *why)
{
    struct ckey q = {.link = link, .api = sub->api_key, .gen = acl_gen_now() + 1,
                     .pgen = plugin_registry_generation(A.reg), .op = op, .type = type, .name = name, .len = len};
    q.hash = key_hash(op, type, name, len) ^ ((uint64_t)(link + 1) * 0x9e3779b97f4a7c15ull) ^
             ((uint64_t)(uint16_t)sub->api_key << 48);
    bool hit = false;
    struct cache_slot *slot = cachec ? cache_lookup(cachec, sub, &q, &hit) : NULL;
    if (hit) {
        if (slot->result == SAMSA_AUTHZ_DENY && log_denied)
            why_text(why, "authorizer %s (cached)", cap->name);
        else
            why->rule = "authorizer (cached)";
        return slot->result;
    }
    char buf[512];
    char *copy = NULL;
    const char *rname = NULL;
    if (name) { /* the ABI hands NUL-terminated names */
        if (len < sizeof buf) {
            memcpy(buf, name, len);
            buf[len] = 0;
            rname = buf;
        } else {
            rname = copy = xstrndup(name, len);
        }
    }
    samsa_authz_action_t act = {.operation = op, .resource_type = type, .resource_name = rname,
                                .log_if_allowed = true, .log_if_denied = log_denied};
    uint8_t uncacheable = 0;
    samsa_authz_ctx_t ctx = {.struct_size = sizeof ctx, .principal = sub->principal, .client_host = sub->host,
                             .listener = sub->listener ? sub->listener : "", .client_id = sub->client_id,
                             .api_key = sub->api_key, .api_version = sub->api_version, .uncacheable = &uncacheable};
    uint8_t r = SAMSA_AUTHZ_DENY;
    int rc = cap->vt.authorizer.authorize(cap->state, &ctx, &act, 1, &r);
    free(copy);
    if (rc != SAMSA_OK) {
        why_text(why, "authorizer %s failed (%d)", cap->name, rc);
        return SAMSA_AUTHZ_DENY;
    }
    if (r != SAMSA_AUTHZ_ALLOW && r != SAMSA_AUTHZ_DENY && r != SAMSA_AUTHZ_DEFER) {
        why_text(why, "authorizer %s answered %d", cap->name, (int)r);
        return SAMSA_AUTHZ_DENY;
    }
    if (!uncacheable)
        cache_store(slot, &q, false, r);
    if (r == SAMSA_AUTHZ_DENY && log_denied)
        why_text(why, "authorizer %s", cap->name);
    else
        why->rule = "authorizer";
    return r;
}

static const char *type_display(int type)
{
    /* Kafka's SecurityUtils.resourceTypeName */
    switch (type) {
    case ACL_RES_TOPIC: return "Topic";
    case ACL_RES_GROUP: return "Group";
    case ACL_RES_CLUSTER: return "Cluster";
    case ACL_RES_TRANSACTIONAL_ID: return "TransactionalId";
    case ACL_RES_DELEGATION_TOKEN: return "DelegationToken";
    case ACL_RES_USER: return "User";
    default: return "Unknown";
    }
}

static void log_denial(const struct authz_subject *s, int op, int type, const char *name, size_t len,
                       const struct why *why)
{
    int64_t now = clock_mono_ms() / 1000;
    long dropped = 0;
    pthread_mutex_lock(&denial_lock);
    if (now != denial_second) {
        denial_second = now;
        denial_lines = 0;
    }
    bool emit = denial_lines < DENIAL_LINES_PER_S;
    if (emit) {
        denial_lines++;
        dropped = denial_dropped;
        denial_dropped = 0;
    } else {
        denial_dropped++;
    }
    pthread_mutex_unlock(&denial_lock);
    if (!emit)
        return;
    const struct kapi *api = kapi_get(s->api_key);
    slog_info("authorizer: Principal = %s is Denied operation = %s from host = %s on resource = %s:LITERAL:%.*s "
              "for request = %s based on rule %s%s%.0ld%s",
              s->principal, kacl_operation_name(op), s->host, type_display(type), name ? (int)len : 1,
              name ? name : "*", api ? api->name : "?", why->rule, dropped ? " (" : "", dropped,
              dropped ? " earlier denial lines not logged)" : "");
}

bool authz_decide(const struct authz_subject *s, enum acl_op op, enum acl_resource type, const char *name,
                  size_t len, bool log_denied, struct conn *cache)
{
    if (A.n == 0)
        return true;
    struct why why; /* text is written only for a denial to log */
    why.rule = "end of the authorizer chain";
    int r = SAMSA_AUTHZ_DEFER;
    for (int i = 0; i < A.n && r == SAMSA_AUTHZ_DEFER; i++) {
        const char *before = why.rule;
        r = A.links[i].cap ? plugin_link(A.links[i].cap, i, s, (int)op, (int)type, name, len, cache, log_denied, &why)
                           : acl_link(s, (int)op, (int)type, name, len, cache, log_denied, &why);
        if (r == SAMSA_AUTHZ_DEFER)
            why.rule = before;
    }
    if (r == SAMSA_AUTHZ_ALLOW)
        return true;
    if (log_denied)
        log_denial(s, (int)op, (int)type, name, len, &why);
    return false;
}

/* Who asks: the client an envelope names (a request a broker forwarded,
 * api/envelope.c), else the connection's. host has room for 64 bytes. */
static void subject_of(const struct request *req, struct authz_subject *s, char *host, size_t hostlen, char *cid,
                       size_t cidlen)
{
    const struct conn *c = req->conn;
    s->principal = req->principal || c ? req_principal(req) : SASL_ANONYMOUS;
    if (req->client_host || c)
        req_client_host(req, host, hostlen);
    else
        snprintf(host, hostlen, "*");
    s->host = host;
    s->listener = c ? c->listener : "";
    snprintf(cid, cidlen, "%.*s", req->client_id.len > 0 ? (int)req->client_id.len : 0,
             req->client_id.len > 0 ? req->client_id.p : "");
    s->client_id = cid;
    s->api_key = req->api_key;
    s->api_version = req->api_version;
}

static bool check(const struct request *req, enum acl_op op, enum acl_resource type, kstr_t name, bool any,
                  bool log_denied)
{
    if (A.n == 0)
        return true;
    struct authz_subject s;
    char cid[256], host[80];
    subject_of(req, &s, host, sizeof host, cid, sizeof cid);
    /* the cache is the connection's principal's: an envelope's requests
     * each bring their own */
    struct conn *cache = req->principal ? NULL : req->conn;
    return authz_decide(&s, op, type, any ? NULL : (name.len > 0 ? name.p : ""), any || name.len < 0 ? 0 : (size_t)name.len,
                        log_denied, cache);
}

bool authz_allowed(const struct request *req, enum acl_op op, enum acl_resource type, kstr_t name)
{
    return check(req, op, type, name, false, true);
}

bool authz_filter(const struct request *req, enum acl_op op, enum acl_resource type, kstr_t name)
{
    return check(req, op, type, name, false, false);
}

bool authz_allowed_any(const struct request *req, enum acl_op op, enum acl_resource type)
{
    /* Kafka's authorizeByResourceType logs nothing of its own */
    return check(req, op, type, KSTR_NULL, true, false);
}
