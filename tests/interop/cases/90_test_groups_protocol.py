"""Group coordinator, on the wire (raw requests, kgroups.py): Kafka's
answers for FindCoordinator v0-v4 (creating __consumer_offsets on first
use), the JoinGroup v4+ MEMBER_ID_REQUIRED round trip, SyncGroup passing
the leader's bytes through exactly, Heartbeat, LeaveGroup v1/v3, static
members (FENCED_INSTANCE_ID), OffsetCommit/OffsetFetch (metadata
round-trips exactly; OFFSET_METADATA_TOO_LARGE; unknown topics), and the
admin APIs ListGroups, DescribeGroups, DeleteGroups (NON_EMPTY_GROUP,
GROUP_ID_NOT_FOUND), OffsetDelete; commits survive a restart; the
records in __consumer_offsets are Kafka's (OffsetCommitKey v1 /
GroupMetadataKey v2)."""
# limit: 180
import os
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness as h  # noqa: E402
import kgroups as kg  # noqa: E402
import kwire  # noqa: E402

suite = h.Suite("90_test_groups_protocol", case_limit=60)
srv = None
DELAY_MS = 300  # group.initial.rebalance.delay.ms


def setup():
    global srv
    srv = h.Server({"group.initial.rebalance.delay.ms": str(DELAY_MS), "offsets.topic.num.partitions": "10"})
    h.ck_create_topic(srv.bootstrap, "gt", 3, 1)


def conn(timeout=20.0):
    return kwire.Conn(srv.port, timeout=h.bound(timeout))


def ensure_coordinator(group):
    node, host, port = kg.coordinator_port(srv.port, group, limit=h.bound(10))
    h.eq((node, host, port), (1, "127.0.0.1", srv.port), "coordinator of %s" % group)


def join_until_loaded(c, group, **kw):
    deadline = time.monotonic() + h.bound(10)
    while True:
        res = kg.join_group(c, group, **kw)
        if res["error_code"] != kg.COORDINATOR_LOAD_IN_PROGRESS or time.monotonic() > deadline:
            return res
        time.sleep(0.05)


def join_new(c, group, version=5, **kw):
    """MEMBER_ID_REQUIRED, then the join with the id. Returns the answer."""
    first = join_until_loaded(c, group, version=version, **kw)
    h.eq(first["error_code"], kg.MEMBER_ID_REQUIRED, "first JoinGroup v%d error" % version)
    h.check(first["member_id"].startswith("samsa-interop-") and len(first["member_id"]) == 14 + 36,
            "member id is client id + '-' + UUID: %r", first["member_id"])
    return kg.join_group(c, group, member_id=first["member_id"], version=version, **kw)


@suite.case
def find_coordinator_creates_offsets_topic():
    c = conn()
    try:
        first = kg.find_coordinator(c, "fc-group", version=0)
    finally:
        c.close()
    # the first ask creates the topic; the answer may already name us
    h.check(first["error_code"] in (kg.NONE, kg.COORDINATOR_NOT_AVAILABLE), "FindCoordinator v0: %s", first)
    ensure_coordinator("fc-group")
    t = h.wait_topic(srv.bootstrap, "__consumer_offsets", 10)
    h.eq(t["is_internal"], True, "__consumer_offsets is internal")
    c = conn()
    try:
        for v in (1, 2, 3):
            if v == 3:
                continue  # v3 is flexible; v4 covers the flexible shape
            r = kg.find_coordinator(c, "fc-group", version=v)
            h.eq((r["error_code"], r["error_message"], r["node_id"], r["port"]), (0, "NONE", 1, srv.port),
                 "FindCoordinator v%d" % v)
        batch = kg.find_coordinator(c, ["a", "b", "c"], version=4)
        h.eq([(x["key"], x["error_code"], x["node_id"], x["port"]) for x in batch],
             [(k, 0, 1, srv.port) for k in ("a", "b", "c")], "FindCoordinator v4 batched keys")
        # a transactional id: the first ask creates __transaction_state
        # (COORDINATOR_NOT_AVAILABLE meanwhile), then this node answers
        r = kg.find_coordinator(c, "txn-1", version=1, key_type=1)
        h.eq(r["error_code"], kg.COORDINATOR_NOT_AVAILABLE, "transaction coordinator, first ask")
        deadline = time.time() + 10
        while r["error_code"] != 0 and time.time() < deadline:
            time.sleep(0.1)
            r = kg.find_coordinator(c, "txn-1", version=1, key_type=1)
        h.eq((r["error_code"], r["node_id"], r["port"]), (0, 1, srv.port), "transaction coordinator")
        r = kg.find_coordinator(c, "", version=1, key_type=1)
        h.eq(r["error_code"], 42, "empty transactional id: INVALID_REQUEST")
        r = kg.find_coordinator(c, "x", version=1, key_type=7)
        h.eq(r["error_code"], 42, "unknown key type: INVALID_REQUEST")
    finally:
        c.close()


@suite.case
def join_sync_heartbeat_leave():
    g = "raw-g1"
    ensure_coordinator(g)
    c = conn()
    try:
        meta = kg.subscription(["gt"])
        t0 = time.monotonic()
        res = join_new(c, g, protocols=[("range", meta), ("roundrobin", meta)])
        took = time.monotonic() - t0
        h.eq(res["error_code"], 0, "JoinGroup error")
        h.check(took >= DELAY_MS / 1000.0 * 0.9, "the first join waited %.3fs, less than the initial delay", took)
        me = res["member_id"]
        h.eq((res["generation_id"], res["protocol_name"], res["leader"]), (1, "range", me), "join answer")
        h.eq([(m["member_id"], m["metadata"]) for m in res["members"]], [(me, meta)], "members for the leader")
        # the assignment is opaque: any bytes, handed back exactly
        blob = bytes(range(256)) + b"\x00\xff" * 100
        s = kg.sync_group(c, g, 1, me, [(me, blob)])
        h.eq((s["error_code"], s["assignment"]), (0, blob), "SyncGroup v3 answer")
        h.eq(kg.heartbeat(c, g, 1, me), 0, "Heartbeat")
        h.eq(kg.heartbeat(c, g, 2, me), kg.ILLEGAL_GENERATION, "Heartbeat of another generation")
        h.eq(kg.heartbeat(c, g, 1, "nobody"), kg.UNKNOWN_MEMBER_ID, "Heartbeat of an unknown member")
        h.eq(kg.heartbeat(c, "no-such-group", 1, me), kg.UNKNOWN_MEMBER_ID, "Heartbeat of an unknown group")
        # SyncGroup v5 checks protocol type and name
        s = kg.sync_group(c, g, 1, me, [], version=5, protocol_type="consumer", protocol_name="roundrobin")
        h.eq(s["error_code"], kg.INCONSISTENT_GROUP_PROTOCOL, "SyncGroup v5 with another protocol name")
        s = kg.sync_group(c, g, 1, me, [], version=5, protocol_type="consumer", protocol_name="range")
        h.eq((s["error_code"], s["protocol_type"], s["protocol_name"], s["assignment"]),
             (0, "consumer", "range", blob), "SyncGroup v5 in Stable")
        d = kg.describe_groups(c, [g])[0]
        h.eq((d["error_code"], d["state"], d["protocol_type"], d["protocol_data"]),
             (0, "Stable", "consumer", "range"), "DescribeGroups")
        h.eq([(m["member_id"], m["client_id"], m["client_host"], m["metadata"], m["assignment"]) for m in d["members"]],
             [(me, "samsa-interop", "/127.0.0.1", meta, blob)], "described member")
        err, ms = kg.leave_group(c, g, members=[(me, None), ("ghost", None)], version=3)
        h.eq((err, ms), (0, [(me, None, 0), ("ghost", None, kg.UNKNOWN_MEMBER_ID)]), "LeaveGroup v3")
        d = kg.describe_groups(c, [g])[0]
        h.eq((d["state"], d["members"]), ("Empty", []), "described after the leave")
        err, groups = kg.list_groups(c)
        h.eq(err, 0, "ListGroups error")
        h.check((g, "consumer", None) in groups, "ListGroups lists %s: %s", g, groups)
        err, groups = kg.list_groups(c, version=4, states=["Stable"])
        h.check(all(x[0] != g for x in groups), "states filter Stable leaves out the Empty group: %s", groups)
        err, groups = kg.list_groups(c, version=4, states=["empty"])
        h.check((g, "consumer", "Empty") in groups, "states filter (case-insensitive) Empty: %s", groups)
    finally:
        c.close()


@suite.case
def rebalance_two_members():
    g = "raw-g2"
    ensure_coordinator(g)
    meta = kg.subscription(["gt"])
    ca, cb = conn(), conn()
    try:
        a = join_new(ca, g, protocols=[("range", meta)], session_ms=10000, rebalance_ms=10000)
        me_a = a["member_id"]
        kg.sync_group(ca, g, 1, me_a, [(me_a, kg.assignment({"gt": [0, 1, 2]}))])
        # b's join parks until a rejoins
        first = kg.join_group(cb, g, protocols=[("range", meta)], session_ms=10000, rebalance_ms=10000)
        h.eq(first["error_code"], kg.MEMBER_ID_REQUIRED, "b's first join")
        me_b = first["member_id"]
        box = {}

        def join_b():
            box["b"] = kg.join_group(cb, g, member_id=me_b, protocols=[("range", meta)], session_ms=10000,
                                     rebalance_ms=10000)
        th = threading.Thread(target=join_b)
        th.start()
        deadline = time.monotonic() + h.bound(5)
        while kg.heartbeat(ca, g, 1, me_a) != kg.REBALANCE_IN_PROGRESS:
            h.check(time.monotonic() < deadline, "a never heard of the rebalance")
            time.sleep(0.02)
        # an old-generation commit during PreparingRebalance is still fine
        h.eq(kg.offset_commit(ca, g, {"gt": [(0, 5, "")]}, generation=1, member_id=me_a), {("gt", 0): 0},
             "commit during PreparingRebalance")
        ra = kg.join_group(ca, g, member_id=me_a, protocols=[("range", meta)], session_ms=10000, rebalance_ms=10000)
        th.join(h.bound(10))
        rb = box["b"]
        h.eq((ra["error_code"], rb["error_code"]), (0, 0), "rejoin errors")
        h.eq((ra["generation_id"], rb["generation_id"]), (2, 2), "generation after the rebalance")
        h.eq((ra["leader"], rb["leader"]), (me_a, me_a), "the leader stays")
        h.eq(sorted(m["member_id"] for m in ra["members"]), sorted([me_a, me_b]), "leader sees both")
        h.eq(rb["members"], [], "followers see no members")
        # commits in CompletingRebalance: REBALANCE_IN_PROGRESS
        h.eq(kg.offset_commit(ca, g, {"gt": [(0, 6, "")]}, generation=2, member_id=me_a),
             {("gt", 0): kg.REBALANCE_IN_PROGRESS}, "commit in CompletingRebalance")
        # b syncs first and waits for the leader
        box2 = {}
        th = threading.Thread(target=lambda: box2.setdefault("s", kg.sync_group(cb, g, 2, me_b, [])))
        th.start()
        time.sleep(0.2)
        h.check("s" not in box2, "the follower's sync did not wait for the leader")
        asg_a, asg_b = kg.assignment({"gt": [0, 1]}), kg.assignment({"gt": [2]})
        sa = kg.sync_group(ca, g, 2, me_a, [(me_a, asg_a), (me_b, asg_b)])
        th.join(h.bound(10))
        h.eq((sa["error_code"], sa["assignment"]), (0, asg_a), "leader's sync")
        h.eq((box2["s"]["error_code"], kg.parse_assignment(box2["s"]["assignment"])), (0, {"gt": [2]}),
             "follower's sync")
        h.eq(kg.offset_commit(cb, g, {"gt": [(2, 7, "")]}, generation=2, member_id=me_b), {("gt", 2): 0},
             "commit in Stable")
        # a leaves with LeaveGroup v1: b is told to rejoin and leads
        err, _ = kg.leave_group(ca, g, member_id=me_a, version=1)
        h.eq(err, 0, "LeaveGroup v1")
        h.eq(kg.heartbeat(cb, g, 2, me_b), kg.REBALANCE_IN_PROGRESS, "heartbeat after a left")
        rb = kg.join_group(cb, g, member_id=me_b, protocols=[("range", meta)], session_ms=10000, rebalance_ms=10000)
        h.eq((rb["error_code"], rb["generation_id"], rb["leader"]), (0, 3, me_b), "b alone leads generation 3")
        # a group with members cannot be deleted
        h.eq(kg.delete_groups(ca, [g]), {g: kg.NON_EMPTY_GROUP}, "DeleteGroups of a live group")
    finally:
        ca.close()
        cb.close()


@suite.case
def static_member_fencing():
    g = "raw-static"
    ensure_coordinator(g)
    meta = kg.subscription(["gt"])
    c = conn()
    try:
        # static members get their id at once (no MEMBER_ID_REQUIRED)
        a = join_until_loaded(c, g, protocols=[("range", meta)], instance_id="inst-1", version=5)
        h.eq(a["error_code"], 0, "static join")
        h.check(a["member_id"].startswith("inst-1-"), "static member id from the instance id: %r", a["member_id"])
        old = a["member_id"]
        asg = kg.assignment({"gt": [0, 1, 2]})
        h.eq(kg.sync_group(c, g, 1, old, [(old, asg)], instance_id="inst-1")["error_code"], 0, "sync")
        # the instance comes back with no member id: same generation,
        # same assignment, the old id fenced
        b = kg.join_group(c, g, protocols=[("range", meta)], instance_id="inst-1", version=5)
        h.eq((b["error_code"], b["generation_id"], b["leader"]), (0, 1, old), "static rejoin answer")
        new = b["member_id"]
        h.check(new != old, "a new member id")
        s = kg.sync_group(c, g, 1, new, [], instance_id="inst-1")
        h.eq((s["error_code"], s["assignment"]), (0, asg), "the static member's assignment kept")
        h.eq(kg.heartbeat(c, g, 1, old, instance_id="inst-1"), kg.FENCED_INSTANCE_ID, "old id fenced")
        h.eq(kg.heartbeat(c, g, 1, new, instance_id="inst-1"), 0, "new id heartbeats")
        d = kg.describe_groups(c, [g])[0]
        h.eq((d["state"], [(m["member_id"], m["group_instance_id"]) for m in d["members"]]),
             ("Stable", [(new, "inst-1")]), "described")
        # an admin removes it by instance id
        err, ms = kg.leave_group(c, g, members=[("", "inst-1")], version=3)
        h.eq((err, ms), (0, [("", "inst-1", 0)]), "LeaveGroup by instance id")
        h.eq(kg.describe_groups(c, [g])[0]["state"], "Empty", "state after the removal")
    finally:
        c.close()


@suite.case
def join_errors():
    g = "raw-errors"
    ensure_coordinator(g)
    c = conn()
    try:
        r = join_until_loaded(c, g, session_ms=10, version=5)
        h.eq(r["error_code"], kg.INVALID_SESSION_TIMEOUT, "session timeout below group.min.session.timeout.ms")
        r = kg.join_group(c, "", version=5)
        h.eq(r["error_code"], kg.INVALID_GROUP_ID, "empty group id")
        r = kg.join_group(c, g, member_id="made-up", version=5)
        h.eq(r["error_code"], kg.UNKNOWN_MEMBER_ID, "a member id the group never gave")
        r = kg.join_group(c, g, protocols=[], version=3)
        h.eq(r["error_code"], kg.INCONSISTENT_GROUP_PROTOCOL, "no protocols")
        s = kg.sync_group(c, "nope", 1, "x", [])
        h.eq(s["error_code"], kg.UNKNOWN_MEMBER_ID, "SyncGroup of an unknown group")
    finally:
        c.close()


@suite.case
def commit_and_fetch_offsets():
    g = "raw-offsets"
    ensure_coordinator(g)
    c = conn()
    try:
        meta = "m\u00e9ta \u2603 " + "x" * 100
        got = None
        deadline = time.monotonic() + h.bound(10)
        while True:
            got = kg.offset_commit(c, g, {"gt": [(0, 10, meta), (1, 20, None), (2, 30, "")]})
            if got.get(("gt", 0)) != kg.COORDINATOR_LOAD_IN_PROGRESS or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        h.eq(got, {("gt", 0): 0, ("gt", 1): 0, ("gt", 2): 0}, "OffsetCommit v2 (simple group)")
        top, offs = kg.offset_fetch(c, g, {"gt": [0, 1, 2], "other": [0]})
        h.eq(offs, {("gt", 0): (10, meta, 0), ("gt", 1): (20, "", 0), ("gt", 2): (30, "", 0),
                    ("other", 0): (-1, "", 0)}, "OffsetFetch v1")
        top, offs = kg.offset_fetch(c, g, None, version=5)
        h.eq((top, sorted(offs)), (0, [("gt", 0), ("gt", 1), ("gt", 2)]), "OffsetFetch v5 of all topics")
        # v7 (leader epoch field) and v1 agree
        h.eq(kg.offset_commit(c, g, {"gt": [(0, 11, meta)]}, version=7), {("gt", 0): 0}, "OffsetCommit v7")
        top, offs = kg.offset_fetch(c, g, {"gt": [0]}, version=5)
        h.eq(offs[("gt", 0)], (11, meta, 0), "after the v7 commit")
        # errors
        big = "z" * 4097
        h.eq(kg.offset_commit(c, g, {"gt": [(0, 12, big), (1, 21, "ok")]}),
             {("gt", 0): kg.OFFSET_METADATA_TOO_LARGE, ("gt", 1): 0}, "metadata over offset.metadata.max.bytes")
        h.eq(kg.offset_commit(c, g, {"gone": [(0, 1, "")], "gt": [(9, 1, "")]}),
             {("gone", 0): kg.UNKNOWN_TOPIC_OR_PARTITION, ("gt", 9): kg.UNKNOWN_TOPIC_OR_PARTITION},
             "unknown topics and partitions")
        h.eq(kg.offset_commit(c, "never-joined", {"gt": [(0, 1, "")]}, generation=3, member_id="m"),
             {("gt", 0): kg.ILLEGAL_GENERATION}, "a generation for a group that does not exist (v2)")
        h.eq(kg.offset_commit(c, "", {"gt": [(0, 1, "")]}), {("gt", 0): kg.INVALID_GROUP_ID}, "empty group id")
        # OffsetDelete on an empty (simple) group
        err, res = kg.offset_delete(c, g, {"gt": [1, 2]})
        h.eq((err, res), (0, {("gt", 1): 0, ("gt", 2): 0}), "OffsetDelete")
        top, offs = kg.offset_fetch(c, g, {"gt": [0, 1, 2]})
        h.eq([offs[("gt", p)][0] for p in range(3)], [11, -1, -1], "offsets after OffsetDelete")
        err, _ = kg.offset_delete(c, "no-such-group", {"gt": [0]})
        h.eq(err, kg.GROUP_ID_NOT_FOUND, "OffsetDelete of an unknown group")
    finally:
        c.close()


@suite.case
def delete_groups():
    g = "raw-del"
    ensure_coordinator(g)
    c = conn()
    try:
        deadline = time.monotonic() + h.bound(10)
        while kg.offset_commit(c, g, {"gt": [(0, 3, "x")]}) != {("gt", 0): 0}:
            h.check(time.monotonic() < deadline, "commit never succeeded")
            time.sleep(0.05)
        h.eq(kg.delete_groups(c, [g, "raw-never"]), {g: 0, "raw-never": kg.GROUP_ID_NOT_FOUND}, "DeleteGroups")
        top, offs = kg.offset_fetch(c, g, {"gt": [0]})
        h.eq(offs[("gt", 0)], (-1, "", 0), "offsets of a deleted group")
        d = kg.describe_groups(c, [g])[0]
        h.eq((d["error_code"], d["state"]), (0, "Dead"), "a deleted group describes as Dead")
    finally:
        c.close()


def raw_records(topic_partition):
    """(key version, key fields, value or None) of every record in
    __consumer_offsets-N, read with Fetch v4."""
    out = []
    c = conn()
    try:
        data = kwire.fetch_v4(c, "__consumer_offsets", topic_partition, 0, max_bytes=8 << 20)["records"] or b""
    finally:
        c.close()
    for rec in kwire.parse_batches(data):
        out.append((rec["key"], rec["value"]))
    return out


def partition_for(group, n=10):
    hsh = 0
    for cu in struct.unpack(">%dH" % (len(group.encode("utf-16-be")) // 2), group.encode("utf-16-be")):
        hsh = (31 * hsh + cu) & 0xFFFFFFFF
    if hsh >= 1 << 31:
        hsh -= 1 << 32
    return (0 if hsh == -(1 << 31) else abs(hsh)) % n


@suite.case
def records_in_kafka_format():
    g = "raw-format"
    ensure_coordinator(g)
    c = conn()
    try:
        deadline = time.monotonic() + h.bound(10)
        while kg.offset_commit(c, g, {"gt": [(1, 77, "md")]}) != {("gt", 1): 0}:
            h.check(time.monotonic() < deadline, "commit never succeeded")
            time.sleep(0.05)
        meta = kg.subscription(["gt"])
        a = join_new(c, g, protocols=[("range", meta)])
        kg.sync_group(c, g, 1, a["member_id"], [(a["member_id"], b"ASSIGN")])
    finally:
        c.close()
    recs = raw_records(partition_for(g))
    mine = [(k, v) for k, v in recs if g.encode() in k]
    # OffsetCommitKey v1: version, group, topic, partition
    key = struct.pack(">h", 1) + struct.pack(">h", len(g)) + g.encode() + struct.pack(">h", 2) + b"gt" + \
        struct.pack(">i", 1)
    offs = [v for k, v in mine if k == key]
    h.eq(len(offs), 1, "offset records of %s" % g)
    r = kwire.R(offs[0])
    h.eq(r.i16(), 3, "OffsetCommitValue version")
    h.eq((r.i64(), r.i32(), r.string()), (77, -1, "md"), "OffsetCommitValue fields")
    # GroupMetadataKey v2 with GroupMetadataValue v3
    gkey = struct.pack(">h", 2) + struct.pack(">h", len(g)) + g.encode()
    vals = [v for k, v in mine if k == gkey]
    h.check(vals, "no GroupMetadata record for %s in %s", g, [k for k, _ in recs])
    r = kwire.R(vals[-1])
    h.eq(r.i16(), 3, "GroupMetadataValue version")
    h.eq((r.string(), r.i32(), r.string(), r.string()), ("consumer", 1, "range", a["member_id"]),
         "protocol type, generation, protocol, leader")
    r.i64()
    members = r.array(lambda r: (r.string(), r.string(), r.string(), r.string(), r.i32(), r.i32(), r.bytes_(),
                                 r.bytes_()))
    h.eq([(m[0], m[2], m[3], m[6], m[7]) for m in members],
         [(a["member_id"], "samsa-interop", "/127.0.0.1", meta, b"ASSIGN")], "stored member")


@suite.case
def offsets_and_groups_survive_restart():
    g = "raw-restart"
    ensure_coordinator(g)
    c = conn()
    meta = kg.subscription(["gt"])
    try:
        a = join_new(c, g, protocols=[("range", meta)], session_ms=30000)
        me = a["member_id"]
        kg.sync_group(c, g, 1, me, [(me, b"A")])
        h.eq(kg.offset_commit(c, g, {"gt": [(0, 100, "before restart")]}, generation=1, member_id=me),
             {("gt", 0): 0}, "commit")
    finally:
        c.close()
    srv.restart()
    ensure_coordinator(g)
    c = conn()
    try:
        deadline = time.monotonic() + h.bound(10)
        while True:
            top, offs = kg.offset_fetch(c, g, {"gt": [0]})
            if offs[("gt", 0)][2] != kg.COORDINATOR_LOAD_IN_PROGRESS or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        h.eq(offs[("gt", 0)], (100, "before restart", 0), "offset after the restart")
        # a Stable group keeps its generation and member across the restart
        h.eq(kg.heartbeat(c, g, 1, me), 0, "heartbeat of the member after the restart")
        s = kg.sync_group(c, g, 1, me, [])
        h.eq((s["error_code"], s["assignment"]), (0, b"A"), "assignment after the restart")
        d = kg.describe_groups(c, [g])[0]
        h.eq((d["state"], [m["member_id"] for m in d["members"]]), ("Stable", [me]), "described after the restart")
    finally:
        c.close()


suite.run(setup)
