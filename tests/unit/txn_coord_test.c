/* The transaction coordinator's state machine (coord/txn_meta.c) and its
 * __transaction_state records (coord/txn_log.c): every transition of
 * Kafka's TransactionMetadata with the error each refusal gets, KIP-360
 * retries and fencing, epoch exhaustion, timeouts and expiry, the
 * PRODUCER_FENCED downgrade per request version, and records
 * round-tripping (Kafka's bytes for a known value included). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "coord/txn_log.h"
#include "coord/txn_meta.h"
#include "proto/gen/kapi.h"
#include "proto/kerr.h"

#define NOW 1000000
#define PID 4000

/* A metadata as an InitProducerId of a new id leaves it: epoch 0, Empty. */
static struct txn_meta *fresh(void)
{
    struct txn_meta *m = txn_meta_new(KSTR_LIT("tx"), PID, 60000, NOW);
    struct txn_meta t;
    enum txn_init_action act;
    assert_int_equal(txn_prepare_init(m, -1, -1, 60000, -1, NOW, &t, &act), 0);
    assert_int_equal(act, TXN_INIT_WRITE);
    txn_meta_apply(m, &t);
    assert_int_equal(m->epoch, 0);
    assert_int_equal(m->state, TXN_EMPTY);
    return m;
}

static void add1(struct txn_meta *m, const char *topic, int32_t p)
{
    kstr_t t = KSTR(topic);
    struct txn_meta tg;
    bool w;
    assert_int_equal(txn_prepare_add(m, m->producer_id, m->epoch, 1, &t, &p, NOW + 1, &tg, &w), 0);
    if (w)
        txn_meta_apply(m, &tg);
}

static void test_valid_transitions(void **st)
{
    (void)st;
    /* Kafka's TransactionState.validPreviousStates, whole table */
    static const char *const ok[8] = {
        /* to Empty */ "045", /* Ongoing */ "1045", /* PrepareCommit */ "1",
        /* PrepareAbort */ "17045", /* CompleteCommit */ "2", /* CompleteAbort */ "3",
        /* Dead */ "045", /* PrepareEpochFence */ "1",
    };
    for (int to = 0; to < 8; to++)
        for (int from = 0; from < 8; from++) {
            bool want = strchr(ok[to], '0' + from) != NULL;
            assert_int_equal(txn_transition_valid((enum txn_state)from, (enum txn_state)to), want);
        }
    assert_string_equal(txn_state_name(TXN_PREPARE_EPOCH_FENCE), "PrepareEpochFence");
    assert_int_equal(txn_state_parse(KSTR_LIT("CompleteAbort")), TXN_COMPLETE_ABORT);
    assert_int_equal(txn_state_parse(KSTR_LIT("nope")), -1);
}

static void test_init_bumps_epoch(void **st)
{
    (void)st;
    struct txn_meta *m = fresh();
    struct txn_meta t;
    enum txn_init_action act;
    /* a second InitProducerId without KIP-360 fields: epoch bump */
    assert_int_equal(txn_prepare_init(m, -1, -1, 30000, -1, NOW + 5, &t, &act), 0);
    assert_int_equal(act, TXN_INIT_WRITE);
    assert_int_equal(t.epoch, 1);
    assert_int_equal(t.last_epoch, -1);
    assert_int_equal(t.timeout_ms, 30000);
    assert_int_equal(t.producer_id, PID);
    assert_int_equal(t.update_ts, NOW + 5);
    txn_meta_apply(m, &t);
    /* KIP-360: the producer names its current id/epoch: bump, last kept */
    assert_int_equal(txn_prepare_init(m, PID, 1, 30000, -1, NOW, &t, &act), 0);
    assert_int_equal(t.epoch, 2);
    assert_int_equal(t.last_epoch, 1);
    txn_meta_apply(m, &t);
    /* the same request again (answer lost): the current epoch, no write */
    assert_int_equal(txn_prepare_init(m, PID, 1, 30000, -1, NOW, &t, &act), 0);
    assert_int_equal(act, TXN_INIT_RETRY);
    /* an older epoch: fenced */
    assert_int_equal(txn_prepare_init(m, PID, 0, 30000, -1, NOW, &t, &act), KERR_PRODUCER_FENCED);
    /* another producer id: fenced */
    assert_int_equal(txn_prepare_init(m, PID + 1, 2, 30000, -1, NOW, &t, &act), KERR_PRODUCER_FENCED);
    txn_meta_free(m);
}

/* A new id (no epoch yet) takes whatever id/epoch a KIP-360 request
 * names, as Kafka's prepareIncrementProducerEpoch: @platformatic/kafka
 * sends 0/0 on its first call. */
static void test_init_new_id_any_expected_epoch(void **st)
{
    (void)st;
    struct txn_meta *m = txn_meta_new(KSTR_LIT("tx"), PID, 60000, NOW);
    struct txn_meta t;
    enum txn_init_action act;
    assert_int_equal(txn_prepare_init(m, 0, 0, 60000, -1, NOW, &t, &act), 0);
    assert_int_equal(act, TXN_INIT_WRITE);
    assert_int_equal(t.producer_id, PID);
    assert_int_equal(t.epoch, 0);
    assert_int_equal(t.last_epoch, -1);
    txn_meta_clear(&t);
    txn_meta_free(m);
}

static void test_init_epoch_exhausted(void **st)
{
    (void)st;
    struct txn_meta *m = fresh();
    m->epoch = INT16_MAX - 1;
    assert_true(txn_init_needs_pid(m, -1));
    struct txn_meta t;
    enum txn_init_action act;
    assert_int_equal(txn_prepare_init(m, -1, -1, 1000, -1, NOW, &t, &act), KERR_COORDINATOR_NOT_AVAILABLE);
    assert_int_equal(txn_prepare_init(m, PID, INT16_MAX - 1, 1000, PID + 7, NOW, &t, &act), 0);
    assert_int_equal(t.producer_id, PID + 7);
    assert_int_equal(t.prev_producer_id, PID);
    assert_int_equal(t.epoch, 0);
    txn_meta_apply(m, &t);
    assert_int_equal(m->last_epoch, INT16_MAX - 1);
    /* a retry with the previous id and its exhausted epoch is not fenced:
     * it hears the new id */
    assert_int_equal(txn_prepare_init(m, PID, INT16_MAX - 1, 1000, -1, NOW, &t, &act), 0);
    assert_int_equal(act, TXN_INIT_RETRY);
    /* an older epoch of the previous id is */
    assert_int_equal(txn_prepare_init(m, PID, 5, 1000, -1, NOW, &t, &act), KERR_PRODUCER_FENCED);
    txn_meta_free(m);
}

static void test_init_fences_ongoing(void **st)
{
    (void)st;
    struct txn_meta *m = fresh();
    add1(m, "a", 0);
    assert_int_equal(m->state, TXN_ONGOING);
    struct txn_meta t;
    enum txn_init_action act;
    assert_int_equal(txn_prepare_init(m, -1, -1, 60000, -1, NOW + 9, &t, &act), 0);
    assert_int_equal(act, TXN_INIT_FENCE);
    assert_int_equal(t.state, TXN_PREPARE_ABORT);
    assert_int_equal(t.epoch, 1);
    assert_int_equal(t.nparts, 1);
    txn_meta_apply(m, &t);
    m->pending = true; /* markers on their way */
    assert_int_equal(txn_prepare_init(m, -1, -1, 60000, -1, NOW, &t, &act), KERR_CONCURRENT_TRANSACTIONS);
    m->pending = false;
    assert_int_equal(txn_prepare_init(m, -1, -1, 60000, -1, NOW, &t, &act), KERR_CONCURRENT_TRANSACTIONS);
    /* the old producer, epoch 0, is fenced everywhere */
    bool w;
    kstr_t tp = KSTR_LIT("a");
    int32_t p = 0;
    assert_int_equal(txn_prepare_add(m, PID, 0, 1, &tp, &p, NOW, &t, &w), KERR_PRODUCER_FENCED);
    assert_int_equal(txn_prepare_end(m, PID, 0, true, NOW, &t, &w), KERR_PRODUCER_FENCED);
    /* markers done: CompleteAbort, then the new producer's init bumps */
    assert_int_equal(txn_prepare_complete(m, NOW, &t), 0);
    assert_int_equal(t.state, TXN_COMPLETE_ABORT);
    assert_int_equal(t.nparts, 0);
    txn_meta_apply(m, &t);
    assert_int_equal(txn_prepare_init(m, -1, -1, 60000, -1, NOW, &t, &act), 0);
    assert_int_equal(act, TXN_INIT_WRITE);
    assert_int_equal(t.epoch, 2);
    txn_meta_clear(&t);
    txn_meta_free(m);
}

static void test_add_partitions(void **st)
{
    (void)st;
    struct txn_meta *m = fresh();
    struct txn_meta t;
    bool w;
    kstr_t topics[3] = {KSTR_LIT("b"), KSTR_LIT("a"), KSTR_LIT("b")};
    int32_t parts[3] = {1, 0, 0};
    assert_int_equal(txn_prepare_add(m, PID + 1, 0, 3, topics, parts, NOW, &t, &w), KERR_INVALID_PRODUCER_ID_MAPPING);
    assert_int_equal(txn_prepare_add(m, PID, 1, 3, topics, parts, NOW, &t, &w), KERR_PRODUCER_FENCED);
    assert_int_equal(txn_prepare_add(m, PID, 0, 3, topics, parts, NOW + 3, &t, &w), 0);
    assert_true(w);
    assert_int_equal(t.state, TXN_ONGOING);
    assert_int_equal(t.start_ts, NOW + 3);
    assert_int_equal(t.nparts, 3);
    assert_string_equal(t.parts[0].topic, "a");
    assert_string_equal(t.parts[1].topic, "b");
    assert_int_equal(t.parts[1].partition, 0);
    assert_int_equal(t.parts[2].partition, 1);
    txn_meta_apply(m, &t);
    /* the same again: nothing to write */
    assert_int_equal(txn_prepare_add(m, PID, 0, 2, topics, parts, NOW + 50, &t, &w), 0);
    assert_false(w);
    /* one more: start time kept */
    kstr_t c = KSTR_LIT("c");
    int32_t p = 4;
    assert_int_equal(txn_prepare_add(m, PID, 0, 1, &c, &p, NOW + 60, &t, &w), 0);
    assert_true(w);
    assert_int_equal(t.start_ts, NOW + 3);
    assert_int_equal(t.nparts, 4);
    txn_meta_apply(m, &t);
    m->pending = true;
    assert_int_equal(txn_prepare_add(m, PID, 0, 1, &c, &p, NOW, &t, &w), KERR_CONCURRENT_TRANSACTIONS);
    m->pending = false;
    /* during PrepareCommit */
    assert_int_equal(txn_prepare_end(m, PID, 0, true, NOW, &t, &w), 0);
    txn_meta_apply(m, &t);
    assert_int_equal(txn_prepare_add(m, PID, 0, 1, &c, &p, NOW, &t, &w), KERR_CONCURRENT_TRANSACTIONS);
    /* after CompleteCommit a new transaction starts */
    assert_int_equal(txn_prepare_complete(m, NOW + 70, &t), 0);
    txn_meta_apply(m, &t);
    assert_int_equal(txn_prepare_add(m, PID, 0, 1, &c, &p, NOW + 80, &t, &w), 0);
    assert_true(w);
    assert_int_equal(t.state, TXN_ONGOING);
    assert_int_equal(t.start_ts, NOW + 80);
    assert_int_equal(t.nparts, 1);
    txn_meta_clear(&t);
    txn_meta_free(m);
}

static void test_end_txn(void **st)
{
    (void)st;
    struct txn_meta *m = fresh();
    struct txn_meta t;
    bool w;
    /* nothing open */
    assert_int_equal(txn_prepare_end(m, PID, 0, true, NOW, &t, &w), KERR_INVALID_TXN_STATE);
    assert_int_equal(txn_prepare_end(m, PID, 0, false, NOW, &t, &w), KERR_INVALID_TXN_STATE);
    add1(m, "a", 1);
    assert_int_equal(txn_prepare_end(m, PID + 1, 0, true, NOW, &t, &w), KERR_INVALID_PRODUCER_ID_MAPPING);
    assert_int_equal(txn_prepare_end(m, PID, 3, true, NOW, &t, &w), KERR_PRODUCER_FENCED);
    assert_int_equal(txn_prepare_end(m, PID, 0, false, NOW, &t, &w), 0);
    assert_true(w);
    assert_int_equal(t.state, TXN_PREPARE_ABORT);
    assert_int_equal(t.nparts, 1);
    txn_meta_apply(m, &t);
    /* PrepareAbort: abort again is a retry in progress, commit wrong */
    assert_int_equal(txn_prepare_end(m, PID, 0, false, NOW, &t, &w), KERR_CONCURRENT_TRANSACTIONS);
    assert_int_equal(txn_prepare_end(m, PID, 0, true, NOW, &t, &w), KERR_INVALID_TXN_STATE);
    assert_int_equal(txn_prepare_complete(m, NOW, &t), 0);
    txn_meta_apply(m, &t);
    assert_int_equal(m->state, TXN_COMPLETE_ABORT);
    assert_int_equal(txn_prepare_end(m, PID, 0, false, NOW, &t, &w), 0);
    assert_false(w);
    assert_int_equal(txn_prepare_end(m, PID, 0, true, NOW, &t, &w), KERR_INVALID_TXN_STATE);
    /* commit side */
    add1(m, "a", 1);
    assert_int_equal(txn_prepare_end(m, PID, 0, true, NOW, &t, &w), 0);
    txn_meta_apply(m, &t);
    assert_int_equal(m->state, TXN_PREPARE_COMMIT);
    assert_int_equal(txn_prepare_end(m, PID, 0, true, NOW, &t, &w), KERR_CONCURRENT_TRANSACTIONS);
    assert_int_equal(txn_prepare_end(m, PID, 0, false, NOW, &t, &w), KERR_INVALID_TXN_STATE);
    assert_int_equal(txn_prepare_complete(m, NOW, &t), 0);
    txn_meta_apply(m, &t);
    assert_int_equal(m->state, TXN_COMPLETE_COMMIT);
    assert_int_equal(txn_prepare_end(m, PID, 0, true, NOW, &t, &w), 0);
    assert_false(w);
    assert_int_equal(txn_prepare_end(m, PID, 0, false, NOW, &t, &w), KERR_INVALID_TXN_STATE);
    /* complete of something not prepared */
    assert_int_equal(txn_prepare_complete(m, NOW, &t), KERR_INVALID_TXN_STATE);
    /* a pending write refuses the end */
    add1(m, "a", 1);
    m->pending = true;
    assert_int_equal(txn_prepare_end(m, PID, 0, true, NOW, &t, &w), KERR_CONCURRENT_TRANSACTIONS);
    txn_meta_free(m);
}

static void test_timeout_and_expiry(void **st)
{
    (void)st;
    struct txn_meta *m = fresh();
    m->timeout_ms = 100;
    assert_false(txn_timed_out(m, NOW + 1000));
    add1(m, "a", 0); /* starts at NOW + 1 */
    assert_false(txn_timed_out(m, NOW + 101));
    assert_true(txn_timed_out(m, NOW + 102));
    assert_false(txn_expired(m, 10, NOW + 100000)); /* Ongoing never expires */
    struct txn_meta t;
    assert_int_equal(txn_prepare_fence_abort(m, NOW + 200, &t), 0);
    assert_int_equal(t.state, TXN_PREPARE_ABORT);
    assert_int_equal(t.epoch, 1);
    txn_meta_apply(m, &t);
    assert_false(txn_timed_out(m, NOW + 100000));
    assert_int_equal(txn_prepare_fence_abort(m, NOW, &t), KERR_INVALID_TXN_STATE);
    assert_int_equal(txn_prepare_complete(m, NOW + 300, &t), 0);
    txn_meta_apply(m, &t);
    assert_false(txn_expired(m, 1000, NOW + 1299));
    assert_true(txn_expired(m, 1000, NOW + 1300));
    /* an exhausted epoch is not bumped by the fence */
    add1(m, "a", 0);
    m->epoch = INT16_MAX - 1;
    assert_int_equal(txn_prepare_fence_abort(m, NOW, &t), 0);
    assert_int_equal(t.epoch, INT16_MAX - 1);
    txn_meta_clear(&t);
    txn_meta_free(m);
}

static void test_error_for_version(void **st)
{
    (void)st;
    assert_int_equal(txn_error_for_version(KERR_PRODUCER_FENCED, KAPI_INIT_PRODUCER_ID, 3), KERR_INVALID_PRODUCER_EPOCH);
    assert_int_equal(txn_error_for_version(KERR_PRODUCER_FENCED, KAPI_INIT_PRODUCER_ID, 4), KERR_PRODUCER_FENCED);
    assert_int_equal(txn_error_for_version(KERR_PRODUCER_FENCED, KAPI_ADD_PARTITIONS_TO_TXN, 1),
                     KERR_INVALID_PRODUCER_EPOCH);
    assert_int_equal(txn_error_for_version(KERR_PRODUCER_FENCED, KAPI_END_TXN, 2), KERR_PRODUCER_FENCED);
    assert_int_equal(txn_error_for_version(KERR_PRODUCER_FENCED, KAPI_TXN_OFFSET_COMMIT, 2),
                     KERR_INVALID_PRODUCER_EPOCH);
    assert_int_equal(txn_error_for_version(KERR_CONCURRENT_TRANSACTIONS, KAPI_END_TXN, 0),
                     KERR_CONCURRENT_TRANSACTIONS);
}

static void test_log_roundtrip(void **st)
{
    (void)st;
    struct txn_meta *m = fresh();
    add1(m, "b", 2);
    add1(m, "a", 0);
    add1(m, "b", 1);
    struct buf k = BUF_INIT, v = BUF_INIT;
    txn_log_key(&k, KSTR_LIT("tx"));
    txn_log_value(&v, m);
    /* key: version 0, string "tx" */
    assert_int_equal(k.len, 6);
    assert_memory_equal(k.data, "\0\0\0\2tx", 6);
    /* value v0: version, pid, epoch, timeout, status, then 2 topics */
    assert_int_equal(v.data[0], 0);
    assert_int_equal(v.data[1], 0);
    assert_int_equal(v.data[2 + 8 + 2 + 4], TXN_ONGOING);
    kstr_t id;
    bool tomb;
    struct txn_meta *r;
    assert_int_equal(txn_log_parse((kbytes_t){k.data, (int32_t)k.len}, (kbytes_t){v.data, (int32_t)v.len}, &id,
                                   &tomb, &r),
                     0);
    assert_false(tomb);
    assert_true(kstr_eqc(id, "tx"));
    assert_int_equal(r->producer_id, PID);
    assert_int_equal(r->epoch, 0);
    assert_int_equal(r->state, TXN_ONGOING);
    assert_int_equal(r->timeout_ms, 60000);
    assert_int_equal(r->start_ts, m->start_ts);
    assert_int_equal(r->update_ts, m->update_ts);
    assert_int_equal(r->nparts, 3);
    assert_string_equal(r->parts[0].topic, "a");
    assert_int_equal(r->parts[2].partition, 2);
    txn_meta_free(r);
    /* Empty writes a null partition list; v1 (client version 2) keeps
     * the tagged fields */
    buf_reset(&v);
    struct txn_meta t;
    enum txn_init_action act;
    m->state = TXN_COMPLETE_COMMIT;
    assert_int_equal(txn_prepare_init(m, -1, -1, 5000, -1, NOW, &t, &act), 0);
    t.client_version = 2;
    t.prev_producer_id = 77;
    txn_log_value(&v, &t);
    assert_int_equal(v.data[1], 1);
    assert_int_equal(txn_log_parse((kbytes_t){k.data, (int32_t)k.len}, (kbytes_t){v.data, (int32_t)v.len}, &id,
                                   &tomb, &r),
                     0);
    assert_int_equal(r->state, TXN_EMPTY);
    assert_int_equal(r->nparts, 0);
    assert_int_equal(r->prev_producer_id, 77);
    assert_int_equal(r->client_version, 2);
    assert_int_equal(r->epoch, 1);
    txn_meta_free(r);
    txn_meta_clear(&t);
    /* tombstone, another key version, garbage */
    assert_int_equal(txn_log_parse((kbytes_t){k.data, (int32_t)k.len}, (kbytes_t){NULL, -1}, &id, &tomb, &r), 0);
    assert_true(tomb);
    assert_null(r);
    uint8_t k1[] = {0, 1, 0, 0};
    assert_int_equal(txn_log_parse((kbytes_t){k1, 4}, (kbytes_t){NULL, -1}, &id, &tomb, &r), 1);
    uint8_t bad[] = {0, 0, 0, 1};
    assert_int_equal(txn_log_parse((kbytes_t){k.data, (int32_t)k.len}, (kbytes_t){bad, 4}, &id, &tomb, &r), -1);
    buf_free(&k);
    buf_free(&v);
    txn_meta_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_transitions), cmocka_unit_test(test_init_bumps_epoch),
        cmocka_unit_test(test_init_new_id_any_expected_epoch),
        cmocka_unit_test(test_init_epoch_exhausted), cmocka_unit_test(test_init_fences_ongoing),
        cmocka_unit_test(test_add_partitions),     cmocka_unit_test(test_end_txn),
        cmocka_unit_test(test_timeout_and_expiry), cmocka_unit_test(test_error_for_version),
        cmocka_unit_test(test_log_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
