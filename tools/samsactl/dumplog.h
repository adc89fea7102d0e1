/* samsactl dump-log: prints the contents of log segment and index files,
 * like Kafka's kafka-dump-log.sh (DumpLogSegments): for a .log file each
 * batch (base and last offset, count, producer id/epoch/sequences, leader
 * epoch, transactional and control flags, position, timestamp, size,
 * compression, CRC and whether it is valid), with --print-data-log each
 * record; for .index and .timeindex files each entry, checked against
 * the segment's .log when it is there. Reads files only: no broker. */
#ifndef SAMSACTL_DUMPLOG_H
#define SAMSACTL_DUMPLOG_H

#include <stdbool.h>
#include <stdio.h>

#include "opts.h"

struct dumplog_opts {
    bool print_data; /* --print-data-log: every record too */
};

/* Dumps one file to out. Returns 0, or 1 when the file could not be read
 * or holds damage (a torn or corrupt batch, an index entry that does not
 * match the log), after saying so on out. */
int dumplog_file(const char *path, const struct dumplog_opts *o, FILE *out);

void dumplog_usage(FILE *f);
int cmd_dump_log(int argc, char **argv, const struct global_opts *g);

#endif
