/* samsactl over TLS (security.protocol SSL / SASL_SSL): the handshake
 * after the TCP connect, and reads and writes through OpenSSL on the
 * connection's non-blocking socket. Settings from kc_security (sasl.h). */
#ifndef SAMSACTL_TLS_H
#define SAMSACTL_TLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct kc_client;
struct kc_conn;

/* Handshakes on conn->fd (connected) until deadline (monotonic ms):
 * 0, or an error code with the reason in c's message (the caller closes
 * the connection). */
int kc_tls_connect(struct kc_client *c, struct kc_conn *conn, int64_t deadline);
/* As recv / send: bytes moved; 0 from read when the peer closed; -1 with
 * errno EAGAIN when it must wait (for POLLIN when *want_write is false,
 * else POLLOUT), or another errno on failure. */
ssize_t kc_tls_read(struct kc_conn *conn, void *p, size_t n, int *want_write);
ssize_t kc_tls_write(struct kc_conn *conn, const void *p, size_t n, int *want_write);
/* Bytes OpenSSL decrypted and holds: poll on the socket does not see them. */
int kc_tls_pending(const struct kc_conn *conn);
void kc_tls_free(struct kc_conn *conn);

#endif
