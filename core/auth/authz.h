/* Authorization: every handler asks before it acts, with the principal,
 * the client's host, the operation and the resource, as Kafka's
 * Authorizer does. authorizer.class.name chooses who answers: unset or
 * empty allows everything (as Kafka without an authorizer); otherwise a
 * comma-separated chain of the built-in ACL authorizer ("acl", or
 * Kafka's org.apache.kafka.metadata.authorizer.StandardAuthorizer: the
 * image's ACLs, super.users, allow.everyone.if.no.acl.found) and plugin
 * authorizers (SAMSA_CAP_AUTHORIZER capabilities, by name). For each
 * action the first ALLOW or DENY wins, DEFER passes it on, and the end
 * of the chain denies. The ACL link's decisions are cached per
 * connection until the ACLs change; denials are logged (rate-limited)
 * as Kafka's authorizer logger does. */
#ifndef SAMSA_AUTH_AUTHZ_H
#define SAMSA_AUTH_AUTHZ_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/kcodec.h"

struct request;
struct conn;
struct controller;
struct plugin_registry;
struct samsa_config;

/* Kafka's AclOperation codes. */
enum acl_op {
    ACL_OP_ANY = 1,
    ACL_OP_ALL = 2,
    ACL_OP_READ = 3,
    ACL_OP_WRITE = 4,
    ACL_OP_CREATE = 5,
    ACL_OP_DELETE = 6,
    ACL_OP_ALTER = 7,
    ACL_OP_DESCRIBE = 8,
    ACL_OP_CLUSTER_ACTION = 9,
    ACL_OP_DESCRIBE_CONFIGS = 10,
    ACL_OP_ALTER_CONFIGS = 11,
    ACL_OP_IDEMPOTENT_WRITE = 12,
    ACL_OP_CREATE_TOKENS = 13,
    ACL_OP_DESCRIBE_TOKENS = 14,
};

/* Kafka's ResourceType codes. */
enum acl_resource {
    ACL_RES_TOPIC = 2,
    ACL_RES_GROUP = 3,
    ACL_RES_CLUSTER = 4,
    ACL_RES_TRANSACTIONAL_ID = 5,
    ACL_RES_DELEGATION_TOKEN = 6,
    ACL_RES_USER = 7,
};

/* Builds the chain from authorizer.class.name, super.users and
 * allow.everyone.if.no.acl.found (read-only keys, read once), loading the
 * plugin of a name no loaded capability has. Returns 0, or -1 with one
 * line in err (an unknown name). At startup, before any worker runs. */
int authz_setup(const struct samsa_config *cfg, struct plugin_registry *reg, char *err, size_t errlen);
/* Where the ACL link reads the ACLs (the image); before workers run. */
void authz_set_controller(struct controller *c);
/* The same from any source of images (tests, benchmarks): fn returns a
 * reference the caller releases (mimage_release), or NULL for none. */
struct mimage;
void authz_set_image_source(struct mimage *(*fn)(void *arg), void *arg);
/* Whether any authorizer is configured, and whether the built-in ACL
 * authorizer is in the chain (CreateAcls, DescribeAcls and DeleteAcls
 * answer SECURITY_DISABLED without it, as Kafka does). */
bool authz_enabled(void);
bool authz_acl_enabled(void);
/* Frees the connection's decision cache (called by sasl_conn_free). */
void authz_conn_free(struct conn *c);

/* The cluster resource's one name (Kafka's Resource.CLUSTER_NAME). */
#define AUTHZ_CLUSTER_NAME KSTR_LIT("kafka-cluster")

/* True when the request's principal may perform op on the resource.
 * name is the resource name (AUTHZ_CLUSTER_NAME for the cluster). A denial
 * is logged (Kafka's logIfDenied). */
bool authz_allowed(const struct request *req, enum acl_op op, enum acl_resource type, kstr_t name);
/* The same without the denial log: for filtering what a response shows
 * (Metadata of all topics, ListGroups, authorized operations), where
 * Kafka passes logIfDenied=false. */
bool authz_filter(const struct request *req, enum acl_op op, enum acl_resource type, kstr_t name);
/* True when the principal may perform op on at least one resource of
 * the type, whatever its name (Kafka's Authorizer.authorizeByResourceType:
 * an idempotent producer with WRITE on any topic). */
bool authz_allowed_any(const struct request *req, enum acl_op op, enum acl_resource type);

/* Who asks, for authz_decide (tests, and requests without a connection
 * have none). */
struct authz_subject {
    const char *principal;      /* "User:alice" */
    const char *host;           /* the client's address */
    const char *listener;
    const char *client_id;      /* may be NULL */
    int16_t api_key, api_version;
};
/* The chain's decision for one action; name NULL: any resource of the
 * type (authorizeByResourceType). cache: the connection whose cache the
 * ACL link may use, or NULL. */
bool authz_decide(const struct authz_subject *s, enum acl_op op, enum acl_resource type, const char *name,
                  size_t len, bool log_denied, struct conn *cache);
/* Drops the chain (tests). */
void authz_reset(void);

#endif
