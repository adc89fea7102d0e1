#include "auth/authz.h"

#include "net/request.h"

bool authz_allowed(const struct request *req, enum acl_op op, enum acl_resource type, kstr_t name)
{
    /* Allow-all until an authorizer is configured (security issue). */
    (void)req;
    (void)op;
    (void)type;
    (void)name;
    return true;
}

bool authz_allowed_any(const struct request *req, enum acl_op op, enum acl_resource type)
{
    (void)req; /* allow-all, as authz_allowed */
    (void)op;
    (void)type;
    return true;
}
