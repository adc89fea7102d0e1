/* core/quorum: the quorum-state file (Kafka's JSON both ways), the
 * plog-backed Raft log (append in epoch runs, file-range reads,
 * truncation, snapshots as .checkpoint files, the log start across a
 * reopen), and a single voter over it electing itself and committing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "log/fsutil.h"
#include "log/plog.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "quorum/qstate.h"
#include "quorum/rlog.h"
#include "raft/raft.h"
#include "util/buf.h"
#include "util/sfile.h"

static char *tmpdir(void)
{
    char *d = strdup("/tmp/samsa-quorum-test-XXXXXX");
    assert_non_null(mkdtemp(d));
    return d;
}

/* One batch of n records at base, stamped with epoch. */
static size_t batch(struct buf *out, int64_t base, int32_t epoch, int n)
{
    struct rb_batch_opts o = RB_BATCH_OPTS_INIT;
    o.partition_leader_epoch = epoch;
    struct rb_builder b;
    rb_builder_begin(&b, out, base, 1000, &o);
    for (int i = 0; i < n; i++)
        assert_int_equal(rb_builder_add(&b, 1000, KBYTES_NULL, (kbytes_t){(const uint8_t *)"v", 1}, NULL, 0), 0);
    size_t len;
    assert_int_equal(rb_builder_finish(&b, &len), 0);
    return len;
}

static void test_qstate(void **state)
{
    (void)state;
    char *d = tmpdir();
    quorum_state_data_t q;
    char err[256];
    assert_int_equal(qstate_read(d, &q, err, sizeof err), 1); /* none yet */
    quorum_state_data_init(&q);
    q.leader_id = 2;
    q.leader_epoch = 7;
    q.voted_id = 3;
    assert_int_equal(qstate_write(d, &q), 0);
    quorum_state_data_t r;
    assert_int_equal(qstate_read(d, &r, err, sizeof err), 0);
    assert_int_equal(r.leader_id, 2);
    assert_int_equal(r.leader_epoch, 7);
    assert_int_equal(r.voted_id, 3);
    /* what Kafka 3.x (data_version 0) writes reads too */
    char path[512];
    snprintf(path, sizeof path, "%s/quorum-state", d);
    const char *k0 = "{\"clusterId\":\"\",\"leaderId\":1,\"leaderEpoch\":4,\"votedId\":-1,\"appliedOffset\":0,"
                     "\"currentVoters\":[{\"voterId\":1}],\"data_version\":0}";
    assert_int_equal(fs_write_atomic(path, k0, strlen(k0)), 0);
    assert_int_equal(qstate_read(d, &r, err, sizeof err), 0);
    assert_int_equal(r.leader_id, 1);
    assert_int_equal(r.leader_epoch, 4);
    assert_int_equal(r.voted_id, -1);
    assert_int_equal(fs_write_atomic(path, "{\"leaderId\":1}", 14), 0);
    assert_int_equal(qstate_read(d, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "quorum-state"));
    fs_remove_tree(d);
    free(d);
}

static void test_rlog(void **state)
{
    (void)state;
    char *d = tmpdir();
    char dir[600], err[256];
    snprintf(dir, sizeof dir, "%s/__cluster_metadata-0", d);
    struct rlog *l;
    assert_int_equal(rlog_open(dir, 0, &l, err, sizeof err), 0);
    struct raft_log rl = rlog_raft_log(l);
    assert_int_equal(rl.ops->start_offset(rl.ctx), 0);
    assert_int_equal(rl.ops->end_offset(rl.ctx), 0);

    /* two epochs in one append: plog stamps one epoch per call */
    struct buf b = BUF_INIT;
    batch(&b, 0, 1, 3);
    batch(&b, 3, 2, 2);
    batch(&b, 5, 2, 1);
    assert_int_equal(rl.ops->append(rl.ctx, b.data, b.len), 0);
    assert_int_equal(rl.ops->end_offset(rl.ctx), 6);
    /* a batch that does not start at the end is refused */
    buf_reset(&b);
    batch(&b, 9, 2, 1);
    assert_int_not_equal(rl.ops->append(rl.ctx, b.data, b.len), 0);
    assert_int_equal(rl.ops->end_offset(rl.ctx), 6);

    krecords_t rec;
    assert_int_equal(rl.ops->read(rl.ctx, 3, 1 << 20, &rec), 0);
    assert_non_null(rec.file); /* a file range, for sendfile */
    assert_true(rec.len > 0);
    assert_int_equal(rl.ops->read(rl.ctx, 7, 100, &rec), KERR_OFFSET_OUT_OF_RANGE);


    uint64_t gen0 = rlog_gen(l);
    assert_int_equal(rl.ops->truncate_to(rl.ctx, 5), 0);
    assert_int_equal(rl.ops->end_offset(rl.ctx), 5);
    assert_true(rlog_gen(l) > gen0);
    int64_t fend;
    uint64_t fgen;
    assert_int_equal(rlog_flush(l, &fend, &fgen), 0);
    assert_int_equal(fend, 5);

    /* a snapshot at 3: the log starts there afterwards */
    struct raft_snapshot_id id = {3, 1};
    assert_int_equal(rl.ops->snapshot_begin(rl.ctx, &id), 0);
    assert_int_equal(rl.ops->snapshot_append(rl.ctx, &id, (const uint8_t *)"snap", 4), 0);
    assert_int_equal(rl.ops->snapshot_size(rl.ctx, &id), -1); /* not complete yet */
    assert_int_equal(rl.ops->snapshot_finish(rl.ctx, &id), 0);
    assert_int_equal(rl.ops->snapshot_size(rl.ctx, &id), 4);
    struct raft_snapshot_id got;
    assert_true(rl.ops->latest_snapshot(rl.ctx, &got));
    assert_int_equal(got.end_offset, 3);
    assert_int_equal(rl.ops->reset_start(rl.ctx, &id), 0);
    assert_int_equal(rl.ops->start_offset(rl.ctx), 3);
    assert_int_equal(rl.ops->read(rl.ctx, 0, 100, &rec), KERR_OFFSET_OUT_OF_RANGE);
    assert_int_equal(rl.ops->snapshot_read(rl.ctx, &id, 1, 100, &rec), 0);
    assert_int_equal(rec.len, 3);
    struct buf sb = BUF_INIT;
    assert_int_equal(rlog_snapshot_load(l, &id, &sb), 0);
    assert_memory_equal(sb.data, "snap", 4);
    /* a half-written one is gone at the next open */
    struct raft_snapshot_id id2 = {5, 2};
    assert_int_equal(rl.ops->snapshot_begin(rl.ctx, &id2), 0);
    rlog_close(l, false);

    assert_int_equal(rlog_open(dir, 0, &l, err, sizeof err), 0);
    rl = rlog_raft_log(l);
    assert_int_equal(rl.ops->start_offset(rl.ctx), 3); /* from the snapshot */
    assert_int_equal(rl.ops->end_offset(rl.ctx), 5);
    assert_true(rl.ops->latest_snapshot(rl.ctx, &got));
    assert_int_equal(got.end_offset, 3);
    char part[700];
    snprintf(part, sizeof part, "%s/00000000000000000005-0000000002.checkpoint.part", dir);
    struct stat st;
    assert_int_not_equal(stat(part, &st), 0);

    /* a snapshot past the end replaces the whole log */
    struct raft_snapshot_id far = {50, 3};
    assert_int_equal(rl.ops->snapshot_begin(rl.ctx, &far), 0);
    assert_int_equal(rl.ops->snapshot_finish(rl.ctx, &far), 0);
    assert_int_equal(rl.ops->reset_start(rl.ctx, &far), 0);
    assert_int_equal(rl.ops->start_offset(rl.ctx), 50);
    assert_int_equal(rl.ops->end_offset(rl.ctx), 50);
    assert_false(rl.ops->oldest_snapshot(rl.ctx, &got) && got.end_offset < 50); /* older ones deleted */
    buf_reset(&b);
    batch(&b, 50, 3, 2);
    assert_int_equal(rl.ops->append(rl.ctx, b.data, b.len), 0);
    assert_int_equal(rl.ops->end_offset(rl.ctx), 52);
    rlog_close(l, true);

    /* a clean close leaves the log's own marker, which the next open
     * takes (no recovery) and removes, so a crash after it recovers */
    char marker[700];
    snprintf(marker, sizeof marker, "%s/%s", dir, PLOG_CLEAN_SHUTDOWN_FILE);
    assert_int_equal(stat(marker, &st), 0);
    assert_int_equal(rlog_open(dir, 0, &l, err, sizeof err), 0);
    rl = rlog_raft_log(l);
    assert_int_not_equal(stat(marker, &st), 0);
    assert_int_equal(rl.ops->start_offset(rl.ctx), 50);
    assert_int_equal(rl.ops->end_offset(rl.ctx), 52);
    rlog_close(l, false);
    assert_int_not_equal(stat(marker, &st), 0);
    buf_free(&b);
    buf_free(&sb);
    fs_remove_tree(d);
    free(d);
}

/* ---- a single voter over the real log ---- */

struct solo {
    struct rlog *log;
    bool flush;
    int64_t hw;
    enum raft_role role;
    int persists;
};

static void solo_out(void *arg, const struct raft_output *o)
{
    struct solo *s = arg;
    switch (o->type) {
    case RAFT_OUT_FLUSH:
        s->flush = true;
        break;
    case RAFT_OUT_COMMIT:
        s->hw = o->u.commit.high_watermark;
        break;
    case RAFT_OUT_ROLE:
        s->role = o->u.role.role;
        break;
    case RAFT_OUT_PERSIST:
        s->persists++;
        break;
    default:
        break;
    }
}

static void solo_flush(struct raft *r, struct solo *s)
{
    while (s->flush) {
        s->flush = false;
        int64_t end;
        uint64_t gen;
        assert_int_equal(rlog_flush(s->log, &end, &gen), 0);
        if (gen == rlog_gen(s->log))
            raft_flushed(r, end);
    }
}

static void test_single_voter_commits(void **state)
{
    (void)state;
    char *d = tmpdir();
    char dir[600], err[256];
    snprintf(dir, sizeof dir, "%s/__cluster_metadata-0", d);
    struct solo s = {0};
    s.hw = -1;
    assert_int_equal(rlog_open(dir, 0, &s.log, err, sizeof err), 0);
    struct raft_config cfg;
    raft_config_defaults(&cfg);
    int32_t voters[] = {1};
    cfg.node_id = 1;
    cfg.voters = voters;
    cfg.nvoters = 1;
    cfg.log = rlog_raft_log(s.log);
    cfg.output = solo_out;
    cfg.output_arg = &s;
    struct raft *r;
    assert_int_equal(raft_create(&cfg, NULL, &r), 0);
    raft_tick(r, 1000);
    assert_int_equal(s.role, RAFT_LEADER);
    assert_true(s.persists > 0);
    solo_flush(r, &s);
    assert_int_equal(s.hw, 1); /* the LeaderChange batch */
    kbytes_t v[2] = {{(const uint8_t *)"a", 1}, {(const uint8_t *)"bc", 2}};
    int64_t base = raft_propose(r, raft_epoch(r), v, 2, 1000);
    assert_int_equal(base, 1);
    assert_int_equal(s.hw, 1); /* not durable yet */
    solo_flush(r, &s);
    assert_int_equal(s.hw, 3);
    raft_destroy(r);
    rlog_close(s.log, true);

    /* it comes back with its log and elects itself again */
    memset(&s, 0, sizeof s);
    s.hw = -1;
    assert_int_equal(rlog_open(dir, 0, &s.log, err, sizeof err), 0);
    cfg.log = rlog_raft_log(s.log);
    cfg.output_arg = &s;
    assert_int_equal(raft_create(&cfg, NULL, &r), 0);
    raft_tick(r, 5000);
    solo_flush(r, &s);
    assert_int_equal(s.role, RAFT_LEADER);
    assert_int_equal(s.hw, 4);
    raft_destroy(r);
    rlog_close(s.log, true);
    fs_remove_tree(d);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qstate),
        cmocka_unit_test(test_rlog),
        cmocka_unit_test(test_single_voter_commits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
