#include "net/net.h"

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

#include "net/conn.h"
#include "net/park.h"
#include "net/worker.h"
#include "util/buf.h"
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
    struct net *net;
};

struct net {
    struct broker *broker;         /* opaque: handed to requests */
    struct net_handlers handlers;
    int32_t max_request_bytes;
    struct ev_loop *loop;          /* main thread: accept + signals */
    ev_async stop_async;
    ev_async ready_async;
    atomic_bool broker_ready;   /* broker listeners may accept */
    ev_signal sigterm, sigint;
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
};

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
    n->loop = ev_loop_new(EVFLAG_AUTO);
    n->workers = xcalloc((size_t)n->nworkers, sizeof *n->workers);
    /* Created (and started) now, so that net_broker_ready may come from
     * the quorum thread before net_run. */
    ev_async_init(&n->ready_async, on_ready);
    n->ready_async.data = n;
    ev_async_start(n->loop, &n->ready_async);
    return n;
}

int net_listen(struct net *n, const char *name, const char *host, int port, bool controller, int protocol, char *err,
               size_t errlen)
{
    if (n->nlisteners == MAX_LISTENERS) {
        snprintf(err, errlen, "too many listeners (at most %d)", MAX_LISTENERS);
        return -1;
    }
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    int gai = getaddrinfo(host && *host ? host : NULL, portstr, &hints, &res);
    if (gai != 0) {
        snprintf(err, errlen, "listener %s: cannot resolve host '%s': %s", name, host, gai_strerror(gai));
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
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 1024) == 0)
            break;
        last_errno = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(err, errlen, "listener %s: cannot listen on %s:%d: %s", name, host && *host ? host : "*",
                 port, strerror(last_errno));
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int bound = port;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET)
            bound = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        else if (ss.ss_family == AF_INET6)
            bound = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
    struct listener *l = &n->listeners[n->nlisteners++];
    snprintf(l->name, sizeof l->name, "%s", name);
    l->fd = fd;
    l->port = bound;
    l->net = n;
    l->controller = controller;
    l->protocol = protocol;
    return 0;
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
    for (int i = 0; i < take; i++)
        conn_adopt(w, fds[i].fd, fds[i].controller, fds[i].listener, fds[i].protocol);
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
        ev_break(loop, EVBREAK_ALL);
        return;
    }
    adopt_inbox(w);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    ev_run(w->loop, 0);
    return NULL;
}

static void on_accept(struct ev_loop *loop, ev_io *io, int revents)
{
    (void)loop;
    (void)revents;
    struct listener *l = io->data;
    struct net *n = l->net;
    for (int i = 0; i < 64; i++) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return;
            if (errno == EMFILE || errno == ENFILE) {
                slog_warn("listener %s: cannot accept: %s", l->name, strerror(errno));
                return;
            }
            slog_warn("listener %s: accept failed: %s", l->name, strerror(errno));
            return;
        }
        struct worker *w = &n->workers[n->next_worker];
        n->next_worker = (n->next_worker + 1) % n->nworkers;
        pthread_mutex_lock(&w->inbox_lock);
        if (w->inbox_len == w->inbox_cap) {
            w->inbox_cap = w->inbox_cap ? w->inbox_cap * 2 : 16;
            w->inbox = xrealloc(w->inbox, (size_t)w->inbox_cap * sizeof w->inbox[0]);
        }
        w->inbox[w->inbox_len++] = (struct inbox_entry){fd, l->controller, l->name, l->protocol};
        pthread_mutex_unlock(&w->inbox_lock);
        ev_async_send(w->loop, &w->wake);
    }
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
        w->handlers = &n->handlers;
        w->max_request_bytes = n->max_request_bytes;
        w->loop = ev_loop_new(EVFLAG_AUTO);
        w->park = park_worker_attach(n->park, i, w->loop);
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
    ev_async_init(&n->stop_async, on_stop);
    ev_async_start(n->loop, &n->stop_async);
    ev_signal_init(&n->sigterm, on_signal, SIGTERM);
    ev_signal_init(&n->sigint, on_signal, SIGINT);
    n->sigterm.data = n;
    n->sigint.data = n;
    ev_signal_start(n->loop, &n->sigterm);
    ev_signal_start(n->loop, &n->sigint);

    ev_run(n->loop, 0);

    for (int i = 0; i < n->nlisteners; i++) {
        if (n->listeners[i].started)
            ev_io_stop(n->loop, &n->listeners[i].io);
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

void net_stop(struct net *n) { ev_async_send(n->loop, &n->stop_async); }

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
        for (int j = 0; j < w->inbox_len; j++)
            close(w->inbox[j].fd);
        free(w->inbox);
    }
    free(n->workers);
    park_hub_free(n->park);
    ev_loop_destroy(n->loop);
    free(n);
}
