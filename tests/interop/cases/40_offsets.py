"""ListOffsets through every client: earliest, latest, by timestamp
(records produced with chosen timestamps, increasing in one partition and
out of order in the other), max timestamp (raw v7), and seeking into the
middle of a batch then consuming exactly the expected records."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import (Server, Suite, check, eq, bound, ck_create_topic, ck_produce, ck_consume, ck_conf,  # noqa: E402
                     kp_consumer, kp_consume, kcat_consume, node, run, KCAT, rec, compare_records, from_json_records)
import kwire  # noqa: E402

S = Suite("offsets")
srv = None
T = "o-t"
T0 = 1700000000000
# partition 0: ten records, timestamps T0, T0+1000, ..., T0+9000
P0 = [rec(b"k%d" % i, b"v%d" % i, [("i", b"%d" % i)], 0, T0 + 1000 * i) for i in range(10)]
# partition 1: timestamps out of order
P1_TS = [5000, 1000, 7000, 2000, 9000]
P1 = [rec(b"p1-%d" % i, b"w%d" % i, [], 1, T0 + ts) for i, ts in enumerate(P1_TS)]
# target timestamp -> expected offset: the first offset whose timestamp is >= target
Q0 = {T0 - 5: 0, T0: 0, T0 + 1: 1, T0 + 3500: 4, T0 + 9000: 9, T0 + 9001: None}
Q1 = {T0 + 500: 0, T0 + 1500: 0, T0 + 5000: 0, T0 + 5001: 2, T0 + 8000: 4, T0 + 9001: None}


def setup():
    global srv
    srv = Server()
    ck_create_topic(srv.bootstrap, T, 2)
    # one producer run, linger: each partition's records travel as one batch
    res = ck_produce(srv.bootstrap, T, P0 + P1, conf={"linger.ms": 50})
    eq([(r["partition"], r["offset"]) for r in res], [(0, i) for i in range(10)] + [(1, i) for i in range(5)],
       "produced offsets")


def with_offsets(recs):
    return [dict(r, offset=i) for i, r in enumerate(recs)]


@S.case
def raw_list_offsets_v7():
    c = kwire.Conn(srv.port)
    try:
        def lo(ts, part):
            # ListOffsets v7 (flexible; max timestamp -3 from v7)
            w = kwire.W().i32(-1).i8(0)
            w.carray([T], lambda w, t: w.cstring(t).carray([part], lambda w, p: w.i32(p).i32(-1).i64(ts).tags()).tags())
            w.tags()
            r = c.request(kwire.LIST_OFFSETS, 7, w.bytes(), flexible=True)
            r.i32()

            def prt(r):
                x = (r.i32(), r.i16(), r.i64(), r.i64(), r.i32())
                r.tags()
                return x

            def tp(r):
                x = (r.cstring(), r.carray(prt))
                r.tags()
                return x

            topics = r.carray(tp)
            r.tags()
            (name, parts), = topics
            (idx, err, rts, off, epoch), = parts
            eq((name, idx), (T, part), "ListOffsets answer names the partition")
            return err, rts, off

        eq(lo(-2, 0), (0, -1, 0), "earliest p0 (error, timestamp, offset)")
        eq(lo(-1, 0), (0, -1, 10), "latest p0")
        eq(lo(-3, 0), (0, T0 + 9000, 9), "max timestamp p0")
        eq(lo(-3, 1), (0, T0 + 9000, 4), "max timestamp p1")
        for ts, off in Q0.items():
            want = (0, -1, -1) if off is None else (0, P0[off]["timestamp"], off)
            eq(lo(ts, 0), want, "p0 by timestamp %d" % (ts - T0))
        for ts, off in Q1.items():
            want = (0, -1, -1) if off is None else (0, P1[off]["timestamp"], off)
            eq(lo(ts, 1), want, "p1 by timestamp %d" % (ts - T0))
        eq(lo(-1, 5)[0], 3, "latest of a missing partition (UNKNOWN_TOPIC_OR_PARTITION)")
    finally:
        c.close()


@S.case
def kafka_python_offsets():
    from kafka import TopicPartition
    c = kp_consumer(srv.bootstrap)
    try:
        tps = [TopicPartition(T, 0), TopicPartition(T, 1)]
        eq(c.beginning_offsets(tps), {tps[0]: 0, tps[1]: 0}, "beginning_offsets")
        eq(c.end_offsets(tps), {tps[0]: 10, tps[1]: 5}, "end_offsets")
        for part, q, recs in ((0, Q0, P0), (1, Q1, P1)):
            for ts, off in q.items():
                got = c.offsets_for_times({tps[part]: ts})[tps[part]]
                want = None if off is None else (off, recs[off]["timestamp"])
                eq(None if got is None else (got.offset, got.timestamp), want,
                   "kafka-python offsets_for_times p%d %+d" % (part, ts - T0))
    finally:
        c.close(autocommit=False)


@S.case
def confluent_offsets():
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer(ck_conf(srv.bootstrap, **{"group.id": "samsa-interop-unused", "enable.auto.commit": False}))
    try:
        eq(c.get_watermark_offsets(TopicPartition(T, 0), timeout=bound(10)), (0, 10), "watermarks p0")
        eq(c.get_watermark_offsets(TopicPartition(T, 1), timeout=bound(10)), (0, 5), "watermarks p1")
        for part, q in ((0, Q0), (1, Q1)):
            for ts, off in q.items():
                res = c.offsets_for_times([TopicPartition(T, part, ts)], timeout=bound(10))
                eq((res[0].error, res[0].offset), (None, -1 if off is None else off),
                   "confluent offsets_for_times p%d %+d" % (part, ts - T0))
    finally:
        c.close()


@S.case
def kafkajs_offsets():
    res = node("kafkajs-offsets", srv.bootstrap, {"topic": T})
    eq(sorted((o["partition"], o["offset"], o["high"], o["low"]) for o in res["offsets"]),
       [(0, 10, 10, 0), (1, 5, 5, 0)], "kafkajs fetchTopicOffsets")
    for ts, o0, o1 in ((T0 + 3500, 4, 0), (T0 + 5001, 6, 2), (T0 + 8000, 8, 4), (T0 + 9001, None, None)):
        res = node("kafkajs-offsets", srv.bootstrap, {"topic": T, "timestamp": ts})
        # kafkajs answers the high watermark where no record is new enough
        eq(sorted((o["partition"], o["offset"]) for o in res["offsets"]),
           [(0, 10 if o0 is None else o0), (1, 5 if o1 is None else o1)],
           "kafkajs fetchTopicOffsetsByTimestamp %+d" % (ts - T0))


@S.case
def platformatic_offsets():
    res = node("plat-offsets", srv.bootstrap, {"topic": T})
    eq([(o["partition"], o["offset"]) for o in res["offsets"]], [(0, 10), (1, 5)], "platformatic listOffsets latest")
    res = node("plat-offsets", srv.bootstrap, {"topic": T, "timestamp": -2})
    eq([(o["partition"], o["offset"]) for o in res["offsets"]], [(0, 0), (1, 0)], "platformatic listOffsets earliest")
    res = node("plat-offsets", srv.bootstrap, {"topic": T, "timestamp": T0 + 5001})
    eq([(o["partition"], o["offset"]) for o in res["offsets"]], [(0, 6), (1, 2)], "platformatic listOffsets by time")


@S.case
def kcat_query_offsets():
    for ts, o0, o1 in ((T0 + 3500, 4, 0), (T0 + 8000, 8, 4)):
        p = run([KCAT, "-Q", "-b", srv.bootstrap, "-t", "%s:0:%d" % (T, ts), "-t", "%s:1:%d" % (T, ts),
                 "-m", str(int(bound(10)))])
        lines = sorted(l for l in p.stdout.decode().splitlines() if l.strip())
        eq(lines, sorted(["%s [0] offset %d" % (T, o0), "%s [1] offset %d" % (T, o1)]), "kcat -Q %+d" % (ts - T0))


@S.case
def seek_into_the_middle():
    want = with_offsets(P0)[5:]
    compare_records(kp_consume(srv.bootstrap, T, 0, 5, 5), want, "kafka-python from offset 5")
    compare_records(ck_consume(srv.bootstrap, T, 0, 5, 5), want, "confluent from offset 5")
    compare_records(kcat_consume(srv.bootstrap, T, 0, 5, 5), want, "kcat -o 5")
    for client in ("kafkajs", "plat"):
        res = node(client + "-fetch", srv.bootstrap, {"topic": T, "partition": 0, "offset": 5, "count": 5})
        compare_records(from_json_records(res["records"]), want, "%s from offset 5" % client)
    # by timestamp, then read from there: kcat -o s@ts
    got = kcat_consume(srv.bootstrap, T, 1, "s@%d" % (T0 + 5001), 3)
    compare_records(got, with_offsets(P1)[2:], "kcat -o s@(T0+5001) on the out-of-order partition")
    # the raw answer to a mid-batch fetch: the whole batch, the client filters
    c = kwire.Conn(srv.port)
    try:
        p = kwire.fetch_v4(c, T, 0, 5)
        recs = kwire.parse_batches(p["records"])
        check(recs and recs[0]["offset"] <= 5, "the fetch answer starts at or before offset 5: %s" %
              [r["offset"] for r in recs])
        eq([r["offset"] for r in recs if r["offset"] >= 5], list(range(5, 10)), "offsets 5..9 in the answer")
    finally:
        c.close()


if __name__ == "__main__":
    S.run(setup)
