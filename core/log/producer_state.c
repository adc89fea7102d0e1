#include "log/producer_state.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/crc32c.h"
#include "proto/kerr.h"
#include "util/hmap.h"

/* Snapshot layout (see the header): version, crc, then the CRC-covered
 * part, count and fixed-size entries. */
#define SNAP_CRC_OFFSET 2
#define SNAP_COVERED_OFFSET 6
#define SNAP_HEADER_SIZE 10
#define SNAP_ENTRY_SIZE 46 /* 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8 */

void pstate_init(struct pstate *s) { hmap_init(&s->producers); }

struct pstate *pstate_new(void)
{
    struct pstate *s = malloc(sizeof *s);
    if (!s)
        return NULL;
    hmap_init(&s->producers);
    return s;
}

void pstate_clear(struct pstate *s)
{
    const void *k;
    void *v;
    for (size_t i = 0; hmap_next(&s->producers, &i, &k, NULL, &v);)
        free(v);
    hmap_free(&s->producers);
}

void pstate_free(struct pstate *s)
{
    if (!s)
        return;
    pstate_clear(s);
    free(s);
}

/* Sequences wrap as Java ints do: Kafka computes them with 32-bit
 * overflow, which C must do in unsigned arithmetic. */
static int32_t wrap32(uint32_t v) { return v <= INT32_MAX ? (int32_t)v : (int32_t)(v - 0x80000000u) + INT32_MIN; }

int32_t pstate_seq_add(int32_t seq, int32_t delta)
{
    /* DefaultRecordBatch.incrementSequence, overflows included (they
     * matter only for a negative delta, which no valid batch has) */
    if (seq > wrap32((uint32_t)INT32_MAX - (uint32_t)delta))
        return wrap32((uint32_t)delta - ((uint32_t)INT32_MAX - (uint32_t)seq) - 1u);
    return wrap32((uint32_t)seq + (uint32_t)delta);
}

/* DefaultRecordBatch.decrementSequence: the first sequence of a batch
 * from its last one, as Kafka's BatchMetadata.firstSeq derives it. */
static int32_t seq_sub(int32_t seq, int32_t delta)
{
    if (seq < delta)
        return wrap32((uint32_t)INT32_MAX - ((uint32_t)delta - (uint32_t)seq) + 1u);
    return wrap32((uint32_t)seq - (uint32_t)delta);
}

/* Kafka's ProducerAppendInfo.inSequence. */
static bool in_sequence(int32_t last_seq, int32_t next_seq)
{
    return (int64_t)next_seq == (int64_t)last_seq + 1 || (next_seq == 0 && last_seq == INT32_MAX);
}

static int32_t batch_last_seq(const struct rb_header *h)
{
    /* DefaultRecordBatch.lastSequence */
    if (h->base_sequence == RB_NO_SEQUENCE)
        return RB_NO_SEQUENCE;
    return pstate_seq_add(h->base_sequence, h->last_offset_delta);
}

static struct ps_entry *lookup(const struct pstate *s, int64_t producer_id)
{
    return hmap_get(&s->producers, &producer_id, sizeof producer_id);
}

const struct ps_entry *pstate_find(const struct pstate *s, int64_t producer_id)
{
    return lookup(s, producer_id);
}

size_t pstate_count(const struct pstate *s) { return hmap_count(&s->producers); }

void pstate_foreach(const struct pstate *s, void (*fn)(void *ctx, const struct ps_entry *e), void *ctx)
{
    void *v;
    for (size_t i = 0; hmap_next(&s->producers, &i, NULL, NULL, &v);)
        fn(ctx, v);
}

/* appendDataBatch after the sequence checks: an open transaction takes
 * only transactional batches until its marker (an epoch bump keeps it
 * open, as Kafka's entry keeps currentTxnFirstOffset). */
static int txn_check(const struct ps_entry *e, const struct rb_header *h)
{
    if (e && e->current_txn_first_offset >= 0 && !rb_is_transactional(h))
        return KERR_INVALID_TXN_STATE;
    return 0;
}

int pstate_check(const struct pstate *s, const struct rb_header *h, struct ps_batch *dup)
{
    if (!rb_has_producer_id(h) || rb_is_control(h))
        return 0;
    const struct ps_entry *e = lookup(s, h->producer_id);
    /* An unknown producer is Kafka's ProducerStateEntry.empty: no epoch,
     * no batches, which accepts anything below. */
    int16_t cur_epoch = e ? e->epoch : RB_NO_PRODUCER_EPOCH;
    int32_t first_seq = h->base_sequence;

    /* findDuplicateBatch comes first: a retry is answered even when a
     * later batch of the same epoch followed it. */
    if (e && h->producer_epoch == cur_epoch) {
        int32_t last_seq = batch_last_seq(h);
        for (int i = 0; i < e->nbatches; i++) {
            if (e->batches[i].first_seq == first_seq && e->batches[i].last_seq == last_seq) {
                if (dup)
                    *dup = e->batches[i];
                return PSTATE_DUPLICATE;
            }
        }
    }

    /* checkProducerEpoch (a data batch: a lower epoch is a zombie) */
    if (h->producer_epoch < cur_epoch)
        return KERR_INVALID_PRODUCER_EPOCH;

    /* checkSequence */
    if (h->producer_epoch != cur_epoch) {
        if (first_seq != 0 && cur_epoch != RB_NO_PRODUCER_EPOCH)
            return KERR_OUT_OF_ORDER_SEQUENCE_NUMBER;
        return txn_check(e, h);
    }
    /* An entry without batches (only markers, or loaded so from a
     * snapshot) has no last sequence: the same epoch restarts at 0. */
    int32_t cur_last_seq = e && e->nbatches ? e->batches[e->nbatches - 1].last_seq : RB_NO_SEQUENCE;
    if (cur_epoch != RB_NO_PRODUCER_EPOCH && !in_sequence(cur_last_seq, first_seq))
        return KERR_OUT_OF_ORDER_SEQUENCE_NUMBER;
    return txn_check(e, h);
}

int pstate_check_coordinator(const struct pstate *s, const struct rb_header *h)
{
    if (!rb_has_producer_id(h) || rb_is_control(h))
        return 0;
    const struct ps_entry *e = lookup(s, h->producer_id);
    if (e && h->producer_epoch < e->epoch)
        return KERR_INVALID_PRODUCER_EPOCH;
    return 0;
}

static struct ps_entry *entry_new(int64_t producer_id)
{
    struct ps_entry *e = malloc(sizeof *e);
    if (!e)
        return NULL;
    memset(e, 0, sizeof *e);
    e->producer_id = producer_id;
    e->epoch = RB_NO_PRODUCER_EPOCH;
    e->coordinator_epoch = -1;
    e->last_timestamp = RB_NO_TIMESTAMP;
    e->current_txn_first_offset = -1;
    return e;
}

/* Takes e (malloc'ed); an entry of the same producer id is freed. */
static void entry_put(struct pstate *s, struct ps_entry *e)
{
    free(hmap_put(&s->producers, &e->producer_id, sizeof e->producer_id, e));
}

/* ProducerStateEntry.addBatchMetadata: the oldest goes beyond the
 * retained number. */
static void entry_add_batch(struct ps_entry *e, const struct ps_batch *b)
{
    if (e->nbatches == PSTATE_BATCHES_RETAINED) {
        memmove(&e->batches[0], &e->batches[1], (PSTATE_BATCHES_RETAINED - 1) * sizeof e->batches[0]);
        e->nbatches--;
    }
    e->batches[e->nbatches++] = *b;
}

int pstate_update(struct pstate *s, const struct rb_header *h)
{
    if (!rb_has_producer_id(h) || rb_is_control(h))
        return 0;
    struct ps_entry *e = lookup(s, h->producer_id);
    if (!e) {
        if (!(e = entry_new(h->producer_id)))
            return KERR_KAFKA_STORAGE_ERROR;
        entry_put(s, e);
    }
    /* maybeUpdateProducerEpoch: any other epoch, even a lower one on a
     * follower, replaces the batches. */
    if (e->epoch != h->producer_epoch) {
        e->nbatches = 0;
        e->epoch = h->producer_epoch;
    }
    /* Kafka keeps (lastSeq, lastOffset, offsetDelta) and derives the first
     * sequence from them; doing the same keeps a reloaded snapshot and
     * the live state identical (they differ from base_sequence only for
     * a batch without sequence). */
    struct ps_batch b;
    b.last_seq = batch_last_seq(h);
    b.first_seq = seq_sub(b.last_seq, h->last_offset_delta);
    b.first_offset = h->base_offset;
    b.last_offset = rb_last_offset(h);
    b.timestamp = h->max_timestamp;
    entry_add_batch(e, &b);
    e->last_timestamp = h->max_timestamp;
    /* updateCurrentTxnFirstOffset: the first data batch of a transaction
     * opens it; its marker (not seen here) closes it. */
    if (rb_is_transactional(h) && e->current_txn_first_offset < 0)
        e->current_txn_first_offset = h->base_offset;
    return 0;
}

int pstate_check_marker(const struct pstate *s, const struct rb_header *h, int32_t coordinator_epoch)
{
    if (!rb_has_producer_id(h))
        return 0;
    const struct ps_entry *e = lookup(s, h->producer_id);
    if (!e)
        return 0;
    /* checkProducerEpoch for transaction version 0/1 (markerEpoch >=
     * current), then checkCoordinatorEpoch. */
    if (h->producer_epoch < e->epoch)
        return KERR_INVALID_PRODUCER_EPOCH;
    if (e->coordinator_epoch > coordinator_epoch)
        return KERR_TRANSACTION_COORDINATOR_FENCED;
    return 0;
}

int pstate_update_marker(struct pstate *s, const struct rb_header *h, int16_t type, int32_t coordinator_epoch,
                         struct ps_completed_txn *done)
{
    if (!rb_has_producer_id(h) || (type != RB_CONTROL_COMMIT && type != RB_CONTROL_ABORT))
        return 0;
    struct ps_entry *e = lookup(s, h->producer_id);
    if (!e) {
        if (!(e = entry_new(h->producer_id)))
            return KERR_KAFKA_STORAGE_ERROR;
        entry_put(s, e);
    }
    int rc = 0;
    if (e->current_txn_first_offset >= 0) {
        done->producer_id = h->producer_id;
        done->first_offset = e->current_txn_first_offset;
        done->last_offset = h->base_offset;
        done->aborted = type == RB_CONTROL_ABORT;
        rc = 1;
    }
    /* ProducerStateEntry.update: epoch (a new one drops the batches),
     * coordinator epoch, last timestamp; the transaction is over. */
    if (e->epoch != h->producer_epoch) {
        e->nbatches = 0;
        e->epoch = h->producer_epoch;
    }
    e->coordinator_epoch = coordinator_epoch;
    e->last_timestamp = h->max_timestamp;
    e->current_txn_first_offset = -1;
    return rc;
}

int64_t pstate_first_unstable_offset(const struct pstate *s, int64_t except_pid)
{
    int64_t min = -1;
    void *v;
    for (size_t i = 0; hmap_next(&s->producers, &i, NULL, NULL, &v);) {
        const struct ps_entry *e = v;
        if (e->current_txn_first_offset >= 0 && e->producer_id != except_pid &&
            (min < 0 || e->current_txn_first_offset < min))
            min = e->current_txn_first_offset;
    }
    return min;
}

size_t pstate_open_txn_count(const struct pstate *s)
{
    size_t n = 0;
    void *v;
    for (size_t i = 0; hmap_next(&s->producers, &i, NULL, NULL, &v);)
        n += ((const struct ps_entry *)v)->current_txn_first_offset >= 0;
    return n;
}

/* ProducerStateManager.isProducerExpired; now - last_timestamp
 * saturates (timestamps come from clients and snapshots). */
static bool expired(const struct ps_entry *e, int64_t now_ms, int64_t expiration_ms)
{
    if (e->current_txn_first_offset >= 0)
        return false;
    int64_t idle;
    if (__builtin_sub_overflow(now_ms, e->last_timestamp, &idle))
        idle = e->last_timestamp < 0 ? INT64_MAX : INT64_MIN;
    return idle >= expiration_ms;
}

size_t pstate_expire(struct pstate *s, int64_t now_ms, int64_t expiration_ms)
{
    size_t n = 0;
    void *v;
    /* hmap_del leaves a tombstone and never moves slots: iterating on
     * while deleting is safe. */
    for (size_t i = 0; hmap_next(&s->producers, &i, NULL, NULL, &v);) {
        struct ps_entry *e = v;
        if (!expired(e, now_ms, expiration_ms))
            continue;
        hmap_del(&s->producers, &e->producer_id, sizeof e->producer_id);
        free(e);
        n++;
    }
    return n;
}

static int cmp_entry_ptr(const void *a, const void *b)
{
    const struct ps_entry *x = *(const struct ps_entry *const *)a;
    const struct ps_entry *y = *(const struct ps_entry *const *)b;
    return (x->producer_id > y->producer_id) - (x->producer_id < y->producer_id);
}

int pstate_snapshot_encode(const struct pstate *s, struct buf *out)
{
    size_t n = pstate_count(s);
    if (n > INT32_MAX)
        return KERR_KAFKA_STORAGE_ERROR;
    /* Sorted by producer id so that the same state always gives the same
     * bytes (Kafka's order is its hash map's; readers take any). */
    const struct ps_entry **v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return KERR_KAFKA_STORAGE_ERROR;
    size_t k = 0;
    void *val;
    for (size_t i = 0; hmap_next(&s->producers, &i, NULL, NULL, &val);)
        v[k++] = val;
    qsort(v, k, sizeof *v, cmp_entry_ptr);

    size_t start = out->len;
    uint8_t *p = buf_extend(out, SNAP_HEADER_SIZE + k * SNAP_ENTRY_SIZE);
    be16_write(p, PSTATE_SNAPSHOT_VERSION);
    be32_write(p + 6, (uint32_t)k);
    p += SNAP_HEADER_SIZE;
    for (size_t i = 0; i < k; i++, p += SNAP_ENTRY_SIZE) {
        const struct ps_entry *e = v[i];
        /* Kafka's writeSnapshot: an entry without batches (its records
         * were only markers) writes last sequence and offset -1 and a
         * delta of 0; a reader sees no batch in a negative offset. */
        const struct ps_batch *b = e->nbatches ? &e->batches[e->nbatches - 1] : NULL;
        be64_write(p, (uint64_t)e->producer_id);
        be16_write(p + 8, (uint16_t)e->epoch);
        be32_write(p + 10, (uint32_t)(b ? b->last_seq : RB_NO_SEQUENCE));
        be64_write(p + 14, (uint64_t)(b ? b->last_offset : -1));
        be32_write(p + 22, (uint32_t)(b ? (int32_t)(b->last_offset - b->first_offset) : 0));
        be64_write(p + 26, (uint64_t)e->last_timestamp);
        be32_write(p + 34, (uint32_t)e->coordinator_epoch);
        be64_write(p + 38, (uint64_t)e->current_txn_first_offset);
    }
    free(v);
    uint8_t *base = out->data + start;
    be32_write(base + SNAP_CRC_OFFSET,
               crc32c(0, base + SNAP_COVERED_OFFSET, out->len - start - SNAP_COVERED_OFFSET));
    return 0;
}

int pstate_snapshot_decode(struct pstate *s, const uint8_t *p, size_t n)
{
    pstate_clear(s);
    if (n < SNAP_HEADER_SIZE)
        return KERR_CORRUPT_MESSAGE;
    if ((int16_t)be16_read(p) != PSTATE_SNAPSHOT_VERSION)
        return KERR_CORRUPT_MESSAGE;
    if (be32_read(p + SNAP_CRC_OFFSET) != crc32c(0, p + SNAP_COVERED_OFFSET, n - SNAP_COVERED_OFFSET))
        return KERR_CORRUPT_MESSAGE;
    int32_t count = (int32_t)be32_read(p + 6);
    /* Kafka's reader ignores bytes after the array; none of its writers
     * (nor ours) leaves any, so a length that disagrees is corruption. */
    if (count < 0 || (n - SNAP_HEADER_SIZE) / SNAP_ENTRY_SIZE != (size_t)count ||
        (n - SNAP_HEADER_SIZE) % SNAP_ENTRY_SIZE != 0)
        return KERR_CORRUPT_MESSAGE;

    const uint8_t *q = p + SNAP_HEADER_SIZE;
    for (int32_t i = 0; i < count; i++, q += SNAP_ENTRY_SIZE) {
        int64_t producer_id = (int64_t)be64_read(q);
        int16_t epoch = (int16_t)be16_read(q + 8);
        int32_t last_seq = (int32_t)be32_read(q + 10);
        int64_t last_offset = (int64_t)be64_read(q + 14);
        int32_t offset_delta = (int32_t)be32_read(q + 22);
        int64_t timestamp = (int64_t)be64_read(q + 26);
        int32_t coordinator_epoch = (int32_t)be32_read(q + 34);
        int64_t txn_first = (int64_t)be64_read(q + 38);
        /* A batch exists only where the offset is one (as Kafka reads
         * it); the delta of an entry without batch is not looked at, so
         * that Kafka's -1/-1/0 entries load. */
        bool has_batch = last_offset >= 0;
        if (producer_id < 0 || epoch < 0 || (has_batch && (offset_delta < 0 || offset_delta > last_offset))) {
            pstate_clear(s);
            return KERR_CORRUPT_MESSAGE;
        }
        struct ps_entry *e = entry_new(producer_id);
        if (!e) {
            pstate_clear(s);
            return KERR_KAFKA_STORAGE_ERROR;
        }
        e->epoch = epoch;
        e->coordinator_epoch = coordinator_epoch;
        e->last_timestamp = timestamp;
        e->current_txn_first_offset = txn_first >= 0 ? txn_first : -1;
        if (has_batch) {
            e->nbatches = 1;
            e->batches[0] = (struct ps_batch){
                .first_seq = seq_sub(last_seq, offset_delta),
                .last_seq = last_seq,
                .first_offset = last_offset - offset_delta,
                .last_offset = last_offset,
                .timestamp = timestamp,
            };
        }
        /* A producer id twice: the later entry wins, as in Kafka's map. */
        entry_put(s, e);
    }
    return 0;
}
