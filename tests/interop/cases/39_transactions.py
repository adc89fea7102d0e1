"""Transactions end to end with real clients, against Kafka's behaviour
(transactions V1, as librdkafka 2.0.2, kafkajs 2.2.4 and
@platformatic/kafka 1.35.0 use them):

- confluent-kafka: a committed transaction over two partitions, an
  aborted one and another committed one: a read_committed consumer reads
  exactly the committed records at their offsets (each marker takes an
  offset), a read_uncommitted one every data record; the LSO is the high
  watermark once all ended.
- Fencing: a second producer with the same transactional.id initialises;
  the first one's open transaction is aborted by the coordinator and its
  commit fails with librdkafka's fatal _FENCED.
- transaction.timeout.ms 2000 with a transaction left idle: the
  coordinator aborts it (the LSO moves past it, read_committed never sees
  its records) and the producer's commit then fails, fenced.
- Consume-transform-produce with send_offsets_to_transaction in a
  consumer group: the group's offsets are visible after the commit and
  unchanged by an aborted transaction (needs TxnOffsetCommit; skipped
  when ApiVersions does not offer it).
- kafkajs: transaction() send/commit/abort and sendOffsets; a kafkajs
  read_committed consumer reads only the committed records.
- @platformatic/kafka: beginTransaction() send/commit/abort.
- samsactl transactions list / describe while a transaction is open
  (Ongoing, its partitions) and after its commit (CompleteCommit).
- Raw wire: FindCoordinator key type 1 names this node; InitProducerId
  over transaction.max.timeout.ms is INVALID_TRANSACTION_TIMEOUT; EndTxn
  in Empty is INVALID_TXN_STATE; AddPartitionsToTxn with an old epoch is
  PRODUCER_FENCED from v2 and INVALID_PRODUCER_EPOCH before; an unknown
  producer id is INVALID_PRODUCER_ID_MAPPING; DescribeTransactions of an
  unknown id is TRANSACTIONAL_ID_NOT_FOUND, of an empty id
  INVALID_REQUEST; ListTransactions filters by state (unknown names
  answered back), producer id and duration (v1)."""
# limit: 300
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness as h  # noqa: E402
from harness import Skip, check, eq, log, bound  # noqa: E402
import kgroups as kg  # noqa: E402
import kwire  # noqa: E402

S = h.Suite("39_transactions", case_limit=90)
srv = None
TXN_JS = os.path.join(h.HERE, "js", "txn_js.mjs")
MAX_TIMEOUT_MS = 600000

INVALID_REQUEST = 42
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
INVALID_PRODUCER_ID_MAPPING = 49
INVALID_TRANSACTION_TIMEOUT = 50
PRODUCER_FENCED = 90
TRANSACTIONAL_ID_NOT_FOUND = 105
TXN_OFFSET_COMMIT = 28

TOPICS = {"eo-ck": 2, "eo-fence": 1, "eo-timeout": 1, "eo-in": 1, "eo-out": 1, "eo-js": 2, "eo-js-in": 1,
          "eo-plat": 2, "eo-ctl": 2, "eo-wire": 1}


def setup():
    global srv
    srv = h.Server({"transaction.max.timeout.ms": str(MAX_TIMEOUT_MS),
                    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
                    "transaction.state.log.num.partitions": "5",
                    "offsets.topic.num.partitions": "5",
                    "group.initial.rebalance.delay.ms": "0"})
    for t, n in TOPICS.items():
        h.ck_create_topic(srv.bootstrap, t, partitions=n)
    # the first FindCoordinator of each kind creates its internal topic
    kg.coordinator_port(srv.port, "warm-up", limit=bound(10))
    find_txn_coordinator("warm-up")


# ---------------------------------------------------------------- helpers

def conn():
    return kwire.Conn(srv.port)


def find_txn_coordinator(tid, version=1):
    """FindCoordinator key type 1 until it answers (the first ask creates
    __transaction_state); returns the answer."""
    deadline = time.monotonic() + bound(15)
    while True:
        c = conn()
        try:
            r = kg.find_coordinator(c, tid, version=version, key_type=1)
        finally:
            c.close()
        err = r[0]["error_code"] if version >= 4 else r["error_code"]
        if err == 0 or time.monotonic() > deadline:
            return r
        time.sleep(0.1)


def describe(tid):
    c = conn()
    try:
        res = kwire.describe_transactions(c, [tid])
    finally:
        c.close()
    eq(len(res), 1, "DescribeTransactions answers")
    return res[0]


def wait_state(tid, state, limit=20):
    """DescribeTransactions until tid is in state (the markers of an end
    are written after EndTxn is answered)."""
    deadline = time.monotonic() + bound(limit)
    while True:
        d = describe(tid)
        if (d["error_code"], d["state"]) == (0, state):
            return d
        if time.monotonic() > deadline:
            raise h.Failure("%s did not reach %s within %.0fs: %s" % (tid, state, bound(limit), d))
        time.sleep(0.1)


def latest(topic, partition, isolation):
    c = conn()
    try:
        r = kwire.list_offsets_v2(c, topic, partition, -1, isolation)
    finally:
        c.close()
    eq(r["error_code"], 0, "ListOffsets %s-%d error" % (topic, partition))
    return r["offset"]


def producer(tid, **extra):
    from confluent_kafka import Producer
    conf = h.ck_conf(srv.bootstrap, **{"transactional.id": tid, "transaction.timeout.ms": int(bound(60000)),
                                       "message.timeout.ms": int(bound(30000)), "linger.ms": 5})
    conf.update(extra)
    # librdkafka requires message.timeout.ms <= transaction.timeout.ms
    conf["message.timeout.ms"] = min(conf["message.timeout.ms"], conf["transaction.timeout.ms"])
    p = Producer(conf)
    p.init_transactions(bound(30))
    return p


def send(p, topic, records):
    """records: [(partition, value)], delivered (flushed) in the open
    transaction; returns their offsets."""
    out = [None] * len(records)
    errs = []

    def cb(i):
        def f(err, msg):
            if err is not None:
                errs.append(err)
            else:
                out[i] = msg.offset()
        return f

    for i, (part, value) in enumerate(records):
        p.produce(topic, value=value, partition=part, on_delivery=cb(i))
    eq(p.flush(bound(30)), 0, "records still queued")
    eq(errs, [], "delivery errors")
    return out


def read_all(topic, partition, isolation, start=0, limit=20):
    """[(offset, value)] a confluent-kafka consumer with `isolation` reads
    from start to the partition's end (the LSO for read_committed: the
    consumer's EOF)."""
    from confluent_kafka import Consumer, TopicPartition, KafkaError
    c = Consumer(h.ck_conf(srv.bootstrap, **{"group.id": "eo-reader-unused", "enable.auto.commit": False,
                                             "enable.partition.eof": True, "isolation.level": isolation,
                                             "fetch.wait.max.ms": 100}))
    try:
        c.assign([TopicPartition(topic, partition, start)])
        got = []
        deadline = time.monotonic() + bound(limit)
        while True:
            check(time.monotonic() < deadline, "%s reader of %s-%d: no end within %.0fs (got %s)",
                  isolation, topic, partition, bound(limit), got)
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    return got
                raise h.Failure("%s reader error: %s" % (isolation, m.error()))
            got.append((m.offset(), m.value()))
    finally:
        c.close()


def expect_fenced(fn, what):
    from confluent_kafka import KafkaException, KafkaError
    try:
        fn()
    except KafkaException as e:
        err = e.args[0]
        log("%s failed as expected: %s (fatal %s)", what, err, err.fatal())
        eq((err.code(), err.fatal()), (KafkaError._FENCED, True), "%s: error code and fatal flag" % what)
        return
    raise h.Failure("%s succeeded; a fenced producer must fail" % what)


def api_served(key):
    c = conn()
    try:
        return key in kwire.api_versions(c, 0)["api_keys"]
    finally:
        c.close()


def samsactl(*args):
    r = h.run([h.SAMSACTL_BIN, "--bootstrap-server", srv.bootstrap, "transactions"] + list(args))
    return [l.split() for l in r.stdout.decode().splitlines()]


# ---------------------------------------------------------------- confluent-kafka

@S.case
def ck_commit_abort_commit():
    t = "eo-ck"
    p = producer("ck-1")
    try:
        p.begin_transaction()
        eq(send(p, t, [(0, b"c0-0"), (1, b"c1-0"), (0, b"c0-1"), (1, b"c1-1"), (0, b"c0-2"), (1, b"c1-2")]),
           [0, 0, 1, 1, 2, 2], "offsets of the first transaction")
        # open: read_committed readers stop at its first offset
        eq([latest(t, i, 1) for i in (0, 1)], [0, 0], "LSO while the first transaction is open")
        p.commit_transaction(bound(30))
        p.begin_transaction()
        # after the COMMIT markers at 3
        eq(send(p, t, [(0, b"a0-0"), (0, b"a0-1"), (1, b"a1-0")]), [4, 5, 4], "offsets of the aborted transaction")
        p.abort_transaction(bound(30))
        p.begin_transaction()
        # after the ABORT markers at 6 and 5
        eq(send(p, t, [(0, b"d0-0"), (1, b"d1-0")]), [7, 6], "offsets of the third transaction")
        p.commit_transaction(bound(30))
    finally:
        p.flush(1)
    wait_state("ck-1", "CompleteCommit")
    eq([(latest(t, i, 0), latest(t, i, 1)) for i in (0, 1)], [(9, 9), (8, 8)], "(HW, LSO) after the markers")
    eq(read_all(t, 0, "read_committed"), [(0, b"c0-0"), (1, b"c0-1"), (2, b"c0-2"), (7, b"d0-0")],
       "partition 0, read_committed")
    eq(read_all(t, 1, "read_committed"), [(0, b"c1-0"), (1, b"c1-1"), (2, b"c1-2"), (6, b"d1-0")],
       "partition 1, read_committed")
    eq(read_all(t, 0, "read_uncommitted"),
       [(0, b"c0-0"), (1, b"c0-1"), (2, b"c0-2"), (4, b"a0-0"), (5, b"a0-1"), (7, b"d0-0")],
       "partition 0, read_uncommitted")
    eq(read_all(t, 1, "read_uncommitted"), [(0, b"c1-0"), (1, b"c1-1"), (2, b"c1-2"), (4, b"a1-0"), (6, b"d1-0")],
       "partition 1, read_uncommitted")
    # the control batches sit where the offsets say
    c = conn()
    try:
        f = kwire.fetch_v4(c, t, 0, 0, isolation=1)
    finally:
        c.close()
    eq(sorted(r["offset"] for r in kwire.parse_batches(f["records"]) if r["control"]), [3, 6, 8],
       "partition 0: markers")
    eq(f["aborted"], [(describe("ck-1")["producer_id"], 4)], "partition 0: AbortedTransactions")


@S.case
def ck_second_producer_fences_the_first():
    t = "eo-fence"
    p1 = producer("ck-fence")
    p1.begin_transaction()
    eq(send(p1, t, [(0, b"zombie")]), [0], "the first producer's record")
    d = describe("ck-fence")
    eq((d["state"], d["topics"]), ("Ongoing", {t: [0]}), "the first producer's transaction")
    p2 = producer("ck-fence")
    # InitProducerId of p2 aborted p1's transaction (ABORT marker at 1)
    # and bumped the epoch twice (the fence, then p2's own)
    d2 = wait_state("ck-fence", "Empty")
    eq((d2["producer_id"], d2["producer_epoch"]), (d["producer_id"], d["producer_epoch"] + 2),
       "producer id and epoch after the second init")
    expect_fenced(lambda: p1.commit_transaction(bound(30)), "the first producer's commit")
    p2.begin_transaction()
    eq(send(p2, t, [(0, b"live")]), [2], "the second producer's record")
    p2.commit_transaction(bound(30))
    p2.flush(1)
    wait_state("ck-fence", "CompleteCommit")
    eq(read_all(t, 0, "read_committed"), [(2, b"live")], "read_committed")
    eq(read_all(t, 0, "read_uncommitted"), [(0, b"zombie"), (2, b"live")], "read_uncommitted")


@S.case
def ck_idle_transaction_times_out():
    t = "eo-timeout"
    p = producer("ck-timeout", **{"transaction.timeout.ms": 2000, "message.timeout.ms": 2000,
                                  "socket.timeout.ms": 2000})
    p.begin_transaction()
    eq(send(p, t, [(0, b"late-0"), (0, b"late-1")]), [0, 1], "records of the idle transaction")
    pid = describe("ck-timeout")["producer_id"]
    eq(latest(t, 0, 1), 0, "LSO while the transaction is open")
    # the coordinator aborts it past its timeout (checked every 500 ms):
    # the ABORT marker at 2 moves the LSO to 3
    deadline = time.monotonic() + bound(15)
    while latest(t, 0, 1) != 3:
        check(time.monotonic() < deadline, "the LSO of %s-0 stayed at %d: the idle transaction was not aborted",
              t, latest(t, 0, 1))
        time.sleep(0.2)
    d = wait_state("ck-timeout", "CompleteAbort")
    eq(d["producer_id"], pid, "producer id after the timeout")
    eq(read_all(t, 0, "read_committed"), [], "read_committed after the timeout abort")
    eq(read_all(t, 0, "read_uncommitted"), [(0, b"late-0"), (1, b"late-1")], "read_uncommitted")
    expect_fenced(lambda: p.commit_transaction(bound(30)), "the commit after the timeout")


@S.case
def ck_consume_transform_produce():
    if not api_served(TXN_OFFSET_COMMIT):
        raise Skip("TxnOffsetCommit (API 28) is not offered in ApiVersions: send_offsets_to_transaction cannot run")
    from confluent_kafka import Consumer, TopicPartition
    src, dst, group = "eo-in", "eo-out", "eo-ctp"
    h.ck_produce(srv.bootstrap, src, [h.rec(None, b"in-%d" % i) for i in range(6)])
    cons = Consumer(h.ck_conf(srv.bootstrap, **{"group.id": group, "enable.auto.commit": False,
                                                "auto.offset.reset": "earliest",
                                                "isolation.level": "read_committed", "fetch.wait.max.ms": 100}))
    p = producer("ck-ctp")
    try:
        cons.subscribe([src])

        def take(n):
            got = []
            deadline = time.monotonic() + bound(30)
            while len(got) < n:
                check(time.monotonic() < deadline, "consumer: %d of %d records", len(got), n)
                m = cons.poll(0.5)
                if m is not None and not m.error():
                    got.append(m)
            return got

        def committed():
            return cons.committed([TopicPartition(src, 0)], timeout=bound(10))[0].offset

        for n, end in ((3, "commit"), (3, "abort")):
            msgs = take(n)
            p.begin_transaction()
            send(p, dst, [(0, m.value().upper()) for m in msgs])
            p.send_offsets_to_transaction([TopicPartition(src, 0, msgs[-1].offset() + 1)],
                                          cons.consumer_group_metadata(), bound(30))
            if end == "commit":
                p.commit_transaction(bound(30))
                wait_state("ck-ctp", "CompleteCommit")
                eq(committed(), 3, "the group's offset after the committed transaction")
            else:
                p.abort_transaction(bound(30))
                wait_state("ck-ctp", "CompleteAbort")
                eq(committed(), 3, "the group's offset after the aborted transaction")
        c = conn()
        try:
            top, offs = kg.offset_fetch(c, group, {src: [0]}, version=1)
        finally:
            c.close()
        eq(offs[(src, 0)][0], 3, "raw OffsetFetch of the group")
    finally:
        cons.close()
    eq(read_all(dst, 0, "read_committed"), [(0, b"IN-0"), (1, b"IN-1"), (2, b"IN-2")], "transformed, read_committed")
    eq(read_all(dst, 0, "read_uncommitted"),
       [(0, b"IN-0"), (1, b"IN-1"), (2, b"IN-2"), (4, b"IN-3"), (5, b"IN-4"), (6, b"IN-5")],
       "transformed, read_uncommitted")


# ---------------------------------------------------------------- Node clients

def js(op, args, limit=60.0):
    """Runs js/txn_js.mjs OP; returns its JSON result (Failure unless ok)."""
    import json
    p = h.run([h.NODE, TXN_JS, op, srv.bootstrap, json.dumps(args)], limit=limit, check_rc=False)
    lines = p.stdout.decode("utf-8", "replace").strip().splitlines()
    try:
        res = json.loads(lines[-1])
    except (ValueError, IndexError):
        raise h.Failure("node %s exited %d without a JSON result; stdout:\n%s\nstderr:\n%s" % (
            op, p.returncode, "\n".join(lines[-30:]), p.stderr.decode("utf-8", "replace")[-3000:]))
    if p.returncode != 0 or not res.get("ok"):
        raise h.Failure("node %s failed (exit %d): %s %s" % (op, p.returncode, res.get("error"), res.get("types")))
    return res


@S.case
def kafkajs_transactions():
    t = "eo-js"
    res = js("kafkajs-txn", {"tid": "js-1", "txns": [
        {"topic": t, "messages": [{"partition": 0, "value": "j0-0"}, {"partition": 1, "value": "j1-0"},
                                  {"partition": 0, "value": "j0-1"}], "end": "commit"},
        {"topic": t, "messages": [{"partition": 0, "value": "x0-0"}, {"partition": 1, "value": "x1-0"}],
         "end": "abort"},
        {"topic": t, "messages": [{"partition": 1, "value": "j1-1"}], "end": "commit"}]})
    eq(res["results"], [[{"partition": 0, "offset": 0}, {"partition": 1, "offset": 0}, {"partition": 0, "offset": 1}],
                        [{"partition": 0, "offset": 3}, {"partition": 1, "offset": 2}],
                        [{"partition": 1, "offset": 4}]], "kafkajs offsets")
    wait_state("js-1", "CompleteCommit")
    want = [{"partition": 0, "offset": 0, "value": "j0-0"}, {"partition": 0, "offset": 1, "value": "j0-1"},
            {"partition": 1, "offset": 0, "value": "j1-0"}, {"partition": 1, "offset": 4, "value": "j1-1"}]
    got = js("kafkajs-read", {"topic": t, "group": "eo-js-rc", "count": 4})["records"]
    eq(got, want, "kafkajs read_committed consumer")
    got = js("kafkajs-read", {"topic": t, "group": "eo-js-ru", "count": 6, "readUncommitted": True})["records"]
    eq(got, sorted(want + [{"partition": 0, "offset": 3, "value": "x0-0"}, {"partition": 1, "offset": 2, "value": "x1-0"}],
                   key=lambda r: (r["partition"], r["offset"])), "kafkajs read_uncommitted consumer")
    eq(read_all(t, 0, "read_committed"), [(0, b"j0-0"), (1, b"j0-1")], "confluent-kafka read_committed of partition 0")
    eq(read_all(t, 1, "read_committed"), [(0, b"j1-0"), (4, b"j1-1")], "confluent-kafka read_committed of partition 1")


@S.case
def kafkajs_send_offsets():
    if not api_served(TXN_OFFSET_COMMIT):
        raise Skip("TxnOffsetCommit (API 28) is not offered in ApiVersions: kafkajs sendOffsets cannot run")
    group, src = "eo-js-group", "eo-js-in"
    js("kafkajs-txn", {"tid": "js-off", "txns": [
        {"topic": "eo-js", "messages": [{"partition": 0, "value": "o-1"}],
         "offsets": {"group": group, "topic": src, "partition": 0, "offset": 7}, "end": "commit"},
        {"topic": "eo-js", "messages": [{"partition": 0, "value": "o-2"}],
         "offsets": {"group": group, "topic": src, "partition": 0, "offset": 9}, "end": "abort"}]})
    wait_state("js-off", "CompleteAbort")
    c = conn()
    try:
        top, offs = kg.offset_fetch(c, group, {src: [0]}, version=1)
    finally:
        c.close()
    eq(offs[(src, 0)][:1], (7,), "the group's offset: the committed transaction's, not the aborted one's")


@S.case
def platformatic_transactions():
    t = "eo-plat"
    res = js("plat-txn", {"tid": "plat-1", "txns": [
        {"topic": t, "messages": [{"partition": 0, "value": "p0-0"}, {"partition": 1, "value": "p1-0"}],
         "end": "commit"},
        {"topic": t, "messages": [{"partition": 0, "value": "y0-0"}], "end": "abort"},
        {"topic": t, "messages": [{"partition": 0, "value": "p0-1"}], "end": "commit"}]})
    eq(res["results"], [[{"partition": 0, "offset": 0}, {"partition": 1, "offset": 0}],
                        [{"partition": 0, "offset": 2}], [{"partition": 0, "offset": 4}]], "platformatic offsets")
    wait_state("plat-1", "CompleteCommit")
    eq(read_all(t, 0, "read_committed"), [(0, b"p0-0"), (4, b"p0-1")], "read_committed of partition 0")
    eq(read_all(t, 1, "read_committed"), [(0, b"p1-0")], "read_committed of partition 1")
    eq(read_all(t, 0, "read_uncommitted"), [(0, b"p0-0"), (2, b"y0-0"), (4, b"p0-1")], "read_uncommitted")


# ---------------------------------------------------------------- samsactl

LIST_HEADER = ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
DESCRIBE_HEADER = ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                   "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                   "TopicPartitions"]


def listed(rows, tid):
    eq(rows[0], LIST_HEADER, "samsactl transactions list header")
    return [r for r in rows[1:] if r[0] == tid]


@S.case
def samsactl_list_and_describe():
    t = "eo-ctl"
    p = producer("ctl-1", **{"transaction.timeout.ms": 45000})
    p.begin_transaction()
    before = int(time.time() * 1000)
    send(p, t, [(0, b"s0"), (1, b"s1")])
    d = describe("ctl-1")
    pid, epoch = d["producer_id"], d["producer_epoch"]
    eq(listed(samsactl("list"), "ctl-1"), [["ctl-1", "1", str(pid), "Ongoing"]], "list while open")
    rows = samsactl("describe", "ctl-1")
    eq(rows[0], DESCRIBE_HEADER, "describe header")
    eq(len(rows), 2, "describe rows")
    r = rows[1]
    eq(r[:6], ["1", "ctl-1", str(pid), str(epoch), "Ongoing", "45000"], "describe while open")
    start, duration = int(r[6]), int(r[7])
    now = int(time.time() * 1000)
    check(before - 2000 <= start <= now, "start time %d not within [%d, %d]", start, before - 2000, now)
    check(0 <= duration <= now - before + 2000, "duration %d", duration)
    eq(sorted(r[8].split(",")), ["eo-ctl-0", "eo-ctl-1"], "describe: partitions")
    eq(samsactl("describe", "--transactional-id", "ctl-1")[1][:5], r[:5], "describe --transactional-id")
    # the duration filter (KIP-994): longer than an hour excludes it
    eq(listed(samsactl("list", "--duration-filter", "3600000"), "ctl-1"), [], "list --duration-filter 3600000")
    eq(listed(samsactl("list", "--duration-filter", "0"), "ctl-1"), [["ctl-1", "1", str(pid), "Ongoing"]],
       "list --duration-filter 0")

    p.commit_transaction(bound(30))
    wait_state("ctl-1", "CompleteCommit")
    eq(listed(samsactl("list"), "ctl-1"), [["ctl-1", "1", str(pid), "CompleteCommit"]], "list after the commit")
    rows = samsactl("describe", "ctl-1")
    # no partitions: the last column is empty
    eq(rows[1][:6], ["1", "ctl-1", str(pid), str(epoch), "CompleteCommit", "45000"], "describe after the commit")
    eq(len(rows[1]), 8, "describe after the commit: no TopicPartitions (%s)" % rows[1])

    res = h.run([h.SAMSACTL_BIN, "--bootstrap-server", srv.bootstrap, "transactions", "describe", "no-such-id"],
                check_rc=False)
    eq(res.returncode, 1, "describe of an unknown id: exit status")
    check(b"TRANSACTIONAL_ID_NOT_FOUND" in res.stderr, "describe of an unknown id: %r", res.stderr)


# ---------------------------------------------------------------- raw wire

@S.case
def wire_error_codes():
    r = find_txn_coordinator("wire-1")
    eq((r["error_code"], r["node_id"], r["port"]), (0, 1, srv.port), "FindCoordinator v1 key type 1")
    r = find_txn_coordinator("wire-1", version=4)
    eq([(x["key"], x["error_code"], x["node_id"], x["port"]) for x in r], [("wire-1", 0, 1, srv.port)],
       "FindCoordinator v4 key type 1")
    c = conn()
    try:
        for v in (0, 4):
            r = kwire.init_producer_id(c, v, "wire-1", timeout_ms=MAX_TIMEOUT_MS + 1)
            eq((r["error_code"], r["producer_id"], r["producer_epoch"]), (INVALID_TRANSACTION_TIMEOUT, -1, -1),
               "InitProducerId v%d over transaction.max.timeout.ms" % v)
        first = kwire.init_producer_id(c, 4, "wire-1", timeout_ms=30000)
        eq((first["error_code"], first["producer_epoch"]), (0, 0), "first InitProducerId")
        pid = first["producer_id"]
        second = kwire.init_producer_id(c, 4, "wire-1", timeout_ms=30000)
        eq((second["error_code"], second["producer_id"], second["producer_epoch"]), (0, pid, 1),
           "second InitProducerId bumps the epoch")
        # KIP-360's producer id and epoch on the first call of a new id are
        # accepted whatever they are (the id has no epoch yet): epoch 0
        r = kwire.init_producer_id(c, 5, "wire-fresh", timeout_ms=30000, producer_id=0, producer_epoch=0)
        eq((r["error_code"], r["producer_epoch"]), (0, 0), "InitProducerId v5 of a new id with producer 0 epoch 0")
        check(r["producer_id"] >= 0, "a producer id: %s", r)
        d = describe("wire-1")
        eq((d["error_code"], d["state"], d["producer_id"], d["producer_epoch"], d["timeout_ms"], d["start_time_ms"],
            d["topics"]), (0, "Empty", pid, 1, 30000, -1, {}), "DescribeTransactions of an Empty id")
        for v in (0, 3):
            for commit in (True, False):
                eq(kwire.end_txn(c, v, "wire-1", pid, 1, commit), INVALID_TXN_STATE,
                   "EndTxn v%d (%s) in Empty" % (v, "commit" if commit else "abort"))
        for v, want in ((0, INVALID_PRODUCER_EPOCH), (1, INVALID_PRODUCER_EPOCH), (2, PRODUCER_FENCED),
                        (3, PRODUCER_FENCED)):
            eq(kwire.add_partitions_to_txn(c, v, "wire-1", pid, 0, {"eo-wire": [0]}), {("eo-wire", 0): want},
               "AddPartitionsToTxn v%d with the old epoch" % v)
        eq(kwire.add_partitions_to_txn(c, 3, "wire-1", pid + 1000, 1, {"eo-wire": [0]}),
           {("eo-wire", 0): INVALID_PRODUCER_ID_MAPPING}, "AddPartitionsToTxn with another producer id")
        eq(kwire.add_partitions_to_txn(c, 3, "wire-1", pid, 1, {"eo-wire": [0]}), {("eo-wire", 0): 0},
           "AddPartitionsToTxn with the current epoch")
        d = describe("wire-1")
        eq((d["state"], d["topics"]), ("Ongoing", {"eo-wire": [0]}), "DescribeTransactions after AddPartitionsToTxn")
        check(d["start_time_ms"] > 0, "an Ongoing transaction has a start time: %s", d)

        res = kwire.describe_transactions(c, ["never-seen", "", "wire-1"])
        eq([(x["transactional_id"], x["error_code"]) for x in res],
           [("never-seen", TRANSACTIONAL_ID_NOT_FOUND), ("", INVALID_REQUEST), ("wire-1", 0)],
           "DescribeTransactions of an unknown, an empty and a known id")
        eq((res[0]["state"], res[0]["producer_id"], res[0]["producer_epoch"], res[0]["topics"]), ("", 0, 0, {}),
           "DescribeTransactions: the fields of an error answer are Kafka's defaults")

        for v in (0, 1):
            lt = kwire.list_transactions(c, version=v, states=["Ongoing", "Bogus"])
            eq((lt["error_code"], lt["unknown_state_filters"]), (0, ["Bogus"]), "ListTransactions v%d filters" % v)
            eq([x for x in lt["transactions"] if x[0] == "wire-1"], [("wire-1", pid, "Ongoing")],
               "ListTransactions v%d of Ongoing" % v)
            check(all(x[2] == "Ongoing" for x in lt["transactions"]), "only Ongoing ids: %s", lt["transactions"])
        lt = kwire.list_transactions(c, states=["Bogus"])
        eq((lt["error_code"], lt["unknown_state_filters"], lt["transactions"]), (0, ["Bogus"], []),
           "ListTransactions with an unknown state only")
        lt = kwire.list_transactions(c, producer_ids=[pid])
        eq(lt["transactions"], [("wire-1", pid, "Ongoing")], "ListTransactions by producer id")
        lt = kwire.list_transactions(c, duration_ms=3600000, producer_ids=[pid])
        eq(lt["transactions"], [], "ListTransactions v1: not running for an hour")
        eq(kwire.end_txn(c, 3, "wire-1", pid, 1, False), 0, "EndTxn abort")
    finally:
        c.close()
    wait_state("wire-1", "CompleteAbort")


if __name__ == "__main__":
    S.run(setup)
