#include "api/prometheus.h"

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "autoconfig.h"
#include "broker.h"
#include "controller/controller.h"
#include "coord/coord.h"
#include "controller/image.h"
#include "log/plog.h"
#include "log/logmgr.h"
#include "net/net.h"
#include "net/netstats.h"
#include "net/park.h"
#include "plugin/metrics.h"
#include "proto/gen/kapi.h"
#include "quorum/quorum.h"
#include "replica/partition.h"
#include "topic_config.h"
#include "util/clock.h"
#include "util/fdcache.h"
#include "util/loopwatch.h"

static int64_t start_wall_ms;

void prometheus_init(void) { start_wall_ms = clock_wall_ms(); }

void prometheus_metric_name(const char *name, char *out, size_t n)
{
    if (!n)
        return;
    size_t o = 0;
    if (name[0] >= '0' && name[0] <= '9' && o + 1 < n)
        out[o++] = '_';
    for (const char *p = name; *p && o + 1 < n; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ':';
        out[o++] = ok ? c : '_';
    }
    out[o] = 0;
}

/* HELP text: backslash and newline escaped, as the format wants. */
static void put_help(struct buf *out, const char *name, const char *type, const char *help)
{
    buf_printf(out, "# HELP %s ", name);
    for (const char *p = help; *p; p++) {
        if (*p == '\\')
            buf_append(out, "\\\\", 2);
        else if (*p == '\n')
            buf_append(out, "\\n", 2);
        else
            buf_append(out, p, 1);
    }
    buf_printf(out, "\n# TYPE %s %s\n", name, type);
}

/* One unlabelled sample with its HELP and TYPE. Counters and gauges here
 * stay far below 2^63. */
static void put_metric(struct buf *out, const char *name, const char *type, const char *help, int64_t v)
{
    put_help(out, name, type, help);
    buf_printf(out, "%s %lld\n", name, (long long)v);
}

static void write_process(struct buf *out)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
                     (double)ru.ru_stime.tv_usec / 1e6;
        put_help(out, "process_cpu_seconds_total", "counter", "User and system CPU time spent, in seconds.");
        buf_printf(out, "process_cpu_seconds_total %.6f\n", cpu);
    }
    long page = sysconf(_SC_PAGESIZE);
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        unsigned long long size = 0, resident = 0;
        if (fscanf(f, "%llu %llu", &size, &resident) == 2) {
            put_metric(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
                     size * (unsigned long long)page);
            put_metric(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
                     resident * (unsigned long long)page);
        }
        fclose(f);
    }
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        uint64_t n = 0;
        for (struct dirent *e; (e = readdir(d));)
            if (e->d_name[0] != '.')
                n++;
        closedir(d);
        put_metric(out, "process_open_fds", "gauge", "Open file descriptors (this count's own included).", n);
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        put_metric(out, "process_max_fds", "gauge", "The soft limit of open file descriptors.",
                 (uint64_t)rl.rlim_cur);
    put_help(out, "process_start_time_seconds", "gauge", "Start time of the process since the Unix epoch, in seconds.");
    buf_printf(out, "process_start_time_seconds %.3f\n", (double)start_wall_ms / 1000.0);
}

static void write_net(struct broker *b, struct buf *out)
{
    struct netstats *s = xcalloc(1, sizeof *s); /* ~34 KB: not on the stack */
    net_get_stats(b->net, s);
    put_metric(out, "samsa_network_received_bytes_total", "counter",
             "Bytes read from client and peer connections (after TLS).", s->bytes_in);
    put_metric(out, "samsa_network_sent_bytes_total", "counter",
             "Bytes written to client and peer connections (before TLS), fetched data included.", s->bytes_out);
    put_metric(out, "samsa_connections", "gauge", "Open connections, every listener.", s->connections);
    put_metric(out, "samsa_connections_accepted_total", "counter", "Connections accepted, every listener.",
             s->accepted);
    put_help(out, "samsa_connections_refused_total", "counter",
             "Connections closed as they were accepted: by max.connections or max.connections.per.ip (limit), "
             "or held then closed by a connection_creation_rate quota (creation_rate).");
    buf_printf(out, "samsa_connections_refused_total{reason=\"limit\"} %llu\n", (unsigned long long)s->refused);
    buf_printf(out, "samsa_connections_refused_total{reason=\"creation_rate\"} %llu\n",
               (unsigned long long)s->throttled);
    put_metric(out, "samsa_produce_records_total", "counter",
             "Records appended by Produce requests (Kafka's MessagesInPerSec).", s->records_in);
    put_metric(out, "samsa_produce_bytes_total", "counter",
             "Record batch bytes appended by Produce requests (Kafka's BytesInPerSec).", s->record_bytes_in);

    put_help(out, "samsa_requests_total", "counter", "Requests answered, by API.");
    for (int k = 0; k < NETSTATS_APIS; k++) {
        const struct kapi *a = kapi_get((int16_t)k);
        if (s->requests[k] && a)
            buf_printf(out, "samsa_requests_total{api=\"%s\"} %llu\n", a->name, (unsigned long long)s->requests[k]);
    }
    put_help(out, "samsa_request_duration_seconds", "histogram",
             "Time from a request's arrival to the last byte of its answer written (Kafka's TotalTimeMs), by API.");
    for (int k = 0; k < NETSTATS_APIS; k++) {
        const struct kapi *a = kapi_get((int16_t)k);
        if (!s->requests[k] || !a)
            continue;
        uint64_t cum = 0;
        for (int j = 0; j < NETSTATS_BUCKETS; j++) {
            cum += s->buckets[k][j];
            if (j < NETSTATS_BUCKETS - 1)
                buf_printf(out, "samsa_request_duration_seconds_bucket{api=\"%s\",le=\"%g\"} %llu\n", a->name,
                           (double)netstats_bucket_us[j] / 1e6, (unsigned long long)cum);
            else
                buf_printf(out, "samsa_request_duration_seconds_bucket{api=\"%s\",le=\"+Inf\"} %llu\n", a->name,
                           (unsigned long long)cum);
        }
        buf_printf(out, "samsa_request_duration_seconds_sum{api=\"%s\"} %.6f\n", a->name,
                   (double)s->time_us[k] / 1e6);
        buf_printf(out, "samsa_request_duration_seconds_count{api=\"%s\"} %llu\n", a->name,
                   (unsigned long long)s->requests[k]);
    }
    free(s);

    struct park_stats ps;
    park_get_stats(net_park_hub(b->net), &ps);
    put_metric(out, "samsa_parked_requests", "gauge",
             "Requests waiting for an event (delayed fetches and produces, group joins, ...).", ps.parked);
    put_metric(out, "samsa_loop_stalls_total", "counter",
             "Event-loop passes longer than samsa.loop.stall.warn.ms, every loop.", loopwatch_stalls());
}

static bool has_replica(const struct mi_partition *p, int32_t node)
{
    for (int32_t i = 0; i < p->nreplicas; i++)
        if (p->replicas[i] == node)
            return true;
    return false;
}

static void write_partitions(struct broker *b, struct buf *out)
{
    struct mimage *img = controller_image(b->controller);
    if (!img)
        return;
    uint64_t topics = 0, partitions = 0, offline = 0, replicas = 0, leaders = 0, under_replicated = 0,
             under_min_isr = 0;
    for (int32_t i = 0; i < img->ntopics; i++) {
        const struct mi_topic *t = img->topics[i];
        topics++;
        int32_t min_isr = t->cfg ? t->cfg->min_insync_replicas : 1;
        for (int32_t k = 0; k < t->npartitions; k++) {
            const struct mi_partition *p = &t->partitions[k];
            partitions++;
            if (p->leader < 0)
                offline++;
            if (has_replica(p, b->node_id))
                replicas++;
            if (p->leader != b->node_id)
                continue;
            leaders++;
            if (p->nisr < p->nreplicas)
                under_replicated++;
            if (p->nisr < min_isr)
                under_min_isr++;
        }
    }
    int32_t nbrokers = img->nbrokers, alive = 0;
    for (int32_t i = 0; i < img->nbrokers; i++)
        alive += mimage_broker_alive(img, img->brokers[i].id);
    mimage_release(img);
    put_metric(out, "samsa_partitions", "gauge", "Partitions with a replica on this node (Kafka's PartitionCount).",
             replicas);
    put_metric(out, "samsa_partition_leaders", "gauge", "Partitions this node leads (Kafka's LeaderCount).", leaders);
    put_metric(out, "samsa_under_replicated_partitions", "gauge",
             "Partitions led here whose ISR is smaller than their replica set.", under_replicated);
    put_metric(out, "samsa_under_min_isr_partitions", "gauge",
             "Partitions led here whose ISR is smaller than min.insync.replicas (acks=all produce fails).",
             under_min_isr);
    put_metric(out, "samsa_cluster_topics", "gauge", "Topics in the metadata image.", topics);
    put_metric(out, "samsa_cluster_partitions", "gauge", "Partitions in the metadata image.", partitions);
    put_metric(out, "samsa_cluster_offline_partitions", "gauge", "Partitions without a leader.", offline);
    put_metric(out, "samsa_cluster_brokers", "gauge", "Registered brokers.", nbrokers);
    put_metric(out, "samsa_cluster_brokers_alive", "gauge", "Registered brokers that are not fenced.", alive);
}

struct topic_sum {
    const char *topic; /* the partition's (it holds a reference until the sums are written) */
    uint64_t produced_bytes, produced_records, fetched_bytes, log_bytes;
};

static int cmp_topic_sum(const void *a, const void *b)
{
    return strcmp(((const struct topic_sum *)a)->topic, ((const struct topic_sum *)b)->topic);
}

/* Label values escaped as the format wants (topic names never need it,
 * but the format is not the place to rely on that). */
static void put_label_value(struct buf *out, const char *v)
{
    for (const char *p = v; *p; p++) {
        if (*p == '\\' || *p == '"')
            buf_append(out, "\\", 1);
        if (*p == '\n')
            buf_append(out, "\\n", 2);
        else
            buf_append(out, p, 1);
    }
}

static void put_topic_family(struct buf *out, const struct topic_sum *t, size_t n, const char *name,
                             const char *type, const char *help, size_t field)
{
    put_help(out, name, type, help);
    for (size_t i = 0; i < n; i++) {
        uint64_t v = *(const uint64_t *)((const char *)&t[i] + field);
        buf_printf(out, "%s{topic=\"", name);
        put_label_value(out, t[i].topic);
        buf_printf(out, "\"} %llu\n", (unsigned long long)v);
    }
}

/* One walk over the partitions hosted here: their per-topic sums
 * (Kafka's BrokerTopicMetrics BytesInPerSec, MessagesInPerSec,
 * BytesOutPerSec by topic) and, over those followed here, the largest
 * lag behind the leader's high watermark as of the last fetch (Kafka's
 * ReplicaFetcherManager MaxLag). */
static void write_hosted(struct broker *b, struct buf *out)
{
    if (!b->partitions)
        return;
    struct partition **all;
    size_t n = preg_list(b->partitions, &all);
    struct topic_sum *ts = n ? xcalloc(n, sizeof *ts) : NULL;
    uint64_t followed = 0, log_bytes = 0;
    int64_t max_lag = 0;
    for (size_t i = 0; i < n; i++) {
        struct partition *p = all[i];
        ts[i] = (struct topic_sum){p->topic, atomic_load_explicit(&p->produced_bytes, memory_order_relaxed),
                                   atomic_load_explicit(&p->produced_records, memory_order_relaxed),
                                   atomic_load_explicit(&p->fetched_bytes, memory_order_relaxed),
                                   (uint64_t)plog_size_bytes(p->log)};
        log_bytes += ts[i].log_bytes;
        int32_t leader = atomic_load(&p->leader_id);
        if (!atomic_load(&p->is_leader) && leader >= 0 && leader != b->node_id) {
            followed++;
            slock_lock(&p->repl_lock);
            int64_t hw = p->leader_hw;
            slock_unlock(&p->repl_lock);
            int64_t lag = hw - plog_log_end_offset(p->log);
            if (lag > max_lag)
                max_lag = lag;
        }
    }
    /* partitions of a topic next to each other, then summed in place */
    if (n)
        qsort(ts, n, sizeof *ts, cmp_topic_sum);
    size_t nt = 0;
    for (size_t i = 0; i < n; i++) {
        if (nt && !strcmp(ts[nt - 1].topic, ts[i].topic)) {
            ts[nt - 1].produced_bytes += ts[i].produced_bytes;
            ts[nt - 1].produced_records += ts[i].produced_records;
            ts[nt - 1].fetched_bytes += ts[i].fetched_bytes;
            ts[nt - 1].log_bytes += ts[i].log_bytes;
        } else {
            ts[nt++] = ts[i];
        }
    }
    put_topic_family(out, ts, nt, "samsa_topic_produce_bytes_total", "counter",
                     "Record batch bytes appended by Produce to the topic's partitions hosted here (Kafka's "
                     "BytesInPerSec by topic).",
                     offsetof(struct topic_sum, produced_bytes));
    put_topic_family(out, ts, nt, "samsa_topic_produce_records_total", "counter",
                     "Records appended by Produce to the topic's partitions hosted here (MessagesInPerSec by topic).",
                     offsetof(struct topic_sum, produced_records));
    put_topic_family(out, ts, nt, "samsa_topic_fetch_bytes_total", "counter",
                     "Record bytes consumers fetched from the topic's partitions hosted here, followers not "
                     "counted (BytesOutPerSec by topic).",
                     offsetof(struct topic_sum, fetched_bytes));
    put_topic_family(out, ts, nt, "samsa_topic_log_bytes", "gauge",
                     "Bytes in the segments of the topic's partitions hosted here (Kafka's Log Size, by topic).",
                     offsetof(struct topic_sum, log_bytes));
    free(ts);
    put_metric(out, "samsa_log_bytes", "gauge", "Bytes in the segments of every partition hosted here.", log_bytes);
    for (size_t i = 0; i < n; i++)
        partition_put(all[i]);
    free(all);
    put_metric(out, "samsa_replica_followed_partitions", "gauge", "Partitions this node follows.", followed);
    put_metric(out, "samsa_replica_max_lag", "gauge",
             "Records the most lagging partition followed here is behind its leader's high watermark "
             "(Kafka's ReplicaFetcherManager MaxLag).",
             max_lag);
}

/* Kafka's GroupMetadataManager NumGroups* and the KIP-848
 * ConsumerGroupCount by state, as one family: the groups of the
 * __consumer_offsets partitions this node leads, by type and state. */
static void write_groups(struct broker *b, struct buf *out)
{
    if (!b->coord)
        return;
    struct arena a;
    arena_init(&a);
    struct coord_listed *l = NULL;
    int32_t n = 0;
    if (coord_list_groups(b->coord, &a, &l, &n) != 0) {
        arena_free(&a); /* a shard still loading: no figure rather than a wrong one */
        return;
    }
    struct group_count {
        kstr_t type, state;
        uint64_t n;
    } seen[32];
    int ns = 0;
    for (int32_t i = 0; i < n; i++) {
        int k = 0;
        while (k < ns && !(kstr_eq(seen[k].type, l[i].type) && kstr_eq(seen[k].state, l[i].state)))
            k++;
        if (k == ns) {
            if (ns == (int)(sizeof seen / sizeof seen[0]))
                continue;
            seen[ns++] = (struct group_count){l[i].type, l[i].state, 0};
        }
        seen[k].n++;
    }
    put_help(out, "samsa_groups", "gauge",
             "Groups coordinated here, by type (classic, consumer) and state (Kafka's NumGroups* and "
             "ConsumerGroupCount).");
    for (int k = 0; k < ns; k++) {
        buf_printf(out, "samsa_groups{type=\"%.*s\",state=\"%.*s\"} %llu\n",
                   seen[k].type.len > 0 ? (int)seen[k].type.len : 0, seen[k].type.p,
                   seen[k].state.len > 0 ? (int)seen[k].state.len : 0, seen[k].state.p,
                   (unsigned long long)seen[k].n);
    }
    arena_free(&a);
}

static void write_quorum(struct broker *b, struct buf *out)
{
    put_metric(out, "samsa_controller_active", "gauge", "1 when this node is the active controller.",
             controller_is_active(b->controller) ? 1 : 0);
    put_metric(out, "samsa_quorum_leader", "gauge", "Node id of the metadata quorum's leader; -1 unknown.",
             controller_leader_id(b->controller));
    struct quorum *q = controller_quorum(b->controller);
    if (q)
        put_metric(out, "samsa_quorum_epoch", "gauge", "The metadata quorum's epoch as this node knows it.",
                 quorum_epoch(q));
}

static void write_logs(struct broker *b, struct buf *out)
{
    struct fdc_stats fs;
    fdc_get_stats(&fs);
    put_metric(out, "samsa_log_segment_files_open", "gauge",
             "Segment files holding a descriptor in the fd cache.", fs.open);
    put_metric(out, "samsa_log_segment_file_evictions_total", "counter",
             "Segment file descriptors closed to stay within the fd cache's share of RLIMIT_NOFILE.",
             fs.evictions);
    put_metric(out, "samsa_log_descriptor_errors_total", "counter", "EMFILE/ENFILE met opening segment files.",
             fs.resource_errors);
    if (!b->logs)
        return;
    uint64_t offline = 0;
    size_t n = logmgr_ndirs(b->logs);
    for (size_t i = 0; i < n; i++)
        offline += logmgr_dir_offline(b->logs, i);
    put_metric(out, "samsa_log_dirs", "gauge", "Log directories (log.dirs).", n);
    put_metric(out, "samsa_log_dirs_offline", "gauge", "Log directories taken offline by an I/O error.", offline);
    static const char *const vol[2][2] = {
        {"samsa_log_dir_volume_bytes", "Size of the volume a log directory is on (DescribeLogDirs' TotalBytes)."},
        {"samsa_log_dir_volume_usable_bytes",
         "Bytes an unprivileged writer can still use on the volume a log directory is on (UsableBytes)."},
    };
    int64_t (*space)[2] = xcalloc(n ? n : 1, sizeof *space); /* total, usable; -1: none */
    for (size_t i = 0; i < n; i++)
        if (!logmgr_dir_space(b->logs, i, &space[i][0], &space[i][1]))
            space[i][0] = -1;
    for (int k = 0; k < 2; k++) {
        put_help(out, vol[k][0], "gauge", vol[k][1]);
        for (size_t i = 0; i < n; i++) {
            if (space[i][0] < 0)
                continue;
            buf_printf(out, "%s{dir=\"", vol[k][0]);
            put_label_value(out, logmgr_dir(b->logs, i));
            buf_printf(out, "\"} %lld\n", (long long)space[i][k]);
        }
    }
    free(space);
    struct logmgr_scan_stats st;
    logmgr_scan_stats(b->logs, &st);
    put_metric(out, "samsa_log_cleaner_uncleanable_partitions", "gauge",
               "Compacted partitions the cleaner leaves alone after meeting a batch it cannot read (Kafka's "
               "uncleanable-partitions-count).",
               st.uncleanable_logs);
}

/* A metric of the registry: a plugin's (samsa.plugin.<name>.<metric>)
 * or one the core keeps there (samsa.isr.shrinks). arg: the buf. */
static int write_registry_metric(void *arg, const struct metric *m)
{
    char name[300];
    prometheus_metric_name(metric_name(m), name, sizeof name - 8);
    bool counter = metric_type(m) == METRIC_COUNTER;
    if (counter)
        strcat(name, "_total");
    put_metric(arg, name, counter ? "counter" : "gauge", metric_help(m), metric_value(m));
    return 0;
}

void prometheus_write(struct broker *b, struct buf *out)
{
    put_help(out, "samsa_build_info", "gauge", "samsa's version and this node's id.");
    buf_printf(out, "samsa_build_info{version=\"%s\",node_id=\"%d\"} 1\n", PACKAGE_VERSION, b->node_id);
    write_process(out);
    if (b->net)
        write_net(b, out);
    if (b->controller) {
        write_partitions(b, out);
        write_hosted(b, out);
        write_groups(b, out);
        write_quorum(b, out);
    }
    write_logs(b, out);
    metrics_foreach(write_registry_metric, out);
}

void prometheus_http(void *arg, const struct http_head *req, struct http_response *resp)
{
    if (!strcmp(req->path, "/metrics")) {
        resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
        prometheus_write(arg, &resp->body);
        return;
    }
    resp->status = 404;
    buf_printf(&resp->body, "samsa serves its metrics at /metrics\n");
}
