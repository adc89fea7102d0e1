/* Fuzz target: producer-state snapshots (pstate_snapshot_decode), the
 * files a partition reloads at startup, whether samsa or Kafka wrote them.
 * Input: a mode byte, then the bytes. Mode bit 0 set: the CRC field is
 * recomputed over the bytes first, so that the fuzzer gets past the
 * checksum to the entries.
 *
 * What decodes must re-encode to bytes that decode to the same bytes
 * again, and the last batch of each entry must be a duplicate of itself
 * (the reason snapshots exist). A failed decode leaves the state empty.
 * Nothing may crash or read out of bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log/producer_state.h"
#include "proto/crc32c.h"
#include "util/buf.h"

struct walk {
    const struct pstate *s;
};

static void check_entry(void *ctx, const struct ps_entry *e)
{
    struct walk *w = ctx;
    if (e->producer_id < 0 || e->epoch < 0 || e->nbatches < 0 || e->nbatches > 1)
        abort();
    if (!e->nbatches)
        return;
    const struct ps_batch *b = &e->batches[0];
    if (b->first_offset < 0 || b->first_offset > b->last_offset || b->last_offset - b->first_offset > INT32_MAX)
        abort();
    /* for a non-negative last sequence, the decoded first sequence plus
     * the delta gives it back, so a retry of that batch is recognised */
    if (b->last_seq < 0)
        return;
    struct rb_header h;
    memset(&h, 0, sizeof h);
    h.magic = 2;
    h.producer_id = e->producer_id;
    h.producer_epoch = e->epoch;
    h.base_sequence = b->first_seq;
    h.last_offset_delta = (int32_t)(b->last_offset - b->first_offset);
    struct ps_batch dup;
    if (pstate_check(w->s, &h, &dup) != PSTATE_DUPLICATE || memcmp(&dup, b, sizeof dup) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t mode = data[0];
    data++, size--;

    /* a copy of exactly size bytes, so that ASan sees any overread */
    uint8_t *p = malloc(size ? size : 1);
    memcpy(p, data, size);
    if ((mode & 1) && size >= 6)
        be32_write(p + 2, crc32c(0, p + 6, size - 6));

    struct pstate *s = pstate_new(), *t = pstate_new();
    if (!s || !t)
        abort();
    if (pstate_snapshot_decode(s, p, size) != 0) {
        if (pstate_count(s) != 0)
            abort();
    } else {
        struct walk w = {s};
        pstate_foreach(s, check_entry, &w);
        struct buf a = BUF_INIT, b = BUF_INIT;
        if (pstate_snapshot_encode(s, &a) != 0 || pstate_snapshot_decode(t, a.data, a.len) != 0 ||
            pstate_count(t) != pstate_count(s) || pstate_snapshot_encode(t, &b) != 0 || a.len != b.len ||
            memcmp(a.data, b.data, a.len) != 0)
            abort();
        buf_free(&b);
        buf_free(&a);
        pstate_expire(s, 0, 1000);
    }
    pstate_free(t);
    pstate_free(s);
    free(p);
    return 0;
}
