#include "util/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/slog.h"

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        slog_error("out of memory allocating %zu bytes", n);
        abort();
    }
    return p;
}

void *xcalloc(size_t n, size_t m)
{
    void *p = calloc(n ? n : 1, m ? m : 1);
    if (!p) {
        slog_error("out of memory allocating %zu x %zu bytes", n, m);
        abort();
    }
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        slog_error("out of memory reallocating %zu bytes", n);
        abort();
    }
    return q;
}

char *xstrdup(const char *s) { return xstrndup(s, strlen(s)); }

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

void buf_init(struct buf *b) { b->data = NULL; b->len = b->cap = 0; }

void buf_free(struct buf *b)
{
    free(b->data);
    buf_init(b);
}

void buf_reset(struct buf *b) { b->len = 0; }

uint8_t *buf_reserve(struct buf *b, size_t n)
{
    /* Always own memory, so that the result is a valid pointer even for
     * n == 0 on an empty buffer. */
    if (b->cap - b->len < n || !b->data) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < n)
            cap *= 2;
        b->data = xrealloc(b->data, cap);
        b->cap = cap;
    }
    return b->data + b->len;
}

uint8_t *buf_extend(struct buf *b, size_t n)
{
    uint8_t *p = buf_reserve(b, n);
    b->len += n;
    return p;
}

void buf_append(struct buf *b, const void *p, size_t n)
{
    if (n)
        memcpy(buf_extend(b, n), p, n);
}

void buf_put_u8(struct buf *b, uint8_t v) { *buf_extend(b, 1) = v; }
void buf_put_be16(struct buf *b, uint16_t v) { be16_write(buf_extend(b, 2), v); }
void buf_put_be32(struct buf *b, uint32_t v) { be32_write(buf_extend(b, 4), v); }
void buf_put_be64(struct buf *b, uint64_t v) { be64_write(buf_extend(b, 8), v); }

void buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *at = (char *)buf_reserve(b, 128);
    int n = vsnprintf(at, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= b->cap - b->len) {
        at = (char *)buf_reserve(b, (size_t)n + 1);
        va_start(ap, fmt);
        vsnprintf(at, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}

uint8_t *buf_steal(struct buf *b, size_t *len)
{
    uint8_t *p = b->data;
    if (len)
        *len = b->len;
    buf_init(b);
    return p;
}
