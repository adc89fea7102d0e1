/* SPDX-License-Identifier: Apache-2.0
 *
 * Capability kind SAMSA_CAP_SASL: a SASL mechanism on the server side
 * (Kafka's SaslServer with its callback handler). The host runs the
 * SaslHandshake / SaslAuthenticate exchange and calls step with each
 * client token; the mechanism answers with a server token and, at the
 * end, the authenticated principal.
 *
 * Declared in ABI 1.0; called by the host since 1.1 (core/auth/sasl.c):
 * a SaslHandshake naming an enabled mechanism starts a session on the
 * connection's worker, each SaslAuthenticate (or, after a v0 handshake,
 * each raw length-prefixed token) is one step, and SAMSA_OK ends the
 * exchange with principal(). SAMSA_EAUTH answers
 * SASL_AUTHENTICATION_FAILED with errstr as the error message (write
 * Kafka's text, e.g. "Authentication failed: Invalid username or
 * password") and closes the connection. SAMSA_EAGAIN is not accepted
 * yet by the 1.1 host: it fails the exchange.
 */
#ifndef SAMSA_SASL_H
#define SAMSA_SASL_H

#include "samsa/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* step results besides SAMSA_OK (done, principal available),
 * SAMSA_EAUTH (authentication failed; the host answers
 * SASL_AUTHENTICATION_FAILED with errstr) and SAMSA_EAGAIN (the answer
 * comes through api->complete; result = the server token). */
#define SAMSA_SASL_CONTINUE 1 /* send the server token, expect another step */

/* Kafka's ScramMechanism type ids (UserScramCredentialRecord.Mechanism). */
#define SAMSA_SCRAM_SHA_256 1
#define SAMSA_SCRAM_SHA_512 2

/* ABI 1.1: a stored SCRAM credential (RFC 5802 section 3), filled by
 * api->scram_credential_get. Salts longer than the array are refused
 * when a credential is stored, so every stored one fits. */
#define SAMSA_SCRAM_SALT_MAX 256
#define SAMSA_SCRAM_KEY_MAX 64
typedef struct samsa_scram_credential {
    uint32_t struct_size; /* set by the caller: sizeof(samsa_scram_credential_t) */
    int32_t iterations;
    size_t salt_len, stored_key_len, server_key_len;
    uint8_t salt[SAMSA_SCRAM_SALT_MAX];
    uint8_t stored_key[SAMSA_SCRAM_KEY_MAX];
    uint8_t server_key[SAMSA_SCRAM_KEY_MAX];
} samsa_scram_credential_t;

/* What the host knows about the connection; borrowed for the call. */
typedef struct samsa_sasl_conn {
    uint32_t struct_size;
    const char *listener;      /* listener name, e.g. "SASL_SSL" */
    const char *client_host;   /* peer address as text */
    const char *client_id;     /* Kafka client.id, may be "" */
    bool tls;                  /* the connection is TLS */
    const char *tls_peer_dn;   /* client certificate subject, or NULL */
} samsa_sasl_conn_t;

typedef struct samsa_sasl_mech {
    /* hdr.kind = SAMSA_CAP_SASL; hdr.name = the mechanism name as
     * SaslHandshake lists it, e.g. "PLAIN", "SCRAM-SHA-256". */
    samsa_cap_hdr_t hdr;

    /* ---- ABI 1.0 ---- */

    /* Starts a session for one connection. *session is the plugin's.
     * @locality the connection's worker thread */
    int (*session_new)(void *cap_state, const samsa_sasl_conn_t *conn, void **session);

    /* One round: in is the client's token (may be empty). The server
     * token goes to out (may stay empty). Returns SAMSA_SASL_CONTINUE,
     * SAMSA_OK, SAMSA_EAUTH (errstr set, shown to the client as Kafka
     * does), or SAMSA_EAGAIN after keeping token to call api->complete
     * with (status, server token) once a slow lookup finishes. A session
     * sees one step at a time.
     * @locality the connection's worker thread; must not block */
    int (*step)(void *cap_state, void *session, const uint8_t *in, size_t in_len, samsa_out_t *out,
                samsa_async_t *token, char *errstr, size_t errlen);

    /* After SAMSA_OK: the principal, Kafka form "User:alice". Valid until
     * session_free. */
    const char *(*principal)(void *cap_state, void *session);

    /* After SAMSA_OK: how long the credentials stay valid in ms (KIP-368
     * session lifetime), 0 for no limit. May be NULL (no limit). */
    int64_t (*session_lifetime_ms)(void *cap_state, void *session);

    /* Frees the session (also after a failed or abandoned exchange; the
     * host waits for a pending complete first). */
    void (*session_free)(void *cap_state, void *session);

    /* ---- ABI 1.1+: append here ---- */
} samsa_sasl_mech_t;

#define SAMSA_SASL_MECH_SIZE_1_0 (offsetof(samsa_sasl_mech_t, session_free) + sizeof(void *))

#ifdef __cplusplus
}
#endif

#endif /* SAMSA_SASL_H */
