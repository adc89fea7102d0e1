/* The node's shared state, handed to every request handler. Fields are
 * set at startup and never change afterwards, except through their own
 * synchronisation (the metadata image is swapped atomically, partitions
 * are refcounted). */
#ifndef SAMSA_BROKER_H
#define SAMSA_BROKER_H

#include <stdint.h>

struct samsa_config;
struct controller;
struct partition_registry;
struct net;
struct fetch_session_cache;

struct broker {
    struct samsa_config *cfg;
    int32_t node_id;
    char cluster_id[32];
    /* Where clients reach this broker (the first advertised listener). */
    char advertised_host[256];
    int32_t advertised_port;
    char rack[64];               /* "" when broker.rack is unset */
    int32_t socket_request_max_bytes;
    struct controller *controller;
    struct partition_registry *partitions;
    struct net *net;
    struct fetch_session_cache *fetch_sessions;
};

#endif
