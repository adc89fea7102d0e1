"""Automatic preferred-leader election (auto.leader.rebalance.enable, on
by default; leader.imbalance.check.interval.seconds 2 here): three
partitions with replication 3 and a different preferred replica each;
the node preferred by partition 1 is killed -9, its leadership moves to
another replica; once the node is back in the ISR, within the check
interval (plus slack) the controller makes it the leader again, and the
other partitions keep their preferred leaders. Each node runs two
follower fetcher threads (num.replica.fetchers 2)."""
# limit: 120

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cluster as C  # noqa: E402
from cluster import Failure, check, eq, log  # noqa: E402,F401

S = C.harness.Suite("45_leader_balance", case_limit=90)
CL = None
TOPIC = "bal"
ASSIGN = [[1, 2, 3], [2, 3, 1], [3, 1, 2]]


def setup():
    global CL
    # Two fetcher threads per node (num.replica.fetchers): the partitions
    # split between them, and every one must catch up for the ISRs below.
    CL = C.Cluster(3, overrides=dict(C.FAST, **{"leader.imbalance.check.interval.seconds": "2",
                                                "num.replica.fetchers": "2"}))
    CL.start()
    C.create_topics(CL.node(1), [TOPIC], assignment=ASSIGN)


def wait(pred, what, limit):
    return C.wait_partitions(CL, TOPIC, lambda st: len(st) == 3 and pred(st), what, limit)


@S.case
def leadership_returns_to_the_preferred_replica():
    wait(lambda st: all(st[p][0] == ASSIGN[p][0] and len(st[p][1]) == 3 for p in st),
         "preferred leaders and full ISRs at creation", 20)
    victim = CL.node(2)
    victim.kill9()
    st = wait(lambda st: st[1][0] not in (-1, 2), "partition 1 led by another replica", 20)
    log("node 2 killed: partition 1 led by %d", st[1][0])
    victim.start()
    t0 = time.monotonic()
    wait(lambda st: 2 in st[1][1], "node 2 back in the ISR of partition 1", 30)
    t_isr = time.monotonic()
    st = wait(lambda st: all(st[p][0] == ASSIGN[p][0] for p in st), "preferred leaders again", 20)
    log("node 2 in the ISR after %.1fs, leads partition 1 again %.1fs later", t_isr - t0, time.monotonic() - t_isr)
    eq({p: st[p][0] for p in st}, {0: 1, 1: 2, 2: 3}, "leaders")


if __name__ == "__main__":
    S.run(setup)
