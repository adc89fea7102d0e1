/* A small reader-writer lock: 4 bytes instead of pthread_rwlock_t's 56.
 *
 * For the one rwlock every partition log has (struct plog's seg_lock):
 * at 100 000 partitions pthread's 56 bytes are 5.6 MB (issue 12: memory
 * per idle partition). Readers share it, a writer has it alone; readers
 * are preferred, like glibc's default rwlock (a reader gets in while
 * another reader holds it even if a writer waits). One futex word: the
 * low 30 bits count readers, WRITER marks a writer, WAITERS that someone
 * sleeps; a release that leaves the lock free and sees WAITERS clears it
 * and wakes every sleeper, which then race again (the lock guards short
 * in-memory sections, contention is rare). Not recursive; zero is
 * unlocked (SRWLOCK_INIT too), nothing to destroy. Any thread. */
#ifndef SAMSA_UTIL_SRWLOCK_H
#define SAMSA_UTIL_SRWLOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct srwlock {
    _Atomic uint32_t v;
};

#define SRWLOCK_INIT {0}
#define SRW_WRITER 0x80000000u
#define SRW_WAITERS 0x40000000u
#define SRW_READERS 0x3fffffffu

void srw_rdlock_slow(struct srwlock *l);
void srw_wrlock_slow(struct srwlock *l);
void srw_wake(struct srwlock *l);

static inline void srw_init(struct srwlock *l) { atomic_init(&l->v, 0); }

static inline void srw_rdlock(struct srwlock *l)
{
    uint32_t c = atomic_load_explicit(&l->v, memory_order_relaxed);
    if ((c & SRW_WRITER) ||
        !atomic_compare_exchange_weak_explicit(&l->v, &c, c + 1, memory_order_acquire, memory_order_relaxed))
        srw_rdlock_slow(l);
}

static inline void srw_wrlock(struct srwlock *l)
{
    uint32_t c = 0;
    if (!atomic_compare_exchange_strong_explicit(&l->v, &c, SRW_WRITER, memory_order_acquire, memory_order_relaxed))
        srw_wrlock_slow(l);
}

/* Releases either mode: a writer holds it alone, so WRITER set means
 * the caller is the writer. */
static inline void srw_unlock(struct srwlock *l)
{
    uint32_t c = atomic_load_explicit(&l->v, memory_order_relaxed);
    uint32_t n;
    if (c & SRW_WRITER) {
        n = atomic_exchange_explicit(&l->v, 0, memory_order_release);
        if (n & SRW_WAITERS)
            srw_wake(l);
        return;
    }
    n = atomic_fetch_sub_explicit(&l->v, 1, memory_order_release) - 1;
    /* Last reader out while someone sleeps: clear WAITERS and wake them
     * (only if nobody else changed the word meanwhile; whoever did owns
     * the wakeup then). */
    if (n == SRW_WAITERS &&
        atomic_compare_exchange_strong_explicit(&l->v, &n, 0, memory_order_relaxed, memory_order_relaxed))
        srw_wake(l);
}

#endif
