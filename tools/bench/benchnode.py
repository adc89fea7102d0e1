"""What the Python benchmarks share about a single samsa node on
loopback: a free port, the node's command line, waiting until it answers
ApiVersions, and the /proc figures they read (RSS, on-CPU time).
Imported by scale-partitions.py, connections.py and fetch-session.py."""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "interop"))
import kwire  # noqa: E402


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def node_argv(samsa, port, cport, data, overrides=()):
    """A combined broker+controller node 1 listening on 127.0.0.1:port
    (controller on cport), its data in data, topics never auto-created;
    overrides are more "key=value" settings."""
    argv = [samsa, "--override", "node.id=1", "--override", "process.roles=broker,controller",
            "--override", "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (port, cport),
            "--override", "controller.quorum.voters=1@127.0.0.1:%d" % cport,
            "--override", "log.dirs=%s" % data, "--override", "auto.create.topics.enable=false"]
    for kv in overrides:
        argv += ["--override", kv]
    return argv


def wait_ready(port, proc, limit):
    """True once the node on port answers ApiVersions without error;
    False when limit seconds pass or proc exits first."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            c = kwire.Conn(port, timeout=2)
            ok = kwire.api_versions(c, 0)["error_code"] == 0
            c.close()
            if ok:
                return True
        except (OSError, kwire.Closed):
            pass
        time.sleep(0.05)
    return False


def rss_kib(pid, field="VmRSS"):
    """A /proc/PID/status field in KiB (-1 when absent)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def cpu_ns(pid):
    """On-CPU time of every thread of pid, in ns (schedstat)."""
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that just ended
    return total


def pct(xs, p):
    """The p-th percentile of xs (nearest rank below), nan when empty."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p / 100.0))] if xs else float("nan")
