/* Producer state of one partition (Kafka's ProducerStateManager and
 * ProducerAppendInfo): for each producer id that wrote to the partition,
 * its epoch and the sequence ranges and offsets of its last batches, so
 * that the leader can tell a retried batch (duplicate: answer with the
 * original offsets, append nothing) from a gap (OUT_OF_ORDER_SEQUENCE_NUMBER)
 * and a zombie (INVALID_PRODUCER_EPOCH).
 *
 * The state is a function of the log: the leader updates it with each
 * batch it appends, a follower with each batch it replicates (so a new
 * leader deduplicates the retries of the old one's producers), and a log
 * that opens rebuilds it from its latest snapshot plus the batches after
 * it. Snapshots use Kafka's file format (ProducerStateManager, version 1),
 * so a samsa log directory and a Kafka one read each other's:
 *
 *   int16  version (1)
 *   uint32 crc       CRC-32C of every byte after this field
 *   int32  count, then count times:
 *     int64 producer_id
 *     int16 producer_epoch
 *     int32 last_sequence
 *     int64 last_offset
 *     int32 offset_delta              (last_offset - first offset of the last batch)
 *     int64 timestamp                 (the last batch's max timestamp)
 *     int32 coordinator_epoch
 *     int64 current_txn_first_offset  (-1: no open transaction)
 *   all big-endian. A snapshot keeps only the last batch of each producer
 *   (as Kafka's does): after a reload, a retry of an older batch than the
 *   last is OUT_OF_ORDER_SEQUENCE_NUMBER, not a duplicate.
 *
 * Not thread-safe: the owner (log/plog.c) serialises every call, under
 * its append lock. */
#ifndef SAMSA_LOG_PRODUCER_STATE_H
#define SAMSA_LOG_PRODUCER_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/hmap.h"

#include "proto/record_batch.h"
#include "util/buf.h"

/* Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN: a producer has at
 * most max.in.flight.requests.per.connection = 5 batches in flight. */
#define PSTATE_BATCHES_RETAINED 5
#define PSTATE_SNAPSHOT_VERSION 1
#define PSTATE_SNAPSHOT_SUFFIX ".snapshot"

/* One appended batch of a producer. */
struct ps_batch {
    int32_t first_seq;
    int32_t last_seq;
    int64_t first_offset;
    int64_t last_offset;
    int64_t timestamp; /* the batch's max timestamp */
};

struct ps_entry {
    int64_t producer_id;
    int16_t epoch;
    int32_t coordinator_epoch;        /* -1 until a transaction marker */
    int64_t last_timestamp;           /* of the last batch (expiration) */
    int64_t current_txn_first_offset; /* -1: no open transaction */
    int nbatches;                     /* 0..PSTATE_BATCHES_RETAINED */
    struct ps_batch batches[PSTATE_BATCHES_RETAINED]; /* oldest first */
};

/* The map owns its entries (malloc'ed, keyed by the 8 bytes of the
 * producer id as stored in the entry). Public so that a log can hold one
 * in its own allocation (pstate_init, pstate_clear to free what it
 * holds). */
struct pstate {
    struct hmap producers;
};

/* An empty state in s (the caller's memory). */
void pstate_init(struct pstate *s);
/* An empty state; NULL when out of memory. The caller owns it
 * (pstate_free). */
struct pstate *pstate_new(void);
void pstate_free(struct pstate *s);
/* Forgets every producer. */
void pstate_clear(struct pstate *s);

/* Kafka's DefaultRecordBatch.incrementSequence: the sequence after
 * adding delta to seq, wrapping from INT32_MAX to 0. */
int32_t pstate_seq_add(int32_t seq, int32_t delta);

/* The leader's check of a batch from a client (Kafka's
 * analyzeAndValidateProducerState with origin CLIENT), before offsets are
 * assigned; h is the batch's header (h->base_offset is not used). For a
 * batch without a producer id: 0. Otherwise:
 *   PSTATE_DUPLICATE  the producer's entry has this epoch and one of its
 *                     retained batches has exactly this first and last
 *                     sequence: *dup (may be NULL) gets that batch;
 *                     the caller appends nothing and answers with its
 *                     offsets.
 *   KERR_INVALID_PRODUCER_EPOCH  the epoch is below the entry's.
 *   KERR_OUT_OF_ORDER_SEQUENCE_NUMBER  a new epoch (the entry had one)
 *                     that does not start at sequence 0, or the same
 *                     epoch and the first sequence does not follow the
 *                     last batch's last sequence (+1, or 0 after
 *                     INT32_MAX).
 *   0                 append it: a producer id the partition has not seen
 *                     (or has expired) is accepted at any sequence, as
 *                     Kafka does since KIP-360 (no UNKNOWN_PRODUCER_ID).
 * s is not changed. */
#define PSTATE_DUPLICATE 1
int pstate_check(const struct pstate *s, const struct rb_header *h, struct ps_batch *dup);
/* pstate_check also refuses, after the rules above, a batch that is not
 * transactional from a producer whose transaction is open:
 * KERR_INVALID_TXN_STATE (Kafka's appendDataBatch). A transactional batch
 * opens a transaction when none is open. Control batches are checked
 * with pstate_check_marker instead (pstate_check returns 0 for them). */

/* The leader's check of a transaction marker (a control batch with a
 * producer id, COMMIT or ABORT, written by WriteTxnMarkers; Kafka's
 * appendEndTxnMarker with transaction version 0/1, the only one the
 * WriteTxnMarkers versions samsa knows carry):
 *   KERR_INVALID_PRODUCER_EPOCH        the marker's epoch is below the
 *                                      entry's (Kafka 2.7+ answers
 *                                      InvalidProducerEpoch, not
 *                                      ProducerFenced, for markers too)
 *   KERR_TRANSACTION_COORDINATOR_FENCED coordinator_epoch is below the
 *                                      entry's (a zombie coordinator)
 *   0                                  append it (also for a producer
 *                                      without entry or open
 *                                      transaction: an empty transaction)
 * s is not changed. */
int pstate_check_marker(const struct pstate *s, const struct rb_header *h, int32_t coordinator_epoch);
/* A data batch a coordinator writes itself (the group coordinator's
 * transactional offset commits): Kafka checks only the epoch of such an
 * append (AppendOrigin.COORDINATOR: no sequence and no duplicate check;
 * the coordinator writes every batch at base sequence 0).
 * KERR_INVALID_PRODUCER_EPOCH when the epoch is below the entry's, else
 * 0. s is not changed. */
int pstate_check_coordinator(const struct pstate *s, const struct rb_header *h);

/* A transaction a marker ended (Kafka's CompletedTxn). */
struct ps_completed_txn {
    int64_t producer_id;
    int64_t first_offset; /* its first data batch's base offset */
    int64_t last_offset;  /* the marker's offset */
    bool aborted;
};

/* Records a marker that is now in the log (leader, follower, replay): h
 * is the control batch's header (final base offset), type its control
 * record's type (RB_CONTROL_COMMIT / RB_CONTROL_ABORT; other types and
 * batches without a producer id are ignored) and coordinator_epoch its
 * value's. The entry takes the marker's epoch (a new one clears its
 * batches), the coordinator epoch and the marker's timestamp, and its
 * open transaction is closed. Returns 1 with *done filled when a
 * transaction with data ended (Kafka reports none for an empty one), 0
 * when none did, KERR_KAFKA_STORAGE_ERROR when out of memory. No check
 * is made. */
int pstate_update_marker(struct pstate *s, const struct rb_header *h, int16_t type, int32_t coordinator_epoch,
                         struct ps_completed_txn *done);

/* The smallest first offset of the open transactions (Kafka's first
 * unstable offset over ongoingTxns), ignoring producer except_pid (-1:
 * none); -1 when no transaction is open. O(producers). */
int64_t pstate_first_unstable_offset(const struct pstate *s, int64_t except_pid);
/* How many producers have an open transaction. O(producers). */
size_t pstate_open_txn_count(const struct pstate *s);

/* Records a batch that is now in the log (leader after its write,
 * follower replication, recovery replay); h carries its final base
 * offset. Batches without a producer id and control batches are ignored
 * (markers go through pstate_update_marker, which needs their record). A new epoch replaces the entry's
 * batches; the oldest batch is dropped beyond PSTATE_BATCHES_RETAINED.
 * No check is made (a follower takes what its leader wrote). 0, or
 * KERR_KAFKA_STORAGE_ERROR when out of memory. */
int pstate_update(struct pstate *s, const struct rb_header *h);

/* The entry of producer_id, or NULL. Valid until the next change of s. */
const struct ps_entry *pstate_find(const struct pstate *s, int64_t producer_id);
size_t pstate_count(const struct pstate *s);
/* Calls fn for every entry, in no particular order; fn must not change s. */
void pstate_foreach(const struct pstate *s, void (*fn)(void *ctx, const struct ps_entry *e), void *ctx);

/* Kafka's removeExpiredProducers: drops the producers whose last batch
 * is producer.id.expiration.ms or more before now_ms and that have no
 * open transaction. Returns how many went. */
size_t pstate_expire(struct pstate *s, int64_t now_ms, int64_t expiration_ms);

/* Appends the snapshot bytes of s (the format above) to out. 0, or
 * KERR_KAFKA_STORAGE_ERROR when out of memory. */
int pstate_snapshot_encode(const struct pstate *s, struct buf *out);
/* Replaces the content of s with the snapshot in p[0..n). 0, or
 * KERR_CORRUPT_MESSAGE for a wrong version, CRC, length or count, or an
 * entry that cannot be (negative producer id or epoch; for an entry with
 * a batch, last_offset >= 0, an offset_delta < 0 or > last_offset; Kafka
 * writes an entry without batches as last_offset -1, offset_delta 0): s
 * is then left empty. Expired producers are kept (pstate_expire). Never reads outside p[0..n). */
int pstate_snapshot_decode(struct pstate *s, const uint8_t *p, size_t n);

/* Snapshot files are "<offset as 20 digits>.snapshot" in the partition
 * directory: segment_file_path / segment_parse_name with
 * PSTATE_SNAPSHOT_SUFFIX (log/segment.h). */

#endif
