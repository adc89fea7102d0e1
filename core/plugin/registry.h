/* The plugin loader and the registry of capabilities (ARCHITECTURE §7).
 *
 * A registry holds the plugins a process loaded and the capabilities
 * they registered. Plugins are loaded on one thread at startup, before
 * any worker runs; after that the registry is read-only and every lookup
 * is safe from any thread without locks. Plugins are never unloaded
 * (their code stays mapped); plugin_registry_free calls each plugin's
 * fini, in reverse load order, at a clean shutdown.
 *
 * Refusals: every load that fails produces exactly one line, returned in
 * err for the caller to log, of the form
 *     plugin FILE refused: REASON (plugin ABI X.Y, samsa ABI 1.0)
 * where X.Y is "unknown" when the descriptor could not be read. FILE is
 * the path tried, or "static:<name>" for a module linked into the binary.
 */
#ifndef SAMSA_PLUGIN_REGISTRY_H
#define SAMSA_PLUGIN_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "samsa/assignor.h"
#include "samsa/authz.h"
#include "samsa/codec.h"
#include "samsa/partitioner.h"
#include "samsa/plugin.h"
#include "samsa/sasl.h"
#include "samsa/tier.h"

struct samsa_config;
struct plugin_registry;

/* One registered capability: the host's zero-extended copy of the
 * plugin's vtable (fields newer than the plugin read as 0/NULL), the
 * state to pass back, and the plugin that owns it. */
struct plugin_cap {
    int kind; /* enum samsa_cap_kind */
    const char *name;
    union {
        samsa_cap_hdr_t hdr;
        samsa_codec_t codec;
        samsa_sasl_mech_t sasl;
        samsa_assignor_t assignor;
        samsa_tier_t tier;
        samsa_authorizer_t authorizer;
        samsa_partitioner_t partitioner;
    } vt;
    void *state;
    const struct samsa_host *owner;
};

/* What --list-plugins shows for one loaded plugin. */
struct plugin_desc {
    const char *name;
    const char *version;
    const char *description;
    const char *origin; /* file path, or "static" */
    unsigned abi_major, abi_minor;
};

/* config (may be NULL) supplies plugin.<name>.* values; the values are
 * copied when a plugin loads, so the config may change or go away later. */
struct plugin_registry *plugin_registry_new(const struct samsa_config *config);
/* Calls every plugin's fini (reverse load order) and frees the registry.
 * The plugins stay mapped. NULL is ignored. */
void plugin_registry_free(struct plugin_registry *reg);

/* Loads one shared object. name (may be NULL) is the name it was
 * configured under; the descriptor's name must equal it. Returns 0, or
 * -1 with the refusal line in err. */
int plugin_load_file(struct plugin_registry *reg, const char *path, const char *name, char *err,
                     size_t errlen);
/* The same for a module linked into the binary: entry is its
 * samsa_plugin_entry_<ident> function. */
int plugin_load_static(struct plugin_registry *reg, const samsa_plugin_info_t *(*entry)(void),
                       const char *name, char *err, size_t errlen);
/* Loads name from the modules linked into this binary, else from
 * DIR/name.so. */
int plugin_load_name(struct plugin_registry *reg, const char *dir, const char *name, char *err,
                     size_t errlen);

/* What a server with config cfg loads at startup:
 *  - `plugins` set: exactly the plugins it names, from the static
 *    modules or plugin.dir (default: plugin_default_dir()); any failure
 *    returns -1 with the refusal line (the server then exits with 2);
 *  - `plugins` unset: every module of this build (static ones and the
 *    dynamic ones found in the directory), so a default server handles
 *    every codec the site built; a module missing from the directory is
 *    skipped with one INFO line, a refused one with one WARN line.
 * Each load is logged (INFO) with its version and capabilities. */
int plugin_registry_load_config(struct plugin_registry *reg, const struct samsa_config *cfg,
                                char *err, size_t errlen);

/* The plugin directory used when plugin.dir is unset: the installed
 * ${pkglibdir} (e.g. /usr/local/lib/samsa), except for a binary run from
 * its build tree, which uses the tree's modules/.libs, so tests and
 * developers get the modules they just built. Static string. */
const char *plugin_default_dir(void);
/* Comma-separated names of the modules this build includes, and of those
 * linked statically; "" for none. Static strings. */
const char *plugin_build_modules(void);
const char *plugin_build_static_modules(void);

/* Asks every plugin that has a reload function (ABI 1.2) to re-read
 * what it loaded from files (SIGHUP): each failure is logged (WARN, one
 * line naming the plugin; the plugin keeps its old version in force).
 * Returns the number of plugins that failed. Call from one thread at a
 * time; workers keep calling capabilities meanwhile. */
int plugin_registry_reload(struct plugin_registry *reg);
/* A plugin.<name>.<rest> key changed at run time (value: its new
 * effective value, NULL unset): hands it to plugin <name>'s reconfigure
 * (ABI 1.3), checking only with validate_only. 0 when done, or when no
 * plugin of that name is loaded here; -1 with one line in err when the
 * plugin refuses (or cannot change keys at run time). A successful
 * change counts as a reload (plugin_registry_generation). Serialised
 * with plugin_registry_reload. */
int plugin_registry_reconfigure(struct plugin_registry *reg, const char *key, const char *value,
                                bool validate_only, char *err, size_t errlen);
/* Counts the reloads that changed something (a plugin answered
 * SAMSA_OK); a cache of plugin decisions (the authorizer chain's) keys
 * on it so that a reloaded policy is in force at once. Any thread. */
uint64_t plugin_registry_generation(const struct plugin_registry *reg);

/* Lookups; NULL when absent. Safe from any thread once loading is over. */
const struct plugin_cap *plugin_find(const struct plugin_registry *reg, int kind, const char *name);
const struct plugin_cap *plugin_codec(const struct plugin_registry *reg, int id);
/* Capabilities of one kind in registration order: i-th one, or NULL. */
const struct plugin_cap *plugin_cap_at(const struct plugin_registry *reg, int kind, size_t i);

size_t plugin_count(const struct plugin_registry *reg);
bool plugin_describe(const struct plugin_registry *reg, size_t i, struct plugin_desc *out);
/* Appends "kind:name[,kind:name...]" of plugin i's capabilities to buf. */
void plugin_caps_text(const struct plugin_registry *reg, size_t i, char *buf, size_t len);
/* Writes the --list-plugins table (header line, one line per plugin). */
void plugin_registry_print(const struct plugin_registry *reg, FILE *f);

/* The value of the read-only broker config samsa.plugins.loaded, which
 * the server sets at startup so that clients (samsactl cluster plugins)
 * see what it loaded: one entry per plugin, in load order, joined by ',':
 *     NAME:VERSION:ABI_MAJOR.ABI_MINOR:CAPS
 * CAPS is the plugin's capabilities as plugin_caps_text writes them
 * (kind:name, and codec:name(id) for codecs) joined by '+', empty for
 * none; VERSION is empty when the plugin gives none. An entry splits at
 * its first three ':' (a capability holds one itself). Any ',', ':' or
 * '+' in a version, a '+' in a capability name, and blanks or control
 * characters anywhere are written as '_', so the separators never
 * appear inside a field. "" when nothing is loaded. The caller frees. */
char *plugin_registry_loaded_text(const struct plugin_registry *reg);

/* A pending asynchronous call (samsa_async_t): the caller embeds one,
 * initialises it, passes it to a capability callback that may answer
 * SAMSA_EAGAIN, and gets done() called exactly once, on whatever thread
 * the plugin calls api->complete from; result is borrowed for the call.
 * A second complete on the same token is ignored (and logged). */
struct samsa_async {
    uint32_t magic;
    void (*done)(void *arg, int status, const void *result, size_t len);
    void *arg;
    int _Atomic completed;
};
void plugin_async_init(struct samsa_async *a, void (*done)(void *arg, int status, const void *result,
                                                           size_t len),
                       void *arg);

/* What api->scram_credential_get answers from (the server's metadata
 * image, core/auth/sasl.c); unset (tools), it answers
 * SAMSA_EUNSUPPORTED. Set before workers run. */
typedef int (*plugin_scram_lookup_fn)(void *arg, int mechanism, const char *user,
                                      samsa_scram_credential_t *cred);
void plugin_registry_set_scram_lookup(struct plugin_registry *reg, plugin_scram_lookup_fn fn, void *arg);

/* The host API table every plugin receives (for tests). */
const samsa_host_api_t *plugin_host_api(void);

/* For tools (samsactl): a process-wide registry with this build's modules
 * loaded from $SAMSA_PLUGIN_DIR or plugin_default_dir(), created on first
 * use (thread-safe) and never freed. Modules that cannot be loaded are
 * skipped quietly (logged at DEBUG). */
const struct plugin_registry *plugin_tools_registry(void);

/* Kafka's names of the compression ids ("none", "gzip", ..., "unknown"). */
const char *plugin_codec_name(int id);

#endif
