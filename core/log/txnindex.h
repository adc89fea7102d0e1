/* Kafka's transaction index file (<segment base>.txnindex): one 34-byte
 * entry per aborted transaction whose ABORT marker is in the segment,
 * big-endian: int16 version (0), int64 producer id, int64 first offset,
 * int64 last offset (the marker's), int64 last stable offset at the
 * marker. Pure encoding and decoding; the log's use of it is plog_txn.c. */
#ifndef SAMSA_LOG_TXNINDEX_H
#define SAMSA_LOG_TXNINDEX_H

#include <stddef.h>
#include <stdint.h>

#include "log/plog.h" /* struct plog_aborted_txn */

#define TXNINDEX_ENTRY_SIZE 34
#define TXNINDEX_ENTRY_VERSION 0

/* Writes a's entry into p (TXNINDEX_ENTRY_SIZE bytes). */
void txnindex_encode(uint8_t *p, const struct plog_aborted_txn *a);

/* Decodes the entries of a file's bytes, calling fn for each valid one
 * in order. Stops at the first entry that is not a version-0 entry with
 * 0 <= first offset <= last offset. Returns the number of entries taken;
 * *clean is 1 when every byte was a valid entry, 0 when the file should
 * be rewritten from what was taken (a torn last entry after a crash, or
 * an invalid one). */
size_t txnindex_decode(const uint8_t *data, size_t len, void (*fn)(void *ctx, const struct plog_aborted_txn *a),
                       void *ctx, int *clean);

#endif
