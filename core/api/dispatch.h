/* From a request frame to its handler: header, version checks, decoding. */
#ifndef SAMSA_API_DISPATCH_H
#define SAMSA_API_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct request;

/* An API samsa serves and the versions it advertises: only versions that
 * are implemented and tested (see compatibility-pitfalls in the design). */
struct api_handler {
    int16_t key;
    int16_t min_version, max_version;
    void (*handle)(struct request *req);
};

/* req->body of a raw handler (api_controller_raw): the bytes after the
 * request header; the handler decodes them itself (Raft requests go to
 * the quorum thread as bytes, and Vote v2 is newer than the codecs). */
struct api_raw_body {
    const uint8_t *p;
    size_t len;
};

/* Parses req->frame and runs the handler, or closes the connection with a
 * log line when the frame is not a request samsa can serve. */
void api_dispatch(struct request *req);
/* NULL when samsa does not serve the key (on broker listeners). */
const struct api_handler *api_handler_get(int16_t key);
extern const struct api_handler api_handlers[];
extern const int api_handlers_len;
/* What a controller listener serves (Kafka's ControllerApis): the Raft
 * APIs, broker registration and heartbeats, and the admin requests
 * brokers forward (api/quorum.c). */
extern const struct api_handler api_controller_handlers[];
extern const int api_controller_handlers_len;
/* Whether the controller listener's handler for key takes the raw body. */
bool api_controller_raw(int16_t key);
/* The table of the listener req came in on. */
const struct api_handler *api_table(const struct request *req, int *n);

#endif
