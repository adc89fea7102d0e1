/* Replication decisions without I/O (see repl.h). */
#include "replica/repl.h"

#include "proto/kerr.h"

void repl_follower_fetched(struct repl_follower *f, int64_t fetch_offset, int64_t leader_leo, int64_t now_ms)
{
    if (fetch_offset >= leader_leo)
        f->last_caught_up_ms = now_ms > f->last_caught_up_ms ? now_ms : f->last_caught_up_ms;
    else if (f->last_fetch_ms > 0 && fetch_offset >= f->last_fetch_leader_leo &&
             f->last_fetch_ms > f->last_caught_up_ms)
        f->last_caught_up_ms = f->last_fetch_ms;
    f->leo = fetch_offset;
    f->last_fetch_ms = now_ms;
    f->last_fetch_leader_leo = leader_leo;
}

void repl_follower_reset(struct repl_follower *f, int32_t id, bool in_isr, int64_t now_ms)
{
    f->id = id;
    f->leo = -1;
    f->last_caught_up_ms = in_isr ? now_ms : 0;
    f->last_fetch_ms = 0;
    f->last_fetch_leader_leo = -1;
}

static const struct repl_follower *find(const struct repl_follower *fs, int32_t nfs, int32_t id)
{
    for (int32_t i = 0; i < nfs; i++)
        if (fs[i].id == id)
            return &fs[i];
    return 0;
}

int64_t repl_isr_min_leo(int32_t leader_id, int64_t leader_leo, const int32_t *isr, int32_t nisr,
                         const struct repl_follower *fs, int32_t nfs)
{
    int64_t m = leader_leo;
    for (int32_t i = 0; i < nisr; i++) {
        if (isr[i] == leader_id)
            continue;
        const struct repl_follower *f = find(fs, nfs, isr[i]);
        int64_t leo = f ? f->leo : -1;
        if (leo < m)
            m = leo;
    }
    return m;
}

int32_t repl_out_of_sync(int32_t leader_id, int64_t leader_leo, const int32_t *isr, int32_t nisr,
                         const struct repl_follower *fs, int32_t nfs, int64_t now_ms, int64_t lag_max_ms,
                         int32_t *out)
{
    int32_t n = 0;
    for (int32_t i = 0; i < nisr; i++) {
        if (isr[i] == leader_id)
            continue;
        const struct repl_follower *f = find(fs, nfs, isr[i]);
        int64_t leo = f ? f->leo : -1;
        int64_t caught = f ? f->last_caught_up_ms : 0;
        if (leo != leader_leo && now_ms - caught > lag_max_ms)
            out[n++] = isr[i];
    }
    return n;
}

bool repl_can_join_isr(const struct repl_follower *f, int64_t hw, int64_t leader_epoch_start_offset)
{
    return f->leo >= 0 && f->leo >= hw && f->leo >= leader_epoch_start_offset;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

int64_t repl_truncation_offset(int32_t div_epoch, int64_t div_end_offset, bool have_local, int32_t local_epoch,
                               int64_t local_end_offset, int64_t leo, int64_t hw, bool *complete)
{
    *complete = true;
    if (div_end_offset < 0)
        return min64(hw, leo);
    if (div_epoch < 0 || !have_local || local_epoch < 0)
        return min64(div_end_offset, leo);
    if (local_epoch != div_epoch) {
        *complete = false;
        return min64(local_end_offset, leo);
    }
    return min64(min64(local_end_offset, div_end_offset), leo);
}

bool repl_diverging(int32_t last_fetched_epoch, int64_t fetch_offset, int32_t end_epoch, int64_t end_offset)
{
    if (last_fetched_epoch < 0)
        return false;
    return end_epoch < last_fetched_epoch || end_offset < fetch_offset;
}

int16_t repl_epoch_error(int32_t current_leader_epoch, int32_t epoch)
{
    if (current_leader_epoch < 0 || current_leader_epoch == epoch)
        return 0;
    return current_leader_epoch > epoch ? KERR_UNKNOWN_LEADER_EPOCH : KERR_FENCED_LEADER_EPOCH;
}

bool repl_contains(const int32_t *a, int32_t n, int32_t id)
{
    for (int32_t i = 0; i < n; i++)
        if (a[i] == id)
            return true;
    return false;
}
