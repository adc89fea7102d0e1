/* KRaft: the Raft protocol that replicates __cluster_metadata-0 among the
 * controllers (KIP-595, pre-vote from KIP-996, static voters from
 * controller.quorum.voters), as a deterministic state machine.
 *
 * A node does no I/O of its own, keeps no clock and starts no thread. It
 * is driven by
 *   - raft_tick(now): time passes (election, fetch and request timers);
 *   - raft_receive(from, msg): a decoded Vote / BeginQuorumEpoch /
 *     EndQuorumEpoch / Fetch / FetchSnapshot request or response, the
 *     generated structs of core/proto/gen as the network layer decodes
 *     them;
 *   - local events: raft_propose (leader appends), raft_flushed (the log
 *     is durable up to an offset), raft_resign, raft_snapshot_done;
 * and it acts through
 *   - the log interface (raft_log.h): append, truncate, read, snapshots;
 *   - outputs, handed to the host's callback synchronously, in order:
 *     send a message, persist the quorum state, flush the log, the high
 *     watermark advanced (apply), a fetched snapshot replaced the log,
 *     the role changed.
 *
 * Output contract: the callback runs inside the raft_* call that caused
 * it, must not call back into the node, and must finish the effect before
 * returning where ordering matters: RAFT_OUT_PERSIST must be durable when
 * the callback returns (a vote may be announced by the very next output).
 * Everything an output points to is valid only during the callback; the
 * host encodes or copies what it keeps.
 *
 * Time: raft_tick sets the node's clock; the other entry points act at
 * the time of the latest tick. Ask raft_next_deadline when to tick next.
 *
 * Durability model (as Kafka's): a follower reports a fetch offset only
 * once its log is flushed up to it, and the leader counts its own log up
 * to what is flushed, so the high watermark only covers records durable
 * on a majority. A restarted former leader comes back Resigned, so an
 * (offset, epoch) pair never names two different records even when the
 * unflushed tail was lost.
 *
 * Not thread-safe: one owner (the Raft loop) makes every call. */
#ifndef SAMSA_RAFT_RAFT_H
#define SAMSA_RAFT_RAFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/gen/begin_quorum_epoch_request.h"
#include "proto/gen/begin_quorum_epoch_response.h"
#include "proto/gen/end_quorum_epoch_request.h"
#include "proto/gen/end_quorum_epoch_response.h"
#include "proto/gen/fetch_request.h"
#include "proto/gen/fetch_response.h"
#include "proto/gen/fetch_snapshot_request.h"
#include "proto/gen/fetch_snapshot_response.h"
#include "proto/gen/quorum_state_data.h"
#include "proto/gen/vote_request.h"
#include "proto/gen/vote_response.h"
#include "raft/raft_log.h"

#define RAFT_METADATA_TOPIC "__cluster_metadata"
#define RAFT_METADATA_PARTITION 0
/* Kafka's Uuid.METADATA_TOPIC_ID ("AAAAAAAAAAAAAAAAAAAAAQ"). */
#define RAFT_METADATA_TOPIC_ID ((kuuid_t){{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}})

#define RAFT_MAX_VOTERS 16

/* Request versions the node sends (responses mirror the request's). */
#define RAFT_VOTE_VERSION 1
#define RAFT_BEGIN_EPOCH_VERSION 1
#define RAFT_END_EPOCH_VERSION 1
#define RAFT_FETCH_VERSION 17
#define RAFT_FETCH_SNAPSHOT_VERSION 1

enum raft_role {
    RAFT_UNATTACHED = 0, /* epoch known, leader not (maybe voted) */
    RAFT_PROSPECTIVE,    /* asking for pre-votes, epoch not bumped */
    RAFT_CANDIDATE,      /* asking for votes in a bumped epoch */
    RAFT_LEADER,
    RAFT_FOLLOWER,       /* fetching from a known leader (voters and observers) */
    RAFT_RESIGNED,       /* former leader of this epoch, steps down */
};

const char *raft_role_name(enum raft_role r);

enum raft_msg_type {
    RAFT_MSG_VOTE_REQ = 1,
    RAFT_MSG_VOTE_RESP,
    RAFT_MSG_BEGIN_EPOCH_REQ,
    RAFT_MSG_BEGIN_EPOCH_RESP,
    RAFT_MSG_END_EPOCH_REQ,
    RAFT_MSG_END_EPOCH_RESP,
    RAFT_MSG_FETCH_REQ,
    RAFT_MSG_FETCH_RESP,
    RAFT_MSG_FETCH_SNAPSHOT_REQ,
    RAFT_MSG_FETCH_SNAPSHOT_RESP,
};

const char *raft_msg_type_name(enum raft_msg_type t);
static inline bool raft_msg_is_request(enum raft_msg_type t) { return (t & 1) == 1; }

/* One message with its envelope. correlation_id: a request's id, echoed
 * by its response (the Kafka request header's); the node matches
 * responses to its outstanding requests by (from, correlation_id, type).
 * version: the API version (a response has its request's).
 * pre_vote: KIP-996's VoteRequest PreVote flag. Kafka carries it in
 * VoteRequest v2, which the generated codecs (from the October 2024
 * definitions) do not have yet, so it travels beside the struct; the
 * transport must map it to the wire (or refuse pre-votes to peers that
 * lack v2) at integration. */
struct raft_msg {
    enum raft_msg_type type;
    int16_t version;
    int32_t correlation_id;
    bool pre_vote;
    union {
        const vote_request_t *vote_req;
        const vote_response_t *vote_resp;
        const begin_quorum_epoch_request_t *begin_req;
        const begin_quorum_epoch_response_t *begin_resp;
        const end_quorum_epoch_request_t *end_req;
        const end_quorum_epoch_response_t *end_resp;
        const fetch_request_t *fetch_req;
        const fetch_response_t *fetch_resp;
        const fetch_snapshot_request_t *fsnap_req;
        const fetch_snapshot_response_t *fsnap_resp;
        const void *any;
    } u;
};

enum raft_out_type {
    RAFT_OUT_SEND = 1,      /* send msg to node `to` */
    RAFT_OUT_PERSIST,       /* write the quorum state durably, now */
    RAFT_OUT_FLUSH,         /* make the log durable up to end_offset; then raft_flushed() */
    RAFT_OUT_COMMIT,        /* high watermark advanced: records below it are committed */
    RAFT_OUT_LOAD_SNAPSHOT, /* the log was replaced by this snapshot: reload from it */
    RAFT_OUT_ROLE,          /* role / epoch / leader changed */
};

struct raft_output {
    enum raft_out_type type;
    union {
        struct {
            int32_t to;
            const struct raft_msg *msg;
        } send;
        const quorum_state_data_t *persist; /* version 1 fields filled */
        struct {
            int64_t end_offset;
        } flush;
        struct {
            int64_t high_watermark;
        } commit;
        struct raft_snapshot_id load_snapshot;
        struct {
            enum raft_role role;
            int32_t epoch;
            int32_t leader_id; /* -1 unknown */
        } role;
    } u;
};

typedef void (*raft_output_fn)(void *arg, const struct raft_output *out);

struct raft_config {
    int32_t node_id;                  /* node.id */
    const int32_t *voters;            /* controller.quorum.voters ids (copied) */
    int32_t nvoters;                  /* 1..RAFT_MAX_VOTERS; this node may be absent (observer) */
    const char *cluster_id;           /* checked on requests when both sides have one; NULL: none */
    int32_t election_timeout_ms;      /* controller.quorum.election.timeout.ms (1000) */
    int32_t fetch_timeout_ms;         /* controller.quorum.fetch.timeout.ms (2000) */
    int32_t election_backoff_max_ms;  /* controller.quorum.election.backoff.max.ms (1000) */
    int32_t request_timeout_ms;       /* controller.quorum.request.timeout.ms (2000) */
    int32_t retry_backoff_ms;         /* controller.quorum.retry.backoff.ms (20) */
    int32_t fetch_max_wait_ms;        /* how long the leader parks an empty Fetch (500) */
    int32_t fetch_max_bytes;          /* per Fetch / FetchSnapshot response (8 MiB) */
    uint64_t random_seed;             /* election timeouts and backoffs */
    struct raft_log log;              /* borrowed */
    raft_output_fn output;
    void *output_arg;
};

/* Kafka's defaults for everything but node_id, voters, log and output. */
void raft_config_defaults(struct raft_config *cfg);

struct raft;

/* Creates a node over cfg->log, starting from the persisted quorum state
 * (NULL: never persisted, i.e. a freshly formatted node). Reads the log
 * (scan) to rebuild the epoch cache; emits nothing: the first raft_tick
 * does. Returns 0, or KERR_INVALID_CONFIG for a bad config (voter count,
 * duplicate or negative ids, timeouts <= 0, request timeout not above the
 * fetch wait), or the log's error. *out is owned by the caller:
 * raft_destroy. persisted is read during the call only. */
int raft_create(const struct raft_config *cfg, const quorum_state_data_t *persisted, struct raft **out);
void raft_destroy(struct raft *r);

void raft_tick(struct raft *r, int64_t now_ms);
/* The time at which raft_tick must be called next (it may be called
 * earlier; a message or local event can move it). */
int64_t raft_next_deadline(const struct raft *r);

/* Handles one message from node `from`. msg and everything it points to
 * belong to the caller and are only read during the call. Malformed input
 * (wrong topic/partition, empty arrays, negative ids or offsets, records
 * that are not whole batches) is answered with an error or ignored, never
 * trusted. */
void raft_receive(struct raft *r, int32_t from, const struct raft_msg *msg);

#define RAFT_ERR_NOT_LEADER (-1) /* not the leader of that epoch (or resigning) */
#define RAFT_ERR_INVALID (-2)    /* empty or malformed input */
#define RAFT_ERR_LOG (-3)        /* the log refused the append */

/* Leader only: appends one batch holding one record per value (null keys)
 * stamped with the current epoch, at the log end. epoch must be the
 * caller's view of the leader epoch (as Kafka's scheduleAppend), so a
 * controller never appends records decided in an older epoch. Returns the
 * batch's base offset, or a RAFT_ERR_* code. values are copied. */
int64_t raft_propose(struct raft *r, int32_t epoch, const kbytes_t *values, int32_t n, int64_t timestamp_ms);
/* The same for len bytes of whole, already built v2 batches (e.g. from
 * rb_builder): baseOffset and partitionLeaderEpoch are stamped into the
 * caller's memory, then the bytes are copied into the log. */
int64_t raft_propose_batches(struct raft *r, int32_t epoch, uint8_t *batches, size_t len);

/* The log is durable up to end_offset (a RAFT_OUT_FLUSH completed). */
void raft_flushed(struct raft *r, int64_t end_offset);

/* Graceful resignation of the leader of epoch (shutdown): it stops
 * accepting proposals and tells the voters with EndQuorumEpoch, preferring
 * the most caught-up ones. RAFT_ERR_NOT_LEADER otherwise. */
int raft_resign(struct raft *r, int32_t epoch);

/* The snapshot id for a snapshot of the state up to end_offset (exclusive),
 * which must be committed (<= high watermark) and inside the log.
 * 0, or RAFT_ERR_INVALID. */
int raft_snapshot_id_at(const struct raft *r, int64_t end_offset, struct raft_snapshot_id *out);
/* The host wrote and finished snapshot id through the log interface: the
 * node drops the log prefix below it (followers that are behind then get
 * the snapshot through FetchSnapshot). 0, RAFT_ERR_INVALID, RAFT_ERR_LOG. */
int raft_snapshot_done(struct raft *r, const struct raft_snapshot_id *id);

/* ---- state, for the host, DescribeQuorum and tests ---- */
enum raft_role raft_role(const struct raft *r);
int32_t raft_epoch(const struct raft *r);
int32_t raft_leader_id(const struct raft *r);
int32_t raft_voted_id(const struct raft *r);
int64_t raft_high_watermark(const struct raft *r); /* -1 unknown */
bool raft_is_voter(const struct raft *r);
int32_t raft_node_id(const struct raft *r);

struct raft_replica_info {
    int32_t replica_id;
    int64_t log_end_offset;       /* -1 unknown */
    int64_t last_fetch_ms;        /* -1 never */
    int64_t last_caught_up_ms;    /* -1 never */
};

/* What DescribeQuorum reports. voters/observers: caller arrays of
 * max_voters / max_observers entries; counts set to what is filled. Only
 * the leader knows replica progress; elsewhere the arrays are empty. */
struct raft_quorum_info {
    int32_t leader_id;
    int32_t leader_epoch;
    int64_t high_watermark;
    struct raft_replica_info *voters;
    int32_t nvoters, max_voters;
    struct raft_replica_info *observers;
    int32_t nobservers, max_observers;
};
void raft_describe(const struct raft *r, struct raft_quorum_info *out);

struct raft_stats {
    uint64_t elections;          /* candidacies started */
    uint64_t leaderships;        /* times this node became leader */
    uint64_t truncations;        /* divergence truncations */
    uint64_t snapshots_fetched;  /* complete snapshots received */
    uint64_t protocol_errors;    /* malformed or inconsistent input ignored */
    uint64_t invariant_violations; /* states Raft says cannot happen */
    uint64_t log_errors;         /* the log refused a mutation */
};
const struct raft_stats *raft_get_stats(const struct raft *r);

/* Debug trace of transitions and messages (the simulation's replay). */
typedef void (*raft_trace_fn)(void *arg, const struct raft *r, const char *line);
void raft_set_trace(struct raft *r, raft_trace_fn fn, void *arg);

#endif
