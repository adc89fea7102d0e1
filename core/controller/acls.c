/* ACLs in the metadata log: CreateAcls and DeleteAcls as Kafka's
 * AclControlManager decides them (with the checks Kafka's AclApis makes
 * on the broker first), Kafka's binding filters, and the names of ACL
 * codes. The image keeps the set (image.c); every node applies it and
 * the authorizer (core/auth) reads it. */
#include <stdio.h>
#include <string.h>

#include "controller/controller_internal.h"
#include "proto/gen/access_control_entry_record.h"
#include "proto/gen/kmeta.h"
#include "proto/gen/remove_access_control_entry_record.h"
#include "proto/kacl.h"
#include "proto/kerr.h"
#include "util/slog.h"
#include "util/uuid.h"

/* Kafka's AclControlManager.MAX_RECORDS_PER_USER_OP */
#define ACL_MAX_RECORDS_PER_OP 10000


static bool kstr_is(kstr_t s, const char *z) { return s.len >= 0 && (size_t)s.len == strlen(z) && !memcmp(s.p, z, (size_t)s.len); }

static bool starts_with(kstr_t name, const char *prefix)
{
    size_t pl = strlen(prefix);
    return name.len >= 0 && (size_t)name.len >= pl && !memcmp(name.p, prefix, pl);
}

/* Kafka's AclBindingFilter.matches (ResourcePatternFilter and
 * AccessControlEntryFilter): ANY and null match everything; MATCH
 * matches the patterns that would apply to the named resource. */
bool controller_acl_filter_match(const struct controller_acl *f, const struct mi_acl *a)
{
    if (f->resource_type != ACL_CODE_ANY && f->resource_type != a->resource_type)
        return false;
    if (f->pattern_type != ACL_CODE_ANY && f->pattern_type != ACL_PATTERN_MATCH && f->pattern_type != a->pattern_type)
        return false;
    if (f->resource_name.len >= 0) {
        if (f->pattern_type == ACL_CODE_ANY || f->pattern_type == a->pattern_type) {
            if (!kstr_is(f->resource_name, a->resource_name))
                return false;
        } else if (a->pattern_type == ACL_PATTERN_LITERAL) {
            if (!kstr_is(f->resource_name, a->resource_name) && strcmp(a->resource_name, "*") != 0)
                return false;
        } else if (a->pattern_type == ACL_PATTERN_PREFIXED) {
            if (!starts_with(f->resource_name, a->resource_name))
                return false;
        } else {
            return false;
        }
    }
    if (f->principal.len >= 0 && !kstr_is(f->principal, a->principal))
        return false;
    if (f->host.len >= 0 && !kstr_is(f->host, a->host))
        return false;
    if (f->operation != ACL_CODE_ANY && f->operation != a->operation)
        return false;
    if (f->permission != ACL_CODE_ANY && f->permission != a->permission)
        return false;
    return true;
}

int16_t controller_acl_filter_check(const struct controller_acl *f, const char **msg)
{
    /* Kafka's AclControlManager.validateFilter (isUnknown of each half) */
    if (f->resource_type <= 0 || f->resource_type > ACL_TYPE_MAX || f->pattern_type <= 0 ||
        f->pattern_type > ACL_PATTERN_PREFIXED) {
        *msg = "Unknown patternFilter.";
        return KERR_INVALID_REQUEST;
    }
    if (f->operation <= 0 || f->operation > ACL_OP_MAX || f->permission <= 0 || f->permission > ACL_PERMISSION_ALLOW) {
        *msg = "Unknown entryFilter.";
        return KERR_INVALID_REQUEST;
    }
    return 0;
}

/* Kafka's checks of one new ACL: AclApis.handleCreateAcls (cluster name,
 * empty name), AclControlManager.validateNewAcl, and the principal's
 * form (SecurityUtils.parseKafkaPrincipal). 0 or INVALID_REQUEST with a
 * message in msg. */
static int16_t check_new_acl(const struct controller_acl *x, char *msg, size_t msglen)
{
    if (x->resource_type == ACL_TYPE_CLUSTER && !kstr_is(x->resource_name, "kafka-cluster")) {
        snprintf(msg, msglen, "The only valid name for the CLUSTER resource is kafka-cluster");
        return KERR_INVALID_REQUEST;
    }
    if (x->resource_name.len <= 0) {
        snprintf(msg, msglen, "Invalid empty resource name");
        return KERR_INVALID_REQUEST;
    }
    if (x->resource_type < ACL_TYPE_MIN || x->resource_type > ACL_TYPE_MAX) {
        snprintf(msg, msglen, "Invalid resourceType %s", kacl_resource_type_name(x->resource_type));
        return KERR_INVALID_REQUEST;
    }
    if (x->pattern_type != ACL_PATTERN_LITERAL && x->pattern_type != ACL_PATTERN_PREFIXED) {
        snprintf(msg, msglen, "Invalid patternType %s", kacl_pattern_type_name(x->pattern_type));
        return KERR_INVALID_REQUEST;
    }
    if (x->operation <= ACL_CODE_ANY || x->operation > ACL_OP_MAX) {
        snprintf(msg, msglen, "Invalid operation %s", kacl_operation_name(x->operation));
        return KERR_INVALID_REQUEST;
    }
    if (x->permission != ACL_PERMISSION_DENY && x->permission != ACL_PERMISSION_ALLOW) {
        snprintf(msg, msglen, "Invalid permissionType %s", kacl_permission_name(x->permission));
        return KERR_INVALID_REQUEST;
    }
    const char *colon = x->principal.len > 0 ? memchr(x->principal.p, ':', (size_t)x->principal.len) : NULL;
    if (!colon) {
        snprintf(msg, msglen, "expected a string in format principalType:principalName but got %.*s",
                 x->principal.len > 0 ? (int)x->principal.len : 0, x->principal.len > 0 ? x->principal.p : "");
        return KERR_INVALID_REQUEST;
    }
    if (x->host.len <= 0) {
        snprintf(msg, msglen, "Invalid empty host");
        return KERR_INVALID_REQUEST;
    }
    return 0;
}

static bool same_acl(const struct controller_acl *x, const struct mi_acl *a)
{
    return x->resource_type == a->resource_type && x->pattern_type == a->pattern_type &&
           x->operation == a->operation && x->permission == a->permission &&
           kstr_is(x->resource_name, a->resource_name) && kstr_is(x->principal, a->principal) &&
           kstr_is(x->host, a->host);
}

static bool acl_exists(const struct mimage *img, const struct controller_acl *x)
{
    int32_t n;
    int32_t i = mi_acls_find(img->acls, x->resource_type, x->pattern_type, x->resource_name.p,
                             (size_t)x->resource_name.len, &n);
    for (int32_t k = 0; k < n; k++)
        if (same_acl(x, &img->acls->a[i + k]))
            return true;
    return false;
}

static void log_acl(const char *what, const struct mi_acl *a)
{
    slog_info("metadata: ACL %s: %s %s %s from host %s on %s:%s:%s", what, a->principal,
              kacl_permission_name(a->permission), kacl_operation_name(a->operation), a->host,
              kacl_resource_type_name(a->resource_type), kacl_pattern_type_name(a->pattern_type), a->resource_name);
}

int controller_create_acls(struct controller *c, const struct controller_acl *in, int32_t n, int16_t *errs,
                           char **msgs, struct arena *ar, struct ctl_op **op)
{
    *op = NULL;
    pthread_mutex_lock(&c->op_lock);
    int rc = ctl_not_active(c);
    if (rc) {
        pthread_mutex_unlock(&c->op_lock);
        return rc;
    }
    struct recs rs;
    recs_init(&rs);
    for (int32_t i = 0; i < n; i++) {
        const struct controller_acl *x = &in[i];
        char msg[512];
        errs[i] = check_new_acl(x, msg, sizeof msg);
        msgs[i] = NULL;
        if (errs[i]) {
            msgs[i] = arena_alloc(ar, strlen(msg) + 1);
            memcpy(msgs[i], msg, strlen(msg) + 1);
            continue;
        }
        /* Kafka's existingAcls.add: an ACL already there (or earlier in
         * this request) succeeds without a record */
        bool dup = acl_exists(c->spec, x);
        for (int32_t k = 0; !dup && k < i; k++)
            dup = !errs[k] && in[k].resource_type == x->resource_type && in[k].pattern_type == x->pattern_type &&
                  in[k].operation == x->operation && in[k].permission == x->permission &&
                  kstr_eq(in[k].resource_name, x->resource_name) && kstr_eq(in[k].principal, x->principal) &&
                  kstr_eq(in[k].host, x->host);
        if (dup)
            continue;
        access_control_entry_record_t *r = arena_alloc(&rs.arena, sizeof *r);
        access_control_entry_record_init(r);
        uuid_random(r->id.b);
        r->resource_type = x->resource_type;
        r->resource_name = x->resource_name;
        r->pattern_type = x->pattern_type;
        r->principal = x->principal;
        r->host = x->host;
        r->operation = x->operation;
        r->permission_type = x->permission;
        recs_add(&rs, KMETA_ACCESS_CONTROL_ENTRY_RECORD, 0, r);
    }
    if (rs.n > 0) {
        char msg[256] = "";
        rc = ctl_submit_locked(c, &rs, msg, sizeof msg, op);
        if (rc == 0)
            for (size_t i = 0; i < rs.n; i++) {
                const access_control_entry_record_t *r = rs.a[i].rec;
                char name[512], principal[512], host[256];
                snprintf(name, sizeof name, "%.*s", (int)r->resource_name.len, r->resource_name.p);
                snprintf(principal, sizeof principal, "%.*s", (int)r->principal.len, r->principal.p);
                snprintf(host, sizeof host, "%.*s", (int)r->host.len, r->host.p);
                struct mi_acl a = {.resource_type = r->resource_type, .pattern_type = r->pattern_type,
                                   .operation = r->operation, .permission = r->permission_type,
                                   .resource_name = name, .principal = principal, .host = host};
                log_acl("created", &a);
            }
    }
    recs_free(&rs);
    pthread_mutex_unlock(&c->op_lock);
    return rc;
}

static struct mi_acl acl_copy(struct arena *ar, const struct mi_acl *a)
{
    struct mi_acl r = *a;
    size_t l1 = strlen(a->resource_name) + 1, l2 = strlen(a->principal) + 1, l3 = strlen(a->host) + 1;
    char *p = arena_alloc(ar, l1 + l2 + l3);
    r.resource_name = memcpy(p, a->resource_name, l1);
    r.principal = memcpy(p + l1, a->principal, l2);
    r.host = memcpy(p + l1 + l2, a->host, l3);
    return r;
}

int controller_delete_acls(struct controller *c, const struct controller_acl *filters, int32_t n,
                           struct controller_acl_deleted *res, struct arena *ar, struct ctl_op **op)
{
    *op = NULL;
    pthread_mutex_lock(&c->op_lock);
    int rc = ctl_not_active(c);
    if (rc) {
        pthread_mutex_unlock(&c->op_lock);
        return rc;
    }
    /* held: the submit below replaces the speculative image */
    struct mimage *spec = mimage_ref(c->spec);
    const struct mi_acls *set = spec->acls;
    int32_t total = set ? set->n : 0;
    /* an ACL matched by several filters is removed once (Kafka keeps the
     * records in a set) */
    bool *gone = arena_alloc(ar, (size_t)(total ? total : 1) * sizeof *gone);
    memset(gone, 0, (size_t)(total ? total : 1) * sizeof *gone);
    struct recs rs;
    recs_init(&rs);
    for (int32_t i = 0; i < n; i++) {
        struct controller_acl_deleted *r = &res[i];
        memset(r, 0, sizeof *r);
        r->err = controller_acl_filter_check(&filters[i], &r->msg);
        if (r->err)
            continue;
        int32_t m = 0;
        for (int32_t k = 0; k < total; k++)
            m += controller_acl_filter_match(&filters[i], &set->a[k]);
        r->acls = arena_alloc(ar, (size_t)(m ? m : 1) * sizeof *r->acls);
        for (int32_t k = 0; k < total; k++) {
            if (!controller_acl_filter_match(&filters[i], &set->a[k]))
                continue;
            r->acls[r->n++] = acl_copy(ar, &set->a[k]);
            if (gone[k])
                continue;
            gone[k] = true;
            remove_access_control_entry_record_t *rec = arena_alloc(&rs.arena, sizeof *rec);
            remove_access_control_entry_record_init(rec);
            rec->id = set->a[k].id;
            recs_add(&rs, KMETA_REMOVE_ACCESS_CONTROL_ENTRY_RECORD, 0, rec);
        }
    }
    if (rs.n > ACL_MAX_RECORDS_PER_OP) {
        /* Kafka's BoundedListTooLongException fails the whole request
         * (atomic): UNKNOWN_SERVER_ERROR for every filter */
        for (int32_t i = 0; i < n; i++)
            if (!res[i].err) {
                res[i].err = KERR_UNKNOWN_SERVER_ERROR;
                res[i].msg = "Cannot remove more than 10000 acls in a single delete operation.";
                res[i].n = 0;
            }
    } else if (rs.n > 0) {
        char msg[256] = "";
        rc = ctl_submit_locked(c, &rs, msg, sizeof msg, op);
        if (rc == 0)
            for (int32_t k = 0; k < total; k++)
                if (gone[k])
                    log_acl("deleted", &set->a[k]);
    }
    recs_free(&rs);
    pthread_mutex_unlock(&c->op_lock);
    mimage_release(spec);
    return rc;
}
