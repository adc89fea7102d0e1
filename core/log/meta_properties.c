#include "log/meta_properties.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "util/fdcache.h"
#include "util/buf.h"

static void fmt(char *dst, size_t n, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void fmt(char *dst, size_t n, const char *f, ...)
{
    if (!dst || !n)
        return;
    va_list ap;
    va_start(ap, f);
    vsnprintf(dst, n, f, ap);
    va_end(ap);
}

static char *path_join(const char *dir, const char *name)
{
    size_t dl = strlen(dir), nl = strlen(name);
    bool slash = dl && dir[dl - 1] == '/';
    char *p = xmalloc(dl + nl + 2);
    memcpy(p, dir, dl);
    if (!slash)
        p[dl++] = '/';
    memcpy(p + dl, name, nl + 1);
    return p;
}

int meta_properties_init(struct meta_properties *mp, int32_t node_id, const char *cluster_id,
                         char *err, size_t errlen)
{
    memset(mp, 0, sizeof *mp);
    mp->version = 1;
    mp->node_id = node_id;
    if (cluster_id) {
        size_t n = strlen(cluster_id);
        if (!n || n >= sizeof mp->cluster_id) {
            fmt(err, errlen, "cluster id '%s' must be 1 to %zu characters", cluster_id,
                sizeof mp->cluster_id - 1);
            return -1;
        }
        memcpy(mp->cluster_id, cluster_id, n + 1);
    } else {
        uint8_t id[UUID_LEN];
        if (uuid_random(id) < 0) {
            fmt(err, errlen, "cannot generate a cluster id: %s", strerror(errno));
            return -1;
        }
        uuid_to_string(id, mp->cluster_id);
    }
    if (uuid_random_directory_id(mp->directory_id) < 0) {
        fmt(err, errlen, "cannot generate a directory id: %s", strerror(errno));
        return -1;
    }
    mp->has_directory_id = true;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Reading                                                             */

struct read_ctx {
    char *version, *cluster_id, *node_id, *directory_id;
};

static int read_cb(void *p, const char *key, const char *value, int line)
{
    struct read_ctx *rc = p;
    char **dst = !strcmp(key, "version")        ? &rc->version
                 : !strcmp(key, "cluster.id")   ? &rc->cluster_id
                 : !strcmp(key, "node.id")      ? &rc->node_id
                 : !strcmp(key, "directory.id") ? &rc->directory_id
                                                : NULL;
    /* Other keys (broker.id of old files, anything a tool added) are
     * ignored, as Kafka ignores them. */
    if (dst) {
        free(*dst);
        *dst = xstrdup(value);
    }
    return 0;
}

int meta_properties_read(const char *dir, struct meta_properties *out, char *err,
                         size_t errlen)
{
    char *path = path_join(dir, META_PROPERTIES_FILE);
    struct read_ctx rc = {NULL, NULL, NULL, NULL};
    struct buf b = BUF_INIT;
    int ret = -1;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) {
            ret = 1;
        } else {
            fmt(err, errlen, "%s: %s", path, strerror(errno));
        }
        goto out;
    }
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_append(&b, chunk, n);
    int rd_err = ferror(f);
    fclose(f);
    if (rd_err) {
        fmt(err, errlen, "%s: read error", path);
        goto out;
    }
    char perr[128] = "";
    if (properties_parse((const char *)b.data, b.len, read_cb, &rc, perr, sizeof perr) != 0) {
        fmt(err, errlen, "%s:%s", path, perr);
        goto out;
    }

    memset(out, 0, sizeof *out);
    int64_t v;
    if (!rc.version || (config_parse_long(rc.version, &v) == 0 && v == 0)) {
        fmt(err, errlen, "%s: version 0 (a ZooKeeper-mode directory) is not supported; samsa "
            "needs version=1", path);
        goto out;
    }
    if (config_parse_long(rc.version, &v) < 0 || v != 1) {
        fmt(err, errlen, "%s: unknown meta.properties version '%s'", path, rc.version);
        goto out;
    }
    out->version = 1;
    if (!rc.node_id) {
        fmt(err, errlen, "%s: node.id was not found", path);
        goto out;
    }
    if (config_parse_long(rc.node_id, &v) < 0 || v < 0 || v > INT32_MAX) {
        fmt(err, errlen, "%s: node.id '%s' is not a base-10 node id", path, rc.node_id);
        goto out;
    }
    out->node_id = (int32_t)v;
    if (!rc.cluster_id || !rc.cluster_id[0]) {
        fmt(err, errlen, "%s: cluster.id was not found", path);
        goto out;
    }
    if (strlen(rc.cluster_id) >= sizeof out->cluster_id) {
        fmt(err, errlen, "%s: cluster.id '%s' is too long", path, rc.cluster_id);
        goto out;
    }
    strcpy(out->cluster_id, rc.cluster_id);
    if (rc.directory_id) {
        if (uuid_from_string(rc.directory_id, out->directory_id) < 0) {
            fmt(err, errlen, "%s: directory.id '%s' is not a Kafka UUID", path, rc.directory_id);
            goto out;
        }
        out->has_directory_id = true;
    }
    ret = 0;
out:
    free(rc.version);
    free(rc.cluster_id);
    free(rc.node_id);
    free(rc.directory_id);
    buf_free(&b);
    free(path);
    return ret;
}

/* ------------------------------------------------------------------ */
/* Writing                                                             */

/* Escapes a value as Properties.store does for the characters that
 * would otherwise change its meaning. */
static void put_escaped(struct buf *b, const char *s)
{
    for (size_t i = 0; s[i]; i++) {
        char c = s[i];
        switch (c) {
        case '\t':
            buf_append(b, "\\t", 2);
            break;
        case '\n':
            buf_append(b, "\\n", 2);
            break;
        case '\r':
            buf_append(b, "\\r", 2);
            break;
        case '\f':
            buf_append(b, "\\f", 2);
            break;
        case '=':
        case ':':
        case '#':
        case '!':
        case '\\':
            buf_put_u8(b, '\\');
            buf_put_u8(b, (uint8_t)c);
            break;
        case ' ':
            if (i == 0)
                buf_put_u8(b, '\\');
            buf_put_u8(b, ' ');
            break;
        default:
            buf_put_u8(b, (uint8_t)c);
        }
    }
}

static void put_line(struct buf *b, const char *key, const char *value)
{
    buf_append(b, key, strlen(key));
    buf_put_u8(b, '=');
    put_escaped(b, value);
    buf_put_u8(b, '\n');
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int meta_properties_write(const char *dir, const struct meta_properties *mp, char *err,
                          size_t errlen)
{
    if (mp->version != 1 || !mp->cluster_id[0] || mp->node_id < 0) {
        fmt(err, errlen, "%s: refusing to write meta.properties without version 1, a cluster "
            "id and a node id", dir);
        return -1;
    }
    /* Kafka writes via Properties.store: an empty comment, the date as
     * java.util.Date prints it, then the keys in sorted order. */
    struct buf b = BUF_INIT;
    char line[128];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(line, sizeof line, "#\n#%a %b %d %H:%M:%S %Z %Y\n", &tm);
    buf_append(&b, line, strlen(line));
    put_line(&b, "cluster.id", mp->cluster_id);
    if (mp->has_directory_id) {
        char id[UUID_STR_LEN + 1];
        uuid_to_string(mp->directory_id, id);
        put_line(&b, "directory.id", id);
    }
    snprintf(line, sizeof line, "%d", mp->node_id);
    put_line(&b, "node.id", line);
    put_line(&b, "version", "1");

    char *path = path_join(dir, META_PROPERTIES_FILE);
    char *tmp = path_join(dir, META_PROPERTIES_FILE ".tmp");
    int ret = -1, fd = -1;
    fd = fdc_open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fmt(err, errlen, "%s: %s", tmp, strerror(errno));
        goto out;
    }
    if (write_all(fd, b.data, b.len) < 0 || fsync(fd) < 0) {
        fmt(err, errlen, "%s: %s", tmp, strerror(errno));
        goto out_unlink;
    }
    if (close(fd) < 0) {
        fd = -1;
        fmt(err, errlen, "%s: %s", tmp, strerror(errno));
        goto out_unlink;
    }
    fd = -1;
    if (rename(tmp, path) < 0) {
        fmt(err, errlen, "rename %s to %s: %s", tmp, path, strerror(errno));
        goto out_unlink;
    }
    /* The rename is durable only once the directory entry is. */
    int dfd = fdc_open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (dfd < 0 || fsync(dfd) < 0) {
        fmt(err, errlen, "%s: %s", dir, strerror(errno));
        if (dfd >= 0)
            close(dfd);
        goto out;
    }
    close(dfd);
    ret = 0;
    goto out;
out_unlink:
    unlink(tmp);
out:
    if (fd >= 0)
        close(fd);
    free(tmp);
    free(path);
    buf_free(&b);
    return ret;
}

int meta_properties_check(const struct meta_properties *mp, const char *dir, int32_t node_id,
                          const char *cluster_id, char *err, size_t errlen)
{
    if (mp->node_id != node_id) {
        fmt(err, errlen, "%s/%s: stored node.id %d does not match the configured node.id %d. If "
            "you moved your data, make sure the configured node.id matches; to start a new node, "
            "remove all data in its log directories.", dir, META_PROPERTIES_FILE, mp->node_id,
            node_id);
        return -1;
    }
    if (cluster_id && strcmp(mp->cluster_id, cluster_id)) {
        fmt(err, errlen, "%s/%s: cluster.id %s does not match cluster.id %s of the other log "
            "directories", dir, META_PROPERTIES_FILE, mp->cluster_id, cluster_id);
        return -1;
    }
    return 0;
}
