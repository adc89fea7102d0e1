/* Kafka's ACL enums as they travel (AclOperation, ResourceType,
 * PatternType, AclPermissionType): names for codes, and codes for the
 * names operators type (kafka-acls.sh accepts "Read", "READ",
 * "IdempotentWrite", "IDEMPOTENT_WRITE", any case). */
#ifndef SAMSA_PROTO_KACL_H
#define SAMSA_PROTO_KACL_H

/* Kafka's enum names ("READ", "TOPIC", "PREFIXED", "ALLOW"); "UNKNOWN"
 * for a code out of range. Static strings. */
const char *kacl_operation_name(int code);
const char *kacl_resource_type_name(int code);
const char *kacl_pattern_type_name(int code);
const char *kacl_permission_name(int code);

/* The code of a name, or -1. */
int kacl_operation_parse(const char *name);
int kacl_pattern_type_parse(const char *name);

#endif
