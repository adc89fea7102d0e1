#include "proto/kacl.h"

#include <ctype.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

static const char *const op_names[] = {"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER",
                                       "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS",
                                       "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS"};
static const char *const type_names[] = {"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID",
                                         "DELEGATION_TOKEN", "USER"};
static const char *const pattern_names[] = {"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"};
static const char *const perm_names[] = {"UNKNOWN", "ANY", "DENY", "ALLOW"};

#define COUNT(tab) (sizeof(tab) / sizeof(tab)[0])
#define NAME_OF(tab, v) ((v) >= 0 && (size_t)(v) < COUNT(tab) ? (tab)[(v)] : "UNKNOWN")

const char *kacl_operation_name(int code) { return NAME_OF(op_names, code); }
const char *kacl_resource_type_name(int code) { return NAME_OF(type_names, code); }
const char *kacl_pattern_type_name(int code) { return NAME_OF(pattern_names, code); }
const char *kacl_permission_name(int code) { return NAME_OF(perm_names, code); }

/* "IdempotentWrite" and "idempotent_write" both name IDEMPOTENT_WRITE:
 * compare ignoring case and underscores. */
static bool same(const char *a, const char *b)
{
    for (;;) {
        while (*a == '_')
            a++;
        while (*b == '_')
            b++;
        if (!*a || !*b)
            return !*a && !*b;
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return false;
        a++;
        b++;
    }
}

static int parse(const char *const *tab, size_t n, const char *name)
{
    for (size_t i = 1; name && i < n; i++) /* UNKNOWN is never a choice */
        if (same(tab[i], name))
            return (int)i;
    return -1;
}

int kacl_operation_parse(const char *name) { return parse(op_names, COUNT(op_names), name); }
int kacl_pattern_type_parse(const char *name) { return parse(pattern_names, COUNT(pattern_names), name); }
