"""Producer state on followers (3-node combined cluster, replication 3,
min.insync.replicas 2): batches of one producer id are produced with
acks=all to the leader, which is then killed -9. The new leader, whose
producer state came from replication alone, answers a retry of each of
the producer's retained batches with the original offsets and appends
nothing; a gap is OUT_OF_ORDER_SEQUENCE_NUMBER; the next batch follows.
The killed node restarts (its state rebuilt from its snapshot and log)
and catches up; leaders are then killed -9 and restarted until a node
that was restarted leads, and it deduplicates the same retries too."""
# limit: 150

import os
import sys


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cluster as C  # noqa: E402
from cluster import Failure, check, eq, log  # noqa: E402,F401
import kwire as K  # noqa: E402

S = C.harness.Suite("55_idempotent_failover", case_limit=60)
CL = None
TOPIC = "idem"
PID = 9001
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
RETRIABLE = (3, 6, 5, 19, 20)  # unknown partition, not leader, leader n/a, not enough replicas (+ after append)
BATCHES = []  # (batch bytes, base offset)


def setup():
    global CL
    CL = C.Cluster(3, overrides=dict(C.FAST, **{"min.insync.replicas": "2", "replica.lag.time.max.ms": "3000"}))
    CL.start()
    C.create_topics(CL.node(1), [TOPIC], partitions=1, rf=3)


def batch(seq, n, tag=b"v"):
    return K.build_batch([(b"k", b"%s-%d" % (tag, seq + i), []) for i in range(n)],
                         producer_id=PID, producer_epoch=0, base_sequence=seq)


def wait_state(pred, what, limit=25):
    """(leader, isr) of the partition once pred(leader, isr) holds."""
    return C.wait_partitions(CL, TOPIC, lambda st: pred(*st[0]), what, limit)[0]


def produce_to_leader(b):
    """Produces b (acks=all) to the current leader, retrying retriable
    errors. Returns the partition response."""
    return C.call_leader(CL, TOPIC, lambda c: K.produce(c, TOPIC, 0, b), lambda r: r["error_code"] not in RETRIABLE,
                         "produce")


def high_watermark():
    """The leader's high watermark, once a leader answers a Fetch without
    an error (leadership may still be settling)."""
    return C.call_leader(CL, TOPIC, lambda c: K.fetch_v4(c, TOPIC, 0, 0, max_bytes=1),
                         lambda p: p["error_code"] == 0, "fetch from the leader")["high_watermark"]


def retries_are_duplicates(what):
    for b, base in BATCHES:
        r = produce_to_leader(b)
        eq((r["error_code"], r["base_offset"]), (0, base), "%s: retry of the batch at %d" % (what, base))
    r = produce_to_leader(batch(1000, 1, b"gap"))
    eq(r["error_code"], OUT_OF_ORDER_SEQUENCE_NUMBER, "%s: a sequence gap" % what)


@S.case
def new_leader_deduplicates_from_replicated_state():
    seq = 0
    for n in (3, 4, 2, 5):
        b = batch(seq, n)
        r = produce_to_leader(b)
        eq(r["error_code"], 0, "produce of sequence %d" % seq)
        BATCHES.append((b, r["base_offset"]))
        seq += n
    eq([base for _b, base in BATCHES], [0, 3, 7, 9], "base offsets")
    leader, isr = wait_state(lambda l, i: l >= 0 and len(i) == 3, "full ISR")
    log("leader %d, ISR %s: killing the leader", leader, isr)
    CL.node(leader).kill9()
    new, _ = wait_state(lambda l, i: l >= 0 and l != leader, "a new leader")
    log("node %d leads", new)
    retries_are_duplicates("new leader %d" % new)
    r = produce_to_leader(batch(seq, 2))
    eq((r["error_code"], r["base_offset"]), (0, 14), "next batch on the new leader")
    BATCHES.append((batch(seq, 2), 14))
    eq(high_watermark(), 16, "high watermark: nothing appended twice")


@S.case
def restarted_node_rebuilds_state_and_deduplicates_as_leader():
    dead = [n for n in CL.nodes if not n.alive()][0]
    dead.start()
    wait_state(lambda l, i: len(i) == 3, "the restarted node back in the ISR")
    # Kill -9 (and restart) leaders until a restarted node leads: at most
    # two rounds (min.insync.replicas 2 needs two alive to produce).
    for _ in range(2):
        leader, _isr = wait_state(lambda l, i: l >= 0 and len(i) == 3, "full ISR")
        if leader == dead.node_id:
            break
        CL.node(leader).kill9()
        wait_state(lambda l, i: l >= 0 and l != leader, "a new leader")
        CL.node(leader).start()
        wait_state(lambda l, i: len(i) == 3, "node %d back in the ISR" % leader)
    leader, _ = wait_state(lambda l, i: l >= 0, "a leader")
    log("node %d leads (restarted node %d)", leader, dead.node_id)
    retries_are_duplicates("leader %d after restarts" % leader)
    eq(high_watermark(), 16, "high watermark")


if __name__ == "__main__":
    S.run(setup)
