#include "net/framepool.h"

#include <stdlib.h>

#include "util/buf.h"

/* Sizes are rounded up to a power of two (up to 1 MiB, then to whole
 * MiB) so that the next frame, a little bigger than the last, still fits
 * a kept buffer. */
static size_t size_class(size_t len)
{
    const size_t mib = 1024 * 1024;
    if (len > mib)
        return (len + mib - 1) / mib * mib;
    size_t c = FRAME_POOL_MIN_BYTES;
    while (c < len)
        c <<= 1;
    return c;
}

uint8_t *frame_pool_get(struct frame_pool *fp, size_t len, size_t *cap)
{
    if (len < FRAME_POOL_MIN_BYTES) {
        *cap = 0;
        return xmalloc(len ? len : 1);
    }
    /* Of the smallest that fit, the one put back last: its lines are the
     * likeliest still to be in this core's caches for the copy into it. */
    int best = -1;
    for (int i = fp->n - 1; i >= 0; i--)
        if (fp->slot[i].cap >= len && (best < 0 || fp->slot[i].cap < fp->slot[best].cap))
            best = i;
    if (best >= 0) {
        uint8_t *p = fp->slot[best].p;
        *cap = fp->slot[best].cap;
        fp->bytes -= *cap;
        fp->n--;
        for (int i = best; i < fp->n; i++) /* keep the order of puts */
            fp->slot[i] = fp->slot[i + 1];
        return p;
    }
    *cap = size_class(len);
    return xmalloc(*cap);
}

void frame_pool_put(struct frame_pool *fp, uint8_t *p, size_t cap)
{
    if (!p)
        return;
    if (cap < FRAME_POOL_MIN_BYTES || cap > FRAME_POOL_MAX_BYTES) {
        free(p);
        return;
    }
    /* full: the smallest kept buffer makes room for a bigger one */
    while (fp->n > 0 && (fp->n == FRAME_POOL_SLOTS || fp->bytes + cap > FRAME_POOL_MAX_BYTES)) {
        int small = 0;
        for (int i = 1; i < fp->n; i++)
            if (fp->slot[i].cap < fp->slot[small].cap)
                small = i;
        if (fp->slot[small].cap >= cap) {
            free(p);
            return;
        }
        free(fp->slot[small].p);
        fp->bytes -= fp->slot[small].cap;
        fp->n--;
        for (int i = small; i < fp->n; i++)
            fp->slot[i] = fp->slot[i + 1];
    }
    fp->slot[fp->n].p = p;
    fp->slot[fp->n].cap = cap;
    fp->n++;
    fp->bytes += cap;
}

void frame_pool_clear(struct frame_pool *fp)
{
    for (int i = 0; i < fp->n; i++)
        free(fp->slot[i].p);
    fp->n = 0;
    fp->bytes = 0;
}
