/* SCRAM credentials in the metadata log (controller/scram.c, image.c,
 * snapshot.c) against a real controller in a temporary directory:
 * AlterUserScramCredentials' validation with Kafka's error codes and
 * messages, the keys stored (RFC 5802's StoredKey/ServerKey of the
 * salted password), deletion, replay after a restart and through a
 * snapshot, and the lookup the sasl-scram module reads them with. */
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
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "auth/sasl.h"
#include "broker.h"
#include "config.h"
#include "controller/controller.h"
#include "log/fsutil.h"
#include "proto/kerr.h"
#include "replica/partition.h"
#include "util/slog.h"
#include "ctl_fixture.h"

static int setup(void **state) { return fx_setup(state, "scram"); }
static int teardown(void **state) { return fx_teardown(state); }

static const uint8_t SALT[] = "salt-of-16-bytes";
static uint8_t salted256[32], salted512[64];

static struct controller_scram_change upsert(const char *user, int8_t mech, int32_t iterations)
{
    return (struct controller_scram_change){
        .user = KSTR(user),
        .mechanism = mech,
        .iterations = iterations,
        .salt = {SALT, 16},
        .salted_password = mech == 2 ? (kbytes_t){salted512, 64} : (kbytes_t){salted256, 32},
    };
}

static struct controller_scram_change del(const char *user, int8_t mech)
{
    return (struct controller_scram_change){.user = KSTR(user), .mechanism = mech, .is_delete = true};
}

/* Runs the changes; returns the op's error and fills res. */
static int alter(struct fx *f, struct controller_scram_change *ch, int n, struct controller_scram_result *res,
                 int32_t *nres)
{
    struct ctl_op *op = NULL;
    int rc = controller_alter_scram_credentials(f->c, ch, n, res, nres, &op);
    assert_int_equal(rc, 0);
    return fx_wait_op(op);
}

static void expect_result(const struct controller_scram_result *r, const char *user, int err, const char *msg)
{
    assert_int_equal(r->user.len, (int32_t)strlen(user));
    assert_memory_equal(r->user.p, user, strlen(user));
    assert_int_equal(r->err, err);
    if (msg)
        assert_string_equal(r->msg, msg);
    else
        assert_null(r->msg);
}

/* RFC 5802: StoredKey = H(HMAC(salted, "Client Key")), ServerKey =
 * HMAC(salted, "Server Key"). */
static void expected_keys(const EVP_MD *md, const uint8_t *salted, int n, uint8_t *stored, uint8_t *server)
{
    uint8_t ck[64];
    unsigned int l;
    HMAC(md, salted, n, (const uint8_t *)"Client Key", 10, ck, &l);
    EVP_Digest(ck, l, stored, &l, md, NULL);
    HMAC(md, salted, n, (const uint8_t *)"Server Key", 10, server, &l);
}

static void check_lookup(struct fx *f, const char *user, int mech, int iterations)
{
    samsa_scram_credential_t cred = {.struct_size = sizeof cred};
    assert_int_equal(sasl_scram_lookup(f->c, mech, user, &cred), SAMSA_OK);
    assert_int_equal(cred.iterations, iterations);
    assert_int_equal(cred.salt_len, 16);
    assert_memory_equal(cred.salt, SALT, 16);
    const EVP_MD *md = mech == 2 ? EVP_sha512() : EVP_sha256();
    int n = mech == 2 ? 64 : 32;
    uint8_t stored[64], server[64];
    expected_keys(md, mech == 2 ? salted512 : salted256, n, stored, server);
    assert_int_equal(cred.stored_key_len, (size_t)n);
    assert_memory_equal(cred.stored_key, stored, (size_t)n);
    assert_int_equal(cred.server_key_len, (size_t)n);
    assert_memory_equal(cred.server_key, server, (size_t)n);
}

static void test_alter_validation(void **state)
{
    struct fx *f = *state;
    PKCS5_PBKDF2_HMAC("pencil", 6, SALT, 16, 4096, EVP_sha256(), 32, salted256);
    struct controller_scram_result res[8];
    int32_t nres;
    struct controller_scram_change ch[] = {
        upsert("bad-mech", 3, 4096),      upsert("", 1, 4096),           upsert("few", 1, 4095),
        upsert("many", 1, 16385),         del("ghost", 1),               upsert("twice", 1, 4096),
        upsert("twice", 2, 4096),         upsert("ok", 1, 4096),
    };
    /* deletions first, as the API handler passes them */
    struct controller_scram_change order[] = {ch[4], ch[0], ch[1], ch[2], ch[3], ch[5], ch[6], ch[7]};
    assert_int_equal(alter(f, order, 8, res, &nres), 0);
    assert_int_equal(nres, 7);
    expect_result(&res[0], "ghost", KERR_RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist");
    expect_result(&res[1], "bad-mech", KERR_UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism");
    expect_result(&res[2], "", KERR_UNACCEPTABLE_CREDENTIAL, "Username must not be empty");
    expect_result(&res[3], "few", KERR_UNACCEPTABLE_CREDENTIAL, "Too few iterations");
    expect_result(&res[4], "many", KERR_UNACCEPTABLE_CREDENTIAL, "Too many iterations");
    expect_result(&res[5], "twice", KERR_DUPLICATE_RESOURCE,
                  "A user credential cannot be altered twice in the same request");
    expect_result(&res[6], "ok", 0, NULL);
    struct mimage *m = controller_image(f->c);
    assert_int_equal(m->nscram, 1);
    assert_string_equal(m->scram[0].user, "ok");
    mimage_release(m);
    check_lookup(f, "ok", 1, 4096);
    samsa_scram_credential_t cred = {.struct_size = sizeof cred};
    assert_int_equal(sasl_scram_lookup(f->c, 2, "ok", &cred), SAMSA_ENOTFOUND);
    assert_int_equal(sasl_scram_lookup(f->c, 1, "twice", &cred), SAMSA_ENOTFOUND);
}

static void test_set_replace_delete_replay(void **state)
{
    struct fx *f = *state;
    PKCS5_PBKDF2_HMAC("pencil", 6, SALT, 16, 4096, EVP_sha256(), 32, salted256);
    PKCS5_PBKDF2_HMAC("pencil", 6, SALT, 16, 8192, EVP_sha512(), 64, salted512);
    struct controller_scram_result res[4];
    int32_t nres;
    struct controller_scram_change a[] = {upsert("alice", 1, 4096), upsert("bob", 2, 8192)};
    assert_int_equal(alter(f, a, 2, res, &nres), 0);
    struct controller_scram_change b[] = {upsert("alice", 2, 8192)};
    assert_int_equal(alter(f, b, 1, res, &nres), 0);
    check_lookup(f, "alice", 1, 4096);
    check_lookup(f, "alice", 2, 8192);
    check_lookup(f, "bob", 2, 8192);
    /* a new password replaces the old credential */
    PKCS5_PBKDF2_HMAC("other", 5, SALT, 16, 5000, EVP_sha256(), 32, salted256);
    struct controller_scram_change c[] = {upsert("alice", 1, 5000)};
    assert_int_equal(alter(f, c, 1, res, &nres), 0);
    check_lookup(f, "alice", 1, 5000);
    struct controller_scram_change d[] = {del("bob", 2)};
    assert_int_equal(alter(f, d, 1, res, &nres), 0);
    expect_result(&res[0], "bob", 0, NULL);
    samsa_scram_credential_t cred = {.struct_size = sizeof cred};
    assert_int_equal(sasl_scram_lookup(f->c, 2, "bob", &cred), SAMSA_ENOTFOUND);

    /* replay from the log */
    fx_close(f);
    fx_open(f);
    check_lookup(f, "alice", 1, 5000);
    check_lookup(f, "alice", 2, 8192);
    assert_int_equal(sasl_scram_lookup(f->c, 2, "bob", &cred), SAMSA_ENOTFOUND);
    struct mimage *m = controller_image(f->c);
    assert_int_equal(m->nscram, 2);
    mimage_release(m);
}

static void test_snapshot_keeps_credentials(void **state)
{
    struct fx *f = *state;
    fx_snapshot_each_record(f);
    PKCS5_PBKDF2_HMAC("pencil", 6, SALT, 16, 4096, EVP_sha256(), 32, salted256);
    PKCS5_PBKDF2_HMAC("pencil", 6, SALT, 16, 4096, EVP_sha512(), 64, salted512);
    struct controller_scram_result res[2];
    int32_t nres;
    struct controller_scram_change a[] = {upsert("carol", 1, 4096), upsert("dave", 2, 4096)};
    assert_int_equal(alter(f, a, 2, res, &nres), 0);
    fx_wait_snapshot(f);
    fx_close(f);
    fx_open(f);
    check_lookup(f, "carol", 1, 4096);
    check_lookup(f, "dave", 2, 4096);
}

int main(void)
{
    slog_set_level(SLOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_alter_validation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_replace_delete_replay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_keeps_credentials, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
