/* SASL on the server side (Kafka's SaslServerAuthenticator), with the
 * mechanisms from plugins (include/samsa/sasl.h).
 *
 * A connection accepted on a SASL_PLAINTEXT (or SASL_SSL) listener
 * starts in SASL_STATE_HANDSHAKE: it may send ApiVersions and
 * SaslHandshake (v0 or v1) only. A handshake naming a mechanism enabled
 * on the listener (listener.name.<l>.sasl.enabled.mechanisms, else
 * sasl.enabled.mechanisms) and provided by a loaded plugin starts that
 * mechanism's session: after v1 the client sends SaslAuthenticate
 * requests (SASL_STATE_AUTHENTICATE), after v0 raw length-prefixed
 * tokens without a request header (SASL_STATE_RAW, what kafka-python
 * 2.0 speaks). When the mechanism says done the principal it names is
 * the connection's and every API is open (SASL_STATE_DONE). Anything out
 * of turn closes the connection with a log line (Kafka:
 * IllegalSaslStateException); a failed exchange answers
 * SASL_AUTHENTICATION_FAILED with the mechanism's message (SaslAuthenticate)
 * or nothing (raw tokens) and closes. Connections on PLAINTEXT listeners
 * are SASL_STATE_NONE with principal User:ANONYMOUS.
 *
 * Re-authentication (KIP-368): with connections.max.reauth.ms > 0 (or a
 * mechanism that gives its credentials a lifetime) SaslAuthenticate v1+
 * answers the session's lifetime; the client re-authenticates on the
 * same connection with SaslHandshake v1 and SaslAuthenticate, with the
 * same mechanism and principal, before it ends, and a connection whose
 * session has ended may send nothing else (it is closed, as Kafka
 * does). All on the connection's worker. */
#ifndef SAMSA_AUTH_SASL_H
#define SAMSA_AUTH_SASL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "samsa/sasl.h"
#include "util/buf.h"

struct conn;
struct request;
struct samsa_config;
struct plugin_registry;

enum sasl_state {
    SASL_STATE_NONE = 0,     /* not a SASL listener: User:ANONYMOUS */
    SASL_STATE_HANDSHAKE,    /* SASL listener, before SaslHandshake */
    SASL_STATE_AUTHENTICATE, /* after SaslHandshake v1: SaslAuthenticate */
    SASL_STATE_RAW,          /* after SaslHandshake v0: raw tokens */
    SASL_STATE_DONE,         /* authenticated */
};

/* Kafka's principal of an unauthenticated (PLAINTEXT) connection. */
#define SASL_ANONYMOUS "User:ANONYMOUS"

void sasl_conn_init(struct conn *c, const char *listener, int protocol);
/* Frees the session (if one runs) and the principal. */
void sasl_conn_free(struct conn *c);
/* The connection's principal: "User:<name>", or User:ANONYMOUS. */
const char *conn_principal(const struct conn *c);
/* The principal a request acts as: the one an envelope carried (a
 * request a broker forwarded), else its connection's. */
const char *req_principal(const struct request *req);
/* The client's address as text, without the port: an envelope's, else
 * the connection's peer. */
void req_client_host(const struct request *req, char *out, size_t outlen);
/* Whether a request of api_key may be handled in the connection's
 * state (ApiVersions and SaslHandshake before the handshake,
 * SaslAuthenticate after it, anything once authenticated or on a
 * non-SASL listener; once an authenticated session has expired
 * (KIP-368), only SaslHandshake, which starts a re-authentication). */
bool sasl_request_allowed(const struct conn *c, int16_t api_key);
/* Why sasl_request_allowed refused: "during SASL handshake", ... */
const char *sasl_refusal(const struct conn *c);
/* Whether an authenticated connection may re-authenticate now (KIP-368:
 * its session has a lifetime). */
bool sasl_may_reauthenticate(const struct conn *c);

/* The mechanisms enabled on listener (its listener.name.<l>. override,
 * else sasl.enabled.mechanisms), comma-separated as configured, trimmed
 * elements written into out joined by ','. */
void sasl_enabled_mechanisms(const struct samsa_config *cfg, const char *listener, char *out, size_t outlen);
/* Whether mech is in the comma-separated list. */
bool sasl_list_has(const char *list, const char *mech, size_t mech_len);

/* Starts mech's session on c (SaslHandshake accepted); raw: v0. Returns
 * SAMSA_OK or an error with errstr. */
int sasl_start(struct conn *c, const struct plugin_registry *reg, const char *mech, bool raw, char *errstr,
               size_t errlen);
/* One client token through the running session. Returns
 * SAMSA_SASL_CONTINUE (server token in out), SAMSA_OK (authenticated:
 * principal set, state DONE, final server token in out) or an error
 * (errstr: the message for the client; the session is gone). */
int sasl_step(struct conn *c, const uint8_t *in, size_t len, struct buf *out, char *errstr, size_t errlen);

/* Startup check, as Kafka's: every mechanism enabled on a SASL listener
 * must be provided by a loaded plugin (TLS itself: net/tls.h). 0 or -1
 * with one line in err. */
int sasl_check_config(const struct samsa_config *cfg, const struct plugin_registry *reg, char *err,
                      size_t errlen);

/* plugin_scram_lookup_fn over the node's metadata image (arg: struct
 * controller *; NULL: SAMSA_EUNSUPPORTED). */
int sasl_scram_lookup(void *controller, int mechanism, const char *user, samsa_scram_credential_t *cred);

#endif
