/* Building metadata images from metadata records, and the record framing
 * of the metadata log. Private to the controller (and its tests): request
 * handlers only read published images through image.h.
 *
 * A draft starts from the current image, applies records in log order and
 * becomes the next image. The same path serves replay at start-up and
 * live changes (the controller applies the very bytes it is about to
 * append), so a restart rebuilds exactly the image that was published. */
#ifndef SAMSA_CONTROLLER_IMAGE_BUILD_H
#define SAMSA_CONTROLLER_IMAGE_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/image.h"
#include "proto/kcodec.h"

struct samsa_config;
struct mi_draft;

/* Kafka's MetadataRecordSerde (AbstractApiMessageSerde) frame version. */
#define MREC_FRAME_VERSION 1

/* Appends one framed record to w: unsigned varint frame version (1),
 * unsigned varint record type (the record's apiKey), unsigned varint
 * record version, then the record encoded at that version. rec is the
 * generated struct of the type (e.g. topic_record_t). */
void mrec_write(struct kwriter *w, int16_t type, int16_t version, const void *rec);
/* Decodes one record value of n bytes. On success returns 0 with the
 * generated struct in *rec, allocated (with its strings and arrays) from
 * arena a; strings may also point into p. Returns -1 with a reason in err
 * for another frame version, an unknown type, a version outside the
 * type's range, a malformed body or trailing bytes (as Kafka's serde
 * refuses them). */
int mrec_read(const uint8_t *p, size_t n, struct arena *a, int16_t *type, int16_t *version,
              void **rec, char *err, size_t errlen);

/* Starts the image after base (NULL: the empty image). The draft shares
 * base's topics until a record changes one. cfg is the broker config the
 * effective topic configs are computed from; node_id names this node's
 * broker config resource and becomes the controller id. Neither base nor
 * cfg is kept past mi_draft_finish / mi_draft_abort. */
struct mi_draft *mi_draft_begin(const struct mimage *base, const struct samsa_config *cfg,
                                int32_t node_id);
/* Applies one decoded record found at offset. Returns -1 with a reason in
 * err when it contradicts the state (a partition of an unknown topic, a
 * topic name that exists, ...); the draft is then unusable except for
 * mi_draft_abort. Types the image does not track are skipped. */
int mi_draft_apply(struct mi_draft *d, int64_t offset, int16_t type, int16_t version,
                   const void *rec, char *err, size_t errlen);
/* Applies every record of one whole batch (len bytes, its baseOffset
 * giving the records' offsets). Control batches are skipped; compressed
 * ones are refused (the controller never writes them). */
int mi_draft_apply_batch(struct mi_draft *d, const uint8_t *batch, size_t len, char *err,
                         size_t errlen);
/* The dynamic broker configs held by the draft (cluster default or this
 * node's); pointers valid until the draft changes. */
const struct mi_config *mi_draft_broker_configs(const struct mi_draft *d, bool cluster_default,
                                                int32_t *n);
/* The broker config the effective topic configs are computed from at
 * finish (cfg must outlive the draft). */
void mi_draft_set_config(struct mi_draft *d, const struct samsa_config *cfg);
/* The last offset the image will say it has applied (a snapshot's end
 * minus one: its records carry their own offsets, not the log's). */
void mi_draft_set_offset(struct mi_draft *d, int64_t offset);
/* Recomputes every topic's effective config at finish (the broker
 * config changed under the draft). */
void mi_draft_touch_all_configs(struct mi_draft *d);
/* The new image, with one reference for the caller. Consumes d. */
struct mimage *mi_draft_finish(struct mi_draft *d);
/* Drops d and everything it built. */
void mi_draft_abort(struct mi_draft *d);

/* Client quota entities (controller/quotas.c): copies and frees of an
 * image's array, and replaying one ClientQuotaRecord into it (true when
 * it changed anything; records of entity types or keys samsa does not
 * know are skipped). mi_quota_next_gen: a fresh process-wide
 * generation for an image whose quotas changed. */
struct client_quota_record_s;
struct mi_quota *mi_quotas_dup(const struct mi_quota *a, int32_t n);
void mi_quotas_free(struct mi_quota *a, int32_t n);
bool mi_quotas_apply(struct mi_quota **a, int32_t *n, const struct client_quota_record_s *r);
uint64_t mi_quota_next_gen(void);

#endif
