#include "util/throttle.h"

#include <float.h>
#include <math.h>

void throttle_init(struct throttle *t, double bytes_per_sec, int64_t now_ms)
{
    pthread_mutex_init(&t->lock, NULL);
    t->bytes_per_ms = isfinite(bytes_per_sec) && bytes_per_sec > 0 && bytes_per_sec < DBL_MAX ? bytes_per_sec / 1000.0 : 0;
    t->period_start_ms = now_ms;
    t->observed = 0;
}

void throttle_destroy(struct throttle *t) { pthread_mutex_destroy(&t->lock); }

int64_t throttle_record(struct throttle *t, int64_t n, int64_t now_ms)
{
    if (t->bytes_per_ms <= 0)
        return 0;
    int64_t sleep_ms = 0;
    pthread_mutex_lock(&t->lock);
    t->observed += (double)n;
    int64_t elapsed = now_ms - t->period_start_ms;
    /* Kafka checks once the interval has passed; a burst of more than an
     * interval's worth is checked at once too, so that a pass shorter
     * than the interval is bounded as well */
    if ((elapsed > THROTTLE_CHECK_INTERVAL_MS || t->observed > t->bytes_per_ms * THROTTLE_CHECK_INTERVAL_MS) &&
        t->observed > 0) {
        if (t->observed / (double)elapsed > t->bytes_per_ms) {
            /* the time these bytes should have taken, less what passed */
            int64_t s = (int64_t)llround(t->observed / t->bytes_per_ms) - elapsed;
            sleep_ms = s > 0 ? s : 0;
        }
        /* the next period starts once the sleep is over */
        t->period_start_ms = now_ms + sleep_ms;
        t->observed = 0;
    }
    pthread_mutex_unlock(&t->lock);
    return sleep_ms;
}
