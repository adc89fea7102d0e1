/* Durable file-system steps the log needs: a file or directory entry is
 * only safe after its parent directory has been fsync'ed, and a small
 * metadata file is only safe to overwrite through write-temp-then-rename.
 * All return 0 or an errno value and log nothing: callers know the
 * context for the log line. */
#ifndef SAMSA_LOG_FSUTIL_H
#define SAMSA_LOG_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>

/* fsync(2) on a directory, so entries created, renamed or removed in it
 * survive a crash. */
int fs_sync_dir(const char *dir);

/* Tests: called with the path before every fsync these functions make
 * (fs_sync_dir, fs_write_atomic's file), on the thread making it, so a
 * test can prove which paths sync where. NULL in the server. */
extern void (*fs_sync_observer)(const char *path);
/* fsync of the directory that contains path. */
int fs_sync_parent(const char *path);

/* mkdir -p, syncing the parent of each directory it creates.
 * *created (may be NULL) tells whether the last one was created. */
int fs_mkdirs(const char *path, bool *created);
/* The same without the syncs (sync false): the caller makes the new
 * entries durable itself, fs_sync_parent of path among them, before it
 * relies on them (creation of many partitions syncs them together). */
int fs_mkdirs_ex(const char *path, bool *created, bool sync);

/* Replaces path with exactly len bytes: writes path.tmp, fsyncs it,
 * renames it over path and fsyncs the directory. */
int fs_write_atomic(const char *path, const void *data, size_t len);
/* Writes a new file of exactly len bytes in place (create, write,
 * close), with no fsync and no rename: for a file in a directory just
 * created, whose reader takes a missing or empty file as "not written
 * yet" (a crash may leave it so). */
int fs_write_new(const char *path, const void *data, size_t len);

/* Reads a whole small file (at most max bytes) into a malloc'ed,
 * NUL-terminated buffer. ENOENT when it does not exist, EFBIG when larger. */
int fs_read_small(const char *path, size_t max, char **out, size_t *len);

/* Removes dir and everything in it (no symlink following). */
int fs_remove_tree(const char *dir);

#endif
