/* The metadata image at scale (tools/bench/quorum-image.sh): T topics of P
 * partitions (RF R over B brokers) as the metadata records the controller
 * writes, then
 *   - replay: applying all of them into an empty image, as a node does
 *     when it loads a snapshot or replays the log (time, and the image's
 *     memory: RSS growth, against the records' own bytes);
 *   - change: one more topic on top of the full image, as every node
 *     applies each CreateTopics (time per change);
 *   - floor: decoding the same records without applying them.
 * Prints key=value lines. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "controller/image_build.h"
#include "proto/gen/feature_level_record.h"
#include "proto/gen/kmeta.h"
#include "proto/gen/partition_record.h"
#include "proto/gen/register_broker_record.h"
#include "proto/gen/topic_record.h"
#include "proto/record_batch.h"
#include "util/buf.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2)
            res = 0;
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Appends records as batches of up to 1000 to out. */
struct bw {
    struct buf *out;
    struct rb_builder b;
    bool open;
    int n;
    int64_t off;
    struct kwriter w;
    int64_t rec_bytes;
};

static void bw_flush(struct bw *s)
{
    if (!s->open)
        return;
    size_t len;
    rb_builder_finish(&s->b, &len);
    s->open = false;
    s->off += s->n;
    s->n = 0;
}

static void bw_add(struct bw *s, int16_t type, int16_t version, const void *rec)
{
    if (s->open && s->n >= 1000)
        bw_flush(s);
    if (!s->open) {
        rb_builder_begin(&s->b, s->out, s->off, 0, NULL);
        s->open = true;
    }
    buf_reset(&s->w.b);
    mrec_write(&s->w, type, version, rec);
    s->rec_bytes += (int64_t)s->w.b.len;
    rb_builder_add(&s->b, 0, KBYTES_NULL, (kbytes_t){s->w.b.data, (int32_t)s->w.b.len}, NULL, 0);
    s->n++;
}

static void add_topic(struct bw *s, int t, int nparts, int rf, int nbrokers)
{
    char name[64];
    snprintf(name, sizeof name, "topic-%06d", t);
    topic_record_t tr;
    topic_record_init(&tr);
    tr.name = KSTR(name);
    memset(tr.topic_id.b, 0, 16);
    memcpy(tr.topic_id.b, &t, sizeof t);
    tr.topic_id.b[15] = 7;
    bw_add(s, KMETA_TOPIC_RECORD, 0, &tr);
    int32_t reps[16];
    kuuid_t dirs[16];
    memset(dirs, 3, sizeof dirs);
    for (int p = 0; p < nparts; p++) {
        for (int r = 0; r < rf; r++)
            reps[r] = 1 + (t + p + r) % nbrokers;
        partition_record_t pr;
        partition_record_init(&pr);
        pr.partition_id = p;
        pr.topic_id = tr.topic_id;
        pr.replicas.a = reps;
        pr.replicas.n = rf;
        pr.isr.a = reps;
        pr.isr.n = rf;
        pr.removing_replicas.n = 0;
        pr.adding_replicas.n = 0;
        pr.leader = reps[0];
        pr.directories.a = dirs;
        pr.directories.n = rf;
        bw_add(s, KMETA_PARTITION_RECORD, 1, &pr);
    }
}

static int apply_all(struct mi_draft *d, const struct buf *b)
{
    char err[256];
    for (size_t pos = 0; pos < b->len;) {
        size_t size = 0;
        if (rb_frame(b->data + pos, b->len - pos, &size) != 0 ||
            mi_draft_apply_batch(d, b->data + pos, size, err, sizeof err) != 0) {
            fprintf(stderr, "apply: %s\n", err);
            return -1;
        }
        pos += size;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int topics = argc > 1 ? atoi(argv[1]) : 1000;
    int parts = argc > 2 ? atoi(argv[2]) : 100;
    int rf = argc > 3 ? atoi(argv[3]) : 3;
    int brokers = argc > 4 ? atoi(argv[4]) : 3;
    struct samsa_config *cfg = config_new();
    struct buf all = BUF_INIT;
    struct bw s;
    memset(&s, 0, sizeof s);
    s.out = &all;
    kw_init(&s.w);
    feature_level_record_t fl;
    feature_level_record_init(&fl);
    fl.name = KSTR_LIT("metadata.version");
    fl.feature_level = 21;
    bw_add(&s, KMETA_FEATURE_LEVEL_RECORD, 0, &fl);
    for (int b = 1; b <= brokers; b++) {
        register_broker_record_t r;
        register_broker_record_init(&r);
        r.broker_id = b;
        r.broker_epoch = b;
        r.rack = KSTR_NULL;
        bw_add(&s, KMETA_REGISTER_BROKER_RECORD, 3, &r);
    }
    for (int t = 0; t < topics; t++)
        add_topic(&s, t, parts, rf, brokers);
    bw_flush(&s);
    int64_t nrec = s.off;

    /* floor: decoding every record, nothing kept */
    double t0 = now_s();
    struct arena a = ARENA_INIT;
    for (size_t pos = 0; pos < all.len;) {
        size_t size = 0;
        rb_frame(all.data + pos, all.len - pos, &size);
        struct rb_record_iter it;
        rb_record_iter_init_batch(&it, all.data + pos, size);
        struct rb_record rec;
        while (rb_record_next(&it, &rec) == 1) {
            int16_t type, version;
            void *m;
            char err[128];
            mrec_read(rec.value.p, (size_t)rec.value.len, &a, &type, &version, &m, err, sizeof err);
        }
        arena_free(&a);
        pos += size;
    }
    double decode_s = now_s() - t0;

    long rss0 = rss_kb();
    t0 = now_s();
    struct mi_draft *d = mi_draft_begin(NULL, cfg, 1);
    if (apply_all(d, &all) != 0)
        return 1;
    struct mimage *img = mi_draft_finish(d);
    double replay_s = now_s() - t0;
    long rss1 = rss_kb();

    /* one more topic on top of the full image, 100 times */
    int changes = 100;
    double change_total = 0;
    for (int i = 0; i < changes; i++) {
        struct buf one = BUF_INIT;
        struct bw c1;
        memset(&c1, 0, sizeof c1);
        c1.out = &one;
        c1.off = nrec + i * (parts + 1);
        kw_init(&c1.w);
        add_topic(&c1, topics + i, parts, rf, brokers);
        bw_flush(&c1);
        t0 = now_s();
        struct mi_draft *dd = mi_draft_begin(img, cfg, 1);
        if (apply_all(dd, &one) != 0)
            return 1;
        struct mimage *next = mi_draft_finish(dd);
        change_total += now_s() - t0;
        mimage_release(img);
        img = next;
        kw_free(&c1.w);
        buf_free(&one);
    }
    int64_t npart = (int64_t)topics * parts;
    printf("partitions=%" PRId64 " topics=%d rf=%d records=%" PRId64 " record_bytes=%" PRId64 "\n", npart, topics,
           rf, nrec, s.rec_bytes);
    printf("replay_ms=%.1f replay_partitions_per_s=%.0f decode_floor_ms=%.1f replay_vs_decode=%.2fx\n",
           replay_s * 1000, (double)npart / replay_s, decode_s * 1000, replay_s / decode_s);
    printf("image_rss_mb=%.1f bytes_per_partition=%.0f record_bytes_per_partition=%.0f image_vs_records=%.2fx\n",
           (double)(rss1 - rss0) / 1024, (double)(rss1 - rss0) * 1024 / (double)npart,
           (double)s.rec_bytes / (double)npart, (double)(rss1 - rss0) * 1024 / (double)s.rec_bytes);
    printf("change_ms=%.3f (one more %d-partition topic on the full image, mean of %d)\n",
           change_total * 1000 / changes, parts, changes);
    mimage_release(img);
    kw_free(&s.w);
    buf_free(&all);
    config_free(cfg);
    return 0;
}
