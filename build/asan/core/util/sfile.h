/* A reference-counted open file. Segments own one reference; a queued
 * Fetch response holds another for each file range it will sendfile(),
 * so a segment deleted by retention stays readable until sent. */
#ifndef SAMSA_UTIL_SFILE_H
#define SAMSA_UTIL_SFILE_H

#include <stdatomic.h>

struct sfile {
    int fd;
    atomic_int refs;
};

/* Takes ownership of fd; the returned handle has one reference. */
struct sfile *sfile_wrap(int fd);
struct sfile *sfile_ref(struct sfile *f);
/* Drops one reference; the last one closes the fd and frees f. */
void sfile_unref(struct sfile *f);

#endif
