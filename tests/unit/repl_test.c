/* Partition replication: the pure decisions (core/replica/repl.c: high
 * watermark over the ISR, caught-up times, ISR shrink and expansion,
 * divergence and truncation offsets) and the follower's append path of
 * the log (plog_append_follower: offsets and epochs kept, CRC checked,
 * the leader-epoch cache following the batches). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log/fsutil.h"
#include "log/plog.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "replica/repl.h"
#include "util/buf.h"
#include "util/sfile.h"

/* ---- high watermark ---- */

static void test_hw_leader_alone(void **state)
{
    (void)state;
    int32_t isr[] = {1};
    assert_int_equal(repl_isr_min_leo(1, 42, isr, 1, NULL, 0), 42);
    /* no ISR known: the leader's own end */
    assert_int_equal(repl_isr_min_leo(1, 42, NULL, 0, NULL, 0), 42);
}

static void test_hw_min_over_isr(void **state)
{
    (void)state;
    struct repl_follower fs[2];
    repl_follower_reset(&fs[0], 2, true, 1000);
    repl_follower_reset(&fs[1], 3, true, 1000);
    int32_t isr[] = {1, 2, 3};
    /* followers that have not fetched yet hold it back */
    assert_int_equal(repl_isr_min_leo(1, 100, isr, 3, fs, 2), -1);
    repl_follower_fetched(&fs[0], 80, 100, 1001);
    repl_follower_fetched(&fs[1], 90, 100, 1001);
    assert_int_equal(repl_isr_min_leo(1, 100, isr, 3, fs, 2), 80);
    /* a replica out of the ISR does not count */
    int32_t isr2[] = {1, 3};
    assert_int_equal(repl_isr_min_leo(1, 100, isr2, 2, fs, 2), 90);
    /* the leader's own end bounds it */
    repl_follower_fetched(&fs[1], 120, 100, 1002);
    assert_int_equal(repl_isr_min_leo(1, 100, isr2, 2, fs, 2), 100);
    /* an ISR member without any state at all */
    int32_t isr3[] = {1, 4};
    assert_int_equal(repl_isr_min_leo(1, 100, isr3, 2, fs, 2), -1);
}

/* ---- caught-up times and ISR decisions ---- */

static void test_caught_up_time(void **state)
{
    (void)state;
    struct repl_follower f;
    repl_follower_reset(&f, 2, false, 500);
    assert_int_equal(f.last_caught_up_ms, 0);
    /* at the log end: caught up now */
    repl_follower_fetched(&f, 10, 10, 1000);
    assert_int_equal(f.last_caught_up_ms, 1000);
    assert_int_equal(f.leo, 10);
    /* behind, and not even at what the leader had at the last fetch */
    repl_follower_fetched(&f, 5, 20, 2000);
    assert_int_equal(f.last_caught_up_ms, 1000);
    /* behind now but has what the leader had at the previous fetch (20):
     * caught up as of that fetch */
    repl_follower_fetched(&f, 20, 30, 3000);
    assert_int_equal(f.last_caught_up_ms, 2000);
    repl_follower_fetched(&f, 30, 30, 3500);
    assert_int_equal(f.last_caught_up_ms, 3500);
}

static void test_shrink(void **state)
{
    (void)state;
    struct repl_follower fs[2];
    repl_follower_reset(&fs[0], 2, true, 1000);
    repl_follower_reset(&fs[1], 3, true, 1000);
    int32_t isr[] = {1, 2, 3}, out[3];
    /* within the lag: nobody leaves */
    assert_int_equal(repl_out_of_sync(1, 50, isr, 3, fs, 2, 1000 + 30000, 30000, out), 0);
    /* node 2 keeps up, node 3 never fetched: 3 leaves after the lag */
    repl_follower_fetched(&fs[0], 50, 50, 30500);
    assert_int_equal(repl_out_of_sync(1, 50, isr, 3, fs, 2, 31001, 30000, out), 1);
    assert_int_equal(out[0], 3);
    /* a follower at the log end never leaves, however old its time */
    fs[1].leo = 50;
    assert_int_equal(repl_out_of_sync(1, 50, isr, 3, fs, 2, 99999, 30000, out), 0);
    /* once the leader's log grows, both have been behind too long */
    assert_int_equal(repl_out_of_sync(1, 51, isr, 3, fs, 2, 99999, 30000, out), 2);
    assert_int_equal(out[0], 2);
    assert_int_equal(out[1], 3);
    /* the leader is never out of sync */
    int32_t alone[] = {1};
    assert_int_equal(repl_out_of_sync(1, 50, alone, 1, fs, 2, 99999, 30000, out), 0);
}

static void test_expand(void **state)
{
    (void)state;
    struct repl_follower f;
    repl_follower_reset(&f, 2, false, 0);
    assert_false(repl_can_join_isr(&f, 0, 0)); /* never fetched */
    repl_follower_fetched(&f, 40, 60, 10);
    assert_false(repl_can_join_isr(&f, 50, 0)); /* below the HW */
    repl_follower_fetched(&f, 50, 60, 20);
    assert_true(repl_can_join_isr(&f, 50, 0));
    /* and must reach the start of the leader's current epoch */
    assert_false(repl_can_join_isr(&f, 50, 55));
    repl_follower_fetched(&f, 55, 60, 30);
    assert_true(repl_can_join_isr(&f, 50, 55));
}

/* ---- divergence ---- */

static void test_leader_divergence(void **state)
{
    (void)state;
    /* no epoch from the follower: nothing to check */
    assert_false(repl_diverging(-1, 100, -1, -1));
    /* same epoch, the leader's epoch reaches the fetch offset */
    assert_false(repl_diverging(3, 100, 3, 120));
    assert_false(repl_diverging(3, 100, 3, 100));
    /* the leader's epoch 3 ended at 90 (epoch 4 started there) */
    assert_true(repl_diverging(3, 100, 3, 90));
    /* the leader never had epoch 3: its largest below is 2 */
    assert_true(repl_diverging(3, 100, 2, 80));
    /* nothing at or below the epoch */
    assert_true(repl_diverging(3, 100, -1, -1));
}

static void test_truncation_offset(void **state)
{
    (void)state;
    bool complete;
    /* undefined end: back to the high watermark */
    assert_int_equal(repl_truncation_offset(-1, -1, false, -1, -1, 120, 80, &complete), 80);
    assert_true(complete);
    /* undefined epoch: the leader's end offset */
    assert_int_equal(repl_truncation_offset(-1, 100, false, -1, -1, 120, 80, &complete), 100);
    assert_true(complete);
    /* both know the epoch: the smaller of the two ends */
    assert_int_equal(repl_truncation_offset(5, 100, true, 5, 110, 120, 80, &complete), 100);
    assert_true(complete);
    assert_int_equal(repl_truncation_offset(5, 100, true, 5, 95, 120, 80, &complete), 95);
    /* never above the local log end */
    assert_int_equal(repl_truncation_offset(5, 100, true, 5, 110, 97, 80, &complete), 97);
    /* the follower's largest epoch <= 5 is 4: truncate to its end and ask
     * again */
    assert_int_equal(repl_truncation_offset(5, 100, true, 4, 70, 120, 60, &complete), 70);
    assert_false(complete);
    /* the follower has no epoch that old */
    assert_int_equal(repl_truncation_offset(5, 100, false, -1, -1, 120, 80, &complete), 100);
    assert_true(complete);
}

/* ---- the follower's append ---- */

struct fx {
    char *root, *dir;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    char tmpl[] = "/tmp/repl_test.XXXXXX";
    if (!mkdtemp(tmpl))
        return -1;
    f->root = strdup(tmpl);
    size_t n = strlen(tmpl) + 16;
    f->dir = malloc(n);
    snprintf(f->dir, n, "%s/topic-0", tmpl);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    fs_remove_tree(f->root);
    free(f->root);
    free(f->dir);
    free(f);
    return 0;
}

/* One batch of n records as a leader stored it: base offset and leader
 * epoch set (both outside the CRC). */
static size_t leader_batch(struct buf *out, int64_t base, int n, int32_t epoch)
{
    struct rb_builder b;
    size_t start = out->len;
    rb_builder_begin(&b, out, 0, 1000, NULL);
    for (int i = 0; i < n; i++) {
        char v[32];
        int len = snprintf(v, sizeof v, "v%d", (int)(base + i));
        kbytes_t key = {(const uint8_t *)"k", 1};
        kbytes_t val = {(const uint8_t *)v, len};
        assert_int_equal(rb_builder_add(&b, 1000 + i, key, val, NULL, 0), 0);
    }
    size_t bl;
    assert_int_equal(rb_builder_finish(&b, &bl), 0);
    rb_set_base_offset(out->data + start, base);
    rb_set_partition_leader_epoch(out->data + start, epoch);
    return bl;
}

static void test_follower_append(void **state)
{
    struct fx *f = *state;
    struct plog_config c = PLOG_CONFIG_INIT;
    struct plog *l = NULL;
    assert_int_equal(plog_open(f->dir, NULL, &c, &l), 0);

    struct buf b = BUF_INIT;
    leader_batch(&b, 0, 3, 1);
    leader_batch(&b, 3, 2, 1);
    leader_batch(&b, 5, 4, 3);
    assert_int_equal(plog_append_follower(l, b.data, b.len, NULL), 0);
    assert_int_equal(plog_log_end_offset(l), 9);
    int32_t e;
    int64_t start, end;
    plog_latest_epoch(l, &e, &start);
    assert_int_equal(e, 3);
    assert_int_equal(start, 5);
    plog_end_offset_for_epoch(l, 1, &e, &end);
    assert_int_equal(e, 1);
    assert_int_equal(end, 5);
    plog_end_offset_for_epoch(l, 2, &e, &end);
    assert_int_equal(e, 1);
    assert_int_equal(end, 5);

    /* byte for byte what the leader sent */
    struct plog_read_result rr;
    assert_int_equal(plog_read(l, 0, 1 << 20, true, -1, &rr), 0);
    assert_int_equal(rr.len, (int32_t)b.len);
    uint8_t *got = malloc(b.len);
    assert_int_equal(pread(rr.file->fd, got, b.len, rr.file_pos), (ssize_t)b.len);
    assert_memory_equal(got, b.data, b.len);
    free(got);
    sfile_unref(rr.file);

    /* below the log end: refused, nothing written */
    struct buf old = BUF_INIT;
    leader_batch(&old, 7, 1, 3);
    assert_int_equal(plog_append_follower(l, old.data, old.len, NULL), KERR_OFFSET_OUT_OF_RANGE);
    assert_int_equal(plog_log_end_offset(l), 9);

    /* a damaged batch (CRC) is refused */
    struct buf bad = BUF_INIT;
    size_t bl = leader_batch(&bad, 9, 2, 3);
    bad.data[bl - 1] ^= 0x5a;
    assert_int_equal(plog_append_follower(l, bad.data, bad.len, NULL), KERR_CORRUPT_MESSAGE);
    assert_int_equal(plog_log_end_offset(l), 9);

    /* truncation of a divergent tail takes the epoch along */
    assert_int_equal(plog_truncate_to(l, 5), 0);
    plog_latest_epoch(l, &e, &start);
    assert_int_equal(e, 1);
    assert_int_equal(plog_log_end_offset(l), 5);
    struct buf next = BUF_INIT;
    leader_batch(&next, 5, 2, 4);
    assert_int_equal(plog_append_follower(l, next.data, next.len, NULL), 0);
    plog_latest_epoch(l, &e, &start);
    assert_int_equal(e, 4);
    assert_int_equal(start, 5);
    assert_int_equal(plog_log_end_offset(l), 7);

    buf_free(&b);
    buf_free(&old);
    buf_free(&bad);
    buf_free(&next);
    plog_close(l, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hw_leader_alone),
        cmocka_unit_test(test_hw_min_over_isr),
        cmocka_unit_test(test_caught_up_time),
        cmocka_unit_test(test_shrink),
        cmocka_unit_test(test_expand),
        cmocka_unit_test(test_leader_divergence),
        cmocka_unit_test(test_truncation_offset),
        cmocka_unit_test_setup_teardown(test_follower_append, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
