/* A classic consumer group (JoinGroup / SyncGroup / Heartbeat /
 * LeaveGroup) and its committed offsets: the state machine of Kafka's
 * ClassicGroup and the classic half of its GroupMetadataManager, states
 * Empty -> PreparingRebalance -> CompletingRebalance -> Stable (and
 * Dead), with the same timers (initial rebalance delay, rebalance
 * timeout, pending sync, member sessions) and the same answers.
 *
 * No I/O and no locking here: the coordinator (coord/coord.c) owns every
 * group of a __consumer_offsets partition under that partition's lock,
 * passes the clock in, and persists what the group asks for through the
 * store callback of struct cg_env, which runs synchronously (an append
 * to the partition's log). That keeps this file testable with a fake
 * clock and a fake store (tests/unit/coord_test.c).
 *
 * Requests that wait (a JoinGroup until the join phase completes, a
 * SyncGroup until the leader's assignment arrives) hand the group a
 * struct cg_waiter, owned by the request. The group fills it in and sets
 * done (release) when it completes it, then calls its notify hook; the
 * request reads it once done (acquire). A request that goes away first
 * detaches its waiter (cg_waiter_detach) under the same lock; the member
 * stays "awaiting" exactly as in Kafka, where the connection's death is
 * not noticed either. */
#ifndef SAMSA_COORD_GROUP_H
#define SAMSA_COORD_GROUP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "proto/kcodec.h"
#include "util/arena.h"
#include "util/hmap.h"

#define CG_NO_DEADLINE INT64_MAX
/* Kafka's group.classic.new.member.join.timeout (internal, 5 minutes). */
#define CG_NEW_MEMBER_JOIN_TIMEOUT_MS (5 * 60 * 1000)

enum cg_state {
    CG_EMPTY = 0,
    CG_PREPARING_REBALANCE,
    CG_COMPLETING_REBALANCE,
    CG_STABLE,
    CG_DEAD,
};

/* Kafka's names ("Empty", "PreparingRebalance", ...). */
const char *cg_state_name(enum cg_state s);

struct cg_protocol {
    char *name;
    uint8_t *meta;
    int32_t meta_len;
};

struct cg_waiter;
struct ccgroup;

struct cg_member {
    char *member_id;
    char *instance_id; /* NULL: dynamic member */
    char *client_id;
    char *client_host;
    int32_t rebalance_timeout_ms;
    int32_t session_timeout_ms;
    char *protocol_type;
    struct cg_protocol *protocols; /* in the member's order of preference */
    int32_t nprotocols;
    uint8_t *assignment; /* NULL with len 0: none */
    int32_t assignment_len;
    /* Kafka's awaitingJoinFuture / awaitingSyncFuture being set: the
     * member takes part in the phase even when its request (waiter) is
     * gone. */
    bool awaiting_join, awaiting_sync;
    struct cg_waiter *join_waiter, *sync_waiter;
    bool is_new;
    bool pending_sync; /* in pendingSyncMembers */
    int64_t hb_deadline; /* session expiry (monotonic ms) */
};

/* A dynamic member told MEMBER_ID_REQUIRED, until it joins again. */
struct cg_pending_member {
    char *member_id;
    int64_t deadline;
};

/* One committed offset (OffsetCommitValue). */
struct cg_offset {
    int64_t offset;
    int32_t leader_epoch;  /* -1 none */
    char *metadata;        /* never NULL ("" when none); metadata_len bytes */
    int32_t metadata_len;
    int64_t commit_ts;     /* wall ms */
    int64_t expire_ts;     /* wall ms, -1 none */
    /* Offset of its record in __consumer_offsets (-1 unknown): of a
     * committed transaction's offsets, only one written after the
     * partition's current one replaces it (Kafka's recordOffset rule). */
    int64_t record_offset;
};

enum cg_join_timer {
    CG_JOIN_NONE = 0,
    CG_JOIN_INITIAL, /* tryCompleteInitialRebalanceElseSchedule */
    CG_JOIN_COMPLETE, /* completeClassicGroupJoin */
};

struct cgroup {
    char *id;
    int32_t id_len;
    enum cg_state state, prev_state;
    int64_t state_ts; /* wall ms of the last transition; -1 unknown */
    int32_t generation;
    char *protocol_type; /* NULL: none */
    char *protocol_name; /* NULL: none */
    char *leader;        /* member id (owned copy), NULL: none */
    struct cg_member **members; /* insertion order */
    int32_t nmembers, capmembers;
    struct cg_pending_member *pending; /* pendingJoinMembers */
    int32_t npending, cappending;
    int32_t num_awaiting_join;
    bool new_member_added;
    /* timers (monotonic ms) */
    enum cg_join_timer join_timer;
    int64_t join_deadline;
    int32_t initial_delay_ms, initial_remaining_ms;
    int64_t sync_deadline;
    int32_t sync_generation;
    /* Subscribed topics of a "consumer" group (computeSubscribedTopics):
     * known only when every member's subscription parsed. */
    bool subscribed_known;
    char **subscribed;
    int32_t nsubscribed;
    /* topic "\0" partition(be32) -> struct cg_offset* */
    struct hmap offsets;
    /* Transactional offset commits whose transaction has not ended:
     * producer id (int64) -> struct hmap* of the same keys and values as
     * offsets. Invisible to OffsetFetch; the marker moves them to
     * offsets (COMMIT) or drops them (ABORT). */
    struct hmap txn;
    /* A GroupMetadata record of this group is in the log: deleting the
     * group writes a tombstone for it. */
    bool has_record;
    /* A consumer group of the KIP-848 protocol (coord/consumer.h), or
     * NULL for a classic one. Its offsets stay in offsets above. */
    struct ccgroup *cc;
    /* For the coordinator: its deadline heap. */
    int32_t heap_index;
    int64_t heap_key;
};

/* What a waiting request gets. Strings and bytes live in arena (owned by
 * the waiter; cg_waiter_release frees it). */
struct cg_join_member {
    kstr_t member_id;
    kstr_t instance_id;
    kbytes_t metadata;
};

#define CG_WAIT_JOIN 1
#define CG_WAIT_SYNC 2

struct cg_waiter {
    int kind;
    atomic_bool done;
    /* Under the group's lock: the member whose join_waiter/sync_waiter
     * points here, NULL once completed or detached. */
    struct cg_member *member;
    /* Any thread, once done: w is an identity only (it may be freed). */
    void (*notify)(void *arg, const struct cg_waiter *w);
    void *notify_arg;
    void *owner; /* the coordinator's: the shard whose lock guards member */
    struct arena arena;
    /* The last offset the group appended before completing this waiter
     * (its answer depends on the ISR having it), -1 none, and the leader
     * epoch it was appended in. */
    int64_t ack_offset;
    int32_t ack_epoch;
    /* result */
    int16_t error;
    int32_t generation;
    kstr_t member_id, leader, protocol_type, protocol_name;
    bool skip_assignment;
    struct cg_join_member *members;
    int32_t nmembers;
    kbytes_t assignment;
};

void cg_waiter_init(struct cg_waiter *w, int kind, void (*notify)(void *, const struct cg_waiter *), void *arg);
/* Frees the result's memory. */
void cg_waiter_release(struct cg_waiter *w);
/* Under the group's lock: the request is going away. True when the
 * waiter was still attached (now it is not; it will never be done). */
bool cg_waiter_detach(struct cg_waiter *w);

/* The world of one operation. */
struct cg_env {
    int64_t now;      /* monotonic ms */
    int64_t wall_now; /* wall ms */
    int32_t initial_rebalance_delay_ms;
    int32_t new_member_join_timeout_ms;
    int32_t max_size; /* group.max.size */
    /* Writes a GroupMetadata record of g: its members with assignment
     * assign[i] for members[i] (assign NULL: their current one); with
     * g->state Empty, none. Returns 0 or the append's Kafka error, and
     * sets ack_offset and ack_epoch on success. */
    int (*store)(struct cg_env *e, struct cgroup *g, const kbytes_t *assign);
    void *ctx;
    int64_t ack_offset; /* set by store; -1 when nothing was written */
    int32_t ack_epoch;  /* leader epoch of that append */
    /* Set when an operation changed a timer (the coordinator re-files
     * the group in its deadline heap). */
    bool timers_changed;
};

struct cgroup *cg_new(const char *id, int32_t len, int64_t wall_now);
/* Completes every waiter with err, then frees g and its offsets. */
void cg_free(struct cgroup *g, int16_t err);

struct cg_member *cg_member_find(const struct cgroup *g, kstr_t member_id);
bool cg_is_pending(const struct cgroup *g, kstr_t member_id);
/* No members, pending members, offsets (committed or in an open
 * transaction) or record: nothing to keep. */
bool cg_is_disposable(const struct cgroup *g);

struct cg_join_req {
    kstr_t member_id;
    kstr_t instance_id; /* len -1: null */
    kstr_t protocol_type;
    kstr_t client_id;
    kstr_t client_host;
    int32_t session_timeout_ms;
    int32_t rebalance_timeout_ms;
    int16_t version; /* JoinGroup version: v4+ MEMBER_ID_REQUIRED, v9+ skip_assignment */
    int32_t nprotocols;
    const kstr_t *protocol_names;
    const kbytes_t *protocol_metadata;
};

/* JoinGroup (the session timeout and group id already checked). w is
 * either done on return or attached to a member. */
void cg_join(struct cg_env *e, struct cgroup *g, const struct cg_join_req *rq, struct cg_waiter *w);

struct cg_sync_req {
    kstr_t member_id;
    kstr_t instance_id;
    kstr_t protocol_type; /* len -1: not given (v0-4) */
    kstr_t protocol_name;
    int32_t generation;
    int32_t nassignments;
    const kstr_t *assign_members;
    const kbytes_t *assignments;
};

void cg_sync(struct cg_env *e, struct cgroup *g, const struct cg_sync_req *rq, struct cg_waiter *w);

int16_t cg_heartbeat(struct cg_env *e, struct cgroup *g, kstr_t member_id, kstr_t instance_id, int32_t generation);

/* LeaveGroup of n members (v0-2: one, from the request's member id).
 * errs[i] gets each member's error. Returns the top-level error. */
int16_t cg_leave(struct cg_env *e, struct cgroup *g, int32_t n, const kstr_t *member_ids, const kstr_t *instance_ids,
                 int16_t *errs);

/* OffsetCommit's group checks (Kafka's ClassicGroup.validateOffsetCommit)
 * and the session it keeps alive. 0 or the error for every partition. */
int16_t cg_validate_commit(struct cg_env *e, struct cgroup *g, kstr_t member_id, kstr_t instance_id,
                           int32_t generation);

/* TxnOffsetCommit's group checks (validateOffsetCommit with
 * isTransactional): as cg_validate_commit, except that a request
 * without member id and generation (v0-2) is accepted whatever the
 * state, the state is not enforced (no REBALANCE_IN_PROGRESS), and no
 * session is kept alive. */
int16_t cg_validate_txn_commit(const struct cgroup *g, kstr_t member_id, kstr_t instance_id, int32_t generation);

/* Runs the timers that are due at e->now. */
void cg_tick(struct cg_env *e, struct cgroup *g);
/* The earliest timer, CG_NO_DEADLINE when none. */
int64_t cg_next_deadline(const struct cgroup *g);

/* The group moves away (unload, deletion): every waiter is completed
 * with err and the state becomes Dead. */
void cg_make_dead(struct cgroup *g, int16_t err);

/* ---- offsets ---- */

const struct cg_offset *cg_offset_get(const struct cgroup *g, kstr_t topic, int32_t partition);
/* Copies o (and its metadata). */
void cg_offset_put(struct cgroup *g, kstr_t topic, int32_t partition, const struct cg_offset *o);
bool cg_offset_del(struct cgroup *g, kstr_t topic, int32_t partition);
/* Iteration: *iter starts at 0; each call yields the next stored offset
 * with its topic (pointing into g, valid while it is unchanged) and
 * partition; false at the end. */
bool cg_offset_next(const struct cgroup *g, size_t *iter, kstr_t *topic, int32_t *partition,
                    const struct cg_offset **o);
size_t cg_offset_count(const struct cgroup *g);

/* ---- transactional offsets (Kafka's OffsetMetadataManager) ---- */

/* A transactional offset commit of producer_id (its record replayed or
 * written): pending until the transaction ends. Copies o. */
void cg_txn_put(struct cgroup *g, int64_t producer_id, kstr_t topic, int32_t partition, const struct cg_offset *o);
/* The transaction of producer_id ended (its marker): with commit, each of
 * its pending offsets becomes the committed one unless the committed one's
 * record is later in the log (record_offset); either way they are no
 * longer pending. Returns how many offsets became committed. */
int32_t cg_txn_end(struct cgroup *g, int64_t producer_id, bool commit);
/* A tombstone of (topic, partition): drops it from every open
 * transaction of g too. */
void cg_txn_del(struct cgroup *g, kstr_t topic, int32_t partition);
/* hasPendingTransactionalOffsets: an open transaction holds an offset of
 * (topic, partition). */
bool cg_txn_pending(const struct cgroup *g, kstr_t topic, int32_t partition);
/* Open transactions with offsets of g. */
size_t cg_txn_count(const struct cgroup *g);
/* Each (topic, partition) pending in some open transaction, possibly
 * more than once; *iter1 and *iter2 start at 0. topic points into g. */
bool cg_txn_next(const struct cgroup *g, size_t *iter1, size_t *iter2, kstr_t *topic, int32_t *partition);

/* OffsetDelete: Kafka's ClassicGroup.isSubscribedToTopic. */
bool cg_subscribed_to(const struct cgroup *g, kstr_t topic);

/* ---- loading (__consumer_offsets replay) ---- */

/* A member as stored in a GroupMetadataValue. */
struct cg_loaded_member {
    kstr_t member_id, instance_id, client_id, client_host;
    int32_t rebalance_timeout_ms, session_timeout_ms;
    kbytes_t subscription, assignment;
};

/* Replaces g's membership with a stored GroupMetadataValue (Kafka's
 * GroupMetadataManager.replay): Empty without members, else Stable. */
void cg_load_metadata(struct cgroup *g, kstr_t protocol_type, int32_t generation, kstr_t protocol, kstr_t leader,
                      int64_t state_ts, int32_t n, const struct cg_loaded_member *members);
/* After loading: every member's session starts now (Kafka reschedules
 * the heartbeats of loaded groups). */
void cg_loaded(struct cg_env *e, struct cgroup *g);

#endif
