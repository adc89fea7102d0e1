/* The offload thread. See offload.h. */
#include "net/offload.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "util/buf.h"
#include "util/slog.h"
#include "util/thread.h"

struct offload_job {
    void (*run)(void *arg);
    void (*free_arg)(void *arg);
    void *arg;
    struct park_hub *hub;
    atomic_bool done;
    atomic_int refs; /* the submitter's and the thread's */
    struct offload_job *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static struct offload_job *head, *tail;
static bool running;

static void unref(struct offload_job *j)
{
    if (atomic_fetch_sub_explicit(&j->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (j->free_arg)
        j->free_arg(j->arg);
    free(j);
}

static void finish(struct offload_job *j)
{
    j->run(j->arg);
    atomic_store_explicit(&j->done, true, memory_order_release);
    /* the key is the job's address: notify before the last reference
     * can go, so the address is not reused meanwhile (a reuse would only
     * cost a spurious wake-up anyway) */
    park_notify(j->hub, offload_key(j));
    unref(j);
}

static void *offload_main(void *unused)
{
    (void)unused;
    thread_set_name("samsa-offload");
    pthread_mutex_lock(&lock);
    for (;;) {
        while (!head)
            pthread_cond_wait(&cond, &lock);
        struct offload_job *j = head;
        head = j->next;
        if (!head)
            tail = NULL;
        pthread_mutex_unlock(&lock);
        finish(j);
        pthread_mutex_lock(&lock);
    }
    return NULL;
}

struct offload_job *offload_submit(struct park_hub *hub, void (*run)(void *arg), void (*free_arg)(void *arg),
                                   void *arg)
{
    struct offload_job *j = xcalloc(1, sizeof *j);
    j->run = run;
    j->free_arg = free_arg;
    j->arg = arg;
    j->hub = hub;
    atomic_init(&j->done, false);
    atomic_init(&j->refs, 2);
    pthread_mutex_lock(&lock);
    if (!running) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        running = pthread_create(&t, &a, offload_main, NULL) == 0;
        pthread_attr_destroy(&a);
        if (!running)
            slog_warn("offload: cannot start its thread; blocking checks run on the calling thread");
    }
    if (running) {
        if (tail)
            tail->next = j;
        else
            head = j;
        tail = j;
        pthread_cond_signal(&cond);
    }
    pthread_mutex_unlock(&lock);
    if (!running)
        finish(j);
    return j;
}

park_key_t offload_key(const struct offload_job *j) { return park_key_object(j); }

bool offload_done(const struct offload_job *j) { return atomic_load_explicit(&j->done, memory_order_acquire); }

void offload_release(struct offload_job *j)
{
    if (j)
        unref(j);
}
