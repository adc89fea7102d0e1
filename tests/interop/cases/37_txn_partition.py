"""The partition side of transactions, driven with raw requests (the
transaction coordinator is not needed: transactional batches are produced
with a transactional id and made final with WriteTxnMarkers, as the
coordinator would): the last stable offset holds read_committed readers
(Fetch and ListOffsets) at the first open transaction; a committed
transaction becomes visible; an aborted one is listed in Fetch's
AbortedTransactions, so real read_committed consumers (confluent-kafka,
kafka-python) skip it while read_uncommitted ones see it; markers from an
older coordinator epoch or producer epoch are refused; the open
transaction and the aborted-transaction index survive a clean restart
and kill -9. Those cases run with transaction.partition.verification.enable
false (no coordinator is asked); kip890_verification runs a second
server with it on: a transactional batch for a partition not in the
producer's transaction (per the coordinator) is INVALID_TXN_STATE, with no
coordinator reachable NOT_ENOUGH_REPLICAS (retriable), after
AddPartitionsToTxn it is appended, and after EndTxn the next
transaction's first batch needs its AddPartitionsToTxn again.
compaction_removes_markers_of_empty_transactions: on a compacted topic
the cleaner removes the aborted records, then (after delete.retention.ms)
the markers of transactions with nothing left and the abort's .txnindex
entry, keeps the markers of transactions with records, and read_committed
consumers read the same before and after."""
import os
import time
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import (Server, Suite, check, eq, log, bound, ck_create_topic, ck_consume, kp_consume,  # noqa: E402
                     run, SAMSACTL_BIN)
import kwire  # noqa: E402

S = Suite("txn_partition")
srv = None
TXN = 0x10
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
TRANSACTION_COORDINATOR_FENCED = 52
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
TOPICS = ("txn-lso", "txn-abort", "txn-fence", "txn-restart", "txn-hanging")
COMPACT_TOPIC = "txn-compact"


def kafka_version():
    import kafka
    return getattr(kafka, "__version__", "?")


def setup():
    global srv
    srv = Server(overrides={"transaction.partition.verification.enable": "false", "log.cleaner.backoff.ms": "100"})
    for t in TOPICS:
        ck_create_topic("127.0.0.1:%d" % srv.port, t, partitions=1)
    ck_create_topic("127.0.0.1:%d" % srv.port, COMPACT_TOPIC, partitions=1,
                    config={"cleanup.policy": "compact", "segment.bytes": "300", "min.cleanable.dirty.ratio": "0.01",
                            "delete.retention.ms": "500"})


def conn():
    return kwire.Conn(srv.port)


def plain(t, first, n):
    b = kwire.build_batch([(b"k", b"p%d" % (first + i), []) for i in range(n)])
    c = conn()
    try:
        r = kwire.produce(c, t, 0, b)
    finally:
        c.close()
    eq((r["error_code"], r["base_offset"]), (0, first), "plain records at %d" % first)


def txn_batch(pid, seq, n, tag, epoch=0):
    return kwire.build_batch([(b"k", b"%s%d" % (tag, seq + i), []) for i in range(n)], attributes=TXN,
                             producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def txn_produce(t, pid, seq, n, tag, first, tid="tx", epoch=0):
    c = conn()
    try:
        r = kwire.produce(c, t, 0, txn_batch(pid, seq, n, tag, epoch), transactional_id=tid)
    finally:
        c.close()
    eq((r["error_code"], r["base_offset"]), (0, first), "transactional records of %d at %d" % (pid, first))


def marker(t, pid, commit, coordinator_epoch, epoch=0, version=1):
    c = conn()
    try:
        res = kwire.write_txn_markers(c, [{"producer_id": pid, "producer_epoch": epoch, "commit": commit,
                                           "coordinator_epoch": coordinator_epoch, "topics": {t: [0]}}],
                                      version=version)
    finally:
        c.close()
    eq([p for p, _ in res], [pid], "WriteTxnMarkers answers the producer")
    return res[0][1][(t, 0)]


NOT_LEADER_OR_FOLLOWER = 6


def serving(call):
    """call() until it answers other than NOT_LEADER_OR_FOLLOWER: after a
    restart a partition answers that until its log has recovered (slow
    under sanitizers), and clients retry it."""
    deadline = time.monotonic() + bound(20)
    while True:
        c = conn()
        try:
            r = call(c)
        finally:
            c.close()
        if r["error_code"] != NOT_LEADER_OR_FOLLOWER or time.monotonic() > deadline:
            return r
        time.sleep(0.05)


def fetch(t, offset, isolation):
    return serving(lambda c: kwire.fetch_v4(c, t, 0, offset, isolation=isolation))


def latest(t, isolation):
    r = serving(lambda c: kwire.list_offsets_v2(c, t, 0, -1, isolation))
    eq(r["error_code"], 0, "ListOffsets error")
    return r["offset"]


def data_offsets(p, below=None):
    return [r["offset"] for r in kwire.parse_batches(p["records"])
            if not r["control"] and (below is None or r["offset"] < below)]


def expect_lso(t, lso, hw, what):
    p = fetch(t, 0, 1)
    eq(p["error_code"], 0, "%s: read_committed fetch error" % what)
    eq((p["high_watermark"], p["last_stable_offset"]), (hw, lso), "%s: (HW, LSO)" % what)
    recs = kwire.parse_batches(p["records"])
    check(all(r["offset"] < lso for r in recs), "%s: read_committed got offsets at/after the LSO %d: %s",
          what, lso, [r["offset"] for r in recs if r["offset"] >= lso])
    eq(latest(t, 1), lso, "%s: ListOffsets LATEST read_committed" % what)
    eq(latest(t, 0), hw, "%s: ListOffsets LATEST read_uncommitted" % what)
    return p


@S.case
def open_transaction_holds_the_lso():
    # The example: 0..239 plain, a transaction open from 240,
    # high watermark 250.
    t = "txn-lso"
    plain(t, 0, 240)
    txn_produce(t, 1001, 0, 10, b"t", 240)
    p = expect_lso(t, 240, 250, "open transaction")
    eq(data_offsets(p), list(range(240)), "read_committed records")
    eq(p["aborted"], [], "no aborted transactions")
    pu = fetch(t, 0, 0)
    eq(pu["last_stable_offset"], 240, "read_uncommitted fetch still reports the LSO")
    eq(data_offsets(pu), list(range(250)), "read_uncommitted records")
    eq(pu["aborted"], None, "read_uncommitted: null AbortedTransactions")
    # Fetching at the LSO itself returns nothing for read_committed.
    eq(data_offsets(fetch(t, 240, 1)), [], "read_committed at the LSO")

    eq(marker(t, 1001, True, 3), 0, "COMMIT marker")
    p = expect_lso(t, 251, 251, "after COMMIT")
    eq(data_offsets(p), list(range(250)), "committed records visible to read_committed")
    eq(p["aborted"], [], "a commit is not an aborted transaction")
    ctl = [r for r in kwire.parse_batches(p["records"]) if r["control"]]
    eq([(r["offset"], r["producer_id"]) for r in ctl], [(250, 1001)], "the marker is a control batch at 250")
    eq(sorted(f for f in os.listdir(os.path.join(srv.data, t + "-0")) if f.endswith(".txnindex")), [],
       "no .txnindex without an abort")


@S.case
def aborted_transaction_is_skipped_by_read_committed():
    t = "txn-abort"
    plain(t, 0, 10)
    txn_produce(t, 2001, 0, 10, b"a", 10)
    eq(marker(t, 2001, False, 1), 0, "ABORT marker")
    plain(t, 21, 10)
    p = expect_lso(t, 31, 31, "after ABORT")
    eq(p["aborted"], [(2001, 10)], "AbortedTransactions")
    eq(fetch(t, 21, 1)["aborted"], [], "a fetch after the abort's marker lists nothing")
    eq(fetch(t, 15, 1)["aborted"], [(2001, 10)], "a fetch inside the aborted range lists it")
    idx = os.path.join(srv.data, t + "-0", "%020d.txnindex" % 0)
    with open(idx, "rb") as f:
        data = f.read()
    eq(struct.unpack(">hqqqq", data), (0, 2001, 10, 20, 21), ".txnindex entry (version, pid, first, last, LSO)")

    committed = [b"p%d" % i for i in list(range(10)) + list(range(21, 31))]
    got = ck_consume("127.0.0.1:%d" % srv.port, t, 0, 0, 20, conf={"isolation.level": "read_committed"})
    eq([m["value"] for m in got], committed, "confluent-kafka read_committed")
    from kafka import KafkaConsumer
    if "isolation_level" in KafkaConsumer.DEFAULT_CONFIG:
        got = kp_consume("127.0.0.1:%d" % srv.port, t, 0, 0, 20, isolation_level="read_committed")
        eq([m["value"] for m in got], committed, "kafka-python read_committed")
    else:
        # kafka-python before 2.1 has no read_committed (it always reads
        # uncommitted): nothing to prove with it here.
        log("kafka-python %s has no isolation_level: its read_committed check is skipped", kafka_version())
    everything = [b"p%d" % i for i in range(10)] + [b"a%d" % i for i in range(10)] + \
        [b"p%d" % i for i in range(21, 31)]
    got = ck_consume("127.0.0.1:%d" % srv.port, t, 0, 0, 30)
    eq([m["value"] for m in got], everything, "confluent-kafka read_uncommitted sees the aborted records")


def keyed(t, key, value, first, pid=-1, seq=-1):
    b = kwire.build_batch([(key, value, [])], attributes=TXN if pid >= 0 else 0, producer_id=pid,
                          producer_epoch=0 if pid >= 0 else -1, base_sequence=seq)
    c = conn()
    try:
        r = kwire.produce(c, t, 0, b, transactional_id="tx" if pid >= 0 else None)
    finally:
        c.close()
    eq((r["error_code"], r["base_offset"]), (0, first), "%s=%s at %d" % (key, value, first))


@S.case
def compaction_removes_markers_of_empty_transactions():
    t = COMPACT_TOPIC
    keyed(t, b"a", b"a0", 0)
    keyed(t, b"a", b"ax", 1, pid=3001, seq=0)       # aborted
    eq(marker(t, 3001, False, 1), 0, "ABORT at 2")
    keyed(t, b"c", b"c1", 3, pid=3002, seq=0)       # committed, superseded at 9
    eq(marker(t, 3002, True, 1), 0, "COMMIT at 4")
    keyed(t, b"b", b"b1", 5, pid=3001, seq=1)
    eq(marker(t, 3001, True, 1), 0, "COMMIT at 6")
    keyed(t, b"m", b"m1", 7, pid=3002, seq=1)
    eq(marker(t, 3002, True, 1), 0, "COMMIT at 8")
    keyed(t, b"c", b"c2", 9)
    for i in range(6):  # closes the segments above
        keyed(t, b"f%d" % i, b"0", 10 + i)

    def state():
        # a fetch returns one segment's batches at most: read on to the end
        recs, off, hw = [], 0, None
        while hw is None or off < hw:
            p = fetch(t, off, 0)
            hw = p["high_watermark"]
            got = kwire.parse_batches(p["records"])
            if not got:
                break
            recs += got
            off = got[-1]["offset"] + 1
        return ([r["offset"] for r in recs if r["control"]], [r["value"] for r in recs if not r["control"]], hw)
    deadline = time.monotonic() + bound(30)
    while True:
        markers, values, hw = state()
        if markers == [6, 8] or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    eq(markers, [6, 8], "markers left: those of the transactions with records")
    eq(values, [b"a0", b"b1", b"m1", b"c2"] + [b"0"] * 6, "records left (read_uncommitted)")
    eq(hw, 16, "high watermark")
    eq(fetch(t, 0, 1)["aborted"], [], "no AbortedTransactions once the aborted data is gone")
    d = os.path.join(srv.data, t + "-0")
    eq([n for n in os.listdir(d) if n.endswith(".txnindex")], [], ".txnindex files")
    want = [b"a0", b"b1", b"m1", b"c2"] + [b"0"] * 6
    got = ck_consume("127.0.0.1:%d" % srv.port, t, 0, 0, len(want), conf={"isolation.level": "read_committed"})
    eq([m["value"] for m in got], want, "read_committed after cleaning")


@S.case
def stale_markers_and_invalid_batches_are_refused():
    t = "txn-fence"
    txn_produce(t, 3001, 0, 2, b"f", 0, epoch=2)
    eq(marker(t, 3001, True, 7, epoch=2), 0, "COMMIT at coordinator epoch 7")
    txn_produce(t, 3001, 2, 2, b"f", 3, epoch=2)
    eq(marker(t, 3001, False, 6, epoch=2), TRANSACTION_COORDINATOR_FENCED, "marker of coordinator epoch 6")
    eq(marker(t, 3001, False, 7, epoch=1, version=0), INVALID_PRODUCER_EPOCH, "marker of producer epoch 1 (v0)")
    c = conn()
    try:
        # transactional records without a transactional id
        r = kwire.produce(c, t, 0, txn_batch(3001, 4, 1, b"f", 2))
        eq(r["error_code"], TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "transactional batch without transactional id")
        # a plain batch of a producer whose transaction is open
        b = kwire.build_batch([(b"k", b"x", [])], producer_id=3001, producer_epoch=2, base_sequence=4)
        r = kwire.produce(c, t, 0, b)
        eq(r["error_code"], INVALID_TXN_STATE, "non-transactional batch inside an open transaction")
    finally:
        c.close()
    expect_lso(t, 3, 5, "the second transaction is still open")
    eq(marker(t, 3001, False, 8, epoch=2), 0, "ABORT at coordinator epoch 8")
    p = expect_lso(t, 6, 6, "after the abort")
    eq(p["aborted"], [(3001, 3)], "AbortedTransactions")
    # A marker without a transaction (a retry) is accepted and changes nothing.
    eq(marker(t, 3001, False, 8, epoch=2), 0, "a repeated ABORT")
    p = expect_lso(t, 7, 7, "after the repeated marker")
    eq(p["aborted"], [(3001, 3)], "AbortedTransactions after a repeated marker")


@S.case
def restart_keeps_open_transaction_and_aborted_index():
    t = "txn-restart"
    plain(t, 0, 5)
    txn_produce(t, 4001, 0, 5, b"a", 5)
    eq(marker(t, 4001, False, 1), 0, "ABORT marker")
    txn_produce(t, 4002, 0, 5, b"b", 11)
    expect_lso(t, 11, 16, "before restarts")
    for how in ("clean", "kill -9"):
        if how == "clean":
            srv.restart()
        else:
            srv.kill9()
            srv.start()
        p = expect_lso(t, 11, 16, "after a %s restart" % how)
        eq(p["aborted"], [(4001, 5)], "AbortedTransactions after a %s restart" % how)
        eq(data_offsets(p), list(range(10)), "read_committed records after a %s restart" % how)
    eq(marker(t, 4002, True, 1), 0, "COMMIT after the restarts")
    p = expect_lso(t, 17, 17, "after the commit")
    eq(p["aborted"], [(4001, 5)], "AbortedTransactions after the commit")
    # An abort and kill -9 at once (nothing flushed since): rebuilt from
    # the log by the recovery.
    txn_produce(t, 4003, 0, 2, b"c", 17)
    eq(marker(t, 4003, False, 1), 0, "ABORT right before kill -9")
    srv.kill9()
    srv.start()
    p = expect_lso(t, 20, 20, "after the abort and kill -9")
    eq(p["aborted"], [(4001, 5), (4003, 17)], "AbortedTransactions after kill -9")
    with open(os.path.join(srv.data, t + "-0", "%020d.txnindex" % 0), "rb") as f:
        data = f.read()
    eq([struct.unpack(">hqqqq", data[i:i + 34]) for i in range(0, len(data), 34)],
       [(0, 4001, 5, 10, 11), (0, 4003, 17, 19, 20)], ".txnindex after kill -9")


@S.case
def samsactl_aborts_a_hanging_transaction():
    # kafka-transactions.sh abort: the producer, its epoch and coordinator
    # epoch from DescribeProducers, an ABORT marker through WriteTxnMarkers.
    t = "txn-hanging"
    plain(t, 0, 3)
    txn_produce(t, 5001, 0, 4, b"h", 3, epoch=3)
    expect_lso(t, 3, 7, "hanging transaction")
    res = run([SAMSACTL_BIN, "--bootstrap-server", "127.0.0.1:%d" % srv.port, "transactions", "abort",
               "--topic", t, "--partition", "0", "--start-offset", "3"])
    check(b"Aborted the transaction of producer 5001" in res.stdout, "samsactl abort output: %r", res.stdout)
    p = expect_lso(t, 8, 8, "after samsactl transactions abort")
    eq(p["aborted"], [(5001, 3)], "AbortedTransactions")
    eq(data_offsets(p), [0, 1, 2, 3, 4, 5, 6], "read_committed returns the batches (the client drops the aborted)")
    # The other form names the producer; a fresh samsactl has no metadata
    # cached, so this also proves it finds the leader by itself.
    txn_produce(t, 5002, 0, 2, b"i", 8, epoch=1)
    expect_lso(t, 8, 10, "second hanging transaction")
    res = run([SAMSACTL_BIN, "--bootstrap-server", "127.0.0.1:%d" % srv.port, "transactions", "abort",
               "--topic", t, "--partition", "0", "--producer-id", "5002", "--producer-epoch", "1",
               "--coordinator-epoch", "0"])
    check(b"Aborted the transaction of producer 5002" in res.stdout, "samsactl abort output: %r", res.stdout)
    p = expect_lso(t, 11, 11, "after the second abort")
    eq(p["aborted"], [(5001, 3), (5002, 8)], "AbortedTransactions after both aborts")


# ---- KIP-890 part 1 ------------------------------------------------------------

ADD_PARTITIONS_TO_TXN = 24
END_TXN = 26
NOT_ENOUGH_REPLICAS = 19


def add_partitions_v2(c, tid, pid, epoch, topic, parts):
    body = kwire.W().string(tid).i64(pid).i16(epoch).array(
        [topic], lambda w, t: w.string(t).array(parts, lambda w2, p: w2.i32(p))).bytes()
    r = c.request(ADD_PARTITIONS_TO_TXN, 2, body)
    r.i32()
    out = {}
    for _ in range(r.i32()):
        name = r.string()
        for _ in range(r.i32()):
            p = r.i32()
            out[(name, p)] = r.i16()
    return out


def end_txn_v2(c, tid, pid, epoch, commit):
    r = c.request(END_TXN, 2, kwire.W().string(tid).i64(pid).i16(epoch).boolean(commit).bytes())
    r.i32()
    return r.i16()


@S.case
def kip890_verification():
    import kgroups as kg
    v = Server(overrides={"transaction.partition.verification.enable": "true"}, name="verify")
    try:
        ck_create_topic("127.0.0.1:%d" % v.port, "txn-verify", partitions=2)
        c = kwire.Conn(v.port)
        try:
            # no __transaction_state yet: the coordinator cannot be asked
            r = kwire.produce(c, "txn-verify", 0, txn_batch(6001, 0, 1, b"n"), transactional_id="vt")
            eq(r["error_code"], NOT_ENOUGH_REPLICAS, "transactional produce with no coordinator")
            deadline = time.monotonic() + bound(15)
            while kg.find_coordinator(c, "vt", version=1, key_type=1)["error_code"] != 0:
                check(time.monotonic() < deadline, "no transaction coordinator for vt")
                time.sleep(0.1)
            while True:
                ip = kwire.init_producer_id(c, 3, "vt")
                if ip["error_code"] == 0 or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            eq(ip["error_code"], 0, "InitProducerId vt")
            pid, ep = ip["producer_id"], ip["producer_epoch"]
            r = kwire.produce(c, "txn-verify", 0, txn_batch(pid, 0, 2, b"a", ep), transactional_id="vt")
            eq((r["error_code"], r["base_offset"]), (INVALID_TXN_STATE, -1), "batch for a partition not in the txn")
            eq(add_partitions_v2(c, "vt", pid, ep, "txn-verify", [0]), {("txn-verify", 0): 0}, "AddPartitionsToTxn")
            r = kwire.produce(c, "txn-verify", 0, txn_batch(pid, 0, 2, b"a", ep), transactional_id="vt")
            eq((r["error_code"], r["base_offset"]), (0, 0), "batch after AddPartitionsToTxn")
            # partition 1 was not added: refused, partition 0 goes on
            r = kwire.produce(c, "txn-verify", 1, txn_batch(pid, 0, 1, b"b", ep), transactional_id="vt")
            eq(r["error_code"], INVALID_TXN_STATE, "partition 1 not in the txn")
            r = kwire.produce(c, "txn-verify", 0, txn_batch(pid, 2, 1, b"a", ep), transactional_id="vt")
            eq((r["error_code"], r["base_offset"]), (0, 2), "the open transaction goes on")
            eq(end_txn_v2(c, "vt", pid, ep, True), 0, "EndTxn commit")
            # the marker ends the transaction on partition 0; the next
            # transaction's first batch is verified again
            deadline = time.monotonic() + bound(10)
            while True:
                p = kwire.fetch_v4(c, "txn-verify", 0, 0, isolation=1)
                if p["last_stable_offset"] == 4 or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            eq((p["high_watermark"], p["last_stable_offset"]), (4, 4), "committed: (HW, LSO)")
            # (NOT_ENOUGH_REPLICAS, retriable, while the coordinator still
            # completes the commit: CONCURRENT_TRANSACTIONS to the check)
            deadline = time.monotonic() + bound(10)
            while True:
                r = kwire.produce(c, "txn-verify", 0, txn_batch(pid, 3, 1, b"c", ep), transactional_id="vt")
                if r["error_code"] != NOT_ENOUGH_REPLICAS or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            eq(r["error_code"], INVALID_TXN_STATE, "next transaction without AddPartitionsToTxn")
            # the brokers' batch form (v4): VerifyOnly says the partition
            # is not in the transaction; a plain entry adds it (once its
            # record is replicated), after which it verifies and the
            # batch is appended
            eq(add_partitions_v4(c, "vt", pid, ep, "txn-verify", 0, True), (0, TRANSACTION_ABORTABLE),
               "v4 VerifyOnly of a partition not in the transaction")
            eq(add_partitions_v4(c, "vt", pid, ep, "txn-verify", 0, False), (0, 0), "v4 add")
            eq(add_partitions_v4(c, "vt", pid, ep, "txn-verify", 0, True), (0, 0), "v4 VerifyOnly after the add")
            eq(add_partitions_v4(c, "vt", pid, ep + 1, "txn-verify", 0, True), (0, PRODUCER_FENCED),
               "v4 VerifyOnly with another epoch")
            r = kwire.produce(c, "txn-verify", 0, txn_batch(pid, 3, 1, b"c", ep), transactional_id="vt")
            eq((r["error_code"], r["base_offset"]), (0, 4), "the batch after the v4 add")
        finally:
            c.close()
    finally:
        v.stop()


TRANSACTION_ABORTABLE = 120
PRODUCER_FENCED = 90


def add_partitions_v4(c, tid, pid, epoch, topic, partition, verify_only):
    """One transaction, one partition: (top-level error, partition error)."""
    body = kwire.W().carray([0], lambda w, _: w.cstring(tid).i64(pid).i16(epoch).boolean(verify_only).carray(
        [0], lambda w2, _2: w2.cstring(topic).carray([partition], lambda w3, p: w3.i32(p)).tags()).tags()).tags()
    r = c.request(ADD_PARTITIONS_TO_TXN, 4, body.bytes(), flexible=True)
    r.i32()
    top = r.i16()
    errs = []

    def part(r3):
        r3.i32()
        errs.append(r3.i16())
        r3.tags()

    def topic_result(r2):
        r2.cstring()
        r2.carray(part)
        r2.tags()

    def txn(r1):
        r1.cstring()
        r1.carray(topic_result)
        r1.tags()
    r.carray(txn)
    r.tags()
    return top, errs[0] if errs else None


if __name__ == "__main__":
    S.run(setup)
