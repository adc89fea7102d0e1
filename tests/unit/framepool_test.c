/* net/framepool.c: which buffers a worker keeps, and that a kept one is
 * handed out again (the point: no new pages for the next big frame). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "net/framepool.h"

static void test_small_frames_are_not_pooled(void **state)
{
    (void)state;
    struct frame_pool fp = {0};
    size_t cap = 99;
    uint8_t *p = frame_pool_get(&fp, 100, &cap);
    assert_non_null(p);
    assert_int_equal(cap, 0);
    frame_pool_put(&fp, p, cap);
    assert_int_equal(fp.n, 0);
    assert_int_equal(fp.bytes, 0);
}

static void test_big_frame_buffer_is_reused(void **state)
{
    (void)state;
    struct frame_pool fp = {0};
    size_t cap;
    uint8_t *p = frame_pool_get(&fp, 700 * 1000, &cap);
    assert_int_equal(cap, 1024 * 1024); /* rounded up to its size class */
    memset(p, 0xab, 700 * 1000);
    frame_pool_put(&fp, p, cap);
    assert_int_equal(fp.n, 1);
    assert_int_equal(fp.bytes, 1024 * 1024);
    /* a slightly bigger frame still fits the kept buffer */
    size_t cap2;
    uint8_t *q = frame_pool_get(&fp, 900 * 1000, &cap2);
    assert_ptr_equal(q, p);
    assert_int_equal(cap2, cap);
    assert_int_equal(fp.n, 0);
    assert_int_equal(fp.bytes, 0);
    /* one bigger than any kept buffer is a new one */
    frame_pool_put(&fp, q, cap2);
    size_t cap3;
    uint8_t *r = frame_pool_get(&fp, 3 * 1024 * 1024 + 1, &cap3);
    assert_ptr_not_equal(r, p);
    assert_int_equal(cap3, 4 * 1024 * 1024);
    assert_int_equal(fp.n, 1);
    frame_pool_put(&fp, r, cap3);
    frame_pool_clear(&fp);
    assert_int_equal(fp.n, 0);
}

static void test_best_fit(void **state)
{
    (void)state;
    struct frame_pool fp = {0};
    size_t c1, c2;
    uint8_t *big = frame_pool_get(&fp, 1024 * 1024, &c1);
    uint8_t *small = frame_pool_get(&fp, 100 * 1024, &c2);
    assert_int_equal(c2, 128 * 1024);
    frame_pool_put(&fp, big, c1);
    frame_pool_put(&fp, small, c2);
    size_t c;
    uint8_t *p = frame_pool_get(&fp, 70 * 1024, &c);
    assert_ptr_equal(p, small); /* not the 1 MiB one */
    frame_pool_put(&fp, p, c);
    frame_pool_clear(&fp);
}

/* Of equal fits, the buffer put back last is handed out first: the copy
 * of the next frame into it finds more of its lines in the cache. */
static void test_most_recent_first(void **state)
{
    (void)state;
    struct frame_pool fp = {0};
    size_t ca, cb, cc;
    uint8_t *a = frame_pool_get(&fp, 700 * 1000, &ca);
    uint8_t *b = frame_pool_get(&fp, 700 * 1000, &cb);
    uint8_t *c = frame_pool_get(&fp, 700 * 1000, &cc);
    frame_pool_put(&fp, a, ca);
    frame_pool_put(&fp, b, cb);
    frame_pool_put(&fp, c, cc);
    size_t cap;
    uint8_t *p = frame_pool_get(&fp, 600 * 1000, &cap);
    assert_ptr_equal(p, c);
    uint8_t *q = frame_pool_get(&fp, 600 * 1000, &cap);
    assert_ptr_equal(q, b);
    frame_pool_put(&fp, q, cap); /* b again, then c */
    frame_pool_put(&fp, p, cap);
    assert_ptr_equal(frame_pool_get(&fp, 600 * 1000, &cap), c);
    assert_ptr_equal(frame_pool_get(&fp, 600 * 1000, &cap), b);
    assert_ptr_equal(frame_pool_get(&fp, 600 * 1000, &cap), a);
    assert_int_equal(fp.n, 0);
    free(a);
    free(b);
    free(c);
}

static void test_bounded(void **state)
{
    (void)state;
    struct frame_pool fp = {0};
    uint8_t *bufs[FRAME_POOL_SLOTS + 4];
    size_t caps[FRAME_POOL_SLOTS + 4];
    for (int i = 0; i < FRAME_POOL_SLOTS + 4; i++)
        bufs[i] = frame_pool_get(&fp, 64 * 1024, &caps[i]);
    for (int i = 0; i < FRAME_POOL_SLOTS + 4; i++)
        frame_pool_put(&fp, bufs[i], caps[i]);
    assert_int_equal(fp.n, FRAME_POOL_SLOTS);
    assert_int_equal(fp.bytes, FRAME_POOL_SLOTS * 64 * 1024);
    /* a bigger one evicts the smallest ones to stay within the byte bound */
    size_t cb;
    uint8_t *b = frame_pool_get(&fp, 6 * 1024 * 1024, &cb);
    frame_pool_put(&fp, b, cb);
    assert_true(fp.bytes <= FRAME_POOL_MAX_BYTES);
    int found = 0;
    for (int i = 0; i < fp.n; i++)
        found += fp.slot[i].p == b;
    assert_int_equal(found, 1);
    /* one over the byte bound is never kept */
    uint8_t *h = frame_pool_get(&fp, FRAME_POOL_MAX_BYTES + 1, &cb);
    int n = fp.n;
    frame_pool_put(&fp, h, cb);
    assert_int_equal(fp.n, n);
    frame_pool_clear(&fp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_frames_are_not_pooled),
        cmocka_unit_test(test_big_frame_buffer_is_reused),
        cmocka_unit_test(test_best_fit),
        cmocka_unit_test(test_most_recent_first),
        cmocka_unit_test(test_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
