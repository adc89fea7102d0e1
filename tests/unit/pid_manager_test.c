/* The broker side's producer-id blocks (controller/pid_manager.h):
 * nothing is asked before the first claim, the next block is asked for
 * when the id at 90% of the current one is handed out (Kafka's
 * RPCProducerIdManager), a broker out of ids says so and asks, and the
 * ids handed out increase strictly across blocks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "controller/pid_manager.h"

static void test_first_claim_asks(void **state)
{
    (void)state;
    struct pid_blocks b;
    pid_blocks_init(&b);
    assert_false(pid_blocks_want(&b)); /* not at start-up: on first use */
    int64_t id = -7;
    bool ask = false;
    assert_false(pid_blocks_claim(&b, &id, &ask));
    assert_true(ask);
    assert_true(pid_blocks_want(&b));
    /* asking again while the request is out does not wake anyone again */
    assert_false(pid_blocks_claim(&b, &id, &ask));
    assert_false(ask);
    pid_blocks_add(&b, 0, 1000);
    assert_false(pid_blocks_want(&b));
    assert_int_equal(pid_blocks_available(&b), 1000);
    assert_true(pid_blocks_claim(&b, &id, &ask));
    assert_int_equal(id, 0);
    assert_false(ask);
}

static void test_prefetch_at_90_percent(void **state)
{
    (void)state;
    struct pid_blocks b;
    pid_blocks_init(&b);
    pid_blocks_add(&b, 5000, 1000);
    int64_t id;
    bool ask;
    for (int64_t i = 0; i < 900; i++) {
        assert_true(pid_blocks_claim(&b, &id, &ask));
        assert_int_equal(id, 5000 + i);
        assert_false(ask);
        assert_false(pid_blocks_want(&b));
    }
    /* the id at 90% (5900) is the one that asks for the next block */
    assert_true(pid_blocks_claim(&b, &id, &ask));
    assert_int_equal(id, 5900);
    assert_true(ask);
    assert_true(pid_blocks_want(&b));
    assert_true(pid_blocks_claim(&b, &id, &ask));
    assert_int_equal(id, 5901);
    assert_false(ask); /* already asked */
    /* the next block arrives ahead of time: held, not asked for again */
    pid_blocks_add(&b, 6000, 1000);
    assert_false(pid_blocks_want(&b));
    assert_int_equal(pid_blocks_available(&b), 98 + 1000);
    for (int64_t i = 5902; i < 7000; i++) {
        assert_true(pid_blocks_claim(&b, &id, &ask));
        assert_int_equal(id, i);
        /* 6900 asks for the block after: the one ahead is in use now */
        assert_int_equal(ask, i == 6900);
    }
}

static void test_exhaustion_waits(void **state)
{
    (void)state;
    struct pid_blocks b;
    pid_blocks_init(&b);
    pid_blocks_add(&b, 0, 10);
    int64_t id;
    bool ask;
    for (int i = 0; i < 10; i++)
        assert_true(pid_blocks_claim(&b, &id, &ask));
    assert_int_equal(id, 9);
    assert_true(pid_blocks_want(&b)); /* asked at 9 (90% of 10) */
    /* out of ids until the next block comes: every claim fails */
    for (int i = 0; i < 3; i++) {
        assert_false(pid_blocks_claim(&b, &id, &ask));
        assert_false(ask);
    }
    assert_int_equal(pid_blocks_available(&b), 0);
    pid_blocks_add(&b, 10, 10);
    assert_true(pid_blocks_claim(&b, &id, &ask));
    assert_int_equal(id, 10);
}

static void test_strictly_increasing(void **state)
{
    (void)state;
    struct pid_blocks b;
    pid_blocks_init(&b);
    int64_t last = -1, next_block = 0, id;
    bool ask;
    int handed = 0;
    /* a controller answering each ask at once with the next block, as
     * blocks of several brokers interleave (gaps between a broker's own
     * blocks) */
    for (int i = 0; i < 10000; i++) {
        if (pid_blocks_want(&b)) {
            pid_blocks_add(&b, next_block, 1000);
            next_block += 3000;
        }
        if (!pid_blocks_claim(&b, &id, &ask))
            continue;
        assert_true(id > last);
        last = id;
        handed++;
    }
    assert_true(handed >= 9990); /* one miss at the start at most */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_claim_asks),
        cmocka_unit_test(test_prefetch_at_90_percent),
        cmocka_unit_test(test_exhaustion_waits),
        cmocka_unit_test(test_strictly_increasing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
