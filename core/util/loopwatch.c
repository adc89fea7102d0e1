#include "util/loopwatch.h"

#include <stdatomic.h>
#include <stdio.h>

#include "util/clock.h"
#include "util/slog.h"

static _Atomic int64_t threshold_ns = 50 * 1000000LL;
static _Atomic uint64_t stalls;

void loopwatch_set_threshold_ms(int64_t ms) { atomic_store(&threshold_ns, ms > 0 ? ms * 1000000LL : 0); }

uint64_t loopwatch_stalls(void) { return atomic_load(&stalls); }

/* libev runs check watchers right after the poll, before the callbacks of
 * what it found (they have the highest priority here), and prepare
 * watchers right before the next poll: the time between the two is the
 * pass. */
static void on_check(struct ev_loop *loop, ev_check *w, int revents)
{
    (void)loop;
    (void)revents;
    struct loopwatch *lw = w->data;
    lw->pass_start_ns = atomic_load_explicit(&threshold_ns, memory_order_relaxed) ? clock_mono_ns() : 0;
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
    atomic_fetch_add(&stalls, 1);
    lw->slow++;
    if (d > lw->longest_ns)
        lw->longest_ns = d;
    int64_t now = clock_mono_ms();
    if (now < lw->next_line_ms)
        return;
    lw->next_line_ms = now + 10000;
    if (lw->slow == 1)
        slog_warn("event loop %s: one pass ran its callbacks for %.1f ms (samsa.loop.stall.warn.ms is %lld); "
                  "everything else on this loop waited meanwhile",
                  lw->name, d / 1e6, (long long)(t / 1000000));
    else
        slog_warn("event loop %s: one pass ran its callbacks for %.1f ms, %lld passes over %lld ms since the last "
                  "such line (the longest %.1f ms)",
                  lw->name, d / 1e6, (long long)lw->slow, (long long)(t / 1000000), lw->longest_ns / 1e6);
    lw->slow = 0;
    lw->longest_ns = 0;
}

void loopwatch_start(struct loopwatch *lw, struct ev_loop *loop, const char *name)
{
    lw->pass_start_ns = 0;
    lw->next_line_ms = 0;
    lw->slow = 0;
    lw->longest_ns = 0;
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
