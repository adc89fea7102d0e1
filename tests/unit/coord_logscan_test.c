/* Reading a coordinator partition back with its transactions
 * (coord/logscan.c: coord_log_scan_txn, and coord_log_scan skipping
 * them), and the coordinator's own transactional appends
 * (plog_append_coordinator: the producer epoch checked, not the
 * sequence), on a real log in a mkdtemp directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord/logscan.h"
#include "log/fsutil.h"
#include "log/plog.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "replica/partition.h"
#include "util/buf.h"

struct fx {
    char *root;
    struct partition p;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    char tmpl[] = "/tmp/coord_logscan_test.XXXXXX";
    if (!mkdtemp(tmpl))
        return -1;
    f->root = strdup(tmpl);
    char dir[256];
    snprintf(dir, sizeof dir, "%s/__consumer_offsets-3", tmpl);
    struct plog_config c = PLOG_CONFIG_INIT;
    if (plog_open(dir, NULL, &c, &f->p.log) != 0)
        return -1;
    f->p.index = 3;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    plog_close(f->p.log, false);
    fs_remove_tree(f->root);
    free(f->root);
    free(f);
    return 0;
}

/* A batch of n records "<tag><i>" (pid -1: plain), appended as the
 * coordinator does. Returns the append's error; *base its first offset. */
static int append(struct fx *f, int64_t pid, int16_t epoch, int n, const char *tag, int64_t *base)
{
    struct buf b;
    buf_init(&b);
    struct rb_batch_opts o = RB_BATCH_OPTS_INIT;
    if (pid >= 0) {
        o.producer_id = pid;
        o.producer_epoch = epoch;
        o.base_sequence = 0;
        o.transactional = true;
    }
    struct rb_builder bl;
    rb_builder_begin(&bl, &b, 0, 1000, &o);
    for (int i = 0; i < n; i++) {
        char k[32];
        snprintf(k, sizeof k, "%s%d", tag, i);
        kbytes_t key = {(const uint8_t *)k, (int32_t)strlen(k)};
        rb_builder_add(&bl, 1000, key, (kbytes_t){(const uint8_t *)"v", 1}, NULL, 0);
    }
    size_t len;
    assert_int_equal(rb_builder_finish(&bl, &len), 0);
    struct plog_append_result res;
    int rc = plog_append_coordinator(f->p.log, b.data, len, 0, PLOG_GUARD_UNCHECKED, &res);
    if (!rc && base)
        *base = res.base_offset;
    buf_free(&b);
    return rc;
}

static int marker(struct fx *f, int64_t pid, int16_t epoch, bool commit)
{
    struct buf b;
    buf_init(&b);
    assert_int_equal(rb_build_txn_marker(&b, 0, 1000, pid, epoch, -1, commit ? RB_CONTROL_COMMIT : RB_CONTROL_ABORT,
                                         0, NULL),
                     0);
    int rc = plog_append(f->p.log, b.data, b.len, 0, -1, NULL);
    buf_free(&b);
    return rc;
}

struct seen {
    char line[64][48];
    int n;
};

static void on_record(void *arg, int64_t offset, int64_t pid, kbytes_t key, kbytes_t value)
{
    (void)value;
    struct seen *s = arg;
    snprintf(s->line[s->n++], 48, "R %lld %lld %.*s", (long long)offset, (long long)pid, (int)key.len,
             (const char *)key.p);
}

static void on_marker(void *arg, int64_t offset, int64_t pid, bool commit)
{
    struct seen *s = arg;
    snprintf(s->line[s->n++], 48, "M %lld %lld %s", (long long)offset, (long long)pid, commit ? "commit" : "abort");
}

static void on_plain(void *arg, int64_t offset, kbytes_t key, kbytes_t value)
{
    on_record(arg, offset, -2, key, value);
}

static void test_scan_with_transactions(void **state)
{
    struct fx *f = *state;
    int64_t base = -1;
    assert_int_equal(append(f, -1, 0, 2, "a", &base), 0); /* 0-1 */
    assert_int_equal(base, 0);
    assert_int_equal(append(f, 7, 0, 2, "t", &base), 0); /* 2-3 */
    assert_int_equal(base, 2);
    assert_int_equal(append(f, 8, 1, 1, "u", &base), 0); /* 4 */
    assert_int_equal(marker(f, 7, 0, true), 0);           /* 5 */
    /* the same producer and epoch at sequence 0 again (a second
     * transaction, transactions V1): appended, not taken for a retry */
    assert_int_equal(append(f, 7, 0, 1, "w", &base), 0); /* 6 */
    assert_int_equal(base, 6);
    assert_int_equal(marker(f, 8, 1, false), 0); /* 7 */
    assert_int_equal(append(f, -1, 0, 1, "b", &base), 0); /* 8 */
    /* an older epoch of producer 8 is refused */
    assert_int_equal(append(f, 8, 0, 1, "z", NULL), KERR_INVALID_PRODUCER_EPOCH);

    struct seen s = {0};
    static const struct coord_scan_fns fns = {on_record, on_marker};
    assert_int_equal(coord_log_scan_txn(&f->p, NULL, 1 << 20, "test", &fns, &s), 0);
    const char *want[] = {"R 0 -1 a0", "R 1 -1 a1", "R 2 7 t0",       "R 3 7 t1", "R 4 8 u0",
                          "M 5 7 commit", "R 6 7 w0", "M 7 8 abort", "R 8 -1 b0"};
    assert_int_equal(s.n, 9);
    for (int i = 0; i < 9; i++)
        assert_string_equal(s.line[i], want[i]);

    /* coord_log_scan: data batches that are not transactional only */
    struct seen p = {0};
    assert_int_equal(coord_log_scan(&f->p, NULL, 1 << 20, "test", on_plain, &p), 0);
    assert_int_equal(p.n, 3);
    assert_string_equal(p.line[0], "R 0 -2 a0");
    assert_string_equal(p.line[1], "R 1 -2 a1");
    assert_string_equal(p.line[2], "R 8 -2 b0");

    /* a small read buffer gives the same sequence */
    struct seen small = {0};
    assert_int_equal(coord_log_scan_txn(&f->p, NULL, 64, "test", &fns, &small), 0);
    assert_int_equal(small.n, 9);
    for (int i = 0; i < 9; i++)
        assert_string_equal(small.line[i], want[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_scan_with_transactions, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
