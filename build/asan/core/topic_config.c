#include "topic_config.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

static int check_gzip_level(const char *v, char *why, size_t n);
static int check_throttled(const char *v, char *why, size_t n);

static const char *const cleanup_choices[] = {"compact", "delete", NULL};
static const char *const compression_choices[] = {"uncompressed", "zstd", "lz4", "snappy",
                                                  "gzip",         "producer", NULL};
static const char *const timestamp_choices[] = {"CreateTime", "LogAppendTime", NULL};

#define T(x) CONFIG_TYPE_##x
#define NOCHECK {.kind = CONFIG_CHECK_NONE}
#define ATLEAST(a) {.kind = CONFIG_CHECK_RANGE, .has_min = true, .min = (a)}
#define BETWEEN(a, b) \
    {.kind = CONFIG_CHECK_RANGE, .has_min = true, .has_max = true, .min = (a), .max = (b)}
#define DBETWEEN(a, b) \
    {.kind = CONFIG_CHECK_RANGE, .has_min = true, .has_max = true, .dmin = (a), .dmax = (b)}
#define ONEOF(c) {.kind = CONFIG_CHECK_ONE_OF, .choices = (c)}
#define LISTOF(c) {.kind = CONFIG_CHECK_LIST_OF, .choices = (c)}
#define FN(f) {.kind = CONFIG_CHECK_NONE, .fn = (f)}
#define SYN(...) ((const char *const[]){__VA_ARGS__, NULL})
#define UNITS(...) ((const int64_t[]){__VA_ARGS__})
#define LMAX "9223372036854775807"
#define HOUR_MS (3600 * 1000LL)
#define MINUTE_MS (60 * 1000LL)

/* Names, types, defaults, ranges and broker synonyms as Kafka's
 * LogConfig and ServerTopicConfigSynonyms (3.9 line). Sorted by name, as
 * Kafka lists them. */
const struct topic_config_def topic_config_defs[] = {
    {{"cleanup.policy", T(LIST), "delete", 0, 0, LISTOF(cleanup_choices),
      "What happens to old segments: delete, compact, or both."},
     SYN("log.cleanup.policy"), NULL},
    {{"compression.gzip.level", T(INT), "-1", 0, 0, FN(check_gzip_level),
      "gzip level when compression.type is gzip (-1: library default)."},
     SYN("compression.gzip.level"), NULL},
    {{"compression.lz4.level", T(INT), "9", 0, 0, BETWEEN(1, 17),
      "lz4 level when compression.type is lz4."},
     SYN("compression.lz4.level"), NULL},
    {{"compression.type", T(STRING), "producer", 0, 0, ONEOF(compression_choices),
      "Compression of stored batches; producer keeps the producer's."},
     SYN("compression.type"), NULL},
    {{"compression.zstd.level", T(INT), "3", 0, 0, BETWEEN(-131072, 22),
      "zstd level when compression.type is zstd."},
     SYN("compression.zstd.level"), NULL},
    {{"delete.retention.ms", T(LONG), "86400000", 0, 0, ATLEAST(0),
      "How long tombstones are kept in a compacted topic."},
     SYN("log.cleaner.delete.retention.ms"), NULL},
    {{"file.delete.delay.ms", T(LONG), "60000", 0, 0, ATLEAST(0),
      "Delay between removing a segment and deleting its files."},
     SYN("log.segment.delete.delay.ms"), NULL},
    {{"flush.messages", T(LONG), LMAX, 0, 0, ATLEAST(1),
      "Records appended to a partition before it is fsynced."},
     SYN("log.flush.interval.messages"), NULL},
    {{"flush.ms", T(LONG), LMAX, 0, 0, ATLEAST(0),
      "Longest time appended data stays unsynced."},
     SYN("log.flush.interval.ms", "log.flush.scheduler.interval.ms"), NULL},
    {{"follower.replication.throttled.replicas", T(LIST), "", 0, 0, FN(check_throttled),
      "Replicas throttled on the follower side, as partition:broker,... or *."},
     NULL, NULL},
    {{"index.interval.bytes", T(INT), "4096", 0, 0, ATLEAST(0),
      "Bytes of log between two offset index entries."},
     SYN("log.index.interval.bytes"), NULL},
    {{"leader.replication.throttled.replicas", T(LIST), "", 0, 0, FN(check_throttled),
      "Replicas throttled on the leader side, as partition:broker,... or *."},
     NULL, NULL},
    {{"local.retention.bytes", T(LONG), "-2", 0, 0, ATLEAST(-2),
      "With tiered storage, local size limit of a partition (-2: retention.bytes)."},
     SYN("log.local.retention.bytes"), NULL},
    {{"local.retention.ms", T(LONG), "-2", 0, 0, ATLEAST(-2),
      "With tiered storage, how long segments stay on local disk (-2: retention.ms)."},
     SYN("log.local.retention.ms"), NULL},
    {{"max.compaction.lag.ms", T(LONG), LMAX, 0, 0, ATLEAST(1),
      "Oldest a record may get before it is eligible for compaction."},
     SYN("log.cleaner.max.compaction.lag.ms"), NULL},
    {{"max.message.bytes", T(INT), "1048588", 0, 0, ATLEAST(0),
      "Largest record batch accepted, after compression."},
     SYN("message.max.bytes"), NULL},
    {{"message.downconversion.enable", T(BOOLEAN), "true", 0, 0, NOCHECK,
      "Convert record formats for old consumers."},
     SYN("log.message.downconversion.enable"), NULL},
    {{"message.format.version", T(STRING), "3.0-IV1", 0, 0, NOCHECK,
      "Deprecated; record format v2 is always used."},
     SYN("log.message.format.version"), NULL},
    {{"message.timestamp.after.max.ms", T(LONG), LMAX, 0, 0, ATLEAST(0),
      "How far in the future a CreateTime timestamp may be."},
     SYN("log.message.timestamp.after.max.ms"), NULL},
    {{"message.timestamp.before.max.ms", T(LONG), LMAX, 0, 0, ATLEAST(0),
      "How far in the past a CreateTime timestamp may be."},
     SYN("log.message.timestamp.before.max.ms"), NULL},
    {{"message.timestamp.difference.max.ms", T(LONG), LMAX, 0, 0, ATLEAST(0),
      "Deprecated: largest gap between a CreateTime timestamp and broker time."},
     SYN("log.message.timestamp.difference.max.ms"), NULL},
    {{"message.timestamp.type", T(STRING), "CreateTime", 0, 0, ONEOF(timestamp_choices),
      "Timestamp stored with records: CreateTime or LogAppendTime."},
     SYN("log.message.timestamp.type"), NULL},
    {{"min.cleanable.dirty.ratio", T(DOUBLE), "0.5", 0, 0, DBETWEEN(0, 1),
      "Share of the log that must be uncompacted before the cleaner works on it."},
     SYN("log.cleaner.min.cleanable.ratio"), NULL},
    {{"min.compaction.lag.ms", T(LONG), "0", 0, 0, ATLEAST(0),
      "Youngest a record may be and still be compacted."},
     SYN("log.cleaner.min.compaction.lag.ms"), NULL},
    {{"min.insync.replicas", T(INT), "1", 0, 0, ATLEAST(1),
      "Replicas that must have a write before acks=all succeeds."},
     SYN("min.insync.replicas"), NULL},
    {{"preallocate", T(BOOLEAN), "false", 0, 0, NOCHECK,
      "Preallocate segment files at their full size."},
     SYN("log.preallocate"), NULL},
    {{"remote.log.copy.disable", T(BOOLEAN), "false", 0, 0, NOCHECK,
      "Stop copying segments to tiered storage while keeping what is there."},
     NULL, NULL},
    {{"remote.log.delete.on.disable", T(BOOLEAN), "false", 0, 0, NOCHECK,
      "Delete tiered data when remote storage is turned off for the topic."},
     NULL, NULL},
    {{"remote.storage.enable", T(BOOLEAN), "false", 0, 0, NOCHECK,
      "Move closed segments of this topic to tiered storage."},
     NULL, NULL},
    {{"retention.bytes", T(LONG), "-1", 0, 0, NOCHECK,
      "Size a partition is trimmed down to by deleting old segments (-1: no limit)."},
     SYN("log.retention.bytes"), NULL},
    {{"retention.ms", T(LONG), "604800000", 0, 0, ATLEAST(-1),
      "How long records are kept (-1: forever)."},
     SYN("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
     UNITS(1, MINUTE_MS, HOUR_MS)},
    {{"segment.bytes", T(INT), "1073741824", 0, 0, ATLEAST(14),
      "Size at which a segment is closed and a new one started."},
     SYN("log.segment.bytes"), NULL},
    {{"segment.index.bytes", T(INT), "10485760", 0, 0, ATLEAST(4),
      "Largest offset index of a segment."},
     SYN("log.index.size.max.bytes"), NULL},
    {{"segment.jitter.ms", T(LONG), "0", 0, 0, ATLEAST(0),
      "Random amount subtracted from segment.ms so partitions do not roll together."},
     SYN("log.roll.jitter.ms", "log.roll.jitter.hours"), UNITS(1, HOUR_MS)},
    {{"segment.ms", T(LONG), "604800000", 0, 0, ATLEAST(1),
      "Age at which a segment is closed even if not full."},
     SYN("log.roll.ms", "log.roll.hours"), UNITS(1, HOUR_MS)},
    {{"unclean.leader.election.enable", T(BOOLEAN), "false", 0, 0, NOCHECK,
      "Allow an out-of-sync replica to become leader, at the cost of losing data."},
     SYN("unclean.leader.election.enable"), NULL},
};

const size_t topic_config_defs_count = sizeof topic_config_defs / sizeof topic_config_defs[0];

#undef T

static void fmt(char *dst, size_t n, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void fmt(char *dst, size_t n, const char *f, ...)
{
    if (!dst || !n)
        return;
    va_list ap;
    va_start(ap, f);
    vsnprintf(dst, n, f, ap);
    va_end(ap);
}

static int check_gzip_level(const char *v, char *why, size_t n)
{
    int64_t x;
    if (config_parse_long(v, &x) == 0 && (x == -1 || (x >= 1 && x <= 9)))
        return 0;
    fmt(why, n, "must be between 1 and 9, or -1");
    return -1;
}

static bool all_digits(const char *s, size_t n)
{
    if (!n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* Kafka's ThrottledReplicaListValidator: "*" alone, or partition:broker
 * pairs. v is already normalised (elements trimmed, joined by ','). */
static int check_throttled(const char *v, char *why, size_t n)
{
    if (!*v || !strcmp(v, "*"))
        return 0;
    for (const char *p = v;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *colon = memchr(p, ':', len);
        if (!colon || !all_digits(p, (size_t)(colon - p)) ||
            !all_digits(colon + 1, len - (size_t)(colon - p) - 1)) {
            fmt(why, n, "must be the wildcard (*) or a list of the form "
                "[PartitionId]:[ReplicaId],[PartitionId]:[ReplicaId],...");
            return -1;
        }
        if (!end)
            return 0;
        p = end + 1;
    }
}

static size_t topic_index(const char *name)
{
    for (size_t i = 0; i < topic_config_defs_count; i++)
        if (!strcmp(topic_config_defs[i].def.name, name))
            return i;
    return (size_t)-1;
}

const struct topic_config_def *topic_config_def_find(const char *name)
{
    size_t i = topic_index(name);
    return i == (size_t)-1 ? NULL : &topic_config_defs[i];
}

int topic_config_validate(const char *key, const char *value, char *err, size_t errlen)
{
    const struct topic_config_def *t = topic_config_def_find(key);
    if (!t) {
        fmt(err, errlen, "Unknown topic config name: %s", key);
        return CONFIG_ERR_INVALID_CONFIG;
    }
    char why[256] = "";
    if (config_def_check(&t->def, value ? value : "", NULL, why, sizeof why) < 0) {
        fmt(err, errlen, "Invalid value %s for configuration %s: %s", value ? value : "null", key,
            why);
        return CONFIG_ERR_INVALID_CONFIG;
    }
    return CONFIG_ERR_NONE;
}

/* The override of key among kv (the last one wins, as in a map), or NULL. */
static const char *override_of(const struct topic_config_kv *kv, size_t n, const char *key)
{
    const char *v = NULL;
    for (size_t k = 0; k < n; k++)
        if (kv[k].key && !strcmp(kv[k].key, key))
            v = kv[k].value;
    return v;
}

static size_t n_synonyms(const struct topic_config_def *t)
{
    size_t n = 0;
    while (t->synonyms && t->synonyms[n])
        n++;
    return n;
}

/* Effective value of topic key i as DescribeConfigs reports it, and its
 * source. May write into buf (len bytes). */
static const char *effective(const struct samsa_config *broker, const struct topic_config_kv *kv,
                             size_t n, size_t i, char *buf, size_t len,
                             enum config_source *source)
{
    const struct topic_config_def *t = &topic_config_defs[i];
    const char *ov = override_of(kv, n, t->def.name);
    if (ov) {
        char *norm = NULL;
        if (config_def_check(&t->def, ov, &norm, NULL, 0) == 0) {
            *source = CONFIG_SOURCE_DYNAMIC_TOPIC;
            const char *r = ov;
            if (strlen(norm) < len) {
                memcpy(buf, norm, strlen(norm) + 1);
                r = buf;
            }
            free(norm);
            return r;
        }
        /* An override that does not parse was never accepted by
         * validation; fall through to the broker's value. */
    }
    size_t ns = n_synonyms(t);
    if (ns) {
        struct config_entry e;
        e.n_synonyms = 0;
        config_append_synonyms(broker, t->synonyms, ns, &e);
        if (e.n_synonyms) {
            *source = e.synonyms[0].source;
            int64_t unit = 1;
            for (size_t k = 0; k < ns; k++)
                if (!strcmp(t->synonyms[k], e.synonyms[0].name) && t->units)
                    unit = t->units[k];
            const char *v = e.synonyms[0].value;
            bool is_retention = !strcmp(t->def.name, "retention.ms");
            if (unit != 1 || is_retention) {
                int64_t x = 0;
                config_parse_long(v, &x);
                x *= unit;
                /* Kafka's logRetentionTimeMillis maps any negative to -1. */
                if (is_retention && x < 0)
                    x = -1;
                snprintf(buf, len, "%lld", (long long)x);
                return buf;
            }
            return v;
        }
    }
    *source = CONFIG_SOURCE_DEFAULT;
    return t->def.dflt;
}

static int64_t eff_long(const struct samsa_config *broker, const struct topic_config_kv *kv,
                        size_t n, const char *key)
{
    char buf[64];
    enum config_source src;
    int64_t x = 0;
    const char *v = effective(broker, kv, n, topic_index(key), buf, sizeof buf, &src);
    if (v)
        config_parse_long(v, &x);
    return x;
}

static bool eff_bool(const struct samsa_config *broker, const struct topic_config_kv *kv,
                     size_t n, const char *key)
{
    char buf[64];
    enum config_source src;
    bool b = false;
    const char *v = effective(broker, kv, n, topic_index(key), buf, sizeof buf, &src);
    if (v)
        config_parse_bool(v, &b);
    return b;
}

int topic_config_validate_all(const struct samsa_config *broker,
                              const struct topic_config_kv *kv, size_t n, char *err,
                              size_t errlen)
{
    for (size_t k = 0; k < n; k++) {
        int rc = topic_config_validate(kv[k].key ? kv[k].key : "", kv[k].value, err, errlen);
        if (rc)
            return rc;
    }
    int64_t min_lag = eff_long(broker, kv, n, "min.compaction.lag.ms");
    int64_t max_lag = eff_long(broker, kv, n, "max.compaction.lag.ms");
    if (min_lag > max_lag) {
        fmt(err, errlen, "conflict topic config setting min.compaction.lag.ms (%lld) > "
            "max.compaction.lag.ms (%lld)", (long long)min_lag, (long long)max_lag);
        return CONFIG_ERR_INVALID_CONFIG;
    }
    if (eff_bool(broker, kv, n, "remote.storage.enable")) {
        bool system = false;
        config_get_bool(broker, "remote.log.storage.system.enable", &system);
        if (!system) {
            fmt(err, errlen, "Tiered Storage functionality is disabled in the broker. Topic "
                "cannot be configured with remote log storage.");
            return CONFIG_ERR_INVALID_CONFIG;
        }
        struct topic_config tc;
        topic_config_resolve(broker, kv, n, &tc);
        if (tc.cleanup_compact) {
            fmt(err, errlen, "Remote log storage is unsupported for the compacted topics");
            return CONFIG_ERR_INVALID_CONFIG;
        }
        int64_t rms = tc.retention_ms, lms = eff_long(broker, kv, n, "local.retention.ms");
        if (rms != -1 && lms != -2) {
            if (lms == -1) {
                fmt(err, errlen, "Invalid value -1 for configuration local.retention.ms: Value "
                    "must not be -1 as retention.ms value is set as %lld.", (long long)rms);
                return CONFIG_ERR_INVALID_CONFIG;
            }
            if (lms > rms) {
                fmt(err, errlen, "Invalid value %lld for configuration local.retention.ms: Value "
                    "must not be more than retention.ms property value: %lld", (long long)lms,
                    (long long)rms);
                return CONFIG_ERR_INVALID_CONFIG;
            }
        }
        int64_t rb = tc.retention_bytes, lb = eff_long(broker, kv, n, "local.retention.bytes");
        if (rb > -1 && lb != -2) {
            if (lb == -1) {
                fmt(err, errlen, "Invalid value -1 for configuration local.retention.bytes: "
                    "Value must not be -1 as retention.bytes value is set as %lld.",
                    (long long)rb);
                return CONFIG_ERR_INVALID_CONFIG;
            }
            if (lb > rb) {
                fmt(err, errlen, "Invalid value %lld for configuration local.retention.bytes: "
                    "Value must not be more than retention.bytes property value: %lld",
                    (long long)lb, (long long)rb);
                return CONFIG_ERR_INVALID_CONFIG;
            }
        }
    }
    return CONFIG_ERR_NONE;
}

static enum topic_compression compression_of(const char *s)
{
    if (!strcmp(s, "uncompressed"))
        return TOPIC_COMPRESSION_NONE;
    if (!strcmp(s, "gzip"))
        return TOPIC_COMPRESSION_GZIP;
    if (!strcmp(s, "snappy"))
        return TOPIC_COMPRESSION_SNAPPY;
    if (!strcmp(s, "lz4"))
        return TOPIC_COMPRESSION_LZ4;
    if (!strcmp(s, "zstd"))
        return TOPIC_COMPRESSION_ZSTD;
    return TOPIC_COMPRESSION_PRODUCER;
}

void topic_config_resolve(const struct samsa_config *broker, const struct topic_config_kv *kv,
                          size_t n, struct topic_config *o)
{
    memset(o, 0, sizeof *o);
#define L(key) eff_long(broker, kv, n, key)
#define I(key) ((int32_t)eff_long(broker, kv, n, key))
#define B(key) eff_bool(broker, kv, n, key)
    char buf[128];
    enum config_source src;
    const char *pol =
        effective(broker, kv, n, topic_index("cleanup.policy"), buf, sizeof buf, &src);
    /* Elements are normalised: compare whole comma-separated items. */
    for (const char *p = pol; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 6 && !strncmp(p, "delete", 6))
            o->cleanup_delete = true;
        if (len == 7 && !strncmp(p, "compact", 7))
            o->cleanup_compact = true;
        p = e ? e + 1 : p + len;
    }
    o->compression_type = compression_of(
        effective(broker, kv, n, topic_index("compression.type"), buf, sizeof buf, &src));
    o->compression_gzip_level = I("compression.gzip.level");
    o->compression_lz4_level = I("compression.lz4.level");
    o->compression_zstd_level = I("compression.zstd.level");
    o->delete_retention_ms = L("delete.retention.ms");
    o->file_delete_delay_ms = L("file.delete.delay.ms");
    o->flush_messages = L("flush.messages");
    o->flush_ms = L("flush.ms");
    o->index_interval_bytes = I("index.interval.bytes");
    o->max_compaction_lag_ms = L("max.compaction.lag.ms");
    o->max_message_bytes = I("max.message.bytes");
    o->message_downconversion_enable = B("message.downconversion.enable");
    o->message_timestamp_log_append =
        !strcmp(effective(broker, kv, n, topic_index("message.timestamp.type"), buf, sizeof buf,
                          &src),
                "LogAppendTime");
    o->message_timestamp_difference_max_ms = L("message.timestamp.difference.max.ms");
    o->message_timestamp_before_max_ms = L("message.timestamp.before.max.ms");
    o->message_timestamp_after_max_ms = L("message.timestamp.after.max.ms");
    if (o->message_timestamp_before_max_ms == INT64_MAX)
        o->message_timestamp_before_max_ms = o->message_timestamp_difference_max_ms;
    if (o->message_timestamp_after_max_ms == INT64_MAX)
        o->message_timestamp_after_max_ms = o->message_timestamp_difference_max_ms;
    double ratio = 0.5;
    const char *r = effective(broker, kv, n, topic_index("min.cleanable.dirty.ratio"), buf,
                              sizeof buf, &src);
    if (r)
        config_parse_double(r, &ratio);
    o->min_cleanable_dirty_ratio = ratio;
    o->min_compaction_lag_ms = L("min.compaction.lag.ms");
    o->min_insync_replicas = I("min.insync.replicas");
    o->preallocate = B("preallocate");
    o->remote_storage_enable = B("remote.storage.enable");
    o->remote_log_copy_disable = B("remote.log.copy.disable");
    o->remote_log_delete_on_disable = B("remote.log.delete.on.disable");
    o->retention_bytes = L("retention.bytes");
    o->retention_ms = L("retention.ms");
    o->local_retention_bytes = L("local.retention.bytes");
    if (o->local_retention_bytes == -2)
        o->local_retention_bytes = o->retention_bytes;
    o->local_retention_ms = L("local.retention.ms");
    if (o->local_retention_ms == -2)
        o->local_retention_ms = o->retention_ms;
    o->segment_bytes = I("segment.bytes");
    o->segment_index_bytes = I("segment.index.bytes");
    o->segment_jitter_ms = L("segment.jitter.ms");
    o->segment_ms = L("segment.ms");
    o->unclean_leader_election_enable = B("unclean.leader.election.enable");
#undef L
#undef I
#undef B
}

void topic_config_describe(const struct samsa_config *broker, const struct topic_config_kv *kv,
                           size_t n, size_t i, struct config_entry *e)
{
    memset(e, 0, sizeof *e);
    const struct topic_config_def *t = &topic_config_defs[i];
    e->name = t->def.name;
    e->type = t->def.type;
    e->read_only = false;
    e->sensitive = false;
    e->doc = t->def.doc;
    e->value = effective(broker, kv, n, i, e->buf, sizeof e->buf, &e->source);
    if (e->source == CONFIG_SOURCE_DYNAMIC_TOPIC) {
        e->synonyms[0].name = e->name;
        e->synonyms[0].value = e->value;
        e->synonyms[0].source = CONFIG_SOURCE_DYNAMIC_TOPIC;
        e->n_synonyms = 1;
    }
    size_t ns = n_synonyms(t);
    if (ns)
        config_append_synonyms(broker, t->synonyms, ns, e);
}

bool topic_config_describe_key(const struct samsa_config *broker,
                               const struct topic_config_kv *kv, size_t n, const char *key,
                               struct config_entry *e)
{
    size_t i = topic_index(key);
    if (i == (size_t)-1)
        return false;
    topic_config_describe(broker, kv, n, i, e);
    return true;
}
