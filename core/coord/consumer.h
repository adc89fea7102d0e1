/* A consumer group of the KIP-848 protocol (ConsumerGroupHeartbeat): the
 * state machine of Kafka's ConsumerGroup, ConsumerGroupMember and
 * CurrentAssignmentBuilder and the consumer half of its
 * GroupMetadataManager.
 *
 * The group has an epoch (bumped when its members, their subscriptions
 * or the subscribed topics' metadata change), a target assignment
 * computed by a server-side assignor at that epoch (the assignment
 * epoch), and each member reconciles towards its target one heartbeat
 * at a time: it first revokes what the target took away (it stays in
 * its epoch, UNREVOKED_PARTITIONS), then moves to the assignment epoch
 * and is given what is free; partitions still owned by another member
 * are withheld (UNRELEASED_PARTITIONS) until their owner revoked them.
 *
 * Like group.c: no I/O and no locking. The coordinator passes the clock,
 * the topic metadata, the assignors and a record sink in struct ccg_env
 * (tests/unit/coord_test.c uses fakes). A struct ccgroup hangs off the
 * struct cgroup of the same id (cgroup.cc), which keeps its offsets. */
#ifndef SAMSA_COORD_CONSUMER_H
#define SAMSA_COORD_CONSUMER_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/kcodec.h"
#include "samsa/assignor.h"
#include "util/arena.h"

struct cgroup;

/* Kafka's MemberState values, as stored in
 * ConsumerGroupCurrentMemberAssignmentValue.State. */
#define CCG_STABLE 0
#define CCG_UNREVOKED_PARTITIONS 1
#define CCG_UNRELEASED_PARTITIONS 2
#define CCG_UNKNOWN 127

/* Group states (ConsumerGroup.ConsumerGroupState). */
enum ccg_state {
    CCG_G_EMPTY = 0,
    CCG_G_ASSIGNING,
    CCG_G_RECONCILING,
    CCG_G_STABLE,
};
const char *ccg_state_name(enum ccg_state s);

/* Epochs a heartbeat carries. */
#define CCG_JOIN_EPOCH 0
#define CCG_LEAVE_EPOCH (-1)
#define CCG_STATIC_LEAVE_EPOCH (-2)

/* A topic partition; sets are kept sorted (topic id bytes, partition). */
struct ctp {
    kuuid_t topic;
    int32_t part;
};

struct ctp_set {
    struct ctp *v;
    int32_t n, cap;
};

void ctp_set_free(struct ctp_set *s);
void ctp_set_add(struct ctp_set *s, const kuuid_t *topic, int32_t part); /* keeps it sorted, no duplicates */
bool ctp_set_has(const struct ctp_set *s, const kuuid_t *topic, int32_t part);
bool ctp_set_eq(const struct ctp_set *a, const struct ctp_set *b);
void ctp_set_copy(struct ctp_set *dst, const struct ctp_set *src);

struct ccg_member {
    char *id;
    char *instance_id; /* NULL: dynamic */
    char *rack_id;
    char *client_id, *client_host;
    char *assignor; /* ServerAssignor, NULL: none */
    char *regex;    /* SubscribedTopicRegex, NULL: none */
    char **topics;  /* subscribed names, sorted */
    int32_t ntopics;
    /* The topics the regex matched at the last metadata refresh, sorted;
     * part of the member's subscription. */
    char **rtopics;
    int32_t nrtopics;
    void *re; /* the compiled regex (regex_t), NULL: none */
    int64_t re_version; /* ccg_env.topics_version rtopics were resolved at, -1: never */
    int32_t rebalance_timeout_ms;
    int32_t epoch, prev_epoch;
    int8_t state;
    struct ctp_set assigned, revoking; /* current assignment */
    struct ctp_set target;             /* target assignment */
    int64_t session_deadline;          /* monotonic ms, CG_NO_DEADLINE none */
    int64_t revoke_deadline;           /* rebalance timeout while revoking */
    bool has_metadata;                 /* loading: its member record was seen */
};

/* A subscribed topic as the group last saw it (ConsumerGroupPartitionMetadata). */
struct ccg_topic {
    kuuid_t id;
    char *name;
    int32_t nparts;
};

struct ccgroup {
    int32_t epoch;        /* group epoch */
    int32_t assign_epoch; /* target assignment epoch */
    struct ccg_member **members; /* join order */
    int32_t nmembers, capmembers;
    struct ccg_topic *meta; /* sorted by name */
    int32_t nmeta;
    char *last_assignor; /* the assignor that computed the target */
    bool has_records;    /* records of it are in the log: deletion writes tombstones */
};

/* Record kinds the group asks the coordinator to write (Kafka's
 * GroupCoordinatorRecordHelpers), in the order it asks. */
enum ccg_rec {
    CCG_REC_METADATA = 3,        /* ConsumerGroupMetadata: group epoch */
    CCG_REC_PARTITION_META = 4,  /* ConsumerGroupPartitionMetadata */
    CCG_REC_MEMBER = 5,          /* ConsumerGroupMemberMetadata */
    CCG_REC_TARGET_META = 6,     /* ConsumerGroupTargetAssignmentMetadata */
    CCG_REC_TARGET_MEMBER = 7,   /* ConsumerGroupTargetAssignmentMember */
    CCG_REC_CURRENT = 8,         /* ConsumerGroupCurrentMemberAssignment */
};

struct ccg_env {
    int64_t now; /* monotonic ms */
    int32_t session_timeout_ms;
    int32_t heartbeat_interval_ms;
    int32_t max_size; /* group.consumer.max.size */
    /* The assignor named name (NULL: the default one), or NULL. */
    const samsa_assignor_t *(*assignor)(void *ctx, const char *name, void **state);
    /* A topic by name: true with its id and partition count. */
    bool (*topic)(void *ctx, kstr_t name, kuuid_t *id, int32_t *nparts);
    /* Calls fn with the name of every topic (regex subscriptions). */
    void (*each_topic)(void *ctx, void (*fn)(void *arg, const char *name), void *arg);
    /* The distinct racks (broker.rack) of the brokers holding a replica
     * of the partition: up to cap names into racks (borrowed until the
     * metadata image changes), returns how many there are. May be NULL
     * (no rack information). */
    size_t (*racks)(void *ctx, const kuuid_t *topic, int32_t partition, const char **racks, size_t cap);
    /* Changes whenever the set of topics may have changed (the metadata
     * offset); a regex is resolved again only then. -1: always. */
    int64_t topics_version;
    void *ctx;
    /* A record of g to write: m is the member for the member kinds
     * (member_id when m is gone: tombstones), tombstone a null value. */
    void (*emit)(struct ccg_env *e, const struct cgroup *g, enum ccg_rec kind, const struct ccg_member *m,
                 const char *member_id, bool tombstone);
    bool timers_changed;
};

struct ccgroup *ccg_new(void);
void ccg_free(struct ccgroup *cc);
enum ccg_state ccg_state(const struct ccgroup *cc);
struct ccg_member *ccg_member_find(const struct ccgroup *cc, kstr_t member_id);
/* The member's ... */
int64_t ccg_next_deadline(const struct ccgroup *cc);
bool ccg_subscribed_to(const struct ccgroup *cc, kstr_t topic);

/* One ConsumerGroupHeartbeat. */
struct ccg_hb_req {
    int16_t version;
    kstr_t member_id; /* v0 epoch 0: empty, the coordinator makes one */
    int32_t epoch;
    kstr_t instance_id, rack_id; /* len -1: null */
    int32_t rebalance_timeout_ms; /* -1: unchanged */
    bool has_topics;              /* SubscribedTopicNames not null */
    int32_t ntopics;
    const kstr_t *topics;
    kstr_t regex;    /* len -1: null */
    kstr_t assignor; /* len -1: null */
    bool has_owned;  /* TopicPartitions not null */
    int32_t nowned;
    const kuuid_t *owned_topics;
    const int32_t *const *owned_parts;
    const int32_t *owned_nparts;
    kstr_t client_id, client_host;
};

struct ccg_hb_resp {
    int16_t error;
    const char *message; /* static, NULL: none */
    kstr_t member_id;    /* in the arena */
    int32_t epoch;
    int32_t heartbeat_interval_ms;
    bool has_assignment;
    struct ctp *assignment; /* in the arena, sorted */
    int32_t nassignment;
};

/* Kafka 4.0's error for a SubscribedTopicRegex that does not compile. */
#define KERR_INVALID_REGULAR_EXPRESSION_CODE 128

/* Checks the request alone (Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid):
 * 0 or INVALID_REQUEST / UNSUPPORTED_ASSIGNOR / INVALID_REGULAR_EXPRESSION
 * with a message. Regular expressions are POSIX extended ones matched
 * against whole topic names (Kafka: RE2/J), internal topics excepted. */
int16_t ccg_validate(const struct ccg_hb_req *rq, struct ccg_env *e, const char **message);

/* The heartbeat on g (g->cc set; the group is created by the caller for
 * epoch 0). */
void ccg_heartbeat(struct ccg_env *e, struct cgroup *g, const struct ccg_hb_req *rq, struct arena *a,
                   struct ccg_hb_resp *out);

/* Member session and revocation timers due at e->now. */
void ccg_tick(struct ccg_env *e, struct cgroup *g);

/* Offset commits and fetches of a member (Kafka's
 * ConsumerGroup.validateOffsetCommit / validateOffsetFetch): 0,
 * UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH or UNSUPPORTED_VERSION. */
int16_t ccg_validate_commit(const struct ccgroup *cc, kstr_t member_id, int32_t epoch, int16_t version);
int16_t ccg_validate_fetch(const struct ccgroup *cc, kstr_t member_id, int32_t epoch);

/* Writes tombstones of every record of the group (deletion). */
void ccg_emit_tombstones(struct ccg_env *e, const struct cgroup *g);

/* ---- loading ---- */
struct ccg_member *ccg_member_get_or_add(struct ccgroup *cc, kstr_t member_id);
void ccg_member_remove(struct ccgroup *cc, kstr_t member_id);
void ccg_member_set_topics(struct ccg_member *m, int32_t n, const kstr_t *topics);
/* Sets (NULL: clears) the member's regex; false when it does not compile. */
bool ccg_member_set_regex(struct ccg_member *m, const char *regex);
/* After loading: sessions start now, members without metadata go. */
void ccg_loaded(struct ccg_env *e, struct ccgroup *cc);
char *ccg_strdup(kstr_t s); /* NULL for a null string */

#endif
