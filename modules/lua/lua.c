/* SPDX-License-Identifier: Apache-2.0
 *
 * lua: the Lua host module. Runs operator scripts in a sandbox
 * (sandbox.c), one lua_State per calling thread and script (script.c),
 * and offers them as two capabilities: the authorizer "lua" (authz.c,
 * plugin.lua.authorizer.script) and the partitioner "lua" (partition.c,
 * plugin.lua.partitioner.script). Limits: plugin.lua.memory.limit.bytes
 * per state (default 32 MiB), plugin.lua.instruction.limit per call
 * (default 1000000). reload (SIGHUP) re-reads both scripts, and
 * reconfigure loads a new path set through IncrementalAlterConfigs; a
 * script that fails its check leaves the old one in force.
 * Compiled against include/samsa only, linked with liblua5.4. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "module.h"

#ifndef SAMSA_MODULE_VERSION
#define SAMSA_MODULE_VERSION "0"
#endif

#define DEFAULT_MEM_LIMIT (32u << 20)
#define DEFAULT_INSTR_LIMIT 1000000

/* ------------------------------------------------------------------ */
/* Kafka's names                                                       */

/* ApiKeys, by key (Kafka's ApiMessageType names). */
static const char *const api_names[] = {
    "Produce", "Fetch", "ListOffsets", "Metadata", "LeaderAndIsr", "StopReplica", "UpdateMetadata",
    "ControlledShutdown", "OffsetCommit", "OffsetFetch", "FindCoordinator", "JoinGroup", "Heartbeat",
    "LeaveGroup", "SyncGroup", "DescribeGroups", "ListGroups", "SaslHandshake", "ApiVersions", "CreateTopics",
    "DeleteTopics", "DeleteRecords", "InitProducerId", "OffsetForLeaderEpoch", "AddPartitionsToTxn",
    "AddOffsetsToTxn", "EndTxn", "WriteTxnMarkers", "TxnOffsetCommit", "DescribeAcls", "CreateAcls",
    "DeleteAcls", "DescribeConfigs", "AlterConfigs", "AlterReplicaLogDirs", "DescribeLogDirs",
    "SaslAuthenticate", "CreatePartitions", "CreateDelegationToken", "RenewDelegationToken",
    "ExpireDelegationToken", "DescribeDelegationToken", "DeleteGroups", "ElectLeaders",
    "IncrementalAlterConfigs", "AlterPartitionReassignments", "ListPartitionReassignments", "OffsetDelete",
    "DescribeClientQuotas", "AlterClientQuotas", "DescribeUserScramCredentials", "AlterUserScramCredentials",
    "Vote", "BeginQuorumEpoch", "EndQuorumEpoch", "DescribeQuorum", "AlterPartition", "UpdateFeatures",
    "Envelope", "FetchSnapshot", "DescribeCluster", "DescribeProducers", "BrokerRegistration",
    "BrokerHeartbeat", "UnregisterBroker", "DescribeTransactions", "ListTransactions", "AllocateProducerIds",
    "ConsumerGroupHeartbeat", "ConsumerGroupDescribe", "ControllerRegistration", "GetTelemetrySubscriptions",
    "PushTelemetry", "AssignReplicasToDirs", "ListClientMetricsResources", "DescribeTopicPartitions",
    "ShareGroupHeartbeat", "ShareGroupDescribe", "ShareFetch", "ShareAcknowledge", "AddRaftVoter",
    "RemoveRaftVoter", "UpdateRaftVoter", "InitializeShareGroupState", "ReadShareGroupState",
    "WriteShareGroupState", "DeleteShareGroupState", "ReadShareGroupStateSummary",
};

const char *lua_api_name(int key)
{
    return key >= 0 && (size_t)key < sizeof api_names / sizeof api_names[0] ? api_names[key] : NULL;
}

/* AclOperation codes 0..14. */
static const char *const op_names[] = {
    "UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "CLUSTER_ACTION",
    "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS",
};

const char *lua_operation_name(int op)
{
    return op >= 0 && (size_t)op < sizeof op_names / sizeof op_names[0] ? op_names[op] : NULL;
}

/* ResourceType codes 0..7. */
static const char *const rt_names[] = {
    "UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER",
};

const char *lua_resource_type_name(int type)
{
    return type >= 0 && (size_t)type < sizeof rt_names / sizeof rt_names[0] ? rt_names[type] : NULL;
}

/* ------------------------------------------------------------------ */
/* Config                                                              */

static void free_list(char **l)
{
    for (size_t i = 0; l && l[i]; i++)
        free(l[i]);
    free(l);
}

/* Appends a copy of [p, p+n) to a NULL-terminated list. */
static int list_add(char ***l, size_t *n, const char *p, size_t len)
{
    char **nl = realloc(*l, (*n + 2) * sizeof *nl);
    if (!nl)
        return -1;
    *l = nl;
    char *s = malloc(len + 1);
    if (!s)
        return -1;
    memcpy(s, p, len);
    s[len] = '\0';
    nl[(*n)++] = s;
    nl[*n] = NULL;
    return 0;
}

static size_t trim(const char **p, size_t n)
{
    while (n && (**p == ' ' || **p == '\t')) {
        (*p)++;
        n--;
    }
    while (n && ((*p)[n - 1] == ' ' || (*p)[n - 1] == '\t'))
        n--;
    return n;
}

/* Listener names of "NAME://host:port,..." (listeners). */
static char **parse_listeners(const char *v)
{
    char **l = NULL;
    size_t n = 0;
    for (const char *p = v; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        const char *q = p;
        size_t ql = trim(&q, len);
        const char *sep = ql >= 3 ? strstr(q, "://") : NULL;
        if (sep && sep < q + ql && list_add(&l, &n, q, (size_t)(sep - q)) < 0)
            break;
        p = e ? e + 1 : p + len;
    }
    return l;
}

/* listener.security.protocol.map: "NAME:PROTO,...". */
static void parse_map(struct lua_module *m, const char *v)
{
    size_t n = 0, k = 0;
    for (const char *p = v; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        const char *q = p;
        size_t ql = trim(&q, len);
        const char *colon = memchr(q, ':', ql);
        if (colon) {
            const char *pr = colon + 1;
            size_t pl = trim(&pr, ql - (size_t)(pr - q));
            if (list_add(&m->map_names, &n, q, (size_t)(colon - q)) < 0 ||
                list_add(&m->map_protos, &k, pr, pl) < 0)
                break;
        }
        p = e ? e + 1 : p + len;
    }
}

static int parse_size(const char *v, long long min, long long *out)
{
    if (!v)
        return 0;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < min)
        return -1;
    *out = x;
    return 0;
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static void module_free(struct lua_module *m)
{
    if (!m)
        return;
    script_destroy(&m->authz);
    script_destroy(&m->part);
    free((char *)m->env.node_id);
    free((char *)m->env.cluster_id);
    free((char *)m->env.rack);
    free_list(m->env.listeners);
    free_list(m->map_names);
    free_list(m->map_protos);
    free(m);
}

/* ------------------------------------------------------------------ */
/* The descriptor                                                      */

static int lua_init(samsa_host_t *host, const samsa_host_api_t *api, void **state, char *errstr, size_t errlen)
{
    struct lua_module *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(errstr, errlen, "out of memory");
        return SAMSA_ENOMEM;
    }
    m->env.host = host;
    m->env.api = api;
    long long mem = DEFAULT_MEM_LIMIT, instr = DEFAULT_INSTR_LIMIT;
    const char *v = api->config_get(host, "memory.limit.bytes");
    if (parse_size(v, 0, &mem) < 0) {
        snprintf(errstr, errlen, "plugin.lua.memory.limit.bytes: '%s' is not a number of bytes >= 0", v);
        free(m);
        return SAMSA_EINVAL;
    }
    v = api->config_get(host, "instruction.limit");
    if (parse_size(v, 0, &instr) < 0 || instr > INT_MAX) {
        snprintf(errstr, errlen, "plugin.lua.instruction.limit: '%s' is not a number within 0..%d", v, INT_MAX);
        free(m);
        return SAMSA_EINVAL;
    }
    m->env.mem_limit = (size_t)mem;
    m->env.instr_limit = instr;
    if (SAMSA_HOST_HAS(api, server_config_get)) {
        m->env.node_id = dup_or_null(api->server_config_get(host, "node.id"));
        m->env.cluster_id = dup_or_null(api->server_config_get(host, "cluster.id"));
        m->env.rack = dup_or_null(api->server_config_get(host, "broker.rack"));
        m->env.listeners = parse_listeners(api->server_config_get(host, "listeners"));
        parse_map(m, api->server_config_get(host, "listener.security.protocol.map"));
    }
    script_init(&m->authz, "authorizer", "authorize", ROLE_AUTHZ, &m->env);
    script_init(&m->part, "partitioner", "partition", ROLE_PARTITION, &m->env);
    m->authz.errors = api->metric_register(host, "authorizer.errors", SAMSA_METRIC_COUNTER,
                                           "Lua authorizer calls that failed (denied)");
    m->part.errors = api->metric_register(host, "partitioner.errors", SAMSA_METRIC_COUNTER,
                                          "Lua partitioner calls that failed (default partitioner used)");

    struct {
        struct script *s;
        const char *key;
    } scripts[] = {{&m->authz, "authorizer.script"}, {&m->part, "partitioner.script"}};
    for (size_t i = 0; i < 2; i++) {
        const char *path = api->config_get(host, scripts[i].key);
        if (path && *path && script_load(scripts[i].s, path, errstr, errlen) < 0) {
            module_free(m);
            return SAMSA_EINVAL;
        }
    }
    int rc = api->register_capability(host, &lua_authorizer.hdr, m);
    if (rc == SAMSA_OK)
        rc = api->register_capability(host, &lua_partitioner.hdr, m);
    if (rc != SAMSA_OK) {
        snprintf(errstr, errlen, "cannot register the lua capabilities");
        module_free(m);
        return rc;
    }
    *state = m;
    return SAMSA_OK;
}

static void lua_fini(void *state) { module_free(state); }

static void lua_worker_fini(void *state, void *worker_state)
{
    (void)state;
    worker_free(worker_state);
}

static int lua_reload(void *state, char *errstr, size_t errlen)
{
    struct lua_module *m = state;
    char e1[512] = "", e2[512] = "";
    int r1 = script_reload(&m->authz, e1, sizeof e1);
    int r2 = script_reload(&m->part, e2, sizeof e2);
    if (r1 == 0 && r2 == 0)
        return SAMSA_OK;
    snprintf(errstr, errlen, "%s%s%s (the old script stays in force)", e1, e1[0] && e2[0] ? "; " : "", e2);
    return SAMSA_EINVAL;
}

/* plugin.lua.authorizer.script / partitioner.script changed through
 * AlterConfigs (ABI 1.3): the new script is checked as at a reload
 * (SIGHUP), and only then replaces the old one on every thread. */
static int lua_reconfigure(void *state, const char *key, const char *value, bool validate_only, char *errstr,
                           size_t errlen)
{
    struct lua_module *m = state;
    struct script *s = strcmp(key, "authorizer.script") == 0    ? &m->authz
                       : strcmp(key, "partitioner.script") == 0 ? &m->part
                                                                : NULL;
    if (!s)
        return SAMSA_EUNSUPPORTED;
    if (!value || !*value) {
        snprintf(errstr, errlen, "plugin.lua.%s: a script cannot be removed at run time (restart without it)",
                 key);
        return SAMSA_EINVAL;
    }
    char err[512] = "";
    int rc = validate_only ? script_check(s, value, err, sizeof err) : script_load(s, value, err, sizeof err);
    if (rc == 0)
        return SAMSA_OK;
    snprintf(errstr, errlen, "plugin.lua.%s: %s", key, err);
    return SAMSA_EINVAL;
}

static const samsa_plugin_info_t lua_info = {
    SAMSA_PLUGIN_INFO_HEADER,
    .name = "lua",
    .version = SAMSA_MODULE_VERSION,
    .description = "Lua host: authorizer and partitioner scripts in a sandbox",
    .license = "Apache-2.0",
    .init = lua_init,
    .fini = lua_fini,
    .worker_fini = lua_worker_fini,
    .reload = lua_reload,
    .reconfigure = lua_reconfigure,
};

SAMSA_PLUGIN_DECLARE(lua, lua_info)
