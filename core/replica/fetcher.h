/* Follower fetchers: num.replica.fetchers threads, each with its own
 * libev loop, fetch for the partitions this node follows (each partition
 * in one of them, by hash) from that partition's leader (per thread one
 * kclient and at most one Fetch in flight per leader broker), appends
 * the leader's batches verbatim (plog_append_follower), takes the
 * leader's high watermark, and truncates a divergent tail when the
 * leader answers DivergingEpoch. The set of followed partitions is
 * re-read from the partition registry (which follows the metadata
 * image) at every step, so leadership changes need no other signal.
 *
 * The same loop runs the leader side's ISR maintenance (replica.lag.
 * time.max.ms): it asks the active controller to shrink or expand the
 * ISR of the partitions this node leads with AlterPartition. */
#ifndef SAMSA_REPLICA_FETCHER_H
#define SAMSA_REPLICA_FETCHER_H

struct controller;
struct fetcher;
struct partition_registry;
struct replica_env;

/* Starts the threads, which follow and lead the partitions of reg as the
 * images of c (NULL: none) say; env is copied, and env's parts, c and
 * reg must outlive the fetcher. NULL when it could not (logged). */
struct fetcher *fetcher_start(const struct replica_env *env, struct controller *c, struct partition_registry *reg);
/* Stops and joins the thread, fails what is in flight, frees. NULL ok. */
void fetcher_stop(struct fetcher *f);
/* Asks for a step soon (any thread): the partitions changed. */
void fetcher_wake(struct fetcher *f);

#endif
