/* SPDX-License-Identifier: Apache-2.0
 *
 * One script role of the lua module (the authorizer's script, the
 * partitioner's): its source with a generation number, and each
 * thread's sandbox built from it.
 *
 * Reload compiles and runs the new source in a scratch sandbox first;
 * only a script that passes replaces the old one, by bumping the
 * generation. Every thread compares its sandbox's generation with the
 * current one (one atomic load) at its next call and rebuilds then, so
 * all threads switch together and the request path takes no lock (the
 * mutex guards only the source, read once per thread per reload). */
#ifndef SAMSA_LUA_SCRIPT_H
#define SAMSA_LUA_SCRIPT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "sandbox.h"

struct script {
    const char *role;  /* "authorizer", "partitioner" (static) */
    const char *entry; /* the global function the script must define (static) */
    int slot;          /* index into the thread's worker state */
    const struct sbx_env *env;

    pthread_mutex_t mu;
    char *path; /* guarded by mu; owned */
    char *src;  /* guarded by mu; owned */
    size_t len;
    _Atomic uint64_t gen; /* 0: no script */

    /* Rate-limited error log: one line per second at most. */
    _Atomic int64_t last_log_ns;
    _Atomic uint64_t suppressed;
    samsa_metric_t *errors;
};

#define SCRIPT_ROLES 2

/* A thread's sandboxes (api->worker_local's slot of the module). */
struct worker {
    struct sbx *sbx[SCRIPT_ROLES];
    uint64_t gen[SCRIPT_ROLES];
};

void script_init(struct script *s, const char *role, const char *entry, int slot, const struct sbx_env *env);
void script_destroy(struct script *s);

/* Reads path, checks it in a scratch sandbox and publishes it. Returns
 * 0, or -1 with one line in err (the old script stays in force). */
int script_load(struct script *s, const char *path, char *err, size_t errlen);
/* The check of script_load alone: nothing is published. */
int script_check(struct script *s, const char *path, char *err, size_t errlen);
/* script_load of the current path again (SIGHUP). 0 when there is none. */
int script_reload(struct script *s, char *err, size_t errlen);

bool script_active(struct script *s);

/* This thread's sandbox for the current generation, built on first use
 * after a change; NULL when no script is loaded or the build failed
 * (logged). The sandbox belongs to the thread's worker state. */
struct sbx *script_sandbox(struct script *s);

/* One WARN line about a failed call, at most one per second per role
 * (the others counted and reported with the next line). */
void script_log_error(struct script *s, const char *what, const char *err);

/* Frees a worker state (the module's worker_fini). */
void worker_free(struct worker *w);

#endif
