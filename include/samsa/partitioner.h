/* SPDX-License-Identifier: Apache-2.0
 *
 * Capability kind SAMSA_CAP_PARTITIONER: chooses a partition for a
 * record. Kafka clients pick partitions themselves, so the server uses a
 * partitioner only for the records it writes on its own behalf and in
 * samsa's own tools (samsactl produce --partitioner NAME); the same
 * plugin can be wrapped as a librdkafka partitioner.
 */
#ifndef SAMSA_PARTITIONER_H
#define SAMSA_PARTITIONER_H

#include "samsa/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* partition() result: no opinion; the caller falls back to its default
 * (murmur2 of the key, as Kafka's producer). */
#define SAMSA_PARTITION_DEFER (-1)

typedef struct samsa_partitioner {
    /* hdr.kind = SAMSA_CAP_PARTITIONER; hdr.name e.g. "example". */
    samsa_cap_hdr_t hdr;

    /* ---- ABI 1.0 ---- */

    /* Returns a partition in [0, partition_count) or
     * SAMSA_PARTITION_DEFER. key_len -1 means a null key. Pure: the same
     * input gives the same answer.
     * @locality any thread, concurrently; must not block */
    int32_t (*partition)(void *cap_state, const char *topic, const uint8_t *key, int32_t key_len,
                         int32_t partition_count);

    /* ---- ABI 1.2 ---- */

    /* As partition, with the record's value (value_len -1: null value).
     * May be NULL; a caller that has the value uses it when present.
     * @locality any thread, concurrently; must not block */
    int32_t (*partition_record)(void *cap_state, const char *topic, const uint8_t *key, int32_t key_len,
                                const uint8_t *value, int32_t value_len, int32_t partition_count);

    /* ---- ABI 1.3+: append here ---- */
} samsa_partitioner_t;

#define SAMSA_PARTITIONER_SIZE_1_0 (offsetof(samsa_partitioner_t, partition) + sizeof(void *))

#ifdef __cplusplus
}
#endif

#endif /* SAMSA_PARTITIONER_H */
