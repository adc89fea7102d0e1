/* ACLs in the metadata log (controller/acls.c, image.c, snapshot.c)
 * against a real controller in a temporary directory: CreateAcls'
 * checks with Kafka's error codes and messages, an ACL that exists
 * already written once, DeleteAcls' filters with the ACLs each matched
 * (one removal per ACL however many filters match it), replay after a
 * restart and through a snapshot. */
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
#include "proto/kerr.h"
#include "replica/partition.h"
#include "util/arena.h"
#include "util/slog.h"
#include "ctl_fixture.h"

static int setup(void **state) { return fx_setup(state, "aclctl"); }
static int teardown(void **state) { return fx_teardown(state); }

static struct controller_acl binding(int type, const char *name, int pattern, const char *principal, int op, int perm)
{
    return (struct controller_acl){.resource_type = (int8_t)type,
                                   .pattern_type = (int8_t)pattern,
                                   .operation = (int8_t)op,
                                   .permission = (int8_t)perm,
                                   .resource_name = name ? KSTR(name) : KSTR_NULL,
                                   .principal = principal ? KSTR(principal) : KSTR_NULL,
                                   .host = principal ? KSTR("*") : KSTR_NULL};
}

static void create(struct fx *f, const struct controller_acl *in, int n, int16_t *errs, char **msgs, struct arena *a)
{
    struct ctl_op *op = NULL;
    assert_int_equal(controller_create_acls(f->c, in, n, errs, msgs, a, &op), 0);
    assert_int_equal(fx_wait_op(op), 0);
}

static int32_t count_acls(struct fx *f)
{
    struct mimage *m = controller_image(f->c);
    int32_t n = m->acls ? m->acls->n : 0;
    mimage_release(m);
    return n;
}

static void test_create_checks_and_duplicates(void **state)
{
    struct fx *f = *state;
    struct arena a;
    arena_init(&a);
    struct controller_acl in[] = {
        binding(2, "t", 3, "User:a", 4, 3),
        binding(2, "t", 3, "User:a", 4, 3),             /* the same again: no second record */
        binding(4, "other", 3, "User:a", 7, 3),         /* cluster not named kafka-cluster */
        binding(2, "", 3, "User:a", 4, 3),              /* empty name */
        binding(1, "t", 3, "User:a", 4, 3),             /* ANY type */
        binding(2, "t", 2, "User:a", 4, 3),             /* MATCH pattern */
        binding(2, "t", 3, "User:a", 1, 3),             /* ANY operation */
        binding(2, "t", 3, "User:a", 4, 1),             /* ANY permission */
        binding(2, "t", 3, "alice", 4, 3),              /* no principal type */
        binding(4, "kafka-cluster", 3, "User:a", 7, 3),
        binding(2, "p-", 4, "User:*", 3, 2),
    };
    int n = (int)(sizeof in / sizeof in[0]);
    int16_t errs[16];
    char *msgs[16];
    create(f, in, n, errs, msgs, &a);
    int16_t want[] = {0, 0, 42, 42, 42, 42, 42, 42, 42, 0, 0};
    for (int i = 0; i < n; i++)
        assert_int_equal(errs[i], want[i]);
    assert_string_equal(msgs[2], "The only valid name for the CLUSTER resource is kafka-cluster");
    assert_string_equal(msgs[3], "Invalid empty resource name");
    assert_string_equal(msgs[4], "Invalid resourceType ANY");
    assert_string_equal(msgs[5], "Invalid patternType MATCH");
    assert_string_equal(msgs[6], "Invalid operation ANY");
    assert_string_equal(msgs[7], "Invalid permissionType ANY");
    assert_int_equal(count_acls(f), 3);
    /* an ACL that exists: success, nothing written */
    create(f, in, 1, errs, msgs, &a);
    assert_int_equal(errs[0], 0);
    assert_int_equal(count_acls(f), 3);
    arena_free(&a);
}

static void test_delete_and_replay(void **state)
{
    struct fx *f = *state;
    struct arena a;
    arena_init(&a);
    struct controller_acl in[] = {
        binding(2, "t", 3, "User:a", 4, 3), binding(2, "t", 3, "User:b", 3, 3),
        binding(3, "g", 3, "User:a", 3, 3), binding(2, "t-", 4, "User:a", 3, 2),
    };
    int16_t errs[4];
    char *msgs[4];
    create(f, in, 4, errs, msgs, &a);
    assert_int_equal(count_acls(f), 4);
    /* restart: the records replay */
    fx_close(f);
    fx_open(f);
    assert_int_equal(count_acls(f), 4);
    struct controller_acl filters[] = {
        binding(2, "t", 2 /* MATCH */, NULL, 1, 1), /* t's literal ACLs; not t- (not a prefix of t) */
        binding(1, NULL, 1, "User:a", 1, 1),        /* every ACL of User:a: overlaps the first */
        binding(0, NULL, 1, NULL, 1, 1),            /* unknown resource type */
    };
    struct controller_acl_deleted res[3];
    struct ctl_op *op = NULL;
    assert_int_equal(controller_delete_acls(f->c, filters, 3, res, &a, &op), 0);
    assert_int_equal(fx_wait_op(op), 0);
    assert_int_equal(res[0].err, 0);
    assert_int_equal(res[0].n, 2);
    assert_int_equal(res[1].err, 0);
    assert_int_equal(res[1].n, 3);
    assert_int_equal(res[2].err, KERR_INVALID_REQUEST);
    assert_string_equal(res[2].msg, "Unknown patternFilter.");
    assert_int_equal(count_acls(f), 0);
    fx_close(f);
    fx_open(f);
    assert_int_equal(count_acls(f), 0);
    arena_free(&a);
}

static void test_snapshot_keeps_acls(void **state)
{
    struct fx *f = *state;
    fx_snapshot_each_record(f);
    struct arena a;
    arena_init(&a);
    struct controller_acl in[] = {binding(2, "snap", 4, "User:s", 2, 3), binding(5, "tx", 3, "User:s", 4, 2)};
    int16_t errs[2];
    char *msgs[2];
    create(f, in, 2, errs, msgs, &a);
    struct mimage *m = controller_image(f->c);
    uint64_t gen = m->acls->gen;
    mimage_release(m);
    fx_wait_snapshot(f);
    fx_close(f);
    fx_open(f);
    m = controller_image(f->c);
    assert_int_equal(m->acls->n, 2);
    assert_true(m->acls->gen != gen);
    assert_string_equal(m->acls->a[0].resource_name, "snap");
    assert_int_equal(m->acls->a[0].pattern_type, 4);
    assert_int_equal(m->acls->a[0].name_len, 4);
    assert_string_equal(m->acls->a[1].resource_name, "tx");
    assert_int_equal(m->acls->a[1].permission, 2);
    mimage_release(m);
    arena_free(&a);
}

int main(void)
{
    slog_set_level(SLOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_checks_and_duplicates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_and_replay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_keeps_acls, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
