"""Malformed frames of every API the node serves, on both listeners (the
client listener and the CONTROLLER listener), each on a connection of its
own: truncated bodies, random bytes after a valid header, huge and
negative array and string lengths, and a few versions out of range. The
server must answer with an error or close that connection with a log
line, never crash or hang: after each API it still answers ApiVersions on
a fresh connection of that listener, and at the end a produce and fetch
round trip gives back the exact records and the log has no sanitizer
report. Among the cases: a malformed Vote v1 on the controller listener,
which once freed the request its own completion was running in."""
import os
import random
import socket
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Server, Suite, bound, check, ck_create_topic, ck_produce, eq, log, raw_read_all, rec  # noqa: E402
import kwire  # noqa: E402

S = Suite("bad_frames", case_limit=300.0)
srv = None
rng = random.Random(61)
T = "bf"


def setup():
    global srv
    srv = Server()


def served(port):
    """(api_key, min, max) of what ApiVersions v0 says on that listener."""
    c = kwire.Conn(port, timeout=bound(10))
    try:
        got = kwire.api_versions(c, 0)
        eq(got["error_code"], 0, "ApiVersions")
        return sorted((k, lo, hi) for k, (lo, hi) in got["api_keys"].items())
    finally:
        c.close()


def header(key, version, corr, flexible):
    h = kwire.W().i16(key).i16(version).i32(corr).string("bad-frames")
    if flexible:
        h.tags()
    return h.bytes()


def bodies():
    """Malformed bodies, deterministic."""
    out = [b"", b"\xff" * 3, b"\x80\x80\x80\x80\x80\x01", struct.pack(">i", 0x7ffffff0) + b"\x00" * 8,
           struct.pack(">h", -2) + b"\x00" * 20]
    for n in (7, 60):
        out.append(bytes(rng.getrandbits(8) for _ in range(n)))
    return out


def send_one(port, data, wait=0.0):
    """Sends one frame on a new connection; with wait, reads whatever
    comes back (an answer, or the close) within wait seconds; then goes
    (a request the server parked is cancelled by the close)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=bound(5))
    try:
        s.sendall(struct.pack(">i", len(data)) + data)
        if wait:
            s.settimeout(wait)
            try:
                while s.recv(65536):
                    pass
            except (socket.timeout, ConnectionResetError):
                pass
    finally:
        s.close()


def storm(port, what):
    apis = served(port)
    frames = 0
    for key, lo, hi in apis:
        versions = sorted({lo, hi, hi + 1})
        for v in versions:
            for flexible in (False, True):
                for b in bodies():
                    frames += 1
                    send_one(port, header(key, v, frames, flexible) + b)
        # after each API: this listener still answers
        check(srv.alive(), "%s: the server died after malformed frames of API %d" % (what, key))
        c = kwire.Conn(port, timeout=bound(10))
        eq(kwire.api_versions(c, 0)["error_code"], 0, "%s: ApiVersions after API %d" % (what, key))
        c.close()
    log("%s: %d malformed frames over %d APIs", what, frames, len(apis))
    # and a frame cut short by the peer, on each API's first version
    for key, lo, _ in apis:
        s = socket.create_connection(("127.0.0.1", port), timeout=bound(5))
        s.sendall(struct.pack(">i", 100) + header(key, lo, 1, False))
        s.close()
    check(srv.alive(), "%s: the server died after cut frames" % what)


@S.case
def client_listener_survives_malformed_frames():
    storm(srv.port, "client listener")


@S.case
def controller_listener_survives_malformed_frames():
    # the Vote v1 shape that once used freed memory, first
    for i in range(20):
        body = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 40)))
        send_one(srv.cport, header(52, 1, i + 1, True) + body, 0.2)
    check(srv.alive(), "malformed Vote v1: the server died")
    storm(srv.cport, "controller listener")


@S.case
def data_unchanged_and_no_sanitizer_report():
    ck_create_topic(srv.bootstrap, T, 1)
    recs = [rec(b"k%d" % i, b"v%d" % i, [], 0, 1730000000000 + i) for i in range(10)]
    ck_produce(srv.bootstrap, T, recs)
    got, hw = raw_read_all(srv.bootstrap, T, 0)
    eq(hw, 10, "high watermark")
    eq([(r["key"], r["value"]) for r in got], [(r["key"], r["value"]) for r in recs], "records read back")
    srv.check_sanitizers()


if __name__ == "__main__":
    S.run(setup)
