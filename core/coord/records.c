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
    out->kind = CREC_OTHER;
    return 0;
}
