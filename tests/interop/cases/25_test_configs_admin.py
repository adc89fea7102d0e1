"""Configs end to end: DescribeConfigs v0-4, AlterConfigs v0-2 and
IncrementalAlterConfigs v0-1 on TOPIC and BROKER resources, through raw
frames (exact codes, messages, sources, read-only flags, synonyms, types,
documentation), confluent-kafka's and kafka-python's AdminClient and
kafkajs (js/configs_kafkajs.mjs); broker defaults reaching the topics'
effective configs (a produce over the dynamic message.max.bytes is
refused); and everything surviving a restart.

Expected behaviour is Kafka's (KRaft, combined node): ConfigHelper for
DescribeConfigs, ConfigAdminManager.preprocess then ControllerApis /
ConfigurationControlManager / ControllerConfigurationValidator for the
alter APIs."""
# limit: 240
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import (Server, Suite, Failure, check, eq, bound, ck_admin, ck_create_topic, port_of,  # noqa: E402
                     HERE, NODE, run)
import kwire  # noqa: E402
from kwire import W  # noqa: E402

S = Suite("configs", case_limit=90)
srv = None
T = bound(15)

DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 33, 44
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
# ConfigSource ids
DYN_TOPIC, DYN_BROKER, DYN_DEFAULT, STATIC, DEFAULT = 1, 2, 3, 4, 5
# ConfigType ids
BOOLEAN, STRING, INT, LONG, LIST = 1, 2, 3, 5, 7
NONE, MSG_TOO_LARGE, INVALID_TOPIC, UNKNOWN_TOPIC = 0, 10, 17, 3
INVALID_CONFIG, INVALID_REQUEST = 40, 42
INVALID_REQUEST_MSG = ("This most likely occurs because of a request being malformed by the client library or the "
                       "message was sent to an incompatible broker. See the broker logs for more details.")

A, B, C, D = "cf-a", "cf-b", "cf-c", "cf-d"


def setup():
    global srv
    srv = Server()
    ck_create_topic(srv.bootstrap, A, config={"retention.ms": "3600000"})
    for name in (B, C):
        ck_create_topic(srv.bootstrap, name)
    ck_create_topic(srv.bootstrap, D, config={"max.message.bytes": "5000"})


# ---------------------------------------------------------------- raw frames

def _s(w, flex, s):
    return w.cstring(s) if flex else w.string(s)


def _a(w, flex, items, fn):
    return w.carray(items, fn) if flex else w.array(items, fn)


def _rs(r, flex):
    return r.cstring() if flex else r.string()


def _ra(r, flex, fn):
    return r.carray(fn) if flex else r.array(fn)


def describe(resources, version=4, synonyms=True, docs=True):
    """resources: [(type, name, keys|None)]. Returns the results, each a
    dict with error_code, error_message, type, name and configs (a dict by
    name, each entry a dict of the fields the version carries)."""
    flex = version >= 4

    def res(w, x):
        w.i8(x[0])
        _s(w, flex, x[1])
        _a(w, flex, x[2], lambda w, k: _s(w, flex, k))
        if flex:
            w.tags()

    w = W()
    _a(w, flex, resources, res)
    if version >= 1:
        w.boolean(synonyms)
    if version >= 3:
        w.boolean(docs)
    if flex:
        w.tags()
    c = kwire.Conn(port_of(srv.bootstrap))
    try:
        r = c.request(DESCRIBE_CONFIGS, version, w.bytes(), flexible=flex)
    finally:
        c.close()
    r.i32()

    def synonym(r):
        s = (_rs(r, flex), _rs(r, flex), r.i8())
        if flex:
            r.tags()
        return s

    def entry(r):
        e = {"name": _rs(r, flex), "value": _rs(r, flex), "read_only": r.boolean()}
        if version == 0:
            e["is_default"] = r.boolean()
        else:
            e["source"] = r.i8()
        e["sensitive"] = r.boolean()
        if version >= 1:
            e["synonyms"] = _ra(r, flex, synonym)
        if version >= 3:
            e["type"] = r.i8()
            e["doc"] = _rs(r, flex)
        if flex:
            r.tags()
        return e

    def result(r):
        x = {"error_code": r.i16(), "error_message": _rs(r, flex), "type": r.i8(), "name": _rs(r, flex)}
        entries = _ra(r, flex, entry)
        check(entries is not None, "DescribeConfigs v%d: null configs array", version)
        x["configs"] = {e["name"]: e for e in entries}
        check(len(x["configs"]) == len(entries), "DescribeConfigs v%d: a config listed twice", version)
        if flex:
            r.tags()
        return x

    out = _ra(r, flex, result)
    if flex:
        r.tags()
    eq(r.remaining(), 0, "DescribeConfigs v%d trailing bytes" % version)
    return out


def describe1(rtype, name, keys=None, **kw):
    res = describe([(rtype, name, keys)], **kw)
    eq(len(res), 1, "results")
    eq((res[0]["type"], res[0]["name"]), (rtype, name), "result resource")
    return res[0]


def _alter(api, version, resources, validate_only):
    flex = (api == ALTER_CONFIGS and version >= 2) or (api == INCREMENTAL_ALTER_CONFIGS and version >= 1)

    def cfg(w, x):
        _s(w, flex, x[0])
        if api == INCREMENTAL_ALTER_CONFIGS:
            w.i8(x[1])
            _s(w, flex, x[2])
        else:
            _s(w, flex, x[1])
        if flex:
            w.tags()

    def res(w, x):
        w.i8(x[0])
        _s(w, flex, x[1])
        _a(w, flex, x[2], cfg)
        if flex:
            w.tags()

    w = W()
    _a(w, flex, resources, res)
    w.boolean(validate_only)
    if flex:
        w.tags()
    c = kwire.Conn(port_of(srv.bootstrap))
    try:
        r = c.request(api, version, w.bytes(), flexible=flex)
    finally:
        c.close()
    r.i32()

    def resp(r):
        x = (r.i16(), _rs(r, flex), r.i8(), _rs(r, flex))
        if flex:
            r.tags()
        return x

    out = _ra(r, flex, resp)
    if flex:
        r.tags()
    eq(r.remaining(), 0, "alter response trailing bytes")
    return out


def alter(resources, version=2, validate_only=False):
    """Legacy AlterConfigs. resources: [(type, name, [(key, value)])].
    Returns [(error_code, error_message, type, name)] in request order."""
    return _alter(ALTER_CONFIGS, version, resources, validate_only)


def ialter(resources, version=1, validate_only=False):
    """IncrementalAlterConfigs. resources: [(type, name, [(key, op, value)])]."""
    return _alter(INCREMENTAL_ALTER_CONFIGS, version, resources, validate_only)


def expect_result(got, code, msg, what):
    eq((got[0], got[1]), (code, msg), "%s (error code, message)" % what)


def expect_prefix(got, code, prefix, what):
    eq(got[0], code, "%s: error code (message %r)" % (what, got[1]))
    check(got[1] is not None and got[1].startswith(prefix), "%s: message %r does not start with %r", what, got[1],
          prefix)


def entry_of(rtype, name, key, version=4):
    res = describe1(rtype, name, [key], version=version)
    eq(res["error_code"], 0, "describe %s %s" % (name, key))
    check(key in res["configs"], "%s: %s not described (got %s)", name, key, sorted(res["configs"]))
    return res["configs"][key]


def expect_entry(rtype, name, key, value, source, synonyms=None, read_only=False):
    e = entry_of(rtype, name, key)
    eq((e["value"], e["source"], e["read_only"], e["sensitive"]), (value, source, read_only, False),
       "%s %r %s (value, source, read_only, sensitive)" % ({TOPIC: "topic", BROKER: "broker"}[rtype], name, key))
    if synonyms is not None:
        eq(e["synonyms"], synonyms, "%s %r %s synonyms" % ({TOPIC: "topic", BROKER: "broker"}[rtype], name, key))


def produce_size(topic, size):
    """Produces one record with a value of `size` bytes (raw Produce v8);
    returns the partition's error code."""
    batch = kwire.build_batch([(None, b"x" * size, [])])
    c = kwire.Conn(port_of(srv.bootstrap))
    try:
        return kwire.produce(c, topic, 0, batch)["error_code"]
    finally:
        c.close()


# ---------------------------------------------------------------- DescribeConfigs

@S.case
def describe_topic_all_versions():
    for v in range(5):
        res = describe1(TOPIC, A, ["retention.ms", "cleanup.policy", "no.such.config"], version=v)
        eq((res["error_code"], res["error_message"]), (0, None), "v%d error" % v)
        eq(sorted(res["configs"]), ["cleanup.policy", "retention.ms"], "v%d: only the keys asked for" % v)
        rm, cp = res["configs"]["retention.ms"], res["configs"]["cleanup.policy"]
        eq((rm["value"], rm["read_only"], rm["sensitive"]), ("3600000", False, False), "v%d retention.ms" % v)
        eq((cp["value"], cp["read_only"], cp["sensitive"]), ("delete", False, False), "v%d cleanup.policy" % v)
        if v == 0:
            eq((rm["is_default"], cp["is_default"]), (False, True), "v0 is_default")
        else:
            eq((rm["source"], cp["source"]), (DYN_TOPIC, DEFAULT), "v%d config_source" % v)
            eq(rm["synonyms"], [("retention.ms", "3600000", DYN_TOPIC), ("log.retention.hours", "168", DEFAULT)],
               "v%d retention.ms synonyms" % v)
            eq(cp["synonyms"], [("log.cleanup.policy", "delete", DEFAULT)], "v%d cleanup.policy synonyms" % v)
        if v >= 3:
            eq((rm["type"], cp["type"]), (LONG, LIST), "v%d config_type" % v)
            check(rm["doc"] and cp["doc"], "v%d: documentation asked for but missing: %r", v, (rm["doc"], cp["doc"]))
    # synonyms and documentation only when asked
    res = describe1(TOPIC, A, ["retention.ms"], version=4, synonyms=False, docs=False)
    e = res["configs"]["retention.ms"]
    eq((e["synonyms"], e["doc"], e["type"], e["source"]), ([], None, LONG, DYN_TOPIC), "v4 without synonyms/docs")
    # null or empty key list: every topic config
    for keys in (None, []):
        res = describe1(TOPIC, B, keys)
        names = set(res["configs"])
        for k in ("retention.ms", "retention.bytes", "segment.bytes", "segment.ms", "cleanup.policy",
                  "max.message.bytes", "min.insync.replicas", "compression.type", "message.timestamp.type",
                  "unclean.leader.election.enable", "min.compaction.lag.ms", "flush.messages"):
            check(k in names, "%s missing when describing all configs of %s (keys=%r)", k, B, keys)
        check(all(e["source"] == DEFAULT and not e["read_only"] for e in res["configs"].values()),
              "%s has no overrides: every entry DEFAULT_CONFIG and writable", B)
    eq(res["configs"]["retention.ms"]["value"], "604800000", "retention.ms default (168 hours)")
    eq(res["configs"]["segment.bytes"]["type"], INT, "segment.bytes type")


@S.case
def describe_topic_errors():
    res = describe1(TOPIC, "cf-missing")
    eq((res["error_code"], res["error_message"], res["configs"]), (UNKNOWN_TOPIC, None, {}), "missing topic")
    res = describe1(TOPIC, "bad name!")
    eq((res["error_code"], res["error_message"]),
       (INVALID_TOPIC, "Topic name is invalid: 'bad name!' contains one or more characters other than ASCII "
                       "alphanumerics, '.', '_' and '-'"), "invalid topic name")
    res = describe1(TOPIC, "")
    eq((res["error_code"], res["error_message"]),
       (INVALID_TOPIC, "Topic name is invalid: the empty string is not allowed"), "empty topic name")
    # An unknown resource type fails the whole request (Kafka throws while
    # authorizing, and answers every resource with INVALID_REQUEST).
    res = describe([(TOPIC, A, None), (99, "x", None)])
    eq([(x["error_code"], x["error_message"], x["type"], x["name"], x["configs"]) for x in res],
       [(INVALID_REQUEST, INVALID_REQUEST_MSG, TOPIC, A, {}), (INVALID_REQUEST, INVALID_REQUEST_MSG, 99, "x", {})],
       "unknown resource type")


@S.case
def describe_broker():
    res = describe1(BROKER, "1")
    eq(res["error_code"], 0, "describe broker 1")
    cf = res["configs"]
    check(len(cf) > 100, "broker 1: every broker config listed (got %d)", len(cf))
    e = cf["node.id"]
    eq((e["value"], e["source"], e["read_only"], e["type"]), ("1", STATIC, True, INT), "node.id")
    eq(e["synonyms"], [("node.id", "1", STATIC), ("node.id", "1", DEFAULT)], "node.id synonyms")
    e = cf["log.retention.hours"]
    eq((e["value"], e["source"], e["read_only"], e["type"]), ("168", DEFAULT, True, INT), "log.retention.hours")
    e = cf["log.retention.ms"]
    eq((e["value"], e["source"], e["read_only"], e["type"], e["synonyms"]), (None, DEFAULT, False, LONG, []),
       "log.retention.ms (unset: no value)")
    e = cf["min.insync.replicas"]
    eq((e["value"], e["source"], e["read_only"]), ("1", DEFAULT, False), "min.insync.replicas")
    e = cf["auto.create.topics.enable"]
    eq((e["value"], e["source"], e["read_only"], e["type"]), ("false", STATIC, True, BOOLEAN),
       "auto.create.topics.enable (the harness sets it)")
    # the cluster default resource lists only keys with a dynamic default
    res = describe1(BROKER, "")
    eq((res["error_code"], res["configs"]), (0, {}), "cluster default with nothing set")
    # errors
    for name, msg in (("2", "Unexpected broker id, expected 1 or empty string, but received 2"),
                      ("x1", "Broker id must be an integer, but it is: x1")):
        res = describe1(BROKER, name)
        eq((res["error_code"], res["error_message"], res["configs"]), (INVALID_REQUEST, msg, {}), "broker %r" % name)
    for name, msg in (("1", "Unsupported resource type: BROKER_LOGGER"),
                      ("", "Broker id must not be empty"),
                      ("3", "Unexpected broker id, expected 1 but received 3")):
        res = describe1(BROKER_LOGGER, name)
        eq((res["error_code"], res["error_message"]), (INVALID_REQUEST, msg), "broker logger %r" % name)
    # kafka-python (DescribeConfigs v1 here) and confluent-kafka agree
    from kafka.admin import KafkaAdminClient, ConfigResource as KR, ConfigResourceType
    kp = KafkaAdminClient(bootstrap_servers=srv.bootstrap, request_timeout_ms=int(T * 1000))
    try:
        resps = kp.describe_configs([KR(ConfigResourceType.BROKER, "1")], include_synonyms=True)
        ent = {e[0]: e for resp in resps for r in resp.resources for e in r[4]}
        eq(ent["node.id"][1:4], ("1", True, STATIC), "kafka-python: node.id (value, read_only, source)")
    finally:
        kp.close()
    from confluent_kafka.admin import ConfigResource
    r = ConfigResource(ConfigResource.Type.BROKER, "1")
    a = ck_admin(srv.bootstrap)
    got = a.describe_configs([r], request_timeout=T)[r].result(timeout=T)
    e = got["min.insync.replicas"]
    eq((e.value, e.source, e.is_read_only, e.is_default), ("1", DEFAULT, False, True), "confluent: min.insync.replicas")


# ---------------------------------------------------------------- AlterConfigs (legacy)

@S.case
def alter_topic_legacy():
    for v in (0, 1, 2):
        eq(alter([(TOPIC, B, [("retention.ms", "1000"), ("cleanup.policy", "compact")])], version=v),
           [(0, None, TOPIC, B)], "AlterConfigs v%d" % v)
        expect_entry(TOPIC, B, "retention.ms", "1000", DYN_TOPIC)
        expect_entry(TOPIC, B, "cleanup.policy", "compact", DYN_TOPIC)
        # the whole set is replaced: what is not named goes back to its default
        eq(alter([(TOPIC, B, [("segment.ms", "3600000")])], version=v), [(0, None, TOPIC, B)], "AlterConfigs v%d" % v)
        expect_entry(TOPIC, B, "segment.ms", "3600000", DYN_TOPIC)
        expect_entry(TOPIC, B, "retention.ms", "604800000", DEFAULT)
        expect_entry(TOPIC, B, "cleanup.policy", "delete", DEFAULT)
    # validate-only changes nothing
    eq(alter([(TOPIC, B, [("retention.ms", "1")])], validate_only=True), [(0, None, TOPIC, B)], "validate-only")
    expect_entry(TOPIC, B, "retention.ms", "604800000", DEFAULT)
    expect_entry(TOPIC, B, "segment.ms", "3600000", DYN_TOPIC)
    # refusals, each with Kafka's code and message; nothing changes
    one = lambda cfg, name=B, t=TOPIC: alter([(t, name, cfg)])[0]  # noqa: E731
    expect_result(one([("no.such.config", "1")]), INVALID_CONFIG, "Unknown topic config name: no.such.config",
                  "unknown key")
    expect_prefix(one([("retention.ms", "abc")]), INVALID_CONFIG, "Invalid value abc for configuration retention.ms",
                  "retention.ms=abc")
    expect_prefix(one([("min.insync.replicas", "0")]), INVALID_CONFIG,
                  "Invalid value 0 for configuration min.insync.replicas", "min.insync.replicas=0")
    expect_result(one([("retention.ms", "1")], "cf-missing"), UNKNOWN_TOPIC,
                  "The topic 'cf-missing' does not exist.", "missing topic")
    # the configs are checked before the topic's existence
    expect_result(one([("no.such.config", "1")], "cf-missing"), INVALID_CONFIG,
                  "Unknown topic config name: no.such.config", "missing topic, bad config")
    expect_result(one([("retention.ms", "1"), ("retention.ms", "2")]), INVALID_REQUEST,
                  "Error due to duplicate config keys", "duplicate keys")
    expect_result(one([("retention.ms", None), ("segment.ms", None)]), INVALID_REQUEST,
                  "Null value not supported for : retention.ms, segment.ms", "null values")
    expect_result(one([("retention.ms", "1")], ""), INVALID_REQUEST, "Default topic resources are not allowed.",
                  "empty topic name")
    expect_result(one([("retention.ms", "1")], ".."), INVALID_TOPIC, "Topic name is invalid: '..' is not allowed",
                  "topic name ..")
    expect_result(one([("x", "1")], "1", BROKER_LOGGER), INVALID_REQUEST, "Unknown resource type 8", "broker logger")
    expect_result(one([("x", "1")], "1", 99), INVALID_REQUEST, "Unknown resource type 99", "unknown type")
    # a resource twice: both copies refused, the others go through
    got = alter([(TOPIC, B, [("retention.ms", "1")]), (TOPIC, C, [("retention.ms", "7200000")]),
                 (TOPIC, B, [("retention.ms", "2")])])
    eq(got, [(INVALID_REQUEST, "Each resource must appear at most once.", TOPIC, B), (0, None, TOPIC, C),
             (INVALID_REQUEST, "Each resource must appear at most once.", TOPIC, B)], "duplicate resources")
    expect_entry(TOPIC, B, "retention.ms", "604800000", DEFAULT)
    expect_entry(TOPIC, B, "segment.ms", "3600000", DYN_TOPIC)
    expect_entry(TOPIC, C, "retention.ms", "7200000", DYN_TOPIC)
    eq(alter([(TOPIC, C, [])]), [(0, None, TOPIC, C)], "empty AlterConfigs clears the overrides")
    expect_entry(TOPIC, C, "retention.ms", "604800000", DEFAULT)
    # the real clients
    from confluent_kafka import KafkaException, KafkaError
    from confluent_kafka.admin import ConfigResource
    a = ck_admin(srv.bootstrap)
    r = ConfigResource(ConfigResource.Type.TOPIC, C, set_config={"retention.bytes": "1048576"})
    eq(a.alter_configs([r], request_timeout=T)[r].result(timeout=T), None, "confluent alter_configs")
    expect_entry(TOPIC, C, "retention.bytes", "1048576", DYN_TOPIC)
    r = ConfigResource(ConfigResource.Type.TOPIC, C, set_config={"retention.bytes": "x"})
    try:
        a.alter_configs([r], request_timeout=T)[r].result(timeout=T)
        raise Failure("confluent alter_configs retention.bytes=x succeeded")
    except KafkaException as e:
        eq(e.args[0].code(), KafkaError.INVALID_CONFIG, "confluent alter_configs retention.bytes=x")
    from kafka.admin import KafkaAdminClient, ConfigResource as KR, ConfigResourceType
    kp = KafkaAdminClient(bootstrap_servers=srv.bootstrap, request_timeout_ms=int(T * 1000))
    try:
        r = kp.alter_configs([KR(ConfigResourceType.TOPIC, C, configs={"segment.bytes": "1048576"})])
        eq([x[0] for x in r.resources], [0], "kafka-python alter_configs")
    finally:
        kp.close()
    expect_entry(TOPIC, C, "segment.bytes", "1048576", DYN_TOPIC)
    expect_entry(TOPIC, C, "retention.bytes", "-1", DEFAULT)


# ---------------------------------------------------------------- IncrementalAlterConfigs

@S.case
def incremental_topic():
    for v in (0, 1):
        got = ialter([(TOPIC, B, [("retention.ms", SET, "5000"), ("cleanup.policy", APPEND, "compact"),
                                  ("segment.ms", DELETE, None)])], version=v)
        eq(got, [(0, None, TOPIC, B)], "IncrementalAlterConfigs v%d" % v)
        expect_entry(TOPIC, B, "retention.ms", "5000", DYN_TOPIC)
        # APPEND starts from the topic default ("delete")
        expect_entry(TOPIC, B, "cleanup.policy", "delete,compact", DYN_TOPIC)
        expect_entry(TOPIC, B, "segment.ms", "604800000", DEFAULT)
        eq(ialter([(TOPIC, B, [("cleanup.policy", SUBTRACT, "delete")])], version=v), [(0, None, TOPIC, B)],
           "SUBTRACT v%d" % v)
        expect_entry(TOPIC, B, "cleanup.policy", "compact", DYN_TOPIC)
        eq(ialter([(TOPIC, B, [("cleanup.policy", APPEND, "compact,delete")])], version=v), [(0, None, TOPIC, B)],
           "APPEND of a present value v%d" % v)
        expect_entry(TOPIC, B, "cleanup.policy", "compact,delete", DYN_TOPIC)
        eq(ialter([(TOPIC, B, [("cleanup.policy", DELETE, None), ("retention.ms", DELETE, "ignored")])], version=v),
           [(0, None, TOPIC, B)], "DELETE v%d" % v)
        expect_entry(TOPIC, B, "cleanup.policy", "delete", DEFAULT)
        expect_entry(TOPIC, B, "retention.ms", "604800000", DEFAULT)
    # validate-only
    eq(ialter([(TOPIC, B, [("retention.ms", SET, "1")])], validate_only=True), [(0, None, TOPIC, B)],
       "validate-only")
    expect_entry(TOPIC, B, "retention.ms", "604800000", DEFAULT)
    one = lambda cfg, name=B, t=TOPIC: ialter([(t, name, cfg)])[0]  # noqa: E731
    expect_result(one([("retention.ms", APPEND, "1")]), INVALID_CONFIG,
                  "Can't APPEND to key retention.ms because its type is not LIST.", "APPEND to a LONG")
    expect_result(one([("no.such.config", SUBTRACT, "1")]), INVALID_CONFIG,
                  "Can't SUBTRACT to key no.such.config because its type is not LIST.", "SUBTRACT to an unknown key")
    expect_result(one([("retention.ms", SET, None)]), INVALID_REQUEST, "Null value not supported for : retention.ms",
                  "SET null")
    expect_result(one([("retention.ms", 7, "1")]), INVALID_REQUEST, "Unknown operations type 7", "operation 7")
    expect_result(one([("cleanup.policy", APPEND, "sometimes")]), INVALID_CONFIG,
                  one([("cleanup.policy", SET, "delete,sometimes")])[1], "APPEND of a bad value")
    expect_result(one([("retention.ms", SET, "1")], "cf-missing"), UNKNOWN_TOPIC,
                  "The topic 'cf-missing' does not exist.", "missing topic")
    expect_result(one([("a", SET, "1"), ("a", DELETE, None)]), INVALID_REQUEST, "Error due to duplicate config keys",
                  "duplicate keys")
    expect_result(one([("x", SET, "1")], "1", BROKER_LOGGER), INVALID_REQUEST, "Unknown resource type 8",
                  "broker logger")
    expect_entry(TOPIC, B, "cleanup.policy", "delete", DEFAULT)

    # The image follows: produce checks the effective max.message.bytes.
    eq(produce_size(B, 2000), NONE, "produce 2000 bytes to %s" % B)
    eq(ialter([(TOPIC, B, [("max.message.bytes", SET, "1000")])]), [(0, None, TOPIC, B)], "max.message.bytes=1000")
    eq(produce_size(B, 2000), MSG_TOO_LARGE, "produce 2000 bytes over max.message.bytes=1000")
    eq(ialter([(TOPIC, B, [("max.message.bytes", DELETE, None)])]), [(0, None, TOPIC, B)], "delete max.message.bytes")
    eq(produce_size(B, 2000), NONE, "produce 2000 bytes after the override is gone")


# ---------------------------------------------------------------- broker resources

@S.case
def broker_configs():
    MMB = "message.max.bytes"
    # cluster-wide default: every topic without an override follows
    eq(ialter([(BROKER, "", [(MMB, SET, "1000"), ("log.retention.ms", SET, "86400000")])]),
       [(0, None, BROKER, "")], "cluster default message.max.bytes=1000")
    res = describe1(BROKER, "")
    eq(sorted(res["configs"]), ["log.retention.ms", MMB], "cluster default lists its dynamic keys")
    e = res["configs"][MMB]
    eq((e["value"], e["source"], e["read_only"], e["synonyms"]), ("1000", DYN_DEFAULT, False, [(MMB, "1000", DYN_DEFAULT)]),
       "cluster default %s" % MMB)
    expect_entry(BROKER, "1", MMB, "1000", DYN_DEFAULT, [(MMB, "1000", DYN_DEFAULT), (MMB, "1048588", DEFAULT)])
    expect_entry(TOPIC, C, "max.message.bytes", "1000", DYN_DEFAULT, [(MMB, "1000", DYN_DEFAULT), (MMB, "1048588", DEFAULT)])
    expect_entry(TOPIC, C, "retention.ms", "86400000", DYN_DEFAULT)
    expect_entry(TOPIC, A, "retention.ms", "3600000", DYN_TOPIC)  # its override wins
    eq(produce_size(C, 2000), MSG_TOO_LARGE, "produce 2000 bytes under the dynamic message.max.bytes=1000")
    eq(produce_size(D, 2000), NONE, "produce 2000 bytes to a topic with its own max.message.bytes")
    # per-broker beats the cluster default
    eq(ialter([(BROKER, "1", [(MMB, SET, "3000")])]), [(0, None, BROKER, "1")], "broker 1 message.max.bytes=3000")
    expect_entry(BROKER, "1", MMB, "3000", DYN_BROKER,
                 [(MMB, "3000", DYN_BROKER), (MMB, "1000", DYN_DEFAULT), (MMB, "1048588", DEFAULT)])
    expect_entry(TOPIC, C, "max.message.bytes", "3000", DYN_BROKER)
    eq(produce_size(C, 2000), NONE, "produce 2000 bytes under message.max.bytes=3000")
    # validate-only
    eq(ialter([(BROKER, "1", [(MMB, SET, "10")])], validate_only=True), [(0, None, BROKER, "1")], "validate-only")
    eq(alter([(BROKER, "1", [(MMB, "10")])], validate_only=True), [(0, None, BROKER, "1")], "validate-only legacy")
    expect_entry(BROKER, "1", MMB, "3000", DYN_BROKER)

    # refusals (ConfigAdminManager.preprocess and DynamicBrokerConfig)
    one = lambda name, cfg: ialter([(BROKER, name, cfg)])[0]  # noqa: E731
    expect_result(one("", [("num.partitions", SET, "3")]), INVALID_REQUEST,
                  "Cannot update these configs dynamically: Set(num.partitions)", "read-only key")
    expect_result(one("", [("advertised.listeners", SET, "PLAINTEXT://127.0.0.1:%d" % srv.port)]), INVALID_REQUEST,
                  "Cannot update these configs at default cluster level, broker id must be specified: "
                  "Set(advertised.listeners)", "per-broker key at the cluster default")
    expect_result(one("2", [(MMB, SET, "1")]), INVALID_REQUEST, "Unexpected broker id, expected 1, but received 2",
                  "another broker")
    expect_result(one("x", [(MMB, SET, "1")]), INVALID_REQUEST, "Node id must be an integer, but it is: x",
                  "non-numeric broker")
    expect_result(one("1", [("log.retention.ms", APPEND, "1")]), INVALID_CONFIG,
                  "Config value append is not allowed for config key: log.retention.ms", "APPEND to a LONG")
    expect_result(one("1", [(MMB, 9, "1")]), INVALID_REQUEST, "Unknown operations type 9", "operation 9")
    expect_result(one("1", [(MMB, SET, None)]), INVALID_REQUEST, "Null value not supported for : %s" % MMB, "null")
    expect_prefix(one("1", [(MMB, SET, "-5")]), INVALID_REQUEST, "Invalid value -5 for configuration %s" % MMB,
                  "bad value")
    expect_result(alter([(BROKER, "1", [("num.partitions", "3")])])[0], INVALID_REQUEST,
                  "Cannot update these configs dynamically: Set(num.partitions)", "legacy read-only key")
    expect_entry(BROKER, "1", MMB, "3000", DYN_BROKER)

    # legacy AlterConfigs replaces the layer: the cluster default keeps
    # only what it names
    eq(alter([(BROKER, "", [("log.retention.ms", "7200000")])]), [(0, None, BROKER, "")], "legacy cluster default")
    res = describe1(BROKER, "")
    eq({k: (e["value"], e["source"]) for k, e in res["configs"].items()}, {"log.retention.ms": ("7200000", DYN_DEFAULT)},
       "cluster default after legacy AlterConfigs")
    expect_entry(TOPIC, C, "retention.ms", "7200000", DYN_DEFAULT)
    expect_entry(TOPIC, C, "max.message.bytes", "3000", DYN_BROKER)

    # the clients: kafka-python (AlterConfigs v1) on the node, confluent on
    # the node, kafkajs (js/configs_kafkajs.mjs)
    from kafka.admin import KafkaAdminClient, ConfigResource as KR, ConfigResourceType
    kp = KafkaAdminClient(bootstrap_servers=srv.bootstrap, request_timeout_ms=int(T * 1000))
    try:
        r = kp.alter_configs([KR(ConfigResourceType.BROKER, "1", configs={MMB: "4000", "log.cleaner.threads": "2"})])
        eq([x[0] for x in r.resources], [0], "kafka-python alter_configs broker 1")
        # (kafka-python refuses the "" resource name client-side)
        resps = kp.describe_configs([KR(ConfigResourceType.BROKER, "1", configs={"log.cleaner.threads": None})])
        ent = {e[0]: e for resp in resps for x in resp.resources for e in x[4]}
        eq((sorted(ent), ent["log.cleaner.threads"][1:4]), (["log.cleaner.threads"], ("2", False, DYN_BROKER)),
           "kafka-python describe_configs log.cleaner.threads")
    finally:
        kp.close()
    expect_entry(BROKER, "1", "log.cleaner.threads", "2", DYN_BROKER)
    expect_entry(TOPIC, C, "max.message.bytes", "4000", DYN_BROKER)
    from confluent_kafka.admin import ConfigResource
    a = ck_admin(srv.bootstrap)
    r = ConfigResource(ConfigResource.Type.BROKER, "1", set_config={MMB: "5000", "log.cleaner.threads": "2"})
    eq(a.alter_configs([r], request_timeout=T)[r].result(timeout=T), None, "confluent alter_configs broker 1")
    got = a.describe_configs([ConfigResource(ConfigResource.Type.BROKER, "1")], request_timeout=T)
    e = list(got.values())[0].result(timeout=T)[MMB]
    eq((e.value, e.source, e.is_read_only), ("5000", DYN_BROKER, False), "confluent describe %s" % MMB)
    p = run([NODE, os.path.join(HERE, "js", "configs_kafkajs.mjs"), srv.bootstrap], limit=60, check_rc=False)
    out = p.stdout.decode("utf-8", "replace")
    for line in out.splitlines():
        print("      js: " + line.strip(), flush=True)
    if p.returncode != 0:
        raise Failure("configs_kafkajs.mjs exited %d:\n%s\n%s" % (p.returncode, out[-2000:],
                                                                   p.stderr.decode("utf-8", "replace")[-2000:]))
    # kafkajs left: broker 1 {message.max.bytes: 1500}; cluster default
    # {log.retention.ms: 7200000}
    expect_entry(BROKER, "1", MMB, "1500", DYN_BROKER)
    expect_entry(BROKER, "1", "log.cleaner.threads", "1", DEFAULT)
    eq(produce_size(C, 2000), MSG_TOO_LARGE, "produce 2000 bytes under message.max.bytes=1500")


# ---------------------------------------------------------------- restart

@S.case
def survives_restart():
    MMB = "message.max.bytes"
    before = {}
    for rtype, name in ((TOPIC, A), (TOPIC, C), (TOPIC, D), (BROKER, "1"), (BROKER, "")):
        res = describe1(rtype, name)
        eq(res["error_code"], 0, "describe %r before restart" % name)
        before[(rtype, name)] = res["configs"]
    srv.restart()
    for key, cfgs in before.items():
        res = describe1(key[0], key[1])
        eq(res["error_code"], 0, "describe %r after restart" % key[1])
        got = res["configs"]
        eq(sorted(got), sorted(cfgs), "%r: config names after restart" % key[1])
        for k, e in cfgs.items():
            eq(got[k], e, "%r %s after restart" % (key[1], k))
    expect_entry(TOPIC, A, "retention.ms", "3600000", DYN_TOPIC)
    expect_entry(TOPIC, C, "retention.ms", "7200000", DYN_DEFAULT)
    expect_entry(TOPIC, C, "max.message.bytes", "1500", DYN_BROKER)
    expect_entry(BROKER, "1", MMB, "1500", DYN_BROKER)
    expect_entry(BROKER, "", "log.retention.ms", "7200000", DYN_DEFAULT)
    # and the effective configs the broker enforces came back too
    eq(produce_size(C, 2000), MSG_TOO_LARGE, "produce 2000 bytes after restart (message.max.bytes=1500)")
    eq(produce_size(D, 2000), NONE, "produce 2000 bytes to %s after restart" % D)
    # removing the dynamic values after the restart works and persists
    eq(ialter([(BROKER, "1", [(MMB, DELETE, None)]), (BROKER, "", [("log.retention.ms", DELETE, None)])]),
       [(0, None, BROKER, "1"), (0, None, BROKER, "")], "delete the dynamic broker configs")
    srv.restart()
    expect_entry(BROKER, "1", MMB, "1048588", DEFAULT)
    eq(describe1(BROKER, "")["configs"], {}, "cluster default empty after restart")
    expect_entry(TOPIC, C, "retention.ms", "604800000", DEFAULT)
    eq(produce_size(C, 2000), NONE, "produce 2000 bytes once the limit is gone")


if __name__ == "__main__":
    S.run(setup)
