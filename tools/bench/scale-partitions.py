#!/usr/bin/env python3
"""Partitions per node (`make bench-scale`): creates N idle partitions
(replication factor 1; default 100 000 = 1 000 topics x 100, or
BENCH_PARTITIONS) on one fresh samsa through CreateTopics in batches and
prints one table: creation time (first and last request too), all
serving (Metadata and ListOffsets of every partition, then one record
produced to a sample of partitions and read back), one Metadata for all
topics and the latency of small requests from another client meanwhile,
RSS and RSS per idle partition beyond the metadata image, the process's
CPU while idle, clean shutdown time, restart to all serving; then the
client-connection figures of tools/bench/connections.py
(--connections 0 or BENCH_CONNECTIONS=0 skips them).

    tools/bench/scale-partitions.py [--samsa ./samsa] [--partitions N]
        [--per-topic 100] [--nofile 1024] [--idle-seconds 60]
        [--connections 10000] [--keep] [--no-crash] [--reuse WORKDIR]
        [--port P]

After the second clean shutdown comes a crash phase (--no-crash skips it):
a clean start to all serving, kill -9, a start to all serving again
(every log recovered from its recovery point), the log manager's "log(s)
opened in" line of that start, and the clean shutdown after it.
--reuse WORKDIR (a directory --keep left, with its partitions) skips the
creation and its figures: clean start to all serving, the crash phase
and the shutdown, to compare binaries on the same data.

--nofile sets samsa's soft RLIMIT_NOFILE (`ulimit -Sn`), as a default
Debian shell does (1 024 soft, the hard limit above it); samsa raises its
soft limit to the hard one at startup. --hard-nofile N sets the hard
limit too. RSS is VmRSS from /proc/<pid>/status after the partitions are
all serving and one quiet second; per idle partition is (after - before)
/ N, "before" being the node with no topic; "beyond the image" takes off
the metadata image's share measured by tools/bench/quorum_image_bench.c
(IMAGE_BYTES_PER_PARTITION). Idle CPU is utime + stime from
/proc/<pid>/stat over --idle-seconds with no client. Loopback only; the
data dir is a temporary directory under $TMPDIR, removed unless --keep."""
import argparse
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "interop"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kwire  # noqa: E402
import connections  # noqa: E402  (tools/bench/connections.py)
from benchnode import free_port, node_argv, wait_ready, rss_kib, pct  # noqa: E402


def rss_parts(pid):
    """VmRSS split as the kernel counts it: anonymous (heap, stacks),
    file-backed (binary, libraries, index mappings) and shared memory."""
    return {k: rss_kib(pid, k) for k in ("RssAnon", "RssFile", "RssShmem")}


class Node:
    def __init__(self, samsa, nofile, data, hard_nofile=0, port=0):
        self.samsa, self.nofile, self.data, self.hard_nofile = samsa, nofile, data, hard_nofile
        self.port, self.cport = (port, port + 1) if port else (free_port(), free_port())
        self.mport = free_port()
        self.proc = None
        self.log = open(os.path.join(os.path.dirname(data), "samsa.log"), "ab")

    def start(self):
        argv = node_argv(self.samsa, self.port, self.cport, self.data,
                         ["samsa.metrics.listener=127.0.0.1:%d" % self.mport])
        if self.nofile:
            hard = "ulimit -Hn %d && " % self.hard_nofile if self.hard_nofile else ""
            argv = ["/bin/sh", "-c", 'ulimit -Sn %d && ' % self.nofile + hard + 'exec "$0" "$@"'] + argv
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        if not wait_ready(self.port, self.proc, 1800):
            raise SystemExit("samsa did not start")

    def stop(self):
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=3600)
        return time.monotonic() - t0, rc


def opened_lines(node, since):
    """The log manager's "log(s) opened in" lines in the node's log from
    byte since on: one per run of its open pool, which can go idle (and
    report) before the metadata replay has handed it every log."""
    node.log.flush()
    lines = []
    with open(node.log.name, "rb") as f:
        f.seek(since)
        for ln in f:
            if b"log(s) opened in" in ln:
                lines.append(ln.decode(errors="replace").strip().split("log manager: ", 1)[-1])
    total = sum(int(ln.split()[0]) for ln in lines)
    big = max(lines, key=lambda ln: int(ln.split()[0])) if lines else "none"
    return "%d log(s) in %d report(s); the largest: %s" % (total, len(lines), big)


def crash_phase(node, topics, per_topic, row):
    """From a stopped node: clean start to all serving, kill -9, start to
    all serving again (recovery), then the clean shutdown after it."""
    t0 = time.monotonic()
    node.start()
    all_serving(node, topics, per_topic)
    row("clean start to all serving", "%.1f s" % (time.monotonic() - t0))
    node.proc.kill()
    node.proc.wait()
    node.log.flush()
    since = os.path.getsize(node.log.name)
    t0 = time.monotonic()
    node.start()
    all_serving(node, topics, per_topic)
    row("after kill -9: start to all serving", "%.1f s" % (time.monotonic() - t0))
    row("  its log manager", opened_lines(node, since))
    stop_s, rc = node.stop()
    row("clean shutdown after the crash recovery", "%.1f s (exit %d)" % (stop_s, rc))


IMAGE_BYTES_PER_PARTITION = 201  # README, "Metadata quorum": 19.1 MB for 100 000 partitions


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (fields 14 and 15)


def all_serving(node, topics, per_topic, limit=1800):
    """Seconds until every partition has leader 1 in Metadata and the last
    partition of every topic answers ListOffsets (its log is open)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        c = kwire.Conn(node.port, timeout=120)
        try:
            ok = True
            for i in range(0, len(topics), 100):
                md = kwire.metadata_v12(c, topics=topics[i:i + 100])
                for t in md["topics"]:
                    if t["error_code"] or len(t["partitions"]) != per_topic or \
                            any(p["error_code"] or p["leader"] != 1 for p in t["partitions"]):
                        ok = False
            if ok:
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


def produce_sample(node, topics, per_topic, k, tag):
    """One record produced (acks=1) to k partitions spread over the node
    and read back by Fetch; returns the seconds it took."""
    t0 = time.monotonic()
    c = kwire.Conn(node.port, timeout=60)
    n = len(topics) * per_topic
    for j in range(k):
        i = (j * 7919) % n
        t, p = topics[i // per_topic], i % per_topic
        value = ("%s-%d" % (tag, i)).encode()
        r = kwire.produce(c, t, p, kwire.build_batch([(b"k", value, [])]), acks=1)
        if r["error_code"]:
            raise SystemExit("Produce %s-%d: error %d" % (t, p, r["error_code"]))
        f = kwire.fetch_v4(c, t, p, r["base_offset"], max_wait_ms=0)
        vals = [rec["value"] for rec in kwire.parse_batches(f["records"] or b"")]
        if f["error_code"] or value not in vals:
            raise SystemExit("Fetch %s-%d at %d: error %d, values %r" % (t, p, r["base_offset"], f["error_code"], vals[:3]))
    c.close()
    return time.monotonic() - t0


def prober(port, topic, stop, q):
    """Another client: Metadata for one topic, ApiVersions, in turns, until
    stop is set; puts the latencies (ms) on q."""
    c = kwire.Conn(port, timeout=120)
    lat = []
    while not stop.is_set():
        t = time.perf_counter()
        kwire.metadata_v12(c, topics=[topic])
        lat.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        kwire.api_versions(c, 0)
        lat.append((time.perf_counter() - t) * 1000)
    c.close()
    q.put(lat)


def metadata_all(node, topics, per_topic):
    """One Metadata request for all topics while another client sends small
    requests; returns (seconds to the whole response, partitions answered,
    latencies ms of the other client until then)."""
    stop, q = multiprocessing.Event(), multiprocessing.Queue()
    pr = multiprocessing.Process(target=prober, args=(node.port, topics[0], stop, q))
    pr.start()
    time.sleep(0.5)
    c = kwire.Conn(node.port, timeout=300)
    done = []
    orig = c.request

    def timed(*a, **kw):
        # the whole response is in: the prober stops, the parse follows
        r = orig(*a, **kw)
        done.append(time.monotonic())
        stop.set()
        return r

    c.request = timed
    t0 = time.monotonic()
    md = kwire.metadata_v12(c, topics=None)
    secs = done[0] - t0
    lat = q.get(timeout=300)
    pr.join(60)
    c.close()
    want = set(topics)
    n = sum(len(t["partitions"]) for t in md["topics"] if t["name"] in want and not t["error_code"])
    return secs, n, lat


def metrics_scrape(node):
    """One scrape of /metrics while another client sends small requests:
    (seconds, bytes, the samsa_partitions it reports, the other client's
    latencies ms meanwhile). The scrape runs on the endpoint's thread:
    the Kafka clients' workers should not notice it."""
    import urllib.request
    stop, q = multiprocessing.Event(), multiprocessing.Queue()
    pr = multiprocessing.Process(target=prober, args=(node.port, "scale-00000", stop, q))
    pr.start()
    time.sleep(0.5)
    t0 = time.monotonic()
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % node.mport, timeout=300) as r:
        body = r.read()
    secs = time.monotonic() - t0
    stop.set()
    lat = q.get(timeout=300)
    pr.join(60)
    hosted = -1
    for line in body.decode().splitlines():
        if line.startswith("samsa_partitions "):
            hosted = int(float(line.split()[1]))
    return secs, len(body), hosted, lat


def run_full(a, node, work, row):
    """Creation, its figures, restart; the crash phase unless --no-crash.
    Returns the number of partitions."""
    try:
        node.start()
        time.sleep(1)
        pid = node.proc.pid
        with open("/proc/%d/limits" % pid) as f:
            lim = [ln for ln in f if ln.startswith("Max open files")][0].split()[3:5]
        rss0 = rss_kib(pid)
        parts0 = rss_parts(pid)
        ntopics = a.partitions // a.per_topic
        n = ntopics * a.per_topic
        topics = ["scale-%05d" % i for i in range(ntopics)]
        print("partitions %d (%d topics x %d, RF 1), launched with ulimit -Sn %d, samsa's limit now %s/%s"
              % (n, ntopics, a.per_topic, a.nofile, lim[0], lim[1]), flush=True)
        c = kwire.Conn(node.port, timeout=600)
        t0 = time.monotonic()
        batch_s = []
        for i in range(0, ntopics, a.batch_topics):
            tb = time.monotonic()
            res = kwire.create_topics_v4(c, [(t, a.per_topic, 1, {}) for t in topics[i:i + a.batch_topics]],
                                         timeout_ms=600000)
            batch_s.append(time.monotonic() - tb)
            bad = [r for r in res if r["error_code"]]
            if bad:
                raise SystemExit("CreateTopics at topic %d: %s" % (i, bad[:3]))
            if len(batch_s) % 10 == 0:
                print("    created %d partitions in %.1f s (last request %.2f s), RSS %d KiB"
                      % ((i + a.batch_topics) * a.per_topic, time.monotonic() - t0, batch_s[-1], rss_kib(pid)),
                      flush=True)
        c.close()
        create_req_s = time.monotonic() - t0
        all_serving(node, topics, a.per_topic)
        create_s = time.monotonic() - t0
        row("CreateTopics, %d partitions per request" % (a.batch_topics * a.per_topic),
            "%.1f s (first request %.2f s, last %.2f s)" % (create_req_s, batch_s[0], batch_s[-1]))
        row("create to all serving", "%.1f s (%.2f ms per partition)" % (create_s, create_s * 1000 / n))
        row("CreateTopics seconds, request by request", " ".join("%.2f" % s for s in batch_s))
        time.sleep(1)
        rss1 = rss_kib(pid)
        parts1 = rss_parts(pid)
        fds = len(os.listdir("/proc/%d/fd" % pid))
        img = IMAGE_BYTES_PER_PARTITION / 1024.0
        row("RSS empty node / after create", "%d / %d KiB" % (rss0, rss1))
        row("RSS per idle partition (beyond the image's ~%.2f KiB)" % img,
            "%.2f KiB (%.2f KiB); anon %+.2f, file %+.2f" % ((rss1 - rss0) / n, (rss1 - rss0) / n - img,
                                                             (parts1["RssAnon"] - parts0["RssAnon"]) / n,
                                                             (parts1["RssFile"] - parts0["RssFile"]) / n))
        row("open fds after create", "%d" % fds)
        s = produce_sample(node, topics, a.per_topic, a.sample, "a")
        row("produce + fetch back one record, %d sample partitions" % a.sample, "all read back, %.2f s" % s)
        secs, got, lat = metadata_all(node, topics, a.per_topic)
        if got != n:
            raise SystemExit("Metadata for all topics answered %d of %d partitions" % (got, n))
        row("Metadata, all topics (one request)", "%d partitions in %.2f s" % (got, secs))
        row("  another client meanwhile: p50/p99/max (requests)",
            "%.2f/%.2f/%.2f ms (%d)" % (pct(lat, 50), pct(lat, 99), max(lat), len(lat)))
        secs, size, hosted, lat = metrics_scrape(node)
        if hosted < n:
            raise SystemExit("the /metrics scrape reports %d hosted partitions, want at least %d" % (hosted, n))
        row("/metrics scrape (samsa.metrics.listener)", "%.2f s, %d KB, %d partitions hosted" % (secs, size // 1000,
                                                                                              hosted))
        row("  another client meanwhile: p50/p99/max (requests)",
            "%.2f/%.2f/%.2f ms (%d)" % (pct(lat, 50), pct(lat, 99), max(lat), len(lat)))
        time.sleep(2)
        c0, w0 = cpu_ticks(pid), time.monotonic()
        time.sleep(a.idle_seconds)
        c1, w1 = cpu_ticks(pid), time.monotonic()
        hz = os.sysconf("SC_CLK_TCK")
        row("idle CPU over %.0f s" % a.idle_seconds, "%.2f%% of one core" % (100.0 * (c1 - c0) / hz / (w1 - w0)))
        stop_s, rc = node.stop()
        row("clean shutdown", "%.1f s (exit %d)" % (stop_s, rc))
        t0 = time.monotonic()
        node.start()
        all_serving(node, topics, a.per_topic)
        restart_s = time.monotonic() - t0
        row("restart to all serving", "%.1f s" % restart_s)
        s = produce_sample(node, topics, a.per_topic, a.sample, "b")
        row("after restart: produce + fetch back, %d partitions" % a.sample, "all read back, %.2f s" % s)
        time.sleep(1)
        rss2 = rss_kib(node.proc.pid)
        row("RSS per idle partition after restart (beyond the image)",
            "%.2f KiB (%.2f KiB)" % ((rss2 - rss0) / n, (rss2 - rss0) / n - img))
        stop2_s, rc2 = node.stop()
        row("second clean shutdown", "%.1f s (exit %d)" % (stop2_s, rc2))
        if not a.no_crash:
            crash_phase(node, topics, a.per_topic, row)
    finally:
        if node.proc and node.proc.poll() is None:
            node.proc.kill()
            node.proc.wait()
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("kept", work)
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samsa", default="./samsa")
    ap.add_argument("--partitions", type=int, default=int(os.environ.get("BENCH_PARTITIONS", "100000")))
    ap.add_argument("--per-topic", type=int, default=100)
    ap.add_argument("--batch-topics", type=int, default=10)
    ap.add_argument("--nofile", type=int, default=1024)
    ap.add_argument("--hard-nofile", type=int, default=0)
    ap.add_argument("--idle-seconds", type=float, default=float(os.environ.get("BENCH_IDLE_SECONDS", "60")))
    ap.add_argument("--sample", type=int, default=100)
    ap.add_argument("--connections", type=int, default=int(os.environ.get("BENCH_CONNECTIONS", "10000")))
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--no-crash", action="store_true")
    ap.add_argument("--reuse", metavar="WORKDIR")
    ap.add_argument("--port", type=int, default=0, help="the node's port (the controller's is the next); default: free ones")
    a = ap.parse_args()
    work = a.reuse or tempfile.mkdtemp(prefix="samsa-scale.")
    data = os.path.join(work, "data")
    node = Node(os.path.abspath(a.samsa), a.nofile, data, a.hard_nofile, a.port)
    rows = []

    def row(name, value):
        rows.append((name, value))
        print("  %-52s %s" % (name, value), flush=True)

    if a.reuse:
        ntopics = a.partitions // a.per_topic
        n = ntopics * a.per_topic
        topics = ["scale-%05d" % i for i in range(ntopics)]
        print("reusing %s: %d partitions, %s, ulimit -Sn %d" % (work, n, a.samsa, a.nofile), flush=True)
        try:
            crash_phase(node, topics, a.per_topic, row)
        finally:
            if node.proc and node.proc.poll() is None:
                node.proc.kill()
                node.proc.wait()
        a.connections = 0
        a.keep = True
    else:
        n = run_full(a, node, work, row)
    if a.connections > 0:
        cf = connections.run(a.samsa, a.connections, quiet=True)
        row("connections: %d idle, accepted" % cf["connections"], "%.0f/s" % cf["accept_per_s"])
        row("  RSS per idle connection (never spoke / one ApiVersions)",
            "%.2f / %.2f KiB" % (cf["rss_conn_kib"], cf["rss_conn_spoke_kib"]))
        row("  storm of connect + reset", "%.0f connects/s" % cf["storm_per_s"])
        row("  ApiVersions p50/p99 quiet / in the storm", "%.2f/%.2f / %.2f/%.2f ms" % (cf["av_quiet"] + cf["av_storm"]))
        row("  Produce acks=1 p50/p99 quiet / in the storm", "%.2f/%.2f / %.2f/%.2f ms" % (cf["pr_quiet"] + cf["pr_storm"]))
        row("  max.connections(.per.ip) outcomes", "exact" if cf.get("limits_exact") else "NOT exact")
    print()
    print("| measurement (%d partitions, ulimit -Sn %d) | result |" % (n, a.nofile))
    print("|---|---|")
    for name, value in rows:
        print("| %s | %s |" % (name.strip(), value))


if __name__ == "__main__":
    main()
