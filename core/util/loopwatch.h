/* Stall detector for an event loop, as Redis's latency monitor: the time
 * a loop pass spends running callbacks (from the end of its poll to the
 * start of the next), logged when one pass is longer than
 * samsa.loop.stall.warn.ms. A long pass delays every other connection or
 * partition served by that loop; the line names the loop so an operator
 * (or tools/bench/latency.sh) can tell a stall inside samsa from a client
 * or a machine that was slow. Each long pass's wall time (what the
 * loop's other clients waited) is split as the scheduler saw the thread:
 * on a CPU (what its callbacks computed, in user space or the kernel),
 * waiting for one (run_delay: the machine had fewer free cores than busy
 * threads), and the rest, blocked asleep in the kernel (a disk read, a
 * lock, dirty-page throttling in write()). Long on CPU or blocked is
 * samsa's to bound; waiting for a CPU is the machine's. */
#ifndef SAMSA_UTIL_LOOPWATCH_H
#define SAMSA_UTIL_LOOPWATCH_H

#include <ev.h>
#include <stdint.h>

struct loopwatch {
    ev_check check;
    ev_prepare prepare;
    int64_t pass_start_ns;       /* 0: not in a pass */
    int64_t pass_start_cpu_ns;   /* the thread's CPU time then (or up to 1 ms before) */
    int64_t pass_start_delay_ns; /* its time waiting for a CPU then; -1: unknown */
    int64_t read_ns;             /* when those two were read */
    int schedstat_fd;            /* /proc/thread-self/schedstat of the loop's thread; -1: none */
    int64_t next_line_ms;        /* one line per 10 s per loop */
    /* since the last line: passes over the threshold in wall time, those
     * of them over it on CPU and blocked, the longest of each */
    int64_t slow, slow_cpu, slow_blocked, longest_ns, longest_cpu_ns, longest_blocked_ns;
    char name[24];
};

/* The threshold for every loop of the process, in milliseconds; 0 turns
 * the detector off. Set once at startup (samsa.loop.stall.warn.ms). */
void loopwatch_set_threshold_ms(int64_t ms);

/* Starts watching loop from the calling thread, which runs it; name
 * (copied) goes into the log line. lw is owned by the caller and must
 * stay valid until loopwatch_stop on the same thread. Holds one file
 * descriptor (the thread's schedstat) until loopwatch_stop. */
void loopwatch_start(struct loopwatch *lw, struct ev_loop *loop, const char *name);
void loopwatch_stop(struct loopwatch *lw, struct ev_loop *loop);

/* Passes over the threshold since the process started, all loops: in
 * wall time; those of them over it in the thread's CPU time; those
 * blocked in the kernel for longer than it. */
uint64_t loopwatch_stalls(void);
uint64_t loopwatch_cpu_stalls(void);
uint64_t loopwatch_blocked_stalls(void);

#endif
