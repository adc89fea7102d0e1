/* The client side of SASL, for connections this node opens to its peers
 * (net/kclient.c) and for samsactl: PLAIN (RFC 4616) and SCRAM-SHA-256 /
 * SCRAM-SHA-512 (RFC 5802, RFC 7677) as a sequence of tokens, without
 * I/O, so the same exchange runs on a libev loop or a blocking socket.
 * The caller carries each token in SaslAuthenticate (after SaslHandshake
 * v1 named the mechanism). */
#ifndef SAMSA_AUTH_SASL_CLIENT_H
#define SAMSA_AUTH_SASL_CLIENT_H

#include <stddef.h>
#include <stdint.h>

struct sasl_client;

/* A client for mechanism ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
 * with the credentials (copied). NULL with one line in err for another
 * mechanism. The caller frees it with sasl_client_free. */
struct sasl_client *sasl_client_new(const char *mechanism, const char *username, const char *password, char *err,
                                    size_t errlen);
void sasl_client_free(struct sasl_client *c);

/* One step: in is the server's last token (NULL, 0 before the first).
 * Returns 1 with the next token in *out (malloc'd, the caller frees it),
 * 0 when the exchange is complete (the server's proof verified, for
 * SCRAM), or -1 with one line in err when the server's token is wrong. */
int sasl_client_step(struct sasl_client *c, const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen,
                     char *err, size_t errlen);

/* Tests: the client nonce SCRAM uses instead of a random one (copied). */
void sasl_client_set_nonce(struct sasl_client *c, const char *nonce);

/* Kafka's SCRAM mechanism ids: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512; -1 for
 * another name. */
int sasl_scram_mechanism(const char *name);
/* SaltedPassword (PBKDF2-HMAC) of mechanism id; *out_len gets the digest
 * size (32 or 64; out holds 64). 0, or -1 for an unknown id. */
int sasl_scram_salted_password(int mechanism, const char *password, const uint8_t *salt, size_t salt_len,
                               int iterations, uint8_t *out, size_t *out_len);

/* The value of option key in a JAAS login configuration (key="v" or
 * key=v), as Kafka's login modules read username and password; NULL when
 * absent. malloc'd; the caller frees it. */
char *sasl_jaas_option(const char *jaas, const char *key);

#endif
