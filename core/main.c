/* samsa: start-up, roles, signals, shutdown.
 *
 * With no arguments: one node, broker and controller, on 127.0.0.1:9092,
 * data in ./data (formatted on first start). `samsa -c FILE` reads a
 * properties file with Kafka's config names. Every startup error is one
 * line on stderr and exit status 2. */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "autoconfig.h"

#include "api/dispatch.h"
#include "api/fetch_session.h"
#include "api/prometheus.h"
#include "api/quota_mgr.h"
#include "auth/authz.h"
#include "auth/sasl.h"
#include "broker.h"
#include "config.h"
#include "controller/controller.h"
#include "controller/format.h"
#include "coord/coord.h"
#include "coord/txn_coord.h"
#include "log/logmgr.h"
#include "log/meta_properties.h"
#include "net/net.h"
#include "net/peer_security.h"
#include "net/tls.h"
#include "plugin/registry.h"
#include "replica/env.h"
#include "replica/fetcher.h"
#include "replica/partition.h"
#include "log/index.h"
#include "util/fdcache.h"
#include "util/loopwatch.h"
#include "util/slog.h"

#define EXIT_STARTUP 2
/* How long start-up waits for partition logs to recover before serving. */
#define STARTUP_RECOVERY_WAIT_MS 5000

static void usage(FILE *f)
{
    fprintf(f,
            "usage: samsa [-c FILE] [--override key=value]...\n"
            "       samsa [-c FILE] [--override key=value]... --list-plugins\n"
            "       samsa format [-c FILE] [--override key=value]... --cluster-id ID\n"
            "       samsa random-uuid\n"
            "       samsa --version | --help\n"
            "\n"
            "With no arguments samsa runs one node (broker and controller) on\n"
            "127.0.0.1:9092 with its data in ./data. -c reads a properties file\n"
            "using Kafka's config names (see etc/samsa.conf).\n"
            "--list-plugins loads the plugins the config asks for (plugins=,\n"
            "plugin.dir=; by default every module of this build), prints name,\n"
            "version, ABI and capabilities, and exits.\n");
}

/* The config being built at startup: a root LeakSanitizer can see, so an
 * exit through die() (which may print text held by the config) is not
 * reported as a leak. */
static struct samsa_config *volatile startup_cfg;

static void die(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "samsa: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    exit(EXIT_STARTUP);
}

/* mkdir -p; returns 0 or -1 with errno set. */
static int mkdirs(const char *path)
{
    char tmp[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(tmp, path, n + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    }
    if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
        return -1;
    struct stat st;
    if (stat(tmp, &st) < 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    if (access(tmp, R_OK | W_OK | X_OK) < 0)
        return -1;
    return 0;
}

/* Creates the log dirs, formats unformatted ones (implicit `samsa format`
 * of a single-node start) and checks that all agree. */
static void prepare_log_dirs(struct samsa_config *cfg, struct broker *b)
{
    char err[512];
    if (cfg->n_log_dirs == 0)
        die("%s%s", "config 'log.dirs': no log directory configured", "");
    char cluster_id[META_PROPERTIES_CLUSTER_ID_MAX] = "";
    bool *missing = calloc(cfg->n_log_dirs, sizeof(bool));
    for (size_t i = 0; i < cfg->n_log_dirs; i++) {
        const char *dir = cfg->log_dirs[i];
        if (mkdirs(dir) < 0) {
            snprintf(err, sizeof err, "config 'log.dirs': directory '%s' is not usable: %s", dir, strerror(errno));
            die("%s%s", err, "");
        }
        struct meta_properties mp;
        int rc = meta_properties_read(dir, &mp, err, sizeof err);
        if (rc < 0)
            die("%s%s", err, "");
        if (rc == 1) {
            missing[i] = true;
            continue;
        }
        if (meta_properties_check(&mp, dir, cfg->node_id, cluster_id[0] ? cluster_id : NULL, err, sizeof err) < 0)
            die("%s%s", err, "");
        snprintf(cluster_id, sizeof cluster_id, "%s", mp.cluster_id);
    }
    for (size_t i = 0; i < cfg->n_log_dirs; i++) {
        if (!missing[i])
            continue;
        if (!samsa_implicit_format_allowed(cfg)) {
            snprintf(err, sizeof err,
                     "log directory %s is not formatted: run `samsa format --cluster-id ID` with this node's "
                     "config first (the same ID on every node of the cluster)", cfg->log_dirs[i]);
            die("%s%s", err, "");
        }
        struct meta_properties mp;
        if (meta_properties_init(&mp, cfg->node_id, cluster_id[0] ? cluster_id : NULL, err, sizeof err) < 0 ||
            meta_properties_write(cfg->log_dirs[i], &mp, err, sizeof err) < 0)
            die("%s%s", err, "");
        if (!cluster_id[0])
            slog_info("formatted %s: cluster id %s, node id %d", cfg->log_dirs[i], mp.cluster_id, cfg->node_id);
        snprintf(cluster_id, sizeof cluster_id, "%s", mp.cluster_id);
    }
    free(missing);
    /* Cluster ids are 22 characters (a base64url UUID, as samsa format
     * and kafka-storage.sh random-uuid make them); b keeps up to 31. */
    snprintf(b->cluster_id, sizeof b->cluster_id, "%.*s", (int)sizeof b->cluster_id - 1, cluster_id);
}

/* A connection's state in the layers above net goes with it. */
static void conn_gone(struct conn *c)
{
    quota_conn_free(c);
    sasl_conn_free(c);
}

/* SIGHUP: plugins re-read their files (the lua module its scripts);
 * each keeps its old version when the new one fails its check. */
static void reload_plugins(void *arg) { plugin_registry_reload(arg); }

/* SIGTERM: the broker side's controlled shutdown first (its leaderships
 * move while clients are still served); the main loop stops when the
 * controller approved it (or it timed out). */
static void stop_serving(void *arg) { net_stop(((struct broker *)arg)->net); }

/* Set when the node stops because its broker could not register: main
 * then exits non-zero after the clean shutdown. */
static atomic_bool registration_failed;

static void stop_unregistered(void *arg)
{
    struct broker *b = arg;
    atomic_store(&registration_failed, true);
    net_stop(b->net);
}

static void begin_controlled_shutdown(void *arg)
{
    struct broker *b = arg;
    controller_begin_shutdown(b->controller, stop_serving, b);
}

/* The controller's hooks (struct controller_env; arg: the broker). */
static void open_broker_listeners(void *arg)
{
    struct broker *b = arg;
    if (b->net)
        net_broker_ready(b->net);
}

/* A plugin's key changed at run time (plugin.lua.authorizer.script,
 * through AlterConfigs): the plugin applies the new value, checking it
 * first; when that fails the old value stays in force in the plugin. */
static void follow_config(void *arg, const struct samsa_config *old, const struct samsa_config *now)
{
    struct broker *b = arg;
    if (tls_any())
        tls_follow_config(now);
    for (size_t i = 0; i < config_defs_count; i++) {
        const char *k = config_defs[i].name;
        if (strncmp(k, "plugin.", 7) != 0)
            continue;
        const char *was = config_get(old, k), *v = config_get(now, k);
        if (was == v || (was && v && strcmp(was, v) == 0))
            continue;
        char err[512];
        if (plugin_registry_reconfigure(b->plugins, k, v, false, err, sizeof err) != 0)
            slog_warn("config %s=%s not applied: %s (the old value stays in force)", k, v ? v : "(unset)", err);
        else
            slog_info("config %s=%s applied", k, v ? v : "(unset)");
    }
}

/* KIP-966: the broker epoch rides in the log dirs' clean-shutdown
 * markers (log/logmgr.h). */
static int64_t previous_broker_epoch(void *arg) { return logmgr_previous_broker_epoch(((struct broker *)arg)->logs); }
static void broker_epoch_final(void *arg, int64_t epoch) { logmgr_set_broker_epoch(((struct broker *)arg)->logs, epoch); }

/* The hosted partitions and the client quotas follow every published
 * image. */
static int follow_image(void *arg, const struct mimage *img, char *err, size_t errlen)
{
    struct broker *b = arg;
    quota_mgr_follow(b->quotas, img);
    return b->partitions ? preg_sync(b->partitions, img, err, errlen) : 0;
}

int main(int argc, char **argv)
{
    if (samsa_format_command(argc, argv))
        return samsa_format_main(argc, argv);
    const char *conf_path = NULL;
    bool list_plugins = false;
    struct samsa_config *cfg = config_new();
    startup_cfg = cfg;
    char err[1024];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-c") || !strcmp(a, "--config")) {
            if (++i >= argc)
                die("%s%s", "option -c needs a file name", "");
            conf_path = argv[i];
            if (config_load_file(cfg, conf_path, err, sizeof err) < 0)
                die("%s%s", err, "");
        } else if (!strcmp(a, "--override")) {
            if (++i >= argc)
                die("%s%s", "option --override needs key=value", "");
            const char *eq = strchr(argv[i], '=');
            if (!eq)
                die("--override '%s': expected key=value%s", argv[i], "");
            /* a copy: argv stays intact, as ps and pkill show it */
            char key[256];
            snprintf(key, sizeof key, "%.*s", (int)(eq - argv[i]), argv[i]);
            if (config_set(cfg, key, eq + 1, err, sizeof err) < 0)
                die("%s%s", err, "");
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--list-plugins")) {
            list_plugins = true;
        } else if (!strcmp(a, "--version")) {
            printf("samsa %s\n", PACKAGE_VERSION);
            return 0;
        } else {
            die("unknown argument '%s' (see samsa --help)%s", a, "");
        }
    }
    if (config_validate(cfg, err, sizeof err) < 0)
        die("%s%s", err, "");
    slog_set_level((enum slog_level)cfg->log_level);
    loopwatch_set_threshold_ms(cfg->loop_stall_warn_ms);
    /* Descriptors are a budget (util/fdcache.h): take all the hard limit
     * allows; segment files share half of it through the fd cache. */
    fdc_raise_nofile_limit();
    /* Index mappings are a budget too (log/index.h). */
    slog_info("index files: up to %zu mapped at once (half of vm.max_map_count)", idxf_map_budget());

    /* Plugins before anything else is touched: a configured plugin that
     * cannot be loaded stops startup with its one refusal line. */
    struct plugin_registry *plugins = plugin_registry_new(cfg);
    if (plugin_registry_load_config(plugins, cfg, err, sizeof err) < 0)
        die("%s%s", err, "");
    if (list_plugins) {
        plugin_registry_print(plugins, stdout);
        plugin_registry_free(plugins);
        config_free(cfg);
        return 0;
    }
    /* The group coordinator compresses its writes with a codec plugin. */
    if (cfg->offsets_topic_compression_codec != 0 && !plugin_codec(plugins, cfg->offsets_topic_compression_codec))
        die("config 'offsets.topic.compression.codec' value '%s': no loaded plugin provides the %s codec",
            config_get(cfg, "offsets.topic.compression.codec"),
            plugin_codec_name(cfg->offsets_topic_compression_codec));
    /* Every SASL mechanism a listener enables needs its plugin. */
    if (sasl_check_config(cfg, plugins, err, sizeof err) < 0)
        die("%s%s", err, "");
    /* The authorizer chain (authorizer.class.name): an authorizer no
     * plugin provides stops startup. */
    if (authz_setup(cfg, plugins, err, sizeof err) < 0)
        die("%s%s", err, "");
    /* Every name in group.consumer.assignors needs its assignor. */
    if (coord_check_assignors(cfg, plugins, err, sizeof err) < 0)
        die("%s%s", err, "");
    /* SSL and SASL_SSL listeners: their key stores load now, or startup
     * stops with the listener and key at fault */
    if (tls_setup(cfg, err, sizeof err) < 0)
        die("%s%s", err, "");
    config_set_reconfig_check(tls_check_reconfig);
    /* and the security of this node's own connections to its peers */
    if (peer_security_setup(cfg, err, sizeof err) < 0)
        die("%s%s", err, "");
    /* Clients see what was loaded through DescribeConfigs (samsactl
     * cluster plugins). */
    char *loaded = plugin_registry_loaded_text(plugins);
    config_set_server_value(cfg, "samsa.plugins.loaded", loaded);
    free(loaded);

    struct broker b;
    memset(&b, 0, sizeof b);
    b.cfg = cfg;
    b.plugins = plugins;
    b.node_id = cfg->node_id;
    if (cfg->broker_rack)
        snprintf(b.rack, sizeof b.rack, "%s", cfg->broker_rack);
    const struct config_endpoint *adv = NULL;
    for (size_t i = 0; i < cfg->n_advertised; i++) {
        if (!cfg->advertised[i].is_controller) {
            adv = &cfg->advertised[i];
            break;
        }
    }
    if (!adv && cfg->role_broker)
        die("%s%s", "config 'listeners': no broker listener (only controller listeners)", "");
    if (!adv)
        ; /* a controller only: no broker endpoint to advertise */
    else if (adv->host[0])
        snprintf(b.advertised_host, sizeof b.advertised_host, "%s", adv->host);
    else if (gethostname(b.advertised_host, sizeof b.advertised_host) < 0)
        snprintf(b.advertised_host, sizeof b.advertised_host, "localhost");
    b.advertised_port = adv ? adv->port : -1;

    /* Bind first: a busy port is the most common startup error and
     * should be reported before anything touches the data directory. */
    b.quotas = quota_mgr_create(cfg);
    static const struct net_handlers handlers = {
        .dispatch = api_dispatch,
        .conn_open = sasl_conn_init,
        .conn_free = conn_gone,
        .conn_throttle = quota_conn_throttle,
    };
    struct net_params np = {
        .nworkers = cfg->num_network_threads,
        .max_request_bytes = cfg->socket_request_max_bytes,
        .handlers = &handlers,
        .broker = &b,
        .cfg = &b.cfg,
    };
    b.net = net_create(&np);
    b.wake = net_park_hub(b.net);
    char listening[512] = "";
    size_t off = 0;
    for (size_t i = 0; i < cfg->n_listeners; i++) {
        const struct config_endpoint *l = &cfg->listeners[i];
        bool controller = false;
        for (size_t k = 0; k < cfg->n_controller_listener_names; k++)
            controller |= !strcmp(cfg->controller_listener_names[k], l->name);
        if (net_listen(b.net, l->name, l->host, l->port, controller, (int)l->protocol, err, sizeof err) < 0)
            die("%s%s", err, "");
        off += (size_t)snprintf(listening + off, sizeof listening - off, "%s%s://%s:%d", off ? ", " : "", l->name,
                                l->host[0] ? l->host : "0.0.0.0", l->port);
    }
    /* The metrics endpoint binds with the listeners, for the same
     * reason; it serves once the node is up. */
    struct http_server *metrics = NULL;
    if (cfg->metrics_listener) {
        prometheus_init();
        metrics = http_server_open("samsa.metrics.listener", cfg->metrics_listener->host,
                                   cfg->metrics_listener->port, prometheus_http, &b, err, sizeof err);
        if (!metrics)
            die("%s%s", err, "");
    }
    prepare_log_dirs(cfg, &b);

    struct fetch_session_cache sessions;
    fetch_session_cache_init(&sessions, cfg->max_incremental_fetch_session_cache_slots);
    b.fetch_sessions = &sessions;
    /* Partition logs: checkpoints read, background threads (flusher,
     * retention, cleaner) running before the first log is opened. */
    b.logs = logmgr_create(cfg);
    struct replica_env renv = {&b.cfg, b.node_id, b.logs, b.plugins, b.wake, peer_security_broker(),
                               peer_security_controller()};
    b.partitions = preg_create(&renv);
    logmgr_start(b.logs);

    char metadir[PATH_MAX];
    const char *mdir = config_get(cfg, "metadata.log.dir");
    snprintf(metadir, sizeof metadir, "%s/__cluster_metadata-0", mdir ? mdir : cfg->log_dirs[0]);
    struct controller_env ctlenv = {
        .cfg = &b.cfg,
        .node_id = b.node_id,
        .cluster_id = b.cluster_id,
        .advertised_host = b.advertised_host,
        .advertised_port = b.advertised_port,
        .rack = b.rack,
        .wake = b.wake,
        .to_controllers = peer_security_controller(),
        .image_published = follow_image,
        .broker_ready = open_broker_listeners,
        .broker_registration_failed = stop_unregistered,
        .config_published = follow_config,
        .previous_broker_epoch = previous_broker_epoch,
        .broker_epoch_final = broker_epoch_final,
        .hook_arg = &b,
    };
    b.controller = controller_open(&ctlenv, metadir, err, sizeof err);
    if (!b.controller)
        die("%s%s", err, "");
    /* SCRAM credentials come from the metadata image (sasl-scram): set
     * before the workers run (net_run), the only callers. */
    plugin_registry_set_scram_lookup(plugins, sasl_scram_lookup, b.controller);
    /* The ACL authorizer reads the ACLs of the image. */
    authz_set_controller(b.controller);
    /* The controller brings the partition registry in line with the
     * metadata once this node has caught up (a ready single node has). */

    /* Partition logs found on disk open in parallel; a quick restart
     * serves all of them from the first request, a long recovery only
     * holds back the partitions still recovering (they answer
     * NOT_LEADER_OR_FOLLOWER until ready). */
    /* The group coordinator loads the __consumer_offsets partitions
     * this node leads, on its own thread, as their logs open. */
    struct coord_env cenv = {b.cfg, b.controller, b.partitions, b.plugins, b.wake, b.node_id, peer_security_broker()};
    b.coord = coord_create(&cenv);
    coord_start(b.coord);
    /* So does the transaction coordinator with __transaction_state; its
     * marker sender runs on a thread of its own. */
    b.txn_coord = txn_coord_create(&cenv);
    txn_coord_start(b.txn_coord);
    /* Followers fetch from their leaders on the replica fetcher thread,
     * which also keeps the ISR of the partitions this node leads. */
    struct fetcher *fetcher = fetcher_start(&renv, b.controller, b.partitions);

    int recovering = logmgr_wait_opens(b.logs, STARTUP_RECOVERY_WAIT_MS);
    if (recovering > 0)
        slog_info("%d partition log(s) still recovering; serving the others meanwhile", recovering);
    slog_info("samsa %s started: node %d, cluster %s, listening on %s, data in %s", PACKAGE_VERSION, b.node_id,
              b.cluster_id, listening, cfg->log_dirs[0]);
    /* A broker hands its leaderships over before it stops serving. */
    net_set_shutdown_hook(b.net, begin_controlled_shutdown, &b);
    net_set_reload_hook(b.net, reload_plugins, plugins);
    if (metrics) {
        http_server_start(metrics);
        const char *mh = cfg->metrics_listener->host[0] ? cfg->metrics_listener->host : "0.0.0.0";
        bool v6 = strchr(mh, ':') != NULL;
        slog_info("metrics at http://%s%s%s:%d/metrics", v6 ? "[" : "", mh, v6 ? "]" : "", http_server_port(metrics));
    }
    net_run(b.net);
    /* Scrapes read everything below: they stop first. */
    http_server_close(metrics);

    /* Replication stops before the logs close. */
    fetcher_stop(fetcher);

    /* Background log work stops first (the flusher's wakeups go to the
     * workers' loops, freed by net_free); then every log is closed
     * cleanly and the final checkpoints are written. */
    logmgr_stop(b.logs);
    /* Groups unload (waiting requests are answered) while the workers'
     * loops still exist to be woken. */
    coord_stop(b.coord);
    txn_coord_stop(b.txn_coord);
    /* The quorum thread stops (a leader resigns) before the workers'
     * loops go: it wakes them. */
    controller_close(b.controller, true);
    b.wake = NULL; /* the hub goes with the net; nothing notifies now */
    net_free(b.net);
    b.net = NULL;
    coord_destroy(b.coord);
    b.coord = NULL;
    txn_coord_destroy(b.txn_coord);
    b.txn_coord = NULL;
    preg_destroy(b.partitions, true);
    logmgr_destroy(b.logs);
    fetch_session_cache_destroy(&sessions);
    quota_mgr_destroy(b.quotas);
    b.quotas = NULL;
    plugin_registry_free(plugins);
    config_free(cfg);
    slog_info("samsa stopped cleanly");
    /* Kafka's broker exits with 1 when it could not register */
    return atomic_load(&registration_failed) ? 1 : 0;
}
