/* Fetch sessions (KIP-227): the broker remembers which partitions a
 * consumer fetches, so incremental fetch requests name only what changed
 * and responses carry only partitions with news. Broker-wide, bounded
 * by max.incremental.fetch.session.cache.slots; a full cache evicts as
 * Kafka's FetchSessionCache does (fetch_session_new). */
#ifndef SAMSA_API_FETCH_SESSION_H
#define SAMSA_API_FETCH_SESSION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "proto/kcodec.h"
#include "util/lru.h"

#define FETCH_SESSION_INITIAL_EPOCH 0
#define FETCH_SESSION_FINAL_EPOCH (-1)

struct fs_partition {
    char *topic;            /* owned; "" when the session uses topic ids */
    int32_t topic_len;
    kuuid_t topic_id;
    int32_t partition;
    int64_t fetch_offset;
    int32_t max_bytes;
    int32_t current_leader_epoch;
    /* What the last response told the client, to decide whether an
     * incremental response must include the partition. */
    int64_t last_hw, last_lso, last_log_start;
    bool answered;
    /* The partition the last fetch found (no reference; NULL: none) and
     * the registry generation it was found in: the next fetch takes it
     * back through preg_get_cached instead of a map lookup. */
    struct partition *kept;
    uint64_t kept_gen;
    int32_t run;            /* its run in s->runs (valid unless runs_stale) */
};

/* A run: consecutive partitions of the session of one topic and one
 * chunk of it (util/chgen.h), the unit an incremental consumer fetch
 * skips when nothing in it changed. A session listing a topic's
 * partitions in index order has a run per CHGEN_CHUNK of them. */
struct fs_run {
    int32_t start, count;   /* s->parts[start .. start + count) */
    /* What the last walk that answered the client saw: */
    bool valid;             /* there was one since the runs were built */
    kuuid_t topic_id;       /* the id the image gave the topic then */
    uint32_t slot;          /* chgen_slot_of(topic_id, its chunk) */
    uint64_t gen;           /* chgen_read(slot) before that walk looked */
    /* It left a partition with news whatever happens (records past the
     * fetch offset, an error): the next poll must walk the run again. */
    bool pending;
    /* A request changed one of its partitions (fetch offset, max bytes,
     * epoch) since: that walk's answer no longer stands. */
    bool dirty;
};

struct fetch_session {
    int32_t id;
    int32_t epoch;          /* the epoch the next request must carry */
    bool uses_topic_ids;
    bool privileged;        /* a follower's session (replica id >= 0) */
    int64_t created_ms;
    struct fs_partition *parts;
    int32_t nparts, cap;
    /* The runs of parts, rebuilt (all invalid) when partitions are added
     * or forgotten (runs_stale); layout counts the rebuilds, so a fetch
     * that planned with one layout stores nothing into another. */
    struct fs_run *runs;
    int32_t nruns;
    bool runs_stale;
    uint32_t layout;
    int8_t isolation;       /* of the last walk's fetch (read_committed: 1) */
    int64_t last_used_ms;
    struct lru_node lru;    /* in its shard's list */
};

/* One shard: the sessions whose id falls in it (id & (nshards - 1)). */
struct fs_shard {
    pthread_mutex_t lock;   /* guards the table, the LRU and its sessions */
    struct fetch_session **slots; /* open addressing by id, grows */
    int32_t nslots, count;
    struct lru_node lru;    /* most recent at lru.next */
};

/* Sharded by session id, so workers fetching in different sessions take
 * different locks; the bound (max) is the whole cache's, as Kafka's
 * config says, and a full cache evicts over all shards (every shard
 * locked, in order: the one place that takes more than one). */
struct fetch_session_cache {
    struct fs_shard *shards;
    int32_t nshards;        /* a power of 2 */
    int32_t max;
    _Atomic int32_t count;  /* sessions held and places reserved, <= max */
    _Atomic uint32_t next_id;
};

void fetch_session_cache_init(struct fetch_session_cache *c, int32_t max_sessions);
void fetch_session_cache_destroy(struct fetch_session_cache *c);
/* Locks the shard of session id (any id: a missing one's shard). A
 * session, its partitions and the calls below on it are guarded by its
 * shard's lock; hold at most one at a time. */
void fetch_session_lock(struct fetch_session_cache *c, int32_t id);
void fetch_session_unlock(struct fetch_session_cache *c, int32_t id);
/* A session unused this long is stale; one created this long ago may
 * be evicted by a larger one (Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS). */
#define FETCH_SESSION_EVICTION_MS 120000
/* A new empty session for a fetch of nparts partitions, or NULL when the
 * cache is full and nothing may be evicted for it (the client then gets
 * session id 0 and fetches without a session). KIP-227's rules when full:
 * the least recently used session goes if it is stale; else the least
 * valuable evictable one (ordered by privileged, then size) goes if it
 * is worth no more than the new one, where a follower may evict any
 * consumer's session and anyone may evict a session created more than
 * FETCH_SESSION_EVICTION_MS ago. Called holding no shard lock; returns
 * the session with its shard locked (fetch_session_unlock(c, s->id)).
 * The cache owns the session. */
struct fetch_session *fetch_session_new(struct fetch_session_cache *c, bool uses_topic_ids, bool privileged,
                                        int32_t nparts, int64_t now_ms);
/* The calls below: the caller holds the session's (or id's) shard lock. */
struct fetch_session *fetch_session_find(struct fetch_session_cache *c, int32_t id);
/* Frees s; its shard stays locked. */
void fetch_session_remove(struct fetch_session_cache *c, struct fetch_session *s);
void fetch_session_touch(struct fetch_session_cache *c, struct fetch_session *s, int64_t now_ms);
/* Finds (by name or id, per the session) or adds a partition. */
struct fs_partition *fetch_session_part(struct fetch_session *s, kstr_t topic, const kuuid_t *topic_id,
                                        int32_t partition, bool add);
/* As fetch_session_part without adding, trying the i-th partition
 * first: a response lists the session's partitions in its order, and a
 * search each would cost a 10 000-partition session 10^8 compares per
 * poll. */
struct fs_partition *fetch_session_part_at(struct fetch_session *s, int32_t i, kstr_t topic,
                                           const kuuid_t *topic_id, int32_t partition);
void fetch_session_forget(struct fetch_session *s, kstr_t topic, const kuuid_t *topic_id,
                          int32_t partition);
/* A request named sp (an update of its fetch state): its run's last
 * answer no longer stands. */
void fetch_session_part_changed(struct fetch_session *s, struct fs_partition *sp);
/* Rebuilds s->runs when partitions were added or forgotten since (every
 * run then invalid: the next fetch walks all). */
void fetch_session_runs_build(struct fetch_session *s);
/* Whether an incremental consumer fetch at isolation may skip run r:
 * its last walk answered everything (nothing pending, nothing changed
 * by a request since), at the same isolation, the image still gives the
 * topic the id it had (id_now; NULL when the topic is gone) and the
 * run's change generation is what it was then (gen_now, chgen_read of
 * its slot, read before looking at anything else). The
 * caller also checks that the client may still read the topic. */
bool fetch_session_run_unchanged(const struct fetch_session *s, const struct fs_run *r, int8_t isolation,
                                 const kuuid_t *id_now, uint64_t gen_now);

static inline int32_t fetch_session_next_epoch(int32_t e)
{
    return e < 0 ? 0 : (e == INT32_MAX ? 1 : e + 1);
}

#endif
