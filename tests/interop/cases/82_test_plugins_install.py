"""An out-of-tree plugin, the way a third party builds one (issue 4):
`make install` samsa into a temporary root, build plugins/example and
plugins/template there with nothing but `pkg-config --cflags --libs
samsa-plugin` against the installed headers, load the example into the
installed server and check its effect with real clients.

The example is a dependency-free snappy codec (plugins/example/example.c):
loaded instead of codec-snappy, it decompresses the snappy batches kcat
sends and compresses (literals only, xerial framing) the batches of a
topic with compression.type=snappy, which every client must then read.
It also offers a consumer-group assignor, "example-reverse": listed in
group.consumer.assignors, it computes the targets of a KIP-848 group
whose members name it (raw ConsumerGroupHeartbeat, ServerAssignor), as
ConsumerGroupDescribe shows (assignor and each member's target).
"""
# limit: 300
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness as h  # noqa: E402
import kgroups as kg  # noqa: E402
import kwire  # noqa: E402

BUILD = os.path.dirname(os.path.abspath(h.SAMSA_BIN))
suite = h.Suite("82_test_plugins_install", case_limit=180)
state = {}


def find(root, name):
    for d, _dirs, files in os.walk(root):
        if name in files:
            return os.path.join(d, name)
    raise h.Failure("%s not installed under %s" % (name, root))


def setup():
    if not os.path.exists(os.path.join(BUILD, "Makefile")):
        state["skip"] = "no build tree next to %s" % h.SAMSA_BIN
        return
    root = tempfile.mkdtemp(prefix="destdir-", dir=h.WORK)
    h.run(["make", "-C", BUILD, "-s", "install", "DESTDIR=" + root], limit=240)
    pc = find(root, "samsa-plugin.pc")
    state.update(root=root, pc_dir=os.path.dirname(pc), samsa=find(root, "samsa"))
    state["env"] = dict(os.environ, PKG_CONFIG_PATH=state["pc_dir"], PKG_CONFIG_SYSROOT_DIR=root,
                        PKG_CONFIG_LIBDIR=state["pc_dir"])


@suite.case
def installed_layout():
    if state.get("skip"):
        raise h.Skip(state["skip"])
    root = state["root"]
    for f in ("samsa", "samsactl", "samsa-plugin.pc", "plugin.h", "codec.h", "sasl.h", "assignor.h", "tier.h",
              "authz.h", "partitioner.h"):
        find(root, f)
    bindir = os.path.dirname(state["samsa"])
    h.check(os.path.exists(os.path.join(bindir, "samsactl")), "samsactl next to samsa")
    inc = os.path.dirname(find(root, "plugin.h"))
    h.eq(os.path.basename(inc), "samsa", "headers installed in include/samsa")
    # the modules of this build, as .so files in pkglibdir, and nothing of
    # libtool's .la / .a
    mods = [f for f in os.listdir(os.path.join(BUILD, "modules", ".libs")) if f.endswith(".so")] \
        if os.path.isdir(os.path.join(BUILD, "modules", ".libs")) else []
    for m in mods:
        p = find(root, m)
        h.eq(os.path.basename(os.path.dirname(p)), "samsa", "%s installed in pkglibdir" % m)
        h.check(not os.path.exists(p[:-3] + ".a"), "static archive of %s installed", m)
    p = h.run(["pkg-config", "--cflags", "--libs", "samsa-plugin"], env=state["env"])
    flags = p.stdout.decode().split()
    h.check("-I" + os.path.dirname(inc) in flags, "pkg-config cflags name the installed headers: %s", flags)
    h.check("-shared" in flags and "-fPIC" in flags, "pkg-config flags make a shared object: %s", flags)


def build_plugin(name):
    src = os.path.join(h.ROOT, "plugins", name)
    dst = os.path.join(tempfile.mkdtemp(prefix="oot-", dir=h.WORK), name)
    shutil.copytree(src, dst)
    p = h.run(["make", "-C", dst], env=state["env"], limit=60)
    so = os.path.join(dst, name + ".so")
    h.check(os.path.exists(so), "%s.so not built:\n%s", name, p.stdout.decode())
    # only the entry is exported
    syms = h.run(["nm", "-D", "--defined-only", so]).stdout.decode().split()
    h.eq([s for s in syms if s.startswith("samsa")], ["samsa_plugin_entry"], "exported samsa symbols")
    h.check(not any(s.startswith(("codec_", "plugin_", "rb_", "config_")) for s in syms),
            "core symbols in %s: %s", name, syms)
    return dst


@suite.case
def template_builds_and_lists():
    if state.get("skip"):
        raise h.Skip(state["skip"])
    d = build_plugin("template")
    p = h.run([state["samsa"], "--override", "plugin.dir=" + d, "--override", "plugins=template", "--list-plugins"],
              limit=20)
    rows = [l.split() for l in p.stdout.decode().splitlines()[1:]]
    h.eq([r[:4] for r in rows], [["template", "0.1.0", "1.3", "partitioner:template"]], "--list-plugins")
    # its own config check stops startup with its own words
    p = h.run([state["samsa"], "--override", "plugin.dir=" + d, "--override", "plugins=template",
               "--override", "plugin.template.enabled=maybe", "--list-plugins"], limit=20, check_rc=False)
    h.eq(p.returncode, 2, "exit status with a bad plugin.template.enabled")
    h.check("init failed: plugin.template.enabled must be true or false" in p.stderr.decode(),
            "refusal: %s", p.stderr.decode())


class InstalledServer(h.Server):
    def argv(self):
        a = super().argv()
        a[0] = state["samsa"]
        return a


def stored_codecs(srv, topic):
    c = kwire.Conn(srv.port)
    try:
        data = kwire.fetch_v4(c, topic, 0, 0)["records"] or b""
    finally:
        c.close()
    out, pos = [], 0
    while len(data) - pos >= 61:
        end = pos + 12 + struct.unpack(">i", data[pos + 8:pos + 12])[0]
        if end > len(data):
            break
        out.append(struct.unpack(">h", data[pos + 21:pos + 23])[0] & 7)
        pos = end
    return out


@suite.case
def example_codec_in_installed_server():
    if state.get("skip"):
        raise h.Skip(state["skip"])
    d = build_plugin("example")
    p = h.run([state["samsa"], "--override", "plugin.dir=" + d, "--override", "plugins=example", "--list-plugins"],
              limit=20)
    rows = [l.split() for l in p.stdout.decode().splitlines()[1:]]
    h.eq([r[:4] for r in rows], [["example", "1.0.0", "1.3", "codec:snappy(2),assignor:example-reverse"]],
         "--list-plugins")
    # plugins=example leaves out assignor-uniform and assignor-range, so
    # group.consumer.assignors names only the example's assignor
    srv = InstalledServer({"plugin.dir": d, "plugins": "example", "plugin.example.greeting": "built out of tree",
                           "group.consumer.assignors": "example-reverse"},
                          name="installed")
    try:
        srv.wait_log(r"plugin example: example codec ready: built out of tree", 0)
        # snappy from librdkafka, decompressed and validated by the example
        h.ck_create_topic(srv.bootstrap, "in", 1, 1)
        want = [h.rec(b"k%d" % i, b"snappy through the example %d " % i * 8) for i in range(30)]
        h.kcat_produce(srv.bootstrap, "in", 0, want, extra=["-z", "snappy"])
        h.eq(sorted(set(stored_codecs(srv, "in"))), [2], "stored codec of kcat's batches")
        exp = [dict(r, offset=i) for i, r in enumerate(want)]
        h.compare_records(h.ck_consume(srv.bootstrap, "in", 0, 0, 30), exp, "confluent-kafka read",
                          timestamps=False)
        # uncompressed in, compressed by the example: clients must read it
        h.ck_create_topic(srv.bootstrap, "out", 1, 1, config={"compression.type": "snappy"})
        produced = h.ck_produce(srv.bootstrap, "out", want)
        h.eq([p["offset"] for p in produced], list(range(30)), "offsets")
        h.eq(sorted(set(stored_codecs(srv, "out"))), [2], "stored codec after recompression")
        h.compare_records(h.ck_consume(srv.bootstrap, "out", 0, 0, 30), exp, "confluent-kafka read of the example's "
                          "snappy", timestamps=False)
        h.compare_records(h.kcat_consume(srv.bootstrap, "out", 0, 0, 30), exp, "kcat read", timestamps=False)
        r = h.run([h.NODE, os.path.join(h.HERE, "js", "codecs_kafkajs.mjs"), "fetch", srv.bootstrap,
                   json.dumps({"topic": "out", "partition": 0, "offset": 0, "count": 30})], check_rc=False, limit=60)
        res = json.loads(r.stdout.decode().strip().splitlines()[-1])
        if res.get("ok"):
            h.compare_records(h.from_json_records(res["records"]), exp, "kafkajs-snappy read", timestamps=False)
        else:
            h.log("kafkajs read skipped: %s", res.get("error"))
        example_assignor(srv)
    finally:
        srv.stop()


def example_assignor(srv):
    """Two members naming example-reverse over a 3-partition topic: the
    larger member id gets partitions 0 and 2, the other 1."""
    h.ck_create_topic(srv.bootstrap, "as", 3, 1)
    kg.coordinator_port(srv.port, "ex-as", limit=h.bound(10))
    ids = []
    for _ in range(2):
        for _ in range(200):  # while the coordinator loads its partition
            c = kwire.Conn(srv.port)
            try:
                r = kg.consumer_heartbeat(c, "ex-as", "", 0, topics=["as"], owned=[], assignor="example-reverse")
            finally:
                c.close()
            if r["error_code"] != kg.COORDINATOR_LOAD_IN_PROGRESS:
                break
            time.sleep(0.05)
        h.eq(r["error_code"], 0, "join: %s" % r)
        ids.append(r["member_id"])
    c = kwire.Conn(srv.port)
    try:
        d = kg.consumer_group_describe(c, "ex-as")
    finally:
        c.close()
    hi, lo = max(ids), min(ids)
    h.eq((d["assignor"], {m["member_id"]: m["target"] for m in d["members"]}),
         ("example-reverse", {hi: {"as": [0, 2]}, lo: {"as": [1]}}), "the example assignor's targets")


if __name__ == "__main__":
    suite.run(setup)
