/* The group coordinator: classic consumer groups and committed offsets,
 * kept in __consumer_offsets as Kafka keeps them.
 *
 * Sharding and threads. A group lives in partition
 * abs(javaHash(groupId)) % n of __consumer_offsets, and this node
 * coordinates the groups of the partitions it leads. Each such partition
 * is a shard: its groups, their offsets and their timers, and the
 * appends to its log, all under the shard's one mutex (Kafka likewise
 * runs every operation of a partition on one thread at a time). Request
 * handlers run an operation on their worker under that lock: it is held
 * for in-memory work and one write(2) of a record batch to the page
 * cache (partition_append), never for an fsync or a network wait. A
 * request that must wait (JoinGroup, SyncGroup) parks on its worker with
 * a struct cg_waiter the group completes later from whichever thread
 * completes the phase; an answer that depends on records the operation
 * appended parks until the ISR has them, exactly as an acks=all Produce
 * (partition_ack_wait_all: the high watermark past them, in the leader
 * epoch they were appended in). Kafka's coordinators likewise answer
 * only once their write is committed, so an acknowledged OffsetCommit
 * or SyncGroup survives the loss of the leader.
 *
 * The coordinator's own thread loads a shard by reading its partition
 * back when this node becomes its leader (at start-up too), unloads it
 * when the leadership goes, runs the group timers (session expiry,
 * rebalance and initial-delay timeouts, pending syncs) and expires old
 * offsets (offsets.retention.minutes). Until a shard is loaded its groups
 * answer COORDINATOR_LOAD_IN_PROGRESS; groups of a partition led
 * elsewhere answer NOT_COORDINATOR.
 *
 * Every function below may be called from any thread; none blocks on
 * I/O. Results point into the caller's arena. */
#ifndef SAMSA_COORD_COORD_H
#define SAMSA_COORD_COORD_H

#include <stdbool.h>
#include <stdint.h>

#include "coord/consumer.h"
#include "coord/env.h"
#include "coord/group.h"
#include "proto/kcodec.h"
#include "replica/partition.h" /* enum ack_state */

struct samsa_config;
struct coord;
struct coord_shard;
struct mimage;

struct plugin_registry;

/* Kafka's default group.consumer.assignors; the first is the default. */
#define COORD_DEFAULT_ASSIGNORS "uniform,range"

/* The assignors of group.consumer.assignors, in order, as a
 * NULL-terminated array of n strings the caller frees (each and the
 * array). Set, every name must be a loaded plugin's assignor, else NULL
 * with one line in err naming the first missing one; unset, Kafka's
 * default (COORD_DEFAULT_ASSIGNORS) keeps those that are loaded (n may
 * be 0). */
char **coord_assignor_names(const struct samsa_config *cfg, const struct plugin_registry *plugins, int32_t *n,
                            char *err, size_t errlen);
/* 0 when coord_assignor_names succeeds; else -1 with one line in err. */
int coord_check_assignors(const struct samsa_config *cfg, const struct plugin_registry *plugins, char *err,
                          size_t errlen);

/* The assignor called name among names (group.consumer.assignors, n of
 * them; name NULL: the first, the default): the loaded plugin's assignor
 * of that name; NULL for a name not listed or that nothing provides. *state gets the capability's state. The result
 * is static or lives as long as plugins. */
const samsa_assignor_t *coord_assignor_find(char *const *names, int32_t n, const struct plugin_registry *plugins,
                                             const char *name, void **state);

/* env is copied. */
struct coord *coord_create(const struct coord_env *env);
/* Starts the coordinator thread. */
void coord_start(struct coord *c);
/* Stops the thread and unloads every shard: waiting requests are
 * answered NOT_COORDINATOR. */
void coord_stop(struct coord *c);
/* After coord_stop, once no request can cancel a waiter any more. */
void coord_destroy(struct coord *c);

/* Partitions of __consumer_offsets: the topic's, or
 * offsets.topic.num.partitions before it exists. */
int32_t coord_num_partitions(const struct samsa_config *cfg, const struct mimage *img);

/* A replication wait after an operation that appended: the shard, the
 * last offset the answer depends on (offset -1: nothing to wait for) and
 * the leader epoch it was appended in. deadline (monotonic ms): the wait
 * ends there, offsets.commit.timeout.ms after the write (or after a
 * JoinGroup / SyncGroup waiter was completed), whatever the request's
 * own park timeout; a parker should watch it as a deadline (today it is
 * seen at the next check). next: more of them (a DeleteGroups naming
 * groups of several shards; the caller owns the list, usually in its
 * request arena), NULL for one. */
struct coord_ack {
    struct coord_shard *shard;
    int64_t offset;
    int32_t epoch;
    int64_t deadline;
    struct coord_ack *next;
};
void coord_ack_init(struct coord_ack *a);
/* ACK_READY once every write of the list is below its
 * partition's high watermark (the ISR has it) and the ISR still has
 * min.insync.replicas members; ACK_WAIT while one is not yet;
 * else ACK_FAILED with the first failure in *err, as Kafka's group
 * coordinator answers it:
 * NOT_COORDINATOR (the shard or the leadership moved, the log went
 * offline), COORDINATOR_NOT_AVAILABLE (the ISR shrank below
 * min.insync.replicas, or the deadline passed: Kafka's REQUEST_TIMED_OUT
 * mapping). The caller answers COORDINATOR_NOT_AVAILABLE too when its
 * park timeout passes first. The wait is on the high watermark of the partition
 * coord_ack_partition gives, for each element of the list. */
enum ack_state coord_ack_check(const struct coord_ack *a, int16_t *err);
/* The __consumer_offsets partition one element of an ack (not its next)
 * waits on, with one more reference (partition_put), or NULL when there
 * is nothing to wait for or the shard is no longer active. */
struct partition;
struct partition *coord_ack_partition(const struct coord_ack *a);

/* Kafka's mapping of a coordinator write's errors for the client
 * (GroupCoordinatorService.handleOperationException, and
 * GroupMetadataManager's for NOT_ENOUGH_REPLICAS_AFTER_APPEND, which an
 * acks=all write can also end with; TransactionStateManager maps its
 * appends the same way): NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
 * UNKNOWN_SERVER_ERROR or err itself. */
int16_t coord_append_error(int err);

/* Every operation returns 0 or the coordinator-level error for the whole
 * request: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
 * COORDINATOR_NOT_AVAILABLE. */

/* JoinGroup / SyncGroup: on 0, w is either done on return (*waiting
 * false) or attached to a member (*waiting true: the request parks until
 * w.done, and calls coord_cancel if it goes away first). */
int16_t coord_join(struct coord *c, kstr_t group, const struct cg_join_req *rq, struct cg_waiter *w,
                   bool *waiting);
int16_t coord_sync(struct coord *c, kstr_t group, const struct cg_sync_req *rq, struct cg_waiter *w,
                   bool *waiting);
/* The request is going away; true when w was still waiting (it will not
 * be completed now). */
bool coord_cancel(struct cg_waiter *w);
/* The replication wait of a completed waiter: what its answer depends
 * on (the group's last append before completing it). */
void coord_waiter_ack(const struct cg_waiter *w, struct coord_ack *out);

int16_t coord_heartbeat(struct coord *c, kstr_t group, kstr_t member_id, kstr_t instance_id, int32_t generation,
                        struct coord_ack *ack);
/* errs: one per member. */
int16_t coord_leave(struct coord *c, kstr_t group, int32_t n, const kstr_t *member_ids, const kstr_t *instance_ids,
                    int16_t *errs, struct coord_ack *ack);

/* One partition of an OffsetCommit. */
struct coord_commit {
    kstr_t topic;
    int32_t partition;
    int64_t offset;
    int32_t leader_epoch;
    kstr_t metadata;   /* len -1: null (stored as "") */
    int64_t commit_ts; /* -1: now */
    int16_t error;     /* out */
};
/* generation: generation id (or member epoch, v9); retention_ms -1: the
 * broker's. Partition errors in parts[i].error. */
int16_t coord_commit(struct coord *c, kstr_t group, kstr_t member_id, kstr_t instance_id, int32_t generation,
                     int16_t version, int64_t retention_ms, struct coord_commit *parts, int32_t n,
                     struct coord_ack *ack);

/* One partition of an OffsetFetch answer. */
struct coord_fetched {
    kstr_t topic;
    int32_t partition;
    int64_t offset; /* -1: none */
    int32_t leader_epoch;
    kstr_t metadata;
    int16_t error;
};
/* parts (n of them, topic and partition set) are filled in; with all,
 * every committed offset of the group is returned in *out (from a,
 * sorted by topic and partition). Offsets of open transactions are not
 * seen; with require_stable (OffsetFetch v7+) a partition that has one
 * answers UNSTABLE_OFFSET_COMMIT (offset -1) instead. */
int16_t coord_fetch_offsets(struct coord *c, kstr_t group, struct coord_fetched *parts, int32_t n, bool all,
                            bool require_stable, struct arena *a, struct coord_fetched **out, int32_t *nout);

/* ---- transactions (Kafka's OffsetMetadataManager) ----
 *
 * TxnOffsetCommit: the offsets are written as one transactional batch of
 * the producer (its id and epoch, base sequence 0, as Kafka's coordinator
 * runtime writes it; the partition checks the epoch) and stay pending,
 * invisible to OffsetFetch, until the transaction's marker is written to
 * the same partition (coord_write_txn_marker): COMMIT makes them the
 * committed offsets (each only where no later regular commit's record
 * follows it in the log), ABORT drops them. Loading a shard replays the
 * transactional batches and the markers in log order; transactions open
 * at the log end stay pending. Like a regular commit, pending and
 * committed state change when the record is appended (under the shard's
 * lock, so in log order), and the answers wait for the ISR. */

/* generation, member_id, instance_id: of the request (v3+; -1, "" and
 * null before). guard: KIP-890's (coord_txn_verify_begin), or
 * PLOG_GUARD_UNCHECKED (verification off): a guard no longer current
 * (a marker ended the transaction meanwhile) is INVALID_TXN_STATE. Partition errors in parts[i].error (the commit_ts
 * fields are ignored: now). Returns 0 or the request's error
 * (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, the
 * coordinator-level ones, or the append's: INVALID_PRODUCER_EPOCH...). */
int16_t coord_txn_commit(struct coord *c, kstr_t group, kstr_t member_id, kstr_t instance_id, int32_t generation,
                         int64_t producer_id, int16_t producer_epoch, uint64_t guard, struct coord_commit *parts,
                         int32_t n, struct coord_ack *ack);

/* KIP-890 for TxnOffsetCommit (Kafka's coordinator runtime asks
 * maybeStartTransactionVerification before a transactional write): the
 * guard of the group's __consumer_offsets partition for the producer
 * (plog_verify_begin) when this node leads it; 0 (nothing to verify: the
 * producer's transaction is open there already) or a guard to verify
 * with the transaction coordinator; *topic and *partition name that
 * partition. Returns false when there is no such partition here (the
 * commit itself answers why). */
bool coord_txn_verify_begin(struct coord *c, kstr_t group, int64_t producer_id, int16_t producer_epoch,
                            uint64_t *guard, int32_t *partition);

/* WriteTxnMarkers on partition index of __consumer_offsets (p: its
 * partition, led here): appends the marker under the shard's lock and
 * replays it (the producer's pending offsets of the shard become
 * committed or are dropped). 0 with *offset and *epoch (the marker's
 * offset and the leader epoch of the append, for the ISR wait), or
 * NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS (the shard is not
 * loaded at p's epoch: the caller answers NOT_LEADER_OR_FOLLOWER, as
 * Kafka does, and the transaction coordinator retries), or the append's
 * error (INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED...). */
int16_t coord_write_txn_marker(struct coord *c, struct partition *p, int64_t producer_id, int16_t producer_epoch,
                               int32_t coordinator_epoch, bool commit, int64_t *offset, int32_t *epoch);

/* OffsetDelete: a top-level error (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP)
 * or per partition in errs (GROUP_SUBSCRIBED_TO_TOPIC). */
int16_t coord_delete_offsets(struct coord *c, kstr_t group, int32_t n, const kstr_t *topics,
                             const int32_t *partitions, int16_t *errs, struct coord_ack *ack);

/* DeleteGroups for one group: GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, ... */
int16_t coord_delete_group(struct coord *c, kstr_t group, struct coord_ack *ack);

struct coord_member_desc {
    kstr_t member_id, instance_id, client_id, client_host;
    kbytes_t metadata, assignment;
};

struct coord_group_desc {
    kstr_t state, protocol_type, protocol_data;
    struct coord_member_desc *members;
    int32_t nmembers;
};

/* DescribeGroups for one group (an unknown group is Dead, no error). */
int16_t coord_describe_group(struct coord *c, kstr_t group, struct arena *a, struct coord_group_desc *out);

struct coord_listed {
    kstr_t group_id, protocol_type, state, type;
};

/* ListGroups: every group of the shards loaded here. Returns
 * COORDINATOR_LOAD_IN_PROGRESS while a shard this node leads loads. */
int16_t coord_list_groups(struct coord *c, struct arena *a, struct coord_listed **out, int32_t *n);

/* ---- KIP-848 consumer groups ---- */

/* ConsumerGroupHeartbeat: 0 with the answer in *out (its error
 * included), or the coordinator-level error. */
int16_t coord_consumer_heartbeat(struct coord *c, kstr_t group, const struct ccg_hb_req *rq, struct arena *a,
                                 struct ccg_hb_resp *out, struct coord_ack *ack);

struct coord_ccg_member_desc {
    kstr_t member_id, instance_id, rack_id, client_id, client_host, regex;
    int32_t epoch;
    kstr_t *topics;
    int32_t ntopics;
    struct ctp *assigned, *target;
    int32_t nassigned, ntarget;
};

struct coord_ccg_desc {
    int16_t error; /* GROUP_ID_NOT_FOUND: unknown or not a consumer group */
    const char *message;
    kstr_t state, assignor;
    int32_t epoch, assign_epoch;
    struct coord_ccg_member_desc *members;
    int32_t nmembers;
};

/* ConsumerGroupDescribe of one group. */
int16_t coord_consumer_describe(struct coord *c, kstr_t group, struct arena *a, struct coord_ccg_desc *out);

/* OffsetFetch v9+ of a member (memberId / memberEpoch): 0,
 * UNKNOWN_MEMBER_ID or STALE_MEMBER_EPOCH for a consumer group. */
int16_t coord_validate_fetch(struct coord *c, kstr_t group, kstr_t member_id, int32_t member_epoch);

#endif
