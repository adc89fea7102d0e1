"""Consumer groups with librdkafka (confluent-kafka 1.7 / librdkafka
2.0.2, and kcat -G): three consumers of one group over a 3-partition
topic while members join and leave, every partition owned by exactly one
member at each settled point, every record read exactly once with
synchronous commits across the rebalances; a static member
(group.instance.id) restarting within its session gets its partitions
back without a rebalance; committed offsets survive a server restart;
kcat -G resumes from its commits."""
# limit: 240
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness as h  # noqa: E402
import kgroups as kg  # noqa: E402
import kwire  # noqa: E402

suite = h.Suite("91_test_groups_librdkafka", case_limit=120)
srv = None


def setup():
    global srv
    srv = h.Server({"group.initial.rebalance.delay.ms": "200", "offsets.topic.num.partitions": "5"})


def consumer_conf(group, **extra):
    c = h.ck_conf(srv.bootstrap, **{
        "group.id": group, "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000, "heartbeat.interval.ms": 300, "enable.partition.eof": False,
        "isolation.level": "read_uncommitted", "fetch.wait.max.ms": 100,
        "topic.metadata.refresh.interval.ms": 2000})
    c.update(extra)
    return c


class Member:
    """One confluent-kafka consumer in its own thread: subscribes, reads,
    commits each record synchronously, tracks its assignment."""

    def __init__(self, name, group, topic, seen, lock, **conf):
        from confluent_kafka import Consumer
        self.name = name
        self.seen = seen
        self.lock = lock
        self.assigned = set()
        self.assigns = 0
        self.errors = []
        self.stop_flag = False
        self.closed = False
        self.c = Consumer(consumer_conf(group, **conf))
        self.c.subscribe([topic], on_assign=self.on_assign, on_revoke=self.on_revoke)
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def on_assign(self, consumer, parts):
        with self.lock:
            self.assigned = {p.partition for p in parts}
            self.assigns += 1

    def on_revoke(self, consumer, parts):
        with self.lock:
            self.assigned = set()

    def run(self):
        try:
            while not self.stop_flag:
                m = self.c.poll(0.1)
                if m is None:
                    continue
                if m.error():
                    self.errors.append(str(m.error()))
                    continue
                with self.lock:
                    self.seen.append((m.partition(), m.offset(), m.value(), self.name))
                try:
                    self.c.commit(message=m, asynchronous=False)
                except Exception as e:  # noqa: BLE001
                    self.errors.append("commit %d@%d: %s" % (m.partition(), m.offset(), e))
        finally:
            self.c.close()
            self.closed = True

    def stop(self):
        self.stop_flag = True
        self.t.join(h.bound(20))
        h.check(self.closed, "%s did not close", self.name)


def settle(members, want, what, limit=30.0):
    """Waits until the members' assignments partition `want` exactly:
    disjoint, every partition owned, each member with at least one."""
    deadline = time.monotonic() + h.bound(limit)
    last = None
    while time.monotonic() < deadline:
        with members[0].lock:
            sets = [set(m.assigned) for m in members]
        union = set().union(*sets)
        disjoint = sum(len(s) for s in sets) == len(union)
        if union == set(want) and disjoint and all(sets):
            time.sleep(0.3)  # still so a moment later
            with members[0].lock:
                again = [set(m.assigned) for m in members]
            if again == sets:
                return sets
        last = sets
        time.sleep(0.05)
    raise h.Failure("%s: assignments never settled to %s: %s" % (what, sorted(want), last))


def produce(topic, n, start, partitions=3):
    from confluent_kafka import Producer
    p = Producer(h.ck_conf(srv.bootstrap, **{"linger.ms": 2, "acks": "all"}))
    for i in range(start, start + n):
        p.produce(topic, value=b"r%05d" % i, partition=i % partitions)
    h.check(p.flush(h.bound(20)) == 0, "producer did not flush")


@suite.case(limit=180)
def three_members_rebalance_exactly_once():
    topic, group = "g3", "rdk-group"
    h.ck_create_topic(srv.bootstrap, topic, 3, 1)
    produce(topic, 150, 0)
    seen, lock = [], threading.Lock()
    members = []
    try:
        a = Member("a", group, topic, seen, lock)
        members.append(a)
        settle([a], {0, 1, 2}, "a alone")
        b = Member("b", group, topic, seen, lock)
        members.append(b)
        produce(topic, 60, 150)
        settle([a, b], {0, 1, 2}, "a and b")
        c = Member("c", group, topic, seen, lock)
        members.append(c)
        produce(topic, 60, 210)
        sets = settle([a, b, c], {0, 1, 2}, "a, b and c")
        h.eq(sorted(len(s) for s in sets), [1, 1, 1], "one partition each")
        produce(topic, 60, 270)
        c.stop()  # LeaveGroup on close
        settle([a, b], {0, 1, 2}, "after c left")
        produce(topic, 60, 330)
        total = 390
        deadline = time.monotonic() + h.bound(30)
        while time.monotonic() < deadline:
            with lock:
                if len(seen) >= total:
                    break
            time.sleep(0.1)
        time.sleep(1.0)  # anything read twice would show up now
    finally:
        for m in members:
            if not m.closed:
                m.stop()
    errs = a.errors + b.errors + c.errors
    h.eq(errs, [], "consumer errors")
    with lock:
        values = sorted(v for _, _, v, _ in seen)
        keys = [(p, o) for p, o, _, _ in seen]
    h.eq(len(keys), len(set(keys)), "records read more than once: %d of %d" % (len(keys) - len(set(keys)), len(keys)))
    h.eq(values, [b"r%05d" % i for i in range(total)], "every record read")
    h.check(a.assigns >= 3 and b.assigns >= 2, "rebalances seen: a %d, b %d", a.assigns, b.assigns)
    # the committed offsets are the ends of the partitions
    cc = kwire.Conn(srv.port)
    try:
        _, offs = kg.offset_fetch(cc, group, {topic: [0, 1, 2]})
    finally:
        cc.close()
    h.eq([offs[(topic, p)][0] for p in range(3)], [130, 130, 130], "committed offsets")


@suite.case(limit=120)
def static_member_restart_without_rebalance():
    topic, group = "gs", "rdk-static"
    h.ck_create_topic(srv.bootstrap, topic, 2, 1)
    seen, lock = [], threading.Lock()
    s = Member("s", group, topic, seen, lock, **{"group.instance.id": "static-1", "session.timeout.ms": 10000})
    d = Member("d", group, topic, seen, lock)
    try:
        sets = settle([s, d], {0, 1}, "static and dynamic")
        mine = sets[0]
        d_assigns = d.assigns
        s.stop()  # a static member leaves no LeaveGroup behind
        time.sleep(1.0)
        with lock:
            h.eq(d.assigns, d_assigns, "the dynamic member was not rebalanced when the static one closed")
        s2 = Member("s2", group, topic, seen, lock, **{"group.instance.id": "static-1", "session.timeout.ms": 10000})
        try:
            deadline = time.monotonic() + h.bound(20)
            while time.monotonic() < deadline and s2.assigned != mine:
                time.sleep(0.05)
            h.eq(s2.assigned, mine, "the restarted static member's partitions")
            time.sleep(1.0)
            with lock:
                h.eq(d.assigns, d_assigns, "no rebalance for the dynamic member")
            cc = kwire.Conn(srv.port)
            try:
                desc = kg.describe_groups(cc, [group])[0]
            finally:
                cc.close()
            h.eq(desc["state"], "Stable", "group state")
            h.eq(sorted(m["group_instance_id"] or "" for m in desc["members"]), ["", "static-1"], "members")
        finally:
            s2.stop()
    finally:
        d.stop()
        if not s.closed:
            s.stop()


@suite.case(limit=120)
def commits_survive_restart_and_resume():
    from confluent_kafka import Consumer, TopicPartition
    topic, group = "gr", "rdk-restart"
    h.ck_create_topic(srv.bootstrap, topic, 1, 1)
    produce(topic, 20, 0, partitions=1)
    c = Consumer(consumer_conf(group))
    got = []
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + h.bound(20)
        while len(got) < 12 and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.append(m.value())
        h.eq(len(got), 12, "records read before the commit")
        c.commit(offsets=[TopicPartition(topic, 0, 12)], asynchronous=False)
        committed = c.committed([TopicPartition(topic, 0)], timeout=h.bound(10))
        h.eq(committed[0].offset, 12, "committed (OffsetFetch) before the restart")
    finally:
        c.close()
    srv.restart()
    c = Consumer(consumer_conf(group))
    try:
        committed = None
        deadline = time.monotonic() + h.bound(20)
        while time.monotonic() < deadline:
            try:
                committed = c.committed([TopicPartition(topic, 0)], timeout=h.bound(5))
                break
            except Exception:  # noqa: BLE001  (coordinator still loading)
                time.sleep(0.2)
        h.eq(committed[0].offset, 12, "committed after the restart")
        c.subscribe([topic])
        rest = []
        deadline = time.monotonic() + h.bound(20)
        while len(rest) < 8 and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                rest.append(m.value())
        h.eq(rest, [b"r%05d" % i for i in range(12, 20)], "resumed from the committed offset")
    finally:
        c.close()


def kcat_group(topic, group, limit=30.0):
    argv = [h.KCAT, "-b", srv.bootstrap, "-G", group, "-X", "auto.offset.reset=earliest", "-X",
            "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=300", "-e", "-f", "%p:%o:%s\\n", topic]
    p = h.run(argv, limit=limit)
    return sorted(l for l in p.stdout.decode().splitlines() if l)


@suite.case(limit=120)
def kcat_group_resumes_from_commits():
    topic, group = "gk", "kcat-group"
    h.ck_create_topic(srv.bootstrap, topic, 3, 1)
    produce(topic, 30, 0)
    first = kcat_group(topic, group)
    h.eq(len(first), 30, "kcat -G first run")
    h.eq(sorted(l.split(":")[2] for l in first), ["r%05d" % i for i in range(30)], "kcat -G values")
    produce(topic, 9, 30)
    second = kcat_group(topic, group)
    h.eq(sorted(l.split(":")[2] for l in second), ["r%05d" % i for i in range(30, 39)],
         "kcat -G second run reads only what is new")


suite.run(setup)
