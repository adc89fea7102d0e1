/* Hash map from byte-string keys to pointers (open addressing, linear
 * probing). The map copies keys (hmap_put) or borrows them from the
 * caller (hmap_put_borrowed: no malloc chunk per key, for maps with an
 * entry per partition); values are the caller's. Not thread-safe: the
 * owner serialises access. */
#ifndef SAMSA_UTIL_HMAP_H
#define SAMSA_UTIL_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 24 bytes: a 32-bit hash (the probe uses its low bits anyway) and the
 * length share a word. */
struct hmap_slot {
    void *key;      /* NULL: empty; HMAP_TOMBSTONE: deleted */
    uint32_t hash;
    uint32_t klen;  /* | HMAP_BORROWED: the caller's memory, never freed */
    void *value;
};

#define HMAP_BORROWED 0x80000000u

struct hmap {
    struct hmap_slot *slots;
    size_t cap;     /* power of two */
    size_t count;   /* live entries */
    size_t used;    /* live + tombstones */
};

void hmap_init(struct hmap *m);
/* Frees the map's key copies and slots (not the values). */
void hmap_free(struct hmap *m);
uint64_t hmap_hash(const void *key, size_t klen);
void *hmap_get(const struct hmap *m, const void *key, size_t klen);
/* Inserts or replaces; returns the previous value or NULL. */
void *hmap_put(struct hmap *m, const void *key, size_t klen, void *value);
/* hmap_put without a copy of the key: key must stay valid and unchanged
 * while the entry is in the map (typically it lies in the value's own
 * struct). Replacing an entry adopts this key. klen < 2^31. */
void *hmap_put_borrowed(struct hmap *m, const void *key, size_t klen, void *value);
/* Removes; returns the removed value or NULL. */
void *hmap_del(struct hmap *m, const void *key, size_t klen);
static inline size_t hmap_count(const struct hmap *m) { return m->count; }

/* Iteration: for (size_t i = 0; hmap_next(m, &i, &k, &kl, &v);) */
bool hmap_next(const struct hmap *m, size_t *iter, const void **key, size_t *klen, void **value);

#endif
