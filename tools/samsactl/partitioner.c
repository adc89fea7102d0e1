/* Kafka's default key partitioning, and plugin partitioners (see
 * partitioner.h). */
#include "partitioner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "plugin/registry.h"

int32_t partition_for_key(const void *key, size_t len, int32_t n)
{
    return kafka_to_positive(kafka_murmur2(key, len)) % n;
}

int32_t round_robin_next(struct round_robin *rr, int32_t n)
{
    return (int32_t)(rr->next++ % (uint32_t)n);
}

static bool is_script(const char *spec)
{
    size_t n = strlen(spec);
    return n > 4 && strcmp(spec + n - 4, ".lua") == 0;
}

int plugin_partitioner_open(struct plugin_partitioner *pp, const char *spec, char *err, size_t errlen)
{
    memset(pp, 0, sizeof *pp);
    snprintf(pp->name, sizeof pp->name, "%s", spec);
    const char *dir = getenv("SAMSA_PLUGIN_DIR");
    if (!dir || !*dir)
        dir = plugin_default_dir();
    if (!is_script(spec)) {
        pp->cap = plugin_find(plugin_tools_registry(), SAMSA_CAP_PARTITIONER, spec);
        if (!pp->cap) {
            snprintf(err, errlen, "no partitioner '%s' in this build's modules (in %s); a script must end in .lua",
                     spec, dir);
            return -1;
        }
        return 0;
    }
    pp->cfg = config_new();
    char cerr[256];
    if (config_set(pp->cfg, "plugin.lua.partitioner.script", spec, cerr, sizeof cerr) < 0) {
        snprintf(err, errlen, "partitioner script '%s': %s", spec, cerr);
        plugin_partitioner_close(pp);
        return -1;
    }
    pp->own = plugin_registry_new(pp->cfg);
    char lerr[768];
    if (plugin_load_name(pp->own, dir, "lua", lerr, sizeof lerr) < 0) {
        snprintf(err, errlen, "partitioner script '%s' cannot be used: %s", spec, lerr);
        plugin_partitioner_close(pp);
        return -1;
    }
    pp->cap = plugin_find(pp->own, SAMSA_CAP_PARTITIONER, "lua");
    if (!pp->cap) {
        snprintf(err, errlen, "partitioner script '%s': the lua module offers no partitioner", spec);
        plugin_partitioner_close(pp);
        return -1;
    }
    return 0;
}

int32_t plugin_partitioner_choose(const struct plugin_partitioner *pp, const char *topic, const void *key,
                                  int32_t key_len, const void *value, int32_t value_len, int32_t n)
{
    const samsa_partitioner_t *vt = &pp->cap->vt.partitioner;
    if (vt->partition_record)
        return vt->partition_record(pp->cap->state, topic, key, key_len, value, value_len, n);
    return vt->partition(pp->cap->state, topic, key, key_len, n);
}

void plugin_partitioner_close(struct plugin_partitioner *pp)
{
    plugin_registry_free(pp->own);
    pp->own = NULL;
    if (pp->cfg)
        config_free(pp->cfg);
    pp->cfg = NULL;
    pp->cap = NULL;
}
