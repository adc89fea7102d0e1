/* The append path of a partition this node leads. With a single replica
 * the high watermark follows the log end at once; replication will move
 * it only when the ISR has the data. */
#include "replica/partition.h"

#include "broker.h"
#include "log/plog.h"
#include "net/net.h"
#include "util/clock.h"

int partition_append(struct partition *p, uint8_t *batches, size_t len, bool log_append_time,
                     struct plog_append_result *res)
{
    int64_t append_time = log_append_time ? clock_wall_ms() : -1;
    int err = plog_append(p->log, batches, len, atomic_load(&p->leader_epoch), append_time, res);
    if (err)
        return err;
    /* Single replica: committed as soon as it is written. Raise, never
     * lower (appends from several workers may finish out of order). */
    int64_t leo = plog_log_end_offset(p->log);
    int64_t hw = atomic_load(&p->high_watermark);
    while (hw < leo && !atomic_compare_exchange_weak(&p->high_watermark, &hw, leo))
        ;
    if (p->broker && p->broker->net)
        net_notify_data(p->broker->net);
    return 0;
}
