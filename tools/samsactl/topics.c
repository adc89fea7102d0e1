/* samsactl topics (see topics.h). Output and messages follow Kafka's
 * TopicCommand so that scripts written for kafka-topics.sh keep working. */
#include "topics.h"

#include <ctype.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "proto/kerr.h"
#include "util/uuid.h"

#define RESOURCE_TYPE_TOPIC 2
#define CONFIG_SOURCE_DEFAULT 5 /* DescribeConfigs ConfigSource.DEFAULT_CONFIG */
#define OP_SET 0
#define OP_DELETE 1
#define ADMIN_TIMEOUT_MS 30000

enum {
    OPT_TOPIC = 1,
    OPT_PARTITIONS,
    OPT_REPLICATION_FACTOR,
    OPT_CONFIG,
    OPT_DELETE_CONFIG,
    OPT_REPLICA_ASSIGNMENT,
    OPT_IF_NOT_EXISTS,
    OPT_IF_EXISTS,
    OPT_VALIDATE_ONLY,
    OPT_EXCLUDE_INTERNAL,
    OPT_CREATE,
    OPT_LIST,
    OPT_DESCRIBE,
    OPT_ALTER,
    OPT_DELETE,
};

static const struct opt_def topics_defs[] = {
    {"topic", true, OPT_TOPIC},
    {"partitions", true, OPT_PARTITIONS},
    {"replication-factor", true, OPT_REPLICATION_FACTOR},
    {"config", true, OPT_CONFIG},
    {"delete-config", true, OPT_DELETE_CONFIG},
    {"replica-assignment", true, OPT_REPLICA_ASSIGNMENT},
    {"if-not-exists", false, OPT_IF_NOT_EXISTS},
    {"if-exists", false, OPT_IF_EXISTS},
    {"validate-only", false, OPT_VALIDATE_ONLY},
    {"exclude-internal", false, OPT_EXCLUDE_INTERNAL},
    {"create", false, OPT_CREATE},
    {"list", false, OPT_LIST},
    {"describe", false, OPT_DESCRIBE},
    {"alter", false, OPT_ALTER},
    {"delete", false, OPT_DELETE},
    {NULL, false, 0},
};

void topics_usage(FILE *f)
{
    fputs("Usage: samsactl topics ACTION [options]\n"
          "\n"
          "  create   --topic T [--partitions N] [--replication-factor R] [--config K=V]...\n"
          "           [--replica-assignment B:B,B:B,...] [--if-not-exists] [--validate-only]\n"
          "  list     [--topic PATTERN] [--exclude-internal]\n"
          "  describe [--topic T|PATTERN] [--if-exists] [--exclude-internal]\n"
          "  alter    --topic T|PATTERN [--partitions N [--replica-assignment ...]]\n"
          "           [--config K=V]... [--delete-config K]... [--if-exists] [--validate-only]\n"
          "  delete   --topic T|PATTERN [--if-exists]\n"
          "\n"
          "ACTION may also be given as Kafka's option (--create, --list, ...).\n"
          "A --topic holding characters other than letters, digits, '.', '_' and '-' is a\n"
          "regular expression matched against whole topic names.\n"
          "  --bootstrap-server HOST:PORT[,...]  (default $SAMSA_BOOTSTRAP or " SAMSACTL_DEFAULT_BOOTSTRAP ")\n",
          f);
}

void topics_opts_free(struct topics_opts *o) { arena_free(&o->arena); }

static bool valid_name_char(char ch)
{
    return isalnum((unsigned char)ch) || ch == '.' || ch == '_' || ch == '-';
}

bool topic_is_pattern(const char *s)
{
    for (; *s; s++)
        if (!valid_name_char(*s))
            return true;
    return false;
}

/* Compiles sel as an anchored extended regex. */
static bool compile_pattern(const char *sel, regex_t *re)
{
    size_t n = strlen(sel);
    char *pat = xmalloc(n + 5);
    snprintf(pat, n + 5, "^(%s)$", sel);
    int rc = regcomp(re, pat, REG_EXTENDED | REG_NOSUB);
    free(pat);
    return rc == 0;
}

bool topic_matches(const char *sel, const char *name)
{
    if (!sel)
        return true;
    if (!topic_is_pattern(sel))
        return strcmp(sel, name) == 0;
    regex_t re;
    if (!compile_pattern(sel, &re))
        return false;
    bool ok = regexec(&re, name, 0, NULL, 0) == 0;
    regfree(&re);
    return ok;
}

int parse_replica_assignment(struct arena *a, const char *s, struct replica_list **out, int *n, char *err,
                             size_t errlen)
{
    int parts = 1;
    for (const char *p = s; *p; p++)
        parts += *p == ',';
    struct replica_list *v = arena_alloc(a, (size_t)parts * sizeof *v);
    const char *p = s;
    for (int i = 0; i < parts; i++) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        int cnt = 1;
        for (size_t j = 0; j < len; j++)
            cnt += p[j] == ':';
        v[i].ids = arena_alloc(a, (size_t)cnt * sizeof *v[i].ids);
        v[i].n = cnt;
        const char *q = p;
        for (int k = 0; k < cnt; k++) {
            const char *colon = memchr(q, ':', (size_t)(p + len - q));
            size_t bl = colon ? (size_t)(colon - q) : (size_t)(p + len - q);
            char tmp[16];
            /* Trim, as TopicCommand does. */
            while (bl > 0 && isspace((unsigned char)*q))
                q++, bl--;
            while (bl > 0 && isspace((unsigned char)q[bl - 1]))
                bl--;
            if (bl == 0 || bl >= sizeof tmp) {
                snprintf(err, errlen, "invalid --replica-assignment '%s' (want B:B,B:B,... with broker ids)", s);
                return -1;
            }
            memcpy(tmp, q, bl);
            tmp[bl] = '\0';
            if (!parse_i32(tmp, 0, INT32_MAX, &v[i].ids[k])) {
                snprintf(err, errlen, "invalid broker id '%s' in --replica-assignment", tmp);
                return -1;
            }
            for (int m = 0; m < k; m++)
                if (v[i].ids[m] == v[i].ids[k]) {
                    snprintf(err, errlen, "Partition replica lists may not contain duplicate entries: %d",
                             v[i].ids[k]);
                    return -1;
                }
            if (colon)
                q = colon + 1;
        }
        if (v[i].n != v[0].n) {
            snprintf(err, errlen, "Partition %d has different replication factor: %d replicas instead of %d", i,
                     v[i].n, v[0].n);
            return -1;
        }
        p = end ? end + 1 : p + len;
    }
    *out = v;
    *n = parts;
    return 0;
}

static char *trim_dup(struct arena *a, const char *s, size_t n)
{
    while (n > 0 && isspace((unsigned char)*s))
        s++, n--;
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    return arena_strndup(a, s, n);
}

static int add_config(struct topics_opts *o, const char *kv, char *err, size_t errlen)
{
    /* TopicCommand splits on "\s*=\s*" and wants exactly two parts. */
    const char *eq = strchr(kv, '=');
    if (!eq || strchr(eq + 1, '=')) {
        snprintf(err, errlen, "Invalid topic config '%s': all configs must be in the format \"key=val\"", kv);
        return -1;
    }
    char *key = trim_dup(&o->arena, kv, (size_t)(eq - kv));
    char *value = trim_dup(&o->arena, eq + 1, strlen(eq + 1));
    if (!*key || !*value) {
        snprintf(err, errlen, "Invalid topic config '%s': all configs must be in the format \"key=val\"", kv);
        return -1;
    }
    struct topic_config_kv *n = arena_alloc(&o->arena, (size_t)(o->nconfigs + 1) * sizeof *n);
    if (o->nconfigs)
        memcpy(n, o->configs, (size_t)o->nconfigs * sizeof *n);
    n[o->nconfigs].key = key;
    n[o->nconfigs].value = value;
    o->configs = n;
    o->nconfigs++;
    return 0;
}

static void add_delete_config(struct topics_opts *o, const char *k)
{
    const char **n = arena_alloc(&o->arena, (size_t)(o->ndelete_configs + 1) * sizeof *n);
    if (o->ndelete_configs)
        memcpy(n, o->delete_configs, (size_t)o->ndelete_configs * sizeof *n);
    n[o->ndelete_configs++] = trim_dup(&o->arena, k, strlen(k));
    o->delete_configs = n;
}

static enum topics_action action_word(const char *s)
{
    static const char *const words[] = {NULL, "create", "list", "describe", "alter", "delete"};
    for (int i = 1; i < 6; i++)
        if (strcmp(s, words[i]) == 0)
            return (enum topics_action)i;
    return TOPICS_NONE;
}

static const char *action_name(enum topics_action a)
{
    static const char *const words[] = {"", "create", "list", "describe", "alter", "delete"};
    return words[a];
}

static int set_action(struct topics_opts *o, enum topics_action a, char *err, size_t errlen)
{
    if (o->action != TOPICS_NONE && o->action != a) {
        snprintf(err, errlen, "only one of create, list, describe, alter and delete may be given");
        return -1;
    }
    o->action = a;
    return 0;
}

int topics_parse_args(int argc, char **argv, struct topics_opts *o, struct global_opts *g, char *err,
                      size_t errlen)
{
    memset(o, 0, sizeof *o);
    arena_init(&o->arena);
    o->partitions = -1;
    o->replication_factor = -1;
    if (argc > 0 && strncmp(argv[0], "--", 2) != 0) {
        o->action = action_word(argv[0]);
        if (o->action == TOPICS_NONE) {
            snprintf(err, errlen, "unknown action '%s' (want create, list, describe, alter or delete)", argv[0]);
            return ARGS_ERROR;
        }
        argc--, argv++;
    }
    const char *assignment = NULL;
    struct opt_iter it;
    opt_iter_init(&it, argc, argv, topics_defs, err, errlen);
    int id;
    while ((id = opt_next(&it)) > 0) {
        if (global_opt_apply(g, id, it.arg))
            continue;
        switch (id) {
        case OPT_HELP:
            return ARGS_HELP;
        case OPT_TOPIC:
            o->topic = it.arg;
            break;
        case OPT_PARTITIONS:
            if (!parse_i32(it.arg, INT32_MIN, INT32_MAX, &o->partitions) || o->partitions < 1) {
                snprintf(err, errlen, "The partitions must be greater than 0 (got '%s')", it.arg);
                return ARGS_ERROR;
            }
            break;
        case OPT_REPLICATION_FACTOR:
            if (!parse_i32(it.arg, INT32_MIN, INT32_MAX, &o->replication_factor) || o->replication_factor < 1 ||
                o->replication_factor > INT16_MAX) {
                snprintf(err, errlen, "The replication factor must be between 1 and 32767 inclusive (got '%s')",
                         it.arg);
                return ARGS_ERROR;
            }
            break;
        case OPT_CONFIG:
            if (add_config(o, it.arg, err, errlen) < 0)
                return ARGS_ERROR;
            break;
        case OPT_DELETE_CONFIG:
            add_delete_config(o, it.arg);
            break;
        case OPT_REPLICA_ASSIGNMENT:
            assignment = it.arg;
            break;
        case OPT_IF_NOT_EXISTS:
            o->if_not_exists = true;
            break;
        case OPT_IF_EXISTS:
            o->if_exists = true;
            break;
        case OPT_VALIDATE_ONLY:
            o->validate_only = true;
            break;
        case OPT_EXCLUDE_INTERNAL:
            o->exclude_internal = true;
            break;
        case OPT_CREATE:
        case OPT_LIST:
        case OPT_DESCRIBE:
        case OPT_ALTER:
        case OPT_DELETE:
            if (set_action(o, (enum topics_action)(id - OPT_CREATE + TOPICS_CREATE), err, errlen) < 0)
                return ARGS_ERROR;
            break;
        default:
            snprintf(err, errlen, "option '--%s' is not valid here", it.name);
            return ARGS_ERROR;
        }
    }
    if (id < 0)
        return ARGS_ERROR;
    if (o->action == TOPICS_NONE) {
        snprintf(err, errlen, "an action is required: create, list, describe, alter or delete");
        return ARGS_ERROR;
    }
    if (assignment && parse_replica_assignment(&o->arena, assignment, &o->assignment, &o->nassignment, err,
                                               errlen) < 0)
        return ARGS_ERROR;

    const char *act = action_name(o->action);
#define INVALID(cond, opt)                                                                  \
    do {                                                                                    \
        if (cond) {                                                                         \
            snprintf(err, errlen, "option '--%s' is not valid with topics %s", opt, act);   \
            return ARGS_ERROR;                                                              \
        }                                                                                   \
    } while (0)
    bool needs_topic = o->action == TOPICS_CREATE || o->action == TOPICS_ALTER || o->action == TOPICS_DELETE;
    if (needs_topic && (!o->topic || !*o->topic)) {
        snprintf(err, errlen, "--topic is required for topics %s", act);
        return ARGS_ERROR;
    }
    if (o->topic && topic_is_pattern(o->topic)) {
        regex_t re;
        if (o->action == TOPICS_CREATE) {
            snprintf(err, errlen, "invalid topic name '%s' (legal characters: a-z A-Z 0-9 . _ -)", o->topic);
            return ARGS_ERROR;
        }
        if (!compile_pattern(o->topic, &re)) {
            snprintf(err, errlen, "invalid --topic pattern '%s'", o->topic);
            return ARGS_ERROR;
        }
        regfree(&re);
    }
    switch (o->action) {
    case TOPICS_CREATE:
        INVALID(o->if_exists, "if-exists");
        INVALID(o->ndelete_configs > 0, "delete-config");
        INVALID(o->exclude_internal, "exclude-internal");
        if (o->assignment && (o->partitions > 0 || o->replication_factor > 0)) {
            snprintf(err, errlen, "--replica-assignment cannot be used with --partitions or --replication-factor");
            return ARGS_ERROR;
        }
        break;
    case TOPICS_LIST:
    case TOPICS_DESCRIBE:
    case TOPICS_DELETE:
        INVALID(o->partitions > 0, "partitions");
        INVALID(o->replication_factor > 0, "replication-factor");
        INVALID(o->nconfigs > 0, "config");
        INVALID(o->ndelete_configs > 0, "delete-config");
        INVALID(o->assignment != NULL, "replica-assignment");
        INVALID(o->if_not_exists, "if-not-exists");
        INVALID(o->validate_only, "validate-only");
        INVALID(o->action == TOPICS_LIST && o->if_exists, "if-exists");
        break;
    case TOPICS_ALTER:
        INVALID(o->replication_factor > 0, "replication-factor");
        INVALID(o->if_not_exists, "if-not-exists");
        if (o->partitions < 0 && o->nconfigs == 0 && o->ndelete_configs == 0) {
            snprintf(err, errlen, "topics alter needs --partitions, --config or --delete-config");
            return ARGS_ERROR;
        }
        if (o->assignment && o->partitions < 0) {
            snprintf(err, errlen, "--replica-assignment needs --partitions with topics alter");
            return ARGS_ERROR;
        }
        break;
    default:
        break;
    }
#undef INVALID
    return ARGS_OK;
}

/* ---- helpers ---- */

static bool is_internal(const kc_topic_t *t)
{
    return t->is_internal || kstr_eqc(t->name, "__consumer_offsets") || kstr_eqc(t->name, "__transaction_state");
}

struct selected {
    const kc_topic_t **t;
    char **names; /* NUL-terminated copies, in the arena */
    int n;
};

static int cmp_selected(const void *a, const void *b)
{
    const kc_topic_t *x = *(const kc_topic_t *const *)a, *y = *(const kc_topic_t *const *)b;
    int32_t n = x->name.len < y->name.len ? x->name.len : y->name.len;
    int c = n > 0 ? memcmp(x->name.p, y->name.p, (size_t)n) : 0;
    return c ? c : (x->name.len > y->name.len) - (x->name.len < y->name.len);
}

/* The topics --topic selects, sorted by name, from fresh metadata (the
 * pointers live until the next metadata refresh). A topic the broker says
 * does not exist is left out. */
static int select_topics(struct kc_client *c, const struct topics_opts *o, struct arena *a, struct selected *out)
{
    struct kc_conn *conn;
    int rc = kc_any_conn(c, &conn);
    if (rc)
        return rc;
    /* Metadata before v4 has no allow_auto_topic_creation, and a broker
     * may create the topics it is asked about: ask for all instead. */
    bool exact = o->topic && !topic_is_pattern(o->topic) && kc_version(conn, KAPI_METADATA) >= 4;
    if (exact) {
        const char *names[1] = {o->topic};
        rc = kc_metadata(c, names, 1, false);
    } else {
        rc = kc_metadata(c, NULL, -1, false);
    }
    if (rc)
        return rc;
    const metadata_response_t *m = kc_meta(c);
    out->t = arena_alloc(a, (size_t)(m->topics.n > 0 ? m->topics.n : 1) * sizeof *out->t);
    out->n = 0;
    regex_t re;
    bool pattern = o->topic && topic_is_pattern(o->topic) && compile_pattern(o->topic, &re);
    for (int32_t i = 0; i < m->topics.n; i++) {
        const kc_topic_t *t = &m->topics.a[i];
        if (t->error_code == KERR_UNKNOWN_TOPIC_OR_PARTITION || t->error_code == KERR_INVALID_TOPIC_EXCEPTION)
            continue;
        if (o->exclude_internal && is_internal(t))
            continue;
        char *name = kc_strdup(a, t->name);
        if (pattern ? regexec(&re, name, 0, NULL, 0) != 0 : (o->topic && strcmp(o->topic, name) != 0))
            continue;
        out->t[out->n++] = t;
    }
    if (pattern)
        regfree(&re);
    qsort(out->t, (size_t)out->n, sizeof *out->t, cmp_selected);
    out->names = arena_alloc(a, (size_t)(out->n > 0 ? out->n : 1) * sizeof *out->names);
    for (int i = 0; i < out->n; i++)
        out->names[i] = kc_strdup(a, out->t[i]->name);
    return 0;
}

static int not_found(struct kc_client *c, const char *topic)
{
    return kc_fail(c, KERR_UNKNOWN_TOPIC_OR_PARTITION, "Topic '%s' does not exist as expected", topic);
}

/* Sends a request to the controller; retries (with fresh metadata) while
 * the answer is NOT_CONTROLLER or the connection fails, as the admin
 * client does. first_error(msg) gives the answer's first per-topic code. */
static int controller_call(struct kc_client *c, int16_t key, const void *req, struct kc_response *out,
                           int (*first_error)(const void *msg))
{
    for (int attempt = 0;; attempt++) {
        struct kc_conn *conn;
        int rc = kc_controller_conn(c, &conn);
        if (rc == 0)
            rc = kc_call(c, conn, key, req, out);
        if (rc == 0 && first_error(out->msg) != KERR_NOT_CONTROLLER)
            return 0;
        if (rc == 0) {
            kc_response_free(out);
            rc = kc_fail(c, KERR_NOT_CONTROLLER, "no controller answered");
        }
        if (!(rc == KERR_NOT_CONTROLLER || rc == KERR_NETWORK_EXCEPTION || rc == KERR_REQUEST_TIMED_OUT) ||
            attempt >= 4)
            return rc;
        if (!kc_sleep_ms(100 << attempt))
            return kc_fail(c, KC_INTERRUPTED, "interrupted");
        rc = kc_metadata(c, NULL, 0, false);
        if (rc)
            return rc;
    }
}

static const char *msg_or_default(struct arena *a, kstr_t msg, int code)
{
    if (msg.len > 0)
        return kc_strdup(a, msg);
    return kc_default_message(code);
}

/* ---- create ---- */

static int create_first_error(const void *msg)
{
    const create_topics_response_t *m = msg;
    return m->topics.n > 0 ? m->topics.a[0].error_code : 0;
}

static int do_create(struct kc_client *c, const struct topics_opts *o)
{
    if (strchr(o->topic, '.') || strchr(o->topic, '_'))
        printf("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could "
               "collide. To avoid issues it is best to use either, but not both.\n");
    struct arena a = ARENA_INIT;
    create_topics_request_t req;
    create_topics_request_init(&req);
    req.timeout_ms = ADMIN_TIMEOUT_MS;
    req.validate_only = o->validate_only;
    req.topics.a = create_topics_request_creatable_topic_new_array(&a, 1);
    req.topics.n = 1;
    create_topics_request_creatable_topic_t *t = &req.topics.a[0];
    t->name = KSTR(o->topic);
    /* -1 asks for the broker's defaults (CreateTopics v4+). */
    t->num_partitions = o->assignment ? -1 : o->partitions;
    t->replication_factor = (int16_t)(o->assignment ? -1 : o->replication_factor);
    t->assignments.a = create_topics_request_creatable_replica_assignment_new_array(&a, o->nassignment);
    t->assignments.n = o->nassignment;
    for (int i = 0; i < o->nassignment; i++) {
        t->assignments.a[i].partition_index = i;
        t->assignments.a[i].broker_ids.a = o->assignment[i].ids;
        t->assignments.a[i].broker_ids.n = o->assignment[i].n;
    }
    t->configs.a = create_topics_request_creatable_topic_config_new_array(&a, o->nconfigs);
    t->configs.n = o->nconfigs;
    for (int i = 0; i < o->nconfigs; i++) {
        t->configs.a[i].name = KSTR(o->configs[i].key);
        t->configs.a[i].value = KSTR(o->configs[i].value);
    }
    struct kc_response resp;
    int rc = controller_call(c, KAPI_CREATE_TOPICS, &req, &resp, create_first_error);
    if (rc) {
        arena_free(&a);
        return rc;
    }
    const create_topics_response_t *m = resp.msg;
    const create_topics_response_creatable_topic_result_t *r = NULL;
    for (int32_t i = 0; i < m->topics.n; i++)
        if (kstr_eqc(m->topics.a[i].name, o->topic))
            r = &m->topics.a[i];
    if (!r) {
        rc = kc_fail(c, KERR_UNKNOWN_SERVER_ERROR, "CreateTopics answer does not mention topic '%s'", o->topic);
    } else if (r->error_code == KERR_TOPIC_ALREADY_EXISTS && o->if_not_exists) {
        rc = 0;
    } else if (r->error_code) {
        if (r->error_message.len > 0)
            rc = kc_fail(c, r->error_code, "%.*s", (int)r->error_message.len, r->error_message.p);
        else if (r->error_code == KERR_TOPIC_ALREADY_EXISTS)
            rc = kc_fail(c, r->error_code, "Topic '%s' already exists.", o->topic);
        else
            rc = kc_fail(c, r->error_code, "%s", msg_or_default(&a, r->error_message, r->error_code));
    } else if (o->validate_only) {
        printf("Validated topic %s.\n", o->topic);
    } else {
        printf("Created topic %s.\n", o->topic);
    }
    kc_response_free(&resp);
    arena_free(&a);
    return rc;
}

/* ---- list ---- */

static int do_list(struct kc_client *c, const struct topics_opts *o)
{
    struct arena a = ARENA_INIT;
    struct selected s;
    int rc = select_topics(c, o, &a, &s);
    if (rc == 0)
        for (int i = 0; i < s.n; i++)
            printf("%s\n", s.names[i]);
    arena_free(&a);
    return rc;
}

/* ---- describe ---- */

static void print_ids(const int32_t *ids, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        printf("%s%d", i ? "," : "", ids[i]);
}

static int cmp_partition(const void *a, const void *b)
{
    const kc_partition_t *x = *(const kc_partition_t *const *)a, *y = *(const kc_partition_t *const *)b;
    return (x->partition_index > y->partition_index) - (x->partition_index < y->partition_index);
}

/* Configs of the selected topics, or a NULL msg when the broker does not
 * offer DescribeConfigs (the Configs column is then left out). */
static int describe_configs(struct kc_client *c, const struct selected *s, struct kc_response *out)
{
    memset(out, 0, sizeof *out);
    struct kc_conn *conn;
    int rc = kc_any_conn(c, &conn);
    if (rc || kc_version(conn, KAPI_DESCRIBE_CONFIGS) < 0 || s->n == 0)
        return rc;
    struct arena a = ARENA_INIT;
    describe_configs_request_t req;
    describe_configs_request_init(&req);
    req.resources.a = describe_configs_request_describe_configs_resource_new_array(&a, s->n);
    req.resources.n = s->n;
    for (int i = 0; i < s->n; i++) {
        req.resources.a[i].resource_type = RESOURCE_TYPE_TOPIC;
        req.resources.a[i].resource_name = KSTR(s->names[i]);
        req.resources.a[i].configuration_keys.a = NULL;
        req.resources.a[i].configuration_keys.n = -1; /* all */
    }
    rc = kc_call(c, conn, KAPI_DESCRIBE_CONFIGS, &req, out);
    arena_free(&a);
    return rc;
}

static int print_topic(struct kc_client *c, const kc_topic_t *t, const char *name, const struct kc_response *cfg)
{
    if (t->error_code)
        return kc_fail(c, t->error_code, "Topic '%s': %s", name, kc_default_message(t->error_code));
    const describe_configs_response_describe_configs_result_t *res = NULL;
    if (cfg->msg) {
        const describe_configs_response_t *m = cfg->msg;
        for (int32_t i = 0; i < m->results.n; i++)
            if (kstr_eqc(m->results.a[i].resource_name, name))
                res = &m->results.a[i];
        if (!res)
            return kc_fail(c, KERR_UNKNOWN_SERVER_ERROR, "DescribeConfigs answer does not mention topic '%s'", name);
        if (res->error_code) {
            if (res->error_message.len > 0)
                return kc_fail(c, res->error_code, "%.*s", (int)res->error_message.len, res->error_message.p);
            return kc_fail(c, res->error_code, "Topic '%s': %s", name, kc_default_message(res->error_code));
        }
    }
    int32_t nparts = t->partitions.n > 0 ? t->partitions.n : 0;
    const kc_partition_t **parts = xmalloc((size_t)(nparts > 0 ? nparts : 1) * sizeof *parts);
    for (int32_t i = 0; i < nparts; i++)
        parts[i] = &t->partitions.a[i];
    qsort(parts, (size_t)nparts, sizeof *parts, cmp_partition);

    printf("Topic: %s", name);
    if (!kuuid_is_zero(&t->topic_id)) {
        char id[UUID_STR_LEN + 1];
        uuid_to_string(t->topic_id.b, id);
        printf("\tTopicId: %s", id);
    }
    printf("\tPartitionCount: %d", nparts);
    printf("\tReplicationFactor: %d", nparts > 0 && parts[0]->replica_nodes.n > 0 ? parts[0]->replica_nodes.n : 0);
    if (res) {
        printf("\tConfigs: ");
        int k = 0;
        for (int32_t i = 0; i < res->configs.n; i++) {
            const describe_configs_response_describe_configs_resource_result_t *e = &res->configs.a[i];
            /* ConfigEntry.isDefault(): source DEFAULT_CONFIG (v1+), the
             * is_default flag in v0. */
            bool dflt = cfg->version == 0 ? e->is_default : e->config_source == CONFIG_SOURCE_DEFAULT;
            if (dflt)
                continue;
            printf("%s%.*s=", k++ ? "," : "", e->name.len > 0 ? (int)e->name.len : 0, e->name.p);
            if (e->value.len < 0)
                printf("null");
            else
                printf("%.*s", (int)e->value.len, e->value.p);
        }
    }
    printf("\n");
    for (int32_t i = 0; i < nparts; i++) {
        const kc_partition_t *p = parts[i];
        printf("\tTopic: %s\tPartition: %d\tLeader: ", name, p->partition_index);
        if (p->leader_id >= 0)
            printf("%d", p->leader_id);
        else
            printf("none");
        printf("\tReplicas: ");
        print_ids(p->replica_nodes.a, p->replica_nodes.n);
        printf("\tIsr: ");
        print_ids(p->isr_nodes.a, p->isr_nodes.n);
        printf("\n");
    }
    free(parts);
    return 0;
}

static int do_describe(struct kc_client *c, const struct topics_opts *o)
{
    struct arena a = ARENA_INIT;
    struct selected s;
    int rc = select_topics(c, o, &a, &s);
    if (rc == 0 && s.n == 0 && o->topic && !o->if_exists)
        rc = not_found(c, o->topic);
    struct kc_response cfg = {0};
    if (rc == 0)
        rc = describe_configs(c, &s, &cfg);
    for (int i = 0; rc == 0 && i < s.n; i++)
        rc = print_topic(c, s.t[i], s.names[i], &cfg);
    if (cfg.msg)
        kc_response_free(&cfg);
    arena_free(&a);
    return rc;
}

/* ---- alter ---- */

static int partitions_first_error(const void *msg)
{
    const create_partitions_response_t *m = msg;
    return m->results.n > 0 ? m->results.a[0].error_code : 0;
}

static int alter_partitions(struct kc_client *c, const struct topics_opts *o, const struct selected *s,
                            const int32_t *current)
{
    struct arena a = ARENA_INIT;
    create_partitions_request_t req;
    create_partitions_request_init(&req);
    req.timeout_ms = ADMIN_TIMEOUT_MS;
    req.validate_only = o->validate_only;
    req.topics.a = create_partitions_request_create_partitions_topic_new_array(&a, s->n);
    req.topics.n = s->n;
    for (int i = 0; i < s->n; i++) {
        create_partitions_request_create_partitions_topic_t *t = &req.topics.a[i];
        t->name = KSTR(s->names[i]);
        t->count = o->partitions;
        t->assignments.a = NULL;
        t->assignments.n = -1;
        if (o->assignment) {
            /* As TopicCommand: the assignment lists every partition; the
             * entries past the current count describe the new ones. */
            int first = current[i] < o->nassignment ? current[i] : o->nassignment;
            int n = o->nassignment - first;
            t->assignments.a = create_partitions_request_create_partitions_assignment_new_array(&a, n);
            t->assignments.n = n;
            for (int k = 0; k < n; k++) {
                t->assignments.a[k].broker_ids.a = o->assignment[first + k].ids;
                t->assignments.a[k].broker_ids.n = o->assignment[first + k].n;
            }
        }
    }
    struct kc_response resp;
    int rc = controller_call(c, KAPI_CREATE_PARTITIONS, &req, &resp, partitions_first_error);
    arena_free(&a);
    if (rc)
        return rc;
    const create_partitions_response_t *m = resp.msg;
    for (int32_t i = 0; i < m->results.n && rc == 0; i++) {
        const create_partitions_response_create_partitions_topic_result_t *r = &m->results.a[i];
        if (!r->error_code)
            continue;
        if (r->error_message.len > 0)
            rc = kc_fail(c, r->error_code, "%.*s", (int)r->error_message.len, r->error_message.p);
        else
            rc = kc_fail(c, r->error_code, "Topic '%.*s': %s", r->name.len > 0 ? (int)r->name.len : 0, r->name.p,
                         kc_default_message(r->error_code));
    }
    kc_response_free(&resp);
    return rc;
}

static int alter_configs(struct kc_client *c, const struct topics_opts *o, const struct selected *s)
{
    struct kc_conn *conn;
    int rc = kc_any_conn(c, &conn);
    if (rc)
        return rc;
    if (kc_version(conn, KAPI_INCREMENTAL_ALTER_CONFIGS) < 0)
        return kc_fail(c, KERR_UNSUPPORTED_VERSION, "broker %s:%d does not support IncrementalAlterConfigs",
                       conn->host, conn->port);
    struct arena a = ARENA_INIT;
    incremental_alter_configs_request_t req;
    incremental_alter_configs_request_init(&req);
    req.validate_only = o->validate_only;
    req.resources.a = incremental_alter_configs_request_alter_configs_resource_new_array(&a, s->n);
    req.resources.n = s->n;
    int nops = o->nconfigs + o->ndelete_configs;
    for (int i = 0; i < s->n; i++) {
        incremental_alter_configs_request_alter_configs_resource_t *r = &req.resources.a[i];
        r->resource_type = RESOURCE_TYPE_TOPIC;
        r->resource_name = KSTR(s->names[i]);
        r->configs.a = incremental_alter_configs_request_alterable_config_new_array(&a, nops);
        r->configs.n = nops;
        for (int k = 0; k < o->nconfigs; k++) {
            r->configs.a[k].name = KSTR(o->configs[k].key);
            r->configs.a[k].config_operation = OP_SET;
            r->configs.a[k].value = KSTR(o->configs[k].value);
        }
        for (int k = 0; k < o->ndelete_configs; k++) {
            r->configs.a[o->nconfigs + k].name = KSTR(o->delete_configs[k]);
            r->configs.a[o->nconfigs + k].config_operation = OP_DELETE;
            r->configs.a[o->nconfigs + k].value = KSTR_NULL;
        }
    }
    struct kc_response resp;
    rc = kc_call(c, conn, KAPI_INCREMENTAL_ALTER_CONFIGS, &req, &resp);
    arena_free(&a);
    if (rc)
        return rc;
    const incremental_alter_configs_response_t *m = resp.msg;
    for (int32_t i = 0; i < m->responses.n && rc == 0; i++) {
        const incremental_alter_configs_response_alter_configs_resource_response_t *r = &m->responses.a[i];
        if (!r->error_code)
            continue;
        if (r->error_message.len > 0)
            rc = kc_fail(c, r->error_code, "%.*s", (int)r->error_message.len, r->error_message.p);
        else
            rc = kc_fail(c, r->error_code, "Topic '%.*s': %s", r->resource_name.len > 0 ? (int)r->resource_name.len : 0,
                         r->resource_name.p, kc_default_message(r->error_code));
    }
    kc_response_free(&resp);
    return rc;
}

static int do_alter(struct kc_client *c, const struct topics_opts *o)
{
    struct arena a = ARENA_INIT;
    struct selected s;
    int rc = select_topics(c, o, &a, &s);
    if (rc == 0 && s.n == 0) {
        if (!o->if_exists)
            rc = not_found(c, o->topic);
        arena_free(&a);
        return rc;
    }
    int32_t *current = NULL;
    if (rc == 0) {
        /* Copied out: the metadata cache is refreshed by retries. */
        current = arena_alloc(&a, (size_t)s.n * sizeof *current);
        for (int i = 0; i < s.n; i++)
            current[i] = s.t[i]->partitions.n;
    }
    if (rc == 0 && o->partitions > 0)
        rc = alter_partitions(c, o, &s, current);
    if (rc == 0 && (o->nconfigs > 0 || o->ndelete_configs > 0))
        rc = alter_configs(c, o, &s);
    arena_free(&a);
    return rc;
}

/* ---- delete ---- */

static int delete_first_error(const void *msg)
{
    const delete_topics_response_t *m = msg;
    return m->responses.n > 0 ? m->responses.a[0].error_code : 0;
}

static int do_delete(struct kc_client *c, const struct topics_opts *o)
{
    struct arena a = ARENA_INIT;
    struct selected s;
    int rc = select_topics(c, o, &a, &s);
    if (rc == 0 && s.n == 0) {
        if (!o->if_exists)
            rc = not_found(c, o->topic);
        arena_free(&a);
        return rc;
    }
    if (rc) {
        arena_free(&a);
        return rc;
    }
    delete_topics_request_t req;
    delete_topics_request_init(&req);
    req.timeout_ms = ADMIN_TIMEOUT_MS;
    /* v0-5 name topics in TopicNames, v6 in Topics; fill both. */
    req.topic_names.a = arena_alloc(&a, (size_t)s.n * sizeof *req.topic_names.a);
    req.topic_names.n = s.n;
    req.topics.a = delete_topics_request_delete_topic_state_new_array(&a, s.n);
    req.topics.n = s.n;
    for (int i = 0; i < s.n; i++) {
        req.topic_names.a[i] = KSTR(s.names[i]);
        req.topics.a[i].name = KSTR(s.names[i]);
    }
    struct kc_response resp;
    rc = controller_call(c, KAPI_DELETE_TOPICS, &req, &resp, delete_first_error);
    if (rc == 0) {
        const delete_topics_response_t *m = resp.msg;
        for (int32_t i = 0; i < m->responses.n && rc == 0; i++) {
            const delete_topics_response_deletable_topic_result_t *r = &m->responses.a[i];
            if (!r->error_code || (r->error_code == KERR_UNKNOWN_TOPIC_OR_PARTITION && o->if_exists))
                continue;
            if (r->error_message.len > 0)
                rc = kc_fail(c, r->error_code, "%.*s", (int)r->error_message.len, r->error_message.p);
            else
                rc = kc_fail(c, r->error_code, "Topic '%.*s': %s", r->name.len > 0 ? (int)r->name.len : 0,
                             r->name.p, kc_default_message(r->error_code));
        }
        kc_response_free(&resp);
    }
    arena_free(&a);
    return rc;
}

static int parse_any(int argc, char **argv, void *o, struct global_opts *g, char *err, size_t n)
{
    return topics_parse_args(argc, argv, o, g, err, n);
}
static int run_any(struct kc_client *c, void *v)
{
    const struct topics_opts *o = v;
    switch (o->action) {
    case TOPICS_CREATE: return do_create(c, o);
    case TOPICS_LIST: return do_list(c, o);
    case TOPICS_DESCRIBE: return do_describe(c, o);
    case TOPICS_ALTER: return do_alter(c, o);
    case TOPICS_DELETE: return do_delete(c, o);
    default: return 0;
    }
}
static void free_any(void *o) { topics_opts_free(o); }

int cmd_topics(int argc, char **argv, const struct global_opts *g)
{
    static const struct kc_command cmd = {"topics", topics_usage, parse_any, run_any, free_any};
    struct topics_opts o;
    return kc_command_main(&cmd, &o, argc, argv, g);
}
