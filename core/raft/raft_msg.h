/* Wire form of Raft messages: the bodies of the Kafka requests and
 * responses a struct raft_msg carries, through the generated codecs.
 * The network layer adds and strips the Kafka request/response headers
 * (which carry the API key, version and correlation id). */
#ifndef SAMSA_RAFT_RAFT_MSG_H
#define SAMSA_RAFT_RAFT_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "proto/kcodec.h"
#include "raft/raft.h"

/* The Kafka API key of a message type (Vote 52, BeginQuorumEpoch 53,
 * EndQuorumEpoch 54, Fetch 1, FetchSnapshot 59). */
int16_t raft_msg_api_key(enum raft_msg_type t);

/* Appends msg's body, encoded at msg->version, to w. */
void raft_msg_encode(struct kwriter *w, const struct raft_msg *msg);

/* Decodes len bytes at p as the body of a message of that type and
 * version. The structs are allocated in arena a and strings / records
 * point into p: both must outlive the use of *msg. Bounds-checked: 0, or
 * -1 for truncated or malformed input or a version outside what the codec
 * knows. correlation_id and pre_vote are copied into the envelope. */
int raft_msg_decode(struct raft_msg *msg, enum raft_msg_type type, int16_t version, int32_t correlation_id,
                    bool pre_vote, const uint8_t *p, size_t len, struct arena *a);

#endif
