/* EnvelopeRequest (Kafka's KIP-590): a broker forwards an admin request
 * to the active controller wrapped with the client's principal and
 * address, so the controller authorizes the client, not the broker.
 *   - broker side: envelope_wrap / envelope_unwrap (api/forward.c);
 *   - controller side: api_handle_envelope (controller listener only):
 *     the sender needs CLUSTER_ACTION on the cluster; the inner request
 *     runs as a request of its own (net/request.h: parent/inner) with
 *     the carried principal and address, and its answer goes back in
 *     the EnvelopeResponse. */
#ifndef SAMSA_API_ENVELOPE_H
#define SAMSA_API_ENVELOPE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/kcodec.h"

struct request;

/* The EnvelopeRequest v0 body for req's API at its version with body
 * (the request struct), acting as req's principal from req's client
 * address, into w (initialised by the caller, who frees it). */
void envelope_wrap(struct request *req, const void *body, struct kwriter *w);
/* From an EnvelopeResponse v0 body (p, len), for a request of api_key at
 * version: 0 with *body and *body_len the inner response body (pointing into
 * p), or the envelope's error code (an answer that does not decode:
 * UNKNOWN_SERVER_ERROR). */
int16_t envelope_unwrap(int16_t api_key, int16_t version, const uint8_t *p, size_t len, const uint8_t **body,
                        size_t *body_len);

void api_handle_envelope(struct request *req);

#endif
