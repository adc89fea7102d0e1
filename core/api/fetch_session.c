#include "api/fetch_session.h"

#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/chgen.h"

/* Sixteen shards: more than the workers of any machine samsa runs on
 * today contend for; a fixed count keeps a session's shard a mask of its
 * id. */
#define FS_SHARDS 16
#define FS_MIN_SLOTS 16

static void shard_init(struct fs_shard *sh)
{
    pthread_mutex_init(&sh->lock, NULL);
    sh->nslots = FS_MIN_SLOTS;
    sh->slots = xcalloc((size_t)sh->nslots, sizeof *sh->slots);
    lru_init(&sh->lru);
}

void fetch_session_cache_init(struct fetch_session_cache *c, int32_t max_sessions)
{
    memset(c, 0, sizeof *c);
    c->max = max_sessions;
    c->nshards = FS_SHARDS;
    c->shards = xcalloc((size_t)c->nshards, sizeof *c->shards);
    for (int32_t i = 0; i < c->nshards; i++)
        shard_init(&c->shards[i]);
    atomic_init(&c->count, 0);
    atomic_init(&c->next_id, 1);
}

static void session_free(struct fetch_session *s)
{
    for (int32_t i = 0; i < s->nparts; i++)
        free(s->parts[i].topic);
    free(s->parts);
    free(s->runs);
    free(s);
}

void fetch_session_cache_destroy(struct fetch_session_cache *c)
{
    for (int32_t k = 0; k < c->nshards; k++) {
        struct fs_shard *sh = &c->shards[k];
        for (int32_t i = 0; i < sh->nslots; i++)
            if (sh->slots[i])
                session_free(sh->slots[i]);
        free(sh->slots);
        pthread_mutex_destroy(&sh->lock);
    }
    free(c->shards);
}

static struct fs_shard *shard_of(struct fetch_session_cache *c, int32_t id)
{
    return &c->shards[(uint32_t)id & (uint32_t)(c->nshards - 1)];
}

void fetch_session_lock(struct fetch_session_cache *c, int32_t id) { pthread_mutex_lock(&shard_of(c, id)->lock); }
void fetch_session_unlock(struct fetch_session_cache *c, int32_t id) { pthread_mutex_unlock(&shard_of(c, id)->lock); }

static int32_t slot_of(const struct fs_shard *sh, int32_t id)
{
    /* the low bits chose the shard: hash the rest */
    uint32_t h = ((uint32_t)id >> 4) * 2654435761u;
    int32_t i = (int32_t)(h & (uint32_t)(sh->nslots - 1));
    while (sh->slots[i] && sh->slots[i]->id != id)
        i = (i + 1) & (sh->nslots - 1);
    return i;
}

struct fetch_session *fetch_session_find(struct fetch_session_cache *c, int32_t id)
{
    if (id <= 0)
        return NULL;
    struct fs_shard *sh = shard_of(c, id);
    return sh->slots[slot_of(sh, id)];
}

void fetch_session_remove(struct fetch_session_cache *c, struct fetch_session *s)
{
    struct fs_shard *sh = shard_of(c, s->id);
    /* open addressing delete: re-insert the rest of the cluster */
    int32_t i = slot_of(sh, s->id);
    sh->slots[i] = NULL;
    for (int32_t j = (i + 1) & (sh->nslots - 1); sh->slots[j]; j = (j + 1) & (sh->nslots - 1)) {
        struct fetch_session *m = sh->slots[j];
        sh->slots[j] = NULL;
        sh->slots[slot_of(sh, m->id)] = m;
    }
    lru_unlink(&s->lru);
    sh->count--;
    atomic_fetch_sub(&c->count, 1);
    session_free(s);
}

void fetch_session_touch(struct fetch_session_cache *c, struct fetch_session *s, int64_t now_ms)
{
    s->last_used_ms = now_ms;
    lru_move_head(&shard_of(c, s->id)->lru, &s->lru);
}

/* Kafka's EvictableKey order: (privileged, size, id). */
static int evict_cmp(bool pa, int32_t sa, int32_t ia, bool pb, int32_t sb, int32_t ib)
{
    if (pa != pb)
        return pa ? 1 : -1;
    if (sa != sb)
        return sa < sb ? -1 : 1;
    return ia < ib ? -1 : ia > ib;
}

/* Every shard locked: the whole cache is one LRU (the least recently
 * used session is the oldest of the shards' least recent ones). */
static bool try_evict(struct fetch_session_cache *c, bool privileged, int32_t nparts, int64_t now_ms)
{
    struct fetch_session *oldest = NULL;
    for (int32_t k = 0; k < c->nshards; k++) {
        struct fs_shard *sh = &c->shards[k];
        if (lru_empty(&sh->lru))
            continue;
        struct fetch_session *s = lru_entry(sh->lru.prev, struct fetch_session, lru);
        if (!oldest || s->last_used_ms < oldest->last_used_ms)
            oldest = s;
    }
    if (!oldest)
        return false;
    if (now_ms - oldest->last_used_ms > FETCH_SESSION_EVICTION_MS) {
        fetch_session_remove(c, oldest);
        return true;
    }
    struct fetch_session *victim = NULL;
    for (int32_t k = 0; k < c->nshards; k++) {
        struct fs_shard *sh = &c->shards[k];
        for (struct lru_node *n = sh->lru.next; n != &sh->lru; n = n->next) {
            struct fetch_session *s = lru_entry(n, struct fetch_session, lru);
            bool old = now_ms - s->created_ms > FETCH_SESSION_EVICTION_MS;
            if (!(old || (privileged && !s->privileged)))
                continue;
            if (!victim ||
                evict_cmp(s->privileged, s->nparts, s->id, victim->privileged, victim->nparts, victim->id) < 0)
                victim = s;
        }
    }
    if (!victim || evict_cmp(privileged, nparts, 0, victim->privileged, victim->nparts, victim->id) < 0)
        return false;
    fetch_session_remove(c, victim);
    return true;
}

static int32_t take_id(struct fetch_session_cache *c)
{
    int32_t id;
    do
        id = (int32_t)(atomic_fetch_add(&c->next_id, 1) & INT32_MAX);
    while (id == 0);
    return id;
}

static void shard_grow(struct fs_shard *sh)
{
    struct fetch_session **old = sh->slots;
    int32_t n = sh->nslots;
    sh->nslots *= 2;
    sh->slots = xcalloc((size_t)sh->nslots, sizeof *sh->slots);
    for (int32_t i = 0; i < n; i++)
        if (old[i])
            sh->slots[slot_of(sh, old[i]->id)] = old[i];
    free(old);
}

struct fetch_session *fetch_session_new(struct fetch_session_cache *c, bool uses_topic_ids, bool privileged,
                                        int32_t nparts, int64_t now_ms)
{
    if (c->max <= 0)
        return NULL;
    /* Reserve a place in the bound; only a full cache locks every shard. */
    bool all_locked = false;
    int32_t n = atomic_load(&c->count);
    while (n < c->max && !atomic_compare_exchange_weak(&c->count, &n, n + 1))
        ;
    if (n >= c->max) {
        for (int32_t k = 0; k < c->nshards; k++)
            pthread_mutex_lock(&c->shards[k].lock);
        all_locked = true;
        if (atomic_load(&c->count) >= c->max && !try_evict(c, privileged, nparts, now_ms)) {
            for (int32_t k = c->nshards - 1; k >= 0; k--)
                pthread_mutex_unlock(&c->shards[k].lock);
            return NULL;
        }
        atomic_fetch_add(&c->count, 1);
    }
    int32_t id;
    struct fs_shard *sh;
    for (;;) {
        id = take_id(c);
        sh = shard_of(c, id);
        if (!all_locked)
            pthread_mutex_lock(&sh->lock);
        if (!fetch_session_find(c, id))
            break;
        if (!all_locked)
            pthread_mutex_unlock(&sh->lock);
    }
    if (all_locked)
        for (int32_t k = c->nshards - 1; k >= 0; k--)
            if (&c->shards[k] != sh)
                pthread_mutex_unlock(&c->shards[k].lock);
    struct fetch_session *s = xcalloc(1, sizeof *s);
    s->id = id;
    s->epoch = fetch_session_next_epoch(FETCH_SESSION_INITIAL_EPOCH);
    s->uses_topic_ids = uses_topic_ids;
    s->privileged = privileged;
    s->created_ms = s->last_used_ms = now_ms;
    if ((sh->count + 1) * 2 > sh->nslots)
        shard_grow(sh);
    sh->slots[slot_of(sh, s->id)] = s;
    lru_push_head(&sh->lru, &s->lru);
    sh->count++;
    return s;
}

static bool part_matches(const struct fetch_session *s, const struct fs_partition *p, kstr_t topic,
                         const kuuid_t *topic_id, int32_t partition)
{
    if (p->partition != partition)
        return false;
    if (s->uses_topic_ids)
        return kuuid_eq(&p->topic_id, topic_id);
    return p->topic_len == topic.len && memcmp(p->topic, topic.p, (size_t)topic.len) == 0;
}

struct fs_partition *fetch_session_part(struct fetch_session *s, kstr_t topic, const kuuid_t *topic_id,
                                        int32_t partition, bool add)
{
    for (int32_t i = 0; i < s->nparts; i++)
        if (part_matches(s, &s->parts[i], topic, topic_id, partition))
            return &s->parts[i];
    if (!add)
        return NULL;
    if (s->nparts == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 8;
        s->parts = xrealloc(s->parts, (size_t)s->cap * sizeof *s->parts);
    }
    struct fs_partition *p = &s->parts[s->nparts++];
    memset(p, 0, sizeof *p);
    s->runs_stale = true;
    p->topic = s->uses_topic_ids ? xstrdup("") : xstrndup(topic.p, topic.len > 0 ? (size_t)topic.len : 0);
    p->topic_len = (int32_t)strlen(p->topic);
    if (topic_id)
        p->topic_id = *topic_id;
    p->partition = partition;
    p->last_hw = p->last_lso = p->last_log_start = -1;
    return p;
}

struct fs_partition *fetch_session_part_at(struct fetch_session *s, int32_t i, kstr_t topic, const kuuid_t *topic_id,
                                           int32_t partition)
{
    if (i >= 0 && i < s->nparts && part_matches(s, &s->parts[i], topic, topic_id, partition))
        return &s->parts[i];
    return fetch_session_part(s, topic, topic_id, partition, false);
}

void fetch_session_forget(struct fetch_session *s, kstr_t topic, const kuuid_t *topic_id, int32_t partition)
{
    for (int32_t i = 0; i < s->nparts; i++) {
        if (part_matches(s, &s->parts[i], topic, topic_id, partition)) {
            free(s->parts[i].topic);
            memmove(&s->parts[i], &s->parts[i + 1], (size_t)(s->nparts - i - 1) * sizeof *s->parts);
            s->nparts--;
            s->runs_stale = true;
            return;
        }
    }
}

void fetch_session_part_changed(struct fetch_session *s, struct fs_partition *sp)
{
    if (!s->runs_stale && sp->run >= 0 && sp->run < s->nruns)
        s->runs[sp->run].dirty = true;
}

static bool same_topic(const struct fetch_session *s, const struct fs_partition *a, const struct fs_partition *b)
{
    if (s->uses_topic_ids)
        return kuuid_eq(&a->topic_id, &b->topic_id);
    return a->topic_len == b->topic_len && memcmp(a->topic, b->topic, (size_t)a->topic_len) == 0;
}

void fetch_session_runs_build(struct fetch_session *s)
{
    if (!s->runs_stale && (s->runs || s->nparts == 0))
        return;
    free(s->runs);
    s->runs = NULL;
    s->nruns = 0;
    int32_t cap = 0;
    for (int32_t i = 0; i < s->nparts; i++) {
        if (i == 0 || !same_topic(s, &s->parts[i - 1], &s->parts[i]) ||
            chgen_chunk_of(s->parts[i - 1].partition) != chgen_chunk_of(s->parts[i].partition)) {
            if (s->nruns == cap) {
                cap = cap ? cap * 2 : 8;
                s->runs = xrealloc(s->runs, (size_t)cap * sizeof *s->runs);
            }
            struct fs_run *r = &s->runs[s->nruns++];
            memset(r, 0, sizeof *r); /* not valid: walked at the next fetch */
            r->start = i;
        }
        s->runs[s->nruns - 1].count++;
        s->parts[i].run = s->nruns - 1;
    }
    s->runs_stale = false;
    s->layout++;
}

bool fetch_session_run_unchanged(const struct fetch_session *s, const struct fs_run *r, int8_t isolation,
                                 const kuuid_t *id_now, uint64_t gen_now)
{
    if (s->runs_stale || !r->valid || r->pending || r->dirty || s->isolation != isolation || !id_now)
        return false;
    return kuuid_eq(&r->topic_id, id_now) && r->gen == gen_now;
}
