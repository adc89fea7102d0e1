/* ssl.principal.mapping.rules (net/tls_rules.c): Kafka's rule syntax and
 * the names its SslPrincipalMapper gives for the subjects of its
 * documentation and tests, and the rules it refuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "net/tls_rules.h"

static char *map(const char *rules, const char *dn)
{
    struct tls_rules *r = NULL;
    char err[256];
    assert_int_equal(tls_rules_parse(rules, &r, err, sizeof err), 0);
    char *name = tls_rules_apply(r, dn);
    tls_rules_free(r);
    return name;
}

static void expect(const char *rules, const char *dn, const char *want)
{
    char *got = map(rules, dn);
    if (!want) {
        assert_null(got);
        return;
    }
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void test_default_and_rules(void **st)
{
    (void)st;
    const char *dn = "CN=kafka1,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown";
    expect("DEFAULT", dn, dn);
    /* Kafka's documentation examples */
    expect("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", dn, "kafka1");
    expect("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L,DEFAULT", "CN=Kafka1,OU=ServiceUsers,O=x", "kafka1");
    expect("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/U,DEFAULT", dn, "KAFKA1");
    expect("RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L", dn, "kafka1@serviceusers");
    /* the first rule that applies wins; none: NULL (refused) */
    expect("RULE:^CN=(.*?),OU=Other.*$/$1/, RULE:^CN=([^,]*),.*$/user-$1/", dn, "user-kafka1");
    expect("RULE:^CN=(.*?),OU=Other.*$/$1/", dn, NULL);
    /* the pattern must match the whole subject (Java's matches()) */
    expect("RULE:CN=kafka1/x/,DEFAULT", dn, dn);
    /* newlines separate too; \/ is a slash in the pattern, \$ a dollar */
    expect("RULE:^CN=a\\/b$/slash\\$/\nDEFAULT", "CN=a/b", "slash$");
    expect("  DEFAULT  ", "CN=x", "CN=x");
}

static void test_refused(void **st)
{
    (void)st;
    struct tls_rules *r = NULL;
    char err[256];
    assert_int_equal(tls_rules_parse("", &r, err, sizeof err), -1);
    assert_int_equal(tls_rules_parse("RULE:^CN=(.*)$/$1", &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "invalid rule"));
    assert_int_equal(tls_rules_parse("NOPE", &r, err, sizeof err), -1);
    assert_int_equal(tls_rules_parse("RULE:^CN=(.*$/$1/", &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "rule pattern"));
    assert_null(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_and_rules),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
