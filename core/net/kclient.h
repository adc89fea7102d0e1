/* An outbound Kafka-protocol connection from this node to a peer (another
 * controller, a leader to fetch from, the active controller): requests
 * are encoded with the generated codecs, pipelined with correlation ids,
 * and answered through callbacks on the owning libev loop.
 *
 * The first exchange on each connection is ApiVersions, so a request can
 * be sent at the highest version both sides speak (kclient_version); a
 * TLS handshake comes before it and a SASL login after it when the
 * peer's listener asks for them (struct kclient_security).
 * Requests queue while the connection is being (re)established. A lost
 * connection fails every request in flight with NETWORK_EXCEPTION; the
 * next request reconnects, after a backoff.
 *
 * Threads: a kclient belongs to one loop and must be used only from that
 * loop's thread. */
#ifndef SAMSA_NET_KCLIENT_H
#define SAMSA_NET_KCLIENT_H

#include <ev.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/arena.h"

struct kclient;

/* How this node secures and authenticates its connections to a peer's
 * listener (Kafka's security.inter.broker.protocol and
 * sasl.mechanism.inter.broker.protocol, or the controller's). Borrowed:
 * it outlives every client using it (net/peer_security.c keeps them for
 * the process). */
struct kclient_security {
    const char *listener;       /* the peer listener's name, for log lines */
    SSL_CTX *ssl_ctx;           /* NULL: no TLS */
    bool verify_host;           /* the certificate must name the host */
    const char *sasl_mechanism; /* NULL: no SASL */
    const char *sasl_username, *sasl_password;
};

struct kclient_opts {
    const struct kclient_security *security; /* NULL: PLAINTEXT */
    const char *host;            /* copied */
    int port;
    const char *client_id;       /* copied; "samsa" when NULL */
    int32_t request_timeout_ms;  /* per request; default 30000 */
    /* Connection setup (TCP connect, TLS, ApiVersions, SASL) must end
     * within connect_timeout_ms; each failed setup doubles the next
     * attempt's timeout up to connect_timeout_max_ms, and a connection
     * that becomes ready resets it (Kafka's socket.connection.setup.
     * timeout.ms / .max.ms, without the clients' 20 % jitter). */
    int32_t connect_timeout_ms;  /* default 10000 */
    int32_t connect_timeout_max_ms; /* default (or below the first): no growth */
    int32_t reconnect_backoff_ms; /* default 50, doubling to 1000 */
    int32_t recv_buffer_bytes;   /* SO_RCVBUF; 0 or -1: the OS default */
};

/* Called exactly once per request. err is 0 or a Kafka error code:
 * NETWORK_EXCEPTION (connection lost or refused, or the response did not
 * decode), REQUEST_TIMED_OUT, UNSUPPORTED_VERSION (the peer does not serve
 * the API at that version). On 0, resp is the decoded response struct of
 * the request's API at `version`, allocated in ar; both live only during
 * the call (copy what you keep). A callback may send more requests on
 * the same client but must not free it (defer that to the loop). */
typedef void (*kclient_cb)(void *ctx, int err, int16_t version, void *resp, struct arena *ar);

/* Returns a new client (not yet connected). Never NULL. */
struct kclient *kclient_new(struct ev_loop *loop, const struct kclient_opts *opts);
/* Fails every pending request with NETWORK_EXCEPTION (callbacks run
 * before this returns), closes the connection and frees c. */
void kclient_free(struct kclient *c);

/* Queues a request: body is the API's request struct, encoded at version
 * right away (the caller may free it on return). Connects if needed.
 * Returns 0 (cb will run), or without calling cb NETWORK_EXCEPTION when
 * the client is being freed, UNSUPPORTED_VERSION for an API this build
 * does not know. */
int kclient_send(struct kclient *c, int16_t api_key, int16_t version, const void *body, kclient_cb cb,
                 void *ctx);

/* A request whose body the caller encoded (len bytes at version, which
 * may be newer than the generated codecs know, e.g. VoteRequest v2), with
 * the response handed over undecoded: cb gets the response body (after
 * its header) for the call only, or err != 0 and NULL as kclient_cb does.
 * The version is checked against the peer's advertised range only. */
typedef void (*kclient_raw_cb)(void *ctx, int err, int16_t version, const uint8_t *body, size_t len);
int kclient_send_raw(struct kclient *c, int16_t api_key, int16_t version, const uint8_t *body, size_t len,
                     kclient_raw_cb cb, void *ctx);

/* The highest version of api_key that both this build and the peer serve,
 * capped at max; -1 while not yet known (not connected) or when the peer
 * does not serve the API. */
int16_t kclient_version(const struct kclient *c, int16_t api_key, int16_t max);
/* True once the connection is up and ApiVersions has been answered. */
bool kclient_ready(const struct kclient *c);
/* Requests sent or queued and not yet answered. */
int kclient_pending(const struct kclient *c);
const char *kclient_peer(const struct kclient *c);

#endif
