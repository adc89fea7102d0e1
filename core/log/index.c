#include "log/index.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/fdcache.h"
#include "util/lru.h"
#include "util/shed.h"
#include "util/slog.h"

/* ---- the mapping budget ---- */

static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;
/* Mapped files, most recently (re)considered at the head; sentinel. */
static struct lru_node mlist = {.prev = &mlist, .next = &mlist};
static size_t nmapped, budget;
static uint64_t nmaps, nunmaps, nenomem;
static _Atomic int64_t warned;
static _Atomic(idxf_mmap_fn) mmap_hook;

static size_t derived_budget(void)
{
    FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
    unsigned long long m = 0;
    if (!f || fscanf(f, "%llu", &m) != 1 || m == 0)
        m = 65530; /* Linux's default */
    if (f)
        fclose(f);
    size_t b = (size_t)(m * IDXF_MAP_SHARE_PERCENT / 100);
    return b < IDXF_MAP_MIN_BUDGET ? IDXF_MAP_MIN_BUDGET : b;
}

/* Under map_lock. */
static size_t budget_locked(void)
{
    if (!budget)
        budget = derived_budget();
    return budget;
}

void idxf_set_map_budget(size_t b)
{
    pthread_mutex_lock(&map_lock);
    budget = b ? b : derived_budget();
    pthread_mutex_unlock(&map_lock);
}

size_t idxf_map_budget(void)
{
    pthread_mutex_lock(&map_lock);
    size_t b = budget_locked();
    pthread_mutex_unlock(&map_lock);
    return b;
}

void idxf_set_mmap_hook(idxf_mmap_fn fn) { atomic_store(&mmap_hook, fn); }

/* Unmaps x, which nobody pins (users is -1 or the owner excludes pins).
 * Under map_lock. */
static void unmap_locked(struct idx_file *x)
{
    uint8_t *m = atomic_load_explicit(&x->map, memory_order_relaxed);
    if (!m)
        return;
    munmap(m, x->map_len);
    atomic_store_explicit(&x->map, NULL, memory_order_release);
    lru_unlink(&x->node);
    nmapped--;
}

/* Unmaps up to n unpinned files from the tail, giving a recently used one
 * a second chance (its bit cleared, moved to the head). Under map_lock. */
static size_t evict_locked(size_t n)
{
    size_t done = 0, steps = 2 * nmapped + 1;
    struct lru_node *node = mlist.prev;
    while (node != &mlist && done < n && steps-- > 0) {
        struct lru_node *prev = node->prev;
        struct idx_file *x = lru_entry(node, struct idx_file, node);
        if (atomic_exchange_explicit(&x->used, false, memory_order_relaxed)) {
            lru_move_head(&mlist, node);
        } else {
            int32_t zero = 0;
            /* -1 keeps pins out while it goes; a pin that comes now waits
             * for map_lock and then maps it again. */
            if (atomic_compare_exchange_strong_explicit(&x->users, &zero, -1, memory_order_acq_rel,
                                                        memory_order_relaxed)) {
                unmap_locked(x);
                atomic_store_explicit(&x->users, 0, memory_order_release);
                nunmaps++;
                done++;
            }
        }
        node = prev;
    }
    return done;
}

size_t idxf_shed_maps(size_t n)
{
    pthread_mutex_lock(&map_lock);
    size_t k = evict_locked(n);
    pthread_mutex_unlock(&map_lock);
    return k;
}

void idxf_get_map_stats(struct idxf_map_stats *out)
{
    pthread_mutex_lock(&map_lock);
    out->mapped = nmapped;
    out->maps = nmaps;
    out->unmaps = nunmaps;
    out->enomem = nenomem;
    pthread_mutex_unlock(&map_lock);
}

struct map_try {
    size_t len;
    int fd;
    void *m;
};

static int map_attempt(void *arg)
{
    struct map_try *t = arg;
    idxf_mmap_fn h = atomic_load(&mmap_hook);
    t->m = h ? h(NULL, t->len, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, 0)
             : mmap(NULL, t->len, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, 0);
    return t->m != MAP_FAILED ? 0 : errno;
}

/* Out of map areas (vm.max_map_count) or address space: a resource of
 * the process, not a disk failure. */
static bool map_is_resource(int err) { return err == ENOMEM; }

/* Under map_lock (map_locked's caller holds it). */
static size_t map_shed(void *arg)
{
    (void)arg;
    return evict_locked(nmapped / 4 > 32 ? nmapped / 4 : 32);
}

/* Maps x whole (x pinned by the caller, map_len > 0), within the budget,
 * shedding on ENOMEM. The mapping or NULL (errno set). Under map_lock. */
static uint8_t *map_locked(struct idx_file *x)
{
    size_t b = budget_locked();
    if (nmapped >= b)
        evict_locked(nmapped - b + 1);
    char path[PATH_MAX];
    idxf_path(x, path, sizeof path);
    int fd = fdc_open(path, O_RDWR, 0);
    if (fd < 0)
        return NULL;
    struct map_try t = {x->map_len, fd, MAP_FAILED};
    struct shed_op op = {
        .attempt = map_attempt,
        .is_resource = map_is_resource,
        .shed = map_shed,
        .arg = &t,
        .tries = IDXF_MAP_TRIES,
        .who = "index files",
        .doing = "mapping",
        .path = path,
        .warned = &warned,
        .resource_errors = &nenomem,
    };
    int e = shed_retry(&op);
    close(fd); /* the mapping keeps the file */
    if (e) {
        if (e == ENOMEM)
            fdc_note_resource_failure();
        errno = e;
        return NULL;
    }
    uint8_t *m = t.m;
    nmaps++;
    nmapped++;
    atomic_store_explicit(&x->map, (uint8_t *)m, memory_order_release);
    lru_push_head(&mlist, &x->node);
    return m;
}

/* Pins x and returns its mapping, mapping it when needed; NULL when the
 * file is empty or cannot be mapped (then x is not pinned). A pinned
 * file keeps its mapping until unpin. Any thread. */
static uint8_t *pin(struct idx_file *x)
{
    if (x->map_len == 0 || !x->log_path)
        return NULL;
    int32_t u = atomic_load_explicit(&x->users, memory_order_relaxed);
    for (;;) {
        if (u < 0) {
            /* Being unmapped under map_lock: wait for it to finish. */
            pthread_mutex_lock(&map_lock);
            pthread_mutex_unlock(&map_lock);
            u = atomic_load_explicit(&x->users, memory_order_relaxed);
            continue;
        }
        if (atomic_compare_exchange_weak_explicit(&x->users, &u, u + 1, memory_order_acquire,
                                                  memory_order_relaxed))
            break;
    }
    atomic_store_explicit(&x->used, true, memory_order_relaxed);
    uint8_t *m = atomic_load_explicit(&x->map, memory_order_acquire);
    if (m)
        return m;
    pthread_mutex_lock(&map_lock);
    m = atomic_load_explicit(&x->map, memory_order_relaxed);
    if (!m)
        m = map_locked(x);
    pthread_mutex_unlock(&map_lock);
    if (!m)
        atomic_fetch_sub_explicit(&x->users, 1, memory_order_release);
    return m;
}

static void unpin(struct idx_file *x) { atomic_fetch_sub_explicit(&x->users, 1, memory_order_release); }

/* Drops x's mapping (the owner excludes pins: resize, close). */
static void drop_map(struct idx_file *x)
{
    pthread_mutex_lock(&map_lock);
    unmap_locked(x);
    pthread_mutex_unlock(&map_lock);
}

/* ---- the file ---- */

/* The file's fd for one call (closed by the caller): the mapping holds
 * the file otherwise (see idx_file). Through the fd cache's open, which
 * sheds cached fds on EMFILE. */
static int open_fd(const struct idx_file *x, int extra_flags)
{
    char path[PATH_MAX];
    idxf_path(x, path, sizeof path);
    return fdc_open(path, O_RDWR | extra_flags, 0644);
}

void idxf_path(const struct idx_file *x, char *buf, size_t n)
{
    const char *ext = x->time_index ? TIMEINDEX_SUFFIX : INDEX_SUFFIX;
    const char *lp = *x->log_path;
    const char *slash = strrchr(lp, '/');
    const char *base = slash ? slash + 1 : lp;
    /* "<digits>.log<suffix>": the first dot of the name starts ".log". */
    const char *dot = strchr(base, '.');
    if (!dot) {
        snprintf(buf, n, "%s%s", lp, ext);
        return;
    }
    const char *rest = strncmp(dot, ".log", 4) == 0 ? dot + 4 : dot;
    snprintf(buf, n, "%.*s%s%s", (int)(dot - lp), lp, ext, rest);
}

int idxf_open(struct idx_file *x, char *const *log_path, const char *ext, size_t entry_size, bool truncate,
              bool *missing)
{
    memset(x, 0, sizeof *x);
    x->entry_size = (uint8_t)entry_size;
    x->log_path = log_path;
    x->time_index = strcmp(ext, TIMEINDEX_SUFFIX) == 0;
    if (missing)
        *missing = false;
    struct stat st;
    if (!truncate) {
        /* The usual case at start-up: the file is there, its length is
         * all that is needed now (no fd: mapped when first used). */
        char path[PATH_MAX];
        idxf_path(x, path, sizeof path);
        if (stat(path, &st) == 0) {
            x->map_len = (size_t)st.st_size;
            return 0;
        }
        if (errno != ENOENT) {
            int e = errno;
            x->log_path = NULL;
            return e;
        }
        if (missing)
            *missing = true;
    }
    /* A file this call creates is empty and reaches the disk with the
     * directory's sync, which every creation does: no data sync owed
     * (dirty). One that was there and is cut to nothing owes one. */
    bool fresh = false;
    int fd = -1;
    if (truncate) {
        fd = open_fd(x, O_CREAT | O_EXCL);
        fresh = fd >= 0;
    }
    if (fd < 0 && (!truncate || errno == EEXIST))
        fd = open_fd(x, O_CREAT | (truncate ? O_TRUNC : 0));
    if (fd < 0) {
        int e = errno;
        x->log_path = NULL;
        return e;
    }
    int e = fstat(fd, &st) != 0 ? errno : 0;
    close(fd); /* mapped when first used */
    if (e) {
        x->log_path = NULL;
        return e;
    }
    x->map_len = (size_t)st.st_size;
    x->dirty = truncate && !fresh;
    return 0;
}

void idxf_close(struct idx_file *x)
{
    drop_map(x);
    x->log_path = NULL;
    x->map_len = 0;
    x->n = 0;
    x->dirty = false;
}

/* The file's length through a descriptor of the caller; -1 on error. */
static off_t file_length(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 ? st.st_size : -1;
}

/* ftruncate, retried on EINTR: 0 or the errno. */
static int truncate_fd(int fd, size_t bytes)
{
    while (ftruncate(fd, (off_t)bytes) != 0)
        if (errno != EINTR)
            return errno;
    return 0;
}


int idxf_resize(struct idx_file *x, size_t bytes)
{
    bytes -= bytes % x->entry_size;
    if (bytes < x->n * x->entry_size)
        bytes = x->n * x->entry_size;
    if (bytes == x->map_len && x->map_len == 0)
        return 0;
    int fd = open_fd(x, 0);
    if (fd < 0)
        return errno;
    /* The same length: nothing to do, unless idxf_shorten left the file
     * shorter than its mapping (the only case that asks the file). */
    if (bytes == x->map_len && file_length(fd) == (off_t)bytes) {
        close(fd);
        return 0;
    }
    /* Unmap before shrinking: touching a mapped page past the end of the
     * file would be SIGBUS. The next use maps the new length. */
    drop_map(x);
    int e = truncate_fd(fd, bytes);
    close(fd);
    if (e == 0) {
        /* A new length may have dropped blocks (a trim) or added holes. */
        x->map_len = bytes;
        x->backed = 0;
    }
    x->dirty = true;
    return e;
}

int idxf_shorten(struct idx_file *x)
{
    size_t bytes = x->n * x->entry_size;
    if (bytes >= x->map_len)
        return 0;
    int fd = open_fd(x, 0);
    if (fd < 0)
        return errno;
    /* Pages past the new end leave the page cache; the entries, before
     * it, stay where the mapping's readers find them. */
    int e = truncate_fd(fd, bytes);
    close(fd);
    if (e == 0)
        x->backed = 0;
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
    /* The first store into each of these pages faults it in (a page-cache
     * page found or zeroed, its block mapped; into a new segment's index,
     * the file mapped too): the stores come under the log's seg_lock,
     * which every Fetch of the partition waits for, so the faults are
     * taken here, under the appender's exclusion only, by a zero stored
     * into each page past the entries (readers read only the n entries;
     * the appender, the only writer, overwrites those bytes later). */
    size_t used = x->n * x->entry_size;
    uint8_t *m = pin(x);
    if (m) {
        /* No read-around for these faults: the kernel otherwise fills the
         * page cache around a faulting page of a file mapping with up to
         * the device's read-ahead (8 MiB on this project's VMs: the whole
         * sparse index, zeroed page by page), which made the first store
         * into a new segment's index cost 1-6 ms of CPU on the appender's
         * loop, once per roll. Index lookups are binary searches: random
         * access anyway. */
        (void)madvise(m, x->map_len, MADV_RANDOM);
        for (size_t off = from > used ? from : used; off < to; off += page - off % page)
            ((volatile uint8_t *)m)[off] = 0;
        unpin(x);
    }
    return 0;
}

int idxf_sync(struct idx_file *x)
{
    if (!x->dirty || !x->log_path)
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

int idxf_rename(struct idx_file *x, const char *from, const char *to)
{
    (void)x;
    return rename(from, to) != 0 ? errno : 0;
}

/* ---- offset index ---- */

static inline int32_t rd32(const uint8_t *p) { return (int32_t)be32_read(p); }
static inline int64_t rd64(const uint8_t *p) { return (int64_t)be64_read(p); }

/* Pins are taken through a const index too: a lookup changes nothing
 * the owner sees. */
#define PIN(xf) pin((struct idx_file *)(xf))
#define UNPIN(xf) unpin((struct idx_file *)(xf))

static struct offset_position oidx_at(const struct offset_index *x, const uint8_t *m, size_t i)
{
    const uint8_t *p = m + i * OIDX_ENTRY_SIZE;
    return (struct offset_position){x->base_offset + rd32(p), rd32(p + 4)};
}

struct offset_position oidx_entry(const struct offset_index *x, size_t i)
{
    const uint8_t *m = PIN(&x->f);
    if (!m)
        return (struct offset_position){x->base_offset, 0}; /* where any scan may start */
    struct offset_position r = oidx_at(x, m, i);
    UNPIN(&x->f);
    return r;
}

bool oidx_append(struct offset_index *x, int64_t offset, int64_t position)
{
    if (idxf_reserve(&x->f, 1) != 0)
        return false;
    uint8_t *m = pin(&x->f);
    if (!m)
        return false; /* left out, as a sparse index allows */
    uint8_t *p = m + x->f.n * OIDX_ENTRY_SIZE;
    be32_write(p, (uint32_t)(int32_t)(offset - x->base_offset));
    be32_write(p + 4, (uint32_t)(int32_t)position);
    unpin(&x->f);
    x->f.n++;
    x->f.dirty = true;
    return true;
}

struct offset_position oidx_lookup(const struct offset_index *x, int64_t target)
{
    struct offset_position r = {x->base_offset, 0};
    if (target < x->base_offset || x->f.n == 0)
        return r;
    const uint8_t *m = PIN(&x->f);
    if (!m)
        return r; /* unmappable now: the scan starts at the segment's start */
    int64_t rel = target - x->base_offset;
    /* The last entry with rel_offset <= rel. */
    size_t lo = 0, hi = x->f.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rd32(m + mid * OIDX_ENTRY_SIZE) <= rel)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0)
        r = oidx_at(x, m, lo - 1);
    UNPIN(&x->f);
    return r;
}

struct offset_position oidx_lookup_position(const struct offset_index *x, int64_t pos)
{
    struct offset_position r = {x->base_offset, 0};
    if (x->f.n == 0)
        return r;
    const uint8_t *m = PIN(&x->f);
    if (!m)
        return r;
    size_t lo = 0, hi = x->f.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rd32(m + mid * OIDX_ENTRY_SIZE + 4) <= pos)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0)
        r = oidx_at(x, m, lo - 1);
    UNPIN(&x->f);
    return r;
}

void oidx_truncate_to(struct offset_index *x, int64_t offset)
{
    if (x->f.n == 0)
        return;
    const uint8_t *m = pin(&x->f);
    if (!m) {
        x->f.n = 0; /* cannot tell which survive: none (the index is sparse) */
        return;
    }
    while (x->f.n > 0 && oidx_at(x, m, x->f.n - 1).offset >= offset)
        x->f.n--;
    unpin(&x->f);
}

size_t oidx_valid_prefix(const struct offset_index *x, size_t n, int64_t log_size)
{
    size_t cap = n < idxf_capacity(&x->f) ? n : idxf_capacity(&x->f);
    if (cap == 0)
        return 0;
    const uint8_t *m = PIN(&x->f);
    if (!m)
        return 0; /* unreadable now: the caller rebuilds */
    int64_t prev_rel = -1, prev_pos = -1;
    size_t i = 0;
    for (; i < cap; i++) {
        const uint8_t *p = m + i * OIDX_ENTRY_SIZE;
        int64_t rel = rd32(p), pos = rd32(p + 4);
        if (rel <= prev_rel || pos <= prev_pos || pos >= log_size)
            break;
        prev_rel = rel;
        prev_pos = pos;
    }
    UNPIN(&x->f);
    return i;
}

/* ---- time index ---- */

static struct timestamp_offset tidx_at(const struct time_index *x, const uint8_t *m, size_t i)
{
    const uint8_t *p = m + i * TIDX_ENTRY_SIZE;
    return (struct timestamp_offset){rd64(p), x->base_offset + rd32(p + 8)};
}

struct timestamp_offset tidx_entry(const struct time_index *x, size_t i)
{
    const uint8_t *m = PIN(&x->f);
    if (!m)
        return (struct timestamp_offset){-1, x->base_offset};
    struct timestamp_offset r = tidx_at(x, m, i);
    UNPIN(&x->f);
    return r;
}

struct timestamp_offset tidx_last(const struct time_index *x)
{
    if (x->f.n == 0)
        return (struct timestamp_offset){-1, x->base_offset};
    return tidx_entry(x, x->f.n - 1);
}

void tidx_maybe_append(struct time_index *x, int64_t timestamp, int64_t offset)
{
    if (idxf_full(&x->f) || idxf_reserve(&x->f, 1) != 0)
        return;
    uint8_t *m = pin(&x->f);
    if (!m)
        return; /* left out, as a sparse index allows */
    if (x->f.n == 0 || timestamp > tidx_at(x, m, x->f.n - 1).timestamp) {
        uint8_t *p = m + x->f.n * TIDX_ENTRY_SIZE;
        be64_write(p, (uint64_t)timestamp);
        be32_write(p + 8, (uint32_t)(int32_t)(offset - x->base_offset));
        x->f.n++;
        x->f.dirty = true;
    }
    unpin(&x->f);
}

struct timestamp_offset tidx_lookup(const struct time_index *x, int64_t target)
{
    struct timestamp_offset r = {-1, x->base_offset};
    if (x->f.n == 0)
        return r;
    const uint8_t *m = PIN(&x->f);
    if (!m)
        return r; /* unmappable now: the scan starts at the segment's start */
    size_t lo = 0, hi = x->f.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rd64(m + mid * TIDX_ENTRY_SIZE) <= target)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0)
        r = tidx_at(x, m, lo - 1);
    UNPIN(&x->f);
    return r;
}

void tidx_truncate_to(struct time_index *x, int64_t offset)
{
    if (x->f.n == 0)
        return;
    const uint8_t *m = pin(&x->f);
    if (!m) {
        x->f.n = 0;
        return;
    }
    while (x->f.n > 0 && tidx_at(x, m, x->f.n - 1).offset >= offset)
        x->f.n--;
    unpin(&x->f);
}

size_t tidx_valid_prefix(const struct time_index *x, size_t n, int64_t next_offset)
{
    size_t cap = n < idxf_capacity(&x->f) ? n : idxf_capacity(&x->f);
    if (cap == 0)
        return 0;
    const uint8_t *m = PIN(&x->f);
    if (!m)
        return 0;
    int64_t prev_ts = INT64_MIN, prev_off = INT64_MIN;
    size_t i = 0;
    for (; i < cap; i++) {
        struct timestamp_offset e = tidx_at(x, m, i);
        if (e.timestamp <= prev_ts || e.offset < prev_off || e.offset < x->base_offset || e.offset >= next_offset)
            break;
        prev_ts = e.timestamp;
        prev_off = e.offset;
    }
    UNPIN(&x->f);
    return i;
}
