/* DeleteRecords (v0-2): moves a partition's log start offset forward, as
 * Kafka's ReplicaManager.deleteRecords. Records below it are no longer
 * readable at once (Fetch answers OFFSET_OUT_OF_RANGE, ListOffsets
 * EARLIEST the new start); whole segments below it go at the next
 * retention pass.
 *
 * Per partition: TOPIC_AUTHORIZATION_FAILED without DELETE on the topic,
 * UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, INVALID_TOPIC_EXCEPTION
 * for an internal topic, POLICY_VIOLATION when cleanup.policy lacks
 * delete, OFFSET_OUT_OF_RANGE for an offset above the high watermark or
 * negative (-1 means the high watermark). With one replica the new low
 * watermark holds as soon as the leader moved it, so the answer never
 * waits for timeout_ms (Kafka's DelayedDeleteRecords completes at once). */
#include <string.h>

#include "api/dispatch.h"
#include "api/handlers.h"
#include "api/request.h"
#include "auth/authz.h"
#include "broker.h"
#include "controller/controller.h"
#include "log/plog.h"
#include "proto/kerr.h"
#include "replica/partition.h"
#include "topic_config.h"

/* DeleteRecordsRequest.HIGH_WATERMARK */
#define DELETE_TO_HIGH_WATERMARK (-1)

static int16_t delete_partition(struct request *req, const struct mi_topic *t, int32_t index, int64_t offset,
                                int64_t *low_watermark)
{
    const struct mi_partition *mp = mi_topic_partition(t, index);
    if (!mp)
        return KERR_UNKNOWN_TOPIC_OR_PARTITION;
    if (mp->leader != req->broker->node_id)
        return KERR_NOT_LEADER_OR_FOLLOWER;
    if (t->internal)
        return KERR_INVALID_TOPIC_EXCEPTION;
    if (t->cfg && !t->cfg->cleanup_delete)
        return KERR_POLICY_VIOLATION;
    struct partition *p = preg_get(req->broker->partitions, &t->id, index);
    if (!p)
        return preg_unavailable_error(req->broker->partitions, &t->id, index);
    int64_t hw = atomic_load(&p->high_watermark);
    int64_t target = offset == DELETE_TO_HIGH_WATERMARK ? hw : offset;
    int16_t err;
    if (target < 0 || target > hw)
        err = KERR_OFFSET_OUT_OF_RANGE;
    else
        err = (int16_t)plog_delete_records(p->log, target, low_watermark);
    partition_put(p);
    return err;
}

void api_handle_delete_records(struct request *req)
{
    const delete_records_request_t *q = req->body;
    struct arena *ar = &req->arena;
    delete_records_response_t resp;
    delete_records_response_init(&resp);
    struct mimage *img = controller_image(req->broker->controller);
    resp.topics.a = delete_records_response_delete_records_topic_result_new_array(ar, q->topics.n);
    resp.topics.n = q->topics.n;
    for (int32_t i = 0; i < q->topics.n; i++) {
        const delete_records_request_delete_records_topic_t *rt = &q->topics.a[i];
        delete_records_response_delete_records_topic_result_t *ot = &resp.topics.a[i];
        ot->name = rt->name;
        ot->partitions.a = delete_records_response_delete_records_partition_result_new_array(ar, rt->partitions.n);
        ot->partitions.n = rt->partitions.n;
        bool allowed = authz_allowed(req, ACL_OP_DELETE, ACL_RES_TOPIC, rt->name);
        const struct mi_topic *t = mimage_topic(img, rt->name);
        for (int32_t j = 0; j < rt->partitions.n; j++) {
            const delete_records_request_delete_records_partition_t *rp = &rt->partitions.a[j];
            delete_records_response_delete_records_partition_result_t *op = &ot->partitions.a[j];
            op->partition_index = rp->partition_index;
            op->low_watermark = -1;
            if (!allowed)
                op->error_code = KERR_TOPIC_AUTHORIZATION_FAILED;
            else if (!t)
                op->error_code = KERR_UNKNOWN_TOPIC_OR_PARTITION;
            else
                op->error_code = delete_partition(req, t, rp->partition_index, rp->offset, &op->low_watermark);
            if (op->error_code)
                op->low_watermark = -1;
        }
    }
    mimage_release(img);
    req_respond(req, &resp);
}
