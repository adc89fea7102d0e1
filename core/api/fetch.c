/* Fetch: consumers and follower replicas read record data. A follower
 * (a replica id in the request) reads up to the log end and its fetch
 * offset moves the high watermark (replica/partition.h); consumers read
 * up to the high watermark.
 *
 * Record bytes are never copied: each partition's answer is a file range
 * of one segment, spliced into the response and sent with sendfile(2).
 * A fetch that finds fewer than min_bytes parks on its worker until data
 * arrives or max_wait_ms passes (Kafka's DelayedFetch). Fetch sessions
 * (KIP-227) let incremental requests and responses carry only changes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/dispatch.h"
#include "api/fetch_session.h"
#include "api/handlers.h"
#include "api/quota_mgr.h"
#include "api/request.h"
#include "auth/authz.h"
#include "broker.h"
#include "config.h"
#include "controller/controller.h"
#include "log/plog.h"
#include "net/park.h"
#include "proto/kerr.h"
#include "replica/partition.h"
#include "replica/repl.h"
#include "util/chgen.h"
#include "util/clock.h"
#include "util/sfile.h"
#include "util/slog.h"

#define ISOLATION_READ_COMMITTED 1

/* One partition of the fetch, in the order the response lists them. */
struct fetch_part {
    kstr_t topic;              /* request (v0-12) or image name */
    kuuid_t topic_id;
    int32_t partition;
    int64_t fetch_offset;
    int32_t max_bytes;
    int32_t current_leader_epoch;
    int32_t last_fetched_epoch; /* v12+: a follower's latest epoch, -1 */
    bool in_request;           /* named in this request (incremental) */
    /* A follower whose log diverged from ours: answered DivergingEpoch
     * (div_epoch, div_end) and no records. */
    bool diverging;
    int32_t div_epoch;
    int64_t div_end;
    int64_t seen_leo;          /* log end at the latest read (replica fetch) */
    int64_t last_hw, last_lso, last_log_start; /* from the session */
    bool answered;
    int32_t sidx;              /* its index in the session (a hint) */

    struct partition *p;       /* ref, NULL when error is set */
    struct partition *kept;    /* the session's (no ref), see fs_partition */
    uint64_t kept_gen;
    uint64_t found_gen;        /* registry generation before the lookup of p */
    int16_t error;             /* resolution error (unknown topic...) */

    /* result of the latest read */
    int16_t rerr;
    int64_t hw, lso, log_start;
    int32_t seen_epoch;        /* partition leader epoch at that read */
    int64_t read_end;          /* next offset after the batches read */
    struct sfile *file;        /* ref, or NULL */
    int64_t file_pos;
    int32_t len;
};

/* A run of the session (struct fs_run) as an incremental consumer fetch
 * planned it: skipped, or walked as op->parts[first .. first + n). */
struct fetch_run {
    bool skipped;
    bool known;                /* the image had its topic: id, slot, gen */
    kuuid_t id;
    uint32_t slot;
    uint64_t gen;              /* chgen_read(slot) before anything was read */
    int32_t first, n;
};

struct fetch_op {
    struct parked pk;          /* first */
    struct request *req;
    struct fetch_part *parts;
    int32_t nparts;
    int32_t session_id;        /* answered in the response */
    bool incremental;
    int32_t min_bytes, max_bytes;
    int8_t isolation;
    int16_t top_error;
    /* A follower's fetch (its replica id; -1 for a consumer): it may read
     * up to the log end, not just the high watermark. */
    int32_t replica_id;
    /* An incremental consumer fetch: the session's runs (nruns of them,
     * in layout), nskipped of them skipped; watching: it counts in
     * chgen_watchers while parked. */
    struct fetch_run *runs;
    int32_t nruns, nskipped;
    uint32_t layout;
    int32_t session_epoch;     /* the session's after the plan */
    bool watching;
};

static void stop_watching(struct fetch_op *op)
{
    if (op->watching) {
        atomic_fetch_sub(&chgen_watchers, 1);
        op->watching = false;
    }
}

/* What a run's walk leaves for the next poll whatever happens: records
 * the client has not fetched yet, or an error (Kafka answers a
 * partition with an error in every response). */
static bool part_pending(const struct fetch_op *op, const struct fetch_part *fp)
{
    if (fp->rerr || fp->diverging)
        return true;
    int64_t limit = op->isolation == ISOLATION_READ_COMMITTED ? fp->lso : fp->hw;
    return fp->fetch_offset < limit;
}

/* A skipped run's topic changed since the plan. */
static bool skipped_changed(const struct fetch_op *op)
{
    for (int32_t i = 0; i < op->nruns; i++)
        if (op->runs[i].skipped && chgen_read(op->runs[i].slot) != op->runs[i].gen)
            return true;
    return false;
}

static void release_reads(struct fetch_op *op)
{
    for (int32_t i = 0; i < op->nparts; i++) {
        if (op->parts[i].file) {
            sfile_unref(op->parts[i].file);
            op->parts[i].file = NULL;
        }
        op->parts[i].len = 0;
    }
}

static void release_parts(struct fetch_op *op)
{
    release_reads(op);
    for (int32_t i = 0; i < op->nparts; i++) {
        if (op->parts[i].p) {
            partition_put(op->parts[i].p);
            op->parts[i].p = NULL;
        }
    }
}

/* Reads every partition once. Returns the bytes found; *errors counts
 * partitions answering with an error. */
static int64_t read_all(struct fetch_op *op, int *errors)
{
    int64_t total = 0;
    *errors = 0;
    release_reads(op);
    for (int32_t i = 0; i < op->nparts; i++) {
        struct fetch_part *fp = &op->parts[i];
        fp->rerr = fp->error;
        fp->hw = fp->lso = fp->log_start = -1;
        if (fp->error) {
            (*errors)++;
            continue;
        }
        struct partition *p = fp->p;
        if (atomic_load(&p->deleted)) {
            fp->rerr = KERR_UNKNOWN_TOPIC_OR_PARTITION;
            (*errors)++;
            continue;
        }
        int32_t epoch = atomic_load(&p->leader_epoch);
        fp->seen_epoch = epoch;
        fp->seen_leo = plog_log_end_offset(p->log);
        if ((fp->rerr = repl_epoch_error(fp->current_leader_epoch, epoch)) != 0) {
            (*errors)++;
            continue;
        }
        fp->hw = atomic_load(&p->high_watermark);
        fp->lso = plog_last_stable_offset(p->log, fp->hw);
        fp->log_start = plog_log_start_offset(p->log);
        if (fp->diverging) {
            total += 1; /* answered at once, without records */
            continue;
        }
        /* Followers read up to the log end; consumers up to the HW. */
        int64_t limit = op->replica_id >= 0 ? -1 : op->isolation == ISOLATION_READ_COMMITTED ? fp->lso : fp->hw;
        int64_t room = op->max_bytes - total;
        int32_t want = fp->max_bytes;
        if (room < want)
            want = room > 0 ? (int32_t)room : 0;
        /* KIP-74: the first partition with data may exceed the limits by
         * one batch, so a batch bigger than max bytes never stalls. */
        bool min_one = total == 0;
        if (want <= 0 && !min_one)
            continue;
        struct plog_read_result rr;
        memset(&rr, 0, sizeof rr);
        int err = plog_read(p->log, fp->fetch_offset, want, min_one, limit, &rr);
        if (err) {
            fp->rerr = (int16_t)err;
            (*errors)++;
            continue;
        }
        if (rr.len > 0) {
            fp->file = rr.file;
            fp->file_pos = rr.file_pos;
            fp->len = (int32_t)rr.len;
            fp->read_end = rr.next_offset;
            total += rr.len;
        } else if (rr.file) {
            sfile_unref(rr.file);
        }
    }
    return total;
}

/* An incremental response lists a partition only when it has news. */
static bool must_answer(const struct fetch_op *op, const struct fetch_part *fp)
{
    if (!op->incremental || !fp->answered)
        return true;
    return fp->rerr != 0 || fp->len > 0 || fp->diverging || fp->hw != fp->last_hw || fp->lso != fp->last_lso ||
           fp->log_start != fp->last_log_start;
}

static void respond(struct fetch_op *op)
{
    struct request *req = op->req;
    struct arena *ar = &req->arena;
    int16_t v = req->api_version;
    stop_watching(op);
    fetch_response_t resp;
    fetch_response_init(&resp);
    resp.error_code = op->top_error;
    resp.session_id = op->session_id;

    if (op->replica_id < 0) {
        /* Kafka's fetch quota: the answer's bytes count; a client over its
         * consumer_byte_rate gets an empty answer instead (those bytes
         * taken back: they were not sent) with the time to back off, and
         * its connection is muted that long. The session's partitions
         * stay unanswered, so the next fetch lists them again. */
        int64_t bytes = 0;
        for (int32_t i = 0; i < op->nparts; i++)
            bytes += op->parts[i].len;
        int64_t throttle = bytes > 0 ? quota_record(req, QUOTA_FETCH, (double)bytes) : 0;
        /* and its request_percentage (Kafka: the larger of both; over
         * either, no records and the fetched bytes taken back) */
        int64_t rq = req_request_throttle(req);
        if (throttle > 0 || rq > 0) {
            if (bytes > 0)
                quota_unrecord(req, QUOTA_FETCH, (double)bytes);
            quota_throttle(req, throttle);
            throttle = rq > throttle ? rq : throttle;
            resp.throttle_time_ms = throttle > INT32_MAX ? INT32_MAX : (int32_t)throttle;
            resp.responses.a = NULL;
            resp.responses.n = 0;
            req_respond(req, &resp);
            release_parts(op);
            return;
        }
    }

    /* group consecutive partitions of a topic */
    int32_t ntopics = 0;
    for (int32_t i = 0; i < op->nparts; i++) {
        if (!must_answer(op, &op->parts[i]))
            continue;
        ntopics++;
    }
    resp.responses.a = fetch_response_fetchable_topic_response_new_array(ar, ntopics);
    resp.responses.n = 0;
    fetch_response_fetchable_topic_response_t *cur = NULL;
    const struct fetch_part *prev = NULL;
    for (int32_t i = 0; i < op->nparts; i++) {
        struct fetch_part *fp = &op->parts[i];
        if (!must_answer(op, fp))
            continue;
        bool same = prev && kuuid_eq(&prev->topic_id, &fp->topic_id) && kstr_eq(prev->topic, fp->topic);
        if (!same) {
            cur = &resp.responses.a[resp.responses.n++];
            cur->topic = fp->topic;
            cur->topic_id = fp->topic_id;
            cur->partitions.a = fetch_response_partition_data_new_array(ar, op->nparts - i);
            cur->partitions.n = 0;
        }
        prev = fp;
        fetch_response_partition_data_t *pd = &cur->partitions.a[cur->partitions.n++];
        pd->partition_index = fp->partition;
        pd->error_code = fp->rerr;
        pd->high_watermark = fp->hw;
        pd->last_stable_offset = fp->lso;
        pd->log_start_offset = fp->log_start;
        /* Kafka sends null aborted transactions unless read_committed;
         * then those overlapping the batches returned (UnifiedLog's
         * collectAbortedTransactions over [fetch offset, end of read)),
         * which the client skips. */
        pd->aborted_transactions.n = op->isolation == ISOLATION_READ_COMMITTED && !fp->rerr ? 0 : -1;
        if (pd->aborted_transactions.n == 0 && fp->len > 0 && fp->p) {
            struct plog_aborted_txn *ab;
            size_t nab = plog_aborted_txns(fp->p->log, fp->fetch_offset, fp->read_end, &ab);
            if (nab > 0 && nab <= INT32_MAX) {
                pd->aborted_transactions.a = fetch_response_aborted_transaction_new_array(ar, (int32_t)nab);
                pd->aborted_transactions.n = (int32_t)nab;
                for (size_t k = 0; k < nab; k++) {
                    pd->aborted_transactions.a[k].producer_id = ab[k].producer_id;
                    pd->aborted_transactions.a[k].first_offset = ab[k].first_offset;
                }
            }
            free(ab);
        }
        if (fp->diverging && !fp->rerr) {
            pd->diverging_epoch.epoch = fp->div_epoch;
            pd->diverging_epoch.end_offset = fp->div_end;
        }
        if (fp->len > 0 && fp->p && op->replica_id < 0)
            atomic_fetch_add_explicit(&fp->p->fetched_bytes, (uint64_t)fp->len, memory_order_relaxed);
        if (fp->len > 0)
            pd->records = (krecords_t){NULL, fp->len, fp->file, fp->file_pos};
        else
            pd->records = (krecords_t){NULL, 0, NULL, 0};
        if (fp->rerr == KERR_NOT_LEADER_OR_FOLLOWER || fp->rerr == KERR_FENCED_LEADER_EPOCH) {
            pd->current_leader.leader_id = req->broker->node_id;
            pd->current_leader.leader_epoch = fp->p ? atomic_load(&fp->p->leader_epoch) : -1;
        }
        fp->last_hw = fp->hw;
        fp->last_lso = fp->lso;
        fp->last_log_start = fp->log_start;
        fp->answered = true;
    }
    (void)v;

    /* Remember what the client now knows, for the next incremental. */
    if (op->session_id > 0) {
        struct fetch_session_cache *c = req->broker->fetch_sessions;
        fetch_session_lock(c, op->session_id);
        struct fetch_session *s = fetch_session_find(c, op->session_id);
        if (s) {
            for (int32_t i = 0; i < op->nparts; i++) {
                struct fetch_part *fp = &op->parts[i];
                struct fs_partition *sp = fetch_session_part_at(s, fp->sidx, fp->topic, &fp->topic_id, fp->partition);
                if (!sp)
                    continue;
                sp->last_hw = fp->last_hw;
                sp->last_lso = fp->last_lso;
                sp->last_log_start = fp->last_log_start;
                sp->answered = fp->answered;
                sp->kept = fp->p;
                sp->kept_gen = fp->found_gen;
            }
            /* and, per walked run, what the next poll's skip relies on */
            if (op->runs && !s->runs_stale && s->layout == op->layout && s->nruns == op->nruns) {
                s->isolation = op->isolation;
                for (int32_t r = 0; r < op->nruns; r++) {
                    const struct fetch_run *fr = &op->runs[r];
                    if (fr->skipped)
                        continue;
                    struct fs_run *sr = &s->runs[r];
                    sr->valid = fr->known;
                    sr->topic_id = fr->id;
                    sr->slot = fr->slot;
                    sr->gen = fr->gen;
                    sr->dirty = false;
                    sr->pending = false;
                    for (int32_t j = fr->first; j < fr->first + fr->n && !sr->pending; j++)
                        sr->pending = part_pending(op, &op->parts[j]);
                }
            }
        }
        fetch_session_unlock(c, op->session_id);
    }
    /* req_respond encodes now: the response takes its own file refs. */
    req_respond(req, &resp);
    release_parts(op);
}

/* A parked fetch is woken by any append anywhere. Before reading its
 * partitions again, look at what the last read saw: if no high watermark
 * moved and no partition went away, nothing could have changed the
 * answer (log start moves only below the HW a reader cares about, and
 * epoch changes come with the image and a deleted/moved partition). */
static bool nothing_changed(const struct fetch_op *op)
{
    for (int32_t i = 0; i < op->nparts; i++) {
        const struct fetch_part *fp = &op->parts[i];
        if (!fp->p)
            continue;
        if (atomic_load(&fp->p->deleted) || atomic_load(&fp->p->high_watermark) != fp->hw ||
            atomic_load(&fp->p->leader_epoch) != fp->seen_epoch)
            return false;
        /* read_committed reads up to the LSO, which moves with markers
         * and the HW; a cheap check against what the last read saw. */
        if (op->isolation == ISOLATION_READ_COMMITTED && op->replica_id < 0 &&
            plog_last_stable_offset(fp->p->log, fp->hw) != fp->lso)
            return false;
        if (op->replica_id >= 0 && plog_log_end_offset(fp->p->log) != fp->seen_leo)
            return false;
    }
    return true;
}

static void from_session_part(struct fetch_op *op, struct arena *ar, bool by_id, const struct fetch_session *s,
                              int32_t i, int32_t *k);
static void resolve(struct request *req, struct fetch_op *op, const struct mimage *img, int32_t from);

/* A parked poll whose skipped runs changed: those runs join op->parts
 * (resolved and watched) as if the plan had walked them, so that the
 * poll answers their news itself. Returns false when the session moved
 * on meanwhile (gone, another request, partitions added or forgotten):
 * then the caller answers with what it has. */
static bool expand(struct fetch_op *op)
{
    struct request *req = op->req;
    struct arena *ar = &req->arena;
    struct fetch_session_cache *c = req->broker->fetch_sessions;
    fetch_session_lock(c, op->session_id);
    struct fetch_session *s = fetch_session_find(c, op->session_id);
    if (!s || s->runs_stale || s->layout != op->layout || s->nruns != op->nruns || s->epoch != op->session_epoch) {
        fetch_session_unlock(c, op->session_id);
        return false;
    }
    /* which runs join, decided once: their generation is read before
     * the state their partitions' read will see */
    int32_t add = 0;
    for (int32_t r = 0; r < op->nruns; r++) {
        struct fetch_run *fr = &op->runs[r];
        if (!fr->skipped)
            continue;
        uint64_t now = chgen_read(fr->slot);
        if (now == fr->gen)
            continue;
        fr->gen = now;
        fr->skipped = false;
        fr->first = -1; /* placed below */
        fr->n = s->runs[r].count;
        op->nskipped--;
        add += fr->n;
    }
    struct fetch_part *parts = arena_alloc(ar, (size_t)(op->nparts + add > 0 ? op->nparts + add : 1) * sizeof *parts);
    if (op->nparts > 0)
        memcpy(parts, op->parts, (size_t)op->nparts * sizeof *parts); /* refs move with them */
    op->parts = parts;
    int32_t from = op->nparts, k = op->nparts;
    for (int32_t r = 0; r < op->nruns; r++) {
        struct fetch_run *fr = &op->runs[r];
        if (fr->first != -1)
            continue;
        fr->first = k;
        for (int32_t i = s->runs[r].start; i < s->runs[r].start + fr->n; i++)
            from_session_part(op, ar, req->api_version >= 13, s, i, &k);
    }
    op->nparts = k;
    fetch_session_unlock(c, op->session_id);
    struct mimage *img = controller_image(req->broker->controller);
    resolve(req, op, img, from);
    mimage_release(img);
    /* watched before read_all looks at them */
    for (int32_t i = from; i < op->nparts; i++)
        if (op->parts[i].p)
            park_watch(&op->pk, partition_park_key(op->parts[i].p));
    return true;
}

static bool fetch_try_complete(struct parked *pk, bool expired)
{
    struct fetch_op *op = (struct fetch_op *)pk;
    /* A run the plan skipped changed: it joins the walk (expand), or,
     * when the session moved on, the poll answers now with what it has
     * and the client's next poll walks the run. */
    bool grew = false, now = false;
    if (!expired && skipped_changed(op)) {
        grew = expand(op);
        now = !grew;
    }
    if (!expired && !grew && !now && nothing_changed(op))
        return false;
    int errors;
    int64_t bytes = read_all(op, &errors);
    if (!expired && !now && errors == 0 && bytes < op->min_bytes) {
        release_reads(op);
        return false;
    }
    respond(op);
    return true;
}

static void fetch_cancel(struct request *req)
{
    struct fetch_op *op = req->handler_state;
    park_stop(&op->pk);
    stop_watching(op);
    release_parts(op);
}

/* Resolves names/ids against the image and takes partition refs, for
 * op->parts[from ..]. */
static void resolve(struct request *req, struct fetch_op *op, const struct mimage *img, int32_t from)
{
    bool by_id = req->api_version >= 13;
    /* a follower needs CLUSTER_ACTION on the cluster instead of READ on
     * each topic (Kafka's isFromFollower) */
    bool follower = op->replica_id >= 0;
    bool cluster_action = follower && authz_allowed(req, ACL_OP_CLUSTER_ACTION, ACL_RES_CLUSTER, AUTHZ_CLUSTER_NAME);
    struct partition_registry *reg = req->broker->partitions;
    /* Read before any lookup whose result the session keeps. */
    uint64_t gen = preg_generation(reg);
    /* Partitions the session kept from its last fetch, taken back at
     * once after the loop instead of one map lookup each. */
    int32_t n = op->nparts - from;
    struct partition **kept = arena_alloc(&req->arena, (size_t)(n > 0 ? n : 1) * sizeof *kept); /* [i - from] */
    int32_t nkept = 0;
    /* A request lists a topic's partitions together: the topic and its
     * authorization are looked up once per run (Kafka authorizes each
     * distinct topic once per request). */
    const struct fetch_part *run = NULL;
    const struct mi_topic *run_t = NULL;
    bool run_auth = false;
    for (int32_t i = from; i < op->nparts; i++) {
        struct fetch_part *fp = &op->parts[i];
        kept[i - from] = NULL;
        fp->found_gen = gen;
        bool same = run && (by_id ? kuuid_eq(&run->topic_id, &fp->topic_id) : kstr_eq(run->topic, fp->topic));
        if (!same) {
            run = fp;
            run_auth = false;
            run_t = NULL;
            if (by_id || (follower ? cluster_action : authz_allowed(req, ACL_OP_READ, ACL_RES_TOPIC, fp->topic))) {
                run_auth = true;
                run_t = by_id ? mimage_topic_by_id(img, &fp->topic_id) : mimage_topic(img, fp->topic);
                if (run_t && by_id) {
                    kstr_t nm = {run_t->name, run_t->name_len};
                    run_auth = follower ? cluster_action : authz_allowed(req, ACL_OP_READ, ACL_RES_TOPIC, nm);
                }
            }
        }
        /* Kafka's handleFetchRequest: by name, READ is checked before
         * existence (an unauthorized client learns nothing); by id, an
         * unknown id first */
        if (!by_id && !run_auth) {
            fp->error = KERR_TOPIC_AUTHORIZATION_FAILED;
            continue;
        }
        const struct mi_topic *t = run_t;
        if (!t) {
            fp->error = by_id ? KERR_UNKNOWN_TOPIC_ID : KERR_UNKNOWN_TOPIC_OR_PARTITION;
            continue;
        }
        if (by_id && !run_auth) {
            fp->error = KERR_TOPIC_AUTHORIZATION_FAILED;
            continue;
        }
        if (by_id)
            fp->topic = (kstr_t){arena_strndup(&req->arena, t->name, (size_t)t->name_len), t->name_len};
        else
            fp->topic_id = t->id;
        const struct mi_partition *mp = mi_topic_partition(t, fp->partition);
        if (!mp) {
            fp->error = KERR_UNKNOWN_TOPIC_OR_PARTITION;
            continue;
        }
        if (mp->leader != req->broker->node_id) {
            fp->error = KERR_NOT_LEADER_OR_FOLLOWER;
            continue;
        }
        if (fp->kept && fp->kept_gen == gen) {
            kept[i - from] = fp->kept;
            nkept++;
            continue;
        }
        fp->p = preg_get(reg, &t->id, fp->partition);
        if (!fp->p)
            fp->error = preg_unavailable_error(reg, &t->id, fp->partition);
    }
    if (nkept == 0)
        return;
    preg_get_cached(reg, gen, kept, (size_t)n);
    for (int32_t i = from; i < op->nparts; i++) {
        struct fetch_part *fp = &op->parts[i];
        if (!fp->kept || fp->kept_gen != gen || fp->error || fp->p)
            continue;
        fp->p = kept[i - from];
        if (fp->p)
            continue;
        /* gone or changed since: what a lookup answers now */
        const struct mi_topic *t = by_id ? mimage_topic_by_id(img, &fp->topic_id) : mimage_topic(img, fp->topic);
        fp->p = preg_get(reg, &t->id, fp->partition);
        if (!fp->p)
            fp->error = preg_unavailable_error(reg, &t->id, fp->partition);
    }
}

/* A follower's fetch: for each partition, either its log diverged from
 * ours (Kafka's Partition.fetchRecords: our end of the epoch it last
 * fetched is below its fetch offset, or that epoch is unknown here) and
 * it is told where, or its fetch offset is its log end, which moves the
 * high watermark and its ISR standing. */
static void follower_fetch(struct fetch_op *op)
{
    for (int32_t i = 0; i < op->nparts; i++) {
        struct fetch_part *fp = &op->parts[i];
        if (fp->error || !fp->p)
            continue;
        int32_t epoch = atomic_load(&fp->p->leader_epoch);
        if (fp->current_leader_epoch >= 0 && fp->current_leader_epoch != epoch)
            continue; /* read_all answers the epoch error */
        if (fp->last_fetched_epoch >= 0) {
            int32_t end_epoch;
            int64_t end_offset;
            plog_end_offset_for_epoch(fp->p->log, fp->last_fetched_epoch, &end_epoch, &end_offset);
            if (repl_diverging(fp->last_fetched_epoch, fp->fetch_offset, end_epoch, end_offset)) {
                fp->diverging = true;
                fp->div_epoch = end_epoch;
                fp->div_end = end_offset;
                continue;
            }
        }
        if (fp->fetch_offset > plog_log_end_offset(fp->p->log))
            continue; /* read_all answers OFFSET_OUT_OF_RANGE */
        partition_follower_fetched(fp->p, op->replica_id, fp->fetch_offset);
    }
}

static void fill_from_request_part(struct fetch_part *fp, kstr_t topic, const kuuid_t *topic_id,
                                   const fetch_request_fetch_partition_t *rp)
{
    memset(fp, 0, sizeof *fp);
    fp->topic = topic;
    fp->topic_id = *topic_id;
    fp->partition = rp->partition;
    fp->fetch_offset = rp->fetch_offset;
    fp->max_bytes = rp->partition_max_bytes;
    fp->current_leader_epoch = rp->current_leader_epoch;
    fp->last_fetched_epoch = rp->last_fetched_epoch;
    fp->in_request = true;
    fp->last_hw = fp->last_lso = fp->last_log_start = -1;
}

/* Appends the session's i-th partition to op->parts (at *k). */
static void from_session_part(struct fetch_op *op, struct arena *ar, bool by_id, const struct fetch_session *s,
                              int32_t i, int32_t *k)
{
    const struct fs_partition *sp = &s->parts[i];
    struct fetch_part *fp = &op->parts[*k];
    memset(fp, 0, sizeof *fp);
    fp->sidx = i;
    /* a topic's partitions follow each other: one copy of its name */
    if (by_id)
        fp->topic = KSTR_LIT("");
    else if (*k > 0 && kstr_eq(op->parts[*k - 1].topic, (kstr_t){sp->topic, sp->topic_len}))
        fp->topic = op->parts[*k - 1].topic;
    else
        fp->topic = kstr_arena(ar, sp->topic);
    fp->topic_id = sp->topic_id;
    fp->partition = sp->partition;
    fp->fetch_offset = sp->fetch_offset;
    fp->max_bytes = sp->max_bytes;
    fp->current_leader_epoch = sp->current_leader_epoch;
    fp->last_fetched_epoch = -1;
    fp->last_hw = sp->last_hw;
    fp->last_lso = sp->last_lso;
    fp->last_log_start = sp->last_log_start;
    fp->answered = sp->answered;
    fp->kept = sp->kept;
    fp->kept_gen = sp->kept_gen;
    (*k)++;
}

/* Builds op->parts from the request and, for sessions, the session.
 * Returns a top-level error code (0 when fine). */
static int16_t plan(struct request *req, struct fetch_op *op, const fetch_request_t *q, const struct mimage *img)
{
    struct arena *ar = &req->arena;
    bool by_id = req->api_version >= 13;
    int32_t nreq = 0;
    for (int32_t t = 0; t < q->topics.n; t++)
        nreq += q->topics.a[t].partitions.n;

    int32_t sid = req->api_version >= 7 ? q->session_id : 0;
    int32_t sepoch = req->api_version >= 7 ? q->session_epoch : FETCH_SESSION_FINAL_EPOCH;
    bool full = sepoch == FETCH_SESSION_INITIAL_EPOCH || sepoch == FETCH_SESSION_FINAL_EPOCH;
    struct fetch_session_cache *c = req->broker->fetch_sessions;
    int64_t now = clock_mono_ms();

    if (full) {
        op->parts = arena_alloc(ar, (size_t)(nreq > 0 ? nreq : 1) * sizeof *op->parts);
        int32_t k = 0;
        for (int32_t t = 0; t < q->topics.n; t++) {
            const fetch_request_fetch_topic_t *ft = &q->topics.a[t];
            for (int32_t i = 0; i < ft->partitions.n; i++, k++) {
                fill_from_request_part(&op->parts[k], by_id ? KSTR_LIT("") : ft->topic, &ft->topic_id,
                                       &ft->partitions.a[i]);
                op->parts[k].sidx = k; /* a new session lists them in this order */
            }
        }
        op->nparts = k;
        if (sid > 0) {
            fetch_session_lock(c, sid);
            struct fetch_session *old = fetch_session_find(c, sid);
            if (old)
                fetch_session_remove(c, old);
            fetch_session_unlock(c, sid);
        }
        if (sepoch == FETCH_SESSION_INITIAL_EPOCH && req->api_version >= 7) {
            struct fetch_session *s = fetch_session_new(c, by_id, op->replica_id >= 0, op->nparts, now);
            if (s) {
                op->session_id = s->id;
                for (int32_t i = 0; i < op->nparts; i++) {
                    struct fetch_part *fp = &op->parts[i];
                    struct fs_partition *sp = fetch_session_part(s, fp->topic, &fp->topic_id, fp->partition, true);
                    sp->fetch_offset = fp->fetch_offset;
                    sp->max_bytes = fp->max_bytes;
                    sp->current_leader_epoch = fp->current_leader_epoch;
                }
                fetch_session_unlock(c, s->id);
            }
        }
        return 0;
    }

    /* incremental */
    fetch_session_lock(c, sid);
    struct fetch_session *s = fetch_session_find(c, sid);
    if (!s) {
        fetch_session_unlock(c, sid);
        return KERR_FETCH_SESSION_ID_NOT_FOUND;
    }
    if (s->epoch != sepoch) {
        fetch_session_unlock(c, sid);
        return KERR_INVALID_FETCH_SESSION_EPOCH;
    }
    if (s->uses_topic_ids != by_id) {
        fetch_session_unlock(c, sid);
        return KERR_FETCH_SESSION_TOPIC_ID_ERROR;
    }
    for (int32_t t = 0; t < q->topics.n; t++) {
        const fetch_request_fetch_topic_t *ft = &q->topics.a[t];
        for (int32_t i = 0; i < ft->partitions.n; i++) {
            const fetch_request_fetch_partition_t *rp = &ft->partitions.a[i];
            struct fs_partition *sp = fetch_session_part(s, ft->topic, &ft->topic_id, rp->partition, true);
            sp->fetch_offset = rp->fetch_offset;
            sp->max_bytes = rp->partition_max_bytes;
            sp->current_leader_epoch = rp->current_leader_epoch;
            fetch_session_part_changed(s, sp);
        }
    }
    for (int32_t t = 0; t < q->forgotten_topics_data.n; t++) {
        const fetch_request_forgotten_topic_t *ft = &q->forgotten_topics_data.a[t];
        for (int32_t i = 0; i < ft->partitions.n; i++)
            fetch_session_forget(s, ft->topic, &ft->topic_id, ft->partitions.a[i]);
    }
    s->epoch = fetch_session_next_epoch(s->epoch);
    fetch_session_touch(c, s, now);
    op->session_id = s->id;
    op->incremental = true;
    /* A consumer's poll skips the runs of the session where nothing
     * happened since the last poll that answered them (util/chgen.h):
     * an empty poll then costs a look per chunk of CHGEN_CHUNK
     * partitions and per topic, not the state of every partition.
     * Followers walk everything: their fetch offsets move the high
     * watermark and their ISR standing on every poll. */
    int32_t nwalk = s->nparts;
    if (op->replica_id < 0 && !s->privileged) {
        fetch_session_runs_build(s);
        op->layout = s->layout;
        op->nruns = s->nruns;
        op->runs = arena_alloc(ar, (size_t)(s->nruns > 0 ? s->nruns : 1) * sizeof *op->runs);
        nwalk = 0;
        /* the topic and its authorization once per topic, not per run */
        const struct fs_partition *tp = NULL;
        const struct mi_topic *t = NULL;
        int readable = -1; /* not asked yet */
        for (int32_t r = 0; r < s->nruns; r++) {
            const struct fs_run *sr = &s->runs[r];
            const struct fs_partition *sp = &s->parts[sr->start];
            struct fetch_run *fr = &op->runs[r];
            memset(fr, 0, sizeof *fr);
            if (!tp || !(by_id ? kuuid_eq(&tp->topic_id, &sp->topic_id)
                               : (tp->topic_len == sp->topic_len &&
                                  memcmp(tp->topic, sp->topic, (size_t)sp->topic_len) == 0))) {
                tp = sp;
                t = by_id ? mimage_topic_by_id(img, &sp->topic_id)
                          : mimage_topic(img, (kstr_t){sp->topic, sp->topic_len});
                readable = -1;
            }
            if (t) {
                fr->known = true;
                fr->id = t->id;
                fr->slot = chgen_slot_of(t->id.b, chgen_chunk_of(sp->partition));
                fr->gen = chgen_read(fr->slot); /* before anything is read */
            }
            fr->skipped = t && fetch_session_run_unchanged(s, sr, op->isolation, &t->id, fr->gen);
            if (fr->skipped && readable < 0)
                readable = authz_allowed(req, ACL_OP_READ, ACL_RES_TOPIC, (kstr_t){t->name, t->name_len});
            fr->skipped = fr->skipped && readable > 0;
            if (fr->skipped)
                op->nskipped++;
            else
                nwalk += sr->count;
        }
    }
    op->parts = arena_alloc(ar, (size_t)(nwalk > 0 ? nwalk : 1) * sizeof *op->parts);
    int32_t k = 0;
    if (!op->runs)
        for (int32_t i = 0; i < s->nparts; i++)
            from_session_part(op, ar, by_id, s, i, &k);
    for (int32_t r = 0; r < op->nruns; r++) {
        const struct fs_run *sr = &s->runs[r];
        op->runs[r].first = k;
        op->runs[r].n = op->runs[r].skipped ? 0 : sr->count;
        for (int32_t i = sr->start; i < sr->start + op->runs[r].n; i++)
            from_session_part(op, ar, by_id, s, i, &k);
    }
    op->nparts = k;
    op->session_epoch = s->epoch;
    fetch_session_unlock(c, sid);
    return 0;
}

void api_handle_fetch(struct request *req)
{
    const fetch_request_t *q = req->body;
    struct fetch_op *op = arena_alloc(&req->arena, sizeof *op);
    op->req = req;
    op->min_bytes = q->min_bytes;
    op->max_bytes = req->api_version >= 3 ? q->max_bytes : INT32_MAX;
    if (op->max_bytes <= 0)
        op->max_bytes = INT32_MAX;
    op->replica_id = req->api_version >= 15 ? q->replica_state.replica_id : q->replica_id;
    if (op->replica_id < 0) {
        /* Kafka's KafkaApis: a consumer's fetch.max.bytes is capped by the
         * broker's (followers use replica.fetch.response.max.bytes) */
        const struct samsa_config *cfg = req->broker->cfg;
        if (cfg->fetch_max_bytes > 0 && op->max_bytes > cfg->fetch_max_bytes)
            op->max_bytes = cfg->fetch_max_bytes;
        /* and by what its fetch quota lets through in the quota's window
         * (Kafka's getMaxValueInQuotaWindow), so that one answer never
         * exceeds what the quota could ever let through */
        int64_t qmax = quota_max_in_window(req, QUOTA_FETCH);
        if (qmax < op->max_bytes)
            op->max_bytes = qmax > 1 ? (int32_t)qmax : 1;
        if (op->min_bytes > op->max_bytes)
            op->min_bytes = op->max_bytes;
    }
    op->isolation = req->api_version >= 4 ? q->isolation_level : 0;
    if (op->replica_id < 0)
        op->replica_id = -1;

    struct mimage *img = controller_image(req->broker->controller);
    op->top_error = plan(req, op, q, img);
    if (op->top_error) {
        mimage_release(img);
        fetch_response_t resp;
        fetch_response_init(&resp);
        resp.error_code = op->top_error;
        resp.session_id = 0;
        req_respond(req, &resp);
        return;
    }
    resolve(req, op, img, 0);
    mimage_release(img);
    if (op->replica_id >= 0)
        follower_fetch(op);

    req->handler_state = op;
    int errors;
    int64_t bytes = read_all(op, &errors);
    if (errors > 0 || bytes >= op->min_bytes || q->max_wait_ms <= 0 || (op->nparts == 0 && op->nskipped == 0)) {
        respond(op);
        return;
    }
    release_reads(op);
    req->cancel = fetch_cancel;
    park_init(&op->pk, req, fetch_try_complete);
    for (int32_t i = 0; i < op->nparts; i++)
        if (op->parts[i].p)
            park_watch(&op->pk, partition_park_key(op->parts[i].p));
    /* The skipped runs: a key per topic, announced by its partitions'
     * changes while anyone counts in chgen_watchers (counted before the
     * watches and park_start's check: a change that saw no watcher was
     * bumped before that check, which then sees it). */
    if (op->nskipped > 0) {
        atomic_fetch_add(&chgen_watchers, 1);
        op->watching = true;
        const kuuid_t *last = NULL;
        for (int32_t r = 0; r < op->nruns; r++) {
            const struct fetch_run *fr = &op->runs[r];
            if (!fr->skipped || (last && kuuid_eq(last, &fr->id)))
                continue;
            park_watch(&op->pk, chgen_park_key(fr->id.b));
            last = &fr->id;
        }
    }
    park_start(&op->pk, q->max_wait_ms);
}
