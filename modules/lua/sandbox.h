/* SPDX-License-Identifier: Apache-2.0
 *
 * The Lua sandbox: one lua_State that runs an operator's script with
 * only the safe parts of the standard library, a memory cap (its own
 * lua_Alloc) and an instruction budget per call (a count hook that a
 * pcall in the script cannot swallow). A sandbox belongs to one thread;
 * nothing here locks. */
#ifndef SAMSA_LUA_SANDBOX_H
#define SAMSA_LUA_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

#include <lua5.4/lua.h>

#include "samsa/plugin.h"

/* What every sandbox of a module shares (read-only after init; owned by
 * the module). */
struct sbx_env {
    samsa_host_t *host;
    const samsa_host_api_t *api;
    size_t mem_limit;    /* bytes per state; 0 = unlimited */
    int64_t instr_limit; /* VM instructions per call; 0 = unlimited */
    /* Broker facts for the read-only global `broker`; NULL when unknown. */
    const char *node_id;
    const char *cluster_id;
    const char *rack;
    char **listeners; /* NULL-terminated, may be NULL */
};

struct sbx;

/* Creates a state, loads src (text only, never bytecode) as chunk
 * "@path", runs it under the limits and checks that it defines the
 * global function entry. Returns NULL with one line in err on any
 * failure. env must outlive the sandbox. The caller frees with
 * sbx_free. */
struct sbx *sbx_new(const struct sbx_env *env, const char *path, const char *src, size_t len,
                    const char *entry, char *err, size_t errlen);
void sbx_free(struct sbx *s);

/* Runs fn(L, arg) in protected mode under the instruction budget and
 * the memory cap. fn pushes the entry function (sbx_push_entry), its
 * arguments, calls it with lua_call and copies what it needs from the
 * results into arg: no Lua value outlives the run. Returns 0, or -1
 * with "path:line: reason" in err (runtime error, instruction budget,
 * memory cap). The state stays usable for the next run. */
typedef void (*sbx_fn)(lua_State *L, void *arg);
int sbx_run(struct sbx *s, sbx_fn fn, void *arg, char *err, size_t errlen);

/* Inside sbx_run: pushes the script's entry function. */
void sbx_push_entry(lua_State *L);

/* Inside sbx_run: raises the error "path:line: msg" at the script's
 * innermost line (for a wrong return type). Does not return. */
int sbx_error(lua_State *L, const char *msg);

/* Bytes the state holds now. */
size_t sbx_mem_used(const struct sbx *s);

#endif
