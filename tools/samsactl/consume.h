/* samsactl consume: Kafka's console consumer in assign mode (no group):
 * reads every partition of a topic, or one, from a start offset, and
 * prints each record as Kafka's DefaultMessageFormatter does. */
#ifndef SAMSACTL_CONSUME_H
#define SAMSACTL_CONSUME_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "opts.h"
#include "proto/gen/fetch_response.h"
#include "proto/record_batch.h"
#include "util/arena.h"
#include "util/buf.h"

/* DefaultMessageFormatter's properties. Strings are NUL-terminated;
 * owned by whoever filled the struct (consume_opts' arena). */
struct fmt_opts {
    bool print_timestamp, print_partition, print_offset, print_headers, print_key, print_value;
    const char *key_separator;     /* default "\t", between columns */
    const char *line_separator;    /* default "\n" */
    const char *headers_separator; /* default "," */
    const char *null_literal;      /* default "null" */
};

void fmt_opts_default(struct fmt_opts *f);

/* One record as the formatter sees it. */
struct fmt_record {
    int32_t partition;
    int64_t offset;
    int timestamp_type; /* RB_CREATE_TIME or RB_LOG_APPEND_TIME */
    int64_t timestamp;
    const struct rb_record *rec; /* key, value, headers */
};

/* Appends the record to out in DefaultMessageFormatter's layout:
 * [CreateTime:ts<sep>][Partition:p<sep>][Offset:o<sep>][h1:v1,h2:v2<sep>]
 * [key<sep>][value]<line separator>, where <sep> is key.separator between
 * columns and the line separator after the last one. */
void format_record(struct buf *out, const struct fmt_opts *f, const struct fmt_record *r);

enum offset_kind { OFFSET_DEFAULT, OFFSET_EARLIEST, OFFSET_LATEST, OFFSET_ABSOLUTE };

struct consume_opts {
    struct arena arena;
    const char *topic;
    int32_t partition; /* -1: all */
    enum offset_kind offset_kind;
    int64_t offset; /* OFFSET_ABSOLUTE */
    bool from_beginning;
    int64_t max_messages; /* -1: unlimited */
    int64_t timeout_ms;   /* -1: wait for ever */
    int8_t isolation_level; /* 0 read_uncommitted, 1 read_committed */
    int32_t fetch_max_wait_ms, fetch_min_bytes, fetch_max_bytes, max_partition_fetch_bytes;
    struct fmt_opts fmt;
};

/* Parses the command line (after "consume"). o is owned by the caller,
 * released with consume_opts_free. ARGS_OK, ARGS_HELP or ARGS_ERROR with
 * one line in err. */
int consume_parse_args(int argc, char **argv, struct consume_opts *o, struct global_opts *g, char *err,
                       size_t errlen);
void consume_opts_free(struct consume_opts *o);

/* One partition's progress through the Records of Fetch answers. */
struct records_ctx {
    const struct consume_opts *o; /* formatting, isolation, max_messages */
    const char *topic;
    int32_t partition;
    int64_t pos;       /* in/out: next offset to print */
    int32_t max_bytes; /* in/out: doubled when not even one batch fits */
    int64_t count;     /* in/out: records printed so far */
    bool done;         /* out: max_messages reached */
    struct buf *out;   /* formatted records are appended here */
    char err[300];     /* why, when the result is not 0 */
};

/* Appends the records of n bytes of batches at p (a Fetch answer's
 * Records for x->partition) from x->pos on. Control batches are skipped;
 * with read_committed, so are the batches of the aborted transactions
 * listed in aborted_txns (the answer's AbortedTransactions). A trailing
 * partial batch is ignored. Returns 0, or a Kafka error code with x->err
 * filled: CORRUPT_MESSAGE (bad frame or CRC), INVALID_RECORD,
 * UNSUPPORTED_FOR_MESSAGE_FORMAT (magic 0/1) or
 * UNSUPPORTED_COMPRESSION_TYPE (a compressed batch, naming its codec);
 * x->pos is then at the failing batch. */
int consume_records(struct records_ctx *x, const uint8_t *p, size_t n,
                    const fetch_response_aborted_transaction_t *aborted_txns, int32_t naborted);

void consume_usage(FILE *f);
int cmd_consume(int argc, char **argv, const struct global_opts *g);

#endif
