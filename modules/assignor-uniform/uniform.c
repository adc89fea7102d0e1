/* SPDX-License-Identifier: Apache-2.0
 *
 * assignor-uniform: Kafka's KIP-848 server-side assignor "uniform" (the
 * default of group.consumer.assignors), written against
 * include/samsa/assignor.h only. It gives the assignments Kafka's
 * UniformAssignor gives for the same group (Kafka 4.0's group
 * coordinator: UniformHomogeneousAssignmentBuilder and
 * UniformHeterogeneousAssignmentBuilder), tie-breaks included.
 *
 * Homogeneous subscriptions (every member, same topics): the members
 * are walked in the coordinator's member order (below); with T
 * partitions over M members the first T % M members have a quota of
 * T / M + 1, the others T / M. Each member keeps what it owns of the
 * subscribed topics, in the order the host lists its current
 * assignment, up to its quota; the excess is revoked. The partitions
 * nobody owns (per subscribed topic, in the coordinator's topic order,
 * ascending partition) and then the revoked ones (in revocation order)
 * fill the members left below their quota, in member order.
 *
 * Heterogeneous subscriptions: every member keeps what it owns of the
 * topics it subscribes to. The topics are ordered by partitions per
 * subscriber (descending), then subscriber count (ascending), then
 * topic id (ascending, as Kafka compares Uuids: signed 64-bit halves).
 * Each topic's unowned partitions, ascending, go to its subscribers by
 * fewest partitions (then member order) level by level; then up to 16
 * rounds over the topics with two or more subscribers move partitions
 * (the highest-numbered of a most-loaded member) to the least-loaded
 * subscriber until the counts differ by at most one, stopping after a
 * full round that moved nothing.
 *
 * Member order and topic order: Kafka walks the group's members in the
 * iteration order of a java.util.HashMap keyed by member id, and the
 * homogeneous topics in that of a java.util.HashSet of topic ids. Both
 * are a pure function of the keys' hashCode (String's, Uuid's) and the
 * table size, so they are reproduced here (java_order): ascending
 * bucket, then the host's order within a bucket (Java's insertion
 * order). Single-letter member ids ("A", "B", ...) come out sorted.
 * The table is sized from the member count, as after n puts; Kafka's
 * may be one size larger in the epoch a member leaves (its map saw the
 * leaver put before removing it), which only matters when the count
 * crosses 12, 24, 48, ...
 *
 * Racks: Kafka's UniformAssignor has ignored racks since 3.8 (the rack
 * aware variant went with KAFKA-16864), so this one does too; the
 * describer's racks_for_partition and the members' rack_id are there
 * for assignors that want them.
 *
 * A subscribed topic the describer does not know (-1 partitions) fails
 * the assignment, as Kafka's PartitionAssignorException does; the host
 * then keeps the previous target. Memory: everything allocated here is
 * freed before assign returns.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samsa/assignor.h"

/* ------------------------------------------------------------------ */
/* Java's hash orders                                                  */

/* String.hashCode over the UTF-16 code units of a UTF-8 string. */
static uint32_t java_string_hash(const char *s)
{
    uint32_t h = 0;
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        uint32_t cp;
        int n;
        if (*p < 0x80)
            cp = *p, n = 0;
        else if ((*p & 0xe0) == 0xc0)
            cp = *p & 0x1f, n = 1;
        else if ((*p & 0xf0) == 0xe0)
            cp = *p & 0x0f, n = 2;
        else
            cp = *p & 0x07, n = 3;
        p++;
        for (; n > 0 && (*p & 0xc0) == 0x80; n--, p++)
            cp = cp << 6 | (*p & 0x3f);
        if (cp >= 0x10000) {
            cp -= 0x10000;
            h = 31 * h + (0xd800 + (cp >> 10));
            h = 31 * h + (0xdc00 + (cp & 0x3ff));
        } else {
            h = 31 * h + cp;
        }
    }
    return h;
}

static uint64_t be64(const uint8_t *b)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | b[i];
    return v;
}

/* Uuid.hashCode: the two halves xored, then folded to 32 bits. */
static uint32_t java_uuid_hash(const samsa_uuid_t *u)
{
    uint64_t h = be64(u->b) ^ be64(u->b + 8);
    return (uint32_t)(h >> 32) ^ (uint32_t)h;
}

/* Uuid.compareTo: signed most significant half, then signed least. */
static int java_uuid_cmp(const samsa_uuid_t *a, const samsa_uuid_t *b)
{
    int64_t am = (int64_t)be64(a->b), bm = (int64_t)be64(b->b);
    if (am != bm)
        return am < bm ? -1 : 1;
    int64_t al = (int64_t)be64(a->b + 8), bl = (int64_t)be64(b->b + 8);
    return al < bl ? -1 : al > bl;
}

/* Table size of a HashMap that got n puts from its default size. */
static size_t java_map_capacity(size_t n)
{
    size_t cap = 16;
    while ((double)n > (double)cap * 0.75)
        cap *= 2;
    return cap;
}

/* Table size of a HashSet copied from a collection of n (its
 * constructor asks for max(n / .75f + 1, 16), rounded up to a power of
 * two). */
static size_t java_copy_capacity(size_t n)
{
    size_t want = (size_t)((float)n / 0.75f) + 1, cap = 1;
    if (want < 16)
        want = 16;
    while (cap < want)
        cap *= 2;
    return cap;
}

/* order[0..n) := 0..n-1 sorted by HashMap bucket of hash[i] in a table
 * of cap slots, stable (insertion sort: n is a group's size). */
static void java_order(const uint32_t *hash, size_t n, size_t cap, size_t *order)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t b = (hash[i] ^ (hash[i] >> 16)) & (uint32_t)(cap - 1);
        size_t j = i;
        for (; j > 0; j--) {
            uint32_t hb = hash[order[j - 1]];
            if (((hb ^ (hb >> 16)) & (uint32_t)(cap - 1)) <= b)
                break;
            order[j] = order[j - 1];
        }
        order[j] = i;
    }
}

/* ------------------------------------------------------------------ */
/* shared                                                              */

static bool uuid_eq(const samsa_uuid_t *a, const samsa_uuid_t *b) { return memcmp(a->b, b->b, 16) == 0; }

static bool subscribes(const samsa_group_member_t *m, const samsa_uuid_t *t)
{
    for (size_t i = 0; i < m->n_subscribed; i++)
        if (uuid_eq(&m->subscribed_topic_ids[i], t))
            return true;
    return false;
}

/* One subscribed topic: its partitions' owners (member position in
 * the member order, -1 none). */
struct topic {
    samsa_uuid_t id;
    int32_t np;
    int32_t *owner;
    size_t *subs; /* heterogeneous: subscribers, by member position */
    size_t nsubs;
};

struct run {
    const samsa_group_spec_t *g;
    size_t *morder; /* member position -> index into g->members */
    size_t m;
    struct topic *t;
    size_t nt;
    int32_t *size; /* per member position: partitions in its target */
    char *errstr;
    size_t errlen;
};

static struct topic *find_topic(struct run *r, const samsa_uuid_t *id)
{
    for (size_t i = 0; i < r->nt; i++)
        if (uuid_eq(&r->t[i].id, id))
            return &r->t[i];
    return NULL;
}

static void run_free(struct run *r)
{
    for (size_t i = 0; i < r->nt; i++) {
        free(r->t[i].owner);
        free(r->t[i].subs);
    }
    free(r->t);
    free(r->morder);
    free(r->size);
}

static int oom(struct run *r)
{
    snprintf(r->errstr, r->errlen, "out of memory");
    return SAMSA_ENOMEM;
}

/* Adds topic id (once) with its partition count; -1 from the describer
 * fails as Kafka's "subscribed to topic ... which doesn't exist". */
static int add_topic(struct run *r, const samsa_topic_describer_t *d, const samsa_uuid_t *id, struct topic **out)
{
    struct topic *t = find_topic(r, id);
    if (!t) {
        int32_t np = d->num_partitions(d->ctx, id);
        if (np < 0) {
            snprintf(r->errstr, r->errlen, "members are subscribed to a topic that is not in the topic metadata");
            return SAMSA_EINVAL;
        }
        t = &r->t[r->nt++];
        memset(t, 0, sizeof *t);
        t->id = *id;
        t->np = np;
        t->owner = malloc(((size_t)np + 1) * sizeof *t->owner);
        if (!t->owner)
            return oom(r);
        for (int32_t p = 0; p < np; p++)
            t->owner[p] = -1;
    }
    *out = t;
    return SAMSA_OK;
}

static int emit(struct run *r, const samsa_assignment_builder_t *out)
{
    for (size_t i = 0; i < r->nt; i++)
        for (int32_t p = 0; p < r->t[i].np; p++)
            if (r->t[i].owner[p] >= 0) {
                int rc = out->assign(out->ctx, r->morder[r->t[i].owner[p]], &r->t[i].id, p);
                if (rc != SAMSA_OK) {
                    snprintf(r->errstr, r->errlen, "the coordinator refused an assignment (%d)", rc);
                    return rc;
                }
            }
    return SAMSA_OK;
}

/* ------------------------------------------------------------------ */
/* homogeneous                                                         */

struct tp {
    struct topic *t;
    int32_t p;
};

static int homogeneous(struct run *r, const samsa_topic_describer_t *d)
{
    const samsa_group_spec_t *g = r->g;
    const samsa_group_member_t *first = &g->members[r->morder[0]];
    size_t n = first->n_subscribed;
    if (n == 0)
        return SAMSA_OK;
    /* the subscribed topics in the order of a HashSet copied from them */
    uint32_t *h = malloc(n * sizeof *h);
    size_t *ord = malloc(n * sizeof *ord);
    if (!h || !ord) {
        free(h), free(ord);
        return oom(r);
    }
    for (size_t i = 0; i < n; i++)
        h[i] = java_uuid_hash(&first->subscribed_topic_ids[i]);
    java_order(h, n, java_copy_capacity(n), ord);
    int rc = SAMSA_OK;
    struct topic *t;
    for (size_t i = 0; i < n && rc == SAMSA_OK; i++)
        rc = add_topic(r, d, &first->subscribed_topic_ids[ord[i]], &t);
    free(h), free(ord);
    if (rc != SAMSA_OK)
        return rc;

    /* who owns what now (GroupSpec.isPartitionAssigned); owner[] then
     * holds the target as it is built */
    int64_t total = 0;
    for (size_t i = 0; i < r->nt; i++)
        total += r->t[i].np;
    for (size_t k = 0; k < r->m; k++) {
        const samsa_group_member_t *m = &g->members[r->morder[k]];
        for (size_t c = 0; c < m->n_current; c++) {
            struct topic *ct = find_topic(r, &m->current[c].topic_id);
            for (size_t j = 0; ct && j < m->current[c].n_partitions; j++) {
                int32_t p = m->current[c].partitions[j];
                if (p >= 0 && p < ct->np && ct->owner[p] < 0)
                    ct->owner[p] = (int32_t)k;
            }
        }
    }
    /* the unowned partitions, then (appended below) the revoked ones */
    struct tp *un = malloc(((size_t)total + 1) * sizeof *un);
    int64_t *quota_left = calloc(r->m, sizeof *quota_left);
    if (!un || !quota_left) {
        free(un), free(quota_left);
        return oom(r);
    }
    size_t nun = 0;
    for (size_t i = 0; i < r->nt; i++)
        for (int32_t p = 0; p < r->t[i].np; p++)
            if (r->t[i].owner[p] < 0)
                un[nun++] = (struct tp){&r->t[i], p};
    int64_t minq = total / (int64_t)r->m, extra = total % (int64_t)r->m;
    for (size_t k = 0; k < r->m; k++) {
        const samsa_group_member_t *m = &g->members[r->morder[k]];
        int64_t quota = minq;
        if (extra > 0) {
            quota++;
            extra--;
        }
        for (size_t c = 0; c < m->n_current; c++) {
            struct topic *ct = find_topic(r, &m->current[c].topic_id);
            if (!ct)
                continue; /* not subscribed: dropped */
            /* what this member really owns of it (owner[] took the
             * first claim; out-of-range partitions are not owned) */
            size_t cnt = 0;
            for (size_t j = 0; j < m->current[c].n_partitions; j++) {
                int32_t p = m->current[c].partitions[j];
                cnt += p >= 0 && p < ct->np && ct->owner[p] == (int32_t)k;
            }
            if ((int64_t)cnt <= quota) {
                quota -= (int64_t)cnt;
                continue;
            }
            for (size_t j = 0; j < m->current[c].n_partitions; j++) {
                int32_t p = m->current[c].partitions[j];
                if (p < 0 || p >= ct->np || ct->owner[p] != (int32_t)k)
                    continue;
                if (quota > 0) {
                    quota--;
                } else {
                    ct->owner[p] = -1;
                    un[nun++] = (struct tp){ct, p};
                }
            }
        }
        quota_left[k] = quota;
    }
    size_t next = 0;
    for (size_t k = 0; k < r->m; k++)
        for (int64_t q = 0; q < quota_left[k] && next < nun; q++, next++)
            un[next].t->owner[un[next].p] = (int32_t)k;
    free(quota_left);
    free(un);
    if (next < nun) {
        snprintf(r->errstr, r->errlen, "partitions were left unassigned");
        return SAMSA_EINVAL;
    }
    return SAMSA_OK;
}

/* ------------------------------------------------------------------ */
/* heterogeneous                                                       */

/* Kafka's topic order: partitions per subscriber descending, then
 * subscriber count ascending, then topic id ascending. */
static int topic_cmp(const struct topic *a, const struct topic *b)
{
    /* a->np / a->nsubs vs b->np / b->nsubs without rounding */
    int64_t l = (int64_t)b->np * (int64_t)a->nsubs, rr = (int64_t)a->np * (int64_t)b->nsubs;
    if (l != rr)
        return l < rr ? -1 : 1;
    if (a->nsubs != b->nsubs)
        return a->nsubs < b->nsubs ? -1 : 1;
    return java_uuid_cmp(&a->id, &b->id);
}

static void sort_topics(struct topic **v, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        struct topic *x = v[i];
        size_t j = i;
        for (; j > 0 && topic_cmp(v[j - 1], x) > 0; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

/* Two ranges over a topic's subscribers sorted by load: the least
 * loaded grows rightwards, the most loaded leftwards; balanced when
 * their levels differ by at most one (Kafka's MemberAssignmentBalancer). */
struct balancer {
    const int32_t *size;
    size_t *sorted;
    size_t n;
    size_t least_end; /* exclusive */
    int64_t least_level;
    size_t next_least;
    size_t most_start; /* inclusive */
    size_t most_end;   /* exclusive */
    int64_t most_level;
    ptrdiff_t next_most;
};

static int32_t bal_init(struct balancer *b, const size_t *members, size_t n)
{
    b->n = n;
    for (size_t i = 0; i < n; i++) {
        size_t x = members[i], j = i;
        for (; j > 0; j--) {
            size_t y = b->sorted[j - 1];
            if (b->size[y] < b->size[x] || (b->size[y] == b->size[x] && y < x))
                break;
            b->sorted[j] = y;
        }
        b->sorted[j] = x;
    }
    b->least_end = 0;
    b->least_level = (int64_t)b->size[b->sorted[0]] - 1;
    b->next_least = 0;
    b->most_start = n;
    b->most_end = n;
    b->most_level = (int64_t)b->size[b->sorted[n - 1]] + 1;
    b->next_most = (ptrdiff_t)n - 1;
    return b->size[b->sorted[n - 1]] - b->size[b->sorted[0]];
}

static size_t bal_next_least(struct balancer *b)
{
    if (b->next_least >= b->least_end) {
        b->least_level++;
        while (b->least_end < b->n && b->size[b->sorted[b->least_end]] == b->least_level)
            b->least_end++;
        b->next_least = 0;
    }
    return b->sorted[b->next_least++];
}

/* -1 when no member is left that could give a partition up */
static ptrdiff_t bal_next_most(struct balancer *b)
{
    if (b->next_most < (ptrdiff_t)b->most_start) {
        if (b->most_end <= b->most_start && b->most_start > 0)
            b->most_level = b->size[b->sorted[b->most_start - 1]];
        else
            b->most_level--;
        while (b->most_start > 0 && b->size[b->sorted[b->most_start - 1]] == b->most_level)
            b->most_start--;
        b->next_most = (ptrdiff_t)b->most_end - 1;
    }
    if (b->next_most < 0)
        return -1;
    return (ptrdiff_t)b->sorted[b->next_most--];
}

/* Takes the member bal_next_most just returned out of the most loaded
 * range. */
static void bal_exclude_most(struct balancer *b)
{
    size_t k = (size_t)(b->next_most + 1), x = b->sorted[k];
    b->sorted[k] = b->sorted[b->most_end - 1];
    b->sorted[b->most_end - 1] = x;
    b->most_end--;
}

static bool bal_balanced(const struct balancer *b) { return b->most_level - b->least_level <= 1; }

static void move_partition(struct run *r, struct topic *t, int32_t p, size_t k)
{
    if (t->owner[p] >= 0)
        r->size[t->owner[p]]--;
    t->owner[p] = (int32_t)k;
    r->size[k]++;
}

/* scratch of balance_topic, sized for the largest topic / the group */
struct scratch {
    int32_t *parts;
    size_t *start, *end; /* per member position; end exclusive */
    bool *has;
};

static int32_t balance_topic(struct run *r, struct topic *t, struct balancer *b, struct scratch *s)
{
    if (bal_init(b, t->subs, t->nsubs) <= 1)
        return 0;
    /* the partitions grouped by owner, each group ascending */
    for (int32_t p = 0; p < t->np; p++) {
        int32_t j = p;
        for (; j > 0; j--) {
            int32_t q = s->parts[j - 1];
            if (t->owner[q] < t->owner[p] || (t->owner[q] == t->owner[p] && q < p))
                break;
            s->parts[j] = q;
        }
        s->parts[j] = p;
    }
    memset(s->has, 0, r->m * sizeof *s->has);
    for (int32_t i = 0; i < t->np; i++) {
        int32_t o = t->owner[s->parts[i]];
        if (o < 0)
            continue;
        if (!s->has[o]) {
            s->has[o] = true;
            s->start[o] = (size_t)i;
        }
        s->end[o] = (size_t)i + 1;
    }
    int32_t moved = 0;
    while (!bal_balanced(b)) {
        ptrdiff_t most;
        for (;;) {
            most = bal_next_most(b);
            if (most < 0)
                break;
            if (!s->has[most] || s->end[most] <= s->start[most]) {
                bal_exclude_most(b);
                continue;
            }
            break;
        }
        if (most < 0)
            break;
        int32_t p = s->parts[--s->end[most]];
        size_t least = bal_next_least(b);
        if (bal_balanced(b))
            break;
        move_partition(r, t, p, least);
        moved++;
    }
    return moved;
}

#define MAX_BALANCE_ROUNDS 16

static int heterogeneous(struct run *r, const samsa_topic_describer_t *d)
{
    const samsa_group_spec_t *g = r->g;
    int rc = SAMSA_OK;
    /* topics and their subscribers, by member position */
    for (size_t k = 0; k < r->m && rc == SAMSA_OK; k++) {
        const samsa_group_member_t *m = &g->members[r->morder[k]];
        for (size_t i = 0; i < m->n_subscribed && rc == SAMSA_OK; i++) {
            struct topic *t;
            rc = add_topic(r, d, &m->subscribed_topic_ids[i], &t);
            if (rc != SAMSA_OK)
                break;
            if (t->nsubs > 0 && t->subs[t->nsubs - 1] == k)
                continue; /* listed twice by one member */
            size_t *v = realloc(t->subs, (t->nsubs + 1) * sizeof *v);
            if (!v)
                return oom(r);
            t->subs = v;
            t->subs[t->nsubs++] = k;
        }
    }
    if (rc != SAMSA_OK || r->nt == 0)
        return rc;
    /* every member keeps what it owns of the topics it subscribes to */
    for (size_t k = 0; k < r->m; k++) {
        const samsa_group_member_t *m = &g->members[r->morder[k]];
        for (size_t c = 0; c < m->n_current; c++) {
            if (!subscribes(m, &m->current[c].topic_id))
                continue;
            struct topic *t = find_topic(r, &m->current[c].topic_id);
            for (size_t j = 0; t && j < m->current[c].n_partitions; j++) {
                int32_t p = m->current[c].partitions[j];
                if (p >= 0 && p < t->np && t->owner[p] < 0)
                    move_partition(r, t, p, k);
            }
        }
    }
    struct topic **sorted = malloc(r->nt * sizeof *sorted);
    struct balancer b = {.size = r->size, .sorted = malloc(r->m * sizeof(size_t))};
    int32_t maxp = 0;
    for (size_t i = 0; i < r->nt; i++)
        maxp = r->t[i].np > maxp ? r->t[i].np : maxp;
    struct scratch s = {malloc(((size_t)maxp + 1) * sizeof(int32_t)), malloc(r->m * sizeof(size_t)),
                        malloc(r->m * sizeof(size_t)), malloc(r->m * sizeof(bool))};
    if (!sorted || !b.sorted || !s.parts || !s.start || !s.end || !s.has) {
        free(sorted), free(b.sorted), free(s.parts), free(s.start), free(s.end), free(s.has);
        return oom(r);
    }
    /* the unowned partitions, topic by topic in Kafka's order, to the
     * least loaded subscribers */
    for (size_t i = 0; i < r->nt; i++)
        sorted[i] = &r->t[i];
    sort_topics(sorted, r->nt);
    for (size_t i = 0; i < r->nt; i++) {
        struct topic *t = sorted[i];
        bool any = false;
        for (int32_t p = 0; p < t->np && !any; p++)
            any = t->owner[p] < 0;
        if (!any)
            continue;
        bal_init(&b, t->subs, t->nsubs);
        for (int32_t p = 0; p < t->np; p++)
            if (t->owner[p] < 0)
                move_partition(r, t, p, bal_next_least(&b));
    }
    /* balance the topics that have two subscribers or more */
    size_t nb = 0;
    for (size_t i = 0; i < r->nt; i++)
        if (sorted[i]->nsubs >= 2)
            sorted[nb++] = sorted[i];
    ptrdiff_t last = -1;
    for (int round = 0; round < MAX_BALANCE_ROUNDS && nb > 0; round++) {
        bool done = false;
        for (size_t i = 0; i < nb; i++) {
            if ((ptrdiff_t)i == last) {
                done = true;
                break;
            }
            if (balance_topic(r, sorted[i], &b, &s) > 0 || last == -1)
                last = (ptrdiff_t)i;
        }
        if (done)
            break;
    }
    free(sorted), free(b.sorted), free(s.parts), free(s.start), free(s.end), free(s.has);
    return SAMSA_OK;
}

/* ------------------------------------------------------------------ */

static int uniform_assign(void *cap_state, const samsa_group_spec_t *g, const samsa_topic_describer_t *topics,
                          const samsa_assignment_builder_t *out, char *errstr, size_t errlen)
{
    (void)cap_state;
    if (g->n_members == 0)
        return SAMSA_OK;
    struct run r = {.g = g, .m = g->n_members, .errstr = errstr, .errlen = errlen};
    size_t nsub = 0;
    for (size_t i = 0; i < g->n_members; i++)
        nsub += g->members[i].n_subscribed;
    uint32_t *h = malloc(g->n_members * sizeof *h);
    r.morder = malloc(g->n_members * sizeof *r.morder);
    r.t = calloc(nsub + 1, sizeof *r.t);
    r.size = calloc(g->n_members, sizeof *r.size);
    if (!h || !r.morder || !r.t || !r.size) {
        free(h);
        run_free(&r);
        return oom(&r);
    }
    /* the members in the order of Kafka's HashMap of member ids */
    for (size_t i = 0; i < g->n_members; i++)
        h[i] = java_string_hash(g->members[i].member_id);
    java_order(h, g->n_members, java_map_capacity(g->n_members), r.morder);
    free(h);
    int rc = g->subscription_type == SAMSA_SUBSCRIPTION_HOMOGENEOUS ? homogeneous(&r, topics)
                                                                     : heterogeneous(&r, topics);
    if (rc == SAMSA_OK)
        rc = emit(&r, out);
    run_free(&r);
    return rc;
}

static const samsa_assignor_t uniform_assignor = {
    .hdr = {.struct_size = sizeof(samsa_assignor_t), .kind = SAMSA_CAP_ASSIGNOR, .name = "uniform"},
    .assign = uniform_assign,
};

static int uniform_init(samsa_host_t *host, const samsa_host_api_t *api, void **state, char *errstr, size_t errlen)
{
    (void)state, (void)errstr, (void)errlen;
    return api->register_capability(host, &uniform_assignor.hdr, NULL);
}

static const samsa_plugin_info_t uniform_info = {
    SAMSA_PLUGIN_INFO_HEADER,
    .name = "assignor-uniform",
    .version = SAMSA_MODULE_VERSION,
    .description = "Kafka's server-side assignor \"uniform\" (KIP-848): balanced and sticky",
    .license = "Apache-2.0",
    .init = uniform_init,
};

SAMSA_PLUGIN_DECLARE(assignor_uniform, uniform_info)
