/* Feature flags (KIP-584, KIP-778, KIP-1022), as Kafka's
 * FeatureControlManager and QuorumFeatures keep them: the levels a
 * samsa node supports, the finalized levels in the metadata log
 * (FeatureLevelRecord), UpdateFeatures, and the registration check that
 * a broker supports every finalized level.
 *
 * samsa supports metadata.version from 1 (3.0-IV1, Kafka's first KRaft
 * version) to CONTROLLER_METADATA_VERSION (3.9-IV0), and no other
 * feature: clients key behaviour on finalized features (the Java
 * producer turns on KIP-890's transaction protocol, TV2, when
 * transaction.version >= 2 is finalized; group.version 1 announces
 * KIP-848's consumer groups; kraft.version 1 dynamic quorums, KIP-853),
 * and samsa has none of those behaviours yet. So those features stay at
 * level 0 (absent from ApiVersions), and UpdateFeatures refuses to raise
 * them. */
#include <stdio.h>
#include <string.h>

#include "controller/controller_internal.h"
#include "proto/gen/broker_registration_request.h"
#include "proto/gen/feature_level_record.h"
#include "proto/gen/kmeta.h"
#include "proto/kerr.h"
#include "util/slog.h"

#define MV_NAME "metadata.version"
/* Kafka's MetadataVersion.MINIMUM_KRAFT_VERSION (3.0-IV1) and
 * MINIMUM_BOOTSTRAP_VERSION (3.3-IV0, the first that records itself). */
#define MV_MIN_KRAFT 1
#define MV_MIN_BOOTSTRAP 4

/* Kafka's MetadataVersion table from 3.0-IV1 (level 1) on: its name and
 * whether it changed the metadata format (didMetadataChange), which
 * decides whether a downgrade across it is safe. */
static const struct mv_info {
    const char *name;
    bool changed;
} mv_table[] = {
    {"3.0-IV1", true},  {"3.1-IV0", false}, {"3.2-IV0", true},  {"3.3-IV0", false}, {"3.3-IV1", true},
    {"3.3-IV2", true},  {"3.3-IV3", true},  {"3.4-IV0", true},  {"3.5-IV0", false}, {"3.5-IV1", false},
    {"3.5-IV2", true},  {"3.6-IV0", false}, {"3.6-IV1", true},  {"3.6-IV2", true},  {"3.7-IV0", true},
    {"3.7-IV1", false}, {"3.7-IV2", true},  {"3.7-IV3", false}, {"3.7-IV4", false}, {"3.8-IV0", false},
    {"3.9-IV0", false},
};
#define MV_KNOWN ((int16_t)(sizeof mv_table / sizeof mv_table[0]))

/* The features Kafka knows besides metadata.version (Features.FEATURES):
 * a level-0 update of one of them is valid; of any other name it is not. */
static const char *const kafka_features[] = {"test.feature.version", "kraft.version", "transaction.version",
                                             "group.version"};

bool controller_supported_feature(const char *name, int16_t *min, int16_t *max)
{
    if (strcmp(name, MV_NAME) == 0) {
        *min = MV_MIN_KRAFT;
        *max = CONTROLLER_METADATA_VERSION;
        return true;
    }
    *min = *max = 0; /* QuorumFeatures.DISABLED */
    return false;
}

/* Kafka's VersionRange.toString. */
static void range_str(int16_t min, int16_t max, char *out, size_t n)
{
    if (min == max)
        snprintf(out, n, "%d", (int)min);
    else if (max == INT16_MAX)
        snprintf(out, n, "%d+", (int)min);
    else
        snprintf(out, n, "%d-%d", (int)min, (int)max);
}

/* QuorumFeatures.reasonNotSupported: true with the reason in why. */
static bool not_supported(int16_t level, const char *what, int16_t min, int16_t max, char *why, size_t n)
{
    if (level >= min && level <= max)
        return false;
    if (max == 0) {
        snprintf(why, n, "%s does not support this feature.", what);
    } else {
        char r[32];
        range_str(min, max, r, sizeof r);
        snprintf(why, n, "%s only supports versions %s", what, r);
    }
    return true;
}

/* The range broker b registered for feature name (DISABLED if none). */
static void broker_range(const struct mi_broker *b, const char *name, int16_t *min, int16_t *max)
{
    *min = *max = 0;
    for (int32_t i = 0; i < b->nfeatures; i++)
        if (strcmp(b->features[i].name, name) == 0) {
            *min = b->features[i].min;
            *max = b->features[i].max;
            return;
        }
}

/* MetadataVersion.checkIfMetadataChanged between two known levels. */
static bool mv_metadata_changed(int16_t a, int16_t b)
{
    int16_t hi = a > b ? a : b, lo = a > b ? b : a;
    int16_t v = hi;
    while (v != lo && !mv_table[v - 1].changed && v > 1)
        v--;
    return v != lo;
}

/* FeatureControlManager.updateFeature for one feature: 0, or
 * INVALID_UPDATE_VERSION with Kafka's message in msg. */
static int check_update(struct controller *c, const struct mimage *img, const char *name, int16_t level,
                        int8_t type, char *msg, size_t msglen)
{
    char why[256], reason[512];
#define INVALID(...)                                                                                                   \
    do {                                                                                                               \
        snprintf(reason, sizeof reason, __VA_ARGS__);                                                                  \
        snprintf(msg, msglen, "Invalid update version %d for feature %s. %s", (int)level, name, reason);               \
        return KERR_INVALID_UPDATE_VERSION;                                                                            \
    } while (0)
    if (type < CONTROLLER_FEATURE_UPGRADE || type > CONTROLLER_FEATURE_UNSAFE_DOWNGRADE)
        INVALID("The controller does not support the given upgrade type.");
    bool mv = strcmp(name, MV_NAME) == 0;
    int16_t current = mimage_feature_level(img, name);
    if (level < 0)
        INVALID("A feature version cannot be less than 0.");
    /* reasonNotSupported: this controller, then every registered broker.
     * Kafka also asks every other controller through its registration
     * (RegisterControllerRecord, metadata.version 3.7+); samsa does not
     * write those yet, so the other voters are taken to support what
     * this one does (they run the same build in a cluster samsa forms). */
    int16_t min, max;
    controller_supported_feature(name, &min, &max);
    char what[64];
    snprintf(what, sizeof what, "Local controller %d", (int)c->env.node_id);
    if (not_supported(level, what, min, max, why, sizeof why))
        INVALID("%s", why);
    for (int32_t i = 0; i < img->nbrokers; i++) {
        broker_range(&img->brokers[i], name, &min, &max);
        snprintf(what, sizeof what, "Broker %d", (int)img->brokers[i].id);
        if (not_supported(level, what, min, max, why, sizeof why))
            INVALID("%s", why);
    }
    if (level < current && type == CONTROLLER_FEATURE_UPGRADE)
        INVALID("Can't downgrade the version of this feature without setting the upgrade type to either safe or "
                "unsafe downgrade.");
    if (level > current && type != CONTROLLER_FEATURE_UPGRADE)
        INVALID("Can't downgrade to a newer version.");
#undef INVALID
    if (mv) {
        /* updateMetadataVersion */
        const char *bad = NULL;
        char buf[128];
        if (level < MV_MIN_KRAFT || level > MV_KNOWN) {
            bad = "Unknown metadata.version.";
        } else if (level < MV_MIN_BOOTSTRAP) {
            snprintf(buf, sizeof buf, "Unable to set a metadata.version less than %s", mv_table[MV_MIN_BOOTSTRAP - 1].name);
            bad = buf;
        } else if (level < current && current <= MV_KNOWN && mv_metadata_changed(current, level)) {
            bad = type == CONTROLLER_FEATURE_UNSAFE_DOWNGRADE
                         ? "Unsafe metadata downgrade is not supported in this version."
                         : "Refusing to perform the requested downgrade because it might delete metadata information.";
        }
        if (bad) {
            snprintf(msg, msglen, "Invalid metadata.version %d. %s", (int)level, bad);
            return KERR_INVALID_UPDATE_VERSION;
        }
        return 0;
    }
    /* Features.featureFromName(...).fromFeatureLevel: only level 0 gets
     * here (nothing else is supported), which every feature Kafka knows
     * has. */
    for (size_t i = 0; i < sizeof kafka_features / sizeof kafka_features[0]; i++)
        if (strcmp(kafka_features[i], name) == 0)
            return 0;
    snprintf(msg, msglen, "Invalid update version %d for feature %s. Feature %s not found.", (int)level, name, name);
    return KERR_INVALID_UPDATE_VERSION;
}

int controller_update_features(struct controller *c, int32_t n, const kstr_t *names, const int16_t *levels,
                               const int8_t *types, bool validate_only, char *msg, size_t msglen, struct ctl_op **op)
{
    msg[0] = 0;
    *op = NULL;
    pthread_mutex_lock(&c->op_lock);
    int rc = ctl_not_active(c);
    if (rc)
        goto out;
    struct recs rs;
    recs_init(&rs);
    for (int32_t i = 0; i < n && rc == 0; i++) {
        /* Kafka keeps the updates in a map: a name given twice counts
         * once, with its last level and type. */
        bool later = false;
        for (int32_t j = i + 1; j < n && !later; j++)
            later = names[j].len == names[i].len && (names[i].len <= 0 || !memcmp(names[j].p, names[i].p, (size_t)names[i].len));
        if (later)
            continue;
        char *name = kstr_dup(&rs.arena, names[i]);
        rc = check_update(c, c->spec, name, levels[i], types[i], msg, msglen);
        if (rc)
            break;
        feature_level_record_t *r = arena_alloc(&rs.arena, sizeof *r);
        feature_level_record_init(r);
        r->name = KSTR(name);
        r->feature_level = levels[i];
        recs_add(&rs, KMETA_FEATURE_LEVEL_RECORD, 0, r);
    }
    if (rc == 0 && !validate_only && rs.n > 0) {
        rc = ctl_submit_locked(c, &rs, msg, msglen, op);
        if (rc == 0)
            for (size_t i = 0; i < rs.n; i++) {
                const feature_level_record_t *r = rs.a[i].rec;
                slog_info("metadata: feature %.*s finalized at level %d", (int)r->name.len, r->name.p,
                          (int)r->feature_level);
            }
    }
    recs_free(&rs);
out:
    pthread_mutex_unlock(&c->op_lock);
    return rc;
}

int ctl_check_registration_features(const struct mimage *img, const struct broker_registration_request_s *req,
                                    char *msg, size_t msglen)
{
    bool has_mv = false;
    /* ClusterControlManager.processRegistrationFeature: every feature the
     * broker names must include its finalized level (metadata.version's
     * default being 1); a broker without metadata.version supports 1
     * only; a finalized feature it does not name, level 0 only. */
    for (int32_t i = 0; i < req->features.n; i++) {
        const broker_registration_request_feature_t *f = &req->features.a[i];
        char name[256];
        snprintf(name, sizeof name, "%.*s", f->name.len > 0 ? (int)f->name.len : 0, f->name.p);
        bool mv = strcmp(name, MV_NAME) == 0;
        has_mv |= mv;
        int16_t fin = mimage_feature_level(img, name);
        if (mv && fin == 0)
            fin = 1;
        if (fin < f->min_supported_version || fin > f->max_supported_version) {
            snprintf(msg, msglen,
                     "Unable to register because the broker does not support finalized version %d of %s. The "
                     "broker wants a version between %d and %d, inclusive.",
                     (int)fin, name, (int)f->min_supported_version, (int)f->max_supported_version);
            return KERR_UNSUPPORTED_VERSION;
        }
    }
    int16_t mv = img->metadata_version > 0 ? img->metadata_version : 1;
    if (!has_mv && mv != MV_MIN_KRAFT) {
        snprintf(msg, msglen,
                 "Unable to register because the broker does not support finalized version %d of %s. The broker "
                 "wants a version between %d and %d, inclusive.",
                 (int)mv, MV_NAME, MV_MIN_KRAFT, MV_MIN_KRAFT);
        return KERR_UNSUPPORTED_VERSION;
    }
    for (int32_t k = 0; k < img->nfeatures; k++) {
        bool named = false;
        for (int32_t i = 0; i < req->features.n && !named; i++)
            named = kstr_eqc(req->features.a[i].name, img->features[k].name);
        if (!named && img->features[k].level != 0) {
            snprintf(msg, msglen,
                     "Unable to register because the broker does not support finalized version %d of %s. The "
                     "broker wants a version between 0 and 0, inclusive.",
                     (int)img->features[k].level, img->features[k].name);
            return KERR_UNSUPPORTED_VERSION;
        }
    }
    return 0;
}
