#include "net/net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "net/conn.h"
#include "net/park.h"
#include "net/worker.h"
#include "util/loopwatch.h"
#include "util/thread.h"
#include "util/buf.h"
#include "net/tls.h"
#include "util/clock.h"
#include "util/hmap.h"
#include "util/slog.h"

#define MAX_LISTENERS 8

struct listener {
    char name[64];
    int fd;
    int port;
    bool controller; /* named in controller.listener.names */
    int protocol;    /* enum security_protocol, from the config */
    bool started;
    ev_io io;
    /* Out of descriptors: accepting pauses for ACCEPT_PAUSE_S (Kafka's
     * acceptor and nginx do the same) instead of spinning on a readable
     * listener whose accept keeps failing. */
    ev_timer pause;
    bool pausing;
    bool fd_warned; /* one WARN per run of EMFILE */
    struct net *net;
};

#define ACCEPT_PAUSE_S 0.1

struct net {
    struct broker *broker;         /* opaque: handed to requests */
    struct net_handlers handlers;
    int32_t max_request_bytes;
    struct ev_loop *loop;          /* main thread: accept + signals */
    ev_async stop_async;
    atomic_bool stop_requested; /* net_stop may come before net_run starts stop_async */
    ev_async ready_async;
    atomic_bool broker_ready;   /* broker listeners may accept */
    ev_signal sigterm, sigint, sighup;
    /* Called at SIGHUP (on this thread): re-read what may be re-read
     * (plugin scripts). */
    void (*reload_hook)(void *arg);
    void *reload_arg;
    /* Called at the first SIGTERM/SIGINT instead of stopping: it calls
     * net_stop when the node may go (a broker's controlled shutdown). */
    void (*shutdown_hook)(void *arg);
    void *shutdown_arg;
    bool shutting_down;
    struct listener listeners[MAX_LISTENERS];
    int nlisteners;
    struct worker *workers;
    int nworkers;
    int next_worker;
    struct park_hub *park; /* owned */

    /* Client connection limits (max.connections, max.connections.per.ip,
     * max.connection.creation.rate): counts of the connections accepted
     * on broker listeners, by address too. Accept (main thread) counts
     * up, a worker closing one counts down: under limits_mu. */
    struct samsa_config *_Atomic *cfg;
    pthread_mutex_t limits_mu;
    struct hmap per_ip; /* address -> (intptr_t) count */
    int32_t nclients;
    double rate_window; /* start of the current second (ev_now) */
    int32_t rate_count; /* accepted in it */
    ev_timer rate_timer; /* resumes accepting after a throttled second */
    /* Connections over their IP's connection_creation_rate, held until
     * their timer closes them (main thread; the rest closed at net_free). */
    struct held_conn {
        ev_timer t;
        int fd;
        struct net *n;
        struct held_conn *prev, *next;
    } *held;
    bool throttled;
    int64_t last_refusal_log_ms;
    /* for net_get_stats: written by the main thread */
    _Atomic uint64_t accepted, refused, rate_held;
};

/* Stops or restarts accepting on the started broker listeners (the
 * creation-rate throttle). Main thread. */
static void set_listeners_active(struct net *n, bool on)
{
    for (int i = 0; i < n->nlisteners; i++) {
        struct listener *l = &n->listeners[i];
        if (!l->started || l->controller)
            continue;
        if (on && !l->pausing)
            ev_io_start(n->loop, &l->io);
        else
            ev_io_stop(n->loop, &l->io);
    }
}

static void on_ready(struct ev_loop *loop, ev_async *a, int revents);

struct net *net_create(const struct net_params *p)
{
    struct net *n = xcalloc(1, sizeof *n);
    n->broker = p->broker;
    n->handlers = *p->handlers;
    n->max_request_bytes = p->max_request_bytes;
    n->nworkers = p->nworkers > 0 ? p->nworkers : 1;
    if (n->nworkers > PARK_MAX_WORKERS) {
        slog_warn("num.network.threads=%d: using %d network threads (the most samsa runs)", n->nworkers,
                  PARK_MAX_WORKERS);
        n->nworkers = PARK_MAX_WORKERS;
    }
    n->park = park_hub_create();
    n->cfg = p->cfg;
    pthread_mutex_init(&n->limits_mu, NULL);
    hmap_init(&n->per_ip);
    n->loop = ev_loop_new(EVFLAG_AUTO);
    n->workers = xcalloc((size_t)n->nworkers, sizeof *n->workers);
    /* Created (and started) now, so that net_broker_ready may come from
     * the quorum thread before net_run. */
    ev_async_init(&n->ready_async, on_ready);
    n->ready_async.data = n;
    ev_async_start(n->loop, &n->ready_async);
    return n;
}

int net_bind_listen(const char *what, const char *host, int port, int backlog, int *bound, char *err, size_t errlen)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    int gai = getaddrinfo(host && *host ? host : NULL, portstr, &hints, &res);
    if (gai != 0) {
        snprintf(err, errlen, "%s: cannot resolve host '%s': %s", what, host, gai_strerror(gai));
        return -1;
    }
    int fd = -1;
    int last_errno = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            last_errno = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, backlog) == 0)
            break;
        last_errno = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot listen on %s:%d: %s", what, host && *host ? host : "*", port,
                 strerror(last_errno));
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    *bound = port;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET)
            *bound = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        else if (ss.ss_family == AF_INET6)
            *bound = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
    return fd;
}

int net_listen(struct net *n, const char *name, const char *host, int port, bool controller, int protocol, char *err,
               size_t errlen)
{
    if (n->nlisteners == MAX_LISTENERS) {
        snprintf(err, errlen, "too many listeners (at most %d)", MAX_LISTENERS);
        return -1;
    }
    const struct samsa_config *cfg = n->cfg ? atomic_load(n->cfg) : NULL;
    int backlog = cfg && cfg->socket_listen_backlog_size > 0 ? cfg->socket_listen_backlog_size : 1024;
    char what[96];
    snprintf(what, sizeof what, "listener %s", name);
    int bound;
    int fd = net_bind_listen(what, host, port, backlog, &bound, err, errlen);
    if (fd < 0)
        return -1;
    struct listener *l = &n->listeners[n->nlisteners++];
    snprintf(l->name, sizeof l->name, "%s", name);
    l->fd = fd;
    l->port = bound;
    l->net = n;
    l->controller = controller;
    l->protocol = protocol;
    return 0;
}

const int64_t netstats_bucket_us[NETSTATS_BUCKETS - 1] = {
    250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000,
};

void netstats_request_done(struct worker_counters *w, int api_key, int64_t us)
{
    if (api_key < 0 || api_key >= NETSTATS_APIS)
        return;
    if (us < 0)
        us = 0;
    int b = 0;
    while (b < NETSTATS_BUCKETS - 1 && us > netstats_bucket_us[b])
        b++;
    counter_add(&w->requests[api_key], 1);
    counter_add(&w->time_us[api_key], (uint64_t)us);
    counter_add(&w->buckets[api_key][b], 1);
}

void net_get_stats(struct net *n, struct netstats *out)
{
    memset(out, 0, sizeof *out);
    out->accepted = atomic_load_explicit(&n->accepted, memory_order_relaxed);
    out->refused = atomic_load_explicit(&n->refused, memory_order_relaxed);
    out->throttled = atomic_load_explicit(&n->rate_held, memory_order_relaxed);
    for (int i = 0; i < n->nworkers; i++) {
        struct worker_counters *w = &n->workers[i].counters;
        out->bytes_in += atomic_load_explicit(&w->bytes_in, memory_order_relaxed);
        out->bytes_out += atomic_load_explicit(&w->bytes_out, memory_order_relaxed);
        out->records_in += atomic_load_explicit(&w->records_in, memory_order_relaxed);
        out->record_bytes_in += atomic_load_explicit(&w->record_bytes_in, memory_order_relaxed);
        out->connections += atomic_load_explicit(&w->connections, memory_order_relaxed);
        for (int k = 0; k < NETSTATS_APIS; k++) {
            out->requests[k] += atomic_load_explicit(&w->requests[k], memory_order_relaxed);
            out->time_us[k] += atomic_load_explicit(&w->time_us[k], memory_order_relaxed);
            for (int j = 0; j < NETSTATS_BUCKETS; j++)
                out->buckets[k][j] += atomic_load_explicit(&w->buckets[k][j], memory_order_relaxed);
        }
    }
}

int net_bound_port(const struct net *n, int idx)
{
    return idx < n->nlisteners ? n->listeners[idx].port : -1;
}

static void adopt_inbox(struct worker *w)
{
    pthread_mutex_lock(&w->inbox_lock);
    int len = w->inbox_len;
    struct inbox_entry fds[64];
    int take = len < 64 ? len : 64;
    memcpy(fds, w->inbox, (size_t)take * sizeof fds[0]);
    memmove(w->inbox, w->inbox + take, (size_t)(len - take) * sizeof fds[0]);
    w->inbox_len -= take;
    pthread_mutex_unlock(&w->inbox_lock);
    for (int i = 0; i < take; i++) {
        struct conn *c = conn_adopt(w, fds[i].fd, fds[i].controller, fds[i].listener, fds[i].protocol,
                                     fds[i].tls);
        c->counted = fds[i].counted;
        snprintf(c->ip, sizeof c->ip, "%s", fds[i].ip);
    }
    if (take < len)
        ev_async_send(w->loop, &w->wake);
}

static void on_wake(struct ev_loop *loop, ev_async *a, int revents)
{
    (void)revents;
    struct worker *w = a->data;
    if (atomic_load(&w->stop)) {
        conn_close_all(w);
        park_worker_detach(w->park);
        ev_timer_stop(loop, &w->idle_timer);
        ev_break(loop, EVBREAK_ALL);
        return;
    }
    adopt_inbox(w);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    thread_set_name("samsa-net-%d", w->id);
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    struct loopwatch lw;
    char name[24];
    snprintf(name, sizeof name, "net-%d", w->id);
    loopwatch_start(&lw, w->loop, name);
    ev_run(w->loop, 0);
    loopwatch_stop(&lw, w->loop);
    return NULL;
}

/* One line per refused connection at most every 10 s (a storm of them
 * must not flood the log). Main thread. */
static void log_refusal(struct net *n, const char *listener, const char *ip, const char *why)
{
    int64_t now = clock_mono_ms();
    if (now - n->last_refusal_log_ms < 10000)
        return;
    n->last_refusal_log_ms = now;
    slog_warn("listener %s: closing a new connection from %s: %s (further refusals are not logged for 10 s)",
              listener, ip, why);
}

static int32_t ip_limit(const struct samsa_config *cfg, const char *ip)
{
    for (size_t i = 0; cfg && i < cfg->n_ip_limits; i++)
        if (!strcmp(cfg->ip_limits[i].addr, ip))
            return cfg->ip_limits[i].max;
    return cfg ? cfg->max_connections_per_ip : INT32_MAX;
}

/* Main thread: whether a client connection from ip may stay; counts it
 * when it may. */
static bool admit(struct net *n, const char *listener, const char *ip)
{
    const struct samsa_config *cfg = n->cfg ? atomic_load(n->cfg) : NULL;
    int32_t max_total = cfg ? cfg->max_connections : INT32_MAX;
    int32_t max_ip = ip_limit(cfg, ip);
    char why[128] = "";
    pthread_mutex_lock(&n->limits_mu);
    intptr_t have = (intptr_t)hmap_get(&n->per_ip, ip, strlen(ip));
    if (n->nclients >= max_total)
        snprintf(why, sizeof why, "max.connections (%d) reached", max_total);
    else if (have >= max_ip)
        snprintf(why, sizeof why, "max.connections.per.ip for %s (%d) reached", ip, max_ip);
    else {
        n->nclients++;
        hmap_put(&n->per_ip, ip, strlen(ip), (void *)(have + 1));
    }
    pthread_mutex_unlock(&n->limits_mu);
    if (why[0])
        log_refusal(n, listener, ip, why);
    return !why[0];
}

void net_conn_gone(struct net *n, const char *ip)
{
    pthread_mutex_lock(&n->limits_mu);
    intptr_t have = (intptr_t)hmap_get(&n->per_ip, ip, strlen(ip));
    if (have <= 1)
        hmap_del(&n->per_ip, ip, strlen(ip));
    else
        hmap_put(&n->per_ip, ip, strlen(ip), (void *)(have - 1));
    n->nclients--;
    pthread_mutex_unlock(&n->limits_mu);
}

static void set_listeners_active(struct net *n, bool on);

static void on_rate_timer(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    struct net *n = t->data;
    n->throttled = false;
    set_listeners_active(n, true);
}

/* max.connection.creation.rate: true when one more client connection
 * may be accepted in this second; else stops accepting on the broker
 * listeners until the next second (connections wait in the backlog, as
 * Kafka's acceptor throttles). Main thread. */
static bool rate_allows(struct net *n)
{
    const struct samsa_config *cfg = n->cfg ? atomic_load(n->cfg) : NULL;
    int32_t max = cfg ? cfg->max_connection_creation_rate : INT32_MAX;
    if (max == INT32_MAX)
        return true;
    double now = ev_now(n->loop);
    if (now - n->rate_window >= 1.0) {
        n->rate_window = now;
        n->rate_count = 0;
    }
    if (n->rate_count < max) {
        n->rate_count++;
        return true;
    }
    if (!n->throttled) {
        n->throttled = true;
        set_listeners_active(n, false);
        ev_timer_set(&n->rate_timer, n->rate_window + 1.0 - now + 0.001, 0.);
        ev_timer_start(n->loop, &n->rate_timer);
    }
    return false;
}

static void peer_ip(const struct sockaddr_storage *ss, char *out, size_t len)
{
    out[0] = 0;
    if (ss->ss_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, out, (socklen_t)len);
    else if (ss->ss_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, out, (socklen_t)len);
    if (!out[0])
        snprintf(out, len, "?");
}

static void set_socket_buffers(struct net *n, int fd)
{
    const struct samsa_config *cfg = n->cfg ? atomic_load(n->cfg) : NULL;
    if (!cfg)
        return;
    if (cfg->socket_send_buffer_bytes > 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &cfg->socket_send_buffer_bytes, sizeof cfg->socket_send_buffer_bytes);
    if (cfg->socket_receive_buffer_bytes > 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &cfg->socket_receive_buffer_bytes,
                   sizeof cfg->socket_receive_buffer_bytes);
}

/* A connection over its IP's creation rate, held for its throttle time
 * and then closed without being served (Kafka's acceptor does the same,
 * so a client retrying at once does not spin). */
static void held_free(struct held_conn *h)
{
    struct net *n = h->n;
    ev_timer_stop(n->loop, &h->t);
    if (h->prev)
        h->prev->next = h->next;
    else
        n->held = h->next;
    if (h->next)
        h->next->prev = h->prev;
    close(h->fd);
    free(h);
}

static void on_held_done(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    held_free(t->data);
}

static void hold_then_close(struct net *n, int fd, int64_t ms)
{
    struct held_conn *h = xcalloc(1, sizeof *h);
    h->fd = fd;
    h->n = n;
    h->next = n->held;
    if (h->next)
        h->next->prev = h;
    n->held = h;
    ev_timer_init(&h->t, on_held_done, (double)ms / 1000.0, 0.);
    h->t.data = h;
    ev_timer_start(n->loop, &h->t);
}

static void on_accept(struct ev_loop *loop, ev_io *io, int revents)
{
    (void)loop;
    (void)revents;
    struct listener *l = io->data;
    struct net *n = l->net;
    for (int i = 0; i < 64; i++) {
        /* controller listeners carry the cluster's own traffic: not
         * limited, as Kafka keeps its inter-broker listener usable */
        if (!l->controller && !rate_allows(n))
            return;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(l->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (!l->controller && n->rate_count > 0)
                n->rate_count--; /* nothing was accepted */
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return;
            if (errno == EMFILE || errno == ENFILE) {
                /* The fd cache keeps its share: sockets do not take the
                 * descriptors reserved for segment files. */
                int e = errno;
                if (!l->fd_warned)
                    slog_warn("listener %s: cannot accept: %s; accepting again in %d ms", l->name, strerror(e),
                              (int)(ACCEPT_PAUSE_S * 1000));
                l->fd_warned = true;
                ev_io_stop(n->loop, &l->io);
                ev_timer_set(&l->pause, ACCEPT_PAUSE_S, 0.);
                ev_timer_start(n->loop, &l->pause);
                l->pausing = true;
                return;
            }
            slog_warn("listener %s: accept failed: %s", l->name, strerror(errno));
            return;
        }
        l->fd_warned = false;
        char ip[64];
        peer_ip(&ss, ip, sizeof ip);
        int64_t hold = !l->controller && n->handlers.conn_throttle ? n->handlers.conn_throttle(n->broker, ip) : 0;
        if (hold > 0) {
            slog_debug("listener %s: connection from %s over its connection_creation_rate quota: closed in %lld ms",
                       l->name, ip, (long long)hold);
            hold_then_close(n, fd, hold);
            counter_add(&n->rate_held, 1);
            continue;
        }
        if (!l->controller && !admit(n, l->name, ip)) {
            close(fd);
            counter_add(&n->refused, 1);
            continue;
        }
        counter_add(&n->accepted, 1);
        set_socket_buffers(n, fd);
        struct worker *w = &n->workers[n->next_worker];
        n->next_worker = (n->next_worker + 1) % n->nworkers;
        pthread_mutex_lock(&w->inbox_lock);
        if (w->inbox_len == w->inbox_cap) {
            w->inbox_cap = w->inbox_cap ? w->inbox_cap * 2 : 16;
            w->inbox = xrealloc(w->inbox, (size_t)w->inbox_cap * sizeof w->inbox[0]);
        }
        struct inbox_entry *e = &w->inbox[w->inbox_len++];
        *e = (struct inbox_entry){fd, l->controller, l->name, l->protocol, !l->controller, "",
                                  tls_listener_ctx_ref(n->cfg ? atomic_load(n->cfg) : NULL, l->name)};
        snprintf(e->ip, sizeof e->ip, "%s", ip);
        pthread_mutex_unlock(&w->inbox_lock);
        ev_async_send(w->loop, &w->wake);
    }
}

static void on_accept_pause_end(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)revents;
    struct listener *l = t->data;
    l->pausing = false;
    /* The creation-rate throttle restarts broker listeners itself. */
    if (l->controller || !l->net->throttled)
        ev_io_start(loop, &l->io);
}

static void on_stop(struct ev_loop *loop, ev_async *a, int revents)
{
    (void)a;
    (void)revents;
    ev_break(loop, EVBREAK_ALL);
}

/* Broker listeners accept only once the broker side is ready (registered
 * and unfenced), as Kafka opens its data plane last: a client connecting
 * earlier waits in the backlog instead of meeting a broker that knows no
 * metadata. Controller listeners accept from the start (the quorum needs
 * them to form). Main loop thread. */
static void start_listeners(struct net *n)
{
    bool ready = atomic_load(&n->broker_ready);
    for (int i = 0; i < n->nlisteners; i++) {
        struct listener *l = &n->listeners[i];
        if (l->started || (!l->controller && !ready))
            continue;
        ev_io_init(&l->io, on_accept, l->fd, EV_READ);
        l->io.data = l;
        ev_timer_init(&l->pause, on_accept_pause_end, ACCEPT_PAUSE_S, 0.);
        l->pause.data = l;
        ev_io_start(n->loop, &l->io);
        l->started = true;
    }
}

static void on_ready(struct ev_loop *loop, ev_async *a, int revents)
{
    (void)loop;
    (void)revents;
    start_listeners(a->data);
}

void net_broker_ready(struct net *n)
{
    atomic_store(&n->broker_ready, true);
    ev_async_send(n->loop, &n->ready_async);
}

static void on_signal(struct ev_loop *loop, ev_signal *s, int revents)
{
    (void)revents;
    struct net *n = s->data;
    const char *name = s->signum == SIGTERM ? "SIGTERM" : "SIGINT";
    if (n->shutdown_hook && !n->shutting_down) {
        /* Clients keep being served meanwhile; a second signal does not
         * wait. */
        n->shutting_down = true;
        slog_info("received %s, shutting down (again to stop at once)", name);
        n->shutdown_hook(n->shutdown_arg);
        return;
    }
    slog_info("received %s, shutting down", name);
    ev_break(loop, EVBREAK_ALL);
}

static void on_sighup(struct ev_loop *loop, ev_signal *s, int revents)
{
    (void)loop;
    (void)revents;
    struct net *n = s->data;
    if (!n->reload_hook) {
        slog_info("received SIGHUP: nothing to reload");
        return;
    }
    slog_info("received SIGHUP, reloading");
    n->reload_hook(n->reload_arg);
}

void net_set_reload_hook(struct net *n, void (*hook)(void *arg), void *arg)
{
    n->reload_hook = hook;
    n->reload_arg = arg;
}

void net_set_shutdown_hook(struct net *n, void (*hook)(void *arg), void *arg)
{
    n->shutdown_hook = hook;
    n->shutdown_arg = arg;
}

int net_run(struct net *n)
{
    signal(SIGPIPE, SIG_IGN);
    for (int i = 0; i < n->nworkers; i++) {
        struct worker *w = &n->workers[i];
        w->id = i;
        w->net = n;
        w->broker = n->broker;
        w->cfg = n->cfg;
        w->handlers = &n->handlers;
        w->max_request_bytes = n->max_request_bytes;
        w->loop = ev_loop_new(EVFLAG_AUTO);
        w->park = park_worker_attach(n->park, i, w->loop);
        const struct samsa_config *cfg = n->cfg ? atomic_load(n->cfg) : NULL;
        w->queued_max_requests = cfg && cfg->queued_max_requests > 0 ? cfg->queued_max_requests : 500;
        int64_t idle = cfg ? cfg->connections_max_idle_ms : -1;
        w->idle_ms = idle;
        if (idle > 0 || tls_any()) {
            /* a sweep every quarter of the limit (at most every 10 s): a
             * connection goes between 1 and 1.25 times the limit idle;
             * with TLS listeners at least every 2.5 s, which bounds an
             * unfinished handshake (conn.c) */
            double every = idle > 0 ? (double)idle / 4000.0 : 10.0;
            if (every > 10.0)
                every = 10.0;
            if (tls_any() && every > 2.5)
                every = 2.5;
            ev_timer_init(&w->idle_timer, conn_sweep_idle, every, every);
            w->idle_timer.data = w;
            ev_timer_start(w->loop, &w->idle_timer);
        }
        pthread_mutex_init(&w->inbox_lock, NULL);
        ev_async_init(&w->wake, on_wake);
        w->wake.data = w;
        ev_async_start(w->loop, &w->wake);
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            slog_error("cannot start worker thread %d", i);
            return -1;
        }
    }
    start_listeners(n);
    ev_init(&n->rate_timer, on_rate_timer);
    n->rate_timer.data = n;
    ev_async_init(&n->stop_async, on_stop);
    ev_async_start(n->loop, &n->stop_async);
    if (atomic_load(&n->stop_requested))
        ev_async_send(n->loop, &n->stop_async);
    ev_signal_init(&n->sigterm, on_signal, SIGTERM);
    ev_signal_init(&n->sigint, on_signal, SIGINT);
    n->sigterm.data = n;
    n->sigint.data = n;
    ev_signal_start(n->loop, &n->sigterm);
    ev_signal_start(n->loop, &n->sigint);
    ev_signal_init(&n->sighup, on_sighup, SIGHUP);
    n->sighup.data = n;
    ev_signal_start(n->loop, &n->sighup);

    ev_run(n->loop, 0);

    for (int i = 0; i < n->nlisteners; i++) {
        if (n->listeners[i].started) {
            ev_io_stop(n->loop, &n->listeners[i].io);
            ev_timer_stop(n->loop, &n->listeners[i].pause);
        }
        close(n->listeners[i].fd);
    }
    for (int i = 0; i < n->nworkers; i++) {
        atomic_store(&n->workers[i].stop, true);
        ev_async_send(n->workers[i].loop, &n->workers[i].wake);
    }
    for (int i = 0; i < n->nworkers; i++)
        pthread_join(n->workers[i].thread, NULL);
    return 0;
}

void net_stop(struct net *n)
{
    atomic_store(&n->stop_requested, true);
    ev_async_send(n->loop, &n->stop_async);
}

struct park_hub *net_park_hub(struct net *n) { return n->park; }

void net_free(struct net *n)
{
    if (!n)
        return;
    for (int i = 0; i < n->nworkers; i++) {
        struct worker *w = &n->workers[i];
        if (w->loop)
            ev_loop_destroy(w->loop);
        pthread_mutex_destroy(&w->inbox_lock);
        buf_free(&w->spare_in);
        for (int j = 0; j < w->inbox_len; j++) {
            close(w->inbox[j].fd);
            SSL_CTX_free(w->inbox[j].tls);
        }
        free(w->inbox);
        frame_pool_clear(&w->frames);
    }
    free(n->workers);
    while (n->held)
        held_free(n->held);
    park_hub_free(n->park);
    hmap_free(&n->per_ip);
    pthread_mutex_destroy(&n->limits_mu);
    ev_loop_destroy(n->loop);
    free(n);
}
