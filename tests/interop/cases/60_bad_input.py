"""Bad input on raw sockets. Kafka closes the connection on a frame it cannot
take (over socket.request.max.bytes, negative, too short for a header, an
unknown API key, a body that does not parse) and answers a well-formed
request with an error code (a topic name with a NUL -> INVALID_TOPIC_EXCEPTION).
After each: a connection opened before keeps working, a real client (kcat)
reads every stored record unchanged, and the server log has a line."""
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import (Server, Suite, check, eq, bound, ck_create_topic, ck_produce, kcat_consume,  # noqa: E402
                     raw_read_all, rec)
import kwire  # noqa: E402

S = Suite("bad_input")
srv = None
T = "bi"
baseline = {}
T0 = 1730000000000


def setup():
    global srv
    srv = Server()
    ck_create_topic(srv.bootstrap, T, 2)
    ck_produce(srv.bootstrap, T, [rec(b"k%d" % i, b"value-%d" % i, [("h", b"%d" % i)], i % 2, T0 + i)
                                  for i in range(20)])
    for p in (0, 1):
        baseline[p] = raw_read_all(srv.bootstrap, T, p)
        eq(baseline[p][1], 10, "baseline high watermark p%d" % p)


def conn():
    return kwire.Conn(srv.port, timeout=bound(10))


def still_serving(c2, what):
    """c2 was opened before the bad input."""
    check(srv.alive(), "%s: the server died" % what)
    eq(kwire.api_versions(c2, 0)["error_code"], 0, "%s: ApiVersions on a connection opened before" % what)
    for p in (0, 1):
        eq(raw_read_all(srv.bootstrap, T, p), baseline[p], "%s: stored records of %s-%d" % (what, T, p))
        got = kcat_consume(srv.bootstrap, T, p, 0, 10)
        eq([(r["offset"], r["key"], r["value"], r["timestamp"]) for r in got],
           [(r["offset"], r["key"], r["value"], r["timestamp"]) for r in baseline[p][0]],
           "%s: kcat reads %s-%d" % (what, T, p))


def closed_without_answer(data, log_pattern, what, then_close=False):
    c2 = conn()
    mark = srv.log_size()
    c = conn()
    try:
        c.send_raw(data)
        if then_close:
            c.sock.shutdown(socket.SHUT_WR)
        got = c.expect_closed(bound(5))
        eq(got, b"", "%s: bytes answered before the close" % what)
    finally:
        c.close()
    line = srv.wait_log(log_pattern, mark)
    print("    log: " + line.strip()[:200], flush=True)
    still_serving(c2, what)
    c2.close()


@S.case
def http_request_garbage():
    closed_without_answer(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
                          r"request size 1195725856 .*socket\.request\.max\.bytes", "an HTTP request")


@S.case
def frame_of_2gib():
    closed_without_answer(struct.pack(">i", 0x7FFFFFFF) + b"\x00" * 64,
                          r"request size 2147483647 .*socket\.request\.max\.bytes", "a 2 GiB frame")


@S.case
def negative_frame_size():
    closed_without_answer(struct.pack(">I", 0xFFFFFFF0) + b"\x00" * 16, r"request size -16 ", "a negative size")


@S.case
def frame_too_short_for_a_header():
    closed_without_answer(struct.pack(">i", 3) + b"\x00\x12\x00", r"too short", "a 3-byte frame")


@S.case
def unknown_api_key_9999():
    data = kwire.frame(9999, 0, b"\x00" * 8)
    closed_without_answer(data, r"API key 9999", "API key 9999")


@S.case
def malformed_body_of_a_known_api():
    # Metadata v1 whose topic array claims 0x41414141 entries
    data = kwire.frame(kwire.METADATA, 1, b"\x41\x41\x41\x41" + b"\x00\x05abcde")
    closed_without_answer(data, r"malformed Metadata request v1", "a malformed Metadata v1")
    # Produce v8 cut inside the topic name
    body = kwire.produce_body(T, 0, kwire.build_batch([(b"k", b"v", [])]))
    data = kwire.frame(kwire.PRODUCE, 8, body[:12])
    closed_without_answer(data, r"malformed Produce request v8", "a truncated Produce v8 body")


@S.case
def garbage_after_a_good_request():
    # Kafka closes the connection as soon as it reads the bad size, and may
    # drop the answer to the request before it: either the whole answer
    # then the close, or the close alone; never a partial answer.
    good = kwire.frame(kwire.API_VERSIONS, 0, b"", corr=77)
    c2 = conn()
    mark = srv.log_size()
    c = conn()
    try:
        c.send_raw(good + b"\xff\xff\xff\xffGARBAGE")
        got = c.expect_closed(bound(5))
    finally:
        c.close()
    if got:
        size = struct.unpack(">i", got[:4])[0]
        eq(len(got), 4 + size, "bytes received: one whole response frame")
        r = kwire.R(got[4:])
        eq(r.i32(), 77, "correlation id of the answer")
        eq(kwire.parse_api_versions(r, 0)["error_code"], 0, "the good request's answer")
    print("    the good request was %s before the close" % ("answered" if got else "not answered"), flush=True)
    srv.wait_log(r"request size -1 ", mark)
    still_serving(c2, "garbage after a good request")
    c2.close()


@S.case
def truncated_frame_then_close():
    body = kwire.produce_body(T, 0, kwire.build_batch([(b"never", b"stored", [])]))
    data = kwire.frame(kwire.PRODUCE, 8, body)
    closed_without_answer(data[:len(data) // 2], r"middle of a request", "half a Produce frame, then close",
                          then_close=True)


@S.case
def slow_frame_does_not_block_others():
    # half a request stays pending on one connection while others are served
    data = kwire.frame(kwire.API_VERSIONS, 0, b"", corr=5)
    c = conn()
    try:
        c.send_raw(data[:7])
        c2 = conn()
        still_serving(c2, "with a half-sent request pending")
        c2.close()
        c.send_raw(data[7:])
        eq(kwire.parse_api_versions(c.recv(5, 0), 0)["error_code"], 0, "the completed request's answer")
    finally:
        c.close()


@S.case
def create_topics_name_with_nul():
    c2 = conn()
    mark = srv.log_size()
    c = conn()
    try:
        res = kwire.create_topics_v4(c, [(b"bad\x00name", 1, 1, {}), ("bi-ok", 1, 1, {})])
        eq([(r["name"], r["error_code"]) for r in res], [("bad\x00name", 17), ("bi-ok", 0)],
           "CreateTopics v4 results (INVALID_TOPIC_EXCEPTION for the NUL name)")
        md = kwire.metadata_v12(c)
        names = sorted(t["name"] for t in md["topics"])
        eq(names, [T, "bi-ok"], "topics after the request")
        eq(kwire.api_versions(c, 0)["error_code"], 0, "the same connection still works")
    finally:
        c.close()
    still_serving(c2, "CreateTopics with a NUL in a name")
    c2.close()
    srv.wait_log(r"bad.?name|invalid.*topic|topic.*invalid|INVALID_TOPIC", mark)


if __name__ == "__main__":
    S.run(setup)
