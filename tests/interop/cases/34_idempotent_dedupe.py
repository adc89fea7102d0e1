"""Idempotent produce on the partition leader, as Kafka's
ProducerStateManager: a retried batch (same producer id, epoch and
sequence range) is answered with its original offsets and not appended
again; a sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch is
INVALID_PRODUCER_EPOCH; the state survives a clean restart (producer
snapshot) and kill -9 (rebuilt from the log). With a real client: an
idempotent confluent-kafka producer behind a TCP proxy that drops the
connection after the broker answered a Produce (so the answer is lost and
the client retries the same batch) ends with every record exactly once,
in order."""
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import (Server, Suite, check, eq, bound, ck_create_topic,  # noqa: E402
                     raw_read_all, rec, free_ports, run, SAMSACTL_BIN, node, to_json_records)
import kwire  # noqa: E402

S = Suite("idempotent_dedupe")
srv = None
proxy = None
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
INVALID_PRODUCER_EPOCH = 47


class DropProxy:
    """Forwards 127.0.0.1:port to the broker. When armed, the answer to
    the next Produce request is swallowed and both sides of that
    connection are closed: the broker has appended, the client never
    hears of it."""

    def __init__(self, target_port):
        self.target = target_port
        self.port = free_ports(1)[0]
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", self.port))
        self.lsock.listen(16)
        self.lock = threading.Lock()
        self.armed = 0
        self.dropped = 0
        self.produces = 0
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def stop(self):
        self.stopped = True
        self.lsock.close()

    def _accept(self):
        while not self.stopped:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            s = socket.create_connection(("127.0.0.1", self.target))
            st = {"drop_corr": None}
            threading.Thread(target=self._up, args=(c, s, st), daemon=True).start()
            threading.Thread(target=self._down, args=(s, c, st), daemon=True).start()

    @staticmethod
    def _read_frame(sock):
        hdr = b""
        while len(hdr) < 4:
            d = sock.recv(4 - len(hdr))
            if not d:
                return None
            hdr += d
        n = struct.unpack(">i", hdr)[0]
        body = b""
        while len(body) < n:
            d = sock.recv(n - len(body))
            if not d:
                return None
            body += d
        return hdr + body

    def _up(self, c, s, st):
        try:
            while True:
                f = self._read_frame(c)
                if f is None:
                    break
                key, _ver, corr = struct.unpack(">hhi", f[4:12])
                if key == kwire.PRODUCE:
                    with self.lock:
                        self.produces += 1
                        if self.armed:
                            self.armed -= 1
                            st["drop_corr"] = corr
                s.sendall(f)
        except OSError:
            pass
        self._shut(c, s)

    @staticmethod
    def _shut(*socks):
        """Both directions of the pair stop (the other pump's read ends)."""
        for x in socks:
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _down(self, s, c, st):
        try:
            while True:
                f = self._read_frame(s)
                if f is None:
                    break
                corr = struct.unpack(">i", f[4:8])[0]
                if st["drop_corr"] is not None and corr == st["drop_corr"]:
                    with self.lock:
                        self.dropped += 1
                    break
                c.sendall(f)
        except OSError:
            pass
        self._shut(c, s)
        c.close()
        s.close()


def setup():
    global srv, proxy
    srv = Server(start=False)
    proxy = DropProxy(srv.port)
    # Clients learn the proxy's address from Metadata: every connection
    # after the bootstrap one goes through it too.
    srv.overrides["advertised.listeners"] = "PLAINTEXT://127.0.0.1:%d" % proxy.port
    srv.start()
    for t in ("dedupe-raw", "dedupe-restart", "dedupe-kill", "dedupe-proxy", "dedupe-js", "dedupe-plat"):
        ck_create_topic("127.0.0.1:%d" % srv.port, t, partitions=1)


def batch(pid, epoch, seq, n, tag):
    return kwire.build_batch([(b"k", b"%s-%d" % (tag, seq + i), []) for i in range(n)],
                             producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def produce(t, b):
    c = kwire.Conn(srv.port)
    try:
        return kwire.produce(c, t, 0, b)
    finally:
        c.close()


def end_offset(t):
    _recs, hw = raw_read_all("127.0.0.1:%d" % srv.port, t, 0)
    return hw


def expect(t, b, err, base=None, what=""):
    r = produce(t, b)
    eq(r["error_code"], err, "%s: error code" % what)
    if base is not None:
        eq(r["base_offset"], base, "%s: base offset" % what)
    return r


@S.case
def sequence_rules_raw():
    t = "dedupe-raw"
    pid = 4242
    b0 = batch(pid, 0, 0, 5, b"a")
    expect(t, b0, 0, 0, "first batch")
    expect(t, b0, 0, 0, "retry of the first batch")
    b1 = batch(pid, 0, 5, 3, b"a")
    expect(t, b1, 0, 5, "next batch")
    expect(t, b0, 0, 0, "retry of an older batch still retained")
    eq(end_offset(t), 8, "log end after duplicates")
    expect(t, batch(pid, 0, 10, 1, b"gap"), OUT_OF_ORDER_SEQUENCE_NUMBER, what="sequence gap")
    expect(t, batch(pid, 0, 3, 5, b"overlap"), OUT_OF_ORDER_SEQUENCE_NUMBER, what="overlapping range")
    # A new epoch starts at 0; a new epoch at another sequence is a gap.
    expect(t, batch(pid, 1, 7, 1, b"e1"), OUT_OF_ORDER_SEQUENCE_NUMBER, what="new epoch not at sequence 0")
    expect(t, batch(pid, 1, 0, 2, b"e1"), 0, 8, "new epoch at sequence 0")
    expect(t, batch(pid, 0, 8, 1, b"old"), INVALID_PRODUCER_EPOCH, what="older epoch")
    expect(t, b1, INVALID_PRODUCER_EPOCH, what="retry from the fenced epoch")
    # Another producer id is independent; a producer the partition has
    # never seen may start anywhere (Kafka since KIP-360).
    expect(t, batch(pid + 1, 3, 17, 2, b"other"), 0, 10, "unknown producer at sequence 17")
    # Sequences wrap at INT32_MAX.
    expect(t, batch(pid + 2, 0, 2**31 - 2, 2, b"wrap"), 0, 12, "batch ending at INT32_MAX")
    expect(t, batch(pid + 2, 0, 0, 1, b"wrap"), 0, 14, "sequence 0 after INT32_MAX")
    # Batches without a producer id are never deduplicated.
    plain = kwire.build_batch([(b"k", b"plain", [])])
    expect(t, plain, 0, 15, "plain batch")
    expect(t, plain, 0, 16, "plain batch again")
    recs, hw = raw_read_all("127.0.0.1:%d" % srv.port, t, 0)
    eq(hw, 17, "high watermark")
    eq([r["value"] for r in recs],
       [b"a-%d" % i for i in range(8)] + [b"e1-0", b"e1-1", b"other-17", b"other-18",
                                          b"wrap-%d" % (2**31 - 2), b"wrap-%d" % (2**31 - 1), b"wrap-0",
                                          b"plain", b"plain"],
       "stored records")


def retained_after(t, pid, restart):
    b0 = batch(pid, 0, 0, 4, b"r")
    expect(t, b0, 0, 0, "first batch")
    b1 = batch(pid, 0, 4, 4, b"r")
    expect(t, b1, 0, 4, "second batch")
    restart()
    expect(t, b1, 0, 4, "retry of the last batch after the restart")
    expect(t, batch(pid, 0, 9, 1, b"gap"), OUT_OF_ORDER_SEQUENCE_NUMBER, what="gap after the restart")
    expect(t, batch(pid, 0, 8, 2, b"r"), 0, 8, "next batch after the restart")
    expect(t, batch(pid, 0, 8, 2, b"r"), 0, 8, "its retry")
    eq(end_offset(t), 10, "log end")


@S.case
def state_survives_clean_restart():
    retained_after("dedupe-restart", 777, srv.restart)
    pdir = os.path.join(srv.data, "dedupe-restart-0")
    snaps = sorted(f for f in os.listdir(pdir) if f.endswith(".snapshot"))
    # The clean shutdown wrote one at the log end, 8 (the first start's at 0
    # may or may not exist: a roll or close of an empty log).
    check("00000000000000000008.snapshot" in snaps, "no snapshot at the log end after a clean shutdown: %s", snaps)
    res = run([SAMSACTL_BIN, "dump-log", os.path.join(pdir, "00000000000000000008.snapshot")])
    out = res.stdout.decode() if isinstance(res.stdout, bytes) else res.stdout
    lines = [l for l in out.splitlines() if l.startswith("producerId:")]
    eq(len(lines), 1, "producers in the snapshot")
    check(lines[0].startswith("producerId: 777 producerEpoch: 0 coordinatorEpoch: -1 "
                              "currentTxnFirstOffset: OptionalLong.empty lastTimestamp: ")
          and lines[0].endswith(" firstSequence: 4 lastSequence: 7 lastOffset: 7 offsetDelta: 3 timestamp: %s"
                                % lines[0].split("lastTimestamp: ")[1].split()[0]),
          "dump-log of the snapshot: %s", lines[0])


@S.case
def state_survives_kill9():
    def kill_and_start():
        srv.kill9()
        srv.start()
    retained_after("dedupe-kill", 778, kill_and_start)


@S.case
def describe_producers_lists_the_state():
    t = "dedupe-raw"  # after sequence_rules_raw
    c = kwire.Conn(srv.port)
    try:
        parts = kwire.describe_producers(c, t, [0, 7])
        other = kwire.describe_producers(c, "no-such-topic", [0])
    finally:
        c.close()
    eq(parts[7]["error_code"], 3, "unknown partition: UNKNOWN_TOPIC_OR_PARTITION")
    eq(other[0]["error_code"], 3, "unknown topic: UNKNOWN_TOPIC_OR_PARTITION")
    eq(parts[0]["error_code"], 0, "error code")
    got = sorted((p["producer_id"], p["producer_epoch"], p["last_sequence"], p["coordinator_epoch"],
                  p["current_txn_start_offset"]) for p in parts[0]["producers"])
    eq(got, [(4242, 1, 1, -1, -1), (4243, 3, 18, -1, -1), (4244, 0, 0, -1, -1)], "producers")
    check(all(p["last_timestamp"] > 1.6e12 for p in parts[0]["producers"]), "last timestamps: %s",
          parts[0]["producers"])
    # The same through samsactl (kafka-transactions.sh describe-producers).
    res = run([SAMSACTL_BIN, "--bootstrap-server", "127.0.0.1:%d" % srv.port, "transactions", "describe-producers",
               "--topic", t, "--partition", "0"])
    out = res.stdout.decode() if isinstance(res.stdout, bytes) else res.stdout
    lines = out.splitlines()
    eq(lines[0].split(), ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                          "CurrentTransactionStartOffset"], "samsactl header")
    eq(sorted((int(l.split()[0]), int(l.split()[1]), int(l.split()[3]), l.split()[5]) for l in lines[1:]),
       [(4242, 1, 1, "None"), (4243, 3, 18, "None"), (4244, 0, 0, "None")], "samsactl producers")


@S.case
def lost_answer_is_not_appended_twice():
    """The proxy swallows the answer to the 3rd Produce and cuts the
    connection; librdkafka retries that batch with the same sequence."""
    t = "dedupe-proxy"
    n = 60
    recs = [rec(b"k%d" % i, b"v%03d" % i) for i in range(n)]
    with proxy.lock:
        proxy.produces = 0
        proxy.dropped = 0
    # Drop the answer of the third Produce request.
    produces_before_arm = 2

    class Arm(threading.Thread):
        def run(self):
            deadline = time.monotonic() + bound(20)
            while time.monotonic() < deadline:
                with proxy.lock:
                    if proxy.produces >= produces_before_arm:
                        proxy.armed = 1
                        return
                time.sleep(0.001)
    arm = Arm(daemon=True)
    arm.start()
    # One record per request: each is delivered before the next goes.
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": "127.0.0.1:%d" % proxy.port, "enable.idempotence": True,
                  "linger.ms": 0, "retry.backoff.ms": 50, "socket.timeout.ms": int(bound(10000)),
                  "message.timeout.ms": int(bound(30000))})
    out, errs = [], []

    def cb(err, msg):
        if err is not None:
            errs.append(err)
        else:
            out.append({"offset": msg.offset(), "value": msg.value()})
    for r in recs:
        p.produce(t, key=r["key"], value=r["value"], partition=0, on_delivery=cb)
        check(p.flush(bound(20)) == 0, "record %s not delivered", r["value"])
    arm.join(1)
    eq(errs, [], "delivery errors")
    check(proxy.dropped == 1, "the proxy dropped %d answers, want 1 (Produce requests seen: %d)",
          proxy.dropped, proxy.produces)
    eq([o["offset"] for o in out], list(range(n)), "delivered offsets")
    got, hw = raw_read_all("127.0.0.1:%d" % srv.port, t, 0)
    eq(hw, n, "high watermark: each record once")
    eq([(r["offset"], r["value"]) for r in got], [(i, b"v%03d" % i) for i in range(n)], "stored records")
    check(len({r["producer_id"] for r in got}) == 1 and got[0]["producer_id"] >= 0,
          "records carry one producer id: %s", sorted({r["producer_id"] for r in got}))


def js_lost_answer(op, t, args):
    """One send of n records (one Produce): the proxy swallows its answer
    and cuts the connection; the client's retry must be answered with the
    original offsets, not appended again."""
    n = 20
    recs = [rec(b"k%d" % i, b"%s-%02d" % (t.encode(), i)) for i in range(n)]
    with proxy.lock:
        proxy.produces = 0
        proxy.dropped = 0
        proxy.armed = 1
    res = node(op, "127.0.0.1:%d" % proxy.port, dict(args, topic=t), stdin=to_json_records(recs), limit=60)
    with proxy.lock:
        proxy.armed = 0
    eq(proxy.dropped, 1, "answers the proxy dropped")
    check(proxy.produces >= 2, "the client did not retry (Produce requests seen: %d)", proxy.produces)
    got, hw = raw_read_all("127.0.0.1:%d" % srv.port, t, 0)
    eq(hw, n, "high watermark: each record once")
    eq([(r["offset"], r["value"]) for r in got], [(i, recs[i]["value"]) for i in range(n)], "stored records")
    return res


@S.case
def kafkajs_lost_answer_is_not_appended_twice():
    js_lost_answer("kafkajs-produce", "dedupe-js",
                   {"producer": {"idempotent": True, "maxInFlightRequests": 1, "retry": {"retries": 5}}})


@S.case
def platformatic_lost_answer_is_not_appended_twice():
    js_lost_answer("plat-produce", "dedupe-plat", {"platformatic": {"idempotent": True, "retries": 5}})


if __name__ == "__main__":
    try:
        S.run(setup)
    finally:
        if proxy:
            proxy.stop()
