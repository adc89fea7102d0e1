/* SPDX-License-Identifier: Apache-2.0
 *
 * samsa plugin ABI: the only contract between the samsa server (the host)
 * and a loadable module (the plugin). A plugin includes this header and
 * the headers of the capability kinds it provides (codec.h, sasl.h,
 * assignor.h, tier.h, authz.h, partitioner.h), and nothing else of samsa.
 *
 * ---- How a plugin is found and loaded -----------------------------------
 *
 * A plugin is a shared object exporting exactly one symbol,
 * samsa_plugin_entry (a function, because dlsym on data is not portable),
 * which returns a pointer to a constant descriptor (samsa_plugin_info_t).
 * The host opens it with dlopen(RTLD_NOW | RTLD_LOCAL), so every symbol a
 * plugin uses must resolve at load time, and plugins never see each
 * other's symbols. The host checks the descriptor, calls init with the
 * host API table, and init registers one or more capabilities. A plugin
 * is never unloaded: its code and its static data stay mapped until the
 * process exits, so static const vtables and strings may be handed to the
 * host without copies. fini is called once at a clean shutdown.
 *
 * ---- Versions ----------------------------------------------------------
 *
 * SAMSA_ABI_MAJOR changes when anything is removed, reordered, retyped or
 * changes meaning; SAMSA_ABI_MINOR when something is appended. The host
 * loads a plugin when the majors are equal and the plugin's minor is not
 * newer than the host's (Varnish's VMOD rule). A plugin built for 1.0
 * therefore keeps loading into every 1.x host.
 *
 * Every struct that crosses the boundary starts with its size
 * (struct_size) and grows only by appending. The host copies what a
 * plugin hands it into a zeroed struct of its own size, so fields a plugin
 * does not know about read as 0/NULL; a plugin must check struct_size (or
 * SAMSA_HOST_HAS) before using a host function newer than 1.0.
 *
 * The first four fields of samsa_plugin_info_t (magic, ABI major, ABI
 * minor, struct_size) and build_sig are frozen forever, in every major.
 *
 * ---- Conventions -------------------------------------------------------
 *
 * Errors: functions return int, SAMSA_OK (0) or a negative SAMSA_E* code.
 * No errno crosses the boundary. Functions that can fail with a reason
 * take (char *errstr, size_t errlen) and write one line, no newline.
 *
 * Units: sizes in bytes (size_t), times in milliseconds (int64_t) unless
 * the name ends in _ns (monotonic nanoseconds) or _us.
 *
 * Strings are NUL-terminated UTF-8. Pointers passed into a callback are
 * borrowed for the duration of that call unless the documentation says
 * otherwise; keep a copy (made with api->alloc or your own allocator) if
 * you need it later.
 *
 * Memory: memory is freed by the side that allocated it. The host never
 * frees plugin memory and a plugin never frees host memory, except
 * blocks it obtained from api->alloc/realloc, which it frees with
 * api->free. Output of variable size goes through a host-owned
 * samsa_out_t (below).
 *
 * Threads: see the @locality line of each function. "init thread" is the
 * thread that loads plugins at startup, before any worker runs; "any
 * thread" means concurrently from several threads at once. Callbacks of
 * codec, authorizer and partitioner capabilities run on network workers
 * and must not block; tiered-storage callbacks run on the host's blocking
 * pool and may block. A plugin that starts threads of its own joins them
 * in fini.
 */
#ifndef SAMSA_PLUGIN_H
#define SAMSA_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Versions and identification                                         */

/* ABI changelog (append a line for every bump; never edit old lines):
 *   1.0  first release: descriptor, host API, six capability kinds.
 *   1.1  host API: server_config_get, scram_credential_get (sasl.h:
 *        samsa_scram_credential_t); the host calls the sasl kind.
 *   1.2  descriptor: reload; authz.h: samsa_authz_ctx_t gains
 *        security_protocol and uncacheable; partitioner.h: partition_record
 *        (the record's value too).
 *   1.3  descriptor: reconfigure (a plugin.<name>.<key> changed at run
 *        time through IncrementalAlterConfigs / AlterConfigs). */
#define SAMSA_ABI_MAJOR 1
#define SAMSA_ABI_MINOR 3

/* "SMSA" read as a big-endian word: also spots a byte-order mix-up. */
#define SAMSA_PLUGIN_MAGIC 0x534d5341u

/* Build signature: what must agree between host and plugin beyond the
 * version numbers. Bits 0-7: sizeof(void *); bits 8-15: sizeof(long);
 * bits 16-23: 1 for little-endian, 2 for big-endian; bits 24-31: 0. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define SAMSA_BUILD_SIG_ENDIAN 2u
#else
#define SAMSA_BUILD_SIG_ENDIAN 1u
#endif
#define SAMSA_BUILD_SIG \
    ((uint32_t)sizeof(void *) | ((uint32_t)sizeof(long) << 8) | (SAMSA_BUILD_SIG_ENDIAN << 16))

/* ------------------------------------------------------------------ */
/* Errors                                                              */

#define SAMSA_OK 0
#define SAMSA_EINVAL (-1)       /* bad argument or malformed struct */
#define SAMSA_ENOMEM (-2)       /* allocation failed */
#define SAMSA_ENOSPC (-3)       /* output limit reached (e.g. samsa_out_t) */
#define SAMSA_EAGAIN (-4)       /* result comes later through api->complete */
#define SAMSA_EUNSUPPORTED (-5) /* kind, mechanism or feature not handled */
#define SAMSA_EIO (-6)          /* I/O or remote-store failure */
#define SAMSA_EAUTH (-7)        /* authentication failed */
#define SAMSA_ETIMEDOUT (-8)
#define SAMSA_EEXIST (-9)   /* name already taken (duplicate capability) */
#define SAMSA_ECORRUPT (-10) /* input cannot be decoded (e.g. bad codec data) */
#define SAMSA_ENOTFOUND (-11)

/* ------------------------------------------------------------------ */
/* Log levels (api->log)                                               */

#define SAMSA_LOG_DEBUG 0
#define SAMSA_LOG_INFO 1
#define SAMSA_LOG_WARN 2
#define SAMSA_LOG_ERROR 3

/* ------------------------------------------------------------------ */
/* Host-owned handles                                                  */

/* The host's record of one loaded plugin; passed back to every host API
 * call. Valid from init until fini returns. Opaque. */
typedef struct samsa_host samsa_host_t;

/* A metric registered by the plugin; valid until the process exits. */
typedef struct samsa_metric samsa_metric_t;

/* A pending asynchronous operation, handed to a plugin callback that may
 * answer SAMSA_EAGAIN; the plugin finishes it with api->complete exactly
 * once. Opaque. */
typedef struct samsa_async samsa_async_t;

/* Output of variable size, owned by the host, which bounds it (codecs use
 * it for decompression-bomb protection). A plugin writes by asking for
 * room and then committing what it wrote:
 *
 *     size_t avail;
 *     uint8_t *p = out->reserve(out, 1, &avail);
 *     if (!p) return SAMSA_ENOSPC;      // limit reached or out of memory
 *     ... write up to avail bytes at p ...
 *     out->commit(out, written);
 *
 * reserve returns room for at least min bytes (avail may be larger), or
 * NULL when that would pass the host's limit. The pointer is valid until
 * the next reserve or commit. The host may embed this struct at the start
 * of a larger one of its own.
 * @locality the thread of the callback that received it, during that call */
typedef struct samsa_out samsa_out_t;
struct samsa_out {
    uint32_t struct_size;
    uint8_t *(*reserve)(samsa_out_t *out, size_t min, size_t *avail);
    void (*commit)(samsa_out_t *out, size_t n);
    size_t limit; /* bytes the host accepts in total (informational) */
};

/* ------------------------------------------------------------------ */
/* Capabilities                                                        */

enum samsa_cap_kind {
    SAMSA_CAP_CODEC = 1,       /* codec.h */
    SAMSA_CAP_SASL = 2,        /* sasl.h */
    SAMSA_CAP_ASSIGNOR = 3,    /* assignor.h */
    SAMSA_CAP_TIER = 4,        /* tier.h */
    SAMSA_CAP_AUTHORIZER = 5,  /* authz.h */
    SAMSA_CAP_PARTITIONER = 6, /* partitioner.h */
};

/* First member of every capability vtable. A vtable is normally a static
 * const struct of the plugin: the host keeps the pointer (plugins are
 * never unloaded) after copying the struct. */
typedef struct samsa_cap_hdr {
    uint32_t struct_size; /* sizeof the whole capability struct, as built */
    uint32_t kind;        /* enum samsa_cap_kind */
    const char *name;     /* unique per kind in the process, e.g. "gzip" */
} samsa_cap_hdr_t;

/* ------------------------------------------------------------------ */
/* Metrics                                                             */

enum samsa_metric_type {
    SAMSA_METRIC_COUNTER = 1, /* only goes up: metric_add */
    SAMSA_METRIC_GAUGE = 2,   /* any value: metric_set / metric_add */
};

/* ------------------------------------------------------------------ */
/* The host API table                                                  */

struct samsa_scram_credential; /* sasl.h */

/* Handed to init; valid (and unchanged) until the process exits, so a
 * plugin keeps the pointer. Functions appended in later minors are
 * checked with SAMSA_HOST_HAS before use. */
typedef struct samsa_host_api {
    uint32_t struct_size;
    uint16_t abi_major; /* the host's SAMSA_ABI_MAJOR */
    uint16_t abi_minor; /* the host's SAMSA_ABI_MINOR */

    /* ---- ABI 1.0 ---- */

    /* One line in the server log, prefixed with the plugin's name; no
     * trailing newline needed.
     * @locality any thread */
    void (*log)(samsa_host_t *host, int level, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 3, 4)))
#endif
        ;

    /* Value of the config key plugin.<name>.<key> (name = the plugin's
     * descriptor name), or NULL when unset. The string is owned by the
     * host and stays valid until fini.
     * @locality any thread */
    const char *(*config_get)(samsa_host_t *host, const char *key);

    /* Registers a capability. cap points to a vtable starting with
     * samsa_cap_hdr_t; it must stay valid for the life of the process
     * (static const is the norm). cap_state is passed back as the first
     * argument of every callback of that capability. Returns SAMSA_OK,
     * SAMSA_EEXIST (the name, or a codec's compression id, is already
     * registered: the host then refuses the whole plugin), SAMSA_EINVAL
     * (struct_size below the 1.0 size of that kind, missing callback,
     * bad name) or SAMSA_EUNSUPPORTED (a kind this host does not know).
     * Capabilities become visible only if the whole load succeeds.
     * @locality init thread, during init only */
    int (*register_capability)(samsa_host_t *host, const samsa_cap_hdr_t *cap, void *cap_state);

    /* Registers a metric named "samsa.plugin.<plugin>.<name>". help is a
     * one-line description. The metrics endpoint (samsa.metrics.listener)
     * serves it as samsa_plugin_<plugin>_<name> (bytes outside
     * [a-zA-Z0-9_:] as '_'), with _total after a counter's name. Returns
     * NULL for a bad name or type; the
     * plugin may then pass NULL to metric_add/metric_set, which ignore it.
     * @locality init thread, during init only */
    samsa_metric_t *(*metric_register)(samsa_host_t *host, const char *name, int type,
                                       const char *help);
    /* @locality any thread (atomic) */
    void (*metric_add)(samsa_metric_t *m, int64_t delta);
    /* @locality any thread (atomic); counters ignore it */
    void (*metric_set)(samsa_metric_t *m, int64_t value);

    /* Monotonic clock in nanoseconds (CLOCK_MONOTONIC).
     * @locality any thread */
    int64_t (*monotonic_ns)(void);
    /* Wall clock in milliseconds since the Unix epoch (Kafka timestamps).
     * @locality any thread */
    int64_t (*wall_ms)(void);

    /* The host's allocator (accounted). alloc(0) returns a unique pointer;
     * NULL means out of memory.
     * @locality any thread */
    void *(*alloc)(size_t n);
    void *(*realloc)(void *p, size_t n);
    void (*free)(void *p);

    /* This thread's private slot for this plugin, initially NULL: put
     * per-thread state there (a decompression context, a Lua state). When
     * the thread ends, the host calls info->worker_fini(state, *slot) if
     * the slot is not NULL. Never NULL.
     * @locality any thread; the slot belongs to the calling thread */
    void **(*worker_local)(samsa_host_t *host);

    /* Finishes an operation for which a callback returned SAMSA_EAGAIN.
     * status is SAMSA_OK or a SAMSA_E* code; result/result_len are what
     * the capability's documentation says for that operation (copied by
     * the host before complete returns). Call exactly once per token.
     * @locality any thread */
    void (*complete)(samsa_async_t *token, int status, const void *result, size_t result_len);

    /* ---- ABI 1.1 ---- */

    /* Value of any key of the server's config under its Kafka name, as
     * the server started with it: a key of the broker config table (its
     * effective value, default included), or a prefixed key the config
     * file set (e.g. "listener.name.sasl_plaintext.plain.sasl.jaas.config").
     * NULL when unset, and always NULL outside the server (tools). Owned
     * by the host, valid until fini.
     * @locality any thread */
    const char *(*server_config_get)(samsa_host_t *host, const char *key);

    /* The stored SCRAM credential of user for mechanism (sasl.h:
     * SAMSA_SCRAM_SHA_256 / SAMSA_SCRAM_SHA_512), as the cluster's
     * metadata holds it (Kafka's UserScramCredentialRecord, managed with
     * AlterUserScramCredentials). cred->struct_size must be set by the
     * caller; the host fills what fits. Returns SAMSA_OK,
     * SAMSA_ENOTFOUND (no such credential), SAMSA_EUNSUPPORTED (no
     * metadata here: a tool) or SAMSA_EINVAL. Never blocks.
     * @locality any thread */
    int (*scram_credential_get)(samsa_host_t *host, int mechanism, const char *user,
                                struct samsa_scram_credential *cred);

    /* ---- ABI 1.2+: append here, never above ---- */
} samsa_host_api_t;

/* True when the host API has function f (a minor newer than 1.0 added it
 * and this host is at least that minor). */
#define SAMSA_HOST_HAS(api, f)                                                   \
    ((api)->struct_size >= offsetof(samsa_host_api_t, f) + sizeof((api)->f) && \
     (api)->f != NULL)

/* ------------------------------------------------------------------ */
/* The plugin descriptor                                               */

typedef struct samsa_plugin_info {
    /* ---- frozen forever: same offsets and types in every ABI ---- */
    uint32_t magic;       /* SAMSA_PLUGIN_MAGIC */
    uint16_t abi_major;   /* SAMSA_ABI_MAJOR the plugin was built with */
    uint16_t abi_minor;   /* SAMSA_ABI_MINOR the plugin was built with */
    uint32_t struct_size; /* sizeof(samsa_plugin_info_t) as built */
    uint32_t build_sig;   /* SAMSA_BUILD_SIG */

    /* ---- ABI 1.0 ---- */
    const char *name;        /* [a-z0-9_-]+, e.g. "codec-gzip"; must equal
                                the name the plugin is configured under */
    const char *version;     /* the plugin's own version, free text */
    const char *description; /* one line, may be NULL */
    const char *license;     /* SPDX id, may be NULL */

    /* Called once after the checks. Registers capabilities with
     * api->register_capability. *state (initially NULL) is passed to fini
     * and worker_fini. Returns SAMSA_OK, or an error with one line in
     * errstr: the host then refuses the plugin, naming that line, and
     * calls neither fini nor any capability.
     * @locality init thread */
    int (*init)(samsa_host_t *host, const samsa_host_api_t *api, void **state, char *errstr,
                size_t errlen);
    /* Called once at a clean shutdown, after every worker has stopped.
     * May be NULL. @locality init thread */
    void (*fini)(void *state);
    /* Frees what a thread put into its api->worker_local slot; called on
     * that thread as it ends. May be NULL. @locality the ending thread */
    void (*worker_fini)(void *state, void *worker_state);

    /* ---- ABI 1.2 ---- */

    /* Re-reads what the plugin loaded from files (e.g. its scripts) when
     * the operator asks (SIGHUP). Checks the new version completely
     * before it takes effect; on failure the old one stays in force and
     * the plugin returns an error with one line in errstr. May be NULL.
     * @locality any one thread at a time (the host serialises reloads);
     * capability callbacks keep running concurrently */
    int (*reload)(void *state, char *errstr, size_t errlen);

    /* ---- ABI 1.3 ---- */

    /* A key of the plugin (key without "plugin.<name>.", e.g.
     * "authorizer.script") changed at run time through AlterConfigs or
     * IncrementalAlterConfigs on a BROKER resource; value is the key's
     * new effective value (NULL: unset). The host calls it twice: with
     * validate_only true on the broker that received the request, before
     * the change is stored (an error refuses the request with
     * INVALID_CONFIG and errstr as its message); then with validate_only
     * false on every broker once the change is in the cluster metadata
     * (and at startup for a stored change), where the plugin applies it,
     * checking it completely first and keeping the old setting in force
     * when it fails (the host logs errstr). Returns SAMSA_OK,
     * SAMSA_EUNSUPPORTED for a key that cannot change at run time, or
     * another error with one line in errstr. Only keys the server's
     * config table lists as dynamic reach it. May be NULL.
     * @locality any one thread at a time (serialised with reload) */
    int (*reconfigure)(void *state, const char *key, const char *value, bool validate_only, char *errstr,
                       size_t errlen);

    /* ---- ABI 1.4+: append here, never above ---- */
} samsa_plugin_info_t;

/* Fills the frozen fields; use it first in the descriptor's initializer:
 *     static const samsa_plugin_info_t info = {
 *         SAMSA_PLUGIN_INFO_HEADER,
 *         .name = "codec-gzip", .version = "1.0", .init = my_init,
 *     };
 */
#define SAMSA_PLUGIN_INFO_HEADER                                                        \
    .magic = SAMSA_PLUGIN_MAGIC, .abi_major = SAMSA_ABI_MAJOR, .abi_minor = SAMSA_ABI_MINOR, \
    .struct_size = (uint32_t)sizeof(samsa_plugin_info_t), .build_sig = SAMSA_BUILD_SIG

/* Size of the 1.0 descriptor: the host refuses a smaller struct_size. */
#define SAMSA_PLUGIN_INFO_SIZE_1_0 \
    (offsetof(samsa_plugin_info_t, worker_fini) + sizeof(void (*)(void *, void *)))

#if defined(__GNUC__)
#define SAMSA_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define SAMSA_PLUGIN_EXPORT
#endif

/* The entry point. Built as a shared object, a plugin defines exactly
 *     SAMSA_PLUGIN_EXPORT const samsa_plugin_info_t *samsa_plugin_entry(void);
 * most simply through SAMSA_PLUGIN_DECLARE(ident, info). A module that
 * samsa's own build links statically into the server is compiled with
 * -DSAMSA_PLUGIN_STATIC, and the same macro then names the function
 * samsa_plugin_entry_<ident> instead, so several modules can share one
 * binary and go through the same checks as loaded ones. */
SAMSA_PLUGIN_EXPORT const samsa_plugin_info_t *samsa_plugin_entry(void);

#define SAMSA_PLUGIN_CONCAT_(a, b) a##b
#define SAMSA_PLUGIN_CONCAT(a, b) SAMSA_PLUGIN_CONCAT_(a, b)
#ifdef SAMSA_PLUGIN_STATIC
#define SAMSA_PLUGIN_DECLARE(ident, info)                                               \
    const samsa_plugin_info_t *SAMSA_PLUGIN_CONCAT(samsa_plugin_entry_, ident)(void); \
    const samsa_plugin_info_t *SAMSA_PLUGIN_CONCAT(samsa_plugin_entry_, ident)(void) { return &(info); }
#else
#define SAMSA_PLUGIN_DECLARE(ident, info) \
    SAMSA_PLUGIN_EXPORT const samsa_plugin_info_t *samsa_plugin_entry(void) { return &(info); }
#endif

#ifdef __cplusplus
}
#endif

#endif /* SAMSA_PLUGIN_H */
