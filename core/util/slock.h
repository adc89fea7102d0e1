/* A small mutex: 4 bytes instead of pthread_mutex_t's 40.
 *
 * For locks that exist once per partition (a log has nine, a partition
 * one): at 100 000 partitions pthread's 40 bytes are 36 MB, most of an
 * idle partition's memory. This is the three-state futex mutex of
 * Drepper's "Futexes Are Tricky" (0 free, 1 locked, 2 locked with
 * waiters): an uncontended lock and unlock are one atomic operation
 * each, a contended one sleeps in the kernel. Not recursive, no
 * condition variables, no robustness; lock order rules are the
 * owner's, as with any mutex. Zero-initialised is unlocked (SLOCK_INIT
 * too), so nothing needs destroying. Any thread. */
#ifndef SAMSA_UTIL_SLOCK_H
#define SAMSA_UTIL_SLOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct slock {
    _Atomic uint32_t v;
};

#define SLOCK_INIT {0}

void slock_lock_slow(struct slock *l, uint32_t seen);
void slock_wake(struct slock *l);

static inline void slock_init(struct slock *l) { atomic_init(&l->v, 0); }

static inline void slock_lock(struct slock *l)
{
    uint32_t c = 0;
    if (!atomic_compare_exchange_strong_explicit(&l->v, &c, 1, memory_order_acquire, memory_order_relaxed))
        slock_lock_slow(l, c);
}

/* True when taken. */
static inline bool slock_trylock(struct slock *l)
{
    uint32_t c = 0;
    return atomic_compare_exchange_strong_explicit(&l->v, &c, 1, memory_order_acquire, memory_order_relaxed);
}

static inline void slock_unlock(struct slock *l)
{
    if (atomic_exchange_explicit(&l->v, 0, memory_order_release) == 2)
        slock_wake(l);
}

#endif
