/* One client connection: framing, the in-order request queue, and writing
 * responses (memory with writev, record data with sendfile). */
#ifndef SAMSA_NET_CONN_H
#define SAMSA_NET_CONN_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/buf.h"

struct worker;
struct request;

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

    struct request *head, *tail;  /* requests in arrival order */
    int inflight;
    int busy;                     /* >0 while dispatching: defer free */
    bool closing;
    bool reading;                 /* read watcher active */
    /* Accepted on a controller listener (controller.listener.names): it
     * serves the controller's APIs (Kafka's ControllerApis). */
    bool controller_listener;

    /* KIP-511: what the client said it is, for logs and metrics. */
    char client_software_name[64];
    char client_software_version[64];
};

/* Takes ownership of fd (non-blocking, accepted on this worker);
 * controller: it came in on a controller listener. */
struct conn *conn_adopt(struct worker *w, int fd, bool controller);
/* Marks the connection closing; it is torn down once no handler runs. */
void conn_close(struct conn *c, const char *why);
/* A request of this connection completed: write what can be written. */
void conn_request_done(struct conn *c);
/* Tears down every connection of the worker (shutdown). */
void conn_close_all(struct worker *w);

#endif
