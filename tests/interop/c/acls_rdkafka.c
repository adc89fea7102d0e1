/* librdkafka's ACL admin calls (the C library under confluent-kafka; the
 * Debian confluent-kafka 1.7 has no Python binding for them), for
 * interop 97. Compiled by the test:
 *   acls_rdkafka BOOTSTRAP USER PASSWORD create|describe|delete
 * create: two bindings (a literal WRITE ALLOW and a prefixed READ DENY)
 * for User:rk; describe: every ACL of User:rk; delete: the prefixed one.
 * Prints one line per result: "error CODE" or an ACL as
 * TYPE|NAME|PATTERN|PRINCIPAL|HOST|OPERATION|PERMISSION, sorted by the
 * caller. Exit 0 unless the call itself failed. */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_acl(const rd_kafka_AclBinding_t *a)
{
    printf("%s|%s|%s|%s|%s|%s|%s\n", rd_kafka_ResourceType_name(rd_kafka_AclBinding_restype(a)),
           rd_kafka_AclBinding_name(a), rd_kafka_ResourcePatternType_name(rd_kafka_AclBinding_resource_pattern_type(a)),
           rd_kafka_AclBinding_principal(a), rd_kafka_AclBinding_host(a),
           rd_kafka_AclOperation_name(rd_kafka_AclBinding_operation(a)),
           rd_kafka_AclPermissionType_name(rd_kafka_AclBinding_permission_type(a)));
}

int main(int argc, char **argv)
{
    if (argc != 5)
        return 2;
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *kv[][2] = {{"bootstrap.servers", argv[1]}, {"security.protocol", "SASL_PLAINTEXT"},
                           {"sasl.mechanism", "PLAIN"}, {"sasl.username", argv[2]}, {"sasl.password", argv[3]}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        if (rd_kafka_conf_set(conf, kv[i][0], kv[i][1], err, sizeof err) != RD_KAFKA_CONF_OK) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!rk) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_ANY);
    rd_kafka_AdminOptions_set_request_timeout(opts, 15000, err, sizeof err);
    const char *what = argv[4];
    if (!strcmp(what, "create")) {
        rd_kafka_AclBinding_t *b[2];
        b[0] = rd_kafka_AclBinding_new(RD_KAFKA_RESOURCE_TOPIC, "rk-t", RD_KAFKA_RESOURCE_PATTERN_LITERAL, "User:rk",
                                       "*", RD_KAFKA_ACL_OPERATION_WRITE, RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW, err,
                                       sizeof err);
        b[1] = rd_kafka_AclBinding_new(RD_KAFKA_RESOURCE_TOPIC, "rk-", RD_KAFKA_RESOURCE_PATTERN_PREFIXED, "User:rk",
                                       "*", RD_KAFKA_ACL_OPERATION_READ, RD_KAFKA_ACL_PERMISSION_TYPE_DENY, err,
                                       sizeof err);
        rd_kafka_CreateAcls(rk, b, 2, opts, q);
        rd_kafka_AclBinding_destroy_array(b, 2);
    } else if (!strcmp(what, "describe")) {
        rd_kafka_AclBindingFilter_t *f = rd_kafka_AclBindingFilter_new(
            RD_KAFKA_RESOURCE_ANY, NULL, RD_KAFKA_RESOURCE_PATTERN_ANY, "User:rk", NULL, RD_KAFKA_ACL_OPERATION_ANY,
            RD_KAFKA_ACL_PERMISSION_TYPE_ANY, err, sizeof err);
        rd_kafka_DescribeAcls(rk, f, opts, q);
        rd_kafka_AclBinding_destroy(f);
    } else {
        rd_kafka_AclBindingFilter_t *f[1];
        f[0] = rd_kafka_AclBindingFilter_new(RD_KAFKA_RESOURCE_TOPIC, "rk-", RD_KAFKA_RESOURCE_PATTERN_PREFIXED, NULL,
                                             NULL, RD_KAFKA_ACL_OPERATION_ANY, RD_KAFKA_ACL_PERMISSION_TYPE_ANY, err,
                                             sizeof err);
        rd_kafka_DeleteAcls(rk, f, 1, opts, q);
        rd_kafka_AclBinding_destroy_array(f, 1);
    }
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
    int rc = 0;
    if (!ev) {
        fprintf(stderr, "no result within 30 s\n");
        rc = 1;
    } else if (rd_kafka_event_error(ev)) {
        printf("error %d\n", rd_kafka_event_error(ev));
    } else if (!strcmp(what, "create")) {
        size_t n;
        const rd_kafka_acl_result_t **r = rd_kafka_CreateAcls_result_acls(rd_kafka_event_CreateAcls_result(ev), &n);
        for (size_t i = 0; i < n; i++) {
            const rd_kafka_error_t *e = rd_kafka_acl_result_error(r[i]);
            printf("error %d\n", e ? rd_kafka_error_code(e) : 0);
        }
    } else if (!strcmp(what, "describe")) {
        size_t n;
        const rd_kafka_AclBinding_t **a = rd_kafka_DescribeAcls_result_acls(rd_kafka_event_DescribeAcls_result(ev), &n);
        for (size_t i = 0; i < n; i++)
            print_acl(a[i]);
    } else {
        size_t n;
        const rd_kafka_DeleteAcls_result_response_t **r =
            rd_kafka_DeleteAcls_result_responses(rd_kafka_event_DeleteAcls_result(ev), &n);
        for (size_t i = 0; i < n; i++) {
            const rd_kafka_error_t *e = rd_kafka_DeleteAcls_result_response_error(r[i]);
            printf("error %d\n", e ? rd_kafka_error_code(e) : 0);
            size_t m;
            const rd_kafka_AclBinding_t **a = rd_kafka_DeleteAcls_result_response_matching_acls(r[i], &m);
            for (size_t k = 0; k < m; k++)
                print_acl(a[k]);
        }
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(opts);
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy(rk);
    return rc;
}
