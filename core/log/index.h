/* The two sparse indexes of one log segment, as Kafka stores them:
 *   NNNNNNNNNNNNNNNNNNNN.index      offset index, 8-byte entries:
 *       relative offset int32, file position int32
 *   NNNNNNNNNNNNNNNNNNNN.timeindex  time index, 12-byte entries:
 *       timestamp int64, relative offset int32
 * big-endian (Java's ByteBuffer order), offsets relative to the segment's
 * base offset, so `kafka-dump-log` and samsa read each other's files.
 *
 * Each file is mmap'ed (MAP_SHARED) and its fd closed at once (a node
 * with many segments would run out of descriptors otherwise; Kafka too
 * keeps only the mapping): an append is a store into the page
 * cache, a lookup a binary search over the mapping. The active segment's
 * files are preallocated to segment.index.bytes (a sparse file; the
 * number of entries in use lives in memory, as in Kafka) and trimmed to
 * exactly their entries when the segment is rolled or closed, so a closed
 * file's length tells its entry count. Durability is the owner's:
 * idxf_sync fsyncs the file, which writes back pages dirtied through the
 * mapping too.
 *
 * Not thread-safe: the owning log's locks protect the in-memory state;
 * the mapping is replaced only by idxf_resize, under the owner's
 * exclusive lock. */
#ifndef SAMSA_LOG_INDEX_H
#define SAMSA_LOG_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>


#define OIDX_ENTRY_SIZE 8
#define TIDX_ENTRY_SIZE 12
#define INDEX_SUFFIX ".index"
#define TIMEINDEX_SUFFIX ".timeindex"

/* One mapped index file. */
struct idx_file {
    char *path;          /* owned */
    /* No fd is kept: the mapping holds the file, and the calls that need
     * an fd (resize, reserve, sync) open it for the call, through
     * fdc_open (EMFILE sheds the fd cache first). */
    bool dirty;          /* changed since the last idxf_sync (or created) */
    uint8_t *map;        /* NULL when map_len == 0 */
    size_t map_len;      /* bytes mapped, == file length */
    size_t entry_size;
    size_t n;            /* entries in use */
    size_t backed;       /* bytes [0, backed) have disk blocks behind them
                          * (idxf_reserve); 0 after every (re)map */
};

/* Opens (creating when missing, emptying when truncate) path and maps
 * it whole; n is 0, the caller validates what is there. 0 or an errno
 * value. On failure x is left closed (idxf_close is a no-op). */
int idxf_open(struct idx_file *x, const char *path, size_t entry_size, bool truncate);
/* Unmaps. Idempotent. */
void idxf_close(struct idx_file *x);
/* Sets the file length to bytes rounded down to the entry size (never
 * below n entries) and remaps. 0 or an errno value (x unchanged then). */
int idxf_resize(struct idx_file *x, size_t bytes);
/* Trims the file to its n entries (on roll and close). */
static inline int idxf_trim(struct idx_file *x) { return idxf_resize(x, x->n * x->entry_size); }
/* Entries the file can hold at its current length. */
static inline size_t idxf_capacity(const struct idx_file *x) { return x->map_len / x->entry_size; }
static inline bool idxf_full(const struct idx_file *x) { return x->n >= idxf_capacity(x); }
/* Makes sure the pages that `entries` more entries would be stored in
 * have disk blocks (posix_fallocate), so that storing them through the
 * mapping cannot fault. The files are sparse: on a full disk the first
 * store to a page with no block behind it is SIGBUS, not ENOSPC (tmpfs,
 * ext4, xfs alike), which would kill the server. 0 or an errno value
 * (ENOSPC, EIO); 0 too where the file system cannot preallocate. */
int idxf_reserve(struct idx_file *x, size_t entries);
/* fdatasync of the file through an fd opened for the call (pages stored
 * through the mapping included: they are the inode's page cache); 0 at
 * once when nothing changed since the last sync. Clears dirty. */
int idxf_sync(struct idx_file *x);
/* An fd of the file for the caller to fsync and close (the flusher
 * opens them under its lock and syncs outside), or -1 with errno. */
int idxf_open_fd(const struct idx_file *x);
/* Renames the file to new_path (which x then owns). 0 or an errno value. */
int idxf_rename(struct idx_file *x, char *new_path);

struct offset_position {
    int64_t offset;
    int64_t position;
};

struct timestamp_offset {
    int64_t timestamp;
    int64_t offset;
};

/* ---- offset index ---- */

struct offset_index {
    int64_t base_offset;
    struct idx_file f;
};

/* Entry i (i < n) as absolute offset and position. */
struct offset_position oidx_entry(const struct offset_index *x, size_t i);
/* offset must be larger than the last entry's and fit a relative int32,
 * position must fit an int32 and the index must not be full (the segment
 * layer guarantees all three). False when the entry's page could not be
 * allocated (idxf_reserve): the entry is left out, which a sparse index
 * allows (a lookup scans from the entry before; the next open finds it
 * missing and rebuilds the index). */
bool oidx_append(struct offset_index *x, int64_t offset, int64_t position);
/* The entry with the largest offset <= target, or (base_offset, 0) when
 * there is none: a scan for target starts there. */
struct offset_position oidx_lookup(const struct offset_index *x, int64_t target);
/* The entry with the largest position <= pos, or (base_offset, 0). */
struct offset_position oidx_lookup_position(const struct offset_index *x, int64_t pos);
/* Drops entries with offset >= offset (truncation). */
void oidx_truncate_to(struct offset_index *x, int64_t offset);
/* How many of the first n slots of the file (n may exceed the entries in
 * use: a file's whole capacity is checked at open) form a valid index
 * for a log of log_size bytes: offsets and positions strictly
 * increasing, positions below log_size. A tail of zeros ends the run. */
size_t oidx_valid_prefix(const struct offset_index *x, size_t n, int64_t log_size);

/* ---- time index ---- */

struct time_index {
    int64_t base_offset;
    struct idx_file f;
};

struct timestamp_offset tidx_entry(const struct time_index *x, size_t i);
/* The last entry, or (-1, base_offset) when empty. */
struct timestamp_offset tidx_last(const struct time_index *x);
/* Adds (timestamp, offset) only when timestamp is larger than the last
 * entry's, as Kafka's TimeIndex.maybeAppend: entries then rise strictly
 * in both fields and a binary search on either works. Does nothing when
 * the index is full (the segment rolls before that matters) or when the
 * entry's page cannot be allocated (see oidx_append). */
void tidx_maybe_append(struct time_index *x, int64_t timestamp, int64_t offset);
/* The entry with the largest timestamp <= target, or (-1, base_offset):
 * every batch before that offset's batch has a smaller maxTimestamp, so a
 * search for the first timestamp >= target may start at that batch. */
struct timestamp_offset tidx_lookup(const struct time_index *x, int64_t target);
/* Drops entries with offset >= offset (truncation). */
void tidx_truncate_to(struct time_index *x, int64_t offset);
/* How many of the first n slots hold entries with timestamps strictly
 * increasing, offsets not decreasing and below next_offset (the
 * segment's end). */
size_t tidx_valid_prefix(const struct time_index *x, size_t n, int64_t next_offset);

#endif
