/* Broker configuration under Kafka's own property names.
 *
 * A config holds, for every key of the definition table, up to four
 * layers of value: the built-in default, the static value from the
 * properties file (or config_set), a dynamic cluster-wide default and a
 * dynamic per-broker value (both from AlterConfigs /
 * IncrementalAlterConfigs on a broker resource). The effective value is
 * the highest layer present, in Kafka's precedence order: per-broker
 * dynamic, cluster dynamic default, static, default.
 *
 * After every successful change the typed fields of struct samsa_config
 * are recomputed from the effective values, so the server reads plain
 * fields. A config is not thread-safe: build or change one on one
 * thread, then publish it (e.g. swap a pointer) to readers. */
#ifndef SAMSA_CONFIG_H
#define SAMSA_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ConfigType of DescribeConfigs v3+. */
enum config_type {
    CONFIG_TYPE_UNKNOWN = 0,
    CONFIG_TYPE_BOOLEAN = 1,
    CONFIG_TYPE_STRING = 2,
    CONFIG_TYPE_INT = 3,
    CONFIG_TYPE_SHORT = 4,
    CONFIG_TYPE_LONG = 5,
    CONFIG_TYPE_DOUBLE = 6,
    CONFIG_TYPE_LIST = 7,
    CONFIG_TYPE_CLASS = 8,
    CONFIG_TYPE_PASSWORD = 9,
};

/* ConfigSource of DescribeConfigs v1+, numbered as Kafka's
 * DescribeConfigsResponse.ConfigSource ids. */
enum config_source {
    CONFIG_SOURCE_UNKNOWN = 0,
    CONFIG_SOURCE_DYNAMIC_TOPIC = 1, /* Kafka's TOPIC_CONFIG */
    CONFIG_SOURCE_DYNAMIC_BROKER = 2,
    CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER = 3,
    CONFIG_SOURCE_STATIC_BROKER = 4,
    CONFIG_SOURCE_DEFAULT = 5,
    CONFIG_SOURCE_DYNAMIC_BROKER_LOGGER = 6,
    CONFIG_SOURCE_CLIENT_METRICS = 7,
    CONFIG_SOURCE_GROUP = 8,
};

/* How Kafka lets a broker config change at run time ("Update Mode" in
 * Kafka's broker config documentation). */
enum config_update_mode {
    CONFIG_MODE_READ_ONLY = 0,
    CONFIG_MODE_PER_BROKER,
    CONFIG_MODE_CLUSTER_WIDE,
};

/* Kafka error codes the config layer answers with. */
#define CONFIG_ERR_NONE 0
#define CONFIG_ERR_INVALID_CONFIG 40
#define CONFIG_ERR_INVALID_REQUEST 42

/* IncrementalAlterConfigs operations (its ConfigOperation field). */
enum config_op {
    CONFIG_OP_SET = 0,
    CONFIG_OP_DELETE = 1,
    CONFIG_OP_APPEND = 2,
    CONFIG_OP_SUBTRACT = 3,
};

/* ------------------------------------------------------------------ */
/* Definitions and value checks (shared with topic_config.c)           */

enum config_check {
    CONFIG_CHECK_NONE = 0,
    CONFIG_CHECK_RANGE,   /* integer types: min/max; DOUBLE: dmin/dmax */
    CONFIG_CHECK_ONE_OF,  /* STRING: value is one of choices (case-sensitive) */
    CONFIG_CHECK_LIST_OF, /* LIST: every element is one of choices */
};

/* Extra check on a value that passed its type and kind checks; value is
 * trimmed. Returns 0, or -1 with a reason ("must be ...") in why. */
typedef int (*config_check_fn)(const char *value, char *why, size_t whylen);

struct config_validator {
    enum config_check kind;
    bool has_min, has_max;
    int64_t min, max;
    double dmin, dmax;
    const char *const *choices; /* NULL-terminated */
    config_check_fn fn;         /* optional, runs after kind */
};

#define CONFIG_F_SENSITIVE 0x1     /* value never reported */
#define CONFIG_F_NO_EFFECT 0x2     /* accepted and reported; samsa ignores it yet */
#define CONFIG_F_LISTENER_ONLY 0x4 /* dynamic only under a listener.name.X. prefix */

struct config_def {
    const char *name;
    enum config_type type;
    const char *dflt; /* as DescribeConfigs reports it; NULL = no default */
    enum config_update_mode mode;
    unsigned flags;
    struct config_validator check;
    const char *doc;
};

/* The broker definition table, and lookup in it (NULL if unknown). */
extern const struct config_def config_defs[];
extern const size_t config_defs_count;
const struct config_def *config_def_find(const char *name);

/* Checks value against def: type, range, choices, custom check. On
 * success returns 0 and, if norm is not NULL, stores in *norm the value
 * as DescribeConfigs reports it (trimmed; booleans lower-case; numbers
 * canonical; list elements trimmed and joined by ","); the caller frees
 * *norm. On failure returns -1 with a reason in why, e.g. "not an
 * integer" or "must be at least 1". */
int config_def_check(const struct config_def *def, const char *value, char **norm, char *why,
                     size_t whylen);

/* Parsing helpers with Java's rules (value trimmed first). Return 0 or -1. */
int config_parse_long(const char *s, int64_t *out);
int config_parse_bool(const char *s, bool *out);
int config_parse_double(const char *s, double *out);

/* IncrementalAlterConfigs APPEND / SUBTRACT on a LIST value: returns a
 * new malloc'd list (caller frees). current may be NULL (empty list).
 * APPEND adds elements not already present; SUBTRACT removes every
 * occurrence of each element. */
char *config_list_apply(const char *current, enum config_op op, const char *value);

/* ------------------------------------------------------------------ */
/* Java properties files                                               */

/* Called once per key/value pair with the line on which the pair's
 * logical line starts. key and value are unescaped, NUL-terminated and
 * valid only during the call. Return 0 to go on, non-zero to stop. */
typedef int (*properties_cb)(void *ctx, const char *key, const char *value, int line);

/* Parses text as java.util.Properties.load does: '#'/'!' comment lines,
 * "key=value", "key: value" and "key value", leading whitespace dropped,
 * backslash line continuation, \t \n \r \f \uXXXX (written as UTF-8) and
 * "\c" = c escapes. Bytes are taken as UTF-8 (Java reads ISO-8859-1; for
 * ASCII files it makes no difference). Returns 0, the callback's non-zero
 * return value, or -1 with a message in err for a malformed \u escape. */
int properties_parse(const char *text, size_t len, properties_cb cb, void *ctx, char *err,
                     size_t errlen);

/* ------------------------------------------------------------------ */
/* The broker config                                                   */

enum security_protocol {
    SECURITY_PLAINTEXT = 0,
    SECURITY_SSL = 1,
    SECURITY_SASL_PLAINTEXT = 2,
    SECURITY_SASL_SSL = 3,
};
const char *security_protocol_name(enum security_protocol p);
struct samsa_config;
/* The security protocol of listener name (upper-case) from the effective
 * listener.security.protocol.map; false when the map does not name it. */
bool config_listener_protocol(const struct samsa_config *c, const char *name, enum security_protocol *out);

/* One max.connections.per.ip.overrides entry. */
struct config_ip_limit {
    char addr[64]; /* numeric, as inet_ntop writes it */
    int32_t max;
};
/* Parses "addr:count,..." (numeric addresses only); *out (may be NULL to
 * check only) is malloc'ed. 0, or -1 with the reason in why. */
int config_parse_ip_overrides(const char *v, struct config_ip_limit **out, size_t *n, char *why, size_t wn);

struct config_endpoint {
    char *name; /* listener name, upper-cased as Kafka normalises it */
    char *host; /* "" = all interfaces (listeners) or this host's name
                   (advertised listeners, resolved by the server) */
    uint16_t port;
    enum security_protocol protocol; /* from the effective protocol map */
    bool is_controller;              /* named in controller.listener.names */
};

struct config_voter {
    int32_t id;
    char *host;
    uint16_t port;
};

struct config_host_port {
    char *host;
    uint16_t port;
};

struct config_store; /* private: layered raw values */

struct samsa_config {
    /* Every field below is owned by the config and recomputed after each
     * successful change; pointers are valid until the next change. */
    int32_t node_id;
    bool role_broker;
    bool role_controller;
    const char *broker_rack; /* NULL if unset */

    struct config_endpoint *listeners;
    size_t n_listeners;
    /* Effective broker advertised listeners: advertised.listeners, or the
     * listeners, less the controller listeners. */
    struct config_endpoint *advertised;
    size_t n_advertised;
    char **controller_listener_names; /* upper-cased */
    size_t n_controller_listener_names;
    const char *inter_broker_listener_name; /* effective, upper-cased */
    struct config_voter *voters;
    size_t n_voters;
    struct config_host_port *bootstrap_controllers;
    size_t n_bootstrap_controllers;

    char **log_dirs; /* log.dirs, or log.dir when log.dirs is unset */
    size_t n_log_dirs;

    int32_t num_partitions;
    int32_t default_replication_factor;
    int32_t min_insync_replicas;
    bool auto_create_topics_enable;
    bool delete_topic_enable;
    int32_t message_max_bytes;
    int32_t socket_request_max_bytes;
    int32_t num_network_threads; /* samsa: network worker loops */

    int32_t log_segment_bytes;
    int64_t log_roll_ms;                 /* log.roll.ms, else log.roll.hours */
    int64_t log_retention_ms;            /* ms > minutes > hours; -1 = unlimited */
    int64_t log_retention_bytes;         /* -1 = unlimited */
    int64_t log_retention_check_interval_ms;
    int64_t log_flush_interval_messages;
    int64_t log_flush_interval_ms;       /* else log.flush.scheduler.interval.ms */
    int32_t log_index_interval_bytes;
    int32_t log_index_size_max_bytes;
    bool log_cleanup_delete;             /* log.cleanup.policy contains delete */
    bool log_cleanup_compact;            /* ... contains compact */
    const char *compression_type;        /* uncompressed|zstd|lz4|snappy|gzip|producer */
    bool log_message_timestamp_log_append; /* LogAppendTime (else CreateTime) */
    int64_t log_message_timestamp_before_max_ms;
    int64_t log_message_timestamp_after_max_ms;
    int32_t log_cleaner_threads;
    double log_cleaner_min_cleanable_ratio;
    double log_cleaner_io_max_bytes_per_second; /* the cleaners' throttle; huge: none */
    int64_t log_cleaner_delete_retention_ms;
    int64_t log_segment_delete_delay_ms;
    bool unclean_leader_election_enable;

    int16_t offsets_topic_replication_factor;
    int32_t offsets_topic_num_partitions;
    int32_t offsets_topic_compression_codec; /* a record batch codec id; 0: none */
    int16_t transaction_state_log_replication_factor;
    int32_t transaction_state_log_min_isr;
    bool transaction_partition_verification_enable;
    int32_t group_initial_rebalance_delay_ms;
    /* Read on request paths: typed here, so no string lookup there. */
    int64_t offsets_commit_timeout_ms;
    int32_t group_min_session_timeout_ms, group_max_session_timeout_ms;
    int64_t connections_max_reauth_ms;
    int32_t connection_failed_authentication_delay_ms; /* KIP-306 */
    /* The network layer's limits (net/net.c reads them at each accept,
     * so dynamic changes apply to new connections). */
    int32_t queued_max_requests;
    int32_t fetch_max_bytes; /* caps a consumer Fetch's max_bytes */
    int32_t socket_send_buffer_bytes, socket_receive_buffer_bytes; /* -1: OS default */
    int32_t socket_listen_backlog_size;
    int64_t connections_max_idle_ms;                                /* < 0: never */
    int32_t max_connections, max_connections_per_ip, max_connection_creation_rate;
    int32_t max_incremental_fetch_session_cache_slots;
    int32_t metadata_max_idle_interval_ms; /* NoOpRecord interval; 0: none */
    int32_t initial_broker_registration_timeout_ms;
    /* outgoing connections (net/kclient.c): the first attempt's timeout,
     * doubled per failed attempt up to the max, as Kafka's clients do */
    int64_t socket_connection_setup_timeout_ms, socket_connection_setup_timeout_max_ms;
    /* client quotas' rates: quota.window.num samples of
     * quota.window.size.seconds (api/quota_mgr.c) */
    int32_t quota_window_num, quota_window_size_seconds;
    struct config_ip_limit *ip_limits; /* max.connections.per.ip.overrides (owned) */
    size_t n_ip_limits;

    int log_level;          /* samsa.log.level as an enum slog_level */
    int64_t loop_stall_warn_ms; /* samsa.loop.stall.warn.ms (util/loopwatch.h) */
    bool record_validation_batch; /* samsa.record.validation=batch (api/produce.c) */
    /* samsa.metrics.listener (api/prometheus.c); host "" = every address;
     * NULL when unset: no metrics endpoint */
    struct config_host_port *metrics_listener;
    const char *plugin_dir; /* NULL = the built-in plugin directory */
    char **plugins;
    size_t n_plugins;

    struct config_store *store;
};

/* A config with every default; the caller frees it with config_free. */
struct samsa_config *config_new(void);
void config_free(struct samsa_config *cfg);
/* A deep copy (all layers); the caller frees it. */
struct samsa_config *config_dup(const struct samsa_config *cfg);

/* Loads a properties file into the static layer. Returns 0, or -1 with
 * one line in err: "FILE:LINE: config 'K' value 'V': why", "FILE:LINE:
 * unknown config 'K'", or "FILE: <errno text>". Keys that samsa accepts
 * but ignores log one WARN line each; a key set twice logs a WARN and the
 * last value wins, as in Java. Cross-key checks are config_validate's. */
int config_load_file(struct samsa_config *cfg, const char *path, char *err, size_t errlen);
/* Sets one key in the static layer, as a line of the file would. Returns
 * 0, or -1 with "config 'K' value 'V': why" / "unknown config 'K'". */
int config_set(struct samsa_config *cfg, const char *key, const char *value, char *err,
               size_t errlen);
/* Cross-key checks, as Kafka's KafkaConfig does at start-up (roles,
 * node.id, listeners vs controller listeners, voters, advertised
 * listeners, inter-broker listener, log dirs, retention). Returns 0 or -1
 * with one line in err. */
int config_validate(const struct samsa_config *cfg, char *err, size_t errlen);

/* Whether key was configured (any layer above the default). */
bool config_is_set(const struct samsa_config *cfg, const char *key);
/* Effective value of a table key as DescribeConfigs reports it; NULL
 * when unset without default. Aborts on a key not in the table (a
 * programming error). Valid until the next change. */
const char *config_get(const struct samsa_config *cfg, const char *key);
/* Typed reads of a table key; return false when the key has no value. */
bool config_get_long(const struct samsa_config *cfg, const char *key, int64_t *out);
bool config_get_bool(const struct samsa_config *cfg, const char *key, bool *out);
bool config_get_double(const struct samsa_config *cfg, const char *key, double *out);
/* Value of "plugin.<plugin>.<key>", or NULL. */
const char *config_plugin_value(const struct samsa_config *cfg, const char *plugin,
                                const char *key);
/* Stored keys outside the table (plugin.*, listener.name.*): count and
 * i-th pair. Pointers valid until the next change. */
size_t config_extra_count(const struct samsa_config *cfg);
void config_extra_get(const struct samsa_config *cfg, size_t i, const char **key,
                      const char **value);
/* The value of any key: a table key's effective value (config_get), or
 * a stored key outside the table (listener.name.*, plugin.*); NULL when
 * neither. */
const char *config_get_any(const struct samsa_config *cfg, const char *key);

/* ------------------------------------------------------------------ */
/* DescribeConfigs                                                     */

#define CONFIG_MAX_SYNONYMS 16

struct config_synonym {
    const char *name;
    const char *value; /* NULL for sensitive configs */
    enum config_source source;
};

/* One DescribeConfigs entry. Pointers refer to the config (valid until
 * its next change) or to buf inside the entry itself, so an entry must
 * not be copied by value once filled. */
struct config_entry {
    const char *name;
    const char *value; /* NULL if unset with no default, or sensitive */
    enum config_type type;
    enum config_source source;
    bool read_only;
    bool sensitive;
    const char *doc;
    size_t n_synonyms;
    struct config_synonym synonyms[CONFIG_MAX_SYNONYMS];
    char buf[128];
};

/* Entries are numbered 0 .. config_describe_count()-1: the table, then
 * the stored extra keys (reported like Kafka's custom configs: type
 * UNKNOWN, sensitive, no value). cluster_default selects the resource:
 * false for this broker (resource name = its node id), true for the
 * cluster default (empty resource name), where, as in Kafka, only keys
 * with a dynamic cluster default are listed; config_describe returns
 * false for an entry that does not belong in the answer. Synonyms are in
 * Kafka's order (per-broker dynamic, dynamic default, static, default
 * over the key's synonym names). */
size_t config_describe_count(const struct samsa_config *cfg);
bool config_describe(const struct samsa_config *cfg, size_t i, bool cluster_default,
                     struct config_entry *e);
/* The same for one key; returns false for an unknown key or one not
 * present at that resource. */
bool config_describe_key(const struct samsa_config *cfg, const char *key, bool cluster_default,
                         struct config_entry *e);

/* ------------------------------------------------------------------ */
/* Dynamic broker configs (AlterConfigs / IncrementalAlterConfigs)     */

struct config_alter {
    const char *name;
    enum config_op op;
    const char *value; /* ignored for DELETE */
};

/* A check of a whole changed config that a lower layer cannot make:
 * net/tls.c loads the new key and trust stores of the listeners whose
 * ssl.* keys changed (KIP-226); with prepare (the change is about to be
 * made, not only validated) it keeps what it built for the switch. 0, or
 * -1 with one line in err. */
typedef int (*config_reconfig_fn)(const struct samsa_config *next, bool prepare, char *err, size_t errlen);
/* Registers it (once, at startup, before any AlterConfigs). */
void config_set_reconfig_check(config_reconfig_fn fn);

/* Applies n changes to one broker resource, all or nothing:
 * cluster_default selects the dynamic cluster default layer (resource
 * name "") instead of this broker's per-broker layer. Kafka's rules:
 * read-only keys, security keys without listener prefix, and per-broker
 * keys at the cluster default are refused with INVALID_REQUEST and
 * Kafka's message ("Cannot update these configs dynamically: Set(K)");
 * a bad value is INVALID_REQUEST ("Invalid value V for configuration K:
 * why"); APPEND/SUBTRACT on a non-list key is INVALID_CONFIG. Unknown
 * keys are refused with INVALID_REQUEST (Kafka would store them; samsa
 * does not invent configs at run time). A listener-prefixed key
 * (listener.name.<l>.<key>) of a CONFIG_F_LISTENER_ONLY table key is
 * checked as that key and kept in a per-broker dynamic layer of the
 * stored extras (never at the cluster default, as Kafka's per-broker
 * security configs). The result must also pass config_validate. The
 * registered reconfig check (it reads files) is not made here: a caller
 * on a network worker runs config_reconfig_check on the preview off the
 * worker first (api/configs.c). With validate_only nothing changes.
 * Returns 0 or the error code, with one line in err. */
int config_alter_broker(struct samsa_config *cfg, bool cluster_default,
                        const struct config_alter *changes, size_t n, bool validate_only,
                        char *err, size_t errlen);
/* The same checks; on success *next is cfg with the changes applied, a
 * new config the caller owns (config_free), and cfg is untouched. */
int config_alter_broker_preview(struct samsa_config *cfg, bool cluster_default,
                                const struct config_alter *changes, size_t n, struct samsa_config **next,
                                char *err, size_t errlen);
/* Whether one of the changes is a listener-prefixed key. */
bool config_alter_names_listener_key(const struct config_alter *changes, size_t n);
/* The registered reconfig check on a whole changed config: 0, or
 * INVALID_CONFIG with one line in err. Reads files: never on a network
 * worker. */
int config_reconfig_check(const struct samsa_config *next, bool prepare, char *err, size_t errlen);
/* Replays one stored dynamic value (e.g. a ConfigRecord from the
 * metadata log) without the checks that only guard a client request;
 * value NULL removes it. Returns 0 or -1 with err. */
int config_set_dynamic(struct samsa_config *cfg, bool cluster_default, const char *key,
                       const char *value, char *err, size_t errlen);

/* Sets a key whose value only the server knows (samsa.plugins.loaded:
 * see plugin_registry_loaded_text), refused from files, --override and
 * AlterConfigs. It is stored as the key's default, so DescribeConfigs
 * reports it read-only with source DEFAULT_CONFIG, as Kafka reports every
 * value not taken from server.properties or a dynamic update
 * (ConfigHelper: the first synonym's source, DEFAULT_CONFIG when there is
 * none); STATIC_BROKER_CONFIG would claim it came from the file. Aborts
 * for any other key (a programming error). */
void config_set_server_value(struct samsa_config *cfg, const char *key, const char *value);

/* ------------------------------------------------------------------ */
/* Used by topic_config.c                                              */

/* Appends to e the synonyms of the broker keys names[0..n) in Kafka's
 * order: all per-broker dynamic values, then dynamic defaults, then
 * static values, then defaults. */
void config_append_synonyms(const struct samsa_config *cfg, const char *const *names, size_t n,
                            struct config_entry *e);

#endif
