/* What the network layer counts for the metrics endpoint
 * (api/prometheus.c): bytes, requests by API key with their time from
 * arrival to the last byte of the response written (Kafka's
 * RequestMetrics TotalTimeMs), connections. Each worker keeps its own
 * counters, written by its thread alone with relaxed atomic stores (no
 * locked instruction on the request path); net_get_stats sums them for
 * a reader on any thread. */
#ifndef SAMSA_NET_NETSTATS_H
#define SAMSA_NET_NETSTATS_H

#include <stdatomic.h>
#include <stdint.h>

struct net;

#define NETSTATS_APIS 128  /* API keys 0..127 are counted */
#define NETSTATS_BUCKETS 16 /* the bounds below, then +Inf */

/* Upper bounds of the latency buckets, microseconds. */
extern const int64_t netstats_bucket_us[NETSTATS_BUCKETS - 1];

/* A worker's counters (struct worker). */
struct worker_counters {
    _Atomic uint64_t bytes_in, bytes_out;
    _Atomic uint64_t records_in, record_bytes_in; /* appended by Produce (api/produce.c) */
    _Atomic uint64_t connections; /* open now */
    _Atomic uint64_t requests[NETSTATS_APIS];
    _Atomic uint64_t time_us[NETSTATS_APIS];
    _Atomic uint64_t buckets[NETSTATS_APIS][NETSTATS_BUCKETS]; /* per bucket, not cumulative */
};

/* The node's totals. */
struct netstats {
    uint64_t bytes_in, bytes_out;
    uint64_t records_in, record_bytes_in;
    uint64_t connections;         /* open now, every listener */
    uint64_t accepted;            /* since start, every listener */
    uint64_t refused;             /* closed at accept: max.connections(.per.ip) */
    uint64_t throttled;           /* held then closed: connection_creation_rate */
    uint64_t requests[NETSTATS_APIS];
    uint64_t time_us[NETSTATS_APIS];
    uint64_t buckets[NETSTATS_APIS][NETSTATS_BUCKETS];
};

/* Any thread, while the net exists. */
void net_get_stats(struct net *n, struct netstats *out);

/* The owning thread's increment: a plain add published with a relaxed
 * store, since no other thread writes the counter. */
static inline void counter_add(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n, memory_order_relaxed);
}

/* A request of api_key done after us microseconds. Worker thread. */
void netstats_request_done(struct worker_counters *w, int api_key, int64_t us);

#endif
