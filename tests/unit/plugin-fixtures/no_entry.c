/* Fixture: a shared object without samsa_plugin_entry (it exports a
 * function with a near-miss name instead). */
#include "fixture_common.h"

static const samsa_plugin_info_t info = {SAMSA_PLUGIN_INFO_HEADER, .name = "no-entry", .init = fixture_ok_init};

__attribute__((visibility("default"))) const samsa_plugin_info_t *samsa_plugin_entry_v2(void);
const samsa_plugin_info_t *samsa_plugin_entry_v2(void) { return &info; }
