/* Blocking work off the network workers.
 *
 * A network worker never waits for a file (the runtime rule of
 * ARCHITECTURE.md, section 6). Work a request needs that may read files
 * (building a TLS context from key and trust stores, compiling a Lua
 * script to check it) is handed to the offload thread, and the request
 * parks (net/park.h) on offload_key(job) until it is done:
 *
 *   struct offload_job *j = offload_submit(hub, run, free_arg, arg);
 *   park_watch(&pk, offload_key(j));  park_start(&pk, timeout);
 *   ... in try_complete: if (offload_done(j)) { read arg; offload_release(j); }
 *
 * One thread, started at the first job, runs jobs in order; a job is
 * short (milliseconds), so one thread is enough and keeps two checks of
 * the same listener or script from racing each other. The kclient
 * resolver (net/kclient.c) and the log manager's recovery pool
 * (log/logmgr.c) are the other blocking-work threads; both are tied to
 * their own job types. */
#ifndef SAMSA_NET_OFFLOAD_H
#define SAMSA_NET_OFFLOAD_H

#include <stdbool.h>

#include "net/park.h"

struct offload_job;

/* Queues run(arg) for the offload thread; when it returns, hub (may be
 * NULL) is notified on offload_key of the job. The job holds arg until
 * both run has finished and offload_release was called; then
 * free_arg(arg) (if not NULL) frees it, on whichever thread came last.
 * Without a thread (pthread_create failed) run is called here, at once.
 * Returns the job; the caller owns one reference (offload_release). */
struct offload_job *offload_submit(struct park_hub *hub, void (*run)(void *arg), void (*free_arg)(void *arg),
                                   void *arg);
/* The key a request parks on. */
park_key_t offload_key(const struct offload_job *j);
/* Whether run has returned; its writes to arg are visible once this
 * returns true. Any thread. */
bool offload_done(const struct offload_job *j);
/* Drops the caller's reference: after this the caller must not touch the
 * job or arg. A job released before it ran is still run (its result is
 * then dropped). */
void offload_release(struct offload_job *j);

#endif
