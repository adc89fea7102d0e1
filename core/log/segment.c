#include "log/segment.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log/batch_cursor.h"
#include "log/fsutil.h"
#include "proto/kerr.h"
#include "util/buf.h"
#include "util/sfile.h"
#include "util/slog.h"

/* A header-only scan reads this much at once: enough for many small
 * batches per pread without reading much of a large one. */
#define SCAN_READAHEAD (64 * 1024)
/* A CRC scan reads every byte anyway. */
#define CRC_READAHEAD (1024 * 1024)

char *segment_file_path(const char *dir, int64_t base_offset, const char *suffix)
{
    size_t n = strlen(dir) + 1 + SEGMENT_NAME_DIGITS + strlen(suffix) + 1;
    char *p = xmalloc(n);
    snprintf(p, n, "%s/%020" PRId64 "%s", dir, base_offset, suffix);
    return p;
}

bool segment_parse_name(const char *name, const char *suffix, int64_t *base_offset)
{
    size_t sl = strlen(suffix);
    if (strlen(name) != SEGMENT_NAME_DIGITS + sl || strcmp(name + SEGMENT_NAME_DIGITS, suffix) != 0)
        return false;
    uint64_t v = 0;
    for (int i = 0; i < SEGMENT_NAME_DIGITS; i++) {
        if (name[i] < '0' || name[i] > '9')
            return false;
        unsigned d = (unsigned)(name[i] - '0');
        if (v > ((uint64_t)INT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *base_offset = (int64_t)v;
    return true;
}

static struct segment *segment_new(int64_t base_offset, char *path, int fd, int32_t index_interval_bytes)
{
    struct segment *s = xcalloc(1, sizeof *s);
    s->base_offset = base_offset;
    s->log_path = path;
    s->file = sfile_wrap(fd);
    s->size = 0;
    s->next_offset = base_offset;
    s->max_timestamp = RB_NO_TIMESTAMP;
    s->offset_of_max_timestamp = -1;
    s->index_interval_bytes = index_interval_bytes;
    s->bytes_since_last_index_entry = 0;
    oidx_init(&s->oidx, base_offset);
    tidx_init(&s->tidx, base_offset);
    return s;
}

int segment_create(const char *dir, int64_t base_offset, int32_t index_interval_bytes, struct segment **out)
{
    *out = NULL;
    char *path = segment_file_path(dir, base_offset, SEGMENT_LOG_SUFFIX);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        slog_error("log: cannot create segment %s: %s", path, strerror(errno));
        free(path);
        return KERR_KAFKA_STORAGE_ERROR;
    }
    /* A segment whose name is lost in a crash would lose its batches on
     * restart while later ones survive: make the entry durable now. */
    int e = fs_sync_dir(dir);
    if (e) {
        slog_error("log: cannot sync directory %s: %s", dir, strerror(e));
        close(fd);
        unlink(path);
        free(path);
        return KERR_KAFKA_STORAGE_ERROR;
    }
    *out = segment_new(base_offset, path, fd, index_interval_bytes);
    return 0;
}

int segment_open(const char *dir, int64_t base_offset, int32_t index_interval_bytes, struct segment **out)
{
    *out = NULL;
    char *path = segment_file_path(dir, base_offset, SEGMENT_LOG_SUFFIX);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        slog_error("log: cannot open segment %s: %s", path, strerror(errno));
        free(path);
        return KERR_KAFKA_STORAGE_ERROR;
    }
    *out = segment_new(base_offset, path, fd, index_interval_bytes);
    return 0;
}

void segment_note_batch(struct segment *s, const struct rb_header *h, int64_t position)
{
    int64_t size = rb_batch_size(h);
    int64_t last = rb_last_offset(h);
    if (h->max_timestamp > s->max_timestamp) {
        s->max_timestamp = h->max_timestamp;
        s->offset_of_max_timestamp = last;
    }
    if (s->bytes_since_last_index_entry > s->index_interval_bytes) {
        oidx_append(&s->oidx, last, position);
        tidx_maybe_append(&s->tidx, s->max_timestamp, s->offset_of_max_timestamp);
        s->bytes_since_last_index_entry = 0;
    }
    s->bytes_since_last_index_entry += size;
    s->size = position + size;
    s->next_offset = last + 1;
}

void segment_seal(struct segment *s)
{
    if (s->max_timestamp != RB_NO_TIMESTAMP)
        tidx_maybe_append(&s->tidx, s->max_timestamp, s->offset_of_max_timestamp);
}

static void reset_state(struct segment *s)
{
    s->size = 0;
    s->next_offset = s->base_offset;
    s->max_timestamp = RB_NO_TIMESTAMP;
    s->offset_of_max_timestamp = -1;
    s->bytes_since_last_index_entry = 0;
    oidx_reset(&s->oidx);
    tidx_reset(&s->tidx);
}

/* Checks that have nothing to do with the bytes' integrity but with where
 * the batch sits in the log; a failure is treated like a torn batch. */
static const char *misplaced(const struct segment *s, const struct rb_header *h, int64_t prev_last,
                             int64_t position, int64_t next_segment_base)
{
    if (h->last_offset_delta < 0)
        return "negative lastOffsetDelta";
    if (h->base_offset <= prev_last)
        return prev_last < s->base_offset ? "offset below the segment's base offset" : "offsets not increasing";
    if (h->base_offset > INT64_MAX - h->last_offset_delta)
        return "offset overflow";
    int64_t last = rb_last_offset(h);
    if (last - s->base_offset > INT32_MAX)
        return "offset too far from the segment's base offset";
    if (last >= next_segment_base)
        return "offsets reach into the next segment";
    if (position > INT32_MAX)
        return "segment larger than 2 GiB";
    return NULL;
}

int segment_load(struct segment *s, bool check_crc, int64_t next_segment_base, struct segment_load_result *res)
{
    memset(res, 0, sizeof *res);
    reset_state(s);
    struct stat st;
    if (fstat(s->file->fd, &st) != 0) {
        slog_error("log: cannot stat %s: %s", s->log_path, strerror(errno));
        return KERR_KAFKA_STORAGE_ERROR;
    }
    int64_t file_size = st.st_size;

    struct bcursor c;
    bcur_init(&c, s->file->fd, 0, file_size, check_crc ? CRC_READAHEAD : SCAN_READAHEAD);
    int64_t prev_last = s->base_offset - 1;
    const char *bad = NULL;
    for (;;) {
        struct rb_header h;
        int rc = bcur_header(&c, &h);
        if (rc == BCUR_END)
            break;
        if (rc == BCUR_IOERR) {
            slog_error("log: cannot read %s at %" PRId64 ": %s", s->log_path, c.pos, strerror(c.err));
            bcur_free(&c);
            return KERR_KAFKA_STORAGE_ERROR;
        }
        if (rc == BCUR_BAD) {
            bad = c.reason;
            break;
        }
        bad = misplaced(s, &h, prev_last, c.pos, next_segment_base);
        if (bad)
            break;
        size_t size = (size_t)rb_batch_size(&h);
        if (check_crc) {
            const uint8_t *p;
            rc = bcur_batch(&c, size, &p);
            if (rc == BCUR_IOERR) {
                slog_error("log: cannot read %s at %" PRId64 ": %s", s->log_path, c.pos, strerror(c.err));
                bcur_free(&c);
                return KERR_KAFKA_STORAGE_ERROR;
            }
            if (rc == BCUR_BAD) {
                bad = c.reason;
                break;
            }
            if (!rb_crc_ok(p, size)) {
                bad = "CRC mismatch";
                break;
            }
        }
        segment_note_batch(s, &h, c.pos);
        prev_last = rb_last_offset(&h);
        res->batches++;
        bcur_advance(&c, (int64_t)size);
    }
    int64_t valid = c.pos;
    bcur_free(&c);
    segment_seal(s);

    if (valid < file_size) {
        res->truncated_bytes = file_size - valid;
        res->truncated_at = valid;
        res->reason = bad ? bad : "trailing bytes";
        int e = segment_cut_to_size(s);
        if (e == 0)
            e = segment_sync(s);
        if (e) {
            slog_error("log: cannot truncate %s to %" PRId64 " bytes: %s", s->log_path, valid, strerror(e));
            return KERR_KAFKA_STORAGE_ERROR;
        }
    }
    return 0;
}

int segment_write(struct segment *s, const void *data, size_t len, bool *cut_ok)
{
    *cut_ok = true;
    const uint8_t *p = data;
    size_t done = 0;
    while (done < len) {
        ssize_t w = pwrite(s->file->fd, p + done, len - done, s->size + (int64_t)done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            /* pwrite returning 0 for a non-empty regular-file write means
             * no space in practice; report it as such. */
            int e = w < 0 ? errno : ENOSPC;
            *cut_ok = segment_cut_to_size(s) == 0;
            return e;
        }
        done += (size_t)w;
    }
    return 0;
}

int segment_sync(struct segment *s)
{
    while (fdatasync(s->file->fd) != 0) {
        if (errno != EINTR)
            return errno;
    }
    return 0;
}

int segment_cut_to_size(struct segment *s)
{
    while (ftruncate(s->file->fd, s->size) != 0) {
        if (errno != EINTR)
            return errno;
    }
    return 0;
}

void segment_free(struct segment *s)
{
    if (!s)
        return;
    sfile_unref(s->file);
    oidx_free(&s->oidx);
    tidx_free(&s->tidx);
    free(s->log_path);
    free(s);
}
