/* DescribeLogDirs (v0-v4): each log dir of this broker with the
 * partitions it holds, their sizes, and the volume's total and usable
 * bytes, as Kafka's ReplicaManager.describeLogDirs (kafka-log-dirs.sh,
 * admin clients' describeLogDirs). DESCRIBE on the cluster, else
 * CLUSTER_AUTHORIZATION_FAILED (v3+; no results before). An offline dir
 * answers KAFKA_STORAGE_ERROR with nothing else. As Kafka, a dir lists
 * every topic it holds, with only the asked-for partitions (all of them
 * for a null topic list): a topic asked for nowhere shows with none. The
 * offset lag is Kafka's for a current log, max(HW - LEO, 0): 0 on a
 * leader and on a follower (whose HW never passes its log end). samsa
 * has no future logs (AlterReplicaLogDirs is not served). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "api/dispatch.h"
#include "api/handlers.h"
#include "api/request.h"
#include "auth/authz.h"
#include "broker.h"
#include "log/logmgr.h"
#include "log/plog.h"
#include "proto/kerr.h"
#include "replica/partition.h"

struct hosted {
    size_t dir;
    struct partition *p;
};

static int cmp_hosted(const void *a, const void *b)
{
    const struct hosted *x = a, *y = b;
    if (x->dir != y->dir)
        return x->dir < y->dir ? -1 : 1;
    int c = strcmp(x->p->topic, y->p->topic);
    return c ? c : (x->p->index > y->p->index) - (x->p->index < y->p->index);
}

static bool asked(const describe_log_dirs_request_t *q, const struct partition *p)
{
    if (q->topics.n < 0)
        return true;
    for (int32_t i = 0; i < q->topics.n; i++) {
        if (!kstr_eqc(q->topics.a[i].topic, p->topic))
            continue;
        for (int32_t j = 0; j < q->topics.a[i].partitions.n; j++)
            if (q->topics.a[i].partitions.a[j] == p->index)
                return true;
    }
    return false;
}

/* The dir whose path is a prefix of the log's directory; ndirs if none. */
static size_t dir_of(struct logmgr *m, size_t ndirs, const struct plog *l)
{
    const char *d = plog_dir(l);
    for (size_t i = 0; i < ndirs; i++) {
        const char *root = logmgr_dir(m, i);
        size_t n = strlen(root);
        if (!strncmp(d, root, n) && d[n] == '/')
            return i;
    }
    return ndirs;
}

/* One dir's topics from h[0..n) (sorted by topic): every topic, with the
 * partitions asked for. */
static void fill_topics(struct request *req, const describe_log_dirs_request_t *q, const struct hosted *h, size_t n,
                        describe_log_dirs_response_describe_log_dirs_result_t *out)
{
    int32_t ntopics = 0;
    for (size_t i = 0; i < n; i++)
        ntopics += i == 0 || strcmp(h[i - 1].p->topic, h[i].p->topic) != 0;
    out->topics.a = describe_log_dirs_response_describe_log_dirs_topic_new_array(&req->arena, ntopics);
    out->topics.n = 0;
    for (size_t i = 0; i < n;) {
        size_t end = i;
        int32_t want = 0;
        for (; end < n && !strcmp(h[end].p->topic, h[i].p->topic); end++)
            want += asked(q, h[end].p);
        describe_log_dirs_response_describe_log_dirs_topic_t *t = &out->topics.a[out->topics.n++];
        t->name = kstr_arena(&req->arena, h[i].p->topic);
        t->partitions.a = describe_log_dirs_response_describe_log_dirs_partition_new_array(&req->arena, want);
        t->partitions.n = 0;
        for (; i < end; i++) {
            struct partition *p = h[i].p;
            if (!asked(q, p))
                continue;
            describe_log_dirs_response_describe_log_dirs_partition_t *o = &t->partitions.a[t->partitions.n++];
            o->partition_index = p->index;
            o->partition_size = plog_size_bytes(p->log);
            int64_t lag = atomic_load(&p->high_watermark) - plog_log_end_offset(p->log);
            o->offset_lag = lag > 0 ? lag : 0;
            o->is_future_key = false;
        }
    }
}

void api_handle_describe_log_dirs(struct request *req)
{
    const describe_log_dirs_request_t *q = req->body;
    describe_log_dirs_response_t resp;
    describe_log_dirs_response_init(&resp);
    if (!authz_allowed(req, ACL_OP_DESCRIBE, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME)) {
        resp.error_code = KERR_CLUSTER_AUTHORIZATION_FAILED;
        req_respond(req, &resp);
        return;
    }
    struct logmgr *m = req->broker->logs;
    size_t ndirs = logmgr_ndirs(m);
    struct partition **all = NULL;
    size_t n = req->broker->partitions ? preg_list(req->broker->partitions, &all) : 0;
    struct hosted *h = n ? xmalloc(n * sizeof *h) : NULL;
    for (size_t i = 0; i < n; i++)
        h[i] = (struct hosted){dir_of(m, ndirs, all[i]->log), all[i]};
    if (n)
        qsort(h, n, sizeof *h, cmp_hosted);

    resp.results.a = describe_log_dirs_response_describe_log_dirs_result_new_array(&req->arena, (int32_t)ndirs);
    resp.results.n = (int32_t)ndirs;
    size_t at = 0;
    for (size_t d = 0; d < ndirs; d++) {
        describe_log_dirs_response_describe_log_dirs_result_t *r = &resp.results.a[d];
        char abs[PATH_MAX];
        const char *path = logmgr_dir(m, d);
        r->log_dir = kstr_arena(&req->arena, realpath(path, abs) ? abs : path);
        size_t first = at;
        while (at < n && h[at].dir == d)
            at++;
        if (logmgr_dir_offline(m, d)) {
            r->error_code = KERR_KAFKA_STORAGE_ERROR;
            continue;
        }
        (void)logmgr_dir_space(m, d, &r->total_bytes, &r->usable_bytes); /* else -1, -1 */
        fill_topics(req, q, h + first, at - first, r);
    }
    for (size_t i = 0; i < n; i++)
        partition_put(all[i]);
    free(all);
    free(h);
    req_respond(req, &resp);
}
