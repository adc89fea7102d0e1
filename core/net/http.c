#include "net/http.h"

#include <errno.h>
#include <ev.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/net.h"
#include "util/clock.h"
#include "util/slog.h"
#include "util/thread.h"

/* What a scraper may keep open at once, and how long one may take: a
 * slow or idle peer holds a slot and a descriptor, never the thread. */
#define MAX_CONNS 16
#define CONN_DEADLINE_S 10.0
#define LINGER_S 2.0
#define ACCEPT_PAUSE_S 0.1

struct hconn {
    int fd;
    struct http_server *s;
    ev_io io;
    ev_timer deadline;
    char in[HTTP_HEAD_MAX + 1];
    size_t got;
    struct buf out;
    size_t sent;
    bool draining; /* answered and half-closed: reading to the peer's close */
    struct hconn *prev, *next;
};

struct http_server {
    char what[64];
    int fd;
    int port;
    http_handler_fn fn;
    void *arg;
    struct ev_loop *loop;
    ev_io accept_io;
    ev_timer pause; /* accepting again after EMFILE */
    ev_async stop;
    pthread_t thread;
    bool started;
    struct hconn *conns;
    int nconns;
    int64_t last_warn_ms; /* last "bad request" line (its thread only) */
};

static void hconn_free(struct hconn *c)
{
    struct http_server *s = c->s;
    ev_io_stop(s->loop, &c->io);
    ev_timer_stop(s->loop, &c->deadline);
    close(c->fd);
    buf_free(&c->out);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
    free(c);
}

static const char *reason_phrase(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Internal Server Error";
    }
}

/* Puts the whole response (head and, unless HEAD, body) in c->out. */
static void compose(struct hconn *c, int status, const char *ctype, const struct buf *body, bool head_only,
                    bool allow_get)
{
    buf_printf(&c->out,
               "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n%s\r\n", status,
               reason_phrase(status), ctype, body ? body->len : 0, allow_get ? "Allow: GET, HEAD\r\n" : "");
    if (body && !head_only)
        buf_append(&c->out, body->data, body->len);
}

static void on_conn_io(struct ev_loop *loop, ev_io *w, int revents);

static void start_writing(struct hconn *c)
{
    ev_io_stop(c->s->loop, &c->io);
    ev_io_set(&c->io, c->fd, EV_WRITE);
    ev_io_start(c->s->loop, &c->io);
}

static void answer_error(struct hconn *c, int status, const char *msg)
{
    struct buf b = BUF_INIT;
    buf_printf(&b, "%s\n", msg);
    compose(c, status, "text/plain; charset=utf-8", &b, false, status == 405);
    buf_free(&b);
    start_writing(c);
}

static void handle(struct hconn *c, const struct http_head *h)
{
    bool head_only = !strcmp(h->method, "HEAD");
    if (!head_only && strcmp(h->method, "GET") != 0) {
        answer_error(c, 405, "only GET and HEAD are served here");
        return;
    }
    struct http_response r = {.status = 200, .content_type = "text/plain; charset=utf-8", .body = BUF_INIT};
    c->s->fn(c->s->arg, h, &r);
    compose(c, r.status, r.content_type, &r.body, head_only, false);
    buf_free(&r.body);
    start_writing(c);
}

static void on_conn_io(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    struct hconn *c = w->data;
    if (c->draining) {
        /* a bounded read per wake-up: a peer that keeps sending must
         * not hold the thread; LINGER_S ends it */
        char sink[4096];
        ssize_t n = 0;
        for (int i = 0; i < 16 && (n = recv(c->fd, sink, sizeof sink, 0)) > 0; i++)
            ;
        if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)))
            return;
        hconn_free(c);
        return;
    }
    if (c->out.len) {
        while (c->sent < c->out.len) {
            ssize_t n = send(c->fd, c->out.data + c->sent, c->out.len - c->sent, MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                return;
            if (n <= 0)
                break;
            c->sent += (size_t)n;
        }
        /* Closing with the peer's bytes unread would reset the
         * connection and could drop the answer before the peer reads
         * it (a refused oversized head): half-close, then read what
         * the peer still sends until it closes (nginx's lingering
         * close), for at most LINGER_S. */
        if (c->sent == c->out.len && shutdown(c->fd, SHUT_WR) == 0) {
            c->draining = true;
            ev_io_stop(c->s->loop, &c->io);
            ev_io_set(&c->io, c->fd, EV_READ);
            ev_io_start(c->s->loop, &c->io);
            ev_timer_stop(c->s->loop, &c->deadline);
            ev_timer_set(&c->deadline, LINGER_S, 0.);
            ev_timer_start(c->s->loop, &c->deadline);
            return;
        }
        hconn_free(c);
        return;
    }
    for (;;) {
        ssize_t n = recv(c->fd, c->in + c->got, HTTP_HEAD_MAX + 1 - c->got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            hconn_free(c); /* the peer went before its request was whole */
            return;
        }
        c->got += (size_t)n;
        struct http_head h;
        const char *why;
        int rc = http_parse_head(c->in, c->got, &h, &why);
        if (rc > 0) {
            handle(c, &h);
            return;
        }
        if (rc < 0) {
            /* one line per 10 s at most: a scanner must not flood the log */
            int64_t now = clock_mono_ms();
            if (now - c->s->last_warn_ms >= 10000 || !c->s->last_warn_ms) {
                c->s->last_warn_ms = now;
                slog_warn("%s: bad request from a client: %s (further ones are not logged for 10 s)", c->s->what,
                          why);
            }
            answer_error(c, !strcmp(why, "request head too long") ? 431 : 400, why);
            return;
        }
    }
}

static void on_deadline(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    hconn_free(t->data);
}

static void on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)revents;
    struct http_server *s = w->data;
    for (;;) {
        int fd = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
            /* The listener stays readable: pause instead of spinning,
             * as the Kafka listeners do (net.c). */
            ev_io_stop(loop, &s->accept_io);
            ev_timer_start(loop, &s->pause);
            return;
        }
        if (fd < 0)
            return; /* EAGAIN and the like: the next readiness retries */
        if (s->nconns >= MAX_CONNS) {
            close(fd);
            continue;
        }
        struct hconn *c = xcalloc(1, sizeof *c);
        c->fd = fd;
        c->s = s;
        c->next = s->conns;
        if (s->conns)
            s->conns->prev = c;
        s->conns = c;
        s->nconns++;
        ev_io_init(&c->io, on_conn_io, fd, EV_READ);
        c->io.data = c;
        ev_io_start(loop, &c->io);
        ev_timer_init(&c->deadline, on_deadline, CONN_DEADLINE_S, 0.);
        c->deadline.data = c;
        ev_timer_start(loop, &c->deadline);
    }
}

static void on_pause_end(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)revents;
    struct http_server *s = t->data;
    ev_io_start(loop, &s->accept_io);
}

static void on_stop(struct ev_loop *loop, ev_async *a, int revents)
{
    (void)a;
    (void)revents;
    ev_break(loop, EVBREAK_ALL);
}

static void *server_main(void *arg)
{
    struct http_server *s = arg;
    thread_set_name("samsa-http");
    ev_run(s->loop, 0);
    return NULL;
}

struct http_server *http_server_open(const char *what, const char *host, int port, http_handler_fn fn, void *arg,
                                     char *err, size_t errlen)
{
    int bound;
    int fd = net_bind_listen(what, host, port, 64, &bound, err, errlen);
    if (fd < 0)
        return NULL;
    struct http_server *s = xcalloc(1, sizeof *s);
    snprintf(s->what, sizeof s->what, "%s", what);
    s->fd = fd;
    s->port = bound;
    s->fn = fn;
    s->arg = arg;
    s->loop = ev_loop_new(EVFLAG_AUTO);
    ev_io_init(&s->accept_io, on_accept, fd, EV_READ);
    s->accept_io.data = s;
    ev_io_start(s->loop, &s->accept_io);
    ev_timer_init(&s->pause, on_pause_end, ACCEPT_PAUSE_S, 0.);
    s->pause.data = s;
    ev_async_init(&s->stop, on_stop);
    ev_async_start(s->loop, &s->stop);
    return s;
}

int http_server_port(const struct http_server *s) { return s->port; }

void http_server_start(struct http_server *s)
{
    if (pthread_create(&s->thread, NULL, server_main, s) != 0) {
        slog_error("%s: cannot start its thread: %s; not serving", s->what, strerror(errno));
        return;
    }
    s->started = true;
}

void http_server_close(struct http_server *s)
{
    if (!s)
        return;
    if (s->started) {
        ev_async_send(s->loop, &s->stop);
        pthread_join(s->thread, NULL);
    }
    while (s->conns)
        hconn_free(s->conns);
    ev_io_stop(s->loop, &s->accept_io);
    ev_timer_stop(s->loop, &s->pause);
    ev_async_stop(s->loop, &s->stop);
    close(s->fd);
    ev_loop_destroy(s->loop);
    free(s);
}
