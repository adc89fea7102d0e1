"""The transaction coordinator on a 3-node cluster (replication 3,
min.insync.replicas 2), driven by confluent-kafka's transactional
producer: a transaction over three partitions led by three different
nodes commits (its markers go to each leader); then the node that
coordinates the transactional id is killed -9 while a second
transaction is open: the producer finds the new coordinator, which
loaded the transaction from __transaction_state, and commits it. A
third producer (another transactional id of the same coordinator) is
left with an open transaction when that coordinator is killed: the new
one aborts it at its timeout, so read_committed readers get past it and
never see its records. The killed nodes restart and catch up. At the end
a read_committed consumer reads exactly the committed records of every
partition, a read_uncommitted one every record."""
# limit: 200

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cluster as C  # noqa: E402
from cluster import Failure, check, eq, log  # noqa: E402,F401
import kgroups as KG  # noqa: E402
import kwire as K  # noqa: E402

S = C.harness.Suite("58_txn_coordinator_failover", case_limit=150)
CL = None
TOPIC = "eo"


def setup():
    global CL
    CL = C.Cluster(3, overrides=dict(C.FAST, **{
        "min.insync.replicas": "2", "replica.lag.time.max.ms": "3000",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500"}))
    CL.start()
    # partition i led by node i+1
    C.create_topics(CL.node(1), [TOPIC], assignment=[[1, 2, 3], [2, 3, 1], [3, 1, 2]])


def bootstrap():
    return ",".join(n.bootstrap for n in CL.nodes if n.alive())


def coordinator_of(tid):
    """The node FindCoordinator names for tid, asked of live nodes until
    one answers without an error."""
    deadline = time.monotonic() + C.bound(30)
    last = None
    while time.monotonic() < deadline:
        for n in CL.nodes:
            if not n.alive():
                continue
            try:
                c = K.Conn(n.port)
                try:
                    r = KG.find_coordinator(c, tid, version=1, key_type=1)
                finally:
                    c.close()
            except (OSError, EOFError) as e:
                last = e
                continue
            last = r
            if r["error_code"] == 0 and CL.node(r["node_id"]).alive():
                return r["node_id"]
        time.sleep(0.2)
    raise Failure("no coordinator for %s: %s" % (tid, last))


def producer(tid, **extra):
    from confluent_kafka import Producer
    conf = {"bootstrap.servers": bootstrap(), "transactional.id": tid, "socket.timeout.ms": 3000,
            "transaction.timeout.ms": 60000, "message.timeout.ms": 60000}
    conf.update(extra)
    p = Producer(conf)
    p.init_transactions(C.bound(40))
    return p


def produce_all(p, tag):
    """One record per partition; flushed (delivered)."""
    errs = []
    for i in range(3):
        p.produce(TOPIC, value=b"%s-%d" % (tag, i), partition=i,
                  on_delivery=lambda e, m: errs.append(e) if e else None)
    eq(p.flush(C.bound(30)), 0, "records of %s still queued" % tag)
    eq(errs, [], "delivery errors of %s" % tag)


def read_all(isolation, want):
    """(partition, value) of every record a consumer with isolation reads
    from the start, once it has read want of them (or the bound)."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap(), "group.id": "r-%s-%f" % (isolation, time.time()),
                  "isolation.level": isolation, "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(TOPIC, i, 0) for i in range(3)])
        got = []
        deadline = time.monotonic() + C.bound(30)
        while len(got) < want and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append((m.partition(), m.value()))
        # a little longer: nothing more should come
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.append((m.partition(), m.value()))
        return sorted(got)
    finally:
        c.close()


def same_coordinator_id(node, prefix):
    for i in range(200):
        tid = "%s-%d" % (prefix, i)
        if coordinator_of(tid) == node:
            return tid
    raise Failure("no id %s-N coordinated by node %d" % (prefix, node))


@S.case
def coordinator_failover():
    tid = "eo-a"
    p = producer(tid)
    coord = coordinator_of(tid)
    log("%s is coordinated by node %d", tid, coord)
    p.begin_transaction()
    produce_all(p, b"t1")
    p.commit_transaction(C.bound(30))
    eq(read_all("read_committed", 3), [(i, b"t1-%d" % i) for i in range(3)], "after the first commit")

    # a second producer, same coordinator, that will hang
    tid_b = same_coordinator_id(coord, "eo-b")
    pb = producer(tid_b, **{"transaction.timeout.ms": 4000, "message.timeout.ms": 4000})
    pb.begin_transaction()
    produce_all(pb, b"hung")

    p.begin_transaction()
    produce_all(p, b"t2")
    log("killing coordinator node %d with two transactions open", coord)
    CL.node(coord).kill9()
    p.commit_transaction(C.bound(60))
    new = coordinator_of(tid)
    check(new != coord, "the coordinator moved (still %d)", new)
    log("node %d committed the second transaction", new)

    # the hung transaction is aborted by the new coordinator at its timeout
    deadline = time.monotonic() + C.bound(40)
    want = sorted([(i, b"t1-%d" % i) for i in range(3)] + [(i, b"t2-%d" % i) for i in range(3)])
    got = None
    while time.monotonic() < deadline:
        got = read_all("read_committed", 6)
        if got == want:
            break
        time.sleep(0.5)
    eq(got, want, "read_committed after the failover (the hung transaction aborted)")

    # the killed node comes back and catches up; a third transaction
    CL.node(coord).start(wait=True)
    p.begin_transaction()
    produce_all(p, b"t3")
    p.commit_transaction(C.bound(30))
    want = sorted(want + [(i, b"t3-%d" % i) for i in range(3)])
    eq(read_all("read_committed", 9), want, "read_committed at the end")
    everything = read_all("read_uncommitted", 12)
    eq(everything, sorted(want + [(i, b"hung-%d" % i) for i in range(3)]), "read_uncommitted at the end")
    # the hung producer was fenced: its commit fails
    try:
        pb.commit_transaction(C.bound(20))
    except Exception as e:  # noqa: BLE001
        log("the hung producer's commit failed as it should: %s", e)
    else:
        raise Failure("the hung producer committed after its transaction was aborted")


if __name__ == "__main__":
    S.run(setup)
