"""Plugin loading in a real server (issue 4): --list-plugins; each
deliberately wrong plugin stops startup with exit status 2 and exactly one
line naming the file and both ABI versions; the ABI 1.0 fixture keeps
loading and gets its plugin.<name>.* settings; a server without a codec
module refuses that codec with UNSUPPORTED_COMPRESSION_TYPE and still
serves everything else; a server with no modules serves uncompressed
traffic.

The fixtures are built by `make check` (tests/unit/plugin.mk) next to the
samsa binary under test; without them the fixture cases are skipped.
"""
# limit: 180
import gzip
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness as h  # noqa: E402
import kwire  # noqa: E402

BUILD = os.path.dirname(os.path.abspath(h.SAMSA_BIN))
FIXTURES = os.path.join(BUILD, "tests", "unit", "plugin-fixtures", ".libs")
MODULES = os.path.join(BUILD, "modules", ".libs")
ABI = "samsa ABI 1.3)"

suite = h.Suite("80_test_plugins_load", case_limit=60)


def plugin_dir(links):
    """A plugin.dir holding symlinks NAME.so -> built file, so a fixture is
    found under the name its descriptor carries."""
    d = tempfile.mkdtemp(prefix="plugins-", dir=h.WORK)
    for name, target in links.items():
        os.symlink(target, os.path.join(d, name + ".so"))
    return d


def fixture(f):
    p = os.path.join(FIXTURES, f + ".so")
    if not os.path.exists(p):
        raise h.Skip("fixture %s not built (run make check first)" % p)
    return p


def module(m):
    p = os.path.join(MODULES, m + ".so")
    if not os.path.exists(p):
        raise h.Skip("module %s not in this build" % m)
    return p


def start_fails(overrides):
    """Runs samsa with overrides; it must exit 2 before serving. Returns
    its output lines."""
    port, cport = h.free_ports(2)
    data = tempfile.mkdtemp(prefix="data-", dir=h.WORK)
    argv = [h.SAMSA_BIN, "--override", "node.id=1", "--override", "process.roles=broker,controller",
            "--override", "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (port, cport),
            "--override", "controller.quorum.voters=1@127.0.0.1:%d" % cport, "--override", "log.dirs=" + data]
    for k, v in overrides.items():
        argv += ["--override", "%s=%s" % (k, v)]
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=h.bound(20))
    except subprocess.TimeoutExpired:
        raise h.Failure("samsa did not exit (it should refuse the plugin): %s" % " ".join(argv))
    out = p.stdout.decode("utf-8", "replace").splitlines()
    h.eq(p.returncode, 2, "exit status; output:\n%s\n" % "\n".join(out))
    h.eq(os.listdir(data), [], "data dir touched before the plugins loaded")
    return out


def refusal_case(file_base, name, reason, abi, also=None):
    def case():
        links = {name: fixture(file_base)} if file_base else {}
        for n, f in (also or {}).items():
            links[n] = fixture(f)
        d = plugin_dir(links)
        plugins = ",".join(list((also or {}).keys()) + [name])
        out = start_fails({"plugin.dir": d, "plugins": plugins})
        refused = [l for l in out if "refused" in l]
        want = "samsa: plugin %s/%s.so refused: %s (plugin ABI %s, %s" % (d, name, reason, abi, ABI)
        h.eq(refused, [want], "the refusal lines")
    case.__name__ = "refuse_" + name.replace("-", "_")
    return case


for _args in [
    (None, "missing", "cannot open: No such file or directory", "unknown"),
    ("no_entry", "no-entry", "no entry symbol samsa_plugin_entry", "unknown"),
    ("bad_magic", "bad-magic", "bad magic 0xdeadbeef (expected 0x534d5341)", "unknown"),
    ("next_major", "next-major", "built for another ABI major version", "2.0"),
    ("newer_minor", "newer-minor", "built for a newer ABI minor version", "1.4"),
    ("init_fail", "init-fail", "init failed: plugin.init-fail.token is not set", "1.3"),
]:
    suite.case(refusal_case(*_args))


@suite.case
def refuse_truncated_descriptor():
    # the 1.0 descriptor size depends on the pointer size: read it from
    # the unit test's expectation instead of hard-coding 64
    d = plugin_dir({"truncated": fixture("truncated")})
    out = start_fails({"plugin.dir": d, "plugins": "truncated"})
    refused = [l for l in out if "refused" in l]
    h.eq(len(refused), 1, "refusal lines")
    h.check(refused[0].startswith("samsa: plugin %s/truncated.so refused: descriptor truncated (16 bytes, ABI 1.0 "
                                  "needs " % d) and refused[0].endswith("(plugin ABI 1.3, %s" % ABI),
            "refusal line: %s", refused[0])


@suite.case
def refuse_not_binary_compatible():
    d = plugin_dir({"bad-sig": fixture("bad_sig")})
    out = start_fails({"plugin.dir": d, "plugins": "bad-sig"})
    refused = [l for l in out if "refused" in l]
    h.eq(len(refused), 1, "refusal lines")
    h.check(" refused: not binary compatible (build signature 0x" in refused[0] and
            refused[0].endswith("(plugin ABI 1.3, %s" % ABI), "refusal line: %s", refused[0])


suite.case(refusal_case("dup_cap", "dup-cap",
                        "duplicate codec \"fixture-xor\" (id 6): already provided by abi-1-0 as \"fixture-xor\" (id 6)",
                        "1.3", also={"abi-1-0": "abi_1_0"}))


@suite.case
def refuse_configured_name_mismatch():
    d = plugin_dir({"renamed": fixture("abi_1_0")})
    out = start_fails({"plugin.dir": d, "plugins": "renamed"})
    h.eq([l for l in out if "refused" in l],
         ["samsa: plugin %s/renamed.so refused: its descriptor names it \"abi-1-0\", configured as \"renamed\" "
          "(plugin ABI 1.0, %s" % (d, ABI)], "refusal lines")


@suite.case
def list_plugins():
    p = h.run([h.SAMSA_BIN, "--list-plugins"], limit=20)
    rows = [l.split() for l in p.stdout.decode().splitlines()]
    h.eq(rows[0], ["NAME", "VERSION", "ABI", "CAPABILITIES", "ORIGIN"], "header")
    got = {r[0]: r for r in rows[1:]}
    for name, cap in (("codec-gzip", "codec:gzip(1)"), ("codec-snappy", "codec:snappy(2)"),
                      ("codec-lz4", "codec:lz4(3)"), ("codec-zstd", "codec:zstd(4)"), ("sasl-plain", "sasl:PLAIN"),
                      ("sasl-scram", "sasl:SCRAM-SHA-256,sasl:SCRAM-SHA-512"), ("sasl-oauthbearer", "sasl:OAUTHBEARER")):
        module(name)
        h.check(name in got, "%s missing from --list-plugins:\n%s", name, p.stdout.decode())
        h.eq(got[name][2:4], ["1.3", cap], "%s ABI and capabilities" % name)
    # plugins= names exactly what loads
    p = h.run([h.SAMSA_BIN, "--override", "plugins=codec-zstd", "--list-plugins"], limit=20)
    h.eq([l.split()[0] for l in p.stdout.decode().splitlines()[1:]], ["codec-zstd"], "listed with plugins=codec-zstd")
    p = h.run([h.SAMSA_BIN, "--override", "plugins=", "--list-plugins"], limit=20)
    h.eq(len(p.stdout.decode().splitlines()), 1, "lines listed with plugins= (none)")


def gzip_batch(n=3):
    now = int(time.time() * 1000)
    body = b"".join(kwire.encode_record(i, 0, b"k%d" % i, b"v%d" % i, []) for i in range(n))
    comp = gzip.compress(body)
    after = kwire.W().i16(1).i32(n - 1).i64(now).i64(now).i64(-1).i16(-1).i32(-1).i32(n).bytes() + comp
    return kwire.W().i64(0).i32(9 + len(after)).i32(-1).i8(2).u32(kwire.crc32c(after)).bytes() + after


def snappy_attr(batch):
    """The same batch relabelled snappy (attributes codec 2), CRC fixed."""
    b = bytearray(batch)
    b[22] = (b[22] & ~7) | 2
    after = bytes(b[21:])
    b[17:21] = kwire.crc32c(after).to_bytes(4, "big")
    return bytes(b)


def produce_raw(srv, topic, batch):
    c = kwire.Conn(srv.port)
    try:
        return kwire.produce(c, topic, 0, batch)
    finally:
        c.close()


@suite.case
def abi_1_0_fixture_in_a_running_server():
    d = plugin_dir({"abi-1-0": fixture("abi_1_0"), "codec-gzip": module("codec-gzip")})
    srv = h.Server({"plugin.dir": d, "plugins": "abi-1-0,codec-gzip",
                    "plugin.abi-1-0.greeting": "hello from interop"}, name="abi10")
    try:
        srv.wait_log(r"plugin abi-1-0: greeting: hello from interop", 0)
        srv.wait_log(r"plugin abi-1-0 1\.0-fixture \(ABI 1\.0\) loaded from .*: codec:fixture-xor\(6\),sasl:FIXTURE,"
                     r"assignor:fixture,tier:fixture,authorizer:fixture,partitioner:fixture", 0)
        h.ck_create_topic(srv.bootstrap, "t", 1, 1)
        h.ck_create_topic(srv.bootstrap, "t-lz4", 1, 1, config={"compression.type": "lz4"})
        # gzip is loaded: accepted; snappy is not: UNSUPPORTED_COMPRESSION_TYPE
        h.eq(produce_raw(srv, "t", gzip_batch())["error_code"], 0, "gzip batch")
        res = produce_raw(srv, "t", snappy_attr(gzip_batch()))
        h.eq(res["error_code"], 76, "snappy batch without codec-snappy")
        # a topic whose compression.type has no module refuses appends
        res = produce_raw(srv, "t-lz4", kwire.build_batch([(b"k", b"v", [])]))
        h.eq(res["error_code"], 76, "append to an lz4 topic without codec-lz4")
        h.eq(res["error_message"], "topic compression.type is lz4 but no codec module for it is loaded",
             "error message")
        want = [dict(h.rec(b"k%d" % i, b"v%d" % i), offset=i) for i in range(3)]
        h.compare_records(h.ck_consume(srv.bootstrap, "t", 0, 0, 3), want, "gzip records read back",
                          timestamps=False)
    finally:
        srv.stop()


@suite.case
def no_modules_serves_uncompressed():
    srv = h.Server({"plugins": ""}, name="bare")
    try:
        h.ck_create_topic(srv.bootstrap, "plain", 1, 1)
        want = [h.rec(b"k%d" % i, b"value %d" % i) for i in range(10)]
        h.ck_produce(srv.bootstrap, "plain", want)
        got = h.kcat_consume(srv.bootstrap, "plain", 0, 0, 10)
        h.compare_records(got, [dict(r, offset=i) for i, r in enumerate(want)], "kcat read", timestamps=False)
        h.eq(produce_raw(srv, "plain", gzip_batch())["error_code"], 76, "gzip batch without modules")
    finally:
        srv.stop()


if __name__ == "__main__":
    suite.run()
