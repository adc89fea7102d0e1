/* samsactl log-dirs: each broker's log dirs and the partitions in them
 * (Kafka's kafka-log-dirs.sh --describe), through DescribeLogDirs. */
#ifndef SAMSACTL_LOGDIRS_H
#define SAMSACTL_LOGDIRS_H

#include <stdbool.h>
#include <stdio.h>

#include "opts.h"

struct logdirs_opts {
    int32_t *brokers; /* --broker-list; NULL: every broker */
    int nbrokers;
    char **topics;    /* --topic-list; NULL: every topic */
    int ntopics;
    bool json;
    struct arena arena; /* owns the lists */
};

/* Parses "describe [options]" into *o (freed by logdirs_opts_free,
 * whatever the result). Returns ARGS_OK, ARGS_HELP or ARGS_ERROR (err). */
int logdirs_parse_args(int argc, char **argv, struct logdirs_opts *o, struct global_opts *g, char *err,
                       size_t errlen);
void logdirs_opts_free(struct logdirs_opts *o);
void logdirs_usage(FILE *f);
int cmd_log_dirs(int argc, char **argv, const struct global_opts *g);

#endif
