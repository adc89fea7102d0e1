/* Server log: one line per event on stderr, safe from any thread. */
#ifndef SAMSA_UTIL_SLOG_H
#define SAMSA_UTIL_SLOG_H

#include <stdarg.h>

enum slog_level { SLOG_DEBUG = 0, SLOG_INFO, SLOG_WARN, SLOG_ERROR };

/* Messages below this level are dropped. Default SLOG_INFO. */
void slog_set_level(enum slog_level lvl);
enum slog_level slog_get_level(void);
/* Name shown in every line ("samsa", "samsactl"). */
void slog_set_ident(const char *ident);

void slog(enum slog_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void slogv(enum slog_level lvl, const char *fmt, va_list ap);

#define slog_debug(...) \
    do { if (slog_get_level() <= SLOG_DEBUG) slog(SLOG_DEBUG, __VA_ARGS__); } while (0)
#define slog_info(...) slog(SLOG_INFO, __VA_ARGS__)
#define slog_warn(...) slog(SLOG_WARN, __VA_ARGS__)
#define slog_error(...) slog(SLOG_ERROR, __VA_ARGS__)

#endif
