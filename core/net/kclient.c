#include "net/kclient.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>

#include "net/sasl_client.h"
#include "net/tls.h"
#include "proto/gen/kapi.h"
#include "proto/gen/sasl_authenticate_request.h"
#include "proto/gen/sasl_authenticate_response.h"
#include "proto/gen/sasl_handshake_request.h"
#include "proto/gen/sasl_handshake_response.h"
#include "proto/kerr.h"
#include "util/thread.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/slog.h"

/* KC_TLS: the TLS handshake; KC_HANDSHAKE: ApiVersions; KC_SASL:
 * SaslHandshake and SaslAuthenticate rounds (one request at a time in
 * the handshake slot). */
enum kc_state { KC_IDLE, KC_RESOLVING, KC_CONNECTING, KC_TLS, KC_HANDSHAKE, KC_SASL, KC_READY };

/* A host name looked up off the loop (getaddrinfo may wait for DNS), on
 * the process's resolver thread. Owned by that thread while queued or
 * running and by its kclient once done; a kclient that goes (or gives
 * up) meanwhile clears owner, and the thread frees the job. Fields after
 * next are under rs_lock. */
struct kc_resolve {
    struct kc_resolve *next;
    char *host, port[16];
    struct kclient *owner;
    bool done;
    int err; /* getaddrinfo's, 0 on success */
    struct sockaddr_storage addr;
    socklen_t addrlen;
};

struct kc_req {
    struct kc_req *next;
    int32_t corr;
    int16_t key, version;
    kclient_cb cb;           /* NULL for the ApiVersions handshake */
    kclient_raw_cb raw_cb;   /* set for kclient_send_raw requests */
    void *ctx;
    uint8_t *bytes;          /* the whole frame, size prefix included */
    size_t len, sent;
    int64_t deadline_ms;
};

struct kc_queue {
    struct kc_req *head, *tail;
    int n;
};

struct kclient {
    struct ev_loop *loop;
    char *host;
    int port;
    char *client_id;
    char peer[300];
    int32_t request_timeout_ms, recv_buffer_bytes;
    int32_t connect_timeout_ms; /* of the next setup: base..max */
    int32_t connect_timeout_base_ms, connect_timeout_max_ms;
    int32_t backoff_ms, backoff_max_ms, backoff_cur_ms;
    int64_t next_connect_ms;

    enum kc_state state;
    int fd;
    ev_io rio, wio;
    ev_timer timer;
    int32_t next_corr;
    bool freeing;

    struct kc_resolve *resolving; /* the lookup in flight (KC_RESOLVING) */
    ev_async resolved;            /* the resolver thread says it is done */
    bool resolved_started;

    struct kc_queue unsent;   /* encoded, not yet (fully) written */
    struct kc_queue inflight; /* written, awaiting the response */
    struct kc_req *handshake; /* ApiVersions (HANDSHAKE) or the SASL request (SASL) */

    const struct kclient_security *sec; /* borrowed; NULL: PLAINTEXT */
    SSL *ssl;                    /* while connected over TLS */
    int64_t setup_deadline_ms;   /* connect and TLS handshake */
    struct sasl_client *sasl;    /* during KC_SASL */
    /* KIP-368: when to log in again on this connection (0: the peer set
     * no session lifetime), and whether the SASL exchange under way is
     * such a re-authentication (requests wait in unsent meanwhile). */
    int64_t reauth_at_ms;
    bool reauthenticating;
    char last_err[256];          /* the last setup failure logged */
    struct buf in;

    /* peer's ranges, indexed by API key; max < 0 = not served */
    int16_t peer_min[KAPI_MAX_KEY + 1];
    int16_t peer_max[KAPI_MAX_KEY + 1];
};

static void on_io(struct ev_loop *loop, ev_io *w, int revents);
static void on_timer(struct ev_loop *loop, ev_timer *t, int revents);
static void start_connect(struct kclient *c);
static void flush_out(struct kclient *c);
static void arm_timer(struct kclient *c);
static void maybe_reauth(struct kclient *c);

static void q_push(struct kc_queue *q, struct kc_req *r)
{
    r->next = NULL;
    if (q->tail)
        q->tail->next = r;
    else
        q->head = r;
    q->tail = r;
    q->n++;
}

static struct kc_req *q_pop(struct kc_queue *q)
{
    struct kc_req *r = q->head;
    if (!r)
        return NULL;
    q->head = r->next;
    if (!q->head)
        q->tail = NULL;
    q->n--;
    return r;
}

static void req_free(struct kc_req *r)
{
    free(r->bytes);
    free(r);
}

static void complete(struct kc_req *r, int err, void *resp, struct arena *ar)
{
    if (r->raw_cb && err)
        r->raw_cb(r->ctx, err, r->version, NULL, 0);
    else if (r->cb)
        r->cb(r->ctx, err, r->version, resp, ar);
    req_free(r);
}

/* ---- the resolver thread ---- */

static pthread_mutex_t rs_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rs_cond = PTHREAD_COND_INITIALIZER;
static struct kc_resolve *rs_head, *rs_tail;
static bool rs_running;

static void rs_free(struct kc_resolve *j)
{
    free(j->host);
    free(j);
}

static void *resolver_main(void *arg)
{
    (void)arg;
    thread_set_name("samsa-resolver");
    pthread_mutex_lock(&rs_lock);
    for (;;) {
        while (!rs_head)
            pthread_cond_wait(&rs_cond, &rs_lock);
        struct kc_resolve *j = rs_head;
        rs_head = j->next;
        if (!rs_head)
            rs_tail = NULL;
        if (!j->owner) {
            rs_free(j);
            continue;
        }
        pthread_mutex_unlock(&rs_lock);
        struct addrinfo hints = {0}, *res = NULL;
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_NUMERICSERV;
        int err = getaddrinfo(j->host, j->port, &hints, &res);
        if (err == 0 && !res)
            err = EAI_NONAME;
        pthread_mutex_lock(&rs_lock);
        if (err == 0 && res->ai_addrlen <= sizeof j->addr) {
            memcpy(&j->addr, res->ai_addr, res->ai_addrlen);
            j->addrlen = res->ai_addrlen;
        } else if (err == 0) {
            err = EAI_FAMILY;
        }
        if (res)
            freeaddrinfo(res);
        j->err = err;
        j->done = true;
        if (j->owner)
            ev_async_send(j->owner->loop, &j->owner->resolved);
        else
            rs_free(j);
    }
    return NULL;
}

/* Queues j for the resolver thread (started at the first name). */
static void rs_submit(struct kc_resolve *j)
{
    pthread_mutex_lock(&rs_lock);
    if (!rs_running) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        rs_running = pthread_create(&t, &a, resolver_main, NULL) == 0;
        pthread_attr_destroy(&a);
    }
    if (!rs_running) {
        /* no thread: the lookup fails (logged by the caller) */
        j->err = EAI_SYSTEM;
        j->done = true;
        ev_async_send(j->owner->loop, &j->owner->resolved);
        pthread_mutex_unlock(&rs_lock);
        return;
    }
    j->next = NULL;
    if (rs_tail)
        rs_tail->next = j;
    else
        rs_head = j;
    rs_tail = j;
    pthread_cond_signal(&rs_cond);
    pthread_mutex_unlock(&rs_lock);
}

/* Loop thread: c stops waiting for its lookup (disconnect, free). */
static void rs_abandon(struct kclient *c)
{
    struct kc_resolve *j = c->resolving;
    if (!j)
        return;
    c->resolving = NULL;
    pthread_mutex_lock(&rs_lock);
    bool mine = j->done;
    j->owner = NULL; /* not done: the thread frees it */
    pthread_mutex_unlock(&rs_lock);
    if (mine)
        rs_free(j);
}

struct kclient *kclient_new(struct ev_loop *loop, const struct kclient_opts *o)
{
    struct kclient *c = xcalloc(1, sizeof *c);
    c->loop = loop;
    c->host = xstrdup(o->host ? o->host : "127.0.0.1");
    c->port = o->port;
    c->client_id = xstrdup(o->client_id ? o->client_id : "samsa");
    c->request_timeout_ms = o->request_timeout_ms > 0 ? o->request_timeout_ms : 30000;
    c->connect_timeout_base_ms = o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 10000;
    c->connect_timeout_max_ms = o->connect_timeout_max_ms > c->connect_timeout_base_ms ? o->connect_timeout_max_ms
                                                                                        : c->connect_timeout_base_ms;
    c->connect_timeout_ms = c->connect_timeout_base_ms;
    c->recv_buffer_bytes = o->recv_buffer_bytes;
    c->backoff_ms = o->reconnect_backoff_ms > 0 ? o->reconnect_backoff_ms : 50;
    c->backoff_max_ms = 1000;
    c->backoff_cur_ms = c->backoff_ms;
    c->fd = -1;
    c->next_corr = 1;
    c->sec = o->security && (o->security->ssl_ctx || o->security->sasl_mechanism) ? o->security : NULL;
    snprintf(c->peer, sizeof c->peer, "%s:%d", c->host, c->port);
    buf_init(&c->in);
    for (int i = 0; i <= KAPI_MAX_KEY; i++)
        c->peer_max[i] = -1;
    ev_init(&c->timer, on_timer);
    c->timer.data = c;
    return c;
}

const char *kclient_peer(const struct kclient *c) { return c->peer; }
bool kclient_ready(const struct kclient *c) { return c->state == KC_READY; }
int kclient_pending(const struct kclient *c) { return c->unsent.n + c->inflight.n; }

int16_t kclient_version(const struct kclient *c, int16_t key, int16_t max)
{
    const struct kapi *a = kapi_get(key);
    if (!a || c->state != KC_READY || c->peer_max[key] < 0)
        return -1;
    int16_t hi = c->peer_max[key] < a->max_version ? c->peer_max[key] : a->max_version;
    if (max < hi)
        hi = max;
    int16_t lo = c->peer_min[key] > a->min_version ? c->peer_min[key] : a->min_version;
    return hi >= lo ? hi : -1;
}

/* Closes the socket; in-flight requests fail (those whose deadline
 * passed with REQUEST_TIMED_OUT). Queued ones fail too when fail_unsent:
 * callers (Raft, fetchers) have their own retry policies and want to
 * know at once that the peer is unreachable. */
static void disconnect(struct kclient *c, int err, bool fail_unsent)
{
    if (c->fd >= 0) {
        ev_io_stop(c->loop, &c->rio);
        ev_io_stop(c->loop, &c->wio);
        if (c->ssl) {
            SSL_free(c->ssl);
            c->ssl = NULL;
        }
        close(c->fd);
        c->fd = -1;
    }
    sasl_client_free(c->sasl);
    c->sasl = NULL;
    c->reauth_at_ms = 0;
    c->reauthenticating = false;
    rs_abandon(c);
    if (c->state != KC_READY && c->state != KC_IDLE)
        c->connect_timeout_ms = c->connect_timeout_ms > c->connect_timeout_max_ms / 2 ? c->connect_timeout_max_ms
                                                                                      : c->connect_timeout_ms * 2;
    c->state = KC_IDLE;
    buf_reset(&c->in);
    int64_t now = clock_mono_ms();
    if (c->handshake) {
        req_free(c->handshake);
        c->handshake = NULL;
    }
    c->next_connect_ms = now + c->backoff_cur_ms;
    c->backoff_cur_ms = c->backoff_cur_ms * 2 > c->backoff_max_ms ? c->backoff_max_ms : c->backoff_cur_ms * 2;
    /* Detach before running callbacks: a callback may queue a retry,
     * which must wait for the next connection, not fail here again. */
    struct kc_queue failing = c->inflight;
    memset(&c->inflight, 0, sizeof c->inflight);
    struct kc_queue unsent = {0};
    if (fail_unsent) {
        unsent = c->unsent;
        memset(&c->unsent, 0, sizeof c->unsent);
    } else if (c->unsent.head) {
        c->unsent.head->sent = 0; /* a partial write restarts on the next connection */
    }
    struct kc_req *r;
    while ((r = q_pop(&failing)))
        complete(r, now >= r->deadline_ms ? KERR_REQUEST_TIMED_OUT : err, NULL, NULL);
    while ((r = q_pop(&unsent)))
        complete(r, err, NULL, NULL);
}

void kclient_free(struct kclient *c)
{
    if (!c)
        return;
    c->freeing = true;
    ev_timer_stop(c->loop, &c->timer);
    disconnect(c, KERR_NETWORK_EXCEPTION, true);
    if (c->resolved_started)
        ev_async_stop(c->loop, &c->resolved);
    buf_free(&c->in);
    free(c->host);
    free(c->client_id);
    free(c);
}

/* Encodes a frame: size, request header (v1 or v2), body (a struct, or
 * raw bytes when raw is set). */
static struct kc_req *encode_any(struct kclient *c, int16_t key, int16_t version, const void *body,
                                 const uint8_t *raw, size_t rawlen, kclient_cb cb, void *ctx)
{
    const struct kapi *a = kapi_get(key);
    struct kwriter w;
    kw_init(&w);
    kw_i32(&w, 0);
    kw_i16(&w, key);
    kw_i16(&w, version);
    struct kc_req *r = xcalloc(1, sizeof *r);
    r->corr = c->next_corr;
    c->next_corr = c->next_corr == INT32_MAX ? 1 : c->next_corr + 1;
    kw_i32(&w, r->corr);
    int hv = kapi_request_header_version(a, version);
    if (hv >= 1)
        kw_string(&w, KSTR(c->client_id), false);
    if (hv >= 2)
        kw_uvarint(&w, 0);
    if (raw)
        kw_raw(&w, raw, rawlen);
    else
        a->req_encode(&w, version, body);
    be32_write(w.b.data, (uint32_t)(w.b.len - 4));
    r->key = key;
    r->version = version;
    r->cb = cb;
    r->ctx = ctx;
    r->bytes = buf_steal(&w.b, &r->len);
    kw_free(&w);
    return r;
}

static struct kc_req *encode(struct kclient *c, int16_t key, int16_t version, const void *body, kclient_cb cb,
                             void *ctx)
{
    return encode_any(c, key, version, body, NULL, 0, cb, ctx);
}

static void arm_timer(struct kclient *c)
{
    int64_t next = INT64_MAX;
    if (c->inflight.head)
        next = c->inflight.head->deadline_ms;
    if (c->unsent.head && c->unsent.head->deadline_ms < next)
        next = c->unsent.head->deadline_ms;
    if (c->handshake && c->handshake->deadline_ms < next)
        next = c->handshake->deadline_ms;
    if (c->state == KC_TLS && c->setup_deadline_ms < next)
        next = c->setup_deadline_ms;
    if (c->state == KC_IDLE && c->unsent.head && c->next_connect_ms < next)
        next = c->next_connect_ms;
    /* an idle connection re-authenticates on time; a busy one holds new
     * requests back from then (flush_out) until its in-flight ones are
     * answered (maybe_reauth) */
    if (c->state == KC_READY && c->reauth_at_ms && !c->inflight.head && c->reauth_at_ms < next)
        next = c->reauth_at_ms;
    ev_timer_stop(c->loop, &c->timer);
    if (next == INT64_MAX)
        return;
    int64_t now = clock_mono_ms();
    double after = next > now ? (double)(next - now) / 1000.0 : 0.001;
    ev_timer_set(&c->timer, after, 0.);
    ev_timer_start(c->loop, &c->timer);
}

int kclient_send(struct kclient *c, int16_t key, int16_t version, const void *body, kclient_cb cb, void *ctx)
{
    if (c->freeing)
        return KERR_NETWORK_EXCEPTION;
    if (!kapi_get(key))
        return KERR_UNSUPPORTED_VERSION;
    struct kc_req *r = encode(c, key, version, body, cb, ctx);
    r->deadline_ms = clock_mono_ms() + c->request_timeout_ms;
    q_push(&c->unsent, r);
    if (c->state == KC_IDLE && clock_mono_ms() >= c->next_connect_ms)
        start_connect(c);
    else if (c->state == KC_READY) {
        maybe_reauth(c);
        flush_out(c);
    }
    arm_timer(c);
    return 0;
}

int kclient_send_raw(struct kclient *c, int16_t key, int16_t version, const uint8_t *body, size_t len,
                     kclient_raw_cb cb, void *ctx)
{
    if (c->freeing)
        return KERR_NETWORK_EXCEPTION;
    if (!kapi_get(key))
        return KERR_UNSUPPORTED_VERSION;
    static const uint8_t none[1];
    struct kc_req *r = encode_any(c, key, version, NULL, body ? body : none, len, NULL, ctx);
    r->raw_cb = cb;
    r->deadline_ms = clock_mono_ms() + c->request_timeout_ms;
    q_push(&c->unsent, r);
    if (c->state == KC_IDLE && clock_mono_ms() >= c->next_connect_ms)
        start_connect(c);
    else if (c->state == KC_READY) {
        maybe_reauth(c);
        flush_out(c);
    }
    arm_timer(c);
    return 0;
}

/* Whether the peer serves key at version (its advertised range only: a
 * raw request may carry a version the generated codecs do not know). */
static bool peer_serves(const struct kclient *c, int16_t key, int16_t version)
{
    return c->peer_max[key] >= 0 && version >= c->peer_min[key] && version <= c->peer_max[key];
}

/* A connection setup failure: logged once until it changes (a peer that
 * keeps refusing us is retried with backoff, not logged every time). */
static void setup_failed(struct kclient *c, const char *why)
{
    if (strcmp(c->last_err, why) != 0) {
        snprintf(c->last_err, sizeof c->last_err, "%s", why);
        slog_warn("kclient %s (listener %s): %s", c->peer, c->sec && c->sec->listener ? c->sec->listener : "?", why);
    }
    disconnect(c, KERR_NETWORK_EXCEPTION, true);
}

/* Socket I/O, through OpenSSL on a TLS connection. Bytes moved; 0 when
 * the peer closed (reads); -1 with errno EAGAIN to wait for the socket
 * (*want_read: for readability, which the read watcher always waits
 * for; else writability) or another errno on failure. */
static ssize_t io_read(struct kclient *c, void *p, size_t n, bool *want_read)
{
    *want_read = true;
    if (!c->ssl)
        return read(c->fd, p, n);
    size_t got = 0;
    if (SSL_read_ex(c->ssl, p, n, &got) == 1)
        return (ssize_t)got;
    switch (SSL_get_error(c->ssl, 0)) {
    case SSL_ERROR_WANT_READ:
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_WANT_WRITE:
        *want_read = false;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    default:
        ERR_clear_error();
        errno = EIO;
        return -1;
    }
}

static ssize_t io_write(struct kclient *c, const void *p, size_t n, bool *want_read)
{
    *want_read = false;
    if (!c->ssl)
        return send(c->fd, p, n, MSG_NOSIGNAL);
    size_t put = 0;
    if (SSL_write_ex(c->ssl, p, n, &put) == 1)
        return (ssize_t)put;
    switch (SSL_get_error(c->ssl, 0)) {
    case SSL_ERROR_WANT_READ:
        *want_read = true;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_WANT_WRITE:
        errno = EAGAIN;
        return -1;
    default:
        ERR_clear_error();
        errno = EIO;
        return -1;
    }
}

static void send_handshake(struct kclient *c);

/* Drives the TLS handshake; on success ApiVersions follows. */
static void tls_step(struct kclient *c)
{
    ERR_clear_error();
    int rc = SSL_do_handshake(c->ssl);
    if (rc == 1) {
        send_handshake(c);
        return;
    }
    int e = SSL_get_error(c->ssl, rc);
    if (e == SSL_ERROR_WANT_READ) {
        ev_io_stop(c->loop, &c->wio);
        return;
    }
    if (e == SSL_ERROR_WANT_WRITE) {
        ev_io_start(c->loop, &c->wio);
        return;
    }
    char detail[300], why[400];
    long vr = SSL_get_verify_result(c->ssl);
    if (vr != X509_V_OK)
        snprintf(detail, sizeof detail, "certificate verification failed: %s", X509_verify_cert_error_string(vr));
    else
        tls_errors(detail, sizeof detail);
    snprintf(why, sizeof why, "TLS handshake failed: %s", detail);
    setup_failed(c, why);
}

/* Queues one SASL request (SaslHandshake or SaslAuthenticate) in the
 * handshake slot. */
static void sasl_send(struct kclient *c, int16_t key, int16_t version, const void *body)
{
    c->handshake = encode(c, key, version, body, NULL, NULL);
    c->handshake->deadline_ms = clock_mono_ms() + c->connect_timeout_ms;
    c->state = KC_SASL;
    ev_io_start(c->loop, &c->wio);
}

static void sasl_authenticate(struct kclient *c, const uint8_t *tok, size_t len)
{
    sasl_authenticate_request_t q;
    sasl_authenticate_request_init(&q);
    q.auth_bytes = (kbytes_t){tok, (int32_t)len};
    int16_t v = c->peer_max[KAPI_SASL_AUTHENTICATE] >= 1 ? 1 : 0;
    sasl_send(c, KAPI_SASL_AUTHENTICATE, v, &q);
}

static void ready(struct kclient *c)
{
    c->state = KC_READY;
    c->backoff_cur_ms = c->backoff_ms;
    c->connect_timeout_ms = c->connect_timeout_base_ms;
    c->last_err[0] = '\0';
}

/* KIP-368 as Java clients do it: log in again at a random point between
 * 85 % and 95 % of the session lifetime the peer gave (0: none). */
static void plan_reauth(struct kclient *c, int64_t lifetime_ms)
{
    if (lifetime_ms <= 0) {
        c->reauth_at_ms = 0;
        return;
    }
    uint32_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
        r = (uint32_t)clock_mono_ms() * 2654435761u;
    double frac = 0.85 + 0.10 * ((double)r / 4294967296.0);
    c->reauth_at_ms = clock_mono_ms() + (int64_t)((double)lifetime_ms * frac);
}

/* Starts the SASL login after ApiVersions, or a re-authentication of a
 * ready connection with nothing in flight. -1 when it cannot. */
static int sasl_start(struct kclient *c)
{
    if (c->peer_max[KAPI_SASL_HANDSHAKE] < 1 || c->peer_max[KAPI_SASL_AUTHENTICATE] < 0) {
        setup_failed(c, "the peer does not offer SaslHandshake v1 and SaslAuthenticate");
        return -1;
    }
    char why[256];
    c->sasl = sasl_client_new(c->sec->sasl_mechanism, c->sec->sasl_username ? c->sec->sasl_username : "",
                              c->sec->sasl_password ? c->sec->sasl_password : "", why, sizeof why);
    if (!c->sasl) {
        setup_failed(c, why);
        return -1;
    }
    sasl_handshake_request_t q;
    sasl_handshake_request_init(&q);
    q.mechanism = KSTR(c->sec->sasl_mechanism);
    sasl_send(c, KAPI_SASL_HANDSHAKE, 1, &q);
    return 0;
}

/* A SASL response in the handshake slot: the next token, or ready. */
static int handle_sasl(struct kclient *c, const uint8_t *p, size_t len)
{
    struct arena ar = ARENA_INIT;
    struct kreader r;
    kr_init(&r, p, len, &ar);
    (void)kr_i32(&r); /* correlation id: the only request in flight */
    int16_t key = c->handshake->key, version = c->handshake->version;
    req_free(c->handshake);
    c->handshake = NULL;
    char why[400];
    const uint8_t *in = NULL;
    size_t inlen = 0;
    int64_t lifetime = 0;
    if (key == KAPI_SASL_HANDSHAKE) {
        sasl_handshake_response_t m;
        if (sasl_handshake_response_decode(&r, version, &m) != 0 || r.err) {
            arena_free(&ar);
            setup_failed(c, "malformed SaslHandshake response");
            return 1;
        }
        if (m.error_code) {
            char list[200] = "";
            size_t off = 0;
            for (int32_t i = 0; i < m.mechanisms.n && off < sizeof list; i++)
                off += (size_t)snprintf(list + off, sizeof list - off, "%s%.*s", i ? ", " : "",
                                        (int)m.mechanisms.a[i].len, m.mechanisms.a[i].p);
            snprintf(why, sizeof why, "the peer does not enable SASL mechanism %s (it offers: %s)",
                     c->sec->sasl_mechanism, list[0] ? list : "none");
            arena_free(&ar);
            setup_failed(c, why);
            return 1;
        }
    } else {
        sasl_authenticate_response_t m;
        if (sasl_authenticate_response_decode(&r, version, &m) != 0 || r.err) {
            arena_free(&ar);
            setup_failed(c, "malformed SaslAuthenticate response");
            return 1;
        }
        if (m.error_code) {
            snprintf(why, sizeof why, "SASL %s login as %s refused: %s", c->sec->sasl_mechanism,
                     c->sec->sasl_username ? c->sec->sasl_username : "", kerr_name(m.error_code));
            if (m.error_message.len > 0) {
                size_t used = strlen(why);
                snprintf(why + used, sizeof why - used, " (%.*s)", (int)m.error_message.len, m.error_message.p);
            }
            arena_free(&ar);
            setup_failed(c, why);
            return 1;
        }
        in = m.auth_bytes.p;
        inlen = m.auth_bytes.len > 0 ? (size_t)m.auth_bytes.len : 0;
        lifetime = version >= 1 ? m.session_lifetime_ms : 0;
    }
    uint8_t *tok = NULL;
    size_t tl = 0;
    int rc = sasl_client_step(c->sasl, in, inlen, &tok, &tl, why, sizeof why);
    arena_free(&ar);
    if (rc < 0) {
        setup_failed(c, why);
        return 1;
    }
    if (rc == 1) {
        sasl_authenticate(c, tok, tl);
        free(tok);
        return 0;
    }
    sasl_client_free(c->sasl);
    c->sasl = NULL;
    if (c->reauthenticating)
        slog_debug("kclient %s (listener %s): re-authenticated (KIP-368), session lifetime %lld ms", c->peer,
                   c->sec->listener ? c->sec->listener : "?", (long long)lifetime);
    c->reauthenticating = false;
    plan_reauth(c, lifetime);
    ready(c);
    return 0;
}

/* Starts a due re-authentication once nothing is in flight (flush_out
 * holds new requests back meanwhile): the SASL exchange takes the
 * connection's turn, queued requests follow it. */
static void maybe_reauth(struct kclient *c)
{
    if (c->state != KC_READY || !c->reauth_at_ms || c->inflight.head || clock_mono_ms() < c->reauth_at_ms ||
        (c->unsent.head && c->unsent.head->sent > 0))
        return;
    c->reauth_at_ms = 0;
    c->reauthenticating = true;
    sasl_start(c);
}

static void send_handshake(struct kclient *c)
{
    api_versions_request_t q;
    api_versions_request_init(&q);
    q.client_software_name = KSTR_LIT("samsa");
    q.client_software_version = KSTR_LIT("0");
    c->handshake = encode(c, KAPI_API_VERSIONS, 3, &q, NULL, NULL);
    c->handshake->deadline_ms = clock_mono_ms() + c->connect_timeout_ms;
    c->state = KC_HANDSHAKE;
    ev_io_start(c->loop, &c->wio);
}

/* Connects to addr (non-blocking); the handshake follows. */
static void connect_to(struct kclient *c, const struct sockaddr *addr, socklen_t addrlen)
{
    int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        disconnect(c, KERR_NETWORK_EXCEPTION, true);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (c->recv_buffer_bytes > 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &c->recv_buffer_bytes, sizeof c->recv_buffer_bytes);
    int rc = connect(fd, addr, addrlen);
    if (rc < 0 && errno != EINPROGRESS) {
        close(fd);
        disconnect(c, KERR_NETWORK_EXCEPTION, true);
        return;
    }
    c->fd = fd;
    c->state = KC_CONNECTING;
    c->setup_deadline_ms = clock_mono_ms() + c->connect_timeout_ms;
    ev_io_init(&c->rio, on_io, fd, EV_READ);
    ev_io_init(&c->wio, on_io, fd, EV_WRITE);
    c->rio.data = c->wio.data = c;
    ev_io_start(c->loop, &c->wio);
    /* the connect deadline rides on the handshake's */
    c->handshake = NULL;
}

/* Loop thread: the resolver thread finished c's lookup. */
static void on_resolved(struct ev_loop *loop, ev_async *a, int revents)
{
    (void)loop;
    (void)revents;
    struct kclient *c = a->data;
    struct kc_resolve *j = c->resolving;
    if (!j)
        return;
    pthread_mutex_lock(&rs_lock);
    bool done = j->done;
    pthread_mutex_unlock(&rs_lock);
    if (!done)
        return;
    c->resolving = NULL;
    if (j->err) {
        slog_warn("kclient %s: cannot resolve host: %s", c->peer, gai_strerror(j->err));
        rs_free(j);
        disconnect(c, KERR_NETWORK_EXCEPTION, true);
        arm_timer(c);
        return;
    }
    connect_to(c, (const struct sockaddr *)&j->addr, j->addrlen);
    rs_free(j);
    arm_timer(c);
}

/* A numeric address connects at once; a name is looked up on the
 * resolver thread first (KC_RESOLVING), so a slow DNS server never
 * blocks the loop (the quorum's, the replica fetcher's). */
static void start_connect(struct kclient *c)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | AI_NUMERICHOST;
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", c->port);
    int gai = getaddrinfo(c->host, portstr, &hints, &res);
    if (gai == 0 && res) {
        connect_to(c, res->ai_addr, res->ai_addrlen);
        freeaddrinfo(res);
        return;
    }
    if (res)
        freeaddrinfo(res);
    if (!c->resolved_started) {
        ev_async_init(&c->resolved, on_resolved);
        c->resolved.data = c;
        ev_async_start(c->loop, &c->resolved);
        c->resolved_started = true;
    }
    struct kc_resolve *j = xcalloc(1, sizeof *j);
    j->host = xstrdup(c->host);
    memcpy(j->port, portstr, sizeof j->port);
    j->owner = c;
    c->resolving = j;
    c->state = KC_RESOLVING;
    rs_submit(j);
}

/* Writes what the socket takes: the handshake, then (when ready) the
 * queued requests, moving each to in-flight once fully written. */
/* KIP-368 as Java clients do it (KafkaChannel.maybeBeginClientReauthentication):
 * once a re-authentication is due, no new request goes out; a request
 * partly written is finished. The in-flight ones drain and maybe_reauth
 * starts the SASL exchange. Without this, a connection that always has a
 * request in flight (each answer sends the next before the others are
 * answered) would never re-authenticate, and the peer would close it at
 * the first request after its session expired. */
static bool reauth_holds(const struct kclient *c, const struct kc_req *r)
{
    return r && r->sent == 0 && c->reauth_at_ms && clock_mono_ms() >= c->reauth_at_ms;
}

static void flush_out(struct kclient *c)
{
    for (;;) {
        struct kc_req *r;
        if (c->state == KC_HANDSHAKE || c->state == KC_SASL)
            r = c->handshake && c->handshake->sent < c->handshake->len ? c->handshake : NULL;
        else if (c->state == KC_READY)
            r = reauth_holds(c, c->unsent.head) ? NULL : c->unsent.head;
        else
            return;
        if (!r) {
            ev_io_stop(c->loop, &c->wio);
            return;
        }
        if (c->state == KC_READY && r->sent == 0 &&
            (r->raw_cb ? !peer_serves(c, r->key, r->version)
                       : kclient_version(c, r->key, r->version) != r->version)) {
            /* the peer does not serve this version: refuse it locally */
            q_pop(&c->unsent);
            complete(r, KERR_UNSUPPORTED_VERSION, NULL, NULL);
            continue;
        }
        bool want_read;
        ssize_t n = io_write(c, r->bytes + r->sent, r->len - r->sent, &want_read);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                /* OpenSSL may need to read first (the read watcher is
                 * always on): waiting for writability would spin */
                if (want_read)
                    ev_io_stop(c->loop, &c->wio);
                else
                    ev_io_start(c->loop, &c->wio);
                return;
            }
            if (errno == EINTR)
                continue;
            slog_debug("kclient %s: write failed: %s", c->peer, strerror(errno));
            disconnect(c, KERR_NETWORK_EXCEPTION, true);
            return;
        }
        r->sent += (size_t)n;
        if (r->sent < r->len)
            continue;
        if (r != c->handshake)
            q_push(&c->inflight, q_pop(&c->unsent));
    }
}

static int handle_handshake(struct kclient *c, const uint8_t *p, size_t len)
{
    struct arena ar = ARENA_INIT;
    struct kreader r;
    kr_init(&r, p, len, &ar);
    (void)kr_i32(&r); /* correlation id: the only request in flight */
    api_versions_response_t resp;
    int rc = api_versions_response_decode(&r, 3, &resp);
    if (rc == 0 && resp.error_code == KERR_UNSUPPORTED_VERSION) {
        /* KIP-511 fallback: the body is in v0 format */
        kr_init(&r, p + 4, len - 4, &ar);
        rc = api_versions_response_decode(&r, 0, &resp);
    } else if (rc == 0 && resp.error_code) {
        rc = -1;
    }
    if (rc == 0) {
        for (int32_t i = 0; i < resp.api_keys.n; i++) {
            int16_t k = resp.api_keys.a[i].api_key;
            if (k < 0 || k > KAPI_MAX_KEY)
                continue;
            c->peer_min[k] = resp.api_keys.a[i].min_version;
            c->peer_max[k] = resp.api_keys.a[i].max_version;
        }
    }
    arena_free(&ar);
    req_free(c->handshake);
    c->handshake = NULL;
    if (rc != 0)
        return -1;
    if (c->sec && c->sec->sasl_mechanism) {
        sasl_start(c);
        return 0;
    }
    ready(c);
    return 0;
}

static int handle_response(struct kclient *c, const uint8_t *p, size_t len)
{
    if (c->state == KC_HANDSHAKE)
        return handle_handshake(c, p, len);
    if (c->state == KC_SASL)
        return handle_sasl(c, p, len);
    struct kc_req *r = c->inflight.head;
    if (!r || len < 4 || (int32_t)be32_read(p) != r->corr) {
        slog_warn("kclient %s: response out of order or unexpected", c->peer);
        return -1;
    }
    q_pop(&c->inflight);
    const struct kapi *a = kapi_get(r->key);
    struct arena ar = ARENA_INIT;
    struct kreader rd;
    kr_init(&rd, p + 4, len - 4, &ar);
    if (kapi_response_header_version(a, r->version) >= 1) {
        uint32_t ntags = kr_uvarint(&rd);
        for (uint32_t i = 0; i < ntags && !rd.err; i++) {
            (void)kr_uvarint(&rd);
            kr_skip(&rd, kr_uvarint(&rd));
        }
    }
    if (r->raw_cb) {
        if (rd.err) {
            complete(r, KERR_NETWORK_EXCEPTION, NULL, NULL);
            arena_free(&ar);
            return -1;
        }
        r->raw_cb(r->ctx, 0, r->version, rd.p, kr_left(&rd));
        req_free(r);
        arena_free(&ar);
        return 0;
    }
    void *resp = arena_alloc(&ar, a->resp_size);
    int rc = rd.err ? -1 : a->resp_decode(&rd, r->version, resp);
    if (rc != 0 || rd.err) {
        slog_warn("kclient %s: malformed %s response v%d", c->peer, a->name, r->version);
        complete(r, KERR_NETWORK_EXCEPTION, NULL, NULL);
        arena_free(&ar);
        return -1;
    }
    complete(r, 0, resp, &ar);
    arena_free(&ar);
    return 0;
}

/* A pass reads at most KC_READ_ROUNDS chunks on plaintext: the rest of a
 * large answer waits for the next loop pass (epoll is level-triggered),
 * so one answer cannot hold a replica fetcher's loop. */
#define KC_READ_CHUNK 65536
#define KC_READ_ROUNDS 16

static void read_in(struct kclient *c)
{
    for (int rounds = 0;; rounds++) {
        if (!c->ssl && rounds == KC_READ_ROUNDS)
            return;
        uint8_t *p = buf_reserve(&c->in, KC_READ_CHUNK);
        bool want_read;
        ssize_t n = io_read(c, p, KC_READ_CHUNK, &want_read);
        if (n > 0) {
            c->in.len += (size_t)n;
            size_t pos = 0;
            while (c->in.len - pos >= 4) {
                int32_t size = (int32_t)be32_read(c->in.data + pos);
                if (size < 4) {
                    disconnect(c, KERR_NETWORK_EXCEPTION, true);
                    return;
                }
                if (c->in.len - pos - 4 < (size_t)size)
                    break;
                if (handle_response(c, c->in.data + pos + 4, (size_t)size) < 0) {
                    disconnect(c, KERR_NETWORK_EXCEPTION, true);
                    return;
                }
                if (c->fd < 0 || c->freeing)
                    return; /* a callback freed or reset us */
                pos += 4 + (size_t)size;
            }
            memmove(c->in.data, c->in.data + pos, c->in.len - pos);
            c->in.len -= pos;
            /* A short read emptied the socket; SSL_read returns a record
             * at a time, so TLS reads on until it says so. */
            if (!c->ssl && (size_t)n < KC_READ_CHUNK)
                return;
            continue;
        }
        if (n == 0) {
            disconnect(c, KERR_NETWORK_EXCEPTION, true);
            return;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (!want_read)
                ev_io_start(c->loop, &c->wio); /* OpenSSL must write first */
            return;
        }
        if (errno == EINTR)
            continue;
        disconnect(c, KERR_NETWORK_EXCEPTION, true);
        return;
    }
}

static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    struct kclient *c = w->data;
    if (c->state == KC_CONNECTING && (revents & EV_WRITE)) {
        int err = 0;
        socklen_t el = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
        if (err) {
            slog_debug("kclient %s: connect failed: %s", c->peer, strerror(err));
            disconnect(c, KERR_NETWORK_EXCEPTION, true);
            arm_timer(c);
            return;
        }
        ev_io_start(c->loop, &c->rio);
        if (c->sec && c->sec->ssl_ctx) {
            c->ssl = tls_new_client(c->sec->ssl_ctx, c->fd, c->host, c->sec->verify_host);
            if (!c->ssl) {
                setup_failed(c, "cannot start TLS (out of memory, or a host name OpenSSL cannot check)");
                arm_timer(c);
                return;
            }
            c->state = KC_TLS;
        } else {
            send_handshake(c);
        }
    }
    if (c->fd >= 0 && c->state == KC_TLS) {
        tls_step(c);
        if (!c->freeing)
            arm_timer(c);
        return;
    }
    if (c->fd >= 0 && (revents & EV_READ))
        read_in(c);
    if (c->fd >= 0)
        maybe_reauth(c);
    if (c->fd >= 0 && c->state != KC_CONNECTING)
        flush_out(c);
    if (!c->freeing)
        arm_timer(c);
}

static void on_timer(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    struct kclient *c = t->data;
    int64_t now = clock_mono_ms();
    if ((c->inflight.head && now >= c->inflight.head->deadline_ms) ||
        (c->handshake && now >= c->handshake->deadline_ms) ||
        (c->state == KC_TLS && now >= c->setup_deadline_ms) ||
        ((c->state == KC_CONNECTING || c->state == KC_RESOLVING) && c->unsent.head &&
         now >= c->unsent.head->deadline_ms)) {
        /* Kafka's protocol cannot skip one answer on a connection: a
         * request that timed out costs the connection. */
        slog_debug("kclient %s: request timed out; reconnecting", c->peer);
        disconnect(c, KERR_NETWORK_EXCEPTION, true);
    }
    /* unsent requests past their deadline fail without a connection */
    while (c->unsent.head && now >= c->unsent.head->deadline_ms && c->unsent.head->sent == 0) {
        struct kc_req *r = q_pop(&c->unsent);
        complete(r, KERR_REQUEST_TIMED_OUT, NULL, NULL);
    }
    if (c->state == KC_IDLE && c->unsent.head && now >= c->next_connect_ms)
        start_connect(c);
    if (c->fd >= 0) {
        maybe_reauth(c);
        if (c->state == KC_SASL)
            flush_out(c);
    }
    arm_timer(c);
}
