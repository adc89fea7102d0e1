"""Harness for samsa's interop tests: starts and stops samsa, runs test
cases, and wraps the real clients (confluent-kafka, kafka-python, kcat,
and the Node clients through js/clients.mjs) behind a common record
shape so tests can compare what one client wrote with what another read.

A record is a dict: key (bytes|None), value (bytes|None), headers (list
of (str, bytes|None)), partition (int), timestamp (ms, int|None), and for
consumed records offset (int).

Environment: SAMSA_BIN, SAMSACTL_BIN, SAMSA_SANITIZED=1 (ASan build:
longer bounds, sanitizer checks), INTEROP_WORK (directory for data and
logs; run.sh sets it per test file).

Run tests with /usr/bin/python3 (Debian's client packages live there).
"""

import base64
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import kwire  # noqa: E402

SAMSA_BIN = os.environ.get("SAMSA_BIN") or os.path.join(ROOT, "samsa")
SAMSACTL_BIN = os.environ.get("SAMSACTL_BIN") or os.path.join(ROOT, "samsactl")
SANITIZED = os.environ.get("SAMSA_SANITIZED") == "1"
SCALE = float(os.environ.get("INTEROP_TIMEOUT_SCALE") or (4.0 if SANITIZED else 1.0))
NODE = os.environ.get("NODE_BIN") or "node"
KCAT = os.environ.get("KCAT_BIN") or "kcat"
JS_CLIENTS = os.path.join(HERE, "js", "clients.mjs")

_own_work = not os.environ.get("INTEROP_WORK")
WORK = os.environ.get("INTEROP_WORK") or tempfile.mkdtemp(prefix="samsa-interop-")
os.makedirs(WORK, exist_ok=True)

SANITIZER_PATTERNS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                      "SUMMARY: UndefinedBehaviorSanitizer", "ThreadSanitizer")


def bound(seconds):
    """A wait bound, stretched for sanitizer builds."""
    return seconds * SCALE


def feed_fifo(path, data, waiter, limit=40):
    """Writes data to the FIFO at path each time a reader has it open
    (a check may open a file more than once) until the thread waiter,
    blocked behind that reader, is done; bounded by limit seconds."""
    deadline = time.monotonic() + bound(limit)
    while waiter.is_alive() and time.monotonic() < deadline:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # no reader yet
            time.sleep(0.02)
            continue
        try:
            os.write(fd, data)
        except OSError:
            pass
        os.close(fd)
        time.sleep(0.02)
    waiter.join(bound(5))


class Failure(AssertionError):
    pass


class Skip(Exception):
    pass


def check(cond, msg, *args):
    if not cond:
        raise Failure(msg % args if args else msg)


def eq(got, want, what="value"):
    if got != want:
        raise Failure("%s: got %s, want %s" % (what, short(got), short(want)))


def short(v, n=600):
    s = repr(v)
    return s if len(s) <= n else s[:n] + "...(%d chars)" % len(s)


def log(msg, *args):
    print("    " + (msg % args if args else msg), flush=True)


# ---------------------------------------------------------------- ports

def free_ports(n):
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


# ---------------------------------------------------------------- server

_servers = []


class Server:
    """One samsa process: fresh data dir, its own loopback ports, its log
    captured to WORK/<name>.log. Restarts reuse the dir and ports."""

    _n = 0

    def __init__(self, overrides=None, name=None, start=True):
        Server._n += 1
        self.name = name or "server%d" % Server._n
        self.dir = os.path.join(WORK, self.name)
        self.data = os.path.join(self.dir, "data")
        os.makedirs(self.dir, exist_ok=True)
        self.log_path = os.path.join(WORK, self.name + ".log")
        self.port, self.cport = free_ports(2)
        # Topics exist only when a test creates them: no Metadata auto-create
        # (Kafka's default is on; tests that want it pass it explicitly).
        self.overrides = {"auto.create.topics.enable": "false"}
        self.overrides.update(overrides or {})
        self.proc = None
        self.starts = 0
        self.run_log_start = 0
        _servers.append(self)
        if start:
            self.start()

    @property
    def bootstrap(self):
        return "127.0.0.1:%d" % self.port

    def argv(self):
        a = [SAMSA_BIN,
             "--override", "node.id=1",
             "--override", "process.roles=broker,controller",
             "--override", "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (self.port, self.cport),
             "--override", "controller.quorum.voters=1@127.0.0.1:%d" % self.cport,
             "--override", "log.dirs=%s" % self.data]
        for k, v in self.overrides.items():
            a += ["--override", "%s=%s" % (k, v)]
        return a

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def start(self):
        check(not self.alive(), "%s already running", self.name)
        self.starts += 1
        argv = self.argv()
        with open(self.log_path, "ab") as f:
            self.run_log_start = f.tell()
            f.write(("=== harness: start #%d: %s\n" % (self.starts, " ".join(argv))).encode())
        logf = open(self.log_path, "ab")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                                     cwd=self.dir)
        logf.close()
        pidfile = os.path.join(WORK, "pids")
        with open(pidfile, "a") as f:
            f.write("%d\n" % self.proc.pid)
        self.wait_ready()

    def wait_ready(self, limit=10.0):
        deadline = time.monotonic() + bound(limit)
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise Failure("samsa exited with status %s during startup; log tail:\n%s"
                              % (self.proc.returncode, self.log_tail(30)))
            try:
                c = kwire.Conn(self.port, timeout=2)
                try:
                    res = kwire.api_versions(c, 0)
                finally:
                    c.close()
                if res["error_code"] == 0 and res["api_keys"]:
                    return
                last = "ApiVersions error %d" % res["error_code"]
            except (OSError, kwire.Closed, kwire.ParseError) as e:
                last = repr(e)
            time.sleep(0.05)
        raise Failure("samsa did not answer ApiVersions on port %d within %.0fs (last: %s); log tail:\n%s"
                      % (self.port, bound(limit), last, self.log_tail(30)))

    def log_text(self, since=0):
        try:
            with open(self.log_path, "rb") as f:
                f.seek(since)
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def log_size(self):
        try:
            return os.path.getsize(self.log_path)
        except FileNotFoundError:
            return 0

    def log_tail(self, n=40):
        return "\n".join(self.log_text().splitlines()[-n:])

    def wait_log(self, pattern, since, limit=3.0):
        """Waits for a log line matching the regex after byte `since`."""
        rx = re.compile(pattern, re.I)
        deadline = time.monotonic() + bound(limit)
        while True:
            for line in self.log_text(since).splitlines():
                if rx.search(line):
                    return line
            if time.monotonic() >= deadline:
                raise Failure("no server log line matching /%s/ appeared; new log lines:\n%s"
                              % (pattern, self.log_text(since)[-3000:] or "(none)"))
            time.sleep(0.05)

    def check_sanitizers(self):
        bad = [l for l in self.log_text(self.run_log_start).splitlines()
               if any(p in l for p in SANITIZER_PATTERNS)]
        if bad:
            raise Failure("sanitizer report in the server log:\n%s\n...\n%s"
                          % ("\n".join(bad[:10]), self.log_tail(60)))

    def stop(self, limit=15.0):
        """SIGTERM; the server must exit 0 within the bound, with no
        sanitizer report in its log."""
        if not self.alive():
            if self.proc is not None and self.proc.returncode not in (0, None) and not getattr(self, "_killed", False):
                rc = self.proc.returncode
                self.proc = None
                raise Failure("samsa had already exited with status %s; log tail:\n%s" % (rc, self.log_tail(40)))
            self.proc = None
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=bound(limit))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            self.proc = None
            raise Failure("samsa did not exit within %.0fs of SIGTERM (killed); log tail:\n%s"
                          % (bound(limit), self.log_tail(30)))
        self.proc = None
        self.check_sanitizers()
        if rc != 0:
            raise Failure("samsa exited with status %d after SIGTERM; log tail:\n%s" % (rc, self.log_tail(30)))

    def kill9(self):
        check(self.alive(), "%s is not running", self.name)
        self._killed = True
        self.proc.kill()
        self.proc.wait(timeout=10)
        self.check_sanitizers()
        self.proc = None

    def restart(self):
        self.stop()
        self._killed = False
        self.start()

    def ensure_running(self):
        """After a failed case: if the server died, report it and start a
        fresh one on the same dir so later cases can still run."""
        if self.alive():
            return None
        rc = self.proc.returncode if self.proc else None
        self.proc = None
        self._killed = False
        self.start()
        return rc


def stop_all():
    errors = []
    for s in _servers:
        try:
            s.stop()
        except Exception as e:  # noqa: BLE001
            errors.append("%s: %s" % (s.name, e))
    return errors


# ---------------------------------------------------------------- cases

class Suite:
    """Test cases of one file. Each case prints one PASS/FAIL/SKIP line;
    the file exits 1 if any failed, 77 if all skipped, else 0."""

    def __init__(self, name, case_limit=60.0):
        self.name = name
        self.cases = []
        self.case_limit = case_limit
        self.server = None

    def case(self, fn=None, limit=None):
        def reg(f):
            self.cases.append((f.__name__, f, limit or self.case_limit))
            return f
        return reg(fn) if fn else reg

    def run(self, setup=None):
        signal.signal(signal.SIGTERM, _on_sigterm)
        failed = passed = skipped = 0
        only = [a for a in sys.argv[1:] if not a.startswith("-")]
        try:
            if setup:
                setup()
        except Exception as e:  # noqa: BLE001
            print("  FAIL setup: %s" % e, flush=True)
            traceback.print_exc(file=sys.stdout)
            self._finish(1)
        for name, fn, limit in self.cases:
            if only and name not in only:
                continue
            t0 = time.monotonic()
            status, why = "PASS", ""
            signal.signal(signal.SIGALRM, _on_alarm)
            signal.alarm(int(bound(limit)) + 1)
            try:
                fn()
            except Skip as e:
                status, why = "SKIP", str(e)
            except Exception as e:  # noqa: BLE001
                status = "FAIL"
                why = "%s: %s" % (type(e).__name__, e) if not isinstance(e, Failure) else str(e)
                print("    --- %s failed:" % name, flush=True)
                tb = traceback.format_exc()
                print("    " + tb.replace("\n", "\n    "), flush=True)
            finally:
                signal.alarm(0)
            dt = time.monotonic() - t0
            first = why.splitlines()[0] if why else ""
            print("  %s %s (%.1fs)%s" % (status, name, dt, (": " + first[:300]) if first else ""), flush=True)
            if status == "PASS":
                passed += 1
            elif status == "SKIP":
                skipped += 1
            else:
                failed += 1
                for s in _servers:
                    if s.proc is not None and not s.alive():
                        try:
                            rc = s.ensure_running()
                            print("    (%s had died with status %s; restarted for the next cases)" % (s.name, rc),
                                  flush=True)
                        except Exception as e2:  # noqa: BLE001
                            print("    (%s had died and could not be restarted: %s)" % (s.name, e2), flush=True)
        t0 = time.monotonic()
        errs = stop_all()
        if errs:
            failed += 1
            print("  FAIL server_shutdown (%.1fs): %s" % (time.monotonic() - t0, errs[0].splitlines()[0]), flush=True)
            for e in errs:
                print("    " + e.replace("\n", "\n    "), flush=True)
        if failed:
            self._finish(1)
        if skipped and not passed:
            self._finish(77)
        self._finish(0)

    def _finish(self, code):
        if code != 77 and code != 0:
            pass
        try:
            for s in _servers:
                if s.alive():
                    s.proc.kill()
        except Exception:  # noqa: BLE001
            pass
        sys.stdout.flush()
        sys.stderr.flush()
        if _own_work and code == 0:
            subprocess.call(["rm", "-rf", WORK])
        os._exit(code)


class CaseTimeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise CaseTimeout("test case exceeded its time bound")


def _on_sigterm(signum, frame):
    print("  (terminated: stopping servers)", flush=True)
    for s in _servers:
        if s.alive():
            s.proc.kill()
    sys.stdout.flush()
    os._exit(124)


# ---------------------------------------------------------------- records

def rec(key, value, headers=(), partition=0, timestamp=None):
    return {"key": key, "value": value, "headers": list(headers), "partition": partition,
            "timestamp": timestamp}


def norm(r, with_ts=True, with_offset=True):
    """Comparable form of a record."""
    out = {"partition": r["partition"], "key": r["key"], "value": r["value"],
           "headers": [(h[0], h[1]) for h in r["headers"]]}
    if with_offset and "offset" in r:
        out["offset"] = r["offset"]
    if with_ts and r.get("timestamp") is not None:
        out["timestamp"] = r["timestamp"]
    return out


def compare_records(got, want, what, timestamps=True, offsets=True):
    """got/want: lists of records. Compares field by field and reports the
    first difference precisely."""
    eq(len(got), len(want), "%s: number of records" % what)
    for i, (g, w) in enumerate(zip(got, want)):
        for f in ("partition", "offset", "key", "value", "headers", "timestamp"):
            if f == "timestamp" and (not timestamps or w.get("timestamp") is None):
                continue
            if f == "offset" and (not offsets or "offset" not in w):
                continue
            gv = g.get(f)
            wv = w.get(f)
            if f == "headers":
                gv = [(h[0], h[1]) for h in (gv or [])]
                wv = [(h[0], h[1]) for h in (wv or [])]
            if gv != wv:
                raise Failure("%s: record %d field %s: got %s, want %s" % (what, i, f, short(gv, 200), short(wv, 200)))


def b64(b):
    return None if b is None else base64.b64encode(b).decode()


def unb64(s):
    return None if s is None else base64.b64decode(s)


def to_json_records(records):
    return [{"key": b64(r["key"]), "value": b64(r["value"]),
             "headers": [[h[0], b64(h[1])] for h in r["headers"]],
             "partition": r["partition"], "timestamp": r.get("timestamp")} for r in records]


def from_json_records(items):
    out = []
    for j in items:
        r = {"key": unb64(j["key"]), "value": unb64(j["value"]),
             "headers": [(h[0], unb64(h[1])) for h in j.get("headers") or []],
             "partition": j["partition"], "timestamp": j.get("timestamp")}
        if "offset" in j:
            r["offset"] = int(j["offset"])
        out.append(r)
    return out


# ---------------------------------------------------------------- subprocesses

def run(argv, input=None, limit=30.0, check_rc=True, env=None):
    """Runs a command with a bound; returns CompletedProcess (bytes)."""
    try:
        p = subprocess.run(argv, input=input, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=bound(limit), env=env)
    except subprocess.TimeoutExpired as e:
        raise Failure("%s timed out after %.0fs; stderr:\n%s" % (
            " ".join(argv[:4]), bound(limit), (e.stderr or b"").decode("utf-8", "replace")[-3000:]))
    if check_rc and p.returncode != 0:
        raise Failure("%s exited %d; stderr:\n%s\nstdout:\n%s" % (
            " ".join(str(a) for a in argv[:6]), p.returncode, p.stderr.decode("utf-8", "replace")[-3000:],
            p.stdout.decode("utf-8", "replace")[-2000:]))
    return p


def node(op, bootstrap, args=None, stdin=None, limit=40.0, check_rc=True):
    """Runs js/clients.mjs OP; stdin/stdout are JSON. Returns the parsed
    JSON result (or raises Failure with the client's message)."""
    argv = [NODE, JS_CLIENTS, op, bootstrap, json.dumps(args or {})]
    p = run(argv, input=json.dumps(stdin).encode() if stdin is not None else b"", limit=limit, check_rc=False)
    out = p.stdout.decode("utf-8", "replace").strip().splitlines()
    last = out[-1] if out else ""
    try:
        res = json.loads(last)
    except ValueError:
        raise Failure("node %s exited %d without a JSON result; stdout:\n%s\nstderr:\n%s" % (
            op, p.returncode, "\n".join(out[-30:]), p.stderr.decode("utf-8", "replace")[-3000:]))
    if check_rc and (p.returncode != 0 or not res.get("ok")):
        raise Failure("node %s failed (exit %d): %s\nstderr:\n%s" % (
            op, p.returncode, res.get("error"), p.stderr.decode("utf-8", "replace")[-2000:]))
    return res


def platformatic_raw(bootstrap, api, args, client_id="samsa-interop-raw", limit=40.0):
    """One raw API of @platformatic/kafka (its own encoder and parser:
    createTopicsV7, describeLogDirsV4, ...) with these arguments, through
    js/quotas_platformatic.mjs's raw-as; returns the parsed answer (int64
    fields as strings), or raises Failure with the client's error."""
    argv = [NODE, os.path.join(HERE, "js", "quotas_platformatic.mjs"), bootstrap,
            json.dumps([["raw-as", {"clientId": client_id, "api": api, "args": args}]])]
    p = run(argv, limit=limit, check_rc=False)
    out = p.stdout.decode("utf-8", "replace").strip().splitlines()
    try:
        res = json.loads(out[-1])
    except (IndexError, ValueError):
        raise Failure("@platformatic/kafka %s: no JSON result; stdout:\n%s\nstderr:\n%s" % (
            api, "\n".join(out[-20:]), p.stderr.decode("utf-8", "replace")[-2000:]))
    check(res.get("ok"), "@platformatic/kafka %s failed: %s", api, res.get("error"))
    return res["results"][0]


# ---------------------------------------------------------------- confluent-kafka

def ck_conf(bootstrap, **extra):
    c = {"bootstrap.servers": bootstrap, "socket.timeout.ms": int(bound(10000)),
         "api.version.request.timeout.ms": int(bound(10000)), "log_level": 4}
    c.update(extra)
    return c


def ck_produce(bootstrap, topic, records, conf=None, limit=30.0, metadata_first=False):
    """Produces with confluent-kafka, one flush at the end. Returns the
    delivered records with partition, offset and timestamp; raises Failure
    on any delivery error (use ck_produce_errors to see them).
    metadata_first: the producer learns the topic's partitions before the
    first record, so that records produced together (with a long linger)
    go out as one batch, however slow the broker answers."""
    res, errs = ck_produce_errors(bootstrap, topic, records, conf, limit, metadata_first)
    if errs:
        raise Failure("confluent-kafka delivery failed: %s" % errs[0])
    return res


def ck_produce_errors(bootstrap, topic, records, conf=None, limit=30.0, metadata_first=False):
    from confluent_kafka import Producer
    c = ck_conf(bootstrap, **{"linger.ms": 5, "acks": "all", "message.timeout.ms": int(bound(limit * 1000 * 0.8))})
    c.update(conf or {})
    p = Producer(c)
    if metadata_first:
        md = p.list_topics(topic, timeout=bound(10))
        check(topic in md.topics and md.topics[topic].error is None and md.topics[topic].partitions,
              "confluent-kafka: no metadata for %s", topic)
    out = [None] * len(records)
    errs = []

    def cb(i):
        def f(err, msg):
            if err is not None:
                errs.append(err)
                out[i] = {"error": err}
            else:
                ts_type, ts = msg.timestamp()
                out[i] = dict(records[i], partition=msg.partition(), offset=msg.offset(), timestamp=ts)
        return f

    for i, r in enumerate(records):
        kw = {"value": r["value"], "key": r["key"], "on_delivery": cb(i)}
        if r.get("headers"):
            kw["headers"] = list(r["headers"])
        if r.get("partition") is not None:
            kw["partition"] = r["partition"]
        if r.get("timestamp") is not None:
            kw["timestamp"] = r["timestamp"]
        while True:
            try:
                p.produce(topic, **kw)
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
    left = p.flush(bound(limit))
    check(left == 0, "confluent-kafka: %d records still undelivered after %.0fs", left, bound(limit))
    return out, errs


def ck_consume(bootstrap, topic, partition, start, count, conf=None, limit=30.0, until_offset=None):
    """Manual assignment, no group. Reads exactly `count` records from
    `start` (fails on fewer within the bound); with until_offset, reads
    until the record at that offset instead (at most `count`: a
    compacted log's count may shrink while it is read)."""
    from confluent_kafka import Consumer, TopicPartition, KafkaError
    c = ck_conf(bootstrap, **{"group.id": "samsa-interop-unused", "enable.auto.commit": False,
                              "enable.auto.offset.store": False, "enable.partition.eof": False,
                              "isolation.level": "read_uncommitted", "fetch.wait.max.ms": 100})
    c.update(conf or {})
    cons = Consumer(c)
    try:
        cons.assign([TopicPartition(topic, partition, start)])
        out = []
        deadline = time.monotonic() + bound(limit)
        while len(out) < count and (until_offset is None or not out or out[-1]["offset"] < until_offset):
            if time.monotonic() > deadline:
                raise Failure("confluent-kafka consumer: %d of %d records after %.0fs" % (len(out), count, bound(limit)))
            batch = cons.consume(num_messages=min(10000, count - len(out)), timeout=0.5)
            for m in batch:
                if m.error():
                    raise Failure("confluent-kafka consumer error: %s" % m.error())
                ts_type, ts = m.timestamp()
                out.append({"partition": m.partition(), "offset": m.offset(), "key": m.key(), "value": m.value(),
                            "headers": [(h[0], h[1]) for h in (m.headers() or [])], "timestamp": ts})
        return out
    finally:
        cons.close()


# ---------------------------------------------------------------- kafka-python

def kp_producer(bootstrap, **extra):
    from kafka import KafkaProducer
    kw = dict(bootstrap_servers=bootstrap, acks="all", linger_ms=5, request_timeout_ms=int(bound(15000)),
              api_version_auto_timeout_ms=int(bound(10000)), max_block_ms=int(bound(15000)))
    kw.update(extra)
    return KafkaProducer(**kw)


def kp_produce(bootstrap, topic, records, limit=30.0, **extra):
    p = kp_producer(bootstrap, **extra)
    try:
        futs = []
        for r in records:
            futs.append(p.send(topic, value=r["value"], key=r["key"], headers=list(r["headers"]) or None,
                               partition=r.get("partition"), timestamp_ms=r.get("timestamp")))
        p.flush(timeout=bound(limit))
        out = []
        for r, f in zip(records, futs):
            md = f.get(timeout=bound(limit))
            out.append(dict(r, partition=md.partition, offset=md.offset,
                            timestamp=r.get("timestamp") if r.get("timestamp") is not None else md.timestamp))
        return out
    finally:
        p.close(timeout=5)


def kp_consumer(bootstrap, **extra):
    from kafka import KafkaConsumer
    kw = dict(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
              api_version_auto_timeout_ms=int(bound(10000)), request_timeout_ms=int(bound(30000)),
              fetch_max_wait_ms=100, consumer_timeout_ms=int(bound(1000)))
    kw.update(extra)
    return KafkaConsumer(**kw)


def kp_consume(bootstrap, topic, partition, start, count, limit=30.0, **extra):
    from kafka import TopicPartition
    c = kp_consumer(bootstrap, **extra)
    try:
        tp = TopicPartition(topic, partition)
        c.assign([tp])
        c.seek(tp, start)
        out = []
        deadline = time.monotonic() + bound(limit)
        while len(out) < count:
            if time.monotonic() > deadline:
                raise Failure("kafka-python consumer: %d of %d records after %.0fs" % (len(out), count, bound(limit)))
            polled = c.poll(timeout_ms=500, max_records=10000)
            for _tp, msgs in polled.items():
                for m in msgs:
                    out.append({"partition": m.partition, "offset": m.offset, "key": m.key, "value": m.value,
                                "headers": [(h[0], h[1]) for h in (m.headers or [])], "timestamp": m.timestamp})
        return out
    finally:
        c.close(autocommit=False)


# ---------------------------------------------------------------- kcat

KCAT_FMT = "%p|%o|%T|%K|%S|%k%s|%h\\x1e"


def kcat_produce(bootstrap, topic, partition, records, headers=(), extra=(), limit=30.0):
    """kcat -P: keys and values must not contain 0x1e/0x1f; one set of
    headers (-H) for all records, as kcat allows. Keys/values None are
    sent as NULL with -Z (an empty key/value then can't be expressed)."""
    data = b""
    for r in records:
        k = r["key"]
        v = r["value"]
        check(k is None or (b"\x1e" not in k and b"\x1f" not in k), "kcat key contains a delimiter")
        check(v is None or (b"\x1e" not in v and b"\x1f" not in v), "kcat value contains a delimiter")
        data += (k or b"") + b"\x1f" + (v or b"") + b"\x1e"
    argv = [KCAT, "-P", "-b", bootstrap, "-t", topic, "-p", str(partition), "-K", "\\x1f", "-D", "\\x1e", "-Z",
            "-X", "acks=all", "-m", str(int(bound(10)))]
    for h in headers:
        argv += ["-H", "%s=%s" % (h[0], h[1].decode())]
    argv += list(extra)
    return run(argv, input=data, limit=limit)


def kcat_consume(bootstrap, topic, partition, start, count, extra=(), limit=30.0):
    """kcat -C -e from `start`: parses its %-format output byte-exact
    (key and value by their printed lengths). Header values print as text."""
    argv = [KCAT, "-C", "-b", bootstrap, "-t", topic, "-p", str(partition), "-o", str(start), "-c", str(count),
            "-e", "-f", KCAT_FMT, "-m", str(int(bound(10))), "-X", "isolation.level=read_uncommitted"] + list(extra)
    p = run(argv, limit=limit)
    return parse_kcat(p.stdout)


def parse_kcat(out):
    recs = []
    pos = 0
    while pos < len(out):
        parts = []
        for _ in range(5):
            bar = out.index(b"|", pos)
            parts.append(out[pos:bar])
            pos = bar + 1
        part, off, ts, kl, vl = (int(x) for x in parts)
        key = None
        if kl >= 0:
            key = out[pos:pos + kl]
            pos += kl
        value = None
        if vl >= 0:
            value = out[pos:pos + vl]
            pos += vl
        check(out[pos:pos + 1] == b"|", "kcat output: expected | after value at %d", pos)
        pos += 1
        end = out.index(b"\x1e", pos)
        htext = out[pos:end]
        pos = end + 1
        headers = []
        if htext:
            for kv in htext.split(b","):
                k, _, v = kv.partition(b"=")
                headers.append((k.decode("utf-8", "replace"), v))
        recs.append({"partition": part, "offset": off, "timestamp": ts, "key": key, "value": value,
                     "headers": headers})
    return recs


def kcat_metadata(bootstrap, topic=None, limit=20.0):
    argv = [KCAT, "-L", "-J", "-b", bootstrap, "-m", str(int(bound(10)))]
    if topic:
        argv += ["-t", topic]
    return json.loads(run(argv, limit=limit).stdout)


# ---------------------------------------------------------------- admin helpers

def ck_admin(bootstrap):
    from confluent_kafka.admin import AdminClient
    return AdminClient(ck_conf(bootstrap))


def ck_create_topic(bootstrap, name, partitions=1, rf=1, config=None, limit=15.0):
    from confluent_kafka.admin import NewTopic
    a = ck_admin(bootstrap)
    fs = a.create_topics([NewTopic(name, partitions, rf, config=config or {})],
                         operation_timeout=bound(10), request_timeout=bound(limit))
    fs[name].result(timeout=bound(limit))
    wait_topic(bootstrap, name, partitions)


def wait_topic(bootstrap, name, partitions, limit=10.0):
    """Waits until Metadata shows the topic with all partitions led."""
    deadline = time.monotonic() + bound(limit)
    last = None
    while time.monotonic() < deadline:
        c = kwire.Conn(int(bootstrap.rsplit(":", 1)[1]))
        try:
            md = kwire.metadata_v12(c, [name])
        finally:
            c.close()
        t = md["topics"][0] if md["topics"] else None
        if t and t["error_code"] == 0 and len(t["partitions"]) == partitions and \
                all(p["leader"] >= 0 for p in t["partitions"]):
            return t
        last = t
        time.sleep(0.05)
    raise Failure("topic %s not ready with %d partitions within %.0fs: %s" % (name, partitions, bound(limit), last))


def port_of(bootstrap):
    return int(bootstrap.rsplit(":", 1)[1])


def raw_read_all(bootstrap, topic, partition, max_bytes=8 << 20):
    """Every record of a partition through raw Fetch v4 (for before/after
    comparisons that must not depend on a client)."""
    c = kwire.Conn(port_of(bootstrap))
    try:
        out = []
        off = 0
        while True:
            p = kwire.fetch_v4(c, topic, partition, off, max_bytes=max_bytes)
            check(p["error_code"] == 0, "Fetch v4 %s-%d@%d: error %d", topic, partition, off, p["error_code"])
            recs = [r for r in kwire.parse_batches(p["records"]) if r["offset"] >= off]
            out += recs
            if not recs:
                return out, p["high_watermark"]
            off = recs[-1]["offset"] + 1
            if off >= p["high_watermark"]:
                return out, p["high_watermark"]
    finally:
        c.close()
