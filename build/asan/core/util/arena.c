#include "util/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

struct arena_chunk {
    struct arena_chunk *next;
    size_t used, size;
    _Alignas(16) unsigned char mem[];
};

void arena_init(struct arena *a) { a->head = NULL; a->total = 0; }

void *arena_alloc(struct arena *a, size_t n)
{
    n = (n + 7) & ~(size_t)7;
    struct arena_chunk *c = a->head;
    if (!c || c->size - c->used < n) {
        size_t size = 4096 - sizeof *c;
        if (a->total > size)
            size = a->total; /* grow geometrically with use */
        if (size < n)
            size = n;
        c = xmalloc(sizeof *c + size);
        c->size = size;
        c->used = 0;
        c->next = a->head;
        a->head = c;
        a->total += size;
    }
    void *p = c->mem + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    memcpy(p, s, n);
    return p;
}

void arena_free(struct arena *a)
{
    struct arena_chunk *c = a->head;
    while (c) {
        struct arena_chunk *n = c->next;
        free(c);
        c = n;
    }
    arena_init(a);
}
