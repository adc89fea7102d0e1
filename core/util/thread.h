/* What a thread tells the kernel about itself: its name, and whether its
 * work may wait while a network worker needs the CPU. */
#ifndef SAMSA_UTIL_THREAD_H
#define SAMSA_UTIL_THREAD_H

/* Names the calling thread for top -H, perf, gdb and /proc (Linux keeps
 * 15 bytes; longer names are cut). */
void thread_set_name(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Lowers the calling thread's CPU weight (nice +5 over the process's
 * own): for background work such as the log cleaner, which takes a core
 * for as long as it is given one, so that a network worker wanting the
 * CPU at the same moment gets most of it. Work is only slowed, never
 * starved (a nice +5 thread keeps about a third of a nice 0 one's share
 * under contention, all of an idle core). 0 or an errno. */
int thread_set_background(void);

#endif
