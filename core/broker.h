/* The node's shared state, handed to every request handler. Fields are
 * set at startup and never change afterwards, except through their own
 * synchronisation (the config and the metadata image are swapped
 * atomically, partitions are refcounted). */
#ifndef SAMSA_BROKER_H
#define SAMSA_BROKER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct samsa_config;
struct controller;
struct partition_registry;
struct net;
struct fetch_session_cache;
struct quota_mgr;
struct plugin_registry;
struct logmgr;
struct coord;
struct txn_coord;
struct park_hub;

struct broker {
    /* The broker config in effect. A published config is never modified:
     * a dynamic change (AlterConfigs / IncrementalAlterConfigs on a BROKER
     * resource) builds a copy, and the controller swaps this pointer
     * atomically (controller_alter_broker_configs; main hands it the
     * field's address as controller_env.cfg) once the change is in
     * the metadata log, then rebuilds the effective topic configs of the
     * image from it. Readers just load it (each read of the _Atomic field
     * is an atomic load); load it once into a local where several fields
     * must agree. Replaced configs stay allocated until controller_close,
     * so a pointer loaded here never dangles while the server runs. At
     * controller_close the newest contents move back into the config the
     * controller was opened with, which its creator frees. */
    struct samsa_config *_Atomic cfg;
    int32_t node_id;
    char cluster_id[32];
    /* Where clients reach this broker (the first advertised listener). */
    char advertised_host[256];
    int32_t advertised_port;
    char rack[64];               /* "" when broker.rack is unset */
    struct controller *controller;
    struct partition_registry *partitions;
    /* The partition logs' manager (log/logmgr.h): recovery, flusher,
     * retention, cleaner. Set at startup before partitions are opened. */
    struct logmgr *logs;
    struct net *net;
    /* Where state changes are announced to parked requests (net/park.h:
     * park_notify); NULL without a network layer. */
    struct park_hub *wake;
    struct fetch_session_cache *fetch_sessions;
    /* Client quota enforcement (api/quota_mgr.h); NULL: none. */
    struct quota_mgr *quotas;
    /* Loaded plugins and their capabilities (codecs, ...): filled at
     * startup before the workers run, read-only afterwards. */
    struct plugin_registry *plugins;
    /* The group coordinator (coord/coord.h): set at startup. */
    struct coord *coord;
    /* The transaction coordinator (coord/txn_coord.h): set at startup. */
    struct txn_coord *txn_coord;
};

#endif
