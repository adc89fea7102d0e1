/* Metadata images: lookups, lifetime, and building them from records. */
#include "controller/image.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "controller/image_build.h"
#include "proto/gen/access_control_entry_record.h"
#include "proto/gen/broker_registration_change_record.h"
#include "proto/gen/remove_access_control_entry_record.h"
#include "proto/gen/config_record.h"
#include "proto/gen/remove_user_scram_credential_record.h"
#include "proto/gen/user_scram_credential_record.h"
#include "proto/gen/client_quota_record.h"
#include "proto/gen/feature_level_record.h"
#include "proto/gen/fence_broker_record.h"
#include "proto/gen/kmeta.h"
#include "proto/gen/partition_change_record.h"
#include "proto/gen/partition_record.h"
#include "proto/gen/producer_ids_record.h"
#include "proto/gen/register_broker_record.h"
#include "proto/gen/remove_topic_record.h"
#include "proto/gen/topic_record.h"
#include "proto/gen/unfence_broker_record.h"
#include "proto/gen/unregister_broker_record.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "topic_config.h"
#include "util/buf.h"
#include "util/slog.h"

/* ConfigResource.Type ids used in ConfigRecord. */
#define RESOURCE_TOPIC 2
#define RESOURCE_BROKER 4
/* PartitionChangeRecord.leader: "no change" (Kafka's NO_LEADER_CHANGE). */
#define NO_LEADER_CHANGE (-2)
/* BrokerRegistrationFencingChange / InControlledShutdownChange ids. */
#define FENCING_FENCE 1
#define FENCING_UNFENCE (-1)

/* ------------------------------------------------------------------ */
/* Lookups                                                             */

const struct mi_topic *mimage_topic(const struct mimage *m, kstr_t name)
{
    if (name.len <= 0)
        return NULL;
    return hmap_get(&m->by_name, name.p, (size_t)name.len);
}

const struct mi_topic *mimage_topic_by_id(const struct mimage *m, const kuuid_t *id)
{
    return hmap_get(&m->by_id, id->b, sizeof id->b);
}

const struct mi_broker *mimage_broker(const struct mimage *m, int32_t id)
{
    int32_t lo = 0, hi = m->nbrokers - 1;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (m->brokers[mid].id == id)
            return &m->brokers[mid];
        if (m->brokers[mid].id < id)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

const struct mi_endpoint *mi_broker_endpoint(const struct mi_broker *br, const char *listener)
{
    for (int32_t i = 0; listener && i < br->nendpoints; i++)
        if (br->endpoints[i].name && strcmp(br->endpoints[i].name, listener) == 0)
            return &br->endpoints[i];
    return NULL;
}

void mi_broker_address(const struct mi_broker *br, const char *listener, const char **host, int32_t *port)
{
    const struct mi_endpoint *ep = mi_broker_endpoint(br, listener);
    *host = ep ? ep->host : br->host;
    *port = ep ? ep->port : br->port;
}

bool mimage_broker_alive(const struct mimage *m, int32_t id)
{
    const struct mi_broker *b = mimage_broker(m, id);
    return b && !b->fenced;
}

static int find_config(const struct mi_config *c, int32_t n, const char *key, bool *found)
{
    int32_t lo = 0, hi = n - 1;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        int cmp = strcmp(c[mid].key, key);
        if (cmp == 0) {
            *found = true;
            return mid;
        }
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    *found = false;
    return lo;
}

static int find_broker_configs(const struct mi_broker_configs *c, int32_t n, const char *name, bool *found)
{
    int32_t lo = 0, hi = n - 1;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        int cmp = strcmp(c[mid].name, name);
        if (cmp == 0) {
            *found = true;
            return mid;
        }
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    *found = false;
    return lo;
}

const struct mi_broker_configs *mimage_broker_configs(const struct mimage *m, const char *name)
{
    bool found;
    int i = find_broker_configs(m->per_broker, m->nper_broker, name, &found);
    return found ? &m->per_broker[i] : NULL;
}

static int find_feature(const struct mi_feature *f, int32_t n, const char *name, bool *found)
{
    int32_t lo = 0, hi = n - 1;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        int cmp = strcmp(f[mid].name, name);
        if (cmp == 0) {
            *found = true;
            return mid;
        }
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    *found = false;
    return lo;
}

int16_t mimage_feature_level(const struct mimage *m, const char *name)
{
    if (strcmp(name, "metadata.version") == 0)
        return m->metadata_version;
    bool found;
    int i = find_feature(m->features, m->nfeatures, name, &found);
    return found ? m->features[i].level : 0;
}

static int scram_cmp(const char *user, size_t len, int8_t mech, const struct mi_scram *s)
{
    size_t ul = strlen(s->user);
    int c = memcmp(user, s->user, len < ul ? len : ul);
    if (c)
        return c;
    if (len != ul)
        return len < ul ? -1 : 1;
    return mech - s->mechanism;
}

/* Index of (user, mech) or where it would go. */
static int find_scram(const struct mi_scram *a, int32_t n, const char *user, size_t len, int8_t mech, bool *found)
{
    int lo = 0, hi = n;
    *found = false;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        int c = scram_cmp(user, len, mech, &a[mid]);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

const struct mi_scram *mimage_scram(const struct mimage *m, const char *user, size_t len, int8_t mechanism)
{
    bool found;
    int i = find_scram(m->scram, m->nscram, user, len, mechanism, &found);
    return found ? &m->scram[i] : NULL;
}

const char *mi_topic_config(const struct mi_topic *t, const char *key)
{
    bool found;
    int i = find_config(t->configs, t->nconfigs, key, &found);
    return found ? t->configs[i].value : NULL;
}

bool mi_topic_name_is_internal(const char *name, size_t len)
{
    static const char *const internal[] = {"__consumer_offsets", "__transaction_state",
                                           "__share_group_state"};
    for (size_t i = 0; i < sizeof internal / sizeof internal[0]; i++)
        if (strlen(internal[i]) == len && memcmp(internal[i], name, len) == 0)
            return true;
    return false;
}

/* ------------------------------------------------------------------ */
/* Lifetime                                                            */

static void partition_fini(struct mi_partition *p)
{
    free(p->replicas);
    free(p->isr);
    free(p->directories);
}

static void configs_free(struct mi_config *c, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        free(c[i].key);
        free(c[i].value);
    }
    free(c);
}

static void topic_free(struct mi_topic *t)
{
    for (int32_t i = 0; i < t->npartitions; i++)
        partition_fini(&t->partitions[i]);
    free(t->partitions);
    configs_free(t->configs, t->nconfigs);
    free((void *)t->cfg);
    free(t->name);
    free(t);
}

static void topic_unref(struct mi_topic *t)
{
    if (atomic_fetch_sub(&t->refs, 1) == 1)
        topic_free(t);
}

static void per_broker_free(struct mi_broker_configs *p, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        free(p[i].name);
        configs_free(p[i].configs, p[i].n);
    }
    free(p);
}

static void features_free(struct mi_feature *f, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        free(f[i].name);
    free(f);
}

static void scram_free(struct mi_scram *a, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        free(a[i].user);
        free(a[i].salt);
    }
    free(a);
}

static struct mi_scram *scram_dup(const struct mi_scram *a, int32_t n)
{
    if (n <= 0)
        return NULL;
    struct mi_scram *r = xcalloc((size_t)n, sizeof *r);
    for (int32_t i = 0; i < n; i++) {
        r[i] = a[i];
        r[i].user = xstrdup(a[i].user);
        r[i].salt = xmalloc(a[i].salt_len > 0 ? (size_t)a[i].salt_len : 1);
        if (a[i].salt_len > 0)
            memcpy(r[i].salt, a[i].salt, (size_t)a[i].salt_len);
    }
    return r;
}

static void broker_fini(struct mi_broker *b)
{
    free(b->host);
    free(b->rack);
    for (int32_t i = 0; i < b->nendpoints; i++) {
        free(b->endpoints[i].name);
        free(b->endpoints[i].host);
    }
    free(b->endpoints);
    free(b->log_dirs);
    for (int32_t i = 0; i < b->nfeatures; i++)
        free(b->features[i].name);
    free(b->features);
}

static void brokers_free(struct mi_broker *b, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        broker_fini(&b[i]);
    free(b);
}

/* ------------------------------------------------------------------ */
/* ACLs                                                                */

static atomic_uint_fast64_t acl_gen_next = 1;

int mi_acl_cmp(const struct mi_acl *x, const struct mi_acl *y)
{
    if (x->resource_type != y->resource_type)
        return x->resource_type < y->resource_type ? -1 : 1;
    if (x->pattern_type != y->pattern_type)
        return x->pattern_type < y->pattern_type ? -1 : 1;
    int c = strcmp(x->resource_name, y->resource_name);
    if (c)
        return c;
    if ((c = strcmp(x->principal, y->principal)))
        return c;
    if ((c = strcmp(x->host, y->host)))
        return c;
    if (x->operation != y->operation)
        return x->operation < y->operation ? -1 : 1;
    if (x->permission != y->permission)
        return x->permission < y->permission ? -1 : 1;
    return 0;
}

/* <0, 0, >0 as (type, pattern, name) sorts before, with, after a. */
static int acl_key_cmp(int8_t type, int8_t pattern, const char *name, size_t len, const struct mi_acl *a)
{
    if (type != a->resource_type)
        return type < a->resource_type ? -1 : 1;
    if (pattern != a->pattern_type)
        return pattern < a->pattern_type ? -1 : 1;
    size_t al = (size_t)a->name_len;
    int c = memcmp(name, a->resource_name, len < al ? len : al);
    if (c)
        return c;
    return len < al ? -1 : len > al ? 1 : 0;
}

int32_t mi_acls_find(const struct mi_acls *s, int8_t type, int8_t pattern, const char *name, size_t len,
                     int32_t *count)
{
    *count = 0;
    if (!s || s->n == 0)
        return 0;
    int32_t lo = 0, hi = s->n;
    while (lo < hi) { /* first ACL not before the key */
        int32_t mid = lo + (hi - lo) / 2;
        if (acl_key_cmp(type, pattern, name, len, &s->a[mid]) > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    int32_t end = lo;
    while (end < s->n && acl_key_cmp(type, pattern, name, len, &s->a[end]) == 0)
        end++;
    *count = end - lo;
    return lo;
}

static void acl_fini(struct mi_acl *a)
{
    free(a->resource_name);
    free(a->principal);
    free(a->host);
}

static void acls_unref(struct mi_acls *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    for (int32_t i = 0; i < s->n; i++)
        acl_fini(&s->a[i]);
    free(s->a);
    free(s);
}

/* A private copy of s (NULL: an empty set) with a new generation. */
static struct mi_acls *acls_clone(const struct mi_acls *s)
{
    struct mi_acls *c = xcalloc(1, sizeof *c);
    atomic_init(&c->refs, 1);
    c->gen = atomic_fetch_add(&acl_gen_next, 1);
    if (s && s->n > 0) {
        c->a = xcalloc((size_t)s->n, sizeof *c->a);
        for (int32_t i = 0; i < s->n; i++) {
            c->a[i] = s->a[i];
            c->a[i].resource_name = xstrdup(s->a[i].resource_name);
            c->a[i].principal = xstrdup(s->a[i].principal);
            c->a[i].host = xstrdup(s->a[i].host);
        }
        c->n = s->n;
    }
    return c;
}

struct mimage *mimage_ref(struct mimage *m)
{
    atomic_fetch_add(&m->refs, 1);
    return m;
}

void mimage_release(struct mimage *m)
{
    if (!m || atomic_fetch_sub(&m->refs, 1) != 1)
        return;
    for (int32_t i = 0; i < m->ntopics; i++)
        topic_unref(m->topics[i]);
    free(m->topics);
    hmap_free(&m->by_name);
    hmap_free(&m->by_id);
    brokers_free(m->brokers, m->nbrokers);
    configs_free(m->broker_default_configs, m->nbroker_default_configs);
    per_broker_free(m->per_broker, m->nper_broker);
    features_free(m->features, m->nfeatures);
    scram_free(m->scram, m->nscram);
    acls_unref(m->acls);
    mi_quotas_free(m->quotas, m->nquotas);
    free(m);
}

/* ------------------------------------------------------------------ */
/* Copies                                                              */

static int32_t *ints_dup(const int32_t *a, int32_t n)
{
    if (n <= 0)
        return NULL;
    int32_t *r = xmalloc((size_t)n * sizeof *r);
    memcpy(r, a, (size_t)n * sizeof *r);
    return r;
}

static kuuid_t *uuids_dup(const kuuid_t *a, int32_t n)
{
    if (n <= 0)
        return NULL;
    kuuid_t *r = xmalloc((size_t)n * sizeof *r);
    memcpy(r, a, (size_t)n * sizeof *r);
    return r;
}

/* NULL for a null string. */
static char *kstr_strdup(kstr_t s)
{
    if (s.len < 0)
        return NULL;
    return xstrndup(s.len ? s.p : "", (size_t)s.len);
}

static struct mi_config *configs_dup(const struct mi_config *c, int32_t n)
{
    if (n <= 0)
        return NULL;
    struct mi_config *r = xcalloc((size_t)n, sizeof *r);
    for (int32_t i = 0; i < n; i++) {
        r[i].key = xstrdup(c[i].key);
        r[i].value = xstrdup(c[i].value);
    }
    return r;
}

static void broker_copy(struct mi_broker *dst, const struct mi_broker *src)
{
    *dst = *src;
    dst->host = xstrdup(src->host);
    dst->rack = src->rack ? xstrdup(src->rack) : NULL;
    dst->endpoints = NULL;
    if (src->nendpoints > 0) {
        dst->endpoints = xcalloc((size_t)src->nendpoints, sizeof *dst->endpoints);
        for (int32_t i = 0; i < src->nendpoints; i++) {
            dst->endpoints[i] = src->endpoints[i];
            dst->endpoints[i].name = xstrdup(src->endpoints[i].name);
            dst->endpoints[i].host = xstrdup(src->endpoints[i].host);
        }
    }
    dst->log_dirs = uuids_dup(src->log_dirs, src->nlog_dirs);
    dst->features = NULL;
    if (src->nfeatures > 0) {
        dst->features = xcalloc((size_t)src->nfeatures, sizeof *dst->features);
        for (int32_t i = 0; i < src->nfeatures; i++) {
            dst->features[i] = src->features[i];
            dst->features[i].name = xstrdup(src->features[i].name);
        }
    }
}

static struct mi_broker_configs *per_broker_dup(const struct mi_broker_configs *p, int32_t n)
{
    if (n <= 0)
        return NULL;
    struct mi_broker_configs *r = xcalloc((size_t)n, sizeof *r);
    for (int32_t i = 0; i < n; i++) {
        r[i].name = xstrdup(p[i].name);
        r[i].configs = configs_dup(p[i].configs, p[i].n);
        r[i].n = p[i].n;
    }
    return r;
}

static struct mi_feature *features_dup(const struct mi_feature *f, int32_t n)
{
    if (n <= 0)
        return NULL;
    struct mi_feature *r = xcalloc((size_t)n, sizeof *r);
    for (int32_t i = 0; i < n; i++) {
        r[i].name = xstrdup(f[i].name);
        r[i].level = f[i].level;
    }
    return r;
}

/* A private, modifiable copy of t (one reference, owned by a draft). */
static struct mi_topic *topic_clone(const struct mi_topic *t)
{
    struct mi_topic *c = xcalloc(1, sizeof *c);
    c->name = xstrdup(t->name);
    c->name_len = t->name_len;
    c->id = t->id;
    c->internal = t->internal;
    c->npartitions = t->npartitions;
    if (t->npartitions > 0) {
        c->partitions = xcalloc((size_t)t->npartitions, sizeof *c->partitions);
        for (int32_t i = 0; i < t->npartitions; i++) {
            const struct mi_partition *s = &t->partitions[i];
            struct mi_partition *d = &c->partitions[i];
            *d = *s;
            d->replicas = ints_dup(s->replicas, s->nreplicas);
            d->isr = ints_dup(s->isr, s->nisr);
            d->directories = s->directories ? uuids_dup(s->directories, s->nreplicas) : NULL;
        }
    }
    c->configs = configs_dup(t->configs, t->nconfigs);
    c->nconfigs = t->nconfigs;
    if (t->cfg) {
        struct topic_config *cfg = xmalloc(sizeof *cfg);
        *cfg = *t->cfg;
        c->cfg = cfg;
    }
    atomic_init(&c->refs, 1);
    c->draft = true;
    return c;
}

/* ------------------------------------------------------------------ */
/* Drafts                                                              */

struct mi_draft {
    const struct samsa_config *cfg;
    int32_t node_id;
    char node_resource[16];          /* "<node id>" */
    int64_t offset;
    struct hmap by_id;               /* one topic reference per entry */
    struct hmap by_name;
    struct mi_broker *brokers;       /* sorted by id, owned */
    int32_t nbrokers;
    struct mi_config *bdefault;      /* sorted by key, owned */
    int32_t nbdefault;
    struct mi_broker_configs *per;   /* sorted by name, owned */
    int32_t nper;
    bool all_configs_dirty;
    int16_t metadata_version;
    struct mi_feature *features;     /* sorted by name, owned */
    int32_t nfeatures;
    int64_t next_producer_id;
    struct mi_scram *scram;          /* sorted, owned */
    int32_t nscram;
    struct mi_acls *acls;            /* one reference; NULL: none */
    bool acls_owned;                 /* a private copy this draft may change */
    struct mi_quota *quotas;         /* owned */
    int32_t nquotas;
    uint64_t quota_gen;
};

struct mi_draft *mi_draft_begin(const struct mimage *base, const struct samsa_config *cfg,
                                int32_t node_id)
{
    struct mi_draft *d = xcalloc(1, sizeof *d);
    d->cfg = cfg;
    d->node_id = node_id;
    snprintf(d->node_resource, sizeof d->node_resource, "%d", (int)node_id);
    d->offset = -1;
    d->next_producer_id = -1;
    hmap_init(&d->by_id);
    hmap_init(&d->by_name);
    if (!base)
        return d;
    d->offset = base->offset;
    d->metadata_version = base->metadata_version;
    d->features = features_dup(base->features, base->nfeatures);
    d->nfeatures = base->nfeatures;
    d->next_producer_id = base->next_producer_id;
    d->scram = scram_dup(base->scram, base->nscram);
    d->nscram = base->nscram;
    if (base->acls) {
        atomic_fetch_add(&base->acls->refs, 1);
        d->acls = base->acls;
    }
    d->quotas = mi_quotas_dup(base->quotas, base->nquotas);
    d->nquotas = base->nquotas;
    d->quota_gen = base->quota_gen;
    for (int32_t i = 0; i < base->ntopics; i++) {
        struct mi_topic *t = base->topics[i];
        atomic_fetch_add(&t->refs, 1);
        hmap_put(&d->by_id, t->id.b, sizeof t->id.b, t);
        hmap_put(&d->by_name, t->name, (size_t)t->name_len, t);
    }
    if (base->nbrokers > 0) {
        d->brokers = xcalloc((size_t)base->nbrokers, sizeof *d->brokers);
        for (int32_t i = 0; i < base->nbrokers; i++)
            broker_copy(&d->brokers[i], &base->brokers[i]);
        d->nbrokers = base->nbrokers;
    }
    d->bdefault = configs_dup(base->broker_default_configs, base->nbroker_default_configs);
    d->nbdefault = base->nbroker_default_configs;
    d->per = per_broker_dup(base->per_broker, base->nper_broker);
    d->nper = base->nper_broker;
    return d;
}

void mi_draft_abort(struct mi_draft *d)
{
    if (!d)
        return;
    const void *k;
    size_t kl;
    void *v;
    for (size_t it = 0; hmap_next(&d->by_id, &it, &k, &kl, &v);)
        topic_unref(v);
    hmap_free(&d->by_id);
    hmap_free(&d->by_name);
    brokers_free(d->brokers, d->nbrokers);
    configs_free(d->bdefault, d->nbdefault);
    per_broker_free(d->per, d->nper);
    features_free(d->features, d->nfeatures);
    scram_free(d->scram, d->nscram);
    acls_unref(d->acls);
    mi_quotas_free(d->quotas, d->nquotas);
    free(d);
}

const struct mi_config *mi_draft_broker_configs(const struct mi_draft *d, bool cluster_default,
                                                int32_t *n)
{
    if (cluster_default) {
        *n = d->nbdefault;
        return d->bdefault;
    }
    bool found;
    int i = find_broker_configs(d->per, d->nper, d->node_resource, &found);
    *n = found ? d->per[i].n : 0;
    return found ? d->per[i].configs : NULL;
}

void mi_draft_touch_all_configs(struct mi_draft *d) { d->all_configs_dirty = true; }
void mi_draft_set_config(struct mi_draft *d, const struct samsa_config *cfg) { d->cfg = cfg; }
void mi_draft_set_offset(struct mi_draft *d, int64_t offset) { d->offset = offset; }

/* The draft's own modifiable version of t (copy on first write). */
static struct mi_topic *draft_own(struct mi_draft *d, struct mi_topic *t)
{
    if (t->draft)
        return t;
    struct mi_topic *c = topic_clone(t);
    hmap_put(&d->by_id, c->id.b, sizeof c->id.b, c);
    hmap_put(&d->by_name, c->name, (size_t)c->name_len, c);
    topic_unref(t);
    return c;
}

/* Sets (value != NULL) or removes key in a sorted config array. */
static void mi_config_set(struct mi_config **arr, int32_t *n, const char *key, const char *value)
{
    bool found;
    int i = find_config(*arr, *n, key, &found);
    if (found) {
        if (value) {
            free((*arr)[i].value);
            (*arr)[i].value = xstrdup(value);
        } else {
            free((*arr)[i].key);
            free((*arr)[i].value);
            memmove(&(*arr)[i], &(*arr)[i + 1], (size_t)(*n - i - 1) * sizeof **arr);
            (*n)--;
        }
        return;
    }
    if (!value)
        return;
    *arr = xrealloc(*arr, (size_t)(*n + 1) * sizeof **arr);
    memmove(&(*arr)[i + 1], &(*arr)[i], (size_t)(*n - i) * sizeof **arr);
    (*arr)[i].key = xstrdup(key);
    (*arr)[i].value = xstrdup(value);
    (*n)++;
}

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static void uuid_str(const kuuid_t *id, char out[40])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[2 * i] = hex[id->b[i] >> 4];
        out[2 * i + 1] = hex[id->b[i] & 15];
    }
    out[32] = 0;
}

static int apply_topic(struct mi_draft *d, const topic_record_t *r, char *err, size_t errlen)
{
    if (r->name.len <= 0)
        return fail(err, errlen, "TopicRecord without a name");
    if (hmap_get(&d->by_name, r->name.p, (size_t)r->name.len))
        return fail(err, errlen, "TopicRecord for existing topic %.*s", (int)r->name.len, r->name.p);
    if (hmap_get(&d->by_id, r->topic_id.b, sizeof r->topic_id.b)) {
        char s[40];
        uuid_str(&r->topic_id, s);
        return fail(err, errlen, "TopicRecord reuses topic id %s", s);
    }
    struct mi_topic *t = xcalloc(1, sizeof *t);
    t->name = xstrndup(r->name.p, (size_t)r->name.len);
    t->name_len = r->name.len;
    t->id = r->topic_id;
    t->internal = mi_topic_name_is_internal(t->name, (size_t)t->name_len);
    atomic_init(&t->refs, 1);
    t->draft = true;
    t->cfg_dirty = true;
    hmap_put(&d->by_id, t->id.b, sizeof t->id.b, t);
    hmap_put(&d->by_name, t->name, (size_t)t->name_len, t);
    return 0;
}

static int apply_partition(struct mi_draft *d, int16_t version, const partition_record_t *r,
                           char *err, size_t errlen)
{
    struct mi_topic *t = hmap_get(&d->by_id, r->topic_id.b, sizeof r->topic_id.b);
    if (!t) {
        char s[40];
        uuid_str(&r->topic_id, s);
        return fail(err, errlen, "PartitionRecord %d of unknown topic id %s", (int)r->partition_id, s);
    }
    if (r->partition_id < 0 || r->partition_id > t->npartitions)
        return fail(err, errlen, "PartitionRecord %d of %s, which has %d partitions",
                    (int)r->partition_id, t->name, (int)t->npartitions);
    if (r->replicas.n < 0 || r->isr.n < 0)
        return fail(err, errlen, "PartitionRecord %s-%d without replicas or ISR", t->name,
                    (int)r->partition_id);
    t = draft_own(d, t);
    if (r->partition_id == t->npartitions) {
        t->partitions = xrealloc(t->partitions, (size_t)(t->npartitions + 1) * sizeof *t->partitions);
        memset(&t->partitions[t->npartitions], 0, sizeof *t->partitions);
        t->npartitions++;
    }
    struct mi_partition *p = &t->partitions[r->partition_id];
    partition_fini(p);
    memset(p, 0, sizeof *p);
    p->index = r->partition_id;
    p->leader = r->leader;
    p->leader_epoch = r->leader_epoch;
    p->partition_epoch = r->partition_epoch;
    p->replicas = ints_dup(r->replicas.a, r->replicas.n);
    p->nreplicas = r->replicas.n;
    p->isr = ints_dup(r->isr.a, r->isr.n);
    p->nisr = r->isr.n;
    p->leader_recovery_state = r->leader_recovery_state;
    if (version >= 1 && r->directories.n == r->replicas.n && r->replicas.n > 0)
        p->directories = uuids_dup(r->directories.a, r->directories.n);
    return 0;
}

/* Kafka's PartitionRegistration.merge. */
static int apply_partition_change(struct mi_draft *d, const partition_change_record_t *r,
                                  char *err, size_t errlen)
{
    struct mi_topic *t = hmap_get(&d->by_id, r->topic_id.b, sizeof r->topic_id.b);
    if (!t || r->partition_id < 0 || r->partition_id >= t->npartitions)
        return fail(err, errlen, "PartitionChangeRecord for unknown partition %d", (int)r->partition_id);
    t = draft_own(d, t);
    struct mi_partition *p = &t->partitions[r->partition_id];
    if (r->isr.n >= 0) {
        free(p->isr);
        p->isr = ints_dup(r->isr.a, r->isr.n);
        p->nisr = r->isr.n;
    }
    if (r->leader != NO_LEADER_CHANGE) {
        p->leader = r->leader;
        p->leader_epoch++;
    }
    if (r->replicas.n >= 0) {
        free(p->replicas);
        p->replicas = ints_dup(r->replicas.a, r->replicas.n);
        p->nreplicas = r->replicas.n;
        free(p->directories);
        p->directories = NULL;
    }
    if (r->directories.n >= 0 && r->directories.n == p->nreplicas) {
        free(p->directories);
        p->directories = uuids_dup(r->directories.a, r->directories.n);
    }
    if (r->leader_recovery_state != -1)
        p->leader_recovery_state = r->leader_recovery_state;
    p->partition_epoch++;
    return 0;
}

static int apply_config(struct mi_draft *d, const config_record_t *r)
{
    char key[512], *value = NULL;
    snprintf(key, sizeof key, "%.*s", r->name.len > 0 ? (int)r->name.len : 0, r->name.p);
    if (r->value.len >= 0)
        value = xstrndup(r->value.len ? r->value.p : "", (size_t)r->value.len);
    if (r->resource_type == RESOURCE_TOPIC) {
        struct mi_topic *t = r->resource_name.len > 0
                                 ? hmap_get(&d->by_name, r->resource_name.p, (size_t)r->resource_name.len)
                                 : NULL;
        if (t) {
            t = draft_own(d, t);
            mi_config_set(&t->configs, &t->nconfigs, key, value);
            t->cfg_dirty = true;
        } else {
            /* Kafka keeps configs of topics that do not exist yet; samsa
             * always writes them after the TopicRecord, so there is
             * nothing to attach this one to. */
            slog_debug("metadata: ConfigRecord for unknown topic %.*s ignored",
                       (int)r->resource_name.len, r->resource_name.p);
        }
    } else if (r->resource_type == RESOURCE_BROKER) {
        if (r->resource_name.len <= 0) {
            mi_config_set(&d->bdefault, &d->nbdefault, key, value);
            d->all_configs_dirty = true;
        } else {
            /* Every broker's layer is kept (the active controller edits
             * them, snapshots carry them); this node's own changes the
             * broker config it runs with. */
            char *name = xstrndup(r->resource_name.p, (size_t)r->resource_name.len);
            bool found;
            int i = find_broker_configs(d->per, d->nper, name, &found);
            if (!found && value) {
                d->per = xrealloc(d->per, (size_t)(d->nper + 1) * sizeof *d->per);
                memmove(&d->per[i + 1], &d->per[i], (size_t)(d->nper - i) * sizeof *d->per);
                d->per[i] = (struct mi_broker_configs){.name = name};
                d->nper++;
                name = NULL;
                found = true;
            }
            if (found) {
                struct mi_broker_configs *pb = &d->per[i];
                mi_config_set(&pb->configs, &pb->n, key, value);
                if (pb->n == 0) {
                    free(pb->name);
                    free(pb->configs);
                    memmove(pb, pb + 1, (size_t)(d->nper - i - 1) * sizeof *d->per);
                    d->nper--;
                }
            }
            free(name);
            if (kstr_eqc(r->resource_name, d->node_resource))
                d->all_configs_dirty = true;
        }
    }
    free(value);
    return 0;
}

static int apply_remove_topic(struct mi_draft *d, const remove_topic_record_t *r, char *err,
                              size_t errlen)
{
    struct mi_topic *t = hmap_del(&d->by_id, r->topic_id.b, sizeof r->topic_id.b);
    if (!t) {
        char s[40];
        uuid_str(&r->topic_id, s);
        return fail(err, errlen, "RemoveTopicRecord for unknown topic id %s", s);
    }
    hmap_del(&d->by_name, t->name, (size_t)t->name_len);
    topic_unref(t);
    return 0;
}

static int broker_index(const struct mi_draft *d, int32_t id, bool *found)
{
    int32_t lo = 0, hi = d->nbrokers - 1;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (d->brokers[mid].id == id) {
            *found = true;
            return mid;
        }
        if (d->brokers[mid].id < id)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    *found = false;
    return lo;
}

static void apply_register_broker(struct mi_draft *d, const register_broker_record_t *r)
{
    struct mi_broker b;
    memset(&b, 0, sizeof b);
    b.id = r->broker_id;
    b.fenced = r->fenced;
    b.in_controlled_shutdown = r->in_controlled_shutdown;
    b.incarnation_id = r->incarnation_id;
    b.epoch = r->broker_epoch;
    b.rack = kstr_strdup(r->rack);
    if (r->end_points.n > 0) {
        b.endpoints = xcalloc((size_t)r->end_points.n, sizeof *b.endpoints);
        for (int32_t i = 0; i < r->end_points.n; i++) {
            const register_broker_record_broker_endpoint_t *e = &r->end_points.a[i];
            b.endpoints[i].name = kstr_strdup(e->name);
            b.endpoints[i].host = kstr_strdup(e->host);
            if (!b.endpoints[i].name)
                b.endpoints[i].name = xstrdup("");
            if (!b.endpoints[i].host)
                b.endpoints[i].host = xstrdup("");
            b.endpoints[i].port = e->port;
            b.endpoints[i].security_protocol = e->security_protocol;
        }
        b.nendpoints = r->end_points.n;
    }
    b.host = xstrdup(b.nendpoints > 0 ? b.endpoints[0].host : "");
    b.port = b.nendpoints > 0 ? b.endpoints[0].port : -1;
    b.log_dirs = uuids_dup(r->log_dirs.a, r->log_dirs.n);
    b.nlog_dirs = r->log_dirs.n > 0 ? r->log_dirs.n : 0;
    if (r->features.n > 0) {
        b.features = xcalloc((size_t)r->features.n, sizeof *b.features);
        for (int32_t i = 0; i < r->features.n; i++) {
            const register_broker_record_broker_feature_t *f = &r->features.a[i];
            b.features[i].name = kstr_strdup(f->name);
            if (!b.features[i].name)
                b.features[i].name = xstrdup("");
            b.features[i].min = f->min_supported_version;
            b.features[i].max = f->max_supported_version;
        }
        b.nfeatures = r->features.n;
    }

    bool found;
    int i = broker_index(d, b.id, &found);
    if (found) {
        broker_fini(&d->brokers[i]);
        d->brokers[i] = b;
        return;
    }
    d->brokers = xrealloc(d->brokers, (size_t)(d->nbrokers + 1) * sizeof *d->brokers);
    memmove(&d->brokers[i + 1], &d->brokers[i], (size_t)(d->nbrokers - i) * sizeof *d->brokers);
    d->brokers[i] = b;
    d->nbrokers++;
}

/* Kafka's FeatureControlManager.replay: level 0 removes a feature. */
static void apply_feature_level(struct mi_draft *d, const feature_level_record_t *r)
{
    if (kstr_eqc(r->name, "metadata.version")) {
        d->metadata_version = r->feature_level;
        return;
    }
    char *name = xstrndup(r->name.len > 0 ? r->name.p : "", (size_t)(r->name.len > 0 ? r->name.len : 0));
    bool found;
    int i = find_feature(d->features, d->nfeatures, name, &found);
    if (found && r->feature_level == 0) {
        free(d->features[i].name);
        memmove(&d->features[i], &d->features[i + 1], (size_t)(d->nfeatures - i - 1) * sizeof *d->features);
        d->nfeatures--;
    } else if (found) {
        d->features[i].level = r->feature_level;
    } else if (r->feature_level != 0) {
        d->features = xrealloc(d->features, (size_t)(d->nfeatures + 1) * sizeof *d->features);
        memmove(&d->features[i + 1], &d->features[i], (size_t)(d->nfeatures - i) * sizeof *d->features);
        d->features[i] = (struct mi_feature){.name = name, .level = r->feature_level};
        d->nfeatures++;
        name = NULL;
    }
    free(name);
}

/* Kafka's ScramControlManager.replay: a record replaces the user's
 * credential for its mechanism; a removal drops it. */
static int apply_scram(struct mi_draft *d, const user_scram_credential_record_t *r, char *err, size_t errlen)
{
    if (r->name.len <= 0 || r->stored_key.len < 0 || r->stored_key.len > MI_SCRAM_KEY_MAX ||
        r->server_key.len < 0 || r->server_key.len > MI_SCRAM_KEY_MAX || r->salt.len < 0)
        return fail(err, errlen, "UserScramCredentialRecord with an empty name or keys over %d bytes",
                    MI_SCRAM_KEY_MAX);
    bool found;
    int i = find_scram(d->scram, d->nscram, r->name.p, (size_t)r->name.len, r->mechanism, &found);
    if (!found) {
        d->scram = xrealloc(d->scram, (size_t)(d->nscram + 1) * sizeof *d->scram);
        memmove(&d->scram[i + 1], &d->scram[i], (size_t)(d->nscram - i) * sizeof *d->scram);
        d->nscram++;
        memset(&d->scram[i], 0, sizeof d->scram[i]);
        d->scram[i].user = xstrndup(r->name.p, (size_t)r->name.len);
        d->scram[i].mechanism = r->mechanism;
    }
    struct mi_scram *s = &d->scram[i];
    free(s->salt);
    s->salt = xmalloc(r->salt.len > 0 ? (size_t)r->salt.len : 1);
    if (r->salt.len > 0)
        memcpy(s->salt, r->salt.p, (size_t)r->salt.len);
    s->salt_len = r->salt.len;
    s->iterations = r->iterations;
    memcpy(s->stored_key, r->stored_key.p, (size_t)r->stored_key.len);
    s->stored_key_len = r->stored_key.len;
    memcpy(s->server_key, r->server_key.p, (size_t)r->server_key.len);
    s->server_key_len = r->server_key.len;
    return 0;
}

static void apply_remove_scram(struct mi_draft *d, const remove_user_scram_credential_record_t *r)
{
    if (r->name.len <= 0)
        return;
    bool found;
    int i = find_scram(d->scram, d->nscram, r->name.p, (size_t)r->name.len, r->mechanism, &found);
    if (!found)
        return;
    free(d->scram[i].user);
    free(d->scram[i].salt);
    memmove(&d->scram[i], &d->scram[i + 1], (size_t)(d->nscram - i - 1) * sizeof *d->scram);
    d->nscram--;
}

static void apply_unregister_broker(struct mi_draft *d, int32_t id)
{
    bool found;
    int i = broker_index(d, id, &found);
    if (!found)
        return;
    broker_fini(&d->brokers[i]);
    memmove(&d->brokers[i], &d->brokers[i + 1], (size_t)(d->nbrokers - i - 1) * sizeof *d->brokers);
    d->nbrokers--;
}

static void apply_fencing(struct mi_draft *d, int32_t id, int fencing, int shutdown)
{
    bool found;
    int i = broker_index(d, id, &found);
    if (!found)
        return;
    if (fencing == FENCING_FENCE)
        d->brokers[i].fenced = true;
    else if (fencing == FENCING_UNFENCE)
        d->brokers[i].fenced = false;
    if (shutdown == 1)
        d->brokers[i].in_controlled_shutdown = true;
}

static struct mi_acls *draft_acls(struct mi_draft *d)
{
    if (!d->acls_owned) {
        struct mi_acls *c = acls_clone(d->acls);
        acls_unref(d->acls);
        d->acls = c;
        d->acls_owned = true;
    }
    return d->acls;
}

static int acl_index_by_id(const struct mi_acls *s, const kuuid_t *id)
{
    for (int32_t i = 0; s && i < s->n; i++)
        if (memcmp(s->a[i].id.b, id->b, sizeof id->b) == 0)
            return i;
    return -1;
}

static void acl_remove_at(struct mi_acls *s, int32_t i)
{
    acl_fini(&s->a[i]);
    memmove(&s->a[i], &s->a[i + 1], (size_t)(s->n - i - 1) * sizeof *s->a);
    s->n--;
}

/* Kafka's AclControlManager.replay(AccessControlEntryRecord): the ACL
 * joins the set under its id (a known id is replaced). */
static int apply_acl(struct mi_draft *d, const access_control_entry_record_t *r, char *err, size_t errlen)
{
    if (r->resource_name.len < 0 || r->principal.len < 0 || r->host.len < 0)
        return fail(err, errlen, "AccessControlEntryRecord with a null resource name, principal or host");
    struct mi_acls *s = draft_acls(d);
    int old = acl_index_by_id(s, &r->id);
    if (old >= 0)
        acl_remove_at(s, old);
    struct mi_acl a = {
        .id = r->id,
        .resource_type = r->resource_type,
        .pattern_type = r->pattern_type,
        .operation = r->operation,
        .permission = r->permission_type,
        .resource_name = kstr_strdup(r->resource_name),
        .name_len = r->resource_name.len,
        .principal = kstr_strdup(r->principal),
        .host = kstr_strdup(r->host),
    };
    int32_t lo = 0, hi = s->n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (mi_acl_cmp(&s->a[mid], &a) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    s->a = xrealloc(s->a, (size_t)(s->n + 1) * sizeof *s->a);
    memmove(&s->a[lo + 1], &s->a[lo], (size_t)(s->n - lo) * sizeof *s->a);
    s->a[lo] = a;
    s->n++;
    return 0;
}

static int apply_remove_acl(struct mi_draft *d, const remove_access_control_entry_record_t *r, char *err,
                            size_t errlen)
{
    if (acl_index_by_id(d->acls, &r->id) < 0) {
        char id[40];
        uuid_str(&r->id, id);
        return fail(err, errlen, "RemoveAccessControlEntryRecord: no ACL with id %s", id);
    }
    struct mi_acls *s = draft_acls(d);
    acl_remove_at(s, acl_index_by_id(s, &r->id));
    return 0;
}

int mi_draft_apply(struct mi_draft *d, int64_t offset, int16_t type, int16_t version,
                   const void *rec, char *err, size_t errlen)
{
    int rc = 0;
    switch (type) {
    case KMETA_TOPIC_RECORD:
        rc = apply_topic(d, rec, err, errlen);
        break;
    case KMETA_PARTITION_RECORD:
        rc = apply_partition(d, version, rec, err, errlen);
        break;
    case KMETA_PARTITION_CHANGE_RECORD:
        rc = apply_partition_change(d, rec, err, errlen);
        break;
    case KMETA_CONFIG_RECORD:
        rc = apply_config(d, rec);
        break;
    case KMETA_REMOVE_TOPIC_RECORD:
        rc = apply_remove_topic(d, rec, err, errlen);
        break;
    case KMETA_FEATURE_LEVEL_RECORD:
        apply_feature_level(d, rec);
        break;
    case KMETA_PRODUCER_IDS_RECORD: {
        /* Kafka's ProducerIdControlManager.replay: blocks only move on. */
        const producer_ids_record_t *r = rec;
        if (d->next_producer_id >= 0 && r->next_producer_id <= d->next_producer_id) {
            rc = fail(err, errlen, "ProducerIdsRecord next producer id %lld is not above %lld",
                      (long long)r->next_producer_id, (long long)d->next_producer_id);
            break;
        }
        d->next_producer_id = r->next_producer_id;
        break;
    }
    case KMETA_REGISTER_BROKER_RECORD:
        apply_register_broker(d, rec);
        break;
    case KMETA_USER_SCRAM_CREDENTIAL_RECORD:
        rc = apply_scram(d, rec, err, errlen);
        break;
    case KMETA_REMOVE_USER_SCRAM_CREDENTIAL_RECORD:
        apply_remove_scram(d, rec);
        break;
    case KMETA_ACCESS_CONTROL_ENTRY_RECORD:
        rc = apply_acl(d, rec, err, errlen);
        break;
    case KMETA_REMOVE_ACCESS_CONTROL_ENTRY_RECORD:
        rc = apply_remove_acl(d, rec, err, errlen);
        break;
    case KMETA_CLIENT_QUOTA_RECORD:
        if (mi_quotas_apply(&d->quotas, &d->nquotas, rec))
            d->quota_gen = mi_quota_next_gen();
        break;
    case KMETA_UNREGISTER_BROKER_RECORD:
        apply_unregister_broker(d, ((const unregister_broker_record_t *)rec)->broker_id);
        break;
    case KMETA_FENCE_BROKER_RECORD:
        apply_fencing(d, ((const fence_broker_record_t *)rec)->id, FENCING_FENCE, 0);
        break;
    case KMETA_UNFENCE_BROKER_RECORD:
        apply_fencing(d, ((const unfence_broker_record_t *)rec)->id, FENCING_UNFENCE, 0);
        break;
    case KMETA_BROKER_REGISTRATION_CHANGE_RECORD: {
        const broker_registration_change_record_t *r = rec;
        apply_fencing(d, r->broker_id, r->fenced, r->in_controlled_shutdown);
        break;
    }
    default:
        /* ACLs, quotas, producer ids, ...: kept by their own owners. */
        break;
    }
    if (rc == 0)
        d->offset = offset;
    return rc;
}

int mi_draft_apply_batch(struct mi_draft *d, const uint8_t *batch, size_t len, char *err,
                         size_t errlen)
{
    struct rb_header h;
    if (rb_parse_header(batch, len, &h) != 0 || (size_t)rb_batch_size(&h) != len)
        return fail(err, errlen, "malformed metadata batch (%zu bytes)", len);
    if (rb_is_control(&h)) {
        d->offset = rb_last_offset(&h);
        return 0;
    }
    struct rb_record_iter it;
    int rc = rb_record_iter_init_batch(&it, batch, len);
    if (rc != 0)
        return fail(err, errlen, "metadata batch at offset %lld: %s", (long long)h.base_offset,
                    rc == KERR_UNSUPPORTED_COMPRESSION_TYPE ? "compressed batches are not supported"
                                                            : "malformed");
    struct arena a = ARENA_INIT;
    struct rb_record rec;
    int r;
    rc = 0;
    while ((r = rb_record_next(&it, &rec)) == 1) {
        int64_t off = h.base_offset + rec.offset_delta;
        int16_t type, version;
        void *m;
        char why[200];
        if (rec.value.len < 0) {
            rc = fail(err, errlen, "metadata record at offset %lld has no value", (long long)off);
            break;
        }
        if (mrec_read(rec.value.p, (size_t)rec.value.len, &a, &type, &version, &m, why, sizeof why) < 0) {
            rc = fail(err, errlen, "metadata record at offset %lld: %s", (long long)off, why);
            break;
        }
        if (mi_draft_apply(d, off, type, version, m, why, sizeof why) < 0) {
            rc = fail(err, errlen, "metadata record at offset %lld: %s", (long long)off, why);
            break;
        }
    }
    if (rc == 0 && r < 0)
        rc = fail(err, errlen, "metadata batch at offset %lld: %s", (long long)h.base_offset,
                  it.reason ? it.reason : "malformed record");
    if (rc == 0)
        d->offset = rb_last_offset(&h);
    arena_free(&a);
    return rc;
}

static int topic_cmp(const void *a, const void *b)
{
    const struct mi_topic *x = *(const struct mi_topic *const *)a;
    const struct mi_topic *y = *(const struct mi_topic *const *)b;
    return strcmp(x->name, y->name);
}

static void topic_resolve_config(struct mi_topic *t, const struct samsa_config *cfg)
{
    struct topic_config_kv *kvs = xcalloc((size_t)(t->nconfigs > 0 ? t->nconfigs : 1), sizeof *kvs);
    for (int32_t i = 0; i < t->nconfigs; i++) {
        kvs[i].key = t->configs[i].key;
        kvs[i].value = t->configs[i].value;
    }
    struct topic_config *tc = (struct topic_config *)t->cfg;
    if (!tc)
        tc = xcalloc(1, sizeof *tc);
    topic_config_resolve(cfg, kvs, (size_t)t->nconfigs, tc);
    t->cfg = tc;
    free(kvs);
}

struct mimage *mi_draft_finish(struct mi_draft *d)
{
    struct mimage *m = xcalloc(1, sizeof *m);
    atomic_init(&m->refs, 1);
    m->offset = d->offset;
    m->controller_id = d->node_id;
    m->metadata_version = d->metadata_version;
    size_t n = hmap_count(&d->by_id);
    m->topics = n ? xmalloc(n * sizeof *m->topics) : NULL;
    const void *k;
    size_t kl;
    void *v;
    for (size_t it = 0; hmap_next(&d->by_id, &it, &k, &kl, &v);)
        m->topics[m->ntopics++] = v;
    /* Copy-on-write after the walk: draft_own rewrites the maps. */
    if (d->all_configs_dirty)
        for (int32_t i = 0; i < m->ntopics; i++)
            m->topics[i] = draft_own(d, m->topics[i]);
    if (m->ntopics > 1)
        qsort(m->topics, (size_t)m->ntopics, sizeof *m->topics, topic_cmp);
    for (int32_t i = 0; i < m->ntopics; i++) {
        struct mi_topic *t = m->topics[i];
        if (t->draft && (t->cfg_dirty || d->all_configs_dirty || !t->cfg))
            topic_resolve_config(t, d->cfg);
        t->draft = false;
        t->cfg_dirty = false;
    }
    m->by_id = d->by_id;
    m->by_name = d->by_name;
    m->brokers = d->brokers;
    m->nbrokers = d->nbrokers;
    m->broker_default_configs = d->bdefault;
    m->nbroker_default_configs = d->nbdefault;
    m->per_broker = d->per;
    m->nper_broker = d->nper;
    const struct mi_broker_configs *own = mimage_broker_configs(m, d->node_resource);
    m->broker_configs = own ? own->configs : NULL;
    m->nbroker_configs = own ? own->n : 0;
    m->features = d->features;
    m->nfeatures = d->nfeatures;
    m->next_producer_id = d->next_producer_id;
    m->scram = d->scram;
    m->nscram = d->nscram;
    m->acls = d->acls;
    m->quotas = d->quotas;
    m->nquotas = d->nquotas;
    m->quota_gen = d->quota_gen;
    free(d);
    return m;
}

/* ------------------------------------------------------------------ */
/* Record framing (Kafka's AbstractApiMessageSerde)                    */

void mrec_write(struct kwriter *w, int16_t type, int16_t version, const void *rec)
{
    const struct kmeta *km = kmeta_get(type);
    kw_uvarint(w, MREC_FRAME_VERSION);
    kw_uvarint(w, (uint32_t)type);
    kw_uvarint(w, (uint32_t)version);
    km->encode(w, version, rec);
}

int mrec_read(const uint8_t *p, size_t n, struct arena *a, int16_t *type, int16_t *version,
              void **rec, char *err, size_t errlen)
{
    struct kreader r;
    kr_init(&r, p, n, a);
    uint32_t frame = kr_uvarint(&r);
    uint32_t t = kr_uvarint(&r);
    uint32_t v = kr_uvarint(&r);
    if (r.err)
        return fail(err, errlen, "truncated record header");
    if (frame != MREC_FRAME_VERSION)
        return fail(err, errlen, "unknown frame version %u (only frame version %d is supported)",
                    frame, MREC_FRAME_VERSION);
    if (t > INT16_MAX || v > INT16_MAX)
        return fail(err, errlen, "record type or version too large");
    const struct kmeta *km = kmeta_get((int16_t)t);
    if (!km)
        return fail(err, errlen, "unknown record type %u", t);
    if ((int16_t)v < km->min_version || (int16_t)v > km->max_version)
        return fail(err, errlen, "%s version %u not supported", km->name, v);
    void *m = arena_alloc(a, km->size);
    if (km->decode(&r, (int16_t)v, m) < 0 || r.err)
        return fail(err, errlen, "malformed %s v%u", km->name, v);
    if (kr_left(&r) > 0)
        return fail(err, errlen, "found %zu byte(s) of garbage after %s", kr_left(&r), km->name);
    *type = (int16_t)t;
    *version = (int16_t)v;
    *rec = m;
    return 0;
}
