/* Line splitting for the console producer (see linereader.h). */
#include "linereader.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "util/clock.h"

void lr_init(struct linereader *lr, int fd)
{
    memset(lr, 0, sizeof *lr);
    lr->fd = fd;
    buf_init(&lr->b);
}

void lr_free(struct linereader *lr) { buf_free(&lr->b); }

/* Finds a terminator in the unread bytes. Returns 1 with the line length
 * and the terminator length, or 0 when more input is needed to know. */
static int find_eol(struct linereader *lr, size_t *len, size_t *term)
{
    const char *p = (const char *)lr->b.data + lr->off;
    size_t n = lr->b.len - lr->off;
    for (size_t i = lr->scan; i < n; i++) {
        if (p[i] == '\n') {
            *len = i;
            *term = 1;
            return 1;
        }
        if (p[i] == '\r') {
            if (i + 1 < n) {
                *len = i;
                *term = p[i + 1] == '\n' ? 2 : 1;
                return 1;
            }
            if (lr->eof) {
                *len = i;
                *term = 1;
                return 1;
            }
            lr->scan = i; /* must see the next byte first */
            return 0;
        }
    }
    lr->scan = n;
    return 0;
}

int lr_next(struct linereader *lr, int timeout_ms, const char **line, size_t *len)
{
    int64_t deadline = timeout_ms >= 0 ? clock_mono_ms() + timeout_ms : 0;
    for (;;) {
        size_t term;
        if (find_eol(lr, len, &term)) {
            *line = (const char *)lr->b.data + lr->off;
            lr->off += *len + term;
            lr->scan = 0;
            return LR_LINE;
        }
        if (lr->eof) {
            size_t n = lr->b.len - lr->off;
            if (n == 0)
                return LR_EOF;
            *line = (const char *)lr->b.data + lr->off;
            *len = n;
            lr->off = lr->b.len;
            lr->scan = 0;
            return LR_LINE;
        }
        /* Drop consumed bytes before reading more; *line of the previous
         * call is no longer in use. */
        if (lr->off > 0) {
            size_t n = lr->b.len - lr->off;
            memmove(lr->b.data, lr->b.data + lr->off, n);
            lr->b.len = n;
            lr->off = 0;
        }
        int wait = -1;
        if (timeout_ms >= 0) {
            int64_t left = deadline - clock_mono_ms();
            if (left <= 0)
                return LR_TIMEOUT;
            wait = (int)(left > 1000000000 ? 1000000000 : left);
        }
        struct pollfd pfd = {lr->fd, POLLIN, 0};
        int rc = poll(&pfd, 1, wait);
        if (rc < 0 && errno == EINTR)
            return LR_EINTR;
        if (rc == 0)
            return LR_TIMEOUT;
        uint8_t *p = buf_reserve(&lr->b, 1 << 16);
        ssize_t r = read(lr->fd, p, 1 << 16);
        if (r > 0) {
            lr->b.len += (size_t)r;
        } else if (r == 0) {
            lr->eof = true;
        } else if (errno == EINTR) {
            return LR_EINTR;
        } else if (errno != EAGAIN) {
            return LR_ERROR;
        }
    }
}
