/* util/slock.h: four threads each add 1 to a plain counter 200 000
 * times under one slock (the total is exact only with exclusion, and
 * the contended path sleeps and wakes); trylock fails while held and
 * succeeds once released. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <sched.h>

#include "util/slock.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exclusion),
        cmocka_unit_test(test_trylock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
