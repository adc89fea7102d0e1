"""Connection and request limits as Kafka's broker configs name them:
fetch.max.bytes caps a consumer's Fetch; and max.connections,
max.connections.per.ip (+ overrides), max.connection.creation.rate,
connections.max.idle.ms and queued.max.requests. A connection over a
limit is closed at once with one log line; the ones within keep working;
a closed one frees its place. Controller-listener connections are not
counted. A pipeline longer than queued.max.requests is read in turns and
answered in order."""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Server, Suite, bound, check, eq, log  # noqa: E402
import kwire  # noqa: E402

S = Suite("connection_limits", case_limit=90.0)


def works(c):
    eq(kwire.api_versions(c, 0)["error_code"], 0, "ApiVersions")


def settle():
    """The harness's readiness probe connection is closed by now, but the
    server counts it down on its worker a moment later."""
    time.sleep(bound(0.3))


def refused(port, what):
    """A new connection gets closed without an answer."""
    c = kwire.Conn(port, timeout=bound(5))
    try:
        c.send(kwire.API_VERSIONS, 0, kwire.api_versions_body(0))
        got = c.expect_closed(bound(5))
        eq(got, b"", "%s: bytes before the close" % what)
    finally:
        c.close()


@S.case
def per_ip_limit_and_its_override():
    srv = Server({"max.connections.per.ip": "3"})
    settle()
    try:
        cs = [kwire.Conn(srv.port, timeout=bound(5)) for _ in range(3)]
        for c in cs:
            works(c)
        mark = srv.log_size()
        refused(srv.port, "4th connection from 127.0.0.1")
        srv.wait_log(r"max\.connections\.per\.ip for 127\.0\.0\.1 \(3\) reached", mark)
        # controller-listener connections do not count
        k = kwire.Conn(srv.cport, timeout=bound(5))
        works(k)
        k.close()
        for c in cs:
            works(c)  # the first three still work
        cs[0].close()
        time.sleep(bound(0.3))  # the worker sees the close
        c4 = kwire.Conn(srv.port, timeout=bound(5))
        works(c4)
        c4.close()
        for c in cs[1:]:
            c.close()
    finally:
        srv.stop()
    srv2 = Server({"max.connections.per.ip": "1", "max.connections.per.ip.overrides": "127.0.0.1:4"})
    settle()
    try:
        cs = [kwire.Conn(srv2.port, timeout=bound(5)) for _ in range(4)]
        for c in cs:
            works(c)
        refused(srv2.port, "5th connection with an override of 4")
        for c in cs:
            c.close()
    finally:
        srv2.stop()


@S.case
def max_connections():
    srv = Server({"max.connections": "5"})
    settle()
    try:
        cs = [kwire.Conn(srv.port, timeout=bound(5)) for _ in range(5)]
        for c in cs:
            works(c)
        mark = srv.log_size()
        refused(srv.port, "6th connection")
        srv.wait_log(r"max\.connections \(5\) reached", mark)
        for c in cs:
            c.close()
    finally:
        srv.stop()


@S.case
def bad_override_refused_at_startup():
    srv = Server({"max.connections.per.ip.overrides": "example.com:3"}, start=False)
    import subprocess
    p = subprocess.run(srv.argv(), capture_output=True, text=True, timeout=bound(10), cwd=srv.dir)
    eq(p.returncode, 2, "exit status")
    check("max.connections.per.ip.overrides" in p.stderr and "numeric" in p.stderr,
          "one line naming the key: %r", p.stderr)


@S.case
def idle_connections_close():
    srv = Server({"connections.max.idle.ms": "1000"})
    try:
        idle = kwire.Conn(srv.port, timeout=bound(10))
        works(idle)
        busy = kwire.Conn(srv.port, timeout=bound(10))
        t0 = time.monotonic()
        mark = srv.log_size()
        # the busy one talks every 300 ms for 3 s and stays
        while time.monotonic() - t0 < 3.0:
            works(busy)
            time.sleep(0.3)  # well inside the 1 s limit, sanitizers or not
        got = idle.expect_closed(bound(5))
        eq(got, b"", "the idle connection closed without bytes")
        srv.wait_log(r"idle for longer than connections\.max\.idle\.ms \(1000 ms\)", mark)
        works(busy)
        busy.close()
    finally:
        srv.stop()


@S.case
def creation_rate_throttles_new_connections():
    srv = Server({"max.connection.creation.rate": "5"})
    try:
        time.sleep(1.1)  # a fresh second
        t0 = time.monotonic()
        cs = []
        for _ in range(15):
            c = kwire.Conn(srv.port, timeout=bound(10))
            works(c)  # answered once accepted
            cs.append(c)
        took = time.monotonic() - t0
        log("15 connections at max.connection.creation.rate=5 took %.2f s", took)
        check(took >= 1.8, "15 connections at 5/s accepted in %.2f s", took)
        for c in cs:
            c.close()
    finally:
        srv.stop()


@S.case
def pipeline_longer_than_queued_max_requests():
    srv = Server({"queued.max.requests": "2"})
    try:
        c = kwire.Conn(srv.port, timeout=bound(10))
        corrs = [c.send(kwire.API_VERSIONS, 0, kwire.api_versions_body(0)) for _ in range(50)]
        for corr in corrs:
            r = c.recv(corr, 0)  # in order, each one
            eq(r.i16(), 0, "error code")
        c.close()
    finally:
        srv.stop()


@S.case
def fetch_max_bytes_caps_a_consumer_fetch():
    srv = Server({"fetch.max.bytes": "1024"})
    try:
        from harness import ck_create_topic
        ck_create_topic(srv.bootstrap, "fmb", 1)
        c = kwire.Conn(srv.port, timeout=bound(10))
        for i in range(6):
            batch = kwire.build_batch([(b"k", b"x" * 600, ())])
            out = kwire.produce(c, "fmb", 0, batch)
            eq(out["error_code"], 0, "produce")
        got = kwire.fetch_v4(c, "fmb", 0, 0, max_bytes=1 << 20)
        eq(got["error_code"], 0, "fetch")
        batches = kwire.parse_batches(got["records"])
        # each batch is ~680 bytes: the broker's 1024 leaves room for one
        eq(len(batches), 1, "batches under fetch.max.bytes=1024")
        c.close()
    finally:
        srv.stop()


if __name__ == "__main__":
    S.run()
