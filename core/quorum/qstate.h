/* The persisted quorum state: `quorum-state` in the metadata log
 * directory, as Kafka's FileQuorumStateStore writes it (JSON of
 * QuorumStateData, data_version 1):
 *
 *   {"leaderId":1,"leaderEpoch":7,"votedId":-1,
 *    "votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}
 *
 * Written atomically (temporary file, fsync, rename, fsync of the
 * directory) before the Raft node announces what it records. */
#ifndef SAMSA_QUORUM_QSTATE_H
#define SAMSA_QUORUM_QSTATE_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/gen/quorum_state_data.h"

#define QSTATE_FILE "quorum-state"

/* Reads dir/quorum-state into *q (cluster_id NULL). Returns 1 when the
 * file does not exist (a fresh node), 0 on success, -1 with one line in
 * err for an unreadable or malformed file. */
int qstate_read(const char *dir, quorum_state_data_t *q, char *err, size_t errlen);
/* Writes q durably. Returns 0 or an errno value. */
int qstate_write(const char *dir, const quorum_state_data_t *q);

#endif
