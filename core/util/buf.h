/* Growable byte buffer with big-endian writers. The buffer owns its
 * memory; buf_free releases it. Allocation failure aborts the process
 * (see xmalloc): the server cannot make progress without memory. */
#ifndef SAMSA_UTIL_BUF_H
#define SAMSA_UTIL_BUF_H

#include <stddef.h>
#include <stdint.h>

struct buf {
    uint8_t *data;
    size_t len;
    size_t cap;
};

#define BUF_INIT {NULL, 0, 0}

void buf_init(struct buf *b);
void buf_free(struct buf *b);
void buf_reset(struct buf *b); /* len = 0, keeps the memory */
/* Makes room for n more bytes and returns where they go (len unchanged). */
uint8_t *buf_reserve(struct buf *b, size_t n);
/* Appends n uninitialised bytes and returns their start. */
uint8_t *buf_extend(struct buf *b, size_t n);
void buf_append(struct buf *b, const void *p, size_t n);
void buf_put_u8(struct buf *b, uint8_t v);
void buf_put_be16(struct buf *b, uint16_t v);
void buf_put_be32(struct buf *b, uint32_t v);
void buf_put_be64(struct buf *b, uint64_t v);
/* Appends printf output (no NUL counted in len). */
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hands the bytes to the caller (who frees them) and empties b. */
uint8_t *buf_steal(struct buf *b, size_t *len);

static inline void be16_write(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void be32_write(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static inline void be64_write(uint8_t *p, uint64_t v)
{
    be32_write(p, (uint32_t)(v >> 32));
    be32_write(p + 4, (uint32_t)v);
}
static inline uint16_t be16_read(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static inline uint32_t be32_read(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t be64_read(const uint8_t *p)
{
    return ((uint64_t)be32_read(p) << 32) | be32_read(p + 4);
}

/* malloc/calloc/realloc/strdup that abort with a log line on failure. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

#endif
