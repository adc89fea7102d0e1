"""Exactly-once under faults, with confluent-kafka (librdkafka).

pipeline_app_killed: a consume-transform-produce application
(tests/interop/eos_app.py, its own process: read_committed group consumer
on `in`, transactional producer to `out`, offsets sent to the
transaction) is killed -9 at seeded random moments, a bounded number of
times, and restarted with the same transactional.id until it has
processed all input. A read_committed reader of `out` then sees every
input record's transform exactly once (exact multiset), the group's
committed offsets are the input's end, and read_uncommitted sees the
committed records plus whatever the killed runs' aborted transactions
left (reported).

server_killed_*: the single node killed -9 and restarted on the same
data dir around a transaction: an open transaction whose producer
commits after the restart is committed (the coordinator reloaded it);
an open transaction whose transactional.id a new producer initialises
after the restart is aborted (the old producer is fenced) and the last
stable offset advances past it; a transaction whose commit_transaction
returned before the kill is visible to read_committed after the restart,
whether or not its markers were written before the kill; a server killed
while commit_transaction is in flight leaves the call's outcome and the
readers' view in agreement (success and every record visible, or an
abortable error, an abort and none visible). LSO and high watermark come
from raw ListOffsets v2."""
# limit: 420

import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import (Server, Suite, Failure, check, eq, bound, log, ck_create_topic,  # noqa: E402
                     ck_produce, ck_conf, WORK)
import kwire  # noqa: E402

S = Suite("eos_pipeline", case_limit=120)
srv = None
HERE = os.path.dirname(os.path.abspath(__file__))
APP = os.path.join(HERE, "..", "eos_app.py")
PY = "/usr/bin/python3"
SEED = int(os.environ.get("EOS_SEED") or 4141)
N_INPUT = 2000
IN_PARTS = 3
OUT_PARTS = 3


def setup():
    global srv
    srv = Server(overrides={
        "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "5", "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "5", "group.initial.rebalance.delay.ms": "0",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000"})
    ck_create_topic(srv.bootstrap, "in", partitions=IN_PARTS)
    ck_create_topic(srv.bootstrap, "out", partitions=OUT_PARTS)
    for t in ("sk-commit", "sk-fence", "sk-done", "sk-inflight"):
        ck_create_topic(srv.bootstrap, t, partitions=1)


# ---------------------------------------------------------------- helpers

def offsets(topic, partition, limit=10.0):
    """(high watermark, last stable offset) from ListOffsets v2; retries
    while the partition is not yet led (just after a restart)."""
    deadline = time.monotonic() + bound(limit)
    while True:
        c = kwire.Conn(srv.port)
        try:
            hw = kwire.list_offsets_v2(c, topic, partition, -1, isolation=0)
            lso = kwire.list_offsets_v2(c, topic, partition, -1, isolation=1)
        finally:
            c.close()
        if (hw["error_code"], lso["error_code"]) == (0, 0):
            return hw["offset"], lso["offset"]
        if time.monotonic() > deadline:
            raise Failure("ListOffsets %s-%d: errors %d (read_uncommitted) %d (read_committed) for %.0fs"
                          % (topic, partition, hw["error_code"], lso["error_code"], bound(limit)))
        time.sleep(0.1)


def wait_stable(topic, partition, limit=20.0):
    """Waits until the LSO reaches the high watermark (no open
    transaction left); returns that offset."""
    deadline = time.monotonic() + bound(limit)
    while True:
        hw, lso = offsets(topic, partition)
        if hw == lso:
            return hw
        if time.monotonic() > deadline:
            raise Failure("%s-%d: LSO %d still below the high watermark %d after %.0fs"
                          % (topic, partition, lso, hw, bound(limit)))
        time.sleep(0.1)


def read_to_end(topic, partitions, isolation, limit=30.0):
    """Every record a consumer with `isolation` reads from the start of
    each partition up to its end (partition EOF, which read_committed
    reaches at the LSO); [(partition, key, value)]."""
    from confluent_kafka import Consumer, TopicPartition, KafkaError
    c = Consumer(ck_conf(srv.bootstrap, **{
        "group.id": "eos-reader", "enable.auto.commit": False, "enable.partition.eof": True,
        "isolation.level": isolation, "fetch.wait.max.ms": 50}))
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out = []
        eof = set()
        deadline = time.monotonic() + bound(limit)
        while len(eof) < partitions:
            if time.monotonic() > deadline:
                raise Failure("%s reader of %s: EOF on %s only after %.0fs (%d records)"
                              % (isolation, topic, sorted(eof), bound(limit), len(out)))
            for m in c.consume(num_messages=10000, timeout=0.3):
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        eof.add(m.partition())
                        continue
                    raise Failure("%s reader of %s: %s" % (isolation, topic, m.error()))
                eof.discard(m.partition())
                out.append((m.partition(), m.key(), m.value()))
        return out
    finally:
        c.close()


def producer(tid, **extra):
    from confluent_kafka import Producer
    conf = ck_conf(srv.bootstrap, **{"transactional.id": tid, "transaction.timeout.ms": 60000,
                                     "message.timeout.ms": 60000, "socket.timeout.ms": 3000,
                                     "log_level": 0})
    conf.update(extra)
    p = Producer(conf)
    p.init_transactions(bound(40))
    return p


# ---------------------------------------------------------------- the killed application

def start_app(tid, end, run_no, limit):
    logf = open(os.path.join(WORK, "eos_app.%d.log" % run_no), "wb")
    argv = [PY, "-u", APP, srv.bootstrap, tid, "eos-group", "in", "out",
            "--end", ",".join("%d:%d" % (p, o) for p, o in sorted(end.items())),
            "--every", "10", "--record-ms", "5", "--limit", str(int(bound(limit))), "--timeout", str(int(bound(30)))]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=logf)
    logf.close()
    lines = []

    def pump():
        for raw in proc.stdout:
            lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
    t = threading.Thread(target=pump, daemon=True)
    t.start()
    return proc, lines, t


def app_log(run_no):
    try:
        with open(os.path.join(WORK, "eos_app.%d.log" % run_no), "rb") as f:
            return f.read().decode("utf-8", "replace")[-2000:]
    except OSError:
        return ""


@S.case(limit=300)
def pipeline_app_killed():
    rng = random.Random(SEED)
    recs = [{"key": b"k%05d" % i, "value": b"v%05d" % i, "headers": [], "partition": i % IN_PARTS,
             "timestamp": None} for i in range(N_INPUT)]
    ck_produce(srv.bootstrap, "in", recs, conf={"enable.idempotence": True, "linger.ms": 20})
    end = {p: offsets("in", p)[0] for p in range(IN_PARTS)}
    eq(sum(end.values()), N_INPUT, "input records")
    tid = "eos-app"
    kills = 0
    max_kills = 7
    run_no = 0
    finished = False
    t_start = time.monotonic()
    while not finished:
        run_no += 1
        check(run_no <= max_kills + 3, "the application did not finish in %d runs", run_no - 1)
        proc, lines, pump = start_app(tid, end, run_no, limit=120)
        if kills < max_kills:
            # a moment after the application is up (init_transactions
            # done, consumer subscribed): anywhere in its read, produce,
            # send-offsets, commit cycle
            delay = rng.uniform(0.3, 2.0)
            deadline = time.monotonic() + bound(40)
            while "ready" not in lines and proc.poll() is None:
                check(time.monotonic() < deadline, "run %d: not ready after %.0fs; log:\n%s",
                      run_no, bound(40), app_log(run_no))
                time.sleep(0.02)
            time.sleep(delay)
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
                pump.join(timeout=5)
                kills += 1
                log("run %d: killed -9 after %.2fs past ready; %d transactions committed in this run",
                    run_no, delay, sum(1 for l in lines if l.startswith("committed")))
                continue
        try:
            rc = proc.wait(timeout=bound(150))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
            raise Failure("run %d: the application did not finish within %.0fs; output %s; log:\n%s"
                          % (run_no, bound(150), lines[-5:], app_log(run_no)))
        pump.join(timeout=5)
        check(rc == 0, "run %d: the application exited %s; output %s; log:\n%s",
              run_no, rc, lines[-5:], app_log(run_no))
        check(lines and lines[-1].startswith("done"), "run %d: output %s", run_no, lines[-5:])
        log("run %d: finished (%s, %d transactions)", run_no, lines[-1],
            sum(1 for l in lines if l.startswith("committed")))
        finished = True
    log("%d kills, %d runs, %.1fs", kills, run_no, time.monotonic() - t_start)
    check(kills >= 3, "only %d kills happened before the input ran out (the application is too fast "
          "for the kill schedule)", kills)

    for p in range(OUT_PARTS):
        wait_stable("out", p)
    want = Counter((r["key"], b"T(" + r["value"] + b")") for r in recs)
    committed = read_to_end("out", OUT_PARTS, "read_committed")
    got = Counter((k, v) for _p, k, v in committed)
    if got != want:
        dup = sorted(k for k, n in (got - want).items())
        missing = sorted(k for k, n in (want - got).items())
        raise Failure("read_committed output is not exactly once: %d records, %d duplicated/extra %s, "
                      "%d missing %s" % (len(committed), len(dup), dup[:10], len(missing), missing[:10]))
    uncommitted = read_to_end("out", OUT_PARTS, "read_uncommitted")
    ugot = Counter((k, v) for _p, k, v in uncommitted)
    check(not (want - ugot), "read_uncommitted lacks committed records")
    extra = sum((ugot - want).values())
    # seven kills of a process that keeps a transaction open nearly all
    # the time: some left records behind, which read_committed skipped
    check(extra > 0, "no aborted records in the output: no kill hit an open transaction")
    log("read_committed: %d records, each input exactly once; read_uncommitted: %d records "
        "(%d from aborted transactions of killed runs)", len(committed), len(uncommitted), extra)
    # the group's committed offsets are the input's end
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer(ck_conf(srv.bootstrap, **{"group.id": "eos-group", "enable.auto.commit": False,
                                           "isolation.level": "read_committed"}))
    try:
        com = c.committed([TopicPartition("in", p) for p in range(IN_PARTS)], timeout=bound(20))
    finally:
        c.close()
    eq({tp.partition: tp.offset for tp in com}, end, "eos-group's committed offsets of in")


# ---------------------------------------------------------------- the server killed

def produce_open(p, topic, tag, n):
    for i in range(n):
        p.produce(topic, key=b"%s-%d" % (tag, i), value=b"%s-v%d" % (tag, i), partition=0)
    left = p.flush(bound(20))
    eq(left, 0, "records undelivered after flush")


def log_from(topic, offset):
    """[(offset, value or "COMMIT"/"ABORT")] of partition 0 from offset."""
    c = kwire.Conn(srv.port)
    try:
        recs = kwire.parse_batches(kwire.fetch_v4(c, topic, 0, offset)["records"])
    finally:
        c.close()

    def kind(r):
        if not r["control"]:
            return r["value"]
        return "COMMIT" if r["key"][2:4] == b"\x00\x01" else "ABORT"
    return [(r["offset"], kind(r)) for r in recs]


def values(topic, isolation):
    return [v for _p, _k, v in read_to_end(topic, 1, isolation)]


def kill_restart():
    srv.kill9()
    srv.start()


@S.case
def server_killed_open_txn_then_committed():
    """Open transaction, records flushed, server kill -9 and restart: the
    same producer's commit_transaction succeeds and the records become
    visible to read_committed."""
    t = "sk-commit"
    p = producer("sk-commit-tid")
    p.begin_transaction()
    produce_open(p, t, b"a", 10)
    hw, lso = offsets(t, 0)
    eq((hw, lso), (10, 0), "(HW, LSO) with the transaction open")
    kill_restart()
    eq(offsets(t, 0), (10, 0), "(HW, LSO) after the restart, transaction still open")
    p.commit_transaction(bound(60))
    end = wait_stable(t, 0)
    eq(end, 11, "HW after the commit marker")
    eq(values(t, "read_committed"), [b"a-v%d" % i for i in range(10)], "read_committed records")
    # the producer goes on with its next transaction
    p.begin_transaction()
    produce_open(p, t, b"b", 3)
    p.commit_transaction(bound(30))
    eq(wait_stable(t, 0), 15, "HW after the second transaction")
    eq(values(t, "read_committed"), [b"a-v%d" % i for i in range(10)] + [b"b-v%d" % i for i in range(3)],
       "read_committed records")


@S.case
def server_killed_open_txn_new_producer_fences():
    """Open transaction, server kill -9 and restart, a new producer with
    the same transactional.id: its init_transactions aborts the open
    transaction (LSO advances to the HW past the ABORT marker); the old
    producer is fenced; read_committed never sees the aborted records."""
    from confluent_kafka import KafkaException
    t = "sk-fence"
    old = producer("sk-fence-tid")
    old.begin_transaction()
    produce_open(old, t, b"z", 7)
    eq(offsets(t, 0), (7, 0), "(HW, LSO) with the transaction open")
    kill_restart()
    eq(offsets(t, 0), (7, 0), "(HW, LSO) after the restart")
    new = producer("sk-fence-tid")
    eq(wait_stable(t, 0), 8, "HW (= LSO) after the new producer's init: the ABORT marker")
    try:
        old.commit_transaction(bound(30))
        raise Failure("the fenced producer's commit_transaction succeeded")
    except KafkaException as e:
        err = e.args[0]
        log("fenced producer's commit: %s (fatal=%s)", err, err.fatal())
        check(err.fatal(), "the old producer's commit failed but not fatally: %s", err)
    new.begin_transaction()
    produce_open(new, t, b"n", 4)
    new.commit_transaction(bound(30))
    eq(wait_stable(t, 0), 13, "HW after the new producer's transaction")
    eq(values(t, "read_committed"), [b"n-v%d" % i for i in range(4)], "read_committed records")
    eq(values(t, "read_uncommitted"), [b"z-v%d" % i for i in range(7)] + [b"n-v%d" % i for i in range(4)],
       "read_uncommitted records")


@S.case
def server_killed_after_commit_returned():
    """commit_transaction returned, server kill -9 at once (markers
    possibly not yet written): after the restart the coordinator
    completes the commit; read_committed sees the records, the LSO
    reaches the HW, and a new producer with the same id starts clean."""
    t = "sk-done"
    p = producer("sk-done-tid")
    p.begin_transaction()
    produce_open(p, t, b"c", 12)
    p.commit_transaction(bound(30))
    kill_restart()
    # The records and the COMMIT marker; when the kill came after the
    # marker but before the coordinator wrote CompleteCommit, the
    # restarted coordinator (PrepareCommit loaded) writes the markers
    # again, as Kafka's does: a second COMMIT at 13 (a marker for a
    # producer with no open transaction changes nothing).
    hw = wait_stable(t, 0)
    check(hw in (13, 14), "HW (= LSO) after the restart: %d, want 13 (or 14 with a repeated COMMIT marker)", hw)
    if hw == 14:
        c = kwire.Conn(srv.port)
        try:
            recs = kwire.parse_batches(kwire.fetch_v4(c, t, 0, 12)["records"])
        finally:
            c.close()
        eq([(r["offset"], r["control"]) for r in recs], [(12, True), (13, True)], "offsets 12, 13: COMMIT markers")
    eq(values(t, "read_committed"), [b"c-v%d" % i for i in range(12)], "read_committed records")
    p2 = producer("sk-done-tid")
    p2.begin_transaction()
    produce_open(p2, t, b"d", 2)
    p2.abort_transaction(bound(30))
    # The repeated COMMIT marker may also land after wait_stable saw 13:
    # the restarted coordinator answers the new producer's
    # InitProducerId only once the commit is complete, so by now it is
    # written either way. Check the log's exact shape from offset 12.
    end = wait_stable(t, 0)
    got = log_from(t, 12)
    commits = end - 15
    check(commits in (1, 2), "HW after an aborted transaction: %d, want 16 (or 17 with a repeated COMMIT marker)", end)
    want = [(12 + i, "COMMIT") for i in range(commits)]
    want += [(12 + commits, b"d-v0"), (13 + commits, b"d-v1"), (14 + commits, "ABORT")]
    eq(got, want, "log from offset 12: COMMIT marker(s), the aborted records, the ABORT marker")
    eq(values(t, "read_committed"), [b"c-v%d" % i for i in range(12)], "read_committed records")


@S.case
def server_killed_during_commit():
    """commit_transaction in flight while the server is killed -9 and
    restarted (EndTxn before, while or after it reached the
    coordinator, depending on timing): the call's outcome and what
    readers see agree. Success (librdkafka retries EndTxn after the
    restart; a retried commit of a transaction in PrepareCommit or
    CompleteCommit is answered with success) means every record is
    visible to read_committed; an error that needs an abort means none
    is; the LSO reaches the HW either way."""
    from confluent_kafka import KafkaException
    t = "sk-inflight"
    p = producer("sk-inflight-tid")
    outcomes = []
    base = offsets(t, 0)[0]
    want = []
    for rnd in range(3):
        p.begin_transaction()
        tag = b"r%d" % rnd
        produce_open(p, t, tag, 5)
        res = {}

        def commit():
            try:
                p.commit_transaction(bound(60))
                res["ok"] = True
            except KafkaException as e:
                res["err"] = e.args[0]
            res["t"] = time.monotonic()
        th = threading.Thread(target=commit)
        th.start()
        srv.kill9()
        t_kill = time.monotonic()
        srv.start()
        th.join(bound(70))
        check(not th.is_alive(), "round %d: commit_transaction did not return after the restart", rnd)
        when = "returned before the kill" if res["t"] < t_kill else "returned after the restart"
        if res.get("ok"):
            outcomes.append("committed, " + when)
            want += [tag + b"-v%d" % i for i in range(5)]
        else:
            err = res["err"]
            check(err.txn_requires_abort() and not err.fatal(),
                  "round %d: commit failed with %s: neither success nor an abortable error", rnd, err)
            p.abort_transaction(bound(60))
            outcomes.append("aborted (%s), %s" % (err.name(), when))
        wait_stable(t, 0)
        eq(values(t, "read_committed"), want, "round %d: read_committed records" % rnd)
    log("outcomes: %s", ", ".join(outcomes))
    # The log's exact shape: per round its 5 records and its marker. A
    # kill between the marker and CompleteCommit/Abort makes the
    # restarted coordinator write the marker again (as Kafka's does),
    # possibly after wait_stable returned; the next round's records
    # wait for it (AddPartitionsToTxn is refused while it is pending).
    wait_stable(t, 0)
    got = log_from(t, base)
    pos, off = 0, base
    for rnd, outcome in enumerate(outcomes):
        marker = "COMMIT" if outcome.startswith("committed") else "ABORT"
        tag = b"r%d" % rnd
        want_recs = [(off + i, tag + b"-v%d" % i) for i in range(5)] + [(off + 5, marker)]
        eq(got[pos:pos + 6], want_recs, "round %d: 5 records and its %s marker" % (rnd, marker))
        pos, off = pos + 6, off + 6
        if pos < len(got) and got[pos] == (off, marker):
            pos, off = pos + 1, off + 1  # the repeated marker
    eq(got[pos:], [], "nothing after the last round")


if __name__ == "__main__":
    S.run(setup)
