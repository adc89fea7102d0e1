/* samsactl's TLS client (see tls.h). */
#include "tls.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "client.h"
#include "proto/kerr.h"
#include "sasl.h"
#include "util/clock.h"

static SSL_CTX *ctx; /* one per process, from kc_security */

static int pw_cb(char *buf, int size, int rwflag, void *u)
{
    (void)rwflag;
    (void)u;
    const char *pw = kc_security.key_password ? kc_security.key_password : "";
    int n = (int)strlen(pw);
    if (n > size)
        n = size;
    memcpy(buf, pw, (size_t)n);
    return n;
}

static const char *ssl_reason(void)
{
    static char why[256];
    unsigned long e = ERR_get_error();
    if (!e)
        return "no detail";
    ERR_error_string_n(e, why, sizeof why);
    ERR_clear_error();
    return why;
}

static int make_ctx(struct kc_client *c)
{
    if (ctx)
        return 0;
    SSL_CTX *x = SSL_CTX_new(TLS_client_method());
    if (!x)
        return kc_fail(c, KERR_NETWORK_EXCEPTION, "TLS: %s", ssl_reason());
    SSL_CTX_set_min_proto_version(x, TLS1_2_VERSION);
    SSL_CTX_set_verify(x, SSL_VERIFY_PEER, NULL);
    int ok = kc_security.ca_file ? SSL_CTX_load_verify_locations(x, kc_security.ca_file, NULL)
                                 : SSL_CTX_set_default_verify_paths(x);
    if (ok != 1) {
        SSL_CTX_free(x);
        return kc_fail(c, KERR_NETWORK_EXCEPTION, "TLS: cannot read the trust store %s: %s",
                       kc_security.ca_file ? kc_security.ca_file : "(system)", ssl_reason());
    }
    if (kc_security.cert_file) {
        SSL_CTX_set_default_passwd_cb(x, pw_cb);
        if (SSL_CTX_use_certificate_chain_file(x, kc_security.cert_file) != 1 ||
            SSL_CTX_use_PrivateKey_file(x, kc_security.key_file ? kc_security.key_file : kc_security.cert_file,
                                        SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(x) != 1) {
            SSL_CTX_free(x);
            return kc_fail(c, KERR_NETWORK_EXCEPTION, "TLS: cannot use the client key and certificate %s: %s",
                           kc_security.cert_file, ssl_reason());
        }
    }
    ctx = x;
    return 0;
}

int kc_tls_connect(struct kc_client *c, struct kc_conn *conn, int64_t deadline)
{
    int rc = make_ctx(c);
    if (rc)
        return rc;
    SSL *s = SSL_new(ctx);
    if (!s)
        return kc_fail(c, KERR_NETWORK_EXCEPTION, "TLS: %s", ssl_reason());
    conn->ssl = s;
    SSL_set_fd(s, conn->fd);
    SSL_set_tlsext_host_name(s, conn->host);
    if (kc_security.verify_host) {
        /* an address is checked against the certificate's IP SANs */
        X509_VERIFY_PARAM *vp = SSL_get0_param(s);
        if (X509_VERIFY_PARAM_set1_ip_asc(vp, conn->host) != 1)
            SSL_set1_host(s, conn->host);
    }
    for (;;) {
        int r = SSL_connect(s);
        if (r == 1)
            return 0;
        int e = SSL_get_error(s, r);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
            long v = SSL_get_verify_result(s);
            if (v != X509_V_OK)
                return kc_fail(c, KERR_NETWORK_EXCEPTION, "TLS handshake with %s:%d failed: %s", conn->host,
                               conn->port, X509_verify_cert_error_string(v));
            return kc_fail(c, KERR_NETWORK_EXCEPTION, "TLS handshake with %s:%d failed: %s", conn->host, conn->port,
                           ssl_reason());
        }
        if (kc_interrupted)
            return kc_fail(c, KC_INTERRUPTED, "interrupted");
        int64_t left = deadline - clock_mono_ms();
        if (left <= 0)
            return kc_fail(c, KERR_REQUEST_TIMED_OUT, "timed out in the TLS handshake with %s:%d", conn->host,
                           conn->port);
        struct pollfd pfd = {conn->fd, (short)(e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), 0};
        poll(&pfd, 1, left > 1000000 ? 1000000 : (int)left);
    }
}

static ssize_t io_result(SSL *s, int r, int *want_write)
{
    if (r > 0)
        return r;
    int e = SSL_get_error(s, r);
    *want_write = e == SSL_ERROR_WANT_WRITE;
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        errno = EAGAIN;
        return -1;
    }
    if (e == SSL_ERROR_ZERO_RETURN)
        return 0;
    if (e == SSL_ERROR_SYSCALL && errno == 0)
        return 0; /* closed without close_notify */
    if (e != SSL_ERROR_SYSCALL)
        errno = EPROTO;
    ERR_clear_error();
    return -1;
}

ssize_t kc_tls_read(struct kc_conn *conn, void *p, size_t n, int *want_write)
{
    ERR_clear_error();
    errno = 0;
    return io_result(conn->ssl, SSL_read(conn->ssl, p, n > INT32_MAX ? INT32_MAX : (int)n), want_write);
}

ssize_t kc_tls_write(struct kc_conn *conn, const void *p, size_t n, int *want_write)
{
    ERR_clear_error();
    errno = 0;
    return io_result(conn->ssl, SSL_write(conn->ssl, p, n > INT32_MAX ? INT32_MAX : (int)n), want_write);
}

int kc_tls_pending(const struct kc_conn *conn)
{
    return conn->ssl ? SSL_pending(conn->ssl) : 0;
}

void kc_tls_free(struct kc_conn *conn)
{
    if (conn->ssl) {
        SSL_free(conn->ssl);
        conn->ssl = NULL;
    }
}
