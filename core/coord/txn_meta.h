/* One transactional id's metadata and its state machine, as Kafka's
 * TransactionMetadata and the checks of TransactionCoordinator
 * (handleInitProducerId, handleAddPartitionsToTransaction,
 * handleEndTransaction, abortTimedOutTransactions; transactions V1).
 *
 * Pure and single-threaded: no locks, no I/O, no clock. Each operation
 * looks at the current metadata and either refuses with Kafka's error or
 * fills a target (the metadata as it will be once written to
 * __transaction_state). The caller writes the target's record, and only
 * when that append succeeded makes it current (txn_meta_apply), so the
 * memory never runs ahead of the log by more than a write in flight.
 * Kafka's pendingState is the caller's `pending` flag: while a write or
 * the markers of a PrepareCommit/PrepareAbort are on their way the
 * operations below answer CONCURRENT_TRANSACTIONS where Kafka does. */
#ifndef SAMSA_COORD_TXN_META_H
#define SAMSA_COORD_TXN_META_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/kcodec.h"

/* Kafka's TransactionState ids, as TransactionLogValue stores them. */
enum txn_state {
    TXN_EMPTY = 0,
    TXN_ONGOING = 1,
    TXN_PREPARE_COMMIT = 2,
    TXN_PREPARE_ABORT = 3,
    TXN_COMPLETE_COMMIT = 4,
    TXN_COMPLETE_ABORT = 5,
    TXN_DEAD = 6,
    TXN_PREPARE_EPOCH_FENCE = 7,
};

#define TXN_NO_PRODUCER_ID (-1)
#define TXN_NO_PRODUCER_EPOCH (-1)

struct txn_tp {
    char *topic; /* owned (malloc) */
    int32_t partition;
};

struct txn_meta {
    char *id; /* owned; NUL-terminated */
    int32_t id_len;
    int64_t producer_id;
    int64_t prev_producer_id; /* -1: none */
    int64_t next_producer_id; /* -1: none */
    int16_t epoch;            /* -1 until the first InitProducerId */
    int16_t last_epoch;       /* -1: none (KIP-360 retries) */
    int32_t timeout_ms;
    enum txn_state state;
    struct txn_tp *parts; /* owned, sorted by topic then partition */
    int32_t nparts;
    int64_t start_ts;  /* wall ms the transaction began, -1 */
    int64_t update_ts; /* wall ms of the last transition */
    int16_t client_version;
    /* caller's bookkeeping, not in the log */
    bool pending;      /* a write is on its way */
    bool markers_done; /* Prepare*: every marker written, Complete* to write */
};

/* Kafka's TransactionState names ("Empty", "Ongoing", ...), as
 * DescribeTransactions / ListTransactions show them. */
const char *txn_state_name(enum txn_state s);
/* -1 for an unknown name. */
int txn_state_parse(kstr_t name);
/* Kafka's TransactionState.validPreviousStates. */
bool txn_transition_valid(enum txn_state from, enum txn_state to);

/* A new metadata (state Empty, epoch -1) for id, owned by the caller
 * (txn_meta_free). */
struct txn_meta *txn_meta_new(kstr_t id, int64_t producer_id, int32_t timeout_ms, int64_t now);
void txn_meta_free(struct txn_meta *m);
/* dst (uninitialised or cleared) becomes a deep copy of src. */
void txn_meta_copy(struct txn_meta *dst, const struct txn_meta *src);
/* Frees what a txn_meta owns without freeing the struct. */
void txn_meta_clear(struct txn_meta *m);
/* m takes target's contents (target is left empty). */
void txn_meta_apply(struct txn_meta *m, struct txn_meta *target);
bool txn_meta_has_part(const struct txn_meta *m, kstr_t topic, int32_t partition);
/* Adds (topic, partition) if absent, keeping the order. */
void txn_meta_add_part(struct txn_meta *m, kstr_t topic, int32_t partition);
/* Kafka's isEpochExhausted: epoch >= Short.MAX_VALUE - 1. */
bool txn_epoch_exhausted(int16_t epoch);

/* ---- transitions: 0 with *target filled (to write), or an error ---- */

enum txn_init_action {
    TXN_INIT_WRITE = 0, /* write target; answer its producer id / epoch */
    TXN_INIT_RETRY,     /* nothing to write; answer the current id/epoch */
    TXN_INIT_FENCE,     /* Ongoing: write target (PrepareAbort with the
                           bumped epoch), send its markers, answer
                           CONCURRENT_TRANSACTIONS so the client retries */
};

/* InitProducerId for an existing id. req_pid/req_epoch: the request's
 * (KIP-360), -1/-1 when absent. new_pid: a fresh producer id for an
 * exhausted epoch (the caller asks for one when txn_init_needs_pid). */
bool txn_init_needs_pid(const struct txn_meta *m, int16_t req_epoch);
int16_t txn_prepare_init(const struct txn_meta *m, int64_t req_pid, int16_t req_epoch, int32_t timeout_ms,
                         int64_t new_pid, int64_t now, struct txn_meta *target, enum txn_init_action *action);

/* AddPartitionsToTxn / AddOffsetsToTxn (the __consumer_offsets partition
 * of the group): 0 with *write false when every partition is already in
 * the transaction, else the target to write. */
int16_t txn_prepare_add(const struct txn_meta *m, int64_t pid, int16_t epoch, int32_t n, const kstr_t *topics,
                        const int32_t *partitions, int64_t now, struct txn_meta *target, bool *write);

/* EndTxn (commit true / false) from a client: 0 with *write false for a
 * retry of an end already complete, else the PrepareCommit /
 * PrepareAbort target. */
int16_t txn_prepare_end(const struct txn_meta *m, int64_t pid, int16_t epoch, bool commit, int64_t now,
                        struct txn_meta *target, bool *write);

/* The coordinator aborts an Ongoing transaction itself (fencing an old
 * producer, or its timeout passed): the epoch is bumped (unless already
 * exhausted, as Kafka's prepareFenceProducerEpoch) and the target is
 * PrepareAbort with it. INVALID_TXN_STATE when not Ongoing. */
int16_t txn_prepare_fence_abort(const struct txn_meta *m, int64_t now, struct txn_meta *target);

/* Every marker of a PrepareCommit / PrepareAbort is written: the
 * CompleteCommit / CompleteAbort target (partitions cleared). */
int16_t txn_prepare_complete(const struct txn_meta *m, int64_t now, struct txn_meta *target);

/* abortTimedOutTransactions' condition. */
bool txn_timed_out(const struct txn_meta *m, int64_t now);
/* transactional.id.expiration.ms: an idle id in Empty / Complete*. */
bool txn_expired(const struct txn_meta *m, int64_t expiration_ms, int64_t now);

/* KafkaApis' downgrade of PRODUCER_FENCED (KIP-588) for older request
 * versions: InitProducerId < 4, AddPartitionsToTxn < 2,
 * AddOffsetsToTxn < 2, EndTxn < 2, TxnOffsetCommit < 3 hear
 * INVALID_PRODUCER_EPOCH. api_key: the request's. */
int16_t txn_error_for_version(int16_t err, int16_t api_key, int16_t version);

#endif
