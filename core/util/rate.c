/* See rate.h. */
#include "util/rate.h"

#include <math.h>
#include <string.h>

void rate_init(struct rate *r, int nsamples, int64_t window_ms)
{
    memset(r, 0, sizeof *r);
    r->nsamples = nsamples < 1 ? 1 : nsamples > RATE_MAX_SAMPLES ? RATE_MAX_SAMPLES : nsamples;
    r->window_ms = window_ms < 1 ? 1 : window_ms;
    r->cur = -1;
}

/* Samples whose window ended longer ago than all the windows together
 * hold nothing any more (Kafka's purgeObsoleteSamples: reset to now). */
static void purge(struct rate *r, int64_t now_ms)
{
    int64_t expire = (int64_t)r->nsamples * r->window_ms;
    for (int i = 0; i < r->nsamples; i++)
        if (now_ms - r->start[i] >= expire) {
            r->start[i] = now_ms;
            r->value[i] = 0;
        }
}

void rate_record(struct rate *r, double v, int64_t now_ms)
{
    if (r->cur < 0) {
        /* the first value: every sample starts empty now */
        for (int i = 0; i < r->nsamples; i++)
            r->start[i] = now_ms;
        r->cur = 0;
    } else if (now_ms - r->start[r->cur] >= r->window_ms) {
        r->cur = (r->cur + 1) % r->nsamples;
        r->start[r->cur] = now_ms;
        r->value[r->cur] = 0;
    }
    r->value[r->cur] += v;
}

int64_t rate_window_ms(struct rate *r, int64_t now_ms)
{
    purge(r, now_ms);
    int64_t oldest = now_ms;
    if (r->cur >= 0)
        for (int i = 0; i < r->nsamples; i++)
            if (r->start[i] < oldest)
                oldest = r->start[i];
    int64_t elapsed = now_ms - oldest;
    int64_t full = elapsed / r->window_ms, min_full = r->nsamples - 1;
    if (full < min_full)
        elapsed += (min_full - full) * r->window_ms;
    return elapsed > 0 ? elapsed : 1;
}

double rate_measure(struct rate *r, int64_t now_ms)
{
    int64_t w = rate_window_ms(r, now_ms); /* purges first */
    double sum = 0;
    if (r->cur >= 0)
        for (int i = 0; i < r->nsamples; i++)
            sum += r->value[i];
    return sum / ((double)w / 1000.0);
}

int64_t rate_throttle_ms(struct rate *r, double bound, int64_t now_ms)
{
    if (!(bound > 0))
        return 0;
    double v = rate_measure(r, now_ms);
    if (v <= bound)
        return 0;
    return (int64_t)llround((v - bound) / bound * (double)rate_window_ms(r, now_ms));
}
