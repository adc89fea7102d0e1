#include "util/loopwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/slog.h"

static _Atomic int64_t threshold_ns = 50 * 1000000LL;
static _Atomic uint64_t stalls, cpu_stalls, blocked_stalls;

void loopwatch_set_threshold_ms(int64_t ms) { atomic_store(&threshold_ns, ms > 0 ? ms * 1000000LL : 0); }

uint64_t loopwatch_stalls(void) { return atomic_load(&stalls); }

uint64_t loopwatch_cpu_stalls(void) { return atomic_load(&cpu_stalls); }

uint64_t loopwatch_blocked_stalls(void) { return atomic_load(&blocked_stalls); }

/* The calling thread's time on a CPU and waiting for one, in ns. The CPU
 * time from CLOCK_THREAD_CPUTIME_ID, which brings the scheduler's count
 * up to date first (/proc's figure may be a tick behind, 4 ms at HZ=250:
 * as much as the threshold); the wait from /proc/thread-self/schedstat
 * ("run_ns run_delay_ns slices", opened by loopwatch_start on the loop's
 * thread), -1 without it (a kernel without CONFIG_SCHED_INFO). Two system
 * calls, neither in the vDSO: 3-4 us on this project's VMs, which read
 * at every pass was 5-8% of a replica fetcher's CPU (its passes are many
 * and small), so a pass starts from the figures read at most
 * BASELINE_NS before it (see on_check). */
#define BASELINE_NS 1000000LL

static void thread_times(const struct loopwatch *lw, int64_t *cpu, int64_t *delay)
{
    struct timespec ts;
    *cpu = clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0 ? (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec : 0;
    *delay = -1;
    if (lw->schedstat_fd >= 0) {
        char b[96];
        ssize_t n = pread(lw->schedstat_fd, b, sizeof b - 1, 0);
        if (n > 0) {
            b[n] = '\0';
            char *end;
            (void)strtoll(b, &end, 10); /* run_ns: the CPU time above */
            if (end != b)
                *delay = strtoll(end, NULL, 10);
        }
    }
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
    int64_t now = clock_mono_ns();
    lw->pass_start_ns = now;
    /* Figures read up to BASELINE_NS ago do as the pass's start: what the
     * thread spent on a CPU or waiting for one since then (at most that
     * much) is counted to the pass, an error under the threshold's 5 ms
     * and more, for at most one pair of reads per BASELINE_NS of a busy
     * loop instead of one per pass. */
    if (now - lw->read_ns >= BASELINE_NS) {
        thread_times(lw, &lw->pass_start_cpu_ns, &lw->pass_start_delay_ns);
        lw->read_ns = now;
    }
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
    int64_t cpu, delay;
    thread_times(lw, &cpu, &delay);
    /* fresh figures: the next pass may start from them */
    lw->read_ns = clock_mono_ns();
    int64_t start_cpu = lw->pass_start_cpu_ns, start_delay = lw->pass_start_delay_ns;
    lw->pass_start_cpu_ns = cpu;
    lw->pass_start_delay_ns = delay;
    cpu -= start_cpu;
    if (cpu < 0)
        cpu = 0;
    if (cpu > d)
        cpu = d; /* two clocks */
    /* The rest of the wall time the thread spent off a CPU: waiting for
     * one (run_delay), or asleep in the kernel (a disk read, a lock, a
     * page fault's I/O, dirty-page throttling in write()). */
    int64_t blocked = -1;
    if (delay >= 0 && start_delay >= 0) {
        delay -= start_delay;
        if (delay < 0)
            delay = 0;
        if (delay > d - cpu)
            delay = d - cpu;
        blocked = d - cpu - delay;
    } else {
        delay = -1;
    }
    atomic_fetch_add(&stalls, 1);
    lw->slow++;
    if (d > lw->longest_ns)
        lw->longest_ns = d;
    if (cpu > t) {
        atomic_fetch_add(&cpu_stalls, 1);
        lw->slow_cpu++;
    }
    if (blocked > t) {
        atomic_fetch_add(&blocked_stalls, 1);
        lw->slow_blocked++;
    }
    if (cpu > lw->longest_cpu_ns)
        lw->longest_cpu_ns = cpu;
    if (blocked > lw->longest_blocked_ns)
        lw->longest_blocked_ns = blocked;
    int64_t now = clock_mono_ms();
    if (now < lw->next_line_ms)
        return;
    lw->next_line_ms = now + 10000;
    char split[96];
    if (delay >= 0)
        snprintf(split, sizeof split, "%.1f ms on CPU, %.1f ms waiting for a CPU, %.1f ms blocked", cpu / 1e6,
                 delay / 1e6, blocked / 1e6);
    else
        snprintf(split, sizeof split, "%.1f ms on CPU", cpu / 1e6);
    /* tools/bench/latency_bench.py parses these two lines */
    if (lw->slow == 1)
        slog_warn("event loop %s: one pass ran its callbacks for %.1f ms (%s; samsa.loop.stall.warn.ms is %lld); "
                  "everything else on this loop waited meanwhile",
                  lw->name, d / 1e6, split, (long long)(t / 1000000));
    else
        slog_warn("event loop %s: one pass ran its callbacks for %.1f ms (%s); %lld passes over %lld ms since the "
                  "last such line, %lld of them on CPU, %lld blocked (the longest %.1f ms, %.1f ms on CPU, "
                  "%.1f ms blocked)",
                  lw->name, d / 1e6, split, (long long)lw->slow, (long long)(t / 1000000), (long long)lw->slow_cpu,
                  (long long)lw->slow_blocked, lw->longest_ns / 1e6, lw->longest_cpu_ns / 1e6,
                  lw->longest_blocked_ns / 1e6);
    lw->slow = lw->slow_cpu = lw->slow_blocked = 0;
    lw->longest_ns = lw->longest_cpu_ns = lw->longest_blocked_ns = 0;
}

void loopwatch_start(struct loopwatch *lw, struct ev_loop *loop, const char *name)
{
    lw->pass_start_ns = 0;
    lw->pass_start_cpu_ns = 0;
    lw->pass_start_delay_ns = -1;
    lw->read_ns = INT64_MIN / 2;
    lw->next_line_ms = 0;
    lw->slow = lw->slow_cpu = lw->slow_blocked = 0;
    lw->longest_ns = lw->longest_cpu_ns = lw->longest_blocked_ns = 0;
    /* "thread-self" names the calling thread: the descriptor keeps
     * reading this thread's figures whichever thread reads it. */
    lw->schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
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
    if (lw->schedstat_fd >= 0)
        close(lw->schedstat_fd);
    lw->schedstat_fd = -1;
}
