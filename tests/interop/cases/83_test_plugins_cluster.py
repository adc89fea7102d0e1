"""Plugins seen from clients (issue 4): the read-only broker config
samsa.plugins.loaded that the server sets at startup from its plugin
registry, `samsactl cluster plugins` printing it as a table, and
`samsactl produce --compression-codec` compressing its batches with the
codec modules of the build.

samsa.plugins.loaded is NAME:VERSION:ABI:CAPS per plugin, joined by ','
(CAPS: kind:name[+kind:name...]); DescribeConfigs reports it read-only
with source DEFAULT_CONFIG (5), as Kafka reports a value that comes from
neither server.properties nor a dynamic update. AlterConfigs refuses it
with Kafka's message for a read-only key; a file or --override setting it
stops startup with one line.
"""
# limit: 240
import os
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness as h  # noqa: E402
import kwire  # noqa: E402

BUILD = os.path.dirname(os.path.abspath(h.SAMSA_BIN))
MODULES = os.path.join(BUILD, "modules", ".libs")
FIXTURES = os.path.join(BUILD, "tests", "unit", "plugin-fixtures", ".libs")
CODECS = ["gzip", "snappy", "lz4", "zstd"]
CODEC_ID = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
KEY = "samsa.plugins.loaded"
HEADER = "BROKER NAME                 VERSION    ABI   CAPABILITIES"

suite = h.Suite("83_test_plugins_cluster", case_limit=90)
state = {}


def setup():
    p = h.run([h.SAMSA_BIN, "--version"], limit=10)
    state["version"] = p.stdout.decode().split()[1]
    state["srv"] = h.Server()


def srv():
    return state["srv"]


def need_modules(names):
    for n in names:
        if not os.path.exists(os.path.join(MODULES, n + ".so")):
            raise h.Skip("module %s not built as a shared object in this build" % n)


def row(broker, name, version, abi, caps):
    return "%-6s %-20s %-10s %-5s %s" % (broker, name, version, abi, caps)


def cluster_plugins(bootstrap, *extra, rc=0):
    p = h.run([h.SAMSACTL_BIN, "--bootstrap-server", bootstrap, "cluster", "plugins"] + list(extra), limit=30,
              check_rc=False)
    h.eq(p.returncode, rc, "samsactl cluster plugins exit status; stderr: %s" % p.stderr.decode())
    return p.stdout.decode(), p.stderr.decode()


def describe_key(bootstrap):
    from confluent_kafka.admin import AdminClient, ConfigResource
    a = AdminClient({"bootstrap.servers": bootstrap})
    r = ConfigResource("broker", "1")
    return a.describe_configs([r], request_timeout=h.bound(10))[r].result(timeout=h.bound(15))[KEY]


# ------------------------------------------------------------ cluster plugins

@suite.case
def default_modules():
    """No plugins= : every module of the build, in the order --list-plugins
    loads them; the table matches --list-plugins column for column."""
    need_modules(["codec-" + c for c in CODECS] + ["sasl-plain", "sasl-scram", "sasl-oauthbearer", "lua",
                                                  "assignor-uniform", "assignor-range", "assignor-roundrobin"])
    out, _ = cluster_plugins(srv().bootstrap)
    v = state["version"]
    want = [HEADER] + [row(1, "codec-" + c, v, "1.3", "codec:%s(%d)" % (c, CODEC_ID[c])) for c in CODECS] + \
        [row(1, "sasl-plain", v, "1.3", "sasl:PLAIN"),
         row(1, "sasl-scram", v, "1.3", "sasl:SCRAM-SHA-256,sasl:SCRAM-SHA-512"),
         row(1, "sasl-oauthbearer", v, "1.3", "sasl:OAUTHBEARER"),
         row(1, "lua", v, "1.3", "authorizer:lua,partitioner:lua"),
         row(1, "assignor-uniform", v, "1.3", "assignor:uniform"),
         row(1, "assignor-range", v, "1.3", "assignor:range"),
         row(1, "assignor-roundrobin", v, "1.3", "assignor:roundrobin")]
    h.eq(out.splitlines(), want, "samsactl cluster plugins output")
    listing = h.run([h.SAMSA_BIN, "--list-plugins"], limit=20).stdout.decode().splitlines()
    h.eq([l.split()[:4] for l in listing[1:]], [l.split()[1:] for l in want[1:]],
         "--list-plugins NAME VERSION ABI CAPABILITIES")
    e = describe_key(srv().bootstrap)
    h.eq(e.value, ",".join(["codec-%s:%s:1.3:codec:%s(%d)" % (c, v, c, CODEC_ID[c]) for c in CODECS] +
                           ["sasl-plain:%s:1.3:sasl:PLAIN" % v,
                            "sasl-scram:%s:1.3:sasl:SCRAM-SHA-256+sasl:SCRAM-SHA-512" % v,
                            "sasl-oauthbearer:%s:1.3:sasl:OAUTHBEARER" % v,
                            "lua:%s:1.3:authorizer:lua+partitioner:lua" % v,
                            "assignor-uniform:%s:1.3:assignor:uniform" % v,
                            "assignor-range:%s:1.3:assignor:range" % v,
                            "assignor-roundrobin:%s:1.3:assignor:roundrobin" % v]),
         "DescribeConfigs value of " + KEY)
    h.eq((int(e.source), e.is_read_only, e.is_default, e.is_sensitive), (5, True, True, False),
         "source (DEFAULT_CONFIG), read-only, default, sensitive")


@suite.case
def only_codec_zstd():
    need_modules(["codec-zstd"])
    s = h.Server({"plugins": "codec-zstd"}, name="zstd-only")
    try:
        out, _ = cluster_plugins(s.bootstrap)
        h.eq(out.splitlines(), [HEADER, row(1, "codec-zstd", state["version"], "1.3", "codec:zstd(4)")],
             "samsactl cluster plugins output")
        h.eq(describe_key(s.bootstrap).value, "codec-zstd:%s:1.3:codec:zstd(4)" % state["version"],
             "DescribeConfigs value")
    finally:
        s.stop()


@suite.case
def fixture_with_every_capability_kind():
    """The ABI 1.0 fixture registers one capability of each kind: CAPS
    lists them in registration order."""
    so = os.path.join(FIXTURES, "abi_1_0.so")
    if not os.path.exists(so):
        raise h.Skip("fixture %s not built (run make check first)" % so)
    d = tempfile.mkdtemp(prefix="plugins-", dir=h.WORK)
    os.symlink(so, os.path.join(d, "abi-1-0.so"))
    s = h.Server({"plugin.dir": d, "plugins": "abi-1-0", "plugin.abi-1-0.greeting": "hi"}, name="fixture")
    try:
        caps = ["codec:fixture-xor(6)", "sasl:FIXTURE", "assignor:fixture", "tier:fixture", "authorizer:fixture",
                "partitioner:fixture"]
        out, _ = cluster_plugins(s.bootstrap, "--broker", "1")
        h.eq(out.splitlines(), [HEADER, row(1, "abi-1-0", "1.0-fixture", "1.0", ",".join(caps))],
             "samsactl cluster plugins output")
        h.eq(describe_key(s.bootstrap).value, "abi-1-0:1.0-fixture:1.0:" + "+".join(caps), "DescribeConfigs value")
    finally:
        s.stop()


@suite.case
def unknown_broker():
    out, err = cluster_plugins(srv().bootstrap, "--broker", "7", rc=1)
    h.eq(out, "", "stdout")
    h.eq(err, "Error: BROKER_NOT_AVAILABLE: broker 7 is not in the cluster metadata\n", "stderr")


@suite.case
def alter_configs_refused():
    from confluent_kafka.admin import AdminClient, ConfigResource
    from confluent_kafka import KafkaException
    a = AdminClient({"bootstrap.servers": srv().bootstrap})
    before = describe_key(srv().bootstrap).value
    r = ConfigResource("broker", "1", set_config={KEY: "x:1:1.0:"})
    try:
        a.alter_configs([r], request_timeout=h.bound(10))[r].result(timeout=h.bound(15))
        raise h.Failure("AlterConfigs of %s succeeded" % KEY)
    except KafkaException as e:
        err = e.args[0]
        h.eq((err.code(), err.str()), (42, "Cannot update these configs dynamically: Set(%s)" % KEY),
             "AlterConfigs error (INVALID_REQUEST)")
    h.eq(describe_key(srv().bootstrap).value, before, "value after the refused change")


def start_fails(argv_extra, cwd):
    port, cport = h.free_ports(2)
    data = tempfile.mkdtemp(prefix="data-", dir=h.WORK)
    argv = [h.SAMSA_BIN] + argv_extra + [
        "--override", "node.id=1", "--override", "process.roles=broker,controller",
        "--override", "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (port, cport),
        "--override", "controller.quorum.voters=1@127.0.0.1:%d" % cport, "--override", "log.dirs=" + data]
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=h.bound(20), cwd=cwd)
    except subprocess.TimeoutExpired:
        raise h.Failure("samsa did not exit: %s" % " ".join(argv))
    h.eq(p.returncode, 2, "exit status")
    h.eq(os.listdir(data), [], "data dir touched")
    return p.stdout.decode().splitlines()


@suite.case
def configuring_it_stops_startup():
    d = tempfile.mkdtemp(prefix="conf-", dir=h.WORK)
    conf = os.path.join(d, "samsa.conf")
    with open(conf, "w") as f:
        f.write("# plugins are chosen with plugins=, not reported ones\nsamsa.plugins.loaded=codec-gzip\n")
    h.eq(start_fails(["-c", conf], d),
         ["samsa: %s:2: config '%s' value 'codec-gzip': read-only; the server sets it at startup" % (conf, KEY)],
         "output of samsa -c")
    h.eq(start_fails(["--override", KEY + "=x"], d),
         ["samsa: config '%s' value 'x': read-only; the server sets it at startup" % KEY], "output of --override")


# ------------------------------------------------------------ produce --compression-codec

def lines_and_records(tag, n):
    """Input lines for samsactl produce with parse.headers and parse.key,
    and the records they stand for. Values carry compressible text, tabs
    and bytes that are not UTF-8."""
    lines, recs = [], []
    for i in range(n):
        key = ("key-%s-%d" % (tag, i)).encode()
        value = (("%s value %d\t" % (tag, i)).encode() + bytes([0x80 + i % 100, 0xff, 0x01])
                 + b" compressible text " * (1 + i % 9))
        headers = [("h1", b"one"), ("idx", str(i).encode())]
        lines.append(b"h1:one,idx:%d\t%s\t%s" % (i, key, value))
        recs.append(h.rec(key, value, headers=headers))
    return b"\n".join(lines) + b"\n", recs


def raw_codecs(bootstrap, topic):
    """Codec bits of the attributes of every stored batch (raw Fetch v4)."""
    c = kwire.Conn(h.port_of(bootstrap))
    try:
        data = kwire.fetch_v4(c, topic, 0, 0, max_bytes=8 << 20)["records"] or b""
    finally:
        c.close()
    out, pos = [], 0
    while len(data) - pos >= 61:
        blen = struct.unpack(">i", data[pos + 8:pos + 12])[0]
        if pos + 12 + blen > len(data):
            break
        out.append(struct.unpack(">h", data[pos + 21:pos + 23])[0] & 7)
        pos += 12 + blen
    return out


def make_produce_case(codec):
    def case():
        if codec != "none":
            need_modules(["codec-" + codec])
        topic = "samsactl-" + codec
        h.ck_create_topic(srv().bootstrap, topic, 1, 1)
        data, want = lines_and_records(codec, 300)
        t0 = int(time.time() * 1000)
        # batch.size 4096 splits the 300 records into several batches
        h.run([h.SAMSACTL_BIN, "--bootstrap-server", srv().bootstrap, "produce", "--topic", topic,
               "--compression-codec", codec, "--batch-size", "4096", "--property", "parse.key=true",
               "--property", "parse.headers=true"], input=data, limit=30)
        codecs = raw_codecs(srv().bootstrap, topic)
        h.check(len(codecs) > 1, "expected several batches, got %d", len(codecs))
        h.eq(sorted(set(codecs)), [CODEC_ID[codec]], "codec bits of the stored batches")
        want = [dict(r, offset=i) for i, r in enumerate(want)]
        got = h.ck_consume(srv().bootstrap, topic, 0, 0, len(want))
        h.compare_records(got, want, "confluent-kafka read", timestamps=False)
        h.check(all(t0 - 60000 <= r["timestamp"] <= int(time.time() * 1000) + 1000 for r in got),
                "record timestamps are not the produce time")
        h.compare_records(h.kcat_consume(srv().bootstrap, topic, 0, 0, len(want)), want, "kcat read",
                          timestamps=False)
    case.__name__ = "produce_%s_read_by_confluent_kcat" % codec
    return case


for _c in ["none"] + CODECS:
    suite.case(make_produce_case(_c))


@suite.case
def produce_codec_not_available():
    """A codec whose module samsactl cannot load is refused before any
    record is read or sent."""
    need_modules(["codec-gzip", "codec-zstd"])
    d = tempfile.mkdtemp(prefix="plugins-", dir=h.WORK)
    os.symlink(os.path.join(MODULES, "codec-zstd.so"), os.path.join(d, "codec-zstd.so"))
    topic = "samsactl-missing-codec"
    h.ck_create_topic(srv().bootstrap, topic, 1, 1)
    env = dict(os.environ, SAMSA_PLUGIN_DIR=d)
    p = h.run([h.SAMSACTL_BIN, "--bootstrap-server", srv().bootstrap, "produce", "--topic", topic,
               "--compression-codec", "gzip"], input=b"a\nb\n", env=env, check_rc=False, limit=30)
    h.eq(p.returncode, 2, "exit status")
    err = p.stderr.decode().splitlines()
    h.eq(len(err), 1, "stderr lines: %r" % err)
    prefix = "samsactl produce: compression codec 'gzip' is not available: no codec module for it in %s (" % d
    h.check(err[0].startswith(prefix), "stderr: %s", err[0])
    h.eq(raw_codecs(srv().bootstrap, topic), [], "batches stored")
    # the module that is there works
    h.run([h.SAMSACTL_BIN, "--bootstrap-server", srv().bootstrap, "produce", "--topic", topic,
           "--compression-codec", "zstd"], input=b"a\nb\n", env=env, limit=30)
    h.eq(raw_codecs(srv().bootstrap, topic), [CODEC_ID["zstd"]], "codec of the batch stored")


if __name__ == "__main__":
    suite.run(setup)
