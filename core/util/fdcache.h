/* The process's file-descriptor budget for storage files.
 *
 * A node may host more segment files than the process may hold open
 * (RLIMIT_NOFILE): 100 000 partitions are 100 000 active segments at
 * least. So a segment file is not an open fd but a cached file (struct
 * fdc_file): a path whose fd is opened on demand and kept in one
 * process-wide LRU of at most fdc_capacity() open files. The capacity is
 * a share of the limit (FDC_SHARE_PERCENT); the rest is reserved for
 * sockets and the short-lived files the log opens and closes at once
 * (checkpoints, snapshots, index resizes: fdc_open).
 *
 * Pinning: fdc_get returns a reference (util/sfile.h) to the file's open
 * fd. While anyone but the cache holds a reference (refs > 1) the file
 * is pinned: the cache never drops it, so an fd in use by a read, an
 * append or a queued sendfile stays valid and a file has at most one fd
 * open at a time. An unpinned file may lose its fd at any moment (its
 * next fdc_get opens it again). Writes, reads and fsyncs through
 * different fds of the same file are the same page cache, so nothing
 * depends on which fd did what (fsync through a new fd writes back pages
 * dirtied through an older one and reports writeback errors nobody saw).
 *
 * EMFILE/ENFILE are a resource condition, never a disk failure: every
 * open here first evicts to stay within the capacity, and on EMFILE or
 * ENFILE sheds unpinned files and tries again (FDC_OPEN_TRIES times;
 * util/shed.h, shared with the index files' mappings).
 * When it still fails, the caller gets the errno (fdc_is_resource tells
 * which ones) and the per-thread counter fdc_resource_failures() moves,
 * so callers several layers up (a log open, a flush) can tell a
 * resource failure from an I/O error without every layer passing the
 * errno along.
 *
 * Locking: the cache is split into shards (one when the capacity is
 * small; up to 16 of at least 256 fds each), a file in one shard for
 * its life, each shard with one mutex guarding its LRU, its count and
 * its files' fd and path, and its share of the capacity: workers
 * touching different files rarely meet. A shard's mutex is a leaf: taken
 * under the log's locks (a plog's seg_lock and friends), never the
 * other way; a caller holding one takes another only with trylock (an
 * EMFILE shed). open(2) and close(2) of cached files run under it (an
 * open of an existing file is microseconds, and it keeps a rename from
 * racing an open of the old name). Everything
 * here may be called from any thread. */
#ifndef SAMSA_UTIL_FDCACHE_H
#define SAMSA_UTIL_FDCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sfile;
struct fdc_file;

/* Share of RLIMIT_NOFILE's soft limit the cache may hold open; the other
 * half is for sockets and transient files. */
#define FDC_SHARE_PERCENT 50
/* Never less than this, whatever the limit. */
#define FDC_MIN_CAPACITY 16
#define FDC_OPEN_TRIES 4

/* Raises the soft RLIMIT_NOFILE to the hard limit and logs one line with
 * the result. Call once at start-up, before fdc_init. 0 or an errno. */
int fdc_raise_nofile_limit(void);
/* Sets the capacity: 0 derives it from the current soft limit. Without
 * a call the first use derives it. May be called again (tests). */
void fdc_init(size_t capacity);
size_t fdc_capacity(void);

/* A cached file for path, opened with flags (O_CLOEXEC is added) when
 * needed. With fd >= 0 the open fd is adopted (it counts from now on).
 * Nothing is opened here. The caller owns the result (fdc_free); path
 * is copied. */
struct fdc_file *fdc_file_new(const char *path, int flags, int fd);
/* The same without the copy: path stays the caller's and must outlive f
 * (or its replacement by fdc_file_renamed, after which the caller may
 * free the old one). Saves a string per segment (issue 12's memory per
 * idle partition). */
struct fdc_file *fdc_file_new_borrowed(const char *path, int flags, int fd);
/* Drops the cache's reference and frees f; references held elsewhere
 * keep their fd open until released. */
void fdc_file_free(struct fdc_file *f);
/* A new reference to f's open fd (the caller sfile_unrefs it), opening
 * it when it is closed; pins f while held. NULL with *err set to an
 * errno value when the open fails. */
struct sfile *fdc_get(struct fdc_file *f, int *err);
/* The file's name changed on disk (the caller renamed it while holding a
 * reference, so no open of the old name can happen meanwhile). A
 * borrowed f borrows new_path from now on; the old one is the caller's
 * to free once this returns. */
void fdc_file_renamed(struct fdc_file *f, const char *new_path);
/* Current path, copied into buf (size n). */
void fdc_file_path(struct fdc_file *f, char *buf, size_t n);
/* Whether the cache holds an open fd for f right now (tests). */
bool fdc_file_is_open(struct fdc_file *f);

/* open(2) of a file the caller closes itself soon (not cached), with the
 * shed-and-retry rule above. The fd, or -1 with errno set. */
int fdc_open(const char *path, int flags, mode_t mode);
/* Closes unpinned files until the cache is within its capacity again:
 * for whoever pinned more files at once than the capacity (a flush of
 * many segments) once it released them. Opens do it anyway. */
void fdc_trim(void);
/* opendir(3) with the same rule. */
#include <dirent.h>
DIR *fdc_opendir(const char *path);
/* Closes up to n unpinned files, least recently used first; returns how
 * many were closed. For anyone who got EMFILE (accept, opendir). */
size_t fdc_shed(size_t n);

/* EMFILE or ENFILE. */
bool fdc_is_resource(int err);
/* Resource failures (EMFILE/ENFILE left after shedding) this thread has
 * seen: compare before and after an operation. */
uint64_t fdc_resource_failures(void);
/* Counts one for this thread (for callers that got EMFILE elsewhere). */
void fdc_note_resource_failure(void);

struct fdc_stats {
    size_t open;        /* cached files with an fd now */
    size_t pinned;      /* of those, pinned */
    uint64_t opens;     /* opens of cached files */
    uint64_t evictions; /* fds dropped to stay within the capacity or shed */
    uint64_t resource_errors; /* EMFILE/ENFILE seen by opens (retried or not) */
};
void fdc_get_stats(struct fdc_stats *out);

/* Tests: replaces open(2) for every open here (NULL restores it), to
 * inject EMFILE. */
typedef int (*fdc_open_fn)(const char *path, int flags, mode_t mode);
void fdc_set_open_hook(fdc_open_fn fn);

#endif
