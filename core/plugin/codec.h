/* Codecs from plugins, as the core uses them: bounded (de)compression
 * into a struct buf, the rb_codec_fn adapters record_batch.h expects,
 * and Kafka's LogValidator rebuild of a batch with another codec. The
 * produce path's decision (keep the producer's batch or recompress it to
 * the topic's compression.type) is api/produce_codec.h.
 *
 * The core contains no codec: every id is looked up in a plugin
 * registry; an id no loaded plugin handles is
 * UNSUPPORTED_COMPRESSION_TYPE. */
#ifndef SAMSA_PLUGIN_CODEC_H
#define SAMSA_PLUGIN_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/record_batch.h"
#include "samsa/codec.h" /* SAMSA_CODEC_LEVEL_DEFAULT, codec ids */
#include "util/buf.h"

struct plugin_registry;

/* Hard ceiling of one batch's decompressed records, whatever the batch
 * claims: bounds what a hostile producer can make a worker allocate. */
#define CODEC_DECOMPRESS_CEILING ((size_t)256 << 20)

/* Decompresses in into out (appended), refusing to produce more than
 * limit bytes. Returns 0 or a Kafka error code:
 * UNSUPPORTED_COMPRESSION_TYPE (no codec for id), CORRUPT_MESSAGE
 * (undecodable), MESSAGE_TOO_LARGE (over limit), UNKNOWN_SERVER_ERROR
 * (out of memory or a codec bug). On error out is as before the call. */
int codec_decompress(const struct plugin_registry *reg, int id, const uint8_t *in, size_t in_len,
                     struct buf *out, size_t limit);
/* Compresses in into out (appended) at level (clamped to the codec's
 * range; SAMSA_CODEC_LEVEL_DEFAULT or a Kafka "-1" for the default).
 * Kafka error codes as above. */
int codec_compress(const struct plugin_registry *reg, int id, int32_t level, const uint8_t *in,
                   size_t in_len, struct buf *out);

/* rb_codec_fn adapters; ctx is a struct codec_ctx. */
struct codec_ctx {
    const struct plugin_registry *reg;
    size_t limit;  /* decompression: output bound */
    int32_t level; /* compression */
};
int codec_rb_decompress(void *ctx, int codec, const uint8_t *in, size_t in_len, struct buf *out);
int codec_rb_compress(void *ctx, int codec, const uint8_t *in, size_t in_len, struct buf *out);

/* Output bound for the records of a batch declaring count records on a
 * topic with max.message.bytes max_message_bytes: a Kafka producer keeps
 * every record under max.request.size, which brokers match with
 * max.message.bytes, so count records never legitimately decompress to
 * more than count * max_message_bytes (plus record framing); capped at
 * CODEC_DECOMPRESS_CEILING. */
size_t codec_records_limit(int32_t count, int32_t max_message_bytes);

/* Kafka's LogValidator rebuild (buildRecordsAndAssignOffsets): a new
 * batch, appended to out, with the records of batch (len bytes, a valid
 * v2 batch whose records block is given decompressed in records /
 * records_len, or NULL to read an uncompressed batch's own), compressed
 * with target (0 = none) at level. Offset deltas, timestamps (base and
 * per record), record attributes, keys, values, headers, the producer
 * id/epoch/base sequence, the transactional and control bits and the
 * partition leader epoch are kept; lastOffsetDelta, maxTimestamp and the
 * CRC are recomputed. The timestamp type is CreateTime: LogAppendTime is
 * stamped by the append. Returns 0 or a Kafka error code with reason. */
int codec_rebuild_batch(const struct plugin_registry *reg, const uint8_t *batch, size_t len,
                        const uint8_t *records, size_t records_len, int target, int32_t level,
                        struct buf *out, char *reason, size_t reason_len);

#endif
