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

/* A feature and the levels a broker supports (its RegisterBrokerRecord). */
struct mi_feature_range {
    char *name;
    int16_t min, max;
};

/* A finalized feature other than metadata.version (FeatureLevelRecord;
 * a level of 0 removes it, as Kafka's FeatureControlManager replays it). */
struct mi_feature {
    char *name;
    int16_t level;
};

/* The dynamic configs of one broker (ConfigRecords of the BROKER resource
 * named name, which is that broker's id as the request spelled it). */
struct mi_broker_configs {
    char *name;
    struct mi_config *configs;  /* sorted by key */
    int32_t n;
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
    struct mi_feature_range *features; /* as registered, in record order */
    int32_t nfeatures;
};

/* A SCRAM credential (UserScramCredentialRecord): one per user and
 * mechanism (Kafka's ScramMechanism id: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512). */
#define MI_SCRAM_KEY_MAX 64
struct mi_scram {
    char *user;
    int8_t mechanism;
    int32_t iterations;
    uint8_t *salt;
    int32_t salt_len;
    uint8_t stored_key[MI_SCRAM_KEY_MAX];
    int32_t stored_key_len;
    uint8_t server_key[MI_SCRAM_KEY_MAX];
    int32_t server_key_len;
};

/* An ACL (AccessControlEntryRecord; Kafka's StandardAcl with its id).
 * Codes are Kafka's: resource_type ResourceType (TOPIC 2 ... USER 7),
 * pattern_type PatternType (LITERAL 3, PREFIXED 4), operation
 * AclOperation (ALL 2, READ 3, ...), permission AclPermissionType
 * (DENY 2, ALLOW 3). Strings owned by the set. */
struct mi_acl {
    kuuid_t id;
    int8_t resource_type;
    int8_t pattern_type;
    int8_t operation;
    int8_t permission;
    char *resource_name;
    int32_t name_len;           /* strlen(resource_name) */
    char *principal;            /* "User:alice", "User:*" */
    char *host;                 /* "*" or an address */
};

/* The cluster's ACLs, sorted by mi_acl_cmp so that the ACLs of one
 * (resource type, pattern type, resource name) are adjacent and found by
 * binary search. Immutable once published and shared by consecutive
 * images until an ACL record changes it (10 000 ACLs are not copied for
 * every topic change). gen is new for every distinct set in this
 * process, so decision caches can tell the set changed. */
struct mi_acls {
    atomic_int refs;
    uint64_t gen;
    struct mi_acl *a;
    int32_t n;
};

/* Order of mi_acls: resource type, pattern type, resource name, then
 * principal, host, operation, permission (strcmp order). */
int mi_acl_cmp(const struct mi_acl *x, const struct mi_acl *y);
/* Index of the first ACL of (type, pattern, name) in s, and how many
 * there are in *count (0: none). s may be NULL. */
int32_t mi_acls_find(const struct mi_acls *s, int8_t type, int8_t pattern, const char *name, size_t len,
                     int32_t *count);

/* Client quotas (ClientQuotaRecord, Kafka's ClientQuotasImage). An
 * entity has a user and/or a client-id, or an ip; each component is
 * absent, named, or the default entity (Kafka's null name). */
enum mi_quota_key {
    MI_QUOTA_PRODUCER_BYTE_RATE,
    MI_QUOTA_CONSUMER_BYTE_RATE,
    MI_QUOTA_REQUEST_PERCENTAGE,
    MI_QUOTA_CONTROLLER_MUTATION_RATE,
    MI_QUOTA_CONNECTION_CREATION_RATE,
    MI_QUOTA_NKEYS
};
enum { MI_QN_ABSENT, MI_QN_NAMED, MI_QN_DEFAULT };
struct mi_quota_name {
    int8_t kind;                /* MI_QN_* */
    char *name;                 /* MI_QN_NAMED only; owned */
};
struct mi_quota {
    struct mi_quota_name user, client_id, ip;
    double values[MI_QUOTA_NKEYS];
    uint32_t set;               /* bit k: values[k] is set */
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
    /* Dynamic broker configs: cluster default (resource "") and every
     * broker's own (resource "<id>"; per_broker sorted by name, owned),
     * each sorted by key. broker_configs is this node's layer: it points
     * into per_broker (NULL, 0 when it has none). */
    struct mi_config *broker_default_configs;
    int32_t nbroker_default_configs;
    struct mi_broker_configs *per_broker;
    int32_t nper_broker;
    const struct mi_config *broker_configs;
    int32_t nbroker_configs;
    /* FeatureLevelRecord "metadata.version"; 0 before the first one. */
    int16_t metadata_version;
    /* The other finalized features, sorted by name (levels >= 1). */
    struct mi_feature *features;
    int32_t nfeatures;
    /* ProducerIdsRecord: the first producer id of the next block the
     * controller hands out; -1 before the first block. */
    int64_t next_producer_id;
    /* SCRAM credentials, sorted by user then mechanism. */
    struct mi_scram *scram;
    int32_t nscram;
    /* ACLs; NULL when none was ever created (generation 0). */
    struct mi_acls *acls;
    /* Client quota entities with at least one key set, in the order
     * they were first set. quota_gen changes (process-wide unique)
     * whenever any quota does, so that per-connection caches of a
     * resolved quota know when to look again. */
    struct mi_quota *quotas;
    int32_t nquotas;
    uint64_t quota_gen;
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
/* The broker's endpoint of listener name (as clients reach it through
 * the listener their request came in on), or NULL. */
const struct mi_endpoint *mi_broker_endpoint(const struct mi_broker *br, const char *listener);
/* Host and port of br for a request that came in on listener: that
 * listener's endpoint, else the broker's first one. */
void mi_broker_address(const struct mi_broker *br, const char *listener, const char **host, int32_t *port);
/* The dynamic configs of broker resource name ("<id>"), or NULL. */
const struct mi_broker_configs *mimage_broker_configs(const struct mimage *m, const char *name);
/* The finalized level of feature name (metadata.version included); 0
 * when it is not finalized. */
int16_t mimage_feature_level(const struct mimage *m, const char *name);
/* The SCRAM credential of user (len bytes) for mechanism, or NULL. */
const struct mi_scram *mimage_scram(const struct mimage *m, const char *user, size_t len, int8_t mechanism);
/* Kafka's names of the quota keys ("producer_byte_rate", ...), and
 * back (-1 when unknown). */
const char *mi_quota_key_name(int key);
int mi_quota_key_of(const char *name, size_t len);
/* The quota of key for a client (user: its principal's name; client_id)
 * as Kafka's DefaultQuotaCallback resolves it: the first entity setting
 * key of user+client-id, user+default client-id, user, default
 * user+client-id, default user+default client-id, default user,
 * client-id, default client-id. *value gets it; *by_user / *by_client
 * whether the entity has a user / client-id component (the clients it
 * covers share one rate per value of those). false: no quota. */
bool mimage_quota_lookup(const struct mimage *m, int key, const char *user, const char *client_id, double *value,
                         bool *by_user, bool *by_client);
/* The connection_creation_rate of ip (text): its own entity's, else the
 * default ip's. false: none. */
bool mimage_ip_quota(const struct mimage *m, const char *ip, double *value);
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
