"""samsa.record.validation: "full" (the default, Kafka's) reads every
record of a produced batch and refuses a malformed one; "batch" checks the
header and CRC only and stores the batch as sent, records unread, except on
compacted topics and where the topic's compression.type rebuilds it. Real clients' data goes through batch mode unchanged
(confluent-kafka uncompressed, kafka-python gzip, kcat lz4, kafkajs), and
the checks batch mode keeps (CRC, header, timestamp limits, keys of
compacted topics) still refuse."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import (Server, Suite, check, eq, ck_create_topic, ck_produce, ck_produce_errors,  # noqa: E402
                     ck_consume, kp_produce, kcat_produce, kcat_consume, node, to_json_records, rec,
                     compare_records, raw_read_all, free_ports, run, SAMSA_BIN, SAMSACTL_BIN, WORK)
import kwire  # noqa: E402
from confluent_kafka import KafkaError  # noqa: E402

S = Suite("record_validation")
full = None
fast = None


def setup():
    global full, fast
    full = Server()
    fast = Server({"samsa.record.validation": "batch"})
    for s in (full, fast):
        ck_create_topic(s.bootstrap, "rv", 1)
        ck_create_topic(s.bootstrap, "rv-compact", 1, config={"cleanup.policy": "compact"})
        ck_create_topic(s.bootstrap, "rv-gzip", 1, config={"compression.type": "gzip"})
        ck_create_topic(s.bootstrap, "rv-time", 1, config={"message.timestamp.before.max.ms": "3600000",
                                                           "message.timestamp.after.max.ms": "3600000"})


def batch_with(records_blob, count, last_offset_delta=None):
    """A v2 batch around raw record bytes, its CRC correct."""
    now = int(time.time() * 1000)
    lod = count - 1 if last_offset_delta is None else last_offset_delta
    after_crc = (kwire.W().i16(0).i32(lod).i64(now).i64(now).i64(-1).i16(-1).i32(-1).i32(count).bytes()
                 + records_blob)
    batch_len = 4 + 1 + 4 + len(after_crc)
    return (kwire.W().i64(0).i32(batch_len).i32(-1).i8(2).u32(kwire.crc32c(after_crc)).bytes() + after_crc)


def padded_record():
    """One record whose length counts a byte its fields do not use: Kafka's
    DefaultRecord.readFrom refuses it (INVALID_RECORD)."""
    r = kwire.encode_record(0, 0, b"k", b"v")
    body = r[1:]  # the length varint of so short a record is one byte
    return kwire.enc_varint(len(body) + 1) + body + b"\x00"


def raw_produce(srv, topic, batch):
    c = kwire.Conn(srv.port)
    try:
        return kwire.produce(c, topic, 0, batch)
    finally:
        c.close()


@S.case
def clients_data_unchanged_in_batch_mode():
    want = [rec(b"k%d" % i, b"value-%d" % i * 3, [("h", b"%d" % i)] if i % 3 == 0 else [], 0) for i in range(60)]
    got = ck_produce(fast.bootstrap, "rv", want[:20])
    eq([r["offset"] for r in got], list(range(20)), "confluent-kafka offsets")
    kp_produce(fast.bootstrap, "rv", want[20:40], compression_type="gzip")
    kcat_produce(fast.bootstrap, "rv", 0, [dict(r, headers=[]) for r in want[40:50]], extra=["-z", "lz4"])
    res = node("kafkajs-produce", fast.bootstrap, {"topic": "rv"}, stdin=to_json_records(want[50:60]))
    check(res["ok"], "kafkajs produce failed: %s", res)
    for r in want[40:50]:
        r["headers"] = []
    for i, r in enumerate(want):
        r["offset"] = i
    compare_records(ck_consume(fast.bootstrap, "rv", 0, 0, 60), want, "confluent-kafka read back", timestamps=False)
    compare_records(kcat_consume(fast.bootstrap, "rv", 0, 0, 60), want, "kcat read back", timestamps=False)


@S.case
def malformed_record_refused_by_full_stored_by_batch():
    batch = batch_with(padded_record(), 1)
    r = raw_produce(full, "rv", batch)
    eq((r["error_code"], r["base_offset"]), (87, -1), "full: INVALID_RECORD")
    recs, hw = raw_read_all(full.bootstrap, "rv", 0)
    end = hw
    r = raw_produce(fast, "rv", batch)
    eq(r["error_code"], 0, "batch mode: stored")
    check(r["base_offset"] >= 0, "batch mode: base offset %d", r["base_offset"])
    c = kwire.Conn(fast.port)
    try:
        p = kwire.fetch_v4(c, "rv", 0, r["base_offset"])
        eq(p["error_code"], 0, "fetch of the stored batch")
        check(batch[16:] in p["records"], "the batch is stored as sent (but its offset and leader epoch)")
    finally:
        c.close()
    eq(end, raw_read_all(full.bootstrap, "rv", 0)[1], "full: nothing appended")
    # the CRC and the header are still checked in batch mode
    bad_crc = batch[:17] + bytes([batch[17] ^ 1]) + batch[18:]
    eq(raw_produce(fast, "rv", bad_crc)["error_code"], 2, "batch mode, bad CRC: CORRUPT_MESSAGE")
    miscounted = batch_with(padded_record(), 2, last_offset_delta=0)
    eq(raw_produce(fast, "rv", miscounted)["error_code"], 87, "batch mode, count 2 for the offset range [0, 0]")
    # a batch the topic's compression.type rebuilds has its records read
    eq(raw_produce(fast, "rv-gzip", batch)["error_code"], 87, "batch mode, recompressed topic: INVALID_RECORD")
    got = ck_produce(fast.bootstrap, "rv-gzip", [rec(b"k", b"v", [], 0)])
    eq(got[0]["offset"], 0, "batch mode, recompressed topic: a valid record")
    compare_records(ck_consume(fast.bootstrap, "rv-gzip", 0, 0, 1), [dict(rec(b"k", b"v", [], 0), offset=0)],
                    "recompressed record read back", timestamps=False)


@S.case
def compacted_topics_are_read_in_batch_mode():
    for s, what in ((full, "full"), (fast, "batch")):
        _, errs = ck_produce_errors(s.bootstrap, "rv-compact", [rec(None, b"no key", [], 0)],
                                    conf={"linger.ms": 0, "retries": 0})
        eq([e.code() for e in errs], [KafkaError.INVALID_RECORD], "%s: keyless record on a compacted topic" % what)
        eq(raw_produce(s, "rv-compact", batch_with(padded_record(), 1))["error_code"], 87,
           "%s: malformed record on a compacted topic" % what)
        ck_produce(s.bootstrap, "rv-compact", [rec(b"k", b"v", [], 0)])


@S.case
def timestamp_limits_hold_in_batch_mode():
    old = int(time.time() * 1000) - 2 * 3600 * 1000
    for s, what in ((full, "full"), (fast, "batch")):
        _, errs = ck_produce_errors(s.bootstrap, "rv-time", [rec(b"k", b"old", [], 0, timestamp=old)],
                                    conf={"linger.ms": 0, "retries": 0})
        eq([e.code() for e in errs], [KafkaError.INVALID_TIMESTAMP], "%s: a record 2 h old" % what)
        got = ck_produce(s.bootstrap, "rv-time", [rec(b"k", b"now", [], 0)])
        eq(got[0]["offset"], 0, "%s: a current record" % what)


@S.case
def the_mode_is_shown_and_a_bad_value_refused():
    p = run([SAMSACTL_BIN, "--bootstrap-server", fast.bootstrap, "configs", "describe", "--broker", "1", "--all"], limit=20)
    line = [ln for ln in p.stdout.decode().splitlines() if "samsa.record.validation=" in ln]
    check(line and "samsa.record.validation=batch" in line[0], "configs describe: %r", line)
    ports = free_ports(2)
    argv = [SAMSA_BIN, "--override", "node.id=1", "--override", "process.roles=broker,controller",
            "--override", "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % tuple(ports),
            "--override", "controller.quorum.voters=1@127.0.0.1:%d" % ports[1],
            "--override", "log.dirs=%s" % os.path.join(WORK, "rv-bad"),
            "--override", "samsa.record.validation=lazy"]
    p = run(argv, limit=20, check_rc=False)
    lines = [ln for ln in p.stderr.decode("utf-8", "replace").splitlines() if ln.strip() and " INFO: " not in ln]
    eq(p.returncode, 2, "exit status with samsa.record.validation=lazy")
    eq(len(lines), 1, "error lines %r" % lines)
    check("samsa.record.validation" in lines[0] and "lazy" in lines[0], "startup line: %s", lines[0])


@S.case
def a_stored_malformed_batch_harms_nothing_else():
    """In batch mode the malformed batch sits between good ones: lookups
    by time that do not need its records answer, a kill -9 and restart
    keeps every batch (recovery checks CRCs, not records), and the
    records after it read back."""
    t = "rv-bad"
    ck_create_topic(fast.bootstrap, t, 1)
    eq([r["offset"] for r in ck_produce(fast.bootstrap, t, [rec(b"a%d" % i, b"x", [], 0) for i in range(3)])],
       [0, 1, 2], "good records before")
    eq(raw_produce(fast, t, batch_with(padded_record(), 1))["base_offset"], 3, "the malformed batch")
    eq([r["offset"] for r in ck_produce(fast.bootstrap, t, [rec(b"b%d" % i, b"y", [], 0) for i in range(2)])],
       [4, 5], "good records after")
    c = kwire.Conn(fast.port)
    try:
        eq(kwire.list_offsets_v2(c, t, 0, timestamp=0)["offset"], 0, "ListOffsets by time 0")
    finally:
        c.close()
    fast.kill9()
    fast.start()
    c = kwire.Conn(fast.port)
    try:
        eq(kwire.list_offsets_v2(c, t, 0, timestamp=-1)["offset"], 6, "log end after kill -9 and restart")
        p = kwire.fetch_v4(c, t, 0, 4)
        eq(p["error_code"], 0, "fetch after the malformed batch")
        eq([(r["offset"], r["key"]) for r in kwire.parse_batches(p["records"])], [(4, b"b0"), (5, b"b1")],
           "records after the malformed batch")
    finally:
        c.close()


if __name__ == "__main__":
    S.run(setup)
