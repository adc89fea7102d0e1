/* SPDX-License-Identifier: Apache-2.0
 *
 * template: the smallest complete samsa plugin, to copy and rename.
 *
 * 1. Copy this folder, rename template.c and the name "template" below
 *    (the descriptor's name must equal the file name without .so, and
 *    the name operators put in plugins=).
 * 2. Pick the capability kinds you provide from <samsa/*.h> (codec,
 *    sasl, assignor, tier, authz, partitioner), fill a static const
 *    vtable for each and register it in init.
 * 3. make (GNUmakefile: pkg-config --cflags --libs samsa-plugin), copy
 *    the .so to plugin.dir, add the name to plugins=.
 *
 * Rules that keep a plugin loading across samsa releases (plugin.h):
 * fill the descriptor with SAMSA_PLUGIN_INFO_HEADER; start every vtable
 * with its struct_size (sizeof); test SAMSA_HOST_HAS(api, f) before
 * calling a host function newer than ABI 1.0; free only what you
 * allocated; never block in a worker callback.
 *
 * This template provides a partitioner that sends every keyed record to
 * partition (first key byte % count) and defers unkeyed records to the
 * caller's default. Settings: plugin.template.enabled=false turns it
 * into a pure DEFER. */
#include <string.h>

#include <samsa/partitioner.h>
#include <samsa/plugin.h>

struct template_state {
    int enabled;
};

static struct template_state g_state = {1};

static int32_t tp_partition(void *cap_state, const char *topic, const uint8_t *key, int32_t key_len,
                            int32_t partition_count)
{
    const struct template_state *s = cap_state;
    (void)topic;
    if (!s->enabled || key_len <= 0 || partition_count <= 0)
        return SAMSA_PARTITION_DEFER;
    return (int32_t)(key[0] % (uint32_t)partition_count);
}

static const samsa_partitioner_t template_partitioner = {
    .hdr = {.struct_size = sizeof(samsa_partitioner_t), .kind = SAMSA_CAP_PARTITIONER, .name = "template"},
    .partition = tp_partition,
};

static int tp_init(samsa_host_t *host, const samsa_host_api_t *api, void **state, char *errstr, size_t errlen)
{
    const char *enabled = api->config_get(host, "enabled");
    if (enabled && strcmp(enabled, "true") != 0 && strcmp(enabled, "false") != 0) {
        /* One line, shown by samsa as "init failed: ..." */
        strncpy(errstr, "plugin.template.enabled must be true or false", errlen - 1);
        errstr[errlen - 1] = '\0';
        return SAMSA_EINVAL;
    }
    g_state.enabled = !enabled || strcmp(enabled, "true") == 0;
    *state = &g_state;
    return api->register_capability(host, &template_partitioner.hdr, &g_state);
}

static const samsa_plugin_info_t template_info = {
    SAMSA_PLUGIN_INFO_HEADER,
    .name = "template",
    .version = "0.1.0",
    .description = "template plugin: a key-byte partitioner",
    .license = "Apache-2.0",
    .init = tp_init,
};

SAMSA_PLUGIN_DECLARE(template, template_info)
