/* The controller: owns the metadata log (__cluster_metadata-0, records in
 * Kafka's metadata record types), applies admin operations by appending
 * records and replaying them into a new image.
 *
 * In this single-node version the operations run synchronously on the
 * calling worker under the controller's lock; the metadata quorum work
 * replaces the local log with a Raft-replicated one and makes them
 * asynchronous, without changing what the records say.
 *
 * Every change is one record batch, appended and fsync'ed before the
 * operation returns; then the new image is published and the partition
 * registry (b->partitions, when set) is brought in line with it. */
#ifndef SAMSA_CONTROLLER_CONTROLLER_H
#define SAMSA_CONTROLLER_CONTROLLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/image.h"
#include "proto/kcodec.h"

struct broker;
struct config_alter;
struct controller;

/* The metadata.version samsa writes on first start (Kafka's IBP_3_9_IV0:
 * PartitionRecord v1 with replica directories, RegisterBrokerRecord v3). */
#define CONTROLLER_METADATA_VERSION 21
/* Kafka's QuorumController.MAX_RECORDS_PER_USER_OP: an operation needing
 * more records fails with POLICY_VIOLATION. */
#define CONTROLLER_MAX_RECORDS_PER_OP 10000

/* Opens (creating if needed) the metadata log and replays it. dir is the
 * log directory that holds "__cluster_metadata-0" (metadata.log.dir or
 * the first of log.dirs), or that partition directory itself. Dynamic
 * broker configs found in the log are applied to b->cfg (start-up is
 * single-threaded). On first start it writes the metadata.version
 * feature level; whenever this node's registration (advertised
 * listeners, rack, log directory ids) differs from the log's, it writes a
 * RegisterBrokerRecord. When b->partitions is set, the registry is
 * synced to the replayed image before returning. b must outlive the
 * controller. Returns the controller, owned by the caller until
 * controller_close, or NULL with one line in err on failure. */
struct controller *controller_open(struct broker *b, const char *dir, char *err, size_t errlen);
/* Flushes and closes; clean marks a clean shutdown. Readers still holding
 * an image keep it. Broker configs published by dynamic changes are freed;
 * the newest one's contents move into the config b->cfg pointed to at
 * controller_open (still the caller's to free), and b->cfg points to it
 * again. Nothing may read b->cfg concurrently any more. */
void controller_close(struct controller *c, bool clean);

/* The current image, with a reference the caller must release. */
struct mimage *controller_image(struct controller *c);

/* A topic to create (CreateTopics or auto-creation). All pointers are the
 * caller's and only read during the call. */
struct topic_spec {
    kstr_t name;
    int32_t num_partitions;       /* -1: num.partitions */
    int16_t replication_factor;   /* -1: default.replication.factor */
    /* Explicit assignment: nassign partitions, each with nreplicas ids;
     * nassign == 0 means none. */
    int32_t nassign;
    const int32_t *const *assign;
    const int32_t *assign_len;
    int32_t nconfigs;
    const kstr_t *config_keys;
    const kstr_t *config_values;  /* len -1: null (Kafka KRaft: INVALID_CONFIG) */
    /* Partition index of each assignment (CreateTopics' PartitionIndex);
     * NULL means 0, 1, ... in order. */
    const int32_t *assign_index;
};

/* Each returns a Kafka error code (0 = ok) and, on error, Kafka's message
 * for it in msg (always NUL-terminated; "" where Kafka sends none).
 * validate_only checks without changing anything. */

/* As Kafka's ReplicationControlManager.createTopics for one topic. On
 * success *id_out (may be NULL) gets the new topic id (a fresh random id
 * also with validate_only, as Kafka answers). */
int controller_create_topic(struct controller *c, const struct topic_spec *spec, bool validate_only,
                            kuuid_t *id_out, char *msg, size_t msglen);
/* UNKNOWN_TOPIC_ID for an id not in the image. The partitions' logs are
 * removed by the registry sync. */
int controller_delete_topic(struct controller *c, const kuuid_t *id, char *msg, size_t msglen);
/* Grows topic to count partitions. nassign < 0: no assignment (placed
 * automatically); nassign >= 0: exactly count - current assignments
 * expected, assign[i] having assign_len[i] broker ids. */
int controller_create_partitions(struct controller *c, kstr_t topic, int32_t count,
                                 int32_t nassign, const int32_t *const *assign,
                                 const int32_t *assign_len, bool validate_only, char *msg,
                                 size_t msglen);

/* Auto-creation (Metadata with allow_auto_topic_creation, FindCoordinator):
 * creates name as Kafka's AutoTopicCreationManager does, with
 * num.partitions / default.replication.factor, or for __consumer_offsets
 * and __transaction_state with their coordinator's partition count,
 * replication factor and topic configs. A topic that exists (created
 * concurrently) is success. */
int controller_auto_create_topic(struct controller *c, kstr_t name, char *msg, size_t msglen);

/* ConfigResource types used by ConfigRecord. */
#define CONTROLLER_RESOURCE_TOPIC 2
#define CONTROLLER_RESOURCE_BROKER 4

/* Writes one ConfigRecord per change, all in one batch. values[i].len -1
 * removes keys[i]. TOPIC: the topic must exist (UNKNOWN_TOPIC_OR_PARTITION)
 * and the resulting overrides must pass topic_config_validate_all
 * (INVALID_CONFIG). BROKER: resource "" (cluster default) or this node's
 * id; values are not checked and b->cfg is not changed here (the topics'
 * effective configs are recomputed from b->cfg as it is): use
 * controller_alter_broker_configs, which does both, for broker changes. */
int controller_alter_configs(struct controller *c, int8_t resource_type, kstr_t resource_name,
                             int32_t n, const kstr_t *keys, const kstr_t *values,
                             bool validate_only, char *msg, size_t msglen);

/* A dynamic broker config change (AlterConfigs / IncrementalAlterConfigs
 * on a BROKER resource whose name the caller checked: "" for the cluster
 * default, else this node's id), all or nothing under the controller's
 * lock: applies the changes to a copy of b->cfg with config_alter_broker
 * (its rules, error codes and messages), writes one ConfigRecord per key
 * (the value the layer now holds, null when removed), publishes the copy
 * as b->cfg by an atomic swap and rebuilds the image, so every topic's
 * effective config follows a changed broker default. replace gives the
 * legacy AlterConfigs semantics: keys of that layer not named in changes
 * are removed. validate_only checks without changing anything. Returns 0
 * or the Kafka error code with its message in msg. */
int controller_alter_broker_configs(struct controller *c, bool cluster_default, bool replace,
                                    const struct config_alter *changes, size_t n, bool validate_only,
                                    char *msg, size_t msglen);

/* Kafka's Topic.validate: 0, or INVALID_TOPIC_EXCEPTION with Kafka's
 * message ("Topic name is invalid: ...") in msg. */
int controller_check_topic_name(kstr_t name, char *msg, size_t msglen);

#endif
