/* samsa-loadgen: drive a broker with librdkafka and measure it.
 *
 *   samsa-loadgen produce -b HOST:PORT -t TOPIC -n RECORDS -s BYTES ...
 *   samsa-loadgen consume -b HOST:PORT -t TOPIC [-n RECORDS] ...
 *   samsa-loadgen e2e -b HOST:PORT -t TOPIC -n RECORDS --rate R [--txn-size N] ...
 *
 * Each phase prints one human line on stdout and, with --json, one JSON
 * line after it, so scripts can read results without scraping prose. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "loadgen.h"

uint64_t lg_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

double lg_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

void lg_conf_set(rd_kafka_conf_t *conf, const char *key, const char *val)
{
    char err[512];
    if (rd_kafka_conf_set(conf, key, val, err, sizeof err) != RD_KAFKA_CONF_OK) {
        fprintf(stderr, "samsa-loadgen: %s=%s: %s\n", key, val, err);
        exit(2);
    }
}

rd_kafka_conf_t *lg_base_conf(const struct lg_opts *o)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    lg_conf_set(conf, "bootstrap.servers", o->brokers);
    lg_conf_set(conf, "client.id", "samsa-loadgen");
    for (int i = 0; i < o->nx; i++)
        lg_conf_set(conf, o->xkeys[i], o->xvals[i]);
    return conf;
}

int lg_wait_topic(rd_kafka_t *rk, const char *topic, int timeout_ms)
{
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    uint64_t deadline = lg_now_us() + (uint64_t)timeout_ms * 1000u;
    int result = -1;
    const char *last = "no answer";
    while (lg_now_us() < deadline) {
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, 5000);
        if (err) {
            last = rd_kafka_err2str(err);
        } else {
            const struct rd_kafka_metadata_topic *t = md->topic_cnt == 1 ? &md->topics[0] : NULL;
            if (t && t->err == 0 && t->partition_cnt > 0) {
                int ok = 1;
                for (int i = 0; i < t->partition_cnt; i++)
                    if (t->partitions[i].leader < 0 || t->partitions[i].err)
                        ok = 0;
                if (ok)
                    result = t->partition_cnt;
                else
                    last = "partition without a leader";
            } else if (t) {
                last = t->err ? rd_kafka_err2str(t->err) : "no partitions";
            }
            rd_kafka_metadata_destroy(md);
        }
        if (result > 0)
            break;
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    rd_kafka_topic_destroy(rkt);
    if (result < 0)
        fprintf(stderr, "samsa-loadgen: topic %s not ready: %s\n", topic, last);
    return result;
}

static void usage(FILE *f)
{
    fputs("usage: samsa-loadgen produce|consume|e2e [options]\n"
          "  -b, --brokers LIST       bootstrap servers (127.0.0.1:9092)\n"
          "  -t, --topic NAME         topic (samsa-bench)\n"
          "  -n, --records N          produce: records to send (1000000);\n"
          "                           consume: records to read (default: all up to\n"
          "                           the high watermarks seen at start)\n"
          "  -s, --size BYTES         payload bytes per record (100); consume checks it\n"
          "                           when given\n"
          "      --payload random|fixed   payload contents (random)\n"
          "  -a, --acks 0|1|all       produce acks (1)\n"
          "  -p, --partitions N       create the topic with N partitions if missing\n"
          "      --replication N      replication factor for a created topic (1)\n"
          "      --linger-ms MS       linger.ms\n"
          "      --batch-size BYTES   batch.size\n"
          "      --batch-num N        batch.num.messages\n"
          "      --max-inflight N     max.in.flight.requests.per.connection\n"
          "      --compression CODEC  compression.codec (none)\n"
          "      --idempotence        enable.idempotence=true\n"
          "      --txn-size N         produce, e2e: transactional producer committing\n"
          "                           every N records\n"
          "      --rate R             produce: send at R records per second instead\n"
          "                           of as fast as possible (latency at a set load);\n"
          "                           e2e: records per second (10000); e2e produces\n"
          "                           idempotently (acks=all) and reads with a\n"
          "                           read_committed and a read_uncommitted consumer\n"
          "                           at once, timing produce call -> consumed\n"
          "                           (from offset 0: give it a new topic)\n"
          "      --keys N             produce: key each record \"k<i mod N>\" (for\n"
          "                           compacted topics)\n"
          "  -X KEY=VALUE             any librdkafka property (repeatable)\n"
          "      --stall-timeout S    fail when nothing progresses for S seconds (30)\n"
          "      --json               also print one JSON line per phase\n"
          "  -v, --verbose            progress on stderr every second\n",
          f);
}

static long parse_long(const char *opt, const char *s, long min)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < min) {
        fprintf(stderr, "samsa-loadgen: %s: bad value '%s'\n", opt, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    struct lg_opts o = {
        .brokers = "127.0.0.1:9092",
        .topic = "samsa-bench",
        .records = 1000000,
        .size = 100,
        .random_payload = true,
        .acks = "1",
        .replication = 1,
        .linger_ms = -1,
        .batch_size = -1,
        .batch_num = -1,
        .max_inflight = -1,
        .compression = "none",
        .stall_s = 30,
        .rate = 10000,
    };
    enum {
        O_PAYLOAD = 256, O_REPL, O_LINGER, O_BSIZE, O_BNUM, O_INFL, O_COMP,
        O_IDEMP, O_STALL, O_JSON, O_TXN, O_RATE, O_KEYS
    };
    static const struct option lopts[] = {
        {"brokers", required_argument, NULL, 'b'},
        {"topic", required_argument, NULL, 't'},
        {"records", required_argument, NULL, 'n'},
        {"size", required_argument, NULL, 's'},
        {"payload", required_argument, NULL, O_PAYLOAD},
        {"acks", required_argument, NULL, 'a'},
        {"partitions", required_argument, NULL, 'p'},
        {"replication", required_argument, NULL, O_REPL},
        {"linger-ms", required_argument, NULL, O_LINGER},
        {"batch-size", required_argument, NULL, O_BSIZE},
        {"batch-num", required_argument, NULL, O_BNUM},
        {"max-inflight", required_argument, NULL, O_INFL},
        {"compression", required_argument, NULL, O_COMP},
        {"idempotence", no_argument, NULL, O_IDEMP},
        {"txn-size", required_argument, NULL, O_TXN},
        {"rate", required_argument, NULL, O_RATE},
        {"keys", required_argument, NULL, O_KEYS},
        {"stall-timeout", required_argument, NULL, O_STALL},
        {"json", no_argument, NULL, O_JSON},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    if (argc < 2 || argv[1][0] == '-') {
        if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
            usage(stdout);
            return 0;
        }
        usage(stderr);
        return 2;
    }
    const char *mode = argv[1];
    int c;
    optind = 2;
    while ((c = getopt_long(argc, argv, "b:t:n:s:a:p:X:vh", lopts, NULL)) != -1) {
        switch (c) {
        case 'b': o.brokers = optarg; break;
        case 't': o.topic = optarg; break;
        case 'n':
            o.records = parse_long("--records", optarg, 0);
            o.records_given = true;
            break;
        case 's':
            o.size = (size_t)parse_long("--size", optarg, 0);
            o.size_given = true;
            break;
        case O_PAYLOAD:
            if (!strcmp(optarg, "random"))
                o.random_payload = true;
            else if (!strcmp(optarg, "fixed"))
                o.random_payload = false;
            else {
                fprintf(stderr, "samsa-loadgen: --payload: random or fixed, not '%s'\n", optarg);
                return 2;
            }
            break;
        case 'a':
            if (strcmp(optarg, "0") && strcmp(optarg, "1") && strcmp(optarg, "all") &&
                strcmp(optarg, "-1")) {
                fprintf(stderr, "samsa-loadgen: --acks: 0, 1, all or -1, not '%s'\n", optarg);
                return 2;
            }
            o.acks = optarg;
            break;
        case 'p': o.partitions = (int)parse_long("--partitions", optarg, 1); break;
        case O_REPL: o.replication = (int)parse_long("--replication", optarg, 1); break;
        case O_LINGER: o.linger_ms = (int)parse_long("--linger-ms", optarg, 0); break;
        case O_BSIZE: o.batch_size = parse_long("--batch-size", optarg, 1); break;
        case O_BNUM: o.batch_num = parse_long("--batch-num", optarg, 1); break;
        case O_INFL: o.max_inflight = (int)parse_long("--max-inflight", optarg, 1); break;
        case O_COMP: o.compression = optarg; break;
        case O_IDEMP: o.idempotence = true; break;
        case O_TXN: o.txn_size = parse_long("--txn-size", optarg, 1); break;
        case O_RATE:
            o.rate = parse_long("--rate", optarg, 1);
            o.rate_given = true;
            break;
        case O_KEYS: o.keys = parse_long("--keys", optarg, 1); break;
        case O_STALL: o.stall_s = (int)parse_long("--stall-timeout", optarg, 1); break;
        case O_JSON: o.json = true; break;
        case 'v': o.verbose++; break;
        case 'X': {
            char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg || o.nx == LG_MAX_X) {
                fprintf(stderr, "samsa-loadgen: -X wants KEY=VALUE (at most %d)\n", LG_MAX_X);
                return 2;
            }
            *eq = '\0';
            o.xkeys[o.nx] = optarg;
            o.xvals[o.nx++] = eq + 1;
            break;
        }
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "samsa-loadgen: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (!strcmp(mode, "produce"))
        return lg_produce(&o);
    if (!strcmp(mode, "consume")) {
        if (!o.records_given)
            o.records = 0;
        return lg_consume(&o);
    }
    if (!strcmp(mode, "e2e"))
        return lg_e2e(&o);
    fprintf(stderr, "samsa-loadgen: unknown mode '%s' (produce, consume or e2e)\n", mode);
    return 2;
}
