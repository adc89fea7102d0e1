/* util/loopwatch: a pass whose callbacks run longer than the threshold is
 * counted (and logged); passes under it, and every pass when the
 * threshold is 0, are not; the watchers alone do not keep a loop alive.
 * A pass that sleeps (as one blocked on a disk read or a lock would) is
 * a stall blocked, not on CPU; one that computes is one on CPU, not
 * blocked. */
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

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Keeps the CPU busy until this thread has run for ms of CPU time (more
 * wall time on a busy machine). */
static void spin_ms(int ms)
{
    volatile uint64_t x = 0;
    int64_t end = cpu_ns() + (int64_t)ms * 1000000LL;
    while (cpu_ns() < end)
        for (int i = 0; i < 1000; i++)
            x += (uint64_t)i;
}

static int busy_ms;
static int spin; /* spin_ms, not sleep_ms */
static int fired;

static void on_timer(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)t;
    (void)revents;
    fired++;
    if (spin)
        spin_ms(busy_ms);
    else
        sleep_ms(busy_ms);
}

static void on_nothing(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)t;
    (void)revents;
}

/* Runs one timer callback that takes ms (sleeping, or spinning if
 * spinning) under the detector; returns the stalls it added, and in
 * *cpu and *blocked (if not NULL) the stalls on CPU and blocked it added. */
static uint64_t run_pass_as(int ms, int spinning, uint64_t *cpu, uint64_t *blocked)
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
    spin = spinning;
    fired = 0;
    uint64_t before = loopwatch_stalls(), before_cpu = loopwatch_cpu_stalls();
    uint64_t before_blocked = loopwatch_blocked_stalls();
    ev_run(loop, 0); /* returns once the timer is done: the watchers hold no reference */
    assert_int_equal(fired, 1);
    loopwatch_stop(&lw, loop);
    ev_loop_destroy(loop);
    if (cpu)
        *cpu = loopwatch_cpu_stalls() - before_cpu;
    if (blocked)
        *blocked = loopwatch_blocked_stalls() - before_blocked;
    return loopwatch_stalls() - before;
}

static uint64_t run_pass(int ms) { return run_pass_as(ms, 0, NULL, NULL); }

static void test_long_pass_counts(void **state)
{
    (void)state;
    loopwatch_set_threshold_ms(20);
    assert_int_equal(run_pass(60), 1);
}

/* 200 ms asleep is 200 ms of wall time, next to nothing on CPU, and
 * (but for a scheduler slower than 180 ms to wake the test) blocked. */
static void test_sleeping_pass_is_blocked(void **state)
{
    (void)state;
    loopwatch_set_threshold_ms(20);
    uint64_t cpu = 99, blocked = 99;
    assert_int_equal(run_pass_as(200, 0, &cpu, &blocked), 1);
    assert_int_equal(cpu, 0);
    assert_int_equal(blocked, 1);
}

/* 60 ms of CPU time computing is a pass over 20 ms on CPU, however long
 * a busy machine makes it wait for a CPU (which is not blocked). */
static void test_computing_pass_is_on_cpu(void **state)
{
    (void)state;
    loopwatch_set_threshold_ms(20);
    uint64_t cpu = 99, blocked = 99;
    assert_int_equal(run_pass_as(60, 1, &cpu, &blocked), 1);
    assert_int_equal(cpu, 1);
    assert_int_equal(blocked, 0);
}

static int idle_passes;

/* 20 passes that each compute 0.3 ms, then one that sleeps 200 ms. */
static void on_idle(struct ev_loop *loop, ev_idle *w, int revents)
{
    (void)revents;
    if (++idle_passes <= 20) {
        int64_t end = mono_ns() + 300000;
        while (mono_ns() < end)
            ;
        return;
    }
    sleep_ms(200);
    ev_idle_stop(loop, w);
}

/* A pass of a busy loop starts from figures read up to 1 ms before it:
 * the CPU of the short passes before a long sleeping one is not taken
 * for its own (it stays a stall blocked, not on CPU). */
static void test_busy_loop_then_sleep(void **state)
{
    (void)state;
    loopwatch_set_threshold_ms(20);
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    assert_non_null(loop);
    struct loopwatch lw;
    loopwatch_start(&lw, loop, "busy");
    ev_idle idle;
    ev_idle_init(&idle, on_idle);
    ev_idle_start(loop, &idle);
    ev_timer last;
    ev_timer_init(&last, on_nothing, 1.0, 0.);
    ev_timer_start(loop, &last);
    idle_passes = 0;
    uint64_t s0 = loopwatch_stalls(), c0 = loopwatch_cpu_stalls(), b0 = loopwatch_blocked_stalls();
    ev_run(loop, 0);
    loopwatch_stop(&lw, loop);
    ev_loop_destroy(loop);
    assert_int_equal(idle_passes, 21);
    assert_int_equal(loopwatch_stalls() - s0, 1);
    assert_int_equal(loopwatch_cpu_stalls() - c0, 0);
    assert_int_equal(loopwatch_blocked_stalls() - b0, 1);
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
    uint64_t cpu = 99, blocked = 99;
    assert_int_equal(run_pass_as(60, 1, &cpu, &blocked), 0);
    assert_int_equal(cpu, 0);
    assert_int_equal(blocked, 0);
    loopwatch_set_threshold_ms(50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_long_pass_counts),
        cmocka_unit_test(test_sleeping_pass_is_blocked),
        cmocka_unit_test(test_computing_pass_is_on_cpu),
        cmocka_unit_test(test_busy_loop_then_sleep),
        cmocka_unit_test(test_short_pass_does_not),
        cmocka_unit_test(test_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
