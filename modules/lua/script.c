/* SPDX-License-Identifier: Apache-2.0
 *
 * Script sources, generations and per-thread sandboxes (script.h). */
#define _POSIX_C_SOURCE 200809L

#include "script.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SCRIPT_BYTES (4u << 20)

void script_init(struct script *s, const char *role, const char *entry, int slot, const struct sbx_env *env)
{
    memset(s, 0, sizeof *s);
    s->role = role;
    s->entry = entry;
    s->slot = slot;
    s->env = env;
    pthread_mutex_init(&s->mu, NULL);
    atomic_init(&s->gen, 0);
    atomic_init(&s->last_log_ns, 0);
    atomic_init(&s->suppressed, 0);
}

void script_destroy(struct script *s)
{
    free(s->path);
    free(s->src);
    s->path = s->src = NULL;
    pthread_mutex_destroy(&s->mu);
}

/* Reads a whole file; the caller frees. NULL with err on failure. */
static char *read_file(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (n < cap)
            break;
        if (cap >= MAX_SCRIPT_BYTES) {
            snprintf(err, errlen, "%s: larger than %u bytes", path, MAX_SCRIPT_BYTES);
            free(buf);
            fclose(f);
            return NULL;
        }
        char *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    bool bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        snprintf(err, errlen, "%s: cannot read: %s", path, buf ? "I/O error" : "out of memory");
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/* Reads path and runs it in a scratch sandbox, the same every thread
 * will build. Returns the source (the caller frees) or NULL with err. */
static char *read_checked(struct script *s, const char *path, size_t *len, char *err, size_t errlen)
{
    char *src = read_file(path, len, err, errlen);
    if (!src)
        return NULL;
    struct sbx *probe = sbx_new(s->env, path, src, *len, s->entry, err, errlen);
    if (!probe) {
        free(src);
        return NULL;
    }
    sbx_free(probe);
    return src;
}

int script_check(struct script *s, const char *path, char *err, size_t errlen)
{
    size_t len;
    char *src = read_checked(s, path, &len, err, errlen);
    free(src);
    return src ? 0 : -1;
}

int script_load(struct script *s, const char *path, char *err, size_t errlen)
{
    size_t len;
    char *src = read_checked(s, path, &len, err, errlen);
    if (!src)
        return -1;
    char *p = strdup(path);
    if (!p) {
        free(src);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    pthread_mutex_lock(&s->mu);
    free(s->path);
    free(s->src);
    s->path = p;
    s->src = src;
    s->len = len;
    atomic_fetch_add_explicit(&s->gen, 1, memory_order_release);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

int script_reload(struct script *s, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->mu);
    char *path = s->path ? strdup(s->path) : NULL;
    pthread_mutex_unlock(&s->mu);
    if (!path)
        return 0;
    int rc = script_load(s, path, err, errlen);
    free(path);
    return rc;
}

bool script_active(struct script *s) { return atomic_load_explicit(&s->gen, memory_order_acquire) != 0; }

struct sbx *script_sandbox(struct script *s)
{
    uint64_t g = atomic_load_explicit(&s->gen, memory_order_acquire);
    if (g == 0)
        return NULL;
    const samsa_host_api_t *api = s->env->api;
    void **slot = api->worker_local(s->env->host);
    struct worker *w = *slot;
    if (!w) {
        w = calloc(1, sizeof *w);
        if (!w)
            return NULL;
        *slot = w;
    }
    if (w->gen[s->slot] == g)
        return w->sbx[s->slot];

    /* The script changed (or this thread never ran it): copy the source
     * under the lock, build outside it. */
    pthread_mutex_lock(&s->mu);
    g = atomic_load_explicit(&s->gen, memory_order_relaxed);
    size_t len = s->len;
    char *src = malloc(len ? len : 1);
    char *path = s->path ? strdup(s->path) : NULL;
    if (src)
        memcpy(src, s->src, len);
    pthread_mutex_unlock(&s->mu);
    char err[512] = "";
    struct sbx *nb = NULL;
    if (src && path)
        nb = sbx_new(s->env, path, src, len, s->entry, err, sizeof err);
    else
        snprintf(err, sizeof err, "out of memory");
    free(src);
    free(path);
    /* Either way this generation is settled for the thread: a failed
     * build is not retried on every call. */
    w->gen[s->slot] = g;
    if (!nb) {
        script_log_error(s, "cannot build the sandbox", err);
        return w->sbx[s->slot]; /* the old script, if any */
    }
    sbx_free(w->sbx[s->slot]);
    w->sbx[s->slot] = nb;
    return nb;
}

void script_log_error(struct script *s, const char *what, const char *err)
{
    const samsa_host_api_t *api = s->env->api;
    api->metric_add(s->errors, 1);
    int64_t now = api->monotonic_ns();
    int64_t last = atomic_load_explicit(&s->last_log_ns, memory_order_relaxed);
    if ((last != 0 && now - last < 1000000000) ||
        !atomic_compare_exchange_strong(&s->last_log_ns, &last, now)) {
        atomic_fetch_add_explicit(&s->suppressed, 1, memory_order_relaxed);
        return;
    }
    uint64_t more = atomic_exchange_explicit(&s->suppressed, 0, memory_order_relaxed);
    if (more)
        api->log(s->env->host, SAMSA_LOG_WARN, "%s script: %s: %s (and %llu more errors in the last second)",
                 s->role, what, err, (unsigned long long)more);
    else
        api->log(s->env->host, SAMSA_LOG_WARN, "%s script: %s: %s", s->role, what, err);
}

void worker_free(struct worker *w)
{
    if (!w)
        return;
    for (int i = 0; i < SCRIPT_ROLES; i++)
        sbx_free(w->sbx[i]);
    free(w);
}
