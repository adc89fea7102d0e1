/* Networking: listeners on the main thread, N worker threads each running
 * a libev loop that owns its connections (accepted sockets are handed out
 * round-robin). Everything a connection does happens on its worker. */
#ifndef SAMSA_NET_NET_H
#define SAMSA_NET_NET_H

#include <stddef.h>

struct broker;
struct net;

/* Creates the network layer with nworkers worker threads (not started). */
struct net *net_create(struct broker *b, int nworkers);
/* Binds and listens now, so that a busy port fails startup with one line.
 * Returns 0, or -1 with the reason in err. */
int net_listen(struct net *n, const char *name, const char *host, int port, char *err, size_t errlen);
/* Starts the workers and runs the main loop until SIGTERM/SIGINT or
 * net_stop. Returns 0 after all workers have stopped. */
int net_run(struct net *n);
/* At the first SIGTERM/SIGINT, net_run calls hook(arg) (on the main
 * thread) instead of returning, and keeps serving until net_stop; a
 * second signal returns at once. Set before net_run. */
void net_set_shutdown_hook(struct net *n, void (*hook)(void *arg), void *arg);
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
/* The port a listener actually bound (useful with port 0); -1 if none. */
int net_bound_port(const struct net *n, int idx);

#endif
