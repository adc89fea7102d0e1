/* See quota_mgr.h. */
#include "api/quota_mgr.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/request.h"
#include "auth/sasl.h"
#include "broker.h"
#include "config.h"
#include "controller/controller.h"
#include "controller/image.h"
#include "net/conn.h"
#include "proto/kerr.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/hmap.h"
#include "util/rate.h"

static const int quota_key_of_kind[QUOTA_NKINDS] = {
    [QUOTA_PRODUCE] = MI_QUOTA_PRODUCER_BYTE_RATE,
    [QUOTA_FETCH] = MI_QUOTA_CONSUMER_BYTE_RATE,
    [QUOTA_REQUEST] = MI_QUOTA_REQUEST_PERCENTAGE,
};

/* One rate, shared by the connections of the clients a quota entity
 * covers (Kafka's sensor named by its metric tags). Kept while a
 * connection uses it or it recorded something within the last hour
 * (Kafka's inactive sensor expiration), so that clients with ever new
 * ids cannot grow the maps without bound. */
#define SENSOR_EXPIRE_MS (3600 * 1000)
#define SWEEP_EVERY_MS (60 * 1000)
struct quota_sensor {
    pthread_mutex_t lock;
    struct rate rate;
    int64_t last_ms;          /* last record, under lock */
    double tokens;            /* controller mutations: the token bucket */
    bool bucket_started;
    int refs;                 /* connections caching it, under the manager's lock */
};

struct quota_mgr {
    atomic_bool any;          /* the current image has quotas */
    _Atomic uint64_t gen;     /* and their generation */
    pthread_mutex_t lock; /* the maps, when a connection resolves */
    struct hmap sensors[QUOTA_NKINDS];
    struct hmap ip_sensors;   /* ip -> struct quota_sensor (connections) */
    struct hmap mut_sensors;  /* user\0client-id -> token bucket (controller mutations) */
    int nsamples;
    int64_t window_ms;
    int64_t last_sweep_ms;    /* under lock */
};

/* A connection's resolved quotas (conn->quota). */
struct conn_quota {
    struct quota_mgr *m;
    uint64_t gen;       /* image quota_gen resolved at */
    char *principal;    /* owned: what it was resolved for */
    char *client_id;    /* owned */
    double bound[QUOTA_NKINDS];           /* <= 0: no quota */
    struct quota_sensor *s[QUOTA_NKINDS]; /* the manager's */
};

struct quota_mgr *quota_mgr_create(const struct samsa_config *cfg)
{
    struct quota_mgr *m = xcalloc(1, sizeof *m);
    pthread_mutex_init(&m->lock, NULL);
    for (int k = 0; k < QUOTA_NKINDS; k++)
        hmap_init(&m->sensors[k]);
    hmap_init(&m->ip_sensors);
    hmap_init(&m->mut_sensors);
    m->nsamples = cfg ? cfg->quota_window_num : 11;
    m->window_ms = (int64_t)(cfg ? cfg->quota_window_size_seconds : 1) * 1000;
    return m;
}

static void sensors_free(struct hmap *h)
{
    const void *key;
    size_t kl;
    void *v;
    for (size_t it = 0; hmap_next(h, &it, &key, &kl, &v);) {
        struct quota_sensor *s = v;
        pthread_mutex_destroy(&s->lock);
        free(s);
    }
    hmap_free(h);
}

void quota_mgr_destroy(struct quota_mgr *m)
{
    if (!m)
        return;
    for (int k = 0; k < QUOTA_NKINDS; k++)
        sensors_free(&m->sensors[k]);
    sensors_free(&m->ip_sensors);
    sensors_free(&m->mut_sensors);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

/* The sensor of map h named key, made on first use. Under m->lock. */
static struct quota_sensor *sensor_in(struct quota_mgr *m, struct hmap *h, const char *key, size_t kl)
{
    struct quota_sensor *s = hmap_get(h, key, kl);
    if (s)
        return s;
    s = xcalloc(1, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    rate_init(&s->rate, m->nsamples, m->window_ms);
    s->last_ms = clock_mono_ms();
    hmap_put(h, key, kl, s);
    return s;
}

/* Frees the sensors of h nobody uses that recorded nothing for an hour.
 * Under m->lock. */
static void sweep_map(struct hmap *h, int64_t now)
{
    size_t n = hmap_count(h), nold = 0;
    if (n == 0)
        return;
    struct {
        char *key;
        size_t kl;
    } *old = xcalloc(n, sizeof *old);
    const void *key;
    size_t kl;
    void *v;
    for (size_t it = 0; hmap_next(h, &it, &key, &kl, &v);) {
        struct quota_sensor *s = v;
        pthread_mutex_lock(&s->lock);
        bool idle = s->refs == 0 && now - s->last_ms > SENSOR_EXPIRE_MS;
        pthread_mutex_unlock(&s->lock);
        if (idle && nold < n) {
            old[nold].key = xstrndup(key, kl);
            old[nold++].kl = kl;
        }
    }
    for (size_t i = 0; i < nold; i++) {
        struct quota_sensor *s = hmap_del(h, old[i].key, old[i].kl);
        if (s) {
            pthread_mutex_destroy(&s->lock);
            free(s);
        }
        free(old[i].key);
    }
    free(old);
}

/* At most once a minute, from a resolution. Under m->lock. */
static void maybe_sweep(struct quota_mgr *m)
{
    int64_t now = clock_mono_ms();
    if (now - m->last_sweep_ms < SWEEP_EVERY_MS)
        return;
    m->last_sweep_ms = now;
    for (int k = 0; k < QUOTA_NKINDS; k++)
        sweep_map(&m->sensors[k], now);
    sweep_map(&m->ip_sensors, now);
    sweep_map(&m->mut_sensors, now);
}

/* The sensor of kind named by the entity's tags (user and client id as
 * the quota entity covers them: "" where it has no such component, as
 * Kafka's DefaultQuotaCallback tags). Under m->lock. */
static struct quota_sensor *sensor_get(struct quota_mgr *m, enum quota_kind kind, const char *user,
                                       const char *client_id)
{
    char key[1024];
    int n = snprintf(key, sizeof key, "%s%c%s", user, 0, client_id);
    size_t kl = n < 0 ? 0 : (size_t)n >= sizeof key ? sizeof key - 1 : (size_t)n;
    return sensor_in(m, &m->sensors[kind], key, kl);
}

static bool same(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

void quota_mgr_follow(struct quota_mgr *m, const struct mimage *img)
{
    if (!m || !img)
        return;
    atomic_store(&m->gen, img->quota_gen);
    atomic_store(&m->any, img->nquotas > 0);
}

/* req's connection's quotas, resolved again from the current image
 * when stale. */
static struct conn_quota *resolve(struct request *req, uint64_t gen)
{
    struct conn *c = req->conn;
    struct quota_mgr *m = req->broker->quotas;
    const char *principal = req_principal(req);
    char cid[256];
    snprintf(cid, sizeof cid, "%.*s", req->client_id.len > 0 ? (int)req->client_id.len : 0,
             req->client_id.len > 0 ? req->client_id.p : "");
    struct conn_quota *cq = c->quota;
    if (cq && cq->gen == gen && same(cq->principal, principal) && same(cq->client_id, cid))
        return cq;
    struct mimage *img = controller_image(req->broker->controller);
    if (!cq) {
        cq = c->quota = xcalloc(1, sizeof *cq);
        cq->m = m;
    }
    free(cq->principal);
    free(cq->client_id);
    cq->principal = xstrdup(principal);
    cq->client_id = xstrdup(cid);
    cq->gen = img->quota_gen;
    /* Kafka's quota user is the principal's name, without its type */
    const char *colon = strchr(principal, ':');
    const char *user = colon ? colon + 1 : principal;
    pthread_mutex_lock(&m->lock);
    for (int k = 0; k < QUOTA_NKINDS; k++)
        if (cq->s[k])
            cq->s[k]->refs--;
    maybe_sweep(m);
    for (int k = 0; k < QUOTA_NKINDS; k++) {
        double v;
        bool by_user, by_client;
        cq->bound[k] = 0;
        cq->s[k] = NULL;
        if (!mimage_quota_lookup(img, quota_key_of_kind[k], user, cid, &v, &by_user, &by_client) || !(v > 0))
            continue;
        cq->bound[k] = v;
        cq->s[k] = sensor_get(m, (enum quota_kind)k, by_user ? user : "", by_client ? cid : "");
        cq->s[k]->refs++;
    }
    pthread_mutex_unlock(&m->lock);
    mimage_release(img);
    return cq;
}

int64_t quota_record(struct request *req, enum quota_kind kind, double bytes)
{
    struct quota_mgr *m = req->broker->quotas;
    if (!m || !atomic_load_explicit(&m->any, memory_order_relaxed) || !req->conn || req->parent)
        return 0;
    struct conn_quota *cq = resolve(req, atomic_load(&m->gen));
    struct quota_sensor *s = cq->s[kind];
    if (!s)
        return 0;
    int64_t now = clock_mono_ms();
    pthread_mutex_lock(&s->lock);
    rate_record(&s->rate, bytes, now);
    s->last_ms = now;
    int64_t t = rate_throttle_ms(&s->rate, cq->bound[kind], now);
    pthread_mutex_unlock(&s->lock);
    return t;
}

int64_t quota_max_in_window(struct request *req, enum quota_kind kind)
{
    struct quota_mgr *m = req->broker->quotas;
    if (!m || !atomic_load_explicit(&m->any, memory_order_relaxed) || !req->conn || req->parent)
        return INT64_MAX;
    struct conn_quota *cq = resolve(req, atomic_load(&m->gen));
    if (!cq->s[kind])
        return INT64_MAX;
    double v = cq->bound[kind] * (double)(m->nsamples - 1) * ((double)m->window_ms / 1000.0);
    return v >= (double)INT32_MAX ? INT64_MAX : (int64_t)v;
}

void quota_unrecord(struct request *req, enum quota_kind kind, double bytes)
{
    struct conn_quota *cq = req->conn ? req->conn->quota : NULL;
    struct quota_sensor *s = cq ? cq->s[kind] : NULL;
    if (!s)
        return;
    int64_t now = clock_mono_ms();
    pthread_mutex_lock(&s->lock);
    rate_record(&s->rate, -bytes, now);
    pthread_mutex_unlock(&s->lock);
}

bool quota_request_timed(const struct request *req)
{
    struct quota_mgr *m = req->broker->quotas;
    return m && atomic_load_explicit(&m->any, memory_order_relaxed) && req->conn && !req->parent &&
           !req->conn->controller_listener;
}

int64_t quota_request_record(struct request *req, int64_t ns)
{
    /* Kafka's nanosToPercentage: a thread busy for a whole second is 100;
     * and its ClientRequestQuotaManager's bound: at most one window */
    int64_t t = quota_record(req, QUOTA_REQUEST, (double)ns * 100.0 / 1e9);
    int64_t max = req->broker->quotas->window_ms;
    return t < max ? t : max;
}

void quota_throttle(struct request *req, int64_t ms)
{
    if (ms > 0 && req->conn && !req->parent)
        conn_mute(req->conn, ms);
}

int64_t quota_conn_throttle(struct broker *b, const char *ip)
{
    struct quota_mgr *m = b->quotas;
    if (!m || !atomic_load_explicit(&m->any, memory_order_relaxed) || !b->controller)
        return 0;
    /* a new connection is rare next to requests: the image is looked at
     * each time, no cache */
    struct mimage *img = controller_image(b->controller);
    double bound = 0;
    bool has = mimage_ip_quota(img, ip, &bound);
    mimage_release(img);
    if (!has || !(bound > 0))
        return 0;
    pthread_mutex_lock(&m->lock);
    maybe_sweep(m);
    struct quota_sensor *s = sensor_in(m, &m->ip_sensors, ip, strlen(ip));
    int64_t now = clock_mono_ms();
    /* used from now on: no sweep may take it (it is not idle) */
    pthread_mutex_lock(&s->lock);
    s->last_ms = now;
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_unlock(&m->lock);
    pthread_mutex_lock(&s->lock);
    rate_record(&s->rate, 1, now);
    s->last_ms = now;
    int64_t t = rate_throttle_ms(&s->rate, bound, now);
    if (t > 0)
        rate_record(&s->rate, -1, now); /* Kafka counts only the connections it serves */
    pthread_mutex_unlock(&s->lock);
    int64_t max = (int64_t)m->nsamples * m->window_ms;
    return t < max ? t : max;
}

/* Kafka's TokenBucket: refilled at the bound, up to the burst of all the
 * windows. Under s->lock. */
static void refill(struct quota_mgr *m, struct quota_sensor *s, double bound, int64_t now)
{
    double burst = bound * (double)m->nsamples * ((double)m->window_ms / 1000.0);
    if (!s->bucket_started) {
        s->tokens = burst; /* a bucket starts full */
        s->bucket_started = true;
    } else {
        s->tokens += bound * (double)(now - s->last_ms) / 1000.0;
        if (s->tokens > burst)
            s->tokens = burst;
    }
    s->last_ms = now;
}

void quota_mutation_begin(struct request *req, bool strict, struct quota_mutation *mq)
{
    memset(mq, 0, sizeof *mq);
    mq->strict = strict;
    struct quota_mgr *m = req->broker->quotas;
    if (!m || !atomic_load_explicit(&m->any, memory_order_relaxed) || !req->broker->controller)
        return;
    const char *principal = req_principal(req);
    const char *colon = strchr(principal, ':');
    const char *user = colon ? colon + 1 : principal;
    char cid[256];
    snprintf(cid, sizeof cid, "%.*s", req->client_id.len > 0 ? (int)req->client_id.len : 0,
             req->client_id.len > 0 ? req->client_id.p : "");
    /* admin requests are rare: looked up each time, no cache */
    struct mimage *img = controller_image(req->broker->controller);
    double v;
    bool by_user, by_client;
    bool has = mimage_quota_lookup(img, MI_QUOTA_CONTROLLER_MUTATION_RATE, user, cid, &v, &by_user, &by_client);
    mimage_release(img);
    if (!has || !(v > 0))
        return;
    char key[600];
    int n = snprintf(key, sizeof key, "%s%c%s", by_user ? user : "", 0, by_client ? cid : "");
    size_t kl = n < 0 ? 0 : (size_t)n >= sizeof key ? sizeof key - 1 : (size_t)n;
    pthread_mutex_lock(&m->lock);
    mq->s = sensor_in(m, &m->mut_sensors, key, kl);
    /* refilled now, so no sweep takes it while this request uses it */
    pthread_mutex_lock(&mq->s->lock);
    refill(m, mq->s, v, clock_mono_ms());
    pthread_mutex_unlock(&mq->s->lock);
    pthread_mutex_unlock(&m->lock);
    mq->m = m;
    mq->bound = v;
}

/* Kafka's throttleTimeMs of a TokenBucket: the time to refill to zero. */
static int64_t bucket_throttle(double tokens, double bound)
{
    return tokens < 0 ? (int64_t)llround(-tokens / bound * 1000.0) : 0;
}

int16_t quota_mutation_check(struct quota_mutation *mq)
{
    if (!mq->s || !mq->strict)
        return 0;
    int64_t now = clock_mono_ms();
    pthread_mutex_lock(&mq->s->lock);
    refill(mq->m, mq->s, mq->bound, now);
    int64_t t = bucket_throttle(mq->s->tokens, mq->bound);
    pthread_mutex_unlock(&mq->s->lock);
    if (t <= 0)
        return 0;
    mq->throttle_ms = t;
    return KERR_THROTTLING_QUOTA_EXCEEDED;
}

void quota_mutation_add(struct quota_mutation *mq, double permits)
{
    if (!mq->s || !(permits > 0))
        return;
    int64_t now = clock_mono_ms();
    pthread_mutex_lock(&mq->s->lock);
    refill(mq->m, mq->s, mq->bound, now);
    mq->s->tokens -= permits;
    int64_t t = bucket_throttle(mq->s->tokens, mq->bound);
    pthread_mutex_unlock(&mq->s->lock);
    if (!mq->strict && t > mq->throttle_ms)
        mq->throttle_ms = t; /* permissive: accepted, then throttled */
}

void quota_conn_free(struct conn *c)
{
    struct conn_quota *cq = c->quota;
    if (!cq)
        return;
    pthread_mutex_lock(&cq->m->lock);
    for (int k = 0; k < QUOTA_NKINDS; k++)
        if (cq->s[k])
            cq->s[k]->refs--;
    pthread_mutex_unlock(&cq->m->lock);
    free(cq->principal);
    free(cq->client_id);
    free(cq);
    c->quota = NULL;
}
