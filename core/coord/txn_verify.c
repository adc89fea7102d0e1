/* KIP-890 verification from the partition leader (see txn_verify.h). */
#include "coord/txn_verify.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "controller/controller.h"
#include "coord/records.h"
#include "coord/txn_coord.h"
#include "coord/txn_log.h"
#include "coord/txn_markers_send.h"
#include "net/kclient.h"
#include "net/park.h"
#include "proto/gen/add_partitions_to_txn_request.h"
#include "proto/gen/add_partitions_to_txn_response.h"
#include "proto/kerr.h"
#include "util/arena.h"
#include "util/slog.h"

/* AddPartitionsToTxn v4 is the first with VerifyOnly. */
#define VERIFY_VERSION_MIN 4
#define VERIFY_VERSION_MAX 5

struct txn_verify {
    _Atomic int refs;
    atomic_bool done;
    struct txn_coord *tc;
    char *tid; /* owned */
    int32_t tid_len;
    int64_t pid;
    int16_t epoch;
    int32_t n;
    char **topics; /* owned */
    int32_t *parts;
    int16_t *errs; /* the coordinator's, as the manager maps them */
};

static void job_unref(struct txn_verify *v)
{
    if (atomic_fetch_sub(&v->refs, 1) != 1)
        return;
    for (int32_t i = 0; i < v->n; i++)
        free(v->topics[i]);
    free(v->topics);
    free(v->parts);
    free(v->errs);
    free(v->tid);
    free(v);
}

/* On the sender's thread: the answer is in; wake the produce request. */
static void finish(struct txn_verify *v)
{
    atomic_store_explicit(&v->done, true, memory_order_release);
    if (txn_coord_env(v->tc)->wake)
        park_notify(txn_coord_env(v->tc)->wake, park_key_object(v));
    job_unref(v);
}

static void set_all(struct txn_verify *v, int16_t err)
{
    for (int32_t i = 0; i < v->n; i++)
        v->errs[i] = err;
}

/* AddPartitionsToTxnManager's completion handler. */
static void on_answer(void *ctx, int err, int16_t version, void *resp, struct arena *ar)
{
    (void)version;
    (void)ar;
    struct txn_verify *v = ctx;
    if (err == KERR_UNSUPPORTED_VERSION) {
        /* a coordinator without verification: the append goes ahead */
        set_all(v, 0);
    } else if (err) {
        set_all(v, KERR_NETWORK_EXCEPTION);
    } else {
        const add_partitions_to_txn_response_t *r = resp;
        if (r->error_code) {
            /* the client must not hear CLUSTER_AUTHORIZATION_FAILED */
            set_all(v, r->error_code == KERR_CLUSTER_AUTHORIZATION_FAILED ? KERR_INVALID_TXN_STATE : r->error_code);
        } else {
            set_all(v, 0);
            for (int32_t t = 0; t < r->results_by_transaction.n; t++) {
                const add_partitions_to_txn_response_add_partitions_to_txn_result_t *tr =
                    &r->results_by_transaction.a[t];
                if (!kstr_eq(tr->transactional_id, (kstr_t){v->tid, v->tid_len}))
                    continue;
                for (int32_t j = 0; j < tr->topic_results.n; j++) {
                    const add_partitions_to_txn_response_add_partitions_to_txn_topic_result_t *top =
                        &tr->topic_results.a[j];
                    for (int32_t k = 0; k < top->results_by_partition.n; k++) {
                        const add_partitions_to_txn_response_add_partitions_to_txn_partition_result_t *pr =
                            &top->results_by_partition.a[k];
                        int16_t e = pr->partition_error_code;
                        if (e == KERR_PRODUCER_FENCED)
                            e = KERR_INVALID_PRODUCER_EPOCH; /* what producers expect here */
                        else if (e == KERR_TRANSACTION_ABORTABLE)
                            e = KERR_INVALID_TXN_STATE; /* clients before transactions V2 */
                        for (int32_t i = 0; i < v->n; i++)
                            if (v->parts[i] == pr->partition_index && kstr_eqc(top->name, v->topics[i]))
                                v->errs[i] = e;
                    }
                }
            }
        }
    }
    finish(v);
}

/* On the sender's thread: send the verification to the coordinator. */
static void send_verify(void *arg)
{
    struct txn_verify *v = arg;
    struct txn_sender *s = txn_coord_sender(v->tc);
    struct mimage *img = controller_image(txn_coord_env(v->tc)->controller);
    const struct mi_topic *t = mimage_topic(img, KSTR_LIT(TXN_STATE_TOPIC));
    const struct mi_partition *mp =
        t && t->npartitions > 0 ? mi_topic_partition(t, coord_partition_for((kstr_t){v->tid, v->tid_len},
                                                                            t->npartitions))
                                : NULL;
    struct kclient *kc = mp && mp->leader >= 0 ? txn_sender_client(s, img, mp->leader) : NULL;
    mimage_release(img);
    if (!kc) {
        set_all(v, KERR_COORDINATOR_NOT_AVAILABLE);
        finish(v);
        return;
    }
    int16_t ver = kclient_version(kc, ADD_PARTITIONS_TO_TXN_REQUEST_API_KEY, VERIFY_VERSION_MAX);
    if (ver >= 0 && ver < VERIFY_VERSION_MIN) {
        set_all(v, 0); /* Kafka skips verification with such a coordinator */
        finish(v);
        return;
    }
    if (ver < 0)
        ver = VERIFY_VERSION_MIN; /* not connected yet: checked once it is */
    struct arena ar;
    arena_init(&ar);
    add_partitions_to_txn_request_t q;
    add_partitions_to_txn_request_init(&q);
    q.transactions.a = add_partitions_to_txn_request_add_partitions_to_txn_transaction_new_array(&ar, 1);
    q.transactions.n = 1;
    add_partitions_to_txn_request_add_partitions_to_txn_transaction_t *tx = &q.transactions.a[0];
    tx->transactional_id = (kstr_t){v->tid, v->tid_len};
    tx->producer_id = v->pid;
    tx->producer_epoch = v->epoch;
    tx->verify_only = true;
    /* one topic entry per partition: the coordinator groups by name */
    tx->topics.a = add_partitions_to_txn_request_add_partitions_to_txn_topic_new_array(&ar, v->n);
    tx->topics.n = v->n;
    for (int32_t i = 0; i < v->n; i++) {
        tx->topics.a[i].name = KSTR(v->topics[i]);
        tx->topics.a[i].partitions.a = &v->parts[i];
        tx->topics.a[i].partitions.n = 1;
    }
    if (kclient_send(kc, ADD_PARTITIONS_TO_TXN_REQUEST_API_KEY, ver, &q, on_answer, v) != 0) {
        set_all(v, KERR_NETWORK_EXCEPTION);
        finish(v);
    }
    arena_free(&ar);
}

struct txn_verify *txn_verify_start(struct txn_coord *tc, kstr_t tid, int64_t pid, int16_t epoch, int32_t n,
                                    const kstr_t *topics, const int32_t *partitions)
{
    struct txn_verify *v = xcalloc(1, sizeof *v);
    atomic_init(&v->refs, 2); /* the caller's and the request's */
    atomic_init(&v->done, false);
    v->tc = tc;
    v->tid_len = tid.len > 0 ? tid.len : 0;
    v->tid = xmalloc((size_t)v->tid_len + 1);
    if (v->tid_len)
        memcpy(v->tid, tid.p, (size_t)v->tid_len);
    v->tid[v->tid_len] = 0;
    v->pid = pid;
    v->epoch = epoch;
    v->n = n;
    v->topics = xcalloc((size_t)(n ? n : 1), sizeof *v->topics);
    v->parts = xcalloc((size_t)(n ? n : 1), sizeof *v->parts);
    v->errs = xcalloc((size_t)(n ? n : 1), sizeof *v->errs);
    for (int32_t i = 0; i < n; i++) {
        int32_t tl = topics[i].len > 0 ? topics[i].len : 0;
        v->topics[i] = xmalloc((size_t)tl + 1);
        if (tl)
            memcpy(v->topics[i], topics[i].p, (size_t)tl);
        v->topics[i][tl] = 0;
        v->parts[i] = partitions[i];
    }
    struct txn_sender *s = tc ? txn_coord_sender(tc) : NULL;
    if (!s || !txn_sender_run(s, send_verify, v)) {
        set_all(v, KERR_COORDINATOR_NOT_AVAILABLE);
        atomic_store_explicit(&v->done, true, memory_order_release);
        job_unref(v);
    }
    return v;
}

bool txn_verify_done(const struct txn_verify *v)
{
    return atomic_load_explicit(&v->done, memory_order_acquire);
}

int16_t txn_verify_error(const struct txn_verify *v, int32_t i)
{
    int16_t e = v->errs[i];
    switch (e) {
    /* ReplicaManager: retriable for every client, without a metadata
     * refresh */
    case KERR_CONCURRENT_TRANSACTIONS:
    case KERR_NETWORK_EXCEPTION:
    case KERR_COORDINATOR_LOAD_IN_PROGRESS:
    case KERR_COORDINATOR_NOT_AVAILABLE:
    case KERR_NOT_COORDINATOR:
        return KERR_NOT_ENOUGH_REPLICAS;
    default:
        return e;
    }
}

void txn_verify_release(struct txn_verify *v)
{
    if (v)
        job_unref(v);
}
