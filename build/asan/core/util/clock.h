/* Time sources: monotonic for timeouts and durations, wall clock for
 * record timestamps (Kafka timestamps are Unix epoch milliseconds). */
#ifndef SAMSA_UTIL_CLOCK_H
#define SAMSA_UTIL_CLOCK_H

#include <stdint.h>

int64_t clock_mono_us(void);
int64_t clock_mono_ms(void);
int64_t clock_wall_ms(void);

#endif
