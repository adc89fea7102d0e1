/* The controller: the metadata state machine on top of the Raft quorum
 * (quorum/quorum.h) over __cluster_metadata-0, whose records are Kafka's
 * metadata record types.
 *
 * Every node (controller, broker or both) has one: it applies committed
 * batches in log order into the next image, publishes it, and brings the
 * partition registry (env.image_published) in line with it. On the
 * active controller (the Raft leader, once it has applied everything
 * committed before its epoch) admin operations are validated against
 * the speculative image (committed + proposed), become one record batch
 * each, and are proposed to Raft; they complete when that batch is
 * committed and applied here, or fail with NOT_CONTROLLER when the
 * leadership is lost first.
 *
 * Threads: the operations below run on any thread under the controller's
 * lock and never wait, unless their op argument is NULL (then they wait
 * for the commit: start-up and tests only, never a worker or the quorum
 * thread). Committed records are applied on the quorum thread. */
#ifndef SAMSA_CONTROLLER_CONTROLLER_H
#define SAMSA_CONTROLLER_CONTROLLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/env.h"
#include "controller/image.h"
#include "proto/kcodec.h"

struct config_alter;
struct controller;
struct quorum;

/* A proposed change, until it is committed and applied (err 0) or lost
 * (NOT_CONTROLLER). Owned by the caller once returned: ctl_op_release.
 * Done is announced by park_notify(park_key_object(op)) (net/park.h). */
struct ctl_op;
/* true when done; *err (may be NULL) gets 0 or the Kafka error. Any thread. */
bool ctl_op_done(struct ctl_op *op, int *err);
void ctl_op_release(struct ctl_op *op);

/* A request this broker forwarded to the active controller. */
struct ctl_fwd;

/* The metadata.version samsa writes on first start (Kafka's IBP_3_9_IV0:
 * PartitionRecord v1 with replica directories, RegisterBrokerRecord v3). */
#define CONTROLLER_METADATA_VERSION 21
/* Kafka's QuorumController.MAX_RECORDS_PER_USER_OP: an operation needing
 * more records fails with POLICY_VIOLATION. */
#define CONTROLLER_MAX_RECORDS_PER_OP 10000

/* Opens (creating if needed) the metadata log, loads the newest snapshot
 * and starts the quorum thread. dir is the log directory that holds
 * "__cluster_metadata-0" (metadata.log.dir or the first of log.dirs), or
 * that partition directory itself. A node that is the only voter (the
 * zero-config single node) waits, bounded, until it leads, has applied
 * the log and (when it is a broker too) is registered and unfenced, so
 * it returns ready, its dynamic broker configs applied to *env->cfg.
 * Other nodes return at once and become ready when the quorum lets them
 * (controller_ready; env->broker_ready, when set, is called).
 * The first active controller writes the metadata.version feature
 * level. env is copied; what it points to must outlive the controller.
 * Returns the controller, owned by the caller until controller_close, or
 * NULL with one line in err. */
struct controller *controller_open(const struct controller_env *env, const char *dir, char *err, size_t errlen);
/* Stops the quorum thread (a leader resigns first), flushes and closes;
 * clean marks a clean shutdown. Readers still holding
 * an image keep it. Broker configs published by dynamic changes are freed;
 * the newest one's contents move into the config *env->cfg pointed to at
 * controller_open (still the caller's to free), and *env->cfg points to
 * it again. Nothing may read *env->cfg concurrently any more. */
void controller_close(struct controller *c, bool clean);

/* Controlled shutdown of this node's broker side (Kafka's
 * BrokerLifecycleManager.beginControlledShutdown): it heartbeats with
 * WantShutDown until the active controller, having moved its
 * leaderships to other ISR members and seen every active broker apply
 * that, answers ShouldShutDown; then it stops heartbeating and done(arg)
 * runs once, on the quorum thread. Bounded by broker.session.timeout.ms
 * (then done runs all the same, with a warning); at once for a node that
 * is not a ready broker. Any thread; a second call is ignored. */
void controller_begin_shutdown(struct controller *c, void (*done)(void *arg), void *arg);

/* The current image, with a reference the caller must release. */
struct mimage *controller_image(struct controller *c);
/* The generation of the current image's ACL set (struct mi_acls; 0:
 * none), without taking the image: decision caches check it. */
uint64_t controller_acl_gen(struct controller *c);

/* This node is the active controller: operations may run here. */
bool controller_is_active(struct controller *c);
/* The quorum's leader (the active controller's node id), -1 unknown. */
int32_t controller_leader_id(struct controller *c);
/* The broker side is registered, caught up and unfenced (a
 * controller-only node: always false). */
bool controller_ready(struct controller *c);
struct quorum *controller_quorum(struct controller *c);

/* Forwarding (brokers send admin requests to the active controller):
 * body is the request body encoded at version (copied). Never NULL. The
 * answer (or the failure: NOT_CONTROLLER when no controller answered in
 * time, REQUEST_TIMED_OUT) is announced by park_notify(park_key_object(f)). */
struct ctl_fwd *controller_forward(struct controller *c, int16_t api_key, int16_t version, const uint8_t *body,
                                   size_t len, int64_t timeout_ms);
/* true when done; then *err is 0 with the response body in *resp, *len
 * (valid until release), or the error. */
bool ctl_fwd_done(struct ctl_fwd *f, int *err, const uint8_t **resp, size_t *len);
void ctl_fwd_release(struct ctl_fwd *f);

/* Broker registration and heartbeats, as the active controller answers
 * them (Kafka's ClusterControlManager / BrokerHeartbeatManager). Each
 * returns a Kafka error code; on 0 with *op set, the answer is final
 * once the op is done: ctl_op_broker_epoch, ctl_op_heartbeat. */
struct broker_registration_request_s;
struct broker_heartbeat_request_s;
int controller_register_broker(struct controller *c, const struct broker_registration_request_s *req,
                               int64_t *broker_epoch, struct ctl_op **op);
int controller_broker_heartbeat(struct controller *c, const struct broker_heartbeat_request_s *req,
                                bool *fenced, bool *caught_up, bool *shut_down, struct ctl_op **op);
int64_t ctl_op_broker_epoch(const struct ctl_op *op);
void ctl_op_heartbeat(const struct ctl_op *op, bool *fenced, bool *caught_up, bool *shut_down);

/* AlterPartition (brokers, to the active controller), as Kafka's
 * ReplicationControlManager.alterPartition answers request version
 * version: returns a top-level error (NOT_CONTROLLER,
 * STALE_BROKER_EPOCH) with nothing in resp, or 0 with resp filled (its
 * arrays from arena a, names and ids pointing into req) and, when some
 * partition changed, *op: the answer holds once that op is done (if it
 * fails, the answer is its error alone, as Kafka fails the whole
 * request). */
struct alter_partition_request_s;
struct alter_partition_response_s;
struct arena;
int controller_alter_partition(struct controller *c, const struct alter_partition_request_s *req, int16_t version,
                               struct alter_partition_response_s *resp, struct arena *a, struct ctl_op **op);

/* Feature levels this node supports (metadata.version 1 to
 * CONTROLLER_METADATA_VERSION; no other feature: see features.c for
 * why). true for a supported feature, with its range; false with 0, 0
 * (Kafka's DISABLED range). */
bool controller_supported_feature(const char *name, int16_t *min, int16_t *max);

/* FeatureUpdate.UpgradeType codes. */
#define CONTROLLER_FEATURE_UPGRADE 1
#define CONTROLLER_FEATURE_SAFE_DOWNGRADE 2
#define CONTROLLER_FEATURE_UNSAFE_DOWNGRADE 3
/* UpdateFeatures, as Kafka's FeatureControlManager.updateFeatures: n
 * features to set to levels[i] with upgrade types types[i], all or
 * nothing. 0 (with *op unless validate_only), or NOT_CONTROLLER, or
 * INVALID_UPDATE_VERSION with the first failing feature's message in
 * msg. */
int controller_update_features(struct controller *c, int32_t n, const kstr_t *names, const int16_t *levels,
                               const int8_t *types, bool validate_only, char *msg, size_t msglen, struct ctl_op **op);

/* Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE. */
#define CONTROLLER_PRODUCER_ID_BLOCK_SIZE 1000
/* AllocateProducerIds, as Kafka's ProducerIdControlManager answers it:
 * 0 with the block [*first, *first + *len) and *op (the block is the
 * broker's once the op is done), or NOT_CONTROLLER, STALE_BROKER_EPOCH
 * (broker_epoch is not the one broker_id registered with),
 * UNKNOWN_SERVER_ERROR (ids exhausted). */
int controller_allocate_producer_ids(struct controller *c, int32_t broker_id, int64_t broker_epoch, int64_t *first,
                                     int32_t *len, struct ctl_op **op);

/* The broker side (controller/pid_manager.h): the next producer id of
 * this broker's blocks (0 with *id), or COORDINATOR_LOAD_IN_PROGRESS
 * (Kafka's answer) when none is at hand; the next block is then being
 * asked for, and its arrival is announced by
 * park_notify(park_key_object(controller_producer_ids_waitable(c))).
 * Ids are never handed out twice across the cluster, and on one broker
 * they increase. Any thread; never blocks. */
int controller_next_producer_id(struct controller *c, int64_t *id);
/* The object whose key announces a block (an identity only: never to be
 * dereferenced; it lives as long as the controller). */
const void *controller_producer_ids_waitable(const struct controller *c);

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
 * validate_only checks without changing anything. NOT_CONTROLLER when
 * this node is not the active controller. op: NULL blocks the calling
 * thread until the commit (ctl_wait_op: not for a network worker);
 * otherwise *op is the proposal in flight, or NULL when nothing was
 * written (validate_only, no change). */

/* As Kafka's ReplicationControlManager.createTopics for one topic. On
 * success *id_out (may be NULL) gets the new topic id (a fresh random id
 * also with validate_only, as Kafka answers). */
int controller_create_topic(struct controller *c, const struct topic_spec *spec, bool validate_only,
                            kuuid_t *id_out, char *msg, size_t msglen, struct ctl_op **op);
/* UNKNOWN_TOPIC_ID for an id not in the image. The partitions' logs are
 * removed by the registry sync. */
int controller_delete_topic(struct controller *c, const kuuid_t *id, char *msg, size_t msglen,
                            struct ctl_op **op);
/* Grows topic to count partitions. nassign < 0: no assignment (placed
 * automatically); nassign >= 0: exactly count - current assignments
 * expected, assign[i] having assign_len[i] broker ids. */
int controller_create_partitions(struct controller *c, kstr_t topic, int32_t count,
                                 int32_t nassign, const int32_t *const *assign,
                                 const int32_t *assign_len, bool validate_only, char *msg,
                                 size_t msglen, struct ctl_op **op);

/* Auto-creation (Metadata with allow_auto_topic_creation, FindCoordinator):
 * creates name as Kafka's AutoTopicCreationManager does, with
 * num.partitions / default.replication.factor, or for __consumer_offsets
 * and __transaction_state with their coordinator's partition count,
 * replication factor and topic configs. A topic that exists (created
 * concurrently) is success. On a node that is not the active controller
 * the creation is forwarded (CreateTopics) and not waited for; so it is
 * when op is not NULL and the caller does not keep it. */
int controller_auto_create_topic(struct controller *c, kstr_t name, char *msg, size_t msglen,
                                 struct ctl_op **op);

/* Internal topics (__consumer_offsets, __transaction_state) are created
 * with offsets.topic.replication.factor / transaction.state.log.*
 * (Kafka's defaults: 3 replicas, __transaction_state min ISR 2); while
 * fewer brokers are registered and unfenced than that factor the
 * creation is refused (INVALID_REPLICATION_FACTOR; FindCoordinator
 * answers COORDINATOR_NOT_AVAILABLE), never made with fewer replicas.
 *
 * samsa's one deviation from Kafka: a node that knows it is alone uses
 * at most 1 for both, so that the zero-config single node serves groups
 * (Kafka would refuse forever). Alone means all of: controller.quorum.
 * voters names exactly one voter and it is this node; this node has the
 * broker role too (combined mode); the metadata image registers exactly
 * one broker (fenced or not) and it is this node. A split layout (the
 * lone controller is no broker), several voters, a dynamic quorum
 * (controller.quorum.bootstrap.servers) or a second registered broker
 * is never alone. Caveat: a lone combined voter that broker-only nodes
 * join later is alone until the first of them registers. */
struct samsa_config;
bool controller_node_alone(const struct samsa_config *cfg, const struct mimage *img);

/* ConfigResource types used by ConfigRecord. */
#define CONTROLLER_RESOURCE_TOPIC 2
#define CONTROLLER_RESOURCE_BROKER 4

/* Writes one ConfigRecord per change, all in one batch. values[i].len -1
 * removes keys[i]. TOPIC: the topic must exist (UNKNOWN_TOPIC_OR_PARTITION)
 * and the resulting overrides must pass topic_config_validate_all
 * (INVALID_CONFIG). BROKER: resource "" (cluster default) or this node's
 * id; values are not checked and the config in effect (*env.cfg) is not
 * changed here (the topics' effective configs are recomputed from it as
 * it is): use
 * controller_alter_broker_configs, which does both, for broker changes. */
int controller_alter_configs(struct controller *c, int8_t resource_type, kstr_t resource_name,
                             int32_t n, const kstr_t *keys, const kstr_t *values,
                             bool validate_only, char *msg, size_t msglen, struct ctl_op **op);

/* A dynamic broker config change (AlterConfigs / IncrementalAlterConfigs
 * on a BROKER resource whose name the caller checked: "" for the cluster
 * default, else this node's id), all or nothing under the controller's
 * lock: applies the changes to a copy of *env.cfg with config_alter_broker
 * (its rules, error codes and messages) and writes one ConfigRecord per
 * key (the value the layer now holds, null when removed). Every node
 * applying those records publishes a new *env.cfg by an atomic swap and
 * rebuilds its image, so every topic's effective config follows a
 * changed broker default. replace gives the
 * legacy AlterConfigs semantics: keys of that layer not named in changes
 * are removed. validate_only checks without changing anything. Returns 0
 * or the Kafka error code with its message in msg. */
int controller_alter_broker_configs(struct controller *c, bool cluster_default, bool replace,
                                    const struct config_alter *changes, size_t n, bool validate_only,
                                    char *msg, size_t msglen, struct ctl_op **op);

/* The same check as controller_alter_broker_configs with validate_only,
 * on any node (Kafka's ConfigAdminManager.preprocess on the broker that
 * received the request): against *env.cfg and the committed image.
 * With next, on success *next is the config the changes make (the
 * caller owns it, config_free), for the checks that read files
 * (config_reconfig_check) off the worker. */
int controller_check_broker_configs(struct controller *c, bool cluster_default, bool replace,
                                    const struct config_alter *changes, size_t n, struct samsa_config **next,
                                    char *msg, size_t msglen);

/* A dynamic config change of the BROKER resource name (a broker id, as
 * forwarded by that broker after it checked the change against its own
 * config), as Kafka's controller does it (ConfigurationControlManager):
 * the name must parse as a non-negative id (INVALID_REQUEST) of a
 * registered broker or a voter (BROKER_ID_NOT_REGISTERED); values are
 * stored as given (APPEND/SUBTRACT resolved on the stored value or the
 * default, LIST keys only: INVALID_CONFIG), one ConfigRecord per key,
 * the legacy API (replace) removing the keys it does not name. The
 * named broker applies them to its config when it applies the records;
 * the image and snapshots keep every broker's layer. */
int controller_alter_broker_resource(struct controller *c, kstr_t name, bool replace, const struct config_alter *changes,
                                     size_t n, bool validate_only, char *msg, size_t msglen, struct ctl_op **op);

/* AlterClientQuotas (controller/quotas.c), as Kafka's
 * ClientQuotaControlManager.alterClientQuotas: q's entries are checked
 * (errs[i] 0 or INVALID_REQUEST with msgs[i], in arena a; both arrays
 * of q->entries.n, the caller's) and the changes of the valid ones
 * proposed as one batch of ClientQuotaRecords (*op: wait for it; NULL
 * when nothing changes or q->validate_only). Returns 0 or
 * NOT_CONTROLLER. */
struct alter_client_quotas_request_s;
int controller_alter_client_quotas(struct controller *c, const struct alter_client_quotas_request_s *q,
                                   struct arena *a, int16_t *errs, const char **msgs, struct ctl_op **op);
/* AlterUserScramCredentials (controller/scram.c), as Kafka's
 * ScramControlManager.alterCredentials: n changes (deletions first, then
 * upsertions, as the request lists them); results get one entry per
 * distinct user in order of first appearance (room for n), each with its
 * error code and Kafka's message (static). The valid changes become one
 * batch: RemoveUserScramCredentialRecord / UserScramCredentialRecord
 * (stored and server key computed from the salted password). Returns
 * NOT_CONTROLLER, or 0 with *op when something was written. */
struct controller_scram_change {
    kstr_t user;
    int8_t mechanism;
    bool is_delete;
    int32_t iterations;
    kbytes_t salt, salted_password;
};
struct controller_scram_result {
    kstr_t user;
    int16_t err;
    const char *msg;
    int32_t pending; /* private */
};
int controller_alter_scram_credentials(struct controller *c, const struct controller_scram_change *ch, int32_t n,
                                       struct controller_scram_result *res, int32_t *nres, struct ctl_op **op);
/* "SCRAM-SHA-256" / "SCRAM-SHA-512" for Kafka's ScramMechanism id; NULL else. */
const char *controller_scram_mechanism_name(int8_t mechanism);
/* RFC 5802: StoredKey = H(HMAC(SaltedPassword, "Client Key")), ServerKey
 * = HMAC(SaltedPassword, "Server Key"); each key_len bytes (room for 64). */
int controller_scram_keys(int8_t mechanism, const uint8_t *salted, size_t salted_len, uint8_t *stored_key,
                          uint8_t *server_key, size_t *key_len);

/* ACLs (controller/acls.c). Codes are Kafka's (ResourceType,
 * PatternType, AclOperation, AclPermissionType). */
#define ACL_CODE_ANY 1
#define ACL_PATTERN_MATCH 2
#define ACL_PATTERN_LITERAL 3
#define ACL_PATTERN_PREFIXED 4
#define ACL_TYPE_MIN 2            /* TOPIC */
#define ACL_TYPE_CLUSTER 4
#define ACL_TYPE_MAX 7            /* USER */
#define ACL_OP_MAX 14             /* DESCRIBE_TOKENS */
#define ACL_PERMISSION_DENY 2
#define ACL_PERMISSION_ALLOW 3
/* A binding (CreateAcls) or a binding filter (DescribeAcls, DeleteAcls:
 * ANY codes and null strings match everything); strings borrowed. */
struct controller_acl {
    int8_t resource_type;
    int8_t pattern_type;
    int8_t operation;
    int8_t permission;
    kstr_t resource_name;
    kstr_t principal;
    kstr_t host;
};
/* Kafka's AclBindingFilter.matches. */
bool controller_acl_filter_match(const struct controller_acl *filter, const struct mi_acl *acl);
/* Kafka's validateFilter: 0, or INVALID_REQUEST with a static *msg. */
int16_t controller_acl_filter_check(const struct controller_acl *filter, const char **msg);
/* CreateAcls, as AclControlManager.createAcls after AclApis' checks: one
 * error code per binding in errs[0..n) and its message in msgs (NULL, or
 * allocated from ar); an ACL that exists already succeeds without a
 * record. The new ACLs become one batch of AccessControlEntryRecords
 * with random ids. Returns NOT_CONTROLLER, or 0 with *op when something
 * was written. */
int controller_create_acls(struct controller *c, const struct controller_acl *bindings, int32_t n, int16_t *errs,
                           char **msgs, struct arena *ar, struct ctl_op **op);
/* DeleteAcls, as AclControlManager.deleteAcls: per filter its error
 * (invalid filter) or the ACLs it matched (copies from ar); every matched
 * ACL is removed once (RemoveAccessControlEntryRecord), in one batch.
 * Returns NOT_CONTROLLER, or 0 with *op when something was written. */
struct controller_acl_deleted {
    int16_t err;
    const char *msg;            /* static */
    struct mi_acl *acls;        /* from ar */
    int32_t n;
};
int controller_delete_acls(struct controller *c, const struct controller_acl *filters, int32_t n,
                           struct controller_acl_deleted *res, struct arena *ar, struct ctl_op **op);

/* Kafka's Topic.validate: 0, or INVALID_TOPIC_EXCEPTION with Kafka's
 * message ("Topic name is invalid: ...") in msg. */
int controller_check_topic_name(kstr_t name, char *msg, size_t msglen);

#endif
