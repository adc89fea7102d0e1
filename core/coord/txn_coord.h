/* The transaction coordinator: transactional ids, their producer ids and
 * epochs, and the two-phase end of each transaction, kept in
 * __transaction_state as Kafka's TransactionCoordinator keeps them
 * (transactions V1: the client adds partitions with AddPartitionsToTxn).
 *
 * Sharding and threads, as the group coordinator (coord.h): an id lives
 * in partition abs(javaHash(id)) % n of __transaction_state; this node
 * coordinates the ids of the partitions it leads, each partition a shard
 * under one mutex. Request handlers run an operation on their worker
 * under that lock: it checks the id's metadata (txn_meta.c), appends the
 * record of the transition (one write(2) to the page cache) and returns
 * a txn_ack to wait on. The transition becomes the id's current state
 * only once that record is below the high watermark (the ISR has it):
 * whoever sees it there first applies it (a request's check, the next
 * operation on the shard, the coordinator's thread), so memory never
 * runs ahead of what a new leader would load. Meanwhile the id is
 * pending and other operations on it answer CONCURRENT_TRANSACTIONS,
 * where Kafka does.
 *
 * When a PrepareCommit / PrepareAbort is applied, its markers go to the
 * marker sender (txn_markers_send.h), which writes them on every
 * partition of the transaction (WriteTxnMarkers to the leaders); when
 * all are written the coordinator appends CompleteCommit /
 * CompleteAbort. The coordinator's thread loads a shard when this node
 * becomes its leader (re-sending the markers of prepared transactions),
 * unloads it when the leadership goes, aborts transactions past their
 * timeout (transaction.abort.timed.out.transaction.cleanup.interval.ms)
 * and forgets idle ids (transactional.id.expiration.ms).
 *
 * Every function may be called from any thread; none blocks on I/O. */
#ifndef SAMSA_COORD_TXN_COORD_H
#define SAMSA_COORD_TXN_COORD_H

#include <stdbool.h>
#include <stdint.h>

#include "coord/env.h"
#include "coord/txn_meta.h"
#include "proto/kcodec.h"
#include "replica/partition.h" /* enum ack_state */
#include "util/arena.h"

struct txn_coord;
struct txn_shard;

/* env is copied. */
struct txn_coord *txn_coord_create(const struct coord_env *env);
const struct coord_env *txn_coord_env(const struct txn_coord *tc);
/* Starts the coordinator's thread and the marker sender. */
void txn_coord_start(struct txn_coord *tc);
/* Stops both and unloads every shard. */
void txn_coord_stop(struct txn_coord *tc);
void txn_coord_destroy(struct txn_coord *tc);

/* The wait of an operation that appended: the transition is applied and
 * the answer may be given once txn_ack_check says ACK_READY. offset -1:
 * nothing to wait for. The request parks on txn_ack_partition's park
 * key, bounded by deadline (monotonic ms). */
struct txn_ack {
    struct txn_shard *shard;
    int64_t offset;
    int32_t epoch;
    int64_t deadline;
};
void txn_ack_init(struct txn_ack *a);
/* ACK_READY (the record is replicated and its transition applied),
 * ACK_WAIT, or ACK_FAILED with Kafka's error for the client in *err:
 * NOT_COORDINATOR (the leadership moved), COORDINATOR_NOT_AVAILABLE (the
 * ISR shrank, the deadline passed). */
enum ack_state txn_ack_check(const struct txn_ack *a, int16_t *err);
/* The __transaction_state partition a waits on, with one more reference
 * (partition_put), or NULL. */
struct partition *txn_ack_partition(const struct txn_ack *a);

/* Every operation returns 0 or Kafka's error for the request:
 * NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
 * CONCURRENT_TRANSACTIONS, INVALID_PRODUCER_EPOCH / PRODUCER_FENCED,
 * INVALID_PRODUCER_ID_MAPPING, INVALID_TXN_STATE, ... (the caller
 * downgrades by version with txn_error_for_version). */

/* InitProducerId with a transactional id. req_pid / req_epoch: the
 * request's (-1/-1 when absent). new_pid: -1 on the first call; when
 * *need_pid comes back true (an unknown id, or an exhausted epoch) the
 * caller gets a fresh producer id and calls again with it. On 0 the
 * answer is *pid / *epoch once ack is ready. */
/* *then_err: the error to answer once ack is ready instead of the id
 * (CONCURRENT_TRANSACTIONS after fencing an open transaction: its abort
 * was prepared; the client retries until it completes), else 0.
 * INVALID_TRANSACTION_TIMEOUT for a timeout outside
 * (0, transaction.max.timeout.ms]. */
int16_t txn_coord_init_pid(struct txn_coord *tc, kstr_t id, int32_t timeout_ms, int64_t req_pid, int16_t req_epoch,
                           int64_t new_pid, bool *need_pid, int64_t *pid, int16_t *epoch, int16_t *then_err,
                           struct txn_ack *ack);

/* AddPartitionsToTxn (and AddOffsetsToTxn, with the group's
 * __consumer_offsets partition): the caller has checked that the
 * partitions exist and are authorized. */
int16_t txn_coord_add_partitions(struct txn_coord *tc, kstr_t id, int64_t pid, int16_t epoch, int32_t n,
                                 const kstr_t *topics, const int32_t *partitions, struct txn_ack *ack);

/* EndTxn: answered once the PrepareCommit / PrepareAbort is replicated;
 * the markers follow. */
int16_t txn_coord_end(struct txn_coord *tc, kstr_t id, int64_t pid, int16_t epoch, bool commit, struct txn_ack *ack);

/* AddPartitionsToTxn v4+ with VerifyOnly, from a partition leader
 * (KIP-890; Kafka's handleVerifyPartitionsInTransaction): errs[i] is 0
 * when (topics[i], partitions[i]) is in the producer's ongoing
 * transaction, TRANSACTION_ABORTABLE when not; or for every partition
 * INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, CONCURRENT_TRANSACTIONS
 * (the transaction is ending), INVALID_REQUEST (an empty id), or the
 * coordinator's NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS. */
void txn_coord_verify(struct txn_coord *tc, kstr_t id, int64_t pid, int16_t epoch, int32_t n, const kstr_t *topics,
                      const int32_t *partitions, int16_t *errs);

/* The marker sender, whose loop and clients the partition leaders'
 * verification shares (txn_verify.c). */
struct txn_sender *txn_coord_sender(struct txn_coord *tc);

/* ---- DescribeTransactions / ListTransactions ---- */

struct txn_coord_desc {
    int16_t error; /* TRANSACTIONAL_ID_NOT_FOUND, NOT_COORDINATOR, ... */
    kstr_t state;  /* Kafka's name: "Ongoing", ... */
    int32_t timeout_ms;
    int64_t start_ts; /* -1 */
    int64_t producer_id;
    int16_t producer_epoch;
    struct txn_tp *parts; /* in the arena, topic strings too */
    int32_t nparts;
};
/* One id; out->error says what a DescribeTransactions answers for it. */
void txn_coord_describe(struct txn_coord *tc, kstr_t id, struct arena *a, struct txn_coord_desc *out);

struct txn_coord_listed {
    kstr_t id;
    int64_t producer_id;
    kstr_t state;
};
/* ListTransactions: the ids of every shard loaded here, filtered by
 * states (nstates 0: any), producer ids (npids 0: any) and, when
 * min_duration_ms >= 0, started more than that long ago (KIP-994;
 * as Kafka, an id with no transaction, start -1, passes). A
 * state name that is not a state matches nothing (the handler reports
 * it). Returns 0, or COORDINATOR_LOAD_IN_PROGRESS while a shard this
 * node leads loads. */
int16_t txn_coord_list(struct txn_coord *tc, const kstr_t *states, int32_t nstates, const int64_t *pids,
                       int32_t npids, int64_t min_duration_ms, struct arena *a, struct txn_coord_listed **out,
                       int32_t *n);

/* The marker sender's report (txn_markers_send.h): every partition of
 * the transaction of `id` (producer pid/epoch, in shard `partition` at
 * coordinator epoch coord_epoch) has its marker, or is gone. The
 * coordinator appends CompleteCommit / CompleteAbort; a report about a
 * transaction that moved on (another epoch, the shard unloaded) is
 * dropped. */
void txn_coord_markers_done(struct txn_coord *tc, int32_t partition, int32_t coord_epoch, kstr_t id, int64_t pid,
                            int16_t epoch, bool commit);

#endif
