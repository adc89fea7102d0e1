/* Transaction metadata and its transitions (see txn_meta.h). The rules
 * follow Kafka's TransactionMetadata and TransactionCoordinator, V1. */
#include "coord/txn_meta.h"

#include <stdlib.h>
#include <string.h>

#include "proto/gen/kapi.h"
#include "proto/kerr.h"
#include "util/buf.h"

static const char *const NAMES[] = {
    "Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence",
};

const char *txn_state_name(enum txn_state s)
{
    return (unsigned)s < sizeof NAMES / sizeof NAMES[0] ? NAMES[s] : "Unknown";
}

int txn_state_parse(kstr_t name)
{
    for (int i = 0; i < (int)(sizeof NAMES / sizeof NAMES[0]); i++)
        if (name.len == (int32_t)strlen(NAMES[i]) && memcmp(name.p, NAMES[i], (size_t)name.len) == 0)
            return i;
    return -1;
}

#define BIT(s) (1u << (s))

bool txn_transition_valid(enum txn_state from, enum txn_state to)
{
    unsigned prev;
    switch (to) {
    case TXN_EMPTY:
        prev = BIT(TXN_EMPTY) | BIT(TXN_COMPLETE_COMMIT) | BIT(TXN_COMPLETE_ABORT);
        break;
    case TXN_ONGOING:
        prev = BIT(TXN_ONGOING) | BIT(TXN_EMPTY) | BIT(TXN_COMPLETE_COMMIT) | BIT(TXN_COMPLETE_ABORT);
        break;
    case TXN_PREPARE_COMMIT:
        prev = BIT(TXN_ONGOING);
        break;
    case TXN_PREPARE_ABORT:
        prev = BIT(TXN_ONGOING) | BIT(TXN_PREPARE_EPOCH_FENCE) | BIT(TXN_EMPTY) | BIT(TXN_COMPLETE_COMMIT) |
               BIT(TXN_COMPLETE_ABORT);
        break;
    case TXN_COMPLETE_COMMIT:
        prev = BIT(TXN_PREPARE_COMMIT);
        break;
    case TXN_COMPLETE_ABORT:
        prev = BIT(TXN_PREPARE_ABORT);
        break;
    case TXN_DEAD:
        prev = BIT(TXN_EMPTY) | BIT(TXN_COMPLETE_COMMIT) | BIT(TXN_COMPLETE_ABORT);
        break;
    case TXN_PREPARE_EPOCH_FENCE:
        prev = BIT(TXN_ONGOING);
        break;
    default:
        return false;
    }
    return (unsigned)from < 8 && (prev & BIT(from));
}

struct txn_meta *txn_meta_new(kstr_t id, int64_t producer_id, int32_t timeout_ms, int64_t now)
{
    struct txn_meta *m = xcalloc(1, sizeof *m);
    int32_t len = id.len > 0 ? id.len : 0;
    m->id = xmalloc((size_t)len + 1);
    if (len)
        memcpy(m->id, id.p, (size_t)len);
    m->id[len] = 0;
    m->id_len = len;
    m->producer_id = producer_id;
    m->prev_producer_id = TXN_NO_PRODUCER_ID;
    m->next_producer_id = TXN_NO_PRODUCER_ID;
    m->epoch = TXN_NO_PRODUCER_EPOCH;
    m->last_epoch = TXN_NO_PRODUCER_EPOCH;
    m->timeout_ms = timeout_ms;
    m->state = TXN_EMPTY;
    m->start_ts = -1;
    m->update_ts = now;
    return m;
}

void txn_meta_clear(struct txn_meta *m)
{
    for (int32_t i = 0; i < m->nparts; i++)
        free(m->parts[i].topic);
    free(m->parts);
    free(m->id);
    memset(m, 0, sizeof *m);
}

void txn_meta_free(struct txn_meta *m)
{
    if (!m)
        return;
    txn_meta_clear(m);
    free(m);
}

void txn_meta_copy(struct txn_meta *dst, const struct txn_meta *src)
{
    *dst = *src;
    dst->id = xmalloc((size_t)src->id_len + 1);
    memcpy(dst->id, src->id, (size_t)src->id_len + 1);
    dst->parts = src->nparts ? xcalloc((size_t)src->nparts, sizeof *dst->parts) : NULL;
    for (int32_t i = 0; i < src->nparts; i++) {
        dst->parts[i].topic = xstrdup(src->parts[i].topic);
        dst->parts[i].partition = src->parts[i].partition;
    }
}

void txn_meta_apply(struct txn_meta *m, struct txn_meta *target)
{
    bool pending = m->pending;
    txn_meta_clear(m);
    *m = *target;
    m->pending = pending;
    memset(target, 0, sizeof *target);
}

static int cmp_tp(const char *t, int32_t tlen, int32_t p, const struct txn_tp *b)
{
    size_t bl = strlen(b->topic);
    size_t n = (size_t)tlen < bl ? (size_t)tlen : bl;
    int c = memcmp(t, b->topic, n);
    if (c)
        return c;
    if ((size_t)tlen != bl)
        return (size_t)tlen < bl ? -1 : 1;
    return p < b->partition ? -1 : p > b->partition;
}

/* The index of (topic, p) or, negated minus one, where it would go. */
static int32_t find_tp(const struct txn_meta *m, kstr_t topic, int32_t p)
{
    int32_t lo = 0, hi = m->nparts;
    int32_t tl = topic.len > 0 ? topic.len : 0;
    while (lo < hi) {
        int32_t mid = (lo + hi) / 2;
        int c = cmp_tp(topic.p ? topic.p : "", tl, p, &m->parts[mid]);
        if (c == 0)
            return mid;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return -lo - 1;
}

bool txn_meta_has_part(const struct txn_meta *m, kstr_t topic, int32_t partition)
{
    return find_tp(m, topic, partition) >= 0;
}

void txn_meta_add_part(struct txn_meta *m, kstr_t topic, int32_t partition)
{
    int32_t at = find_tp(m, topic, partition);
    if (at >= 0)
        return;
    at = -at - 1;
    m->parts = xrealloc(m->parts, (size_t)(m->nparts + 1) * sizeof *m->parts);
    memmove(m->parts + at + 1, m->parts + at, (size_t)(m->nparts - at) * sizeof *m->parts);
    int32_t tl = topic.len > 0 ? topic.len : 0;
    char *t = xmalloc((size_t)tl + 1);
    if (tl)
        memcpy(t, topic.p, (size_t)tl);
    t[tl] = 0;
    m->parts[at] = (struct txn_tp){t, partition};
    m->nparts++;
}

static void clear_parts(struct txn_meta *m)
{
    for (int32_t i = 0; i < m->nparts; i++)
        free(m->parts[i].topic);
    free(m->parts);
    m->parts = NULL;
    m->nparts = 0;
}

bool txn_epoch_exhausted(int16_t epoch)
{
    return epoch >= INT16_MAX - 1;
}

/* ------------------------------------------------------------------ */
/* InitProducerId                                                      */

/* Kafka's isValidProducerId (TransactionCoordinator): a request naming
 * a producer is fenced unless the metadata is new, the id is the
 * current one (its epoch is checked by the bump), or it is the previous
 * id with an exhausted epoch (a retry after a rotation it never heard
 * of). */
static bool valid_producer(const struct txn_meta *m, int64_t pid, int16_t epoch)
{
    return m->epoch == TXN_NO_PRODUCER_EPOCH || pid == m->producer_id ||
           (pid == m->prev_producer_id && txn_epoch_exhausted(epoch));
}

bool txn_init_needs_pid(const struct txn_meta *m, int16_t req_epoch)
{
    bool ended = m->state == TXN_EMPTY || m->state == TXN_COMPLETE_COMMIT || m->state == TXN_COMPLETE_ABORT;
    return ended && txn_epoch_exhausted(m->epoch) && (req_epoch == TXN_NO_PRODUCER_EPOCH || req_epoch == m->epoch);
}

int16_t txn_prepare_init(const struct txn_meta *m, int64_t req_pid, int16_t req_epoch, int32_t timeout_ms,
                         int64_t new_pid, int64_t now, struct txn_meta *target, enum txn_init_action *action)
{
    bool expected = req_pid != TXN_NO_PRODUCER_ID;
    *action = TXN_INIT_WRITE;
    if (m->pending)
        return KERR_CONCURRENT_TRANSACTIONS;
    if (expected && !valid_producer(m, req_pid, req_epoch))
        return KERR_PRODUCER_FENCED;
    switch (m->state) {
    case TXN_PREPARE_ABORT:
    case TXN_PREPARE_COMMIT:
    case TXN_PREPARE_EPOCH_FENCE:
    case TXN_DEAD:
        return KERR_CONCURRENT_TRANSACTIONS;
    case TXN_ONGOING: {
        /* fence the producer of the open transaction: abort it with a
         * bumped epoch; the new producer retries once that is done */
        int16_t err = txn_prepare_fence_abort(m, now, target);
        if (!err)
            *action = TXN_INIT_FENCE;
        return err;
    }
    default:
        break;
    }
    /* Empty, CompleteCommit, CompleteAbort */
    int16_t next_epoch, last_epoch;
    int64_t pid = m->producer_id, prev = m->prev_producer_id;
    if (txn_init_needs_pid(m, expected ? req_epoch : TXN_NO_PRODUCER_EPOCH)) {
        /* prepareProducerIdRotation */
        if (new_pid < 0)
            return KERR_COORDINATOR_NOT_AVAILABLE;
        prev = expected ? m->producer_id : TXN_NO_PRODUCER_ID;
        pid = new_pid;
        next_epoch = 0;
        last_epoch = expected ? m->epoch : TXN_NO_PRODUCER_EPOCH;
    } else if (!expected || req_epoch == TXN_NO_PRODUCER_EPOCH || req_epoch == m->epoch ||
               m->epoch == TXN_NO_PRODUCER_EPOCH) {
        /* prepareIncrementProducerEpoch (-1 becomes 0); an id with no
         * epoch yet takes any expected epoch, as Kafka's (a client that
         * sends 0/0 on its first call, as @platformatic/kafka does) */
        next_epoch = (int16_t)(m->epoch + 1);
        last_epoch = expected ? m->epoch : TXN_NO_PRODUCER_EPOCH;
    } else if (req_epoch == m->last_epoch) {
        /* a retry of a bump whose answer was lost */
        *action = TXN_INIT_RETRY;
        return 0;
    } else {
        return KERR_PRODUCER_FENCED;
    }
    txn_meta_copy(target, m);
    target->pending = false;
    target->producer_id = pid;
    target->prev_producer_id = prev;
    target->epoch = next_epoch;
    target->last_epoch = last_epoch;
    target->timeout_ms = timeout_ms;
    target->state = TXN_EMPTY;
    clear_parts(target);
    target->start_ts = -1;
    target->update_ts = now;
    return 0;
}

/* ------------------------------------------------------------------ */
/* AddPartitionsToTxn, EndTxn, completion                              */

int16_t txn_prepare_add(const struct txn_meta *m, int64_t pid, int16_t epoch, int32_t n, const kstr_t *topics,
                        const int32_t *partitions, int64_t now, struct txn_meta *target, bool *write)
{
    *write = false;
    if (pid != m->producer_id)
        return KERR_INVALID_PRODUCER_ID_MAPPING;
    if (epoch != m->epoch)
        return KERR_PRODUCER_FENCED;
    if (m->pending || m->state == TXN_PREPARE_COMMIT || m->state == TXN_PREPARE_ABORT)
        return KERR_CONCURRENT_TRANSACTIONS;
    if (m->state == TXN_DEAD || m->state == TXN_PREPARE_EPOCH_FENCE)
        return KERR_CONCURRENT_TRANSACTIONS;
    if (m->state == TXN_ONGOING) {
        bool all = true;
        for (int32_t i = 0; i < n && all; i++)
            all = txn_meta_has_part(m, topics[i], partitions[i]);
        if (all)
            return 0;
    }
    txn_meta_copy(target, m);
    target->pending = false;
    for (int32_t i = 0; i < n; i++)
        txn_meta_add_part(target, topics[i], partitions[i]);
    if (m->state != TXN_ONGOING)
        target->start_ts = now;
    target->state = TXN_ONGOING;
    target->update_ts = now;
    *write = true;
    return 0;
}

int16_t txn_prepare_end(const struct txn_meta *m, int64_t pid, int16_t epoch, bool commit, int64_t now,
                        struct txn_meta *target, bool *write)
{
    *write = false;
    if (pid != m->producer_id)
        return KERR_INVALID_PRODUCER_ID_MAPPING;
    if (epoch != m->epoch)
        return KERR_PRODUCER_FENCED;
    if (m->pending)
        return KERR_CONCURRENT_TRANSACTIONS;
    switch (m->state) {
    case TXN_ONGOING:
        txn_meta_copy(target, m);
        target->pending = false;
        target->state = commit ? TXN_PREPARE_COMMIT : TXN_PREPARE_ABORT;
        target->update_ts = now;
        *write = true;
        return 0;
    case TXN_COMPLETE_COMMIT:
        return commit ? 0 : KERR_INVALID_TXN_STATE;
    case TXN_COMPLETE_ABORT:
        return commit ? KERR_INVALID_TXN_STATE : 0;
    case TXN_PREPARE_COMMIT:
        return commit ? KERR_CONCURRENT_TRANSACTIONS : KERR_INVALID_TXN_STATE;
    case TXN_PREPARE_ABORT:
        return commit ? KERR_INVALID_TXN_STATE : KERR_CONCURRENT_TRANSACTIONS;
    case TXN_EMPTY:
        return KERR_INVALID_TXN_STATE;
    default: /* Dead, PrepareEpochFence: Kafka's IllegalStateException */
        return KERR_CONCURRENT_TRANSACTIONS;
    }
}

int16_t txn_prepare_fence_abort(const struct txn_meta *m, int64_t now, struct txn_meta *target)
{
    if (m->state != TXN_ONGOING || m->pending)
        return m->pending ? KERR_CONCURRENT_TRANSACTIONS : KERR_INVALID_TXN_STATE;
    txn_meta_copy(target, m);
    target->pending = false;
    /* prepareFenceProducerEpoch: no bump past the last usable epoch */
    if (!txn_epoch_exhausted(m->epoch))
        target->epoch = (int16_t)(m->epoch + 1);
    target->last_epoch = TXN_NO_PRODUCER_EPOCH;
    target->state = TXN_PREPARE_ABORT;
    target->update_ts = now;
    return 0;
}

int16_t txn_prepare_complete(const struct txn_meta *m, int64_t now, struct txn_meta *target)
{
    if (m->state != TXN_PREPARE_COMMIT && m->state != TXN_PREPARE_ABORT)
        return KERR_INVALID_TXN_STATE;
    txn_meta_copy(target, m);
    target->pending = false;
    target->state = m->state == TXN_PREPARE_COMMIT ? TXN_COMPLETE_COMMIT : TXN_COMPLETE_ABORT;
    clear_parts(target);
    target->update_ts = now;
    return 0;
}

bool txn_timed_out(const struct txn_meta *m, int64_t now)
{
    return m->state == TXN_ONGOING && !m->pending && m->start_ts >= 0 && m->start_ts + m->timeout_ms < now;
}

bool txn_expired(const struct txn_meta *m, int64_t expiration_ms, int64_t now)
{
    bool idle = m->state == TXN_EMPTY || m->state == TXN_COMPLETE_COMMIT || m->state == TXN_COMPLETE_ABORT;
    return idle && !m->pending && m->update_ts + expiration_ms <= now;
}

int16_t txn_error_for_version(int16_t err, int16_t api_key, int16_t version)
{
    if (err != KERR_PRODUCER_FENCED)
        return err;
    int16_t first;
    switch (api_key) {
    case KAPI_INIT_PRODUCER_ID:
        first = 4;
        break;
    case KAPI_ADD_PARTITIONS_TO_TXN:
    case KAPI_ADD_OFFSETS_TO_TXN:
    case KAPI_END_TXN:
        first = 2;
        break;
    case KAPI_TXN_OFFSET_COMMIT:
        first = 3;
        break;
    default:
        return err;
    }
    return version < first ? KERR_INVALID_PRODUCER_EPOCH : err;
}
