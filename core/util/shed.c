#include "util/shed.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "util/slog.h"

bool shed_once_a_second(_Atomic int64_t *last)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t prev = atomic_load(last);
    return ts.tv_sec != prev && atomic_compare_exchange_strong(last, &prev, (int64_t)ts.tv_sec);
}

int shed_retry(const struct shed_op *op)
{
    int e = 0;
    for (int t = 0; t < op->tries; t++) {
        e = op->attempt(op->arg);
        if (e == 0)
            return 0;
        if (e == EINTR) {
            t--;
            continue;
        }
        if (!op->is_resource(e))
            return e;
        if (op->resource_errors)
            (*op->resource_errors)++;
        size_t shed = op->shed(op->arg);
        if (t == 0 && shed_once_a_second(op->warned))
            slog_warn("%s: %s %s %s; released %zu and retrying (this line at most once a second)", op->who,
                      strerror(e), op->doing, op->path, shed);
    }
    return e;
}
