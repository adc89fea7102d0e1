/* Fuzz target: the Raft messages a controller listener and the quorum's
 * outbound connections decode (raft_msg_decode): Vote, BeginQuorumEpoch,
 * EndQuorumEpoch, Fetch and FetchSnapshot of __cluster_metadata, as
 * requests from any peer and as responses to this node's requests, at
 * every version byte the input picks (outside a codec's range must be
 * refused). Input: type byte, version byte, flags byte, then the body.
 * A decoded message must re-encode. Nothing may crash, hang or read out
 * of bounds. (The other controller-listener APIs, BrokerRegistration,
 * BrokerHeartbeat, AlterPartition, AllocateProducerIds, UpdateFeatures,
 * DescribeQuorum..., go through the generated decoders: request_fuzz.) */
#include <stddef.h>
#include <stdint.h>

#include "proto/kcodec.h"
#include "raft/raft_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    enum raft_msg_type type = (enum raft_msg_type)(1 + data[0] % 10);
    int16_t version = (int16_t)(int8_t)data[1];
    bool pre_vote = data[2] & 1;
    struct arena ar = ARENA_INIT;
    struct raft_msg m;
    if (raft_msg_decode(&m, type, version, 7, pre_vote, data + 3, size - 3, &ar) == 0) {
        struct kwriter w;
        kw_init(&w);
        raft_msg_encode(&w, &m);
        kw_free(&w);
    }
    arena_free(&ar);
    return 0;
}
