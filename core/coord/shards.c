/* Coordinator shards (see shards.h). */
#include "coord/shards.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "controller/controller.h"
#include "coord/records.h"
#include "proto/kerr.h"
#include "replica/partition.h"
#include "util/buf.h"

void cshard_init(struct cshard *s, int32_t index)
{
    s->index = index;
    pthread_mutex_init(&s->lock, NULL);
    s->state = CSHARD_UNLOADED;
    s->epoch = -1;
    s->p = NULL;
}

void cshard_table_init(struct cshard_table *t, const char *topic, struct cshard *(*make)(void *ctx, int32_t index),
                       void *ctx)
{
    pthread_rwlock_init(&t->lock, NULL);
    t->v = NULL;
    t->n = 0;
    t->make = make;
    t->ctx = ctx;
    t->topic = topic;
}

void cshard_table_free(struct cshard_table *t, void (*destroy)(struct cshard *s))
{
    for (int32_t i = 0; i < t->n; i++) {
        pthread_mutex_destroy(&t->v[i]->lock);
        destroy(t->v[i]);
    }
    free(t->v);
    t->v = NULL;
    t->n = 0;
    pthread_rwlock_destroy(&t->lock);
}

struct cshard *cshard_at(struct cshard_table *t, int32_t index, bool create)
{
    pthread_rwlock_rdlock(&t->lock);
    struct cshard *s = index < t->n ? t->v[index] : NULL;
    pthread_rwlock_unlock(&t->lock);
    if (s || !create)
        return s;
    pthread_rwlock_wrlock(&t->lock);
    if (index >= t->n) {
        t->v = xrealloc(t->v, (size_t)(index + 1) * sizeof *t->v);
        for (int32_t i = t->n; i <= index; i++)
            t->v[i] = t->make(t->ctx, i);
        t->n = index + 1;
    }
    s = t->v[index];
    pthread_rwlock_unlock(&t->lock);
    return s;
}

int32_t cshard_count(struct cshard_table *t)
{
    pthread_rwlock_rdlock(&t->lock);
    int32_t n = t->n;
    pthread_rwlock_unlock(&t->lock);
    return n;
}

int16_t cshard_acquire(struct cshard_table *t, struct controller *ctl, int32_t node_id, kstr_t key,
                       struct cshard **out, bool *want_load)
{
    *out = NULL;
    *want_load = false;
    struct mimage *img = controller_image(ctl);
    const struct mi_topic *mt = mimage_topic(img, KSTR(t->topic));
    if (!mt || mt->npartitions <= 0) {
        mimage_release(img);
        return KERR_NOT_COORDINATOR;
    }
    int32_t idx = coord_partition_for(key, mt->npartitions);
    const struct mi_partition *mp = mi_topic_partition(mt, idx);
    int32_t leader = mp ? mp->leader : -1, epoch = mp ? mp->leader_epoch : -1;
    mimage_release(img);
    if (leader != node_id)
        return KERR_NOT_COORDINATOR;
    struct cshard *s = cshard_at(t, idx, true);
    pthread_mutex_lock(&s->lock);
    if (s->state != CSHARD_ACTIVE || s->epoch != epoch) {
        *want_load = s->state != CSHARD_LOADING;
        pthread_mutex_unlock(&s->lock);
        return KERR_COORDINATOR_LOAD_IN_PROGRESS;
    }
    *out = s;
    return 0;
}

void cshard_sync(struct cshard_table *t, struct controller *ctl, int32_t node_id,
                 void (*load)(void *ctx, struct cshard *s, const kuuid_t *topic_id, int32_t epoch),
                 void (*unload)(void *ctx, struct cshard *s, const char *why), void *ctx)
{
    struct mimage *img = controller_image(ctl);
    const struct mi_topic *mt = mimage_topic(img, KSTR(t->topic));
    int32_t n = mt ? mt->npartitions : 0;
    int32_t have = cshard_count(t);
    int32_t upto = n > have ? n : have;
    for (int32_t i = 0; i < upto; i++) {
        const struct mi_partition *mp = mt ? mi_topic_partition(mt, i) : NULL;
        bool lead = mp && mp->leader == node_id;
        struct cshard *s = cshard_at(t, i, lead);
        if (!s)
            continue;
        pthread_mutex_lock(&s->lock);
        enum cshard_state st = s->state;
        int32_t epoch = s->epoch;
        bool same_topic = mt && kuuid_eq(&s->topic_id, &mt->id);
        pthread_mutex_unlock(&s->lock);
        if (!lead) {
            if (st != CSHARD_UNLOADED)
                unload(ctx, s, "no longer the partition leader");
            continue;
        }
        if (st == CSHARD_ACTIVE && epoch == mp->leader_epoch && same_topic)
            continue;
        if (st == CSHARD_ACTIVE)
            unload(ctx, s, "new leader epoch");
        load(ctx, s, &mt->id, mp->leader_epoch);
    }
    mimage_release(img);
}

struct partition *cshard_partition(struct cshard *s)
{
    pthread_mutex_lock(&s->lock);
    struct partition *p = s->state == CSHARD_ACTIVE ? s->p : NULL;
    if (p)
        atomic_fetch_add(&p->refs, 1);
    pthread_mutex_unlock(&s->lock);
    return p;
}
