#include "util/hmap.h"

#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

static char tombstone_mark;
#define HMAP_TOMBSTONE ((void *)&tombstone_mark)

void hmap_init(struct hmap *m) { memset(m, 0, sizeof *m); }

void hmap_free(struct hmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key && m->slots[i].key != HMAP_TOMBSTONE && !(m->slots[i].klen & HMAP_BORROWED))
            free(m->slots[i].key);
    free(m->slots);
    hmap_init(m);
}

/* FNV-1a, 64-bit: keys are short (topic names, ids). */
uint64_t hmap_hash(const void *key, size_t klen)
{
    const uint8_t *p = key;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < klen; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static struct hmap_slot *find(const struct hmap *m, const void *key, size_t klen, uint32_t h)
{
    if (!m->cap)
        return NULL;
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        struct hmap_slot *s = &m->slots[i];
        if (!s->key)
            return NULL;
        if (s->key != HMAP_TOMBSTONE && s->hash == h && (s->klen & ~HMAP_BORROWED) == klen &&
            memcmp(s->key, key, klen) == 0)
            return s;
    }
}

static void free_key(struct hmap_slot *s)
{
    if (!(s->klen & HMAP_BORROWED))
        free(s->key);
}

static void grow(struct hmap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 16;
    if (m->count * 4 < m->cap)
        ncap = m->cap; /* mostly tombstones: rehash in place size */
    struct hmap_slot *old = m->slots;
    size_t ocap = m->cap;
    m->slots = xcalloc(ncap, sizeof *m->slots);
    m->cap = ncap;
    m->used = m->count;
    for (size_t i = 0; i < ocap; i++) {
        struct hmap_slot *s = &old[i];
        if (!s->key || s->key == HMAP_TOMBSTONE)
            continue;
        size_t j = s->hash & (ncap - 1);
        while (m->slots[j].key)
            j = (j + 1) & (ncap - 1);
        m->slots[j] = *s;
    }
    free(old);
}

void *hmap_get(const struct hmap *m, const void *key, size_t klen)
{
    struct hmap_slot *s = find(m, key, klen, (uint32_t)hmap_hash(key, klen));
    return s ? s->value : NULL;
}

static void *put(struct hmap *m, const void *key, size_t klen, void *value, bool borrow)
{
    uint32_t h = (uint32_t)hmap_hash(key, klen);
    struct hmap_slot *s = find(m, key, klen, h);
    if (s) {
        void *old = s->value;
        s->value = value;
        if (borrow) {
            free_key(s);
            s->key = (void *)key;
            s->klen = (uint32_t)klen | HMAP_BORROWED;
        }
        return old;
    }
    if ((m->used + 1) * 4 > m->cap * 3)
        grow(m);
    size_t i = h & (m->cap - 1);
    while (m->slots[i].key && m->slots[i].key != HMAP_TOMBSTONE)
        i = (i + 1) & (m->cap - 1);
    if (!m->slots[i].key)
        m->used++;
    void *k = (void *)key;
    uint32_t kl = (uint32_t)klen;
    if (borrow) {
        kl |= HMAP_BORROWED;
    } else {
        k = xmalloc(klen ? klen : 1);
        memcpy(k, key, klen);
    }
    m->slots[i] = (struct hmap_slot){k, h, kl, value};
    m->count++;
    return NULL;
}

void *hmap_put(struct hmap *m, const void *key, size_t klen, void *value) { return put(m, key, klen, value, false); }

void *hmap_put_borrowed(struct hmap *m, const void *key, size_t klen, void *value)
{
    /* the empty-slot mark is a NULL key */
    static const char empty_key;
    return put(m, klen ? key : &empty_key, klen, value, true);
}

void *hmap_del(struct hmap *m, const void *key, size_t klen)
{
    struct hmap_slot *s = find(m, key, klen, (uint32_t)hmap_hash(key, klen));
    if (!s)
        return NULL;
    void *v = s->value;
    free_key(s);
    s->key = HMAP_TOMBSTONE;
    s->value = NULL;
    m->count--;
    return v;
}

bool hmap_next(const struct hmap *m, size_t *iter, const void **key, size_t *klen, void **value)
{
    for (size_t i = *iter; i < m->cap; i++) {
        struct hmap_slot *s = &m->slots[i];
        if (s->key && s->key != HMAP_TOMBSTONE) {
            if (key)
                *key = s->key;
            if (klen)
                *klen = s->klen & ~HMAP_BORROWED;
            if (value)
                *value = s->value;
            *iter = i + 1;
            return true;
        }
    }
    *iter = m->cap;
    return false;
}
