#include "util/fdcache.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/lru.h"
#include "util/shed.h"
#include "util/sfile.h"
#include "util/slog.h"

/* The cache is sharded so that workers reading and appending different
 * partitions do not meet on one mutex (every Produce and Fetch gets a
 * segment's fd here): a file belongs to one shard for its life (chosen
 * at fdc_file_new), a shard has its own lock, LRU and share of the
 * capacity. A small capacity keeps one shard (an exact LRU: tests, and
 * limits where a few hundred fds are all there is); shards come with
 * FDC_SHARD_MIN_CAPACITY of capacity each. */
#define FDC_MAX_SHARDS 16
#define FDC_SHARD_MIN_CAPACITY 256

struct fdc_shard {
    pthread_mutex_t lock; /* guards the rest and its files' fd and path */
    struct lru_node lru;  /* open files, most recent at the head */
    size_t nopen, cap;
    uint64_t nopens, nevictions, nresource;
} __attribute__((aligned(64)));

struct fdc_file {
    char *path;         /* owned unless borrowed; under its shard's lock */
    int flags;
    bool borrowed;      /* path belongs to the caller (fdc_file_new_borrowed) */
    struct fdc_shard *sh; /* for its life */
    struct sfile *file; /* the cache's reference; NULL when closed; under lock */
    struct lru_node node; /* in sh->lru while file != NULL */
};

static struct fdc_shard shards[FDC_MAX_SHARDS];
/* Guards capacity and nshards (set at init, or derived at first use);
 * never taken on a file's path. */
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t capacity;
static int nshards; /* 0 until capacity is known */
static _Atomic uint32_t next_shard;
static _Atomic int64_t warned;
static _Atomic(fdc_open_fn) open_hook;
static _Thread_local uint64_t thread_failures;

static size_t derived_capacity(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return 1 << 20;
    size_t c = (size_t)rl.rlim_cur * FDC_SHARE_PERCENT / 100;
    return c < FDC_MIN_CAPACITY ? FDC_MIN_CAPACITY : c;
}

/* Under init_lock: the capacity split over the shards. A file created
 * under an earlier split keeps its shard (a shard left out has no share
 * and drops its files' fds as they are released). */
static void split_locked(size_t cap)
{
    int n = 1;
    while (n < FDC_MAX_SHARDS && cap / (size_t)(2 * n) >= FDC_SHARD_MIN_CAPACITY)
        n *= 2;
    capacity = cap;
    nshards = n;
    for (int i = 0; i < FDC_MAX_SHARDS; i++) {
        pthread_mutex_lock(&shards[i].lock);
        shards[i].cap = i < n ? cap / (size_t)n + (i < (int)(cap % (size_t)n)) : 0;
        pthread_mutex_unlock(&shards[i].lock);
    }
}

static void shards_init_once(void)
{
    for (int i = 0; i < FDC_MAX_SHARDS; i++) {
        pthread_mutex_init(&shards[i].lock, NULL);
        lru_init(&shards[i].lru);
    }
}

static pthread_once_t shards_once = PTHREAD_ONCE_INIT;

/* The capacity, derived at first use when nobody set it. */
static size_t cap_get(int *n)
{
    pthread_once(&shards_once, shards_init_once);
    pthread_mutex_lock(&init_lock);
    if (!nshards)
        split_locked(derived_capacity());
    size_t c = capacity;
    if (n)
        *n = nshards;
    pthread_mutex_unlock(&init_lock);
    return c;
}

int fdc_raise_nofile_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        int e = errno;
        slog_warn("file descriptors: cannot read RLIMIT_NOFILE: %s", strerror(e));
        return e;
    }
    rlim_t was = rl.rlim_cur, target = rl.rlim_max;
    if (target == RLIM_INFINITY) {
        /* The kernel refuses more than fs.nr_open. */
        FILE *f = fopen("/proc/sys/fs/nr_open", "r");
        unsigned long long nr = 0;
        target = f && fscanf(f, "%llu", &nr) == 1 && nr > 0 ? (rlim_t)nr : (rlim_t)1 << 20;
        if (f)
            fclose(f);
    }
    if (rl.rlim_cur < target) {
        rl.rlim_cur = target;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            int e = errno;
            slog_warn("file descriptors: cannot raise the soft limit %llu to the hard limit %llu: %s",
                      (unsigned long long)was, (unsigned long long)rl.rlim_max, strerror(e));
            fdc_init(0);
            return e;
        }
    }
    fdc_init(0);
    slog_info("file descriptors: limit %llu (soft was %llu, hard %llu); up to %zu kept open for log segments",
              (unsigned long long)rl.rlim_cur, (unsigned long long)was, (unsigned long long)rl.rlim_max,
              fdc_capacity());
    return 0;
}

void fdc_init(size_t cap)
{
    pthread_once(&shards_once, shards_init_once);
    pthread_mutex_lock(&init_lock);
    split_locked(cap ? cap : derived_capacity());
    pthread_mutex_unlock(&init_lock);
}

size_t fdc_capacity(void) { return cap_get(NULL); }

bool fdc_is_resource(int err) { return err == EMFILE || err == ENFILE; }
uint64_t fdc_resource_failures(void) { return thread_failures; }
void fdc_note_resource_failure(void) { thread_failures++; }

void fdc_set_open_hook(fdc_open_fn fn) { atomic_store(&open_hook, fn); }

static int sys_open(const char *path, int flags, mode_t mode)
{
    fdc_open_fn h = atomic_load(&open_hook);
    if (h)
        return h(path, flags, mode);
    return open(path, flags, mode);
}

static bool pinned(const struct fdc_file *f)
{
    /* Only fdc_get (under the shard's lock) makes a reference from the
     * cache's, so refs == 1 cannot become 2 while we hold the lock. */
    return atomic_load_explicit(&f->file->refs, memory_order_acquire) > 1;
}

/* Drops the fds of up to n unpinned files from the LRU end of sh. Under
 * sh->lock. */
static size_t evict_locked(struct fdc_shard *sh, size_t n)
{
    size_t done = 0;
    for (struct lru_node *x = sh->lru.prev; x != &sh->lru && done < n;) {
        struct lru_node *prev = x->prev;
        struct fdc_file *f = lru_entry(x, struct fdc_file, node);
        if (!pinned(f)) {
            lru_unlink(x);
            sfile_unref(f->file); /* the last reference: closes */
            f->file = NULL;
            sh->nopen--;
            sh->nevictions++;
            done++;
        }
        x = prev;
    }
    return done;
}

/* Under sh->lock: makes room for one more open file in sh. */
static void make_room_locked(struct fdc_shard *sh, size_t more)
{
    if (sh->nopen + more > sh->cap)
        evict_locked(sh, sh->nopen + more - sh->cap);
}

/* How much of a shard to shed on EMFILE: a good part of it, so that a
 * burst of opens does not hit the limit again at once. */
static size_t shed_amount(size_t nopen) { return nopen / 4 > 32 ? nopen / 4 : 32; }

void fdc_trim(void)
{
    pthread_once(&shards_once, shards_init_once);
    for (int i = 0; i < FDC_MAX_SHARDS; i++) {
        pthread_mutex_lock(&shards[i].lock);
        make_room_locked(&shards[i], 0);
        pthread_mutex_unlock(&shards[i].lock);
    }
}

/* Sheds from every shard, held one at a time; own (locked by the caller,
 * or NULL) first, the others only when their lock is free (a caller
 * holding its shard must not wait for another: two would deadlock).
 * Up to n files in all, or with share a good part of each shard
 * (shed_amount of its open files, sized under its lock). */
static size_t shed_all(struct fdc_shard *own, size_t n, bool share)
{
    pthread_once(&shards_once, shards_init_once);
    size_t k = 0;
    for (int i = -1; i < FDC_MAX_SHARDS && (share || k < n); i++) {
        struct fdc_shard *sh = i < 0 ? own : &shards[i];
        if (!sh || (i >= 0 && sh == own))
            continue;
        if (sh != own && (own ? pthread_mutex_trylock(&sh->lock) : pthread_mutex_lock(&sh->lock)) != 0)
            continue;
        k += evict_locked(sh, share ? shed_amount(sh->nopen) : n - k);
        if (sh != own)
            pthread_mutex_unlock(&sh->lock);
    }
    return k;
}

size_t fdc_shed(size_t n) { return shed_all(NULL, n, false); }

struct open_try {
    const char *path;
    int flags;
    mode_t mode;
    int fd;
    struct fdc_shard *own; /* locked by the caller, or NULL */
};

static int open_attempt(void *arg)
{
    struct open_try *o = arg;
    o->fd = sys_open(o->path, o->flags | O_CLOEXEC, o->mode);
    return o->fd >= 0 ? 0 : errno;
}

/* On EMFILE: a good part of every shard. */
static size_t open_shed(void *arg)
{
    struct open_try *o = arg;
    return shed_all(o->own, 0, true);
}

/* open with the shed-and-retry rule (util/shed.h). own: the shard the
 * caller holds locked, or NULL. */
static int open_retry(const char *path, int flags, mode_t mode, struct fdc_shard *own)
{
    struct open_try o = {path, flags, mode, -1, own};
    uint64_t nres = 0;
    struct shed_op op = {
        .attempt = open_attempt,
        .is_resource = fdc_is_resource,
        .shed = open_shed,
        .arg = &o,
        .tries = FDC_OPEN_TRIES,
        .who = "file descriptors",
        .doing = "opening",
        .path = path,
        .warned = &warned,
        .resource_errors = &nres,
    };
    int e = shed_retry(&op);
    if (nres) {
        struct fdc_shard *sh = own ? own : &shards[0];
        if (!own)
            pthread_mutex_lock(&sh->lock);
        sh->nresource += nres;
        if (!own)
            pthread_mutex_unlock(&sh->lock);
    }
    if (e == 0)
        return o.fd;
    if (fdc_is_resource(e)) {
        thread_failures++;
        slog_warn("file descriptors: still %s opening %s after shedding cached files; the operation fails "
                  "with a retriable error",
                  strerror(e), path);
    }
    errno = e;
    return -1;
}

int fdc_open(const char *path, int flags, mode_t mode)
{
    pthread_once(&shards_once, shards_init_once);
    return open_retry(path, flags, mode, NULL);
}

DIR *fdc_opendir(const char *path)
{
    /* opendir(3) first: two system calls (open, fstat) where fdopendir
     * takes four (it checks the fd's type and flags, and sets
     * FD_CLOEXEC): every log's open lists its directory. Out of
     * descriptors (or with a test's hook), through open_retry and its
     * shedding, then fdopendir. */
    if (!atomic_load(&open_hook)) {
        DIR *d = opendir(path);
        if (d || !fdc_is_resource(errno))
            return d;
    }
    int fd = fdc_open(path, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return NULL;
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return d;
}

static struct fdc_file *file_new(char *path, bool borrowed, int flags, int fd)
{
    int n;
    cap_get(&n);
    struct fdc_file *f = xcalloc(1, sizeof *f);
    f->path = path;
    f->borrowed = borrowed;
    /* O_CREAT/O_TRUNC belong to the first open only. */
    f->flags = flags & ~(O_CREAT | O_TRUNC | O_EXCL);
    f->sh = &shards[atomic_fetch_add_explicit(&next_shard, 1, memory_order_relaxed) % (uint32_t)n];
    if (fd >= 0) {
        struct fdc_shard *sh = f->sh;
        pthread_mutex_lock(&sh->lock);
        f->file = sfile_wrap(fd);
        lru_push_head(&sh->lru, &f->node);
        sh->nopen++;
        make_room_locked(sh, 0);
        pthread_mutex_unlock(&sh->lock);
    }
    return f;
}

struct fdc_file *fdc_file_new(const char *path, int flags, int fd)
{
    return file_new(xstrdup(path), false, flags, fd);
}

struct fdc_file *fdc_file_new_borrowed(const char *path, int flags, int fd)
{
    /* Never written through: the cast only lets one field hold both kinds. */
    return file_new((char *)path, true, flags, fd);
}

void fdc_file_free(struct fdc_file *f)
{
    if (!f)
        return;
    struct fdc_shard *sh = f->sh;
    pthread_mutex_lock(&sh->lock);
    if (f->file) {
        lru_unlink(&f->node);
        sfile_unref(f->file);
        f->file = NULL;
        sh->nopen--;
    }
    pthread_mutex_unlock(&sh->lock);
    if (!f->borrowed)
        free(f->path);
    free(f);
}

struct sfile *fdc_get(struct fdc_file *f, int *err)
{
    struct fdc_shard *sh = f->sh;
    pthread_mutex_lock(&sh->lock);
    if (f->file) {
        lru_move_head(&sh->lru, &f->node);
        struct sfile *r = sfile_ref(f->file);
        pthread_mutex_unlock(&sh->lock);
        return r;
    }
    make_room_locked(sh, 1);
    int fd = open_retry(f->path, f->flags, 0, sh);
    if (fd < 0) {
        *err = errno;
        pthread_mutex_unlock(&sh->lock);
        return NULL;
    }
    sh->nopens++;
    f->file = sfile_wrap(fd);
    lru_push_head(&sh->lru, &f->node);
    sh->nopen++;
    struct sfile *r = sfile_ref(f->file);
    pthread_mutex_unlock(&sh->lock);
    return r;
}

void fdc_file_renamed(struct fdc_file *f, const char *new_path)
{
    char *p = f->borrowed ? (char *)new_path : xstrdup(new_path);
    pthread_mutex_lock(&f->sh->lock);
    char *old = f->path;
    f->path = p;
    pthread_mutex_unlock(&f->sh->lock);
    if (!f->borrowed)
        free(old);
}

void fdc_file_path(struct fdc_file *f, char *buf, size_t n)
{
    pthread_mutex_lock(&f->sh->lock);
    snprintf(buf, n, "%s", f->path);
    pthread_mutex_unlock(&f->sh->lock);
}

bool fdc_file_is_open(struct fdc_file *f)
{
    pthread_mutex_lock(&f->sh->lock);
    bool o = f->file != NULL;
    pthread_mutex_unlock(&f->sh->lock);
    return o;
}

void fdc_get_stats(struct fdc_stats *out)
{
    pthread_once(&shards_once, shards_init_once);
    memset(out, 0, sizeof *out);
    for (int i = 0; i < FDC_MAX_SHARDS; i++) {
        struct fdc_shard *sh = &shards[i];
        pthread_mutex_lock(&sh->lock);
        out->open += sh->nopen;
        for (struct lru_node *x = sh->lru.next; x != &sh->lru; x = x->next)
            out->pinned += pinned(lru_entry(x, struct fdc_file, node));
        out->opens += sh->nopens;
        out->evictions += sh->nevictions;
        out->resource_errors += sh->nresource;
        pthread_mutex_unlock(&sh->lock);
    }
}
