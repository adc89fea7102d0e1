/* TLS on client listeners (SSL and SASL_SSL) through OpenSSL.
 *
 * At startup tls_setup builds one server SSL_CTX per TLS listener from
 * Kafka's ssl.* keys, each read first under the listener's prefix
 * (listener.name.<l>.ssl.*) and then broker-wide. A dynamic change of
 * a listener's ssl.* keys (KIP-226) replaces its context for new
 * connections. A connection accepted on such a listener gets an SSL
 * object (tls_new) and runs its handshake inside the worker's loop
 * (net/conn.c): every OpenSSL call is non-blocking, WANT_READ and
 * WANT_WRITE only change which watcher waits. */
#ifndef SAMSA_NET_TLS_H
#define SAMSA_NET_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>

struct samsa_config;

/* Builds the contexts of every SSL and SASL_SSL listener of cfg. 0, or
 * -1 with one line in err naming the listener and the key at fault. */
int tls_setup(const struct samsa_config *cfg, char *err, size_t errlen);
/* The context of the listener named name (upper-cased as configured),
 * with a reference the caller owns (SSL_CTX_free); NULL when it is not
 * a TLS listener. When cfg (the config in effect) changed that
 * listener's ssl.* keys since the context was built (KIP-226: dynamic
 * listener.name.<l>.ssl.* keys), or tls_check_reconfig prepared a new
 * context for them, that context replaces the old one for every later
 * connection (built here only when no check prepared it); established
 * connections keep the context they started with. Net thread only. */
SSL_CTX *tls_listener_ctx_ref(const struct samsa_config *cfg, const char *name);
/* The check a dynamic change of listener ssl.* keys passes before it is
 * accepted (registered with config_set_reconfig_check): for each TLS
 * listener whose keys differ in next from its context's, or whose key or
 * trust store file changed in place (device, inode, size, modification
 * time), the new context is built (files read, passwords tried, key
 * matched to certificate) and its certificate must keep the current
 * one's subject and alternative names unless ssl.allow.dn.changes /
 * ssl.allow.san.changes. With nothing changed it does nothing. With
 * prepare, a context that passed is kept for tls_listener_ctx_ref to
 * adopt (once the config in effect has next's keys), so no file is read
 * on the net thread. 0, or -1 with one line in err. Any thread but a
 * network worker or the net thread: reads files. */
int tls_check_reconfig(const struct samsa_config *next, bool prepare, char *err, size_t errlen);
/* The config in effect became now (published by the quorum thread,
 * e.g. stored dynamic keys replayed at startup, or a change this node's
 * AlterConfigs did not check): each TLS listener's changed keys are
 * checked as tls_check_reconfig does and prepared, so that the net
 * thread adopts them without reading a file; a change that fails keeps
 * the previous context, with one line. Not on a network worker. */
void tls_follow_config(const struct samsa_config *now);
/* A client context for the connections this node opens to its peers'
 * listener (the inter-broker or the controller listener), from that
 * listener's ssl.* keys: its trust store verifies the peer, its key
 * store (optional) is the certificate this node presents for mTLS.
 * *verify_host: ssl.endpoint.identification.algorithm is https (Kafka's
 * default; empty turns the host name check off). NULL with one line in
 * err. The caller owns the context (SSL_CTX_free). */
SSL_CTX *tls_client_ctx_new(const struct samsa_config *cfg, const char *listener, bool *verify_host, char *err,
                            size_t errlen);
/* A client-side SSL object on the connected fd for host (SNI for a name;
 * with verify_host the certificate must name host, as a DNS name or an
 * IP address). NULL on failure. The caller owns it (SSL_free). */
SSL *tls_new_client(SSL_CTX *ctx, int fd, const char *host, bool verify_host);
/* Whether any listener speaks TLS. */
bool tls_any(void);
/* A server-side SSL object on fd (accept state); NULL on failure. The
 * caller owns it (SSL_free). */
SSL *tls_new(SSL_CTX *ctx, int fd);
/* The principal of a TLS connection without SASL, as Kafka's default
 * principal builder writes it: "User:" and the name the listener's
 * ssl.principal.mapping.rules (DEFAULT: as it is) give the client
 * certificate's subject, written in RFC 2253 form as Java's
 * X500Principal.getName() does (attributes without an RFC 2253 keyword,
 * e.g. emailAddress, as OID=#hex-of-DER); User:ANONYMOUS without a
 * certificate. NULL when no rule applies to the subject (Kafka refuses
 * the connection). *subject gets the subject (or NULL without a
 * certificate). Both malloc'ed; the caller frees them. */
char *tls_principal(SSL *ssl, const char *listener, char **subject);
/* OpenSSL's error queue as one line (drains it) into out. */
void tls_errors(char *out, size_t outlen);

#endif
