"""KIP-848 consumer groups (ConsumerGroupHeartbeat, ConsumerGroupDescribe)
with @platformatic/kafka 1.35.0 in groupProtocol 'consumer'
(js/groups_kip848.mjs), checked through raw ConsumerGroupDescribe /
ListGroups / OffsetCommit v9 (below, on kwire) and confluent-kafka 1.7.

- Raw protocol: a join (epoch 0) gets a member epoch and the whole topic;
  a greater epoch is FENCED_MEMBER_EPOCH (110), an unknown member
  UNKNOWN_MEMBER_ID (25), an unknown assignor UNSUPPORTED_ASSIGNOR (112),
  a v1 join without a member id INVALID_REQUEST (42), a regex that does
  not compile INVALID_REGULAR_EXPRESSION (128); a v1 regex subscription
  gets the topics whose whole name matches; OffsetCommit v9 with an
  old epoch is STALE_MEMBER_EPOCH (113) and with the current one NONE;
  a non-empty classic group used with the new protocol is
  GROUP_ID_NOT_FOUND (69) and JoinGroup on a consumer group with
  members INCONSISTENT_GROUP_PROTOCOL (23); ListGroups v5 shows type
  "consumer"; DescribeGroups v4 describes it as Dead (Kafka's answer
  below v6 for a group that is not classic); DeleteGroups of a group with
  members NON_EMPTY_GROUP (68);
  leaving (epoch -1) answers epoch -1 and empties the group.
- Members over a 6-partition topic with the default 'uniform' assignor:
  one member (all six), a second (3/3), a third (2/2/2), the second
  leaves (3/3), with the exact partitions the assignor gives (sticky:
  revoked partitions move only after their owner let them go, epochs
  settle on the assignment epoch); every record of every phase is read
  exactly once across the members, each committed right after reading.
- The offsets those members committed are read back by a classic
  client (confluent-kafka committed()).
- A server restart: a group whose two members died without leaving comes
  back from __consumer_offsets exactly as it was (epochs, members, their
  assignments and targets); a member heartbeating after the restart keeps
  its epoch and partitions; once the dead members' sessions end, a new
  member takes all partitions and resumes from the committed offsets,
  reading exactly the records produced after the restart."""
# limit: 240
import json
import os
import queue
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness as h  # noqa: E402
import kgroups as kg  # noqa: E402
import kwire  # noqa: E402
from kwire import W  # noqa: E402

suite = h.Suite("95_test_groups_kip848", case_limit=90)
srv = None
JS = os.path.join(h.HERE, "js", "groups_kip848.mjs")

INVALID_REQUEST = 42
FENCED_MEMBER_EPOCH = 110
UNSUPPORTED_ASSIGNOR = 112
STALE_MEMBER_EPOCH = 113
INVALID_REGULAR_EXPRESSION = 128


def setup():
    global srv
    srv = h.Server({
        "offsets.topic.num.partitions": "3",
        # members learn about revocations and new partitions by heartbeat
        "group.consumer.heartbeat.interval.ms": "300",
        "group.consumer.min.heartbeat.interval.ms": "300",
        "group.initial.rebalance.delay.ms": "100",
        # members the test kills expire quickly
        "group.consumer.session.timeout.ms": "6000",
        "group.consumer.min.session.timeout.ms": "6000",
    })
    kg.coordinator_port(srv.port, "warm-up", limit=h.bound(10))


# ---------------------------------------------------------------- raw protocol

def heartbeat(group, member_id, epoch, topics=None, owned=None, version=0, rebalance_ms=10000, assignor=None,
              instance_id=None, regex=None):
    """ConsumerGroupHeartbeat (kgroups.consumer_heartbeat), retried while
    the coordinator loads. Returns the decoded answer."""
    deadline = time.monotonic() + h.bound(10)
    while True:
        c = kwire.Conn(srv.port)
        try:
            out = kg.consumer_heartbeat(c, group, member_id, epoch, topics=topics, owned=owned, version=version,
                                        rebalance_ms=rebalance_ms, assignor=assignor, instance_id=instance_id,
                                        regex=regex)
        finally:
            c.close()
        if out["error_code"] != kg.COORDINATOR_LOAD_IN_PROGRESS or time.monotonic() > deadline:
            return out
        time.sleep(0.05)


def describe(group):
    """Raw ConsumerGroupDescribe v0 of one group."""
    c = kwire.Conn(srv.port)
    try:
        return kg.consumer_group_describe(c, group)
    finally:
        c.close()


def offset_commit_v9(group, member_id, epoch, topic, parts):
    """OffsetCommit v9 of {partition: offset}; {partition: error}."""
    c = kwire.Conn(srv.port)
    try:
        return kg.offset_commit_v9(c, group, member_id, epoch, topic, parts)
    finally:
        c.close()


def list_groups_v5():
    w = W().carray([], lambda w, s: w.cstring(s)).carray([], lambda w, s: w.cstring(s)).tags()
    c = kwire.Conn(srv.port)
    try:
        r = c.request(kg.LIST_GROUPS, 5, w.bytes(), flexible=True)
    finally:
        c.close()
    r.i32()
    err = r.i16()

    def g(r):
        x = (r.cstring(), r.cstring(), r.cstring(), r.cstring())
        r.tags()
        return x
    return err, r.carray(g) or []


def topic_id(topic):
    c = kwire.Conn(srv.port)
    try:
        res = kwire.metadata_v12(c, [topic])
    finally:
        c.close()
    for mt in res["topics"]:
        if mt["name"] == topic:
            return mt["topic_id"]
    raise h.Failure("no topic id for %s" % topic)


# ---------------------------------------------------------------- members

class Member:
    """A @platformatic/kafka member (js/groups_kip848.mjs member) whose
    events are read by a thread."""

    def __init__(self, topic, group, client_id):
        argv = [h.NODE, JS, "member", srv.bootstrap,
                json.dumps({"topic": topic, "group": group, "clientId": client_id, "limitMs": 30000})]
        self.name = client_id
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.events = queue.Queue()
        self.records = []
        self.assignment = None
        self.member_id = None
        self.errors = []
        self.lock = threading.Lock()
        self.closed = None
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                if ev.get("event") == "record":
                    self.records.append((ev["partition"], ev["offset"], h.unb64(ev["key"]), h.unb64(ev["value"])))
                elif ev.get("event") == "assignment":
                    self.assignment = ev["assignment"]
                    self.member_id = ev["memberId"]
                elif ev.get("event") == "error":
                    self.errors.append(ev["error"])
                elif ev.get("event") == "closed":
                    self.closed = ev

    def close(self, limit=20.0):
        try:
            self.proc.stdin.write(b"close\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        try:
            self.proc.wait(timeout=h.bound(limit))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise h.Failure("member %s did not close within %.0fs" % (self.name, h.bound(limit)))
        self.t.join(timeout=h.bound(5))
        h.check(self.closed and self.closed.get("ok"), "member %s closed: %s; stderr: %s", self.name, self.closed,
                self.proc.stderr.read().decode("utf-8", "replace")[-2000:])

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def wait_for(what, fn, limit=30.0):
    deadline = time.monotonic() + h.bound(limit)
    last = None
    while time.monotonic() < deadline:
        ok, last = fn()
        if ok:
            return last
        time.sleep(0.1)
    raise h.Failure("%s: not reached within %.0fs; last: %s" % (what, h.bound(limit), h.short(last, 3000)))


def settled(group, topic, members, want):
    """Waits until the group is Stable with exactly want ({member: [parts]})
    as both the coordinator's assignments and the clients' own."""
    def check():
        d = describe(group)
        by_id = {m["member_id"]: m for m in d["members"]}
        got = {}
        for mem in members:
            with mem.lock:
                mid, cl = mem.member_id, mem.assignment
            dm = by_id.get(mid)
            got[mem.name] = (dm["assignment"].get(topic, []) if dm else None, (cl or {}).get(topic, []))
        ok = (d["error_code"] == 0 and d["state"] == "Stable" and len(d["members"]) == len(members) and
              all(got[m.name] == (want[m.name], want[m.name]) for m in members) and
              all(m["epoch"] == d["assignment_epoch"] and m["assignment"] == m["target"] for m in d["members"]))
        return ok, {"describe": d, "got": got}
    last = wait_for("group %s settles on %s" % (group, want), check)
    # @platformatic/kafka delivers what a fetch sent before a revocation
    # returns (maxWaitTime 100 ms) even for a partition it no longer
    # owns; the Java client drops it. Records produced within that window
    # would be read by the old and the new owner (seen once in CI), so
    # the next produce waits until such a fetch has come back.
    time.sleep(0.5)
    return last


def java_map_order(keys):
    """The iteration order of a java.util.HashMap<String, ...> that got
    keys put in this order (few keys: a 16-slot table): by bucket of the
    spread String.hashCode, then insertion order."""
    def bucket(k):
        b = k.encode("utf-16-be")
        h = 0
        for i in range(0, len(b), 2):
            h = (31 * h + int.from_bytes(b[i:i + 2], "big")) & 0xffffffff
        return (h ^ (h >> 16)) & 15
    return sorted(keys, key=bucket)


def produce(topic, n_per_part, start, parts=6):
    recs = [{"key": b"k%d-%d" % (p, i), "value": b"v%d-%d" % (p, i), "headers": [], "partition": p}
            for p in range(parts) for i in range(start, start + n_per_part)]
    out = h.ck_produce(srv.bootstrap, topic, recs)
    return sorted((r["partition"], r["offset"], r["key"], r["value"]) for r in out)


def read_exactly(members, want, since, what):
    """Waits until the members' records after index since[i] are exactly
    want (no record twice, none missing)."""
    def check():
        got = []
        for m, s in zip(members, since):
            with m.lock:
                got += m.records[s:]
        return sorted(got) == want and len(got) == len(want), (len(got), len(want))
    try:
        wait_for(what, check)
    except h.Failure:
        got = []
        for m, s in zip(members, since):
            with m.lock:
                got += m.records[s:]
        dup = sorted(set(r for r in got if got.count(r) > 1))
        missing = sorted(set(want) - set(got))
        raise h.Failure("%s: %d read for %d produced; duplicates %s; missing %s" % (
            what, len(got), len(want), h.short(dup, 500), h.short(missing, 500)))
    # nothing else arrives afterwards
    time.sleep(0.5)
    got = []
    for m, s in zip(members, since):
        with m.lock:
            got += m.records[s:]
    h.eq(sorted(got), want, what + " (after a pause)")


def marks(members):
    out = []
    for m in members:
        with m.lock:
            out.append(len(m.records))
    return out


# ---------------------------------------------------------------- cases

@suite.case
def raw_protocol():
    topic, group = "kip848-raw", "kip848-raw-g"
    h.ck_create_topic(srv.bootstrap, topic, 2, 1)
    tid = topic_id(topic)
    r = heartbeat(group, "", 0, topics=[topic], owned=[], version=1)
    h.eq((r["error_code"], r["error_message"]), (INVALID_REQUEST, "MemberId can't be empty."), "v1 join without id")
    r = heartbeat(group, "m-1", 0, topics=None, owned=[], version=1, regex="kip848-(")
    h.eq(r["error_code"], INVALID_REGULAR_EXPRESSION, "a regex that does not compile")
    # a regex subscription (v1): whole topic names, internal topics never
    r = heartbeat(group + "-re", "re-1", 0, topics=None, owned=[], version=1, regex="kip848-r.w|__.*")
    h.eq((r["error_code"], r["member_epoch"], r["assignment"]), (0, 1, {tid: [0, 1]}), "regex join")
    d = describe(group + "-re")
    h.eq((d["members"][0]["regex"], d["members"][0]["topics"], d["members"][0]["assignment"]),
         ("kip848-r.w|__.*", [], {topic: [0, 1]}), "regex member described")
    r = heartbeat(group + "-re", "re-1", -1, owned=[], version=1)
    h.eq(r["error_code"], 0, "regex member leaves")
    r = heartbeat(group, "", 0, topics=[topic], owned=[], assignor="sticky")
    h.eq(r["error_code"], UNSUPPORTED_ASSIGNOR, "unknown assignor")
    r = heartbeat(group, "", 0, topics=[topic], owned=[])
    h.eq(r["error_code"], 0, "join: %s" % r)
    mid, epoch = r["member_id"], r["member_epoch"]
    h.check(len(mid) == 22, "member id %r is a 22-char base64 uuid", mid)
    h.eq((epoch, r["heartbeat_interval_ms"], r["assignment"]), (1, 300, {tid: [0, 1]}), "join answer")
    r = heartbeat(group, mid, epoch + 5, owned=[(tid, [0, 1])])
    h.eq(r["error_code"], FENCED_MEMBER_EPOCH, "greater epoch")
    r = heartbeat(group, "nobody", 1, owned=[])
    h.eq(r["error_code"], kg.UNKNOWN_MEMBER_ID, "unknown member")
    r = heartbeat(group, mid, epoch, owned=[(tid, [0, 1])])
    h.eq((r["error_code"], r["member_epoch"], r["assignment"]), (0, 1, None), "steady heartbeat (not a full request: no assignment)")
    # offsets of a member: its epoch must be the current one
    h.eq(offset_commit_v9(group, mid, epoch - 1, topic, {0: 5}), {0: STALE_MEMBER_EPOCH}, "stale commit")
    h.eq(offset_commit_v9(group, mid, epoch, topic, {0: 5}), {0: 0}, "commit")
    err, groups = list_groups_v5()
    h.eq(err, 0, "ListGroups")
    h.check((group, "consumer", "Stable", "consumer") in groups, "ListGroups shows %s as a consumer group: %s",
            group, groups)
    c = kwire.Conn(srv.port)
    try:
        d = kg.describe_groups(c, [group], version=4)[0]
        h.eq((d["error_code"], d["state"], d["protocol_type"], d["members"]), (0, "Dead", "", []),
             "DescribeGroups v4 of a consumer group (not a classic group)")
        h.eq(kg.delete_groups(c, [group]), {group: kg.NON_EMPTY_GROUP}, "DeleteGroups with a member")
        j = kg.join_group(c, group, protocols=(("range", kg.subscription([topic])),))
        h.eq(j["error_code"], kg.INCONSISTENT_GROUP_PROTOCOL, "classic JoinGroup on a consumer group")
        # a classic group with a member is not a consumer group
        j = kg.join_group(c, group + "-classic", protocols=(("range", kg.subscription([topic])),))
        if j["error_code"] == kg.MEMBER_ID_REQUIRED:
            j = kg.join_group(c, group + "-classic", member_id=j["member_id"],
                              protocols=(("range", kg.subscription([topic])),))
        h.eq(j["error_code"], 0, "classic join")
    finally:
        c.close()
    r = heartbeat(group + "-classic", "", 0, topics=[topic], owned=[])
    h.eq(r["error_code"], kg.GROUP_ID_NOT_FOUND, "new protocol on a classic group")
    d = describe(group + "-classic")
    h.eq(d["error_code"], kg.GROUP_ID_NOT_FOUND, "ConsumerGroupDescribe of a classic group")
    r = heartbeat(group, mid, -1, owned=[])
    h.eq((r["error_code"], r["member_id"], r["member_epoch"]), (0, mid, -1), "leave")
    d = describe(group)
    h.eq((d["error_code"], d["state"], d["members"], d["epoch"]), (0, "Empty", [], 2), "after the leave")
    c = kwire.Conn(srv.port)
    try:
        top, offs = kg.offset_fetch(c, group, {topic: [0]}, version=2)
        h.eq(offs[(topic, 0)][0], 5, "offset committed by the member")
        h.eq(kg.delete_groups(c, [group]), {group: 0}, "DeleteGroups once empty")
    finally:
        c.close()
    d = describe(group)
    h.eq(d["error_code"], kg.GROUP_ID_NOT_FOUND, "deleted")


@suite.case(limit=150)
def members_join_and_leave():
    topic, group = "kip848-six", "kip848-six-g"
    h.ck_create_topic(srv.bootstrap, topic, 6, 1)
    want = produce(topic, 10, 0)
    a = Member(topic, group, "member-a")
    members = [a]
    try:
        settled(group, topic, [a], {"member-a": [0, 1, 2, 3, 4, 5]})
        read_exactly([a], want, [0], "one member reads all 60")
        b = Member(topic, group, "member-b")
        members.append(b)
        settled(group, topic, [a, b], {"member-a": [0, 1, 2], "member-b": [3, 4, 5]})
        since = marks([a, b])
        want = produce(topic, 10, 10)
        read_exactly([a, b], want, since, "two members")
        c = Member(topic, group, "member-c")
        members.append(c)
        settled(group, topic, [a, b, c], {"member-a": [0, 1], "member-b": [3, 4], "member-c": [2, 5]})
        since = marks([a, b, c])
        want = produce(topic, 10, 20)
        read_exactly([a, b, c], want, since, "three members")
        b.close()
        members.remove(b)
        # b's 3 and 4 go to a and c in the order Kafka's uniform assignor
        # walks members: that of a java.util.HashMap of their member ids
        with a.lock, c.lock:
            first_a = java_map_order([a.member_id, c.member_id])[0] == a.member_id
        settled(group, topic, [a, c], {"member-a": [0, 1, 3] if first_a else [0, 1, 4],
                                       "member-c": [2, 4, 5] if first_a else [2, 3, 5]})
        since = marks([a, c])
        want = produce(topic, 10, 30)
        read_exactly([a, c], want, since, "after member-b left")
        d = describe(group)
        h.eq((d["assignor"], sorted(m["client_id"] for m in d["members"])), ("uniform", ["member-a", "member-c"]),
             "assignor and members")
        # the operator's view: samsactl groups describe asks
        # ConsumerGroupDescribe for a group DescribeGroups calls Dead
        r = subprocess.run([h.SAMSACTL_BIN, "groups", "describe", "--group", group, "--state", "--members",
                            "--bootstrap-server", srv.bootstrap], capture_output=True, text=True, timeout=h.bound(30))
        h.eq(r.returncode, 0, "samsactl groups describe exit status (stderr %r)" % r.stderr)
        rows = [l.split() for l in r.stdout.splitlines() if l.startswith(group + " ")]
        h.eq([(x[-2], x[-1]) for x in rows[:1]], [("Stable", "2")], "samsactl: state and member count")
        h.eq(sorted((x[2], x[-2], x[-1]) for x in rows[1:]),
             [("member-a", "3", "%s(0,1,%d)" % (topic, 3 if first_a else 4)),
              ("member-c", "3", "%s(2,%s,5)" % (topic, 4 if first_a else 3))],
             "samsactl: members and their assignments")
        for m in (a, c):
            m.close()
            members.remove(m)
        d = describe(group)
        h.eq((d["state"], d["members"]), ("Empty", []), "everyone left")
    finally:
        for m in members:
            m.kill()
    # the offsets the KIP-848 members committed, read by a classic client
    from confluent_kafka import Consumer, TopicPartition
    cons = Consumer(h.ck_conf(srv.bootstrap, **{"group.id": group, "enable.auto.commit": False}))
    try:
        got = cons.committed([TopicPartition(topic, p) for p in range(6)], timeout=h.bound(10))
        h.eq([tp.offset for tp in got], [40] * 6, "committed offsets read by confluent-kafka")
    finally:
        cons.close()


@suite.case(limit=150)
def survives_restart():
    topic, group = "kip848-restart", "kip848-restart-g"
    h.ck_create_topic(srv.bootstrap, topic, 6, 1)
    tid = topic_id(topic)
    want = produce(topic, 5, 0)
    a = Member(topic, group, "member-a")
    members = [a]
    try:
        settled(group, topic, [a], {"member-a": [0, 1, 2, 3, 4, 5]})
        b = Member(topic, group, "member-b")
        members.append(b)
        settled(group, topic, [a, b], {"member-a": [0, 1, 2], "member-b": [3, 4, 5]})
        read_exactly([a, b], want, [0, 0], "before the restart")
        # the members die without leaving: the group keeps them
        for m in (a, b):
            m.kill()
        before = describe(group)
        h.eq((before["state"], len(before["members"])), ("Stable", 2), "before the restart")
        srv.stop()
        srv.start()

        def back():
            d = describe(group)
            return d["error_code"] == 0, d
        after = wait_for("group loaded back", back)
        key = lambda d: (d["state"], d["epoch"], d["assignment_epoch"], d["assignor"], sorted(  # noqa: E731
            (m["member_id"], m["epoch"], json.dumps(m["assignment"], sort_keys=True),
             json.dumps(m["target"], sort_keys=True), m["client_id"], m["topics"])
            for m in d["members"]))
        h.eq(key(after), key(before), "the group after the restart")
        # a member carries on after the restart with its epoch
        ma = [m for m in after["members"] if m["client_id"] == "member-a"][0]
        r = heartbeat(group, ma["member_id"], ma["epoch"], topics=[topic], owned=[(tid, [0, 1, 2])])
        h.eq((r["error_code"], r["member_epoch"], r["assignment"]), (0, ma["epoch"], {tid: [0, 1, 2]}),
             "member-a's heartbeat after the restart")
        # a new member resumes from the committed offsets once the dead
        # ones' sessions (6 s) ended
        c = Member(topic, group, "member-c")
        members.append(c)
        settled(group, topic, [c], {"member-c": [0, 1, 2, 3, 4, 5]})
        want = produce(topic, 5, 5)
        read_exactly([c], want, [0], "after the restart, from the committed offsets")
        c.close()
        members.remove(c)
    finally:
        for m in members:
            m.kill()


if __name__ == "__main__":
    suite.run(setup)
