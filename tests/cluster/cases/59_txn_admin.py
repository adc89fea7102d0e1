"""DescribeTransactions and ListTransactions on a 3-node cluster, where
each node coordinates the transactional ids of the __transaction_state
partitions it leads: transactional ids coordinated by different nodes
(FindCoordinator key type 1) each get a producer id from their
coordinator, one with an open transaction; ListTransactions on a node
lists only the ids it coordinates, DescribeTransactions elsewhere is
NOT_COORDINATOR, and samsactl transactions list (asking every broker,
merging the answers) shows each id once with its coordinator, while
samsactl transactions describe finds the coordinator by itself."""
# limit: 120

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cluster as C  # noqa: E402
from cluster import Failure, check, eq, log  # noqa: E402,F401
import kgroups as KG  # noqa: E402
import kwire as K  # noqa: E402

S = C.harness.Suite("59_txn_admin", case_limit=90)
CL = None
TOPIC = "txa"
NOT_COORDINATOR = 16


def setup():
    global CL
    CL = C.Cluster(3, overrides=dict(C.FAST, **{"min.insync.replicas": "2",
                                                 "transaction.state.log.num.partitions": "6"}))
    CL.start()
    C.create_topics(CL.node(1), [TOPIC], partitions=1, rf=3)


def call(node, fn):
    c = K.Conn(CL.node(node).port)
    try:
        return fn(c)
    finally:
        c.close()


def coordinator_of(tid):
    """The node FindCoordinator names for tid (retried while
    __transaction_state is created and its leaders elected)."""
    deadline = time.monotonic() + C.bound(30)
    last = None
    while time.monotonic() < deadline:
        r = call(1, lambda c: KG.find_coordinator(c, tid, version=1, key_type=1))
        last = r
        if r["error_code"] == 0:
            return r["node_id"]
        time.sleep(0.2)
    raise Failure("no coordinator for %s: %s" % (tid, last))


def until_ok(what, fn, ok, limit=20):
    """fn() until ok(result): a new coordinator loads its shard
    (COORDINATOR_LOAD_IN_PROGRESS) and its first writes wait for the ISR."""
    deadline = time.monotonic() + C.bound(limit)
    while True:
        r = fn()
        if ok(r):
            return r
        if time.monotonic() > deadline:
            raise Failure("%s: %s" % (what, r))
        time.sleep(0.2)


def rows(*args):
    rc, out, err = C.samsactl("--bootstrap-server", CL.node(1).bootstrap, "transactions", *args)
    eq(rc, 0, "samsactl transactions %s: exit status (stderr %s)" % (" ".join(args), err.strip()))
    return [l.split() for l in out.splitlines()]


@S.case
def list_and_describe_across_coordinators():
    ids = {}  # node -> transactional id it coordinates
    for i in range(60):
        tid = "txa-%d" % i
        n = coordinator_of(tid)
        ids.setdefault(n, tid)
        if len(ids) == 3:
            break
    log("coordinators: %s", ids)
    check(len(ids) >= 2, "the ids found are coordinated by one node only: %s", ids)
    pids = {}
    for node, tid in ids.items():
        r = until_ok("InitProducerId of %s at node %d" % (tid, node),
                     lambda: call(node, lambda c: K.init_producer_id(c, 4, tid, timeout_ms=60000)),
                     lambda r: r["error_code"] == 0)
        eq(r["producer_epoch"], 0, "epoch of %s" % tid)
        pids[tid] = r["producer_id"]
    open_node, open_tid = sorted(ids.items())[0]
    res = call(open_node, lambda c: K.add_partitions_to_txn(c, 3, open_tid, pids[open_tid], 0, {TOPIC: [0]}))
    eq(res, {(TOPIC, 0): 0}, "AddPartitionsToTxn of %s" % open_tid)

    for node, tid in ids.items():
        lt = call(node, lambda c: K.list_transactions(c))
        eq(lt["error_code"], 0, "ListTransactions at node %d" % node)
        eq(sorted(x[0] for x in lt["transactions"]), [tid], "ids listed by node %d" % node)
        for other in ids:
            if other != node:
                d = call(other, lambda c: K.describe_transactions(c, [tid]))
                eq((d[0]["transactional_id"], d[0]["error_code"]), (tid, NOT_COORDINATOR),
                   "DescribeTransactions of %s at node %d" % (tid, other))

    got = rows("list")
    eq(got[0], ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"], "list header")
    want = sorted([tid, str(node), str(pids[tid]), "Ongoing" if tid == open_tid else "Empty"]
                  for node, tid in ids.items())
    eq(sorted(got[1:]), want, "samsactl transactions list (every broker, merged)")
    for node, tid in ids.items():
        r = rows("describe", tid)
        eq(r[1][:5], [str(node), tid, str(pids[tid]), "0", "Ongoing" if tid == open_tid else "Empty"],
           "samsactl transactions describe %s" % tid)
        eq(r[1][-1] if tid == open_tid else None, "%s-0" % TOPIC if tid == open_tid else None,
           "partitions of %s" % tid)
    eq(call(open_node, lambda c: K.end_txn(c, 3, open_tid, pids[open_tid], 0, False)), 0, "EndTxn abort")


if __name__ == "__main__":
    S.run(setup)
