/* samsactl quotas: client quotas (Kafka's kafka-configs.sh
 * --entity-type users|clients|ips ... --alter --add-config
 * producer_byte_rate=...), through AlterClientQuotas and
 * DescribeClientQuotas. */
#ifndef SAMSACTL_QUOTAS_H
#define SAMSACTL_QUOTAS_H

#include "opts.h"

int cmd_quotas(int argc, char **argv, const struct global_opts *g);

#endif
