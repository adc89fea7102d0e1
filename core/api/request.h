/* Answering a request (net/request.h).
 *
 * Handlers run on the worker thread that owns the connection and finish a
 * request with exactly one of req_respond / req_respond_none / req_close,
 * either before returning (most APIs) or later from the same worker
 * (delayed Fetch, Produce waiting for acks). */
#ifndef SAMSA_API_REQUEST_H
#define SAMSA_API_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "net/request.h"

/* Encodes resp (the API's response struct) at the request's version with
 * the right response header and marks the request done. resp may live in
 * req->arena. */
void req_respond(struct request *req, const void *resp);
/* The same with a response body encoded elsewhere (at the request's
 * version; its file ranges are spliced, with their own references). */
void req_respond_body(struct request *req, const struct kwriter *body);
/* Marks the request done with nothing to send (acks=0). */
void req_respond_none(struct request *req);
/* request_percentage: records req's handler time now (once; the answer
 * then records nothing more), mutes the connection when it is over its
 * quota and returns that throttle time (0: within it, or not measured).
 * req_respond calls it itself; Fetch calls it before building its answer
 * (a throttled fetch is answered without records, as Kafka's). */
int64_t req_request_throttle(struct request *req);
/* Closes the connection after one log line naming the peer and why. */
void req_close(struct request *req, const char *why);
/* Peer address "ip:port" of the request's connection. */
const char *req_peer(const struct request *req);

#endif
