/* From a request frame to its handler: header, version checks, decoding. */
#ifndef SAMSA_API_DISPATCH_H
#define SAMSA_API_DISPATCH_H

#include <stdint.h>

struct request;

/* An API samsa serves and the versions it advertises: only versions that
 * are implemented and tested (see compatibility-pitfalls in the design). */
struct api_handler {
    int16_t key;
    int16_t min_version, max_version;
    void (*handle)(struct request *req);
};

/* Parses req->frame and runs the handler, or closes the connection with a
 * log line when the frame is not a request samsa can serve. */
void api_dispatch(struct request *req);
/* NULL when samsa does not serve the key. */
const struct api_handler *api_handler_get(int16_t key);
extern const struct api_handler api_handlers[];
extern const int api_handlers_len;

#endif
