/* Kafka's StandardAuthorizer rules over the cluster's ACLs (the image's
 * struct mi_acls), with no state of its own: which ACLs apply to a
 * resource (literal, prefixed, the wildcard "*"), whose (the principal
 * or User:*) and from where (the host or *), DENY over ALLOW, the
 * operations an ALLOW implies, allow.everyone.if.no.acl.found, and
 * Authorizer.authorizeByResourceType. Super users are the caller's
 * (authz.c): these functions judge ACLs only. */
#ifndef SAMSA_AUTH_ACL_H
#define SAMSA_AUTH_ACL_H

#include <stdbool.h>
#include <stddef.h>

#include "controller/image.h"

/* Which rule decided, for the denial log (Kafka's MatchingRule). */
enum acl_rule {
    ACL_RULE_DEFAULT_ALLOW, /* no ACL on the resource, allow.everyone.if.no.acl.found */
    ACL_RULE_DEFAULT_DENY,  /* ACLs on the resource, none for this principal, or none at all */
    ACL_RULE_MATCH_ALLOW,
    ACL_RULE_MATCH_DENY,
};

/* Whether principal ("User:alice") from host (an address) may perform
 * op on resource (type, name of len bytes), as StandardAuthorizerData
 * .authorize decides it. allow_if_none: allow.everyone.if.no.acl.found.
 * acls may be NULL (no ACLs). *rule (may be NULL) says why; *acl (may be
 * NULL) the deciding ACL when one did. */
bool acl_authorize(const struct mi_acls *acls, const char *principal, const char *host, int op, int type,
                   const char *name, size_t len, bool allow_if_none, enum acl_rule *rule, const struct mi_acl **acl);

/* Whether the principal may perform op on at least one resource of the
 * type (Kafka's Authorizer.authorizeByResourceType, e.g. an idempotent
 * producer's WRITE on any topic). */
bool acl_authorize_any(const struct mi_acls *acls, const char *principal, const char *host, int op, int type,
                       bool allow_if_none);

/* Whether principal is in super.users (semicolon-separated principals;
 * spaces around each are ignored, as Kafka trims them). NULL: none. */
bool acl_super_user(const char *super_users, const char *principal);

#endif
