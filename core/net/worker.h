/* Worker thread internals shared by the connection code and by handlers
 * that park requests (delayed fetch / produce). */
#ifndef SAMSA_NET_WORKER_H
#define SAMSA_NET_WORKER_H

#include <ev.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct net;
struct conn;
struct broker;

/* A parked operation: completes when try_complete says so, either on a
 * data notification or when its timer fires (expired = true). */
struct delayed {
    struct delayed *prev, *next;
    struct worker *w;
    ev_timer timer;
    bool parked;
    /* Returns true when the operation completed (it is then unparked). */
    bool (*try_complete)(struct delayed *d, bool expired);
};

struct worker {
    int id;
    struct net *net;
    struct broker *broker;
    pthread_t thread;
    struct ev_loop *loop;
    ev_async wake;
    atomic_bool stop;
    atomic_bool data_arrived;
    atomic_int nparked;       /* read by notifiers on other threads */

    pthread_mutex_t inbox_lock;
    struct inbox_entry {
        int fd;
        bool controller;      /* accepted on a controller listener */
        const char *listener; /* its name (owned by the net) */
        int protocol;         /* enum security_protocol */
    } *inbox;                 /* accepted fds waiting to be adopted */
    int inbox_len, inbox_cap;

    struct conn *conns;       /* doubly linked list of live connections */
    int nconns;
    struct delayed parked;    /* list head (sentinel) */
};

/* Parks d on its worker until try_complete returns true or timeout_ms
 * passes (then try_complete runs with expired = true and must complete).
 * try_complete runs once right away too, and may complete d at once.
 * A try_complete that completes must not free d: the request (and d with
 * it) is freed later, when the connection writes the response. */
void worker_park(struct worker *w, struct delayed *d, int64_t timeout_ms);
/* Removes d from the parked list and stops its timer (idempotent). */
void worker_unpark(struct delayed *d);

#endif
