/* Kafka's key hash for samsactl's default partitioner and the bench:
 * the public inline samsa_murmur2 of samsa/partitioner.h, which the
 * Lua module's samsa.murmur2 and any partitioner plugin use too. */
#ifndef SAMSACTL_MURMUR2_H
#define SAMSACTL_MURMUR2_H

#include <stddef.h>
#include <stdint.h>

#include "samsa/partitioner.h"

static inline int32_t kafka_murmur2(const void *data, size_t len) { return samsa_murmur2(data, len); }
static inline int32_t kafka_to_positive(int32_t v) { return samsa_to_positive(v); }

#endif
