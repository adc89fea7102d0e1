"""Metadata quorum benchmarks on a local 3-node combined cluster (the
cluster tests' helpers, tests/cluster/cluster.py), run by
tools/bench/quorum-failover.sh and tools/bench/quorum-ops.sh.

failover: kill -9 the active controller, time until the next metadata
    change (a CreateTopics through a surviving broker) is committed;
    restart it, wait until the cluster is whole, repeat. The floor is the
    failure detection the config asks for (controller.quorum.fetch.
    timeout.ms: a follower only stands for election after it).
ops: metadata operations per second: CreateTopics of one topic per
    request, one after another (latency-bound), and many topics per
    request (pipelined proposals). The floor is the fsync rate of the
    disk the logs are on, measured in the same run: a committed change
    costs at least one fsync on a majority.
"""

import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "cluster"))
import cluster as C  # noqa: E402


def fsync_rate(path, seconds=2.0):
    fn = os.path.join(path, "fsync-floor")
    fd = os.open(fn, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    n = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        os.write(fd, b"x" * 200)
        os.fdatasync(fd)
        n += 1
    dt = time.monotonic() - t0
    os.close(fd)
    os.unlink(fn)
    return n / dt


def failover(cl, rounds):
    fetch_timeout = 2000.0
    times = []
    for r in range(rounds):
        leader, epoch, hw = cl.quorum()
        victim = cl.node(leader)
        survivor = [n for n in cl.nodes if n is not victim][0]
        t0 = time.monotonic()
        victim.kill9()
        C.create_topics(survivor, ["failover-%d-%d" % (r, int(t0 * 1000) % 100000)], limit=30)
        dt = (time.monotonic() - t0) * 1000
        nl, ne, _ = cl.quorum(via=[n for n in cl.controllers if n.alive()])
        times.append(dt)
        print("  round %d: leader %d killed -> leader %d (epoch %d -> %d): next change committed after %.0f ms"
              % (r + 1, leader, nl, epoch, ne, dt), flush=True)
        victim.start()
        cl.wait_ready(limit=60)
    med = statistics.median(times)
    print("\nfailover (kill -9 of the active controller to the next committed metadata change), %d rounds:"
          % rounds)
    print("  median %.0f ms, min %.0f ms, max %.0f ms" % (med, min(times), max(times)))
    print("  floor: controller.quorum.fetch.timeout.ms = %.0f ms (failure detection); ratio %.2fx"
          % (fetch_timeout, med / fetch_timeout))
    return med


def ops(cl, n):
    from confluent_kafka.admin import NewTopic
    node = cl.node(1)
    floor = fsync_rate(node.data)
    a = C.admin(node)  # one client: the server's cost, not the client's setup
    a.list_topics(timeout=10)
    lat = []
    t0 = time.monotonic()
    for i in range(n):
        t1 = time.monotonic()
        a.create_topics([NewTopic("seq-%05d" % i, 1, 1)], operation_timeout=10)["seq-%05d" % i].result()
        lat.append((time.monotonic() - t1) * 1000)
    seq = n / (time.monotonic() - t0)
    names = ["bulk-%05d" % i for i in range(n * 4)]
    t0 = time.monotonic()
    for i in range(0, len(names), 200):
        fs = a.create_topics([NewTopic(t, 1, 1) for t in names[i:i + 200]], operation_timeout=30)
        for f in fs.values():
            f.result()
    bulk = len(names) / (time.monotonic() - t0)
    lat.sort()
    print("\nmetadata operations (CreateTopics, 1 partition, through broker 1, 3-node quorum):")
    print("  one topic per request, sequential: %7.0f ops/s (%d ops; latency p50 %.1f ms, p99 %.1f ms)"
          % (seq, n, lat[len(lat) // 2], lat[int(len(lat) * 0.99)]))
    print("  200 topics per request:            %7.0f ops/s (%d ops)" % (bulk, len(names)))
    print("  floor: fdatasync of 200 B on the data disk: %.0f/s; ratios %.2fx (sequential), %.2fx (bulk)"
          % (floor, seq / floor, bulk / floor))
    print("  (each op: leader fsync, follower fetch + fsync, apply on every node, and the partition's log")
    print("   created on the broker hosting it before the answer)")


def main():
    what = sys.argv[1]
    arg = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    cl = C.Cluster(3)
    cl.start()
    try:
        if what == "failover":
            failover(cl, arg or 5)
        elif what == "ops":
            ops(cl, arg or 200)
        else:
            raise SystemExit("usage: quorum_bench.py failover|ops [N]")
    finally:
        cl.stop()


if __name__ == "__main__":
    main()
