/* AlterPartition on the active controller, as Kafka's
 * ReplicationControlManager.alterPartition answers it: a partition leader
 * asks for a new ISR (or leader recovery state); the controller checks
 * the sender's broker epoch, the partition's leader and partition epochs,
 * that the sender leads it, that the ISR is a subset of the replicas
 * holding the leader, and that every member is registered, unfenced, not
 * shutting down and (v3) of the epoch the leader saw; then writes one
 * PartitionChangeRecord per changed partition, all in one batch, and
 * answers with the partition state those records make.
 *
 * The leader side (shrinking the ISR when a follower falls behind
 * replica.lag.time.max.ms, expanding it when one catches up, and sending
 * this request) is core/replica/fetcher.c. */
#include <stdio.h>
#include <string.h>

#include "controller/controller_internal.h"
#include "proto/gen/alter_partition_request.h"
#include "proto/gen/alter_partition_response.h"
#include "proto/gen/kmeta.h"
#include "proto/gen/partition_change_record.h"
#include "proto/kerr.h"
#include "util/slog.h"

/* LeaderRecoveryState values. */
#define RECOVERED 0
#define RECOVERING 1
/* PartitionChangeRecord.leader: unchanged. */
#define NO_LEADER_CHANGE (-2)
/* Kafka's IBP_3_6_IV0: from it on an ISR shrink no longer bumps the
 * leader epoch (MetadataVersion.isLeaderEpochBumpRequiredOnIsrShrink). */
#define MV_NO_EPOCH_BUMP_ON_SHRINK 12

typedef alter_partition_request_partition_data_t ap_part_t;
typedef alter_partition_response_partition_data_t ap_answer_t;

static bool contains(const int32_t *a, int32_t n, int32_t id)
{
    for (int32_t i = 0; i < n; i++)
        if (a[i] == id)
            return true;
    return false;
}

/* Kafka's Replicas.validateIsr: no negative ids, no duplicates, every
 * member a replica. */
static bool isr_valid(const struct mi_partition *p, const int32_t *isr, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        if (isr[i] < 0 || !contains(p->replicas, p->nreplicas, isr[i]))
            return false;
        for (int32_t j = 0; j < i; j++)
            if (isr[j] == isr[i])
                return false;
    }
    return true;
}

/* The requested ISR as ids and broker epochs (-1: not checked; every
 * entry before v3, which has no epochs). Arrays from a. */
static int32_t requested_isr(const ap_part_t *pd, int16_t version, struct arena *a, int32_t **ids, int64_t **epochs)
{
    int32_t n = version >= 3 ? pd->new_isr_with_epochs.n : pd->new_isr.n;
    if (n < 0)
        n = 0;
    *ids = arena_alloc(a, (size_t)(n ? n : 1) * sizeof **ids);
    *epochs = arena_alloc(a, (size_t)(n ? n : 1) * sizeof **epochs);
    for (int32_t i = 0; i < n; i++) {
        (*ids)[i] = version >= 3 ? pd->new_isr_with_epochs.a[i].broker_id : pd->new_isr.a[i];
        (*epochs)[i] = version >= 3 ? pd->new_isr_with_epochs.a[i].broker_epoch : -1;
    }
    return n;
}

/* Kafka's ineligibleReplicasForIsr: the first member that may not be in
 * an ISR, with why (for the log), or -1. */
static int32_t ineligible(const struct mimage *img, const int32_t *ids, const int64_t *epochs, int32_t n,
                          char *why, size_t whylen)
{
    for (int32_t i = 0; i < n; i++) {
        const struct mi_broker *b = mimage_broker(img, ids[i]);
        if (!b)
            snprintf(why, whylen, "not registered");
        else if (b->in_controlled_shutdown)
            snprintf(why, whylen, "shutting down");
        else if (b->fenced)
            snprintf(why, whylen, "fenced");
        else if (epochs[i] != -1 && epochs[i] != b->epoch)
            snprintf(why, whylen, "broker epoch mismatch: requested=%lld VS expected=%lld", (long long)epochs[i],
                     (long long)b->epoch);
        else
            continue;
        return ids[i];
    }
    return -1;
}

/* Kafka's validateAlterPartitionData, in its order. */
static int16_t validate(const struct mimage *img, int32_t broker, const struct mi_topic *t,
                        const struct mi_partition *p, int16_t version, const ap_part_t *pd, const int32_t *isr,
                        const int64_t *epochs, int32_t nisr)
{
    if (!p) {
        slog_info("metadata: rejecting AlterPartition for unknown partition %s-%d", t->name, (int)pd->partition_index);
        return KERR_UNKNOWN_TOPIC_OR_PARTITION;
    }
    /* Epochs above ours: this node may no longer be the active
     * controller; NOT_CONTROLLER lets the leader look for the new one. */
    if (pd->leader_epoch > p->leader_epoch || pd->partition_epoch > p->partition_epoch)
        return KERR_NOT_CONTROLLER;
    if (pd->leader_epoch < p->leader_epoch)
        return KERR_FENCED_LEADER_EPOCH;
    if (broker != p->leader) {
        slog_info("metadata: rejecting AlterPartition from node %d for %s-%d: the leader is %d", (int)broker,
                  t->name, (int)p->index, (int)p->leader);
        return KERR_INVALID_REQUEST;
    }
    if (pd->partition_epoch < p->partition_epoch) {
        slog_info("metadata: rejecting AlterPartition from node %d for %s-%d: partition epoch is %d, not %d",
                  (int)broker, t->name, (int)p->index, (int)p->partition_epoch, (int)pd->partition_epoch);
        return KERR_INVALID_UPDATE_VERSION;
    }
    if (!isr_valid(p, isr, nisr) || !contains(isr, nisr, p->leader)) {
        slog_info("metadata: rejecting AlterPartition from node %d for %s-%d: invalid ISR", (int)broker, t->name,
                  (int)p->index);
        return KERR_INVALID_REQUEST;
    }
    int8_t lrs = version >= 1 ? pd->leader_recovery_state : RECOVERED;
    if ((lrs == RECOVERING && nisr > 1) || (p->leader_recovery_state == RECOVERED && lrs == RECOVERING)) {
        slog_info("metadata: rejecting AlterPartition from node %d for %s-%d: leader recovery state %d with %d ISR "
                  "member(s) (currently %d)",
                  (int)broker, t->name, (int)p->index, (int)lrs, (int)nisr, (int)p->leader_recovery_state);
        return KERR_INVALID_REQUEST;
    }
    char why[128];
    int32_t bad = ineligible(img, isr, epochs, nisr, why, sizeof why);
    if (bad >= 0) {
        slog_info("metadata: rejecting AlterPartition from node %d for %s-%d: replica %d is %s", (int)broker,
                  t->name, (int)p->index, (int)bad, why);
        return version > 1 ? KERR_INELIGIBLE_REPLICA : KERR_OPERATION_NOT_ATTEMPTED;
    }
    return 0;
}

/* Kafka's PartitionChangeBuilder for an AlterPartition: the leader is
 * valid (validate made sure it is an eligible member of the new ISR), so
 * only the ISR and the recovery state change. NULL when nothing does. */
static partition_change_record_t *change_record(struct recs *rs, const struct mimage *img, const struct mi_topic *t,
                                                const struct mi_partition *p, int8_t lrs, const int32_t *isr,
                                                int32_t nisr)
{
    bool same_isr = nisr == p->nisr && (nisr == 0 || memcmp(isr, p->isr, (size_t)nisr * sizeof *isr) == 0);
    if (same_isr && lrs == p->leader_recovery_state)
        return NULL;
    partition_change_record_t *r = arena_alloc(&rs->arena, sizeof *r);
    partition_change_record_init(r);
    r->topic_id = t->id;
    r->partition_id = p->index;
    if (!same_isr && nisr > 0) {
        r->isr.a = arena_alloc(&rs->arena, (size_t)nisr * sizeof(int32_t));
        memcpy(r->isr.a, isr, (size_t)nisr * sizeof(int32_t));
        r->isr.n = nisr;
        /* Before 3.6 a shrink bumped the leader epoch (KAFKA-15021). */
        bool shrink = false;
        for (int32_t i = 0; i < p->nisr && !shrink; i++)
            shrink = !contains(isr, nisr, p->isr[i]);
        if (shrink && img->metadata_version < MV_NO_EPOCH_BUMP_ON_SHRINK)
            r->leader = p->leader;
    }
    if (lrs != p->leader_recovery_state)
        r->leader_recovery_state = lrs;
    if (r->isr.n < 0 && r->leader == NO_LEADER_CHANGE && r->leader_recovery_state == -1)
        return NULL;
    return r;
}

static void answer_state(ap_answer_t *o, const struct mi_partition *p, struct arena *a)
{
    o->error_code = 0;
    o->leader_id = p->leader;
    o->leader_epoch = p->leader_epoch;
    o->isr.n = p->nisr;
    o->isr.a = arena_alloc(a, (size_t)(p->nisr ? p->nisr : 1) * sizeof(int32_t));
    if (p->nisr)
        memcpy(o->isr.a, p->isr, (size_t)p->nisr * sizeof(int32_t));
    o->leader_recovery_state = p->leader_recovery_state;
    o->partition_epoch = p->partition_epoch;
}

int controller_alter_partition(struct controller *c, const struct alter_partition_request_s *req, int16_t version,
                               struct alter_partition_response_s *resp, struct arena *a, struct ctl_op **op)
{
    *op = NULL;
    alter_partition_response_init(resp);
    int32_t ntopics = req->topics.n > 0 ? req->topics.n : 0;
    if (ntopics == 0)
        return 0; /* Kafka's QuorumController answers an empty request as is */
    pthread_mutex_lock(&c->op_lock);
    int rc = ctl_not_active(c);
    if (rc)
        goto out;
    const struct mimage *img = c->spec;
    /* ClusterControlManager.checkBrokerEpoch */
    const struct mi_broker *sender = mimage_broker(img, req->broker_id);
    if (!sender || sender->epoch != req->broker_epoch) {
        rc = KERR_STALE_BROKER_EPOCH;
        goto out;
    }
    struct recs rs;
    recs_init(&rs);
    resp->topics.a = alter_partition_response_topic_data_new_array(a, ntopics);
    resp->topics.n = ntopics;
    /* Where each written record's answer goes, filled once the records
     * are in the speculative image. */
    ap_answer_t **pending = arena_alloc(a, sizeof *pending);
    size_t npending = 0, cap = 1;
    for (int32_t ti = 0; ti < ntopics; ti++) {
        const alter_partition_request_topic_data_t *td = &req->topics.a[ti];
        alter_partition_response_topic_data_t *to = &resp->topics.a[ti];
        to->topic_name = td->topic_name;
        to->topic_id = td->topic_id;
        int32_t np = td->partitions.n > 0 ? td->partitions.n : 0;
        to->partitions.a = alter_partition_response_partition_data_new_array(a, np);
        to->partitions.n = np;
        static const kuuid_t zero;
        const struct mi_topic *t = version > 1 ? (kuuid_eq(&td->topic_id, &zero) ? NULL
                                                                                   : mimage_topic_by_id(img, &td->topic_id))
                                               : mimage_topic(img, td->topic_name);
        for (int32_t pi = 0; pi < np; pi++) {
            const ap_part_t *pd = &td->partitions.a[pi];
            ap_answer_t *o = &to->partitions.a[pi];
            o->partition_index = pd->partition_index;
            if (!t) {
                o->error_code = version > 1 ? KERR_UNKNOWN_TOPIC_ID : KERR_UNKNOWN_TOPIC_OR_PARTITION;
                continue;
            }
            const struct mi_partition *p = mi_topic_partition(t, pd->partition_index);
            int32_t *isr;
            int64_t *epochs;
            int32_t nisr = requested_isr(pd, version, a, &isr, &epochs);
            int16_t err = validate(img, req->broker_id, t, p, version, pd, isr, epochs, nisr);
            if (err) {
                o->error_code = err;
                continue;
            }
            int8_t lrs = version >= 1 ? pd->leader_recovery_state : RECOVERED;
            partition_change_record_t *r = change_record(&rs, img, t, p, lrs, isr, nisr);
            if (!r) {
                answer_state(o, p, a); /* nothing changes */
                continue;
            }
            recs_add(&rs, KMETA_PARTITION_CHANGE_RECORD, ctl_partition_change_record_version(img), r);
            if (npending == cap) {
                ap_answer_t **n = arena_alloc(a, 2 * cap * sizeof *n);
                memcpy(n, pending, cap * sizeof *n);
                pending = n;
                cap *= 2;
            }
            pending[npending++] = o;
        }
    }
    if (rs.n > 0) {
        char msg[256];
        rc = ctl_submit_locked(c, &rs, msg, sizeof msg, op);
        if (rc == 0) {
            /* The state the records make, as Kafka merges them into the
             * answer (PartitionRegistration.merge). */
            for (size_t i = 0; i < rs.n; i++) {
                const partition_change_record_t *r = rs.a[i].rec;
                const struct mi_topic *t = mimage_topic_by_id(c->spec, &r->topic_id);
                const struct mi_partition *p = t ? mi_topic_partition(t, r->partition_id) : NULL;
                if (p)
                    answer_state(pending[i], p, a);
            }
        }
    }
    recs_free(&rs);
out:
    pthread_mutex_unlock(&c->op_lock);
    return rc;
}
