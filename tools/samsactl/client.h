/* samsactl's Kafka client: connections to brokers, ApiVersions
 * negotiation, requests and responses with correlation ids, and a
 * metadata cache that finds partition leaders and the controller.
 *
 * Single-threaded and synchronous at heart: sockets are non-blocking only
 * so that every wait has a deadline and several connections can be
 * waited on at once (kc_wait_any). Requests are encoded and responses
 * decoded with the generated codecs of core/proto/gen; nothing here
 * knows a message layout.
 *
 * Errors: functions returning int give 0 or a Kafka error code (enum kerr;
 * transport failures are named as the Java client would: NETWORK_EXCEPTION
 * for a refused or broken connection, REQUEST_TIMED_OUT for a deadline,
 * UNSUPPORTED_VERSION for an API the broker lacks), with a sentence in
 * c->errmsg. KC_INTERRUPTED means SIGINT/SIGTERM arrived. */
#ifndef SAMSACTL_CLIENT_H
#define SAMSACTL_CLIENT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "proto/gen/kapi.h"
#include "proto/kcodec.h"
#include "util/arena.h"
#include "util/buf.h"

#define KC_INTERRUPTED (-1000)
#define KC_DEFAULT_TIMEOUT_MS 30000
/* Upper bound on a response frame; memory grows only as bytes arrive,
 * so a hostile size prefix costs nothing until the bytes exist. */
#define KC_MAX_FRAME (1024 * 1024 * 1024)

/* Set by the signal handler that commands install with kc_catch_signals. */
extern volatile sig_atomic_t kc_interrupted;
void kc_catch_signals(void);

struct kc_inflight {
    int32_t correlation_id;
    int16_t key, version;
};

struct ssl_st; /* OpenSSL's SSL */

struct kc_conn {
    int fd; /* -1 when closed */
    struct ssl_st *ssl; /* security.protocol SSL / SASL_SSL (tls.c) */
    int32_t node_id; /* -1 for a bootstrap address not yet identified */
    char *host;      /* owned */
    int port;
    bool negotiated;
    int16_t versions[KAPI_MAX_KEY + 1]; /* -1: unusable */
    int32_t next_correlation_id;
    struct kc_inflight *inflight; /* FIFO: Kafka answers in order */
    int ninflight, capinflight;
    struct buf in; /* received bytes; in_off of them consumed */
    size_t in_off;
};

/* A decoded response. msg is the API's response struct (e.g.
 * metadata_response_t); its strings point into frame and its arrays live
 * in arena. Owned by the holder; release with kc_response_free. */
struct kc_response {
    int16_t key, version;
    uint8_t *frame;
    size_t len;
    struct arena arena;
    void *msg;
};

struct kc_address {
    char *host; /* owned */
    int port;
};

struct kc_client {
    struct kc_address *bootstrap; /* owned */
    int nbootstrap;
    const char *client_id;
    int timeout_ms;      /* per request and per connect */
    struct kc_conn *any; /* the bootstrap connection (also listed in conns) */
    struct kc_conn **conns;
    int nconns;
    struct kc_response meta; /* last Metadata answer; meta.msg NULL if none */
    int errcode;
    char errmsg[512];
};

/* Parses "HOST:PORT[,HOST:PORT...]" ("[v6addr]:PORT" too) into a newly
 * allocated array the caller frees with kc_addresses_free. Returns the
 * count, or -1 with a sentence in err. */
int kc_parse_bootstrap(const char *s, struct kc_address **out, char *err, size_t errlen);
void kc_addresses_free(struct kc_address *a, int n);

/* Fills c; nothing is connected yet. -1 (err filled) when bootstrap does
 * not parse. */
int kc_client_init(struct kc_client *c, const char *bootstrap, char *err, size_t errlen);
/* Closes every connection and frees everything c owns. */
void kc_client_free(struct kc_client *c);

/* Records an error (returns code, for "return kc_fail(...)"). */
int kc_fail(struct kc_client *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prints "Error: <NAME>: <message>" for the recorded error on stderr and
 * returns EXIT_KAFKA (or 130 after an interrupt, as shells expect). */
int kc_report(const struct kc_client *c);

struct global_opts;
/* What a command's entry point does around its work: parse argv into
 * *opts (--help: usage on stdout, exit 0; a bad line: one line on stderr,
 * exit 2), connect, run (0 or a recorded Kafka error), report. free_opts
 * (NULL: nothing to free) runs once parse was called, whatever happened.
 * name is the command as typed ("cluster plugins"); its first word names
 * the --help to see. */
struct kc_command {
    const char *name;
    void (*usage)(FILE *f);
    int (*parse)(int argc, char **argv, void *opts, struct global_opts *g, char *err, size_t errlen);
    int (*run)(struct kc_client *c, void *opts);
    void (*free_opts)(void *opts);
};
int kc_command_main(const struct kc_command *cmd, void *opts, int argc, char **argv, const struct global_opts *g);
/* Prints one Kafka error with its message (msg may be NULL or empty:
 * a default text for the code is used). */
void kc_print_error(int code, const char *msg);
/* Kafka's error text for a code, as its Errors enum has it ("" if none). */
const char *kc_default_message(int code);

/* The bootstrap connection, connected and negotiated (tries each address
 * in turn). */
int kc_any_conn(struct kc_client *c, struct kc_conn **out);
/* The connection to broker node_id, found in the metadata cache. */
int kc_node_conn(struct kc_client *c, int32_t node_id, struct kc_conn **out);

/* Version negotiated for key on conn: the highest both sides support, or
 * -1 when there is none. */
static inline int16_t kc_version(const struct kc_conn *conn, int16_t key)
{
    return key >= 0 && key <= KAPI_MAX_KEY ? conn->versions[key] : -1;
}

/* Sends req (a struct of key's request type) encoded at version. With
 * expect_response false (Produce with acks=0) no answer is awaited. The
 * request is fully written when this returns; req may be freed. */
int kc_send(struct kc_client *c, struct kc_conn *conn, int16_t key, int16_t version, const void *req,
            bool expect_response);
/* Waits up to timeout_ms for the answer to the oldest request in flight
 * on conn and decodes it into *out (caller frees with kc_response_free;
 * *out is left empty on error). */
int kc_recv(struct kc_client *c, struct kc_conn *conn, int timeout_ms, struct kc_response *out);
/* kc_send at the negotiated version, then kc_recv with c->timeout_ms.
 * UNSUPPORTED_VERSION when the broker does not offer the API. */
int kc_call(struct kc_client *c, struct kc_conn *conn, int16_t key, const void *req, struct kc_response *out);
/* The same at a given version. */
int kc_call_version(struct kc_client *c, struct kc_conn *conn, int16_t key, int16_t version, const void *req,
                    struct kc_response *out);
/* Waits until one of conns (each with a request in flight) holds a whole
 * response or timeout_ms passes. *ready gets its index, or -1 on timeout.
 * On a transport error *ready is the failing connection. */
int kc_wait_any(struct kc_client *c, struct kc_conn **conns, int n, int timeout_ms, int *ready);
void kc_response_free(struct kc_response *r);
void kc_conn_close(struct kc_conn *conn);

/* ---- metadata cache ---- */

typedef metadata_response_metadata_response_topic_t kc_topic_t;
typedef metadata_response_metadata_response_partition_t kc_partition_t;
typedef metadata_response_metadata_response_broker_t kc_broker_t;

/* Refreshes the cache with a Metadata request for the given topics
 * (ntopics < 0: all topics). Per-topic errors are left in the answer. */
int kc_metadata(struct kc_client *c, const char *const *topics, int ntopics, bool allow_auto_create);
/* Metadata for one topic, retried while the answer says the topic or a
 * partition has no leader yet (a topic being created, a leader moving)
 * until c->timeout_ms: LEADER_NOT_AVAILABLE and the like, and
 * UNKNOWN_TOPIC_OR_PARTITION for a few seconds when allow_auto_create (the
 * creation may not have reached this broker's image yet). *out points
 * into the cache (valid until the next refresh). Returns the topic's
 * error when it does not resolve. */
int kc_topic_metadata(struct kc_client *c, const char *topic, bool allow_auto_create, const kc_topic_t **out);
const metadata_response_t *kc_meta(const struct kc_client *c);
const kc_topic_t *kc_meta_topic(const struct kc_client *c, const char *name);
const kc_partition_t *kc_meta_partition(const kc_topic_t *t, int32_t index);
const kc_broker_t *kc_meta_broker(const struct kc_client *c, int32_t node_id);
/* The leader's connection for a partition (from the cache). */
int kc_leader_conn(struct kc_client *c, const char *topic, int32_t partition, struct kc_conn **out);
/* The controller named by the cache (refreshing it if empty); falls back
 * to the bootstrap connection when the broker names none (-1). */
int kc_controller_conn(struct kc_client *c, struct kc_conn **out);

/* Sleeps ms milliseconds; false when interrupted by SIGINT/SIGTERM. */
bool kc_sleep_ms(int ms);

/* Errors a client recovers from by refreshing metadata and retrying. */
bool kc_retriable(int code);

/* NUL-terminated copy of a wire string in arena a ("" for null). */
char *kc_strdup(struct arena *a, kstr_t s);

#endif
