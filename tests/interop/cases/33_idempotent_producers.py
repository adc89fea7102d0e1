"""Idempotent producers of every client that has one (confluent-kafka and
kcat on librdkafka, kafkajs, @platformatic/kafka): each gets a producer id
from InitProducerId and writes to a fresh topic of several partitions;
a plain consumer reads back exactly those records, in order, at the
expected offsets, and the stored batches carry the producer's id, epoch
0 and sequences from 0. Producer ids differ between producers. Raw
InitProducerId (v0 and v5): a null transactional id gets a fresh id with
epoch 0 whatever the request's id/epoch; a transactional id goes to the
transaction coordinator, and with no __transaction_state yet gets
NOT_COORDINATOR (transactions themselves: 39_transactions)."""
# limit: 240
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import (Server, Suite, Skip, check, eq, bound, ck_create_topic, ck_produce, ck_consume,  # noqa: E402
                     kcat_produce, node, to_json_records, raw_read_all, rec)
import kwire  # noqa: E402

S = Suite("idempotent_producers", case_limit=90)
srv = None
PARTITIONS = 3
PER_PARTITION = 40
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
INVALID_REQUEST = 42
# Producer ids seen, by producer: all must differ.
seen = {}


def setup():
    global srv
    srv = Server()


def records(client):
    return [rec(b"k-%d-%d" % (p, i), b"%s-%d-%d" % (client.encode(), p, i), (), p)
            for p in range(PARTITIONS) for i in range(PER_PARTITION)]


def fresh_topic(client):
    t = "idem-" + client
    ck_create_topic(srv.bootstrap, t, PARTITIONS)
    return t


def verify(t, want, producers):
    """Reads every partition back with a plain consumer (exact values and
    offsets, in order) and the stored batches raw (producer id, epoch 0,
    sequence = offset: one producer per partition, from sequence 0).
    producers: 'one' (one producer wrote every partition) or 'each' (one
    producer per partition). Records the ids under t."""
    ids = []
    for p in range(PARTITIONS):
        mine = [r for r in want if r["partition"] == p]
        got = ck_consume(srv.bootstrap, t, p, 0, len(mine))
        eq([(r["offset"], r["key"], r["value"]) for r in got],
           [(i, r["key"], r["value"]) for i, r in enumerate(mine)], "%s-%d: records read back" % (t, p))
        stored, hw = raw_read_all(srv.bootstrap, t, p)
        eq(hw, len(mine), "%s-%d: high watermark (nothing more was written)" % (t, p))
        pids = sorted({r["producer_id"] for r in stored})
        eq(len(pids), 1, "%s-%d: one producer id in the stored batches (%s)" % (t, p, pids))
        check(pids[0] >= 0, "%s-%d: batches carry a producer id (got %d)", t, p, pids[0])
        eq(sorted({r["producer_epoch"] for r in stored}), [0], "%s-%d: producer epoch" % (t, p))
        eq([r["sequence"] for r in stored], [r["offset"] for r in stored], "%s-%d: sequence of each record" % (t, p))
        ids.append(pids[0])
    if producers == "one":
        eq(len(set(ids)), 1, "%s: one producer id over all partitions (%s)" % (t, ids))
        seen[t] = ids[0]
    else:
        eq(len(set(ids)), PARTITIONS, "%s: a producer id per producer (%s)" % (t, ids))
        for p, pid in enumerate(ids):
            seen["%s-%d" % (t, p)] = pid


@S.case
def confluent_kafka_idempotent():
    t = fresh_topic("ck")
    want = records("ck")
    res = ck_produce(srv.bootstrap, t, want, conf={"enable.idempotence": True})
    eq(sorted((r["partition"], r["offset"]) for r in res),
       sorted((p, i) for p in range(PARTITIONS) for i in range(PER_PARTITION)), "offsets reported")
    verify(t, want, "one")


@S.case
def kcat_idempotent():
    t = fresh_topic("kcat")
    want = records("kcat")
    for p in range(PARTITIONS):
        kcat_produce(srv.bootstrap, t, p, [r for r in want if r["partition"] == p],
                     extra=["-X", "enable.idempotence=true"])
    verify(t, want, "each")


@S.case
def kafkajs_idempotent():
    t = fresh_topic("kafkajs")
    want = records("kafkajs")
    # kafkajs allows an idempotent producer one request in flight only.
    node("kafkajs-produce", srv.bootstrap,
         {"topic": t, "producer": {"idempotent": True, "maxInFlightRequests": 1, "retry": {"retries": 5}}},
         stdin=to_json_records(want), limit=60)
    verify(t, want, "one")


@S.case
def platformatic_idempotent():
    t = fresh_topic("plat")
    want = records("plat")
    node("plat-produce", srv.bootstrap, {"topic": t, "platformatic": {"idempotent": True, "retries": 5}},
         stdin=to_json_records(want), limit=60)
    verify(t, want, "one")


@S.case
def kafka_python_idempotent():
    import kafka
    from kafka import KafkaProducer
    if "enable_idempotence" not in KafkaProducer.DEFAULT_CONFIG:
        raise Skip("kafka-python %s has no idempotent producer (enable_idempotence came in 2.1)" % kafka.__version__)
    t = fresh_topic("kp")
    want = records("kp")
    from harness import kp_produce
    kp_produce(srv.bootstrap, t, want, enable_idempotence=True)
    verify(t, want, "one")


@S.case
def raw_init_producer_id():
    c = kwire.Conn(srv.port, timeout=bound(10))
    try:
        got = []
        # v0 and the highest version; from v3 the request's id/epoch is
        # ignored for a null transactional id: always a fresh id, epoch 0.
        for v, pid, epoch in ((0, -1, -1), (5, -1, -1), (5, 7, 3), (3, -1, -1), (2, -1, -1)):
            r = kwire.init_producer_id(c, v, None, producer_id=pid, producer_epoch=epoch)
            eq((r["error_code"], r["producer_epoch"], r["throttle_time_ms"]), (0, 0, 0),
               "InitProducerId v%d (id %d, epoch %d): error, epoch, throttle" % (v, pid, epoch))
            check(r["producer_id"] >= 0, "InitProducerId v%d: producer id %d", v, r["producer_id"])
            got.append(r["producer_id"])
        eq(len(set(got)), len(got), "every call gets its own producer id (%s)" % got)
        eq(got, sorted(got), "a broker's ids increase")
        check(not set(got) & set(seen.values()), "raw ids %s differ from the clients' %s", got, seen)
        # id without epoch (or the reverse) is malformed, as Kafka says
        r = kwire.init_producer_id(c, 5, None, producer_id=12, producer_epoch=-1)
        eq((r["error_code"], r["producer_id"], r["producer_epoch"]), (INVALID_REQUEST, -1, -1),
           "InitProducerId with an id and no epoch")
        # a transactional id goes to its coordinator: with no
        # __transaction_state yet (nobody asked FindCoordinator for it)
        # this node coordinates nothing, and says so as Kafka does
        for v in (0, 5):
            r = kwire.init_producer_id(c, v, "txn-a")
            eq((r["error_code"], r["producer_id"], r["producer_epoch"]), (NOT_COORDINATOR, -1, -1),
               "InitProducerId v%d with a transactional id" % v)
        # ApiVersions advertises InitProducerId v0-5
        av = kwire.api_versions(c, 0)
        eq(av["api_keys"].get(kwire.INIT_PRODUCER_ID), (0, 5), "ApiVersions: InitProducerId versions")
    finally:
        c.close()


@S.case
def pipelined_on_a_fresh_broker():
    """Before a broker has any block, requests park until the first one
    arrives; 2800 pipelined requests over four connections run through
    three blocks (prefetch and, when it is late, parking again): every
    one answered in order, with distinct ids (parked requests woken
    together take their ids in any order, as Kafka promises none)."""
    fresh = Server(name="fresh")
    conns = [kwire.Conn(fresh.port, timeout=bound(20)) for _ in range(4)]
    try:
        body = kwire.W().cstring(None).i32(60000).i64(-1).i16(-1).tags().bytes()
        corrs = [[c.send(kwire.INIT_PRODUCER_ID, 4, body, header_version=2) for _ in range(700)] for c in conns]
        every = []
        for c, cs in zip(conns, corrs):
            mine = []
            for corr in cs:
                r = c.recv(corr, 1)
                res = (r.i32(), r.i16(), r.i64(), r.i16())
                eq((res[0], res[1], res[3]), (0, 0, 0), "pipelined InitProducerId v4: throttle, error, epoch")
                mine.append(res[2])
            every += mine
        eq(len(set(every)), len(every), "distinct ids")
        check(min(every) >= 0, "ids >= 0 (smallest %d)", min(every))
    finally:
        for c in conns:
            c.close()
        fresh.stop()


@S.case
def producer_ids_differ():
    expect = ["idem-ck", "idem-kafkajs", "idem-plat"] + ["idem-kcat-%d" % p for p in range(PARTITIONS)]
    missing = [k for k in expect if k not in seen]
    check(not missing, "producers that did not run: %s", missing)
    ids = [seen[k] for k in expect]
    eq(len(set(ids)), len(ids), "producer ids of the producers (%s)" % dict(zip(expect, ids)))


if __name__ == "__main__":
    S.run(setup)
