#include "coord/records.h"

#include <string.h>

#include "coord/group.h"

#define OFFSET_KEY_VERSION 1
#define GROUP_KEY_VERSION 2
/* MetadataVersion.groupMetadataValueVersion / offsetCommitValueVersion
 * for every version samsa writes (IBP 2.3+). */
#define GROUP_VALUE_VERSION 3
#define OFFSET_VALUE_VERSION 3
#define OFFSET_VALUE_VERSION_EXPIRE 1

/* One code point of UTF-8 at s[*i], advancing *i; malformed input yields
 * U+FFFD for one byte. */
static uint32_t utf8_next(const unsigned char *s, size_t len, size_t *i)
{
    unsigned char c = s[*i];
    int n;
    uint32_t cp;
    if (c < 0x80) {
        (*i)++;
        return c;
    } else if ((c & 0xe0) == 0xc0) {
        n = 1;
        cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
        n = 2;
        cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
        n = 3;
        cp = c & 0x07;
    } else {
        (*i)++;
        return 0xfffd;
    }
    if (*i + (size_t)n >= len) {
        (*i)++;
        return 0xfffd;
    }
    for (int k = 1; k <= n; k++) {
        unsigned char cc = s[*i + (size_t)k];
        if ((cc & 0xc0) != 0x80) {
            (*i)++;
            return 0xfffd;
        }
        cp = (cp << 6) | (cc & 0x3f);
    }
    static const uint32_t min[4] = {0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        (*i)++;
        return 0xfffd;
    }
    *i += (size_t)n + 1;
    return cp;
}

int32_t coord_java_hash(const char *s, size_t len)
{
    uint32_t h = 0;
    size_t i = 0;
    const unsigned char *u = (const unsigned char *)s;
    while (i < len) {
        uint32_t cp = utf8_next(u, len, &i);
        if (cp >= 0x10000) {
            cp -= 0x10000;
            h = 31 * h + (0xd800 + (cp >> 10));
            h = 31 * h + (0xdc00 + (cp & 0x3ff));
        } else {
            h = 31 * h + cp;
        }
    }
    return (int32_t)h;
}

int32_t coord_partition_for(kstr_t group, int32_t n)
{
    if (n <= 0)
        return 0;
    int32_t h = coord_java_hash(group.p ? group.p : "", (size_t)(group.len > 0 ? group.len : 0));
    int32_t a = h == INT32_MIN ? 0 : (h < 0 ? -h : h);
    return a % n;
}

static void put_struct(struct buf *out, int16_t version, void (*enc)(struct kwriter *, int16_t, const void *),
                       const void *m)
{
    struct kwriter w;
    kw_init(&w);
    kw_i16(&w, version);
    enc(&w, version, m);
    buf_append(out, w.b.data, w.b.len);
    kw_free(&w);
}

static void enc_okey(struct kwriter *w, int16_t v, const void *m) { offset_commit_key_encode(w, v, m); }
static void enc_oval(struct kwriter *w, int16_t v, const void *m) { offset_commit_value_encode(w, v, m); }
static void enc_gkey(struct kwriter *w, int16_t v, const void *m) { group_metadata_key_encode(w, v, m); }
static void enc_gval(struct kwriter *w, int16_t v, const void *m) { group_metadata_value_encode(w, v, m); }

void crec_offset_key(struct buf *out, kstr_t group, kstr_t topic, int32_t partition)
{
    offset_commit_key_t k;
    offset_commit_key_init(&k);
    k.group = group;
    k.topic = topic;
    k.partition = partition;
    put_struct(out, OFFSET_KEY_VERSION, enc_okey, &k);
}

void crec_offset_value(struct buf *out, const struct cg_offset *o)
{
    offset_commit_value_t v;
    offset_commit_value_init(&v);
    v.offset = o->offset;
    v.leader_epoch = o->leader_epoch;
    v.metadata = (kstr_t){o->metadata ? o->metadata : "", o->metadata_len};
    v.commit_timestamp = o->commit_ts;
    v.expire_timestamp = o->expire_ts;
    put_struct(out, o->expire_ts >= 0 ? OFFSET_VALUE_VERSION_EXPIRE : OFFSET_VALUE_VERSION, enc_oval, &v);
}

void crec_group_key(struct buf *out, kstr_t group)
{
    group_metadata_key_t k;
    group_metadata_key_init(&k);
    k.group = group;
    put_struct(out, GROUP_KEY_VERSION, enc_gkey, &k);
}

static kstr_t ks(const char *s)
{
    return s ? KSTR(s) : KSTR_NULL;
}

void crec_group_value(struct buf *out, const struct cgroup *g, const kbytes_t *assign)
{
    struct arena a = ARENA_INIT;
    group_metadata_value_t v;
    group_metadata_value_init(&v);
    v.protocol_type = g->protocol_type ? KSTR(g->protocol_type) : KSTR_LIT("");
    v.generation = g->generation;
    v.protocol = ks(g->protocol_name);
    v.leader = ks(g->leader);
    v.current_state_timestamp = g->state_ts;
    int32_t n = g->state == CG_EMPTY ? 0 : g->nmembers;
    v.members.a = group_metadata_value_member_metadata_new_array(&a, n);
    v.members.n = n;
    for (int32_t i = 0; i < n; i++) {
        const struct cg_member *m = g->members[i];
        group_metadata_value_member_metadata_t *o = &v.members.a[i];
        o->member_id = KSTR(m->member_id);
        o->group_instance_id = ks(m->instance_id);
        o->client_id = KSTR(m->client_id);
        o->client_host = KSTR(m->client_host);
        o->rebalance_timeout = m->rebalance_timeout_ms;
        o->session_timeout = m->session_timeout_ms;
        o->subscription = (kbytes_t){NULL, 0};
        for (int32_t k = 0; k < m->nprotocols; k++)
            if (g->protocol_name && strcmp(m->protocols[k].name, g->protocol_name) == 0)
                o->subscription = (kbytes_t){m->protocols[k].meta, m->protocols[k].meta_len};
        o->assignment = assign ? assign[i] : (kbytes_t){m->assignment, m->assignment_len};
        if (o->assignment.len < 0)
            o->assignment = (kbytes_t){NULL, 0};
    }
    put_struct(out, GROUP_VALUE_VERSION, enc_gval, &v);
    arena_free(&a);
}

static int crec_parse_ccg(int16_t kv, struct kreader *r, struct kreader *vr, int16_t vv, struct crec *out);

int crec_parse(kbytes_t key, kbytes_t value, struct arena *a, struct crec *out)
{
    memset(out, 0, sizeof *out);
    if (key.len < 2)
        return -1;
    struct kreader r;
    kr_init(&r, key.p, (size_t)key.len, a);
    int16_t kv = kr_i16(&r);
    out->key_version = kv;
    out->tombstone = value.len < 0;
    struct kreader vr;
    int16_t vv = 0;
    if (!out->tombstone) {
        if (value.len < 2)
            return -1;
        kr_init(&vr, value.p, (size_t)value.len, a);
        vv = kr_i16(&vr);
        if (vv < 0)
            return -1;
    }
    if (kv == 0 || kv == 1) {
        out->kind = CREC_OFFSET;
        if (offset_commit_key_decode(&r, kv, &out->okey) < 0)
            return -1;
        if (!out->tombstone) {
            if (vv > OFFSET_COMMIT_VALUE_MAX_VERSION)
                vv = OFFSET_COMMIT_VALUE_MAX_VERSION; /* newer values only add fields */
            if (offset_commit_value_decode(&vr, vv, &out->ovalue) < 0)
                return -1;
        }
        return 0;
    }
    if (kv == 2) {
        out->kind = CREC_GROUP;
        if (group_metadata_key_decode(&r, kv, &out->gkey) < 0)
            return -1;
        if (!out->tombstone) {
            if (vv > GROUP_METADATA_VALUE_MAX_VERSION)
                vv = GROUP_METADATA_VALUE_MAX_VERSION;
            if (group_metadata_value_decode(&vr, vv, &out->gvalue) < 0)
                return -1;
        }
        return 0;
    }
    if (kv >= 3 && kv <= 8)
        return crec_parse_ccg(kv, &r, &vr, vv, out);
    out->kind = CREC_OTHER;
    return 0;
}

/* ------------------------------------------------------------------ */
/* consumer groups (KIP-848)                                           */

#include "proto/gen/consumer_group_current_member_assignment_key.h"
#include "proto/gen/consumer_group_member_metadata_key.h"
#include "proto/gen/consumer_group_metadata_key.h"
#include "proto/gen/consumer_group_partition_metadata_key.h"
#include "proto/gen/consumer_group_target_assignment_member_key.h"
#include "proto/gen/consumer_group_target_assignment_metadata_key.h"

static void enc_k3(struct kwriter *w, int16_t v, const void *m) { consumer_group_metadata_key_encode(w, v, m); }
static void enc_k4(struct kwriter *w, int16_t v, const void *m)
{
    consumer_group_partition_metadata_key_encode(w, v, m);
}
static void enc_k5(struct kwriter *w, int16_t v, const void *m)
{
    consumer_group_member_metadata_key_encode(w, v, m);
}
static void enc_k6(struct kwriter *w, int16_t v, const void *m)
{
    consumer_group_target_assignment_metadata_key_encode(w, v, m);
}
static void enc_k7(struct kwriter *w, int16_t v, const void *m)
{
    consumer_group_target_assignment_member_key_encode(w, v, m);
}
static void enc_k8(struct kwriter *w, int16_t v, const void *m)
{
    consumer_group_current_member_assignment_key_encode(w, v, m);
}
static void enc_v3(struct kwriter *w, int16_t v, const void *m) { consumer_group_metadata_value_encode(w, v, m); }
static void enc_v4(struct kwriter *w, int16_t v, const void *m)
{
    consumer_group_partition_metadata_value_encode(w, v, m);
}
static void enc_v5(struct kwriter *w, int16_t v, const void *m)
{
    consumer_group_member_metadata_value_encode(w, v, m);
}
static void enc_v6(struct kwriter *w, int16_t v, const void *m)
{
    consumer_group_target_assignment_metadata_value_encode(w, v, m);
}
static void enc_v7(struct kwriter *w, int16_t v, const void *m)
{
    consumer_group_target_assignment_member_value_encode(w, v, m);
}
static void enc_v8(struct kwriter *w, int16_t v, const void *m)
{
    consumer_group_current_member_assignment_value_encode(w, v, m);
}

void crec_ccg_key(struct buf *out, enum ccg_rec kind, kstr_t group, kstr_t member)
{
    /* every key is {GroupId[, MemberId]} */
    switch (kind) {
    case CCG_REC_METADATA: {
        consumer_group_metadata_key_t k = {group};
        put_struct(out, 3, enc_k3, &k);
        break;
    }
    case CCG_REC_PARTITION_META: {
        consumer_group_partition_metadata_key_t k = {group};
        put_struct(out, 4, enc_k4, &k);
        break;
    }
    case CCG_REC_MEMBER: {
        consumer_group_member_metadata_key_t k = {group, member};
        put_struct(out, 5, enc_k5, &k);
        break;
    }
    case CCG_REC_TARGET_META: {
        consumer_group_target_assignment_metadata_key_t k = {group};
        put_struct(out, 6, enc_k6, &k);
        break;
    }
    case CCG_REC_TARGET_MEMBER: {
        consumer_group_target_assignment_member_key_t k = {group, member};
        put_struct(out, 7, enc_k7, &k);
        break;
    }
    case CCG_REC_CURRENT: {
        consumer_group_current_member_assignment_key_t k = {group, member};
        put_struct(out, 8, enc_k8, &k);
        break;
    }
    }
}

/* A sorted partition set as [{TopicId, Partitions}]: the three
 * TopicPartitions structs of the schemas have the same layout. */
struct tp_out {
    kuuid_t topic_id;
    struct {
        int32_t *a;
        int32_t n;
    } partitions;
};

static struct tp_out *tp_group(struct arena *a, const struct ctp_set *s, int32_t *n)
{
    struct tp_out *v = arena_alloc(a, (size_t)(s->n + 1) * sizeof *v);
    int32_t k = 0;
    for (int32_t i = 0; i < s->n;) {
        int32_t j = i;
        while (j < s->n && kuuid_eq(&s->v[j].topic, &s->v[i].topic))
            j++;
        v[k].topic_id = s->v[i].topic;
        v[k].partitions.a = arena_alloc(a, (size_t)(j - i) * sizeof(int32_t));
        v[k].partitions.n = j - i;
        for (int32_t x = i; x < j; x++)
            v[k].partitions.a[x - i] = s->v[x].part;
        k++;
        i = j;
    }
    *n = k;
    return v;
}

_Static_assert(sizeof(struct tp_out) == sizeof(consumer_group_current_member_assignment_value_topic_partitions_t),
               "TopicPartitions layout");
_Static_assert(sizeof(struct tp_out) == sizeof(consumer_group_target_assignment_member_value_topic_partition_t),
               "TopicPartition layout");

void crec_ccg_value(struct buf *out, enum ccg_rec kind, const struct cgroup *g, const struct ccg_member *m)
{
    struct arena a = ARENA_INIT;
    const struct ccgroup *cc = g->cc;
    switch (kind) {
    case CCG_REC_METADATA: {
        consumer_group_metadata_value_t v;
        consumer_group_metadata_value_init(&v);
        v.epoch = cc->epoch;
        put_struct(out, 0, enc_v3, &v);
        break;
    }
    case CCG_REC_PARTITION_META: {
        consumer_group_partition_metadata_value_t v;
        consumer_group_partition_metadata_value_init(&v);
        v.topics.a = consumer_group_partition_metadata_value_topic_metadata_new_array(&a, cc->nmeta);
        v.topics.n = cc->nmeta;
        for (int32_t i = 0; i < cc->nmeta; i++) {
            v.topics.a[i].topic_id = cc->meta[i].id;
            v.topics.a[i].topic_name = KSTR(cc->meta[i].name);
            v.topics.a[i].num_partitions = cc->meta[i].nparts;
        }
        put_struct(out, 0, enc_v4, &v);
        break;
    }
    case CCG_REC_MEMBER: {
        consumer_group_member_metadata_value_t v;
        consumer_group_member_metadata_value_init(&v);
        v.instance_id = ks(m->instance_id);
        v.rack_id = ks(m->rack_id);
        v.client_id = KSTR(m->client_id ? m->client_id : "");
        v.client_host = KSTR(m->client_host ? m->client_host : "");
        v.subscribed_topic_names.a = arena_alloc(&a, (size_t)(m->ntopics + 1) * sizeof(kstr_t));
        v.subscribed_topic_names.n = m->ntopics;
        for (int32_t i = 0; i < m->ntopics; i++)
            v.subscribed_topic_names.a[i] = KSTR(m->topics[i]);
        v.subscribed_topic_regex = ks(m->regex);
        v.rebalance_timeout_ms = m->rebalance_timeout_ms;
        v.server_assignor = ks(m->assignor);
        v.classic_member_metadata = NULL;
        put_struct(out, 0, enc_v5, &v);
        break;
    }
    case CCG_REC_TARGET_META: {
        consumer_group_target_assignment_metadata_value_t v;
        consumer_group_target_assignment_metadata_value_init(&v);
        v.assignment_epoch = cc->assign_epoch;
        put_struct(out, 0, enc_v6, &v);
        break;
    }
    case CCG_REC_TARGET_MEMBER: {
        consumer_group_target_assignment_member_value_t v;
        consumer_group_target_assignment_member_value_init(&v);
        int32_t n;
        v.topic_partitions.a = (void *)tp_group(&a, &m->target, &n);
        v.topic_partitions.n = n;
        put_struct(out, 0, enc_v7, &v);
        break;
    }
    case CCG_REC_CURRENT: {
        consumer_group_current_member_assignment_value_t v;
        consumer_group_current_member_assignment_value_init(&v);
        v.member_epoch = m->epoch;
        v.previous_member_epoch = m->prev_epoch;
        v.state = m->state;
        int32_t n;
        v.assigned_partitions.a = (void *)tp_group(&a, &m->assigned, &n);
        v.assigned_partitions.n = n;
        v.partitions_pending_revocation.a = (void *)tp_group(&a, &m->revoking, &n);
        v.partitions_pending_revocation.n = n;
        put_struct(out, 0, enc_v8, &v);
        break;
    }
    }
    arena_free(&a);
}

/* Decodes a consumer group record (key version 3..8). */
static int crec_parse_ccg(int16_t kv, struct kreader *r, struct kreader *vr, int16_t vv, struct crec *out)
{
    out->kind = CREC_CCG;
    out->ccg_kind = (enum ccg_rec)kv;
    out->ccg_member = KSTR_NULL;
    /* every key starts with GroupId, the member kinds add MemberId */
    int rc;
    switch (kv) {
    case 3: {
        consumer_group_metadata_key_t k;
        rc = consumer_group_metadata_key_decode(r, kv, &k);
        out->ccg_group = k.group_id;
        if (!rc && !out->tombstone)
            rc = consumer_group_metadata_value_decode(vr, 0, &out->cmeta);
        break;
    }
    case 4: {
        consumer_group_partition_metadata_key_t k;
        rc = consumer_group_partition_metadata_key_decode(r, kv, &k);
        out->ccg_group = k.group_id;
        if (!rc && !out->tombstone)
            rc = consumer_group_partition_metadata_value_decode(vr, 0, &out->cpmeta);
        break;
    }
    case 5: {
        consumer_group_member_metadata_key_t k;
        rc = consumer_group_member_metadata_key_decode(r, kv, &k);
        out->ccg_group = k.group_id;
        out->ccg_member = k.member_id;
        if (!rc && !out->tombstone)
            rc = consumer_group_member_metadata_value_decode(vr, 0, &out->cmember);
        break;
    }
    case 6: {
        consumer_group_target_assignment_metadata_key_t k;
        rc = consumer_group_target_assignment_metadata_key_decode(r, kv, &k);
        out->ccg_group = k.group_id;
        if (!rc && !out->tombstone)
            rc = consumer_group_target_assignment_metadata_value_decode(vr, 0, &out->ctmeta);
        break;
    }
    case 7: {
        consumer_group_target_assignment_member_key_t k;
        rc = consumer_group_target_assignment_member_key_decode(r, kv, &k);
        out->ccg_group = k.group_id;
        out->ccg_member = k.member_id;
        if (!rc && !out->tombstone)
            rc = consumer_group_target_assignment_member_value_decode(vr, 0, &out->ctmember);
        break;
    }
    default: {
        consumer_group_current_member_assignment_key_t k;
        rc = consumer_group_current_member_assignment_key_decode(r, kv, &k);
        out->ccg_group = k.group_id;
        out->ccg_member = k.member_id;
        if (!rc && !out->tombstone)
            rc = consumer_group_current_member_assignment_value_decode(vr, 0, &out->ccurrent);
        break;
    }
    }
    (void)vv;
    return rc < 0 ? -1 : 0;
}
