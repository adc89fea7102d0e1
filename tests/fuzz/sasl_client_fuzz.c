/* Fuzz target: the SASL client's handling of a peer's tokens
 * (net/sasl_client.c), which a node reads from whatever answers on its
 * peers' listeners. The input is split at the first '\n' into the
 * server-first and server-final messages of a SCRAM exchange (SHA-256
 * or SHA-512 by the first byte), then the whole input is fed to a PLAIN
 * client. Nothing may crash or read out of bounds; a step answers 1, 0
 * or -1 only, and a SCRAM exchange never completes on a forged final
 * message (the server signature cannot verify by chance). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/sasl_client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *mech = data[0] & 1 ? "SCRAM-SHA-512" : "SCRAM-SHA-256";
    data++;
    size--;
    const uint8_t *nl = memchr(data, '\n', size);
    size_t first_len = nl ? (size_t)(nl - data) : size;
    char err[256];
    struct sasl_client *c = sasl_client_new(mech, "user", "pencil", err, sizeof err);
    if (!c)
        abort();
    sasl_client_set_nonce(c, "fyko+d2lbbFgONRv9qkxdawL");
    uint8_t *tok;
    size_t len;
    if (sasl_client_step(c, NULL, 0, &tok, &len, err, sizeof err) != 1)
        abort();
    free(tok);
    int rc = sasl_client_step(c, data, first_len, &tok, &len, err, sizeof err);
    if (rc != 1 && rc != -1)
        abort();
    free(tok);
    if (rc == 1 && nl) {
        rc = sasl_client_step(c, nl + 1, size - first_len - 1, &tok, &len, err, sizeof err);
        if (rc != -1) /* 0 would be a forged signature accepted */
            abort();
        free(tok);
    }
    sasl_client_free(c);

    struct sasl_client *p = sasl_client_new("PLAIN", "u", "p", err, sizeof err);
    if (sasl_client_step(p, NULL, 0, &tok, &len, err, sizeof err) != 1 || len != 4)
        abort();
    free(tok);
    rc = sasl_client_step(p, data, size, &tok, &len, err, sizeof err);
    if (rc != 0 || tok)
        abort();
    sasl_client_free(p);
    return 0;
}
