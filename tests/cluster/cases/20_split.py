"""3 controllers and 3 brokers (brokers follow the metadata log as Raft
observers): 100 topics created through broker 4 and seen by brokers 5
and 6 (placed over all brokers); SIGKILL of the active controller, a new
one is elected and admin operations through the brokers resume with
nothing committed lost; the killed controller restarts and catches up; a
broker killed and restarted registers again and sees everything."""
# limit: 120

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cluster as C  # noqa: E402
from cluster import check, eq, log  # noqa: E402,F401

S = C.harness.Suite("20_split", case_limit=60)
CL = None
CREATED = set()


def setup():
    global CL
    CL = C.Cluster(3, 3)
    CL.start()


@S.case
def create_100_topics_through_broker_4_seen_by_5_and_6():
    names = ["s%03d" % i for i in range(100)]
    t0 = time.monotonic()
    CREATED.update(C.create_topics(CL.node(4), names, partitions=3, rf=2))
    log("100 topics (3 partitions, RF 2) created through broker 4 in %.2fs", time.monotonic() - t0)
    for n in (5, 6):
        C.wait_topics(CL.node(n), names)
    md = C.admin(CL.node(5)).list_topics(timeout=10)
    leaders = {}
    for t in names:
        for p in md.topics[t].partitions.values():
            leaders[p.leader] = leaders.get(p.leader, 0) + 1
            check(len(set(p.replicas)) == 2 and set(p.replicas) <= {4, 5, 6}, "%s replicas %s", t, p.replicas)
    log("partition leaders per broker: %s", dict(sorted(leaders.items())))
    check(sorted(leaders) == [4, 5, 6] and max(leaders.values()) - min(leaders.values()) <= 3,
          "leaders not balanced over brokers: %s", leaders)


@S.case
def kill9_active_controller_then_admin_resumes():
    leader, epoch, hw = CL.quorum()
    victim = CL.node(leader)
    t0 = time.monotonic()
    victim.kill9()
    CREATED.update(C.create_topics(CL.node(5), ["after-kill"], limit=30))
    dt = time.monotonic() - t0
    survivors = [n for n in CL.controllers if n.alive()]
    nl, ne, nhw = CL.quorum(via=survivors)
    check(nl != leader and ne > epoch, "no new leader: %d/%d after %d/%d", nl, ne, leader, epoch)
    log("kill -9 of controller %d -> controller %d (epoch %d); next metadata change %.2fs after the kill",
        leader, nl, ne, dt)
    for n in CL.brokers:
        C.wait_topics(n, CREATED)
    victim.start()
    # the restarted controller follows again: the leader reports it caught up
    deadline = time.monotonic() + C.bound(20)
    while True:
        rc, out, err = C.samsactl("quorum", "status", "--replication", "--bootstrap-controller",
                                  ",".join(n.controller_address for n in CL.controllers), limit=5)
        row = [l.split() for l in out.splitlines() if l.split()[:1] == [str(victim.node_id)]]
        if rc == 0 and row and row[0][2] == "0":
            break
        check(time.monotonic() < deadline, "controller %d did not catch up: %s", victim.node_id, out + err)
        time.sleep(0.2)
    log("controller %d back, lag 0", victim.node_id)


@S.case
def broker_restart_registers_again():
    b = CL.node(6)
    b.kill9()
    CREATED.update(C.create_topics(CL.node(4), ["while-6-down"], partitions=3, rf=2))
    b.start()
    CL.wait_ready(limit=30)
    C.wait_topics(b, CREATED)


S.run(setup)
