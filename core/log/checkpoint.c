#include "log/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log/fsutil.h"
#include "util/fdcache.h"
#include "util/buf.h"

/* Large enough for any log dir's partitions; a bigger file is damage. */
#define CKPT_MAX_BYTES (256u * 1024 * 1024)
#define CKPT_VERSION 0

/* Parses a decimal int64 ending at a space, newline or NUL. */
static bool parse_i64(const char **p, int64_t *out)
{
    const char *s = *p;
    bool neg = *s == '-';
    if (neg)
        s++;
    if (*s < '0' || *s > '9')
        return false;
    uint64_t v = 0;
    while (*s >= '0' && *s <= '9') {
        unsigned d = (unsigned)(*s - '0');
        if (v > ((uint64_t)INT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
        s++;
    }
    *out = neg ? -(int64_t)v : (int64_t)v;
    *p = s;
    return true;
}

/* The whole file, NUL-terminated, sized by fstat (fs_read_small would
 * allocate its maximum up front). */
static int read_file(const char *path, char **data)
{
    int fd = fdc_open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return errno;
    struct stat st;
    int e = fstat(fd, &st) != 0 ? errno : st.st_size > (off_t)CKPT_MAX_BYTES ? EFBIG : 0;
    if (e) {
        close(fd);
        return e;
    }
    size_t want = (size_t)st.st_size, got = 0;
    char *b = xmalloc(want + 1);
    while (got < want) {
        ssize_t r = read(fd, b + got, want - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    b[got] = '\0';
    *data = b;
    return 0;
}

/* Splits the file into lines; checks version and count. *lines points
 * at the first entry line. */
static int read_header(const char *path, char **data, const char **lines, int64_t *count)
{
    int e = read_file(path, data);
    if (e)
        return e;
    const char *p = *data;
    int64_t version;
    if (!parse_i64(&p, &version) || *p != '\n' || version != CKPT_VERSION)
        goto bad;
    p++;
    if (!parse_i64(&p, count) || *p != '\n' || *count < 0)
        goto bad;
    *lines = p + 1;
    return 0;
bad:
    free(*data);
    *data = NULL;
    return EINVAL;
}

int ckpt_read(const char *path, struct ckpt_entry **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    char *data;
    const char *p;
    int64_t count;
    int e = read_header(path, &data, &p, &count);
    if (e)
        return e;
    struct ckpt_entry *v = NULL;
    size_t k = 0, cap = 0;
    for (int64_t i = 0; i < count; i++) {
        /* Topic names have no spaces: the first space ends the name. */
        const char *sp = strchr(p, ' ');
        const char *nl = strchr(p, '\n');
        if (!sp || !nl || sp > nl || sp == p)
            goto bad;
        const char *q = sp + 1;
        int64_t part, off;
        if (!parse_i64(&q, &part) || *q != ' ' || part < 0 || part > INT32_MAX)
            goto bad;
        q++;
        if (!parse_i64(&q, &off) || *q != '\n')
            goto bad;
        if (k == cap) {
            cap = cap ? cap * 2 : 16;
            v = xrealloc(v, cap * sizeof *v);
        }
        v[k].topic = xstrndup(p, (size_t)(sp - p));
        v[k].partition = (int32_t)part;
        v[k].offset = off;
        k++;
        p = q + 1;
    }
    if (*p != '\0')
        goto bad;
    free(data);
    *out = v;
    *n = k;
    return 0;
bad:
    ckpt_free(v, k);
    free(data);
    return EINVAL;
}

void ckpt_free(struct ckpt_entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(e[i].topic);
    free(e);
}

int ckpt_write(const char *path, const struct ckpt_entry *e, size_t n)
{
    struct buf b = BUF_INIT;
    char line[64];
    int len = snprintf(line, sizeof line, "%d\n%zu\n", CKPT_VERSION, n);
    buf_append(&b, line, (size_t)len);
    for (size_t i = 0; i < n; i++) {
        buf_append(&b, e[i].topic, strlen(e[i].topic));
        len = snprintf(line, sizeof line, " %" PRId32 " %" PRId64 "\n", e[i].partition, e[i].offset);
        buf_append(&b, line, (size_t)len);
    }
    int rc = fs_write_atomic(path, b.data, b.len);
    buf_free(&b);
    return rc;
}

int ckpt_read_epochs(const char *path, struct epoch_entry **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    char *data;
    const char *p;
    int64_t count;
    int e = read_header(path, &data, &p, &count);
    if (e)
        return e;
    struct epoch_entry *v = NULL;
    size_t k = 0, cap = 0;
    for (int64_t i = 0; i < count; i++) {
        int64_t epoch, off;
        if (!parse_i64(&p, &epoch) || *p != ' ' || epoch < 0 || epoch > INT32_MAX)
            goto bad;
        p++;
        if (!parse_i64(&p, &off) || *p != '\n' || off < 0)
            goto bad;
        p++;
        if (k == cap) {
            cap = cap ? cap * 2 : 8;
            v = xrealloc(v, cap * sizeof *v);
        }
        v[k].epoch = (int32_t)epoch;
        v[k].start_offset = off;
        k++;
    }
    if (*p != '\0')
        goto bad;
    free(data);
    *out = v;
    *n = k;
    return 0;
bad:
    free(v);
    free(data);
    return EINVAL;
}

int ckpt_write_epochs(const char *path, const struct epoch_entry *e, size_t n)
{
    struct buf b = BUF_INIT;
    char line[64];
    int len = snprintf(line, sizeof line, "%d\n%zu\n", CKPT_VERSION, n);
    buf_append(&b, line, (size_t)len);
    for (size_t i = 0; i < n; i++) {
        len = snprintf(line, sizeof line, "%" PRId32 " %" PRId64 "\n", e[i].epoch, e[i].start_offset);
        buf_append(&b, line, (size_t)len);
    }
    int rc = fs_write_atomic(path, b.data, b.len);
    buf_free(&b);
    return rc;
}
