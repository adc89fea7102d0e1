/* The transaction coordinator's marker sender (Kafka's
 * TransactionMarkerChannelManager): ends a prepared transaction on every
 * partition it touched by sending WriteTxnMarkers to each partition's
 * leader (this node's own listener included, so every marker is written
 * and acknowledged the same way, once the ISR has it).
 *
 * Its own thread and libev loop, one kclient per broker (the address the
 * broker registered), markers of many transactions to the same broker
 * batched into one request. A partition whose leader is unknown, moving,
 * or answers a retriable error (NOT_LEADER_OR_FOLLOWER,
 * NOT_ENOUGH_REPLICAS*, REQUEST_TIMED_OUT, NETWORK_EXCEPTION,
 * UNKNOWN_TOPIC_OR_PARTITION while the topic still exists, ...) is
 * retried after a backoff against the current image; one whose topic is
 * deleted counts as done; INVALID_PRODUCER_EPOCH and
 * TRANSACTION_COORDINATOR_FENCED end the partition too (a newer
 * coordinator or producer epoch has moved on; logged), as Kafka's
 * TransactionMarkerRequestCompletionHandler does. When every partition of
 * a job is done the sender calls txn_coord_markers_done from its thread.
 */
#ifndef SAMSA_COORD_TXN_MARKERS_SEND_H
#define SAMSA_COORD_TXN_MARKERS_SEND_H

#include <stdbool.h>
#include <stdint.h>

#include "coord/txn_meta.h"
#include "proto/kcodec.h"

struct txn_coord;
struct coord_env; /* coord/env.h */
struct txn_sender;

/* One transaction's markers. */
struct txn_marker_job {
    kstr_t id;                   /* transactional id (copied) */
    int32_t txn_partition;       /* its __transaction_state partition */
    int32_t coord_epoch;         /* that partition's leader epoch */
    int64_t producer_id;
    int16_t producer_epoch;
    bool commit;
    const struct txn_tp *parts;  /* copied */
    int32_t nparts;
};

/* tc gets the reports (txn_coord_markers_done); env is copied. */
struct txn_sender *txn_sender_create(const struct coord_env *env, struct txn_coord *tc);
void txn_sender_start(struct txn_sender *s);
/* Stops the thread; jobs not done are dropped (the next leader of their
 * shard sends them again when it loads the prepared transaction). */
void txn_sender_stop(struct txn_sender *s);
void txn_sender_destroy(struct txn_sender *s);

/* Queues a job (copied); any thread, never blocks. A job with no
 * partitions is reported done at once (from the sender's thread). */
void txn_sender_send(struct txn_sender *s, const struct txn_marker_job *job);

/* Drops the jobs of __transaction_state partition txn_partition sent
 * with a coordinator epoch <= coord_epoch, unreported (Kafka's
 * removeMarkersForTxnTopicPartition when the coordinator resigns a
 * partition): call it when unloading a shard. Any thread, never blocks;
 * a report already being made as it is called may still arrive. */
void txn_sender_forget(struct txn_sender *s, int32_t txn_partition, int32_t coord_epoch);

/* The sender's loop and clients serve the partition leaders' KIP-890
 * verification too (txn_verify.c), so a node keeps one inter-broker
 * client per broker for transactions. txn_sender_run: fn(arg) runs on
 * the sender's thread soon (false when the sender is stopping: fn will
 * not run). txn_sender_client, on that thread only: the client to
 * broker_id at its registered address, or NULL while it is unknown. */
struct kclient;
struct mimage;
bool txn_sender_run(struct txn_sender *s, void (*fn)(void *arg), void *arg);
struct kclient *txn_sender_client(struct txn_sender *s, const struct mimage *img, int32_t broker_id);

/* Jobs queued or in flight (for tests and DescribeTransactions' logs). */
int32_t txn_sender_pending(struct txn_sender *s);

#endif
