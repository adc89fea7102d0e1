/* produce phase: send N records as fast as librdkafka will take them (or
 * paced at --rate) and time each from the produce call to its delivery
 * report. */
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hist.h"
#include "loadgen.h"

struct pstate {
    struct hist lat;        /* microseconds, produce call -> delivery report */
    uint64_t delivered;
    uint64_t failed;
    uint64_t last_dr_us;
    char first_err[256];
    uint64_t txns;          /* transactions committed */
    struct hist commit;     /* microseconds per commit_transaction call */
};

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    struct pstate *st = opaque;
    uint64_t now = lg_now_us();
    st->last_dr_us = now;
    if (m->err) {
        if (st->failed++ == 0)
            snprintf(st->first_err, sizeof st->first_err, "%s [%s-%" PRId32 "]",
                     rd_kafka_err2str(m->err), rd_kafka_topic_name(m->rkt), m->partition);
        return;
    }
    st->delivered++;
    uint64_t sent = (uint64_t)(uintptr_t)m->_private;
    hist_record(&st->lat, now >= sent ? now - sent : 0);
}

/* Paced sending waits for the next record's time without spinning: at
 * 10 000 records/s the gap is 100 us, under rd_kafka_poll's millisecond
 * timeout, and a loop of rd_kafka_poll(rk, 0) until then kept a whole
 * CPU busy, which on a small machine delayed the very server being
 * measured. Instead librdkafka writes to a pipe when a delivery report
 * is queued (rd_kafka_queue_io_event_enable), and ppoll waits for that
 * or the due time, whichever comes first, to the microsecond: reports
 * are still served (and timed) as they arrive. */
struct pacer {
    int rfd, wfd; /* -1: no pipe, rd_kafka_poll as before */
};

static void pacer_init(struct pacer *p, rd_kafka_t *rk)
{
    int fds[2];
    p->rfd = p->wfd = -1;
    if (pipe(fds) != 0)
        return;
    for (int i = 0; i < 2; i++) {
        fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
        fcntl(fds[i], F_SETFD, FD_CLOEXEC);
    }
    p->rfd = fds[0];
    p->wfd = fds[1];
    rd_kafka_queue_t *q = rd_kafka_queue_get_main(rk);
    rd_kafka_queue_io_event_enable(q, p->wfd, "1", 1);
    rd_kafka_queue_destroy(q);
}

/* Before rd_kafka_destroy, which must not write into a closed pipe. */
static void pacer_free(struct pacer *p, rd_kafka_t *rk)
{
    if (p->rfd < 0)
        return;
    rd_kafka_queue_t *q = rd_kafka_queue_get_main(rk);
    rd_kafka_queue_io_event_enable(q, -1, NULL, 0);
    rd_kafka_queue_destroy(q);
    close(p->rfd);
    close(p->wfd);
    p->rfd = p->wfd = -1;
}

/* Serves delivery reports until due (lg_now_us's clock). */
static void pacer_wait(struct pacer *p, rd_kafka_t *rk, uint64_t due)
{
    for (uint64_t now = lg_now_us(); now < due; now = lg_now_us()) {
        if (p->rfd < 0) {
            rd_kafka_poll(rk, (int)((due - now) / 1000));
            continue;
        }
        struct pollfd pf = {.fd = p->rfd, .events = POLLIN};
        struct timespec ts = {.tv_sec = (time_t)((due - now) / 1000000u),
                              .tv_nsec = (long)((due - now) % 1000000u) * 1000L};
        if (ppoll(&pf, 1, &ts, NULL) > 0) {
            char b[64];
            while (read(p->rfd, b, sizeof b) > 0)
                ;
            rd_kafka_poll(rk, 0);
        }
    }
}

void lg_txn_conf(rd_kafka_conf_t *conf, const struct lg_opts *o, const char *phase)
{
    char tid[256];
    snprintf(tid, sizeof tid, "samsa-loadgen-%s-%s-%ld", phase, o->topic, (long)getpid());
    lg_conf_set(conf, "transactional.id", tid);
}

int lg_txn_check(rd_kafka_error_t *e, const char *what)
{
    if (!e)
        return 0;
    fprintf(stderr, "samsa-loadgen: %s: %s%s\n", what, rd_kafka_error_string(e),
            rd_kafka_error_is_fatal(e) ? " (fatal)" : "");
    rd_kafka_error_destroy(e);
    return -1;
}

int lg_txn_commit(rd_kafka_t *rk, int timeout_ms)
{
    rd_kafka_flush(rk, timeout_ms);
    return lg_txn_check(rd_kafka_commit_transaction(rk, timeout_ms), "commit_transaction");
}

int lg_create_topic(rd_kafka_t *rk, const struct lg_opts *o)
{
    char err[512];
    rd_kafka_NewTopic_t *nt =
        rd_kafka_NewTopic_new(o->topic, o->partitions, o->replication, err, sizeof err);
    if (!nt) {
        fprintf(stderr, "samsa-loadgen: topic %s: %s\n", o->topic, err);
        return -1;
    }
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *ao = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_operation_timeout(ao, 10000, err, sizeof err);
    rd_kafka_CreateTopics(rk, &nt, 1, ao, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 20000);
    int rc = -1;
    if (!ev) {
        fprintf(stderr, "samsa-loadgen: CreateTopics %s: no answer in 20 s\n", o->topic);
    } else if (rd_kafka_event_error(ev)) {
        fprintf(stderr, "samsa-loadgen: CreateTopics %s: %s\n", o->topic,
                rd_kafka_event_error_string(ev));
    } else {
        size_t n = 0;
        const rd_kafka_topic_result_t **tr =
            rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
        rd_kafka_resp_err_t e = n == 1 ? rd_kafka_topic_result_error(tr[0])
                                       : RD_KAFKA_RESP_ERR__BAD_MSG;
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR || e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
            rc = 0;
        else
            fprintf(stderr, "samsa-loadgen: CreateTopics %s: %s\n", o->topic,
                    n == 1 && rd_kafka_topic_result_error_string(tr[0])
                        ? rd_kafka_topic_result_error_string(tr[0])
                        : rd_kafka_err2str(e));
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(ao);
    rd_kafka_NewTopic_destroy(nt);
    rd_kafka_queue_destroy(q);
    return rc;
}

/* Random payloads come from one pool at varying offsets: distinct enough
 * that nothing downstream can shortcut identical records, without paying a
 * random-number generator per byte while the client and server share two
 * cores. */
#define POOL_SLACK 65536u

static char *make_pool(const struct lg_opts *o)
{
    size_t n = o->size + (o->random_payload ? POOL_SLACK : 0) + 1;
    char *p = malloc(n);
    if (!p) {
        fprintf(stderr, "samsa-loadgen: out of memory for a %zu-byte payload pool\n", n);
        exit(1);
    }
    if (o->random_payload) {
        uint64_t x = 0x9e3779b97f4a7c15ull ^ lg_now_us();
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            p[i] = (char)(x >> 32);
        }
    } else {
        memset(p, 'x', n);
    }
    return p;
}

static void print_result(const struct lg_opts *o, const struct pstate *st, double secs,
                         double cpu)
{
    const struct hist *h = &st->lat;
    double bytes = (double)st->delivered * (double)o->size;
    double rps = secs > 0 ? (double)st->delivered / secs : 0;
    double mbs = secs > 0 ? bytes / secs / 1e6 : 0;
    uint64_t p50 = hist_quantile(h, 0.50), p90 = hist_quantile(h, 0.90),
             p99 = hist_quantile(h, 0.99), p999 = hist_quantile(h, 0.999), mx = h->max;
    printf("produce: %" PRIu64 " records x %zu B acks=%s to %s in %.3f s: %.0f rec/s, %.2f MB/s; "
           "latency ms p50 %.3f p90 %.3f p99 %.3f p99.9 %.3f max %.3f; errors %" PRIu64 "\n",
           st->delivered, o->size, o->acks, o->topic, secs, rps, mbs, (double)p50 / 1e3, (double)p90 / 1e3,
           (double)p99 / 1e3, (double)p999 / 1e3, (double)mx / 1e3, st->failed);
    if (o->txn_size > 0)
        printf("produce: %" PRIu64 " transactions of up to %ld records; commit_transaction ms "
               "p50 %.3f p99 %.3f max %.3f\n",
               st->txns, o->txn_size, (double)hist_quantile(&st->commit, 0.50) / 1e3,
               (double)hist_quantile(&st->commit, 0.99) / 1e3, (double)st->commit.max / 1e3);
    if (o->json)
        printf("{\"phase\":\"produce\",\"topic\":\"%s\",\"records\":%" PRIu64 ",\"record_bytes\":%zu,"
               "\"bytes\":%.0f,\"acks\":\"%s\",\"seconds\":%.6f,\"records_per_s\":%.1f,"
               "\"mb_per_s\":%.3f,\"latency_us\":{\"p50\":%" PRIu64 ",\"p90\":%" PRIu64
               ",\"p99\":%" PRIu64 ",\"p99_9\":%" PRIu64 ",\"max\":%" PRIu64
               ",\"mean\":%.1f},\"errors\":%" PRIu64 ",\"client_cpu_s\":%.3f,"
               "\"txn_size\":%ld,\"transactions\":%" PRIu64 ",\"commit_p50_us\":%" PRIu64
               ",\"commit_p99_us\":%" PRIu64 "}\n",
               o->topic, st->delivered, o->size, bytes, o->acks, secs, rps, mbs, p50, p90, p99,
               p999, mx, hist_mean(h), st->failed, cpu, o->txn_size > 0 ? o->txn_size : 0,
               st->txns, hist_quantile(&st->commit, 0.50), hist_quantile(&st->commit, 0.99));
    fflush(stdout);
}

int lg_produce(const struct lg_opts *o)
{
    struct pstate *st = calloc(1, sizeof *st);
    if (!st)
        return 1;
    hist_init(&st->lat);
    hist_init(&st->commit);

    rd_kafka_conf_t *conf = lg_base_conf(o);
    char buf[32];
    lg_conf_set(conf, "acks", o->acks);
    lg_conf_set(conf, "compression.codec", o->compression);
    if (o->linger_ms >= 0) {
        snprintf(buf, sizeof buf, "%d", o->linger_ms);
        lg_conf_set(conf, "linger.ms", buf);
    }
    if (o->batch_size > 0) {
        snprintf(buf, sizeof buf, "%ld", o->batch_size);
        lg_conf_set(conf, "batch.size", buf);
    }
    if (o->batch_num > 0) {
        snprintf(buf, sizeof buf, "%ld", o->batch_num);
        lg_conf_set(conf, "batch.num.messages", buf);
    }
    if (o->max_inflight > 0) {
        snprintf(buf, sizeof buf, "%d", o->max_inflight);
        lg_conf_set(conf, "max.in.flight.requests.per.connection", buf);
    }
    if (o->idempotence)
        lg_conf_set(conf, "enable.idempotence", "true");
    if (o->txn_size > 0)
        lg_txn_conf(conf, o, "produce");
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_opaque(conf, st);

    char err[512];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!rk) {
        fprintf(stderr, "samsa-loadgen: %s\n", err);
        return 2;
    }
    if (o->partitions > 0 && lg_create_topic(rk, o) < 0) {
        rd_kafka_destroy(rk);
        return 1;
    }
    if (lg_wait_topic(rk, o->topic, 30000) < 0) {
        rd_kafka_destroy(rk);
        return 1;
    }
    if (o->txn_size > 0 && lg_txn_check(rd_kafka_init_transactions(rk, o->stall_s * 1000),
                                        "init_transactions")) {
        rd_kafka_destroy(rk);
        return 1;
    }
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, o->topic, NULL);
    char *pool = make_pool(o);
    struct pacer pacer = {-1, -1};
    if (o->rate_given)
        pacer_init(&pacer, rk);

    uint64_t n = (uint64_t)o->records;
    uint64_t t0 = lg_now_us();
    double cpu0 = lg_cpu_s();
    uint64_t last_progress = t0, last_seen = 0, last_report = t0;
    st->last_dr_us = t0;
    int stalled = 0;
    uint64_t in_txn = 0;

    for (uint64_t i = 0; i < n && !stalled; i++) {
        if (o->txn_size > 0 && in_txn == 0 &&
            lg_txn_check(rd_kafka_begin_transaction(rk), "begin_transaction")) {
            stalled = 2;
            break;
        }
        /* a multiplicative hash spreads consecutive records over the pool */
        const char *val = pool + (o->random_payload ? ((i * 2654435761u) % POOL_SLACK) : 0);
        char key[32];
        int klen = o->keys > 0 ? snprintf(key, sizeof key, "k%" PRIu64, i % (uint64_t)o->keys) : 0;
        void *kp = klen > 0 ? key : NULL;
        if (o->rate_given) {
            /* paced: record i leaves at t0 + i/rate; delivery reports are
             * served while waiting */
            pacer_wait(&pacer, rk, t0 + i * 1000000u / (uint64_t)o->rate);
        }
        for (;;) {
            uint64_t now = lg_now_us();
            rd_kafka_resp_err_t e = rd_kafka_producev(
                rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_VALUE((void *)val, o->size),
                RD_KAFKA_V_KEY(kp, (size_t)klen),
                RD_KAFKA_V_MSGFLAGS(0), RD_KAFKA_V_OPAQUE((void *)(uintptr_t)now), RD_KAFKA_V_END);
            if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
                break;
            if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                char why[512] = "";
                if (e == RD_KAFKA_RESP_ERR__FATAL)
                    rd_kafka_fatal_error(rk, why, sizeof why);
                fprintf(stderr, "samsa-loadgen: produce: %s%s%s\n", rd_kafka_err2str(e),
                        why[0] ? ": " : "", why);
                stalled = 2;
                break;
            }
            /* the local queue is full: only delivery reports make room */
            rd_kafka_poll(rk, 1);
            if (st->delivered + st->failed != last_seen) {
                last_seen = st->delivered + st->failed;
                last_progress = lg_now_us();
            } else if (lg_now_us() - last_progress > (uint64_t)o->stall_s * 1000000u) {
                stalled = 1;
                break;
            }
        }
        if (!stalled && o->txn_size > 0 && (++in_txn == (uint64_t)o->txn_size || i + 1 == n)) {
            /* commit flushes: every record of the transaction is
             * delivered when it returns */
            uint64_t c0 = lg_now_us();
            if (lg_txn_commit(rk, o->stall_s * 1000)) {
                stalled = 2;
                break;
            }
            hist_record(&st->commit, lg_now_us() - c0);
            st->txns++;
            in_txn = 0;
        }
        if ((i & 1023) == 0) {
            rd_kafka_poll(rk, 0);
            if (o->verbose && lg_now_us() - last_report >= 1000000u) {
                last_report = lg_now_us();
                fprintf(stderr, "produce: %" PRIu64 " sent, %" PRIu64 " delivered, %" PRIu64
                                " failed, %d queued\n",
                        i, st->delivered, st->failed, rd_kafka_outq_len(rk));
            }
        }
    }
    pacer_free(&pacer, rk);
    /* drain: every record must get its report before the clock stops */
    last_progress = lg_now_us();
    last_seen = st->delivered + st->failed;
    while (!stalled && rd_kafka_outq_len(rk) > 0) {
        rd_kafka_poll(rk, 50);
        uint64_t now = lg_now_us();
        if (st->delivered + st->failed != last_seen) {
            last_seen = st->delivered + st->failed;
            last_progress = now;
        } else if (now - last_progress > (uint64_t)o->stall_s * 1000000u) {
            stalled = 1;
        }
        if (o->verbose && now - last_report >= 1000000u) {
            last_report = now;
            fprintf(stderr, "produce: draining, %" PRIu64 " delivered, %" PRIu64
                            " failed, %d queued\n",
                    st->delivered, st->failed, rd_kafka_outq_len(rk));
        }
    }
    double secs = (double)(st->last_dr_us - t0) / 1e6;
    print_result(o, st, secs, lg_cpu_s() - cpu0);

    int rc = 0;
    if (stalled == 1) {
        fprintf(stderr, "samsa-loadgen: produce stalled: no delivery report for %d s with %d "
                        "records/requests outstanding (%" PRIu64 " delivered, %" PRIu64 " failed)\n",
                o->stall_s, rd_kafka_outq_len(rk), st->delivered, st->failed);
        rc = 3;
    } else if (stalled) {
        rc = 1;
    }
    if (st->failed) {
        fprintf(stderr, "samsa-loadgen: %" PRIu64 " records failed; first: %s\n", st->failed,
                st->first_err);
        rc = rc ? rc : 1;
    } else if (!stalled && st->delivered != n) {
        fprintf(stderr, "samsa-loadgen: %" PRIu64 " of %" PRIu64 " records delivered\n",
                st->delivered, n);
        rc = 1;
    }
    if (rc == 3) {
        /* a broker that stopped answering would hold destroy for up to
         * message.timeout.ms; the numbers are out, so leave now */
        rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        fflush(NULL);
        _Exit(rc);
    }
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    free(pool);
    free(st);
    return rc;
}
