/* Talking to a coordinator, as Kafka's admin client does: FindCoordinator
 * through any broker for a group (key type 0) or a transactional id (key
 * type 1), then the request to the node it names, asking again while the
 * answer says the coordinator moved, is not there yet or is still
 * loading, up to the client's timeout. Used by groups.c and
 * transactions.c. */
#ifndef SAMSACTL_COORDINATOR_H
#define SAMSACTL_COORDINATOR_H

#include <stdbool.h>
#include <stdint.h>

#include "client.h"

#define COORD_KEY_GROUP 0
#define COORD_KEY_TRANSACTION 1

struct coordinator {
    const char *key; /* the group id or transactional id; not owned */
    int8_t key_type; /* COORD_KEY_* */
    int32_t node;    /* -1 until FindCoordinator names one (again) */
    char addr[300];  /* "host:port" of that node */
};

/* Answers that mean "find the coordinator again and retry": the key's
 * partition has no leader yet (an internal topic being created on first
 * use), moved, or is still being loaded after a leader change. */
bool coordinator_retriable(int code);
/* The admin client's backoff: doubled, at most a second. */
int coordinator_next_backoff(int ms);

/* FindCoordinator through any broker, retried until deadline (monotonic
 * ms) while the answer is retriable. No bootstrap broker reachable fails
 * at once. On 0, co->node and co->addr are set. */
int coordinator_find(struct kc_client *c, struct coordinator *co, int64_t deadline);
/* The connection to the coordinator (found first when co->node < 0). */
int coordinator_conn(struct kc_client *c, struct coordinator *co, int64_t deadline, struct kc_conn **out);

/* The key-level error of an answer (what says "not here, not yet"). */
typedef int (*coordinator_error_fn)(const struct kc_response *r);

/* Sends req to the coordinator; while it answers (as key_error finds) or
 * fails as coordinator_retriable says, finds the coordinator again and
 * retries, up to c->timeout_ms in all. On 0, *out holds the answer
 * (caller frees with kc_response_free), whose other errors are the
 * caller's to judge. */
int coordinator_call(struct kc_client *c, struct coordinator *co, int16_t key, const void *req,
                     struct kc_response *out, coordinator_error_fn key_error);

#endif
