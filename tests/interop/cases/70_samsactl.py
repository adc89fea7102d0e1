"""samsactl against samsa, cross-checked with kcat and the raw protocol:
topics create|list|describe|alter|delete, configs describe|alter (with
confluent-kafka's AdminClient), produce with keys and headers,
consume with offsets and partitions. A command samsactl does not have
(or SAMSACTL_BIN missing) is a visible SKIP, not a failure."""
import base64
import os
import subprocess
import sys
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import (Server, Suite, Skip, Failure, check, eq, bound, SAMSACTL_BIN, kcat_produce, kcat_consume,  # noqa: E402
                     raw_read_all, rec, compare_records)
import kwire  # noqa: E402

S = Suite("samsactl")
srv = None
_help = {}


def setup():
    global srv
    srv = Server()


def ctl(*args, stdin=None, limit=30, rc=0):
    argv = [SAMSACTL_BIN, "--bootstrap-server", srv.bootstrap] + list(args)
    try:
        p = subprocess.run(argv, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=bound(limit))
    except subprocess.TimeoutExpired:
        raise Failure("samsactl %s timed out" % " ".join(args))
    if rc is not None and p.returncode != rc:
        raise Failure("samsactl %s exited %d (want %d); stdout:\n%s\nstderr:\n%s" % (
            " ".join(args), p.returncode, rc, p.stdout.decode(errors="replace")[-2000:],
            p.stderr.decode(errors="replace")[-2000:]))
    return p


def need(command, action=None):
    """Skips unless samsactl exists and lists the command (and action)."""
    if not os.access(SAMSACTL_BIN, os.X_OK):
        raise Skip("no samsactl at %s" % SAMSACTL_BIN)
    if command not in _help:
        try:
            p = subprocess.run([SAMSACTL_BIN, command, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=10)
            _help[command] = p.stdout.decode(errors="replace") if p.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired):
            _help[command] = None
    h = _help[command]
    if h is None:
        raise Skip("samsactl has no '%s' command" % command)
    if action and action not in h:
        raise Skip("samsactl %s has no '%s'" % (command, action))


def kafka_uuid(u):
    """Kafka prints topic ids as URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.UUID(u).bytes).decode().rstrip("=")


def metadata(names=None):
    c = kwire.Conn(srv.port)
    try:
        return {t["name"]: t for t in kwire.metadata_v12(c, names)["topics"]}
    finally:
        c.close()


@S.case
def topics_create_list_describe():
    need("topics", "create")
    p = ctl("topics", "create", "--topic", "sc-a", "--partitions", "3", "--config", "retention.ms=3600000",
            "--config", "cleanup.policy=compact")
    eq(p.stdout.decode(), "Created topic sc-a.\n", "create output")
    p = ctl("topics", "create", "--topic", "sc-b", "--partitions", "1")
    p = ctl("topics", "create", "--topic", "sc-v", "--partitions", "2", "--validate-only")
    md = metadata()
    eq(sorted(md), ["sc-a", "sc-b"], "topics on the broker (validate-only creates nothing)")
    eq(len(md["sc-a"]["partitions"]), 3, "sc-a partitions")
    p = ctl("topics", "list")
    eq(p.stdout.decode(), "sc-a\nsc-b\n", "topics list output")
    p = ctl("topics", "describe", "--topic", "sc-a")
    lines = p.stdout.decode().splitlines()
    head = lines[0].split("\t")
    eq(head[:4], ["Topic: sc-a", "TopicId: %s" % kafka_uuid(md["sc-a"]["topic_id"]), "PartitionCount: 3",
                  "ReplicationFactor: 1"], "describe header (topic id as Kafka prints it)")
    eq(lines[1:], ["\tTopic: sc-a\tPartition: %d\tLeader: 1\tReplicas: 1\tIsr: 1" % i for i in range(3)],
       "describe partition lines")


@S.case
def topics_create_errors():
    need("topics", "create")
    p = ctl("topics", "create", "--topic", "sc-a", "--partitions", "1", rc=1)
    check("TOPIC_ALREADY_EXISTS" in p.stderr.decode(), "stderr names TOPIC_ALREADY_EXISTS: %s" % p.stderr)
    p = ctl("topics", "create", "--topic", "sc-rf", "--partitions", "1", "--replication-factor", "3", rc=1)
    check("INVALID_REPLICATION_FACTOR" in p.stderr.decode(), "stderr names INVALID_REPLICATION_FACTOR: %s" % p.stderr)
    p = ctl("topics", "create", "--topic", "sc-bad", "--config", "retention.ms=abc", rc=None)
    check(p.returncode in (1, 2) and ("INVALID_CONFIG" in p.stderr.decode() or "retention.ms" in p.stderr.decode()),
          "retention.ms=abc refused (exit %d): %s" % (p.returncode, p.stderr))
    p = ctl("topics", "create", "--topic", "bad/name", rc=2)
    eq(sorted(metadata()), ["sc-a", "sc-b"], "topics after the refused creates")


@S.case
def topics_alter_partitions():
    need("topics", "alter")
    ctl("topics", "alter", "--topic", "sc-b", "--partitions", "4")
    eq(len(metadata(["sc-b"])["sc-b"]["partitions"]), 4, "sc-b partitions after alter")
    p = ctl("topics", "alter", "--topic", "sc-b", "--partitions", "2", rc=1)
    check("INVALID_PARTITIONS" in p.stderr.decode(), "stderr names INVALID_PARTITIONS: %s" % p.stderr)


@S.case
def topics_alter_and_describe_configs():
    need("topics", "alter")
    ctl("topics", "alter", "--topic", "sc-a", "--config", "retention.ms=1000", "--delete-config", "cleanup.policy")
    p = ctl("topics", "describe", "--topic", "sc-a")
    head = p.stdout.decode().splitlines()[0]
    check("Configs: retention.ms=1000" in head and "cleanup.policy" not in head,
          "describe shows the altered configs: %r" % head)


@S.case
def configs_describe_and_alter():
    """samsactl configs, as kafka-configs.sh: a broker's own configs, the
    broker defaults and a topic's, set and deleted; confluent-kafka's
    AdminClient sees what samsactl set, with the same sources."""
    need("configs", "alter")
    from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource
    eq(ctl("configs", "describe", "--broker", "1").stdout.decode(), "Dynamic configs for broker 1 are:\n",
       "no dynamic broker config yet")
    eq(ctl("configs", "alter", "--broker", "1", "--add-config", "log.cleaner.threads=2,log.retention.ms=3600000")
       .stdout.decode(), "Completed updating config for broker 1.\n", "alter broker 1")
    eq(ctl("configs", "alter", "--broker-defaults", "--add-config", "log.retention.ms=7200000").stdout.decode(),
       "Completed updating default config for brokers in the cluster.\n", "alter broker defaults")
    out = ctl("configs", "describe", "--entity-type", "brokers", "--entity-name", "1").stdout.decode()
    eq(sorted(out.splitlines()), sorted([
        "Dynamic configs for broker 1 are:",
        "  log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2, "
        "DEFAULT_CONFIG:log.cleaner.threads=1}",
        "  log.retention.ms=3600000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=3600000, "
        "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=7200000, DEFAULT_CONFIG:log.retention.hours=168}"]),
       "describe broker 1")
    eq(ctl("configs", "describe", "--entity-type", "brokers", "--entity-default").stdout.decode(),
       "Default configs for brokers in the cluster are:\n  log.retention.ms=7200000 sensitive=false "
       "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=7200000}\n", "describe broker defaults")
    ctl("configs", "alter", "--topic", "sc-a", "--add-config", "cleanup.policy=[compact,delete]")
    out = ctl("configs", "describe", "--topic", "sc-a").stdout.decode().splitlines()
    eq(out[0], "Dynamic configs for topic sc-a are:", "topic header")
    check("  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy="
          "compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}" in out, "topic configs %r" % out)

    a = AdminClient({"bootstrap.servers": srv.bootstrap})
    got = {}
    for res, fut in a.describe_configs([ConfigResource("broker", "1"), ConfigResource("topic", "sc-a")]).items():
        got[res.name] = fut.result(timeout=bound(15))
    eq((got["1"]["log.cleaner.threads"].value, got["1"]["log.cleaner.threads"].source),
       ("2", ConfigSource.DYNAMIC_BROKER_CONFIG.value), "confluent-kafka: log.cleaner.threads")
    eq(got["1"]["log.retention.ms"].value, "3600000", "confluent-kafka: log.retention.ms")
    eq(got["sc-a"]["cleanup.policy"].value, "compact,delete", "confluent-kafka: cleanup.policy")

    # deleted again, and refusals as Kafka words them
    ctl("configs", "alter", "--broker", "1", "--delete-config", "log.cleaner.threads,log.retention.ms")
    ctl("configs", "alter", "--broker-defaults", "--delete-config", "log.retention.ms")
    ctl("configs", "alter", "--topic", "sc-a", "--delete-config", "cleanup.policy")
    eq(ctl("configs", "describe", "--broker", "1").stdout.decode(), "Dynamic configs for broker 1 are:\n",
       "broker 1 after delete")
    eq(ctl("configs", "describe", "--topic", "sc-a").stdout.decode(),
       "Dynamic configs for topic sc-a are:\n  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
       "retention.ms=1000, DEFAULT_CONFIG:log.retention.hours=168}\n", "sc-a after delete (topics alter set retention.ms)")
    p = ctl("configs", "alter", "--topic", "nope", "--add-config", "retention.ms=1", rc=1)
    check(b"UNKNOWN_TOPIC_OR_PARTITION" in p.stderr, "unknown topic: %r" % p.stderr)
    p = ctl("configs", "alter", "--broker", "1", "--add-config", "log.cleaner.threads=many", rc=1)
    check(b"log.cleaner.threads" in p.stderr, "bad value: %r" % p.stderr)
    p = ctl("configs", "describe", rc=2)
    check(b"--broker ID, --broker-defaults or --topic NAME" in p.stderr, "no entity: %r" % p.stderr)


@S.case
def produce_keys_headers_then_kcat_reads():
    need("produce")
    # (an empty headers field is an error, as in Kafka's console producer)
    data = b"h1:v1,h2:v2\tkey-1\tvalue one\nh3:x\tkey-2\tvalue two\nh5:\xff\xfe,h5:again\tkey-3\t\x00bin\nh4:\tk4\t\n"
    ctl("produce", "--topic", "sc-a", "--partition", "1", "--property", "parse.key=true", "--property",
        "parse.headers=true", "--linger-ms", "5", stdin=data)
    got = kcat_consume(srv.bootstrap, "sc-a", 1, 0, 4)
    want = [rec(b"key-1", b"value one", [("h1", b"v1"), ("h2", b"v2")], 1),
            rec(b"key-2", b"value two", [("h3", b"x")], 1),
            rec(b"key-3", b"\x00bin", [("h5", b"\xff\xfe"), ("h5", b"again")], 1),
            rec(b"k4", b"", [("h4", b"")], 1)]
    compare_records(got, [dict(w, offset=i) for i, w in enumerate(want)], "samsactl produce -> kcat",
                    timestamps=False)
    eq(raw_read_all(srv.bootstrap, "sc-a", 1)[1], 4, "high watermark")
    for p in (0, 2):
        eq(raw_read_all(srv.bootstrap, "sc-a", p)[1], 0, "partition %d untouched" % p)


@S.case
def kcat_produces_then_samsactl_consumes():
    need("consume")
    recs = [rec(b"kk%d" % i, b"payload %d" % i, [], 2) for i in range(6)]
    kcat_produce(srv.bootstrap, "sc-a", 2, recs, headers=[("src", b"kcat"), ("n", b"1")])
    seen = kcat_consume(srv.bootstrap, "sc-a", 2, 0, 6)
    p = ctl("consume", "--topic", "sc-a", "--partition", "2", "--offset", "2", "--max-messages", "3",
            "--timeout-ms", str(int(bound(5000))), "--property", "print.key=true", "--property", "print.headers=true",
            "--property", "print.offset=true", "--property", "print.partition=true", "--property",
            "print.timestamp=true")
    want = ["CreateTime:%d\tPartition:2\tOffset:%d\tsrc:kcat,n:1\tkk%d\tpayload %d" % (seen[i]["timestamp"], i, i, i)
            for i in range(2, 5)]
    eq(p.stdout.decode().splitlines(), want, "samsactl consume --offset 2 --max-messages 3 output")
    # values only, from the beginning of one partition
    p = ctl("consume", "--topic", "sc-a", "--partition", "2", "--from-beginning", "--max-messages", "6",
            "--timeout-ms", str(int(bound(5000))))
    eq(p.stdout.decode().splitlines(), ["payload %d" % i for i in range(6)], "samsactl consume --from-beginning")


@S.case
def consume_all_partitions_with_null_marker():
    need("consume")
    ctl("produce", "--topic", "sc-b", "--partition", "3", "--property", "parse.key=true", "--property",
        "null.marker=NULL", stdin=b"NULL\tvalue-with-null-key\nkey\tNULL\n")
    got = kcat_consume(srv.bootstrap, "sc-b", 3, 0, 2)
    eq([(r["key"], r["value"]) for r in got], [(None, b"value-with-null-key"), (b"key", None)],
       "null key and null value as kcat reads them")
    p = ctl("consume", "--topic", "sc-b", "--from-beginning", "--max-messages", "2", "--timeout-ms",
            str(int(bound(5000))), "--property", "print.key=true", "--property", "null.literal=<null>")
    eq(sorted(p.stdout.decode().splitlines()), sorted(["<null>\tvalue-with-null-key", "key\t<null>"]),
       "samsactl consume across partitions")


@S.case
def topics_delete():
    need("topics", "delete")
    ctl("topics", "delete", "--topic", "sc-b")
    p = ctl("topics", "delete", "--topic", "sc-missing", rc=1)
    check("UNKNOWN_TOPIC_OR_PARTITION" in p.stderr.decode(), "stderr names UNKNOWN_TOPIC_OR_PARTITION: %s" % p.stderr)
    ctl("topics", "delete", "--topic", "sc-missing", "--if-exists")
    eq(ctl("topics", "list").stdout.decode(), "sc-a\n", "topics list after delete")


if __name__ == "__main__":
    S.run(setup)
