/* A unit test's controller node on a private directory (node_fixture.h's
 * wiring), for the tests of metadata records the controller decides and
 * replays (SCRAM credentials, ACLs, client quotas): setup and teardown
 * for cmocka, close and reopen (replay from the log and snapshots), and
 * a bounded wait for a proposed operation. Include after cmocka.h. */
#ifndef SAMSA_TESTS_CTL_FIXTURE_H
#define SAMSA_TESTS_CTL_FIXTURE_H

#include <stdio.h>
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

#endif
