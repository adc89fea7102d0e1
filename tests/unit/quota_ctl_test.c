/* Client quotas in the metadata log (controller/quotas.c, image.c,
 * snapshot.c) against a real controller in a temporary directory:
 * AlterClientQuotas' per-entity results, validate_only and unchanged
 * values writing nothing, removal, and the quotas kept by a replay of
 * the log and by a snapshot. (Kafka's messages for invalid requests are
 * checked end to end by interop 99.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

#include <cmocka.h>

#include "broker.h"
#include "config.h"
#include "controller/controller.h"
#include "log/fsutil.h"
#include "proto/gen/alter_client_quotas_request.h"
#include "proto/kerr.h"
#include "replica/partition.h"
#include "util/slog.h"
#include "ctl_fixture.h"

static int setup(void **state) { return fx_setup(state, "quota"); }
static int teardown(void **state) { return fx_teardown(state); }

/* One entry: a user and/or client-id (NULL name: the default; "-": no
 * such component), one op. */
struct one {
    alter_client_quotas_request_entry_data_t entry;
    alter_client_quotas_request_entity_data_t ent[2];
    alter_client_quotas_request_op_data_t op;
};

static void one(struct one *o, const char *user, const char *client, const char *key, double value, bool remove)
{
    memset(o, 0, sizeof *o);
    int n = 0;
    if (!user || strcmp(user, "-"))
        o->ent[n++] = (alter_client_quotas_request_entity_data_t){KSTR("user"), user ? KSTR(user) : KSTR_NULL};
    if (!client || strcmp(client, "-"))
        o->ent[n++] =
            (alter_client_quotas_request_entity_data_t){KSTR("client-id"), client ? KSTR(client) : KSTR_NULL};
    o->op = (alter_client_quotas_request_op_data_t){KSTR(key), value, remove};
    o->entry.entity.a = o->ent;
    o->entry.entity.n = n;
    o->entry.ops.a = &o->op;
    o->entry.ops.n = 1;
}

/* Runs the entries; errs get each entry's code. Returns whether a
 * proposal was made (and waits for it). */
static bool alter(struct fx *f, struct one *os, int n, bool validate_only, int16_t *errs)
{
    alter_client_quotas_request_entry_data_t entries[8];
    for (int i = 0; i < n; i++)
        entries[i] = os[i].entry;
    alter_client_quotas_request_t q;
    alter_client_quotas_request_init(&q);
    q.entries.a = entries;
    q.entries.n = n;
    q.validate_only = validate_only;
    struct arena a = ARENA_INIT;
    const char *msgs[8];
    struct ctl_op *op = NULL;
    assert_int_equal(controller_alter_client_quotas(f->c, &q, &a, errs, msgs, &op), 0);
    bool proposed = op != NULL;
    assert_int_equal(fx_wait_op(op), 0);
    arena_free(&a);
    return proposed;
}

static double lookup(struct fx *f, int key, const char *user, const char *client)
{
    struct mimage *m = controller_image(f->c);
    double v = -1;
    bool bu, bc;
    if (!mimage_quota_lookup(m, key, user, client, &v, &bu, &bc))
        v = -1;
    mimage_release(m);
    return v;
}

static void test_alter_results_and_records(void **state)
{
    struct fx *f = *state;
    struct one os[3];
    int16_t errs[3];
    one(&os[0], "alice", "-", "producer_byte_rate", 1024, false);
    one(&os[1], "-", NULL, "consumer_byte_rate", 2048, false);
    one(&os[2], "bob", "-", "producer_byte_rate", 0, false); /* refused alone */
    assert_true(alter(f, os, 3, false, errs));
    assert_int_equal(errs[0], 0);
    assert_int_equal(errs[1], 0);
    assert_int_equal(errs[2], KERR_INVALID_REQUEST);
    assert_true(lookup(f, MI_QUOTA_PRODUCER_BYTE_RATE, "alice", "x") == 1024);
    assert_true(lookup(f, MI_QUOTA_CONSUMER_BYTE_RATE, "alice", "x") == 2048);
    assert_true(lookup(f, MI_QUOTA_PRODUCER_BYTE_RATE, "bob", "x") == -1);
    /* validate_only and unchanged values propose nothing */
    one(&os[0], "alice", "-", "producer_byte_rate", 4096, false);
    assert_false(alter(f, os, 1, true, errs));
    assert_int_equal(errs[0], 0);
    assert_true(lookup(f, MI_QUOTA_PRODUCER_BYTE_RATE, "alice", "x") == 1024);
    one(&os[0], "alice", "-", "producer_byte_rate", 1024, false);
    assert_false(alter(f, os, 1, false, errs));
    /* removing what is not set proposes nothing either */
    one(&os[0], "carol", "-", "producer_byte_rate", 0, true);
    assert_false(alter(f, os, 1, false, errs));
    assert_int_equal(errs[0], 0);
    /* a removal */
    one(&os[0], "-", NULL, "consumer_byte_rate", 0, true);
    assert_true(alter(f, os, 1, false, errs));
    assert_true(lookup(f, MI_QUOTA_CONSUMER_BYTE_RATE, "alice", "x") == -1);
    /* all of it replayed from the log */
    fx_close(f);
    fx_open(f);
    assert_true(lookup(f, MI_QUOTA_PRODUCER_BYTE_RATE, "alice", "x") == 1024);
    assert_true(lookup(f, MI_QUOTA_CONSUMER_BYTE_RATE, "alice", "x") == -1);
    struct mimage *m = controller_image(f->c);
    assert_int_equal(m->nquotas, 1);
    mimage_release(m);
}

static void test_snapshot_keeps_quotas(void **state)
{
    struct fx *f = *state;
    fx_snapshot_each_record(f);
    struct one os[3];
    int16_t errs[3];
    one(&os[0], "alice", "app", "producer_byte_rate", 1000, false);
    one(&os[1], NULL, NULL, "request_percentage", 12.5, false);
    one(&os[2], "-", NULL, "consumer_byte_rate", 3000, false);
    assert_true(alter(f, os, 3, false, errs));
    fx_wait_snapshot(f);
    fx_close(f);
    fx_open(f);
    assert_true(lookup(f, MI_QUOTA_PRODUCER_BYTE_RATE, "alice", "app") == 1000);
    assert_true(lookup(f, MI_QUOTA_REQUEST_PERCENTAGE, "zed", "other") == 12.5);
    assert_true(lookup(f, MI_QUOTA_CONSUMER_BYTE_RATE, "zed", "other") == 3000);
    struct mimage *m = controller_image(f->c);
    assert_int_equal(m->nquotas, 3);
    mimage_release(m);
}

int main(void)
{
    slog_set_level(SLOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_alter_results_and_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_keeps_quotas, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
