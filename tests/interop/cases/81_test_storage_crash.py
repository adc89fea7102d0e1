"""Crash test of durable acks: kill -9 during a 1 M-record produce to a
flush.messages=1 topic (confluent-kafka with delivery reports), restart,
and check that every acknowledged record is readable at its acknowledged
offset and that each partition's offsets are contiguous. Then the rest of
the million is produced and everything checked again.

(kill -9 leaves the page cache to the kernel: what this proves is that the
broker's own recovery and acknowledgement bookkeeping lose nothing and
invent nothing; the power-loss side of flush.messages=1 is the flusher's
fdatasync before the ack, which the unit tests check.)"""
# limit: 600
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Server, Suite, check, eq, bound, log, ck_create_topic, ck_conf  # noqa: E402

S = Suite("storage-crash", case_limit=500)
srv = None
TOPIC = "crash"
PARTS = 3
TOTAL = int(os.environ.get("STORAGE_CRASH_RECORDS", "1000000"))
KILL_AT = TOTAL * 2 // 5


def setup():
    global srv
    srv = Server({"num.partitions": str(PARTS)})
    ck_create_topic(srv.bootstrap, TOPIC, PARTS, config={"flush.messages": "1", "segment.bytes": "8388608"})


def value(i):
    return b"rec-%08d-" % i + b"x" * 40


def produce(first, last, acked, kill_after=None):
    """Produces records first..last-1 round-robin over the partitions;
    acked[(partition, offset)] = i for every delivery report without
    error. With kill_after, a watcher thread kills the server (kill -9)
    once that many are acked, while the producer keeps requests in
    flight, and the producer stops. Returns (sent, errors, in flight at
    the kill)."""
    from confluent_kafka import Producer
    p = Producer(ck_conf(srv.bootstrap, **{"linger.ms": 5, "acks": "all", "message.timeout.ms": int(bound(8000)),
                                           "queue.buffering.max.messages": 200000, "retries": 2,
                                           "enable.idempotence": False}))
    errors = [0]
    killed = threading.Event()
    state = {"sent": 0, "in_flight": 0}

    def cb(err, msg):
        if err is not None:
            errors[0] += 1
        else:
            acked[(msg.partition(), msg.offset())] = int(msg.value()[4:12])

    def watcher():
        while not killed.is_set():
            if len(acked) >= kill_after:
                state["in_flight"] = state["sent"] - len(acked)
                srv.kill9()
                killed.set()
                return
            time.sleep(0.001)

    w = None
    if kill_after is not None:
        w = threading.Thread(target=watcher, daemon=True)
        w.start()
    for i in range(first, last):
        if killed.is_set():
            break
        while True:
            try:
                p.produce(TOPIC, value=value(i), partition=i % PARTS, on_delivery=cb)
                break
            except BufferError:
                p.poll(0.01)
        state["sent"] += 1
        if i % 64 == 0:
            p.poll(0)
    if w is not None:
        w.join(bound(60))
        check(killed.is_set(), "the producer finished before the kill point")
        log("kill -9 with %d acknowledged and %d sent but not acknowledged", kill_after, state["in_flight"])
    left = p.flush(bound(30))
    if w is None:
        eq(left, 0, "undelivered records")
    return state["sent"], errors[0]


def read_all(need=None):
    """Every record of every partition up to its high watermark:
    {partition: [(offset, i)]}. need: {partition: offset} the high
    watermark must reach first (after a kill -9 the recovered tail counts
    only once the flusher has synced it, moments after the restart)."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer(ck_conf(srv.bootstrap, **{"group.id": "samsa-interop-unused", "enable.auto.commit": False,
                                           "enable.partition.eof": True, "fetch.wait.max.ms": 50}))
    out = {}
    try:
        hws = {}
        for q in range(PARTS):
            deadline = time.monotonic() + bound(20)
            while True:
                try:
                    hws[q] = c.get_watermark_offsets(TopicPartition(TOPIC, q), timeout=bound(10), cached=False)[1]
                except Exception:  # noqa: BLE001 - the log may still be opening
                    hws.pop(q, None)
                if q in hws and hws[q] >= (need or {}).get(q, 0):
                    break
                check(time.monotonic() < deadline, "partition %d: never ready, or its high watermark %s stayed "
                      "below the acknowledged %d", q, hws.get(q), (need or {}).get(q, 0))
                time.sleep(0.1)
        c.assign([TopicPartition(TOPIC, q, 0) for q in range(PARTS)])
        for q in range(PARTS):
            out[q] = []
        # Done when every partition has delivered its last offset. A
        # redelivered offset is recorded, not counted, so that a consumer
        # seeing duplicates fails with that said plainly.
        nxt = {q: 0 for q in range(PARTS)}
        dups = []
        deadline = time.monotonic() + bound(120)
        while any(nxt[q] < hws[q] for q in range(PARTS)):
            check(time.monotonic() < deadline, "read up to %s of high watermarks %s", nxt, hws)
            for m in c.consume(num_messages=10000, timeout=0.5):
                if m.error():
                    continue  # partition EOF
                q, off = m.partition(), m.offset()
                if off < nxt[q]:
                    dups.append((q, off))
                    continue
                out[q].append((off, int(m.value()[4:12])))
                nxt[q] = off + 1
        eq(dups[:5], [], "offsets delivered twice (%d)" % len(dups))
        return out, hws
    finally:
        c.close()


def verify(acked, what):
    t0 = time.monotonic()
    need = {}
    for (q, o) in acked:
        need[q] = max(need.get(q, 0), o + 1)
    recs, hws = read_all(need)
    for q in range(PARTS):
        offs = [o for o, _ in recs[q]]
        eq(offs[:1], [0] if hws[q] else [], "%s: partition %d starts at 0" % (what, q))
        check(offs == list(range(len(offs))), "%s: partition %d offsets contiguous", what, q)
        eq(len(offs), hws[q], "%s: partition %d records up to the high watermark" % (what, q))
    at = {(q, o): i for q in range(PARTS) for o, i in recs[q]}
    missing = [(k, v) for k, v in acked.items() if at.get(k) != v]
    eq(missing[:5], [], "%s: acknowledged records not found at their offsets (%d of %d)" % (
        what, len(missing), len(acked)))
    log("%s: %d acknowledged records all at their offsets; %d stored; high watermarks %s (checked in %.1fs)",
        what, len(acked), sum(hws.values()), [hws[q] for q in range(PARTS)], time.monotonic() - t0)
    return hws


@S.case
def kill9_during_produce_then_restart():
    acked = {}
    t0 = time.monotonic()
    sent, errors = produce(0, TOTAL, acked, kill_after=KILL_AT)
    log("phase 1: %d sent, %d acknowledged, %d failed deliveries in %.1fs", sent, len(acked), errors,
        time.monotonic() - t0)
    check(len(acked) >= KILL_AT, "acknowledged before the kill: %d", len(acked))
    since = srv.log_size()
    srv.start()
    verify(acked, "after kill -9")
    for line in srv.log_text(since).splitlines():
        if "recovered after an unclean shutdown" in line and "/%s-" % TOPIC in line:
            log("%s", line.split(" INFO: ")[-1])
    # the rest of the million, then everything again
    t0 = time.monotonic()
    before = len(acked)
    sent2, errors2 = produce(sent, TOTAL, acked)
    eq(errors2, 0, "failed deliveries after the restart")
    eq(len(acked) - before, sent2, "phase 2: every record acknowledged once")
    log("phase 2: %d more acknowledged in %.1fs", sent2, time.monotonic() - t0)
    verify(acked, "after the rest")


if __name__ == "__main__":
    S.run(setup)
