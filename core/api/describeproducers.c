/* DescribeProducers (v0): the producer state of partitions this broker
 * leads, as Kafka's ReplicaManager.activeProducerState: each producer id
 * with its epoch, last sequence and timestamp, coordinator epoch and the
 * first offset of its open transaction (-1: none).
 *
 * Per partition: TOPIC_AUTHORIZATION_FAILED without READ on the topic,
 * UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER. */
#include <string.h>

#include "api/dispatch.h"
#include "api/handlers.h"
#include "api/request.h"
#include "auth/authz.h"
#include "broker.h"
#include "controller/controller.h"
#include "log/plog.h"
#include "log/producer_state.h"
#include "proto/kerr.h"
#include "replica/partition.h"

struct collect {
    struct arena *ar;
    describe_producers_response_partition_response_t *out;
    int32_t cap;
};

/* Grows the answer's array in the arena (doubling: at most twice the
 * memory, no second pass under the log's lock). */
static void add_producer(void *ctx, const struct ps_entry *e)
{
    struct collect *c = ctx;
    if (c->out->active_producers.n == c->cap) {
        int32_t cap = c->cap ? c->cap * 2 : 16;
        describe_producers_response_producer_state_t *v =
            describe_producers_response_producer_state_new_array(c->ar, cap);
        if (c->out->active_producers.n)
            memcpy(v, c->out->active_producers.a, (size_t)c->out->active_producers.n * sizeof *v);
        c->out->active_producers.a = v;
        c->cap = cap;
    }
    describe_producers_response_producer_state_t *s = &c->out->active_producers.a[c->out->active_producers.n++];
    s->producer_id = e->producer_id;
    s->producer_epoch = e->epoch;
    s->last_sequence = e->nbatches ? e->batches[e->nbatches - 1].last_seq : -1;
    s->last_timestamp = e->last_timestamp;
    s->coordinator_epoch = e->coordinator_epoch;
    s->current_txn_start_offset = e->current_txn_first_offset;
}

static int16_t describe_partition(struct request *req, const struct mi_topic *t, int32_t index,
                                  describe_producers_response_partition_response_t *out)
{
    struct partition *p;
    int16_t err = preg_get_led(req->broker->partitions, req->broker->node_id, t, index, &p);
    if (err)
        return err;
    struct collect c = {&req->arena, out, 0};
    out->active_producers.a = NULL;
    out->active_producers.n = 0;
    plog_producers_foreach(p->log, add_producer, &c);
    partition_put(p);
    return 0;
}

void api_handle_describe_producers(struct request *req)
{
    const describe_producers_request_t *q = req->body;
    struct arena *ar = &req->arena;
    describe_producers_response_t resp;
    describe_producers_response_init(&resp);
    struct mimage *img = controller_image(req->broker->controller);
    resp.topics.a = describe_producers_response_topic_response_new_array(ar, q->topics.n);
    resp.topics.n = q->topics.n;
    for (int32_t i = 0; i < q->topics.n; i++) {
        const describe_producers_request_topic_request_t *rt = &q->topics.a[i];
        describe_producers_response_topic_response_t *ot = &resp.topics.a[i];
        ot->name = rt->name;
        ot->partitions.a = describe_producers_response_partition_response_new_array(ar, rt->partition_indexes.n);
        ot->partitions.n = rt->partition_indexes.n;
        bool allowed = authz_allowed(req, ACL_OP_READ, ACL_RES_TOPIC, rt->name);
        const struct mi_topic *t = mimage_topic(img, rt->name);
        for (int32_t j = 0; j < rt->partition_indexes.n; j++) {
            describe_producers_response_partition_response_t *op = &ot->partitions.a[j];
            op->partition_index = rt->partition_indexes.a[j];
            if (!allowed)
                op->error_code = KERR_TOPIC_AUTHORIZATION_FAILED;
            else if (!t)
                op->error_code = KERR_UNKNOWN_TOPIC_OR_PARTITION;
            else
                op->error_code = describe_partition(req, t, op->partition_index, op);
        }
    }
    mimage_release(img);
    req_respond(req, &resp);
}
