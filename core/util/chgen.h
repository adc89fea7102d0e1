/* Change generations by partition chunk: what lets an incremental fetch
 * of a session with many partitions skip the partitions where nothing
 * happened since its last poll (api/fetch.c), instead of looking at
 * every one.
 *
 * A chunk is CHGEN_CHUNK consecutive partitions of a topic (indexes
 * i / CHGEN_CHUNK equal); one counter per slot, a chunk's slot a hash of
 * the topic id and the chunk. Whatever changes what a Fetch would answer
 * for a partition (records appended, the high watermark, the last stable
 * offset, the log start offset, the leader epoch or leadership, the
 * partition's existence, its log going offline, the topic in the
 * metadata image) bumps its chunk's slot after the change; a reader
 * loads the slot before it looks at the partitions, and a later equal
 * load proves that no change happened since. Two chunks sharing a slot,
 * and a bump of every slot (a log dir going offline), only cost a walk
 * that finds nothing: a missed bump would leave a consumer without its
 * records, a spurious one costs one walk of a chunk.
 *
 * Process-wide (two brokers in one process share the table: spurious
 * walks only). Any thread; seq_cst, lock-free. */
#ifndef SAMSA_UTIL_CHGEN_H
#define SAMSA_UTIL_CHGEN_H

#include <stdatomic.h>
#include <stdint.h>

#define CHGEN_SLOTS 4096 /* a power of 2 */
/* Partitions per chunk: a partition with news costs a poll the walk of
 * its chunk; an empty poll a look per chunk. */
#define CHGEN_CHUNK 32

/* A slot per cache line: bumps of topics written by different workers
 * do not share a line. */
struct chgen_slot {
    _Atomic uint64_t gen;
    char pad[64 - sizeof(uint64_t)];
};

extern struct chgen_slot chgen_table[CHGEN_SLOTS];
extern _Atomic uint64_t chgen_everything; /* bumped by chgen_bump_all */
/* Fetches parked while watching a topic they skipped (chgen_watch): a
 * bumper announces the topic's park key only when this is not 0. */
extern _Atomic int32_t chgen_watchers;

static inline uint32_t chgen_chunk_of(int32_t index) { return (uint32_t)index / CHGEN_CHUNK; }

static inline uint32_t chgen_slot_of(const uint8_t topic_id[16], uint32_t chunk)
{
    uint64_t a = 0, b = 0;
    for (int i = 0; i < 8; i++) {
        a = a << 8 | topic_id[i];
        b = b << 8 | topic_id[8 + i];
    }
    uint64_t x = a ^ ((b + chunk) * 0x9e3779b97f4a7c15ULL);
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 32;
    return (uint32_t)x & (CHGEN_SLOTS - 1);
}

/* After the change. */
static inline void chgen_bump_slot(uint32_t slot) { atomic_fetch_add(&chgen_table[slot].gen, 1); }
static inline void chgen_bump(const uint8_t topic_id[16], int32_t index)
{
    chgen_bump_slot(chgen_slot_of(topic_id, chgen_chunk_of(index)));
}
/* Every chunk of a topic of npartitions partitions. */
static inline void chgen_bump_topic(const uint8_t topic_id[16], int32_t npartitions)
{
    for (int32_t i = 0; i < npartitions; i += CHGEN_CHUNK)
        chgen_bump(topic_id, i);
}
/* Every topic changed (a log dir went offline). */
static inline void chgen_bump_all(void) { atomic_fetch_add(&chgen_everything, 1); }

/* Before looking at the topic's partitions. Both counters only grow, so
 * their sum moves whenever either does. */
static inline uint64_t chgen_read(uint32_t slot)
{
    return atomic_load(&chgen_table[slot].gen) + atomic_load(&chgen_everything);
}

/* The park key (net/park.h) of a topic's changes, for a fetch parked
 * while skipping chunks of it (one key per topic, not per chunk: a
 * parked poll watches a key per topic); notified by partition changes
 * while chgen_watchers > 0. */
static inline uint64_t chgen_park_key(const uint8_t topic_id[16])
{
    uint64_t x = 0xcbf29ce484222325ULL ^ 0x5bd1e995ULL; /* FNV-1a, apart from park_key_partition */
    for (int i = 0; i < 16; i++)
        x = (x ^ topic_id[i]) * 0x100000001b3ULL;
    x ^= x >> 31;
    return x | 1;
}

#endif
