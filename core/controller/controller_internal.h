/* The controller's private state, shared by controller.c (operations,
 * proposals, applying the log), brokers.c (registration, heartbeats,
 * sessions, the broker side's lifecycle, forwarding) and snapshot.c
 * (image <-> snapshot files), pid_manager.c (the broker side's producer
 * ids). Not for request handlers. */
#ifndef SAMSA_CONTROLLER_CONTROLLER_INTERNAL_H
#define SAMSA_CONTROLLER_CONTROLLER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "controller/controller.h"
#include "controller/env.h"
#include "controller/image_build.h"
#include "raft/raft.h"
#include "util/arena.h"
#include "util/buf.h"

struct quorum;
struct kclient;
struct samsa_config;

/* Records of one operation; the structs and their strings live in arena. */
struct mrec {
    int16_t type;
    int16_t version;
    const void *rec;
};

struct recs {
    struct mrec *a;
    size_t n, cap;
    struct arena arena;
};

void recs_init(struct recs *r);
void recs_free(struct recs *r);
void recs_add(struct recs *r, int16_t type, int16_t version, const void *rec);

/* A proposal: one batch of records, from the worker (or loop) that built
 * it to the loop that hands it to Raft and completes it once committed
 * and applied. Two references while in flight (the creator's and the
 * controller's). err and done are written by the loop. */
struct ctl_op {
    atomic_int refs;
    atomic_bool done;
    int16_t err;
    uint8_t *batch; /* owned; freed once proposed */
    size_t len;
    int32_t epoch;    /* leader epoch it was decided in */
    uint64_t gen;     /* speculative-state generation it was built on */
    int64_t base;     /* predicted base offset */
    int64_t end;      /* last offset + 1 */
    /* Loop-thread completion hook (the broker side's local calls). */
    void (*on_done)(void *arg, struct ctl_op *op);
    void *on_done_arg;
    /* Heartbeat replies computed when the op was built. */
    bool hb_fenced, hb_caught_up, hb_shut_down;
    int64_t broker_epoch;
    struct ctl_op *next;
};

/* A request a broker forwards to the active controller (any worker ->
 * loop -> kclient -> loop -> worker). */
struct ctl_fwd {
    atomic_int refs;
    atomic_bool done;
    int16_t err;       /* nonzero: no answer (NOT_CONTROLLER, REQUEST_TIMED_OUT) */
    int16_t api_key, version;
    uint8_t *body;     /* request body, owned */
    size_t len;
    uint8_t *resp;     /* response body, owned (set when done && !err) */
    size_t resp_len;
    int64_t deadline_ms;
    int64_t retry_ms;  /* not before (after a failed attempt) */
    void (*on_done)(void *arg, struct ctl_fwd *f); /* loop-side hook, optional */
    void *on_done_arg;
    struct ctl_fwd *next;
};

/* Controller-side liveness of one registered broker (active controller
 * only, under op_lock). */
struct ctl_session {
    int32_t id;
    int64_t last_heartbeat_ms; /* monotonic */
    int64_t metadata_offset;   /* as its last heartbeat said; -1 none yet */
    /* Controlled shutdown: the last offset of the batch that moved its
     * leaderships away; it may go once every active broker has applied
     * that (Kafka's controlledShutdownOffset). -1: not shutting down. */
    int64_t shutdown_offset;
};

/* The broker side of this node: registration and heartbeats to the
 * active controller (loop thread only). */
enum life_state { LIFE_OFF = 0, LIFE_REGISTER, LIFE_WAIT_REGISTER, LIFE_RUNNING, LIFE_WAIT_HEARTBEAT };

struct controller {
    struct controller_env env; /* a copy of controller_open's */
    struct quorum *q;
    char *dir;

    /* The committed image, published by the loop. img_gen names it: a
     * process-wide sequence, so no two images (of any controller) share
     * one. Readers compare img_gen with the generation their thread's
     * cached reference was taken at and take img_lock only when it moved
     * (controller_image); publish() writes both under img_lock. */
    pthread_mutex_t img_lock;
    struct mimage *cur;
    _Atomic uint64_t img_gen;
    _Atomic uint64_t acl_gen; /* cur's ACL set generation (0: none) */

    /* Broker configs this controller published into env.cfg (dynamic
     * broker config changes), oldest first; owned here. Workers may still
     * read a replaced one, so none is freed before controller_close (they
     * are small and changes are rare). orig_cfg is *env.cfg at open, owned
     * by the caller. Loop thread only (and open/close). */
    struct samsa_config **cfgs;
    size_t ncfgs;
    struct samsa_config *orig_cfg;

    /* ---- the active controller's speculative state, under op_lock ---- */
    pthread_mutex_t op_lock;
    atomic_bool active;      /* this node leads and has caught up */
    int32_t active_epoch;
    uint64_t spec_gen;       /* bumped whenever spec is thrown away */
    struct mimage *spec;     /* cur + what was proposed after it */
    int64_t next_offset;     /* where the next proposal lands */
    struct ctl_op *queue_head, *queue_tail; /* built, not yet proposed */
    struct ctl_session *sessions;
    int32_t nsessions;

    /* ---- loop thread ---- */
    struct ctl_op *inflight_head, *inflight_tail; /* proposed, not committed */
    int64_t hw;              /* the quorum's high watermark, as told */
    bool hw_known;           /* told at least once since start */
    int64_t applied;         /* next offset to apply */
    enum raft_role role;
    int32_t epoch, leader_id;
    int64_t epoch_start;     /* a leader's first offset of its epoch */
    bool load_pending;       /* a fetched snapshot replaced the log */
    struct raft_snapshot_id load_id;
    int64_t snap_end;        /* end offset of the newest snapshot */
    int64_t bytes_since_snap;
    int64_t snap_at_ms;
    int64_t snap_max_bytes, snap_max_interval_ms;
    struct buf rbuf;         /* log reads */
    struct ev_timer *tick;   /* sessions, heartbeats, forwarding timeouts */

    /* forwarding and the broker side (loop thread) */
    pthread_mutex_t fwd_lock;
    struct ctl_fwd *fwd_in_head, *fwd_in_tail; /* submitted by workers */
    struct ctl_fwd *fwd_wait;                  /* waiting for a known controller */
    struct kclient **ctl_clients;              /* per voter, for controller RPCs */
    size_t nctl_clients;
    enum life_state life;
    int64_t life_next_ms;
    /* initial.broker.registration.timeout.ms: when the first registration
     * must have succeeded by (-1: it did, or not a broker) */
    int64_t register_deadline_ms;
    kuuid_t incarnation;
    int64_t broker_epoch;
    int64_t prev_epoch;      /* from the last clean shutdown, -1 none */
    bool fenced;             /* as the controller last said */
    atomic_bool ready;       /* broker: registered, caught up, unfenced */
    atomic_bool caught_up;   /* applied up to the quorum's high watermark once */
    int32_t hb_interval_ms, session_timeout_ms;
    /* Controlled shutdown of the broker side (Kafka's
     * BrokerLifecycleManager): asked from any thread (shutdown_req, with
     * the callback set before it), then run on the loop. */
    atomic_bool shutdown_req;
    void (*shutdown_cb)(void *arg);
    void *shutdown_arg;
    enum { CS_NONE = 0, CS_PENDING, CS_DONE } cs;
    int64_t cs_deadline_ms;
    bool cs_answered;        /* an answer to WantShutDown came already */
    bool hb_shutdown_sent;   /* the heartbeat in flight says WantShutDown */

    /* the publisher thread: brings the partition registry in line with
     * the published image (sync_partitions); synced is the offset of the
     * last image it finished with */
    pthread_t pub_thread;
    bool pub_started;
    pthread_mutex_t pub_mu;
    pthread_cond_t pub_cv;
    bool pub_want, pub_stop;
    char pub_err[512];
    atomic_int_least64_t synced;

    /* the broker side's producer-id blocks (pid_manager.c) */
    struct ctl_pids *pids;
    /* when the next preferred-leader election pass runs (balance.c; loop
     * thread, under op_lock), -1: none scheduled; and when to look for
     * imbalance again meanwhile */
    int64_t balance_due_ms, balance_probe_ms;
    /* when the active controller appends its next NoOpRecord (KIP-835;
     * loop thread, under op_lock), -1: not scheduled */
    int64_t noop_due_ms;

    /* waiters for synchronous calls (tests, start-up) */
    pthread_mutex_t wait_mu;
    pthread_cond_t wait_cv;
};

/* The broker config in effect (an atomic load of env.cfg; load it once
 * into a local where several fields must agree). */
static inline struct samsa_config *ctl_cfg(const struct controller *c) { return atomic_load(c->env.cfg); }

/* controller.c */
/* This node's id, and park_notify(park_key_object(obj)) on its workers. */
int32_t ctl_node_id(const struct controller *c);
void ctl_notify_object(const struct controller *c, const void *obj);
int ctl_submit_locked(struct controller *c, const struct recs *rs, char *msg, size_t msglen,
                      struct ctl_op **out);
void ctl_wake_waiters(struct controller *c);
int ctl_wait_op(struct controller *c, struct ctl_op *op, int64_t timeout_ms);
int16_t register_broker_record_version(const struct mimage *img);
/* PartitionChangeRecord's version at the image's metadata.version. */
int16_t ctl_partition_change_record_version(const struct mimage *img);
/* Caller holds op_lock: 0 when this node is the active controller, else
 * NOT_CONTROLLER. */
int ctl_not_active(struct controller *c);
/* The end of an operation (rc, and the proposal it made, if any): hands
 * the op to *op, or (op NULL) waits for its commit. */
int ctl_op_finish(struct controller *c, int rc, struct ctl_op *mine, struct ctl_op **op);
/* Kafka's ClusterControlManager.isActive: registered, unfenced, not in
 * controlled shutdown. */
bool ctl_broker_active(const struct mimage *img, int32_t id);

/* features.c: 0, or UNSUPPORTED_VERSION with Kafka's message when the
 * registering broker does not support every finalized feature level. */
struct broker_registration_request_s;
int ctl_check_registration_features(const struct mimage *img, const struct broker_registration_request_s *req,
                                    char *msg, size_t msglen);

/* brokers.c (loop thread unless said) */
void ctl_brokers_activate(struct controller *c, int64_t now_ms);  /* op_lock held */
void ctl_brokers_tick(struct controller *c, int64_t now_ms);
void ctl_brokers_idle(struct controller *c);
void ctl_brokers_start(struct controller *c);
void ctl_brokers_stop(struct controller *c, bool clean);
/* The client of voter id's controller listener (NULL for this node or
 * an unknown id). */
struct kclient *ctl_client(struct controller *c, int32_t id);

/* pid_manager.c: created before the loop starts, freed after everything
 * that could complete its request (ops, kclients) is gone. The step
 * (loop thread) asks for the next block when one is wanted and due. */
void ctl_pids_init(struct controller *c);
void ctl_pids_free(struct controller *c);
void ctl_pids_step(struct controller *c, int64_t now_ms);

/* balance.c (loop thread): automatic preferred-leader election. */
void ctl_balance_step(struct controller *c, int64_t now_ms);
/* Appends a NoOpRecord every metadata.max.idle.interval.ms while this
 * node is the active controller (0: never), so that brokers and
 * observers see the log advance and can tell a live quorum from a
 * stale one, as Kafka's QuorumController does (KIP-835). Loop thread. */
void ctl_noop_step(struct controller *c, int64_t now_ms);

/* snapshot.c */
/* Writes the image as a snapshot with id through the Raft log. 0 or a
 * Kafka error code. */
int ctl_snapshot_write(struct controller *c, const struct mimage *img, const struct raft_snapshot_id *id);
/* Replays snapshot id into a fresh draft (its records only). NULL with
 * err on failure. */
struct mi_draft *ctl_snapshot_load(struct controller *c, const struct raft_snapshot_id *id,
                                   const struct samsa_config *cfg, char *err, size_t errlen);

#endif
