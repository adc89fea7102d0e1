/* AllocateProducerIds on the active controller, as Kafka's
 * ProducerIdControlManager hands out blocks: the broker's epoch must be
 * the one it registered with, and every block is the next
 * PRODUCER_ID_BLOCK_SIZE ids, recorded as a ProducerIdsRecord holding the
 * first id of the block after it (so a new controller, replaying the log
 * or a snapshot, never hands out an id twice). Brokers use their blocks
 * for InitProducerId (transaction coordinator, idempotent producers). */
#include <stdint.h>

#include "controller/controller_internal.h"
#include "proto/gen/kmeta.h"
#include "proto/gen/producer_ids_record.h"
#include "proto/kerr.h"
#include "util/slog.h"

int controller_allocate_producer_ids(struct controller *c, int32_t broker_id, int64_t broker_epoch, int64_t *first,
                                     int32_t *len, struct ctl_op **op)
{
    *op = NULL;
    *first = 0;
    *len = 0;
    pthread_mutex_lock(&c->op_lock);
    int rc = ctl_not_active(c);
    if (rc)
        goto out;
    /* ClusterControlManager.checkBrokerEpoch */
    const struct mi_broker *b = mimage_broker(c->spec, broker_id);
    if (!b || b->epoch != broker_epoch) {
        rc = KERR_STALE_BROKER_EPOCH;
        goto out;
    }
    /* ProducerIdsBlock.EMPTY starts at 0. */
    int64_t start = c->spec->next_producer_id < 0 ? 0 : c->spec->next_producer_id;
    if (start > INT64_MAX - CONTROLLER_PRODUCER_ID_BLOCK_SIZE) {
        slog_error("metadata: producer ids exhausted (next block would start at %lld)", (long long)start);
        rc = KERR_UNKNOWN_SERVER_ERROR;
        goto out;
    }
    struct recs rs;
    recs_init(&rs);
    producer_ids_record_t *r = arena_alloc(&rs.arena, sizeof *r);
    producer_ids_record_init(r);
    r->broker_id = broker_id;
    r->broker_epoch = broker_epoch;
    r->next_producer_id = start + CONTROLLER_PRODUCER_ID_BLOCK_SIZE;
    recs_add(&rs, KMETA_PRODUCER_IDS_RECORD, 0, r);
    char msg[128];
    rc = ctl_submit_locked(c, &rs, msg, sizeof msg, op);
    recs_free(&rs);
    if (rc == 0) {
        *first = start;
        *len = CONTROLLER_PRODUCER_ID_BLOCK_SIZE;
    }
out:
    pthread_mutex_unlock(&c->op_lock);
    return rc;
}
