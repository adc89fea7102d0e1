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
    /* flush.messages=1: a record counts as written (acknowledged, below
     * the high watermark) only once the flusher has fsynced it. */
    atomic_bool ack_after_flush;
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
/* What a handler answers when preg_get found nothing for a partition the
 * metadata places here: KAFKA_STORAGE_ERROR when its log is offline (its
 * log dir failed), else NOT_LEADER_OR_FOLLOWER (not hosted, or its log
 * still being opened at start-up: clients retry). */
int16_t preg_unavailable_error(struct partition_registry *r, const kuuid_t *topic_id, int32_t index);

/* Appends validated batches (modified in place: offsets and leader epoch
 * stamped), advances the high watermark (single replica) and wakes
 * parked fetches. Returns a Kafka error code. */
struct plog_append_result;
int partition_append(struct partition *p, uint8_t *batches, size_t len, bool log_append_time,
                     struct plog_append_result *res);

/* Durable acknowledgements (flush.messages=1). The produce handler asks
 * partition_ack_wait after appending: PARTITION_ACK_READY when the
 * records up to last_offset may be acknowledged now, PARTITION_ACK_WAIT
 * when they wait for the flusher's fsync (the handler parks the request;
 * the flusher's wakeup, net_notify_data, makes it ask again), or a Kafka
 * error (KAFKA_STORAGE_ERROR: the log went offline). The worker thread
 * never waits for an fsync itself. */
#define PARTITION_ACK_READY 0
#define PARTITION_ACK_WAIT (-1)
int partition_ack_wait(struct partition *p, int64_t last_offset);

/* The log manager's flush callback (logmgr_flushed_fn; ctx is the
 * partition): raises the high watermark over newly durable records and
 * wakes parked requests. */
void partition_log_flushed(void *ctx, struct plog *l);
/* The log was just opened: the high watermark starts from it. */
void partition_log_ready(struct partition *p);

#endif
