"""A 3-node combined cluster (every node a broker and a controller):
100 topics created by a real client through one broker and seen by the
others; the active controller killed with SIGKILL while an election
follows, admin operations resume, nothing committed is lost; the killed
node restarts and catches up through a snapshot (the others truncated
their logs meanwhile); a producer holding metadata that names a dead
leader recovers once leadership moves."""
# limit: 150

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cluster as C  # noqa: E402
from cluster import Failure, check, eq, log  # noqa: E402,F401

S = C.harness.Suite("10_combined", case_limit=90)
# Small snapshots so that a restarted node has to catch up through one.
CL = None
CREATED = set()


def setup():
    global CL
    CL = C.Cluster(3, overrides={"metadata.log.max.record.bytes.between.snapshots": "20000"})
    CL.start()


@S.case
def create_100_topics_through_broker_1_seen_by_2_and_3():
    names = ["t%03d" % i for i in range(100)]
    t0 = time.monotonic()
    CREATED.update(C.create_topics(CL.node(1), names, partitions=2, rf=1))
    log("100 topics created through node 1 in %.2fs", time.monotonic() - t0)
    for n in (2, 3):
        C.wait_topics(CL.node(n), names)
    leader, epoch, hw = CL.quorum()
    log("leader %d, epoch %d, high watermark %d", leader, epoch, hw)


@S.case
def kill9_active_controller_then_admin_resumes():
    leader, epoch, hw = CL.quorum()
    victim = CL.node(leader)
    t0 = time.monotonic()
    victim.kill9()
    survivors = [n for n in CL.nodes if n is not victim]
    # the next committed metadata change, through a surviving broker
    CREATED.update(C.create_topics(survivors[0], ["after-kill"], limit=30))
    dt = time.monotonic() - t0
    nl, ne, nhw = CL.quorum(via=survivors)
    check(nl != leader and ne > epoch, "no new leader: %d/%d after %d/%d", nl, ne, leader, epoch)
    log("kill -9 of leader %d -> leader %d (epoch %d); next metadata change committed %.2fs after the kill",
        leader, nl, ne, dt)
    for n in survivors:
        C.wait_topics(n, CREATED)  # nothing committed was lost


@S.case
def restarted_node_catches_up_through_a_snapshot():
    dead = [n for n in CL.nodes if not n.alive()][0]
    alive = [n for n in CL.nodes if n.alive()]
    # Enough new metadata for the others to snapshot and drop the log
    # prefix the dead node would need.
    more = ["more%03d" % i for i in range(60)]
    sizes = {n.node_id: n.log_size() for n in alive}
    CREATED.update(C.create_topics(alive[0], more, partitions=3, rf=1))
    for n in alive:
        n.wait_log(r"wrote snapshot", sizes[n.node_id], limit=10)
    since = dead.log_size()
    dead.start()
    CL.wait_ready()
    C.wait_topics(dead, CREATED, limit=20)
    text = dead.log_text(since)
    check("loaded snapshot" in text, "node %d caught up without a snapshot; its log:\n%s",
          dead.node_id, text[-2000:])
    log("node %d caught up: %s", dead.node_id,
        [l.split(" INFO: ")[-1] for l in text.splitlines() if "loaded snapshot" in l][0])


@S.case
def stale_metadata_client_recovers():
    from confluent_kafka import Producer
    C.create_topics(CL.node(1), ["moving"], partitions=1, rf=3)
    C.wait_topics(CL.node(1), ["moving"])
    md = C.admin(CL.node(1)).list_topics("moving", timeout=10)
    old = md.topics["moving"].partitions[0].leader
    others = [n for n in CL.nodes if n.node_id != old]
    p = Producer({"bootstrap.servers": ",".join(n.bootstrap for n in CL.nodes), "acks": "1",
                  "message.timeout.ms": 20000, "retry.backoff.ms": 100})
    p.produce("moving", b"before")
    check(p.flush(10) == 0, "first record not delivered")
    CL.node(old).kill9()
    # fenced after broker.session.timeout.ms; leadership moves to an ISR member
    results = []
    p.produce("moving", b"after", on_delivery=lambda err, msg: results.append((err, msg)))
    left = p.flush(C.bound(25))
    check(left == 0 and results and results[0][0] is None, "record not delivered after the leader died: %s",
          results)
    deadline = time.monotonic() + C.bound(10)
    while True:  # (the producer may have heard from a broker ahead of this one)
        md = C.admin(others[0]).list_topics("moving", timeout=10)
        new = md.topics["moving"].partitions[0].leader
        if new != old or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    check(new != old and new in [n.node_id for n in others], "leader did not move: %d -> %d", old, new)
    log("leader of moving-0 moved %d -> %d; the producer followed", old, new)
    CL.node(old).start()
    CL.wait_ready()


S.run(setup)
