/* A unit test's node, wired as core/main.c wires samsa's: a struct broker
 * holds the parts (the request handlers' view), and each layer is opened
 * with the narrow view it takes, filled from it. For the tests that run
 * a controller with a partition registry (controller, configs, SCRAM,
 * transaction markers). */
#ifndef SAMSA_TESTS_NODE_FIXTURE_H
#define SAMSA_TESTS_NODE_FIXTURE_H

#include <stddef.h>

#include "broker.h"
#include "controller/controller.h"
#include "replica/env.h"
#include "replica/partition.h"

/* preg_create with b's config slot, id, log manager (NULL: the
 * registry's own), plugins and wake hub; b must outlive the registry. */
static inline struct partition_registry *fixture_preg_create(struct broker *b)
{
    struct replica_env env = {&b->cfg, b->node_id, b->logs, b->plugins, b->wake, NULL, NULL};
    return preg_create(&env);
}

/* The controller's image_published hook: the partitions follow (main.c's
 * follow_image). */
static inline int fixture_follow_image(void *arg, const struct mimage *img, char *err, size_t errlen)
{
    struct broker *b = arg;
    return b->partitions ? preg_sync(b->partitions, img, err, errlen) : 0;
}

/* controller_open with b's config slot, ids and addresses; b must
 * outlive the controller. */
static inline struct controller *fixture_controller_open(struct broker *b, const char *dir, char *err, size_t errlen)
{
    struct controller_env env = {
        .cfg = &b->cfg,
        .node_id = b->node_id,
        .cluster_id = b->cluster_id,
        .advertised_host = b->advertised_host,
        .advertised_port = b->advertised_port,
        .rack = b->rack,
        .wake = b->wake,
        .image_published = fixture_follow_image,
        .hook_arg = b,
    };
    return controller_open(&env, dir, err, errlen);
}

#endif
