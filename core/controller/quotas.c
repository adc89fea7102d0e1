/* Client quotas in the metadata log: ClientQuotaRecord replayed into
 * the image (Kafka's ClientQuotaControlManager.replay and
 * ClientQuotasImage), AlterClientQuotas as the controller decides it
 * (ClientQuotaControlManager.alterClientQuotas), and the resolution of
 * a client's quota (Kafka's DefaultQuotaCallback). */
#include <arpa/inet.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/controller_internal.h"
#include "proto/gen/alter_client_quotas_request.h"
#include "proto/gen/client_quota_record.h"
#include "proto/gen/kmeta.h"
#include "proto/kerr.h"
#include "util/buf.h"
#include "util/slog.h"

static const char *const key_names[MI_QUOTA_NKEYS] = {
    [MI_QUOTA_PRODUCER_BYTE_RATE] = "producer_byte_rate",
    [MI_QUOTA_CONSUMER_BYTE_RATE] = "consumer_byte_rate",
    [MI_QUOTA_REQUEST_PERCENTAGE] = "request_percentage",
    [MI_QUOTA_CONTROLLER_MUTATION_RATE] = "controller_mutation_rate",
    [MI_QUOTA_CONNECTION_CREATION_RATE] = "connection_creation_rate",
};

const char *mi_quota_key_name(int key) { return key >= 0 && key < MI_QUOTA_NKEYS ? key_names[key] : NULL; }

int mi_quota_key_of(const char *name, size_t len)
{
    for (int k = 0; k < MI_QUOTA_NKEYS; k++)
        if (strlen(key_names[k]) == len && memcmp(key_names[k], name, len) == 0)
            return k;
    return -1;
}

/* ------------------------------------------------------------------ */
/* The image's entities                                                */

static bool name_eq(const struct mi_quota_name *a, const struct mi_quota_name *b)
{
    return a->kind == b->kind && (a->kind != MI_QN_NAMED || strcmp(a->name, b->name) == 0);
}

static bool entity_eq(const struct mi_quota *a, const struct mi_quota *b)
{
    return name_eq(&a->user, &b->user) && name_eq(&a->client_id, &b->client_id) && name_eq(&a->ip, &b->ip);
}

static void name_free(struct mi_quota_name *n)
{
    free(n->name);
    n->name = NULL;
}

static void quota_fini(struct mi_quota *q)
{
    name_free(&q->user);
    name_free(&q->client_id);
    name_free(&q->ip);
}

void mi_quotas_free(struct mi_quota *a, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        quota_fini(&a[i]);
    free(a);
}

static struct mi_quota_name name_dup(const struct mi_quota_name *n)
{
    return (struct mi_quota_name){n->kind, n->name ? xstrdup(n->name) : NULL};
}

struct mi_quota *mi_quotas_dup(const struct mi_quota *a, int32_t n)
{
    if (n <= 0)
        return NULL;
    struct mi_quota *r = xcalloc((size_t)n, sizeof *r);
    for (int32_t i = 0; i < n; i++) {
        r[i] = a[i];
        r[i].user = name_dup(&a[i].user);
        r[i].client_id = name_dup(&a[i].client_id);
        r[i].ip = name_dup(&a[i].ip);
    }
    return r;
}

/* The entity of a record or request: its components by type. Returns
 * false on an unknown or repeated type (the caller decides). Names
 * point into the record (not owned: the caller copies). */
struct qent {
    kstr_t user, client_id, ip;
    bool has_user, has_client_id, has_ip;
};

static int qent_add(struct qent *e, kstr_t type, kstr_t name)
{
    bool *has;
    kstr_t *slot;
    if (kstr_eqc(type, "user")) {
        has = &e->has_user;
        slot = &e->user;
    } else if (kstr_eqc(type, "client-id")) {
        has = &e->has_client_id;
        slot = &e->client_id;
    } else if (kstr_eqc(type, "ip")) {
        has = &e->has_ip;
        slot = &e->ip;
    } else {
        return -1; /* unknown type */
    }
    if (*has)
        return -2; /* repeated */
    *has = true;
    *slot = name;
    return 0;
}

static void set_name(struct mi_quota_name *n, bool has, kstr_t name)
{
    n->kind = !has ? MI_QN_ABSENT : name.len < 0 ? MI_QN_DEFAULT : MI_QN_NAMED;
    n->name = n->kind == MI_QN_NAMED ? xstrndup(name.p ? name.p : "", (size_t)name.len) : NULL;
}

static void entity_of(struct mi_quota *q, const struct qent *e)
{
    memset(q, 0, sizeof *q);
    set_name(&q->user, e->has_user, e->user);
    set_name(&q->client_id, e->has_client_id, e->client_id);
    set_name(&q->ip, e->has_ip, e->ip);
}

static int32_t find_entity(const struct mi_quota *a, int32_t n, const struct mi_quota *e)
{
    for (int32_t i = 0; i < n; i++)
        if (entity_eq(&a[i], e))
            return i;
    return -1;
}

bool mi_quotas_apply(struct mi_quota **a, int32_t *n, const client_quota_record_t *r)
{
    struct qent e;
    memset(&e, 0, sizeof e);
    for (int32_t i = 0; i < r->entity.n; i++)
        if (qent_add(&e, r->entity.a[i].entity_type, r->entity.a[i].entity_name) < 0)
            return false; /* an entity type samsa does not know: not enforceable, skipped */
    int key = r->key.len >= 0 ? mi_quota_key_of(r->key.p, (size_t)r->key.len) : -1;
    if (key < 0)
        return false;
    struct mi_quota probe;
    entity_of(&probe, &e);
    int32_t i = find_entity(*a, *n, &probe);
    if (r->remove) {
        quota_fini(&probe);
        if (i < 0)
            return false;
        struct mi_quota *q = &(*a)[i];
        q->set &= ~(1u << key);
        q->values[key] = 0;
        if (!q->set) {
            quota_fini(q);
            memmove(q, q + 1, (size_t)(*n - i - 1) * sizeof *q);
            (*n)--;
        }
        return true;
    }
    if (i < 0) {
        *a = xrealloc(*a, (size_t)(*n + 1) * sizeof **a);
        i = (*n)++;
        (*a)[i] = probe;
    } else {
        quota_fini(&probe);
    }
    (*a)[i].values[key] = r->value;
    (*a)[i].set |= 1u << key;
    return true;
}

uint64_t mi_quota_next_gen(void)
{
    static atomic_uint_fast64_t gen;
    return (uint64_t)atomic_fetch_add(&gen, 1) + 1;
}

/* ------------------------------------------------------------------ */
/* Resolution                                                          */

static bool matches(const struct mi_quota_name *n, int want, const char *name)
{
    if (want == MI_QN_ABSENT)
        return n->kind == MI_QN_ABSENT;
    if (want == MI_QN_DEFAULT)
        return n->kind == MI_QN_DEFAULT;
    return n->kind == MI_QN_NAMED && strcmp(n->name, name) == 0;
}

bool mimage_quota_lookup(const struct mimage *m, int key, const char *user, const char *client_id, double *value,
                         bool *by_user, bool *by_client)
{
    /* Kafka's precedence, most specific first: (user, client-id) kinds */
    static const int8_t order[8][2] = {
        {MI_QN_NAMED, MI_QN_NAMED},     {MI_QN_NAMED, MI_QN_DEFAULT},   {MI_QN_NAMED, MI_QN_ABSENT},
        {MI_QN_DEFAULT, MI_QN_NAMED},   {MI_QN_DEFAULT, MI_QN_DEFAULT}, {MI_QN_DEFAULT, MI_QN_ABSENT},
        {MI_QN_ABSENT, MI_QN_NAMED},    {MI_QN_ABSENT, MI_QN_DEFAULT},
    };
    if (!m || key < 0 || key >= MI_QUOTA_NKEYS || m->nquotas == 0)
        return false;
    for (int o = 0; o < 8; o++)
        for (int32_t i = 0; i < m->nquotas; i++) {
            const struct mi_quota *q = &m->quotas[i];
            if (!(q->set & (1u << key)) || q->ip.kind != MI_QN_ABSENT)
                continue;
            if (!matches(&q->user, order[o][0], user ? user : "") ||
                !matches(&q->client_id, order[o][1], client_id ? client_id : ""))
                continue;
            *value = q->values[key];
            *by_user = order[o][0] != MI_QN_ABSENT;
            *by_client = order[o][1] != MI_QN_ABSENT;
            return true;
        }
    return false;
}

bool mimage_ip_quota(const struct mimage *m, const char *ip, double *value)
{
    const struct mi_quota *dflt = NULL;
    if (!m)
        return false;
    for (int32_t i = 0; i < m->nquotas; i++) {
        const struct mi_quota *q = &m->quotas[i];
        if (q->ip.kind == MI_QN_ABSENT || !(q->set & (1u << MI_QUOTA_CONNECTION_CREATION_RATE)))
            continue;
        if (q->ip.kind == MI_QN_NAMED && strcmp(q->ip.name, ip) == 0) {
            *value = q->values[MI_QUOTA_CONNECTION_CREATION_RATE];
            return true;
        }
        if (q->ip.kind == MI_QN_DEFAULT)
            dflt = q;
    }
    if (!dflt)
        return false;
    *value = dflt->values[MI_QUOTA_CONNECTION_CREATION_RATE];
    return true;
}

/* ------------------------------------------------------------------ */
/* AlterClientQuotas                                                   */

/* Kafka's ClientQuotaEntity.toString, for messages. */
static const char *entity_str(struct arena *a, const alter_client_quotas_request_entry_data_t *en)
{
    char buf[1024];
    size_t at = (size_t)snprintf(buf, sizeof buf, "ClientQuotaEntity(entries={");
    for (int32_t i = 0; i < en->entity.n && at < sizeof buf; i++) {
        const alter_client_quotas_request_entity_data_t *x = &en->entity.a[i];
        at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%.*s=%.*s", i ? ", " : "",
                               (int)(x->entity_type.len > 0 ? x->entity_type.len : 0),
                               x->entity_type.p ? x->entity_type.p : "",
                               (int)(x->entity_name.len >= 0 ? x->entity_name.len : 4),
                               x->entity_name.len >= 0 ? x->entity_name.p : "null");
    }
    if (at < sizeof buf)
        snprintf(buf + at, sizeof buf - at, "})");
    return kstr_dup(a, KSTR(buf));
}

static const char *msgf(struct arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *msgf(struct arena *a, const char *fmt, ...)
{
    char buf[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return kstr_dup(a, KSTR(buf));
}

/* Kafka's validateEntity and configKeysForEntityType: 0 or
 * INVALID_REQUEST with *msg. */
static int16_t check_entity(struct arena *a, const alter_client_quotas_request_entry_data_t *en, struct qent *e,
                            const char **msg)
{
    memset(e, 0, sizeof *e);
    if (en->entity.n <= 0) {
        *msg = "Invalid empty client quota entity";
        return KERR_INVALID_REQUEST;
    }
    for (int32_t i = 0; i < en->entity.n; i++) {
        kstr_t t = en->entity.a[i].entity_type, nm = en->entity.a[i].entity_name;
        int rc = qent_add(e, t, nm);
        if (rc == -2) {
            *msg = msgf(a, "Invalid client quota entity, duplicate entity entry %.*s", (int)t.len, t.p);
            return KERR_INVALID_REQUEST;
        }
        if (rc == -1) {
            *msg = msgf(a, "Unhandled client quota entity type: %.*s", t.len > 0 ? (int)t.len : 4,
                        t.len >= 0 ? t.p : "null");
            return KERR_INVALID_REQUEST;
        }
        if (nm.len == 0) {
            *msg = msgf(a, "Empty %.*s not supported", (int)t.len, t.p);
            return KERR_INVALID_REQUEST;
        }
    }
    if (e->has_ip && (e->has_user || e->has_client_id)) {
        /* Kafka's message, its missing space included */
        *msg = "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId";
        return KERR_INVALID_REQUEST;
    }
    if (e->has_ip && e->ip.len > 0) {
        /* Kafka also takes a host name it can resolve; samsa resolves
         * nothing on the controller and wants an address */
        char ip[128];
        uint8_t sa[16];
        snprintf(ip, sizeof ip, "%.*s", (int)e->ip.len, e->ip.p);
        if ((size_t)e->ip.len >= sizeof ip || (inet_pton(AF_INET, ip, sa) != 1 && inet_pton(AF_INET6, ip, sa) != 1)) {
            *msg = msgf(a, "%s is not a valid IP or resolvable host.", ip);
            return KERR_INVALID_REQUEST;
        }
    }
    return 0;
}

/* Kafka's validateQuotaKeyValue for the keys of the entity's kind. */
static int16_t check_key(struct arena *a, const struct qent *e, kstr_t key, double value, int *k, const char **msg)
{
    *k = key.len >= 0 ? mi_quota_key_of(key.p, (size_t)key.len) : -1;
    bool ok = *k >= 0 && (e->has_ip ? *k == MI_QUOTA_CONNECTION_CREATION_RATE : *k != MI_QUOTA_CONNECTION_CREATION_RATE);
    if (!ok) {
        *msg = msgf(a, "Invalid configuration key %.*s", key.len > 0 ? (int)key.len : 0, key.len > 0 ? key.p : "");
        return KERR_INVALID_REQUEST;
    }
    if (!(value > 0)) {
        *msg = msgf(a, "Quota %s must be greater than 0", key_names[*k]);
        return KERR_INVALID_REQUEST;
    }
    /* the byte rates are Kafka's LONG configs, connection_creation_rate
     * an INT; the other two DOUBLE */
    bool is_int = *k == MI_QUOTA_CONNECTION_CREATION_RATE;
    if (*k == MI_QUOTA_PRODUCER_BYTE_RATE || *k == MI_QUOTA_CONSUMER_BYTE_RATE || is_int) {
        if (value > (is_int ? (double)INT32_MAX : 9223372036854775807.0)) {
            *msg = msgf(a, "Proposed value for %s is too large for %s.", key_names[*k], is_int ? "an INT" : "a LONG");
            return KERR_INVALID_REQUEST;
        }
        if (fabs(fmod(value, 1.0)) > 1e-6) {
            *msg = msgf(a, "%s cannot be a fractional value.", key_names[*k]);
            return KERR_INVALID_REQUEST;
        }
    } else if (!isfinite(value)) {
        *msg = msgf(a, "Quota %s must be greater than 0", key_names[*k]);
        return KERR_INVALID_REQUEST;
    }
    return 0;
}

static bool request_entity_eq(const alter_client_quotas_request_entry_data_t *x,
                              const alter_client_quotas_request_entry_data_t *y)
{
    struct qent a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    for (int32_t i = 0; i < x->entity.n; i++)
        if (qent_add(&a, x->entity.a[i].entity_type, x->entity.a[i].entity_name) < 0)
            return false;
    for (int32_t i = 0; i < y->entity.n; i++)
        if (qent_add(&b, y->entity.a[i].entity_type, y->entity.a[i].entity_name) < 0)
            return false;
    return a.has_user == b.has_user && a.has_client_id == b.has_client_id && a.has_ip == b.has_ip &&
           kstr_eq(a.user, b.user) && kstr_eq(a.client_id, b.client_id) && kstr_eq(a.ip, b.ip);
}

int controller_alter_client_quotas(struct controller *c, const alter_client_quotas_request_t *q, struct arena *a,
                                   int16_t *errs, const char **msgs, struct ctl_op **op)
{
    *op = NULL;
    pthread_mutex_lock(&c->op_lock);
    int rc = ctl_not_active(c);
    if (rc) {
        pthread_mutex_unlock(&c->op_lock);
        return rc;
    }
    struct recs rs;
    recs_init(&rs);
    const struct mimage *img = c->spec;
    for (int32_t i = 0; i < q->entries.n; i++) {
        const alter_client_quotas_request_entry_data_t *en = &q->entries.a[i];
        errs[i] = 0;
        msgs[i] = NULL;
        for (int32_t j = 0; j < en->ops.n && !errs[i]; j++)
            for (int32_t k = 0; k < j; k++)
                if (kstr_eq(en->ops.a[k].key, en->ops.a[j].key)) {
                    errs[i] = KERR_INVALID_REQUEST;
                    msgs[i] = msgf(a, "Duplicate quota key %.*s not updating quota for this entity %s",
                                   (int)en->ops.a[j].key.len, en->ops.a[j].key.p, entity_str(a, en));
                    break;
                }
        for (int32_t k = 0; k < i && !errs[i]; k++)
            if (request_entity_eq(&q->entries.a[k], en)) {
                errs[i] = KERR_INVALID_REQUEST;
                msgs[i] = msgf(a, "Ignoring duplicate entity %s", entity_str(a, en));
            }
        struct qent e;
        if (!errs[i])
            errs[i] = check_entity(a, en, &e, &msgs[i]);
        if (errs[i])
            continue;
        struct mi_quota probe;
        entity_of(&probe, &e);
        int32_t at = find_entity(img->quotas, img->nquotas, &probe);
        quota_fini(&probe);
        const struct mi_quota *cur = at >= 0 ? &img->quotas[at] : NULL;
        size_t first = rs.n;
        for (int32_t j = 0; j < en->ops.n; j++) {
            const alter_client_quotas_request_op_data_t *o = &en->ops.a[j];
            int k = o->key.len >= 0 ? mi_quota_key_of(o->key.p, (size_t)o->key.len) : -1;
            if (!o->remove) {
                errs[i] = check_key(a, &e, o->key, o->value, &k, &msgs[i]);
                if (errs[i])
                    break;
            }
            bool has = cur && k >= 0 && (cur->set & (1u << k));
            /* Kafka writes only what changes */
            if (o->remove ? !has : has && cur->values[k] == o->value)
                continue;
            client_quota_record_t *r = arena_alloc(&rs.arena, sizeof *r);
            client_quota_record_init(r);
            r->entity.a = client_quota_record_entity_data_new_array(&rs.arena, en->entity.n);
            r->entity.n = en->entity.n;
            for (int32_t x = 0; x < en->entity.n; x++) {
                r->entity.a[x].entity_type = en->entity.a[x].entity_type;
                r->entity.a[x].entity_name = en->entity.a[x].entity_name;
            }
            r->key = o->key;
            r->value = o->remove ? 0 : o->value;
            r->remove = o->remove;
            recs_add(&rs, KMETA_CLIENT_QUOTA_RECORD, 0, r);
        }
        if (errs[i])
            rs.n = first; /* none of this entity's changes */
    }
    if (rs.n > 0 && !q->validate_only) {
        char msg[256] = "";
        rc = ctl_submit_locked(c, &rs, msg, sizeof msg, op);
        if (rc == 0)
            for (size_t i = 0; i < rs.n; i++) {
                const client_quota_record_t *r = rs.a[i].rec;
                char ent[512];
                size_t at = 0;
                ent[0] = 0;
                for (int32_t x = 0; x < r->entity.n && at < sizeof ent; x++)
                    at += (size_t)snprintf(ent + at, sizeof ent - at, "%s%.*s=%.*s", x ? "," : "",
                                           (int)r->entity.a[x].entity_type.len, r->entity.a[x].entity_type.p,
                                           r->entity.a[x].entity_name.len >= 0 ? (int)r->entity.a[x].entity_name.len
                                                                                : 9,
                                           r->entity.a[x].entity_name.len >= 0 ? r->entity.a[x].entity_name.p
                                                                                : "<default>");
                if (r->remove)
                    slog_info("metadata: client quota %.*s of %s removed", (int)r->key.len, r->key.p, ent);
                else
                    slog_info("metadata: client quota %.*s of %s set to %g", (int)r->key.len, r->key.p, ent,
                              r->value);
            }
    }
    recs_free(&rs);
    pthread_mutex_unlock(&c->op_lock);
    return rc;
}
