/* Reading a coordinator's partition back (__consumer_offsets,
 * __transaction_state) when this node becomes its leader: every record
 * of every data batch from the log start to the log end, decompressed,
 * in order. coord_log_scan skips control batches and transactional
 * batches (the transaction coordinator's writes are neither);
 * coord_log_scan_txn hands them over too, for the group coordinator,
 * whose transactional offset commits wait for their markers. */
#ifndef SAMSA_COORD_LOGSCAN_H
#define SAMSA_COORD_LOGSCAN_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/kcodec.h"

struct partition;
struct plugin_registry;

/* fn gets each record's offset, key and value (a null value: len -1),
 * valid for the call only. buffer: the read size (the coordinator's
 * *.load.buffer.size). what: names the partition's topic in log lines.
 * Returns 0 or KAFKA_STORAGE_ERROR / a read error. */
int coord_log_scan(struct partition *p, struct plugin_registry *plugins, int32_t buffer, const char *what,
                   void (*fn)(void *arg, int64_t offset, kbytes_t key, kbytes_t value), void *arg);

/* One record of a data batch: producer_id is the batch's when it is
 * transactional, else -1. */
struct coord_scan_fns {
    void (*record)(void *arg, int64_t offset, int64_t producer_id, kbytes_t key, kbytes_t value);
    /* A transaction marker (a COMMIT or ABORT control record) at offset. */
    void (*marker)(void *arg, int64_t offset, int64_t producer_id, bool commit);
};
/* coord_log_scan with transactional batches and markers, in log order. */
int coord_log_scan_txn(struct partition *p, struct plugin_registry *plugins, int32_t buffer, const char *what,
                       const struct coord_scan_fns *fns, void *arg);

#endif
