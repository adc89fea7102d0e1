"""Producer ids on a 3-node combined cluster: InitProducerId (null
transactional id) answered by every broker, the controller's and the
others' (which get their blocks with AllocateProducerIds over the
controller listener), gives ids that differ across the cluster and
increase on each broker, with epoch 0; an idempotent confluent-kafka
producer bootstrapped from a broker that is not the active controller
writes to a partition that broker leads, and the stored batches carry
its producer id, epoch 0 and sequences from 0."""
# limit: 90

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cluster as C  # noqa: E402
from cluster import Failure, check, eq, log  # noqa: E402,F401
import kwire  # noqa: E402
from harness import raw_read_all  # noqa: E402

S = C.harness.Suite("70_producer_ids", case_limit=60)
CL = None
TOPIC = "idem"
N = 200
IDS = set()


def setup():
    global CL
    CL = C.Cluster(3)
    CL.start()


@S.case
def init_producer_id_on_every_broker():
    leader, _epoch, _hw = CL.quorum()
    per = {}
    for n in CL.brokers:
        c = kwire.Conn(n.port, timeout=C.bound(10))
        try:
            got = []
            for v in (0, 5, 5):
                r = kwire.init_producer_id(c, v)
                eq((r["error_code"], r["producer_epoch"]), (0, 0), "node %d: InitProducerId v%d" % (n.node_id, v))
                got.append(r["producer_id"])
        finally:
            c.close()
        check(all(i >= 0 for i in got), "node %d: producer ids %s", n.node_id, got)
        eq(got, sorted(set(got)), "node %d: ids increase" % n.node_id)
        per[n.node_id] = got
    every = [i for ids in per.values() for i in ids]
    eq(len(set(every)), len(every), "producer ids distinct across brokers (%s; controller %d)" % (per, leader))
    IDS.update(every)
    log("producer ids by broker: %s (active controller: node %d)", per, leader)


@S.case
def idempotent_producer_through_a_non_controller():
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic
    leader, _epoch, _hw = CL.quorum()
    other = [n for n in CL.brokers if n.node_id != leader][0]
    a = C.admin(other)  # kept until the answer: a destroyed client fails its futures
    fs = a.create_topics([NewTopic(TOPIC, 1, replica_assignment=[[other.node_id]])], operation_timeout=10,
                         request_timeout=15)
    fs[TOPIC].result(timeout=C.bound(20))
    C.wait_topics(other, [TOPIC])
    p = Producer({"bootstrap.servers": other.bootstrap, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 5, "message.timeout.ms": int(C.bound(30000)), "socket.timeout.ms": 10000})
    results = []
    for i in range(N):
        p.produce(TOPIC, key=b"k%04d" % i, value=b"v%04d" % i, partition=0,
                  on_delivery=lambda err, msg: results.append((err, msg.offset(), msg.value())))
    left = p.flush(C.bound(30))
    eq(left, 0, "records left undelivered")
    errs = [r for r in results if r[0] is not None]
    check(not errs, "delivery errors: %s", errs[:3])
    eq(sorted((off, v) for _e, off, v in results), [(i, b"v%04d" % i) for i in range(N)], "acknowledged offsets")
    stored, hw = raw_read_all(other.bootstrap, TOPIC, 0)
    eq(hw, N, "high watermark")
    eq([r["value"] for r in stored], [b"v%04d" % i for i in range(N)], "stored records in order")
    pids = {r["producer_id"] for r in stored}
    eq(len(pids), 1, "one producer id in the stored batches (%s)" % pids)
    pid = pids.pop()
    check(pid >= 0 and pid not in IDS, "producer id %d: fresh (raw ids %s)", pid, sorted(IDS))
    eq({r["producer_epoch"] for r in stored}, {0}, "producer epoch")
    eq([r["sequence"] for r in stored], list(range(N)), "sequences")
    log("idempotent producer %d wrote %d records through node %d (controller: node %d)", pid, N, other.node_id,
        leader)


if __name__ == "__main__":
    S.run(setup)
