/* A small HTTP/1.x server on a thread of its own, for what operators
 * scrape (the metrics endpoint, api/prometheus.c): GET and HEAD, one
 * request per connection (Connection: close), bounded heads, a deadline
 * per connection and a cap on open connections. Its handler runs on its
 * thread, never on a network worker: a scrape that walks every partition
 * delays no Kafka client. */
#ifndef SAMSA_NET_HTTP_H
#define SAMSA_NET_HTTP_H

#include <stddef.h>

#include "util/buf.h"

/* A scrape's request is a line and a few headers; a longer head is not
 * from a client of this endpoint. */
#define HTTP_HEAD_MAX 8192

/* The head of a request: its request line (headers are read and
 * ignored). */
struct http_head {
    char method[16];
    char path[256];   /* the target up to '?' (query dropped) */
    int minor;        /* HTTP/1.minor */
};

/* Parses the head in p[0..n) (net/http_head.c). Returns its length once the blank line
 * that ends it has arrived, 0 while more bytes are needed, -1 when it
 * is malformed (why says how, a static string): a bad request line, a
 * version other than HTTP/1.x, a NUL or control byte, a method or path
 * longer than the fields above. */
int http_parse_head(const char *p, size_t n, struct http_head *out, const char **why);

/* What a handler answers: status (200 unless set), content type (a
 * static string) and the body, which the server owns and frees. */
struct http_response {
    int status;
    const char *content_type;
    struct buf body;
};

/* Called on the server's thread for a parsed request. */
typedef void (*http_handler_fn)(void *arg, const struct http_head *req, struct http_response *resp);

struct http_server;

/* Binds host:port now (so that a busy port stops startup with one line
 * naming what); returns NULL with that line in err. The thread starts
 * with http_server_start. */
struct http_server *http_server_open(const char *what, const char *host, int port, http_handler_fn fn, void *arg,
                                     char *err, size_t errlen);
int http_server_port(const struct http_server *s);
void http_server_start(struct http_server *s);
/* Stops the thread (if started), closes every connection and frees s. */
void http_server_close(struct http_server *s);

#endif
