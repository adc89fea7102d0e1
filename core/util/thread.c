#include "util/thread.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

void thread_set_name(const char *fmt, ...)
{
    char name[16];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    (void)pthread_setname_np(pthread_self(), name);
}

int thread_set_background(void)
{
    /* On Linux nice is per thread: PRIO_PROCESS with a thread id sets
     * just that one. */
    pid_t tid = (pid_t)syscall(SYS_gettid);
    errno = 0;
    int cur = getpriority(PRIO_PROCESS, (id_t)tid);
    if (cur == -1 && errno)
        return errno;
    if (setpriority(PRIO_PROCESS, (id_t)tid, cur + 5 > 19 ? 19 : cur + 5) != 0)
        return errno;
    return 0;
}
