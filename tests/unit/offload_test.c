/* The offload thread (net/offload.c): jobs run in order off the calling
 * thread, offload_done turns true once run returned (its writes then
 * visible), and free_arg runs exactly once, whether the submitter
 * releases before or after the job ran. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "net/offload.h"
#include "util/clock.h"

struct arg {
    int order;        /* written by run */
    pthread_t ran_on; /* written by run */
    atomic_int *freed;
    pthread_mutex_t *gate; /* run waits on it when set */
};

static atomic_int counter;

static void run(void *p)
{
    struct arg *a = p;
    if (a->gate) {
        pthread_mutex_lock(a->gate);
        pthread_mutex_unlock(a->gate);
    }
    a->ran_on = pthread_self();
    a->order = atomic_fetch_add(&counter, 1) + 1;
}

static void free_arg(void *p)
{
    struct arg *a = p;
    atomic_fetch_add(a->freed, 1);
    free(a);
}

static bool wait_done(struct offload_job *j)
{
    int64_t end = clock_mono_ms() + 5000;
    while (!offload_done(j) && clock_mono_ms() < end)
        usleep(1000);
    return offload_done(j);
}

static void test_in_order_off_thread(void **state)
{
    (void)state;
    atomic_int freed = 0;
    struct offload_job *j[8];
    struct arg *a[8];
    for (int i = 0; i < 8; i++) {
        a[i] = calloc(1, sizeof *a[i]);
        a[i]->freed = &freed;
        j[i] = offload_submit(NULL, run, free_arg, a[i]);
        assert_int_not_equal(offload_key(j[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        assert_true(wait_done(j[i]));
        assert_false(pthread_equal(a[i]->ran_on, pthread_self()));
        if (i)
            assert_int_equal(a[i]->order, a[i - 1]->order + 1);
    }
    assert_int_equal(atomic_load(&freed), 0); /* the submitter still holds them */
    for (int i = 0; i < 8; i++)
        offload_release(j[i]);
    assert_int_equal(atomic_load(&freed), 8);
}

static void test_released_before_it_ran(void **state)
{
    (void)state;
    atomic_int freed = 0;
    pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&gate);
    struct arg *a = calloc(1, sizeof *a);
    a->freed = &freed;
    a->gate = &gate;
    struct offload_job *j = offload_submit(NULL, run, free_arg, a);
    offload_release(j); /* a request that closed while its check waits */
    assert_int_equal(atomic_load(&freed), 0);
    pthread_mutex_unlock(&gate);
    int64_t end = clock_mono_ms() + 5000;
    while (atomic_load(&freed) == 0 && clock_mono_ms() < end)
        usleep(1000);
    assert_int_equal(atomic_load(&freed), 1);
    pthread_mutex_destroy(&gate);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_order_off_thread),
        cmocka_unit_test(test_released_before_it_ran),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
