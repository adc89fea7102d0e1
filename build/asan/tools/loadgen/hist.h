/* A fixed-size latency histogram in the style of HdrHistogram: exact below
 * 2^HIST_SUB_BITS, then 2^HIST_SUB_BITS linear sub-buckets per power of two,
 * so every recorded value is known to within 1/128 (< 0.8 %) of itself while
 * the whole uint64 range fits in a few thousand counters. Recording is a
 * couple of shifts, so it costs nothing next to a delivery report. */
#ifndef SAMSA_LOADGEN_HIST_H
#define SAMSA_LOADGEN_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 7
#define HIST_SUB_COUNT (1u << HIST_SUB_BITS)
/* exact range, then one row of sub-buckets per magnitude 2^7 .. 2^63 */
#define HIST_BUCKETS (HIST_SUB_COUNT + (64 - HIST_SUB_BITS) * HIST_SUB_COUNT)

struct hist {
    uint64_t count;
    uint64_t min;
    uint64_t max;
    long double sum;
    uint64_t counts[HIST_BUCKETS];
};

void hist_init(struct hist *h);
void hist_record(struct hist *h, uint64_t v);
/* The highest value equivalent to the one at quantile q (0..1), as
 * HdrHistogram reports it, clamped to the exact max; 0 when empty. */
uint64_t hist_quantile(const struct hist *h, double q);
double hist_mean(const struct hist *h);

#endif
