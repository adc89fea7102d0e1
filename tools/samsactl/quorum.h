/* samsactl quorum (status of the metadata quorum) and samsactl cluster
 * describe (brokers, racks, fencing, who leads). */
#ifndef SAMSACTL_QUORUM_H
#define SAMSACTL_QUORUM_H

#include <stdbool.h>
#include <stdio.h>

#include "opts.h"

struct quorum_status_opts {
    bool replication;                 /* one line per replica */
    const char *bootstrap_controller; /* NULL: ask through the broker */
};

/* Parses the options after "quorum status" (and "cluster describe").
 * Returns ARGS_OK, ARGS_HELP or ARGS_ERROR with one line in err. */
int quorum_status_parse_args(int argc, char **argv, struct quorum_status_opts *o, struct global_opts *g, char *err,
                             size_t errlen);
void quorum_usage(FILE *f);
int cmd_quorum(int argc, char **argv, const struct global_opts *g);
int cmd_cluster_describe(int argc, char **argv, const struct global_opts *g);

#endif
