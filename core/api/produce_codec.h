/* A Produce's batch and the topic's compression.type: keep the
 * producer's bytes, or recompress (Kafka's LogValidator). Policy of the
 * produce path, on top of the codecs of plugin/codec.h. */
#ifndef SAMSA_API_PRODUCE_CODEC_H
#define SAMSA_API_PRODUCE_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugin/codec.h"
#include "proto/record_batch.h"
#include "util/buf.h"

struct plugin_registry;
struct topic_config;

/* One partition's batch in a Produce request. Use:
 *     struct produce_codec pc;
 *     produce_codec_init(&pc, reg, tc, records, len);
 *     opts.decompress = produce_codec_decompress; opts.decompress_ctx = &pc;
 *     rc = rb_validate_produce(records, len, ..., &opts, &vr);
 *     if (!rc) rc = produce_codec_apply(&pc, &batch, &batch_len, &vr, reason, n);
 *     ... append batch/batch_len ...
 *     produce_codec_free(&pc);
 * apply keeps the producer's batch untouched (byte-identical) when the
 * topic's compression.type is "producer" or equals the batch's codec,
 * and otherwise points *batch at a rebuilt one owned by pc. */
struct produce_codec {
    const struct plugin_registry *reg;
    int target;    /* topic codec id, or -1 for "producer" */
    int source;    /* the batch's codec id as its header says, -1 if too short */
    int32_t level; /* topic's compression.<codec>.level */
    int32_t max_message_bytes;
    struct codec_ctx ctx;
    struct buf records; /* decompressed records kept for a rebuild */
    bool have_records;
    struct buf rebuilt;
    bool rebuilt_used;
};

void produce_codec_init(struct produce_codec *pc, const struct plugin_registry *reg,
                        const struct topic_config *tc, const uint8_t *records, size_t len);
int produce_codec_decompress(void *pc, int codec, const uint8_t *in, size_t in_len, struct buf *out);
/* After a successful rb_validate_produce of *batch (vr). Returns 0 (with
 * *batch / *len possibly replaced; the caller must then not apply
 * vr->max_timestamp_stale, which the rebuild already fixed) or a Kafka
 * error code with reason (the rebuilt batch exceeds max.message.bytes:
 * MESSAGE_TOO_LARGE, as Kafka's UnifiedLog re-check; no codec for the
 * target: UNSUPPORTED_COMPRESSION_TYPE). */
int produce_codec_apply(struct produce_codec *pc, uint8_t **batch, size_t *len,
                        const struct rb_validate_result *vr, char *reason, size_t reason_len);
/* Whether apply will keep the batch as produced (its codec is the
 * topic's, and loaded, or none): what samsa.record.validation=batch needs
 * to leave its records unread. */
bool produce_codec_keeps(const struct produce_codec *pc);
/* Whether apply replaced the batch. */
static inline bool produce_codec_rebuilt(const struct produce_codec *pc) { return pc->rebuilt_used; }
void produce_codec_free(struct produce_codec *pc);

#endif
