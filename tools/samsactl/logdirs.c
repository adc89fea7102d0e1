/* samsactl log-dirs describe: see logdirs.h.
 *
 *   samsactl log-dirs describe [--broker-list 1,2] [--topic-list a,b] [--json]
 *
 * Asks each broker (all in the metadata, or those listed) with
 * DescribeLogDirs. The default output is two tables: the log dirs (with
 * their volume's total and usable bytes, or the error), then the
 * partitions in them. --json prints what kafka-log-dirs.sh --describe
 * prints, one line of {"brokers":[...],"version":1}. */
#include "logdirs.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "proto/gen/describe_log_dirs_request.h"
#include "proto/gen/describe_log_dirs_response.h"
#include "proto/kerr.h"
#include "table.h"
#include "util/buf.h"

enum { OPT_BROKER_LIST = 1, OPT_TOPIC_LIST, OPT_JSON };

static const struct opt_def logdirs_defs[] = {
    {"broker-list", true, OPT_BROKER_LIST},
    {"topic-list", true, OPT_TOPIC_LIST},
    {"json", false, OPT_JSON},
    {NULL, false, 0},
};

void logdirs_usage(FILE *f)
{
    fputs("Usage: samsactl log-dirs describe [--broker-list ID[,ID...]] [--topic-list NAME[,NAME...]] [--json]\n"
          "\n"
          "Each broker's log dirs (DescribeLogDirs): the volume's total and usable bytes, and the\n"
          "partitions each dir holds with their size and offset lag. --broker-list: only these\n"
          "brokers (default: every broker); --topic-list: only these topics' partitions. --json:\n"
          "kafka-log-dirs.sh --describe's JSON line.\n",
          f);
}

int logdirs_parse_args(int argc, char **argv, struct logdirs_opts *o, struct global_opts *g, char *err,
                       size_t errlen)
{
    memset(o, 0, sizeof *o);
    arena_init(&o->arena);
    if (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")))
        return ARGS_HELP;
    if (argc < 1 || (strcmp(argv[0], "describe") && strcmp(argv[0], "--describe"))) {
        snprintf(err, errlen, "expected 'describe'");
        return ARGS_ERROR;
    }
    struct opt_iter it;
    opt_iter_init(&it, argc - 1, argv + 1, logdirs_defs, err, errlen);
    int id;
    char **items;
    int n;
    while ((id = opt_next(&it)) > 0) {
        if (global_opt_apply(g, id, it.arg))
            continue;
        switch (id) {
        case OPT_HELP: return ARGS_HELP;
        case OPT_BROKER_LIST:
            if (!split_csv(&o->arena, it.arg, &items, &n)) {
                snprintf(err, errlen, "invalid --broker-list '%s'", it.arg);
                return ARGS_ERROR;
            }
            o->brokers = arena_alloc(&o->arena, (size_t)n * sizeof *o->brokers);
            for (int i = 0; i < n; i++)
                if (!parse_i32(items[i], 0, INT32_MAX, &o->brokers[i])) {
                    snprintf(err, errlen, "invalid broker id '%s' in --broker-list", items[i]);
                    return ARGS_ERROR;
                }
            o->nbrokers = n;
            break;
        case OPT_TOPIC_LIST:
            if (!split_csv(&o->arena, it.arg, &o->topics, &o->ntopics)) {
                snprintf(err, errlen, "invalid --topic-list '%s'", it.arg);
                return ARGS_ERROR;
            }
            break;
        case OPT_JSON: o->json = true; break;
        default: snprintf(err, errlen, "option '--%s' is not valid here", it.name); return ARGS_ERROR;
        }
    }
    return id < 0 ? ARGS_ERROR : ARGS_OK;
}

void logdirs_opts_free(struct logdirs_opts *o) { arena_free(&o->arena); }

static bool wanted_topic(const struct logdirs_opts *o, kstr_t name)
{
    if (!o->ntopics)
        return true;
    for (int i = 0; i < o->ntopics; i++)
        if (kstr_eqc(name, o->topics[i]))
            return true;
    return false;
}

/* The request: every partition of the listed topics as the metadata
 * has them (DescribeLogDirs names partitions), or null for all. */
static int build_request(struct kc_client *c, const struct logdirs_opts *o, struct arena *a,
                         describe_log_dirs_request_t *q)
{
    describe_log_dirs_request_init(q);
    q->topics.n = -1;
    if (!o->ntopics)
        return 0;
    int rc = kc_metadata(c, (const char *const *)o->topics, o->ntopics, false);
    if (rc)
        return rc;
    q->topics.a = describe_log_dirs_request_describable_log_dir_topic_new_array(a, o->ntopics);
    q->topics.n = o->ntopics;
    for (int i = 0; i < o->ntopics; i++) {
        const kc_topic_t *t = kc_meta_topic(c, o->topics[i]);
        if (!t || t->error_code)
            return kc_fail(c, t ? t->error_code : KERR_UNKNOWN_TOPIC_OR_PARTITION, "topic %s: %s", o->topics[i],
                           kc_default_message(t ? t->error_code : KERR_UNKNOWN_TOPIC_OR_PARTITION));
        q->topics.a[i].topic = kstr_arena(a, o->topics[i]);
        q->topics.a[i].partitions.a = arena_alloc(a, (size_t)(t->partitions.n > 0 ? t->partitions.n : 1) * sizeof(int32_t));
        q->topics.a[i].partitions.n = t->partitions.n;
        for (int32_t j = 0; j < t->partitions.n; j++)
            q->topics.a[i].partitions.a[j] = t->partitions.a[j].partition_index;
    }
    return 0;
}

static void json_string(struct buf *out, kstr_t s)
{
    buf_append(out, "\"", 1);
    for (int32_t i = 0; i < s.len; i++) {
        unsigned char ch = (unsigned char)s.p[i];
        if (ch == '"' || ch == '\\')
            buf_printf(out, "\\%c", ch);
        else if (ch < 0x20)
            buf_printf(out, "\\u%04x", ch);
        else
            buf_append(out, &s.p[i], 1);
    }
    buf_append(out, "\"", 1);
}

struct printed {
    struct table dirs, parts;
    struct buf json;
    struct arena cells;
    int nbrokers;
};

static void add_broker(struct printed *pr, const struct logdirs_opts *o, int32_t id,
                       const describe_log_dirs_response_t *resp)
{
    struct arena *a = &pr->cells;
    buf_printf(&pr->json, "%s{\"broker\":%" PRId32 ",\"logDirs\":[", pr->nbrokers++ ? "," : "", id);
    const char *bid = table_cellf(a, "%" PRId32, id);
    for (int32_t i = 0; i < resp->results.n; i++) {
        const describe_log_dirs_response_describe_log_dirs_result_t *r = &resp->results.a[i];
        const char *dir = table_cellf(a, "%.*s", (int)r->log_dir.len, r->log_dir.p);
        const char *err = r->error_code ? kerr_name(r->error_code) : "-";
        table_row(&pr->dirs, (const char *[]){bid, dir, r->total_bytes >= 0 ? table_cellf(a, "%" PRId64, r->total_bytes) : "-",
                                              r->usable_bytes >= 0 ? table_cellf(a, "%" PRId64, r->usable_bytes) : "-", err});
        buf_printf(&pr->json, "%s{\"error\":", i ? "," : "");
        if (r->error_code)
            buf_printf(&pr->json, "\"%s\"", kerr_name(r->error_code));
        else
            buf_printf(&pr->json, "null");
        buf_printf(&pr->json, ",\"logDir\":");
        json_string(&pr->json, r->log_dir);
        buf_printf(&pr->json, ",\"partitions\":[");
        int np = 0;
        for (int32_t t = 0; t < r->topics.n; t++) {
            const describe_log_dirs_response_describe_log_dirs_topic_t *tp = &r->topics.a[t];
            if (!wanted_topic(o, tp->name))
                continue;
            for (int32_t k = 0; k < tp->partitions.n; k++) {
                const describe_log_dirs_response_describe_log_dirs_partition_t *p = &tp->partitions.a[k];
                const char *name = table_cellf(a, "%.*s-%" PRId32, (int)tp->name.len, tp->name.p, p->partition_index);
                table_row(&pr->parts, (const char *[]){bid, dir, name, table_cellf(a, "%" PRId64, p->partition_size),
                                                       table_cellf(a, "%" PRId64, p->offset_lag)});
                buf_printf(&pr->json, "%s{\"partition\":", np++ ? "," : "");
                json_string(&pr->json, (kstr_t){name, (int32_t)strlen(name)});
                buf_printf(&pr->json, ",\"size\":%" PRId64 ",\"offsetLag\":%" PRId64 ",\"isFuture\":%s}",
                           p->partition_size, p->offset_lag, p->is_future_key ? "true" : "false");
            }
        }
        buf_printf(&pr->json, "]}");
    }
    buf_printf(&pr->json, "]}");
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int describe(struct kc_client *c, const struct logdirs_opts *o)
{
    int rc = kc_metadata(c, NULL, 0, false);
    if (rc)
        return rc;
    const metadata_response_t *m = kc_meta(c);
    int32_t n = o->nbrokers ? o->nbrokers : (m->brokers.n > 0 ? m->brokers.n : 0);
    int32_t *ids = xcalloc((size_t)n + 1, sizeof *ids);
    for (int32_t i = 0; i < n; i++) {
        ids[i] = o->nbrokers ? o->brokers[i] : m->brokers.a[i].node_id;
        if (o->nbrokers && !kc_meta_broker(c, ids[i])) {
            free(ids);
            return kc_fail(c, KERR_BROKER_NOT_AVAILABLE, "broker %" PRId32 " is not in the cluster metadata",
                           o->brokers[i]);
        }
    }
    qsort(ids, (size_t)n, sizeof *ids, cmp_i32);
    struct arena a;
    arena_init(&a);
    describe_log_dirs_request_t q;
    rc = build_request(c, o, &a, &q);
    struct printed pr = {.nbrokers = 0};
    arena_init(&pr.cells);
    buf_init(&pr.json);
    table_init(&pr.dirs, 5, (const char *[]){"BROKER", "LOG_DIR", "TOTAL_BYTES", "USABLE_BYTES", "ERROR"});
    table_init(&pr.parts, 5, (const char *[]){"BROKER", "LOG_DIR", "PARTITION", "SIZE", "OFFSET_LAG"});
    buf_printf(&pr.json, "{\"brokers\":[");
    for (int32_t i = 0; i < n && !rc; i++) {
        struct kc_conn *conn;
        rc = kc_node_conn(c, ids[i], &conn);
        if (rc)
            break;
        struct kc_response r;
        rc = kc_call(c, conn, KAPI_DESCRIBE_LOG_DIRS, &q, &r);
        if (rc)
            break;
        const describe_log_dirs_response_t *resp = r.msg;
        if (resp->error_code)
            rc = kc_fail(c, resp->error_code, "broker %" PRId32 ": %s", ids[i], kc_default_message(resp->error_code));
        else
            add_broker(&pr, o, ids[i], resp);
        kc_response_free(&r);
    }
    buf_printf(&pr.json, "],\"version\":1}\n");
    if (!rc) {
        if (o->json) {
            fwrite(pr.json.data, 1, pr.json.len, stdout);
        } else {
            table_print(&pr.dirs);
            printf("\n");
            table_print(&pr.parts);
        }
    }
    table_free(&pr.dirs);
    table_free(&pr.parts);
    buf_free(&pr.json);
    arena_free(&pr.cells);
    arena_free(&a);
    free(ids);
    return rc;
}

static int parse_any(int argc, char **argv, void *o, struct global_opts *g, char *err, size_t n)
{
    return logdirs_parse_args(argc, argv, o, g, err, n);
}
static int run_any(struct kc_client *c, void *o) { return describe(c, o); }
static void free_any(void *o) { logdirs_opts_free(o); }

int cmd_log_dirs(int argc, char **argv, const struct global_opts *g)
{
    static const struct kc_command cmd = {"log-dirs", logdirs_usage, parse_any, run_any, free_any};
    struct logdirs_opts o;
    return kc_command_main(&cmd, &o, argc, argv, g);
}
