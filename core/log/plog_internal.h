/* struct plog and the helpers its parts share (plog.c: open, append,
 * read, flush, retention; cleaner.c: compaction). Nothing outside
 * core/log includes this. */
#ifndef SAMSA_LOG_PLOG_INTERNAL_H
#define SAMSA_LOG_PLOG_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "log/checkpoint.h"
#include "log/plog.h"
#include "log/segment.h"
#include "util/buf.h"
#include "util/slock.h"
#include "util/srwlock.h"
#include "log/producer_state.h"

/* A segment renamed .deleted, its files to be removed at due_ms. */
struct plog_trash {
    struct segment *seg;
    int64_t due_ms;
};

struct plog {
    const char *name; /* last component of dir ("topic-3"), for log lines */
    kuuid_t topic_id;
    /* The owner's, kept by pointer (never NULL: an empty set stands for
     * none); they outlive the log (plog_open_ex). */
    const struct plog_hooks *hooks;
    void *hooks_ctx; /* their first argument */
    const struct plog_codecs *codecs;
    const atomic_bool *dir_offline;

    /* Lock order: maint_lock, append_lock, flush_lock, seg_lock, then the
     * leaves (cfg_lock, trash_lock, epoch_lock).
     * maint_lock serialises changes of the segment list other than rolls:
     *   retention, the cleaner's swap, truncation.
     * append_lock serialises writers: offset assignment, rolling and the
     *   write itself. Only its holder changes the active segment's file,
     *   so it may read the segment list and the active segment's state
     *   without seg_lock. cfg changes take it too, so the append path
     *   reads cfg without cfg_lock.
     * flush_lock serialises flushes (the recovery point moves in order).
     * seg_lock guards the segment list and every segment's in-memory state
     *   (size, indexes and their mappings, timestamps). Writers hold it
     *   exclusively only to publish a finished write or change the list;
     *   readers hold it shared for an index lookup and drop it before any
     *   file I/O. */
    struct slock maint_lock;
    struct slock append_lock;
    struct slock flush_lock;
    struct slock cfg_lock;
    /* A 4-byte rwlock (pthread's is 56: issue 12, memory per idle
     * partition). */
    struct srwlock seg_lock;
    /* Guards the trash (Segments renamed .deleted, waiting for
     * file.delete.delay.ms, in the lazily allocated part: txs below).
     * (The small fields sit in pairs, here and below: a struct plog per
     * partition, its padding counts.) */
    struct slock trash_lock;
    struct slock epoch_lock;
    /* Shared by every log with the same config (log/plog_config.c,
     * interned, refcounted); replaced whole by plog_set_config under
     * append_lock and cfg_lock, so either lock keeps it alive. */
    const struct plog_config *cfg;
    struct segment **segs; /* ascending base offsets; the last one is active */
    size_t nsegs, segcap;
    /* segs of a one-segment log: no malloc chunk of its own. */
    struct segment *seg1;

    /* Leader-epoch cache, persisted in leader-epoch-checkpoint (under
     * epoch_lock, above). */
    struct epoch_entry *epochs;
    size_t nepochs, epochcap;
    uint64_t epoch_gen;              /* changes of the cache (epoch_lock) */
    /* Serialises writes of the checkpoint file; epoch_saved_gen is the
     * cache generation it holds (under epoch_file_lock). */
    struct slock epoch_file_lock;
    /* snap_lock: see snap_pending below. */
    struct slock snap_lock;
    uint64_t epoch_saved_gen;

    /* Published after the data they cover is in the file (release), so a
     * reader that loads them (acquire) finds those bytes there. */
    _Atomic int64_t end_offset;
    _Atomic int64_t start_offset;
    _Atomic int64_t size_bytes;
    _Atomic int64_t recovery_point;
    _Atomic int64_t high_watermark; /* -1: follow the end offset */
    _Atomic int64_t cleaner_offset; /* -1: never cleaned */
    /* Earliest delete horizon of a tombstone or removable transaction
     * marker the last cleaning kept (INT64_MAX: none; the cleaning's time
     * when a marker can get its horizon): the cleaner comes back then. */
    _Atomic int64_t tombstone_expiry;
    _Atomic int64_t last_flush_ms;  /* wall clock */
    /* A roll happened: the rolled segment and the new one's directory
     * entry wait for a flush. */
    atomic_bool roll_flush_pending;
    /* Set by truncation: a running clean gives up. */
    atomic_bool abort_clean;
    /* A segment has trim_pending (segment.h): for maint_lock's holder. */
    atomic_bool trims_pending;
    /* Set when the file may no longer match the in-memory state (a
     * partial write that could not be cut off, a failed fsync): Kafka
     * takes such a log offline, and so do we. */
    atomic_bool failed;
    bool has_topic_id;
    /* A retention_wanted hook call is pending (plog_take_retention_wanted
     * clears it). */
    atomic_bool retention_wanted;
    /* Something the cleanable state depends on changed: a roll, a
     * cleaning, a config change, a truncation, a log start offset move
     * (plog_take_clean_changed clears it; set at open). */
    atomic_bool clean_changed;

    uint64_t rng; /* segment.jitter.ms draws; under append_lock */

    /* Producer state (log/plog_producers.c), under append_lock; in the
     * log's allocation. */
    struct pstate ps;

    /* Transactions (log/plog_txn.c). first_unstable: the smallest first
     * offset of the open transactions, -1 when none; written under
     * append_lock, read by anyone. txn_lock (a leaf) guards the rest:
     * the aborted transactions of the whole log in marker order (each
     * with the base of the segment whose .txnindex holds it), the
     * completed transactions whose marker may not be replicated yet
     * (nunrepl_pub: their count, to skip the lock when there are none),
     * and the .txnindex files written since the last flush. */
    _Atomic int64_t first_unstable;
    atomic_size_t nunrepl_pub;
    struct slock txn_lock;
    bool txn_files_loaded;
    /* The rest of the transaction state, the trash and the pending
     * producer snapshot (struct plog_txs), which most logs never have:
     * until their first transaction, verification, roll or trashed
     * segment, txs points to one shared empty instance, never written;
     * the first writer swaps in an own copy (plog_txs_own), which stays
     * for the log's life. Saves ~150 B per idle partition (issue 12). */
    struct plog_txs *_Atomic txs;

    /* Without trailing slashes; in the log's own allocation (one malloc
     * chunk less per partition). */
    char dir[];
};

struct plog_txs {
    /* Under trash_lock. */
    struct plog_trash *trash;
    size_t ntrash, trashcap;
    /* The snapshot a roll took, for the next plog_flush to write (no file
     * I/O under append_lock); offset -1: none. Under snap_lock (a leaf). */
    struct buf snap_pending;
    int64_t snap_pending_offset;
    /* Under txn_lock. */
    struct plog_aborted_entry *aborted;
    size_t naborted, abortedcap;
    int64_t aborted_max_span; /* largest last - first offset among them */
    struct plog_txn_range *unrepl;
    size_t nunrepl, unreplcap;
    int64_t *txn_dirty;
    size_t ntxn_dirty, txn_dirtycap;
    /* KIP-890 verification guards (Kafka's VerificationStateEntry), one
     * per producer whose next transactional batch is being verified with
     * its coordinator; under append_lock. */
    struct plog_verify_entry *verify;
    size_t nverify, verifycap;
};

struct plog_verify_entry {
    int64_t producer_id;
    int16_t epoch;
    uint64_t guard;
    int64_t created_ms; /* monotonic */
};

struct plog_aborted_entry {
    struct plog_aborted_txn a;
    int64_t seg_base;
};

struct plog_txn_range {
    int64_t first_offset, last_offset;
};

/* l's own struct plog_txs, allocated now if l still has the shared
 * empty one; call before any write to it (any lock: two racing writers
 * CAS, the loser frees its copy). */
struct plog_txs *plog_txs_own(struct plog *l);

/* The shared copy of a config (log/plog_config.c): intern takes a
 * reference on the one equal to *c (made now if none), release drops it
 * (NULL: nothing). Any thread. */
const struct plog_config *plog_config_intern(const struct plog_config *c);
void plog_config_release(const struct plog_config *c);

bool plog_has_failed(const struct plog *l);
void plog_mark_failed(struct plog *l);

/* An event that can make retention or the cleaner due earlier: sets the
 * flags above, calling the retention_wanted hook when its flag was clear
 * (retention) and noting it for the cleaner (clean). O(1), no lock. */
void plog_note_changed(struct plog *l, bool retention, bool clean);

/* Releases maint_lock (held by the caller), trimming first the index
 * files a roll left to its holder (trims_pending); every holder lets go
 * through this. */
void plog_maint_unlock(struct plog *l);

/* Under seg_lock. */
size_t plog_floor_index(const struct plog *l, int64_t offset);
size_t plog_index_after(const struct plog *l, int64_t base);

/* The options new segments get from the config (cfg_lock or append_lock
 * held), with a fresh jitter draw. */
struct segment_opts plog_segment_opts(struct plog *l);

/* Renames s to .deleted and queues it for removal after
 * file.delete.delay.ms; s must already be out of the segment list. */
void plog_trash_segment(struct plog *l, struct segment *s, int64_t now_ms);

/* Producer state and snapshots (plog_producers.c). init/free with the
 * log; load at open and after truncation (the log's state is final, the
 * writers are held off); take_snapshot under append_lock at a roll;
 * flush from plog_flush; close at a clean close; segments_deleted after
 * retention deleted segments of those bases; truncated after a
 * truncation to end, with the locks of the truncation held. */
int plog_producers_init(struct plog *l);
void plog_producers_free(struct plog *l);
int plog_producers_load(struct plog *l);
/* The same with the snapshot files' offsets already listed (any order;
 * the open lists the directory once for segments and snapshots). */
int plog_producers_load_listed(struct plog *l, const int64_t *snaps, size_t n);
void plog_producers_take_snapshot(struct plog *l, int64_t offset);
int plog_producers_flush(struct plog *l);
int plog_producers_close(struct plog *l);
void plog_producers_segments_deleted(struct plog *l, const int64_t *bases, size_t n);
int plog_producers_truncated(struct plog *l, int64_t end);
/* For the cleaner (Kafka's lastRecordsOfActiveProducers): out gets
 * producer id (8 bytes) -> malloc'ed struct plog_last_record, for every
 * producer the state knows; free with plog_producers_last_offsets_free. */
struct plog_last_record {
    int64_t last_data_offset; /* last offset of its last data batch; -1: none */
    int16_t epoch;
};
struct hmap;
void plog_producers_last_offsets(struct plog *l, struct hmap *out);
void plog_producers_last_offsets_free(struct hmap *m);

/* Transactions (plog_txn.c). init/free with the log. reset before the
 * producer-state replay from offset from (at open it first reads the
 * segments' .txnindex files): entries of markers at or after from go, the
 * replay adds them again. Under append_lock, with the producer state
 * current: opened when a transactional batch opened a transaction at
 * first_offset; completed when a marker (in the segment of seg_base)
 * ended one (an ABORT is written to that segment's .txnindex);
 * publish_first_unstable recomputes the open part from the state. flush
 * syncs the .txnindex files written since the last (plog_flush, before
 * the producer snapshot). segments_deleted: retention's, after
 * plog_producers_segments_deleted. The cleaner replacing the segments
 * of bases [from, to) by one at base: write_merged writes the entries of
 * those segments to "<base>.txnindex<suffix>" (durably) before the swap,
 * segments_merged moves them to base in memory after it; both leave out
 * the entries whose marker offset is in drop (ascending, ndrop of them):
 * the aborted transactions the cleaner found no data of. */
struct ps_completed_txn;
void plog_txn_init(struct plog *l);
void plog_txn_free(struct plog *l);
int plog_txn_reset(struct plog *l, int64_t from);
void plog_txn_opened(struct plog *l, int64_t first_offset);
int plog_txn_completed(struct plog *l, const struct ps_completed_txn *t, int64_t seg_base);
void plog_txn_publish_first_unstable(struct plog *l);
int plog_txn_flush(struct plog *l);
void plog_txn_segments_deleted(struct plog *l, const int64_t *bases, size_t n);
int plog_txn_write_merged(struct plog *l, int64_t base, int64_t from, int64_t to, const char *suffix,
                          const int64_t *drop, size_t ndrop);
void plog_txn_segments_merged(struct plog *l, int64_t base, int64_t from, int64_t to, const int64_t *drop,
                              size_t ndrop);
/* A copy of the aborted transactions whose first offset is below upper
 * (in marker order): *out is malloc'ed (NULL when none), the caller
 * frees it. For the cleaner (Kafka's collectAbortedTransactions). */
size_t plog_txn_aborted_before(struct plog *l, int64_t upper, struct plog_aborted_txn **out);
/* Whether the data batch of producer_id at offset belongs to an aborted
 * transaction (the cleaner drops those records). */
bool plog_txn_is_aborted(struct plog *l, int64_t producer_id, int64_t offset);
/* Under append_lock: the verification check of a transactional data
 * batch from a producer with no open transaction (0 or
 * KERR_INVALID_TXN_STATE), and forgetting a producer's guard once its
 * transaction opened or ended. */
int plog_txn_verify_check(struct plog *l, int64_t producer_id, uint64_t guard);
void plog_txn_verify_clear(struct plog *l, int64_t producer_id);
/* A marker batch's control record (batch: size bytes, uncompressed, as
 * Kafka writes markers): 0 with its type and coordinator epoch, or
 * KERR_INVALID_RECORD / KERR_CORRUPT_MESSAGE. */
int plog_marker_of(const uint8_t *batch, size_t size, int16_t *type, int32_t *coordinator_epoch);

/* Wall-clock now, for timestamps compared with record timestamps. */
int64_t plog_now_ms(void);

#endif
