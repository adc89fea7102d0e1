/* SPDX-License-Identifier: Apache-2.0
 *
 * Capability kind SAMSA_CAP_AUTHORIZER: decides a batch of actions at
 * once, as Kafka's Authorizer.authorize(context, List<Action>). The
 * server's authorizer.class.name lists the chain, by capability name
 * (the built-in ACL authorizer is "acl"; a name no loaded plugin
 * provides makes the server load the plugin of that name): for each
 * action the first ALLOW or DENY wins, DEFER passes to the next, and an
 * action every authorizer defers is denied.
 *
 * Declared in ABI 1.0; called by the server's authorization dispatch
 * (core/auth/authz.c) since the ACL work.
 */
#ifndef SAMSA_AUTHZ_H
#define SAMSA_AUTHZ_H

#include "samsa/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SAMSA_AUTHZ_DENY 0
#define SAMSA_AUTHZ_ALLOW 1
#define SAMSA_AUTHZ_DEFER 2

/* Operation and resource type numbers are Kafka's AclOperation and
 * ResourceType codes (READ = 3, WRITE = 4, ...; TOPIC = 2, GROUP = 3,
 * CLUSTER = 4, TRANSACTIONAL_ID = 5, ...). */
typedef struct samsa_authz_action {
    int32_t operation;
    int32_t resource_type;
    /* "kafka-cluster" for the cluster. NULL means "any resource of this
     * type": the host asks whether the principal may perform the
     * operation on at least one of them (Kafka's
     * Authorizer.authorizeByResourceType, e.g. an idempotent producer
     * with WRITE on some topic). */
    const char *resource_name;
    /* Kafka's Action flags: whether a denial is logged, and whether the
     * caller only wants to know if anything is allowed (e.g. Metadata
     * filtering of topics). */
    bool log_if_allowed;
    bool log_if_denied;
} samsa_authz_action_t;

/* Who asks; borrowed for the call. */
typedef struct samsa_authz_ctx {
    uint32_t struct_size;
    const char *principal;     /* "User:alice", "User:ANONYMOUS" */
    const char *client_host;   /* peer address as text */
    const char *listener;
    const char *client_id;
    int16_t api_key;           /* the request being authorized */
    int16_t api_version;

    /* ---- ABI 1.2 (check struct_size before reading) ---- */
    const char *security_protocol; /* "SASL_PLAINTEXT", ...; NULL if unknown */
    /* When not NULL, n bytes, zeroed by the host: the authorizer sets
     * uncacheable[i] = 1 when the decision for actions[i] must not be
     * kept in the host's per-connection cache (e.g. it depends on the
     * time of day). */
    uint8_t *uncacheable;
} samsa_authz_ctx_t;

/* Size of the 1.0/1.1 context: fields after it are read only when
 * struct_size covers them. */
#define SAMSA_AUTHZ_CTX_SIZE_1_0 (offsetof(samsa_authz_ctx_t, api_version) + sizeof(int16_t))

typedef struct samsa_authorizer {
    /* hdr.kind = SAMSA_CAP_AUTHORIZER; hdr.name e.g. "lua", "acl". */
    samsa_cap_hdr_t hdr;

    /* ---- ABI 1.0 ---- */

    /* Writes one SAMSA_AUTHZ_* per action into results[0..n). Returns
     * SAMSA_OK; any error makes the host deny every action of the call
     * (and log once).
     * @locality any worker thread, concurrently; must not block */
    int (*authorize)(void *cap_state, const samsa_authz_ctx_t *ctx,
                     const samsa_authz_action_t *actions, size_t n, uint8_t *results);

    /* ---- ABI 1.1+: append here ---- */
} samsa_authorizer_t;

#define SAMSA_AUTHORIZER_SIZE_1_0 (offsetof(samsa_authorizer_t, authorize) + sizeof(void *))

#ifdef __cplusplus
}
#endif

#endif /* SAMSA_AUTHZ_H */
