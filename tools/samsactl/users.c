/* samsactl users scram set|delete|describe: see users.h.
 *
 *   samsactl users scram set --user alice --password secret
 *            [--mechanism SCRAM-SHA-256|SCRAM-SHA-512] [--iterations 4096]
 *   samsactl users scram delete --user alice [--mechanism ...]
 *   samsactl users scram describe [--user alice]...
 *
 * set salts the password here (32 random bytes, PBKDF2 as RFC 5802's
 * Hi) and sends the salted password, as Kafka's admin client does; the
 * broker never sees the password. describe prints what kafka-configs.sh
 * prints: "SCRAM credential configs for user-principal 'alice' are
 * SCRAM-SHA-256=iterations=4096". */
#include "users.h"

#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/sasl_client.h"
#include "client.h"
#include "proto/gen/alter_user_scram_credentials_request.h"
#include "proto/gen/alter_user_scram_credentials_response.h"
#include "proto/gen/describe_user_scram_credentials_request.h"
#include "proto/gen/describe_user_scram_credentials_response.h"
#include "proto/kerr.h"
#include "sasl.h"

enum { OPT_USER = 1, OPT_PASSWORD, OPT_MECHANISM, OPT_ITERATIONS };

static const struct opt_def users_defs[] = {
    {"user", true, OPT_USER},
    {"password", true, OPT_PASSWORD},
    {"mechanism", true, OPT_MECHANISM},
    {"iterations", true, OPT_ITERATIONS},
    {NULL, false, 0},
};

static void users_usage(FILE *f)
{
    fputs("Usage: samsactl users scram set --user NAME --password PASSWORD\n"
          "                                [--mechanism SCRAM-SHA-256|SCRAM-SHA-512] [--iterations N]\n"
          "       samsactl users scram delete --user NAME [--mechanism SCRAM-SHA-256|SCRAM-SHA-512]\n"
          "       samsactl users scram describe [--user NAME]...\n"
          "\n"
          "SCRAM credentials, stored in the cluster's metadata (AlterUserScramCredentials);\n"
          "the default mechanism is SCRAM-SHA-256, the default iteration count 4096.\n",
          f);
}

#define MAX_USERS 64

struct users_opts {
    const char *action;
    const char *users[MAX_USERS];
    int nusers;
    const char *password;
    int mechanism;
    int32_t iterations;
};

static int parse(int argc, char **argv, struct users_opts *o, struct global_opts *g, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->mechanism = 1;
    o->iterations = 4096;
    if (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")))
        return ARGS_HELP;
    if (argc < 2 || strcmp(argv[0], "scram") != 0) {
        snprintf(err, errlen, "expected 'scram set|delete|describe'");
        return ARGS_ERROR;
    }
    o->action = argv[1];
    if (strcmp(o->action, "set") && strcmp(o->action, "delete") && strcmp(o->action, "describe")) {
        snprintf(err, errlen, "unknown action '%s' (set, delete, describe)", o->action);
        return ARGS_ERROR;
    }
    struct opt_iter it;
    opt_iter_init(&it, argc - 2, argv + 2, users_defs, err, errlen);
    int id;
    while ((id = opt_next(&it)) > 0) {
        if (global_opt_apply(g, id, it.arg))
            continue;
        switch (id) {
        case OPT_HELP: return ARGS_HELP;
        case OPT_USER:
            if (o->nusers == MAX_USERS) {
                snprintf(err, errlen, "at most %d --user", MAX_USERS);
                return ARGS_ERROR;
            }
            o->users[o->nusers++] = it.arg;
            break;
        case OPT_PASSWORD: o->password = it.arg; break;
        case OPT_MECHANISM:
            o->mechanism = sasl_scram_mechanism(it.arg);
            if (o->mechanism < 0) {
                snprintf(err, errlen, "unknown --mechanism '%s' (SCRAM-SHA-256, SCRAM-SHA-512)", it.arg);
                return ARGS_ERROR;
            }
            break;
        case OPT_ITERATIONS:
            if (!parse_i32(it.arg, 1, INT32_MAX, &o->iterations)) {
                snprintf(err, errlen, "invalid --iterations '%s'", it.arg);
                return ARGS_ERROR;
            }
            break;
        default: snprintf(err, errlen, "option '--%s' is not valid here", it.name); return ARGS_ERROR;
        }
    }
    if (id < 0)
        return ARGS_ERROR;
    if (strcmp(o->action, "describe") && o->nusers != 1) {
        snprintf(err, errlen, "users scram %s needs exactly one --user", o->action);
        return ARGS_ERROR;
    }
    if (!strcmp(o->action, "set") && !o->password) {
        snprintf(err, errlen, "users scram set needs --password");
        return ARGS_ERROR;
    }
    return ARGS_OK;
}

static const char *mech_name(int m) { return m == 1 ? "SCRAM-SHA-256" : m == 2 ? "SCRAM-SHA-512" : "UNKNOWN"; }

static int do_alter(struct kc_client *c, const struct users_opts *o)
{
    struct kc_conn *conn;
    int rc = kc_controller_conn(c, &conn);
    if (rc)
        return rc;
    alter_user_scram_credentials_request_t req;
    alter_user_scram_credentials_request_init(&req);
    alter_user_scram_credentials_request_scram_credential_deletion_t del;
    alter_user_scram_credentials_request_scram_credential_upsertion_t up;
    uint8_t salt[32], salted[64];
    size_t salted_len = 0;
    if (!strcmp(o->action, "delete")) {
        del.name = KSTR(o->users[0]);
        del.mechanism = (int8_t)o->mechanism;
        req.deletions.a = &del;
        req.deletions.n = 1;
    } else {
        if (RAND_bytes(salt, sizeof salt) != 1 ||
            sasl_scram_salted_password(o->mechanism, o->password, salt, sizeof salt, o->iterations, salted,
                                     &salted_len) < 0)
            return kc_fail(c, KERR_UNKNOWN_SERVER_ERROR, "cannot salt the password");
        up.name = KSTR(o->users[0]);
        up.mechanism = (int8_t)o->mechanism;
        up.iterations = o->iterations;
        up.salt = (kbytes_t){salt, sizeof salt};
        up.salted_password = (kbytes_t){salted, (int32_t)salted_len};
        req.upsertions.a = &up;
        req.upsertions.n = 1;
    }
    struct kc_response resp;
    rc = kc_call(c, conn, KAPI_ALTER_USER_SCRAM_CREDENTIALS, &req, &resp);
    if (rc)
        return rc;
    const alter_user_scram_credentials_response_t *m = resp.msg;
    for (int32_t i = 0; i < m->results.n && !rc; i++) {
        const alter_user_scram_credentials_response_alter_user_scram_credentials_result_t *r = &m->results.a[i];
        if (r->error_code)
            rc = kc_fail(c, r->error_code, "%.*s", r->error_message.len > 0 ? (int)r->error_message.len : 0,
                         r->error_message.len > 0 ? r->error_message.p : "");
    }
    if (!rc)
        printf("%s SCRAM credential %s of user '%s'.\n", !strcmp(o->action, "set") ? "Set" : "Deleted",
               mech_name(o->mechanism), o->users[0]);
    kc_response_free(&resp);
    return rc;
}

static int do_describe(struct kc_client *c, const struct users_opts *o)
{
    struct kc_conn *conn;
    int rc = kc_any_conn(c, &conn);
    if (rc)
        return rc;
    describe_user_scram_credentials_request_t req;
    describe_user_scram_credentials_request_init(&req);
    describe_user_scram_credentials_request_user_name_t names[MAX_USERS];
    for (int i = 0; i < o->nusers; i++)
        names[i].name = KSTR(o->users[i]);
    if (o->nusers) {
        req.users.a = names;
        req.users.n = o->nusers;
    } else {
        req.users.a = NULL;
        req.users.n = -1; /* null: every user */
    }
    struct kc_response resp;
    rc = kc_call(c, conn, KAPI_DESCRIBE_USER_SCRAM_CREDENTIALS, &req, &resp);
    if (rc)
        return rc;
    const describe_user_scram_credentials_response_t *m = resp.msg;
    if (m->error_code) {
        rc = kc_fail(c, m->error_code, "%.*s", m->error_message.len > 0 ? (int)m->error_message.len : 0,
                     m->error_message.len > 0 ? m->error_message.p : "");
        kc_response_free(&resp);
        return rc;
    }
    for (int32_t i = 0; i < m->results.n; i++) {
        const describe_user_scram_credentials_response_describe_user_scram_credentials_result_t *r = &m->results.a[i];
        if (r->error_code) {
            if (!rc)
                rc = kc_fail(c, r->error_code, "%.*s", r->error_message.len > 0 ? (int)r->error_message.len : 0,
                             r->error_message.len > 0 ? r->error_message.p : "");
            continue;
        }
        printf("SCRAM credential configs for user-principal '%.*s' are ", (int)r->user.len, r->user.p);
        for (int32_t k = 0; k < r->credential_infos.n; k++)
            printf("%s%s=iterations=%d", k ? ", " : "", mech_name(r->credential_infos.a[k].mechanism),
                   (int)r->credential_infos.a[k].iterations);
        printf("\n");
    }
    kc_response_free(&resp);
    return rc;
}

static int parse_any(int argc, char **argv, void *o, struct global_opts *g, char *err, size_t n)
{
    return parse(argc, argv, o, g, err, n);
}
static int run_any(struct kc_client *c, void *v)
{
    const struct users_opts *o = v;
    return !strcmp(o->action, "describe") ? do_describe(c, o) : do_alter(c, o);
}

int cmd_users(int argc, char **argv, const struct global_opts *g)
{
    static const struct kc_command cmd = {"users", users_usage, parse_any, run_any, NULL};
    struct users_opts o;
    return kc_command_main(&cmd, &o, argc, argv, g);
}
