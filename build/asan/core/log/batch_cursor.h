/* Walks the record batches of a byte range of a segment file, reading
 * with pread(2) through a small buffer so that hopping from header to
 * header (batchLength tells where the next one starts) costs one system
 * call per buffer, not per batch. Used by segment recovery (whole batches,
 * to check CRCs) and by reads and timestamp searches (headers only).
 *
 * The cursor never looks past `limit`, so a reader bounded by a segment's
 * published size never sees a batch that is still being written. It
 * holds no reference on the file: the caller keeps the fd open. */
#ifndef SAMSA_LOG_BATCH_CURSOR_H
#define SAMSA_LOG_BATCH_CURSOR_H

#include <stddef.h>
#include <stdint.h>

#include "proto/record_batch.h"

enum bcur_status {
    BCUR_IOERR = -2, /* pread failed; c->err holds errno */
    BCUR_BAD = -1,   /* torn or malformed batch at c->pos; c->reason says which */
    BCUR_END = 0,    /* c->pos == limit */
    BCUR_OK = 1,
};

struct bcursor {
    int fd;
    int64_t pos;   /* file position of the current batch */
    int64_t limit; /* the range ends here */
    size_t readahead;
    uint8_t *buf;
    size_t cap;
    int64_t buf_pos; /* file position of buf[0] */
    size_t buf_len;
    int err;
    const char *reason;
};

/* readahead: how much to read at once; 4 KiB suits a Fetch, which looks
 * at a few headers, and 1 MiB a sequential recovery scan. */
void bcur_init(struct bcursor *c, int fd, int64_t pos, int64_t limit, size_t readahead);
void bcur_free(struct bcursor *c);

/* Parses the header of the batch at c->pos. BCUR_OK: *h is filled and the
 * whole batch, [c->pos, c->pos + rb_batch_size(h)), lies before limit.
 * BCUR_BAD for fewer than RB_HEADER_SIZE bytes left, a header that
 * rb_parse_header refuses, or a batch running past limit. */
int bcur_header(struct bcursor *c, struct rb_header *h);

/* After BCUR_OK from bcur_header: the whole batch of size bytes at c->pos,
 * read into the cursor's buffer. *p is valid until the next call. */
int bcur_batch(struct bcursor *c, size_t size, const uint8_t **p);

static inline void bcur_advance(struct bcursor *c, int64_t size) { c->pos += size; }

#endif
