/* Storage benchmarks that need no server, driven by tools/bench/storage-*.sh:
 *
 *   storage_bench append DIR PARTITIONS MB RECORD_BYTES BATCH_RECORDS THREADS [flush]
 *       appends MB megabytes of batches (BATCH_RECORDS records of
 *       RECORD_BYTES bytes each) into PARTITIONS fresh partition logs under
 *       DIR, from THREADS threads taking partitions round-robin; with
 *       "flush", each thread calls plog_flush after every append (the
 *       fsync-per-append cost a flush.messages=1 topic pays without group
 *       commit). The log alone: no network, no request parsing.
 *   storage_bench fill DIR PARTITIONS MB RECORD_BYTES
 *       writes logs for a recovery measurement and leaves them as after a
 *       crash (no clean-shutdown marker).
 *   storage_bench recover DIR PARTITIONS THREADS
 *       opens every log under DIR (recovery point unknown: every batch's
 *       CRC is checked, as after a crash with no checkpoint) on THREADS
 *       threads, and times it.
 *   storage_bench scan DIR PARTITIONS THREADS
 *       the floor for recover: the same files read whole with pread and
 *       their CRC-32C computed, nothing else.
 *
 * Each prints one line of key=value pairs. Built by the scripts with cc
 * against core/libsamsacore.a. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log/fsutil.h"
#include "log/plog.h"
#include "proto/crc32c.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "util/buf.h"
#include "util/slog.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "storage_bench: %s: %s\n", what, rc > 0 ? kerr_name((int16_t)rc) : strerror(errno));
    exit(1);
}

/* One batch of n records of size bytes (random-ish payload: no codec). */
static void make_batch(struct buf *b, int n, int size)
{
    struct rb_builder bld;
    rb_builder_begin(&bld, b, 0, 1700000000000, NULL);
    char *v = malloc((size_t)size);
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < size; k++)
            v[k] = (char)('a' + (i * 31 + k * 7) % 26);
        if (rb_builder_add(&bld, 1700000000000 + i, KBYTES_NULL, (kbytes_t){(const uint8_t *)v, size}, NULL, 0))
            die("rb_builder_add", KERR_INVALID_RECORD);
    }
    free(v);
    size_t len;
    if (rb_builder_finish(&bld, &len))
        die("rb_builder_finish", KERR_INVALID_RECORD);
}

static char *part_dir(const char *dir, int p)
{
    char *s = malloc(strlen(dir) + 32);
    sprintf(s, "%s/bench-%d", dir, p);
    return s;
}

struct append_job {
    struct plog **logs;
    int nlogs;
    int thread, nthreads;
    int64_t batches; /* per thread */
    const struct buf *proto;
    bool flush;
};

static void *append_main(void *arg)
{
    struct append_job *j = arg;
    uint8_t *b = malloc(j->proto->len);
    for (int64_t i = 0; i < j->batches; i++) {
        /* plog_append stamps the batch in place: start from the original. */
        memcpy(b, j->proto->data, j->proto->len);
        int p = (int)((i * j->nthreads + j->thread) % j->nlogs);
        int rc = plog_append(j->logs[p], b, j->proto->len, 0, -1, NULL);
        if (rc)
            die("plog_append", rc);
        if (j->flush && (rc = plog_flush(j->logs[p])) != 0)
            die("plog_flush", rc);
    }
    free(b);
    return NULL;
}

static struct plog_config bench_config(void)
{
    struct plog_config c = PLOG_CONFIG_INIT;
    c.retention_ms = -1;
    c.segment_ms = INT64_MAX / 2;
    return c;
}

static int cmd_append(int argc, char **argv)
{
    if (argc < 7)
        return 2;
    const char *dir = argv[1];
    int np = atoi(argv[2]), rsize = atoi(argv[4]), nrec = atoi(argv[5]), nthreads = atoi(argv[6]);
    int64_t mb = atoll(argv[3]);
    bool flush = argc > 7 && strcmp(argv[7], "flush") == 0;
    struct buf proto = BUF_INIT;
    make_batch(&proto, nrec, rsize);
    int64_t total = (mb << 20) / (int64_t)proto.len;
    struct plog_config c = bench_config();
    struct plog **logs = calloc((size_t)np, sizeof *logs);
    for (int p = 0; p < np; p++) {
        char *d = part_dir(dir, p);
        int rc = plog_open(d, NULL, &c, &logs[p]);
        if (rc)
            die("plog_open", rc);
        free(d);
    }
    /* One append each before the clock starts: the first append of a
     * leader epoch writes leader-epoch-checkpoint (an fsync'ed file), a
     * once-per-partition cost that would swamp a short run. */
    uint8_t *warm = malloc(proto.len);
    for (int p = 0; p < np; p++) {
        memcpy(warm, proto.data, proto.len);
        int rc = plog_append(logs[p], warm, proto.len, 0, -1, NULL);
        if (rc)
            die("plog_append", rc);
    }
    free(warm);
    pthread_t *t = calloc((size_t)nthreads, sizeof *t);
    struct append_job *jobs = calloc((size_t)nthreads, sizeof *jobs);
    double t0 = now_s(), c0 = cpu_s();
    for (int i = 0; i < nthreads; i++) {
        jobs[i] = (struct append_job){logs, np, i, nthreads, total / nthreads, &proto, flush};
        pthread_create(&t[i], NULL, append_main, &jobs[i]);
    }
    for (int i = 0; i < nthreads; i++)
        pthread_join(t[i], NULL);
    double secs = now_s() - t0, cpu = cpu_s() - c0;
    int64_t batches = (total / nthreads) * nthreads;
    double bytes = (double)batches * (double)proto.len;
    printf("mode=append%s partitions=%d threads=%d batches=%" PRId64 " batch_bytes=%zu records=%" PRId64
           " seconds=%.3f MBps=%.1f records_per_s=%.0f cpu_s=%.3f cpu_s_per_GB=%.3f\n",
           flush ? "+flush" : "", np, nthreads, batches, proto.len, batches * nrec, secs, bytes / secs / 1e6,
           (double)(batches * nrec) / secs, cpu, cpu / (bytes / 1e9));
    for (int p = 0; p < np; p++)
        plog_close(logs[p], false);
    free(logs);
    free(t);
    free(jobs);
    buf_free(&proto);
    return 0;
}

static int cmd_fill(int argc, char **argv)
{
    if (argc < 5)
        return 2;
    const char *dir = argv[1];
    int np = atoi(argv[2]), rsize = atoi(argv[4]);
    int64_t mb = atoll(argv[3]);
    struct buf proto = BUF_INIT;
    /* ~64 KiB batches, as a busy producer sends */
    int nrec = (64 * 1024) / (rsize + 8);
    make_batch(&proto, nrec > 0 ? nrec : 1, rsize);
    int64_t per_part = ((mb << 20) / np) / (int64_t)proto.len;
    struct plog_config c = bench_config();
    uint8_t *b = malloc(proto.len);
    double t0 = now_s();
    for (int p = 0; p < np; p++) {
        char *d = part_dir(dir, p);
        struct plog *l;
        int rc = plog_open(d, NULL, &c, &l);
        if (rc)
            die("plog_open", rc);
        for (int64_t i = 0; i < per_part; i++) {
            memcpy(b, proto.data, proto.len);
            if ((rc = plog_append(l, b, proto.len, 0, -1, NULL)) != 0)
                die("plog_append", rc);
        }
        /* As after kill -9: no flush, no marker. */
        plog_close(l, false);
        free(d);
    }
    printf("mode=fill partitions=%d bytes=%.0f seconds=%.3f\n", np, (double)per_part * (double)proto.len * np,
           now_s() - t0);
    free(b);
    buf_free(&proto);
    return 0;
}

struct rec_job {
    const char *dir;
    int np;
    atomic_int *next;
    bool scan_only;
    int64_t bytes;
};

static void *recover_main(void *arg)
{
    struct rec_job *j = arg;
    struct plog_config c = bench_config();
    uint8_t *buf = j->scan_only ? malloc(1 << 20) : NULL;
    for (;;) {
        int p = atomic_fetch_add(j->next, 1);
        if (p >= j->np)
            break;
        char *d = part_dir(j->dir, p);
        if (j->scan_only) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%020d.log", d, 0);
            int fd = open(path, O_RDONLY);
            if (fd < 0)
                die(path, 0);
            uint32_t crc = 0;
            ssize_t r;
            off_t off = 0;
            while ((r = pread(fd, buf, 1 << 20, off)) > 0) {
                crc = crc32c(crc, buf, (size_t)r);
                off += r;
            }
            j->bytes += off + (crc == 1); /* keep the CRC live */
            close(fd);
        } else {
            struct plog *l;
            struct plog_open_opts o = PLOG_OPEN_OPTS_INIT;
            int rc = plog_open_ex(d, NULL, &c, &o, &l);
            if (rc)
                die("plog_open", rc);
            j->bytes += plog_size_bytes(l);
            /* Leave it unclean for the next run. */
            plog_close(l, false);
        }
        free(d);
    }
    free(buf);
    return NULL;
}

static int cmd_recover(int argc, char **argv, bool scan_only)
{
    if (argc < 4)
        return 2;
    int np = atoi(argv[2]), nthreads = atoi(argv[3]);
    atomic_int next;
    atomic_init(&next, 0);
    pthread_t *t = calloc((size_t)nthreads, sizeof *t);
    struct rec_job *jobs = calloc((size_t)nthreads, sizeof *jobs);
    double t0 = now_s(), c0 = cpu_s();
    for (int i = 0; i < nthreads; i++) {
        jobs[i] = (struct rec_job){argv[1], np, &next, scan_only, 0};
        pthread_create(&t[i], NULL, recover_main, &jobs[i]);
    }
    int64_t bytes = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(t[i], NULL);
        bytes += jobs[i].bytes;
    }
    double secs = now_s() - t0, cpu = cpu_s() - c0;
    printf("mode=%s partitions=%d threads=%d bytes=%" PRId64 " seconds=%.3f MBps=%.1f cpu_s=%.3f\n",
           scan_only ? "scan" : "recover", np, nthreads, bytes, secs, (double)bytes / secs / 1e6, cpu);
    free(t);
    free(jobs);
    return 0;
}

int main(int argc, char **argv)
{
    slog_set_level(SLOG_WARN);
    int rc = 2;
    if (argc >= 2 && strcmp(argv[1], "append") == 0)
        rc = cmd_append(argc - 1, argv + 1);
    else if (argc >= 2 && strcmp(argv[1], "fill") == 0)
        rc = cmd_fill(argc - 1, argv + 1);
    else if (argc >= 2 && strcmp(argv[1], "recover") == 0)
        rc = cmd_recover(argc - 1, argv + 1, false);
    else if (argc >= 2 && strcmp(argv[1], "scan") == 0)
        rc = cmd_recover(argc - 1, argv + 1, true);
    if (rc == 2)
        fprintf(stderr, "usage: storage_bench append|fill|recover|scan ... (see the comment at the top)\n");
    return rc;
}
