#include "raft/raft_msg.h"

int16_t raft_msg_api_key(enum raft_msg_type t)
{
    switch (t) {
    case RAFT_MSG_VOTE_REQ:
    case RAFT_MSG_VOTE_RESP: return VOTE_REQUEST_API_KEY;
    case RAFT_MSG_BEGIN_EPOCH_REQ:
    case RAFT_MSG_BEGIN_EPOCH_RESP: return BEGIN_QUORUM_EPOCH_REQUEST_API_KEY;
    case RAFT_MSG_END_EPOCH_REQ:
    case RAFT_MSG_END_EPOCH_RESP: return END_QUORUM_EPOCH_REQUEST_API_KEY;
    case RAFT_MSG_FETCH_REQ:
    case RAFT_MSG_FETCH_RESP: return FETCH_REQUEST_API_KEY;
    case RAFT_MSG_FETCH_SNAPSHOT_REQ:
    case RAFT_MSG_FETCH_SNAPSHOT_RESP: return FETCH_SNAPSHOT_REQUEST_API_KEY;
    }
    return -1;
}

void raft_msg_encode(struct kwriter *w, const struct raft_msg *m)
{
    int16_t v = m->version;
    switch (m->type) {
    case RAFT_MSG_VOTE_REQ: vote_request_encode(w, v, m->u.vote_req); break;
    case RAFT_MSG_VOTE_RESP: vote_response_encode(w, v, m->u.vote_resp); break;
    case RAFT_MSG_BEGIN_EPOCH_REQ: begin_quorum_epoch_request_encode(w, v, m->u.begin_req); break;
    case RAFT_MSG_BEGIN_EPOCH_RESP: begin_quorum_epoch_response_encode(w, v, m->u.begin_resp); break;
    case RAFT_MSG_END_EPOCH_REQ: end_quorum_epoch_request_encode(w, v, m->u.end_req); break;
    case RAFT_MSG_END_EPOCH_RESP: end_quorum_epoch_response_encode(w, v, m->u.end_resp); break;
    case RAFT_MSG_FETCH_REQ: fetch_request_encode(w, v, m->u.fetch_req); break;
    case RAFT_MSG_FETCH_RESP: fetch_response_encode(w, v, m->u.fetch_resp); break;
    case RAFT_MSG_FETCH_SNAPSHOT_REQ: fetch_snapshot_request_encode(w, v, m->u.fsnap_req); break;
    case RAFT_MSG_FETCH_SNAPSHOT_RESP: fetch_snapshot_response_encode(w, v, m->u.fsnap_resp); break;
    }
}

/* Decodes into a struct allocated in the arena: each generated decoder
 * initialises its struct and bounds-checks every read. */
#define DECODE(T, field, MINV, MAXV)                                       \
    do {                                                                   \
        if (version < (MINV) || version > (MAXV))                          \
            return -1;                                                     \
        T *s = arena_alloc(a, sizeof *s);                                  \
        if (T##_decode_fn(&r, version, s) != 0 || r.err)                   \
            return -1;                                                     \
        msg->u.field = s;                                                  \
    } while (0)

#define vote_request_t_decode_fn vote_request_decode
#define vote_response_t_decode_fn vote_response_decode
#define begin_quorum_epoch_request_t_decode_fn begin_quorum_epoch_request_decode
#define begin_quorum_epoch_response_t_decode_fn begin_quorum_epoch_response_decode
#define end_quorum_epoch_request_t_decode_fn end_quorum_epoch_request_decode
#define end_quorum_epoch_response_t_decode_fn end_quorum_epoch_response_decode
#define fetch_request_t_decode_fn fetch_request_decode
#define fetch_response_t_decode_fn fetch_response_decode
#define fetch_snapshot_request_t_decode_fn fetch_snapshot_request_decode
#define fetch_snapshot_response_t_decode_fn fetch_snapshot_response_decode

int raft_msg_decode(struct raft_msg *msg, enum raft_msg_type type, int16_t version, int32_t correlation_id,
                    bool pre_vote, const uint8_t *p, size_t len, struct arena *a)
{
    struct kreader r;
    kr_init(&r, p, len, a);
    msg->type = type;
    msg->version = version;
    msg->correlation_id = correlation_id;
    msg->pre_vote = pre_vote;
    msg->u.any = NULL;
    switch (type) {
    case RAFT_MSG_VOTE_REQ:
        DECODE(vote_request_t, vote_req, VOTE_REQUEST_MIN_VERSION, VOTE_REQUEST_MAX_VERSION);
        break;
    case RAFT_MSG_VOTE_RESP:
        DECODE(vote_response_t, vote_resp, VOTE_RESPONSE_MIN_VERSION, VOTE_RESPONSE_MAX_VERSION);
        break;
    case RAFT_MSG_BEGIN_EPOCH_REQ:
        DECODE(begin_quorum_epoch_request_t, begin_req, BEGIN_QUORUM_EPOCH_REQUEST_MIN_VERSION,
               BEGIN_QUORUM_EPOCH_REQUEST_MAX_VERSION);
        break;
    case RAFT_MSG_BEGIN_EPOCH_RESP:
        DECODE(begin_quorum_epoch_response_t, begin_resp, BEGIN_QUORUM_EPOCH_RESPONSE_MIN_VERSION,
               BEGIN_QUORUM_EPOCH_RESPONSE_MAX_VERSION);
        break;
    case RAFT_MSG_END_EPOCH_REQ:
        DECODE(end_quorum_epoch_request_t, end_req, END_QUORUM_EPOCH_REQUEST_MIN_VERSION,
               END_QUORUM_EPOCH_REQUEST_MAX_VERSION);
        break;
    case RAFT_MSG_END_EPOCH_RESP:
        DECODE(end_quorum_epoch_response_t, end_resp, END_QUORUM_EPOCH_RESPONSE_MIN_VERSION,
               END_QUORUM_EPOCH_RESPONSE_MAX_VERSION);
        break;
    case RAFT_MSG_FETCH_REQ:
        DECODE(fetch_request_t, fetch_req, FETCH_REQUEST_MIN_VERSION, FETCH_REQUEST_MAX_VERSION);
        break;
    case RAFT_MSG_FETCH_RESP:
        DECODE(fetch_response_t, fetch_resp, FETCH_RESPONSE_MIN_VERSION, FETCH_RESPONSE_MAX_VERSION);
        break;
    case RAFT_MSG_FETCH_SNAPSHOT_REQ:
        DECODE(fetch_snapshot_request_t, fsnap_req, FETCH_SNAPSHOT_REQUEST_MIN_VERSION,
               FETCH_SNAPSHOT_REQUEST_MAX_VERSION);
        break;
    case RAFT_MSG_FETCH_SNAPSHOT_RESP:
        DECODE(fetch_snapshot_response_t, fsnap_resp, FETCH_SNAPSHOT_RESPONSE_MIN_VERSION,
               FETCH_SNAPSHOT_RESPONSE_MAX_VERSION);
        break;
    default:
        return -1;
    }
    return 0;
}
