/* SPDX-License-Identifier: Apache-2.0
 *
 * Capability kind SAMSA_CAP_CODEC: a compression codec for Kafka record
 * batches. The records block of a batch (everything after the 61-byte
 * header) is compressed as one unit; bits 0-2 of the batch attributes
 * name the codec (Kafka's CompressionType ids).
 *
 * The host uses a codec to validate compressed batches a producer sends
 * (it decompresses and iterates the records), to recompress a batch when
 * the topic's compression.type differs from the producer's, and in its
 * own tools (samsactl). It never calls a codec for id 0 (none).
 *
 * A codec must read every variant of its format that Kafka clients
 * write (for Kafka's ids: gzip members, xerial-framed and raw snappy, the
 * LZ4 frame including the legacy header-checksum quirk, zstd frames with
 * or without content size) and write the variant every Kafka client
 * reads.
 */
#ifndef SAMSA_CODEC_H
#define SAMSA_CODEC_H

#include "samsa/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kafka's compression ids (record batch attributes, bits 0-2). */
#define SAMSA_CODEC_NONE 0
#define SAMSA_CODEC_GZIP 1
#define SAMSA_CODEC_SNAPPY 2
#define SAMSA_CODEC_LZ4 3
#define SAMSA_CODEC_ZSTD 4
#define SAMSA_CODEC_ID_MAX 7 /* 5-7: unused by Kafka */

/* Level argument meaning "the codec's default" (Kafka's gzip -1). */
#define SAMSA_CODEC_LEVEL_DEFAULT INT32_MIN

typedef struct samsa_codec {
    /* hdr.kind = SAMSA_CAP_CODEC; hdr.name = Kafka's compression.type
     * value for this codec ("gzip", "snappy", "lz4", "zstd"). */
    samsa_cap_hdr_t hdr;

    /* ---- ABI 1.0 ---- */
    int32_t id; /* 1..SAMSA_CODEC_ID_MAX, unique in the process */
    /* Levels compress accepts (compression.<name>.level); a level outside
     * [level_min, level_max] is clamped by the host before the call.
     * A codec without levels sets all three to 0. */
    int32_t level_min;
    int32_t level_max;
    int32_t level_default;

    /* Compresses in[0..in_len) into out, appending one complete
     * compressed block in the form Kafka clients read. level is within
     * [level_min, level_max] or SAMSA_CODEC_LEVEL_DEFAULT.
     * Returns SAMSA_OK, SAMSA_ENOSPC (out refused room), SAMSA_ENOMEM.
     * @locality any worker thread, concurrently; must not block */
    int (*compress)(void *cap_state, int32_t level, const uint8_t *in, size_t in_len,
                    samsa_out_t *out);

    /* Decompresses in[0..in_len) into out. The whole input must be
     * consumed: trailing garbage or a truncated stream is SAMSA_ECORRUPT.
     * The output is bounded by the host through out (decompression
     * bombs): when out->reserve returns NULL the codec stops and returns
     * SAMSA_ENOSPC. A codec must never write more than it reserved.
     * Returns SAMSA_OK, SAMSA_ECORRUPT, SAMSA_ENOSPC, SAMSA_ENOMEM.
     * @locality any worker thread, concurrently; must not block */
    int (*decompress)(void *cap_state, const uint8_t *in, size_t in_len, samsa_out_t *out);

    /* ---- ABI 1.1+: append here ---- */
} samsa_codec_t;

#define SAMSA_CODEC_SIZE_1_0 (offsetof(samsa_codec_t, decompress) + sizeof(void *))

#ifdef __cplusplus
}
#endif

#endif /* SAMSA_CODEC_H */
