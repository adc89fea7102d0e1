/* Partitions hosted by this node: the local log plus replication state
 * (leader epoch, high watermark). The registry creates and removes them
 * as the metadata image says; handlers find them by topic id and index
 * and hold a reference while they use one. */
#ifndef SAMSA_REPLICA_PARTITION_H
#define SAMSA_REPLICA_PARTITION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "proto/kcodec.h"

struct plog;
struct mimage;
struct broker;
struct partition_registry;
struct topic_config;

struct partition {
    kuuid_t topic_id;
    char *topic;                  /* NUL-terminated, owned */
    int32_t index;
    struct plog *log;
    atomic_int_least64_t high_watermark;
    atomic_int leader_epoch;
    atomic_int refs;
    atomic_bool deleted;          /* removed from the registry */
    struct broker *broker;
};

struct partition_registry *preg_create(struct broker *b);
/* Closes every partition (clean: flush and mark clean) and frees. */
void preg_destroy(struct partition_registry *r, bool clean);
/* The partition with one more reference, or NULL if not hosted here. */
struct partition *preg_get(struct partition_registry *r, const kuuid_t *topic_id, int32_t index);
void partition_put(struct partition *p);
/* Makes the hosted partitions match img: opens or creates logs for new
 * partitions led or replicated here, deletes the logs of removed topics.
 * Returns 0, or -1 with one line in err. */
int preg_sync(struct partition_registry *r, const struct mimage *img, char *err, size_t errlen);

/* Appends validated batches (modified in place: offsets and leader epoch
 * stamped), advances the high watermark (single replica) and wakes
 * parked fetches. Returns a Kafka error code. */
struct plog_append_result;
int partition_append(struct partition *p, uint8_t *batches, size_t len, bool log_append_time,
                     struct plog_append_result *res);

#endif
