/* The plog-backed raft_log. See rlog.h. */
#include "quorum/rlog.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log/fsutil.h"
#include "log/plog.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "raft/raft.h"
#include "util/clock.h"
#include "util/sfile.h"
#include "util/slog.h"

#define SNAP_SUFFIX ".checkpoint"
#define PART_SUFFIX ".checkpoint.part"
#define MAX_SNAPS 64

struct rsnap {
    struct raft_snapshot_id id;
};

struct rlog {
    struct plog *log;
    char *dir;
    int64_t start;          /* Raft's log start (>= plog's) */
    atomic_uint_fast64_t gen;
    struct sfile *held;     /* the file range handed out by the last read */
    struct buf tmp;         /* append copies, snapshot reads, scan */
    struct rsnap snaps[MAX_SNAPS]; /* complete snapshots, ascending by end offset */
    int nsnaps;
    /* The snapshot being written (one at a time). */
    int part_fd;
    struct raft_snapshot_id part_id;
};

static void snap_name(const struct rlog *l, const struct raft_snapshot_id *id, bool part, char *out, size_t n)
{
    snprintf(out, n, "%s/%020" PRId64 "-%010" PRId32 "%s", l->dir, id->end_offset, id->epoch,
             part ? PART_SUFFIX : SNAP_SUFFIX);
}

static int snap_find(const struct rlog *l, const struct raft_snapshot_id *id)
{
    for (int i = 0; i < l->nsnaps; i++)
        if (l->snaps[i].id.end_offset == id->end_offset && l->snaps[i].id.epoch == id->epoch)
            return i;
    return -1;
}

static void snap_insert(struct rlog *l, const struct raft_snapshot_id *id)
{
    if (snap_find(l, id) >= 0)
        return;
    if (l->nsnaps == MAX_SNAPS) {
        /* Never happens with the controller's policy (older snapshots go
         * as soon as the log start passes them); drop the oldest. */
        memmove(&l->snaps[0], &l->snaps[1], (MAX_SNAPS - 1) * sizeof l->snaps[0]);
        l->nsnaps--;
    }
    int i = l->nsnaps;
    while (i > 0 && l->snaps[i - 1].id.end_offset > id->end_offset) {
        l->snaps[i] = l->snaps[i - 1];
        i--;
    }
    l->snaps[i].id = *id;
    l->nsnaps++;
}

static void snap_delete(struct rlog *l, int i)
{
    char path[4096];
    snap_name(l, &l->snaps[i].id, false, path, sizeof path);
    if (unlink(path) < 0 && errno != ENOENT)
        slog_warn("metadata log: cannot delete snapshot %s: %s", path, strerror(errno));
    memmove(&l->snaps[i], &l->snaps[i + 1], (size_t)(l->nsnaps - i - 1) * sizeof l->snaps[0]);
    l->nsnaps--;
}

/* Snapshots ending before the log start serve no one any more. */
static void snaps_prune(struct rlog *l)
{
    while (l->nsnaps > 0 && l->snaps[0].id.end_offset < l->start)
        snap_delete(l, 0);
}

static void release_held(struct rlog *l)
{
    if (l->held) {
        sfile_unref(l->held);
        l->held = NULL;
    }
}

/* ------------------------------------------------------------------ */
/* raft_log operations                                                 */

static int64_t op_start(void *ctx) { return ((struct rlog *)ctx)->start; }
static int64_t op_end(void *ctx) { return plog_log_end_offset(((struct rlog *)ctx)->log); }

/* plog_append stamps one leader epoch per call and writes the offsets
 * itself: the batches go in runs of one epoch, from a copy (the node's
 * bytes are const), and each run must land where its batches say. */
static int append_copy(struct rlog *l, const uint8_t *batches, size_t len);

/* A copy buffer larger than this is not kept between appends. */
#define TMP_KEEP_BYTES (64 * 1024)

static int op_append(void *ctx, const uint8_t *batches, size_t len)
{
    struct rlog *l = ctx;
    int rc = append_copy(l, batches, len);
    /* A large batch (the leader elections of every partition after a
     * restart, a burst of CreateTopics) must not leave its copy behind
     * for the node's life (issue 12: ~60 B per partition). */
    if (l->tmp.cap > TMP_KEEP_BYTES)
        buf_free(&l->tmp);
    return rc;
}

static int append_copy(struct rlog *l, const uint8_t *batches, size_t len)
{
    release_held(l);
    buf_reset(&l->tmp);
    buf_append(&l->tmp, batches, len);
    uint8_t *p = l->tmp.data;
    size_t pos = 0;
    while (pos < len) {
        size_t run = 0;
        int32_t epoch = 0;
        int64_t base = -1;
        while (pos + run < len) {
            size_t size = 0;
            struct rb_header h;
            if (rb_frame(p + pos + run, len - pos - run, &size) != 0 ||
                rb_parse_header(p + pos + run, size, &h) != 0)
                return KERR_CORRUPT_MESSAGE;
            if (run == 0) {
                epoch = h.partition_leader_epoch;
                base = h.base_offset;
            } else if (h.partition_leader_epoch != epoch) {
                break;
            }
            run += size;
        }
        if (base != plog_log_end_offset(l->log))
            return KERR_INVALID_REQUEST;
        struct plog_append_result res;
        int rc = plog_append(l->log, p + pos, run, epoch, -1, &res);
        if (rc != 0)
            return rc;
        pos += run;
    }
    return 0;
}

/* The metadata log is no log manager's: nobody else removes the files
 * of its dropped segments (file.delete.delay.ms 0). Left in its trash,
 * they stayed on disk until the next start, and kept the process-wide
 * plog_trashed_segments above 0, which made the log manager's scheduler
 * walk every partition every 500 ms for a purge that found nothing
 * (issue 12: ~40-80 ms of CPU a second at 100 000 idle partitions, from
 * the first metadata snapshot on). */
static void purge_trash(struct rlog *l)
{
    plog_purge_deleted(l->log, clock_wall_ms(), false); /* due at once */
}

static int op_truncate_to(void *ctx, int64_t offset)
{
    struct rlog *l = ctx;
    release_held(l);
    if (offset < l->start || offset > plog_log_end_offset(l->log))
        return KERR_OFFSET_OUT_OF_RANGE;
    if (offset == plog_log_end_offset(l->log))
        return 0;
    atomic_fetch_add(&l->gen, 1);
    int rc = plog_truncate_to(l->log, offset);
    purge_trash(l);
    return rc;
}

static int op_read(void *ctx, int64_t offset, int32_t max_bytes, krecords_t *out)
{
    struct rlog *l = ctx;
    release_held(l);
    *out = (krecords_t){NULL, 0, NULL, 0};
    int64_t end = plog_log_end_offset(l->log);
    if (offset < l->start || offset > end)
        return KERR_OFFSET_OUT_OF_RANGE;
    if (offset == end)
        return 0;
    struct plog_read_result rr;
    int rc = plog_read(l->log, offset, max_bytes > 0 ? max_bytes : 1, true, -1, &rr);
    if (rc != 0)
        return rc;
    if (rr.len <= 0)
        return 0;
    l->held = rr.file; /* the reference plog_read gave us */
    out->file = rr.file;
    out->off = rr.file_pos;
    out->len = rr.len;
    return 0;
}

static int pread_all(int fd, uint8_t *p, size_t n, int64_t off)
{
    while (n > 0) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return KERR_KAFKA_STORAGE_ERROR;
        p += r;
        n -= (size_t)r;
        off += r;
    }
    return 0;
}

int rlog_read_mem(struct rlog *l, int64_t offset, int32_t max_bytes, struct buf *out)
{
    buf_reset(out);
    int64_t end = plog_log_end_offset(l->log);
    if (offset < l->start || offset > end)
        return KERR_OFFSET_OUT_OF_RANGE;
    if (offset == end)
        return 0;
    struct plog_read_result rr;
    int rc = plog_read(l->log, offset, max_bytes > 0 ? max_bytes : 1, true, -1, &rr);
    if (rc != 0 || rr.len <= 0)
        return rc;
    uint8_t *p = buf_extend(out, (size_t)rr.len);
    rc = pread_all(rr.file->fd, p, (size_t)rr.len, rr.file_pos);
    sfile_unref(rr.file);
    return rc;
}

static int op_scan(void *ctx, raft_log_batch_fn fn, void *arg)
{
    struct rlog *l = ctx;
    release_held(l);
    int64_t off = l->start, end = plog_log_end_offset(l->log);
    while (off < end) {
        int rc = rlog_read_mem(l, off, 1 << 20, &l->tmp);
        if (rc != 0)
            return rc;
        if (l->tmp.len == 0)
            break;
        size_t pos = 0;
        int64_t next = off;
        while (pos < l->tmp.len) {
            size_t size = 0;
            struct rb_header h;
            if (rb_frame(l->tmp.data + pos, l->tmp.len - pos, &size) != 0 ||
                rb_parse_header(l->tmp.data + pos, size, &h) != 0)
                return KERR_CORRUPT_MESSAGE;
            fn(arg, h.base_offset, rb_last_offset(&h), h.partition_leader_epoch);
            next = rb_last_offset(&h) + 1;
            pos += size;
        }
        if (next <= off)
            return KERR_CORRUPT_MESSAGE;
        off = next;
    }
    /* A start-up scan reads the whole log in 1 MiB pieces: do not keep
     * that buffer for the node's life (issue 12: it was ~50 B per
     * partition of a restarted node). */
    buf_free(&l->tmp);
    return 0;
}

static bool op_latest(void *ctx, struct raft_snapshot_id *out)
{
    struct rlog *l = ctx;
    if (l->nsnaps == 0)
        return false;
    *out = l->snaps[l->nsnaps - 1].id;
    return true;
}

static bool op_oldest(void *ctx, struct raft_snapshot_id *out)
{
    struct rlog *l = ctx;
    if (l->nsnaps == 0)
        return false;
    *out = l->snaps[0].id;
    return true;
}

static int64_t op_snap_size(void *ctx, const struct raft_snapshot_id *id)
{
    struct rlog *l = ctx;
    if (snap_find(l, id) < 0)
        return -1;
    char path[4096];
    snap_name(l, id, false, path, sizeof path);
    struct stat st;
    if (stat(path, &st) < 0)
        return -1;
    return (int64_t)st.st_size;
}

static int op_snap_read(void *ctx, const struct raft_snapshot_id *id, int64_t pos, int32_t max_bytes,
                        krecords_t *out)
{
    struct rlog *l = ctx;
    release_held(l);
    *out = (krecords_t){NULL, 0, NULL, 0};
    int64_t size = op_snap_size(l, id);
    if (size < 0)
        return KERR_SNAPSHOT_NOT_FOUND;
    if (pos < 0 || pos > size)
        return KERR_POSITION_OUT_OF_RANGE;
    int64_t n = size - pos;
    if (n > max_bytes)
        n = max_bytes;
    if (n <= 0)
        return 0;
    char path[4096];
    snap_name(l, id, false, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return KERR_SNAPSHOT_NOT_FOUND;
    /* A file range, as for log reads: the response is sent with
     * sendfile and the file stays open until it is. */
    l->held = sfile_wrap(fd);
    out->file = l->held;
    out->off = pos;
    out->len = (int32_t)n;
    return 0;
}

static int op_snap_begin(void *ctx, const struct raft_snapshot_id *id)
{
    struct rlog *l = ctx;
    if (l->part_fd >= 0) {
        char old[4096];
        snap_name(l, &l->part_id, true, old, sizeof old);
        close(l->part_fd);
        unlink(old);
        l->part_fd = -1;
    }
    char path[4096];
    snap_name(l, id, true, path, sizeof path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        slog_error("metadata log: cannot create %s: %s", path, strerror(errno));
        return KERR_KAFKA_STORAGE_ERROR;
    }
    l->part_fd = fd;
    l->part_id = *id;
    return 0;
}

static bool is_part(const struct rlog *l, const struct raft_snapshot_id *id)
{
    return l->part_fd >= 0 && l->part_id.end_offset == id->end_offset && l->part_id.epoch == id->epoch;
}

static int op_snap_append(void *ctx, const struct raft_snapshot_id *id, const uint8_t *p, size_t n)
{
    struct rlog *l = ctx;
    if (!is_part(l, id))
        return KERR_SNAPSHOT_NOT_FOUND;
    while (n > 0) {
        ssize_t w = write(l->part_fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            slog_error("metadata log: snapshot write failed: %s", strerror(errno));
            return KERR_KAFKA_STORAGE_ERROR;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int op_snap_finish(void *ctx, const struct raft_snapshot_id *id)
{
    struct rlog *l = ctx;
    if (!is_part(l, id))
        return KERR_SNAPSHOT_NOT_FOUND;
    char part[4096], path[4096];
    snap_name(l, id, true, part, sizeof part);
    snap_name(l, id, false, path, sizeof path);
    int rc = 0;
    if (fdatasync(l->part_fd) < 0 || rename(part, path) < 0 || fs_sync_dir(l->dir) != 0) {
        slog_error("metadata log: cannot complete snapshot %s: %s", path, strerror(errno));
        rc = KERR_KAFKA_STORAGE_ERROR;
    }
    close(l->part_fd);
    l->part_fd = -1;
    if (rc != 0) {
        unlink(part);
        return rc;
    }
    snap_insert(l, id);
    return 0;
}

/* Moves plog's start up to offset: below the end, DeleteRecords plus a
 * retention pass that drops the whole segments below it; at or past the
 * end, an empty log restarted there. */
static int move_start(struct rlog *l, int64_t offset)
{
    int64_t end = plog_log_end_offset(l->log);
    int rc;
    if (offset >= end) {
        atomic_fetch_add(&l->gen, 1);
        rc = plog_truncate_fully(l->log, offset);
    } else {
        rc = plog_delete_records(l->log, offset, NULL);
        if (rc == 0)
            (void)plog_retention(l->log, clock_wall_ms(), NULL);
    }
    purge_trash(l);
    if (rc == 0)
        l->start = offset;
    return rc;
}

static int op_reset_start(void *ctx, const struct raft_snapshot_id *id)
{
    struct rlog *l = ctx;
    release_held(l);
    if (snap_find(l, id) < 0)
        return KERR_SNAPSHOT_NOT_FOUND;
    if (id->end_offset > l->start || id->end_offset >= plog_log_end_offset(l->log)) {
        int rc = move_start(l, id->end_offset);
        if (rc != 0)
            return rc;
    }
    snaps_prune(l);
    return 0;
}

static const struct raft_log_ops RLOG_OPS = {
    .start_offset = op_start,
    .end_offset = op_end,
    .append = op_append,
    .truncate_to = op_truncate_to,
    .read = op_read,
    .scan = op_scan,
    .latest_snapshot = op_latest,
    .oldest_snapshot = op_oldest,
    .snapshot_size = op_snap_size,
    .snapshot_read = op_snap_read,
    .snapshot_begin = op_snap_begin,
    .snapshot_append = op_snap_append,
    .snapshot_finish = op_snap_finish,
    .reset_start = op_reset_start,
};

struct raft_log rlog_raft_log(struct rlog *l) { return (struct raft_log){&RLOG_OPS, l}; }
const char *rlog_dir(const struct rlog *l) { return l->dir; }
uint64_t rlog_gen(const struct rlog *l) { return atomic_load(&l->gen); }

int rlog_flush(struct rlog *l, int64_t *end, uint64_t *gen)
{
    *gen = atomic_load(&l->gen);
    *end = plog_log_end_offset(l->log);
    return plog_flush(l->log);
}

int rlog_snapshot_load(struct rlog *l, const struct raft_snapshot_id *id, struct buf *out)
{
    buf_reset(out);
    int64_t size = op_snap_size(l, id);
    if (size < 0)
        return KERR_SNAPSHOT_NOT_FOUND;
    char path[4096];
    snap_name(l, id, false, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return KERR_SNAPSHOT_NOT_FOUND;
    int rc = size > 0 ? pread_all(fd, buf_extend(out, (size_t)size), (size_t)size, 0) : 0;
    close(fd);
    return rc;
}

/* ------------------------------------------------------------------ */
/* open / close                                                        */

static bool parse_snap_name(const char *name, struct raft_snapshot_id *id, bool *part)
{
    size_t n = strlen(name);
    size_t sl = strlen(SNAP_SUFFIX), pl = strlen(PART_SUFFIX);
    if (n == 20 + 1 + 10 + pl && !strcmp(name + 31, PART_SUFFIX))
        *part = true;
    else if (n == 20 + 1 + 10 + sl && !strcmp(name + 31, SNAP_SUFFIX))
        *part = false;
    else
        return false;
    if (name[20] != '-')
        return false;
    for (int i = 0; i < 31; i++)
        if (i != 20 && (name[i] < '0' || name[i] > '9'))
            return false;
    id->end_offset = strtoll(name, NULL, 10);
    id->epoch = (int32_t)strtol(name + 21, NULL, 10);
    return true;
}

int rlog_open(const char *dir, int64_t segment_bytes, struct rlog **out, char *err, size_t errlen)
{
    *out = NULL;
    struct rlog *l = xcalloc(1, sizeof *l);
    l->dir = xstrdup(dir);
    l->part_fd = -1;
    buf_init(&l->tmp);
    struct plog_config pc = PLOG_CONFIG_INIT;
    if (segment_bytes > 0)
        pc.segment_bytes = segment_bytes;
    /* Raft decides when to flush (RAFT_OUT_FLUSH); the prefix goes with
     * snapshots, never by age or size. */
    pc.fsync_each_append = false;
    pc.retention_ms = -1;
    pc.retention_bytes = -1;
    pc.file_delete_delay_ms = 0;
    kuuid_t id = RAFT_METADATA_TOPIC_ID;
    int rc = plog_open(dir, &id, &pc, &l->log);
    if (rc != 0) {
        snprintf(err, errlen, "metadata log %s: cannot open: %s", dir, kerr_name((int16_t)rc));
        goto fail;
    }
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "metadata log %s: %s", dir, strerror(errno));
        rc = KERR_KAFKA_STORAGE_ERROR;
        goto fail;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        struct raft_snapshot_id sid;
        bool part;
        if (!parse_snap_name(e->d_name, &sid, &part))
            continue;
        if (part) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path); /* an interrupted write: never complete */
            continue;
        }
        snap_insert(l, &sid);
    }
    closedir(d);
    l->start = plog_log_start_offset(l->log);
    if (l->nsnaps > 0 && l->snaps[0].id.end_offset > l->start) {
        rc = move_start(l, l->snaps[0].id.end_offset);
        if (rc != 0) {
            snprintf(err, errlen, "metadata log %s: cannot move the log start to snapshot %" PRId64 ": %s", dir,
                     l->snaps[0].id.end_offset, kerr_name((int16_t)rc));
            goto fail;
        }
    }
    snaps_prune(l);
    if (l->start > 0 && (l->nsnaps == 0 || l->snaps[0].id.end_offset != l->start))
        slog_warn("metadata log %s: starts at offset %" PRId64 " without a snapshot ending there", dir, l->start);
    *out = l;
    return 0;
fail:
    if (l->log)
        plog_close(l->log, false);
    buf_free(&l->tmp);
    free(l->dir);
    free(l);
    return rc ? rc : KERR_KAFKA_STORAGE_ERROR;
}

void rlog_close(struct rlog *l, bool clean)
{
    if (!l)
        return;
    release_held(l);
    if (l->part_fd >= 0) {
        char part[4096];
        snap_name(l, &l->part_id, true, part, sizeof part);
        close(l->part_fd);
        unlink(part);
    }
    int rc = plog_close(l->log, clean);
    if (clean && rc == 0) {
        /* The metadata log is no log dir's (log/logmgr.h writes those
         * markers): it vouches for itself with the per-log marker
         * plog_open honours and removes, so a clean restart does not
         * check every batch since the last snapshot again. */
        char marker[4096];
        snprintf(marker, sizeof marker, "%s/%s", l->dir, PLOG_CLEAN_SHUTDOWN_FILE);
        int e = fs_write_atomic(marker, "", 0);
        if (e)
            slog_warn("metadata log %s: cannot write %s: %s; it will be recovered at the next start", l->dir,
                      marker, strerror(e));
    }
    buf_free(&l->tmp);
    free(l->dir);
    free(l);
}
