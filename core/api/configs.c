/* DescribeConfigs (v0-4), AlterConfigs (v0-2) and IncrementalAlterConfigs
 * (v0-1) on TOPIC and BROKER resources, answered as a combined KRaft node
 * of Kafka does: DescribeConfigs by the broker (Kafka's ConfigHelper);
 * the two alter APIs first preprocessed by the broker (ConfigAdminManager:
 * duplicates, null values, broker resources validated), then by the
 * controller (ControllerApis: authorization; ConfigurationControlManager
 * and ControllerConfigurationValidator: topic names, topic configs,
 * existence), which persists ConfigRecords.
 *
 * A broker that is not the active controller preprocesses (its own
 * BROKER resource checked against its own config) and forwards what is
 * left to the active controller, merging the answers, as Kafka's
 * KafkaApis does; on its controller listener the active controller does
 * the controller's part only, so a BROKER resource naming another broker
 * (the one that forwarded it, having checked it) is stored for that
 * broker (controller_alter_broker_resource). DescribeConfigs of a BROKER
 * resource is answered only by that broker, as Kafka's ConfigHelper does
 * (clients send it there).
 *
 * This node's broker configs are changed only through
 * controller_alter_broker_configs and the records it writes, applied by
 * swapping b->cfg (see broker.h); handlers load b->cfg once per request.
 *
 * BROKER_LOGGER, GROUP and CLIENT_METRICS resources are not supported:
 * they get INVALID_REQUEST with the message Kafka gives a resource type
 * its handler does not take. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/forward.h"
#include "api/handlers.h"
#include "api/request.h"
#include "auth/authz.h"
#include "net/conn.h"
#include "broker.h"
#include "config.h"
#include "controller/controller.h"
#include "net/offload.h"
#include "net/park.h"
#include "plugin/registry.h"
#include "proto/gen/alter_configs_request.h"
#include "proto/gen/alter_configs_response.h"
#include "proto/gen/describe_configs_request.h"
#include "proto/gen/describe_configs_response.h"
#include "proto/gen/incremental_alter_configs_request.h"
#include "proto/gen/incremental_alter_configs_response.h"
#include "proto/kerr.h"
#include "topic_config.h"
#include "util/hmap.h"

/* Kafka's ConfigResource.Type ids. */
enum {
    RES_UNKNOWN = 0,
    RES_TOPIC = 2,
    RES_BROKER = 4,
    RES_BROKER_LOGGER = 8,
    RES_CLIENT_METRICS = 16,
    RES_GROUP = 32,
};

/* Kafka's default messages (Errors.message()), which ApiError(Errors)
 * and getErrorResponse put in responses. */
#define MSG_TOPIC_AUTHORIZATION_FAILED "Topic authorization failed."
#define MSG_CLUSTER_AUTHORIZATION_FAILED "Cluster authorization failed."
#define MSG_GROUP_AUTHORIZATION_FAILED "Group authorization failed."
#define MSG_INVALID_REQUEST                                                                        \
    "This most likely occurs because of a request being malformed by the client library or the " \
    "message was sent to an incompatible broker. See the broker logs for more details."

/* ConfigResource.Type's enum names, as Kafka's messages print them. */
static const char *resource_type_name(int8_t type)
{
    switch (type) {
    case RES_TOPIC: return "TOPIC";
    case RES_BROKER: return "BROKER";
    case RES_BROKER_LOGGER: return "BROKER_LOGGER";
    case RES_CLIENT_METRICS: return "CLIENT_METRICS";
    case RES_GROUP: return "GROUP";
    default: return "UNKNOWN";
    }
}

static kstr_t ks(struct arena *a, const char *s) { return s ? kstr_arena(a, s) : KSTR_NULL; }

static kstr_t kfmt(struct arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static kstr_t kfmt(struct arena *a, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return kstr_arena(a, buf);
}

/* Java's Integer.parseInt (Scala's String.toInt): optional sign, ASCII
 * digits, within int32. */
static bool parse_java_int(kstr_t s, int32_t *out)
{
    int32_t i = 0;
    bool neg = false;
    if (s.len <= 0)
        return false;
    if (s.p[0] == '-' || s.p[0] == '+') {
        neg = s.p[0] == '-';
        i = 1;
        if (s.len == 1)
            return false;
    }
    int64_t v = 0;
    for (; i < s.len; i++) {
        if (s.p[i] < '0' || s.p[i] > '9')
            return false;
        v = v * 10 + (s.p[i] - '0');
        if (v > (int64_t)INT32_MAX + 1)
            return false;
    }
    if (neg)
        v = -v;
    if (v > INT32_MAX || v < INT32_MIN)
        return false;
    *out = (int32_t)v;
    return true;
}

#define PKSTR(s) (int)((s).len > 0 ? (s).len : 0), ((s).p ? (s).p : "")

/* ------------------------------------------------------------------ */
/* DescribeConfigs                                                     */

typedef describe_configs_response_describe_configs_result_t dc_result_t;
typedef describe_configs_response_describe_configs_resource_result_t dc_entry_t;
typedef describe_configs_request_describe_configs_resource_t dc_resource_t;

struct dc_ctx {
    struct request *req;
    const struct samsa_config *cfg;
    const struct mimage *img;
    bool synonyms, docs;
    struct config_entry *e; /* scratch, in the arena: too big for comfort on the stack */
    bool all;               /* of the resource being answered: every config */
    struct hmap names;      /* ... else the names asked for */
};

/* Kafka lists every config when ConfigurationKeys is null or empty, else
 * the named ones it has (unknown names are left out silently, repeated
 * ones listed once). */
static void wanted_init(struct dc_ctx *x, const dc_resource_t *res)
{
    hmap_free(&x->names);
    hmap_init(&x->names);
    x->all = res->configuration_keys.n <= 0;
    for (int32_t i = 0; i < res->configuration_keys.n; i++) {
        kstr_t k = res->configuration_keys.a[i];
        if (k.len > 0)
            hmap_put(&x->names, k.p, (size_t)k.len, (void *)1);
    }
}

static bool wanted(const struct dc_ctx *x, const char *name)
{
    return x->all || (name[0] && hmap_get(&x->names, name, strlen(name)));
}

static void add_entry(struct dc_ctx *x, dc_result_t *r, const struct config_entry *e)
{
    struct arena *a = &x->req->arena;
    dc_entry_t *o = &r->configs.a[r->configs.n++];
    o->name = ks(a, e->name);
    o->value = e->sensitive ? KSTR_NULL : ks(a, e->value);
    o->read_only = e->read_only;
    /* v0 only. Kafka's own server leaves it false; older ones (and what v0
     * clients infer the source from) meant "not set anywhere". */
    o->is_default = e->source == CONFIG_SOURCE_DEFAULT;
    o->config_source = (int8_t)e->source;
    o->is_sensitive = e->sensitive;
    o->config_type = (int8_t)e->type;
    o->documentation = x->docs ? ks(a, e->doc) : KSTR_NULL;
    o->synonyms.n = 0;
    if (x->synonyms && e->n_synonyms > 0) {
        o->synonyms.a =
            describe_configs_response_describe_configs_synonym_new_array(a, (int32_t)e->n_synonyms);
        for (size_t i = 0; i < e->n_synonyms; i++) {
            describe_configs_response_describe_configs_synonym_t *s = &o->synonyms.a[o->synonyms.n++];
            s->name = ks(a, e->synonyms[i].name);
            s->value = e->sensitive ? KSTR_NULL : ks(a, e->synonyms[i].value);
            s->source = (int8_t)e->synonyms[i].source;
        }
    }
}

static void dc_error(struct dc_ctx *x, dc_result_t *r, int16_t code, kstr_t msg)
{
    (void)x;
    r->error_code = code;
    r->error_message = msg;
    r->configs.n = 0;
}

static void describe_topic(struct dc_ctx *x, const dc_resource_t *res, dc_result_t *r)
{
    struct arena *a = &x->req->arena;
    char msg[512];
    int rc = controller_check_topic_name(res->resource_name, msg, sizeof msg);
    if (rc != 0) {
        dc_error(x, r, (int16_t)rc, kstr_arena(a, msg));
        return;
    }
    const struct mi_topic *t = mimage_topic(x->img, res->resource_name);
    if (!t) {
        /* ConfigHelper answers the code alone, no message. */
        dc_error(x, r, KERR_UNKNOWN_TOPIC_OR_PARTITION, KSTR_NULL);
        return;
    }
    struct topic_config_kv *kv = arena_alloc(a, (size_t)(t->nconfigs > 0 ? t->nconfigs : 1) * sizeof *kv);
    for (int32_t i = 0; i < t->nconfigs; i++)
        kv[i] = (struct topic_config_kv){t->configs[i].key, t->configs[i].value};
    r->configs.a = describe_configs_response_describe_configs_resource_result_new_array(
        a, (int32_t)topic_config_defs_count);
    for (size_t i = 0; i < topic_config_defs_count; i++) {
        if (!wanted(x, topic_config_defs[i].def.name))
            continue;
        topic_config_describe(x->cfg, kv, (size_t)(t->nconfigs > 0 ? t->nconfigs : 0), i, x->e);
        add_entry(x, r, x->e);
    }
}

static void describe_broker(struct dc_ctx *x, const dc_resource_t *res, dc_result_t *r)
{
    struct arena *a = &x->req->arena;
    int32_t node = x->req->broker->node_id, id;
    bool cluster_default = res->resource_name.len <= 0;
    if (!cluster_default) {
        if (!parse_java_int(res->resource_name, &id)) {
            dc_error(x, r, KERR_INVALID_REQUEST,
                     kfmt(a, "Broker id must be an integer, but it is: %.*s", PKSTR(res->resource_name)));
            return;
        }
        if (id != node) {
            dc_error(x, r, KERR_INVALID_REQUEST,
                     kfmt(a, "Unexpected broker id, expected %d or empty string, but received %.*s",
                          (int)node, PKSTR(res->resource_name)));
            return;
        }
    }
    size_t n = config_describe_count(x->cfg);
    r->configs.a = describe_configs_response_describe_configs_resource_result_new_array(a, (int32_t)n);
    for (size_t i = 0; i < n; i++) {
        const char *name, *value;
        if (i < config_defs_count)
            name = config_defs[i].name;
        else
            config_extra_get(x->cfg, i - config_defs_count, &name, &value);
        if (wanted(x, name) && config_describe(x->cfg, i, cluster_default, x->e))
            add_entry(x, r, x->e);
    }
}

/* ConfigHelper's BROKER_LOGGER checks of the name; then, as samsa has no
 * runtime loggers to list, the answer for a type it does not handle. */
static void describe_broker_logger(struct dc_ctx *x, const dc_resource_t *res, dc_result_t *r)
{
    struct arena *a = &x->req->arena;
    int32_t node = x->req->broker->node_id, id;
    if (res->resource_name.len <= 0)
        dc_error(x, r, KERR_INVALID_REQUEST, KSTR_LIT("Broker id must not be empty"));
    else if (!parse_java_int(res->resource_name, &id))
        dc_error(x, r, KERR_INVALID_REQUEST,
                 kfmt(a, "Broker id must be an integer, but it is: %.*s", PKSTR(res->resource_name)));
    else if (id != node)
        dc_error(x, r, KERR_INVALID_REQUEST,
                 kfmt(a, "Unexpected broker id, expected %d but received %.*s", (int)node,
                      PKSTR(res->resource_name)));
    else
        dc_error(x, r, KERR_INVALID_REQUEST, KSTR_LIT("Unsupported resource type: BROKER_LOGGER"));
}

/* ConfigHelper.handleDescribeConfigsRequest's authorization: the cluster
 * for broker-wide resources, else the resource itself. */
static bool describe_allowed(struct request *req, const dc_resource_t *res, int16_t *denied)
{
    switch (res->resource_type) {
    case RES_TOPIC:
        *denied = KERR_TOPIC_AUTHORIZATION_FAILED;
        return authz_allowed(req, ACL_OP_DESCRIBE_CONFIGS, ACL_RES_TOPIC, res->resource_name);
    case RES_GROUP:
        *denied = KERR_GROUP_AUTHORIZATION_FAILED;
        return authz_allowed(req, ACL_OP_DESCRIBE_CONFIGS, ACL_RES_GROUP, res->resource_name);
    default: /* BROKER, BROKER_LOGGER, CLIENT_METRICS */
        *denied = KERR_CLUSTER_AUTHORIZATION_FAILED;
        return authz_allowed(req, ACL_OP_DESCRIBE_CONFIGS, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME);
    }
}

static const char *denied_message(int16_t code)
{
    switch (code) {
    case KERR_TOPIC_AUTHORIZATION_FAILED: return MSG_TOPIC_AUTHORIZATION_FAILED;
    case KERR_GROUP_AUTHORIZATION_FAILED: return MSG_GROUP_AUTHORIZATION_FAILED;
    default: return MSG_CLUSTER_AUTHORIZATION_FAILED;
    }
}

static bool known_resource_type(int8_t t)
{
    return t == RES_TOPIC || t == RES_BROKER || t == RES_BROKER_LOGGER || t == RES_CLIENT_METRICS ||
           t == RES_GROUP;
}

void api_handle_describe_configs(struct request *req)
{
    const describe_configs_request_t *q = req->body;
    struct arena *a = &req->arena;
    describe_configs_response_t resp;
    describe_configs_response_init(&resp);
    int32_t n = q->resources.n > 0 ? q->resources.n : 0;
    resp.results.a = describe_configs_response_describe_configs_result_new_array(a, n);

    /* An unknown type makes Kafka's authorization step throw, which fails
     * the whole request: every resource gets INVALID_REQUEST. */
    for (int32_t i = 0; i < n; i++) {
        if (known_resource_type(q->resources.a[i].resource_type))
            continue;
        for (int32_t j = 0; j < n; j++) {
            dc_result_t *r = &resp.results.a[resp.results.n++];
            r->resource_type = q->resources.a[j].resource_type;
            r->resource_name = q->resources.a[j].resource_name;
            r->error_code = KERR_INVALID_REQUEST;
            r->error_message = KSTR_LIT(MSG_INVALID_REQUEST);
        }
        req_respond(req, &resp);
        return;
    }

    struct dc_ctx x = {
        .req = req,
        .cfg = req->broker->cfg, /* one config for the whole answer */
        .img = NULL,
        .synonyms = req->api_version >= 1 && q->include_synonyms,
        .docs = req->api_version >= 3 && q->include_documentation,
        .e = arena_alloc(a, sizeof(struct config_entry)),
    };
    struct mimage *img = controller_image(req->broker->controller);
    x.img = img;
    hmap_init(&x.names);

    /* Kafka answers the authorized resources first, then the others. */
    int16_t *denied = arena_alloc(a, (size_t)(n ? n : 1) * sizeof *denied);
    bool *ok = arena_alloc(a, (size_t)(n ? n : 1) * sizeof *ok);
    for (int32_t i = 0; i < n; i++)
        ok[i] = describe_allowed(req, &q->resources.a[i], &denied[i]);
    for (int pass = 0; pass < 2; pass++) {
        for (int32_t i = 0; i < n; i++) {
            const dc_resource_t *res = &q->resources.a[i];
            if (ok[i] != (pass == 0))
                continue;
            dc_result_t *r = &resp.results.a[resp.results.n++];
            r->resource_type = res->resource_type;
            r->resource_name = res->resource_name;
            r->error_code = KERR_NONE;
            r->error_message = KSTR_NULL;
            r->configs.n = 0;
            if (!ok[i]) {
                dc_error(&x, r, denied[i], KSTR(denied_message(denied[i])));
                continue;
            }
            wanted_init(&x, res);
            switch (res->resource_type) {
            case RES_TOPIC: describe_topic(&x, res, r); break;
            case RES_BROKER: describe_broker(&x, res, r); break;
            case RES_BROKER_LOGGER: describe_broker_logger(&x, res, r); break;
            default:
                dc_error(&x, r, KERR_INVALID_REQUEST,
                         kfmt(a, "Unsupported resource type: %s", resource_type_name(res->resource_type)));
                break;
            }
        }
    }
    req_respond(req, &resp);
    hmap_free(&x.names);
    mimage_release(img);
}

/* ------------------------------------------------------------------ */
/* AlterConfigs and IncrementalAlterConfigs                            */

/* One resource of either request, and its answer. */
struct alt_res {
    int8_t type;
    kstr_t name;
    int32_t n;
    const kstr_t *keys;
    const kstr_t *values;
    const int8_t *ops; /* NULL: legacy AlterConfigs (replace everything) */
    bool answered;
    int16_t code;
    kstr_t msg;
    struct ctl_op *op; /* the change proposed, until committed */
    /* the checks that read files (a listener's key store, a plugin's
     * script), made off the worker before the rest (slow_checks) */
    bool checked;
    int16_t chk_code;
    kstr_t chk_msg;
};

static void answer(struct alt_res *r, int16_t code, kstr_t msg)
{
    r->answered = true;
    r->code = code;
    r->msg = code ? msg : KSTR_NULL;
}

static void answer_c(struct request *req, struct alt_res *r, int16_t code, const char *msg)
{
    answer(r, code, msg && msg[0] ? kstr_arena(&req->arena, msg) : KSTR_NULL);
}

static int8_t op_of(const struct alt_res *r, int32_t i) { return r->ops ? r->ops[i] : CONFIG_OP_SET; }

static bool op_known(int8_t op) { return op >= CONFIG_OP_SET && op <= CONFIG_OP_SUBTRACT; }

/* --- topic resources (the controller's part) --- */

/* A topic's overrides as they will be: pairs in insertion order, a
 * removed one keeping its slot with a NULL value, and an index by key
 * (a request may name many keys). */
struct kvset {
    struct topic_config_kv *kv;
    size_t n, cap;
    struct hmap idx; /* key -> slot + 1 */
};

static void kvset_init(struct kvset *s, struct arena *a, size_t cap)
{
    s->kv = arena_alloc(a, (cap ? cap : 1) * sizeof *s->kv);
    s->n = 0;
    s->cap = cap ? cap : 1;
    hmap_init(&s->idx);
}

static const char *kvset_get(const struct kvset *s, const char *key)
{
    uintptr_t i = (uintptr_t)hmap_get(&s->idx, key, strlen(key) + 1);
    return i ? s->kv[i - 1].value : NULL;
}

/* Sets key to value, or removes it (value NULL). Strings are the caller's. */
static void kvset_put(struct kvset *s, const char *key, const char *value)
{
    uintptr_t i = (uintptr_t)hmap_get(&s->idx, key, strlen(key) + 1);
    if (i) {
        s->kv[i - 1].value = value;
        return;
    }
    if (!value || s->n == s->cap)
        return; /* nothing to remove; cap is sized by the caller */
    s->kv[s->n++] = (struct topic_config_kv){key, value};
    hmap_put(&s->idx, key, strlen(key) + 1, (void *)(uintptr_t)s->n);
}

/* The pairs present, as topic_config_validate_all takes them. */
static size_t kvset_pairs(const struct kvset *s, struct arena *a, struct topic_config_kv **out)
{
    struct topic_config_kv *kv = arena_alloc(a, (s->n ? s->n : 1) * sizeof *kv);
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->kv[i].value)
            kv[n++] = s->kv[i];
    *out = kv;
    return n;
}

/* Java's String.split(","): pieces, trailing empty ones dropped (all of
 * them for a string of commas), the whole string when there is no comma. */
static size_t java_split(struct arena *a, const char *s, char ***out)
{
    size_t cap = 1;
    for (const char *p = s; *p; p++)
        cap += *p == ',';
    char **v = arena_alloc(a, cap * sizeof *v);
    size_t n = 0;
    const char *start = s;
    for (const char *p = s;; p++) {
        if (*p == ',' || !*p) {
            v[n++] = arena_strndup(a, start, (size_t)(p - start));
            if (!*p)
                break;
            start = p + 1;
        }
    }
    if (cap > 1)
        while (n > 0 && !v[n - 1][0])
            n--;
    *out = v;
    return n;
}

/* ConfigurationControlManager's APPEND / SUBTRACT on a topic list config:
 * the current override, else the topic default, split on ',' without
 * empty parts; APPEND adds values not present, SUBTRACT removes the first
 * occurrence of each; joined by ','. */
static const char *topic_list_op(struct arena *a, const char *current, int8_t op, const char *value)
{
    char **cur, **vals;
    size_t ncur = current ? java_split(a, current, &cur) : 0;
    size_t nval = java_split(a, value, &vals);
    char **list = arena_alloc(a, (ncur + nval + 1) * sizeof *list);
    size_t n = 0;
    for (size_t i = 0; i < ncur; i++)
        if (cur[i][0])
            list[n++] = cur[i];
    for (size_t k = 0; k < nval; k++) {
        size_t i;
        for (i = 0; i < n; i++)
            if (strcmp(list[i], vals[k]) == 0)
                break;
        if (op == CONFIG_OP_APPEND && i == n)
            list[n++] = vals[k];
        else if (op == CONFIG_OP_SUBTRACT && i < n) {
            memmove(&list[i], &list[i + 1], (n - i - 1) * sizeof *list);
            n--;
        }
    }
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(list[i]) + 1;
    char *out = arena_alloc(a, len), *p = out;
    for (size_t i = 0; i < n; i++) {
        if (i)
            *p++ = ',';
        size_t l = strlen(list[i]);
        memcpy(p, list[i], l);
        p += l;
    }
    *p = 0;
    return out;
}

static void alter_topic(struct request *req, const struct samsa_config *cfg, struct alt_res *r,
                        bool validate_only)
{
    struct arena *a = &req->arena;
    char msg[1024];
    /* ControllerConfigurationValidator.validateTopicName. */
    if (r->name.len <= 0) {
        answer(r, KERR_INVALID_REQUEST, KSTR_LIT("Default topic resources are not allowed."));
        return;
    }
    int rc = controller_check_topic_name(r->name, msg, sizeof msg);
    if (rc != 0) {
        answer_c(req, r, (int16_t)rc, msg);
        return;
    }
    /* The current overrides (cur), copied: the image is not kept. */
    struct mimage *img = controller_image(req->broker->controller);
    const struct mi_topic *t = mimage_topic(img, r->name);
    size_t ncur = t ? (size_t)t->nconfigs : 0;
    bool exists = t != NULL;
    struct kvset cur, next;
    kvset_init(&cur, a, ncur);
    kvset_init(&next, a, ncur + (size_t)r->n);
    for (size_t i = 0; i < ncur; i++) {
        const char *k = arena_strndup(a, t->configs[i].key, strlen(t->configs[i].key));
        const char *v = arena_strndup(a, t->configs[i].value, strlen(t->configs[i].value));
        kvset_put(&cur, k, v);
        if (r->ops) /* the legacy API starts from nothing */
            kvset_put(&next, k, v);
    }
    mimage_release(img);

    /* ConfigurationControlManager: each key's new value. */
    for (int32_t i = 0; i < r->n; i++) {
        const char *key = kstr_dup(a, r->keys[i]);
        int8_t op = op_of(r, i);
        const char *value = r->values[i].len >= 0 ? kstr_dup(a, r->values[i]) : NULL;
        if (!op_known(op)) {
            /* Kafka's controller fails the whole request on this (a null
             * OpType); refusing the one resource is kinder. */
            answer(r, KERR_INVALID_REQUEST, kfmt(a, "Unknown operations type %d", (int)op));
            goto out;
        }
        if (op == CONFIG_OP_DELETE) {
            kvset_put(&next, key, NULL);
        } else if (op == CONFIG_OP_SET) {
            kvset_put(&next, key, value);
        } else {
            const struct topic_config_def *d = topic_config_def_find(key);
            if (!d || d->def.type != CONFIG_TYPE_LIST) {
                answer(r, KERR_INVALID_CONFIG,
                       kfmt(a, "Can't %s to key %s because its type is not LIST.",
                            op == CONFIG_OP_APPEND ? "APPEND" : "SUBTRACT", key));
                goto out;
            }
            const char *base = kvset_get(&cur, key);
            kvset_put(&next, key, topic_list_op(a, base ? base : d->def.dflt, op, value));
        }
    }
    /* Records only for keys whose value changes (the legacy API also
     * removes every override it does not name). */
    kstr_t *keys = arena_alloc(a, (cur.n + next.n + 1) * sizeof *keys);
    kstr_t *vals = arena_alloc(a, (cur.n + next.n + 1) * sizeof *vals);
    int32_t nch = 0;
    for (size_t i = 0; i < next.n; i++) {
        const char *now = next.kv[i].value, *old = kvset_get(&cur, next.kv[i].key);
        if (now && (!old || strcmp(old, now) != 0)) {
            keys[nch] = KSTR(next.kv[i].key);
            vals[nch++] = KSTR(now);
        }
    }
    for (size_t i = 0; i < cur.n; i++)
        if (!kvset_get(&next, cur.kv[i].key)) {
            keys[nch] = KSTR(cur.kv[i].key);
            vals[nch++] = KSTR_NULL;
        }

    /* validateAlterConfig: the configs first, then whether the topic is
     * there (so a bad config on a missing topic is INVALID_CONFIG). */
    struct topic_config_kv *kv;
    size_t nkv = kvset_pairs(&next, a, &kv);
    if (topic_config_validate_all(cfg, kv, nkv, msg, sizeof msg) != 0) {
        answer_c(req, r, KERR_INVALID_CONFIG, msg);
        goto out;
    }
    if (!exists) {
        answer(r, KERR_UNKNOWN_TOPIC_OR_PARTITION,
               kfmt(a, "The topic '%.*s' does not exist.", PKSTR(r->name)));
        goto out;
    }
    if (validate_only) {
        answer(r, KERR_NONE, KSTR_NULL);
        goto out;
    }
    rc = controller_alter_configs(req->broker->controller, CONTROLLER_RESOURCE_TOPIC, r->name, nch, keys,
                                  vals, false, msg, sizeof msg, &r->op);
    if (rc == KERR_UNKNOWN_TOPIC_OR_PARTITION && !msg[0]) /* deleted meanwhile */
        answer(r, (int16_t)rc, kfmt(a, "The topic '%.*s' does not exist.", PKSTR(r->name)));
    else
        answer_c(req, r, (int16_t)rc, msg);
out:
    hmap_free(&cur.idx);
    hmap_free(&next.idx);
}

/* --- broker resources --- */

/* The changes of a BROKER resource as config_alter_broker takes them. */
static struct config_alter *broker_changes(struct request *req, const struct alt_res *r)
{
    struct config_alter *ch = arena_alloc(&req->arena, (size_t)(r->n + 1) * sizeof *ch);
    for (int32_t i = 0; i < r->n; i++) {
        ch[i].name = kstr_dup(&req->arena, r->keys[i]);
        ch[i].op = (enum config_op)op_of(r, i);
        ch[i].value = r->values[i].len >= 0 ? kstr_dup(&req->arena, r->values[i]) : NULL;
    }
    return ch;
}

/* ConfigAdminManager.preprocess for a BROKER resource: the name must be
 * "" or this node's id, the operations known, and the change valid
 * (checked against the current config, nothing applied; on any node:
 * a broker checks before it forwards). */
static bool preprocess_broker(struct request *req, struct alt_res *r)
{
    struct arena *a = &req->arena;
    int32_t node = req->broker->node_id, id;
    if (r->name.len > 0) {
        if (!parse_java_int(r->name, &id)) {
            answer(r, KERR_INVALID_REQUEST,
                   kfmt(a, "Node id must be an integer, but it is: %.*s", PKSTR(r->name)));
            return false;
        }
        if (id != node) {
            answer(r, KERR_INVALID_REQUEST,
                   kfmt(a, "Unexpected broker id, expected %d, but received %.*s", (int)node,
                        PKSTR(r->name)));
            return false;
        }
    }
    for (int32_t i = 0; i < r->n; i++)
        if (!op_known(op_of(r, i))) {
            answer(r, KERR_INVALID_REQUEST, kfmt(a, "Unknown operations type %d", (int)op_of(r, i)));
            return false;
        }
    char msg[1024];
    int rc = controller_check_broker_configs(req->broker->controller, r->name.len <= 0, r->ops == NULL,
                                             broker_changes(req, r), (size_t)r->n, NULL, msg, sizeof msg);
    if (rc != 0) {
        answer_c(req, r, (int16_t)rc, msg);
        return false;
    }
    /* A new key or trust store, then a plugin's key: their checks read
     * files and ran off the worker before this (slow_checks); their
     * answers come after the config's own, as before. */
    if (r->checked && r->chk_code) {
        answer(r, r->chk_code, r->chk_msg);
        return false;
    }
    return true;
}

/* Whether r names a broker other than this node (the controller's part
 * of a change that broker checked and forwarded). */
static bool names_other_broker(const struct request *req, const struct alt_res *r)
{
    int32_t id;
    return r->name.len > 0 && !(parse_java_int(r->name, &id) && id == req->broker->node_id);
}

static void alter_broker(struct request *req, struct alt_res *r, bool validate_only)
{
    char msg[1024];
    int rc;
    if (names_other_broker(req, r)) {
        /* Checked by the broker it names (which forwarded it); stored as
         * given, as Kafka's controller does. */
        rc = controller_alter_broker_resource(req->broker->controller, r->name, r->ops == NULL,
                                              broker_changes(req, r), (size_t)r->n, validate_only, msg, sizeof msg,
                                              validate_only ? NULL : &r->op);
        answer_c(req, r, (int16_t)rc, msg);
        return;
    }
    if (validate_only) { /* checked in full by preprocess_broker */
        answer(r, KERR_NONE, KSTR_NULL);
        return;
    }
    rc = controller_alter_broker_configs(req->broker->controller, r->name.len <= 0, r->ops == NULL,
                                         broker_changes(req, r), (size_t)r->n, false, msg, sizeof msg, &r->op);
    answer_c(req, r, (int16_t)rc, msg);
}

/* --- both APIs --- */

static char *resource_key(struct arena *a, const struct alt_res *r, size_t *klen)
{
    size_t n = (size_t)(r->name.len > 0 ? r->name.len : 0);
    char *k = arena_alloc(a, n + 1);
    k[0] = (char)r->type;
    if (n)
        memcpy(k + 1, r->name.p, n);
    *klen = n + 1;
    return k;
}

static bool has_duplicate_keys(struct arena *a, const struct alt_res *r)
{
    struct hmap seen;
    hmap_init(&seen);
    bool dup = false;
    for (int32_t i = 0; i < r->n && !dup; i++) {
        /* A leading byte keeps "" a valid key and null apart from it. */
        size_t n = (size_t)(r->keys[i].len > 0 ? r->keys[i].len : 0);
        char *k = arena_alloc(a, n + 1);
        k[0] = r->keys[i].len < 0 ? 'n' : 's';
        if (n)
            memcpy(k + 1, r->keys[i].p, n);
        dup = hmap_put(&seen, k, n + 1, (void *)1) != NULL;
    }
    hmap_free(&seen);
    return dup;
}

/* Which parts of the two steps this node does. */
enum alt_mode {
    ALT_LOCAL,      /* the active controller, asked by a client: both */
    ALT_PREPROCESS, /* a broker about to forward: ConfigAdminManager's */
    ALT_FORWARDED,  /* the active controller, on its controller listener
                     * (a broker's forward): ControllerApis' */
};

/* Both alter APIs: ConfigAdminManager.preprocess, then ControllerApis
 * (authorization) and the controller. Every resource ends answered,
 * except (ALT_PREPROCESS) those left for the controller. */
static void alter_resources(struct request *req, struct alt_res *res, int32_t n, bool validate_only,
                            enum alt_mode mode)
{
    struct arena *a = &req->arena;

    /* Each resource at most once: all copies of a repeated one fail. */
    struct hmap seen;
    hmap_init(&seen);
    for (int32_t i = 0; i < n; i++) {
        size_t kl;
        char *k = resource_key(a, &res[i], &kl);
        hmap_put(&seen, k, kl, (void *)((intptr_t)hmap_get(&seen, k, kl) + 1));
    }
    for (int32_t i = 0; i < n; i++) {
        size_t kl;
        char *k = resource_key(a, &res[i], &kl);
        if ((intptr_t)hmap_get(&seen, k, kl) > 1)
            answer(&res[i], KERR_INVALID_REQUEST, KSTR_LIT("Each resource must appear at most once."));
    }
    hmap_free(&seen);

    for (int32_t i = 0; i < n; i++) {
        struct alt_res *r = &res[i];
        if (r->answered)
            continue;
        if (has_duplicate_keys(a, r)) {
            answer(r, KERR_INVALID_REQUEST, KSTR_LIT("Error due to duplicate config keys"));
            continue;
        }
        /* "Null value not supported for : a, b" (sic: Kafka's wording). */
        size_t nl = 0;
        for (int32_t j = 0; j < r->n; j++)
            if (r->values[j].len < 0 && op_of(r, j) != CONFIG_OP_DELETE)
                nl += (size_t)(r->keys[j].len > 0 ? r->keys[j].len : 0) + 2;
        if (nl) {
            char *m = arena_alloc(a, nl + 64), *p = m;
            p += sprintf(p, "Null value not supported for : ");
            bool first = true;
            for (int32_t j = 0; j < r->n; j++)
                if (r->values[j].len < 0 && op_of(r, j) != CONFIG_OP_DELETE) {
                    p += sprintf(p, "%s%.*s", first ? "" : ", ", PKSTR(r->keys[j]));
                    first = false;
                }
            answer(r, KERR_INVALID_REQUEST, KSTR(m));
            continue;
        }
        if (r->type == RES_BROKER && mode != ALT_FORWARDED) {
            (void)preprocess_broker(req, r);
        } else if (r->type == RES_BROKER) {
            /* The broker named (or any, for "") checked it already. */
            for (int32_t j = 0; j < r->n && !r->answered; j++)
                if (!op_known(op_of(r, j)))
                    answer(r, KERR_INVALID_REQUEST, kfmt(a, "Unknown operations type %d", (int)op_of(r, j)));
        } else if (r->type != RES_TOPIC) {
            answer(r, KERR_INVALID_REQUEST, kfmt(a, "Unknown resource type %d", (int)r->type));
        }
    }
    if (mode == ALT_PREPROCESS)
        return;

    /* The controller's part: authorization, then the change. */
    for (int32_t i = 0; i < n; i++) {
        struct alt_res *r = &res[i];
        if (r->answered)
            continue;
        if (r->type == RES_TOPIC) {
            if (!authz_allowed(req, ACL_OP_ALTER_CONFIGS, ACL_RES_TOPIC, r->name))
                answer(r, KERR_TOPIC_AUTHORIZATION_FAILED, KSTR_LIT(MSG_TOPIC_AUTHORIZATION_FAILED));
            else
                alter_topic(req, req->broker->cfg, r, validate_only); /* as changed by earlier resources */
        } else {
            if (!authz_allowed(req, ACL_OP_ALTER_CONFIGS, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME))
                answer(r, KERR_CLUSTER_AUTHORIZATION_FAILED, KSTR_LIT(MSG_CLUSTER_AUTHORIZATION_FAILED));
            else
                alter_broker(req, r, validate_only);
        }
    }
}

/* --- checks that read files, off the worker --- */

/* A broker change naming a listener's ssl.* keys (KIP-226: the new key
 * and trust stores are loaded and checked, SslFactory's
 * validateReconfiguration) or a plugin's key (plugin.lua.authorizer.script:
 * the plugin checks the new value completely, the lua module compiling
 * and running the script in a scratch sandbox, as Kafka's
 * Reconfigurable.validateReconfiguration) reads files, which a network
 * worker never does. Those checks run on the offload thread
 * (net/offload.h) while the request parks; then the request goes on as
 * if they had been made inline, and preprocess_broker answers with their
 * results, the same codes and messages as before. */
struct slow_item {
    int32_t index;             /* into the request's resources */
    struct samsa_config *next; /* the changed config (owned), when a listener key changes */
    int32_t nplug;
    char **pkeys, **pvals;     /* the plugin.* keys SET (owned) */
    int16_t code;              /* the answer: 0 or Kafka's error */
    char msg[1024];
};

/* malloc'ed; the offload thread's until the job is done */
struct slow_job {
    struct plugin_registry *plugins;
    bool validate_only;
    int32_t n;
    struct slow_item *items;
};

static void slow_job_free(void *arg)
{
    struct slow_job *j = arg;
    for (int32_t i = 0; i < j->n; i++) {
        struct slow_item *it = &j->items[i];
        config_free(it->next);
        for (int32_t k = 0; k < it->nplug; k++) {
            free(it->pkeys[k]);
            free(it->pvals[k]);
        }
        free(it->pkeys);
        free(it->pvals);
    }
    free(j->items);
    free(j);
}

/* Offload thread. */
static void slow_run(void *arg)
{
    struct slow_job *j = arg;
    for (int32_t i = 0; i < j->n; i++) {
        struct slow_item *it = &j->items[i];
        if (it->next) {
            int rc = config_reconfig_check(it->next, !j->validate_only, it->msg, sizeof it->msg);
            if (rc != 0) {
                it->code = (int16_t)rc;
                continue;
            }
        }
        /* (a deletion falls back to the value the broker started with,
         * checked then) */
        for (int32_t k = 0; k < it->nplug; k++)
            if (plugin_registry_reconfigure(j->plugins, it->pkeys[k], it->pvals[k], true, it->msg,
                                            sizeof it->msg) != 0) {
                it->code = KERR_INVALID_CONFIG;
                break;
            }
    }
}

typedef void (*alt_go_fn)(struct request *req, struct alt_res *res, int32_t n, bool forward);

struct slow_wait {
    struct parked pk;
    struct request *req;
    struct offload_job *job;
    struct slow_job *sj; /* the job's: read once it is done */
    struct alt_res *res;
    int32_t n;
    bool forward;
    alt_go_fn go;
};

static bool slow_try(struct parked *pk, bool expired)
{
    struct slow_wait *w = (struct slow_wait *)pk;
    bool done = offload_done(w->job);
    if (!done && !expired)
        return false;
    for (int32_t i = 0; i < w->sj->n; i++) {
        const struct slow_item *it = &w->sj->items[i];
        struct alt_res *r = &w->res[it->index];
        r->checked = true;
        if (!done) {
            r->chk_code = KERR_REQUEST_TIMED_OUT;
            r->chk_msg = KSTR_LIT("The check of the new key store or plugin value did not finish in time.");
        } else {
            r->chk_code = it->code;
            r->chk_msg = it->code && it->msg[0] ? kstr_arena(&w->req->arena, it->msg) : KSTR_NULL;
        }
    }
    w->req->cancel = NULL;
    offload_release(w->job); /* frees sj with it once the thread is done */
    w->job = NULL;
    w->sj = NULL;
    w->go(w->req, w->res, w->n, w->forward);
    return true;
}

static void slow_cancel(struct request *req)
{
    struct slow_wait *w = req->handler_state;
    park_stop(&w->pk);
    offload_release(w->job);
    w->job = NULL;
}

/* Starts the checks of res that read files on the offload thread and
 * parks req until they are done, then calls go(req, res, n, forward):
 * true. False when there are none (the caller goes on at once). */
static bool slow_checks(struct request *req, struct alt_res *res, int32_t n, bool validate_only, bool forward,
                        alt_go_fn go)
{
    /* on the controller listener (a broker's forward) the broker checked */
    if (!forward && req->conn && req->conn->controller_listener)
        return false;
    struct slow_job *j = NULL;
    for (int32_t i = 0; i < n; i++) {
        struct alt_res *r = &res[i];
        if (r->type != RES_BROKER || names_other_broker(req, r))
            continue;
        bool listener = false, known = true;
        int32_t nplug = 0;
        for (int32_t k = 0; k < r->n; k++) {
            known &= op_known(op_of(r, k));
            if (r->keys[k].len >= 14 && !memcmp(r->keys[k].p, "listener.name.", 14))
                listener = true;
            if (op_of(r, k) == CONFIG_OP_SET && r->keys[k].len >= 8 && !memcmp(r->keys[k].p, "plugin.", 7) &&
                r->values[k].len >= 0)
                nplug++;
        }
        if (!known || (!listener && !nplug))
            continue; /* preprocess_broker answers it without them */
        struct samsa_config *next = NULL;
        if (listener) {
            /* the config the change makes; when it fails, preprocess_broker
             * answers that without the file checks */
            char msg[1024];
            if (controller_check_broker_configs(req->broker->controller, r->name.len <= 0, r->ops == NULL,
                                                broker_changes(req, r), (size_t)r->n, &next, msg, sizeof msg) != 0)
                next = NULL;
        }
        if (!next && !nplug)
            continue;
        if (!j) {
            j = xcalloc(1, sizeof *j);
            j->plugins = req->broker->plugins;
            j->validate_only = validate_only;
            j->items = xcalloc((size_t)n, sizeof *j->items);
        }
        struct slow_item *it = &j->items[j->n++];
        it->index = i;
        it->next = next;
        it->pkeys = xcalloc((size_t)nplug + 1, sizeof *it->pkeys);
        it->pvals = xcalloc((size_t)nplug + 1, sizeof *it->pvals);
        for (int32_t k = 0; k < r->n; k++)
            if (op_of(r, k) == CONFIG_OP_SET && r->keys[k].len >= 8 && !memcmp(r->keys[k].p, "plugin.", 7) &&
                r->values[k].len >= 0) {
                it->pkeys[it->nplug] = xstrndup(r->keys[k].p, (size_t)r->keys[k].len);
                it->pvals[it->nplug++] = xstrndup(r->values[k].p, (size_t)r->values[k].len);
            }
    }
    if (!j)
        return false;
    struct slow_wait *w = arena_alloc(&req->arena, sizeof *w);
    w->req = req;
    w->sj = j;
    w->res = res;
    w->n = n;
    w->forward = forward;
    w->go = go;
    req->handler_state = w;
    req->cancel = slow_cancel;
    park_init(&w->pk, req, slow_try);
    w->job = offload_submit(req->broker->wake, slow_run, slow_job_free, j);
    park_watch(&w->pk, offload_key(w->job));
    park_start(&w->pk, 30000);
    return true;
}

/* The proposals of an alter: answered once they are committed. */
struct alt_wait {
    struct alt_res *res;
    int32_t n;
    int32_t *index;
    void (*respond)(struct request *req, struct alt_res *res, int32_t n);
};

static void alt_finish(struct request *req, void *arg, const int16_t *errs)
{
    struct alt_wait *w = arg;
    int k = 0;
    for (int32_t i = 0; i < w->n; i++) {
        if (!w->res[i].op)
            continue;
        if (errs[k])
            answer(&w->res[i], errs[k], KSTR_NULL);
        w->res[i].op = NULL; /* released by the wait */
        k++;
    }
    w->respond(req, w->res, w->n);
}

static void alt_wait_all(struct request *req, struct alt_res *res, int32_t n,
                         void (*respond)(struct request *req, struct alt_res *res, int32_t n))
{
    struct alt_wait *w = arena_alloc(&req->arena, sizeof *w);
    w->res = res;
    w->n = n;
    w->respond = respond;
    struct ctl_op **ops = arena_alloc(&req->arena, (size_t)(n ? n : 1) * sizeof *ops);
    int nops = 0;
    for (int32_t i = 0; i < n; i++)
        if (res[i].op)
            ops[nops++] = res[i].op;
    api_wait_ops(req, ops, nops, 30000, alt_finish, w);
}

static void alter_configs_respond(struct request *req, struct alt_res *res, int32_t n)
{
    alter_configs_response_t resp;
    alter_configs_response_init(&resp);
    resp.responses.a = alter_configs_response_alter_configs_resource_response_new_array(&req->arena, n);
    resp.responses.n = n;
    for (int32_t i = 0; i < n; i++) {
        alter_configs_response_alter_configs_resource_response_t *o = &resp.responses.a[i];
        o->error_code = res[i].code;
        o->error_message = res[i].msg;
        o->resource_type = res[i].type;
        o->resource_name = res[i].name;
    }
    req_respond(req, &resp);
}

static void alter_configs_fail(struct request *req, int16_t err)
{
    const alter_configs_request_t *q = req->body;
    int32_t n = q->resources.n > 0 ? q->resources.n : 0;
    struct alt_res *res = arena_alloc(&req->arena, (size_t)(n ? n : 1) * sizeof *res);
    for (int32_t i = 0; i < n; i++) {
        res[i].type = q->resources.a[i].resource_type;
        res[i].name = q->resources.a[i].resource_name;
        answer(&res[i], err, KSTR_NULL);
    }
    alter_configs_respond(req, res, n);
}

/* The controller's answer to what a broker forwarded goes into the
 * resources left for it (matched by type and name: each appears once). */
static void merge_answers(struct request *req, struct alt_res *res, int32_t n, int16_t err, const int8_t *types,
                          const kstr_t *names, const int16_t *codes, const kstr_t *msgs, int32_t nans)
{
    for (int32_t i = 0; i < n; i++) {
        struct alt_res *r = &res[i];
        if (r->answered)
            continue;
        if (err) {
            answer(r, err, KSTR_NULL);
            continue;
        }
        for (int32_t k = 0; k < nans; k++)
            if (types[k] == r->type && names[k].len == r->name.len &&
                (r->name.len <= 0 || memcmp(names[k].p, r->name.p, (size_t)r->name.len) == 0)) {
                /* (the answer's bytes go when this returns) */
                answer(r, codes[k], msgs[k].len >= 0 ? (kstr_t){kstr_dup(&req->arena, msgs[k]), msgs[k].len} : KSTR_NULL);
                break;
            }
        if (!r->answered)
            answer(r, KERR_UNKNOWN_SERVER_ERROR, KSTR_NULL); /* the controller left it out */
    }
}

struct alt_fwd {
    struct alt_res *res;
    int32_t n;
};

static void alter_configs_forwarded(struct request *req, void *arg, int16_t err, const uint8_t *resp, size_t len)
{
    struct alt_fwd *x = arg;
    alter_configs_response_t ans;
    alter_configs_response_init(&ans);
    struct kreader r;
    kr_init(&r, resp, len, &req->arena);
    if (!err && (alter_configs_response_decode(&r, req->api_version, &ans) < 0 || r.err))
        err = KERR_UNKNOWN_SERVER_ERROR;
    int32_t na = err ? 0 : ans.responses.n;
    int8_t *types = arena_alloc(&req->arena, (size_t)(na > 0 ? na : 1));
    kstr_t *names = arena_alloc(&req->arena, (size_t)(na > 0 ? na : 1) * sizeof *names);
    int16_t *codes = arena_alloc(&req->arena, (size_t)(na > 0 ? na : 1) * sizeof *codes);
    kstr_t *msgs = arena_alloc(&req->arena, (size_t)(na > 0 ? na : 1) * sizeof *msgs);
    for (int32_t k = 0; k < na; k++) {
        types[k] = ans.responses.a[k].resource_type;
        names[k] = ans.responses.a[k].resource_name;
        codes[k] = ans.responses.a[k].error_code;
        msgs[k] = ans.responses.a[k].error_message;
    }
    merge_answers(req, x->res, x->n, err, types, names, codes, msgs, na);
    alter_configs_respond(req, x->res, x->n);
}

/* Kafka's broker (KafkaApis): ConfigAdminManager.preprocess here, the
 * rest forwarded to the active controller. */
static void alter_configs_forward(struct request *req, struct alt_res *res, int32_t n)
{
    const alter_configs_request_t *q = req->body;
    alter_resources(req, res, n, q->validate_only, ALT_PREPROCESS);
    alter_configs_request_t *left = arena_alloc(&req->arena, sizeof *left);
    *left = *q;
    left->resources.a = alter_configs_request_alter_configs_resource_new_array(&req->arena, n);
    left->resources.n = 0;
    for (int32_t i = 0; i < n; i++)
        if (!res[i].answered)
            left->resources.a[left->resources.n++] = q->resources.a[i];
    if (left->resources.n == 0) {
        alter_configs_respond(req, res, n);
        return;
    }
    struct alt_fwd *x = arena_alloc(&req->arena, sizeof *x);
    x->res = res;
    x->n = n;
    api_forward_body(req, left, 30000, alter_configs_forwarded, x);
}

/* The rest of AlterConfigs, once the checks that read files are done. */
static void alter_configs_go(struct request *req, struct alt_res *res, int32_t n, bool forward)
{
    const alter_configs_request_t *q = req->body;
    if (forward) {
        alter_configs_forward(req, res, n);
        return;
    }
    alter_resources(req, res, n, q->validate_only, req->conn && req->conn->controller_listener ? ALT_FORWARDED : ALT_LOCAL);
    alt_wait_all(req, res, n, alter_configs_respond);
}

void api_handle_alter_configs(struct request *req)
{
    const alter_configs_request_t *q = req->body;
    struct arena *a = &req->arena;
    bool not_controller;
    bool forward = api_should_forward(req, &not_controller);
    if (not_controller) {
        alter_configs_fail(req, KERR_NOT_CONTROLLER);
        return;
    }
    int32_t n = q->resources.n > 0 ? q->resources.n : 0;
    struct alt_res *res = arena_alloc(a, (size_t)(n ? n : 1) * sizeof *res);
    for (int32_t i = 0; i < n; i++) {
        const alter_configs_request_alter_configs_resource_t *x = &q->resources.a[i];
        struct alt_res *r = &res[i];
        r->type = x->resource_type;
        r->name = x->resource_name;
        r->n = x->configs.n > 0 ? x->configs.n : 0;
        kstr_t *keys = arena_alloc(a, (size_t)(r->n + 1) * sizeof *keys);
        kstr_t *vals = arena_alloc(a, (size_t)(r->n + 1) * sizeof *vals);
        for (int32_t j = 0; j < r->n; j++) {
            keys[j] = x->configs.a[j].name;
            vals[j] = x->configs.a[j].value;
        }
        r->keys = keys;
        r->values = vals;
        r->ops = NULL;
    }
    if (!slow_checks(req, res, n, q->validate_only, forward, alter_configs_go))
        alter_configs_go(req, res, n, forward);
}

static void incremental_respond(struct request *req, struct alt_res *res, int32_t n)
{
    incremental_alter_configs_response_t resp;
    incremental_alter_configs_response_init(&resp);
    resp.responses.a = incremental_alter_configs_response_alter_configs_resource_response_new_array(&req->arena, n);
    resp.responses.n = n;
    for (int32_t i = 0; i < n; i++) {
        incremental_alter_configs_response_alter_configs_resource_response_t *o = &resp.responses.a[i];
        o->error_code = res[i].code;
        o->error_message = res[i].msg;
        o->resource_type = res[i].type;
        o->resource_name = res[i].name;
    }
    req_respond(req, &resp);
}

static void incremental_fail(struct request *req, int16_t err)
{
    const incremental_alter_configs_request_t *q = req->body;
    int32_t n = q->resources.n > 0 ? q->resources.n : 0;
    struct alt_res *res = arena_alloc(&req->arena, (size_t)(n ? n : 1) * sizeof *res);
    for (int32_t i = 0; i < n; i++) {
        res[i].type = q->resources.a[i].resource_type;
        res[i].name = q->resources.a[i].resource_name;
        answer(&res[i], err, KSTR_NULL);
    }
    incremental_respond(req, res, n);
}

static void incremental_forwarded(struct request *req, void *arg, int16_t err, const uint8_t *resp, size_t len)
{
    struct alt_fwd *x = arg;
    incremental_alter_configs_response_t ans;
    incremental_alter_configs_response_init(&ans);
    struct kreader r;
    kr_init(&r, resp, len, &req->arena);
    if (!err && (incremental_alter_configs_response_decode(&r, req->api_version, &ans) < 0 || r.err))
        err = KERR_UNKNOWN_SERVER_ERROR;
    int32_t na = err ? 0 : ans.responses.n;
    int8_t *types = arena_alloc(&req->arena, (size_t)(na > 0 ? na : 1));
    kstr_t *names = arena_alloc(&req->arena, (size_t)(na > 0 ? na : 1) * sizeof *names);
    int16_t *codes = arena_alloc(&req->arena, (size_t)(na > 0 ? na : 1) * sizeof *codes);
    kstr_t *msgs = arena_alloc(&req->arena, (size_t)(na > 0 ? na : 1) * sizeof *msgs);
    for (int32_t k = 0; k < na; k++) {
        types[k] = ans.responses.a[k].resource_type;
        names[k] = ans.responses.a[k].resource_name;
        codes[k] = ans.responses.a[k].error_code;
        msgs[k] = ans.responses.a[k].error_message;
    }
    merge_answers(req, x->res, x->n, err, types, names, codes, msgs, na);
    incremental_respond(req, x->res, x->n);
}

static void incremental_forward(struct request *req, struct alt_res *res, int32_t n)
{
    const incremental_alter_configs_request_t *q = req->body;
    alter_resources(req, res, n, q->validate_only, ALT_PREPROCESS);
    incremental_alter_configs_request_t *left = arena_alloc(&req->arena, sizeof *left);
    *left = *q;
    left->resources.a = incremental_alter_configs_request_alter_configs_resource_new_array(&req->arena, n);
    left->resources.n = 0;
    for (int32_t i = 0; i < n; i++)
        if (!res[i].answered)
            left->resources.a[left->resources.n++] = q->resources.a[i];
    if (left->resources.n == 0) {
        incremental_respond(req, res, n);
        return;
    }
    struct alt_fwd *x = arena_alloc(&req->arena, sizeof *x);
    x->res = res;
    x->n = n;
    api_forward_body(req, left, 30000, incremental_forwarded, x);
}

/* The rest of IncrementalAlterConfigs, once the checks that read files
 * are done. */
static void incremental_go(struct request *req, struct alt_res *res, int32_t n, bool forward)
{
    const incremental_alter_configs_request_t *q = req->body;
    if (forward) {
        incremental_forward(req, res, n);
        return;
    }
    alter_resources(req, res, n, q->validate_only, req->conn && req->conn->controller_listener ? ALT_FORWARDED : ALT_LOCAL);
    alt_wait_all(req, res, n, incremental_respond);
}

void api_handle_incremental_alter_configs(struct request *req)
{
    const incremental_alter_configs_request_t *q = req->body;
    struct arena *a = &req->arena;
    bool not_controller;
    bool forward = api_should_forward(req, &not_controller);
    if (not_controller) {
        incremental_fail(req, KERR_NOT_CONTROLLER);
        return;
    }
    int32_t n = q->resources.n > 0 ? q->resources.n : 0;
    struct alt_res *res = arena_alloc(a, (size_t)(n ? n : 1) * sizeof *res);
    for (int32_t i = 0; i < n; i++) {
        const incremental_alter_configs_request_alter_configs_resource_t *x = &q->resources.a[i];
        struct alt_res *r = &res[i];
        r->type = x->resource_type;
        r->name = x->resource_name;
        r->n = x->configs.n > 0 ? x->configs.n : 0;
        kstr_t *keys = arena_alloc(a, (size_t)(r->n + 1) * sizeof *keys);
        kstr_t *vals = arena_alloc(a, (size_t)(r->n + 1) * sizeof *vals);
        int8_t *ops = arena_alloc(a, (size_t)(r->n + 1) * sizeof *ops);
        for (int32_t j = 0; j < r->n; j++) {
            keys[j] = x->configs.a[j].name;
            vals[j] = x->configs.a[j].value;
            ops[j] = x->configs.a[j].config_operation;
        }
        r->keys = keys;
        r->values = vals;
        r->ops = ops;
    }
    if (!slow_checks(req, res, n, q->validate_only, forward, incremental_go))
        incremental_go(req, res, n, forward);
}
