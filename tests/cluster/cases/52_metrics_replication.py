"""The metrics endpoint on a 3-node combined cluster, through a
follower's stall: every node serves /metrics (parsed by the Prometheus
client library); they agree on the quorum's leader and exactly one is the
active controller; a topic with replication factor 3 shows as hosted on
every node and led by one, none under-replicated. While one follower is
stopped (SIGSTOP) past replica.lag.time.max.ms and acks=all records go
on, the leader reports the partition under-replicated and counts an ISR
shrink; once the follower runs again and catches up, the leader counts an
ISR expansion, nothing is under-replicated, and no follower lags."""
# limit: 150

import os
import signal
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cluster as C  # noqa: E402
from cluster import Failure, check, eq, log  # noqa: E402,F401

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

S = C.harness.Suite("52_metrics_replication", case_limit=90)
CL = None
TOPIC = "mrep"
MPORT = {}


def setup():
    global CL
    CL = C.Cluster(3, overrides={"replica.lag.time.max.ms": "2000", "replica.fetch.backoff.ms": "200",
                                 "broker.session.timeout.ms": "9000"})
    ports = C.harness.free_ports(len(CL.nodes))
    for n, p in zip(CL.nodes, ports):
        MPORT[n.node_id] = p
        n.overrides["samsa.metrics.listener"] = "127.0.0.1:%d" % p
    CL.start()


def scrape(node_id):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % MPORT[node_id], timeout=C.bound(10)) as r:
        text = r.read().decode("utf-8")
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if not s.labels:
                out[s.name] = s.value
    return out


def wait_metric(node_id, pred, what, limit=20.0):
    deadline = time.monotonic() + C.bound(limit)
    while True:
        m = scrape(node_id)
        if pred(m):
            return m
        if time.monotonic() > deadline:
            raise Failure("node %d: %s not reached within %.0fs" % (node_id, what, C.bound(limit)))
        time.sleep(0.1)


def produce(first, count):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": ",".join(n.bootstrap for n in CL.nodes), "acks": "all",
                  "message.timeout.ms": 30000, "linger.ms": 5})
    errs = []
    for i in range(first, first + count):
        p.produce(TOPIC, key=b"k%d" % i, value=b"v%d" % i, partition=0,
                  on_delivery=lambda err, msg: errs.append(err) if err else None)
    eq(p.flush(C.bound(30)), 0, "records left undelivered")
    eq(errs, [], "delivery errors")


@S.case
def cluster_view_agrees():
    C.create_topics(CL.nodes[0], [TOPIC], partitions=1, rf=3)
    st = C.wait_partitions(CL, TOPIC, lambda s: len(s[0][1]) == 3, "all three replicas in the ISR")
    leader = st[0][0]
    produce(0, 20)
    ms = {n.node_id: wait_metric(n.node_id, lambda m: m["samsa_under_replicated_partitions"] == 0,
                                 "nothing under-replicated") for n in CL.nodes}
    eq(sorted(m["samsa_controller_active"] for m in ms.values()), [0.0, 0.0, 1.0], "active controllers")
    eq(len({m["samsa_quorum_leader"] for m in ms.values()}), 1, "quorum leaders seen")
    for nid, m in ms.items():
        eq(m["samsa_cluster_brokers_alive"], 3.0, "node %d: brokers alive" % nid)
        eq(m["samsa_cluster_offline_partitions"], 0.0, "node %d: offline partitions" % nid)
        eq(m["samsa_partitions"], m["samsa_cluster_partitions"], "node %d: every partition has a replica here" % nid)
        # every partition has a replica on every node: a node follows
        # exactly those it does not lead
        eq(m["samsa_replica_followed_partitions"], m["samsa_partitions"] - m["samsa_partition_leaders"],
           "node %d: partitions followed" % nid)
    check(ms[leader]["samsa_partition_leaders"] >= 1, "the leader leads nothing")
    eq(sum(m["samsa_partition_leaders"] for m in ms.values()), ms[leader]["samsa_cluster_partitions"],
       "leaders over the cluster")


@S.case
def follower_stall_shows_and_heals():
    st = C.wait_partitions(CL, TOPIC, lambda s: len(s[0][1]) == 3, "all three replicas in the ISR")
    leader = st[0][0]
    follower = [n for n in CL.nodes if n.node_id != leader][0]
    m0 = scrape(leader)
    C.pause([follower])
    try:
        produce(100, 20)  # acks=all: the leader and the other follower
        m1 = wait_metric(leader, lambda m: m["samsa_under_replicated_partitions"] >= 1 and
                         m["samsa_isr_shrinks_total"] > m0["samsa_isr_shrinks_total"],
                         "an ISR shrink and an under-replicated partition", limit=30)
        log("leader %d: %d under-replicated, shrinks %d -> %d", leader, m1["samsa_under_replicated_partitions"],
            m0["samsa_isr_shrinks_total"], m1["samsa_isr_shrinks_total"])
    finally:
        follower.proc.send_signal(signal.SIGCONT)
    m2 = wait_metric(leader, lambda m: m["samsa_under_replicated_partitions"] == 0 and
                     m["samsa_isr_expands_total"] > m0["samsa_isr_expands_total"],
                     "an ISR expansion and nothing under-replicated", limit=40)
    wait_metric(follower.node_id, lambda m: m["samsa_replica_max_lag"] == 0, "the follower caught up")
    log("leader %d: expands %d -> %d", leader, m0["samsa_isr_expands_total"], m2["samsa_isr_expands_total"])


if __name__ == "__main__":
    S.run(setup)
