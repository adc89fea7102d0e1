/* One log segment: NNNNNNNNNNNNNNNNNNNN.log (20-digit base offset) holding
 * whole record batches back to back, its .index and .timeindex files
 * (log/index.h), and the in-memory state derived from them: size, next
 * offset, largest timestamp.
 *
 * File names may carry a suffix after Kafka's: ".cleaned" while the
 * cleaner writes a replacement, ".swap" while it is swapped in, ".deleted"
 * once retention or the cleaner removed the segment (the files go after
 * file.delete.delay.ms).
 *
 * Locking is the owner's (struct plog): the appender alone writes the
 * file and calls segment_note_batch under the plog's segment lock;
 * readers copy what they need (size, index lookups, a file reference)
 * under that lock and then read the file without it.
 *
 * File descriptors: the .log file is a cached file (util/fdcache.h):
 * whoever needs its fd takes a reference with segment_file, which opens
 * it when the cache had closed it, and holds the reference for as long
 * as it uses the fd (a queued sendfile included). The index files are
 * mapped and their fds closed right after mapping; resizing, reserving
 * and syncing them open the file for the call (log/index.h). A sealed
 * segment therefore costs no fd unless it was used recently, and an
 * active one only its cached .log fd.
 *
 * The .txnindex (aborted transactions) is written by the log
 * (log/plog_txn.c); rename and unlink take it along. */
#ifndef SAMSA_LOG_SEGMENT_H
#define SAMSA_LOG_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/index.h"
#include "proto/record_batch.h"

struct sfile;
struct fdc_file;

#define SEGMENT_NAME_DIGITS 20
#define SEGMENT_LOG_SUFFIX ".log"
#define SEGMENT_CLEANED_SUFFIX ".cleaned"
#define SEGMENT_SWAP_SUFFIX ".swap"
#define SEGMENT_DELETED_SUFFIX ".deleted"
/* The aborted-transaction index (log/plog_txn.c), which follows its
 * segment through segment_rename and segment_unlink. */
#define SEGMENT_TXNINDEX_SUFFIX ".txnindex"

/* Kafka's default segment.index.bytes. */
#define SEGMENT_DEFAULT_INDEX_BYTES (10 * 1024 * 1024)

struct segment_opts {
    int32_t index_interval_bytes; /* index.interval.bytes */
    int32_t max_index_bytes;      /* segment.index.bytes: preallocation of the active segment's indexes */
    int64_t roll_jitter_ms;       /* drawn once per segment from segment.jitter.ms */
    /* segment_create: index files left empty, sized by the first append
     * (unseal_pending): a new log that stays idle costs no resize at its
     * creation and no trim or sync at its close. */
    bool defer_index_room;
};

struct segment {
    int64_t base_offset;
    char *suffix;        /* owned: "" or one of the suffixes above */
    char *log_path;      /* owned: <dir>/<base>.log<suffix>; the fd cache
                          * borrows it, the other files' paths derive from it */
    /* The .log file through the fd cache (util/fdcache.h): open or not;
     * segment_file pins it. Never NULL. */
    struct fdc_file *lf;
    int64_t size;        /* bytes of whole, published batches */
    int64_t next_offset; /* last offset + 1 of the last batch; base_offset when empty */
    /* Largest batch maxTimestamp (-1 when none) and the last offset of
     * the first batch that reached it: Kafka's "shallow" offset, from
     * which a MAX_TIMESTAMP lookup finds the record. */
    int64_t max_timestamp;
    int64_t offset_of_max_timestamp;
    /* maxTimestamp of the first batch (-1: none or no timestamp), Kafka's
     * rollingBasedTimestamp for segment.ms; created_ms (wall clock of
     * creation or open) stands in when there is none. */
    int64_t first_batch_timestamp;
    int64_t created_ms;
    int64_t roll_jitter_ms;
    int32_t index_interval_bytes;
    int32_t max_index_bytes;
    int64_t bytes_since_last_index_entry;
    struct offset_index oidx;
    struct time_index tidx;
    /* The active segment of a log opened after a clean shutdown keeps its
     * index files as that close trimmed them (exactly their entries, which
     * the load validated) until its first append or truncation sizes them
     * back to max_index_bytes (segment_unseal): an idle log's
     * restart resizes nothing, and its next close trims nothing. */
    bool unseal_pending;
    /* Sealed by a roll that found maint_lock held: the index files still
     * have their room, trimmed by the holder when it lets go of
     * maint_lock (plog_maint_unlock). Changed under seg_lock (write),
     * read by maint_lock's holder. */
    bool trim_pending;
};

/* "<dir>/<20-digit base><suffix>", malloc'ed (the caller frees). */
char *segment_file_path(const char *dir, int64_t base_offset, const char *suffix);
/* Parses a file name of exactly 20 digits followed by suffix. */
bool segment_parse_name(const char *name, const char *suffix, int64_t *base_offset);

/* Creates an empty segment (.log, .index and .timeindex, each name with
 * file_suffix appended; leftovers of those names are emptied), indexes
 * preallocated to o->max_index_bytes, and with sync_dir makes the
 * directory entries durable (else the caller must fs_sync_dir before
 * anything in the segment counts as durable: a roll on the append path
 * leaves it to the flusher). 0 or KERR_KAFKA_STORAGE_ERROR (logged). The
 * caller owns *out (segment_free). */
int segment_create(const char *dir, int64_t base_offset, const struct segment_opts *o, const char *file_suffix,
                   bool sync_dir, struct segment **out);

/* Opens an existing segment (files named with file_suffix); its state is
 * empty until segment_load. The .log file is opened when first used
 * (segment_load opens it only when it is not empty). Missing index files
 * are created empty (the load rebuilds them). 0 or
 * KERR_KAFKA_STORAGE_ERROR (logged). */
int segment_open(const char *dir, int64_t base_offset, const struct segment_opts *o, const char *file_suffix,
                 struct segment **out);

enum segment_load_mode {
    /* A log closed cleanly, or a segment below the recovery point: take
     * the index files as they are when they are consistent (exactly their
     * entries, rising, inside the file), and read only the batches after
     * the last offset-index entry. Anything inconsistent falls back to
     * SEGMENT_LOAD_REBUILD. */
    SEGMENT_LOAD_TRUST,
    /* Rebuild both indexes from the batch headers. */
    SEGMENT_LOAD_REBUILD,
    /* Unflushed data after a crash: rebuild and check every batch's CRC.
     * Entries the index files hold already as a rebuild would store them
     * are kept, not stored again: files that agree with the batches
     * throughout are left untouched (not resized, owing no sync). */
    SEGMENT_LOAD_RECOVER,
};

struct segment_load_result {
    int64_t truncated_bytes; /* cut from the end of the file */
    int64_t truncated_at;    /* file position of the first bad batch */
    const char *reason;      /* static text, when truncated_bytes > 0 */
    int batches;             /* batches read (all of them unless TRUST held) */
    bool rebuilt;            /* index entries were stored again (REBUILD; RECOVER from the first entry the files did not hold) */
    const char *rebuild_reason; /* why TRUST fell back, static text */
};

/* Called for every batch a REBUILD or RECOVER scan accepts (the
 * leader-epoch cache is rebuilt from them). */
struct segment_visitor {
    void (*batch)(void *ctx, const struct rb_header *h);
    void *ctx;
};

/* Loads the segment's state (see the modes). Every batch read must have
 * a sane length, magic 2, offsets above the previous batch's and below
 * next_segment_base (INT64_MAX for the last segment), and a relative
 * offset that fits an int32; with RECOVER its CRC must match too. The
 * file is cut at the first batch that fails, and the cut made durable.
 * active: the segment will take appends, so its indexes are sized for
 * growth; otherwise they are trimmed. v may be NULL. Returns 0 or
 * KERR_KAFKA_STORAGE_ERROR (logged) on an I/O error. */
int segment_load(struct segment *s, enum segment_load_mode mode, int64_t next_segment_base, bool active,
                 struct segment_load_result *res, const struct segment_visitor *v);

/* Records a batch written at position in the in-memory state: size, next
 * offset, max timestamp, and an index entry once index_interval_bytes
 * have gone by since the last one (Kafka's LogSegment.append rule), when
 * the index has room. */
void segment_note_batch(struct segment *s, const struct rb_header *h, int64_t position);

/* Free index slots: an append of n batches needs n of each (plus one
 * time-index slot for the seal), else the log rolls first. */
size_t segment_index_room(const struct segment *s);

/* Allocates disk blocks for the index slots an append of n batches may
 * fill (as segment_index_room counts them), before its bytes are written:
 * on a full disk the append then fails with ENOSPC instead of the index
 * store faulting (see idxf_reserve). 0 or an errno value. */
int segment_reserve_index(struct segment *s, size_t nbatches);

/* The segment stops being the active one: the final max timestamp goes
 * into the time index (as Kafka's onBecomeInactiveSegment) and both
 * index files are trimmed to their entries. 0 or an errno value. */
int segment_seal(struct segment *s);

/* segment_seal in two steps, for a roll that must not hold readers out
 * while the files are trimmed: segment_seal_entries stores the final
 * time-index entry and marks both index files dirty (under the
 * exclusion a store needs); segment_seal_files then trims the files to
 * their entries without unmapping them (idxf_shorten), which readers
 * need not be excluded from. 0 or an errno value. */
void segment_seal_entries(struct segment *s);
int segment_seal_files(struct segment *s);

/* The segment is sealed and its index files were just made durable
 * (plog_flush): nothing to sync for them until they change again. */
void segment_mark_indexes_synced(struct segment *s);

/* A reference to the .log file's open fd (the caller sfile_unrefs it),
 * opened through the fd cache when it is not open; while held, the fd
 * stays valid (pinned). NULL with *err an errno value (fdc_is_resource:
 * out of descriptors, not a disk failure). Any thread: the cache has
 * its own lock; s must stay alive meanwhile (seg_lock or the owner's
 * exclusion). */
struct sfile *segment_file(struct segment *s, int *err);

/* Sizes the indexes for appends again (the segment becomes active after
 * a truncation removed the ones after it). 0 or an errno value. */
int segment_unseal(struct segment *s);

/* Writes len bytes at s->size (without changing s->size: the caller
 * publishes with segment_note_batch). On failure the partial write is cut
 * off again; returns 0, or an errno value with *cut_ok telling whether the
 * file is back to s->size. */
int segment_write(struct segment *s, const void *data, size_t len, bool *cut_ok);

/* fdatasync of the log file. 0 or an errno value. */
int segment_sync(struct segment *s);

/* Cuts the file back to s->size (after a failed write or sync). 0 or an
 * errno value. */
int segment_cut_to_size(struct segment *s);

/* Removes every batch whose last offset is >= offset (whole batches:
 * Kafka truncates at batch boundaries) from the file and the indexes,
 * and reloads the state. 0 or KERR_KAFKA_STORAGE_ERROR (logged). */
int segment_truncate_to(struct segment *s, int64_t offset);

/* Renames the segment's three files to their plain names + new_suffix
 * ("" for the plain names). 0 or KERR_KAFKA_STORAGE_ERROR (logged); on
 * failure some files may carry the new suffix (open handles recovery). */
int segment_rename(struct segment *s, const char *new_suffix);

/* Unlinks the segment's files (whatever their suffix). 0 or an errno value. */
int segment_unlink(struct segment *s);

/* Wall-clock milliseconds of the .log file's last modification. */
int64_t segment_last_modified(const struct segment *s);

/* Kafka's LogSegment.largestTimestamp: the largest record timestamp, or
 * the file's modification time when the segment has no timestamps. */
int64_t segment_largest_timestamp(const struct segment *s);

/* Drops the segment's file references and frees it; readers' references
 * keep the files open. Files stay on disk. */
void segment_free(struct segment *s);

#endif
