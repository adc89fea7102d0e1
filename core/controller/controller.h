/* The controller: owns the metadata log (__cluster_metadata-0, records in
 * Kafka's metadata record types), applies admin operations by appending
 * records and replaying them into a new image.
 *
 * In this single-node version the operations run synchronously on the
 * calling worker under the controller's lock; the metadata quorum work
 * replaces the local log with a Raft-replicated one and makes them
 * asynchronous, without changing what the records say. */
#ifndef SAMSA_CONTROLLER_CONTROLLER_H
#define SAMSA_CONTROLLER_CONTROLLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/image.h"
#include "proto/kcodec.h"

struct broker;
struct controller;

/* Opens (creating if needed) the metadata log in dir and replays it.
 * Returns NULL with one line in err on failure. */
struct controller *controller_open(struct broker *b, const char *dir, char *err, size_t errlen);
/* Flushes and closes; clean marks a clean shutdown. */
void controller_close(struct controller *c, bool clean);

/* The current image, with a reference the caller must release. */
struct mimage *controller_image(struct controller *c);

/* A topic to create (CreateTopics or auto-creation). */
struct topic_spec {
    kstr_t name;
    int32_t num_partitions;       /* -1: num.partitions */
    int16_t replication_factor;   /* -1: default.replication.factor */
    /* Explicit assignment: nassign partitions, each with nreplicas ids;
     * nassign == 0 means none. */
    int32_t nassign;
    const int32_t *const *assign;
    const int32_t *assign_len;
    int32_t nconfigs;
    const kstr_t *config_keys;
    const kstr_t *config_values;  /* len -1: null (Kafka: INVALID_REQUEST) */
};

/* Each returns a Kafka error code (0 = ok) and, on error, Kafka's message
 * for it in msg (always NUL-terminated). validate_only checks without
 * changing anything. */
int controller_create_topic(struct controller *c, const struct topic_spec *spec, bool validate_only,
                            kuuid_t *id_out, char *msg, size_t msglen);
int controller_delete_topic(struct controller *c, const kuuid_t *id, char *msg, size_t msglen);
int controller_create_partitions(struct controller *c, kstr_t topic, int32_t count,
                                 int32_t nassign, const int32_t *const *assign,
                                 const int32_t *assign_len, bool validate_only, char *msg,
                                 size_t msglen);

#endif
