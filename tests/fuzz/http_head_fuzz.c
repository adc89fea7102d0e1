/* Fuzz target: the metrics endpoint's request parser (http_parse_head),
 * fed whatever a peer of samsa.metrics.listener sends. Nothing may crash
 * or read out of bounds; a head it takes ends in a blank line within
 * HTTP_HEAD_MAX bytes, has a method of token characters and a path of
 * visible characters, and parses the same from its own bytes alone; a
 * head it waits for is shorter than HTTP_HEAD_MAX; a refusal says why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct http_head h;
    const char *why;
    int rc = http_parse_head((const char *)data, size, &h, &why);
    if (rc < 0) {
        if (!why)
            abort();
        return 0;
    }
    if (rc == 0) {
        if (size > HTTP_HEAD_MAX || why)
            abort();
        return 0;
    }
    size_t n = (size_t)rc;
    if (n > size || n > HTTP_HEAD_MAX || data[n - 1] != '\n' || (data[n - 2] != '\n' && data[n - 2] != '\r'))
        abort();
    size_t ml = strnlen(h.method, sizeof h.method), pl = strnlen(h.path, sizeof h.path);
    if (!ml || ml == sizeof h.method || pl == sizeof h.path || h.minor < 0 || h.minor > 9)
        abort();
    for (size_t i = 0; i < pl; i++)
        if ((unsigned char)h.path[i] <= 32 || (unsigned char)h.path[i] >= 127)
            abort();
    struct http_head again;
    if (http_parse_head((const char *)data, n, &again, &why) != rc || memcmp(&again, &h, sizeof h) != 0)
        abort();
    return 0;
}
