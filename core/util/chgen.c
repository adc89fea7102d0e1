/* The table of change generations (util/chgen.h). */
#include "util/chgen.h"

struct chgen_slot chgen_table[CHGEN_SLOTS];
_Atomic uint64_t chgen_everything;
_Atomic int32_t chgen_watchers;
