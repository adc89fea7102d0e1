/* Time sources: monotonic for timeouts and durations, wall clock for
 * record timestamps (Kafka timestamps are Unix epoch milliseconds). */
#ifndef SAMSA_UTIL_CLOCK_H
#define SAMSA_UTIL_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* Monotonic clock in nanoseconds (a handler's time: microseconds can round a short one to 0). */
int64_t clock_mono_ns(void);
int64_t clock_mono_us(void);
int64_t clock_mono_ms(void);
int64_t clock_wall_ms(void);

/* A condition variable whose timed waits count on the monotonic clock,
 * and the absolute time ms from now on that clock for
 * pthread_cond_timedwait on it. */
void clock_cond_init_mono(pthread_cond_t *c);
void clock_deadline_after(struct timespec *ts, int64_t ms);

#endif
