/* Parking (core/net/park.c): an event wakes exactly the requests watching
 * its key and only the workers that have one; completions and deadlines
 * stop a request's watches; a completion that closes its connection, and
 * a connection closed while requests are parked, free nothing in use
 * (run under ASan in CI). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/request.h"
#include "net/conn.h"
#include "net/net.h"
#include "net/park.h"
#include "net/worker.h"
#include "util/buf.h"

struct waiter {
    struct parked pk; /* first */
    int calls, expired_calls;
    bool finish;      /* answer at the next call */
    bool close_conn;  /* answer by closing the connection */
};

struct fixture {
    struct park_hub *hub;
    struct worker w[2];
};

static struct fixture *fx;

static void no_dispatch(struct request *req) { req_close(req, "test: no requests expected"); }
static void conn_open(struct conn *c, const char *listener, int protocol)
{
    (void)c;
    (void)listener;
    (void)protocol;
}
static void conn_free(struct conn *c) { (void)c; }
static const struct net_handlers handlers = {no_dispatch, conn_open, conn_free, NULL};

static int setup(void **state)
{
    (void)state;
    fx = xcalloc(1, sizeof *fx);
    fx->hub = park_hub_create();
    for (int i = 0; i < 2; i++) {
        fx->w[i].id = i;
        fx->w[i].loop = ev_loop_new(EVFLAG_AUTO);
        fx->w[i].handlers = &handlers;
        fx->w[i].max_request_bytes = 1 << 20;
        fx->w[i].queued_max_requests = 500;
        fx->w[i].park = park_worker_attach(fx->hub, i, fx->w[i].loop);
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < 2; i++) {
        conn_close_all(&fx->w[i]);
        park_worker_detach(fx->w[i].park);
        ev_loop_destroy(fx->w[i].loop);
    }
    park_hub_free(fx->hub);
    free(fx);
    return 0;
}

static bool try_complete(struct parked *p, bool expired)
{
    struct waiter *wt = (struct waiter *)p;
    wt->calls++;
    wt->expired_calls += expired;
    if (wt->close_conn) {
        req_close(p->req, "test: the completion closes its connection");
        /* the request and wt are still readable here */
        wt->calls += p->req->done ? 0 : 1000;
        return true;
    }
    if (wt->finish || expired) {
        p->req->done = true;
        return true;
    }
    return false;
}

/* A request without a connection, on worker wi. Owned by the caller:
 * free_request. */
static struct request *new_request(int wi)
{
    struct request *r = xcalloc(1, sizeof *r);
    r->worker = &fx->w[wi];
    arena_init(&r->arena);
    kw_init(&r->out);
    return r;
}

static void free_request(struct request *r)
{
    kw_free(&r->out);
    arena_free(&r->arena);
    free(r);
}

static struct waiter *park_on(struct request *r, const park_key_t *keys, int n, int64_t timeout_ms)
{
    struct waiter *wt = arena_alloc(&r->arena, sizeof *wt);
    park_init(&wt->pk, r, try_complete);
    for (int i = 0; i < n; i++)
        park_watch(&wt->pk, keys[i]);
    park_start(&wt->pk, timeout_ms);
    return wt;
}

static void drain(void)
{
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 2; k++)
            ev_run(fx->w[k].loop, EVRUN_NOWAIT);
}

static park_key_t pkey(int32_t index)
{
    uint8_t id[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    return park_key_partition(id, index);
}

#define N 3000

/* 3000 requests parked on as many partitions (half on each worker); an
 * append to one partition runs exactly one try_complete on one worker. */
static void test_wakes_only_watchers(void **state)
{
    (void)state;
    struct request **reqs = xcalloc(N, sizeof *reqs);
    struct waiter **ws = xcalloc(N, sizeof *ws);
    for (int i = 0; i < N; i++) {
        reqs[i] = new_request(i % 2);
        park_key_t k = pkey(i);
        ws[i] = park_on(reqs[i], &k, 1, 60000);
        assert_int_equal(ws[i]->calls, 1); /* the check right after parking */
    }
    struct park_stats s0, s1;
    park_get_stats(fx->hub, &s0);
    assert_int_equal(s0.parked, N);

    for (int round = 0; round < 10; round++) {
        park_notify(fx->hub, pkey(7));
        drain();
    }
    park_get_stats(fx->hub, &s1);
    assert_int_equal(s1.wakeups - s0.wakeups, 10);
    assert_int_equal(s1.posts - s0.posts, 10);
    for (int i = 0; i < N; i++)
        assert_int_equal(ws[i]->calls, i == 7 ? 11 : 1);

    /* a key nobody watches posts nothing and wakes nothing */
    park_notify(fx->hub, pkey(N + 5));
    drain();
    park_get_stats(fx->hub, &s0);
    assert_int_equal(s0.posts, s1.posts);
    assert_int_equal(s0.wakeups, s1.wakeups);

    /* completion stops the watch: the next notify wakes nothing */
    ws[7]->finish = true;
    park_notify(fx->hub, pkey(7));
    drain();
    assert_int_equal(ws[7]->calls, 12);
    park_get_stats(fx->hub, &s1);
    assert_int_equal(s1.parked, N - 1);
    park_notify(fx->hub, pkey(7));
    drain();
    assert_int_equal(ws[7]->calls, 12);
    park_get_stats(fx->hub, &s0);
    assert_int_equal(s0.posts, s1.posts);

    for (int i = 0; i < N; i++) {
        park_stop(&ws[i]->pk); /* what a cancel hook does */
        free_request(reqs[i]);
    }
    park_get_stats(fx->hub, &s0);
    assert_int_equal(s0.parked, 0);
    free(reqs);
    free(ws);
}

/* Many requests on one key (consumers of one partition) all wake; one
 * request on several keys wakes once per notify of any of them. */
static void test_shared_and_multiple_keys(void **state)
{
    (void)state;
    struct request *r[5];
    struct waiter *w[5];
    park_key_t shared = pkey(1);
    for (int i = 0; i < 4; i++) {
        r[i] = new_request(i % 2);
        w[i] = park_on(r[i], &shared, 1, 60000);
    }
    park_key_t several[3] = {pkey(10), pkey(11), pkey(12)};
    r[4] = new_request(0);
    w[4] = park_on(r[4], several, 3, 60000);
    park_notify(fx->hub, shared);
    drain();
    for (int i = 0; i < 4; i++)
        assert_int_equal(w[i]->calls, 2);
    assert_int_equal(w[4]->calls, 1);
    park_notify(fx->hub, pkey(11));
    park_notify(fx->hub, pkey(12));
    drain();
    /* both posted before the worker ran: one wake-up or two, never none */
    assert_true(w[4]->calls >= 2 && w[4]->calls <= 3);
    int before = w[4]->calls;
    park_notify(fx->hub, pkey(10));
    drain();
    assert_int_equal(w[4]->calls, before + 1);
    for (int i = 0; i < 5; i++) {
        park_stop(&w[i]->pk);
        free_request(r[i]);
    }
}

/* The deadline runs try_complete with expired set, once, and stops. */
static void test_deadline(void **state)
{
    (void)state;
    struct request *r = new_request(0);
    park_key_t k = pkey(3);
    struct waiter *w = park_on(r, &k, 1, 20);
    for (int i = 0; i < 200 && !w->expired_calls; i++) {
        ev_run(fx->w[0].loop, EVRUN_ONCE);
    }
    assert_int_equal(w->expired_calls, 1);
    assert_true(r->done);
    park_notify(fx->hub, k);
    drain();
    assert_int_equal(w->expired_calls, 1);
    assert_int_equal(w->calls, 2);
    free_request(r);
}

/* Requests on a real connection (a socketpair). */
static struct request *conn_request(struct conn *c)
{
    struct request *r = xcalloc(1, sizeof *r);
    r->conn = c;
    r->worker = c->w;
    arena_init(&r->arena);
    kw_init(&r->out);
    if (c->tail)
        c->tail->next = r;
    else
        c->head = r;
    c->tail = r;
    c->inflight++;
    return r;
}

static void cancel_hook(struct request *req)
{
    park_stop(req->handler_state);
}

/* A completion that closes its connection (a malformed Raft frame
 * answered by req_close) frees nothing while it runs; the connection's
 * other parked request is cancelled before it is freed. */
static void test_completion_closes_connection(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    struct conn *c = conn_adopt(&fx->w[0], sv[0], false, "PLAINTEXT", 0, NULL);
    struct request *a = conn_request(c), *b = conn_request(c);
    park_key_t ka = pkey(20), kb = pkey(21);
    struct waiter *wb = park_on(b, &kb, 1, 60000);
    b->handler_state = &wb->pk;
    b->cancel = cancel_hook;
    struct waiter *wa = park_on(a, &ka, 1, 60000);
    a->handler_state = &wa->pk;
    a->cancel = cancel_hook;
    assert_int_equal(fx->w[0].nconns, 1);
    wa->close_conn = true;
    park_notify(fx->hub, ka);
    drain();
    /* the connection is gone, and b's watch with it */
    assert_int_equal(fx->w[0].nconns, 0);
    struct park_stats s0, s1;
    park_get_stats(fx->hub, &s0);
    assert_int_equal(s0.parked, 0);
    park_notify(fx->hub, kb);
    drain();
    park_get_stats(fx->hub, &s1);
    assert_int_equal(s1.wakeups, s0.wakeups);
    assert_int_equal(s1.posts, s0.posts);
    close(sv[1]);
}

/* A connection closed by its peer while requests are parked cancels
 * them: a later event finds nothing. */
static void test_close_while_parked(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    struct conn *c = conn_adopt(&fx->w[1], sv[0], false, "PLAINTEXT", 0, NULL);
    park_key_t k = pkey(30);
    for (int i = 0; i < 100; i++) {
        struct request *r = conn_request(c);
        struct waiter *w = park_on(r, &k, 1, 60000);
        r->handler_state = &w->pk;
        r->cancel = cancel_hook;
    }
    close(sv[1]); /* the peer goes: the worker reads EOF */
    for (int i = 0; i < 50 && fx->w[1].nconns; i++)
        ev_run(fx->w[1].loop, EVRUN_ONCE);
    assert_int_equal(fx->w[1].nconns, 0);
    struct park_stats s0, s1;
    park_get_stats(fx->hub, &s0);
    assert_int_equal(s0.parked, 0);
    park_notify(fx->hub, k);
    drain();
    park_get_stats(fx->hub, &s1);
    assert_int_equal(s1.posts, s0.posts);
    assert_int_equal(s1.wakeups, s0.wakeups);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_wakes_only_watchers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_and_multiple_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_completion_closes_connection, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_while_parked, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
