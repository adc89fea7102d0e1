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
#include "util/sfile.h"
#include "util/slog.h"

struct fdc_file {
    char *path;         /* owned; under lock */
    int flags;
    struct sfile *file; /* the cache's reference; NULL when closed; under lock */
    struct fdc_file *prev, *next; /* LRU links while file != NULL, most recent at head */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct fdc_file lru = {.prev = &lru, .next = &lru}; /* sentinel */
static size_t nopen, capacity;
static uint64_t nopens, nevictions, nresource;
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
    pthread_mutex_lock(&lock);
    capacity = cap ? cap : derived_capacity();
    pthread_mutex_unlock(&lock);
}

/* Under lock. */
static size_t cap_locked(void)
{
    if (!capacity)
        capacity = derived_capacity();
    return capacity;
}

size_t fdc_capacity(void)
{
    pthread_mutex_lock(&lock);
    size_t c = cap_locked();
    pthread_mutex_unlock(&lock);
    return c;
}

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

/* Under lock. */
static void unlink_lru(struct fdc_file *f)
{
    f->prev->next = f->next;
    f->next->prev = f->prev;
    f->prev = f->next = NULL;
}

static void push_head(struct fdc_file *f)
{
    f->next = lru.next;
    f->prev = &lru;
    lru.next->prev = f;
    lru.next = f;
}

static bool pinned(const struct fdc_file *f)
{
    /* Only fdc_get (under lock) makes a reference from the cache's, so
     * refs == 1 cannot become 2 while we hold the lock. */
    return atomic_load_explicit(&f->file->refs, memory_order_acquire) > 1;
}

/* Drops the fds of up to n unpinned files from the LRU end. Under lock. */
static size_t evict_locked(size_t n)
{
    size_t done = 0;
    for (struct fdc_file *f = lru.prev; f != &lru && done < n;) {
        struct fdc_file *prev = f->prev;
        if (!pinned(f)) {
            unlink_lru(f);
            sfile_unref(f->file); /* the last reference: closes */
            f->file = NULL;
            nopen--;
            nevictions++;
            done++;
        }
        f = prev;
    }
    return done;
}

/* How much to shed on EMFILE: a good part of the cache, so that a burst
 * of opens does not hit the limit again at once. */
static size_t shed_amount(void) { return nopen / 4 > 32 ? nopen / 4 : 32; }

void fdc_trim(void)
{
    pthread_mutex_lock(&lock);
    size_t cap = cap_locked();
    if (nopen > cap)
        evict_locked(nopen - cap);
    pthread_mutex_unlock(&lock);
}

size_t fdc_shed(size_t n)
{
    pthread_mutex_lock(&lock);
    size_t k = evict_locked(n);
    pthread_mutex_unlock(&lock);
    return k;
}

/* Rate limit of the shed WARN line: an EMFILE storm is one line a second. */
static bool warn_due(void)
{
    static _Atomic int64_t last_s;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t prev = atomic_load(&last_s);
    return ts.tv_sec != prev && atomic_compare_exchange_strong(&last_s, &prev, (int64_t)ts.tv_sec);
}

/* open with the shed-and-retry rule. Under lock when locked. */
static int open_retry(const char *path, int flags, mode_t mode, bool locked)
{
    int fd = -1, e = 0;
    for (int t = 0; t < FDC_OPEN_TRIES; t++) {
        fd = sys_open(path, flags | O_CLOEXEC, mode);
        if (fd >= 0)
            return fd;
        e = errno;
        if (e == EINTR) {
            t--;
            continue;
        }
        if (!fdc_is_resource(e))
            break;
        if (!locked)
            pthread_mutex_lock(&lock);
        nresource++;
        size_t shed = evict_locked(shed_amount());
        if (!locked)
            pthread_mutex_unlock(&lock);
        if (t == 0 && warn_due())
            slog_warn("file descriptors: %s opening %s; closed %zu cached file(s) and retrying (this line at most "
                      "once a second)",
                      strerror(e), path, shed);
    }
    if (fdc_is_resource(e)) {
        thread_failures++;
        slog_warn("file descriptors: still %s opening %s after shedding cached files; the operation fails "
                  "with a retriable error",
                  strerror(e), path);
    }
    errno = e;
    return -1;
}

int fdc_open(const char *path, int flags, mode_t mode) { return open_retry(path, flags, mode, false); }

DIR *fdc_opendir(const char *path)
{
    /* Through open_retry (and its hook), then fdopendir. */
    int fd = open_retry(path, O_RDONLY | O_DIRECTORY, 0, false);
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

struct fdc_file *fdc_file_new(const char *path, int flags, int fd)
{
    struct fdc_file *f = xcalloc(1, sizeof *f);
    f->path = xstrdup(path);
    /* O_CREAT/O_TRUNC belong to the first open only. */
    f->flags = flags & ~(O_CREAT | O_TRUNC | O_EXCL);
    if (fd >= 0) {
        pthread_mutex_lock(&lock);
        f->file = sfile_wrap(fd);
        push_head(f);
        nopen++;
        size_t cap = cap_locked();
        if (nopen > cap)
            evict_locked(nopen - cap);
        pthread_mutex_unlock(&lock);
    }
    return f;
}

void fdc_file_free(struct fdc_file *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&lock);
    if (f->file) {
        unlink_lru(f);
        sfile_unref(f->file);
        f->file = NULL;
        nopen--;
    }
    pthread_mutex_unlock(&lock);
    free(f->path);
    free(f);
}

struct sfile *fdc_get(struct fdc_file *f, int *err)
{
    pthread_mutex_lock(&lock);
    if (f->file) {
        if (lru.next != f) {
            unlink_lru(f);
            push_head(f);
        }
        struct sfile *r = sfile_ref(f->file);
        pthread_mutex_unlock(&lock);
        return r;
    }
    size_t cap = cap_locked();
    if (nopen >= cap)
        evict_locked(nopen - cap + 1);
    int fd = open_retry(f->path, f->flags, 0, true);
    if (fd < 0) {
        *err = errno;
        pthread_mutex_unlock(&lock);
        return NULL;
    }
    nopens++;
    f->file = sfile_wrap(fd);
    push_head(f);
    nopen++;
    struct sfile *r = sfile_ref(f->file);
    pthread_mutex_unlock(&lock);
    return r;
}

void fdc_file_renamed(struct fdc_file *f, const char *new_path)
{
    char *p = xstrdup(new_path);
    pthread_mutex_lock(&lock);
    char *old = f->path;
    f->path = p;
    pthread_mutex_unlock(&lock);
    free(old);
}

void fdc_file_path(struct fdc_file *f, char *buf, size_t n)
{
    pthread_mutex_lock(&lock);
    snprintf(buf, n, "%s", f->path);
    pthread_mutex_unlock(&lock);
}

bool fdc_file_is_open(struct fdc_file *f)
{
    pthread_mutex_lock(&lock);
    bool o = f->file != NULL;
    pthread_mutex_unlock(&lock);
    return o;
}

void fdc_get_stats(struct fdc_stats *out)
{
    pthread_mutex_lock(&lock);
    out->open = nopen;
    out->pinned = 0;
    for (struct fdc_file *f = lru.next; f != &lru; f = f->next)
        out->pinned += pinned(f);
    out->opens = nopens;
    out->evictions = nevictions;
    out->resource_errors = nresource;
    pthread_mutex_unlock(&lock);
}
