#include "hist.h"

#include <string.h>

void hist_init(struct hist *h)
{
    memset(h, 0, sizeof *h);
    h->min = UINT64_MAX;
}

static unsigned bucket_of(uint64_t v)
{
    if (v < HIST_SUB_COUNT)
        return (unsigned)v;
    unsigned msb = 63u - (unsigned)__builtin_clzll(v);
    /* keep the HIST_SUB_BITS bits below the leading one */
    unsigned sub = (unsigned)(v >> (msb - HIST_SUB_BITS)) & (HIST_SUB_COUNT - 1);
    return HIST_SUB_COUNT + (msb - HIST_SUB_BITS) * HIST_SUB_COUNT + sub;
}

/* Largest value that lands in bucket b. */
static uint64_t bucket_high(unsigned b)
{
    if (b < HIST_SUB_COUNT)
        return b;
    unsigned row = (b - HIST_SUB_COUNT) / HIST_SUB_COUNT;
    unsigned sub = (b - HIST_SUB_COUNT) % HIST_SUB_COUNT;
    unsigned msb = row + HIST_SUB_BITS;
    unsigned shift = msb - HIST_SUB_BITS;
    uint64_t low = ((uint64_t)1 << msb) | ((uint64_t)sub << shift);
    return low + (((uint64_t)1 << shift) - 1);
}

void hist_record(struct hist *h, uint64_t v)
{
    h->counts[bucket_of(v)]++;
    h->count++;
    h->sum += (long double)v;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

uint64_t hist_quantile(const struct hist *h, double q)
{
    if (h->count == 0)
        return 0;
    if (q >= 1.0)
        return h->max;
    /* 1-based rank of the value at q, rounded as HdrHistogram rounds it */
    uint64_t rank = (uint64_t)(q * (double)h->count + 0.5);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (unsigned b = 0; b < HIST_BUCKETS; b++) {
        seen += h->counts[b];
        if (seen >= rank) {
            uint64_t v = bucket_high(b);
            return v > h->max ? h->max : v;
        }
    }
    return h->max;
}

double hist_mean(const struct hist *h)
{
    return h->count ? (double)(h->sum / (long double)h->count) : 0.0;
}
