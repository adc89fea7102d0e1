/* A request in flight, as the network layer carries it: from its frame
 * arriving on a connection to its response being written. The connection
 * keeps its requests in arrival order and writes responses in that order
 * (Kafka's per-connection ordering), whatever order handlers finish in.
 * What a handler does with it (decoding, answering) is api/request.h. */
#ifndef SAMSA_NET_REQUEST_H
#define SAMSA_NET_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/gen/kapi.h"
#include "proto/kcodec.h"
#include "util/arena.h"

struct conn;
struct worker;
struct broker;

struct request {
    struct request *next;     /* the connection's FIFO */
    struct conn *conn;
    struct worker *worker;
    struct broker *broker;

    uint8_t *frame;           /* owned: the request bytes (after the size) */
    size_t frame_len;
    size_t frame_cap;         /* from the worker's frame pool; 0: malloc'ed */
    struct arena arena;       /* owned: the decoded body and handler scratch */

    const struct kapi *api;
    int16_t api_key;
    int16_t api_version;
    int32_t correlation_id;
    kstr_t client_id;         /* points into frame */
    void *body;               /* decoded request, in arena */
    int64_t received_us;      /* monotonic */
    /* request_percentage (api/dispatch.c): when the handler started
     * (0: not measured, or already recorded) and, once it returned
     * without answering, how long it ran (-1 before). */
    int64_t quota_t0_ns;
    int64_t quota_ns;

    bool done;                /* response (or none) decided */
    bool no_response;         /* acks=0 produce */
    /* Close the connection once this response is written (a failed SASL
     * exchange, as Kafka does); close_why (in arena) is the log line. */
    bool close_after;
    const char *close_why;
    struct kwriter out;       /* size + header + body, ready to send */
    int64_t sent;             /* bytes of out already written */

    /* Set by a handler that parks the request (delayed fetch/produce):
     * called if the connection dies first, so the handler can forget it.
     * The request is freed right after. */
    void (*cancel)(struct request *req);
    void *handler_state;

    /* A request carried inside another one (an EnvelopeRequest a broker
     * forwarded, api/envelope.c): parent is the envelope, whose handler
     * owns this one (inner, freed with it); done is called instead of
     * the connection's write path when this one is answered, or closed
     * (close_why set), and must not free it. principal and client_host
     * (in the parent's arena) replace the connection's for authorizing. */
    struct request *parent, *inner;
    void (*on_inner_done)(struct request *inner);
    const char *principal;   /* NULL: the connection's */
    const char *client_host; /* NULL: the connection's peer address */
};

#endif
