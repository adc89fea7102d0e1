/* samsactl groups: Kafka's kafka-consumer-groups.sh (list, describe,
 * delete, reset-offsets) over FindCoordinator, ListGroups,
 * DescribeGroups, OffsetFetch, ListOffsets, DeleteGroups and
 * OffsetCommit. */
#ifndef SAMSACTL_GROUPS_H
#define SAMSACTL_GROUPS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "opts.h"
#include "util/arena.h"
#include "util/buf.h"

enum groups_action { GROUPS_NONE, GROUPS_LIST, GROUPS_DESCRIBE, GROUPS_DELETE, GROUPS_RESET_OFFSETS };

enum group_reset_kind { RESET_NONE, RESET_EARLIEST, RESET_LATEST, RESET_TO_OFFSET };

/* The sections describe prints (Kafka's --state, --members, --offsets). */
#define GROUPS_SHOW_STATE 1u
#define GROUPS_SHOW_MEMBERS 2u
#define GROUPS_SHOW_OFFSETS 4u
#define GROUPS_SHOW_ALL (GROUPS_SHOW_STATE | GROUPS_SHOW_MEMBERS | GROUPS_SHOW_OFFSETS)

/* One --topic of reset-offsets, Kafka's "T" (every partition) or
 * "T:P,P,..." (those partitions). */
struct group_topic_sel {
    const char *topic;
    int32_t *partitions; /* NULL with n == 0: every partition */
    int n;
};

struct groups_opts {
    struct arena arena; /* owns everything below that is not in argv */
    enum groups_action action;
    const char *group;
    unsigned show; /* describe: GROUPS_SHOW_* bits */
    struct group_topic_sel *topics;
    int ntopics;
    bool all_topics; /* reset-offsets: every topic the group has offsets for */
    enum group_reset_kind reset;
    int64_t to_offset; /* RESET_TO_OFFSET */
    bool execute;      /* reset-offsets: commit (default: print the plan only) */
    bool dry_run;      /* --dry-run given (the default made explicit) */
};

/* Parses the command line after "groups": the action comes first as a
 * word ("describe") or anywhere as Kafka's option ("--describe"). o is
 * owned by the caller and released with groups_opts_free. ARGS_OK,
 * ARGS_HELP or ARGS_ERROR with one line in err. */
int groups_parse_args(int argc, char **argv, struct groups_opts *o, struct global_opts *g, char *err,
                      size_t errlen);
void groups_opts_free(struct groups_opts *o);

/* Kafka's reset-offsets --topic: "T" or "T:P,P,...". Strings and the
 * partition array come from arena a. 0, or -1 with err filled. */
int group_topic_parse(struct arena *a, const char *s, struct group_topic_sel *out, char *err, size_t errlen);

/* A member's assignment as the consumer protocol encodes it
 * (ConsumerProtocolAssignment: version int16, then the topics with
 * their partitions, then user data). Topic names are NUL-terminated;
 * everything lives in the arena given to the decoder. */
struct group_assigned_topic {
    const char *topic;
    int32_t *partitions;
    int32_t n;
};

struct group_assignment {
    struct group_assigned_topic *topics;
    int32_t ntopics;
};

/* Decodes len bytes at p into *out (len <= 0: no assignment yet, as a
 * member has between JoinGroup and SyncGroup). A version newer than the
 * generated schema's is read as that one, as Kafka's ConsumerProtocol
 * does: fields are only ever appended. 0, or -1 for bytes that are not
 * an assignment. */
int group_assignment_decode(const uint8_t *p, int32_t len, struct arena *a, struct group_assignment *out);
/* Partitions in the assignment, counted over all topics. */
int32_t group_assignment_count(const struct group_assignment *as);
/* Appends Kafka's --members --verbose form, topics and partitions
 * sorted: "t1(0,1),t2(3)"; "-" for an empty assignment. No NUL. */
void group_assignment_format(const struct group_assignment *as, struct buf *out);

/* Lag as Kafka's ConsumerGroupCommand computes it: log end minus the
 * committed offset, negative when the log was truncated below it; false
 * (unknown) when either offset is (-1). */
bool group_lag(int64_t committed, int64_t log_end, int64_t *lag);

/* The offset reset-offsets commits for one partition, given its log
 * start and end (both known). --to-offset is clamped into
 * [log_start, log_end] as Kafka does; *clamped says so, for the
 * warning. */
int64_t group_reset_target(enum group_reset_kind k, int64_t to_offset, int64_t log_start, int64_t log_end,
                           bool *clamped);

/* One committed offset (OffsetFetch). */
struct group_committed {
    const char *topic;
    int32_t partition;
    int64_t offset;
};

/* One line of describe's offsets table. */
struct group_offset_row {
    const char *topic;
    int32_t partition;
    int64_t committed; /* -1: none */
    int64_t log_end;   /* -1: unknown (filled in by the caller) */
    int member;        /* index of the member it is assigned to, -1: none */
};

/* The partitions describe lists, as Kafka does: every partition assigned
 * to a member (assignments[i] is member i's) and every partition with a
 * committed offset, each once, sorted by topic and partition. *out comes
 * from arena a; returns the count. */
int group_offset_rows(struct arena *a, const struct group_assignment *assignments, int nmembers,
                      const struct group_committed *committed, int ncommitted, struct group_offset_row **out);

void groups_usage(FILE *f);
int cmd_groups(int argc, char **argv, const struct global_opts *g);

#endif
