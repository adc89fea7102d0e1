/* SPDX-License-Identifier: Apache-2.0
 *
 * Capability kind SAMSA_CAP_ASSIGNOR: a server-side partition assignor
 * for consumer groups of the KIP-848 protocol, mirroring Kafka's
 * org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor
 * (assign(GroupSpec, SubscribedTopicDescriber) -> GroupAssignment).
 * Clients name it in ConsumerGroupHeartbeat's ServerAssignor field.
 *
 * Declared in ABI 1.0. The group coordinator (core/coord/consumer.c)
 * calls it when a consumer group's epoch moves past its target
 * assignment's: on a worker or the coordinator thread, under the lock of
 * the group's __consumer_offsets shard, so it must be quick. The host
 * passes each member's current target assignment as `current`; its
 * builder refuses (SAMSA_EINVAL) a partition given a second time, and
 * an assign that fails keeps the previous target assignment.
 */
#ifndef SAMSA_ASSIGNOR_H
#define SAMSA_ASSIGNOR_H

#include "samsa/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct samsa_uuid {
    uint8_t b[16];
} samsa_uuid_t;

typedef struct samsa_topic_partitions {
    samsa_uuid_t topic_id;
    const int32_t *partitions;
    size_t n_partitions;
} samsa_topic_partitions_t;

typedef struct samsa_group_member {
    const char *member_id;
    const char *instance_id;  /* static membership, or NULL */
    const char *rack_id;      /* or NULL */
    const samsa_uuid_t *subscribed_topic_ids;
    size_t n_subscribed;
    /* What the member owns now (stickiness input): its current target
     * assignment, topics and each topic's partitions listed in the
     * order Kafka's group coordinator iterates a member's assignment (a
     * java.util.HashMap of topic ids to HashSets of partitions), which
     * the tie-breaks of Kafka's assignors follow. */
    const samsa_topic_partitions_t *current;
    size_t n_current;
} samsa_group_member_t;

#define SAMSA_SUBSCRIPTION_HOMOGENEOUS 0   /* every member, same topics */
#define SAMSA_SUBSCRIPTION_HETEROGENEOUS 1

/* The group, borrowed for the call. */
typedef struct samsa_group_spec {
    uint32_t struct_size;
    const char *group_id;
    int subscription_type;
    const samsa_group_member_t *members;
    size_t n_members;
} samsa_group_spec_t;

/* Metadata of the subscribed topics, answered by the host. */
typedef struct samsa_topic_describer {
    uint32_t struct_size;
    void *ctx;
    /* Number of partitions, or -1 for a topic that is not subscribed. */
    int32_t (*num_partitions)(void *ctx, const samsa_uuid_t *topic_id);
    /* Racks of the partition's replicas (the distinct broker.rack of
     * the brokers holding one, from the cluster metadata; brokers
     * without broker.rack are left out): fills up to cap names and
     * returns how many there are. Names are valid during assign. */
    size_t (*racks_for_partition)(void *ctx, const samsa_uuid_t *topic_id, int32_t partition,
                                  const char **racks, size_t cap);
} samsa_topic_describer_t;

/* Where the result goes; every partition of every subscribed topic should
 * be given to at most one member. */
typedef struct samsa_assignment_builder {
    uint32_t struct_size;
    void *ctx;
    /* member_index into spec->members. Returns SAMSA_OK or SAMSA_EINVAL
     * (unknown member, topic or partition). */
    int (*assign)(void *ctx, size_t member_index, const samsa_uuid_t *topic_id, int32_t partition);
} samsa_assignment_builder_t;

typedef struct samsa_assignor {
    /* hdr.kind = SAMSA_CAP_ASSIGNOR; hdr.name = the name clients use,
     * e.g. "uniform", "range". */
    samsa_cap_hdr_t hdr;

    /* ---- ABI 1.0 ---- */

    /* Computes a full assignment. Deterministic for the same input.
     * Returns SAMSA_OK, or an error with errstr (the coordinator keeps
     * the previous assignment and logs it).
     * @locality the group coordinator's thread; must not block */
    int (*assign)(void *cap_state, const samsa_group_spec_t *group,
                  const samsa_topic_describer_t *topics, const samsa_assignment_builder_t *out,
                  char *errstr, size_t errlen);

    /* ---- ABI 1.1+: append here ---- */
} samsa_assignor_t;

#define SAMSA_ASSIGNOR_SIZE_1_0 (offsetof(samsa_assignor_t, assign) + sizeof(void *))

#ifdef __cplusplus
}
#endif

#endif /* SAMSA_ASSIGNOR_H */
