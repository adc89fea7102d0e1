/* util/slock.h: four threads each add 1 to a plain counter 200 000
 * times under one slock (the total is exact only with exclusion, and
 * the contended path sleeps and wakes); trylock fails while held and
 * succeeds once released. util/srwlock.h: two writers keep two plain
 * counters equal under the write lock while three readers check under
 * the read lock (a bounded number of times) that they never see them
 * differ; the writers' totals are exact and the lock word is 0 at the
 * end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "util/slock.h"
#include "util/srwlock.h"

enum { THREADS = 4, ROUNDS = 200000 };

static struct slock lock = SLOCK_INIT;
static long counter;

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        slock_lock(&lock);
        long v = counter;
        /* Widen the window a race would need. */
        if (i % 1024 == 0)
            sched_yield();
        counter = v + 1;
        slock_unlock(&lock);
    }
    return NULL;
}

static void test_exclusion(void **state)
{
    (void)state;
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, worker, NULL), 0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    assert_int_equal(counter, (long)THREADS * ROUNDS);
    assert_int_equal(atomic_load(&lock.v), 0);
}

static void test_trylock(void **state)
{
    (void)state;
    struct slock l;
    slock_init(&l);
    assert_true(slock_trylock(&l));
    assert_false(slock_trylock(&l));
    slock_unlock(&l);
    assert_true(slock_trylock(&l));
    slock_unlock(&l);
    slock_lock(&l);
    assert_false(slock_trylock(&l));
    slock_unlock(&l);
    assert_int_equal(atomic_load(&l.v), 0);
}

enum { WRITERS = 2, READERS = 3, WROUNDS = 100000 };

static struct srwlock rw = SRWLOCK_INIT;
static long rw_a, rw_b;
static atomic_int writers_left;
static atomic_long torn_reads, reads;

static void *rw_writer(void *arg)
{
    (void)arg;
    for (int i = 0; i < WROUNDS; i++) {
        srw_wrlock(&rw);
        long a = rw_a;
        if (i % 1024 == 0)
            sched_yield();
        rw_a = a + 1;
        rw_b = rw_b + 1;
        srw_unlock(&rw);
    }
    atomic_fetch_sub(&writers_left, 1);
    return NULL;
}

/* A bounded number of reads: the lock prefers readers (as glibc's
 * default rwlock does), so readers that always overlap would keep the
 * writers out. */
static void *rw_reader(void *arg)
{
    (void)arg;
    for (int i = 0; i < WROUNDS && atomic_load(&writers_left) > 0; i++) {
        srw_rdlock(&rw);
        long a = rw_a;
        if (i % 64 == 0)
            sched_yield();
        long b = rw_b;
        srw_unlock(&rw);
        if (a != b)
            atomic_fetch_add(&torn_reads, 1);
        atomic_fetch_add(&reads, 1);
        if (i % 16 == 0)
            sched_yield();
    }
    return NULL;
}

static void test_rwlock(void **state)
{
    (void)state;
    pthread_t t[WRITERS + READERS];
    atomic_store(&writers_left, WRITERS);
    for (int i = 0; i < WRITERS + READERS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, i < WRITERS ? rw_writer : rw_reader, NULL), 0);
    for (int i = 0; i < WRITERS + READERS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    assert_int_equal(rw_a, (long)WRITERS * WROUNDS);
    assert_int_equal(rw_b, (long)WRITERS * WROUNDS);
    assert_int_equal(atomic_load(&torn_reads), 0);
    assert_true(atomic_load(&reads) > 0);
    assert_int_equal(atomic_load(&rw.v), 0);
    /* Two readers at once; then a writer alone. */
    srw_rdlock(&rw);
    srw_rdlock(&rw);
    assert_int_equal(atomic_load(&rw.v), 2);
    srw_unlock(&rw);
    srw_unlock(&rw);
    srw_wrlock(&rw);
    assert_int_equal(atomic_load(&rw.v), SRW_WRITER);
    srw_unlock(&rw);
    assert_int_equal(atomic_load(&rw.v), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exclusion),
        cmocka_unit_test(test_trylock),
        cmocka_unit_test(test_rwlock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
