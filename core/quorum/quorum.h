/* The metadata quorum on a real loop: a KRaft node (raft/raft.h) driven
 * by its own thread and libev loop, with the metadata log on disk
 * (rlog.h), the quorum state file (qstate.h), a flusher thread, and the
 * transport:
 *   - outbound: one kclient per other voter (controller.quorum.voters),
 *     Kafka request headers, correlation ids matched by kclient; a lost
 *     connection or timeout comes back to the node as an error response
 *     (so it backs off and retries at once rather than waiting out its
 *     request timeout);
 *   - inbound: requests that reached a worker on a controller listener
 *     are handed over as jobs (quorum_submit); the node's answer is
 *     encoded on the loop into the job, and the worker, woken through
 *     cfg.wake, writes it. A job whose request died meanwhile is just
 *     dropped when the answer comes.
 *
 * Pre-vote on the wire: KIP-996's VoteRequest v2 adds PreVote (bool)
 * after LastOffset. The generated codecs stop at v1, and v2 is v1 plus
 * that one byte, so the transport always sends Vote v2 (the v1 body with
 * the byte spliced in; VoteResponse v2 is v1's layout) and the inbound
 * side strips it again. A peer that does not serve Vote v2 therefore
 * gets no votes at all from us: pre-votes are never downgraded to real
 * votes (that would bump epochs and disrupt a healthy leader, the very
 * thing pre-vote prevents). samsa controllers all speak v2.
 *
 * Threads: quorum_open/start/stop/close on the owner's thread; the host
 * callbacks and every quorum_loop_* function on the loop thread;
 * quorum_submit, quorum_post and quorum_wake from any thread. */
#ifndef SAMSA_QUORUM_QUORUM_H
#define SAMSA_QUORUM_QUORUM_H

#include <ev.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/kcodec.h"
#include "raft/raft.h"

struct qin;
struct quorum;
struct rlog;
struct config_voter;
struct kclient_security;

/* What the owner (the controller) hears, on the loop thread. None may
 * call into the Raft node (raft.h's output contract): work that needs
 * the node goes into `idle`, which runs after every event the loop
 * handles (outputs included). */
struct quorum_host {
    void *arg;
    void (*commit)(void *arg, int64_t high_watermark);
    void (*load_snapshot)(void *arg, const struct raft_snapshot_id *id);
    /* log_end: the log end offset when the role changed (for a new
     * leader, where its epoch starts). */
    void (*role)(void *arg, enum raft_role role, int32_t epoch, int32_t leader_id, int64_t log_end);
    void (*idle)(void *arg);
};

struct quorum_config {
    int32_t node_id;
    const char *cluster_id;            /* NULL or "": none */
    const struct config_voter *voters; /* controller.quorum.voters (read during open) */
    size_t nvoters;
    const char *dir;                   /* the __cluster_metadata-0 directory */
    int64_t segment_bytes;             /* metadata.log.segment.bytes; <= 0 default */
    int32_t election_timeout_ms, fetch_timeout_ms, election_backoff_max_ms;
    int32_t request_timeout_ms, retry_backoff_ms;
    struct quorum_host host;
    const struct kclient_security *security; /* towards the voters; NULL: PLAINTEXT */
    /* Any thread: inbound job j is done (the owner wakes the request
     * parked on it; j is only an identity here, it may be freed). */
    void (*wake)(void *arg, const struct qin *j);
    void *wake_arg;
};

/* Opens the log and the quorum state and creates the node (nothing
 * runs yet). Returns 0 with *out, or -1 with one line in err. */
int quorum_open(const struct quorum_config *cfg, struct quorum **out, char *err, size_t errlen);
/* Starts the loop thread. */
void quorum_start(struct quorum *q);
/* Stops the loop thread: a leader first resigns (EndQuorumEpoch to the
 * voters, given up to grace_ms to go out). Idempotent. */
void quorum_stop(struct quorum *q, int grace_ms);
/* Frees everything (after quorum_stop, or without start). */
void quorum_close(struct quorum *q, bool clean);

/* ---- any thread ---- */
/* Runs fn(arg) on the loop thread soon (in order of posting). */
void quorum_post(struct quorum *q, void (*fn)(void *arg), void *arg);
/* Makes the loop run host.idle soon. */
void quorum_wake(struct quorum *q);
bool quorum_on_loop(const struct quorum *q);
/* The role, epoch and leader last reported (atomic snapshots). */
int32_t quorum_leader_id(const struct quorum *q);
int32_t quorum_epoch(const struct quorum *q);
bool quorum_is_voter(const struct quorum *q);
/* host:port of a voter's controller listener; false when id is none. */
bool quorum_voter_address(const struct quorum *q, int32_t id, const char **host, uint16_t *port);
int32_t quorum_node_id(const struct quorum *q);

/* ---- inbound requests ---- */
enum qin_kind {
    QIN_RAFT = 1,   /* a Raft request for the node */
    QIN_DESCRIBE,   /* DescribeQuorum */
};

/* One inbound request, shared by the worker that received it and the
 * loop: two references at submit, each side drops its own with
 * qin_release. The loop fills resp and then sets done; the worker reads
 * resp only after it sees done. */
struct qin {
    atomic_int refs;
    atomic_bool done;
    enum qin_kind kind;
    enum raft_msg_type type;
    int16_t version;        /* the body's (decode) version */
    bool pre_vote;
    int32_t from;           /* the sender's node id (from the body) */
    uint8_t *body;          /* owned copy of the request body */
    size_t len;
    struct kwriter resp;    /* response body; may hold file ranges */
    int16_t error;          /* nonzero: no answer (close the connection) */
    /* loop-private */
    int32_t corr;
    int64_t submitted_ms;
    struct qin *next;
};

/* A job for body (copied). */
struct qin *qin_new(enum qin_kind kind, enum raft_msg_type type, int16_t version, bool pre_vote, int32_t from,
                    const uint8_t *body, size_t len);
void qin_release(struct qin *j);
/* Hands j to the loop (takes the loop's reference). */
void quorum_submit(struct quorum *q, struct qin *j);

/* ---- loop thread only ---- */
struct ev_loop *quorum_loop(struct quorum *q);
struct raft *quorum_raft(struct quorum *q);
struct rlog *quorum_rlog(struct quorum *q);
/* The node's DescribeQuorum answer, encoded at version into w. */
void quorum_describe(struct quorum *q, int16_t version, struct kwriter *w);

#endif
