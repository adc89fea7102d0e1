/* samsa-loadgen: shared options and helpers of the produce and consume
 * phases. */
#ifndef SAMSA_LOADGEN_H
#define SAMSA_LOADGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#define LG_MAX_X 64

struct lg_opts {
    const char *brokers;
    const char *topic;
    int64_t records;        /* produce: how many; consume: 0 = up to the HW */
    bool records_given;
    size_t size;            /* payload bytes per record */
    bool size_given;
    bool random_payload;
    const char *acks;
    int partitions;         /* > 0: create the topic with this many if missing */
    int replication;
    int linger_ms;          /* < 0: librdkafka's default */
    long batch_size;        /* < 0: librdkafka's default */
    long batch_num;         /* < 0: librdkafka's default */
    int max_inflight;       /* < 0: librdkafka's default */
    const char *compression;
    bool idempotence;
    long txn_size;          /* > 0: transactional, commit every this many records */
    long rate;              /* e2e: records per second */
    bool rate_given;        /* produce: paced at rate instead of flat out */
    long keys;              /* produce: > 0: key "k<i mod keys>" on each record */
    int stall_s;            /* no progress for this long is a failure */
    bool json;
    int verbose;
    int nx;
    const char *xkeys[LG_MAX_X];
    const char *xvals[LG_MAX_X];
};

/* Monotonic clock in microseconds. */
uint64_t lg_now_us(void);
/* CPU seconds (user + system) of this process, librdkafka's threads
 * included: on a small machine the client competes with the server. */
double lg_cpu_s(void);

/* Set one librdkafka property or exit with its error. */
void lg_conf_set(rd_kafka_conf_t *conf, const char *key, const char *val);
/* The settings every client shares: brokers, logging, -X overrides. */
rd_kafka_conf_t *lg_base_conf(const struct lg_opts *o);

/* Wait until the topic is in the metadata with a leader for every
 * partition; returns its partition count, or -1 after timeout_ms. */
int lg_wait_topic(rd_kafka_t *rk, const char *topic, int timeout_ms);

/* Create o->topic with o->partitions partitions (an existing one is fine);
 * 0 or -1 with the reason on stderr. */
int lg_create_topic(rd_kafka_t *rk, const struct lg_opts *o);
/* Make the producer transactional (before rd_kafka_new): a transactional
 * id unique to this process and phase. */
void lg_txn_conf(rd_kafka_conf_t *conf, const struct lg_opts *o, const char *phase);
/* Call a blocking transactional API; 0, or -1 with the error on stderr. */
int lg_txn_check(rd_kafka_error_t *e, const char *what);
/* Flush, then commit the open transaction; 0 or -1 with the error on
 * stderr. */
int lg_txn_commit(rd_kafka_t *rk, int timeout_ms);

int lg_produce(const struct lg_opts *o);
int lg_e2e(const struct lg_opts *o);
int lg_consume(const struct lg_opts *o);

#endif
