/* quorum-state: see qstate.h. The reader accepts what Kafka writes
 * (data_version 0 and 1; unknown keys ignored), nothing more. */
#include "quorum/qstate.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/fsutil.h"
#include "util/uuid.h"

/* The integer value of "key" in a flat JSON object, or false. */
static bool json_int(const char *s, const char *key, long long *out)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    const char *p = strstr(s, pat);
    if (!p)
        return false;
    p += strlen(pat);
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (*p++ != ':')
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (end == p || errno)
        return false;
    *out = v;
    return true;
}

int qstate_read(const char *dir, quorum_state_data_t *q, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, QSTATE_FILE);
    char *text = NULL;
    size_t len = 0;
    int e = fs_read_small(path, 1 << 16, &text, &len);
    if (e == ENOENT)
        return 1;
    if (e) {
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -1;
    }
    quorum_state_data_init(q);
    q->cluster_id = KSTR_NULL;
    long long leader, epoch, voted, version;
    bool ok = json_int(text, "leaderId", &leader) && json_int(text, "leaderEpoch", &epoch) &&
              json_int(text, "votedId", &voted) && json_int(text, "data_version", &version);
    if (ok && (version < 0 || version > 1 || epoch < 0 || epoch > INT32_MAX || leader < -1 ||
               leader > INT32_MAX || voted < -1 || voted > INT32_MAX))
        ok = false;
    free(text);
    if (!ok) {
        snprintf(err, errlen, "%s: not a quorum state file samsa can read (leaderId, leaderEpoch, votedId and "
                              "data_version 0 or 1 expected)", path);
        return -1;
    }
    q->leader_id = (int32_t)leader;
    q->leader_epoch = (int32_t)epoch;
    q->voted_id = (int32_t)voted;
    return 0;
}

int qstate_write(const char *dir, const quorum_state_data_t *q)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, QSTATE_FILE);
    char vdir[UUID_STR_LEN + 1];
    uuid_to_string(q->voted_directory_id.b, vdir);
    char text[512];
    int n = snprintf(text, sizeof text,
                     "{\"leaderId\":%" PRId32 ",\"leaderEpoch\":%" PRId32 ",\"votedId\":%" PRId32
                     ",\"votedDirectoryId\":\"%s\",\"data_version\":1}",
                     q->leader_id, q->leader_epoch, q->voted_id, vdir);
    return fs_write_atomic(path, text, (size_t)n);
}
