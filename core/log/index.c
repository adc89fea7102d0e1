#include "log/index.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/fdcache.h"

/* ---- the file ---- */

/* The file's fd for one call (closed by the caller): the mapping holds
 * the file otherwise (see idx_file). Through the fd cache's open, which
 * sheds cached fds on EMFILE. */
static int open_fd(const struct idx_file *x, int extra_flags)
{
    return fdc_open(x->path, O_RDWR | extra_flags, 0644);
}

static int map_file(struct idx_file *x, int fd, size_t len)
{
    /* A new length may have dropped blocks (a trim) or added holes. */
    x->backed = 0;
    if (len == 0) {
        x->map = NULL;
        x->map_len = 0;
        return 0;
    }
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        /* ENOMEM: out of mappings (vm.max_map_count) or address space, a
         * resource of the process like EMFILE, not a disk failure. */
        if (errno == ENOMEM)
            fdc_note_resource_failure();
        return errno;
    }
    x->map = m;
    x->map_len = len;
    return 0;
}

static void unmap_file(struct idx_file *x)
{
    if (x->map)
        munmap(x->map, x->map_len);
    x->map = NULL;
    x->map_len = 0;
}

int idxf_open(struct idx_file *x, const char *path, size_t entry_size, bool truncate)
{
    memset(x, 0, sizeof *x);
    x->entry_size = entry_size;
    x->path = xstrdup(path);
    int fd = open_fd(x, O_CREAT | (truncate ? O_TRUNC : 0));
    if (fd < 0) {
        int e = errno;
        free(x->path);
        x->path = NULL;
        return e;
    }
    struct stat st;
    int e = fstat(fd, &st) != 0 ? errno : map_file(x, fd, (size_t)st.st_size);
    close(fd); /* the mapping keeps the file */
    if (e) {
        free(x->path);
        x->path = NULL;
        return e;
    }
    x->dirty = truncate;
    return 0;
}

void idxf_close(struct idx_file *x)
{
    unmap_file(x);
    free(x->path);
    x->path = NULL;
    x->n = 0;
    x->dirty = false;
}

int idxf_resize(struct idx_file *x, size_t bytes)
{
    bytes -= bytes % x->entry_size;
    if (bytes < x->n * x->entry_size)
        bytes = x->n * x->entry_size;
    if (bytes == x->map_len)
        return 0;
    int fd = open_fd(x, 0);
    if (fd < 0)
        return errno;
    /* Unmap before shrinking: touching a mapped page past the end of the
     * file would be SIGBUS. */
    unmap_file(x);
    int e = 0;
    while (ftruncate(fd, (off_t)bytes) != 0) {
        if (errno == EINTR)
            continue;
        e = errno;
        struct stat st;
        /* Put the old mapping back so x stays usable. */
        if (fstat(fd, &st) == 0)
            map_file(x, fd, (size_t)st.st_size - (size_t)st.st_size % x->entry_size);
        break;
    }
    if (e == 0)
        e = map_file(x, fd, bytes);
    close(fd);
    x->dirty = true;
    return e;
}

int idxf_reserve(struct idx_file *x, size_t entries)
{
    size_t want = (x->n + entries) * x->entry_size;
    if (want > x->map_len)
        want = x->map_len;
    if (want <= x->backed)
        return 0;
    /* Whole pages: a store faults in the page, whatever the block size.
     * Blocks already there cost nothing to allocate again. The fd is
     * opened for the call: once per page of entries. */
    long ps = sysconf(_SC_PAGESIZE);
    size_t page = ps > 0 ? (size_t)ps : 4096;
    size_t from = x->backed - x->backed % page;
    size_t to = want + (page - want % page) % page;
    if (to > x->map_len)
        to = x->map_len;
    int fd = open_fd(x, 0);
    if (fd < 0)
        return errno;
    int e;
    while ((e = posix_fallocate(fd, (off_t)from, (off_t)(to - from))) == EINTR)
        ;
    close(fd);
    if (e == EOPNOTSUPP || e == ENOSYS || e == EINVAL)
        e = 0; /* cannot preallocate here: stores take their chances, as before */
    if (e)
        return e;
    x->backed = to;
    return 0;
}

int idxf_sync(struct idx_file *x)
{
    if (!x->dirty || !x->path)
        return 0; /* durable already */
    int fd = open_fd(x, 0);
    if (fd < 0)
        return errno;
    int e = 0;
    while (fdatasync(fd) != 0) {
        if (errno != EINTR) {
            e = errno;
            break;
        }
    }
    close(fd);
    if (e == 0)
        x->dirty = false;
    return e;
}

int idxf_open_fd(const struct idx_file *x) { return open_fd(x, 0); }

int idxf_rename(struct idx_file *x, char *new_path)
{
    if (rename(x->path, new_path) != 0)
        return errno;
    free(x->path);
    x->path = new_path;
    return 0;
}

/* ---- offset index ---- */

static inline int32_t rd32(const uint8_t *p) { return (int32_t)be32_read(p); }
static inline int64_t rd64(const uint8_t *p) { return (int64_t)be64_read(p); }

struct offset_position oidx_entry(const struct offset_index *x, size_t i)
{
    const uint8_t *p = x->f.map + i * OIDX_ENTRY_SIZE;
    return (struct offset_position){x->base_offset + rd32(p), rd32(p + 4)};
}

bool oidx_append(struct offset_index *x, int64_t offset, int64_t position)
{
    if (idxf_reserve(&x->f, 1) != 0)
        return false;
    uint8_t *p = x->f.map + x->f.n * OIDX_ENTRY_SIZE;
    be32_write(p, (uint32_t)(int32_t)(offset - x->base_offset));
    be32_write(p + 4, (uint32_t)(int32_t)position);
    x->f.n++;
    x->f.dirty = true;
    return true;
}

struct offset_position oidx_lookup(const struct offset_index *x, int64_t target)
{
    struct offset_position r = {x->base_offset, 0};
    if (target < x->base_offset)
        return r;
    int64_t rel = target - x->base_offset;
    /* The last entry with rel_offset <= rel. */
    size_t lo = 0, hi = x->f.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rd32(x->f.map + mid * OIDX_ENTRY_SIZE) <= rel)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 ? oidx_entry(x, lo - 1) : r;
}

struct offset_position oidx_lookup_position(const struct offset_index *x, int64_t pos)
{
    struct offset_position r = {x->base_offset, 0};
    size_t lo = 0, hi = x->f.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rd32(x->f.map + mid * OIDX_ENTRY_SIZE + 4) <= pos)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 ? oidx_entry(x, lo - 1) : r;
}

void oidx_truncate_to(struct offset_index *x, int64_t offset)
{
    while (x->f.n > 0 && oidx_entry(x, x->f.n - 1).offset >= offset)
        x->f.n--;
}

size_t oidx_valid_prefix(const struct offset_index *x, size_t n, int64_t log_size)
{
    size_t cap = n < idxf_capacity(&x->f) ? n : idxf_capacity(&x->f);
    int64_t prev_rel = -1, prev_pos = -1;
    size_t i = 0;
    for (; i < cap; i++) {
        const uint8_t *p = x->f.map + i * OIDX_ENTRY_SIZE;
        int64_t rel = rd32(p), pos = rd32(p + 4);
        if (rel <= prev_rel || pos <= prev_pos || pos >= log_size)
            break;
        prev_rel = rel;
        prev_pos = pos;
    }
    return i;
}

/* ---- time index ---- */

struct timestamp_offset tidx_entry(const struct time_index *x, size_t i)
{
    const uint8_t *p = x->f.map + i * TIDX_ENTRY_SIZE;
    return (struct timestamp_offset){rd64(p), x->base_offset + rd32(p + 8)};
}

struct timestamp_offset tidx_last(const struct time_index *x)
{
    if (x->f.n == 0)
        return (struct timestamp_offset){-1, x->base_offset};
    return tidx_entry(x, x->f.n - 1);
}

void tidx_maybe_append(struct time_index *x, int64_t timestamp, int64_t offset)
{
    if (x->f.n > 0 && timestamp <= tidx_entry(x, x->f.n - 1).timestamp)
        return;
    if (idxf_full(&x->f) || idxf_reserve(&x->f, 1) != 0)
        return;
    uint8_t *p = x->f.map + x->f.n * TIDX_ENTRY_SIZE;
    be64_write(p, (uint64_t)timestamp);
    be32_write(p + 8, (uint32_t)(int32_t)(offset - x->base_offset));
    x->f.n++;
    x->f.dirty = true;
}

struct timestamp_offset tidx_lookup(const struct time_index *x, int64_t target)
{
    struct timestamp_offset r = {-1, x->base_offset};
    size_t lo = 0, hi = x->f.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rd64(x->f.map + mid * TIDX_ENTRY_SIZE) <= target)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 ? tidx_entry(x, lo - 1) : r;
}

void tidx_truncate_to(struct time_index *x, int64_t offset)
{
    while (x->f.n > 0 && tidx_entry(x, x->f.n - 1).offset >= offset)
        x->f.n--;
}

size_t tidx_valid_prefix(const struct time_index *x, size_t n, int64_t next_offset)
{
    size_t cap = n < idxf_capacity(&x->f) ? n : idxf_capacity(&x->f);
    int64_t prev_ts = INT64_MIN, prev_off = INT64_MIN;
    size_t i = 0;
    for (; i < cap; i++) {
        struct timestamp_offset e = tidx_entry(x, i);
        if (e.timestamp <= prev_ts || e.offset < prev_off || e.offset < x->base_offset || e.offset >= next_offset)
            break;
        prev_ts = e.timestamp;
        prev_off = e.offset;
    }
    return i;
}
