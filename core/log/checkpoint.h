/* Kafka's checkpoint files, plain text:
 *
 *   0                      version
 *   2                      number of entries
 *   orders 0 1234          one entry per line, space-separated
 *   orders 1 77
 *
 * The per-log-dir files recovery-point-offset-checkpoint,
 * log-start-offset-checkpoint and cleaner-offset-checkpoint have
 * "topic partition offset" entries; a partition's leader-epoch-checkpoint
 * has "epoch startOffset" entries. Writes go through a temporary file,
 * fsync and rename, so a crash leaves the old or the new file. */
#ifndef SAMSA_LOG_CHECKPOINT_H
#define SAMSA_LOG_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#define CKPT_RECOVERY_POINT_FILE "recovery-point-offset-checkpoint"
#define CKPT_LOG_START_FILE "log-start-offset-checkpoint"
#define CKPT_CLEANER_FILE "cleaner-offset-checkpoint"
#define CKPT_REPLICATION_FILE "replication-offset-checkpoint"
#define CKPT_LEADER_EPOCH_FILE "leader-epoch-checkpoint"

struct ckpt_entry {
    char *topic;         /* owned */
    int32_t partition;
    int64_t offset;
};

/* Reads a "topic partition offset" file. 0 with *out (malloc'ed, free
 * with ckpt_free) and *n; ENOENT when the file does not exist; EINVAL
 * when it is not in the format above; another errno value for an I/O
 * error. */
int ckpt_read(const char *path, struct ckpt_entry **out, size_t *n);
/* Writes one durably. 0 or an errno value. */
int ckpt_write(const char *path, const struct ckpt_entry *e, size_t n);
void ckpt_free(struct ckpt_entry *e, size_t n);

struct epoch_entry {
    int32_t epoch;
    int64_t start_offset;
};

/* The same for "epoch startOffset" files (leader-epoch-checkpoint). */
int ckpt_read_epochs(const char *path, struct epoch_entry **out, size_t *n);
int ckpt_write_epochs(const char *path, const struct epoch_entry *e, size_t n);

#endif
