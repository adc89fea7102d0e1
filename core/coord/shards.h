/* What the group and transaction coordinators share about their shards:
 * one shard per partition of their internal topic (__consumer_offsets,
 * __transaction_state), created on demand, loaded while this node leads
 * the partition and unloaded when the leadership goes (Kafka's
 * CoordinatorRuntime / TransactionStateManager partition loading).
 *
 * A coordinator's shard struct starts with CSHARD_HEAD, so its own code
 * reads s->lock, s->state, ... and this module works on &s->base. */
#ifndef SAMSA_COORD_SHARDS_H
#define SAMSA_COORD_SHARDS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "proto/kcodec.h"

struct controller;
struct partition;

enum cshard_state {
    CSHARD_UNLOADED = 0,
    CSHARD_LOADING,
    CSHARD_ACTIVE,
};

#define CSHARD_FIELDS                                                                                                  \
    int32_t index;          /* the partition */                                                                        \
    pthread_mutex_t lock;   /* everything of the shard */                                                             \
    enum cshard_state state;                                                                                           \
    int32_t epoch;          /* partition leader epoch it was loaded at (the coordinator epoch), -1 */                  \
    kuuid_t topic_id;                                                                                                  \
    struct partition *p     /* reference while ACTIVE */

struct cshard {
    CSHARD_FIELDS;
};

/* The first member of a coordinator's shard: the same fields, by name
 * and as a struct cshard. */
#define CSHARD_HEAD                                                                                                    \
    union {                                                                                                            \
        struct cshard base;                                                                                            \
        struct {                                                                                                       \
            CSHARD_FIELDS;                                                                                             \
        };                                                                                                             \
    }

/* The shards of one coordinator, by partition. make returns a new shard
 * (calloc'ed, cshard_init'ed) of the coordinator's type. */
struct cshard_table {
    pthread_rwlock_t lock; /* the array, not the shards */
    struct cshard **v;
    int32_t n;
    struct cshard *(*make)(void *ctx, int32_t index);
    void *ctx;
    const char *topic; /* the internal topic */
};

void cshard_init(struct cshard *s, int32_t index);
void cshard_table_init(struct cshard_table *t, const char *topic, struct cshard *(*make)(void *ctx, int32_t index),
                       void *ctx);
/* Calls destroy for every shard (which frees it), then frees the array. */
void cshard_table_free(struct cshard_table *t, void (*destroy)(struct cshard *s));
/* The shard of partition index, created when create (else NULL if none). */
struct cshard *cshard_at(struct cshard_table *t, int32_t index, bool create);
int32_t cshard_count(struct cshard_table *t);

/* The shard of key (abs(javaHash(key)) % partitions of the topic),
 * locked and active: 0. Else NOT_COORDINATOR (this node does not lead its
 * partition, or the topic does not exist) or
 * COORDINATOR_LOAD_IN_PROGRESS (not loaded at the current leader epoch
 * yet; *want_load true when no load is running, so the caller wakes its
 * thread). */
int16_t cshard_acquire(struct cshard_table *t, struct controller *ctl, int32_t node_id, kstr_t key,
                       struct cshard **out, bool *want_load);

/* Brings the shards in line with the image: unload what this node no
 * longer leads (or leads at a new epoch, or of a recreated topic), load
 * what it leads and has not loaded. Both callbacks run without the
 * shard's lock, on the caller's thread. */
void cshard_sync(struct cshard_table *t, struct controller *ctl, int32_t node_id,
                 void (*load)(void *ctx, struct cshard *s, const kuuid_t *topic_id, int32_t epoch),
                 void (*unload)(void *ctx, struct cshard *s, const char *why), void *ctx);

/* The shard's partition with one more reference (partition_put), or NULL
 * when the shard is not active. */
struct partition *cshard_partition(struct cshard *s);

#endif
