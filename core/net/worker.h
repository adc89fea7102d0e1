/* A network worker thread: its loop, its connections, and the sink its
 * parked requests are woken through (net/park.h). */
#ifndef SAMSA_NET_WORKER_H
#define SAMSA_NET_WORKER_H

#include <ev.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "net/framepool.h"
#include "net/netstats.h"
#include "util/buf.h"

struct net;
struct conn;
struct broker;
struct park_sink;
struct samsa_config;
struct net_handlers;

struct worker {
    int id;
    struct net *net;
    struct broker *broker;
    /* The broker config in effect (net_params.cfg: the node's slot, which
     * a dynamic change swaps; load it atomically); NULL in tests. */
    struct samsa_config *_Atomic *cfg;
    pthread_t thread;
    struct ev_loop *loop;
    ev_async wake;
    atomic_bool stop;
    struct park_sink *park;   /* its parked requests (net/park.h) */
    const struct net_handlers *handlers; /* the net's */
    int32_t max_request_bytes;
    int32_t queued_max_requests; /* per connection, read but unanswered */
    ev_timer idle_timer;         /* connections.max.idle.ms sweeps */
    int64_t idle_ms;             /* connections.max.idle.ms; <= 0: never */

    pthread_mutex_t inbox_lock;
    struct inbox_entry {
        int fd;
        bool controller;      /* accepted on a controller listener */
        const char *listener; /* its name (owned by the net) */
        int protocol;         /* enum security_protocol */
        bool counted;         /* counts against the client limits */
        char ip[64];          /* peer address (for the per-address count) */
        void *tls;            /* the listener's SSL_CTX (net/tls.h; a reference) or NULL */
    } *inbox;                 /* accepted fds waiting to be adopted */
    int inbox_len, inbox_cap;

    /* One READ_CHUNK read buffer kept for the next read (net/conn.c): a
     * connection hands its input buffer back here when a read leaves it
     * empty, so an idle connection holds none (10 000 idle clients would
     * otherwise keep 64 KiB each, a touched page or more of it resident)
     * and a busy one reuses it without a malloc. Worker thread only. */
    struct buf spare_in;
    struct conn *conns;       /* doubly linked list of live connections */
    int nconns;
    struct frame_pool frames; /* big request frames kept for reuse */
    struct worker_counters counters; /* for net_get_stats */
};

#endif
