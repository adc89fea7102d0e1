#include "util/slock.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

void slock_lock_slow(struct slock *l, uint32_t c)
{
    /* Mark "locked with waiters" and sleep until an unlock hands over;
     * whoever takes it from here leaves 2, so its unlock wakes the next. */
    if (c != 2)
        c = atomic_exchange_explicit(&l->v, 2, memory_order_acquire);
    while (c != 0) {
        syscall(SYS_futex, &l->v, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
        c = atomic_exchange_explicit(&l->v, 2, memory_order_acquire);
    }
}

void slock_wake(struct slock *l) { syscall(SYS_futex, &l->v, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0); }

/* ---- srwlock (util/srwlock.h) ---- */

#include "util/srwlock.h"

#include <limits.h>

void srw_wake(struct srwlock *l) { syscall(SYS_futex, &l->v, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0); }

/* Sleeps while c (the word seen) still has WAITERS set; c must have it. */
static void srw_sleep(struct srwlock *l, uint32_t c) { syscall(SYS_futex, &l->v, FUTEX_WAIT_PRIVATE, c, NULL, NULL, 0); }

void srw_rdlock_slow(struct srwlock *l)
{
    uint32_t c = atomic_load_explicit(&l->v, memory_order_relaxed);
    for (;;) {
        if (!(c & SRW_WRITER)) {
            if (atomic_compare_exchange_weak_explicit(&l->v, &c, c + 1, memory_order_acquire, memory_order_relaxed))
                return;
            continue;
        }
        if (!(c & SRW_WAITERS) &&
            !atomic_compare_exchange_weak_explicit(&l->v, &c, c | SRW_WAITERS, memory_order_relaxed,
                                                   memory_order_relaxed))
            continue;
        srw_sleep(l, c | SRW_WAITERS);
        c = atomic_load_explicit(&l->v, memory_order_relaxed);
    }
}

void srw_wrlock_slow(struct srwlock *l)
{
    uint32_t c = atomic_load_explicit(&l->v, memory_order_relaxed);
    for (;;) {
        if (!(c & (SRW_WRITER | SRW_READERS))) {
            /* Free (perhaps WAITERS set): take it and keep WAITERS, so
             * this writer's release wakes the others. */
            if (atomic_compare_exchange_weak_explicit(&l->v, &c, c | SRW_WRITER, memory_order_acquire,
                                                      memory_order_relaxed))
                return;
            continue;
        }
        if (!(c & SRW_WAITERS) &&
            !atomic_compare_exchange_weak_explicit(&l->v, &c, c | SRW_WAITERS, memory_order_relaxed,
                                                   memory_order_relaxed))
            continue;
        srw_sleep(l, c | SRW_WAITERS);
        c = atomic_load_explicit(&l->v, memory_order_relaxed);
    }
}
