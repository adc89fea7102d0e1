#!/usr/bin/env python3
"""Client connections per node: opens N idle client connections to one
fresh samsa and reports the accept rate and the server's RSS per
connection (never spoke, and after one ApiVersions each); then runs a
connection storm (connect and reset, thousands per second, from several
127.0.0.x source addresses) while one established client times
ApiVersions and Produce (acks=1), and reports its p50/p99/max with and
without the storm; then checks max.connections and
max.connections.per.ip on a second node with exact outcomes.

    tools/bench/connections.py [--samsa ./samsa] [--connections 10000]
        [--storm-seconds 8] [--keep]

The script raises its own RLIMIT_NOFILE to the hard limit (it holds N
sockets); samsa raises its own. Loopback only. The accept rate is N over
the time from the first connect until the server holds N more fds
(/proc/<pid>/fd): what accept(2) managed, not what the kernel's backlog
took. RSS is VmRSS after one quiet second. Each phase is bounded; a run
takes well under a minute at 10 000 connections.

tests/interop/cases/87_connections_scale.py imports the helpers below
(open_idle, verdicts, limits_check) for a bounded version."""
import argparse
import multiprocessing
import os
import resource
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "interop"))
import kwire  # noqa: E402
sys.path.insert(0, HERE)
from benchnode import free_port, node_argv, wait_ready, rss_kib, pct  # noqa: E402


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def open_idle(port, n, sources=("127.0.0.1",), limit=60.0, pid=None, wave=1000):
    """n non-blocking connects to 127.0.0.1:port, spread over the source
    addresses round robin; returns the connected sockets (blocking again)
    once every connect completed. With pid (the server's), connects go in
    waves of `wave` and each wave waits until the server holds that many
    more fds: a completed connect is only in the listen queue, and a
    burst beyond it (socket.listen.backlog.size) is dropped by the kernel
    once SYN cookies answer for it, leaving a client that believes it is
    connected. Raises on a failed connect or when the limit passes."""
    deadline = time.monotonic() + limit
    base = fd_count(pid) if pid else 0
    socks = []
    while len(socks) < n:
        k = min(wave if pid else n, n - len(socks))
        sel = selectors.DefaultSelector()
        pending = 0
        for i in range(len(socks), len(socks) + k):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            s.bind((sources[i % len(sources)], 0))
            err = s.connect_ex(("127.0.0.1", port))
            if err not in (0, 115):  # EINPROGRESS
                raise OSError(err, "connect %d: %s" % (i, os.strerror(err)))
            socks.append(s)
            if err == 115:
                sel.register(s, selectors.EVENT_WRITE)
                pending += 1
        while pending:
            if time.monotonic() > deadline:
                raise TimeoutError("connects not done within %.0fs" % limit)
            for key, _ in sel.select(timeout=1.0):
                e = key.fileobj.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if e:
                    raise OSError(e, "connect: %s" % os.strerror(e))
                sel.unregister(key.fileobj)
                pending -= 1
        sel.close()
        while pid and fd_count(pid) < base + len(socks):
            if time.monotonic() > deadline:
                raise TimeoutError("the server accepted %d of %d within %.0fs"
                                   % (fd_count(pid) - base, len(socks), limit))
            time.sleep(0.005)
    for s in socks:
        s.setblocking(True)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return socks


def _read_frame(s, timeout):
    """One response frame's body, or None when the server closed (EOF or
    reset) first."""
    s.settimeout(timeout)
    buf = b""
    try:
        while len(buf) < 4:
            got = s.recv(4 - len(buf))
            if not got:
                return None
            buf += got
        size = struct.unpack(">i", buf)[0]
        body = b""
        while len(body) < size:
            got = s.recv(size - len(body))
            if not got:
                return None
            body += got
        return body
    except ConnectionResetError:
        return None


def verdicts(socks, timeout=10.0):
    """Sends ApiVersions v0 on every socket (all first, then reads), and
    returns a list of True (answered with error_code 0) / False (closed
    by the server without a byte)."""
    req = kwire.frame(kwire.API_VERSIONS, 0, kwire.api_versions_body(0), corr=7)
    for s in socks:
        try:
            s.sendall(req)
        except (BrokenPipeError, ConnectionResetError):
            pass
    out = []
    for s in socks:
        body = _read_frame(s, timeout)
        if body is None:
            out.append(False)
            continue
        corr, err = struct.unpack(">ih", body[:6])
        if corr != 7 or err != 0:
            raise AssertionError("ApiVersions answer: correlation %d error %d" % (corr, err))
        out.append(True)
    return out


def close_all(socks):
    for s in socks:
        try:
            s.close()
        except OSError:
            pass


def limits_check(port, per_ip, total, settle=0.4):
    """max.connections.per.ip = per_ip, max.connections = total on the node
    at port (no other client connected). Opens per_ip + 50 from 127.0.0.2,
    then groups from 127.0.0.3.. until 100 more than total, one group at a
    time, and returns [(source, served, refused)] plus whether a freed
    place is taken again: exact outcomes a caller compares with
    expected_limits(per_ip, total)."""
    rows, held = [], []
    s2 = open_idle(port, per_ip + 50, ("127.0.0.2",))
    v = verdicts(s2)
    rows.append(("127.0.0.2", v.count(True), v.count(False)))
    held += [s for s, ok in zip(s2, v) if ok]
    close_all(s for s, ok in zip(s2, v) if not ok)
    counted = v.count(True)
    k = 3
    want_total = total + 150  # 50 over per_ip, 100 over total
    opened = per_ip + 50
    while opened < want_total:
        n = min(per_ip, want_total - opened)
        src = "127.0.0.%d" % k
        ss = open_idle(port, n, (src,))
        v = verdicts(ss)
        rows.append((src, v.count(True), v.count(False)))
        held += [s for s, ok in zip(ss, v) if ok]
        close_all(s for s, ok in zip(ss, v) if not ok)
        counted += v.count(True)
        opened += n
        k += 1
    # a closed connection frees its place: close 10, then 10 new are served
    close_all(held[:10])
    held = held[10:]
    time.sleep(settle)
    again = open_idle(port, 12, ("127.0.0.%d" % k,))
    v = verdicts(again)
    rows.append(("127.0.0.%d after 10 closed" % k, v.count(True), v.count(False)))
    close_all(again)
    close_all(held)
    return rows


def expected_limits(per_ip, total):
    """What limits_check must return: per-IP cap on the first address,
    then every connection served until the total cap, the rest refused;
    after 10 closes, 10 of 12 served."""
    rows = [("127.0.0.2", per_ip, 50)]
    counted, opened, k = per_ip, per_ip + 50, 3
    while opened < total + 150:
        n = min(per_ip, total + 150 - opened)
        ok = max(0, min(n, total - counted))
        rows.append(("127.0.0.%d" % k, ok, n - ok))
        counted += ok
        opened += n
        k += 1
    rows.append(("127.0.0.%d after 10 closed" % k, 10, 2))
    return rows


# ---------------------------------------------------------------- the benchmark

# Kafka's default backlog is 50; a storm of thousands of connects per
# second needs the listen queue to hold a scheduling quantum's worth.
BACKLOG = "socket.listen.backlog.size=4096"


def start_node(samsa, work, overrides=()):
    port, cport = free_port(), free_port()
    data = os.path.join(work, "data-%d" % port)
    argv = node_argv(samsa, port, cport, data, (BACKLOG,) + tuple(overrides))
    log = open(os.path.join(work, "samsa-%d.log" % port), "ab")
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    if not wait_ready(port, proc, 60):
        proc.kill()
        raise SystemExit("samsa did not start")
    time.sleep(0.3)  # the probe's close is counted down
    return proc, port


def timed_client(port, topic, seconds):
    """ApiVersions and Produce (acks=1, one 100-byte record) in turns for
    seconds; returns (api_versions_ms, produce_ms) latency lists."""
    c = kwire.Conn(port, timeout=10)
    batch = kwire.build_batch([(b"k", b"v" * 100, [])])
    av, pr = [], []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t = time.perf_counter()
        if kwire.api_versions(c, 0)["error_code"]:
            raise SystemExit("ApiVersions failed")
        av.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        if kwire.produce(c, topic, 0, batch, acks=1)["error_code"]:
            raise SystemExit("Produce failed")
        pr.append((time.perf_counter() - t) * 1000)
        time.sleep(0.002)
    c.close()
    return av, pr


def storm(port, seconds, counter):
    """Connect and reset (SO_LINGER 0: no TIME_WAIT) as fast as one process
    can, rotating over 127.0.0.10-41 as sources."""
    raise_nofile()
    end = time.monotonic() + seconds
    n, k = 0, 0
    linger = struct.pack("ii", 1, 0)
    while time.monotonic() < end:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
        s.bind(("127.0.0.%d" % (10 + k % 32), 0))
        k += 1
        try:
            s.connect(("127.0.0.1", port))
            n += 1
        except OSError:
            pass
        s.close()
    counter.value = n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samsa", default="./samsa")
    ap.add_argument("--connections", type=int, default=10000)
    ap.add_argument("--storm-seconds", type=float, default=8.0)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    run(a.samsa, a.connections, a.storm_seconds, a.keep)


def run(samsa, connections, storm_seconds=8.0, keep=False, quiet=False):
    """The whole benchmark; prints its report unless quiet and returns its
    figures as a dict (tools/bench/scale-partitions.py puts them in its
    table)."""
    out = {}
    say = (lambda *x: None) if quiet else print
    nofile = raise_nofile()
    if nofile < connections + 100:
        raise SystemExit("RLIMIT_NOFILE hard limit %d is too low for %d connections" % (nofile, connections))
    work = tempfile.mkdtemp(prefix="samsa-conns.")
    samsa = os.path.abspath(samsa)
    procs = []
    try:
        proc, port = start_node(samsa, work)
        procs.append(proc)
        pid = proc.pid
        c = kwire.Conn(port, timeout=30)
        res = kwire.create_topics_v4(c, [("storm", 1, 1, {})], timeout_ms=30000)
        if res[0]["error_code"]:
            raise SystemExit("CreateTopics: %s" % res)
        # warm the produce path once before measuring anything
        kwire.produce(c, "storm", 0, kwire.build_batch([(b"k", b"v", [])]), acks=1)
        c.close()
        time.sleep(1)
        rss0, fds0 = rss_kib(pid), fd_count(pid)
        n = connections
        sources = ["127.0.0.%d" % i for i in range(2, 10)]
        t0 = time.monotonic()
        socks = open_idle(port, n, sources, pid=pid)
        accept_s = time.monotonic() - t0
        time.sleep(1)
        rss1 = rss_kib(pid)
        v = verdicts(socks, timeout=30)
        if not all(v):
            raise SystemExit("%d of %d idle connections were closed" % (v.count(False), n))
        time.sleep(1)
        rss2 = rss_kib(pid)

        # latency of an established client, without and with a storm
        base_av, base_pr = timed_client(port, "storm", storm_seconds / 2)
        counter = multiprocessing.Value("l", 0)
        st = multiprocessing.Process(target=storm, args=(port, storm_seconds, counter))
        st.start()
        time.sleep(0.2)
        av, pr = timed_client(port, "storm", storm_seconds - 0.5)
        st.join(storm_seconds + 30)
        rate = counter.value / storm_seconds
        # the idle connections are all still served after the storm
        v = verdicts(socks[:200], timeout=30)
        if not all(v):
            raise SystemExit("idle connections closed during the storm")
        close_all(socks)

        out.update(connections=n, accept_per_s=n / accept_s, rss_conn_kib=(rss1 - rss0) / n,
                   rss_conn_spoke_kib=(rss2 - rss0) / n, storm_per_s=rate,
                   av_quiet=(pct(base_av, 50), pct(base_av, 99)), av_storm=(pct(av, 50), pct(av, 99)),
                   pr_quiet=(pct(base_pr, 50), pct(base_pr, 99)), pr_storm=(pct(pr, 50), pct(pr, 99)))
        say("connections %d idle to one node (sources 127.0.0.2-9), RLIMIT_NOFILE %d" % (n, nofile))
        say("accept                  %.2f s -> %.0f connections/s accepted" % (accept_s, n / accept_s))
        say("RSS empty node          %d KiB" % rss0)
        say("RSS, never spoke        %d KiB -> %.2f KiB per connection" % (rss1, (rss1 - rss0) / n))
        say("RSS, one ApiVersions    %d KiB -> %.2f KiB per connection" % (rss2, (rss2 - rss0) / n))
        say("storm                   %.0f connects/s (connect + reset) for %.0f s" % (rate, storm_seconds))
        for name, b, s in (("ApiVersions", base_av, av), ("Produce acks=1", base_pr, pr)):
            say("%-15s p50/p99/max  %.2f/%.2f/%.2f ms quiet (%d), %.2f/%.2f/%.2f ms in the storm (%d)"
                  % (name, pct(b, 50), pct(b, 99), max(b), len(b), pct(s, 50), pct(s, 99), max(s), len(s)))

        # limits, exact outcomes
        per_ip, total = 300, 1000
        proc2, port2 = start_node(samsa, work, ("max.connections.per.ip=%d" % per_ip,
                                                "max.connections=%d" % total))
        procs.append(proc2)
        rows = limits_check(port2, per_ip, total)
        want = expected_limits(per_ip, total)
        say("limits: max.connections.per.ip=%d max.connections=%d" % (per_ip, total))
        for (src, ok, no), w in zip(rows, want):
            say("  %-28s served %4d refused %3d  %s" % (src, ok, no, "as expected" if (src, ok, no) == w
                                                                 else "EXPECTED %d/%d" % (w[1], w[2])))
        if rows != want:
            raise SystemExit("limits: got %s, expected %s" % (rows, want))
        out["limits_exact"] = True
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except Exception:
                    p.kill()
                    p.wait()
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            say("kept", work)
    return out


if __name__ == "__main__":
    main()
