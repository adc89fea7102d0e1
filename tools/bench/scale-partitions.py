#!/usr/bin/env python3
"""Partitions per node: creates N idle partitions (replication factor 1)
on one fresh samsa through CreateTopics in batches and reports creation
time, RSS before and after (so RSS per idle partition), clean shutdown
time and restart-to-all-serving time.

    tools/bench/scale-partitions.py [--samsa ./samsa] [--partitions 5000]
        [--per-topic 100] [--nofile 1024] [--keep]

--nofile runs samsa under that RLIMIT_NOFILE (soft and hard), as a
default Debian shell would (`ulimit -n 1024`). RSS is VmRSS from
/proc/<pid>/status, read after the partitions are all serving and one
second of quiet; the per-partition figure is (after - before) / N, where
"before" is the node with no topic (its metadata image and threads).
Loopback only; the data dir is a temporary directory, removed unless
--keep."""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "interop"))
import kwire  # noqa: E402


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def rss_kib(pid, field="VmRSS"):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def rss_parts(pid):
    """VmRSS split as the kernel counts it: anonymous (heap, stacks),
    file-backed (binary, libraries, index mappings) and shared memory."""
    return {k: rss_kib(pid, k) for k in ("RssAnon", "RssFile", "RssShmem")}


class Node:
    def __init__(self, samsa, nofile, data):
        self.samsa, self.nofile, self.data = samsa, nofile, data
        self.port, self.cport = free_port(), free_port()
        self.proc = None
        self.log = open(os.path.join(os.path.dirname(data), "samsa.log"), "ab")

    def start(self):
        argv = [self.samsa, "--override", "node.id=1", "--override", "process.roles=broker,controller",
                "--override", "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (self.port, self.cport),
                "--override", "controller.quorum.voters=1@127.0.0.1:%d" % self.cport,
                "--override", "log.dirs=%s" % self.data, "--override", "auto.create.topics.enable=false"]
        if self.nofile:
            argv = ["/bin/sh", "-c", 'ulimit -n %d && exec "$0" "$@"' % self.nofile] + argv
        t0 = time.monotonic()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        while time.monotonic() - t0 < 60:
            try:
                c = kwire.Conn(self.port, timeout=2)
                ok = kwire.api_versions(c, 0)["error_code"] == 0
                c.close()
                if ok:
                    return
            except (OSError, kwire.Closed):
                pass
            time.sleep(0.05)
        raise SystemExit("samsa did not start")

    def stop(self):
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=300)
        return time.monotonic() - t0, rc


def all_serving(node, topics, per_topic, limit=600):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        c = kwire.Conn(node.port, timeout=60)
        try:
            ok = True
            for i in range(0, len(topics), 100):
                md = kwire.metadata_v12(c, topics=topics[i:i + 100])
                for t in md["topics"]:
                    if t["error_code"] or len(t["partitions"]) != per_topic or \
                            any(p["error_code"] or p["leader"] != 1 for p in t["partitions"]):
                        ok = False
            if ok:
                # the last partition of every topic answers ListOffsets (its log is open)
                for t in topics:
                    if kwire.list_offsets_v2(c, t, per_topic - 1)["error_code"]:
                        ok = False
                        break
            if ok:
                return time.monotonic() - t0
        finally:
            c.close()
        time.sleep(0.2)
    raise SystemExit("not all serving within %ds" % limit)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samsa", default="./samsa")
    ap.add_argument("--partitions", type=int, default=5000)
    ap.add_argument("--per-topic", type=int, default=100)
    ap.add_argument("--nofile", type=int, default=1024)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="samsa-scale.")
    data = os.path.join(work, "data")
    node = Node(os.path.abspath(a.samsa), a.nofile, data)
    try:
        node.start()
        time.sleep(1)
        rss0 = rss_kib(node.proc.pid)
        parts0 = rss_parts(node.proc.pid)
        ntopics = a.partitions // a.per_topic
        topics = ["scale-%05d" % i for i in range(ntopics)]
        c = kwire.Conn(node.port, timeout=120)
        t0 = time.monotonic()
        for i in range(0, ntopics, 10):
            res = kwire.create_topics_v4(c, [(t, a.per_topic, 1, {}) for t in topics[i:i + 10]], timeout_ms=120000)
            bad = [r for r in res if r["error_code"]]
            if bad:
                raise SystemExit("CreateTopics: %s" % bad[:3])
        c.close()
        all_serving(node, topics, a.per_topic)
        create_s = time.monotonic() - t0
        time.sleep(1)
        rss1 = rss_kib(node.proc.pid)
        parts1 = rss_parts(node.proc.pid)
        fds = len(os.listdir("/proc/%d/fd" % node.proc.pid))
        stop_s, rc = node.stop()
        t0 = time.monotonic()
        node.start()
        all_serving(node, topics, a.per_topic)
        restart_s = time.monotonic() - t0
        time.sleep(1)
        rss2 = rss_kib(node.proc.pid)
        parts2 = rss_parts(node.proc.pid)
        stop2_s, rc2 = node.stop()
        n = ntopics * a.per_topic
        print("partitions %d (%d topics x %d), RLIMIT_NOFILE %s" % (n, ntopics, a.per_topic, a.nofile or "inherited"))
        print("create to all serving   %.1f s (%.2f ms per partition)" % (create_s, create_s * 1000 / n))
        print("RSS empty node          %d KiB" % rss0)
        print("RSS after create        %d KiB  -> %.2f KiB per idle partition" % (rss1, (rss1 - rss0) / n))
        print("RSS after restart       %d KiB  -> %.2f KiB per idle partition" % (rss2, (rss2 - rss0) / n))
        for name, p in (("after create", parts1), ("after restart", parts2)):
            print("  %-13s         " % name + ", ".join("%s %+.2f KiB" % (k[3:], (p[k] - parts0[k]) / n)
                                                     for k in sorted(p)) + " per idle partition")
        print("open fds after create   %d" % fds)
        print("clean shutdown          %.1f s (exit %d), then %.1f s (exit %d)" % (stop_s, rc, stop2_s, rc2))
        print("restart to all serving  %.1f s" % restart_s)
    finally:
        if node.proc and node.proc.poll() is None:
            node.proc.kill()
            node.proc.wait()
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("kept", work)


if __name__ == "__main__":
    main()
