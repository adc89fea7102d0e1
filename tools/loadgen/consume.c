/* consume phase: read a topic from the beginning of every partition with
 * the legacy queue API, which needs no group.id (samsa has no group
 * coordinator yet, and a KafkaConsumer with a group would keep asking for
 * one), and check that every offset arrives exactly once. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loadgen.h"

#define BATCH 4096
#define MAX_REPORTED 5

struct part {
    int64_t lo, hi;         /* watermarks at start */
    int64_t next;           /* offset expected next */
    int eof;
};

int lg_consume(const struct lg_opts *o)
{
    rd_kafka_conf_t *conf = lg_base_conf(o);
    lg_conf_set(conf, "enable.partition.eof", "true");
    char err[512];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk) {
        fprintf(stderr, "samsa-loadgen: %s\n", err);
        return 2;
    }
    int np = lg_wait_topic(rk, o->topic, 30000);
    if (np < 0) {
        rd_kafka_destroy(rk);
        return 1;
    }
    struct part *parts = calloc((size_t)np, sizeof *parts);
    rd_kafka_message_t **msgs = malloc(BATCH * sizeof *msgs);
    if (!parts || !msgs)
        return 1;
    int64_t available = 0;
    for (int p = 0; p < np; p++) {
        rd_kafka_resp_err_t e =
            rd_kafka_query_watermark_offsets(rk, o->topic, p, &parts[p].lo, &parts[p].hi, 10000);
        if (e) {
            fprintf(stderr, "samsa-loadgen: watermarks of %s-%d: %s\n", o->topic, p,
                    rd_kafka_err2str(e));
            rd_kafka_destroy(rk);
            return 1;
        }
        parts[p].next = parts[p].lo;
        available += parts[p].hi - parts[p].lo;
    }
    uint64_t expected = o->records_given ? (uint64_t)o->records : (uint64_t)available;
    int short_topic = 0;
    if (expected > (uint64_t)available) {
        /* waiting for records the log does not have would only end in a
         * stall; say what is missing and check what is there */
        fprintf(stderr, "samsa-loadgen: %s holds %" PRId64 " records (watermarks), not %" PRIu64 "\n",
                o->topic, available, expected);
        for (int p = 0; p < np; p++)
            fprintf(stderr, "  %s-%d: watermarks %" PRId64 "..%" PRId64 "\n", o->topic, p,
                    parts[p].lo, parts[p].hi);
        short_topic = 1;
        expected = (uint64_t)available;
    }

    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, o->topic, NULL);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    uint64_t t0 = lg_now_us();
    double cpu0 = lg_cpu_s();
    for (int p = 0; p < np; p++) {
        if (rd_kafka_consume_start_queue(rkt, p, RD_KAFKA_OFFSET_BEGINNING, q) < 0) {
            fprintf(stderr, "samsa-loadgen: consume start %s-%d: %s\n", o->topic, p,
                    rd_kafka_err2str(rd_kafka_last_error()));
            return 1;
        }
    }

    uint64_t count = 0, bytes = 0, errors = 0, offset_errs = 0, size_errs = 0;
    uint64_t last_msg = t0, last_report = t0;
    int stalled = 0;
    while (count < expected) {
        /* the batch call waits out its whole timeout unless the batch
         * fills, which would put up to that much idle time into the
         * measurement: take what is queued, and block only for one record */
        ssize_t got = rd_kafka_consume_batch_queue(q, 0, msgs, BATCH);
        if (got == 0) {
            rd_kafka_message_t *m = rd_kafka_consume_queue(q, 100);
            if (m) {
                msgs[0] = m;
                got = 1;
            }
        }
        uint64_t now = lg_now_us();
        for (ssize_t i = 0; i < got; i++) {
            rd_kafka_message_t *m = msgs[i];
            struct part *pt = m->partition >= 0 && m->partition < np ? &parts[m->partition] : NULL;
            if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                if (pt)
                    pt->eof = 1;
            } else if (m->err) {
                if (errors++ < MAX_REPORTED)
                    fprintf(stderr, "samsa-loadgen: consume %s-%" PRId32 ": %s\n", o->topic,
                            m->partition, rd_kafka_message_errstr(m));
            } else if (pt && count < expected) {
                /* a batch may run past -n; what lies beyond is not counted */
                if (m->offset != pt->next && offset_errs++ < MAX_REPORTED)
                    fprintf(stderr, "samsa-loadgen: %s-%" PRId32 ": offset %" PRId64
                                    " where %" PRId64 " was next (%s)\n",
                            o->topic, m->partition, m->offset, pt->next,
                            m->offset > pt->next ? "gap" : "repeat");
                if (o->size_given && m->len != o->size && size_errs++ < MAX_REPORTED)
                    fprintf(stderr, "samsa-loadgen: %s-%" PRId32 " offset %" PRId64
                                    ": %zu bytes, not %zu\n",
                            o->topic, m->partition, m->offset, m->len, o->size);
                pt->next = m->offset + 1;
                pt->eof = 0;
                count++;
                bytes += m->len + m->key_len;
                last_msg = now;
            }
            rd_kafka_message_destroy(m);
        }
        if (got < 0) {
            fprintf(stderr, "samsa-loadgen: consume: %s\n", rd_kafka_err2str(rd_kafka_last_error()));
            stalled = 2;
            break;
        }
        /* reading the whole topic: every partition at its start HW ends it,
         * even when some offsets never came (reported below) */
        if (!o->records_given) {
            int all = 1;
            for (int p = 0; p < np; p++)
                if (parts[p].next < parts[p].hi)
                    all = 0;
            if (all)
                break;
        }
        if (o->verbose && now - last_report >= 1000000u) {
            last_report = now;
            fprintf(stderr, "consume: %" PRIu64 " of %" PRIu64 " records\n", count, expected);
        }
        if (now - last_msg > (uint64_t)o->stall_s * 1000000u) {
            stalled = 1;
            break;
        }
    }
    double secs = (double)(last_msg - t0) / 1e6;
    double rps = secs > 0 ? (double)count / secs : 0;
    double mbs = secs > 0 ? (double)bytes / secs / 1e6 : 0;
    int ok = count == expected && !errors && !offset_errs && !size_errs && !stalled && !short_topic;
    if (short_topic)
        expected = (uint64_t)o->records;
    printf("consume: %" PRIu64 " records (%" PRIu64 " expected) from %s in %.3f s: %.0f rec/s, "
           "%.2f MB/s; errors %" PRIu64 ", offset gaps/repeats %" PRIu64 ", bad sizes %" PRIu64
           "; %s\n",
           count, expected, o->topic, secs, rps, mbs, errors, offset_errs, size_errs,
           ok ? "verified" : "FAILED");
    if (o->json)
        printf("{\"phase\":\"consume\",\"topic\":\"%s\",\"records\":%" PRIu64 ",\"expected\":%" PRIu64
               ",\"bytes\":%" PRIu64 ",\"seconds\":%.6f,\"records_per_s\":%.1f,\"mb_per_s\":%.3f,"
               "\"errors\":%" PRIu64 ",\"offset_errors\":%" PRIu64 ",\"size_errors\":%" PRIu64
               ",\"verified\":%s,\"client_cpu_s\":%.3f}\n",
               o->topic, count, expected, bytes, secs, rps, mbs, errors, offset_errs, size_errs,
               ok ? "true" : "false", lg_cpu_s() - cpu0);
    fflush(stdout);
    if (stalled == 1) {
        fprintf(stderr, "samsa-loadgen: consume stalled: no record for %d s\n", o->stall_s);
        for (int p = 0; p < np; p++)
            fprintf(stderr, "  %s-%d: next %" PRId64 ", watermarks %" PRId64 "..%" PRId64 "%s\n",
                    o->topic, p, parts[p].next, parts[p].lo, parts[p].hi,
                    parts[p].eof ? " (at EOF)" : "");
        fflush(NULL);
        _Exit(3);
    }
    for (int p = 0; p < np; p++)
        rd_kafka_consume_stop(rkt, p);
    rd_kafka_queue_destroy(q);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    free(msgs);
    free(parts);
    return ok ? 0 : 1;
}
