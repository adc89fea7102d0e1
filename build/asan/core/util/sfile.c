#include "util/sfile.h"

#include <stdlib.h>
#include <unistd.h>

#include "util/buf.h"

struct sfile *sfile_wrap(int fd)
{
    struct sfile *f = xmalloc(sizeof *f);
    f->fd = fd;
    atomic_init(&f->refs, 1);
    return f;
}

struct sfile *sfile_ref(struct sfile *f)
{
    atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
    return f;
}

void sfile_unref(struct sfile *f)
{
    if (!f)
        return;
    if (atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) == 1) {
        close(f->fd);
        free(f);
    }
}
