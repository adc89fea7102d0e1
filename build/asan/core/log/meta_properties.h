/* meta.properties: the identity file at the top of every log directory,
 * in the format Kafka's KRaft mode writes (version=1):
 *
 *     #
 *     #Tue Jan 09 10:00:00 UTC 2024
 *     cluster.id=MkU3OEVBNTcwNTJENDM2Qk
 *     directory.id=...
 *     node.id=1
 *     version=1
 *
 * so that a directory formatted by samsa reads as Kafka's and the other
 * way round. */
#ifndef SAMSA_LOG_META_PROPERTIES_H
#define SAMSA_LOG_META_PROPERTIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/uuid.h"

#define META_PROPERTIES_FILE "meta.properties"
#define META_PROPERTIES_CLUSTER_ID_MAX 64

struct meta_properties {
    int version; /* always 1: samsa reads and writes KRaft directories only */
    /* Kafka writes Uuid strings (22 characters) but accepts any
     * non-empty id; so does samsa, up to 63 bytes. */
    char cluster_id[META_PROPERTIES_CLUSTER_ID_MAX];
    int32_t node_id;
    bool has_directory_id;
    uint8_t directory_id[UUID_LEN];
};

/* Fills mp for a directory being formatted: version 1, node_id, the
 * given cluster id (NULL: a new random Kafka UUID) and a new random
 * directory id. Returns 0, or -1 with err (no randomness, or a cluster
 * id that is empty or too long). */
int meta_properties_init(struct meta_properties *mp, int32_t node_id, const char *cluster_id,
                         char *err, size_t errlen);

/* Reads dir/meta.properties. Returns 0 on success, 1 when the file does
 * not exist (the directory is not formatted), or -1 with one line in err
 * naming the file and what is wrong: unreadable, a version other than 1
 * (0 is ZooKeeper-era), missing or non-numeric node.id, missing
 * cluster.id, or a directory.id that is not a Kafka UUID. */
int meta_properties_read(const char *dir, struct meta_properties *out, char *err,
                         size_t errlen);

/* Writes dir/meta.properties atomically: a temporary file in dir,
 * fsync, rename over the old file, fsync of dir. Returns 0, or -1 with
 * err. */
int meta_properties_write(const char *dir, const struct meta_properties *mp, char *err,
                          size_t errlen);

/* Checks properties read from dir against this node: its node.id, and
 * (when cluster_id is not NULL) the cluster id of the other directories.
 * Returns 0, or -1 with a message saying which file disagrees and what
 * to do about it. */
int meta_properties_check(const struct meta_properties *mp, const char *dir, int32_t node_id,
                          const char *cluster_id, char *err, size_t errlen);

#endif
