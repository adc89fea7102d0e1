/* Authorization: every handler asks before it acts, with the principal,
 * the client's host, the operation and the resource, as Kafka's
 * Authorizer does. Until the security work lands the decision is
 * allow-all, but every call site already exists. */
#ifndef SAMSA_AUTH_AUTHZ_H
#define SAMSA_AUTH_AUTHZ_H

#include <stdbool.h>

#include "proto/kcodec.h"

struct request;

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

/* True when the request's principal may perform op on the resource.
 * name is the resource name ("kafka-cluster" for the cluster). */
bool authz_allowed(const struct request *req, enum acl_op op, enum acl_resource type, kstr_t name);
/* True when the principal may perform op on at least one resource of
 * the type, whatever its name (Kafka's Authorizer.authorizeByResourceType:
 * an idempotent producer with WRITE on any topic). */
bool authz_allowed_any(const struct request *req, enum acl_op op, enum acl_resource type);

#endif
