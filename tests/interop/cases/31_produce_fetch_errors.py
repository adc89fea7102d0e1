"""Produce and fetch errors as each client surfaces them:
MESSAGE_TOO_LARGE (over the topic's max.message.bytes), RECORD_LIST_TOO_LARGE
(a batch larger than segment.bytes), OFFSET_OUT_OF_RANGE; the partition is
unchanged after every refusal."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import (Server, Suite, Failure, check, eq, bound, ck_create_topic, ck_produce, ck_produce_errors,  # noqa: E402
                     ck_conf, kp_producer, kp_consumer, node, to_json_records, raw_read_all, rec, port_of)
import kwire  # noqa: E402
from confluent_kafka import KafkaError  # noqa: E402
from kafka import errors as KE  # noqa: E402

S = Suite("produce_fetch_errors")
srv = None


def setup():
    global srv
    srv = Server()
    ck_create_topic(srv.bootstrap, "e-small", 1, config={"max.message.bytes": "1000"})
    ck_create_topic(srv.bootstrap, "e-seg", 1, config={"segment.bytes": "16384"})
    ck_create_topic(srv.bootstrap, "e-oor", 1)


def unchanged(t, want_hw, what):
    recs, hw = raw_read_all(srv.bootstrap, t, 0)
    eq(hw, want_hw, "%s: high watermark" % what)
    eq(len(recs), want_hw, "%s: stored records" % what)


@S.case
def message_too_large_each_client():
    t = "e-small"
    # fits: one record of 900 bytes makes a batch under 1000 bytes
    ck_produce(srv.bootstrap, t, [rec(b"k", b"a" * 900, [], 0)], conf={"linger.ms": 0})
    unchanged(t, 1, "after a fitting record")
    big = rec(b"k", b"b" * 5000, [], 0)
    # librdkafka checks message.max.bytes itself: raise it so the broker decides
    res, errs = ck_produce_errors(srv.bootstrap, t, [big], conf={"message.max.bytes": 10000000, "linger.ms": 0})
    eq([e.code() for e in errs], [KafkaError.MSG_SIZE_TOO_LARGE], "confluent-kafka delivery error")
    p = kp_producer(srv.bootstrap, max_request_size=10000000, retries=0)
    try:
        fut = p.send(t, key=b"k", value=b"c" * 5000, partition=0)
        try:
            md = fut.get(timeout=bound(15))
            raise Failure("kafka-python: a 5000-byte record was accepted at offset %d" % md.offset)
        except KE.MessageSizeTooLargeError:
            pass
    finally:
        p.close(timeout=5)
    res = node("kafkajs-produce", srv.bootstrap, {"topic": t}, stdin=to_json_records([big]), check_rc=False)
    check(not res["ok"] and "MESSAGE_TOO_LARGE" in res["types"], "kafkajs: expected MESSAGE_TOO_LARGE, got %s" % res)
    res = node("plat-produce", srv.bootstrap, {"topic": t}, stdin=to_json_records([big]), check_rc=False)
    check(not res["ok"] and "MESSAGE_TOO_LARGE" in res["types"], "platformatic: expected MESSAGE_TOO_LARGE, got %s" % res)
    unchanged(t, 1, "after the refused records")
    c = kwire.Conn(srv.port)
    try:
        r = kwire.produce(c, t, 0, kwire.build_batch([(b"k", b"d" * 5000, [])]))
        eq((r["error_code"], r["base_offset"]), (10, -1), "raw Produce v8 of a 5000-byte batch")
    finally:
        c.close()
    unchanged(t, 1, "after the raw refused batch")


@S.case
def record_list_too_large():
    t = "e-seg"
    ck_produce(srv.bootstrap, t, [rec(b"k", b"s" * 1000, [], 0)], conf={"linger.ms": 0})
    unchanged(t, 1, "after a small record")
    # one ~20 KB batch: under max.message.bytes, over segment.bytes
    res, errs = ck_produce_errors(srv.bootstrap, t, [rec(b"k", b"r" * 20000, [], 0)], conf={"linger.ms": 0})
    eq([e.code() for e in errs], [KafkaError.RECORD_LIST_TOO_LARGE], "confluent-kafka delivery error")
    p = kp_producer(srv.bootstrap, retries=0)
    try:
        fut = p.send(t, key=b"k", value=b"q" * 20000, partition=0)
        try:
            md = fut.get(timeout=bound(15))
            raise Failure("kafka-python: a 20 KB batch was accepted at offset %d" % md.offset)
        except KE.RecordListTooLargeError:
            pass
    finally:
        p.close(timeout=5)
    # many small records in one batch add up the same way
    c = kwire.Conn(srv.port)
    try:
        batch = kwire.build_batch([(b"k%d" % i, b"m" * 200, []) for i in range(100)])
        check(len(batch) > 16384, "batch size %d" % len(batch))
        r = kwire.produce(c, t, 0, batch)
        eq((r["error_code"], r["base_offset"]), (18, -1), "raw Produce v8 of a %d-byte batch" % len(batch))
    finally:
        c.close()
    unchanged(t, 1, "after the refused batches")


@S.case
def offset_out_of_range():
    t = "e-oor"
    ck_produce(srv.bootstrap, t, [rec(b"k%d" % i, b"v%d" % i, [], 0) for i in range(5)])
    # raw: past the end and negative -> OFFSET_OUT_OF_RANGE; at the end -> empty
    c = kwire.Conn(srv.port)
    try:
        for off, code in ((100, 1), (6, 1), (-5, 1), (5, 0)):
            p = kwire.fetch_v4(c, t, 0, off)
            eq(p["error_code"], code, "raw Fetch v4 at offset %d" % off)
        eq(kwire.parse_batches(kwire.fetch_v4(c, t, 0, 5)["records"]), [], "records at the end offset")
    finally:
        c.close()
    # kafka-python with auto_offset_reset='none'
    from kafka import TopicPartition
    kc = kp_consumer(srv.bootstrap, auto_offset_reset="none")
    try:
        tp = TopicPartition(t, 0)
        kc.assign([tp])
        kc.seek(tp, 100)
        deadline = time.monotonic() + bound(15)
        while True:
            try:
                got = kc.poll(timeout_ms=500)
            except KE.OffsetOutOfRangeError as e:
                eq(e.args[0] if e.args else None, {tp: 100}, "OffsetOutOfRangeError names the partition and offset")
                break
            check(not got, "kafka-python returned records from offset 100: %s" % got)
            check(time.monotonic() < deadline, "kafka-python: no OffsetOutOfRangeError within %.0fs" % bound(15))
    finally:
        kc.close(autocommit=False)
    # librdkafka with auto.offset.reset=error
    from confluent_kafka import Consumer, TopicPartition as TP
    cc = Consumer(ck_conf(srv.bootstrap, **{"group.id": "samsa-interop-unused", "enable.auto.commit": False,
                                            "auto.offset.reset": "error", "fetch.wait.max.ms": 100}))
    try:
        cc.assign([TP(t, 0, 100)])
        deadline = time.monotonic() + bound(15)
        while True:
            m = cc.poll(0.5)
            check(time.monotonic() < deadline, "confluent-kafka: no offset reset error within %.0fs" % bound(15))
            if m is None:
                continue
            err = m.error()
            check(err is not None, "confluent-kafka returned a record from offset 100 (offset %s)" % m.offset())
            eq(err.code(), KafkaError._AUTO_OFFSET_RESET, "confluent-kafka error code (%s)" % err.str())
            check("Offset out of range" in err.str(), "error text names the broker error: %s" % err.str())
            break
    finally:
        cc.close()


if __name__ == "__main__":
    S.run(setup)
