"""The group coordinator's side of transactions, driven with raw requests
(as the transaction coordinator and a transactional producer would):
TxnOffsetCommit writes the offsets as one transactional batch of the
producer into the group's __consumer_offsets partition; they are
invisible to OffsetFetch (require_stable answers UNSTABLE_OFFSET_COMMIT)
until WriteTxnMarkers COMMIT on that partition makes them the committed
offsets, and ABORT drops them; a committed transactional offset does not
replace a regular commit written after it; the request's errors; and the
loader's replay of transactional batches and markers after a clean
restart and after kill -9, with one transaction still open."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness as h  # noqa: E402
import kgroups as kg  # noqa: E402
import kwire  # noqa: E402

S = h.Suite("38_txn_offsets", case_limit=90)
srv = None
T = "txo"
NOT_LEADER_OR_FOLLOWER = 6
OFFSET_METADATA_TOO_LARGE = 12
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
UNSTABLE_OFFSET_COMMIT = kg.UNSTABLE_OFFSET_COMMIT
N_OFFSETS_PARTITIONS = 50


def start_server(verification, name=None):
    global srv
    srv = h.Server({"group.initial.rebalance.delay.ms": "0", "transaction.state.log.num.partitions": "5",
                    "transaction.partition.verification.enable": "true" if verification else "false"}, name=name)
    h.ck_create_topic(srv.bootstrap, T, 3, 1)
    h.ck_create_topic(srv.bootstrap, "txo-out", 1, 1)


def setup():
    # The raw cases play the transaction coordinator themselves (no
    # InitProducerId, no AddOffsetsToTxn): without KIP-890's verification,
    # which asks the real one. The real clients' cases run on a second
    # server with it.
    start_server(False)


def verifying():
    """Switches the cases to the server with verification (once)."""
    if srv.overrides.get("transaction.partition.verification.enable") != "true":
        srv.stop()
        start_server(True, name="verify")


def conn():
    return kwire.Conn(srv.port, timeout=h.bound(20))


def partition_for(group):
    return kg.partition_for(group, N_OFFSETS_PARTITIONS)


def txn_offset_commit(group, pid, epoch, offsets, **kw):
    c = conn()
    try:
        return kg.txn_offset_commit(c, group, pid, epoch, offsets, **kw)
    finally:
        c.close()


def txn_commit_loaded(group, pid, epoch, offsets, **kw):
    """txn_offset_commit, retried while the coordinator loads."""
    deadline = time.monotonic() + h.bound(15)
    while True:
        res = txn_offset_commit(group, pid, epoch, offsets, **kw)
        if set(res.values()) != {kg.COORDINATOR_LOAD_IN_PROGRESS} or time.monotonic() > deadline:
            return res
        time.sleep(0.05)


def offset_fetch_v7(group, parts, require_stable):
    """OffsetFetch v7 (flexible): {(topic, partition): (offset, error)},
    retried while the coordinator loads."""
    deadline = time.monotonic() + h.bound(15)
    while True:
        top, out = offset_fetch_v7_once(group, parts, require_stable)
        if top != kg.COORDINATOR_LOAD_IN_PROGRESS or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    h.eq(top, 0, "OffsetFetch v7 top-level error")
    return out


def offset_fetch_v7_once(group, parts, require_stable):
    c = conn()
    try:
        return kg.offset_fetch_v7(c, group, parts, require_stable)
    finally:
        c.close()


def committed(group, parts=(0, 1, 2)):
    """OffsetFetch v1 (no require_stable): [offset per partition]."""
    c = conn()
    try:
        _, offs = kg.offset_fetch(c, group, {T: list(parts)})
    finally:
        c.close()
    return [offs[(T, p)][0] for p in parts]


def stable(group, parts=(0, 1, 2)):
    """OffsetFetch v7 require_stable: [(offset, error) per partition]."""
    got = offset_fetch_v7(group, {T: list(parts)}, True)
    return [got[(T, p)] for p in parts]


def commit(group, offsets):
    deadline = time.monotonic() + h.bound(15)
    while True:
        c = conn()
        try:
            res = kg.offset_commit(c, group, {T: offsets})
        finally:
            c.close()
        if set(res.values()) != {kg.COORDINATOR_LOAD_IN_PROGRESS} or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    h.eq(set(res.values()), {0}, "OffsetCommit of %s" % group)


def marker(group, pid, commit_, epoch=0, coordinator_epoch=0):
    """WriteTxnMarkers for pid on the group's __consumer_offsets
    partition, retried while the coordinator is not ready (after a
    restart). Returns the partition's error."""
    part = partition_for(group)
    deadline = time.monotonic() + h.bound(15)
    while True:
        c = conn()
        try:
            res = kwire.write_txn_markers(c, [{"producer_id": pid, "producer_epoch": epoch, "commit": commit_,
                                               "coordinator_epoch": coordinator_epoch,
                                               "topics": {"__consumer_offsets": [part]}}])
        finally:
            c.close()
        h.eq([p for p, _ in res], [pid], "WriteTxnMarkers answers the producer")
        err = res[0][1][("__consumer_offsets", part)]
        if err != NOT_LEADER_OR_FOLLOWER or time.monotonic() > deadline:
            return err
        time.sleep(0.05)


def offsets_records(group):
    """The records of the group's __consumer_offsets partition."""
    c = conn()
    try:
        data = kwire.fetch_v4(c, "__consumer_offsets", partition_for(group), 0, max_bytes=8 << 20)["records"]
    finally:
        c.close()
    return kwire.parse_batches(data)


def ensure(group):
    node, host, port = kg.coordinator_port(srv.port, group, limit=h.bound(15))
    h.eq((node, port), (1, srv.port), "coordinator of %s" % group)


@S.case
def commit_makes_offsets_visible():
    g = "txo-commit"
    ensure(g)
    commit(g, [(0, 5, "plain")])
    h.eq(txn_commit_loaded(g, 7001, 0, {T: [(0, 10, "t0"), (1, 20, "t1")]}), {(T, 0): 0, (T, 1): 0},
         "TxnOffsetCommit v3")
    h.eq(committed(g), [5, -1, -1], "pending offsets are invisible to OffsetFetch")
    h.eq(stable(g), [(-1, UNSTABLE_OFFSET_COMMIT), (-1, UNSTABLE_OFFSET_COMMIT), (-1, 0)],
         "require_stable: UNSTABLE_OFFSET_COMMIT for the pending partitions")
    h.eq(offset_fetch_v7(g, {T: [0, 1, 2]}, False), {(T, 0): (5, 0), (T, 1): (-1, 0), (T, 2): (-1, 0)},
         "OffsetFetch v7 without require_stable")
    # the transactional batch in the log: the producer's, base sequence 0
    recs = offsets_records(g)
    txn = [r for r in recs if r["producer_id"] == 7001 and not r["control"]]
    h.eq([(r["producer_epoch"], r["sequence"]) for r in txn], [(0, 0), (0, 1)],
         "the offsets are one batch of producer 7001 at sequence 0")
    h.eq(marker(g, 7001, True), 0, "COMMIT marker on __consumer_offsets-%d" % partition_for(g))
    h.eq(committed(g), [10, 20, -1], "committed transactional offsets")
    h.eq(stable(g), [(10, 0), (20, 0), (-1, 0)], "require_stable after the commit")
    ctl = [r for r in offsets_records(g) if r["control"]]
    h.eq([r["producer_id"] for r in ctl], [7001], "the marker is a control batch of the producer")
    # a second transaction of the same producer and epoch (transactions
    # V1 keep the epoch) at sequence 0 again is not taken for a retry
    h.eq(txn_commit_loaded(g, 7001, 0, {T: [(0, 11, "")]}), {(T, 0): 0}, "a second transaction")
    h.eq(marker(g, 7001, True), 0, "its COMMIT")
    h.eq(committed(g), [11, 20, -1], "the second transaction's offset")


@S.case
def abort_drops_offsets():
    g = "txo-abort"
    ensure(g)
    commit(g, [(0, 3, "")])
    h.eq(txn_commit_loaded(g, 7002, 0, {T: [(0, 30, ""), (2, 32, "")]}, version=2), {(T, 0): 0, (T, 2): 0},
         "TxnOffsetCommit v2")
    h.eq(stable(g), [(-1, UNSTABLE_OFFSET_COMMIT), (-1, 0), (-1, UNSTABLE_OFFSET_COMMIT)], "pending")
    h.eq(marker(g, 7002, False), 0, "ABORT marker")
    h.eq(committed(g), [3, -1, -1], "aborted offsets dropped")
    h.eq(stable(g), [(3, 0), (-1, 0), (-1, 0)], "require_stable after the abort")


@S.case
def later_regular_commit_wins():
    g = "txo-order"
    ensure(g)
    h.eq(txn_commit_loaded(g, 7003, 0, {T: [(0, 40, ""), (1, 41, "")]}), {(T, 0): 0, (T, 1): 0}, "TxnOffsetCommit")
    commit(g, [(0, 45, "after")])
    h.eq(committed(g), [45, -1, -1], "the regular commit is visible at once")
    h.eq(marker(g, 7003, True), 0, "COMMIT")
    # Kafka's rule: the transactional offset replaces the committed one
    # only when its record is later in the log
    h.eq(committed(g), [45, 41, -1], "after the commit: the later regular commit stays")


@S.case
def request_errors():
    g = "txo-errors"
    ensure(g)
    h.eq(txn_commit_loaded(g, 7004, 0, {T: [(0, 1, "")]}, generation=3, member_id="m"),
         {(T, 0): kg.ILLEGAL_GENERATION}, "a generation for a group that does not exist")
    h.eq(txn_commit_loaded(g, 7004, 3, {T: [(0, 1, "x" * 4097), (1, 1, "")], "nope": [(0, 1, "")]}),
         {(T, 0): OFFSET_METADATA_TOO_LARGE, (T, 1): 0, ("nope", 0): kg.UNKNOWN_TOPIC_OR_PARTITION},
         "metadata too large and unknown topic")
    h.eq(txn_commit_loaded(g, 7004, 3, {T: [(9, 1, "")]}), {(T, 9): kg.UNKNOWN_TOPIC_OR_PARTITION},
         "unknown partition")
    for v in (2, 3):
        h.eq(txn_commit_loaded(g, 7004, 2, {T: [(1, 2, "")]}, version=v), {(T, 1): INVALID_PRODUCER_EPOCH},
             "an older producer epoch (v%d)" % v)
    h.eq(txn_commit_loaded("", 7004, 3, {T: [(0, 1, "")]}), {(T, 0): kg.INVALID_GROUP_ID}, "empty group id")
    h.eq(marker(g, 7004, False, epoch=3), 0, "ABORT")
    h.eq(committed(g), [-1, -1, -1], "nothing committed")
    # a group with a member: v3's member checks
    gm = "txo-member"
    ensure(gm)
    c = conn()
    try:
        first = kg.join_group(c, gm)
        while first["error_code"] == kg.COORDINATOR_LOAD_IN_PROGRESS:
            time.sleep(0.05)
            first = kg.join_group(c, gm)
        h.eq(first["error_code"], kg.MEMBER_ID_REQUIRED, "first JoinGroup")
        j = kg.join_group(c, gm, member_id=first["member_id"])
        h.eq(j["error_code"], 0, "JoinGroup")
    finally:
        c.close()
    mid, gen = j["member_id"], j["generation_id"]
    h.eq(txn_commit_loaded(gm, 7005, 0, {T: [(0, 1, "")]}, generation=gen, member_id="someone-else"),
         {(T, 0): kg.UNKNOWN_MEMBER_ID}, "an unknown member")
    h.eq(txn_commit_loaded(gm, 7005, 0, {T: [(0, 1, "")]}, generation=gen + 1, member_id=mid),
         {(T, 0): kg.ILLEGAL_GENERATION}, "another generation")
    h.eq(txn_commit_loaded(gm, 7005, 0, {T: [(0, 1, "")]}, generation=gen, member_id=mid, instance_id="inst"),
         {(T, 0): kg.UNKNOWN_MEMBER_ID}, "an unknown static instance")
    # v0-2 carry no member: accepted whatever the group's state
    h.eq(txn_commit_loaded(gm, 7005, 0, {T: [(0, 6, "")]}, version=0), {(T, 0): 0}, "v0 into a group with members")
    h.eq(txn_commit_loaded(gm, 7005, 0, {T: [(1, 7, "")]}, generation=gen, member_id=mid), {(T, 1): 0},
         "the member's own generation")
    h.eq(marker(gm, 7005, True), 0, "COMMIT")
    h.eq(committed(gm), [6, 7, -1], "the member group's committed transactional offsets")


@S.case
def deletion_drops_pending_offsets():
    """Kafka's tombstones for pending offsets: OffsetDelete of a partition
    and DeleteGroups drop them from the open transaction, whose commit
    then brings back nothing of them."""
    g = "txo-delete"
    ensure(g)
    h.eq(txn_commit_loaded(g, 7020, 0, {T: [(0, 80, ""), (1, 81, "")]}), {(T, 0): 0, (T, 1): 0}, "TxnOffsetCommit")
    c = conn()
    try:
        err, res = kg.offset_delete(c, g, {T: [1]})
    finally:
        c.close()
    h.eq((err, res), (0, {(T, 1): 0}), "OffsetDelete of a pending partition")
    h.eq(stable(g), [(-1, UNSTABLE_OFFSET_COMMIT), (-1, 0), (-1, 0)], "t-1 is no longer pending")
    h.eq(marker(g, 7020, True), 0, "COMMIT")
    h.eq(committed(g), [80, -1, -1], "only t-0 committed")
    gd = "txo-delete-group"
    ensure(gd)
    h.eq(txn_commit_loaded(gd, 7021, 0, {T: [(2, 90, "")]}), {(T, 2): 0}, "TxnOffsetCommit of a new group")
    c = conn()
    try:
        h.eq(kg.delete_groups(c, [gd]), {gd: 0}, "DeleteGroups of a group with only pending offsets")
    finally:
        c.close()
    h.eq(stable(gd), [(-1, 0), (-1, 0), (-1, 0)], "nothing pending after the deletion")
    h.eq(marker(gd, 7021, True), 0, "COMMIT after the deletion")
    h.eq(committed(gd), [-1, -1, -1], "the deleted group's offsets stay deleted")
    tomb = [r for r in offsets_records(gd) if r["value"] is None and gd.encode() in r["key"]]
    h.check(len(tomb) == 2, "tombstones of the pending offset and of the group: %s", [r["key"] for r in tomb])


@S.case
def loader_replays_transactions():
    g = "txo-restart"
    ensure(g)
    commit(g, [(2, 7, "")])
    h.eq(txn_commit_loaded(g, 7010, 0, {T: [(0, 50, "")]}), {(T, 0): 0}, "transaction 7010")
    h.eq(marker(g, 7010, True), 0, "7010 committed")
    h.eq(txn_commit_loaded(g, 7011, 0, {T: [(1, 60, "")]}), {(T, 0 + 1): 0}, "transaction 7011 (left open)")
    h.eq(txn_commit_loaded(g, 7012, 0, {T: [(2, 70, "")]}), {(T, 2): 0}, "transaction 7012")
    h.eq(marker(g, 7012, False), 0, "7012 aborted")
    expect = [50, -1, 7]
    h.eq(committed(g), expect, "before the restarts")
    for how in ("clean", "kill -9"):
        if how == "clean":
            srv.restart()
        else:
            srv.kill9()
            srv.start()
        ensure(g)
        got = offset_fetch_v7(g, {T: [0, 1, 2]}, True)
        h.eq([got[(T, p)] for p in range(3)], [(50, 0), (-1, UNSTABLE_OFFSET_COMMIT), (7, 0)],
             "after a %s restart: committed, still open, aborted" % how)
        h.eq(committed(g), expect, "OffsetFetch v1 after a %s restart" % how)
    h.eq(marker(g, 7011, True), 0, "7011 committed after the restarts")
    h.eq(committed(g), [50, 60, 7], "the open transaction's offset once committed")
    srv.kill9()
    srv.start()
    ensure(g)
    got = offset_fetch_v7(g, {T: [0, 1, 2]}, True)
    h.eq([got[(T, p)] for p in range(3)], [(50, 0), (60, 0), (7, 0)], "after the commit and kill -9")


def until_stable(group, parts=(0, 1, 2)):
    """require_stable OffsetFetch until no partition is pending (the
    transaction coordinator writes the markers after EndTxn answered)."""
    deadline = time.monotonic() + h.bound(20)
    while True:
        got = stable(group, parts)
        if all(e != UNSTABLE_OFFSET_COMMIT for _, e in got) or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


@S.case
def confluent_send_offsets_to_transaction():
    """A real client's consume-transform-produce step: the offsets sent
    with the transaction are committed with it, or dropped with its
    abort."""
    from confluent_kafka import Producer, Consumer, TopicPartition
    verifying()
    g = "txo-ck-group"
    ensure(g)
    p = Producer(h.ck_conf(srv.bootstrap, **{"transactional.id": "txo-ck",
                                             "transaction.timeout.ms": int(h.bound(60000))}))
    c = Consumer(h.ck_conf(srv.bootstrap, **{"group.id": g, "enable.auto.commit": False}))
    try:
        t = h.bound(20)
        p.init_transactions(t)
        p.begin_transaction()
        p.produce("txo-out", b"out-1")
        p.send_offsets_to_transaction([TopicPartition(T, 0, 17), TopicPartition(T, 2, 19)],
                                      c.consumer_group_metadata(), t)
        p.commit_transaction(t)
        h.eq(until_stable(g), [(17, 0), (-1, 0), (19, 0)], "offsets committed with the transaction")
        p.begin_transaction()
        p.produce("txo-out", b"out-2")
        p.send_offsets_to_transaction([TopicPartition(T, 0, 25)], c.consumer_group_metadata(), t)
        p.abort_transaction(t)
        h.eq(until_stable(g), [(17, 0), (-1, 0), (19, 0)], "offsets of the aborted transaction dropped")
    finally:
        c.close()
        p.flush(1)


@S.case
def kafkajs_send_offsets():
    """kafkajs's transaction.sendOffsets (its TxnOffsetCommit is v0)."""
    verifying()
    g = "txo-js-group"
    ensure(g)
    base = {"transactionalId": "txo-js", "topic": "txo-out", "group": g}
    h.node("kafkajs-txn-offsets", srv.bootstrap, dict(base, value="js-1", commit=True,
                                                       offsets=[{"topic": T, "partition": 1, "offset": 33}]))
    h.eq(until_stable(g), [(-1, 0), (33, 0), (-1, 0)], "kafkajs: offsets committed with the transaction")
    h.node("kafkajs-txn-offsets", srv.bootstrap, dict(base, value="js-2", commit=False,
                                                       offsets=[{"topic": T, "partition": 1, "offset": 44}]))
    h.eq(until_stable(g), [(-1, 0), (33, 0), (-1, 0)], "kafkajs: offsets of the aborted transaction dropped")


@S.case
def verification_refuses_offsets_outside_the_transaction():
    """KIP-890: a TxnOffsetCommit of a producer whose transaction does not
    hold the group's partition (no AddOffsetsToTxn) is refused, and
    nothing is written."""
    verifying()
    g = "txo-verify-group"
    ensure(g)
    c = conn()
    try:
        deadline = time.monotonic() + h.bound(15)
        while True:
            r = kg.find_coordinator(c, "txo-verify", version=1, key_type=1)
            if r["error_code"] == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        h.eq(r["error_code"], 0, "FindCoordinator for the transactional id")
        deadline = time.monotonic() + h.bound(15)
        while True:
            ip = kwire.init_producer_id(c, 1, transactional_id="txo-verify")
            if ip["error_code"] == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        h.eq(ip["error_code"], 0, "InitProducerId")
    finally:
        c.close()
    pid, epoch = ip["producer_id"], ip["producer_epoch"]
    before = len(offsets_records(g))
    got = txn_commit_loaded(g, pid, epoch, {T: [(0, 5, "")]}, tid="txo-verify")
    h.eq(got, {(T, 0): INVALID_TXN_STATE}, "TxnOffsetCommit outside the transaction")
    h.eq(len(offsets_records(g)), before, "nothing written")
    h.eq(stable(g), [(-1, 0), (-1, 0), (-1, 0)], "nothing pending")


if __name__ == "__main__":
    S.run(setup)
