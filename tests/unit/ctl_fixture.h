/* A unit test's controller node on a private directory (node_fixture.h's
 * wiring), for the tests of metadata records the controller decides and
 * replays (SCRAM credentials, ACLs, client quotas): setup and teardown
 * for cmocka, close and reopen (replay from the log and snapshots), and
 * a bounded wait for a proposed operation. Include after cmocka.h. */
#ifndef SAMSA_TESTS_CTL_FIXTURE_H
#define SAMSA_TESTS_CTL_FIXTURE_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

#include "config.h"
#include "log/fsutil.h"
#include "proto/kerr.h"
#include "node_fixture.h"

struct fx {
    char dir[256];
    struct samsa_config *cfg;
    struct broker b;
    struct controller *c;
};

static inline void fx_open(struct fx *f)
{
    char err[512];
    f->b.partitions = fixture_preg_create(&f->b);
    f->c = fixture_controller_open(&f->b, f->dir, err, sizeof err);
    if (!f->c)
        fail_msg("controller_open: %s", err);
    f->b.controller = f->c;
}

static inline void fx_close(struct fx *f)
{
    controller_close(f->c, true);
    preg_destroy(f->b.partitions, true);
    f->c = NULL;
    f->b.controller = NULL;
    f->b.partitions = NULL;
}

/* A fresh node in /tmp/samsa-<what>-XXXXXX; *state owns it. */
static inline int fx_setup(void **state, const char *what)
{
    struct fx *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/samsa-%s-XXXXXX", what);
    assert_non_null(mkdtemp(f->dir));
    f->cfg = config_new();
    char err[256];
    assert_int_equal(config_set(f->cfg, "log.dirs", f->dir, err, sizeof err), 0);
    f->b.cfg = f->cfg;
    f->b.node_id = f->cfg->node_id;
    snprintf(f->b.cluster_id, sizeof f->b.cluster_id, "test-cluster");
    snprintf(f->b.advertised_host, sizeof f->b.advertised_host, "127.0.0.1");
    f->b.advertised_port = 9092;
    fx_open(f);
    *state = f;
    return 0;
}

static inline int fx_teardown(void **state)
{
    struct fx *f = *state;
    if (f->c)
        fx_close(f);
    config_free(f->cfg);
    fs_remove_tree(f->dir);
    free(f);
    return 0;
}

/* Waits for op (bounded) and releases it: its error. */
static inline int fx_wait_op(struct ctl_op *op)
{
    if (!op)
        return 0;
    int err = KERR_REQUEST_TIMED_OUT;
    for (int i = 0; i < 20000 && !ctl_op_done(op, &err); i++)
        usleep(1000);
    ctl_op_release(op);
    return err;
}

/* Reopens the node so that it writes a snapshot after every record. */
static inline void fx_snapshot_each_record(struct fx *f)
{
    fx_close(f);
    char err[256];
    assert_int_equal(config_set(f->cfg, "metadata.log.max.record.bytes.between.snapshots", "1", err, sizeof err), 0);
    fx_open(f);
}

/* The end offset of the newest snapshot on disk, -1 when none. */
static inline int64_t fx_newest_snapshot(struct fx *f)
{
    char path[512];
    snprintf(path, sizeof path, "%s/__cluster_metadata-0", f->dir);
    DIR *d = opendir(path);
    assert_non_null(d);
    int64_t best = -1;
    for (struct dirent *de; (de = readdir(d));) {
        size_t n = strlen(de->d_name);
        if (n > 11 && strcmp(de->d_name + n - 11, ".checkpoint") == 0) {
            int64_t end = strtoll(de->d_name, NULL, 10);
            if (end > best)
                best = end;
        }
    }
    closedir(d);
    return best;
}

/* Waits (bounded) until a snapshot covers the current image. */
static inline void fx_wait_snapshot(struct fx *f)
{
    struct mimage *m = controller_image(f->c);
    int64_t end = m->offset + 1;
    mimage_release(m);
    for (int i = 0; i < 2000 && fx_newest_snapshot(f) < end; i++)
        usleep(5000);
    assert_true(fx_newest_snapshot(f) >= end);
}

#endif
