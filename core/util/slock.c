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
