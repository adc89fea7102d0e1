#include "log/partition_metadata.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/fsutil.h"
#include "proto/kerr.h"
#include "util/buf.h"
#include "util/slog.h"
#include "util/uuid.h"

/* Generous: the real file is 42 bytes. */
#define MAX_FILE_SIZE 4096

static char *meta_path(const char *dir)
{
    size_t n = strlen(dir) + sizeof(PARTITION_METADATA_FILE) + 1;
    char *p = xmalloc(n);
    snprintf(p, n, "%s/%s", dir, PARTITION_METADATA_FILE);
    return p;
}

/* Returns the value of "key: value" on the line starting at *pos, and
 * moves *pos to the next line; NULL when the line is not that key. As
 * Kafka's reader, surrounding blanks around the value are ignored. */
static char *line_value(char **pos, const char *key)
{
    char *line = *pos;
    char *nl = strchr(line, '\n');
    if (nl) {
        *nl = '\0';
        *pos = nl + 1;
    } else {
        *pos = line + strlen(line);
    }
    size_t kl = strlen(key);
    if (strncmp(line, key, kl) != 0 || line[kl] != ':')
        return NULL;
    char *v = line + kl + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    char *end = v + strlen(v);
    while (end > v && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
        *--end = '\0';
    return v;
}

int partition_metadata_read(const char *dir, bool *found, kuuid_t *topic_id)
{
    *found = false;
    char *path = meta_path(dir);
    char *text;
    size_t len;
    int e = fs_read_small(path, MAX_FILE_SIZE, &text, &len);
    if (e == ENOENT) {
        free(path);
        return 0;
    }
    if (e == 0 && len == 0) {
        /* Created but never written: a crash during a partition's
         * creation, before its directory was synced. Nothing to check
         * against; the open writes it again. */
        slog_warn("log: %s is empty (a crash while creating the partition); taken as missing", path);
        free(text);
        free(path);
        return 0;
    }
    if (e) {
        slog_error("log: cannot read %s: %s", path, strerror(e));
        free(path);
        return KERR_KAFKA_STORAGE_ERROR;
    }
    int rc = 0;
    char *pos = text;
    char *version = line_value(&pos, "version");
    /* Kafka accepts any version >= 0 so that a downgrade still reads a
     * newer file; the two lines it knows keep their meaning. */
    char *vend = NULL;
    long v = version ? strtol(version, &vend, 10) : -1;
    if (!version || !*version || *vend || v < 0) {
        slog_error("log: %s: missing or malformed version", path);
        rc = KERR_KAFKA_STORAGE_ERROR;
        goto out;
    }
    char *id = line_value(&pos, "topic_id");
    if (!id || uuid_from_string(id, topic_id->b) != 0 || kuuid_is_zero(topic_id)) {
        slog_error("log: %s: missing or malformed topic_id", path);
        rc = KERR_KAFKA_STORAGE_ERROR;
        goto out;
    }
    *found = true;
out:
    free(text);
    free(path);
    return rc;
}

int partition_metadata_write(const char *dir, const kuuid_t *topic_id)
{
    return partition_metadata_write_ex(dir, topic_id, true);
}

int partition_metadata_write_ex(const char *dir, const kuuid_t *topic_id, bool durable)
{
    char id[UUID_STR_LEN + 1];
    uuid_to_string(topic_id->b, id);
    char text[64];
    int n = snprintf(text, sizeof text, "version: 0\ntopic_id: %s\n", id);
    char *path = meta_path(dir);
    int e = durable ? fs_write_atomic(path, text, (size_t)n) : fs_write_new(path, text, (size_t)n);
    if (e)
        slog_error("log: cannot write %s: %s", path, strerror(e));
    free(path);
    return e ? KERR_KAFKA_STORAGE_ERROR : 0;
}
