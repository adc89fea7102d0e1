/* Produce: validate each partition's batches as Kafka's broker does, then
 * append them under the partition's lock with offsets assigned. The
 * batches are written exactly as received, but for baseOffset and the
 * partition leader epoch (outside the CRC) and, for LogAppendTime topics,
 * the timestamps (with the CRC recomputed). */
#include <stdio.h>
#include <string.h>

#include "api/dispatch.h"
#include "api/handlers.h"
#include "api/quota_mgr.h"
#include "api/request.h"
#include "auth/authz.h"
#include "broker.h"
#include "config.h"
#include "controller/controller.h"
#include "coord/txn_verify.h"
#include "log/plog.h"
#include "net/park.h"
#include "net/worker.h"
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
                                 produce_response_partition_produce_response_t *rp, uint64_t guard,
                                 struct ack_wait **aw)
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
        .header_only = req->broker->cfg->record_validation_batch && produce_codec_keeps(&pc),
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
    err = partition_append_verified(p, batches, batches_len, tc->message_timestamp_log_append, guard, &res);
    produce_codec_free(&pc);
    /* The partition's counters give the per-topic sums (the metrics
     * endpoint), which fall when a topic is deleted; the worker's below
     * give the node's totals, which a counter must not. A producer's
     * retry appended nothing: counted by neither. */
    if (!err && !res.duplicate) {
        atomic_fetch_add_explicit(&p->produced_bytes, batches_len, memory_order_relaxed);
        atomic_fetch_add_explicit(&p->produced_records, (uint64_t)vr.records, memory_order_relaxed);
    }
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
    if (req->worker && !res.duplicate) { /* Kafka's MessagesInPerSec and BytesInPerSec */
        counter_add(&req->worker->counters.records_in, (uint64_t)vr.records);
        counter_add(&req->worker->counters.record_bytes_in, batches_len);
    }
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

/* KIP-890 verification of a request's transactional partitions: per
 * partition (in request order) the guard to append with and the
 * coordinator's verdict. */
struct produce_verify {
    struct parked pk; /* first */
    struct request *req;
    uint64_t *guards;       /* PLOG_GUARD_UNCHECKED: no check */
    int32_t *job_index;     /* partition -> index in job, -1: not asked */
    struct txn_verify *job; /* NULL: nothing asked */
    int16_t txn_err;        /* for every partition */
};

static void produce_all(struct request *req, const struct produce_verify *pv);

static bool verify_try(struct parked *pk, bool expired)
{
    struct produce_verify *pv = (struct produce_verify *)pk;
    if (!txn_verify_done(pv->job)) {
        if (!expired)
            return false;
        pv->txn_err = KERR_NOT_ENOUGH_REPLICAS; /* the client retries */
    }
    pv->req->cancel = NULL;
    produce_all(pv->req, pv);
    txn_verify_release(pv->job);
    pv->job = NULL;
    return true;
}

static void verify_cancel(struct request *req)
{
    struct produce_verify *pv = req->handler_state;
    park_stop(&pv->pk);
    txn_verify_release(pv->job);
    pv->job = NULL;
}

/* The first batch header of a partition's records, if it is transactional. */
static bool txn_header(const produce_request_partition_produce_data_t *pd, struct rb_header *h)
{
    krecords_t r = pd->records;
    return r.p && r.len >= RB_HEADER_SIZE && rb_parse_header(r.p, (size_t)r.len, h) == 0 && rb_is_transactional(h) &&
           rb_has_producer_id(h) && !rb_is_control(h);
}

/* ReplicaManager.maybeStartTransactionVerificationForPartitions: for
 * each transactional partition this node leads, a guard; the partitions
 * whose producer has no open transaction there are verified with the
 * coordinator. Returns false when the request parked for it. */
static bool start_verification(struct request *req, struct produce_verify *pv)
{
    const produce_request_t *q = req->body;
    struct broker *b = req->broker;
    int32_t total = 0;
    for (int32_t i = 0; i < q->topic_data.n; i++)
        total += q->topic_data.a[i].partition_data.n;
    struct arena *ar = &req->arena;
    pv->guards = arena_alloc(ar, (size_t)(total ? total : 1) * sizeof *pv->guards);
    pv->job_index = arena_alloc(ar, (size_t)(total ? total : 1) * sizeof *pv->job_index);
    kstr_t *topics = arena_alloc(ar, (size_t)(total ? total : 1) * sizeof *topics);
    int32_t *parts = arena_alloc(ar, (size_t)(total ? total : 1) * sizeof *parts);
    int32_t n = 0, at = 0;
    int64_t pid = -1;
    int16_t epoch = -1;
    struct mimage *img = controller_image(b->controller);
    for (int32_t i = 0; i < q->topic_data.n; i++) {
        const produce_request_topic_produce_data_t *td = &q->topic_data.a[i];
        const struct mi_topic *t = mimage_topic(img, td->name);
        for (int32_t j = 0; j < td->partition_data.n; j++, at++) {
            const produce_request_partition_produce_data_t *pd = &td->partition_data.a[j];
            pv->guards[at] = PLOG_GUARD_UNCHECKED;
            pv->job_index[at] = -1;
            struct rb_header h;
            if (!txn_header(pd, &h))
                continue;
            if (pid >= 0 && h.producer_id != pid) {
                /* Kafka: transactional records of more than one producer */
                pv->txn_err = KERR_INVALID_PRODUCER_ID_MAPPING;
                continue;
            }
            pid = h.producer_id;
            epoch = h.producer_epoch;
            const struct mi_partition *mp = t ? mi_topic_partition(t, pd->index) : NULL;
            if (!mp || mp->leader != b->node_id)
                continue; /* refused below, unverified */
            struct partition *p = preg_get(b->partitions, &t->id, pd->index);
            if (!p)
                continue;
            uint64_t guard = 0;
            if (plog_verify_begin(p->log, h.producer_id, h.producer_epoch, &guard) == 0) {
                pv->guards[at] = guard;
                if (guard != 0) {
                    pv->job_index[at] = n;
                    topics[n] = td->name;
                    parts[n] = pd->index;
                    n++;
                }
            }
            partition_put(p);
        }
    }
    mimage_release(img);
    if (n == 0 || pv->txn_err)
        return true;
    pv->job = txn_verify_start(b->txn_coord, q->transactional_id, pid, epoch, n, topics, parts);
    if (txn_verify_done(pv->job))
        return true;
    req->handler_state = pv;
    req->cancel = verify_cancel;
    park_init(&pv->pk, req, verify_try);
    park_watch(&pv->pk, park_key_object(pv->job));
    park_start(&pv->pk, q->timeout_ms);
    return false;
}

void api_handle_produce(struct request *req)
{
    const produce_request_t *q = req->body;
    /* Kafka's handleProduceRequest: records of a transaction need a
     * transactional id the client may WRITE, else every partition is
     * refused. (Kafka checks nothing the other way round: a transactional
     * id with plain batches is appended.) Then, with
     * transaction.partition.verification.enable, KIP-890's verification
     * of the partitions a transaction writes to for the first time. */
    struct produce_verify *pv = arena_alloc(&req->arena, sizeof *pv);
    memset(pv, 0, sizeof *pv);
    pv->req = req;
    if (has_transactional_records(q)) {
        kstr_t tid = req->api_version >= 3 ? q->transactional_id : (kstr_t){NULL, -1};
        if (tid.len < 0 || !authz_allowed(req, ACL_OP_WRITE, ACL_RES_TRANSACTIONAL_ID, tid))
            pv->txn_err = KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
        else if (req->broker->cfg->transaction_partition_verification_enable && req->broker->txn_coord &&
                 !start_verification(req, pv))
            return; /* parked */
    }
    produce_all(req, pv);
    if (pv->job) {
        txn_verify_release(pv->job);
        pv->job = NULL;
    }
}

/* Appends every partition's records (with the verification's guards and
 * verdicts, if any) and answers, or parks for the acks. */
static void produce_all(struct request *req, const struct produce_verify *pv)
{
    const produce_request_t *q = req->body;
    produce_response_t resp;
    produce_response_init(&resp);
    struct arena *ar = &req->arena;
    int16_t acks = q->acks;
    bool bad_acks = acks != 0 && acks != 1 && acks != -1;
    bool any_error = false;
    struct ack_wait *aw = NULL;
    struct mimage *img = controller_image(req->broker->controller);
    resp.responses.a = produce_response_topic_produce_response_new_array(ar, q->topic_data.n);
    resp.responses.n = q->topic_data.n;
    int32_t at = 0;
    for (int32_t i = 0; i < q->topic_data.n; i++) {
        const produce_request_topic_produce_data_t *td = &q->topic_data.a[i];
        produce_response_topic_produce_response_t *rt = &resp.responses.a[i];
        rt->name = td->name;
        const struct mi_topic *t = mimage_topic(img, td->name);
        rt->partition_responses.a =
            produce_response_partition_produce_response_new_array(ar, td->partition_data.n);
        rt->partition_responses.n = td->partition_data.n;
        for (int32_t j = 0; j < td->partition_data.n; j++, at++) {
            const produce_request_partition_produce_data_t *pd = &td->partition_data.a[j];
            produce_response_partition_produce_response_t *rp = &rt->partition_responses.a[j];
            rp->index = pd->index;
            rp->base_offset = -1;
            uint64_t guard = pv->guards ? pv->guards[at] : PLOG_GUARD_UNCHECKED;
            int16_t verr = pv->job && pv->job_index && pv->job_index[at] >= 0
                               ? txn_verify_error(pv->job, pv->job_index[at])
                               : 0;
            int16_t err;
            if (bad_acks)
                err = KERR_INVALID_REQUIRED_ACKS;
            else if (pv->txn_err)
                err = pv->txn_err;
            else if (verr)
                err = verr;
            else
                err = produce_partition(req, img, t, td->name, acks, pd, rp, guard, &aw);
            rp->error_code = err;
            if (err) {
                any_error = true;
                rp->log_append_time_ms = -1;
                rp->log_start_offset = -1;
            }
        }
    }
    /* Kafka's produce quota: the request's bytes count, and a client
     * over its producer_byte_rate is told to back off and muted
     * (acks=0 included: it gets no answer, only the mute) */
    int64_t throttle = quota_record(req, QUOTA_PRODUCE, (double)req->frame_len);
    mimage_release(img);
    if (throttle > 0) {
        resp.throttle_time_ms = throttle > INT32_MAX ? INT32_MAX : (int32_t)throttle;
        quota_throttle(req, throttle);
    }
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
