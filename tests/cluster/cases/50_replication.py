"""Partition replication on a 3-node combined cluster: a topic with
replication factor 3 and min.insync.replicas=2; a confluent-kafka
producer with acks=all; every replica's log holds the same batches
(samsactl dump-log of each node's segments); kill -9 of the leader, the
controller elects another ISR member and the producer goes on; a
consumer reads every acknowledged record exactly once, in order, at the
exact offsets; the killed node restarts, truncates what it should and
catches up (identical logs again) and rejoins the ISR (its acks=1 tail,
taken while the followers were paused, is truncated and never read); with two of the
three brokers stopped an acks=all produce gets NOT_ENOUGH_REPLICAS."""
# limit: 200

import glob
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cluster as C  # noqa: E402
from cluster import Failure, check, eq, log  # noqa: E402,F401

S = C.harness.Suite("50_replication", case_limit=60)
CL = None
TOPIC = "repl"
N = 300
ACKED = []  # (key, value) of every acknowledged record, in produce order


def setup():
    global CL
    # A session long enough for a follower paused past the lag time to
    # leave the ISR through its leader (AlterPartition), not by fencing.
    CL = C.Cluster(3, overrides={"replica.lag.time.max.ms": "2000", "replica.fetch.backoff.ms": "200",
                                 "broker.session.timeout.ms": "6000"})
    CL.start()


def producer(**extra):
    from confluent_kafka import Producer
    conf = {"bootstrap.servers": ",".join(n.bootstrap for n in CL.nodes if n.alive()), "acks": "all",
            "message.timeout.ms": 30000, "retry.backoff.ms": 100, "linger.ms": 5,
            "enable.idempotence": False, "max.in.flight.requests.per.connection": 1}
    conf.update(extra)
    return Producer(conf)


def produce(first, count, limit=40, pad=0, **extra):
    """Produces records first..first+count-1 with acks=all (values padded
    with pad bytes); every one must be acknowledged. The producer holds one
    request in flight, so a retry never reorders."""
    p = producer(**extra)
    results = []
    for i in range(first, first + count):
        p.produce(TOPIC, key=b"k%05d" % i, value=b"v%05d" % i + b"p" * pad, partition=0,
                  on_delivery=lambda err, msg: results.append((err, msg.key(), msg.value(), msg.offset())))
    left = p.flush(C.bound(limit))
    check(left == 0, "%d record(s) not delivered within %ds", left, limit)
    errs = [r for r in results if r[0] is not None]
    check(not errs, "delivery errors: %s", errs[:3])
    results.sort(key=lambda r: r[3])
    for r in results:
        ACKED.append((r[1], r[2], r[3]))
    return results


def partition_state(via):
    md = C.admin(via).list_topics(TOPIC, timeout=10)
    p = md.topics[TOPIC].partitions[0]
    return p.leader, sorted(p.replicas), sorted(p.isrs)


def wait_state(via, pred, what, limit=20):
    deadline = time.monotonic() + C.bound(limit)
    st = None
    while time.monotonic() < deadline:
        try:
            st = partition_state(via)
            if pred(*st):
                return st
        except Exception:  # noqa: BLE001  (a broker starting or stopping)
            pass
        time.sleep(0.1)
    raise Failure("%s: not reached within %ds (leader, replicas, isr = %s)" % (what, limit, st))


def dump(node):
    """dump-log of the node's segments of the partition, without paths."""
    files = sorted(glob.glob(os.path.join(node.data, "%s-0" % TOPIC, "*.log")))
    check(files, "node %d has no segment of %s-0", node.node_id, TOPIC)
    out = subprocess.run([C.SAMSACTL_BIN, "dump-log"] + files, capture_output=True, text=True, timeout=30)
    check(out.returncode == 0, "dump-log on node %d: %s", node.node_id, out.stderr.strip())
    return "\n".join(l for l in out.stdout.splitlines() if not l.startswith("Dumping "))


def wait_identical(nodes, limit=20, min_batches=1):
    deadline = time.monotonic() + C.bound(limit)
    while True:
        dumps = {n.node_id: dump(n) for n in nodes}
        vals = list(dumps.values())
        nb = vals[0].count("baseOffset")
        if all(v == vals[0] for v in vals) and nb >= min_batches:
            return nb
        if time.monotonic() > deadline:
            detail = "\n".join("node %d: %d batches, last: %s" % (k, v.count("baseOffset"),
                                                               (v.splitlines() or [""])[-1][:200])
                               for k, v in dumps.items())
            raise Failure("replica logs differ after %ds:\n%s" % (limit, detail))
        time.sleep(0.2)


def consume_all(count, limit=30):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": ",".join(n.bootstrap for n in CL.nodes if n.alive()),
                  "group.id": "repl-check", "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    got = []
    deadline = time.monotonic() + C.bound(limit)
    while len(got) < count and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        got.append((m.key(), m.value(), m.offset()))
    # a little more: nothing beyond what was acknowledged may show up
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append((m.key(), m.value(), m.offset()))
    c.close()
    return got


@S.case
def create_topic_rf3_min_isr_2():
    from confluent_kafka.admin import NewTopic
    a = C.admin(CL.node(1))
    fs = a.create_topics([NewTopic(TOPIC, 1, 3, config={"min.insync.replicas": "2"})], operation_timeout=10,
                         request_timeout=15)
    for f in fs.values():
        f.result()
    st = wait_state(CL.node(1), lambda l, r, i: l >= 0 and r == [1, 2, 3] and i == [1, 2, 3], "RF 3 topic")
    log("leader %d, replicas %s, ISR %s", *st)


@S.case
def acks_all_produce_and_identical_replica_logs():
    t0 = time.monotonic()
    res = produce(0, N)
    log("%d records acknowledged (acks=all) in %.2fs, offsets %d..%d", len(res), time.monotonic() - t0,
        res[0][3], res[-1][3])
    eq([r[3] for r in res], list(range(N)), "acknowledged offsets")
    nb = wait_identical(CL.nodes, min_batches=1)
    log("the 3 replicas hold identical logs (%d batches)", nb)


@S.case
def isr_shrinks_when_a_follower_stalls_and_expands_when_it_catches_up():
    leader, replicas, isr = partition_state(CL.node(1))
    ctl = CL.quorum()[0]
    lead = CL.node(leader)
    # a follower that is not the active controller (AlterPartition needs one)
    stall = [n for n in CL.nodes if n.node_id not in (leader, ctl)][0]
    since = lead.log_size()
    stall.proc.send_signal(signal.SIGSTOP)
    t0 = time.monotonic()
    try:
        # A follower only falls behind when there is something to fetch:
        # acks=all waits until the leader has dropped it from the ISR, then
        # goes on with the two others (min.insync.replicas=2).
        res = produce(len(ACKED), 50, limit=10)
        dt = time.monotonic() - t0
        st = wait_state(lead, lambda l, r, i: stall.node_id not in i, "the stalled follower out of the ISR",
                        limit=3)
        lead.wait_log(r"repl-0: asking the controller to change the ISR from 3 to 2", since, limit=2)
    finally:
        stall.proc.send_signal(signal.SIGCONT)
    log("follower %d paused: acks=all answered after %.2fs, once its leader's AlterPartition left ISR %s",
        stall.node_id, dt, st[2])
    st = wait_state(lead, lambda l, r, i: i == [1, 2, 3], "the follower back in the ISR", limit=15)
    log("follower %d resumed: back in the ISR %s; %d more acknowledged meanwhile", stall.node_id, st[2], len(res))
    wait_identical(CL.nodes)


@S.case
def follower_catches_up_over_answers_appended_in_slices():
    """A follower held back for 4 MiB catches up from answers of 1 MiB
    (replica.fetch.max.bytes), which its fetcher appends 128 KiB per loop
    pass (about 8 per answer): the logs end up identical, the follower back
    in the ISR."""
    leader, replicas, isr = partition_state(CL.node(1))
    ctl = CL.quorum()[0]
    lead = CL.node(leader)
    stall = [n for n in CL.nodes if n.node_id not in (leader, ctl)][0]
    stall.proc.send_signal(signal.SIGSTOP)
    try:
        # batches of 16 KiB: an answer of 1 MiB holds about 64 of them
        res = produce(len(ACKED), 2000, limit=20, pad=2048, **{"batch.size": 16384})
        wait_state(lead, lambda l, r, i: stall.node_id not in i, "the stalled follower out of the ISR", limit=3)
    finally:
        stall.proc.send_signal(signal.SIGCONT)
    st = wait_state(lead, lambda l, r, i: i == [1, 2, 3], "the follower back in the ISR", limit=20)
    nb = wait_identical(CL.nodes, limit=30)
    log("follower %d caught up on %d records of 2 KiB: ISR %s, identical logs (%d batches)", stall.node_id,
        len(res), st[2], nb)


TAIL = 20


@S.case
def kill9_leader_with_an_unreplicated_tail_then_producer_goes_on():
    leader, replicas, isr = partition_state(CL.node(1))
    victim = CL.node(leader)
    survivors = [n for n in CL.nodes if n is not victim]
    # The followers pause (shorter than the session and lag timeouts):
    # what the leader takes meanwhile with acks=1 is on its log only.
    # Their fetches parked on the leader are answered (empty) after
    # replica.fetch.wait.max.ms and not followed by new ones.
    for n in survivors:
        n.proc.send_signal(signal.SIGSTOP)
    try:
        time.sleep(0.8)
        p = producer(**{"bootstrap.servers": victim.bootstrap, "acks": "1"})
        tail = []
        for i in range(TAIL):
            p.produce(TOPIC, key=b"tail%03d" % i, value=b"x", partition=0,
                      on_delivery=lambda err, msg: tail.append(err))
        left = p.flush(C.bound(5))
        check(left == 0 and len(tail) == TAIL and all(e is None for e in tail),
              "acks=1 tail not acknowledged by the leader: %s", tail[:3])
        victim.kill9()
    finally:
        for n in survivors:
            n.proc.send_signal(signal.SIGCONT)
    t0 = time.monotonic()
    st = wait_state(survivors[0], lambda l, r, i: l >= 0 and l != leader and leader not in i,
                    "a new leader from the ISR", limit=20)
    check(st[0] in isr, "new leader %d was not in the ISR %s", st[0], isr)
    log("killed leader %d; node %d leads after %.2fs (ISR %s)", leader, st[0], time.monotonic() - t0, st[2])
    res = produce(len(ACKED), N)
    log("producer went on: %d more acknowledged, offsets %d..%d", len(res), res[0][3], res[-1][3])
    got = consume_all(len(ACKED))
    eq(len(got), len(ACKED), "records consumed")
    want = [(k, v, o) for k, v, o in ACKED]
    eq([g[2] for g in got], list(range(len(ACKED))), "consumed offsets")
    eq(got, want, "consumed records")
    log("a consumer read all %d acknowledged records exactly once, in order, offsets 0..%d", len(got),
        len(got) - 1)
    wait_identical(survivors)


@S.case
def restarted_node_truncates_catches_up_and_rejoins_isr():
    dead = [n for n in CL.nodes if not n.alive()][0]
    since = dead.log_size()
    dead.start()
    CL.wait_ready()
    nb = wait_identical(CL.nodes, limit=30)
    st = wait_state(CL.node(1) if CL.node(1).alive() else CL.nodes[1],
                    lambda l, r, i: i == [1, 2, 3], "the restarted node back in the ISR", limit=20)
    text = dead.log_text(since)
    trunc = [l.split(" INFO: ")[-1] for l in text.splitlines() if "diverged" in l]
    check(trunc, "node %d did not truncate its unreplicated tail; its log:\n%s", dead.node_id, text[-3000:])
    log("node %d caught up (%d identical batches on all 3), ISR %s", dead.node_id, nb, st[2])
    log("%s", trunc[0])
    produce(len(ACKED), 10)
    wait_identical(CL.nodes, limit=20)


@S.case
def two_of_three_stopped_not_enough_replicas():
    from confluent_kafka import KafkaError
    # Keep the active controller running, so both controlled shutdowns
    # are committed while a quorum exists.
    keep = CL.node(CL.quorum()[0])
    for n in CL.nodes:
        if n is not keep:
            n.stop()
    st = wait_state(keep, lambda l, r, i: l == keep.node_id and i == [keep.node_id], "ISR of the last broker")
    log("nodes stopped; leader %d, ISR %s", st[0], st[2])
    p = producer(**{"bootstrap.servers": keep.bootstrap, "retries": 0})
    results = []
    p.produce(TOPIC, key=b"nope", value=b"nope", partition=0,
              on_delivery=lambda err, msg: results.append(err))
    p.flush(C.bound(20))
    check(results and results[0] is not None and results[0].code() == KafkaError.NOT_ENOUGH_REPLICAS,
          "acks=all with an ISR of 1 < min.insync.replicas 2 answered %s", results)
    log("acks=all produce answered %s", results[0].name())


S.run(setup)
