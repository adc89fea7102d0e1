#include "log/batch_cursor.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/buf.h"

void bcur_init(struct bcursor *c, int fd, int64_t pos, int64_t limit, size_t readahead)
{
    c->fd = fd;
    c->pos = pos;
    c->limit = limit;
    c->readahead = readahead < RB_HEADER_SIZE ? RB_HEADER_SIZE : readahead;
    c->buf = NULL;
    c->cap = 0;
    c->buf_pos = 0;
    c->buf_len = 0;
    c->err = 0;
    c->reason = NULL;
}

void bcur_free(struct bcursor *c)
{
    free(c->buf);
    c->buf = NULL;
    c->cap = c->buf_len = 0;
}

/* Makes [pos, pos + n) available in the buffer; the caller has checked
 * that it lies before limit. Returns BCUR_OK, BCUR_IOERR, or BCUR_BAD when
 * the file is shorter than the range (someone truncated it under us). */
static int fill(struct bcursor *c, int64_t pos, size_t n)
{
    if (pos >= c->buf_pos && pos + (int64_t)n <= c->buf_pos + (int64_t)c->buf_len)
        return BCUR_OK;
    size_t want = n > c->readahead ? n : c->readahead;
    if ((int64_t)want > c->limit - pos)
        want = (size_t)(c->limit - pos);
    if (want > c->cap) {
        free(c->buf);
        c->buf = xmalloc(want);
        c->cap = want;
    }
    c->buf_pos = pos;
    c->buf_len = 0;
    while (c->buf_len < want) {
        ssize_t r = pread(c->fd, c->buf + c->buf_len, want - c->buf_len, pos + (int64_t)c->buf_len);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            c->err = errno;
            c->buf_len = 0;
            return BCUR_IOERR;
        }
        if (r == 0)
            break;
        c->buf_len += (size_t)r;
    }
    if (c->buf_len < n) {
        c->reason = "file shorter than expected";
        return BCUR_BAD;
    }
    return BCUR_OK;
}

int bcur_header(struct bcursor *c, struct rb_header *h)
{
    if (c->pos >= c->limit)
        return BCUR_END;
    if (c->limit - c->pos < RB_HEADER_SIZE) {
        c->reason = "partial batch header";
        return BCUR_BAD;
    }
    int rc = fill(c, c->pos, RB_HEADER_SIZE);
    if (rc != BCUR_OK)
        return rc;
    if (rb_parse_header(c->buf + (c->pos - c->buf_pos), RB_HEADER_SIZE, h) != 0) {
        c->reason = h->batch_length < RB_MIN_BATCH_LENGTH ? "bad batch length" : "bad magic";
        return BCUR_BAD;
    }
    if (rb_batch_size(h) > c->limit - c->pos) {
        c->reason = "partial batch";
        return BCUR_BAD;
    }
    return BCUR_OK;
}

int bcur_batch(struct bcursor *c, size_t size, const uint8_t **p)
{
    int rc = fill(c, c->pos, size);
    if (rc != BCUR_OK)
        return rc;
    *p = c->buf + (c->pos - c->buf_pos);
    return BCUR_OK;
}
