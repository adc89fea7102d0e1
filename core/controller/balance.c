/* Automatic preferred-leader election (auto.leader.rebalance.enable), as
 * Kafka's KRaft controller does it (QuorumController's
 * maybeBalancePartitionLeaders, ReplicationControlManager's
 * imbalancedPartitions): a partition is imbalanced when its leader is not
 * its preferred replica (the first of its replicas). Once the active
 * controller sees one, it waits leader.imbalance.check.interval.seconds
 * and then, for every imbalanced partition whose preferred replica is in
 * the ISR and active (registered, unfenced, not shutting down), writes a
 * PartitionChangeRecord making it the leader: at most
 * MAX_ELECTIONS_PER_PASS per pass, the next pass at once when more are
 * left. A preferred replica that cannot lead yet is left for a later
 * pass. leader.imbalance.per.broker.percentage is not used: Kafka's KRaft
 * controller ignores it too (only the ZooKeeper controller had a per-
 * broker threshold).
 *
 * Loop thread; the decision and the records under op_lock, on the
 * speculative image, like every other controller write. */
#include <inttypes.h>

#include "config.h"
#include "controller/controller_internal.h"
#include "proto/gen/kmeta.h"
#include "proto/gen/partition_change_record.h"
#include "util/slog.h"

/* Kafka's QuorumControllerConfig maxElectionsPerImbalance default. */
#define MAX_ELECTIONS_PER_PASS 1000
/* Kafka delays an immediate re-run by 10 ms. */
#define AGAIN_MS 10
#define PROBE_MS 1000

static bool imbalanced(const struct mi_partition *mp) { return mp->nreplicas > 0 && mp->leader != mp->replicas[0]; }

static bool in_isr(const struct mi_partition *mp, int32_t id)
{
    for (int32_t k = 0; k < mp->nisr; k++)
        if (mp->isr[k] == id)
            return true;
    return false;
}

/* Adds the elections of one pass to rs; true when some were left. */
static bool elections(struct recs *rs, const struct mimage *img, int *any_imbalanced)
{
    *any_imbalanced = 0;
    for (int32_t ti = 0; ti < img->ntopics; ti++) {
        const struct mi_topic *t = img->topics[ti];
        for (int32_t p = 0; p < t->npartitions; p++) {
            const struct mi_partition *mp = &t->partitions[p];
            if (!imbalanced(mp))
                continue;
            (*any_imbalanced)++;
            int32_t pref = mp->replicas[0];
            if (!in_isr(mp, pref) || !ctl_broker_active(img, pref))
                continue;
            if (rs->n >= MAX_ELECTIONS_PER_PASS)
                return true;
            partition_change_record_t *r = arena_alloc(&rs->arena, sizeof *r);
            partition_change_record_init(r);
            r->topic_id = t->id;
            r->partition_id = mp->index;
            r->leader = pref;
            recs_add(rs, KMETA_PARTITION_CHANGE_RECORD, ctl_partition_change_record_version(img), r);
        }
    }
    return false;
}

void ctl_balance_step(struct controller *c, int64_t now_ms)
{
    const struct samsa_config *cfg = c->orig_cfg;
    bool enabled = true;
    int64_t interval_s = 300;
    config_get_bool(cfg, "auto.leader.rebalance.enable", &enabled);
    config_get_long(cfg, "leader.imbalance.check.interval.seconds", &interval_s);
    if (!enabled)
        return;
    pthread_mutex_lock(&c->op_lock);
    if (ctl_not_active(c)) {
        c->balance_due_ms = -1;
        pthread_mutex_unlock(&c->op_lock);
        return;
    }
    if (c->balance_due_ms < 0) {
        /* Not scheduled: schedule when something is imbalanced (looked
         * at once a second: a scan of every partition). */
        if (now_ms < c->balance_probe_ms) {
            pthread_mutex_unlock(&c->op_lock);
            return;
        }
        c->balance_probe_ms = now_ms + PROBE_MS;
        int n = 0;
        struct recs probe;
        recs_init(&probe);
        (void)elections(&probe, c->spec, &n);
        recs_free(&probe);
        if (n > 0)
            c->balance_due_ms = now_ms + interval_s * 1000;
        pthread_mutex_unlock(&c->op_lock);
        return;
    }
    if (now_ms < c->balance_due_ms) {
        pthread_mutex_unlock(&c->op_lock);
        return;
    }
    struct recs rs;
    recs_init(&rs);
    int n = 0;
    bool more = elections(&rs, c->spec, &n);
    size_t elected = rs.n;
    int rc = 0;
    char msg[256];
    if (rs.n > 0) {
        struct ctl_op *op = NULL;
        rc = ctl_submit_locked(c, &rs, msg, sizeof msg, &op);
        if (op)
            ctl_op_release(op);
    }
    recs_free(&rs);
    c->balance_due_ms = more ? now_ms + AGAIN_MS : -1;
    pthread_mutex_unlock(&c->op_lock);
    if (elected > 0)
        slog_info("metadata: preferred leader election for %zu of %d imbalanced partition(s)%s%s", elected, n,
                  more ? ", more to come" : "", rc ? " failed" : "");
}
