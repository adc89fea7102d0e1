/* Partition log: append/read round trips, segment rolls, recovery from torn
 * tails, timestamp lookups, concurrency. Each test works in its own mkdtemp
 * directory under /tmp and removes it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log/cleaner.h"
#include "log/fsutil.h"
#include "log/plog.h"
#include "log/plog_internal.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/sfile.h"
#include "util/slog.h"
#include "util/uuid.h"

/* ---- fixtures and helpers ---- */

struct fx {
    char *root; /* the mkdtemp directory */
    char *dir;  /* root/topic-0, the partition directory */
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    char tmpl[] = "/tmp/plog_test.XXXXXX";
    if (!mkdtemp(tmpl))
        return -1;
    f->root = strdup(tmpl);
    size_t n = strlen(tmpl) + 16;
    f->dir = malloc(n);
    snprintf(f->dir, n, "%s/topic-0", tmpl);
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

static struct plog_config cfg_with(int64_t segment_bytes, int32_t index_interval)
{
    struct plog_config c = PLOG_CONFIG_INIT;
    c.segment_bytes = segment_bytes;
    c.index_interval_bytes = index_interval;
    return c;
}

static struct plog *open_log(const char *dir, const struct plog_config *c)
{
    struct plog *l = NULL;
    assert_int_equal(plog_open(dir, NULL, c, &l), 0);
    assert_non_null(l);
    return l;
}

/* Appends one batch of n records to out. ts: per-record timestamps, or
 * NULL for 1000 + i. tag goes into producerId and seq into producerEpoch
 * (each batch a new epoch starting at sequence 0, which the log's
 * producer-state check accepts whatever the batch sizes) so a batch can
 * be recognised after it went through the log. vsize pads each value.
 * Returns the batch size. */
static size_t add_batch(struct buf *out, int n, const int64_t *ts, int64_t tag, int32_t seq, int vsize)
{
    struct rb_batch_opts o = RB_BATCH_OPTS_INIT;
    o.producer_id = tag;
    o.producer_epoch = (int16_t)seq;
    o.base_sequence = 0;
    struct rb_builder b;
    rb_builder_begin(&b, out, 0, ts ? ts[0] : 1000, &o);
    for (int i = 0; i < n; i++) {
        char v[512];
        int len = snprintf(v, sizeof v, "tag=%" PRId64 " seq=%d rec=%d", tag, seq, i);
        while (len < vsize && len < (int)sizeof v)
            v[len++] = 'x';
        kbytes_t key = {(const uint8_t *)"key", 3};
        kbytes_t val = {(const uint8_t *)v, len};
        assert_int_equal(rb_builder_add(&b, ts ? ts[i] : 1000 + i, key, val, NULL, 0), 0);
    }
    size_t bl;
    assert_int_equal(rb_builder_finish(&b, &bl), 0);
    return bl;
}

/* A log's contents as the test expects them: every stamped batch. */
struct expect {
    uint8_t *bytes[256];
    size_t size[256];
    int64_t base[256], last[256];
    int n;
};

static void expect_free(struct expect *e)
{
    for (int i = 0; i < e->n; i++)
        free(e->bytes[i]);
    e->n = 0;
}

/* Builds a batch of nrec records, appends it alone and records what the
 * log must now hold. */
static void append_one(struct plog *l, struct expect *e, int nrec, const int64_t *ts, int vsize)
{
    struct buf b = BUF_INIT;
    size_t size = add_batch(&b, nrec, ts, 1, e->n, vsize);
    int64_t leo = plog_log_end_offset(l);
    struct plog_append_result r;
    assert_int_equal(plog_append(l, b.data, b.len, 7, -1, &r), 0);
    assert_int_equal(r.base_offset, leo);
    assert_int_equal(r.last_offset, leo + nrec - 1);
    assert_int_equal(r.log_append_time, -1);
    assert_int_equal(plog_log_end_offset(l), leo + nrec);
    struct rb_header h;
    assert_int_equal(rb_parse_header(b.data, b.len, &h), 0);
    assert_int_equal(h.base_offset, leo);
    assert_int_equal(h.partition_leader_epoch, 7);
    assert_true(rb_crc_ok(b.data, b.len));
    assert_true(e->n < 256);
    e->bytes[e->n] = buf_steal(&b, &e->size[e->n]);
    assert_int_equal(e->size[e->n], size);
    e->base[e->n] = leo;
    e->last[e->n] = leo + nrec - 1;
    e->n++;
}

static uint8_t *read_bytes(const struct plog_read_result *r)
{
    uint8_t *p = malloc((size_t)r->len + 1);
    assert_int_equal(pread(r->file->fd, p, (size_t)r->len, r->file_pos), r->len);
    return p;
}

static int64_t file_size(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    return st.st_size;
}

static char *seg_path(const char *dir, int64_t base)
{
    char *p = malloc(strlen(dir) + 32);
    sprintf(p, "%s/%020" PRId64 ".log", dir, base);
    return p;
}

/* The batch holding offset reads back byte-exactly, alone. */
static void check_batch_at(struct plog *l, const struct expect *e, int k, int64_t offset)
{
    struct plog_read_result r;
    assert_int_equal(plog_read(l, offset, (int32_t)e->size[k], true, -1, &r), 0);
    assert_non_null(r.file);
    assert_int_equal(r.len, e->size[k]);
    assert_int_equal(r.first_base_offset, e->base[k]);
    assert_int_equal(r.next_offset, e->last[k] + 1);
    uint8_t *p = read_bytes(&r);
    assert_memory_equal(p, e->bytes[k], e->size[k]);
    assert_true(rb_crc_ok(p, e->size[k]));
    free(p);
    sfile_unref(r.file);
}

static void check_all(struct plog *l, const struct expect *e)
{
    for (int k = 0; k < e->n; k++)
        for (int64_t o = e->base[k]; o <= e->last[k]; o++)
            check_batch_at(l, e, k, o);
}

static size_t slurp(const char *path, uint8_t **out)
{
    int64_t n = file_size(path);
    assert_true(n >= 0);
    *out = malloc((size_t)n + 1);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, *out, (size_t)n, 0), n);
    close(fd);
    return (size_t)n;
}

static void spit(const char *path, const uint8_t *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, p, n, 0), (ssize_t)n);
    close(fd);
}

/* ---- tests ---- */

static void test_append_read_roundtrip(void **state)
{
    struct fx *f = *state;
    struct plog_config c = cfg_with(PLOG_DEFAULT_SEGMENT_BYTES, 100);
    struct plog *l = open_log(f->dir, &c);
    assert_int_equal(plog_log_end_offset(l), 0);
    assert_int_equal(plog_log_start_offset(l), 0);
    assert_int_equal(plog_size_bytes(l), 0);
    assert_int_equal(file_size(f->dir) >= 0, 1);
    char *p0 = seg_path(f->dir, 0);
    assert_int_equal(file_size(p0), 0);

    struct expect e = {0};
    int64_t total = 0;
    for (int k = 0; k < 12; k++) {
        append_one(l, &e, 1 + k % 5, NULL, 20 + 13 * k);
        total += (int64_t)e.size[k];
    }
    assert_int_equal(plog_size_bytes(l), total);
    assert_int_equal(file_size(p0), total);
    assert_int_equal(plog_log_end_offset(l), e.last[e.n - 1] + 1);
    /* Contiguous offsets across appends of multi-record batches. */
    for (int k = 1; k < e.n; k++)
        assert_int_equal(e.base[k], e.last[k - 1] + 1);
    /* Every offset, including those in the middle of a batch, returns its
     * whole batch. */
    check_all(l, &e);

    /* The whole log in one read is the batches back to back. */
    struct plog_read_result r;
    assert_int_equal(plog_read(l, 0, INT32_MAX, false, -1, &r), 0);
    assert_int_equal(r.len, total);
    assert_int_equal(r.file_pos, 0);
    uint8_t *all = read_bytes(&r);
    size_t at = 0;
    for (int k = 0; k < e.n; k++) {
        assert_memory_equal(all + at, e.bytes[k], e.size[k]);
        at += e.size[k];
    }
    free(all);
    sfile_unref(r.file);

    assert_int_equal(plog_flush(l), 0);
    free(p0);
    expect_free(&e);
    plog_close(l, true);
}

static void test_multi_batch_append(void **state)
{
    struct fx *f = *state;
    struct plog *l = open_log(f->dir, NULL);
    struct expect e = {0};
    append_one(l, &e, 2, NULL, 10); /* offsets 0..1 */

    struct buf b = BUF_INIT;
    size_t s1 = add_batch(&b, 3, NULL, 2, 0, 10);
    size_t s2 = add_batch(&b, 1, NULL, 2, 3, 10);
    size_t s3 = add_batch(&b, 4, NULL, 2, 4, 10);
    struct plog_append_result res;
    assert_int_equal(plog_append(l, b.data, b.len, 3, -1, &res), 0);
    assert_int_equal(res.base_offset, 2);
    assert_int_equal(res.last_offset, 9);
    assert_int_equal(res.log_start_offset, 0);
    struct rb_header h;
    assert_int_equal(rb_parse_header(b.data, b.len, &h), 0);
    assert_int_equal(h.base_offset, 2);
    assert_int_equal(h.partition_leader_epoch, 3);
    assert_int_equal(rb_parse_header(b.data + s1, b.len - s1, &h), 0);
    assert_int_equal(h.base_offset, 5);
    assert_int_equal(rb_parse_header(b.data + s1 + s2, b.len - s1 - s2, &h), 0);
    assert_int_equal(h.base_offset, 6);
    assert_int_equal(h.partition_leader_epoch, 3);
    assert_int_equal(plog_log_end_offset(l), 10);

    /* Offset 7 is inside the third batch: the whole batch comes back. */
    struct plog_read_result r;
    assert_int_equal(plog_read(l, 7, 1, true, -1, &r), 0);
    assert_int_equal(r.first_base_offset, 6);
    assert_int_equal(r.len, s3);
    assert_int_equal(r.next_offset, 10);
    uint8_t *p = read_bytes(&r);
    assert_memory_equal(p, b.data + s1 + s2, s3);
    free(p);
    sfile_unref(r.file);

    /* Garbage is refused before anything is stamped. */
    uint8_t junk[80] = {0};
    assert_int_equal(plog_append(l, junk, sizeof junk, 1, -1, NULL), KERR_CORRUPT_MESSAGE);
    uint8_t copy[4096];
    memcpy(copy, b.data, b.len);
    assert_int_equal(plog_append(l, copy, b.len - 1, 1, -1, NULL), KERR_CORRUPT_MESSAGE);
    assert_memory_equal(copy, b.data, b.len - 1);
    assert_int_equal(plog_append(l, copy, 0, 1, -1, NULL), KERR_CORRUPT_MESSAGE);
    assert_int_equal(plog_log_end_offset(l), 10);

    buf_free(&b);
    expect_free(&e);
    plog_close(l, false);
}

static void test_max_bytes(void **state)
{
    struct fx *f = *state;
    struct plog_config c = cfg_with(PLOG_DEFAULT_SEGMENT_BYTES, 0);
    struct plog *l = open_log(f->dir, &c);
    struct expect e = {0};
    for (int k = 0; k < 6; k++)
        append_one(l, &e, 2, NULL, 100);
    size_t s = e.size[0];
    for (int k = 1; k < 6; k++)
        assert_int_equal(e.size[k], s);

    struct plog_read_result r;
    /* Two and a half batches' worth: two whole ones. */
    assert_int_equal(plog_read(l, 0, (int32_t)(2 * s + s / 2), false, -1, &r), 0);
    assert_int_equal(r.len, 2 * s);
    assert_int_equal(r.next_offset, 4);
    sfile_unref(r.file);
    /* Exactly three. */
    assert_int_equal(plog_read(l, 3, (int32_t)(3 * s), false, -1, &r), 0);
    assert_int_equal(r.first_base_offset, 2);
    assert_int_equal(r.file_pos, (int64_t)s);
    assert_int_equal(r.len, 3 * s);
    sfile_unref(r.file);
    /* Too small for one: the first batch anyway with min_one_batch ... */
    assert_int_equal(plog_read(l, 4, 1, true, -1, &r), 0);
    assert_int_equal(r.len, s);
    assert_int_equal(r.first_base_offset, 4);
    sfile_unref(r.file);
    assert_int_equal(plog_read(l, 4, 0, true, -1, &r), 0);
    assert_int_equal(r.len, s);
    sfile_unref(r.file);
    /* ... and nothing without it. */
    assert_int_equal(plog_read(l, 4, (int32_t)s - 1, false, -1, &r), 0);
    assert_int_equal(r.len, 0);
    assert_null(r.file);
    assert_int_equal(r.first_base_offset, -1);

    expect_free(&e);
    plog_close(l, false);
}

static void test_out_of_range_and_cap(void **state)
{
    struct fx *f = *state;
    struct plog *l = open_log(f->dir, NULL);
    struct plog_read_result r;
    /* Empty log: offset 0 is the end, anything else is out of range. */
    assert_int_equal(plog_read(l, 0, 1000, true, -1, &r), 0);
    assert_int_equal(r.len, 0);
    assert_null(r.file);
    assert_int_equal(plog_read(l, 1, 1000, true, -1, &r), KERR_OFFSET_OUT_OF_RANGE);
    assert_int_equal(plog_read(l, -1, 1000, true, -1, &r), KERR_OFFSET_OUT_OF_RANGE);

    struct expect e = {0};
    for (int k = 0; k < 4; k++)
        append_one(l, &e, 3, NULL, 10); /* 0-2 3-5 6-8 9-11 */
    assert_int_equal(plog_read(l, 13, 1000, true, -1, &r), KERR_OFFSET_OUT_OF_RANGE);
    assert_int_equal(plog_read(l, INT64_MAX, 1000, true, -1, &r), KERR_OFFSET_OUT_OF_RANGE);
    assert_int_equal(plog_read(l, -5, 1000, true, -1, &r), KERR_OFFSET_OUT_OF_RANGE);
    assert_int_equal(plog_read(l, 12, 1000, true, -1, &r), 0);
    assert_int_equal(r.len, 0);
    assert_null(r.file);
    assert_int_equal(r.next_offset, 12);

    /* A cap (high watermark) at a batch boundary. */
    assert_int_equal(plog_read(l, 0, 1 << 20, false, 6, &r), 0);
    assert_int_equal(r.len, e.size[0] + e.size[1]);
    assert_int_equal(r.next_offset, 6);
    sfile_unref(r.file);
    /* Reading at the cap, or inside a batch that reaches it: nothing. */
    assert_int_equal(plog_read(l, 6, 1 << 20, true, 6, &r), 0);
    assert_int_equal(r.len, 0);
    assert_int_equal(plog_read(l, 4, 1 << 20, true, 5, &r), 0);
    assert_int_equal(r.len, 0);
    /* A cap inside a batch stops before that batch. */
    assert_int_equal(plog_read(l, 0, 1 << 20, true, 7, &r), 0);
    assert_int_equal(r.len, e.size[0] + e.size[1]);
    sfile_unref(r.file);
    /* The cap never extends the end. */
    assert_int_equal(plog_read(l, 0, 1 << 20, true, 1000, &r), 0);
    assert_int_equal(r.next_offset, 12);
    sfile_unref(r.file);

    expect_free(&e);
    plog_close(l, false);
}

static void test_segment_roll(void **state)
{
    struct fx *f = *state;
    /* Measure a batch first: all batches here have the same size. */
    struct buf b = BUF_INIT;
    size_t s = add_batch(&b, 2, NULL, 1, 0, 50);
    buf_free(&b);
    struct plog_config c = cfg_with((int64_t)(3 * s + s / 2), 64);
    struct plog *l = open_log(f->dir, &c);
    struct expect e = {0};
    for (int k = 0; k < 10; k++)
        append_one(l, &e, 2, NULL, 50);
    /* Three batches per segment: 0, 6, 12 and 18. */
    assert_int_equal(plog_segment_count(l), 4);
    int64_t bases[] = {0, 6, 12, 18};
    for (int i = 0; i < 4; i++) {
        char *p = seg_path(f->dir, bases[i]);
        assert_int_equal(file_size(p), (int64_t)((i < 3 ? 3 : 1) * s));
        free(p);
    }
    check_all(l, &e);

    /* A large read stays within the segment it starts in. */
    for (int k = 0; k < e.n; k++) {
        struct plog_read_result r;
        assert_int_equal(plog_read(l, e.base[k], INT32_MAX, false, -1, &r), 0);
        int seg = k / 3;
        int64_t seg_end = seg < 3 ? 3 * (int64_t)s : (int64_t)s;
        assert_int_equal(r.file_pos, (k % 3) * (int64_t)s);
        assert_int_equal(r.file_pos + r.len, seg_end);
        assert_int_equal(r.next_offset, seg < 3 ? bases[seg + 1] : 20);
        struct stat a, want;
        char *p = seg_path(f->dir, bases[seg]);
        assert_int_equal(fstat(r.file->fd, &a), 0);
        assert_int_equal(stat(p, &want), 0);
        assert_int_equal(a.st_ino, want.st_ino);
        free(p);
        sfile_unref(r.file);
    }

    /* Two batches that do not fit the active segment's room roll it and
     * land together in the new one. */
    struct buf two = BUF_INIT;
    add_batch(&two, 2, NULL, 1, 100, 50);
    add_batch(&two, 2, NULL, 1, 101, 50);
    assert_int_equal(plog_append(l, two.data, two.len, 7, -1, NULL), 0);
    assert_int_equal(plog_segment_count(l), 4); /* 18 holds one batch: room for two */
    buf_reset(&two);
    add_batch(&two, 2, NULL, 1, 103, 50);
    add_batch(&two, 2, NULL, 1, 104, 50);
    assert_int_equal(plog_append(l, two.data, two.len, 7, -1, NULL), 0);
    assert_int_equal(plog_segment_count(l), 5);
    char *p = seg_path(f->dir, 24);
    assert_int_equal(file_size(p), (int64_t)(2 * s));
    free(p);
    buf_free(&two);

    /* A batch larger than segment.bytes can never be stored. */
    struct buf big = BUF_INIT;
    add_batch(&big, 20, NULL, 1, 200, 400);
    assert_true((int64_t)big.len > c.segment_bytes);
    assert_int_equal(plog_append(l, big.data, big.len, 7, -1, NULL), KERR_RECORD_LIST_TOO_LARGE);
    buf_free(&big);
    assert_int_equal(plog_log_end_offset(l), 28);

    expect_free(&e);
    plog_close(l, true);
}

static int64_t index_size(const char *dir, int64_t base)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%020" PRId64 ".index", dir, base);
    return file_size(p);
}

/* A roll trims the old segment's offset index to its entries without
 * unmapping it (outside seg_lock): reads through it go on; a truncation
 * that makes that segment active again gives the file back its room,
 * and appends index into it again. */
static void test_roll_trims_mapped_index(void **state)
{
    struct fx *f = *state;
    struct buf b = BUF_INIT;
    size_t s = add_batch(&b, 2, NULL, 1, 0, 50);
    buf_free(&b);
    struct plog_config c = cfg_with((int64_t)(3 * s + s / 2), 1); /* an entry per batch */
    struct plog *l = open_log(f->dir, &c);
    struct expect e = {0};
    for (int k = 0; k < 10; k++)
        append_one(l, &e, 2, NULL, 50);
    assert_int_equal(plog_segment_count(l), 4);
    /* Sealed: two entries of 8 bytes each (for the second and third
     * batches: the first is at the segment's start); the active one has
     * its room. */
    assert_int_equal(index_size(f->dir, 0), 16);
    assert_int_equal(index_size(f->dir, 6), 16);
    assert_int_equal(index_size(f->dir, 12), 16);
    assert_true(index_size(f->dir, 18) > 16);
    check_all(l, &e);

    /* Back into segment 6 (offsets 6..11): it is active again. */
    assert_int_equal(plog_truncate_to(l, 8), 0);
    assert_int_equal(plog_segment_count(l), 2);
    assert_true(index_size(f->dir, 6) > 16);
    struct buf more = BUF_INIT;
    for (int k = 0; k < 3; k++) {
        buf_reset(&more);
        add_batch(&more, 2, NULL, 1, 300 + k, 50);
        assert_int_equal(plog_append(l, more.data, more.len, 7, -1, NULL), 0);
    }
    buf_free(&more);
    assert_int_equal(plog_log_end_offset(l), 14);
    /* Every batch is found through the index again, the new ones too. */
    for (int64_t off = 0; off < 14; off += 2) {
        struct plog_read_result r;
        assert_int_equal(plog_read(l, off, (int32_t)s, false, -1, &r), 0);
        assert_int_equal(r.len, (int64_t)s);
        uint8_t *got = read_bytes(&r);
        struct rb_header h;
        assert_int_equal(rb_parse_header(got, (size_t)r.len, &h), 0);
        assert_int_equal(h.base_offset, off);
        free(got);
        sfile_unref(r.file);
    }
    expect_free(&e);
    plog_close(l, true);
}

/* A roll while another holder has maint_lock (a cleaning holds it for
 * its whole pass) leaves the old segment's index trim to that holder,
 * done as it lets go, instead of trimming under seg_lock; reads go on
 * meanwhile, and the trimmed files are trusted by the next open. */
static void test_roll_under_maint_lock_trims_at_unlock(void **state)
{
    struct fx *f = *state;
    struct buf b = BUF_INIT;
    size_t s = add_batch(&b, 2, NULL, 1, 0, 50);
    buf_free(&b);
    struct plog_config c = cfg_with((int64_t)(3 * s + s / 2), 1); /* an entry per batch */
    struct plog *l = open_log(f->dir, &c);
    struct expect e = {0};
    slock_lock(&l->maint_lock);
    for (int k = 0; k < 7; k++)
        append_one(l, &e, 2, NULL, 50);
    assert_int_equal(plog_segment_count(l), 3);
    assert_true(index_size(f->dir, 0) > 16);
    assert_true(index_size(f->dir, 6) > 16);
    check_all(l, &e);
    plog_maint_unlock(l);
    assert_int_equal(index_size(f->dir, 0), 16);
    assert_int_equal(index_size(f->dir, 6), 16);
    assert_true(index_size(f->dir, 12) > 16);
    check_all(l, &e);
    plog_close(l, true);
    l = open_log(f->dir, &c);
    check_all(l, &e);
    expect_free(&e);
    plog_close(l, true);
}

static int flushes_wanted;

static void count_flush_wanted(void *ctx, struct plog *l)
{
    (void)ctx;
    (void)l;
    flushes_wanted++;
}

/* With a flusher (a flush_wanted hook) the roll leaves the trim to the
 * flush it asks for: the appender's thread neither waits for the
 * filesystem nor spends the trim's CPU; plog_flush trims first. */
static void test_roll_leaves_trim_to_flush(void **state)
{
    struct fx *f = *state;
    struct buf b = BUF_INIT;
    size_t s = add_batch(&b, 2, NULL, 1, 0, 50);
    buf_free(&b);
    struct plog_config c = cfg_with((int64_t)(3 * s + s / 2), 1);
    static const struct plog_hooks hooks = {count_flush_wanted, NULL, NULL, NULL};
    struct plog_open_opts o = PLOG_OPEN_OPTS_INIT;
    o.hooks = &hooks;
    struct plog *l = NULL;
    assert_int_equal(plog_open_ex(f->dir, NULL, &c, &o, &l), 0);
    struct expect e = {0};
    flushes_wanted = 0;
    for (int k = 0; k < 4; k++)
        append_one(l, &e, 2, NULL, 50);
    assert_int_equal(plog_segment_count(l), 2);
    assert_true(flushes_wanted > 0);
    assert_true(index_size(f->dir, 0) > 16);
    check_all(l, &e);
    assert_int_equal(plog_flush(l), 0);
    assert_int_equal(index_size(f->dir, 0), 16);
    assert_true(index_size(f->dir, 6) > 16);
    check_all(l, &e);
    /* A cleaning's maint_lock: the flush leaves the trim to its holder. */
    slock_lock(&l->maint_lock);
    for (int k = 0; k < 3; k++)
        append_one(l, &e, 2, NULL, 50);
    assert_int_equal(plog_segment_count(l), 3);
    assert_int_equal(plog_flush(l), 0);
    assert_true(index_size(f->dir, 6) > 16);
    plog_maint_unlock(l);
    assert_int_equal(index_size(f->dir, 6), 16);
    check_all(l, &e);
    expect_free(&e);
    plog_close(l, true);
}

static void test_reopen_clean(void **state)
{
    struct fx *f = *state;
    struct buf b = BUF_INIT;
    size_t s = add_batch(&b, 3, NULL, 1, 0, 40);
    buf_free(&b);
    struct plog_config c = cfg_with((int64_t)(4 * s), 1);
    struct plog *l = open_log(f->dir, &c);
    struct expect e = {0};
    for (int k = 0; k < 11; k++) {
        int64_t ts[3] = {5000 + 10 * k, 5001 + 10 * k, 5002 + 10 * k};
        append_one(l, &e, 3, ts, 40);
    }
    int64_t leo = plog_log_end_offset(l), size = plog_size_bytes(l);
    int segs = plog_segment_count(l);
    assert_int_equal(segs, 3);
    assert_int_equal(plog_close(l, true), 0);

    /* The marker is the log dir's (log/logmgr.h): none per partition. */
    char marker[512];
    snprintf(marker, sizeof marker, "%s/%s", f->dir, PLOG_CLEAN_SHUTDOWN_FILE);
    assert_int_equal(file_size(marker), -1);

    struct plog_open_opts o = PLOG_OPEN_OPTS_INIT;
    o.clean_shutdown = true;
    l = NULL;
    assert_int_equal(plog_open_ex(f->dir, NULL, &c, &o, &l), 0);
    assert_int_equal(file_size(marker), -1);
    assert_int_equal(plog_log_end_offset(l), leo);
    assert_int_equal(plog_size_bytes(l), size);
    assert_int_equal(plog_segment_count(l), segs);
    check_all(l, &e);
    int64_t off, ts;
    assert_int_equal(plog_offset_for_timestamp(l, 5051, &off, &ts), 0);
    assert_int_equal(off, 16);
    assert_int_equal(ts, 5051);
    assert_int_equal(plog_max_timestamp(l, &off, &ts), 0);
    assert_int_equal(off, 32);
    assert_int_equal(ts, 5102);

    /* Appends continue where the log ended. */
    append_one(l, &e, 2, NULL, 40);
    assert_int_equal(e.base[e.n - 1], leo);
    plog_close(l, false);

    /* An unclean close: the CRC scan finds nothing to cut. */
    l = open_log(f->dir, &c);
    assert_int_equal(plog_log_end_offset(l), leo + 2);
    check_all(l, &e);
    expect_free(&e);
    plog_close(l, false);
}

/* Writes a log of four batches, closes it uncleanly and returns the file
 * bytes and where the last batch starts. */
static void torn_setup(struct fx *f, struct expect *e, uint8_t **orig, size_t *len, size_t *last_start)
{
    struct plog_config c = cfg_with(PLOG_DEFAULT_SEGMENT_BYTES, 50);
    struct plog *l = open_log(f->dir, &c);
    for (int k = 0; k < 4; k++)
        append_one(l, e, 2 + k, NULL, 30);
    plog_close(l, false);
    char *p = seg_path(f->dir, 0);
    *len = slurp(p, orig);
    free(p);
    *last_start = *len - e->size[3];
}

static void check_recovered(struct fx *f, struct expect *e, size_t last_start)
{
    struct plog_config c = cfg_with(PLOG_DEFAULT_SEGMENT_BYTES, 50);
    struct plog *l = open_log(f->dir, &c);
    assert_int_equal(plog_log_end_offset(l), e->base[3]);
    assert_int_equal(plog_size_bytes(l), (int64_t)last_start);
    char *p = seg_path(f->dir, 0);
    assert_int_equal(file_size(p), (int64_t)last_start);
    free(p);
    for (int k = 0; k < 3; k++)
        check_batch_at(l, e, k, e->last[k]);
    struct plog_read_result r;
    assert_int_equal(plog_read(l, e->base[3], 1000, true, -1, &r), 0);
    assert_int_equal(r.len, 0);
    assert_int_equal(plog_read(l, e->base[3] + 1, 1000, true, -1, &r), KERR_OFFSET_OUT_OF_RANGE);
    plog_close(l, false);
}

static void test_torn_tail_truncate(void **state)
{
    struct fx *f = *state;
    struct expect e = {0};
    uint8_t *orig;
    size_t len, last_start;
    torn_setup(f, &e, &orig, &len, &last_start);
    char *p = seg_path(f->dir, 0);

    enum slog_level lvl = slog_get_level();
    slog_set_level(SLOG_ERROR); /* one WARN per case otherwise */
    for (size_t cut = last_start; cut < len; cut++) {
        spit(p, orig, cut);
        assert_int_equal(truncate(p, (off_t)cut), 0);
        check_recovered(f, &e, last_start);
    }
    /* Zeros after the last batch (a preallocated or torn page). */
    spit(p, orig, last_start);
    int fd = open(p, O_WRONLY);
    uint8_t zeros[4096] = {0};
    assert_int_equal(pwrite(fd, zeros, sizeof zeros, (off_t)last_start), (ssize_t)sizeof zeros);
    close(fd);
    check_recovered(f, &e, last_start);
    slog_set_level(lvl);

    /* After recovery the log takes appends at the recovered end. */
    struct plog_config c = cfg_with(PLOG_DEFAULT_SEGMENT_BYTES, 50);
    struct plog *l = open_log(f->dir, &c);
    e.n = 3;
    free(e.bytes[3]);
    append_one(l, &e, 2, NULL, 30);
    assert_int_equal(e.base[3], e.last[2] + 1);
    check_all(l, &e);
    plog_close(l, false);

    free(p);
    free(orig);
    expect_free(&e);
}

static void test_torn_tail_corrupt(void **state)
{
    struct fx *f = *state;
    struct expect e = {0};
    uint8_t *orig;
    size_t len, last_start;
    torn_setup(f, &e, &orig, &len, &last_start);
    char *p = seg_path(f->dir, 0);
    uint8_t *bad = malloc(len);

    enum slog_level lvl = slog_get_level();
    slog_set_level(SLOG_ERROR);
    /* Every byte from the CRC field to the end of the last batch. */
    for (size_t i = last_start + RB_OFF_CRC; i < len; i++) {
        memcpy(bad, orig, len);
        bad[i] ^= 0x40;
        spit(p, bad, len);
        check_recovered(f, &e, last_start);
    }
    /* A bad magic or length byte, which the CRC does not cover. */
    size_t hdr[] = {RB_OFF_MAGIC, RB_OFF_BATCH_LENGTH, RB_OFF_BATCH_LENGTH + 3};
    for (size_t i = 0; i < sizeof hdr / sizeof hdr[0]; i++) {
        memcpy(bad, orig, len);
        bad[last_start + hdr[i]] ^= 0x01;
        spit(p, bad, len);
        check_recovered(f, &e, last_start);
    }
    /* A base offset going backwards. */
    memcpy(bad, orig, len);
    be64_write(bad + last_start, (uint64_t)e.base[2]);
    spit(p, bad, len);
    check_recovered(f, &e, last_start);
    slog_set_level(lvl);

    /* After a clean shutdown the CRC scan is skipped (as Kafka trusts a
     * cleanly closed log): a flipped payload byte goes unnoticed. */
    memcpy(bad, orig, len);
    bad[len - 1] ^= 0x40;
    spit(p, bad, len);
    char marker[512];
    snprintf(marker, sizeof marker, "%s/%s", f->dir, PLOG_CLEAN_SHUTDOWN_FILE);
    int fd = open(marker, O_WRONLY | O_CREAT, 0644);
    close(fd);
    struct plog *l = open_log(f->dir, NULL);
    assert_int_equal(plog_log_end_offset(l), e.last[3] + 1);
    /* (an old binary's per-partition marker: removed by the open) */
    assert_int_equal(access(marker, F_OK), -1);
    assert_int_not_equal(plog_close(l, false), 0);

    free(bad);
    free(p);
    free(orig);
    expect_free(&e);
}

static void test_torn_earlier_segment(void **state)
{
    struct fx *f = *state;
    struct buf b = BUF_INIT;
    size_t s = add_batch(&b, 2, NULL, 1, 0, 30);
    buf_free(&b);
    struct plog_config c = cfg_with((int64_t)(2 * s), 1);
    struct plog *l = open_log(f->dir, &c);
    struct expect e = {0};
    for (int k = 0; k < 6; k++)
        append_one(l, &e, 2, NULL, 30);
    assert_int_equal(plog_segment_count(l), 3); /* 0, 4, 8 */
    plog_close(l, true);

    /* The first segment loses half its last batch (a disk fault): what
     * followed it cannot stay in the log. */
    char *p0 = seg_path(f->dir, 0), *p4 = seg_path(f->dir, 4), *p8 = seg_path(f->dir, 8);
    assert_int_equal(truncate(p0, (off_t)(s + s / 2)), 0);
    enum slog_level lvl = slog_get_level();
    slog_set_level(SLOG_ERROR);
    l = open_log(f->dir, &c);
    slog_set_level(lvl);
    assert_int_equal(plog_segment_count(l), 1);
    assert_int_equal(plog_log_end_offset(l), 2);
    assert_int_equal(file_size(p0), (int64_t)s);
    assert_int_equal(file_size(p4), -1);
    assert_int_equal(file_size(p8), -1);
    e.n = 1;
    for (int k = 1; k < 6; k++)
        free(e.bytes[k]);
    append_one(l, &e, 2, NULL, 30);
    assert_int_equal(e.base[1], 2);
    check_all(l, &e);
    plog_close(l, false);
    free(p0);
    free(p4);
    free(p8);
    expect_free(&e);
}

static char *index_path(const char *dir, int64_t base, const char *ext)
{
    char *p = malloc(PATH_MAX);
    snprintf(p, PATH_MAX, "%s/%020" PRId64 "%s", dir, base, ext);
    return p;
}

/* What the close of l's active segment owes after the open: nothing
 * (no resize now, no trim or fdatasync at the close), or not. */
static bool owes_nothing(const struct plog *l)
{
    const struct segment *s = l->segs[l->nsegs - 1];
    return s->unseal_pending && !s->oidx.f.dirty && !s->tidx.f.dirty;
}

/* Both index files of segment 0 hold exactly want_o and want_t. */
static void check_index_files(const char *dir, const uint8_t *want_o, size_t on, const uint8_t *want_t, size_t tn)
{
    const char *exts[] = {INDEX_SUFFIX, TIMEINDEX_SUFFIX};
    const uint8_t *want[] = {want_o, want_t};
    size_t n[] = {on, tn};
    for (int i = 0; i < 2; i++) {
        char *p = index_path(dir, 0, exts[i]);
        uint8_t *got = NULL;
        size_t len = slurp(p, &got);
        assert_int_equal(len, n[i]);
        if (len)
            assert_memory_equal(got, want[i], len);
        free(got);
        free(p);
    }
}

/* Recovery after a crash (an open without the clean-shutdown marker)
 * checks every batch's CRC from the recovery point but keeps index files
 * that already agree with the log: an empty log's, an idle one's closed
 * cleanly and not appended to since. Their close then owes nothing (as
 * after a clean open). Files that do not agree are made to: a torn tail
 * is cut and its entries go, the others stay. */
static void test_unclean_open_keeps_agreeing_indexes(void **state)
{
    struct fx *f = *state;
    struct plog_config c = cfg_with(PLOG_DEFAULT_SEGMENT_BYTES, 50);
    struct plog_open_opts clean = PLOG_OPEN_OPTS_INIT;
    clean.clean_shutdown = true;

    /* A new log, empty, crashed. */
    struct plog *l = open_log(f->dir, &c);
    assert_true(owes_nothing(l));
    plog_close(l, false);
    l = open_log(f->dir, &c);
    assert_true(owes_nothing(l));
    assert_int_equal(plog_close(l, true), 0);
    check_index_files(f->dir, NULL, 0, NULL, 0);

    /* Batches with rising timestamps, a clean close and open, then a
     * crash before any append; first one batch (no offset-index entry,
     * the time index only the close's final entry), then six (the time
     * index keeps that entry, as after a clean open, and has one more
     * per batch but the first). */
    struct expect e = {0};
    size_t want_on[] = {0, 5 * OIDX_ENTRY_SIZE}, want_tn[] = {TIDX_ENTRY_SIZE, 6 * TIDX_ENTRY_SIZE};
    char *po = index_path(f->dir, 0, INDEX_SUFFIX), *pt = index_path(f->dir, 0, TIMEINDEX_SUFFIX);
    uint8_t *o0 = NULL, *t0 = NULL;
    for (int round = 0; round < 2; round++) {
        l = open_log(f->dir, &c);
        for (int k = e.n; k < (round ? 6 : 1); k++) {
            int64_t ts[8];
            for (int i = 0; i < 8; i++)
                ts[i] = 10000 + 100 * k + i;
            append_one(l, &e, 2 + k, ts, 30);
        }
        assert_false(owes_nothing(l));
        assert_int_equal(plog_close(l, true), 0);
        size_t on0 = slurp(po, &o0), tn0 = slurp(pt, &t0);
        assert_int_equal(on0, want_on[round]);
        assert_int_equal(tn0, want_tn[round]);
        l = NULL;
        assert_int_equal(plog_open_ex(f->dir, NULL, &c, &clean, &l), 0);
        assert_true(owes_nothing(l));
        plog_close(l, false);
        l = open_log(f->dir, &c);
        assert_true(owes_nothing(l));
        check_all(l, &e);
        int64_t off, ts;
        assert_int_equal(plog_offset_for_timestamp(l, 10000 + 100 * (e.n - 1) + 1, &off, &ts), 0);
        assert_int_equal(ts, 10000 + 100 * (e.n - 1) + 1);
        assert_int_equal(off, e.base[e.n - 1] + 1);
        assert_int_equal(plog_close(l, true), 0);
        check_index_files(f->dir, o0, on0, t0, tn0);
        if (round == 0) {
            free(o0);
            free(t0);
        }
    }

    /* The same files, but the log lost half its last batch: the batch
     * and its entries go (the last of each), the others stay. */
    char *p = seg_path(f->dir, 0);
    int64_t len = file_size(p);
    size_t last_start = (size_t)len - e.size[5];
    assert_int_equal(truncate(p, (off_t)(last_start + e.size[5] / 2)), 0);
    enum slog_level lvl = slog_get_level();
    slog_set_level(SLOG_ERROR); /* the recovery's WARN */
    l = open_log(f->dir, &c);
    slog_set_level(lvl);
    assert_false(owes_nothing(l)); /* the files are cut at the close */
    assert_int_equal(plog_log_end_offset(l), e.base[5]);
    assert_int_equal(file_size(p), (int64_t)last_start);
    e.n = 5;
    free(e.bytes[5]);
    check_all(l, &e);
    assert_int_equal(plog_close(l, true), 0);
    check_index_files(f->dir, o0, 4 * OIDX_ENTRY_SIZE, t0, 5 * TIDX_ENTRY_SIZE);

    /* Appended to after a clean open (the files sized for appends), then
     * a crash that tore the last batch: its entries go, the new batch
     * before it keeps its entries (one of each). */
    l = NULL;
    assert_int_equal(plog_open_ex(f->dir, NULL, &c, &clean, &l), 0);
    int64_t ts[8];
    for (int i = 0; i < 8; i++)
        ts[i] = 20000 + i;
    append_one(l, &e, 8, ts, 30);
    ts[0] = 30000;
    append_one(l, &e, 1, ts, 30);
    plog_close(l, false);
    len = file_size(p);
    assert_int_equal(truncate(p, len - 1), 0);
    slog_set_level(SLOG_ERROR);
    l = open_log(f->dir, &c);
    slog_set_level(lvl);
    assert_int_equal(plog_log_end_offset(l), e.base[6]);
    e.n = 6;
    free(e.bytes[6]);
    check_all(l, &e);
    int64_t off, ts_found;
    assert_int_equal(plog_offset_for_timestamp(l, 20003, &off, &ts_found), 0);
    assert_int_equal(off, e.base[5] + 3);
    assert_int_equal(plog_offset_for_timestamp(l, 20008, &off, &ts_found), 0);
    assert_int_equal(off, -1); /* past the log: the torn 30000 is gone */
    assert_int_equal(plog_close(l, true), 0);
    uint8_t o[5 * OIDX_ENTRY_SIZE], t[6 * TIDX_ENTRY_SIZE];
    memcpy(o, o0, 4 * OIDX_ENTRY_SIZE);
    be32_write(o + 4 * OIDX_ENTRY_SIZE, (uint32_t)e.last[5]);
    be32_write(o + 4 * OIDX_ENTRY_SIZE + 4, (uint32_t)last_start);
    memcpy(t, t0, 5 * TIDX_ENTRY_SIZE);
    be64_write(t + 5 * TIDX_ENTRY_SIZE, 20007);
    be32_write(t + 5 * TIDX_ENTRY_SIZE + 8, (uint32_t)e.last[5]);
    check_index_files(f->dir, o, sizeof o, t, sizeof t);

    free(o0);
    free(t0);
    free(p);
    free(po);
    free(pt);
    expect_free(&e);
}

/* Identity "compression": the log never decompresses, it only needs the
 * codec bits set. */
static int fake_codec(void *ctx, int codec, const uint8_t *in, size_t in_len, struct buf *out)
{
    (void)ctx;
    (void)codec;
    buf_append(out, in, in_len);
    return 0;
}

static void timestamps_scenario(struct plog *l)
{
    int64_t a[] = {100, 105, 103}, bts[] = {200, 150}, cts[] = {120, 130};
    struct buf b = BUF_INIT;
    add_batch(&b, 3, a, 1, 0, 30);
    assert_int_equal(plog_append(l, b.data, b.len, 1, -1, NULL), 0); /* 0..2 */
    buf_reset(&b);
    add_batch(&b, 2, bts, 1, 1, 30);
    assert_int_equal(plog_append(l, b.data, b.len, 1, -1, NULL), 0); /* 3..4 */
    buf_reset(&b);
    add_batch(&b, 2, cts, 1, 2, 30);
    assert_int_equal(plog_append(l, b.data, b.len, 1, -1, NULL), 0); /* 5..6 */
    buf_free(&b);
}

static void check_timestamps(struct plog *l)
{
    struct {
        int64_t ts, off, got_ts;
    } cases[] = {
        {0, 0, 100}, {100, 0, 100}, {101, 1, 105}, {104, 1, 105}, {105, 1, 105},
        {106, 3, 200}, {125, 3, 200}, {150, 3, 200}, {200, 3, 200}, {201, -1, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t off, ts;
        assert_int_equal(plog_offset_for_timestamp(l, cases[i].ts, &off, &ts), 0);
        assert_int_equal(off, cases[i].off);
        assert_int_equal(ts, cases[i].got_ts);
    }
    int64_t off, ts;
    assert_int_equal(plog_max_timestamp(l, &off, &ts), 0);
    assert_int_equal(off, 3);
    assert_int_equal(ts, 200);
}

static void test_timestamps(void **state)
{
    struct fx *f = *state;
    struct plog_config c = cfg_with(PLOG_DEFAULT_SEGMENT_BYTES, 0);
    struct plog *l = open_log(f->dir, &c);
    int64_t off, ts;
    assert_int_equal(plog_offset_for_timestamp(l, 0, &off, &ts), 0);
    assert_int_equal(off, -1);
    assert_int_equal(ts, -1);
    assert_int_equal(plog_max_timestamp(l, &off, &ts), 0);
    assert_int_equal(off, -1);
    assert_int_equal(ts, -1);

    timestamps_scenario(l);
    check_timestamps(l);

    /* LogAppendTime: the batch is rewritten, every record counts as the
     * append time. */
    int64_t dts[] = {50, 60};
    struct buf b = BUF_INIT;
    size_t s = add_batch(&b, 2, dts, 1, 3, 30);
    struct plog_append_result res;
    assert_int_equal(plog_append(l, b.data, b.len, 1, 1000, &res), 0);
    assert_int_equal(res.base_offset, 7);
    assert_int_equal(res.log_append_time, 1000);
    struct rb_header h;
    assert_int_equal(rb_parse_header(b.data, s, &h), 0);
    assert_int_equal(rb_timestamp_type(&h), RB_LOG_APPEND_TIME);
    assert_int_equal(h.max_timestamp, 1000);
    assert_true(rb_crc_ok(b.data, s));
    struct plog_read_result r;
    assert_int_equal(plog_read(l, 8, 1, true, -1, &r), 0);
    uint8_t *p = read_bytes(&r);
    assert_memory_equal(p, b.data, s);
    free(p);
    sfile_unref(r.file);
    assert_int_equal(plog_offset_for_timestamp(l, 201, &off, &ts), 0);
    assert_int_equal(off, 7);
    assert_int_equal(ts, 1000);
    assert_int_equal(plog_max_timestamp(l, &off, &ts), 0);
    assert_int_equal(off, 7);
    assert_int_equal(ts, 1000);

    /* Compressed: batch granularity (base offset, maxTimestamp). */
    buf_reset(&b);
    int64_t ets[] = {1500, 2000, 1800};
    struct rb_builder bld;
    rb_builder_begin(&bld, &b, 0, ets[0], NULL);
    for (int i = 0; i < 3; i++) {
        kbytes_t v = {(const uint8_t *)"value", 5};
        assert_int_equal(rb_builder_add(&bld, ets[i], KBYTES_NULL, v, NULL, 0), 0);
    }
    assert_int_equal(rb_builder_finish_compressed(&bld, RB_CODEC_GZIP, fake_codec, NULL, &s), 0);
    assert_int_equal(plog_append(l, b.data, b.len, 1, -1, &res), 0);
    assert_int_equal(res.base_offset, 9);
    assert_int_equal(plog_offset_for_timestamp(l, 1700, &off, &ts), 0);
    assert_int_equal(off, 9);
    assert_int_equal(ts, 2000);
    assert_int_equal(plog_max_timestamp(l, &off, &ts), 0);
    assert_int_equal(off, 9);
    assert_int_equal(ts, 2000);
    buf_free(&b);
    plog_close(l, false);
}

static void test_timestamps_across_segments(void **state)
{
    struct fx *f = *state;
    /* One batch per segment (segment.bytes = the largest batch), index
     * entries for every batch. */
    int64_t a[] = {100, 105, 103};
    struct buf b = BUF_INIT;
    size_t s = add_batch(&b, 3, a, 1, 0, 30);
    buf_free(&b);
    struct plog_config c = cfg_with((int64_t)s, 0);
    struct plog *l = open_log(f->dir, &c);
    timestamps_scenario(l);
    assert_int_equal(plog_segment_count(l), 3);
    check_timestamps(l);
    plog_close(l, true);
    l = open_log(f->dir, &c);
    check_timestamps(l);
    plog_close(l, false);
    l = open_log(f->dir, &c); /* unclean: CRC scan of the last segment */
    check_timestamps(l);
    plog_close(l, false);
}

/* ---- concurrency ---- */

#define WRITERS 2
#define BATCHES_PER_WRITER 1500

struct conc {
    struct plog *l;
    atomic_int writers_done;
    int64_t reads;
    atomic_int failures;
};

struct writer_arg {
    struct conc *c;
    int id;
};

static void *writer_main(void *p)
{
    struct writer_arg *a = p;
    struct buf b = BUF_INIT;
    for (int i = 0; i < BATCHES_PER_WRITER; i++) {
        buf_reset(&b);
        add_batch(&b, 1 + (i + a->id) % 3, NULL, a->id, i, 8 + i % 50);
        struct plog_append_result r;
        if (plog_append(a->c->l, b.data, b.len, 5, -1, &r) != 0 || r.last_offset - r.base_offset != (i + a->id) % 3)
            a->c->failures++;
    }
    buf_free(&b);
    atomic_fetch_add(&a->c->writers_done, 1);
    return NULL;
}

/* Checks that [file_pos, file_pos + len) holds whole batches with
 * contiguous offsets starting at the batch holding offset. */
static bool range_ok(const struct plog_read_result *r, int64_t offset)
{
    uint8_t *p = malloc((size_t)r->len);
    bool ok = pread(r->file->fd, p, (size_t)r->len, r->file_pos) == r->len;
    int64_t expect_base = r->first_base_offset;
    ok = ok && r->first_base_offset <= offset && offset < r->next_offset;
    for (size_t at = 0; ok && at < (size_t)r->len;) {
        struct rb_header h;
        ok = rb_parse_header(p + at, (size_t)r->len - at, &h) == 0 && h.base_offset == expect_base &&
             (size_t)rb_batch_size(&h) <= (size_t)r->len - at && rb_crc_ok(p + at, (size_t)rb_batch_size(&h)) &&
             h.partition_leader_epoch == 5;
        if (ok) {
            expect_base = rb_last_offset(&h) + 1;
            at += (size_t)rb_batch_size(&h);
        }
    }
    ok = ok && expect_base == r->next_offset;
    free(p);
    return ok;
}

static void *reader_main(void *p)
{
    struct conc *c = p;
    unsigned seed = 12345;
    while (atomic_load(&c->writers_done) < WRITERS) {
        int64_t leo = plog_log_end_offset(c->l);
        if (leo == 0)
            continue;
        int64_t off = (int64_t)(rand_r(&seed) % (unsigned)leo);
        struct plog_read_result r;
        if (plog_read(c->l, off, 2048, true, -1, &r) != 0 || r.len <= 0 || !range_ok(&r, off))
            c->failures++;
        sfile_unref(r.file);
        /* The end never moves backwards and reading at it is empty. */
        int64_t leo2 = plog_log_end_offset(c->l);
        if (leo2 < leo)
            c->failures++;
        c->reads++;
    }
    return NULL;
}

static void test_concurrent(void **state)
{
    struct fx *f = *state;
    struct plog_config cfg = cfg_with(16 * 1024, 256);
    struct conc c = {.l = open_log(f->dir, &cfg)};
    atomic_init(&c.writers_done, 0);
    atomic_init(&c.failures, 0);
    pthread_t w[WRITERS], rd;
    struct writer_arg args[WRITERS];
    assert_int_equal(pthread_create(&rd, NULL, reader_main, &c), 0);
    for (int i = 0; i < WRITERS; i++) {
        args[i] = (struct writer_arg){&c, i + 1};
        assert_int_equal(pthread_create(&w[i], NULL, writer_main, &args[i]), 0);
    }
    for (int i = 0; i < WRITERS; i++)
        pthread_join(w[i], NULL);
    pthread_join(rd, NULL);
    assert_int_equal(atomic_load(&c.failures), 0);
    assert_true(c.reads > 0);
    assert_true(plog_segment_count(c.l) > 2);

    /* Every batch exactly once, offsets contiguous, each writer's batches
     * in the order it appended them. */
    int64_t leo = plog_log_end_offset(c.l);
    int next_seq[WRITERS + 1] = {0};
    int64_t off = 0;
    while (off < leo) {
        struct plog_read_result r;
        assert_int_equal(plog_read(c.l, off, 1 << 20, true, -1, &r), 0);
        assert_true(r.len > 0);
        assert_int_equal(r.first_base_offset, off);
        uint8_t *p = read_bytes(&r);
        for (size_t at = 0; at < (size_t)r.len;) {
            struct rb_header h;
            assert_int_equal(rb_parse_header(p + at, (size_t)r.len - at, &h), 0);
            assert_int_equal(h.base_offset, off);
            assert_true(h.producer_id >= 1 && h.producer_id <= WRITERS);
            assert_int_equal(h.producer_epoch, next_seq[h.producer_id]);
            next_seq[h.producer_id]++;
            off = rb_last_offset(&h) + 1;
            at += (size_t)rb_batch_size(&h);
        }
        free(p);
        sfile_unref(r.file);
    }
    for (int i = 1; i <= WRITERS; i++)
        assert_int_equal(next_seq[i], BATCHES_PER_WRITER);
    plog_close(c.l, true);
}

/* ---- errors, metadata, delete ---- */

static void test_write_error_is_cut(void **state)
{
    struct fx *f = *state;
    struct plog *l = open_log(f->dir, NULL);
    struct expect e = {0};
    append_one(l, &e, 3, NULL, 100);
    char *p = seg_path(f->dir, 0);
    int64_t before = file_size(p);

    /* RLIMIT_FSIZE makes the kernel write part of the batch and then fail
     * with EFBIG, just like a disk filling up mid-write. */
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    lim = old;
    lim.rlim_cur = (rlim_t)(before + 40);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    struct buf b = BUF_INIT;
    add_batch(&b, 3, NULL, 1, 1, 100);
    enum slog_level lvl = slog_get_level();
    slog_set_level((enum slog_level)(SLOG_ERROR + 1));
    int rc = plog_append(l, b.data, b.len, 7, -1, NULL);
    slog_set_level(lvl);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, prev);
    assert_int_equal(rc, KERR_KAFKA_STORAGE_ERROR);
    assert_int_equal(file_size(p), before);
    assert_int_equal(plog_log_end_offset(l), 3);
    assert_int_equal(plog_size_bytes(l), before);

    /* The log stays usable. */
    buf_free(&b);
    append_one(l, &e, 2, NULL, 100);
    assert_int_equal(e.base[1], 3);
    check_all(l, &e);
    plog_close(l, false);
    free(p);
    expect_free(&e);
}

static void test_partition_metadata(void **state)
{
    struct fx *f = *state;
    kuuid_t id, other;
    assert_int_equal(uuid_random(id.b), 0);
    assert_int_equal(uuid_random(other.b), 0);
    struct plog *l = NULL;
    assert_int_equal(plog_open(f->dir, &id, NULL, &l), 0);
    assert_true(kuuid_eq(plog_topic_id(l), &id));
    plog_close(l, true);

    char path[700], want[128], idstr[UUID_STR_LEN + 1];
    snprintf(path, sizeof path, "%s/partition.metadata", f->dir);
    uuid_to_string(id.b, idstr);
    snprintf(want, sizeof want, "version: 0\ntopic_id: %s\n", idstr);
    uint8_t *got;
    size_t n = slurp(path, &got);
    assert_int_equal(n, strlen(want));
    assert_memory_equal(got, want, n);
    free(got);

    enum slog_level lvl = slog_get_level();
    slog_set_level((enum slog_level)(SLOG_ERROR + 1));
    assert_int_equal(plog_open(f->dir, &other, NULL, &l), KERR_INCONSISTENT_TOPIC_ID);
    assert_null(l);
    slog_set_level(lvl);
    /* No id given: the stored one is used. */
    assert_int_equal(plog_open(f->dir, NULL, NULL, &l), 0);
    assert_true(kuuid_eq(plog_topic_id(l), &id));
    plog_close(l, false);
    kuuid_t zero = {{0}};
    assert_int_equal(plog_open(f->dir, &zero, NULL, &l), 0);
    assert_true(kuuid_eq(plog_topic_id(l), &id));
    plog_close(l, false);

    /* A fresh log without an id has no file. */
    char dir2[600];
    snprintf(dir2, sizeof dir2, "%s/noid-0", f->root);
    assert_int_equal(plog_open(dir2, NULL, NULL, &l), 0);
    assert_null(plog_topic_id(l));
    snprintf(path, sizeof path, "%s/partition.metadata", dir2);
    assert_int_equal(file_size(path), -1);
    plog_close(l, false);
}

/* A deferred creation (many partitions created together) makes no
 * fsync of its own; plog_sync_created syncs the log's directory. What a
 * crash before that sync can leave (an empty partition.metadata, no
 * segment files) opens again as a new log of the given topic. */
static int deferred_syncs;
static void count_deferred_sync(const char *path)
{
    (void)path;
    deferred_syncs++;
}

static void test_deferred_creation(void **state)
{
    struct fx *f = *state;
    kuuid_t id;
    assert_int_equal(uuid_random(id.b), 0);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/topic-7", f->root);
    struct plog_open_opts o = PLOG_OPEN_OPTS_INIT;
    o.defer_sync = true;
    fs_sync_observer = count_deferred_sync;
    deferred_syncs = 0;
    struct plog *l = NULL;
    assert_int_equal(plog_open_ex(dir, &id, NULL, &o, &l), 0);
    assert_int_equal(deferred_syncs, 0);
    assert_int_equal(plog_sync_created(l), 0);
    assert_int_equal(deferred_syncs, 1);
    fs_sync_observer = NULL;
    assert_true(kuuid_eq(plog_topic_id(l), &id));
    plog_close(l, false);

    char path[700], want[128], idstr[UUID_STR_LEN + 1];
    snprintf(path, sizeof path, "%s/partition.metadata", dir);
    uuid_to_string(id.b, idstr);
    snprintf(want, sizeof want, "version: 0\ntopic_id: %s\n", idstr);
    uint8_t *got;
    size_t n = slurp(path, &got);
    assert_int_equal(n, strlen(want));
    assert_memory_equal(got, want, n);
    free(got);

    /* a crash before the sync: the file empty, the segment gone */
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fclose(fp);
    const char *exts[] = {".log", ".index", ".timeindex"};
    for (int i = 0; i < 3; i++) {
        char seg[700];
        snprintf(seg, sizeof seg, "%s/%020d%s", dir, 0, exts[i]);
        assert_int_equal(unlink(seg), 0);
    }
    enum slog_level lvl = slog_get_level();
    slog_set_level((enum slog_level)(SLOG_ERROR + 1));
    assert_int_equal(plog_open(dir, &id, NULL, &l), 0);
    slog_set_level(lvl);
    assert_true(kuuid_eq(plog_topic_id(l), &id));
    assert_int_equal(plog_log_end_offset(l), 0);
    plog_close(l, true);
    n = slurp(path, &got);
    assert_int_equal(n, strlen(want));
    assert_memory_equal(got, want, n);
    free(got);
}

static void test_open_errors(void **state)
{
    struct fx *f = *state;
    char file[512], below[600];
    snprintf(file, sizeof file, "%s/plainfile", f->root);
    int fd = open(file, O_WRONLY | O_CREAT, 0644);
    close(fd);
    snprintf(below, sizeof below, "%s/sub-0", file);
    struct plog *l = NULL;
    enum slog_level lvl = slog_get_level();
    slog_set_level((enum slog_level)(SLOG_ERROR + 1));
    assert_int_equal(plog_open(file, NULL, NULL, &l), KERR_KAFKA_STORAGE_ERROR);
    assert_null(l);
    assert_int_equal(plog_open(below, NULL, NULL, &l), KERR_KAFKA_STORAGE_ERROR);
    struct plog_config c = cfg_with(0, 4096);
    assert_int_equal(plog_open(f->dir, NULL, &c, &l), KERR_INVALID_CONFIG);
    c = cfg_with((int64_t)INT32_MAX + 1, 4096);
    assert_int_equal(plog_open(f->dir, NULL, &c, &l), KERR_INVALID_CONFIG);
    slog_set_level(lvl);
    assert_null(l);
}

static void test_fsync_each_append(void **state)
{
    struct fx *f = *state;
    struct plog_config c = cfg_with(4096, 100);
    c.fsync_each_append = true;
    struct plog *l = open_log(f->dir, &c);
    struct expect e = {0};
    for (int k = 0; k < 30; k++)
        append_one(l, &e, 2, NULL, 60);
    check_all(l, &e);
    assert_int_equal(plog_flush(l), 0);
    plog_close(l, true);
    expect_free(&e);
}

static void test_delete(void **state)
{
    struct fx *f = *state;
    struct plog *l = open_log(f->dir, NULL);
    struct expect e = {0};
    append_one(l, &e, 3, NULL, 50);
    struct plog_read_result r;
    assert_int_equal(plog_read(l, 0, 1 << 20, true, -1, &r), 0);
    assert_int_equal(plog_delete(l), 0);
    assert_int_equal(file_size(f->dir), -1);
    /* Nothing is left in the log dir, not even the "-delete" directory. */
    int n = 0;
    DIR *d = opendir(f->root);
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (de->d_name[0] != '.')
            n++;
    closedir(d);
    assert_int_equal(n, 0);
    /* The reader's reference still reads the batch. */
    uint8_t *p = read_bytes(&r);
    assert_memory_equal(p, e.bytes[0], e.size[0]);
    free(p);
    sfile_unref(r.file);
    expect_free(&e);
}

/* ---- producer state (log/plog_producers.c) ---- */

/* A batch of n records of producer pid/epoch from sequence seq. */
static void idem_batch(struct buf *b, int64_t pid, int16_t epoch, int32_t seq, int n)
{
    buf_reset(b);
    struct rb_batch_opts o = RB_BATCH_OPTS_INIT;
    o.producer_id = pid;
    o.producer_epoch = epoch;
    o.base_sequence = seq;
    struct rb_builder bb;
    rb_builder_begin(&bb, b, 0, 1000, &o);
    for (int i = 0; i < n; i++) {
        char v[32];
        int len = snprintf(v, sizeof v, "p%" PRId64 "s%d", pid, seq + i);
        assert_int_equal(rb_builder_add(&bb, 1000 + i, KBYTES_NULL, (kbytes_t){(const uint8_t *)v, len}, NULL, 0),
                         0);
    }
    assert_int_equal(rb_builder_finish(&bb, NULL), 0);
}

/* Appends (as the leader) and returns the error; *base gets the base
 * offset answered, *dup whether it was a duplicate. */
static int idem_append(struct plog *l, int64_t pid, int16_t epoch, int32_t seq, int n, int64_t *base, bool *dup)
{
    struct buf b = BUF_INIT;
    idem_batch(&b, pid, epoch, seq, n);
    struct plog_append_result r;
    int rc = plog_append(l, b.data, b.len, 3, -1, &r);
    buf_free(&b);
    if (base)
        *base = r.base_offset;
    if (dup)
        *dup = r.duplicate;
    return rc;
}

static void expect_append(struct plog *l, int64_t pid, int16_t epoch, int32_t seq, int n, int64_t want_base,
                          bool want_dup)
{
    int64_t base;
    bool dup;
    assert_int_equal(idem_append(l, pid, epoch, seq, n, &base, &dup), 0);
    assert_int_equal(base, want_base);
    assert_int_equal(dup, want_dup);
}

static int count_snapshots(const char *dir, int64_t *max_offset)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    *max_offset = -1;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len == 29 && strcmp(de->d_name + 20, ".snapshot") == 0) {
            int64_t off = strtoll(de->d_name, NULL, 10);
            if (off > *max_offset)
                *max_offset = off;
            n++;
        }
    }
    closedir(d);
    return n;
}

/* A clean close snapshots the log end; the next open keeps only the
 * newest snapshot and those at segment bases (Kafka's
 * removeStraySnapshots), so restarts of a log that never rolls do not
 * pile files up. */
static void test_producer_snapshots_do_not_pile_up(void **state)
{
    struct fx *f = *state;
    struct plog_config c = PLOG_CONFIG_INIT;
    int64_t max;
    for (int i = 0; i < 4; i++) {
        struct plog *l = open_log(f->dir, &c);
        if (i > 0) {
            assert_int_equal(count_snapshots(f->dir, &max), 1);
            assert_int_equal(max, 4 * i);
        }
        expect_append(l, 1, 0, 4 * i, 4, 4 * i, false);
        plog_close(l, true);
        assert_int_equal(count_snapshots(f->dir, &max), i > 0 ? 2 : 1);
        assert_int_equal(max, 4 * (i + 1));
    }
    /* the producer's state survived every restart */
    struct plog *l = open_log(f->dir, &c);
    expect_append(l, 1, 0, 12, 4, 12, true);
    plog_close(l, true);
}

static void test_producer_state(void **state)
{
    struct fx *f = *state;
    struct buf b = BUF_INIT;
    idem_batch(&b, 1, 0, 0, 4);
    struct plog_config c = cfg_with((int64_t)(3 * b.len), 1);
    buf_free(&b);
    struct plog *l = open_log(f->dir, &c);

    /* Leader rules through plog_append. */
    expect_append(l, 1, 0, 0, 4, 0, false);
    expect_append(l, 1, 0, 0, 4, 0, true);
    assert_int_equal(plog_log_end_offset(l), 4);
    expect_append(l, 1, 0, 4, 4, 4, false);
    assert_int_equal(idem_append(l, 1, 0, 9, 1, NULL, NULL), KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    expect_append(l, 2, 0, 0, 4, 8, false);
    assert_int_equal(plog_log_end_offset(l), 12);
    /* Segments of three batches: a roll took a snapshot at 12... */
    expect_append(l, 1, 0, 8, 4, 12, false);
    assert_int_equal(plog_segment_count(l), 2);
    assert_int_equal(plog_flush(l), 0); /* ...written by the flush */
    int64_t max;
    assert_int_equal(count_snapshots(f->dir, &max), 1);
    assert_int_equal(max, 12);

    /* A clean close snapshots the end: after the reopen each producer's
     * last batch is a duplicate (a snapshot keeps only the last, as
     * Kafka's: an older retry is a gap then). */
    plog_close(l, true);
    assert_int_equal(count_snapshots(f->dir, &max), 2);
    assert_int_equal(max, 16);
    l = open_log(f->dir, &c);
    expect_append(l, 1, 0, 8, 4, 12, true);
    expect_append(l, 2, 0, 0, 4, 8, true);
    assert_int_equal(idem_append(l, 1, 0, 4, 4, NULL, NULL), KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    expect_append(l, 1, 0, 12, 1, 16, false);
    assert_int_equal(plog_log_end_offset(l), 17);
    expect_append(l, 3, 0, 0, 2, 17, false);

    /* Unclean: the state comes from the snapshot at 16 and the batches
     * after it. */
    plog_close(l, false);
    l = open_log(f->dir, &c);
    expect_append(l, 1, 0, 12, 1, 16, true);
    expect_append(l, 3, 0, 0, 2, 17, true);
    expect_append(l, 1, 0, 13, 1, 19, false);

    /* Truncation below the snapshot at 16: it goes, the one at 12 is
     * loaded; what was cut is no longer a duplicate. */
    assert_int_equal(plog_truncate_to(l, 14), 0);
    assert_int_equal(plog_log_end_offset(l), 12);
    assert_int_equal(count_snapshots(f->dir, &max), 1);
    assert_int_equal(max, 12);
    expect_append(l, 2, 0, 0, 4, 8, true);
    expect_append(l, 1, 0, 8, 4, 12, false);
    assert_int_equal(idem_append(l, 3, 0, 2, 1, NULL, NULL), 0); /* unknown again: any sequence */

    /* A follower fed the leader's batches deduplicates the same retries. */
    char fdir[600];
    snprintf(fdir, sizeof fdir, "%s/follower-0", f->root);
    struct plog *fl = open_log(fdir, &c);
    for (int64_t off = 0; off < plog_log_end_offset(l);) {
        struct plog_read_result r;
        assert_int_equal(plog_read(l, off, 1 << 20, true, -1, &r), 0);
        uint8_t *p = read_bytes(&r);
        assert_int_equal(plog_append_follower(fl, p, (size_t)r.len, NULL), 0);
        off = r.next_offset;
        free(p);
        sfile_unref(r.file);
    }
    assert_int_equal(plog_log_end_offset(fl), plog_log_end_offset(l));
    expect_append(fl, 1, 0, 8, 4, 12, true);
    expect_append(fl, 2, 0, 0, 4, 8, true);
    assert_int_equal(idem_append(fl, 1, 0, 20, 1, NULL, NULL), KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_int_equal(idem_append(fl, 2, 0, 4, 1, NULL, NULL), 0);

    /* Expiration forgets idle producers (their batches are from 1970):
     * any sequence is accepted afterwards. */
    assert_int_equal(plog_expire_producers(fl, 100000, 1000), 3);
    assert_int_equal(idem_append(fl, 1, 0, 77, 1, NULL, NULL), 0);
    plog_close(fl, false);
    plog_close(l, false);
}

/* ---- transactions (log/plog_txn.c) ---- */

static int txn_append(struct plog *l, int64_t pid, int16_t epoch, int32_t seq, int n, int64_t *base)
{
    struct buf b = BUF_INIT;
    buf_reset(&b);
    struct rb_batch_opts o = RB_BATCH_OPTS_INIT;
    o.producer_id = pid;
    o.producer_epoch = epoch;
    o.base_sequence = seq;
    o.transactional = true;
    struct rb_builder bb;
    rb_builder_begin(&bb, &b, 0, 1000, &o);
    for (int i = 0; i < n; i++)
        assert_int_equal(rb_builder_add(&bb, 1000 + i, KBYTES_NULL, (kbytes_t){(const uint8_t *)"t", 1}, NULL, 0), 0);
    assert_int_equal(rb_builder_finish(&bb, NULL), 0);
    struct plog_append_result r;
    int rc = plog_append(l, b.data, b.len, 3, -1, &r);
    buf_free(&b);
    if (base)
        *base = r.base_offset;
    return rc;
}

static int marker_append(struct plog *l, int64_t pid, int16_t epoch, bool commit, int32_t cepoch, int64_t *off)
{
    struct buf b = BUF_INIT;
    assert_int_equal(rb_build_txn_marker(&b, 0, 2000, pid, epoch, -1, commit ? RB_CONTROL_COMMIT : RB_CONTROL_ABORT,
                                         cepoch, NULL),
                     0);
    struct plog_append_result r;
    int rc = plog_append(l, b.data, b.len, 3, -1, &r);
    buf_free(&b);
    if (off)
        *off = r.base_offset;
    return rc;
}

static int64_t lso(struct plog *l) { return plog_last_stable_offset(l, plog_log_end_offset(l)); }

/* The aborted transactions of [0, INT64_MAX) as "pid:first-last/lso " */
static void aborted_str(struct plog *l, int64_t from, int64_t upper, char *out, size_t n)
{
    struct plog_aborted_txn *a;
    size_t k = plog_aborted_txns(l, from, upper, &a);
    out[0] = 0;
    for (size_t i = 0; i < k; i++) {
        size_t len = strlen(out);
        snprintf(out + len, n - len, "%" PRId64 ":%" PRId64 "-%" PRId64 "/%" PRId64 " ", a[i].producer_id,
                 a[i].first_offset, a[i].last_offset, a[i].last_stable_offset);
    }
    free(a);
}

static void expect_aborted(struct plog *l, int64_t from, int64_t upper, const char *want)
{
    char got[512];
    aborted_str(l, from, upper, got, sizeof got);
    assert_string_equal(got, want);
}

static int64_t txnindex_size(const char *dir, int64_t base)
{
    char p[700];
    snprintf(p, sizeof p, "%s/%020" PRId64 ".txnindex", dir, base);
    return file_size(p);
}

static void remove_snapshots(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len > 9 && strcmp(de->d_name + len - 9, ".snapshot") == 0) {
            char p[700];
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            assert_int_equal(unlink(p), 0);
        }
    }
    closedir(d);
}

static void test_transactions(void **state)
{
    struct fx *f = *state;
    struct plog_config c = cfg_with(1 << 20, 1);
    struct plog *l = open_log(f->dir, &c);
    int64_t off;

    /* 0..3 plain idempotent, 4..7 a transaction of 10, 8..9 one of 11 */
    expect_append(l, 1, 0, 0, 4, 0, false);
    assert_int_equal(lso(l), 4);
    assert_int_equal(txn_append(l, 10, 0, 0, 4, &off), 0);
    assert_int_equal(off, 4);
    assert_int_equal(lso(l), 4);
    assert_int_equal(plog_last_stable_offset(l, 2), 2); /* the HW first */
    assert_int_equal(txn_append(l, 11, 0, 0, 2, &off), 0);
    assert_int_equal(lso(l), 4);
    /* a plain batch of a producer inside its transaction */
    assert_int_equal(idem_append(l, 11, 0, 2, 1, NULL, NULL), KERR_INVALID_TXN_STATE);

    /* ABORT of 10 at 10: until the HW passes the marker, the LSO stays
     * at its first offset (Kafka's unreplicated transactions) */
    assert_int_equal(marker_append(l, 10, 0, false, 5, &off), 0);
    assert_int_equal(off, 10);
    assert_int_equal(plog_last_stable_offset(l, 10), 4);
    assert_int_equal(plog_last_stable_offset(l, 11), 8);
    expect_aborted(l, 0, INT64_MAX, "10:4-10/8 ");
    expect_aborted(l, 10, 11, "10:4-10/8 ");
    expect_aborted(l, 11, INT64_MAX, "");
    expect_aborted(l, 0, 4, "");
    expect_aborted(l, 0, 5, "10:4-10/8 ");
    assert_int_equal(txnindex_size(f->dir, 0), 34);

    /* stale markers */
    assert_int_equal(marker_append(l, 10, 0, false, 4, NULL), KERR_TRANSACTION_COORDINATOR_FENCED);
    assert_int_equal(txn_append(l, 10, 1, 0, 1, &off), 0); /* epoch 1, at 11 */
    assert_int_equal(marker_append(l, 10, 0, true, 5, NULL), KERR_INVALID_PRODUCER_EPOCH);
    assert_int_equal(plog_log_end_offset(l), 12);
    /* COMMIT of 11 at 12 and ABORT of 10 at 13: 11's was open first */
    assert_int_equal(marker_append(l, 11, 0, true, 5, &off), 0);
    assert_int_equal(off, 12);
    assert_int_equal(lso(l), 11);
    assert_int_equal(marker_append(l, 10, 1, false, 5, &off), 0);
    assert_int_equal(lso(l), 14);
    /* 11 opens again at 14 */
    assert_int_equal(txn_append(l, 11, 0, 2, 2, &off), 0);
    assert_int_equal(off, 14);
    assert_int_equal(lso(l), 14);
    expect_aborted(l, 0, INT64_MAX, "10:4-10/8 10:11-13/14 ");
    assert_int_equal(txnindex_size(f->dir, 0), 68);

    /* reopen clean, unclean, and unclean without snapshots (full replay,
     * the .txnindex rebuilt from the markers) */
    for (int round = 0; round < 3; round++) {
        plog_close(l, round == 0);
        if (round == 2) {
            remove_snapshots(f->dir);
            char p[700];
            snprintf(p, sizeof p, "%s/%020d.txnindex", f->dir, 0);
            assert_int_equal(unlink(p), 0);
        }
        l = open_log(f->dir, &c);
        assert_int_equal(lso(l), 14);
        expect_aborted(l, 0, INT64_MAX, "10:4-10/8 10:11-13/14 ");
        assert_int_equal(txnindex_size(f->dir, 0), 68);
        assert_int_equal(idem_append(l, 11, 0, 4, 1, NULL, NULL), KERR_INVALID_TXN_STATE);
    }

    /* A torn entry at the end of the file (a crash during an append) is
     * cut by the next open, and later entries line up. */
    plog_close(l, true);
    {
        char p[700];
        snprintf(p, sizeof p, "%s/%020d.txnindex", f->dir, 0);
        int fd = open(p, O_WRONLY | O_APPEND);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "\0\0\0\0\0", 5), 5);
        close(fd);
    }
    l = open_log(f->dir, &c);
    expect_aborted(l, 0, INT64_MAX, "10:4-10/8 10:11-13/14 ");
    assert_int_equal(txnindex_size(f->dir, 0), 68);

    /* A follower fed the leader's batches gets the same state and file. */
    char fdir[600];
    snprintf(fdir, sizeof fdir, "%s/follower-0", f->root);
    struct plog *fl = open_log(fdir, &c);
    for (int64_t o = 0; o < plog_log_end_offset(l);) {
        struct plog_read_result r;
        assert_int_equal(plog_read(l, o, 1 << 20, true, -1, &r), 0);
        uint8_t *p = read_bytes(&r);
        assert_int_equal(plog_append_follower(fl, p, (size_t)r.len, NULL), 0);
        o = r.next_offset;
        free(p);
        sfile_unref(r.file);
    }
    assert_int_equal(lso(fl), 14);
    expect_aborted(fl, 0, INT64_MAX, "10:4-10/8 10:11-13/14 ");
    assert_int_equal(txnindex_size(fdir, 0), 68);
    plog_close(fl, false);

    /* Truncation below the second abort: its entry goes, 10's second
     * transaction is open again; below the first: the file goes. */
    assert_int_equal(plog_truncate_to(l, 13), 0);
    expect_aborted(l, 0, INT64_MAX, "10:4-10/8 ");
    assert_int_equal(txnindex_size(f->dir, 0), 34);
    assert_int_equal(lso(l), 11);
    assert_int_equal(plog_truncate_to(l, 10), 0);
    expect_aborted(l, 0, INT64_MAX, "");
    assert_int_equal(txnindex_size(f->dir, 0), -1);
    assert_int_equal(lso(l), 4);
    plog_close(l, true);
    l = open_log(f->dir, &c);
    assert_int_equal(lso(l), 4);
    expect_aborted(l, 0, INT64_MAX, "");
    plog_close(l, false);
}

/* The .txnindex follows its segment: retention takes it along. */
static void test_txnindex_retention(void **state)
{
    struct fx *f = *state;
    struct plog_config c = cfg_with(200, 1);
    c.file_delete_delay_ms = 0;
    struct plog *l = open_log(f->dir, &c);
    int64_t off;
    assert_int_equal(txn_append(l, 10, 0, 0, 2, &off), 0);
    assert_int_equal(marker_append(l, 10, 0, false, 0, &off), 0);
    int64_t seg0 = 0;
    assert_int_equal(txnindex_size(f->dir, seg0), 34);
    /* fill until the marker's segment is not the active one */
    for (int i = 0; plog_segment_count(l) < 3; i++)
        expect_append(l, 1, 0, i * 2, 2, plog_log_end_offset(l), false);
    assert_int_equal(plog_flush(l), 0);
    assert_int_equal(plog_delete_records(l, plog_log_end_offset(l) - 1, NULL), 0);
    int deleted = 0;
    assert_int_equal(plog_retention(l, clock_wall_ms(), &deleted), 0);
    assert_true(deleted >= 1);
    plog_purge_deleted(l, INT64_MAX, true);
    assert_int_equal(txnindex_size(f->dir, seg0), -1);
    expect_aborted(l, 0, INT64_MAX, "");
    plog_close(l, true);
}

/* A keyed batch of one record (transactional when pid >= 0). */
static void keyed_append_e(struct plog *l, int64_t pid, int16_t epoch, int32_t seq, const char *key,
                           const char *value)
{
    struct buf b = BUF_INIT;
    struct rb_batch_opts o = RB_BATCH_OPTS_INIT;
    if (pid >= 0) {
        o.producer_id = pid;
        o.producer_epoch = epoch;
        o.base_sequence = seq;
        o.transactional = true;
    }
    struct rb_builder bb;
    rb_builder_begin(&bb, &b, 0, 1000, &o);
    assert_int_equal(rb_builder_add(&bb, 1000, (kbytes_t){(const uint8_t *)key, (int32_t)strlen(key)},
                                    (kbytes_t){(const uint8_t *)value, (int32_t)strlen(value)}, NULL, 0),
                     0);
    assert_int_equal(rb_builder_finish(&bb, NULL), 0);
    assert_int_equal(plog_append(l, b.data, b.len, 3, -1, NULL), 0);
    buf_free(&b);
}

static void keyed_append(struct plog *l, int64_t pid, int32_t seq, const char *key, const char *value)
{
    keyed_append_e(l, pid, 0, seq, key, value);
}

/* The values of the records of [0, end), "key=value@offset " (markers as
 * "M@offset "). */
static void dump_log(struct plog *l, char *out, size_t n)
{
    out[0] = 0;
    for (int64_t o = 0; o < plog_log_end_offset(l);) {
        struct plog_read_result r;
        assert_int_equal(plog_read(l, o, 1 << 20, true, -1, &r), 0);
        if (r.len == 0)
            break;
        uint8_t *p = read_bytes(&r);
        for (size_t pos = 0; pos < (size_t)r.len;) {
            struct rb_header h;
            assert_int_equal(rb_parse_header(p + pos, (size_t)r.len - pos, &h), 0);
            size_t len = strlen(out);
            if (rb_is_control(&h)) {
                snprintf(out + len, n - len, "M@%" PRId64 " ", h.base_offset);
            } else {
                struct rb_record_iter it;
                assert_int_equal(rb_record_iter_init_batch(&it, p + pos, (size_t)rb_batch_size(&h)), 0);
                struct rb_record rec;
                while (rb_record_next(&it, &rec) == 1) {
                    len = strlen(out);
                    snprintf(out + len, n - len, "%.*s=%.*s@%" PRId64 " ", (int)rec.key.len, rec.key.p,
                             (int)rec.value.len, rec.value.p, h.base_offset + rec.offset_delta);
                }
            }
            pos += (size_t)rb_batch_size(&h);
        }
        o = r.next_offset;
        free(p);
        sfile_unref(r.file);
    }
}

/* Compaction and transactions (Kafka's cleaner): aborted records
 * supersede nothing and are removed, markers stay (each transaction has
 * a batch left: a live record, or its producer's last batch, emptied),
 * the cleaned segment keeps the .txnindex entries of those it replaces,
 * nothing at or past the LSO is cleaned. */
static void test_cleaner_transactions(void **state)
{
    struct fx *f = *state;
    struct plog_config c = cfg_with(150, 1);
    c.cleanup_compact = true;
    c.cleanup_delete = false;
    c.min_cleanable_dirty_ratio = 0.01;
    struct plog *l = open_log(f->dir, &c);
    keyed_append(l, -1, 0, "a", "1");  /* 0 */
    keyed_append(l, 10, 0, "a", "x"); /* 1, aborted */
    assert_int_equal(marker_append(l, 10, 0, false, 0, NULL), 0); /* 2 */
    keyed_append(l, -1, 0, "b", "1");  /* 3 */
    keyed_append(l, 11, 0, "b", "2"); /* 4, committed */
    assert_int_equal(marker_append(l, 11, 0, true, 0, NULL), 0); /* 5 */
    keyed_append(l, 12, 0, "a", "y"); /* 6, open */
    keyed_append(l, -1, 0, "c", "1");  /* 7 */
    keyed_append(l, -1, 0, "c", "2");  /* 8 */
    assert_true(plog_segment_count(l) >= 3);
    expect_aborted(l, 0, INT64_MAX, "10:1-2/3 ");
    struct plog_clean_stats st;
    assert_int_equal(plog_clean(l, clock_wall_ms(), 1 << 20, NULL, &st), 0);
    assert_true(st.end_offset <= 6); /* the LSO */
    char got[1024];
    dump_log(l, got, sizeof got);
    /* a=1 stays (the aborted a=x shadows nothing and is gone), b=1 is
     * superseded by the committed b=2, the markers stay, nothing from 6 on
     * is cleaned */
    assert_string_equal(got, "a=1@0 M@2 b=2@4 M@5 a=y@6 c=1@7 c=2@8 ");
    expect_aborted(l, 0, INT64_MAX, "10:1-2/3 ");
    /* segments of two batches are cleaned one to one: the marker's is
     * the one at 2, whose cleaned replacement has the entry */
    assert_int_equal(txnindex_size(f->dir, 2), 34);
    plog_close(l, true);
    l = open_log(f->dir, &c);
    expect_aborted(l, 0, INT64_MAX, "10:1-2/3 ");
    assert_int_equal(lso(l), 6);
    plog_close(l, false);
}

/* What a read_committed consumer of [0, end) gets: the records of the
 * batches the log returns, less those the AbortedTransactions name
 * (Kafka's consumer skips a producer's batches from an aborted
 * transaction's first offset to its marker), "key=value@offset ". */
static void committed_view(struct plog *l, char *out, size_t n)
{
    out[0] = 0;
    struct plog_aborted_txn *ab;
    size_t nab = plog_aborted_txns(l, 0, INT64_MAX, &ab);
    for (int64_t o = 0; o < plog_log_end_offset(l);) {
        struct plog_read_result r;
        assert_int_equal(plog_read(l, o, 1 << 20, true, -1, &r), 0);
        if (r.len == 0)
            break;
        uint8_t *p = read_bytes(&r);
        for (size_t pos = 0; pos < (size_t)r.len;) {
            struct rb_header h;
            assert_int_equal(rb_parse_header(p + pos, (size_t)r.len - pos, &h), 0);
            bool skip = rb_is_control(&h);
            for (size_t i = 0; i < nab && !skip && rb_is_transactional(&h); i++)
                skip = ab[i].producer_id == h.producer_id && ab[i].first_offset <= h.base_offset &&
                       h.base_offset <= ab[i].last_offset;
            if (!skip) {
                struct rb_record_iter it;
                assert_int_equal(rb_record_iter_init_batch(&it, p + pos, (size_t)rb_batch_size(&h)), 0);
                struct rb_record rec;
                while (rb_record_next(&it, &rec) == 1) {
                    size_t len = strlen(out);
                    snprintf(out + len, n - len, "%.*s=%.*s@%" PRId64 " ", (int)rec.key.len, rec.key.p,
                             (int)rec.value.len, rec.value.p, h.base_offset + rec.offset_delta);
                }
            }
            pos += (size_t)rb_batch_size(&h);
        }
        o = r.next_offset;
        free(p);
        sfile_unref(r.file);
    }
    free(ab);
}

/* The header of the batch holding offset (it must be there); a marker
 * with its record must still be one, its record's timestamp (2000)
 * kept. */
static struct rb_header batch_at(struct plog *l, int64_t offset)
{
    struct plog_read_result r;
    assert_int_equal(plog_read(l, offset, 1 << 20, true, -1, &r), 0);
    assert_true(r.len >= RB_HEADER_SIZE);
    uint8_t *p = read_bytes(&r);
    struct rb_header h;
    assert_int_equal(rb_parse_header(p, (size_t)r.len, &h), 0);
    assert_true(h.base_offset <= offset && offset <= rb_last_offset(&h));
    assert_true(rb_crc_ok(p, (size_t)rb_batch_size(&h)));
    if (rb_is_control(&h) && h.records_count > 0) {
        struct rb_record_iter it;
        assert_int_equal(rb_record_iter_init_batch(&it, p, (size_t)rb_batch_size(&h)), 0);
        struct rb_record rec;
        assert_int_equal(rb_record_next(&it, &rec), 1);
        int16_t type;
        int32_t cepoch;
        assert_int_equal(rb_parse_control_record(&rec, &type, &cepoch), 0);
        assert_int_equal(h.base_timestamp + rec.timestamp_delta, 2000);
    }
    free(p);
    sfile_unref(r.file);
    return h;
}

static bool horizon_at(struct plog *l, int64_t offset)
{
    struct rb_header h = batch_at(l, offset);
    return rb_has_delete_horizon(&h);
}

static int count_txnindex_files(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        n += len > 9 && strcmp(de->d_name + len - 9, ".txnindex") == 0;
    }
    closedir(d);
    return n;
}

static void filler(struct plog *l, int n)
{
    for (int i = 0; i < n; i++) {
        char k[16];
        snprintf(k, sizeof k, "f%d", i);
        keyed_append(l, -1, 0, k, "0");
    }
}

/* Kafka's cleaner removes the markers of transactions without data left
 * (KIP-534): the pass that removes the data keeps the marker (and an
 * ABORT's .txnindex entry); the next one stamps the marker's delete
 * horizon (now + delete.retention.ms in its base timestamp, the
 * delete-horizon attribute) and drops the .txnindex entry; a pass after
 * the horizon removes the marker. */
static void test_cleaner_removes_empty_txn_markers(void **state)
{
    struct fx *f = *state;
    struct plog_config c = cfg_with(150, 1);
    c.cleanup_compact = true;
    c.cleanup_delete = false;
    c.delete_retention_ms = 1000;
    c.file_delete_delay_ms = 0;
    struct plog *l = open_log(f->dir, &c);
    keyed_append(l, -1, 0, "a", "1");                              /* 0 */
    keyed_append(l, 10, 0, "a", "x");                              /* 1, aborted */
    assert_int_equal(marker_append(l, 10, 0, false, 0, NULL), 0); /* 2 */
    keyed_append(l, 11, 0, "k", "1");                              /* 3, committed */
    assert_int_equal(marker_append(l, 11, 0, true, 0, NULL), 0);  /* 4 */
    /* later transactions: neither producer's last batch is above */
    keyed_append(l, 10, 1, "b", "1");                              /* 5 */
    assert_int_equal(marker_append(l, 10, 0, true, 0, NULL), 0);  /* 6 */
    keyed_append(l, 11, 1, "m", "1");                              /* 7 */
    assert_int_equal(marker_append(l, 11, 0, true, 0, NULL), 0);  /* 8 */
    keyed_append(l, -1, 0, "k", "2");                              /* 9: k=1 superseded */
    filler(l, 4);                                                  /* 10-13 */
    assert_true(plog_segment_count(l) >= 5);
    expect_aborted(l, 0, INT64_MAX, "10:1-2/3 ");
    const char *rest = "b=1@5 M@6 m=1@7 M@8 k=2@9 f0=0@10 f1=0@11 f2=0@12 f3=0@13 ";
    const char *view = "a=1@0 b=1@5 m=1@7 k=2@9 f0=0@10 f1=0@11 f2=0@12 f3=0@13 ";
    char want[512], got[1024];
    int64_t t = clock_wall_ms();

    /* pass 1: the data goes, the markers and the entry stay as they were */
    struct plog_clean_stats st;
    assert_int_equal(plog_clean(l, t, 1 << 20, NULL, &st), 0);
    assert_true(st.end_offset >= 10);
    dump_log(l, got, sizeof got);
    snprintf(want, sizeof want, "a=1@0 M@2 M@4 %s", rest);
    assert_string_equal(got, want);
    expect_aborted(l, 0, INT64_MAX, "10:1-2/3 ");
    assert_false(horizon_at(l, 2));
    assert_false(horizon_at(l, 4));
    committed_view(l, got, sizeof got);
    assert_string_equal(got, view);
    /* nothing dirty, but the markers can start their horizon: due now */
    struct plog_clean_state cs;
    assert_true(plog_cleanable(l, t, &cs));
    assert_true(cs.tombstones_due);

    /* pass 2: both markers get a delete horizon; the entry goes */
    assert_int_equal(plog_clean(l, t, 1 << 20, NULL, &st), 0);
    dump_log(l, got, sizeof got);
    assert_string_equal(got, want);
    struct rb_header h = batch_at(l, 2);
    assert_true(rb_is_control(&h) && rb_has_delete_horizon(&h));
    assert_int_equal(h.base_timestamp, t + 1000);
    assert_int_equal(h.producer_id, 10);
    h = batch_at(l, 4);
    assert_true(rb_is_control(&h) && rb_has_delete_horizon(&h));
    assert_int_equal(h.base_timestamp, t + 1000);
    assert_int_equal(h.producer_id, 11);
    /* the markers of transactions with data are left alone */
    assert_false(horizon_at(l, 6));
    assert_false(horizon_at(l, 8));
    expect_aborted(l, 0, INT64_MAX, "");
    plog_purge_deleted(l, INT64_MAX, true);
    assert_int_equal(count_txnindex_files(f->dir), 0);
    committed_view(l, got, sizeof got);
    assert_string_equal(got, view);
    assert_false(plog_cleanable(l, t + 999, &cs));
    assert_true(plog_cleanable(l, t + 1000, &cs));
    /* a pass before the horizon keeps them */
    assert_int_equal(plog_clean(l, t + 999, 1 << 20, NULL, &st), 0);
    dump_log(l, got, sizeof got);
    assert_string_equal(got, want);

    /* a pass after the horizon removes them */
    assert_int_equal(plog_clean(l, t + 1000, 1 << 20, NULL, &st), 0);
    dump_log(l, got, sizeof got);
    snprintf(want, sizeof want, "a=1@0 %s", rest);
    assert_string_equal(got, want);
    committed_view(l, got, sizeof got);
    assert_string_equal(got, view);
    assert_false(plog_cleanable(l, t + 100000, &cs));
    /* a reopen without snapshots (the producer state from the cleaned
     * log alone) finds the same, nothing open */
    plog_close(l, false);
    remove_snapshots(f->dir);
    l = open_log(f->dir, &c);
    dump_log(l, got, sizeof got);
    assert_string_equal(got, want);
    expect_aborted(l, 0, INT64_MAX, "");
    assert_int_equal(lso(l), plog_log_end_offset(l));
    plog_close(l, false);
}

/* Markers stay while their transaction has a batch left: a committed
 * one with a live record; an aborted one whose data batch holds its
 * producer's last sequence (kept empty, Kafka's RETAIN_EMPTY), with its
 * .txnindex entry, so read_committed still skips that batch. A marker
 * that is its producer's last entry (its epoch bumped, as transactions
 * V2 do) gets its horizon once its data is gone, and then stays without
 * its record (Kafka's isBatchLastRecordOfProducer). */
static void test_cleaner_keeps_markers_of_live_txns(void **state)
{
    struct fx *f = *state;
    struct plog_config c = cfg_with(150, 1);
    c.cleanup_compact = true;
    c.cleanup_delete = false;
    c.delete_retention_ms = 1000;
    c.file_delete_delay_ms = 0;
    struct plog *l = open_log(f->dir, &c);
    keyed_append(l, 20, 0, "a", "1");                              /* 0, committed */
    assert_int_equal(marker_append(l, 20, 0, true, 0, NULL), 0);  /* 1 */
    keyed_append(l, 21, 0, "b", "x");                              /* 2, aborted, 21's last */
    assert_int_equal(marker_append(l, 21, 0, false, 0, NULL), 0); /* 3 */
    keyed_append_e(l, 22, 0, 0, "c", "y");                         /* 4, aborted */
    assert_int_equal(marker_append(l, 22, 1, false, 0, NULL), 0); /* 5, epoch 1 */
    filler(l, 4);                                                  /* 6-9 */
    assert_true(plog_segment_count(l) >= 4);
    const char *all = "a=1@0 M@1 M@3 M@5 f0=0@6 f1=0@7 f2=0@8 f3=0@9 ";
    const char *view = "a=1@0 f0=0@6 f1=0@7 f2=0@8 f3=0@9 ";
    char got[1024];
    committed_view(l, got, sizeof got);
    assert_string_equal(got, view);
    int64_t t = clock_wall_ms();

    /* pass 1: 21's batch is emptied (its last), 22's goes */
    struct plog_clean_stats st;
    assert_int_equal(plog_clean(l, t, 1 << 20, NULL, &st), 0);
    assert_true(st.end_offset >= 6);
    dump_log(l, got, sizeof got);
    assert_string_equal(got, all);
    struct rb_header h = batch_at(l, 2);
    assert_false(rb_is_control(&h));
    assert_int_equal(h.records_count, 0);
    assert_int_equal(h.producer_id, 21);
    expect_aborted(l, 0, INT64_MAX, "21:2-3/4 22:4-5/6 ");
    committed_view(l, got, sizeof got);
    assert_string_equal(got, view);

    /* pass 2: 22's marker gets its horizon and loses its entry; the
     * others stay as they are */
    assert_int_equal(plog_clean(l, t, 1 << 20, NULL, &st), 0);
    dump_log(l, got, sizeof got);
    assert_string_equal(got, all);
    assert_false(horizon_at(l, 1));
    assert_false(horizon_at(l, 3));
    assert_true(horizon_at(l, 5));
    expect_aborted(l, 0, INT64_MAX, "21:2-3/4 ");
    committed_view(l, got, sizeof got);
    assert_string_equal(got, view);

    /* pass 3, after the horizon: 22's marker stays, empty, no horizon,
     * its timestamps the batch's max timestamp (Kafka's empty header) */
    assert_int_equal(plog_clean(l, t + 1000, 1 << 20, NULL, &st), 0);
    dump_log(l, got, sizeof got);
    assert_string_equal(got, all);
    h = batch_at(l, 5);
    assert_true(rb_is_control(&h));
    assert_int_equal(h.records_count, 0);
    assert_int_equal(h.producer_id, 22);
    assert_int_equal(h.producer_epoch, 1);
    assert_false(rb_has_delete_horizon(&h));
    assert_int_equal(h.base_timestamp, h.max_timestamp);
    assert_false(horizon_at(l, 1));
    assert_false(horizon_at(l, 3));
    expect_aborted(l, 0, INT64_MAX, "21:2-3/4 ");
    committed_view(l, got, sizeof got);
    assert_string_equal(got, view);
    struct plog_clean_state cs;
    assert_false(plog_cleanable(l, t + 100000, &cs));
    /* the entry survives a reopen (its file follows the cleaned segment) */
    plog_close(l, true);
    l = open_log(f->dir, &c);
    expect_aborted(l, 0, INT64_MAX, "21:2-3/4 ");
    dump_log(l, got, sizeof got);
    assert_string_equal(got, all);
    plog_close(l, false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_append_read_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_producer_state, setup, teardown),
        cmocka_unit_test_setup_teardown(test_producer_snapshots_do_not_pile_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transactions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_txnindex_retention, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cleaner_transactions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cleaner_removes_empty_txn_markers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cleaner_keeps_markers_of_live_txns, setup, teardown),
        cmocka_unit_test_setup_teardown(test_multi_batch_append, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_out_of_range_and_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_segment_roll, setup, teardown),
        cmocka_unit_test_setup_teardown(test_roll_trims_mapped_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_roll_under_maint_lock_trims_at_unlock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_roll_leaves_trim_to_flush, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reopen_clean, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_tail_truncate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_tail_corrupt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_earlier_segment, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unclean_open_keeps_agreeing_indexes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timestamps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timestamps_across_segments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_error_is_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partition_metadata, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deferred_creation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fsync_each_append, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
