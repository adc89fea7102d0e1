/* Topic-level configs under Kafka's topic config names. A topic stores
 * only its overrides (key/value pairs, as CreateTopics and
 * AlterConfigs gave them); every other value comes from the broker
 * config key Kafka maps it to (retention.ms from log.retention.ms /
 * minutes / hours, segment.bytes from log.segment.bytes, ...), or from
 * the topic default when no broker key exists. */
#ifndef SAMSA_TOPIC_CONFIG_H
#define SAMSA_TOPIC_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct topic_config_def {
    struct config_def def; /* mode is unused: every topic config is dynamic */
    /* Broker keys supplying the default, highest precedence first (Kafka's
     * ServerTopicConfigSynonyms); NULL-terminated, or NULL for none. */
    const char *const *synonyms;
    /* Factor turning each synonym's value into this key's unit (hours to
     * ms, ...); NULL when all are 1. */
    const int64_t *units;
};

extern const struct topic_config_def topic_config_defs[];
extern const size_t topic_config_defs_count;
const struct topic_config_def *topic_config_def_find(const char *name);

/* One topic config pair as stored for a topic; strings are the caller's. */
struct topic_config_kv {
    const char *key;
    const char *value;
};

enum topic_compression {
    TOPIC_COMPRESSION_PRODUCER = -1, /* keep what the producer sent */
    TOPIC_COMPRESSION_NONE = 0,      /* "uncompressed"; values match the batch attribute */
    TOPIC_COMPRESSION_GZIP = 1,
    TOPIC_COMPRESSION_SNAPPY = 2,
    TOPIC_COMPRESSION_LZ4 = 3,
    TOPIC_COMPRESSION_ZSTD = 4,
};

/* Effective typed values of one topic. */
struct topic_config {
    bool cleanup_delete;
    bool cleanup_compact;
    enum topic_compression compression_type;
    int32_t compression_gzip_level;
    int32_t compression_lz4_level;
    int32_t compression_zstd_level;
    int64_t delete_retention_ms;
    int64_t file_delete_delay_ms;
    int64_t flush_messages;
    int64_t flush_ms;
    int32_t index_interval_bytes;
    int64_t local_retention_bytes; /* -2 resolved to retention_bytes */
    int64_t local_retention_ms;    /* -2 resolved to retention_ms */
    int64_t max_compaction_lag_ms;
    int32_t max_message_bytes;
    bool message_downconversion_enable;
    bool message_timestamp_log_append; /* LogAppendTime (else CreateTime) */
    /* Before/after bounds; message.timestamp.difference.max.ms applies to a
     * side left at its default, as Kafka does since KIP-937. */
    int64_t message_timestamp_before_max_ms;
    int64_t message_timestamp_after_max_ms;
    int64_t message_timestamp_difference_max_ms;
    double min_cleanable_dirty_ratio;
    int64_t min_compaction_lag_ms;
    int32_t min_insync_replicas;
    bool preallocate;
    bool remote_storage_enable;
    bool remote_log_copy_disable;
    bool remote_log_delete_on_disable;
    int64_t retention_bytes; /* -1 = unlimited */
    int64_t retention_ms;    /* -1 = unlimited */
    int32_t segment_bytes;
    int32_t segment_index_bytes;
    int64_t segment_jitter_ms;
    int64_t segment_ms;
    bool unclean_leader_election_enable;
};

/* Checks one pair. Returns 0, or CONFIG_ERR_INVALID_CONFIG with Kafka's
 * message in err: "Unknown topic config name: K" or "Invalid value V for
 * configuration K: why". */
int topic_config_validate(const char *key, const char *value, char *err, size_t errlen);

/* Checks a whole set of overrides (CreateTopics, AlterConfigs): each
 * pair, then the checks across keys against the broker defaults
 * (min/max compaction lag, tiered storage and local retention). Returns
 * 0 or CONFIG_ERR_INVALID_CONFIG with one line in err. */
int topic_config_validate_all(const struct samsa_config *broker,
                              const struct topic_config_kv *kv, size_t n, char *err,
                              size_t errlen);

/* Fills out with the effective values. Overrides are expected to have
 * passed topic_config_validate_all; an override that does not parse is
 * ignored (the broker default applies) rather than trusted. */
void topic_config_resolve(const struct samsa_config *broker, const struct topic_config_kv *kv,
                          size_t n, struct topic_config *out);

/* DescribeConfigs on a topic: entry i (0 <= i < topic_config_defs_count)
 * with value, source (DYNAMIC_TOPIC_CONFIG if overridden, else the
 * broker synonym's source, else DEFAULT_CONFIG), read_only false, and
 * synonyms: the override, then the broker keys in Kafka's order. Values
 * derived from another unit (retention.ms from log.retention.hours) are
 * reported converted, synonyms as written. */
void topic_config_describe(const struct samsa_config *broker, const struct topic_config_kv *kv,
                           size_t n, size_t i, struct config_entry *e);
/* The same by name; false for an unknown name. */
bool topic_config_describe_key(const struct samsa_config *broker,
                               const struct topic_config_kv *kv, size_t n, const char *key,
                               struct config_entry *e);

#endif
