#include "api/fetch_session.h"

#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

void fetch_session_cache_init(struct fetch_session_cache *c, int32_t max_sessions)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
    c->max = max_sessions;
    c->nslots = 1;
    while (c->nslots < max_sessions * 2)
        c->nslots *= 2;
    c->slots = xcalloc((size_t)c->nslots, sizeof *c->slots);
    c->next_id = 1;
    c->lru.lru_next = c->lru.lru_prev = &c->lru;
}

static void session_free(struct fetch_session *s)
{
    for (int32_t i = 0; i < s->nparts; i++)
        free(s->parts[i].topic);
    free(s->parts);
    free(s);
}

void fetch_session_cache_destroy(struct fetch_session_cache *c)
{
    for (int32_t i = 0; i < c->nslots; i++)
        if (c->slots[i])
            session_free(c->slots[i]);
    free(c->slots);
    pthread_mutex_destroy(&c->lock);
}

static int32_t slot_of(const struct fetch_session_cache *c, int32_t id)
{
    uint32_t h = (uint32_t)id * 2654435761u;
    int32_t i = (int32_t)(h & (uint32_t)(c->nslots - 1));
    while (c->slots[i] && c->slots[i]->id != id)
        i = (i + 1) & (c->nslots - 1);
    return i;
}

struct fetch_session *fetch_session_find(struct fetch_session_cache *c, int32_t id)
{
    if (id <= 0)
        return NULL;
    return c->slots[slot_of(c, id)];
}

static void lru_unlink(struct fetch_session *s)
{
    s->lru_prev->lru_next = s->lru_next;
    s->lru_next->lru_prev = s->lru_prev;
}

static void lru_push_front(struct fetch_session_cache *c, struct fetch_session *s)
{
    s->lru_next = c->lru.lru_next;
    s->lru_prev = &c->lru;
    c->lru.lru_next->lru_prev = s;
    c->lru.lru_next = s;
}

void fetch_session_remove(struct fetch_session_cache *c, struct fetch_session *s)
{
    /* open addressing delete: re-insert the rest of the cluster */
    int32_t i = slot_of(c, s->id);
    c->slots[i] = NULL;
    for (int32_t j = (i + 1) & (c->nslots - 1); c->slots[j]; j = (j + 1) & (c->nslots - 1)) {
        struct fetch_session *m = c->slots[j];
        c->slots[j] = NULL;
        c->slots[slot_of(c, m->id)] = m;
    }
    lru_unlink(s);
    c->count--;
    session_free(s);
}

void fetch_session_touch(struct fetch_session_cache *c, struct fetch_session *s, int64_t now_ms)
{
    s->last_used_ms = now_ms;
    lru_unlink(s);
    lru_push_front(c, s);
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

static bool try_evict(struct fetch_session_cache *c, bool privileged, int32_t nparts, int64_t now_ms)
{
    struct fetch_session *oldest = c->lru.lru_prev;
    if (oldest == &c->lru)
        return false;
    if (now_ms - oldest->last_used_ms > FETCH_SESSION_EVICTION_MS) {
        fetch_session_remove(c, oldest);
        return true;
    }
    struct fetch_session *victim = NULL;
    for (struct fetch_session *s = c->lru.lru_next; s != &c->lru; s = s->lru_next) {
        bool old = now_ms - s->created_ms > FETCH_SESSION_EVICTION_MS;
        if (!(old || (privileged && !s->privileged)))
            continue;
        if (!victim || evict_cmp(s->privileged, s->nparts, s->id, victim->privileged, victim->nparts, victim->id) < 0)
            victim = s;
    }
    if (!victim || evict_cmp(privileged, nparts, 0, victim->privileged, victim->nparts, victim->id) < 0)
        return false;
    fetch_session_remove(c, victim);
    return true;
}

struct fetch_session *fetch_session_new(struct fetch_session_cache *c, bool uses_topic_ids, bool privileged,
                                        int32_t nparts, int64_t now_ms)
{
    if (c->max <= 0)
        return NULL;
    if (c->count >= c->max && !try_evict(c, privileged, nparts, now_ms))
        return NULL;
    struct fetch_session *s = xcalloc(1, sizeof *s);
    do {
        s->id = c->next_id;
        c->next_id = c->next_id == INT32_MAX ? 1 : c->next_id + 1;
    } while (fetch_session_find(c, s->id));
    s->epoch = fetch_session_next_epoch(FETCH_SESSION_INITIAL_EPOCH);
    s->uses_topic_ids = uses_topic_ids;
    s->privileged = privileged;
    s->created_ms = s->last_used_ms = now_ms;
    c->slots[slot_of(c, s->id)] = s;
    lru_push_front(c, s);
    c->count++;
    return s;
}

static bool part_matches(const struct fetch_session *s, const struct fs_partition *p, kstr_t topic,
                         const kuuid_t *topic_id, int32_t partition)
{
    if (p->partition != partition)
        return false;
    if (s->uses_topic_ids)
        return kuuid_eq(&p->topic_id, topic_id);
    return (int32_t)strlen(p->topic) == topic.len && memcmp(p->topic, topic.p, (size_t)topic.len) == 0;
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
    p->topic = s->uses_topic_ids ? xstrdup("") : xstrndup(topic.p, topic.len > 0 ? (size_t)topic.len : 0);
    if (topic_id)
        p->topic_id = *topic_id;
    p->partition = partition;
    p->last_hw = p->last_lso = p->last_log_start = -1;
    return p;
}

void fetch_session_forget(struct fetch_session *s, kstr_t topic, const kuuid_t *topic_id, int32_t partition)
{
    for (int32_t i = 0; i < s->nparts; i++) {
        if (part_matches(s, &s->parts[i], topic, topic_id, partition)) {
            free(s->parts[i].topic);
            memmove(&s->parts[i], &s->parts[i + 1], (size_t)(s->nparts - i - 1) * sizeof *s->parts);
            s->nparts--;
            return;
        }
    }
}
