/* samsactl acls list|create|delete: see acls.h. */
#include "acls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "proto/gen/create_acls_request.h"
#include "proto/gen/create_acls_response.h"
#include "proto/gen/delete_acls_request.h"
#include "proto/gen/delete_acls_response.h"
#include "proto/gen/describe_acls_request.h"
#include "proto/gen/describe_acls_response.h"
#include "proto/kacl.h"
#include "proto/kerr.h"

/* Kafka's codes */
#define ANY 1
#define LITERAL 3
#define DENY 2
#define ALLOW 3
#define T_TOPIC 2
#define T_GROUP 3
#define T_CLUSTER 4
#define T_TXN 5
#define T_TOKEN 6
#define T_USER 7

#define MAX_ITEMS 64

enum {
    OPT_TOPIC = 1, OPT_GROUP, OPT_CLUSTER, OPT_TXN, OPT_TOKEN, OPT_USER_PRINCIPAL, OPT_ALLOW_PRINCIPAL,
    OPT_DENY_PRINCIPAL, OPT_ALLOW_HOST, OPT_DENY_HOST, OPT_OPERATION, OPT_PATTERN, OPT_PRINCIPAL, OPT_FORCE,
};

static const struct opt_def acls_defs[] = {
    {"topic", true, OPT_TOPIC},
    {"group", true, OPT_GROUP},
    {"cluster", false, OPT_CLUSTER},
    {"transactional-id", true, OPT_TXN},
    {"delegation-token", true, OPT_TOKEN},
    {"user-principal", true, OPT_USER_PRINCIPAL},
    {"allow-principal", true, OPT_ALLOW_PRINCIPAL},
    {"deny-principal", true, OPT_DENY_PRINCIPAL},
    {"allow-host", true, OPT_ALLOW_HOST},
    {"deny-host", true, OPT_DENY_HOST},
    {"operation", true, OPT_OPERATION},
    {"resource-pattern-type", true, OPT_PATTERN},
    {"principal", true, OPT_PRINCIPAL},
    {"force", false, OPT_FORCE},
    {NULL, false, 0},
};

static void acls_usage(FILE *f)
{
    fputs("Usage: samsactl acls list [RESOURCE...] [--principal P] [--resource-pattern-type T]\n"
          "       samsactl acls create (--allow-principal P | --deny-principal P)... [--allow-host H]...\n"
          "                            [--deny-host H]... --operation OP... RESOURCE...\n"
          "                            [--resource-pattern-type LITERAL|PREFIXED]\n"
          "       samsactl acls delete RESOURCE... [--allow-principal P]... [--deny-principal P]...\n"
          "                            [--allow-host H]... [--deny-host H]... [--operation OP]...\n"
          "                            [--resource-pattern-type T] [--force]\n"
          "\n"
          "RESOURCE: --topic NAME, --group NAME, --cluster, --transactional-id ID,\n"
          "          --delegation-token ID, --user-principal NAME (each may repeat).\n"
          "OP: Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs,\n"
          "    AlterConfigs, IdempotentWrite, CreateTokens, DescribeTokens, All.\n"
          "Pattern types: LITERAL (default with a resource), PREFIXED; for list and delete\n"
          "also ANY (default for list without a resource) and MATCH. Hosts default to *.\n"
          "add and remove are other names of create and delete (kafka-acls.sh's --add,\n"
          "--remove); delete removes every ACL its filters match (--operation: any\n"
          "operation when not given), and never asks (--force is accepted).\n",
          f);
}

struct resource {
    int8_t type;
    const char *name;
};

struct acls_opts {
    const char *action;
    struct resource res[MAX_ITEMS];
    int nres;
    const char *allow[MAX_ITEMS], *deny[MAX_ITEMS], *allow_hosts[MAX_ITEMS], *deny_hosts[MAX_ITEMS];
    int nallow, ndeny, nallow_hosts, ndeny_hosts;
    int8_t ops[MAX_ITEMS];
    int nops;
    int pattern; /* -1: not given */
    const char *principal;
};

static bool add_item(const char **arr, int *n, const char *v, char *err, size_t errlen)
{
    if (*n == MAX_ITEMS) {
        snprintf(err, errlen, "at most %d of each option", MAX_ITEMS);
        return false;
    }
    arr[(*n)++] = v;
    return true;
}

static int parse(int argc, char **argv, struct acls_opts *o, struct global_opts *g, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->pattern = -1;
    if (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")))
        return ARGS_HELP;
    if (argc < 1) {
        snprintf(err, errlen, "expected 'list', 'create' or 'delete'");
        return ARGS_ERROR;
    }
    o->action = !strcmp(argv[0], "add") ? "create" : !strcmp(argv[0], "remove") ? "delete" : argv[0];
    if (strcmp(o->action, "list") && strcmp(o->action, "create") && strcmp(o->action, "delete")) {
        snprintf(err, errlen, "unknown action '%s' (list, create, delete)", argv[0]);
        return ARGS_ERROR;
    }
    struct opt_iter it;
    opt_iter_init(&it, argc - 1, argv + 1, acls_defs, err, errlen);
    int id;
    while ((id = opt_next(&it)) > 0) {
        if (global_opt_apply(g, id, it.arg))
            continue;
        int8_t type = 0;
        switch (id) {
        case OPT_HELP: return ARGS_HELP;
        case OPT_TOPIC: type = T_TOPIC; break;
        case OPT_GROUP: type = T_GROUP; break;
        case OPT_CLUSTER: type = T_CLUSTER; break;
        case OPT_TXN: type = T_TXN; break;
        case OPT_TOKEN: type = T_TOKEN; break;
        case OPT_USER_PRINCIPAL: type = T_USER; break;
        case OPT_ALLOW_PRINCIPAL:
            if (!add_item(o->allow, &o->nallow, it.arg, err, errlen))
                return ARGS_ERROR;
            break;
        case OPT_DENY_PRINCIPAL:
            if (!add_item(o->deny, &o->ndeny, it.arg, err, errlen))
                return ARGS_ERROR;
            break;
        case OPT_ALLOW_HOST:
            if (!add_item(o->allow_hosts, &o->nallow_hosts, it.arg, err, errlen))
                return ARGS_ERROR;
            break;
        case OPT_DENY_HOST:
            if (!add_item(o->deny_hosts, &o->ndeny_hosts, it.arg, err, errlen))
                return ARGS_ERROR;
            break;
        case OPT_OPERATION: {
            int op = kacl_operation_parse(it.arg);
            if (op <= ANY) {
                snprintf(err, errlen, "unknown --operation '%s'", it.arg);
                return ARGS_ERROR;
            }
            if (o->nops == MAX_ITEMS) {
                snprintf(err, errlen, "at most %d --operation", MAX_ITEMS);
                return ARGS_ERROR;
            }
            o->ops[o->nops++] = (int8_t)op;
            break;
        }
        case OPT_PATTERN:
            o->pattern = kacl_pattern_type_parse(it.arg);
            if (o->pattern < 0) {
                snprintf(err, errlen, "unknown --resource-pattern-type '%s' (LITERAL, PREFIXED, ANY, MATCH)", it.arg);
                return ARGS_ERROR;
            }
            break;
        case OPT_PRINCIPAL: o->principal = it.arg; break;
        case OPT_FORCE: break;
        default: snprintf(err, errlen, "option '--%s' is not valid here", it.name); return ARGS_ERROR;
        }
        if (type) {
            if (o->nres == MAX_ITEMS) {
                snprintf(err, errlen, "at most %d resources", MAX_ITEMS);
                return ARGS_ERROR;
            }
            o->res[o->nres++] = (struct resource){type, type == T_CLUSTER ? "kafka-cluster" : it.arg};
        }
    }
    if (id < 0)
        return ARGS_ERROR;
    bool create = !strcmp(o->action, "create");
    if (create) {
        if (o->nres == 0 || o->nallow + o->ndeny == 0 || o->nops == 0) {
            snprintf(err, errlen, "acls create needs a resource, --allow-principal or --deny-principal, "
                                  "and --operation");
            return ARGS_ERROR;
        }
        if (o->pattern < 0)
            o->pattern = LITERAL;
        if (o->pattern != LITERAL && o->pattern != 4) {
            snprintf(err, errlen, "acls create takes --resource-pattern-type LITERAL or PREFIXED");
            return ARGS_ERROR;
        }
    } else if (!strcmp(o->action, "delete") && o->nres == 0) {
        snprintf(err, errlen, "acls delete needs a resource");
        return ARGS_ERROR;
    }
    if (o->pattern < 0)
        o->pattern = o->nres ? LITERAL : ANY;
    return ARGS_OK;
}

static int entry_error(struct kc_client *c, int16_t code, kstr_t msg)
{
    return kc_fail(c, code, "%.*s", msg.len > 0 ? (int)msg.len : 0, msg.len > 0 ? msg.p : "");
}

static void print_entry(kstr_t principal, kstr_t host, int op, int perm)
{
    printf(" \t(principal=%.*s, host=%.*s, operation=%s, permissionType=%s)\n", (int)principal.len, principal.p,
           (int)host.len, host.p, kacl_operation_name(op), kacl_permission_name(perm));
}

static int do_create(struct kc_client *c, const struct acls_opts *o)
{
    struct kc_conn *conn;
    int rc = kc_controller_conn(c, &conn);
    if (rc)
        return rc;
    struct arena a;
    arena_init(&a);
    int nhosts_a = o->nallow_hosts ? o->nallow_hosts : 1, nhosts_d = o->ndeny_hosts ? o->ndeny_hosts : 1;
    int max = o->nres * o->nops * (o->nallow * nhosts_a + o->ndeny * nhosts_d);
    create_acls_request_t req;
    create_acls_request_init(&req);
    req.creations.a = create_acls_request_acl_creation_new_array(&a, max);
    req.creations.n = 0;
    for (int r = 0; r < o->nres; r++)
        for (int perm = DENY; perm <= ALLOW; perm++) {
            const char *const *ps = perm == ALLOW ? o->allow : o->deny;
            int np = perm == ALLOW ? o->nallow : o->ndeny;
            const char *const *hs = perm == ALLOW ? o->allow_hosts : o->deny_hosts;
            int nh = perm == ALLOW ? o->nallow_hosts : o->ndeny_hosts;
            for (int p = 0; p < np; p++)
                for (int h = 0; h < (nh ? nh : 1); h++)
                    for (int k = 0; k < o->nops; k++) {
                        create_acls_request_acl_creation_t *x = &req.creations.a[req.creations.n++];
                        x->resource_type = o->res[r].type;
                        x->resource_name = KSTR(o->res[r].name);
                        x->resource_pattern_type = (int8_t)o->pattern;
                        x->principal = KSTR(ps[p]);
                        x->host = KSTR(nh ? hs[h] : "*");
                        x->operation = o->ops[k];
                        x->permission_type = (int8_t)perm;
                    }
        }
    struct kc_response resp;
    rc = kc_call(c, conn, KAPI_CREATE_ACLS, &req, &resp);
    if (rc) {
        arena_free(&a);
        return rc;
    }
    const create_acls_response_t *m = resp.msg;
    for (int32_t i = 0; i < m->results.n && i < req.creations.n; i++) {
        const create_acls_request_acl_creation_t *x = &req.creations.a[i];
        if (m->results.a[i].error_code) {
            if (!rc)
                rc = entry_error(c, m->results.a[i].error_code, m->results.a[i].error_message);
            continue;
        }
        printf("Added ACL for resource `ResourcePattern(resourceType=%s, name=%.*s, patternType=%s)`:\n",
               kacl_resource_type_name(x->resource_type), (int)x->resource_name.len, x->resource_name.p,
               kacl_pattern_type_name(x->resource_pattern_type));
        print_entry(x->principal, x->host, x->operation, x->permission_type);
    }
    kc_response_free(&resp);
    arena_free(&a);
    return rc;
}

/* One DescribeAcls per resource (or one for everything) and prints what
 * kafka-acls.sh --list prints. */
static int do_list(struct kc_client *c, const struct acls_opts *o)
{
    struct kc_conn *conn;
    int rc = kc_any_conn(c, &conn);
    if (rc)
        return rc;
    int n = o->nres ? o->nres : 1;
    for (int r = 0; r < n && !rc; r++) {
        describe_acls_request_t req;
        describe_acls_request_init(&req);
        req.resource_type_filter = o->nres ? o->res[r].type : ANY;
        req.resource_name_filter = o->nres ? KSTR(o->res[r].name) : KSTR_NULL;
        req.pattern_type_filter = (int8_t)o->pattern;
        req.principal_filter = o->principal ? KSTR(o->principal) : KSTR_NULL;
        req.host_filter = KSTR_NULL;
        req.operation = ANY;
        req.permission_type = ANY;
        struct kc_response resp;
        rc = kc_call(c, conn, KAPI_DESCRIBE_ACLS, &req, &resp);
        if (rc)
            return rc;
        const describe_acls_response_t *m = resp.msg;
        if (m->error_code) {
            rc = entry_error(c, m->error_code, m->error_message);
        } else {
            for (int32_t i = 0; i < m->resources.n; i++) {
                const describe_acls_response_describe_acls_resource_t *x = &m->resources.a[i];
                printf("Current ACLs for resource `ResourcePattern(resourceType=%s, name=%.*s, patternType=%s)`:\n",
                       kacl_resource_type_name(x->resource_type), (int)x->resource_name.len, x->resource_name.p,
                       kacl_pattern_type_name(x->pattern_type));
                for (int32_t k = 0; k < x->acls.n; k++)
                    print_entry(x->acls.a[k].principal, x->acls.a[k].host, x->acls.a[k].operation,
                                x->acls.a[k].permission_type);
                printf("\n");
            }
        }
        kc_response_free(&resp);
    }
    return rc;
}

static int do_delete(struct kc_client *c, const struct acls_opts *o)
{
    struct kc_conn *conn;
    int rc = kc_controller_conn(c, &conn);
    if (rc)
        return rc;
    struct arena a;
    arena_init(&a);
    int nops = o->nops ? o->nops : 1;
    int nha = o->nallow_hosts ? o->nallow_hosts : 1, nhd = o->ndeny_hosts ? o->ndeny_hosts : 1;
    int max = o->nres * nops * (o->nallow * nha + o->ndeny * nhd + 1);
    delete_acls_request_t req;
    delete_acls_request_init(&req);
    req.filters.a = delete_acls_request_delete_acls_filter_new_array(&a, max);
    req.filters.n = 0;
    for (int r = 0; r < o->nres; r++) {
        if (o->nallow + o->ndeny == 0) {
            /* no principal: every ACL of the resource (that --operation names) */
            for (int k = 0; k < nops; k++) {
                delete_acls_request_delete_acls_filter_t *f = &req.filters.a[req.filters.n++];
                f->resource_type_filter = o->res[r].type;
                f->resource_name_filter = KSTR(o->res[r].name);
                f->pattern_type_filter = (int8_t)o->pattern;
                f->principal_filter = KSTR_NULL;
                f->host_filter = KSTR_NULL;
                f->operation = o->nops ? o->ops[k] : ANY;
                f->permission_type = ANY;
            }
            continue;
        }
        for (int perm = DENY; perm <= ALLOW; perm++) {
            const char *const *ps = perm == ALLOW ? o->allow : o->deny;
            int np = perm == ALLOW ? o->nallow : o->ndeny;
            const char *const *hs = perm == ALLOW ? o->allow_hosts : o->deny_hosts;
            int nh = perm == ALLOW ? o->nallow_hosts : o->ndeny_hosts;
            for (int p = 0; p < np; p++)
                for (int h = 0; h < (nh ? nh : 1); h++)
                    for (int k = 0; k < nops; k++) {
                        delete_acls_request_delete_acls_filter_t *f = &req.filters.a[req.filters.n++];
                        f->resource_type_filter = o->res[r].type;
                        f->resource_name_filter = KSTR(o->res[r].name);
                        f->pattern_type_filter = (int8_t)o->pattern;
                        f->principal_filter = KSTR(ps[p]);
                        f->host_filter = KSTR(nh ? hs[h] : "*");
                        f->operation = o->nops ? o->ops[k] : ANY;
                        f->permission_type = (int8_t)perm;
                    }
        }
    }
    struct kc_response resp;
    rc = kc_call(c, conn, KAPI_DELETE_ACLS, &req, &resp);
    if (rc) {
        arena_free(&a);
        return rc;
    }
    const delete_acls_response_t *m = resp.msg;
    for (int32_t i = 0; i < m->filter_results.n; i++) {
        const delete_acls_response_delete_acls_filter_result_t *fr = &m->filter_results.a[i];
        if (fr->error_code) {
            if (!rc)
                rc = entry_error(c, fr->error_code, fr->error_message);
            continue;
        }
        for (int32_t k = 0; k < fr->matching_acls.n; k++) {
            const delete_acls_response_delete_acls_matching_acl_t *x = &fr->matching_acls.a[k];
            if (x->error_code) {
                if (!rc)
                    rc = entry_error(c, x->error_code, x->error_message);
                continue;
            }
            printf("Removed ACL for resource `ResourcePattern(resourceType=%s, name=%.*s, patternType=%s)`:\n",
                   kacl_resource_type_name(x->resource_type), (int)x->resource_name.len, x->resource_name.p,
                   kacl_pattern_type_name(x->pattern_type));
            print_entry(x->principal, x->host, x->operation, x->permission_type);
        }
    }
    kc_response_free(&resp);
    arena_free(&a);
    return rc;
}

static int parse_any(int argc, char **argv, void *o, struct global_opts *g, char *err, size_t n)
{
    return parse(argc, argv, o, g, err, n);
}
static int run_any(struct kc_client *c, void *v)
{
    const struct acls_opts *o = v;
    return !strcmp(o->action, "list")     ? do_list(c, o)
           : !strcmp(o->action, "create") ? do_create(c, o)
                                          : do_delete(c, o);
}

int cmd_acls(int argc, char **argv, const struct global_opts *g)
{
    static const struct kc_command cmd = {"acls", acls_usage, parse_any, run_any, NULL};
    struct acls_opts o;
    return kc_command_main(&cmd, &o, argc, argv, g);
}
