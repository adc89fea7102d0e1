/* samsactl cluster (see cluster.h).
 *
 * cluster plugins: plugins are a per-node choice (plugins=, plugin.dir),
 * so every broker is asked for its own: one DescribeConfigs of the BROKER
 * resource, sent to that broker as Kafka's admin client does for broker
 * resources, naming only samsa.plugins.loaded. Brokers are listed in
 * node id order. */
#include "cluster.h"

#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "quorum.h"
#include "proto/gen/describe_configs_request.h"
#include "proto/gen/describe_configs_response.h"
#include "proto/kerr.h"
#include "util/buf.h"

#define RESOURCE_TYPE_BROKER 4 /* Kafka's ConfigResource.Type.BROKER */

/* ---- the value ---- */

int cluster_plugins_parse(char *value, struct cluster_plugin **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!value || !*value)
        return 0;
    int n = 1;
    for (const char *p = value; *p; p++)
        n += *p == ',';
    struct cluster_plugin *v = xcalloc((size_t)n, sizeof *v);
    char *entry = value;
    for (int i = 0; i < n; i++) {
        char *next = strchr(entry, ',');
        if (next)
            *next++ = '\0';
        /* the first three ':' end name, version and ABI; the
         * capabilities hold ':' themselves */
        char *f[4] = {entry, NULL, NULL, NULL};
        for (int k = 1; k < 4; k++) {
            char *colon = strchr(f[k - 1], ':');
            if (!colon || colon == entry) {
                snprintf(err, errlen, "malformed %s entry '%s'", CLUSTER_PLUGINS_KEY, entry);
                free(v);
                return -1;
            }
            *colon = '\0';
            f[k] = colon + 1;
        }
        for (char *p = f[3]; *p; p++)
            if (*p == '+')
                *p = ',';
        v[i] = (struct cluster_plugin){f[0], f[1], f[2], f[3]};
        entry = next;
    }
    *out = v;
    return n;
}

/* ---- options ---- */

enum { OPT_BROKER = 1 };

static const struct opt_def plugins_defs[] = {
    {"broker", true, OPT_BROKER},
    {NULL, false, 0},
};

void cluster_usage(FILE *f)
{
    fputs("Usage: samsactl cluster SUBCOMMAND [options] [--bootstrap-server HOST:PORT[,...]]\n"
          "\n"
          "Subcommands:\n"
          "  plugins [--broker ID]  the plugins each broker loaded (its read-only config\n"
          "                         " CLUSTER_PLUGINS_KEY "): BROKER, NAME, VERSION, ABI,\n"
          "                         CAPABILITIES as samsa --list-plugins shows them;\n"
          "                         --broker ID: only that broker (default: every broker)\n"
          "  describe [--bootstrap-controller HOST:PORT[,...]]\n"
          "                         the cluster id, the active controller and every node:\n"
          "                         endpoint, rack, role in the metadata quorum, fenced or not\n",
          f);
}

int cluster_plugins_parse_args(int argc, char **argv, struct cluster_plugins_opts *o, struct global_opts *g,
                               char *err, size_t errlen)
{
    o->broker = -1;
    struct opt_iter it;
    opt_iter_init(&it, argc, argv, plugins_defs, err, errlen);
    int id;
    while ((id = opt_next(&it)) > 0) {
        if (global_opt_apply(g, id, it.arg))
            continue;
        switch (id) {
        case OPT_HELP:
            return ARGS_HELP;
        case OPT_BROKER:
            if (!parse_i32(it.arg, 0, INT32_MAX, &o->broker)) {
                snprintf(err, errlen, "invalid --broker '%s' (want a node id >= 0)", it.arg);
                return ARGS_ERROR;
            }
            break;
        default:
            snprintf(err, errlen, "option '--%s' is not valid here", it.name);
            return ARGS_ERROR;
        }
    }
    return id < 0 ? ARGS_ERROR : ARGS_OK;
}

/* ---- cluster plugins ---- */

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Prints the rows of one broker. */
static int broker_plugins(struct kc_client *c, int32_t node)
{
    struct kc_conn *conn;
    int rc = kc_node_conn(c, node, &conn);
    if (rc)
        return rc;
    if (kc_version(conn, KAPI_DESCRIBE_CONFIGS) < 0)
        return kc_fail(c, KERR_UNSUPPORTED_VERSION, "broker %d does not support DescribeConfigs", node);
    char name[16];
    snprintf(name, sizeof name, "%d", node);
    struct arena a = ARENA_INIT;
    describe_configs_request_t req;
    describe_configs_request_init(&req);
    req.resources.a = describe_configs_request_describe_configs_resource_new_array(&a, 1);
    req.resources.n = 1;
    req.resources.a[0].resource_type = RESOURCE_TYPE_BROKER;
    req.resources.a[0].resource_name = KSTR(name);
    kstr_t key = KSTR_LIT(CLUSTER_PLUGINS_KEY);
    req.resources.a[0].configuration_keys.a = &key;
    req.resources.a[0].configuration_keys.n = 1;
    struct kc_response r;
    rc = kc_call(c, conn, KAPI_DESCRIBE_CONFIGS, &req, &r);
    arena_free(&a);
    if (rc)
        return rc;
    const describe_configs_response_t *m = r.msg;
    const describe_configs_response_describe_configs_result_t *res = NULL;
    for (int32_t i = 0; i < m->results.n; i++)
        if (kstr_eqc(m->results.a[i].resource_name, name))
            res = &m->results.a[i];
    const describe_configs_response_describe_configs_resource_result_t *e = NULL;
    if (!res) {
        rc = kc_fail(c, KERR_UNKNOWN_SERVER_ERROR, "DescribeConfigs answer does not mention broker %d", node);
    } else if (res->error_code) {
        if (res->error_message.len > 0)
            rc = kc_fail(c, res->error_code, "%.*s", (int)res->error_message.len, res->error_message.p);
        else
            rc = kc_fail(c, res->error_code, "broker %d: %s", node, kc_default_message(res->error_code));
    } else {
        for (int32_t i = 0; i < res->configs.n; i++)
            if (kstr_eqc(res->configs.a[i].name, CLUSTER_PLUGINS_KEY))
                e = &res->configs.a[i];
        /* A Kafka broker, or a samsa one from before plugin reporting,
         * knows no such config and leaves it out. */
        if (!e)
            rc = kc_fail(c, KERR_UNSUPPORTED_VERSION,
                         "broker %d does not report %s (not a samsa broker, or an older one)",
                         node, CLUSTER_PLUGINS_KEY);
    }
    if (rc) {
        kc_response_free(&r);
        return rc;
    }
    char *value = xstrndup(e->value.len > 0 ? e->value.p : "", e->value.len > 0 ? (size_t)e->value.len : 0);
    struct cluster_plugin *v;
    char err[512];
    int n = cluster_plugins_parse(value, &v, err, sizeof err);
    if (n < 0)
        rc = kc_fail(c, KERR_UNKNOWN_SERVER_ERROR, "broker %d: %s", node, err);
    for (int i = 0; i < n; i++)
        printf("%-6s %-20s %-10s %-5s %s\n", name, v[i].name, v[i].version[0] ? v[i].version : "-", v[i].abi,
               v[i].caps[0] ? v[i].caps : "-");
    free(v);
    free(value);
    kc_response_free(&r);
    return rc;
}

static int do_plugins(struct kc_client *c, const struct cluster_plugins_opts *o)
{
    int rc = kc_metadata(c, NULL, 0, false);
    if (rc)
        return rc;
    const metadata_response_t *m = kc_meta(c);
    int32_t n = m->brokers.n > 0 ? m->brokers.n : 0;
    int32_t *ids = xcalloc((size_t)n + 1, sizeof *ids);
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++)
        if (o->broker < 0 || m->brokers.a[i].node_id == o->broker)
            ids[k++] = m->brokers.a[i].node_id;
    if (o->broker >= 0 && k == 0) {
        free(ids);
        return kc_fail(c, KERR_BROKER_NOT_AVAILABLE, "broker %d is not in the cluster metadata", o->broker);
    }
    qsort(ids, (size_t)k, sizeof *ids, cmp_i32);
    printf("%-6s %-20s %-10s %-5s %s\n", "BROKER", "NAME", "VERSION", "ABI", "CAPABILITIES");
    for (int32_t i = 0; i < k && rc == 0; i++)
        rc = broker_plugins(c, ids[i]);
    free(ids);
    return rc;
}

static int parse_plugins(int argc, char **argv, void *o, struct global_opts *g, char *err, size_t n)
{
    return cluster_plugins_parse_args(argc, argv, o, g, err, n);
}
static int run_plugins(struct kc_client *c, void *o) { return do_plugins(c, o); }

static int cmd_cluster_plugins(int argc, char **argv, const struct global_opts *g)
{
    static const struct kc_command cmd = {"cluster plugins", cluster_usage, parse_plugins, run_plugins, NULL};
    struct cluster_plugins_opts o;
    return kc_command_main(&cmd, &o, argc, argv, g);
}

static const struct {
    const char *name;
    int (*run)(int argc, char **argv, const struct global_opts *g);
} subcommands[] = {
    {"plugins", cmd_cluster_plugins},
    {"describe", cmd_cluster_describe},
    {NULL, NULL},
};

int cmd_cluster(int argc, char **argv, const struct global_opts *g)
{
    if (argc < 1) {
        fprintf(stderr, "samsactl cluster: a subcommand is required (see samsactl cluster --help)\n");
        return EXIT_USAGE;
    }
    if (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "help") == 0) {
        cluster_usage(stdout);
        return EXIT_OK;
    }
    for (int i = 0; subcommands[i].name; i++)
        if (strcmp(argv[0], subcommands[i].name) == 0)
            return subcommands[i].run(argc - 1, argv + 1, g);
    fprintf(stderr, "samsactl cluster: unknown subcommand '%s' (see samsactl cluster --help)\n", argv[0]);
    return EXIT_USAGE;
}
