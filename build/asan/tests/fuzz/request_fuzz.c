/* Fuzz target: a request frame as the server receives it (after the size
 * prefix): header v0/v1/v2 by API and version, then the body through the
 * generated decoder of that API, exactly as api_dispatch does. Also
 * decodes the same bytes as every response of that API, which is what
 * samsactl does with a broker's answer. Nothing may crash, hang or read
 * out of bounds; a decoded request must re-encode without trouble. */
#include <stddef.h>
#include <stdint.h>

#include "proto/gen/kapi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct arena ar = ARENA_INIT;
    struct kreader r;
    kr_init(&r, data, size, &ar);
    int16_t key = kr_i16(&r);
    int16_t ver = kr_i16(&r);
    (void)kr_i32(&r);
    const struct kapi *a = kapi_get(key);
    if (!a || r.err || ver < a->min_version || ver > a->max_version) {
        arena_free(&ar);
        return 0;
    }
    int hv = kapi_request_header_version(a, ver);
    if (hv >= 1)
        (void)kr_string(&r, false);
    if (hv >= 2) {
        uint32_t n = kr_uvarint(&r);
        for (uint32_t i = 0; i < n && !r.err; i++) {
            (void)kr_uvarint(&r);
            kr_skip(&r, kr_uvarint(&r));
        }
    }
    struct kreader body = r;
    void *m = arena_alloc(&ar, a->req_size);
    if (a->req_decode(&r, ver, m) == 0 && !r.err) {
        struct kwriter w;
        kw_init(&w);
        a->req_encode(&w, ver, m);
        kw_free(&w);
    }
    void *resp = arena_alloc(&ar, a->resp_size);
    (void)a->resp_decode(&body, ver, resp);
    arena_free(&ar);
    return 0;
}
