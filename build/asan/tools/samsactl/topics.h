/* samsactl topics: Kafka's kafka-topics.sh (create, list, describe, alter,
 * delete) over CreateTopics, Metadata, DescribeConfigs, CreatePartitions,
 * IncrementalAlterConfigs and DeleteTopics. */
#ifndef SAMSACTL_TOPICS_H
#define SAMSACTL_TOPICS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "opts.h"
#include "util/arena.h"

enum topics_action { TOPICS_NONE, TOPICS_CREATE, TOPICS_LIST, TOPICS_DESCRIBE, TOPICS_ALTER, TOPICS_DELETE };

struct topic_config_kv {
    const char *key;
    const char *value;
};

/* Brokers holding one partition's replicas, preferred leader first. */
struct replica_list {
    int32_t *ids;
    int n;
};

struct topics_opts {
    struct arena arena; /* owns everything below that is not in argv */
    enum topics_action action;
    const char *topic;
    int32_t partitions;         /* -1: not given */
    int32_t replication_factor; /* -1: not given */
    struct topic_config_kv *configs;
    int nconfigs;
    const char **delete_configs;
    int ndelete_configs;
    struct replica_list *assignment; /* --replica-assignment, per partition */
    int nassignment;
    bool if_not_exists, if_exists, validate_only, exclude_internal;
};

/* Parses the command line after "topics": the action comes first as a
 * word ("create") or anywhere as Kafka's option ("--create"). o is owned
 * by the caller and released with topics_opts_free. ARGS_OK, ARGS_HELP
 * or ARGS_ERROR with one line in err. */
int topics_parse_args(int argc, char **argv, struct topics_opts *o, struct global_opts *g, char *err,
                      size_t errlen);
void topics_opts_free(struct topics_opts *o);

/* Kafka's --replica-assignment: partitions separated by ',', the brokers
 * of one partition by ':' ("0:1,1:2" = partition 0 on 0 and 1, partition
 * 1 on 1 and 2). Rejects duplicates within a partition and partitions of
 * different sizes, as TopicCommand does. Arrays come from arena a.
 * Returns 0 or -1 with err filled. */
int parse_replica_assignment(struct arena *a, const char *s, struct replica_list **out, int *n, char *err,
                             size_t errlen);

/* Kafka's --topic for list/describe/alter/delete is a regular expression
 * matched against the whole name. Topic names use only [a-zA-Z0-9._-], so
 * samsactl takes a --topic holding any other character as a pattern
 * (POSIX extended, anchored) and anything else as an exact name; "a.b"
 * therefore names topic a.b alone. */
bool topic_is_pattern(const char *s);
/* Whether name is selected by --topic sel (NULL selects all). */
bool topic_matches(const char *sel, const char *name);

void topics_usage(FILE *f);
int cmd_topics(int argc, char **argv, const struct global_opts *g);

#endif
