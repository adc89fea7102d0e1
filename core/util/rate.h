/* A rate over sampled windows, as Kafka's metrics measure what a client
 * quota bounds (SampledStat + Rate with quota.window.num samples of
 * quota.window.size.seconds): values are added to the current sample, a
 * sample ends when its window has passed, samples older than all the
 * windows together are forgotten, and the rate is the sum of the samples
 * over the time they cover, counted as at least (samples - 1) full
 * windows so that a young rate does not spike. Not thread-safe: the
 * caller serializes. Times are milliseconds on one clock. */
#ifndef SAMSA_UTIL_RATE_H
#define SAMSA_UTIL_RATE_H

#include <stdint.h>

#define RATE_MAX_SAMPLES 64

struct rate {
    int nsamples;              /* 1..RATE_MAX_SAMPLES */
    int64_t window_ms;         /* one sample's window, >= 1 */
    int cur;                   /* sample being filled; -1 before the first value */
    int64_t start[RATE_MAX_SAMPLES]; /* when each sample began */
    double value[RATE_MAX_SAMPLES];
};

/* nsamples is clamped to 1..RATE_MAX_SAMPLES, window_ms to >= 1. */
void rate_init(struct rate *r, int nsamples, int64_t window_ms);
/* Adds v at now_ms (a negative v takes back what was added: Kafka's
 * unrecord of a fetch answered empty). */
void rate_record(struct rate *r, double v, int64_t now_ms);
/* The time the samples cover at now_ms, in ms (Kafka's Rate.windowSize). */
int64_t rate_window_ms(struct rate *r, int64_t now_ms);
/* Units per second at now_ms. */
double rate_measure(struct rate *r, int64_t now_ms);
/* Kafka's QuotaUtils.throttleTime: how long a client measured at rate
 * over bound must wait for its rate to come back to bound, in ms;
 * 0 when it is within bound (or bound <= 0: no quota). */
int64_t rate_throttle_ms(struct rate *r, double bound, int64_t now_ms);

#endif
