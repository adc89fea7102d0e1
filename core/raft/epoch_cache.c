#include "raft/epoch_cache.h"

#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

void rec_init(struct raft_epoch_cache *c)
{
    c->e = NULL;
    c->n = c->cap = 0;
    c->base_offset = 0;
    c->base_epoch = 0;
}

void rec_free(struct raft_epoch_cache *c)
{
    free(c->e);
    rec_init(c);
}

void rec_clear(struct raft_epoch_cache *c, int64_t base_offset, int32_t base_epoch)
{
    c->n = 0;
    c->base_offset = base_offset;
    c->base_epoch = base_epoch;
}

bool rec_assign(struct raft_epoch_cache *c, int32_t epoch, int64_t start_offset)
{
    if (start_offset < c->base_offset || epoch < c->base_epoch)
        return false;
    if (c->n > 0) {
        const struct raft_epoch_entry *last = &c->e[c->n - 1];
        if (epoch == last->epoch)
            return true;
        if (epoch < last->epoch || start_offset < last->start_offset)
            return false;
        /* A leader that wrote nothing in its epoch leaves an entry that
         * the next epoch starts at the same offset: the empty epoch covers
         * no records, so it is replaced rather than kept with a length of
         * zero (which would make endOffsetForEpoch answer an epoch that
         * owns no record). */
        if (start_offset == last->start_offset) {
            c->e[c->n - 1].epoch = epoch;
            return true;
        }
    }
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 8;
        c->e = xrealloc(c->e, (size_t)c->cap * sizeof *c->e);
    }
    c->e[c->n].epoch = epoch;
    c->e[c->n].start_offset = start_offset;
    c->n++;
    return true;
}

void rec_truncate_from(struct raft_epoch_cache *c, int64_t offset)
{
    while (c->n > 0 && c->e[c->n - 1].start_offset >= offset)
        c->n--;
}

void rec_trim_before(struct raft_epoch_cache *c, int64_t base_offset, int32_t base_epoch)
{
    /* i: the entry holding base_offset (the epoch that continues after the
     * snapshot), or 0 when every entry starts after the base. */
    int32_t i = 0;
    while (i + 1 < c->n && c->e[i + 1].start_offset <= base_offset)
        i++;
    if (c->n > 0 && c->e[i].start_offset <= base_offset) {
        memmove(c->e, c->e + i, (size_t)(c->n - i) * sizeof *c->e);
        c->n -= i;
        c->e[0].start_offset = base_offset;
    }
    c->base_offset = base_offset;
    c->base_epoch = base_epoch;
}

int32_t rec_last_epoch(const struct raft_epoch_cache *c)
{
    return c->n > 0 ? c->e[c->n - 1].epoch : c->base_epoch;
}

int32_t rec_epoch_at(const struct raft_epoch_cache *c, int64_t offset)
{
    if (offset < 0)
        return -1;
    int32_t ep = c->base_epoch;
    for (int32_t i = 0; i < c->n && c->e[i].start_offset <= offset; i++)
        ep = c->e[i].epoch;
    return ep;
}

struct raft_offset_epoch rec_end_offset_for_epoch(const struct raft_epoch_cache *c, int32_t epoch, int64_t log_end)
{
    int32_t i = c->n - 1;
    while (i >= 0 && c->e[i].epoch > epoch)
        i--;
    if (i < 0) {
        /* No epoch <= epoch has records: answer the base, ending where the
         * first epoch with records starts (the log start). */
        return (struct raft_offset_epoch){c->base_offset, c->base_epoch};
    }
    int64_t end = i + 1 < c->n ? c->e[i + 1].start_offset : log_end;
    return (struct raft_offset_epoch){end, c->e[i].epoch};
}
