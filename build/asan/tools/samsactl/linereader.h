/* Line input for the console producer: reads a file descriptor in large
 * chunks and splits lines the way Java's BufferedReader.readLine does
 * (terminated by "\n", "\r\n" or a lone "\r"), with a timeout so the
 * producer can send lingering batches while its input is idle. Lines of
 * any length are returned whole (the buffer grows to fit). */
#ifndef SAMSACTL_LINEREADER_H
#define SAMSACTL_LINEREADER_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"

#define LR_LINE 1
#define LR_EOF 0
#define LR_ERROR (-1)   /* read(2) failed; errno says why */
#define LR_TIMEOUT (-2) /* no whole line within the timeout */
#define LR_EINTR (-3)   /* a signal arrived while waiting */

struct linereader {
    int fd;
    struct buf b;
    size_t off;  /* start of the unread part of b */
    size_t scan; /* bytes from off already searched for a terminator */
    bool eof;
};

void lr_init(struct linereader *lr, int fd);
void lr_free(struct linereader *lr);
/* Next line, without its terminator. *line points into the reader and is
 * valid until the next call. timeout_ms < 0 waits for ever. A last line
 * without a terminator is still a line, as in Java. */
int lr_next(struct linereader *lr, int timeout_ms, const char **line, size_t *len);

#endif
