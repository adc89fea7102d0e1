/* The transaction marker sender (coord/txn_markers_send.c) for real: its
 * thread, its kclients and the image of a real in-process controller
 * (node 1), against two fake brokers (nodes 2 and 3, registered with the
 * controller at loopback ports of this test) that answer ApiVersions and
 * WriteTxnMarkers with scripted per-partition errors and record what
 * they were sent. Covered: markers of two transactions to one broker in
 * one request, retriable errors and a dropped connection retried until
 * success, deleted or absent topics done without a marker (also while a
 * broker keeps answering UNKNOWN_TOPIC_OR_PARTITION), fencing errors
 * ending the job, a job without partitions, stop dropping what is not
 * done, and forgetting the jobs of an unloaded shard.
 * txn_coord_markers_done is this test's (the coordinator is not linked
 * in): it records its arguments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker.h"
#include "config.h"
#include "controller/controller.h"
#include "coord/txn_coord.h"
#include "coord/txn_markers_send.h"
#include "log/fsutil.h"
#include "proto/gen/api_versions_response.h"
#include "proto/gen/broker_heartbeat_request.h"
#include "proto/gen/broker_registration_request.h"
#include "proto/gen/kapi.h"
#include "proto/gen/request_header.h"
#include "proto/gen/response_header.h"
#include "proto/gen/write_txn_markers_request.h"
#include "proto/gen/write_txn_markers_response.h"
#include "proto/kerr.h"
#include "replica/partition.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/uuid.h"
#include "node_fixture.h"

#define WAIT_MS 15000

/* ---- the coordinator's side: recorded reports ---- */

struct done_call {
    int32_t partition, coord_epoch;
    char id[64];
    int64_t pid;
    int16_t epoch;
    bool commit;
    bool other_thread;
};

static pthread_mutex_t done_mu = PTHREAD_MUTEX_INITIALIZER;
static struct done_call done_calls[32];
static int ndone;
static pthread_t main_thread;
static struct txn_coord *const fake_tc = (struct txn_coord *)&done_mu; /* any non-NULL pointer */

void txn_coord_markers_done(struct txn_coord *tc, int32_t partition, int32_t coord_epoch, kstr_t id, int64_t pid,
                            int16_t epoch, bool commit)
{
    assert_ptr_equal(tc, fake_tc);
    pthread_mutex_lock(&done_mu);
    if (ndone < 32) {
        struct done_call *c = &done_calls[ndone++];
        c->partition = partition;
        c->coord_epoch = coord_epoch;
        snprintf(c->id, sizeof c->id, "%.*s", (int)id.len, id.p);
        c->pid = pid;
        c->epoch = epoch;
        c->commit = commit;
        c->other_thread = !pthread_equal(pthread_self(), main_thread);
    }
    pthread_mutex_unlock(&done_mu);
}

static int done_count(void)
{
    pthread_mutex_lock(&done_mu);
    int n = ndone;
    pthread_mutex_unlock(&done_mu);
    return n;
}

static const struct done_call *done_of(const char *id)
{
    for (int i = 0; i < ndone; i++)
        if (!strcmp(done_calls[i].id, id))
            return &done_calls[i];
    return NULL;
}

static void assert_done(const char *id, int32_t partition, int32_t coord_epoch, int64_t pid, int16_t epoch,
                        bool commit)
{
    const struct done_call *c = done_of(id);
    assert_non_null(c);
    assert_int_equal(c->partition, partition);
    assert_int_equal(c->coord_epoch, coord_epoch);
    assert_int_equal(c->pid, pid);
    assert_int_equal(c->epoch, epoch);
    assert_int_equal(c->commit, commit);
    assert_true(c->other_thread);
}

/* ---- fake brokers ---- */

struct seen {
    int req;      /* 1-based number of the WriteTxnMarkers request */
    int16_t version;
    int64_t pid;
    int16_t epoch;
    bool commit;
    int32_t coord_epoch;
    char topic[32];
    int32_t partition;
    int16_t answered;
};

struct script {
    char topic[32];
    int32_t partition;
    int16_t errs[4];
    int nerrs, used;
    bool sticky; /* repeat the last error for ever */
};

struct fake {
    int lfd, port;
    pthread_t thread;
    pthread_mutex_t mu;
    int nreq;
    int drop; /* WriteTxnMarkers requests to answer by closing the connection */
    struct seen seen[128];
    int nseen;
    struct script script[16];
    int nscript;
};

static bool read_full(int fd, void *p, size_t n)
{
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r <= 0)
            return false;
        p = (char *)p + r;
        n -= (size_t)r;
    }
    return true;
}

static int16_t scripted(struct fake *fk, const char *topic, int32_t partition)
{
    for (int i = 0; i < fk->nscript; i++) {
        struct script *s = &fk->script[i];
        if (strcmp(s->topic, topic) || s->partition != partition)
            continue;
        if (s->used < s->nerrs)
            return s->errs[s->used++];
        return s->sticky ? s->errs[s->nerrs - 1] : 0;
    }
    return 0;
}

/* False: close the connection instead of answering. */
static bool fake_answer(struct fake *fk, int fd, const uint8_t *frame, size_t len)
{
    struct arena ar = ARENA_INIT;
    int16_t key = (int16_t)be16_read(frame), v = (int16_t)be16_read(frame + 2);
    const struct kapi *api = kapi_get(key);
    struct kreader r;
    kr_init(&r, frame, len, &ar);
    request_header_t h;
    request_header_decode(&r, (int16_t)kapi_request_header_version(api, v), &h);
    struct kwriter w;
    kw_init(&w);
    kw_i32(&w, 0);
    response_header_t rh = {h.correlation_id};
    response_header_encode(&w, (int16_t)kapi_response_header_version(api, v), &rh);
    bool ok = true;
    if (key == KAPI_API_VERSIONS) {
        api_versions_response_t m;
        api_versions_response_init(&m);
        m.api_keys.a = api_versions_response_api_version_new_array(&ar, 2);
        m.api_keys.n = 2;
        m.api_keys.a[0] = (api_versions_response_api_version_t){KAPI_API_VERSIONS, 0, 3};
        m.api_keys.a[1] = (api_versions_response_api_version_t){WRITE_TXN_MARKERS_REQUEST_API_KEY, 0, 1};
        api_versions_response_encode(&w, v > 3 ? 3 : v, &m);
    } else if (key == WRITE_TXN_MARKERS_REQUEST_API_KEY) {
        write_txn_markers_request_t q;
        assert_int_equal(write_txn_markers_request_decode(&r, v, &q), 0);
        write_txn_markers_response_t m;
        write_txn_markers_response_init(&m);
        m.markers.a = write_txn_markers_response_writable_txn_marker_result_new_array(&ar, q.markers.n);
        m.markers.n = q.markers.n;
        pthread_mutex_lock(&fk->mu);
        int req = ++fk->nreq;
        if (fk->drop > 0) {
            fk->drop--;
            ok = false;
        }
        for (int32_t i = 0; i < q.markers.n; i++) {
            const write_txn_markers_request_writable_txn_marker_t *qm = &q.markers.a[i];
            write_txn_markers_response_writable_txn_marker_result_t *rm = &m.markers.a[i];
            rm->producer_id = qm->producer_id;
            rm->topics.a = write_txn_markers_response_writable_txn_marker_topic_result_new_array(&ar, qm->topics.n);
            rm->topics.n = qm->topics.n;
            for (int32_t t = 0; t < qm->topics.n; t++) {
                rm->topics.a[t].name = qm->topics.a[t].name;
                int32_t np = qm->topics.a[t].partition_indexes.n;
                rm->topics.a[t].partitions.a =
                    write_txn_markers_response_writable_txn_marker_partition_result_new_array(&ar, np);
                rm->topics.a[t].partitions.n = np;
                for (int32_t p = 0; p < np; p++) {
                    int32_t pi = qm->topics.a[t].partition_indexes.a[p];
                    assert_true(fk->nseen < 128);
                    struct seen *s = &fk->seen[fk->nseen++];
                    s->req = req;
                    s->version = v;
                    s->pid = qm->producer_id;
                    s->epoch = qm->producer_epoch;
                    s->commit = qm->transaction_result;
                    s->coord_epoch = qm->coordinator_epoch;
                    snprintf(s->topic, sizeof s->topic, "%.*s", (int)qm->topics.a[t].name.len,
                             qm->topics.a[t].name.p);
                    s->partition = pi;
                    s->answered = ok ? scripted(fk, s->topic, pi) : -1;
                    rm->topics.a[t].partitions.a[p].partition_index = pi;
                    rm->topics.a[t].partitions.a[p].error_code = s->answered;
                }
            }
        }
        pthread_mutex_unlock(&fk->mu);
        write_txn_markers_response_encode(&w, v, &m);
    } else {
        ok = false;
    }
    if (ok) {
        be32_write(w.b.data, (uint32_t)(w.b.len - 4));
        assert_int_equal(write(fd, w.b.data, w.b.len), (ssize_t)w.b.len);
    }
    kw_free(&w);
    arena_free(&ar);
    return ok;
}

static void *fake_main(void *arg)
{
    struct fake *fk = arg;
    int fd;
    while ((fd = accept(fk->lfd, NULL, NULL)) >= 0) {
        uint8_t sz[4];
        while (read_full(fd, sz, 4)) {
            uint32_t n = be32_read(sz);
            uint8_t *frame = malloc(n);
            bool more = read_full(fd, frame, n) && fake_answer(fk, fd, frame, n);
            free(frame);
            if (!more)
                break;
        }
        close(fd);
    }
    return NULL;
}

static void fake_start(struct fake *fk)
{
    memset(fk, 0, sizeof *fk);
    pthread_mutex_init(&fk->mu, NULL);
    fk->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fk->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(fk->lfd, 4), 0);
    socklen_t sl = sizeof sa;
    getsockname(fk->lfd, (struct sockaddr *)&sa, &sl);
    fk->port = ntohs(sa.sin_port);
    assert_int_equal(pthread_create(&fk->thread, NULL, fake_main, fk), 0);
}

static void fake_stop(struct fake *fk)
{
    shutdown(fk->lfd, SHUT_RDWR);
    close(fk->lfd);
    pthread_join(fk->thread, NULL);
    pthread_mutex_destroy(&fk->mu);
}

/* Forgets what was sent and scripted (between tests). */
static void fake_reset(struct fake *fk)
{
    pthread_mutex_lock(&fk->mu);
    fk->nreq = fk->nseen = fk->nscript = fk->drop = 0;
    pthread_mutex_unlock(&fk->mu);
}

static void fake_script(struct fake *fk, const char *topic, int32_t partition, bool sticky, int n, ...)
{
    pthread_mutex_lock(&fk->mu);
    struct script *s = &fk->script[fk->nscript++];
    memset(s, 0, sizeof *s);
    snprintf(s->topic, sizeof s->topic, "%s", topic);
    s->partition = partition;
    s->sticky = sticky;
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        s->errs[i] = (int16_t)va_arg(ap, int);
    va_end(ap);
    s->nerrs = n;
    pthread_mutex_unlock(&fk->mu);
}

static int fake_nreq(struct fake *fk)
{
    pthread_mutex_lock(&fk->mu);
    int n = fk->nreq;
    pthread_mutex_unlock(&fk->mu);
    return n;
}

/* How many times topic-partition was sent (answered or not). */
static int fake_sent(struct fake *fk, const char *topic, int32_t partition)
{
    int n = 0;
    pthread_mutex_lock(&fk->mu);
    for (int i = 0; i < fk->nseen; i++)
        n += !strcmp(fk->seen[i].topic, topic) && fk->seen[i].partition == partition;
    pthread_mutex_unlock(&fk->mu);
    return n;
}

/* ---- the cluster: a real controller, brokers 2 and 3 the fakes ---- */

struct fx {
    char dir[256];
    struct samsa_config *cfg;
    struct broker b;
    struct coord_env env;
    struct controller *c;
    struct fake f2, f3;
    char msg[1024];
};

static struct fx *FX;

static int wait_op(struct ctl_op *op)
{
    if (!op)
        return 0;
    int err = KERR_REQUEST_TIMED_OUT;
    for (int i = 0; i < 20000 && !ctl_op_done(op, &err); i++)
        usleep(1000);
    ctl_op_release(op);
    return err;
}

/* Registers broker id at 127.0.0.1:port and unfences it. */
static void add_broker(struct fx *f, int32_t id, int port)
{
    struct arena a = ARENA_INIT;
    broker_registration_request_t q;
    broker_registration_request_init(&q);
    q.broker_id = id;
    q.cluster_id = KSTR("test-cluster");
    assert_int_equal(uuid_random(q.incarnation_id.b), 0);
    q.listeners.a = broker_registration_request_listener_new_array(&a, 1);
    q.listeners.n = 1;
    q.listeners.a[0].name = KSTR_LIT("PLAINTEXT");
    q.listeners.a[0].host = KSTR_LIT("127.0.0.1");
    q.listeners.a[0].port = (uint16_t)port;
    q.features.a = broker_registration_request_feature_new_array(&a, 1);
    q.features.n = 1;
    q.features.a[0].name = KSTR_LIT("metadata.version");
    q.features.a[0].min_supported_version = 1;
    q.features.a[0].max_supported_version = CONTROLLER_METADATA_VERSION;
    q.rack = KSTR_NULL;
    q.previous_broker_epoch = -1;
    int64_t epoch;
    struct ctl_op *op;
    assert_int_equal(controller_register_broker(f->c, &q, &epoch, &op), 0);
    arena_free(&a);
    assert_int_equal(wait_op(op), 0);
    broker_heartbeat_request_t h;
    broker_heartbeat_request_init(&h);
    h.broker_id = id;
    h.broker_epoch = epoch;
    h.current_metadata_offset = epoch;
    bool fenced, caught_up, shut;
    assert_int_equal(controller_broker_heartbeat(f->c, &h, &fenced, &caught_up, &shut, &op), 0);
    assert_false(fenced);
    assert_int_equal(wait_op(op), 0);
}

/* Topic name with nparts partitions, each on broker `on` alone. */
static void create_topic(struct fx *f, const char *name, int32_t nparts, int32_t on)
{
    int32_t one[1] = {on};
    const int32_t *assign[8];
    int32_t len[8];
    for (int32_t i = 0; i < nparts; i++) {
        assign[i] = one;
        len[i] = 1;
    }
    struct topic_spec s;
    memset(&s, 0, sizeof s);
    s.name = KSTR(name);
    s.num_partitions = -1;
    s.replication_factor = -1;
    s.nassign = nparts;
    s.assign = assign;
    s.assign_len = len;
    assert_int_equal(controller_create_topic(f->c, &s, false, NULL, f->msg, sizeof f->msg, NULL), 0);
    struct mimage *m = controller_image(f->c);
    const struct mi_topic *t = mimage_topic(m, KSTR(name));
    assert_non_null(t);
    assert_int_equal(mi_topic_partition(t, 0)->leader, on);
    mimage_release(m);
}

static void delete_topic(struct fx *f, const char *name)
{
    struct mimage *m = controller_image(f->c);
    const struct mi_topic *t = mimage_topic(m, KSTR(name));
    assert_non_null(t);
    kuuid_t id = t->id;
    mimage_release(m);
    assert_int_equal(controller_delete_topic(f->c, &id, f->msg, sizeof f->msg, NULL), 0);
}

static int group_setup(void **state)
{
    (void)state;
    main_thread = pthread_self();
    struct fx *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/samsa-txnsend-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    f->cfg = config_new();
    char err[512];
    assert_int_equal(config_set(f->cfg, "log.dirs", f->dir, err, sizeof err), 0);
    /* Brokers 2 and 3 exist only through this test's calls. */
    assert_int_equal(config_set(f->cfg, "broker.session.timeout.ms", "600000", err, sizeof err), 0);
    f->b.cfg = f->cfg;
    f->b.node_id = f->cfg->node_id;
    snprintf(f->b.cluster_id, sizeof f->b.cluster_id, "test-cluster");
    snprintf(f->b.advertised_host, sizeof f->b.advertised_host, "127.0.0.1");
    f->b.advertised_port = 9092;
    f->b.partitions = fixture_preg_create(&f->b);
    f->c = fixture_controller_open(&f->b, f->dir, err, sizeof err);
    if (!f->c)
        fail_msg("controller_open: %s", err);
    f->b.controller = f->c;
    f->env = (struct coord_env){.cfg = f->cfg, .controller = f->c, .partitions = f->b.partitions,
                                    .node_id = f->b.node_id};
    fake_start(&f->f2);
    fake_start(&f->f3);
    add_broker(f, 2, f->f2.port);
    add_broker(f, 3, f->f3.port);
    FX = f;
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    struct fx *f = FX;
    fake_stop(&f->f2);
    fake_stop(&f->f3);
    controller_close(f->c, true);
    preg_destroy(f->b.partitions, true);
    config_free(f->cfg);
    fs_remove_tree(f->dir);
    free(f);
    return 0;
}

static int test_setup(void **state)
{
    (void)state;
    fake_reset(&FX->f2);
    fake_reset(&FX->f3);
    pthread_mutex_lock(&done_mu);
    ndone = 0;
    pthread_mutex_unlock(&done_mu);
    return 0;
}

static void job_init(struct txn_marker_job *j, const char *id, int32_t txn_partition, int32_t coord_epoch,
                     int64_t pid, int16_t epoch, bool commit, const struct txn_tp *parts, int32_t nparts)
{
    j->id = KSTR(id);
    j->txn_partition = txn_partition;
    j->coord_epoch = coord_epoch;
    j->producer_id = pid;
    j->producer_epoch = epoch;
    j->commit = commit;
    j->parts = parts;
    j->nparts = nparts;
}

/* Bounded wait until the sender has nothing left. */
static void wait_idle(struct txn_sender *s)
{
    int64_t end = clock_mono_ms() + WAIT_MS;
    while (txn_sender_pending(s) > 0 && clock_mono_ms() < end)
        usleep(2000);
    assert_int_equal(txn_sender_pending(s), 0);
}

static void wait_nreq(struct fake *fk, int n)
{
    int64_t end = clock_mono_ms() + WAIT_MS;
    while (fake_nreq(fk) < n && clock_mono_ms() < end)
        usleep(2000);
    assert_true(fake_nreq(fk) >= n);
}

/* ---- tests ---- */

/* Two transactions, both with a partition on broker 2, one also on
 * broker 3: broker 2 gets a single request with both markers, each
 * marker its job's fields; both reported with their exact arguments. */
static void test_batching_and_report(void **state)
{
    (void)state;
    struct fx *f = FX;
    create_topic(f, "a", 2, 2);
    create_topic(f, "b", 1, 3);
    struct txn_sender *s = txn_sender_create(&f->env, fake_tc);
    assert_non_null(s);
    struct txn_tp p1[] = {{"a", 0}, {"b", 0}}, p2[] = {{"a", 1}};
    struct txn_marker_job j1, j2;
    job_init(&j1, "tx-one", 7, 4, 1000, 3, true, p1, 2);
    job_init(&j2, "tx-two", 9, 5, 2000, 6, false, p2, 1);
    /* Queued before the thread runs: its first step sees both. */
    txn_sender_send(s, &j1);
    txn_sender_send(s, &j2);
    assert_int_equal(txn_sender_pending(s), 2);
    txn_sender_start(s);
    wait_idle(s);

    assert_int_equal(fake_nreq(&f->f2), 1);
    assert_int_equal(fake_nreq(&f->f3), 1);
    pthread_mutex_lock(&f->f2.mu);
    assert_int_equal(f->f2.nseen, 2);
    for (int i = 0; i < 2; i++) {
        const struct seen *x = &f->f2.seen[i];
        assert_int_equal(x->req, 1);
        assert_int_equal(x->version, 1);
        assert_string_equal(x->topic, "a");
        bool first = x->pid == 1000;
        assert_int_equal(x->pid, first ? 1000 : 2000);
        assert_int_equal(x->partition, first ? 0 : 1);
        assert_int_equal(x->epoch, first ? 3 : 6);
        assert_int_equal(x->commit, first);
        assert_int_equal(x->coord_epoch, first ? 4 : 5);
    }
    assert_int_not_equal(f->f2.seen[0].pid, f->f2.seen[1].pid);
    pthread_mutex_unlock(&f->f2.mu);
    pthread_mutex_lock(&f->f3.mu);
    assert_int_equal(f->f3.nseen, 1);
    assert_int_equal(f->f3.seen[0].pid, 1000);
    assert_string_equal(f->f3.seen[0].topic, "b");
    assert_int_equal(f->f3.seen[0].partition, 0);
    assert_true(f->f3.seen[0].commit);
    pthread_mutex_unlock(&f->f3.mu);

    assert_int_equal(done_count(), 2);
    assert_done("tx-one", 7, 4, 1000, 3, true);
    assert_done("tx-two", 9, 5, 2000, 6, false);
    txn_sender_destroy(s);
}

/* A dropped connection, then NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS
 * and UNKNOWN_TOPIC_OR_PARTITION (the topic exists): each partition sent
 * again until it succeeds; the report comes once, after the last. */
static void test_retry_until_success(void **state)
{
    (void)state;
    struct fx *f = FX;
    create_topic(f, "r", 2, 2);
    pthread_mutex_lock(&f->f2.mu);
    f->f2.drop = 1;
    pthread_mutex_unlock(&f->f2.mu);
    fake_script(&f->f2, "r", 0, false, 2, KERR_NOT_LEADER_OR_FOLLOWER, KERR_NOT_ENOUGH_REPLICAS);
    fake_script(&f->f2, "r", 1, false, 1, KERR_UNKNOWN_TOPIC_OR_PARTITION);
    struct txn_sender *s = txn_sender_create(&f->env, fake_tc);
    txn_sender_start(s);
    struct txn_tp p[] = {{"r", 0}, {"r", 1}};
    struct txn_marker_job j;
    job_init(&j, "tx-retry", 11, 2, 3000, 1, true, p, 2);
    txn_sender_send(s, &j);
    wait_idle(s);
    /* dropped (both), r-0 and r-1 fail, r-0 fails and r-1 succeeds, r-0 succeeds */
    assert_int_equal(fake_nreq(&f->f2), 4);
    assert_int_equal(fake_sent(&f->f2, "r", 0), 4);
    assert_int_equal(fake_sent(&f->f2, "r", 1), 3);
    assert_int_equal(done_count(), 1);
    assert_done("tx-retry", 11, 2, 3000, 1, true);
    txn_sender_destroy(s);
}

/* A deleted topic and one that never existed need no marker; a broker
 * answering UNKNOWN_TOPIC_OR_PARTITION is asked again until the topic
 * is gone from the image, then the job is done. */
static void test_deleted_topics(void **state)
{
    (void)state;
    struct fx *f = FX;
    create_topic(f, "d", 1, 2);
    create_topic(f, "e", 1, 2);
    delete_topic(f, "d");
    fake_script(&f->f2, "e", 0, true, 1, KERR_UNKNOWN_TOPIC_OR_PARTITION);
    struct txn_sender *s = txn_sender_create(&f->env, fake_tc);
    txn_sender_start(s);
    struct txn_tp p[] = {{"d", 0}, {"never", 0}, {"e", 0}};
    struct txn_marker_job j;
    job_init(&j, "tx-deleted", 3, 8, 4000, 2, false, p, 3);
    txn_sender_send(s, &j);
    wait_nreq(&f->f2, 2);
    assert_int_equal(done_count(), 0);
    assert_int_equal(txn_sender_pending(s), 1);
    delete_topic(f, "e");
    wait_idle(s);
    assert_int_equal(fake_sent(&f->f2, "d", 0), 0);
    assert_int_equal(fake_sent(&f->f2, "never", 0), 0);
    assert_true(fake_sent(&f->f2, "e", 0) >= 2);
    assert_int_equal(done_count(), 1);
    assert_done("tx-deleted", 3, 8, 4000, 2, false);
    txn_sender_destroy(s);
}

/* TRANSACTION_COORDINATOR_FENCED, INVALID_PRODUCER_EPOCH and a fatal
 * error (CORRUPT_MESSAGE) end their partitions: one request, reported. */
static void test_fenced_is_done(void **state)
{
    (void)state;
    struct fx *f = FX;
    create_topic(f, "fenced", 3, 2);
    fake_script(&f->f2, "fenced", 0, true, 1, KERR_TRANSACTION_COORDINATOR_FENCED);
    fake_script(&f->f2, "fenced", 1, true, 1, KERR_INVALID_PRODUCER_EPOCH);
    fake_script(&f->f2, "fenced", 2, true, 1, KERR_CORRUPT_MESSAGE);
    struct txn_sender *s = txn_sender_create(&f->env, fake_tc);
    txn_sender_start(s);
    struct txn_tp p[] = {{"fenced", 0}, {"fenced", 1}, {"fenced", 2}};
    struct txn_marker_job j;
    job_init(&j, "tx-fenced", 0, 1, 5000, 9, true, p, 3);
    txn_sender_send(s, &j);
    wait_idle(s);
    assert_int_equal(fake_nreq(&f->f2), 1);
    assert_int_equal(done_count(), 1);
    assert_done("tx-fenced", 0, 1, 5000, 9, true);
    txn_sender_destroy(s);
}

/* A job without partitions is reported at once; stop drops a job still
 * being retried, without a report. */
static void test_empty_job_and_stop(void **state)
{
    (void)state;
    struct fx *f = FX;
    create_topic(f, "stuck", 1, 3);
    fake_script(&f->f3, "stuck", 0, true, 1, KERR_NOT_ENOUGH_REPLICAS);
    struct txn_sender *s = txn_sender_create(&f->env, fake_tc);
    txn_sender_start(s);
    struct txn_marker_job j;
    job_init(&j, "tx-empty", 5, 1, 6000, 0, false, NULL, 0);
    txn_sender_send(s, &j);
    wait_idle(s);
    assert_int_equal(done_count(), 1);
    assert_done("tx-empty", 5, 1, 6000, 0, false);

    struct txn_tp p[] = {{"stuck", 0}};
    job_init(&j, "tx-stuck", 5, 1, 6001, 0, true, p, 1);
    txn_sender_send(s, &j);
    wait_nreq(&f->f3, 3); /* retried after backoffs */
    assert_int_equal(txn_sender_pending(s), 1);
    txn_sender_stop(s);
    assert_int_equal(txn_sender_pending(s), 0);
    assert_int_equal(done_count(), 1);
    /* After stop, new jobs are not taken. */
    txn_sender_send(s, &j);
    assert_int_equal(txn_sender_pending(s), 0);
    txn_sender_destroy(s);
}

/* txn_sender_forget (a shard unloaded): queued jobs of that partition
 * and epoch (or older) go at once, newer epochs and other partitions
 * stay; an active job being retried stops, unreported. */
static void test_forget(void **state)
{
    (void)state;
    struct fx *f = FX;
    create_topic(f, "ok", 1, 2);
    create_topic(f, "held", 1, 3);
    fake_script(&f->f3, "held", 0, true, 1, KERR_NOT_LEADER_OR_FOLLOWER);
    struct txn_sender *s = txn_sender_create(&f->env, fake_tc);
    struct txn_tp ok[] = {{"ok", 0}}, held[] = {{"held", 0}};
    struct txn_marker_job a, b, c;
    job_init(&a, "tx-old", 12, 3, 7000, 1, true, held, 1);
    job_init(&b, "tx-new", 12, 5, 7001, 1, true, ok, 1);
    job_init(&c, "tx-other", 13, 3, 7002, 1, false, ok, 1);
    txn_sender_send(s, &a);
    txn_sender_send(s, &b);
    txn_sender_send(s, &c);
    txn_sender_forget(s, 12, 4);
    assert_int_equal(txn_sender_pending(s), 2);
    txn_sender_start(s);
    wait_idle(s);
    assert_int_equal(done_count(), 2);
    assert_null(done_of("tx-old"));
    assert_done("tx-new", 12, 5, 7001, 1, true);
    assert_done("tx-other", 13, 3, 7002, 1, false);
    assert_int_equal(fake_nreq(&f->f3), 0);

    struct txn_marker_job d;
    job_init(&d, "tx-retrying", 14, 1, 7003, 2, true, held, 1);
    txn_sender_send(s, &d);
    wait_nreq(&f->f3, 2);
    txn_sender_forget(s, 14, 1);
    wait_idle(s);
    int n = fake_nreq(&f->f3);
    usleep(300 * 1000); /* three backoffs: nothing more is sent */
    assert_int_equal(fake_nreq(&f->f3), n);
    assert_int_equal(done_count(), 2);
    txn_sender_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_batching_and_report, test_setup),
        cmocka_unit_test_setup(test_retry_until_success, test_setup),
        cmocka_unit_test_setup(test_deleted_topics, test_setup),
        cmocka_unit_test_setup(test_fenced_is_done, test_setup),
        cmocka_unit_test_setup(test_empty_job_and_stop, test_setup),
        cmocka_unit_test_setup(test_forget, test_setup),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
