/* The storage engine around the partition log: on-disk .index/.timeindex
 * files, recovery from the recovery point (cut at every byte, random
 * corruption), checkpoint files, flush policy, retention boundaries,
 * DeleteRecords, truncation, segment.ms rolling, leftovers of interrupted
 * cleanings, the leader-epoch cache, the log manager, and the cleaner
 * against a reference model. Each test works in its own mkdtemp directory
 * under /tmp and removes it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "log/checkpoint.h"
#include "log/cleaner.h"
#include "log/fsutil.h"
#include "log/index.h"
#include "log/logmgr.h"
#include "log/plog.h"
#include "log/segment.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/fdcache.h"
#include "util/sfile.h"
#include "util/slog.h"
#include "util/throttle.h"

/* ---- fixtures and helpers ---- */

struct fx {
    char *root; /* the mkdtemp directory */
    char *dir;  /* root/topic-0 */
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    char tmpl[] = "/tmp/storage_test.XXXXXX";
    if (!mkdtemp(tmpl))
        return -1;
    f->root = strdup(tmpl);
    f->dir = malloc(strlen(tmpl) + 16);
    sprintf(f->dir, "%s/topic-0", tmpl);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    fs_remove_tree(f->root);
    free(f->root);
    free(f->dir);
    free(f);
    return 0;
}

static void quiet(void) { slog_set_level((enum slog_level)(SLOG_ERROR + 1)); }
static void loud(void) { slog_set_level(SLOG_WARN); }

static struct plog_config cfg_with(int64_t segment_bytes, int32_t index_interval)
{
    struct plog_config c = PLOG_CONFIG_INIT;
    c.segment_bytes = segment_bytes;
    c.index_interval_bytes = index_interval;
    return c;
}

static struct plog *open_ex(const char *dir, const struct plog_config *c, const struct plog_open_opts *o)
{
    struct plog *l = NULL;
    assert_int_equal(plog_open_ex(dir, NULL, c, o, &l), 0);
    assert_non_null(l);
    return l;
}

static struct plog *open_log(const char *dir, const struct plog_config *c) { return open_ex(dir, c, NULL); }

/* An open after plog_close(l, true) returned 0: the owner vouches for it
 * (its log dir's clean-shutdown marker, log/logmgr.h). */
static struct plog *open_clean(const char *dir, const struct plog_config *c)
{
    struct plog_open_opts o = PLOG_OPEN_OPTS_INIT;
    o.clean_shutdown = true;
    return open_ex(dir, c, &o);
}

static char *fpath(const char *dir, int64_t base, const char *ext)
{
    char *p = malloc(strlen(dir) + 64);
    sprintf(p, "%s/%020" PRId64 "%s", dir, base, ext);
    return p;
}

static int64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

static int64_t fsize_of(const char *dir, int64_t base, const char *ext)
{
    char *p = fpath(dir, base, ext);
    int64_t n = file_size(p);
    free(p);
    return n;
}

/* One batch of n records with keys "k<key>" (key < 0: keyless) and values
 * "v<tag>" (tombstone when tomb), timestamps ts.. */
struct rec {
    int key;     /* -1: null key */
    int tag;     /* value "v<tag>" */
    bool tomb;   /* null value */
    int64_t ts;
};

static size_t add_records(struct buf *out, const struct rec *r, int n)
{
    struct rb_builder b;
    rb_builder_begin(&b, out, 0, r[0].ts, NULL);
    for (int i = 0; i < n; i++) {
        char k[32], v[64];
        /* Fixed widths: every batch of n records has the same size. */
        int kl = snprintf(k, sizeof k, "k%06d", r[i].key);
        int vl = snprintf(v, sizeof v, "v%06d-padding-padding", r[i].tag);
        kbytes_t key = r[i].key < 0 ? KBYTES_NULL : (kbytes_t){(const uint8_t *)k, kl};
        kbytes_t val = r[i].tomb ? KBYTES_NULL : (kbytes_t){(const uint8_t *)v, vl};
        assert_int_equal(rb_builder_add(&b, r[i].ts, key, val, NULL, 0), 0);
    }
    size_t bl;
    assert_int_equal(rb_builder_finish(&b, &bl), 0);
    return bl;
}

/* Appends a batch of n records of consecutive keys key0.. with ts. */
static int64_t append_n(struct plog *l, int n, int key0, int64_t ts)
{
    struct rec r[64];
    assert_true(n <= 64);
    for (int i = 0; i < n; i++)
        r[i] = (struct rec){key0 + i, key0 + i, false, ts + i};
    struct buf b = BUF_INIT;
    add_records(&b, r, n);
    struct plog_append_result res;
    assert_int_equal(plog_append(l, b.data, b.len, 0, -1, &res), 0);
    buf_free(&b);
    return res.base_offset;
}

/* Reads the whole log from from; calls fn for every record. Returns the
 * number of records. */
typedef void (*rec_fn)(void *ctx, int64_t offset, const struct rb_record *r);

static int64_t scan_log(struct plog *l, int64_t from, rec_fn fn, void *ctx)
{
    int64_t off = from, n = 0, leo = plog_log_end_offset(l);
    int64_t last = from - 1;
    while (off < leo) {
        struct plog_read_result rr;
        assert_int_equal(plog_read(l, off, 1 << 20, true, -1, &rr), 0);
        if (rr.len == 0)
            break;
        uint8_t *p = malloc((size_t)rr.len);
        assert_int_equal(pread(rr.file->fd, p, (size_t)rr.len, rr.file_pos), rr.len);
        for (size_t at = 0; at < (size_t)rr.len;) {
            struct rb_header h;
            assert_int_equal(rb_parse_header(p + at, (size_t)rr.len - at, &h), 0);
            size_t size = (size_t)rb_batch_size(&h);
            assert_true(rb_crc_ok(p + at, size));
            struct rb_record_iter it;
            assert_int_equal(rb_record_iter_init_batch(&it, p + at, size), 0);
            struct rb_record r;
            while (rb_record_next(&it, &r) == 1) {
                int64_t o = h.base_offset + r.offset_delta;
                assert_true(o > last); /* offsets only go up */
                last = o;
                if (o >= from) {
                    if (fn)
                        fn(ctx, o, &r);
                    n++;
                }
            }
            at += size;
        }
        off = rr.next_offset;
        free(p);
        sfile_unref(rr.file);
    }
    return n;
}

static void set_mtime(const char *path, int64_t ms)
{
    struct timespec t[2] = {{0, UTIME_OMIT}, {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L}};
    assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

/* ---- index files ---- */

static void test_index_files(void **state)
{
    struct fx *f = *state;
    struct plog_config c = cfg_with(1 << 20, 100);
    c.segment_index_bytes = 4096;
    struct plog *l = open_log(f->dir, &c);
    /* A new log's indexes are empty until its first append, which
     * preallocates them (4096 rounded down to whole entries). */
    assert_int_equal(fsize_of(f->dir, 0, ".index"), 0);
    assert_int_equal(fsize_of(f->dir, 0, ".timeindex"), 0);
    append_n(l, 5, 0, 1000);
    assert_int_equal(fsize_of(f->dir, 0, ".index"), 4096);
    assert_int_equal(fsize_of(f->dir, 0, ".timeindex"), 4092);
    for (int i = 1; i < 40; i++)
        append_n(l, 5, i * 5, 1000 + i * 10);
    int64_t leo = plog_log_end_offset(l);
    assert_int_equal(plog_close(l, true), 0);
    /* Trimmed to their entries at close; entries are Kafka's big-endian
     * layout and each offset entry points at the batch ending there. */
    int64_t isz = fsize_of(f->dir, 0, ".index"), tsz = fsize_of(f->dir, 0, ".timeindex");
    assert_true(isz > 0 && isz % 8 == 0);
    assert_true(tsz > 0 && tsz % 12 == 0);
    char *ip = fpath(f->dir, 0, ".index"), *lp = fpath(f->dir, 0, ".log");
    int ifd = open(ip, O_RDONLY), lfd = open(lp, O_RDONLY);
    for (int64_t at = 0; at < isz; at += 8) {
        uint8_t e[8], hdr[RB_HEADER_SIZE];
        assert_int_equal(pread(ifd, e, 8, at), 8);
        int32_t rel = (int32_t)be32_read(e), pos = (int32_t)be32_read(e + 4);
        assert_int_equal(pread(lfd, hdr, sizeof hdr, pos), (ssize_t)sizeof hdr);
        struct rb_header h;
        assert_int_equal(rb_parse_header(hdr, sizeof hdr, &h), 0);
        assert_int_equal(rb_last_offset(&h), rel);
    }
    close(ifd);
    close(lfd);

    /* A clean open takes them as they are (no rebuild, and not sized
     * for appends before the first one) and reads. */
    l = open_clean(f->dir, &c);
    assert_int_equal(plog_log_end_offset(l), leo);
    assert_int_equal(fsize_of(f->dir, 0, ".index"), isz);
    assert_int_equal(fsize_of(f->dir, 0, ".timeindex"), tsz);
    int64_t off, ts;
    assert_int_equal(plog_offset_for_timestamp(l, 1203, &off, &ts), 0);
    assert_int_equal(ts, 1203);
    assert_int_equal(off, 100 + 3);
    assert_int_equal(plog_max_timestamp(l, &off, &ts), 0);
    assert_int_equal(ts, 1000 + 39 * 10 + 4);
    assert_int_equal(off, leo - 1);
    assert_int_equal(scan_log(l, 0, NULL, NULL), leo);
    plog_close(l, true);

    /* Missing, short and garbage index files are rebuilt at open. */
    uint8_t *orig = malloc((size_t)isz);
    ifd = open(ip, O_RDONLY);
    assert_int_equal(pread(ifd, orig, (size_t)isz, 0), isz);
    close(ifd);
    char *tp = fpath(f->dir, 0, ".timeindex");
    for (int damage = 0; damage < 4; damage++) {
        char marker[512];
        snprintf(marker, sizeof marker, "%s/%s", f->dir, PLOG_CLEAN_SHUTDOWN_FILE);
        assert_true(access(marker, F_OK) != 0); /* none per partition: the log dir's */
        if (damage == 0)
            assert_int_equal(unlink(ip), 0);
        else if (damage == 1)
            assert_int_equal(truncate(ip, isz - 3), 0);
        else if (damage == 2) {
            int fd = open(ip, O_WRONLY);
            uint8_t junk[8] = {0, 0, 0, 1, 0x7f, 0, 0, 0};
            assert_int_equal(pwrite(fd, junk, 8, 0), 8);
            close(fd);
        } else {
            int fd = open(tp, O_WRONLY | O_TRUNC);
            uint8_t junk[12] = {0xff};
            assert_int_equal(write(fd, junk, 12), 12);
            close(fd);
        }
        quiet();
        l = open_clean(f->dir, &c);
        loud();
        assert_int_equal(plog_log_end_offset(l), leo);
        assert_int_equal(scan_log(l, 0, NULL, NULL), leo);
        assert_int_equal(plog_offset_for_timestamp(l, 1205, &off, &ts), 0);
        assert_int_equal(off, 105); /* 1205 is not there: 1210 at 105 */
        assert_int_equal(ts, 1210);
        plog_close(l, true);
        /* The rebuilt file equals the original. */
        assert_int_equal(fsize_of(f->dir, 0, ".index"), isz);
        uint8_t *now = malloc((size_t)isz);
        ifd = open(ip, O_RDONLY);
        assert_int_equal(pread(ifd, now, (size_t)isz, 0), isz);
        close(ifd);
        assert_memory_equal(now, orig, (size_t)isz);
        free(now);
    }
    free(orig);

    /* The first append after a clean open sizes the indexes for appends
     * (active again), and the next close trims them to their entries. */
    l = open_clean(f->dir, &c);
    assert_int_equal(fsize_of(f->dir, 0, ".index"), isz);
    int64_t tsz1 = fsize_of(f->dir, 0, ".timeindex");
    append_n(l, 5, (int)leo, 2000);
    assert_int_equal(fsize_of(f->dir, 0, ".index"), 4096);
    assert_int_equal(fsize_of(f->dir, 0, ".timeindex"), 4092);
    assert_int_equal(plog_log_end_offset(l), leo + 5);
    assert_int_equal(plog_max_timestamp(l, &off, &ts), 0);
    assert_int_equal(ts, 2000 + 4);
    plog_close(l, true);
    int64_t isz2 = fsize_of(f->dir, 0, ".index"), tsz2 = fsize_of(f->dir, 0, ".timeindex");
    assert_true(isz2 >= isz && isz2 < 4096 && isz2 % 8 == 0);
    assert_true(tsz2 > tsz1 && tsz2 < 4092 && tsz2 % 12 == 0);
    l = open_clean(f->dir, &c);
    assert_int_equal(plog_log_end_offset(l), leo + 5);
    assert_int_equal(scan_log(l, 0, NULL, NULL), leo + 5);
    assert_int_equal(plog_offset_for_timestamp(l, 2000, &off, &ts), 0);
    assert_int_equal(off, leo);
    plog_close(l, true);
    free(ip);
    free(lp);
    free(tp);
}

static void test_roll_on_full_index(void **state)
{
    struct fx *f = *state;
    /* Room for 3 offset entries and 2 time entries (24 bytes); an entry
     * for every batch after the first. */
    struct plog_config c = cfg_with(1 << 20, 0);
    c.segment_index_bytes = 24;
    struct plog *l = open_log(f->dir, &c);
    for (int i = 0; i < 12; i++)
        append_n(l, 2, i * 2, 1000 + i);
    /* Time index: 2 slots, one kept for the seal: entries for batches 2
     * (its first entry is for the second batch) -> rolls every 2 batches. */
    int n = plog_segment_count(l);
    assert_true(n >= 4);
    int64_t bases[64];
    assert_int_equal(plog_segment_bases(l, bases, 64), n);
    for (int i = 1; i < n; i++)
        assert_true(bases[i] > bases[i - 1]);
    assert_int_equal(scan_log(l, 0, NULL, NULL), 24);
    plog_close(l, true);
    l = open_log(f->dir, &c);
    assert_int_equal(scan_log(l, 0, NULL, NULL), 24);
    plog_close(l, false);
}

/* Open fds of this process whose path ends in suffix. */
static int count_fds(const char *suffix)
{
    int n = 0;
    for (int fd = 0; fd < 4096; fd++) {
        char link[64], target[4096];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t len = readlink(link, target, sizeof target - 1);
        if (len <= 0)
            continue;
        target[len] = '\0';
        size_t sl = strlen(suffix);
        if ((size_t)len >= sl && strcmp(target + len - sl, suffix) == 0)
            n++;
    }
    return n;
}

/* Index files opened through the fd cache's hook (the flush opens the
 * dirty ones of sealed segments to sync them). */
static int index_opens;
static int counting_open(const char *path, int flags, mode_t mode)
{
    size_t n = strlen(path);
    if (n > 6 && strcmp(path + n - 6, ".index") == 0)
        index_opens++;
    return open(path, flags, mode);
}

static void test_index_fds_released(void **state)
{
    struct fx *f = *state;
    struct plog_config c = cfg_with(2000, 100);
    struct plog *l = open_log(f->dir, &c);
    for (int i = 0; i < 40; i++)
        append_n(l, 5, i * 5, 1000);
    int nseg = plog_segment_count(l);
    assert_true(nseg >= 5);
    /* Index files keep no fd: the mappings hold them. */
    assert_int_equal(count_fds(".index"), 0);
    assert_int_equal(count_fds(".timeindex"), 0);
    /* Rolled but not flushed: the flush syncs their index files (opened
     * for the sync), exactly once. */
    index_opens = 0;
    fdc_set_open_hook(counting_open);
    assert_int_equal(plog_flush(l), 0);
    assert_int_equal(index_opens, nseg - 1);
    append_n(l, 5, 200, 1000);
    index_opens = 0;
    assert_int_equal(plog_flush(l), 0);
    assert_int_equal(index_opens, 0);
    fdc_set_open_hook(NULL);
    assert_int_equal(count_fds(".index"), 0);
    assert_int_equal(scan_log(l, 0, NULL, NULL), 205);
    int64_t off, ts;
    assert_int_equal(plog_offset_for_timestamp(l, 1003, &off, &ts), 0);
    assert_int_equal(off, 3);
    /* A truncation into a sealed segment resizes its index again. */
    assert_int_equal(plog_truncate_to(l, 12), 0);
    append_n(l, 5, 0, 2000);
    assert_int_equal(scan_log(l, 0, NULL, NULL), 15);
    plog_purge_deleted(l, 0, true);
    plog_close(l, true);
    l = open_log(f->dir, &c);
    assert_int_equal(count_fds(".index"), 0);
    assert_int_equal(scan_log(l, 0, NULL, NULL), 15);
    plog_close(l, false);
}

/* ---- recovery ---- */

/* A log of nseg segments of 3 batches each; returns the batch size. */
static size_t build_segments(const char *dir, int nseg, struct plog_config *c)
{
    struct buf b = BUF_INIT;
    struct rec r[4];
    for (int i = 0; i < 4; i++)
        r[i] = (struct rec){i, i, false, 1000};
    size_t s = add_records(&b, r, 4);
    buf_free(&b);
    *c = cfg_with((int64_t)(3 * s), 1);
    struct plog *l = open_log(dir, c);
    for (int i = 0; i < nseg * 3; i++)
        append_n(l, 4, i * 4, 1000 + i * 4);
    assert_int_equal(plog_segment_count(l), nseg);
    plog_close(l, false);
    return s;
}

static void flip(const char *path, int64_t at)
{
    int fd = open(path, O_RDWR);
    uint8_t c;
    assert_int_equal(pread(fd, &c, 1, at), 1);
    c ^= 0x10;
    assert_int_equal(pwrite(fd, &c, 1, at), 1);
    close(fd);
}

static void test_recovery_point(void **state)
{
    struct fx *f = *state;
    struct plog_config c;
    size_t s = build_segments(f->dir, 4, &c); /* segments 0, 12, 24, 36 */
    /* A flipped payload byte in segment 12, below the recovery point's
     * segment (24): trusted, not checked. */
    char *p12 = fpath(f->dir, 12, ".log"), *p24 = fpath(f->dir, 24, ".log");
    flip(p12, (int64_t)s + 70);
    struct plog_open_opts o = PLOG_OPEN_OPTS_INIT;
    o.recovery_point = 30;
    quiet();
    struct plog *l = open_ex(f->dir, &c, &o);
    loud();
    assert_int_equal(plog_log_end_offset(l), 48);
    assert_int_equal(plog_recovery_point(l), 30);
    plog_close(l, false);
    /* The same flip in segment 24 (the one holding the recovery point) is
     * found: the log ends before that batch, later segments go. */
    flip(p24, (int64_t)s + 70);
    quiet();
    l = open_ex(f->dir, &c, &o);
    loud();
    assert_int_equal(plog_log_end_offset(l), 28);
    assert_int_equal(plog_segment_count(l), 3);
    assert_int_equal(fsize_of(f->dir, 36, ".log"), -1);
    assert_int_equal(fsize_of(f->dir, 24, ".log"), (int64_t)s);
    /* The recovery point never exceeds the end. */
    assert_int_equal(plog_recovery_point(l), 28);
    plog_close(l, false);
    free(p12);
    free(p24);
}

static void test_recovery_cut_every_byte(void **state)
{
    struct fx *f = *state;
    struct plog_config c;
    size_t s = build_segments(f->dir, 3, &c); /* 0, 12, 24; last segment 3 batches */
    char *p = fpath(f->dir, 24, ".log");
    int64_t len = file_size(p);
    assert_true(len > 0);
    uint8_t *orig = malloc(len > 0 ? (size_t)len : 1);
    int fd = open(p, O_RDONLY);
    assert_int_equal(pread(fd, orig, (size_t)(len > 0 ? len : 1), 0), len);
    close(fd);
    struct plog_open_opts o = PLOG_OPEN_OPTS_INIT;
    o.recovery_point = 24;
    quiet();
    for (int64_t cut = 0; cut <= len; cut++) {
        fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        assert_int_equal(pwrite(fd, orig, (size_t)cut, 0), cut);
        close(fd);
        struct plog *l = open_ex(f->dir, &c, &o);
        int64_t whole = cut / (int64_t)s; /* batches that survive */
        assert_int_equal(plog_log_end_offset(l), 24 + 4 * whole);
        assert_int_equal(fsize_of(f->dir, 24, ".log"), whole * (int64_t)s);
        assert_int_equal(scan_log(l, 0, NULL, NULL), 24 + 4 * whole);
        /* appends continue at the end */
        append_n(l, 4, 0, 5000);
        assert_int_equal(plog_log_end_offset(l), 28 + 4 * whole);
        plog_close(l, false);
        /* undo the append for the next round */
        fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        close(fd);
    }
    loud();
    free(orig);
    free(p);
}

static void test_recovery_random_corruption(void **state)
{
    struct fx *f = *state;
    struct plog_config c;
    size_t s = build_segments(f->dir, 3, &c);
    char *p = fpath(f->dir, 24, ".log");
    int64_t len = file_size(p);
    assert_true(len > 0);
    uint8_t *orig = malloc(len > 0 ? (size_t)len : 1);
    int fd = open(p, O_RDONLY);
    assert_int_equal(pread(fd, orig, (size_t)(len > 0 ? len : 1), 0), len);
    close(fd);
    struct plog_open_opts o = PLOG_OPEN_OPTS_INIT;
    o.recovery_point = 0; /* everything is checked */
    srandom(12345);
    quiet();
    for (int round = 0; round < 300; round++) {
        uint8_t *bad = malloc((size_t)len);
        memcpy(bad, orig, (size_t)len);
        int64_t at = random() % len;
        int nflips = 1 + (int)(random() % 3);
        int64_t first = len;
        for (int k = 0; k < nflips; k++) {
            int64_t pos = at + (random() % 16);
            if (pos >= len)
                pos = len - 1;
            uint8_t x = (uint8_t)(1 + random() % 255);
            bad[pos] ^= x;
            if (pos < first)
                first = pos;
        }
        fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        assert_int_equal(pwrite(fd, bad, (size_t)len, 0), len);
        close(fd);
        struct plog *l = open_ex(f->dir, &c, &o);
        /* Everything before the damaged batch survives; the damaged one
         * and what follows go (a flip in baseOffset or
         * partitionLeaderEpoch, outside the CRC, may survive as long as
         * the offsets still line up: then the log is whole). */
        int64_t damaged_batch = first / (int64_t)s;
        int64_t leo = plog_log_end_offset(l);
        assert_true(leo >= 24 + 4 * damaged_batch);
        /* A flipped baseOffset may leave a gap (still increasing): then
         * fewer records than offsets, never more records than written. */
        int64_t nrec = scan_log(l, 0, NULL, NULL);
        assert_true(nrec >= 24 + 4 * damaged_batch && nrec <= 36 && nrec <= leo);
        plog_close(l, false);
        free(bad);
    }
    loud();
    fd = open(p, O_WRONLY | O_TRUNC);
    assert_int_equal(pwrite(fd, orig, (size_t)len, 0), len);
    close(fd);
    free(orig);
    free(p);
}

/* ---- leftovers of cleaning and deletion ---- */

static void copy_file(const char *from, const char *to)
{
    uint8_t buf[65536];
    int a = open(from, O_RDONLY), b = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ssize_t n;
    while ((n = read(a, buf, sizeof buf)) > 0)
        assert_int_equal(write(b, buf, (size_t)n), n);
    close(a);
    close(b);
}

static void test_leftovers_at_open(void **state)
{
    struct fx *f = *state;
    struct plog_config c;
    build_segments(f->dir, 3, &c);
    /* A .deleted segment and a .cleaned one are removed; a .swap segment
     * (here: a copy of segment 0 standing for a cleaned 0+12) replaces the
     * segments in its offset range and takes the plain name. */
    char *p0 = fpath(f->dir, 0, ".log"), *p12 = fpath(f->dir, 12, ".log");
    char *del = fpath(f->dir, 99, ".log.deleted"), *cl = fpath(f->dir, 12, ".log.cleaned");
    char *sw = fpath(f->dir, 0, ".log.swap");
    copy_file(p0, del);
    copy_file(p0, cl);
    copy_file(p0, sw);
    /* Kafka's swap goes: old segments renamed .deleted, then .swap to
     * .log; crash after the first rename of the two. */
    char *p0d = fpath(f->dir, 0, ".log.deleted");
    assert_int_equal(rename(p0, p0d), 0);
    quiet();
    struct plog *l = open_log(f->dir, &c);
    loud();
    assert_int_equal(file_size(del), -1);
    assert_int_equal(file_size(cl), -1);
    assert_int_equal(file_size(sw), -1);
    assert_int_equal(file_size(p0d), -1);
    assert_true(file_size(p0) > 0);
    /* 12 was in the swap's range [0, 12): it stays (range ends at 12). */
    assert_true(file_size(p12) > 0);
    assert_int_equal(plog_log_end_offset(l), 36);
    assert_int_equal(scan_log(l, 0, NULL, NULL), 36);
    plog_close(l, false);
    free(p0);
    free(p12);
    free(del);
    free(cl);
    free(sw);
    free(p0d);
}

/* ---- checkpoints ---- */

static void test_checkpoint_files(void **state)
{
    struct fx *f = *state;
    assert_int_equal(fs_mkdirs(f->dir, NULL), 0);
    char p[512];
    snprintf(p, sizeof p, "%s/%s", f->root, CKPT_RECOVERY_POINT_FILE);
    struct ckpt_entry e[] = {{"orders", 0, 1234}, {"a-b-c", 17, 0}, {"x", 2147483647, INT64_MAX}};
    assert_int_equal(ckpt_write(p, e, 3), 0);
    char *text;
    size_t n;
    assert_int_equal(fs_read_small(p, 4096, &text, &n), 0);
    assert_string_equal(text, "0\n3\norders 0 1234\na-b-c 17 0\nx 2147483647 9223372036854775807\n");
    free(text);
    struct ckpt_entry *r;
    size_t nr;
    assert_int_equal(ckpt_read(p, &r, &nr), 0);
    assert_int_equal(nr, 3);
    assert_string_equal(r[1].topic, "a-b-c");
    assert_int_equal(r[1].partition, 17);
    assert_int_equal(r[2].offset, INT64_MAX);
    ckpt_free(r, nr);
    const char *bad[] = {"", "1\n0\n", "0\n2\nt 0 1\n", "0\n1\nt 0\n", "0\n1\nt x 1\n", "0\n1\nt 0 1\nextra"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        assert_int_equal(write(fd, bad[i], strlen(bad[i])), (ssize_t)strlen(bad[i]));
        close(fd);
        assert_int_equal(ckpt_read(p, &r, &nr), EINVAL);
    }
    unlink(p);
    assert_int_equal(ckpt_read(p, &r, &nr), ENOENT);
    struct epoch_entry ep[] = {{0, 0}, {3, 150}};
    assert_int_equal(ckpt_write_epochs(p, ep, 2), 0);
    struct epoch_entry *er;
    assert_int_equal(ckpt_read_epochs(p, &er, &nr), 0);
    assert_int_equal(nr, 2);
    assert_int_equal(er[1].epoch, 3);
    assert_int_equal(er[1].start_offset, 150);
    free(er);
}

/* ---- flush policy ---- */

struct hook_counts {
    int flush_wanted, start_moved, failed;
};

static void h_flush(void *ctx, struct plog *l)
{
    (void)l;
    ((struct hook_counts *)ctx)->flush_wanted++;
}
static void h_start(void *ctx, struct plog *l)
{
    (void)l;
    ((struct hook_counts *)ctx)->start_moved++;
}
static void h_failed(void *ctx, struct plog *l)
{
    (void)l;
    ((struct hook_counts *)ctx)->failed++;
}

/* Logs with equal configs share one copy (log/plog_config.c): a config
 * change of one log is copy on write, the others keep theirs, and a
 * log moved to the new config gets exactly it; the configs stay right
 * through a reopen. */
static void test_shared_config(void **state)
{
    struct fx *f = *state;
    char d2[512];
    snprintf(d2, sizeof d2, "%s/topic-1", f->root);
    struct plog_config c = cfg_with(1 << 20, 100);
    c.retention_ms = 1000;
    struct plog *a = open_log(f->dir, &c), *b = open_log(d2, &c);
    struct plog_config got;
    struct plog_config c2 = c;
    c2.retention_ms = 2000;
    c2.cleanup_compact = true;
    assert_int_equal(plog_set_config(a, &c2), 0);
    plog_get_config(a, &got);
    assert_int_equal(got.retention_ms, 2000);
    assert_true(got.cleanup_compact);
    plog_get_config(b, &got);
    assert_int_equal(got.retention_ms, 1000);
    assert_false(got.cleanup_compact);
    assert_int_equal(plog_set_config(b, &c2), 0);
    plog_get_config(b, &got);
    assert_int_equal(got.retention_ms, 2000);
    assert_true(got.cleanup_compact);
    /* back to the first one, then an invalid one changes nothing */
    assert_int_equal(plog_set_config(a, &c), 0);
    struct plog_config bad = c;
    bad.segment_bytes = 1;
    assert_int_equal(plog_set_config(a, &bad), KERR_INVALID_CONFIG);
    plog_get_config(a, &got);
    assert_int_equal(got.retention_ms, 1000);
    assert_int_equal(got.segment_bytes, 1 << 20);
    plog_close(a, true);
    plog_get_config(b, &got);
    assert_int_equal(got.retention_ms, 2000);
    plog_close(b, true);
    a = open_log(f->dir, &c2);
    plog_get_config(a, &got);
    assert_int_equal(got.retention_ms, 2000);
    plog_close(a, true);
}

static void test_flush_policy(void **state)
{
    struct fx *f = *state;
    struct hook_counts hc = {0};
    struct plog_hooks h = {h_flush, h_start, h_failed, NULL};
    struct plog_open_opts o = PLOG_OPEN_OPTS_INIT;
    o.hooks = &h;
    o.hooks_ctx = &hc;
    struct plog_config c = cfg_with(1 << 20, 100);
    c.flush_messages = 10;
    struct plog *l = open_ex(f->dir, &c, &o);
    int64_t due;
    append_n(l, 5, 0, 1000);
    assert_int_equal(hc.flush_wanted, 0);
    assert_false(plog_flush_due(l, clock_wall_ms(), &due));
    assert_int_equal(due, INT64_MAX);
    append_n(l, 5, 5, 1000);
    assert_int_equal(hc.flush_wanted, 1);
    assert_true(plog_flush_due(l, clock_wall_ms(), &due));
    assert_int_equal(plog_recovery_point(l), 0);
    assert_int_equal(plog_flush(l), 0);
    assert_int_equal(plog_recovery_point(l), 10);
    assert_false(plog_flush_due(l, clock_wall_ms(), &due));

    /* flush.ms: due that long after the last flush. */
    c.flush_messages = INT64_MAX;
    c.flush_ms = 50;
    assert_int_equal(plog_set_config(l, &c), 0);
    append_n(l, 1, 10, 1000);
    int64_t now = clock_wall_ms();
    assert_false(plog_flush_due(l, now, &due));
    assert_true(due > now - 1 && due <= now + 50);
    assert_true(plog_flush_due(l, due, &due));

    /* A roll asks for a flush of the rolled segment. */
    c.segment_ms = 1;
    assert_int_equal(plog_set_config(l, &c), 0);
    int before = hc.flush_wanted;
    append_n(l, 1, 11, 5000); /* 4000 ms after the first batch: rolls */
    assert_int_equal(plog_segment_count(l), 2);
    assert_int_equal(hc.flush_wanted, before + 1);
    assert_int_equal(plog_flush(l), 0);
    assert_int_equal(plog_recovery_point(l), 12);
    plog_close(l, true);
    assert_int_equal(hc.failed, 0);
}

/* ---- segment.ms ---- */

static void test_segment_ms(void **state)
{
    struct fx *f = *state;
    struct plog_config c = cfg_with(1 << 20, 100);
    c.segment_ms = 1000;
    struct plog *l = open_log(f->dir, &c);
    /* Kafka's rule: the new batch's max timestamp minus the first batch's
     * max timestamp must exceed segment.ms. */
    append_n(l, 1, 0, 10000);
    append_n(l, 1, 1, 10999);
    append_n(l, 1, 2, 11000);
    assert_int_equal(plog_segment_count(l), 1);
    append_n(l, 1, 3, 11001);
    assert_int_equal(plog_segment_count(l), 2);
    /* The new segment's clock starts at its own first batch. */
    append_n(l, 1, 4, 11500);
    append_n(l, 1, 5, 12001);
    assert_int_equal(plog_segment_count(l), 2);
    append_n(l, 1, 6, 12002);
    assert_int_equal(plog_segment_count(l), 3);
    /* segment.jitter.ms takes up to min(jitter, segment.ms) off: with a
     * jitter equal to segment.ms some segments roll sooner. */
    c.segment_jitter_ms = 1000;
    assert_int_equal(plog_set_config(l, &c), 0);
    int rolls = plog_segment_count(l);
    int64_t ts = 20000;
    for (int i = 0; i < 40; i++) {
        append_n(l, 1, 7 + i, ts);
        ts += 100;
    }
    /* Without jitter 40 batches 100 ms apart would make 4 segments. */
    assert_true(plog_segment_count(l) - rolls >= 4);
    plog_close(l, true);
}

/* ---- retention ---- */

static void test_retention_time(void **state)
{
    struct fx *f = *state;
    struct plog_config c = cfg_with(1 << 20, 100);
    c.segment_ms = 100; /* a segment per timestamp step below */
    c.retention_ms = 1000;
    c.file_delete_delay_ms = 500;
    struct hook_counts hc = {0};
    struct plog_hooks h = {h_flush, h_start, h_failed, NULL};
    struct plog_open_opts o = PLOG_OPEN_OPTS_INIT;
    o.hooks = &h;
    o.hooks_ctx = &hc;
    struct plog *l = open_ex(f->dir, &c, &o);
    /* Segments with largest timestamps 1000, 2000, 3000, 4000 (active). */
    for (int i = 0; i < 4; i++) {
        append_n(l, 2, i * 2, 1000 + i * 1000 - 1);
    }
    assert_int_equal(plog_segment_count(l), 4);
    /* now - largest > retention.ms: at now = 3000, segment 1000 (2000 >
     * 1000) goes, 2000 (1000, not > 1000) stays. */
    int deleted;
    assert_int_equal(plog_retention(l, 3000, &deleted), 0);
    assert_int_equal(deleted, 1);
    assert_int_equal(plog_log_start_offset(l), 2);
    assert_int_equal(hc.start_moved, 1);
    assert_int_equal(plog_segment_count(l), 3);
    /* The files are renamed, then removed after file.delete.delay.ms. */
    assert_int_equal(fsize_of(f->dir, 0, ".log"), -1);
    assert_true(fsize_of(f->dir, 0, ".log.deleted") > 0);
    assert_true(fsize_of(f->dir, 0, ".index.deleted") >= 0);
    assert_int_equal(plog_purge_deleted(l, 3499, false), 1);
    assert_true(fsize_of(f->dir, 0, ".log.deleted") > 0);
    assert_int_equal(plog_purge_deleted(l, 3500, false), 0);
    assert_int_equal(fsize_of(f->dir, 0, ".log.deleted"), -1);
    assert_int_equal(fsize_of(f->dir, 0, ".timeindex.deleted"), -1);
    struct plog_read_result rr;
    assert_int_equal(plog_read(l, 1, 100, true, -1, &rr), KERR_OFFSET_OUT_OF_RANGE);
    assert_int_equal(plog_read(l, 2, 1 << 20, true, -1, &rr), 0);
    assert_int_equal(rr.first_base_offset, 2);
    sfile_unref(rr.file);
    /* Everything expired, the active segment too: it is rolled and goes;
     * the log keeps an empty active segment at the end offset. */
    assert_int_equal(plog_retention(l, 100000, &deleted), 0);
    assert_int_equal(deleted, 3);
    assert_int_equal(plog_segment_count(l), 1);
    assert_int_equal(plog_log_start_offset(l), 8);
    assert_int_equal(plog_log_end_offset(l), 8);
    append_n(l, 1, 100, 200000);
    assert_int_equal(scan_log(l, 8, NULL, NULL), 1);
    plog_purge_deleted(l, 0, true);
    plog_close(l, true);
    /* The start offset survives a reopen through the checkpoint value. */
    o.log_start_offset = 8;
    l = open_ex(f->dir, &c, &o);
    assert_int_equal(plog_log_start_offset(l), 8);
    plog_close(l, false);
}

static void test_retention_size_and_start(void **state)
{
    struct fx *f = *state;
    struct buf b = BUF_INIT;
    struct rec r[4];
    for (int i = 0; i < 4; i++)
        r[i] = (struct rec){i, i, false, 1000};
    size_t s = add_records(&b, r, 4);
    buf_free(&b);
    struct plog_config c = cfg_with((int64_t)(2 * s), 1);
    c.retention_ms = -1;
    struct plog *l = open_log(f->dir, &c);
    for (int i = 0; i < 9; i++)
        append_n(l, 4, i * 4, 1000); /* segments of 2 batches: 0, 8, 16, 24, 32 (1 batch) */
    assert_int_equal(plog_segment_count(l), 5);
    int64_t total = plog_size_bytes(l);
    assert_int_equal(total, 9 * (int64_t)s);
    /* retention.bytes: delete while size - retention.bytes >= the
     * segment's size. 9s - 7s = 2s: exactly the first segment goes. */
    c.retention_bytes = 7 * (int64_t)s;
    assert_int_equal(plog_set_config(l, &c), 0);
    int deleted;
    assert_int_equal(plog_retention(l, clock_wall_ms(), &deleted), 0);
    assert_int_equal(deleted, 1);
    assert_int_equal(plog_log_start_offset(l), 8);
    /* 7s - (7s - 1) = 1 < 2s: nothing. */
    c.retention_bytes = 7 * (int64_t)s - 1;
    plog_set_config(l, &c);
    assert_int_equal(plog_retention(l, clock_wall_ms(), &deleted), 0);
    assert_int_equal(deleted, 0);
    c.retention_bytes = -1;
    plog_set_config(l, &c);

    /* DeleteRecords moves the start inside a segment; reads below it are
     * out of range at once, the segment goes when wholly below. */
    int64_t low;
    assert_int_equal(plog_delete_records(l, 37, &low), KERR_OFFSET_OUT_OF_RANGE);
    assert_int_equal(plog_delete_records(l, 20, &low), 0);
    assert_int_equal(low, 20);
    assert_int_equal(plog_log_start_offset(l), 20);
    assert_int_equal(plog_delete_records(l, 12, &low), 0); /* never backwards */
    assert_int_equal(low, 20);
    struct plog_read_result rr;
    assert_int_equal(plog_read(l, 19, 100, true, -1, &rr), KERR_OFFSET_OUT_OF_RANGE);
    assert_int_equal(plog_read(l, 20, 1 << 20, true, -1, &rr), 0);
    assert_int_equal(rr.first_base_offset, 20);
    sfile_unref(rr.file);
    assert_int_equal(plog_retention(l, clock_wall_ms(), &deleted), 0);
    assert_int_equal(deleted, 1); /* segment 8..15; 16..23 holds 20 */
    assert_int_equal(plog_segment_count(l), 3);
    assert_int_equal(plog_log_start_offset(l), 20);
    /* compact without delete: size and time do not apply, the start
     * offset still does. */
    c.cleanup_delete = false;
    c.cleanup_compact = true;
    c.retention_bytes = 0;
    c.retention_ms = 0;
    plog_set_config(l, &c);
    assert_int_equal(plog_retention(l, clock_wall_ms(), &deleted), 0);
    assert_int_equal(deleted, 0);
    /* The high watermark bounds DeleteRecords and retention. */
    plog_set_high_watermark(l, 30);
    assert_int_equal(plog_delete_records(l, 31, &low), KERR_OFFSET_OUT_OF_RANGE);
    assert_int_equal(plog_delete_records(l, 30, &low), 0);
    c.cleanup_delete = true;
    plog_set_config(l, &c);
    assert_int_equal(plog_retention(l, clock_wall_ms() + 1000000, &deleted), 0);
    /* segment 16..23 (upper 24 <= 30) goes; 24..31 (upper 32 > 30) stays */
    assert_int_equal(deleted, 1);
    assert_int_equal(plog_segment_count(l), 2);
    plog_purge_deleted(l, 0, true);
    plog_close(l, true);
}

/* ---- truncation, epochs ---- */

static void test_truncate_and_epochs(void **state)
{
    struct fx *f = *state;
    struct buf b = BUF_INIT;
    struct rec r[4];
    for (int i = 0; i < 4; i++)
        r[i] = (struct rec){i, i, false, 1000};
    size_t s = add_records(&b, r, 4);
    struct plog_config c = cfg_with((int64_t)(2 * s), 1);
    struct plog *l = open_log(f->dir, &c);
    /* Epoch 0 for offsets 0..11, epoch 2 from 12, epoch 5 from 28. */
    for (int i = 0; i < 9; i++) {
        buf_reset(&b);
        add_records(&b, r, 4);
        int32_t epoch = i < 3 ? 0 : i < 7 ? 2 : 5;
        assert_int_equal(plog_append(l, b.data, b.len, epoch, -1, NULL), 0);
    }
    int32_t e;
    int64_t so;
    plog_latest_epoch(l, &e, &so);
    assert_int_equal(e, 5);
    assert_int_equal(so, 28);
    int32_t ee;
    int64_t eo;
    plog_end_offset_for_epoch(l, 3, &ee, &eo);
    assert_int_equal(ee, 2);
    assert_int_equal(eo, 28);
    plog_end_offset_for_epoch(l, 5, &ee, &eo);
    assert_int_equal(eo, 36);
    /* What OffsetForLeaderEpoch answers (Kafka's endOffsetFor): {asked,
     * epoch, end} */
    static const struct { int32_t asked, epoch; int64_t end; } ofle[] = {
        {5, 5, 36}, {3, 2, 28}, {2, 2, 28}, {1, 0, 12}, {0, 0, 12}, {6, -1, -1}, {-1, -1, -1}};
    for (size_t i = 0; i < sizeof ofle / sizeof ofle[0]; i++) {
        plog_offset_for_leader_epoch(l, ofle[i].asked, &ee, &eo);
        assert_int_equal(ee, ofle[i].epoch);
        assert_int_equal(eo, ofle[i].end);
    }
    plog_close(l, true);
    char *text;
    size_t n;
    char p[512];
    snprintf(p, sizeof p, "%s/%s", f->dir, CKPT_LEADER_EPOCH_FILE);
    assert_int_equal(fs_read_small(p, 4096, &text, &n), 0);
    assert_string_equal(text, "0\n3\n0 0\n2 12\n5 28\n");
    free(text);

    /* Truncation mid-batch removes that whole batch; the epochs after the
     * new end go too. */
    l = open_log(f->dir, &c);
    assert_int_equal(plog_truncate_to(l, 26), 0);
    assert_int_equal(plog_log_end_offset(l), 24);
    plog_latest_epoch(l, &e, &so);
    assert_int_equal(e, 2);
    assert_int_equal(scan_log(l, 0, NULL, NULL), 24);
    /* appends continue at 24 */
    buf_reset(&b);
    add_records(&b, r, 4);
    struct plog_append_result res;
    assert_int_equal(plog_append(l, b.data, b.len, 6, -1, &res), 0);
    assert_int_equal(res.base_offset, 24);
    plog_latest_epoch(l, &e, &so);
    assert_int_equal(e, 6);
    assert_int_equal(so, 24);
    /* Truncation to a segment boundary and below the start. */
    assert_int_equal(plog_truncate_to(l, 8), 0);
    assert_int_equal(plog_log_end_offset(l), 8);
    assert_int_equal(plog_segment_count(l), 1);
    assert_int_equal(plog_truncate_to(l, 4), 0);
    assert_int_equal(plog_log_end_offset(l), 4);
    assert_int_equal(plog_truncate_fully(l, 100), 0);
    assert_int_equal(plog_log_start_offset(l), 100);
    assert_int_equal(plog_log_end_offset(l), 100);
    buf_reset(&b);
    add_records(&b, r, 4);
    assert_int_equal(plog_append(l, b.data, b.len, 7, -1, &res), 0);
    assert_int_equal(res.base_offset, 100);
    /* an epoch below the earliest ends where the earliest starts */
    plog_offset_for_leader_epoch(l, 4, &ee, &eo);
    assert_int_equal(ee, 4);
    assert_int_equal(eo, 100);
    plog_offset_for_leader_epoch(l, 7, &ee, &eo);
    assert_int_equal(ee, 7);
    assert_int_equal(eo, 104);
    plog_purge_deleted(l, 0, true);
    plog_close(l, true);
    l = open_log(f->dir, &c);
    assert_int_equal(plog_log_start_offset(l), 100);
    assert_int_equal(plog_log_end_offset(l), 104);
    plog_close(l, false);
    buf_free(&b);
}

/* ---- log manager ---- */

struct flushed_rec {
    int calls;
    int64_t last_rp;
};

static void on_flushed(void *ctx, struct plog *l)
{
    struct flushed_rec *fr = ctx;
    __atomic_add_fetch(&fr->calls, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&fr->last_rp, plog_recovery_point(l), __ATOMIC_SEQ_CST);
}

static struct samsa_config *mgr_config(const char *root)
{
    struct samsa_config *cfg = config_new();
    char err[256];
    assert_int_equal(config_set(cfg, "log.dirs", root, err, sizeof err), 0);
    assert_int_equal(config_set(cfg, "log.cleaner.backoff.ms", "20", err, sizeof err), 0);
    return cfg;
}

static void test_logmgr(void **state)
{
    struct fx *f = *state;
    struct samsa_config *cfg = mgr_config(f->root);
    struct logmgr *m = logmgr_create(cfg);
    logmgr_start(m);
    struct plog_config c = cfg_with(1 << 20, 100);
    c.flush_messages = 1;
    c.retention_ms = -1; /* the records' 1970 timestamps would expire */
    struct flushed_rec fr = {0, 0};
    struct plog *l;
    assert_int_equal(logmgr_open(m, 0, "topic-0", NULL, &c, on_flushed, &fr, &l), 0);
    /* flush.messages=1: the flusher fsyncs after each append and says so. */
    append_n(l, 3, 0, 1000);
    for (int i = 0; i < 200 && __atomic_load_n(&fr.last_rp, __ATOMIC_SEQ_CST) < 3; i++)
        usleep(5000);
    assert_int_equal(plog_recovery_point(l), 3);
    assert_true(__atomic_load_n(&fr.calls, __ATOMIC_SEQ_CST) >= 1);
    /* DeleteRecords: the start offset checkpoint follows within ~1 s. */
    int64_t low;
    assert_int_equal(plog_delete_records(l, 2, &low), 0);
    char p[512];
    snprintf(p, sizeof p, "%s/%s", f->root, CKPT_LOG_START_FILE);
    struct ckpt_entry *e = NULL;
    size_t n = 0;
    bool seen = false;
    for (int i = 0; i < 100 && !seen; i++) {
        usleep(50000);
        if (ckpt_read(p, &e, &n) == 0) {
            seen = n == 1 && e[0].offset == 2 && strcmp(e[0].topic, "topic") == 0 && e[0].partition == 0;
            ckpt_free(e, n);
        }
    }
    if (!seen) {
        char *t = NULL;
        size_t tl;
        fs_read_small(p, 4096, &t, &tl);
        fprintf(stderr, "log-start-offset-checkpoint: [%s]\n", t ? t : "(none)");
        free(t);
    }
    assert_true(seen);
    /* The owner's high watermark (replication-offset-checkpoint). */
    assert_int_equal(plog_known_high_watermark(l), -1);
    plog_set_high_watermark(l, 2);
    logmgr_stop(m);
    logmgr_close(m, l, true);
    logmgr_destroy(m);
    snprintf(p, sizeof p, "%s/%s", f->root, CKPT_REPLICATION_FILE);
    assert_int_equal(ckpt_read(p, &e, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(e[0].topic, "topic");
    assert_int_equal(e[0].offset, 2);
    ckpt_free(e, n);
    /* Final checkpoints: recovery point = end. */
    snprintf(p, sizeof p, "%s/%s", f->root, CKPT_RECOVERY_POINT_FILE);
    assert_int_equal(ckpt_read(p, &e, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(e[0].offset, 3);
    ckpt_free(e, n);

    /* Reopen through a new manager: the checkpointed values come back;
     * a second log opened on the pool comes back through its callback. */
    m = logmgr_create(cfg);
    logmgr_start(m);
    assert_int_equal(logmgr_open(m, 0, "topic-0", NULL, &c, on_flushed, &fr, &l), 0);
    assert_int_equal(plog_log_start_offset(l), 2);
    assert_int_equal(plog_recovery_point(l), 3);
    assert_int_equal(plog_known_high_watermark(l), 2);
    logmgr_close(m, l, false);
    /* A dir failure takes every log in it offline. */
    assert_int_equal(logmgr_open(m, 0, "topic-1", NULL, &c, on_flushed, &fr, &l), 0);
    quiet();
    logmgr_fail_dir(m, 0, "test");
    loud();
    assert_true(plog_offline(l));
    struct buf b = BUF_INIT;
    struct rec r1 = {1, 1, false, 1};
    add_records(&b, &r1, 1);
    assert_int_equal(plog_append(l, b.data, b.len, 0, -1, NULL), KERR_KAFKA_STORAGE_ERROR);
    buf_free(&b);
    struct plog *l2;
    assert_int_equal(logmgr_open(m, 0, "topic-2", NULL, &c, on_flushed, &fr, &l2), KERR_KAFKA_STORAGE_ERROR);
    logmgr_stop(m);
    logmgr_close(m, l, true);
    logmgr_destroy(m);
    config_free(cfg);
}

/* The last byte of the log's only segment flipped: a batch's payload,
 * which only recovery's CRC check notices. */
static void flip_last_byte(const char *dir)
{
    char *lp = fpath(dir, 0, ".log");
    int fd = open(lp, O_RDWR);
    assert_true(fd >= 0);
    off_t end = lseek(fd, 0, SEEK_END);
    uint8_t byte;
    assert_int_equal(pread(fd, &byte, 1, end - 1), 1);
    byte ^= 0x40;
    assert_int_equal(pwrite(fd, &byte, 1, end - 1), 1);
    close(fd);
    free(lp);
}

static char *read_text(const char *path)
{
    char *t = NULL;
    size_t n;
    if (fs_read_small(path, 4096, &t, &n) != 0)
        return NULL;
    t = realloc(t, n + 1);
    t[n] = '\0';
    return t;
}

/* One clean-shutdown marker per log dir (Kafka's LogManager): written
 * after every log closed cleanly and the checkpoints, with the broker
 * epoch (KIP-966); read and removed before any log opens; its logs open
 * without recovery. */
/* Which file path is, 0 when it is missing: a checkpoint is replaced by
 * rename, so a rewrite gives another inode and change time (both, as an
 * inode number may come back two rewrites later). */
static uint64_t inode_of(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return 0;
    return (uint64_t)st.st_ino * 1000003u + (uint64_t)st.st_ctim.tv_sec * 1000000000u + (uint64_t)st.st_ctim.tv_nsec;
}

/* Waits up to 2 s for the high-watermark checkpoint to hold hw for
 * "topic-0"; its inode then, 0 when it never did. */
static uint64_t await_hw_ckpt(const char *path, int64_t hw)
{
    for (int i = 0; i < 200; i++) {
        /* The same file before and after the read: what was read is
         * that file's. */
        uint64_t ino = inode_of(path);
        struct ckpt_entry *e = NULL;
        size_t n = 0;
        if (ino != 0 && ckpt_read(path, &e, &n) == 0) {
            bool ok = n == 1 && e[0].offset == hw && e[0].partition == 0;
            ckpt_free(e, n);
            if (ok && ino == inode_of(path))
                return ino;
        }
        usleep(10000);
    }
    return 0;
}

/* The periodic recovery-point and high-watermark checkpoints are written
 * only when something they hold changed (idle partitions cost no
 * periodic work), and again as soon as something did. */
static void test_logmgr_unchanged_checkpoints(void **state)
{
    struct fx *f = *state;
    struct samsa_config *cfg = mgr_config(f->root);
    char err[256];
    assert_int_equal(config_set(cfg, "replica.high.watermark.checkpoint.interval.ms", "20", err, sizeof err), 0);
    assert_int_equal(config_set(cfg, "log.flush.offset.checkpoint.interval.ms", "20", err, sizeof err), 0);
    struct logmgr *m = logmgr_create(cfg);
    logmgr_start(m);
    struct plog_config c = cfg_with(1 << 20, 100);
    c.retention_ms = -1;
    struct plog *l;
    assert_int_equal(logmgr_open(m, 0, "topic-0", NULL, &c, NULL, NULL, &l), 0);
    append_n(l, 3, 0, 1000);
    plog_set_high_watermark(l, 2);
    char hp[512], rp[512];
    snprintf(hp, sizeof hp, "%s/%s", f->root, CKPT_REPLICATION_FILE);
    snprintf(rp, sizeof rp, "%s/%s", f->root, CKPT_RECOVERY_POINT_FILE);
    uint64_t hw1 = await_hw_ckpt(hp, 2);
    assert_true(hw1 != 0);
    uint64_t rp1 = inode_of(rp);
    assert_true(rp1 != 0);
    /* Nothing moves for 15 intervals: neither file is replaced. */
    usleep(300000);
    assert_true(inode_of(hp) == hw1);
    assert_true(inode_of(rp) == rp1);
    /* The high watermark moves: written again within the bound. */
    plog_set_high_watermark(l, 3);
    uint64_t hw2 = await_hw_ckpt(hp, 3);
    assert_true(hw2 != 0 && hw2 != hw1);
    /* A flush moves the recovery point: that file is replaced too. */
    assert_int_equal(plog_flush(l), 0);
    assert_int_equal(plog_recovery_point(l), 3);
    bool replaced = false;
    for (int i = 0; i < 200 && !replaced; i++) {
        usleep(10000);
        replaced = inode_of(rp) != rp1 && inode_of(rp) != 0;
    }
    assert_true(replaced);
    logmgr_stop(m);
    logmgr_close(m, l, true);
    logmgr_destroy(m);
    config_free(cfg);
}

/* Opens and registers "<prefix>-<i>" in the manager's first dir. */
static struct plog *mgr_open(struct logmgr *m, const char *prefix, int i, const struct plog_config *c)
{
    char name[64];
    snprintf(name, sizeof name, "%s-%d", prefix, i);
    struct plog *l = NULL;
    assert_int_equal(logmgr_open(m, 0, name, NULL, c, NULL, NULL, &l), 0);
    return l;
}

/* Retention ticks (issue 12) without the scheduler thread, at chosen
 * wall times: idle empty logs are never looked at; a log is looked at
 * when its oldest segment's retention.ms expires, or when its hook asks
 * (first append into an empty log). */
static void test_logmgr_retention_due(void **state)
{
    struct fx *f = *state;
    struct samsa_config *cfg = mgr_config(f->root);
    struct logmgr *m = logmgr_create(cfg);
    struct plog_config c = cfg_with(1 << 20, 100);
    c.retention_ms = 1000;
    enum { IDLE = 50 };
    struct plog *idle[IDLE], *l;
    for (int i = 0; i < IDLE; i++)
        idle[i] = mgr_open(m, "idle", i, &c);
    l = mgr_open(m, "data", 0, &c);
    int64_t t0 = clock_wall_ms();
    /* Empty logs have no due time: no tick looks at them. */
    assert_int_equal(plog_retention_due(l, t0), INT64_MAX);
    struct logmgr_scan_stats st;
    logmgr_scan_stats(m, &st);
    assert_int_equal(st.retention_logs, 0);
    assert_int_equal(logmgr_retention_tick(m, t0, false), 0);
    assert_int_equal(logmgr_retention_tick(m, t0 + 7 * PLOG_DAY_MS, false), 0);

    /* The first append arms the log; the tick looks at it alone and files
     * it under its oldest segment's largest timestamp + retention.ms. */
    append_n(l, 3, 0, t0);
    assert_int_equal(plog_retention_due(l, t0), t0 + 2 + 1000 + 1);
    logmgr_scan_stats(m, &st);
    assert_int_equal(st.retention_logs, 1);
    assert_int_equal(logmgr_retention_tick(m, t0, false), 1);
    assert_int_equal(plog_log_start_offset(l), 0);
    assert_int_equal(logmgr_retention_tick(m, t0 + 1002, false), 0);
    assert_int_equal(plog_log_start_offset(l), 0);
    /* Due: deleted at that tick (the active segment rolled first). */
    assert_int_equal(logmgr_retention_tick(m, t0 + 1003, false), 1);
    assert_int_equal(plog_log_start_offset(l), 3);
    assert_int_equal(plog_size_bytes(l), 0);
    logmgr_scan_stats(m, &st);
    assert_int_equal(st.retention_logs, 0);
    assert_int_equal(st.retention_visits, 2);

    /* Empty again: the next append arms it again, and it expires too. */
    int64_t t1 = t0 + 5000;
    append_n(l, 2, 0, t1);
    assert_int_equal(logmgr_retention_tick(m, t1 + 1000, false), 1);
    assert_int_equal(plog_log_start_offset(l), 3);
    assert_int_equal(logmgr_retention_tick(m, t1 + 1002, false), 1);
    assert_int_equal(plog_log_start_offset(l), 5);

    /* retention.ms -1: nothing becomes due by time. */
    struct plog_config keep = c;
    keep.retention_ms = -1;
    assert_int_equal(logmgr_set_config(m, idle[0], &keep), 0);
    append_n(idle[0], 2, 0, t0);
    assert_int_equal(plog_retention_due(idle[0], t0), INT64_MAX);
    assert_int_equal(logmgr_retention_tick(m, t0, false), 1);
    assert_int_equal(logmgr_retention_tick(m, t0 + 7 * PLOG_DAY_MS, false), 0);
    assert_int_equal(plog_log_start_offset(idle[0]), 0);

    /* A config change that lowers retention.ms takes effect at the next
     * tick: the log was filed under 7 days. */
    struct plog_config week = c;
    week.retention_ms = 7 * PLOG_DAY_MS;
    assert_int_equal(logmgr_set_config(m, idle[1], &week), 0);
    append_n(idle[1], 2, 0, t0);
    assert_int_equal(logmgr_retention_tick(m, t0, false), 1);
    assert_int_equal(logmgr_retention_tick(m, t0 + 5000, false), 0);
    assert_int_equal(logmgr_set_config(m, idle[1], &c), 0);
    assert_int_equal(logmgr_retention_tick(m, t0 + 5000, false), 1);
    assert_int_equal(plog_log_start_offset(idle[1]), 2);

    for (int i = 0; i < IDLE; i++)
        logmgr_close(m, idle[i], true);
    logmgr_close(m, l, true);
    logmgr_scan_stats(m, &st);
    assert_int_equal(st.retention_logs, 0);
    logmgr_destroy(m);
    config_free(cfg);
}

/* A long run of the recovery pool's opens shows its progress ("opening
 * logs: N of M done") every progress interval, then its one line at the
 * end; a short one (the default 5 s interval) shows only that line. The
 * server's stderr is captured into a file. */
struct opened_logs {
    pthread_mutex_t mu;
    struct plog *l[64];
    int n, failed;
};

static void on_opened(void *ctx, int rc, struct plog *l)
{
    struct opened_logs *o = ctx;
    pthread_mutex_lock(&o->mu);
    if (rc || !l)
        o->failed++;
    else
        o->l[o->n++] = l;
    pthread_mutex_unlock(&o->mu);
}

static char *open_run_output(struct logmgr *m, const char *root, const char *prefix, int n, int64_t interval_ms,
                             struct opened_logs *o)
{
    char path[512];
    snprintf(path, sizeof path, "%s/stderr-%s.txt", root, prefix);
    fflush(stderr);
    int saved = dup(2), fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    enum slog_level was = slog_get_level();
    slog_set_level(SLOG_INFO);
    logmgr_set_progress_interval_ms(m, interval_ms);
    struct plog_config c = cfg_with(1 << 20, 100);
    logmgr_opens_hold(m);
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s-%d", prefix, i);
        logmgr_open_async(m, 0, name, NULL, false, &c, NULL, on_opened, o);
    }
    logmgr_opens_release(m);
    assert_int_equal(logmgr_wait_opens(m, 30000), 0);
    slog_set_level(was);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *text = xcalloc(1, 1 << 16);
    size_t got = fread(text, 1, (1 << 16) - 1, f);
    text[got] = 0;
    fclose(f);
    return text;
}

static void test_logmgr_open_progress(void **state)
{
    struct fx *f = *state;
    struct samsa_config *cfg = mgr_config(f->root);
    struct logmgr *m = logmgr_create(cfg);
    struct opened_logs o = {.mu = PTHREAD_MUTEX_INITIALIZER};
    char *text = open_run_output(m, f->root, "prog", 40, 0, &o);
    assert_int_equal(o.n, 40);
    assert_int_equal(o.failed, 0);
    /* Each line is taken under the lock and written after it: with a 0 ms
     * interval two pool threads may write theirs in either order, but
     * never the same count twice. */
    int lines = 0;
    bool seen[40] = {false};
    long done = 0, of = 0;
    for (const char *p = text; (p = strstr(p, "opening logs: ")); p++) {
        assert_int_equal(sscanf(p, "opening logs: %ld of %ld done", &done, &of), 2);
        assert_true(done >= 1 && done < 40 && of <= 40 && done <= of);
        assert_false(seen[done]);
        seen[done] = true;
        lines++;
    }
    assert_true(lines >= 1);
    assert_non_null(strstr(text, "log manager: 40 log(s) opened in "));
    free(text);

    /* at the default interval a quick run says nothing until its end */
    struct opened_logs q = {.mu = PTHREAD_MUTEX_INITIALIZER};
    text = open_run_output(m, f->root, "quick", 10, 5000, &q);
    assert_int_equal(q.n, 10);
    assert_null(strstr(text, "opening logs: "));
    assert_non_null(strstr(text, "log manager: 10 log(s) opened in "));
    free(text);

    for (int i = 0; i < o.n; i++)
        logmgr_close(m, o.l[i], true);
    for (int i = 0; i < q.n; i++)
        logmgr_close(m, q.l[i], true);
    logmgr_destroy(m);
    config_free(cfg);
}

/* retention.bytes exceeded by appends is enforced at the next tick
 * (every append may arm the log, not only the first), and DeleteRecords
 * on one log has that log, and no other, looked at at once. */
static void test_logmgr_retention_bytes_and_delete_records(void **state)
{
    struct fx *f = *state;
    struct samsa_config *cfg = mgr_config(f->root);
    struct logmgr *m = logmgr_create(cfg);
    struct plog_config c = cfg_with(1200, 100);
    c.retention_ms = 7 * PLOG_DAY_MS;
    struct plog_config cb = c;
    cb.retention_ms = -1;
    cb.retention_bytes = 3000;
    int64_t t0 = clock_wall_ms();
    struct plog *lb, *ld[4];
    lb = mgr_open(m, "bytes", 0, &cb);
    for (int i = 0; i < 4; i++) {
        ld[i] = mgr_open(m, "dr", i, &c);
        for (int k = 0; k < 24; k++)
            append_n(ld[i], 4, 0, t0);
    }
    /* The first tick files every log (their first appends asked). */
    assert_int_equal(logmgr_retention_tick(m, t0, false), 4);
    assert_int_equal(logmgr_retention_tick(m, t0, false), 0);

    append_n(lb, 4, 0, t0);
    assert_int_equal(logmgr_retention_tick(m, t0, false), 1);
    assert_int_equal(logmgr_retention_tick(m, t0, false), 0);
    /* Appends past retention.bytes: the log is looked at and trimmed. */
    for (int k = 0; k < 30; k++)
        append_n(lb, 4, 0, t0);
    assert_true(plog_size_bytes(lb) > 3000 + 1200);
    assert_int_equal(logmgr_retention_tick(m, t0, false), 1);
    assert_true(plog_log_start_offset(lb) > 0);
    assert_true(plog_size_bytes(lb) <= 3000 + 1200);
    int64_t start = plog_log_start_offset(lb);
    for (int k = 0; k < 30; k++)
        append_n(lb, 4, 0, t0);
    assert_int_equal(logmgr_retention_tick(m, t0, false), 1);
    assert_true(plog_log_start_offset(lb) > start);
    assert_true(plog_size_bytes(lb) <= 3000 + 1200);

    /* DeleteRecords on dr-2: a poke looks at it alone and its segments
     * below the new start go. */
    int nsegs = plog_segment_count(ld[2]);
    assert_true(nsegs > 3);
    int64_t low;
    assert_int_equal(plog_delete_records(ld[2], plog_log_end_offset(ld[2]) - 1, &low), 0);
    assert_int_equal(logmgr_retention_tick(m, t0, true), 1);
    assert_int_equal(plog_segment_count(ld[2]), 1);
    for (int i = 0; i < 4; i++)
        if (i != 2)
            assert_int_equal(plog_segment_count(ld[i]), nsegs);
    assert_int_equal(logmgr_retention_tick(m, t0, false), 0);

    logmgr_close(m, lb, true);
    for (int i = 0; i < 4; i++)
        logmgr_close(m, ld[i], true);
    logmgr_destroy(m);
    config_free(cfg);
}

/* The cleaner step looks at compacted logs only, and at a compacted log
 * again only once something it depends on changed; it still cleans a
 * dirty one. */
static void test_logmgr_cleaner_scan(void **state)
{
    struct fx *f = *state;
    struct samsa_config *cfg = mgr_config(f->root);
    struct logmgr *m = logmgr_create(cfg);
    struct plog_config c = cfg_with(1200, 64);
    c.retention_ms = -1;
    struct plog_config cc = c;
    cc.cleanup_compact = true;
    cc.cleanup_delete = false;
    int64_t t0 = clock_wall_ms();
    enum { PLAIN = 20 };
    struct plog *plain[PLAIN], *lc, *lc2;
    for (int i = 0; i < PLAIN; i++) {
        plain[i] = mgr_open(m, "plain", i, &c);
        for (int k = 0; k < 8; k++)
            append_n(plain[i], 4, 0, t0);
    }
    lc = mgr_open(m, "compact", 0, &cc);
    lc2 = mgr_open(m, "compact", 1, &cc);
    struct logmgr_scan_stats st;
    logmgr_scan_stats(m, &st);
    assert_int_equal(st.compacted_logs, 2);
    /* compact-0 gets the same 4 keys again and again. */
    for (int k = 0; k < 20; k++)
        append_n(lc, 4, 0, t0);
    assert_true(plog_segment_count(lc) > 3);
    int64_t before = plog_size_bytes(lc);
    assert_true(logmgr_clean_one(m, t0));
    assert_true(plog_size_bytes(lc) < before);
    assert_true(plog_cleaner_offset(lc) > 0);
    logmgr_scan_stats(m, &st);
    assert_int_equal(st.cleaner_visits, 2); /* both compacted logs, no plain one */
    /* Cleaned: looked at once more (the cleaning changed it), then not
     * until something changes. */
    assert_false(logmgr_clean_one(m, t0));
    logmgr_scan_stats(m, &st);
    assert_int_equal(st.cleaner_visits, 3);
    for (int i = 0; i < 5; i++)
        assert_false(logmgr_clean_one(m, t0 + i * 1000));
    logmgr_scan_stats(m, &st);
    assert_int_equal(st.cleaner_visits, 3);
    /* New dirty segments: cleaned again. */
    int64_t co = plog_cleaner_offset(lc);
    for (int k = 0; k < 20; k++)
        append_n(lc, 4, 0, t0);
    assert_true(logmgr_clean_one(m, t0));
    assert_true(plog_cleaner_offset(lc) > co);
    /* cleanup.policy compact on a plain log: it joins the set and is cleaned. */
    assert_int_equal(logmgr_set_config(m, plain[3], &cc), 0);
    logmgr_scan_stats(m, &st);
    assert_int_equal(st.compacted_logs, 3);
    assert_true(logmgr_clean_one(m, t0));
    assert_true(plog_cleaner_offset(plain[3]) > 0);
    assert_int_equal(logmgr_set_config(m, plain[3], &c), 0);
    logmgr_scan_stats(m, &st);
    assert_int_equal(st.compacted_logs, 2);

    for (int i = 0; i < PLAIN; i++)
        logmgr_close(m, plain[i], true);
    logmgr_close(m, lc, true);
    logmgr_close(m, lc2, true);
    logmgr_scan_stats(m, &st);
    assert_int_equal(st.compacted_logs, 0);
    logmgr_destroy(m);
    config_free(cfg);
}

/* A compacted log holding a batch whose records cannot be read (stored
 * by samsa.record.validation=batch before the topic became compacted):
 * the cleaner fails once, marks it uncleanable and leaves it alone, as
 * Kafka does, instead of failing again at every pass. */
static void test_logmgr_uncleanable(void **state)
{
    struct fx *f = *state;
    struct samsa_config *cfg = mgr_config(f->root);
    struct logmgr *m = logmgr_create(cfg);
    struct plog_config cc = cfg_with(1200, 64);
    cc.retention_ms = -1;
    cc.cleanup_compact = true;
    cc.cleanup_delete = false;
    int64_t t0 = clock_wall_ms();
    struct plog *l = mgr_open(m, "bad", 0, &cc);
    for (int k = 0; k < 10; k++)
        append_n(l, 4, 0, t0);
    /* The first record's length one more than its fields, the CRC fixed. */
    struct rec r[2] = {{1, 1, false, t0}, {2, 2, false, t0}};
    struct buf b = BUF_INIT;
    add_records(&b, r, 2);
    b.data[RB_HEADER_SIZE] += 2; /* zigzag varint: length + 1 */
    assert_int_equal(rb_recompute_crc(b.data, b.len), 0);
    struct plog_append_result res;
    assert_int_equal(plog_append(l, b.data, b.len, 0, -1, &res), 0);
    buf_free(&b);
    for (int k = 0; k < 10; k++)
        append_n(l, 4, 0, t0);
    int64_t size = plog_size_bytes(l);
    struct logmgr_scan_stats st;
    logmgr_scan_stats(m, &st);
    assert_int_equal(st.uncleanable_logs, 0);
    assert_false(logmgr_clean_one(m, t0));
    logmgr_scan_stats(m, &st);
    assert_int_equal(st.cleaner_visits, 1);
    assert_int_equal(st.uncleanable_logs, 1);
    assert_int_equal(plog_size_bytes(l), size);
    /* left alone, even after more appends */
    for (int k = 0; k < 10; k++)
        append_n(l, 4, 0, t0);
    for (int i = 0; i < 3; i++)
        assert_false(logmgr_clean_one(m, t0 + i * 1000));
    logmgr_scan_stats(m, &st);
    assert_int_equal(st.cleaner_visits, 1);
    assert_false(plog_offline(l));
    logmgr_close(m, l, true);
    logmgr_destroy(m);
    config_free(cfg);
}

static void test_logmgr_clean_marker(void **state)
{
    struct fx *f = *state;
    struct samsa_config *cfg = mgr_config(f->root);
    struct plog_config c = cfg_with(1 << 20, 100);
    c.retention_ms = -1;
    char marker[512], part_marker[512];
    snprintf(marker, sizeof marker, "%s/%s", f->root, PLOG_CLEAN_SHUTDOWN_FILE);
    snprintf(part_marker, sizeof part_marker, "%s/%s", f->dir, PLOG_CLEAN_SHUTDOWN_FILE);

    /* A fresh dir: no marker, no epoch. */
    struct logmgr *m = logmgr_create(cfg);
    assert_int_equal(logmgr_clean_dirs(m), 0);
    assert_int_equal(logmgr_previous_broker_epoch(m), -1);
    logmgr_start(m);
    struct plog *l;
    assert_int_equal(logmgr_open(m, 0, "topic-0", NULL, &c, NULL, NULL, &l), 0);
    for (int i = 0; i < 3; i++)
        append_n(l, 4, i * 4, 1000 + i * 10);
    assert_int_equal(plog_log_end_offset(l), 12);
    logmgr_stop(m);
    logmgr_close(m, l, true);
    logmgr_set_broker_epoch(m, 4711);
    logmgr_destroy(m);
    /* The dir's marker, none in the partition dir. */
    char *t = read_text(marker);
    assert_non_null(t);
    assert_string_equal(t, "{\"version\":0,\"brokerEpoch\":4711,\"logsClosed\":true}");
    free(t);
    assert_int_equal(access(part_marker, F_OK), -1);

    /* A clean start: epoch and clean state read, the marker removed at
     * once; the log opens without recovery, so the flipped payload byte
     * goes unnoticed (recovery would cut the last batch). */
    flip_last_byte(f->dir);
    m = logmgr_create(cfg);
    assert_int_equal(access(marker, F_OK), -1);
    assert_int_equal(logmgr_clean_dirs(m), 1);
    assert_int_equal(logmgr_previous_broker_epoch(m), 4711);
    logmgr_start(m);
    assert_int_equal(logmgr_open(m, 0, "topic-0", NULL, &c, NULL, NULL, &l), 0);
    assert_int_equal(plog_log_end_offset(l), 12);
    /* A log that cannot close cleanly (here: an unclean close, as a
     * failed flush would be) leaves its dir without a marker. */
    logmgr_stop(m);
    logmgr_close(m, l, false);
    logmgr_set_broker_epoch(m, 4712);
    logmgr_destroy(m);
    assert_int_equal(access(marker, F_OK), -1);

    /* As after a crash: recovered from the recovery point; the corrupt
     * last batch is cut. */
    m = logmgr_create(cfg);
    assert_int_equal(logmgr_clean_dirs(m), 0);
    assert_int_equal(logmgr_previous_broker_epoch(m), -1);
    logmgr_start(m);
    quiet();
    assert_int_equal(logmgr_open(m, 0, "topic-0", NULL, &c, NULL, NULL, &l), 0);
    loud();
    assert_int_equal(plog_log_end_offset(l), 8);
    logmgr_stop(m);
    logmgr_close(m, l, true);
    logmgr_destroy(m); /* the broker never registered: epoch -1 */
    t = read_text(marker);
    assert_non_null(t);
    assert_string_equal(t, "{\"version\":0,\"brokerEpoch\":-1,\"logsClosed\":true}");
    free(t);

    /* A dir that started unclean with a log the start-up did not open
     * (not recovered) gets no marker: that log is not vouched for. */
    m = logmgr_create(cfg);
    assert_int_equal(logmgr_clean_dirs(m), 1);
    logmgr_stop(m);
    logmgr_destroy(m);
    assert_int_equal(access(marker, F_OK), 0); /* clean start: untouched logs stay clean */
    assert_int_equal(unlink(marker), 0);
    m = logmgr_create(cfg);
    logmgr_note_unopened(m, 0);
    logmgr_stop(m);
    logmgr_destroy(m);
    assert_int_equal(access(marker, F_OK), -1);

    /* The file samsa wrote before (the broker epoch only, written before
     * the logs closed) and Kafka's own: the epoch is read, the logs are
     * recovered; an old per-partition marker still marks its log clean
     * and is removed when the log opens. */
    flip_last_byte(f->dir);
    assert_int_equal(fs_write_atomic(marker, "{\"version\":0,\"brokerEpoch\":99}", 30), 0);
    m = logmgr_create(cfg);
    assert_int_equal(access(marker, F_OK), -1);
    assert_int_equal(logmgr_clean_dirs(m), 0);
    assert_int_equal(logmgr_previous_broker_epoch(m), 99);
    logmgr_start(m);
    quiet();
    assert_int_equal(logmgr_open(m, 0, "topic-0", NULL, &c, NULL, NULL, &l), 0);
    loud();
    assert_int_equal(plog_log_end_offset(l), 4); /* the flipped batch cut */
    append_n(l, 4, 100, 2000);
    logmgr_stop(m);
    logmgr_close(m, l, false);
    logmgr_destroy(m);
    flip_last_byte(f->dir);
    assert_int_equal(fs_write_atomic(part_marker, "", 0), 0);
    m = logmgr_create(cfg);
    assert_int_equal(logmgr_clean_dirs(m), 0);
    logmgr_start(m);
    assert_int_equal(logmgr_open(m, 0, "topic-0", NULL, &c, NULL, NULL, &l), 0);
    assert_int_equal(plog_log_end_offset(l), 8); /* trusted: not scanned */
    assert_int_equal(access(part_marker, F_OK), -1);
    logmgr_stop(m);
    logmgr_close(m, l, true);
    logmgr_destroy(m);
    assert_int_equal(access(marker, F_OK), 0);
    config_free(cfg);
}

/* ---- cleaner ---- */

#define NKEYS 40

struct model {
    /* the latest offset, value tag and tombstone flag of each key */
    int64_t off[NKEYS];
    int tag[NKEYS];
    bool tomb[NKEYS];
    /* every record ever appended, by offset */
    int *key_at, *tag_at;
    bool *tomb_at;
    int64_t n;
};

static void model_add(struct model *m, int64_t off, int key, int tag, bool tomb)
{
    m->key_at = realloc(m->key_at, (size_t)(off + 1) * sizeof *m->key_at);
    m->tag_at = realloc(m->tag_at, (size_t)(off + 1) * sizeof *m->tag_at);
    m->tomb_at = realloc(m->tomb_at, (size_t)(off + 1) * sizeof *m->tomb_at);
    m->key_at[off] = key;
    m->tag_at[off] = tag;
    m->tomb_at[off] = tomb;
    m->n = off + 1;
    m->off[key] = off;
    m->tag[key] = tag;
    m->tomb[key] = tomb;
}

/* Random batches of 1..6 records over NKEYS keys, 1 in 8 a tombstone. */
static void model_append(struct plog *l, struct model *m, int batches, int *tag, int64_t ts)
{
    for (int i = 0; i < batches; i++) {
        struct rec r[6];
        int n = 1 + (int)(random() % 6);
        for (int k = 0; k < n; k++)
            r[k] = (struct rec){(int)(random() % NKEYS), (*tag)++, random() % 8 == 0, ts};
        struct buf b = BUF_INIT;
        add_records(&b, r, n);
        struct plog_append_result res;
        assert_int_equal(plog_append(l, b.data, b.len, 0, -1, &res), 0);
        for (int k = 0; k < n; k++)
            model_add(m, res.base_offset + k, r[k].key, r[k].tag, r[k].tomb);
        buf_free(&b);
    }
}

struct check_ctx {
    const struct model *m;
    int64_t latest_below[NKEYS]; /* each key's last offset below clean_end */
    int64_t clean_end;      /* records below were subject to cleaning */
    bool tombstones_may_go; /* tombstones in the cleaned range may be gone */
    bool seen[NKEYS];
    int64_t count;
};

static void check_record(void *ctx, int64_t off, const struct rb_record *r)
{
    struct check_ctx *c = ctx;
    const struct model *m = c->m;
    assert_true(off < m->n);
    /* The record is the one appended at that offset, unchanged. */
    char k[32], v[64];
    int kl = snprintf(k, sizeof k, "k%06d", m->key_at[off]);
    assert_int_equal(r->key.len, kl);
    assert_memory_equal(r->key.p, k, (size_t)kl);
    if (m->tomb_at[off]) {
        assert_int_equal(r->value.len, -1);
    } else {
        int vl = snprintf(v, sizeof v, "v%06d-padding-padding", m->tag_at[off]);
        assert_int_equal(r->value.len, vl);
        assert_memory_equal(r->value.p, v, (size_t)vl);
    }
    int key = m->key_at[off];
    if (off < c->clean_end) {
        /* In the cleaned range only a key's latest record (as of the end
         * of the cleaned range) may remain. */
        assert_int_equal(off, c->latest_below[key]);
    }
    if (off == m->off[key])
        c->seen[key] = true;
    c->count++;
}

/* Every key's latest record is there (unless an expired tombstone), and
 * nothing at or after clean_end was lost. */
static void check_model(struct plog *l, const struct model *m, int64_t clean_end, bool tombstones_may_go)
{
    struct check_ctx c = {.m = m, .clean_end = clean_end, .tombstones_may_go = tombstones_may_go};
    for (int k = 0; k < NKEYS; k++)
        c.latest_below[k] = -1;
    for (int64_t o = 0; o < clean_end && o < m->n; o++)
        c.latest_below[m->key_at[o]] = o;
    scan_log(l, 0, check_record, &c);
    for (int k = 0; k < NKEYS; k++) {
        if (m->off[k] < 0)
            continue;
        bool may_be_gone = m->tomb[k] && tombstones_may_go && m->off[k] < clean_end;
        if (!may_be_gone)
            assert_true(c.seen[k]);
    }
    int64_t after = 0;
    for (int64_t o = clean_end; o < m->n; o++)
        after++;
    assert_true(c.count >= after);
}

static void test_cleaner_model(void **state)
{
    struct fx *f = *state;
    struct plog_config c = cfg_with(1200, 64);
    c.cleanup_compact = true;
    c.cleanup_delete = false;
    c.delete_retention_ms = 0;
    c.min_cleanable_dirty_ratio = 0.01;
    struct plog *l = open_log(f->dir, &c);
    struct model m;
    memset(&m, 0, sizeof m);
    for (int k = 0; k < NKEYS; k++)
        m.off[k] = -1;
    srandom(4242);
    int tag = 0;
    int64_t now = clock_wall_ms();
    model_append(l, &m, 150, &tag, now);
    assert_true(plog_segment_count(l) > 5);

    struct plog_clean_state cs;
    assert_true(plog_cleanable(l, now, &cs));
    assert_int_equal(cs.first_dirty, 0);
    assert_true(cs.dirty_ratio > 0.99);
    int64_t fu = cs.first_uncleanable;
    int64_t bytes_before = plog_size_bytes(l);
    struct plog_clean_stats st;
    assert_int_equal(plog_clean(l, now, 1 << 20, NULL, &st), 0);
    assert_int_equal(st.end_offset, fu);
    /* Groups are made from the segments' sizes before cleaning (as
     * Kafka's groupSegmentsBySize): full segments stay one to one, the
     * smaller cleaned ones merge in the next passes. */
    assert_true(st.segments_in >= st.segments_out && st.segments_out > 0);
    assert_true(st.records_kept < st.records_read);
    assert_true(plog_size_bytes(l) < bytes_before);
    int segs_after_first = plog_segment_count(l);
    assert_int_equal(plog_cleaner_offset(l), fu);
    /* First pass: tombstones stay (they sat in dirty segments). */
    check_model(l, &m, fu, false);
    /* Nothing left to clean until new data arrives. */
    assert_false(plog_cleanable(l, now, &cs) && cs.dirty_bytes > 0 && cs.first_dirty < fu);

    /* More data, then a second pass: the tombstones of the first pass now
     * sit in clean segments older than delete.retention.ms (0): gone. The
     * cleaned segments' mtimes are set in the past to make the horizon
     * certain. */
    int64_t bases[256];
    int ns = plog_segment_bases(l, bases, 256);
    for (int i = 0; i < ns - 1; i++) {
        char *p = fpath(f->dir, bases[i], ".log");
        set_mtime(p, now - 100000 + i);
        free(p);
    }
    model_append(l, &m, 100, &tag, now);
    assert_true(plog_cleanable(l, now, &cs));
    fu = cs.first_uncleanable;
    assert_int_equal(plog_clean(l, now, 1 << 20, NULL, &st), 0);
    /* delete.retention.ms is 0: the first pass gave the tombstones a
     * horizon of now, so this pass may have dropped them. */
    check_model(l, &m, fu, true);
    /* The small segments of the first pass were merged. */
    assert_true(st.segments_in > st.segments_out);
    (void)segs_after_first;
    int64_t leo = plog_log_end_offset(l);
    plog_close(l, true);

    /* The cleaned log reopens as it was (index files of cleaned segments
     * included), and appends go on. */
    l = open_log(f->dir, &c);
    assert_int_equal(plog_log_end_offset(l), leo);
    check_model(l, &m, fu, true);
    /* A small key map cleans in several passes and still converges. */
    model_append(l, &m, 100, &tag, now);
    for (int pass = 0; pass < 50; pass++) {
        if (!plog_cleanable(l, now, &cs))
            break;
        fu = cs.first_uncleanable;
        assert_int_equal(plog_clean(l, now, 8 * 1024, NULL, &st), 0);
        assert_true(st.end_offset > st.first_dirty || cs.tombstones_due);
    }
    check_model(l, &m, plog_cleaner_offset(l), true);
    plog_purge_deleted(l, 0, true);
    plog_close(l, true);
    free(m.key_at);
    free(m.tag_at);
    free(m.tomb_at);
}

/* log.cleaner.io.max.bytes.per.second: Kafka's Throttler arithmetic
 * (a 300 ms check interval, then a sleep that brings the period's
 * average down to the bound), then a real pass under a bound. */
static void test_cleaner_throttle(void **state)
{
    (void)state;
    struct throttle t;
    throttle_init(&t, 1000.0, 0); /* 1000 B/s = 1 B/ms: 300 B per check interval */
    assert_int_equal(throttle_record(&t, 200, 0), 0);   /* within the interval and its bytes */
    assert_int_equal(throttle_record(&t, 100, 100), 0); /* 300 B: not more than the interval's */
    assert_int_equal(throttle_record(&t, 0, 301), 0);   /* interval over, 300 B in 301 ms: under */
    /* a burst of 3000 B 100 ms into the new period: they should have
     * taken 3000 ms */
    assert_int_equal(throttle_record(&t, 3000, 401), 2900);
    /* the next period starts when the sleep ends, at 3301 ms */
    assert_int_equal(throttle_record(&t, 100, 3400), 0);
    throttle_destroy(&t);
    throttle_init(&t, 1.7976931348623157E308, 0); /* Kafka's default: no bound */
    assert_int_equal(throttle_record(&t, INT64_MAX / 4, 1000), 0);
    throttle_destroy(&t);
    throttle_init(&t, 0, 0);
    assert_int_equal(throttle_record(&t, INT64_MAX / 4, 1000), 0);
    throttle_destroy(&t);
}

static void test_cleaner_throttled_pass(void **state)
{
    struct fx *f = *state;
    struct plog_config c = cfg_with(1200, 64);
    c.cleanup_compact = true;
    c.cleanup_delete = false;
    c.min_cleanable_dirty_ratio = 0.01;
    struct plog *l = open_log(f->dir, &c);
    struct model m;
    memset(&m, 0, sizeof m);
    for (int k = 0; k < NKEYS; k++)
        m.off[k] = -1;
    srandom(77);
    int tag = 0;
    int64_t now = clock_wall_ms();
    model_append(l, &m, 150, &tag, now);
    /* a bound of a third of the log's size per second: the pass, which
     * reads the dirty section twice (map, copy) and writes what it
     * keeps, takes at least its bytes' worth of time less one check
     * interval's bytes (the last period is not slept for) */
    double bound = (double)plog_size_bytes(l) / 3.0;
    struct throttle t;
    throttle_init(&t, bound, clock_mono_ms());
    struct plog_clean_stats st;
    int64_t t0 = clock_mono_ms();
    assert_int_equal(plog_clean_throttled(l, now, 1 << 20, NULL, &t, &st), 0);
    int64_t took = clock_mono_ms() - t0;
    int64_t due = (int64_t)((double)(st.bytes_read + st.bytes_written) * 1000.0 / bound);
    if (took < due - THROTTLE_CHECK_INTERVAL_MS - 20 || took > due + 2000)
        fail_msg("throttled pass took %lld ms for %lld bytes at %.0f B/s (due %lld ms)", (long long)took,
                 (long long)(st.bytes_read + st.bytes_written), bound, (long long)due);
    assert_true(due > 1000);
    check_model(l, &m, st.end_offset, false);
    throttle_destroy(&t);
    plog_close(l, true);
    free(m.key_at);
    free(m.tag_at);
    free(m.tomb_at);
}

static void test_cleaner_tombstones_and_lag(void **state)
{
    struct fx *f = *state;
    struct plog_config c = cfg_with(400, 64);
    c.cleanup_compact = true;
    c.cleanup_delete = false;
    c.delete_retention_ms = 1000;
    struct plog *l = open_log(f->dir, &c);
    int64_t now = clock_wall_ms();
    /* key 1 set, then deleted; key 2 set twice; key 3 once; more segments. */
    struct rec seq[] = {{1, 1, false, now}, {2, 2, false, now}, {1, 3, true, now}, {2, 4, false, now},
                        {3, 5, false, now}};
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
        struct buf b = BUF_INIT;
        add_records(&b, &seq[i], 1);
        assert_int_equal(plog_append(l, b.data, b.len, 0, -1, NULL), 0);
        buf_free(&b);
    }
    for (int i = 0; i < 10; i++)
        append_n(l, 1, 100 + i, now);
    /* min.compaction.lag.ms: records younger than it are not cleanable. */
    c.min_compaction_lag_ms = 60000;
    plog_set_config(l, &c);
    struct plog_clean_state cs;
    assert_false(plog_cleanable(l, now, &cs));
    c.min_compaction_lag_ms = 0;
    plog_set_config(l, &c);
    /* max.compaction.lag.ms: a log waiting too long must be cleaned. */
    c.max_compaction_lag_ms = 1;
    plog_set_config(l, &c);
    assert_true(plog_cleanable(l, now + 10, &cs));
    assert_true(cs.must_clean);
    assert_int_equal(plog_clean(l, now, 1 << 20, NULL, NULL), 0);
    /* offsets 0 (k1) and 1 (k2) are superseded; the tombstone (2) stays */
    struct plog_read_result rr;
    assert_int_equal(plog_read(l, 0, 1 << 20, true, -1, &rr), 0);
    assert_int_equal(rr.first_base_offset, 2);
    sfile_unref(rr.file);
    /* The tombstone's batch got a delete horizon (KIP-534): the base
     * timestamp holds now + delete.retention.ms, the record timestamps
     * are unchanged. */
    struct plog_read_result r2;
    assert_int_equal(plog_read(l, 2, 1 << 20, true, -1, &r2), 0);
    uint8_t hdr[RB_HEADER_SIZE];
    assert_int_equal(pread(r2.file->fd, hdr, sizeof hdr, r2.file_pos), (ssize_t)sizeof hdr);
    struct rb_header h;
    assert_int_equal(rb_parse_header(hdr, sizeof hdr, &h), 0);
    assert_int_equal(h.base_offset, 2);
    assert_true(rb_has_delete_horizon(&h));
    assert_int_equal(h.base_timestamp, now + 1000);
    sfile_unref(r2.file);
    int64_t off, ts;
    assert_int_equal(plog_offset_for_timestamp(l, now, &off, &ts), 0);
    assert_int_equal(off, 2); /* the tombstone, with its own timestamp */
    assert_int_equal(ts, now);
    /* Before the horizon, a pass keeps it; nothing dirty: not cleanable
     * except for the tombstone once due. */
    assert_false(plog_cleanable(l, now + 999, &cs));
    assert_true(plog_cleanable(l, now + 1000, &cs));
    assert_true(cs.tombstones_due);
    assert_int_equal(plog_clean(l, now + 1000, 1 << 20, NULL, NULL), 0);
    /* Offsets keep their gaps: the first record now is k2's latest (3). */
    assert_int_equal(plog_read(l, 0, 1 << 20, true, -1, &rr), 0);
    assert_int_equal(rr.first_base_offset, 3);
    sfile_unref(rr.file);
    assert_false(plog_cleanable(l, now + 100000, &cs));
    plog_purge_deleted(l, 0, true);
    plog_close(l, true);
}

/* Kafka's RETAIN_EMPTY: compaction keeps the batch holding a producer's
 * last sequence, emptied of its superseded records, so a replica that
 * rebuilds its producer state from the cleaned log still deduplicates a
 * retry of that batch. */
static void test_cleaner_keeps_producer_last_batch(void **state)
{
    struct fx *f = *state;
    struct plog_config c = cfg_with(400, 64);
    c.cleanup_compact = true;
    c.cleanup_delete = false;
    struct plog *l = open_log(f->dir, &c);
    int64_t now = clock_wall_ms();
    /* Producer 5 writes key 1 (offset 0) and key 2 (offset 1); a plain
     * producer then overwrites both. */
    struct rec r1 = {1, 1, false, now}, r2 = {2, 2, false, now};
    struct buf b1 = BUF_INIT, b2 = BUF_INIT;
    struct rb_batch_opts o = RB_BATCH_OPTS_INIT;
    o.producer_id = 5;
    o.producer_epoch = 0;
    struct rb_builder bb;
    const char *vals[2] = {"v1", "v2"};
    struct buf *bufs[2] = {&b1, &b2};
    const struct rec *recs[2] = {&r1, &r2};
    for (int i = 0; i < 2; i++) {
        o.base_sequence = i;
        rb_builder_begin(&bb, bufs[i], 0, now, &o);
        char k[16];
        int kl = snprintf(k, sizeof k, "k%06d", recs[i]->key);
        assert_int_equal(rb_builder_add(&bb, now, (kbytes_t){(const uint8_t *)k, kl},
                                        (kbytes_t){(const uint8_t *)vals[i], 2}, NULL, 0), 0);
        assert_int_equal(rb_builder_finish(&bb, NULL), 0);
        assert_int_equal(plog_append(l, bufs[i]->data, bufs[i]->len, 0, -1, NULL), 0);
    }
    append_n(l, 2, 1, now);
    for (int i = 0; i < 10; i++)
        append_n(l, 1, 100 + i, now);
    assert_int_equal(plog_clean(l, now, 1 << 20, NULL, NULL), 0);
    /* Offset 0 (producer 5's first batch) is gone; its last batch (offset
     * 1) stays as an empty batch with its producer fields. */
    struct plog_read_result rr;
    assert_int_equal(plog_read(l, 0, 1 << 20, true, -1, &rr), 0);
    assert_int_equal(rr.first_base_offset, 1);
    uint8_t hdr[RB_HEADER_SIZE];
    assert_int_equal(pread(rr.file->fd, hdr, sizeof hdr, rr.file_pos), (ssize_t)sizeof hdr);
    struct rb_header h;
    assert_int_equal(rb_parse_header(hdr, sizeof hdr, &h), 0);
    assert_int_equal(h.base_offset, 1);
    assert_int_equal(h.records_count, 0);
    assert_int_equal(h.last_offset_delta, 0);
    assert_int_equal(h.producer_id, 5);
    assert_int_equal(h.base_sequence, 1);
    assert_int_equal(rb_batch_size(&h), RB_HEADER_SIZE);
    assert_true(rb_crc_ok(hdr, sizeof hdr));
    sfile_unref(rr.file);
    /* A follower rebuilt from the cleaned log knows producer 5. */
    char fdir[600];
    snprintf(fdir, sizeof fdir, "%s/follower-0", f->root);
    struct plog *fl = open_log(fdir, &c);
    for (int64_t off = 0; off < plog_log_end_offset(l);) {
        assert_int_equal(plog_read(l, off, 1 << 20, true, -1, &rr), 0);
        if (rr.len == 0)
            break;
        uint8_t *p = malloc((size_t)rr.len);
        assert_int_equal(pread(rr.file->fd, p, (size_t)rr.len, rr.file_pos), rr.len);
        assert_int_equal(plog_append_follower(fl, p, (size_t)rr.len, NULL), 0);
        free(p);
        off = rr.next_offset;
        sfile_unref(rr.file);
    }
    struct plog_append_result res;
    assert_int_equal(plog_append(fl, b2.data, b2.len, 0, -1, &res), 0);
    assert_true(res.duplicate);
    assert_int_equal(res.base_offset, 1);
    plog_close(fl, false);
    buf_free(&b1);
    buf_free(&b2);
    plog_purge_deleted(l, 0, true);
    plog_close(l, true);
}

/* The append path syncs nothing (issue 8: a network worker never waits
 * for the disk): a segment roll's new directory entry and a new leader
 * epoch's checkpoint are made durable by the next flush, before the
 * recovery point moves past them; a crash before that flush recovers
 * both from the batches. */
static int syncs_seen;
static void count_sync(const char *path)
{
    (void)path;
    syncs_seen++;
}

static void test_append_path_never_syncs(void **state)
{
    struct fx *f = *state;
    struct buf b = BUF_INIT;
    struct rec r[4];
    for (int i = 0; i < 4; i++)
        r[i] = (struct rec){i, i, false, 1000};
    size_t s = add_records(&b, r, 4);
    struct plog_config c = cfg_with((int64_t)(2 * s), 1);
    struct plog *l = open_log(f->dir, &c);
    fs_sync_observer = count_sync;
    syncs_seen = 0;
    /* 8 batches of 4: three rolls, and epochs 1, 3 and 4 */
    for (int i = 0; i < 8; i++) {
        buf_reset(&b);
        add_records(&b, r, 4);
        assert_int_equal(plog_append(l, b.data, b.len, i < 2 ? 1 : i < 5 ? 3 : 4, -1, NULL), 0);
    }
    assert_true(plog_segment_count(l) >= 4);
    assert_int_equal(syncs_seen, 0);
    assert_int_equal(plog_recovery_point(l), 0);
    char p[512];
    snprintf(p, sizeof p, "%s/%s", f->dir, CKPT_LEADER_EPOCH_FILE);
    char *text = NULL;
    size_t n;
    int e = fs_read_small(p, 4096, &text, &n);
    assert_true(e == ENOENT || !strstr(text, "4 20"));
    free(text);

    /* A crash now: the reopened log finds every batch and rebuilds the
     * epochs from them. */
    fs_sync_observer = NULL;
    plog_close(l, false);
    l = open_log(f->dir, &c);
    assert_int_equal(plog_log_end_offset(l), 32);
    int32_t ep;
    int64_t so;
    plog_latest_epoch(l, &ep, &so);
    assert_int_equal(ep, 4);
    assert_int_equal(so, 20);

    /* A new epoch, then the flush: the directory and the checkpoint are
     * synced (on the flushing thread) before the recovery point moves. */
    fs_sync_observer = count_sync;
    syncs_seen = 0;
    buf_reset(&b);
    add_records(&b, r, 4);
    assert_int_equal(plog_append(l, b.data, b.len, 7, -1, NULL), 0);
    assert_int_equal(syncs_seen, 0);
    assert_int_equal(plog_flush(l), 0);
    assert_true(syncs_seen >= 1);
    assert_int_equal(plog_recovery_point(l), 36);
    fs_sync_observer = NULL;
    assert_int_equal(fs_read_small(p, 4096, &text, &n), 0);
    assert_non_null(strstr(text, "7 32\n"));
    free(text);
    plog_close(l, true);
    buf_free(&b);
}

/* fs_read_small reads whole files up to max, sizing its buffer by the
 * file (not by max), and refuses a larger one with EFBIG. */
static void test_read_small_sizes(void **state)
{
    struct fx *f = *state;
    char path[512];
    snprintf(path, sizeof path, "%s/small", f->root);
    static const size_t sizes[] = {0, 1, 255, 256, 257, 4000, 4096, 4097};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        char *want = malloc(n + 1);
        for (size_t k = 0; k < n; k++)
            want[k] = (char)('a' + (k * 7 + i) % 26);
        FILE *fp = fopen(path, "wb");
        assert_non_null(fp);
        assert_int_equal(fwrite(want, 1, n, fp), n);
        fclose(fp);
        char *got = NULL;
        size_t len = 99;
        int e = fs_read_small(path, 4096, &got, &len);
        if (n > 4096) {
            assert_int_equal(e, EFBIG);
            assert_null(got);
        } else {
            assert_int_equal(e, 0);
            assert_int_equal(len, n);
            assert_memory_equal(got, want, n);
            assert_int_equal(got[n], 0);
            free(got);
        }
        /* a bound below the size */
        if (n > 10) {
            assert_int_equal(fs_read_small(path, 10, &got, &len), EFBIG);
            assert_null(got);
        }
        free(want);
    }
    char *got = NULL;
    size_t len;
    snprintf(path, sizeof path, "%s/absent", f->root);
    assert_int_equal(fs_read_small(path, 10, &got, &len), ENOENT);
}

int main(void)
{
    slog_set_level(SLOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_read_small_sizes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_index_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_roll_on_full_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_index_fds_released, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recovery_point, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recovery_cut_every_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recovery_random_corruption, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leftovers_at_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_config, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flush_policy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_segment_ms, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention_time, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention_size_and_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncate_and_epochs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_logmgr, setup, teardown),
        cmocka_unit_test_setup_teardown(test_logmgr_clean_marker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_logmgr_unchanged_checkpoints, setup, teardown),
        cmocka_unit_test_setup_teardown(test_logmgr_retention_due, setup, teardown),
        cmocka_unit_test_setup_teardown(test_logmgr_open_progress, setup, teardown),
        cmocka_unit_test_setup_teardown(test_logmgr_retention_bytes_and_delete_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_logmgr_cleaner_scan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_logmgr_uncleanable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cleaner_model, setup, teardown),
        cmocka_unit_test(test_cleaner_throttle),
        cmocka_unit_test_setup_teardown(test_cleaner_throttled_pass, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cleaner_tombstones_and_lag, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cleaner_keeps_producer_last_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_append_path_never_syncs, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
