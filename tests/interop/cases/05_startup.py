"""Start-up as an operator sees it: zero-config start on 127.0.0.1:9092
with ./data formatted (meta.properties), `-c FILE` with Kafka's names, and
every startup error as exactly one line on stderr with exit status 2."""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import (SAMSA_BIN, Suite, Skip, check, eq, bound, free_ports, kcat_metadata, WORK)  # noqa: E402
import kwire  # noqa: E402

S = Suite("startup")


def run_fail(args, cwd=None):
    """Runs samsa expecting a startup failure; returns stderr lines."""
    p = subprocess.run([SAMSA_BIN] + args, cwd=cwd or WORK, stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=bound(20))
    eq(p.returncode, 2, "exit status of samsa %s (stderr: %r)" % (" ".join(args), p.stderr[-300:]))
    # informational log lines may precede the error; the error is one line
    lines = [l for l in p.stderr.decode("utf-8", "replace").splitlines()
             if l.strip() and " samsa INFO: " not in l]
    eq(len(lines), 1, "stderr lines for %s: %r" % (" ".join(args), lines))
    return lines[0]


def conf_file(text):
    fd, path = tempfile.mkstemp(suffix=".conf", dir=WORK)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


def port_free(port):
    s = socket.socket()
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def wait_port(port, proc, limit):
    deadline = time.monotonic() + bound(limit)
    while time.monotonic() < deadline:
        check(proc.poll() is None, "samsa exited early with %s" % proc.poll())
        try:
            c = kwire.Conn(port, timeout=2)
            kwire.api_versions(c, 0)
            c.close()
            return
        except Exception:  # noqa: BLE001
            time.sleep(0.1)
    raise AssertionError("port %d not serving after %.0fs" % (port, bound(limit)))


@S.case
def zero_config_start():
    if not port_free(9092):
        raise Skip("127.0.0.1:9092 is in use on this machine")
    cwd = tempfile.mkdtemp(prefix="zero-", dir=WORK)
    with open(os.path.join(WORK, "zero.log"), "wb") as logf:
        proc = subprocess.Popen([SAMSA_BIN], cwd=cwd, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf)
    try:
        wait_port(9092, proc, 10)
        props = dict(l.split("=", 1) for l in open(os.path.join(cwd, "data", "meta.properties")).read().splitlines()
                     if "=" in l and not l.startswith("#"))
        eq(props.get("version"), "1", "meta.properties version")
        eq(props.get("node.id"), "1", "meta.properties node.id")
        eq(len(props.get("cluster.id", "")), 22, "cluster.id is a 22-character Kafka UUID")
        eq(len(props.get("directory.id", "")), 22, "directory.id is a 22-character Kafka UUID")
        md = kcat_metadata("127.0.0.1:9092")
        eq([(b["id"], b["name"]) for b in md["brokers"]], [(1, "127.0.0.1:9092")], "kcat -L brokers")
        eq(md.get("controllerid"), 1, "kcat -L controller id")
        proc.send_signal(signal.SIGTERM)
        eq(proc.wait(timeout=bound(10)), 0, "exit status after SIGTERM")
        # A second start finds the formatted directory and keeps its id.
        with open(os.path.join(WORK, "zero.log"), "ab") as logf:
            proc = subprocess.Popen([SAMSA_BIN], cwd=cwd, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf)
        wait_port(9092, proc, 10)
        props2 = dict(l.split("=", 1) for l in open(os.path.join(cwd, "data", "meta.properties")).read().splitlines()
                      if "=" in l and not l.startswith("#"))
        eq(props2.get("cluster.id"), props["cluster.id"], "cluster.id kept across restarts")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=bound(10))
            except subprocess.TimeoutExpired:
                proc.kill()


@S.case
def config_file_with_kafka_names():
    port, cport = free_ports(2)
    data = tempfile.mkdtemp(prefix="conf-", dir=WORK)
    path = conf_file("""# a Kafka-style server.properties
node.id=1
process.roles=broker,controller
listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d
advertised.listeners=PLAINTEXT://127.0.0.1:%d
controller.listener.names=CONTROLLER
controller.quorum.voters=1@127.0.0.1:%d
log.dirs=%s
num.partitions=3
default.replication.factor=1
auto.create.topics.enable=true
message.max.bytes=2000000
socket.request.max.bytes=104857600
""" % (port, cport, port, cport, data))
    with open(os.path.join(WORK, "conf.log"), "wb") as logf:
        proc = subprocess.Popen([SAMSA_BIN, "-c", path], stdin=subprocess.DEVNULL, stdout=logf, stderr=logf)
    try:
        wait_port(port, proc, 10)
        c = kwire.Conn(port, timeout=bound(10))
        md = kwire.metadata_v12(c, topics=["auto-3"], allow_auto=True)
        c.close()
        t = md["topics"][0]
        eq((t["error_code"], len(t["partitions"])), (0, 3), "auto-created topic gets num.partitions=3")
        proc.send_signal(signal.SIGTERM)
        eq(proc.wait(timeout=bound(10)), 0, "exit status after SIGTERM")
    finally:
        if proc.poll() is None:
            proc.kill()


@S.case
def startup_errors_are_one_line_exit_2():
    port, cport = free_ports(2)
    base = ["--override", "node.id=1",
            "--override", "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (port, cport),
            "--override", "controller.quorum.voters=1@127.0.0.1:%d" % cport]
    data = tempfile.mkdtemp(prefix="err-", dir=WORK)
    ok_dir = ["--override", "log.dirs=%s" % data]

    line = run_fail(["-c", conf_file("no.such.key=1\n")])
    check("no.such.key" in line, "unknown key named: %r" % line)
    line = run_fail(["-c", conf_file("num.partitions=abc\n")])
    check("num.partitions" in line and "abc" in line, "bad value names key and value: %r" % line)
    line = run_fail(["-c", conf_file("num.partitions=0\n")])
    check("num.partitions" in line, "out-of-range value named: %r" % line)
    line = run_fail(["-c", os.path.join(WORK, "does-not-exist.conf")])
    check("does-not-exist.conf" in line, "missing file named: %r" % line)
    # a log dir that is a regular file
    afile = os.path.join(WORK, "plain-file")
    open(afile, "w").close()
    line = run_fail(base + ["--override", "log.dirs=%s/sub" % afile])
    check(afile in line, "unusable directory named: %r" % line)
    # the port is taken
    s = socket.socket()
    s.bind(("127.0.0.1", port))
    s.listen(1)
    try:
        line = run_fail(base + ok_dir)
        check(str(port) in line, "busy port named: %r" % line)
    finally:
        s.close()
    line = run_fail(["--no-such-option"])
    check("--no-such-option" in line, "unknown argument named: %r" % line)


@S.case
def broker_that_cannot_register_exits():
    """initial.broker.registration.timeout.ms: a broker whose controller
    quorum is unreachable logs one line naming the key and exits with
    status 1 after a clean shutdown, as Kafka's broker does."""
    port, dead = free_ports(2)
    data = tempfile.mkdtemp(prefix="noreg-", dir=WORK)
    args = ["--override", "node.id=4",
            "--override", "process.roles=broker",
            "--override", "listeners=PLAINTEXT://127.0.0.1:%d" % port,
            "--override", "controller.listener.names=CONTROLLER",
            "--override", "controller.quorum.voters=1@127.0.0.1:%d" % dead,
            "--override", "log.dirs=%s" % data,
            "--override", "initial.broker.registration.timeout.ms=1500"]
    cid = subprocess.run([SAMSA_BIN, "random-uuid"], capture_output=True, text=True,
                         timeout=bound(10)).stdout.strip()
    f = subprocess.run([SAMSA_BIN, "format", "--cluster-id", cid] + args, capture_output=True, text=True,
                       timeout=bound(20))
    eq(f.returncode, 0, "format (stderr: %r)" % f.stderr[-300:])
    t0 = time.monotonic()
    p = subprocess.run([SAMSA_BIN] + args, cwd=WORK, stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=bound(20))
    took = time.monotonic() - t0
    out = p.stderr.decode("utf-8", "replace") + p.stdout.decode("utf-8", "replace")
    eq(p.returncode, 1, "exit status (output: %r)" % out[-500:])
    lines = [l for l in out.splitlines() if "initial.broker.registration.timeout.ms" in l]
    eq(len(lines), 1, "one line names the key: %r" % lines)
    check("not registered" in lines[0] and "1500 ms" in lines[0], "the line says why: %r" % lines[0])
    check(1.4 <= took < bound(10), "exited after the timeout (%.2fs)" % took)


if __name__ == "__main__":
    S.run()
