/* samsactl acls: ACLs with kafka-acls.sh's vocabulary (--allow-principal,
 * --deny-principal, --allow-host, --operation, --topic, --group,
 * --cluster, --transactional-id, --resource-pattern-type, ...), through
 * CreateAcls, DescribeAcls and DeleteAcls; list prints what
 * kafka-acls.sh --list prints. */
#ifndef SAMSACTL_ACLS_H
#define SAMSACTL_ACLS_H

#include "opts.h"

int cmd_acls(int argc, char **argv, const struct global_opts *g);

#endif
