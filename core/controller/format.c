/* samsa format / random-uuid. See format.h. */
#include "controller/format.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log/fsutil.h"
#include "log/meta_properties.h"
#include "util/uuid.h"

#define EXIT_FAIL 2

bool samsa_format_command(int argc, char **argv)
{
    return argc > 1 && (!strcmp(argv[1], "format") || !strcmp(argv[1], "random-uuid"));
}

bool samsa_implicit_format_allowed(const struct samsa_config *cfg)
{
    return cfg->n_voters == 1 && cfg->voters[0].id == cfg->node_id && cfg->role_controller;
}

static int fail(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "samsa format: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    return EXIT_FAIL;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: samsa format [-c FILE] [--override key=value]... --cluster-id ID [--ignore-formatted]\n"
               "       samsa random-uuid\n"
               "\n"
               "format writes meta.properties (cluster.id, node.id, directory.id) into every\n"
               "log dir (log.dirs) and metadata.log.dir of the node the config describes.\n"
               "Format every node of a cluster with the same cluster id (samsa random-uuid\n"
               "makes one). An already formatted directory is an error unless\n"
               "--ignore-formatted is given.\n");
}

/* Formats dir (creating it) unless it already is; 0 or EXIT_FAIL. */
static int format_dir(const char *dir, int32_t node_id, const char *cluster_id, bool ignore, int *done)
{
    char err[512];
    if (fs_mkdirs(dir, NULL) != 0)
        return fail("cannot create '%s': %s", dir, strerror(errno));
    struct meta_properties mp;
    int rc = meta_properties_read(dir, &mp, err, sizeof err);
    if (rc < 0)
        return fail("%s%s", err, "");
    if (rc == 0) {
        if (!ignore)
            return fail("log directory %s is already formatted (use --ignore-formatted to skip it)%s", dir, "");
        if (strcmp(mp.cluster_id, cluster_id) || mp.node_id != node_id)
            return fail("log directory %s is already formatted for another cluster or node%s", dir, "");
        return 0;
    }
    if (meta_properties_init(&mp, node_id, cluster_id, err, sizeof err) < 0 ||
        meta_properties_write(dir, &mp, err, sizeof err) < 0)
        return fail("%s%s", err, "");
    printf("Formatted %s: cluster id %s, node id %d\n", dir, cluster_id, (int)node_id);
    (*done)++;
    return 0;
}

int samsa_format_main(int argc, char **argv)
{
    if (!strcmp(argv[1], "random-uuid")) {
        uint8_t id[UUID_LEN];
        char s[UUID_STR_LEN + 1];
        if (uuid_random(id) < 0)
            return fail("no randomness: %s%s", strerror(errno), "");
        uuid_to_string(id, s);
        printf("%s\n", s);
        return 0;
    }
    struct samsa_config *cfg = config_new();
    const char *cluster_id = NULL;
    bool ignore = false;
    char err[1024];
    int rc = 0;
    for (int i = 2; i < argc && rc == 0; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-c") || !strcmp(a, "--config")) {
            if (++i >= argc)
                rc = fail("%s%s", "option -c needs a file name", "");
            else if (config_load_file(cfg, argv[i], err, sizeof err) < 0)
                rc = fail("%s%s", err, "");
        } else if (!strcmp(a, "--override")) {
            const char *eq = ++i < argc ? strchr(argv[i], '=') : NULL;
            if (!eq) {
                rc = fail("%s%s", "option --override needs key=value", "");
            } else {
                char key[256];
                snprintf(key, sizeof key, "%.*s", (int)(eq - argv[i]), argv[i]);
                if (config_set(cfg, key, eq + 1, err, sizeof err) < 0)
                    rc = fail("%s%s", err, "");
            }
        } else if (!strcmp(a, "-t") || !strcmp(a, "--cluster-id")) {
            if (++i >= argc)
                rc = fail("%s%s", "option --cluster-id needs an id (samsa random-uuid makes one)", "");
            else
                cluster_id = argv[i];
        } else if (!strcmp(a, "-g") || !strcmp(a, "--ignore-formatted")) {
            ignore = true;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            config_free(cfg);
            return 0;
        } else {
            rc = fail("unknown argument '%s'%s", a, "");
        }
    }
    if (rc == 0 && !cluster_id)
        rc = fail("%s%s", "--cluster-id is required (every node of a cluster gets the same one; "
                          "samsa random-uuid makes one)", "");
    if (rc == 0 && config_validate(cfg, err, sizeof err) < 0)
        rc = fail("%s%s", err, "");
    int done = 0;
    for (size_t i = 0; rc == 0 && i < cfg->n_log_dirs; i++)
        rc = format_dir(cfg->log_dirs[i], cfg->node_id, cluster_id, ignore, &done);
    const char *md = config_get(cfg, "metadata.log.dir");
    bool listed = false;
    for (size_t i = 0; md && i < cfg->n_log_dirs; i++)
        listed |= !strcmp(cfg->log_dirs[i], md);
    if (rc == 0 && md && !listed)
        rc = format_dir(md, cfg->node_id, cluster_id, ignore, &done);
    config_free(cfg);
    return rc;
}
