/* The metadata image: an immutable snapshot of the cluster metadata
 * (topics, partitions, brokers, configs) built by replaying the metadata
 * log. Request handlers read it without locks: they acquire the current
 * image, use it, and release it. The controller publishes a new image
 * after each change; old ones die with their last reader.
 *
 * Consecutive images share the topics a change did not touch (each
 * mi_topic is refcounted and never modified once published), so a change
 * costs O(number of topics) pointer copies, not a deep copy. */
#ifndef SAMSA_CONTROLLER_IMAGE_H
#define SAMSA_CONTROLLER_IMAGE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "proto/kcodec.h"
#include "util/hmap.h"

struct topic_config;

struct mi_partition {
    int32_t index;
    int32_t leader;             /* node id; -1 when none */
    int32_t leader_epoch;
    int32_t partition_epoch;
    int32_t *replicas;
    int32_t nreplicas;
    int32_t *isr;
    int32_t nisr;
    /* Log directory of each replica (PartitionRecord v1+), nreplicas
     * entries; NULL when the record carried none. */
    kuuid_t *directories;
    int8_t leader_recovery_state;
};

/* A config key/value pair set on a resource (ConfigRecord). */
struct mi_config {
    char *key;
    char *value;
};

struct mi_topic {
    char *name;                 /* NUL-terminated */
    int32_t name_len;
    kuuid_t id;
    bool internal;
    int32_t npartitions;
    struct mi_partition *partitions;   /* indexed by partition number */
    struct mi_config *configs;         /* topic overrides, sorted by key */
    int32_t nconfigs;
    /* Effective typed topic config: overrides over broker defaults. */
    const struct topic_config *cfg;
    /* Private to image.c: the images sharing this topic, and whether the
     * image under construction owns it (may modify it in place). */
    atomic_int refs;
    bool draft;
    bool cfg_dirty;
};

/* One listener of a registered broker (RegisterBrokerRecord endpoint). */
struct mi_endpoint {
    char *name;                 /* listener name, e.g. "PLAINTEXT" */
    char *host;
    int32_t port;
    int16_t security_protocol;  /* Kafka's SecurityProtocol id */
};

struct mi_broker {
    int32_t id;
    char *host;                 /* the first endpoint's host and port */
    int32_t port;
    char *rack;                 /* NULL when unset */
    bool fenced;
    bool in_controlled_shutdown;
    kuuid_t incarnation_id;
    int64_t epoch;              /* offset of its RegisterBrokerRecord */
    struct mi_endpoint *endpoints;
    int32_t nendpoints;
    kuuid_t *log_dirs;          /* directory ids (RegisterBrokerRecord v3) */
    int32_t nlog_dirs;
};

struct mimage {
    atomic_int refs;
    int64_t offset;             /* last metadata log offset applied; -1 empty */
    struct mi_topic **topics;   /* sorted by name */
    int32_t ntopics;
    struct hmap by_name;        /* name -> struct mi_topic* */
    struct hmap by_id;          /* 16-byte id -> struct mi_topic* */
    struct mi_broker *brokers;  /* sorted by id */
    int32_t nbrokers;
    int32_t controller_id;
    /* Dynamic broker configs: cluster default (resource "") and this
     * node's own (resource "<node.id>"), each sorted by key. */
    struct mi_config *broker_default_configs;
    int32_t nbroker_default_configs;
    struct mi_config *broker_configs;
    int32_t nbroker_configs;
    /* FeatureLevelRecord "metadata.version"; 0 before the first one. */
    int16_t metadata_version;
};

/* Lookups; NULL when absent. Valid while the image is held. */
const struct mi_topic *mimage_topic(const struct mimage *m, kstr_t name);
const struct mi_topic *mimage_topic_by_id(const struct mimage *m, const kuuid_t *id);
const struct mi_broker *mimage_broker(const struct mimage *m, int32_t id);
/* Registered and not fenced: may lead and serve clients. */
bool mimage_broker_alive(const struct mimage *m, int32_t id);
static inline const struct mi_partition *mi_topic_partition(const struct mi_topic *t, int32_t p)
{
    return p >= 0 && p < t->npartitions ? &t->partitions[p] : NULL;
}
/* The topic's override for key, or NULL (the broker default applies). */
const char *mi_topic_config(const struct mi_topic *t, const char *key);
/* Kafka's Topic.isInternal: __consumer_offsets, __transaction_state,
 * __share_group_state. */
bool mi_topic_name_is_internal(const char *name, size_t len);

/* Takes one more reference on m. */
struct mimage *mimage_ref(struct mimage *m);
/* Drops a reference; the last one frees the image. NULL is ignored. */
void mimage_release(struct mimage *m);

#endif
