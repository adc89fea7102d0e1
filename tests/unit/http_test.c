/* net/http_head.c and net/http.c: the metrics endpoint's request parser
 * (what it takes, waits for and refuses) and its server over a real
 * socket (status lines, lengths, HEAD, refusals, many requests), and
 * api/prometheus.c's metric names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "api/prometheus.h"
#include "net/http.h"

static int parse(const char *s, struct http_head *h, const char **why)
{
    return http_parse_head(s, strlen(s), h, why);
}

static void test_parse_takes_a_get(void **state)
{
    (void)state;
    struct http_head h;
    const char *why;
    const char *req = "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n";
    assert_int_equal(parse(req, &h, &why), (int)strlen(req));
    assert_string_equal(h.method, "GET");
    assert_string_equal(h.path, "/metrics");
    assert_int_equal(h.minor, 1);
    /* bare LF line ends, HTTP/1.0, and bytes after the head not counted */
    assert_int_equal(parse("HEAD / HTTP/1.0\n\nBODY", &h, &why), 17);
    assert_string_equal(h.method, "HEAD");
    assert_string_equal(h.path, "/");
    assert_int_equal(h.minor, 0);
}

static void test_parse_waits_for_the_blank_line(void **state)
{
    (void)state;
    struct http_head h;
    const char *why;
    assert_int_equal(parse("", &h, &why), 0);
    assert_int_equal(parse("GET /metr", &h, &why), 0);
    assert_int_equal(parse("GET /metrics HTTP/1.1\r\n", &h, &why), 0);
    assert_int_equal(parse("GET /metrics HTTP/1.1\r\nHost: a\r\n", &h, &why), 0);
    assert_null(why);
}

static void test_parse_refuses_what_is_not_http1(void **state)
{
    (void)state;
    struct http_head h;
    const char *why;
    static const char *bad[] = {
        "GARBAGE\r\n\r\n",
        "GET /metrics\r\n\r\n",
        "GET /metrics HTTP/2.0\r\n\r\n",
        "GET /metrics HTTP/1.1x\r\n\r\n",
        " GET / HTTP/1.1\r\n\r\n",
        "GET  / HTTP/1.1\r\n\r\n",
        "G(T / HTTP/1.1\r\n\r\n",
        "GET /a\rb HTTP/1.1\r\n\r\n",
        "GET /\x01 HTTP/1.1\r\n\r\n",
        "GET / HTTP/1.1\r\nX: \x7f\r\n\r\n",
        "\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why = NULL;
        assert_int_equal(parse(bad[i], &h, &why), -1);
        assert_non_null(why);
    }
    /* a control byte fails at once, before the head's end */
    assert_int_equal(http_parse_head("GET /\0", 6, &h, &why), -1);
}

static void test_parse_bounds_lengths(void **state)
{
    (void)state;
    struct http_head h;
    const char *why;
    char big[HTTP_HEAD_MAX + 64];
    /* a head that never ends fails once it is longer than the bound */
    snprintf(big, sizeof big, "GET / HTTP/1.1\r\n");
    size_t n = strlen(big);
    memset(big + n, 'a', sizeof big - n - 1);
    big[sizeof big - 1] = 0;
    assert_int_equal(http_parse_head(big, HTTP_HEAD_MAX, &h, &why), 0);
    assert_int_equal(http_parse_head(big, HTTP_HEAD_MAX + 1, &h, &why), -1);
    assert_string_equal(why, "request head too long");
    /* a path longer than the field */
    char path[400];
    memset(path, 'p', sizeof path);
    snprintf(big, sizeof big, "GET /%.*s HTTP/1.1\r\n\r\n", 300, path);
    assert_int_equal(parse(big, &h, &why), -1);
    assert_string_equal(why, "path too long");
    assert_int_equal(parse("ABCDEFGHIJKLMNOPQ / HTTP/1.1\r\n\r\n", &h, &why), -1);
}

static void test_metric_names(void **state)
{
    (void)state;
    char out[64];
    prometheus_metric_name("samsa.plugin.codec-zstd.batches", out, sizeof out);
    assert_string_equal(out, "samsa_plugin_codec_zstd_batches");
    prometheus_metric_name("9lives:x", out, sizeof out);
    assert_string_equal(out, "_9lives:x");
    prometheus_metric_name("abcdefgh", out, 5);
    assert_string_equal(out, "abcd");
}

/* ---- the server ---- */

static void handler(void *arg, const struct http_head *req, struct http_response *resp)
{
    int *calls = arg;
    (*calls)++;
    if (strcmp(req->path, "/hello") != 0) {
        resp->status = 404;
        return;
    }
    buf_printf(&resp->body, "hello %s\n", req->method);
}

/* Sends req on a new connection to port and reads until the server
 * closes it; the whole response in out (NUL-terminated). */
static size_t roundtrip_in(int port, const char *req, size_t req_len, size_t piece, char *out, size_t cap)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    for (size_t off = 0; off < req_len; off += piece) {
        size_t k = req_len - off < piece ? req_len - off : piece;
        assert_int_equal(send(fd, req + off, k, MSG_NOSIGNAL), (ssize_t)k);
        if (piece < req_len)
            usleep(2000);
    }
    size_t got = 0;
    for (;;) {
        ssize_t n = recv(fd, out + got, cap - 1 - got, 0);
        assert_true(n >= 0); /* a timeout (the server kept it open) fails */
        if (n == 0)
            break;
        got += (size_t)n;
    }
    out[got] = 0;
    close(fd);
    return got;
}

static size_t roundtrip(int port, const char *req, size_t req_len, char *out, size_t cap)
{
    return roundtrip_in(port, req, req_len, req_len, out, cap);
}

static void test_server_answers(void **state)
{
    (void)state;
    int calls = 0;
    char err[256];
    struct http_server *s = http_server_open("test endpoint", "127.0.0.1", 0, handler, &calls, err, sizeof err);
    assert_non_null(s);
    int port = http_server_port(s);
    assert_true(port > 0);
    http_server_start(s);
    char out[4096];

    const char *get = "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n";
    roundtrip(port, get, strlen(get), out, sizeof out);
    assert_non_null(strstr(out, "HTTP/1.1 200 OK\r\n"));
    assert_non_null(strstr(out, "Content-Length: 10\r\n"));
    assert_non_null(strstr(out, "Connection: close\r\n"));
    assert_non_null(strstr(out, "\r\n\r\nhello GET\n"));

    /* HEAD: the GET's length, no body */
    const char *head = "HEAD /hello HTTP/1.0\r\n\r\n";
    roundtrip(port, head, strlen(head), out, sizeof out);
    assert_non_null(strstr(out, "Content-Length: 11\r\n"));
    assert_int_equal(strlen(strstr(out, "\r\n\r\n")), 4);

    const char *missing = "GET /nothing HTTP/1.1\r\n\r\n";
    roundtrip(port, missing, strlen(missing), out, sizeof out);
    assert_non_null(strstr(out, "HTTP/1.1 404 Not Found\r\n"));

    /* refusals never reach the handler */
    int before = calls;
    const char *post = "POST /hello HTTP/1.1\r\nContent-Length: 0\r\n\r\n";
    roundtrip(port, post, strlen(post), out, sizeof out);
    assert_non_null(strstr(out, "HTTP/1.1 405 Method Not Allowed\r\n"));
    assert_non_null(strstr(out, "Allow: GET, HEAD\r\n"));
    const char *junk = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03";
    roundtrip(port, junk, strlen(junk), out, sizeof out);
    assert_non_null(strstr(out, "HTTP/1.1 400 Bad Request\r\n"));
    char big[HTTP_HEAD_MAX + 100];
    memcpy(big, "GET /hello HTTP/1.1\r\nX: ", 24);
    memset(big + 24, 'a', sizeof big - 24);
    roundtrip(port, big, sizeof big, out, sizeof out);
    assert_non_null(strstr(out, "HTTP/1.1 431 Request Header Fields Too Large\r\n"));
    assert_int_equal(calls, before);

    /* a head that arrives a few bytes at a time */
    roundtrip_in(port, get, strlen(get), 3, out, sizeof out);
    assert_non_null(strstr(out, "\r\n\r\nhello GET\n"));
    /* one request after another, each on its own connection */
    for (int i = 0; i < 50; i++)
        roundtrip(port, get, strlen(get), out, sizeof out);
    assert_int_equal(calls, before + 51);
    http_server_close(s);
}

static void test_busy_port_is_one_line(void **state)
{
    (void)state;
    int calls = 0;
    char err[256];
    struct http_server *s = http_server_open("samsa.metrics.listener", "127.0.0.1", 0, handler, &calls, err,
                                             sizeof err);
    assert_non_null(s);
    struct http_server *t = http_server_open("samsa.metrics.listener", "127.0.0.1", http_server_port(s), handler,
                                             &calls, err, sizeof err);
    assert_null(t);
    assert_non_null(strstr(err, "samsa.metrics.listener: cannot listen on 127.0.0.1:"));
    assert_non_null(strstr(err, "Address already in use"));
    http_server_close(s); /* never started: closes all the same */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_takes_a_get),
        cmocka_unit_test(test_parse_waits_for_the_blank_line),
        cmocka_unit_test(test_parse_refuses_what_is_not_http1),
        cmocka_unit_test(test_parse_bounds_lengths),
        cmocka_unit_test(test_metric_names),
        cmocka_unit_test(test_server_answers),
        cmocka_unit_test(test_busy_port_is_one_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
