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
        if (m->slots[i].key && m->slots[i].key != HMAP_TOMBSTONE)
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

static struct hmap_slot *find(const struct hmap *m, const void *key, size_t klen, uint64_t h)
{
    if (!m->cap)
        return NULL;
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        struct hmap_slot *s = &m->slots[i];
        if (!s->key)
            return NULL;
        if (s->key != HMAP_TOMBSTONE && s->hash == h && s->klen == klen &&
            memcmp(s->key, key, klen) == 0)
            return s;
    }
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
    struct hmap_slot *s = find(m, key, klen, hmap_hash(key, klen));
    return s ? s->value : NULL;
}

void *hmap_put(struct hmap *m, const void *key, size_t klen, void *value)
{
    uint64_t h = hmap_hash(key, klen);
    struct hmap_slot *s = find(m, key, klen, h);
    if (s) {
        void *old = s->value;
        s->value = value;
        return old;
    }
    if ((m->used + 1) * 4 > m->cap * 3)
        grow(m);
    size_t i = h & (m->cap - 1);
    while (m->slots[i].key && m->slots[i].key != HMAP_TOMBSTONE)
        i = (i + 1) & (m->cap - 1);
    if (!m->slots[i].key)
        m->used++;
    void *k = xmalloc(klen ? klen : 1);
    memcpy(k, key, klen);
    m->slots[i] = (struct hmap_slot){k, klen, h, value};
    m->count++;
    return NULL;
}

void *hmap_del(struct hmap *m, const void *key, size_t klen)
{
    struct hmap_slot *s = find(m, key, klen, hmap_hash(key, klen));
    if (!s)
        return NULL;
    void *v = s->value;
    free(s->key);
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
                *klen = s->klen;
            if (value)
                *value = s->value;
            *iter = i + 1;
            return true;
        }
    }
    *iter = m->cap;
    return false;
}
