/* TLS contexts of client listeners and the per-connection helpers: see
 * tls.h. */
#include "net/tls.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <arpa/inet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "config.h"
#include "net/tls_rules.h"
#include "util/buf.h"
#include "util/slog.h"

#define TLS_MAX_LISTENERS 8

/* The listeners' contexts. ctx, sig and stamp change only on the net
 * thread (tls_listener_ctx_ref, when the config it reads changed their
 * keys or a checked context waits in prep) and under ctx_lock; other
 * threads read them under ctx_lock. prep is written by the thread that
 * checks an AlterConfigs change (the offload thread, net/offload.h)
 * under ctx_lock: a context built and checked there, adopted by the net
 * thread without reading any file. The table holds one reference to
 * each ctx; every SSL object and every accepted connection on its way to
 * a worker holds its own, so a replaced context lives as long as a
 * connection uses it. */
struct ctx_prep {
    SSL_CTX *ctx;            /* NULL: none waiting */
    SSL_CTX *cctx;           /* its peer side (see ctxs[].cctx), or NULL */
    char *sig, *stamp;       /* what it was built from (owned) */
};
static struct {
    char name[64];
    int protocol;            /* enum security_protocol */
    SSL_CTX *ctx;
    SSL_CTX *cctx;           /* inter-broker listener only: the client side
                              * built from the same stores as ctx, for the
                              * handshake check of a new store; else NULL */
    char *sig;               /* the key values ctx was built from (owned) */
    char *stamp;             /* the key and trust store files as ctx read them (owned) */
    const struct samsa_config *seen; /* the config sig was last compared with */
    unsigned prep_seen;      /* prep_gen when prep was last looked at */
    struct ctx_prep prep;
    struct tls_rules *rules; /* ssl.principal.mapping.rules */
    const struct samsa_config *refused; /* a published config whose
                              * change tls_follow_config refused (logged) */
} ctxs[TLS_MAX_LISTENERS];
static size_t n_ctxs;
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint prep_gen; /* bumped when any prep is set */

static bool listener_known(const char *name);
static int check_listener(const struct samsa_config *next, const struct config_endpoint *l, bool prepare, char *err,
                          size_t errlen);

void tls_errors(char *out, size_t outlen)
{
    out[0] = '\0';
    size_t off = 0;
    unsigned long e;
    while ((e = ERR_get_error()) != 0) {
        char one[256];
        ERR_error_string_n(e, one, sizeof one);
        if (off + 3 < outlen) {
            int n = snprintf(out + off, outlen - off, "%s%s", off ? "; " : "", one);
            off += n > 0 ? (size_t)n : 0;
        }
    }
    if (!out[0])
        snprintf(out, outlen, "no detail from OpenSSL");
}

/* One ssl.* key of listener: listener.name.<l>.<key> (Kafka's prefix,
 * the name in lower case) before the broker-wide key. Sets *which to the
 * key that gave the value (for error lines); NULL when unset or empty. */
static const char *lkey(const struct samsa_config *cfg, const char *listener, const char *key, char *which,
                        size_t wlen)
{
    char pk[192];
    int n = snprintf(pk, sizeof pk, "listener.name.");
    for (const char *p = listener; *p && n < (int)sizeof pk - 1; p++)
        pk[n++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    pk[n] = '\0';
    snprintf(pk + n, sizeof pk - (size_t)n, ".%s", key);
    const char *v = config_get_any(cfg, pk);
    if (v) {
        snprintf(which, wlen, "%s", pk);
    } else {
        v = config_get(cfg, key);
        snprintf(which, wlen, "%s", key);
    }
    return v && v[0] ? v : NULL;
}

/* The keys a listener's server context is built from (KIP-226's
 * reconfigurable SSL keys), as their effective values joined into one
 * malloc'ed string the caller frees: two configs with equal strings give
 * the same context. */
static char *ctx_signature(const struct samsa_config *cfg, const char *listener)
{
    static const char *const keys[] = {
        "ssl.keystore.type",     "ssl.keystore.location",   "ssl.keystore.password",
        "ssl.key.password",      "ssl.keystore.key",        "ssl.keystore.certificate.chain",
        "ssl.truststore.type",   "ssl.truststore.location", "ssl.truststore.password",
        "ssl.truststore.certificates", "ssl.client.auth",   "ssl.enabled.protocols",
        "ssl.protocol",          "ssl.cipher.suites",
    };
    struct buf b = BUF_INIT;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char which[192];
        const char *v = lkey(cfg, listener, keys[i], which, sizeof which);
        buf_append(&b, which, strlen(which));
        buf_put_u8(&b, '=');
        if (v)
            buf_append(&b, v, strlen(v));
        buf_put_u8(&b, '\x01');
    }
    buf_put_u8(&b, 0);
    char *out = xstrdup((const char *)b.data);
    buf_free(&b);
    return out;
}

/* The key store and trust store files of listener l as they are now
 * (device, inode, size, modification time in ns; "-" for a file that
 * cannot be read), malloc'ed: Kafka rebuilds a listener's SSL factory
 * when ssl.keystore.location is set again to the same path and the file
 * changed (SslFactory: the file's modification time), and otherwise
 * keeps it. Reads file metadata: never on a network worker. */
static char *file_stamp(const struct samsa_config *cfg, const char *listener)
{
    static const char *const keys[] = {"ssl.keystore.location", "ssl.truststore.location"};
    struct buf b = BUF_INIT;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char which[192], one[160];
        const char *path = lkey(cfg, listener, keys[i], which, sizeof which);
        struct stat st;
        if (!path)
            snprintf(one, sizeof one, "none;");
        else if (stat(path, &st) != 0)
            snprintf(one, sizeof one, "-;");
        else
            snprintf(one, sizeof one, "%ju:%ju:%jd:%jd.%09ld;", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino,
                     (intmax_t)st.st_size, (intmax_t)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
        buf_append(&b, one, strlen(one));
    }
    buf_put_u8(&b, 0);
    char *out = xstrdup((const char *)b.data);
    buf_free(&b);
    return out;
}

static void prep_clear(struct ctx_prep *p)
{
    SSL_CTX_free(p->ctx);
    SSL_CTX_free(p->cctx);
    free(p->sig);
    free(p->stamp);
    memset(p, 0, sizeof *p);
}

struct pw {
    const char *pass;
};

static int pw_cb(char *buf, int size, int rwflag, void *u)
{
    (void)rwflag;
    const struct pw *p = u;
    if (!p || !p->pass)
        return 0;
    int n = (int)strlen(p->pass);
    if (n > size)
        n = size;
    memcpy(buf, p->pass, (size_t)n);
    return n;
}

/* Reads a whole PKCS12 file; NULL with err set. The caller frees it. */
/* Reads and decrypts the PKCS12 file at path: 0 with the key,
 * certificate and CA chain (each may be NULL; the caller frees them with
 * p12_free), -1 when the file is not PKCS12, -2 when pass does not open
 * it. detail gets OpenSSL's reason on failure. */
static int open_p12(const char *path, const char *pass, EVP_PKEY **pkey, X509 **cert, STACK_OF(X509) **ca,
                    char *detail, size_t n)
{
    *pkey = NULL;
    *cert = NULL;
    *ca = NULL;
    BIO *b = BIO_new_file(path, "rb");
    PKCS12 *p = b ? d2i_PKCS12_bio(b, NULL) : NULL;
    BIO_free(b);
    if (!p) {
        tls_errors(detail, n);
        return -1;
    }
    int ok = PKCS12_parse(p, pass ? pass : "", pkey, cert, ca);
    PKCS12_free(p);
    if (!ok) {
        tls_errors(detail, n);
        return -2;
    }
    return 0;
}

static void p12_free(EVP_PKEY *pkey, X509 *cert, STACK_OF(X509) *ca)
{
    EVP_PKEY_free(pkey);
    X509_free(cert);
    sk_X509_pop_free(ca, X509_free);
}

static int add_certs_pem(X509_STORE *st, BIO *b, int *count)
{
    X509 *x;
    while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
        X509_STORE_add_cert(st, x);
        X509_free(x);
        (*count)++;
    }
    ERR_clear_error(); /* the end of the input reads as an error */
    return *count > 0 ? 0 : -1;
}

#define FAIL_NULL(...)                                                                                                \
    do {                                                                                                              \
        snprintf(err, errlen, __VA_ARGS__);                                                                           \
        return NULL;                                                                                                  \
    } while (0)
#define FAIL(...)                                                                                                     \
    do {                                                                                                              \
        snprintf(err, errlen, __VA_ARGS__);                                                                           \
        return -1;                                                                                                    \
    } while (0)

/* The key store: our certificate. optional: a client side may have none
 * (then it presents no certificate). */
/* Java key stores (JKS, Kafka's default store type) are Java's own
 * format, which OpenSSL does not read. Unset or JKS: one line naming
 * the key and the conversion, instead of an OpenSSL parse error. what is
 * "keystore" or "truststore", which the key lkey read type from. */
static int refuse_jks(const struct samsa_config *cfg, const char *l, const char *what, const char *which,
                      const char *loc, char *err, size_t errlen)
{
    char key[64], pk[192], dst[256];
    snprintf(key, sizeof key, "ssl.%s.type", what);
    const char *src = loc ? loc : "store.jks";
    size_t n = strlen(src);
    if (n > 4 && !strcasecmp(src + n - 4, ".jks"))
        snprintf(dst, sizeof dst, "%.*s.p12", (int)(n - 4), src);
    else
        snprintf(dst, sizeof dst, "%s.p12", src);
    char conv[768];
    snprintf(conv, sizeof conv, "keytool -importkeystore -srckeystore %s -srcstoretype JKS -destkeystore %s "
             "-deststoretype PKCS12", src, dst);
    if (strncmp(which, "listener.name.", 14) && !config_is_set(cfg, key)) {
        int m = snprintf(pk, sizeof pk, "listener.name.");
        for (const char *p = l; *p && m < (int)sizeof pk - 1; p++)
            pk[m++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
        snprintf(pk + m, sizeof pk - (size_t)m, ".%s", key);
        FAIL("listener %s: %s (or %s) is not set and Kafka's default is JKS, a Java format samsa does not read: "
             "set it to PEM or PKCS12; convert a JKS store with %s", l, key, pk, conv);
    }
    FAIL("listener %s: %s=JKS: samsa does not read Java key stores (OpenSSL has no JKS); convert the store to "
         "PKCS12 with %s and set %s=PKCS12, or use PEM", l, which, conv, which);
}

static int load_keystore(SSL_CTX *ctx, const struct samsa_config *cfg, const char *l, bool optional, char *err,
                         size_t errlen)
{
    char wt[192], wl[192], wp[192], wk[192], wc[192], wkp[192], detail[512];
    const char *type = lkey(cfg, l, "ssl.keystore.type", wt, sizeof wt);
    const char *loc = lkey(cfg, l, "ssl.keystore.location", wl, sizeof wl);
    const char *pass = lkey(cfg, l, "ssl.keystore.password", wp, sizeof wp);
    const char *key = lkey(cfg, l, "ssl.keystore.key", wk, sizeof wk);
    const char *chain = lkey(cfg, l, "ssl.keystore.certificate.chain", wc, sizeof wc);
    const char *keypass = lkey(cfg, l, "ssl.key.password", wkp, sizeof wkp);
    if (!type)
        type = "JKS";
    if (!loc && !key && !chain && optional)
        return 0;
    if (!strcasecmp(type, "JKS") && (loc || key || chain))
        return refuse_jks(cfg, l, "keystore", wt, loc, err, errlen);
    if (!loc && !key && !chain)
        FAIL("listener %s: a TLS listener needs a key store: ssl.keystore.location, or ssl.keystore.key and "
             "ssl.keystore.certificate.chain (with ssl.keystore.type=PEM)", l);
    if (!strcasecmp(type, "PKCS12")) {
        if (!loc)
            FAIL("listener %s: %s=PKCS12 needs ssl.keystore.location", l, wt);
        EVP_PKEY *pkey;
        X509 *cert;
        STACK_OF(X509) *ca;
        int rc = open_p12(loc, pass, &pkey, &cert, &ca, detail, sizeof detail);
        if (rc == -1)
            FAIL("listener %s: %s '%s' cannot be read as PKCS12: %s", l, wl, loc, detail);
        if (rc || !pkey || !cert) {
            if (!rc)
                tls_errors(detail, sizeof detail);
            p12_free(pkey, cert, ca);
            FAIL("listener %s: %s '%s': wrong %s or no key and certificate in it (%s)", l, wl, loc, wp, detail);
        }
        bool ok = SSL_CTX_use_certificate(ctx, cert) == 1 && SSL_CTX_use_PrivateKey(ctx, pkey) == 1;
        for (int i = 0; ok && ca && i < sk_X509_num(ca); i++)
            ok = SSL_CTX_add1_chain_cert(ctx, sk_X509_value(ca, i)) == 1;
        p12_free(pkey, cert, ca);
        if (!ok) {
            tls_errors(detail, sizeof detail);
            FAIL("listener %s: %s '%s' cannot be used: %s", l, wl, loc, detail);
        }
    } else if (!strcasecmp(type, "PEM")) {
        struct pw pw = {keypass};
        BIO *kb, *cb;
        const char *what;
        if (loc) {
            if (key || chain)
                FAIL("listener %s: set either ssl.keystore.location or ssl.keystore.key and "
                     "ssl.keystore.certificate.chain, not both", l);
            kb = BIO_new_file(loc, "r");
            cb = BIO_new_file(loc, "r");
            what = wl;
            if (!kb || !cb) {
                BIO_free(kb);
                BIO_free(cb);
                ERR_clear_error();
                FAIL("listener %s: %s '%s' cannot be opened", l, wl, loc);
            }
        } else {
            if (!key || !chain)
                FAIL("listener %s: ssl.keystore.key and ssl.keystore.certificate.chain go together", l);
            kb = BIO_new_mem_buf(key, -1);
            cb = BIO_new_mem_buf(chain, -1);
            what = wk;
        }
        EVP_PKEY *pkey = PEM_read_bio_PrivateKey(kb, NULL, pw_cb, &pw);
        BIO_free(kb);
        if (!pkey) {
            tls_errors(detail, sizeof detail);
            BIO_free(cb);
            FAIL("listener %s: no private key readable from %s%s%s (wrong or missing %s?): %s", l, what,
                 loc ? " " : "", loc ? loc : "", wkp, detail);
        }
        X509 *cert = PEM_read_bio_X509(cb, NULL, NULL, NULL);
        int ok = cert && SSL_CTX_use_certificate(ctx, cert) == 1 && SSL_CTX_use_PrivateKey(ctx, pkey) == 1;
        X509_free(cert);
        EVP_PKEY_free(pkey);
        X509 *x;
        while (ok && (x = PEM_read_bio_X509(cb, NULL, NULL, NULL)) != NULL)
            ok = SSL_CTX_add0_chain_cert(ctx, x) == 1;
        BIO_free(cb);
        if (!ok) {
            tls_errors(detail, sizeof detail);
            FAIL("listener %s: no usable certificate in %s: %s", l, loc ? wl : wc, detail);
        }
        ERR_clear_error();
    } else {
        FAIL("listener %s: %s=%s is not supported: use PEM or PKCS12", l, wt, type);
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        tls_errors(detail, sizeof detail);
        FAIL("listener %s: the private key does not match the certificate of the key store: %s", l, detail);
    }
    return 0;
}

/* The trust store: CAs that sign acceptable client certificates. None
 * configured: OpenSSL's default paths. */
static int load_truststore(SSL_CTX *ctx, const struct samsa_config *cfg, const char *l, char *err, size_t errlen)
{
    char wt[192], wl[192], wp[192], wc[192], detail[512];
    const char *type = lkey(cfg, l, "ssl.truststore.type", wt, sizeof wt);
    const char *loc = lkey(cfg, l, "ssl.truststore.location", wl, sizeof wl);
    const char *pass = lkey(cfg, l, "ssl.truststore.password", wp, sizeof wp);
    const char *certs = lkey(cfg, l, "ssl.truststore.certificates", wc, sizeof wc);
    if (!type)
        type = "JKS";
    X509_STORE *st = SSL_CTX_get_cert_store(ctx);
    int count = 0;
    if (!loc && !certs) {
        SSL_CTX_set_default_verify_paths(ctx);
        return 0;
    }
    if (!strcasecmp(type, "JKS") && loc)
        return refuse_jks(cfg, l, "truststore", wt, loc, err, errlen);
    if (loc && certs)
        FAIL("listener %s: set either ssl.truststore.location or ssl.truststore.certificates, not both", l);
    if (certs) {
        if (strcasecmp(type, "PEM"))
            FAIL("listener %s: ssl.truststore.certificates needs %s=PEM", l, wt);
        BIO *b = BIO_new_mem_buf(certs, -1);
        int rc = add_certs_pem(st, b, &count);
        BIO_free(b);
        if (rc < 0)
            FAIL("listener %s: no certificate in %s", l, wc);
    } else if (!strcasecmp(type, "PEM")) {
        BIO *b = BIO_new_file(loc, "r");
        if (!b) {
            ERR_clear_error();
            FAIL("listener %s: %s '%s' cannot be opened", l, wl, loc);
        }
        int rc = add_certs_pem(st, b, &count);
        BIO_free(b);
        if (rc < 0)
            FAIL("listener %s: no certificate in %s '%s'", l, wl, loc);
    } else if (!strcasecmp(type, "PKCS12")) {
        EVP_PKEY *pkey;
        X509 *cert;
        STACK_OF(X509) *ca;
        int rc = open_p12(loc, pass, &pkey, &cert, &ca, detail, sizeof detail);
        if (rc == -1)
            FAIL("listener %s: %s '%s' cannot be read as PKCS12: %s", l, wl, loc, detail);
        if (rc)
            FAIL("listener %s: %s '%s': wrong %s? (%s)", l, wl, loc, wp, detail);
        if (cert && X509_STORE_add_cert(st, cert) == 1)
            count++;
        for (int i = 0; ca && i < sk_X509_num(ca); i++)
            if (X509_STORE_add_cert(st, sk_X509_value(ca, i)) == 1)
                count++;
        p12_free(pkey, cert, ca);
        if (!count)
            FAIL("listener %s: no certificate in %s '%s'", l, wl, loc);
    } else {
        FAIL("listener %s: %s=%s is not supported: use PEM or PKCS12", l, wt, type);
    }
    ERR_clear_error();
    return 0;
}

static int proto_version(const char *s)
{
    if (!strcmp(s, "TLSv1.2"))
        return TLS1_2_VERSION;
    if (!strcmp(s, "TLSv1.3"))
        return TLS1_3_VERSION;
    return 0;
}

/* ssl.enabled.protocols, narrowed by ssl.protocol (Kafka: an SSLContext
 * of TLSv1.2 never speaks TLSv1.3), into the context's version range. */
static int set_protocols(SSL_CTX *ctx, const struct samsa_config *cfg, const char *l, int *lo_out, int *hi_out,
                         char *err, size_t errlen)
{
    char we[192], wp[192];
    const char *list = lkey(cfg, l, "ssl.enabled.protocols", we, sizeof we);
    if (!list)
        list = "TLSv1.2,TLSv1.3";
    int lo = 0, hi = 0;
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p)
            break;
        size_t len = strcspn(p, ", ");
        char one[32];
        snprintf(one, sizeof one, "%.*s", (int)(len < sizeof one ? len : sizeof one - 1), p);
        int v = proto_version(one);
        if (!v)
            FAIL("listener %s: %s: '%s' is not a TLS version samsa speaks (TLSv1.2, TLSv1.3)", l, we, one);
        if (!lo || v < lo)
            lo = v;
        if (v > hi)
            hi = v;
        p += len;
    }
    if (!lo)
        FAIL("listener %s: %s is empty", l, we);
    const char *proto = lkey(cfg, l, "ssl.protocol", wp, sizeof wp);
    if (proto && strcmp(proto, "TLS") && !proto_version(proto))
        FAIL("listener %s: %s=%s: use TLSv1.3, TLSv1.2 or TLS", l, wp, proto);
    if (proto && proto_version(proto) == TLS1_2_VERSION && hi > TLS1_2_VERSION)
        hi = TLS1_2_VERSION;
    if (lo > hi)
        FAIL("listener %s: %s=%s leaves none of %s", l, wp, proto, we);
    SSL_CTX_set_min_proto_version(ctx, lo);
    SSL_CTX_set_max_proto_version(ctx, hi);
    *lo_out = lo;
    *hi_out = hi;
    return 0;
}

/* ssl.cipher.suites: Kafka's (IANA) names, or OpenSSL's. TLSv1.3 suites
 * and older ones are two lists in OpenSSL; a version left without a
 * suite is switched off, as it could not be negotiated anyway. */
static int set_ciphers(SSL_CTX *ctx, const struct samsa_config *cfg, const char *l, int lo, int hi, char *err,
                       size_t errlen)
{
    char wc[192];
    const char *list = lkey(cfg, l, "ssl.cipher.suites", wc, sizeof wc);
    if (!list)
        return 0;
    char v12[2048] = "", v13[1024] = "";
    STACK_OF(SSL_CIPHER) *all = SSL_CTX_get_ciphers(ctx);
    /* every suite OpenSSL has, not only the default list */
    SSL *probe = SSL_new(ctx);
    STACK_OF(SSL_CIPHER) *sup = NULL;
    if (probe) {
        SSL_set_cipher_list(probe, "ALL:COMPLEMENTOFALL");
        sup = SSL_get1_supported_ciphers(probe);
    }
    const char *p = list;
    int rc = 0;
    while (*p && rc == 0) {
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p)
            break;
        size_t len = strcspn(p, ", ");
        char one[128];
        snprintf(one, sizeof one, "%.*s", (int)(len < sizeof one ? len : sizeof one - 1), p);
        p += len;
        const SSL_CIPHER *found = NULL;
        for (int pass = 0; pass < 2 && !found; pass++) {
            STACK_OF(SSL_CIPHER) *st = pass ? sup : all;
            for (int i = 0; st && i < sk_SSL_CIPHER_num(st) && !found; i++) {
                const SSL_CIPHER *c = sk_SSL_CIPHER_value(st, i);
                const char *std = SSL_CIPHER_standard_name(c);
                if ((std && !strcmp(std, one)) || !strcmp(SSL_CIPHER_get_name(c), one))
                    found = c;
            }
        }
        if (!found) {
            snprintf(err, errlen, "listener %s: %s: '%s' is not a cipher suite this OpenSSL knows", l, wc, one);
            rc = -1;
            break;
        }
        bool tls13 = !strcmp(SSL_CIPHER_get_version(found), "TLSv1.3");
        char *dst = tls13 ? v13 : v12;
        size_t cap = tls13 ? sizeof v13 : sizeof v12;
        size_t used = strlen(dst);
        snprintf(dst + used, cap - used, "%s%s", used ? ":" : "", SSL_CIPHER_get_name(found));
    }
    sk_SSL_CIPHER_free(sup);
    SSL_free(probe);
    if (rc < 0)
        return -1;
    if (!v12[0] && !v13[0])
        return 0; /* empty: OpenSSL's defaults, as Kafka's JSSE defaults */
    if (SSL_CTX_set_ciphersuites(ctx, v13) != 1 || (v12[0] && SSL_CTX_set_cipher_list(ctx, v12) != 1)) {
        char detail[256];
        tls_errors(detail, sizeof detail);
        FAIL("listener %s: %s cannot be used: %s", l, wc, detail);
    }
    if (!v12[0])
        lo = TLS1_3_VERSION;
    if (!v13[0] && hi > TLS1_2_VERSION)
        hi = TLS1_2_VERSION;
    if (lo > hi)
        FAIL("listener %s: %s names no suite of the enabled TLS versions", l, wc);
    SSL_CTX_set_min_proto_version(ctx, lo);
    SSL_CTX_set_max_proto_version(ctx, hi);
    return 0;
}

/* A context for listener l: the server side of its connections, or
 * (client) the side this node takes when it connects to its peers on
 * that listener. */
static int build(const struct samsa_config *cfg, const char *l, int protocol, bool client, SSL_CTX **out,
                 char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(client ? TLS_client_method() : TLS_server_method());
    if (!ctx) {
        char detail[256];
        tls_errors(detail, sizeof detail);
        FAIL("listener %s: cannot create a TLS context: %s", l, detail);
    }
    /* write_request retries a WANT_WRITE with the same bytes from a
     * buffer that may have moved (a re-read of the same file range) */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_IGNORE_UNEXPECTED_EOF);
    int lo, hi;
    if (load_keystore(ctx, cfg, l, client, err, errlen) < 0 || load_truststore(ctx, cfg, l, err, errlen) < 0 ||
        set_protocols(ctx, cfg, l, &lo, &hi, err, errlen) < 0 || set_ciphers(ctx, cfg, l, lo, hi, err, errlen) < 0) {
        SSL_CTX_free(ctx);
        return -1;
    }
    if (client) {
        /* a client always verifies the server's chain, as Kafka's */
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        *out = ctx;
        return 0;
    }
    char wa[192];
    const char *auth = lkey(cfg, l, "ssl.client.auth", wa, sizeof wa);
    /* KIP-684: SASL_SSL listeners take ssl.client.auth only with their
     * listener prefix; SASL authenticates the client there */
    if (protocol == SECURITY_SASL_SSL && !strcmp(wa, "ssl.client.auth"))
        auth = "none";
    if (!auth || !strcmp(auth, "none")) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    } else if (!strcmp(auth, "requested")) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    } else if (!strcmp(auth, "required")) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    } else {
        SSL_CTX_free(ctx);
        FAIL("listener %s: %s=%s: use none, requested or required", l, wa, auth);
    }
    *out = ctx;
    return 0;
}

/* Kafka checks a new key store against the one in use by handshakes
 * (SslFactory's SslEngineValidator) only on the inter-broker listener,
 * the one whose key store this node's peers must verify with their
 * trust stores, which are the same configuration. */
static bool inter_broker(const struct samsa_config *cfg, const char *l)
{
    return cfg->inter_broker_listener_name && !strcasecmp(cfg->inter_broker_listener_name, l);
}

/* The client side of listener l built from cfg for that check, or NULL
 * when l is not the inter-broker listener; *out owned by the caller.
 * Returns -1 with err set when it cannot be built. */
static int peer_side(const struct samsa_config *cfg, const char *l, SSL_CTX **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!inter_broker(cfg, l))
        return 0;
    return build(cfg, l, SECURITY_SSL, true, out, err, errlen);
}

/* One TLS handshake, in memory (a BIO pair, no socket), between a
 * server from srv and a client from cli; the client verifies the
 * server's chain with cli's trust store and no host name, as Kafka's
 * validator does, and presents cli's certificate if srv asks for one
 * (ssl.client.auth). Returns 0, or -1 with why set (OpenSSL's reason and
 * the side whose verification failed). Runs where files may be read: the
 * offload thread. */
static int handshake_pair(SSL_CTX *srv, SSL_CTX *cli, char *why, size_t whylen)
{
    SSL *s = SSL_new(srv), *c = SSL_new(cli);
    BIO *bs = NULL, *bc = NULL;
    if (!s || !c || BIO_new_bio_pair(&bs, 0, &bc, 0) != 1) {
        SSL_free(s);
        SSL_free(c);
        snprintf(why, whylen, "cannot create the TLS objects for the handshake check");
        return -1;
    }
    SSL_set_bio(s, bs, bs);
    SSL_set_bio(c, bc, bc);
    SSL_set_accept_state(s);
    SSL_set_connect_state(c);
    int rc = -1, sdone = 0, cdone = 0;
    /* a TLS 1.2 or 1.3 handshake is a few flights; the bound only stops a
     * peer pair that makes no progress */
    for (int round = 0; round < 64 && !(sdone && cdone); round++) {
        int r = cdone ? 1 : SSL_do_handshake(c);
        if (r == 1)
            cdone = 1;
        else if (SSL_get_error(c, r) != SSL_ERROR_WANT_READ && SSL_get_error(c, r) != SSL_ERROR_WANT_WRITE)
            break;
        r = sdone ? 1 : SSL_do_handshake(s);
        if (r == 1)
            sdone = 1;
        else if (SSL_get_error(s, r) != SSL_ERROR_WANT_READ && SSL_get_error(s, r) != SSL_ERROR_WANT_WRITE)
            break;
    }
    char detail[256];
    long cv = SSL_get_verify_result(c), sv = SSL_get_verify_result(s);
    if (sdone && cdone) {
        rc = 0;
    } else if (cv != X509_V_OK) {
        snprintf(why, whylen, "the server's certificate is not trusted by the client: %s",
                 X509_verify_cert_error_string(cv));
    } else if (sv != X509_V_OK) {
        snprintf(why, whylen, "the client's certificate is not trusted by the server: %s",
                 X509_verify_cert_error_string(sv));
    } else {
        tls_errors(detail, sizeof detail);
        snprintf(why, whylen, "%s", detail[0] ? detail : "no progress");
    }
    ERR_clear_error();
    SSL_free(s);
    SSL_free(c);
    return rc;
}

/* SslEngineValidator.validate: a client from the new stores against a
 * server from the old ones, and a client from the old against a server
 * from the new, so that peers still on either side keep connecting. */
static int check_handshakes(const char *l, SSL_CTX *old_srv, SSL_CTX *old_cli, SSL_CTX *new_srv, SSL_CTX *new_cli,
                            char *err, size_t errlen)
{
    char why[400];
    if (handshake_pair(old_srv, new_cli, why, sizeof why) < 0) {
        snprintf(err, errlen, "Validation of dynamic config update of SSLFactory failed: listener %s: a client with "
                 "the new key and trust stores cannot connect to a server with the current ones: %s", l, why);
        return -1;
    }
    if (handshake_pair(new_srv, old_cli, why, sizeof why) < 0) {
        snprintf(err, errlen, "Validation of dynamic config update of SSLFactory failed: listener %s: a client with "
                 "the current key and trust stores cannot connect to a server with the new ones: %s", l, why);
        return -1;
    }
    return 0;
}

int tls_setup(const struct samsa_config *cfg, char *err, size_t errlen)
{
    /* the broker-wide rules are checked even without a TLS listener, as
     * Kafka's validator does */
    const char *broker_rules = config_get(cfg, "ssl.principal.mapping.rules");
    struct tls_rules *parsed = NULL;
    char reason[256];
    if (broker_rules && tls_rules_parse(broker_rules, &parsed, reason, sizeof reason) < 0)
        FAIL("ssl.principal.mapping.rules: %s", reason);
    tls_rules_free(parsed);
    for (size_t i = 0; i < cfg->n_listeners; i++) {
        const struct config_endpoint *l = &cfg->listeners[i];
        if (l->protocol != SECURITY_SSL && l->protocol != SECURITY_SASL_SSL)
            continue;
        if (listener_known(l->name))
            continue;
        if (n_ctxs == TLS_MAX_LISTENERS)
            FAIL("listener %s: too many TLS listeners (at most %d)", l->name, TLS_MAX_LISTENERS);
        SSL_CTX *ctx;
        if (build(cfg, l->name, l->protocol, false, &ctx, err, errlen) < 0)
            return -1;
        char wr[192], why[256];
        const char *rules = lkey(cfg, l->name, "ssl.principal.mapping.rules", wr, sizeof wr);
        struct tls_rules *r = NULL;
        if (tls_rules_parse(rules ? rules : "DEFAULT", &r, why, sizeof why) < 0) {
            SSL_CTX_free(ctx);
            FAIL("listener %s: %s: %s", l->name, wr, why);
        }
        SSL_CTX *cctx;
        if (peer_side(cfg, l->name, &cctx, err, errlen) < 0) {
            SSL_CTX_free(ctx);
            tls_rules_free(r);
            return -1;
        }
        /* Kafka's SslFactory.configure on the inter-broker listener: its
         * own client must connect to its own server, or peers configured
         * alike could not (a trust store without the key store's CA) */
        char hw[400];
        if (cctx && handshake_pair(ctx, cctx, hw, sizeof hw) < 0) {
            SSL_CTX_free(ctx);
            SSL_CTX_free(cctx);
            tls_rules_free(r);
            FAIL("listener %s: a client with this inter-broker listener's key and trust stores cannot connect to a "
                 "server with them: %s", l->name, hw);
        }
        ctxs[n_ctxs].cctx = cctx;
        snprintf(ctxs[n_ctxs].name, sizeof ctxs[n_ctxs].name, "%s", l->name);
        ctxs[n_ctxs].protocol = l->protocol;
        ctxs[n_ctxs].rules = r;
        ctxs[n_ctxs].sig = ctx_signature(cfg, l->name);
        ctxs[n_ctxs].stamp = file_stamp(cfg, l->name);
        ctxs[n_ctxs].seen = cfg;
        ctxs[n_ctxs++].ctx = ctx;
        slog_info("listener %s: TLS (%s)", l->name, security_protocol_name(l->protocol));
    }
    return 0;
}

SSL_CTX *tls_client_ctx_new(const struct samsa_config *cfg, const char *listener, bool *verify_host, char *err,
                            size_t errlen)
{
    SSL_CTX *ctx;
    if (build(cfg, listener, SECURITY_SSL, true, &ctx, err, errlen) < 0)
        return NULL;
    char wi[192];
    const char *alg = lkey(cfg, listener, "ssl.endpoint.identification.algorithm", wi, sizeof wi);
    /* the key's default is https: NULL here means set to empty (off) */
    if (alg && strcasecmp(alg, "https") != 0) {
        SSL_CTX_free(ctx);
        FAIL_NULL("listener %s: %s=%s: use https or an empty value", listener, wi, alg);
    }
    *verify_host = alg != NULL;
    return ctx;
}

SSL *tls_new_client(SSL_CTX *ctx, int fd, const char *host, bool verify_host)
{
    SSL *s = SSL_new(ctx);
    if (!s)
        return NULL;
    if (SSL_set_fd(s, fd) != 1) {
        SSL_free(s);
        return NULL;
    }
    X509_VERIFY_PARAM *vp = SSL_get0_param(s);
    unsigned char ip[16];
    bool is_ip = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    if (!is_ip)
        SSL_set_tlsext_host_name(s, host); /* SNI only for names (RFC 6066) */
    if (verify_host && (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(vp, host) : X509_VERIFY_PARAM_set1_host(vp, host, 0)) != 1) {
        SSL_free(s);
        return NULL;
    }
    SSL_set_connect_state(s);
    return s;
}

/* Under ctx_lock: listener i's prepared context when it was built from
 * sig, moved to the caller (*ctx, *cctx, *stamp: owned); else nothing. */
static void take_prep(size_t i, const char *sig, SSL_CTX **ctx, SSL_CTX **cctx, char **stamp)
{
    if (!ctxs[i].prep.ctx || strcmp(ctxs[i].prep.sig, sig))
        return;
    *ctx = ctxs[i].prep.ctx;
    *cctx = ctxs[i].prep.cctx;
    *stamp = ctxs[i].prep.stamp;
    ctxs[i].prep.ctx = NULL;
    ctxs[i].prep.cctx = NULL;
    ctxs[i].prep.stamp = NULL;
    prep_clear(&ctxs[i].prep);
}

/* Replaces listener i's context, for later connections, when cfg
 * changed the keys it was built from or the AlterConfigs check left a
 * new one in prep (a key store changed in place, set again under the
 * same path). The AlterConfigs check or tls_follow_config built and
 * checked that context off the worker; only when cfg is seen here before
 * tls_follow_config ran for it is it built and checked here (the same
 * checks), and a failure keeps the previous context, with one line. Net
 * thread. */
static void maybe_reload(size_t i, const struct samsa_config *cfg)
{
    unsigned gen = atomic_load(&prep_gen);
    if (!cfg || (cfg == ctxs[i].seen && gen == ctxs[i].prep_seen))
        return;
    ctxs[i].seen = cfg;
    ctxs[i].prep_seen = gen;
    char *sig = ctx_signature(cfg, ctxs[i].name);
    SSL_CTX *ctx = NULL, *old = NULL, *cctx = NULL, *old_cctx = NULL;
    char *stamp = NULL;
    pthread_mutex_lock(&ctx_lock);
    take_prep(i, sig, &ctx, &cctx, &stamp);
    bool same = !strcmp(sig, ctxs[i].sig), refused = ctxs[i].refused == cfg;
    pthread_mutex_unlock(&ctx_lock);
    if (!ctx && (same || refused)) {
        free(sig);
        return;
    }
    if (!ctx) {
        /* published before tls_follow_config prepared it (a race with
         * the quorum thread): the same checks, here */
        char err[1024];
        const struct config_endpoint *l = NULL;
        for (size_t k = 0; k < cfg->n_listeners && !l; k++)
            if (!strcmp(cfg->listeners[k].name, ctxs[i].name))
                l = &cfg->listeners[k];
        if (l && check_listener(cfg, l, true, err, sizeof err) < 0) {
            slog_error("listener %s: the changed TLS configuration cannot be used; new connections keep the "
                       "previous one: %s", ctxs[i].name, err);
        } else {
            pthread_mutex_lock(&ctx_lock);
            take_prep(i, sig, &ctx, &cctx, &stamp);
            pthread_mutex_unlock(&ctx_lock);
        }
    }
    pthread_mutex_lock(&ctx_lock);
    if (ctx) {
        old = ctxs[i].ctx;
        ctxs[i].ctx = ctx;
        old_cctx = ctxs[i].cctx;
        ctxs[i].cctx = cctx;
        cctx = NULL;
        free(ctxs[i].stamp);
        ctxs[i].stamp = stamp;
        stamp = NULL;
    }
    free(ctxs[i].sig);
    ctxs[i].sig = sig;
    pthread_mutex_unlock(&ctx_lock);
    free(stamp);
    SSL_CTX_free(cctx);
    SSL_CTX_free(old_cctx);
    if (ctx) {
        SSL_CTX_free(old); /* the table's reference; connections keep theirs */
        slog_info("listener %s: TLS key and trust stores reloaded: new connections use them, established ones "
                  "keep theirs", ctxs[i].name);
    }
}

SSL_CTX *tls_listener_ctx_ref(const struct samsa_config *cfg, const char *name)
{
    for (size_t i = 0; i < n_ctxs; i++)
        if (!strcmp(ctxs[i].name, name)) {
            maybe_reload(i, cfg);
            SSL_CTX_up_ref(ctxs[i].ctx);
            return ctxs[i].ctx;
        }
    return NULL;
}

static bool listener_known(const char *name)
{
    for (size_t i = 0; i < n_ctxs; i++)
        if (!strcmp(ctxs[i].name, name))
            return true;
    return false;
}

/* The subject of cert in RFC 2253 form, malloc'ed. */
static char *dn_text(X509 *cert)
{
    BIO *b = BIO_new(BIO_s_mem());
    X509_NAME_print_ex(b, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253);
    char *data;
    long len = BIO_get_mem_data(b, &data);
    char *out = xmalloc((size_t)len + 1);
    memcpy(out, data, (size_t)len);
    out[len] = '\0';
    BIO_free(b);
    return out;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The subject alternative names of cert as a sorted set ("DNS:a, IP
 * Address:127.0.0.1"; Kafka compares them as a set), malloc'ed. */
static char *san_text(X509 *cert)
{
    GENERAL_NAMES *gens = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
    int n = gens ? sk_GENERAL_NAME_num(gens) : 0;
    char **parts = xcalloc((size_t)n + 1, sizeof *parts);
    for (int i = 0; i < n; i++) {
        BIO *b = BIO_new(BIO_s_mem());
        GENERAL_NAME_print(b, sk_GENERAL_NAME_value(gens, i));
        char *data;
        long len = BIO_get_mem_data(b, &data);
        parts[i] = xmalloc((size_t)len + 1);
        memcpy(parts[i], data, (size_t)len);
        parts[i][len] = '\0';
        BIO_free(b);
    }
    GENERAL_NAMES_free(gens);
    qsort(parts, (size_t)n, sizeof *parts, cmp_str);
    struct buf out = BUF_INIT;
    buf_put_u8(&out, '[');
    for (int i = 0; i < n; i++) {
        if (i)
            buf_append(&out, ", ", 2);
        buf_append(&out, parts[i], strlen(parts[i]));
        free(parts[i]);
    }
    free(parts);
    buf_append(&out, "]", 2);
    char *s = xstrdup((const char *)out.data);
    buf_free(&out);
    return s;
}

static bool key_true(const struct samsa_config *cfg, const char *l, const char *key)
{
    char which[192];
    const char *v = lkey(cfg, l, key, which, sizeof which);
    bool b = false;
    return v && config_parse_bool(v, &b) == 0 && b;
}

/* Kafka's SslFactory check of a new key store: the certificate keeps its
 * subject and its alternative names unless ssl.allow.dn.changes /
 * ssl.allow.san.changes say otherwise. */
static int check_same_identity(const struct samsa_config *next, const char *l, X509 *old, X509 *now, char *err,
                               size_t errlen)
{
    int rc = 0;
    char *od = dn_text(old), *nd = dn_text(now), *os = san_text(old), *ns = san_text(now);
    if (!key_true(next, l, "ssl.allow.dn.changes") && strcmp(od, nd)) {
        snprintf(err, errlen, "Validation of dynamic config update of SSLFactory failed: listener %s: Keystore "
                 "DistinguishedName does not match: existing={DN=%s}, new={DN=%s}", l, od, nd);
        rc = -1;
    } else if (!key_true(next, l, "ssl.allow.san.changes") && strcmp(os, ns)) {
        snprintf(err, errlen, "Validation of dynamic config update of SSLFactory failed: listener %s: Keystore "
                 "SubjectAltName does not match: existing={SAN=%s}, new={SAN=%s}", l, os, ns);
        rc = -1;
    }
    free(od);
    free(nd);
    free(os);
    free(ns);
    return rc;
}

/* The check of tls_check_reconfig for one listener (l of next); with
 * prepare a context that passed waits in prep. A change whose context
 * already waits there (checked when it was asked for) is not built
 * again. Reads files: never on a network worker. */
static int check_listener(const struct samsa_config *next, const struct config_endpoint *l, bool prepare, char *err,
                          size_t errlen)
{
    char *sig = ctx_signature(next, l->name), *stamp = file_stamp(next, l->name);
    X509 *old = NULL;
    SSL_CTX *old_srv = NULL, *old_cli = NULL;
    bool same = false, prepared = false;
    size_t at = 0;
    pthread_mutex_lock(&ctx_lock);
    for (size_t k = 0; k < n_ctxs; k++)
        if (!strcmp(ctxs[k].name, l->name)) {
            at = k;
            /* the same keys and the same files: nothing to reload */
            same = !strcmp(ctxs[k].sig, sig) && !strcmp(ctxs[k].stamp, stamp);
            prepared = ctxs[k].prep.ctx && !strcmp(ctxs[k].prep.sig, sig) && !strcmp(ctxs[k].prep.stamp, stamp);
            old = SSL_CTX_get0_certificate(ctxs[k].ctx);
            if (old)
                X509_up_ref(old);
            if (ctxs[k].cctx) {
                old_srv = ctxs[k].ctx;
                old_cli = ctxs[k].cctx;
                SSL_CTX_up_ref(old_srv);
                SSL_CTX_up_ref(old_cli);
            }
        }
    /* a context prepared by an earlier change not yet adopted (the
     * file changed, then changed back) must not be */
    if (same && prepare)
        prep_clear(&ctxs[at].prep);
    pthread_mutex_unlock(&ctx_lock);
    if (same || (prepared && prepare)) {
        X509_free(old);
        SSL_CTX_free(old_srv);
        SSL_CTX_free(old_cli);
        free(sig);
        free(stamp);
        return 0;
    }
    SSL_CTX *ctx = NULL, *cctx = NULL;
    char why[768];
    int rc = build(next, l->name, l->protocol, false, &ctx, why, sizeof why);
    if (rc < 0) {
        snprintf(err, errlen, "Validation of dynamic config update of SSLFactory failed: %s", why);
    } else {
        /* Kafka's SslFactory.validateReconfiguration compares the new
         * key store's certificate with the one in use, also when the
         * same file changed in place */
        X509 *now = SSL_CTX_get0_certificate(ctx);
        if (old && now)
            rc = check_same_identity(next, l->name, old, now, err, errlen);
    }
    if (rc == 0 && peer_side(next, l->name, &cctx, why, sizeof why) < 0) {
        snprintf(err, errlen, "Validation of dynamic config update of SSLFactory failed: %s", why);
        rc = -1;
    }
    /* the inter-broker listener: the new stores must work with the
     * current ones both ways (Kafka's SslEngineValidator) */
    if (rc == 0 && cctx && old_srv)
        rc = check_handshakes(l->name, old_srv, old_cli, ctx, cctx, err, errlen);
    X509_free(old);
    SSL_CTX_free(old_srv);
    SSL_CTX_free(old_cli);
    if (rc == 0 && prepare) {
        pthread_mutex_lock(&ctx_lock);
        prep_clear(&ctxs[at].prep);
        ctxs[at].prep = (struct ctx_prep){ctx, cctx, sig, stamp};
        pthread_mutex_unlock(&ctx_lock);
        atomic_fetch_add(&prep_gen, 1);
    } else {
        SSL_CTX_free(ctx);
        SSL_CTX_free(cctx);
        free(sig);
        free(stamp);
    }
    return rc;
}

int tls_check_reconfig(const struct samsa_config *next, bool prepare, char *err, size_t errlen)
{
    for (size_t i = 0; i < next->n_listeners; i++)
        if (listener_known(next->listeners[i].name) &&
            check_listener(next, &next->listeners[i], prepare, err, errlen) < 0)
            return -1;
    return 0;
}

void tls_follow_config(const struct samsa_config *now)
{
    for (size_t i = 0; i < now->n_listeners; i++) {
        const struct config_endpoint *l = &now->listeners[i];
        char err[1024];
        if (!listener_known(l->name) || check_listener(now, l, true, err, sizeof err) == 0)
            continue;
        pthread_mutex_lock(&ctx_lock);
        for (size_t k = 0; k < n_ctxs; k++)
            if (!strcmp(ctxs[k].name, l->name))
                ctxs[k].refused = now;
        pthread_mutex_unlock(&ctx_lock);
        slog_error("listener %s: the changed TLS configuration cannot be used; new connections keep the previous "
                   "one: %s", l->name, err);
    }
}

bool tls_any(void) { return n_ctxs > 0; }

SSL *tls_new(SSL_CTX *ctx, int fd)
{
    SSL *s = SSL_new(ctx);
    if (!s)
        return NULL;
    if (SSL_set_fd(s, fd) != 1) {
        SSL_free(s);
        return NULL;
    }
    SSL_set_accept_state(s);
    return s;
}

/* Java's RFC 2253 keywords (X500Principal.getName()); any other
 * attribute is written as its OID and the hex of its DER value. */
static const char *rfc2253_keyword(int nid)
{
    switch (nid) {
    case NID_commonName: return "CN";
    case NID_countryName: return "C";
    case NID_localityName: return "L";
    case NID_stateOrProvinceName: return "ST";
    case NID_organizationName: return "O";
    case NID_organizationalUnitName: return "OU";
    case NID_streetAddress: return "STREET";
    case NID_domainComponent: return "DC";
    case NID_userId: return "UID";
    default: return NULL;
    }
}

char *tls_principal(SSL *ssl, const char *listener, char **subject)
{
    *subject = NULL;
    X509 *peer = SSL_get1_peer_certificate(ssl);
    if (!peer)
        return strdup("User:ANONYMOUS");
    BIO *b = BIO_new(BIO_s_mem());
    /* RFC 2253 as Java's X500Principal.getName() writes it: the last RDN
     * first, ',' between RDNs and '+' within one; RFC 2253's specials
     * escaped, characters beyond ASCII as UTF-8 */
    const X509_NAME *name = X509_get_subject_name(peer);
    int n = X509_NAME_entry_count(name), prev_set = -1;
    for (int i = n - 1; i >= 0; i--) {
        const X509_NAME_ENTRY *e = X509_NAME_get_entry(name, i);
        int set = X509_NAME_ENTRY_set(e);
        if (i < n - 1)
            BIO_puts(b, set == prev_set ? "+" : ",");
        prev_set = set;
        const ASN1_OBJECT *obj = X509_NAME_ENTRY_get_object(e);
        const ASN1_STRING *val = X509_NAME_ENTRY_get_data(e);
        const char *kw = rfc2253_keyword(OBJ_obj2nid(obj));
        if (kw) {
            BIO_printf(b, "%s=", kw);
            ASN1_STRING_print_ex(b, val, ASN1_STRFLGS_RFC2253 & ~ASN1_STRFLGS_ESC_MSB);
        } else {
            char oid[128];
            OBJ_obj2txt(oid, sizeof oid, obj, 1);
            BIO_printf(b, "%s=", oid);
            ASN1_STRING_print_ex(b, val, ASN1_STRFLGS_DUMP_ALL | ASN1_STRFLGS_DUMP_DER);
        }
    }
    X509_free(peer);
    char *data;
    long len = BIO_get_mem_data(b, &data);
    char *dn = xmalloc((size_t)len + 1);
    memcpy(dn, data, (size_t)len);
    dn[len] = '\0';
    BIO_free(b);
    char *mapped = NULL;
    for (size_t i = 0; i < n_ctxs; i++)
        if (!strcmp(ctxs[i].name, listener))
            mapped = tls_rules_apply(ctxs[i].rules, dn);
    *subject = dn;
    if (!mapped)
        return NULL;
    char *out = xmalloc(strlen(mapped) + 6);
    sprintf(out, "User:%s", mapped);
    free(mapped);
    return out;
}
