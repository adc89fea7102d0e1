/* The node's metrics in Prometheus's text exposition format (0.0.4),
 * served by the HTTP endpoint samsa.metrics.listener (net/http.h):
 * process figures, the network layer's counters (bytes, connections,
 * requests and their latency by API), Produce's records and bytes in,
 * the partitions this node hosts and leads (under-replicated, under
 * min ISR), the cluster's topics, partitions and offline partitions as
 * the metadata image has them, replication (ISR changes, the followers'
 * lag), the quorum, the log layer (open segment files, offline log
 * dirs) and every metric of the registry (plugin/metrics.h: the
 * plugins' and the core's own). */
#ifndef SAMSA_API_PROMETHEUS_H
#define SAMSA_API_PROMETHEUS_H

#include "net/http.h"
#include "util/buf.h"

struct broker;

/* Call once at startup: the process start time reported. */
void prometheus_init(void);

/* Appends the exposition of b's metrics to out. Any thread but a
 * network worker's (it walks the metadata image). */
void prometheus_write(struct broker *b, struct buf *out);

/* The endpoint's handler (arg: the struct broker): /metrics, else 404. */
void prometheus_http(void *arg, const struct http_head *req, struct http_response *resp);

/* name (a registry name such as samsa.plugin.codec-zstd.batches) as a
 * Prometheus metric name: every byte outside [a-zA-Z0-9_:] becomes '_',
 * a leading digit gets a '_' before it; written to out (size n,
 * truncated, NUL-terminated). */
void prometheus_metric_name(const char *name, char *out, size_t n);

#endif
