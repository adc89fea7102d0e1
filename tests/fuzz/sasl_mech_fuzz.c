/* Fuzz target: the SASL mechanisms' parsers of client messages (the
 * modules' sources compiled in with a fake host): SASL/PLAIN's message
 * and JAAS/users configuration, SCRAM's client-first and client-final
 * messages, and a whole SCRAM server session fed the input as its two
 * client messages (split at the first 0xff byte). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define SAMSA_SASL_NO_ENTRY
#include "../../modules/sasl-plain/plain.c"
#include "../../modules/sasl-scram/scram.c"

static void fake_log(samsa_host_t *h, int level, const char *fmt, ...)
{
    (void)h;
    (void)level;
    (void)fmt;
}
static const char *fake_config_get(samsa_host_t *h, const char *key)
{
    (void)h;
    (void)key;
    return "alice:alice-secret,bob:x";
}
static void fake_metric_add(samsa_metric_t *m, int64_t d)
{
    (void)m;
    (void)d;
}
static int fake_scram_get(samsa_host_t *h, int mech, const char *user, samsa_scram_credential_t *cred)
{
    (void)h;
    (void)user;
    memset(cred->salt, 7, 16);
    cred->salt_len = 16;
    cred->iterations = 4096;
    cred->stored_key_len = cred->server_key_len = mech == SAMSA_SCRAM_SHA_256 ? 32 : 64;
    memset(cred->stored_key, 1, sizeof cred->stored_key);
    memset(cred->server_key, 2, sizeof cred->server_key);
    return SAMSA_OK;
}
static samsa_host_api_t fake_api = {
    .struct_size = sizeof(samsa_host_api_t),
    .log = fake_log,
    .config_get = fake_config_get,
    .metric_add = fake_metric_add,
    .scram_credential_get = fake_scram_get,
};

struct tout {
    samsa_out_t pub;
    uint8_t buf[8192];
    size_t len;
};
static uint8_t *tout_reserve(samsa_out_t *o, size_t min, size_t *avail)
{
    struct tout *t = (struct tout *)o;
    if (min > sizeof t->buf - t->len)
        return NULL;
    *avail = sizeof t->buf - t->len;
    return t->buf + t->len;
}
static void tout_commit(samsa_out_t *o, size_t n) { ((struct tout *)o)->len += n; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_plain.api = &fake_api;
    g_scram.api = &fake_api;
    char err[256];
    /* PLAIN */
    struct plain_msg pm;
    int nt;
    plain_parse(data, size, &pm, &nt);
    char text[4096], pw[256];
    size_t tl = size < sizeof text - 1 ? size : sizeof text - 1;
    memcpy(text, data, tl);
    text[tl] = '\0';
    plain_jaas_password(text, "alice", 5, pw, sizeof pw);
    plain_users_password(text, "bob", 3, pw, sizeof pw);
    samsa_sasl_conn_t conn = {.struct_size = sizeof conn, .listener = "SASL_PLAINTEXT"};
    void *ps = NULL;
    plain_session_new(&g_plain, &conn, &ps);
    struct tout out = {.pub = {.struct_size = sizeof(samsa_out_t), .reserve = tout_reserve, .commit = tout_commit}};
    plain_step(&g_plain, ps, data, size, &out.pub, NULL, err, sizeof err);
    plain_session_free(&g_plain, ps);
    /* SCRAM parsers */
    static struct scram_client_first cf;
    static struct scram_client_final cfin;
    const char *why;
    scram_parse_client_first(data, size, &cf, &why);
    scram_parse_client_final(data, size, &cfin, &why);
    /* a SCRAM session: first message up to 0xff, the rest second */
    const uint8_t *sep = memchr(data, 0xff, size);
    size_t n1 = sep ? (size_t)(sep - data) : size;
    for (int m = 0; m < 2; m++) {
        void *ss = NULL;
        scram_fixed_server_nonce = "SNONCE";
        scram_session_new(&scram_mechs[m], &conn, &ss);
        out.len = 0;
        int rc = scram_step(&scram_mechs[m], ss, data, n1, &out.pub, NULL, err, sizeof err);
        if (rc == SAMSA_SASL_CONTINUE && sep) {
            out.len = 0;
            scram_step(&scram_mechs[m], ss, sep + 1, size - n1 - 1, &out.pub, NULL, err, sizeof err);
        }
        scram_session_free(&scram_mechs[m], ss);
    }
    return 0;
}
