/* samsactl consume (see consume.h).
 *
 * Fetching: one Fetch in flight per leader, covering that leader's
 * partitions, waited on together with kc_wait_any. Every Fetch is a full,
 * sessionless one (session id 0, epoch -1): a tool reading a handful of
 * partitions gains nothing from KIP-227 sessions, and sessionless fetches
 * cannot go wrong on a session eviction. Versions are the highest both
 * sides support, at least 4 (record batch v2, isolation level); v13+
 * names the topic by id, so it is used only when Metadata gave one.
 *
 * Offsets: "earliest"/"latest" (and the default, latest, or earliest with
 * --from-beginning) are resolved with ListOffsets on each leader. On
 * OFFSET_OUT_OF_RANGE the position is reset as the console consumer's
 * auto.offset.reset would (earliest with --from-beginning or --offset
 * earliest, latest otherwise), with a warning. Records before the
 * position inside the first batch are skipped. read_committed drops
 * aborted transactions from the fetch response's AbortedTransactions as
 * the Java consumer does; control batches are never printed. */
#include "consume.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "plugin/codec.h"
#include "plugin/registry.h"
#include "proto/kerr.h"
#include "util/clock.h"

enum {
    OPT_TOPIC = 1,
    OPT_PARTITION,
    OPT_OFFSET,
    OPT_FROM_BEGINNING,
    OPT_MAX_MESSAGES,
    OPT_TIMEOUT_MS,
    OPT_ISOLATION_LEVEL,
    OPT_PROPERTY,
    OPT_CONSUMER_PROPERTY,
};

static const struct opt_def consume_defs[] = {
    {"topic", true, OPT_TOPIC},
    {"partition", true, OPT_PARTITION},
    {"offset", true, OPT_OFFSET},
    {"from-beginning", false, OPT_FROM_BEGINNING},
    {"max-messages", true, OPT_MAX_MESSAGES},
    {"timeout-ms", true, OPT_TIMEOUT_MS},
    {"isolation-level", true, OPT_ISOLATION_LEVEL},
    {"property", true, OPT_PROPERTY},
    {"consumer-property", true, OPT_CONSUMER_PROPERTY},
    {NULL, false, 0},
};

void consume_usage(FILE *f)
{
    fputs("Usage: samsactl consume --topic TOPIC [options]\n"
          "Prints the records of TOPIC (all partitions, or one), one per line.\n"
          "\n"
          "  --topic TOPIC                 topic to read (required)\n"
          "  --partition P                 read only partition P\n"
          "  --offset earliest|latest|N    where to start (default latest)\n"
          "  --from-beginning              start at the earliest offset\n"
          "  --max-messages N              stop after N records\n"
          "  --timeout-ms MS               stop when no record arrives for MS (default: never)\n"
          "  --isolation-level read_committed|read_uncommitted   (default read_uncommitted)\n"
          "  --property print.timestamp=true | print.partition=true | print.offset=true |\n"
          "             print.headers=true | print.key=true | print.value=false\n"
          "  --property key.separator=SEP  between columns (default: tab)\n"
          "  --property line.separator=SEP | headers.separator=SEP | null.literal=TEXT\n"
          "  --consumer-property K=V       isolation.level, fetch.max.wait.ms, fetch.min.bytes,\n"
          "                                fetch.max.bytes, max.partition.fetch.bytes\n"
          "  --bootstrap-server HOST:PORT[,...]  (default $SAMSA_BOOTSTRAP or " SAMSACTL_DEFAULT_BOOTSTRAP ")\n"
          "Separators understand \\t, \\n, \\r and \\\\.\n",
          f);
}

void fmt_opts_default(struct fmt_opts *f)
{
    memset(f, 0, sizeof *f);
    f->print_value = true;
    f->key_separator = "\t";
    f->line_separator = "\n";
    f->headers_separator = ",";
    f->null_literal = "null";
}

void consume_opts_free(struct consume_opts *o) { arena_free(&o->arena); }

static bool parse_isolation(const char *s, int8_t *out)
{
    if (strcmp(s, "read_committed") == 0)
        *out = 1;
    else if (strcmp(s, "read_uncommitted") == 0)
        *out = 0;
    else
        return false;
    return true;
}

static int set_property(struct consume_opts *o, const char *kv, bool consumer, char *err, size_t errlen)
{
    char *key;
    const char *value;
    if (!split_kv(&o->arena, kv, &key, &value)) {
        snprintf(err, errlen, "invalid --%s '%s' (want key=value)", consumer ? "consumer-property" : "property", kv);
        return ARGS_ERROR;
    }
    struct fmt_opts *f = &o->fmt;
    int32_t *num = NULL;
    int32_t min = 0;
    if (strcmp(key, "isolation.level") == 0) {
        if (!parse_isolation(value, &o->isolation_level)) {
            snprintf(err, errlen, "invalid isolation.level '%s'", value);
            return ARGS_ERROR;
        }
    } else if (strcmp(key, "fetch.max.wait.ms") == 0) {
        num = &o->fetch_max_wait_ms;
    } else if (strcmp(key, "fetch.min.bytes") == 0) {
        num = &o->fetch_min_bytes;
    } else if (strcmp(key, "fetch.max.bytes") == 0) {
        num = &o->fetch_max_bytes, min = 1;
    } else if (strcmp(key, "max.partition.fetch.bytes") == 0) {
        num = &o->max_partition_fetch_bytes, min = 1;
    } else if (consumer) {
        fprintf(stderr, "samsactl consume: warning: ignoring consumer property '%s'\n", key);
    } else if (strcmp(key, "print.timestamp") == 0) {
        f->print_timestamp = parse_bool_prop(value);
    } else if (strcmp(key, "print.partition") == 0) {
        f->print_partition = parse_bool_prop(value);
    } else if (strcmp(key, "print.offset") == 0) {
        f->print_offset = parse_bool_prop(value);
    } else if (strcmp(key, "print.headers") == 0) {
        f->print_headers = parse_bool_prop(value);
    } else if (strcmp(key, "print.key") == 0) {
        f->print_key = parse_bool_prop(value);
    } else if (strcmp(key, "print.value") == 0) {
        f->print_value = parse_bool_prop(value);
    } else if (strcmp(key, "key.separator") == 0) {
        f->key_separator = unescape_dup(&o->arena, value);
    } else if (strcmp(key, "line.separator") == 0) {
        f->line_separator = unescape_dup(&o->arena, value);
    } else if (strcmp(key, "headers.separator") == 0) {
        f->headers_separator = unescape_dup(&o->arena, value);
    } else if (strcmp(key, "null.literal") == 0) {
        f->null_literal = unescape_dup(&o->arena, value);
    } else {
        fprintf(stderr, "samsactl consume: warning: ignoring property '%s'\n", key);
    }
    if (num && !parse_i32(value, min, INT32_MAX, num)) {
        snprintf(err, errlen, "invalid %s '%s'", key, value);
        return ARGS_ERROR;
    }
    return ARGS_OK;
}

int consume_parse_args(int argc, char **argv, struct consume_opts *o, struct global_opts *g, char *err,
                       size_t errlen)
{
    memset(o, 0, sizeof *o);
    arena_init(&o->arena);
    o->partition = -1;
    o->offset_kind = OFFSET_DEFAULT;
    o->max_messages = -1;
    o->timeout_ms = -1;
    /* The Java consumer's defaults. */
    o->fetch_max_wait_ms = 500;
    o->fetch_min_bytes = 1;
    o->fetch_max_bytes = 52428800;
    o->max_partition_fetch_bytes = 1048576;
    fmt_opts_default(&o->fmt);

    struct opt_iter it;
    opt_iter_init(&it, argc, argv, consume_defs, err, errlen);
    int id;
    bool have_offset = false;
    while ((id = opt_next(&it)) > 0) {
        if (global_opt_apply(g, id, it.arg))
            continue;
        switch (id) {
        case OPT_HELP:
            return ARGS_HELP;
        case OPT_TOPIC:
            o->topic = it.arg;
            break;
        case OPT_PARTITION:
            if (!parse_i32(it.arg, 0, INT32_MAX, &o->partition)) {
                snprintf(err, errlen, "invalid --partition '%s' (want a number >= 0)", it.arg);
                return ARGS_ERROR;
            }
            break;
        case OPT_OFFSET:
            have_offset = true;
            if (strcmp(it.arg, "earliest") == 0) {
                o->offset_kind = OFFSET_EARLIEST;
            } else if (strcmp(it.arg, "latest") == 0) {
                o->offset_kind = OFFSET_LATEST;
            } else if (parse_i64(it.arg, 0, INT64_MAX, &o->offset)) {
                o->offset_kind = OFFSET_ABSOLUTE;
            } else {
                snprintf(err, errlen, "invalid --offset '%s' (want earliest, latest or a number >= 0)", it.arg);
                return ARGS_ERROR;
            }
            break;
        case OPT_FROM_BEGINNING:
            o->from_beginning = true;
            break;
        case OPT_MAX_MESSAGES:
            if (!parse_i64(it.arg, 1, INT64_MAX, &o->max_messages)) {
                snprintf(err, errlen, "invalid --max-messages '%s' (want a number > 0)", it.arg);
                return ARGS_ERROR;
            }
            break;
        case OPT_TIMEOUT_MS:
            if (!parse_i64(it.arg, 0, INT32_MAX, &o->timeout_ms)) {
                snprintf(err, errlen, "invalid --timeout-ms '%s' (want milliseconds >= 0)", it.arg);
                return ARGS_ERROR;
            }
            break;
        case OPT_ISOLATION_LEVEL:
            if (!parse_isolation(it.arg, &o->isolation_level)) {
                snprintf(err, errlen, "invalid --isolation-level '%s' (want read_committed or read_uncommitted)",
                         it.arg);
                return ARGS_ERROR;
            }
            break;
        case OPT_PROPERTY:
        case OPT_CONSUMER_PROPERTY:
            if (set_property(o, it.arg, id == OPT_CONSUMER_PROPERTY, err, errlen) != ARGS_OK)
                return ARGS_ERROR;
            break;
        default:
            snprintf(err, errlen, "option '--%s' is not valid here", it.name);
            return ARGS_ERROR;
        }
    }
    if (id < 0)
        return ARGS_ERROR;
    if (!o->topic || !*o->topic) {
        snprintf(err, errlen, "--topic is required");
        return ARGS_ERROR;
    }
    if (have_offset && o->from_beginning) {
        /* As ConsoleConsumerOptions. */
        snprintf(err, errlen, "options --from-beginning and --offset cannot be specified together");
        return ARGS_ERROR;
    }
    if (o->from_beginning)
        o->offset_kind = OFFSET_EARLIEST;
    return ARGS_OK;
}

/* ---- formatting ---- */

static void put_str(struct buf *out, const char *s) { buf_append(out, s, strlen(s)); }

static void put_bytes(struct buf *out, kbytes_t b, const char *null_literal)
{
    if (b.len < 0)
        put_str(out, null_literal);
    else
        buf_append(out, b.p, (size_t)b.len);
}

static void put_fmt(struct buf *out, const char *fmt, int64_t v)
{
    char tmp[48];
    int n = snprintf(tmp, sizeof tmp, fmt, (long long)v);
    buf_append(out, tmp, (size_t)n);
}

static void put_sep(struct buf *out, const struct fmt_opts *f, bool more)
{
    put_str(out, more ? f->key_separator : f->line_separator);
}

void format_record(struct buf *out, const struct fmt_opts *f, const struct fmt_record *r)
{
    if (f->print_timestamp) {
        put_str(out, r->timestamp_type == RB_LOG_APPEND_TIME ? "LogAppendTime:" : "CreateTime:");
        put_fmt(out, "%lld", r->timestamp);
        put_sep(out, f, f->print_partition || f->print_offset || f->print_headers || f->print_key || f->print_value);
    }
    if (f->print_partition) {
        put_fmt(out, "Partition:%lld", r->partition);
        put_sep(out, f, f->print_offset || f->print_headers || f->print_key || f->print_value);
    }
    if (f->print_offset) {
        put_fmt(out, "Offset:%lld", r->offset);
        put_sep(out, f, f->print_headers || f->print_key || f->print_value);
    }
    if (f->print_headers) {
        struct rb_header_iter hi;
        rb_header_iter_init(&hi, r->rec);
        kstr_t hk;
        kbytes_t hv;
        int n = 0;
        while (rb_header_next(&hi, &hk, &hv) == 1) {
            if (n++ > 0)
                put_str(out, f->headers_separator);
            buf_append(out, hk.p, hk.len > 0 ? (size_t)hk.len : 0);
            put_str(out, ":");
            put_bytes(out, hv, f->null_literal);
        }
        if (n == 0)
            put_str(out, "NO_HEADERS");
        put_sep(out, f, f->print_key || f->print_value);
    }
    if (f->print_key) {
        put_bytes(out, r->rec->key, f->null_literal);
        put_sep(out, f, f->print_value);
    }
    if (f->print_value) {
        put_bytes(out, r->rec->value, f->null_literal);
        put_str(out, f->line_separator);
    }
}

/* ---- consuming ---- */

struct cpart {
    int32_t id;
    int64_t pos;       /* next offset to print */
    int32_t max_bytes; /* grows when one batch does not fit */
    int32_t leader;    /* node id, -1 unknown */
    bool resolve;      /* pos must be (re)resolved with ListOffsets */
    int64_t resolve_ts; /* -2 earliest, -1 latest */
};

struct consumer {
    struct kc_client *c;
    const struct consume_opts *o;
    kuuid_t topic_id;
    struct cpart *parts;
    int nparts;
    int64_t count;
    bool done;
    bool stale_metadata;
    bool output_closed;
    struct buf out;
};

static const char *codec_name(int codec)
{
    switch (codec) {
    case RB_CODEC_GZIP: return "gzip";
    case RB_CODEC_SNAPPY: return "snappy";
    case RB_CODEC_LZ4: return "lz4";
    case RB_CODEC_ZSTD: return "zstd";
    default: return "an unknown codec";
    }
}

static void flush_out(struct consumer *cs)
{
    if (cs->out.len == 0 || cs->output_closed)
        return;
    if (fwrite(cs->out.data, 1, cs->out.len, stdout) != cs->out.len || fflush(stdout) != 0) {
        /* Reader gone (e.g. piped into head): stop quietly. */
        cs->output_closed = true;
        cs->done = true;
    }
    buf_reset(&cs->out);
}

/* Refreshes leaders from Metadata. */
static int refresh_metadata(struct consumer *cs)
{
    const kc_topic_t *t;
    int rc = kc_topic_metadata(cs->c, cs->o->topic, false, &t);
    if (rc)
        return rc;
    cs->topic_id = t->topic_id;
    for (int i = 0; i < cs->nparts; i++) {
        const kc_partition_t *p = kc_meta_partition(t, cs->parts[i].id);
        if (!p)
            return kc_fail(cs->c, KERR_UNKNOWN_TOPIC_OR_PARTITION, "Partition %s-%d does not exist", cs->o->topic,
                           cs->parts[i].id);
        cs->parts[i].leader = p->leader_id;
    }
    cs->stale_metadata = false;
    return 0;
}

/* ListOffsets for the partitions marked resolve, one request per leader. */
static int resolve_offsets(struct consumer *cs)
{
    struct kc_client *c = cs->c;
    for (int i = 0; i < cs->nparts; i++) {
        struct cpart *lead = &cs->parts[i];
        if (!lead->resolve)
            continue;
        struct kc_conn *conn;
        int rc = kc_node_conn(c, lead->leader, &conn);
        if (rc)
            return rc;
        int16_t v = kc_version(conn, KAPI_LIST_OFFSETS);
        if (v < 0)
            return kc_fail(c, KERR_UNSUPPORTED_VERSION, "broker %s:%d does not support ListOffsets", conn->host,
                           conn->port);
        struct arena a = ARENA_INIT;
        list_offsets_request_t req;
        list_offsets_request_init(&req);
        req.replica_id = -1;
        req.isolation_level = cs->o->isolation_level;
        req.timeout_ms = c->timeout_ms;
        req.topics.a = list_offsets_request_list_offsets_topic_new_array(&a, 1);
        req.topics.n = 1;
        list_offsets_request_list_offsets_topic_t *t = &req.topics.a[0];
        t->name = KSTR(cs->o->topic);
        int n = 0;
        for (int j = i; j < cs->nparts; j++)
            n += cs->parts[j].resolve && cs->parts[j].leader == lead->leader;
        t->partitions.a = list_offsets_request_list_offsets_partition_new_array(&a, n);
        t->partitions.n = n;
        int k = 0;
        for (int j = i; j < cs->nparts; j++) {
            if (!cs->parts[j].resolve || cs->parts[j].leader != lead->leader)
                continue;
            t->partitions.a[k].partition_index = cs->parts[j].id;
            t->partitions.a[k].timestamp = cs->parts[j].resolve_ts;
            t->partitions.a[k].max_num_offsets = 1;
            k++;
        }
        struct kc_response resp;
        rc = kc_call_version(c, conn, KAPI_LIST_OFFSETS, v, &req, &resp);
        arena_free(&a);
        if (rc)
            return rc;
        const list_offsets_response_t *m = resp.msg;
        for (int32_t ti = 0; ti < m->topics.n; ti++) {
            if (!kstr_eqc(m->topics.a[ti].name, cs->o->topic))
                continue;
            for (int32_t pi = 0; pi < m->topics.a[ti].partitions.n; pi++) {
                const list_offsets_response_list_offsets_partition_response_t *pr = &m->topics.a[ti].partitions.a[pi];
                struct cpart *cp = NULL;
                for (int j = 0; j < cs->nparts; j++)
                    if (cs->parts[j].id == pr->partition_index && cs->parts[j].resolve)
                        cp = &cs->parts[j];
                if (!cp)
                    continue;
                if (pr->error_code) {
                    if (kc_retriable(pr->error_code) || pr->error_code == KERR_UNKNOWN_TOPIC_OR_PARTITION) {
                        cs->stale_metadata = true;
                        continue;
                    }
                    int code = pr->error_code;
                    kc_response_free(&resp);
                    return kc_fail(c, code, "ListOffsets for %s-%d: %s", cs->o->topic, cp->id,
                                   kc_default_message(code));
                }
                int64_t off = pr->offset;
                if (v == 0)
                    off = pr->old_style_offsets.n > 0 ? pr->old_style_offsets.a[0] : -1;
                if (off < 0) {
                    cs->stale_metadata = true;
                    continue;
                }
                cp->pos = off;
                cp->resolve = false;
            }
        }
        kc_response_free(&resp);
        if (lead->resolve) /* not answered: try again after a refresh */
            cs->stale_metadata = true;
        if (cs->stale_metadata)
            return 0;
    }
    return 0;
}

/* Producer ids of aborted transactions seen so far in this response. */
struct aborted {
    int64_t *ids;
    int n, cap;
};

static bool aborted_has(const struct aborted *a, int64_t id)
{
    for (int i = 0; i < a->n; i++)
        if (a->ids[i] == id)
            return true;
    return false;
}

static void aborted_add(struct aborted *a, int64_t id)
{
    if (aborted_has(a, id))
        return;
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 8;
        a->ids = xrealloc(a->ids, (size_t)a->cap * sizeof *a->ids);
    }
    a->ids[a->n++] = id;
}

static void aborted_remove(struct aborted *a, int64_t id)
{
    for (int i = 0; i < a->n; i++)
        if (a->ids[i] == id) {
            a->ids[i] = a->ids[--a->n];
            return;
        }
}

static int cmp_aborted(const void *x, const void *y)
{
    const fetch_response_aborted_transaction_t *a = x, *b = y;
    return a->first_offset < b->first_offset ? -1 : a->first_offset > b->first_offset;
}

static bool is_abort_marker(const uint8_t *batch, size_t len)
{
    struct rb_record_iter it;
    struct rb_record rec;
    int16_t type;
    int32_t epoch;
    if (rb_record_iter_init_batch(&it, batch, len) != 0 || rb_record_next(&it, &rec) != 1)
        return false;
    return rb_parse_control_record(&rec, &type, &epoch) == 0 && type == RB_CONTROL_ABORT;
}

int consume_records(struct records_ctx *x, const uint8_t *p, size_t n,
                    const fetch_response_aborted_transaction_t *aborted_txns, int32_t naborted)
{
    const struct consume_opts *o = x->o;
    struct aborted ab = {0};
    fetch_response_aborted_transaction_t *txns = NULL;
    int ntxns = 0, next_txn = 0;
    bool committed = o->isolation_level == 1;
    x->err[0] = '\0';
    if (committed && naborted > 0 && aborted_txns) {
        ntxns = naborted;
        txns = xmalloc((size_t)ntxns * sizeof *txns);
        memcpy(txns, aborted_txns, (size_t)ntxns * sizeof *txns);
        qsort(txns, (size_t)ntxns, sizeof *txns, cmp_aborted);
    }
    bool any = false;
    int rc = 0;
    while (n > 0 && !x->done) {
        size_t size = 0;
        int fr = rb_frame(p, n, &size);
        if (fr == RB_FRAME_TRUNCATED) {
            /* A partial batch ends most answers (the broker cuts at the
             * byte limit); only when nothing whole came must the limit
             * grow, or the partition would never move. */
            if (!any && x->max_bytes < INT32_MAX / 2)
                x->max_bytes *= 2;
            break;
        }
        struct rb_header h;
        if (fr != 0 || rb_parse_header(p, size, &h) != 0) {
            if (fr == 0 && size >= 17 && p[RB_OFF_MAGIC] < RB_MAGIC_V2) {
                rc = KERR_UNSUPPORTED_FOR_MESSAGE_FORMAT;
                snprintf(x->err, sizeof x->err, "%s-%d holds message format v%d at offset %lld; samsactl reads only v2",
                         x->topic, x->partition, p[RB_OFF_MAGIC], (long long)be64_read(p));
            } else {
                rc = KERR_CORRUPT_MESSAGE;
                snprintf(x->err, sizeof x->err, "corrupt record batch in %s-%d near offset %lld", x->topic,
                         x->partition, (long long)x->pos);
            }
            break;
        }
        if (!rb_crc_ok(p, size)) {
            rc = KERR_CORRUPT_MESSAGE;
            snprintf(x->err, sizeof x->err, "record batch at offset %lld of %s-%d fails its CRC",
                     (long long)h.base_offset, x->topic, x->partition);
            break;
        }
        any = true;
        const uint8_t *batch = p;
        p += size;
        n -= size;
        int64_t last = rb_last_offset(&h);
        if (last < x->pos)
            continue;
        /* read_committed as the Java consumer's CompletedFetch: aborted
         * transactions that started at or before this batch's last offset
         * make their producer's transactional batches invisible until that
         * producer's ABORT marker. */
        if (committed && rb_has_producer_id(&h)) {
            while (next_txn < ntxns && txns[next_txn].first_offset <= last)
                aborted_add(&ab, txns[next_txn++].producer_id);
            if (rb_is_control(&h)) {
                if (is_abort_marker(batch, size))
                    aborted_remove(&ab, h.producer_id);
            } else if (rb_is_transactional(&h) && aborted_has(&ab, h.producer_id)) {
                x->pos = last + 1;
                continue;
            }
        }
        if (rb_is_control(&h)) {
            x->pos = last + 1;
            continue;
        }
        struct rb_record_iter it;
        struct buf dec = BUF_INIT;
        if (rb_codec(&h) != RB_CODEC_NONE) {
            /* Codecs are the modules of this build (plugin registry). */
            int zr = codec_decompress(plugin_tools_registry(), rb_codec(&h), batch + RB_OFF_RECORDS,
                                      size - RB_OFF_RECORDS, &dec, CODEC_DECOMPRESS_CEILING);
            if (zr != 0) {
                buf_free(&dec);
                rc = zr;
                if (zr == KERR_UNSUPPORTED_COMPRESSION_TYPE)
                    snprintf(x->err, sizeof x->err,
                             "record batch at offset %lld of %s-%d is compressed with %s, and no codec module for "
                             "it is loaded (plugin directory %s)",
                             (long long)h.base_offset, x->topic, x->partition, codec_name(rb_codec(&h)),
                             getenv("SAMSA_PLUGIN_DIR") ? getenv("SAMSA_PLUGIN_DIR") : plugin_default_dir());
                else
                    snprintf(x->err, sizeof x->err, "cannot decompress the %s record batch at offset %lld of %s-%d: %s",
                             codec_name(rb_codec(&h)), (long long)h.base_offset, x->topic, x->partition,
                             kerr_name((int16_t)zr));
                break;
            }
            rb_record_iter_init(&it, dec.data, dec.len, h.records_count);
        } else if (rb_record_iter_init_batch(&it, batch, size) != 0) {
            rc = KERR_CORRUPT_MESSAGE;
            snprintf(x->err, sizeof x->err, "record batch at offset %lld of %s-%d is malformed",
                     (long long)h.base_offset, x->topic, x->partition);
            break;
        }
        struct rb_record rec;
        int r;
        while ((r = rb_record_next(&it, &rec)) == 1) {
            int64_t off = h.base_offset + rec.offset_delta;
            if (off < x->pos)
                continue;
            struct fmt_record fr_ = {
                .partition = x->partition,
                .offset = off,
                .timestamp_type = rb_timestamp_type(&h),
                .timestamp = rb_timestamp_type(&h) == RB_LOG_APPEND_TIME ? h.max_timestamp
                                                                         : h.base_timestamp + rec.timestamp_delta,
                .rec = &rec,
            };
            format_record(x->out, &o->fmt, &fr_);
            x->count++;
            x->pos = off + 1;
            if (o->max_messages >= 0 && x->count >= o->max_messages) {
                x->done = true;
                break;
            }
        }
        buf_free(&dec);
        if (r < 0) {
            rc = it.err ? it.err : KERR_CORRUPT_MESSAGE;
            snprintf(x->err, sizeof x->err, "record %d of the batch at offset %lld of %s-%d: %s", it.index,
                     (long long)h.base_offset, x->topic, x->partition, it.reason ? it.reason : "malformed");
            break;
        }
        if (!x->done)
            x->pos = last + 1;
    }
    free(txns);
    free(ab.ids);
    return rc;
}

/* Handles one partition's part of a Fetch answer. */
static int process_partition(struct consumer *cs, struct cpart *cp, const fetch_response_partition_data_t *pd)
{
    struct kc_client *c = cs->c;
    const char *topic = cs->o->topic;
    if (pd->error_code) {
        int code = pd->error_code;
        if (code == KERR_OFFSET_OUT_OF_RANGE) {
            bool earliest = cs->o->offset_kind == OFFSET_EARLIEST;
            fprintf(stderr, "samsactl consume: warning: offset %lld is out of range for %s-%d; resetting to the %s offset\n",
                    (long long)cp->pos, topic, cp->id, earliest ? "earliest" : "latest");
            cp->resolve = true;
            cp->resolve_ts = earliest ? -2 : -1;
            return 0;
        }
        if (kc_retriable(code) || code == KERR_UNKNOWN_TOPIC_OR_PARTITION) {
            cs->stale_metadata = true;
            return 0;
        }
        return kc_fail(c, code, "Fetch from %s-%d: %s", topic, cp->id, kc_default_message(code));
    }
    if (pd->records.len <= 0 || !pd->records.p)
        return 0;
    struct records_ctx x = {
        .o = cs->o,
        .topic = topic,
        .partition = cp->id,
        .pos = cp->pos,
        .max_bytes = cp->max_bytes,
        .count = cs->count,
        .out = &cs->out,
    };
    int rc = consume_records(&x, pd->records.p, (size_t)pd->records.len, pd->aborted_transactions.a,
                             pd->aborted_transactions.n);
    cp->pos = x.pos;
    cp->max_bytes = x.max_bytes;
    cs->count = x.count;
    if (x.done)
        cs->done = true;
    if (rc)
        return kc_fail(c, rc, "%s", x.err);
    return 0;
}

static int handle_fetch(struct consumer *cs, const struct kc_response *r)
{
    const fetch_response_t *m = r->msg;
    if (m->error_code)
        return kc_fail(cs->c, m->error_code, "Fetch failed: %s", kc_default_message(m->error_code));
    for (int32_t i = 0; i < m->responses.n && !cs->done; i++) {
        const fetch_response_fetchable_topic_response_t *t = &m->responses.a[i];
        bool ours = r->version >= 13 ? kuuid_eq(&t->topic_id, &cs->topic_id) : kstr_eqc(t->topic, cs->o->topic);
        if (!ours)
            continue;
        for (int32_t j = 0; j < t->partitions.n && !cs->done; j++) {
            const fetch_response_partition_data_t *pd = &t->partitions.a[j];
            struct cpart *cp = NULL;
            for (int k = 0; k < cs->nparts; k++)
                if (cs->parts[k].id == pd->partition_index)
                    cp = &cs->parts[k];
            if (!cp || cp->resolve)
                continue;
            int rc = process_partition(cs, cp, pd);
            if (rc)
                return rc;
        }
    }
    return 0;
}

static int send_fetch(struct consumer *cs, struct kc_conn *conn, int32_t leader, int max_wait_ms)
{
    struct kc_client *c = cs->c;
    int16_t v = kc_version(conn, KAPI_FETCH);
    if (v >= 13 && kuuid_is_zero(&cs->topic_id))
        v = 12;
    if (v < 4)
        return kc_fail(c, KERR_UNSUPPORTED_VERSION, "broker %s:%d does not support Fetch v4 or later", conn->host,
                       conn->port);
    int n = 0;
    for (int i = 0; i < cs->nparts; i++)
        n += cs->parts[i].leader == leader && !cs->parts[i].resolve;
    struct arena a = ARENA_INIT;
    fetch_request_t req;
    fetch_request_init(&req);
    req.max_wait_ms = max_wait_ms;
    req.min_bytes = cs->o->fetch_min_bytes;
    req.max_bytes = cs->o->fetch_max_bytes;
    req.isolation_level = cs->o->isolation_level;
    req.session_id = 0;
    req.session_epoch = -1; /* FINAL_EPOCH with id 0: a sessionless full fetch */
    req.topics.a = fetch_request_fetch_topic_new_array(&a, 1);
    req.topics.n = 1;
    fetch_request_fetch_topic_t *t = &req.topics.a[0];
    t->topic = KSTR(cs->o->topic);
    t->topic_id = cs->topic_id;
    t->partitions.a = fetch_request_fetch_partition_new_array(&a, n);
    t->partitions.n = n;
    int k = 0;
    for (int i = 0; i < cs->nparts; i++) {
        struct cpart *cp = &cs->parts[i];
        if (cp->leader != leader || cp->resolve)
            continue;
        t->partitions.a[k].partition = cp->id;
        t->partitions.a[k].fetch_offset = cp->pos;
        t->partitions.a[k].partition_max_bytes = cp->max_bytes;
        k++;
    }
    int rc = kc_send(c, conn, KAPI_FETCH, v, &req, true);
    arena_free(&a);
    return rc;
}

static int run(struct consumer *cs)
{
    struct kc_client *c = cs->c;
    const struct consume_opts *o = cs->o;
    const kc_topic_t *t;
    int rc = kc_topic_metadata(c, o->topic, false, &t);
    if (rc)
        return rc;
    if (o->partition >= 0) {
        if (!kc_meta_partition(t, o->partition))
            return kc_fail(c, KERR_UNKNOWN_TOPIC_OR_PARTITION, "Partition %s-%d does not exist", o->topic,
                           o->partition);
        cs->nparts = 1;
        cs->parts = xcalloc(1, sizeof *cs->parts);
        cs->parts[0].id = o->partition;
    } else {
        cs->nparts = t->partitions.n > 0 ? t->partitions.n : 0;
        cs->parts = xcalloc((size_t)(cs->nparts > 0 ? cs->nparts : 1), sizeof *cs->parts);
        for (int i = 0; i < cs->nparts; i++)
            cs->parts[i].id = t->partitions.a[i].partition_index;
    }
    for (int i = 0; i < cs->nparts; i++) {
        struct cpart *cp = &cs->parts[i];
        cp->max_bytes = o->max_partition_fetch_bytes;
        if (o->offset_kind == OFFSET_ABSOLUTE) {
            cp->pos = o->offset;
        } else {
            cp->resolve = true;
            cp->resolve_ts = o->offset_kind == OFFSET_EARLIEST ? -2 : -1;
        }
    }
    rc = refresh_metadata(cs);
    if (rc)
        return rc;

    int64_t last_progress = clock_mono_ms();
    int backoff = 50;
    struct kc_conn *waiting[64];
    int32_t waiting_leader[64];
    int nwaiting = 0;
    while (!cs->done) {
        if (cs->stale_metadata) {
            if (!kc_sleep_ms(backoff))
                return kc_fail(c, KC_INTERRUPTED, "interrupted");
            backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
            /* Answers still in flight belong to the old leaders. */
            for (int i = 0; i < nwaiting; i++)
                kc_conn_close(waiting[i]);
            nwaiting = 0;
            rc = refresh_metadata(cs);
            if (rc)
                return rc;
        }
        bool need_resolve = false;
        for (int i = 0; i < cs->nparts; i++)
            need_resolve |= cs->parts[i].resolve;
        if (need_resolve) {
            rc = resolve_offsets(cs);
            if (rc)
                return rc;
            if (cs->stale_metadata)
                continue;
        }
        int max_wait = o->fetch_max_wait_ms;
        if (o->timeout_ms >= 0) {
            int64_t left = last_progress + o->timeout_ms - clock_mono_ms();
            if (left <= 0)
                break;
            if (left < max_wait)
                max_wait = (int)left;
        }
        /* One Fetch in flight per leader. */
        for (int i = 0; i < cs->nparts; i++) {
            int32_t leader = cs->parts[i].leader;
            bool busy = false;
            for (int j = 0; j < nwaiting; j++)
                busy |= waiting_leader[j] == leader;
            if (busy || leader < 0 || nwaiting == 64)
                continue;
            struct kc_conn *conn;
            rc = kc_node_conn(c, leader, &conn);
            if (rc == 0)
                rc = send_fetch(cs, conn, leader, max_wait);
            if (rc) {
                if (!kc_retriable(rc))
                    return rc;
                cs->stale_metadata = true;
                break;
            }
            waiting[nwaiting] = conn;
            waiting_leader[nwaiting++] = leader;
        }
        if (cs->stale_metadata || nwaiting == 0)
            continue;
        int wait = max_wait + c->timeout_ms;
        if (o->timeout_ms >= 0) {
            int64_t left = last_progress + o->timeout_ms - clock_mono_ms();
            if (left < wait)
                wait = left > 0 ? (int)left : 0;
        }
        int ready;
        rc = kc_wait_any(c, waiting, nwaiting, wait, &ready);
        if (rc) {
            if (rc == KC_INTERRUPTED || !kc_retriable(rc))
                return rc;
            cs->stale_metadata = true;
            continue;
        }
        if (ready < 0) {
            if (o->timeout_ms >= 0 && clock_mono_ms() - last_progress >= o->timeout_ms)
                break;
            return kc_fail(c, KERR_REQUEST_TIMED_OUT, "no Fetch answer in time");
        }
        struct kc_conn *conn = waiting[ready];
        waiting[ready] = waiting[nwaiting - 1];
        waiting_leader[ready] = waiting_leader[nwaiting - 1];
        nwaiting--;
        struct kc_response resp;
        rc = kc_recv(c, conn, c->timeout_ms, &resp);
        if (rc) {
            if (rc == KC_INTERRUPTED || !kc_retriable(rc))
                return rc;
            cs->stale_metadata = true;
            continue;
        }
        int64_t before = cs->count;
        rc = handle_fetch(cs, &resp);
        kc_response_free(&resp);
        flush_out(cs);
        if (rc)
            return rc;
        if (cs->count > before) {
            last_progress = clock_mono_ms();
            backoff = 50;
        }
    }
    return 0;
}

int cmd_consume(int argc, char **argv, const struct global_opts *g0)
{
    struct global_opts g = *g0;
    struct consume_opts o;
    char err[512];
    int a = consume_parse_args(argc, argv, &o, &g, err, sizeof err);
    if (a == ARGS_HELP) {
        consume_usage(stdout);
        consume_opts_free(&o);
        return EXIT_OK;
    }
    if (a == ARGS_ERROR) {
        fprintf(stderr, "samsactl consume: %s (see samsactl consume --help)\n", err);
        consume_opts_free(&o);
        return EXIT_USAGE;
    }
    struct kc_client c;
    if (kc_client_init(&c, global_bootstrap(&g), err, sizeof err) < 0) {
        fprintf(stderr, "samsactl consume: %s\n", err);
        consume_opts_free(&o);
        return EXIT_USAGE;
    }
    kc_catch_signals();
    struct consumer cs;
    memset(&cs, 0, sizeof cs);
    cs.c = &c;
    cs.o = &o;
    buf_init(&cs.out);
    int rc = run(&cs);
    flush_out(&cs);
    int status = EXIT_OK;
    if (rc == KC_INTERRUPTED)
        rc = 0; /* Ctrl-C is how a console consumer normally ends */
    if (rc)
        status = kc_report(&c);
    /* Printed in every case, after any error, as ConsoleConsumer does. */
    if (!cs.output_closed)
        fprintf(stderr, "Processed a total of %lld messages\n", (long long)cs.count);
    buf_free(&cs.out);
    free(cs.parts);
    kc_client_free(&c);
    consume_opts_free(&o);
    return status;
}
