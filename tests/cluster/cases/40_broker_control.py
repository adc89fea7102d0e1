"""3 controllers and 3 brokers: the requests brokers send to the active
controller, sent raw over its controller listener as a broker would
(AlterPartition, AllocateProducerIds), with Kafka's answers and errors;
producer-id blocks surviving a controller failover; feature flags in
ApiVersions and UpdateFeatures through a broker (forwarded); a broker's
SIGTERM handing its leaderships over (controlled shutdown) before it
exits, while a producer goes on without an error; a broker's own dynamic
config, altered through it (forwarded) and described by it, kept in the
controllers' snapshots that a restarted broker catches up from."""
# limit: 150

import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cluster as C  # noqa: E402
from cluster import check, eq, log  # noqa: E402,F401
import kwire as K  # noqa: E402

S = C.harness.Suite("40_broker_control", case_limit=60)
CL = None

ALTER_PARTITION = 56
ALLOCATE_PRODUCER_IDS = 67
UPDATE_FEATURES = 57
DESCRIBE_CONFIGS = 32
INCREMENTAL_ALTER_CONFIGS = 44
BROKER = 4
DYNAMIC_BROKER_CONFIG = 2
DEFAULT_CONFIG = 5
NONE = 0
NOT_CONTROLLER = 41
INVALID_REQUEST = 42
STALE_BROKER_EPOCH = 77
INVALID_UPDATE_VERSION = 95
INELIGIBLE_REPLICA = 107


def setup():
    global CL
    # Small snapshots: a broker that was down catches up through one.
    CL = C.Cluster(3, 3, overrides={"metadata.log.max.record.bytes.between.snapshots": "20000"})
    CL.start()


def broker_epoch(node):
    """The epoch the node last registered with, from its own log line."""
    got = re.findall(r"broker %d: registered \(epoch (\d+)\)" % node.node_id, node.log_text())
    check(got, "node %d never said it registered", node.node_id)
    return int(got[-1])


def active_controller():
    leader, _, _ = CL.quorum()
    return CL.node(leader)


def controller_conn(node):
    return K.Conn(node.cport, host=node.host)


# ---------------------------------------------------------------- raw requests

def alter_partition_v3(conn, broker_id, epoch, topic_id, partition, leader_epoch, partition_epoch, isr):
    """isr: [(broker id, broker epoch)]. Returns (top error, partition answer or None)."""
    w = K.W().i32(broker_id).i64(epoch)

    def part(w, _):
        w.i32(partition).i32(leader_epoch)
        w.carray(isr, lambda w, m: w.i32(m[0]).i64(m[1]).tags())
        w.i8(0).i32(partition_epoch).tags()

    w.carray([topic_id], lambda w, t: w.uuid(t).carray([0], part).tags())
    w.tags()
    r = conn.request(ALTER_PARTITION, 3, w.bytes(), flexible=True)
    r.i32()
    top = r.i16()

    def rpart(r):
        p = {"partition": r.i32(), "error": r.i16(), "leader": r.i32(), "leader_epoch": r.i32()}
        p["isr"] = r.carray(lambda r: r.i32()) or []
        p["recovery"] = r.i8()
        p["partition_epoch"] = r.i32()
        r.tags()
        return p

    def rtopic(r):
        t = {"topic_id": r.uuid(), "partitions": r.carray(rpart) or []}
        r.tags()
        return t

    topics = r.carray(rtopic) or []
    r.tags()
    return top, (topics[0]["partitions"][0] if topics else None)


def allocate_producer_ids(conn, broker_id, epoch):
    r = conn.request(ALLOCATE_PRODUCER_IDS, 0, K.W().i32(broker_id).i64(epoch).tags().bytes(), flexible=True)
    r.i32()
    err, start, n = r.i16(), r.i64(), r.i32()
    r.tags()
    return err, start, n


def api_versions_features(node, controller=False):
    """ApiVersions v3: (supported {name: (min, max)}, finalized {name: level}, epoch)."""
    c = K.Conn(node.cport if controller else node.port, host=node.host)
    try:
        corr = c.send(K.API_VERSIONS, 3, K.api_versions_body(3), header_version=2)
        r = c.recv(corr, 0)
    finally:
        c.close()
    check(r.i16() == 0, "ApiVersions error")

    def key(r):
        r.i16(), r.i16(), r.i16()
        r.tags()

    r.carray(key)
    r.i32()
    supported, finalized, epoch = {}, {}, -1
    for _ in range(r.uvarint()):
        tag, size = r.uvarint(), r.uvarint()
        f = K.R(r.take(size))
        if tag == 0:
            def sk(f):
                v = (f.cstring(), f.i16(), f.i16())
                f.tags()
                return v
            supported = {n: (lo, hi) for n, lo, hi in f.carray(sk) or []}
        elif tag == 1:
            epoch = f.i64()
        elif tag == 2:
            def fk(f):
                v = (f.cstring(), f.i16(), f.i16())
                f.tags()
                return v
            finalized = {n: hi for n, hi, lo in f.carray(fk) or []}
    return supported, finalized, epoch


def update_features(node, version, updates, validate_only=False):
    """updates: [(name, level, upgrade type)]. Returns (error, message, results)."""
    c = K.Conn(node.port, host=node.host)
    try:
        w = K.W().i32(30000)

        def upd(w, u):
            w.cstring(u[0]).i16(u[1])
            if version == 0:
                w.boolean(u[2] != 1)
            else:
                w.i8(u[2])
            w.tags()

        w.carray(updates, upd)
        if version >= 1:
            w.boolean(validate_only)
        w.tags()
        r = c.request(UPDATE_FEATURES, version, w.bytes(), flexible=True)
    finally:
        c.close()
    r.i32()
    err, msg = r.i16(), r.cstring()
    results = []
    if version <= 1:
        def res(r):
            v = (r.cstring(), r.i16(), r.cstring())
            r.tags()
            return v
        results = r.carray(res) or []
    r.tags()
    return err, msg, results


def incremental_alter_configs(node, resources):
    """resources: [(type, name, [(key, op, value)])]. Returns [(name, error, message)]."""
    w = K.W()

    def res(w, r):
        w.i8(r[0]).cstring(r[1])
        w.carray(r[2], lambda w, c: w.cstring(c[0]).i8(c[1]).cstring(c[2]).tags())
        w.tags()

    w.carray(resources, res).boolean(False).tags()
    c = K.Conn(node.port, host=node.host)
    try:
        r = c.request(INCREMENTAL_ALTER_CONFIGS, 1, w.bytes(), flexible=True)
    finally:
        c.close()
    r.i32()

    def ans(r):
        err, msg, _, name = r.i16(), r.cstring(), r.i8(), r.cstring()
        r.tags()
        return name, err, msg

    out = r.carray(ans) or []
    r.tags()
    return out


def describe_broker_config(node, name, key):
    """DescribeConfigs v4 of BROKER name, one key: (error, message, value, source)."""
    w = K.W()
    w.carray([name], lambda w, n: w.i8(BROKER).cstring(n).carray([key], lambda w, k: w.cstring(k)).tags())
    w.boolean(False).boolean(False).tags()
    c = K.Conn(node.port, host=node.host)
    try:
        r = c.request(DESCRIBE_CONFIGS, 4, w.bytes(), flexible=True)
    finally:
        c.close()
    r.i32()

    def entry(r):
        e = {"name": r.cstring(), "value": r.cstring(), "read_only": r.boolean(), "source": r.i8(),
             "sensitive": r.boolean()}

        def syn(r):
            r.cstring(), r.cstring(), r.i8()
            r.tags()

        r.carray(syn)
        r.i8(), r.cstring()
        r.tags()
        return e

    def result(r):
        res = {"error": r.i16(), "message": r.cstring(), "type": r.i8(), "name": r.cstring()}
        res["configs"] = r.carray(entry) or []
        r.tags()
        return res

    results = r.carray(result)
    r.tags()
    res = results[0]
    e = res["configs"][0] if res["configs"] else {"value": None, "source": None}
    return res["error"], res["message"], e["value"], e["source"]


def partition_state(node, topic):
    c = K.Conn(node.port, host=node.host)
    try:
        md = K.metadata_v12(c, topics=[topic])
    finally:
        c.close()
    t = md["topics"][0]
    return t, t["partitions"][0]


def wait_isr(node, topic, want, limit=10.0):
    deadline = time.monotonic() + C.bound(limit)
    while True:
        _, p = partition_state(node, topic)
        if p["isr"] == want:
            return p
        check(time.monotonic() < deadline, "broker %d still shows ISR %s for %s, want %s", node.node_id, p["isr"],
              topic, want)
        time.sleep(0.1)


# ---------------------------------------------------------------- cases

@S.case
def alter_partition_from_the_leader():
    from confluent_kafka.admin import NewTopic
    a = C.admin(CL.node(4))
    a.create_topics([NewTopic("isr-raw", 1, replica_assignment=[[4, 5, 6]])], operation_timeout=10)["isr-raw"].result()
    C.wait_topics(CL.node(5), ["isr-raw"])
    t, p = partition_state(CL.node(5), "isr-raw")
    eq((p["leader"], p["leader_epoch"], p["isr"]), (4, 0, [4, 5, 6]), "new partition")
    tid = t["topic_id"]
    e = {n: broker_epoch(CL.node(n)) for n in (4, 5, 6)}
    ctl = active_controller()
    conn = controller_conn(ctl)

    # The leader shrinks the ISR: answered with the state it made.
    since = CL.node(4).log_size()
    top, a = alter_partition_v3(conn, 4, e[4], tid, 0, 0, 0, [(4, e[4]), (5, e[5])])
    eq((top, a["error"], a["leader"], a["leader_epoch"], a["isr"], a["partition_epoch"]), (NONE, NONE, 4, 0, [4, 5], 1),
       "shrink answer")
    # The real leader, broker 4, finds follower 6 caught up and asks for
    # it back itself (its ISR maintenance): partition epoch 2.
    CL.node(4).wait_log(r"isr-raw-0: asking the controller to change the ISR from 2 to 3", since, limit=5)
    wait_isr(CL.node(6), "isr-raw", [4, 5, 6])
    log("ISR [4,5,6] -> [4,5] (partition epoch 1) through controller %d; leader 4 took 6 back itself (epoch 2)",
        ctl.node_id)

    # Kafka's refusals.
    top, a = alter_partition_v3(conn, 4, e[4], tid, 0, 0, 1, [(4, e[4]), (5, e[5])])
    eq((top, a["error"]), (NONE, INVALID_UPDATE_VERSION), "stale partition epoch")
    top, a = alter_partition_v3(conn, 4, e[4] + 1000, tid, 0, 0, 2, [(4, e[4])])
    eq((top, a), (STALE_BROKER_EPOCH, None), "stale broker epoch")
    top, a = alter_partition_v3(conn, 5, e[5], tid, 0, 0, 2, [(4, e[4]), (5, e[5])])
    eq((top, a["error"]), (NONE, INVALID_REQUEST), "not the leader")
    top, a = alter_partition_v3(conn, 4, e[4], tid, 0, 0, 2, [(4, e[4]), (6, e[6] + 1)])
    eq((top, a["error"]), (NONE, INELIGIBLE_REPLICA), "member of another epoch")
    other = [n for n in CL.controllers if n.node_id != ctl.node_id][0]
    oc = controller_conn(other)
    top, a = alter_partition_v3(oc, 4, e[4], tid, 0, 0, 2, [(4, e[4])])
    oc.close()
    eq((top, a), (NOT_CONTROLLER, None), "a controller that is not active")
    conn.close()
    wait_isr(CL.node(4), "isr-raw", [4, 5, 6])


@S.case
def producer_id_blocks_survive_a_failover():
    e = {n: broker_epoch(CL.node(n)) for n in (4, 5, 6)}
    ctl = active_controller()
    conn = controller_conn(ctl)
    eq(allocate_producer_ids(conn, 5, e[5]), (NONE, 0, 1000), "first block")
    eq(allocate_producer_ids(conn, 6, e[6]), (NONE, 1000, 1000), "second block")
    eq(allocate_producer_ids(conn, 6, e[6] - 1)[0], STALE_BROKER_EPOCH, "stale broker epoch")
    conn.close()
    other = [n for n in CL.controllers if n.node_id != ctl.node_id][0]
    oc = controller_conn(other)
    eq(allocate_producer_ids(oc, 5, e[5])[0], NOT_CONTROLLER, "a controller that is not active")
    oc.close()
    # The next active controller goes on after the blocks handed out.
    ctl.kill9()
    survivors = [n for n in CL.controllers if n.alive()]
    deadline = time.monotonic() + C.bound(20)
    while True:
        nl, _, _ = CL.quorum(via=survivors)
        got = (NOT_CONTROLLER,)
        if nl != ctl.node_id:
            c2 = controller_conn(CL.node(nl))
            got = allocate_producer_ids(c2, 4, e[4])
            c2.close()
        if got[0] != NOT_CONTROLLER:
            break
        check(time.monotonic() < deadline, "no active controller after the kill: %s", got)
        time.sleep(0.1)
    eq(got, (NONE, 2000, 1000), "block after the failover")
    log("blocks 0, 1000 from controller %d; 2000 from controller %d after its kill -9", ctl.node_id, nl)
    ctl.start()
    CL.wait_ready()


@S.case
def features_in_api_versions_and_update_features():
    for n, ctl in ((CL.node(4), False), (CL.node(1), True)):
        sup, fin, epoch = api_versions_features(n, controller=ctl)
        eq(sup, {"metadata.version": (1, 21)}, "supported features of node %d" % n.node_id)
        eq(fin, {"metadata.version": 21}, "finalized features of node %d" % n.node_id)
        check(epoch > 0, "finalized features epoch %d", epoch)
    # Through broker 5, forwarded to the active controller.
    err, msg, res = update_features(CL.node(5), 1, [("transaction.version", 2, 1)])
    eq((err, msg, res), (INVALID_UPDATE_VERSION, "The update failed for all features since the following feature "
                         "had an error: Invalid update version 2 for feature transaction.version. Local controller "
                         "%d does not support this feature." % active_controller().node_id, []),
       "transaction.version 2")
    err, msg, res = update_features(CL.node(5), 1, [("metadata.version", 20, 2)], validate_only=True)
    eq((err, msg, res), (NONE, None, [("metadata.version", NONE, "NONE")]), "validate-only downgrade")
    eq(api_versions_features(CL.node(6))[1], {"metadata.version": 21}, "after validate-only")
    err, msg, res = update_features(CL.node(5), 0, [("metadata.version", 20, 2)])  # v0: AllowDowngrade
    eq((err, msg, res), (NONE, None, [("metadata.version", NONE, "NONE")]), "downgrade to 20")
    deadline = time.monotonic() + C.bound(10)
    while api_versions_features(CL.node(6))[1] != {"metadata.version": 20}:
        check(time.monotonic() < deadline, "broker 6 never finalized metadata.version 20")
        time.sleep(0.1)
    err, msg, res = update_features(CL.node(4), 2, [("metadata.version", 21, 1)])
    eq((err, msg, res), (NONE, None, []), "upgrade back to 21 (v2: no results)")
    deadline = time.monotonic() + C.bound(10)
    while api_versions_features(CL.node(6))[1] != {"metadata.version": 21}:
        check(time.monotonic() < deadline, "broker 6 never finalized metadata.version 21 again")
        time.sleep(0.1)
    log("metadata.version 21 -> 20 -> 21 through brokers 5 and 4; broker 6 follows")


@S.case
def sigterm_moves_leaderships_before_the_broker_exits():
    import threading
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic
    assign = [[6, 4], [6, 5], [4, 6], [5, 6], [4, 5], [5, 4]]
    a = C.admin(CL.node(4))
    a.create_topics([NewTopic("handover", 6, replica_assignment=assign)], operation_timeout=10)["handover"].result()
    for n in (4, 5, 6):
        C.wait_topics(CL.node(n), ["handover"])
    _, p = partition_state(CL.node(4), "handover")
    md = {q["partition"]: q for q in partition_state(CL.node(4), "handover")[0]["partitions"]}
    eq([md[i]["leader"] for i in range(6)], [6, 6, 4, 5, 4, 5], "leaders before")

    failed, delivered = [], {i: 0 for i in range(6)}
    stop = threading.Event()

    def on_delivery(err, msg):
        if err is not None:
            failed.append((msg.partition(), str(err)))
        else:
            delivered[msg.partition()] += 1

    prod = Producer({"bootstrap.servers": ",".join(CL.node(i).bootstrap for i in (4, 5, 6)), "acks": "1",
                     "linger.ms": 5, "message.timeout.ms": 30000, "retry.backoff.ms": 50})

    def produce():
        i = 0
        while not stop.is_set():
            prod.produce("handover", b"v%d" % i, partition=i % 6, on_delivery=on_delivery)
            prod.poll(0)
            i += 1
            time.sleep(0.002)

    th = threading.Thread(target=produce)
    th.start()
    try:
        time.sleep(1.0)
        since = CL.node(6).log_size()
        t0 = time.monotonic()
        CL.node(6).stop(limit=15)  # SIGTERM; exit status 0 within the bound
        took = time.monotonic() - t0
        # The moment it is gone, the other brokers already name the new
        # leaders: the controller let it go only once they had them.
        for n in (4, 5):
            parts = {q["partition"]: q for q in partition_state(CL.node(n), "handover")[0]["partitions"]}
            eq([parts[i]["leader"] for i in range(6)], [4, 5, 4, 5, 4, 5], "leaders on broker %d at exit" % n)
            check(all(6 not in parts[i]["isr"] for i in range(6)), "broker %d still lists 6 in an ISR: %s", n,
                  {i: parts[i]["isr"] for i in range(6)})
        text = CL.node(6).log_text(since)
        check("the controller approved the controlled shutdown" in text and "timed out" not in text,
              "broker 6 did not go through an approved controlled shutdown:\n%s", text[-2000:])
        before = dict(delivered)
        time.sleep(1.0)
    finally:
        stop.set()
        th.join()
    left = prod.flush(C.bound(30))
    eq((left, failed), (0, []), "undelivered and failed records")
    check(all(delivered[i] > before[i] for i in range(6)), "a partition stopped taking records: %s -> %s", before,
          delivered)
    log("broker 6 handed leaderships of handover-0/1 to 4/5 and exited %.2fs after SIGTERM; "
        "%d records, none failed", took, sum(delivered.values()))
    CL.node(6).start()
    CL.wait_ready()


@S.case
def a_brokers_own_dynamic_config_through_itself_and_snapshots():
    INVALID_REQ = 42
    # Sent to broker 5 itself (as Kafka's clients route a BROKER
    # resource): it checks its own and refuses another broker's, then
    # forwards what is left to the active controller.
    got = incremental_alter_configs(CL.node(5), [
        (BROKER, "5", [("log.retention.ms", 0, "5000")]),
        (BROKER, "4", [("log.retention.ms", 0, "7000")]),
    ])
    eq(got, [("5", NONE, None), ("4", INVALID_REQ, "Unexpected broker id, expected 5, but received 4")],
       "IncrementalAlterConfigs through broker 5")
    deadline = time.monotonic() + C.bound(10)
    while describe_broker_config(CL.node(5), "5", "log.retention.ms")[2] != "5000":
        check(time.monotonic() < deadline, "broker 5 never applied its own log.retention.ms")
        time.sleep(0.1)
    eq(describe_broker_config(CL.node(5), "5", "log.retention.ms"), (NONE, None, "5000", DYNAMIC_BROKER_CONFIG),
       "broker 5 describes itself")
    eq(describe_broker_config(CL.node(4), "4", "log.retention.ms"), (NONE, None, None, DEFAULT_CONFIG),
       "broker 4 is not changed")
    # Only broker 5 answers for broker 5 (Kafka's ConfigHelper).
    eq(describe_broker_config(CL.node(4), "5", "log.retention.ms")[:2],
       (INVALID_REQ, "Unexpected broker id, expected 4 or empty string, but received 5"), "broker 4 asked for 5")

    # Broker 5 stops; the controllers snapshot and drop the log it would
    # need; it comes back through the leader's snapshot, its own setting
    # in it.
    b5 = CL.node(5)
    epochs = re.findall(r"broker 5: registered \(epoch (\d+)\)", b5.log_text())
    check(epochs, "broker 5 never said it registered")
    csince = {n.node_id: n.log_size() for n in CL.controllers}
    b5.stop()
    more = ["snap%03d" % i for i in range(60)]
    ctl = active_controller()
    size = ctl.log_size()
    C.create_topics(CL.node(4), more, partitions=3, rf=1)
    ctl.wait_log(r"wrote snapshot", size, limit=10)
    since = b5.log_size()
    b5.start()
    CL.wait_ready()
    C.wait_topics(b5, more)
    text = b5.log_text(since)
    check("loaded snapshot" in text, "broker 5 caught up without a snapshot; its log:\n%s", text[-2000:])
    eq(describe_broker_config(b5, "5", "log.retention.ms"), (NONE, None, "5000", DYNAMIC_BROKER_CONFIG),
       "broker 5 after catching up through a snapshot")
    # KIP-966: the epoch it had at its clean shutdown, from its log dir's
    # clean-shutdown marker, reaches the controller in BrokerRegistration.
    prev = []
    for n in CL.controllers:
        prev += re.findall(r"registering broker 5 \(epoch \d+, previous epoch (-?\d+)\)",
                           n.log_text(csince[n.node_id]))
    eq(prev[-1:], [epochs[-1]], "broker 5's previous broker epoch after its clean restart")
    log("broker 5's log.retention.ms=5000 set through it, kept through %s",
        [l.split(" INFO: ")[-1] for l in text.splitlines() if "loaded snapshot" in l][0])


S.run(setup)
