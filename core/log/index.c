#include "log/index.h"

#include <stdlib.h>

#include "util/buf.h"

void oidx_init(struct offset_index *x, int64_t base_offset)
{
    x->base_offset = base_offset;
    x->e = NULL;
    x->n = x->cap = 0;
}

void oidx_free(struct offset_index *x)
{
    free(x->e);
    x->e = NULL;
    x->n = x->cap = 0;
}

void oidx_reset(struct offset_index *x) { x->n = 0; }

void oidx_append(struct offset_index *x, int64_t offset, int64_t position)
{
    if (x->n == x->cap) {
        x->cap = x->cap ? x->cap * 2 : 64;
        x->e = xrealloc(x->e, x->cap * sizeof *x->e);
    }
    x->e[x->n].rel_offset = (int32_t)(offset - x->base_offset);
    x->e[x->n].position = (int32_t)position;
    x->n++;
}

struct offset_position oidx_lookup(const struct offset_index *x, int64_t target)
{
    struct offset_position r = {x->base_offset, 0};
    if (target < x->base_offset)
        return r;
    int64_t rel = target - x->base_offset;
    /* Binary search for the last entry with rel_offset <= rel. */
    size_t lo = 0, hi = x->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->e[mid].rel_offset <= rel)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0) {
        r.offset = x->base_offset + x->e[lo - 1].rel_offset;
        r.position = x->e[lo - 1].position;
    }
    return r;
}

void tidx_init(struct time_index *x, int64_t base_offset)
{
    x->base_offset = base_offset;
    x->e = NULL;
    x->n = x->cap = 0;
}

void tidx_free(struct time_index *x)
{
    free(x->e);
    x->e = NULL;
    x->n = x->cap = 0;
}

void tidx_reset(struct time_index *x) { x->n = 0; }

void tidx_maybe_append(struct time_index *x, int64_t timestamp, int64_t offset)
{
    if (x->n > 0 && timestamp <= x->e[x->n - 1].timestamp)
        return;
    if (x->n == x->cap) {
        x->cap = x->cap ? x->cap * 2 : 64;
        x->e = xrealloc(x->e, x->cap * sizeof *x->e);
    }
    x->e[x->n].timestamp = timestamp;
    x->e[x->n].rel_offset = (int32_t)(offset - x->base_offset);
    x->n++;
}

struct timestamp_offset tidx_lookup(const struct time_index *x, int64_t target)
{
    struct timestamp_offset r = {-1, x->base_offset};
    size_t lo = 0, hi = x->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->e[mid].timestamp <= target)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0) {
        r.timestamp = x->e[lo - 1].timestamp;
        r.offset = x->base_offset + x->e[lo - 1].rel_offset;
    }
    return r;
}
