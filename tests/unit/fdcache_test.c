/* The fd cache (util/fdcache.h) and the log on top of it: eviction in
 * LRU order within the capacity, pinned files never closed, EMFILE shed
 * and retried, a failure left over counted per thread; segments and
 * logs with far more files than the capacity keep their data and
 * indexes across eviction, close and reopen; EMFILE injected into every
 * open never takes a log or a log dir offline. The same for index
 * mappings (log/index.h): at most the budget mapped, ENOMEM from mmap
 * shed and retried and never a storage error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "log/fsutil.h"
#include "log/index.h"
#include "log/logmgr.h"
#include "log/plog.h"
#include "log/segment.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "util/buf.h"
#include "util/fdcache.h"
#include "util/sfile.h"
#include "util/slog.h"

static char root[64];

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/fdcache_test.XXXXXX");
    if (!mkdtemp(root))
        return -1;
    slog_set_level((enum slog_level)(SLOG_ERROR + 1));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fdc_set_open_hook(NULL);
    fdc_shed(SIZE_MAX);
    fdc_init(0);
    idxf_set_mmap_hook(NULL);
    idxf_set_map_budget(0);
    fs_remove_tree(root);
    return 0;
}

static char *path_n(int i)
{
    char *p = malloc(128);
    snprintf(p, 128, "%s/f%03d", root, i);
    return p;
}

/* A file holding its own name. */
static struct fdc_file *make_file(int i)
{
    char *p = path_n(i);
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, p, strlen(p)), (ssize_t)strlen(p));
    close(fd);
    struct fdc_file *f = fdc_file_new(p, O_RDWR, -1);
    free(p);
    return f;
}

static void check_content(struct sfile *s, int i)
{
    char *p = path_n(i);
    char buf[128] = {0};
    assert_int_equal(pread(s->fd, buf, sizeof buf - 1, 0), (ssize_t)strlen(p));
    assert_string_equal(buf, p);
    free(p);
}

static void touch(struct fdc_file *f, int i)
{
    int e = 0;
    struct sfile *s = fdc_get(f, &e);
    assert_non_null(s);
    check_content(s, i);
    sfile_unref(s);
}

static void test_lru_eviction(void **state)
{
    (void)state;
    fdc_init(4);
    struct fdc_file *f[10];
    for (int i = 0; i < 10; i++) {
        f[i] = make_file(i);
        assert_false(fdc_file_is_open(f[i])); /* nothing opened up front */
    }
    struct fdc_stats st0, st;
    fdc_get_stats(&st0);
    for (int i = 0; i < 10; i++)
        touch(f[i], i);
    fdc_get_stats(&st);
    assert_int_equal(st.open, 4);
    assert_int_equal(st.opens - st0.opens, 10);
    assert_int_equal(st.evictions - st0.evictions, 6);
    for (int i = 0; i < 10; i++)
        assert_int_equal(fdc_file_is_open(f[i]), i >= 6);
    /* A hit makes 6 the most recent: the next open evicts 7, not 6. */
    touch(f[6], 6);
    touch(f[0], 0);
    assert_true(fdc_file_is_open(f[6]));
    assert_false(fdc_file_is_open(f[7]));
    assert_true(fdc_file_is_open(f[0]));
    fdc_get_stats(&st);
    assert_int_equal(st.open, 4);
    for (int i = 0; i < 10; i++)
        fdc_file_free(f[i]);
    fdc_get_stats(&st);
    assert_int_equal(st.open, 0);
}

static void test_pinned_never_closed(void **state)
{
    (void)state;
    fdc_init(2);
    struct fdc_file *f[5];
    struct sfile *pin[3];
    for (int i = 0; i < 5; i++)
        f[i] = make_file(i);
    int e;
    for (int i = 0; i < 3; i++) {
        pin[i] = fdc_get(f[i], &e);
        assert_non_null(pin[i]);
    }
    /* Over the capacity: pinned files cannot go, so the cache holds 3. */
    struct fdc_stats st;
    fdc_get_stats(&st);
    assert_int_equal(st.open, 3);
    assert_int_equal(st.pinned, 3);
    assert_int_equal(fdc_shed(SIZE_MAX), 0);
    touch(f[3], 3);
    for (int i = 0; i < 3; i++) {
        assert_true(fdc_file_is_open(f[i]));
        check_content(pin[i], i);
    }
    /* The same fd for a second reference while pinned: one fd per file. */
    struct sfile *again = fdc_get(f[0], &e);
    assert_ptr_equal(again, pin[0]);
    sfile_unref(again);
    /* A pinned file freed by its owner keeps its fd for the holder. */
    fdc_file_free(f[1]);
    check_content(pin[1], 1);
    sfile_unref(pin[1]);
    sfile_unref(pin[0]);
    sfile_unref(pin[2]);
    touch(f[4], 4);
    fdc_get_stats(&st);
    assert_int_equal(st.open, 2);
    assert_int_equal(st.pinned, 0);
    for (int i = 0; i < 5; i++)
        if (i != 1)
            fdc_file_free(f[i]);
}

/* EMFILE for the next `emfile_left` opens, then open(2). */
static int emfile_left;
static int emfile_open(const char *path, int flags, mode_t mode)
{
    if (emfile_left != 0) {
        if (emfile_left > 0)
            emfile_left--;
        errno = EMFILE;
        return -1;
    }
    return open(path, flags, mode);
}

static void test_emfile_shed_and_retry(void **state)
{
    (void)state;
    fdc_init(8);
    struct fdc_file *f[8];
    for (int i = 0; i < 8; i++) {
        f[i] = make_file(i);
        touch(f[i], i);
    }
    fdc_set_open_hook(emfile_open);
    /* Two EMFILEs: shed, retry, success; not a failure for the caller. */
    struct fdc_file *g = make_file(8);
    uint64_t fail0 = fdc_resource_failures();
    struct fdc_stats st0, st;
    fdc_get_stats(&st0);
    emfile_left = 2;
    touch(g, 8);
    fdc_get_stats(&st);
    assert_int_equal(st.resource_errors - st0.resource_errors, 2);
    assert_true(st.evictions > st0.evictions);
    assert_int_equal(fdc_resource_failures(), fail0);
    /* Always EMFILE: the errno comes back and the thread counter moves. */
    fdc_shed(SIZE_MAX);
    emfile_left = -1;
    int e = 0;
    assert_null(fdc_get(g, &e));
    assert_int_equal(e, EMFILE);
    assert_true(fdc_is_resource(e));
    assert_int_equal(fdc_resource_failures(), fail0 + 1);
    assert_int_equal(fdc_open(root, O_RDONLY | O_DIRECTORY, 0), -1);
    assert_int_equal(errno, EMFILE);
    assert_int_equal(fdc_resource_failures(), fail0 + 2);
    emfile_left = 0;
    fdc_set_open_hook(NULL);
    touch(g, 8);
    fdc_file_free(g);
    for (int i = 0; i < 8; i++)
        fdc_file_free(f[i]);
}

/* A large capacity is split into shards (2 of 256 for 512): files
 * spread over them, a full shard evicts its own least recent file, and
 * an EMFILE sheds the files of the other shards too. */
static void test_sharded_capacity(void **state)
{
    (void)state;
    fdc_init(512);
    enum { N = 600 };
    struct fdc_file **f = calloc(N, sizeof *f);
    assert_non_null(f);
    for (int i = 0; i < N; i++) {
        f[i] = make_file(i % 10);
        touch(f[i], i % 10);
    }
    struct fdc_stats st;
    fdc_get_stats(&st);
    assert_int_equal(st.open, 512);
    assert_int_equal(st.pinned, 0);
    /* round-robin over 2 shards of 256: the first 88 went, in order */
    for (int i = 0; i < N; i++)
        assert_int_equal(fdc_file_is_open(f[i]), i >= N - 512);
    /* one EMFILE: shedding reaches every shard */
    fdc_set_open_hook(emfile_open);
    struct fdc_file *g = make_file(3);
    emfile_left = 1;
    fdc_file_free(f[N - 1]); /* room in g's shard or not: the shed is what counts */
    struct fdc_stats st0;
    fdc_get_stats(&st0);
    touch(g, 3);
    fdc_get_stats(&st);
    assert_int_equal(st.resource_errors - st0.resource_errors, 1);
    assert_true(st.evictions - st0.evictions >= 32);
    fdc_set_open_hook(NULL);
    fdc_file_free(g);
    for (int i = 0; i < N - 1; i++)
        fdc_file_free(f[i]);
    free(f);
    fdc_get_stats(&st);
    assert_int_equal(st.open, 0);
}

static void test_rename_then_reopen(void **state)
{
    (void)state;
    fdc_init(4);
    struct fdc_file *f = make_file(0);
    int e;
    struct sfile *pin = fdc_get(f, &e);
    char *old = path_n(0);
    char nw[160];
    snprintf(nw, sizeof nw, "%s.renamed", old);
    assert_int_equal(rename(old, nw), 0);
    fdc_file_renamed(f, nw);
    sfile_unref(pin);
    fdc_shed(SIZE_MAX);
    assert_false(fdc_file_is_open(f));
    touch(f, 0); /* opens the new name; the content names the old one */
    char got[160];
    fdc_file_path(f, got, sizeof got);
    assert_string_equal(got, nw);
    free(old);
    fdc_file_free(f);
}

/* ---- segments and logs ---- */

static size_t add_batch(struct buf *out, int key0, int n, int64_t ts)
{
    struct rb_builder b;
    rb_builder_begin(&b, out, 0, ts, NULL);
    for (int i = 0; i < n; i++) {
        char k[32], v[64];
        int kl = snprintf(k, sizeof k, "k%06d", key0 + i);
        int vl = snprintf(v, sizeof v, "v%06d-value", key0 + i);
        assert_int_equal(rb_builder_add(&b, ts + i, (kbytes_t){(const uint8_t *)k, kl},
                                        (kbytes_t){(const uint8_t *)v, vl}, NULL, 0),
                         0);
    }
    size_t bl;
    assert_int_equal(rb_builder_finish(&b, &bl), 0);
    return bl;
}

static int append_batch(struct plog *l, int key0, int n, int64_t ts)
{
    struct buf b = BUF_INIT;
    add_batch(&b, key0, n, ts);
    struct plog_append_result res;
    int rc = plog_append(l, b.data, b.len, 0, -1, &res);
    buf_free(&b);
    return rc;
}

/* Reads every record from offset 0: checks that record i has key k<i>. */
static int64_t read_all(struct plog *l)
{
    int64_t off = 0, n = 0, leo = plog_log_end_offset(l);
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
                char want[32];
                int64_t o = h.base_offset + r.offset_delta;
                snprintf(want, sizeof want, "k%06d", (int)o);
                assert_int_equal(r.key.len, (int32_t)strlen(want));
                assert_memory_equal(r.key.p, want, strlen(want));
                assert_int_equal(o, n);
                n++;
            }
            at += size;
        }
        off = rr.next_offset;
        free(p);
        sfile_unref(rr.file);
    }
    return n;
}

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
        /* Only ours: stdout may be a file named *.log too. */
        if (strncmp(target, root, strlen(root)) == 0 && (size_t)len >= sl && strcmp(target + len - sl, suffix) == 0)
            n++;
    }
    return n;
}

static struct plog_config small_segments(void)
{
    struct plog_config c = PLOG_CONFIG_INIT;
    c.segment_bytes = 1000;
    c.index_interval_bytes = 100;
    c.retention_ms = -1;
    return c;
}

/* A closed segment whose fd the cache dropped reads back the same and
 * reopens with its index files taken as they are (no rebuild). */
static void test_segment_reopen_keeps_indexes(void **state)
{
    (void)state;
    fdc_init(2);
    char dir[128];
    snprintf(dir, sizeof dir, "%s/seg-0", root);
    assert_int_equal(fs_mkdirs(dir, NULL), 0);
    struct segment_opts o = {100, 1 << 20, 0, false};
    struct segment *s;
    assert_int_equal(segment_create(dir, 0, &o, "", true, &s), 0);
    int64_t pos = 0;
    for (int i = 0; i < 20; i++) {
        struct buf b = BUF_INIT;
        add_batch(&b, i * 3, 3, 1000 + i * 10);
        rb_set_base_offset(b.data, i * 3);
        bool cut_ok;
        assert_int_equal(segment_reserve_index(s, 1), 0);
        assert_int_equal(segment_write(s, b.data, b.len, &cut_ok), 0);
        struct rb_header h;
        assert_int_equal(rb_parse_header(b.data, b.len, &h), 0);
        segment_note_batch(s, &h, pos);
        pos += (int64_t)b.len;
        buf_free(&b);
    }
    assert_int_equal(segment_seal(s), 0);
    assert_int_equal(segment_sync(s), 0);
    size_t entries = s->oidx.f.n, tentries = s->tidx.f.n;
    assert_true(entries > 5);
    struct offset_position want = oidx_lookup(&s->oidx, 31);
    /* Evicted: the next use opens the file again. */
    fdc_shed(SIZE_MAX);
    assert_int_equal(count_fds(".log"), 0);
    int e;
    struct sfile *f = segment_file(s, &e);
    assert_non_null(f);
    struct rb_header h;
    uint8_t hb[RB_HEADER_SIZE];
    assert_int_equal(pread(f->fd, hb, sizeof hb, want.position), (ssize_t)sizeof hb);
    assert_int_equal(rb_parse_header(hb, sizeof hb, &h), 0);
    assert_true(rb_last_offset(&h) == want.offset);
    sfile_unref(f);
    segment_free(s);
    assert_int_equal(count_fds(".log"), 0);
    assert_int_equal(count_fds(".index"), 0);

    assert_int_equal(segment_open(dir, 0, &o, "", &s), 0);
    struct segment_load_result r;
    assert_int_equal(segment_load(s, SEGMENT_LOAD_TRUST, INT64_MAX, false, &r, NULL), 0);
    assert_false(r.rebuilt);
    assert_int_equal(s->oidx.f.n, entries);
    assert_int_equal(s->tidx.f.n, tentries);
    assert_int_equal(s->next_offset, 60);
    assert_int_equal(s->size, pos);
    struct offset_position got = oidx_lookup(&s->oidx, 31);
    assert_int_equal(got.offset, want.offset);
    assert_int_equal(got.position, want.position);
    segment_free(s);
}

/* Many logs of many segments within a capacity of 3 fds: appends, reads,
 * timestamp lookups, flushes, clean and unclean reopen. */
static void test_logs_beyond_capacity(void **state)
{
    (void)state;
    fdc_init(3);
    struct plog_config c = small_segments();
    enum { NLOGS = 6, BATCHES = 40 };
    struct plog *l[NLOGS];
    char dirs[NLOGS][128];
    for (int k = 0; k < NLOGS; k++) {
        snprintf(dirs[k], sizeof dirs[k], "%s/t-%d", root, k);
        assert_int_equal(plog_open(dirs[k], NULL, &c, &l[k]), 0);
    }
    for (int i = 0; i < BATCHES; i++)
        for (int k = 0; k < NLOGS; k++)
            assert_int_equal(append_batch(l[k], i * 4, 4, 1000 + i * 4), 0);
    for (int k = 0; k < NLOGS; k++) {
        assert_true(plog_segment_count(l[k]) > 5);
        assert_true(count_fds(".log") <= 3);
        assert_int_equal(read_all(l[k]), BATCHES * 4);
        int64_t off, ts;
        assert_int_equal(plog_offset_for_timestamp(l[k], 1000 + 77, &off, &ts), 0);
        assert_int_equal(off, 77);
        assert_int_equal(plog_flush(l[k]), 0);
    }
    assert_true(count_fds(".log") <= 3);
    assert_int_equal(count_fds(".index") + count_fds(".timeindex"), 0);
    /* Clean close for half, a crash (no clean marker) for the rest. */
    for (int k = 0; k < NLOGS; k++)
        plog_close(l[k], k % 2 == 0);
    for (int k = 0; k < NLOGS; k++) {
        assert_int_equal(plog_open(dirs[k], NULL, &c, &l[k]), 0);
        assert_int_equal(plog_log_end_offset(l[k]), BATCHES * 4);
    }
    for (int k = 0; k < NLOGS; k++) {
        assert_int_equal(read_all(l[k]), BATCHES * 4);
        assert_int_equal(append_batch(l[k], BATCHES * 4, 4, 5000), 0);
        assert_int_equal(read_all(l[k]), BATCHES * 4 + 4);
        plog_close(l[k], true);
    }
    assert_int_equal(count_fds(".log"), 0);
}

/* Every open fails with EMFILE: appends, reads and flushes fail with a
 * retriable code, nothing goes offline, and everything works again once
 * descriptors are back. */
static void test_emfile_never_offline(void **state)
{
    (void)state;
    fdc_init(2);
    struct plog_config c = small_segments();
    char d0[128], d1[128];
    snprintf(d0, sizeof d0, "%s/a-0", root);
    snprintf(d1, sizeof d1, "%s/a-1", root);
    struct plog *a, *b;
    assert_int_equal(plog_open(d0, NULL, &c, &a), 0);
    assert_int_equal(plog_open(d1, NULL, &c, &b), 0);
    for (int i = 0; i < 10; i++) {
        assert_int_equal(append_batch(a, i * 4, 4, 1000), 0);
        assert_int_equal(append_batch(b, i * 4, 4, 1000), 0);
    }
    char mroot[128];
    snprintf(mroot, sizeof mroot, "%s/mgr", root);
    assert_int_equal(fs_mkdirs(mroot, NULL), 0);
    fdc_shed(SIZE_MAX);
    fdc_set_open_hook(emfile_open);
    emfile_left = -1;
    assert_int_equal(append_batch(a, 40, 4, 1000), KERR_KAFKA_STORAGE_ERROR);
    struct plog_read_result rr;
    assert_int_equal(plog_read(b, 0, 1 << 20, true, -1, &rr), KERR_KAFKA_STORAGE_ERROR);
    assert_null(rr.file);
    assert_int_equal(plog_flush(a), KERR_KAFKA_STORAGE_ERROR);
    assert_false(plog_offline(a));
    assert_false(plog_offline(b));
    assert_int_equal(plog_log_end_offset(a), 40);
    assert_int_equal(plog_recovery_point(a), 0);

    /* The log manager: an open that cannot get descriptors leaves the dir
     * online (and tries a few times first). */
    struct samsa_config *cfg = config_new();
    char err[256];
    assert_int_equal(config_set(cfg, "log.dirs", mroot, err, sizeof err), 0);
    struct logmgr *m = logmgr_create(cfg);
    struct plog *ml = NULL;
    assert_int_equal(logmgr_open(m, 0, "topic-0", NULL, &c, NULL, NULL, &ml), KERR_KAFKA_STORAGE_ERROR);
    assert_null(ml);
    assert_false(logmgr_dir_offline(m, 0));
    emfile_left = 0;
    fdc_set_open_hook(NULL);
    assert_int_equal(logmgr_open(m, 0, "topic-0", NULL, &c, NULL, NULL, &ml), 0);
    assert_int_equal(append_batch(ml, 0, 4, 1000), 0);
    logmgr_close(m, ml, true);
    logmgr_destroy(m);
    config_free(cfg);

    /* Descriptors back: the same operations succeed, with all the data. */
    assert_int_equal(append_batch(a, 40, 4, 1000), 0);
    assert_int_equal(read_all(a), 44);
    assert_int_equal(read_all(b), 40);
    assert_int_equal(plog_flush(a), 0);
    assert_int_equal(plog_recovery_point(a), 44);
    plog_close(a, true);
    plog_close(b, true);
    assert_int_equal(plog_open(d0, NULL, &c, &a), 0);
    assert_int_equal(read_all(a), 44);
    plog_close(a, true);
}

/* Index mappings of our files in /proc/self/maps. */
static int count_maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, root) && (strstr(line, ".index") || strstr(line, ".timeindex")))
            n++;
    fclose(f);
    return n;
}

/* Many logs of many segments within a budget of 4 mappings: every
 * append, read and timestamp lookup answers exactly, at most 4 index
 * files are mapped at any time, and a reopen keeps the indexes. */
static void test_maps_within_budget(void **state)
{
    (void)state;
    idxf_set_map_budget(4);
    struct plog_config c = small_segments();
    enum { NLOGS = 6, BATCHES = 40 };
    struct plog *l[NLOGS];
    char dirs[NLOGS][128];
    struct idxf_map_stats st0, st;
    idxf_get_map_stats(&st0);
    for (int k = 0; k < NLOGS; k++) {
        snprintf(dirs[k], sizeof dirs[k], "%s/m-%d", root, k);
        assert_int_equal(plog_open(dirs[k], NULL, &c, &l[k]), 0);
    }
    for (int i = 0; i < BATCHES; i++)
        for (int k = 0; k < NLOGS; k++) {
            assert_int_equal(append_batch(l[k], i * 4, 4, 1000 + i * 4), 0);
            assert_true(count_maps() <= 4);
        }
    for (int k = 0; k < NLOGS; k++) {
        assert_true(plog_segment_count(l[k]) > 5);
        assert_int_equal(read_all(l[k]), BATCHES * 4);
        for (int64_t want = 0; want < BATCHES * 4; want += 13) {
            int64_t off, ts;
            assert_int_equal(plog_offset_for_timestamp(l[k], 1000 + want, &off, &ts), 0);
            assert_int_equal(off, want);
            assert_int_equal(ts, 1000 + want);
        }
        assert_true(count_maps() <= 4);
        assert_int_equal(plog_flush(l[k]), 0);
    }
    idxf_get_map_stats(&st);
    assert_true(st.mapped <= 4);
    assert_true(st.unmaps - st0.unmaps > 0);
    for (int k = 0; k < NLOGS; k++)
        plog_close(l[k], k % 2 == 0);
    assert_int_equal(count_maps(), 0);
    for (int k = 0; k < NLOGS; k++) {
        assert_int_equal(plog_open(dirs[k], NULL, &c, &l[k]), 0);
        assert_int_equal(plog_log_end_offset(l[k]), BATCHES * 4);
        int64_t off, ts;
        assert_int_equal(plog_offset_for_timestamp(l[k], 1000 + 77, &off, &ts), 0);
        assert_int_equal(off, 77);
        assert_int_equal(read_all(l[k]), BATCHES * 4);
        assert_true(count_maps() <= 4);
    }
    for (int k = 0; k < NLOGS; k++)
        plog_close(l[k], true);
    assert_int_equal(count_maps(), 0);
}

static int enomem_left; /* -1: always */
static int enomem_calls;

static void *enomem_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    enomem_calls++;
    if (enomem_left != 0) {
        if (enomem_left > 0)
            enomem_left--;
        errno = ENOMEM;
        return MAP_FAILED;
    }
    return mmap(addr, len, prot, flags, fd, off);
}

/* ENOMEM from mmap: one failure is shed and retried (the entry lands);
 * with every mmap failing, appends, reads and timestamp lookups still
 * answer exactly (entries left out, scans from the segment's start),
 * nothing goes offline, and the log reopens with everything. */
static void test_enomem_never_offline(void **state)
{
    (void)state;
    idxf_set_map_budget(64);
    struct plog_config c = small_segments();
    char d[128];
    snprintf(d, sizeof d, "%s/e-0", root);
    struct plog *l;
    assert_int_equal(plog_open(d, NULL, &c, &l), 0);
    for (int i = 0; i < 10; i++)
        assert_int_equal(append_batch(l, i * 4, 4, 1000 + i * 4), 0);
    struct idxf_map_stats st0, st;
    idxf_get_map_stats(&st0);
    assert_true(st0.mapped > 0);
    /* One ENOMEM: shed, retried, mapped. */
    idxf_shed_maps(SIZE_MAX);
    idxf_set_mmap_hook(enomem_mmap);
    enomem_left = 1;
    enomem_calls = 0;
    uint64_t fails = fdc_resource_failures();
    assert_int_equal(append_batch(l, 40, 4, 1040), 0);
    assert_true(enomem_calls >= 2);
    assert_int_equal(fdc_resource_failures(), fails);
    idxf_get_map_stats(&st);
    assert_true(st.enomem >= st0.enomem + 1);

    /* Every mmap fails. */
    idxf_shed_maps(SIZE_MAX);
    enomem_left = -1;
    for (int i = 11; i < 40; i++)
        assert_int_equal(append_batch(l, i * 4, 4, 1000 + i * 4), 0);
    assert_true(fdc_resource_failures() > fails);
    assert_false(plog_offline(l));
    assert_int_equal(plog_log_end_offset(l), 160);
    assert_int_equal(read_all(l), 160);
    for (int64_t want = 0; want < 160; want += 7) {
        int64_t off, ts;
        assert_int_equal(plog_offset_for_timestamp(l, 1000 + want, &off, &ts), 0);
        assert_int_equal(off, want);
    }
    assert_int_equal(plog_flush(l), 0);
    assert_int_equal(count_maps(), 0);
    plog_close(l, true);

    /* Mappings back: the reopened log has every record and appends on. */
    enomem_left = 0;
    idxf_set_mmap_hook(NULL);
    assert_int_equal(plog_open(d, NULL, &c, &l), 0);
    assert_int_equal(plog_log_end_offset(l), 160);
    assert_int_equal(read_all(l), 160);
    int64_t off, ts;
    assert_int_equal(plog_offset_for_timestamp(l, 1000 + 99, &off, &ts), 0);
    assert_int_equal(off, 99);
    assert_int_equal(append_batch(l, 160, 4, 2000), 0);
    assert_int_equal(read_all(l), 164);
    plog_close(l, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lru_eviction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pinned_never_closed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_emfile_shed_and_retry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sharded_capacity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rename_then_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_segment_reopen_keeps_indexes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_logs_beyond_capacity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_emfile_never_offline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_maps_within_budget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_enomem_never_offline, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
