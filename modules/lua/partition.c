/* SPDX-License-Identifier: Apache-2.0
 *
 * The Lua partitioner (capability SAMSA_CAP_PARTITIONER "lua"): the
 * script's partition(topic, key, value, partition_count) returns a
 * 0-based partition, or nil for the caller's default (Kafka's murmur2
 * in samsactl, librdkafka's partitioner in the librdkafka plugin). key
 * and value are strings, or nil for a null one. An error, the budget,
 * the memory cap, another type or a partition out of range also fall
 * back to the default (one rate-limited log line). */
#include <lua5.4/lauxlib.h>

#include "module.h"

struct part_call {
    const char *topic;
    const uint8_t *key, *value;
    int32_t key_len, value_len;
    int32_t count;
    int32_t result;
};

static void push_bytes(lua_State *L, const uint8_t *p, int32_t len)
{
    if (len < 0 || (!p && len > 0))
        lua_pushnil(L);
    else
        lua_pushlstring(L, (const char *)p, (size_t)len);
}

static void part_fn(lua_State *L, void *arg)
{
    struct part_call *c = arg;
    sbx_push_entry(L);
    lua_pushstring(L, c->topic ? c->topic : "");
    push_bytes(L, c->key, c->key_len);
    push_bytes(L, c->value, c->value_len);
    lua_pushinteger(L, c->count);
    lua_call(L, 4, 1);
    if (lua_isnil(L, -1)) {
        c->result = SAMSA_PARTITION_DEFER;
        return;
    }
    int isint = 0;
    lua_Integer p = lua_tointegerx(L, -1, &isint);
    if (!isint || lua_type(L, -1) != LUA_TNUMBER) {
        lua_pushfstring(L, "partition returned a %s (want an integer or nil)", luaL_typename(L, -1));
        sbx_error(L, lua_tostring(L, -1));
    }
    if (p < 0 || p >= c->count) {
        lua_pushfstring(L, "partition returned %I, not within [0, %d)", p, (int)c->count);
        sbx_error(L, lua_tostring(L, -1));
    }
    c->result = (int32_t)p;
}

static int32_t lua_partition_record(void *cap_state, const char *topic, const uint8_t *key, int32_t key_len,
                                    const uint8_t *value, int32_t value_len, int32_t partition_count)
{
    struct lua_module *m = cap_state;
    if (partition_count <= 0)
        return SAMSA_PARTITION_DEFER;
    struct sbx *sb = script_sandbox(&m->part);
    if (!sb)
        return SAMSA_PARTITION_DEFER;
    struct part_call c = {topic, key, value, key_len, value_len, partition_count, SAMSA_PARTITION_DEFER};
    char err[512];
    if (sbx_run(sb, part_fn, &c, err, sizeof err) < 0) {
        script_log_error(&m->part, "partition failed, using the default partitioner", err);
        return SAMSA_PARTITION_DEFER;
    }
    return c.result;
}

static int32_t lua_partition(void *cap_state, const char *topic, const uint8_t *key, int32_t key_len,
                             int32_t partition_count)
{
    return lua_partition_record(cap_state, topic, key, key_len, NULL, -1, partition_count);
}

const samsa_partitioner_t lua_partitioner = {
    .hdr = {.struct_size = sizeof(samsa_partitioner_t), .kind = SAMSA_CAP_PARTITIONER, .name = "lua"},
    .partition = lua_partition,
    .partition_record = lua_partition_record,
};
