/* Reading a coordinator's partition back (__consumer_offsets,
 * __transaction_state) when this node becomes its leader: every record
 * of every data batch from the log start to the log end, decompressed,
 * in order. Control batches and transactional batches are skipped (the
 * coordinators' own writes are neither). */
#ifndef SAMSA_COORD_LOGSCAN_H
#define SAMSA_COORD_LOGSCAN_H

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

#endif
