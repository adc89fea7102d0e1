/* A small process-wide registry of named counters and gauges. Plugins
 * register theirs through the host API (samsa.plugin.<name>.<metric>);
 * the core may use it too. Metrics are never removed: a pointer from
 * metrics_register stays valid until the process exits. Registration
 * takes a lock; updates and reads are lock-free atomics. */
#ifndef SAMSA_PLUGIN_METRICS_H
#define SAMSA_PLUGIN_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum metric_type {
    METRIC_COUNTER = 1, /* same values as SAMSA_METRIC_* */
    METRIC_GAUGE = 2,
};

struct metric;

/* Registers name (copied) or returns the existing metric of that name
 * when its type matches; NULL when the type differs or name is empty. */
struct metric *metrics_register(const char *name, enum metric_type type, const char *help);
struct metric *metrics_find(const char *name);
void metric_add(struct metric *m, int64_t delta); /* NULL: ignored */
void metric_set(struct metric *m, int64_t value); /* NULL or counter: ignored */
int64_t metric_value(const struct metric *m);
const char *metric_name(const struct metric *m);
enum metric_type metric_type(const struct metric *m);
const char *metric_help(const struct metric *m);

/* Calls fn for every metric in registration order; stops when fn
 * returns non-zero. */
void metrics_foreach(int (*fn)(void *arg, const struct metric *m), void *arg);

#endif
