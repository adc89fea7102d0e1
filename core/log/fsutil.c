#include "log/fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fdcache.h"
#include "util/buf.h"

void (*fs_sync_observer)(const char *path);

int fs_sync_dir(const char *dir)
{
    if (fs_sync_observer)
        fs_sync_observer(dir);
    int fd = fdc_open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (fd < 0)
        return errno;
    int e = 0;
    while (fsync(fd) != 0) {
        if (errno != EINTR) {
            e = errno;
            break;
        }
    }
    close(fd);
    return e;
}

int fs_sync_parent(const char *path)
{
    char *copy = xstrdup(path);
    char *slash = strrchr(copy, '/');
    int e;
    if (!slash)
        e = fs_sync_dir(".");
    else if (slash == copy)
        e = fs_sync_dir("/");
    else {
        *slash = '\0';
        e = fs_sync_dir(copy);
    }
    free(copy);
    return e;
}

int fs_mkdirs(const char *path, bool *created)
{
    return fs_mkdirs_ex(path, created, true);
}

int fs_mkdirs_ex(const char *path, bool *created, bool sync)
{
    if (created)
        *created = false;
    struct stat st;
    if (stat(path, &st) == 0)
        return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
    if (errno != ENOENT)
        return errno;
    char *copy = xstrdup(path);
    /* Create each missing ancestor first, left to right. */
    for (char *p = copy + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(copy, 0755) == 0) {
            int e = sync ? fs_sync_parent(copy) : 0;
            if (e) {
                free(copy);
                return e;
            }
        } else if (errno != EEXIST) {
            int e = errno;
            free(copy);
            return e;
        }
        *p = '/';
    }
    free(copy);
    if (mkdir(path, 0755) != 0)
        return errno == EEXIST ? 0 : errno;
    if (created)
        *created = true;
    return sync ? fs_sync_parent(path) : 0;
}

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (w == 0)
            return ENOSPC;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int fs_write_atomic(const char *path, const void *data, size_t len)
{
    size_t n = strlen(path) + 5;
    char *tmp = xmalloc(n);
    snprintf(tmp, n, "%s.tmp", path);
    int e = 0;
    int fd = fdc_open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        e = errno;
        goto out;
    }
    e = write_all(fd, data, len);
    if (!e && fs_sync_observer)
        fs_sync_observer(path);
    if (!e && fsync(fd) != 0)
        e = errno;
    if (close(fd) != 0 && !e)
        e = errno;
    if (!e && rename(tmp, path) != 0)
        e = errno;
    if (e)
        unlink(tmp);
    else
        e = fs_sync_parent(path);
out:
    free(tmp);
    return e;
}

int fs_write_new(const char *path, const void *data, size_t len)
{
    int fd = fdc_open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return errno;
    int e = write_all(fd, data, len);
    if (close(fd) != 0 && !e)
        e = errno;
    return e;
}

int fs_read_small(const char *path, size_t max, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    int fd = fdc_open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return errno;
    /* The buffer starts at the file's size, not at max: max is a sanity
     * bound (256 MiB for a producer snapshot), and allocating it for
     * every small file costs a mapping per call (under ASan, the
     * poisoning of its shadow made each log open take a second). */
    struct stat st;
    size_t cap = fstat(fd, &st) == 0 && st.st_size > 0 ? (size_t)st.st_size : 0;
    if (cap > max)
        cap = max;
    cap += 2;
    if (cap < 256)
        cap = 256 < max + 2 ? 256 : max + 2;
    char *b = xmalloc(cap);
    size_t got = 0;
    int e = 0;
    /* Read one byte past max to tell "exactly max" from "larger". */
    while (got < max + 1) {
        if (got + 1 >= cap) {
            /* the file grew since fstat */
            cap = cap > (max + 2) / 2 ? max + 2 : cap * 2;
            b = xrealloc(b, cap);
        }
        size_t room = cap - 1 - got;
        if (room > max + 1 - got)
            room = max + 1 - got;
        ssize_t r = read(fd, b + got, room);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            e = errno;
            break;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (!e && got > max)
        e = EFBIG;
    if (e) {
        free(b);
        return e;
    }
    b[got] = '\0';
    *out = b;
    *len = got;
    return 0;
}

int fs_remove_tree(const char *dir)
{
    DIR *d = fdc_opendir(dir);
    if (!d)
        return errno;
    int e = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        size_t n = strlen(dir) + strlen(de->d_name) + 2;
        char *p = xmalloc(n);
        snprintf(p, n, "%s/%s", dir, de->d_name);
        struct stat st;
        int r;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            r = fs_remove_tree(p);
        else
            r = unlink(p) == 0 ? 0 : errno;
        if (r && !e)
            e = r;
        free(p);
    }
    closedir(d);
    if (rmdir(dir) != 0 && !e)
        e = errno;
    return e;
}
