"""Transactional offsets on a 3-node cluster (__consumer_offsets replicated
three times): the followers of a group's __consumer_offsets partition get
its transactional offset batches and markers by replication alone, so
after the group coordinator is killed -9 the new one has loaded a
committed transaction's offsets as committed and an open transaction's as
pending (require_stable: UNSTABLE_OFFSET_COMMIT), and a COMMIT marker
through the new coordinator makes them visible."""
# limit: 180

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cluster as C  # noqa: E402
from cluster import Failure, check, eq, log  # noqa: E402,F401
import kgroups as kg  # noqa: E402
import kwire as K  # noqa: E402

S = C.harness.Suite("62_txn_offsets_failover", case_limit=150)
CL = None
TOPIC = "txf"
NOT_LEADER_OR_FOLLOWER = 6
RETRY = (kg.COORDINATOR_LOAD_IN_PROGRESS, kg.COORDINATOR_NOT_AVAILABLE, kg.NOT_COORDINATOR)


def setup():
    global CL
    # raw TxnOffsetCommits and markers stand in for the transaction
    # coordinator: no KIP-890 verification (it would ask the real one)
    CL = C.Cluster(3, overrides=dict(C.FAST, **{"transaction.partition.verification.enable": "false"}))
    CL.start()
    C.create_topics(CL.node(1), [TOPIC], partitions=2, rf=3)


def coordinator(group, not_node=None, limit=40.0):
    """The live node coordinating group (other than not_node)."""
    deadline = time.monotonic() + C.bound(limit)
    last = None
    while time.monotonic() < deadline:
        for v in [n for n in CL.nodes if n.alive()]:
            try:
                c = K.Conn(v.port)
                try:
                    r = kg.find_coordinator(c, group, version=1)
                finally:
                    c.close()
            except (OSError, K.Closed, K.ParseError) as e:
                last = repr(e)
                continue
            last = (v.node_id, r["error_code"], r["node_id"])
            if r["error_code"] == kg.NONE and r["node_id"] != not_node and CL.node(r["node_id"]).alive():
                return CL.node(r["node_id"])
        time.sleep(0.1)
    raise Failure("no coordinator for %s (last %s)" % (group, last))


def at(node, fn, done, what, limit=40.0):
    """fn(conn) at node until done(answer); returns the answer."""
    deadline = time.monotonic() + C.bound(limit)
    last = None
    while time.monotonic() < deadline:
        try:
            c = K.Conn(node.port)
            try:
                last = fn(c)
            finally:
                c.close()
            if done(last):
                return last
        except (OSError, K.Closed) as e:
            last = repr(e)
        time.sleep(0.1)
    raise Failure("%s: not done at node %d: %s" % (what, node.node_id, last))


def txn_commit(node, group, pid, offsets):
    return at(node, lambda c: kg.txn_offset_commit(c, group, pid, 0, {TOPIC: offsets}),
              lambda r: not set(r.values()) & set(RETRY), "TxnOffsetCommit of %d" % pid)


def marker(node, group, pid, commit):
    part = kg.partition_for(group)

    def call(c):
        res = K.write_txn_markers(c, [{"producer_id": pid, "producer_epoch": 0, "commit": commit,
                                       "coordinator_epoch": 0, "topics": {"__consumer_offsets": [part]}}])
        return res[0][1][("__consumer_offsets", part)]
    return at(node, call, lambda e: e != NOT_LEADER_OR_FOLLOWER, "marker of %d" % pid)


def fetch_stable(node, group):
    return at(node, lambda c: kg.offset_fetch_v7(c, group, {TOPIC: [0, 1]}, True),
              lambda r: r[0] not in RETRY, "OffsetFetch v7 of %s" % group)


@S.case
def coordinator_failover_keeps_transactions():
    g = "txf-group"
    node = coordinator(g)
    log("group %s: coordinator node %d, __consumer_offsets-%d", g, node.node_id, kg.partition_for(g))
    eq(txn_commit(node, g, 9001, [(0, 10, "a")]), {(TOPIC, 0): 0}, "TxnOffsetCommit of 9001")
    eq(marker(node, g, 9001, True), 0, "COMMIT of 9001")
    eq(txn_commit(node, g, 9002, [(1, 20, "b")]), {(TOPIC, 1): 0}, "TxnOffsetCommit of 9002 (left open)")
    eq(fetch_stable(node, g), (0, {(TOPIC, 0): (10, 0), (TOPIC, 1): (-1, kg.UNSTABLE_OFFSET_COMMIT)}),
       "before the failover")
    node.kill9()
    new = coordinator(g, not_node=node.node_id)
    log("new coordinator node %d", new.node_id)
    eq(fetch_stable(new, g), (0, {(TOPIC, 0): (10, 0), (TOPIC, 1): (-1, kg.UNSTABLE_OFFSET_COMMIT)}),
       "after the coordinator's kill -9: committed and still pending")
    eq(marker(new, g, 9002, True), 0, "COMMIT of 9002 through the new coordinator")
    eq(fetch_stable(new, g), (0, {(TOPIC, 0): (10, 0), (TOPIC, 1): (20, 0)}), "after the commit")
    node.start()


if __name__ == "__main__":
    S.run(setup)
