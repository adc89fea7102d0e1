/* samsactl users: SCRAM credentials (Kafka's kafka-configs.sh
 * --entity-type users --alter --add-config 'SCRAM-SHA-256=[...]'),
 * through AlterUserScramCredentials and DescribeUserScramCredentials. */
#ifndef SAMSACTL_USERS_H
#define SAMSACTL_USERS_H

#include "opts.h"

int cmd_users(int argc, char **argv, const struct global_opts *g);

#endif
