/* KRaft state machine. See raft.h for the model; the comments here say
 * why each rule is what it is. Kafka's KafkaRaftClient / QuorumState /
 * LeaderState / FollowerState / CandidateState / ProspectiveState are the
 * reference for the protocol rules; the structure is our own. */
#include "raft/raft.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/gen/leader_change_message.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "raft/epoch_cache.h"
#include "util/arena.h"
#include "util/buf.h"

/* Kafka's RETRY_BACKOFF_BASE_MS for the candidate's binary exponential
 * election backoff. */
#define ELECTION_BACKOFF_BASE_MS 100
/* LeaderState.CHECK_QUORUM_TIMEOUT_FACTOR: a leader that has not heard
 * from a majority within 1.5 fetch timeouts resigns. */
#define CHECK_QUORUM_FACTOR_NUM 3
#define CHECK_QUORUM_FACTOR_DEN 2
#define MAX_OBSERVERS 64
#define MAX_PARKED (RAFT_MAX_VOTERS + MAX_OBSERVERS)

struct rconn {
    bool inflight;
    enum raft_msg_type type; /* request type in flight */
    int32_t corr;
    int64_t sent_ms;
    int64_t backoff_until;
};

struct rvoter {
    int32_t id;
    int8_t vote;             /* nominee: 0 unrecorded, 1 granted, -1 rejected */
    int64_t end_offset;      /* leader: replica's fetch offset, -1 unknown */
    int64_t last_fetch_ms;   /* leader: -1 never */
    int64_t last_caught_up_ms;
    bool fetched_in_window;  /* leader: check-quorum window */
    int64_t hw_told;         /* leader: high watermark it surely knows from us, -1 none */
    bool acked;              /* leader: BeginQuorumEpoch ack; resigned: EndQuorumEpoch ack */
    struct rconn conn;       /* our requests to this voter */
};

struct robserver {
    int32_t id;
    int64_t end_offset;
    int64_t last_fetch_ms;
    int64_t last_caught_up_ms;
    int64_t hw_told; /* as rvoter's */
};

/* A Fetch the leader holds until data arrives, the high watermark moves
 * or max_wait passes (Kafka's fetch purgatory): without it an idle
 * follower would spin on empty responses. */
struct rparked {
    bool used;
    int32_t from;
    int32_t corr;
    int16_t version;
    int32_t replica_id;
    int64_t fetch_offset;
    int32_t last_fetched_epoch;
    int32_t max_bytes;
    int64_t deadline;
};

struct raft {
    /* config */
    int32_t id;
    struct rvoter voters[RAFT_MAX_VOTERS];
    int32_t nvoters;
    bool is_voter;
    char *cluster_id; /* NULL: none */
    int32_t election_timeout_ms, fetch_timeout_ms, election_backoff_max_ms;
    int32_t request_timeout_ms, retry_backoff_ms, fetch_max_wait_ms, fetch_max_bytes;
    struct raft_log log;
    raft_output_fn output;
    void *output_arg;
    raft_trace_fn trace;
    void *trace_arg;
    uint64_t rng;

    int64_t now;
    bool started;

    /* election state (what QuorumStateData persists) */
    enum raft_role role;
    int32_t epoch;
    int32_t leader_id;
    int32_t voted_id;
    bool persisted_valid;
    int32_t p_epoch, p_leader, p_voted;

    int64_t hw;      /* -1 unknown; what the host was told is committed */
    bool hw_established; /* leader: committed an offset of its own epoch */
    int64_t flushed; /* log durable below this */

    /* timers */
    int64_t election_deadline; /* unattached (voter), prospective, candidate, resigned */
    int64_t fetch_deadline;    /* follower */
    bool backing_off;          /* candidate, after a rejected election */
    int64_t backoff_until;
    int32_t retries;           /* failed elections in a row */

    /* follower */
    bool has_fetched;          /* from the current leader (pre-vote rule) */
    bool fetching_snapshot;
    struct raft_snapshot_id snap_id;
    int64_t snap_pos;
    int64_t snap_size;

    /* leader */
    int64_t epoch_start_offset;
    int64_t check_quorum_deadline;
    int64_t begin_epoch_deadline;
    struct rparked parked[MAX_PARKED];
    struct robserver observers[MAX_OBSERVERS];
    int32_t nobservers;
    bool completing; /* guards re-entry while answering parked fetches */

    /* resigned */
    int32_t successors[RAFT_MAX_VOTERS];
    int32_t nsuccessors;

    struct raft_epoch_cache ec;
    struct arena ar;  /* scratch for outgoing messages, freed after each */
    struct buf tmp;   /* scratch for built batches */
    int32_t next_corr;
    struct raft_stats stats;
};

/* ------------------------------------------------------------------ */
/* small helpers                                                        */
/* ------------------------------------------------------------------ */

static const char *ROLE_NAMES[] = {"unattached", "prospective", "candidate", "leader", "follower", "resigned"};
const char *raft_role_name(enum raft_role r)
{
    return (unsigned)r < sizeof ROLE_NAMES / sizeof *ROLE_NAMES ? ROLE_NAMES[r] : "?";
}

const char *raft_msg_type_name(enum raft_msg_type t)
{
    switch (t) {
    case RAFT_MSG_VOTE_REQ: return "VoteReq";
    case RAFT_MSG_VOTE_RESP: return "VoteResp";
    case RAFT_MSG_BEGIN_EPOCH_REQ: return "BeginEpochReq";
    case RAFT_MSG_BEGIN_EPOCH_RESP: return "BeginEpochResp";
    case RAFT_MSG_END_EPOCH_REQ: return "EndEpochReq";
    case RAFT_MSG_END_EPOCH_RESP: return "EndEpochResp";
    case RAFT_MSG_FETCH_REQ: return "FetchReq";
    case RAFT_MSG_FETCH_RESP: return "FetchResp";
    case RAFT_MSG_FETCH_SNAPSHOT_REQ: return "FetchSnapshotReq";
    case RAFT_MSG_FETCH_SNAPSHOT_RESP: return "FetchSnapshotResp";
    }
    return "?";
}

__attribute__((format(printf, 2, 3))) static void trace(struct raft *r, const char *fmt, ...)
{
    if (!r->trace)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    r->trace(r->trace_arg, r, line);
}

/* xorshift64*: deterministic per seed, which the simulation relies on. */
static uint64_t rnd(struct raft *r)
{
    uint64_t x = r->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static int64_t rnd_below(struct raft *r, int64_t n) { return n <= 0 ? 0 : (int64_t)(rnd(r) % (uint64_t)n); }

/* Kafka: electionTimeoutMs + random(electionTimeoutMs), so that voters
 * whose timers started together do not all stand at once. */
static int64_t random_election_timeout(struct raft *r)
{
    return r->election_timeout_ms + rnd_below(r, r->election_timeout_ms);
}

/* How long a voter follows a leader it does not hear from before it
 * stands (Kafka's FollowerState fetch timer: fetch.timeout.ms), minus a
 * random tenth of it. The leader answers its followers' parked fetches
 * together whenever it appends, so their timers start in the same
 * millisecond and, with a fixed timeout, run out together: both
 * followers pre-vote at once, each grants the other (a prospective
 * grants pre-votes, KIP-996), both become candidates of the same epoch
 * and split the vote, and the dead leader's missing answer keeps either
 * from seeing a rejection by a majority, so the quorum waits out a whole
 * election timeout (1-2 s) before the next try. Kafka has the same
 * timers; samsa staggers them within the configured bound, so failure
 * detection never takes longer than fetch.timeout.ms. */
static int64_t follower_timeout(struct raft *r)
{
    return r->fetch_timeout_ms - (r->is_voter ? rnd_below(r, r->fetch_timeout_ms / 10) : 0);
}

static struct rvoter *find_voter(struct raft *r, int32_t id)
{
    for (int32_t i = 0; i < r->nvoters; i++)
        if (r->voters[i].id == id)
            return &r->voters[i];
    return NULL;
}

static int32_t majority(const struct raft *r) { return r->nvoters / 2 + 1; }
static bool only_voter(const struct raft *r) { return r->is_voter && r->nvoters == 1; }

static int64_t log_start(struct raft *r) { return r->log.ops->start_offset(r->log.ctx); }
static int64_t log_end(struct raft *r) { return r->log.ops->end_offset(r->log.ctx); }
static int32_t last_epoch(struct raft *r) { return rec_last_epoch(&r->ec); }

static void emit(struct raft *r, const struct raft_output *o) { r->output(r->output_arg, o); }

static void violation(struct raft *r, const char *what)
{
    r->stats.invariant_violations++;
    trace(r, "INVARIANT VIOLATION: %s", what);
}

static void protocol_error(struct raft *r, int32_t from, const char *what)
{
    r->stats.protocol_errors++;
    trace(r, "protocol error from %d: %s", (int)from, what);
}

static bool topic_is_metadata(kstr_t name) { return kstr_eqc(name, RAFT_METADATA_TOPIC); }

static bool cluster_ok(const struct raft *r, kstr_t cid)
{
    /* Kafka does not enforce a cluster id the request does not carry. */
    if (cid.len < 0 || !r->cluster_id)
        return true;
    return kstr_eqc(cid, r->cluster_id);
}

static kstr_t my_cluster_id(const struct raft *r) { return r->cluster_id ? KSTR(r->cluster_id) : KSTR_NULL; }

/* ------------------------------------------------------------------ */
/* outputs                                                             */
/* ------------------------------------------------------------------ */

static void send_msg(struct raft *r, int32_t to, enum raft_msg_type type, int16_t version, int32_t corr, bool pre_vote,
                     const void *body)
{
    struct raft_msg m = {.type = type, .version = version, .correlation_id = corr, .pre_vote = pre_vote};
    m.u.any = body;
    struct raft_output o = {.type = RAFT_OUT_SEND};
    o.u.send.to = to;
    o.u.send.msg = &m;
    trace(r, "send %s to %d corr=%d%s", raft_msg_type_name(type), (int)to, (int)corr, pre_vote ? " pre-vote" : "");
    emit(r, &o);
    arena_free(&r->ar);
}

static void persist(struct raft *r)
{
    if (r->persisted_valid && r->p_epoch == r->epoch && r->p_leader == r->leader_id && r->p_voted == r->voted_id)
        return;
    quorum_state_data_t q;
    quorum_state_data_init(&q);
    q.cluster_id = my_cluster_id(r);
    q.leader_id = r->leader_id;
    q.leader_epoch = r->epoch;
    q.voted_id = r->voted_id;
    struct raft_output o = {.type = RAFT_OUT_PERSIST};
    o.u.persist = &q;
    emit(r, &o);
    r->persisted_valid = true;
    r->p_epoch = r->epoch;
    r->p_leader = r->leader_id;
    r->p_voted = r->voted_id;
}

static void emit_role(struct raft *r)
{
    struct raft_output o = {.type = RAFT_OUT_ROLE};
    o.u.role.role = r->role;
    o.u.role.epoch = r->epoch;
    o.u.role.leader_id = r->leader_id;
    trace(r, "role %s epoch=%d leader=%d voted=%d", raft_role_name(r->role), (int)r->epoch, (int)r->leader_id,
          (int)r->voted_id);
    emit(r, &o);
}

static void emit_flush(struct raft *r)
{
    struct raft_output o = {.type = RAFT_OUT_FLUSH};
    o.u.flush.end_offset = log_end(r);
    emit(r, &o);
}

static void set_hw(struct raft *r, int64_t hw)
{
    if (hw <= r->hw)
        return;
    r->hw = hw;
    trace(r, "high watermark %" PRId64, hw);
    struct raft_output o = {.type = RAFT_OUT_COMMIT};
    o.u.commit.high_watermark = hw;
    emit(r, &o);
}

/* ------------------------------------------------------------------ */
/* connections: one outstanding request per voter (Kafka's             */
/* RequestManager), so a lost message costs a timeout, not a hang      */
/* ------------------------------------------------------------------ */

static void conns_reset(struct raft *r)
{
    /* Every state change forgets outstanding requests: a response to a
     * request sent in an older state must not be read as an answer in the
     * new one (a pre-vote grant counted as a vote, say). */
    for (int32_t i = 0; i < r->nvoters; i++) {
        r->voters[i].conn.inflight = false;
        r->voters[i].conn.backoff_until = 0;
    }
}

static bool conn_ready(struct raft *r, struct rvoter *v)
{
    return v->id != r->id && !v->conn.inflight && r->now >= v->conn.backoff_until;
}

static int32_t conn_send(struct raft *r, struct rvoter *v, enum raft_msg_type type)
{
    int32_t corr = r->next_corr++;
    if (r->next_corr < 0)
        r->next_corr = 1;
    v->conn.inflight = true;
    v->conn.type = type;
    v->conn.corr = corr;
    v->conn.sent_ms = r->now;
    return corr;
}

/* The voter whose outstanding request this response answers, or NULL (a
 * stale, duplicated or unsolicited response, which is dropped). */
static struct rvoter *conn_match(struct raft *r, int32_t from, const struct raft_msg *m)
{
    struct rvoter *v = find_voter(r, from);
    if (!v || v->id == r->id || !v->conn.inflight || v->conn.corr != m->correlation_id ||
        v->conn.type != m->type - 1)
        return NULL;
    v->conn.inflight = false;
    return v;
}

static void conn_failed(struct raft *r, struct rvoter *v) { v->conn.backoff_until = r->now + r->retry_backoff_ms; }

static bool any_inflight(struct raft *r)
{
    for (int32_t i = 0; i < r->nvoters; i++)
        if (r->voters[i].conn.inflight)
            return true;
    return false;
}

static void conns_expire(struct raft *r)
{
    for (int32_t i = 0; i < r->nvoters; i++) {
        struct rconn *c = &r->voters[i].conn;
        if (c->inflight && r->now - c->sent_ms >= r->request_timeout_ms) {
            c->inflight = false;
            c->backoff_until = r->now + r->retry_backoff_ms;
            trace(r, "request %d to %d timed out", (int)c->corr, (int)r->voters[i].id);
        }
    }
}

/* ------------------------------------------------------------------ */
/* state transitions                                                   */
/* ------------------------------------------------------------------ */

static void parked_fail_all(struct raft *r);
static void send_begin_epoch_all(struct raft *r);

static void reset_votes(struct raft *r)
{
    for (int32_t i = 0; i < r->nvoters; i++)
        r->voters[i].vote = r->voters[i].id == r->id ? 1 : 0;
}

static void leave_state(struct raft *r)
{
    bool was_leader = r->role == RAFT_LEADER;
    r->fetching_snapshot = false;
    r->backing_off = false;
    conns_reset(r);
    if (was_leader)
        r->nobservers = 0;
}

/* New epoch (or same epoch, vote added), leader unknown. A vote given in
 * this epoch is never dropped while the epoch stays: one vote per epoch is
 * what makes two leaders in one epoch impossible. */
static void to_unattached(struct raft *r, int32_t epoch, int32_t voted)
{
    bool was_leader = r->role == RAFT_LEADER;
    enum raft_role from = r->role;
    if (epoch == r->epoch && voted < 0)
        voted = r->voted_id;
    /* A higher epoch seen while waiting for an election keeps the running
     * timer (Kafka does the same), so that a stream of higher epochs cannot
     * postpone our own candidacy forever. */
    bool keep_timer = (from == RAFT_UNATTACHED || from == RAFT_CANDIDATE || from == RAFT_PROSPECTIVE) &&
                      !r->backing_off && r->election_deadline > r->now && voted == r->voted_id;
    leave_state(r);
    r->role = RAFT_UNATTACHED;
    r->epoch = epoch;
    r->leader_id = -1;
    r->voted_id = voted;
    if (!keep_timer)
        r->election_deadline = r->now + random_election_timeout(r);
    persist(r);
    emit_role(r);
    if (was_leader)
        parked_fail_all(r);
}

static void to_follower(struct raft *r, int32_t epoch, int32_t leader)
{
    bool was_leader = r->role == RAFT_LEADER;
    int32_t voted = epoch == r->epoch ? r->voted_id : -1;
    leave_state(r);
    r->role = RAFT_FOLLOWER;
    r->epoch = epoch;
    r->leader_id = leader;
    r->voted_id = voted;
    r->fetch_deadline = r->now + follower_timeout(r);
    r->has_fetched = false;
    r->retries = 0;
    persist(r);
    emit_role(r);
    if (was_leader)
        parked_fail_all(r);
}

static void to_leader(struct raft *r);

static void to_candidate(struct raft *r)
{
    leave_state(r);
    r->role = RAFT_CANDIDATE;
    r->epoch++;
    r->leader_id = -1;
    r->voted_id = r->id;
    r->retries++;
    r->election_deadline = r->now + random_election_timeout(r);
    reset_votes(r);
    r->stats.elections++;
    persist(r);
    emit_role(r);
    if (majority(r) <= 1)
        to_leader(r);
}

static void to_prospective(struct raft *r)
{
    if (!r->is_voter) {
        violation(r, "observer tried to stand for election");
        return;
    }
    /* The only voter needs nobody's opinion: straight to candidate (Kafka
     * allows that transition only then). */
    if (only_voter(r)) {
        to_candidate(r);
        return;
    }
    leave_state(r);
    r->role = RAFT_PROSPECTIVE;
    /* epoch, leader (if known from following) and vote stay: a pre-vote
     * changes nothing durable, which is its point (KIP-996). */
    r->election_deadline = r->now + random_election_timeout(r);
    reset_votes(r);
    emit_role(r);
}

static void to_resigned(struct raft *r)
{
    /* Preferred successors: the other voters by descending fetch offset,
     * so the most caught-up one times out first (EndQuorumEpoch). */
    r->nsuccessors = 0;
    for (int32_t i = 0; i < r->nvoters; i++)
        if (r->voters[i].id != r->id)
            r->successors[r->nsuccessors++] = r->voters[i].id;
    for (int32_t i = 1; i < r->nsuccessors; i++) {
        int32_t id = r->successors[i];
        int64_t off = find_voter(r, id)->end_offset;
        int32_t j = i;
        while (j > 0 && find_voter(r, r->successors[j - 1])->end_offset < off) {
            r->successors[j] = r->successors[j - 1];
            j--;
        }
        r->successors[j] = id;
    }
    bool was_leader = r->role == RAFT_LEADER;
    leave_state(r);
    r->role = RAFT_RESIGNED;
    for (int32_t i = 0; i < r->nvoters; i++)
        r->voters[i].acked = r->voters[i].id == r->id;
    r->election_deadline = r->now + random_election_timeout(r);
    /* Resigned is memory-only: on restart a former leader comes back
     * resigned anyway (the persisted leader id is still ourselves). */
    emit_role(r);
    if (was_leader)
        parked_fail_all(r);
}

/* A former leader of this epoch whose pre-vote failed: it cannot follow
 * itself and must not forget it led the epoch (others will keep naming it
 * as the leader), so it waits out another election timeout resigned. */
static void back_to_resigned(struct raft *r)
{
    leave_state(r);
    r->role = RAFT_RESIGNED;
    r->election_deadline = r->now + random_election_timeout(r);
    emit_role(r);
}

/* The control batch that opens every leader epoch. Committing it is what
 * lets the new leader expose older records: the high watermark only moves
 * past offsets of the current epoch. */
static int append_leader_change(struct raft *r)
{
    leader_change_message_t m;
    leader_change_message_init(&m);
    m.version = 0;
    m.leader_id = r->id;
    karr_alloc(&r->ar, m.voters, r->nvoters);
    int32_t ng = 0;
    for (int32_t i = 0; i < r->nvoters; i++)
        ng += r->voters[i].vote > 0;
    karr_alloc(&r->ar, m.granting_voters, ng);
    ng = 0;
    for (int32_t i = 0; i < r->nvoters; i++) {
        leader_change_message_voter_init(&m.voters.a[i]);
        m.voters.a[i].voter_id = r->voters[i].id;
        if (r->voters[i].vote > 0) {
            leader_change_message_voter_init(&m.granting_voters.a[ng]);
            m.granting_voters.a[ng++].voter_id = r->voters[i].id;
        }
    }
    struct kwriter w;
    kw_init(&w);
    leader_change_message_encode(&w, 0, &m);
    uint8_t key[RB_CONTROL_KEY_SIZE];
    rb_control_key_encode(key, RB_CONTROL_LEADER_CHANGE);

    buf_reset(&r->tmp);
    struct rb_batch_opts opts = RB_BATCH_OPTS_INIT;
    opts.control = true;
    opts.partition_leader_epoch = r->epoch;
    struct rb_builder b;
    rb_builder_begin(&b, &r->tmp, log_end(r), r->now, &opts);
    int rc = rb_builder_add(&b, r->now, (kbytes_t){key, RB_CONTROL_KEY_SIZE},
                            (kbytes_t){w.b.data, (int32_t)w.b.len}, NULL, 0);
    size_t len = 0;
    if (rc == 0)
        rc = rb_builder_finish(&b, &len);
    else
        rb_builder_abort(&b);
    kw_free(&w);
    arena_free(&r->ar);
    if (rc != 0)
        return rc;
    return r->log.ops->append(r->log.ctx, r->tmp.data + r->tmp.len - len, len);
}

static void maybe_update_leader_hw(struct raft *r);

static void to_leader(struct raft *r)
{
    leave_state(r);
    r->role = RAFT_LEADER;
    r->leader_id = r->id;
    r->retries = 0;
    r->epoch_start_offset = log_end(r);
    for (int32_t i = 0; i < r->nvoters; i++) {
        struct rvoter *v = &r->voters[i];
        v->end_offset = -1;
        v->last_fetch_ms = -1;
        v->last_caught_up_ms = -1;
        v->fetched_in_window = false;
        v->hw_told = -1;
        v->acked = v->id == r->id;
    }
    r->nobservers = 0;
    memset(r->parked, 0, sizeof r->parked);
    /* The leader does not publish the high watermark it knew as a
     * follower: followers hear one only once a majority has reached the
     * start of its epoch, so the value it exposes never goes backwards
     * (Kafka). Locally r->hw stays: the host has applied up to it. */
    r->hw_established = false;
    r->check_quorum_deadline = r->now + (int64_t)r->fetch_timeout_ms * CHECK_QUORUM_FACTOR_NUM / CHECK_QUORUM_FACTOR_DEN;
    r->begin_epoch_deadline = r->now;
    r->stats.leaderships++;
    persist(r);
    emit_role(r);
    if (!rec_assign(&r->ec, r->epoch, r->epoch_start_offset))
        violation(r, "epoch cache refused the new leader epoch");
    int rc = append_leader_change(r);
    if (rc != 0) {
        r->stats.log_errors++;
        trace(r, "cannot append the LeaderChange batch: %s", kerr_name((int16_t)rc));
    }
    emit_flush(r);
    send_begin_epoch_all(r);
    maybe_update_leader_hw(r);
}

/* Is (leader_id, epoch) from a message compatible with what we know?
 * Raft guarantees one leader per epoch; disagreement means a bug or a
 * corrupt peer, and we refuse to act on it. */
static bool consistent_leader(struct raft *r, int32_t epoch, int32_t leader_id)
{
    if (leader_id < 0 || epoch < r->epoch)
        return true;
    if (epoch > r->epoch)
        return leader_id != r->id; /* we never led an epoch we have not seen */
    return r->leader_id < 0 ? leader_id != r->id : r->leader_id == leader_id;
}

/* A request or response told us of (leader_id, epoch). */
static void maybe_transition(struct raft *r, int32_t leader_id, int32_t epoch)
{
    if (!consistent_leader(r, epoch, leader_id)) {
        violation(r, "message names another leader for our epoch");
        return;
    }
    if (leader_id >= 0 && (leader_id == r->id || !find_voter(r, leader_id)))
        leader_id = -1; /* not a voter we can reach: learn the epoch only */
    if (epoch > r->epoch) {
        if (leader_id >= 0)
            to_follower(r, epoch, leader_id);
        else
            to_unattached(r, epoch, -1);
    } else if (epoch == r->epoch && leader_id >= 0 && r->leader_id < 0) {
        to_follower(r, epoch, leader_id);
    }
}

enum common { COMMON_CONTINUE, COMMON_OK, COMMON_FAIL };

/* Kafka's maybeHandleCommonResponse: epochs and leader hints carried by
 * every response. */
static enum common handle_common_response(struct raft *r, int32_t from, int16_t error, int32_t leader_id, int32_t epoch)
{
    if (epoch < r->epoch || error == KERR_UNKNOWN_LEADER_EPOCH)
        return COMMON_OK; /* we are ahead: the answer is moot */
    if (epoch > r->epoch || error == KERR_FENCED_LEADER_EPOCH || error == KERR_NOT_LEADER_OR_FOLLOWER) {
        maybe_transition(r, leader_id, epoch);
        return COMMON_OK;
    }
    if (leader_id >= 0 && r->leader_id < 0 && leader_id != r->id) {
        maybe_transition(r, leader_id, epoch);
        return error == KERR_NONE ? COMMON_CONTINUE : COMMON_OK;
    }
    if (error == KERR_BROKER_NOT_AVAILABLE)
        return COMMON_FAIL;
    if (error == KERR_INVALID_VOTER_KEY)
        return COMMON_OK;
    if (error == KERR_INVALID_REQUEST || error == KERR_INCONSISTENT_VOTER_SET) {
        /* a bug or a voter-set mismatch between nodes: worth a counter */
        protocol_error(r, from, error == KERR_INVALID_REQUEST ? "peer says our request was invalid"
                                                              : "peer has another voter set");
        return COMMON_FAIL;
    }
    return COMMON_CONTINUE;
}

/* ------------------------------------------------------------------ */
/* requests we send                                                    */
/* ------------------------------------------------------------------ */

static void send_vote_request(struct raft *r, struct rvoter *v)
{
    bool pre = r->role == RAFT_PROSPECTIVE;
    vote_request_t *q = vote_request_new_array(&r->ar, 1);
    q->cluster_id = my_cluster_id(r);
    q->voter_id = v->id;
    q->topics.a = vote_request_topic_data_new_array(&r->ar, 1);
    q->topics.n = 1;
    q->topics.a[0].topic_name = KSTR(RAFT_METADATA_TOPIC);
    vote_request_partition_data_t *p = vote_request_partition_data_new_array(&r->ar, 1);
    q->topics.a[0].partitions.a = p;
    q->topics.a[0].partitions.n = 1;
    p->partition_index = RAFT_METADATA_PARTITION;
    /* A pre-vote carries the current epoch (not bumped): the prospective
     * has changed nothing yet. */
    p->candidate_epoch = r->epoch;
    p->candidate_id = r->id;
    p->last_offset_epoch = last_epoch(r);
    p->last_offset = log_end(r);
    int32_t corr = conn_send(r, v, RAFT_MSG_VOTE_REQ);
    send_msg(r, v->id, RAFT_MSG_VOTE_REQ, RAFT_VOTE_VERSION, corr, pre, q);
}

static void send_vote_requests(struct raft *r)
{
    int32_t rejected = 0;
    for (int32_t i = 0; i < r->nvoters; i++)
        rejected += r->voters[i].vote < 0;
    if (rejected >= majority(r))
        return; /* no chance left: stop asking */
    for (int32_t i = 0; i < r->nvoters; i++) {
        struct rvoter *v = &r->voters[i];
        if (v->vote == 0 && conn_ready(r, v))
            send_vote_request(r, v);
    }
}

static void send_begin_epoch(struct raft *r, struct rvoter *v)
{
    begin_quorum_epoch_request_t *q = begin_quorum_epoch_request_new_array(&r->ar, 1);
    q->cluster_id = my_cluster_id(r);
    q->voter_id = v->id;
    q->topics.a = begin_quorum_epoch_request_topic_data_new_array(&r->ar, 1);
    q->topics.n = 1;
    q->topics.a[0].topic_name = KSTR(RAFT_METADATA_TOPIC);
    begin_quorum_epoch_request_partition_data_t *p = begin_quorum_epoch_request_partition_data_new_array(&r->ar, 1);
    q->topics.a[0].partitions.a = p;
    q->topics.a[0].partitions.n = 1;
    p->partition_index = RAFT_METADATA_PARTITION;
    p->leader_id = r->id;
    p->leader_epoch = r->epoch;
    int32_t corr = conn_send(r, v, RAFT_MSG_BEGIN_EPOCH_REQ);
    send_msg(r, v->id, RAFT_MSG_BEGIN_EPOCH_REQ, RAFT_BEGIN_EPOCH_VERSION, corr, false, q);
}

/* Kafka (3.8+) repeats BeginQuorumEpoch to every voter each half fetch
 * timeout, so a voter that missed the first one finds the leader without
 * waiting for its own election timeout. */
static void send_begin_epoch_all(struct raft *r)
{
    for (int32_t i = 0; i < r->nvoters; i++)
        if (conn_ready(r, &r->voters[i]))
            send_begin_epoch(r, &r->voters[i]);
    r->begin_epoch_deadline = r->now + r->fetch_timeout_ms / 2;
}

static void send_end_epoch(struct raft *r, struct rvoter *v)
{
    end_quorum_epoch_request_t *q = end_quorum_epoch_request_new_array(&r->ar, 1);
    q->cluster_id = my_cluster_id(r);
    q->topics.a = end_quorum_epoch_request_topic_data_new_array(&r->ar, 1);
    q->topics.n = 1;
    q->topics.a[0].topic_name = KSTR(RAFT_METADATA_TOPIC);
    end_quorum_epoch_request_partition_data_t *p = end_quorum_epoch_request_partition_data_new_array(&r->ar, 1);
    q->topics.a[0].partitions.a = p;
    q->topics.a[0].partitions.n = 1;
    p->partition_index = RAFT_METADATA_PARTITION;
    p->leader_id = r->id;
    p->leader_epoch = r->epoch;
    /* v0 carries PreferredSuccessors, v1 PreferredCandidates: fill both,
     * the encoder writes the one of its version. */
    karr_alloc(&r->ar, p->preferred_successors, r->nsuccessors);
    p->preferred_candidates.a = end_quorum_epoch_request_replica_info_new_array(&r->ar, r->nsuccessors);
    p->preferred_candidates.n = r->nsuccessors;
    for (int32_t i = 0; i < r->nsuccessors; i++) {
        p->preferred_successors.a[i] = r->successors[i];
        p->preferred_candidates.a[i].candidate_id = r->successors[i];
    }
    int32_t corr = conn_send(r, v, RAFT_MSG_END_EPOCH_REQ);
    send_msg(r, v->id, RAFT_MSG_END_EPOCH_REQ, RAFT_END_EPOCH_VERSION, corr, false, q);
}

static void send_fetch(struct raft *r, struct rvoter *v)
{
    fetch_request_t *q = fetch_request_new_array(&r->ar, 1);
    q->cluster_id = my_cluster_id(r);
    q->replica_id = r->id; /* pre-v15 field; v15+ uses replica_state */
    q->replica_state.replica_id = r->id;
    q->max_wait_ms = r->fetch_max_wait_ms;
    q->min_bytes = 0;
    q->max_bytes = r->fetch_max_bytes;
    q->topics.a = fetch_request_fetch_topic_new_array(&r->ar, 1);
    q->topics.n = 1;
    q->topics.a[0].topic = KSTR(RAFT_METADATA_TOPIC);
    q->topics.a[0].topic_id = RAFT_METADATA_TOPIC_ID;
    fetch_request_fetch_partition_t *p = fetch_request_fetch_partition_new_array(&r->ar, 1);
    q->topics.a[0].partitions.a = p;
    q->topics.a[0].partitions.n = 1;
    p->partition = RAFT_METADATA_PARTITION;
    p->current_leader_epoch = r->epoch;
    p->fetch_offset = log_end(r);
    p->last_fetched_epoch = last_epoch(r);
    p->log_start_offset = log_start(r);
    p->partition_max_bytes = r->fetch_max_bytes;
    int32_t corr = conn_send(r, v, RAFT_MSG_FETCH_REQ);
    send_msg(r, v->id, RAFT_MSG_FETCH_REQ, RAFT_FETCH_VERSION, corr, false, q);
}

static void send_fetch_snapshot(struct raft *r, struct rvoter *v)
{
    fetch_snapshot_request_t *q = fetch_snapshot_request_new_array(&r->ar, 1);
    q->cluster_id = my_cluster_id(r);
    q->replica_id = r->id;
    q->max_bytes = r->fetch_max_bytes;
    q->topics.a = fetch_snapshot_request_topic_snapshot_new_array(&r->ar, 1);
    q->topics.n = 1;
    q->topics.a[0].name = KSTR(RAFT_METADATA_TOPIC);
    fetch_snapshot_request_partition_snapshot_t *p = fetch_snapshot_request_partition_snapshot_new_array(&r->ar, 1);
    q->topics.a[0].partitions.a = p;
    q->topics.a[0].partitions.n = 1;
    p->partition = RAFT_METADATA_PARTITION;
    p->current_leader_epoch = r->epoch;
    p->snapshot_id.end_offset = r->snap_id.end_offset;
    p->snapshot_id.epoch = r->snap_id.epoch;
    p->position = r->snap_pos;
    int32_t corr = conn_send(r, v, RAFT_MSG_FETCH_SNAPSHOT_REQ);
    send_msg(r, v->id, RAFT_MSG_FETCH_SNAPSHOT_REQ, RAFT_FETCH_SNAPSHOT_VERSION, corr, false, q);
}

/* Fetch to any ready voter (Kafka's bootstrap fetch): how an unattached
 * node or a follower whose leader went quiet finds the current leader —
 * whoever answers tells us its epoch and leader. */
static void send_fetch_any(struct raft *r, struct rvoter *skip)
{
    if (any_inflight(r))
        return;
    struct rvoter *ready[RAFT_MAX_VOTERS];
    int32_t n = 0;
    for (int32_t i = 0; i < r->nvoters; i++)
        if (&r->voters[i] != skip && conn_ready(r, &r->voters[i]))
            ready[n++] = &r->voters[i];
    if (n > 0)
        send_fetch(r, ready[rnd_below(r, n)]);
}

/* ------------------------------------------------------------------ */
/* per-role polling: timers and requests to (re)send                   */
/* ------------------------------------------------------------------ */

static void parked_expire(struct raft *r);
static void maybe_resign_check_quorum(struct raft *r);

static int32_t count_votes(struct raft *r, int8_t which)
{
    int32_t n = 0;
    for (int32_t i = 0; i < r->nvoters; i++)
        n += r->voters[i].vote == which;
    return n;
}

static void poll_state(struct raft *r)
{
    conns_expire(r);
    switch (r->role) {
    case RAFT_LEADER:
        maybe_resign_check_quorum(r);
        if (r->role != RAFT_LEADER)
            break;
        if (r->now >= r->begin_epoch_deadline)
            send_begin_epoch_all(r);
        parked_expire(r);
        break;
    case RAFT_RESIGNED:
        for (int32_t i = 0; i < r->nvoters; i++)
            if (!r->voters[i].acked && conn_ready(r, &r->voters[i]))
                send_end_epoch(r, &r->voters[i]);
        if (r->now >= r->election_deadline) {
            if (r->is_voter)
                to_prospective(r);
            else
                to_unattached(r, r->epoch + 1, -1);
        }
        break;
    case RAFT_UNATTACHED:
        if (r->is_voter && r->now >= r->election_deadline) {
            to_prospective(r);
            if (r->role == RAFT_PROSPECTIVE)
                send_vote_requests(r);
        } else {
            send_fetch_any(r, NULL);
        }
        break;
    case RAFT_PROSPECTIVE:
        if (count_votes(r, -1) >= majority(r) || r->now >= r->election_deadline) {
            /* Lost or timed out: go back to whom we knew. Not to candidate —
             * that would bump the epoch without a majority's blessing, which
             * is exactly what pre-vote exists to avoid. */
            if (r->leader_id == r->id)
                back_to_resigned(r);
            else if (r->leader_id >= 0)
                to_follower(r, r->epoch, r->leader_id);
            else
                to_unattached(r, r->epoch, -1);
        } else {
            send_vote_requests(r);
        }
        break;
    case RAFT_CANDIDATE:
        if (r->backing_off) {
            if (r->now >= r->backoff_until)
                to_prospective(r);
        } else if (r->now >= r->election_deadline) {
            to_prospective(r);
        } else {
            send_vote_requests(r);
        }
        if (r->role == RAFT_PROSPECTIVE)
            send_vote_requests(r);
        break;
    case RAFT_FOLLOWER: {
        if (r->is_voter && r->now >= r->fetch_deadline) {
            to_prospective(r);
            if (r->role == RAFT_PROSPECTIVE)
                send_vote_requests(r);
            break;
        }
        struct rvoter *ld = find_voter(r, r->leader_id);
        if (!ld) {
            violation(r, "following a leader that is not a voter");
            break;
        }
        /* A voter must not report a fetch offset it has not flushed: the
         * leader counts it towards the high watermark. */
        if (r->fetching_snapshot) {
            if (conn_ready(r, ld))
                send_fetch_snapshot(r, ld);
        } else if (r->flushed >= log_end(r)) {
            if (conn_ready(r, ld) && !any_inflight(r))
                send_fetch(r, ld);
            else if (!ld->conn.inflight && r->now < ld->conn.backoff_until)
                send_fetch_any(r, ld);
        }
        break;
    }
    }
}

static void start(struct raft *r)
{
    r->started = true;
    r->election_deadline = r->now + random_election_timeout(r);
    r->fetch_deadline = r->now + follower_timeout(r);
    persist(r);
    emit_role(r);
    /* The only voter elects itself at once, whatever it was (Kafka's
     * initialize): a single-node cluster is writable right after start. */
    if (only_voter(r) && r->role != RAFT_LEADER)
        to_candidate(r);
}

void raft_tick(struct raft *r, int64_t now_ms)
{
    if (now_ms > r->now)
        r->now = now_ms;
    if (!r->started)
        start(r);
    poll_state(r);
}

static void consider_min(int64_t *m, int64_t t)
{
    if (t < *m)
        *m = t;
}

int64_t raft_next_deadline(const struct raft *r)
{
    if (!r->started)
        return r->now;
    int64_t m = r->now + 3600 * 1000;
    for (int32_t i = 0; i < r->nvoters; i++) {
        const struct rconn *c = &r->voters[i].conn;
        if (c->inflight)
            consider_min(&m, c->sent_ms + r->request_timeout_ms);
        else if (c->backoff_until > r->now)
            consider_min(&m, c->backoff_until);
    }
    switch (r->role) {
    case RAFT_LEADER:
        consider_min(&m, r->begin_epoch_deadline);
        if (r->nvoters > 1)
            consider_min(&m, r->check_quorum_deadline);
        for (int32_t i = 0; i < MAX_PARKED; i++)
            if (r->parked[i].used)
                consider_min(&m, r->parked[i].deadline);
        break;
    case RAFT_CANDIDATE:
        consider_min(&m, r->backing_off ? r->backoff_until : r->election_deadline);
        break;
    case RAFT_UNATTACHED:
        if (r->is_voter)
            consider_min(&m, r->election_deadline);
        break;
    case RAFT_PROSPECTIVE:
    case RAFT_RESIGNED:
        consider_min(&m, r->election_deadline);
        break;
    case RAFT_FOLLOWER:
        if (r->is_voter)
            consider_min(&m, r->fetch_deadline);
        break;
    }
    return m < r->now ? r->now : m;
}

/* ------------------------------------------------------------------ */
/* Vote                                                                */
/* ------------------------------------------------------------------ */

/* Raft's up-to-date rule on (epoch, offset) of the last record. */
static bool log_up_to_date(struct raft *r, int32_t last_epoch_other, int64_t end_other)
{
    int32_t le = last_epoch(r);
    if (last_epoch_other != le)
        return last_epoch_other > le;
    return end_other >= log_end(r);
}

static bool can_grant(struct raft *r, int32_t cand, bool up_to_date, bool pre)
{
    switch (r->role) {
    case RAFT_UNATTACHED:
    case RAFT_PROSPECTIVE:
        if (pre)
            return up_to_date;
        if (r->voted_id >= 0)
            return r->voted_id == cand;
        if (r->leader_id >= 0)
            return false;
        return up_to_date;
    case RAFT_FOLLOWER:
        /* KIP-996: a follower that hears from its leader refuses pre-votes,
         * so a node cut off from the leader cannot disrupt the quorum. */
        return pre && !r->has_fetched && up_to_date;
    case RAFT_CANDIDATE:
    case RAFT_RESIGNED:
        return pre && up_to_date;
    case RAFT_LEADER:
        return false;
    }
    return false;
}

static void reply_vote(struct raft *r, int32_t to, const struct raft_msg *m, int16_t top_error, int16_t error,
                       bool granted)
{
    vote_response_t *s = vote_response_new_array(&r->ar, 1);
    s->error_code = top_error;
    if (top_error == KERR_NONE) {
        s->topics.a = vote_response_topic_data_new_array(&r->ar, 1);
        s->topics.n = 1;
        s->topics.a[0].topic_name = KSTR(RAFT_METADATA_TOPIC);
        vote_response_partition_data_t *p = vote_response_partition_data_new_array(&r->ar, 1);
        s->topics.a[0].partitions.a = p;
        s->topics.a[0].partitions.n = 1;
        p->partition_index = RAFT_METADATA_PARTITION;
        p->error_code = error;
        p->leader_id = r->leader_id;
        p->leader_epoch = r->epoch;
        p->vote_granted = granted;
    }
    send_msg(r, to, RAFT_MSG_VOTE_RESP, m->version, m->correlation_id, m->pre_vote, s);
}

static void handle_vote_request(struct raft *r, int32_t from, const struct raft_msg *m)
{
    const vote_request_t *q = m->u.vote_req;
    if (!cluster_ok(r, q->cluster_id)) {
        reply_vote(r, from, m, KERR_INCONSISTENT_CLUSTER_ID, 0, false);
        return;
    }
    if (q->topics.n != 1 || q->topics.a[0].partitions.n != 1 || !topic_is_metadata(q->topics.a[0].topic_name) ||
        q->topics.a[0].partitions.a[0].partition_index != RAFT_METADATA_PARTITION) {
        reply_vote(r, from, m, KERR_INVALID_REQUEST, 0, false);
        return;
    }
    const vote_request_partition_data_t *p = &q->topics.a[0].partitions.a[0];
    bool pre = m->pre_vote;
    int32_t cand = p->candidate_id, cepoch = p->candidate_epoch;
    /* A candidate bumped its epoch past every epoch in its log; a
     * prospective did not bump, so its last epoch may equal its epoch. */
    bool bad_epoch = pre ? p->last_offset_epoch > cepoch : p->last_offset_epoch >= cepoch;
    if (p->last_offset < 0 || p->last_offset_epoch < 0 || bad_epoch || cepoch < 0) {
        reply_vote(r, from, m, KERR_NONE, KERR_INVALID_REQUEST, false);
        return;
    }
    if (cepoch < r->epoch) {
        reply_vote(r, from, m, KERR_NONE, KERR_FENCED_LEADER_EPOCH, false);
        return;
    }
    if (cand < 0 || cand == r->id) {
        reply_vote(r, from, m, KERR_NONE, KERR_INVALID_REQUEST, false);
        return;
    }
    /* Static quorum: only a configured voter may stand, and a node outside
     * the voter set must not move our epoch (a misconfigured broker would
     * otherwise depose the leader). Kafka before KIP-853 answers this. */
    if (!find_voter(r, cand)) {
        reply_vote(r, from, m, KERR_NONE, KERR_INCONSISTENT_VOTER_SET, false);
        return;
    }
    if (cepoch > r->epoch)
        to_unattached(r, cepoch, -1);
    if (q->voter_id >= 0 && q->voter_id != r->id) {
        reply_vote(r, from, m, KERR_NONE, KERR_INVALID_VOTER_KEY, false);
        return;
    }
    bool granted = can_grant(r, cand, log_up_to_date(r, p->last_offset_epoch, p->last_offset), pre);
    if (granted && !pre && r->voted_id < 0) {
        /* The vote is durable before the grant leaves (persist is
         * synchronous); granting also resets our election timer, since the
         * candidate has at least our chances. */
        if (r->role == RAFT_UNATTACHED) {
            r->voted_id = cand;
            r->election_deadline = r->now + random_election_timeout(r);
            persist(r);
            trace(r, "voted for %d in epoch %d", (int)cand, (int)r->epoch);
        } else if (r->role == RAFT_PROSPECTIVE) {
            to_unattached(r, r->epoch, cand);
            r->election_deadline = r->now + random_election_timeout(r);
        }
    }
    trace(r, "%s from %d epoch=%d last=(%d,%" PRId64 ") %s", pre ? "pre-vote" : "vote", (int)cand, (int)cepoch,
          (int)p->last_offset_epoch, p->last_offset, granted ? "granted" : "rejected");
    reply_vote(r, from, m, KERR_NONE, KERR_NONE, granted);
}

static void handle_vote_response(struct raft *r, int32_t from, const struct raft_msg *m)
{
    struct rvoter *v = conn_match(r, from, m);
    if (!v)
        return;
    const vote_response_t *s = m->u.vote_resp;
    if (s->error_code != KERR_NONE) {
        conn_failed(r, v);
        return;
    }
    if (s->topics.n != 1 || s->topics.a[0].partitions.n != 1) {
        protocol_error(r, from, "vote response shape");
        conn_failed(r, v);
        return;
    }
    const vote_response_partition_data_t *p = &s->topics.a[0].partitions.a[0];
    enum common c = handle_common_response(r, from, p->error_code, p->leader_id, p->leader_epoch);
    if (c == COMMON_FAIL)
        conn_failed(r, v);
    if (c != COMMON_CONTINUE)
        return;
    if (p->error_code != KERR_NONE) {
        conn_failed(r, v);
        return;
    }
    /* Only answers to this election count: same epoch, and a pre-vote
     * answer only for a prospective (conn_match and the reset of
     * connections at every transition guarantee the request is ours). */
    if (p->leader_epoch != r->epoch || m->pre_vote != (r->role == RAFT_PROSPECTIVE))
        return;
    if (r->role != RAFT_PROSPECTIVE && r->role != RAFT_CANDIDATE)
        return;
    v->vote = p->vote_granted ? 1 : -1;
    if (count_votes(r, 1) >= majority(r)) {
        if (r->role == RAFT_PROSPECTIVE)
            to_candidate(r);
        else
            to_leader(r);
    } else if (r->role == RAFT_CANDIDATE && count_votes(r, -1) >= majority(r) && !r->backing_off) {
        /* Lost: back off a random, growing time before trying again, rather
         * than waiting out the whole election timeout (Kafka's binary
         * exponential backoff, capped by election.backoff.max.ms). */
        int32_t k = r->retries < 1 ? 1 : r->retries;
        int32_t shift = k - 1 < 20 ? k - 1 : 20;
        int64_t b = (int64_t)ELECTION_BACKOFF_BASE_MS * rnd_below(r, (int64_t)2 << shift);
        if (b > r->election_backoff_max_ms)
            b = r->election_backoff_max_ms;
        r->backing_off = true;
        r->backoff_until = r->now + b;
        trace(r, "election lost, backing off %" PRId64 " ms", b);
    }
}

/* ------------------------------------------------------------------ */
/* BeginQuorumEpoch / EndQuorumEpoch                                    */
/* ------------------------------------------------------------------ */

static void reply_begin(struct raft *r, int32_t to, const struct raft_msg *m, int16_t top_error, int16_t error)
{
    begin_quorum_epoch_response_t *s = begin_quorum_epoch_response_new_array(&r->ar, 1);
    s->error_code = top_error;
    if (top_error == KERR_NONE) {
        s->topics.a = begin_quorum_epoch_response_topic_data_new_array(&r->ar, 1);
        s->topics.n = 1;
        s->topics.a[0].topic_name = KSTR(RAFT_METADATA_TOPIC);
        begin_quorum_epoch_response_partition_data_t *p = begin_quorum_epoch_response_partition_data_new_array(&r->ar, 1);
        s->topics.a[0].partitions.a = p;
        s->topics.a[0].partitions.n = 1;
        p->partition_index = RAFT_METADATA_PARTITION;
        p->error_code = error;
        p->leader_id = r->leader_id;
        p->leader_epoch = r->epoch;
    }
    send_msg(r, to, RAFT_MSG_BEGIN_EPOCH_RESP, m->version, m->correlation_id, false, s);
}

static void handle_begin_request(struct raft *r, int32_t from, const struct raft_msg *m)
{
    const begin_quorum_epoch_request_t *q = m->u.begin_req;
    if (!cluster_ok(r, q->cluster_id)) {
        reply_begin(r, from, m, KERR_INCONSISTENT_CLUSTER_ID, 0);
        return;
    }
    if (q->topics.n != 1 || q->topics.a[0].partitions.n != 1 || !topic_is_metadata(q->topics.a[0].topic_name) ||
        q->topics.a[0].partitions.a[0].partition_index != RAFT_METADATA_PARTITION) {
        reply_begin(r, from, m, KERR_INVALID_REQUEST, 0);
        return;
    }
    const begin_quorum_epoch_request_partition_data_t *p = &q->topics.a[0].partitions.a[0];
    if (p->leader_epoch < r->epoch) {
        reply_begin(r, from, m, KERR_NONE, KERR_FENCED_LEADER_EPOCH);
        return;
    }
    if (p->leader_id < 0 || p->leader_id == r->id) {
        reply_begin(r, from, m, KERR_NONE, KERR_INVALID_REQUEST);
        return;
    }
    if (!find_voter(r, p->leader_id)) {
        reply_begin(r, from, m, KERR_NONE, KERR_INCONSISTENT_VOTER_SET);
        return;
    }
    maybe_transition(r, p->leader_id, p->leader_epoch);
    if (q->voter_id >= 0 && q->voter_id != r->id) {
        reply_begin(r, from, m, KERR_NONE, KERR_INVALID_VOTER_KEY);
        return;
    }
    reply_begin(r, from, m, KERR_NONE, KERR_NONE);
}

static void handle_begin_response(struct raft *r, int32_t from, const struct raft_msg *m)
{
    struct rvoter *v = conn_match(r, from, m);
    if (!v)
        return;
    const begin_quorum_epoch_response_t *s = m->u.begin_resp;
    if (s->error_code != KERR_NONE || s->topics.n != 1 || s->topics.a[0].partitions.n != 1) {
        conn_failed(r, v);
        return;
    }
    const begin_quorum_epoch_response_partition_data_t *p = &s->topics.a[0].partitions.a[0];
    enum common c = handle_common_response(r, from, p->error_code, p->leader_id, p->leader_epoch);
    if (c == COMMON_FAIL)
        conn_failed(r, v);
    if (c != COMMON_CONTINUE)
        return;
    if (p->error_code == KERR_NONE && r->role == RAFT_LEADER)
        v->acked = true;
}

static void reply_end(struct raft *r, int32_t to, const struct raft_msg *m, int16_t top_error, int16_t error)
{
    end_quorum_epoch_response_t *s = end_quorum_epoch_response_new_array(&r->ar, 1);
    s->error_code = top_error;
    if (top_error == KERR_NONE) {
        s->topics.a = end_quorum_epoch_response_topic_data_new_array(&r->ar, 1);
        s->topics.n = 1;
        s->topics.a[0].topic_name = KSTR(RAFT_METADATA_TOPIC);
        end_quorum_epoch_response_partition_data_t *p = end_quorum_epoch_response_partition_data_new_array(&r->ar, 1);
        s->topics.a[0].partitions.a = p;
        s->topics.a[0].partitions.n = 1;
        p->partition_index = RAFT_METADATA_PARTITION;
        p->error_code = error;
        p->leader_id = r->leader_id;
        p->leader_epoch = r->epoch;
    }
    send_msg(r, to, RAFT_MSG_END_EPOCH_RESP, m->version, m->correlation_id, false, s);
}

/* Kafka's strictExponentialElectionBackoffMs: the first preferred
 * successor stands at once, the next ones wait exponentially longer, the
 * rest the full backoff. */
static int64_t end_epoch_backoff(struct raft *r, int32_t position, int32_t n)
{
    if (position == 0)
        return 0;
    if (position < 0 || position >= n)
        return r->election_backoff_max_ms;
    int64_t base = (int64_t)r->election_backoff_max_ms >> (n - 1 < 30 ? n - 1 : 30);
    int64_t b = base << (position - 1 < 30 ? position - 1 : 30);
    return b < r->election_backoff_max_ms ? b : r->election_backoff_max_ms;
}

static void handle_end_request(struct raft *r, int32_t from, const struct raft_msg *m)
{
    const end_quorum_epoch_request_t *q = m->u.end_req;
    if (!cluster_ok(r, q->cluster_id)) {
        reply_end(r, from, m, KERR_INCONSISTENT_CLUSTER_ID, 0);
        return;
    }
    if (q->topics.n != 1 || q->topics.a[0].partitions.n != 1 || !topic_is_metadata(q->topics.a[0].topic_name) ||
        q->topics.a[0].partitions.a[0].partition_index != RAFT_METADATA_PARTITION) {
        reply_end(r, from, m, KERR_INVALID_REQUEST, 0);
        return;
    }
    const end_quorum_epoch_request_partition_data_t *p = &q->topics.a[0].partitions.a[0];
    if (p->leader_epoch < r->epoch) {
        reply_end(r, from, m, KERR_NONE, KERR_FENCED_LEADER_EPOCH);
        return;
    }
    if (p->leader_id < 0 || p->leader_id == r->id) {
        reply_end(r, from, m, KERR_NONE, KERR_INVALID_REQUEST);
        return;
    }
    if (!find_voter(r, p->leader_id)) {
        reply_end(r, from, m, KERR_NONE, KERR_INCONSISTENT_VOTER_SET);
        return;
    }
    maybe_transition(r, p->leader_id, p->leader_epoch);
    if (r->role == RAFT_FOLLOWER && r->leader_id == p->leader_id && r->epoch == p->leader_epoch) {
        int32_t pos = -1, n;
        if (m->version >= 1) {
            n = p->preferred_candidates.n;
            for (int32_t i = 0; i < n && pos < 0; i++)
                if (p->preferred_candidates.a[i].candidate_id == r->id)
                    pos = i;
        } else {
            n = p->preferred_successors.n;
            for (int32_t i = 0; i < n && pos < 0; i++)
                if (p->preferred_successors.a[i] == r->id)
                    pos = i;
        }
        int64_t b = end_epoch_backoff(r, pos, n);
        if (r->now + b < r->fetch_deadline)
            r->fetch_deadline = r->now + b;
        /* The leader is going away: what we heard from it no longer
         * argues against a pre-vote. */
        r->has_fetched = false;
    }
    reply_end(r, from, m, KERR_NONE, KERR_NONE);
}

static void handle_end_response(struct raft *r, int32_t from, const struct raft_msg *m)
{
    struct rvoter *v = conn_match(r, from, m);
    if (!v)
        return;
    const end_quorum_epoch_response_t *s = m->u.end_resp;
    if (s->error_code != KERR_NONE || s->topics.n != 1 || s->topics.a[0].partitions.n != 1) {
        conn_failed(r, v);
        return;
    }
    const end_quorum_epoch_response_partition_data_t *p = &s->topics.a[0].partitions.a[0];
    enum common c = handle_common_response(r, from, p->error_code, p->leader_id, p->leader_epoch);
    if (c == COMMON_FAIL)
        conn_failed(r, v);
    if (c != COMMON_CONTINUE)
        return;
    if (p->error_code == KERR_NONE && r->role == RAFT_RESIGNED)
        v->acked = true;
}

/* ------------------------------------------------------------------ */
/* Fetch: leader side                                                  */
/* ------------------------------------------------------------------ */

enum fetch_kind { FETCH_VALID, FETCH_DIVERGING, FETCH_SNAPSHOT };

/* Kafka's ReplicatedLog.validateOffsetAndEpoch: is the follower's log up
 * to (offset, epoch of the record before it) a prefix of ours? If not,
 * where do they agree (diverging), or must it start over from a
 * snapshot. */
static enum fetch_kind validate_fetch(struct raft *r, int64_t offset, int32_t epoch, struct raft_offset_epoch *out)
{
    int64_t start = log_start(r);
    if (start == 0 && offset == 0) {
        *out = (struct raft_offset_epoch){0, 0};
        return FETCH_VALID;
    }
    /* The log starts at a snapshot (start > 0): a follower below it, or at
     * it with another epoch, or with an epoch older than the snapshot's,
     * cannot be repaired from the log. */
    if (start > 0 &&
        (offset < start || (offset == start && epoch != r->ec.base_epoch) || epoch < r->ec.base_epoch)) {
        struct raft_snapshot_id id;
        if (!r->log.ops->latest_snapshot(r->log.ctx, &id)) {
            violation(r, "log starts past 0 without a snapshot");
            *out = (struct raft_offset_epoch){start, r->ec.base_epoch};
            return FETCH_DIVERGING;
        }
        *out = (struct raft_offset_epoch){id.end_offset, id.epoch};
        return FETCH_SNAPSHOT;
    }
    struct raft_offset_epoch e = rec_end_offset_for_epoch(&r->ec, epoch, log_end(r));
    if (e.epoch != epoch || e.offset < offset) {
        *out = e;
        return FETCH_DIVERGING;
    }
    *out = (struct raft_offset_epoch){offset, epoch};
    return FETCH_VALID;
}

static int16_t validate_leader_only(struct raft *r, int32_t request_epoch)
{
    if (request_epoch < r->epoch)
        return KERR_FENCED_LEADER_EPOCH;
    if (request_epoch > r->epoch)
        return KERR_UNKNOWN_LEADER_EPOCH;
    if (r->role != RAFT_LEADER)
        return KERR_NOT_LEADER_OR_FOLLOWER;
    return KERR_NONE;
}

static fetch_response_t *new_fetch_response(struct raft *r, fetch_response_partition_data_t **pp)
{
    fetch_response_t *s = fetch_response_new_array(&r->ar, 1);
    s->responses.a = fetch_response_fetchable_topic_response_new_array(&r->ar, 1);
    s->responses.n = 1;
    s->responses.a[0].topic = KSTR(RAFT_METADATA_TOPIC);
    s->responses.a[0].topic_id = RAFT_METADATA_TOPIC_ID;
    fetch_response_partition_data_t *p = fetch_response_partition_data_new_array(&r->ar, 1);
    s->responses.a[0].partitions.a = p;
    s->responses.a[0].partitions.n = 1;
    p->partition_index = RAFT_METADATA_PARTITION;
    p->high_watermark = r->role == RAFT_LEADER && r->hw_established ? r->hw : -1;
    p->log_start_offset = log_start(r);
    p->current_leader.leader_id = r->leader_id;
    p->current_leader.leader_epoch = r->epoch;
    *pp = p;
    return s;
}

static void reply_fetch_error(struct raft *r, int32_t to, int32_t corr, int16_t version, int16_t top_error,
                              int16_t error)
{
    fetch_response_partition_data_t *p;
    fetch_response_t *s = new_fetch_response(r, &p);
    if (top_error != KERR_NONE) {
        s->error_code = top_error;
        s->responses.n = 0;
    }
    p->error_code = error;
    send_msg(r, to, RAFT_MSG_FETCH_RESP, version, corr, false, s);
}

static struct robserver *observer_slot(struct raft *r, int32_t id)
{
    for (int32_t i = 0; i < r->nobservers; i++)
        if (r->observers[i].id == id)
            return &r->observers[i];
    if (r->nobservers == MAX_OBSERVERS) {
        /* Bounded: the stalest observer makes room (observers only feed
         * DescribeQuorum). */
        int32_t old = 0;
        for (int32_t i = 1; i < r->nobservers; i++)
            if (r->observers[i].last_fetch_ms < r->observers[old].last_fetch_ms)
                old = i;
        r->observers[old] = r->observers[--r->nobservers];
    }
    struct robserver *o = &r->observers[r->nobservers++];
    o->id = id;
    o->end_offset = -1;
    o->last_fetch_ms = -1;
    o->last_caught_up_ms = -1;
    o->hw_told = -1;
    return o;
}

/* The high watermark is the largest offset a majority of voters has
 * (durably: a follower's fetch offset, the leader's flushed end), and only
 * once that is past the start of the current epoch: records of older
 * epochs are committed indirectly, by committing one of our own (Raft's
 * rule, Kafka's LeaderState.maybeUpdateHighWatermark). */
static void parked_complete_all(struct raft *r);

static void maybe_update_leader_hw(struct raft *r)
{
    if (r->role != RAFT_LEADER)
        return;
    int64_t offs[RAFT_MAX_VOTERS];
    int32_t n = 0;
    for (int32_t i = 0; i < r->nvoters; i++) {
        int64_t o = r->voters[i].id == r->id ? r->flushed : r->voters[i].end_offset;
        /* insertion sort, descending */
        int32_t j = n++;
        while (j > 0 && offs[j - 1] < o) {
            offs[j] = offs[j - 1];
            j--;
        }
        offs[j] = o;
    }
    int64_t cand = offs[r->nvoters / 2];
    if (cand > r->epoch_start_offset && (cand > r->hw || !r->hw_established)) {
        if (cand > log_end(r)) {
            violation(r, "majority offset beyond the leader's log");
            return;
        }
        if (cand < r->hw) {
            /* Committed offsets are on a majority's flushed logs and every
             * leader has them: a majority below what we applied means lost
             * data. */
            violation(r, "high watermark would go backwards");
            return;
        }
        r->hw_established = true;
        set_hw(r, cand);
        parked_complete_all(r);
    }
}

static void note_replica_fetch(struct raft *r, int32_t replica, int64_t fetch_offset, bool valid)
{
    struct rvoter *v = find_voter(r, replica);
    if (v && v->id != r->id) {
        v->last_fetch_ms = r->now;
        v->fetched_in_window = true;
        if (valid) {
            v->end_offset = fetch_offset;
            if (fetch_offset >= log_end(r))
                v->last_caught_up_ms = r->now;
        }
        int32_t n = 1; /* ourselves */
        for (int32_t i = 0; i < r->nvoters; i++)
            n += r->voters[i].id != r->id && r->voters[i].fetched_in_window;
        if (n >= majority(r)) {
            /* A majority still follows us: a new check-quorum window. */
            for (int32_t i = 0; i < r->nvoters; i++)
                r->voters[i].fetched_in_window = false;
            r->check_quorum_deadline =
                r->now + (int64_t)r->fetch_timeout_ms * CHECK_QUORUM_FACTOR_NUM / CHECK_QUORUM_FACTOR_DEN;
        }
        if (valid)
            maybe_update_leader_hw(r);
    } else if (!v && replica >= 0) {
        struct robserver *o = observer_slot(r, replica);
        o->last_fetch_ms = r->now;
        if (valid) {
            o->end_offset = fetch_offset;
            if (fetch_offset >= log_end(r))
                o->last_caught_up_ms = r->now;
        }
    }
}

static void maybe_resign_check_quorum(struct raft *r)
{
    if (r->nvoters > 1 && r->now >= r->check_quorum_deadline) {
        trace(r, "check quorum: no majority fetched within %d ms, resigning",
              r->fetch_timeout_ms * CHECK_QUORUM_FACTOR_NUM / CHECK_QUORUM_FACTOR_DEN);
        to_resigned(r);
    }
}

/* Where the leader notes the high watermark a replica has heard from it
 * (NULL: not a replica it tracks). */
static int64_t *hw_told_slot(struct raft *r, int32_t replica)
{
    struct rvoter *v = find_voter(r, replica);
    if (v)
        return v->id != r->id ? &v->hw_told : NULL;
    for (int32_t i = 0; i < r->nobservers; i++)
        if (r->observers[i].id == replica)
            return &r->observers[i].hw_told;
    return NULL;
}

/* Builds and sends the answer to a validated Fetch. Returns false when
 * there was nothing to say yet (the caller may park it). A replica that
 * has not heard the current high watermark is answered at once, even
 * with no records: parked, it would learn of a commit only at the next
 * append or after max wait, and until then its image lacks what the
 * quorum committed (a topic whose CreateTopics has been answered); if
 * the leader died meanwhile, it would lack it until the next leader
 * commits, answering Metadata with UNKNOWN_TOPIC_OR_PARTITION. Kafka's
 * KIP-1166 (FetchRequest v18 HighWatermark) has the follower say what
 * it knows; the leader remembering what it told each replica gives the
 * same answer within the versions samsa speaks. */
static bool fetch_answer(struct raft *r, int32_t to, int32_t corr, int16_t version, int32_t replica,
                         int64_t fetch_offset, int32_t last_fetched_epoch, int32_t max_bytes, bool must_answer)
{
    struct raft_snapshot_id latest;
    bool have_snap = r->log.ops->latest_snapshot(r->log.ctx, &latest) && latest.end_offset > 0;
    struct raft_offset_epoch oe;
    enum fetch_kind kind;
    if (fetch_offset == 0 && have_snap) {
        /* An empty follower is better served by the snapshot. */
        kind = FETCH_SNAPSHOT;
        oe = (struct raft_offset_epoch){latest.end_offset, latest.epoch};
    } else {
        kind = validate_fetch(r, fetch_offset, last_fetched_epoch, &oe);
    }
    krecords_t recs = {NULL, 0, NULL, 0};
    if (kind == FETCH_VALID) {
        note_replica_fetch(r, replica, fetch_offset, true);
        if (r->role != RAFT_LEADER)
            return true; /* the update made us resign? cannot, but be safe */
        if (fetch_offset < log_end(r)) {
            int rc = r->log.ops->read(r->log.ctx, fetch_offset, max_bytes, &recs);
            if (rc != 0) {
                r->stats.log_errors++;
                reply_fetch_error(r, to, corr, version, KERR_NONE, KERR_UNKNOWN_SERVER_ERROR);
                return true;
            }
        }
        int64_t *told = hw_told_slot(r, replica);
        int64_t hw_now = r->hw_established ? r->hw : -1;
        if (recs.len <= 0 && !must_answer && !(told && hw_now > *told))
            return false;
        /* What the follower takes (at most its log end, and that is at
         * least the fetch offset: records sent only ever add to it). */
        if (told)
            *told = hw_now < fetch_offset ? hw_now : fetch_offset;
    } else {
        note_replica_fetch(r, replica, fetch_offset, false);
    }
    fetch_response_partition_data_t *p;
    fetch_response_t *s = new_fetch_response(r, &p);
    p->error_code = KERR_NONE;
    if (kind == FETCH_DIVERGING) {
        p->diverging_epoch.epoch = oe.epoch;
        p->diverging_epoch.end_offset = oe.offset;
    } else if (kind == FETCH_SNAPSHOT) {
        p->snapshot_id.epoch = oe.epoch;
        p->snapshot_id.end_offset = oe.offset;
    }
    p->records = recs.len > 0 ? recs : (krecords_t){NULL, 0, NULL, 0};
    trace(r, "fetch from %d at %" PRId64 "/%d: %s %d bytes hw=%" PRId64, (int)replica, fetch_offset,
          (int)last_fetched_epoch,
          kind == FETCH_VALID ? "valid" : kind == FETCH_DIVERGING ? "diverging" : "snapshot", (int)recs.len, r->hw);
    send_msg(r, to, RAFT_MSG_FETCH_RESP, version, corr, false, s);
    return true;
}

static void park_fetch(struct raft *r, int32_t from, const struct raft_msg *m, int32_t replica,
                       const fetch_request_fetch_partition_t *fp, int32_t max_bytes, int32_t max_wait)
{
    struct rparked *slot = NULL;
    for (int32_t i = 0; i < MAX_PARKED; i++)
        if (r->parked[i].used && r->parked[i].from == from) {
            slot = &r->parked[i]; /* a newer fetch supersedes (the old one timed out) */
            break;
        }
    for (int32_t i = 0; i < MAX_PARKED && !slot; i++)
        if (!r->parked[i].used)
            slot = &r->parked[i];
    if (!slot) {
        fetch_answer(r, from, m->correlation_id, m->version, replica, fp->fetch_offset, fp->last_fetched_epoch,
                     max_bytes, true);
        return;
    }
    *slot = (struct rparked){.used = true,
                             .from = from,
                             .corr = m->correlation_id,
                             .version = m->version,
                             .replica_id = replica,
                             .fetch_offset = fp->fetch_offset,
                             .last_fetched_epoch = fp->last_fetched_epoch,
                             .max_bytes = max_bytes,
                             .deadline = r->now + max_wait};
}

static void parked_run(struct raft *r, bool expired_only)
{
    if (r->completing)
        return;
    r->completing = true;
    for (int32_t i = 0; i < MAX_PARKED; i++) {
        struct rparked *pk = &r->parked[i];
        if (!pk->used || (expired_only && r->now < pk->deadline))
            continue;
        struct rparked c = *pk;
        pk->used = false;
        if (r->role != RAFT_LEADER) {
            reply_fetch_error(r, c.from, c.corr, c.version, KERR_NONE, KERR_NOT_LEADER_OR_FOLLOWER);
            continue;
        }
        fetch_answer(r, c.from, c.corr, c.version, c.replica_id, c.fetch_offset, c.last_fetched_epoch, c.max_bytes,
                     true);
    }
    r->completing = false;
}

static void parked_complete_all(struct raft *r) { parked_run(r, false); }
static void parked_expire(struct raft *r) { parked_run(r, true); }

static void parked_fail_all(struct raft *r)
{
    /* Kafka completes parked fetches with NOT_LEADER_OR_FOLLOWER when it
     * loses leadership, so followers learn the news now rather than after
     * max wait. The response carries our new epoch and leader. (When this
     * runs inside parked_run, that loop answers the rest the same way.) */
    parked_run(r, false);
}

static void handle_fetch_request(struct raft *r, int32_t from, const struct raft_msg *m)
{
    const fetch_request_t *q = m->u.fetch_req;
    if (!cluster_ok(r, q->cluster_id)) {
        reply_fetch_error(r, from, m->correlation_id, m->version, KERR_INCONSISTENT_CLUSTER_ID, 0);
        return;
    }
    bool topic_ok = q->topics.n == 1 &&
                    (m->version >= 13 ? kuuid_eq(&q->topics.a[0].topic_id, &RAFT_METADATA_TOPIC_ID)
                                      : topic_is_metadata(q->topics.a[0].topic));
    if (!topic_ok || q->topics.a[0].partitions.n != 1 ||
        q->topics.a[0].partitions.a[0].partition != RAFT_METADATA_PARTITION) {
        reply_fetch_error(r, from, m->correlation_id, m->version, KERR_INVALID_REQUEST, 0);
        return;
    }
    const fetch_request_fetch_partition_t *fp = &q->topics.a[0].partitions.a[0];
    int32_t replica = m->version >= 15 ? q->replica_state.replica_id : q->replica_id;
    if (q->max_wait_ms < 0 || fp->fetch_offset < 0 || fp->last_fetched_epoch < 0 ||
        fp->last_fetched_epoch > fp->current_leader_epoch || replica == r->id) {
        reply_fetch_error(r, from, m->correlation_id, m->version, KERR_NONE, KERR_INVALID_REQUEST);
        return;
    }
    int16_t err = validate_leader_only(r, fp->current_leader_epoch);
    if (err != KERR_NONE) {
        reply_fetch_error(r, from, m->correlation_id, m->version, KERR_NONE, err);
        return;
    }
    int32_t max_bytes = r->fetch_max_bytes;
    if (q->max_bytes > 0 && q->max_bytes < max_bytes)
        max_bytes = q->max_bytes;
    if (fp->partition_max_bytes > 0 && fp->partition_max_bytes < max_bytes)
        max_bytes = fp->partition_max_bytes;
    int32_t wait = q->max_wait_ms < r->fetch_max_wait_ms ? q->max_wait_ms : r->fetch_max_wait_ms;
    if (!fetch_answer(r, from, m->correlation_id, m->version, replica, fp->fetch_offset, fp->last_fetched_epoch,
                      max_bytes, wait == 0))
        park_fetch(r, from, m, replica, fp, max_bytes, wait);
}

/* ------------------------------------------------------------------ */
/* Fetch: follower side                                                */
/* ------------------------------------------------------------------ */

/* Appends the whole batches of a Fetch response that continue our log.
 * Everything is checked before anything is written: contiguous offsets
 * from our end, CRC, epochs monotonic and not beyond the leader's. A
 * truncated batch at the end (max_bytes) is left for the next fetch. */
static void follower_append(struct raft *r, int32_t from, const krecords_t *recs, int32_t leader_epoch)
{
    if (recs->len <= 0)
        return;
    if (recs->file || !recs->p) {
        protocol_error(r, from, "fetch records not in memory");
        return;
    }
    const uint8_t *p = recs->p;
    size_t n = (size_t)recs->len, pos = 0;
    int64_t expect = log_end(r);
    int32_t ep_prev = last_epoch(r);
    /* first pass: validate */
    size_t ok_len = 0;
    while (pos < n) {
        size_t size = 0;
        int rc = rb_frame(p + pos, n - pos, &size);
        if (rc == RB_FRAME_TRUNCATED)
            break;
        struct rb_header h;
        if (rc != 0 || rb_parse_header(p + pos, size, &h) != 0) {
            protocol_error(r, from, "malformed batch in fetch response");
            break;
        }
        if (h.base_offset != expect || h.last_offset_delta < 0 || !rb_crc_ok(p + pos, size) ||
            h.partition_leader_epoch < ep_prev || h.partition_leader_epoch > leader_epoch ||
            h.partition_leader_epoch <= 0) {
            protocol_error(r, from, "batch does not continue the log");
            break;
        }
        expect = rb_last_offset(&h) + 1;
        ep_prev = h.partition_leader_epoch;
        pos += size;
        ok_len = pos;
    }
    if (ok_len == 0)
        return;
    int rc = r->log.ops->append(r->log.ctx, p, ok_len);
    if (rc != 0) {
        r->stats.log_errors++;
        trace(r, "log append failed: %s", kerr_name((int16_t)rc));
        return;
    }
    for (pos = 0; pos < ok_len;) {
        size_t size = 0;
        rb_frame(p + pos, ok_len - pos, &size);
        struct rb_header h;
        rb_parse_header(p + pos, size, &h);
        if (!rec_assign(&r->ec, h.partition_leader_epoch, h.base_offset))
            violation(r, "epoch cache refused a fetched batch");
        pos += size;
    }
    emit_flush(r);
}

/* Kafka's ReplicatedLog.truncateToEndOffset: cut our log where it stops
 * agreeing with the leader's (epoch, end offset). */
static void follower_truncate(struct raft *r, struct raft_offset_epoch div)
{
    int64_t to;
    int64_t end = log_end(r);
    if (div.epoch == 0) {
        to = div.offset < end ? div.offset : end;
    } else {
        struct raft_offset_epoch local = rec_end_offset_for_epoch(&r->ec, div.epoch, end);
        if (local.epoch == div.epoch)
            to = local.offset < div.offset ? local.offset : div.offset;
        else
            to = local.offset;
    }
    if (r->hw >= 0 && to < r->hw) {
        violation(r, "leader asked to truncate below the high watermark");
        return;
    }
    if (to < log_start(r)) {
        violation(r, "leader asked to truncate into the snapshot");
        return;
    }
    if (to >= end)
        return;
    int rc = r->log.ops->truncate_to(r->log.ctx, to);
    if (rc != 0) {
        r->stats.log_errors++;
        return;
    }
    rec_truncate_from(&r->ec, to);
    if (r->flushed > to)
        r->flushed = to;
    else if (r->flushed < to)
        /* A flush in flight may have been for the bytes just cut off, and
         * the host may not report it for what remains: ask again, or we
         * would wait forever to send the next Fetch. */
        emit_flush(r);
    r->stats.truncations++;
    trace(r, "truncated to %" PRId64 " (diverging %d/%" PRId64 ")", to, (int)div.epoch, div.offset);
}

static void install_snapshot(struct raft *r, const struct raft_snapshot_id *id)
{
    int64_t start = log_start(r), end = log_end(r);
    if (id->end_offset < start) {
        violation(r, "leader sent a snapshot older than our log start");
        return;
    }
    /* Our records past the snapshot survive only when our log holds the
     * snapshot's last record with the same epoch (then they continue it).
     * Otherwise the leader sent the snapshot because our log diverged or
     * fell behind, and all of it goes (Kafka's truncateToLatestSnapshot). */
    bool keep = id->end_offset > start && id->end_offset <= end &&
                rec_epoch_at(&r->ec, id->end_offset - 1) == id->epoch;
    int rc = 0;
    if (!keep && end > start)
        rc = r->log.ops->truncate_to(r->log.ctx, start);
    if (rc == 0)
        rc = r->log.ops->reset_start(r->log.ctx, id);
    if (rc != 0) {
        r->stats.log_errors++;
        return;
    }
    if (keep)
        rec_trim_before(&r->ec, id->end_offset, id->epoch);
    else
        rec_clear(&r->ec, id->end_offset, id->epoch);
    if (!keep && r->flushed > id->end_offset)
        r->flushed = id->end_offset;
    /* The snapshot is durable (snapshot_finish). */
    if (r->flushed < log_start(r))
        r->flushed = log_start(r);
    r->stats.snapshots_fetched++;
    trace(r, "installed snapshot %" PRId64 "/%d", id->end_offset, (int)id->epoch);
    struct raft_output o = {.type = RAFT_OUT_LOAD_SNAPSHOT};
    o.u.load_snapshot = *id;
    emit(r, &o);
    /* The snapshot is committed state: the host has applied up to its end
     * by loading it, so the high watermark is at least there. */
    if (id->end_offset > r->hw)
        r->hw = id->end_offset;
}

static void handle_fetch_response(struct raft *r, int32_t from, const struct raft_msg *m)
{
    struct rvoter *v = conn_match(r, from, m);
    if (!v)
        return;
    const fetch_response_t *s = m->u.fetch_resp;
    if (s->error_code != KERR_NONE) {
        conn_failed(r, v);
        return;
    }
    bool topic_ok = s->responses.n == 1 &&
                    (m->version >= 13 ? kuuid_eq(&s->responses.a[0].topic_id, &RAFT_METADATA_TOPIC_ID)
                                      : topic_is_metadata(s->responses.a[0].topic));
    if (!topic_ok || s->responses.a[0].partitions.n != 1 ||
        s->responses.a[0].partitions.a[0].partition_index != RAFT_METADATA_PARTITION) {
        protocol_error(r, from, "fetch response shape");
        conn_failed(r, v);
        return;
    }
    const fetch_response_partition_data_t *p = &s->responses.a[0].partitions.a[0];
    enum common c = handle_common_response(r, from, p->error_code, p->current_leader.leader_id,
                                           p->current_leader.leader_epoch);
    if (c == COMMON_FAIL)
        conn_failed(r, v);
    if (c != COMMON_CONTINUE)
        return;
    if (p->error_code != KERR_NONE) {
        conn_failed(r, v);
        return;
    }
    if (r->role != RAFT_FOLLOWER || from != r->leader_id || p->current_leader.leader_epoch != r->epoch)
        return; /* an answer from someone who is not our leader */
    if (p->diverging_epoch.epoch >= 0 || p->diverging_epoch.end_offset >= 0) {
        if (p->diverging_epoch.epoch < 0 || p->diverging_epoch.end_offset < 0) {
            protocol_error(r, from, "half a diverging epoch");
            conn_failed(r, v);
            return;
        }
        follower_truncate(r, (struct raft_offset_epoch){p->diverging_epoch.end_offset, p->diverging_epoch.epoch});
    } else if (p->snapshot_id.epoch >= 0 || p->snapshot_id.end_offset >= 0) {
        if (p->snapshot_id.epoch < 0 || p->snapshot_id.end_offset <= 0) {
            protocol_error(r, from, "invalid snapshot id");
            conn_failed(r, v);
            return;
        }
        struct raft_snapshot_id id = {p->snapshot_id.end_offset, p->snapshot_id.epoch};
        if (r->log.ops->snapshot_size(r->log.ctx, &id) >= 0) {
            /* Already have it (a download finished, the log reset failed or
             * a crash came in between): just move the log start. */
            install_snapshot(r, &id);
        } else {
            int rc = r->log.ops->snapshot_begin(r->log.ctx, &id);
            if (rc != 0) {
                r->stats.log_errors++;
                conn_failed(r, v);
                return;
            }
            r->fetching_snapshot = true;
            r->snap_id = id;
            r->snap_pos = 0;
            r->snap_size = -1;
            trace(r, "fetching snapshot %" PRId64 "/%d", id.end_offset, (int)id.epoch);
        }
    } else {
        follower_append(r, from, &p->records, r->epoch);
        if (p->high_watermark >= 0) {
            int64_t end = log_end(r);
            set_hw(r, p->high_watermark < end ? p->high_watermark : end);
        }
    }
    r->has_fetched = true;
    r->fetch_deadline = r->now + follower_timeout(r);
}

/* ------------------------------------------------------------------ */
/* FetchSnapshot                                                       */
/* ------------------------------------------------------------------ */

static void reply_fsnap(struct raft *r, int32_t to, const struct raft_msg *m, int16_t top_error, int16_t error,
                        const struct raft_snapshot_id *id, int64_t size, int64_t pos, const krecords_t *data)
{
    fetch_snapshot_response_t *s = fetch_snapshot_response_new_array(&r->ar, 1);
    s->error_code = top_error;
    if (top_error == KERR_NONE) {
        s->topics.a = fetch_snapshot_response_topic_snapshot_new_array(&r->ar, 1);
        s->topics.n = 1;
        s->topics.a[0].name = KSTR(RAFT_METADATA_TOPIC);
        fetch_snapshot_response_partition_snapshot_t *p = fetch_snapshot_response_partition_snapshot_new_array(&r->ar, 1);
        s->topics.a[0].partitions.a = p;
        s->topics.a[0].partitions.n = 1;
        p->index = RAFT_METADATA_PARTITION;
        p->error_code = error;
        p->current_leader.leader_id = r->leader_id;
        p->current_leader.leader_epoch = r->epoch;
        if (id) {
            p->snapshot_id.end_offset = id->end_offset;
            p->snapshot_id.epoch = id->epoch;
        } else {
            p->snapshot_id.end_offset = -1;
            p->snapshot_id.epoch = -1;
        }
        p->size = size;
        p->position = pos;
        p->unaligned_records = data ? *data : (krecords_t){NULL, 0, NULL, 0};
    }
    send_msg(r, to, RAFT_MSG_FETCH_SNAPSHOT_RESP, m->version, m->correlation_id, false, s);
}

static void handle_fsnap_request(struct raft *r, int32_t from, const struct raft_msg *m)
{
    const fetch_snapshot_request_t *q = m->u.fsnap_req;
    if (!cluster_ok(r, q->cluster_id)) {
        reply_fsnap(r, from, m, KERR_INCONSISTENT_CLUSTER_ID, 0, NULL, 0, 0, NULL);
        return;
    }
    if (q->topics.n != 1 || q->topics.a[0].partitions.n != 1) {
        reply_fsnap(r, from, m, KERR_INVALID_REQUEST, 0, NULL, 0, 0, NULL);
        return;
    }
    const fetch_snapshot_request_partition_snapshot_t *p = &q->topics.a[0].partitions.a[0];
    if (!topic_is_metadata(q->topics.a[0].name) || p->partition != RAFT_METADATA_PARTITION) {
        reply_fsnap(r, from, m, KERR_NONE, KERR_UNKNOWN_TOPIC_OR_PARTITION, NULL, 0, 0, NULL);
        return;
    }
    int16_t err = validate_leader_only(r, p->current_leader_epoch);
    if (err != KERR_NONE) {
        reply_fsnap(r, from, m, KERR_NONE, err, NULL, 0, 0, NULL);
        return;
    }
    struct raft_snapshot_id id = {p->snapshot_id.end_offset, p->snapshot_id.epoch};
    int64_t size = id.end_offset > 0 && id.epoch >= 0 ? r->log.ops->snapshot_size(r->log.ctx, &id) : -1;
    if (size < 0) {
        reply_fsnap(r, from, m, KERR_NONE, KERR_SNAPSHOT_NOT_FOUND, NULL, 0, 0, NULL);
        return;
    }
    if (p->position < 0 || p->position >= size) {
        reply_fsnap(r, from, m, KERR_NONE, KERR_POSITION_OUT_OF_RANGE, NULL, 0, 0, NULL);
        return;
    }
    int32_t max = r->fetch_max_bytes;
    if (q->max_bytes > 0 && q->max_bytes < max)
        max = q->max_bytes;
    krecords_t data = {NULL, 0, NULL, 0};
    int rc = r->log.ops->snapshot_read(r->log.ctx, &id, p->position, max, &data);
    if (rc != 0) {
        r->stats.log_errors++;
        reply_fsnap(r, from, m, KERR_NONE, (int16_t)rc, NULL, 0, 0, NULL);
        return;
    }
    int32_t replica = q->replica_id;
    /* Downloading a snapshot is following us (check quorum). */
    note_replica_fetch(r, replica, -1, false);
    reply_fsnap(r, from, m, KERR_NONE, KERR_NONE, &id, size, p->position, &data);
}

static void handle_fsnap_response(struct raft *r, int32_t from, const struct raft_msg *m)
{
    struct rvoter *v = conn_match(r, from, m);
    if (!v)
        return;
    const fetch_snapshot_response_t *s = m->u.fsnap_resp;
    if (s->error_code != KERR_NONE || s->topics.n != 1 || s->topics.a[0].partitions.n != 1 ||
        !topic_is_metadata(s->topics.a[0].name) || s->topics.a[0].partitions.a[0].index != RAFT_METADATA_PARTITION) {
        conn_failed(r, v);
        return;
    }
    const fetch_snapshot_response_partition_snapshot_t *p = &s->topics.a[0].partitions.a[0];
    enum common c = handle_common_response(r, from, p->error_code, p->current_leader.leader_id,
                                           p->current_leader.leader_epoch);
    if (c == COMMON_FAIL)
        conn_failed(r, v);
    if (c != COMMON_CONTINUE)
        return;
    if (r->role != RAFT_FOLLOWER || from != r->leader_id || !r->fetching_snapshot)
        return;
    if (p->error_code == KERR_SNAPSHOT_NOT_FOUND || p->snapshot_id.end_offset < 0 || p->snapshot_id.epoch < 0) {
        /* The leader dropped that snapshot: start over with a Fetch. */
        r->fetching_snapshot = false;
        r->fetch_deadline = r->now + follower_timeout(r);
        return;
    }
    if (p->error_code != KERR_NONE) {
        conn_failed(r, v);
        return;
    }
    if (p->snapshot_id.end_offset != r->snap_id.end_offset || p->snapshot_id.epoch != r->snap_id.epoch ||
        p->position != r->snap_pos || p->size <= 0 || (r->snap_size >= 0 && p->size != r->snap_size) ||
        p->unaligned_records.len < 0 || p->unaligned_records.file ||
        (p->unaligned_records.len > 0 && !p->unaligned_records.p) ||
        r->snap_pos + p->unaligned_records.len > p->size) {
        protocol_error(r, from, "fetch snapshot response does not continue the download");
        conn_failed(r, v);
        return;
    }
    r->snap_size = p->size;
    if (p->unaligned_records.len > 0) {
        int rc = r->log.ops->snapshot_append(r->log.ctx, &r->snap_id, p->unaligned_records.p,
                                             (size_t)p->unaligned_records.len);
        if (rc != 0) {
            r->stats.log_errors++;
            conn_failed(r, v);
            return;
        }
        r->snap_pos += p->unaligned_records.len;
    }
    r->has_fetched = true;
    r->fetch_deadline = r->now + follower_timeout(r);
    if (r->snap_pos == r->snap_size) {
        struct raft_snapshot_id id = r->snap_id;
        r->fetching_snapshot = false;
        int rc = r->log.ops->snapshot_finish(r->log.ctx, &id);
        if (rc != 0) {
            r->stats.log_errors++;
            return;
        }
        install_snapshot(r, &id);
    }
}

/* ------------------------------------------------------------------ */
/* entry points                                                        */
/* ------------------------------------------------------------------ */

void raft_receive(struct raft *r, int32_t from, const struct raft_msg *m)
{
    if (!r->started)
        start(r);
    if (!m || !m->u.any) {
        protocol_error(r, from, "empty message");
        return;
    }
    trace(r, "recv %s from %d corr=%d%s", raft_msg_type_name(m->type), (int)from, (int)m->correlation_id,
          m->pre_vote ? " pre-vote" : "");
    switch (m->type) {
    case RAFT_MSG_VOTE_REQ: handle_vote_request(r, from, m); break;
    case RAFT_MSG_VOTE_RESP: handle_vote_response(r, from, m); break;
    case RAFT_MSG_BEGIN_EPOCH_REQ: handle_begin_request(r, from, m); break;
    case RAFT_MSG_BEGIN_EPOCH_RESP: handle_begin_response(r, from, m); break;
    case RAFT_MSG_END_EPOCH_REQ: handle_end_request(r, from, m); break;
    case RAFT_MSG_END_EPOCH_RESP: handle_end_response(r, from, m); break;
    case RAFT_MSG_FETCH_REQ: handle_fetch_request(r, from, m); break;
    case RAFT_MSG_FETCH_RESP: handle_fetch_response(r, from, m); break;
    case RAFT_MSG_FETCH_SNAPSHOT_REQ: handle_fsnap_request(r, from, m); break;
    case RAFT_MSG_FETCH_SNAPSHOT_RESP: handle_fsnap_response(r, from, m); break;
    default: protocol_error(r, from, "unknown message type"); return;
    }
    /* Kafka polls the state after every message: a follower sends its next
     * Fetch as soon as the previous one is answered, a new candidate asks
     * for votes at once. */
    poll_state(r);
}

static int64_t leader_append(struct raft *r, uint8_t *batches, size_t len)
{
    int rc = r->log.ops->append(r->log.ctx, batches, len);
    if (rc != 0) {
        r->stats.log_errors++;
        return RAFT_ERR_LOG;
    }
    emit_flush(r);
    parked_complete_all(r);
    return 0;
}

int64_t raft_propose(struct raft *r, int32_t epoch, const kbytes_t *values, int32_t n, int64_t timestamp_ms)
{
    if (r->role != RAFT_LEADER || epoch != r->epoch)
        return RAFT_ERR_NOT_LEADER;
    if (n <= 0 || !values)
        return RAFT_ERR_INVALID;
    int64_t base = log_end(r);
    buf_reset(&r->tmp);
    struct rb_batch_opts opts = RB_BATCH_OPTS_INIT;
    opts.partition_leader_epoch = r->epoch;
    struct rb_builder b;
    rb_builder_begin(&b, &r->tmp, base, timestamp_ms, &opts);
    for (int32_t i = 0; i < n; i++) {
        if (rb_builder_add(&b, timestamp_ms, KBYTES_NULL, values[i], NULL, 0) != 0) {
            rb_builder_abort(&b);
            return RAFT_ERR_INVALID;
        }
    }
    size_t len = 0;
    if (rb_builder_finish(&b, &len) != 0)
        return RAFT_ERR_INVALID;
    int64_t rc = leader_append(r, r->tmp.data + r->tmp.len - len, len);
    return rc < 0 ? rc : base;
}

int64_t raft_propose_batches(struct raft *r, int32_t epoch, uint8_t *batches, size_t len)
{
    if (r->role != RAFT_LEADER || epoch != r->epoch)
        return RAFT_ERR_NOT_LEADER;
    if (!batches || len == 0)
        return RAFT_ERR_INVALID;
    int64_t base = log_end(r), next = base;
    /* validate everything before stamping anything */
    for (size_t pos = 0; pos < len;) {
        size_t size = 0;
        struct rb_header h;
        if (rb_frame(batches + pos, len - pos, &size) != 0 || rb_parse_header(batches + pos, size, &h) != 0 ||
            h.last_offset_delta < 0)
            return RAFT_ERR_INVALID;
        pos += size;
    }
    for (size_t pos = 0; pos < len;) {
        size_t size = 0;
        struct rb_header h;
        rb_frame(batches + pos, len - pos, &size);
        rb_parse_header(batches + pos, size, &h);
        rb_set_base_offset(batches + pos, next);
        rb_set_partition_leader_epoch(batches + pos, r->epoch);
        next += (int64_t)h.last_offset_delta + 1;
        pos += size;
    }
    int64_t rc = leader_append(r, batches, len);
    return rc < 0 ? rc : base;
}

void raft_flushed(struct raft *r, int64_t end_offset)
{
    int64_t end = log_end(r);
    if (end_offset > end)
        end_offset = end;
    if (end_offset <= r->flushed)
        return;
    r->flushed = end_offset;
    if (r->role == RAFT_LEADER)
        maybe_update_leader_hw(r);
    if (r->started)
        poll_state(r);
}

int raft_resign(struct raft *r, int32_t epoch)
{
    if (r->role != RAFT_LEADER || epoch != r->epoch)
        return RAFT_ERR_NOT_LEADER;
    to_resigned(r);
    poll_state(r);
    return 0;
}

int raft_snapshot_id_at(const struct raft *r, int64_t end_offset, struct raft_snapshot_id *out)
{
    struct raft *m = (struct raft *)r; /* log ops take a non-const ctx */
    if (r->hw < 0 || end_offset > r->hw || end_offset <= 0 || end_offset < log_start(m) || end_offset > log_end(m))
        return RAFT_ERR_INVALID;
    out->end_offset = end_offset;
    out->epoch = end_offset == r->ec.base_offset ? r->ec.base_epoch : rec_epoch_at(&r->ec, end_offset - 1);
    return 0;
}

int raft_snapshot_done(struct raft *r, const struct raft_snapshot_id *id)
{
    struct raft_snapshot_id want;
    if (raft_snapshot_id_at(r, id->end_offset, &want) != 0 || want.epoch != id->epoch)
        return RAFT_ERR_INVALID;
    if (r->log.ops->snapshot_size(r->log.ctx, id) < 0)
        return RAFT_ERR_INVALID;
    if (id->end_offset <= log_start(r))
        return 0;
    int rc = r->log.ops->reset_start(r->log.ctx, id);
    if (rc != 0) {
        r->stats.log_errors++;
        return RAFT_ERR_LOG;
    }
    rec_trim_before(&r->ec, id->end_offset, id->epoch);
    trace(r, "log start moved to snapshot %" PRId64 "/%d", id->end_offset, (int)id->epoch);
    return 0;
}

/* ------------------------------------------------------------------ */
/* creation                                                            */
/* ------------------------------------------------------------------ */

void raft_config_defaults(struct raft_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->election_timeout_ms = 1000;
    cfg->fetch_timeout_ms = 2000;
    cfg->election_backoff_max_ms = 1000;
    cfg->request_timeout_ms = 2000;
    cfg->retry_backoff_ms = 20;
    cfg->fetch_max_wait_ms = 500;
    cfg->fetch_max_bytes = 8 * 1024 * 1024;
    cfg->random_seed = 1;
}

static void scan_batch(void *arg, int64_t base_offset, int64_t last_offset, int32_t epoch)
{
    struct raft *r = arg;
    (void)last_offset;
    if (!rec_assign(&r->ec, epoch, base_offset))
        r->stats.protocol_errors++; /* a log with epochs going backwards */
}

int raft_create(const struct raft_config *cfg, const quorum_state_data_t *persisted, struct raft **out)
{
    *out = NULL;
    if (!cfg || cfg->nvoters < 1 || cfg->nvoters > RAFT_MAX_VOTERS || !cfg->voters || !cfg->output ||
        !cfg->log.ops || cfg->node_id < 0 || cfg->election_timeout_ms <= 0 || cfg->fetch_timeout_ms <= 0 ||
        cfg->election_backoff_max_ms <= 0 || cfg->request_timeout_ms <= cfg->fetch_max_wait_ms ||
        cfg->retry_backoff_ms < 0 || cfg->fetch_max_wait_ms < 0 || cfg->fetch_max_bytes <= 0)
        return KERR_INVALID_CONFIG;
    for (int32_t i = 0; i < cfg->nvoters; i++) {
        if (cfg->voters[i] < 0)
            return KERR_INVALID_CONFIG;
        for (int32_t j = 0; j < i; j++)
            if (cfg->voters[i] == cfg->voters[j])
                return KERR_INVALID_CONFIG;
    }
    struct raft *r = xcalloc(1, sizeof *r);
    r->id = cfg->node_id;
    r->nvoters = cfg->nvoters;
    for (int32_t i = 0; i < cfg->nvoters; i++) {
        r->voters[i].id = cfg->voters[i];
        r->voters[i].end_offset = -1;
        r->is_voter |= cfg->voters[i] == cfg->node_id;
    }
    r->cluster_id = cfg->cluster_id ? xstrdup(cfg->cluster_id) : NULL;
    r->election_timeout_ms = cfg->election_timeout_ms;
    r->fetch_timeout_ms = cfg->fetch_timeout_ms;
    r->election_backoff_max_ms = cfg->election_backoff_max_ms;
    r->request_timeout_ms = cfg->request_timeout_ms;
    r->retry_backoff_ms = cfg->retry_backoff_ms;
    r->fetch_max_wait_ms = cfg->fetch_max_wait_ms;
    r->fetch_max_bytes = cfg->fetch_max_bytes;
    r->log = cfg->log;
    r->output = cfg->output;
    r->output_arg = cfg->output_arg;
    r->rng = cfg->random_seed * 0x9E3779B97F4A7C15ULL + (uint64_t)cfg->node_id * 0xBF58476D1CE4E5B9ULL + 1;
    if (r->rng == 0)
        r->rng = 1;
    r->next_corr = 1 + (int32_t)(rnd(r) % 1000000);
    r->hw = -1;
    arena_init(&r->ar);
    buf_init(&r->tmp);
    rec_init(&r->ec);

    /* epoch cache from the log (and the snapshot it starts from) */
    struct raft_snapshot_id snap;
    int64_t start = r->log.ops->start_offset(r->log.ctx);
    int32_t base_epoch = 0;
    if (start > 0) {
        /* A log that starts past 0 starts at its oldest snapshot, whose
         * epoch is the epoch below the log start. */
        if (!r->log.ops->oldest_snapshot(r->log.ctx, &snap) || snap.end_offset != start) {
            raft_destroy(r);
            return KERR_INVALID_CONFIG;
        }
        base_epoch = snap.epoch;
    }
    rec_clear(&r->ec, start, base_epoch);
    int rc = r->log.ops->scan(r->log.ctx, scan_batch, r);
    if (rc != 0) {
        raft_destroy(r);
        return rc;
    }
    /* What survived a restart is on disk. */
    r->flushed = r->log.ops->end_offset(r->log.ctx);

    /* Initial state from the persisted election state (Kafka's
     * QuorumState.initialize). */
    int32_t p_epoch = persisted ? persisted->leader_epoch : 0;
    int32_t p_leader = persisted ? persisted->leader_id : -1;
    int32_t p_voted = persisted ? persisted->voted_id : -1;
    if (p_epoch < 0)
        p_epoch = 0;
    r->leader_id = -1;
    r->voted_id = -1;
    r->role = RAFT_UNATTACHED;
    if (p_epoch < last_epoch(r)) {
        /* The state file is older than the log: trust the log's epoch, and
         * nothing else from the file. */
        r->epoch = last_epoch(r);
    } else if (p_leader == r->id && r->is_voter) {
        /* We were leader: come back resigned in that epoch, so we neither
         * vote in it nor lead it again (our unflushed tail may be gone, and
         * leading again could give an (offset, epoch) a second meaning). */
        r->epoch = p_epoch;
        r->leader_id = r->id;
        r->voted_id = p_voted;
        r->role = RAFT_RESIGNED;
        r->nsuccessors = 0;
        for (int32_t i = 0; i < r->nvoters; i++)
            r->voters[i].acked = r->voters[i].id == r->id;
    } else if (p_leader >= 0 && p_leader != r->id && find_voter(r, p_leader)) {
        /* A known leader comes before our own vote: a candidate that lost
         * to another leader in the same epoch keeps its vote for itself on
         * record, but must not stand again in that epoch (its log may hold
         * the winner's records of it, and its vote requests would be
         * invalid). */
        r->epoch = p_epoch;
        r->leader_id = p_leader;
        r->voted_id = p_voted;
        r->role = RAFT_FOLLOWER;
    } else if (p_voted == r->id && r->is_voter) {
        r->epoch = p_epoch;
        r->voted_id = r->id;
        r->role = RAFT_CANDIDATE;
        r->retries = 1;
        reset_votes(r);
    } else if (p_voted >= 0) {
        r->epoch = p_epoch;
        r->voted_id = p_voted;
    } else {
        r->epoch = p_epoch;
    }
    if (persisted) {
        r->persisted_valid = true;
        r->p_epoch = persisted->leader_epoch;
        r->p_leader = persisted->leader_id;
        r->p_voted = persisted->voted_id;
    }
    *out = r;
    return 0;
}

void raft_destroy(struct raft *r)
{
    if (!r)
        return;
    free(r->cluster_id);
    arena_free(&r->ar);
    buf_free(&r->tmp);
    rec_free(&r->ec);
    free(r);
}

/* ------------------------------------------------------------------ */
/* getters                                                             */
/* ------------------------------------------------------------------ */

enum raft_role raft_role(const struct raft *r) { return r->role; }
int32_t raft_epoch(const struct raft *r) { return r->epoch; }
int32_t raft_leader_id(const struct raft *r) { return r->leader_id; }
int32_t raft_voted_id(const struct raft *r) { return r->voted_id; }
int64_t raft_high_watermark(const struct raft *r) { return r->hw; }
bool raft_is_voter(const struct raft *r) { return r->is_voter; }
int32_t raft_node_id(const struct raft *r) { return r->id; }
const struct raft_stats *raft_get_stats(const struct raft *r) { return &r->stats; }

void raft_set_trace(struct raft *r, raft_trace_fn fn, void *arg)
{
    r->trace = fn;
    r->trace_arg = arg;
}

void raft_describe(const struct raft *r, struct raft_quorum_info *out)
{
    out->leader_id = r->leader_id;
    out->leader_epoch = r->epoch;
    out->high_watermark = r->hw;
    out->nvoters = 0;
    out->nobservers = 0;
    if (r->role != RAFT_LEADER)
        return;
    for (int32_t i = 0; i < r->nvoters && out->nvoters < out->max_voters; i++) {
        const struct rvoter *v = &r->voters[i];
        struct raft_replica_info *ri = &out->voters[out->nvoters++];
        ri->replica_id = v->id;
        if (v->id == r->id) {
            ri->log_end_offset = r->flushed;
            ri->last_fetch_ms = r->now;
            ri->last_caught_up_ms = r->now;
        } else {
            ri->log_end_offset = v->end_offset;
            ri->last_fetch_ms = v->last_fetch_ms;
            ri->last_caught_up_ms = v->last_caught_up_ms;
        }
    }
    for (int32_t i = 0; i < r->nobservers && out->nobservers < out->max_observers; i++) {
        struct raft_replica_info *ri = &out->observers[out->nobservers++];
        ri->replica_id = r->observers[i].id;
        ri->log_end_offset = r->observers[i].end_offset;
        ri->last_fetch_ms = r->observers[i].last_fetch_ms;
        ri->last_caught_up_ms = r->observers[i].last_caught_up_ms;
    }
}
