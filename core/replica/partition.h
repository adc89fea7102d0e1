/* Partitions hosted by this node: the local log plus replication state
 * (leader epoch, high watermark). The registry creates and removes them
 * as the metadata image says; handlers find them by topic id and index
 * and hold a reference while they use one. */
#ifndef SAMSA_REPLICA_PARTITION_H
#define SAMSA_REPLICA_PARTITION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "proto/kcodec.h"
#include "replica/repl.h"
#include "util/slock.h"

struct plog;
struct mimage;
struct logmgr;
struct replica_env;
struct park_hub;
struct partition_registry;
struct topic_config;

struct partition {
    /* topic_id and index are the registry's map key, 20 bytes in a row
     * (borrowed by its hash map: no key copy per partition). The fields
     * are ordered so that the struct has no padding: there is one per
     * hosted partition (issue 12, memory per idle partition). */
    kuuid_t topic_id;
    int32_t index;
    atomic_int refs;
    char *topic;                  /* NUL-terminated; the registry allocates it with p */
    struct plog *log;
    atomic_int_least64_t high_watermark;
    /* For the metrics endpoint's per-topic figures (Kafka's
     * BrokerTopicMetrics): batch bytes and records appended by Produce,
     * record bytes fetched by consumers (not by followers). Relaxed
     * atomic adds: several workers may serve one partition. */
    _Atomic uint64_t produced_bytes, produced_records, fetched_bytes;
    atomic_int leader_epoch;
    atomic_int leader_id;         /* -1: none */
    atomic_int min_isr;           /* min.insync.replicas of the topic */
    struct slock repl_lock;       /* guards the replication fields below */
    struct logmgr *logmgr;        /* the registry's log manager */
    struct park_hub *wake;        /* where changes are announced (net/park.h) */
    atomic_bool deleted;          /* removed from the registry */
    /* flush.messages=1: a record counts as written (acknowledged, below
     * the high watermark) only once the flusher has fsynced it. */
    atomic_bool ack_after_flush;

    /* Replication (core/replica/partition.c, fetcher.c). The state the
     * metadata image gives (leader, ISR, partition epoch, replicas), and
     * on the leader what each follower's fetches told it. is_leader and
     * leader_id are readable without the lock. */
    atomic_bool is_leader;
    /* Leader: an AlterPartition in flight (its ISR; the high watermark
     * counts its members too until the image answers). */
    bool alter_inflight;
    int32_t partition_epoch;
    /* Up to PARTITION_INLINE_IDS replicas (ISR members) live in
     * rep_inline (isr_inline), not in a malloc chunk of their own. */
    int32_t *replicas;
    int32_t *isr;
    int32_t nreplicas, nisr;
    struct repl_follower *followers; /* leader: one per other replica */
    int32_t nfollowers, npending;
    int32_t *pending_isr;
    int64_t alter_sent_ms, alter_retry_ms;
    /* Follower: the leader's high watermark at the last fetch. */
    int64_t leader_hw;
#define PARTITION_INLINE_IDS 3
    int32_t rep_inline[PARTITION_INLINE_IDS], isr_inline[PARTITION_INLINE_IDS];
};

/* The key requests parked on p watch (net/park.h): notified whenever its
 * high watermark, log end, leadership or existence changes. */
uint64_t partition_park_key(const struct partition *p);

/* Bumps p's topic's change generation (util/chgen.h) and wakes the
 * fetches parked while skipping it: for a change that does not go
 * through the calls below (the registry removing p). */
void partition_changed(struct partition *p);

/* Creates the registry of this node's partitions (env is copied). It
 * follows the images the controller publishes through preg_sync (main
 * makes that the controller's image_published hook). */
struct partition_registry *preg_create(const struct replica_env *env);
/* Closes every partition (clean: flush and mark clean) and frees. */
void preg_destroy(struct partition_registry *r, bool clean);
/* The partition with one more reference, or NULL if not hosted here. */
struct partition *preg_get(struct partition_registry *r, const kuuid_t *topic_id, int32_t index);
void partition_put(struct partition *p);
/* Looking partitions up again without the map (a fetch session keeps
 * what preg_get returned, without a reference). preg_generation counts
 * removals from the registry: read it before the preg_get whose result
 * is kept. preg_get_cached takes a reference on each ps[i] (kept
 * pointers, NULL allowed) as preg_get would, provided nothing left the
 * registry since gen; an entry it cannot take (gen stale, or the
 * partition deleted, offline or not ready) becomes NULL: the caller
 * looks that one up with preg_get. Returns how many it took; the caller
 * puts each. A kept pointer is never dereferenced by anyone else. */
uint64_t preg_generation(struct partition_registry *r);
size_t preg_get_cached(struct partition_registry *r, uint64_t gen, struct partition **ps, size_t n);
/* Every hosted partition whose log is open, each with one more
 * reference (the caller puts them and frees the array). Returns the
 * count; *out is NULL when 0. */
size_t preg_list(struct partition_registry *r, struct partition ***out);
/* How many hosted partitions have work for the replica fetcher: followed
 * here, or led here with other replicas (ISR checks). 0 on a node whose
 * partitions all have one replica: the fetcher's periodic step then
 * skips its walk over every partition. */
size_t preg_replicated(struct partition_registry *r);
/* Makes the hosted partitions match img: opens or creates logs for new
 * partitions led or replicated here, deletes the logs of removed topics.
 * Returns 0, or -1 with one line in err. */
int preg_sync(struct partition_registry *r, const struct mimage *img, char *err, size_t errlen);
/* What a handler answers when preg_get found nothing for a partition the
 * metadata places here: KAFKA_STORAGE_ERROR when its log is offline (its
 * log dir failed), else NOT_LEADER_OR_FOLLOWER (not hosted, or its log
 * still being opened at start-up: clients retry). */
int16_t preg_unavailable_error(struct partition_registry *r, const kuuid_t *topic_id, int32_t index);
/* For the requests only a partition's leader answers (ListOffsets,
 * OffsetForLeaderEpoch, DescribeProducers): partition index of topic t
 * (from the image) with one more reference in *out, or the error Kafka
 * gives: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER when node_id
 * does not lead it, else as preg_unavailable_error. */
struct mi_topic;
int16_t preg_get_led(struct partition_registry *r, int32_t node_id, const struct mi_topic *t, int32_t index,
                     struct partition **out);

/* Appends validated batches (modified in place: offsets and leader epoch
 * stamped), advances the high watermark (single replica) and wakes
 * parked fetches. Returns a Kafka error code. */
struct plog_append_result;
int partition_append(struct partition *p, uint8_t *batches, size_t len, bool log_append_time,
                     struct plog_append_result *res);
/* partition_append with a KIP-890 verification guard (plog.h:
 * plog_verify_begin / plog_append_verified). */
int partition_append_verified(struct partition *p, uint8_t *batches, size_t len, bool log_append_time,
                              uint64_t guard, struct plog_append_result *res);

/* Kafka's lastStableOffset: the high watermark, held back to the first
 * offset of the oldest transaction that is open or whose marker the
 * high watermark has not passed yet (plog_last_stable_offset). Leaders
 * and followers alike, as Kafka keeps it on every replica. */
int64_t partition_last_stable_offset(struct partition *p);

/* Where an acknowledgement stands: the records may be acknowledged now,
 * they are still waited for (the caller parks on partition_park_key), or
 * the wait failed with a Kafka error (in *err). */
enum ack_state { ACK_READY, ACK_WAIT, ACK_FAILED };

/* Durable acknowledgements (flush.messages=1). The produce handler asks
 * after appending: READY when the records up to last_offset may be
 * acknowledged now, WAIT while they wait for the flusher's fsync (the
 * flusher notifies the partition's key), FAILED with
 * KAFKA_STORAGE_ERROR when the log went offline. The worker thread never
 * waits for an fsync itself. */
enum ack_state partition_ack_wait(struct partition *p, int64_t last_offset, int16_t *err);
/* acks=all: READY once the high watermark (the ISR's, and with
 * flush.messages=1 the durable part) is past last_offset, appended in
 * leader epoch epoch, and the ISR still has min.insync.replicas members
 * (else FAILED with NOT_ENOUGH_REPLICAS_AFTER_APPEND, as Kafka's
 * DelayedProduce); FAILED with NOT_LEADER_OR_FOLLOWER once this node no
 * longer leads in that epoch; WAIT otherwise. With an ISR of the leader
 * alone (replication factor 1) this is as immediate as acks=1. */
enum ack_state partition_ack_wait_all(struct partition *p, int64_t last_offset, int32_t epoch, int16_t *err);

/* The image's state of the partition (registry, on every sync; node is
 * this node's id). A leadership gained resets the followers' state as
 * Kafka's makeLeader does. The caller then recomputes the high
 * watermark with partition_log_ready once the log is open. */
struct mi_partition;
void partition_set_state(struct partition *p, const struct mi_partition *mp, int32_t node);

/* Leader: a follower's Fetch asked for fetch_offset (its log end). Its
 * state and the high watermark move; parked requests are woken when the
 * high watermark did. */
void partition_follower_fetched(struct partition *p, int32_t replica, int64_t fetch_offset);

/* partition_append of a coordinator's own write (plog_append_coordinator,
 * guard: PLOG_GUARD_UNCHECKED or plog_verify_begin's). */
int partition_append_coordinator(struct partition *p, uint8_t *batches, size_t len, uint64_t guard,
                                 struct plog_append_result *res);

/* Follower: appends the leader's batches as they are
 * (plog_append_follower) and takes the leader's high watermark (capped
 * at the local log end). Returns a Kafka error code. */
int partition_append_follower(struct partition *p, const uint8_t *batches, size_t len, int64_t leader_hw);
/* Follower: sets the leader's high watermark without data. */
void partition_follower_hw(struct partition *p, int64_t leader_hw);
/* Follower: truncates a divergent tail (plog_truncate_to); the high
 * watermark follows down. */
int partition_truncate(struct partition *p, int64_t offset);
/* Frees the replication state (registry, when the partition goes). */
void partition_repl_free(struct partition *p);

/* The log manager's flush callback (logmgr_flushed_fn; ctx is the
 * partition): raises the high watermark over newly durable records and
 * wakes parked requests. */
void partition_log_flushed(void *ctx, struct plog *l);
/* The log was just opened, or the replication state changed: the high
 * watermark is recomputed (and parked requests woken when it moved). */
void partition_log_ready(struct partition *p);

#endif
