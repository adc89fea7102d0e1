/* SPDX-License-Identifier: Apache-2.0
 *
 * The lua module's state, shared by its capabilities (authz.c,
 * partition.c) and its descriptor (lua.c). One per init: nothing
 * mutable is static, so a host may init the module more than once
 * (the librdkafka plugin does, once per client configuration). */
#ifndef SAMSA_LUA_MODULE_H
#define SAMSA_LUA_MODULE_H

#include "samsa/authz.h"
#include "samsa/partitioner.h"
#include "script.h"

enum { ROLE_AUTHZ = 0, ROLE_PARTITION = 1 };

struct lua_module {
    struct sbx_env env;
    struct script authz;
    struct script part;
    /* listener name -> security protocol, from
     * listener.security.protocol.map (parallel arrays, NULL-terminated) */
    char **map_names;
    char **map_protos;
    bool warned_no_script;
};

/* Kafka's names for an API key, an AclOperation, a ResourceType; NULL
 * for an unknown number. */
const char *lua_api_name(int key);
const char *lua_operation_name(int op);
const char *lua_resource_type_name(int type);

extern const samsa_authorizer_t lua_authorizer;
extern const samsa_partitioner_t lua_partitioner;

#endif
