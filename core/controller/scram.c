/* SCRAM credentials in the metadata log: AlterUserScramCredentials as
 * Kafka's ScramControlManager.alterCredentials decides it. The image
 * keeps the credentials (image.c), every node applies them, and the
 * sasl-scram module reads them through the host API. */
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>

#include "controller/controller_internal.h"
#include "proto/gen/kmeta.h"
#include "proto/gen/remove_user_scram_credential_record.h"
#include "proto/gen/user_scram_credential_record.h"
#include "proto/kerr.h"
#include "samsa/sasl.h"
#include "util/slog.h"

/* Kafka's ScramMechanism: min iterations 4096, max 16384 for both. */
#define SCRAM_MIN_ITERATIONS 4096
#define SCRAM_MAX_ITERATIONS 16384

const char *controller_scram_mechanism_name(int8_t m)
{
    return m == SAMSA_SCRAM_SHA_256 ? "SCRAM-SHA-256" : m == SAMSA_SCRAM_SHA_512 ? "SCRAM-SHA-512" : NULL;
}

int controller_scram_keys(int8_t mechanism, const uint8_t *salted, size_t salted_len, uint8_t *stored_key,
                          uint8_t *server_key, size_t *key_len)
{
    const EVP_MD *md = mechanism == SAMSA_SCRAM_SHA_256 ? EVP_sha256() : mechanism == SAMSA_SCRAM_SHA_512 ? EVP_sha512()
                                                                                                          : NULL;
    if (!md)
        return -1;
    uint8_t client_key[EVP_MAX_MD_SIZE];
    unsigned int n = 0, m = 0;
    if (!HMAC(md, salted, (int)salted_len, (const uint8_t *)"Client Key", 10, client_key, &n))
        return -1;
    if (!EVP_Digest(client_key, n, stored_key, &m, md, NULL))
        return -1;
    if (!HMAC(md, salted, (int)salted_len, (const uint8_t *)"Server Key", 10, server_key, &n))
        return -1;
    *key_len = n;
    return 0;
}

static int user_slot(struct controller_scram_result *res, int32_t *nres, kstr_t user)
{
    for (int32_t i = 0; i < *nres; i++)
        if (kstr_eq(res[i].user, user))
            return i;
    res[*nres] = (struct controller_scram_result){.user = user, .err = 0, .msg = NULL, .pending = -1};
    return (*nres)++;
}

static bool scram_exists(const struct mimage *img, kstr_t user, int8_t mech)
{
    return user.len > 0 && mimage_scram(img, user.p, (size_t)user.len, mech) != NULL;
}

int controller_alter_scram_credentials(struct controller *c, const struct controller_scram_change *ch, int32_t n,
                                       struct controller_scram_result *res, int32_t *nres, struct ctl_op **op)
{
    *op = NULL;
    *nres = 0;
    pthread_mutex_lock(&c->op_lock);
    int rc = ctl_not_active(c);
    if (rc) {
        pthread_mutex_unlock(&c->op_lock);
        return rc;
    }
    for (int32_t i = 0; i < n; i++) {
        const struct controller_scram_change *x = &ch[i];
        int s = user_slot(res, nres, x->user);
        struct controller_scram_result *r = &res[s];
        if (r->err)
            continue;
        if (r->pending >= 0) {
            r->pending = -1;
            r->err = KERR_DUPLICATE_RESOURCE;
            r->msg = "A user credential cannot be altered twice in the same request";
            continue;
        }
        if (!controller_scram_mechanism_name(x->mechanism)) {
            r->err = KERR_UNSUPPORTED_SASL_MECHANISM;
            r->msg = "Unknown SCRAM mechanism";
        } else if (x->user.len <= 0) {
            r->err = KERR_UNACCEPTABLE_CREDENTIAL;
            r->msg = "Username must not be empty";
        } else if (x->is_delete) {
            if (!scram_exists(c->spec, x->user, x->mechanism)) {
                r->err = KERR_RESOURCE_NOT_FOUND;
                r->msg = "Attempt to delete a user credential that does not exist";
            }
        } else if (x->iterations < SCRAM_MIN_ITERATIONS) {
            r->err = KERR_UNACCEPTABLE_CREDENTIAL;
            r->msg = "Too few iterations";
        } else if (x->iterations > SCRAM_MAX_ITERATIONS) {
            r->err = KERR_UNACCEPTABLE_CREDENTIAL;
            r->msg = "Too many iterations";
        } else if (x->salt.len <= 0 || x->salt.len > SAMSA_SCRAM_SALT_MAX || x->salted_password.len <= 0) {
            /* samsa's own bound: the salt travels to the mechanism in a
             * fixed array (samsa_scram_credential_t) */
            r->err = KERR_UNACCEPTABLE_CREDENTIAL;
            r->msg = "Salt must be 1 to 256 bytes and the salted password not empty";
        }
        if (!r->err)
            r->pending = i;
    }
    struct recs rs;
    recs_init(&rs);
    for (int pass = 0; pass < 2; pass++) {
        /* deletions first, then upsertions, as Kafka writes them */
        for (int32_t s = 0; s < *nres; s++) {
            if (res[s].err || res[s].pending < 0)
                continue;
            const struct controller_scram_change *x = &ch[res[s].pending];
            if (x->is_delete != (pass == 0))
                continue;
            if (x->is_delete) {
                remove_user_scram_credential_record_t *r = arena_alloc(&rs.arena, sizeof *r);
                remove_user_scram_credential_record_init(r);
                r->name = x->user;
                r->mechanism = x->mechanism;
                recs_add(&rs, KMETA_REMOVE_USER_SCRAM_CREDENTIAL_RECORD, 0, r);
                continue;
            }
            user_scram_credential_record_t *r = arena_alloc(&rs.arena, sizeof *r);
            user_scram_credential_record_init(r);
            uint8_t *keys = arena_alloc(&rs.arena, 2 * EVP_MAX_MD_SIZE);
            size_t klen = 0;
            if (controller_scram_keys(x->mechanism, x->salted_password.p, (size_t)x->salted_password.len, keys,
                                      keys + EVP_MAX_MD_SIZE, &klen) < 0) {
                res[s].err = KERR_UNKNOWN_SERVER_ERROR;
                res[s].msg = "could not compute the SCRAM keys";
                continue;
            }
            r->name = x->user;
            r->mechanism = x->mechanism;
            r->salt = x->salt;
            r->stored_key = (kbytes_t){keys, (int32_t)klen};
            r->server_key = (kbytes_t){keys + EVP_MAX_MD_SIZE, (int32_t)klen};
            r->iterations = x->iterations;
            recs_add(&rs, KMETA_USER_SCRAM_CREDENTIAL_RECORD, 0, r);
        }
    }
    if (rs.n > 0) {
        char msg[256] = "";
        rc = ctl_submit_locked(c, &rs, msg, sizeof msg, op);
        if (rc == 0)
            for (size_t i = 0; i < rs.n; i++) {
                if (rs.a[i].type == KMETA_USER_SCRAM_CREDENTIAL_RECORD) {
                    const user_scram_credential_record_t *r = rs.a[i].rec;
                    slog_info("metadata: SCRAM credential %s of user %.*s set (%d iterations)",
                              controller_scram_mechanism_name(r->mechanism), (int)r->name.len, r->name.p,
                              (int)r->iterations);
                } else {
                    const remove_user_scram_credential_record_t *r = rs.a[i].rec;
                    slog_info("metadata: SCRAM credential %s of user %.*s deleted",
                              controller_scram_mechanism_name(r->mechanism), (int)r->name.len, r->name.p);
                }
            }
    }
    recs_free(&rs);
    pthread_mutex_unlock(&c->op_lock);
    return rc;
}
