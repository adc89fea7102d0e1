/* Networking: listeners on the main thread, N worker threads each running
 * a libev loop that owns its connections (accepted sockets are handed out
 * round-robin). Everything a connection does happens on its worker. */
#ifndef SAMSA_NET_NET_H
#define SAMSA_NET_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct broker;
struct samsa_config;
struct conn;
struct net;
struct request;

/* What the layers above do with connections and requests: the network
 * layer calls nothing else of theirs. Each runs on the connection's
 * worker. */
struct net_handlers {
    /* A whole request frame arrived (req->frame): decode, handle, and
     * finish it with req_respond/req_close (api/dispatch.c). */
    void (*dispatch)(struct request *req);
    /* A connection was accepted on listener (its name; the net owns it)
     * of security protocol protocol: set up its security state. */
    void (*conn_open)(struct conn *c, const char *listener, int protocol);
    /* The connection is being freed: release that state. */
    void (*conn_free)(struct conn *c);
    /* Optional (NULL: none). On the main thread, for a client connection
     * just accepted from ip (text): how long to hold it before closing it
     * unserved (Kafka's per-IP connection_creation_rate quota, KIP-612),
     * or 0 to serve it. b is net_params.broker. */
    int64_t (*conn_throttle)(struct broker *b, const char *ip);
};

struct net_params {
    int nworkers;
    /* Frames larger than this close the connection (socket.request.max.bytes). */
    int32_t max_request_bytes;
    const struct net_handlers *handlers;
    /* Handed to every request (req->broker); opaque to the network layer. */
    struct broker *broker;
    /* The broker config in effect (the broker's field, swapped on dynamic
     * changes): connection limits are read from it at each accept. */
    struct samsa_config *_Atomic *cfg;
};

/* Creates the network layer (workers not started yet). */
struct net *net_create(const struct net_params *p);
/* Binds and listens now, so that a busy port fails startup with one line.
 * controller: it serves the controller's APIs (controller.listener.names);
 * protocol: its enum security_protocol. Returns 0, or -1 with the reason
 * in err. */
int net_listen(struct net *n, const char *name, const char *host, int port, bool controller, int protocol, char *err,
               size_t errlen);
/* A non-blocking listening socket on host:port (empty host: every
 * address): returns its fd (the caller owns it) and the port it bound in
 * *bound, or -1 with one line in err that starts with what. */
int net_bind_listen(const char *what, const char *host, int port, int backlog, int *bound, char *err, size_t errlen);
/* Starts the workers and runs the main loop until SIGTERM/SIGINT or
 * net_stop. Returns 0 after all workers have stopped. */
int net_run(struct net *n);
/* At the first SIGTERM/SIGINT, net_run calls hook(arg) (on the main
 * thread) instead of returning, and keeps serving until net_stop; a
 * second signal returns at once. Set before net_run. */
void net_set_shutdown_hook(struct net *n, void (*hook)(void *arg), void *arg);
/* hook runs on the accept thread at each SIGHUP (before net_run). */
void net_set_reload_hook(struct net *n, void (*hook)(void *arg), void *arg);
/* Asks net_run to return; callable from any thread. */
void net_stop(struct net *n);
void net_free(struct net *n);
/* Any thread: the broker side is ready; broker listeners (those not in
 * controller.listener.names) start accepting. Until then only the
 * controller listeners do. */
void net_broker_ready(struct net *n);
/* The hub that parked requests of this net's workers are woken through
 * (net/park.h): owned by the net, valid from net_create to net_free. */
struct park_hub *net_park_hub(struct net *n);
/* A worker thread: a connection counted against the client limits (of
 * address ip) is gone. */
void net_conn_gone(struct net *n, const char *ip);
/* The port a listener actually bound (useful with port 0); -1 if none. */
int net_bound_port(const struct net *n, int idx);

#endif
