#include "net/conn.h"

#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <limits.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "config.h"
#include "net/net.h"
#include "net/tls.h"
#include "net/request.h"
#include "net/worker.h"
#include "util/clock.h"
#include "util/sfile.h"
#include "util/slog.h"

/* A connection stops being read while it has queued.max.requests
 * requests read but unanswered (w->queued_max_requests), so a fast
 * producer cannot queue unbounded memory; reading resumes as they drain. */
#define READ_CHUNK 65536
/* A TLS handshake not finished after this long is closed (the idle
 * sweep checks it), so a half-open or dribbling client holds only its
 * descriptor and a little memory, never the worker. */
#define TLS_HANDSHAKE_S 10.0
/* File ranges over TLS are read into a buffer of this size and written
 * with SSL_write: one TLS record's worth. */
#define TLS_COPY_CHUNK 16384

static uint64_t next_conn_id;

static void on_read(struct ev_loop *loop, ev_io *io, int revents);
static void on_write(struct ev_loop *loop, ev_io *io, int revents);
static void conn_destroy(struct conn *c);
static void on_unmute(struct ev_loop *loop, ev_timer *t, int revents);

static void peer_name(int fd, char *out, size_t outlen)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char host[INET6_ADDRSTRLEN] = "?"; /* 46: with ":65535" it fits any peer buffer of 64 */
    int port = 0;
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &sin->sin_addr, host, sizeof host);
            port = ntohs(sin->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof host);
            port = ntohs(sin6->sin6_port);
        }
    }
    snprintf(out, outlen, "%s:%d", host, port);
}

struct conn *conn_adopt(struct worker *w, int fd, bool controller, const char *listener, int protocol,
                        void *tls_ctx)
{
    struct conn *c = xcalloc(1, sizeof *c);
    c->w = w;
    c->fd = fd;
    c->controller_listener = controller;
    c->id = __atomic_add_fetch(&next_conn_id, 1, __ATOMIC_RELAXED);
    buf_init(&c->in);
    peer_name(fd, c->peer, sizeof c->peer);
    w->handlers->conn_open(c, listener, protocol);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ev_io_init(&c->rio, on_read, fd, EV_READ);
    ev_io_init(&c->wio, on_write, fd, EV_WRITE);
    ev_init(&c->mute_timer, on_unmute);
    c->mute_timer.data = c;
    c->rio.data = c->wio.data = c;
    c->last_active = ev_now(w->loop);
    ev_io_start(w->loop, &c->rio);
    c->reading = true;
    c->next = w->conns;
    if (w->conns)
        w->conns->prev = c;
    w->conns = c;
    w->nconns++;
    atomic_store_explicit(&w->counters.connections, (uint64_t)w->nconns, memory_order_relaxed);
    slog_debug("connection %llu from %s on worker %d", (unsigned long long)c->id, c->peer, w->id);
    if (tls_ctx) {
        c->ssl = tls_new(tls_ctx, fd);
        SSL_CTX_free(tls_ctx); /* the accept's reference: c->ssl holds its own */
        c->tls_handshaking = true;
        c->tls_started = c->last_active;
        /* without an SSL object (out of memory) the first event closes
         * it: the caller still uses c after this returns */
    }
    return c;
}

static void request_free(struct request *r)
{
    if (r->inner)
        request_free(r->inner);
    kw_free(&r->out);
    arena_free(&r->arena);
    if (r->worker)
        frame_pool_put(&r->worker->frames, r->frame, r->frame_cap);
    else
        free(r->frame);
    free(r);
}

void conn_close(struct conn *c, const char *why)
{
    if (c->closing)
        return;
    c->closing = true;
    if (why)
        slog_info("closing connection from %s: %s", c->peer, why);
    ev_io_stop(c->w->loop, &c->rio);
    ev_io_stop(c->w->loop, &c->wio);
    if (c->ssl && !c->tls_handshaking && !c->tls_failed) {
        /* best effort close_notify, as Kafka's SslTransportLayer sends:
         * one non-blocking try, never waiting for the peer's */
        ERR_clear_error();
        SSL_shutdown(c->ssl);
        ERR_clear_error();
    }
    shutdown(c->fd, SHUT_RDWR);
    if (!c->busy)
        conn_destroy(c);
}

static void conn_destroy(struct conn *c)
{
    struct worker *w = c->w;
    struct request *r = c->head;
    while (r) {
        struct request *n = r->next;
        if (!r->done && r->cancel)
            r->cancel(r);
        request_free(r);
        r = n;
    }
    c->head = c->tail = NULL;
    ev_clear_pending(w->loop, &c->rio);
    ev_clear_pending(w->loop, &c->wio);
    ev_timer_stop(w->loop, &c->mute_timer);
    if (c->prev)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    w->nconns--;
    atomic_store_explicit(&w->counters.connections, (uint64_t)w->nconns, memory_order_relaxed);
    if (c->counted)
        net_conn_gone(w->net, c->ip);
    if (c->ssl)
        SSL_free(c->ssl);
    c->ssl = NULL;
    close(c->fd);
    frame_pool_put(&c->w->frames, c->frame, c->frame_cap);
    buf_free(&c->in);
    c->w->handlers->conn_free(c);
    free(c);
}

void conn_close_all(struct worker *w)
{
    while (w->conns) {
        struct conn *c = w->conns;
        c->busy = 0;
        if (!c->closing)
            conn_close(c, NULL);
        else
            conn_destroy(c);
    }
}

void conn_sweep_idle(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)revents;
    struct worker *w = t->data;
    double limit = (double)w->idle_ms / 1000.0, now = ev_now(loop);
    struct conn *c = w->conns;
    while (c) {
        struct conn *next = c->next;
        /* Kafka's idle: nothing read or written; a request in flight (a
         * parked long-poll) is activity to come */
        if (!c->closing && c->tls_handshaking && !c->busy && now - c->tls_started > TLS_HANDSHAKE_S) {
            char why[96];
            snprintf(why, sizeof why, "TLS handshake not finished within %.0f s", TLS_HANDSHAKE_S);
            conn_close(c, why);
        } else if (!c->closing && w->idle_ms > 0 && c->inflight == 0 && !c->busy && now - c->last_active > limit) {
            char why[96];
            snprintf(why, sizeof why, "idle for longer than connections.max.idle.ms (%lld ms)",
                     (long long)w->idle_ms);
            conn_close(c, why);
        }
        c = next;
    }
}

void conn_hold(struct conn *c) { c->busy++; }

void conn_release(struct conn *c)
{
    if (--c->busy > 0)
        return;
    if (c->closing)
        conn_destroy(c);
    else if (c->head && c->head->done)
        ev_feed_event(c->w->loop, &c->wio, EV_WRITE); /* what conn_request_done deferred */
}

static void update_reading(struct conn *c)
{
    bool want = !c->closing && (c->tls_write_wants_read || (c->inflight < c->w->queued_max_requests &&
                                                            !ev_is_active(&c->mute_timer)));
    if (want && !c->reading) {
        ev_io_start(c->w->loop, &c->rio);
        c->reading = true;
        /* decrypted bytes OpenSSL holds never make the socket readable */
        if (c->ssl && SSL_pending(c->ssl) > 0)
            ev_feed_event(c->w->loop, &c->rio, EV_READ);
    } else if (!want && c->reading) {
        ev_io_stop(c->w->loop, &c->rio);
        c->reading = false;
    }
}

/* SSL_write with the socket's conventions: bytes written, or -1 with
 * errno (EAGAIN while OpenSSL waits for the socket either way; a retry
 * passes the same bytes, which SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER lets
 * come from another buffer). */
static ssize_t tls_send(struct conn *c, const void *p, size_t n)
{
    ERR_clear_error();
    c->tls_write_wants_read = false;
    int rc = SSL_write(c->ssl, p, n > INT_MAX ? INT_MAX : (int)n);
    if (rc > 0)
        return rc;
    switch (SSL_get_error(c->ssl, rc)) {
    case SSL_ERROR_WANT_WRITE: errno = EAGAIN; return -1;
    case SSL_ERROR_WANT_READ: c->tls_write_wants_read = true; errno = EAGAIN; return -1;
    case SSL_ERROR_SYSCALL:
        c->tls_failed = true;
        if (!errno)
            errno = EPIPE;
        return -1;
    default: c->tls_failed = true; ERR_clear_error(); errno = EPROTO; return -1;
    }
}

/* read() or SSL_read: bytes, 0 at the end of the stream, -1 with errno. */
static ssize_t conn_recv(struct conn *c, void *p, size_t n)
{
    if (!c->ssl) {
        ssize_t got = read(c->fd, p, n);
        if (got > 0)
            counter_add(&c->w->counters.bytes_in, (uint64_t)got);
        return got;
    }
    ERR_clear_error();
    int rc = SSL_read(c->ssl, p, n > INT_MAX ? INT_MAX : (int)n);
    if (rc > 0) {
        counter_add(&c->w->counters.bytes_in, (uint64_t)rc);
        return rc;
    }
    switch (SSL_get_error(c->ssl, rc)) {
    case SSL_ERROR_ZERO_RETURN: return 0;
    case SSL_ERROR_WANT_READ: errno = EAGAIN; return -1;
    case SSL_ERROR_WANT_WRITE:
        c->tls_read_wants_write = true;
        ev_io_start(c->w->loop, &c->wio);
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_SYSCALL:
        c->tls_failed = true;
        if (!errno)
            return 0;
        return -1;
    default: c->tls_failed = true; ERR_clear_error(); errno = EPROTO; return -1;
    }
}

/* Runs the server side of the TLS handshake as far as the socket lets
 * it. 1: done (a connection on an SSL listener now has its certificate's
 * principal), 0: waiting for the socket, -1: failed and closed. */
static int tls_handshake_step(struct conn *c)
{
    if (!c->ssl) {
        char detail[256], why[320];
        tls_errors(detail, sizeof detail);
        snprintf(why, sizeof why, "cannot start TLS: %s", detail);
        conn_close(c, why);
        return -1;
    }
    ERR_clear_error();
    int rc = SSL_do_handshake(c->ssl);
    if (rc == 1) {
        c->tls_handshaking = false;
        if (c->protocol == SECURITY_SSL) {
            free(c->principal);
            char *subject = NULL;
            c->principal = tls_principal(c->ssl, c->listener, &subject);
            if (!c->principal) {
                char why[600];
                snprintf(why, sizeof why, "no ssl.principal.mapping.rules rule applies to the client certificate's "
                                          "subject %.500s", subject ? subject : "?");
                free(subject);
                conn_close(c, why);
                return -1;
            }
            free(subject);
        }
        slog_debug("connection from %s on %s: %s %s, principal %s", c->peer, c->listener, SSL_get_version(c->ssl),
                   SSL_get_cipher_name(c->ssl), c->principal ? c->principal : "-");
        return 1;
    }
    int e = SSL_get_error(c->ssl, rc);
    if (e == SSL_ERROR_WANT_READ) {
        ev_io_stop(c->w->loop, &c->wio);
        return 0;
    }
    if (e == SSL_ERROR_WANT_WRITE) {
        ev_io_start(c->w->loop, &c->wio);
        return 0;
    }
    char detail[384], why[512];
    int saved = errno;
    bool queued = ERR_peek_error() != 0;
    tls_errors(detail, sizeof detail);
    long vr = SSL_get_verify_result(c->ssl);
    if (!queued && vr == X509_V_OK && (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && !saved))) {
        /* the client went away before finishing: a port probe, or a
         * client giving up on our certificate (its alert, if it sent
         * one, is an OpenSSL error and logged below) */
        slog_debug("connection from %s on %s closed by the client during the TLS handshake", c->peer, c->listener);
        conn_close(c, NULL);
        return -1;
    }
    if (vr != X509_V_OK)
        snprintf(why, sizeof why, "TLS handshake failed on listener %s: client certificate refused: %s (%s)",
                 c->listener, X509_verify_cert_error_string(vr), detail);
    else if (!queued)
        snprintf(why, sizeof why, "TLS handshake failed on listener %s: %s", c->listener,
                 saved ? strerror(saved) : "no detail from OpenSSL");
    else
        snprintf(why, sizeof why, "TLS handshake failed on listener %s: %s", c->listener, detail);
    conn_close(c, why);
    return -1;
}

/* Writes as much of r's output as the socket takes. Returns 1 when all
 * of it is written, 0 on EAGAIN, -1 on error (connection closed). */
static int write_request(struct conn *c, struct request *r)
{
    struct kwriter *out = &r->out;
    int64_t total = kw_size(out);
    while (r->sent < total) {
        /* Locate the piece holding byte r->sent of the logical stream:
         * memory bytes with file ranges spliced in at their offsets. */
        int64_t mem_before = 0, pos = 0;
        int i;
        for (i = 0; i < out->nsplices; i++) {
            int64_t mem_len = (int64_t)out->splices[i].at - mem_before;
            if (r->sent < pos + mem_len)
                break;
            pos += mem_len;
            mem_before = (int64_t)out->splices[i].at;
            if (r->sent < pos + out->splices[i].len)
                break;
            pos += out->splices[i].len;
        }
        ssize_t n;
        int64_t mem_end = i < out->nsplices ? (int64_t)out->splices[i].at : (int64_t)out->b.len;
        int64_t in_mem_off = mem_before + (r->sent - pos);
        if (i < out->nsplices && r->sent >= pos + (mem_end - mem_before)) {
            /* inside file splice i */
            struct kw_splice *s = &out->splices[i];
            int64_t into = r->sent - pos - (mem_end - mem_before);
            off_t off = (off_t)(s->off + into);
            size_t want = (size_t)(s->len - into);
            if (c->ssl) {
                /* no sendfile through TLS: a bounded copy (no kTLS here) */
                uint8_t tmp[TLS_COPY_CHUNK];
                ssize_t got = pread(s->file->fd, tmp, want < sizeof tmp ? want : sizeof tmp, off);
                n = got > 0 ? tls_send(c, tmp, (size_t)got) : got;
            } else {
                n = sendfile(c->fd, s->file->fd, &off, want);
            }
            if (n == 0) {
                /* The file is shorter than the range: truncated under us. */
                conn_close(c, "record data vanished while sending a fetch response");
                return -1;
            }
        } else {
            size_t want = (size_t)(mem_end - in_mem_off);
            int flags = MSG_NOSIGNAL | (i < out->nsplices ? MSG_MORE : 0);
            n = c->ssl ? tls_send(c, out->b.data + in_mem_off, want)
                       : send(c->fd, out->b.data + in_mem_off, want, flags);
        }
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            if (errno == EINTR)
                continue;
            char why[128];
            snprintf(why, sizeof why, "write failed: %s", strerror(errno));
            conn_close(c, errno == EPIPE || errno == ECONNRESET ? NULL : why);
            return -1;
        }
        r->sent += n;
        counter_add(&c->w->counters.bytes_out, (uint64_t)n);
    }
    return 1;
}

static void flush_done(struct conn *c)
{
    while (!c->closing && c->head && c->head->done) {
        struct request *r = c->head;
        if (!r->no_response) {
            int rc = write_request(c, r);
            if (rc < 0)
                return;
            if (rc == 0) {
                if (c->tls_write_wants_read) {
                    /* on_read's flush retries the write once the
                     * peer's records arrive */
                    ev_io_stop(c->w->loop, &c->wio);
                    update_reading(c);
                } else {
                    ev_io_start(c->w->loop, &c->wio);
                }
                return;
            }
        }
        c->head = r->next;
        if (!c->head)
            c->tail = NULL;
        c->inflight--;
        netstats_request_done(&c->w->counters, r->api_key, clock_mono_us() - r->received_us);
        if (r->close_after) {
            /* the answer that ends the connection (a failed SASL
             * exchange) is out: close now */
            char why[256];
            snprintf(why, sizeof why, "%s", r->close_why ? r->close_why : "closing after the response");
            request_free(r);
            conn_close(c, why);
            return;
        }
        request_free(r);
    }
    ev_io_stop(c->w->loop, &c->wio);
    update_reading(c);
}

static void on_unmute(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)revents;
    struct conn *c = t->data;
    ev_timer_stop(loop, t);
    update_reading(c);
}

void conn_mute(struct conn *c, int64_t ms)
{
    if (ms <= 0 || c->closing)
        return;
    double until = ev_now(c->w->loop) + (double)ms / 1000.0;
    if (ev_is_active(&c->mute_timer) && c->muted_until >= until)
        return;
    c->muted_until = until;
    ev_timer_stop(c->w->loop, &c->mute_timer);
    ev_timer_set(&c->mute_timer, (double)ms / 1000.0, 0.);
    ev_timer_start(c->w->loop, &c->mute_timer);
    update_reading(c);
}

void conn_request_done(struct conn *c)
{
    /* Never write from inside a handler: the handler may still hold the
     * request. Queue a write event instead; it runs after the current
     * callback returns. While busy, the read path flushes on its way out. */
    if (c->closing || c->busy)
        return;
    ev_feed_event(c->w->loop, &c->wio, EV_WRITE);
}

static void on_write(struct ev_loop *loop, ev_io *io, int revents)
{
    (void)loop;
    (void)revents;
    struct conn *c = io->data;
    c->busy++;
    c->last_active = ev_now(c->w->loop);
    if (c->tls_handshaking) {
        if (tls_handshake_step(c) > 0)
            ev_feed_event(c->w->loop, &c->rio, EV_READ);
        c->busy--;
        if (c->closing && !c->busy)
            conn_destroy(c);
        return;
    }
    if (c->tls_read_wants_write) {
        c->tls_read_wants_write = false;
        ev_feed_event(c->w->loop, &c->rio, EV_READ);
    }
    flush_done(c);
    c->busy--;
    if (c->closing && !c->busy)
        conn_destroy(c);
}

static void submit_frame(struct conn *c, uint8_t *frame, size_t len, size_t cap)
{
    c->big_frame = len >= READ_CHUNK ? len : 0;
    struct request *r = xcalloc(1, sizeof *r);
    r->conn = c;
    r->worker = c->w;
    r->broker = c->w->broker;
    r->frame = frame;
    r->frame_len = len;
    r->frame_cap = cap;
    r->received_us = clock_mono_us();
    r->api_key = -1; /* until dispatch reads the header: a raw SASL token has none */
    arena_init(&r->arena);
    kw_init(&r->out);
    if (c->tail)
        c->tail->next = r;
    else
        c->head = r;
    c->tail = r;
    c->inflight++;
    c->w->handlers->dispatch(r);
}

/* Frames as many requests as the input holds. Returns -1 if closed. */
static int process_input(struct conn *c)
{
    int32_t max = c->w->max_request_bytes;
    size_t pos = 0;
    while (!c->closing) {
        if (c->frame) {
            size_t take = c->in.len - pos;
            if (take > c->frame_len - c->frame_got)
                take = c->frame_len - c->frame_got;
            memcpy(c->frame + c->frame_got, c->in.data + pos, take);
            c->frame_got += take;
            pos += take;
            if (c->frame_got < c->frame_len)
                break;
            uint8_t *f = c->frame;
            size_t flen = c->frame_len;
            c->frame = NULL;
            submit_frame(c, f, flen, c->frame_cap);
            continue;
        }
        if (c->in.len - pos < 4)
            break;
        int32_t size = (int32_t)be32_read(c->in.data + pos);
        if (size < 0 || size > max) {
            char why[160];
            snprintf(why, sizeof why,
                     "request size %d is larger than socket.request.max.bytes (%d) or negative", size,
                     max);
            conn_close(c, why);
            return -1;
        }
        if (size < 8 && !c->headerless_frames) {
            conn_close(c, "request frame too short for a request header");
            return -1;
        }
        pos += 4;
        c->frame = frame_pool_get(&c->w->frames, (size_t)size, &c->frame_cap);
        c->frame_len = (size_t)size;
        c->frame_got = 0;
    }
    /* keep the unframed tail at the start of the buffer */
    if (pos > 0) {
        memmove(c->in.data, c->in.data + pos, c->in.len - pos);
        c->in.len -= pos;
    }
    return c->closing ? -1 : 0;
}

/* An emptied input buffer goes back to the worker (one spare) or is
 * freed: idle connections hold no read buffer. */
static void give_back_input(struct conn *c)
{
    if (c->w->spare_in.cap == 0 && c->in.cap >= READ_CHUNK) {
        c->w->spare_in = c->in;
        buf_init(&c->in);
    } else {
        buf_free(&c->in);
    }
}

/* Puts a then b (copies) in front of what the input buffer holds. */
static void in_front(struct conn *c, const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    size_t had = c->in.len;
    buf_reserve(&c->in, na + nb);
    memmove(c->in.data + na + nb, c->in.data, had);
    if (na)
        memcpy(c->in.data, a, na);
    if (nb)
        memcpy(c->in.data + na, b, nb);
    c->in.len = had + na + nb;
}

/* A plaintext read that puts a large frame's bytes where they belong
 * without the copy from the input buffer process_input would make: the
 * rest of the frame being filled and, on a connection whose frames are
 * large (a producer's), the next frame's size and as much of its body as
 * has arrived, into a pool frame, in the same call. Whatever follows, or
 * is not such a frame, lands in the input buffer as a plain read would
 * have left it, for process_input. Returns what read() does; *asked is
 * how much it could have returned. */
static ssize_t read_framed(struct conn *c, size_t *asked)
{
    if (c->in.cap == 0 && c->w->spare_in.cap) {
        c->in = c->w->spare_in; /* the worker's, see struct worker */
        buf_init(&c->w->spare_in);
    }
    uint8_t *tail = buf_reserve(&c->in, READ_CHUNK);
    size_t rest = c->frame ? c->frame_len - c->frame_got : 0;
    size_t hint = c->frame && c->frame_len >= READ_CHUNK ? c->frame_len : c->big_frame;
    size_t cap = 0;
    uint8_t *f = hint >= READ_CHUNK ? frame_pool_get(&c->w->frames, hint, &cap) : NULL;
    uint8_t size_be[4];
    struct iovec iov[4];
    int k = 0;
    if (rest)
        iov[k++] = (struct iovec){c->frame + c->frame_got, rest};
    if (f) {
        iov[k++] = (struct iovec){size_be, 4};
        iov[k++] = (struct iovec){f, cap};
    }
    iov[k++] = (struct iovec){tail, READ_CHUNK};
    *asked = rest + (f ? 4 + cap : 0) + READ_CHUNK;
    ssize_t n = readv(c->fd, iov, k);
    if (n <= 0) {
        int e = errno;
        frame_pool_put(&c->w->frames, f, cap);
        errno = e;
        return n;
    }
    counter_add(&c->w->counters.bytes_in, (uint64_t)n);
    size_t m = (size_t)n, into = m < rest ? m : rest;
    c->frame_got += into;
    m -= into; /* bytes after the frame being filled */
    if (!f) {
        c->in.len += m;
        return n; /* process_input submits the frame once it is full */
    }
    if (m == 0) {
        frame_pool_put(&c->w->frames, f, cap);
        return n;
    }
    if (c->frame) { /* full, and the next one has begun */
        uint8_t *done = c->frame;
        c->frame = NULL;
        submit_frame(c, done, c->frame_len, c->frame_cap);
        if (c->closing) {
            frame_pool_put(&c->w->frames, f, cap);
            return n;
        }
    }
    size_t body = m > 4 ? m - 4 : 0;
    size_t in_f = body < cap ? body : cap, in_tail = body - in_f;
    int32_t size = m >= 4 ? (int32_t)be32_read(size_be) : -1;
    if (size >= READ_CHUNK && size <= c->w->max_request_bytes && (size_t)size <= cap) {
        size_t own = in_f < (size_t)size ? in_f : (size_t)size;
        c->frame = f;
        c->frame_len = (size_t)size;
        c->frame_got = own;
        c->frame_cap = cap;
        /* bytes past this frame too (a client pipelining) */
        c->in.len = in_tail;
        if (in_f > own)
            in_front(c, f + own, in_f - own, NULL, 0);
        return n;
    }
    /* not a frame to adopt: everything to the input buffer, in order */
    c->in.len = in_tail;
    in_front(c, size_be, m < 4 ? m : 4, f, in_f);
    frame_pool_put(&c->w->frames, f, cap);
    return n;
}

static void on_read(struct ev_loop *loop, ev_io *io, int revents)
{
    (void)loop;
    (void)revents;
    struct conn *c = io->data;
    c->busy++;
    c->last_active = ev_now(c->w->loop);
    if (c->tls_handshaking && tls_handshake_step(c) <= 0) {
        c->busy--;
        if (c->closing && !c->busy)
            conn_destroy(c);
        return;
    }
    for (int rounds = 0; rounds < 16 && !c->closing && c->inflight < c->w->queued_max_requests &&
                         !ev_is_active(&c->mute_timer);
         rounds++) {
        ssize_t n;
        if (!c->ssl && !c->headerless_frames && c->in.len == 0 && (c->frame || c->big_frame)) {
            size_t asked;
            n = read_framed(c, &asked);
            if (n > 0) {
                if (process_input(c) < 0)
                    break;
                if ((size_t)n < asked)
                    break; /* the socket is empty */
                continue;
            }
        } else if (c->frame && c->frame_len - c->frame_got >= READ_CHUNK) {
            /* big frame: read straight into it, no extra copy */
            n = conn_recv(c, c->frame + c->frame_got, c->frame_len - c->frame_got);
            if (n > 0) {
                c->frame_got += (size_t)n;
                if (c->frame_got == c->frame_len) {
                    uint8_t *f = c->frame;
                    size_t flen = c->frame_len;
                    c->frame = NULL;
                    submit_frame(c, f, flen, c->frame_cap);
                }
                continue;
            }
        } else {
            if (c->in.cap == 0 && c->w->spare_in.cap) {
                c->in = c->w->spare_in; /* the worker's, see struct worker */
                buf_init(&c->w->spare_in);
            }
            uint8_t *p = buf_reserve(&c->in, READ_CHUNK);
            n = conn_recv(c, p, READ_CHUNK);
            if (n > 0) {
                c->in.len += (size_t)n;
                if (process_input(c) < 0)
                    break;
                /* a short read empties the socket; SSL_read returns one
                 * record at a time, so TLS reads on until EAGAIN */
                if ((size_t)n < READ_CHUNK && !c->ssl)
                    break;
                continue;
            }
        }
        if (n == 0) {
            if (c->frame || c->in.len)
                conn_close(c, "client closed the connection in the middle of a request");
            else
                conn_close(c, NULL);
            break;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            break;
        if (errno == EINTR)
            continue;
        char why[128];
        snprintf(why, sizeof why, "read failed: %s", strerror(errno));
        conn_close(c, errno == ECONNRESET ? NULL : why);
        break;
    }
    if (!c->closing)
        flush_done(c);
    if (!c->closing && c->in.len == 0 && c->in.cap)
        give_back_input(c);
    if (!c->closing && c->ssl && c->reading && SSL_pending(c->ssl) > 0)
        ev_feed_event(c->w->loop, &c->rio, EV_READ);
    c->busy--;
    if (c->closing && !c->busy)
        conn_destroy(c);
}
