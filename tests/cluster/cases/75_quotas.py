"""Client quotas on a split cluster (1 controller, 2 brokers): an
AlterClientQuotas sent to a broker is forwarded to the active controller
(samsactl quotas alter through broker 2), every broker then describes
the same quotas from its own image, and a producer over its
producer_byte_rate is throttled by the broker it writes to (broker 3,
which only follows the metadata log). The broker-side quota state goes
with the quota: once deleted through broker 3, broker 2 describes
nothing."""
# limit: 90

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cluster as C  # noqa: E402
from cluster import check, eq, log  # noqa: E402,F401

S = C.harness.Suite("75_quotas", case_limit=60)
CL = None
KIB = 1024


def setup():
    global CL
    CL = C.Cluster(1, 2, overrides={"quota.window.num": "3", "quota.window.size.seconds": "1"})
    CL.start()


def quotas(node, *args):
    rc, out, err = C.samsactl("quotas", *args, "--bootstrap-server", node.bootstrap)
    eq(rc, 0, "samsactl quotas %s via node %d (stderr %s)" % (args[0], node.node_id, err.strip()))
    return out


def wait_describe(node, want, limit=10.0):
    deadline = time.monotonic() + C.bound(limit)
    while True:
        got = quotas(node, "describe")
        if got == want:
            return
        check(time.monotonic() < deadline, "node %d describes %r, want %r", node.node_id, got, want)
        time.sleep(0.1)


@S.case
def alter_through_a_broker_seen_everywhere():
    out = quotas(CL.node(2), "alter", "--entity-type", "clients", "--entity-name", "greedy", "--add-config",
                 "producer_byte_rate=%d" % (100 * KIB))
    eq(out, "Completed updating quota configs for client-id 'greedy'.\n", "alter through broker 2")
    want = "Quota configs for client-id 'greedy' are producer_byte_rate=102400.0\n"
    for n in (2, 3):
        wait_describe(CL.node(n), want)


@S.case
def producer_throttled_by_its_broker():
    from confluent_kafka import Producer
    b3 = CL.node(3)
    C.create_topics(b3, ["q"], partitions=1, rf=1, assignment=[[3]])
    throttles = []
    p = Producer({"bootstrap.servers": b3.bootstrap, "client.id": "greedy", "acks": 1, "linger.ms": 0,
                  "batch.size": 16 * KIB, "throttle_cb": lambda ev: throttles.append(ev.throttle_time)})
    t0 = time.monotonic()
    for _ in range(64):  # 512 KiB: ~200 KiB at once, then 100 KiB/s
        p.produce("q", b"x" * (8 * KIB), partition=0)
        p.poll(0)
    eq(p.flush(C.bound(30)), 0, "undelivered")
    dt = time.monotonic() - t0
    log("512 KiB through broker 3 in %.1fs, throttles %s", dt, throttles[:10])
    check(dt >= 2.0, "greedy producer took only %.1fs", dt)
    check(max(throttles or [0]) > 0, "no throttle reported by broker 3")


@S.case
def delete_through_the_other_broker():
    quotas(CL.node(3), "alter", "--entity-type", "clients", "--entity-name", "greedy", "--delete-config",
           "producer_byte_rate")
    for n in (2, 3):
        wait_describe(CL.node(n), "")


if __name__ == "__main__":
    S.run(setup)
