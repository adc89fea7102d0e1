/* The .txnindex entry format (see txnindex.h). */
#include "log/txnindex.h"

#include "util/buf.h"

void txnindex_encode(uint8_t *p, const struct plog_aborted_txn *a)
{
    be16_write(p, TXNINDEX_ENTRY_VERSION);
    be64_write(p + 2, (uint64_t)a->producer_id);
    be64_write(p + 10, (uint64_t)a->first_offset);
    be64_write(p + 18, (uint64_t)a->last_offset);
    be64_write(p + 26, (uint64_t)a->last_stable_offset);
}

size_t txnindex_decode(const uint8_t *data, size_t len, void (*fn)(void *ctx, const struct plog_aborted_txn *a),
                       void *ctx, int *clean)
{
    size_t n = len / TXNINDEX_ENTRY_SIZE;
    *clean = len % TXNINDEX_ENTRY_SIZE == 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *q = data + i * TXNINDEX_ENTRY_SIZE;
        struct plog_aborted_txn a = {
            .producer_id = (int64_t)be64_read(q + 2),
            .first_offset = (int64_t)be64_read(q + 10),
            .last_offset = (int64_t)be64_read(q + 18),
            .last_stable_offset = (int64_t)be64_read(q + 26),
        };
        if ((int16_t)be16_read(q) != TXNINDEX_ENTRY_VERSION || a.first_offset < 0 || a.last_offset < a.first_offset) {
            *clean = 0;
            return i;
        }
        fn(ctx, &a);
    }
    return n;
}
