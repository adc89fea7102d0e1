/* util/loopwatch: a pass whose callbacks run longer than the threshold is
 * counted (and logged); passes under it, and every pass when the
 * threshold is 0, are not; the watchers alone do not keep a loop alive. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>
#include <ev.h>

#include "util/loopwatch.h"

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static int busy_ms;
static int fired;

static void on_timer(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)t;
    (void)revents;
    fired++;
    sleep_ms(busy_ms);
}

static void on_nothing(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)t;
    (void)revents;
}

/* Runs one timer callback that takes ms under the detector; returns the
 * stalls it added. */
static uint64_t run_pass(int ms)
{
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    assert_non_null(loop);
    struct loopwatch lw;
    loopwatch_start(&lw, loop, "test");
    ev_timer t, last;
    ev_timer_init(&t, on_timer, 0.001, 0.);
    ev_timer_start(loop, &t);
    /* A pass is measured up to the next poll: a later timer keeps one. */
    ev_timer_init(&last, on_nothing, 0.3, 0.);
    ev_timer_start(loop, &last);
    busy_ms = ms;
    fired = 0;
    uint64_t before = loopwatch_stalls();
    ev_run(loop, 0); /* returns once the timer is done: the watchers hold no reference */
    assert_int_equal(fired, 1);
    loopwatch_stop(&lw, loop);
    ev_loop_destroy(loop);
    return loopwatch_stalls() - before;
}

static void test_long_pass_counts(void **state)
{
    (void)state;
    loopwatch_set_threshold_ms(20);
    assert_int_equal(run_pass(60), 1);
}

static void test_short_pass_does_not(void **state)
{
    (void)state;
    loopwatch_set_threshold_ms(200);
    assert_int_equal(run_pass(5), 0);
}

static void test_off(void **state)
{
    (void)state;
    loopwatch_set_threshold_ms(0);
    assert_int_equal(run_pass(60), 0);
    loopwatch_set_threshold_ms(50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_long_pass_counts),
        cmocka_unit_test(test_short_pass_does_not),
        cmocka_unit_test(test_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
