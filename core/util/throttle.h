/* A bytes-per-second bound shared by threads, as Kafka's Throttler
 * bounds the log cleaner's I/O (log.cleaner.io.max.bytes.per.second):
 * bytes are counted over a period; once the period is longer than the
 * check interval (or, unlike Kafka's, holds more bytes than the bound
 * allows in one interval), a rate above the bound asks the caller to
 * sleep long enough to bring the period's average down to it, and a new
 * period starts. Times are milliseconds on one monotonic clock. */
#ifndef SAMSA_UTIL_THROTTLE_H
#define SAMSA_UTIL_THROTTLE_H

#include <pthread.h>
#include <stdint.h>

/* Kafka's Throttler default check interval. */
#define THROTTLE_CHECK_INTERVAL_MS 300

struct throttle {
    pthread_mutex_t lock;
    double bytes_per_ms; /* <= 0: no bound */
    int64_t period_start_ms;
    double observed;
};

/* bytes_per_sec <= 0, DBL_MAX (Kafka's default), infinite or not a
 * number: no bound. */
void throttle_init(struct throttle *t, double bytes_per_sec, int64_t now_ms);
void throttle_destroy(struct throttle *t);
/* Counts n bytes at now_ms. Returns how long the caller should sleep
 * before it goes on (0: not now). Thread-safe. */
int64_t throttle_record(struct throttle *t, int64_t n, int64_t now_ms);

#endif
