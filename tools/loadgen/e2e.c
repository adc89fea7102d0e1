/* e2e phase: end-to-end latency, produce call to consumer delivery, at a
 * fixed rate, seen at once by a read_committed and a read_uncommitted
 * consumer of the same records. With --txn-size N the producer commits a
 * transaction every N records, so the read_committed reader waits for
 * the commit marker (the last stable offset) and the read_uncommitted
 * one does not: the difference is the price of isolation. Producer and
 * consumers share this process and its monotonic clock; each record's
 * first 8 bytes are its send time. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hist.h"
#include "loadgen.h"

struct reader {
    const struct lg_opts *o;
    const char *isolation;
    int np;
    uint64_t want;
    uint64_t got;
    uint64_t errors;
    int stalled;
    struct hist lat;        /* microseconds, produce call -> consumed */
    pthread_t thr;
};

static void *reader_main(void *arg)
{
    struct reader *r = arg;
    const struct lg_opts *o = r->o;
    rd_kafka_conf_t *conf = lg_base_conf(o);
    lg_conf_set(conf, "isolation.level", r->isolation);
    char err[512];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk) {
        fprintf(stderr, "samsa-loadgen: %s\n", err);
        r->stalled = 2;
        return NULL;
    }
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, o->topic, NULL);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    for (int p = 0; p < r->np; p++)
        if (rd_kafka_consume_start_queue(rkt, p, RD_KAFKA_OFFSET_BEGINNING, q) < 0) {
            fprintf(stderr, "samsa-loadgen: consume start %s-%d: %s\n", o->topic, p,
                    rd_kafka_err2str(rd_kafka_last_error()));
            r->stalled = 2;
            return NULL;
        }
    uint64_t last = lg_now_us();
    while (r->got < r->want) {
        rd_kafka_message_t *m = rd_kafka_consume_queue(q, 100);
        uint64_t now = lg_now_us();
        if (m) {
            if (m->err) {
                if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF && r->errors++ < 5)
                    fprintf(stderr, "samsa-loadgen: %s consumer: %s\n", r->isolation,
                            rd_kafka_message_errstr(m));
            } else if (m->len >= 8) {
                uint64_t sent;
                memcpy(&sent, m->payload, sizeof sent);
                hist_record(&r->lat, now >= sent ? now - sent : 0);
                r->got++;
                last = now;
            }
            rd_kafka_message_destroy(m);
        }
        if (now - last > (uint64_t)o->stall_s * 1000000u) {
            r->stalled = 1;
            break;
        }
    }
    for (int p = 0; p < r->np; p++)
        rd_kafka_consume_stop(rkt, p);
    rd_kafka_queue_destroy(q);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return NULL;
}

/* Counts failed deliveries. Having a delivery-report callback matters
 * beyond that: without one, librdkafka's flush (and so every
 * commit_transaction) has no event to wake on and waits in 10 ms steps. */
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    uint64_t *failed = opaque;
    if (m->err && (*failed)++ == 0)
        fprintf(stderr, "samsa-loadgen: delivery failed: %s\n", rd_kafka_err2str(m->err));
}

static void sleep_us(uint64_t us)
{
    struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000};
    nanosleep(&ts, NULL);
}

int lg_e2e(const struct lg_opts *o)
{
    if (o->size < 8) {
        fprintf(stderr, "samsa-loadgen: e2e: --size must be at least 8 (the send time)\n");
        return 2;
    }
    rd_kafka_conf_t *conf = lg_base_conf(o);
    lg_conf_set(conf, "acks", "all");
    lg_conf_set(conf, "enable.idempotence", "true");
    if (o->linger_ms >= 0) {
        char buf[32];
        snprintf(buf, sizeof buf, "%d", o->linger_ms);
        lg_conf_set(conf, "linger.ms", buf);
    }
    if (o->txn_size > 0)
        lg_txn_conf(conf, o, "e2e");
    static uint64_t dr_failed;
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_opaque(conf, &dr_failed);
    char err[512];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!rk) {
        fprintf(stderr, "samsa-loadgen: %s\n", err);
        return 2;
    }
    int np;
    if ((o->partitions > 0 && lg_create_topic(rk, o) < 0) ||
        (np = lg_wait_topic(rk, o->topic, 30000)) < 0) {
        rd_kafka_destroy(rk);
        return 1;
    }
    if (o->txn_size > 0 && lg_txn_check(rd_kafka_init_transactions(rk, o->stall_s * 1000),
                                        "init_transactions")) {
        rd_kafka_destroy(rk);
        return 1;
    }
    uint64_t n = (uint64_t)o->records;
    struct reader *rd = calloc(2, sizeof *rd);
    char *val = calloc(1, o->size);
    if (!rd || !val)
        return 1;
    const char *iso[2] = {"read_committed", "read_uncommitted"};
    for (int i = 0; i < 2; i++) {
        rd[i] = (struct reader){.o = o, .isolation = iso[i], .np = np, .want = n};
        hist_init(&rd[i].lat);
        if (pthread_create(&rd[i].thr, NULL, reader_main, &rd[i])) {
            fprintf(stderr, "samsa-loadgen: cannot start a consumer thread\n");
            return 1;
        }
    }
    /* the consumers' first fetches are under way before the clock starts */
    sleep_us(1000000u);

    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, o->topic, NULL);
    uint64_t t0 = lg_now_us(), in_txn = 0, txns = 0, behind_max = 0;
    struct hist *commit = malloc(sizeof *commit);   /* us per commit_transaction */
    if (!commit)
        return 1;
    hist_init(commit);
    int failed = 0;
    for (uint64_t i = 0; i < n && !failed; i++) {
        uint64_t due = t0 + i * 1000000u / (uint64_t)o->rate;
        uint64_t now = lg_now_us();
        /* sleeping per record would overshoot by the timer's slack each
         * time and miss the rate: records go out in short bursts, with a
         * sleep only when at least a millisecond ahead */
        if (now + 1000u < due)
            sleep_us(due - now);
        else if (now > due && now - due > behind_max)
            behind_max = now - due;
        if (o->txn_size > 0 && in_txn == 0 &&
            lg_txn_check(rd_kafka_begin_transaction(rk), "begin_transaction")) {
            failed = 1;
            break;
        }
        now = lg_now_us();
        memcpy(val, &now, sizeof now);
        for (;;) {
            rd_kafka_resp_err_t e = rd_kafka_producev(
                rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_VALUE(val, o->size),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
            if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
                break;
            if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                fprintf(stderr, "samsa-loadgen: produce: %s\n", rd_kafka_err2str(e));
                failed = 1;
                break;
            }
            rd_kafka_poll(rk, 1);
        }
        rd_kafka_poll(rk, 0);
        if (!failed && o->txn_size > 0 && (++in_txn == (uint64_t)o->txn_size || i + 1 == n)) {
            uint64_t c0 = lg_now_us();
            if (lg_txn_commit(rk, o->stall_s * 1000)) {
                failed = 1;
                break;
            }
            hist_record(commit, lg_now_us() - c0);
            txns++;
            in_txn = 0;
        }
    }
    if (!failed && rd_kafka_flush(rk, o->stall_s * 1000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        fprintf(stderr, "samsa-loadgen: e2e: records undelivered after %d s\n", o->stall_s);
        failed = 1;
    }
    if (dr_failed)
        failed = 1;
    double secs = (double)(lg_now_us() - t0) / 1e6;
    if (failed) {
        /* the readers would wait out their stall bound for records
         * that never come */
        fflush(NULL);
        _Exit(1);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(rd[i].thr, NULL);

    struct hist *c = &rd[0].lat, *u = &rd[1].lat;
    printf("e2e: %" PRIu64 " records x %zu B to %s at %ld rec/s target (%.0f achieved, at most "
           "%.1f ms behind), %s; latency ms read_committed p50 %.3f p99 %.3f max %.3f, "
           "read_uncommitted p50 %.3f p99 %.3f max %.3f\n",
           n, o->size, o->topic, o->rate, (double)n / secs, (double)behind_max / 1e3,
           o->txn_size > 0 ? "transactional" : "idempotent", hist_quantile(c, 0.5) / 1e3,
           hist_quantile(c, 0.99) / 1e3, c->max / 1e3, hist_quantile(u, 0.5) / 1e3,
           hist_quantile(u, 0.99) / 1e3, u->max / 1e3);
    if (o->txn_size > 0)
        printf("e2e: %" PRIu64 " transactions of %ld records; commit_transaction ms p50 %.3f "
               "p99 %.3f max %.3f\n",
               txns, o->txn_size, hist_quantile(commit, 0.5) / 1e3,
               hist_quantile(commit, 0.99) / 1e3, commit->max / 1e3);
    if (o->json)
        printf("{\"phase\":\"e2e\",\"topic\":\"%s\",\"records\":%" PRIu64 ",\"rate\":%ld,"
               "\"seconds\":%.6f,\"records_per_s\":%.1f,\"behind_max_us\":%" PRIu64
               ",\"txn_size\":%ld,\"transactions\":%" PRIu64 ",\"rc_got\":%" PRIu64
               ",\"ru_got\":%" PRIu64 ",\"rc_p50\":%" PRIu64 ",\"rc_p99\":%" PRIu64
               ",\"rc_max\":%" PRIu64 ",\"ru_p50\":%" PRIu64 ",\"ru_p99\":%" PRIu64
               ",\"ru_max\":%" PRIu64 ",\"commit_p50_us\":%" PRIu64 ",\"commit_p99_us\":%" PRIu64
               "}\n",
               o->topic, n, o->rate, secs, (double)n / secs, behind_max,
               o->txn_size > 0 ? o->txn_size : 0, txns, rd[0].got, rd[1].got,
               hist_quantile(c, 0.5), hist_quantile(c, 0.99), c->max, hist_quantile(u, 0.5),
               hist_quantile(u, 0.99), u->max, hist_quantile(commit, 0.5),
               hist_quantile(commit, 0.99));
    fflush(stdout);
    int rc = 0;
    for (int i = 0; i < 2; i++) {
        if (rd[i].stalled || rd[i].errors || rd[i].got != n) {
            fprintf(stderr, "samsa-loadgen: %s consumer got %" PRIu64 " of %" PRIu64
                            " records%s\n",
                    rd[i].isolation, rd[i].got, n,
                    rd[i].stalled == 1 ? " and stalled" : "");
            rc = 1;
        }
    }
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    free(val);
    free(rd);
    free(commit);
    return rc;
}
