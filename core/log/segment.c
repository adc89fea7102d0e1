#include "log/segment.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log/batch_cursor.h"
#include "log/fsutil.h"
#include "proto/kerr.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/fdcache.h"
#include "util/sfile.h"
#include "util/slog.h"

/* A header-only scan reads this much at once: enough for many small
 * batches per pread without reading much of a large one. */
#define SCAN_READAHEAD (64 * 1024)
/* A CRC scan reads every byte anyway. */
#define CRC_READAHEAD (1024 * 1024)

static const char *const exts[] = {SEGMENT_LOG_SUFFIX, INDEX_SUFFIX, TIMEINDEX_SUFFIX};
#define NEXTS (sizeof exts / sizeof exts[0])

char *segment_file_path(const char *dir, int64_t base_offset, const char *suffix)
{
    size_t n = strlen(dir) + 1 + SEGMENT_NAME_DIGITS + strlen(suffix) + 1;
    char *p = xmalloc(n);
    snprintf(p, n, "%s/%020" PRId64 "%s", dir, base_offset, suffix);
    return p;
}

/* "<dir>/<base><ext><suffix>", malloc'ed. */
static char *file_path(const char *dir, int64_t base, const char *ext, const char *suffix)
{
    size_t n = strlen(dir) + 1 + SEGMENT_NAME_DIGITS + strlen(ext) + strlen(suffix) + 1;
    char *p = xmalloc(n);
    snprintf(p, n, "%s/%020" PRId64 "%s%s", dir, base, ext, suffix);
    return p;
}

/* A sibling file of s's .log: its directory comes from the .log's path,
 * so a segment keeps no copy of it. */
static char *sibling_path(const struct segment *s, const char *ext, const char *suffix)
{
    const char *slash = strrchr(s->log_path, '/');
    int dl = slash ? (int)(slash - s->log_path) : 1;
    const char *dir = slash ? s->log_path : ".";
    size_t n = (size_t)dl + 1 + SEGMENT_NAME_DIGITS + strlen(ext) + strlen(suffix) + 1;
    char *p = xmalloc(n);
    snprintf(p, n, "%.*s/%020" PRId64 "%s%s", dl, dir, s->base_offset, ext, suffix);
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

static int cut_fd(struct segment *s, int fd);

/* Almost every segment has the suffix "": it costs no allocation (a
 * malloc chunk is 32 bytes, per segment of every idle partition). */
static char empty_suffix[1];
static char *suffix_dup(const char *x) { return *x ? xstrdup(x) : empty_suffix; }
static void suffix_free(char *x)
{
    if (x != empty_suffix)
        free(x);
}

static void reset_state(struct segment *s)
{
    s->size = 0;
    s->next_offset = s->base_offset;
    s->max_timestamp = RB_NO_TIMESTAMP;
    s->offset_of_max_timestamp = -1;
    s->first_batch_timestamp = RB_NO_TIMESTAMP;
    s->bytes_since_last_index_entry = 0;
    s->oidx.f.n = 0;
    s->tidx.f.n = 0;
}

void segment_free(struct segment *s)
{
    if (!s)
        return;
    fdc_file_free(s->lf);
    idxf_close(&s->oidx.f);
    idxf_close(&s->tidx.f);
    free(s->log_path);
    suffix_free(s->suffix);
    free(s);
}

/* Opens the three files; create empties them. *index_missing (may be
 * NULL) tells whether an index file did not exist before. */
static int open_files(const char *dir, int64_t base, const struct segment_opts *o, const char *suffix, bool create,
                      struct segment **out, bool *index_missing)
{
    *out = NULL;
    struct segment *s = xcalloc(1, sizeof *s);
    s->base_offset = base;
    s->suffix = suffix_dup(suffix);
    s->log_path = file_path(dir, base, SEGMENT_LOG_SUFFIX, suffix);
    s->index_interval_bytes = o->index_interval_bytes;
    s->max_index_bytes = o->max_index_bytes > 0 ? o->max_index_bytes : SEGMENT_DEFAULT_INDEX_BYTES;
    s->roll_jitter_ms = o->roll_jitter_ms;
    s->created_ms = clock_wall_ms();
    s->oidx.base_offset = base;
    s->tidx.base_offset = base;
    reset_state(s);

    /* A create must exist on disk: opened now, the cache adopts the fd
     * and may close it later. An existing file is opened when first
     * used (segment_load opens it only when it is not empty: an idle
     * partition's start costs no open, and no close when the cache sheds
     * it). */
    int fd = -1;
    if (create) {
        fd = fdc_open(s->log_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) {
            slog_error("log: cannot create segment %s: %s", s->log_path, strerror(errno));
            segment_free(s);
            return KERR_KAFKA_STORAGE_ERROR;
        }
    }
    s->lf = fdc_file_new_borrowed(s->log_path, O_RDWR, fd);
    if (index_missing)
        *index_missing = false;
    struct idx_file *fs[] = {&s->oidx.f, &s->tidx.f};
    size_t sizes[] = {OIDX_ENTRY_SIZE, TIDX_ENTRY_SIZE};
    for (int i = 0; i < 2; i++) {
        bool missing = false;
        int e = idxf_open(fs[i], &s->log_path, exts[i + 1], sizes[i], create, &missing);
        if (e == 0 && create && !o->defer_index_room)
            e = idxf_resize(fs[i], (size_t)s->max_index_bytes);
        if (e) {
            char *p = file_path(dir, base, exts[i + 1], suffix);
            slog_error("log: cannot %s index %s: %s", create ? "create" : "open", p, strerror(e));
            free(p);
            segment_free(s);
            return KERR_KAFKA_STORAGE_ERROR;
        }
        if (missing && index_missing)
            *index_missing = true;
    }
    s->unseal_pending = create && o->defer_index_room;
    *out = s;
    return 0;
}

int segment_create(const char *dir, int64_t base_offset, const struct segment_opts *o, const char *file_suffix,
                   bool sync_dir, struct segment **out)
{
    int rc = open_files(dir, base_offset, o, file_suffix, true, out, NULL);
    if (rc || !sync_dir)
        return rc;
    /* A segment whose name is lost in a crash would lose its batches on
     * restart while later ones survive: make the entries durable now. */
    int e = fs_sync_dir(dir);
    if (e) {
        slog_error("log: cannot sync directory %s: %s", dir, strerror(e));
        segment_unlink(*out);
        segment_free(*out);
        *out = NULL;
        return KERR_KAFKA_STORAGE_ERROR;
    }
    return 0;
}

int segment_open(const char *dir, int64_t base_offset, const struct segment_opts *o, const char *file_suffix,
                 struct segment **out)
{
    bool missing;
    int rc = open_files(dir, base_offset, o, file_suffix, false, out, &missing);
    if (rc == 0 && missing) {
        /* An empty index file reads as "no entries", which TRUST would
         * take at its word; make the load rebuild instead. */
        (*out)->oidx.f.n = SIZE_MAX;
    }
    return rc;
}

/* Whether the time index's next entry would be (timestamp, offset) under
 * tidx_maybe_append's rule: true when that entry is due and the file
 * holds it at slot n (*due tells which), or when none is due. */
static bool tidx_next_matches(const struct time_index *x, int64_t timestamp, int64_t offset, bool *due)
{
    *due = x->f.n == 0 || timestamp > tidx_last(x).timestamp;
    if (!*due)
        return true;
    if (idxf_full(&x->f))
        return false;
    struct timestamp_offset e = tidx_entry(x, x->f.n);
    return e.timestamp == timestamp && e.offset == offset;
}

/* Kept entries (load_pinned): the entries due at this batch are those
 * the files hold at their next slots; takes them (n += 1). False, with
 * nothing taken, when they differ or the files end. */
static bool take_kept_entries(struct segment *s, int64_t last, int64_t position)
{
    if (idxf_full(&s->oidx.f))
        return false;
    struct offset_position o = oidx_entry(&s->oidx, s->oidx.f.n);
    bool tdue;
    if (o.offset != last || o.position != position ||
        !tidx_next_matches(&s->tidx, s->max_timestamp, s->offset_of_max_timestamp, &tdue))
        return false;
    s->oidx.f.n++;
    if (tdue)
        s->tidx.f.n++;
    return true;
}

/* The final time-index entry a seal stores (segment_seal: a clean close
 * or a roll) for the batches noted so far: takes it (n += 1) when the
 * file holds it at its next slot. */
static bool take_seal_entry(struct segment *s)
{
    bool due = false;
    if (s->max_timestamp == RB_NO_TIMESTAMP ||
        !tidx_next_matches(&s->tidx, s->max_timestamp, s->offset_of_max_timestamp, &due) || !due)
        return false;
    s->tidx.f.n++;
    return true;
}

/* segment_note_batch; with keep, the index entries due are compared with
 * those the files hold instead of stored (take_kept_entries), and false
 * when they differ: the batch is then not noted yet (a second call, once
 * the files have room, notes it; the timestamps set already are set
 * again alike). */
static bool note_batch(struct segment *s, const struct rb_header *h, int64_t position, bool keep)
{
    int64_t size = rb_batch_size(h);
    int64_t last = rb_last_offset(h);
    /* A clean close before this batch stored its seal's entry here (the
     * segment was appended to after the next open). */
    if (keep && position > 0)
        (void)take_seal_entry(s);
    if (position == 0)
        s->first_batch_timestamp = h->max_timestamp;
    if (h->max_timestamp > s->max_timestamp) {
        s->max_timestamp = h->max_timestamp;
        s->offset_of_max_timestamp = last;
    }
    if (s->bytes_since_last_index_entry > s->index_interval_bytes) {
        if (keep) {
            if (!take_kept_entries(s, last, position))
                return false;
        } else {
            if (!idxf_full(&s->oidx.f))
                oidx_append(&s->oidx, last, position);
            tidx_maybe_append(&s->tidx, s->max_timestamp, s->offset_of_max_timestamp);
        }
        s->bytes_since_last_index_entry = 0;
    }
    s->bytes_since_last_index_entry += size;
    s->size = position + size;
    s->next_offset = last + 1;
    return true;
}

void segment_note_batch(struct segment *s, const struct rb_header *h, int64_t position)
{
    (void)note_batch(s, h, position, false);
}

size_t segment_index_room(const struct segment *s)
{
    size_t o = idxf_capacity(&s->oidx.f) - s->oidx.f.n;
    size_t t = idxf_capacity(&s->tidx.f) - s->tidx.f.n;
    t = t > 0 ? t - 1 : 0;
    return o < t ? o : t;
}

int segment_reserve_index(struct segment *s, size_t nbatches)
{
    int e = idxf_reserve(&s->oidx.f, nbatches);
    if (e == 0)
        e = idxf_reserve(&s->tidx.f, nbatches + 1);
    return e;
}

int segment_seal(struct segment *s)
{
    if (s->max_timestamp != RB_NO_TIMESTAMP)
        tidx_maybe_append(&s->tidx, s->max_timestamp, s->offset_of_max_timestamp);
    int e = idxf_trim(&s->oidx.f);
    if (e == 0)
        e = idxf_trim(&s->tidx.f);
    return e;
}

void segment_seal_entries(struct segment *s)
{
    if (s->max_timestamp != RB_NO_TIMESTAMP)
        tidx_maybe_append(&s->tidx, s->max_timestamp, s->offset_of_max_timestamp);
    s->oidx.f.dirty = true;
    s->tidx.f.dirty = true;
}

int segment_seal_files(struct segment *s)
{
    int e = idxf_shorten(&s->oidx.f);
    if (e == 0)
        e = idxf_shorten(&s->tidx.f);
    return e;
}

void segment_mark_indexes_synced(struct segment *s)
{
    s->oidx.f.dirty = false;
    s->tidx.f.dirty = false;
}

struct sfile *segment_file(struct segment *s, int *err)
{
    struct sfile *f = fdc_get(s->lf, err);
    if (!f && !fdc_is_resource(*err)) /* the cache said so already */
        slog_error("log: cannot open %s: %s", s->log_path, strerror(*err));
    return f;
}

int segment_unseal(struct segment *s)
{
    int e = idxf_resize(&s->oidx.f, (size_t)s->max_index_bytes);
    if (e == 0)
        e = idxf_resize(&s->tidx.f, (size_t)s->max_index_bytes);
    if (e == 0)
        s->unseal_pending = false;
    s->trim_pending = false; /* active again: its room stays */
    return e;
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

/* With n entries of each index taken as they are: reads the batches
 * from the last offset-index entry to the end of the file and derives
 * size, next offset and max timestamp. NULL when everything agrees, else
 * why not (the caller rebuilds). */
static const char *state_from_indexes(struct segment *s, int fd, int64_t file_size, int64_t next_segment_base,
                                      int *batches)
{
    struct offset_position last = s->oidx.f.n ? oidx_entry(&s->oidx, s->oidx.f.n - 1)
                                                : (struct offset_position){s->base_offset, 0};
    struct timestamp_offset tlast = tidx_last(&s->tidx);
    s->max_timestamp = s->tidx.f.n ? tlast.timestamp : RB_NO_TIMESTAMP;
    s->offset_of_max_timestamp = s->tidx.f.n ? tlast.offset : -1;
    s->size = last.position;
    s->next_offset = s->base_offset;
    s->first_batch_timestamp = RB_NO_TIMESTAMP;

    struct bcursor c;
    bcur_init(&c, fd, last.position, file_size, SCAN_READAHEAD);
    int64_t prev_last = s->base_offset - 1;
    int64_t since = 0;
    const char *why = NULL;
    bool first = true;
    for (;;) {
        struct rb_header h;
        int rc = bcur_header(&c, &h);
        if (rc == BCUR_END)
            break;
        if (rc != BCUR_OK) {
            why = rc == BCUR_IOERR ? "read error" : "a bad batch after the last index entry";
            break;
        }
        if (misplaced(s, &h, prev_last, c.pos, next_segment_base)) {
            why = "a misplaced batch after the last index entry";
            break;
        }
        if (first && s->oidx.f.n && rb_last_offset(&h) != last.offset) {
            why = "the last offset index entry does not match its batch";
            break;
        }
        /* An entry is due here but the index has none: it is incomplete. */
        if (!first && since > s->index_interval_bytes) {
            why = "offset index entries missing";
            break;
        }
        if (c.pos == 0)
            s->first_batch_timestamp = h.max_timestamp;
        if (h.max_timestamp > s->max_timestamp) {
            s->max_timestamp = h.max_timestamp;
            s->offset_of_max_timestamp = rb_last_offset(&h);
        }
        since += rb_batch_size(&h);
        prev_last = rb_last_offset(&h);
        s->size = c.pos + rb_batch_size(&h);
        s->next_offset = prev_last + 1;
        (*batches)++;
        first = false;
        bcur_advance(&c, rb_batch_size(&h));
    }
    bcur_free(&c);
    if (why)
        return why;
    if (s->oidx.f.n && first)
        return "the last offset index entry points past the end of the log";
    if (tidx_valid_prefix(&s->tidx, s->tidx.f.n, s->next_offset) != s->tidx.f.n)
        return "time index entries out of order or past the log";
    if (s->tidx.f.n && s->max_timestamp < tlast.timestamp)
        return "time index ahead of the log";
    s->bytes_since_last_index_entry = since;
    if (s->first_batch_timestamp == RB_NO_TIMESTAMP && s->size > 0) {
        /* Only segment.ms needs it: one header read. */
        struct bcursor c0;
        bcur_init(&c0, fd, 0, s->size, RB_HEADER_SIZE);
        struct rb_header h;
        if (bcur_header(&c0, &h) == BCUR_OK)
            s->first_batch_timestamp = h.max_timestamp;
        bcur_free(&c0);
    }
    return NULL;
}

/* TRUST: the index files must hold exactly their entries (a closed or
 * rolled segment's files are trimmed) and agree with the log. */
static const char *trust_indexes(struct segment *s, int fd, int64_t file_size, int64_t next_segment_base,
                                 int *batches)
{
    if (s->oidx.f.n == SIZE_MAX)
        return "index file missing";
    if (s->oidx.f.map_len % OIDX_ENTRY_SIZE || s->tidx.f.map_len % TIDX_ENTRY_SIZE)
        return "index file length not a multiple of its entry size";
    size_t no = idxf_capacity(&s->oidx.f), nt = idxf_capacity(&s->tidx.f);
    if (oidx_valid_prefix(&s->oidx, no, file_size) != no)
        return "offset index entries out of order or past the log";
    s->oidx.f.n = no;
    s->tidx.f.n = nt;
    return state_from_indexes(s, fd, file_size, next_segment_base, batches);
}

static int load_pinned(struct segment *s, int fd, int64_t file_size, enum segment_load_mode mode,
                       int64_t next_segment_base, bool active, struct segment_load_result *res,
                       const struct segment_visitor *v);

int segment_load(struct segment *s, enum segment_load_mode mode, int64_t next_segment_base, bool active,
                 struct segment_load_result *res, const struct segment_visitor *v)
{
    memset(res, 0, sizeof *res);
    /* The size by name: an empty file (an idle partition's) is loaded
     * without an fd, nothing in it to read (load_pinned reads nothing
     * at file_size 0). Nobody else writes the file during a load. */
    struct stat st;
    if (stat(s->log_path, &st) != 0) {
        slog_error("log: cannot stat %s: %s", s->log_path, strerror(errno));
        return KERR_KAFKA_STORAGE_ERROR;
    }
    if (st.st_size == 0)
        return load_pinned(s, -1, 0, mode, next_segment_base, active, res, v);
    int ferr;
    struct sfile *f = segment_file(s, &ferr);
    if (!f)
        return KERR_KAFKA_STORAGE_ERROR;
    int rc = load_pinned(s, f->fd, st.st_size, mode, next_segment_base, active, res, v);
    sfile_unref(f);
    return rc;
}

/* After a scan that kept every entry due (load_pinned): whether the
 * index files hold exactly those entries, nothing after them, plus the
 * final time-index entry a seal stores (segment_seal), which a sealed
 * segment must have and an active one may (a clean close stored it).
 * Takes that entry (n += 1) when the file has it. */
static bool kept_exactly(struct segment *s, bool active)
{
    if (!take_seal_entry(s) && !active && s->max_timestamp != RB_NO_TIMESTAMP) {
        bool due;
        (void)tidx_next_matches(&s->tidx, s->max_timestamp, s->offset_of_max_timestamp, &due);
        if (due)
            return false; /* the file lacks it: segment_seal stores it */
    }
    return s->oidx.f.map_len == s->oidx.f.n * OIDX_ENTRY_SIZE && s->tidx.f.map_len == s->tidx.f.n * TIDX_ENTRY_SIZE;
}

/* A loaded segment's index files sized for what comes next: room for
 * appends (active) or cut to their entries (sealed). */
static int size_indexes(struct segment *s, bool active)
{
    int e = active ? segment_unseal(s) : segment_seal(s);
    if (e) {
        slog_error("log: cannot resize the indexes of %s: %s", s->log_path, strerror(e));
        return KERR_KAFKA_STORAGE_ERROR;
    }
    return 0;
}

/* fd: the log file's, -1 when file_size is 0 (nothing is read then). */
static int load_pinned(struct segment *s, int fd, int64_t file_size, enum segment_load_mode mode,
                       int64_t next_segment_base, bool active, struct segment_load_result *res,
                       const struct segment_visitor *v)
{
    memset(res, 0, sizeof *res);

    if (mode == SEGMENT_LOAD_TRUST) {
        const char *why = trust_indexes(s, fd, file_size, next_segment_base, &res->batches);
        if (!why)
            goto sized;
        res->rebuild_reason = why;
        mode = SEGMENT_LOAD_REBUILD;
        res->batches = 0;
    }
    bool check_crc = mode == SEGMENT_LOAD_RECOVER;
    reset_state(s);
    /* RECOVER compares before it writes: the entries the scan finds due
     * are taken from the index files for as long as the files hold them
     * (keep), and only from the first that differs are they stored, in
     * files resized for the rest. Kafka's LogSegment.recover resets both
     * indexes and stores every entry again; the result is the same
     * entries, but a segment whose files already agree with its batches
     * (an empty one; an idle one closed cleanly, then crashed) is left
     * untouched, with no resize now and no trim or sync at its close.
     * REBUILD (TRUST found the files wrong) stores from the start. */
    bool keep = check_crc;
    int e;
    if (!keep) {
        res->rebuilt = true;
        /* Room for the entries the scan will add; trimmed below if closed. */
        e = segment_unseal(s);
        if (e) {
            slog_error("log: cannot resize the indexes of %s: %s", s->log_path, strerror(e));
            return KERR_KAFKA_STORAGE_ERROR;
        }
    }

    struct bcursor c;
    bcur_init(&c, fd, 0, file_size, check_crc ? CRC_READAHEAD : SCAN_READAHEAD);
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
        if (!note_batch(s, &h, c.pos, keep)) {
            /* The files end or differ here: stored from this entry on. */
            keep = false;
            res->rebuilt = true;
            e = segment_unseal(s);
            if (e) {
                slog_error("log: cannot resize the indexes of %s: %s", s->log_path, strerror(e));
                bcur_free(&c);
                return KERR_KAFKA_STORAGE_ERROR;
            }
            (void)note_batch(s, &h, c.pos, false);
        }
        if (v && v->batch)
            v->batch(v->ctx, &h);
        prev_last = rb_last_offset(&h);
        res->batches++;
        bcur_advance(&c, (int64_t)size);
    }
    int64_t valid = c.pos;
    bcur_free(&c);

    if (valid < file_size) {
        res->truncated_bytes = file_size - valid;
        res->truncated_at = valid;
        res->reason = bad ? bad : "trailing bytes";
        e = segment_cut_to_size(s);
        if (e == 0)
            e = segment_sync(s);
        if (e) {
            slog_error("log: cannot truncate %s to %" PRId64 " bytes: %s", s->log_path, valid, strerror(e));
            return KERR_KAFKA_STORAGE_ERROR;
        }
    }

    if (keep && kept_exactly(s, active)) {
        if (!active) {
            /* The files agree with the batches, but a crash came after
             * them: they may be in the page cache only, like the batches
             * past the recovery point. The flush that recovery asks for
             * syncs them. */
            s->oidx.f.dirty = true;
            s->tidx.f.dirty = true;
            return 0;
        }
        /* An active segment's files hold exactly their entries only as
         * created (empty) or as a clean close trimmed and synced them,
         * untouched since (unseal_pending): durable, owed nothing. */
        s->unseal_pending = true;
        return 0;
    }
    return size_indexes(s, active);

sized:
    if (active && !res->rebuilt) {
        /* Trusted as the clean close left it: sized for appends by the
         * first one (segment_unseal), not now. */
        s->unseal_pending = true;
        return 0;
    }
    return size_indexes(s, active);
}

int segment_write(struct segment *s, const void *data, size_t len, bool *cut_ok)
{
    *cut_ok = true;
    int e;
    struct sfile *f = segment_file(s, &e);
    if (!f)
        return e; /* nothing written */
    const uint8_t *p = data;
    size_t done = 0;
    while (done < len) {
        ssize_t w = pwrite(f->fd, p + done, len - done, s->size + (int64_t)done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            /* pwrite returning 0 for a non-empty regular-file write means
             * no space in practice; report it as such. */
            e = w < 0 ? errno : ENOSPC;
            *cut_ok = cut_fd(s, f->fd) == 0;
            sfile_unref(f);
            return e;
        }
        done += (size_t)w;
    }
    sfile_unref(f);
    return 0;
}

int segment_sync(struct segment *s)
{
    int e;
    struct sfile *f = segment_file(s, &e);
    if (!f)
        return e;
    e = 0;
    while (fdatasync(f->fd) != 0) {
        if (errno != EINTR) {
            e = errno;
            break;
        }
    }
    sfile_unref(f);
    return e;
}

static int cut_fd(struct segment *s, int fd)
{
    while (ftruncate(fd, s->size) != 0) {
        if (errno != EINTR)
            return errno;
    }
    return 0;
}

int segment_cut_to_size(struct segment *s)
{
    int e;
    struct sfile *f = segment_file(s, &e);
    if (!f)
        return e;
    e = cut_fd(s, f->fd);
    sfile_unref(f);
    return e;
}

static int truncate_pinned(struct segment *s, int fd, int64_t offset);

int segment_truncate_to(struct segment *s, int64_t offset)
{
    int fe;
    struct sfile *f = segment_file(s, &fe);
    if (!f)
        return KERR_KAFKA_STORAGE_ERROR;
    int rc = truncate_pinned(s, f->fd, offset);
    sfile_unref(f);
    return rc;
}

static int truncate_pinned(struct segment *s, int fd, int64_t offset)
{
    int64_t cut = 0;
    if (offset > s->base_offset) {
        /* The first batch ending at or after offset starts the cut. */
        struct offset_position from = oidx_lookup(&s->oidx, offset - 1);
        struct bcursor c;
        bcur_init(&c, fd, from.position, s->size, SCAN_READAHEAD);
        struct rb_header h;
        int st;
        while ((st = bcur_header(&c, &h)) == BCUR_OK && rb_last_offset(&h) < offset)
            bcur_advance(&c, rb_batch_size(&h));
        cut = c.pos;
        bcur_free(&c);
        if (st == BCUR_IOERR || st == BCUR_BAD) {
            slog_error("log: %s: truncation scan failed at %" PRId64, s->log_path, cut);
            return KERR_KAFKA_STORAGE_ERROR;
        }
    }
    if (cut >= s->size)
        return 0;
    oidx_truncate_to(&s->oidx, offset);
    tidx_truncate_to(&s->tidx, offset);
    s->size = cut;
    int e = cut_fd(s, fd);
    if (e) {
        slog_error("log: cannot truncate %s to %" PRId64 " bytes: %s", s->log_path, cut, strerror(e));
        return KERR_KAFKA_STORAGE_ERROR;
    }
    /* The time index may keep an entry whose offset survived but whose
     * timestamp came from a removed batch: drop those too. */
    int batches = 0;
    const char *why = state_from_indexes(s, fd, cut, INT64_MAX, &batches);
    if (why) {
        struct segment_load_result r;
        return load_pinned(s, fd, cut, SEGMENT_LOAD_REBUILD, INT64_MAX, true, &r, NULL);
    }
    return 0;
}

int segment_rename(struct segment *s, const char *new_suffix)
{
    if (strcmp(s->suffix, new_suffix) == 0)
        return 0;
    int rc = 0;
    char *from = sibling_path(s, SEGMENT_LOG_SUFFIX, s->suffix);
    char *to = sibling_path(s, SEGMENT_LOG_SUFFIX, new_suffix);
    /* Pinned across the rename, the cached fd stays open, so nobody opens
     * the old name meanwhile (best effort: without an fd to spare, a
     * reader racing the rename gets one retriable error at worst). */
    int pe;
    struct sfile *pin = fdc_get(s->lf, &pe);
    if (rename(from, to) != 0) {
        slog_error("log: cannot rename %s to %s: %s", from, to, strerror(errno));
        rc = KERR_KAFKA_STORAGE_ERROR;
        free(to);
    } else {
        char *old = s->log_path;
        s->log_path = to;
        fdc_file_renamed(s->lf, to);
        free(old);
    }
    sfile_unref(pin);
    free(from);
    struct idx_file *fs[] = {&s->oidx.f, &s->tidx.f};
    for (int i = 0; i < 2 && rc == 0; i++) {
        char *f = sibling_path(s, exts[i + 1], s->suffix);
        char *p = sibling_path(s, exts[i + 1], new_suffix);
        int e = idxf_rename(fs[i], f, p);
        if (e) {
            slog_error("log: cannot rename %s to %s: %s", f, p, strerror(e));
            rc = KERR_KAFKA_STORAGE_ERROR;
        }
        free(f);
        free(p);
    }
    if (rc == 0) {
        /* The .txnindex exists only where an ABORT marker went. */
        char *tf = sibling_path(s, SEGMENT_TXNINDEX_SUFFIX, s->suffix);
        char *tt = sibling_path(s, SEGMENT_TXNINDEX_SUFFIX, new_suffix);
        if (rename(tf, tt) != 0 && errno != ENOENT) {
            slog_error("log: cannot rename %s to %s: %s", tf, tt, strerror(errno));
            rc = KERR_KAFKA_STORAGE_ERROR;
        }
        free(tf);
        free(tt);
    }
    if (rc == 0) {
        suffix_free(s->suffix);
        s->suffix = suffix_dup(new_suffix);
    }
    return rc;
}

int segment_unlink(struct segment *s)
{
    int e = 0;
    char *txn = sibling_path(s, SEGMENT_TXNINDEX_SUFFIX, s->suffix);
    char ip[PATH_MAX] = "", tp[PATH_MAX] = "";
    if (s->oidx.f.log_path)
        idxf_path(&s->oidx.f, ip, sizeof ip);
    if (s->tidx.f.log_path)
        idxf_path(&s->tidx.f, tp, sizeof tp);
    const char *paths[] = {s->log_path, *ip ? ip : NULL, *tp ? tp : NULL, txn};
    for (int i = 0; i < 4; i++)
        if (paths[i] && unlink(paths[i]) != 0 && errno != ENOENT && !e)
            e = errno;
    free(txn);
    return e;
}

int64_t segment_last_modified(const struct segment *s)
{
    /* By name: retention asks for every segment without timestamps, and
     * an idle one should not need an fd for it. The name is the fd
     * cache's copy (read under its lock: the cleaner may rename a listed
     * segment while another thread looks, e.g. plog_cleanable under
     * seg_lock alone); a stat racing that rename falls back to the fd. */
    char path[PATH_MAX];
    fdc_file_path(s->lf, path, sizeof path);
    struct stat st;
    if (stat(path, &st) != 0) {
        int e;
        struct sfile *f = fdc_get(s->lf, &e);
        int rc = f ? fstat(f->fd, &st) : -1;
        sfile_unref(f);
        if (rc != 0)
            return 0;
    }
    return (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
}

int64_t segment_largest_timestamp(const struct segment *s)
{
    return s->max_timestamp >= 0 ? s->max_timestamp : segment_last_modified(s);
}
