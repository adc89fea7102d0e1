#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "util/buf.h"
#include "util/slog.h"

/* ------------------------------------------------------------------ */
/* Custom value checks                                                 */

static int check_listeners(const char *v, char *why, size_t n);
static int check_advertised(const char *v, char *why, size_t n);
static int check_protocol_map(const char *v, char *why, size_t n);
static int check_voters(const char *v, char *why, size_t n);
static int check_host_ports(const char *v, char *why, size_t n);
static int check_roles(const char *v, char *why, size_t n);
static int check_listener_name(const char *v, char *why, size_t n);
static int check_listener_names(const char *v, char *why, size_t n);
static int check_log_dirs(const char *v, char *why, size_t n);
static int check_gzip_level(const char *v, char *why, size_t n);
static int check_plugin_names(const char *v, char *why, size_t n);
static int check_ip_overrides(const char *v, char *why, size_t n);
static int check_metrics_listener(const char *v, char *why, size_t n);

/* ------------------------------------------------------------------ */
/* The definition table                                                */

static const char *const roles_choices[] = {"broker", "controller", NULL};
static const char *const cleanup_choices[] = {"compact", "delete", NULL};
static const char *const compression_choices[] = {"uncompressed", "zstd", "lz4", "snappy",
                                                  "gzip",         "producer", NULL};
static const char *const timestamp_choices[] = {"CreateTime", "LogAppendTime", NULL};
static const char *const protocol_choices[] = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL",
                                               NULL};
static const char *const log_level_choices[] = {"debug", "info", "warn", "error", NULL};
static const char *const client_auth_choices[] = {"required", "requested", "none", NULL};
static const char *const group_protocol_choices[] = {"classic", "consumer", NULL};
static const char *const recording_level_choices[] = {"INFO", "DEBUG", "TRACE", NULL};
static const char *const record_validation_choices[] = {"full", "batch", NULL};

/* Internal flag: the default is the number of online CPUs (samsa runs
 * one network worker per core); the table's default is Kafka's, used
 * only if the count is unavailable. */
#define CONFIG_F_DEFAULT_NCPU 0x100
/* Internal flag: the server computes the value (config_set_server_value);
 * a file, --override or AlterConfigs setting it is refused. */
#define CONFIG_F_SERVER_SET 0x200

#define T(x) CONFIG_TYPE_##x
#define RO CONFIG_MODE_READ_ONLY
#define PB CONFIG_MODE_PER_BROKER
#define CW CONFIG_MODE_CLUSTER_WIDE
#define NE CONFIG_F_NO_EFFECT
#define LO CONFIG_F_LISTENER_ONLY
#define NOCHECK {.kind = CONFIG_CHECK_NONE}
#define ATLEAST(a) {.kind = CONFIG_CHECK_RANGE, .has_min = true, .min = (a)}
#define BETWEEN(a, b) \
    {.kind = CONFIG_CHECK_RANGE, .has_min = true, .has_max = true, .min = (a), .max = (b)}
#define DBETWEEN(a, b) \
    {.kind = CONFIG_CHECK_RANGE, .has_min = true, .has_max = true, .dmin = (a), .dmax = (b)}
#define ONEOF(c) {.kind = CONFIG_CHECK_ONE_OF, .choices = (c)}
#define LISTOF(c) {.kind = CONFIG_CHECK_LIST_OF, .choices = (c)}
#define LISTOF_FN(c, f) {.kind = CONFIG_CHECK_LIST_OF, .choices = (c), .fn = (f)}
#define FN(f) {.kind = CONFIG_CHECK_NONE, .fn = (f)}
#define LMAX "9223372036854775807"
#define IMAX "2147483647"

/* Types, defaults and update modes follow Kafka's broker configs (3.9
 * line); where samsa's default differs (single node out of the box) the
 * doc says so. Keys marked NE are accepted and reported but not acted on
 * yet: whoever implements one removes its NE. */
const struct config_def config_defs[] = {
    /* Node identity, roles and the metadata quorum */
    {"node.id", T(INT), "1", RO, 0, ATLEAST(0),
     "Id of this node; must be set explicitly once process.roles or the quorum is configured "
     "(samsa default 1 for the single-node setup)."},
    {"broker.id", T(INT), "-1", RO, 0, ATLEAST(-1),
     "Older name of node.id; when set it must equal node.id."},
    {"process.roles", T(LIST), "broker,controller", RO, 0, LISTOF_FN(roles_choices, check_roles),
     "Roles of this node: broker, controller, or both (samsa default: both)."},
    {"controller.quorum.voters", T(LIST), "1@127.0.0.1:9093", RO, 0, FN(check_voters),
     "Static metadata quorum as id@host:port,... (samsa default: this node alone)."},
    {"controller.quorum.bootstrap.servers", T(LIST), "", RO, 0, FN(check_host_ports),
     "Controllers (host:port,...) to discover a dynamic quorum through instead of static voters."},
    {"controller.listener.names", T(STRING), "CONTROLLER", RO, 0, FN(check_listener_names),
     "Listener names the controller uses; the first one is how others reach the quorum."},
    {"listeners", T(STRING), "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093", PB, 0,
     FN(check_listeners),
     "Sockets to listen on as NAME://host:port,...; an empty host means all interfaces."},
    {"advertised.listeners", T(STRING), NULL, PB, 0, FN(check_advertised),
     "Addresses given to clients and other brokers if different from listeners."},
    {"listener.security.protocol.map", T(STRING),
     "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT", PB, 0,
     FN(check_protocol_map), "Security protocol of each listener name, as NAME:PROTOCOL,..."},
    {"inter.broker.listener.name", T(STRING), NULL, RO, 0, FN(check_listener_name),
     "Listener that brokers use to talk to each other; defaults to the one named after "
     "security.inter.broker.protocol."},
    {"security.inter.broker.protocol", T(STRING), "PLAINTEXT", RO, 0, ONEOF(protocol_choices),
     "Security protocol between brokers when inter.broker.listener.name is not set."},
    {"early.start.listeners", T(STRING), NULL, RO, NE, FN(check_listener_names),
     "Listeners to open before the authorizer has caught up with the metadata log."},
    {"broker.rack", T(STRING), NULL, RO, 0, NOCHECK,
     "Rack of this broker, used to spread replicas across racks."},

    /* Storage */
    {"log.dirs", T(STRING), NULL, RO, 0, FN(check_log_dirs),
     "Comma-separated data directories; log.dir is used when this is unset."},
    {"log.dir", T(STRING), "./data", RO, 0, FN(check_log_dirs),
     "Data directory when log.dirs is unset (samsa default ./data, relative to the working "
     "directory)."},
    {"metadata.log.dir", T(STRING), NULL, RO, 0, NOCHECK,
     "Directory of the metadata log; the first log directory when unset."},

    /* Topic defaults and limits */
    {"num.partitions", T(INT), "1", RO, 0, ATLEAST(1),
     "Partition count of auto-created topics and of topics created without one."},
    {"default.replication.factor", T(INT), "1", RO, 0, ATLEAST(1),
     "Replication factor of auto-created topics and of topics created without one."},
    {"min.insync.replicas", T(INT), "1", CW, 0, ATLEAST(1),
     "Replicas that must have a write before acks=all succeeds."},
    {"auto.create.topics.enable", T(BOOLEAN), "true", RO, 0, NOCHECK,
     "Create a topic when a client asks for metadata of or produces to an unknown one."},
    {"delete.topic.enable", T(BOOLEAN), "true", RO, 0, NOCHECK,
     "Allow DeleteTopics; when false deletion is refused."},
    {"message.max.bytes", T(INT), "1048588", CW, 0, ATLEAST(0),
     "Largest record batch accepted, after compression (default of max.message.bytes)."},
    {"socket.request.max.bytes", T(INT), "104857600", RO, 0, ATLEAST(1),
     "Largest request frame; a larger one closes the connection."},
    {"num.network.threads", T(INT), "3", CW, CONFIG_F_DEFAULT_NCPU, ATLEAST(1),
     "Network worker threads, each serving its own connections (samsa default: one per CPU)."},

    /* Log segments, retention, flushing */
    {"log.segment.bytes", T(INT), "1073741824", CW, 0, ATLEAST(14),
     "Size at which a segment is closed and a new one started."},
    {"log.roll.ms", T(LONG), NULL, CW, 0, NOCHECK,
     "Age at which a segment is closed even if not full; log.roll.hours applies when unset."},
    {"log.roll.hours", T(INT), "168", RO, 0, ATLEAST(1), "log.roll.ms in hours."},
    {"log.roll.jitter.ms", T(LONG), NULL, CW, 0, NOCHECK,
     "Random amount subtracted from the roll time so partitions do not roll together."},
    {"log.roll.jitter.hours", T(INT), "0", RO, 0, ATLEAST(0), "log.roll.jitter.ms in hours."},
    {"log.retention.ms", T(LONG), NULL, CW, 0, NOCHECK,
     "How long records are kept (-1: forever); wins over log.retention.minutes and hours."},
    {"log.retention.minutes", T(INT), NULL, RO, 0, NOCHECK,
     "Retention in minutes, used when log.retention.ms is unset."},
    {"log.retention.hours", T(INT), "168", RO, 0, NOCHECK,
     "Retention in hours, used when neither log.retention.ms nor minutes is set."},
    {"log.retention.bytes", T(LONG), "-1", CW, 0, NOCHECK,
     "Size a partition is trimmed down to by deleting old segments (-1: no limit)."},
    {"log.retention.check.interval.ms", T(LONG), "300000", RO, 0, ATLEAST(1),
     "How often retention looks for segments to delete."},
    {"log.cleanup.policy", T(LIST), "delete", CW, 0, LISTOF(cleanup_choices),
     "What happens to old segments: delete, compact, or both."},
    {"log.index.size.max.bytes", T(INT), "10485760", CW, 0, ATLEAST(4),
     "Largest offset index of a segment; a full index rolls the segment."},
    {"log.index.interval.bytes", T(INT), "4096", CW, 0, ATLEAST(0),
     "Bytes of log between two offset index entries."},
    {"log.flush.interval.messages", T(LONG), LMAX, CW, 0, ATLEAST(1),
     "Records appended to a partition before it is fsynced."},
    {"log.flush.interval.ms", T(LONG), NULL, CW, 0, NOCHECK,
     "Longest time appended data stays unsynced; log.flush.scheduler.interval.ms when unset."},
    {"log.flush.scheduler.interval.ms", T(LONG), LMAX, RO, 0, NOCHECK,
     "How often the flusher looks for partitions due for fsync."},
    {"log.flush.offset.checkpoint.interval.ms", T(INT), "60000", RO, 0, ATLEAST(0),
     "How often the recovery point checkpoint is written."},
    {"log.flush.start.offset.checkpoint.interval.ms", T(INT), "60000", RO, 0, ATLEAST(0),
     "How often the log start offset checkpoint is written."},
    {"log.segment.delete.delay.ms", T(LONG), "60000", CW, 0, ATLEAST(0),
     "Delay between removing a segment from the log and deleting its files."},
    {"log.preallocate", T(BOOLEAN), "false", CW, 0, NOCHECK,
     "Preallocate segment files at their full size."},
    {"log.message.format.version", T(STRING), "3.0-IV1", CW, NE, NOCHECK,
     "Deprecated; record format v2 is always used."},
    {"log.message.timestamp.type", T(STRING), "CreateTime", CW, 0, ONEOF(timestamp_choices),
     "Timestamp stored with records: the producer's (CreateTime) or the broker's "
     "(LogAppendTime)."},
    {"log.message.timestamp.difference.max.ms", T(LONG), LMAX, CW, 0, ATLEAST(0),
     "Deprecated: largest allowed gap between a CreateTime timestamp and broker time."},
    {"log.message.timestamp.before.max.ms", T(LONG), LMAX, CW, 0, ATLEAST(0),
     "How far in the past a CreateTime timestamp may be."},
    {"log.message.timestamp.after.max.ms", T(LONG), LMAX, CW, 0, ATLEAST(0),
     "How far in the future a CreateTime timestamp may be."},
    {"log.message.downconversion.enable", T(BOOLEAN), "true", CW, NE, NOCHECK,
     "Convert record formats for old consumers."},
    {"log.local.retention.ms", T(LONG), "-2", CW, 0, ATLEAST(-2),
     "With tiered storage, how long segments stay on local disk (-2: log.retention.ms)."},
    {"log.local.retention.bytes", T(LONG), "-2", CW, 0, ATLEAST(-2),
     "With tiered storage, local size limit of a partition (-2: log.retention.bytes)."},
    {"log.dir.failure.timeout.ms", T(LONG), "30000", RO, NE, ATLEAST(1),
     "How long a failed log directory may go unreported before the broker stops."},
    {"num.recovery.threads.per.data.dir", T(INT), "1", CW, 0, ATLEAST(1),
     "Threads per data directory for recovery at start-up and flushing at shutdown."},
    {"compression.type", T(STRING), "producer", CW, 0, ONEOF(compression_choices),
     "Compression of stored batches; producer keeps the producer's."},
    {"compression.gzip.level", T(INT), "-1", CW, 0, FN(check_gzip_level),
     "gzip level when compression.type is gzip (-1: library default)."},
    {"compression.lz4.level", T(INT), "9", CW, 0, BETWEEN(1, 17),
     "lz4 level when compression.type is lz4."},
    {"compression.zstd.level", T(INT), "3", CW, 0, BETWEEN(-131072, 22),
     "zstd level when compression.type is zstd."},
    {"unclean.leader.election.enable", T(BOOLEAN), "false", CW, 0, NOCHECK,
     "Allow an out-of-sync replica to become leader, at the cost of losing data."},

    /* Log cleaner (compaction) */
    {"log.cleaner.enable", T(BOOLEAN), "true", RO, 0, NOCHECK,
     "Run the log cleaner, which compacts topics with cleanup.policy compact."},
    {"log.cleaner.threads", T(INT), "1", CW, 0, ATLEAST(0), "Threads that compact logs."},
    {"log.cleaner.min.cleanable.ratio", T(DOUBLE), "0.5", CW, 0, DBETWEEN(0, 1),
     "Share of a log that must be uncompacted before the cleaner works on it."},
    {"log.cleaner.delete.retention.ms", T(LONG), "86400000", CW, 0, ATLEAST(0),
     "How long tombstones are kept in compacted topics."},
    {"log.cleaner.min.compaction.lag.ms", T(LONG), "0", CW, 0, ATLEAST(0),
     "Youngest a record may be and still be compacted."},
    {"log.cleaner.max.compaction.lag.ms", T(LONG), LMAX, CW, 0, ATLEAST(1),
     "Oldest a record may get before it is eligible for compaction."},
    {"log.cleaner.backoff.ms", T(LONG), "15000", CW, 0, ATLEAST(0),
     "Sleep of the cleaner when it has nothing to do."},
    {"log.cleaner.dedupe.buffer.size", T(LONG), "134217728", CW, 0, NOCHECK,
     "Memory for the key map of all cleaner threads."},
    {"log.cleaner.io.buffer.size", T(INT), "524288", CW, NE, ATLEAST(0),
     "I/O buffer memory of all cleaner threads."},
    {"log.cleaner.io.buffer.load.factor", T(DOUBLE), "0.9", CW, NE, NOCHECK,
     "Load factor of the cleaner's key map."},
    /* Read at start (Kafka's is dynamic). */
    {"log.cleaner.io.max.bytes.per.second", T(DOUBLE), "1.7976931348623157E308", RO, 0, NOCHECK,
     "Bytes per second all cleaner threads together read and write at most."},

    /* Network */
    {"num.io.threads", T(INT), "8", CW, NE, ATLEAST(1),
     "Kafka's request handler threads; samsa handles requests on the network workers."},
    {"background.threads", T(INT), "10", CW, NE, ATLEAST(1), "Threads for background tasks."},
    {"queued.max.requests", T(INT), "500", RO, 0, ATLEAST(1),
     "Requests of one connection read but not yet answered before samsa stops reading it (samsa "
     "handles requests on the network threads: no shared queue)."},
    {"queued.max.request.bytes", T(LONG), "-1", RO, NE, NOCHECK,
     "Bytes of queued requests before reading stops (-1: no limit)."},
    {"socket.send.buffer.bytes", T(INT), "102400", RO, 0, NOCHECK,
     "SO_SNDBUF of client sockets (-1: OS default)."},
    {"socket.receive.buffer.bytes", T(INT), "102400", RO, 0, NOCHECK,
     "SO_RCVBUF of client sockets (-1: OS default)."},
    {"socket.listen.backlog.size", T(INT), "50", RO, 0, ATLEAST(1),
     "Backlog of pending connections of each listener."},
    {"connections.max.idle.ms", T(LONG), "600000", RO, 0, NOCHECK,
     "Idle time after which a connection with nothing in flight is closed (-1: never)."},
    {"max.connections", T(INT), IMAX, CW, 0, ATLEAST(0),
     "Most client connections the broker keeps; more are closed at once (controller listeners are "
     "not counted)."},
    {"max.connections.per.ip", T(INT), IMAX, CW, 0, ATLEAST(0),
     "Most client connections from one address; more are closed at once."},
    {"max.connections.per.ip.overrides", T(STRING), "", CW, 0, FN(check_ip_overrides),
     "Per-address connection limits as address:count,... (numeric addresses)."},
    {"max.connection.creation.rate", T(INT), IMAX, CW, 0, ATLEAST(0),
     "Most new client connections accepted per second; more wait in the listen backlog."},
    {"fetch.max.bytes", T(INT), "57671680", RO, 0, ATLEAST(1024),
     "Most bytes one Fetch response may carry."},
    {"max.incremental.fetch.session.cache.slots", T(INT), "1000", RO, 0, ATLEAST(0),
     "Incremental fetch sessions kept; a full cache evicts as Kafka's does (KIP-227) or answers session id 0."},
    {"socket.connection.setup.timeout.ms", T(LONG), "10000", RO, 0, BETWEEN(1, INT32_MAX),
     "Timeout of an outgoing connection's setup (replica fetchers, AlterPartition, transaction markers), "
     "doubled per failed attempt (the Raft and heartbeat channels keep 2 s for fast failover)."},
    {"socket.connection.setup.timeout.max.ms", T(LONG), "30000", RO, 0, BETWEEN(1, INT32_MAX),
     "Upper bound of that timeout as it backs off."},

    /* Replication */
    /* Read at start: not dynamic (Kafka's is cluster-wide dynamic). */
    {"num.replica.fetchers", T(INT), "1", RO, 0, ATLEAST(1),
     "Follower fetcher threads per source broker."},
    {"replica.fetch.max.bytes", T(INT), "1048576", RO, 0, ATLEAST(0),
     "Bytes a follower asks for per partition."},
    {"replica.fetch.min.bytes", T(INT), "1", RO, 0, NOCHECK,
     "Bytes a follower fetch waits for."},
    {"replica.fetch.wait.max.ms", T(INT), "500", RO, 0, NOCHECK,
     "Longest wait of a follower fetch."},
    {"replica.fetch.backoff.ms", T(INT), "1000", RO, 0, ATLEAST(0),
     "Pause after a failed follower fetch."},
    {"replica.fetch.response.max.bytes", T(INT), "10485760", RO, 0, ATLEAST(0),
     "Bytes a follower asks for per fetch."},
    {"replica.lag.time.max.ms", T(LONG), "30000", RO, 0, NOCHECK,
     "A follower that has not caught up for this long leaves the ISR."},
    {"replica.socket.timeout.ms", T(INT), "30000", RO, 0, NOCHECK,
     "Socket timeout of follower fetches."},
    {"replica.socket.receive.buffer.bytes", T(INT), "65536", RO, 0, NOCHECK,
     "SO_RCVBUF of follower fetch connections."},
    {"replica.high.watermark.checkpoint.interval.ms", T(LONG), "5000", RO, 0, ATLEAST(1),
     "How often high watermarks are checkpointed."},
    {"replica.selector.class", T(CLASS), NULL, RO, NE, NOCHECK,
     "Chooses the replica a consumer fetches from (KIP-392)."},
    {"auto.leader.rebalance.enable", T(BOOLEAN), "true", RO, 0, NOCHECK,
     "Move leadership back to preferred replicas in the background."},
    {"leader.imbalance.check.interval.seconds", T(LONG), "300", RO, 0, ATLEAST(1),
     "How often leadership balance is checked."},
    {"leader.imbalance.per.broker.percentage", T(INT), "10", RO, NE, NOCHECK,
     "Leader imbalance per broker that triggers a rebalance."},
    {"controller.socket.timeout.ms", T(INT), "30000", RO, NE, NOCHECK,
     "Socket timeout of controller-to-broker channels."},

    /* KRaft tuning */
    {"controller.quorum.election.timeout.ms", T(INT), "1000", RO, 0, NOCHECK,
     "Time without a leader before a voter starts an election."},
    {"controller.quorum.fetch.timeout.ms", T(INT), "2000", RO, 0, NOCHECK,
     "Time without a successful fetch before a follower becomes a candidate."},
    {"controller.quorum.election.backoff.max.ms", T(INT), "1000", RO, 0, NOCHECK,
     "Most time between elections."},
    {"controller.quorum.append.linger.ms", T(INT), "25", RO, NE, NOCHECK,
     "How long the leader gathers metadata records before writing them."},
    {"controller.quorum.request.timeout.ms", T(INT), "2000", RO, 0, NOCHECK,
     "Timeout of quorum requests."},
    {"controller.quorum.retry.backoff.ms", T(INT), "20", RO, 0, NOCHECK,
     "Pause before retrying a failed quorum request."},
    {"broker.heartbeat.interval.ms", T(INT), "2000", RO, 0, NOCHECK,
     "Interval of broker heartbeats to the controller."},
    {"broker.session.timeout.ms", T(INT), "9000", RO, 0, NOCHECK,
     "Time without heartbeats after which a broker is fenced."},
    {"initial.broker.registration.timeout.ms", T(INT), "60000", RO, 0, NOCHECK,
     "How long a starting broker tries to register with the controller quorum before it shuts down and exits "
     "non-zero."},
    {"metadata.log.segment.bytes", T(INT), "1073741824", RO, 0, ATLEAST(12),
     "Segment size of the metadata log."},
    {"metadata.log.segment.ms", T(LONG), "604800000", RO, NE, NOCHECK,
     "Roll time of the metadata log."},
    {"metadata.max.retention.bytes", T(LONG), "104857600", RO, NE, NOCHECK,
     "Size of metadata log kept behind the latest snapshot."},
    {"metadata.max.retention.ms", T(LONG), "604800000", RO, NE, NOCHECK,
     "Age of metadata log kept behind the latest snapshot."},
    {"metadata.log.max.record.bytes.between.snapshots", T(LONG), "20971520", RO, 0, ATLEAST(1),
     "Metadata bytes appended before a new snapshot is taken."},
    {"metadata.log.max.snapshot.interval.ms", T(LONG), "3600000", RO, 0, ATLEAST(0),
     "Longest time between metadata snapshots (0: no time limit)."},
    {"metadata.max.idle.interval.ms", T(INT), "500", RO, 0, ATLEAST(0),
     "Interval of the NoOpRecords the active controller appends to the metadata log (0: none)."},

    /* Group coordinator */
    {"group.initial.rebalance.delay.ms", T(INT), "3000", RO, 0, NOCHECK,
     "How long a new classic group waits for more members before its first rebalance."},
    {"group.min.session.timeout.ms", T(INT), "6000", RO, 0, NOCHECK,
     "Shortest session timeout a classic group member may ask for."},
    {"group.max.session.timeout.ms", T(INT), "1800000", RO, 0, NOCHECK,
     "Longest session timeout a classic group member may ask for."},
    {"group.max.size", T(INT), IMAX, RO, 0, ATLEAST(1), "Most members of a classic group."},
    {"group.coordinator.rebalance.protocols", T(LIST), "classic,consumer", RO, NE,
     LISTOF(group_protocol_choices), "Group protocols the coordinator serves."},
    {"group.coordinator.threads", T(INT), "1", RO, NE, ATLEAST(1),
     "Threads of the group coordinator."},
    {"group.consumer.session.timeout.ms", T(INT), "45000", RO, 0, ATLEAST(1),
     "Session timeout of consumer-protocol (KIP-848) members."},
    {"group.consumer.min.session.timeout.ms", T(INT), "45000", RO, 0, ATLEAST(1),
     "Shortest consumer-protocol session timeout."},
    {"group.consumer.max.session.timeout.ms", T(INT), "60000", RO, 0, ATLEAST(1),
     "Longest consumer-protocol session timeout."},
    {"group.consumer.heartbeat.interval.ms", T(INT), "5000", RO, 0, ATLEAST(1),
     "Heartbeat interval of consumer-protocol members."},
    {"group.consumer.min.heartbeat.interval.ms", T(INT), "5000", RO, 0, ATLEAST(1),
     "Shortest consumer-protocol heartbeat interval."},
    {"group.consumer.max.heartbeat.interval.ms", T(INT), "15000", RO, 0, ATLEAST(1),
     "Longest consumer-protocol heartbeat interval."},
    {"group.consumer.max.size", T(INT), IMAX, RO, 0, ATLEAST(1),
     "Most members of a consumer-protocol group."},
    {"group.consumer.assignors", T(LIST), "uniform,range", RO, 0, NOCHECK,
     "Server-side assignors (KIP-848), each offered by a loaded plugin (uniform and range: the "
     "modules assignor-uniform and assignor-range); the first is the default. Unset: those of "
     "uniform,range this build loads."},
    {"offsets.topic.replication.factor", T(SHORT), "3", RO, 0, ATLEAST(1),
     "Replication factor of __consumer_offsets. A node that is alone (one voter, itself, "
     "and no other broker registered) creates it with at most 1; a cluster waits until "
     "this many brokers are registered."},
    {"offsets.topic.num.partitions", T(INT), "50", RO, 0, ATLEAST(1),
     "Partitions of __consumer_offsets; never change it after the topic exists."},
    {"offsets.topic.segment.bytes", T(INT), "104857600", RO, 0, ATLEAST(1),
     "Segment size of __consumer_offsets."},
    {"offsets.topic.compression.codec", T(INT), "0", RO, 0, BETWEEN(0, 4),
     "Codec of the group coordinator's __consumer_offsets writes (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd); "
     "its codec plugin must be loaded."},
    {"offsets.retention.minutes", T(INT), "10080", RO, 0, ATLEAST(1),
     "How long committed offsets of an empty group are kept."},
    {"offsets.retention.check.interval.ms", T(LONG), "600000", RO, 0, ATLEAST(1),
     "How often stale offsets are looked for."},
    {"offsets.commit.timeout.ms", T(INT), "5000", RO, 0, ATLEAST(1),
     "How long an offset commit waits for replication."},
    {"offsets.load.buffer.size", T(INT), "5242880", RO, 0, ATLEAST(1),
     "Read size when loading __consumer_offsets."},
    {"offset.metadata.max.bytes", T(INT), "4096", RO, 0, NOCHECK,
     "Largest metadata string of an offset commit."},

    /* Transactions */
    {"transaction.state.log.replication.factor", T(SHORT), "3", RO, 0, ATLEAST(1),
     "Replication factor of __transaction_state (at most 1 on a node that is alone, as "
     "offsets.topic.replication.factor)."},
    {"transaction.state.log.min.isr", T(INT), "2", RO, 0, ATLEAST(1),
     "min.insync.replicas of __transaction_state (at most 1 on a node that is alone)."},
    {"transaction.state.log.num.partitions", T(INT), "50", RO, 0, ATLEAST(1),
     "Partitions of __transaction_state."},
    {"transaction.state.log.segment.bytes", T(INT), "104857600", RO, 0, ATLEAST(1),
     "Segment size of __transaction_state."},
    {"transaction.state.log.load.buffer.size", T(INT), "5242880", RO, 0, ATLEAST(1),
     "Read size when loading __transaction_state."},
    {"transaction.max.timeout.ms", T(INT), "900000", RO, 0, ATLEAST(1),
     "Longest transaction timeout a producer may ask for."},
    {"transactional.id.expiration.ms", T(INT), "604800000", RO, 0, ATLEAST(1),
     "Idle time after which a transactional id is forgotten."},
    {"transaction.abort.timed.out.transaction.cleanup.interval.ms", T(INT), "10000", RO, 0,
     ATLEAST(1), "How often timed-out transactions are aborted."},
    {"transaction.remove.expired.transaction.cleanup.interval.ms", T(INT), "3600000", RO, 0,
     ATLEAST(1), "How often expired transactional ids are removed."},
    {"transaction.partition.verification.enable", T(BOOLEAN), "true", CW, 0, NOCHECK,
     "Check with the transaction coordinator that a partition is in the producer's transaction before "
     "its first transactional write there (KIP-890)."},
    /* Read once by the log manager: not dynamic (Kafka's is cluster-wide
     * dynamic), so AlterConfigs refuses it by name. */
    {"producer.id.expiration.ms", T(INT), "86400000", RO, 0, ATLEAST(1),
     "Idle time after which a producer id's state is dropped."},
    {"producer.id.expiration.check.interval.ms", T(INT), "600000", RO, 0, ATLEAST(1),
     "How often expired producer ids are looked for."},
    {"fetch.purgatory.purge.interval.requests", T(INT), "1000", RO, NE, NOCHECK,
     "Purge interval of the fetch purgatory."},
    {"producer.purgatory.purge.interval.requests", T(INT), "1000", RO, NE, NOCHECK,
     "Purge interval of the produce purgatory."},
    {"delete.records.purgatory.purge.interval.requests", T(INT), "1", RO, NE, NOCHECK,
     "Purge interval of the delete-records purgatory."},

    /* Security */
    {"authorizer.class.name", T(STRING), "", RO, 0, NOCHECK,
     "Authorizer chain, comma-separated: acl (or org.apache.kafka.metadata.authorizer.StandardAuthorizer) "
     "and authorizer plugins by name; empty means every request is allowed."},
    {"super.users", T(STRING), NULL, RO, 0, NOCHECK,
     "Principals allowed everything, as User:a;User:b."},
    {"allow.everyone.if.no.acl.found", T(BOOLEAN), "false", RO, 0, NOCHECK,
     "Allow access to resources that have no ACL."},
    {"principal.builder.class", T(CLASS),
     "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder", PB, NE,
     NOCHECK, "Builds the principal of a connection."},
    {"sasl.enabled.mechanisms", T(LIST), "PLAIN", PB, 0, NOCHECK,
     "SASL mechanisms offered on SASL listeners (Kafka's default: GSSAPI; samsa: PLAIN)."},
    {"sasl.mechanism.inter.broker.protocol", T(STRING), "PLAIN", PB, 0, NOCHECK,
     "SASL mechanism this node logs in to other brokers with (Kafka's default: GSSAPI, which samsa has "
     "no module for; samsa: PLAIN, as sasl.enabled.mechanisms)."},
    {"sasl.mechanism.controller.protocol", T(STRING), "PLAIN", RO, 0, NOCHECK,
     "SASL mechanism this node logs in to controllers with (Kafka's default: GSSAPI; samsa: PLAIN)."},
    {"sasl.jaas.config", T(PASSWORD), NULL, PB, NE | LO, NOCHECK,
     "JAAS login configuration for SASL."},
    {"sasl.server.callback.handler.class", T(CLASS), NULL, RO, LO, NOCHECK,
     "Validator of SASL logins (read by sasl-oauthbearer: Kafka's OAuthBearerValidatorCallbackHandler "
     "checks signed tokens against sasl.oauthbearer.jwks.endpoint.url; unset: unsecured tokens)."},
    {"sasl.oauthbearer.jwks.endpoint.url", T(STRING), NULL, RO, LO, NOCHECK,
     "Where the signed tokens' keys (a JWKS) are read from: a file: URL (samsa fetches no HTTP)."},
    {"sasl.oauthbearer.jwks.endpoint.refresh.ms", T(LONG), "3600000", RO, LO, ATLEAST(0),
     "How often the JWKS is read again."},
    {"sasl.oauthbearer.expected.audience", T(LIST), NULL, RO, LO, NOCHECK,
     "Audiences one of which a token's aud claim must name (unset: any)."},
    {"sasl.oauthbearer.expected.issuer", T(STRING), NULL, RO, LO, NOCHECK,
     "The iss claim a token must have (unset: any)."},
    {"sasl.oauthbearer.sub.claim.name", T(STRING), "sub", RO, LO, NOCHECK,
     "The claim naming a signed token's principal."},
    {"sasl.oauthbearer.scope.claim.name", T(STRING), "scope", RO, LO, NOCHECK,
     "The claim holding a signed token's scope."},
    {"sasl.oauthbearer.clock.skew.seconds", T(INT), "30", RO, LO, ATLEAST(0),
     "Clock difference allowed when checking a signed token's times."},
    {"connection.failed.authentication.delay.ms", T(INT), "100", RO, 0, ATLEAST(0),
     "How long a failed SASL authentication waits before its answer and the close (KIP-306)."},
    {"connections.max.reauth.ms", T(LONG), "0", RO, 0, ATLEAST(0),
     "Longest session before a SASL client must re-authenticate (0: never; KIP-368)."},
    {"ssl.keystore.type", T(STRING), "JKS", PB, LO, NOCHECK, "Format of the key store: PEM or PKCS12. The default is Kafka's, JKS, a Java format samsa does not read: a listener left at it stops startup, naming the key and the keytool -importkeystore conversion to PKCS12."},
    {"ssl.keystore.location", T(STRING), NULL, PB, LO, NOCHECK, "Path of the key store."},
    {"ssl.keystore.password", T(PASSWORD), NULL, PB, LO, NOCHECK,
     "Password of the key store."},
    {"ssl.key.password", T(PASSWORD), NULL, PB, LO, NOCHECK,
     "Password of the private key."},
    {"ssl.keystore.key", T(PASSWORD), NULL, PB, LO, NOCHECK,
     "Private key in PEM, instead of a key store file."},
    {"ssl.keystore.certificate.chain", T(PASSWORD), NULL, PB, LO, NOCHECK,
     "Certificate chain in PEM, instead of a key store file."},
    {"ssl.truststore.type", T(STRING), "JKS", PB, LO, NOCHECK, "Format of the trust store: PEM or PKCS12. The default is Kafka's, JKS, which samsa does not read (as ssl.keystore.type); with no trust store location it is not used."},
    {"ssl.truststore.location", T(STRING), NULL, PB, LO, NOCHECK,
     "Path of the trust store."},
    {"ssl.truststore.password", T(PASSWORD), NULL, PB, LO, NOCHECK,
     "Password of the trust store."},
    {"ssl.truststore.certificates", T(PASSWORD), NULL, PB, LO, NOCHECK,
     "Trusted certificates in PEM, instead of a trust store file."},
    {"ssl.client.auth", T(STRING), "none", PB, LO, ONEOF(client_auth_choices),
     "Whether TLS clients must present a certificate."},
    {"ssl.enabled.protocols", T(LIST), "TLSv1.2,TLSv1.3", PB, LO, NOCHECK,
     "TLS versions accepted."},
    {"ssl.protocol", T(STRING), "TLSv1.3", PB, LO, NOCHECK, "TLS protocol to use."},
    {"ssl.cipher.suites", T(LIST), "", PB, LO, NOCHECK,
     "Cipher suites accepted (empty: library defaults)."},
    {"ssl.endpoint.identification.algorithm", T(STRING), "https", PB, LO, NOCHECK,
     "Host name check on the certificates of the peers this node connects to (https, or empty: off)."},
    {"ssl.allow.dn.changes", T(BOOLEAN), "false", PB, LO, NOCHECK,
     "Whether a dynamically updated key store may carry a certificate with another subject."},
    {"ssl.allow.san.changes", T(BOOLEAN), "false", PB, LO, NOCHECK,
     "Whether a dynamically updated key store may carry a certificate with other subject alternative names."},
    {"ssl.principal.mapping.rules", T(STRING), "DEFAULT", RO, 0, NOCHECK,
     "Rules mapping a certificate's subject to a principal name."},

    /* Metrics, quotas, policies */
    {"metric.reporters", T(LIST), "", CW, NE, NOCHECK, "Metrics reporter classes."},
    {"metrics.num.samples", T(INT), "2", RO, NE, ATLEAST(1), "Samples kept per metric."},
    {"metrics.sample.window.ms", T(LONG), "30000", RO, NE, ATLEAST(1),
     "Window of one metrics sample."},
    {"metrics.recording.level", T(STRING), "INFO", RO, NE, ONEOF(recording_level_choices),
     "Highest metrics recording level."},
    {"quota.window.num", T(INT), "11", RO, 0, ATLEAST(1), "Samples kept for client quotas."},
    {"quota.window.size.seconds", T(INT), "1", RO, 0, ATLEAST(1),
     "Window of one client quota sample."},
    {"create.topic.policy.class.name", T(CLASS), NULL, RO, NE, NOCHECK,
     "Policy checking CreateTopics requests."},
    {"alter.config.policy.class.name", T(CLASS), NULL, RO, NE, NOCHECK,
     "Policy checking AlterConfigs requests."},
    {"remote.log.storage.system.enable", T(BOOLEAN), "false", RO, 0, NOCHECK,
     "Enable tiered storage; topics may then set remote.storage.enable."},

    /* samsa's own */
    {"samsa.log.level", T(STRING), "info", CW, 0, ONEOF(log_level_choices),
     "Lowest level of server log lines: debug, info, warn or error."},
    {"samsa.loop.stall.warn.ms", T(LONG), "50", RO, 0, ATLEAST(0),
     "A network worker's, replica fetcher's or quorum loop's pass that runs its callbacks for longer "
     "than this is logged (WARN, at most one line per loop every 10 s, with the count and the longest); "
     "0: off."},
    {"samsa.record.validation", T(STRING), "full", RO, 0, ONEOF(record_validation_choices),
     "How a produced batch is checked before it is appended. full (Kafka's): every record is read "
     "(sizes, count, offset deltas, timestamps, keys of compacted topics) and a malformed one is refused. "
     "batch: the batches of topics that are not compacted, when stored as produced, are checked by "
     "their header and CRC only, with no per-record work (compressed ones are not decompressed); "
     "timestamp limits apply to the header's first and largest timestamps. A faulty client's "
     "malformed but CRC-valid batch is then stored, and its consumers fail on it: for trusted "
     "producers only."},
    {"samsa.metrics.listener", T(STRING), "", RO, 0, FN(check_metrics_listener),
     "HOST:PORT of an HTTP endpoint serving the node's metrics at /metrics in Prometheus's text format "
     "(an empty HOST: every address); empty: none."},
    {"plugin.dir", T(STRING), NULL, RO, 0, NOCHECK,
     "Directory searched for plugin .so files (unset: the installed plugin directory)."},
    /* The scripts of the lua module (modules/lua): listed here, unlike
     * other plugin.<name>.<key> keys, because they change at run time
     * (IncrementalAlterConfigs; the plugin's reconfigure, ABI 1.3). */
    {"plugin.lua.authorizer.script", T(STRING), NULL, CW, 0, NOCHECK,
     "Lua script of the authorizer \"lua\" (authorizer.class.name); a change is checked by the "
     "module, and refused with its error, before it is stored."},
    {"plugin.lua.partitioner.script", T(STRING), NULL, CW, 0, NOCHECK,
     "Lua script of the partitioner \"lua\"; changes as plugin.lua.authorizer.script does."},
    {"plugins", T(LIST), "", RO, 0, FN(check_plugin_names),
     "Plugins to load, by name; plugin.<name>.<key> keys configure them."},
    {"samsa.plugins.loaded", T(LIST), "", RO, CONFIG_F_SERVER_SET, NOCHECK,
     "Set by the server at startup, not configurable: the plugins it loaded, in load order, as "
     "NAME:VERSION:ABI_MAJOR.ABI_MINOR:CAPS,... where CAPS is kind:name[+kind:name...] "
     "(codec:name(id) for codecs); an entry splits at its first three ':'."},
};

const size_t config_defs_count = sizeof config_defs / sizeof config_defs[0];

#undef T
#undef RO
#undef PB
#undef CW
#undef NE
#undef LO

/* ------------------------------------------------------------------ */
/* Small string helpers                                                */

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

/* Java's String.trim: drops every char <= ' ' at both ends. */
static void trim_span(const char **s, size_t *len)
{
    const char *p = *s;
    size_t n = *len;
    while (n && (unsigned char)p[0] <= ' ')
        p++, n--;
    while (n && (unsigned char)p[n - 1] <= ' ')
        n--;
    *s = p;
    *len = n;
}

static char *trimmed_dup(const char *s)
{
    size_t n = strlen(s);
    trim_span(&s, &n);
    return xstrndup(s, n);
}

static void upcase(char *s)
{
    for (; *s; s++)
        *s = (char)toupper((unsigned char)*s);
}

/* A list value split as Kafka's LIST type does: empty string -> no
 * elements; otherwise split on commas with the whitespace around them
 * dropped, empty elements kept unless drop_empty (Csv.parseCsvList). */
struct strlist {
    char **v;
    size_t n;
};

static void strlist_push(struct strlist *l, char *s)
{
    l->v = xrealloc(l->v, (l->n + 1) * sizeof *l->v);
    l->v[l->n++] = s;
}

static void strlist_free(struct strlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

static struct strlist split_list(const char *s, bool drop_empty)
{
    struct strlist l = {NULL, 0};
    size_t len = strlen(s);
    trim_span(&s, &len);
    if (!len)
        return l;
    const char *end = s + len;
    for (const char *p = s;;) {
        const char *c = memchr(p, ',', (size_t)(end - p));
        const char *e = c ? c : end;
        const char *item = p;
        size_t ilen = (size_t)(e - p);
        trim_span(&item, &ilen);
        if (ilen || !drop_empty)
            strlist_push(&l, xstrndup(item, ilen));
        if (!c)
            break;
        p = c + 1;
    }
    return l;
}

static bool strlist_has(const struct strlist *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i], s))
            return true;
    return false;
}

static char *strlist_join(const struct strlist *l)
{
    struct buf b = BUF_INIT;
    for (size_t i = 0; i < l->n; i++) {
        if (i)
            buf_put_u8(&b, ',');
        buf_append(&b, l->v[i], strlen(l->v[i]));
    }
    buf_put_u8(&b, 0);
    size_t n;
    return (char *)buf_steal(&b, &n);
}

static char **strv_dup(const struct strlist *l)
{
    char **v = xcalloc(l->n + 1, sizeof *v);
    for (size_t i = 0; i < l->n; i++)
        v[i] = xstrdup(l->v[i]);
    return v;
}

static void strv_free(char **v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void choices_text(const char *const *choices, char *out, size_t n)
{
    size_t o = 0;
    out[0] = 0;
    for (size_t i = 0; choices[i] && o < n; i++) {
        int w = snprintf(out + o, n - o, "%s%s", i ? ", " : "", choices[i]);
        if (w < 0)
            break;
        o += (size_t)w;
    }
}

/* ------------------------------------------------------------------ */
/* Typed parsing with Java's rules                                     */

int config_parse_long(const char *s, int64_t *out)
{
    size_t len = strlen(s);
    trim_span(&s, &len);
    if (!len)
        return -1;
    size_t i = 0;
    bool neg = false;
    if (s[0] == '+' || s[0] == '-') {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == len)
        return -1;
    /* Accumulate negatively so INT64_MIN parses. */
    int64_t v = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        int d = s[i] - '0';
        if (v < (INT64_MIN + d) / 10)
            return -2;
        v = v * 10 - d;
    }
    if (!neg) {
        if (v == INT64_MIN)
            return -2;
        v = -v;
    }
    *out = v;
    return 0;
}

int config_parse_bool(const char *s, bool *out)
{
    size_t len = strlen(s);
    trim_span(&s, &len);
    if (len == 4 && !strncasecmp(s, "true", 4)) {
        *out = true;
        return 0;
    }
    if (len == 5 && !strncasecmp(s, "false", 5)) {
        *out = false;
        return 0;
    }
    return -1;
}

int config_parse_double(const char *s, double *out)
{
    char *t = trimmed_dup(s);
    int rc = -1;
    if (*t) {
        /* Java's Double.parseDouble also takes a trailing d/D/f/F. */
        size_t n = strlen(t);
        if (strchr("dDfF", t[n - 1]) && n > 1 && !isalpha((unsigned char)t[n - 2]))
            t[n - 1] = 0;
        char *end;
        errno = 0;
        double d = strtod(t, &end);
        if (*end == 0 && end != t && !isnan(d) && errno != ERANGE) {
            *out = d;
            rc = 0;
        }
    }
    free(t);
    return rc;
}

static int check_range_i(const struct config_validator *v, int64_t x, char *why, size_t n)
{
    if (v->kind != CONFIG_CHECK_RANGE)
        return 0;
    if (v->has_min && v->has_max && (x < v->min || x > v->max)) {
        fmt(why, n, "must be between %lld and %lld", (long long)v->min, (long long)v->max);
        return -1;
    }
    if (v->has_min && !v->has_max && x < v->min) {
        fmt(why, n, "must be at least %lld", (long long)v->min);
        return -1;
    }
    if (!v->has_min && v->has_max && x > v->max) {
        fmt(why, n, "must be at most %lld", (long long)v->max);
        return -1;
    }
    return 0;
}

static int check_range_d(const struct config_validator *v, double x, char *why, size_t n)
{
    if (v->kind != CONFIG_CHECK_RANGE)
        return 0;
    if (v->has_min && v->has_max && (x < v->dmin || x > v->dmax)) {
        fmt(why, n, "must be between %g and %g", v->dmin, v->dmax);
        return -1;
    }
    if (v->has_min && !v->has_max && x < v->dmin) {
        fmt(why, n, "must be at least %g", v->dmin);
        return -1;
    }
    if (!v->has_min && v->has_max && x > v->dmax) {
        fmt(why, n, "must be at most %g", v->dmax);
        return -1;
    }
    return 0;
}

int config_def_check(const struct config_def *def, const char *value, char **norm, char *why,
                     size_t whylen)
{
    const struct config_validator *v = &def->check;
    char *out = NULL;
    char tmp[32];
    if (norm)
        *norm = NULL;
    switch (def->type) {
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_SHORT:
    case CONFIG_TYPE_LONG: {
        int64_t x;
        int rc = config_parse_long(value, &x);
        if (rc == -1) {
            fmt(why, whylen, "not an integer");
            return -1;
        }
        if (rc == -2) {
            fmt(why, whylen, "out of range for a 64-bit integer");
            return -1;
        }
        if (def->type == CONFIG_TYPE_INT && (x < INT32_MIN || x > INT32_MAX)) {
            fmt(why, whylen, "out of range for a 32-bit integer");
            return -1;
        }
        if (def->type == CONFIG_TYPE_SHORT && (x < INT16_MIN || x > INT16_MAX)) {
            fmt(why, whylen, "out of range for a 16-bit integer");
            return -1;
        }
        if (check_range_i(v, x, why, whylen) < 0)
            return -1;
        snprintf(tmp, sizeof tmp, "%lld", (long long)x);
        out = xstrdup(tmp);
        break;
    }
    case CONFIG_TYPE_BOOLEAN: {
        bool b;
        if (config_parse_bool(value, &b) < 0) {
            fmt(why, whylen, "must be true or false");
            return -1;
        }
        out = xstrdup(b ? "true" : "false");
        break;
    }
    case CONFIG_TYPE_DOUBLE: {
        double d;
        if (config_parse_double(value, &d) < 0) {
            fmt(why, whylen, "not a number");
            return -1;
        }
        if (check_range_d(v, d, why, whylen) < 0)
            return -1;
        out = trimmed_dup(value);
        break;
    }
    case CONFIG_TYPE_LIST: {
        struct strlist l = split_list(value, false);
        if (v->kind == CONFIG_CHECK_LIST_OF) {
            for (size_t i = 0; i < l.n; i++) {
                bool ok = false;
                for (size_t c = 0; v->choices[c]; c++)
                    if (!strcmp(v->choices[c], l.v[i]))
                        ok = true;
                if (!ok) {
                    char ch[256];
                    choices_text(v->choices, ch, sizeof ch);
                    fmt(why, whylen, "'%s' is not one of: %s", l.v[i], ch);
                    strlist_free(&l);
                    return -1;
                }
            }
        }
        out = strlist_join(&l);
        strlist_free(&l);
        break;
    }
    default: /* STRING, CLASS, PASSWORD */
        out = trimmed_dup(value);
        if (v->kind == CONFIG_CHECK_ONE_OF) {
            bool ok = false;
            for (size_t c = 0; v->choices[c]; c++)
                if (!strcmp(v->choices[c], out))
                    ok = true;
            if (!ok) {
                char ch[256];
                choices_text(v->choices, ch, sizeof ch);
                fmt(why, whylen, "must be one of: %s", ch);
                free(out);
                return -1;
            }
        }
        break;
    }
    if (v->fn && v->fn(out, why, whylen) < 0) {
        free(out);
        return -1;
    }
    if (norm)
        *norm = out;
    else
        free(out);
    return 0;
}

char *config_list_apply(const char *current, enum config_op op, const char *value)
{
    struct strlist cur = split_list(current ? current : "", false);
    struct strlist add = split_list(value ? value : "", false);
    struct strlist res = {NULL, 0};
    if (op == CONFIG_OP_SUBTRACT) {
        for (size_t i = 0; i < cur.n; i++)
            if (!strlist_has(&add, cur.v[i]))
                strlist_push(&res, xstrdup(cur.v[i]));
    } else {
        for (size_t i = 0; i < cur.n; i++)
            strlist_push(&res, xstrdup(cur.v[i]));
        for (size_t i = 0; i < add.n; i++)
            if (!strlist_has(&res, add.v[i]))
                strlist_push(&res, xstrdup(add.v[i]));
    }
    char *s = strlist_join(&res);
    strlist_free(&cur);
    strlist_free(&add);
    strlist_free(&res);
    return s;
}

/* ------------------------------------------------------------------ */
/* Listeners, voters, host:port                                        */

const char *security_protocol_name(enum security_protocol p)
{
    switch (p) {
    case SECURITY_PLAINTEXT:
        return "PLAINTEXT";
    case SECURITY_SSL:
        return "SSL";
    case SECURITY_SASL_PLAINTEXT:
        return "SASL_PLAINTEXT";
    case SECURITY_SASL_SSL:
        return "SASL_SSL";
    }
    return "?";
}

static int security_protocol_parse(const char *s, enum security_protocol *out)
{
    for (int p = SECURITY_PLAINTEXT; p <= SECURITY_SASL_SSL; p++)
        if (!strcasecmp(s, security_protocol_name((enum security_protocol)p))) {
            *out = (enum security_protocol)p;
            return 0;
        }
    return -1;
}

static bool host_char_ok(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '%' || c == '.' || c == '_' || c == ':';
}

/* "host:port" or "[v6]:port" (Kafka also takes a bare v6 literal, the
 * port being after the last ':'). Host may be empty when allow_empty. */
static int parse_host_port(const char *s, char **host, uint16_t *port, bool allow_empty,
                           char *why, size_t n)
{
    const char *h, *colon;
    size_t hlen;
    if (s[0] == '[') {
        const char *rb = strchr(s, ']');
        if (!rb || rb[1] != ':') {
            fmt(why, n, "'%s' is not host:port", s);
            return -1;
        }
        h = s + 1;
        hlen = (size_t)(rb - h);
        colon = rb + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon) {
            fmt(why, n, "'%s' is not host:port", s);
            return -1;
        }
        h = s;
        hlen = (size_t)(colon - s);
    }
    for (size_t i = 0; i < hlen; i++)
        if (!host_char_ok(h[i])) {
            fmt(why, n, "'%s' has a bad host name", s);
            return -1;
        }
    if (!hlen && !allow_empty) {
        fmt(why, n, "'%s' has no host", s);
        return -1;
    }
    int64_t p;
    if (config_parse_long(colon + 1, &p) < 0 || colon[1] == ' ' || colon[1] == 0) {
        fmt(why, n, "'%s' has no valid port", s);
        return -1;
    }
    if (p < 0 || p > 65535) {
        fmt(why, n, "port %lld of '%s' is not in 0..65535", (long long)p, s);
        return -1;
    }
    *host = xstrndup(h, hlen);
    *port = (uint16_t)p;
    return 0;
}

static void endpoints_free(struct config_endpoint *v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++) {
        free(v[i].name);
        free(v[i].host);
    }
    free(v);
}

static bool is_v6_literal(const char *h) { return strchr(h, ':') != NULL; }

/* Parses NAME://host:port,... as Kafka's EndPoint does. distinct_ports
 * applies Kafka's listener rule: ports differ, except port 0 and one
 * IPv4/IPv6 pair sharing a port. */
static int parse_endpoints(const char *value, bool distinct_ports, struct config_endpoint **out,
                           size_t *nout, char *why, size_t n)
{
    struct strlist l = split_list(value, true);
    struct config_endpoint *v = xcalloc(l.n + 1, sizeof *v);
    size_t cnt = 0;
    int rc = 0;
    for (size_t i = 0; i < l.n && !rc; i++) {
        const char *s = l.v[i];
        const char *sep = strstr(s, "://");
        if (!sep || sep == s) {
            fmt(why, n, "'%s' is not of the form NAME://host:port", s);
            rc = -1;
            break;
        }
        struct config_endpoint *ep = &v[cnt];
        if (parse_host_port(sep + 3, &ep->host, &ep->port, true, why, n) < 0) {
            rc = -1;
            break;
        }
        ep->name = xstrndup(s, (size_t)(sep - s));
        upcase(ep->name);
        cnt++;
        for (size_t j = 0; j + 1 < cnt; j++)
            if (!strcmp(v[j].name, ep->name)) {
                fmt(why, n, "each listener must have a different name (%s appears twice)",
                    ep->name);
                rc = -1;
            }
    }
    if (!rc && distinct_ports) {
        for (size_t i = 0; i < cnt && !rc; i++) {
            size_t same = 0;
            bool v6 = false, v4 = false;
            for (size_t j = 0; j < cnt; j++)
                if (v[j].port == v[i].port) {
                    same++;
                    if (is_v6_literal(v[j].host))
                        v6 = true;
                    else if (v[j].host[0])
                        v4 = true;
                }
            if (v[i].port != 0 && same > 1 && !(same == 2 && v6 && v4)) {
                fmt(why, n, "each listener must have a different port (%u appears twice)",
                    v[i].port);
                rc = -1;
            }
        }
    }
    strlist_free(&l);
    if (rc) {
        endpoints_free(v, cnt);
        return -1;
    }
    if (out) {
        *out = v;
        *nout = cnt;
    } else {
        endpoints_free(v, cnt);
    }
    return 0;
}

static int check_listeners(const char *v, char *why, size_t n)
{
    return parse_endpoints(v, true, NULL, NULL, why, n);
}

static int check_advertised(const char *v, char *why, size_t n)
{
    return parse_endpoints(v, false, NULL, NULL, why, n);
}

static bool listener_name_ok(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
            return false;
    return true;
}

static int check_listener_name(const char *v, char *why, size_t n)
{
    if (!listener_name_ok(v)) {
        fmt(why, n, "'%s' is not a listener name", v);
        return -1;
    }
    return 0;
}

static int check_listener_names(const char *v, char *why, size_t n)
{
    struct strlist l = split_list(v, false);
    int rc = 0;
    for (size_t i = 0; i < l.n && !rc; i++)
        if (check_listener_name(l.v[i], why, n) < 0)
            rc = -1;
    strlist_free(&l);
    return rc;
}

struct proto_map {
    char **names; /* upper-cased */
    enum security_protocol *protos;
    size_t n;
};

static void proto_map_free(struct proto_map *m)
{
    strv_free(m->names, m->n);
    free(m->protos);
    m->names = NULL;
    m->protos = NULL;
    m->n = 0;
}

static void proto_map_put(struct proto_map *m, const char *name, enum security_protocol p)
{
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->names[i], name)) {
            m->protos[i] = p;
            return;
        }
    m->names = xrealloc(m->names, (m->n + 1) * sizeof *m->names);
    m->protos = xrealloc(m->protos, (m->n + 1) * sizeof *m->protos);
    m->names[m->n] = xstrdup(name);
    upcase(m->names[m->n]);
    m->protos[m->n] = p;
    m->n++;
}

static bool proto_map_get(const struct proto_map *m, const char *name,
                          enum security_protocol *p)
{
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->names[i], name)) {
            if (p)
                *p = m->protos[i];
            return true;
        }
    return false;
}

static int parse_protocol_map(const char *value, struct proto_map *m, char *why, size_t n)
{
    struct strlist l = split_list(value, true);
    int rc = 0;
    for (size_t i = 0; i < l.n && !rc; i++) {
        char *colon = strchr(l.v[i], ':');
        if (!colon || strchr(colon + 1, ':')) {
            fmt(why, n, "'%s' is not NAME:PROTOCOL", l.v[i]);
            rc = -1;
            break;
        }
        *colon = 0;
        const char *name = l.v[i], *proto = colon + 1;
        size_t nl = strlen(name), pl = strlen(proto);
        trim_span(&name, &nl);
        trim_span(&proto, &pl);
        char *nm = xstrndup(name, nl), *pr = xstrndup(proto, pl);
        enum security_protocol p;
        if (!listener_name_ok(nm)) {
            fmt(why, n, "'%s' is not a listener name", nm);
            rc = -1;
        } else if (security_protocol_parse(pr, &p) < 0) {
            fmt(why, n, "'%s' is not a security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, "
                "SASL_SSL)", pr);
            rc = -1;
        } else if (m) {
            proto_map_put(m, nm, p);
        }
        free(nm);
        free(pr);
    }
    strlist_free(&l);
    return rc;
}

static int check_protocol_map(const char *v, char *why, size_t n)
{
    return parse_protocol_map(v, NULL, why, n);
}

static void voters_free(struct config_voter *v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        free(v[i].host);
    free(v);
}

static int parse_voters(const char *value, struct config_voter **out, size_t *nout, char *why,
                        size_t n)
{
    struct strlist l = split_list(value, true);
    struct config_voter *v = xcalloc(l.n + 1, sizeof *v);
    size_t cnt = 0;
    int rc = 0;
    for (size_t i = 0; i < l.n && !rc; i++) {
        char *at = strchr(l.v[i], '@');
        if (!at || strchr(at + 1, '@')) {
            fmt(why, n, "'%s' is not of the form id@host:port", l.v[i]);
            rc = -1;
            break;
        }
        *at = 0;
        int64_t id;
        if (config_parse_long(l.v[i], &id) < 0 || id < 0 || id > INT32_MAX) {
            fmt(why, n, "'%s' is not a node id", l.v[i]);
            rc = -1;
            break;
        }
        for (size_t j = 0; j < cnt; j++)
            if (v[j].id == id) {
                fmt(why, n, "voter %lld appears twice", (long long)id);
                rc = -1;
            }
        if (rc)
            break;
        if (parse_host_port(at + 1, &v[cnt].host, &v[cnt].port, false, why, n) < 0) {
            rc = -1;
            break;
        }
        v[cnt++].id = (int32_t)id;
    }
    strlist_free(&l);
    if (rc) {
        voters_free(v, cnt);
        return -1;
    }
    if (out) {
        *out = v;
        *nout = cnt;
    } else {
        voters_free(v, cnt);
    }
    return 0;
}

int config_parse_ip_overrides(const char *v, struct config_ip_limit **out, size_t *n, char *why, size_t wn)
{
    if (out)
        *out = NULL;
    if (n)
        *n = 0;
    struct strlist l = split_list(v, true);
    struct config_ip_limit *a = xcalloc(l.n ? l.n : 1, sizeof *a);
    int rc = 0;
    for (size_t i = 0; i < l.n && rc == 0; i++) {
        const char *e = l.v[i];
        const char *colon = strrchr(e, ':');
        int64_t count;
        unsigned char tmp[16];
        char host[64];
        size_t hl = colon ? (size_t)(colon - e) : 0;
        if (!colon || hl == 0 || hl >= sizeof host || config_parse_long(colon + 1, &count) != 0 || count < 0 ||
            count > INT32_MAX) {
            snprintf(why, wn, "'%s' is not address:count", e);
            rc = -1;
            break;
        }
        memcpy(host, e, hl);
        host[hl] = 0;
        if (inet_pton(AF_INET, host, tmp) != 1 && inet_pton(AF_INET6, host, tmp) != 1) {
            snprintf(why, wn, "'%s' is not a numeric address (samsa does not resolve host names here)", host);
            rc = -1;
            break;
        }
        snprintf(a[i].addr, sizeof a[i].addr, "%s", host);
        a[i].max = (int32_t)count;
    }
    if (rc == 0 && out) {
        *out = a;
        *n = l.n;
    } else {
        free(a);
    }
    strlist_free(&l);
    return rc;
}

static int check_ip_overrides(const char *v, char *why, size_t n)
{
    return config_parse_ip_overrides(v, NULL, NULL, why, n);
}

/* "" (off) or HOST:PORT, host optional. Returns the parsed endpoint in
 * *out when out is given (NULL for ""). */
static int parse_metrics_listener(const char *v, struct config_host_port **out, char *why, size_t n)
{
    if (out)
        *out = NULL;
    if (!v || !*v)
        return 0;
    struct config_host_port hp = {0};
    if (parse_host_port(v, &hp.host, &hp.port, true, why, n) < 0)
        return -1;
    if (out) {
        *out = xmalloc(sizeof **out);
        **out = hp;
    } else {
        free(hp.host);
    }
    return 0;
}

static int check_metrics_listener(const char *v, char *why, size_t n)
{
    return parse_metrics_listener(v, NULL, why, n);
}

static int check_voters(const char *v, char *why, size_t n)
{
    return parse_voters(v, NULL, NULL, why, n);
}

static void host_ports_free(struct config_host_port *v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        free(v[i].host);
    free(v);
}

static int parse_host_ports(const char *value, struct config_host_port **out, size_t *nout,
                            char *why, size_t n)
{
    struct strlist l = split_list(value, true);
    struct config_host_port *v = xcalloc(l.n + 1, sizeof *v);
    size_t cnt = 0;
    int rc = 0;
    for (size_t i = 0; i < l.n && !rc; i++) {
        if (parse_host_port(l.v[i], &v[cnt].host, &v[cnt].port, false, why, n) < 0)
            rc = -1;
        else
            cnt++;
    }
    strlist_free(&l);
    if (rc) {
        host_ports_free(v, cnt);
        return -1;
    }
    if (out) {
        *out = v;
        *nout = cnt;
    } else {
        host_ports_free(v, cnt);
    }
    return 0;
}

static int check_host_ports(const char *v, char *why, size_t n)
{
    return parse_host_ports(v, NULL, NULL, why, n);
}

static int check_roles(const char *v, char *why, size_t n)
{
    struct strlist l = split_list(v, false);
    int rc = 0;
    for (size_t i = 0; i < l.n && !rc; i++)
        for (size_t j = 0; j < i; j++)
            if (!strcmp(l.v[i], l.v[j])) {
                fmt(why, n, "role '%s' appears twice", l.v[i]);
                rc = -1;
                break;
            }
    strlist_free(&l);
    return rc;
}

static int check_log_dirs(const char *v, char *why, size_t n)
{
    struct strlist l = split_list(v, true);
    int rc = 0;
    if (!l.n) {
        fmt(why, n, "no directory given");
        rc = -1;
    }
    for (size_t i = 0; i < l.n && !rc; i++)
        for (size_t j = 0; j < i; j++)
            if (!strcmp(l.v[i], l.v[j])) {
                fmt(why, n, "directory '%s' appears twice", l.v[i]);
                rc = -1;
                break;
            }
    strlist_free(&l);
    return rc;
}

static int check_gzip_level(const char *v, char *why, size_t n)
{
    int64_t x;
    if (config_parse_long(v, &x) == 0 && (x == -1 || (x >= 1 && x <= 9)))
        return 0;
    fmt(why, n, "must be between 1 and 9, or -1");
    return -1;
}

static int check_plugin_names(const char *v, char *why, size_t n)
{
    struct strlist l = split_list(v, false);
    int rc = 0;
    for (size_t i = 0; i < l.n && !rc; i++) {
        const char *s = l.v[i];
        bool ok = *s != 0;
        for (; *s; s++)
            if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
                ok = false;
        if (!ok) {
            fmt(why, n, "'%s' is not a plugin name (letters, digits, '-', '_')", l.v[i]);
            rc = -1;
        }
    }
    strlist_free(&l);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Java properties                                                     */

static bool prop_ws(char c) { return c == ' ' || c == '\t' || c == '\f'; }

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static void put_utf8(struct buf *b, uint32_t cp)
{
    if (cp < 0x80) {
        buf_put_u8(b, (uint8_t)cp);
    } else if (cp < 0x800) {
        buf_put_u8(b, (uint8_t)(0xc0 | cp >> 6));
        buf_put_u8(b, (uint8_t)(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
        buf_put_u8(b, (uint8_t)(0xe0 | cp >> 12));
        buf_put_u8(b, (uint8_t)(0x80 | (cp >> 6 & 0x3f)));
        buf_put_u8(b, (uint8_t)(0x80 | (cp & 0x3f)));
    } else {
        buf_put_u8(b, (uint8_t)(0xf0 | cp >> 18));
        buf_put_u8(b, (uint8_t)(0x80 | (cp >> 12 & 0x3f)));
        buf_put_u8(b, (uint8_t)(0x80 | (cp >> 6 & 0x3f)));
        buf_put_u8(b, (uint8_t)(0x80 | (cp & 0x3f)));
    }
}

/* Java's loadConvert: resolves escapes of s[0..n) into out (NUL-ended). */
static int unescape(const char *s, size_t n, struct buf *out)
{
    buf_reset(out);
    uint32_t hi = 0; /* pending UTF-16 high surrogate */
    for (size_t i = 0; i < n;) {
        char c = s[i++];
        if (c != '\\' || i == n) {
            if (hi) {
                put_utf8(out, hi);
                hi = 0;
            }
            if (c != '\\')
                buf_put_u8(out, (uint8_t)c);
            continue;
        }
        c = s[i++];
        if (c == 'u') {
            if (n - i < 4)
                return -1;
            uint32_t cp = 0;
            for (int k = 0; k < 4; k++) {
                int h = hexval(s[i + (size_t)k]);
                if (h < 0)
                    return -1;
                cp = cp << 4 | (uint32_t)h;
            }
            i += 4;
            if (hi && cp >= 0xdc00 && cp <= 0xdfff) {
                put_utf8(out, 0x10000 + ((hi - 0xd800) << 10) + (cp - 0xdc00));
                hi = 0;
                continue;
            }
            if (hi) {
                put_utf8(out, hi);
                hi = 0;
            }
            if (cp >= 0xd800 && cp <= 0xdbff)
                hi = cp;
            else
                put_utf8(out, cp);
            continue;
        }
        if (hi) {
            put_utf8(out, hi);
            hi = 0;
        }
        switch (c) {
        case 't':
            c = '\t';
            break;
        case 'r':
            c = '\r';
            break;
        case 'n':
            c = '\n';
            break;
        case 'f':
            c = '\f';
            break;
        default:
            break;
        }
        buf_put_u8(out, (uint8_t)c);
    }
    if (hi)
        put_utf8(out, hi);
    buf_put_u8(out, 0);
    return 0;
}

int properties_parse(const char *text, size_t len, properties_cb cb, void *ctx, char *err,
                     size_t errlen)
{
    struct buf line = BUF_INIT, key = BUF_INIT, val = BUF_INIT;
    size_t i = 0;
    int lineno = 1, rc = 0;
    while (i < len && !rc) {
        /* Start of a natural line: skip leading whitespace. */
        while (i < len && prop_ws(text[i]))
            i++;
        if (i < len && (text[i] == '\n' || text[i] == '\r')) {
            if (text[i] == '\r' && i + 1 < len && text[i + 1] == '\n')
                i++;
            i++;
            lineno++;
            continue;
        }
        if (i >= len)
            break;
        if (text[i] == '#' || text[i] == '!') {
            /* Comments end at their natural line; no continuation. */
            while (i < len && text[i] != '\n' && text[i] != '\r')
                i++;
            continue;
        }
        /* Gather the logical line, joining continuations. */
        int start_line = lineno;
        buf_reset(&line);
        for (;;) {
            size_t s = i;
            while (i < len && text[i] != '\n' && text[i] != '\r')
                i++;
            size_t e = i;
            size_t bs = 0;
            while (e - bs > s && text[e - bs - 1] == '\\')
                bs++;
            bool cont = bs % 2 == 1;
            buf_append(&line, text + s, e - s - (cont ? 1 : 0));
            if (i < len) {
                if (text[i] == '\r' && i + 1 < len && text[i + 1] == '\n')
                    i++;
                i++;
                lineno++;
            }
            if (!cont || i >= len)
                break;
            while (i < len && prop_ws(text[i]))
                i++;
        }
        /* Split key and value as Properties.load0. */
        const char *l = (const char *)line.data;
        size_t n = line.len, klen = 0, vstart = n;
        bool sep = false, esc = false;
        for (; klen < n; klen++) {
            char c = l[klen];
            if ((c == '=' || c == ':') && !esc) {
                vstart = klen + 1;
                sep = true;
                break;
            }
            if (prop_ws(c) && !esc) {
                vstart = klen + 1;
                break;
            }
            esc = c == '\\' ? !esc : false;
        }
        while (vstart < n) {
            char c = l[vstart];
            if (!prop_ws(c)) {
                if (!sep && (c == '=' || c == ':'))
                    sep = true;
                else
                    break;
            }
            vstart++;
        }
        if (unescape(l, klen, &key) < 0 || unescape(l + vstart, n - vstart, &val) < 0) {
            fmt(err, errlen, "%d: malformed \\uxxxx escape", start_line);
            rc = -1;
            break;
        }
        rc = cb(ctx, (const char *)key.data, (const char *)val.data, start_line);
    }
    buf_free(&line);
    buf_free(&key);
    buf_free(&val);
    return rc;
}

/* ------------------------------------------------------------------ */
/* The layered store                                                   */

enum layer { L_DEFAULT = 0, L_STATIC, L_DYN_DEFAULT, L_DYN_BROKER, L_COUNT };

static const enum config_source layer_source[L_COUNT] = {
    CONFIG_SOURCE_DEFAULT,
    CONFIG_SOURCE_STATIC_BROKER,
    CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER,
    CONFIG_SOURCE_DYNAMIC_BROKER,
};

/* A key outside the table. value: the static one (NULL when only
 * dynamic); dyn: the per-broker dynamic one (listener-prefixed ssl.*
 * keys, KIP-226), which wins. Both owned. */
struct extra {
    char *key;
    char *value;
    char *dyn;
};

struct config_store {
    char **vals; /* config_defs_count rows of L_COUNT layers, owned */
    struct extra *extras;
    size_t n_extras;
    /* Derived state the typed fields point into. */
    struct proto_map map;
    char *inter_broker_listener_name;
};

#define NO_INDEX ((size_t)-1)

static size_t def_index(const char *name)
{
    for (size_t i = 0; i < config_defs_count; i++)
        if (!strcmp(config_defs[i].name, name))
            return i;
    return NO_INDEX;
}

const struct config_def *config_def_find(const char *name)
{
    size_t i = def_index(name);
    return i == NO_INDEX ? NULL : &config_defs[i];
}

static char **slot(const struct samsa_config *c, size_t i, int layer)
{
    return &c->store->vals[i * L_COUNT + (size_t)layer];
}

static const char *eff_i(const struct samsa_config *c, size_t i, int *layer)
{
    for (int l = L_COUNT - 1; l >= 0; l--) {
        const char *v = *slot(c, i, l);
        if (v) {
            if (layer)
                *layer = l;
            return v;
        }
    }
    if (layer)
        *layer = -1;
    return NULL;
}

static size_t must_index(const char *key)
{
    size_t i = def_index(key);
    if (i == NO_INDEX) {
        slog_error("BUG: config key '%s' is not in the table", key);
        abort();
    }
    return i;
}

const char *config_get(const struct samsa_config *c, const char *key)
{
    return eff_i(c, must_index(key), NULL);
}

bool config_is_set(const struct samsa_config *c, const char *key)
{
    size_t i = def_index(key);
    if (i == NO_INDEX) {
        for (size_t k = 0; k < c->store->n_extras; k++)
            if (!strcmp(c->store->extras[k].key, key))
                return true;
        return false;
    }
    int layer;
    eff_i(c, i, &layer);
    return layer > L_DEFAULT;
}

bool config_get_long(const struct samsa_config *c, const char *key, int64_t *out)
{
    const char *v = config_get(c, key);
    return v && config_parse_long(v, out) == 0;
}

bool config_get_bool(const struct samsa_config *c, const char *key, bool *out)
{
    const char *v = config_get(c, key);
    return v && config_parse_bool(v, out) == 0;
}

bool config_get_double(const struct samsa_config *c, const char *key, double *out)
{
    const char *v = config_get(c, key);
    return v && config_parse_double(v, out) == 0;
}

static int64_t get_l(const struct samsa_config *c, const char *key)
{
    int64_t v = 0;
    config_get_long(c, key, &v);
    return v;
}

static bool get_b(const struct samsa_config *c, const char *key)
{
    bool v = false;
    config_get_bool(c, key, &v);
    return v;
}

const char *config_get_any(const struct samsa_config *c, const char *key)
{
    if (config_def_find(key))
        return config_get(c, key);
    const char *v = NULL;
    size_t n = config_extra_count(c);
    for (size_t i = 0; i < n; i++) {
        const char *k, *val;
        config_extra_get(c, i, &k, &val);
        if (k && strcmp(k, key) == 0)
            v = val;
    }
    return v;
}

static config_reconfig_fn reconfig_check;

void config_set_reconfig_check(config_reconfig_fn fn) { reconfig_check = fn; }

bool config_listener_protocol(const struct samsa_config *c, const char *name, enum security_protocol *out)
{
    return proto_map_get(&c->store->map, name, out);
}

const char *config_plugin_value(const struct samsa_config *c, const char *plugin,
                                const char *key)
{
    char full[256];
    if (snprintf(full, sizeof full, "plugin.%s.%s", plugin, key) < (int)sizeof full &&
        def_index(full) != NO_INDEX)
        return config_get(c, full);
    size_t pl = strlen(plugin);
    for (size_t k = 0; k < c->store->n_extras; k++) {
        const char *e = c->store->extras[k].key;
        if (!strncmp(e, "plugin.", 7) && !strncmp(e + 7, plugin, pl) && e[7 + pl] == '.' &&
            !strcmp(e + 8 + pl, key))
            return c->store->extras[k].dyn ? c->store->extras[k].dyn : c->store->extras[k].value;
    }
    return NULL;
}

size_t config_extra_count(const struct samsa_config *c) { return c->store->n_extras; }

void config_extra_get(const struct samsa_config *c, size_t i, const char **key,
                      const char **value)
{
    *key = c->store->extras[i].key;
    *value = c->store->extras[i].dyn ? c->store->extras[i].dyn : c->store->extras[i].value;
}

/* Sets the static (dyn false) or dynamic value of an extra key; value
 * NULL removes that layer, and the entry once neither is left. */
static void extra_put_layer(struct config_store *s, const char *key, const char *value, bool dyn)
{
    for (size_t k = 0; k < s->n_extras; k++)
        if (!strcmp(s->extras[k].key, key)) {
            char **v = dyn ? &s->extras[k].dyn : &s->extras[k].value;
            free(*v);
            *v = value ? xstrdup(value) : NULL;
            if (!s->extras[k].value && !s->extras[k].dyn) {
                free(s->extras[k].key);
                memmove(&s->extras[k], &s->extras[k + 1], (s->n_extras - k - 1) * sizeof *s->extras);
                s->n_extras--;
            }
            return;
        }
    if (!value)
        return;
    s->extras = xrealloc(s->extras, (s->n_extras + 1) * sizeof *s->extras);
    s->extras[s->n_extras].key = xstrdup(key);
    s->extras[s->n_extras].value = dyn ? NULL : xstrdup(value);
    s->extras[s->n_extras].dyn = dyn ? xstrdup(value) : NULL;
    s->n_extras++;
}

static void extra_put(struct config_store *s, const char *key, const char *value)
{
    extra_put_layer(s, key, value, false);
}

/* The table key a listener-prefixed key stands for
 * (listener.name.<l>.<key>) when that key may only be set per listener
 * (CONFIG_F_LISTENER_ONLY); NULL otherwise. */
static const struct config_def *listener_def(const char *key)
{
    static const char pre[] = "listener.name.";
    if (strncmp(key, pre, sizeof pre - 1))
        return NULL;
    const char *name = key + sizeof pre - 1;
    const char *dot = strchr(name, '.');
    if (!dot || dot == name || !dot[1])
        return NULL;
    const struct config_def *d = config_def_find(dot + 1);
    return d && (d->flags & CONFIG_F_LISTENER_ONLY) ? d : NULL;
}

/* ------------------------------------------------------------------ */
/* Synonyms                                                            */

static const char *const syn_retention[] = {"log.retention.ms", "log.retention.minutes",
                                            "log.retention.hours"};
static const int64_t mul_retention[] = {1, 60 * 1000LL, 3600 * 1000LL};
static const char *const syn_roll[] = {"log.roll.ms", "log.roll.hours"};
static const char *const syn_jitter[] = {"log.roll.jitter.ms", "log.roll.jitter.hours"};
static const int64_t mul_hours[] = {1, 3600 * 1000LL};
static const char *const syn_flush[] = {"log.flush.interval.ms",
                                        "log.flush.scheduler.interval.ms"};
static const int64_t mul_one[] = {1, 1};

/* Kafka's DynamicBrokerConfig.brokerConfigSynonyms. */
static size_t broker_synonyms(const char *name, const char *const **names)
{
    for (size_t k = 0; k < 3; k++)
        if (!strcmp(name, syn_retention[k])) {
            *names = syn_retention;
            return 3;
        }
    for (size_t k = 0; k < 2; k++) {
        if (!strcmp(name, syn_roll[k])) {
            *names = syn_roll;
            return 2;
        }
        if (!strcmp(name, syn_jitter[k])) {
            *names = syn_jitter;
            return 2;
        }
    }
    if (!strcmp(name, syn_flush[0])) {
        *names = syn_flush;
        return 2;
    }
    *names = NULL;
    return 0;
}

void config_append_synonyms(const struct samsa_config *c, const char *const *names, size_t n,
                            struct config_entry *e)
{
    for (int l = L_COUNT - 1; l >= 0; l--)
        for (size_t k = 0; k < n; k++) {
            size_t i = def_index(names[k]);
            if (i == NO_INDEX)
                continue;
            const char *v = *slot(c, i, l);
            if (!v || e->n_synonyms == CONFIG_MAX_SYNONYMS)
                continue;
            const struct config_def *d = &config_defs[i];
            bool sens = (d->flags & CONFIG_F_SENSITIVE) || d->type == CONFIG_TYPE_PASSWORD;
            struct config_synonym *s = &e->synonyms[e->n_synonyms++];
            s->name = d->name;
            s->value = sens ? NULL : v;
            s->source = layer_source[l];
        }
}

/* The value Kafka derives from a synonym group (ms > minutes > hours and
 * the like): the first value in synonym order, times its unit. */
static int64_t chain_value(const struct samsa_config *c, const char *const *names,
                           const int64_t *mul, size_t n)
{
    struct config_entry e;
    e.n_synonyms = 0;
    config_append_synonyms(c, names, n, &e);
    if (!e.n_synonyms)
        return 0;
    int64_t v = 0;
    config_parse_long(e.synonyms[0].value, &v);
    for (size_t k = 0; k < n; k++)
        if (!strcmp(e.synonyms[0].name, names[k]))
            return v * mul[k];
    return v;
}

/* ------------------------------------------------------------------ */
/* Typed fields                                                        */

static void typed_free(struct samsa_config *c)
{
    endpoints_free(c->listeners, c->n_listeners);
    endpoints_free(c->advertised, c->n_advertised);
    strv_free(c->controller_listener_names, c->n_controller_listener_names);
    voters_free(c->voters, c->n_voters);
    host_ports_free(c->bootstrap_controllers, c->n_bootstrap_controllers);
    host_ports_free(c->metrics_listener, c->metrics_listener ? 1 : 0);
    c->metrics_listener = NULL;
    strv_free(c->log_dirs, c->n_log_dirs);
    strv_free(c->plugins, c->n_plugins);
    free(c->ip_limits);
    proto_map_free(&c->store->map);
    free(c->store->inter_broker_listener_name);
    c->store->inter_broker_listener_name = NULL;
    struct config_store *s = c->store;
    memset(c, 0, sizeof *c);
    c->store = s;
}

static bool is_controller_name(const struct samsa_config *c, const char *name)
{
    for (size_t i = 0; i < c->n_controller_listener_names; i++)
        if (!strcmp(c->controller_listener_names[i], name))
            return true;
    return false;
}

static bool is_secure_name(const char *s)
{
    return !strcmp(s, "SSL") || !strcmp(s, "SASL_SSL") || !strcmp(s, "SASL_PLAINTEXT");
}

static void set_protocols(struct samsa_config *c, struct config_endpoint *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        enum security_protocol p = SECURITY_PLAINTEXT;
        proto_map_get(&c->store->map, v[i].name, &p);
        v[i].protocol = p;
        v[i].is_controller = is_controller_name(c, v[i].name);
    }
}

/* Recomputes every typed field from the effective values. Values were
 * checked when stored, so parsing here cannot fail; what may still be
 * inconsistent across keys is config_validate's to report. */
static void refresh(struct samsa_config *c)
{
    typed_free(c);
    struct config_store *s = c->store;

    c->node_id = (int32_t)get_l(c, "node.id");
    if (!config_is_set(c, "node.id") && config_is_set(c, "broker.id") && get_l(c, "broker.id") >= 0)
        c->node_id = (int32_t)get_l(c, "broker.id");
    struct strlist roles = split_list(config_get(c, "process.roles"), true);
    c->role_broker = strlist_has(&roles, "broker");
    c->role_controller = strlist_has(&roles, "controller");
    strlist_free(&roles);
    c->broker_rack = config_get(c, "broker.rack");

    const char *cln = config_get(c, "controller.listener.names");
    struct strlist names = split_list(cln ? cln : "", true);
    for (size_t i = 0; i < names.n; i++)
        upcase(names.v[i]);
    c->controller_listener_names = strv_dup(&names);
    c->n_controller_listener_names = names.n;
    strlist_free(&names);

    parse_endpoints(config_get(c, "listeners"), true, &c->listeners, &c->n_listeners, NULL, 0);

    /* Kafka's effectiveListenerSecurityProtocolMap: with the default map,
     * controller listeners get PLAINTEXT unless TLS or SASL is in play. */
    parse_protocol_map(config_get(c, "listener.security.protocol.map"), &s->map, NULL, 0);
    if (!config_is_set(c, "listener.security.protocol.map")) {
        bool secure = false;
        for (size_t i = 0; i < c->n_controller_listener_names; i++)
            if (is_secure_name(c->controller_listener_names[i]))
                secure = true;
        for (size_t i = 0; i < c->n_listeners; i++)
            if (is_secure_name(c->listeners[i].name))
                secure = true;
        if (!secure)
            for (size_t i = 0; i < c->n_controller_listener_names; i++)
                if (strcmp(c->controller_listener_names[i], "PLAINTEXT"))
                    proto_map_put(&s->map, c->controller_listener_names[i], SECURITY_PLAINTEXT);
    }
    set_protocols(c, c->listeners, c->n_listeners);

    struct config_endpoint *adv = NULL;
    size_t n_adv = 0;
    const char *advs = config_get(c, "advertised.listeners");
    parse_endpoints(advs ? advs : config_get(c, "listeners"), false, &adv, &n_adv, NULL, 0);
    set_protocols(c, adv, n_adv);
    c->advertised = xcalloc(n_adv + 1, sizeof *c->advertised);
    for (size_t i = 0; i < n_adv; i++) {
        if (adv[i].is_controller) {
            free(adv[i].name);
            free(adv[i].host);
            continue;
        }
        c->advertised[c->n_advertised++] = adv[i];
    }
    free(adv);

    const char *ibl = config_get(c, "inter.broker.listener.name");
    s->inter_broker_listener_name = xstrdup(ibl ? ibl : config_get(c, "security.inter.broker.protocol"));
    upcase(s->inter_broker_listener_name);
    c->inter_broker_listener_name = s->inter_broker_listener_name;

    /* samsa's default voter set describes the single-node setup; once
     * the quorum is given as bootstrap servers only, it does not apply. */
    if (!(config_is_set(c, "controller.quorum.bootstrap.servers") &&
          !config_is_set(c, "controller.quorum.voters")))
        parse_voters(config_get(c, "controller.quorum.voters"), &c->voters, &c->n_voters, NULL, 0);
    parse_host_ports(config_get(c, "controller.quorum.bootstrap.servers"),
                     &c->bootstrap_controllers, &c->n_bootstrap_controllers, NULL, 0);

    const char *dirs = config_get(c, "log.dirs");
    struct strlist dl = split_list(dirs ? dirs : config_get(c, "log.dir"), true);
    c->log_dirs = strv_dup(&dl);
    c->n_log_dirs = dl.n;
    strlist_free(&dl);

    c->num_partitions = (int32_t)get_l(c, "num.partitions");
    c->default_replication_factor = (int32_t)get_l(c, "default.replication.factor");
    c->min_insync_replicas = (int32_t)get_l(c, "min.insync.replicas");
    c->auto_create_topics_enable = get_b(c, "auto.create.topics.enable");
    c->delete_topic_enable = get_b(c, "delete.topic.enable");
    c->message_max_bytes = (int32_t)get_l(c, "message.max.bytes");
    c->socket_request_max_bytes = (int32_t)get_l(c, "socket.request.max.bytes");
    c->num_network_threads = (int32_t)get_l(c, "num.network.threads");

    c->log_segment_bytes = (int32_t)get_l(c, "log.segment.bytes");
    c->log_roll_ms = chain_value(c, syn_roll, mul_hours, 2);
    c->log_retention_ms = chain_value(c, syn_retention, mul_retention, 3);
    if (c->log_retention_ms < 0)
        c->log_retention_ms = -1;
    c->log_retention_bytes = get_l(c, "log.retention.bytes");
    c->log_retention_check_interval_ms = get_l(c, "log.retention.check.interval.ms");
    c->log_flush_interval_messages = get_l(c, "log.flush.interval.messages");
    c->log_flush_interval_ms = chain_value(c, syn_flush, mul_one, 2);
    c->log_index_interval_bytes = (int32_t)get_l(c, "log.index.interval.bytes");
    c->log_index_size_max_bytes = (int32_t)get_l(c, "log.index.size.max.bytes");
    struct strlist pol = split_list(config_get(c, "log.cleanup.policy"), true);
    c->log_cleanup_delete = strlist_has(&pol, "delete");
    c->log_cleanup_compact = strlist_has(&pol, "compact");
    strlist_free(&pol);
    c->compression_type = config_get(c, "compression.type");
    c->log_message_timestamp_log_append =
        !strcmp(config_get(c, "log.message.timestamp.type"), "LogAppendTime");
    c->log_message_timestamp_before_max_ms = get_l(c, "log.message.timestamp.before.max.ms");
    c->log_message_timestamp_after_max_ms = get_l(c, "log.message.timestamp.after.max.ms");
    c->log_cleaner_threads = (int32_t)get_l(c, "log.cleaner.threads");
    config_get_double(c, "log.cleaner.min.cleanable.ratio", &c->log_cleaner_min_cleanable_ratio);
    config_get_double(c, "log.cleaner.io.max.bytes.per.second", &c->log_cleaner_io_max_bytes_per_second);
    c->log_cleaner_delete_retention_ms = get_l(c, "log.cleaner.delete.retention.ms");
    c->log_segment_delete_delay_ms = get_l(c, "log.segment.delete.delay.ms");
    c->unclean_leader_election_enable = get_b(c, "unclean.leader.election.enable");

    c->offsets_topic_replication_factor = (int16_t)get_l(c, "offsets.topic.replication.factor");
    c->offsets_topic_num_partitions = (int32_t)get_l(c, "offsets.topic.num.partitions");
    c->offsets_topic_compression_codec = (int32_t)get_l(c, "offsets.topic.compression.codec");
    c->transaction_state_log_replication_factor =
        (int16_t)get_l(c, "transaction.state.log.replication.factor");
    c->transaction_state_log_min_isr = (int32_t)get_l(c, "transaction.state.log.min.isr");
    c->transaction_partition_verification_enable = get_b(c, "transaction.partition.verification.enable");
    c->group_initial_rebalance_delay_ms = (int32_t)get_l(c, "group.initial.rebalance.delay.ms");
    c->offsets_commit_timeout_ms = get_l(c, "offsets.commit.timeout.ms");
    c->group_min_session_timeout_ms = (int32_t)get_l(c, "group.min.session.timeout.ms");
    c->group_max_session_timeout_ms = (int32_t)get_l(c, "group.max.session.timeout.ms");
    c->connections_max_reauth_ms = get_l(c, "connections.max.reauth.ms");
    c->connection_failed_authentication_delay_ms = (int32_t)get_l(c, "connection.failed.authentication.delay.ms");
    c->queued_max_requests = (int32_t)get_l(c, "queued.max.requests");
    c->fetch_max_bytes = (int32_t)get_l(c, "fetch.max.bytes");
    c->socket_send_buffer_bytes = (int32_t)get_l(c, "socket.send.buffer.bytes");
    c->socket_receive_buffer_bytes = (int32_t)get_l(c, "socket.receive.buffer.bytes");
    c->socket_listen_backlog_size = (int32_t)get_l(c, "socket.listen.backlog.size");
    c->connections_max_idle_ms = get_l(c, "connections.max.idle.ms");
    c->max_connections = (int32_t)get_l(c, "max.connections");
    c->max_connections_per_ip = (int32_t)get_l(c, "max.connections.per.ip");
    c->max_connection_creation_rate = (int32_t)get_l(c, "max.connection.creation.rate");
    c->max_incremental_fetch_session_cache_slots = (int32_t)get_l(c, "max.incremental.fetch.session.cache.slots");
    c->metadata_max_idle_interval_ms = (int32_t)get_l(c, "metadata.max.idle.interval.ms");
    c->initial_broker_registration_timeout_ms = (int32_t)get_l(c, "initial.broker.registration.timeout.ms");
    c->socket_connection_setup_timeout_ms = get_l(c, "socket.connection.setup.timeout.ms");
    c->socket_connection_setup_timeout_max_ms = get_l(c, "socket.connection.setup.timeout.max.ms");
    c->quota_window_num = (int32_t)get_l(c, "quota.window.num");
    c->quota_window_size_seconds = (int32_t)get_l(c, "quota.window.size.seconds");
    char ipwhy[256];
    config_parse_ip_overrides(config_get(c, "max.connections.per.ip.overrides"), &c->ip_limits, &c->n_ip_limits,
                              ipwhy, sizeof ipwhy);

    const char *lvl = config_get(c, "samsa.log.level");
    c->loop_stall_warn_ms = get_l(c, "samsa.loop.stall.warn.ms");
    c->record_validation_batch = !strcmp(config_get(c, "samsa.record.validation"), "batch");
    parse_metrics_listener(config_get(c, "samsa.metrics.listener"), &c->metrics_listener, NULL, 0);
    c->log_level = !strcmp(lvl, "debug")  ? SLOG_DEBUG
                   : !strcmp(lvl, "warn")  ? SLOG_WARN
                   : !strcmp(lvl, "error") ? SLOG_ERROR
                                           : SLOG_INFO;
    c->plugin_dir = config_get(c, "plugin.dir");
    struct strlist pl = split_list(config_get(c, "plugins"), true);
    c->plugins = strv_dup(&pl);
    c->n_plugins = pl.n;
    strlist_free(&pl);
}

/* ------------------------------------------------------------------ */
/* Life cycle                                                          */

static struct samsa_config *config_alloc(void)
{
    struct samsa_config *c = xcalloc(1, sizeof *c);
    c->store = xcalloc(1, sizeof *c->store);
    c->store->vals = xcalloc(config_defs_count * L_COUNT, sizeof(char *));
    return c;
}

struct samsa_config *config_new(void)
{
    struct samsa_config *c = config_alloc();
    for (size_t i = 0; i < config_defs_count; i++) {
        const struct config_def *d = &config_defs[i];
        if (d->flags & CONFIG_F_DEFAULT_NCPU) {
            long n = sysconf(_SC_NPROCESSORS_ONLN);
            if (n > 0 && n <= INT32_MAX) {
                char tmp[24];
                snprintf(tmp, sizeof tmp, "%ld", n);
                *slot(c, i, L_DEFAULT) = xstrdup(tmp);
                continue;
            }
        }
        if (d->dflt)
            *slot(c, i, L_DEFAULT) = xstrdup(d->dflt);
    }
    refresh(c);
    return c;
}

void config_free(struct samsa_config *c)
{
    if (!c)
        return;
    typed_free(c);
    struct config_store *s = c->store;
    for (size_t i = 0; i < config_defs_count * L_COUNT; i++)
        free(s->vals[i]);
    free(s->vals);
    for (size_t k = 0; k < s->n_extras; k++) {
        free(s->extras[k].key);
        free(s->extras[k].value);
        free(s->extras[k].dyn);
    }
    free(s->extras);
    free(s);
    free(c);
}

struct samsa_config *config_dup(const struct samsa_config *src)
{
    struct samsa_config *c = config_alloc();
    for (size_t i = 0; i < config_defs_count * L_COUNT; i++)
        if (src->store->vals[i])
            c->store->vals[i] = xstrdup(src->store->vals[i]);
    for (size_t k = 0; k < src->store->n_extras; k++) {
        const struct extra *x = &src->store->extras[k];
        if (x->value)
            extra_put_layer(c->store, x->key, x->value, false);
        if (x->dyn)
            extra_put_layer(c->store, x->key, x->dyn, true);
    }
    refresh(c);
    return c;
}

/* ------------------------------------------------------------------ */
/* Setting values                                                      */

static bool has_prefix(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }

static bool has_suffix(const char *s, const char *x)
{
    size_t n = strlen(s), m = strlen(x);
    return n >= m && !strcmp(s + n - m, x);
}

/* "plugin.<name>.<key>" / "listener.name.<name>.<key>" with both parts
 * non-empty. */
static bool is_prefixed_key(const char *key, const char *prefix)
{
    if (!has_prefix(key, prefix))
        return false;
    const char *name = key + strlen(prefix);
    const char *dot = strchr(name, '.');
    return dot && dot > name && dot[1];
}

/* Kafka's documented broker configs (3.9) that samsa does not take, with
 * why: a file that sets one is refused with that reason rather than as
 * an unknown key (tests/unit/kafka_broker_keys.txt lists them all; the
 * config test checks each is either in the table above or here). An
 * entry ending in '.' is a prefix. */
static const struct {
    const char *key, *why;
} kafka_refused[] = {
    {"zookeeper.", "samsa runs in KRaft mode only, without ZooKeeper"},
    {"broker.id.generation.enable", "a ZooKeeper-mode setting; samsa runs in KRaft mode only"},
    {"reserved.broker.max.id", "a ZooKeeper-mode setting; samsa runs in KRaft mode only"},
    {"control.plane.listener.name", "a ZooKeeper-mode setting; samsa runs in KRaft mode only"},
    {"controlled.shutdown.", "a ZooKeeper-mode setting; in KRaft mode a broker always shuts down under control"},
    {"inter.broker.protocol.version", "KRaft clusters version their metadata with metadata.version"},
    {"offsets.commit.required.acks", "deprecated in Kafka; coordinator writes always wait for the ISR"},
    {"remote.", "tiered storage is not supported yet"},
    {"alter.log.dirs.replication.quota.window.", "moving replicas between log dirs is not supported"},
    {"num.replica.alter.log.dirs.threads", "moving replicas between log dirs is not supported"},
    {"replication.quota.window.", "replication throttling is not supported"},
    {"controller.quota.window.", "controller mutation quotas are token buckets, without sample windows"},
    {"client.quota.callback.class", "no pluggable client quota callback"},
    {"delegation.token.", "delegation tokens are not supported"},
    {"password.encoder.", "no dynamic password configs are stored encoded"},
    {"eligible.leader.replicas.enable", "eligible leader replicas (KIP-966) are not supported"},
    {"group.share.", "share groups (KIP-932) are not supported"},
    {"max.request.partition.size.limit", "share groups (KIP-932) are not supported"},
    {"group.coordinator.append.linger.ms", "the group coordinator writes each operation's batch at once"},
    {"auto.include.jmx.reporter", "no JMX: samsa's metrics are its own"},
    {"kafka.metrics.", "no Yammer metrics reporters: samsa's metrics are its own"},
    {"telemetry.max.bytes", "client telemetry (KIP-714) is not supported"},
    {"request.timeout.ms", "samsa's inter-node clients use replica.socket.timeout.ms and "
                           "controller.quorum.request.timeout.ms"},
    {"sasl.kerberos.", "SASL GSSAPI (Kerberos) is not supported"},
    {"sasl.login.", "no JAAS login modules: samsa's own connections log in with the listener's mechanism"},
    {"sasl.client.callback.handler.class", "no JAAS callback handlers"},
    {"sasl.server.max.receive.size", "not supported"},
    {"sasl.oauthbearer.", "the sasl-oauthbearer module reads its settings per listener "
                          "(listener.name.<l>.oauthbearer.sasl.oauthbearer.*)"},
    {"security.providers", "no Java security providers: TLS is OpenSSL's"},
    {"ssl.engine.factory.class", "no Java SSL engine: TLS is OpenSSL's"},
    {"ssl.provider", "no Java security providers: TLS is OpenSSL's"},
    {"ssl.keymanager.algorithm", "no Java key managers: TLS is OpenSSL's"},
    {"ssl.trustmanager.algorithm", "no Java trust managers: TLS is OpenSSL's"},
    {"ssl.secure.random.implementation", "TLS uses OpenSSL's random generator"},
    {"ssl.allow.", "key stores are not reloaded at run time"},
};

/* Why samsa refuses Kafka broker config key, or NULL when it is not one
 * of those. */
static const char *kafka_unsupported(const char *key)
{
    for (size_t i = 0; i < sizeof kafka_refused / sizeof kafka_refused[0]; i++) {
        const char *k = kafka_refused[i].key;
        size_t n = strlen(k);
        if (k[n - 1] == '.' ? !strncmp(key, k, n) : !strcmp(key, k))
            return kafka_refused[i].why;
    }
    return NULL;
}

static void warn_no_effect(const char *key)
{
    slog_warn("config '%s' is accepted but has no effect in samsa yet", key);
}

/* Stores value in the static layer. Returns 0 or -1 with the message. */
static int set_static(struct samsa_config *c, const char *key, const char *value, char *err,
                      size_t errlen)
{
    size_t i = def_index(key);
    if (i != NO_INDEX) {
        const struct config_def *d = &config_defs[i];
        char why[256] = "";
        char *norm;
        if (d->flags & CONFIG_F_SERVER_SET) {
            fmt(err, errlen, "config '%s' value '%s': read-only; the server sets it at startup", key,
                value);
            return -1;
        }
        if (config_def_check(d, value, &norm, why, sizeof why) < 0) {
            fmt(err, errlen, "config '%s' value '%s': %s", key, value, why);
            return -1;
        }
        free(*slot(c, i, L_STATIC));
        *slot(c, i, L_STATIC) = norm;
        if (d->flags & CONFIG_F_NO_EFFECT)
            warn_no_effect(key);
        return 0;
    }
    if (is_prefixed_key(key, "plugin.")) {
        extra_put(c->store, key, value);
        return 0;
    }
    if (is_prefixed_key(key, "listener.name.")) {
        /* a listener's ssl.* keys (net/tls.c) are checked as the
         * broker-wide key is */
        const char *tail = strchr(key + strlen("listener.name."), '.') + 1;
        size_t ti = has_prefix(tail, "ssl.") ? def_index(tail) : NO_INDEX;
        if (ti != NO_INDEX) {
            char why[256] = "";
            char *norm;
            if (config_def_check(&config_defs[ti], value, &norm, why, sizeof why) < 0) {
                fmt(err, errlen, "config '%s' value '%s': %s", key, value, why);
                return -1;
            }
            free(norm);
        }
        extra_put(c->store, key, value);
        /* the SASL keys of a listener are read (auth/sasl.c, sasl-plain),
         * and its ssl.* keys that have an effect broker-wide */
        bool read = has_suffix(key, ".sasl.enabled.mechanisms") || has_suffix(key, ".sasl.jaas.config") ||
                    has_suffix(key, ".sasl.server.callback.handler.class") || strstr(key, ".sasl.oauthbearer.") ||
                    (ti != NO_INDEX && !(config_defs[ti].flags & CONFIG_F_NO_EFFECT));
        if (!read)
            warn_no_effect(key);
        return 0;
    }
    const char *why = kafka_unsupported(key);
    if (why) {
        fmt(err, errlen, "config '%s': a Kafka broker config samsa does not support: %s", key, why);
        return -1;
    }
    fmt(err, errlen, "unknown config '%s'", key);
    return -1;
}

int config_set(struct samsa_config *c, const char *key, const char *value, char *err,
               size_t errlen)
{
    if (set_static(c, key, value, err, errlen) < 0)
        return -1;
    refresh(c);
    return 0;
}

struct load_ctx {
    struct samsa_config *cfg;
    const char *path;
    char *err;
    size_t errlen;
    struct strlist keys;
    int *lines;
    bool failed;
};

static int load_cb(void *p, const char *key, const char *value, int line)
{
    struct load_ctx *lc = p;
    char msg[512];
    if (set_static(lc->cfg, key, value, msg, sizeof msg) < 0) {
        fmt(lc->err, lc->errlen, "%s:%d: %s", lc->path, line, msg);
        lc->failed = true;
        return -1;
    }
    for (size_t k = 0; k < lc->keys.n; k++)
        if (!strcmp(lc->keys.v[k], key)) {
            slog_warn("%s:%d: config '%s' was already set on line %d; the last value wins",
                      lc->path, line, key, lc->lines[k]);
            lc->lines[k] = line;
            return 0;
        }
    strlist_push(&lc->keys, xstrdup(key));
    lc->lines = xrealloc(lc->lines, lc->keys.n * sizeof *lc->lines);
    lc->lines[lc->keys.n - 1] = line;
    return 0;
}

int config_load_file(struct samsa_config *c, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fmt(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct buf b = BUF_INIT;
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_append(&b, chunk, n);
    int rd_err = ferror(f);
    fclose(f);
    if (rd_err) {
        fmt(err, errlen, "%s: read error", path);
        buf_free(&b);
        return -1;
    }
    struct load_ctx lc = {c, path, err, errlen, {NULL, 0}, NULL, false};
    char perr[256] = "";
    int rc = properties_parse((const char *)b.data, b.len, load_cb, &lc, perr, sizeof perr);
    if (rc && !lc.failed)
        fmt(err, errlen, "%s:%s", path, perr);
    strlist_free(&lc.keys);
    free(lc.lines);
    buf_free(&b);
    refresh(c);
    return rc ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* Cross-key validation                                                */

/* Scala's Set(...) rendering, which Kafka's messages embed. */
static void voter_set_text(const struct samsa_config *c, char *out, size_t n)
{
    int32_t *ids = xcalloc(c->n_voters + 1, sizeof *ids);
    for (size_t i = 0; i < c->n_voters; i++)
        ids[i] = c->voters[i].id;
    for (size_t i = 1; i < c->n_voters; i++)
        for (size_t j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
            int32_t t = ids[j];
            ids[j] = ids[j - 1];
            ids[j - 1] = t;
        }
    size_t o = (size_t)snprintf(out, n, "Set(");
    for (size_t i = 0; i < c->n_voters && o < n; i++)
        o += (size_t)snprintf(out + o, n - o, "%s%d", i ? ", " : "", ids[i]);
    if (o < n)
        snprintf(out + o, n - o, ")");
    free(ids);
}

static bool has_voter(const struct samsa_config *c, int32_t id)
{
    for (size_t i = 0; i < c->n_voters; i++)
        if (c->voters[i].id == id)
            return true;
    return false;
}

static bool has_listener(const struct config_endpoint *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].name, name))
            return true;
    return false;
}

static void names_text(const struct config_endpoint *v, size_t n, char *out, size_t len)
{
    size_t o = 0;
    out[0] = 0;
    for (size_t i = 0; i < n && o < len; i++)
        o += (size_t)snprintf(out + o, len - o, "%s%s", i ? "," : "", v[i].name);
}

int config_validate(const struct samsa_config *c, char *err, size_t n)
{
    const struct config_store *s = c->store;
    char set[256], a[512], b[512];
    int rc = -1;
    struct config_endpoint *adv_all = NULL; /* advertised.listeners as written, if set */
    size_t n_adv_all = 0;

    if (!c->role_broker && !c->role_controller) {
        fmt(err, n, "config 'process.roles' is empty: samsa runs in KRaft mode only "
            "(broker, controller, or broker,controller)");
        return -1;
    }
    if ((config_is_set(c, "process.roles") || config_is_set(c, "controller.quorum.voters") ||
         config_is_set(c, "controller.quorum.bootstrap.servers")) &&
        !config_is_set(c, "node.id") && !config_is_set(c, "broker.id")) {
        fmt(err, n, "config 'node.id' must be set when 'process.roles' or the controller "
            "quorum is configured");
        return -1;
    }
    if (config_is_set(c, "broker.id") && get_l(c, "broker.id") != c->node_id) {
        fmt(err, n, "You must set `node.id` to the same value as `broker.id`.");
        return -1;
    }
    if (!c->n_log_dirs) {
        fmt(err, n, "At least one log directory must be defined via log.dirs or log.dir.");
        return -1;
    }
    if (c->log_roll_ms < 1) {
        fmt(err, n, "log.roll.ms must be greater than or equal to 1");
        return -1;
    }
    if (chain_value(c, syn_jitter, mul_hours, 2) < 0) {
        fmt(err, n, "log.roll.jitter.ms must be greater than or equal to 0");
        return -1;
    }
    if (c->log_retention_ms == 0) {
        fmt(err, n, "log.retention.ms must be unlimited (-1) or, greater than or equal to 1");
        return -1;
    }
    int64_t queued = get_l(c, "queued.max.request.bytes");
    if (queued > 0 && queued < c->socket_request_max_bytes) {
        fmt(err, n, "queued.max.request.bytes must be larger or equal to socket.request.max.bytes");
        return -1;
    }
    /* Kafka's KafkaConfig.validateValues: a follower's parked Fetch must
     * not time out before the leader answers it. */
    if (get_l(c, "replica.fetch.wait.max.ms") > get_l(c, "replica.socket.timeout.ms")) {
        fmt(err, n, "replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms to prevent "
                    "unnecessary socket timeouts");
        return -1;
    }
    /* Kafka's GroupCoordinatorConfig: the consumer-protocol (KIP-848)
     * session timeout and heartbeat interval lie within their bounds, and
     * a member heartbeats within its session. */
    int64_t st = get_l(c, "group.consumer.session.timeout.ms"), hb = get_l(c, "group.consumer.heartbeat.interval.ms");
    int64_t st_min = get_l(c, "group.consumer.min.session.timeout.ms");
    int64_t st_max = get_l(c, "group.consumer.max.session.timeout.ms");
    int64_t hb_min = get_l(c, "group.consumer.min.heartbeat.interval.ms");
    int64_t hb_max = get_l(c, "group.consumer.max.heartbeat.interval.ms");
    if (st < st_min || st > st_max) {
        fmt(err, n, "group.consumer.session.timeout.ms (%lld) must be between group.consumer.min.session.timeout.ms "
                    "(%lld) and group.consumer.max.session.timeout.ms (%lld)",
            (long long)st, (long long)st_min, (long long)st_max);
        return -1;
    }
    if (hb < hb_min || hb > hb_max) {
        fmt(err, n, "group.consumer.heartbeat.interval.ms (%lld) must be between "
                    "group.consumer.min.heartbeat.interval.ms (%lld) and group.consumer.max.heartbeat.interval.ms (%lld)",
            (long long)hb, (long long)hb_min, (long long)hb_max);
        return -1;
    }
    if (hb >= st) {
        fmt(err, n, "group.consumer.heartbeat.interval.ms (%lld) must be less than group.consumer.session.timeout.ms "
                    "(%lld)",
            (long long)hb, (long long)st);
        return -1;
    }

    /* Listener names and security protocols. */
    if (config_is_set(c, "inter.broker.listener.name") &&
        config_is_set(c, "security.inter.broker.protocol")) {
        fmt(err, n, "Only one of inter.broker.listener.name and security.inter.broker.protocol "
            "should be set.");
        return -1;
    }
    for (size_t i = 0; i < c->n_listeners; i++)
        if (!proto_map_get(&s->map, c->listeners[i].name, NULL)) {
            fmt(err, n, "No security protocol defined for listener %s", c->listeners[i].name);
            return -1;
        }
    const char *advs = config_get(c, "advertised.listeners");
    if (advs) {
        parse_endpoints(advs, false, &adv_all, &n_adv_all, NULL, 0);
        for (size_t i = 0; i < n_adv_all; i++)
            if (!proto_map_get(&s->map, adv_all[i].name, NULL)) {
                fmt(err, n, "No security protocol defined for listener %s", adv_all[i].name);
                goto out;
            }
    }
    if (config_is_set(c, "inter.broker.listener.name") &&
        !proto_map_get(&s->map, c->inter_broker_listener_name, NULL)) {
        fmt(err, n, "Listener with name %s defined in inter.broker.listener.name not found in "
            "listener.security.protocol.map.", c->inter_broker_listener_name);
        goto out;
    }

    /* The metadata quorum, by role. */
    voter_set_text(c, set, sizeof set);
    if (!c->n_voters && !c->n_bootstrap_controllers) {
        fmt(err, n, "If using process.roles, either controller.quorum.bootstrap.servers must "
            "contain the set of bootstrap controllers or controller.quorum.voters must contain a "
            "parseable set of controllers.");
        goto out;
    }
    size_t n_ctrl_listeners = 0;
    for (size_t i = 0; i < c->n_listeners; i++)
        if (c->listeners[i].is_controller)
            n_ctrl_listeners++;
    if (c->role_broker && !c->role_controller) {
        if (has_voter(c, c->node_id)) {
            fmt(err, n, "If process.roles contains just the 'broker' role, the node id %d must "
                "not be included in the set of voters controller.quorum.voters=%s", c->node_id,
                set);
            goto out;
        }
        if (!c->n_controller_listener_names) {
            fmt(err, n, "controller.listener.names must contain at least one value when running "
                "KRaft with just the broker role");
            goto out;
        }
        if (n_ctrl_listeners) {
            fmt(err, n, "controller.listener.names must not contain a value appearing in the "
                "'listeners' configuration when running KRaft with just the broker role");
            goto out;
        }
        for (size_t i = 0; i < c->n_controller_listener_names; i++)
            if (!proto_map_get(&s->map, c->controller_listener_names[i], NULL)) {
                fmt(err, n, "Controller listener with name %s defined in "
                    "controller.listener.names not found in listener.security.protocol.map "
                    "(an explicit security mapping for each controller listener is required if "
                    "listener.security.protocol.map is non-empty, or if there are security "
                    "protocols other than PLAINTEXT in use)", c->controller_listener_names[i]);
                goto out;
            }
    }
    if (c->role_controller) {
        if (!c->role_broker) {
            if (n_ctrl_listeners != c->n_listeners) {
                fmt(err, n, "The listeners config must only contain KRaft controller listeners "
                    "from controller.listener.names when process.roles=controller");
                goto out;
            }
            if (config_is_set(c, "inter.broker.listener.name") &&
                is_controller_name(c, c->inter_broker_listener_name)) {
                fmt(err, n, "controller.listener.names must not contain an explicitly set "
                    "inter.broker.listener.name configuration value when "
                    "process.roles=controller");
                goto out;
            }
        }
        if (c->n_voters && !has_voter(c, c->node_id)) {
            fmt(err, n, "If process.roles contains the 'controller' role, the node id %d must be "
                "included in the set of voters controller.quorum.voters=%s", c->node_id, set);
            goto out;
        }
        /* Effective advertised controller listeners: each controller name's
         * advertised endpoint, else its listener. */
        size_t found = 0;
        for (size_t k = 0; k < c->n_controller_listener_names; k++) {
            const char *nm = c->controller_listener_names[k];
            const struct config_endpoint *ep = NULL;
            for (size_t i = 0; i < n_adv_all && !ep; i++)
                if (!strcmp(adv_all[i].name, nm))
                    ep = &adv_all[i];
            for (size_t i = 0; i < c->n_listeners && !ep; i++)
                if (!strcmp(c->listeners[i].name, nm))
                    ep = &c->listeners[i];
            if (!ep)
                continue;
            found++;
            if (!strcmp(ep->host, "0.0.0.0") || !strcmp(ep->host, "::")) {
                fmt(err, n, "advertised.listeners cannot use the nonroutable meta-address %s. "
                    "Use a routable IP address.", ep->host);
                goto out;
            }
        }
        if (!found) {
            fmt(err, n, "controller.listener.names must contain at least one value appearing in "
                "the 'listeners' configuration when running the KRaft controller role");
            goto out;
        }
        for (size_t k = 0; k < c->n_controller_listener_names; k++)
            if (!has_listener(c->listeners, c->n_listeners, c->controller_listener_names[k])) {
                fmt(err, n, "controller.listener.names must only contain values appearing in the "
                    "'listeners' configuration when running the KRaft controller role");
                goto out;
            }
    }

    /* What clients and other brokers are told. */
    if (c->role_broker) {
        if (!c->n_advertised) {
            fmt(err, n, "There must be at least one broker advertised listener. Perhaps all "
                "listeners appear in controller.listener.names?");
            goto out;
        }
        names_text(c->advertised, c->n_advertised, a, sizeof a);
        if (!has_listener(c->advertised, c->n_advertised, c->inter_broker_listener_name)) {
            fmt(err, n, "inter.broker.listener.name must be a listener name defined in "
                "advertised.listeners. The valid options based on currently configured listeners "
                "are %s", a);
            goto out;
        }
        for (size_t i = 0; i < c->n_advertised; i++)
            if (!has_listener(c->listeners, c->n_listeners, c->advertised[i].name)) {
                names_text(c->listeners, c->n_listeners, b, sizeof b);
                fmt(err, n, "advertised.listeners listener names must be equal to or a subset of "
                    "the ones defined in listeners. Found %s. The valid options based on the "
                    "current configuration are %s", a, b);
                goto out;
            }
    }
    for (size_t i = 0; i < c->n_advertised; i++)
        if (!strcmp(c->advertised[i].host, "0.0.0.0") || !strcmp(c->advertised[i].host, "::")) {
            fmt(err, n, "advertised.listeners cannot use the nonroutable meta-address %s. Use a "
                "routable IP address.", c->advertised[i].host);
            goto out;
        }
    rc = 0;
out:
    endpoints_free(adv_all, n_adv_all);
    return rc;
}

/* ------------------------------------------------------------------ */
/* DescribeConfigs                                                     */

size_t config_describe_count(const struct samsa_config *c)
{
    return config_defs_count + c->store->n_extras;
}

static void entry_init(struct config_entry *e)
{
    memset(e, 0, sizeof *e);
}

bool config_describe(const struct samsa_config *c, size_t i, bool cluster_default,
                     struct config_entry *e)
{
    entry_init(e);
    if (i >= config_defs_count) {
        /* Stored extras are Kafka's "custom" configs: no type known, hence
         * reported as sensitive without a value. */
        size_t k = i - config_defs_count;
        if (k >= c->store->n_extras || cluster_default)
            return false;
        const struct extra *x = &c->store->extras[k];
        e->name = x->key;
        e->type = CONFIG_TYPE_UNKNOWN;
        e->read_only = true;
        e->sensitive = true;
        if (x->dyn)
            e->synonyms[e->n_synonyms++] = (struct config_synonym){x->key, NULL, CONFIG_SOURCE_DYNAMIC_BROKER};
        if (x->value)
            e->synonyms[e->n_synonyms++] = (struct config_synonym){x->key, NULL, CONFIG_SOURCE_STATIC_BROKER};
        e->source = e->synonyms[0].source;
        /* a listener's ssl.* key has its table key's type and may change
         * at run time (KIP-226) */
        const struct config_def *d = listener_def(x->key);
        if (d) {
            e->type = d->type;
            e->read_only = d->mode == CONFIG_MODE_READ_ONLY;
            e->sensitive = (d->flags & CONFIG_F_SENSITIVE) || d->type == CONFIG_TYPE_PASSWORD;
            if (!e->sensitive) {
                e->value = x->dyn ? x->dyn : x->value;
                for (size_t j = 0; j < e->n_synonyms; j++)
                    e->synonyms[j].value = e->synonyms[j].source == CONFIG_SOURCE_DYNAMIC_BROKER ? x->dyn : x->value;
            }
        }
        return true;
    }
    const struct config_def *d = &config_defs[i];
    if (cluster_default && !*slot(c, i, L_DYN_DEFAULT))
        return false;
    e->name = d->name;
    e->type = d->type;
    e->read_only = d->mode == CONFIG_MODE_READ_ONLY;
    e->sensitive = (d->flags & CONFIG_F_SENSITIVE) || d->type == CONFIG_TYPE_PASSWORD;
    e->doc = d->doc;
    const char *v = cluster_default ? *slot(c, i, L_DYN_DEFAULT) : eff_i(c, i, NULL);
    e->value = e->sensitive ? NULL : v;

    const char *const *names;
    size_t nn = broker_synonyms(d->name, &names);
    const char *self[1] = {d->name};
    if (!nn) {
        names = self;
        nn = 1;
    }
    config_append_synonyms(c, names, nn, e);
    /* As Kafka: drop synonyms ranked above the key itself, and at the
     * cluster default keep only dynamic defaults. */
    size_t first = 0;
    while (first < e->n_synonyms && strcmp(e->synonyms[first].name, d->name))
        first++;
    size_t o = 0;
    for (size_t k = first; k < e->n_synonyms; k++) {
        if (cluster_default && e->synonyms[k].source != CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER)
            continue;
        e->synonyms[o++] = e->synonyms[k];
    }
    e->n_synonyms = o;
    e->source = o ? e->synonyms[0].source : CONFIG_SOURCE_DEFAULT;
    return true;
}

bool config_describe_key(const struct samsa_config *c, const char *key, bool cluster_default,
                         struct config_entry *e)
{
    size_t i = def_index(key);
    if (i == NO_INDEX) {
        for (size_t k = 0; k < c->store->n_extras; k++)
            if (!strcmp(c->store->extras[k].key, key))
                return config_describe(c, config_defs_count + k, cluster_default, e);
        return false;
    }
    return config_describe(c, i, cluster_default, e);
}

/* ------------------------------------------------------------------ */
/* Dynamic broker configs                                              */

static void set_list_add(struct buf *b, const char *name)
{
    if (b->len)
        buf_append(b, ", ", 2);
    buf_append(b, name, strlen(name));
}

static void set_text(struct buf *b, const char *prefix, char *err, size_t n)
{
    buf_put_u8(b, 0);
    fmt(err, n, "%s: Set(%s)", prefix, (const char *)b->data);
}

/* The definition a change's key is checked against: its own, or for a
 * listener-prefixed key its table key's. NULL for an unknown key. */
static const struct config_def *alter_def(const char *name, bool *prefixed)
{
    const struct config_def *d = config_def_find(name);
    *prefixed = false;
    if (d)
        return d;
    d = listener_def(name);
    *prefixed = d != NULL;
    return d;
}

bool config_alter_names_listener_key(const struct config_alter *ch, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (!strncmp(ch[k].name, "listener.name.", 14))
            return true;
    return false;
}

int config_reconfig_check(const struct samsa_config *next, bool prepare, char *err, size_t errlen)
{
    return reconfig_check && reconfig_check(next, prepare, err, errlen) < 0 ? CONFIG_ERR_INVALID_CONFIG : 0;
}

/* config_alter_broker; with preview, the changed copy goes to *preview
 * (c untouched) instead of into c. */
static int alter_broker(struct samsa_config *c, bool cluster_default, const struct config_alter *ch, size_t n,
                        bool validate_only, struct samsa_config **preview, char *err, size_t errlen)
{
    int layer = cluster_default ? L_DYN_DEFAULT : L_DYN_BROKER;
    struct buf bad = BUF_INIT;
    int rc = CONFIG_ERR_INVALID_REQUEST;
    bool pfx;

    for (size_t k = 0; k < n; k++)
        if (!alter_def(ch[k].name, &pfx)) {
            fmt(err, errlen, "Unknown broker config name: %s", ch[k].name);
            return CONFIG_ERR_INVALID_REQUEST;
        }
    /* Kafka's order of checks: non-dynamic keys, security keys without a
     * listener prefix, value types, then per-broker keys at the cluster
     * default. A listener-prefixed key follows its table key's mode. */
    for (size_t k = 0; k < n; k++)
        if (alter_def(ch[k].name, &pfx)->mode == CONFIG_MODE_READ_ONLY)
            set_list_add(&bad, ch[k].name);
    if (bad.len) {
        set_text(&bad, "Cannot update these configs dynamically", err, errlen);
        goto out;
    }
    for (size_t k = 0; k < n; k++)
        if ((alter_def(ch[k].name, &pfx)->flags & CONFIG_F_LISTENER_ONLY) && !pfx)
            set_list_add(&bad, ch[k].name);
    if (bad.len) {
        set_text(&bad, "These security configs can be dynamically updated only per-listener "
                       "using the listener prefix", err, errlen);
        goto out;
    }
    for (size_t k = 0; k < n; k++) {
        const struct config_def *d = alter_def(ch[k].name, &pfx);
        if ((ch[k].op == CONFIG_OP_APPEND || ch[k].op == CONFIG_OP_SUBTRACT) &&
            d->type != CONFIG_TYPE_LIST) {
            fmt(err, errlen, "Config value %s is not allowed for config key: %s",
                ch[k].op == CONFIG_OP_APPEND ? "append" : "subtract", ch[k].name);
            rc = CONFIG_ERR_INVALID_CONFIG;
            goto out;
        }
        if ((unsigned)ch[k].op > CONFIG_OP_SUBTRACT) {
            fmt(err, errlen, "Unknown config operation %d for config key: %s", (int)ch[k].op,
                ch[k].name);
            goto out;
        }
        if (ch[k].op != CONFIG_OP_DELETE && !ch[k].value) {
            fmt(err, errlen, "Null value not supported for : %s", ch[k].name);
            goto out;
        }
    }
    if (cluster_default) {
        /* listener ssl.* keys are per-broker (Kafka's perBrokerConfigs) */
        for (size_t k = 0; k < n; k++)
            if (alter_def(ch[k].name, &pfx)->mode == CONFIG_MODE_PER_BROKER || pfx)
                set_list_add(&bad, ch[k].name);
        if (bad.len) {
            set_text(&bad, "Cannot update these configs at default cluster level, broker id must "
                           "be specified", err, errlen);
            goto out;
        }
    }

    /* Apply to a copy so that a failure anywhere leaves c untouched. */
    struct samsa_config *t = config_dup(c);
    for (size_t k = 0; k < n; k++) {
        const struct config_def *d = alter_def(ch[k].name, &pfx);
        size_t i = pfx ? NO_INDEX : def_index(ch[k].name);
        if (ch[k].op == CONFIG_OP_DELETE) {
            if (pfx) {
                extra_put_layer(t->store, ch[k].name, NULL, true);
            } else {
                free(*slot(t, i, layer));
                *slot(t, i, layer) = NULL;
            }
            continue;
        }
        char *val;
        if (ch[k].op == CONFIG_OP_SET) {
            val = xstrdup(ch[k].value);
        } else {
            /* Kafka appends to / subtracts from the effective value. */
            refresh(t);
            val = config_list_apply(pfx ? config_get_any(t, ch[k].name) : eff_i(t, i, NULL), ch[k].op,
                                    ch[k].value);
        }
        char why[256] = "", *norm;
        if (config_def_check(d, val, &norm, why, sizeof why) < 0) {
            fmt(err, errlen, "Invalid value %s for configuration %s: %s", val, ch[k].name, why);
            free(val);
            config_free(t);
            goto out;
        }
        free(val);
        if (pfx) {
            extra_put_layer(t->store, ch[k].name, norm, true);
            free(norm);
        } else {
            free(*slot(t, i, layer));
            *slot(t, i, layer) = norm;
        }
    }
    refresh(t);
    if (config_validate(t, err, errlen) < 0) {
        config_free(t);
        goto out;
    }
    /* (a new key or trust store is loaded and checked by the caller,
     * through config_reconfig_check, off the network worker: it reads
     * files) */
    if (preview) {
        *preview = t;
        t = NULL;
    } else if (!validate_only) {
        for (size_t k = 0; k < n; k++)
            if (ch[k].op != CONFIG_OP_DELETE &&
                (alter_def(ch[k].name, &pfx)->flags & CONFIG_F_NO_EFFECT))
                warn_no_effect(ch[k].name);
        struct samsa_config tmp = *c;
        *c = *t;
        *t = tmp;
    }
    config_free(t);
    rc = CONFIG_ERR_NONE;
out:
    buf_free(&bad);
    return rc;
}

int config_alter_broker(struct samsa_config *c, bool cluster_default, const struct config_alter *ch, size_t n,
                        bool validate_only, char *err, size_t errlen)
{
    return alter_broker(c, cluster_default, ch, n, validate_only, NULL, err, errlen);
}

int config_alter_broker_preview(struct samsa_config *c, bool cluster_default, const struct config_alter *ch,
                                size_t n, struct samsa_config **next, char *err, size_t errlen)
{
    *next = NULL;
    return alter_broker(c, cluster_default, ch, n, true, next, err, errlen);
}

int config_set_dynamic(struct samsa_config *c, bool cluster_default, const char *key,
                       const char *value, char *err, size_t errlen)
{
    size_t i = def_index(key);
    if (i == NO_INDEX) {
        const struct config_def *d = listener_def(key);
        if (!d || cluster_default) {
            fmt(err, errlen, "unknown config '%s'", key);
            return -1;
        }
        char *norm = NULL;
        if (value) {
            char why[256] = "";
            if (config_def_check(d, value, &norm, why, sizeof why) < 0) {
                fmt(err, errlen, "config '%s' value '%s': %s", key, value, why);
                return -1;
            }
        }
        extra_put_layer(c->store, key, norm, true);
        free(norm);
        refresh(c);
        return 0;
    }
    if (config_defs[i].flags & CONFIG_F_SERVER_SET) {
        /* a stored value would hide the one the server computed */
        fmt(err, errlen, "config '%s' is read-only, set by the server", key);
        return -1;
    }
    char **sl = slot(c, i, cluster_default ? L_DYN_DEFAULT : L_DYN_BROKER);
    char *norm = NULL;
    if (value) {
        char why[256] = "";
        if (config_def_check(&config_defs[i], value, &norm, why, sizeof why) < 0) {
            fmt(err, errlen, "config '%s' value '%s': %s", key, value, why);
            return -1;
        }
    }
    free(*sl);
    *sl = norm;
    refresh(c);
    return 0;
}

void config_set_server_value(struct samsa_config *c, const char *key, const char *value)
{
    size_t i = must_index(key);
    if (!(config_defs[i].flags & CONFIG_F_SERVER_SET)) {
        slog_error("BUG: config '%s' is not a server-set key", key);
        abort();
    }
    /* The default layer: the value comes from no file and no AlterConfigs,
     * so DescribeConfigs reports it as Kafka reports such a value (source
     * DEFAULT_CONFIG, see config.h), and config_dup carries it along to
     * every config a dynamic change publishes. */
    char **sl = slot(c, i, L_DEFAULT);
    free(*sl);
    *sl = xstrdup(value ? value : "");
    refresh(c);
}
