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

/* Kafka's key hash as the Java client computes it (Utils.murmur2, seed
 * 0x9747b28c, returned as Java's signed int), so that a partitioner can
 * agree with Java and librdkafka's murmur2 producers: Kafka's partition
 * for a key is samsa_to_positive(samsa_murmur2(key, len)) % count.
 * Inline, so it adds nothing to the ABI. */
static inline int32_t samsa_murmur2(const void *data, size_t len)
{
    const uint8_t *p = (const uint8_t *)data;
    const uint32_t m = 0x5bd1e995u;
    /* Java's int arithmetic wraps and its >>> is an unsigned shift, so
     * uint32_t arithmetic matches it. */
    uint32_t h = 0x9747b28cu ^ (uint32_t)len;
    size_t n4 = len / 4;
    for (size_t i = 0; i < n4; i++) {
        const uint8_t *q = p + i * 4;
        uint32_t k = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
        k *= m;
        k ^= k >> 24;
        k *= m;
        h *= m;
        h ^= k;
    }
    const uint8_t *tail = p + n4 * 4;
    switch (len & 3) {
    case 3:
        h ^= (uint32_t)tail[2] << 16;
        /* fall through */
    case 2:
        h ^= (uint32_t)tail[1] << 8;
        /* fall through */
    case 1:
        h ^= tail[0];
        h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return (int32_t)h;
}

/* Java's Utils.toPositive: clears the sign bit (not abs()). */
static inline int32_t samsa_to_positive(int32_t v) { return v & 0x7fffffff; }

#ifdef __cplusplus
}
#endif

#endif /* SAMSA_PARTITIONER_H */
