/* samsactl: the operator's command-line tool. Dispatches to one command
 * per file (topics.c, produce.c, consume.c, groups.c, ...); options
 * before the command name are the global ones. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "autoconfig.h"
#include "cluster.h"
#include "consume.h"
#include "dumplog.h"
#include "groups.h"
#include "logdirs.h"
#include "opts.h"
#include "produce.h"
#include "quorum.h"
#include "configs.h"
#include "quotas.h"
#include "topics.h"
#include "transactions.h"
#include "acls.h"
#include "users.h"

struct command {
    const char *name;
    int (*run)(int argc, char **argv, const struct global_opts *g);
    const char *summary;
};

static const struct command commands[] = {
    {"topics", cmd_topics, "create, list, describe, alter and delete topics"},
    {"produce", cmd_produce, "send lines from stdin as records (console producer)"},
    {"consume", cmd_consume, "print the records of a topic (console consumer)"},
    {"groups", cmd_groups, "list, describe (lag), delete groups and reset their offsets"},
    {"dump-log", cmd_dump_log, "print segment and index files (like kafka-dump-log)"},
    {"cluster", cmd_cluster, "cluster-wide information (plugins: what each broker loaded)"},
    {"quorum", cmd_quorum, "the metadata quorum: leader, epoch, high watermark, replica lags"},
    {"users", cmd_users, "SCRAM credentials: users scram set, delete, describe"},
    {"acls", cmd_acls, "ACLs: list, create (add), delete (remove), as kafka-acls.sh"},
    {"configs", cmd_configs, "broker, broker-default and topic configs: describe, alter (kafka-configs.sh)"},
    {"quotas", cmd_quotas, "client quotas: describe, alter (producer_byte_rate, consumer_byte_rate, ...)"},
    {"log-dirs", cmd_log_dirs, "each broker's log dirs and their partitions' sizes (kafka-log-dirs.sh)"},
    {"transactions", cmd_transactions, "list, describe transactions; producers of a partition; abort one"},
    {NULL, NULL, NULL},
};

static void usage(FILE *f)
{
    fprintf(f, "Usage: samsactl [--bootstrap-server HOST:PORT[,HOST:PORT...]] COMMAND [options]\n"
               "\nCommands:\n");
    for (const struct command *c = commands; c->name; c++)
        fprintf(f, "  %-9s %s\n", c->name, c->summary);
    fprintf(f, "\nGlobal options (also accepted after COMMAND):\n"
               "  --bootstrap-server HOST:PORT[,...]  brokers to start from (default $SAMSA_BOOTSTRAP,\n"
               "                                      else " SAMSACTL_DEFAULT_BOOTSTRAP ")\n"
               "  --command-config FILE               Kafka client properties: security.protocol (PLAINTEXT,\n"
               "                                      SASL_PLAINTEXT, SSL, SASL_SSL), sasl.mechanism,\n"
               "                                      sasl.jaas.config (username=, password=); PEM files:\n"
               "                                      ssl.truststore.location, ssl.keystore.location,\n"
               "                                      ssl.key.password, ssl.endpoint.identification.algorithm\n"
               "  --sasl-mechanism NAME               PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (SASL_PLAINTEXT)\n"
               "  --sasl-username NAME, --sasl-password PASSWORD\n"
               "  --help                              this text; COMMAND --help for a command's\n"
               "  --version                           print the version\n"
               "\nExit status: 0 on success, 1 on a Kafka error, 2 on a usage error.\n");
}

int main(int argc, char **argv)
{
    /* A closed stdout pipe (consume | head) must end in a write error we
     * handle, not in a signal. */
    signal(SIGPIPE, SIG_IGN);

    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--version") == 0) {
            printf("samsactl %s\n", PACKAGE_VERSION);
            return EXIT_OK;
        }

    struct global_opts g = {NULL, NULL};
    static const struct opt_def none[] = {{NULL, false, 0}};
    /* Global options before the command name: stop at the first word. */
    int i = 1;
    while (i < argc && strncmp(argv[i], "--", 2) == 0) {
        int end = i + 1;
        const char *a = argv[i];
        bool has_value = strchr(a, '=') == NULL &&
                         (strcmp(a, "--bootstrap-server") == 0 || strcmp(a, "--command-config") == 0 ||
                          strcmp(a, "--sasl-mechanism") == 0 || strcmp(a, "--sasl-username") == 0 ||
                          strcmp(a, "--sasl-password") == 0);
        if (has_value)
            end = i + 2 <= argc ? i + 2 : argc;
        char err[256];
        struct opt_iter it;
        opt_iter_init(&it, end - i, argv + i, none, err, sizeof err);
        int id = opt_next(&it);
        if (id == OPT_HELP) {
            usage(stdout);
            return EXIT_OK;
        }
        if (id < 0 || !global_opt_apply(&g, id, it.arg)) {
            fprintf(stderr, "samsactl: %s (see samsactl --help)\n", id < 0 ? err : "bad option");
            return EXIT_USAGE;
        }
        i = end;
    }
    if (i >= argc) {
        fprintf(stderr, "samsactl: a command is required (see samsactl --help)\n");
        return EXIT_USAGE;
    }
    if (strcmp(argv[i], "help") == 0) {
        usage(stdout);
        return EXIT_OK;
    }
    for (const struct command *c = commands; c->name; c++)
        if (strcmp(argv[i], c->name) == 0)
            return c->run(argc - i - 1, argv + i + 1, &g);
    fprintf(stderr, "samsactl: unknown command '%s' (see samsactl --help)\n", argv[i]);
    return EXIT_USAGE;
}
