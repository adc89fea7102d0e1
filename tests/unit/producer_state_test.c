/* Producer state (log/producer_state.c): Kafka's sequence and epoch rules
 * for idempotent producers (ProducerAppendInfo, ProducerStateEntry),
 * expiration, and the snapshot file format v1 with its CRC-32C. Headers
 * are built by hand: only the producer fields and offsets matter here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "log/producer_state.h"
#include "proto/crc32c.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "util/buf.h"

#define PID 1000

/* A data batch of count records of producer pid at base_offset. */
static struct rb_header hdr(int64_t pid, int16_t epoch, int32_t base_seq, int32_t count, int64_t base_offset,
                            int64_t max_ts)
{
    struct rb_header h;
    memset(&h, 0, sizeof h);
    h.base_offset = base_offset;
    h.magic = RB_MAGIC_V2;
    h.last_offset_delta = count - 1;
    h.base_timestamp = max_ts;
    h.max_timestamp = max_ts;
    h.producer_id = pid;
    h.producer_epoch = epoch;
    h.base_sequence = base_seq;
    h.records_count = count;
    return h;
}

static void append(struct pstate *s, int64_t pid, int16_t epoch, int32_t base_seq, int32_t count, int64_t base_offset)
{
    struct rb_header h = hdr(pid, epoch, base_seq, count, base_offset, 1000 + base_offset);
    assert_int_equal(pstate_check(s, &h, NULL), 0);
    assert_int_equal(pstate_update(s, &h), 0);
}

static int check(const struct pstate *s, int64_t pid, int16_t epoch, int32_t base_seq, int32_t count)
{
    struct rb_header h = hdr(pid, epoch, base_seq, count, 0, 0);
    return pstate_check(s, &h, NULL);
}

static void test_seq_add(void **state)
{
    (void)state;
    assert_int_equal(pstate_seq_add(5, 3), 8);
    assert_int_equal(pstate_seq_add(0, 0), 0);
    assert_int_equal(pstate_seq_add(INT32_MAX, 0), INT32_MAX);
    assert_int_equal(pstate_seq_add(INT32_MAX, 1), 0);
    assert_int_equal(pstate_seq_add(INT32_MAX - 1, 3), 1);
    assert_int_equal(pstate_seq_add(INT32_MAX - 4, 4), INT32_MAX);
}

static void test_no_producer_id(void **state)
{
    (void)state;
    struct pstate *s = pstate_new();
    assert_non_null(s);
    struct rb_header h = hdr(RB_NO_PRODUCER_ID, RB_NO_PRODUCER_EPOCH, RB_NO_SEQUENCE, 3, 0, 10);
    assert_int_equal(pstate_check(s, &h, NULL), 0);
    assert_int_equal(pstate_update(s, &h), 0);
    assert_int_equal(pstate_count(s), 0);
    pstate_free(s);
}

static void test_new_producer_any_sequence(void **state)
{
    (void)state;
    struct pstate *s = pstate_new();
    assert_int_equal(check(s, PID, 0, 0, 1), 0);
    assert_int_equal(check(s, PID, 0, 42, 3), 0);
    assert_int_equal(check(s, PID, 7, 1000, 1), 0);
    append(s, PID, 2, 42, 3, 100);
    const struct ps_entry *e = pstate_find(s, PID);
    assert_non_null(e);
    assert_int_equal(e->producer_id, PID);
    assert_int_equal(e->epoch, 2);
    assert_int_equal(e->coordinator_epoch, -1);
    assert_int_equal(e->current_txn_first_offset, -1);
    assert_int_equal(e->last_timestamp, 1100);
    assert_int_equal(e->nbatches, 1);
    assert_int_equal(e->batches[0].first_seq, 42);
    assert_int_equal(e->batches[0].last_seq, 44);
    assert_int_equal(e->batches[0].first_offset, 100);
    assert_int_equal(e->batches[0].last_offset, 102);
    assert_int_equal(e->batches[0].timestamp, 1100);
    assert_null(pstate_find(s, PID + 1));
    /* another producer is independent */
    assert_int_equal(check(s, PID + 1, 0, 9, 1), 0);
    pstate_free(s);
}

static void test_in_sequence_and_gaps(void **state)
{
    (void)state;
    struct pstate *s = pstate_new();
    append(s, PID, 0, 0, 5, 0);
    assert_int_equal(check(s, PID, 0, 6, 1), KERR_OUT_OF_ORDER_SEQUENCE_NUMBER); /* gap */
    assert_int_equal(check(s, PID, 0, 4, 2), KERR_OUT_OF_ORDER_SEQUENCE_NUMBER); /* overlap, not a retry */
    assert_int_equal(check(s, PID, 0, 0, 4), KERR_OUT_OF_ORDER_SEQUENCE_NUMBER); /* other range than sent */
    assert_int_equal(check(s, PID, 0, 1000, 1), KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    append(s, PID, 0, 5, 1, 5);
    append(s, PID, 0, 6, 10, 6);
    assert_int_equal(check(s, PID, 0, 15, 1), KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_int_equal(check(s, PID, 0, 16, 1), 0);
    assert_int_equal(pstate_find(s, PID)->nbatches, 3);
    pstate_free(s);
}

static void test_duplicates_of_retained_batches(void **state)
{
    (void)state;
    struct pstate *s = pstate_new();
    /* six batches of two records: sequences 0-1, 2-3, ... 10-11 at
     * offsets 100 + 10 * i */
    for (int i = 0; i < 6; i++)
        append(s, PID, 3, 2 * i, 2, 100 + 10 * i);
    const struct ps_entry *e = pstate_find(s, PID);
    assert_int_equal(e->nbatches, PSTATE_BATCHES_RETAINED);
    assert_int_equal(e->batches[0].first_seq, 2);
    assert_int_equal(e->batches[4].last_seq, 11);
    for (int i = 1; i < 6; i++) {
        struct rb_header h = hdr(PID, 3, 2 * i, 2, 9999, 0);
        struct ps_batch dup;
        memset(&dup, 0xff, sizeof dup);
        assert_int_equal(pstate_check(s, &h, &dup), PSTATE_DUPLICATE);
        assert_int_equal(dup.first_seq, 2 * i);
        assert_int_equal(dup.last_seq, 2 * i + 1);
        assert_int_equal(dup.first_offset, 100 + 10 * i);
        assert_int_equal(dup.last_offset, 100 + 10 * i + 1);
        assert_int_equal(dup.timestamp, 1000 + 100 + 10 * i);
        assert_int_equal(pstate_check(s, &h, NULL), PSTATE_DUPLICATE);
    }
    /* the sixth-oldest fell out: no longer recognised */
    assert_int_equal(check(s, PID, 3, 0, 2), KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    /* a duplicate needs the same epoch: a newer one must restart at 0 */
    assert_int_equal(check(s, PID, 4, 10, 2), KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    /* and the state was not changed by any check */
    assert_int_equal(e->nbatches, PSTATE_BATCHES_RETAINED);
    assert_int_equal(check(s, PID, 3, 12, 1), 0);
    pstate_free(s);
}

static void test_epochs(void **state)
{
    (void)state;
    struct pstate *s = pstate_new();
    append(s, PID, 5, 0, 3, 0);
    append(s, PID, 5, 3, 3, 3);
    /* a zombie: also when it resends a retained batch */
    assert_int_equal(check(s, PID, 4, 6, 1), KERR_INVALID_PRODUCER_EPOCH);
    assert_int_equal(check(s, PID, 4, 3, 3), KERR_INVALID_PRODUCER_EPOCH);
    assert_int_equal(check(s, PID, 0, 0, 1), KERR_INVALID_PRODUCER_EPOCH);
    /* a new epoch starts at 0 */
    assert_int_equal(check(s, PID, 6, 5, 1), KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_int_equal(check(s, PID, 6, 6, 1), KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_int_equal(check(s, PID, 6, 0, 2), 0);
    assert_int_equal(check(s, PID, 100, 0, 1), 0);
    append(s, PID, 6, 0, 2, 6);
    const struct ps_entry *e = pstate_find(s, PID);
    assert_int_equal(e->epoch, 6);
    assert_int_equal(e->nbatches, 1); /* the old epoch's batches went */
    assert_int_equal(e->batches[0].first_offset, 6);
    assert_int_equal(check(s, PID, 5, 3, 3), KERR_INVALID_PRODUCER_EPOCH);
    assert_int_equal(check(s, PID, 6, 2, 1), 0);
    pstate_free(s);
}

static void test_follower_takes_any_epoch(void **state)
{
    (void)state;
    struct pstate *s = pstate_new();
    append(s, PID, 5, 0, 3, 0);
    /* replication: no check; a lower epoch replaces the entry's as in
     * Kafka's maybeUpdateProducerEpoch */
    struct rb_header h = hdr(PID, 2, 7, 1, 3, 50);
    assert_int_equal(pstate_update(s, &h), 0);
    const struct ps_entry *e = pstate_find(s, PID);
    assert_int_equal(e->epoch, 2);
    assert_int_equal(e->nbatches, 1);
    assert_int_equal(e->batches[0].first_seq, 7);
    assert_int_equal(e->last_timestamp, 50);
    /* and a gap is taken as it is */
    h = hdr(PID, 2, 100, 2, 4, 40);
    assert_int_equal(pstate_update(s, &h), 0);
    assert_int_equal(e->nbatches, 2);
    assert_int_equal(e->batches[1].last_seq, 101);
    assert_int_equal(e->last_timestamp, 40);
    pstate_free(s);
}

static void test_sequence_wrap(void **state)
{
    (void)state;
    struct pstate *s = pstate_new();
    /* INT32_MAX - 1, INT32_MAX, 0 */
    append(s, PID, 1, INT32_MAX - 1, 3, 0);
    const struct ps_entry *e = pstate_find(s, PID);
    assert_int_equal(e->batches[0].first_seq, INT32_MAX - 1);
    assert_int_equal(e->batches[0].last_seq, 0);
    assert_int_equal(check(s, PID, 1, INT32_MAX - 1, 3), PSTATE_DUPLICATE);
    assert_int_equal(check(s, PID, 1, 2, 1), KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    append(s, PID, 1, 1, 1, 3);

    struct pstate *t = pstate_new();
    append(t, PID, 1, INT32_MAX - 2, 3, 0); /* ends exactly at INT32_MAX */
    assert_int_equal(pstate_find(t, PID)->batches[0].last_seq, INT32_MAX);
    assert_int_equal(check(t, PID, 1, 1, 1), KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_int_equal(check(t, PID, 1, INT32_MIN, 1), KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    append(t, PID, 1, 0, 1, 3);
    pstate_free(t);
    pstate_free(s);
}

static void test_transactions_and_control(void **state)
{
    (void)state;
    struct pstate *s = pstate_new();
    /* a control batch alone creates nothing */
    struct rb_header c = hdr(PID, 0, RB_NO_SEQUENCE, 1, 0, 5);
    c.attributes = RB_ATTR_CONTROL | RB_ATTR_TRANSACTIONAL;
    assert_int_equal(pstate_update(s, &c), 0);
    assert_int_equal(pstate_count(s), 0);

    struct rb_header h = hdr(PID, 0, 0, 2, 10, 7);
    h.attributes = RB_ATTR_TRANSACTIONAL;
    assert_int_equal(pstate_update(s, &h), 0);
    const struct ps_entry *e = pstate_find(s, PID);
    assert_int_equal(e->current_txn_first_offset, 10);
    h = hdr(PID, 0, 2, 2, 20, 8);
    h.attributes = RB_ATTR_TRANSACTIONAL;
    assert_int_equal(pstate_update(s, &h), 0);
    assert_int_equal(e->current_txn_first_offset, 10);
    /* pstate_update leaves markers to pstate_update_marker */
    c = hdr(PID, 0, RB_NO_SEQUENCE, 1, 22, 9);
    c.attributes = RB_ATTR_CONTROL | RB_ATTR_TRANSACTIONAL;
    assert_int_equal(pstate_update(s, &c), 0);
    assert_int_equal(e->nbatches, 2);
    assert_int_equal(e->last_timestamp, 8);
    assert_int_equal(e->current_txn_first_offset, 10);
    pstate_free(s);
}

static struct rb_header marker_hdr(int64_t pid, int16_t epoch, int64_t offset, int64_t ts)
{
    struct rb_header c = hdr(pid, epoch, RB_NO_SEQUENCE, 1, offset, ts);
    c.attributes = RB_ATTR_CONTROL | RB_ATTR_TRANSACTIONAL;
    return c;
}

static void txn_append(struct pstate *s, int64_t pid, int16_t epoch, int32_t seq, int32_t count, int64_t offset)
{
    struct rb_header h = hdr(pid, epoch, seq, count, offset, 100 + offset);
    h.attributes = RB_ATTR_TRANSACTIONAL;
    assert_int_equal(pstate_check(s, &h, NULL), 0);
    assert_int_equal(pstate_update(s, &h), 0);
}

/* appendEndTxnMarker: the marker closes the transaction, reports it
 * (aborted or not), takes the coordinator epoch, the marker's epoch and
 * timestamp. */
static void test_marker_completes_transaction(void **state)
{
    (void)state;
    struct pstate *s = pstate_new();
    txn_append(s, PID, 0, 0, 3, 10);
    txn_append(s, PID, 0, 3, 2, 13);
    assert_int_equal(pstate_first_unstable_offset(s, -1), 10);
    assert_int_equal(pstate_open_txn_count(s), 1);
    struct rb_header c = marker_hdr(PID, 0, 15, 900);
    assert_int_equal(pstate_check_marker(s, &c, 4), 0);
    struct ps_completed_txn done;
    memset(&done, 0, sizeof done);
    assert_int_equal(pstate_update_marker(s, &c, RB_CONTROL_ABORT, 4, &done), 1);
    assert_int_equal(done.producer_id, PID);
    assert_int_equal(done.first_offset, 10);
    assert_int_equal(done.last_offset, 15);
    assert_true(done.aborted);
    const struct ps_entry *e = pstate_find(s, PID);
    assert_int_equal(e->current_txn_first_offset, -1);
    assert_int_equal(e->coordinator_epoch, 4);
    assert_int_equal(e->last_timestamp, 900);
    assert_int_equal(e->nbatches, 2); /* same epoch: the batches stay */
    assert_int_equal(pstate_first_unstable_offset(s, -1), -1);
    assert_int_equal(pstate_open_txn_count(s), 0);

    /* the next transaction, committed by a marker of a bumped epoch
     * (transactions V2): the epoch moves, the batches go */
    txn_append(s, PID, 0, 5, 1, 16);
    c = marker_hdr(PID, 1, 17, 950);
    assert_int_equal(pstate_check_marker(s, &c, 4), 0);
    assert_int_equal(pstate_update_marker(s, &c, RB_CONTROL_COMMIT, 4, &done), 1);
    assert_false(done.aborted);
    assert_int_equal(done.first_offset, 16);
    assert_int_equal(done.last_offset, 17);
    e = pstate_find(s, PID);
    assert_int_equal(e->epoch, 1);
    assert_int_equal(e->nbatches, 0);

    /* a marker without an open transaction (a retry) reports nothing */
    c = marker_hdr(PID, 1, 18, 960);
    assert_int_equal(pstate_check_marker(s, &c, 4), 0);
    assert_int_equal(pstate_update_marker(s, &c, RB_CONTROL_COMMIT, 5, &done), 0);
    assert_int_equal(pstate_find(s, PID)->coordinator_epoch, 5);

    /* a marker of a producer never seen creates its entry, reports nothing */
    c = marker_hdr(PID + 1, 3, 19, 970);
    assert_int_equal(pstate_check_marker(s, &c, 0), 0);
    assert_int_equal(pstate_update_marker(s, &c, RB_CONTROL_ABORT, 2, &done), 0);
    assert_int_equal(pstate_find(s, PID + 1)->epoch, 3);
    assert_int_equal(pstate_find(s, PID + 1)->coordinator_epoch, 2);
    /* other control types and batches without producer id: ignored */
    c = marker_hdr(PID + 2, 0, 20, 0);
    assert_int_equal(pstate_update_marker(s, &c, RB_CONTROL_LEADER_CHANGE, 0, &done), 0);
    assert_null(pstate_find(s, PID + 2));
    c = marker_hdr(RB_NO_PRODUCER_ID, RB_NO_PRODUCER_EPOCH, 21, 0);
    assert_int_equal(pstate_update_marker(s, &c, RB_CONTROL_ABORT, 0, &done), 0);
    assert_int_equal(pstate_count(s), 2);
    pstate_free(s);
}

/* Leader checks of a marker: producer epoch (TV0/1: below is refused),
 * then coordinator epoch. */
static void test_marker_fencing(void **state)
{
    (void)state;
    struct pstate *s = pstate_new();
    txn_append(s, PID, 5, 0, 1, 0);
    struct ps_completed_txn done;
    struct rb_header c = marker_hdr(PID, 5, 1, 10);
    assert_int_equal(pstate_update_marker(s, &c, RB_CONTROL_COMMIT, 7, &done), 1);
    /* older producer epoch */
    c = marker_hdr(PID, 4, 2, 10);
    assert_int_equal(pstate_check_marker(s, &c, 7), KERR_INVALID_PRODUCER_EPOCH);
    /* older epoch and older coordinator: the producer epoch is checked first */
    assert_int_equal(pstate_check_marker(s, &c, 6), KERR_INVALID_PRODUCER_EPOCH);
    /* older coordinator epoch */
    c = marker_hdr(PID, 5, 2, 10);
    assert_int_equal(pstate_check_marker(s, &c, 6), KERR_TRANSACTION_COORDINATOR_FENCED);
    /* same or newer: fine, and a newer producer epoch too */
    assert_int_equal(pstate_check_marker(s, &c, 7), 0);
    assert_int_equal(pstate_check_marker(s, &c, 8), 0);
    c = marker_hdr(PID, 6, 2, 10);
    assert_int_equal(pstate_check_marker(s, &c, 7), 0);
    /* pstate_check leaves control batches to pstate_check_marker */
    c = marker_hdr(PID, 0, 2, 10);
    assert_int_equal(pstate_check(s, &c, NULL), 0);
    pstate_free(s);
}

/* appendDataBatch: an open transaction takes only transactional batches;
 * the first transactional batch opens one. */
static void test_transactional_data_rules(void **state)
{
    (void)state;
    struct pstate *s = pstate_new();
    txn_append(s, PID, 0, 0, 2, 10);
    /* a plain batch in sequence: INVALID_TXN_STATE */
    assert_int_equal(check(s, PID, 0, 2, 1), KERR_INVALID_TXN_STATE);
    /* the sequence rules come first */
    assert_int_equal(check(s, PID, 0, 5, 1), KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    /* a duplicate is a duplicate, transactional or not */
    struct rb_header h = hdr(PID, 0, 0, 2, 0, 0);
    assert_int_equal(pstate_check(s, &h, NULL), PSTATE_DUPLICATE);
    /* a new epoch keeps the transaction open: still only transactional */
    assert_int_equal(check(s, PID, 1, 0, 1), KERR_INVALID_TXN_STATE);
    h = hdr(PID, 1, 0, 1, 0, 0);
    h.attributes = RB_ATTR_TRANSACTIONAL;
    assert_int_equal(pstate_check(s, &h, NULL), 0);
    /* another producer's plain batch is fine */
    assert_int_equal(check(s, PID + 1, 0, 0, 1), 0);
    /* first unstable offset over several producers, and without one */
    txn_append(s, PID + 1, 0, 0, 1, 20);
    txn_append(s, PID + 2, 0, 0, 1, 5);
    assert_int_equal(pstate_first_unstable_offset(s, -1), 5);
    assert_int_equal(pstate_first_unstable_offset(s, PID + 2), 10);
    assert_int_equal(pstate_open_txn_count(s), 3);
    /* after the marker, plain batches are fine again */
    struct ps_completed_txn done;
    struct rb_header c = marker_hdr(PID, 0, 30, 10);
    assert_int_equal(pstate_update_marker(s, &c, RB_CONTROL_COMMIT, 0, &done), 1);
    assert_int_equal(check(s, PID, 0, 2, 1), 0);
    assert_int_equal(pstate_first_unstable_offset(s, -1), 5);
    pstate_free(s);
}

/* Open transactions survive a snapshot round trip and rebuild the
 * first unstable offset; the coordinator epoch too. */
static void test_snapshot_keeps_transactions(void **state)
{
    (void)state;
    struct pstate *s = pstate_new();
    txn_append(s, PID, 0, 0, 2, 10);
    struct ps_completed_txn done;
    struct rb_header c = marker_hdr(PID + 1, 2, 3, 10);
    assert_int_equal(pstate_update_marker(s, &c, RB_CONTROL_ABORT, 9, &done), 0);
    struct buf b;
    buf_init(&b);
    assert_int_equal(pstate_snapshot_encode(s, &b), 0);
    struct pstate *t = pstate_new();
    assert_int_equal(pstate_snapshot_decode(t, b.data, b.len), 0);
    assert_int_equal(pstate_first_unstable_offset(t, -1), 10);
    assert_int_equal(pstate_find(t, PID + 1)->coordinator_epoch, 9);
    /* the reloaded open transaction still refuses plain batches and is
     * closed by its marker */
    assert_int_equal(check(t, PID, 0, 2, 1), KERR_INVALID_TXN_STATE);
    c = marker_hdr(PID, 0, 12, 10);
    assert_int_equal(pstate_check_marker(t, &c, 0), 0);
    assert_int_equal(pstate_update_marker(t, &c, RB_CONTROL_ABORT, 0, &done), 1);
    assert_int_equal(done.first_offset, 10);
    c = marker_hdr(PID + 1, 2, 13, 10);
    assert_int_equal(pstate_check_marker(t, &c, 8), KERR_TRANSACTION_COORDINATOR_FENCED);
    buf_free(&b);
    pstate_free(s);
    pstate_free(t);
}

static void count_cb(void *ctx, const struct ps_entry *e)
{
    int64_t *sum = ctx;
    *sum += e->producer_id;
}

static void test_expire(void **state)
{
    (void)state;
    struct pstate *s = pstate_new();
    struct rb_header h = hdr(1, 0, 0, 1, 0, 1000);
    pstate_update(s, &h);
    h = hdr(2, 0, 0, 1, 1, 1000);
    h.attributes = RB_ATTR_TRANSACTIONAL; /* open transaction: kept */
    pstate_update(s, &h);
    h = hdr(3, 0, 0, 1, 2, 5000);
    pstate_update(s, &h);
    h = hdr(4, 0, 0, 1, 3, 1001);
    pstate_update(s, &h);
    assert_int_equal(pstate_count(s), 4);
    assert_int_equal(pstate_expire(s, 6999, 6000), 0);
    assert_int_equal(pstate_expire(s, 7000, 6000), 1); /* exactly expiration_ms idle */
    assert_null(pstate_find(s, 1));
    assert_non_null(pstate_find(s, 2));
    assert_non_null(pstate_find(s, 3));
    assert_non_null(pstate_find(s, 4));
    int64_t sum = 0;
    pstate_foreach(s, count_cb, &sum);
    assert_int_equal(sum, 2 + 3 + 4);
    assert_int_equal(pstate_expire(s, INT64_MAX, 0), 2);
    assert_int_equal(pstate_count(s), 1);
    assert_non_null(pstate_find(s, 2));
    /* an expired producer is new again: any sequence */
    assert_int_equal(check(s, 1, 0, 77, 1), 0);
    /* extreme timestamps do not overflow */
    h = hdr(5, 0, 0, 1, 4, INT64_MIN);
    pstate_update(s, &h);
    h = hdr(6, 0, 0, 1, 5, INT64_MAX);
    pstate_update(s, &h);
    assert_int_equal(pstate_expire(s, 0, 1000), 1);
    assert_null(pstate_find(s, 5));
    assert_non_null(pstate_find(s, 6));
    assert_int_equal(pstate_expire(s, INT64_MIN, 1000), 0);
    pstate_clear(s);
    assert_int_equal(pstate_count(s), 0);
    pstate_free(s);
}

/* ---- snapshots ---- */

struct raw_entry {
    int64_t pid;
    int16_t epoch;
    int32_t last_seq;
    int64_t last_offset;
    int32_t offset_delta;
    int64_t timestamp;
    int32_t coordinator_epoch;
    int64_t txn_first;
};

/* A snapshot written field by field as Kafka's writeSnapshot lays it out;
 * count is written as given (to lie about it). */
static void raw_snapshot(struct buf *b, int16_t version, int32_t count, const struct raw_entry *v, size_t n)
{
    buf_reset(b);
    buf_put_be16(b, (uint16_t)version);
    buf_put_be32(b, 0);
    buf_put_be32(b, (uint32_t)count);
    for (size_t i = 0; i < n; i++) {
        buf_put_be64(b, (uint64_t)v[i].pid);
        buf_put_be16(b, (uint16_t)v[i].epoch);
        buf_put_be32(b, (uint32_t)v[i].last_seq);
        buf_put_be64(b, (uint64_t)v[i].last_offset);
        buf_put_be32(b, (uint32_t)v[i].offset_delta);
        buf_put_be64(b, (uint64_t)v[i].timestamp);
        buf_put_be32(b, (uint32_t)v[i].coordinator_epoch);
        buf_put_be64(b, (uint64_t)v[i].txn_first);
    }
    be32_write(b->data + 2, crc32c(0, b->data + 6, b->len - 6));
}

static void test_snapshot_round_trip(void **state)
{
    (void)state;
    struct pstate *s = pstate_new();
    for (int i = 0; i < 7; i++)
        append(s, 10, 1, 3 * i, 3, 100 + 3 * i); /* last batch: 18-20 at 118-120 */
    append(s, 20, 0, INT32_MAX - 1, 4, 500);     /* wraps: INT32_MAX - 1 .. 1 */
    struct rb_header h = hdr(30, 9, 0, 1, 600, 77);
    h.attributes = RB_ATTR_TRANSACTIONAL;
    pstate_update(s, &h);

    struct buf b = BUF_INIT;
    assert_int_equal(pstate_snapshot_encode(s, &b), 0);
    assert_int_equal(b.len, 10 + 3 * 46);

    struct pstate *t = pstate_new();
    append(t, 99, 0, 0, 1, 0); /* replaced by the decode */
    assert_int_equal(pstate_snapshot_decode(t, b.data, b.len), 0);
    assert_int_equal(pstate_count(t), 3);
    assert_null(pstate_find(t, 99));
    for (int64_t pid = 10; pid <= 30; pid += 10) {
        const struct ps_entry *a = pstate_find(s, pid), *c = pstate_find(t, pid);
        assert_non_null(c);
        assert_int_equal(c->epoch, a->epoch);
        assert_int_equal(c->coordinator_epoch, a->coordinator_epoch);
        assert_int_equal(c->last_timestamp, a->last_timestamp);
        assert_int_equal(c->current_txn_first_offset, a->current_txn_first_offset);
        assert_int_equal(c->nbatches, 1); /* only the last batch is kept */
        assert_memory_equal(&c->batches[0], &a->batches[a->nbatches - 1], sizeof c->batches[0]);
    }
    assert_int_equal(pstate_find(t, 30)->current_txn_first_offset, 600);
    assert_int_equal(pstate_find(t, 20)->batches[0].first_seq, INT32_MAX - 1);
    assert_int_equal(pstate_find(t, 20)->batches[0].last_seq, 1);

    /* the last batch is still a duplicate after the reload, an older one
     * is not (Kafka keeps only the last batch in a snapshot) */
    struct ps_batch dup;
    struct rb_header r = hdr(10, 1, 18, 3, 0, 0);
    assert_int_equal(pstate_check(t, &r, &dup), PSTATE_DUPLICATE);
    assert_int_equal(dup.first_offset, 118);
    assert_int_equal(dup.last_offset, 120);
    assert_int_equal(check(t, 10, 1, 15, 3), KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_int_equal(check(t, 10, 1, 21, 1), 0);
    assert_int_equal(check(t, 20, 0, INT32_MAX - 1, 4), PSTATE_DUPLICATE);
    assert_int_equal(check(t, 20, 0, 2, 1), 0);

    /* the same state gives the same bytes */
    struct buf b2 = BUF_INIT;
    assert_int_equal(pstate_snapshot_encode(t, &b2), 0);
    assert_int_equal(b2.len, b.len);
    assert_memory_equal(b2.data, b.data, b.len);

    /* encode appends */
    buf_reset(&b2);
    buf_put_u8(&b2, 0xAB);
    assert_int_equal(pstate_snapshot_encode(t, &b2), 0);
    assert_int_equal(b2.data[0], 0xAB);
    assert_memory_equal(b2.data + 1, b.data, b.len);

    /* an empty state */
    pstate_clear(t);
    buf_reset(&b2);
    assert_int_equal(pstate_snapshot_encode(t, &b2), 0);
    assert_int_equal(b2.len, 10);
    append(t, 99, 0, 0, 1, 0);
    assert_int_equal(pstate_snapshot_decode(t, b2.data, b2.len), 0);
    assert_int_equal(pstate_count(t), 0);

    buf_free(&b2);
    buf_free(&b);
    pstate_free(t);
    pstate_free(s);
}

/* The exact bytes of Kafka's format, both ways, including an entry
 * without batch (Kafka writes last sequence and offset -1, delta 0). */
static void test_snapshot_kafka_layout(void **state)
{
    (void)state;
    const struct raw_entry v[] = {
        {5, 2, 41, 1000, 9, 123456, 7, -1},       /* batch seq 32-41 at 991-1000 */
        {6, 0, -1, -1, 0, 999, 3, -1},           /* markers only: no batch */
        {8, 32767, 0, 0, 0, -1, -1, 0},          /* one record at offset 0, open txn */
    };
    struct buf raw = BUF_INIT, enc = BUF_INIT;
    raw_snapshot(&raw, 1, 3, v, 3);
    struct pstate *s = pstate_new();
    assert_int_equal(pstate_snapshot_decode(s, raw.data, raw.len), 0);
    assert_int_equal(pstate_count(s), 3);

    const struct ps_entry *e = pstate_find(s, 5);
    assert_int_equal(e->epoch, 2);
    assert_int_equal(e->coordinator_epoch, 7);
    assert_int_equal(e->last_timestamp, 123456);
    assert_int_equal(e->current_txn_first_offset, -1);
    assert_int_equal(e->nbatches, 1);
    assert_int_equal(e->batches[0].first_seq, 32);
    assert_int_equal(e->batches[0].last_seq, 41);
    assert_int_equal(e->batches[0].first_offset, 991);
    assert_int_equal(e->batches[0].last_offset, 1000);
    assert_int_equal(e->batches[0].timestamp, 123456);

    e = pstate_find(s, 6);
    assert_int_equal(e->nbatches, 0);
    assert_int_equal(e->epoch, 0);
    assert_int_equal(e->coordinator_epoch, 3);
    assert_int_equal(e->last_timestamp, 999);
    /* no last sequence: the same epoch restarts at 0, a new one too */
    assert_int_equal(check(s, 6, 0, 0, 1), 0);
    assert_int_equal(check(s, 6, 0, 5, 1), KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_int_equal(check(s, 6, 1, 5, 1), KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_int_equal(check(s, 6, 1, 0, 1), 0);

    e = pstate_find(s, 8);
    assert_int_equal(e->epoch, 32767);
    assert_int_equal(e->current_txn_first_offset, 0);
    assert_int_equal(e->batches[0].first_offset, 0);

    /* sorted by producer id already: re-encoding gives the same bytes */
    assert_int_equal(pstate_snapshot_encode(s, &enc), 0);
    assert_int_equal(enc.len, raw.len);
    assert_memory_equal(enc.data, raw.data, raw.len);

    /* a producer id twice: the later wins */
    const struct raw_entry w[] = {
        {5, 2, 41, 1000, 9, 1, 7, -1},
        {5, 3, 4, 2000, 4, 2, 7, -1},
    };
    raw_snapshot(&raw, 1, 2, w, 2);
    assert_int_equal(pstate_snapshot_decode(s, raw.data, raw.len), 0);
    assert_int_equal(pstate_count(s), 1);
    assert_int_equal(pstate_find(s, 5)->epoch, 3);

    /* a negative offset other than -1 and a negative transaction offset
     * also mean "none" */
    const struct raw_entry x[] = {{5, 2, 7, -8, -3, 1, 7, -5}};
    raw_snapshot(&raw, 1, 1, x, 1);
    assert_int_equal(pstate_snapshot_decode(s, raw.data, raw.len), 0);
    assert_int_equal(pstate_find(s, 5)->nbatches, 0);
    assert_int_equal(pstate_find(s, 5)->current_txn_first_offset, -1);

    buf_free(&enc);
    buf_free(&raw);
    pstate_free(s);
}

/* decode must fail with KERR_CORRUPT_MESSAGE and leave s empty */
static void expect_corrupt(struct pstate *s, const uint8_t *p, size_t n)
{
    append(s, 99, 0, 0, 1, 0);
    assert_int_equal(pstate_snapshot_decode(s, p, n), KERR_CORRUPT_MESSAGE);
    assert_int_equal(pstate_count(s), 0);
    assert_null(pstate_find(s, 99));
}

static void test_snapshot_corrupt(void **state)
{
    (void)state;
    const struct raw_entry v[] = {
        {5, 2, 41, 1000, 9, 123456, 7, -1},
        {6, 0, -1, -1, 0, 999, 3, -1},
    };
    struct buf raw = BUF_INIT;
    struct pstate *s = pstate_new();
    raw_snapshot(&raw, 1, 2, v, 2);
    assert_int_equal(pstate_snapshot_decode(s, raw.data, raw.len), 0);

    /* truncated at every length */
    for (size_t n = 0; n < raw.len; n++)
        expect_corrupt(s, raw.data, n);
    expect_corrupt(s, NULL, 0);

    /* any flipped bit: the CRC (or, in the version, the version) */
    for (size_t i = 0; i < raw.len; i++) {
        raw.data[i] ^= 0x10;
        expect_corrupt(s, raw.data, raw.len);
        raw.data[i] ^= 0x10;
    }

    /* wrong versions with a right CRC */
    raw_snapshot(&raw, 0, 2, v, 2);
    expect_corrupt(s, raw.data, raw.len);
    raw_snapshot(&raw, 2, 2, v, 2);
    expect_corrupt(s, raw.data, raw.len);
    raw_snapshot(&raw, -1, 2, v, 2);
    expect_corrupt(s, raw.data, raw.len);

    /* counts that disagree with the bytes, with a right CRC */
    raw_snapshot(&raw, 1, 3, v, 2);
    expect_corrupt(s, raw.data, raw.len);
    raw_snapshot(&raw, 1, 1000000, v, 2);
    expect_corrupt(s, raw.data, raw.len);
    raw_snapshot(&raw, 1, INT32_MAX, v, 2);
    expect_corrupt(s, raw.data, raw.len);
    raw_snapshot(&raw, 1, -1, v, 2);
    expect_corrupt(s, raw.data, raw.len);
    raw_snapshot(&raw, 1, 1, v, 2); /* trailing entry */
    expect_corrupt(s, raw.data, raw.len);
    raw_snapshot(&raw, 1, 2, v, 2);
    buf_put_u8(&raw, 0);              /* a trailing byte */
    be32_write(raw.data + 2, crc32c(0, raw.data + 6, raw.len - 6));
    expect_corrupt(s, raw.data, raw.len);

    /* entries that cannot be */
    const struct raw_entry bad[][1] = {
        {{-1, 0, 0, 0, 0, 0, -1, -1}},        /* no producer id */
        {{INT64_MIN, 0, 0, 0, 0, 0, -1, -1}},
        {{5, -1, 0, 0, 0, 0, -1, -1}},        /* no epoch */
        {{5, INT16_MIN, 0, 0, 0, 0, -1, -1}},
        {{5, 0, 10, 100, -1, 0, -1, -1}},     /* negative delta */
        {{5, 0, 10, 100, 101, 0, -1, -1}},    /* first offset below 0 */
        {{5, 0, 10, 0, INT32_MAX, 0, -1, -1}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        /* behind a good entry: nothing of it may stay */
        struct raw_entry two[2] = {v[0], bad[i][0]};
        raw_snapshot(&raw, 1, 2, two, 2);
        expect_corrupt(s, raw.data, raw.len);
    }
    /* the edge that is fine: first offset 0 */
    const struct raw_entry edge[] = {{5, 0, 100, 100, 100, 0, -1, -1}};
    raw_snapshot(&raw, 1, 1, edge, 1);
    assert_int_equal(pstate_snapshot_decode(s, raw.data, raw.len), 0);
    assert_int_equal(pstate_find(s, 5)->batches[0].first_offset, 0);
    assert_int_equal(pstate_find(s, 5)->batches[0].first_seq, 0);

    buf_free(&raw);
    pstate_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seq_add),
        cmocka_unit_test(test_no_producer_id),
        cmocka_unit_test(test_new_producer_any_sequence),
        cmocka_unit_test(test_in_sequence_and_gaps),
        cmocka_unit_test(test_duplicates_of_retained_batches),
        cmocka_unit_test(test_epochs),
        cmocka_unit_test(test_follower_takes_any_epoch),
        cmocka_unit_test(test_sequence_wrap),
        cmocka_unit_test(test_transactions_and_control),
        cmocka_unit_test(test_marker_completes_transaction),
        cmocka_unit_test(test_marker_fencing),
        cmocka_unit_test(test_transactional_data_rules),
        cmocka_unit_test(test_snapshot_keeps_transactions),
        cmocka_unit_test(test_expire),
        cmocka_unit_test(test_snapshot_round_trip),
        cmocka_unit_test(test_snapshot_kafka_layout),
        cmocka_unit_test(test_snapshot_corrupt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
