#include "util/loopwatch.h"

#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "util/clock.h"
#include "util/slog.h"

static _Atomic int64_t threshold_ns = 50 * 1000000LL;
static _Atomic uint64_t stalls, cpu_stalls;

void loopwatch_set_threshold_ms(int64_t ms) { atomic_store(&threshold_ns, ms > 0 ? ms * 1000000LL : 0); }

uint64_t loopwatch_stalls(void) { return atomic_load(&stalls); }

uint64_t loopwatch_cpu_stalls(void) { return atomic_load(&cpu_stalls); }

/* The calling thread's CPU time (user + system). Not in the vDSO: a
 * system call (1-2 us on this project's VMs), so one per pass, at its
 * start; the end is read only for a pass already long in wall time. */
static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* libev runs check watchers right after the poll, before the callbacks of
 * what it found (they have the highest priority here), and prepare
 * watchers right before the next poll: the time between the two is the
 * pass. */
static void on_check(struct ev_loop *loop, ev_check *w, int revents)
{
    (void)loop;
    (void)revents;
    struct loopwatch *lw = w->data;
    if (!atomic_load_explicit(&threshold_ns, memory_order_relaxed)) {
        lw->pass_start_ns = 0;
        return;
    }
    lw->pass_start_ns = clock_mono_ns();
    lw->pass_start_cpu_ns = thread_cpu_ns();
}

static void on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
    (void)loop;
    (void)revents;
    struct loopwatch *lw = w->data;
    if (!lw->pass_start_ns)
        return;
    int64_t t = atomic_load_explicit(&threshold_ns, memory_order_relaxed);
    int64_t d = clock_mono_ns() - lw->pass_start_ns;
    lw->pass_start_ns = 0;
    if (!t || d <= t)
        return;
    int64_t cpu = lw->pass_start_cpu_ns ? thread_cpu_ns() - lw->pass_start_cpu_ns : 0;
    if (cpu < 0)
        cpu = 0;
    atomic_fetch_add(&stalls, 1);
    lw->slow++;
    if (d > lw->longest_ns)
        lw->longest_ns = d;
    if (cpu > t) {
        atomic_fetch_add(&cpu_stalls, 1);
        lw->slow_cpu++;
    }
    if (cpu > lw->longest_cpu_ns)
        lw->longest_cpu_ns = cpu;
    int64_t now = clock_mono_ms();
    if (now < lw->next_line_ms)
        return;
    lw->next_line_ms = now + 10000;
    /* tools/bench/latency_bench.py parses these two lines */
    if (lw->slow == 1)
        slog_warn("event loop %s: one pass ran its callbacks for %.1f ms, %.1f ms of it on CPU "
                  "(samsa.loop.stall.warn.ms is %lld); everything else on this loop waited meanwhile",
                  lw->name, d / 1e6, cpu / 1e6, (long long)(t / 1000000));
    else
        slog_warn("event loop %s: one pass ran its callbacks for %.1f ms, %.1f ms of it on CPU; %lld passes over "
                  "%lld ms since the last such line, %lld of them on CPU (the longest %.1f ms, %.1f ms on CPU)",
                  lw->name, d / 1e6, cpu / 1e6, (long long)lw->slow, (long long)(t / 1000000),
                  (long long)lw->slow_cpu, lw->longest_ns / 1e6, lw->longest_cpu_ns / 1e6);
    lw->slow = 0;
    lw->slow_cpu = 0;
    lw->longest_ns = 0;
    lw->longest_cpu_ns = 0;
}

void loopwatch_start(struct loopwatch *lw, struct ev_loop *loop, const char *name)
{
    lw->pass_start_ns = 0;
    lw->pass_start_cpu_ns = 0;
    lw->next_line_ms = 0;
    lw->slow = 0;
    lw->slow_cpu = 0;
    lw->longest_ns = 0;
    lw->longest_cpu_ns = 0;
    snprintf(lw->name, sizeof lw->name, "%s", name);
    ev_check_init(&lw->check, on_check);
    lw->check.data = lw;
    ev_set_priority(&lw->check, EV_MAXPRI);
    ev_check_start(loop, &lw->check);
    ev_unref(loop); /* the watchers alone must not keep the loop running */
    ev_prepare_init(&lw->prepare, on_prepare);
    lw->prepare.data = lw;
    ev_set_priority(&lw->prepare, EV_MINPRI);
    ev_prepare_start(loop, &lw->prepare);
    ev_unref(loop);
}

void loopwatch_stop(struct loopwatch *lw, struct ev_loop *loop)
{
    ev_ref(loop);
    ev_check_stop(loop, &lw->check);
    ev_ref(loop);
    ev_prepare_stop(loop, &lw->prepare);
}
