/* kclient against a real samsa started by the test (the binary from this
 * build tree) and against sockets that misbehave: negotiation, pipelined
 * requests answered in order, unsupported versions refused locally,
 * connection refused, a peer that never answers (timeout), reconnection
 * after the peer restarts, and KIP-368 re-authentication on a connection
 * that always has requests in flight. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net/kclient.h"
#include "proto/gen/kapi.h"
#include "proto/kerr.h"
#include "util/clock.h"

struct server {
    pid_t pid;
    int port, cport, sport;
    char dir[64];
};

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(fd, (struct sockaddr *)&a, sizeof a);
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    close(fd);
    return ntohs(a.sin_port);
}

static void server_start(struct server *s)
{
    char a1[128], a2[128], a3[128];
    snprintf(a1, sizeof a1, "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", s->port, s->cport);
    snprintf(a2, sizeof a2, "controller.quorum.voters=1@127.0.0.1:%d", s->cport);
    snprintf(a3, sizeof a3, "log.dirs=%s", s->dir);
    s->pid = fork();
    if (s->pid == 0) {
        freopen("/dev/null", "w", stderr);
        execl("./samsa", "samsa", "--override", "node.id=1", "--override", a1, "--override", a2, "--override",
              a3, (char *)NULL);
        _exit(127);
    }
    /* wait until it accepts connections (bounded) */
    for (int i = 0; i < 200; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
        close(fd);
        if (rc == 0)
            return;
        usleep(50000);
    }
    fail_msg("samsa did not start");
}

/* The same node with a SASL_PLAINTEXT listener (PLAIN) on s->sport
 * whose sessions live reauth_ms (KIP-368). */
static void server_start_sasl(struct server *s, int reauth_ms)
{
    char a1[192], a2[128], a3[128], a4[64];
    snprintf(a1, sizeof a1,
             "listeners=PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", s->port,
             s->sport, s->cport);
    snprintf(a2, sizeof a2, "controller.quorum.voters=1@127.0.0.1:%d", s->cport);
    snprintf(a3, sizeof a3, "log.dirs=%s", s->dir);
    snprintf(a4, sizeof a4, "connections.max.reauth.ms=%d", reauth_ms);
    s->pid = fork();
    if (s->pid == 0) {
        freopen(getenv("KC_LOG") ? getenv("KC_LOG") : "/dev/null", "w", stderr);
        execl("./samsa", "samsa", "--override", "node.id=1", "--override", a1, "--override", a2, "--override",
              a3, "--override", a4, "--override",
              "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
              "--override", "sasl.enabled.mechanisms=PLAIN", "--override",
              "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain."
              "PlainLoginModule required user_node=\"node-secret\";",
              (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->sport),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
        close(fd);
        if (rc == 0)
            return;
        usleep(50000);
    }
    fail_msg("samsa did not start");
}

static void server_stop(struct server *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        int st;
        waitpid(s->pid, &st, 0);
        s->pid = 0;
    }
}

struct result {
    int done;
    int err;
    int16_t version;
    int32_t value;   /* an interesting number copied out of the response */
    int order;
};

static int order_counter;

static void on_metadata(void *ctx, int err, int16_t v, void *resp, struct arena *ar)
{
    (void)ar;
    struct result *r = ctx;
    r->done = 1;
    r->err = err;
    r->version = v;
    r->order = ++order_counter;
    if (!err)
        r->value = ((metadata_response_t *)resp)->brokers.n > 0 ? ((metadata_response_t *)resp)->brokers.a[0].node_id : -1;
}

static void run_until(struct ev_loop *loop, struct result *r, int n, int64_t limit_ms)
{
    int64_t end = clock_mono_ms() + limit_ms;
    for (;;) {
        int all = 1;
        for (int i = 0; i < n; i++)
            all &= r[i].done;
        if (all || clock_mono_ms() > end)
            return;
        ev_run(loop, EVRUN_ONCE | EVRUN_NOWAIT);
        usleep(1000);
    }
}

static void send_metadata(struct kclient *c, int16_t v, struct result *r)
{
    metadata_request_t q;
    metadata_request_init(&q);
    q.topics.n = 0;
    assert_int_equal(kclient_send(c, KAPI_METADATA, v, &q, on_metadata, r), 0);
}

static void test_against_samsa(void **state)
{
    (void)state;
    struct server s = {.port = free_port(), .cport = free_port()};
    snprintf(s.dir, sizeof s.dir, "/tmp/kclient-test-XXXXXX");
    assert_non_null(mkdtemp(s.dir));
    server_start(&s);

    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    struct kclient_opts o = {.host = "127.0.0.1", .port = s.port, .request_timeout_ms = 5000};
    struct kclient *c = kclient_new(loop, &o);
    assert_false(kclient_ready(c));

    /* pipelined before the connection is even up: answered in order */
    struct result r[5];
    memset(r, 0, sizeof r);
    for (int i = 0; i < 5; i++)
        send_metadata(c, (int16_t)(8 + i), &r[i]);
    run_until(loop, r, 5, 5000);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(r[i].done, 1);
        assert_int_equal(r[i].err, 0);
        assert_int_equal(r[i].value, 1);
        assert_int_equal(r[i].order, i + 1 + (int)(order_counter - 5));
    }
    assert_true(kclient_ready(c));
    assert_int_equal(kclient_version(c, KAPI_METADATA, 12), 12);
    assert_int_equal(kclient_version(c, KAPI_METADATA, 5), 5);
    /* an API samsa does not serve yet */
    assert_int_equal(kclient_version(c, KAPI_RENEW_DELEGATION_TOKEN, 2), -1);

    /* a version the peer does not serve is refused without sending */
    struct result u = {0};
    metadata_request_t q;
    metadata_request_init(&q);
    renew_delegation_token_request_t cq;
    renew_delegation_token_request_init(&cq);
    assert_int_equal(kclient_send(c, KAPI_RENEW_DELEGATION_TOKEN, 1, &cq, on_metadata, &u), 0);
    run_until(loop, &u, 1, 2000);
    assert_int_equal(u.err, KERR_UNSUPPORTED_VERSION);

    /* the peer goes away: in-flight and new requests fail, then a restart
     * is picked up by the next request */
    server_stop(&s);
    struct result d = {0};
    send_metadata(c, 12, &d);
    run_until(loop, &d, 1, 5000);
    assert_int_equal(d.err, KERR_NETWORK_EXCEPTION);
    server_start(&s);
    struct result e = {0};
    for (int attempt = 0; attempt < 20; attempt++) {
        memset(&e, 0, sizeof e);
        send_metadata(c, 12, &e);
        run_until(loop, &e, 1, 3000);
        if (e.err == 0)
            break;
        usleep(100000);
    }
    assert_int_equal(e.err, 0);
    assert_int_equal(e.value, 1);

    kclient_free(c);

    /* By name: looked up on the resolver thread, the loop never waits.
     * Only where "localhost" is 127.0.0.1 first (the server listens
     * there); a lookup abandoned by a client freed meanwhile is freed by
     * the resolver thread (ASan). */
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo("localhost", NULL, &hints, &res) == 0 && res && res->ai_family == AF_INET &&
        ((struct sockaddr_in *)res->ai_addr)->sin_addr.s_addr == htonl(INADDR_LOOPBACK)) {
        struct kclient_opts on = {.host = "localhost", .port = s.port, .request_timeout_ms = 5000};
        struct kclient *cn = kclient_new(loop, &on);
        struct result rn = {0};
        send_metadata(cn, 12, &rn);
        run_until(loop, &rn, 1, 5000);
        assert_int_equal(rn.done, 1);
        assert_int_equal(rn.err, 0);
        assert_int_equal(rn.value, 1);
        kclient_free(cn);
        for (int i = 0; i < 20; i++) {
            struct kclient *cg = kclient_new(loop, &on);
            struct result rg = {0};
            send_metadata(cg, 12, &rg);
            kclient_free(cg); /* while resolving */
            assert_int_equal(rg.err, KERR_NETWORK_EXCEPTION);
        }
    }
    if (res)
        freeaddrinfo(res);
    ev_loop_destroy(loop);
    server_stop(&s);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", s.dir);
    assert_int_equal(system(cmd), 0);
}

/* KIP-368 on a busy connection: two requests always in flight (each
 * answer sends the next before the other is answered), sessions of
 * 1.5 s. The client must re-authenticate anyway (it holds new requests
 * back once the re-authentication is due, so the in-flight ones drain),
 * else the node closes the connection at the first request after the
 * session expired and requests fail. */
struct busy {
    struct kclient *c;
    bool stop;
    int sent, ok, failed, first_err;
};

static void busy_send(struct busy *b);

static void on_busy(void *ctx, int err, int16_t v, void *resp, struct arena *ar)
{
    (void)v;
    (void)resp;
    (void)ar;
    struct busy *b = ctx;
    if (err) {
        b->failed++;
        if (!b->first_err)
            b->first_err = err;
    } else {
        b->ok++;
    }
    if (!b->stop)
        busy_send(b);
}

static void busy_send(struct busy *b)
{
    metadata_request_t q;
    metadata_request_init(&q);
    q.topics.n = 0;
    b->sent++;
    assert_int_equal(kclient_send(b->c, KAPI_METADATA, 12, &q, on_busy, b), 0);
}

static void test_reauth_on_a_busy_connection(void **state)
{
    (void)state;
    struct server s = {.port = free_port(), .cport = free_port(), .sport = free_port()};
    snprintf(s.dir, sizeof s.dir, "/tmp/kclient-test-XXXXXX");
    assert_non_null(mkdtemp(s.dir));
    server_start_sasl(&s, 1500);

    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    struct kclient_security sec = {.listener = "SASL_PLAINTEXT", .sasl_mechanism = "PLAIN",
                                   .sasl_username = "node", .sasl_password = "node-secret"};
    struct kclient_opts o = {.security = &sec, .host = "127.0.0.1", .port = s.sport, .request_timeout_ms = 5000};
    struct busy b = {0};
    b.c = kclient_new(loop, &o);
    busy_send(&b);
    busy_send(&b);
    /* five session lifetimes */
    int64_t end = clock_mono_ms() + 7500;
    while (clock_mono_ms() < end && !b.failed) {
        ev_run(loop, EVRUN_ONCE | EVRUN_NOWAIT);
        usleep(200);
    }
    b.stop = true;
    end = clock_mono_ms() + 5000;
    while (kclient_pending(b.c) > 0 && clock_mono_ms() < end) {
        ev_run(loop, EVRUN_ONCE | EVRUN_NOWAIT);
        usleep(200);
    }
    int pending = kclient_pending(b.c);
    kclient_free(b.c);
    ev_loop_destroy(loop);
    server_stop(&s); /* before any assertion: a failed one leaves the test */
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", s.dir);
    assert_int_equal(system(cmd), 0);
    if (b.failed)
        fail_msg("%d of %d requests failed (first: error %d) after %d answers", b.failed, b.sent, b.first_err, b.ok);
    assert_int_equal(pending, 0);
    assert_int_equal(b.ok, b.sent);
    assert_true(b.ok > 100);
}

static void test_timeout_and_refused(void **state)
{
    (void)state;
    /* a listener that accepts (backlog) but never answers */
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t l = sizeof a;
    getsockname(lfd, (struct sockaddr *)&a, &l);
    listen(lfd, 4);
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    struct kclient_opts o = {.host = "127.0.0.1", .port = ntohs(a.sin_port), .request_timeout_ms = 300,
                             .connect_timeout_ms = 300};
    struct kclient *c = kclient_new(loop, &o);
    struct result r = {0};
    send_metadata(c, 12, &r);
    run_until(loop, &r, 1, 3000);
    assert_int_equal(r.done, 1);
    assert_true(r.err == KERR_REQUEST_TIMED_OUT || r.err == KERR_NETWORK_EXCEPTION);
    kclient_free(c);
    close(lfd);

    /* nobody listening */
    o.port = free_port();
    c = kclient_new(loop, &o);
    struct result n = {0};
    send_metadata(c, 12, &n);
    run_until(loop, &n, 1, 3000);
    assert_int_equal(n.err, KERR_NETWORK_EXCEPTION);
    /* freeing with requests queued fails them at once */
    struct result f = {0};
    send_metadata(c, 12, &f);
    kclient_free(c);
    assert_int_equal(f.done, 1);
    assert_int_equal(f.err, KERR_NETWORK_EXCEPTION);
    ev_loop_destroy(loop);
}

/* socket.connection.setup.timeout.ms / .max.ms: a peer that accepts but
 * never answers ApiVersions fails each setup at its timeout: 200 ms, then
 * doubled to 400, then capped at 500. Between attempts the loop idles past
 * the reconnect backoff, so each request's wait is the setup timeout. */
static void test_setup_timeout_backs_off(void **state)
{
    (void)state;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t l = sizeof a;
    getsockname(lfd, (struct sockaddr *)&a, &l);
    listen(lfd, 16);
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    struct kclient_opts o = {.host = "127.0.0.1", .port = ntohs(a.sin_port), .request_timeout_ms = 10000,
                             .connect_timeout_ms = 200, .connect_timeout_max_ms = 500};
    struct kclient *c = kclient_new(loop, &o);
    const int64_t expect[] = {200, 400, 500, 500};
    for (int i = 0; i < 4; i++) {
        struct result r = {0};
        int64_t t0 = clock_mono_ms();
        send_metadata(c, 12, &r);
        run_until(loop, &r, 1, 3000);
        int64_t took = clock_mono_ms() - t0;
        assert_int_equal(r.done, 1);
        assert_int_equal(r.err, KERR_NETWORK_EXCEPTION);
        if (took < expect[i] - 5 || took > expect[i] + 150)
            fail_msg("attempt %d failed after %lld ms, expected ~%lld", i, (long long)took, (long long)expect[i]);
        usleep(450000); /* past the reconnect backoff (50, 100, 200, 400 ms) */
    }
    kclient_free(c);
    close(lfd);
    ev_loop_destroy(loop);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_samsa),
        cmocka_unit_test(test_timeout_and_refused),
        cmocka_unit_test(test_setup_timeout_backs_off),
        cmocka_unit_test(test_reauth_on_a_busy_connection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
