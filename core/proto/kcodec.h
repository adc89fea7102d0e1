/* Kafka wire primitives: a bounds-checked reader over a request frame and
 * a writer that builds a response, possibly with file ranges spliced in
 * (record data served by sendfile).
 *
 * Reader: every getter returns a zero value once the input is exhausted or
 * malformed and sets r->err; callers check err once at the end. Strings,
 * bytes and records point into the input (zero copy): they live as long as
 * the frame buffer. Arrays are allocated from r->arena.
 *
 * Writer: owns its buffer and holds one reference on each spliced file. */
#ifndef SAMSA_PROTO_KCODEC_H
#define SAMSA_PROTO_KCODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/arena.h"
#include "util/buf.h"

struct sfile;

/* A string on the wire; len == -1 means null. Not NUL-terminated. */
typedef struct {
    const char *p;
    int32_t len;
} kstr_t;

/* Bytes on the wire; len == -1 means null. */
typedef struct {
    const uint8_t *p;
    int32_t len;
} kbytes_t;

typedef struct {
    uint8_t b[16];
} kuuid_t;

/* Record data: either memory (p) or, when file is set, len bytes of file
 * at off (the writer sends those with sendfile). len == -1 means null. */
typedef struct {
    const uint8_t *p;
    int32_t len;
    struct sfile *file;
    int64_t off;
} krecords_t;

#define KSTR_NULL ((kstr_t){NULL, -1})
#define KSTR(s) ((kstr_t){(s), (int32_t)strlen(s)})
#define KSTR_LIT(s) ((kstr_t){(s), (int32_t)(sizeof(s) - 1)})
#define KBYTES_NULL ((kbytes_t){NULL, -1})
#define KRECORDS_NULL ((krecords_t){NULL, -1, NULL, 0})

static inline bool kstr_eq(kstr_t a, kstr_t b)
{
    return a.len == b.len && (a.len <= 0 || memcmp(a.p, b.p, (size_t)a.len) == 0);
}
static inline bool kstr_eqc(kstr_t a, const char *s)
{
    return a.len >= 0 && (size_t)a.len == strlen(s) && memcmp(a.p, s, (size_t)a.len) == 0;
}
static inline bool kuuid_is_zero(const kuuid_t *u)
{
    static const kuuid_t z;
    return memcmp(u->b, z.b, 16) == 0;
}
static inline bool kuuid_eq(const kuuid_t *a, const kuuid_t *b) { return memcmp(a->b, b->b, 16) == 0; }
/* Copies a kstr into a NUL-terminated string in the arena ("" for null). */
char *kstr_dup(struct arena *a, kstr_t s);
kstr_t kstr_arena(struct arena *a, const char *s);

/* Allocates arr.a with n zeroed elements in arena ar and sets arr.n. */
#define karr_alloc(ar, arr, cnt) \
    ((arr).n = (int32_t)(cnt), (arr).a = arena_alloc((ar), (size_t)((cnt) > 0 ? (cnt) : 0) * sizeof *(arr).a))

struct kreader {
    const uint8_t *p;
    const uint8_t *end;
    struct arena *arena;
    int err;
};

static inline void kr_init(struct kreader *r, const void *p, size_t len, struct arena *a)
{
    r->p = p;
    r->end = (const uint8_t *)p + len;
    r->arena = a;
    r->err = 0;
}
static inline size_t kr_left(const struct kreader *r) { return (size_t)(r->end - r->p); }

int8_t kr_i8(struct kreader *r);
int16_t kr_i16(struct kreader *r);
uint16_t kr_u16(struct kreader *r);
int32_t kr_i32(struct kreader *r);
uint32_t kr_u32(struct kreader *r);
int64_t kr_i64(struct kreader *r);
double kr_f64(struct kreader *r);
bool kr_bool(struct kreader *r);
uint32_t kr_uvarint(struct kreader *r);
int32_t kr_varint(struct kreader *r);   /* zigzag */
uint64_t kr_uvarlong(struct kreader *r);
int64_t kr_varlong(struct kreader *r);  /* zigzag */
kuuid_t kr_uuid(struct kreader *r);
/* compact: uvarint length+1 (0 = null); else int16 (strings) or int32. */
kstr_t kr_string(struct kreader *r, bool compact);
kbytes_t kr_bytes(struct kreader *r, bool compact);
krecords_t kr_records(struct kreader *r, bool compact);
/* Array element count, -1 for null. Rejects counts larger than the bytes
 * left (every element takes at least one byte), so a hostile count never
 * turns into a huge allocation. */
int32_t kr_array_len(struct kreader *r, bool compact);
const uint8_t *kr_raw(struct kreader *r, size_t n);
void kr_skip(struct kreader *r, size_t n);
static inline void kr_fail(struct kreader *r) { r->err = 1; r->p = r->end; }

struct kw_splice {
    size_t at;            /* offset in the writer's buffer where it goes */
    struct sfile *file;   /* one reference held */
    int64_t off;
    int64_t len;
};

struct kwriter {
    struct buf b;
    struct kw_splice *splices;
    int nsplices, capsplices;
    int64_t spliced_bytes;
};

void kw_init(struct kwriter *w);
/* Releases the buffer and the file references. */
void kw_free(struct kwriter *w);
static inline int64_t kw_size(const struct kwriter *w) { return (int64_t)w->b.len + w->spliced_bytes; }

static inline void kw_i8(struct kwriter *w, int8_t v) { buf_put_u8(&w->b, (uint8_t)v); }
static inline void kw_i16(struct kwriter *w, int16_t v) { buf_put_be16(&w->b, (uint16_t)v); }
static inline void kw_u16(struct kwriter *w, uint16_t v) { buf_put_be16(&w->b, v); }
static inline void kw_i32(struct kwriter *w, int32_t v) { buf_put_be32(&w->b, (uint32_t)v); }
static inline void kw_u32(struct kwriter *w, uint32_t v) { buf_put_be32(&w->b, v); }
static inline void kw_i64(struct kwriter *w, int64_t v) { buf_put_be64(&w->b, (uint64_t)v); }
static inline void kw_bool(struct kwriter *w, bool v) { buf_put_u8(&w->b, v ? 1 : 0); }
void kw_f64(struct kwriter *w, double v);
void kw_uvarint(struct kwriter *w, uint32_t v);
void kw_varint(struct kwriter *w, int32_t v);
void kw_uvarlong(struct kwriter *w, uint64_t v);
void kw_varlong(struct kwriter *w, int64_t v);
static inline void kw_uuid(struct kwriter *w, const kuuid_t *u) { buf_append(&w->b, u->b, 16); }
void kw_string(struct kwriter *w, kstr_t s, bool compact);
void kw_bytes(struct kwriter *w, kbytes_t s, bool compact);
void kw_records(struct kwriter *w, const krecords_t *r, bool compact);
void kw_array_len(struct kwriter *w, int32_t n, bool compact);
static inline void kw_raw(struct kwriter *w, const void *p, size_t n) { buf_append(&w->b, p, n); }
/* Splices len bytes of file at off into the output here (takes a ref). */
void kw_splice_file(struct kwriter *w, struct sfile *f, int64_t off, int64_t len);

/* Varint helpers on raw memory, shared with the record-batch code.
 * Return bytes consumed, or 0 when the input is truncated or too long. */
size_t varint_decode_u32_slow(const uint8_t *p, size_t n, uint32_t *out);
size_t varint_decode_u64_slow(const uint8_t *p, size_t n, uint64_t *out);

/* Inline for the one- and two-byte varints that most record fields are
 * (a produce request decodes several per record); longer ones take the
 * call. */
static inline size_t varint_decode_u32(const uint8_t *p, size_t n, uint32_t *out)
{
    if (n >= 1 && !(p[0] & 0x80)) {
        *out = p[0];
        return 1;
    }
    if (n >= 2 && !(p[1] & 0x80)) {
        *out = (uint32_t)(p[0] & 0x7f) | (uint32_t)p[1] << 7;
        return 2;
    }
    return varint_decode_u32_slow(p, n, out);
}

static inline size_t varint_decode_u64(const uint8_t *p, size_t n, uint64_t *out)
{
    if (n >= 1 && !(p[0] & 0x80)) {
        *out = p[0];
        return 1;
    }
    if (n >= 2 && !(p[1] & 0x80)) {
        *out = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
        return 2;
    }
    return varint_decode_u64_slow(p, n, out);
}
size_t varint_encode_u32(uint8_t *p, uint32_t v); /* p needs 5 bytes */
size_t varint_encode_u64(uint8_t *p, uint64_t v); /* p needs 10 bytes */
static inline uint32_t zigzag32(int32_t v) { return ((uint32_t)v << 1) ^ (uint32_t)(v >> 31); }
static inline int32_t unzigzag32(uint32_t v) { return (int32_t)(v >> 1) ^ -(int32_t)(v & 1); }
static inline uint64_t zigzag64(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t unzigzag64(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }
size_t varint_size_u32(uint32_t v);
size_t varint_size_u64(uint64_t v);

#endif
