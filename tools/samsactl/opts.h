/* Command-line parsing shared by samsactl's subcommands.
 *
 * Kafka's tools parse with joptsimple, which takes both "--name value" and
 * "--name=value"; samsactl accepts the same so that an operator's Kafka
 * command lines carry over. Every subcommand parses into a plain struct
 * first (unit-testable, no I/O) and only then talks to a broker. */
#ifndef SAMSACTL_OPTS_H
#define SAMSACTL_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/arena.h"

/* Exit statuses of every command. */
#define EXIT_OK 0
#define EXIT_KAFKA 1 /* a Kafka error (or a transport one, named as Kafka would) */
#define EXIT_USAGE 2 /* bad command line */

/* Results of the *_parse_args functions. */
#define ARGS_OK 0
#define ARGS_HELP 1   /* --help was given: print usage, exit 0 */
#define ARGS_ERROR -1 /* err holds one line saying what is wrong */

#define SAMSACTL_DEFAULT_BOOTSTRAP "127.0.0.1:9092"

/* Options every command takes. Strings point into argv (or the
 * environment) and live as long as the process. */
struct global_opts {
    const char *bootstrap;      /* NULL: $SAMSA_BOOTSTRAP, else the default */
    const char *command_config; /* Kafka client properties (SASL settings) */
};

/* Ids >= OPT_GLOBAL_BASE belong to the global options; commands number
 * their own below it. */
enum {
    OPT_GLOBAL_BASE = 1000,
    OPT_BOOTSTRAP = OPT_GLOBAL_BASE,
    OPT_COMMAND_CONFIG,
    OPT_SASL_MECHANISM,
    OPT_SASL_USERNAME,
    OPT_SASL_PASSWORD,
    OPT_HELP,
};

struct opt_def {
    const char *name; /* without the leading "--" */
    bool has_arg;
    int id;
};

/* The global options, to be included in each command's table by
 * opt_next (the table passed need not list them). */
extern const struct opt_def global_opt_defs[];

struct opt_iter {
    int argc;
    char **argv;
    int i;                     /* next argv index */
    const struct opt_def *defs; /* terminated by a NULL name */
    const char *name;          /* option just returned, for messages */
    const char *arg;           /* its value, when has_arg */
    char *err;
    size_t errlen;
};

void opt_iter_init(struct opt_iter *it, int argc, char **argv, const struct opt_def *defs, char *err,
                   size_t errlen);
/* Returns the id of the next option, 0 when argv is exhausted, or
 * ARGS_ERROR (err filled) for an unknown option, a missing value, a value
 * given to a flag, or a positional argument. */
int opt_next(struct opt_iter *it);

/* Applies a global option id; false when id is not one. */
bool global_opt_apply(struct global_opts *g, int id, const char *arg);
/* The bootstrap list to use: --bootstrap-server, $SAMSA_BOOTSTRAP, default. */
const char *global_bootstrap(const struct global_opts *g);

/* Strict number parsing (whole string, decimal, in range). */
bool parse_i32(const char *s, int32_t min, int32_t max, int32_t *out);
bool parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);
/* Kafka's boolean properties: "true" (trimmed, any case) is true,
 * anything else false. */
bool parse_bool_prop(const char *s);

/* Splits "key=value" at the first '='. *key is a NUL-terminated copy in
 * arena a; *value points into kv. False when there is no '=' or the key
 * is empty. */
bool split_kv(struct arena *a, const char *kv, char **key, const char **value);

/* Splits a comma list ("a,b,c") into *items, copies in arena a. False
 * when an item is empty ("a,,b", "", "a,"). */
bool split_csv(struct arena *a, const char *s, char ***items, int *n);

/* Copy of s in arena a with the escapes \t \n \r \\ turned into their
 * characters, so that "--property key.separator=\t" means a tab as the
 * brief and most users expect (Kafka itself takes the text literally; a
 * shell $'\t' works with both). */
char *unescape_dup(struct arena *a, const char *s);

#endif
