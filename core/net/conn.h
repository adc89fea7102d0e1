/* One client connection: framing, the in-order request queue, and writing
 * responses: memory bytes with send(MSG_MORE while a file range follows),
 * record data spliced in as file ranges with sendfile. Over TLS the same
 * stream goes through SSL_read/SSL_write, file ranges copied through a
 * bounded buffer (no kTLS: see ARCHITECTURE.md, TLS). */
#ifndef SAMSA_NET_CONN_H
#define SAMSA_NET_CONN_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/buf.h"

struct worker;
struct request;
struct plugin_cap;
struct ssl_st;

struct conn {
    struct conn *prev, *next;     /* worker's list */
    struct worker *w;
    int fd;
    ev_io rio, wio;
    char peer[64];
    uint64_t id;

    struct buf in;                /* bytes read but not yet framed */
    uint8_t *frame;               /* frame being filled (owned) */
    size_t frame_len, frame_got;
    size_t frame_cap;             /* net/framepool.h: 0 when malloc'ed */
    size_t big_frame;             /* size of the last frame if large (conn.c's read_framed) */

    struct request *head, *tail;  /* requests in arrival order */
    int inflight;
    int busy;                     /* >0 while dispatching: defer free */
    bool closing;
    bool reading;                 /* read watcher active */
    /* Accepted on a controller listener (controller.listener.names): it
     * serves the controller's APIs (Kafka's ControllerApis). */
    bool controller_listener;

    /* Security (auth/sasl.h): the listener it came in on, its security
     * protocol (enum security_protocol), where the SASL exchange stands
     * (enum sasl_state), the mechanism's session while it runs, and the
     * authenticated principal ("User:alice"; NULL is User:ANONYMOUS, a
     * PLAINTEXT listener's). */
    const char *listener;        /* owned by the net, lives as long */
    uint8_t protocol;
    uint8_t sasl_state;
    const struct plugin_cap *sasl_mech;
    void *sasl_session;
    char *principal;
    /* The authorizer's decisions for this connection (auth/authz.c),
     * owned by auth; NULL until the first one. */
    void *authz_cache;
    /* KIP-368: when the authenticated session ends (monotonic ms; 0:
     * never) and its mechanism, which a re-authentication must keep */
    int64_t sasl_expiry_ms;
    int64_t sasl_lifetime_ms; /* of the last exchange, as answered */
    const struct plugin_cap *sasl_done_mech;
    /* Frames are bare SASL tokens without a request header (after
     * SaslHandshake v0, SASL_STATE_RAW): any size goes. Set by auth. */
    bool headerless_frames;

    /* Connection limits (net.c): counted against max.connections and the
     * per-address count of ip; last read or write (the loop's clock) for
     * connections.max.idle.ms. */
    bool counted;
    char ip[64];
    double last_active;

    /* TLS (SSL and SASL_SSL listeners, net/tls.h): the session, owned;
     * the handshake runs until done (bounded by TLS_HANDSHAKE_S from
     * tls_started, the loop's clock); a read that OpenSSL could only
     * continue once the socket is writable waits on wio, and a write
     * that could only continue once it is readable (a renegotiation)
     * waits on rio instead of spinning on an always-writable wio. */
    struct ssl_st *ssl;
    bool tls_handshaking;
    bool tls_read_wants_write;
    bool tls_write_wants_read;
    bool tls_failed;              /* a fatal TLS error: no close_notify */
    double tls_started;

    /* KIP-511: what the client said it is, for logs and metrics. */
    char client_software_name[64];
    char client_software_version[64];

    /* KIP-219 throttling (conn_mute): no reading until muted_until (the
     * loop's clock); mute_timer ends it. */
    double muted_until;
    ev_timer mute_timer;
    /* Client quotas' per-connection state (api/quota.c owns it; freed
     * through the net handlers' conn_free). */
    void *quota;
};

/* Takes ownership of fd (non-blocking, accepted on this worker);
 * controller: it came in on a controller listener; listener (its name,
 * kept as a pointer) and protocol (enum security_protocol) say which;
 * tls_ctx (an SSL_CTX reference, which the call consumes) makes it a TLS connection that starts
 * with the server side of the handshake. */
struct conn *conn_adopt(struct worker *w, int fd, bool controller, const char *listener, int protocol,
                        void *tls_ctx);
/* Marks the connection closing; it is torn down once no handler runs. */
void conn_close(struct conn *c, const char *why);
/* The worker's idle sweep (connections.max.idle.ms; t->data is the
 * worker): closes connections with nothing in flight that read and wrote
 * nothing for longer than the limit, and TLS connections whose handshake
 * has run longer than its bound. */
void conn_sweep_idle(struct ev_loop *loop, ev_timer *t, int revents);
/* Keeps c (and its requests) allocated across a call that may close it:
 * a conn_close meanwhile tears it down at the matching conn_release. */
void conn_hold(struct conn *c);
void conn_release(struct conn *c);
/* A request of this connection completed: write what can be written. */
void conn_request_done(struct conn *c);
/* Stops reading c's requests for ms milliseconds from now (a throttled
 * client, KIP-219: its response goes out at once, then its channel stays
 * muted); a longer mute already running is kept. On c's worker only;
 * never blocks. */
void conn_mute(struct conn *c, int64_t ms);
/* Tears down every connection of the worker (shutdown). */
void conn_close_all(struct worker *w);

#endif
