#include "net/http.h"

#include <stdbool.h>
#include <string.h>

static bool is_token_char(unsigned char c)
{
    return c > 32 && c < 127 && !strchr("()<>@,;:\\\"/[]?={}", c);
}

int http_parse_head(const char *p, size_t n, struct http_head *out, const char **why)
{
    memset(out, 0, sizeof *out);
    *why = NULL;
    /* Every byte of the head is checked as it comes, so that a malformed
     * request fails before its end arrives. Tabs and CR/LF are the only
     * control bytes a head may hold. */
    size_t end = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if ((c < 32 && c != '\r' && c != '\n' && c != '\t') || c == 127) {
            *why = "control byte in the request head";
            return -1;
        }
        if (c == '\n' && ((i >= 1 && p[i - 1] == '\n') || (i >= 2 && p[i - 1] == '\r' && p[i - 2] == '\n'))) {
            end = i + 1;
            break;
        }
    }
    /* The request line, once it is whole. */
    const char *nl = memchr(p, '\n', n);
    if (!nl)
        return n > HTTP_HEAD_MAX ? (*why = "request line too long", -1) : 0;
    size_t ll = (size_t)(nl - p);
    if (ll && p[ll - 1] == '\r')
        ll--;
    const char *sp1 = memchr(p, ' ', ll);
    if (!sp1 || sp1 == p) {
        *why = "malformed request line";
        return -1;
    }
    size_t ml = (size_t)(sp1 - p);
    for (size_t i = 0; i < ml; i++)
        if (!is_token_char((unsigned char)p[i])) {
            *why = "malformed method";
            return -1;
        }
    if (ml >= sizeof out->method) {
        *why = "method too long";
        return -1;
    }
    const char *target = sp1 + 1;
    const char *sp2 = memchr(target, ' ', (size_t)(p + ll - target));
    if (!sp2 || sp2 == target) {
        *why = "malformed request line";
        return -1;
    }
    const char *ver = sp2 + 1;
    size_t vl = (size_t)(p + ll - ver);
    if (vl != 8 || memcmp(ver, "HTTP/1.", 7) != 0 || ver[7] < '0' || ver[7] > '9') {
        *why = "not an HTTP/1.x request";
        return -1;
    }
    size_t tl = (size_t)(sp2 - target);
    const char *q = memchr(target, '?', tl);
    size_t pl = q ? (size_t)(q - target) : tl;
    if (pl >= sizeof out->path) {
        *why = "path too long";
        return -1;
    }
    for (size_t i = 0; i < tl; i++)
        if ((unsigned char)target[i] <= 32 || (unsigned char)target[i] >= 127) {
            *why = "malformed request target";
            return -1;
        }
    memcpy(out->method, p, ml);
    memcpy(out->path, target, pl);
    out->minor = ver[7] - '0';
    if (!end)
        return n > HTTP_HEAD_MAX ? (*why = "request head too long", -1) : 0;
    if (end > HTTP_HEAD_MAX) {
        *why = "request head too long";
        return -1;
    }
    return (int)end;
}
