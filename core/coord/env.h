/* What the coordinators (group: coord.c; transactions: txn_coord.c, its
 * marker sender and the leaders' verification) use of the node, a
 * narrow view instead of struct broker. Everything outlives the
 * coordinators. */
#ifndef SAMSA_COORD_ENV_H
#define SAMSA_COORD_ENV_H

#include <stdint.h>

struct controller;
struct kclient_security;
struct park_hub;
struct partition_registry;
struct plugin_registry;
struct samsa_config;

struct coord_env {
    const struct samsa_config *cfg;
    struct controller *controller;         /* the metadata image */
    struct partition_registry *partitions; /* the internal topics' logs */
    struct plugin_registry *plugins;       /* codecs when loading; assignors */
    struct park_hub *wake;                 /* parked requests' wake-ups; NULL without a network layer */
    int32_t node_id;
    /* how the marker sender reaches other brokers (net/kclient.h); NULL: PLAINTEXT */
    const struct kclient_security *to_brokers;
};

#endif
