"""Admin with kafka-python 2.0.2's KafkaAdminClient: create (partitions,
configs, validate-only), list, describe, CreatePartitions, AlterConfigs,
DescribeConfigs (with synonyms), delete, and the exact error classes."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Server, Suite, Failure, check, eq, bound  # noqa: E402
from kafka.admin import KafkaAdminClient, NewTopic, NewPartitions, ConfigResource, ConfigResourceType  # noqa: E402
from kafka import errors as KE  # noqa: E402

S = Suite("admin_kafka_python")
srv = None
_admin = None
A = "kp-a"
TMO = int(bound(15000))
DYNAMIC_TOPIC, DEFAULT = 1, 5


def setup():
    global srv
    srv = Server()


def admin():
    global _admin
    if _admin is None:
        _admin = KafkaAdminClient(bootstrap_servers=srv.bootstrap, request_timeout_ms=TMO,
                                  api_version_auto_timeout_ms=int(bound(10000)), client_id="samsa-interop-kp")
    return _admin


def expect_exc(fn, exc, what):
    try:
        r = fn()
    except exc as e:
        return e
    except Exception as e:  # noqa: BLE001
        raise Failure("%s: expected %s, got %s: %s" % (what, exc.__name__, type(e).__name__, str(e)[:300]))
    raise Failure("%s: expected %s, but it succeeded: %r" % (what, exc.__name__, r))


def describe(names):
    return {t["topic"]: t for t in admin().describe_topics(names)}


def check_partitions(t, n, what):
    eq(t["error_code"], 0, "%s: topic error" % what)
    parts = sorted(t["partitions"], key=lambda p: p["partition"])
    eq([p["partition"] for p in parts], list(range(n)), "%s: partitions" % what)
    for p in parts:
        eq((p["error_code"], p["leader"], list(p["replicas"]), list(p["isr"])), (0, 1, [1], [1]),
           "%s: partition %d (error, leader, replicas, isr)" % (what, p["partition"]))


@S.case
def create_list_describe():
    a = admin()
    r = a.create_topics([NewTopic(A, 3, 1, topic_configs={"retention.ms": "3600000", "cleanup.policy": "compact"})],
                        timeout_ms=TMO)
    eq([tuple(e[:2]) for e in r.topic_errors], [(A, 0)], "create_topics result")
    r = a.create_topics([NewTopic("kp-v", 2, 1)], timeout_ms=TMO, validate_only=True)
    eq([tuple(e[:2]) for e in r.topic_errors], [("kp-v", 0)], "validate-only create result")
    names = a.list_topics()
    check(A in names, "%s listed: %s" % (A, names))
    check("kp-v" not in names, "validate-only topic must not exist: %s" % names)
    check_partitions(describe([A])[A], 3, A)


@S.case
def create_errors():
    a = admin()
    cases = [
        (NewTopic(A, 1, 1), KE.TopicAlreadyExistsError),
        (NewTopic("kp-zero", 0, 1), KE.InvalidPartitionsError),
        (NewTopic("kp-neg", -5, 1), KE.InvalidPartitionsError),
        (NewTopic("kp-rf3", 1, 3), KE.InvalidReplicationFactorError),
        (NewTopic("..", 1, 1), KE.InvalidTopicError),
        (NewTopic("bad/name", 1, 1), KE.InvalidTopicError),
        (NewTopic("a b", 1, 1), KE.InvalidTopicError),
        (NewTopic("y" * 250, 1, 1), KE.InvalidTopicError),
        (NewTopic("kp-badkey", 1, 1, topic_configs={"no.such.config": "1"}), KE.InvalidConfigurationError),
        (NewTopic("kp-badval", 1, 1, topic_configs={"retention.ms": "abc"}), KE.InvalidConfigurationError),
    ]
    for nt, exc in cases:
        expect_exc(lambda: a.create_topics([nt], timeout_ms=TMO), exc, "create %r (%d partitions, rf %d)"
                   % (nt.name[:40], nt.num_partitions, nt.replication_factor))
    names = a.list_topics()
    for nt, _ in cases[1:]:
        check(nt.name not in names, "refused topic %r exists" % nt.name[:40])


@S.case
def create_partitions():
    a = admin()
    r = a.create_partitions({A: NewPartitions(6)}, timeout_ms=TMO)
    eq([tuple(e[:2]) for e in r.topic_errors], [(A, 0)], "create_partitions 3 -> 6")
    check_partitions(describe([A])[A], 6, "%s after CreatePartitions" % A)
    expect_exc(lambda: a.create_partitions({A: NewPartitions(2)}, timeout_ms=TMO), KE.InvalidPartitionsError,
               "create_partitions 6 -> 2")
    expect_exc(lambda: a.create_partitions({"kp-missing": NewPartitions(2)}, timeout_ms=TMO),
               KE.UnknownTopicOrPartitionError, "create_partitions of a missing topic")
    check_partitions(describe([A])[A], 6, "%s after refused CreatePartitions" % A)


def configs(name, synonyms=False):
    resps = admin().describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)], include_synonyms=synonyms)
    out = {}
    for resp in resps:
        for res in resp.resources:
            err, msg, rtype, rname, entries = res[:5]
            out["__error__"] = err
            for e in entries:
                out[e[0]] = e
    return out


def check_entry(entries, name, value, source, what):
    check(name in entries, "%s: %s missing from DescribeConfigs" % (what, name))
    e = entries[name]
    # v1+: (name, value, read_only, config_source, is_sensitive, synonyms)
    eq((e[1], e[3]), (value, source), "%s: %s (value, config_source)" % (what, name))


@S.case
def describe_configs_with_synonyms():
    ent = configs(A, synonyms=True)
    eq(ent["__error__"], 0, "describe_configs error")
    check_entry(ent, "retention.ms", "3600000", DYNAMIC_TOPIC, A)
    check_entry(ent, "cleanup.policy", "compact", DYNAMIC_TOPIC, A)
    check_entry(ent, "segment.bytes", "1073741824", DEFAULT, A)
    # synonyms: the topic override first, then the broker default
    syn = [(s[0], s[1], s[2]) for s in ent["retention.ms"][5]]
    check(syn and syn[0] == ("retention.ms", "3600000", DYNAMIC_TOPIC),
          "retention.ms synonyms start with the topic override: %s" % syn)
    syn = [(s[0], s[1], s[2]) for s in ent["cleanup.policy"][5]]
    check(("log.cleanup.policy", "delete", DEFAULT) in syn, "cleanup.policy synonyms include the broker default: %s" % syn)
    ent = configs("kp-missing")
    eq(ent["__error__"], 3, "describe_configs of a missing topic (UNKNOWN_TOPIC_OR_PARTITION)")


@S.case
def alter_configs():
    a = admin()

    def alter(name, cfg):
        r = a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, name, configs=cfg)])
        return [res[0] for res in r.resources]

    eq(alter(A, {"retention.ms": "100000", "max.message.bytes": "5000"}), [0], "alter_configs")
    ent = configs(A)
    check_entry(ent, "retention.ms", "100000", DYNAMIC_TOPIC, "after alter")
    check_entry(ent, "max.message.bytes", "5000", DYNAMIC_TOPIC, "after alter")
    check_entry(ent, "cleanup.policy", "delete", DEFAULT, "after alter (replaced away)")
    eq(alter(A, {"retention.ms": "abc"}), [40], "alter_configs retention.ms=abc (INVALID_CONFIG)")
    eq(alter(A, {"no.such.config": "1"}), [40], "alter_configs unknown key (INVALID_CONFIG)")
    eq(alter("kp-missing", {"retention.ms": "1"}), [3], "alter_configs of a missing topic")
    check_entry(configs(A), "retention.ms", "100000", DYNAMIC_TOPIC, "after refused alters")


@S.case
def delete_topics():
    a = admin()
    r = a.delete_topics([A], timeout_ms=TMO)
    eq([tuple(e[:2]) for e in r.topic_error_codes], [(A, 0)], "delete_topics")
    expect_exc(lambda: a.delete_topics(["kp-missing"], timeout_ms=TMO), KE.UnknownTopicOrPartitionError,
               "delete a missing topic")
    deadline = time.monotonic() + bound(10)
    while A in a.list_topics():
        check(time.monotonic() < deadline, "%s still listed after deletion" % A)
        time.sleep(0.1)
    t = describe([A])[A]
    eq(t["error_code"], 3, "describe_topics of the deleted topic (UNKNOWN_TOPIC_OR_PARTITION)")


if __name__ == "__main__":
    S.run(setup)
