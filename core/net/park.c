/* Parking (see park.h). Two indexes of the same watches:
 *   - per worker (park_sink.local, worker thread only): key -> the
 *     watches of that worker's parked requests;
 *   - shared (park_hub.shards, under a shard lock): key -> a bit mask of
 *     the workers having at least one watch on it.
 * A worker sets its bit when its first watch of a key appears and clears
 * it when its last one goes, so a notifier reads one mask and posts the
 * key to exactly the workers that care; the worker then runs exactly the
 * requests watching it. The cost of an event is independent of how many
 * other requests are parked. */
#include "net/park.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "net/conn.h"
#include "net/request.h"
#include "net/worker.h"
#include "util/buf.h"
#include "util/hmap.h"
#include "util/slog.h"

#define NSHARDS 64

struct park_watch {
    park_key_t key;
    struct parked *owner;
    struct park_watch *owner_next;  /* the owner's watches */
    struct pk_entry *entry;         /* NULL while not linked */
    struct park_watch *prev, *next; /* the entry's watches */
};

/* One key on one worker: its watches. Heap, owned by the sink's map. */
struct pk_entry {
    park_key_t key;
    struct park_watch *head;
};

/* One key's interested workers. Heap, owned by its shard's map. */
struct interest {
    uint64_t mask;
};

struct park_shard {
    pthread_mutex_t mu;
    struct hmap keys; /* park_key_t -> struct interest */
    /* keys with interest (changed under mu): a notifier that reads 0
     * posts nothing without taking mu (see park_notify) */
    atomic_long nkeys;
};

struct park_sink {
    struct park_hub *hub;
    int id;
    struct ev_loop *loop;
    ev_async async;
    /* posted keys, from any thread */
    pthread_mutex_t mu;
    bool attached;
    /* Notifiers between deciding to wake the worker (under mu) and the
     * ev_async_send they make after unlocking; detach waits for them. */
    atomic_int senders;
    park_key_t *posted;
    size_t nposted, cap;
    /* worker thread only */
    struct hmap local; /* park_key_t -> struct pk_entry */
    struct parked *ready_head, *ready_tail;
    park_key_t *draining;
    size_t draining_cap;
};

struct park_hub {
    struct park_shard shards[NSHARDS];
    struct park_sink sinks[PARK_MAX_WORKERS];
    atomic_uint_least64_t notifies, posts, wakeups, expiries;
    atomic_int_least64_t parked;
};

struct park_hub *park_hub_create(void)
{
    struct park_hub *h = xcalloc(1, sizeof *h);
    for (int i = 0; i < NSHARDS; i++) {
        pthread_mutex_init(&h->shards[i].mu, NULL);
        hmap_init(&h->shards[i].keys);
        atomic_init(&h->shards[i].nkeys, 0);
    }
    for (int i = 0; i < PARK_MAX_WORKERS; i++) {
        struct park_sink *s = &h->sinks[i];
        s->hub = h;
        s->id = i;
        pthread_mutex_init(&s->mu, NULL);
        hmap_init(&s->local);
    }
    return h;
}

static void free_values(struct hmap *m)
{
    size_t it = 0;
    const void *k;
    size_t kl;
    void *v;
    while (hmap_next(m, &it, &k, &kl, &v))
        free(v);
    hmap_free(m);
}

void park_hub_free(struct park_hub *h)
{
    if (!h)
        return;
    for (int i = 0; i < NSHARDS; i++) {
        free_values(&h->shards[i].keys);
        pthread_mutex_destroy(&h->shards[i].mu);
    }
    for (int i = 0; i < PARK_MAX_WORKERS; i++) {
        struct park_sink *s = &h->sinks[i];
        free_values(&s->local);
        free(s->posted);
        free(s->draining);
        pthread_mutex_destroy(&s->mu);
    }
    free(h);
}

static struct park_shard *shard_of(struct park_hub *h, park_key_t key)
{
    return &h->shards[(key >> 7) % NSHARDS];
}

static void interest_set(struct park_sink *s, park_key_t key, bool on)
{
    struct park_shard *sh = shard_of(s->hub, key);
    uint64_t bit = (uint64_t)1 << s->id;
    pthread_mutex_lock(&sh->mu);
    struct interest *in = hmap_get(&sh->keys, &key, sizeof key);
    if (on) {
        if (!in) {
            in = xcalloc(1, sizeof *in);
            hmap_put(&sh->keys, &key, sizeof key, in);
            atomic_fetch_add(&sh->nkeys, 1);
        }
        in->mask |= bit;
    } else if (in) {
        in->mask &= ~bit;
        if (!in->mask) {
            hmap_del(&sh->keys, &key, sizeof key);
            free(in);
            atomic_fetch_sub(&sh->nkeys, 1);
        }
    }
    pthread_mutex_unlock(&sh->mu);
    /* Pairs with park_notify's fence: either its notifier sees this key's
     * count, or the state check that follows (the caller's) sees what the
     * notifier published before notifying. */
    if (on)
        atomic_thread_fence(memory_order_seq_cst);
}

/* ------------------------------------------------------------------ */
/* watches (worker thread)                                             */

static void link_watch(struct park_sink *s, struct park_watch *w)
{
    struct pk_entry *e = hmap_get(&s->local, &w->key, sizeof w->key);
    if (!e) {
        e = xcalloc(1, sizeof *e);
        e->key = w->key;
        hmap_put(&s->local, &w->key, sizeof w->key, e);
        /* before anyone could have checked the state on our behalf */
        interest_set(s, w->key, true);
    }
    w->entry = e;
    w->prev = NULL;
    w->next = e->head;
    if (e->head)
        e->head->prev = w;
    e->head = w;
}

static void unlink_watch(struct park_sink *s, struct park_watch *w)
{
    struct pk_entry *e = w->entry;
    if (!e)
        return;
    if (w->prev)
        w->prev->next = w->next;
    else
        e->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->entry = NULL;
    w->prev = w->next = NULL;
    if (!e->head) {
        hmap_del(&s->local, &e->key, sizeof e->key);
        interest_set(s, e->key, false);
        free(e);
    }
}

static void ready_unlink(struct park_sink *s, struct parked *p)
{
    if (!p->ready)
        return;
    if (p->ready_prev)
        p->ready_prev->ready_next = p->ready_next;
    else
        s->ready_head = p->ready_next;
    if (p->ready_next)
        p->ready_next->ready_prev = p->ready_prev;
    else
        s->ready_tail = p->ready_prev;
    p->ready_prev = p->ready_next = NULL;
    p->ready = false;
}

static void ready_push(struct park_sink *s, struct parked *p)
{
    if (p->ready || !p->active)
        return;
    p->ready = true;
    p->ready_next = NULL;
    p->ready_prev = s->ready_tail;
    if (s->ready_tail)
        s->ready_tail->ready_next = p;
    else
        s->ready_head = p;
    s->ready_tail = p;
}

/* Runs try_complete with the connection held: a completion that closes
 * it (req_close) defers the teardown until after this call, so neither
 * the request nor p is freed under us. */
static void run(struct parked *p, bool expired)
{
    struct park_hub *h = p->sink->hub;
    struct conn *c = p->req ? p->req->conn : NULL;
    if (c)
        conn_hold(c);
    atomic_fetch_add_explicit(expired ? &h->expiries : &h->wakeups, 1, memory_order_relaxed);
    bool done = p->try_complete(p, expired);
    if (expired && !done)
        slog_error("a parked %s request did not answer at its deadline",
                   p->req && p->req->api ? p->req->api->name : "?");
    if (done || expired)
        park_stop(p);
    if (c)
        conn_release(c);
}

static void on_timeout(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    run(t->data, true);
}

void park_init(struct parked *p, struct request *req, bool (*try_complete)(struct parked *p, bool expired))
{
    memset(p, 0, sizeof *p);
    p->req = req;
    p->sink = req->worker->park;
    p->try_complete = try_complete;
    p->early_timeout_ms = -1;
}

void park_watch(struct parked *p, park_key_t key)
{
    struct park_watch *w = arena_alloc(&p->req->arena, sizeof *w);
    w->key = key;
    w->owner = p;
    w->owner_next = p->watches;
    p->watches = w;
    if (p->active)
        link_watch(p->sink, w);
}

void park_start(struct parked *p, int64_t timeout_ms)
{
    struct park_sink *s = p->sink;
    p->active = true;
    if (timeout_ms < 0)
        timeout_ms = 0;
    if (p->early_timeout_ms >= 0 && p->early_timeout_ms < timeout_ms)
        timeout_ms = p->early_timeout_ms;
    for (struct park_watch *w = p->watches; w; w = w->owner_next)
        if (!w->entry)
            link_watch(s, w);
    ev_timer_init(&p->timer, on_timeout, (double)(timeout_ms > 0 ? timeout_ms : 0) / 1000.0, 0.);
    p->timer.data = p;
    ev_timer_start(s->loop, &p->timer);
    atomic_fetch_add_explicit(&s->hub->parked, 1, memory_order_relaxed);
    /* the state may have moved between the handler's check and the
     * watches above, when notifiers still saw no one interested */
    run(p, false);
}

void park_set_timeout(struct parked *p, int64_t timeout_ms)
{
    if (timeout_ms < 0)
        timeout_ms = 0;
    if (!p->active) {
        if (p->early_timeout_ms < 0 || timeout_ms < p->early_timeout_ms)
            p->early_timeout_ms = timeout_ms;
        return;
    }
    ev_timer_stop(p->sink->loop, &p->timer);
    ev_timer_set(&p->timer, (double)(timeout_ms > 0 ? timeout_ms : 0) / 1000.0, 0.);
    ev_timer_start(p->sink->loop, &p->timer);
}

void park_stop(struct parked *p)
{
    if (!p->active)
        return;
    struct park_sink *s = p->sink;
    p->active = false;
    for (struct park_watch *w = p->watches; w; w = w->owner_next)
        unlink_watch(s, w);
    ev_timer_stop(s->loop, &p->timer);
    ready_unlink(s, p);
    atomic_fetch_sub_explicit(&s->hub->parked, 1, memory_order_relaxed);
}

/* ------------------------------------------------------------------ */
/* notification                                                        */

/* The wake-up (a write to the loop's eventfd) is sent after mu is
 * released: the write wakes the worker, which takes mu first thing, and a
 * notifier descheduled inside the syscall while holding mu (likely on a
 * busy machine, since the wakee may preempt it) made the worker wait for
 * it; the loop watchdog saw worker passes of 100 ms and more there while a
 * follower caught up. */
static void post(struct park_sink *s, park_key_t key)
{
    bool send = false;
    pthread_mutex_lock(&s->mu);
    if (s->attached) {
        /* the same key twice in a row (a burst of appends to one
         * partition) is one wake-up */
        if (!s->nposted || s->posted[s->nposted - 1] != key) {
            if (s->nposted == s->cap) {
                s->cap = s->cap ? s->cap * 2 : 64;
                s->posted = xrealloc(s->posted, s->cap * sizeof *s->posted);
            }
            s->posted[s->nposted++] = key;
            atomic_fetch_add_explicit(&s->hub->posts, 1, memory_order_relaxed);
            if (s->nposted == 1) {
                send = true;
                atomic_fetch_add_explicit(&s->senders, 1, memory_order_relaxed);
            }
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (send) {
        ev_async_send(s->loop, &s->async);
        atomic_fetch_sub_explicit(&s->senders, 1, memory_order_release);
    }
}

void park_notify(struct park_hub *h, park_key_t key)
{
    if (!h)
        return;
    atomic_fetch_add_explicit(&h->notifies, 1, memory_order_relaxed);
    struct park_shard *sh = shard_of(h, key);
    /* Nothing parked on this shard: no lock, no lookup (an append to a
     * partition no one waits on). The fence orders the caller's state
     * change before the count's load; interest_set fences the other way. */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&sh->nkeys, memory_order_relaxed) == 0)
        return;
    pthread_mutex_lock(&sh->mu);
    struct interest *in = hmap_get(&sh->keys, &key, sizeof key);
    uint64_t mask = in ? in->mask : 0;
    pthread_mutex_unlock(&sh->mu);
    while (mask) {
        int id = __builtin_ctzll(mask);
        mask &= mask - 1;
        post(&h->sinks[id], key);
    }
}

static void on_posted(struct ev_loop *loop, ev_async *a, int revents)
{
    (void)loop;
    (void)revents;
    struct park_sink *s = a->data;
    pthread_mutex_lock(&s->mu);
    /* swap the buffers: notifiers append to an empty one meanwhile */
    park_key_t *keys = s->posted;
    size_t n = s->nposted, cap = s->cap;
    s->posted = s->draining;
    s->cap = s->draining_cap;
    s->nposted = 0;
    pthread_mutex_unlock(&s->mu);
    for (size_t i = 0; i < n; i++) {
        struct pk_entry *e = hmap_get(&s->local, &keys[i], sizeof keys[i]);
        for (struct park_watch *w = e ? e->head : NULL; w; w = w->next)
            ready_push(s, w->owner);
    }
    s->draining = keys;
    s->draining_cap = cap;
    /* one by one from the head: a completion may stop others (its
     * connection closing cancels its other parked requests) */
    while (s->ready_head) {
        struct parked *p = s->ready_head;
        ready_unlink(s, p);
        run(p, false);
    }
}

struct park_sink *park_worker_attach(struct park_hub *h, int id, struct ev_loop *loop)
{
    struct park_sink *s = &h->sinks[id];
    s->loop = loop;
    ev_async_init(&s->async, on_posted);
    s->async.data = s;
    ev_async_start(loop, &s->async);
    pthread_mutex_lock(&s->mu);
    s->attached = true;
    pthread_mutex_unlock(&s->mu);
    return s;
}

void park_worker_detach(struct park_sink *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->attached = false;
    s->nposted = 0;
    pthread_mutex_unlock(&s->mu);
    /* a notifier that saw it attached is at most one syscall from done */
    while (atomic_load_explicit(&s->senders, memory_order_acquire))
        sched_yield();
    ev_async_stop(s->loop, &s->async);
}

void park_get_stats(struct park_hub *h, struct park_stats *out)
{
    out->notifies = atomic_load(&h->notifies);
    out->posts = atomic_load(&h->posts);
    out->wakeups = atomic_load(&h->wakeups);
    out->expiries = atomic_load(&h->expiries);
    out->parked = atomic_load(&h->parked);
}
