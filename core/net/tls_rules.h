/* ssl.principal.mapping.rules: Kafka's SslPrincipalMapper. The rules
 * turn a client certificate's subject (RFC 2253, as tls_principal writes
 * it) into the name of the principal: a comma- or newline-separated list
 * of DEFAULT (the subject as it is) and RULE:pattern/replacement/[LU]
 * (when pattern matches the whole subject, the replacement with $1.. of
 * its groups, then lower- or upper-cased), tried in order.
 *
 * Patterns are POSIX extended regular expressions (libc's), not Java's:
 * lazy quantifiers (".*?") are taken as greedy, which gives the same
 * name for the patterns Kafka's documentation shows; Java-only syntax
 * (lookaround, \d, named groups) is refused at startup. */
#ifndef SAMSA_NET_TLS_RULES_H
#define SAMSA_NET_TLS_RULES_H

#include <stddef.h>

struct tls_rules;

/* Parses text; returns 0 with *out (free with tls_rules_free), or -1 with
 * the reason in err. */
int tls_rules_parse(const char *text, struct tls_rules **out, char *err, size_t errlen);
void tls_rules_free(struct tls_rules *r);
/* The name for subject dn (malloc'ed, the caller frees it), or NULL when
 * no rule applies (Kafka then refuses the connection). */
char *tls_rules_apply(const struct tls_rules *r, const char *dn);

#endif
