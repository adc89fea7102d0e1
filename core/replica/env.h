/* What the replica layer (the partition registry, registry.c, and the
 * follower fetchers, fetcher.c) uses of the node, a narrow view instead
 * of struct broker: filled by main (or a test), copied by preg_create
 * and fetcher_start. Everything it points to outlives them. */
#ifndef SAMSA_REPLICA_ENV_H
#define SAMSA_REPLICA_ENV_H

#include <stdint.h>

struct kclient_security;
struct logmgr;
struct park_hub;
struct plugin_registry;
struct samsa_config;

struct replica_env {
    /* Where the broker config in effect lives (the node's; the controller
     * swaps it on dynamic changes): loaded atomically when read. */
    struct samsa_config *_Atomic *cfg;
    int32_t node_id;
    /* The partition logs' manager (log/logmgr.h); NULL: the registry
     * makes a private one, without background threads, whose logs open
     * inline (unit tests). */
    struct logmgr *logs;
    struct plugin_registry *plugins; /* the logs' codecs; NULL: none */
    struct park_hub *wake;           /* parked requests' wake-ups; NULL without a network layer */
    /* how fetchers reach leaders, and AlterPartition the controller
     * (net/kclient.h); NULL: PLAINTEXT */
    const struct kclient_security *to_brokers, *to_controllers;
};

#endif
