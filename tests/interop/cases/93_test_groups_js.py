"""Consumer groups with the Node clients (js/groups_js.mjs: kafkajs 2.2.4
and @platformatic/kafka 1.35.0) and kafka-python 2.0.2, cross-checked
with confluent-kafka 1.7 / librdkafka 2.0.2 and raw OffsetFetch /
DescribeGroups (kgroups.py).

@platformatic/kafka is configured with groupProtocol 'classic' (its
JoinGroup/SyncGroup/Heartbeat consumer) here; its KIP-848 'consumer'
protocol (ConsumerGroupHeartbeat) is tested by 95_test_groups_kip848.py.

- One group resumed by each client in turn from another client's commits:
  kafkajs -> kafka-python -> @platformatic/kafka -> kafkajs, each reading
  exactly the records after the previous commits (keys, values, offsets),
  each commit read back by a different client (raw OffsetFetch,
  confluent-kafka committed(), kafkajs fetchOffsets, platformatic
  listConsumerGroupOffsets, kafka-python list_consumer_group_offsets),
  commit metadata included.
- A live group of a @platformatic/kafka and a kafka-python member (both
  'roundrobin'): one partition each, described alike by kafkajs,
  platformatic, kafka-python and raw DescribeGroups (state, protocol,
  member ids, client ids, assignments); kafkajs (whose only protocol is
  RoundRobinAssigner) is refused with INCONSISTENT_GROUP_PROTOCOL (23);
  deleting the group is refused with NON_EMPTY_GROUP (68) by all three
  admins, platformatic's alterConsumerGroupOffsets with UNKNOWN_MEMBER_ID
  (25) and its deleteConsumerGroupOffsets with GROUP_SUBSCRIBED_TO_TOPIC
  (86); the remaining member takes both partitions when kafka-python
  leaves; once empty it is deleted (kafka-python), is gone from every
  list, describes as Dead, and a second delete and an unknown group get
  GROUP_ID_NOT_FOUND (69) from each admin.
- Two kafkajs members split a topic, each reading and committing exactly
  its partition's records; when one leaves, the other takes over both.
- Offsets moved by admins, seen by a new consumer of another client:
  kafkajs setOffsets -> kafka-python starts at that offset; platformatic
  alterConsumerGroupOffsets -> kafkajs starts there; platformatic
  deleteConsumerGroupOffsets -> OffsetFetch -1; kafkajs resetOffsets
  (earliest) commits the logical offset -2, which librdkafka (with
  auto.offset.reset=latest) takes as "from the beginning".

kafkajs's setOffsets/resetOffsets join the group with a paused consumer
and wait for one fetch cycle, which kafkajs sleeps out for its default
maxWaitTime (5 s) each: client-side time, not the server's."""
# limit: 150
import json
import os
import select
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness as h  # noqa: E402
import kgroups as kg  # noqa: E402
import kwire  # noqa: E402

suite = h.Suite("93_test_groups_js", case_limit=60)
srv = None
GROUPS_JS = os.path.join(h.HERE, "js", "groups_js.mjs")
KAFKAJS_CLIENT = "samsa-interop-kafkajs"
PLAT_CLIENT = "samsa-interop-platformatic"


def setup():
    global srv
    srv = h.Server({"group.initial.rebalance.delay.ms": "200", "offsets.topic.num.partitions": "5"})
    # the first FindCoordinator creates __consumer_offsets: do it once here
    kg.coordinator_port(srv.port, "warm-up", limit=h.bound(10))


# ---------------------------------------------------------------- helpers

def produce(topic, per_partition, start, partitions=2):
    """per_partition records to each partition, keys k<p>-<i> and values
    v<p>-<i> for i from start; returns {partition: [(offset, key, value)]}
    as delivered."""
    recs = []
    for p in range(partitions):
        for i in range(start, start + per_partition):
            recs.append({"key": b"k%d-%d" % (p, i), "value": b"v%d-%d" % (p, i), "headers": [], "partition": p})
    out = {}
    for r in h.ck_produce(srv.bootstrap, topic, recs):
        out.setdefault(r["partition"], []).append((r["offset"], r["key"], r["value"]))
    return out


def want(spec):
    """[(partition, offset, i)] -> sorted (partition, offset, key, value),
    with the keys/values produce() wrote for index i."""
    return sorted((p, o, b"k%d-%d" % (p, i), b"v%d-%d" % (p, i)) for p, o, i in spec)


def js(op, args, limit=45.0):
    """Runs js/groups_js.mjs OP; returns its JSON result (ok checked)."""
    argv = [h.NODE, GROUPS_JS, op, srv.bootstrap, json.dumps(args)]
    p = h.run(argv, limit=limit, check_rc=False)
    lines = p.stdout.decode("utf-8", "replace").strip().splitlines()
    try:
        res = json.loads(lines[-1])
    except (ValueError, IndexError):
        raise h.Failure("groups_js %s exited %d without a JSON result; stdout:\n%s\nstderr:\n%s" % (
            op, p.returncode, "\n".join(lines[-20:]), p.stderr.decode("utf-8", "replace")[-3000:]))
    if p.returncode != 0 or not res.get("ok"):
        raise h.Failure("groups_js %s failed (exit %d): %s\nstderr:\n%s" % (
            op, p.returncode, res.get("error"), p.stderr.decode("utf-8", "replace")[-2000:]))
    return res


def js_records(res):
    return sorted((r["partition"], r["offset"], h.unb64(r["key"]), h.unb64(r["value"])) for r in res["records"])


def admin(op, *actions):
    """kafkajs-admin / plat-admin with [name, args] actions; returns the
    per-action results."""
    res = js(op, {"actions": [list(a) for a in actions]})
    h.eq(len(res["results"]), len(actions), "%s: number of results" % op)
    return res["results"]


def value(r, what):
    """The value of an admin action that must have succeeded."""
    if not r["ok"]:
        raise h.Failure("%s failed: %s" % (what, r["error"]))
    return r["value"]


def refused(r, code, what, type_name=None):
    """An admin action that must have failed with exactly Kafka error `code`."""
    if r["ok"]:
        raise h.Failure("%s: expected error %d, but it succeeded: %s" % (what, code, h.short(r["value"])))
    h.eq(r["codes"], [code], "%s: error codes (%s)" % (what, r["error"]))
    if type_name:
        h.check(type_name in r["types"], "%s: %s not among the error types %s", what, type_name, r["types"])


def raw_committed(group, topic, partitions=(0, 1)):
    """{partition: (offset, metadata)} by raw OffsetFetch v5."""
    c = kwire.Conn(srv.port, timeout=h.bound(10))
    try:
        top, offs = kg.offset_fetch(c, group, {topic: list(partitions)}, version=5)
    finally:
        c.close()
    h.eq(top, 0, "OffsetFetch top-level error")
    for (t, p), (_, _, err) in offs.items():
        h.eq(err, 0, "OffsetFetch error for %s-%d" % (t, p))
    return {p: (offs[(topic, p)][0], offs[(topic, p)][1]) for p in partitions}


def raw_describe(group):
    c = kwire.Conn(srv.port, timeout=h.bound(10))
    try:
        return kg.describe_groups(c, [group])[0]
    finally:
        c.close()


def ck_committed(group, topic, partitions=(0, 1)):
    """Committed offsets as confluent-kafka reads them (no join)."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer(h.ck_conf(srv.bootstrap, **{"group.id": group, "enable.auto.commit": False}))
    try:
        res = c.committed([TopicPartition(topic, p) for p in partitions], timeout=h.bound(10))
        return {tp.partition: tp.offset for tp in res}
    finally:
        c.close()


def kp_consumer(group, topic, client_id="kp-groups", reset="earliest"):
    from kafka import KafkaConsumer
    return KafkaConsumer(topic, bootstrap_servers=srv.bootstrap, group_id=group, client_id=client_id,
                         enable_auto_commit=False, auto_offset_reset=reset,
                         api_version_auto_timeout_ms=int(h.bound(10000)),
                         request_timeout_ms=int(h.bound(30000)), fetch_max_wait_ms=100,
                         session_timeout_ms=10000, heartbeat_interval_ms=500)


def kp_read(c, count, limit=20.0, linger=0.5):
    """Polls until `count` records, then `linger` seconds more (anything
    extra would show); sorted (partition, offset, key, value)."""
    got = []
    deadline = time.monotonic() + h.bound(limit)
    while len(got) < count:
        if time.monotonic() > deadline:
            raise h.Failure("kafka-python group consumer: %d of %d records after %.0fs: %s"
                            % (len(got), count, h.bound(limit), sorted(got)))
        for _tp, msgs in c.poll(timeout_ms=200).items():
            got += [(m.partition, m.offset, m.key, m.value) for m in msgs]
    end = time.monotonic() + linger
    while time.monotonic() < end:
        for _tp, msgs in c.poll(timeout_ms=100).items():
            got += [(m.partition, m.offset, m.key, m.value) for m in msgs]
    return sorted(got)


def kp_admin():
    from kafka.admin import KafkaAdminClient
    return KafkaAdminClient(bootstrap_servers=srv.bootstrap, client_id="kp-admin",
                            api_version_auto_timeout_ms=int(h.bound(10000)),
                            request_timeout_ms=int(h.bound(15000)))


def kp_offsets(a, group):
    return sorted((tp.topic, tp.partition, om.offset, om.metadata)
                  for tp, om in a.list_consumer_group_offsets(group).items())


def kp_deleted(a, groups):
    """delete_consumer_groups -> {group: errno} (0 for NoError)."""
    return {g: e.errno for g, e in a.delete_consumer_groups(groups)}


class JsMember:
    """A groups_js.mjs consume op with hold: a Node member that stays in
    its group (heartbeating) until stop()."""

    def __init__(self, op, args):
        argv = [h.NODE, GROUPS_JS, op, srv.bootstrap, json.dumps(dict(args, hold=True))]
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.op = op

    def ready(self, limit=30.0):
        deadline = time.monotonic() + h.bound(limit)
        buf = b""
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or self.p.poll() is not None:
                self.kill()
                raise h.Failure("%s member not ready within %.0fs (exit %s); stdout %r; stderr:\n%s" % (
                    self.op, h.bound(limit), self.p.returncode, buf,
                    self.p.stderr.read().decode("utf-8", "replace")[-2000:]))
            r, _, _ = select.select([self.p.stdout], [], [], min(left, 0.2))
            if r:
                chunk = os.read(self.p.stdout.fileno(), 65536)
                if not chunk:
                    continue
                buf += chunk
        line = buf.split(b"\n", 1)[0]
        ev = json.loads(line)
        h.eq(ev.get("event"), "ready", "%s member's first line" % self.op)
        return ev

    def stop(self, limit=30.0):
        try:
            out, err = self.p.communicate(b"stop\n", timeout=h.bound(limit))
        except subprocess.TimeoutExpired:
            self.kill()
            raise h.Failure("%s member did not stop within %.0fs" % (self.op, h.bound(limit)))
        last = out.decode("utf-8", "replace").strip().splitlines()[-1:]
        res = json.loads(last[0]) if last else {}
        if self.p.returncode != 0 or not res.get("ok"):
            raise h.Failure("%s member failed (exit %d): %s\nstderr:\n%s" % (
                self.op, self.p.returncode, res.get("error"), err.decode("utf-8", "replace")[-2000:]))
        return res

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(10)


def wait_describe(group, pred, what, limit=20.0):
    """Raw DescribeGroups until pred(desc) holds."""
    deadline = time.monotonic() + h.bound(limit)
    while True:
        d = raw_describe(group)
        if pred(d):
            return d
        if time.monotonic() > deadline:
            raise h.Failure("%s: not reached within %.0fs; last DescribeGroups: %s"
                            % (what, h.bound(limit), h.short(d)))
        time.sleep(0.1)


def raw_members(d):
    """{member_id: (client_id, {topic: [partitions]})} of a raw describe."""
    return {m["member_id"]: (m["client_id"], {t: sorted(ps) for t, ps in kg.parse_assignment(m["assignment"]).items()})
            for m in d["members"]}


# ---------------------------------------------------------------- cases

@suite.case
def resume_chain_across_clients():
    from kafka import TopicPartition, OffsetAndMetadata
    topic, group = "jchain", "js-chain"
    h.ck_create_topic(srv.bootstrap, topic, 2, 1)

    # 1. kafkajs reads 3 records per partition and commits them
    produce(topic, 3, 0)
    res = js("kafkajs-consume", {"topic": topic, "group": group, "count": 6})
    h.eq(js_records(res), want([(p, i, i) for p in (0, 1) for i in range(3)]), "kafkajs: records read")
    h.eq(res["assignment"], {topic: [0, 1]}, "kafkajs: its assignment")
    h.eq(raw_committed(group, topic), {0: (3, ""), 1: (3, "")}, "kafkajs's commits by raw OffsetFetch")
    h.eq(ck_committed(group, topic), {0: 3, 1: 3}, "kafkajs's commits by confluent-kafka committed()")

    # 2. kafka-python resumes there, commits with metadata, leaving p1's offset 4 uncommitted
    produce(topic, 2, 3)
    c = kp_consumer(group, topic)
    try:
        got = kp_read(c, 4)
        h.eq(got, want([(p, i, i) for p in (0, 1) for i in (3, 4)]), "kafka-python resumed from kafkajs's commits")
        c.commit({TopicPartition(topic, 0): OffsetAndMetadata(5, "kp:0"),
                  TopicPartition(topic, 1): OffsetAndMetadata(4, "kp:1")})
    finally:
        c.close(autocommit=False)
    r = admin("kafkajs-admin", ("fetchOffsets", {"group": group, "topic": topic}))
    h.eq(value(r[0], "kafkajs fetchOffsets"), [[topic, 0, 5, "kp:0"], [topic, 1, 4, "kp:1"]],
         "kafka-python's commits by kafkajs fetchOffsets")
    r = admin("plat-admin", ("listConsumerGroupOffsets", {"group": group}))
    h.eq(value(r[0], "platformatic listConsumerGroupOffsets"), [[topic, 0, 5, "kp:0"], [topic, 1, 4, "kp:1"]],
         "kafka-python's commits by platformatic listConsumerGroupOffsets")

    # 3. platformatic resumes from kafka-python's commits (p1 from 4 again)
    produce(topic, 1, 5)
    res = js("plat-consume", {"topic": topic, "group": group, "count": 3})
    h.eq(js_records(res), want([(0, 5, 5), (1, 4, 4), (1, 5, 5)]), "platformatic resumed from kafka-python's commits")
    a = kp_admin()
    try:
        h.eq(kp_offsets(a, group), [(topic, 0, 6, ""), (topic, 1, 6, "")],
             "platformatic's commits by kafka-python list_consumer_group_offsets")
    finally:
        a.close()

    # 4. kafkajs resumes from platformatic's commits
    produce(topic, 1, 6)
    res = js("kafkajs-consume", {"topic": topic, "group": group, "count": 2, "fromBeginning": False})
    h.eq(js_records(res), want([(0, 6, 6), (1, 6, 6)]), "kafkajs resumed from platformatic's commits")
    h.eq(raw_committed(group, topic), {0: (7, ""), 1: (7, "")}, "kafkajs's last commits by raw OffsetFetch")
    d = raw_describe(group)
    h.eq((d["error_code"], d["state"], d["members"]), (0, "Empty", []), "the group after its last member left")


@suite.case
def live_mixed_group_describe_and_delete():
    topic, group, unknown = "jlive", "js-live", "js-no-such-group"
    h.ck_create_topic(srv.bootstrap, topic, 2, 1)
    plat = JsMember("plat-consume", {"topic": topic, "group": group, "count": 0})
    kc = None
    try:
        ev = plat.ready()
        plat_id = ev["memberId"]
        h.eq(ev["assignment"], [{"topic": topic, "partitions": [0, 1]}], "platformatic alone: its assignment")
        kc = kp_consumer(group, topic, client_id="kp-live")
        deadline = time.monotonic() + h.bound(20)
        while len(kc.assignment()) != 1 and time.monotonic() < deadline:
            kc.poll(timeout_ms=100)
        kp_parts = sorted(tp.partition for tp in kc.assignment())
        h.eq(len(kp_parts), 1, "kafka-python's share of the partitions (%s)" % kp_parts)
        kp_id = kc._coordinator._generation.member_id
        plat_parts = [1 - kp_parts[0]]
        members = {plat_id: (PLAT_CLIENT, {topic: plat_parts}), kp_id: ("kp-live", {topic: kp_parts})}
        d = wait_describe(group, lambda d: d["state"] == "Stable" and raw_members(d) == members,
                          "Stable with one partition each")
        h.eq((d["protocol_type"], d["protocol_data"]), ("consumer", "roundrobin"), "raw DescribeGroups protocol")

        def same(got, state, what):
            h.eq(len(got), 1, "%s: groups" % what)
            g = got[0]
            h.eq((g["groupId"], g["state"], g["protocolType"], g["protocol"]), (group, state, "consumer", "roundrobin"),
                 "%s: group" % what)
            h.eq({m["memberId"]: (m["clientId"], m["assignment"]) for m in g["members"]}, members, "%s: members" % what)
            h.eq([m["topics"] for m in g["members"]], [[topic], [topic]], "%s: subscriptions" % what)

        r = admin("kafkajs-admin", ("describeGroups", {"groups": [group]}), ("deleteGroups", {"groups": [group]}),
                  ("listGroups", {}))
        same(value(r[0], "kafkajs describeGroups"), "Stable", "kafkajs describeGroups")
        refused(r[1], kg.NON_EMPTY_GROUP, "kafkajs deleteGroups of a live group")
        h.check([group, "consumer"] in value(r[2], "kafkajs listGroups"), "kafkajs listGroups lacks %s", group)
        # admin commits and offset deletes are for groups without members
        r = admin("plat-admin", ("describeGroups", {"groups": [group]}), ("deleteGroups", {"groups": [group]}),
                  ("alterConsumerGroupOffsets", {"group": group, "topic": topic, "partitions": [[0, 1]]}),
                  ("deleteConsumerGroupOffsets", {"group": group, "topic": topic, "partitions": [0]}))
        same(value(r[0], "platformatic describeGroups"), "STABLE", "platformatic describeGroups")
        refused(r[1], kg.NON_EMPTY_GROUP, "platformatic deleteGroups of a live group", "NON_EMPTY_GROUP")
        refused(r[2], kg.UNKNOWN_MEMBER_ID, "platformatic alterConsumerGroupOffsets of a live group",
                "UNKNOWN_MEMBER_ID")
        refused(r[3], kg.GROUP_SUBSCRIBED_TO_TOPIC, "platformatic deleteConsumerGroupOffsets of a subscribed topic",
                "GROUP_SUBSCRIBED_TO_TOPIC")
        h.eq(raw_committed(group, topic), {0: (-1, ""), 1: (-1, "")}, "no commits after the refused alter")
        a = kp_admin()
        try:
            g = a.describe_consumer_groups([group])[0]
            h.eq((g.error_code, g.group, g.state, g.protocol_type, g.protocol),
                 (0, group, "Stable", "consumer", "roundrobin"), "kafka-python describe_consumer_groups")
            h.eq({m.member_id: (m.client_id, {t: sorted(ps) for t, ps in m.member_assignment.assignment})
                  for m in g.members}, members, "kafka-python describe_consumer_groups: members")
            h.eq(kp_deleted(a, [group]), {group: kg.NON_EMPTY_GROUP},
                 "kafka-python delete_consumer_groups of a live group")
        finally:
            a.close()

        # kafkajs offers only RoundRobinAssigner: no common protocol
        res = js("kafkajs-join", {"topic": topic, "group": group, "limitMs": 20000})
        h.check(not res["joined"] and res["crash"], "kafkajs joined a group with no common protocol: %s", res)
        h.eq(res["crash"]["codes"], [kg.INCONSISTENT_GROUP_PROTOCOL],
             "kafkajs join refused (%s)" % res["crash"]["error"])
        h.eq(raw_members(raw_describe(group)), members, "members after kafkajs's refused join")

        # kafka-python leaves: platformatic gets both partitions
        kc.close(autocommit=False)
        kc = None
        alone = {plat_id: (PLAT_CLIENT, {topic: [0, 1]})}
        wait_describe(group, lambda d: d["state"] == "Stable" and raw_members(d) == alone,
                      "platformatic alone with both partitions after kafka-python left")
        res = plat.stop()
        h.eq(res["memberId"], plat_id, "platformatic's member id at the end")
    finally:
        if kc is not None:
            kc.close(autocommit=False)
        plat.kill()

    d = raw_describe(group)
    h.eq((d["error_code"], d["state"], d["members"]), (0, "Empty", []), "the group after both left")
    a = kp_admin()
    try:
        h.eq(kp_deleted(a, [group]), {group: 0}, "kafka-python delete_consumer_groups of the empty group")
        h.check(group not in [g for g, _ in a.list_consumer_groups()], "kafka-python still lists %s", group)
        h.eq(kp_deleted(a, [group, unknown]), {group: kg.GROUP_ID_NOT_FOUND, unknown: kg.GROUP_ID_NOT_FOUND},
             "kafka-python delete_consumer_groups of deleted and unknown groups")
    finally:
        a.close()
    r = admin("kafkajs-admin", ("deleteGroups", {"groups": [group]}), ("deleteGroups", {"groups": [unknown]}),
              ("describeGroups", {"groups": [group]}), ("listGroups", {}))
    refused(r[0], kg.GROUP_ID_NOT_FOUND, "kafkajs deleteGroups of the deleted group")
    refused(r[1], kg.GROUP_ID_NOT_FOUND, "kafkajs deleteGroups of an unknown group")
    h.eq([(g["groupId"], g["state"], g["members"]) for g in value(r[2], "kafkajs describeGroups")],
         [(group, "Dead", [])], "kafkajs describeGroups of the deleted group")
    h.check(group not in [g for g, _ in value(r[3], "kafkajs listGroups")], "kafkajs still lists %s", group)
    r = admin("plat-admin", ("deleteGroups", {"groups": [unknown]}), ("listGroups", {}))
    refused(r[0], kg.GROUP_ID_NOT_FOUND, "platformatic deleteGroups of an unknown group", "GROUP_ID_NOT_FOUND")
    h.check(group not in [g[0] for g in value(r[1], "platformatic listGroups")], "platformatic still lists %s", group)
    h.eq(raw_committed(group, topic), {0: (-1, ""), 1: (-1, "")}, "no committed offsets left after the delete")


@suite.case
def two_kafkajs_members_rebalance():
    topic, group = "jpair", "js-pair"
    h.ck_create_topic(srv.bootstrap, topic, 2, 1)
    a = JsMember("kafkajs-consume", {"topic": topic, "group": group, "count": 0})
    b = None
    try:
        ea = a.ready()
        h.eq(ea["assignment"], {topic: [0, 1]}, "kafkajs a alone: its assignment")
        b = JsMember("kafkajs-consume", {"topic": topic, "group": group, "count": 0})
        eb = b.ready()
        h.eq(len(eb["assignment"].get(topic, [])), 1, "kafkajs b's share (%s)" % eb["assignment"])
        b_parts = eb["assignment"][topic]
        members = {ea["memberId"]: (KAFKAJS_CLIENT, {topic: [1 - b_parts[0]]}),
                   eb["memberId"]: (KAFKAJS_CLIENT, {topic: b_parts})}
        d = wait_describe(group, lambda d: d["state"] == "Stable" and raw_members(d) == members,
                          "Stable with one partition each")
        h.eq((d["protocol_type"], d["protocol_data"]), ("consumer", "RoundRobinAssigner"),
             "raw DescribeGroups protocol")
        produce(topic, 3, 0)
        deadline = time.monotonic() + h.bound(20)
        while raw_committed(group, topic) != {0: (3, ""), 1: (3, "")}:
            h.check(time.monotonic() < deadline, "kafkajs members did not commit 3 per partition: %s",
                    raw_committed(group, topic))
            time.sleep(0.1)
        rb = b.stop()
        h.eq(js_records(rb), want([(b_parts[0], i, i) for i in range(3)]), "kafkajs b's records")
        b = None
        wait_describe(group, lambda d: d["state"] == "Stable" and raw_members(d) == {
            ea["memberId"]: (KAFKAJS_CLIENT, {topic: [0, 1]})}, "kafkajs a alone with both partitions after b left")
        produce(topic, 1, 3)
        deadline = time.monotonic() + h.bound(20)
        while raw_committed(group, topic) != {0: (4, ""), 1: (4, "")}:
            h.check(time.monotonic() < deadline, "kafkajs a did not commit 4 per partition: %s",
                    raw_committed(group, topic))
            time.sleep(0.1)
        ra = a.stop()
        h.eq(js_records(ra), want([(1 - b_parts[0], i, i) for i in range(3)] + [(0, 3, 3), (1, 3, 3)]),
             "kafkajs a's records")
    finally:
        for m in (a, b):
            if m is not None:
                m.kill()
    d = raw_describe(group)
    h.eq((d["error_code"], d["state"], d["members"]), (0, "Empty", []), "the group after both left")


@suite.case
def admin_moved_offsets_seen_by_new_consumers():
    from confluent_kafka import Consumer
    topic, group = "jreset", "js-reset"
    h.ck_create_topic(srv.bootstrap, topic, 2, 1)
    produce(topic, 5, 0)
    # kafka-python reads everything and commits the ends
    c = kp_consumer(group, topic)
    try:
        h.eq(kp_read(c, 10, linger=0), want([(p, i, i) for p in (0, 1) for i in range(5)]), "kafka-python: all records")
        c.commit()
    finally:
        c.close(autocommit=False)
    h.eq(raw_committed(group, topic), {0: (5, ""), 1: (5, "")}, "kafka-python's commits")

    # kafkajs setOffsets p0 -> 2: a new kafka-python member starts there
    r = admin("kafkajs-admin", ("setOffsets", {"group": group, "topic": topic, "partitions": [[0, 2]]}),
              ("fetchOffsets", {"group": group, "topic": topic}))
    value(r[0], "kafkajs setOffsets")
    h.eq(value(r[1], "kafkajs fetchOffsets"), [[topic, 0, 2, None], [topic, 1, 5, None]], "after kafkajs setOffsets")
    c = kp_consumer(group, topic, reset="latest")
    try:
        h.eq(kp_read(c, 3), want([(0, i, i) for i in (2, 3, 4)]), "kafka-python after kafkajs setOffsets")
    finally:
        c.close(autocommit=False)

    # platformatic alterConsumerGroupOffsets p0 -> 4, p1 -> 1: kafkajs starts there
    r = admin("plat-admin",
              ("alterConsumerGroupOffsets", {"group": group, "topic": topic, "partitions": [[0, 4], [1, 1]]}),
              ("listConsumerGroupOffsets", {"group": group}))
    value(r[0], "platformatic alterConsumerGroupOffsets")
    h.eq(value(r[1], "platformatic listConsumerGroupOffsets"), [[topic, 0, 4, ""], [topic, 1, 1, ""]],
         "after platformatic alterConsumerGroupOffsets")
    res = js("kafkajs-consume", {"topic": topic, "group": group, "count": 5, "fromBeginning": False})
    h.eq(js_records(res), want([(0, 4, 4)] + [(1, i, i) for i in range(1, 5)]),
         "kafkajs after platformatic alterConsumerGroupOffsets")
    h.eq(raw_committed(group, topic), {0: (5, ""), 1: (5, "")}, "kafkajs's commits")

    # platformatic deleteConsumerGroupOffsets p1: OffsetFetch has none for it
    r = admin("plat-admin", ("deleteConsumerGroupOffsets", {"group": group, "topic": topic, "partitions": [1]}))
    value(r[0], "platformatic deleteConsumerGroupOffsets")
    h.eq(raw_committed(group, topic), {0: (5, ""), 1: (-1, "")}, "after platformatic deleteConsumerGroupOffsets")

    # kafkajs resetOffsets earliest commits -2 (EARLIEST) for each partition;
    # librdkafka resolves that to the log start despite auto.offset.reset=latest
    r = admin("kafkajs-admin", ("resetOffsets", {"group": group, "topic": topic, "earliest": True}))
    value(r[0], "kafkajs resetOffsets")
    h.eq(raw_committed(group, topic), {0: (-2, ""), 1: (-2, "")}, "after kafkajs resetOffsets (earliest)")
    cc = Consumer(h.ck_conf(srv.bootstrap, **{
        "group.id": group, "enable.auto.commit": False, "auto.offset.reset": "latest",
        "session.timeout.ms": 6000, "heartbeat.interval.ms": 300, "fetch.wait.max.ms": 100}))
    got = []
    try:
        cc.subscribe([topic])
        deadline = time.monotonic() + h.bound(20)
        while len(got) < 10 and time.monotonic() < deadline:
            m = cc.poll(0.2)
            if m is not None and not m.error():
                got.append((m.partition(), m.offset(), m.key(), m.value()))
    finally:
        cc.close()
    h.eq(sorted(got), want([(p, i, i) for p in (0, 1) for i in range(5)]), "confluent-kafka after kafkajs resetOffsets")


suite.run(setup)
