/* The broker side's producer-id manager (Kafka's RPCProducerIdManager):
 * InitProducerId hands out ids from a block the active controller
 * allocated to this broker (AllocateProducerIds, controller/
 * producer_ids.c), and the next block is asked for once 90% of the
 * current one is used, so that a busy broker rarely runs dry.
 *
 * The request side is controller_next_producer_id (controller.h); the
 * asking runs on the quorum loop next to registration and heartbeats
 * (controller/pid_manager.c). This header is the bookkeeping of the
 * blocks alone, free of threads and I/O, so that it can be tested. */
#ifndef SAMSA_CONTROLLER_PID_MANAGER_H
#define SAMSA_CONTROLLER_PID_MANAGER_H

#include <stdbool.h>
#include <stdint.h>

/* Kafka's ProducerIdManager.PidPrefetchThreshold, in tenths. */
#define PID_PREFETCH_TENTHS 9

/* Two blocks at most: the one ids come from and the one asked for
 * ahead. Zeroed (pid_blocks_init) it holds nothing and wants nothing:
 * the first claim asks (Kafka asks on first use, not at start-up). */
struct pid_blocks {
    int64_t first, next, end; /* current block [first, end); next: the next id; none left when next == end */
    int64_t nfirst, nend;     /* the block fetched ahead; none when nfirst == nend */
    bool wanted;              /* a claim reached the prefetch point or ran dry */
};

void pid_blocks_init(struct pid_blocks *b);
/* Takes the next id into *id (true), moving to the block fetched ahead
 * when the current one is used up; false when there is none (the next
 * block is then wanted). *ask (may be NULL) is set to true when this
 * call made the next block wanted: the caller wakes whoever asks. */
bool pid_blocks_claim(struct pid_blocks *b, int64_t *id, bool *ask);
/* The next block should be asked for: wanted and not already held. */
bool pid_blocks_want(const struct pid_blocks *b);
/* A block [first, first + len) arrived (len > 0, first >= 0, after
 * every id held): it becomes the current block when that one is used
 * up, else the block ahead. */
void pid_blocks_add(struct pid_blocks *b, int64_t first, int32_t len);
/* Ids that can be claimed without asking (both blocks). */
int64_t pid_blocks_available(const struct pid_blocks *b);

#endif
