/* Stall detector for an event loop, as Redis's latency monitor: the time
 * a loop pass spends running callbacks (from the end of its poll to the
 * start of the next), logged when one pass is longer than
 * samsa.loop.stall.warn.ms. A long pass delays every other connection or
 * partition served by that loop; the line names the loop so an operator
 * (or tools/bench/latency.sh) can tell a stall inside samsa from a client
 * or a machine that was slow. Each long pass is measured twice: in wall
 * time (what the loop's other clients waited) and in the thread's CPU
 * time (what its callbacks computed or spent in the kernel). On a machine
 * with fewer cores than busy threads the two differ by the time the
 * thread waited for a CPU: a pass long in wall time but short on CPU was
 * descheduled, one long on CPU is work of samsa's to bound. */
#ifndef SAMSA_UTIL_LOOPWATCH_H
#define SAMSA_UTIL_LOOPWATCH_H

#include <ev.h>
#include <stdint.h>

struct loopwatch {
    ev_check check;
    ev_prepare prepare;
    int64_t pass_start_ns;     /* 0: not in a pass */
    int64_t pass_start_cpu_ns; /* the thread's CPU time then */
    int64_t next_line_ms;      /* one line per 10 s per loop */
    /* since the last line: passes over the threshold in wall time, those
     * of them over it on CPU too, the longest of each */
    int64_t slow, slow_cpu, longest_ns, longest_cpu_ns;
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

/* Passes over the threshold since the process started, all loops: in
 * wall time, and those that were over it in the thread's CPU time too. */
uint64_t loopwatch_stalls(void);
uint64_t loopwatch_cpu_stalls(void);

#endif
