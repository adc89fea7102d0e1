/* Fuzz target: the OAUTHBEARER module's parsers (modules/sasl-oauthbearer),
 * which read what any client sends before it is authenticated: the
 * initial response, and the token it carries (base64, JSON, claims).
 * The input is tried as an initial response, as a whole token (unsecured,
 * and signed against no keys), as a JWKS and as a JSON text. Nothing may crash or read out of bounds; a token that
 * validates names a principal "User:<non-blank>" and an expiry after
 * the check time. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SAMSA_SASL_NO_ENTRY
#include "../../modules/sasl-oauthbearer/oauthbearer.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ob_initial m;
    if (ob_parse_initial(data, size, &m) == 0 && (!m.token || m.token < (const char *)data ||
                                                  m.token + m.token_len > (const char *)data + size))
        abort();
    struct ob_opts o;
    char why[200];
    ob_opts_from_jaas("X required unsecuredValidatorRequiredScope=\"a b\";", &o, why, sizeof why);
    struct ob_result r;
    const int64_t now = 1700000000000;
    if (ob_validate((const char *)data, size, &o, now, &r) == 0) {
        if (strncmp(r.principal, "User:", 5) != 0 || !r.principal[5] || r.expiry_ms <= now - 1000)
            abort();
    } else if (!r.error_json[0]) {
        abort();
    }
    /* as a JWKS, and as a signed token against what it held */
    struct ob_jwks ks;
    if (ob_jwks_parse(data, size, &ks) < 0)
        memset(&ks, 0, sizeof ks);
    struct ob_secured so = {.sub_claim = "sub", .scope_claim = "scope", .audience = "a,b", .clock_skew_s = 30};
    if (ob_validate_signed((const char *)data, size, &ks, &so, now, &r) == 0 &&
        (strncmp(r.principal, "User:", 5) != 0 || !r.principal[5]))
        abort();
    ob_jwks_free(&ks);
    struct ob_claims cl;
    if (ob_parse_object(data, size, &cl) == 0) {
        if (cl.n < 0 || cl.n > OB_MAX_CLAIMS)
            abort();
        ob_claims_free(&cl);
    }
    return 0;
}
