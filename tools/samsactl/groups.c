/* samsactl groups (see groups.h). Output and messages follow Kafka's
 * ConsumerGroupCommand so that an operator's habits carry over.
 *
 * A group lives on one coordinator (the leader of its __consumer_offsets
 * partition): describe, delete and reset-offsets ask FindCoordinator
 * first and send everything about the group there, asking again when
 * the answer says the coordinator moved or is still loading, as Kafka's
 * admin client does. list asks every broker, since each knows only the
 * groups it coordinates. Log offsets come from the partition leaders
 * (ListOffsets). */
#include "groups.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "coordinator.h"
#include "proto/gen/consumer_group_describe_request.h"
#include "proto/gen/consumer_group_describe_response.h"
#include "proto/gen/consumer_protocol_assignment.h"
#include "proto/kerr.h"
#include "table.h"
#include "util/clock.h"

#define LIST_OFFSETS_LATEST (-1)
#define LIST_OFFSETS_EARLIEST (-2)

/* ---- options ---- */

enum {
    OPT_GROUP = 1,
    OPT_TOPIC,
    OPT_ALL_TOPICS,
    OPT_TO_EARLIEST,
    OPT_TO_LATEST,
    OPT_TO_OFFSET,
    OPT_EXECUTE,
    OPT_DRY_RUN,
    OPT_STATE,
    OPT_MEMBERS,
    OPT_OFFSETS,
    OPT_VERBOSE,
    OPT_LIST,
    OPT_DESCRIBE,
    OPT_DELETE,
    OPT_RESET_OFFSETS,
};

static const struct opt_def groups_defs[] = {
    {"group", true, OPT_GROUP},
    {"topic", true, OPT_TOPIC},
    {"all-topics", false, OPT_ALL_TOPICS},
    {"to-earliest", false, OPT_TO_EARLIEST},
    {"to-latest", false, OPT_TO_LATEST},
    {"to-offset", true, OPT_TO_OFFSET},
    {"execute", false, OPT_EXECUTE},
    {"dry-run", false, OPT_DRY_RUN},
    {"state", false, OPT_STATE},
    {"members", false, OPT_MEMBERS},
    {"offsets", false, OPT_OFFSETS},
    {"verbose", false, OPT_VERBOSE},
    {"list", false, OPT_LIST},
    {"describe", false, OPT_DESCRIBE},
    {"delete", false, OPT_DELETE},
    {"reset-offsets", false, OPT_RESET_OFFSETS},
    {NULL, false, 0},
};

void groups_usage(FILE *f)
{
    fputs("Usage: samsactl groups ACTION [options]\n"
          "\n"
          "  list            every group of every broker: GROUP, STATE, PROTOCOL-TYPE\n"
          "  describe        --group G [--state] [--members] [--offsets]\n"
          "                  the group's state and coordinator, its members with their\n"
          "                  assigned partitions, and per partition the committed offset,\n"
          "                  log end offset and lag (the options pick sections; default all)\n"
          "  delete          --group G   (only a group without active members)\n"
          "  reset-offsets   --group G (--topic T[:P,P...]... | --all-topics)\n"
          "                  (--to-earliest | --to-latest | --to-offset N) [--dry-run | --execute]\n"
          "                  prints the new offsets; commits them only with --execute, and\n"
          "                  only while the group has no active members\n"
          "\n"
          "ACTION may also be given as Kafka's option (--list, --describe, --delete,\n"
          "--reset-offsets).\n"
          "  --bootstrap-server HOST:PORT[,...]  (default $SAMSA_BOOTSTRAP or " SAMSACTL_DEFAULT_BOOTSTRAP ")\n",
          f);
}

void groups_opts_free(struct groups_opts *o) { arena_free(&o->arena); }

int group_topic_parse(struct arena *a, const char *s, struct group_topic_sel *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *colon = strchr(s, ':');
    size_t tlen = colon ? (size_t)(colon - s) : strlen(s);
    if (tlen == 0) {
        snprintf(err, errlen, "invalid --topic '%s' (want TOPIC or TOPIC:PARTITION,PARTITION,...)", s);
        return -1;
    }
    out->topic = arena_strndup(a, s, tlen);
    if (!colon)
        return 0;
    char **items;
    int n;
    if (!split_csv(a, colon + 1, &items, &n)) {
        snprintf(err, errlen, "invalid --topic '%s' (want TOPIC or TOPIC:PARTITION,PARTITION,...)", s);
        return -1;
    }
    out->partitions = arena_alloc(a, (size_t)n * sizeof *out->partitions);
    for (int i = 0; i < n; i++)
        if (!parse_i32(items[i], 0, INT32_MAX, &out->partitions[i])) {
            snprintf(err, errlen, "invalid partition '%s' in --topic '%s'", items[i], s);
            return -1;
        }
    out->n = n;
    return 0;
}

static enum groups_action action_word(const char *s)
{
    static const char *const words[] = {NULL, "list", "describe", "delete", "reset-offsets"};
    for (int i = 1; i < 5; i++)
        if (strcmp(s, words[i]) == 0)
            return (enum groups_action)i;
    return GROUPS_NONE;
}

static const char *action_name(enum groups_action a)
{
    static const char *const words[] = {"", "list", "describe", "delete", "reset-offsets"};
    return words[a];
}

static int set_reset(struct groups_opts *o, enum group_reset_kind k, char *err, size_t errlen)
{
    if (o->reset != RESET_NONE && o->reset != k) {
        snprintf(err, errlen, "only one of --to-earliest, --to-latest and --to-offset may be given");
        return -1;
    }
    o->reset = k;
    return 0;
}

int groups_parse_args(int argc, char **argv, struct groups_opts *o, struct global_opts *g, char *err,
                      size_t errlen)
{
    memset(o, 0, sizeof *o);
    arena_init(&o->arena);
    if (argc > 0 && strncmp(argv[0], "--", 2) != 0) {
        o->action = action_word(argv[0]);
        if (o->action == GROUPS_NONE) {
            snprintf(err, errlen, "unknown action '%s' (want list, describe, delete or reset-offsets)", argv[0]);
            return ARGS_ERROR;
        }
        argc--, argv++;
    }
    bool verbose = false;
    struct opt_iter it;
    opt_iter_init(&it, argc, argv, groups_defs, err, errlen);
    int id;
    while ((id = opt_next(&it)) > 0) {
        if (global_opt_apply(g, id, it.arg))
            continue;
        switch (id) {
        case OPT_HELP:
            return ARGS_HELP;
        case OPT_GROUP:
            if (o->group) {
                snprintf(err, errlen, "only one --group may be given");
                return ARGS_ERROR;
            }
            o->group = it.arg;
            break;
        case OPT_TOPIC: {
            struct group_topic_sel *n = arena_alloc(&o->arena, (size_t)(o->ntopics + 1) * sizeof *n);
            if (o->ntopics)
                memcpy(n, o->topics, (size_t)o->ntopics * sizeof *n);
            if (group_topic_parse(&o->arena, it.arg, &n[o->ntopics], err, errlen) < 0)
                return ARGS_ERROR;
            o->topics = n;
            o->ntopics++;
            break;
        }
        case OPT_ALL_TOPICS:
            o->all_topics = true;
            break;
        case OPT_TO_EARLIEST:
            if (set_reset(o, RESET_EARLIEST, err, errlen) < 0)
                return ARGS_ERROR;
            break;
        case OPT_TO_LATEST:
            if (set_reset(o, RESET_LATEST, err, errlen) < 0)
                return ARGS_ERROR;
            break;
        case OPT_TO_OFFSET:
            if (set_reset(o, RESET_TO_OFFSET, err, errlen) < 0)
                return ARGS_ERROR;
            if (!parse_i64(it.arg, 0, INT64_MAX, &o->to_offset)) {
                snprintf(err, errlen, "invalid --to-offset '%s' (want an offset >= 0)", it.arg);
                return ARGS_ERROR;
            }
            break;
        case OPT_EXECUTE:
            o->execute = true;
            break;
        case OPT_DRY_RUN:
            o->dry_run = true;
            break;
        case OPT_STATE:
            o->show |= GROUPS_SHOW_STATE;
            break;
        case OPT_MEMBERS:
            o->show |= GROUPS_SHOW_MEMBERS;
            break;
        case OPT_OFFSETS:
            o->show |= GROUPS_SHOW_OFFSETS;
            break;
        case OPT_VERBOSE:
            /* Kafka's --members --verbose adds the assignment, which
             * samsactl always shows. */
            verbose = true;
            break;
        case OPT_LIST:
        case OPT_DESCRIBE:
        case OPT_DELETE:
        case OPT_RESET_OFFSETS: {
            enum groups_action a = (enum groups_action)(id - OPT_LIST + GROUPS_LIST);
            if (o->action != GROUPS_NONE && o->action != a) {
                snprintf(err, errlen, "only one of list, describe, delete and reset-offsets may be given");
                return ARGS_ERROR;
            }
            o->action = a;
            break;
        }
        default:
            snprintf(err, errlen, "option '--%s' is not valid here", it.name);
            return ARGS_ERROR;
        }
    }
    if (id < 0)
        return ARGS_ERROR;
    if (o->action == GROUPS_NONE) {
        snprintf(err, errlen, "an action is required: list, describe, delete or reset-offsets");
        return ARGS_ERROR;
    }

    const char *act = action_name(o->action);
#define INVALID(cond, opt)                                                                  \
    do {                                                                                    \
        if (cond) {                                                                         \
            snprintf(err, errlen, "option '--%s' is not valid with groups %s", opt, act);   \
            return ARGS_ERROR;                                                              \
        }                                                                                   \
    } while (0)
    if (o->action != GROUPS_LIST && (!o->group || !*o->group)) {
        snprintf(err, errlen, "--group is required for groups %s", act);
        return ARGS_ERROR;
    }
    INVALID(o->action == GROUPS_LIST && o->group, "group");
    if (o->action != GROUPS_DESCRIBE) {
        INVALID(o->show & GROUPS_SHOW_STATE, "state");
        INVALID(o->show & GROUPS_SHOW_MEMBERS, "members");
        INVALID(o->show & GROUPS_SHOW_OFFSETS, "offsets");
        INVALID(verbose, "verbose");
    }
    if (o->action != GROUPS_RESET_OFFSETS) {
        INVALID(o->ntopics > 0, "topic");
        INVALID(o->all_topics, "all-topics");
        INVALID(o->reset == RESET_EARLIEST, "to-earliest");
        INVALID(o->reset == RESET_LATEST, "to-latest");
        INVALID(o->reset == RESET_TO_OFFSET, "to-offset");
        INVALID(o->execute, "execute");
        INVALID(o->dry_run, "dry-run");
    }
#undef INVALID
    if (o->action == GROUPS_DESCRIBE && o->show == 0)
        o->show = GROUPS_SHOW_ALL;
    if (o->action == GROUPS_RESET_OFFSETS) {
        /* Kafka's checks, in its words */
        if (o->ntopics == 0 && !o->all_topics) {
            snprintf(err, errlen, "One of the reset scopes should be defined: --all-topics, --topic.");
            return ARGS_ERROR;
        }
        if (o->ntopics > 0 && o->all_topics) {
            snprintf(err, errlen, "--all-topics and --topic cannot be given together");
            return ARGS_ERROR;
        }
        if (o->reset == RESET_NONE) {
            snprintf(err, errlen, "One of the reset specifications should be defined: --to-earliest, --to-latest, "
                                  "--to-offset.");
            return ARGS_ERROR;
        }
        if (o->execute && o->dry_run) {
            snprintf(err, errlen, "--execute and --dry-run cannot be given together");
            return ARGS_ERROR;
        }
    }
    return ARGS_OK;
}

/* ---- the pure parts ---- */

int group_assignment_decode(const uint8_t *p, int32_t len, struct arena *a, struct group_assignment *out)
{
    memset(out, 0, sizeof *out);
    if (len <= 0)
        return 0;
    struct kreader r;
    kr_init(&r, p, (size_t)len, a);
    int16_t v = kr_i16(&r);
    if (r.err || v < 0)
        return -1;
    if (v > CONSUMER_PROTOCOL_ASSIGNMENT_MAX_VERSION)
        v = CONSUMER_PROTOCOL_ASSIGNMENT_MAX_VERSION;
    consumer_protocol_assignment_t m;
    if (consumer_protocol_assignment_decode(&r, v, &m) < 0 || r.err || m.assigned_partitions.n < 0)
        return -1;
    int32_t n = m.assigned_partitions.n;
    out->topics = arena_alloc(a, (size_t)(n > 0 ? n : 1) * sizeof *out->topics);
    out->ntopics = n;
    for (int32_t i = 0; i < n; i++) {
        const consumer_protocol_assignment_topic_partition_t *t = &m.assigned_partitions.a[i];
        out->topics[i].topic = kstr_dup(a, t->topic);
        out->topics[i].partitions = t->partitions.a;
        out->topics[i].n = t->partitions.n > 0 ? t->partitions.n : 0;
    }
    return 0;
}

int32_t group_assignment_count(const struct group_assignment *as)
{
    int32_t n = 0;
    for (int32_t i = 0; i < as->ntopics; i++)
        n += as->topics[i].n;
    return n;
}

static int cmp_topic_ptr(const void *a, const void *b)
{
    const struct group_assigned_topic *x = *(const struct group_assigned_topic *const *)a;
    const struct group_assigned_topic *y = *(const struct group_assigned_topic *const *)b;
    return strcmp(x->topic, y->topic);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

void group_assignment_format(const struct group_assignment *as, struct buf *out)
{
    /* Kafka leaves out topics without partitions: an assignment of
     * nothing prints as "-" either way. */
    int32_t k = 0;
    const struct group_assigned_topic **ts = xmalloc((size_t)(as->ntopics > 0 ? as->ntopics : 1) * sizeof *ts);
    for (int32_t i = 0; i < as->ntopics; i++)
        if (as->topics[i].n > 0)
            ts[k++] = &as->topics[i];
    if (k == 0) {
        buf_append(out, "-", 1);
        free(ts);
        return;
    }
    qsort(ts, (size_t)k, sizeof *ts, cmp_topic_ptr);
    for (int32_t i = 0; i < k; i++) {
        int32_t *ps = xmalloc((size_t)ts[i]->n * sizeof *ps);
        memcpy(ps, ts[i]->partitions, (size_t)ts[i]->n * sizeof *ps);
        qsort(ps, (size_t)ts[i]->n, sizeof *ps, cmp_i32);
        if (i)
            buf_append(out, ",", 1);
        buf_append(out, ts[i]->topic, strlen(ts[i]->topic));
        for (int32_t j = 0; j < ts[i]->n; j++) {
            char num[16];
            int len = snprintf(num, sizeof num, "%s%d", j ? "," : "(", ps[j]);
            buf_append(out, num, (size_t)len);
        }
        buf_append(out, ")", 1);
        free(ps);
    }
    free(ts);
}

bool group_lag(int64_t committed, int64_t log_end, int64_t *lag)
{
    if (committed < 0 || log_end < 0)
        return false;
    *lag = log_end - committed;
    return true;
}

int64_t group_reset_target(enum group_reset_kind k, int64_t to_offset, int64_t log_start, int64_t log_end,
                           bool *clamped)
{
    *clamped = false;
    switch (k) {
    case RESET_EARLIEST:
        return log_start;
    case RESET_LATEST:
        return log_end;
    case RESET_TO_OFFSET:
        if (to_offset > log_end) {
            *clamped = true;
            return log_end;
        }
        if (to_offset < log_start) {
            *clamped = true;
            return log_start;
        }
        return to_offset;
    default:
        return -1;
    }
}

static int cmp_row(const void *a, const void *b)
{
    const struct group_offset_row *x = a, *y = b;
    int c = strcmp(x->topic, y->topic);
    return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

int group_offset_rows(struct arena *a, const struct group_assignment *assignments, int nmembers,
                      const struct group_committed *committed, int ncommitted, struct group_offset_row **out)
{
    int total = ncommitted;
    for (int m = 0; m < nmembers; m++)
        total += group_assignment_count(&assignments[m]);
    struct group_offset_row *rows = arena_alloc(a, (size_t)(total > 0 ? total : 1) * sizeof *rows);
    int n = 0;
    /* one row per assigned partition and one per offset; the merge
     * below joins the rows of a partition field by field */
    for (int m = 0; m < nmembers; m++)
        for (int32_t t = 0; t < assignments[m].ntopics; t++)
            for (int32_t p = 0; p < assignments[m].topics[t].n; p++)
                rows[n++] = (struct group_offset_row){assignments[m].topics[t].topic,
                                                      assignments[m].topics[t].partitions[p], -1, -1, m};
    for (int i = 0; i < ncommitted; i++)
        rows[n++] = (struct group_offset_row){committed[i].topic, committed[i].partition, committed[i].offset, -1,
                                              -1};
    qsort(rows, (size_t)n, sizeof *rows, cmp_row);
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (k > 0 && cmp_row(&rows[k - 1], &rows[i]) == 0) {
            struct group_offset_row *r = &rows[k - 1];
            if (r->committed < 0)
                r->committed = rows[i].committed;
            /* a partition two members claim (a broken assignor) is shown
             * with the first member in the group's order */
            if (rows[i].member >= 0 && (r->member < 0 || rows[i].member < r->member))
                r->member = rows[i].member;
            continue;
        }
        rows[k++] = rows[i];
    }
    *out = rows;
    return k;
}

/* ---- output ---- */

static const char *num(struct arena *a, int64_t v) { return table_cellf(a, "%" PRId64, v); }

/* An offset cell: "-" for none, as Kafka prints a missing one. */
static const char *offset_cell(struct arena *a, int64_t v) { return v < 0 ? "-" : num(a, v); }

/* A text cell: "-" for an empty or null string, so that every line
 * splits into the same number of words. */
static const char *text_cell(struct arena *a, kstr_t s) { return s.len > 0 ? kstr_dup(a, s) : "-"; }

/* ---- talking to the coordinator (coordinator.h): the group-level
 * error of each answer ---- */

static int describe_error(const struct kc_response *r)
{
    const describe_groups_response_t *m = r->msg;
    return m->groups.n > 0 ? m->groups.a[0].error_code : 0;
}

static int delete_error(const struct kc_response *r)
{
    const delete_groups_response_t *m = r->msg;
    return m->results.n > 0 ? m->results.a[0].error_code : 0;
}

static int offset_fetch_error(const struct kc_response *r)
{
    const offset_fetch_response_t *m = r->msg;
    if (r->version >= 8)
        return m->groups.n > 0 ? m->groups.a[0].error_code : 0;
    return m->error_code;
}

static int commit_error(const struct kc_response *r)
{
    /* a group-level error is repeated on every partition */
    const offset_commit_response_t *m = r->msg;
    for (int32_t t = 0; t < m->topics.n; t++)
        if (m->topics.a[t].partitions.n > 0)
            return m->topics.a[t].partitions.a[0].error_code;
    return 0;
}

/* The group as DescribeGroups has it; *out owns the answer (free with
 * kc_response_free). A group-level error fails the call. */
static int describe_group(struct kc_client *c, struct coordinator *co, struct kc_response *out,
                          const describe_groups_response_described_group_t **g)
{
    describe_groups_request_t req;
    describe_groups_request_init(&req);
    kstr_t name = KSTR(co->key);
    req.groups.a = &name;
    req.groups.n = 1;
    int rc = coordinator_call(c, co, KAPI_DESCRIBE_GROUPS, &req, out, describe_error);
    if (rc)
        return rc;
    const describe_groups_response_t *m = out->msg;
    *g = NULL;
    for (int32_t i = 0; i < m->groups.n; i++)
        if (kstr_eqc(m->groups.a[i].group_id, co->key))
            *g = &m->groups.a[i];
    if (!*g)
        rc = kc_fail(c, KERR_UNKNOWN_SERVER_ERROR, "DescribeGroups answer does not mention group '%s'", co->key);
    else if ((*g)->error_code)
        rc = kc_fail(c, (*g)->error_code, "group '%s': %s", co->key, kc_default_message((*g)->error_code));
    if (rc)
        kc_response_free(out);
    return rc;
}

/* One partition of an OffsetFetch answer into v[*n], unless it has no
 * offset or an error (which is said on stderr). */
static void add_committed(struct group_committed *v, int *n, const char *topic, int32_t partition, int64_t offset,
                          int16_t error)
{
    if (error) {
        fprintf(stderr, "Warning: no committed offset for %s-%d: %s\n", topic, partition, kerr_name(error));
        return;
    }
    if (offset >= 0)
        v[(*n)++] = (struct group_committed){topic, partition, offset};
}

/* Every committed offset of the group (OffsetFetch of all topics), in
 * arena a; partitions without an offset or with an error are left out,
 * as Kafka's admin client leaves them. */
static int fetch_committed(struct kc_client *c, struct coordinator *co, struct arena *a,
                           struct group_committed **out, int *nout)
{
    offset_fetch_request_t req;
    offset_fetch_request_init(&req);
    /* v1-7 name the group at the top, v8+ in a list; null topics ask for
     * all (v2+) */
    req.group_id = KSTR(co->key);
    req.topics.a = NULL;
    req.topics.n = -1;
    offset_fetch_request_offset_fetch_request_group_t grp;
    offset_fetch_request_offset_fetch_request_group_init(&grp);
    grp.group_id = KSTR(co->key);
    grp.topics.a = NULL;
    grp.topics.n = -1;
    req.groups.a = &grp;
    req.groups.n = 1;
    struct kc_response r;
    int rc = coordinator_call(c, co, KAPI_OFFSET_FETCH, &req, &r, offset_fetch_error);
    if (rc)
        return rc;
    if (r.version < 2) {
        kc_response_free(&r);
        return kc_fail(c, KERR_UNSUPPORTED_VERSION, "the coordinator's OffsetFetch v%d cannot list every offset",
                       r.version);
    }
    int e = offset_fetch_error(&r);
    if (e) {
        kc_response_free(&r);
        return kc_fail(c, e, "fetching the offsets of group '%s': %s", co->key, kc_default_message(e));
    }
    const offset_fetch_response_t *m = r.msg;
    /* v1-7 and v8+ carry the same fields in differently named structs */
    int total = 0, n = 0;
    if (r.version >= 8) {
        for (int32_t g = 0; g < m->groups.n; g++)
            for (int32_t t = 0; t < m->groups.a[g].topics.n; t++)
                total += m->groups.a[g].topics.a[t].partitions.n > 0 ? m->groups.a[g].topics.a[t].partitions.n : 0;
    } else {
        for (int32_t t = 0; t < m->topics.n; t++)
            total += m->topics.a[t].partitions.n > 0 ? m->topics.a[t].partitions.n : 0;
    }
    struct group_committed *v = arena_alloc(a, (size_t)(total > 0 ? total : 1) * sizeof *v);
    if (r.version >= 8) {
        for (int32_t g = 0; g < m->groups.n; g++) {
            if (!kstr_eqc(m->groups.a[g].group_id, co->key))
                continue;
            for (int32_t t = 0; t < m->groups.a[g].topics.n; t++) {
                const offset_fetch_response_offset_fetch_response_topics_t *x = &m->groups.a[g].topics.a[t];
                const char *name = kstr_dup(a, x->name);
                for (int32_t p = 0; p < x->partitions.n; p++)
                    add_committed(v, &n, name, x->partitions.a[p].partition_index,
                                  x->partitions.a[p].committed_offset, x->partitions.a[p].error_code);
            }
        }
    } else {
        for (int32_t t = 0; t < m->topics.n; t++) {
            const offset_fetch_response_offset_fetch_response_topic_t *x = &m->topics.a[t];
            const char *name = kstr_dup(a, x->name);
            for (int32_t p = 0; p < x->partitions.n; p++)
                add_committed(v, &n, name, x->partitions.a[p].partition_index, x->partitions.a[p].committed_offset,
                              x->partitions.a[p].error_code);
        }
    }
    kc_response_free(&r);
    *out = v;
    *nout = n;
    return 0;
}

/* ---- log offsets ---- */

/* ListOffsets at ts for the partitions of topic led by node that are not
 * answered yet (done[i] false), filling out[i]. Partition errors leave
 * them unanswered (the caller retries after a metadata refresh). */
static int list_offsets_leader(struct kc_client *c, const char *topic, int32_t node, const int32_t *parts,
                               const int32_t *leader, bool *done, int n, int64_t ts, int64_t *out)
{
    struct kc_conn *conn;
    int rc = kc_node_conn(c, node, &conn);
    if (rc)
        return rc;
    int16_t v = kc_version(conn, KAPI_LIST_OFFSETS);
    if (v < 0)
        return kc_fail(c, KERR_UNSUPPORTED_VERSION, "broker %s:%d does not support ListOffsets", conn->host,
                       conn->port);
    struct arena a = ARENA_INIT;
    list_offsets_request_t req;
    list_offsets_request_init(&req);
    req.replica_id = -1; /* a client, not a follower */
    req.isolation_level = 0;
    req.timeout_ms = c->timeout_ms;
    req.topics.a = list_offsets_request_list_offsets_topic_new_array(&a, 1);
    req.topics.n = 1;
    list_offsets_request_list_offsets_topic_t *t = &req.topics.a[0];
    t->name = KSTR(topic);
    int k = 0;
    for (int i = 0; i < n; i++)
        k += !done[i] && leader[i] == node;
    t->partitions.a = list_offsets_request_list_offsets_partition_new_array(&a, k);
    t->partitions.n = k;
    k = 0;
    for (int i = 0; i < n; i++)
        if (!done[i] && leader[i] == node) {
            t->partitions.a[k].partition_index = parts[i];
            t->partitions.a[k].timestamp = ts;
            t->partitions.a[k].max_num_offsets = 1;
            k++;
        }
    struct kc_response resp;
    rc = kc_call_version(c, conn, KAPI_LIST_OFFSETS, v, &req, &resp);
    arena_free(&a);
    if (rc)
        return rc;
    const list_offsets_response_t *m = resp.msg;
    for (int32_t ti = 0; ti < m->topics.n; ti++) {
        if (!kstr_eqc(m->topics.a[ti].name, topic))
            continue;
        for (int32_t pi = 0; pi < m->topics.a[ti].partitions.n; pi++) {
            const list_offsets_response_list_offsets_partition_response_t *pr = &m->topics.a[ti].partitions.a[pi];
            int64_t off = v == 0 ? (pr->old_style_offsets.n > 0 ? pr->old_style_offsets.a[0] : -1) : pr->offset;
            if (pr->error_code || off < 0)
                continue;
            for (int i = 0; i < n; i++)
                if (parts[i] == pr->partition_index && !done[i] && leader[i] == node) {
                    out[i] = off;
                    done[i] = true;
                }
        }
    }
    kc_response_free(&resp);
    return 0;
}

/* Offsets at ts (LIST_OFFSETS_LATEST or _EARLIEST) of n partitions of
 * topic, -1 in out[i] where no leader could say after a few rounds of
 * metadata refreshes (a leader moving). Returns 0, the topic's error
 * (it does not exist), or a transport error. */
static int topic_offsets(struct kc_client *c, const char *topic, const int32_t *parts, int n, int64_t ts,
                         int64_t *out)
{
    int32_t *leader = xmalloc((size_t)(n > 0 ? n : 1) * sizeof *leader);
    bool *done = xcalloc((size_t)(n > 0 ? n : 1), sizeof *done);
    for (int i = 0; i < n; i++)
        out[i] = -1;
    int rc = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        const kc_topic_t *t;
        rc = kc_topic_metadata(c, topic, false, &t);
        if (rc)
            break;
        /* copied out: the cache is replaced by the next refresh */
        for (int i = 0; i < n; i++) {
            const kc_partition_t *p = kc_meta_partition(t, parts[i]);
            leader[i] = p ? p->leader_id : -1;
        }
        for (int i = 0; i < n && rc == 0; i++)
            if (!done[i] && leader[i] >= 0)
                rc = list_offsets_leader(c, topic, leader[i], parts, leader, done, n, ts, out);
        if (rc)
            break;
        bool all = true;
        for (int i = 0; i < n; i++)
            all &= done[i];
        if (all)
            break;
        if (attempt < 2 && !kc_sleep_ms(100 << attempt)) {
            rc = kc_fail(c, KC_INTERRUPTED, "interrupted");
            break;
        }
    }
    free(leader);
    free(done);
    return rc;
}

/* Failures that say nothing about a topic but about reaching brokers:
 * describe stops on these and prints "-" for the others. */
static bool transport_error(int rc)
{
    return rc == KERR_NETWORK_EXCEPTION || rc == KERR_REQUEST_TIMED_OUT || rc == KC_INTERRUPTED ||
           rc == KERR_UNSUPPORTED_VERSION;
}

/* ---- list ---- */

struct listed {
    const char *group, *state, *protocol_type;
};

static int cmp_listed(const void *a, const void *b)
{
    return strcmp(((const struct listed *)a)->group, ((const struct listed *)b)->group);
}

/* ListGroups on one broker, retried while its coordinator loads. The
 * rows are appended to *v (strings in arena a). */
static int list_broker(struct kc_client *c, int32_t node, struct arena *a, struct listed **v, int *n, int *cap)
{
    int64_t deadline = clock_mono_ms() + c->timeout_ms;
    for (int backoff = 50;; backoff = coordinator_next_backoff(backoff)) {
        struct kc_conn *conn;
        int rc = kc_node_conn(c, node, &conn);
        if (rc)
            return rc;
        list_groups_request_t req;
        list_groups_request_init(&req);
        struct kc_response r;
        rc = kc_call(c, conn, KAPI_LIST_GROUPS, &req, &r);
        if (rc)
            return rc;
        const list_groups_response_t *m = r.msg;
        int e = m->error_code;
        if (e == 0) {
            for (int32_t i = 0; i < m->groups.n; i++) {
                const list_groups_response_listed_group_t *g = &m->groups.a[i];
                if (*n == *cap) {
                    *cap = *cap ? *cap * 2 : 16;
                    *v = xrealloc(*v, (size_t)*cap * sizeof **v);
                }
                /* ListGroups before v4 carries no state */
                (*v)[(*n)++] = (struct listed){kstr_dup(a, g->group_id),
                                               r.version >= 4 ? text_cell(a, g->group_state) : "-",
                                               text_cell(a, g->protocol_type)};
            }
            kc_response_free(&r);
            return 0;
        }
        kc_response_free(&r);
        rc = kc_fail(c, e, "ListGroups on broker %d: %s", node, kc_default_message(e));
        if (e != KERR_COORDINATOR_LOAD_IN_PROGRESS || clock_mono_ms() >= deadline)
            return rc;
        if (!kc_sleep_ms(backoff))
            return kc_fail(c, KC_INTERRUPTED, "interrupted");
    }
}

static int do_list(struct kc_client *c)
{
    int rc = kc_metadata(c, NULL, 0, false);
    if (rc)
        return rc;
    const metadata_response_t *m = kc_meta(c);
    int32_t nb = m->brokers.n > 0 ? m->brokers.n : 0;
    int32_t *ids = xcalloc((size_t)nb + 1, sizeof *ids);
    for (int32_t i = 0; i < nb; i++)
        ids[i] = m->brokers.a[i].node_id;
    qsort(ids, (size_t)nb, sizeof *ids, cmp_i32);
    struct arena a = ARENA_INIT;
    struct listed *v = NULL;
    int n = 0, cap = 0;
    for (int32_t i = 0; i < nb && rc == 0; i++)
        rc = list_broker(c, ids[i], &a, &v, &n, &cap);
    if (rc == 0) {
        if (n > 1) /* v is NULL when no group is listed */
            qsort(v, (size_t)n, sizeof *v, cmp_listed);
        static const char *const hdr[] = {"GROUP", "STATE", "PROTOCOL-TYPE"};
        struct table t;
        table_init(&t, 3, hdr);
        for (int i = 0; i < n; i++) {
            /* a group moving between coordinators may be listed twice */
            if (i > 0 && strcmp(v[i].group, v[i - 1].group) == 0)
                continue;
            const char *row[] = {v[i].group, v[i].state, v[i].protocol_type};
            table_row(&t, row);
        }
        table_print(&t);
        table_free(&t);
    }
    free(v);
    free(ids);
    arena_free(&a);
    return rc;
}

/* ---- describe ---- */

struct member {
    const char *member_id, *client_id, *host;
    struct group_assignment as;
    bool decoded; /* as holds the member's assignment */
};

static int cmp_member(const void *a, const void *b)
{
    return strcmp(((const struct member *)a)->member_id, ((const struct member *)b)->member_id);
}

static bool is_rebalancing(const char *state)
{
    /* classic groups' states, then the consumer protocol's (KIP-848) */
    return strcmp(state, "PreparingRebalance") == 0 || strcmp(state, "CompletingRebalance") == 0 ||
           strcmp(state, "Assigning") == 0 || strcmp(state, "Reconciling") == 0;
}

static int consumer_group_error(const struct kc_response *r)
{
    const consumer_group_describe_response_t *m = r->msg;
    return m->groups.n > 0 ? m->groups.a[0].error_code : 0;
}

/* A consumer-protocol (KIP-848) group, which DescribeGroups below v6
 * calls Dead as Kafka does: its state, assignor and members with their
 * current assignments from ConsumerGroupDescribe. Everything returned
 * lives in arena a. GROUP_ID_NOT_FOUND when no such group exists
 * (UNSUPPORTED_VERSION from a broker without the API). */
static int describe_consumer_group(struct kc_client *c, struct coordinator *co, struct arena *a, const char **state,
                                   const char **strategy, struct member **ms, int *nm)
{
    consumer_group_describe_request_t req;
    consumer_group_describe_request_init(&req);
    kstr_t name = KSTR(co->key);
    req.group_ids.a = &name;
    req.group_ids.n = 1;
    struct kc_response r;
    int rc = coordinator_call(c, co, KAPI_CONSUMER_GROUP_DESCRIBE, &req, &r, consumer_group_error);
    if (rc)
        return rc;
    const consumer_group_describe_response_t *m = r.msg;
    const consumer_group_describe_response_described_group_t *g = NULL;
    for (int32_t i = 0; i < m->groups.n; i++)
        if (kstr_eqc(m->groups.a[i].group_id, co->key))
            g = &m->groups.a[i];
    if (!g)
        rc = kc_fail(c, KERR_UNKNOWN_SERVER_ERROR, "ConsumerGroupDescribe answer does not mention group '%s'",
                     co->key);
    else if (g->error_code)
        rc = kc_fail(c, g->error_code, "group '%s': %s", co->key, kc_default_message(g->error_code));
    if (rc) {
        kc_response_free(&r);
        return rc;
    }
    *state = kstr_dup(a, g->group_state);
    *strategy = text_cell(a, g->assignor_name);
    int n = g->members.n > 0 ? g->members.n : 0;
    struct member *v = arena_alloc(a, (size_t)(n > 0 ? n : 1) * sizeof *v);
    for (int i = 0; i < n; i++) {
        const consumer_group_describe_response_member_t *x = &g->members.a[i];
        v[i].member_id = kstr_dup(a, x->member_id);
        v[i].client_id = text_cell(a, x->client_id);
        v[i].host = text_cell(a, x->client_host);
        const consumer_group_describe_response_assignment_t *as = &x->assignment;
        int32_t nt = as->topic_partitions.n > 0 ? as->topic_partitions.n : 0;
        v[i].as.ntopics = nt;
        v[i].as.topics = arena_alloc(a, (size_t)(nt > 0 ? nt : 1) * sizeof *v[i].as.topics);
        for (int32_t t = 0; t < nt; t++) {
            const consumer_group_describe_response_topic_partitions_t *tp = &as->topic_partitions.a[t];
            struct group_assigned_topic *o = &v[i].as.topics[t];
            o->topic = kstr_dup(a, tp->topic_name);
            o->n = tp->partitions.n > 0 ? tp->partitions.n : 0;
            o->partitions = arena_alloc(a, (size_t)(o->n > 0 ? o->n : 1) * sizeof *o->partitions);
            if (o->n > 0)
                memcpy(o->partitions, tp->partitions.a, (size_t)o->n * sizeof *o->partitions);
        }
        v[i].decoded = true;
    }
    kc_response_free(&r);
    *ms = v;
    *nm = n;
    return 0;
}

static int not_found(struct kc_client *c, const char *group)
{
    return kc_fail(c, KERR_GROUP_ID_NOT_FOUND, "Consumer group '%s' does not exist.", group);
}

static int do_describe(struct kc_client *c, const struct groups_opts *o)
{
    struct coordinator co = {o->group, COORD_KEY_GROUP, -1, ""};
    struct kc_response dr;
    const describe_groups_response_described_group_t *g;
    int rc = describe_group(c, &co, &dr, &g);
    if (rc)
        return rc;
    struct arena a = ARENA_INIT;
    const char *state = kstr_dup(&a, g->group_state);
    const char *strategy = text_cell(&a, g->protocol_data);
    struct member *ms;
    int nm;
    if (strcmp(state, "Dead") == 0) {
        /* Kafka's DescribeGroups answers an unknown group, and a
         * consumer-protocol one, as Dead without an error */
        kc_response_free(&dr);
        rc = describe_consumer_group(c, &co, &a, &state, &strategy, &ms, &nm);
        if (rc == KERR_GROUP_ID_NOT_FOUND || rc == KERR_UNSUPPORTED_VERSION || (rc == 0 && !strcmp(state, "Dead"))) {
            arena_free(&a);
            return not_found(c, o->group);
        }
        if (rc) {
            arena_free(&a);
            return rc;
        }
    } else {
        /* Only the consumer protocol's assignments have a known layout;
         * "" is a group of offsets only (no members). */
        bool consumer = g->protocol_type.len <= 0 || kstr_eqc(g->protocol_type, "consumer");
        nm = g->members.n > 0 ? g->members.n : 0;
        ms = arena_alloc(&a, (size_t)(nm > 0 ? nm : 1) * sizeof *ms);
        for (int i = 0; i < nm; i++) {
            const describe_groups_response_described_group_member_t *x = &g->members.a[i];
            ms[i].member_id = kstr_dup(&a, x->member_id);
            ms[i].client_id = text_cell(&a, x->client_id);
            ms[i].host = text_cell(&a, x->client_host);
            ms[i].decoded = consumer && group_assignment_decode(x->member_assignment.p, x->member_assignment.len,
                                                                &a, &ms[i].as) == 0;
            if (!ms[i].decoded)
                memset(&ms[i].as, 0, sizeof ms[i].as);
        }
        kc_response_free(&dr);
    }
    qsort(ms, (size_t)nm, sizeof *ms, cmp_member);

    if (is_rebalancing(state))
        fprintf(stderr, "Warning: Consumer group '%s' is rebalancing.\n", o->group);

    struct group_offset_row *rows = NULL;
    int nrows = 0;
    if (o->show & GROUPS_SHOW_OFFSETS) {
        struct group_committed *committed;
        int ncommitted;
        rc = fetch_committed(c, &co, &a, &committed, &ncommitted);
        struct group_assignment *as = arena_alloc(&a, (size_t)(nm > 0 ? nm : 1) * sizeof *as);
        for (int i = 0; i < nm; i++)
            as[i] = ms[i].as;
        if (rc == 0)
            nrows = group_offset_rows(&a, as, nm, committed, ncommitted, &rows);
        /* rows are sorted by topic: one ListOffsets round per topic */
        for (int i = 0; i < nrows && rc == 0;) {
            int j = i;
            while (j < nrows && strcmp(rows[j].topic, rows[i].topic) == 0)
                j++;
            int32_t *parts = arena_alloc(&a, (size_t)(j - i) * sizeof *parts);
            int64_t *ends = arena_alloc(&a, (size_t)(j - i) * sizeof *ends);
            for (int k = i; k < j; k++)
                parts[k - i] = rows[k].partition;
            int e = topic_offsets(c, rows[i].topic, parts, j - i, LIST_OFFSETS_LATEST, ends);
            if (e && transport_error(e))
                rc = e;
            else
                for (int k = i; k < j; k++)
                    rows[k].log_end = e ? -1 : ends[k - i];
            i = j;
        }
    }
    if (rc) {
        arena_free(&a);
        return rc;
    }

    /* sections are separated by one empty line, as Kafka's are */
    bool printed = false;
    if (o->show & GROUPS_SHOW_STATE) {
        static const char *const hdr[] = {"GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"};
        struct table t;
        table_init(&t, 5, hdr);
        char coord[340];
        snprintf(coord, sizeof coord, "%s (%d)", co.addr, co.node);
        const char *row[] = {o->group, coord, strategy, state, num(&a, nm)};
        table_row(&t, row);
        table_print(&t);
        table_free(&t);
        printed = true;
    }
    /* Kafka's line for a group without members stands in for the
     * members table, or for the offsets one when nothing is listed */
    bool say_no_members =
        nm == 0 && ((o->show & GROUPS_SHOW_MEMBERS) || ((o->show & GROUPS_SHOW_OFFSETS) && nrows == 0));
    if (say_no_members) {
        printf("%sConsumer group '%s' has no active members.\n", printed ? "\n" : "", o->group);
        printed = true;
    }
    if ((o->show & GROUPS_SHOW_MEMBERS) && nm > 0) {
        static const char *const hdr[] = {"GROUP", "MEMBER-ID", "CLIENT-ID", "HOST", "#PARTITIONS", "ASSIGNMENT"};
        struct table t;
        table_init(&t, 6, hdr);
        struct buf b;
        buf_init(&b);
        for (int i = 0; i < nm; i++) {
            buf_reset(&b);
            if (ms[i].decoded)
                group_assignment_format(&ms[i].as, &b);
            else
                buf_append(&b, "-", 1);
            const char *row[] = {o->group,
                                 ms[i].member_id,
                                 ms[i].client_id,
                                 ms[i].host,
                                 ms[i].decoded ? num(&a, group_assignment_count(&ms[i].as)) : "-",
                                 arena_strndup(&a, (const char *)b.data, b.len)};
            table_row(&t, row);
        }
        buf_free(&b);
        if (printed)
            printf("\n");
        table_print(&t);
        table_free(&t);
        printed = true;
    }
    if ((o->show & GROUPS_SHOW_OFFSETS) && (nrows > 0 || !say_no_members)) {
        static const char *const hdr[] = {"GROUP", "TOPIC",     "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET",
                                          "LAG",   "MEMBER-ID", "HOST",      "CLIENT-ID"};
        struct table t;
        table_init(&t, 9, hdr);
        for (int i = 0; i < nrows; i++) {
            const struct group_offset_row *r = &rows[i];
            const struct member *m = r->member >= 0 ? &ms[r->member] : NULL;
            int64_t lag;
            const char *row[] = {o->group,
                                 r->topic,
                                 num(&a, r->partition),
                                 offset_cell(&a, r->committed),
                                 offset_cell(&a, r->log_end),
                                 group_lag(r->committed, r->log_end, &lag) ? num(&a, lag) : "-",
                                 m ? m->member_id : "-",
                                 m ? m->host : "-",
                                 m ? m->client_id : "-"};
            table_row(&t, row);
        }
        if (printed)
            printf("\n");
        table_print(&t);
        table_free(&t);
    }
    arena_free(&a);
    return 0;
}

/* ---- delete ---- */

static int do_delete(struct kc_client *c, const struct groups_opts *o)
{
    struct coordinator co = {o->group, COORD_KEY_GROUP, -1, ""};
    delete_groups_request_t req;
    delete_groups_request_init(&req);
    kstr_t name = KSTR(o->group);
    req.groups_names.a = &name;
    req.groups_names.n = 1;
    struct kc_response r;
    int rc = coordinator_call(c, &co, KAPI_DELETE_GROUPS, &req, &r, delete_error);
    if (rc)
        return rc;
    const delete_groups_response_t *m = r.msg;
    const delete_groups_response_deletable_group_result_t *res = NULL;
    for (int32_t i = 0; i < m->results.n; i++)
        if (kstr_eqc(m->results.a[i].group_id, o->group))
            res = &m->results.a[i];
    if (!res)
        rc = kc_fail(c, KERR_UNKNOWN_SERVER_ERROR, "DeleteGroups answer does not mention group '%s'", o->group);
    else if (res->error_code)
        /* Kafka: "* Group 'G' could not be deleted due to: <exception message>" */
        rc = kc_fail(c, res->error_code, "Group '%s' could not be deleted due to: %s", o->group,
                     kc_default_message(res->error_code));
    else
        printf("Deletion of requested consumer groups ('%s') was successful.\n", o->group);
    kc_response_free(&r);
    return rc;
}

/* ---- reset-offsets ---- */

struct plan_row {
    const char *topic;
    int32_t partition;
    int64_t offset;
};

static int cmp_plan(const void *a, const void *b)
{
    const struct plan_row *x = a, *y = b;
    int c = strcmp(x->topic, y->topic);
    return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

/* The partitions to reset, sorted and each once: those --topic names (all
 * of a topic's when none are listed), or with --all-topics those the
 * group has offsets for (Kafka's choice: partitions without an offset
 * have nothing to reset). */
static int plan_partitions(struct kc_client *c, struct coordinator *co, const struct groups_opts *o, struct arena *a,
                           struct plan_row **out, int *nout)
{
    struct plan_row *v = NULL;
    int n = 0;
    if (o->all_topics) {
        struct group_committed *cm;
        int ncm;
        int rc = fetch_committed(c, co, a, &cm, &ncm);
        if (rc)
            return rc;
        v = arena_alloc(a, (size_t)(ncm > 0 ? ncm : 1) * sizeof *v);
        for (int i = 0; i < ncm; i++)
            v[n++] = (struct plan_row){cm[i].topic, cm[i].partition, -1};
    } else {
        for (int s = 0; s < o->ntopics; s++) {
            const struct group_topic_sel *sel = &o->topics[s];
            const kc_topic_t *t;
            int rc = kc_topic_metadata(c, sel->topic, false, &t);
            if (rc)
                return rc;
            int k = sel->n > 0 ? sel->n : (t->partitions.n > 0 ? t->partitions.n : 0);
            struct plan_row *nv = arena_alloc(a, (size_t)(n + k + 1) * sizeof *nv);
            if (n)
                memcpy(nv, v, (size_t)n * sizeof *nv);
            v = nv;
            for (int i = 0; i < k; i++) {
                int32_t p = sel->n > 0 ? sel->partitions[i] : t->partitions.a[i].partition_index;
                if (!kc_meta_partition(t, p))
                    return kc_fail(c, KERR_UNKNOWN_TOPIC_OR_PARTITION, "Partition %s-%d does not exist", sel->topic,
                                   p);
                v[n++] = (struct plan_row){sel->topic, p, -1};
            }
        }
    }
    if (n > 0)
        qsort(v, (size_t)n, sizeof *v, cmp_plan);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (k == 0 || cmp_plan(&v[k - 1], &v[i]) != 0)
            v[k++] = v[i];
    *out = v;
    *nout = k;
    return 0;
}

/* Fills each row's offset from its partition's log start and end. */
static int plan_offsets(struct kc_client *c, const struct groups_opts *o, struct arena *a, struct plan_row *v, int n)
{
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && strcmp(v[j].topic, v[i].topic) == 0)
            j++;
        int k = j - i;
        int32_t *parts = arena_alloc(a, (size_t)k * sizeof *parts);
        int64_t *start = arena_alloc(a, (size_t)k * sizeof *start);
        int64_t *end = arena_alloc(a, (size_t)k * sizeof *end);
        for (int x = 0; x < k; x++)
            parts[x] = v[i + x].partition;
        int rc = 0;
        if (o->reset != RESET_LATEST)
            rc = topic_offsets(c, v[i].topic, parts, k, LIST_OFFSETS_EARLIEST, start);
        if (rc == 0 && o->reset != RESET_EARLIEST)
            rc = topic_offsets(c, v[i].topic, parts, k, LIST_OFFSETS_LATEST, end);
        if (rc)
            return rc;
        for (int x = 0; x < k; x++) {
            struct plan_row *r = &v[i + x];
            bool need_start = o->reset != RESET_LATEST, need_end = o->reset != RESET_EARLIEST;
            if ((need_start && start[x] < 0) || (need_end && end[x] < 0))
                return kc_fail(c, KERR_LEADER_NOT_AVAILABLE, "no leader answered for the offsets of %s-%d", r->topic,
                               r->partition);
            bool clamped;
            r->offset = group_reset_target(o->reset, o->to_offset, start[x], end[x], &clamped);
            /* Kafka's warnings, in its words */
            if (clamped && o->to_offset > end[x])
                fprintf(stderr,
                        "WARN: New offset (%" PRId64 ") is higher than latest offset for topic partition %s-%d. "
                        "Value will be set to %" PRId64 "\n",
                        o->to_offset, r->topic, r->partition, r->offset);
            else if (clamped)
                fprintf(stderr,
                        "WARN: New offset (%" PRId64 ") is lower than earliest offset for topic partition %s-%d. "
                        "Value will be set to %" PRId64 "\n",
                        o->to_offset, r->topic, r->partition, r->offset);
        }
        i = j;
    }
    return 0;
}

/* OffsetCommit as an admin client: generation -1 and no member id,
 * which the coordinator accepts only while the group has no members. */
static int commit_plan(struct kc_client *c, struct coordinator *co, const struct plan_row *v, int n)
{
    struct arena a = ARENA_INIT;
    offset_commit_request_t req;
    offset_commit_request_init(&req);
    req.group_id = KSTR(co->key);
    req.generation_id_or_member_epoch = -1;
    req.member_id = KSTR_LIT("");
    req.group_instance_id = KSTR_NULL;
    int nt = 0;
    for (int i = 0; i < n; i++)
        nt += i == 0 || strcmp(v[i].topic, v[i - 1].topic) != 0;
    req.topics.a = offset_commit_request_offset_commit_request_topic_new_array(&a, nt);
    req.topics.n = nt;
    int t = -1;
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && strcmp(v[j].topic, v[i].topic) == 0)
            j++;
        offset_commit_request_offset_commit_request_topic_t *rt = &req.topics.a[++t];
        rt->name = KSTR(v[i].topic);
        rt->partitions.a = offset_commit_request_offset_commit_request_partition_new_array(&a, j - i);
        rt->partitions.n = j - i;
        for (int k = i; k < j; k++) {
            rt->partitions.a[k - i].partition_index = v[k].partition;
            rt->partitions.a[k - i].committed_offset = v[k].offset;
        }
        i = j;
    }
    struct kc_response r;
    int rc = coordinator_call(c, co, KAPI_OFFSET_COMMIT, &req, &r, commit_error);
    arena_free(&a);
    if (rc)
        return rc;
    const offset_commit_response_t *m = r.msg;
    for (int32_t ti = 0; ti < m->topics.n && rc == 0; ti++)
        for (int32_t pi = 0; pi < m->topics.a[ti].partitions.n && rc == 0; pi++) {
            const offset_commit_response_offset_commit_response_partition_t *p = &m->topics.a[ti].partitions.a[pi];
            int e = p->error_code;
            if (!e)
                continue;
            if (e == KERR_UNKNOWN_MEMBER_ID || e == KERR_ILLEGAL_GENERATION || e == KERR_REBALANCE_IN_PROGRESS)
                /* members joined between the state check and the commit */
                rc = kc_fail(c, e,
                             "Offsets of group '%s' were not reset: the group has active members now (offsets "
                             "can be reset only while it is inactive)",
                             co->key);
            else
                rc = kc_fail(c, e, "Committing the offset of %.*s-%d for group '%s' failed: %s",
                             m->topics.a[ti].name.len > 0 ? (int)m->topics.a[ti].name.len : 0, m->topics.a[ti].name.p,
                             p->partition_index, co->key, kc_default_message(e));
        }
    kc_response_free(&r);
    return rc;
}

static int do_reset(struct kc_client *c, const struct groups_opts *o)
{
    struct coordinator co = {o->group, COORD_KEY_GROUP, -1, ""};
    struct kc_response dr;
    const describe_groups_response_described_group_t *g;
    int rc = describe_group(c, &co, &dr, &g);
    if (rc)
        return rc;
    /* Kafka resets only a group without members: Empty, or Dead (one
     * that does not exist yet; the commit creates it). */
    if (!kstr_eqc(g->group_state, "Empty") && !kstr_eqc(g->group_state, "Dead")) {
        rc = kc_fail(c, KERR_NON_EMPTY_GROUP,
                     "Assignments can only be reset if the group '%s' is inactive, but the current state is %.*s.",
                     o->group, g->group_state.len > 0 ? (int)g->group_state.len : 0, g->group_state.p);
        kc_response_free(&dr);
        return rc;
    }
    kc_response_free(&dr);
    struct arena a = ARENA_INIT;
    struct plan_row *v = NULL;
    int n = 0;
    rc = plan_partitions(c, &co, o, &a, &v, &n);
    if (rc == 0)
        rc = plan_offsets(c, o, &a, v, n);
    if (rc == 0 && o->execute && n > 0)
        rc = commit_plan(c, &co, v, n);
    if (rc == 0) {
        if (!o->execute && !o->dry_run)
            fprintf(stderr, "WARN: No action will be performed as the --execute option is missing. "
                            "Add --execute to commit these offsets, or --dry-run to say this is a dry run.\n");
        static const char *const hdr[] = {"GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"};
        struct table t;
        table_init(&t, 4, hdr);
        for (int i = 0; i < n; i++) {
            const char *row[] = {o->group, v[i].topic, num(&a, v[i].partition), num(&a, v[i].offset)};
            table_row(&t, row);
        }
        table_print(&t);
        table_free(&t);
    }
    arena_free(&a);
    return rc;
}

static int parse_any(int argc, char **argv, void *o, struct global_opts *g, char *err, size_t n)
{
    return groups_parse_args(argc, argv, o, g, err, n);
}
static int run_any(struct kc_client *c, void *v)
{
    const struct groups_opts *o = v;
    switch (o->action) {
    case GROUPS_LIST: return do_list(c);
    case GROUPS_DESCRIBE: return do_describe(c, o);
    case GROUPS_DELETE: return do_delete(c, o);
    case GROUPS_RESET_OFFSETS: return do_reset(c, o);
    default: return 0;
    }
}
static void free_any(void *o) { groups_opts_free(o); }

int cmd_groups(int argc, char **argv, const struct global_opts *g)
{
    static const struct kc_command cmd = {"groups", groups_usage, parse_any, run_any, free_any};
    struct groups_opts o;
    return kc_command_main(&cmd, &o, argc, argv, g);
}
