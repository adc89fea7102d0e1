/* samsactl quotas describe|alter: see quotas.h.
 *
 *   samsactl quotas describe [--entity-type users|clients|ips
 *                             [--entity-name NAME | --entity-default]]...
 *   samsactl quotas alter --entity-type users|clients|ips
 *                         (--entity-name NAME | --entity-default)
 *                         [--entity-type clients ...]
 *                         [--add-config k=v[,k=v...]] [--delete-config k[,k...]]
 *                         [--validate-only]
 *
 * As kafka-configs.sh: an entity is one type, or users with clients;
 * each --entity-type takes the --entity-name or --entity-default after
 * it. describe with types lists the entities of exactly those types
 * (only the named or default ones where a name or default is given);
 * without, every entity. Lines as kafka-configs.sh prints them: "Quota
 * configs for user-principal 'alice', client-id 'app' are
 * producer_byte_rate=1024.0". */
#include "quotas.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "proto/gen/alter_client_quotas_request.h"
#include "proto/gen/alter_client_quotas_response.h"
#include "proto/gen/describe_client_quotas_request.h"
#include "proto/gen/describe_client_quotas_response.h"
#include "proto/kerr.h"

enum { OPT_ENTITY_TYPE = 1, OPT_ENTITY_NAME, OPT_ENTITY_DEFAULT, OPT_ADD_CONFIG, OPT_DELETE_CONFIG, OPT_VALIDATE_ONLY };

static const struct opt_def quotas_defs[] = {
    {"entity-type", true, OPT_ENTITY_TYPE},
    {"entity-name", true, OPT_ENTITY_NAME},
    {"entity-default", false, OPT_ENTITY_DEFAULT},
    {"add-config", true, OPT_ADD_CONFIG},
    {"delete-config", true, OPT_DELETE_CONFIG},
    {"validate-only", false, OPT_VALIDATE_ONLY},
    {NULL, false, 0},
};

static void quotas_usage(FILE *f)
{
    fputs("Usage: samsactl quotas describe [--entity-type users|clients|ips [--entity-name NAME | "
          "--entity-default]]...\n"
          "       samsactl quotas alter --entity-type users|clients|ips (--entity-name NAME | --entity-default)\n"
          "                             [--entity-type clients (--entity-name NAME | --entity-default)]\n"
          "                             [--add-config k=v[,k=v...]] [--delete-config k[,k...]] [--validate-only]\n"
          "\n"
          "Client quotas, stored in the cluster's metadata (AlterClientQuotas): producer_byte_rate,\n"
          "consumer_byte_rate, request_percentage, controller_mutation_rate (users, clients),\n"
          "connection_creation_rate (ips).\n",
          f);
}

#define MAX_TYPES 3
#define MAX_OPS 16

struct qtype {
    const char *type;  /* Kafka's entity type: user, client-id, ip */
    const char *name;  /* NULL with is_default: the default entity */
    bool named, is_default;
};

struct quotas_opts {
    const char *action;
    struct qtype t[MAX_TYPES];
    int nt;
    char *add_key[MAX_OPS];
    double add_val[MAX_OPS];
    int nadd;
    char *del_key[MAX_OPS];
    int ndel;
    bool validate_only;
};

static const char *entity_type_of(const char *s)
{
    if (!strcmp(s, "users") || !strcmp(s, "user"))
        return "user";
    if (!strcmp(s, "clients") || !strcmp(s, "client-id"))
        return "client-id";
    if (!strcmp(s, "ips") || !strcmp(s, "ip"))
        return "ip";
    return NULL;
}

/* Splits a comma list in place (the copy is the caller's). */
static int split(char *s, char **out, int max)
{
    int n = 0;
    for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
        if (n == max)
            return -1;
        out[n++] = tok;
    }
    return n;
}

static int parse(int argc, char **argv, struct quotas_opts *o, struct global_opts *g, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    if (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")))
        return ARGS_HELP;
    if (argc < 1 || (strcmp(argv[0], "describe") && strcmp(argv[0], "alter"))) {
        snprintf(err, errlen, "expected 'describe' or 'alter'");
        return ARGS_ERROR;
    }
    o->action = argv[0];
    struct opt_iter it;
    opt_iter_init(&it, argc - 1, argv + 1, quotas_defs, err, errlen);
    int id;
    while ((id = opt_next(&it)) > 0) {
        if (global_opt_apply(g, id, it.arg))
            continue;
        switch (id) {
        case OPT_HELP: return ARGS_HELP;
        case OPT_ENTITY_TYPE: {
            const char *t = entity_type_of(it.arg);
            if (!t) {
                snprintf(err, errlen, "unknown --entity-type '%s' (users, clients, ips)", it.arg);
                return ARGS_ERROR;
            }
            if (o->nt == MAX_TYPES) {
                snprintf(err, errlen, "too many --entity-type");
                return ARGS_ERROR;
            }
            o->t[o->nt++] = (struct qtype){t, NULL, false, false};
            break;
        }
        case OPT_ENTITY_NAME:
        case OPT_ENTITY_DEFAULT: {
            if (o->nt == 0 || o->t[o->nt - 1].named || o->t[o->nt - 1].is_default) {
                snprintf(err, errlen, "--%s must follow its --entity-type", it.name);
                return ARGS_ERROR;
            }
            struct qtype *q = &o->t[o->nt - 1];
            if (id == OPT_ENTITY_NAME) {
                q->named = true;
                q->name = it.arg;
            } else {
                q->is_default = true;
            }
            break;
        }
        case OPT_ADD_CONFIG: {
            char *list[MAX_OPS];
            int n = split(strdup(it.arg), list, MAX_OPS);
            if (n < 0 || o->nadd + n > MAX_OPS) {
                snprintf(err, errlen, "at most %d configs", MAX_OPS);
                return ARGS_ERROR;
            }
            for (int i = 0; i < n; i++) {
                char *eq = strchr(list[i], '=');
                char *end = NULL;
                double v = eq ? strtod(eq + 1, &end) : 0;
                if (!eq || end == eq + 1 || *end || !isfinite(v)) {
                    snprintf(err, errlen, "invalid --add-config entry '%s' (want key=number)", list[i]);
                    return ARGS_ERROR;
                }
                *eq = 0;
                o->add_key[o->nadd] = list[i];
                o->add_val[o->nadd++] = v;
            }
            break;
        }
        case OPT_DELETE_CONFIG: {
            char *list[MAX_OPS];
            int n = split(strdup(it.arg), list, MAX_OPS);
            if (n < 0 || o->ndel + n > MAX_OPS) {
                snprintf(err, errlen, "at most %d configs", MAX_OPS);
                return ARGS_ERROR;
            }
            for (int i = 0; i < n; i++)
                o->del_key[o->ndel++] = list[i];
            break;
        }
        case OPT_VALIDATE_ONLY: o->validate_only = true; break;
        default: snprintf(err, errlen, "option '--%s' is not valid here", it.name); return ARGS_ERROR;
        }
    }
    if (id < 0)
        return ARGS_ERROR;
    bool alter = !strcmp(o->action, "alter");
    if (alter) {
        if (o->nt == 0) {
            snprintf(err, errlen, "quotas alter needs --entity-type");
            return ARGS_ERROR;
        }
        for (int i = 0; i < o->nt; i++)
            if (!o->t[i].named && !o->t[i].is_default) {
                snprintf(err, errlen, "--entity-type %s needs --entity-name or --entity-default", o->t[i].type);
                return ARGS_ERROR;
            }
        if (o->nadd + o->ndel == 0) {
            snprintf(err, errlen, "quotas alter needs --add-config or --delete-config");
            return ARGS_ERROR;
        }
    } else if (o->nadd + o->ndel > 0 || o->validate_only) {
        snprintf(err, errlen, "--add-config, --delete-config and --validate-only are for quotas alter");
        return ARGS_ERROR;
    }
    return ARGS_OK;
}

/* Kafka's ConfigCommand names: "user-principal 'alice'", "the default
 * client-id". */
static void print_entity_name(const char *type, kstr_t name, bool first)
{
    const char *what = !strcmp(type, "user") ? "user-principal" : type;
    if (name.len < 0)
        printf("%sthe default %s", first ? "" : ", ", what);
    else
        printf("%s%s '%.*s'", first ? "" : ", ", what, (int)name.len, name.p);
}

static int do_alter(struct kc_client *c, const struct quotas_opts *o)
{
    struct kc_conn *conn;
    int rc = kc_any_conn(c, &conn);
    if (rc)
        return rc;
    alter_client_quotas_request_t req;
    alter_client_quotas_request_init(&req);
    alter_client_quotas_request_entry_data_t entry;
    alter_client_quotas_request_entity_data_t ent[MAX_TYPES];
    alter_client_quotas_request_op_data_t ops[2 * MAX_OPS];
    for (int i = 0; i < o->nt; i++) {
        ent[i].entity_type = KSTR(o->t[i].type);
        ent[i].entity_name = o->t[i].named ? KSTR(o->t[i].name) : KSTR_NULL;
    }
    int nops = 0;
    for (int i = 0; i < o->nadd; i++)
        ops[nops++] = (alter_client_quotas_request_op_data_t){KSTR(o->add_key[i]), o->add_val[i], false};
    for (int i = 0; i < o->ndel; i++)
        ops[nops++] = (alter_client_quotas_request_op_data_t){KSTR(o->del_key[i]), 0, true};
    entry.entity.a = ent;
    entry.entity.n = o->nt;
    entry.ops.a = ops;
    entry.ops.n = nops;
    req.entries.a = &entry;
    req.entries.n = 1;
    req.validate_only = o->validate_only;
    struct kc_response resp;
    rc = kc_call(c, conn, KAPI_ALTER_CLIENT_QUOTAS, &req, &resp);
    if (rc)
        return rc;
    const alter_client_quotas_response_t *m = resp.msg;
    for (int32_t i = 0; i < m->entries.n && !rc; i++) {
        const alter_client_quotas_response_entry_data_t *r = &m->entries.a[i];
        if (r->error_code)
            rc = kc_fail(c, r->error_code, "%.*s", r->error_message.len > 0 ? (int)r->error_message.len : 0,
                         r->error_message.len > 0 ? r->error_message.p : "");
    }
    if (!rc) {
        printf("%s quota configs for ", o->validate_only ? "Validated" : "Completed updating");
        for (int i = 0; i < o->nt; i++)
            print_entity_name(o->t[i].type, ent[i].entity_name, i == 0);
        printf(".\n");
    }
    kc_response_free(&resp);
    return rc;
}

static int do_describe(struct kc_client *c, const struct quotas_opts *o)
{
    struct kc_conn *conn;
    int rc = kc_any_conn(c, &conn);
    if (rc)
        return rc;
    describe_client_quotas_request_t req;
    describe_client_quotas_request_init(&req);
    describe_client_quotas_request_component_data_t comp[MAX_TYPES];
    for (int i = 0; i < o->nt; i++) {
        comp[i].entity_type = KSTR(o->t[i].type);
        comp[i].match_type = o->t[i].named ? 0 : o->t[i].is_default ? 1 : 2;
        comp[i].match = o->t[i].named ? KSTR(o->t[i].name) : KSTR_NULL;
    }
    req.components.a = comp;
    req.components.n = o->nt;
    req.strict = o->nt > 0;
    struct kc_response resp;
    rc = kc_call(c, conn, KAPI_DESCRIBE_CLIENT_QUOTAS, &req, &resp);
    if (rc)
        return rc;
    const describe_client_quotas_response_t *m = resp.msg;
    if (m->error_code) {
        rc = kc_fail(c, m->error_code, "%.*s", m->error_message.len > 0 ? (int)m->error_message.len : 0,
                     m->error_message.len > 0 ? m->error_message.p : "");
        kc_response_free(&resp);
        return rc;
    }
    for (int32_t i = 0; i < m->entries.n; i++) {
        const describe_client_quotas_response_entry_data_t *e = &m->entries.a[i];
        printf("Quota configs for ");
        /* user before client-id, as Kafka prints them */
        static const char *const order[] = {"user", "client-id", "ip"};
        bool first = true;
        for (int t = 0; t < 3; t++)
            for (int32_t k = 0; k < e->entity.n; k++)
                if (kstr_eqc(e->entity.a[k].entity_type, order[t])) {
                    print_entity_name(order[t], e->entity.a[k].entity_name, first);
                    first = false;
                }
        printf(" are ");
        for (int32_t k = 0; k < e->values.n; k++) {
            double v = e->values.a[k].value;
            /* Java's Double.toString for the values quotas take */
            if (v == floor(v) && fabs(v) < 1e7)
                printf("%s%.*s=%.1f", k ? ", " : "", (int)e->values.a[k].key.len, e->values.a[k].key.p, v);
            else
                printf("%s%.*s=%g", k ? ", " : "", (int)e->values.a[k].key.len, e->values.a[k].key.p, v);
        }
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
    const struct quotas_opts *o = v;
    return !strcmp(o->action, "describe") ? do_describe(c, o) : do_alter(c, o);
}

int cmd_quotas(int argc, char **argv, const struct global_opts *g)
{
    static const struct kc_command cmd = {"quotas", quotas_usage, parse_any, run_any, NULL};
    struct quotas_opts o;
    return kc_command_main(&cmd, &o, argc, argv, g);
}
