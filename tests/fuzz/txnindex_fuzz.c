/* Fuzz target: .txnindex files (txnindex_decode), which a partition
 * reloads at startup whether samsa or Kafka wrote them, torn by a crash
 * or damaged. Nothing may crash or read out of bounds; every entry taken
 * is valid (version 0, 0 <= first <= last) and re-encodes to the exact
 * bytes it came from; a file of whole valid entries is clean. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log/txnindex.h"

struct walk {
    const uint8_t *data;
    size_t i;
};

static void check(void *ctx, const struct plog_aborted_txn *a)
{
    struct walk *w = ctx;
    if (a->first_offset < 0 || a->last_offset < a->first_offset)
        abort();
    uint8_t e[TXNINDEX_ENTRY_SIZE];
    txnindex_encode(e, a);
    if (memcmp(e, w->data + w->i * TXNINDEX_ENTRY_SIZE, TXNINDEX_ENTRY_SIZE) != 0)
        abort();
    w->i++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct walk w = {data, 0};
    int clean = -1;
    size_t n = txnindex_decode(data, size, check, &w, &clean);
    if (n != w.i || n > size / TXNINDEX_ENTRY_SIZE || (clean != 0 && clean != 1))
        abort();
    if (clean && (size % TXNINDEX_ENTRY_SIZE || n != size / TXNINDEX_ENTRY_SIZE))
        abort();
    return 0;
}
