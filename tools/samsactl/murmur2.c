/* Kafka's murmur2 (murmur2.h). No dependencies: also compiled into the
 * lua module and the librdkafka plugin (samsa.murmur2). */
#include "murmur2.h"

int32_t kafka_murmur2(const void *data, size_t len)
{
    const uint8_t *p = data;
    const uint32_t m = 0x5bd1e995;
    const int r = 24;
    /* Java computes in int with wrap-around and signed shifts only on
     * values it has made unsigned (>>>), so uint32_t arithmetic matches. */
    uint32_t h = 0x9747b28cu ^ (uint32_t)len;
    size_t n4 = len / 4;
    for (size_t i = 0; i < n4; i++) {
        const uint8_t *q = p + i * 4;
        uint32_t k = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
        k *= m;
        k ^= k >> r;
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
