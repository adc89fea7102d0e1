/* Shed and retry: an operation that fails for want of a process-wide
 * resource (EMFILE/ENFILE for an open, ENOMEM for an mmap past
 * vm.max_map_count) is a resource condition, not an I/O error: the cache
 * that holds the resource (util/fdcache.c's open files, log/index.c's
 * mappings) releases some and the operation is tried again, a bounded
 * number of times. One helper so that both caches keep the same rules:
 * EINTR is retried without counting, any other error ends at once, and
 * the first shedding of a call logs one WARN, at most once a second per
 * caller. */
#ifndef SAMSA_UTIL_SHED_H
#define SAMSA_UTIL_SHED_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct shed_op {
    int (*attempt)(void *arg);    /* 0, or an errno value */
    bool (*is_resource)(int err); /* the errors shedding can cure */
    size_t (*shed)(void *arg);    /* releases cached resources; how many */
    void *arg;
    int tries;                    /* attempts in all, >= 1 */
    /* For the WARN line: "<who>: <err> <doing> <path>; released N". */
    const char *who, *doing, *path;
    _Atomic int64_t *warned;      /* the caller's rate limit (second of the last line) */
    uint64_t *resource_errors;    /* counted per resource failure; NULL: none */
};

/* Runs op as above: 0, or the errno value of the last attempt. Calls
 * attempt and shed on this thread with whatever locks the caller holds. */
int shed_retry(const struct shed_op *op);

/* True at most once per second of CLOCK_MONOTONIC for one *last (any
 * thread): for WARN lines a storm would repeat. */
bool shed_once_a_second(_Atomic int64_t *last);

#endif
