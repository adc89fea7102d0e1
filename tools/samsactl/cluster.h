/* samsactl cluster: commands about the cluster as a whole, one
 * subcommand each ("cluster plugins": the plugins every broker loaded). */
#ifndef SAMSACTL_CLUSTER_H
#define SAMSACTL_CLUSTER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "opts.h"

/* The broker config through which a samsa broker reports its plugins
 * (plugin_registry_loaded_text in core/plugin/registry.h has the format). */
#define CLUSTER_PLUGINS_KEY "samsa.plugins.loaded"

/* One plugin of that value. Fields point into the parsed string; caps is
 * the capabilities joined by ',' as --list-plugins shows them, "" for
 * none; version "" when the plugin gives none. */
struct cluster_plugin {
    const char *name;
    const char *version;
    const char *abi;
    const char *caps;
};

/* Splits value (modified in place) into *out (malloc'd, the caller
 * frees; NULL for none). Returns the count, or -1 with err naming an
 * entry that lacks a field. */
int cluster_plugins_parse(char *value, struct cluster_plugin **out, char *err, size_t errlen);

struct cluster_plugins_opts {
    int32_t broker; /* -1: every broker of the cluster */
};

/* Parses the options after "cluster plugins". Returns ARGS_OK, ARGS_HELP
 * or ARGS_ERROR with one line in err. */
int cluster_plugins_parse_args(int argc, char **argv, struct cluster_plugins_opts *o, struct global_opts *g,
                               char *err, size_t errlen);

void cluster_usage(FILE *f);
int cmd_cluster(int argc, char **argv, const struct global_opts *g);

#endif
