/* Bump allocator for objects that die together (a decoded request and
 * everything hanging off it). Nothing is freed individually; arena_free
 * releases all of it. Not thread-safe: one owner at a time. */
#ifndef SAMSA_UTIL_ARENA_H
#define SAMSA_UTIL_ARENA_H

#include <stddef.h>

struct arena_chunk;

struct arena {
    struct arena_chunk *head;
    size_t total;
};

#define ARENA_INIT {NULL, 0}

void arena_init(struct arena *a);
/* Returns 8-byte aligned zeroed memory owned by the arena. */
void *arena_alloc(struct arena *a, size_t n);
char *arena_strndup(struct arena *a, const char *s, size_t n);
void arena_free(struct arena *a);

#endif
