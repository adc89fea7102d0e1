/* samsactl configs: Kafka's kafka-configs.sh for brokers, the cluster's
 * broker defaults and topics (describe, alter), over DescribeConfigs and
 * IncrementalAlterConfigs. Client quotas are `samsactl quotas`, SCRAM
 * users `samsactl users`. */
#ifndef SAMSACTL_CONFIGS_H
#define SAMSACTL_CONFIGS_H

#include <stdbool.h>

#include "opts.h"
#include "util/arena.h"

#define CONFIGS_MAX_OPS 64

struct configs_opts {
    struct arena arena;  /* owns the split keys and values */
    bool alter;          /* else describe */
    int8_t resource;     /* Kafka's ConfigResource type: 2 topic, 4 broker */
    const char *name;    /* broker id, topic name; "" for the broker defaults */
    bool all;            /* describe: every config, not only the dynamic ones */
    const char *set_key[CONFIGS_MAX_OPS], *set_value[CONFIGS_MAX_OPS];
    int nset;
    const char *del_key[CONFIGS_MAX_OPS];
    int ndel;
    bool validate_only;
};

/* Parses the command line after "configs" into o (released with
 * configs_opts_free). ARGS_OK, ARGS_HELP or ARGS_ERROR with one line in
 * err. --add-config takes kafka-configs.sh's list: k=v pairs split at
 * commas, a value in [ ] keeping its commas (the brackets dropped). */
int configs_parse_args(int argc, char **argv, struct configs_opts *o, struct global_opts *g, char *err,
                       size_t errlen);
void configs_opts_free(struct configs_opts *o);

int cmd_configs(int argc, char **argv, const struct global_opts *g);

#endif
