/* The single-node controller: admin operations become metadata records,
 * appended durably to __cluster_metadata-0 and replayed into the next
 * image. Validation and messages follow Kafka's ControllerApis and
 * ReplicationControlManager (KRaft mode). */
#include "controller/controller.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker.h"
#include "config.h"
#include "controller/image_build.h"
#include "log/meta_properties.h"
#include "log/plog.h"
#include "proto/gen/config_record.h"
#include "proto/gen/feature_level_record.h"
#include "proto/gen/kmeta.h"
#include "proto/gen/partition_record.h"
#include "proto/gen/register_broker_record.h"
#include "proto/gen/remove_topic_record.h"
#include "proto/gen/topic_record.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "replica/partition.h"
#include "topic_config.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/sfile.h"
#include "util/slog.h"
#include "util/uuid.h"

#define METADATA_DIR_NAME "__cluster_metadata-0"
#define CLUSTER_METADATA_TOPIC "__cluster_metadata"
/* The partitionLeaderEpoch stamped on metadata batches: a single-node
 * quorum's leader is elected once, at epoch 1. */
#define METADATA_LEADER_EPOCH 1
#define MAX_TOPIC_NAME_LENGTH 249

/* Kafka's DirectoryId markers. */
static const kuuid_t dir_migrating = {{0}};
static const kuuid_t dir_unassigned = {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}};

struct controller {
    struct broker *b;
    pthread_mutex_t op_lock;  /* serialises operations and the log */
    pthread_mutex_t img_lock; /* held only to swap cur or take a reference */
    struct mimage *cur;       /* only replaced under op_lock too */
    struct plog *log;
    char *dir;
    /* Broker configs this controller published into b->cfg (dynamic
     * broker config changes), oldest first; owned here. Workers may still
     * read a replaced one, so none is freed before controller_close (they
     * are small and changes are rare). orig_cfg is b->cfg at open, owned
     * by the caller. Both only change under op_lock. */
    struct samsa_config **cfgs;
    size_t ncfgs;
    struct samsa_config *orig_cfg;
};

/* ------------------------------------------------------------------ */
/* Helpers                                                             */

static int err_msg(char *msg, size_t msglen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int err_msg(char *msg, size_t msglen, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msglen, fmt, ap);
    va_end(ap);
    return code;
}

/* Records of one operation; the structs and their strings live in arena. */
struct mrec {
    int16_t type;
    int16_t version;
    const void *rec;
};

struct recs {
    struct mrec *a;
    size_t n, cap;
    struct arena arena;
};

static void recs_init(struct recs *r) { memset(r, 0, sizeof *r); }

static void recs_free(struct recs *r)
{
    free(r->a);
    arena_free(&r->arena);
}

static void recs_add(struct recs *r, int16_t type, int16_t version, const void *rec)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 16;
        r->a = xrealloc(r->a, r->cap * sizeof *r->a);
    }
    r->a[r->n++] = (struct mrec){type, version, rec};
}

static void publish(struct controller *c, struct mimage *img)
{
    pthread_mutex_lock(&c->img_lock);
    struct mimage *old = c->cur;
    c->cur = img;
    pthread_mutex_unlock(&c->img_lock);
    mimage_release(old);
}

static void sync_partitions(struct controller *c)
{
    if (!c->b->partitions)
        return;
    char err[512];
    if (preg_sync(c->b->partitions, c->cur, err, sizeof err) < 0)
        slog_error("partition registry: %s (retried at the next metadata change)", err);
}

/* Publishes cfg as b->cfg (a dynamic broker config change); the
 * controller owns it from now on. Caller holds op_lock. */
static void publish_cfg(struct controller *c, struct samsa_config *cfg)
{
    struct samsa_config *old = atomic_load_explicit(&c->b->cfg, memory_order_relaxed);
    c->cfgs = xrealloc(c->cfgs, (c->ncfgs + 1) * sizeof *c->cfgs);
    c->cfgs[c->ncfgs++] = cfg;
    atomic_store_explicit(&c->b->cfg, cfg, memory_order_release);
    /* samsa.log.level is a cluster-wide dynamic key: it takes effect now. */
    if (cfg->log_level != old->log_level)
        slog_set_level((enum slog_level)cfg->log_level);
}

static int commit_cfg(struct controller *c, const struct recs *rs, struct samsa_config *new_cfg, char *msg,
                      size_t msglen);

/* Appends the records as one batch, fsync'ed, and publishes the image
 * they make. The draft applies the very bytes that go to the log, so a
 * replay after restart rebuilds the same image. Caller holds op_lock. */
static int commit(struct controller *c, const struct recs *rs, char *msg, size_t msglen)
{
    return commit_cfg(c, rs, NULL, msg, msglen);
}

/* commit, for a change of the broker config too: new_cfg (when not NULL)
 * is the config the records make; the image's effective topic configs are
 * computed from it, and on success it is published as b->cfg (owned by
 * the controller) just before the image. On failure the caller keeps it. */
static int commit_cfg(struct controller *c, const struct recs *rs, struct samsa_config *new_cfg, char *msg,
                      size_t msglen)
{
    int64_t now = clock_wall_ms();
    int64_t base = plog_log_end_offset(c->log);
    struct buf out = BUF_INIT;
    struct kwriter w;
    kw_init(&w);
    struct rb_builder bld;
    rb_builder_begin(&bld, &out, base, now, NULL);
    int rc = 0;
    for (size_t i = 0; i < rs->n && rc == 0; i++) {
        buf_reset(&w.b);
        mrec_write(&w, rs->a[i].type, rs->a[i].version, rs->a[i].rec);
        rc = rb_builder_add(&bld, now, KBYTES_NULL, (kbytes_t){w.b.data, (int32_t)w.b.len}, NULL, 0);
    }
    size_t len = 0;
    if (rc == 0)
        rc = rb_builder_finish(&bld, &len);
    else
        rb_builder_abort(&bld);
    kw_free(&w);
    if (rc != 0) {
        buf_free(&out);
        slog_error("metadata: cannot build a batch of %zu records: %s", rs->n, kerr_name((int16_t)rc));
        return err_msg(msg, msglen, KERR_UNKNOWN_SERVER_ERROR, "%s", "");
    }
    uint8_t *batch = out.data + out.len - len;
    char err[512];
    struct mi_draft *d = mi_draft_begin(c->cur, new_cfg ? new_cfg : c->b->cfg, c->b->node_id);
    if (mi_draft_apply_batch(d, batch, len, err, sizeof err) < 0) {
        mi_draft_abort(d);
        buf_free(&out);
        slog_error("metadata: refusing a change that does not apply: %s", err);
        return err_msg(msg, msglen, KERR_UNKNOWN_SERVER_ERROR, "%s", "");
    }
    struct plog_append_result res;
    rc = plog_append(c->log, batch, len, METADATA_LEADER_EPOCH, -1, &res);
    buf_free(&out);
    if (rc != 0) {
        mi_draft_abort(d);
        slog_error("metadata: append to %s failed: %s", c->dir, kerr_name((int16_t)rc));
        return err_msg(msg, msglen, rc, "%s", "");
    }
    if (res.base_offset != base)
        slog_warn("metadata: batch landed at offset %lld, expected %lld", (long long)res.base_offset,
                  (long long)base);
    struct mimage *img = mi_draft_finish(d);
    if (new_cfg)
        publish_cfg(c, new_cfg);
    publish(c, img);
    sync_partitions(c);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Brokers and placement                                               */

/* Kafka's ClusterControlManager.isActive: registered, not fenced, not in
 * controlled shutdown. */
static bool broker_active(const struct mimage *img, int32_t id)
{
    const struct mi_broker *b = mimage_broker(img, id);
    return b && !b->fenced && !b->in_controlled_shutdown;
}

/* Kafka's ClusterControlManager.defaultDir. */
static kuuid_t default_dir(const struct mimage *img, int32_t id)
{
    const struct mi_broker *b = mimage_broker(img, id);
    if (!b)
        return dir_unassigned;
    if (b->nlog_dirs == 0)
        return dir_migrating;
    if (b->nlog_dirs == 1)
        return b->log_dirs[0];
    return dir_unassigned;
}

static int16_t partition_record_version(const struct mimage *img)
{
    if (img->metadata_version >= 23) /* IBP_4_0_IV1: ELR */
        return 2;
    if (img->metadata_version >= 17) /* IBP_3_7_IV2: directory assignment */
        return 1;
    return 0;
}

static int16_t register_broker_record_version(const struct mimage *img)
{
    int16_t mv = img->metadata_version;
    if (mv >= 17)
        return 3;
    if (mv >= 8) /* IBP_3_4_IV0 */
        return 2;
    if (mv >= 7) /* IBP_3_3_IV3 */
        return 1;
    return 0;
}

/* Adds a PartitionRecord with the replicas given; the ISR is the active
 * ones and the leader the first of those (Kafka's
 * buildPartitionRegistration). */
static void add_partition_record(struct recs *rs, const struct mimage *img, const kuuid_t *topic_id,
                                 int32_t index, const int32_t *replicas, int32_t n)
{
    partition_record_t *pr = arena_alloc(&rs->arena, sizeof *pr);
    partition_record_init(pr);
    pr->partition_id = index;
    pr->topic_id = *topic_id;
    pr->replicas.a = arena_alloc(&rs->arena, (size_t)n * sizeof(int32_t));
    pr->replicas.n = n;
    memcpy(pr->replicas.a, replicas, (size_t)n * sizeof(int32_t));
    pr->isr.a = arena_alloc(&rs->arena, (size_t)n * sizeof(int32_t));
    pr->isr.n = 0;
    for (int32_t i = 0; i < n; i++)
        if (broker_active(img, replicas[i]))
            pr->isr.a[pr->isr.n++] = replicas[i];
    pr->removing_replicas.n = 0;
    pr->adding_replicas.n = 0;
    pr->leader = pr->isr.n > 0 ? pr->isr.a[0] : -1;
    pr->leader_recovery_state = 0;
    pr->leader_epoch = 0;
    pr->partition_epoch = 0;
    int16_t v = partition_record_version(img);
    if (v >= 1) {
        pr->directories.a = arena_alloc(&rs->arena, (size_t)n * sizeof(kuuid_t));
        pr->directories.n = n;
        for (int32_t i = 0; i < n; i++)
            pr->directories.a[i] = default_dir(img, replicas[i]);
    }
    recs_add(rs, KMETA_PARTITION_RECORD, v, pr);
}

/* Kafka's StripedReplicaPlacer checks, then a round-robin placement over
 * the registered brokers (unfenced first). Fills out[p * rf + r]. On
 * error the message is the placer's (callers add their prefix). */
static int place(const struct mimage *img, int32_t start, int32_t nparts, int32_t rf, int32_t *out,
                 char *msg, size_t msglen)
{
    if (rf <= 0)
        return err_msg(msg, msglen, KERR_INVALID_REPLICATION_FACTOR,
                       "Invalid replication factor %d: the replication factor must be positive.", (int)rf);
    int32_t *ids = xmalloc((size_t)(img->nbrokers > 0 ? img->nbrokers : 1) * sizeof *ids);
    int32_t nids = 0, nunfenced;
    for (int32_t i = 0; i < img->nbrokers; i++)
        if (!img->brokers[i].in_controlled_shutdown && !img->brokers[i].fenced)
            ids[nids++] = img->brokers[i].id;
    nunfenced = nids;
    for (int32_t i = 0; i < img->nbrokers; i++)
        if (!img->brokers[i].in_controlled_shutdown && img->brokers[i].fenced)
            ids[nids++] = img->brokers[i].id;
    if (nunfenced == 0) {
        free(ids);
        return err_msg(msg, msglen, KERR_INVALID_REPLICATION_FACTOR, "All brokers are currently fenced.");
    }
    if (rf > nids) {
        free(ids);
        return err_msg(msg, msglen, KERR_INVALID_REPLICATION_FACTOR,
                       "The target replication factor of %d cannot be reached because only %d broker(s) "
                       "are registered.",
                       (int)rf, (int)nids);
    }
    /* Unfenced brokers first, rotated per partition so leaders spread;
     * fenced ones only when the unfenced are too few (as Kafka's placer
     * does). ids[nunfenced..nids) are the fenced ones. */
    for (int32_t p = 0; p < nparts; p++) {
        int32_t *o = &out[(size_t)p * (size_t)rf];
        for (int32_t r = 0; r < rf; r++)
            o[r] = r < nunfenced ? ids[((int64_t)start + p + r) % nunfenced]
                                 : ids[nunfenced + (int32_t)(((int64_t)start + p + r - nunfenced) %
                                                             (nids - nunfenced))];
    }
    free(ids);
    return 0;
}

static int int_cmp(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

/* Kafka's ReplicationControlManager.validateManualPartitionAssignment;
 * rf < 0: no previous partition to be consistent with. */
static int validate_manual(const struct mimage *img, const int32_t *replicas, int32_t n, int32_t rf,
                           char *msg, size_t msglen)
{
    if (n <= 0)
        return err_msg(msg, msglen, KERR_INVALID_REPLICA_ASSIGNMENT,
                       "The manual partition assignment includes an empty replica list.");
    int32_t *sorted = xmalloc((size_t)n * sizeof *sorted);
    memcpy(sorted, replicas, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, int_cmp);
    int rc = 0;
    for (int32_t i = 0; i < n && rc == 0; i++) {
        if (!mimage_broker(img, sorted[i]))
            rc = err_msg(msg, msglen, KERR_INVALID_REPLICA_ASSIGNMENT,
                         "The manual partition assignment includes broker %d, but no such broker is "
                         "registered.",
                         (int)sorted[i]);
        else if (i > 0 && sorted[i] == sorted[i - 1])
            rc = err_msg(msg, msglen, KERR_INVALID_REPLICA_ASSIGNMENT,
                         "The manual partition assignment includes the broker %d more than once.",
                         (int)sorted[i]);
    }
    free(sorted);
    if (rc == 0 && rf >= 0 && n != rf)
        rc = err_msg(msg, msglen, KERR_INVALID_REPLICA_ASSIGNMENT,
                     "The manual partition assignment includes a partition with %d replica(s), but "
                     "this is not consistent with previous partitions, which have %d replica(s).",
                     (int)n, (int)rf);
    return rc;
}

static bool any_active(const struct mimage *img, const int32_t *replicas, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        if (broker_active(img, replicas[i]))
            return true;
    return false;
}

/* ------------------------------------------------------------------ */
/* Topic names                                                         */

/* Java String.length() of UTF-8 bytes (UTF-16 units), for the length
 * rule; non-ASCII names fail the character rule anyway. */
static size_t java_length(const char *p, size_t n)
{
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        if ((ch & 0xC0) != 0x80)
            len += (ch >= 0xF0) ? 2 : 1;
    }
    return len;
}

/* Kafka's Topic.validate. */
static int validate_topic_name(kstr_t name, char *msg, size_t msglen)
{
    const char *pfx = "Topic name is invalid: ";
    int32_t n = name.len > 0 ? name.len : 0;
    if (n == 0)
        return err_msg(msg, msglen, KERR_INVALID_TOPIC_EXCEPTION, "%sthe empty string is not allowed", pfx);
    if (n == 1 && name.p[0] == '.')
        return err_msg(msg, msglen, KERR_INVALID_TOPIC_EXCEPTION, "%s'.' is not allowed", pfx);
    if (n == 2 && name.p[0] == '.' && name.p[1] == '.')
        return err_msg(msg, msglen, KERR_INVALID_TOPIC_EXCEPTION, "%s'..' is not allowed", pfx);
    if (java_length(name.p, (size_t)n) > MAX_TOPIC_NAME_LENGTH)
        return err_msg(msg, msglen, KERR_INVALID_TOPIC_EXCEPTION,
                       "%sthe length of '%.*s' is longer than the max allowed length %d", pfx, (int)n,
                       name.p, MAX_TOPIC_NAME_LENGTH);
    for (int32_t i = 0; i < n; i++) {
        char ch = name.p[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                  ch == '.' || ch == '_' || ch == '-';
        if (!ok)
            return err_msg(msg, msglen, KERR_INVALID_TOPIC_EXCEPTION,
                           "%s'%.*s' contains one or more characters other than ASCII alphanumerics, "
                           "'.', '_' and '-'",
                           pfx, (int)n, name.p);
    }
    return 0;
}

static bool has_collision_chars(kstr_t s)
{
    for (int32_t i = 0; i < s.len; i++)
        if (s.p[i] == '.' || s.p[i] == '_')
            return true;
    return false;
}

/* Kafka's Topic.hasCollision: equal once every '.' becomes '_'. */
static bool names_collide(kstr_t a, const char *b, int32_t blen)
{
    if (a.len != blen)
        return false;
    for (int32_t i = 0; i < blen; i++) {
        char x = a.p[i] == '.' ? '_' : a.p[i];
        char y = b[i] == '.' ? '_' : b[i];
        if (x != y)
            return false;
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* CreateTopics                                                        */

struct kv_list {
    struct topic_config_kv *kv;
    size_t n;
};

/* Kafka's computeConfigChanges + the topic config validation: null
 * values first, then each pair and the cross-key checks. Duplicate keys:
 * the last value wins (Kafka builds a map). Strings go to arena. */
static int check_create_configs(struct controller *c, const struct topic_spec *spec, struct arena *a,
                                struct kv_list *out, char *msg, size_t msglen)
{
    out->kv = arena_alloc(a, (size_t)(spec->nconfigs > 0 ? spec->nconfigs : 1) * sizeof *out->kv);
    out->n = 0;
    struct buf nulls = BUF_INIT;
    for (int32_t i = 0; i < spec->nconfigs; i++) {
        if (spec->config_values[i].len < 0) {
            if (nulls.len)
                buf_put_u8(&nulls, ',');
            if (spec->config_keys[i].len > 0)
                buf_append(&nulls, spec->config_keys[i].p, (size_t)spec->config_keys[i].len);
        }
    }
    if (nulls.len) {
        int rc = err_msg(msg, msglen, KERR_INVALID_CONFIG, "Null value not supported for topic configs: %.*s",
                         (int)nulls.len, (const char *)nulls.data);
        buf_free(&nulls);
        return rc;
    }
    buf_free(&nulls);
    for (int32_t i = 0; i < spec->nconfigs; i++) {
        char *key = kstr_dup(a, spec->config_keys[i]);
        char *value = kstr_dup(a, spec->config_values[i]);
        size_t j;
        for (j = 0; j < out->n; j++)
            if (strcmp(out->kv[j].key, key) == 0)
                break;
        out->kv[j].key = key;
        out->kv[j].value = value;
        if (j == out->n)
            out->n++;
    }
    if (out->n == 0)
        return 0;
    char err[512];
    if (topic_config_validate_all(c->b->cfg, out->kv, out->n, err, sizeof err) != 0)
        return err_msg(msg, msglen, KERR_INVALID_CONFIG, "%s", err);
    return 0;
}

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const struct topic_config_kv *)a)->key, ((const struct topic_config_kv *)b)->key);
}

static const char *POLICY_TOO_LARGE = "Unable to perform excessively large batch operation.";

/* Everything of createTopic after the configs: the partitions and their
 * replicas, as records appended to rs. */
static int plan_partitions(const struct controller *c, const struct mimage *img,
                           const struct topic_spec *spec, const kuuid_t *id, size_t nother_records,
                           struct recs *rs, char *msg, size_t msglen)
{
    if (spec->nassign > 0) {
        if (spec->replication_factor != -1)
            return err_msg(msg, msglen, KERR_INVALID_REQUEST,
                           "A manual partition assignment was specified, but replication factor was "
                           "not set to -1.");
        if (spec->num_partitions != -1)
            return err_msg(msg, msglen, KERR_INVALID_REQUEST,
                           "A manual partition assignment was specified, but numPartitions was not set "
                           "to -1.");
        if ((size_t)spec->nassign + nother_records > CONTROLLER_MAX_RECORDS_PER_OP)
            return err_msg(msg, msglen, KERR_POLICY_VIOLATION, "%s", POLICY_TOO_LARGE);
        /* slot[i]: which assignment gives partition i, -1 none yet. */
        int32_t *slot = xmalloc((size_t)spec->nassign * sizeof *slot);
        for (int32_t i = 0; i < spec->nassign; i++)
            slot[i] = -1;
        int rc = 0;
        int32_t rf = -1;
        for (int32_t i = 0; i < spec->nassign && rc == 0; i++) {
            int32_t idx = spec->assign_index ? spec->assign_index[i] : i;
            bool dup = false;
            for (int32_t j = 0; j < i && !dup; j++)
                dup = (spec->assign_index ? spec->assign_index[j] : j) == idx;
            if (dup) {
                rc = err_msg(msg, msglen, KERR_INVALID_REPLICA_ASSIGNMENT,
                             "Found multiple manual partition assignments for partition %d", (int)idx);
                break;
            }
            rc = validate_manual(img, spec->assign[i], spec->assign_len[i], rf, msg, msglen);
            if (rc)
                break;
            rf = spec->assign_len[i];
            if (!any_active(img, spec->assign[i], spec->assign_len[i])) {
                rc = err_msg(msg, msglen, KERR_INVALID_REPLICA_ASSIGNMENT,
                             "All brokers specified in the manual partition assignment for partition %d "
                             "are fenced or in controlled shutdown.",
                             (int)idx);
                break;
            }
            if (idx >= 0 && idx < spec->nassign)
                slot[idx] = i;
        }
        for (int32_t i = 0; i < spec->nassign && rc == 0; i++)
            if (slot[i] < 0)
                rc = err_msg(msg, msglen, KERR_INVALID_REPLICA_ASSIGNMENT,
                             "partitions should be a consecutive 0-based integer sequence");
        for (int32_t i = 0; i < spec->nassign && rc == 0; i++)
            add_partition_record(rs, img, id, i, spec->assign[slot[i]], spec->assign_len[slot[i]]);
        free(slot);
        return rc;
    }
    if (spec->replication_factor < -1 || spec->replication_factor == 0)
        return err_msg(msg, msglen, KERR_INVALID_REPLICATION_FACTOR,
                       "Replication factor must be larger than 0, or -1 to use the default value.");
    if (spec->num_partitions < -1 || spec->num_partitions == 0)
        return err_msg(msg, msglen, KERR_INVALID_PARTITIONS,
                       "Number of partitions was set to an invalid non-positive value.");
    int32_t nparts = spec->num_partitions == -1 ? c->b->cfg->num_partitions : spec->num_partitions;
    int32_t rf = spec->replication_factor == -1 ? c->b->cfg->default_replication_factor
                                                : spec->replication_factor;
    /* The placer's checks come before the batch limit in Kafka (it runs
     * first); make them without placing anything. */
    char why[256];
    int32_t none;
    int rc = place(img, 0, 0, rf, &none, why, sizeof why);
    if (rc)
        return err_msg(msg, msglen, rc, "Unable to replicate the partition %d time(s): %s", (int)rf, why);
    if ((size_t)nparts + nother_records > CONTROLLER_MAX_RECORDS_PER_OP)
        return err_msg(msg, msglen, KERR_POLICY_VIOLATION, "%s", POLICY_TOO_LARGE);
    int32_t *rep = xmalloc((size_t)nparts * (size_t)rf * sizeof *rep);
    place(img, 0, nparts, rf, rep, why, sizeof why);
    for (int32_t p = 0; p < nparts && rc == 0; p++) {
        const int32_t *r = &rep[(size_t)p * (size_t)rf];
        if (!any_active(img, r, rf))
            rc = err_msg(msg, msglen, KERR_INVALID_REPLICATION_FACTOR,
                         "Unable to replicate the partition %d time(s): All brokers are currently fenced "
                         "or in controlled shutdown.",
                         (int)rf);
        else
            add_partition_record(rs, img, id, p, r, rf);
    }
    free(rep);
    return rc;
}

/* Caller holds op_lock. */
static int create_topic_locked(struct controller *c, const struct topic_spec *spec, bool validate_only,
                               kuuid_t *id_out, char *msg, size_t msglen)
{
    const struct mimage *img = c->cur;
    /* ControllerApis refuses the metadata topic before anything else. */
    if (kstr_eqc(spec->name, CLUSTER_METADATA_TOPIC))
        return err_msg(msg, msglen, KERR_INVALID_REQUEST, "Creation of internal topic %s is prohibited.",
                       CLUSTER_METADATA_TOPIC);
    /* validateNewTopicNames, then "already exists" overrides it. */
    if (mimage_topic(img, spec->name))
        return err_msg(msg, msglen, KERR_TOPIC_ALREADY_EXISTS, "Topic '%.*s' already exists.",
                       (int)spec->name.len, spec->name.p);
    int rc = validate_topic_name(spec->name, msg, msglen);
    if (rc)
        return rc;
    if (has_collision_chars(spec->name)) {
        for (int32_t i = 0; i < img->ntopics; i++) {
            const struct mi_topic *t = img->topics[i];
            if (names_collide(spec->name, t->name, t->name_len))
                return err_msg(msg, msglen, KERR_INVALID_TOPIC_EXCEPTION,
                               "Topic '%.*s' collides with existing topic: %s", (int)spec->name.len,
                               spec->name.p, t->name);
        }
    }
    struct recs rs;
    recs_init(&rs);
    struct kv_list kv;
    rc = check_create_configs(c, spec, &rs.arena, &kv, msg, msglen);
    if (rc) {
        recs_free(&rs);
        return rc;
    }
    kuuid_t id;
    if (uuid_random(id.b) < 0) {
        recs_free(&rs);
        slog_error("metadata: no randomness for a topic id: %s", strerror(errno));
        return err_msg(msg, msglen, KERR_UNKNOWN_SERVER_ERROR, "%s", "");
    }
    topic_record_t *tr = arena_alloc(&rs.arena, sizeof *tr);
    topic_record_init(tr);
    tr->name = (kstr_t){kstr_dup(&rs.arena, spec->name), spec->name.len};
    tr->topic_id = id;
    recs_add(&rs, KMETA_TOPIC_RECORD, 0, tr);
    /* ConfigRecords go after the TopicRecord and before the partitions,
     * as Kafka writes them. */
    if (kv.n > 1)
        qsort(kv.kv, kv.n, sizeof *kv.kv, kv_cmp);
    for (size_t i = 0; i < kv.n; i++) {
        config_record_t *cr = arena_alloc(&rs.arena, sizeof *cr);
        config_record_init(cr);
        cr->resource_type = CONTROLLER_RESOURCE_TOPIC;
        cr->resource_name = tr->name;
        cr->name = KSTR(kv.kv[i].key);
        cr->value = KSTR(kv.kv[i].value);
        recs_add(&rs, KMETA_CONFIG_RECORD, 0, cr);
    }
    rc = plan_partitions(c, img, spec, &id, rs.n, &rs, msg, msglen);
    if (rc == 0 && !validate_only)
        rc = commit(c, &rs, msg, msglen);
    recs_free(&rs);
    if (rc == 0) {
        if (id_out)
            *id_out = id;
        if (!validate_only)
            slog_info("metadata: created topic %.*s with %d partition(s)", (int)spec->name.len,
                      spec->name.p, (int)mimage_topic(c->cur, spec->name)->npartitions);
    }
    return rc;
}

int controller_create_topic(struct controller *c, const struct topic_spec *spec, bool validate_only,
                            kuuid_t *id_out, char *msg, size_t msglen)
{
    msg[0] = 0;
    pthread_mutex_lock(&c->op_lock);
    int rc = create_topic_locked(c, spec, validate_only, id_out, msg, msglen);
    pthread_mutex_unlock(&c->op_lock);
    return rc;
}

int controller_auto_create_topic(struct controller *c, kstr_t name, char *msg, size_t msglen)
{
    const struct samsa_config *cfg = c->b->cfg;
    struct topic_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.name = name;
    spec.num_partitions = cfg->num_partitions;
    spec.replication_factor = (int16_t)cfg->default_replication_factor;
    char seg[32], isr[32];
    kstr_t keys[5], values[5];
    int64_t v;
    /* Kafka's GroupCoordinatorService.groupMetadataTopicConfigs and
     * TransactionStateManager.transactionTopicConfigs. */
    if (kstr_eqc(name, "__consumer_offsets")) {
        spec.num_partitions = cfg->offsets_topic_num_partitions;
        spec.replication_factor = cfg->offsets_topic_replication_factor;
        snprintf(seg, sizeof seg, "%lld",
                 (long long)(config_get_long(cfg, "offsets.topic.segment.bytes", &v) ? v : 104857600));
        keys[0] = KSTR_LIT("cleanup.policy"), values[0] = KSTR_LIT("compact");
        keys[1] = KSTR_LIT("compression.type"), values[1] = KSTR_LIT("producer");
        keys[2] = KSTR_LIT("segment.bytes"), values[2] = KSTR(seg);
        spec.nconfigs = 3;
    } else if (kstr_eqc(name, "__transaction_state")) {
        spec.num_partitions =
            config_get_long(cfg, "transaction.state.log.num.partitions", &v) ? (int32_t)v : 50;
        spec.replication_factor = cfg->transaction_state_log_replication_factor;
        snprintf(seg, sizeof seg, "%lld",
                 (long long)(config_get_long(cfg, "transaction.state.log.segment.bytes", &v) ? v
                                                                                             : 104857600));
        snprintf(isr, sizeof isr, "%d", (int)cfg->transaction_state_log_min_isr);
        keys[0] = KSTR_LIT("unclean.leader.election.enable"), values[0] = KSTR_LIT("false");
        keys[1] = KSTR_LIT("compression.type"), values[1] = KSTR_LIT("uncompressed");
        keys[2] = KSTR_LIT("cleanup.policy"), values[2] = KSTR_LIT("compact");
        keys[3] = KSTR_LIT("min.insync.replicas"), values[3] = KSTR(isr);
        keys[4] = KSTR_LIT("segment.bytes"), values[4] = KSTR(seg);
        spec.nconfigs = 5;
    }
    spec.config_keys = keys;
    spec.config_values = values;
    int rc = controller_create_topic(c, &spec, false, NULL, msg, msglen);
    if (rc == KERR_TOPIC_ALREADY_EXISTS) {
        msg[0] = 0;
        rc = 0;
    }
    return rc;
}

/* ------------------------------------------------------------------ */
/* DeleteTopics                                                        */

int controller_delete_topic(struct controller *c, const kuuid_t *id, char *msg, size_t msglen)
{
    msg[0] = 0;
    pthread_mutex_lock(&c->op_lock);
    const struct mi_topic *t = mimage_topic_by_id(c->cur, id);
    int rc;
    if (!t) {
        /* Kafka throws UnknownTopicIdException with the default message,
         * which ApiError.fromThrowable drops. */
        rc = KERR_UNKNOWN_TOPIC_ID;
    } else {
        char name[MAX_TOPIC_NAME_LENGTH * 4 + 1];
        snprintf(name, sizeof name, "%s", t->name);
        struct recs rs;
        recs_init(&rs);
        remove_topic_record_t *rr = arena_alloc(&rs.arena, sizeof *rr);
        remove_topic_record_init(rr);
        rr->topic_id = *id;
        recs_add(&rs, KMETA_REMOVE_TOPIC_RECORD, 0, rr);
        rc = commit(c, &rs, msg, msglen);
        recs_free(&rs);
        if (rc == 0)
            slog_info("metadata: deleted topic %s", name);
    }
    pthread_mutex_unlock(&c->op_lock);
    return rc;
}

/* ------------------------------------------------------------------ */
/* CreatePartitions                                                    */

static int create_partitions_locked(struct controller *c, kstr_t topic, int32_t count, int32_t nassign,
                                    const int32_t *const *assign, const int32_t *assign_len,
                                    bool validate_only, char *msg, size_t msglen)
{
    const struct mimage *img = c->cur;
    const struct mi_topic *t = mimage_topic(img, topic);
    if (!t)
        return KERR_UNKNOWN_TOPIC_OR_PARTITION;
    if (count == t->npartitions)
        return err_msg(msg, msglen, KERR_INVALID_PARTITIONS, "Topic already has %d partition(s).",
                       (int)t->npartitions);
    if (count < t->npartitions)
        return err_msg(msg, msglen, KERR_INVALID_PARTITIONS,
                       "The topic %s currently has %d partition(s); %d would not be an increase.", t->name,
                       (int)t->npartitions, (int)count);
    int32_t additional = count - t->npartitions;
    if (nassign >= 0 && nassign != additional)
        return err_msg(msg, msglen, KERR_INVALID_REPLICA_ASSIGNMENT,
                       "Attempted to add %d additional partition(s), but only %d assignment(s) were "
                       "specified.",
                       (int)additional, (int)nassign);
    if (t->npartitions == 0)
        return err_msg(msg, msglen, KERR_UNKNOWN_SERVER_ERROR,
                       "Invalid state: topic %s appears to have no partitions.", t->name);
    int32_t rf = t->partitions[0].nreplicas;
    if (additional > CONTROLLER_MAX_RECORDS_PER_OP)
        return err_msg(msg, msglen, KERR_POLICY_VIOLATION, "%s", POLICY_TOO_LARGE);
    struct recs rs;
    recs_init(&rs);
    int rc = 0;
    int32_t start = t->npartitions;
    if (nassign >= 0) {
        for (int32_t i = 0; i < nassign && rc == 0; i++) {
            rc = validate_manual(img, assign[i], assign_len[i], rf, msg, msglen);
            if (rc == 0 && !any_active(img, assign[i], assign_len[i]))
                rc = err_msg(msg, msglen, KERR_INVALID_REPLICA_ASSIGNMENT,
                             "All brokers specified in the manual partition assignment for partition %d are "
                             "fenced or in controlled shutdown.",
                             (int)(start + i));
            if (rc == 0)
                add_partition_record(&rs, img, &t->id, start + i, assign[i], assign_len[i]);
        }
    } else {
        int32_t *rep = xmalloc((size_t)additional * (size_t)(rf > 0 ? rf : 1) * sizeof *rep);
        rc = place(img, start, additional, rf, rep, msg, msglen);
        for (int32_t p = 0; p < additional && rc == 0; p++) {
            const int32_t *r = &rep[(size_t)p * (size_t)rf];
            if (!any_active(img, r, rf))
                rc = err_msg(msg, msglen, KERR_INVALID_REPLICATION_FACTOR,
                             "Unable to replicate the partition %d time(s): All brokers are currently "
                             "fenced or in controlled shutdown.",
                             (int)rf);
            else
                add_partition_record(&rs, img, &t->id, start + p, r, rf);
        }
        free(rep);
    }
    if (rc == 0 && !validate_only) {
        char name[MAX_TOPIC_NAME_LENGTH * 4 + 1];
        snprintf(name, sizeof name, "%s", t->name);
        rc = commit(c, &rs, msg, msglen);
        if (rc == 0)
            slog_info("metadata: topic %s now has %d partition(s)", name, (int)count);
    }
    recs_free(&rs);
    return rc;
}

int controller_create_partitions(struct controller *c, kstr_t topic, int32_t count, int32_t nassign,
                                 const int32_t *const *assign, const int32_t *assign_len,
                                 bool validate_only, char *msg, size_t msglen)
{
    msg[0] = 0;
    pthread_mutex_lock(&c->op_lock);
    int rc = create_partitions_locked(c, topic, count, nassign, assign, assign_len, validate_only, msg,
                                      msglen);
    pthread_mutex_unlock(&c->op_lock);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Configs                                                             */

static int alter_configs_locked(struct controller *c, int8_t type, kstr_t resource, int32_t n,
                                const kstr_t *keys, const kstr_t *values, bool validate_only, char *msg,
                                size_t msglen)
{
    const struct mimage *img = c->cur;
    struct recs rs;
    recs_init(&rs);
    int rc = 0;
    if (type == CONTROLLER_RESOURCE_TOPIC) {
        const struct mi_topic *t = mimage_topic(img, resource);
        if (!t) {
            recs_free(&rs);
            return KERR_UNKNOWN_TOPIC_OR_PARTITION;
        }
        /* The overrides as they will be: current ones, then the changes. */
        size_t cap = (size_t)t->nconfigs + (size_t)(n > 0 ? n : 0) + 1;
        struct topic_config_kv *kv = arena_alloc(&rs.arena, cap * sizeof *kv);
        size_t nkv = 0;
        for (int32_t i = 0; i < t->nconfigs; i++)
            kv[nkv++] = (struct topic_config_kv){t->configs[i].key, t->configs[i].value};
        for (int32_t i = 0; i < n; i++) {
            char *key = kstr_dup(&rs.arena, keys[i]);
            size_t j;
            for (j = 0; j < nkv; j++)
                if (strcmp(kv[j].key, key) == 0)
                    break;
            if (values[i].len < 0) {
                if (j < nkv)
                    kv[j] = kv[--nkv];
                continue;
            }
            kv[j].key = key;
            kv[j].value = kstr_dup(&rs.arena, values[i]);
            if (j == nkv)
                nkv++;
        }
        char err[512];
        if (topic_config_validate_all(c->b->cfg, kv, nkv, err, sizeof err) != 0)
            rc = err_msg(msg, msglen, KERR_INVALID_CONFIG, "%s", err);
    } else if (type == CONTROLLER_RESOURCE_BROKER) {
        char node[16];
        snprintf(node, sizeof node, "%d", (int)c->b->node_id);
        if (resource.len > 0 && !kstr_eqc(resource, node))
            rc = err_msg(msg, msglen, KERR_INVALID_REQUEST, "Unexpected broker id, expected %s, but received %.*s",
                         node, (int)resource.len, resource.p);
    } else {
        rc = err_msg(msg, msglen, KERR_INVALID_REQUEST, "Unsupported resource type %d", (int)type);
    }
    for (int32_t i = 0; i < n && rc == 0; i++) {
        config_record_t *cr = arena_alloc(&rs.arena, sizeof *cr);
        config_record_init(cr);
        cr->resource_type = type;
        cr->resource_name = (kstr_t){kstr_dup(&rs.arena, resource), resource.len > 0 ? resource.len : 0};
        cr->name = (kstr_t){kstr_dup(&rs.arena, keys[i]), keys[i].len};
        cr->value = values[i].len < 0 ? KSTR_NULL
                                      : (kstr_t){kstr_dup(&rs.arena, values[i]), values[i].len};
        recs_add(&rs, KMETA_CONFIG_RECORD, 0, cr);
    }
    if (rc == 0 && !validate_only && rs.n > 0)
        rc = commit(c, &rs, msg, msglen);
    recs_free(&rs);
    return rc;
}

int controller_alter_configs(struct controller *c, int8_t resource_type, kstr_t resource_name, int32_t n,
                             const kstr_t *keys, const kstr_t *values, bool validate_only, char *msg,
                             size_t msglen)
{
    msg[0] = 0;
    pthread_mutex_lock(&c->op_lock);
    int rc = alter_configs_locked(c, resource_type, resource_name, n, keys, values, validate_only, msg,
                                  msglen);
    pthread_mutex_unlock(&c->op_lock);
    return rc;
}

/* The value key has at one dynamic layer of cfg (NULL: none), read back
 * through DescribeConfigs' synonyms, which list every layer's value. */
static const char *layer_value(const struct samsa_config *cfg, const char *key, bool cluster_default,
                               struct config_entry *e)
{
    if (!config_describe_key(cfg, key, cluster_default, e))
        return NULL;
    enum config_source want =
        cluster_default ? CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER : CONFIG_SOURCE_DYNAMIC_BROKER;
    for (size_t i = 0; i < e->n_synonyms; i++)
        if (e->synonyms[i].source == want && strcmp(e->synonyms[i].name, key) == 0)
            return e->synonyms[i].value;
    return NULL;
}

static bool alter_names_key(const struct config_alter *ch, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(ch[i].name, key) == 0)
            return true;
    return false;
}

static int alter_broker_locked(struct controller *c, bool cluster_default, bool replace,
                               const struct config_alter *ch, size_t n, bool validate_only, char *msg,
                               size_t msglen)
{
    /* Never touch the published config: workers read it concurrently. */
    struct samsa_config *next = config_dup(c->b->cfg);
    const struct mimage *img = c->cur;
    const struct mi_config *layer = cluster_default ? img->broker_default_configs : img->broker_configs;
    int32_t nlayer = cluster_default ? img->nbroker_default_configs : img->nbroker_configs;
    char why[256];
    /* Legacy AlterConfigs: keys of the layer the request leaves out go,
     * unchecked, as Kafka's legacyAlterConfigResource drops them without
     * validating them (a stored key may no longer be dynamic). */
    if (replace)
        for (int32_t i = 0; i < nlayer; i++)
            if (!alter_names_key(ch, n, layer[i].key))
                (void)config_set_dynamic(next, cluster_default, layer[i].key, NULL, why, sizeof why);
    int rc = config_alter_broker(next, cluster_default, ch, n, validate_only, msg, msglen);
    if (rc != 0 || validate_only) {
        config_free(next);
        return rc;
    }

    struct recs rs;
    recs_init(&rs);
    char node[16] = "";
    if (!cluster_default)
        snprintf(node, sizeof node, "%d", (int)c->b->node_id);
    kstr_t resource = kstr_arena(&rs.arena, node);
    struct config_entry *e = arena_alloc(&rs.arena, sizeof *e);
    size_t nrec = n + (replace ? (size_t)nlayer : 0);
    for (size_t i = 0; i < nrec; i++) {
        const char *key, *value;
        if (i < n) {
            key = ch[i].name;
            /* The stored form is the value as the config now holds it
             * (normalised; APPEND/SUBTRACT resolved). Kafka writes a record
             * for every key of a broker change, changed or not
             * (ConfigurationControlManager, KAFKA-14136). */
            value = ch[i].op == CONFIG_OP_DELETE ? NULL : layer_value(next, key, cluster_default, e);
            if (ch[i].op != CONFIG_OP_DELETE && !value)
                value = ch[i].value; /* sensitive: not reported, stored as given */
        } else {
            key = layer[i - n].key;
            if (alter_names_key(ch, n, key))
                continue;
            value = NULL;
        }
        config_record_t *cr = arena_alloc(&rs.arena, sizeof *cr);
        config_record_init(cr);
        cr->resource_type = CONTROLLER_RESOURCE_BROKER;
        cr->resource_name = resource;
        cr->name = kstr_arena(&rs.arena, key);
        cr->value = value ? kstr_arena(&rs.arena, value) : KSTR_NULL;
        recs_add(&rs, KMETA_CONFIG_RECORD, 0, cr);
    }
    rc = rs.n > 0 ? commit_cfg(c, &rs, next, msg, msglen) : 0;
    if (rs.n == 0 || rc != 0)
        config_free(next); /* nothing published */
    recs_free(&rs);
    return rc;
}

int controller_alter_broker_configs(struct controller *c, bool cluster_default, bool replace,
                                    const struct config_alter *changes, size_t n, bool validate_only,
                                    char *msg, size_t msglen)
{
    msg[0] = 0;
    pthread_mutex_lock(&c->op_lock);
    int rc = alter_broker_locked(c, cluster_default, replace, changes, n, validate_only, msg, msglen);
    pthread_mutex_unlock(&c->op_lock);
    return rc;
}

int controller_check_topic_name(kstr_t name, char *msg, size_t msglen)
{
    msg[0] = 0;
    return validate_topic_name(name, msg, msglen);
}

/* ------------------------------------------------------------------ */
/* Open, replay, bootstrap                                             */

struct mimage *controller_image(struct controller *c)
{
    pthread_mutex_lock(&c->img_lock);
    struct mimage *m = mimage_ref(c->cur);
    pthread_mutex_unlock(&c->img_lock);
    return m;
}

static int pread_all(int fd, uint8_t *p, size_t n, int64_t off)
{
    while (n > 0) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? errno : EIO;
        p += r;
        n -= (size_t)r;
        off += r;
    }
    return 0;
}

static int replay(struct controller *c, struct mi_draft *d, char *err, size_t errlen)
{
    int64_t off = plog_log_start_offset(c->log);
    uint8_t *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    for (;;) {
        struct plog_read_result rr;
        int krc = plog_read(c->log, off, 1 << 20, true, -1, &rr);
        if (krc != 0) {
            snprintf(err, errlen, "metadata log %s: read at offset %lld failed: %s", c->dir,
                     (long long)off, kerr_name((int16_t)krc));
            rc = -1;
            break;
        }
        if (rr.len <= 0)
            break;
        if ((size_t)rr.len > cap) {
            cap = (size_t)rr.len;
            buf = xrealloc(buf, cap);
        }
        int e = pread_all(rr.file->fd, buf, (size_t)rr.len, rr.file_pos);
        sfile_unref(rr.file);
        if (e) {
            snprintf(err, errlen, "metadata log %s: %s", c->dir, strerror(e));
            rc = -1;
            break;
        }
        size_t pos = 0;
        while (pos < (size_t)rr.len && rc == 0) {
            size_t size = 0;
            if (rb_frame(buf + pos, (size_t)rr.len - pos, &size) != 0) {
                snprintf(err, errlen, "metadata log %s: malformed batch near offset %lld", c->dir,
                         (long long)off);
                rc = -1;
                break;
            }
            char why[512];
            if (mi_draft_apply_batch(d, buf + pos, size, why, sizeof why) < 0) {
                snprintf(err, errlen, "metadata log %s: %s", c->dir, why);
                rc = -1;
            }
            pos += size;
        }
        if (rc)
            break;
        off = rr.next_offset;
    }
    free(buf);
    return rc;
}

/* directory.id of each log dir's meta.properties; *n = 0 unless every
 * log dir has one (Kafka registers all of them or none). */
static kuuid_t *read_dir_ids(const struct samsa_config *cfg, int32_t *n)
{
    *n = 0;
    if (cfg->n_log_dirs == 0)
        return NULL;
    kuuid_t *ids = xcalloc(cfg->n_log_dirs, sizeof *ids);
    for (size_t i = 0; i < cfg->n_log_dirs; i++) {
        struct meta_properties mp;
        char err[256];
        if (meta_properties_read(cfg->log_dirs[i], &mp, err, sizeof err) != 0 || !mp.has_directory_id) {
            free(ids);
            return NULL;
        }
        memcpy(ids[i].b, mp.directory_id, sizeof ids[i].b);
    }
    *n = (int32_t)cfg->n_log_dirs;
    return ids;
}

static bool same_str(const char *a, kstr_t b)
{
    if (!a)
        return b.len < 0;
    return b.len >= 0 && kstr_eqc(b, a);
}

/* Whether the image's registration of this node says what r says. */
static bool registration_current(const struct mi_broker *have, const register_broker_record_t *r)
{
    if (!have || have->fenced || have->in_controlled_shutdown || have->nendpoints != r->end_points.n ||
        have->nlog_dirs != r->log_dirs.n || !same_str(have->rack, r->rack))
        return false;
    for (int32_t i = 0; i < r->end_points.n; i++) {
        const struct mi_endpoint *e = &have->endpoints[i];
        const register_broker_record_broker_endpoint_t *x = &r->end_points.a[i];
        if (!kstr_eqc(x->name, e->name) || !kstr_eqc(x->host, e->host) || x->port != e->port ||
            x->security_protocol != e->security_protocol)
            return false;
    }
    for (int32_t i = 0; i < r->log_dirs.n; i++)
        if (!kuuid_eq(&have->log_dirs[i], &r->log_dirs.a[i]))
            return false;
    return true;
}

/* First start: metadata.version. Every start: this node's registration
 * when it changed, so the image's broker list comes from records. */
static int bootstrap(struct controller *c, char *err, size_t errlen)
{
    const struct samsa_config *cfg = c->b->cfg;
    struct recs rs;
    recs_init(&rs);
    int16_t mv = c->cur->metadata_version;
    if (mv == 0) {
        feature_level_record_t *fr = arena_alloc(&rs.arena, sizeof *fr);
        feature_level_record_init(fr);
        fr->name = KSTR_LIT("metadata.version");
        fr->feature_level = CONTROLLER_METADATA_VERSION;
        recs_add(&rs, KMETA_FEATURE_LEVEL_RECORD, 0, fr);
        mv = CONTROLLER_METADATA_VERSION;
    }
    if (cfg->role_broker) {
        register_broker_record_t *r = arena_alloc(&rs.arena, sizeof *r);
        register_broker_record_init(r);
        r->broker_id = c->b->node_id;
        r->broker_epoch = plog_log_end_offset(c->log) + (int64_t)rs.n;
        uuid_random(r->incarnation_id.b);
        size_t ne = cfg->n_advertised;
        r->end_points.a = register_broker_record_broker_endpoint_new_array(&rs.arena, (int32_t)(ne ? ne : 1));
        for (size_t i = 0; i < ne; i++) {
            const struct config_endpoint *e = &cfg->advertised[i];
            if (e->is_controller)
                continue; /* the quorum's listeners are not the broker's */
            register_broker_record_broker_endpoint_t *x = &r->end_points.a[r->end_points.n++];
            x->name = kstr_arena(&rs.arena, e->name);
            x->host = kstr_arena(&rs.arena, e->host[0] ? e->host : c->b->advertised_host);
            x->port = e->port;
            x->security_protocol = (int16_t)e->protocol;
        }
        if (r->end_points.n == 0 && c->b->advertised_port > 0) {
            register_broker_record_broker_endpoint_t *x = &r->end_points.a[r->end_points.n++];
            x->name = KSTR_LIT("PLAINTEXT");
            x->host = kstr_arena(&rs.arena, c->b->advertised_host);
            x->port = (uint16_t)c->b->advertised_port;
            x->security_protocol = 0;
        }
        r->features.a = register_broker_record_broker_feature_new_array(&rs.arena, 1);
        r->features.n = 1;
        r->features.a[0].name = KSTR_LIT("metadata.version");
        r->features.a[0].min_supported_version = 1;
        r->features.a[0].max_supported_version = CONTROLLER_METADATA_VERSION;
        r->rack = c->b->rack[0] ? kstr_arena(&rs.arena, c->b->rack) : KSTR_NULL;
        r->fenced = false;
        r->in_controlled_shutdown = false;
        int32_t ndirs;
        kuuid_t *dirs = read_dir_ids(cfg, &ndirs);
        r->log_dirs.a = arena_alloc(&rs.arena, (size_t)(ndirs > 0 ? ndirs : 1) * sizeof(kuuid_t));
        if (ndirs > 0)
            memcpy(r->log_dirs.a, dirs, (size_t)ndirs * sizeof(kuuid_t));
        r->log_dirs.n = ndirs;
        free(dirs);
        if (!registration_current(mimage_broker(c->cur, c->b->node_id), r)) {
            /* The image's metadata.version picks the record version; on
             * first start it is the one written just before. */
            struct mimage tmp;
            memset(&tmp, 0, sizeof tmp);
            tmp.metadata_version = mv;
            recs_add(&rs, KMETA_REGISTER_BROKER_RECORD, register_broker_record_version(&tmp), r);
        }
    }
    int rc = 0;
    if (rs.n > 0) {
        char msg[256];
        if (commit(c, &rs, msg, sizeof msg) != 0) {
            snprintf(err, errlen, "metadata log %s: cannot write the bootstrap records", c->dir);
            rc = -1;
        }
    }
    recs_free(&rs);
    return rc;
}

static bool ends_with_metadata_dir(const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    size_t m = strlen(METADATA_DIR_NAME);
    return n >= m && memcmp(dir + n - m, METADATA_DIR_NAME, m) == 0 && (n == m || dir[n - m - 1] == '/');
}

struct controller *controller_open(struct broker *b, const char *dir, char *err, size_t errlen)
{
    struct controller *c = xcalloc(1, sizeof *c);
    c->b = b;
    c->orig_cfg = b->cfg;
    pthread_mutex_init(&c->op_lock, NULL);
    pthread_mutex_init(&c->img_lock, NULL);
    if (ends_with_metadata_dir(dir)) {
        c->dir = xstrdup(dir);
    } else {
        size_t n = strlen(dir) + sizeof METADATA_DIR_NAME + 2;
        c->dir = xmalloc(n);
        snprintf(c->dir, n, "%s/%s", dir, METADATA_DIR_NAME);
    }
    struct plog_config pc = PLOG_CONFIG_INIT;
    int64_t seg;
    if (config_get_long(b->cfg, "metadata.log.segment.bytes", &seg))
        pc.segment_bytes = seg;
    /* Acknowledged metadata must survive a crash: no replication yet. */
    pc.fsync_each_append = true;
    kuuid_t meta_id;
    memcpy(meta_id.b, uuid_metadata_topic_id, sizeof meta_id.b);
    int krc = plog_open(c->dir, &meta_id, &pc, &c->log);
    if (krc != 0) {
        snprintf(err, errlen, "metadata log %s: cannot open: %s", c->dir, kerr_name((int16_t)krc));
        goto fail;
    }
    struct mi_draft *d = mi_draft_begin(NULL, b->cfg, b->node_id);
    if (replay(c, d, err, errlen) < 0) {
        mi_draft_abort(d);
        goto fail;
    }
    /* Dynamic broker configs first, so the effective topic configs the
     * image computes at finish see them. */
    int log_level = b->cfg->log_level;
    for (int k = 0; k < 2; k++) {
        int32_t n;
        const struct mi_config *cfgs = mi_draft_broker_configs(d, k == 0, &n);
        for (int32_t i = 0; i < n; i++) {
            char why[256];
            if (config_set_dynamic(b->cfg, k == 0, cfgs[i].key, cfgs[i].value, why, sizeof why) != 0)
                slog_warn("metadata: stored dynamic broker config %s=%s ignored: %s", cfgs[i].key,
                          cfgs[i].value, why);
        }
    }
    /* A dynamic samsa.log.level outranks the static one main applied. */
    if (b->cfg->log_level != log_level)
        slog_set_level((enum slog_level)b->cfg->log_level);
    c->cur = mi_draft_finish(d);
    if (bootstrap(c, err, errlen) < 0)
        goto fail;
    slog_info("metadata: %s replayed to offset %lld: %d topic(s), %d broker(s)", c->dir,
              (long long)c->cur->offset, (int)c->cur->ntopics, (int)c->cur->nbrokers);
    sync_partitions(c);
    return c;
fail:
    if (c->log)
        plog_close(c->log, false);
    mimage_release(c->cur);
    free(c->dir);
    pthread_mutex_destroy(&c->op_lock);
    pthread_mutex_destroy(&c->img_lock);
    free(c);
    return NULL;
}

void controller_close(struct controller *c, bool clean)
{
    if (!c)
        return;
    /* Nothing reads b->cfg any more: the newest config's contents move
     * into the caller's own config object (which it frees), so its
     * pointer stays valid and current, and the copies die here. */
    if (c->ncfgs > 0) {
        struct samsa_config *last = c->cfgs[c->ncfgs - 1];
        struct samsa_config tmp = *c->orig_cfg;
        *c->orig_cfg = *last;
        *last = tmp;
        atomic_store(&c->b->cfg, c->orig_cfg);
        for (size_t i = 0; i < c->ncfgs; i++)
            config_free(c->cfgs[i]);
    }
    free(c->cfgs);
    plog_close(c->log, clean);
    mimage_release(c->cur);
    free(c->dir);
    pthread_mutex_destroy(&c->op_lock);
    pthread_mutex_destroy(&c->img_lock);
    free(c);
}
