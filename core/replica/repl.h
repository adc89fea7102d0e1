/* The pure decisions of partition replication, as Kafka's Partition and
 * AbstractFetcherThread make them, kept free of I/O and locks so unit
 * tests can drive them (tests/unit/repl_test.c):
 *
 *   - the leader's high watermark: the smallest log end offset over the
 *     ISR (the leader included), never moving down;
 *   - a follower's "caught up" time, from its successive fetch offsets;
 *   - which followers leave the ISR (not caught up for
 *     replica.lag.time.max.ms) and which join it (caught up with the
 *     high watermark and the leader's current epoch);
 *   - where a follower truncates its log from the leader's DivergingEpoch
 *     (Fetch v12+). */
#ifndef SAMSA_REPLICA_REPL_H
#define SAMSA_REPLICA_REPL_H

#include <stdbool.h>
#include <stdint.h>

/* What the leader knows of one follower, from its Fetch requests. */
struct repl_follower {
    int32_t id;
    int64_t leo;                 /* its log end offset (fetch offset); -1 unknown */
    int64_t last_caught_up_ms;   /* last time it had everything the leader had; 0 never */
    int64_t last_fetch_ms;       /* time of its previous fetch; 0 none */
    int64_t last_fetch_leader_leo; /* the leader's log end at that fetch */
};

/* Kafka's Replica.updateFetchState: a fetch at fetch_offset when the
 * leader's log ends at leader_leo. The follower is caught up now when it
 * asked for the log end; caught up as of its previous fetch when it now
 * asks for at least what the leader had then. */
void repl_follower_fetched(struct repl_follower *f, int64_t fetch_offset, int64_t leader_leo, int64_t now_ms);

/* The follower state a new leader starts from (Kafka's
 * resetReplicaState): log end unknown; an ISR member counts as caught up
 * now, others as never. */
void repl_follower_reset(struct repl_follower *f, int32_t id, bool in_isr, int64_t now_ms);

/* The high watermark the ISR allows: min over members of their log end
 * (leader_leo for leader_id; a follower without state, or with an
 * unknown log end, holds it at -1). The caller raises, never lowers. */
int64_t repl_isr_min_leo(int32_t leader_id, int64_t leader_leo, const int32_t *isr, int32_t nisr,
                         const struct repl_follower *fs, int32_t nfs);

/* Whether id is one of the n ids in a (a replica set, an ISR). */
bool repl_contains(const int32_t *a, int32_t n, int32_t id);

/* Kafka's Partition.getOutOfSyncReplicas: ISR followers (never the
 * leader) whose log end is behind leader_leo and that have not been
 * caught up for lag_max_ms. Fills out (room for nisr ids); returns the
 * count. */
int32_t repl_out_of_sync(int32_t leader_id, int64_t leader_leo, const int32_t *isr, int32_t nisr,
                         const struct repl_follower *fs, int32_t nfs, int64_t now_ms, int64_t lag_max_ms,
                         int32_t *out);

/* Kafka's Partition.isFollowerInSync (the expansion test): a follower
 * outside the ISR joins once its log end reaches the high watermark and
 * the start of the leader's current epoch. */
bool repl_can_join_isr(const struct repl_follower *f, int64_t hw, int64_t leader_epoch_start_offset);

/* Kafka's AbstractFetcherThread.getOffsetTruncationState, for a Fetch
 * answer with DivergingEpoch (div_epoch, div_end_offset):
 *   - div_end_offset -1: truncate to min(hw, leo);
 *   - div_epoch -1: to min(div_end_offset, leo);
 *   - else the follower's own end for that epoch (have_local: the largest
 *     epoch <= div_epoch in its cache was found, local_epoch /
 *     local_end_offset): when it is a smaller epoch, truncate to
 *     min(local_end_offset, leo) and fetch again (*complete false), else
 *     to min(local_end_offset, div_end_offset, leo);
 *   - no local epoch at all: min(div_end_offset, leo). */
int64_t repl_truncation_offset(int32_t div_epoch, int64_t div_end_offset, bool have_local, int32_t local_epoch,
                               int64_t local_end_offset, int64_t leo, int64_t hw, bool *complete);

/* The leader's answer to a follower that last fetched last_fetched_epoch
 * at fetch_offset (Kafka's Partition.fetchRecords): the leader's own
 * end for that epoch (end_epoch / end_offset from its epoch cache)
 * disagrees when it is a smaller epoch or ends before fetch_offset; then
 * true, and the follower is answered DivergingEpoch (end_epoch,
 * end_offset) without records. */
bool repl_diverging(int32_t last_fetched_epoch, int64_t fetch_offset, int32_t end_epoch, int64_t end_offset);
/* A request's CurrentLeaderEpoch against the partition's epoch (Kafka's
 * Partition.checkCurrentLeaderEpoch): 0 when it is -1 (not given) or the
 * same, FENCED_LEADER_EPOCH when older, UNKNOWN_LEADER_EPOCH when newer. */
int16_t repl_epoch_error(int32_t current_leader_epoch, int32_t epoch);

#endif
