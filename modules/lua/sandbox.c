/* SPDX-License-Identifier: Apache-2.0
 *
 * The Lua sandbox (sandbox.h). What a script gets:
 *   - base without dofile, loadfile and string.dump; load only of text
 *     (never bytecode, which can break the VM); collectgarbage without
 *     the options that stop or retune the collector; setmetatable that
 *     refuses __gc (a finalizer would run outside any budget); print
 *     goes to the server log at DEBUG; xpcall runs its handler after
 *     the error unwound (Lua runs a handler with hooks off when the
 *     error came from the count hook: a looping handler would escape
 *     the budget);
 *   - string, table, math, utf8; no io, os, package/require, debug,
 *     coroutine;
 *   - `broker`, a read-only table of facts, and `samsa` (time helpers,
 *     since os.time is gone; key hashes in C for partitioners).
 * Limits as HAProxy's hlua.c and Redis's script_lua.c: a lua_Alloc that
 * refuses to grow past the cap, and a count hook that raises an error
 * once the budget is spent and then re-arms itself for every
 * instruction, so a pcall in the script only postpones the error.
 * Everything that can raise a Lua error (even our own table building,
 * which may run out of memory) runs inside lua_pcall: nothing can reach
 * the panic handler. */
#define _POSIX_C_SOURCE 200809L

#include "sandbox.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lua5.4/lauxlib.h>
#include <lua5.4/lualib.h>

#include "samsa/partitioner.h"

struct sbx {
    lua_State *L;
    const struct sbx_env *env;
    const char *path;
    size_t used;
    int entry_ref;
    bool in_run;
    bool over_budget;
    bool mem_refused;
    char mem_where[200]; /* "path:line" where the cap refused, or "" */
};

static struct sbx *sbx_of(lua_State *L) { return *(struct sbx **)lua_getextraspace(L); }

/* Innermost Lua line of the running script, as "short_src:line"; "" if
 * none. Reads only the call info (no allocation), so the allocator may
 * call it: the VM saves the pc before anything that can allocate. */
static void where(lua_State *L, int level, char *out, size_t n)
{
    lua_Debug ar;
    out[0] = '\0';
    for (; lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar))
            continue;
        if (ar.currentline > 0) {
            snprintf(out, n, "%s:%d", ar.short_src, ar.currentline);
            return;
        }
    }
}

/* ------------------------------------------------------------------ */
/* Limits                                                              */

static void *sbx_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    struct sbx *s = ud;
    size_t old = ptr ? osize : 0;
    if (nsize == 0) {
        free(ptr);
        s->used -= old;
        return NULL;
    }
    if (nsize > old && s->env->mem_limit && s->used - old + nsize > s->env->mem_limit) {
        if (!s->mem_refused && s->in_run && s->L)
            where(s->L, 0, s->mem_where, sizeof s->mem_where);
        s->mem_refused = true;
        return NULL;
    }
    void *p = realloc(ptr, nsize);
    if (!p)
        return nsize <= old ? ptr : NULL; /* Lua requires shrinking to succeed */
    s->used = s->used - old + nsize;
    return p;
}

static void sbx_hook(lua_State *L, lua_Debug *ar)
{
    struct sbx *s = sbx_of(L);
    s->over_budget = true;
    /* Every further instruction fails again: a pcall in the script
     * catches one error, never the budget. */
    lua_sethook(L, sbx_hook, LUA_MASKCOUNT, 1);
    lua_getinfo(L, "Sl", ar);
    lua_pushfstring(L, "%s:%d: instruction limit (%I) exceeded", ar->short_src, ar->currentline,
                    (lua_Integer)s->env->instr_limit);
    lua_error(L);
}

/* Message handler: gives an error raised inside a C function (bad
 * argument to string.rep, ...) the script's line. */
static int sbx_msgh(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (!msg)
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    char w[200];
    where(L, 1, w, sizeof w);
    const char *colon = strrchr(w, ':');
    if (w[0] && colon && strncmp(msg, w, (size_t)(colon - w)) != 0)
        lua_pushfstring(L, "%s: %s", w, msg);
    else
        lua_pushstring(L, msg);
    return 1;
}

static int sbx_panic(lua_State *L)
{
    /* Unreachable by design (everything runs protected); if it happens
     * the process state is unknown. */
    fprintf(stderr, "samsa lua: unprotected error: %s\n", lua_tostring(L, -1));
    abort();
}

/* ------------------------------------------------------------------ */
/* The restricted library                                              */

static int safe_load(lua_State *L)
{
    int n = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, 1);
    if (n >= 2)
        lua_pushvalue(L, 2);
    else
        lua_pushnil(L);
    lua_pushliteral(L, "t"); /* text only, whatever the script asks */
    int nargs = 3;
    if (n >= 4) {
        lua_pushvalue(L, 4);
        nargs = 4;
    }
    lua_call(L, nargs, LUA_MULTRET);
    return lua_gettop(L) - n;
}

/* xpcall(f, msgh, ...) whose handler runs after the error unwound. Lua
 * runs a message handler with hooks off when the error came from a
 * hook: a handler that loops would escape the budget. Scripts lose
 * only what a handler could see of the failed stack (no debug library
 * here anyway). */
static int safe_xpcall(lua_State *L)
{
    int n = lua_gettop(L);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushboolean(L, 1);
    lua_pushvalue(L, 1);
    for (int i = 3; i <= n; i++)
        lua_pushvalue(L, i);
    if (lua_pcall(L, n - 2 < 0 ? 0 : n - 2, LUA_MULTRET, 0) == LUA_OK)
        return lua_gettop(L) - n;
    lua_pushvalue(L, 2);
    lua_insert(L, -2);
    int st = lua_pcall(L, 1, 1, 0);
    lua_pushboolean(L, 0);
    lua_insert(L, -2);
    if (st != LUA_OK) {
        lua_pop(L, 1);
        lua_pushliteral(L, "error in error handling");
    }
    return 2;
}

static int safe_collectgarbage(lua_State *L)
{
    static const char *const ok[] = {"collect", "count", "step", "isrunning", NULL};
    const char *opt = luaL_optstring(L, 1, "collect");
    for (int i = 0; ok[i]; i++)
        if (strcmp(opt, ok[i]) == 0) {
            lua_pushvalue(L, lua_upvalueindex(1));
            lua_insert(L, 1);
            lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
            return lua_gettop(L);
        }
    return luaL_error(L, "collectgarbage option '%s' is not allowed here", opt);
}

static int safe_setmetatable(lua_State *L)
{
    if (lua_istable(L, 2) && lua_getfield(L, 2, "__gc") != LUA_TNIL)
        return luaL_error(L, "__gc metamethods are not allowed here");
    lua_settop(L, 2);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, 2, 1);
    return 1;
}

static int sbx_print(lua_State *L)
{
    struct sbx *s = sbx_of(L);
    int n = lua_gettop(L);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int i = 1; i <= n; i++) {
        if (i > 1)
            luaL_addchar(&b, '\t');
        luaL_addstring(&b, luaL_tolstring(L, i, NULL));
        lua_pop(L, 1);
    }
    luaL_pushresult(&b);
    s->env->api->log(s->env->host, SAMSA_LOG_DEBUG, "%s: %s", s->path, lua_tostring(L, -1));
    return 0;
}

/* samsa.time(): seconds since the epoch (float, ms precision). */
static int sbx_time(lua_State *L)
{
    struct sbx *s = sbx_of(L);
    lua_pushnumber(L, (lua_Number)s->env->api->wall_ms() / 1000.0);
    return 1;
}

/* samsa.utc([t]): the UTC calendar fields of t (default now), as
 * os.date("!*t"): year, month, day, hour, min, sec, wday (1 = Sunday),
 * yday. */
static int sbx_utc(lua_State *L)
{
    struct sbx *s = sbx_of(L);
    lua_Number t = luaL_optnumber(L, 1, (lua_Number)s->env->api->wall_ms() / 1000.0);
    if (!(t > -1e14 && t < 1e14)) /* also NaN: the cast would be undefined */
        return luaL_error(L, "time out of range");
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm))
        return luaL_error(L, "time out of range");
    lua_createtable(L, 0, 8);
    static const char *const k[] = {"year", "month", "day", "hour", "min", "sec", "wday", "yday"};
    int v[] = {tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, tm.tm_wday + 1,
               tm.tm_yday + 1};
    for (int i = 0; i < 8; i++) {
        lua_pushinteger(L, v[i]);
        lua_setfield(L, -2, k[i]);
    }
    return 1;
}

/* Key hashes in C for partitioners: a pure-Lua murmur2 costs ~2 us a
 * key, which a producer feels (tools/bench/lua-produce.sh). Each takes
 * a string (a number is converted, as string functions do) and returns
 * the hash as an unsigned 32-bit integer (0 .. 2^32-1). */

/* samsa.murmur2(s): Kafka's murmur2 (seed 0x9747b28c), the Java
 * client's Utils.murmur2 read as unsigned; Kafka's partition for a key
 * is (samsa.murmur2(key) & 0x7fffffff) % partition_count. */
static int sbx_murmur2(lua_State *L)
{
    size_t len;
    const char *p = luaL_checklstring(L, 1, &len);
    lua_pushinteger(L, (lua_Integer)(uint32_t)samsa_murmur2(p, len));
    return 1;
}

/* samsa.fnv1a(s): the 32-bit FNV-1a hash (offset basis 2166136261,
 * prime 16777619). */
static int sbx_fnv1a(lua_State *L)
{
    size_t len;
    const unsigned char *p = (const unsigned char *)luaL_checklstring(L, 1, &len);
    uint32_t h = 0x811c9dc5u;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x01000193u;
    }
    lua_pushinteger(L, (lua_Integer)h);
    return 1;
}

static int readonly_newindex(lua_State *L) { return luaL_error(L, "attempt to modify a read-only table"); }

/* Replaces the table on top of the stack with an empty proxy that reads
 * through to it and refuses writes. */
static void make_readonly(lua_State *L)
{
    lua_newtable(L);              /* proxy */
    lua_createtable(L, 0, 3);     /* its metatable */
    lua_pushvalue(L, -3);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, readonly_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    lua_remove(L, -2);
}

static void set_str(lua_State *L, const char *k, const char *v)
{
    if (!v)
        return;
    lua_pushstring(L, v);
    lua_setfield(L, -2, k);
}

static void open_sandbox(lua_State *L)
{
    struct sbx *s = sbx_of(L);
    static const luaL_Reg libs[] = {
        {LUA_GNAME, luaopen_base},       {LUA_STRLIBNAME, luaopen_string}, {LUA_TABLIBNAME, luaopen_table},
        {LUA_MATHLIBNAME, luaopen_math}, {LUA_UTF8LIBNAME, luaopen_utf8},  {NULL, NULL},
    };
    for (const luaL_Reg *l = libs; l->name; l++) {
        luaL_requiref(L, l->name, l->func, 1);
        lua_pop(L, 1);
    }
    /* package.loaded keeps the library tables reachable for the state;
     * without `package` no script can get at it. */
    lua_pushglobaltable(L);
    static const char *const gone[] = {"dofile", "loadfile", NULL};
    for (int i = 0; gone[i]; i++) {
        lua_pushnil(L);
        lua_setfield(L, -2, gone[i]);
    }
    static const struct {
        const char *name;
        lua_CFunction fn;
    } wrapped[] = {{"load", safe_load}, {"collectgarbage", safe_collectgarbage}, {"setmetatable", safe_setmetatable}};
    for (size_t i = 0; i < sizeof wrapped / sizeof wrapped[0]; i++) {
        lua_getfield(L, -1, wrapped[i].name);
        lua_pushcclosure(L, wrapped[i].fn, 1);
        lua_setfield(L, -2, wrapped[i].name);
    }
    lua_pushcfunction(L, sbx_print);
    lua_setfield(L, -2, "print");
    lua_pushcfunction(L, safe_xpcall);
    lua_setfield(L, -2, "xpcall");

    lua_getfield(L, -1, LUA_STRLIBNAME);
    lua_pushnil(L);
    lua_setfield(L, -2, "dump");
    lua_pop(L, 1);
    /* The string metatable is shared by every string of the state:
     * scripts may not see or change it. */
    lua_pushliteral(L, "");
    if (lua_getmetatable(L, -1)) {
        lua_pushboolean(L, 0);
        lua_setfield(L, -2, "__metatable");
        lua_pop(L, 1);
    }
    lua_pop(L, 1);

    const struct sbx_env *e = s->env;
    lua_createtable(L, 0, 4);
    if (e->node_id) {
        lua_Integer id = (lua_Integer)strtoll(e->node_id, NULL, 10);
        lua_pushinteger(L, id);
        lua_setfield(L, -2, "node_id");
    }
    set_str(L, "cluster_id", e->cluster_id);
    set_str(L, "rack", e->rack);
    lua_newtable(L);
    for (int i = 0; e->listeners && e->listeners[i]; i++) {
        lua_pushstring(L, e->listeners[i]);
        lua_rawseti(L, -2, i + 1);
    }
    make_readonly(L);
    lua_setfield(L, -2, "listeners");
    make_readonly(L);
    lua_setfield(L, -2, "broker");

    lua_createtable(L, 0, 4);
    lua_pushcfunction(L, sbx_murmur2);
    lua_setfield(L, -2, "murmur2");
    lua_pushcfunction(L, sbx_fnv1a);
    lua_setfield(L, -2, "fnv1a");
    lua_pushcfunction(L, sbx_time);
    lua_setfield(L, -2, "time");
    lua_pushcfunction(L, sbx_utc);
    lua_setfield(L, -2, "utc");
    make_readonly(L);
    lua_setfield(L, -2, "samsa");
    lua_pop(L, 1); /* globals */
}

/* ------------------------------------------------------------------ */
/* States and runs                                                     */

struct init_args {
    const char *src;
    size_t len;
    const char *chunkname;
    const char *entry;
};

static void init_fn(lua_State *L, void *arg)
{
    struct init_args *a = arg;
    struct sbx *s = sbx_of(L);
    open_sandbox(L);
    if (luaL_loadbufferx(L, a->src, a->len, a->chunkname, "t") != LUA_OK)
        lua_error(L);
    lua_call(L, 0, 0);
    if (lua_getglobal(L, a->entry) != LUA_TFUNCTION)
        luaL_error(L, "%s: the script defines no function %s", s->path, a->entry);
    s->entry_ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

struct sbx *sbx_new(const struct sbx_env *env, const char *path, const char *src, size_t len, const char *entry,
                    char *err, size_t errlen)
{
    struct sbx *s = calloc(1, sizeof *s);
    size_t plen = strlen(path);
    char *chunkname = malloc(plen + 2);
    if (!s || !chunkname) {
        free(s);
        free(chunkname);
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    s->env = env;
    s->entry_ref = LUA_NOREF;
    chunkname[0] = '@';
    memcpy(chunkname + 1, path, plen + 1);
    s->path = chunkname + 1;
    s->L = lua_newstate(sbx_alloc, s);
    if (!s->L) {
        snprintf(err, errlen, "%s: cannot create a Lua state (memory limit %zu bytes)", path, env->mem_limit);
        free(chunkname);
        free(s);
        return NULL;
    }
    lua_atpanic(s->L, sbx_panic);
    *(struct sbx **)lua_getextraspace(s->L) = s;
    struct init_args a = {src, len, chunkname, entry};
    if (sbx_run(s, init_fn, &a, err, errlen) < 0) {
        sbx_free(s);
        return NULL;
    }
    /* Start each call from a collected heap: the budget is the script's. */
    lua_gc(s->L, LUA_GCCOLLECT);
    return s;
}

void sbx_free(struct sbx *s)
{
    if (!s)
        return;
    if (s->L)
        lua_close(s->L);
    free((char *)s->path - 1);
    free(s);
}

void sbx_push_entry(lua_State *L)
{
    struct sbx *s = sbx_of(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->entry_ref);
}

int sbx_error(lua_State *L, const char *msg)
{
    char w[200];
    where(L, 0, w, sizeof w);
    if (w[0])
        return luaL_error(L, "%s: %s", w, msg);
    /* After the entry function returned: name the line defining it. */
    lua_Debug ar;
    sbx_push_entry(L);
    if (lua_getinfo(L, ">S", &ar) && ar.linedefined > 0)
        return luaL_error(L, "%s:%d: %s", ar.short_src, ar.linedefined, msg);
    return luaL_error(L, "%s: %s", sbx_of(L)->path, msg);
}

struct run_args {
    sbx_fn fn;
    void *arg;
};

static int run_tramp(lua_State *L)
{
    struct run_args *r = lua_touserdata(L, 1);
    lua_settop(L, 0);
    r->fn(L, r->arg);
    return 0;
}

int sbx_run(struct sbx *s, sbx_fn fn, void *arg, char *err, size_t errlen)
{
    lua_State *L = s->L;
    struct run_args r = {fn, arg};
    lua_settop(L, 0);
    /* These two pushes cannot fail for lack of memory: a fresh state
     * has LUA_MINSTACK free slots and light values allocate nothing. */
    lua_pushcfunction(L, sbx_msgh);
    lua_pushcfunction(L, run_tramp);
    lua_pushlightuserdata(L, &r);
    s->over_budget = false;
    s->mem_refused = false;
    s->mem_where[0] = '\0';
    s->in_run = true;
    if (s->env->instr_limit > 0)
        lua_sethook(L, sbx_hook, LUA_MASKCOUNT,
                    s->env->instr_limit > INT_MAX ? INT_MAX : (int)s->env->instr_limit);
    int rc = lua_pcall(L, 1, 0, 1);
    lua_sethook(L, NULL, 0, 0);
    s->in_run = false;
    if (rc == LUA_OK && !s->over_budget) {
        lua_settop(L, 0);
        return 0;
    }
    if (rc == LUA_ERRMEM || (s->mem_refused && rc != LUA_OK && !s->over_budget)) {
        if (s->mem_refused)
            snprintf(err, errlen, "%s: memory limit (%zu bytes) exceeded", s->mem_where[0] ? s->mem_where : s->path,
                     s->env->mem_limit);
        else
            snprintf(err, errlen, "%s: out of memory", s->path);
    } else if (rc == LUA_OK) {
        snprintf(err, errlen, "%s: instruction limit (%lld) exceeded", s->path, (long long)s->env->instr_limit);
    } else {
        const char *m = lua_tostring(L, -1);
        snprintf(err, errlen, "%s", m ? m : "error without a message");
    }
    lua_settop(L, 0);
    /* Leave the next run a clean heap (the failed one may have filled it). */
    lua_gc(L, LUA_GCCOLLECT);
    return -1;
}

size_t sbx_mem_used(const struct sbx *s) { return s->used; }
