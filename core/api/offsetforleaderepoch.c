/* OffsetForLeaderEpoch (v0-v4): where a leader epoch ended on the
 * partition's leader, from its leader-epoch cache. Consumers ask it after
 * a leader change to find out whether the log they read was truncated
 * (KIP-320: the Java client, franz-go, librdkafka 2.1+); samsa's own
 * followers learn the same from Fetch's diverging epoch instead.
 *
 * As Kafka's KafkaApis and Partition.lastOffsetForLeaderEpoch: CLUSTER_ACTION
 * on the cluster, or else DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED);
 * per partition UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER (the
 * leader answers, whoever asks), FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH
 * for a current leader epoch below / above the partition's (v2+), and an
 * unknown epoch as -1 / -1 without an error. */
#include "api/dispatch.h"
#include "api/handlers.h"
#include "api/request.h"
#include "auth/authz.h"
#include "broker.h"
#include "controller/controller.h"
#include "log/plog.h"
#include "proto/kerr.h"
#include "replica/partition.h"

static int16_t end_offset(struct request *req, const struct mi_topic *t,
                          const offset_for_leader_epoch_request_offset_for_leader_partition_t *rp,
                          offset_for_leader_epoch_response_epoch_end_offset_t *out)
{
    struct partition *p;
    int16_t err = preg_get_led(req->broker->partitions, req->broker->node_id, t, rp->partition, &p);
    if (err)
        return err;
    /* CurrentLeaderEpoch is v2+; older requests decode it as -1 */
    err = repl_epoch_error(rp->current_leader_epoch, atomic_load(&p->leader_epoch));
    if (!err)
        plog_offset_for_leader_epoch(p->log, rp->leader_epoch, &out->leader_epoch, &out->end_offset);
    partition_put(p);
    return err;
}

void api_handle_offset_for_leader_epoch(struct request *req)
{
    const offset_for_leader_epoch_request_t *q = req->body;
    struct arena *ar = &req->arena;
    offset_for_leader_epoch_response_t resp;
    offset_for_leader_epoch_response_init(&resp);
    bool cluster_action = authz_allowed(req, ACL_OP_CLUSTER_ACTION, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME);
    struct mimage *img = controller_image(req->broker->controller);
    resp.topics.a = offset_for_leader_epoch_response_offset_for_leader_topic_result_new_array(ar, q->topics.n);
    resp.topics.n = q->topics.n;
    for (int32_t i = 0; i < q->topics.n; i++) {
        const offset_for_leader_epoch_request_offset_for_leader_topic_t *rt = &q->topics.a[i];
        offset_for_leader_epoch_response_offset_for_leader_topic_result_t *ot = &resp.topics.a[i];
        ot->topic = rt->topic;
        ot->partitions.a = offset_for_leader_epoch_response_epoch_end_offset_new_array(ar, rt->partitions.n);
        ot->partitions.n = rt->partitions.n;
        bool allowed = cluster_action || authz_allowed(req, ACL_OP_DESCRIBE, ACL_RES_TOPIC, rt->topic);
        const struct mi_topic *t = allowed ? mimage_topic(img, rt->topic) : NULL;
        for (int32_t j = 0; j < rt->partitions.n; j++) {
            offset_for_leader_epoch_response_epoch_end_offset_t *op = &ot->partitions.a[j];
            op->partition = rt->partitions.a[j].partition;
            op->leader_epoch = -1;
            op->end_offset = -1;
            if (!allowed)
                op->error_code = KERR_TOPIC_AUTHORIZATION_FAILED;
            else if (!t)
                op->error_code = KERR_UNKNOWN_TOPIC_OR_PARTITION;
            else
                op->error_code = end_offset(req, t, &rt->partitions.a[j], op);
        }
    }
    mimage_release(img);
    req_respond(req, &resp);
}
