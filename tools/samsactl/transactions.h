/* samsactl transactions: Kafka's kafka-transactions.sh for what lives on
 * the partition leaders: describe-producers (DescribeProducers) and abort
 * (WriteTxnMarkers to the leader, as the admin client's abortTransaction
 * does, for a hanging transaction). */
#ifndef SAMSACTL_TRANSACTIONS_H
#define SAMSACTL_TRANSACTIONS_H

#include "opts.h"

int cmd_transactions(int argc, char **argv, const struct global_opts *g);

#endif
