/* samsactl produce: Kafka's console producer. Reads lines from stdin,
 * splits each into headers, key and value as Kafka's LineMessageReader
 * does, batches records per partition (record batch v2) and sends them to
 * the partition leaders. */
#ifndef SAMSACTL_PRODUCE_H
#define SAMSACTL_PRODUCE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "opts.h"
#include "proto/kcodec.h"
#include "proto/record_batch.h"
#include "util/arena.h"

struct produce_opts {
    struct arena arena; /* owns the unescaped separators */
    const char *topic;
    int32_t partition; /* -1: murmur2(key) or round-robin per record */
    bool parse_key;
    bool parse_headers;
    bool ignore_error;
    const char *key_separator;         /* default "\t" */
    const char *headers_delimiter;     /* default "\t" */
    const char *headers_separator;     /* default "," (literal, not a regex) */
    const char *headers_key_separator; /* default ":" */
    const char *null_marker;           /* NULL: none */
    int16_t acks;                      /* -1 (all), 0, 1 */
    int32_t batch_size;                /* bytes, Kafka's batch.size */
    int32_t linger_ms;
    int32_t request_timeout_ms;
    int compression; /* codec id (RB_CODEC_*), 0 = none */
    const char *partitioner; /* --partitioner NAME|script.lua, or NULL */
};

/* Parses the command line (after "produce") into o (owned by the caller,
 * released with produce_opts_free). Global options go to g. Returns
 * ARGS_OK, ARGS_HELP or ARGS_ERROR with one line in err. */
int produce_parse_args(int argc, char **argv, struct produce_opts *o, struct global_opts *g, char *err,
                       size_t errlen);
void produce_opts_free(struct produce_opts *o);

/* One input line split into a record. key/value and the header fields
 * point into the line; the headers array is owned by the struct (reused
 * from line to line; release with produce_line_free). */
struct produce_line {
    kbytes_t key;   /* len -1: null */
    kbytes_t value; /* len -1: null */
    struct rb_header_kv *headers;
    int nheaders, capheaders;
};

/* Splits line (len bytes, no line terminator) as LineMessageReader:
 * headers up to headers.delimiter, then key up to key.separator, then the
 * value; fields equal to null.marker become null. Returns 0, or -1 with
 * Kafka's message for the bad line in err. line_no is for that message. */
int produce_parse_line(const struct produce_opts *o, const char *line, size_t len, long line_no,
                       struct produce_line *out, char *err, size_t errlen);
void produce_line_free(struct produce_line *l);

/* The codec id of Kafka's compression.type name (none, gzip, snappy,
 * lz4, zstd), or -1. */
int produce_codec_id(const char *name);

void produce_usage(FILE *f);
int cmd_produce(int argc, char **argv, const struct global_opts *g);

#endif
