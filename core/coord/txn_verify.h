/* KIP-890 part 1 on the partition leader (Kafka's
 * AddPartitionsToTxnManager): before the first transactional batch of a
 * producer's transaction is appended to a partition, the leader asks the
 * transaction coordinator (AddPartitionsToTxn v4+, VerifyOnly) whether
 * the partition is in that transaction, so a late or stray batch cannot
 * open a transaction the coordinator will never end (a hanging
 * transaction that would hold the last stable offset forever).
 *
 * The request goes out on the marker sender's loop and clients
 * (txn_markers_send.h). The produce request parks on the job's key
 * (park_key_object(job)) until txn_verify_done. */
#ifndef SAMSA_COORD_TXN_VERIFY_H
#define SAMSA_COORD_TXN_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/kcodec.h"

struct txn_coord;
struct txn_verify;

/* Starts verifying partitions (topics[i], partitions[i]) of the
 * transaction of tid (producer pid/epoch) with the coordinator of tc's
 * node (its marker sender's loop); everything is copied. Returns
 * a job holding one reference for the caller (txn_verify_release). Any
 * thread; never blocks. */
struct txn_verify *txn_verify_start(struct txn_coord *tc, kstr_t tid, int64_t pid, int16_t epoch, int32_t n,
                                    const kstr_t *topics, const int32_t *partitions);
/* True once the answer is in (acquire: the errors are readable then). */
bool txn_verify_done(const struct txn_verify *v);
/* The produce error for partition i, as Kafka's ReplicaManager maps the
 * coordinator's: 0 (verified), INVALID_TXN_STATE (not in the
 * transaction), INVALID_PRODUCER_EPOCH (fenced),
 * INVALID_PRODUCER_ID_MAPPING, or NOT_ENOUGH_REPLICAS for what a client
 * should simply retry (the coordinator moving, loading, busy, or
 * unreachable). */
int16_t txn_verify_error(const struct txn_verify *v, int32_t i);
void txn_verify_release(struct txn_verify *v);

#endif
