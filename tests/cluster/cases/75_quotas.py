"""Client quotas on a split cluster (1 controller, 2 brokers): an
AlterClientQuotas sent to a broker is forwarded to the active controller
(samsactl quotas alter through broker 2), every broker then describes
the same quotas from its own image, and a producer over its
producer_byte_rate is throttled by the broker it writes to (broker 3,
which only follows the metadata log). The broker-side quota state goes
with the quota: once deleted through broker 3, broker 2 describes
nothing. Over 30 s of steady state, a producer and a consumer above
their byte rates are held within 10 % of them (the issue's bound)."""
# limit: 200

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


def steady_rate(times, sizes, t_from, t_to):
    """Bytes per second of the events (time, size) in [t_from, t_to)."""
    got = sum(sz for t, sz in zip(times, sizes) if t_from <= t < t_to)
    return got / (t_to - t_from)


@S.case(limit=60)
def producer_held_within_10_percent_over_30s():
    from confluent_kafka import Producer
    b3 = CL.node(3)
    quotas(CL.node(2), "alter", "--entity-type", "clients", "--entity-name", "steady", "--add-config",
           "producer_byte_rate=%d" % (200 * KIB))
    C.create_topics(b3, ["steady"], partitions=1, rf=1, assignment=[[3]])
    done_at = []
    p = Producer({"bootstrap.servers": b3.bootstrap, "client.id": "steady", "acks": 1, "linger.ms": 0,
                  "batch.size": 16 * KIB, "queue.buffering.max.kbytes": 256})
    t0 = time.monotonic()
    payload = b"s" * (4 * KIB)
    while time.monotonic() - t0 < 34:
        try:
            p.produce("steady", payload, partition=0,
                      on_delivery=lambda err, msg: done_at.append(time.monotonic() - t0) if err is None else None)
        except BufferError:
            p.poll(0.05)
        p.poll(0)
    p.flush(C.bound(30))
    # after the first windows' burst: 30 s of steady state
    rate = steady_rate(done_at, [len(payload)] * len(done_at), 3.0, 33.0)
    log("steady producer: %.1f KiB/s over 30 s (quota 200 KiB/s)", rate / KIB)
    quotas(CL.node(2), "alter", "--entity-type", "clients", "--entity-name", "steady", "--delete-config",
           "producer_byte_rate")
    check(abs(rate - 200 * KIB) <= 20 * KIB, "producer at %.1f KiB/s, quota 200 KiB/s", rate / KIB)


@S.case(limit=60)
def consumer_held_within_10_percent_over_30s():
    from confluent_kafka import Consumer, TopicPartition
    b3 = CL.node(3)
    quotas(CL.node(2), "alter", "--entity-type", "clients", "--entity-name", "steadyreader", "--add-config",
           "consumer_byte_rate=%d" % (200 * KIB))
    # more than 33 s at the quota can read: 4 MiB more from an unthrottled client
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": b3.bootstrap, "client.id": "filler", "acks": 1, "linger.ms": 5})
    for _ in range(512):
        while True:
            try:
                p.produce("steady", b"f" * (8 * KIB), partition=0)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    eq(p.flush(C.bound(30)), 0, "filler undelivered")
    c = Consumer({"bootstrap.servers": b3.bootstrap, "client.id": "steadyreader", "group.id": "steadyreader",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                  "max.partition.fetch.bytes": 64 * KIB})
    times, sizes = [], []
    try:
        c.assign([TopicPartition("steady", 0, 0)])
        t0 = time.monotonic()
        while time.monotonic() - t0 < 33:
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                times.append(time.monotonic() - t0)
                sizes.append(len(m.value()))
    finally:
        c.close()
    check(sum(sizes) < 10000 * KIB, "the topic ran dry: %d bytes read", sum(sizes))
    rate = steady_rate(times, sizes, 3.0, 33.0)
    log("steady consumer: %.1f KiB/s over 30 s (quota 200 KiB/s)", rate / KIB)
    quotas(CL.node(2), "alter", "--entity-type", "clients", "--entity-name", "steadyreader", "--delete-config",
           "consumer_byte_rate")
    check(abs(rate - 200 * KIB) <= 20 * KIB, "consumer at %.1f KiB/s, quota 200 KiB/s", rate / KIB)


@S.case
def forwarded_throttle_passed_on_and_muted():
    """CreateTopics v4 (permissive) through broker 2, which forwards it to
    the controller: the controller's controller_mutation_rate throttle is
    in the answer and broker 2 mutes the client's connection for it
    (Kafka's sendForwardedResponse), so the next request on that
    connection waits."""
    import kwire as K
    quotas(CL.node(2), "alter", "--entity-type", "clients", "--entity-name", "mutator", "--add-config",
           "controller_mutation_rate=2")
    want = "Quota configs for client-id 'mutator' are controller_mutation_rate=2.0\n"
    deadline = time.monotonic() + C.bound(10)
    while want not in quotas(CL.node(2), "describe"):
        check(time.monotonic() < deadline, "broker 2 does not describe the mutator quota")
        time.sleep(0.1)
    c = K.Conn(C.harness.port_of(CL.node(2).bootstrap), client_id="mutator", timeout=C.bound(20))
    try:
        # a bucket of 3 windows at 2/s holds 6: 8 partitions leave it 2
        # short, 1 s at 2/s
        r = c.request(K.CREATE_TOPICS, 4, K.create_topics_v4_body([("fwd-throttled", 8, 1, {})]))
        throttle = r.i32()
        res = r.array(lambda r: (r.string(), r.i16(), r.string()))
        eq(res, [("fwd-throttled", 0, None)], "CreateTopics through broker 2")
        check(800 <= throttle <= 1100, "forwarded throttle_time_ms %d", throttle)
        t0 = time.monotonic()
        K.api_versions(c, 0)
        waited = time.monotonic() - t0
    finally:
        c.close()
    log("forwarded throttle %d ms; the next request waited %.2fs", throttle, waited)
    check(throttle / 1000.0 - 0.25 <= waited <= throttle / 1000.0 + 1.0,
          "the next request waited %.2fs after a throttle of %d ms", waited, throttle)
    # another client id is not held
    c = K.Conn(C.harness.port_of(CL.node(2).bootstrap), client_id="other-admin", timeout=C.bound(20))
    try:
        t0 = time.monotonic()
        K.api_versions(c, 0)
        check(time.monotonic() - t0 < 0.5, "another client waited %.2fs", time.monotonic() - t0)
    finally:
        c.close()
    quotas(CL.node(2), "alter", "--entity-type", "clients", "--entity-name", "mutator", "--delete-config",
           "controller_mutation_rate")


@S.case
def delete_through_the_other_broker():
    quotas(CL.node(3), "alter", "--entity-type", "clients", "--entity-name", "greedy", "--delete-config",
           "producer_byte_rate")
    for n in (2, 3):
        wait_describe(CL.node(n), "")


if __name__ == "__main__":
    S.run(setup)
