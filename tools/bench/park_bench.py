#!/usr/bin/python3
"""Parking benchmark (tools/bench/park.sh): what parked requests cost.

  (a) idle CPU of the server with 10 000 parked long-poll Fetches, next to
      the same server with none parked (the floor);
  (b) server CPU per append (acks=1, one record per request, one
      partition) with 10 000 Fetches parked on 99 other partitions, next to
      the same with none parked: flat means the ratio is ~1;
  (c) ApiVersions latency on a worker while another connection of the same
      worker auto-creates 200 topics (num.network.threads=1).

Server CPU is utime+stime from /proc/<pid>/stat. Prints one table."""
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "interop"))
import harness  # noqa: E402
import kwire  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
PARKED = int(os.environ.get("PARK_BENCH_FETCHES", "10000"))
APPENDS = int(os.environ.get("PARK_BENCH_APPENDS", "20000"))
IDLE_S = float(os.environ.get("PARK_BENCH_IDLE_SECONDS", "5"))


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / TICK


def fetch_body(topic, partition, max_wait_ms):
    w = kwire.W().i32(-1).i32(max_wait_ms).i32(1).i32(1 << 20).i8(0)
    w.array([topic], lambda w, t: w.string(t).array([partition], lambda w, p: w.i32(p).i64(0).i32(1 << 20)))
    return w.bytes()


def park_fetches(srv, topic, n, partitions):
    """n long-poll Fetches (60 s) on partitions 1..partitions-1, 100 per
    connection. Returns the connections (closing them cancels)."""
    conns = []
    for i in range(n):
        if i % 100 == 0:
            conns.append(kwire.Conn(srv.port, timeout=120))
        conns[-1].send(kwire.FETCH, 4, fetch_body(topic, 1 + i % (partitions - 1), 60000))
    return conns


def idle_cpu(pid, seconds):
    c0 = cpu_s(pid)
    time.sleep(seconds)
    return (cpu_s(pid) - c0) / seconds


def appends(srv, topic, n):
    """n single-record produce requests (acks=1) to partition 0, 200 in
    flight. Returns the server CPU seconds they took."""
    c = kwire.Conn(srv.port, timeout=60)
    batch = kwire.build_batch([(b"k", b"x" * 100, ())])
    body = kwire.produce_body(topic, 0, batch, acks=1)
    frames = [c.frame(kwire.PRODUCE, 8, body) for _ in range(200)]
    c0 = cpu_s(srv.proc.pid)
    done = 0
    while done < n:
        k = min(200, n - done)
        data = b"".join(f for f, _ in frames[:k])
        corrs = [corr for _, corr in frames[:k]]
        c.send_raw(data)
        for corr in corrs:
            c.recv(corr, 0)
        done += k
        frames = [c.frame(kwire.PRODUCE, 8, body) for _ in range(200)]
    used = cpu_s(srv.proc.pid) - c0
    c.close()
    return used


def api_versions_during_autocreate():
    srv = harness.Server({"num.network.threads": "1", "auto.create.topics.enable": "true"}, name="autocreate")
    try:
        lat = []
        stop = threading.Event()

        def ping():
            c = kwire.Conn(srv.port)
            while not stop.is_set():
                t0 = time.monotonic()
                kwire.api_versions(c, 3)
                lat.append(time.monotonic() - t0)
                time.sleep(0.001)
            c.close()

        t = threading.Thread(target=ping, daemon=True)
        t.start()
        time.sleep(0.2)
        c = kwire.Conn(srv.port, timeout=120)
        t0 = time.monotonic()
        md = kwire.metadata_v12(c, topics=["auto-%03d" % i for i in range(200)], allow_auto=True)
        took = time.monotonic() - t0
        stop.set()
        t.join()
        ok = sum(1 for x in md["topics"] if x["error_code"] == 0)
        lat.sort()
        return took, ok, lat
    finally:
        srv.stop()


def main():
    srv = harness.Server({"num.network.threads": "2"}, name="park")
    rows = []
    try:
        harness.ck_create_topic(srv.bootstrap, "park", partitions=100)
        time.sleep(0.5)
        pid = srv.proc.pid
        base_idle = idle_cpu(pid, IDLE_S)
        base_cpu = appends(srv, "park", APPENDS)
        t0 = time.monotonic()
        conns = park_fetches(srv, "park", PARKED, 100)
        time.sleep(1.0)  # all parked
        park_s = time.monotonic() - t0
        parked_idle = idle_cpu(pid, IDLE_S)
        parked_cpu = appends(srv, "park", APPENDS)
        for c in conns:
            c.close()
        rows.append(("idle server CPU, %d Fetches parked (floor: none parked)" % PARKED,
                     "%.2f%% of a core" % (parked_idle * 100), "%.2f%%" % (base_idle * 100)))
        rows.append(("server CPU per append, %d Fetches parked on other partitions (floor: none parked)" % PARKED,
                     "%.1f us (%.2fx)" % (parked_cpu / APPENDS * 1e6, parked_cpu / base_cpu if base_cpu else 0),
                     "%.1f us" % (base_cpu / APPENDS * 1e6)))
        rows.append(("time to park %d Fetches (100 connections)" % PARKED, "%.2f s" % park_s, "-"))
    finally:
        srv.stop()
    took, ok, lat = api_versions_during_autocreate()
    p50 = lat[len(lat) // 2] * 1000
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000
    rows.append(("ApiVersions on the worker auto-creating 200 topics (%d created in %.2f s; %d samples)"
                 % (ok, took, len(lat)), "p50 %.2f ms, p99 %.2f ms, max %.2f ms" % (p50, p99, lat[-1] * 1000),
                 "goal p99 < 5 ms"))
    print("| measurement | result | floor in the same run |")
    print("|---|---|---|")
    for r in rows:
        print("| %s | %s | %s |" % r)
    harness.stop_all()


if __name__ == "__main__":
    main()
