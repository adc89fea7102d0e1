/* The assignor modules (modules/assignor-uniform, modules/assignor-range)
 * as the unit tests use them: their sources are compiled into the test
 * program with -DSAMSA_PLUGIN_STATIC (tests/unit/coord.mk) and loaded
 * through plugin_load_static, the path a static module takes in the
 * server, so a test calls the module's own code through its vtable. */
#ifndef TESTS_UNIT_ASSIGNOR_MODULES_H
#define TESTS_UNIT_ASSIGNOR_MODULES_H

#include <stdio.h>
#include <stdlib.h>

#include "plugin/registry.h"
#include "samsa/assignor.h"

const samsa_plugin_info_t *samsa_plugin_entry_assignor_uniform(void);
const samsa_plugin_info_t *samsa_plugin_entry_assignor_range(void);

/* Loads both modules into reg; aborts the test program when one is
 * refused (that is a bug of the module, not a test outcome). */
static inline void assignor_modules_load(struct plugin_registry *reg)
{
    char err[256];
    if (plugin_load_static(reg, samsa_plugin_entry_assignor_uniform, "assignor-uniform", err, sizeof err) < 0 ||
        plugin_load_static(reg, samsa_plugin_entry_assignor_range, "assignor-range", err, sizeof err) < 0) {
        fprintf(stderr, "assignor modules refused: %s\n", err);
        abort();
    }
}

/* The module's assignor called name ("uniform", "range"), from a
 * registry of this program that lives until exit; NULL for another name. */
static inline const samsa_assignor_t *module_assignor(const char *name)
{
    static struct plugin_registry *reg;
    if (!reg) {
        reg = plugin_registry_new(NULL);
        assignor_modules_load(reg);
    }
    const struct plugin_cap *cap = plugin_find(reg, SAMSA_CAP_ASSIGNOR, name);
    return cap ? &cap->vt.assignor : NULL;
}

#endif
