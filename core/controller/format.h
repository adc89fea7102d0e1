/* `samsa format` and `samsa random-uuid`: Kafka's kafka-storage.sh for
 * samsa. Every node of a cluster is formatted with the same cluster id
 * before its first start; format writes meta.properties (cluster.id,
 * node.id, a new directory.id) into each log dir and the metadata log
 * dir. The zero-config single node (the only voter of its quorum) is
 * formatted implicitly at start; any other node refuses to start on an
 * unformatted directory, because a random cluster id per node would make
 * a cluster that can never agree. */
#ifndef SAMSA_CONTROLLER_FORMAT_H
#define SAMSA_CONTROLLER_FORMAT_H

#include <stdbool.h>

struct samsa_config;

/* Whether argv names one of these commands. */
bool samsa_format_command(int argc, char **argv);
/* Runs it: 0 on success, 2 (one line on stderr) on failure. */
int samsa_format_main(int argc, char **argv);

/* Whether a node with this config may format its directories at start
 * (it is the only voter of its quorum). */
bool samsa_implicit_format_allowed(const struct samsa_config *cfg);

#endif
