/* The append path of a partition this node leads. With a single replica
 * the high watermark follows the log end at once; replication will move
 * it only when the ISR has the data. With flush.messages=1 it follows
 * the recovery point instead (records fsynced by the log manager's
 * flusher), so consumers never see a record a crash could still take. */
#include "replica/partition.h"

#include "broker.h"
#include "log/plog.h"
#include "net/net.h"
#include "proto/kerr.h"
#include "util/clock.h"

/* What the high watermark may be now: the log end, or for durable acks
 * the part of it that is on disk. */
static int64_t hw_target(struct partition *p, struct plog *l)
{
    int64_t leo = plog_log_end_offset(l);
    if (!atomic_load(&p->ack_after_flush))
        return leo;
    int64_t rp = plog_recovery_point(l);
    return rp < leo ? rp : leo;
}

/* Raise, never lower: appends and flushes on several threads may finish
 * out of order. l is p's log (passed in: the flusher may call before the
 * registry has stored p->log). */
static void raise_hw(struct partition *p, struct plog *l)
{
    int64_t target = hw_target(p, l);
    int64_t hw = atomic_load(&p->high_watermark);
    while (hw < target && !atomic_compare_exchange_weak(&p->high_watermark, &hw, target))
        ;
    plog_set_high_watermark(l, atomic_load(&p->high_watermark));
}

int partition_append(struct partition *p, uint8_t *batches, size_t len, bool log_append_time,
                     struct plog_append_result *res)
{
    int64_t append_time = log_append_time ? clock_wall_ms() : -1;
    int err = plog_append(p->log, batches, len, atomic_load(&p->leader_epoch), append_time, res);
    if (err)
        return err;
    raise_hw(p, p->log);
    if (p->broker && p->broker->net)
        net_notify_data(p->broker->net);
    return 0;
}

int partition_ack_wait(struct partition *p, int64_t last_offset)
{
    if (plog_offline(p->log))
        return KERR_KAFKA_STORAGE_ERROR;
    if (!atomic_load(&p->ack_after_flush))
        return PARTITION_ACK_READY;
    return plog_recovery_point(p->log) > last_offset ? PARTITION_ACK_READY : PARTITION_ACK_WAIT;
}

void partition_log_flushed(void *ctx, struct plog *l)
{
    struct partition *p = ctx;
    raise_hw(p, l);
    if (p->broker && p->broker->net)
        net_notify_data(p->broker->net);
}

void partition_log_ready(struct partition *p)
{
    /* One replica: everything in the log is committed (once durable,
     * with durable acks). */
    raise_hw(p, p->log);
}
