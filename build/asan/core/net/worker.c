#include "net/worker.h"

#include <stdlib.h>

#include "net/conn.h"
#include "util/slog.h"

static void park_timeout(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    struct delayed *d = t->data;
    d->try_complete(d, true);
    worker_unpark(d);
}

void worker_park(struct worker *w, struct delayed *d, int64_t timeout_ms)
{
    d->w = w;
    d->parked = true;
    d->prev = &w->parked;
    d->next = w->parked.next;
    w->parked.next->prev = d;
    w->parked.next = d;
    ev_timer_init(&d->timer, park_timeout, (double)(timeout_ms > 0 ? timeout_ms : 0) / 1000.0, 0.);
    d->timer.data = d;
    ev_timer_start(w->loop, &d->timer);
    atomic_fetch_add(&w->nparked, 1);
    /* Data may have arrived between the caller's own check and the
     * counter above, when notifiers still saw nothing parked here: look
     * once more so that wakeup is not lost. */
    if (d->try_complete(d, false))
        worker_unpark(d);
}

void worker_unpark(struct delayed *d)
{
    if (!d->parked)
        return;
    d->parked = false;
    d->prev->next = d->next;
    d->next->prev = d->prev;
    d->prev = d->next = NULL;
    ev_timer_stop(d->w->loop, &d->timer);
    atomic_fetch_sub(&d->w->nparked, 1);
}

/* New data somewhere: give every parked operation a chance to finish. */
void worker_check_parked(struct worker *w)
{
    struct delayed *d = w->parked.next;
    while (d != &w->parked) {
        struct delayed *next = d->next;
        if (d->try_complete(d, false))
            worker_unpark(d);
        d = next;
    }
}
