#include "proto/kcodec.h"

#include <stdlib.h>

#include "util/sfile.h"

char *kstr_dup(struct arena *a, kstr_t s)
{
    if (s.len <= 0)
        return arena_strndup(a, "", 0);
    return arena_strndup(a, s.p, (size_t)s.len);
}

kstr_t kstr_arena(struct arena *a, const char *s)
{
    size_t n = strlen(s);
    return (kstr_t){arena_strndup(a, s, n), (int32_t)n};
}

/* ---- varints ---- */

size_t varint_decode_u32_slow(const uint8_t *p, size_t n, uint32_t *out)
{
    uint32_t v = 0;
    for (size_t i = 0; i < 5 && i < n; i++) {
        v |= (uint32_t)(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80)) {
            if (i == 4 && p[i] > 0x0f)
                return 0; /* more than 32 bits */
            *out = v;
            return i + 1;
        }
    }
    return 0;
}

size_t varint_decode_u64_slow(const uint8_t *p, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    for (size_t i = 0; i < 10 && i < n; i++) {
        v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80)) {
            if (i == 9 && p[i] > 0x01)
                return 0;
            *out = v;
            return i + 1;
        }
    }
    return 0;
}

size_t varint_encode_u32(uint8_t *p, uint32_t v)
{
    size_t i = 0;
    while (v >= 0x80) {
        p[i++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[i++] = (uint8_t)v;
    return i;
}

size_t varint_encode_u64(uint8_t *p, uint64_t v)
{
    size_t i = 0;
    while (v >= 0x80) {
        p[i++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[i++] = (uint8_t)v;
    return i;
}

size_t varint_size_u32(uint32_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

size_t varint_size_u64(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* ---- reader ---- */

const uint8_t *kr_raw(struct kreader *r, size_t n)
{
    if (r->err || kr_left(r) < n) {
        kr_fail(r);
        return NULL;
    }
    const uint8_t *p = r->p;
    r->p += n;
    return p;
}

void kr_skip(struct kreader *r, size_t n) { (void)kr_raw(r, n); }

int8_t kr_i8(struct kreader *r)
{
    const uint8_t *p = kr_raw(r, 1);
    return p ? (int8_t)p[0] : 0;
}

int16_t kr_i16(struct kreader *r)
{
    const uint8_t *p = kr_raw(r, 2);
    return p ? (int16_t)be16_read(p) : 0;
}

uint16_t kr_u16(struct kreader *r)
{
    const uint8_t *p = kr_raw(r, 2);
    return p ? be16_read(p) : 0;
}

int32_t kr_i32(struct kreader *r)
{
    const uint8_t *p = kr_raw(r, 4);
    return p ? (int32_t)be32_read(p) : 0;
}

uint32_t kr_u32(struct kreader *r)
{
    const uint8_t *p = kr_raw(r, 4);
    return p ? be32_read(p) : 0;
}

int64_t kr_i64(struct kreader *r)
{
    const uint8_t *p = kr_raw(r, 8);
    return p ? (int64_t)be64_read(p) : 0;
}

double kr_f64(struct kreader *r)
{
    uint64_t u = (uint64_t)kr_i64(r);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

bool kr_bool(struct kreader *r) { return kr_i8(r) != 0; }

uint32_t kr_uvarint(struct kreader *r)
{
    uint32_t v = 0;
    if (r->err)
        return 0;
    size_t n = varint_decode_u32(r->p, kr_left(r), &v);
    if (!n) {
        kr_fail(r);
        return 0;
    }
    r->p += n;
    return v;
}

uint64_t kr_uvarlong(struct kreader *r)
{
    uint64_t v = 0;
    if (r->err)
        return 0;
    size_t n = varint_decode_u64(r->p, kr_left(r), &v);
    if (!n) {
        kr_fail(r);
        return 0;
    }
    r->p += n;
    return v;
}

int32_t kr_varint(struct kreader *r) { return unzigzag32(kr_uvarint(r)); }
int64_t kr_varlong(struct kreader *r) { return unzigzag64(kr_uvarlong(r)); }

kuuid_t kr_uuid(struct kreader *r)
{
    kuuid_t u = {{0}};
    const uint8_t *p = kr_raw(r, 16);
    if (p)
        memcpy(u.b, p, 16);
    return u;
}

/* Length of a string/bytes field: -1 for null, -2 on error. */
static int64_t read_len(struct kreader *r, bool compact, bool is_string)
{
    int64_t len;
    if (compact) {
        uint32_t u = kr_uvarint(r);
        len = (int64_t)u - 1;
    } else if (is_string) {
        len = kr_i16(r);
    } else {
        len = kr_i32(r);
    }
    if (r->err)
        return -2;
    if (len < -1 || (len > 0 && (uint64_t)len > kr_left(r))) {
        kr_fail(r);
        return -2;
    }
    return len;
}

kstr_t kr_string(struct kreader *r, bool compact)
{
    int64_t len = read_len(r, compact, true);
    if (len < 0)
        return KSTR_NULL;
    const uint8_t *p = kr_raw(r, (size_t)len);
    return (kstr_t){(const char *)p, (int32_t)len};
}

kbytes_t kr_bytes(struct kreader *r, bool compact)
{
    int64_t len = read_len(r, compact, false);
    if (len < 0)
        return KBYTES_NULL;
    const uint8_t *p = kr_raw(r, (size_t)len);
    return (kbytes_t){p, (int32_t)len};
}

krecords_t kr_records(struct kreader *r, bool compact)
{
    kbytes_t b = kr_bytes(r, compact);
    return (krecords_t){b.p, b.len, NULL, 0};
}

int32_t kr_array_len(struct kreader *r, bool compact)
{
    int64_t n;
    if (compact)
        n = (int64_t)kr_uvarint(r) - 1;
    else
        n = kr_i32(r);
    if (r->err)
        return -1;
    if (n < -1 || (n > 0 && (uint64_t)n > kr_left(r))) {
        kr_fail(r);
        return -1;
    }
    return (int32_t)n;
}

/* ---- writer ---- */

void kw_init(struct kwriter *w)
{
    buf_init(&w->b);
    w->splices = NULL;
    w->nsplices = w->capsplices = 0;
    w->spliced_bytes = 0;
}

void kw_free(struct kwriter *w)
{
    for (int i = 0; i < w->nsplices; i++)
        sfile_unref(w->splices[i].file);
    free(w->splices);
    buf_free(&w->b);
    kw_init(w);
}

void kw_f64(struct kwriter *w, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    kw_i64(w, (int64_t)u);
}

void kw_uvarint(struct kwriter *w, uint32_t v)
{
    uint8_t *p = buf_reserve(&w->b, 5);
    w->b.len += varint_encode_u32(p, v);
}

void kw_uvarlong(struct kwriter *w, uint64_t v)
{
    uint8_t *p = buf_reserve(&w->b, 10);
    w->b.len += varint_encode_u64(p, v);
}

void kw_varint(struct kwriter *w, int32_t v) { kw_uvarint(w, zigzag32(v)); }
void kw_varlong(struct kwriter *w, int64_t v) { kw_uvarlong(w, zigzag64(v)); }

void kw_string(struct kwriter *w, kstr_t s, bool compact)
{
    int32_t len = s.len < 0 ? -1 : s.len;
    if (compact)
        kw_uvarint(w, (uint32_t)(len + 1));
    else
        kw_i16(w, (int16_t)len);
    if (len > 0)
        kw_raw(w, s.p, (size_t)len);
}

void kw_bytes(struct kwriter *w, kbytes_t s, bool compact)
{
    int32_t len = s.len < 0 ? -1 : s.len;
    if (compact)
        kw_uvarint(w, (uint32_t)(len + 1));
    else
        kw_i32(w, len);
    if (len > 0)
        kw_raw(w, s.p, (size_t)len);
}

void kw_records(struct kwriter *w, const krecords_t *r, bool compact)
{
    int32_t len = r->len < 0 ? -1 : r->len;
    if (compact)
        kw_uvarint(w, (uint32_t)(len + 1));
    else
        kw_i32(w, len);
    if (len <= 0)
        return;
    if (r->file)
        kw_splice_file(w, r->file, r->off, len);
    else
        kw_raw(w, r->p, (size_t)len);
}

void kw_array_len(struct kwriter *w, int32_t n, bool compact)
{
    if (compact)
        kw_uvarint(w, (uint32_t)(n < 0 ? 0 : n + 1));
    else
        kw_i32(w, n < 0 ? -1 : n);
}

void kw_splice_file(struct kwriter *w, struct sfile *f, int64_t off, int64_t len)
{
    if (w->nsplices == w->capsplices) {
        w->capsplices = w->capsplices ? w->capsplices * 2 : 8;
        w->splices = xrealloc(w->splices, (size_t)w->capsplices * sizeof *w->splices);
    }
    w->splices[w->nsplices++] = (struct kw_splice){w->b.len, sfile_ref(f), off, len};
    w->spliced_bytes += len;
}
