"""The partition log seen through real clients: Kafka's on-disk layout
(segments, .index/.timeindex, checkpoints) and samsactl dump-log, restart
and kill -9 recovery, timestamp lookups across segments and inside
compressed batches, LogAppendTime and timestamp bounds, retention moving
the earliest offset, DeleteRecords (raw v0, kafkajs, @platformatic/kafka),
compaction visible to a consumer (latest value per key, tombstones gone
after delete.retention.ms), durable acks (flush.messages=1), and a log dir
that cannot be read taking only its partitions offline."""
# limit: 300
import json
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import (Server, Suite, Skip, Failure, check, eq, bound, log, ck_admin, ck_create_topic,  # noqa: E402
                     ck_produce, ck_produce_errors, ck_consume, ck_conf, rec, run, raw_read_all, NODE, HERE,
                     SAMSACTL_BIN, port_of)
import kwire  # noqa: E402

S = Suite("storage", case_limit=90)
srv = None
NOW = int(time.time() * 1000)
DELETE_RECORDS = 21
STORAGE_OVERRIDES = {"log.retention.check.interval.ms": "200", "log.cleaner.backoff.ms": "100",
                     "num.partitions": "1"}


def setup():
    global srv
    srv = Server(STORAGE_OVERRIDES)


def pdir(topic, p=0, server=None):
    return os.path.join((server or srv).data, "%s-%d" % (topic, p))


def files_of(topic, p=0, server=None):
    return sorted(os.listdir(pdir(topic, p, server)))


def watermarks(topic, p=0):
    """(earliest, high watermark). Retries NOT_LEADER_OR_FOLLOWER: after a
    restart a partition answers it until its log is open (recovery runs
    in the background while the broker already serves)."""
    from confluent_kafka import Consumer, TopicPartition, KafkaException
    c = Consumer(ck_conf(srv.bootstrap, **{"group.id": "samsa-interop-unused", "enable.auto.commit": False}))
    try:
        deadline = time.monotonic() + bound(10)
        while True:
            try:
                return c.get_watermark_offsets(TopicPartition(topic, p), timeout=bound(10), cached=False)
            except KafkaException as e:
                if e.args[0].code() != 6 or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
    finally:
        c.close()


def offsets_for_times(topic, p, ts):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer(ck_conf(srv.bootstrap, **{"group.id": "samsa-interop-unused", "enable.auto.commit": False}))
    try:
        res = c.offsets_for_times([TopicPartition(topic, p, ts)], timeout=bound(10))
        check(res[0].error is None, "offsets_for_times error %s", res[0].error)
        return res[0].offset
    finally:
        c.close()


def consume_all(topic, p=0, server=None):
    """Every record from the earliest offset to the high watermark."""
    server = server or srv
    lo, hi = watermarks(topic, p) if server is srv else (None, None)
    recs, hw = raw_read_all(server.bootstrap, topic, p)
    return recs, hw


def fetch_error(topic, p, offset):
    c = kwire.Conn(srv.port)
    try:
        return kwire.fetch_v4(c, topic, p, offset)["error_code"]
    finally:
        c.close()


def delete_records_v0(topic, p, offset, timeout_ms=5000):
    """Raw DeleteRecords v0: (error_code, low_watermark)."""
    c = kwire.Conn(srv.port)
    try:
        w = kwire.W()
        w.array([topic], lambda w, t: w.string(t).array([p], lambda w, q: w.i32(q).i64(offset)))
        w.i32(timeout_ms)
        r = c.request(DELETE_RECORDS, 0, w.bytes())
        r.i32()  # throttle
        topics = r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i64(), r.i16()))))
        (name, parts), = topics
        (idx, low, err), = parts
        eq((name, idx), (topic, p), "DeleteRecords answer names the partition")
        return err, low
    finally:
        c.close()


def produce_v8(port, topic, p, records):
    c = kwire.Conn(port)
    try:
        return kwire.produce(c, topic, p, kwire.build_batch(records))
    finally:
        c.close()


def node_admin(op, args):
    argv = [NODE, os.path.join(HERE, "js", "test_storage_admin.mjs"), srv.bootstrap, op, json.dumps(args)]
    p = run(argv, limit=40, check_rc=False)
    lines = p.stdout.decode("utf-8", "replace").strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, ValueError):
        raise Failure("node %s: no JSON result; stdout:\n%s\nstderr:\n%s" % (
            op, "\n".join(lines[-20:]), p.stderr.decode("utf-8", "replace")[-2000:]))


def wait_until(fn, what, limit=10.0):
    deadline = time.monotonic() + bound(limit)
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(0.1)
    raise Failure("%s: not within %.0fs (last: %r)" % (what, bound(limit), last))


def dump_log(paths):
    p = run([SAMSACTL_BIN, "dump-log"] + paths, limit=30, check_rc=False)
    return p.returncode, p.stdout.decode("utf-8", "replace")


# ---------------------------------------------------------------- layout, recovery, dump-log

@S.case
def segments_indexes_dump_log_and_recovery():
    t = "st-seg"
    ck_create_topic(srv.bootstrap, t, 1, config={"segment.bytes": "8192", "index.interval.bytes": "512"})
    recs = [rec(b"k%04d" % i, b"v" * 80 + b"%d" % i, [], 0, NOW + i * 10) for i in range(600)]
    res = ck_produce(srv.bootstrap, t, recs, conf={"linger.ms": 1, "batch.size": 1500})
    eq([r["offset"] for r in res], list(range(600)), "produced offsets")
    srv.restart()  # clean: trimmed indexes, checkpoints, clean-shutdown markers
    names = files_of(t)
    logs = [n for n in names if n.endswith(".log")]
    check(len(logs) >= 5, "segments rolled at segment.bytes: %s", names)
    for n in logs:
        check(re.fullmatch(r"\d{20}\.log", n), "segment name %s", n)
        base = n[:-4]
        check(base + ".index" in names and base + ".timeindex" in names, "index files of %s: %s", n, names)
    for n in ("partition.metadata", "leader-epoch-checkpoint"):
        check(n in names, "%s in %s", n, names)
    with open(os.path.join(pdir(t), "leader-epoch-checkpoint")) as f:
        eq(f.read(), "0\n1\n0 0\n", "leader-epoch-checkpoint")
    for n in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint", "meta.properties"):
        check(os.path.exists(os.path.join(srv.data, n)), "%s in the log dir", n)
    with open(os.path.join(srv.data, "log-start-offset-checkpoint")) as f:
        lines = f.read().splitlines()
    eq(lines[0], "0", "checkpoint version line")
    check("%s 0 0" % t in lines, "log-start-offset-checkpoint lists %s: %s", t, lines)
    # closed segments' indexes hold exactly their entries (8 / 12 bytes each)
    for n in logs[:-1]:
        base = os.path.join(pdir(t), n[:-4])
        check(os.path.getsize(base + ".index") % 8 == 0 and os.path.getsize(base + ".index") > 0,
              "%s.index size %d", n[:-4], os.path.getsize(base + ".index"))
        check(os.path.getsize(base + ".timeindex") % 12 == 0, "%s.timeindex size", n[:-4])

    paths = [os.path.join(pdir(t), n) for n in names if re.search(r"\.(log|index|timeindex)$", n)]
    rc, out = dump_log(paths)
    eq(rc, 0, "samsactl dump-log exit status (output:\n%s)" % out[-2000:])
    batches = [l for l in out.splitlines() if l.startswith("baseOffset:")]
    check(all(" isvalid: true" in l for l in batches), "every batch valid")
    check("mismatch" not in out, "no index mismatch")
    last = sum(int(re.search(r" count: (\d+)", l).group(1)) for l in batches)
    eq(last, 600, "records counted by dump-log")
    rc, out = dump_log(["--print-data-log", os.path.join(pdir(t), logs[0])])
    check("| offset: 0 CreateTime: %d keySize: 5 valueSize: 81" % NOW in out, "records printed:\n%s" % out[:800])

    def check_all(what):
        got, hw = raw_read_all(srv.bootstrap, t, 0)
        eq(hw, 600, "%s: high watermark" % what)
        eq([(r["offset"], r["key"], r["value"]) for r in got], [(i, recs[i]["key"], recs[i]["value"]) for i in range(600)],
           "%s: records" % what)
        for target, want in ((NOW, 0), (NOW + 1, 1), (NOW + 2995, 300), (NOW + 5990, 599), (NOW + 5991, -1)):
            eq(offsets_for_times(t, 0, target), want, "%s: offsets_for_times %+d" % (what, target - NOW))

    check_all("after a clean restart")
    # kill -9 with appends after the restart; then the recovery
    ck_produce(srv.bootstrap, t, [rec(b"x", b"after", [], 0, NOW + 7000)])
    since = srv.log_size()
    srv.kill9()
    srv.start()
    line = srv.wait_log(r"%s-0: recovered after an unclean shutdown" % t, since)
    log("%s", line.split(" INFO: ")[-1])
    got, hw = raw_read_all(srv.bootstrap, t, 0)
    eq(hw, 601, "after kill -9: high watermark")
    eq(got[-1]["value"], b"after", "after kill -9: last record")


@S.case
def timestamps_in_compressed_batches_are_exact():
    if "codec:gzip" not in srv.log_text():
        raise Skip("no gzip codec plugin loaded")
    t = "st-gz"
    ck_create_topic(srv.bootstrap, t, 1)
    recs = [rec(b"k%d" % i, b"value-%d" % i, [], 0, NOW + 1000 * i) for i in range(20)]
    # A long linger: under load the 20 produce calls may span 100 ms and
    # librdkafka would split them into two batches; and the partitions known
    # first: records queued while the topic's metadata is still unknown
    # could otherwise go out in a batch of their own.
    ck_produce(srv.bootstrap, t, recs, conf={"linger.ms": 5000, "compression.type": "gzip"}, metadata_first=True)
    batches = [l for l in dump_log([os.path.join(pdir(t), "00000000000000000000.log")])[1].splitlines()
               if l.startswith("baseOffset:")]
    eq(len(batches), 1, "one gzip batch")
    check("compresscodec: gzip" in batches[0], "batch is gzip: %s", batches[0])
    for target, want in ((NOW + 5500, 6), (NOW + 6000, 6), (NOW + 19000, 19), (NOW + 19001, -1), (NOW - 1, 0)):
        eq(offsets_for_times(t, 0, target), want, "offsets_for_times %+d inside the compressed batch" % (target - NOW))


@S.case
def log_append_time_and_timestamp_bounds():
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME
    ck_create_topic(srv.bootstrap, "st-lat", 1, config={"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    ck_produce(srv.bootstrap, "st-lat", [rec(b"a", b"old", [], 0, 1000000000000)])
    after = int(time.time() * 1000)
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer(ck_conf(srv.bootstrap, **{"group.id": "samsa-interop-unused", "enable.auto.commit": False}))
    try:
        c.assign([TopicPartition("st-lat", 0, 0)])
        m = None
        deadline = time.monotonic() + bound(10)
        while m is None and time.monotonic() < deadline:
            m = c.poll(0.5)
        check(m is not None and m.error() is None, "LogAppendTime record read: %s", m and m.error())
        ts_type, ts = m.timestamp()
        eq(ts_type, TIMESTAMP_LOG_APPEND_TIME, "timestamp type")
        check(before <= ts <= after + 1000, "LogAppendTime %d within [%d, %d]", ts, before, after)
    finally:
        c.close()
    eq(offsets_for_times("st-lat", 0, before), 0, "lookup by broker time")

    ck_create_topic(srv.bootstrap, "st-bounds", 1,
                    config={"message.timestamp.before.max.ms": "3600000", "message.timestamp.after.max.ms": "3600000"})
    now = int(time.time() * 1000)
    for ts, ok in ((now - 7200000, False), (now + 7200000, False), (now, True), (now - 1800000, True)):
        res, errs = ck_produce_errors(srv.bootstrap, "st-bounds", [rec(b"t", b"x", [], 0, ts)],
                                      conf={"retries": 0, "enable.idempotence": False})
        if ok:
            eq(errs, [], "timestamp %+d ms accepted" % (ts - now))
        else:
            eq([e.code() for e in errs], [32], "timestamp %+d ms: INVALID_TIMESTAMP" % (ts - now))


# ---------------------------------------------------------------- retention

@S.case
def retention_advances_earliest_offset():
    t = "st-ret"
    ck_create_topic(srv.bootstrap, t, 1, config={"retention.ms": "3600000", "segment.ms": "60000",
                                                  "file.delete.delay.ms": "300"})
    old = [rec(b"o%d" % i, b"old", [], 0, NOW - 7200000 + i) for i in range(10)]
    new = [rec(b"n%d" % i, b"new", [], 0, NOW + i) for i in range(10)]
    ck_produce(srv.bootstrap, t, old)
    ck_produce(srv.bootstrap, t, new)  # 2 h after the first batch: a new segment
    # the old segment expires at the next check (every 200 ms)
    wait_until(lambda: watermarks(t) == (10, 20), "earliest offset 10 after retention")
    eq(fetch_error(t, 0, 5), 1, "Fetch below the log start: OFFSET_OUT_OF_RANGE")
    got = ck_consume(srv.bootstrap, t, 0, 10, 10)
    eq([r["value"] for r in got], [b"new"] * 10, "records left")
    # the removed segment's files: renamed .deleted, then gone
    wait_until(lambda: not [n for n in files_of(t) if n.startswith("00000000000000000000.")],
               "segment 0 files removed after file.delete.delay.ms")

    # retention.bytes, changed on the fly: segments from the front go
    # while the partition is over the limit by a whole segment
    t2 = "st-retb"
    ck_create_topic(srv.bootstrap, t2, 1, config={"segment.bytes": "4096"})
    ck_produce(srv.bootstrap, t2, [rec(b"b%d" % i, b"x" * 200, [], 0, NOW + i) for i in range(200)],
               conf={"batch.size": 1024, "linger.ms": 1})
    nseg = len([n for n in files_of(t2) if n.endswith(".log")])
    check(nseg >= 8, "segments: %d", nseg)
    from confluent_kafka.admin import ConfigResource
    a = ck_admin(srv.bootstrap)
    fs = a.alter_configs([ConfigResource("topic", t2, set_config={"segment.bytes": "4096", "retention.bytes": "10000"})],
                         request_timeout=bound(15))
    for f in fs.values():
        f.result(timeout=bound(15))

    def trimmed():
        logs = [n for n in files_of(t2) if n.endswith(".log")]
        size = sum(os.path.getsize(os.path.join(pdir(t2), n)) for n in logs)
        lo, hi = watermarks(t2)
        return (lo, hi, size, len(logs)) if lo > 0 and size <= 10000 + 4096 else None
    lo, hi, size, n = wait_until(trimmed, "retention.bytes applied")
    log("retention.bytes=10000: %d segment(s), %d bytes, offsets %d..%d", n, size, lo, hi)
    eq(hi, 200, "high watermark unchanged")
    eq(fetch_error(t2, 0, lo - 1), 1, "Fetch below the new start: OFFSET_OUT_OF_RANGE")
    eq(fetch_error(t2, 0, lo), 0, "Fetch at the new start")


# ---------------------------------------------------------------- DeleteRecords

@S.case
def delete_records():
    t = "st-dr"
    ck_create_topic(srv.bootstrap, t, 1, config={"segment.bytes": "2048"})
    ck_produce(srv.bootstrap, t, [rec(b"d%d" % i, b"y" * 50, [], 0, NOW + i) for i in range(100)],
               conf={"batch.size": 600, "linger.ms": 1})
    eq(delete_records_v0(t, 0, 30), (0, 30), "raw DeleteRecords v0 to 30 (error, low watermark)")
    eq(watermarks(t), (30, 100), "watermarks after DeleteRecords")
    eq(fetch_error(t, 0, 29), 1, "Fetch below: OFFSET_OUT_OF_RANGE")
    eq(fetch_error(t, 0, 30), 0, "Fetch at the start")
    eq(delete_records_v0(t, 0, 10), (0, 30), "DeleteRecords never moves the start back")
    r = node_admin("kafkajs_delete", {"topic": t, "partition": 0, "offset": 50})
    eq((r.get("ok"), r.get("low"), r.get("high")), (True, 50, 100), "kafkajs deleteTopicRecords (%s)" % r)
    r = node_admin("platformatic_delete", {"topic": t, "partition": 0, "offset": 60})
    eq((r.get("ok"), r.get("low")), (True, 60), "@platformatic/kafka deleteRecords (%s)" % r)
    eq(delete_records_v0(t, 0, 101), (1, -1), "above the high watermark: OFFSET_OUT_OF_RANGE")
    eq(delete_records_v0(t, 0, -7), (1, -1), "a negative offset: OFFSET_OUT_OF_RANGE")
    eq(delete_records_v0("st-nope", 0, 1), (3, -1), "unknown topic")
    r = node_admin("platformatic_delete", {"topic": t, "partition": 0, "offset": 1000})
    check(not r.get("ok") and "OFFSET_OUT_OF_RANGE" in r.get("error", ""), "platformatic error: %s" % r)
    ck_create_topic(srv.bootstrap, "st-dr-compact", 1, config={"cleanup.policy": "compact"})
    eq(delete_records_v0("st-dr-compact", 0, 0), (44, -1), "compact-only topic: POLICY_VIOLATION")
    got = ck_consume(srv.bootstrap, t, 0, 60, 40)
    eq(got[0]["offset"], 60, "a consumer from the earliest offset starts at 60")
    # whole segments below the start go at the next retention pass
    wait_until(lambda: min(int(n[:20]) for n in files_of(t) if n.endswith(".log")) > 0,
               "segments below the start removed")
    # the start survives a crash: its checkpoint follows within a second
    time.sleep(1.5)
    srv.kill9()
    srv.start()
    eq(watermarks(t), (60, 100), "watermarks after kill -9 and restart")
    eq(delete_records_v0(t, 0, -1), (0, 100), "-1 deletes up to the high watermark")
    eq(watermarks(t), (100, 100), "empty partition")
    ck_produce(srv.bootstrap, t, [rec(b"z", b"after", [], 0, NOW)])
    eq(watermarks(t), (100, 101), "appends go on")


# ---------------------------------------------------------------- compaction

@S.case(limit=150)
def compaction_visible_to_consumer():
    t = "st-cmp"
    ck_create_topic(srv.bootstrap, t, 1, config={"cleanup.policy": "compact", "segment.ms": "1000",
                                                  "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "200",
                                                  "file.delete.delay.ms": "100"})
    latest = {}
    ts = [NOW]

    def produce_round(recs):
        # each round's timestamps start 2 s after the previous round's:
        # segment.ms rolls a segment per round
        ts[0] += 2000
        rs = [dict(r, timestamp=ts[0] + i) for i, r in enumerate(recs)]
        res = ck_produce(srv.bootstrap, t, rs, conf={"linger.ms": 20})
        for r in res:
            latest[r["key"]] = (r["offset"], r["value"])
        return res

    for v in range(5):
        produce_round([rec(b"k%02d" % k, b"k%02d-v%d" % (k, v), [], 0) for k in range(20)])
    produce_round([rec(b"k%02d" % k, None, [], 0) for k in range(5)])  # tombstones
    produce_round([rec(b"roll", b"r0", [], 0)])  # closes the last round's segment

    def view():
        got, hw = raw_read_all(srv.bootstrap, t, 0)
        return got, hw

    def cleaned():
        got, hw = view()
        keys = [r["key"] for r in got]
        return (got, hw) if len(keys) == len(set(keys)) else None
    got, hw = wait_until(cleaned, "the cleaner compacted the closed segments", limit=20)
    keys = [r["key"] for r in got]
    eq(len(keys), len(set(keys)), "each key once after cleaning (got %d records)" % len(keys))
    for r in got:
        want_off, want_val = latest[r["key"]]
        eq((r["offset"], r["value"]), (want_off, want_val), "record of %r: latest offset and value" % r["key"])
    eq(sorted(keys), sorted(latest), "every key's latest record is there (tombstones too, for now)")
    eq(hw, max(o for o, _ in latest.values()) + 1, "high watermark")
    # a real consumer from the beginning sees the same, with the gaps;
    # the tombstones may go in between (delete.retention.ms is 200 ms
    # here and the cleaner may pass again), and only they
    cons = ck_consume(srv.bootstrap, t, 0, 0, len(got), until_offset=hw - 1)
    seen = [(r["offset"], r["key"], r["value"]) for r in cons]
    want = [(r["offset"], r["key"], r["value"]) for r in got]
    eq([x for x in seen if x[2] is not None], [x for x in want if x[2] is not None], "confluent-kafka consumer")
    check(all(x in want for x in seen), "confluent-kafka consumer: records not in the raw read: %s",
          [x for x in seen if x not in want])

    # Tombstones go once they sat in clean segments delete.retention.ms
    # (200 ms) older than the newest clean segment (Kafka's delete
    # horizon): a few more rounds of new data get there.
    # The first pass gave the tombstones' batch a delete horizon (now +
    # delete.retention.ms, KIP-534); once it passed, the cleaner comes
    # back by itself, without new data, and drops them.
    t_clean = time.monotonic()
    got, _ = wait_until(lambda: (lambda g: g if not [r for r in g[0] if r["value"] is None] else None)(view()),
                        "tombstones gone after delete.retention.ms", limit=20)
    log("tombstones gone %.1fs after the first cleaning", time.monotonic() - t_clean)
    live = {k: v for k, v in latest.items() if v[1] is not None}
    gotmap = {r["key"]: (r["offset"], r["value"]) for r in got}
    for k, v in live.items():
        eq(gotmap.get(k), v, "live key %r after tombstone removal" % k)
    check(not any(k in gotmap for k, v in latest.items() if v[1] is None), "deleted keys are gone")
    log("compacted to %d records", len(got))


# ---------------------------------------------------------------- durable acks

@S.case
def flush_messages_1_durable_acks():
    t = "st-fsync"
    ck_create_topic(srv.bootstrap, t, 1, config={"flush.messages": "1"})
    recs = [rec(b"f%d" % i, b"durable-%d" % i, [], 0, NOW + i) for i in range(3000)]
    res = ck_produce(srv.bootstrap, t, recs, conf={"linger.ms": 2})
    eq([r["offset"] for r in res], list(range(3000)), "acknowledged offsets")
    eq(watermarks(t), (0, 3000), "watermarks")
    with open(os.path.join(srv.data, "recovery-point-offset-checkpoint")) as f:
        log("recovery-point-offset-checkpoint (periodic): %s", f.read().replace("\n", " | "))


# ---------------------------------------------------------------- offline log dir

@S.case
def unreadable_partition_dir_takes_its_log_dir_offline():
    s2 = Server(dict(STORAGE_OVERRIDES), name="twodirs", start=False)
    d1, d2 = os.path.join(s2.dir, "d1"), os.path.join(s2.dir, "d2")
    s2.data = d1  # argv() passes log.dirs=<data>: give both
    s2.overrides["log.dirs"] = "%s,%s" % (d1, d2)
    s2.start()
    try:
        ck_create_topic(s2.bootstrap, "st-off", 2)
        ck_produce(s2.bootstrap, "st-off", [rec(b"a", b"0", [], 0), rec(b"b", b"1", [], 1)])
        where = {p: d for p in (0, 1) for d in (d1, d2) if os.path.isdir(os.path.join(d, "st-off-%d" % p))}
        check(len(set(where.values())) == 2, "partitions spread over both dirs: %s", where)
        s2.stop()
        # damage: the partition's first segment becomes a directory
        bad_p = 1
        seg = os.path.join(where[bad_p], "st-off-%d" % bad_p, "00000000000000000000.log")
        os.unlink(seg)
        os.mkdir(seg)
        since = s2.log_size()
        s2.start()
        s2.wait_log(r"log dir .* is offline", since)
        good_p = 1 - bad_p
        eq(produce_v8(s2.port, "st-off", good_p, [(b"c", b"ok", [])])["error_code"], 0, "produce to the healthy dir")
        eq(produce_v8(s2.port, "st-off", bad_p, [(b"c", b"no", [])])["error_code"], 56,
           "produce to the offline dir: KAFKA_STORAGE_ERROR")
        c = kwire.Conn(s2.port)
        try:
            eq(kwire.fetch_v4(c, "st-off", bad_p, 0)["error_code"], 56, "fetch from the offline dir")
            eq(kwire.fetch_v4(c, "st-off", good_p, 0)["error_code"], 0, "fetch from the healthy dir")
        finally:
            c.close()
        ck_create_topic(s2.bootstrap, "st-off-new", 2)
        eq(sorted(os.listdir(where[bad_p])).count("st-off-new-0") + sorted(os.listdir(where[bad_p])).count(
            "st-off-new-1"), 0, "no new partition placed in the offline dir")
        ck_produce(s2.bootstrap, "st-off-new", [rec(b"n", b"1", [], 0), rec(b"n", b"1", [], 1)])
    finally:
        s2.stop()


if __name__ == "__main__":
    S.run(setup)
