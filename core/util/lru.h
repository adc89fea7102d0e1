/* An intrusive doubly linked LRU list: a struct lru_node inside each
 * element, a sentinel node as the list (most recent at its next, least
 * recent at its prev). For the caches that keep their least recently
 * used entries to drop first (util/fdcache.c's open files, log/index.c's
 * mappings, api/fetch_session.c's sessions). No locking: the owner's
 * lock guards the list and its nodes. */
#ifndef SAMSA_UTIL_LRU_H
#define SAMSA_UTIL_LRU_H

#include <stdbool.h>
#include <stddef.h>

struct lru_node {
    struct lru_node *prev, *next;
};

/* The element that holds node n (its member named member). */
#define lru_entry(n, type, member) ((type *)((char *)(n) - offsetof(type, member)))

static inline void lru_init(struct lru_node *list) { list->prev = list->next = list; }
static inline bool lru_empty(const struct lru_node *list) { return list->next == list; }
static inline bool lru_linked(const struct lru_node *n) { return n->next != NULL; }

static inline void lru_unlink(struct lru_node *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->prev = n->next = NULL;
}

static inline void lru_push_head(struct lru_node *list, struct lru_node *n)
{
    n->next = list->next;
    n->prev = list;
    list->next->prev = n;
    list->next = n;
}

/* Makes a linked n the most recent. */
static inline void lru_move_head(struct lru_node *list, struct lru_node *n)
{
    if (list->next != n) {
        lru_unlink(n);
        lru_push_head(list, n);
    }
}

#endif
