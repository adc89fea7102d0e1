/* The broker side's producer-id manager (see pid_manager.h), as Kafka's
 * RPCProducerIdManager: one AllocateProducerIds at a time, sent by the
 * quorum loop with this broker's id and registration epoch to the active
 * controller: directly when that is this node (the zero-config single
 * node), else through the controller client that registration and
 * heartbeats use. A failed request is retried after Kafka's 50 ms
 * backoff (on the loop's next step at the latest), as long as a block is
 * wanted. A block that arrives wakes the InitProducerId requests parked
 * on it (park_key_object of the manager).
 *
 * Threads: controller_next_producer_id on any worker (the blocks are
 * under the manager's mutex); everything else on the quorum loop. */
#include "controller/pid_manager.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>

#include "controller/controller_internal.h"
#include "net/kclient.h"
#include "proto/gen/allocate_producer_ids_request.h"
#include "proto/gen/allocate_producer_ids_response.h"
#include "proto/kerr.h"
#include "quorum/quorum.h"
#include "util/clock.h"
#include "util/slog.h"

/* Kafka's RPCProducerIdManager.RetryBackoffMs. */
#define RETRY_BACKOFF_MS 50

/* ------------------------------------------------------------------ */
/* The blocks                                                          */

void pid_blocks_init(struct pid_blocks *b)
{
    b->first = b->next = b->end = 0;
    b->nfirst = b->nend = 0;
    b->wanted = false;
}

static bool have_ahead(const struct pid_blocks *b) { return b->nfirst != b->nend; }

bool pid_blocks_claim(struct pid_blocks *b, int64_t *id, bool *ask)
{
    bool was = pid_blocks_want(b);
    bool ok = false;
    if (b->next == b->end && have_ahead(b)) {
        b->first = b->next = b->nfirst;
        b->end = b->nend;
        b->nfirst = b->nend = 0;
    }
    if (b->next < b->end) {
        *id = b->next++;
        /* Kafka asks when it hands out the id at 90% of the block,
         * unless it holds the next one already. */
        if (!have_ahead(b) && *id >= b->first + (b->end - b->first) * PID_PREFETCH_TENTHS / 10)
            b->wanted = true;
        ok = true;
    } else {
        b->wanted = true;
    }
    if (ask)
        *ask = !was && pid_blocks_want(b);
    return ok;
}

bool pid_blocks_want(const struct pid_blocks *b) { return b->wanted && !have_ahead(b); }

void pid_blocks_add(struct pid_blocks *b, int64_t first, int32_t len)
{
    if (b->next == b->end && !have_ahead(b)) {
        b->first = b->next = first;
        b->end = first + len;
    } else {
        b->nfirst = first;
        b->nend = first + len;
    }
    b->wanted = false;
}

int64_t pid_blocks_available(const struct pid_blocks *b) { return (b->end - b->next) + (b->nend - b->nfirst); }

/* ------------------------------------------------------------------ */
/* The manager                                                         */

struct ctl_pids {
    pthread_mutex_t mu;
    struct pid_blocks blocks; /* under mu */
    /* loop thread */
    bool inflight;
    int64_t retry_at_ms;
    int64_t got_first; /* the local proposal's block, until it commits */
    int32_t got_len;
};

void ctl_pids_init(struct controller *c)
{
    struct ctl_pids *m = xcalloc(1, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    pid_blocks_init(&m->blocks);
    c->pids = m;
}

void ctl_pids_free(struct controller *c)
{
    if (!c->pids)
        return;
    pthread_mutex_destroy(&c->pids->mu);
    free(c->pids);
    c->pids = NULL;
}

int controller_next_producer_id(struct controller *c, int64_t *id)
{
    struct ctl_pids *m = c->pids;
    bool ask;
    pthread_mutex_lock(&m->mu);
    bool ok = pid_blocks_claim(&m->blocks, id, &ask);
    pthread_mutex_unlock(&m->mu);
    if (ask)
        quorum_wake(c->q);
    /* Kafka answers COORDINATOR_LOAD_IN_PROGRESS rather than
     * REQUEST_TIMED_OUT: every client retries it. */
    return ok ? 0 : KERR_COORDINATOR_LOAD_IN_PROGRESS;
}

const void *controller_producer_ids_waitable(const struct controller *c) { return c->pids; }

/* Loop thread: the answer to the request in flight. */
static void pids_done(struct controller *c, int err, int64_t first, int32_t len)
{
    struct ctl_pids *m = c->pids;
    m->inflight = false;
    pthread_mutex_lock(&m->mu);
    int64_t held = m->blocks.nend > m->blocks.end ? m->blocks.nend : m->blocks.end;
    /* Kafka's handleAllocateProducerIdsResponse checks the block; samsa
     * also refuses one that goes back (a controller never does that). */
    if (!err && (first < 0 || len <= 0 || first > INT64_MAX - len || first < held)) {
        slog_error("broker %d: the controller allocated an invalid producer id block (%" PRId64 ", length %d)",
                   (int)ctl_node_id(c), first, (int)len);
        err = KERR_UNKNOWN_SERVER_ERROR;
    }
    if (!err)
        pid_blocks_add(&m->blocks, first, len);
    pthread_mutex_unlock(&m->mu);
    if (err) {
        if (err != KERR_NOT_CONTROLLER && err != KERR_NETWORK_EXCEPTION && err != KERR_REQUEST_TIMED_OUT &&
            err != KERR_UNKNOWN_SERVER_ERROR)
            slog_warn("broker %d: AllocateProducerIds failed: %s; retrying", (int)ctl_node_id(c),
                      kerr_name((int16_t)err));
        m->retry_at_ms = clock_mono_ms() + RETRY_BACKOFF_MS;
        return;
    }
    slog_debug("broker %d: producer ids %" PRId64 " to %" PRId64 " allocated", (int)ctl_node_id(c), first,
               first + len - 1);
    ctl_notify_object(c, m);
}

static void local_done(void *arg, struct ctl_op *op)
{
    struct controller *c = arg;
    pids_done(c, op->err, c->pids->got_first, c->pids->got_len);
}

static void remote_done(void *ctx, int err, int16_t version, void *resp, struct arena *ar)
{
    (void)version;
    (void)ar;
    struct controller *c = ctx;
    const allocate_producer_ids_response_t *r = resp;
    if (!err)
        err = r->error_code;
    pids_done(c, err, err ? -1 : r->producer_id_start, err ? 0 : r->producer_id_len);
}

void ctl_pids_step(struct controller *c, int64_t now)
{
    struct ctl_pids *m = c->pids;
    if (!m || m->inflight || now < m->retry_at_ms)
        return;
    pthread_mutex_lock(&m->mu);
    bool want = pid_blocks_want(&m->blocks);
    pthread_mutex_unlock(&m->mu);
    /* Only a registered broker has an epoch the controller accepts; until
     * then (or without a known controller) the next step tries again. */
    if (!want || c->broker_epoch < 0 || (c->life != LIFE_RUNNING && c->life != LIFE_WAIT_HEARTBEAT))
        return;
    int32_t leader = quorum_leader_id(c->q);
    bool local = leader == ctl_node_id(c);
    if (leader < 0 || (local && !atomic_load(&c->active)))
        return;
    m->inflight = true;
    if (local) {
        struct ctl_op *op = NULL;
        int64_t first;
        int32_t len;
        int rc = controller_allocate_producer_ids(c, ctl_node_id(c), c->broker_epoch, &first, &len, &op);
        if (rc || !op) {
            pids_done(c, rc ? rc : KERR_UNKNOWN_SERVER_ERROR, first, len);
            return;
        }
        m->got_first = first;
        m->got_len = len;
        op->on_done = local_done; /* the loop completes ops: no race */
        op->on_done_arg = c;
        ctl_op_release(op);
        return;
    }
    struct kclient *kc = ctl_client(c, leader);
    allocate_producer_ids_request_t q;
    allocate_producer_ids_request_init(&q);
    q.broker_id = ctl_node_id(c);
    q.broker_epoch = c->broker_epoch;
    if (!kc || kclient_send(kc, ALLOCATE_PRODUCER_IDS_REQUEST_API_KEY, 0, &q, remote_done, c) != 0)
        pids_done(c, KERR_NETWORK_EXCEPTION, -1, 0);
}
