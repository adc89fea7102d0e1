/* A request in flight: from its frame arriving on a connection to its
 * response being written. The connection keeps its requests in arrival
 * order and writes responses in that order (Kafka's per-connection
 * ordering), whatever order handlers finish in.
 *
 * Handlers run on the worker thread that owns the connection and finish a
 * request with exactly one of req_respond / req_respond_none / req_close,
 * either before returning (most APIs) or later from the same worker
 * (delayed Fetch, Produce waiting for acks). */
#ifndef SAMSA_API_REQUEST_H
#define SAMSA_API_REQUEST_H

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
    struct arena arena;       /* owned: the decoded body and handler scratch */

    const struct kapi *api;
    int16_t api_key;
    int16_t api_version;
    int32_t correlation_id;
    kstr_t client_id;         /* points into frame */
    void *body;               /* decoded request, in arena */
    int64_t received_us;      /* monotonic */

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
};

/* Encodes resp (the API's response struct) at the request's version with
 * the right response header and marks the request done. resp may live in
 * req->arena. */
void req_respond(struct request *req, const void *resp);
/* The same with a response body encoded elsewhere (at the request's
 * version; its file ranges are spliced, with their own references). */
void req_respond_body(struct request *req, const struct kwriter *body);
/* Marks the request done with nothing to send (acks=0). */
void req_respond_none(struct request *req);
/* Closes the connection after one log line naming the peer and why. */
void req_close(struct request *req, const char *why);
/* Peer address "ip:port" of the request's connection. */
const char *req_peer(const struct request *req);

#endif
