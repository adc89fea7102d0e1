"""Produce with acks=0, 1 and -1 from real clients (confluent-kafka,
kafka-python) and raw: records land at the expected offsets, acks=0 gets
no response (the next request on the connection is answered in order),
a failed acks=0 produce closes the connection (as Kafka does, so the
client notices), and an invalid acks value is INVALID_REQUIRED_ACKS."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import (Server, Suite, check, eq, bound, ck_create_topic, ck_produce, kp_produce,  # noqa: E402
                     raw_read_all, rec)
import kwire  # noqa: E402

S = Suite("acks")
srv = None
INVALID_REQUIRED_ACKS = 21


def setup():
    global srv
    srv = Server()
    for t in ("acks-ck", "acks-kp", "acks-raw"):
        ck_create_topic(srv.bootstrap, t)


def values(topic):
    recs, _hw = raw_read_all(srv.bootstrap, topic, 0)
    return [r["value"] for r in recs]


def wait_stored(topic, n):
    """acks=0 gives no confirmation: wait (bounded) until n records are
    stored, so the next phase, on another connection, lands after them."""
    deadline = time.monotonic() + bound(10)
    while len(values(topic)) < n:
        check(time.monotonic() < deadline, "%s: %d records stored, want %d", topic, len(values(topic)), n)
        time.sleep(0.05)


@S.case
def confluent_kafka_all_acks():
    want = []
    for acks in ("0", "1", "all"):
        recs = [rec(b"k", b"ck-%s-%d" % (acks.encode(), i)) for i in range(50)]
        ck_produce(srv.bootstrap, "acks-ck", recs, conf={"acks": acks, "linger.ms": 5})
        want += [r["value"] for r in recs]
        wait_stored("acks-ck", len(want))
    eq(values("acks-ck"), want, "records of acks=0, 1 and all, in order")


@S.case
def kafka_python_all_acks():
    want = []
    for acks in (0, 1, "all"):
        recs = [rec(b"k", b"kp-%s-%d" % (str(acks).encode(), i)) for i in range(50)]
        kp_produce(srv.bootstrap, "acks-kp", recs, acks=acks)
        want += [r["value"] for r in recs]
        wait_stored("acks-kp", len(want))
    eq(values("acks-kp"), want, "records of acks=0, 1 and all, in order")


@S.case
def raw_acks_semantics():
    c = kwire.Conn(srv.port, timeout=bound(10))
    try:
        batch = kwire.build_batch([(b"k", b"raw-0", [])])
        # acks=0: no response; the ApiVersions sent right behind it is the
        # next thing the connection answers.
        c.send(kwire.PRODUCE, 8, kwire.produce_body("acks-raw", 0, batch, acks=0))
        res = kwire.api_versions(c, 0)
        eq(res["error_code"], 0, "request after an acks=0 produce is answered")
        for acks, want_off in ((1, 1), (-1, 2)):
            r = kwire.produce(c, "acks-raw", 0, kwire.build_batch([(b"k", b"raw-%d" % want_off, [])]),
                              acks=acks)
            eq((r["error_code"], r["base_offset"]), (0, want_off), "acks=%d produce" % acks)
        r = kwire.produce(c, "acks-raw", 0, kwire.build_batch([(b"k", b"never", [])]), acks=2)
        eq(r["error_code"], INVALID_REQUIRED_ACKS, "acks=2 (INVALID_REQUIRED_ACKS)")
    finally:
        c.close()
    eq(values("acks-raw"), [b"raw-0", b"raw-1", b"raw-2"], "stored records")

    # A failing acks=0 produce closes the connection.
    mark = srv.log_size()
    c = kwire.Conn(srv.port, timeout=bound(10))
    try:
        c.send(kwire.PRODUCE, 8, kwire.produce_body("no-such-topic", 0, batch, acks=0))
        closed = False
        try:
            kwire.api_versions(c, 0)
        except (kwire.Closed, OSError):
            closed = True
        check(closed, "connection closed after a failed acks=0 produce")
    finally:
        c.close()
    srv.wait_log("acks=0", since=mark)


if __name__ == "__main__":
    S.run(setup)
