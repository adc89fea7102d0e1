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

The install also carries the systemd unit and the config it names; the
unit's command line starts a broker clients use (installed_service_runs).
"""
# limit: 300
import json
import os
import re
import shutil
import signal
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


@suite.case
def installed_service_runs():
    """The systemd unit `make install` puts in lib/systemd/system names
    the installed samsa and config; its command line, run as the unit
    runs it (in a state directory of its own), starts a broker that real
    clients use, keeps its data under that directory (the config's
    ./data), and stops cleanly on SIGTERM (KillSignal) well within
    TimeoutStopSec."""
    if state.get("skip"):
        raise h.Skip(state["skip"])
    root = state["root"]
    unit = find(root, "samsa.service")
    h.eq(os.path.basename(os.path.dirname(unit)), "system", "unit directory")
    keys = {}
    with open(unit) as f:
        for line in f:
            if "=" in line and not line.startswith("#"):
                k, v = line.rstrip("\n").split("=", 1)
                keys[k] = v
    h.eq((keys.get("KillSignal"), keys.get("WorkingDirectory"), keys.get("StateDirectory")),
         ("SIGTERM", "/var/lib/samsa", "samsa"), "unit settings")
    argv = keys["ExecStart"].split()
    h.eq((os.path.basename(argv[0]), argv[1]), ("samsa", "-c"), "ExecStart %s" % keys["ExecStart"])
    h.eq(argv[0], state["samsa"][len(root):], "ExecStart names the installed samsa")
    conf = root + argv[2]
    h.check(os.path.isfile(conf), "the unit's config %s is not installed", argv[2])
    h.eq(open(conf).read(), open(os.path.join(h.ROOT, "etc", "samsa.conf")).read(), "installed config")
    state_dir = tempfile.mkdtemp(prefix="state-", dir=h.WORK)
    port, cport = h.free_ports(2)
    cmd = [root + argv[0]] + argv[1:2] + [conf] + [
        "--override", "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (port, cport),
        "--override", "controller.quorum.voters=1@127.0.0.1:%d" % cport,
        "--override", "plugin.dir=" + os.path.dirname(find(root, "codec-zstd.so"))]
    logf = open(os.path.join(h.WORK, "service.log"), "wb")
    p = subprocess.Popen(cmd, cwd=state_dir, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT)
    with open(os.path.join(h.WORK, "pids"), "a") as f:
        f.write("%d\n" % p.pid)
    try:
        bootstrap = "127.0.0.1:%d" % port
        deadline = time.monotonic() + h.bound(20)
        while True:
            try:
                c = kwire.Conn(port, timeout=2)
                c.close()
                break
            except OSError:
                h.check(p.poll() is None and time.monotonic() < deadline, "the service did not start")
                time.sleep(0.1)
        h.ck_create_topic(bootstrap, "svc", 1)
        h.kcat_produce(bootstrap, "svc", 0, [h.rec(b"k1", b"v1"), h.rec(b"k2", b"v2")])
        got = h.ck_consume(bootstrap, "svc", 0, 0, 2)
        h.eq([(r["key"], r["value"]) for r in got], [(b"k1", b"v1"), (b"k2", b"v2")], "records read back")
        h.check(os.path.isdir(os.path.join(state_dir, "data", "svc-0")), "the data is not under the state directory")
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=h.bound(60))
        h.eq(rc, 0, "exit status after SIGTERM")
        h.check(time.monotonic() - t0 < int(keys["TimeoutStopSec"]), "stop took longer than TimeoutStopSec")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
        logf.close()


@suite.case
def deb_package_carries_the_service():
    """make deb's package holds the unit and the config, depends on
    adduser and creates the samsa user the unit runs as (postinst)."""
    if state.get("skip"):
        raise h.Skip(state["skip"])
    if not shutil.which("dpkg-deb"):
        raise h.Skip("no dpkg-deb")
    out = os.path.join(h.WORK, "samsa-test.deb")
    h.run(["sh", os.path.join(h.ROOT, "packaging", "deb", "mkdeb.sh"), BUILD, "0.0.0-test", "", out], limit=240)
    files = h.run(["dpkg-deb", "-c", out]).stdout.decode()
    h.check(re.search(r"/lib/systemd/system/samsa\.service$", files, re.M), "no unit in the package")
    h.check(re.search(r"/etc/samsa/samsa\.conf$", files, re.M), "no config in the package")
    h.check(re.search(r"/bin/samsa$", files, re.M), "no samsa in the package")
    control = h.run(["dpkg-deb", "-f", out, "Depends"]).stdout.decode()
    h.check("adduser" in control, "Depends: %s", control)
    tmp = tempfile.mkdtemp(prefix="deb-", dir=h.WORK)
    h.run(["dpkg-deb", "-e", out, tmp])
    post = open(os.path.join(tmp, "postinst")).read()
    h.check("adduser --system --group --home /var/lib/samsa" in post, "postinst: %s", post)
    h.check(os.access(os.path.join(tmp, "postinst"), os.X_OK), "postinst not executable")


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
