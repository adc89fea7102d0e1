/* Metadata snapshots: the image written as Kafka's KRaft snapshot (a
 * SnapshotHeaderRecord control batch, the metadata records that rebuild
 * the image, a SnapshotFooterRecord control batch; batch offsets count
 * from 0 as Kafka's RecordsSnapshotWriter does), and read back into a
 * draft. The records are the ones the controller itself writes, so a
 * snapshot replays through the same mi_draft_apply path as the log. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "controller/controller_internal.h"
#include "proto/gen/config_record.h"
#include "proto/gen/feature_level_record.h"
#include "proto/gen/kmeta.h"
#include "proto/gen/partition_record.h"
#include "proto/gen/producer_ids_record.h"
#include "proto/gen/user_scram_credential_record.h"
#include "proto/gen/access_control_entry_record.h"
#include "proto/gen/client_quota_record.h"
#include "proto/gen/register_broker_record.h"
#include "proto/gen/snapshot_footer_record.h"
#include "proto/gen/snapshot_header_record.h"
#include "proto/gen/topic_record.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "quorum/quorum.h"
#include "quorum/rlog.h"
#include "util/clock.h"
#include "util/slog.h"

#define RECORDS_PER_BATCH 1000
#define BATCH_BYTES (1 << 20)

struct swriter {
    struct raft_log log;
    const struct raft_snapshot_id *id;
    struct buf out;
    struct kwriter w;
    struct rb_builder bld;
    bool open;
    int32_t nrec;
    int64_t next_offset;
    int64_t now;
    int rc;
};

static void sw_flush(struct swriter *s)
{
    if (!s->open)
        return;
    s->open = false;
    size_t len = 0;
    int rc = rb_builder_finish(&s->bld, &len);
    if (rc == 0)
        rc = s->log.ops->snapshot_append(s->log.ctx, s->id, s->out.data + s->out.len - len, len);
    if (rc && !s->rc)
        s->rc = rc;
    s->next_offset += s->nrec;
    s->nrec = 0;
    buf_reset(&s->out);
}

static void sw_add(struct swriter *s, int16_t type, int16_t version, const void *rec)
{
    if (s->rc)
        return;
    if (s->open && (s->nrec >= RECORDS_PER_BATCH || s->out.len >= BATCH_BYTES))
        sw_flush(s);
    if (!s->open) {
        struct rb_batch_opts opts = RB_BATCH_OPTS_INIT;
        opts.partition_leader_epoch = s->id->epoch;
        rb_builder_begin(&s->bld, &s->out, s->next_offset, s->now, &opts);
        s->open = true;
    }
    buf_reset(&s->w.b);
    mrec_write(&s->w, type, version, rec);
    int rc = rb_builder_add(&s->bld, s->now, KBYTES_NULL, (kbytes_t){s->w.b.data, (int32_t)s->w.b.len}, NULL, 0);
    if (rc)
        s->rc = rc;
    s->nrec++;
}

/* One control batch (header or footer) of one record. */
static void sw_control(struct swriter *s, int16_t ctype, const uint8_t *value, size_t vlen)
{
    sw_flush(s);
    if (s->rc)
        return;
    struct rb_batch_opts opts = RB_BATCH_OPTS_INIT;
    opts.partition_leader_epoch = s->id->epoch;
    opts.control = true;
    uint8_t key[RB_CONTROL_KEY_SIZE];
    rb_control_key_encode(key, ctype);
    rb_builder_begin(&s->bld, &s->out, s->next_offset, s->now, &opts);
    s->open = true;
    s->nrec = 1;
    int rc = rb_builder_add(&s->bld, s->now, (kbytes_t){key, RB_CONTROL_KEY_SIZE}, (kbytes_t){value, (int32_t)vlen},
                            NULL, 0);
    if (rc) {
        rb_builder_abort(&s->bld);
        s->open = false;
        s->rc = rc;
        return;
    }
    sw_flush(s);
}

static int16_t partition_version(const struct mimage *img)
{
    if (img->metadata_version >= 23)
        return 2;
    return img->metadata_version >= 17 ? 1 : 0;
}

static void add_configs(struct swriter *s, struct arena *a, int8_t type, kstr_t resource, const struct mi_config *cfg,
                        int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        config_record_t *cr = arena_alloc(a, sizeof *cr);
        config_record_init(cr);
        cr->resource_type = type;
        cr->resource_name = resource;
        cr->name = KSTR(cfg[i].key);
        cr->value = cfg[i].value ? KSTR(cfg[i].value) : KSTR_NULL;
        sw_add(s, KMETA_CONFIG_RECORD, 0, cr);
    }
}

int ctl_snapshot_write(struct controller *c, const struct mimage *img, const struct raft_snapshot_id *id)
{
    struct swriter s;
    memset(&s, 0, sizeof s);
    s.log = rlog_raft_log(quorum_rlog(c->q));
    s.id = id;
    s.now = clock_wall_ms();
    buf_init(&s.out);
    kw_init(&s.w);
    struct arena a = ARENA_INIT;
    int rc = s.log.ops->snapshot_begin(s.log.ctx, id);
    if (rc)
        goto out;

    struct kwriter v;
    kw_init(&v);
    snapshot_header_record_t hdr;
    snapshot_header_record_init(&hdr);
    hdr.version = 0;
    hdr.last_contained_log_timestamp = s.now;
    snapshot_header_record_encode(&v, 0, &hdr);
    sw_control(&s, RB_CONTROL_SNAPSHOT_HEADER, v.b.data, v.b.len);
    kw_free(&v);

    if (img->metadata_version > 0) {
        feature_level_record_t *fr = arena_alloc(&a, sizeof *fr);
        feature_level_record_init(fr);
        fr->name = KSTR_LIT("metadata.version");
        fr->feature_level = img->metadata_version;
        sw_add(&s, KMETA_FEATURE_LEVEL_RECORD, 0, fr);
    }
    for (int32_t i = 0; i < img->nfeatures; i++) {
        feature_level_record_t *fr = arena_alloc(&a, sizeof *fr);
        feature_level_record_init(fr);
        fr->name = KSTR(img->features[i].name);
        fr->feature_level = img->features[i].level;
        sw_add(&s, KMETA_FEATURE_LEVEL_RECORD, 0, fr);
    }
    for (int32_t i = 0; i < img->nbrokers; i++) {
        const struct mi_broker *br = &img->brokers[i];
        register_broker_record_t *r = arena_alloc(&a, sizeof *r);
        register_broker_record_init(r);
        r->broker_id = br->id;
        r->incarnation_id = br->incarnation_id;
        r->broker_epoch = br->epoch;
        r->end_points.a = register_broker_record_broker_endpoint_new_array(&a, br->nendpoints);
        r->end_points.n = br->nendpoints;
        for (int32_t k = 0; k < br->nendpoints; k++) {
            r->end_points.a[k].name = KSTR(br->endpoints[k].name);
            r->end_points.a[k].host = KSTR(br->endpoints[k].host);
            r->end_points.a[k].port = (uint16_t)br->endpoints[k].port;
            r->end_points.a[k].security_protocol = br->endpoints[k].security_protocol;
        }
        r->features.a = register_broker_record_broker_feature_new_array(&a, br->nfeatures);
        r->features.n = br->nfeatures;
        for (int32_t k = 0; k < br->nfeatures; k++) {
            r->features.a[k].name = KSTR(br->features[k].name);
            r->features.a[k].min_supported_version = br->features[k].min;
            r->features.a[k].max_supported_version = br->features[k].max;
        }
        r->rack = br->rack ? KSTR(br->rack) : KSTR_NULL;
        r->fenced = br->fenced;
        r->in_controlled_shutdown = br->in_controlled_shutdown;
        r->log_dirs.a = br->log_dirs;
        r->log_dirs.n = br->nlog_dirs;
        sw_add(&s, KMETA_REGISTER_BROKER_RECORD, register_broker_record_version(img), r);
    }
    add_configs(&s, &a, CONTROLLER_RESOURCE_BROKER, KSTR_LIT(""), img->broker_default_configs,
                img->nbroker_default_configs);
    for (int32_t i = 0; i < img->nper_broker; i++)
        add_configs(&s, &a, CONTROLLER_RESOURCE_BROKER, KSTR(img->per_broker[i].name), img->per_broker[i].configs,
                    img->per_broker[i].n);
    if (img->next_producer_id >= 0) {
        /* As Kafka's ProducerIdsImage writes it: who asked is not kept. */
        producer_ids_record_t *pr = arena_alloc(&a, sizeof *pr);
        producer_ids_record_init(pr);
        pr->broker_id = -1;
        pr->broker_epoch = -1;
        pr->next_producer_id = img->next_producer_id;
        sw_add(&s, KMETA_PRODUCER_IDS_RECORD, 0, pr);
    }
    for (int32_t i = 0; i < img->nscram; i++) {
        /* Kafka's ScramImage.write */
        const struct mi_scram *sc = &img->scram[i];
        user_scram_credential_record_t *ur = arena_alloc(&a, sizeof *ur);
        user_scram_credential_record_init(ur);
        ur->name = KSTR(sc->user);
        ur->mechanism = sc->mechanism;
        ur->salt = (kbytes_t){sc->salt, sc->salt_len};
        ur->stored_key = (kbytes_t){sc->stored_key, sc->stored_key_len};
        ur->server_key = (kbytes_t){sc->server_key, sc->server_key_len};
        ur->iterations = sc->iterations;
        sw_add(&s, KMETA_USER_SCRAM_CREDENTIAL_RECORD, 0, ur);
    }
    for (int32_t i = 0; img->acls && i < img->acls->n; i++) {
        /* Kafka's AclsImage.write: every ACL with its id */
        const struct mi_acl *ac = &img->acls->a[i];
        access_control_entry_record_t *ar = arena_alloc(&a, sizeof *ar);
        access_control_entry_record_init(ar);
        ar->id = ac->id;
        ar->resource_type = ac->resource_type;
        ar->resource_name = KSTR(ac->resource_name);
        ar->pattern_type = ac->pattern_type;
        ar->principal = KSTR(ac->principal);
        ar->host = KSTR(ac->host);
        ar->operation = ac->operation;
        ar->permission_type = ac->permission;
        sw_add(&s, KMETA_ACCESS_CONTROL_ENTRY_RECORD, 0, ar);
    }
    for (int32_t i = 0; i < img->nquotas; i++) {
        /* Kafka's ClientQuotasImage.write: one record per key */
        const struct mi_quota *q = &img->quotas[i];
        const struct mi_quota_name *names[3] = {&q->user, &q->client_id, &q->ip};
        static const char *const types[3] = {"user", "client-id", "ip"};
        for (int k = 0; k < MI_QUOTA_NKEYS; k++) {
            if (!(q->set & (1u << k)))
                continue;
            client_quota_record_t *cr = arena_alloc(&a, sizeof *cr);
            client_quota_record_init(cr);
            cr->entity.a = client_quota_record_entity_data_new_array(&a, 3);
            cr->entity.n = 0;
            for (int e = 0; e < 3; e++) {
                if (names[e]->kind == MI_QN_ABSENT)
                    continue;
                cr->entity.a[cr->entity.n].entity_type = KSTR(types[e]);
                cr->entity.a[cr->entity.n++].entity_name =
                    names[e]->kind == MI_QN_NAMED ? KSTR(names[e]->name) : KSTR_NULL;
            }
            cr->key = KSTR(mi_quota_key_name(k));
            cr->value = q->values[k];
            sw_add(&s, KMETA_CLIENT_QUOTA_RECORD, 0, cr);
        }
    }
    int16_t pv = partition_version(img);
    for (int32_t i = 0; i < img->ntopics; i++) {
        const struct mi_topic *t = img->topics[i];
        topic_record_t *tr = arena_alloc(&a, sizeof *tr);
        topic_record_init(tr);
        tr->name = (kstr_t){t->name, t->name_len};
        tr->topic_id = t->id;
        sw_add(&s, KMETA_TOPIC_RECORD, 0, tr);
        add_configs(&s, &a, CONTROLLER_RESOURCE_TOPIC, tr->name, t->configs, t->nconfigs);
        for (int32_t p = 0; p < t->npartitions; p++) {
            const struct mi_partition *mp = &t->partitions[p];
            partition_record_t *pr = arena_alloc(&a, sizeof *pr);
            partition_record_init(pr);
            pr->partition_id = mp->index;
            pr->topic_id = t->id;
            pr->replicas.a = mp->replicas;
            pr->replicas.n = mp->nreplicas;
            pr->isr.a = mp->isr;
            pr->isr.n = mp->nisr;
            pr->removing_replicas.n = 0;
            pr->adding_replicas.n = 0;
            pr->leader = mp->leader;
            pr->leader_recovery_state = mp->leader_recovery_state;
            pr->leader_epoch = mp->leader_epoch;
            pr->partition_epoch = mp->partition_epoch;
            if (pv >= 1 && mp->directories) {
                pr->directories.a = mp->directories;
                pr->directories.n = mp->nreplicas;
            }
            sw_add(&s, KMETA_PARTITION_RECORD, pv, pr);
        }
        /* The arena holds record structs only until they are encoded. */
        if (a.total > (1u << 22)) {
            sw_flush(&s);
            arena_free(&a);
        }
    }
    kw_init(&v);
    snapshot_footer_record_t ftr;
    snapshot_footer_record_init(&ftr);
    ftr.version = 0;
    snapshot_footer_record_encode(&v, 0, &ftr);
    sw_control(&s, RB_CONTROL_SNAPSHOT_FOOTER, v.b.data, v.b.len);
    kw_free(&v);
    rc = s.rc;
    if (rc == 0)
        rc = s.log.ops->snapshot_finish(s.log.ctx, id);
out:
    if (s.open)
        rb_builder_abort(&s.bld);
    kw_free(&s.w);
    buf_free(&s.out);
    arena_free(&a);
    return rc;
}

struct mi_draft *ctl_snapshot_load(struct controller *c, const struct raft_snapshot_id *id,
                                   const struct samsa_config *cfg, char *err, size_t errlen)
{
    struct buf b = BUF_INIT;
    int rc = rlog_snapshot_load(quorum_rlog(c->q), id, &b);
    if (rc) {
        snprintf(err, errlen, "%s", kerr_name((int16_t)rc));
        buf_free(&b);
        return NULL;
    }
    struct mi_draft *d = mi_draft_begin(NULL, cfg, c->env.node_id);
    size_t pos = 0;
    while (pos < b.len) {
        size_t size = 0;
        if (rb_frame(b.data + pos, b.len - pos, &size) != 0 || !rb_crc_ok(b.data + pos, size)) {
            snprintf(err, errlen, "malformed batch at byte %zu", pos);
            goto fail;
        }
        char why[512];
        if (mi_draft_apply_batch(d, b.data + pos, size, why, sizeof why) < 0) {
            snprintf(err, errlen, "%s", why);
            goto fail;
        }
        pos += size;
    }
    mi_draft_set_offset(d, id->end_offset - 1);
    buf_free(&b);
    return d;
fail:
    mi_draft_abort(d);
    buf_free(&b);
    return NULL;
}
