#include "raft/memlog.h"

#include <stdlib.h>
#include <string.h>

#include "proto/kerr.h"
#include "proto/record_batch.h"

void memlog_init(struct memlog *l)
{
    memset(l, 0, sizeof *l);
    buf_init(&l->readbuf);
}

static void free_snap(struct memlog_snapshot *s) { buf_free(&s->data); }

void memlog_free(struct memlog *l)
{
    for (int32_t i = 0; i < l->n; i++)
        free(l->b[i].data);
    free(l->b);
    for (int32_t i = 0; i < l->nsnaps; i++)
        free_snap(&l->snaps[i]);
    free(l->snaps);
    buf_free(&l->readbuf);
    memset(l, 0, sizeof *l);
}

int32_t memlog_find(const struct memlog *l, int64_t offset)
{
    int32_t lo = 0, hi = l->n - 1;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (l->b[mid].last_offset < offset)
            lo = mid + 1;
        else if (l->b[mid].base_offset > offset)
            hi = mid - 1;
        else
            return mid;
    }
    return -1;
}

static int64_t ml_start(void *ctx) { return ((struct memlog *)ctx)->start; }
static int64_t ml_end(void *ctx) { return ((struct memlog *)ctx)->end; }

static int ml_append(void *ctx, const uint8_t *p, size_t len)
{
    struct memlog *l = ctx;
    /* validate first: the log is unchanged on error */
    int64_t expect = l->end;
    for (size_t pos = 0; pos < len;) {
        size_t size = 0;
        struct rb_header h;
        if (rb_frame(p + pos, len - pos, &size) != 0 || rb_parse_header(p + pos, size, &h) != 0 ||
            h.base_offset != expect || h.last_offset_delta < 0)
            return KERR_CORRUPT_MESSAGE;
        expect = rb_last_offset(&h) + 1;
        pos += size;
    }
    for (size_t pos = 0; pos < len;) {
        size_t size = 0;
        struct rb_header h;
        rb_frame(p + pos, len - pos, &size);
        rb_parse_header(p + pos, size, &h);
        if (l->n == l->cap) {
            l->cap = l->cap ? l->cap * 2 : 64;
            l->b = xrealloc(l->b, (size_t)l->cap * sizeof *l->b);
        }
        struct memlog_batch *b = &l->b[l->n++];
        b->base_offset = h.base_offset;
        b->last_offset = rb_last_offset(&h);
        b->epoch = h.partition_leader_epoch;
        b->crc = h.crc;
        b->data = xmalloc(size);
        memcpy(b->data, p + pos, size);
        b->len = size;
        l->end = b->last_offset + 1;
        pos += size;
    }
    return 0;
}

static void drop_from(struct memlog *l, int32_t i)
{
    for (int32_t j = i; j < l->n; j++)
        free(l->b[j].data);
    l->n = i;
}

static int ml_truncate_to(void *ctx, int64_t offset)
{
    struct memlog *l = ctx;
    if (offset < l->start || offset > l->end)
        return KERR_OFFSET_OUT_OF_RANGE;
    if (offset == l->end)
        return 0;
    int32_t i = memlog_find(l, offset);
    if (i < 0 || l->b[i].base_offset != offset)
        return KERR_INVALID_REQUEST; /* not a batch boundary */
    drop_from(l, i);
    l->end = offset;
    if (l->durable_end > offset)
        l->durable_end = offset;
    l->gen++;
    return 0;
}

static int ml_read(void *ctx, int64_t offset, int32_t max_bytes, krecords_t *out)
{
    struct memlog *l = ctx;
    *out = (krecords_t){NULL, 0, NULL, 0};
    if (offset < l->start || offset > l->end)
        return KERR_OFFSET_OUT_OF_RANGE;
    if (offset == l->end)
        return 0;
    int32_t i = memlog_find(l, offset);
    if (i < 0)
        return KERR_OFFSET_OUT_OF_RANGE;
    buf_reset(&l->readbuf);
    for (; i < l->n; i++) {
        if (l->readbuf.len > 0 && l->readbuf.len + l->b[i].len > (size_t)(max_bytes > 0 ? max_bytes : 0))
            break;
        buf_append(&l->readbuf, l->b[i].data, l->b[i].len);
    }
    out->p = l->readbuf.data;
    out->len = (int32_t)l->readbuf.len;
    return 0;
}

static int ml_scan(void *ctx, raft_log_batch_fn fn, void *arg)
{
    struct memlog *l = ctx;
    for (int32_t i = 0; i < l->n; i++)
        fn(arg, l->b[i].base_offset, l->b[i].last_offset, l->b[i].epoch);
    return 0;
}

static struct memlog_snapshot *find_snap(struct memlog *l, const struct raft_snapshot_id *id, bool complete)
{
    for (int32_t i = 0; i < l->nsnaps; i++)
        if (l->snaps[i].complete == complete && l->snaps[i].id.end_offset == id->end_offset &&
            l->snaps[i].id.epoch == id->epoch)
            return &l->snaps[i];
    return NULL;
}

const struct memlog_snapshot *memlog_snapshot(const struct memlog *l, const struct raft_snapshot_id *id)
{
    return find_snap((struct memlog *)l, id, true);
}

static bool ml_latest(void *ctx, struct raft_snapshot_id *out)
{
    struct memlog *l = ctx;
    bool found = false;
    for (int32_t i = 0; i < l->nsnaps; i++)
        if (l->snaps[i].complete && (!found || l->snaps[i].id.end_offset > out->end_offset)) {
            *out = l->snaps[i].id;
            found = true;
        }
    return found;
}

static bool ml_oldest(void *ctx, struct raft_snapshot_id *out)
{
    struct memlog *l = ctx;
    bool found = false;
    for (int32_t i = 0; i < l->nsnaps; i++)
        if (l->snaps[i].complete && (!found || l->snaps[i].id.end_offset < out->end_offset)) {
            *out = l->snaps[i].id;
            found = true;
        }
    return found;
}

static int64_t ml_snap_size(void *ctx, const struct raft_snapshot_id *id)
{
    struct memlog_snapshot *s = find_snap(ctx, id, true);
    return s ? (int64_t)s->data.len : -1;
}

static int ml_snap_read(void *ctx, const struct raft_snapshot_id *id, int64_t pos, int32_t max_bytes, krecords_t *out)
{
    struct memlog_snapshot *s = find_snap(ctx, id, true);
    *out = (krecords_t){NULL, 0, NULL, 0};
    if (!s)
        return KERR_SNAPSHOT_NOT_FOUND;
    if (pos < 0 || pos > (int64_t)s->data.len)
        return KERR_POSITION_OUT_OF_RANGE;
    int64_t n = (int64_t)s->data.len - pos;
    if (n > max_bytes)
        n = max_bytes;
    out->p = s->data.data + pos;
    out->len = (int32_t)n;
    return 0;
}

static void remove_snap(struct memlog *l, struct memlog_snapshot *s)
{
    free_snap(s);
    *s = l->snaps[--l->nsnaps];
}

static int ml_snap_begin(void *ctx, const struct raft_snapshot_id *id)
{
    struct memlog *l = ctx;
    struct memlog_snapshot *s = find_snap(l, id, false);
    if (s)
        remove_snap(l, s);
    if (l->nsnaps == l->capsnaps) {
        l->capsnaps = l->capsnaps ? l->capsnaps * 2 : 4;
        l->snaps = xrealloc(l->snaps, (size_t)l->capsnaps * sizeof *l->snaps);
    }
    s = &l->snaps[l->nsnaps++];
    s->id = *id;
    s->complete = false;
    buf_init(&s->data);
    return 0;
}

static int ml_snap_append(void *ctx, const struct raft_snapshot_id *id, const uint8_t *p, size_t n)
{
    struct memlog_snapshot *s = find_snap(ctx, id, false);
    if (!s)
        return KERR_SNAPSHOT_NOT_FOUND;
    buf_append(&s->data, p, n);
    return 0;
}

static int ml_snap_finish(void *ctx, const struct raft_snapshot_id *id)
{
    struct memlog *l = ctx;
    struct memlog_snapshot *s = find_snap(l, id, false);
    if (!s)
        return KERR_SNAPSHOT_NOT_FOUND;
    struct memlog_snapshot *old = find_snap(l, id, true);
    if (old) {
        /* the same snapshot again: keep one copy */
        remove_snap(l, old);
        s = find_snap(l, id, false);
    }
    s->complete = true;
    return 0;
}

static int ml_reset_start(void *ctx, const struct raft_snapshot_id *id)
{
    struct memlog *l = ctx;
    if (!find_snap(l, id, true))
        return KERR_SNAPSHOT_NOT_FOUND;
    int64_t s = id->end_offset;
    if (s >= l->end) {
        drop_from(l, 0);
        l->start = l->end = s;
        l->durable_end = s;
        l->gen++;
    } else if (s > l->start) {
        int32_t i = memlog_find(l, s);
        if (i < 0 || l->b[i].base_offset != s)
            return KERR_INVALID_REQUEST;
        for (int32_t j = 0; j < i; j++)
            free(l->b[j].data);
        memmove(l->b, l->b + i, (size_t)(l->n - i) * sizeof *l->b);
        l->n -= i;
        l->start = s;
        if (l->durable_end < s)
            l->durable_end = s;
    }
    /* older snapshots are not needed any more */
    for (int32_t i = 0; i < l->nsnaps;) {
        if (l->snaps[i].complete && l->snaps[i].id.end_offset < l->start)
            remove_snap(l, &l->snaps[i]);
        else
            i++;
    }
    return 0;
}

static const struct raft_log_ops MEMLOG_OPS = {
    .start_offset = ml_start,
    .end_offset = ml_end,
    .append = ml_append,
    .truncate_to = ml_truncate_to,
    .read = ml_read,
    .scan = ml_scan,
    .latest_snapshot = ml_latest,
    .oldest_snapshot = ml_oldest,
    .snapshot_size = ml_snap_size,
    .snapshot_read = ml_snap_read,
    .snapshot_begin = ml_snap_begin,
    .snapshot_append = ml_snap_append,
    .snapshot_finish = ml_snap_finish,
    .reset_start = ml_reset_start,
};

struct raft_log memlog_raft_log(struct memlog *l) { return (struct raft_log){&MEMLOG_OPS, l}; }

struct memlog_flush memlog_flush_begin(const struct memlog *l) { return (struct memlog_flush){l->end, l->gen}; }

int64_t memlog_flush_end(struct memlog *l, struct memlog_flush f)
{
    if (f.gen == l->gen) {
        int64_t e = f.end < l->end ? f.end : l->end;
        if (e > l->durable_end)
            l->durable_end = e;
    }
    return l->durable_end;
}

void memlog_crash(struct memlog *l, int32_t keep_unflushed)
{
    int32_t keep = 0;
    while (keep < l->n && l->b[keep].last_offset < l->durable_end)
        keep++;
    keep += keep_unflushed;
    if (keep > l->n)
        keep = l->n;
    drop_from(l, keep);
    l->end = l->n > 0 ? l->b[l->n - 1].last_offset + 1 : l->start;
    l->durable_end = l->end;
    l->gen++;
    for (int32_t i = 0; i < l->nsnaps;) {
        if (!l->snaps[i].complete)
            remove_snap(l, &l->snaps[i]);
        else
            i++;
    }
}

int memlog_write_snapshot(struct memlog *l, const struct raft_snapshot_id *id, const uint8_t *p, size_t n)
{
    int rc = ml_snap_begin(l, id);
    if (rc == 0)
        rc = ml_snap_append(l, id, p, n);
    if (rc == 0)
        rc = ml_snap_finish(l, id);
    return rc;
}
