/* Partition choice for samsactl's producer, identical to the Java
 * client's: a keyed record goes to toPositive(murmur2(key)) % partitions
 * (org.apache.kafka.common.utils.Utils.murmur2 and toPositive, as in
 * BuiltInPartitioner.partitionForKey), so samsactl and any Java, kafkajs
 * (JavaCompatiblePartitioner) or librdkafka (murmur2_random) producer put
 * the same key in the same partition. Unkeyed records go round-robin. */
#ifndef SAMSACTL_PARTITIONER_H
#define SAMSACTL_PARTITIONER_H

#include <stddef.h>
#include <stdint.h>

#include "murmur2.h"

struct plugin_cap;
struct plugin_registry;
struct samsa_config;

/* Partition for a key of len bytes among n > 0 partitions. */
int32_t partition_for_key(const void *key, size_t len, int32_t n);

struct round_robin {
    uint32_t next;
};
/* Next partition among n > 0, in order 0, 1, ..., n-1, 0, ... */
int32_t round_robin_next(struct round_robin *rr, int32_t n);

/* A partitioner of the plugin kind (include/samsa/partitioner.h), as
 * --partitioner names it: a script (a path ending in ".lua": the lua
 * module, loaded into a registry of its own with
 * plugin.lua.partitioner.script set to it), or the name of a
 * partitioner capability of this build's modules. */
struct plugin_partitioner {
    const struct plugin_cap *cap;
    struct plugin_registry *own; /* owned; NULL for a named partitioner */
    struct samsa_config *cfg;    /* owned; the config own was made with */
    char name[128];
};
/* Returns 0, or -1 with one line in err. */
int plugin_partitioner_open(struct plugin_partitioner *pp, const char *spec, char *err, size_t errlen);
/* The plugin's partition for a record (value too when the plugin takes
 * it; len -1: null), or -1 for the default partitioner. */
int32_t plugin_partitioner_choose(const struct plugin_partitioner *pp, const char *topic, const void *key,
                                  int32_t key_len, const void *value, int32_t value_len, int32_t n);
void plugin_partitioner_close(struct plugin_partitioner *pp);

#endif
