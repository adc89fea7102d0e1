/* Produce: validate each partition's batches as Kafka's broker does, then
 * append them under the partition's lock with offsets assigned. The
 * batches are written exactly as received, but for baseOffset and the
 * partition leader epoch (outside the CRC) and, for LogAppendTime topics,
 * the timestamps (with the CRC recomputed). */
#include <stdio.h>
#include <string.h>

#include "api/dispatch.h"
#include "api/handlers.h"
#include "api/request.h"
#include "auth/authz.h"
#include "broker.h"
#include "config.h"
#include "controller/controller.h"
#include "log/plog.h"
#include "net/park.h"
#include "api/produce_codec.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "replica/partition.h"
#include "topic_config.h"
#include "util/clock.h"
#include "util/slog.h"

static void set_record_error(struct request *req, produce_response_partition_produce_response_t *rp,
                             const struct rb_validate_result *vr)
{
    if (req->api_version < 8)
        return;
    rp->error_message = kstr_arena(&req->arena, vr->reason);
    if (vr->error_record_index >= 0) {
        rp->record_errors.a = produce_response_batch_index_and_error_message_new_array(&req->arena, 1);
        rp->record_errors.n = 1;
        rp->record_errors.a[0].batch_index = vr->error_record_index;
        rp->record_errors.a[0].batch_index_error_message = rp->error_message;
    }
}

/* Durable acks (flush.messages=1): the records are appended at once, but
 * the answer waits until the log manager's flusher has fsynced them
 * (partition_ack_wait). The request parks (net/park.h) on the
 * partitions' keys like a delayed Fetch; the flusher notifies a
 * partition's key after each fsync and the parked request checks again. The worker never blocks on
 * an fsync, and one fsync acknowledges every append before it (group
 * commit). Past the request's timeout the partition answers
 * REQUEST_TIMED_OUT, as Kafka's DelayedProduce. */
struct ack_pending {
    struct partition *p; /* reference, NULL once answered */
    int64_t last_offset;
    produce_response_partition_produce_response_t *rp;
    int32_t epoch;       /* leader epoch of the append */
    bool all;            /* acks=all: wait for the high watermark */
};

static enum ack_state ack_check(struct partition *p, int64_t last_offset, int32_t epoch, bool all, int16_t *err)
{
    return all ? partition_ack_wait_all(p, last_offset, epoch, err) : partition_ack_wait(p, last_offset, err);
}

struct ack_wait {
    struct parked pk; /* first */
    struct request *req;
    produce_response_t *resp; /* in req->arena */
    struct ack_pending *pending;
    int32_t n, cap;
};

static void ack_fail(produce_response_partition_produce_response_t *rp, int16_t err)
{
    rp->error_code = err;
    rp->base_offset = -1;
    rp->log_append_time_ms = -1;
    rp->log_start_offset = -1;
}

static bool ack_try_complete(struct parked *pk, bool expired)
{
    struct ack_wait *aw = (struct ack_wait *)pk;
    for (int32_t i = 0; i < aw->n; i++) {
        struct ack_pending *a = &aw->pending[i];
        if (!a->p)
            continue;
        int16_t err = 0;
        enum ack_state st = ack_check(a->p, a->last_offset, a->epoch, a->all, &err);
        if (st == ACK_WAIT && !expired)
            return false;
        if (st != ACK_READY)
            ack_fail(a->rp, st == ACK_WAIT ? KERR_REQUEST_TIMED_OUT : err);
        partition_put(a->p);
        a->p = NULL;
    }
    req_respond(aw->req, aw->resp);
    return true;
}

static void ack_cancel(struct request *req)
{
    struct ack_wait *aw = req->handler_state;
    park_stop(&aw->pk);
    for (int32_t i = 0; i < aw->n; i++)
        if (aw->pending[i].p) {
            partition_put(aw->pending[i].p);
            aw->pending[i].p = NULL;
        }
}

/* Keeps p's reference for the wait. */
static void ack_add(struct request *req, struct ack_wait **awp, struct partition *p, int64_t last_offset,
                    int32_t epoch, bool all, produce_response_partition_produce_response_t *rp)
{
    struct ack_wait *aw = *awp;
    if (!aw) {
        aw = *awp = arena_alloc(&req->arena, sizeof *aw);
        aw->req = req;
    }
    if (aw->n == aw->cap) {
        int32_t cap = aw->cap ? aw->cap * 2 : 8;
        struct ack_pending *v = arena_alloc(&req->arena, (size_t)cap * sizeof *v);
        if (aw->n)
            memcpy(v, aw->pending, (size_t)aw->n * sizeof *v);
        aw->pending = v;
        aw->cap = cap;
    }
    aw->pending[aw->n++] = (struct ack_pending){p, last_offset, rp, epoch, all};
}

static int16_t produce_partition(struct request *req, const struct mimage *img, const struct mi_topic *t,
                                 kstr_t topic, int16_t acks,
                                 const produce_request_partition_produce_data_t *pd,
                                 produce_response_partition_produce_response_t *rp, struct ack_wait **aw)
{
    if (!authz_allowed(req, ACL_OP_WRITE, ACL_RES_TOPIC, topic))
        return KERR_TOPIC_AUTHORIZATION_FAILED;
    if (!t)
        return KERR_UNKNOWN_TOPIC_OR_PARTITION;
    const struct mi_partition *mp = mi_topic_partition(t, pd->index);
    if (!mp)
        return KERR_UNKNOWN_TOPIC_OR_PARTITION;
    if (mp->leader != req->broker->node_id)
        return KERR_NOT_LEADER_OR_FOLLOWER;
    const struct topic_config *tc = t->cfg;
    if (acks == -1 && mp->nisr < tc->min_insync_replicas)
        return KERR_NOT_ENOUGH_REPLICAS;
    if (pd->records.len <= 0) {
        /* Kafka appends nothing and answers success for an empty set. */
        return pd->records.len < 0 ? KERR_INVALID_RECORD : 0;
    }
    if (pd->records.len > tc->segment_bytes) {
        rp->error_message = KSTR_LIT("The request included message batch larger than the configured segment size on the server.");
        return KERR_RECORD_LIST_TOO_LARGE;
    }

    /* Compressed batches are decompressed by a codec plugin to be
     * validated, and rebuilt when the topic's compression.type differs. */
    struct produce_codec pc;
    produce_codec_init(&pc, req->broker->plugins, tc, pd->records.p, (size_t)pd->records.len);
    struct rb_validate_opts opts = {
        .max_message_bytes = tc->max_message_bytes,
        .compacted = tc->cleanup_compact,
        .timestamp_type = tc->message_timestamp_log_append ? RB_LOG_APPEND_TIME : RB_CREATE_TIME,
        .timestamp_before_max_ms = tc->message_timestamp_before_max_ms,
        .timestamp_after_max_ms = tc->message_timestamp_after_max_ms,
        .now_ms = clock_wall_ms(),
        .decompress = produce_codec_decompress,
        .decompress_ctx = &pc,
    };
    struct rb_validate_result vr;
    int err = rb_validate_produce(pd->records.p, (size_t)pd->records.len, req->api_version, &opts, &vr);
    /* The frame is ours: stamping happens in place, no copy. */
    uint8_t *batches = (uint8_t *)pd->records.p;
    size_t batches_len = vr.valid_bytes;
    if (!err) {
        err = produce_codec_apply(&pc, &batches, &batches_len, &vr, vr.reason, sizeof vr.reason);
        if (err)
            vr.error_record_index = -1;
    }
    if (err) {
        slog_info("produce from %s to %.*s-%d refused: %s (%s)", req_peer(req), topic.len, topic.p, pd->index,
                  kerr_name((int16_t)err), vr.reason);
        set_record_error(req, rp, &vr);
        produce_codec_free(&pc);
        return (int16_t)err;
    }
    /* A rebuilt batch already carries the right maxTimestamp. */
    if (!produce_codec_rebuilt(&pc) && vr.max_timestamp_stale && !tc->message_timestamp_log_append)
        rb_set_max_timestamp_and_type(batches, batches_len, RB_CREATE_TIME, vr.max_timestamp);

    struct partition *p = preg_get(req->broker->partitions, &t->id, pd->index);
    if (!p) {
        produce_codec_free(&pc);
        return preg_unavailable_error(req->broker->partitions, &t->id, pd->index);
    }
    struct plog_append_result res;
    int32_t epoch = atomic_load(&p->leader_epoch);
    err = partition_append(p, batches, batches_len, tc->message_timestamp_log_append, &res);
    produce_codec_free(&pc);
    /* acks=0 never hears back; acks=all waits for the ISR (the high
     * watermark); a durable-ack partition may make the answer wait for
     * the flusher (see ack_wait). */
    int16_t ack_err = 0;
    enum ack_state st = err || acks == 0 ? ACK_READY : ack_check(p, res.last_offset, epoch, acks == -1, &ack_err);
    if (st == ACK_WAIT)
        ack_add(req, aw, p, res.last_offset, epoch, acks == -1, rp);
    else
        partition_put(p);
    if (err)
        return (int16_t)err;
    if (st == ACK_FAILED)
        return ack_err;
    rp->base_offset = res.base_offset;
    rp->log_append_time_ms = res.log_append_time;
    rp->log_start_offset = res.log_start_offset;
    (void)img;
    return 0;
}

/* Kafka's ProduceRequest.hasTransactionalRecords: the first batch of a
 * partition's records has the transactional bit (v3+ carries one batch a
 * partition; a malformed one is refused later by validation). */
static bool has_transactional_records(const produce_request_t *q)
{
    for (int32_t i = 0; i < q->topic_data.n; i++) {
        const produce_request_topic_produce_data_t *td = &q->topic_data.a[i];
        for (int32_t j = 0; j < td->partition_data.n; j++) {
            krecords_t r = td->partition_data.a[j].records;
            struct rb_header h;
            if (r.p && r.len >= RB_HEADER_SIZE && rb_parse_header(r.p, (size_t)r.len, &h) == 0 &&
                rb_is_transactional(&h))
                return true;
        }
    }
    return false;
}

void api_handle_produce(struct request *req)
{
    const produce_request_t *q = req->body;
    produce_response_t resp;
    produce_response_init(&resp);
    struct arena *ar = &req->arena;
    int16_t acks = q->acks;
    bool bad_acks = acks != 0 && acks != 1 && acks != -1;
    bool any_error = false;
    struct ack_wait *aw = NULL;

    /* Kafka's handleProduceRequest: records of a transaction need a
     * transactional id the client may WRITE, else every partition is
     * refused. (Kafka checks nothing the other way round: a transactional
     * id with plain batches is appended.) KIP-890 part 1's verification
     * (asking the transaction coordinator whether the partition was added
     * to the producer's transaction before the first transactional append)
     * is not done here yet: the coordinator side may add it. */
    int16_t txn_err = 0;
    if (has_transactional_records(q)) {
        kstr_t tid = req->api_version >= 3 ? q->transactional_id : (kstr_t){NULL, -1};
        if (tid.len < 0 || !authz_allowed(req, ACL_OP_WRITE, ACL_RES_TRANSACTIONAL_ID, tid))
            txn_err = KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
    }
    struct mimage *img = controller_image(req->broker->controller);
    resp.responses.a = produce_response_topic_produce_response_new_array(ar, q->topic_data.n);
    resp.responses.n = q->topic_data.n;
    for (int32_t i = 0; i < q->topic_data.n; i++) {
        const produce_request_topic_produce_data_t *td = &q->topic_data.a[i];
        produce_response_topic_produce_response_t *rt = &resp.responses.a[i];
        rt->name = td->name;
        const struct mi_topic *t = mimage_topic(img, td->name);
        rt->partition_responses.a =
            produce_response_partition_produce_response_new_array(ar, td->partition_data.n);
        rt->partition_responses.n = td->partition_data.n;
        for (int32_t j = 0; j < td->partition_data.n; j++) {
            const produce_request_partition_produce_data_t *pd = &td->partition_data.a[j];
            produce_response_partition_produce_response_t *rp = &rt->partition_responses.a[j];
            rp->index = pd->index;
            rp->base_offset = -1;
            int16_t err;
            if (bad_acks)
                err = KERR_INVALID_REQUIRED_ACKS;
            else if (txn_err)
                err = txn_err;
            else
                err = produce_partition(req, img, t, td->name, acks, pd, rp, &aw);
            rp->error_code = err;
            if (err) {
                any_error = true;
                rp->log_append_time_ms = -1;
                rp->log_start_offset = -1;
            }
        }
    }
    mimage_release(img);
    if (acks == 0) {
        /* No response to tell the client; Kafka closes the connection so
         * that it refreshes its metadata and notices. */
        if (any_error)
            req_close(req, "produce with acks=0 failed");
        else
            req_respond_none(req);
        return;
    }
    if (aw) {
        aw->resp = arena_alloc(&req->arena, sizeof *aw->resp);
        *aw->resp = resp; /* its arrays are in the arena already */
        req->handler_state = aw;
        req->cancel = ack_cancel;
        park_init(&aw->pk, req, ack_try_complete);
        for (int32_t i = 0; i < aw->n; i++)
            park_watch(&aw->pk, partition_park_key(aw->pending[i].p));
        park_start(&aw->pk, q->timeout_ms);
        return;
    }
    req_respond(req, &resp);
}
