#!/usr/bin/env python3
"""Server CPU per empty incremental Fetch of a KIP-227 session of many
partitions (README, "Many partitions per request"), for two samsa
binaries side by side: both nodes run at once (10 topics x 1 000
partitions each, or --topics/--per-topic, plus a 10-partition topic
"busy" outside the session), and the rounds alternate between them.

Each round, on each node: a fresh session (a full Fetch v7 of every
partition at its end, then one incremental), then
  idle: --polls empty incremental polls (max wait 0), the server's CPU
        over them divided by the polls;
  busy: the same polls while another process produces one record per
        request (acks=1) to "busy" at --rate requests/s, minus the CPU of
        the same producer alone over the same time (measured right
        after): the skip of unchanged topics must hold while unrelated
        topics change;
  parked: a third of --polls empty polls with max wait 1 ms (each
        parks, watching what it waits for, and expires);
  hot:  the same producer writes to one partition of the session (s0-HOT,
        HOT = --per-topic / 2)
        instead, and each poll takes what it finds there and moves that
        partition's fetch offset in the next request (a consumer
        following one busy partition among its 10 000), minus the
        producer alone again.
Server CPU is the sum over the process's threads of
/proc/PID/task/TID/schedstat's on-CPU nanoseconds. Prints the median
and range over the rounds per node. Loopback only; data on /dev/shm when
it has room (else $TMPDIR), removed at exit.

    tools/bench/fetch-session.py --before /tmp/samsa.before ./samsa
        [--rounds 5] [--polls 3000] [--rate 1000] [--topics 10] [--per-topic 1000]"""
import argparse
import multiprocessing
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "interop"))
import kwire  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchnode import free_port, node_argv, wait_ready, cpu_ns  # noqa: E402


HOT = 500  # the busy partition of s0 (main sets --per-topic / 2)


class Node:
    def __init__(self, name, samsa, base):
        self.name, self.samsa = name, samsa
        self.data = os.path.join(base, name)
        os.makedirs(self.data)
        self.port, self.cport = free_port(), free_port()
        self.hot_end = 0  # s0-HOT's end
        self.log = open(os.path.join(base, name + ".log"), "ab")
        argv = node_argv(samsa, self.port, self.cport, self.data)
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        if not wait_ready(self.port, self.proc, 60):
            self.stop()
            raise SystemExit("%s: samsa did not start" % name)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def fetch_body(session_id, epoch, topics, max_wait_ms=0):
    """Fetch v7: topics [(name, [(partition, offset)])]."""
    w = kwire.W().i32(-1).i32(max_wait_ms).i32(1).i32(64 << 20).i8(0).i32(session_id).i32(epoch)
    w.array(topics, lambda w, t: w.string(t[0]).array(
        t[1], lambda w, p: w.i32(p[0]).i64(p[1]).i64(-1).i32(1 << 20)))
    w.array([], None)
    return w.bytes()


def fetch(c, body):
    """(error, session id, topics answered)."""
    r = c.request(kwire.FETCH, 7, body)
    r.i32()
    err, sid = r.i16(), r.i32()
    n = r.i32()
    return err, sid, max(n, 0)


def neighbour(port, rate, stop, topic="busy", parts=range(10)):
    c = kwire.Conn(port, timeout=30)
    batch = kwire.build_batch([(b"k", b"x" * 100, [])])
    bodies = [kwire.produce_body(topic, p, batch, acks=1) for p in parts]
    i = 0
    t0 = time.monotonic()
    while not stop.is_set():
        c.request(kwire.PRODUCE, 8, bodies[i % len(bodies)])
        i += 1
        delay = t0 + i / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    c.close()


def setup(node, names, per_topic):
    c = kwire.Conn(node.port, timeout=120)
    for name, n in [(t, per_topic) for t in names] + [("busy", 10)]:
        res = kwire.create_topics_v4(c, [(name, n, 1, {})], timeout_ms=120000)
        if res[0]["error_code"] != 0:
            raise SystemExit("%s: CreateTopics %s: %s" % (node.name, name, res[0]))
    # every partition serving: a full fetch answers all without an error
    topics = [(t, [(p, 0) for p in range(per_topic)]) for t in names]
    t0 = time.monotonic()
    while True:
        r = c.request(kwire.FETCH, 7, fetch_body(0, -1, topics))
        r.i32()
        r.i16()
        r.i32()
        errs = 0
        for _ in range(r.i32()):
            r.string()
            for _ in range(r.i32()):
                r.i32()
                errs += r.i16() != 0
                r.i64()
                r.i64()
                r.i64()
                r.array(lambda r: (r.i64(), r.i64()))
                r.bytes_()
        if errs == 0:
            break
        if time.monotonic() - t0 > 120:
            raise SystemExit("%s: %d partitions not serving" % (node.name, errs))
        time.sleep(0.5)
    c.close()
    return topics


def polls(c, sid, epoch, n, max_wait_ms=0):
    for _ in range(n):
        err, s, nt = fetch(c, fetch_body(sid, epoch, [], max_wait_ms))
        if (err, s, nt) != (0, sid, 0):
            raise SystemExit("empty poll answered (%d, %d, %d topics)" % (err, s, nt))
        epoch += 1
    return epoch


def hot_polls(c, sid, epoch, n, offset):
    """Polls that take what s0-HOT has and move its offset. Returns
    (epoch, offset)."""
    for _ in range(n):
        r = c.request(kwire.FETCH, 7, fetch_body(sid, epoch, [("s0", [(HOT, offset)])]))
        r.i32()
        err, s = r.i16(), r.i32()
        if (err, s) != (0, sid):
            raise SystemExit("hot poll answered (%d, %d)" % (err, s))
        for _ in range(r.i32()):
            name = r.string()
            for _ in range(r.i32()):
                p, e, hw = r.i32(), r.i16(), r.i64()
                r.i64()
                r.i64()
                r.array(lambda r: (r.i64(), r.i64()))
                r.bytes_()
                if (name, p) != ("s0", HOT) or e:
                    raise SystemExit("hot poll named %s-%d (error %d)" % (name, p, e))
                offset = hw
        epoch += 1
    return epoch, offset


def with_producer(node, args, topic, parts, work):
    """CPU of work() while a producer runs, minus the producer alone."""
    pid = node.proc.pid
    stop = multiprocessing.Event()
    nb = multiprocessing.Process(target=neighbour, args=(node.port, args.rate, stop, topic, parts))
    nb.start()
    time.sleep(0.3)
    c0, t0 = cpu_ns(pid), time.monotonic()
    work()
    c1, t1 = cpu_ns(pid), time.monotonic()
    time.sleep(t1 - t0)
    c2 = cpu_ns(pid)
    stop.set()
    nb.join()
    return ((c1 - c0) - (c2 - c1)) / args.polls / 1e6, (c2 - c1) / (t1 - t0) / 1e9


def round_on(node, topics, args):
    c = kwire.Conn(node.port, timeout=60)
    # s0-HOT at its end (the earlier rounds' hot records)
    topics = [(t, [(p, node.hot_end if (t, p) == ("s0", HOT) else o) for p, o in ps]) for t, ps in topics]
    err, sid, nt = fetch(c, fetch_body(0, 0, topics))
    if err or sid <= 0:
        raise SystemExit("%s: no session (%d, %d)" % (node.name, err, sid))
    epoch = polls(c, sid, 1, 50)  # the session's first walks
    pid = node.proc.pid
    c0 = cpu_ns(pid)
    epoch = polls(c, sid, epoch, args.polls)
    idle = (cpu_ns(pid) - c0) / args.polls / 1e6
    nparked = max(args.polls // 3, 1)
    c0 = cpu_ns(pid)
    epoch = polls(c, sid, epoch, nparked, max_wait_ms=1)
    parked = (cpu_ns(pid) - c0) / nparked / 1e6

    st = {"epoch": epoch, "offset": 0}

    def busy_polls():
        st["epoch"] = polls(c, sid, st["epoch"], args.polls)

    busy, alone = with_producer(node, args, "busy", range(10), busy_polls)
    st["offset"] = node.hot_end

    def hot():
        st["epoch"], st["offset"] = hot_polls(c, sid, st["epoch"], args.polls, st["offset"])

    hot_ms, _ = with_producer(node, args, "s0", [HOT], hot)
    st["epoch"], node.hot_end = hot_polls(c, sid, st["epoch"], 1, st["offset"])  # the last records
    fetch(c, fetch_body(sid, -1, []))  # close the session
    c.close()
    return idle, busy, alone, hot_ms, parked


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("samsa")
    ap.add_argument("--before", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--polls", type=int, default=3000)
    ap.add_argument("--rate", type=float, default=1000.0)
    ap.add_argument("--topics", type=int, default=10)
    ap.add_argument("--per-topic", type=int, default=1000)
    args = ap.parse_args()
    global HOT
    HOT = args.per_topic // 2
    shm = "/dev/shm"
    room = os.path.isdir(shm) and os.access(shm, os.W_OK) and \
        os.statvfs(shm).f_bavail * os.statvfs(shm).f_frsize >= (2 << 30)
    base = tempfile.mkdtemp(prefix="samsa-fetch-session.", dir=shm if room else None)
    nodes = []
    try:
        for name, binary in (("before", args.before), ("after", args.samsa)):
            nodes.append(Node(name, binary, base))  # one at a time: a failed start stops the other
        names = ["s%d" % i for i in range(args.topics)]
        topics = {}
        for n in nodes:
            t0 = time.monotonic()
            topics[n.name] = setup(n, names, args.per_topic)
            print("%s: %d partitions serving in %.1f s" % (n.name, args.topics * args.per_topic,
                                                          time.monotonic() - t0), flush=True)
        res = {n.name: [] for n in nodes}
        for r in range(args.rounds):
            order = nodes if r % 2 == 0 else nodes[::-1]
            for n in order:
                idle, busy, alone, hot, parked = round_on(n, topics[n.name], args)
                res[n.name].append((idle, busy, hot, parked))
                print("round %d %-6s idle %.4f ms/poll, busy neighbour %.4f ms/poll (neighbour alone %.0f%% CPU), "
                      "one hot partition %.4f ms/poll, parked 1 ms %.4f ms/poll"
                      % (r + 1, n.name, idle, busy, alone * 100, hot, parked), flush=True)
        print()
        print("| incremental poll, %d partitions, server CPU per poll | empty | empty, a busy neighbour topic "
              "| one session partition busy | empty, parked 1 ms |" % (args.topics * args.per_topic))
        print("|---|---|---|---|---|")
        for n in nodes:
            cols = []
            for k in range(4):
                v = sorted(x[k] for x in res[n.name])
                cols.append("%.3f ms (%.3f-%.3f)" % (statistics.median(v), v[0], v[-1]))
            print("| %s | %s |" % (n.name, " | ".join(cols)))
    finally:
        for n in nodes:
            n.stop()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
