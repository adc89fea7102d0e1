/* The Raft log of __cluster_metadata-0 on disk: a raft_log (raft/raft_log.h)
 * over a partition log (log/plog.h), with snapshots as Kafka's
 * `<end offset, 20 digits>-<epoch, 10 digits>.checkpoint` files in the
 * same directory (partial ones end in `.checkpoint.part` and are removed
 * at open).
 *
 * The log start offset: plog keeps segments, Raft wants its start to be
 * the end of the oldest snapshot once the prefix has been replaced. At
 * open the log start moves up to the oldest snapshot's end (a crash may
 * have come between writing a snapshot and deleting the prefix), and
 * snapshots older than the log start are deleted.
 *
 * Threads: the raft_log operations run on the Raft loop only. Flushing
 * is the exception: rlog_flush runs on a flusher thread, concurrently
 * with appends (plog allows it). Truncation bumps a generation, so a
 * flush that began before a truncation is not reported as covering the
 * records appended after it (raft_log.h's rule). */
#ifndef SAMSA_QUORUM_RLOG_H
#define SAMSA_QUORUM_RLOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "raft/raft_log.h"
#include "util/buf.h"

struct plog;
struct rlog;

/* Opens (creating) the log in dir, the __cluster_metadata-0 directory.
 * segment_bytes <= 0: plog's default. Returns 0 with *out (the caller's,
 * rlog_close), or a Kafka error code with one line in err. */
int rlog_open(const char *dir, int64_t segment_bytes, struct rlog **out, char *err, size_t errlen);
/* clean: a clean shutdown (plog writes its marker). */
void rlog_close(struct rlog *l, bool clean);

/* The raft_log view (borrowed: l must outlive the node). */
struct raft_log rlog_raft_log(struct rlog *l);
const char *rlog_dir(const struct rlog *l);

/* Flushing (any thread, one flusher at a time): *gen and the log end
 * offset are read before the fsync; the flush covers [.., *end) only if
 * rlog_gen() still equals *gen afterwards. Returns 0 or a Kafka error. */
int rlog_flush(struct rlog *l, int64_t *end, uint64_t *gen);
uint64_t rlog_gen(const struct rlog *l);

/* Whole batches from offset (a batch boundary inside [start, end)), at
 * most max_bytes but at least one batch, copied into out (replacing its
 * contents). Raft-loop only. 0, or a Kafka error. */
int rlog_read_mem(struct rlog *l, int64_t offset, int32_t max_bytes, struct buf *out);

/* A whole complete snapshot read into memory. 0 or a Kafka error. */
int rlog_snapshot_load(struct rlog *l, const struct raft_snapshot_id *id, struct buf *out);

#endif
