#include "util/slog.h"

#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static enum slog_level min_level = SLOG_INFO;
static const char *ident = "samsa";

void slog_set_level(enum slog_level lvl) { min_level = lvl; }
enum slog_level slog_get_level(void) { return min_level; }
void slog_set_ident(const char *id) { ident = id; }

void slogv(enum slog_level lvl, const char *fmt, va_list ap)
{
    static const char *names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    if (lvl < min_level)
        return;
    char line[2048];
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%04d-%02d-%02d %02d:%02d:%02d.%03d %s %s: ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, (int)(tv.tv_usec / 1000), ident, names[lvl]);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    if (m < 0)
        m = 0;
    size_t len = (size_t)n + (size_t)m;
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    /* One write(2) per line keeps lines whole when threads log at once. */
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

void slog(enum slog_level lvl, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    slogv(lvl, fmt, ap);
    va_end(ap);
}
