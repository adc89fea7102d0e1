"""Persistence: topics (names, ids, partition counts), configs and records
survive a clean restart (SIGTERM, exit 0) and a crash (kill -9): every
record acknowledged with acks=all is there, byte-exact, at its offset."""
# limit: 200
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import (Server, Suite, Failure, check, eq, bound, ck_admin, ck_create_topic, ck_produce,  # noqa: E402
                     ck_produce_errors, ck_consume, ck_conf, raw_read_all, rec, compare_records)
import kwire  # noqa: E402
from confluent_kafka import KafkaError  # noqa: E402
from confluent_kafka.admin import NewPartitions, ConfigResource, ConfigSource  # noqa: E402

S = Suite("restart", case_limit=90)
srv = None
T0 = 1720000000000
TOPICS = {"r-a": 3, "r-b": 1, "r-grow": 2}
CONFIGS = {"r-a": {"retention.ms": "86400000", "max.message.bytes": "3000"},
           "r-b": {"cleanup.policy": "compact", "segment.bytes": "1048576"}}
snap = {}


def setup():
    global srv
    srv = Server({"num.partitions": "1"})
    ck_create_topic(srv.bootstrap, "r-a", 3, config=CONFIGS["r-a"])
    ck_create_topic(srv.bootstrap, "r-b", 1, config=CONFIGS["r-b"])
    ck_create_topic(srv.bootstrap, "r-grow", 1)
    ck_create_topic(srv.bootstrap, "r-del", 1)
    a = ck_admin(srv.bootstrap)
    a.create_partitions([NewPartitions("r-grow", 2)], request_timeout=bound(15))["r-grow"].result(timeout=bound(15))
    recs = [rec(b"a-%d" % i, bytes([i % 256]) * (i * 13 % 500) + b"|%d" % i, [("n", b"%d" % i), ("z", b"\x00\x01")],
                i % 3, T0 + i) for i in range(60)]
    # r-a refuses batches over 3000 bytes: keep librdkafka's batches smaller
    ck_produce(srv.bootstrap, "r-a", recs, conf={"batch.size": 2000})
    ck_produce(srv.bootstrap, "r-b", [rec(b"b-%d" % (i % 4), b"vb%d" % i, [], 0, T0 + i) for i in range(12)])
    ck_produce(srv.bootstrap, "r-grow", [rec(b"g", b"on partition 1", [], 1, T0)])
    ck_produce(srv.bootstrap, "r-del", [rec(b"d", b"deleted", [], 0, T0)])
    a.delete_topics(["r-del"], request_timeout=bound(15))["r-del"].result(timeout=bound(15))
    snap.update(snapshot())
    eq(sorted(snap["topics"]), sorted(TOPICS), "topics before the restarts")
    eq([snap["records"][("r-a", p)][1] for p in range(3)], [20, 20, 20], "r-a high watermarks")


def snapshot():
    """The user topics and their records. Internal topics are left out:
    __consumer_offsets appears (and its partitions open) whenever a
    librdkafka consumer with a group.id asks for its coordinator, which
    the consumers here do at their own moment."""
    c = kwire.Conn(srv.port)
    try:
        md = kwire.metadata_v12(c)
    finally:
        c.close()
    topics = {t["name"]: (t["error_code"], t["topic_id"], len(t["partitions"]),
                          sorted((p["partition"], p["leader"], tuple(p["replicas"])) for p in t["partitions"]))
              for t in md["topics"] if not t["name"].startswith("__")}
    records = {}
    for name, (_, _, n, _) in topics.items():
        for p in range(n):
            records[(name, p)] = read_when_ready(name, p)
    return {"topics": topics, "records": records}


def read_when_ready(name, p, limit=20):
    """raw_read_all once the partition serves: after a restart the node
    serves each partition as its log finishes recovering and answers
    NOT_LEADER_OR_FOLLOWER (6) for the others meanwhile, which clients
    retry (a loaded machine makes recovery slow: each fsync waits)."""
    deadline = time.monotonic() + bound(limit)
    while True:
        try:
            return raw_read_all(srv.bootstrap, name, p)
        except Failure as e:
            if "error 6" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def compare_snapshot(what, extra=None):
    now = snapshot()
    eq(sorted(now["topics"]), sorted(snap["topics"]), "%s: topic names" % what)
    for name, t in snap["topics"].items():
        eq(now["topics"][name], t, "%s: %s (error, id, partitions, assignment)" % (what, name))
    for key, (recs, hw) in snap["records"].items():
        got, ghw = now["records"][key]
        want_recs, want_hw = recs, hw
        if extra and key in extra:
            want_recs = recs + extra[key]
            want_hw = hw + len(extra[key])
        eq(ghw, want_hw, "%s: high watermark of %s-%d" % (what, key[0], key[1]))
        eq(len(got), len(want_recs), "%s: records in %s-%d" % (what, key[0], key[1]))
        for i, (g, w) in enumerate(zip(got, want_recs)):
            if g != w:
                raise Failure("%s: %s-%d record %d differs:\n got  %r\n want %r" % (what, key[0], key[1], i, g, w))
    return now


def config_check(what):
    a = ck_admin(srv.bootstrap)
    for name, cfg in CONFIGS.items():
        res = ConfigResource(ConfigResource.Type.TOPIC, name)
        entries = a.describe_configs([res], request_timeout=bound(15))[res].result(timeout=bound(15))
        for k, v in cfg.items():
            e = entries.get(k)
            check(e is not None, "%s: %s %s not described" % (what, name, k))
            eq((e.value, ConfigSource(e.source).name), (v, "DYNAMIC_TOPIC_CONFIG"), "%s: %s %s" % (what, name, k))
        eq(entries["min.insync.replicas"].value, "1", "%s: %s min.insync.replicas (default)" % (what, name))


def behaviour_check(what):
    # r-a's max.message.bytes=3000 still holds
    res, errs = ck_produce_errors(srv.bootstrap, "r-a", [rec(b"big", b"x" * 5000, [], 0)],
                                  conf={"message.max.bytes": 10000000, "linger.ms": 0})
    eq([e.code() for e in errs], [KafkaError.MSG_SIZE_TOO_LARGE], "%s: r-a max.message.bytes after restart" % what)


@S.case
def sigterm_restart_topics_and_records():
    srv.restart()  # checks: exit status 0, no sanitizer report
    compare_snapshot("after SIGTERM restart")
    # through a real client too
    want = [dict(r, partition=0, offset=r["offset"]) for r in snap["records"][("r-a", 0)][0]]
    got = ck_consume(srv.bootstrap, "r-a", 0, 0, len(want))
    eq([(g["offset"], g["key"], g["value"], g["timestamp"], g["headers"]) for g in got],
       [(w["offset"], w["key"], w["value"], w["timestamp"], w["headers"]) for w in want], "r-a-0 via confluent-kafka")
    behaviour_check("after SIGTERM restart")
    # appends continue at the old end
    res = ck_produce(srv.bootstrap, "r-a", [rec(b"after", b"restart-%d" % i, [], 0, T0 + 1000 + i) for i in range(5)],
                     conf={"batch.size": 2000})
    eq([r["offset"] for r in res], [20, 21, 22, 23, 24], "offsets after the restart")
    snap.update(snapshot())


@S.case
def configs_survive_sigterm_restart():
    config_check("before restart")
    srv.restart()
    config_check("after SIGTERM restart")


@S.case
def kill9_keeps_acknowledged_records():
    from confluent_kafka import Producer
    p = Producer(ck_conf(srv.bootstrap, **{"acks": "all", "linger.ms": 1, "message.timeout.ms": int(bound(4000)),
                                           "retries": 0, "batch.size": 2000}))
    acked = {}
    errors = []

    def cb(err, msg):
        if err is None:
            # (delivery reports carry no headers: take them from the key)
            acked[(msg.partition(), msg.offset())] = (msg.key(), msg.value(), msg.timestamp()[1],
                                                      [("i", msg.key()[3:])])
        else:
            errors.append(err)

    i = 0
    deadline = time.monotonic() + bound(30)
    killer = None
    while killer is None or killer.is_alive():
        check(time.monotonic() < deadline, "only %d records acknowledged in %.0fs" % (len(acked), bound(30)))
        if killer is None and len(acked) >= 300:
            # kill -9 from another thread while this one keeps producing
            killer = threading.Thread(target=srv.kill9)
            killer.start()
        p.produce("r-a", key=b"k9-%d" % i, value=b"crash-test-%d" % i, partition=i % 3,
                  headers=[("i", b"%d" % i)], timestamp=T0 + 5000 + i, on_delivery=cb)
        i += 1
        p.poll(0.001)
    killer.join()
    sent = i
    p.purge()  # what was not acknowledged by now never will be
    p.flush(bound(5))
    n_acked = len(acked)
    print("    %d records sent, %d acknowledged before kill -9, %d failed" % (sent, n_acked, len(errors)), flush=True)
    srv.start()
    now = snapshot()
    eq(sorted(now["topics"]), sorted(snap["topics"]), "topics after kill -9")
    for name, t in snap["topics"].items():
        eq(now["topics"][name], t, "after kill -9: %s (error, id, partitions, assignment)" % name)
    for key, (recs, hw) in snap["records"].items():
        got, ghw = now["records"][key]
        check(ghw >= hw, "after kill -9: %s-%d high watermark %d < %d before" % (key[0], key[1], ghw, hw))
        eq(got[:len(recs)], recs, "after kill -9: records of %s-%d from before" % key)
    by_offset = {}
    for part in range(3):
        recs, hw = now["records"][("r-a", part)]
        eq([r["offset"] for r in recs], list(range(hw)), "after kill -9: r-a-%d offsets contiguous" % part)
        for r in recs:
            by_offset[(part, r["offset"])] = (r["key"], r["value"], r["timestamp"], r["headers"])
    missing = [k for k in acked if k not in by_offset]
    check(not missing, "%d acknowledged records missing after kill -9, e.g. %s" % (len(missing), sorted(missing)[:5]))
    for k, v in acked.items():
        eq(by_offset[k], v, "acknowledged record at r-a-%d offset %d" % k)
    behaviour_check("after kill -9")
    snap.update(now)


@S.case
def configs_survive_kill9():
    config_check("after kill -9")


@S.case
def clean_restart_after_crash():
    snap.update(snapshot())
    srv.restart()
    compare_snapshot("SIGTERM restart after the crash recovery")


if __name__ == "__main__":
    S.run(setup)
