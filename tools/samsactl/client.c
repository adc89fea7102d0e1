/* samsactl's Kafka client (see client.h). */
#include "client.h"
#include "opts.h"
#include "sasl.h"
#include "tls.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "autoconfig.h"
#include "opts.h"
#include "proto/kerr.h"
#include "util/clock.h"

volatile sig_atomic_t kc_interrupted;

static void on_signal(int sig)
{
    (void)sig;
    kc_interrupted = 1;
}

void kc_catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: poll must return EINTR so we notice */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* ---- errors ---- */

int kc_fail(struct kc_client *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->errmsg, sizeof c->errmsg, fmt, ap);
    va_end(ap);
    c->errcode = code;
    return code;
}

/* Texts of Kafka's Errors enum for the codes a tool meets, used when a
 * broker sends no message of its own. */
const char *kc_default_message(int code)
{
    switch (code) {
    case KERR_UNKNOWN_SERVER_ERROR: return "The server experienced an unexpected error when processing the request.";
    case KERR_OFFSET_OUT_OF_RANGE: return "The requested offset is not within the range of offsets maintained by the server.";
    case KERR_CORRUPT_MESSAGE: return "This message has failed its CRC checksum, exceeds the valid size, has a null key for a compacted topic, or is otherwise corrupt.";
    case KERR_UNKNOWN_TOPIC_OR_PARTITION: return "This server does not host this topic-partition.";
    case KERR_LEADER_NOT_AVAILABLE: return "There is no leader for this topic-partition as we are in the middle of a leadership election.";
    case KERR_NOT_LEADER_OR_FOLLOWER: return "This server is not the leader for that topic-partition.";
    case KERR_REQUEST_TIMED_OUT: return "The request timed out.";
    case KERR_MESSAGE_TOO_LARGE: return "The request included a message larger than the max message size the server will accept.";
    case KERR_NETWORK_EXCEPTION: return "The server disconnected before a response was received.";
    case KERR_INVALID_TOPIC_EXCEPTION: return "The request attempted to perform an operation on an invalid topic.";
    case KERR_RECORD_LIST_TOO_LARGE: return "The request included message batch larger than the configured segment size on the server.";
    case KERR_NOT_ENOUGH_REPLICAS: return "Messages are rejected since there are fewer in-sync replicas than required.";
    case KERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND: return "Messages are written to the log, but to fewer in-sync replicas than required.";
    case KERR_INVALID_REQUIRED_ACKS: return "Produce request specified an invalid value for required acks.";
    case KERR_TOPIC_AUTHORIZATION_FAILED: return "Topic authorization failed.";
    case KERR_CLUSTER_AUTHORIZATION_FAILED: return "Cluster authorization failed.";
    case KERR_INVALID_TIMESTAMP: return "The timestamp of the message is out of acceptable range.";
    case KERR_UNSUPPORTED_VERSION: return "The version of API is not supported.";
    case KERR_TOPIC_ALREADY_EXISTS: return "Topic with this name already exists.";
    case KERR_INVALID_PARTITIONS: return "Number of partitions is below 1.";
    case KERR_INVALID_REPLICATION_FACTOR: return "Replication factor is below 1 or larger than the number of available brokers.";
    case KERR_INVALID_REPLICA_ASSIGNMENT: return "Replica assignment is invalid.";
    case KERR_INVALID_CONFIG: return "Configuration is invalid.";
    case KERR_NOT_CONTROLLER: return "This is not the correct controller for this cluster.";
    case KERR_INVALID_REQUEST: return "This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker.";
    case KERR_POLICY_VIOLATION: return "Request parameters do not satisfy the configured policy.";
    case KERR_KAFKA_STORAGE_ERROR: return "Disk error when trying to access log file on the disk.";
    case KERR_TOPIC_DELETION_DISABLED: return "Topic deletion is disabled.";
    case KERR_FENCED_LEADER_EPOCH: return "The leader epoch in the request is older than the epoch on the broker.";
    case KERR_UNKNOWN_LEADER_EPOCH: return "The leader epoch in the request is newer than the epoch on the broker.";
    case KERR_UNSUPPORTED_COMPRESSION_TYPE: return "The requesting client does not support the compression type of given partition.";
    case KERR_INVALID_RECORD: return "This record has failed the validation on broker and hence will be rejected.";
    case KERR_THROTTLING_QUOTA_EXCEEDED: return "The throttling quota has been exceeded.";
    case KERR_UNKNOWN_TOPIC_ID: return "This server does not host this topic ID.";
    case KERR_INCONSISTENT_TOPIC_ID: return "The log's topic ID did not match the topic ID in the request.";
    case KERR_OFFSET_METADATA_TOO_LARGE: return "The metadata field of the offset request was too large.";
    case KERR_COORDINATOR_LOAD_IN_PROGRESS: return "The coordinator is loading and hence can't process requests.";
    case KERR_COORDINATOR_NOT_AVAILABLE: return "The coordinator is not available.";
    case KERR_NOT_COORDINATOR: return "This is not the correct coordinator.";
    case KERR_ILLEGAL_GENERATION: return "Specified group generation id is not valid.";
    case KERR_INVALID_GROUP_ID: return "The configured groupId is invalid.";
    case KERR_UNKNOWN_MEMBER_ID: return "The coordinator is not aware of this member.";
    case KERR_REBALANCE_IN_PROGRESS: return "The group is rebalancing, so a rejoin is needed.";
    case KERR_GROUP_AUTHORIZATION_FAILED: return "Group authorization failed.";
    case KERR_NON_EMPTY_GROUP: return "The group is not empty.";
    case KERR_GROUP_ID_NOT_FOUND: return "The group id does not exist.";
    case KERR_GROUP_SUBSCRIBED_TO_TOPIC: return "Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it.";
    default: return "";
    }
}

void kc_print_error(int code, const char *msg)
{
    if (!msg || !*msg)
        msg = kc_default_message(code);
    fprintf(stderr, "Error: %s: %s\n", kerr_name((int16_t)code), msg);
}

int kc_report(const struct kc_client *c)
{
    if (c->errcode == KC_INTERRUPTED)
        return 130;
    kc_print_error(c->errcode, c->errmsg);
    return EXIT_KAFKA;
}

bool kc_retriable(int code)
{
    switch (code) {
    case KERR_LEADER_NOT_AVAILABLE:
    case KERR_NOT_LEADER_OR_FOLLOWER:
    case KERR_REQUEST_TIMED_OUT:
    case KERR_NOT_CONTROLLER:
    case KERR_NETWORK_EXCEPTION:
    case KERR_FENCED_LEADER_EPOCH:
    case KERR_UNKNOWN_LEADER_EPOCH:
    case KERR_KAFKA_STORAGE_ERROR:
    case KERR_REPLICA_NOT_AVAILABLE:
    case KERR_OFFSET_NOT_AVAILABLE:
    case KERR_NOT_ENOUGH_REPLICAS:
    case KERR_COORDINATOR_LOAD_IN_PROGRESS:
    case KERR_UNKNOWN_TOPIC_ID:
        return true;
    default:
        return false;
    }
}

char *kc_strdup(struct arena *a, kstr_t s) { return kstr_dup(a, s); }

/* ---- addresses ---- */

void kc_addresses_free(struct kc_address *a, int n)
{
    for (int i = 0; i < n; i++)
        free(a[i].host);
    free(a);
}

int kc_parse_bootstrap(const char *s, struct kc_address **out, char *err, size_t errlen)
{
    struct kc_address *v = NULL;
    int n = 0;
    const char *p = s;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len > 0 && (*p == ' ' || *p == '\t'))
            p++, len--;
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        const char *host = p, *colon;
        size_t hlen;
        if (len > 0 && *p == '[') {
            const char *rb = memchr(p, ']', len);
            if (!rb || rb + 1 >= p + len || rb[1] != ':')
                goto bad;
            host = p + 1;
            hlen = (size_t)(rb - host);
            colon = rb + 1;
        } else {
            colon = NULL;
            for (size_t i = len; i > 0; i--)
                if (p[i - 1] == ':') {
                    colon = p + i - 1;
                    break;
                }
            if (!colon)
                goto bad;
            hlen = (size_t)(colon - p);
        }
        if (hlen == 0)
            goto bad;
        char portbuf[8];
        size_t plen = (size_t)(p + len - colon - 1);
        if (plen == 0 || plen >= sizeof portbuf)
            goto bad;
        memcpy(portbuf, colon + 1, plen);
        portbuf[plen] = '\0';
        int32_t port;
        if (!parse_i32(portbuf, 1, 65535, &port))
            goto bad;
        v = xrealloc(v, (size_t)(n + 1) * sizeof *v);
        v[n].host = xstrndup(host, hlen);
        v[n].port = port;
        n++;
        if (!end)
            break;
        p = end + 1;
        continue;
    bad:
        snprintf(err, errlen, "bad bootstrap server '%.*s' (want HOST:PORT[,HOST:PORT...])", (int)len, p);
        kc_addresses_free(v, n);
        return -1;
    }
    *out = v;
    return n;
}

/* ---- client ---- */

int kc_client_init(struct kc_client *c, const char *bootstrap, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    if (kc_security.command_config && !kc_security.loaded) {
        kc_security.loaded = true;
        if (kc_security_load(kc_security.command_config, err, errlen) < 0)
            return -1;
    }
    c->client_id = "samsactl";
    c->timeout_ms = KC_DEFAULT_TIMEOUT_MS;
    int n = kc_parse_bootstrap(bootstrap, &c->bootstrap, err, errlen);
    if (n < 0)
        return -1;
    c->nbootstrap = n;
    return 0;
}

void kc_response_free(struct kc_response *r)
{
    free(r->frame);
    arena_free(&r->arena);
    memset(r, 0, sizeof *r);
}

void kc_conn_close(struct kc_conn *conn)
{
    kc_tls_free(conn);
    if (conn->fd >= 0)
        close(conn->fd);
    conn->fd = -1;
    conn->negotiated = false;
    conn->ninflight = 0;
    buf_reset(&conn->in);
    conn->in_off = 0;
}

static void conn_free(struct kc_conn *conn)
{
    kc_conn_close(conn);
    free(conn->host);
    free(conn->inflight);
    buf_free(&conn->in);
    free(conn);
}

void kc_client_free(struct kc_client *c)
{
    for (int i = 0; i < c->nconns; i++)
        conn_free(c->conns[i]);
    free(c->conns);
    kc_response_free(&c->meta);
    kc_addresses_free(c->bootstrap, c->nbootstrap);
    memset(c, 0, sizeof *c);
}

static struct kc_conn *conn_new(struct kc_client *c, const char *host, size_t hostlen, int port, int32_t node_id)
{
    struct kc_conn *conn = xcalloc(1, sizeof *conn);
    conn->fd = -1;
    conn->node_id = node_id;
    conn->host = xstrndup(host, hostlen);
    conn->port = port;
    conn->next_correlation_id = 1;
    buf_init(&conn->in);
    c->conns = xrealloc(c->conns, (size_t)(c->nconns + 1) * sizeof *c->conns);
    c->conns[c->nconns++] = conn;
    return conn;
}

static int remaining_ms(int64_t deadline)
{
    int64_t left = deadline - clock_mono_ms();
    if (left < 0)
        return 0;
    return left > 1000000000 ? 1000000000 : (int)left;
}

static int tcp_connect(struct kc_client *c, struct kc_conn *conn)
{
    char port[8];
    snprintf(port, sizeof port, "%d", conn->port);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(conn->host, port, &hints, &res);
    if (gai != 0)
        return kc_fail(c, KERR_NETWORK_EXCEPTION, "cannot resolve %s: %s", conn->host, gai_strerror(gai));
    int64_t deadline = clock_mono_ms() + c->timeout_ms;
    int last_errno = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            last_errno = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (rc < 0 && errno == EINPROGRESS) {
            struct pollfd pfd = {fd, POLLOUT, 0};
            for (;;) {
                rc = poll(&pfd, 1, remaining_ms(deadline));
                if (rc < 0 && errno == EINTR && !kc_interrupted)
                    continue;
                break;
            }
            if (kc_interrupted) {
                close(fd);
                freeaddrinfo(res);
                return kc_fail(c, KC_INTERRUPTED, "interrupted");
            }
            if (rc == 0) {
                close(fd);
                last_errno = ETIMEDOUT;
                continue;
            }
            int soerr = 0;
            socklen_t sl = sizeof soerr;
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
            rc = soerr ? -1 : 0;
            errno = soerr;
        }
        if (rc == 0) {
            freeaddrinfo(res);
            conn->fd = fd;
            return 0;
        }
        last_errno = errno;
        close(fd);
    }
    freeaddrinfo(res);
    if (last_errno == ETIMEDOUT)
        return kc_fail(c, KERR_REQUEST_TIMED_OUT, "timed out connecting to %s:%d", conn->host, conn->port);
    return kc_fail(c, KERR_NETWORK_EXCEPTION, "cannot connect to %s:%d: %s", conn->host, conn->port,
                   strerror(last_errno ? last_errno : ECONNREFUSED));
}

/* Reads what the socket holds into conn->in. 1: got bytes; 0: nothing
 * yet; else an error code (the connection is closed). */
static int conn_read_some(struct kc_client *c, struct kc_conn *conn)
{
    if (conn->in_off == conn->in.len) {
        buf_reset(&conn->in);
        conn->in_off = 0;
    } else if (conn->in_off > (1u << 20)) {
        memmove(conn->in.data, conn->in.data + conn->in_off, conn->in.len - conn->in_off);
        conn->in.len -= conn->in_off;
        conn->in_off = 0;
    }
    uint8_t *p = buf_reserve(&conn->in, 65536);
    int want_write = 0;
    ssize_t n = conn->ssl ? kc_tls_read(conn, p, 65536, &want_write) : recv(conn->fd, p, 65536, 0);
    if (n > 0) {
        conn->in.len += (size_t)n;
        /* what OpenSSL decrypted and still holds, poll would not see */
        while (conn->ssl && kc_tls_pending(conn) > 0) {
            p = buf_reserve(&conn->in, 65536);
            ssize_t m = kc_tls_read(conn, p, 65536, &want_write);
            if (m <= 0)
                break;
            conn->in.len += (size_t)m;
        }
        return 1;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return 0;
    int e = n == 0 ? 0 : errno;
    kc_conn_close(conn);
    if (e == 0)
        return kc_fail(c, KERR_NETWORK_EXCEPTION, "connection to %s:%d closed by the broker", conn->host, conn->port);
    return kc_fail(c, KERR_NETWORK_EXCEPTION, "connection to %s:%d failed: %s", conn->host, conn->port, strerror(e));
}

/* 1 when conn->in holds a whole frame (*size = its length without the
 * prefix), 0 when not yet, else an error code. */
static int frame_ready(struct kc_client *c, struct kc_conn *conn, size_t *size)
{
    size_t avail = conn->in.len - conn->in_off;
    if (avail < 4)
        return 0;
    uint32_t n = be32_read(conn->in.data + conn->in_off);
    if (n > KC_MAX_FRAME) {
        kc_conn_close(conn);
        return kc_fail(c, KERR_NETWORK_EXCEPTION, "response of %u bytes from %s:%d is too large", n, conn->host,
                       conn->port);
    }
    *size = n;
    return avail - 4 >= n ? 1 : 0;
}

static int conn_write_all(struct kc_client *c, struct kc_conn *conn, const uint8_t *p, size_t len, int64_t deadline)
{
    while (len > 0) {
        int want_write = 1;
        ssize_t n = conn->ssl ? kc_tls_write(conn, p, len, &want_write) : send(conn->fd, p, len, MSG_NOSIGNAL);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            int e = errno;
            kc_conn_close(conn);
            return kc_fail(c, KERR_NETWORK_EXCEPTION, "sending to %s:%d failed: %s", conn->host, conn->port,
                           strerror(e));
        }
        if (kc_interrupted)
            return kc_fail(c, KC_INTERRUPTED, "interrupted");
        int left = remaining_ms(deadline);
        if (left == 0)
            return kc_fail(c, KERR_REQUEST_TIMED_OUT, "timed out sending to %s:%d", conn->host, conn->port);
        /* Read while blocked on writing: a broker busy answering earlier
         * pipelined requests must never wait on us. */
        struct pollfd pfd = {conn->fd, (short)(want_write ? POLLOUT | POLLIN : POLLIN), 0};
        int rc = poll(&pfd, 1, left);
        if (rc > 0 && (pfd.revents & (POLLIN | POLLHUP | POLLERR))) {
            int r = conn_read_some(c, conn);
            if (r < 0 || r > 1)
                return r;
        }
    }
    return 0;
}

static int send_request(struct kc_client *c, struct kc_conn *conn, int16_t key, int16_t version, const void *req,
                        bool expect_response)
{
    const struct kapi *a = kapi_get(key);
    if (!a || version < a->min_version || version > a->max_version)
        return kc_fail(c, KERR_UNSUPPORTED_VERSION, "samsactl cannot encode API %d version %d", key, version);
    if (conn->fd < 0)
        return kc_fail(c, KERR_NETWORK_EXCEPTION, "not connected to %s:%d", conn->host, conn->port);
    struct kwriter w;
    kw_init(&w);
    kw_i32(&w, 0); /* size, patched below */
    request_header_t h;
    request_header_init(&h);
    h.request_api_key = key;
    h.request_api_version = version;
    h.correlation_id = conn->next_correlation_id++;
    if (conn->next_correlation_id < 0)
        conn->next_correlation_id = 1;
    h.client_id = KSTR(c->client_id);
    request_header_encode(&w, (int16_t)kapi_request_header_version(a, version), &h);
    a->req_encode(&w, version, req);
    be32_write(w.b.data, (uint32_t)(w.b.len - 4));
    int rc = conn_write_all(c, conn, w.b.data, w.b.len, clock_mono_ms() + c->timeout_ms);
    kw_free(&w);
    if (rc)
        return rc;
    if (expect_response) {
        if (conn->ninflight == conn->capinflight) {
            conn->capinflight = conn->capinflight ? conn->capinflight * 2 : 8;
            conn->inflight = xrealloc(conn->inflight, (size_t)conn->capinflight * sizeof *conn->inflight);
        }
        conn->inflight[conn->ninflight++] = (struct kc_inflight){h.correlation_id, key, version};
    }
    return 0;
}

/* Waits for the next whole frame on conn; hands it over (malloc'd, caller
 * frees) with the in-flight entry it answers. */
static int recv_frame(struct kc_client *c, struct kc_conn *conn, int64_t deadline, uint8_t **frame, size_t *len,
                      struct kc_inflight *inf)
{
    if (conn->fd < 0)
        return kc_fail(c, KERR_NETWORK_EXCEPTION, "not connected to %s:%d", conn->host, conn->port);
    if (conn->ninflight == 0)
        return kc_fail(c, KERR_UNKNOWN_SERVER_ERROR, "no request in flight to %s:%d", conn->host, conn->port);
    size_t size = 0;
    for (;;) {
        int r = frame_ready(c, conn, &size);
        if (r == 1)
            break;
        if (r != 0)
            return r;
        if (kc_interrupted)
            return kc_fail(c, KC_INTERRUPTED, "interrupted");
        int left = remaining_ms(deadline);
        if (left == 0) {
            /* The answer may still come; it would be taken for the next
             * request's, so this connection cannot be used any more. */
            kc_conn_close(conn);
            return kc_fail(c, KERR_REQUEST_TIMED_OUT, "no answer from %s:%d in time", conn->host, conn->port);
        }
        struct pollfd pfd = {conn->fd, POLLIN, 0};
        int rc = poll(&pfd, 1, left);
        if (rc > 0) {
            r = conn_read_some(c, conn);
            if (r < 0 || r > 1)
                return r;
        }
    }
    *frame = xmalloc(size ? size : 1);
    memcpy(*frame, conn->in.data + conn->in_off + 4, size);
    conn->in_off += 4 + size;
    *len = size;
    *inf = conn->inflight[0];
    conn->ninflight--;
    memmove(conn->inflight, conn->inflight + 1, (size_t)conn->ninflight * sizeof *conn->inflight);
    return 0;
}

/* Decodes a response frame into out (which takes frame over). */
static int decode_frame(struct kc_client *c, struct kc_conn *conn, const struct kc_inflight *inf, uint8_t *frame,
                        size_t len, struct kc_response *out)
{
    const struct kapi *a = kapi_get(inf->key);
    memset(out, 0, sizeof *out);
    arena_init(&out->arena);
    out->frame = frame;
    out->len = len;
    out->key = inf->key;
    out->version = inf->version;
    struct kreader r;
    kr_init(&r, frame, len, &out->arena);
    response_header_t h;
    response_header_decode(&r, (int16_t)kapi_response_header_version(a, inf->version), &h);
    if (r.err || h.correlation_id != inf->correlation_id) {
        int32_t got = h.correlation_id;
        kc_response_free(out);
        kc_conn_close(conn);
        if (r.err)
            return kc_fail(c, KERR_UNKNOWN_SERVER_ERROR, "truncated response header from %s:%d", conn->host,
                           conn->port);
        return kc_fail(c, KERR_UNKNOWN_SERVER_ERROR, "%s:%d answered correlation id %d, expected %d", conn->host,
                       conn->port, got, inf->correlation_id);
    }
    out->msg = arena_alloc(&out->arena, a->resp_size);
    if (a->resp_decode(&r, inf->version, out->msg) < 0 || r.err) {
        kc_response_free(out);
        return kc_fail(c, KERR_UNKNOWN_SERVER_ERROR, "malformed %s v%d response from %s:%d", a->name, inf->version,
                       conn->host, conn->port);
    }
    return 0;
}

int kc_send(struct kc_client *c, struct kc_conn *conn, int16_t key, int16_t version, const void *req,
            bool expect_response)
{
    return send_request(c, conn, key, version, req, expect_response);
}

int kc_recv(struct kc_client *c, struct kc_conn *conn, int timeout_ms, struct kc_response *out)
{
    memset(out, 0, sizeof *out);
    uint8_t *frame;
    size_t len;
    struct kc_inflight inf;
    int rc = recv_frame(c, conn, clock_mono_ms() + timeout_ms, &frame, &len, &inf);
    if (rc)
        return rc;
    return decode_frame(c, conn, &inf, frame, len, out);
}

int kc_call_version(struct kc_client *c, struct kc_conn *conn, int16_t key, int16_t version, const void *req,
                    struct kc_response *out)
{
    memset(out, 0, sizeof *out);
    int rc = send_request(c, conn, key, version, req, true);
    if (rc)
        return rc;
    return kc_recv(c, conn, c->timeout_ms, out);
}

int kc_call(struct kc_client *c, struct kc_conn *conn, int16_t key, const void *req, struct kc_response *out)
{
    memset(out, 0, sizeof *out);
    int16_t v = kc_version(conn, key);
    if (v < 0) {
        const struct kapi *a = kapi_get(key);
        return kc_fail(c, KERR_UNSUPPORTED_VERSION, "broker %s:%d does not support %s", conn->host, conn->port,
                       a ? a->name : "this API");
    }
    return kc_call_version(c, conn, key, v, req, out);
}

int kc_wait_any(struct kc_client *c, struct kc_conn **conns, int n, int timeout_ms, int *ready)
{
    int64_t deadline = clock_mono_ms() + timeout_ms;
    struct pollfd pfds[64];
    if (n > 64)
        n = 64;
    *ready = -1;
    for (;;) {
        for (int i = 0; i < n; i++) {
            size_t size;
            if (conns[i]->fd < 0) {
                *ready = i;
                return kc_fail(c, KERR_NETWORK_EXCEPTION, "not connected to %s:%d", conns[i]->host, conns[i]->port);
            }
            int r = frame_ready(c, conns[i], &size);
            if (r == 1) {
                *ready = i;
                return 0;
            }
            if (r != 0) {
                *ready = i;
                return r;
            }
        }
        if (kc_interrupted)
            return kc_fail(c, KC_INTERRUPTED, "interrupted");
        int left = remaining_ms(deadline);
        if (left == 0)
            return 0;
        for (int i = 0; i < n; i++)
            pfds[i] = (struct pollfd){conns[i]->fd, POLLIN, 0};
        int rc = poll(pfds, (nfds_t)n, left);
        if (rc <= 0)
            continue;
        for (int i = 0; i < n; i++) {
            if (!pfds[i].revents)
                continue;
            int r = conn_read_some(c, conns[i]);
            if (r < 0 || r > 1) {
                *ready = i;
                return r;
            }
        }
    }
}

/* ---- connecting and ApiVersions ---- */

static void fill_versions(struct kc_conn *conn, const api_versions_response_t *resp)
{
    for (int k = 0; k <= KAPI_MAX_KEY; k++)
        conn->versions[k] = -1;
    for (int32_t i = 0; i < resp->api_keys.n; i++) {
        const api_versions_response_api_version_t *av = &resp->api_keys.a[i];
        const struct kapi *a = kapi_get(av->api_key);
        if (!a || av->max_version < av->min_version)
            continue;
        int16_t hi = av->max_version < a->max_version ? av->max_version : a->max_version;
        int16_t lo = av->min_version > a->min_version ? av->min_version : a->min_version;
        if (hi >= lo)
            conn->versions[av->api_key] = hi;
    }
}

static int negotiate(struct kc_client *c, struct kc_conn *conn)
{
    const struct kapi *a = kapi_get(KAPI_API_VERSIONS);
    int16_t v = a->max_version;
    for (int attempt = 0; attempt < 2; attempt++) {
        api_versions_request_t req;
        api_versions_request_init(&req);
        req.client_software_name = KSTR_LIT("samsactl");
        req.client_software_version = KSTR_LIT(PACKAGE_VERSION);
        int rc = send_request(c, conn, KAPI_API_VERSIONS, v, &req, true);
        if (rc)
            return rc;
        uint8_t *frame;
        size_t len;
        struct kc_inflight inf;
        rc = recv_frame(c, conn, clock_mono_ms() + c->timeout_ms, &frame, &len, &inf);
        if (rc)
            return rc;
        /* KIP-511: a broker that does not know our version answers
         * UNSUPPORTED_VERSION in the v0 layout, listing what it has. The
         * error code is the first body field in every version (after the
         * 4-byte v0 response header), so peek at it to pick the layout. */
        int16_t decode_v = v;
        if (len >= 6 && (int16_t)be16_read(frame + 4) == KERR_UNSUPPORTED_VERSION)
            decode_v = 0;
        struct kc_inflight as = inf;
        as.version = decode_v;
        struct kc_response resp;
        rc = decode_frame(c, conn, &as, frame, len, &resp);
        if (rc)
            return rc;
        const api_versions_response_t *m = resp.msg;
        if (m->error_code == KERR_UNSUPPORTED_VERSION && attempt == 0) {
            int16_t broker_max = -1;
            for (int32_t i = 0; i < m->api_keys.n; i++)
                if (m->api_keys.a[i].api_key == KAPI_API_VERSIONS)
                    broker_max = m->api_keys.a[i].max_version;
            kc_response_free(&resp);
            if (broker_max < 0 || broker_max >= v)
                broker_max = 0;
            v = broker_max;
            continue;
        }
        if (m->error_code != 0) {
            int code = m->error_code;
            kc_response_free(&resp);
            return kc_fail(c, code, "ApiVersions to %s:%d failed", conn->host, conn->port);
        }
        fill_versions(conn, m);
        kc_response_free(&resp);
        conn->negotiated = true;
        return 0;
    }
    return kc_fail(c, KERR_UNSUPPORTED_VERSION, "no ApiVersions version in common with %s:%d", conn->host,
                   conn->port);
}

static int conn_open(struct kc_client *c, struct kc_conn *conn)
{
    if (conn->fd >= 0 && conn->negotiated)
        return 0;
    kc_conn_close(conn);
    int rc = tcp_connect(c, conn);
    if (!rc && kc_security.tls)
        rc = kc_tls_connect(c, conn, clock_mono_ms() + c->timeout_ms);
    if (rc) {
        kc_conn_close(conn);
        return rc;
    }
    rc = negotiate(c, conn);
    if (!rc && kc_security.mechanism)
        rc = kc_sasl_login(c, conn);
    if (rc)
        kc_conn_close(conn);
    return rc;
}

int kc_any_conn(struct kc_client *c, struct kc_conn **out)
{
    if (c->any && conn_open(c, c->any) == 0) {
        *out = c->any;
        return 0;
    }
    /* Try the bootstrap list in order, as the Java client does. */
    int rc = KERR_NETWORK_EXCEPTION;
    for (int i = 0; i < c->nbootstrap; i++) {
        struct kc_conn *conn = NULL;
        for (int j = 0; j < c->nconns; j++)
            if (strcmp(c->conns[j]->host, c->bootstrap[i].host) == 0 && c->conns[j]->port == c->bootstrap[i].port)
                conn = c->conns[j];
        if (!conn)
            conn = conn_new(c, c->bootstrap[i].host, strlen(c->bootstrap[i].host), c->bootstrap[i].port, -1);
        rc = conn_open(c, conn);
        if (rc == 0) {
            c->any = conn;
            *out = conn;
            return 0;
        }
        if (rc == KC_INTERRUPTED)
            return rc;
    }
    return rc;
}

int kc_node_conn(struct kc_client *c, int32_t node_id, struct kc_conn **out)
{
    for (int i = 0; i < c->nconns; i++)
        if (c->conns[i]->node_id == node_id && node_id >= 0) {
            int rc = conn_open(c, c->conns[i]);
            if (rc)
                return rc;
            *out = c->conns[i];
            return 0;
        }
    const kc_broker_t *b = kc_meta_broker(c, node_id);
    if (!b || b->host.len <= 0)
        return kc_fail(c, KERR_LEADER_NOT_AVAILABLE, "broker %d is not in the cluster metadata", node_id);
    /* The bootstrap connection may be this very broker. */
    for (int i = 0; i < c->nconns; i++) {
        struct kc_conn *conn = c->conns[i];
        if (conn->node_id < 0 && conn->port == b->port && kstr_eqc(b->host, conn->host)) {
            conn->node_id = node_id;
            int rc = conn_open(c, conn);
            if (rc)
                return rc;
            *out = conn;
            return 0;
        }
    }
    struct kc_conn *conn = conn_new(c, b->host.p, (size_t)b->host.len, b->port, node_id);
    int rc = conn_open(c, conn);
    if (rc)
        return rc;
    *out = conn;
    return 0;
}

/* ---- metadata ---- */

const metadata_response_t *kc_meta(const struct kc_client *c) { return c->meta.msg; }

const kc_topic_t *kc_meta_topic(const struct kc_client *c, const char *name)
{
    const metadata_response_t *m = c->meta.msg;
    if (!m)
        return NULL;
    for (int32_t i = 0; i < m->topics.n; i++)
        if (kstr_eqc(m->topics.a[i].name, name))
            return &m->topics.a[i];
    return NULL;
}

const kc_partition_t *kc_meta_partition(const kc_topic_t *t, int32_t index)
{
    for (int32_t i = 0; t && i < t->partitions.n; i++)
        if (t->partitions.a[i].partition_index == index)
            return &t->partitions.a[i];
    return NULL;
}

const kc_broker_t *kc_meta_broker(const struct kc_client *c, int32_t node_id)
{
    const metadata_response_t *m = c->meta.msg;
    for (int32_t i = 0; m && i < m->brokers.n; i++)
        if (m->brokers.a[i].node_id == node_id)
            return &m->brokers.a[i];
    return NULL;
}

int kc_metadata(struct kc_client *c, const char *const *topics, int ntopics, bool allow_auto_create)
{
    struct kc_conn *conn;
    int rc = kc_any_conn(c, &conn);
    if (rc)
        return rc;
    int16_t v = kc_version(conn, KAPI_METADATA);
    if (v < 0)
        return kc_fail(c, KERR_UNSUPPORTED_VERSION, "broker %s:%d does not support Metadata", conn->host, conn->port);
    struct arena tmp = ARENA_INIT;
    metadata_request_t req;
    metadata_request_init(&req);
    if (ntopics < 0) {
        /* All topics: null from v1 on, an empty list in v0. */
        req.topics.a = NULL;
        req.topics.n = v >= 1 ? -1 : 0;
    } else {
        req.topics.a = metadata_request_metadata_request_topic_new_array(&tmp, ntopics);
        req.topics.n = ntopics;
        for (int i = 0; i < ntopics; i++)
            req.topics.a[i].name = KSTR(topics[i]);
    }
    req.allow_auto_topic_creation = allow_auto_create;
    struct kc_response resp;
    rc = kc_call_version(c, conn, KAPI_METADATA, v, &req, &resp);
    arena_free(&tmp);
    if (rc)
        return rc;
    kc_response_free(&c->meta);
    c->meta = resp;
    /* Learn which node the bootstrap connection reached, so that leader
     * lookups reuse it instead of opening a second connection. */
    const metadata_response_t *m = c->meta.msg;
    if (conn->node_id < 0)
        for (int32_t i = 0; i < m->brokers.n; i++)
            if (m->brokers.a[i].port == conn->port && kstr_eqc(m->brokers.a[i].host, conn->host)) {
                bool taken = false;
                for (int j = 0; j < c->nconns; j++)
                    taken |= c->conns[j]->node_id == m->brokers.a[i].node_id;
                if (!taken)
                    conn->node_id = m->brokers.a[i].node_id;
                break;
            }
    return 0;
}

bool kc_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        if (kc_interrupted)
            return false;
    return !kc_interrupted;
}

int kc_topic_metadata(struct kc_client *c, const char *topic, bool allow_auto_create, const kc_topic_t **out)
{
    int64_t start = clock_mono_ms();
    int64_t deadline = start + c->timeout_ms;
    int64_t unknown_deadline = start + 5000;
    int backoff = 50;
    for (;;) {
        const char *names[1] = {topic};
        int rc = kc_metadata(c, names, 1, allow_auto_create);
        if (rc)
            return rc;
        const kc_topic_t *t = kc_meta_topic(c, topic);
        int code = t ? t->error_code : KERR_UNKNOWN_TOPIC_OR_PARTITION;
        if (code == 0) {
            if (t->partitions.n <= 0)
                code = KERR_LEADER_NOT_AVAILABLE;
            for (int32_t i = 0; i < t->partitions.n && code == 0; i++)
                if (t->partitions.a[i].leader_id < 0)
                    code = KERR_LEADER_NOT_AVAILABLE;
        }
        if (code == 0) {
            *out = t;
            return 0;
        }
        int64_t now = clock_mono_ms();
        bool retry = code == KERR_LEADER_NOT_AVAILABLE || code == KERR_NOT_LEADER_OR_FOLLOWER ||
                     code == KERR_REQUEST_TIMED_OUT || code == KERR_KAFKA_STORAGE_ERROR ||
                     (code == KERR_UNKNOWN_TOPIC_OR_PARTITION && allow_auto_create && now < unknown_deadline);
        if (!retry || now >= deadline) {
            if (code == KERR_UNKNOWN_TOPIC_OR_PARTITION)
                return kc_fail(c, code, "Topic '%s' does not exist", topic);
            return kc_fail(c, code, "Topic '%s': %s", topic, kc_default_message(code));
        }
        if (!kc_sleep_ms(backoff))
            return kc_fail(c, KC_INTERRUPTED, "interrupted");
        backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
    }
}

int kc_leader_conn(struct kc_client *c, const char *topic, int32_t partition, struct kc_conn **out)
{
    const kc_topic_t *t = kc_meta_topic(c, topic);
    const kc_partition_t *p = kc_meta_partition(t, partition);
    if (!p)
        return kc_fail(c, KERR_UNKNOWN_TOPIC_OR_PARTITION, "Partition %s-%d does not exist", topic, partition);
    if (p->leader_id < 0)
        return kc_fail(c, KERR_LEADER_NOT_AVAILABLE, "Partition %s-%d has no leader", topic, partition);
    return kc_node_conn(c, p->leader_id, out);
}

int kc_controller_conn(struct kc_client *c, struct kc_conn **out)
{
    if (!c->meta.msg) {
        int rc = kc_metadata(c, NULL, 0, false);
        if (rc)
            return rc;
    }
    const metadata_response_t *m = c->meta.msg;
    if (m->controller_id < 0 || !kc_meta_broker(c, m->controller_id))
        return kc_any_conn(c, out);
    return kc_node_conn(c, m->controller_id, out);
}

int kc_command_main(const struct kc_command *cmd, void *opts, int argc, char **argv, const struct global_opts *g0)
{
    struct global_opts g = *g0;
    char err[512];
    int status;
    int a = cmd->parse(argc, argv, opts, &g, err, sizeof err);
    if (a == ARGS_HELP) {
        cmd->usage(stdout);
        status = EXIT_OK;
    } else if (a == ARGS_ERROR) {
        fprintf(stderr, "samsactl %s: %s (see samsactl %.*s --help)\n", cmd->name, err,
                (int)strcspn(cmd->name, " "), cmd->name);
        status = EXIT_USAGE;
    } else {
        struct kc_client c;
        if (kc_client_init(&c, global_bootstrap(&g), err, sizeof err) < 0) {
            fprintf(stderr, "samsactl %s: %s\n", cmd->name, err);
            status = EXIT_USAGE;
        } else {
            kc_catch_signals();
            int rc = cmd->run(&c, opts);
            fflush(stdout);
            status = rc ? kc_report(&c) : EXIT_OK;
            kc_client_free(&c);
        }
    }
    if (cmd->free_opts)
        cmd->free_opts(opts);
    return status;
}
