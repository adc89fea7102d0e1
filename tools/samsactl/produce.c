/* samsactl produce (see produce.h).
 *
 * Batching follows the Java producer: one open batch per partition,
 * closed when the next record would take it past batch.size or when its
 * first record has waited linger.ms (checked while stdin is idle too), and
 * all open batches at end of input. A closed batch goes out at once in a
 * Produce request to its leader; up to MAX_IN_FLIGHT requests are
 * pipelined per connection. Kafka answers the requests of one connection
 * in order and all batches of a partition travel on its leader's single
 * connection, so per-partition order holds. There are no retries (a retry
 * behind pipelined requests could reorder): the first error is reported
 * once the requests already sent are answered, and the exit status is 1.
 *
 * With --compression-codec each batch's records are compressed by the
 * codec module of this build, as the server's own codecs are. batch.size
 * counts the records before compression (Java's producer estimates the
 * compressed size instead), so a compressed batch holds no more records
 * than an uncompressed one would. */
#include "produce.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "linereader.h"
#include "partitioner.h"
#include "plugin/codec.h"
#include "plugin/registry.h"
#include "proto/kerr.h"
#include "util/clock.h"

#define MAX_IN_FLIGHT 5

enum {
    OPT_TOPIC = 1,
    OPT_PARTITION,
    OPT_PROPERTY,
    OPT_PRODUCER_PROPERTY,
    OPT_ACKS,
    OPT_BATCH_SIZE,
    OPT_LINGER_MS,
    OPT_TIMEOUT,
    OPT_REQUEST_TIMEOUT_MS,
    OPT_COMPRESSION_CODEC,
    OPT_PARTITIONER,
};

static const struct opt_def produce_defs[] = {
    {"topic", true, OPT_TOPIC},
    {"partition", true, OPT_PARTITION},
    {"property", true, OPT_PROPERTY},
    {"producer-property", true, OPT_PRODUCER_PROPERTY},
    {"acks", true, OPT_ACKS},
    {"request-required-acks", true, OPT_ACKS}, /* Kafka's console producer name */
    {"batch-size", true, OPT_BATCH_SIZE},
    {"linger-ms", true, OPT_LINGER_MS},
    {"timeout", true, OPT_TIMEOUT}, /* Kafka's console producer name for linger */
    {"request-timeout-ms", true, OPT_REQUEST_TIMEOUT_MS},
    {"compression-codec", true, OPT_COMPRESSION_CODEC}, /* Kafka's console producer name */
    {"partitioner", true, OPT_PARTITIONER},
    {NULL, false, 0},
};

void produce_usage(FILE *f)
{
    fputs("Usage: samsactl produce --topic TOPIC [options] < lines\n"
          "Reads records from stdin, one per line, and produces them to TOPIC.\n"
          "\n"
          "  --topic TOPIC                 topic to produce to (required)\n"
          "  --partition P                 send every record to partition P (default: key hash,\n"
          "                                round-robin for records without a key)\n"
          "  --partitioner NAME|FILE.lua   choose each record's partition with a partitioner module\n"
          "                                (NAME) or a Lua script's partition(topic, key, value,\n"
          "                                partition_count); nil from it means the default\n"
          "  --acks -1|all|0|1             required acknowledgements (default -1)\n"
          "  --batch-size BYTES            batch size per partition (default 16384)\n"
          "  --linger-ms MS                longest wait for a batch to fill (default 1000)\n"
          "  --request-timeout-ms MS       Produce request timeout (default 30000)\n"
          "  --compression-codec none|gzip|snappy|lz4|zstd\n"
          "                                compress each batch with this codec (default none); the\n"
          "                                codec comes from this build's modules ($SAMSA_PLUGIN_DIR\n"
          "                                or the installed plugin directory)\n"
          "  --property parse.key=true     lines are KEY<key.separator>VALUE\n"
          "  --property key.separator=SEP  (default: tab)\n"
          "  --property parse.headers=true lines start with HEADERS<headers.delimiter>\n"
          "  --property headers.delimiter=SEP      (default: tab)\n"
          "  --property headers.separator=SEP      between headers (default: ,)\n"
          "  --property headers.key.separator=SEP  between header key and value (default: :)\n"
          "  --property null.marker=TEXT   a key, value or header value equal to TEXT is null\n"
          "  --property ignore.error=true  keep going on lines missing a separator\n"
          "  --producer-property K=V       acks, batch.size, linger.ms, request.timeout.ms,\n"
          "                                compression.type\n"
          "  --bootstrap-server HOST:PORT[,...]  (default $SAMSA_BOOTSTRAP or " SAMSACTL_DEFAULT_BOOTSTRAP ")\n"
          "Separators understand \\t, \\n, \\r and \\\\.\n",
          f);
}

void produce_opts_free(struct produce_opts *o) { arena_free(&o->arena); }

int produce_codec_id(const char *name)
{
    /* the names of Kafka's producer compression.type */
    static const char *const names[] = {"none", "gzip", "snappy", "lz4", "zstd"};
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

static bool set_codec(struct produce_opts *o, const char *what, const char *name, char *err, size_t errlen)
{
    o->compression = produce_codec_id(name);
    if (o->compression >= 0)
        return true;
    snprintf(err, errlen, "invalid %s '%s' (want none, gzip, snappy, lz4 or zstd)", what, name);
    return false;
}

static bool parse_acks(const char *s, int16_t *out)
{
    if (strcmp(s, "all") == 0) {
        *out = -1;
        return true;
    }
    int32_t v;
    if (!parse_i32(s, -1, 1, &v))
        return false;
    *out = (int16_t)v;
    return true;
}

static int set_property(struct produce_opts *o, const char *kv, bool producer, char *err, size_t errlen)
{
    char *key;
    const char *value;
    if (!split_kv(&o->arena, kv, &key, &value)) {
        snprintf(err, errlen, "invalid --%s '%s' (want key=value)", producer ? "producer-property" : "property", kv);
        return ARGS_ERROR;
    }
    if (strcmp(key, "acks") == 0) {
        if (!parse_acks(value, &o->acks)) {
            snprintf(err, errlen, "invalid acks '%s' (want -1, all, 0 or 1)", value);
            return ARGS_ERROR;
        }
    } else if (strcmp(key, "batch.size") == 0) {
        if (!parse_i32(value, 1, INT32_MAX, &o->batch_size)) {
            snprintf(err, errlen, "invalid batch.size '%s'", value);
            return ARGS_ERROR;
        }
    } else if (strcmp(key, "linger.ms") == 0) {
        if (!parse_i32(value, 0, INT32_MAX, &o->linger_ms)) {
            snprintf(err, errlen, "invalid linger.ms '%s'", value);
            return ARGS_ERROR;
        }
    } else if (strcmp(key, "request.timeout.ms") == 0) {
        if (!parse_i32(value, 1, INT32_MAX, &o->request_timeout_ms)) {
            snprintf(err, errlen, "invalid request.timeout.ms '%s'", value);
            return ARGS_ERROR;
        }
    } else if (strcmp(key, "compression.type") == 0) {
        if (!set_codec(o, "compression.type", value, err, errlen))
            return ARGS_ERROR;
    } else if (producer) {
        fprintf(stderr, "samsactl produce: warning: ignoring producer property '%s'\n", key);
    } else if (strcmp(key, "parse.key") == 0) {
        o->parse_key = parse_bool_prop(value);
    } else if (strcmp(key, "parse.headers") == 0) {
        o->parse_headers = parse_bool_prop(value);
    } else if (strcmp(key, "ignore.error") == 0) {
        o->ignore_error = parse_bool_prop(value);
    } else if (strcmp(key, "key.separator") == 0) {
        o->key_separator = unescape_dup(&o->arena, value);
    } else if (strcmp(key, "headers.delimiter") == 0) {
        o->headers_delimiter = unescape_dup(&o->arena, value);
    } else if (strcmp(key, "headers.separator") == 0) {
        o->headers_separator = unescape_dup(&o->arena, value);
    } else if (strcmp(key, "headers.key.separator") == 0) {
        o->headers_key_separator = unescape_dup(&o->arena, value);
    } else if (strcmp(key, "null.marker") == 0) {
        o->null_marker = unescape_dup(&o->arena, value);
    } else {
        fprintf(stderr, "samsactl produce: warning: ignoring property '%s'\n", key);
    }
    return ARGS_OK;
}

static bool str_eq_opt(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

int produce_parse_args(int argc, char **argv, struct produce_opts *o, struct global_opts *g, char *err,
                       size_t errlen)
{
    memset(o, 0, sizeof *o);
    arena_init(&o->arena);
    o->partition = -1;
    o->key_separator = "\t";
    o->headers_delimiter = "\t";
    o->headers_separator = ",";
    o->headers_key_separator = ":";
    o->acks = -1;
    o->batch_size = 16384;
    o->linger_ms = 1000;
    o->request_timeout_ms = 30000;

    struct opt_iter it;
    opt_iter_init(&it, argc, argv, produce_defs, err, errlen);
    int id;
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
        case OPT_PARTITIONER:
            o->partitioner = it.arg;
            break;
        case OPT_PROPERTY:
        case OPT_PRODUCER_PROPERTY:
            if (set_property(o, it.arg, id == OPT_PRODUCER_PROPERTY, err, errlen) != ARGS_OK)
                return ARGS_ERROR;
            break;
        case OPT_ACKS:
            if (!parse_acks(it.arg, &o->acks)) {
                snprintf(err, errlen, "invalid --acks '%s' (want -1, all, 0 or 1)", it.arg);
                return ARGS_ERROR;
            }
            break;
        case OPT_BATCH_SIZE:
            if (!parse_i32(it.arg, 1, INT32_MAX, &o->batch_size)) {
                snprintf(err, errlen, "invalid --batch-size '%s' (want a number of bytes > 0)", it.arg);
                return ARGS_ERROR;
            }
            break;
        case OPT_LINGER_MS:
        case OPT_TIMEOUT:
            if (!parse_i32(it.arg, 0, INT32_MAX, &o->linger_ms)) {
                snprintf(err, errlen, "invalid --%s '%s' (want milliseconds >= 0)", it.name, it.arg);
                return ARGS_ERROR;
            }
            break;
        case OPT_REQUEST_TIMEOUT_MS:
            if (!parse_i32(it.arg, 1, INT32_MAX, &o->request_timeout_ms)) {
                snprintf(err, errlen, "invalid --request-timeout-ms '%s'", it.arg);
                return ARGS_ERROR;
            }
            break;
        case OPT_COMPRESSION_CODEC:
            if (!set_codec(o, "--compression-codec", it.arg, err, errlen))
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
    /* The same consistency checks as LineMessageReader.configure. */
    if (!*o->headers_separator) {
        snprintf(err, errlen, "headers.separator may not be empty");
        return ARGS_ERROR;
    }
    if (strcmp(o->headers_delimiter, o->headers_separator) == 0) {
        snprintf(err, errlen, "headers.delimiter and headers.separator may not be equal");
        return ARGS_ERROR;
    }
    if (strcmp(o->headers_delimiter, o->headers_key_separator) == 0) {
        snprintf(err, errlen, "headers.delimiter and headers.key.separator may not be equal");
        return ARGS_ERROR;
    }
    if (strcmp(o->headers_separator, o->headers_key_separator) == 0) {
        snprintf(err, errlen, "headers.separator and headers.key.separator may not be equal");
        return ARGS_ERROR;
    }
    const char *nm = o->null_marker;
    if (str_eq_opt(o->key_separator, nm) || str_eq_opt(o->headers_separator, nm) ||
        str_eq_opt(o->headers_delimiter, nm) || str_eq_opt(o->headers_key_separator, nm)) {
        snprintf(err, errlen, "null.marker may not be equal to a separator or delimiter");
        return ARGS_ERROR;
    }
    return ARGS_OK;
}

/* ---- line splitting ---- */

static const char *find(const char *hay, size_t hlen, const char *needle)
{
    return memmem(hay, hlen, needle, strlen(needle));
}

static bool equals(const char *p, size_t n, const char *s) { return s && strlen(s) == n && memcmp(p, s, n) == 0; }

static kbytes_t field(const char *p, size_t n, const char *null_marker)
{
    if (equals(p, n, null_marker))
        return KBYTES_NULL;
    return (kbytes_t){(const uint8_t *)p, (int32_t)n};
}

static void quote_line(char *out, size_t cap, const char *line, size_t len)
{
    if (len > 200)
        snprintf(out, cap, "%.200s...", line);
    else
        snprintf(out, cap, "%.*s", (int)len, line);
}

static void add_header(struct produce_line *l, const char *k, size_t klen, kbytes_t v)
{
    if (l->nheaders == l->capheaders) {
        l->capheaders = l->capheaders ? l->capheaders * 2 : 8;
        l->headers = xrealloc(l->headers, (size_t)l->capheaders * sizeof *l->headers);
    }
    l->headers[l->nheaders++] = (struct rb_header_kv){{k, (int32_t)klen}, v};
}

/* One "key<sep>value" pair of the headers part. */
static int parse_header_pair(const struct produce_opts *o, const char *p, size_t n, long line_no,
                             struct produce_line *out, char *err, size_t errlen)
{
    const char *ks = find(p, n, o->headers_key_separator);
    if (!ks) {
        if (o->ignore_error) {
            add_header(out, p, n, KBYTES_NULL);
            return 0;
        }
        char q[256];
        quote_line(q, sizeof q, p, n);
        snprintf(err, errlen, "No header key separator found in pair '%s' on line number %ld", q, line_no);
        return -1;
    }
    size_t klen = (size_t)(ks - p);
    if (equals(p, klen, o->null_marker)) {
        snprintf(err, errlen, "Header keys should not be equal to the null marker '%s' as they can't be null",
                 o->null_marker);
        return -1;
    }
    size_t sl = strlen(o->headers_key_separator);
    add_header(out, p, klen, field(ks + sl, n - klen - sl, o->null_marker));
    return 0;
}

/* Splits the headers part like Java's String.split with a literal
 * separator: no separator at all gives the whole text, and trailing empty
 * pieces are dropped. */
static int parse_headers(const struct produce_opts *o, const char *p, size_t n, long line_no,
                         struct produce_line *out, char *err, size_t errlen)
{
    const char *sep = o->headers_separator;
    size_t sl = strlen(sep);
    if (!find(p, n, sep))
        return parse_header_pair(o, p, n, line_no, out, err, errlen);
    /* Drop trailing empty pieces: trim whole separators off the end. */
    while (n >= sl && memcmp(p + n - sl, sep, sl) == 0)
        n -= sl;
    if (n == 0)
        return 0;
    const char *end = p + n;
    for (;;) {
        const char *s = find(p, (size_t)(end - p), sep);
        size_t len = s ? (size_t)(s - p) : (size_t)(end - p);
        if (parse_header_pair(o, p, len, line_no, out, err, errlen) < 0)
            return -1;
        if (!s)
            return 0;
        p = s + sl;
    }
}

int produce_parse_line(const struct produce_opts *o, const char *line, size_t len, long line_no,
                       struct produce_line *out, char *err, size_t errlen)
{
    out->nheaders = 0;
    out->key = KBYTES_NULL;
    size_t at = 0;
    if (o->parse_headers) {
        const char *d = find(line, len, o->headers_delimiter);
        if (!d && !o->ignore_error) {
            char q[256];
            quote_line(q, sizeof q, line, len);
            snprintf(err, errlen, "No headers delimiter found on line number %ld: '%s'", line_no, q);
            return -1;
        }
        if (d) {
            size_t hlen = (size_t)(d - line);
            if (!equals(line, hlen, o->null_marker) &&
                parse_headers(o, line, hlen, line_no, out, err, errlen) < 0)
                return -1;
            at = hlen + strlen(o->headers_delimiter);
        }
    }
    if (o->parse_key) {
        const char *k = find(line + at, len - at, o->key_separator);
        if (!k && !o->ignore_error) {
            char q[256];
            quote_line(q, sizeof q, line, len);
            snprintf(err, errlen, "No key separator found on line number %ld: '%s'", line_no, q);
            return -1;
        }
        if (k) {
            size_t klen = (size_t)(k - (line + at));
            out->key = field(line + at, klen, o->null_marker);
            at += klen + strlen(o->key_separator);
        }
    }
    out->value = field(line + at, len - at, o->null_marker);
    return 0;
}

void produce_line_free(struct produce_line *l)
{
    free(l->headers);
    memset(l, 0, sizeof *l);
}

/* ---- producing ---- */

struct pstate {
    struct kc_conn *leader;
    struct buf buf; /* the open batch */
    struct rb_builder b;
    bool open;
    bool ready; /* closed, waiting to be sent */
    int64_t opened_ms;
};

struct producer {
    struct kc_client *c;
    const struct produce_opts *o;
    int32_t nparts;
    struct pstate *ps;
    struct round_robin rr;
    struct plugin_partitioner pp; /* pp.cap NULL: none */
    int err; /* first error */
    char errmsg[600];
};

static void record_error(struct producer *pr, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void record_error(struct producer *pr, int code, const char *fmt, ...)
{
    if (pr->err)
        return;
    pr->err = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pr->errmsg, sizeof pr->errmsg, fmt, ap);
    va_end(ap);
}

static void record_client_error(struct producer *pr)
{
    record_error(pr, pr->c->errcode, "%s", pr->c->errmsg);
}

static void handle_response(struct producer *pr, const struct kc_response *r)
{
    const produce_response_t *m = r->msg;
    for (int32_t i = 0; i < m->responses.n; i++) {
        const produce_response_topic_produce_response_t *t = &m->responses.a[i];
        for (int32_t j = 0; j < t->partition_responses.n; j++) {
            const produce_response_partition_produce_response_t *p = &t->partition_responses.a[j];
            if (p->error_code == 0)
                continue;
            kstr_t msg = p->error_message;
            if (msg.len <= 0 && p->record_errors.n > 0)
                msg = p->record_errors.a[0].batch_index_error_message;
            const char *text = msg.len > 0 ? NULL : kc_default_message(p->error_code);
            if (text)
                record_error(pr, p->error_code, "%.*s-%d: %s", t->name.len > 0 ? (int)t->name.len : 0, t->name.p,
                             p->index, text);
            else
                record_error(pr, p->error_code, "%.*s-%d: %.*s", t->name.len > 0 ? (int)t->name.len : 0, t->name.p,
                             p->index, (int)msg.len, msg.p);
        }
    }
}

static int64_t answer_timeout(const struct producer *pr)
{
    /* The broker may hold an acks=all answer for the request timeout. */
    return (int64_t)pr->o->request_timeout_ms + pr->c->timeout_ms;
}

/* Reads and checks the oldest answer on conn. */
static int recv_one(struct producer *pr, struct kc_conn *conn)
{
    struct kc_response r;
    int64_t t = answer_timeout(pr);
    int rc = kc_recv(pr->c, conn, t > INT32_MAX ? INT32_MAX : (int)t, &r);
    if (rc) {
        record_client_error(pr);
        return rc;
    }
    handle_response(pr, &r);
    kc_response_free(&r);
    return 0;
}

static void drain(struct producer *pr)
{
    for (int i = 0; i < pr->c->nconns; i++) {
        struct kc_conn *conn = pr->c->conns[i];
        while (conn->fd >= 0 && conn->ninflight > 0)
            if (recv_one(pr, conn))
                break;
    }
}

/* Sends every ready batch whose leader is conn in one Produce request. */
static void send_ready(struct producer *pr, struct kc_conn *conn)
{
    int n = 0;
    for (int32_t i = 0; i < pr->nparts; i++)
        n += pr->ps[i].ready && pr->ps[i].leader == conn;
    if (n == 0)
        return;
    if (!pr->err) {
        int16_t v = kc_version(conn, KAPI_PRODUCE);
        if (v < 3) {
            /* Produce v3 is the first to carry record batch v2. */
            record_error(pr, KERR_UNSUPPORTED_VERSION, "broker %s:%d does not support Produce v3 or later",
                         conn->host, conn->port);
        } else {
            while (conn->ninflight >= MAX_IN_FLIGHT && !pr->err)
                if (recv_one(pr, conn))
                    break;
        }
        if (!pr->err) {
            struct arena a = ARENA_INIT;
            produce_request_t req;
            produce_request_init(&req);
            req.acks = pr->o->acks;
            req.timeout_ms = pr->o->request_timeout_ms;
            req.topic_data.a = produce_request_topic_produce_data_new_array(&a, 1);
            req.topic_data.n = 1;
            produce_request_topic_produce_data_t *td = &req.topic_data.a[0];
            td->name = KSTR(pr->o->topic);
            td->partition_data.a = produce_request_partition_produce_data_new_array(&a, n);
            td->partition_data.n = n;
            int k = 0;
            for (int32_t i = 0; i < pr->nparts; i++) {
                struct pstate *ps = &pr->ps[i];
                if (!ps->ready || ps->leader != conn)
                    continue;
                td->partition_data.a[k].index = i;
                td->partition_data.a[k].records = (krecords_t){ps->buf.data, (int32_t)ps->buf.len, NULL, 0};
                k++;
            }
            if (kc_send(pr->c, conn, KAPI_PRODUCE, v, &req, pr->o->acks != 0))
                record_client_error(pr);
            arena_free(&a);
        }
    }
    for (int32_t i = 0; i < pr->nparts; i++)
        if (pr->ps[i].ready && pr->ps[i].leader == conn) {
            pr->ps[i].ready = false;
            buf_reset(&pr->ps[i].buf);
        }
}

static void close_batch(struct producer *pr, struct pstate *ps)
{
    if (!ps->open)
        return;
    ps->open = false;
    /* Kafka's producer compresses the records block of each batch, with
     * the codec's default level unless configured otherwise. */
    struct codec_ctx cc = {plugin_tools_registry(), 0, SAMSA_CODEC_LEVEL_DEFAULT};
    int rc = rb_builder_finish_compressed(&ps->b, pr->o->compression, codec_rb_compress, &cc, NULL);
    if (rc) {
        record_error(pr, rc, "cannot build a %s record batch for %s", plugin_codec_name(pr->o->compression),
                     pr->o->topic);
        buf_reset(&ps->buf);
        return;
    }
    ps->ready = true;
}

static void send_all_ready(struct producer *pr)
{
    for (int32_t i = 0; i < pr->nparts; i++)
        if (pr->ps[i].ready)
            send_ready(pr, pr->ps[i].leader);
}

/* Closes and sends the batches open for longer than linger.ms (all of
 * them when all is set). */
static void flush(struct producer *pr, bool all)
{
    int64_t now = clock_mono_ms();
    for (int32_t i = 0; i < pr->nparts; i++) {
        struct pstate *ps = &pr->ps[i];
        if (ps->open && (all || now - ps->opened_ms >= pr->o->linger_ms))
            close_batch(pr, ps);
    }
    send_all_ready(pr);
}

/* Milliseconds until the oldest open batch must go, -1 if none is open. */
static int linger_wait(const struct producer *pr)
{
    int64_t now = clock_mono_ms(), best = -1;
    for (int32_t i = 0; i < pr->nparts; i++) {
        const struct pstate *ps = &pr->ps[i];
        if (!ps->open)
            continue;
        int64_t left = ps->opened_ms + pr->o->linger_ms - now;
        if (left < 0)
            left = 0;
        if (best < 0 || left < best)
            best = left;
    }
    return best > INT32_MAX ? INT32_MAX : (int)best;
}

static size_t record_estimate(const struct produce_line *l)
{
    size_t n = 21; /* length, attributes, deltas and lengths, at most */
    n += l->key.len > 0 ? (size_t)l->key.len : 0;
    n += l->value.len > 0 ? (size_t)l->value.len : 0;
    for (int i = 0; i < l->nheaders; i++)
        n += 10 + (size_t)l->headers[i].key.len + (l->headers[i].value.len > 0 ? (size_t)l->headers[i].value.len : 0);
    return n;
}

static void add_record(struct producer *pr, const struct produce_line *l)
{
    int32_t p = -1;
    if (pr->o->partition < 0 && pr->pp.cap) {
        p = plugin_partitioner_choose(&pr->pp, pr->o->topic, l->key.p, l->key.len, l->value.p, l->value.len,
                                      pr->nparts);
        if (p < -1 || p >= pr->nparts) {
            record_error(pr, KERR_UNKNOWN_TOPIC_OR_PARTITION, "partitioner %s chose partition %d of %s (%d partitions)",
                         pr->pp.name, p, pr->o->topic, pr->nparts);
            return;
        }
    }
    if (p < 0) {
        if (pr->o->partition >= 0)
            p = pr->o->partition;
        else if (l->key.len >= 0)
            p = partition_for_key(l->key.p, (size_t)l->key.len, pr->nparts);
        else
            p = round_robin_next(&pr->rr, pr->nparts);
    }
    struct pstate *ps = &pr->ps[p];
    if (ps->open && ps->buf.len + record_estimate(l) > (size_t)pr->o->batch_size) {
        close_batch(pr, ps);
        send_ready(pr, ps->leader);
        if (pr->err)
            return;
    }
    int64_t now = clock_wall_ms();
    if (!ps->open) {
        buf_reset(&ps->buf);
        rb_builder_begin(&ps->b, &ps->buf, 0, now, NULL);
        ps->open = true;
        ps->opened_ms = clock_mono_ms();
    }
    int rc = rb_builder_add(&ps->b, now, l->key, l->value, l->headers, l->nheaders);
    if (rc) {
        record_error(pr, rc, "record of %s-%d cannot be added to a batch", pr->o->topic, p);
        return;
    }
    if (ps->buf.len >= (size_t)pr->o->batch_size) {
        close_batch(pr, ps);
        send_ready(pr, ps->leader);
    }
}

static int run(struct producer *pr)
{
    struct kc_client *c = pr->c;
    const struct produce_opts *o = pr->o;
    const kc_topic_t *t;
    /* The Java producer lets the broker create a missing topic
     * (allow.auto.create.topics), and so does the console producer. */
    int rc = kc_topic_metadata(c, o->topic, true, &t);
    if (rc)
        return rc;
    int32_t n = 0;
    for (int32_t i = 0; i < t->partitions.n; i++)
        if (t->partitions.a[i].partition_index >= n)
            n = t->partitions.a[i].partition_index + 1;
    if (o->partition >= 0 && !kc_meta_partition(t, o->partition))
        return kc_fail(c, KERR_UNKNOWN_TOPIC_OR_PARTITION, "Partition %s-%d does not exist", o->topic, o->partition);
    pr->nparts = n;
    pr->ps = xcalloc((size_t)n, sizeof *pr->ps);
    /* Copy the leaders out first: t points into the metadata cache. */
    int32_t *leaders = xcalloc((size_t)n, sizeof *leaders);
    for (int32_t i = 0; i < n; i++) {
        const kc_partition_t *p = kc_meta_partition(t, i);
        leaders[i] = p ? p->leader_id : -1;
    }
    for (int32_t i = 0; i < n; i++) {
        buf_init(&pr->ps[i].buf);
        if (leaders[i] < 0 || (o->partition >= 0 && i != o->partition))
            continue;
        rc = kc_node_conn(c, leaders[i], &pr->ps[i].leader);
        if (rc) {
            free(leaders);
            return rc;
        }
    }
    /* A partition missing from the metadata can only be chosen by the
     * partitioner when the indexes have holes; refuse rather than guess. */
    for (int32_t i = 0; i < n; i++)
        if (!pr->ps[i].leader && (o->partition < 0 || i == o->partition)) {
            free(leaders);
            return kc_fail(c, KERR_LEADER_NOT_AVAILABLE, "Partition %s-%d has no leader", o->topic, i);
        }
    free(leaders);

    struct linereader lr;
    lr_init(&lr, STDIN_FILENO);
    struct produce_line line = {0};
    long line_no = 0;
    while (!pr->err) {
        const char *p;
        size_t len;
        int r = lr_next(&lr, linger_wait(pr), &p, &len);
        if (r == LR_TIMEOUT) {
            flush(pr, false);
            continue;
        }
        if (r == LR_EINTR && !kc_interrupted)
            continue;
        if (r == LR_EOF || r == LR_EINTR)
            break;
        if (r == LR_ERROR) {
            record_error(pr, KERR_UNKNOWN_SERVER_ERROR, "reading stdin: %s", strerror(errno));
            break;
        }
        line_no++;
        char err[600];
        if (produce_parse_line(o, p, len, line_no, &line, err, sizeof err) < 0) {
            record_error(pr, KERR_INVALID_RECORD, "%s", err);
            break;
        }
        add_record(pr, &line);
        if (!pr->err)
            flush(pr, false);
    }
    produce_line_free(&line);
    lr_free(&lr);
    /* Like the Java producer's close(): what was read before an error or
     * an interrupt is still sent. A second interrupt stops the wait. */
    int saved = pr->err;
    char savedmsg[sizeof pr->errmsg];
    memcpy(savedmsg, pr->errmsg, sizeof savedmsg);
    pr->err = 0;
    kc_interrupted = 0;
    flush(pr, true);
    drain(pr);
    if (saved) {
        pr->err = saved;
        memcpy(pr->errmsg, savedmsg, sizeof savedmsg);
    }
    return 0;
}

int cmd_produce(int argc, char **argv, const struct global_opts *g0)
{
    struct global_opts g = *g0;
    struct produce_opts o;
    char err[512];
    int a = produce_parse_args(argc, argv, &o, &g, err, sizeof err);
    if (a == ARGS_HELP) {
        produce_usage(stdout);
        produce_opts_free(&o);
        return EXIT_OK;
    }
    if (a == ARGS_ERROR) {
        fprintf(stderr, "samsactl produce: %s (see samsactl produce --help)\n", err);
        produce_opts_free(&o);
        return EXIT_USAGE;
    }
    /* Refuse before reading stdin: records read but never sent would
     * otherwise be lost to a codec that cannot be had. */
    if (o.compression != 0 && !plugin_codec(plugin_tools_registry(), o.compression)) {
        const char *dir = getenv("SAMSA_PLUGIN_DIR");
        fprintf(stderr,
                "samsactl produce: compression codec '%s' is not available: no codec module for it in %s "
                "(this build's modules: %s; $SAMSA_PLUGIN_DIR chooses another directory)\n",
                plugin_codec_name(o.compression), dir && *dir ? dir : plugin_default_dir(),
                *plugin_build_modules() ? plugin_build_modules() : "none");
        produce_opts_free(&o);
        return EXIT_USAGE;
    }
    struct producer pr;
    memset(&pr, 0, sizeof pr);
    if (o.partitioner && plugin_partitioner_open(&pr.pp, o.partitioner, err, sizeof err) < 0) {
        fprintf(stderr, "samsactl produce: %s\n", err);
        produce_opts_free(&o);
        return EXIT_USAGE;
    }
    struct kc_client c;
    if (kc_client_init(&c, global_bootstrap(&g), err, sizeof err) < 0) {
        fprintf(stderr, "samsactl produce: %s\n", err);
        plugin_partitioner_close(&pr.pp);
        produce_opts_free(&o);
        return EXIT_USAGE;
    }
    kc_catch_signals();
    pr.c = &c;
    pr.o = &o;
    int rc = run(&pr);
    int status = EXIT_OK;
    if (rc) {
        status = kc_report(&c);
    } else if (pr.err == KC_INTERRUPTED) {
        status = 130;
    } else if (pr.err) {
        kc_print_error(pr.err, pr.errmsg);
        status = EXIT_KAFKA;
    }
    for (int32_t i = 0; i < pr.nparts; i++)
        buf_free(&pr.ps[i].buf);
    free(pr.ps);
    kc_client_free(&c);
    plugin_partitioner_close(&pr.pp);
    produce_opts_free(&o);
    return status;
}
