/* Stall detector for an event loop, as Redis's latency monitor: the time
 * a loop pass spends running callbacks (from the end of its poll to the
 * start of the next), logged when one pass is longer than
 * samsa.loop.stall.warn.ms. A long pass delays every other connection or
 * partition served by that loop; the line names the loop so an operator
 * (or tools/bench/latency.sh) can tell a stall inside samsa from a client
 * or a machine that was slow. The time is wall time: it includes any
 * wait for a CPU while the callbacks ran. */
#ifndef SAMSA_UTIL_LOOPWATCH_H
#define SAMSA_UTIL_LOOPWATCH_H

#include <ev.h>
#include <stdint.h>

struct loopwatch {
    ev_check check;
    ev_prepare prepare;
    int64_t pass_start_ns; /* 0: not in a pass */
    int64_t next_line_ms;  /* one line per 10 s per loop */
    int64_t slow, longest_ns; /* since the last line */
    char name[24];
};

/* The threshold for every loop of the process, in milliseconds; 0 turns
 * the detector off. Set once at startup (samsa.loop.stall.warn.ms). */
void loopwatch_set_threshold_ms(int64_t ms);

/* Starts watching loop from the calling thread, which runs it; name
 * (copied) goes into the log line. lw is owned by the caller and must
 * stay valid until loopwatch_stop on the same thread. */
void loopwatch_start(struct loopwatch *lw, struct ev_loop *loop, const char *name);
void loopwatch_stop(struct loopwatch *lw, struct ev_loop *loop);

/* Passes over the threshold since the process started, all loops. */
uint64_t loopwatch_stalls(void);

#endif
