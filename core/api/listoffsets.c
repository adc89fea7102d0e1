/* ListOffsets: earliest, latest, max-timestamp and by-timestamp lookups. */
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

/* Kafka's special timestamps (ListOffsetsRequest). */
#define LATEST_TIMESTAMP (-1)
#define EARLIEST_TIMESTAMP (-2)
#define MAX_TIMESTAMP (-3)
#define EARLIEST_LOCAL_TIMESTAMP (-4)
#define LATEST_TIERED_TIMESTAMP (-5)

static int16_t lookup(struct request *req, const struct mi_topic *t, int8_t isolation,
                      const list_offsets_request_list_offsets_partition_t *rp,
                      list_offsets_response_list_offsets_partition_response_t *out)
{
    struct partition *p;
    int16_t err = preg_get_led(req->broker->partitions, req->broker->node_id, t, rp->partition_index, &p);
    if (err)
        return err;
    int32_t epoch = atomic_load(&p->leader_epoch);
    /* CurrentLeaderEpoch is v4+; older requests decode it as -1 */
    err = repl_epoch_error(rp->current_leader_epoch, epoch);
    if (err)
        goto done;
    int64_t hw = atomic_load(&p->high_watermark);
    /* Kafka's fetchOffsetForTimestamp: read_committed sees up to the last
     * stable offset (LATEST answers it; timestamp lookups at or past it
     * find nothing), read_uncommitted up to the high watermark. */
    int64_t visible_end = isolation == 1 ? partition_last_stable_offset(p) : hw;
    int64_t offset = -1, ts = -1;
    switch (rp->timestamp) {
    case EARLIEST_TIMESTAMP:
    case EARLIEST_LOCAL_TIMESTAMP:
        offset = plog_log_start_offset(p->log);
        break;
    case LATEST_TIMESTAMP:
        offset = visible_end;
        break;
    case LATEST_TIERED_TIMESTAMP:
        offset = -1; /* nothing is tiered */
        break;
    case MAX_TIMESTAMP:
        err = (int16_t)plog_max_timestamp(p->log, &offset, &ts);
        if (!err && offset >= visible_end)
            offset = ts = -1;
        break;
    default:
        if (rp->timestamp < 0) {
            err = KERR_INVALID_REQUEST;
            break;
        }
        err = (int16_t)plog_offset_for_timestamp(p->log, rp->timestamp, &offset, &ts);
        if (!err && offset >= visible_end)
            offset = ts = -1;
        break;
    }
    if (err)
        goto done;
    out->offset = offset;
    out->timestamp = rp->timestamp >= 0 || rp->timestamp == MAX_TIMESTAMP ? ts : -1;
    out->leader_epoch = offset >= 0 ? epoch : -1;
    if (req->api_version == 0) {
        /* v0 answers a list of offsets; clients ask for one. */
        int32_t n = offset >= 0 && rp->max_num_offsets > 0 ? 1 : 0;
        out->old_style_offsets.a = arena_alloc(&req->arena, sizeof(int64_t));
        out->old_style_offsets.n = n;
        if (n)
            out->old_style_offsets.a[0] = offset;
    }
done:
    partition_put(p);
    return err;
}

void api_handle_list_offsets(struct request *req)
{
    const list_offsets_request_t *q = req->body;
    struct arena *ar = &req->arena;
    list_offsets_response_t resp;
    list_offsets_response_init(&resp);
    int8_t isolation = req->api_version >= 2 ? q->isolation_level : 0;
    if (isolation != 0 && isolation != 1) {
        req_close(req, "ListOffsets with an unknown isolation level");
        return;
    }
    struct mimage *img = controller_image(req->broker->controller);
    resp.topics.a = list_offsets_response_list_offsets_topic_response_new_array(ar, q->topics.n);
    resp.topics.n = q->topics.n;
    for (int32_t i = 0; i < q->topics.n; i++) {
        const list_offsets_request_list_offsets_topic_t *rt = &q->topics.a[i];
        list_offsets_response_list_offsets_topic_response_t *ot = &resp.topics.a[i];
        ot->name = rt->name;
        ot->partitions.a = list_offsets_response_list_offsets_partition_response_new_array(ar, rt->partitions.n);
        ot->partitions.n = rt->partitions.n;
        const struct mi_topic *t = mimage_topic(img, rt->name);
        bool allowed = authz_allowed(req, ACL_OP_DESCRIBE, ACL_RES_TOPIC, rt->name);
        for (int32_t j = 0; j < rt->partitions.n; j++) {
            const list_offsets_request_list_offsets_partition_t *rp = &rt->partitions.a[j];
            list_offsets_response_list_offsets_partition_response_t *op = &ot->partitions.a[j];
            op->partition_index = rp->partition_index;
            if (!allowed)
                op->error_code = KERR_TOPIC_AUTHORIZATION_FAILED;
            else if (!t)
                op->error_code = KERR_UNKNOWN_TOPIC_OR_PARTITION;
            else
                op->error_code = lookup(req, t, isolation, rp, op);
            if (op->error_code) {
                op->offset = -1;
                op->timestamp = -1;
                op->leader_epoch = -1;
            }
        }
    }
    mimage_release(img);
    req_respond(req, &resp);
}
