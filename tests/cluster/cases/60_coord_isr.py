"""The group coordinator on a 3-node combined cluster with default
settings: __consumer_offsets is replicated three times and a coordinator
write is acknowledged only once the ISR has it (as an acks=all Produce).

- With two of the three brokers registered, FindCoordinator answers
  COORDINATOR_NOT_AVAILABLE and __consumer_offsets does not exist (the
  node says why: too few alive brokers for offsets.topic.replication.factor
  3); once the third registers, the topic is created with the three
  brokers as the replicas of every partition.
- With the two followers of a group's __consumer_offsets partition paused
  (SIGSTOP), an OffsetCommit of a simple group and one of a KIP-848
  member (v9, raw) both fail after offsets.commit.timeout.ms (2 s here)
  with COORDINATOR_NOT_AVAILABLE, not acknowledged; after SIGCONT commits
  succeed again and are read back. So does a group leader's SyncGroup
  (its GroupMetadata record), instead of parking for its long backstop.
- A classic group (confluent-kafka consumer, subscribe + synchronous
  commit) and a KIP-848 member (raw ConsumerGroupHeartbeat and
  OffsetCommit v9) of the same coordinator commit; the coordinator is
  killed -9 right after both commits are acknowledged; every acknowledged
  offset is read back through the two surviving nodes (OffsetFetch, and
  confluent-kafka committed()), the dead node staying dead."""
# limit: 300

import os
import select
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cluster as C  # noqa: E402
from cluster import Failure, check, eq, log  # noqa: E402,F401
import kgroups as kg  # noqa: E402
import kwire as K  # noqa: E402

S = C.harness.Suite("60_coord_isr", case_limit=90)
CL = None
TOPIC = "cisr"
PARTS = [0, 1, 2]
REQUEST_TIMED_OUT = 7
RETRY = (kg.COORDINATOR_LOAD_IN_PROGRESS, kg.COORDINATOR_NOT_AVAILABLE, kg.NOT_COORDINATOR)


def setup():
    global CL
    # Defaults but for a short commit timeout (the paused-followers case)
    # and a session a paused node outlives (no fencing while paused).
    CL = C.Cluster(3, overrides={"offsets.commit.timeout.ms": "2000", "broker.session.timeout.ms": "5000"})
    for n in CL.nodes[:2]:
        n.start()
    CL.wait_ready(brokers=CL.nodes[:2])


def find(via, group):
    """FindCoordinator v1 through node via: (error, node id, port)."""
    c = K.Conn(via.port)
    try:
        r = kg.find_coordinator(c, group, version=1)
    finally:
        c.close()
    return r["error_code"], r["node_id"], r["port"]


def coordinator(group, via, limit=30.0, not_node=None):
    """The node coordinating group, asked through the nodes in via until
    one names a live coordinator (other than not_node)."""
    deadline = time.monotonic() + C.bound(limit)
    last = None
    while time.monotonic() < deadline:
        for v in via:
            try:
                err, node, port = find(v, group)
            except (OSError, K.Closed, K.ParseError) as e:
                last = str(e)
                continue
            last = (v.node_id, err, node)
            if err == kg.NONE and node != not_node:
                return CL.node(node)
        time.sleep(0.1)
    raise Failure("no coordinator for %s within %.0fs (last %s)" % (group, C.bound(limit), last))


def wait_full_isr(limit=30.0):
    """Every __consumer_offsets partition has all three replicas in its ISR
    again (a case that paused followers shrinks it; with min.insync.replicas
    1, a leader alone in the ISR acknowledges at once, as Kafka does)."""
    deadline = time.monotonic() + C.bound(limit)
    while True:
        c = K.Conn(CL.nodes[0].port)
        try:
            md = K.metadata_v12(c, topics=["__consumer_offsets"])
        finally:
            c.close()
        parts = md["topics"][0]["partitions"] if md["topics"] else []
        if parts and all(len(p["isr"]) == 3 for p in parts):
            return
        check(time.monotonic() < deadline, "__consumer_offsets ISR not full again: %s",
              [(p["partition"], p["isr"]) for p in parts if len(p["isr"]) != 3][:5])
        time.sleep(0.2)


def groups_of_one_coordinator(prefix, n):
    """n group ids coordinated by the same node: (node, [ids]), once every
    coordinator partition's ISR is full."""
    wait_full_isr()
    first = "%s-0" % prefix
    node = coordinator(first, CL.nodes)
    out = [first]
    i = 1
    while len(out) < n:
        g = "%s-%d" % (prefix, i)
        if coordinator(g, CL.nodes).node_id == node.node_id:
            out.append(g)
        i += 1
        check(i < 500, "no %d groups of one coordinator among %d", n, i)
    return node, out


def join_848(node, group, limit=20.0):
    """A KIP-848 member joins group at its coordinator: (member id, epoch)."""
    deadline = time.monotonic() + C.bound(limit)
    while True:
        c = K.Conn(node.port)
        try:
            r = kg.consumer_heartbeat(c, group, "", 0, topics=[TOPIC], owned=[])
        finally:
            c.close()
        if r["error_code"] == kg.NONE:
            return r["member_id"], r["member_epoch"]
        check(r["error_code"] in RETRY and time.monotonic() < deadline, "ConsumerGroupHeartbeat join: %s", r)
        time.sleep(0.1)


def commit_v9(node, group, member_id, epoch, offsets, limit=20.0):
    """OffsetCommit v9 at node, retried while the coordinator loads or
    moves (asked again through every live node); {partition: error}."""
    deadline = time.monotonic() + C.bound(limit)
    while True:
        c = K.Conn(node.port)
        try:
            out = kg.offset_commit_v9(c, group, member_id, epoch, TOPIC, offsets)
        finally:
            c.close()
        errs = set(out.values())
        if not (errs & set(RETRY)) or time.monotonic() > deadline:
            return out
        time.sleep(0.1)
        node = coordinator(group, [n for n in CL.nodes if n.alive()])


def fetch_offsets(group, via, dead=None, limit=40.0):
    """{partition: committed offset} of group, read with OffsetFetch v3
    through the nodes in via (retried while the coordinator moves or
    loads)."""
    deadline = time.monotonic() + C.bound(limit)
    last = None
    while time.monotonic() < deadline:
        node = coordinator(group, via, limit=max(1.0, deadline - time.monotonic()), not_node=dead)
        try:
            c = K.Conn(node.port)
            try:
                top, out = kg.offset_fetch(c, group, {TOPIC: PARTS}, version=3)
            finally:
                c.close()
        except (OSError, K.Closed, K.ParseError) as e:
            last = str(e)
            time.sleep(0.1)
            continue
        last = (node.node_id, top, out)
        errs = set(e for _, _, e in out.values())
        if top == kg.NONE and errs == {kg.NONE}:
            return {p: out[(TOPIC, p)][0] for p in PARTS}
        check(top in RETRY + (kg.NONE,) and errs <= set(RETRY + (kg.NONE,)), "OffsetFetch of %s: %s", group, last)
        time.sleep(0.1)
    raise Failure("OffsetFetch of %s did not succeed within %.0fs (last %s)" % (group, C.bound(limit), last))


@S.case
def find_coordinator_unavailable_until_three_brokers():
    n1, n2, n3 = CL.nodes
    since = {n.node_id: n.log_size() for n in (n1, n2)}
    # For a while: every answer COORDINATOR_NOT_AVAILABLE, no topic made.
    end = time.monotonic() + 3.0
    asked = 0
    while time.monotonic() < end:
        for n in (n1, n2):
            err, node, _ = find(n, "cisr-probe")
            eq((err, node), (kg.COORDINATOR_NOT_AVAILABLE, -1), "FindCoordinator through node %d with 2 brokers"
               % n.node_id)
            asked += 1
        time.sleep(0.2)
    md = C.admin(n1).list_topics(timeout=10)
    check("__consumer_offsets" not in md.topics, "__consumer_offsets exists with only 2 brokers registered")
    why = r"not creating __consumer_offsets yet: Number of alive brokers '2' does not meet the required " \
          r"replication factor '3' for the offsets topic"
    said = [n for n in (n1, n2) if n.log_text(since[n.node_id]).find("not creating __consumer_offsets yet") >= 0]
    check(said, "neither node logged why it did not create __consumer_offsets")
    said[0].wait_log(why, since[said[0].node_id], limit=1)
    log("%d FindCoordinator answers COORDINATOR_NOT_AVAILABLE with brokers 1, 2; no __consumer_offsets", asked)
    n3.start()
    CL.wait_ready()
    t0 = time.monotonic()
    node = coordinator("cisr-probe", CL.nodes)
    log("node 3 registered: coordinator of cisr-probe is node %d after %.2fs", node.node_id, time.monotonic() - t0)
    deadline = time.monotonic() + C.bound(10)
    parts = {}
    while len(parts) < 50 and time.monotonic() < deadline:
        md = C.admin(n1).list_topics(timeout=10)
        t = md.topics.get("__consumer_offsets")
        parts = t.partitions if t is not None and t.error is None else {}
        time.sleep(0.1)
    eq(len(parts), 50, "__consumer_offsets partitions in node 1's Metadata (offsets.topic.num.partitions default)")
    bad = [(p, sorted(m.replicas)) for p, m in parts.items() if sorted(m.replicas) != [1, 2, 3]]
    check(not bad, "partitions of __consumer_offsets without the 3 replicas: %s", bad[:5])
    leaders = sorted(set(m.leader for m in parts.values()))
    log("__consumer_offsets: 50 partitions, replicas [1, 2, 3] each; leaders on %s", leaders)


def ensure_topic():
    C.create_topics(CL.node(1), [TOPIC], partitions=len(PARTS), rf=3)
    for n in CL.nodes:
        C.wait_topics(n, [TOPIC])


@S.case
def commit_fails_while_the_followers_are_paused():
    ensure_topic()
    node, (simple, g848) = groups_of_one_coordinator("cisr-stop", 2)
    others = [n for n in CL.nodes if n is not node]
    mid, epoch = join_848(node, g848)
    eq(commit_v9(node, simple, "", -1, {0: 5, 1: 6, 2: 7}), {0: 0, 1: 0, 2: 0}, "simple group commit")
    eq(commit_v9(node, g848, mid, epoch, {0: 5, 1: 6, 2: 7}), {0: 0, 1: 0, 2: 0}, "KIP-848 commit")
    a, b = K.Conn(node.port), K.Conn(node.port)
    C.pause(others)
    try:
        t0 = time.monotonic()
        ca = a.send(kg.OFFSET_COMMIT, 9, kg.offset_commit_v9_body(simple, "", -1, TOPIC, {0: 50, 1: 60, 2: 70}),
                    header_version=2)
        cb = b.send(kg.OFFSET_COMMIT, 9, kg.offset_commit_v9_body(g848, mid, epoch, TOPIC, {0: 50, 1: 60, 2: 70}),
                    header_version=2)
        ra = kg.parse_offset_commit_v9(a.recv(ca, 1, timeout=10))
        da = time.monotonic() - t0
        rb = kg.parse_offset_commit_v9(b.recv(cb, 1, timeout=10))
        db = time.monotonic() - t0
    finally:
        for n in others:
            n.proc.send_signal(signal.SIGCONT)
        a.close()
        b.close()
    for what, res, dt in (("simple group", ra, da), ("KIP-848 member", rb, db)):
        errs = set(res.values())
        check(len(errs) == 1 and errs <= {kg.COORDINATOR_NOT_AVAILABLE, REQUEST_TIMED_OUT},
              "%s's commit with the followers paused answered %s (not a failure)", what, res)
        check(dt >= 1.8, "%s's commit failed after %.2fs, before offsets.commit.timeout.ms (2 s)", what, dt)
    log("followers %s paused: both commits failed (%s, %s) after %.2fs / %.2fs", [n.node_id for n in others],
        ra[0], rb[0], da, db)
    CL.wait_ready()
    eq(commit_v9(node, simple, "", -1, {0: 80, 1: 81, 2: 82}), {0: 0, 1: 0, 2: 0}, "simple group commit after SIGCONT")
    eq(commit_v9(coordinator(g848, CL.nodes), g848, mid, epoch, {0: 80, 1: 81, 2: 82}), {0: 0, 1: 0, 2: 0},
       "KIP-848 commit after SIGCONT")
    for g in (simple, g848):
        eq(fetch_offsets(g, CL.nodes), {0: 80, 1: 81, 2: 82}, "offsets of %s after SIGCONT" % g)
    log("after SIGCONT: commits acknowledged and read back")


@S.case
def sync_group_fails_while_the_followers_are_paused():
    ensure_topic()
    node, (g,) = groups_of_one_coordinator("cisr-sync", 1)
    others = [n for n in CL.nodes if n is not node]
    c = K.Conn(node.port, timeout=C.bound(15))
    try:
        r = kg.join_group(c, g)
        eq(r["error_code"], kg.MEMBER_ID_REQUIRED, "first JoinGroup v5")
        me = r["member_id"]
        r = kg.join_group(c, g, member_id=me)  # after group.initial.rebalance.delay.ms
        eq((r["error_code"], r["leader"]), (kg.NONE, me), "JoinGroup")
        C.pause(others)
        try:
            t0 = time.monotonic()
            s = kg.sync_group(c, g, r["generation_id"], me, [(me, kg.assignment({TOPIC: PARTS}))],
                              timeout=C.bound(10))
            dt = time.monotonic() - t0
        finally:
            for n in others:
                n.proc.send_signal(signal.SIGCONT)
    finally:
        c.close()
    check(s["error_code"] in (kg.COORDINATOR_NOT_AVAILABLE, REQUEST_TIMED_OUT),
          "SyncGroup with the followers paused answered %s (not a failure)", s)
    check(dt >= 1.8, "SyncGroup failed after %.2fs, before offsets.commit.timeout.ms (2 s)", dt)
    log("followers %s paused: the leader's SyncGroup failed (%d) after %.2fs", [n.node_id for n in others],
        s["error_code"], dt)
    CL.wait_ready()


def classic_consumer(group, nodes):
    from confluent_kafka import Consumer
    return Consumer({"bootstrap.servers": ",".join(n.bootstrap for n in nodes), "group.id": group,
                     "enable.auto.commit": False, "auto.offset.reset": "earliest",
                     "session.timeout.ms": 10000, "heartbeat.interval.ms": 500})


@S.case(limit=120)
def acknowledged_commits_survive_kill9_of_the_coordinator():
    from confluent_kafka import TopicPartition
    ensure_topic()
    node, (gc, g848) = groups_of_one_coordinator("cisr-kill", 2)
    survivors = [n for n in CL.nodes if n is not node]
    cons = classic_consumer(gc, CL.nodes)
    cons.subscribe([TOPIC])
    deadline = time.monotonic() + C.bound(40)
    while not cons.assignment() and time.monotonic() < deadline:
        cons.poll(0.2)
    eq(sorted(tp.partition for tp in cons.assignment()), PARTS, "the classic member's assignment")
    mid, epoch = join_848(node, g848)
    for k in range(1, 5):
        want_c = {p: 100 * k + p for p in PARTS}
        want_k = {p: 1000 * k + p for p in PARTS}
        conn = K.Conn(node.port)
        try:
            corr = conn.send(kg.OFFSET_COMMIT, 9, kg.offset_commit_v9_body(g848, mid, epoch, TOPIC, want_k),
                             header_version=2)
            got = cons.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in want_c.items()], asynchronous=False)
            rk = kg.parse_offset_commit_v9(conn.recv(corr, 1, timeout=10))
        finally:
            conn.close()
        check(all(tp.error is None for tp in got), "classic commit %d: %s", k, got)
        eq(rk, {p: 0 for p in PARTS}, "KIP-848 commit %d" % k)
    # The last commits are sent while the followers are paused, so that
    # an acknowledgement that did not wait for them would be lost with
    # the coordinator: they may be answered only once the followers,
    # resumed after 0.5 s, have the records; the coordinator is killed
    # the moment both are acknowledged (or, were one answered during the
    # pause, at once, before the followers resume).
    want_c = {p: 500 + p for p in PARTS}
    want_k = {p: 5000 + p for p in PARTS}
    res = {}

    def classic_commit():
        try:
            res["c"] = cons.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in want_c.items()],
                                   asynchronous=False)
        except Exception as e:  # noqa: BLE001
            res["c"] = e
    conn = K.Conn(node.port)
    C.pause(survivors)
    resumed = False
    try:
        t_send = time.monotonic()
        corr = conn.send(kg.OFFSET_COMMIT, 9, kg.offset_commit_v9_body(g848, mid, epoch, TOPIC, want_k),
                         header_version=2)
        th = threading.Thread(target=classic_commit, daemon=True)
        th.start()
        th.join(0.5)
        early = not th.is_alive() or select.select([conn.sock], [], [], 0)[0]
        if early:
            node.kill9()
        for n in survivors:
            n.proc.send_signal(signal.SIGCONT)
        resumed = True
        t_resume = time.monotonic()
        th.join(C.bound(10))
        try:
            rk = kg.parse_offset_commit_v9(conn.recv(corr, 1, timeout=C.bound(10)))
        except (OSError, K.Closed) as e:
            rk = e
        t_acked = time.monotonic()
        if not early:
            node.kill9()
    finally:
        if not resumed:
            for n in survivors:
                n.proc.send_signal(signal.SIGCONT)
        conn.close()
    got = res.get("c")
    acked_c = isinstance(got, list) and all(tp.error is None for tp in got)
    acked_k = rk == {p: 0 for p in PARTS}
    if early:
        # Acknowledged without the followers: whatever was acknowledged
        # must still be readable (it was not, before the coordinator
        # waited for the ISR); then the case fails anyway.
        for g, want, acked in ((gc, want_c, acked_c), (g848, want_k, acked_k)):
            if acked:
                eq(fetch_offsets(g, survivors, dead=node.node_id), want, "%s's offsets acknowledged during the "
                   "pause, after the kill" % g)
        raise Failure("commits answered while the followers were paused (classic %s, KIP-848 %s)" % (got, rk))
    check(acked_c, "classic commit after the resume: %s", got)
    check(acked_k, "KIP-848 commit after the resume: %s", rk)
    log("last commits sent with followers %s paused: unanswered for %.2fs; acknowledged %.3fs after their resume",
        [n.node_id for n in survivors], t_resume - t_send, t_acked - t_resume)
    t0 = time.monotonic()
    log("coordinator node %d killed -9 right after both commits were acknowledged", node.node_id)
    eq(fetch_offsets(g848, survivors, dead=node.node_id), want_k, "KIP-848 group's offsets after the kill")
    eq(fetch_offsets(gc, survivors, dead=node.node_id), want_c, "classic group's offsets after the kill (raw)")
    dt = time.monotonic() - t0
    # and as a client reads them
    reader = classic_consumer(gc, survivors)
    try:
        got = reader.committed([TopicPartition(TOPIC, p) for p in PARTS], timeout=C.bound(30))
    finally:
        reader.close()
    eq({tp.partition: tp.offset for tp in got}, want_c, "committed() of the classic group through the survivors")
    new = coordinator(gc, survivors, not_node=node.node_id)
    log("every acknowledged offset read back through nodes %s %.2fs after the kill (new coordinator %d)",
        [n.node_id for n in survivors], dt, new.node_id)
    # the first member leaves through the new coordinator (bounded)
    t = threading.Thread(target=cons.close, daemon=True)
    t.start()
    t.join(C.bound(20))


S.run(setup)
