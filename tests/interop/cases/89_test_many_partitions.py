"""Many partitions per request (issue 12): one Produce and one Fetch
carrying 1 000 partitions each, and a consumer of 10 000 partitions that
keeps a KIP-227 fetch session, so that its empty polls are incremental
fetches naming no partition and answered with none.

The Produce of 1 000 partitions is one raw ProduceRequest (librdkafka
sends a partition per ProduceRequest); confluent-kafka then produces to
all 1 000 partitions with a linger and consumes them back, its Fetch
requests naming every assigned partition at once. Every partition's
records and offsets are checked exactly. The 10 000-partition session
is driven with raw Fetch v7 frames (none of the Debian clients keeps
fetch sessions; see 35_fetch_sessions.py). Server CPU per empty poll
with and without the session is logged (from /proc/PID/stat), never
asserted: the machine is shared.

The data dir is on /dev/shm when there is one: 10 000 partitions are
30 000 files created with their fsyncs, a minute on a slow disk and
about ten seconds on tmpfs."""
# limit: 120
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Server, Suite, check, eq, bound, log, stop_all, wait_topic  # noqa: E402
import kwire  # noqa: E402

S = Suite("many_partitions", case_limit=60)
srv = None
shm = None
WIDE = "wide"          # 1 000 partitions: the Produce and Fetch of 1 000
NWIDE = 1000
SESS = ["sess-%d" % i for i in range(9)]  # with WIDE: 10 000 partitions
HZ = os.sysconf("SC_CLK_TCK")
DELETE_RECORDS = 21
TXN = 0x10  # the transactional bit of a batch's attributes


def shm_free():
    st = os.statvfs("/dev/shm")
    return st.f_bavail * st.f_frsize


def setup():
    global srv, shm
    # transactional batches are produced raw and made final with
    # WriteTxnMarkers, as the coordinator would (37_txn_partition.py)
    over = {"num.network.threads": "2", "transaction.partition.verification.enable": "false"}
    # a container's /dev/shm may be 64 MiB: 30 000 files of a page each
    # need more, so a small one is left alone
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) and shm_free() >= (1 << 30):
        shm = tempfile.mkdtemp(prefix="samsa-interop-89-", dir="/dev/shm")
        over["log.dirs"] = shm
    srv = Server(overrides=over)
    c = kwire.Conn(srv.port, timeout=bound(60))
    try:
        # CreateTopics holds at most 10 000 records (Kafka's
        # max.records.per.user.op): a topic of 1 000 per request.
        for name in [WIDE] + SESS:
            res = kwire.create_topics_v4(c, [(name, NWIDE, 1, {})], timeout_ms=int(bound(50) * 1000))
            eq(res[0]["error_code"], 0, "CreateTopics %s: %s" % (name, res[0]["error_message"]))
    finally:
        c.close()
    for name in [WIDE] + SESS:
        wait_topic(srv.bootstrap, name, NWIDE, limit=30)


def cleanup_shm():
    if shm:
        os.system("rm -rf '%s'" % shm)


def server_ticks():
    with open("/proc/%d/stat" % srv.proc.pid) as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])


def delete_records_v0(c, topic, p, offset, timeout_ms=5000):
    """Raw DeleteRecords v0: (error_code, low_watermark)."""
    w = kwire.W()
    w.array([topic], lambda w, t: w.string(t).array([p], lambda w, q: w.i32(q).i64(offset)))
    w.i32(timeout_ms)
    r = c.request(DELETE_RECORDS, 0, w.bytes())
    r.i32()  # throttle
    (name, ((idx, low, err),)), = r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i64(), r.i16()))))
    eq((name, idx), (topic, p), "DeleteRecords answer names the partition")
    return err, low


def value(p, i, tag):
    return b"%s-%d-%d" % (tag, p, i)


@S.case
def one_produce_of_1000_partitions():
    """One ProduceRequest with a batch of 3 records for each of 1 000
    partitions: every partition answers base offset 0, and Fetch reads
    back exactly its 3 records at offsets 0-2."""
    c = kwire.Conn(srv.port, timeout=bound(30))
    try:
        w = kwire.W().string(None).i16(-1).i32(int(bound(20) * 1000))
        w.array([WIDE], lambda w, t: w.string(t).array(
            list(range(NWIDE)), lambda w, p: w.i32(p).bytes_(
                kwire.build_batch([(b"k", value(p, i, b"raw"), []) for i in range(3)]))))
        body = w.bytes()
        res = kwire.parse_produce_v8(c.request(kwire.PRODUCE, 8, body))
        parts = res[WIDE]
        eq(len(parts), NWIDE, "partitions in the Produce answer")
        bad = [(p, r["error_code"], r["base_offset"]) for p, r in sorted(parts.items())
               if r["error_code"] != 0 or r["base_offset"] != 0]
        eq(bad, [], "partitions not at base offset 0 without error")
        log("one Produce of %d partitions: %d bytes", NWIDE, len(body))
        # read back: one Fetch v4 naming all 1 000 partitions
        w = kwire.W().i32(-1).i32(0).i32(1).i32(64 << 20).i8(0)
        w.array([WIDE], lambda w, t: w.string(t).array(
            list(range(NWIDE)), lambda w, p: w.i32(p).i64(0).i32(1 << 20)))
        r = c.request(kwire.FETCH, 4, w.bytes())
        r.i32()

        def part(r):
            p, e, hw = r.i32(), r.i16(), r.i64()
            r.i64()
            r.array(lambda r: (r.i64(), r.i64()))
            recs = [(x["offset"], x["value"]) for x in kwire.parse_batches(r.bytes_() or b"")]
            return p, (e, hw, recs)

        got = {}
        for name, ps in r.array(lambda r: (r.string(), r.array(part))):
            eq(name, WIDE, "topic in the Fetch answer")
            got.update(dict(ps))
        eq(len(got), NWIDE, "partitions in one Fetch answer")
        bad = [p for p in range(NWIDE)
               if got[p] != (0, 3, [(i, value(p, i, b"raw")) for i in range(3)])]
        eq(bad[:5], [], "partitions whose records or offsets differ (first 5)")
    finally:
        c.close()


@S.case
def confluent_produce_and_consume_1000_partitions():
    """confluent-kafka produces 2 records to each of 1 000 partitions
    with a linger (so every flush has many partitions ready), then a
    consumer assigned all 1 000 reads them back: exact values at offsets
    3 and 4 of each (after the raw Produce's 0-2)."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    import json
    stats = {}

    def on_stats(s):
        stats["last"] = json.loads(s)

    p = Producer({"bootstrap.servers": srv.bootstrap, "linger.ms": 500, "batch.num.messages": 100000,
                  "queue.buffering.max.messages": 100000, "acks": "all",
                  "statistics.interval.ms": 100, "stats_cb": on_stats})
    errors = []

    def dr(err, msg):
        if err is not None:
            errors.append((msg.partition(), str(err)))

    for part in range(NWIDE):
        for i in range(2):
            p.produce(WIDE, value=value(part, i, b"ck"), key=b"k", partition=part, on_delivery=dr)
    left = p.flush(bound(30))
    eq((left, errors[:3]), (0, []), "undelivered and failed records")
    p.poll(0.3)
    reqs = sum(b.get("req", {}).get("Produce", 0) for b in stats.get("last", {}).get("brokers", {}).values())
    log("confluent-kafka producer: %d Produce requests for %d partitions", reqs, NWIDE)

    c = Consumer({"bootstrap.servers": srv.bootstrap, "group.id": "many-89", "enable.auto.commit": False,
                  "fetch.max.bytes": 64 << 20, "statistics.interval.ms": 100, "stats_cb": on_stats})
    try:
        c.assign([TopicPartition(WIDE, part, 3) for part in range(NWIDE)])
        got = {}
        n = 0
        deadline = time.monotonic() + bound(30)
        while n < 2 * NWIDE and time.monotonic() < deadline:
            for m in c.consume(10000, timeout=0.5):
                check(m.error() is None, "consume error: %s", m.error())
                got.setdefault(m.partition(), []).append((m.offset(), m.value()))
                n += 1
        eq(n, 2 * NWIDE, "records consumed")
        bad = [part for part in range(NWIDE)
               if got.get(part) != [(3 + i, value(part, i, b"ck")) for i in range(2)]]
        eq(bad[:5], [], "partitions whose records or offsets differ (first 5)")
        c.poll(0.3)
        fetches = sum(b.get("req", {}).get("Fetch", 0)
                      for b in stats.get("last", {}).get("brokers", {}).values())
        log("confluent-kafka consumer: %d Fetch requests for %d records of %d partitions", fetches, n, NWIDE)
    finally:
        c.close()


def fetch_v7(c, session_id, epoch, topics, max_wait_ms=0, isolation=0, detail=None, min_bytes=1):
    """topics: [(name, [(partition, offset)])]. Returns (error, session id,
    {(topic, partition): (error, hw, values)}, request body size); values
    leave out control records. detail, a dict, gets {(topic, partition):
    (last stable offset, log start offset)}."""
    w = kwire.W().i32(-1).i32(max_wait_ms).i32(min_bytes).i32(64 << 20).i8(isolation).i32(session_id).i32(epoch)
    w.array(topics, lambda w, t: w.string(t[0]).array(
        t[1], lambda w, p: w.i32(p[0]).i64(p[1]).i64(-1).i32(1 << 20)))
    w.array([], None)
    body = w.bytes()
    r = c.request(kwire.FETCH, 7, body)
    r.i32()
    err, sid = r.i16(), r.i32()

    def part(r):
        p, e, hw = r.i32(), r.i16(), r.i64()
        lso, start = r.i64(), r.i64()
        r.array(lambda r: (r.i64(), r.i64()))
        vals = [x["value"] for x in kwire.parse_batches(r.bytes_() or b"") if not x["control"]]
        return p, (e, hw, vals), (lso, start)

    out = {}
    for name, ps in r.array(lambda r: (r.string(), r.array(part))) or []:
        for p, v, d in ps:
            out[(name, p)] = v
            if detail is not None:
                detail[(name, p)] = d
    return err, sid, out, len(body)


@S.case
def session_of_10000_partitions():
    """A full fetch of 10 000 partitions (epoch 0) opens a session and
    answers all of them; then empty polls are incremental fetches that
    name no partition (a request of a few dozen bytes instead of
    ~200 KB) and are answered with none; a record produced to one
    partition comes back alone in the next poll; epoch -1 closes."""
    topics = [(t, [(p, 3 if t == WIDE else 0) for p in range(NWIDE)]) for t in [WIDE] + SESS]
    nparts = sum(len(ps) for _, ps in topics)
    eq(nparts, 10000, "partitions in the session")
    c = kwire.Conn(srv.port, timeout=bound(30))
    q = kwire.Conn(srv.port, timeout=bound(30))
    try:
        err, sid, parts, full_size = fetch_v7(c, 0, 0, topics)
        eq(err, 0, "full fetch error")
        check(sid > 0, "a session for 10 000 partitions (got id %d)" % sid)
        eq(len(parts), nparts, "partitions answered by the full fetch")
        eq(parts[(WIDE, 7)], (0, 5, [value(7, i, b"ck") for i in range(2)]), "wide-7 from offset 3")
        eq(parts[("sess-4", 9)], (0, 0, []), "an empty partition")
        # The client now knows everything: move its offsets to the ends.
        err, sid1, parts, _ = fetch_v7(c, sid, 1, [(WIDE, [(p, 5) for p in range(NWIDE)])])
        eq((err, sid1, parts), (0, sid, {}), "first incremental (offsets moved)")

        polls = 50
        t0 = server_ticks()
        for e in range(2, 2 + polls):
            err, s, parts, inc_size = fetch_v7(c, sid, e, [])
            eq((err, s, parts), (0, sid, {}), "empty incremental poll %d" % e)
        inc_ticks = server_ticks() - t0
        check(inc_size * 100 < full_size, "an incremental poll (%d B) is a small fraction of a full one (%d B)"
              % (inc_size, full_size))

        # A record in one partition: the next poll names it alone.
        b = kwire.build_batch([(b"k", b"news", [])])
        eq(kwire.produce(q, "sess-6", 321, b)["error_code"], 0, "produce to sess-6/321")
        e = 2 + polls
        err, s, parts, _ = fetch_v7(c, sid, e, [])
        eq((err, s, parts), (0, sid, {("sess-6", 321): (0, 1, [b"news"])}), "the poll after one record")

        # Every kind of news for one partition among the 10 000 comes in
        # the next poll, alone, although the poll skips the topics where
        # nothing changed (util/chgen.h).
        e += 1
        err, s, parts, _ = fetch_v7(c, sid, e, [("sess-6", [(321, 1)])])
        eq((err, s, parts), (0, sid, {}), "the client moved sess-6/321 past the record")
        for _ in range(3):
            e += 1
            eq(fetch_v7(c, sid, e, [])[:3], (0, sid, {}), "empty poll %d" % e)
        # a log start offset moved by DeleteRecords
        eq(delete_records_v0(q, WIDE, 7, 2), (0, 2), "DeleteRecords wide-7 to 2 (error, low watermark)")
        e += 1
        d = {}
        err, s, parts, _ = fetch_v7(c, sid, e, [], detail=d)
        eq((err, s, parts), (0, sid, {(WIDE, 7): (0, 5, [])}), "the poll after DeleteRecords")
        eq(d[(WIDE, 7)], (5, 2), "wide-7's last stable offset and new log start offset")
        e += 1
        eq(fetch_v7(c, sid, e, [])[:3], (0, sid, {}), "empty poll after the log start moved")
        # a record arriving while a long poll is parked with every topic
        # skipped: the poll walks the chunk that changed and answers at
        # once (not after its 10 s) with the record
        e += 1
        box = {}

        def long_poll(epoch=e):
            box["r"] = fetch_v7(c, sid, epoch, [], max_wait_ms=10000)
            box["t"] = time.monotonic()

        th = threading.Thread(target=long_poll)
        th.start()
        time.sleep(0.5)
        eq(box, {}, "the long poll is parked")
        t_produce = time.monotonic()
        eq(kwire.produce(q, "sess-3", 500, kwire.build_batch([(b"k", b"late", [])]))["error_code"], 0,
           "produce to sess-3/500 during the long poll")
        th.join(bound(15))
        check(not th.is_alive(), "the long poll answered")
        err, s, parts, _ = box["r"]
        waited = box["t"] - t_produce
        check(waited < 3, "the long poll answered %.3f s after the record (max wait 10 s)" % waited)
        log("parked poll answered %.1f ms after the record", waited * 1000)
        eq((err, s, parts), (0, sid, {("sess-3", 500): (0, 1, [b"late"])}), "the record produced during the long poll")
        e += 1
        err, s, parts, _ = fetch_v7(c, sid, e, [("sess-3", [(500, 1)])])
        eq((err, s, parts), (0, sid, {}), "the client moved sess-3/500 past the record")
        # the same with a min_bytes the record does not reach: the poll
        # takes the record's chunk into its walk but waits its full time
        e += 1
        box = {}

        def long_poll_min(epoch=e):
            t0 = time.monotonic()
            box["r"] = fetch_v7(c, sid, epoch, [], max_wait_ms=1500, min_bytes=1 << 20)
            box["took"] = time.monotonic() - t0

        th = threading.Thread(target=long_poll_min)
        th.start()
        time.sleep(0.3)
        eq(kwire.produce(q, "sess-5", 5, kwire.build_batch([(b"k", b"small", [])]))["error_code"], 0,
           "produce to sess-5/5 during the long poll")
        th.join(bound(15))
        check(not th.is_alive(), "the long poll with min_bytes answered")
        err, s, parts, _ = box["r"]
        check(1.4 <= box["took"] < bound(5), "min_bytes not reached: waited its max wait (%.2f s)" % box["took"])
        eq((err, s, parts), (0, sid, {("sess-5", 5): (0, 1, [b"small"])}), "then answered with the record")
        e += 1
        err, s, parts, _ = fetch_v7(c, sid, e, [("sess-5", [(5, 1)])])
        eq((err, s, parts), (0, sid, {}), "the client moved sess-5/5 past the record")

        # The same empty polls without a session (what a client without
        # KIP-227 sends): every poll names and answers 10 000 partitions.
        ends = {(WIDE, p): 5 for p in range(NWIDE)}
        ends[("sess-6", 321)] = 1
        ends[("sess-3", 500)] = 1
        ends[("sess-5", 5)] = 1
        nosess = [(t, [(p, ends.get((t, p), 0)) for p in range(NWIDE)]) for t in [WIDE] + SESS]
        t0 = server_ticks()
        for _ in range(polls):
            err, s, parts, _ = fetch_v7(q, 0, -1, nosess)
            eq((err, s, len(parts)), (0, 0, nparts), "sessionless full poll")
        full_ticks = server_ticks() - t0
        log("server CPU per empty poll of 10 000 partitions: incremental %.2f ms (request %d B), "
            "full %.2f ms (request %d B) (%d polls each)",
            inc_ticks * 1000.0 / HZ / polls, inc_size, full_ticks * 1000.0 / HZ / polls, full_size, polls)

        err, s, parts, _ = fetch_v7(c, sid, -1, [(WIDE, [(0, 5)])])
        eq((err, s), (0, 0), "epoch -1 closes the session")
        err, _, _, _ = fetch_v7(c, sid, e + 1, [])
        eq(err, 70, "the closed session is gone (FETCH_SESSION_ID_NOT_FOUND)")
    finally:
        c.close()
        q.close()


@S.case
def read_committed_session_sees_the_lso_move():
    """A read_committed session of the same 10 000 partitions: an open
    transaction's records raise sess-2/77's high watermark but not its
    last stable offset (the next poll names the partition alone, without
    records), the commit marker moves the LSO (the next poll brings the
    records), and the polls in between are empty."""
    ends = {(WIDE, p): 5 for p in range(NWIDE)}
    ends[("sess-6", 321)] = 1
    ends[("sess-3", 500)] = 1
    ends[("sess-5", 5)] = 1
    topics = [(t, [(p, ends.get((t, p), 0)) for p in range(NWIDE)]) for t in [WIDE] + SESS]
    c = kwire.Conn(srv.port, timeout=bound(30))
    q = kwire.Conn(srv.port, timeout=bound(30))
    try:
        err, sid, parts, _ = fetch_v7(c, 0, 0, topics, isolation=1)
        eq(err, 0, "full read_committed fetch error")
        check(sid > 0, "a read_committed session (got id %d)" % sid)
        eq(len(parts), 10000, "partitions answered by the full fetch")
        e = 1
        for _ in range(3):
            eq(fetch_v7(c, sid, e, [], isolation=1)[:3], (0, sid, {}), "empty read_committed poll %d" % e)
            e += 1
        pid = 7001
        b = kwire.build_batch([(b"k", b"txn-%d" % i, []) for i in range(2)], attributes=TXN, producer_id=pid,
                              producer_epoch=0, base_sequence=0)
        r = kwire.produce(q, "sess-2", 77, b, transactional_id="tx89")
        eq((r["error_code"], r["base_offset"]), (0, 0), "transactional records to sess-2/77")
        d = {}
        eq(fetch_v7(c, sid, e, [], isolation=1, detail=d)[:3], (0, sid, {("sess-2", 77): (0, 2, [])}),
           "open transaction: the high watermark moves, no records")
        eq(d[("sess-2", 77)], (0, 0), "the last stable offset held at the open transaction")
        e += 1
        eq(fetch_v7(c, sid, e, [], isolation=1)[:3], (0, sid, {}), "nothing new while the transaction is open")
        e += 1
        res = kwire.write_txn_markers(q, [{"producer_id": pid, "producer_epoch": 0, "commit": True,
                                           "coordinator_epoch": 0, "topics": {"sess-2": [77]}}])
        eq([p for p, _ in res], [pid], "WriteTxnMarkers answers the producer")
        eq(res[0][1][("sess-2", 77)], 0, "COMMIT marker")
        d = {}
        eq(fetch_v7(c, sid, e, [], isolation=1, detail=d)[:3],
           (0, sid, {("sess-2", 77): (0, 3, [b"txn-0", b"txn-1"])}), "after the commit: the records")
        eq(d[("sess-2", 77)], (3, 0), "the last stable offset past the marker")
        e += 1
        eq(fetch_v7(c, sid, e, [("sess-2", [(77, 3)])], isolation=1)[:3], (0, sid, {}),
           "the client moved sess-2/77 past the marker")
        e += 1
        eq(fetch_v7(c, sid, e, [], isolation=1)[:3], (0, sid, {}), "empty read_committed poll after all")
        err, s, _, _ = fetch_v7(c, sid, -1, [], isolation=1)
        eq((err, s), (0, 0), "epoch -1 closes the session")
    finally:
        c.close()
        q.close()


def _finish_then_clean(code, _orig=S._finish):
    # Suite.run ends the process in _finish (os._exit): the tmpfs dir goes
    # once the server has stopped (a no-op when run already stopped it).
    stop_all()
    cleanup_shm()
    _orig(code)


S._finish = _finish_then_clean

if __name__ == "__main__":
    S.run(setup)
