"""Fetch sessions (KIP-227) as the Java consumer drives them, on raw Fetch
v7 frames: a full fetch opens a session, incremental fetches carry only
changes both ways, epochs are checked, forgotten partitions drop out, and
epoch -1 closes the session. None of the Debian/npm clients here uses
sessions, so the protocol is exercised by hand."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Server, Suite, check, eq, bound, ck_admin, ck_create_topic  # noqa: E402
import kwire  # noqa: E402

S = Suite("fetch_sessions")
srv = None
TOPIC = "sess-t"
INVALID_FETCH_SESSION_EPOCH = 71
FETCH_SESSION_ID_NOT_FOUND = 70


def setup():
    global srv
    srv = Server()
    ck_create_topic(srv.bootstrap, TOPIC, partitions=2)


def conn():
    return kwire.Conn(srv.port, timeout=bound(10))


def produce(c, partition, n, tag):
    recs = [(b"k", b"%s-%d" % (tag, i), []) for i in range(n)]
    res = kwire.produce(c, TOPIC, partition, kwire.build_batch(recs))
    eq(res["error_code"], 0, "produce to partition %d" % partition)


def fetch_v7(c, session_id, epoch, parts, forgotten=(), max_wait_ms=0, min_bytes=1, topic=TOPIC):
    """parts: [(partition, offset)]; forgotten: [partition]. Returns
    (error_code, session_id, {partition: (error, hw, values)})."""
    w = kwire.W().i32(-1).i32(max_wait_ms).i32(min_bytes).i32(1 << 20).i8(0).i32(session_id).i32(epoch)
    topics = [topic] if parts else []
    w.array(topics, lambda w, t: w.string(t).array(
        parts, lambda w, p: w.i32(p[0]).i64(p[1]).i64(-1).i32(1 << 20)))
    ftopics = [topic] if forgotten else []
    w.array(ftopics, lambda w, t: w.string(t).array(list(forgotten), lambda w, p: w.i32(p)))
    r = c.request(kwire.FETCH, 7, w.bytes())
    r.i32()  # throttle
    err = r.i16()
    sid = r.i32()

    def part(r):
        p = r.i32()
        e = r.i16()
        hw = r.i64()
        r.i64()  # lso
        r.i64()  # log start
        r.array(lambda r: (r.i64(), r.i64()))
        data = r.bytes_() or b""
        values = [rec["value"] for rec in kwire.parse_batches(data)]
        return p, (e, hw, values)

    out = {}
    for name, ps in r.array(lambda r: (r.string(), r.array(part))) or []:
        eq(name, topic, "topic in the answer")
        out.update(dict(ps))
    return err, sid, out


@S.case
def session_partition_deleted_and_recreated():
    """A session keeps what it found for each partition (no map lookup
    per poll): once the topic is deleted the next incremental poll
    answers UNKNOWN_TOPIC_OR_PARTITION (3), and the topic created again
    under the same name is served by the same session, from the new log."""
    t = "sess-del"
    ck_create_topic(srv.bootstrap, t, partitions=1)
    c = conn()
    q = conn()
    try:
        err, sid, parts = fetch_v7(c, 0, 0, [(0, 0)], topic=t)
        eq((err, parts), (0, {0: (0, 0, [])}), "full fetch opens the session")
        check(sid > 0, "a session (id %d)" % sid)
        e = 1
        err, s, parts = fetch_v7(c, sid, e, [], topic=t)
        eq((err, s, parts), (0, sid, {}), "empty incremental poll")
        a = ck_admin(srv.bootstrap)  # kept: the futures die with it
        fs = a.delete_topics([t], operation_timeout=bound(10), request_timeout=bound(15))
        fs[t].result(timeout=bound(15))
        deadline = time.monotonic() + bound(10)
        while True:
            e += 1
            err, s, parts = fetch_v7(c, sid, e, [], topic=t)
            if parts or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        eq((err, s, parts), (0, sid, {0: (3, -1, [])}), "the deleted partition in the session")
        ck_create_topic(srv.bootstrap, t, partitions=1)
        res = kwire.produce(q, t, 0, kwire.build_batch([(b"k", b"again", [])]))
        eq(res["error_code"], 0, "produce to the topic created again")
        deadline = time.monotonic() + bound(10)
        while True:
            e += 1
            err, s, parts = fetch_v7(c, sid, e, [], topic=t)
            if parts.get(0, (0, 0, []))[2] or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        eq((err, s, parts), (0, sid, {0: (0, 1, [b"again"])}), "the re-created partition in the same session")
        err, s, _ = fetch_v7(c, sid, -1, [(0, 1)], topic=t)
        eq((err, s), (0, 0), "epoch -1 closes the session")
    finally:
        c.close()
        q.close()


@S.case
def session_lifecycle():
    c = conn()
    try:
        produce(c, 0, 3, b"a")
        produce(c, 1, 2, b"b")
        # Full fetch with epoch 0 opens a session and answers everything.
        err, sid, parts = fetch_v7(c, 0, 0, [(0, 0), (1, 0)])
        eq(err, 0, "full fetch error")
        check(sid > 0, "a new session id (got %d)" % sid)
        eq(sorted(parts), [0, 1], "full fetch answers both partitions")
        eq(parts[0], (0, 3, [b"a-0", b"a-1", b"a-2"]), "partition 0 in the full fetch")
        eq(parts[1], (0, 2, [b"b-0", b"b-1"]), "partition 1 in the full fetch")

        # Incremental, epoch 1: the client moves its offsets; nothing new,
        # nothing changed: an empty answer.
        err, sid1, parts = fetch_v7(c, sid, 1, [(0, 3), (1, 2)])
        eq((err, sid1), (0, sid), "incremental fetch keeps the session")
        eq(parts, {}, "no partition has news")

        # New data on partition 1 only: the answer lists only it, although
        # the request names no partition at all.
        produce(c, 1, 1, b"c")
        err, _, parts = fetch_v7(c, sid, 2, [])
        eq(err, 0, "incremental fetch error")
        eq(parts, {1: (0, 3, [b"c-0"])}, "only partition 1, with the new record")

        # A wrong epoch is refused and changes nothing.
        err, esid, parts = fetch_v7(c, sid, 7, [])
        eq(err, INVALID_FETCH_SESSION_EPOCH, "wrong epoch (INVALID_FETCH_SESSION_EPOCH)")
        eq(parts, {}, "no partitions with a top-level error")
        # An unknown session is refused.
        err, _, _ = fetch_v7(c, 987654, 1, [])
        eq(err, FETCH_SESSION_ID_NOT_FOUND, "unknown session (FETCH_SESSION_ID_NOT_FOUND)")

        # Epoch 3 (the refused request did not advance it): forget
        # partition 0 and move partition 1 past the new record.
        err, _, parts = fetch_v7(c, sid, 3, [(1, 3)], forgotten=[0])
        eq((err, parts), (0, {}), "forgetting partition 0")
        produce(c, 0, 1, b"d")
        err, _, parts = fetch_v7(c, sid, 4, [])
        eq((err, parts), (0, {}), "a forgotten partition's news is not sent")

        # Epoch -1 closes the session: a sessionless full fetch.
        err, sid_closed, parts = fetch_v7(c, sid, -1, [(0, 3)])
        eq((err, sid_closed), (0, 0), "closing answers without a session")
        eq(parts, {0: (0, 4, [b"d-0"])}, "the closing fetch is a full one")
        err, _, _ = fetch_v7(c, sid, 5, [])
        eq(err, FETCH_SESSION_ID_NOT_FOUND, "the closed session is gone")
    finally:
        c.close()


@S.case
def sessionless_full_fetch():
    c = conn()
    try:
        err, sid, parts = fetch_v7(c, 0, -1, [(0, 0)])
        eq((err, sid), (0, 0), "epoch -1 without a session: no session is created")
        eq(parts[0][0], 0, "partition 0 answered")
        check(len(parts[0][2]) >= 3, "records from offset 0")
    finally:
        c.close()


@S.case
def long_poll_wakes_on_produce():
    """A fetch parked at the end of the log (max wait 8 s) answers as soon
    as a record arrives, not when the wait runs out."""
    import threading
    import time
    c, p = conn(), conn()
    try:
        _, _, parts = fetch_v7(c, 0, -1, [(1, 0)])
        end = parts[1][1]
        t = threading.Timer(0.3, lambda: produce(p, 1, 1, b"late"))
        t0 = time.monotonic()
        t.start()
        err, _, parts = fetch_v7(c, 0, -1, [(1, end)], max_wait_ms=8000)
        took = time.monotonic() - t0
        t.join()
        eq((err, parts[1][2]), (0, [b"late-0"]), "the parked fetch returns the new record")
        check(0.25 <= took < bound(3), "answered after the produce, not at the deadline (%.2fs)" % took)
        # min_bytes larger than what arrives: the fetch waits its full time
        # and then answers with what there is.
        t0 = time.monotonic()
        err, _, parts = fetch_v7(c, 0, -1, [(1, end)], max_wait_ms=700, min_bytes=1 << 20)
        took = time.monotonic() - t0
        eq((err, parts[1][2]), (0, [b"late-0"]), "min_bytes not reached: the records there are")
        check(0.65 <= took < bound(3), "waited for max_wait_ms (%.2fs)" % took)
    finally:
        c.close()
        p.close()


@S.case
def cache_slots_bound():
    """max.incremental.fetch.session.cache.slots=1: the second consumer's
    full fetch is answered without a session (id 0), as Kafka answers
    when no session may be evicted; closing the first frees the slot."""
    global srv
    main_srv = srv
    srv = Server({"max.incremental.fetch.session.cache.slots": "1"})
    a = b = None
    try:
        ck_create_topic(srv.bootstrap, TOPIC, partitions=2)
        a, b = conn(), conn()
        produce(a, 0, 1, b"x")
        err, sid_a, parts = fetch_v7(a, 0, 0, [(0, 0)])
        eq(err, 0, "first full fetch error")
        check(sid_a > 0, "the first consumer gets a session (got %d)" % sid_a)
        err, sid_b, parts = fetch_v7(b, 0, 0, [(0, 0), (1, 0)])
        eq((err, sid_b), (0, 0), "cache full of a recent session: no session, data still answered")
        eq(parts[0], (0, 1, [b"x-0"]), "partition 0 in the sessionless answer")
        err, _, _ = fetch_v7(a, sid_a, -1, [])
        eq(err, 0, "closing the first session")
        err, sid_b, _ = fetch_v7(b, 0, 0, [(0, 0)])
        eq(err, 0, "full fetch after the slot is free")
        check(sid_b > 0, "the slot is free again (got %d)" % sid_b)
    finally:
        for c in (a, b):
            if c:
                c.close()
        srv.stop()
        srv = main_srv


if __name__ == "__main__":
    S.run(setup)
