/* Deterministic simulation of a KRaft quorum (core/raft) under faults.
 *
 * Each seeded run builds a cluster of 1, 3 or 5 voters (sometimes plus an
 * observer) over in-memory logs (memlog), a fake clock and a fake network,
 * and alternates chaos and calm phases:
 *   chaos: messages dropped, duplicated, delayed and reordered; symmetric
 *          and one-way partitions and heals; crashes that lose the
 *          unflushed tail of the log (sometimes keeping part of it) and
 *          restarts from the persisted quorum state; graceful
 *          resignations; snapshots that cut the log prefix; proposals to
 *          whoever believes it leads;
 *   calm:  everything healed and restarted, a clean network.
 * Checked all along:
 *   - election safety: at most one leader per epoch (ever, across
 *     restarts);
 *   - (offset, epoch) uniqueness: a batch appended anywhere with the same
 *     base offset and epoch as an earlier one has the same bytes (CRC);
 *   - log matching: two logs that hold the same (offset, epoch) agree on
 *     everything before it (all live pairs, every simulated second);
 *   - leader completeness: a node becoming leader holds every committed
 *     batch;
 *   - state-machine safety: every node applies the same batch at each
 *     offset and the same prefix hash after it, including state loaded
 *     from snapshots (downloaded in chunks through FetchSnapshot);
 *   - the node's own invariant counters stay at zero, and no node reports
 *     a protocol error (the network here is faulty but never malicious);
 *   - liveness: in every calm phase a proposal made in that phase commits
 *     within a bound, and every node catches up with what was committed.
 *
 * RAFT_SIM_SEEDS=n runs n seeds (default below), RAFT_SIM_SEED_BASE=b
 * starts at b; RAFT_SIM_SEED=s replays seed s alone with a full trace on
 * stderr. A failing seed prints itself with the replay line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/kcodec.h"
#include "proto/record_batch.h"
#include "raft/memlog.h"
#include "raft/raft.h"
#include "raft/raft_msg.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/hmap.h"

/* Seeds per `make check`: about 15 s on the 2-core dev box; sanitizer
 * builds run about 8x slower, so they get fewer. */
#if defined(__SANITIZE_ADDRESS__)
#define DEFAULT_SEEDS 1000
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DEFAULT_SEEDS 1000
#endif
#endif
#ifndef DEFAULT_SEEDS
#define DEFAULT_SEEDS 5000
#endif
#define MAXN 7
#define OBSERVER_ID 100

#define CALM_MS 12000
#define LIVENESS_MS 9000  /* a proposal made in calm commits by then */
#define CATCHUP_MS 3000   /* nodes hold what was committed this long before calm ends */

/* ------------------------------------------------------------------ */

struct sim;

struct node {
    struct sim *sim;
    int32_t idx;
    int32_t id;
    bool voter;
    bool up;
    uint32_t inc; /* incarnation: bumped at each restart */
    struct memlog log;
    struct raft *r;
    bool has_qs;
    int32_t qs_epoch, qs_leader, qs_voted;
    int64_t applied; /* next offset to apply */
    int64_t last_hw; /* high watermarks only grow (per incarnation) */
    uint64_t hash;   /* prefix hash of what is applied */
    int64_t last_tick;
    int64_t restart_at; /* -1: none pending */
    enum raft_role role;
    int32_t epoch;
};

struct committed {
    bool set;
    int32_t commit_epoch; /* epoch of the leader whose high watermark committed it */
    int32_t epoch;
    uint32_t crc;
    int64_t last;
};

enum ev_kind { EV_MSG, EV_FLUSH };

struct event {
    int64_t at;
    uint64_t seq;
    enum ev_kind kind;
    int32_t to;       /* node index */
    uint32_t to_inc;  /* dropped if the node restarted since */
    /* EV_MSG */
    int32_t from_id;
    enum raft_msg_type type;
    int16_t version;
    int32_t corr;
    bool pre_vote;
    uint8_t *bytes;
    size_t len;
    /* EV_FLUSH */
    struct memlog_flush flush;
};

struct sim {
    uint64_t seed;
    uint64_t rng;
    bool trace;
    int64_t now;
    int32_t n;
    struct node nodes[MAXN];
    int32_t voters[MAXN];
    int32_t nvoters;
    /* network */
    bool link[MAXN][MAXN];
    int32_t drop_pct, dup_pct, delay_min, delay_max;
    int32_t flush_max; /* flush latency 0..flush_max ms (slow disks in chaos) */
    int32_t fetch_max_bytes; /* small values replicate a batch or two at a time */
    struct event *heap;
    int32_t nheap, capheap;
    uint64_t seq;
    /* checks */
    struct committed *com; /* by base offset */
    uint64_t *endhash;     /* prefix hash by end offset; 0 = unknown */
    int64_t ncom;
    int64_t committed_end;
    int32_t *leader_of_epoch;
    int32_t nepochs;
    struct hmap batches; /* (base offset, epoch) -> crc + 1 */
    /* phases */
    bool calm;
    int64_t calm_start;
    int64_t live_at;      /* commit time of a proposal made in this calm, -1 none */
    int64_t catchup_mark; /* committed_end as of calm_end - CATCHUP_MS */
    uint64_t proposals;
    uint64_t counter;
    bool failed;
    char why[600];
    /* totals for the report */
    uint64_t msgs, crashes, snapshots, commits;
    uint64_t elections, leaderships, truncations, downloads; /* from the nodes' stats */
};

static void add_stats(struct sim *s, const struct raft *r)
{
    const struct raft_stats *st = raft_get_stats(r);
    s->elections += st->elections;
    s->leaderships += st->leaderships;
    s->truncations += st->truncations;
    s->downloads += st->snapshots_fetched;
}

static struct sim *cur_sim;

/* ---- helpers ---- */

static uint64_t srnd(struct sim *s)
{
    /* splitmix64 */
    uint64_t z = (s->rng += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static int64_t srange(struct sim *s, int64_t lo, int64_t hi) /* [lo, hi] */
{
    return lo + (int64_t)(srnd(s) % (uint64_t)(hi - lo + 1));
}

static bool chance(struct sim *s, int32_t pct) { return (int32_t)(srnd(s) % 100) < pct; }

__attribute__((format(printf, 2, 3))) static void sim_fail(struct sim *s, const char *fmt, ...)
{
    if (s->failed)
        return;
    s->failed = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->why, sizeof s->why, fmt, ap);
    va_end(ap);
    if (s->trace)
        fprintf(stderr, "%8" PRId64 " FAIL: %s\n", s->now, s->why);
}

__attribute__((format(printf, 2, 3))) static void tracef(struct sim *s, const char *fmt, ...)
{
    if (!s->trace)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%8" PRId64 " sim: ", s->now);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void raft_trace(void *arg, const struct raft *r, const char *line)
{
    struct node *n = arg;
    fprintf(stderr, "%8" PRId64 " n%d[%s e%d]: %s\n", n->sim->now, (int)n->id, raft_role_name(raft_role(r)),
            (int)raft_epoch(r), line);
}

static uint64_t mix(uint64_t h, int64_t base, int32_t epoch, uint32_t crc)
{
    h ^= (uint64_t)base * 0x9E3779B97F4A7C15ULL;
    h = (h << 17 | h >> 47) * 0xBF58476D1CE4E5B9ULL;
    h ^= ((uint64_t)(uint32_t)epoch << 32 | crc);
    h = (h << 29 | h >> 35) * 0x94D049BB133111EBULL;
    return h ? h : 1;
}

static void com_reserve(struct sim *s, int64_t off)
{
    if (off < s->ncom)
        return;
    int64_t n = s->ncom ? s->ncom : 1024;
    while (n <= off)
        n *= 2;
    s->com = xrealloc(s->com, (size_t)n * sizeof *s->com);
    memset(s->com + s->ncom, 0, (size_t)(n - s->ncom) * sizeof *s->com);
    s->endhash = xrealloc(s->endhash, (size_t)(n + 1) * sizeof *s->endhash);
    memset(s->endhash + s->ncom, 0, (size_t)(n + 1 - s->ncom) * sizeof *s->endhash);
    s->ncom = n;
}

/* ---- event heap ---- */

static bool ev_less(const struct event *a, const struct event *b)
{
    return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static void heap_push(struct sim *s, struct event e)
{
    if (s->nheap == s->capheap) {
        s->capheap = s->capheap ? s->capheap * 2 : 256;
        s->heap = xrealloc(s->heap, (size_t)s->capheap * sizeof *s->heap);
    }
    e.seq = s->seq++;
    int32_t i = s->nheap++;
    while (i > 0) {
        int32_t p = (i - 1) / 2;
        if (!ev_less(&e, &s->heap[p]))
            break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = e;
}

static struct event heap_pop(struct sim *s)
{
    struct event top = s->heap[0];
    struct event last = s->heap[--s->nheap];
    int32_t i = 0;
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= s->nheap)
            break;
        if (c + 1 < s->nheap && ev_less(&s->heap[c + 1], &s->heap[c]))
            c++;
        if (!ev_less(&s->heap[c], &last))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->nheap > 0)
        s->heap[i] = last;
    return top;
}

static struct node *node_by_id(struct sim *s, int32_t id)
{
    for (int32_t i = 0; i < s->n; i++)
        if (s->nodes[i].id == id)
            return &s->nodes[i];
    return NULL;
}

/* ---- the log wrapper: every append is checked for (offset, epoch)
 * uniqueness against everything ever appended anywhere ---- */



static const struct raft_log_ops *ML_OPS;
#define ML(c) (&((struct node *)(c))->log)

static int64_t w_start(void *c) { return ML_OPS->start_offset(ML(c)); }
static int64_t w_end(void *c) { return ML_OPS->end_offset(ML(c)); }
static int w_truncate(void *c, int64_t o) { return ML_OPS->truncate_to(ML(c), o); }
static int w_read(void *c, int64_t o, int32_t m, krecords_t *out) { return ML_OPS->read(ML(c), o, m, out); }
static int w_scan(void *c, raft_log_batch_fn fn, void *a) { return ML_OPS->scan(ML(c), fn, a); }
static bool w_latest(void *c, struct raft_snapshot_id *o) { return ML_OPS->latest_snapshot(ML(c), o); }
static bool w_oldest(void *c, struct raft_snapshot_id *o) { return ML_OPS->oldest_snapshot(ML(c), o); }
static int64_t w_ssize(void *c, const struct raft_snapshot_id *id) { return ML_OPS->snapshot_size(ML(c), id); }
static int w_sread(void *c, const struct raft_snapshot_id *id, int64_t pos, int32_t m, krecords_t *out)
{
    return ML_OPS->snapshot_read(ML(c), id, pos, m, out);
}
static int w_sbegin(void *c, const struct raft_snapshot_id *id) { return ML_OPS->snapshot_begin(ML(c), id); }
static int w_sappend(void *c, const struct raft_snapshot_id *id, const uint8_t *p, size_t n)
{
    return ML_OPS->snapshot_append(ML(c), id, p, n);
}
static int w_sfinish(void *c, const struct raft_snapshot_id *id) { return ML_OPS->snapshot_finish(ML(c), id); }
static int w_reset(void *c, const struct raft_snapshot_id *id) { return ML_OPS->reset_start(ML(c), id); }

static int w_append(void *c, const uint8_t *p, size_t len)
{
    struct node *n = c;
    struct sim *s = n->sim;
    int32_t before = n->log.n;
    int rc = ML_OPS->append(ML(c), p, len);
    if (rc != 0) {
        sim_fail(s, "node %d: log refused an append (%d)", (int)n->id, rc);
        return rc;
    }
    for (int32_t i = before; i < n->log.n; i++) {
        const struct memlog_batch *b = &n->log.b[i];
        if (i > 0 && b->epoch < n->log.b[i - 1].epoch)
            sim_fail(s, "node %d: epochs go backwards in the log at %" PRId64, (int)n->id, b->base_offset);
        uint8_t key[12];
        memcpy(key, &b->base_offset, 8);
        memcpy(key + 8, &b->epoch, 4);
        void *v = hmap_get(&s->batches, key, sizeof key);
        uintptr_t want = (uintptr_t)b->crc + 1;
        if (v && (uintptr_t)v != want)
            sim_fail(s, "(offset %" PRId64 ", epoch %d) names two different batches (node %d)", b->base_offset,
                 (int)b->epoch, (int)n->id);
        else if (!v)
            hmap_put(&s->batches, key, sizeof key, (void *)want);
    }
    return 0;
}

static struct raft_log_ops W_OPS = {
    .start_offset = w_start,
    .end_offset = w_end,
    .append = w_append,
    .truncate_to = w_truncate,
    .read = w_read,
    .scan = w_scan,
    .latest_snapshot = w_latest,
    .oldest_snapshot = w_oldest,
    .snapshot_size = w_ssize,
    .snapshot_read = w_sread,
    .snapshot_begin = w_sbegin,
    .snapshot_append = w_sappend,
    .snapshot_finish = w_sfinish,
    .reset_start = w_reset,
};

/* ---- the state machine: applied batches and their prefix hash ---- */

/* The proposal time encoded in a batch's first record (0 for control
 * batches), to tell which proposals belong to the current calm phase. */
static int64_t proposal_time(const struct memlog_batch *b)
{
    struct rb_record_iter it;
    struct rb_record rec;
    if (rb_record_iter_init_batch(&it, b->data, b->len) != 0 || rb_record_next(&it, &rec) != 1)
        return 0;
    struct rb_header h;
    if (rb_parse_header(b->data, b->len, &h) != 0 || rb_is_control(&h))
        return 0;
    if (rec.value.len != 24)
        return 0;
    int64_t t;
    memcpy(&t, rec.value.p + 8, 8);
    return t;
}

static void apply_batch(struct node *n, const struct memlog_batch *b)
{
    struct sim *s = n->sim;
    com_reserve(s, b->last_offset + 1);
    struct committed *c = &s->com[b->base_offset];
    uint64_t h = mix(n->hash, b->base_offset, b->epoch, b->crc);
    if (c->set) {
        if (c->epoch != b->epoch || c->crc != b->crc || c->last != b->last_offset)
            sim_fail(s, "state machine safety: node %d applies (%" PRId64 ", epoch %d) but (%" PRId64 ", epoch %d) was "
                    "committed there",
                 (int)n->id, b->base_offset, (int)b->epoch, c->last, (int)c->epoch);
        else if (s->endhash[b->last_offset + 1] != h)
            sim_fail(s, "state machine safety: node %d has another prefix before offset %" PRId64, (int)n->id,
                 b->base_offset);
    } else {
        c->set = true;
        /* the first node to apply a batch is the leader that committed it
         * (followers learn the high watermark from it) */
        c->commit_epoch = raft_epoch(n->r);
        c->epoch = b->epoch;
        c->crc = b->crc;
        c->last = b->last_offset;
        s->endhash[b->last_offset + 1] = h;
        if (b->last_offset + 1 > s->committed_end)
            s->committed_end = b->last_offset + 1;
        s->commits++;
        int64_t t = proposal_time(b);
        if (s->calm && s->live_at < 0 && t >= s->calm_start && t > 0)
            s->live_at = s->now;
    }
    n->hash = h;
    n->applied = b->last_offset + 1;
}

static void apply_to(struct node *n, int64_t hw)
{
    struct sim *s = n->sim;
    while (n->applied < hw && !s->failed) {
        if (n->applied < n->log.start) {
            sim_fail(s, "node %d: apply position %" PRId64 " below the log start %" PRId64 " without a snapshot",
                 (int)n->id, n->applied, n->log.start);
            return;
        }
        int32_t i = memlog_find(&n->log, n->applied);
        if (i < 0 || n->log.b[i].base_offset != n->applied) {
            sim_fail(s, "node %d: high watermark %" PRId64 " beyond what its log holds at %" PRId64, (int)n->id, hw,
                 n->applied);
            return;
        }
        if (n->log.b[i].last_offset >= hw)
            return;
        apply_batch(n, &n->log.b[i]);
    }
}

/* Snapshot bytes: end offset, prefix hash, then filler derived from the
 * hash, long enough to need several FetchSnapshot chunks. */
static size_t snapshot_build(uint8_t *out, size_t cap, int64_t end, uint64_t hash)
{
    size_t len = 16 + 3000 + (size_t)(hash % 7000);
    if (len > cap)
        len = cap;
    memcpy(out, &end, 8);
    memcpy(out + 8, &hash, 8);
    uint64_t x = hash;
    for (size_t i = 16; i < len; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        out[i] = (uint8_t)(x >> 56);
    }
    return len;
}

static void load_snapshot(struct node *n, const struct raft_snapshot_id *id)
{
    struct sim *s = n->sim;
    const struct memlog_snapshot *ss = memlog_snapshot(&n->log, id);
    if (!ss) {
        sim_fail(s, "node %d: told to load snapshot %" PRId64 " it does not have", (int)n->id, id->end_offset);
        return;
    }
    int64_t end;
    uint64_t hash;
    if (ss->data.len < 16) {
        sim_fail(s, "node %d: short snapshot", (int)n->id);
        return;
    }
    memcpy(&end, ss->data.data, 8);
    memcpy(&hash, ss->data.data + 8, 8);
    static uint8_t want[16 + 3000 + 7000];
    size_t wl = snapshot_build(want, sizeof want, end, hash);
    if (end != id->end_offset || wl != ss->data.len || memcmp(want, ss->data.data, wl) != 0) {
        sim_fail(s, "node %d: snapshot %" PRId64 " arrived corrupted (%zu bytes)", (int)n->id, id->end_offset,
             ss->data.len);
        return;
    }
    com_reserve(s, end);
    if (s->endhash[end] != hash)
        sim_fail(s, "state machine safety: node %d loads a snapshot at %" PRId64 " with another state", (int)n->id, end);
    n->applied = end;
    n->hash = hash;
}

/* ---- checks over logs ---- */

/* Raft's leader completeness: a batch committed in epoch c is in the log
 * of every leader of an epoch above c. (Not of every current leader: one
 * elected by votes delayed in the network may be stale from its first
 * moment, and one cut off keeps leading its old epoch for a while.) */
static void check_leader_completeness(struct node *n)
{
    struct sim *s = n->sim;
    int32_t epoch = raft_epoch(n->r);
    int64_t o = n->log.start;
    /* below the log start the snapshot stands in; its state was checked */
    while (o < s->committed_end && !s->failed) {
        if (o >= s->ncom || !s->com[o].set) {
            sim_fail(s, "checker: committed table has a hole at %" PRId64, o);
            return;
        }
        const struct committed *c = &s->com[o];
        int32_t i = memlog_find(&n->log, o);
        if (c->commit_epoch >= epoch) {
            o = c->last + 1;
            continue;
        }
        if (i < 0 || n->log.b[i].base_offset != o || n->log.b[i].epoch != c->epoch || n->log.b[i].crc != c->crc)
            sim_fail(s, "leader completeness: node %d leads epoch %d without committed batch %" PRId64 " (epoch %d)",
                 (int)n->id, (int)n->epoch, o, (int)c->epoch);
        o = c->last + 1;
    }
}

static void check_log_matching(struct sim *s, struct node *a, struct node *b)
{
    int64_t from = a->log.start > b->log.start ? a->log.start : b->log.start;
    int32_t i = 0, j = 0;
    while (i < a->log.n && a->log.b[i].base_offset < from)
        i++;
    while (j < b->log.n && b->log.b[j].base_offset < from)
        j++;
    bool diverged = false;
    while (i < a->log.n && j < b->log.n) {
        const struct memlog_batch *x = &a->log.b[i], *y = &b->log.b[j];
        if (x->base_offset == y->base_offset) {
            bool same = x->epoch == y->epoch && x->crc == y->crc && x->last_offset == y->last_offset;
            if (x->epoch == y->epoch && !same) {
                sim_fail(s, "log matching: nodes %d and %d hold different batches at (%" PRId64 ", epoch %d)",
                     (int)a->id, (int)b->id, x->base_offset, (int)x->epoch);
                return;
            }
            if (same && diverged) {
                sim_fail(s, "log matching: nodes %d and %d agree at %" PRId64 " after disagreeing before it",
                     (int)a->id, (int)b->id, x->base_offset);
                return;
            }
            if (!same)
                diverged = true;
            i++;
            j++;
        } else {
            diverged = true;
            if (x->base_offset < y->base_offset)
                i++;
            else
                j++;
        }
    }
}

static void check_logs(struct sim *s)
{
    for (int32_t a = 0; a < s->n; a++)
        for (int32_t b = a + 1; b < s->n; b++)
            check_log_matching(s, &s->nodes[a], &s->nodes[b]);
    for (int32_t a = 0; a < s->n; a++) {
        struct node *n = &s->nodes[a];
        if (!n->up)
            continue;
        /* a leader keeps every committed batch for as long as it leads */
        if (raft_role(n->r) == RAFT_LEADER)
            check_leader_completeness(n);
        const struct raft_stats *st = raft_get_stats(n->r);
        if (st->invariant_violations)
            sim_fail(s, "node %d reports %" PRIu64 " invariant violations", (int)n->id, st->invariant_violations);
        if (st->protocol_errors)
            sim_fail(s, "node %d reports %" PRIu64 " protocol errors", (int)n->id, st->protocol_errors);
        if (st->log_errors)
            sim_fail(s, "node %d reports %" PRIu64 " log errors", (int)n->id, st->log_errors);
    }
}

/* ---- node outputs ---- */

static void on_output(void *arg, const struct raft_output *o)
{
    struct node *n = arg;
    struct sim *s = n->sim;
    switch (o->type) {
    case RAFT_OUT_SEND: {
        const struct raft_msg *m = o->u.send.msg;
        struct node *to = node_by_id(s, o->u.send.to);
        if (!to) {
            sim_fail(s, "node %d sends to unknown node %d", (int)n->id, (int)o->u.send.to);
            return;
        }
        struct kwriter w;
        kw_init(&w);
        raft_msg_encode(&w, m);
        int copies = 1;
        if (!s->link[n->idx][to->idx] || chance(s, s->drop_pct))
            copies = 0;
        else if (chance(s, s->dup_pct))
            copies = 2;
        for (int c = 0; c < copies; c++) {
            struct event e = {0};
            e.at = s->now + srange(s, s->delay_min, s->delay_max);
            e.kind = EV_MSG;
            e.to = to->idx;
            e.to_inc = to->inc;
            e.from_id = n->id;
            e.type = m->type;
            e.version = m->version;
            e.corr = m->correlation_id;
            e.pre_vote = m->pre_vote;
            e.len = w.b.len;
            e.bytes = xmalloc(w.b.len ? w.b.len : 1);
            memcpy(e.bytes, w.b.data, w.b.len);
            heap_push(s, e);
        }
        kw_free(&w);
        s->msgs++;
        break;
    }
    case RAFT_OUT_PERSIST:
        n->has_qs = true;
        n->qs_epoch = o->u.persist->leader_epoch;
        n->qs_leader = o->u.persist->leader_id;
        n->qs_voted = o->u.persist->voted_id;
        break;
    case RAFT_OUT_FLUSH: {
        struct event e = {0};
        e.at = s->now + srange(s, 0, s->flush_max);
        e.kind = EV_FLUSH;
        e.to = n->idx;
        e.to_inc = n->inc;
        e.flush = memlog_flush_begin(&n->log);
        heap_push(s, e);
        break;
    }
    case RAFT_OUT_COMMIT:
        if (o->u.commit.high_watermark <= n->last_hw)
            sim_fail(s, "node %d: high watermark went from %" PRId64 " to %" PRId64, (int)n->id, n->last_hw,
                     o->u.commit.high_watermark);
        n->last_hw = o->u.commit.high_watermark;
        apply_to(n, o->u.commit.high_watermark);
        break;
    case RAFT_OUT_LOAD_SNAPSHOT:
        load_snapshot(n, &o->u.load_snapshot);
        break;
    case RAFT_OUT_ROLE:
        n->role = o->u.role.role;
        n->epoch = o->u.role.epoch;
        if (n->role == RAFT_LEADER) {
            int32_t e = n->epoch;
            if (e >= s->nepochs) {
                int32_t ne = s->nepochs ? s->nepochs : 64;
                while (ne <= e)
                    ne *= 2;
                s->leader_of_epoch = xrealloc(s->leader_of_epoch, (size_t)ne * sizeof *s->leader_of_epoch);
                for (int32_t i = s->nepochs; i < ne; i++)
                    s->leader_of_epoch[i] = -1;
                s->nepochs = ne;
            }
            if (s->leader_of_epoch[e] >= 0)
                sim_fail(s, "election safety: node %d leads epoch %d, which node %d led already", (int)n->id, (int)e,
                     (int)s->leader_of_epoch[e]);
            s->leader_of_epoch[e] = n->id;
            if (!n->voter)
                sim_fail(s, "observer %d became leader", (int)n->id);
            check_leader_completeness(n);
        }
        break;
    }
}

/* ---- node lifecycle ---- */

static void node_start(struct sim *s, struct node *n)
{
    struct raft_config cfg;
    raft_config_defaults(&cfg);
    cfg.node_id = n->id;
    cfg.voters = s->voters;
    cfg.nvoters = s->nvoters;
    cfg.cluster_id = "sim-cluster";
    cfg.fetch_max_bytes = s->fetch_max_bytes;
    cfg.random_seed = s->seed * 1000003ULL + n->inc * 7919ULL + (uint64_t)n->id;
    cfg.log = (struct raft_log){&W_OPS, n};
    cfg.output = on_output;
    cfg.output_arg = n;
    quorum_state_data_t qs;
    quorum_state_data_init(&qs);
    qs.leader_epoch = n->qs_epoch;
    qs.leader_id = n->qs_leader;
    qs.voted_id = n->qs_voted;
    int rc = raft_create(&cfg, n->has_qs ? &qs : NULL, &n->r);
    if (rc != 0) {
        sim_fail(s, "node %d: raft_create failed (%d)", (int)n->id, rc);
        return;
    }
    if (s->trace)
        raft_set_trace(n->r, raft_trace, n);
    n->up = true;
    n->role = raft_role(n->r);
    n->epoch = raft_epoch(n->r);
    n->last_tick = -1;
    n->restart_at = -1;
    n->last_hw = -1;
    /* the state machine restarts from the newest local snapshot */
    struct raft_snapshot_id id;
    n->applied = 0;
    n->hash = 0;
    if (ML_OPS->latest_snapshot(&n->log, &id))
        load_snapshot(n, &id);
}

static void node_crash(struct sim *s, struct node *n)
{
    if (!n->up)
        return;
    tracef(s, "crash node %d", (int)n->id);
    add_stats(s, n->r);
    raft_destroy(n->r);
    n->r = NULL;
    n->up = false;
    n->inc++;
    memlog_crash(&n->log, chance(s, 30) ? (int32_t)srange(s, 1, 3) : 0);
    n->role = RAFT_UNATTACHED;
    s->crashes++;
}

static void node_tick(struct sim *s, struct node *n)
{
    if (!n->up || n->last_tick == s->now)
        return;
    n->last_tick = s->now;
    raft_tick(n->r, s->now);
}

/* ---- chaos ---- */

static void heal(struct sim *s)
{
    for (int32_t a = 0; a < MAXN; a++)
        for (int32_t b = 0; b < MAXN; b++)
            s->link[a][b] = true;
}

static void chaos_step(struct sim *s)
{
    int64_t k = srange(s, 0, 99);
    if (k < 14) {
        struct node *n = &s->nodes[srange(s, 0, s->n - 1)];
        if (n->up) {
            node_crash(s, n);
            n->restart_at = s->now + srange(s, 100, 4000);
        }
    } else if (k < 18) {
        /* correlated failure (a rack loses power): several nodes at once,
         * each losing its unflushed tail */
        tracef(s, "power failure");
        for (int32_t i = 0; i < s->n; i++) {
            struct node *n = &s->nodes[i];
            if (n->up && chance(s, 60)) {
                node_crash(s, n);
                n->restart_at = s->now + srange(s, 50, 2000);
            }
        }
    } else if (k < 22) {
        s->flush_max = chance(s, 50) ? (int32_t)srange(s, 50, 500) : 15;
        tracef(s, "flush latency up to %d ms", (int)s->flush_max);
    } else if (k < 24) {
        int32_t x = (int32_t)srange(s, 0, s->n - 1);
        tracef(s, "isolate node %d", (int)s->nodes[x].id);
        for (int32_t b = 0; b < s->n; b++)
            if (b != x)
                s->link[x][b] = s->link[b][x] = false;
    } else if (k < 34) {
        bool side[MAXN];
        for (int32_t a = 0; a < s->n; a++)
            side[a] = chance(s, 50);
        tracef(s, "split partition");
        for (int32_t a = 0; a < s->n; a++)
            for (int32_t b = 0; b < s->n; b++)
                if (side[a] != side[b])
                    s->link[a][b] = false;
    } else if (k < 44) {
        int32_t a = (int32_t)srange(s, 0, s->n - 1), b = (int32_t)srange(s, 0, s->n - 1);
        tracef(s, "cut %d -> %d", (int)s->nodes[a].id, (int)s->nodes[b].id);
        s->link[a][b] = false;
    } else if (k < 60) {
        tracef(s, "heal");
        heal(s);
    } else if (k < 72) {
        s->drop_pct = (int32_t)srange(s, 0, 30);
        s->dup_pct = (int32_t)srange(s, 0, 10);
        s->delay_min = (int32_t)srange(s, 1, 5);
        s->delay_max = s->delay_min + (int32_t)(chance(s, 20) ? srange(s, 100, 800) : srange(s, 0, 40));
        tracef(s, "network drop=%d%% dup=%d%% delay=%d..%d", (int)s->drop_pct, (int)s->dup_pct, (int)s->delay_min,
               (int)s->delay_max);
    } else if (k < 78) {
        for (int32_t i = 0; i < s->n; i++) {
            struct node *n = &s->nodes[i];
            if (n->up && n->role == RAFT_LEADER) {
                tracef(s, "node %d resigns", (int)n->id);
                raft_resign(n->r, n->epoch);
                n->role = raft_role(n->r);
            }
        }
    }
    /* else: quiet */
}

static void maybe_snapshot(struct sim *s, struct node *n)
{
    if (!n->up || n->applied <= n->log.start || n->applied < 1)
        return;
    struct raft_snapshot_id id;
    if (raft_snapshot_id_at(n->r, n->applied, &id) != 0)
        return;
    static uint8_t buf[16 + 3000 + 7000];
    size_t len = snapshot_build(buf, sizeof buf, n->applied, n->hash);
    if (memlog_write_snapshot(&n->log, &id, buf, len) != 0) {
        sim_fail(s, "node %d: cannot write a snapshot", (int)n->id);
        return;
    }
    int rc = raft_snapshot_done(n->r, &id);
    if (rc != 0)
        sim_fail(s, "node %d: raft_snapshot_done(%" PRId64 ") = %d", (int)n->id, id.end_offset, rc);
    tracef(s, "node %d snapshot at %" PRId64, (int)n->id, id.end_offset);
    s->snapshots++;
}

static void propose(struct sim *s)
{
    for (int32_t i = 0; i < s->n; i++) {
        struct node *n = &s->nodes[i];
        if (!n->up || raft_role(n->r) != RAFT_LEADER)
            continue;
        uint8_t v[24];
        uint64_t c = ++s->counter;
        memcpy(v, &s->seed, 8);
        memcpy(v + 8, &s->now, 8);
        memcpy(v + 16, &c, 8);
        kbytes_t kb = {v, 24};
        int64_t off = raft_propose(n->r, raft_epoch(n->r), &kb, 1, s->now);
        if (off >= 0)
            s->proposals++;
    }
}

/* ---- one run ---- */

static void sim_free(struct sim *s)
{
    for (int32_t i = 0; i < s->n; i++) {
        raft_destroy(s->nodes[i].r);
        memlog_free(&s->nodes[i].log);
    }
    for (int32_t i = 0; i < s->nheap; i++)
        free(s->heap[i].bytes);
    free(s->heap);
    free(s->com);
    free(s->endhash);
    free(s->leader_of_epoch);
    hmap_free(&s->batches);
}

static void deliver(struct sim *s, struct event *e)
{
    struct node *n = &s->nodes[e->to];
    if (e->kind == EV_FLUSH) {
        if (n->up && n->inc == e->to_inc) {
            node_tick(s, n);
            raft_flushed(n->r, memlog_flush_end(&n->log, e->flush));
        }
        return;
    }
    struct node *from = node_by_id(s, e->from_id);
    /* TCP: a connection dies with either end, so a message to a node that
     * restarted since it was sent is lost; a partition that started while
     * it was in flight loses it too */
    if (!n->up || n->inc != e->to_inc || !s->link[from->idx][n->idx]) {
        free(e->bytes);
        return;
    }
    struct arena ar;
    arena_init(&ar);
    struct raft_msg m;
    if (raft_msg_decode(&m, e->type, e->version, e->corr, e->pre_vote, e->bytes, e->len, &ar) != 0) {
        sim_fail(s, "cannot decode a %s sent by node %d", raft_msg_type_name(e->type), (int)e->from_id);
    } else {
        node_tick(s, n);
        raft_receive(n->r, e->from_id, &m);
    }
    arena_free(&ar);
    free(e->bytes);
}

static void run_until(struct sim *s, int64_t end, int64_t *next_chaos, int64_t *next_prop, int64_t *next_snap,
                      int64_t *next_check)
{
    while (!s->failed) {
        int64_t t = end;
        if (s->nheap > 0 && s->heap[0].at < t)
            t = s->heap[0].at;
        for (int32_t i = 0; i < s->n; i++) {
            struct node *n = &s->nodes[i];
            if (n->up) {
                int64_t d = raft_next_deadline(n->r);
                if (d <= n->last_tick)
                    d = n->last_tick + 1;
                if (d < t)
                    t = d;
            } else if (n->restart_at >= 0 && n->restart_at < t) {
                t = n->restart_at;
            }
        }
        if (!s->calm && *next_chaos < t)
            t = *next_chaos;
        if (*next_prop < t)
            t = *next_prop;
        if (*next_snap < t)
            t = *next_snap;
        if (*next_check < t)
            t = *next_check;
        if (t < s->now)
            t = s->now;
        if (t >= end && s->now >= end)
            break;
        s->now = t;
        while (s->nheap > 0 && s->heap[0].at <= s->now && !s->failed) {
            struct event e = heap_pop(s);
            deliver(s, &e);
        }
        for (int32_t i = 0; i < s->n && !s->failed; i++) {
            struct node *n = &s->nodes[i];
            if (!n->up && n->restart_at >= 0 && n->restart_at <= s->now) {
                tracef(s, "restart node %d", (int)n->id);
                node_start(s, n);
            }
            if (n->up && raft_next_deadline(n->r) <= s->now)
                node_tick(s, n);
        }
        if (!s->calm && s->now >= *next_chaos) {
            chaos_step(s);
            *next_chaos = s->now + srange(s, 50, 700);
        }
        if (s->now >= *next_prop) {
            propose(s);
            *next_prop = s->now + srange(s, 10, 250);
        }
        if (s->now >= *next_snap) {
            maybe_snapshot(s, &s->nodes[srange(s, 0, s->n - 1)]);
            *next_snap = s->now + srange(s, 200, 3000);
        }
        if (s->now >= *next_check) {
            check_logs(s);
            *next_check = s->now + 1000;
        }
        if (s->now >= end)
            break;
    }
}

static void describe_nodes(struct sim *s, char *out, size_t cap)
{
    size_t off = 0;
    for (int32_t i = 0; i < s->n && off < cap; i++) {
        struct node *n = &s->nodes[i];
        off += (size_t)snprintf(out + off, cap - off, " [n%d %s e%d ld%d hw%" PRId64 " leo%" PRId64 " app%" PRId64 "]",
                                (int)n->id, n->up ? raft_role_name(raft_role(n->r)) : "down",
                                n->up ? (int)raft_epoch(n->r) : -1, n->up ? (int)raft_leader_id(n->r) : -1,
                                n->up ? raft_high_watermark(n->r) : -1, n->log.end, n->applied);
    }
}

static bool run_seed(uint64_t seed, bool trace, char *why, size_t whylen, struct sim *totals)
{
    struct sim *s = xcalloc(1, sizeof *s);
    cur_sim = s;
    s->seed = seed;
    s->rng = seed * 0xD1B54A32D192ED03ULL + 17;
    s->trace = trace;
    hmap_init(&s->batches);
    ML_OPS = memlog_raft_log(NULL).ops;
    int64_t shape = srange(s, 0, 99);
    s->nvoters = shape < 8 ? 1 : shape < 60 ? 3 : 5;
    bool observer = chance(s, 30);
    static const int32_t fmb[] = {512, 1024, 4096, 65536};
    s->fetch_max_bytes = fmb[srange(s, 0, 3)];
    s->n = s->nvoters + (observer ? 1 : 0);
    for (int32_t i = 0; i < s->nvoters; i++)
        s->voters[i] = i + 1;
    for (int32_t i = 0; i < s->n; i++) {
        struct node *n = &s->nodes[i];
        n->sim = s;
        n->idx = i;
        n->id = i < s->nvoters ? i + 1 : OBSERVER_ID;
        n->voter = i < s->nvoters;
        n->qs_epoch = -1;
        n->qs_leader = -1;
        n->qs_voted = -1;
        memlog_init(&n->log);
    }
    heal(s);
    s->delay_min = 1;
    s->delay_max = 10;
    s->flush_max = 15;
    tracef(s, "seed %" PRIu64 ": %d voters%s", seed, (int)s->nvoters, observer ? " + observer" : "");
    for (int32_t i = 0; i < s->n; i++)
        node_start(s, &s->nodes[i]);

    int64_t next_chaos = 0, next_prop = 100, next_snap = 500, next_check = 1000;
    int32_t rounds = (int32_t)srange(s, 2, 3);
    for (int32_t round = 0; round < rounds && !s->failed; round++) {
        /* chaos */
        s->calm = false;
        int64_t chaos_end = s->now + srange(s, 2000, 10000);
        next_chaos = s->now + srange(s, 0, 300);
        run_until(s, chaos_end, &next_chaos, &next_prop, &next_snap, &next_check);
        if (s->failed)
            break;
        /* calm: heal, restart, clean network */
        s->calm = true;
        s->calm_start = s->now;
        s->live_at = -1;
        heal(s);
        s->drop_pct = s->dup_pct = 0;
        s->flush_max = 15;
        s->delay_min = 1;
        s->delay_max = 10;
        for (int32_t i = 0; i < s->n; i++)
            if (!s->nodes[i].up)
                s->nodes[i].restart_at = s->now;
        tracef(s, "calm phase");
        run_until(s, s->calm_start + CALM_MS - CATCHUP_MS, &next_chaos, &next_prop, &next_snap, &next_check);
        s->catchup_mark = s->committed_end;
        run_until(s, s->calm_start + CALM_MS, &next_chaos, &next_prop, &next_snap, &next_check);
        if (s->failed)
            break;
        check_logs(s);
        char st[400];
        if (s->live_at < 0 || s->live_at > s->calm_start + LIVENESS_MS) {
            describe_nodes(s, st, sizeof st);
            sim_fail(s, "liveness: no proposal made in the calm phase from %" PRId64 " committed within %d ms (%s);%s",
                 s->calm_start, LIVENESS_MS, s->live_at < 0 ? "none" : "late", st);
        }
        for (int32_t i = 0; i < s->n && !s->failed; i++) {
            if (s->nodes[i].applied < s->catchup_mark) {
                describe_nodes(s, st, sizeof st);
                sim_fail(s, "liveness: node %d has applied %" PRId64 " < %" PRId64 " committed %d ms before the end of "
                        "the calm phase;%s",
                     (int)s->nodes[i].id, s->nodes[i].applied, s->catchup_mark, CATCHUP_MS, st);
            }
        }
    }
    bool ok = !s->failed;
    if (!ok)
        snprintf(why, whylen, "%s", s->why);
    for (int32_t i = 0; i < s->n; i++) {
        if (s->nodes[i].r)
            add_stats(s, s->nodes[i].r);
        raft_destroy(s->nodes[i].r);
        s->nodes[i].r = NULL;
    }
    totals->elections += s->elections;
    totals->leaderships += s->leaderships;
    totals->truncations += s->truncations;
    totals->downloads += s->downloads;
    totals->msgs += s->msgs;
    totals->crashes += s->crashes;
    totals->snapshots += s->snapshots;
    totals->commits += s->commits;
    totals->proposals += s->proposals;
    if (trace)
        fprintf(stderr, "seed %" PRIu64 ": %s; %" PRIu64 " msgs, %" PRIu64 " commits, %" PRIu64 " crashes, %" PRIu64
                        " snapshots, simulated %" PRId64 " ms\n",
                seed, ok ? "ok" : "FAILED", s->msgs, s->commits, s->crashes, s->snapshots, s->now);
    sim_free(s);
    free(s);
    cur_sim = NULL;
    return ok;
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 10) : dflt;
}

static void test_simulation(void **state)
{
    (void)state;
    struct sim totals = {0};
    char why[600];
    const char *one = getenv("RAFT_SIM_SEED");
    if (one && *one) {
        uint64_t seed = strtoull(one, NULL, 10);
        bool ok = run_seed(seed, true, why, sizeof why, &totals);
        if (!ok)
            fprintf(stderr, "raft_sim: seed %" PRIu64 " failed: %s\n", seed, why);
        assert_true(ok);
        return;
    }
    uint64_t n = env_u64("RAFT_SIM_SEEDS", DEFAULT_SEEDS);
    uint64_t base = env_u64("RAFT_SIM_SEED_BASE", 1);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t failures = 0, ran = 0;
    for (uint64_t seed = base; seed < base + n; seed++, ran++) {
        if (!run_seed(seed, false, why, sizeof why, &totals)) {
            fprintf(stderr, "raft_sim: seed %" PRIu64 " failed: %s\n  replay: RAFT_SIM_SEED=%" PRIu64
                            " tests/unit/raft_sim_test\n",
                    seed, why, seed);
            if (++failures >= 5)
                break;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    fprintf(stderr,
            "raft_sim: %" PRIu64 " seeds in %.1f s (%.0f seeds/s): %" PRIu64 " messages, %" PRIu64 " proposals, %" PRIu64
            " commits, %" PRIu64 " crashes, %" PRIu64 " snapshots taken, %" PRIu64 " downloaded, %" PRIu64
            " candidacies, %" PRIu64 " leaders, %" PRIu64 " divergence truncations; %" PRIu64 " failed\n",
            ran, secs, (double)ran / (secs > 0 ? secs : 1), totals.msgs, totals.proposals, totals.commits, totals.crashes,
            totals.snapshots, totals.downloads, totals.elections, totals.leaderships, totals.truncations, failures);
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simulation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
