/* The two sparse indexes of one log segment, as Kafka stores them:
 *   NNNNNNNNNNNNNNNNNNNN.index      offset index, 8-byte entries:
 *       relative offset int32, file position int32
 *   NNNNNNNNNNNNNNNNNNNN.timeindex  time index, 12-byte entries:
 *       timestamp int64, relative offset int32
 * big-endian (Java's ByteBuffer order), offsets relative to the segment's
 * base offset, so `kafka-dump-log` and samsa read each other's files.
 *
 * Each file is mmap'ed (MAP_SHARED) on demand and its fd closed at once
 * (a node with many segments would run out of descriptors otherwise;
 * Kafka too keeps only the mapping): an append is a store into the page
 * cache, a lookup a binary search over the mapping. The active segment's
 * files are preallocated to segment.index.bytes (a sparse file; the
 * number of entries in use lives in memory, as in Kafka) and trimmed to
 * exactly their entries when the segment is rolled or closed, so a closed
 * file's length tells its entry count. Durability is the owner's:
 * idxf_sync fsyncs the file, which writes back pages dirtied through the
 * mapping too (an unmapped file's dirty pages stay in the page cache).
 *
 * Mappings are a budget, like fds (util/fdcache.h): every mapping is one
 * of the process's vm.max_map_count areas (65530 by default), and 100 000
 * partitions have at least 200 000 index files. So a file is mapped when
 * first used, and the process keeps at most idxf_map_budget() of them
 * mapped (IDXF_MAP_SHARE_PERCENT of vm.max_map_count; the rest is for
 * malloc, thread stacks, libraries), unmapping the least recently used
 * unpinned ones beyond it (second chance: a use sets a bit, the sweep
 * clears it once before it unmaps). ENOMEM from mmap is the same
 * resource condition as EMFILE: unmap a share and retry; when it still
 * fails an append leaves the entry out (a sparse index allows it) and a
 * lookup answers "scan from the segment's start", never a storage error.
 * Every access to the mapping is inside index.c, pinned for its
 * duration (a pinned file is never unmapped), so the budget is safe to
 * enforce from any thread.
 *
 * Not thread-safe otherwise: the owning log's locks protect the
 * in-memory state (n, the length); the length changes only by
 * idxf_resize, under the owner's exclusive lock. */
#ifndef SAMSA_LOG_INDEX_H
#define SAMSA_LOG_INDEX_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/lru.h"
#include <sys/types.h>


#define OIDX_ENTRY_SIZE 8
#define TIDX_ENTRY_SIZE 12
#define INDEX_SUFFIX ".index"
#define TIMEINDEX_SUFFIX ".timeindex"

/* One mapped index file. */
struct idx_file {
    /* The name is the owner's log file name with ext in place of ".log"
     * (idxf_path): borrowed, so that a segment's three names cost one
     * string (at 100 000 idle partitions two more were 16 MB). The owner
     * keeps *log_path valid while x is open. NULL when closed. */
    char *const *log_path;
    /* No fd is kept: the mapping holds the file, and the calls that need
     * an fd (resize, reserve, sync) open it for the call, through
     * fdc_open (EMFILE sheds the fd cache first). */
    bool dirty;          /* changed since the last idxf_sync (or created) */
    atomic_bool used;    /* pinned since the budget's sweep last looked */
    /* Small fields packed: two of these per segment, one segment at
     * least per partition. */
    bool time_index;     /* the name ends in TIMEINDEX_SUFFIX, else INDEX_SUFFIX */
    uint8_t entry_size;
    _Atomic int32_t users; /* pins; -1 while the budget unmaps it */
    _Atomic(uint8_t *) map; /* NULL when not mapped now (empty or unmapped by the budget) */
    size_t map_len;      /* file length (what a mapping covers) */
    size_t n;            /* entries in use */
    size_t backed;       /* bytes [0, backed) have disk blocks behind them
                          * (idxf_reserve); 0 after every resize */
    struct lru_node node; /* in the budget's list while mapped; under its lock */
};

/* Share of vm.max_map_count index mappings may use. */
#define IDXF_MAP_SHARE_PERCENT 50
#define IDXF_MAP_MIN_BUDGET 8
#define IDXF_MAP_TRIES 4

/* Sets the mapping budget: 0 derives it from vm.max_map_count. Without a
 * call the first mapping derives it. May be called again (tests); a
 * lower budget is enforced at the next mapping. */
void idxf_set_map_budget(size_t budget);
size_t idxf_map_budget(void);
/* Unmaps up to n unpinned files, least recently used first; how many. */
size_t idxf_shed_maps(size_t n);

struct idxf_map_stats {
    size_t mapped;        /* files mapped now */
    uint64_t maps;        /* mmaps done */
    uint64_t unmaps;      /* unmapped by the budget or a shed */
    uint64_t enomem;      /* ENOMEM seen by mmap (retried or not) */
};
void idxf_get_map_stats(struct idxf_map_stats *out);

/* Tests: replaces mmap(2) for index files (NULL restores it), to inject
 * ENOMEM. */
typedef void *(*idxf_mmap_fn)(void *addr, size_t len, int prot, int flags, int fd, off_t off);
void idxf_set_mmap_hook(idxf_mmap_fn fn);

/* Opens (creating when missing, emptying when truncate) path and notes
 * its length (the mapping comes with the first use); n is 0, the caller
 * validates what is there. An existing file is only stat'ed (one system
 * call: an idle log's restart opens thousands); *missing (may be NULL)
 * tells whether it did not exist and was created empty. 0 or an errno
 * value. On failure x is left closed (idxf_close is a no-op). */
/* ext is INDEX_SUFFIX or TIMEINDEX_SUFFIX; entry_size at most 255. */
int idxf_open(struct idx_file *x, char *const *log_path, const char *ext, size_t entry_size, bool truncate,
              bool *missing);
/* x's file name, into buf (size n). */
void idxf_path(const struct idx_file *x, char *buf, size_t n);
/* Unmaps. Idempotent. */
void idxf_close(struct idx_file *x);
/* Sets the file length to bytes rounded down to the entry size (never
 * below n entries); the next use maps the new length. 0 or an errno
 * value (x unchanged then). */
int idxf_resize(struct idx_file *x, size_t bytes);
/* Trims the file to its n entries (on roll and close). */
static inline int idxf_trim(struct idx_file *x) { return idxf_resize(x, x->n * x->entry_size); }
/* Trims the file to its n entries and leaves its mapping (and map_len,
 * the mapping's length) as they are, so that readers holding pins, or
 * taking them meanwhile, need not be excluded: for an index that gets
 * no more entries (a sealed segment's), whose readers touch only its n
 * entries, and never past the file's end. The owner excludes other
 * resizes and stores, and marks the file dirty. A later idxf_resize
 * finds the file shorter than map_len and sets its length anyway. 0 or
 * an errno value. */
int idxf_shorten(struct idx_file *x);
/* Entries the file can hold at its current length. */
static inline size_t idxf_capacity(const struct idx_file *x) { return x->map_len / x->entry_size; }
static inline bool idxf_full(const struct idx_file *x) { return x->n >= idxf_capacity(x); }
/* Makes sure the pages that `entries` more entries would be stored in
 * have disk blocks (posix_fallocate), so that storing them through the
 * mapping cannot fault. The files are sparse: on a full disk the first
 * store to a page with no block behind it is SIGBUS, not ENOSPC (tmpfs,
 * ext4, xfs alike), which would kill the server. 0 or an errno value
 * (ENOSPC, EIO); 0 too where the file system cannot preallocate. Also
 * faults those pages in (mapping the file first if need be), so that the
 * stores, made under the log's seg_lock, do not wait on the kernel. By
 * the index's only writer. */
int idxf_reserve(struct idx_file *x, size_t entries);
/* fdatasync of the file through an fd opened for the call (pages stored
 * through the mapping included: they are the inode's page cache); 0 at
 * once when nothing changed since the last sync. Clears dirty. */
int idxf_sync(struct idx_file *x);
/* An fd of the file for the caller to fsync and close (the flusher
 * opens them under its lock and syncs outside), or -1 with errno. */
int idxf_open_fd(const struct idx_file *x);
/* Renames the file from to to, the names it has before and after the
 * owner's log file is renamed (the owner renames that one too, which
 * makes idxf_path follow). 0 or an errno value. */
int idxf_rename(struct idx_file *x, const char *from, const char *to);

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
