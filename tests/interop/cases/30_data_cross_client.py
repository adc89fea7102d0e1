"""Data written by one client and read byte-exact by another: keys,
values, headers, explicit partitions, offsets, timestamps, order within a
partition; a 900 KB record; 100 000 small records. Consumers use manual
assignment (no consumer group)."""
# limit: 240
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import (Server, Suite, check, eq, bound, ck_create_topic, ck_produce, ck_consume, kp_produce,  # noqa: E402
                     kp_consume, kcat_produce, kcat_consume, node, to_json_records, from_json_records,
                     compare_records, rec, raw_read_all)

S = Suite("data_cross_client", case_limit=120)
srv = None
T0 = 1710000000000  # chosen record timestamps (ms)


def setup():
    global srv
    srv = Server()


def topic(name, partitions=3, config=None):
    ck_create_topic(srv.bootstrap, name, partitions, config=config)
    return name


def records(n, partition, seed, ts=True, binary=True, header_text=False, nulls=True, unique_headers=False):
    """n records for one partition: binary keys and values of varying
    length, two or three headers (repeated names unless unique_headers),
    one null key and one empty value when nulls."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        key = b"key-%d-%d" % (seed, i)
        if binary:
            key += bytes([0, 255, 10, 13]) + bytes(rnd.randrange(0, 256) for _ in range(rnd.randrange(0, 8)))
        value = bytes(rnd.randrange(0, 256) for _ in range(rnd.randrange(1, 300))) if binary else \
            b"value %d %s" % (i, b"x" * rnd.randrange(0, 100))
        if header_text:
            hs = [("h-one", b"v%d" % i), ("h-two", b"text-%d" % (i * 7))]
        else:
            hs = [("h-one", bytes([i % 256, 0, 1])), ("trace", b"id-%d" % i)]
            hs.append(("h-three" if unique_headers else "h-one", b"again-%d" % i))
        if nulls and i == 1:
            key = None
        if nulls and i == 2:
            value = b""
        out.append(rec(key, value, hs, partition, (T0 + seed * 100000 + i * 10) if ts else None))
    return out


def with_offsets(recs, start=0):
    return [dict(r, offset=start + i) for i, r in enumerate(recs)]


def check_produced(res, want, what):
    eq([(r["partition"], r["offset"]) for r in res], [(w["partition"], w["offset"]) for w in want],
       "%s: (partition, offset) reported by the producer" % what)


def js_fetch(client, t, partition, offset, count, max_bytes=None):
    args = {"topic": t, "partition": partition, "offset": offset, "count": count}
    if max_bytes:
        args["maxBytes"] = max_bytes
    res = node(client + "-fetch", srv.bootstrap, args, limit=90)
    return from_json_records(res["records"]), res


def js_produce(client, t, recs):
    res = node(client + "-produce", srv.bootstrap, {"topic": t}, stdin=to_json_records(recs), limit=60)
    return [dict(r, **x) for r, x in zip(recs, res["results"])]


@S.case
def kcat_to_kafka_python():
    t = topic("d-kcat-kp")
    want = records(20, 2, seed=1, ts=False, nulls=False)
    for r in want:  # kcat: one header set for all records, text values; no 0x1e/0x1f in data
        r["headers"] = [("src", b"kcat"), ("run", b"one")]
        r["key"] = r["key"].replace(b"\x1e", b"").replace(b"\x1f", b"")
        r["value"] = r["value"].replace(b"\x1e", b"").replace(b"\x1f", b"")
    t_before = int(time.time() * 1000)
    kcat_produce(srv.bootstrap, t, 2, want, headers=[("src", b"kcat"), ("run", b"one")])
    t_after = int(time.time() * 1000)
    got = kp_consume(srv.bootstrap, t, 2, 0, 20)
    compare_records(got, with_offsets(want), "kcat -> kafka-python", timestamps=False)
    for r in got:
        check(t_before - 1000 <= r["timestamp"] <= t_after + 1000, "kcat record timestamp %d outside [%d, %d]",
              r["timestamp"], t_before, t_after)
    for p in (0, 1):
        eq(raw_read_all(srv.bootstrap, t, p), ([], 0), "records in untouched partition %d" % p)


@S.case
def confluent_to_kafkajs_interleaved_partitions():
    t = topic("d-ck-kj")
    per = {p: records(15, p, seed=10 + p, unique_headers=True) for p in range(3)}
    # interleave the partitions in one producer run: order must hold per partition
    mixed = [per[i % 3][i // 3] for i in range(45)]
    res = ck_produce(srv.bootstrap, t, mixed)
    for p in range(3):
        want = with_offsets(per[p])
        check_produced([r for r in res if r["partition"] == p], want, "confluent p%d" % p)
        got, info = js_fetch("kafkajs", t, p, 0, 15)
        compare_records(got, want, "confluent -> kafkajs partition %d" % p)
        eq(info["highWatermark"], 15, "kafkajs high watermark p%d" % p)


@S.case
def kafkajs_to_confluent():
    t = topic("d-kj-ck")
    want = with_offsets(records(25, 0, seed=20, unique_headers=True))
    res = js_produce("kafkajs", t, want)
    check_produced(res, want, "kafkajs")
    got = ck_consume(srv.bootstrap, t, 0, 0, 25)
    compare_records(got, want, "kafkajs -> confluent")


@S.case
def kafka_python_to_kcat():
    t = topic("d-kp-kcat")
    want = with_offsets(records(20, 1, seed=30, header_text=True, nulls=False))
    res = kp_produce(srv.bootstrap, t, want)
    check_produced(res, want, "kafka-python")
    got = kcat_consume(srv.bootstrap, t, 1, 0, 20)
    compare_records(got, want, "kafka-python -> kcat")


@S.case
def platformatic_to_confluent():
    t = topic("d-pk-ck")
    want = with_offsets(records(25, 2, seed=40))
    res = js_produce("plat", t, want)
    check_produced(res, want, "platformatic")
    got = ck_consume(srv.bootstrap, t, 2, 0, 25)
    compare_records(got, want, "platformatic -> confluent")


@S.case
def confluent_to_platformatic():
    t = topic("d-ck-pk")
    want = with_offsets(records(25, 1, seed=50))
    res = ck_produce(srv.bootstrap, t, want)
    check_produced(res, want, "confluent")
    got, _ = js_fetch("plat", t, 1, 0, 25)
    compare_records(got, want, "confluent -> platformatic")


@S.case
def kafka_python_to_platformatic_and_kafkajs_offsets_continue():
    # several producers append to one partition; offsets continue, every
    # reader sees the same log
    t = topic("d-multi", 1)
    a = records(5, 0, seed=60, unique_headers=True)
    b = records(5, 0, seed=61, unique_headers=True)
    c = records(5, 0, seed=62, unique_headers=True)
    check_produced(kp_produce(srv.bootstrap, t, a), with_offsets(a, 0), "kafka-python")
    check_produced(js_produce("kafkajs", t, b), with_offsets(b, 5), "kafkajs")
    check_produced(js_produce("plat", t, c), with_offsets(c, 10), "platformatic")
    want = with_offsets(a + b + c)
    compare_records(js_fetch("plat", t, 0, 0, 15)[0], want, "platformatic reader")
    compare_records(js_fetch("kafkajs", t, 0, 0, 15)[0], want, "kafkajs reader")
    compare_records(ck_consume(srv.bootstrap, t, 0, 0, 15), want, "confluent reader")
    compare_records(kp_consume(srv.bootstrap, t, 0, 0, 15), want, "kafka-python reader")


@S.case
def record_900kb():
    t = topic("d-big", 1)
    rnd = random.Random(7)
    big = bytes(rnd.randrange(0, 256) for _ in range(900 * 1024))
    want = with_offsets([rec(b"big-1", big, [("size", b"900k")], 0, T0), rec(b"small", b"x", [], 0, T0 + 1),
                         rec(b"big-2", big[::-1], [], 0, T0 + 2)])
    res = ck_produce(srv.bootstrap, t, want[:2], conf={"message.max.bytes": 2000000, "linger.ms": 0})
    check_produced(res, want[:2], "confluent 900 KB")
    res = js_produce("kafkajs", t, want[2:])
    check_produced(res, want[2:], "kafkajs 900 KB")
    got = kp_consume(srv.bootstrap, t, 0, 0, 3, max_partition_fetch_bytes=1048576)
    compare_records(got, want, "900 KB records -> kafka-python")
    got = ck_consume(srv.bootstrap, t, 0, 0, 3)
    compare_records(got, want, "900 KB records -> confluent")
    got, _ = js_fetch("plat", t, 0, 0, 3, max_bytes=2 * 1024 * 1024)
    compare_records(got, want, "900 KB records -> platformatic")


@S.case(limit=150)
def bulk_100k_confluent_to_kafkajs():
    t = topic("d-bulk", 1)
    n = 100000
    recs = [rec(b"k%d" % i, b"value-%06d" % i, [], 0) for i in range(n)]
    t0 = time.monotonic()
    res = ck_produce(srv.bootstrap, t, recs, conf={"linger.ms": 20, "batch.num.messages": 10000,
                                                   "queue.buffering.max.messages": 200000}, limit=90)
    print("    produced %d records in %.1fs" % (n, time.monotonic() - t0), flush=True)
    eq(sorted(r["offset"] for r in res), list(range(n)), "offsets reported by confluent")
    eq([r["offset"] for r in res], list(range(n)), "offsets in production order")
    t0 = time.monotonic()
    got, info = js_fetch("kafkajs", t, 0, 0, n, max_bytes=8 * 1024 * 1024)
    print("    kafkajs read %d records in %.1fs" % (len(got), time.monotonic() - t0), flush=True)
    eq(len(got), n, "records read")
    eq(info["highWatermark"], n, "high watermark")
    for i, r in enumerate(got):
        if r["offset"] != i or r["key"] != b"k%d" % i or r["value"] != b"value-%06d" % i or r["headers"]:
            raise AssertionError("record %d: offset %d key %r value %r headers %r" % (
                i, r["offset"], r["key"], r["value"], r["headers"]))


if __name__ == "__main__":
    S.run(setup)
