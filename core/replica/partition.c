/* The append path of a partition and its replication state.
 *
 * Leader: the high watermark is the smallest log end offset over the ISR
 * (the leader's own log end, or with flush.messages=1 the part of it
 * that is on disk, and each ISR follower's last fetch offset); it only
 * moves up. With an ISR of the leader alone it follows the leader's log
 * end at once, as a single node always did. Followers: the high
 * watermark is the leader's (from its Fetch answers), capped at the local
 * log end. */
#include "replica/partition.h"

#include <stdlib.h>
#include <string.h>

#include "controller/image.h"
#include "log/plog.h"
#include "net/park.h"
#include "proto/kerr.h"
#include "util/chgen.h"
#include "util/clock.h"
#include "util/buf.h"
#include "util/slog.h"

/* The leader's own part: its log end, or for durable acks the part of it
 * that is on disk. */
static int64_t own_end(struct partition *p, struct plog *l)
{
    int64_t leo = plog_log_end_offset(l);
    if (!atomic_load(&p->ack_after_flush))
        return leo;
    int64_t rp = plog_recovery_point(l);
    return rp < leo ? rp : leo;
}

/* Under repl_lock. */
static int64_t hw_target_locked(struct partition *p, struct plog *l)
{
    int64_t own = own_end(p, l);
    if (!atomic_load(&p->is_leader)) {
        int64_t leo = plog_log_end_offset(l);
        return p->leader_hw < leo ? p->leader_hw : leo;
    }
    int32_t me = atomic_load(&p->leader_id);
    int64_t m = repl_isr_min_leo(me, own, p->isr, p->nisr, p->followers, p->nfollowers);
    if (p->alter_inflight) {
        /* Kafka's maximal ISR: a member being added counts already. */
        int64_t m2 = repl_isr_min_leo(me, own, p->pending_isr, p->npending, p->followers, p->nfollowers);
        if (m2 < m)
            m = m2;
    }
    return m;
}

/* Raise, never lower: appends and flushes on several threads may finish
 * out of order. l is p's log (passed in: the flusher may call before the
 * registry has stored p->log). Returns whether the HW moved. */
static bool raise_hw(struct partition *p, struct plog *l)
{
    slock_lock(&p->repl_lock);
    int64_t target = hw_target_locked(p, l);
    int64_t hw = atomic_load(&p->high_watermark);
    bool moved = false;
    while (hw < target && !atomic_compare_exchange_weak(&p->high_watermark, &hw, target))
        ;
    moved = hw < target;
    plog_set_high_watermark(l, atomic_load(&p->high_watermark));
    slock_unlock(&p->repl_lock);
    return moved;
}

/* Tells fetch sessions that skip unchanged partitions (util/chgen.h)
 * that p changed, and wakes the fetches parked while skipping it. */
static void changed(struct partition *p)
{
    chgen_bump(p->topic_id.b, p->index);
    if (atomic_load(&chgen_watchers) > 0)
        park_notify(p->wake, chgen_park_key(p->topic_id.b));
}

/* Wakes the requests parked on p: Fetches, acks=all and durable-ack
 * Produces, group coordinator writes. Every change that wakes them is
 * one a fetch session must see (changed). */
static void wake(struct partition *p)
{
    changed(p);
    park_notify(p->wake, partition_park_key(p));
}

void partition_changed(struct partition *p) { changed(p); }

int partition_append(struct partition *p, uint8_t *batches, size_t len, bool log_append_time,
                     struct plog_append_result *res)
{
    return partition_append_verified(p, batches, len, log_append_time, PLOG_GUARD_UNCHECKED, res);
}

int partition_append_verified(struct partition *p, uint8_t *batches, size_t len, bool log_append_time,
                              uint64_t guard, struct plog_append_result *res)
{
    int64_t append_time = log_append_time ? clock_wall_ms() : -1;
    int err = plog_append_verified(p->log, batches, len, atomic_load(&p->leader_epoch), append_time, guard, res);
    if (err)
        return err;
    raise_hw(p, p->log);
    wake(p);
    return 0;
}

int partition_append_coordinator(struct partition *p, uint8_t *batches, size_t len, uint64_t guard,
                                 struct plog_append_result *res)
{
    int err = plog_append_coordinator(p->log, batches, len, atomic_load(&p->leader_epoch), guard, res);
    if (err)
        return err;
    raise_hw(p, p->log);
    wake(p);
    return 0;
}

int64_t partition_last_stable_offset(struct partition *p)
{
    return plog_last_stable_offset(p->log, atomic_load(&p->high_watermark));
}

static enum ack_state ack_failed(int16_t *err, int16_t code)
{
    *err = code;
    return ACK_FAILED;
}

enum ack_state partition_ack_wait(struct partition *p, int64_t last_offset, int16_t *err)
{
    if (plog_offline(p->log))
        return ack_failed(err, KERR_KAFKA_STORAGE_ERROR);
    if (!atomic_load(&p->ack_after_flush))
        return ACK_READY;
    return plog_recovery_point(p->log) > last_offset ? ACK_READY : ACK_WAIT;
}

enum ack_state partition_ack_wait_all(struct partition *p, int64_t last_offset, int32_t epoch, int16_t *err)
{
    if (plog_offline(p->log))
        return ack_failed(err, KERR_KAFKA_STORAGE_ERROR);
    if (atomic_load(&p->deleted) || !atomic_load(&p->is_leader) || atomic_load(&p->leader_epoch) != epoch)
        return ack_failed(err, KERR_NOT_LEADER_OR_FOLLOWER);
    if (atomic_load(&p->high_watermark) <= last_offset)
        return ACK_WAIT;
    slock_lock(&p->repl_lock);
    int32_t isr = p->nisr > p->npending ? p->nisr : p->npending; /* Kafka's maximal ISR */
    slock_unlock(&p->repl_lock);
    if (isr > 0 && isr < atomic_load(&p->min_isr))
        return ack_failed(err, KERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND);
    return ACK_READY;
}

void partition_log_flushed(void *ctx, struct plog *l)
{
    struct partition *p = ctx;
    raise_hw(p, l);
    wake(p);
}

void partition_log_ready(struct partition *p)
{
    /* Kafka's replication-offset-checkpoint: the high watermark survives
     * a restart, so a leader after one does not answer ListOffsets or cap
     * Fetch at 0 until its followers' positions are known again. */
    int64_t known = plog_known_high_watermark(p->log);
    int64_t hw = atomic_load(&p->high_watermark);
    while (hw < known && !atomic_compare_exchange_weak(&p->high_watermark, &hw, known))
        ;
    if (raise_hw(p, p->log))
        wake(p);
}

/* The follower array of a leader with no other replica (RF 1, most
 * partitions of a single node): not NULL, which means "no leadership set
 * up yet", and no malloc chunk of its own. Never written: nfollowers is
 * 0 while it is in place. */
static struct repl_follower no_followers[1];

static void free_followers(struct partition *p)
{
    if (p->followers != no_followers)
        free(p->followers);
    p->followers = NULL;
}

/* inl: the partition's inline array (PARTITION_INLINE_IDS), used when
 * the ids fit. */
static void copy_ids(int32_t **dst, int32_t *n, const int32_t *src, int32_t m, int32_t *inl)
{
    if (*dst != inl)
        free(*dst);
    *dst = m <= PARTITION_INLINE_IDS ? inl : xcalloc((size_t)m, sizeof **dst);
    if (m > 0)
        memcpy(*dst, src, (size_t)m * sizeof **dst);
    *n = m;
}

void partition_set_state(struct partition *p, const struct mi_partition *mp, int32_t node)
{
    int64_t now = clock_mono_ms();
    slock_lock(&p->repl_lock);
    bool was_leader = atomic_load(&p->is_leader) && atomic_load(&p->leader_id) == node;
    bool leads = mp->leader == node;
    bool new_leadership = leads && (!was_leader || atomic_load(&p->leader_epoch) != mp->leader_epoch ||
                                    p->followers == NULL);
    copy_ids(&p->replicas, &p->nreplicas, mp->replicas, mp->nreplicas, p->rep_inline);
    copy_ids(&p->isr, &p->nisr, mp->isr, mp->nisr, p->isr_inline);
    if (mp->partition_epoch != p->partition_epoch || !leads) {
        /* The controller decided (or the leadership went): whatever
         * AlterPartition was in flight is settled by this state. */
        p->alter_inflight = false;
        p->npending = 0;
    }
    p->partition_epoch = mp->partition_epoch;
    if (new_leadership) {
        free_followers(p);
        int32_t others = 0;
        for (int32_t i = 0; i < mp->nreplicas; i++)
            others += mp->replicas[i] != node;
        p->followers = others > 0 ? xcalloc((size_t)others, sizeof *p->followers) : no_followers;
        p->nfollowers = 0;
        for (int32_t i = 0; i < mp->nreplicas; i++)
            if (mp->replicas[i] != node)
                repl_follower_reset(&p->followers[p->nfollowers++], mp->replicas[i],
                                    repl_contains(mp->isr, mp->nisr, mp->replicas[i]), now);
    } else if (leads) {
        /* Replicas added by a reassignment get a fresh state. */
        struct repl_follower *f = xcalloc(mp->nreplicas > 0 ? (size_t)mp->nreplicas : 1, sizeof *f);
        int32_t n = 0;
        for (int32_t i = 0; i < mp->nreplicas; i++) {
            if (mp->replicas[i] == node)
                continue;
            bool found = false;
            for (int32_t j = 0; j < p->nfollowers; j++)
                if (p->followers[j].id == mp->replicas[i]) {
                    f[n++] = p->followers[j];
                    found = true;
                    break;
                }
            if (!found)
                repl_follower_reset(&f[n++], mp->replicas[i], false, now);
        }
        free_followers(p);
        if (n == 0) {
            free(f);
            f = no_followers;
        }
        p->followers = f;
        p->nfollowers = n;
    }
    if (!leads) {
        p->leader_hw = atomic_load(&p->high_watermark);
    }
    bool epoch_moved = atomic_load(&p->leader_epoch) != mp->leader_epoch;
    atomic_store(&p->leader_epoch, mp->leader_epoch);
    atomic_store(&p->leader_id, mp->leader);
    atomic_store(&p->is_leader, leads);
    slock_unlock(&p->repl_lock);
    if (new_leadership && mp->nreplicas > 1)
        slog_info("partition %s-%d: leader in epoch %d (ISR of %d)", p->topic, (int)p->index, (int)mp->leader_epoch,
                  (int)mp->nisr);
    if (was_leader != leads || epoch_moved)
        wake(p); /* parked acks=all produces answer NOT_LEADER_OR_FOLLOWER,
                  * parked Fetches answer with the new epoch */
}

void partition_follower_fetched(struct partition *p, int32_t replica, int64_t fetch_offset)
{
    int64_t now = clock_mono_ms();
    int64_t leo = plog_log_end_offset(p->log);
    slock_lock(&p->repl_lock);
    for (int32_t i = 0; i < p->nfollowers; i++)
        if (p->followers[i].id == replica) {
            repl_follower_fetched(&p->followers[i], fetch_offset, leo, now);
            break;
        }
    slock_unlock(&p->repl_lock);
    if (raise_hw(p, p->log))
        wake(p);
}

int partition_append_follower(struct partition *p, const uint8_t *batches, size_t len, int64_t leader_hw)
{
    int err = 0;
    if (len > 0)
        err = plog_append_follower(p->log, batches, len, NULL);
    partition_follower_hw(p, leader_hw);
    if (len > 0)
        changed(p);
    return err;
}

void partition_follower_hw(struct partition *p, int64_t leader_hw)
{
    slock_lock(&p->repl_lock);
    if (leader_hw > p->leader_hw)
        p->leader_hw = leader_hw;
    slock_unlock(&p->repl_lock);
    if (raise_hw(p, p->log))
        changed(p);
}

int partition_truncate(struct partition *p, int64_t offset)
{
    int err = plog_truncate_to(p->log, offset);
    int64_t leo = plog_log_end_offset(p->log);
    slock_lock(&p->repl_lock);
    if (p->leader_hw > leo)
        p->leader_hw = leo;
    if (atomic_load(&p->high_watermark) > leo)
        atomic_store(&p->high_watermark, leo);
    plog_set_high_watermark(p->log, atomic_load(&p->high_watermark));
    slock_unlock(&p->repl_lock);
    changed(p);
    return err;
}

void partition_repl_free(struct partition *p)
{
    if (p->replicas != p->rep_inline)
        free(p->replicas);
    if (p->isr != p->isr_inline)
        free(p->isr);
    free_followers(p);
    free(p->pending_isr);
}

uint64_t partition_park_key(const struct partition *p)
{
    return park_key_partition(p->topic_id.b, p->index);
}
