/* samsactl dump-log: see dumplog.h. The output follows Kafka's
 * DumpLogSegments line for line, so scripts written for one read the
 * other. */
#include "dumplog.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log/producer_state.h"
#include "proto/record_batch.h"
#include "util/buf.h"

#define NAME_DIGITS 20

static const char *codec_name(int c)
{
    static const char *const names[] = {"none", "gzip", "snappy", "lz4", "zstd"};
    return c >= 0 && c < 5 ? names[c] : "unknown";
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The whole file, malloc'ed (the caller frees). */
static int slurp(const char *path, uint8_t **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return e;
    }
    size_t want = (size_t)st.st_size, got = 0;
    uint8_t *b = xmalloc(want + 1);
    while (got < want) {
        ssize_t r = read(fd, b + got, want - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    *data = b;
    *len = got;
    return 0;
}

/* Base offset from a segment file name (the last path component). */
static bool base_offset_of(const char *path, int64_t *base)
{
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    int64_t v = 0;
    for (int i = 0; i < NAME_DIGITS; i++) {
        if (name[i] < '0' || name[i] > '9')
            return false;
        v = v * 10 + (name[i] - '0');
    }
    *base = v;
    return name[NAME_DIGITS] == '.';
}

/* Bytes as text, control characters escaped. */
static void put_bytes(FILE *out, kbytes_t b)
{
    for (int32_t i = 0; i < b.len; i++) {
        uint8_t c = b.p[i];
        if (c < 0x20 || c == 0x7f)
            fprintf(out, "\\x%02x", c);
        else
            fputc(c, out);
    }
}

static void dump_records(FILE *out, const uint8_t *batch, size_t size, const struct rb_header *h)
{
    if (rb_codec(h) != RB_CODEC_NONE) {
        fprintf(out, "| (%s-compressed records: samsactl has no codecs to decode them)\n", codec_name(rb_codec(h)));
        return;
    }
    struct rb_record_iter it;
    if (rb_record_iter_init_batch(&it, batch, size) != 0) {
        fprintf(out, "| (records unreadable)\n");
        return;
    }
    struct rb_record r;
    int n;
    while ((n = rb_record_next(&it, &r)) == 1) {
        int64_t off = h->base_offset + r.offset_delta;
        int64_t ts = (int64_t)((uint64_t)h->base_timestamp + (uint64_t)r.timestamp_delta);
        if (rb_timestamp_type(h) == RB_LOG_APPEND_TIME)
            ts = h->max_timestamp;
        int64_t seq = h->base_sequence < 0 ? -1 : ((int64_t)h->base_sequence + r.offset_delta) % ((int64_t)INT32_MAX + 1);
        fprintf(out, "| offset: %" PRId64 " %s: %" PRId64 " keySize: %" PRId32 " valueSize: %" PRId32
                     " sequence: %" PRId64 " headerKeys: [",
                off, rb_timestamp_type(h) == RB_LOG_APPEND_TIME ? "LogAppendTime" : "CreateTime", ts, r.key.len,
                r.value.len, seq);
        struct rb_header_iter hi;
        rb_header_iter_init(&hi, &r);
        kstr_t hk;
        kbytes_t hv;
        bool first = true;
        while (rb_header_next(&hi, &hk, &hv) == 1) {
            fprintf(out, "%s%.*s", first ? "" : ",", hk.len, hk.p);
            first = false;
        }
        fprintf(out, "]");
        if (rb_is_control(h)) {
            int16_t type;
            int32_t epoch;
            if (rb_parse_control_record(&r, &type, &epoch) == 0)
                fprintf(out, " controlType: %s(%d)", type == 0 ? "ABORT" : type == 1 ? "COMMIT" : "OTHER", type);
        } else {
            if (r.key.len >= 0) {
                fprintf(out, " key: ");
                put_bytes(out, r.key);
            }
            fprintf(out, " payload: ");
            if (r.value.len >= 0)
                put_bytes(out, r.value);
        }
        fputc('\n', out);
    }
    if (n < 0)
        fprintf(out, "| (malformed record: %s)\n", it.reason ? it.reason : "?");
}

static int dump_log(const char *path, const struct dumplog_opts *o, FILE *out)
{
    uint8_t *d;
    size_t len;
    int e = slurp(path, &d, &len);
    if (e) {
        fprintf(out, "cannot read %s: %s\n", path, strerror(e));
        return 1;
    }
    int64_t base = 0;
    if (base_offset_of(path, &base))
        fprintf(out, "Log starting offset: %" PRId64 "\n", base);
    int rc = 0;
    size_t pos = 0;
    while (pos < len) {
        size_t size;
        int fr = rb_frame(d + pos, len - pos, &size);
        struct rb_header h;
        if (fr != 0 || rb_parse_header(d + pos, size, &h) != 0) {
            fprintf(out, "Found %zu invalid bytes at the end of %s (%s)\n", len - pos, path,
                    fr == RB_FRAME_TRUNCATED ? "a partial batch" : "not a v2 batch");
            rc = 1;
            break;
        }
        int64_t last_seq = h.base_sequence < 0 ? -1
                                                : ((int64_t)h.base_sequence + h.last_offset_delta) %
                                                      ((int64_t)INT32_MAX + 1);
        bool valid = rb_crc_ok(d + pos, size);
        fprintf(out,
                "baseOffset: %" PRId64 " lastOffset: %" PRId64 " count: %" PRId32 " baseSequence: %" PRId32
                " lastSequence: %" PRId64 " producerId: %" PRId64 " producerEpoch: %d partitionLeaderEpoch: %" PRId32
                " isTransactional: %s isControl: %s deleteHorizonMs: ",
                h.base_offset, rb_last_offset(&h), h.records_count, h.base_sequence, last_seq, h.producer_id,
                (int)h.producer_epoch, h.partition_leader_epoch, rb_is_transactional(&h) ? "true" : "false",
                rb_is_control(&h) ? "true" : "false");
        if (rb_has_delete_horizon(&h))
            fprintf(out, "OptionalLong[%" PRId64 "]", h.base_timestamp);
        else
            fprintf(out, "OptionalLong.empty");
        fprintf(out, " position: %zu %s: %" PRId64 " size: %zu magic: %d compresscodec: %s crc: %" PRIu32
                     " isvalid: %s\n",
                pos, rb_timestamp_type(&h) == RB_LOG_APPEND_TIME ? "LogAppendTime" : "CreateTime", h.max_timestamp,
                size, (int)h.magic, codec_name(rb_codec(&h)), h.crc, valid ? "true" : "false");
        if (!valid)
            rc = 1;
        if (o->print_data)
            dump_records(out, d + pos, size, &h);
        pos += size;
    }
    free(d);
    return rc;
}

/* The .log next to an index file, for checking its entries; NULL when
 * there is none. */
static uint8_t *sibling_log(const char *path, const char *suffix, size_t *len)
{
    size_t n = strlen(path) - strlen(suffix);
    char *p = xmalloc(n + sizeof ".log");
    memcpy(p, path, n);
    memcpy(p + n, ".log", sizeof ".log");
    uint8_t *d = NULL;
    if (slurp(p, &d, len) != 0)
        d = NULL;
    free(p);
    return d;
}

/* The batch of log that starts at pos, or false. */
static bool batch_at(const uint8_t *log, size_t len, int64_t pos, struct rb_header *h)
{
    size_t size;
    if (pos < 0 || (size_t)pos >= len || rb_frame(log + pos, len - (size_t)pos, &size) != 0)
        return false;
    return rb_parse_header(log + pos, size, h) == 0;
}

static int dump_index(const char *path, bool time, FILE *out)
{
    uint8_t *d;
    size_t len;
    int e = slurp(path, &d, &len);
    if (e) {
        fprintf(out, "cannot read %s: %s\n", path, strerror(e));
        return 1;
    }
    int64_t base = 0;
    base_offset_of(path, &base);
    size_t esz = time ? 12 : 8;
    size_t llen = 0;
    uint8_t *log = sibling_log(path, time ? ".timeindex" : ".index", &llen);
    int rc = 0;
    if (len % esz)
        fprintf(out, "%s: its length %zu is not a multiple of %zu\n", path, len, esz);
    int64_t prev = -1;
    for (size_t i = 0; i + esz <= len; i += esz) {
        if (time) {
            int64_t ts = (int64_t)be64_read(d + i);
            int64_t off = base + (int32_t)be32_read(d + i + 8);
            /* A preallocated (not yet trimmed) file ends in zeros. */
            if (i > 0 && ts == 0 && off == base)
                break;
            fprintf(out, "timestamp: %" PRId64 " offset: %" PRId64 "\n", ts, off);
            if (ts <= prev) {
                fprintf(out, "Found timestamp mismatch in %s: timestamp %" PRId64 " after %" PRId64 "\n", path, ts,
                        prev);
                rc = 1;
            }
            prev = ts;
        } else {
            int64_t off = base + (int32_t)be32_read(d + i);
            int64_t pos = (int32_t)be32_read(d + i + 4);
            if (i > 0 && off == base && pos == 0)
                break;
            fprintf(out, "offset: %" PRId64 " position: %" PRId64 "\n", off, pos);
            struct rb_header h;
            if (log && (!batch_at(log, llen, pos, &h) || rb_last_offset(&h) != off)) {
                fprintf(out, "Index mismatch in %s: index offset: %" PRId64 ", log offset: %" PRId64 "\n", path,
                        off, batch_at(log, llen, pos, &h) ? rb_last_offset(&h) : -1);
                rc = 1;
            }
        }
    }
    free(log);
    free(d);
    return rc;
}

struct entries {
    struct ps_entry *v;
    size_t n, cap;
};

static void collect(void *ctx, const struct ps_entry *e)
{
    struct entries *es = ctx;
    if (es->n == es->cap) {
        es->cap = es->cap ? es->cap * 2 : 16;
        es->v = xrealloc(es->v, es->cap * sizeof *es->v);
    }
    es->v[es->n++] = *e;
}

static int cmp_pid(const void *a, const void *b)
{
    const struct ps_entry *x = a, *y = b;
    return x->producer_id < y->producer_id ? -1 : x->producer_id > y->producer_id;
}

/* A producer-state snapshot, one line per producer in producer id order,
 * with the fields of Kafka's dumpProducerIdSnapshot. */
static int dump_snapshot(const char *path, FILE *out)
{
    uint8_t *data;
    size_t len;
    int e = slurp(path, &data, &len);
    if (e) {
        fprintf(out, "cannot read %s: %s\n", path, strerror(e));
        return 1;
    }
    struct pstate *s = pstate_new();
    int rc = s ? pstate_snapshot_decode(s, data, len) : 1;
    free(data);
    if (rc) {
        fprintf(out, "%s: not a producer-state snapshot (bad version, CRC or length)\n", path);
        pstate_free(s);
        return 1;
    }
    struct entries es = {0};
    pstate_foreach(s, collect, &es);
    if (es.n > 1)
        qsort(es.v, es.n, sizeof *es.v, cmp_pid);
    for (size_t i = 0; i < es.n; i++) {
        const struct ps_entry *pe = &es.v[i];
        fprintf(out, "producerId: %" PRId64 " producerEpoch: %d coordinatorEpoch: %d currentTxnFirstOffset: ",
                pe->producer_id, pe->epoch, pe->coordinator_epoch);
        if (pe->current_txn_first_offset >= 0)
            fprintf(out, "OptionalLong[%" PRId64 "]", pe->current_txn_first_offset);
        else
            fputs("OptionalLong.empty", out);
        fprintf(out, " lastTimestamp: %" PRId64, pe->last_timestamp);
        if (pe->nbatches) {
            const struct ps_batch *b = &pe->batches[pe->nbatches - 1];
            fprintf(out, " firstSequence: %d lastSequence: %d lastOffset: %" PRId64 " offsetDelta: %" PRId64
                         " timestamp: %" PRId64,
                    b->first_seq, b->last_seq, b->last_offset, b->last_offset - b->first_offset, b->timestamp);
        }
        fputc('\n', out);
    }
    free(es.v);
    pstate_free(s);
    return 0;
}

int dumplog_file(const char *path, const struct dumplog_opts *o, FILE *out)
{
    fprintf(out, "Dumping %s\n", path);
    if (has_suffix(path, ".index") || has_suffix(path, ".index.deleted"))
        return dump_index(path, false, out);
    if (has_suffix(path, ".timeindex") || has_suffix(path, ".timeindex.deleted"))
        return dump_index(path, true, out);
    if (has_suffix(path, ".snapshot"))
        return dump_snapshot(path, out);
    if (has_suffix(path, ".txnindex")) {
        fprintf(out, "%s: samsa writes no such files yet (no transactions)\n", path);
        return 1;
    }
    /* .log, and .log.deleted/.cleaned/.swap leftovers. */
    return dump_log(path, o, out);
}

void dumplog_usage(FILE *f)
{
    fprintf(f, "Usage: samsactl dump-log [--print-data-log] [--files FILE[,FILE...]] [FILE...]\n"
               "\n"
               "Prints the batches of .log segment files, the entries of .index and\n"
               ".timeindex files and the producers of .snapshot files, as\n"
               "kafka-dump-log.sh does. Index entries are checked against the .log next\n"
               "to them.\n"
               "\n"
               "  --files FILE,...     files to dump (also accepted as plain arguments)\n"
               "  --print-data-log     print every record of each batch\n"
               "  --deep-iteration     accepted for compatibility (records are always\n"
               "                       iterated with --print-data-log)\n"
               "\n"
               "Exit status: 0, or 1 when a file could not be read or holds damage.\n");
}

int cmd_dump_log(int argc, char **argv, const struct global_opts *g)
{
    (void)g;
    struct dumplog_opts o = {false};
    const char **files = xcalloc((size_t)argc + 1, sizeof *files);
    char **lists = xcalloc((size_t)argc + 1, sizeof *lists); /* --files values, split in place */
    size_t nfiles = 0, nlists = 0;
    int rc = EXIT_OK;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            dumplog_usage(stdout);
            rc = -1;
            break;
        } else if (strcmp(a, "--print-data-log") == 0) {
            o.print_data = true;
        } else if (strcmp(a, "--deep-iteration") == 0) {
            continue;
        } else if (strcmp(a, "--files") == 0 || strncmp(a, "--files=", 8) == 0) {
            const char *v = a[7] == '=' ? a + 8 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v) {
                fprintf(stderr, "samsactl dump-log: --files needs a value\n");
                rc = EXIT_USAGE;
                break;
            }
            /* Comma-separated: each part becomes a file. */
            size_t parts = 1;
            for (const char *c = v; *c; c++)
                parts += *c == ',';
            files = xrealloc(files, ((size_t)argc + parts + 1) * sizeof *files);
            char *copy = lists[nlists++] = xstrdup(v);
            for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ","))
                files[nfiles++] = tok;
        } else if (strncmp(a, "--", 2) == 0) {
            fprintf(stderr, "samsactl dump-log: unknown option '%s' (see samsactl dump-log --help)\n", a);
            rc = EXIT_USAGE;
            break;
        } else {
            files[nfiles++] = a;
        }
    }
    if (rc == EXIT_OK && nfiles == 0) {
        fprintf(stderr, "samsactl dump-log: no file given (see samsactl dump-log --help)\n");
        rc = EXIT_USAGE;
    }
    if (rc == EXIT_OK) {
        for (size_t i = 0; i < nfiles; i++)
            if (dumplog_file(files[i], &o, stdout) != 0)
                rc = EXIT_KAFKA;
        if (fflush(stdout) != 0)
            rc = EXIT_KAFKA;
    }
    for (size_t i = 0; i < nlists; i++)
        free(lists[i]);
    free(files);
    free(lists);
    return rc < 0 ? EXIT_OK : rc;
}
