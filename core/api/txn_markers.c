/* WriteTxnMarkers: the transaction coordinator (another broker's, or this
 * one's) ends a transaction on each partition it touched by appending a
 * COMMIT or ABORT marker there (Kafka's handleWriteTxnMarkersRequest).
 *
 * Inter-broker: CLUSTER_ACTION on the cluster. Each partition's marker is
 * one control batch (rb_build_txn_marker) appended as the leader, with
 * Kafka's checks of the producer state (plog_append: an older producer
 * epoch is INVALID_PRODUCER_EPOCH, an older coordinator epoch
 * TRANSACTION_COORDINATOR_FENCED), and answered like an acks=all Produce:
 * once the high watermark is past it (the request parks on the
 * partitions' keys until then, bounded by Kafka's request.timeout.ms
 * default). On a __consumer_offsets partition the group coordinator
 * writes the marker itself (coord_write_txn_marker, as Kafka's
 * KafkaApis delegates it to completeTransaction): appended under the
 * shard's lock and replayed at once, so the producer's pending offset
 * commits become committed or dropped in log order with the shard's
 * other writes; the answer, as for every marker, waits for the ISR. */
#include <string.h>

#include "api/dispatch.h"
#include "api/handlers.h"
#include "api/request.h"
#include "auth/authz.h"
#include "broker.h"
#include "controller/controller.h"
#include "coord/coord.h"
#include "coord/records.h"
#include "log/plog.h"
#include "net/park.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "replica/partition.h"
#include "topic_config.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/slog.h"

/* Kafka appends markers with timeout = request.timeout.ms (30 s). */
#define MARKER_TIMEOUT_MS 30000

struct marker_pending {
    struct partition *p; /* reference, NULL once answered */
    int64_t offset;
    int32_t epoch;
    write_txn_markers_response_writable_txn_marker_partition_result_t *out;
};

struct marker_wait {
    struct parked pk; /* first */
    struct request *req;
    write_txn_markers_response_t resp; /* arrays in req->arena */
    struct marker_pending *pending;
    int32_t n, cap;
};

static bool markers_try_complete(struct parked *pk, bool expired)
{
    struct marker_wait *mw = (struct marker_wait *)pk;
    for (int32_t i = 0; i < mw->n; i++) {
        struct marker_pending *m = &mw->pending[i];
        if (!m->p)
            continue;
        int16_t err = 0;
        enum ack_state st = partition_ack_wait_all(m->p, m->offset, m->epoch, &err);
        if (st == ACK_WAIT && !expired)
            return false;
        if (st != ACK_READY)
            m->out->error_code = st == ACK_WAIT ? KERR_REQUEST_TIMED_OUT : err;
        partition_put(m->p);
        m->p = NULL;
    }
    req_respond(mw->req, &mw->resp);
    return true;
}

static void markers_cancel(struct request *req)
{
    struct marker_wait *mw = req->handler_state;
    park_stop(&mw->pk);
    for (int32_t i = 0; i < mw->n; i++)
        if (mw->pending[i].p) {
            partition_put(mw->pending[i].p);
            mw->pending[i].p = NULL;
        }
}

static void pending_add(struct request *req, struct marker_wait *mw, struct partition *p, int64_t offset, int32_t epoch,
                        write_txn_markers_response_writable_txn_marker_partition_result_t *out)
{
    if (mw->n == mw->cap) {
        int32_t cap = mw->cap ? mw->cap * 2 : 8;
        struct marker_pending *v = arena_alloc(&req->arena, (size_t)cap * sizeof *v);
        if (mw->n)
            memcpy(v, mw->pending, (size_t)mw->n * sizeof *v);
        mw->pending = v;
        mw->cap = cap;
    }
    mw->pending[mw->n++] = (struct marker_pending){p, offset, epoch, out};
}

/* One partition's marker. Returns the error code for the partition, or 0
 * after adding it to the wait (p's reference then goes with it). */
static int16_t write_marker(struct request *req, const struct mimage *img, struct marker_wait *mw,
                            const write_txn_markers_request_writable_txn_marker_t *mk, kstr_t topic, int32_t index,
                            write_txn_markers_response_writable_txn_marker_partition_result_t *out)
{
    const struct mi_topic *t = mimage_topic(img, topic);
    if (!t)
        return KERR_UNKNOWN_TOPIC_OR_PARTITION;
    const struct mi_partition *mp = mi_topic_partition(t, index);
    if (!mp)
        return KERR_UNKNOWN_TOPIC_OR_PARTITION;
    if (mp->leader != req->broker->node_id)
        return KERR_NOT_LEADER_OR_FOLLOWER;
    /* Partition.appendRecordsToLeader with acks=-1. */
    if (mp->nisr < t->cfg->min_insync_replicas)
        return KERR_NOT_ENOUGH_REPLICAS;
    struct partition *p = preg_get(req->broker->partitions, &t->id, index);
    if (!p)
        return preg_unavailable_error(req->broker->partitions, &t->id, index);
    struct plog_append_result res;
    int32_t epoch = atomic_load(&p->leader_epoch);
    int err;
    if (req->broker->coord && kstr_eq(topic, KSTR_LIT(COORD_OFFSETS_TOPIC))) {
        err = coord_write_txn_marker(req->broker->coord, p, mk->producer_id, mk->producer_epoch,
                                     mk->coordinator_epoch, mk->transaction_result, &res.last_offset, &epoch);
        /* the transaction coordinator expects no coordinator errors:
         * "not ready yet" (Kafka's translation) */
        if (err == KERR_NOT_COORDINATOR || err == KERR_COORDINATOR_LOAD_IN_PROGRESS ||
            err == KERR_COORDINATOR_NOT_AVAILABLE)
            err = KERR_NOT_LEADER_OR_FOLLOWER;
    } else {
        struct buf b;
        buf_init(&b);
        err = rb_build_txn_marker(&b, 0, clock_wall_ms(), mk->producer_id, mk->producer_epoch,
                                  RB_NO_PARTITION_LEADER_EPOCH,
                                  mk->transaction_result ? RB_CONTROL_COMMIT : RB_CONTROL_ABORT,
                                  mk->coordinator_epoch, NULL);
        if (!err)
            err = partition_append(p, b.data, b.len, false, &res);
        buf_free(&b);
    }
    if (err) {
        partition_put(p);
        if (err == KERR_INVALID_PRODUCER_EPOCH || err == KERR_TRANSACTION_COORDINATOR_FENCED)
            slog_info("WriteTxnMarkers from %s: marker of producer %lld (epoch %d, coordinator epoch %d) on "
                      "%.*s-%d refused: %s",
                      req_peer(req), (long long)mk->producer_id, mk->producer_epoch, mk->coordinator_epoch,
                      topic.len, topic.p, index, kerr_name((int16_t)err));
        return (int16_t)err;
    }
    int16_t ack_err = 0;
    enum ack_state st = partition_ack_wait_all(p, res.last_offset, epoch, &ack_err);
    if (st == ACK_WAIT) {
        pending_add(req, mw, p, res.last_offset, epoch, out);
        return 0;
    }
    partition_put(p);
    return st == ACK_FAILED ? ack_err : 0;
}

void api_handle_write_txn_markers(struct request *req)
{
    const write_txn_markers_request_t *q = req->body;
    struct arena *ar = &req->arena;
    struct marker_wait *mw = arena_alloc(ar, sizeof *mw);
    memset(mw, 0, sizeof *mw);
    mw->req = req;
    write_txn_markers_response_t *resp = &mw->resp;
    write_txn_markers_response_init(resp);
    bool allowed = authz_allowed(req, ACL_OP_CLUSTER_ACTION, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME);
    struct mimage *img = controller_image(req->broker->controller);
    resp->markers.a = write_txn_markers_response_writable_txn_marker_result_new_array(ar, q->markers.n);
    resp->markers.n = q->markers.n;
    for (int32_t i = 0; i < q->markers.n; i++) {
        const write_txn_markers_request_writable_txn_marker_t *mk = &q->markers.a[i];
        write_txn_markers_response_writable_txn_marker_result_t *rm = &resp->markers.a[i];
        rm->producer_id = mk->producer_id;
        rm->topics.a = write_txn_markers_response_writable_txn_marker_topic_result_new_array(ar, mk->topics.n);
        rm->topics.n = mk->topics.n;
        for (int32_t j = 0; j < mk->topics.n; j++) {
            const write_txn_markers_request_writable_txn_marker_topic_t *mt = &mk->topics.a[j];
            write_txn_markers_response_writable_txn_marker_topic_result_t *rt = &rm->topics.a[j];
            rt->name = mt->name;
            rt->partitions.a =
                write_txn_markers_response_writable_txn_marker_partition_result_new_array(ar, mt->partition_indexes.n);
            rt->partitions.n = mt->partition_indexes.n;
            for (int32_t k = 0; k < mt->partition_indexes.n; k++) {
                write_txn_markers_response_writable_txn_marker_partition_result_t *rp = &rt->partitions.a[k];
                rp->partition_index = mt->partition_indexes.a[k];
                /* Kafka answers an unauthorized request with
                 * CLUSTER_AUTHORIZATION_FAILED for every partition. */
                rp->error_code = !allowed ? KERR_CLUSTER_AUTHORIZATION_FAILED
                                          : write_marker(req, img, mw, mk, mt->name, rp->partition_index, rp);
            }
        }
    }
    mimage_release(img);
    if (mw->n == 0) {
        req_respond(req, resp);
        return;
    }
    req->handler_state = mw;
    req->cancel = markers_cancel;
    park_init(&mw->pk, req, markers_try_complete);
    for (int32_t i = 0; i < mw->n; i++)
        park_watch(&mw->pk, partition_park_key(mw->pending[i].p));
    park_start(&mw->pk, MARKER_TIMEOUT_MS);
}
