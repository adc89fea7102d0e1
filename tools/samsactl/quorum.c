/* samsactl quorum status and samsactl cluster describe (see quorum.h).
 *
 * quorum status asks DescribeQuorum, as kafka-metadata-quorum.sh does:
 * a broker forwards it to the active controller; with
 * --bootstrap-controller the controllers are asked directly, the first
 * one that leads answers. It prints the leader, epoch, high watermark
 * and, for each voter and observer, its log end offset, lag and last
 * fetch (only the leader knows those).
 *
 * cluster describe asks DescribeCluster (the unfenced brokers, with
 * racks) and DescribeQuorum (who leads; voters and observers), and lists
 * every node either one names: a node the quorum sees fetching that
 * DescribeCluster does not list is a fenced (or not yet registered)
 * broker, or a controller only. */
#include "quorum.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "proto/gen/describe_cluster_request.h"
#include "proto/gen/describe_cluster_response.h"
#include "proto/gen/describe_quorum_request.h"
#include "proto/gen/describe_quorum_response.h"
#include "proto/kerr.h"
#include "util/buf.h"

enum { OPT_REPLICATION = 1, OPT_BOOTSTRAP_CONTROLLER };

static const struct opt_def status_defs[] = {
    {"replication", false, OPT_REPLICATION},
    {"bootstrap-controller", true, OPT_BOOTSTRAP_CONTROLLER},
    {NULL, false, 0},
};

void quorum_usage(FILE *f)
{
    fputs("Usage: samsactl quorum status [--replication] [--bootstrap-server HOST:PORT[,...]]\n"
          "                              [--bootstrap-controller HOST:PORT[,...]]\n"
          "\n"
          "The metadata quorum as its leader describes it (DescribeQuorum): leader,\n"
          "epoch, high watermark, the largest follower lag, voters and observers;\n"
          "--replication adds one line per replica: log end offset, lag, last fetch\n"
          "and last caught-up time, role. --bootstrap-controller asks controllers\n"
          "directly (their controller listeners) instead of going through a broker.\n",
          f);
}

int quorum_status_parse_args(int argc, char **argv, struct quorum_status_opts *o, struct global_opts *g, char *err,
                             size_t errlen)
{
    memset(o, 0, sizeof *o);
    struct opt_iter it;
    opt_iter_init(&it, argc, argv, status_defs, err, errlen);
    int id;
    while ((id = opt_next(&it)) > 0) {
        if (global_opt_apply(g, id, it.arg))
            continue;
        switch (id) {
        case OPT_HELP:
            return ARGS_HELP;
        case OPT_REPLICATION:
            o->replication = true;
            break;
        case OPT_BOOTSTRAP_CONTROLLER:
            o->bootstrap_controller = it.arg;
            break;
        default:
            snprintf(err, errlen, "option '--%s' is not valid here", it.name);
            return ARGS_ERROR;
        }
    }
    return id < 0 ? ARGS_ERROR : ARGS_OK;
}

/* DescribeQuorum through conn; *out holds the answer on 0. */
static int describe_quorum(struct kc_client *c, struct kc_conn *conn, struct kc_response *out,
                           const describe_quorum_response_partition_data_t **part)
{
    struct arena a = ARENA_INIT;
    describe_quorum_request_t req;
    describe_quorum_request_init(&req);
    req.topics.a = describe_quorum_request_topic_data_new_array(&a, 1);
    req.topics.n = 1;
    req.topics.a[0].topic_name = KSTR_LIT("__cluster_metadata");
    req.topics.a[0].partitions.a = describe_quorum_request_partition_data_new_array(&a, 1);
    req.topics.a[0].partitions.n = 1;
    req.topics.a[0].partitions.a[0].partition_index = 0;
    int rc = kc_call(c, conn, KAPI_DESCRIBE_QUORUM, &req, out);
    arena_free(&a);
    if (rc)
        return rc;
    const describe_quorum_response_t *m = out->msg;
    if (m->error_code) {
        rc = kc_fail(c, m->error_code, "%s",
                     m->error_message.len > 0 ? kc_strdup(&out->arena, m->error_message)
                                              : kc_default_message(m->error_code));
    } else if (m->topics.n != 1 || m->topics.a[0].partitions.n != 1) {
        rc = kc_fail(c, KERR_UNKNOWN_SERVER_ERROR, "DescribeQuorum answer without the metadata partition");
    } else {
        *part = &m->topics.a[0].partitions.a[0];
        if ((*part)->error_code)
            rc = kc_fail(c, (*part)->error_code, "%s",
                         (*part)->error_code == KERR_NOT_LEADER_OR_FOLLOWER
                             ? "this node does not lead the metadata quorum"
                             : kc_default_message((*part)->error_code));
    }
    if (rc)
        kc_response_free(out);
    return rc;
}

/* Asks the broker (forwarded to the leader), or each controller in turn
 * until the leader answers. */
static int find_quorum(struct kc_client *c, const char *controllers, struct kc_response *out,
                       const describe_quorum_response_partition_data_t **part)
{
    if (!controllers) {
        struct kc_conn *conn;
        int rc = kc_any_conn(c, &conn);
        return rc ? rc : describe_quorum(c, conn, out, part);
    }
    struct kc_address *addrs;
    char err[256];
    int n = kc_parse_bootstrap(controllers, &addrs, err, sizeof err);
    if (n < 0)
        return kc_fail(c, KERR_INVALID_REQUEST, "--bootstrap-controller: %s", err);
    int rc = KERR_NETWORK_EXCEPTION;
    for (int i = 0; i < n; i++) {
        struct kc_client one;
        char spec[300];
        snprintf(spec, sizeof spec, "%s:%d", addrs[i].host, addrs[i].port);
        if (kc_client_init(&one, spec, err, sizeof err) < 0)
            continue;
        one.timeout_ms = c->timeout_ms;
        struct kc_conn *conn;
        rc = kc_any_conn(&one, &conn);
        if (rc == 0)
            rc = describe_quorum(&one, conn, out, part);
        if (rc == 0) {
            /* the answer outlives the connection: it owns its frame */
            kc_client_free(&one);
            break;
        }
        c->errcode = one.errcode;
        snprintf(c->errmsg, sizeof c->errmsg, "%s", one.errmsg);
        kc_client_free(&one);
    }
    kc_addresses_free(addrs, n);
    return rc;
}

static void fmt_time(int64_t ms, char *out, size_t n)
{
    if (ms < 0) {
        snprintf(out, n, "-");
        return;
    }
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(out, n, "%Y-%m-%dT%H:%M:%S", &tm);
    size_t l = strlen(out);
    snprintf(out + l, n - l, ".%03dZ", (int)(ms % 1000));
}

static void print_ids(const char *label, const describe_quorum_response_replica_state_t *r, int32_t n)
{
    printf("%-22s[", label);
    for (int32_t i = 0; i < n; i++)
        printf("%s%d", i ? "," : "", (int)r[i].replica_id);
    printf("]\n");
}

static void print_replica(const describe_quorum_response_replica_state_t *r, int64_t hw, const char *role)
{
    char f[40], cu[40];
    fmt_time(r->last_fetch_timestamp, f, sizeof f);
    fmt_time(r->last_caught_up_timestamp, cu, sizeof cu);
    int64_t lag = r->log_end_offset >= 0 && hw >= 0 ? hw - r->log_end_offset : -1;
    if (lag < 0 && r->log_end_offset >= 0)
        lag = 0;
    printf("%-7d %-13" PRId64 " %-7" PRId64 " %-25s %-25s %s\n", (int)r->replica_id, r->log_end_offset, lag, f, cu,
           role);
}

static int do_status(struct kc_client *c, const struct quorum_status_opts *o)
{
    struct kc_response r;
    const describe_quorum_response_partition_data_t *p = NULL;
    int rc = find_quorum(c, o->bootstrap_controller, &r, &p);
    if (rc)
        return rc;
    int64_t maxlag = 0;
    for (int32_t i = 0; i < p->current_voters.n; i++) {
        const describe_quorum_response_replica_state_t *v = &p->current_voters.a[i];
        int64_t lag = v->log_end_offset >= 0 ? p->high_watermark - v->log_end_offset : p->high_watermark;
        if (lag > maxlag)
            maxlag = lag;
    }
    printf("%-22s%d\n", "LeaderId:", (int)p->leader_id);
    printf("%-22s%d\n", "LeaderEpoch:", (int)p->leader_epoch);
    printf("%-22s%" PRId64 "\n", "HighWatermark:", p->high_watermark);
    printf("%-22s%" PRId64 "\n", "MaxFollowerLag:", maxlag);
    print_ids("CurrentVoters:", p->current_voters.a, p->current_voters.n);
    print_ids("CurrentObservers:", p->observers.a, p->observers.n);
    if (o->replication) {
        printf("\n%-7s %-13s %-7s %-25s %-25s %s\n", "NodeId", "LogEndOffset", "Lag", "LastFetchTimestamp",
               "LastCaughtUpTimestamp", "Status");
        for (int32_t i = 0; i < p->current_voters.n; i++)
            print_replica(&p->current_voters.a[i], p->high_watermark,
                          p->current_voters.a[i].replica_id == p->leader_id ? "Leader" : "Follower");
        for (int32_t i = 0; i < p->observers.n; i++)
            print_replica(&p->observers.a[i], p->high_watermark, "Observer");
    }
    kc_response_free(&r);
    return 0;
}

static int run_client(int argc, char **argv, const struct global_opts *g0, const char *what,
                      int (*body)(struct kc_client *c, const struct quorum_status_opts *o))
{
    struct global_opts g = *g0;
    struct quorum_status_opts o;
    char err[512];
    int a = quorum_status_parse_args(argc, argv, &o, &g, err, sizeof err);
    if (a == ARGS_HELP) {
        quorum_usage(stdout);
        return EXIT_OK;
    }
    if (a == ARGS_ERROR) {
        fprintf(stderr, "samsactl %s: %s (see samsactl %s --help)\n", what, err, what);
        return EXIT_USAGE;
    }
    struct kc_client c;
    if (kc_client_init(&c, global_bootstrap(&g), err, sizeof err) < 0) {
        fprintf(stderr, "samsactl %s: %s\n", what, err);
        return EXIT_USAGE;
    }
    kc_catch_signals();
    int rc = body(&c, &o);
    fflush(stdout);
    int status = rc ? kc_report(&c) : EXIT_OK;
    kc_client_free(&c);
    return status;
}

int cmd_quorum(int argc, char **argv, const struct global_opts *g)
{
    if (argc < 1) {
        fprintf(stderr, "samsactl quorum: a subcommand is required (see samsactl quorum --help)\n");
        return EXIT_USAGE;
    }
    if (!strcmp(argv[0], "--help") || !strcmp(argv[0], "help")) {
        quorum_usage(stdout);
        return EXIT_OK;
    }
    if (!strcmp(argv[0], "status") || !strcmp(argv[0], "describe"))
        return run_client(argc - 1, argv + 1, g, "quorum status", do_status);
    fprintf(stderr, "samsactl quorum: unknown subcommand '%s' (see samsactl quorum --help)\n", argv[0]);
    return EXIT_USAGE;
}

/* ---- cluster describe ---- */

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int do_describe(struct kc_client *c, const struct quorum_status_opts *o)
{
    struct kc_conn *conn;
    int rc = kc_any_conn(c, &conn);
    if (rc)
        return rc;
    describe_cluster_request_t req;
    describe_cluster_request_init(&req);
    req.endpoint_type = 1; /* brokers */
    struct kc_response cr;
    rc = kc_call(c, conn, KAPI_DESCRIBE_CLUSTER, &req, &cr);
    if (rc)
        return rc;
    const describe_cluster_response_t *m = cr.msg;
    if (m->error_code) {
        rc = kc_fail(c, m->error_code, "%s", kc_default_message(m->error_code));
        kc_response_free(&cr);
        return rc;
    }
    /* the quorum's view; a cluster without an answering leader is still
     * worth describing */
    struct kc_response qr;
    const describe_quorum_response_partition_data_t *p = NULL;
    int qrc = find_quorum(c, o->bootstrap_controller, &qr, &p);
    printf("%-22s%.*s\n", "ClusterId:", m->cluster_id.len > 0 ? (int)m->cluster_id.len : 0, m->cluster_id.p);
    if (qrc == 0) {
        printf("%-22s%d (epoch %d, high watermark %" PRId64 ")\n", "ActiveController:", (int)p->leader_id,
               (int)p->leader_epoch, p->high_watermark);
    } else {
        printf("%-22s%s\n", "ActiveController:", "unknown (no quorum leader answered)");
        p = NULL;
    }
    int32_t nb = m->brokers.n > 0 ? m->brokers.n : 0;
    int32_t nv = p ? p->current_voters.n : 0, no = p ? p->observers.n : 0;
    int32_t *ids = xcalloc((size_t)(nb + nv + no + 1), sizeof *ids);
    int32_t n = 0;
    for (int32_t i = 0; i < nb; i++)
        ids[n++] = m->brokers.a[i].broker_id;
    for (int32_t i = 0; i < nv; i++)
        ids[n++] = p->current_voters.a[i].replica_id;
    for (int32_t i = 0; i < no; i++)
        ids[n++] = p->observers.a[i].replica_id;
    qsort(ids, (size_t)n, sizeof *ids, cmp_i32);
    printf("\n%-7s %-30s %-12s %-10s %s\n", "NodeId", "Endpoint", "Rack", "Quorum", "State");
    for (int32_t i = 0; i < n; i++) {
        if (i > 0 && ids[i] == ids[i - 1])
            continue;
        const describe_cluster_response_describe_cluster_broker_t *b = NULL;
        for (int32_t k = 0; k < nb; k++)
            if (m->brokers.a[k].broker_id == ids[i])
                b = &m->brokers.a[k];
        const char *role = "-";
        for (int32_t k = 0; k < nv; k++)
            if (p->current_voters.a[k].replica_id == ids[i])
                role = ids[i] == p->leader_id ? "leader" : "voter";
        for (int32_t k = 0; k < no; k++)
            if (p->observers.a[k].replica_id == ids[i])
                role = "observer";
        char ep[300] = "-", rack[80] = "-";
        if (b) {
            snprintf(ep, sizeof ep, "%.*s:%d", b->host.len > 0 ? (int)b->host.len : 0, b->host.p, (int)b->port);
            if (b->rack.len >= 0)
                snprintf(rack, sizeof rack, "%.*s", (int)b->rack.len, b->rack.p);
        }
        /* Not listed by DescribeCluster: fenced (or not registered yet),
         * or a controller that is no broker at all. */
        const char *state = b ? "unfenced" : (!strcmp(role, "observer") ? "fenced" : "controller-only or fenced");
        printf("%-7d %-30s %-12s %-10s %s\n", (int)ids[i], ep, rack, role, state);
    }
    free(ids);
    if (qrc == 0)
        kc_response_free(&qr);
    kc_response_free(&cr);
    return 0;
}

int cmd_cluster_describe(int argc, char **argv, const struct global_opts *g)
{
    return run_client(argc, argv, g, "cluster describe", do_describe);
}
