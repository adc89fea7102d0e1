/* An in-memory raft_log with a model of durability, for the Raft
 * simulation and unit tests: batches and snapshots live in memory, a
 * "durable end" says how much of the log a crash keeps, and flushes are
 * explicit two-step operations so the simulation can give them latency.
 *
 * Durability model: appends are volatile until a flush that began after
 * them ends; truncation is durable at once (the simplification: a real
 * file system may need the fsync for that too); a finished snapshot is
 * durable, a partial one is lost in a crash. memlog_crash keeps the
 * durable prefix plus, at the caller's choice, some of the unflushed
 * batches after it (page-cache writeback that happened to complete).
 *
 * Single owner, not thread-safe. */
#ifndef SAMSA_RAFT_MEMLOG_H
#define SAMSA_RAFT_MEMLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raft/raft_log.h"
#include "util/buf.h"

struct memlog_batch {
    int64_t base_offset;
    int64_t last_offset;
    int32_t epoch;
    uint32_t crc;
    uint8_t *data; /* owned */
    size_t len;
};

struct memlog_snapshot {
    struct raft_snapshot_id id;
    bool complete;
    struct buf data;
};

struct memlog {
    struct memlog_batch *b;
    int32_t n, cap;
    int64_t start, end;
    int64_t durable_end;
    uint64_t gen; /* bumped by every truncation */
    struct memlog_snapshot *snaps;
    int32_t nsnaps, capsnaps;
    struct buf readbuf; /* backs krecords handed out by read */
};

/* A flush in progress: covers what was written before it began. */
struct memlog_flush {
    int64_t end;
    uint64_t gen;
};

void memlog_init(struct memlog *l);
void memlog_free(struct memlog *l);
/* The raft_log view of l (borrowed: l must outlive its users). */
struct raft_log memlog_raft_log(struct memlog *l);

struct memlog_flush memlog_flush_begin(const struct memlog *l);
/* Completes f; returns the durable end offset afterwards (to hand to
 * raft_flushed). A flush that began before a truncation adds nothing. */
int64_t memlog_flush_end(struct memlog *l, struct memlog_flush f);

/* Loses everything not durable, except that up to keep_unflushed batches
 * after the durable end survive; partial snapshots are dropped. */
void memlog_crash(struct memlog *l, int32_t keep_unflushed);

/* Index of the batch containing offset, or -1. */
int32_t memlog_find(const struct memlog *l, int64_t offset);
/* Complete snapshot by id, or NULL. */
const struct memlog_snapshot *memlog_snapshot(const struct memlog *l, const struct raft_snapshot_id *id);

/* Host-side snapshot writing in one call: begin, append, finish. */
int memlog_write_snapshot(struct memlog *l, const struct raft_snapshot_id *id, const uint8_t *p, size_t n);

#endif
