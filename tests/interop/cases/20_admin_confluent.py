"""Admin with confluent-kafka's AdminClient (librdkafka 2.0.2) and kcat -L:
create (partitions, configs, validate-only), list, describe, CreatePartitions,
AlterConfigs, DescribeConfigs, delete, and the exact Kafka error of every
refused request."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import (Server, Suite, Failure, check, eq, bound, ck_admin, kcat_metadata, port_of,  # noqa: E402
                     raw_read_all)
import kwire  # noqa: E402
from confluent_kafka import KafkaError, KafkaException  # noqa: E402
from confluent_kafka.admin import NewTopic, NewPartitions, ConfigResource, ConfigSource  # noqa: E402

S = Suite("admin_confluent")
srv = None
A = "ck-a"
CFG = {"retention.ms": "3600000", "cleanup.policy": "compact", "max.message.bytes": "2000000"}
T = bound(15)


def setup():
    global srv
    srv = Server()


def admin():
    return ck_admin(srv.bootstrap)


def expect_code(fut, code, what):
    try:
        r = fut.result(timeout=T)
    except KafkaException as e:
        err = e.args[0]
        if err.code() != code:
            raise Failure("%s: expected %s, got %s (%s)" % (what, KafkaError(code).name(), err.name(), err.str()))
        return err
    raise Failure("%s: expected %s, but it succeeded (%r)" % (what, KafkaError(code).name(), r))


def topics_now(a):
    return a.list_topics(timeout=T).topics


def wait_gone(a, name):
    deadline = time.monotonic() + bound(10)
    while name in topics_now(a):
        check(time.monotonic() < deadline, "%s still listed %.0fs after deletion" % (name, bound(10)))
        time.sleep(0.1)


def check_partitions(tmd, n, what):
    eq(tmd.error, None, "%s: topic error" % what)
    eq(sorted(tmd.partitions), list(range(n)), "%s: partition ids" % what)
    for pid, p in tmd.partitions.items():
        eq((p.leader, list(p.replicas), list(p.isrs), p.error), (1, [1], [1], None),
           "%s: partition %d (leader, replicas, isrs, error)" % (what, pid))


def topic_id(name):
    c = kwire.Conn(srv.port)
    try:
        t = kwire.metadata_v12(c, [name])["topics"][0]
        eq(t["error_code"], 0, "Metadata v12 %s" % name)
        return t["topic_id"]
    finally:
        c.close()


@S.case
def create_list_describe():
    a = admin()
    fs = a.create_topics([NewTopic(A, 3, 1, config=CFG), NewTopic("ck-b", 1, 1)],
                         operation_timeout=T, request_timeout=T)
    for name, f in fs.items():
        eq(f.result(timeout=T), None, "create %s" % name)
    fs = a.create_topics([NewTopic("ck-v", 2, 1, config={"retention.ms": "1000"})], validate_only=True,
                         request_timeout=T)
    eq(fs["ck-v"].result(timeout=T), None, "validate-only create")
    topics = topics_now(a)
    check(A in topics and "ck-b" in topics, "created topics listed: %s" % sorted(topics))
    check("ck-v" not in topics, "a validate-only topic must not exist: %s" % sorted(topics))
    check_partitions(topics[A], 3, A)
    check_partitions(topics["ck-b"], 1, "ck-b")
    md = a.list_topics(topic=A, timeout=T)
    eq(sorted(md.topics), [A], "list_topics(topic=) names")
    eq([b.id for b in md.brokers.values()], [1], "broker ids")
    eq((md.brokers[1].host, md.brokers[1].port), ("127.0.0.1", srv.port), "broker address")
    eq(md.controller_id, 1, "controller id")
    tid = topic_id(A)
    check(tid != "00000000-0000-0000-0000-000000000000", "topic id assigned")
    check(tid != topic_id("ck-b"), "distinct topic ids")


@S.case
def create_errors():
    a = admin()
    long_ok = "t" * 249
    specs = {
        A: (NewTopic(A, 1, 1), KafkaError.TOPIC_ALREADY_EXISTS),
        "ck-zero": (NewTopic("ck-zero", 0, 1), KafkaError.INVALID_PARTITIONS),
        "ck-rf3": (NewTopic("ck-rf3", 1, 3), KafkaError.INVALID_REPLICATION_FACTOR),
        "..": (NewTopic("..", 1, 1), KafkaError.TOPIC_EXCEPTION),
        ".": (NewTopic(".", 1, 1), KafkaError.TOPIC_EXCEPTION),
        "bad/name": (NewTopic("bad/name", 1, 1), KafkaError.TOPIC_EXCEPTION),
        "a b": (NewTopic("a b", 1, 1), KafkaError.TOPIC_EXCEPTION),
        "x" * 250: (NewTopic("x" * 250, 1, 1), KafkaError.TOPIC_EXCEPTION),
        "ck-badkey": (NewTopic("ck-badkey", 1, 1, config={"no.such.config": "1"}), KafkaError.INVALID_CONFIG),
        "ck-badval": (NewTopic("ck-badval", 1, 1, config={"retention.ms": "abc"}), KafkaError.INVALID_CONFIG),
        "ck-badenum": (NewTopic("ck-badenum", 1, 1, config={"cleanup.policy": "sometimes"}), KafkaError.INVALID_CONFIG),
    }
    # all in one CreateTopics request: each topic gets its own error
    fs = a.create_topics([s[0] for s in specs.values()], operation_timeout=T, request_timeout=T)
    for name, (_, code) in specs.items():
        expect_code(fs[name], code, "create %r" % name[:40])
    # validate-only validates too
    fs = a.create_topics([NewTopic("ck-v2", 1, 1, config={"retention.ms": "abc"})], validate_only=True,
                         request_timeout=T)
    expect_code(fs["ck-v2"], KafkaError.INVALID_CONFIG, "validate-only create with retention.ms=abc")
    # boundary: 249 characters is a legal name
    fs = a.create_topics([NewTopic(long_ok, 1, 1)], operation_timeout=T, request_timeout=T)
    eq(fs[long_ok].result(timeout=T), None, "create a 249-character topic")
    topics = topics_now(a)
    for name in specs:
        if name != A:
            check(name not in topics, "refused topic %r exists" % name[:40])
    check(long_ok in topics, "249-character topic listed")


@S.case
def create_partitions():
    a = admin()
    fs = a.create_partitions([NewPartitions(A, 5)], operation_timeout=T, request_timeout=T)
    eq(fs[A].result(timeout=T), None, "create_partitions 3 -> 5")
    check_partitions(topics_now(a)[A], 5, "%s after CreatePartitions" % A)
    fs = a.create_partitions([NewPartitions(A, 8)], validate_only=True, request_timeout=T)
    eq(fs[A].result(timeout=T), None, "validate-only create_partitions 5 -> 8")
    check_partitions(topics_now(a)[A], 5, "%s after validate-only CreatePartitions" % A)
    fs = a.create_partitions([NewPartitions(A, 4), NewPartitions("ck-b", 1), NewPartitions("ck-missing", 3)],
                             request_timeout=T)
    expect_code(fs[A], KafkaError.INVALID_PARTITIONS, "create_partitions 5 -> 4")
    expect_code(fs["ck-b"], KafkaError.INVALID_PARTITIONS, "create_partitions 1 -> 1")
    expect_code(fs["ck-missing"], KafkaError.UNKNOWN_TOPIC_OR_PART, "create_partitions of a missing topic")
    check_partitions(topics_now(a)[A], 5, "%s after refused CreatePartitions" % A)


def describe(a, name):
    res = ConfigResource(ConfigResource.Type.TOPIC, name)
    fs = a.describe_configs([res], request_timeout=T)
    return fs[res].result(timeout=T)


def check_entry(entries, name, value, source, what):
    check(name in entries, "%s: %s missing from DescribeConfigs (got %d entries)" % (what, name, len(entries)))
    e = entries[name]
    eq((e.value, ConfigSource(e.source).name, e.is_default), (value, source.name, source == ConfigSource.DEFAULT_CONFIG),
       "%s: %s (value, source, is_default)" % (what, name))


@S.case
def describe_configs():
    a = admin()
    entries = describe(a, A)
    D = ConfigSource.DYNAMIC_TOPIC_CONFIG
    DEF = ConfigSource.DEFAULT_CONFIG
    check_entry(entries, "retention.ms", "3600000", D, A)
    check_entry(entries, "cleanup.policy", "compact", D, A)
    check_entry(entries, "max.message.bytes", "2000000", D, A)
    check_entry(entries, "segment.bytes", "1073741824", DEF, A)
    check_entry(entries, "min.insync.replicas", "1", DEF, A)
    check_entry(entries, "message.timestamp.type", "CreateTime", DEF, A)
    check_entry(entries, "compression.type", "producer", DEF, A)
    check_entry(entries, "retention.bytes", "-1", DEF, A)
    for name in ("segment.ms", "flush.messages", "unclean.leader.election.enable", "min.compaction.lag.ms"):
        check(name in entries, "%s listed by DescribeConfigs" % name)
    entries = describe(a, "ck-b")
    check_entry(entries, "retention.ms", "604800000", DEF, "ck-b")
    check_entry(entries, "cleanup.policy", "delete", DEF, "ck-b")


@S.case
def alter_configs():
    a = admin()
    D = ConfigSource.DYNAMIC_TOPIC_CONFIG
    DEF = ConfigSource.DEFAULT_CONFIG
    # validate-only changes nothing
    res = ConfigResource(ConfigResource.Type.TOPIC, A, set_config={"retention.ms": "1"})
    eq(a.alter_configs([res], validate_only=True, request_timeout=T)[res].result(timeout=T), None,
       "validate-only alter_configs")
    check_entry(describe(a, A), "retention.ms", "3600000", D, "after validate-only alter")
    # AlterConfigs (non-incremental) replaces the whole set
    res = ConfigResource(ConfigResource.Type.TOPIC, A, set_config={"retention.ms": "7200000",
                                                                    "segment.bytes": "104857600"})
    eq(a.alter_configs([res], request_timeout=T)[res].result(timeout=T), None, "alter_configs")
    entries = describe(a, A)
    check_entry(entries, "retention.ms", "7200000", D, "after alter")
    check_entry(entries, "segment.bytes", "104857600", D, "after alter")
    check_entry(entries, "cleanup.policy", "delete", DEF, "after alter (replaced away)")
    check_entry(entries, "max.message.bytes", "1048588", DEF, "after alter (replaced away)")
    # refused alterations leave the configs as they are
    for cfg, code, what in (({"retention.ms": "abc"}, KafkaError.INVALID_CONFIG, "retention.ms=abc"),
                            ({"no.such.config": "1"}, KafkaError.INVALID_CONFIG, "unknown key"),
                            ({"min.insync.replicas": "0"}, KafkaError.INVALID_CONFIG, "min.insync.replicas=0")):
        res = ConfigResource(ConfigResource.Type.TOPIC, A, set_config=cfg)
        expect_code(a.alter_configs([res], request_timeout=T)[res], code, "alter_configs %s" % what)
    check_entry(describe(a, A), "retention.ms", "7200000", D, "after refused alters")
    res = ConfigResource(ConfigResource.Type.TOPIC, "ck-missing", set_config={"retention.ms": "1000"})
    expect_code(a.alter_configs([res], request_timeout=T)[res], KafkaError.UNKNOWN_TOPIC_OR_PART,
                "alter_configs of a missing topic")


@S.case
def describe_missing_topic():
    a = admin()
    md = a.list_topics(topic="ck-missing", timeout=T)
    check("ck-missing" in md.topics, "list_topics(topic=missing) returns the topic entry")
    err = md.topics["ck-missing"].error
    check(err is not None and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART,
          "metadata error for a missing topic: got %s" % (err,))
    res = ConfigResource(ConfigResource.Type.TOPIC, "ck-missing")
    expect_code(a.describe_configs([res], request_timeout=T)[res], KafkaError.UNKNOWN_TOPIC_OR_PART,
                "describe_configs of a missing topic")


@S.case
def kcat_list_metadata():
    md = kcat_metadata(srv.bootstrap)
    eq([(b["id"], b["name"]) for b in md["brokers"]], [(1, "127.0.0.1:%d" % srv.port)], "kcat -L brokers")
    topics = {t["topic"]: t for t in md["topics"]}
    check(A in topics and "ck-b" in topics, "kcat -L topics: %s" % sorted(topics))
    parts = sorted(topics[A]["partitions"], key=lambda p: p["partition"])
    eq([p["partition"] for p in parts], list(range(5)), "kcat -L partitions of %s" % A)
    for p in parts:
        eq((p["leader"], [r["id"] for r in p["replicas"]], [r["id"] for r in p["isrs"]]), (1, [1], [1]),
           "kcat -L partition %d" % p["partition"])
        check("error" not in p, "kcat -L partition error: %s" % p.get("error"))
    md = kcat_metadata(srv.bootstrap, "ck-missing")
    t = md["topics"][0]
    eq((t["topic"], t.get("error")), ("ck-missing", "Broker: Unknown topic or partition"), "kcat -L -t missing")


@S.case
def delete_topics():
    a = admin()
    old_id = topic_id("ck-b")
    c = kwire.Conn(srv.port)
    try:
        eq(kwire.produce(c, "ck-b", 0, kwire.build_batch([(b"k", b"v", [])]))["error_code"], 0, "produce to ck-b")
    finally:
        c.close()
    eq(raw_read_all(srv.bootstrap, "ck-b", 0)[1], 1, "ck-b high watermark before deletion")
    fs = a.delete_topics(["ck-b", "ck-missing"], operation_timeout=T, request_timeout=T)
    eq(fs["ck-b"].result(timeout=T), None, "delete ck-b")
    expect_code(fs["ck-missing"], KafkaError.UNKNOWN_TOPIC_OR_PART, "delete a missing topic")
    wait_gone(a, "ck-b")
    # the name can be used again, for a new and empty topic with a new id
    fs = a.create_topics([NewTopic("ck-b", 2, 1)], operation_timeout=T, request_timeout=T)
    eq(fs["ck-b"].result(timeout=T), None, "re-create ck-b")
    check_partitions(topics_now(a)["ck-b"], 2, "re-created ck-b")
    check(topic_id("ck-b") != old_id, "a re-created topic gets a new id")
    recs, hw = raw_read_all(srv.bootstrap, "ck-b", 0)
    eq((recs, hw), ([], 0), "re-created topic is empty")


if __name__ == "__main__":
    S.run(setup)
