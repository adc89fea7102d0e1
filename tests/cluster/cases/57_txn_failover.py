"""The partition side of transactions on a 3-node cluster (replication 3,
min.insync.replicas 2): WriteTxnMarkers is answered once the ISR has the
marker (the high watermark is past it when the answer comes); a follower
answers NOT_LEADER_OR_FOLLOWER; after the leader is killed -9 the new
leader, whose producer state and aborted-transaction index came from
replication alone, has the same last stable offset (an open transaction
holds it) and lists the same aborted transaction to read_committed
fetches, and a COMMIT through it releases the LSO."""
# limit: 120

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cluster as C  # noqa: E402
from cluster import Failure, check, eq, log  # noqa: E402,F401
import kwire as K  # noqa: E402

S = C.harness.Suite("57_txn_failover", case_limit=60)
CL = None
TOPIC = "txn"
TXN = 0x10
NOT_LEADER_OR_FOLLOWER = 6
RETRIABLE = (3, 6, 5, 19, 20)  # unknown partition, not leader, leader n/a, not enough replicas (+ after append)


def setup():
    global CL
    # raw transactional batches without a coordinator: no KIP-890 check
    CL = C.Cluster(3, overrides=dict(C.FAST, **{"min.insync.replicas": "2", "replica.lag.time.max.ms": "3000",
                                                "transaction.partition.verification.enable": "false"}))
    CL.start()
    C.create_topics(CL.node(1), [TOPIC], partitions=1, rf=3)


def wait_state(pred, what, limit=25):
    """(leader, isr) of the partition once pred(leader, isr) holds."""
    return C.wait_partitions(CL, TOPIC, lambda st: pred(*st[0]), what, limit)[0]


def produce_to_leader(b, tid=None):
    """Produces b (acks=all) to the current leader, retrying retriable
    errors. Returns the partition response."""
    return C.call_leader(CL, TOPIC, lambda c: K.produce(c, TOPIC, 0, b, transactional_id=tid),
                         lambda r: r["error_code"] not in RETRIABLE, "produce")


def leader_fetch(isolation=1):
    """The leader's answer to a Fetch from 0, once a leader answers one
    without an error (leadership may still be settling)."""
    return C.call_leader(CL, TOPIC, lambda c: K.fetch_v4(c, TOPIC, 0, 0, isolation=isolation),
                         lambda p: p["error_code"] == 0, "fetch from the leader")


def marker_request(pid, commit, coordinator_epoch=1):
    def call(c):
        res = K.write_txn_markers(c, [{"producer_id": pid, "producer_epoch": 0, "commit": commit,
                                       "coordinator_epoch": coordinator_epoch, "topics": {TOPIC: [0]}}])
        return {"error_code": res[0][1][(TOPIC, 0)]}
    return call


def marker_to(node_id, pid, commit):
    c = K.Conn(CL.node(node_id).port)
    try:
        return marker_request(pid, commit)(c)["error_code"]
    finally:
        c.close()


def marker_to_leader(pid, commit):
    """The leader's error for the marker, once not a retriable one."""
    return C.call_leader(CL, TOPIC, marker_request(pid, commit), lambda r: r["error_code"] not in RETRIABLE,
                         "marker")["error_code"]


def txn_batch(pid, n, tag):
    return K.build_batch([(b"k", b"%s%d" % (tag, i), []) for i in range(n)], attributes=TXN,
                         producer_id=pid, producer_epoch=0, base_sequence=0)


@S.case
def markers_replicate_and_survive_failover():
    plain = K.build_batch([(b"k", b"p%d" % i, []) for i in range(3)])
    eq(produce_to_leader(plain)["error_code"], 0, "plain records")
    r = produce_to_leader(txn_batch(7001, 3, b"a"), tid="tx-a")
    eq((r["error_code"], r["base_offset"]), (0, 3), "transaction of 7001")
    leader, isr = wait_state(lambda l, i: l >= 0 and len(i) == 3, "full ISR")
    follower = [n for n in isr if n != leader][0]
    eq(marker_to(follower, 7001, False), NOT_LEADER_OR_FOLLOWER, "marker sent to follower %d" % follower)
    err = marker_to_leader(7001, False)
    eq(err, 0, "ABORT marker")
    p = leader_fetch()
    check(p["high_watermark"] >= 7, "the marker (offset 6) answered before the ISR had it: HW %d",
          p["high_watermark"])
    r = produce_to_leader(txn_batch(7002, 2, b"b"), tid="tx-b")
    eq((r["error_code"], r["base_offset"]), (0, 7), "transaction of 7002")
    p = leader_fetch()
    eq((p["high_watermark"], p["last_stable_offset"], p["aborted"]), (9, 7, [(7001, 3)]), "(HW, LSO, aborted)")

    leader, isr = wait_state(lambda l, i: l >= 0 and len(i) == 3, "full ISR")
    log("leader %d, ISR %s: killing the leader", leader, isr)
    CL.node(leader).kill9()
    new, _ = wait_state(lambda l, i: l >= 0 and l != leader, "a new leader")
    log("node %d leads", new)
    deadline = time.monotonic() + C.bound(20)
    while True:
        p = leader_fetch()
        if p["high_watermark"] == 9 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    eq((p["high_watermark"], p["last_stable_offset"], p["aborted"]), (9, 7, [(7001, 3)]),
       "new leader: (HW, LSO, aborted)")
    eq([r["offset"] for r in K.parse_batches(p["records"]) if not r["control"]], [0, 1, 2, 3, 4, 5],
       "read_committed records (the aborted ones listed, dropped by clients)")
    err = marker_to_leader(7002, True)
    eq(err, 0, "COMMIT marker on the new leader")
    p = leader_fetch()
    eq((p["high_watermark"], p["last_stable_offset"]), (10, 10), "after the COMMIT: (HW, LSO)")


if __name__ == "__main__":
    S.run(setup)
