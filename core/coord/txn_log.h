/* __transaction_state records in Kafka's own schemas (TransactionLog):
 * the key is an int16 version (0) and TransactionLogKey (the
 * transactional id); the value an int16 version and TransactionLogValue
 * (version 0 for transactions V1 clients, 1, flexible with the tagged
 * previous/next producer ids and client transaction version, for V2),
 * its partition list null in state Empty as Kafka writes it. A null
 * value is a tombstone: the id expired. */
#ifndef SAMSA_COORD_TXN_LOG_H
#define SAMSA_COORD_TXN_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include "coord/txn_meta.h"
#include "proto/kcodec.h"
#include "util/arena.h"
#include "util/buf.h"

#define TXN_STATE_TOPIC "__transaction_state"

/* Key / value bytes appended to out. */
void txn_log_key(struct buf *out, kstr_t transactional_id);
void txn_log_value(struct buf *out, const struct txn_meta *m);

/* Decodes one record. Returns 0 with *id (pointing into key) set and,
 * unless *tombstone, *out filled (a new txn_meta the caller owns and
 * frees); 1 for a key version that is not a transaction record (skipped
 * by the loader); -1 for bytes that do not decode or a value that makes
 * no sense (an unknown state, a negative timeout). */
int txn_log_parse(kbytes_t key, kbytes_t value, kstr_t *id, bool *tombstone, struct txn_meta **out);

#endif
