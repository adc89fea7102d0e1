/* Kafka's key hash, as the Java client computes it
 * (org.apache.kafka.common.utils.Utils.murmur2 and toPositive), shared
 * by samsactl's default partitioner and the Lua sandbox's
 * samsa.murmur2. Depends on nothing but libc, so modules and the
 * librdkafka plugin compile it in. */
#ifndef SAMSACTL_MURMUR2_H
#define SAMSACTL_MURMUR2_H

#include <stddef.h>
#include <stdint.h>

/* Kafka's murmur2 (seed 0x9747b28c), as the signed int Java returns. */
int32_t kafka_murmur2(const void *data, size_t len);
/* Java's Utils.toPositive: clears the sign bit (not abs()). */
static inline int32_t kafka_to_positive(int32_t v) { return v & 0x7fffffff; }

#endif
