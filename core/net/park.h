/* Parking: how a request that must wait (acks=all, a long-poll Fetch,
 * JoinGroup/SyncGroup, a Raft job, a controller operation, a forwarded
 * admin request) waits without holding its network worker.
 *
 * A parked request watches one or more keys. Whatever changes the state
 * a key stands for (an append raising a partition's high watermark, a
 * group completing a waiter, the controller completing an operation)
 * calls park_notify(key) from any thread. Only the workers that have a
 * request watching that key are woken (through an ev_async of their own),
 * and on each of them only the requests watching it run their
 * try_complete. A request also completes when its deadline passes.
 *
 * Lifetimes. A struct parked lives in its request's arena and belongs to
 * the request's worker; other threads never touch it: they only post a
 * key to the worker. While try_complete runs, the request's connection is
 * held, so a completion that closes the connection (req_close) never
 * frees the request it is running in; the connection goes once the call
 * returns. A connection that closes while requests are parked cancels
 * them (the request's cancel hook calls park_stop) before freeing them.
 *
 * No lost wake-up: park_start registers the watches (visible to every
 * notifier before it returns) and then runs try_complete once, so an
 * event that happened between the handler's own check and the watch is
 * seen by that call. A key watched later, from inside try_complete,
 * needs the same order: watch first, then look at the state. */
#ifndef SAMSA_NET_PARK_H
#define SAMSA_NET_PARK_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

struct request;
struct park_hub;
struct park_sink;
struct park_watch;

/* What a parked request waits for. Keys are hashes: two unrelated
 * things may share one, which costs a spurious try_complete, never a
 * lost wake-up. */
typedef uint64_t park_key_t;

/* At most this many workers (num.network.threads is capped to it). */
#define PARK_MAX_WORKERS 64

static inline uint64_t park_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* A partition's data and state: its high watermark, log end, leader
 * epoch, leadership, deletion. topic_id is the 16-byte topic id. */
static inline park_key_t park_key_partition(const uint8_t topic_id[16], int32_t index)
{
    uint64_t a = 0, b = 0;
    for (int i = 0; i < 8; i++) {
        a = a << 8 | topic_id[i];
        b = b << 8 | topic_id[8 + i];
    }
    return park_mix64(a ^ park_mix64(b ^ park_mix64((uint64_t)(uint32_t)index + 1))) | 1;
}

/* One waitable object, by its address: a group waiter, a controller
 * operation, a forwarded request, a Raft job. */
static inline park_key_t park_key_object(const void *obj)
{
    return park_mix64((uint64_t)(uintptr_t)obj) & ~(uint64_t)1;
}

/* A parked request. Zero it (arena memory is) and set it up with
 * park_init; the owner embeds it in its handler state. */
struct parked {
    struct request *req;
    struct park_sink *sink;        /* the request's worker's */
    /* Returns true when it answered the request; it is then stopped.
     * With expired set (the deadline passed) it must answer. */
    bool (*try_complete)(struct parked *p, bool expired);
    struct park_watch *watches;    /* singly linked, in the arena */
    ev_timer timer;
    bool active;                   /* started and not stopped */
    int64_t early_timeout_ms;      /* park_set_timeout before the start, or -1 */
    bool ready;                    /* on the worker's ready list */
    struct parked *ready_prev, *ready_next;
};

/* The shared part: which worker watches which key. Created by the
 * network layer for its workers; notifiers reach it through the broker
 * (struct broker's wake field). */
struct park_hub *park_hub_create(void);
/* Frees the hub; every worker must have been detached. */
void park_hub_free(struct park_hub *h);

/* Worker thread: attaches the worker with id (0 <= id < PARK_MAX_WORKERS)
 * and its loop; returns its sink (owned by the hub). */
struct park_sink *park_worker_attach(struct park_hub *h, int id, struct ev_loop *loop);
/* Worker thread, after its requests are gone: stops its watcher. */
void park_worker_detach(struct park_sink *s);

/* Any thread: the state behind key changed. h may be NULL (no network
 * layer: unit tests, tools). */
void park_notify(struct park_hub *h, park_key_t key);

/* Worker thread. Prepares p for req (on req's worker). */
void park_init(struct parked *p, struct request *req, bool (*try_complete)(struct parked *p, bool expired));
/* Worker thread: p is woken when key is notified. Before park_start or
 * from inside try_complete (then check the state after this call). The
 * watch lives in the request's arena. */
void park_watch(struct parked *p, park_key_t key);
/* Worker thread: parks p for at most timeout_ms (<= 0: the next loop
 * iteration), then runs try_complete once. */
void park_start(struct parked *p, int64_t timeout_ms);
/* Worker thread: the deadline becomes timeout_ms from now (a wait that
 * entered a phase of its own: a group write waiting for the ISR after its
 * group answered). Before park_start, the earlier of this and
 * park_start's timeout applies. */
void park_set_timeout(struct parked *p, int64_t timeout_ms);
/* Worker thread: removes p's watches and deadline (idempotent; what a
 * cancel hook calls). */
void park_stop(struct parked *p);

/* Counters (any thread; for tests and benchmarks). */
struct park_stats {
    uint64_t notifies;      /* park_notify calls */
    uint64_t posts;         /* keys posted to a worker */
    uint64_t wakeups;       /* try_complete calls made for a notified key */
    uint64_t expiries;      /* try_complete calls made for a deadline */
    int64_t parked;         /* requests parked now */
};
void park_get_stats(struct park_hub *h, struct park_stats *out);

#endif
