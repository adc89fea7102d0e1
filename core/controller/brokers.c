/* Brokers and the active controller:
 *   - controller side: BrokerRegistration and BrokerHeartbeat (Kafka's
 *     ClusterControlManager and BrokerHeartbeatManager): a registration
 *     is a RegisterBrokerRecord, fenced; a heartbeat from a caught-up
 *     broker unfences it; a broker whose session (broker.session.
 *     timeout.ms) runs out is fenced and its leaderships move to other
 *     ISR members;
 *   - broker side (every node with the broker role): registering and
 *     heartbeating to the active controller, locally when that is this
 *     node, else through a kclient to its controller listener; the node
 *     is ready (the broker_ready hook: main opens the broker listeners) once unfenced;
 *   - forwarding: admin requests a broker received go to the active
 *     controller as they are (CreateTopics, ...), and its answer goes
 *     back to the client.
 * Everything here runs on the quorum loop, except the controller-side
 * entry points (any thread, op_lock) and controller_forward (any thread). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "controller/controller_internal.h"
#include "log/fsutil.h"
#include "log/meta_properties.h"
#include "net/kclient.h"
#include "net/park.h"
#include "proto/gen/broker_heartbeat_request.h"
#include "proto/gen/broker_heartbeat_response.h"
#include "proto/gen/broker_registration_change_record.h"
#include "proto/gen/broker_registration_request.h"
#include "proto/gen/broker_registration_response.h"
#include "proto/gen/kmeta.h"
#include "proto/gen/partition_change_record.h"
#include "proto/gen/register_broker_record.h"
#include "proto/kerr.h"
#include "quorum/quorum.h"
#include "util/clock.h"
#include "util/slog.h"
#include "util/uuid.h"

#define TICK_MS 100
#define REGISTRATION_VERSION 3
#define HEARTBEAT_VERSION 1
/* While fenced, a broker heartbeats this often so it is unfenced soon
 * after it caught up. */
#define FENCED_HEARTBEAT_MS 100
#define RETRY_MS 100
/* BrokerRegistrationFencingChange values. */
#define FENCE 1
#define UNFENCE (-1)

/* ------------------------------------------------------------------ */
/* Controller side: sessions                                           */

/* Caller holds op_lock. */
static struct ctl_session *session(struct controller *c, int32_t id, bool create)
{
    for (int32_t i = 0; i < c->nsessions; i++)
        if (c->sessions[i].id == id)
            return &c->sessions[i];
    if (!create)
        return NULL;
    c->sessions = xrealloc(c->sessions, (size_t)(c->nsessions + 1) * sizeof *c->sessions);
    struct ctl_session *s = &c->sessions[c->nsessions++];
    s->id = id;
    s->last_heartbeat_ms = clock_mono_ms();
    s->metadata_offset = -1;
    s->shutdown_offset = -1;
    return s;
}

/* A new active controller gives every registered broker a full session
 * before fencing it: it has not heard from anyone yet (Kafka does the
 * same). Caller holds op_lock. */
void ctl_brokers_activate(struct controller *c, int64_t now_ms)
{
    c->nsessions = 0;
    for (int32_t i = 0; i < c->spec->nbrokers; i++) {
        const struct mi_broker *br = &c->spec->brokers[i];
        struct ctl_session *s = session(c, br->id, true);
        s->last_heartbeat_ms = now_ms;
        /* One this controller did not see start its controlled shutdown
         * waits until every active broker has what is in the log now. */
        if (br->in_controlled_shutdown && !br->fenced)
            s->shutdown_offset = c->next_offset - 1;
    }
}

static bool in_list(const int32_t *a, int32_t n, int32_t id)
{
    for (int32_t i = 0; i < n; i++)
        if (a[i] == id)
            return true;
    return false;
}

static bool broker_usable(const struct mimage *img, int32_t id, int32_t except)
{
    const struct mi_broker *b = mimage_broker(img, id);
    return id != except && b && !b->fenced && !b->in_controlled_shutdown;
}

/* PartitionChangeRecords moving broker id out of leadership and the ISR
 * (fence) or electing it where no one leads (unfence), as Kafka's
 * ReplicationControlManager.handleBrokerFenced / handleBrokerUnfenced.
 * The ISR never shrinks to nothing: the last member stays, leaderless,
 * until it returns (Kafka without unclean election). Adds at most
 * max records; *more is set when some were left for another batch. */
static void leadership_changes(struct recs *rs, const struct mimage *img, int32_t id, bool fence, size_t max,
                               bool *more)
{
    *more = false;
    for (int32_t ti = 0; ti < img->ntopics; ti++) {
        const struct mi_topic *t = img->topics[ti];
        for (int32_t p = 0; p < t->npartitions; p++) {
            const struct mi_partition *mp = &t->partitions[p];
            if (!in_list(mp->isr, mp->nisr, id))
                continue;
            partition_change_record_t *r = NULL;
            if (fence) {
                bool shrink = mp->nisr > 1;
                bool lead = mp->leader == id;
                if (!shrink && !lead)
                    continue;
                if (rs->n >= max) {
                    *more = true;
                    return;
                }
                r = arena_alloc(&rs->arena, sizeof *r);
                partition_change_record_init(r);
                int32_t *isr = arena_alloc(&rs->arena, (size_t)mp->nisr * sizeof *isr);
                int32_t n = 0;
                for (int32_t k = 0; k < mp->nisr; k++)
                    if (mp->isr[k] != id || !shrink)
                        isr[n++] = mp->isr[k];
                if (shrink) {
                    r->isr.a = isr;
                    r->isr.n = n;
                }
                if (lead) {
                    r->leader = -1;
                    for (int32_t k = 0; k < n; k++)
                        if (broker_usable(img, isr[k], id)) {
                            r->leader = isr[k];
                            break;
                        }
                }
            } else {
                if (mp->leader >= 0)
                    continue;
                if (rs->n >= max) {
                    *more = true;
                    return;
                }
                r = arena_alloc(&rs->arena, sizeof *r);
                partition_change_record_init(r);
                r->leader = id;
            }
            r->topic_id = t->id;
            r->partition_id = mp->index;
            recs_add(rs, KMETA_PARTITION_CHANGE_RECORD, 0, r);
        }
    }
}

/* What a broker's registration change says. */
enum fencing_change {
    CHANGE_FENCE,      /* fenced: out of every ISR it can leave, leads nothing */
    CHANGE_UNFENCE,    /* unfenced: leads the partitions that have no leader */
    CHANGE_SHUTDOWN,   /* controlled shutdown: as fencing, but still unfenced */
};

/* The broker's registration change, then the leadership changes, in
 * batches of at most CONTROLLER_MAX_RECORDS_PER_OP (Kafka too splits
 * these, non-atomically). The first op is returned in *first (may be
 * NULL); *last_offset (may be NULL) gets the last offset of the last
 * batch (-1 when nothing was written). Caller holds op_lock, active. */
static int set_fencing_locked(struct controller *c, const struct mi_broker *br, enum fencing_change change,
                              struct ctl_op **first, int64_t *last_offset)
{
    int32_t id = br->id;
    int64_t epoch = br->epoch;
    if (first)
        *first = NULL;
    if (last_offset)
        *last_offset = -1;
    char msg[256];
    bool more = true, head = true;
    int rc = 0;
    while (more && rc == 0) {
        struct recs rs;
        recs_init(&rs);
        /* Kafka's MetadataVersion.isInControlledShutdownStateSupported
         * (3.3-IV3): older ones only move the leaderships. */
        if (head && (change != CHANGE_SHUTDOWN || c->spec->metadata_version >= 7)) {
            broker_registration_change_record_t *r = arena_alloc(&rs.arena, sizeof *r);
            broker_registration_change_record_init(r);
            r->broker_id = id;
            r->broker_epoch = epoch;
            r->fenced = change == CHANGE_FENCE ? FENCE : change == CHANGE_UNFENCE ? UNFENCE : 0;
            r->in_controlled_shutdown = change == CHANGE_SHUTDOWN ? 1 : 0;
            /* InControlledShutdown is a v1 field (a v0 record drops it). */
            recs_add(&rs, KMETA_BROKER_REGISTRATION_CHANGE_RECORD, change == CHANGE_SHUTDOWN ? 1 : 0, r);
        }
        /* Leaderships are decided on the image with the change applied
         * (spec, after the first batch) so a fenced or departing broker
         * never gets elected by its own change. */
        const struct mimage *img = c->spec;
        leadership_changes(&rs, img, id, change != CHANGE_UNFENCE, CONTROLLER_MAX_RECORDS_PER_OP, &more);
        struct ctl_op *op = NULL;
        if (rs.n > 0)
            rc = ctl_submit_locked(c, &rs, msg, sizeof msg, &op);
        recs_free(&rs);
        if (rc == 0 && op) {
            if (last_offset)
                *last_offset = op->end - 1;
            if (head && first)
                *first = op;
            else
                ctl_op_release(op);
        }
        head = false;
        if (rs.n == 0)
            break;
    }
    return rc;
}

/* Whether broker id leads any partition (Kafka's
 * BrokersToIsrs.hasLeaderships). */
static bool has_leaderships(const struct mimage *img, int32_t id)
{
    for (int32_t ti = 0; ti < img->ntopics; ti++) {
        const struct mi_topic *t = img->topics[ti];
        for (int32_t p = 0; p < t->npartitions; p++)
            if (t->partitions[p].leader == id)
                return true;
    }
    return false;
}

/* The lowest metadata offset the active brokers (unfenced, not shutting
 * down) have said they applied; INT64_MAX when there are none (Kafka's
 * BrokerHeartbeatManager.lowestActiveOffset). Caller holds op_lock. */
static int64_t lowest_active_offset(struct controller *c)
{
    int64_t low = INT64_MAX;
    for (int32_t i = 0; i < c->spec->nbrokers; i++) {
        const struct mi_broker *br = &c->spec->brokers[i];
        if (br->fenced || br->in_controlled_shutdown)
            continue;
        struct ctl_session *s = session(c, br->id, false);
        int64_t off = s ? s->metadata_offset : -1;
        if (off < low)
            low = off;
    }
    return low;
}

/* ------------------------------------------------------------------ */
/* Controller side: registration and heartbeats                        */

int controller_register_broker(struct controller *c, const struct broker_registration_request_s *req,
                               int64_t *broker_epoch, struct ctl_op **op)
{
    *op = NULL;
    *broker_epoch = -1;
    pthread_mutex_lock(&c->op_lock);
    int rc = 0;
    if (!atomic_load(&c->active) || !c->spec) {
        rc = KERR_NOT_CONTROLLER;
        goto out;
    }
    if (req->cluster_id.len >= 0 && c->env.cluster_id[0] && !kstr_eqc(req->cluster_id, c->env.cluster_id)) {
        slog_warn("metadata: broker %d registers for cluster %.*s, this is %s", (int)req->broker_id,
                  (int)req->cluster_id.len, req->cluster_id.p, c->env.cluster_id);
        rc = KERR_INCONSISTENT_CLUSTER_ID;
        goto out;
    }
    char why[512];
    if ((rc = ctl_check_registration_features(c->spec, req, why, sizeof why)) != 0) {
        slog_warn("metadata: refusing the registration of broker %d: %s", (int)req->broker_id, why);
        goto out;
    }
    const struct mi_broker *have = mimage_broker(c->spec, req->broker_id);
    int64_t now = clock_mono_ms();
    struct ctl_session *s = session(c, req->broker_id, false);
    if (have && kuuid_eq(&have->incarnation_id, &req->incarnation_id)) {
        /* A retry of a registration that went through. */
        *broker_epoch = have->epoch;
        goto out;
    }
    if (have && !have->fenced && s && now - s->last_heartbeat_ms < c->session_timeout_ms &&
        req->previous_broker_epoch != have->epoch && req->broker_id != c->env.node_id) {
        /* Another process with that id is alive (Kafka's check). This
         * node's own broker side is exempt: its earlier incarnation was
         * this very process's predecessor, which is gone. */
        rc = KERR_DUPLICATE_BROKER_REGISTRATION;
        goto out;
    }
    struct recs rs;
    recs_init(&rs);
    register_broker_record_t *r = arena_alloc(&rs.arena, sizeof *r);
    register_broker_record_init(r);
    r->broker_id = req->broker_id;
    r->incarnation_id = req->incarnation_id;
    /* Kafka: the broker epoch is the offset of the registration record. */
    r->broker_epoch = c->next_offset;
    int32_t nl = req->listeners.n > 0 ? req->listeners.n : 0;
    r->end_points.a = register_broker_record_broker_endpoint_new_array(&rs.arena, nl);
    r->end_points.n = nl;
    for (int32_t i = 0; i < nl; i++) {
        r->end_points.a[i].name = req->listeners.a[i].name;
        r->end_points.a[i].host = req->listeners.a[i].host;
        r->end_points.a[i].port = req->listeners.a[i].port;
        r->end_points.a[i].security_protocol = req->listeners.a[i].security_protocol;
    }
    int32_t nf = req->features.n > 0 ? req->features.n : 0;
    r->features.a = register_broker_record_broker_feature_new_array(&rs.arena, nf + 1);
    r->features.n = nf;
    bool has_mv = false;
    for (int32_t i = 0; i < nf; i++) {
        r->features.a[i].name = req->features.a[i].name;
        r->features.a[i].min_supported_version = req->features.a[i].min_supported_version;
        r->features.a[i].max_supported_version = req->features.a[i].max_supported_version;
        has_mv |= kstr_eqc(req->features.a[i].name, "metadata.version");
    }
    if (!has_mv) {
        /* Kafka: a broker that names no metadata.version range supports
         * the first KRaft version only. */
        r->features.a[nf].name = KSTR_LIT("metadata.version");
        r->features.a[nf].min_supported_version = 1;
        r->features.a[nf].max_supported_version = 1;
        r->features.n = nf + 1;
    }
    r->rack = req->rack;
    r->fenced = true;
    r->in_controlled_shutdown = false;
    r->log_dirs.a = req->log_dirs.a;
    r->log_dirs.n = req->log_dirs.n > 0 ? req->log_dirs.n : 0;
    recs_add(&rs, KMETA_REGISTER_BROKER_RECORD, register_broker_record_version(c->spec), r);
    char msg[256];
    int64_t epoch = r->broker_epoch; /* r dies with rs */
    rc = ctl_submit_locked(c, &rs, msg, sizeof msg, op);
    recs_free(&rs);
    if (rc == 0) {
        (*op)->broker_epoch = epoch;
        *broker_epoch = epoch;
        session(c, req->broker_id, true)->last_heartbeat_ms = now;
        slog_info("metadata: registering broker %d (epoch %" PRId64 ", previous epoch %" PRId64 ")",
                  (int)req->broker_id, epoch, req->previous_broker_epoch);
    }
out:
    pthread_mutex_unlock(&c->op_lock);
    return rc;
}

int controller_broker_heartbeat(struct controller *c, const struct broker_heartbeat_request_s *req, bool *fenced,
                                bool *caught_up, bool *shut_down, struct ctl_op **op)
{
    *op = NULL;
    *fenced = true;
    *caught_up = false;
    *shut_down = false;
    pthread_mutex_lock(&c->op_lock);
    int rc = 0;
    if (!atomic_load(&c->active) || !c->spec) {
        rc = KERR_NOT_CONTROLLER;
        goto out;
    }
    const struct mi_broker *br = mimage_broker(c->spec, req->broker_id);
    if (!br) {
        rc = KERR_BROKER_ID_NOT_REGISTERED;
        goto out;
    }
    if (br->epoch != req->broker_epoch) {
        rc = KERR_STALE_BROKER_EPOCH;
        goto out;
    }
    struct ctl_session *sess = session(c, req->broker_id, true);
    sess->last_heartbeat_ms = clock_mono_ms();
    sess->metadata_offset = req->current_metadata_offset;
    /* Caught up: it has applied its own registration (Kafka's rule for
     * unfencing: currentMetadataOffset >= the registration's offset). */
    *caught_up = req->current_metadata_offset >= br->epoch;
    /* Kafka's BrokerHeartbeatManager.calculateNextBrokerState, from the
     * state the image gives (fenced; unfenced; unfenced in controlled
     * shutdown). */
    int32_t id = br->id;
    if (br->fenced) {
        *fenced = true;
        sess->shutdown_offset = -1;
        if (req->want_shut_down) {
            *shut_down = true; /* nothing to move: it may go at once */
        } else if (!req->want_fence && *caught_up && !br->in_controlled_shutdown) {
            rc = set_fencing_locked(c, br, CHANGE_UNFENCE, op, NULL);
            *fenced = false;
            slog_info("metadata: unfencing broker %d", (int)id);
        }
    } else if (!br->in_controlled_shutdown) {
        *fenced = false;
        if (req->want_fence || (req->want_shut_down && !has_leaderships(c->spec, id))) {
            rc = set_fencing_locked(c, br, CHANGE_FENCE, op, NULL);
            *fenced = true;
            *shut_down = req->want_shut_down;
            slog_info("metadata: broker %d %s", (int)id,
                      req->want_shut_down ? "leads nothing: it may shut down now" : "asked to be fenced");
        } else if (req->want_shut_down) {
            int64_t last = -1;
            rc = set_fencing_locked(c, br, CHANGE_SHUTDOWN, op, &last);
            sess->shutdown_offset = last;
            slog_info("metadata: broker %d begins a controlled shutdown: its leaderships move (up to offset %" PRId64
                      ")",
                      (int)id, last);
        }
    } else {
        /* In controlled shutdown: it may go once it leads nothing and
         * every active broker has applied the changes that moved its
         * leaderships (so clients they answer find the new leaders). */
        *fenced = false;
        int64_t low = lowest_active_offset(c);
        if (!has_leaderships(c->spec, id) && sess->shutdown_offset <= low) {
            rc = set_fencing_locked(c, br, CHANGE_FENCE, op, NULL);
            *fenced = true;
            *shut_down = true;
            sess->shutdown_offset = -1;
            slog_info("metadata: broker %d may shut down: the active brokers have applied offset %" PRId64,
                      (int)id, low);
        }
    }
    if (*op) {
        (*op)->hb_fenced = *fenced;
        (*op)->hb_caught_up = *caught_up;
        (*op)->hb_shut_down = *shut_down;
    }
out:
    pthread_mutex_unlock(&c->op_lock);
    return rc;
}

/* Fences brokers whose session ran out. Loop thread. */
static void expire_sessions(struct controller *c, int64_t now)
{
    pthread_mutex_lock(&c->op_lock);
    if (atomic_load(&c->active) && c->spec) {
        for (int32_t i = 0; i < c->spec->nbrokers; i++) {
            const struct mi_broker *br = &c->spec->brokers[i];
            if (br->fenced)
                continue;
            struct ctl_session *s = session(c, br->id, true);
            if (now - s->last_heartbeat_ms < c->session_timeout_ms)
                continue;
            slog_warn("metadata: fencing broker %d: no heartbeat for %" PRId64 " ms", (int)br->id,
                      now - s->last_heartbeat_ms);
            s->last_heartbeat_ms = now; /* once per session timeout at most */
            int32_t id = br->id;
            struct ctl_op *op = NULL;
            (void)set_fencing_locked(c, br, CHANGE_FENCE, &op, NULL);
            ctl_op_release(op);
            /* spec changed: find our place again */
            for (i = 0; i < c->spec->nbrokers && c->spec->brokers[i].id != id; i++)
                ;
        }
    }
    pthread_mutex_unlock(&c->op_lock);
}

/* ------------------------------------------------------------------ */
/* Forwarding                                                          */

struct ctl_fwd *controller_forward(struct controller *c, int16_t api_key, int16_t version, const uint8_t *body,
                                   size_t len, int64_t timeout_ms)
{
    struct ctl_fwd *f = xcalloc(1, sizeof *f);
    atomic_init(&f->refs, 2);
    atomic_init(&f->done, false);
    f->api_key = api_key;
    f->version = version;
    f->body = xmalloc(len ? len : 1);
    if (len)
        memcpy(f->body, body, len);
    f->len = len;
    f->deadline_ms = clock_mono_ms() + (timeout_ms > 0 ? timeout_ms : 30000);
    pthread_mutex_lock(&c->fwd_lock);
    if (c->fwd_in_tail)
        c->fwd_in_tail->next = f;
    else
        c->fwd_in_head = f;
    c->fwd_in_tail = f;
    pthread_mutex_unlock(&c->fwd_lock);
    quorum_wake(c->q);
    return f;
}

bool ctl_fwd_done(struct ctl_fwd *f, int *err, const uint8_t **resp, size_t *len)
{
    if (!atomic_load_explicit(&f->done, memory_order_acquire))
        return false;
    *err = f->err;
    *resp = f->resp;
    *len = f->resp_len;
    return true;
}

void ctl_fwd_release(struct ctl_fwd *f)
{
    if (!f || atomic_fetch_sub(&f->refs, 1) != 1)
        return;
    free(f->body);
    free(f->resp);
    free(f);
}

static void fwd_complete(struct controller *c, struct ctl_fwd *f, int16_t err)
{
    f->err = err;
    atomic_store_explicit(&f->done, true, memory_order_release);
    if (f->on_done)
        f->on_done(f->on_done_arg, f);
    ctl_fwd_release(f);
    park_notify(c->env.wake, park_key_object(f)); /* an identity only */
}

struct kclient *ctl_client(struct controller *c, int32_t id)
{
    const struct samsa_config *cfg = ctl_cfg(c);
    for (size_t i = 0; i < cfg->n_voters && i < c->nctl_clients; i++)
        if (cfg->voters[i].id == id)
            return c->ctl_clients[i];
    return NULL;
}

struct fwd_ctx {
    struct controller *c;
    struct ctl_fwd *f;
};

static void fwd_wait_push(struct controller *c, struct ctl_fwd *f)
{
    f->next = c->fwd_wait;
    c->fwd_wait = f;
}

static void fwd_done_cb(void *arg, int err, int16_t version, const uint8_t *body, size_t len)
{
    (void)version;
    struct fwd_ctx *x = arg;
    struct controller *c = x->c;
    struct ctl_fwd *f = x->f;
    free(x);
    if (err == KERR_NETWORK_EXCEPTION || err == KERR_REQUEST_TIMED_OUT) {
        /* The controller went away: try whoever leads next, until the
         * request's own deadline. */
        f->retry_ms = clock_mono_ms() + RETRY_MS;
        fwd_wait_push(c, f);
        return;
    }
    if (err) {
        fwd_complete(c, f, (int16_t)err);
        return;
    }
    f->resp = xmalloc(len ? len : 1);
    if (len)
        memcpy(f->resp, body, len);
    f->resp_len = len;
    fwd_complete(c, f, 0);
}

static void forward_pending(struct controller *c, int64_t now)
{
    pthread_mutex_lock(&c->fwd_lock);
    struct ctl_fwd *in = c->fwd_in_head;
    c->fwd_in_head = c->fwd_in_tail = NULL;
    pthread_mutex_unlock(&c->fwd_lock);
    while (in) {
        struct ctl_fwd *n = in->next;
        fwd_wait_push(c, in);
        in = n;
    }
    struct ctl_fwd *w = c->fwd_wait;
    c->fwd_wait = NULL;
    int32_t leader = quorum_leader_id(c->q);
    while (w) {
        struct ctl_fwd *f = w;
        w = w->next;
        f->next = NULL;
        struct kclient *kc = leader >= 0 && leader != c->env.node_id ? ctl_client(c, leader) : NULL;
        if (now >= f->deadline_ms) {
            fwd_complete(c, f, KERR_REQUEST_TIMED_OUT);
        } else if (now < f->retry_ms) {
            fwd_wait_push(c, f);
        } else if (leader == c->env.node_id && atomic_load(&c->active)) {
            /* We lead now: the client asks again and it runs here. */
            fwd_complete(c, f, KERR_NOT_CONTROLLER);
        } else if (kc) {
            struct fwd_ctx *x = xcalloc(1, sizeof *x);
            x->c = c;
            x->f = f;
            if (kclient_send_raw(kc, f->api_key, f->version, f->body, f->len, fwd_done_cb, x) != 0) {
                free(x);
                fwd_wait_push(c, f);
            }
        } else {
            fwd_wait_push(c, f); /* no controller known yet */
        }
    }
}

/* ------------------------------------------------------------------ */
/* Broker side                                                         */

static void life_ready(struct controller *c)
{
    if (atomic_exchange(&c->ready, true))
        return;
    slog_info("broker %d: registered (epoch %" PRId64 "), caught up and unfenced: ready", (int)c->env.node_id,
              c->broker_epoch);
    if (c->env.broker_ready)
        c->env.broker_ready(c->env.hook_arg);
    ctl_wake_waiters(c);
}

static void life_registered(struct controller *c, int err, int64_t epoch, int64_t now)
{
    if (err) {
        if (err != KERR_NOT_CONTROLLER && err != KERR_NETWORK_EXCEPTION && err != KERR_REQUEST_TIMED_OUT)
            slog_warn("broker %d: registration refused: %s; retrying", (int)c->env.node_id,
                      kerr_name((int16_t)err));
        c->life = LIFE_REGISTER;
        c->life_next_ms = now + (err == KERR_DUPLICATE_BROKER_REGISTRATION ? 1000 : RETRY_MS);
        return;
    }
    c->broker_epoch = epoch;
    c->register_deadline_ms = -1;
    c->fenced = true;
    c->life = LIFE_RUNNING;
    c->life_next_ms = now;
}

/* The controlled shutdown is over (approved, timed out, or not needed):
 * the broker side stops (a heartbeat without WantShutDown would get a
 * fenced broker unfenced again) and the caller goes on. */
static void shutdown_finish(struct controller *c)
{
    if (c->cs == CS_DONE)
        return;
    c->cs = CS_DONE;
    c->life = LIFE_OFF;
    if (c->shutdown_cb)
        c->shutdown_cb(c->shutdown_arg);
}

static void life_heartbeat_done(struct controller *c, int err, bool fenced, bool shut, int64_t now)
{
    if (err == KERR_STALE_BROKER_EPOCH || err == KERR_BROKER_ID_NOT_REGISTERED) {
        slog_warn("broker %d: the controller does not know this registration (%s): registering again",
                  (int)c->env.node_id, kerr_name((int16_t)err));
        c->life = LIFE_REGISTER;
        c->life_next_ms = now;
        return;
    }
    c->life = LIFE_RUNNING;
    if (err) {
        c->life_next_ms = now + RETRY_MS;
        return;
    }
    if (c->cs == CS_PENDING) {
        c->fenced = fenced;
        if (shut) {
            slog_info("broker %d: the controller approved the controlled shutdown", (int)c->env.node_id);
            shutdown_finish(c);
            return;
        }
        /* Kafka asks again at once after the first answer, then at the
         * heartbeat interval. */
        c->life_next_ms = c->cs_answered ? now + c->hb_interval_ms : now;
        c->cs_answered |= c->hb_shutdown_sent;
        return;
    }
    if (fenced && !c->fenced)
        slog_warn("broker %d: fenced by the controller", (int)c->env.node_id);
    c->fenced = fenced;
    if (!fenced)
        life_ready(c);
    c->life_next_ms = now + (fenced ? FENCED_HEARTBEAT_MS : c->hb_interval_ms);
}

static void local_register_done(void *arg, struct ctl_op *op)
{
    struct controller *c = arg;
    life_registered(c, op->err, op->broker_epoch, clock_mono_ms());
}

static void local_heartbeat_done(void *arg, struct ctl_op *op)
{
    struct controller *c = arg;
    life_heartbeat_done(c, op->err, op->err ? true : op->hb_fenced, !op->err && op->hb_shut_down, clock_mono_ms());
}

static void remote_register_done(void *ctx, int err, int16_t version, void *resp, struct arena *ar)
{
    (void)version;
    (void)ar;
    struct controller *c = ctx;
    const broker_registration_response_t *r = resp;
    if (!err)
        err = r->error_code;
    life_registered(c, err, err ? -1 : r->broker_epoch, clock_mono_ms());
}

static void remote_heartbeat_done(void *ctx, int err, int16_t version, void *resp, struct arena *ar)
{
    (void)version;
    (void)ar;
    struct controller *c = ctx;
    const broker_heartbeat_response_t *r = resp;
    if (!err)
        err = r->error_code;
    life_heartbeat_done(c, err, err ? true : r->is_fenced, !err && r->should_shut_down, clock_mono_ms());
}

/* directory.id of each log dir's meta.properties; *n = 0 unless every
 * log dir has one (Kafka registers all of them or none). */
static kuuid_t *read_dir_ids(const struct samsa_config *cfg, struct arena *a, int32_t *n)
{
    *n = 0;
    if (cfg->n_log_dirs == 0)
        return NULL;
    kuuid_t *ids = arena_alloc(a, cfg->n_log_dirs * sizeof *ids);
    for (size_t i = 0; i < cfg->n_log_dirs; i++) {
        struct meta_properties mp;
        char err[256];
        if (meta_properties_read(cfg->log_dirs[i], &mp, err, sizeof err) != 0 || !mp.has_directory_id)
            return NULL;
        memcpy(ids[i].b, mp.directory_id, sizeof ids[i].b);
    }
    *n = (int32_t)cfg->n_log_dirs;
    return ids;
}

static void build_registration(struct controller *c, broker_registration_request_t *q, struct arena *a)
{
    const struct samsa_config *cfg = ctl_cfg(c);
    broker_registration_request_init(q);
    q->broker_id = c->env.node_id;
    q->cluster_id = c->env.cluster_id[0] ? KSTR(c->env.cluster_id) : KSTR_NULL;
    q->incarnation_id = c->incarnation;
    size_t ne = cfg->n_advertised;
    q->listeners.a = broker_registration_request_listener_new_array(a, (int32_t)(ne ? ne : 1));
    for (size_t i = 0; i < ne; i++) {
        const struct config_endpoint *e = &cfg->advertised[i];
        if (e->is_controller)
            continue; /* the quorum's listeners are not the broker's */
        broker_registration_request_listener_t *x = &q->listeners.a[q->listeners.n++];
        x->name = KSTR(e->name);
        x->host = KSTR(e->host[0] ? e->host : c->env.advertised_host);
        x->port = e->port;
        x->security_protocol = (int16_t)e->protocol;
    }
    if (q->listeners.n == 0 && c->env.advertised_port > 0) {
        broker_registration_request_listener_t *x = &q->listeners.a[q->listeners.n++];
        x->name = KSTR_LIT("PLAINTEXT");
        x->host = KSTR(c->env.advertised_host);
        x->port = (uint16_t)c->env.advertised_port;
        x->security_protocol = 0;
    }
    q->features.a = broker_registration_request_feature_new_array(a, 1);
    q->features.n = 1;
    q->features.a[0].name = KSTR_LIT("metadata.version");
    q->features.a[0].min_supported_version = 1;
    q->features.a[0].max_supported_version = CONTROLLER_METADATA_VERSION;
    q->rack = c->env.rack[0] ? KSTR(c->env.rack) : KSTR_NULL;
    int32_t nd;
    kuuid_t *dirs = read_dir_ids(cfg, a, &nd);
    q->log_dirs.a = dirs;
    q->log_dirs.n = nd;
    /* KIP-966: the epoch this broker had when it last shut down cleanly
     * lets the controller take the new registration at once instead of
     * waiting for the old session to expire. */
    q->previous_broker_epoch = c->prev_epoch;
}

/* The next step of the broker side, when due. */
/* A controlled shutdown asked for: starts it, or ends it when there is
 * nothing to wait for or the bound passed. */
static void shutdown_step(struct controller *c, int64_t now)
{
    if (c->cs == CS_DONE || !atomic_load(&c->shutdown_req))
        return;
    if (c->cs == CS_NONE) {
        /* Only a registered, unfenced broker has anything to hand over. */
        if (!atomic_load(&c->ready) || c->fenced || (c->life != LIFE_RUNNING && c->life != LIFE_WAIT_HEARTBEAT)) {
            shutdown_finish(c);
            return;
        }
        c->cs = CS_PENDING;
        c->cs_answered = false;
        c->cs_deadline_ms = now + c->session_timeout_ms;
        if (c->life == LIFE_RUNNING)
            c->life_next_ms = now;
        slog_info("broker %d: controlled shutdown: asking the controller to move this broker's leaderships",
                  (int)c->env.node_id);
        return;
    }
    if (now >= c->cs_deadline_ms) {
        slog_warn("broker %d: timed out after %d ms waiting for the controller to approve the controlled shutdown",
                  (int)c->env.node_id, (int)c->session_timeout_ms);
        shutdown_finish(c);
    }
}

void controller_begin_shutdown(struct controller *c, void (*done)(void *arg), void *arg)
{
    if (atomic_load(&c->shutdown_req))
        return;
    c->shutdown_cb = done;
    c->shutdown_arg = arg;
    atomic_store(&c->shutdown_req, true); /* publishes the callback to the loop */
    quorum_wake(c->q);
}

/* Kafka's BrokerLifecycleManager: a broker that has not registered once
 * within initial.broker.registration.timeout.ms gives up. */
static void registration_deadline(struct controller *c, int64_t now)
{
    if (c->register_deadline_ms < 0 || now < c->register_deadline_ms)
        return;
    c->register_deadline_ms = -1;
    c->life = LIFE_OFF;
    slog_error("broker %d: not registered with the controller quorum within "
               "initial.broker.registration.timeout.ms (%d ms): shutting down",
               (int)c->env.node_id, (int)ctl_cfg(c)->initial_broker_registration_timeout_ms);
    if (c->env.broker_registration_failed)
        c->env.broker_registration_failed(c->env.hook_arg);
}

static void life_step(struct controller *c, int64_t now)
{
    registration_deadline(c, now);
    shutdown_step(c, now);
    if ((c->life != LIFE_REGISTER && c->life != LIFE_RUNNING) || now < c->life_next_ms)
        return;
    int32_t leader = quorum_leader_id(c->q);
    bool local = leader == c->env.node_id;
    if (leader < 0 || (local && !atomic_load(&c->active)))
        return; /* no active controller yet: the next event or tick retries */
    struct kclient *kc = local ? NULL : ctl_client(c, leader);
    if (!local && !kc) {
        c->life_next_ms = now + RETRY_MS;
        return;
    }
    struct arena a = ARENA_INIT;
    if (c->life == LIFE_REGISTER) {
        broker_registration_request_t q;
        build_registration(c, &q, &a);
        c->life = LIFE_WAIT_REGISTER;
        if (local) {
            int64_t epoch;
            struct ctl_op *op;
            int rc = controller_register_broker(c, &q, &epoch, &op);
            if (rc || !op) {
                life_registered(c, rc, epoch, now);
            } else {
                op->on_done = local_register_done;
                op->on_done_arg = c;
                ctl_op_release(op);
            }
        } else if (kclient_send(kc, BROKER_REGISTRATION_REQUEST_API_KEY, REGISTRATION_VERSION, &q,
                                remote_register_done, c) != 0) {
            life_registered(c, KERR_NETWORK_EXCEPTION, -1, now);
        }
    } else {
        broker_heartbeat_request_t q;
        broker_heartbeat_request_init(&q);
        q.broker_id = c->env.node_id;
        q.broker_epoch = c->broker_epoch;
        /* What this broker has published, partition logs included (the
         * controller lets a broker in controlled shutdown go once every
         * active broker reports the leadership changes). */
        struct mimage *img = controller_image(c);
        q.current_metadata_offset = img->offset;
        mimage_release(img);
        int64_t synced = atomic_load(&c->synced);
        if (atomic_load(&c->caught_up) && synced < q.current_metadata_offset)
            q.current_metadata_offset = synced;
        /* Fenced until this node has applied what the quorum had
         * committed when it learned the high watermark (Kafka's
         * isCaughtUp). */
        q.want_fence = !atomic_load(&c->caught_up);
        q.want_shut_down = c->cs == CS_PENDING;
        c->hb_shutdown_sent = q.want_shut_down;
        q.offline_log_dirs.n = 0;
        c->life = LIFE_WAIT_HEARTBEAT;
        if (local) {
            bool fenced, caught_up, shut;
            struct ctl_op *op;
            int rc = controller_broker_heartbeat(c, &q, &fenced, &caught_up, &shut, &op);
            if (rc || !op) {
                life_heartbeat_done(c, rc, fenced, !rc && shut, now);
            } else {
                op->on_done = local_heartbeat_done;
                op->on_done_arg = c;
                ctl_op_release(op);
            }
        } else if (kclient_send(kc, BROKER_HEARTBEAT_REQUEST_API_KEY, HEARTBEAT_VERSION, &q, remote_heartbeat_done,
                                c) != 0) {
            life_heartbeat_done(c, KERR_NETWORK_EXCEPTION, true, false, now);
        }
    }
    arena_free(&a);
}

/* ------------------------------------------------------------------ */
/* Loop plumbing                                                       */

void ctl_brokers_tick(struct controller *c, int64_t now)
{
    expire_sessions(c, now);
    forward_pending(c, now);
    life_step(c, now);
    ctl_pids_step(c, now);
    ctl_balance_step(c, now);
    ctl_noop_step(c, now);
}

void ctl_brokers_idle(struct controller *c)
{
    int64_t now = clock_mono_ms();
    forward_pending(c, now);
    life_step(c, now);
    ctl_pids_step(c, now);
}

static void on_tick(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    ctl_brokers_tick(t->data, clock_mono_ms());
}

void ctl_brokers_start(struct controller *c)
{
    const struct samsa_config *cfg = ctl_cfg(c);
    struct ev_loop *loop = quorum_loop(c->q);
    c->nctl_clients = cfg->n_voters;
    c->ctl_clients = xcalloc(cfg->n_voters ? cfg->n_voters : 1, sizeof *c->ctl_clients);
    for (size_t i = 0; i < cfg->n_voters; i++) {
        if (cfg->voters[i].id == c->env.node_id)
            continue;
        char cid[32];
        snprintf(cid, sizeof cid, "broker-%d", (int)c->env.node_id);
        struct kclient_opts ko = {.host = cfg->voters[i].host, .port = cfg->voters[i].port, .client_id = cid,
                                  .request_timeout_ms = 10000, .connect_timeout_ms = 2000,
                                  .reconnect_backoff_ms = 50};
        ko.security = c->env.to_controllers;
        c->ctl_clients[i] = kclient_new(loop, &ko);
    }
    uuid_random(c->incarnation.b);
    c->broker_epoch = -1;
    /* KIP-966: the epoch this broker had at its last clean shutdown,
     * kept in the log dirs' clean-shutdown markers (log/logmgr.h). */
    c->prev_epoch = cfg->role_broker && c->env.previous_broker_epoch
                        ? c->env.previous_broker_epoch(c->env.hook_arg)
                        : -1;
    c->life = cfg->role_broker ? LIFE_REGISTER : LIFE_OFF;
    c->life_next_ms = 0;
    c->register_deadline_ms = cfg->role_broker ? clock_mono_ms() + cfg->initial_broker_registration_timeout_ms : -1;
    c->tick = xcalloc(1, sizeof *c->tick);
    ev_timer_init(c->tick, on_tick, TICK_MS / 1000.0, TICK_MS / 1000.0);
    c->tick->data = c;
    ev_timer_start(loop, c->tick);
}

void ctl_brokers_stop(struct controller *c, bool clean)
{
    if (!c->tick)
        return;
    if (clean && atomic_load(&c->ready) && c->broker_epoch >= 0 && c->env.broker_epoch_final)
        c->env.broker_epoch_final(c->env.hook_arg, c->broker_epoch);
    ev_timer_stop(quorum_loop(c->q), c->tick);
    free(c->tick);
    c->tick = NULL;
    /* The loop is stopped: callbacks of what kclient_free fails run here. */
    for (size_t i = 0; i < c->nctl_clients; i++)
        kclient_free(c->ctl_clients[i]);
    free(c->ctl_clients);
    c->ctl_clients = NULL;
    c->nctl_clients = 0;
    pthread_mutex_lock(&c->fwd_lock);
    struct ctl_fwd *in = c->fwd_in_head;
    c->fwd_in_head = c->fwd_in_tail = NULL;
    pthread_mutex_unlock(&c->fwd_lock);
    while (in) {
        struct ctl_fwd *n = in->next;
        fwd_complete(c, in, KERR_NOT_CONTROLLER);
        in = n;
    }
    while (c->fwd_wait) {
        struct ctl_fwd *f = c->fwd_wait;
        c->fwd_wait = f->next;
        fwd_complete(c, f, KERR_NOT_CONTROLLER);
    }
}
