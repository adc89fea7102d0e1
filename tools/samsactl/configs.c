/* samsactl configs describe|alter: see configs.h.
 *
 *   samsactl configs describe (--broker ID | --broker-defaults | --topic NAME) [--all]
 *   samsactl configs alter (--broker ID | --broker-defaults | --topic NAME)
 *                          [--add-config k=v[,k=v...]] [--delete-config k[,k...]] [--validate-only]
 *
 * kafka-configs.sh's spellings work too: --describe/--alter for the
 * action, --entity-type brokers|topics with --entity-name NAME or
 * --entity-default. A broker's own configs are asked of that broker (as
 * Kafka's admin client sends them), the defaults and topics of any.
 * Lines as kafka-configs.sh prints them: "Dynamic configs for broker 1
 * are:" then "  key=value sensitive=false synonyms={SOURCE:key=value,
 * ...}"; without --all only the configs set at the entity's own level
 * (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG or
 * DYNAMIC_TOPIC_CONFIG) are listed. */
#include "configs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "proto/gen/describe_configs_request.h"
#include "proto/gen/describe_configs_response.h"
#include "proto/gen/incremental_alter_configs_request.h"
#include "proto/gen/incremental_alter_configs_response.h"
#include "proto/kerr.h"

/* Kafka's ConfigResource.Type and ConfigEntry.ConfigSource ids. */
#define RES_TOPIC 2
#define RES_BROKER 4
#define OP_SET 0
#define OP_DELETE 1

enum {
    OPT_DESCRIBE = 1,
    OPT_ALTER,
    OPT_BROKER,
    OPT_BROKER_DEFAULTS,
    OPT_TOPIC,
    OPT_ENTITY_TYPE,
    OPT_ENTITY_NAME,
    OPT_ENTITY_DEFAULT,
    OPT_ALL,
    OPT_ADD_CONFIG,
    OPT_DELETE_CONFIG,
    OPT_VALIDATE_ONLY,
};

static const struct opt_def configs_defs[] = {
    {"describe", false, OPT_DESCRIBE},
    {"alter", false, OPT_ALTER},
    {"broker", true, OPT_BROKER},
    {"broker-defaults", false, OPT_BROKER_DEFAULTS},
    {"topic", true, OPT_TOPIC},
    {"entity-type", true, OPT_ENTITY_TYPE},
    {"entity-name", true, OPT_ENTITY_NAME},
    {"entity-default", false, OPT_ENTITY_DEFAULT},
    {"all", false, OPT_ALL},
    {"add-config", true, OPT_ADD_CONFIG},
    {"delete-config", true, OPT_DELETE_CONFIG},
    {"validate-only", false, OPT_VALIDATE_ONLY},
    {NULL, false, 0},
};

static void configs_usage(FILE *f)
{
    fputs("Usage: samsactl configs describe (--broker ID | --broker-defaults | --topic NAME) [--all]\n"
          "       samsactl configs alter (--broker ID | --broker-defaults | --topic NAME)\n"
          "                              [--add-config k=v[,k=v...]] [--delete-config k[,k...]] [--validate-only]\n"
          "\n"
          "Dynamic configs, as kafka-configs.sh: a broker's own (--broker ID), the defaults of every\n"
          "broker (--broker-defaults) and a topic's (--topic NAME); kafka-configs.sh's --entity-type\n"
          "brokers|topics with --entity-name or --entity-default work too. describe lists the configs\n"
          "set at that level (--all: every config, with its source). A value holding commas goes in\n"
          "brackets: --add-config 'k=[a,b]'.\n",
          f);
}

void configs_opts_free(struct configs_opts *o) { arena_free(&o->arena); }

/* kafka-configs.sh's --add-config list: entries at commas outside [ ];
 * a value wholly in brackets loses them. */
static int add_pairs(struct configs_opts *o, const char *list, char *err, size_t errlen)
{
    const char *p = list;
    while (*p) {
        const char *start = p;
        int depth = 0;
        while (*p && (*p != ',' || depth > 0)) {
            if (*p == '[')
                depth++;
            else if (*p == ']' && depth > 0)
                depth--;
            p++;
        }
        size_t len = (size_t)(p - start);
        if (*p == ',')
            p++;
        if (len == 0)
            continue;
        char *item = arena_alloc(&o->arena, len + 1);
        memcpy(item, start, len);
        item[len] = 0;
        char *eq = strchr(item, '=');
        if (!eq || eq == item) {
            snprintf(err, errlen, "invalid --add-config entry '%s' (want key=value)", item);
            return -1;
        }
        *eq = 0;
        char *v = eq + 1;
        size_t vl = strlen(v);
        if (vl >= 2 && v[0] == '[' && v[vl - 1] == ']') {
            v[vl - 1] = 0;
            v++;
        }
        if (o->nset == CONFIGS_MAX_OPS) {
            snprintf(err, errlen, "at most %d configs", CONFIGS_MAX_OPS);
            return -1;
        }
        o->set_key[o->nset] = item;
        o->set_value[o->nset++] = v;
    }
    return 0;
}

static int del_keys(struct configs_opts *o, const char *list, char *err, size_t errlen)
{
    size_t n = strlen(list);
    char *copy = arena_alloc(&o->arena, n + 1);
    memcpy(copy, list, n + 1);
    for (char *save = NULL, *k = strtok_r(copy, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
        if (o->ndel == CONFIGS_MAX_OPS) {
            snprintf(err, errlen, "at most %d configs", CONFIGS_MAX_OPS);
            return -1;
        }
        o->del_key[o->ndel++] = k;
    }
    return 0;
}

static bool set_entity(struct configs_opts *o, int8_t type, const char *name, char *err, size_t errlen)
{
    if (o->resource && (o->resource != type || (o->name && name && strcmp(o->name, name)))) {
        snprintf(err, errlen, "one entity at a time");
        return false;
    }
    o->resource = type;
    if (name)
        o->name = name;
    return true;
}

int configs_parse_args(int argc, char **argv, struct configs_opts *o, struct global_opts *g, char *err,
                       size_t errlen)
{
    memset(o, 0, sizeof *o);
    arena_init(&o->arena);
    int action = 0; /* OPT_DESCRIBE or OPT_ALTER */
    if (argc >= 1 && (!strcmp(argv[0], "describe") || !strcmp(argv[0], "alter"))) {
        action = !strcmp(argv[0], "describe") ? OPT_DESCRIBE : OPT_ALTER;
        argc--;
        argv++;
    }
    struct opt_iter it;
    opt_iter_init(&it, argc, argv, configs_defs, err, errlen);
    bool entity_type_given = false, entity_named = false;
    int id;
    while ((id = opt_next(&it)) > 0) {
        if (global_opt_apply(g, id, it.arg))
            continue;
        switch (id) {
        case OPT_HELP: return ARGS_HELP;
        case OPT_DESCRIBE:
        case OPT_ALTER:
            if (action && action != id) {
                snprintf(err, errlen, "describe or alter, not both");
                return ARGS_ERROR;
            }
            action = id;
            break;
        case OPT_BROKER: {
            int32_t bid;
            if (!parse_i32(it.arg, 0, INT32_MAX, &bid)) {
                snprintf(err, errlen, "--broker wants a broker id, not '%s'", it.arg);
                return ARGS_ERROR;
            }
            if (!set_entity(o, RES_BROKER, it.arg, err, errlen))
                return ARGS_ERROR;
            break;
        }
        case OPT_BROKER_DEFAULTS:
            if (!set_entity(o, RES_BROKER, "", err, errlen))
                return ARGS_ERROR;
            break;
        case OPT_TOPIC:
            if (!*it.arg) {
                snprintf(err, errlen, "--topic wants a topic name");
                return ARGS_ERROR;
            }
            if (!set_entity(o, RES_TOPIC, it.arg, err, errlen))
                return ARGS_ERROR;
            break;
        case OPT_ENTITY_TYPE:
            if (!strcmp(it.arg, "brokers") || !strcmp(it.arg, "broker")) {
                if (!set_entity(o, RES_BROKER, NULL, err, errlen))
                    return ARGS_ERROR;
            } else if (!strcmp(it.arg, "topics") || !strcmp(it.arg, "topic")) {
                if (!set_entity(o, RES_TOPIC, NULL, err, errlen))
                    return ARGS_ERROR;
            } else {
                snprintf(err, errlen,
                         "--entity-type %s: samsactl configs takes brokers and topics (client quotas: samsactl "
                         "quotas; SCRAM users: samsactl users)",
                         it.arg);
                return ARGS_ERROR;
            }
            entity_type_given = true;
            break;
        case OPT_ENTITY_NAME:
        case OPT_ENTITY_DEFAULT:
            if (entity_named) {
                snprintf(err, errlen, "one --entity-name or --entity-default");
                return ARGS_ERROR;
            }
            entity_named = true;
            o->name = id == OPT_ENTITY_NAME ? it.arg : "";
            break;
        case OPT_ALL: o->all = true; break;
        case OPT_ADD_CONFIG:
            if (add_pairs(o, it.arg, err, errlen) < 0)
                return ARGS_ERROR;
            break;
        case OPT_DELETE_CONFIG:
            if (del_keys(o, it.arg, err, errlen) < 0)
                return ARGS_ERROR;
            break;
        case OPT_VALIDATE_ONLY: o->validate_only = true; break;
        default: snprintf(err, errlen, "option '--%s' is not valid here", it.name); return ARGS_ERROR;
        }
    }
    if (id < 0)
        return ARGS_ERROR;
    if (!action) {
        snprintf(err, errlen, "expected 'describe' or 'alter'");
        return ARGS_ERROR;
    }
    o->alter = action == OPT_ALTER;
    if (entity_named && !entity_type_given) {
        snprintf(err, errlen, "--entity-name and --entity-default need --entity-type");
        return ARGS_ERROR;
    }
    if (!o->resource || !o->name) {
        snprintf(err, errlen, "which entity: --broker ID, --broker-defaults or --topic NAME");
        return ARGS_ERROR;
    }
    if (o->resource == RES_TOPIC && !*o->name) {
        snprintf(err, errlen, "topics have no default entity");
        return ARGS_ERROR;
    }
    if (o->resource == RES_BROKER && *o->name) {
        int32_t bid;
        if (!parse_i32(o->name, 0, INT32_MAX, &bid)) {
            snprintf(err, errlen, "a broker is named by its id, not '%s'", o->name);
            return ARGS_ERROR;
        }
    }
    if (o->alter) {
        if (o->nset + o->ndel == 0) {
            snprintf(err, errlen, "configs alter needs --add-config or --delete-config");
            return ARGS_ERROR;
        }
        if (o->all) {
            snprintf(err, errlen, "--all is for configs describe");
            return ARGS_ERROR;
        }
    } else if (o->nset + o->ndel > 0 || o->validate_only) {
        snprintf(err, errlen, "--add-config, --delete-config and --validate-only are for configs alter");
        return ARGS_ERROR;
    }
    return ARGS_OK;
}

/* "broker 1", "topic orders"; the broker defaults read differently. */
static void entity_text(const struct configs_opts *o, char *out, size_t n)
{
    if (o->resource == RES_BROKER && !*o->name)
        snprintf(out, n, "brokers in the cluster");
    else
        snprintf(out, n, "%s %s", o->resource == RES_BROKER ? "broker" : "topic", o->name);
}

static const char *source_name(int8_t s)
{
    static const char *const names[] = {
        "UNKNOWN",          "DYNAMIC_TOPIC_CONFIG", "DYNAMIC_BROKER_CONFIG",        "DYNAMIC_DEFAULT_BROKER_CONFIG",
        "STATIC_BROKER_CONFIG", "DEFAULT_CONFIG",   "DYNAMIC_BROKER_LOGGER_CONFIG", "CLIENT_METRICS_CONFIG",
        "GROUP_CONFIG",
    };
    return s >= 0 && s < (int8_t)(sizeof names / sizeof names[0]) ? names[s] : "UNKNOWN";
}

/* The source that describe lists without --all. */
static int8_t own_source(const struct configs_opts *o)
{
    if (o->resource == RES_TOPIC)
        return 1;
    return *o->name ? 2 : 3;
}

/* The connection a request about o's entity goes to: a broker's own
 * configs live on (and are checked by) that broker. */
static int entity_conn(struct kc_client *c, const struct configs_opts *o, struct kc_conn **out)
{
    if (o->resource != RES_BROKER || !*o->name)
        return kc_any_conn(c, out);
    int rc = kc_metadata(c, NULL, 0, false);
    if (rc)
        return rc;
    return kc_node_conn(c, (int32_t)atoi(o->name), out);
}

static void print_value(kstr_t v, bool sensitive)
{
    if (sensitive || v.len < 0)
        printf("null");
    else
        printf("%.*s", (int)v.len, v.p);
}

static int do_describe(struct kc_client *c, const struct configs_opts *o)
{
    struct kc_conn *conn;
    int rc = entity_conn(c, o, &conn);
    if (rc)
        return rc;
    struct arena a = ARENA_INIT;
    describe_configs_request_t req;
    describe_configs_request_init(&req);
    req.resources.a = describe_configs_request_describe_configs_resource_new_array(&a, 1);
    req.resources.n = 1;
    req.resources.a[0].resource_type = o->resource;
    req.resources.a[0].resource_name = KSTR(o->name);
    req.resources.a[0].configuration_keys.a = NULL;
    req.resources.a[0].configuration_keys.n = -1; /* all */
    req.include_synonyms = true;
    struct kc_response resp;
    rc = kc_call(c, conn, KAPI_DESCRIBE_CONFIGS, &req, &resp);
    arena_free(&a);
    if (rc)
        return rc;
    const describe_configs_response_t *m = resp.msg;
    if (m->results.n != 1) {
        kc_response_free(&resp);
        return kc_fail(c, KERR_UNKNOWN_SERVER_ERROR, "DescribeConfigs answered %d resources for one", m->results.n);
    }
    const describe_configs_response_describe_configs_result_t *r = &m->results.a[0];
    char what[300];
    entity_text(o, what, sizeof what);
    if (r->error_code) {
        rc = r->error_message.len > 0
                 ? kc_fail(c, r->error_code, "%.*s", (int)r->error_message.len, r->error_message.p)
                 : kc_fail(c, r->error_code, "%s: %s", what, kc_default_message(r->error_code));
        kc_response_free(&resp);
        return rc;
    }
    if (o->resource == RES_BROKER && !*o->name)
        printf("Default configs for %s are:\n", what);
    else
        printf("%s configs for %s are:\n", o->all ? "All" : "Dynamic", what);
    int8_t own = own_source(o);
    for (int32_t i = 0; i < r->configs.n; i++) {
        const describe_configs_response_describe_configs_resource_result_t *e = &r->configs.a[i];
        if (!o->all && e->config_source != own)
            continue;
        printf("  %.*s=", e->name.len > 0 ? (int)e->name.len : 0, e->name.p);
        print_value(e->value, e->is_sensitive);
        printf(" sensitive=%s synonyms={", e->is_sensitive ? "true" : "false");
        for (int32_t k = 0; k < e->synonyms.n; k++) {
            const describe_configs_response_describe_configs_synonym_t *s = &e->synonyms.a[k];
            printf("%s%s:%.*s=", k ? ", " : "", source_name(s->source), s->name.len > 0 ? (int)s->name.len : 0,
                   s->name.p);
            print_value(s->value, e->is_sensitive);
        }
        printf("}\n");
    }
    kc_response_free(&resp);
    return 0;
}

static int do_alter(struct kc_client *c, const struct configs_opts *o)
{
    struct kc_conn *conn;
    int rc = entity_conn(c, o, &conn);
    if (rc)
        return rc;
    if (kc_version(conn, KAPI_INCREMENTAL_ALTER_CONFIGS) < 0)
        return kc_fail(c, KERR_UNSUPPORTED_VERSION, "broker %s:%d does not support IncrementalAlterConfigs",
                       conn->host, conn->port);
    struct arena a = ARENA_INIT;
    incremental_alter_configs_request_t req;
    incremental_alter_configs_request_init(&req);
    req.validate_only = o->validate_only;
    req.resources.a = incremental_alter_configs_request_alter_configs_resource_new_array(&a, 1);
    req.resources.n = 1;
    incremental_alter_configs_request_alter_configs_resource_t *r = &req.resources.a[0];
    r->resource_type = o->resource;
    r->resource_name = KSTR(o->name);
    int nops = o->nset + o->ndel;
    r->configs.a = incremental_alter_configs_request_alterable_config_new_array(&a, nops);
    r->configs.n = nops;
    for (int k = 0; k < o->nset; k++) {
        r->configs.a[k].name = KSTR(o->set_key[k]);
        r->configs.a[k].config_operation = OP_SET;
        r->configs.a[k].value = KSTR(o->set_value[k]);
    }
    for (int k = 0; k < o->ndel; k++) {
        r->configs.a[o->nset + k].name = KSTR(o->del_key[k]);
        r->configs.a[o->nset + k].config_operation = OP_DELETE;
        r->configs.a[o->nset + k].value = KSTR_NULL;
    }
    struct kc_response resp;
    rc = kc_call(c, conn, KAPI_INCREMENTAL_ALTER_CONFIGS, &req, &resp);
    arena_free(&a);
    if (rc)
        return rc;
    const incremental_alter_configs_response_t *m = resp.msg;
    char what[300];
    entity_text(o, what, sizeof what);
    for (int32_t i = 0; i < m->responses.n && rc == 0; i++) {
        const incremental_alter_configs_response_alter_configs_resource_response_t *x = &m->responses.a[i];
        if (!x->error_code)
            continue;
        rc = x->error_message.len > 0
                 ? kc_fail(c, x->error_code, "%.*s", (int)x->error_message.len, x->error_message.p)
                 : kc_fail(c, x->error_code, "%s: %s", what, kc_default_message(x->error_code));
    }
    kc_response_free(&resp);
    if (!rc)
        printf("%s %sconfig for %s.\n", o->validate_only ? "Validated" : "Completed updating",
               o->resource == RES_BROKER && !*o->name ? "default " : "", what);
    return rc;
}

static int parse_any(int argc, char **argv, void *o, struct global_opts *g, char *err, size_t n)
{
    return configs_parse_args(argc, argv, o, g, err, n);
}
static int run_any(struct kc_client *c, void *v)
{
    const struct configs_opts *o = v;
    return o->alter ? do_alter(c, o) : do_describe(c, o);
}
static void free_any(void *o) { configs_opts_free(o); }

int cmd_configs(int argc, char **argv, const struct global_opts *g)
{
    static const struct kc_command cmd = {"configs", configs_usage, parse_any, run_any, free_any};
    struct configs_opts o;
    return kc_command_main(&cmd, &o, argc, argv, g);
}
