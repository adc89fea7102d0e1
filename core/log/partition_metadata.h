/* <partition dir>/partition.metadata, Kafka's PartitionMetadataFile:
 *
 *   version: 0
 *   topic_id: <22-character base64url topic id>
 *
 * It ties a partition directory to one incarnation of its topic, so a
 * directory left over from a deleted topic of the same name is never
 * mistaken for the new one. */
#ifndef SAMSA_LOG_PARTITION_METADATA_H
#define SAMSA_LOG_PARTITION_METADATA_H

#include <stdbool.h>

#include "proto/kcodec.h"

#define PARTITION_METADATA_FILE "partition.metadata"

/* 0 with *found false when the file does not exist or is empty (a
 * crash between its creation and its write: partition_metadata_write
 * with durable false, below), 0 with *found true
 * and *topic_id set, or KERR_KAFKA_STORAGE_ERROR (logged) when it cannot
 * be read or is not in the format above. */
int partition_metadata_read(const char *dir, bool *found, kuuid_t *topic_id);

/* Writes the file atomically and durably. 0 or KERR_KAFKA_STORAGE_ERROR
 * (logged). */
int partition_metadata_write(const char *dir, const kuuid_t *topic_id);
/* The same, or with durable false written in place with no fsync (a
 * directory just created, which the caller syncs later): a crash before
 * that sync leaves the file missing or empty, which the reader takes as
 * "not written" and the log's open writes again from the metadata. */
int partition_metadata_write_ex(const char *dir, const kuuid_t *topic_id, bool durable);

#endif
