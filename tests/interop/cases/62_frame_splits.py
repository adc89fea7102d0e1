"""Request framing under every split of the byte stream: one connection
pipelines Produce requests of 40 KiB to 600 KiB (the sizes that the
worker reads straight into a pooled frame, with the next frame's size read
in the same call) between small ApiVersions and Produce requests, and
writes the whole stream in pieces of 1 byte to 300 KiB with pauses, so
that sizes, frame ends and the next frames' starts fall anywhere in a
read. Every answer comes back in order with its correlation id, every
Produce at the offset the ones before it leave, and a raw Fetch gives back
exactly the records sent."""
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Server, Suite, bound, check, ck_create_topic, eq, log, raw_read_all  # noqa: E402
import kwire  # noqa: E402

S = Suite("frame_splits", case_limit=240.0)
srv = None
T = "fs"


def setup():
    global srv
    srv = Server()
    ck_create_topic(srv.bootstrap, T, 1)


def stream(rng, conn, nframes):
    """The requests' bytes, where each frame ends, and per frame (corr,
    kind, records)."""
    data, ends, plan = [], [], []
    for i in range(nframes):
        pick = rng.random()
        if pick < 0.12:
            f, corr = conn.frame(kwire.API_VERSIONS, 0, kwire.api_versions_body(0))
            plan.append((corr, "av", []))
        else:
            # big: records enough for 40 KiB - 600 KiB, some right at 64 KiB
            if pick < 0.2:
                n = rng.randint(1, 5)
            elif pick < 0.4:
                n = 420 + rng.randint(-4, 4)  # about 64 KiB of 150-byte records
            else:
                n = rng.randint(270, 4000)
            values = [b"%d-%d-" % (i, j) + bytes([65 + rng.randrange(26)]) * 140 for j in range(n)]
            batch = kwire.build_batch([(None, v, ()) for v in values])
            f, corr = conn.frame(kwire.PRODUCE, 8, kwire.produce_body(T, 0, batch, acks=1))
            plan.append((corr, "produce", values))
        data.append(f)
        ends.append((ends[-1] if ends else 0) + len(f))
    return b"".join(data), ends, plan


@S.case
def pipelined_requests_split_anywhere():
    rng = random.Random(62)
    conn = kwire.Conn(srv.port, timeout=bound(60))
    sent_values = []
    expected_offset = 0
    try:
        for rnd in range(3):
            data, ends, plan = stream(rng, conn, 40)
            answers, failure = [], []

            def reader():
                try:
                    for _ in plan:
                        answers.append(conn.recv_frame(timeout=bound(60)))
                except Exception as e:  # noqa: BLE001 - reported below
                    failure.append(e)

            th = threading.Thread(target=reader)
            th.start()
            pos = 0
            while pos < len(data):
                k = rng.random()
                if k < 0.15:
                    # after a pause at a frame's end, the next frames whole
                    # in one write: one read can hold a frame and more
                    time.sleep(0.01)
                    nxt = [e for e in ends if e > pos]
                    n = nxt[min(len(nxt) - 1, rng.randint(1, 3))] - pos
                elif k < 0.4:
                    # up to a frame's end, as a client writing request by
                    # request does: the next read starts at a frame
                    n = min(e for e in ends if e > pos) - pos
                    if rng.random() < 0.5:
                        n += rng.choice((0, 2, 4, 100, 70 << 10))  # and a part of the next
                else:
                    n = rng.randint(1, 7) if k < 0.6 else rng.randint(50, 200) if k < 0.7 else \
                        rng.randint(60 << 10, 70 << 10) if k < 0.9 else rng.randint(1, 300 << 10)
                conn.send_raw(data[pos:pos + n])
                pos += n
                if rng.random() < 0.3:
                    time.sleep(rng.random() * 0.005)
            th.join(bound(90))
            check(not th.is_alive(), "round %d: answers did not all come back", rnd)
            check(not failure, "round %d: reading answers failed: %r", rnd, failure)
            eq(len(answers), len(plan), "round %d: answers" % rnd)
            for payload, (corr, kind, values) in zip(answers, plan):
                r = kwire.R(payload)
                eq(r.i32(), corr, "correlation id")
                if kind == "av":
                    eq(kwire.parse_api_versions(r, 0)["error_code"], 0, "ApiVersions error")
                else:
                    p = kwire.parse_produce_v8(r)[T][0]
                    eq(p["error_code"], 0, "Produce error (corr %d)" % corr)
                    eq(p["base_offset"], expected_offset, "Produce base offset (corr %d)" % corr)
                    expected_offset += len(values)
                    sent_values += values
            log("round %d: %d frames, %d bytes, %d records so far", rnd, len(plan), len(data), len(sent_values))
    finally:
        conn.close()
    got, hw = raw_read_all(srv.bootstrap, T, 0)
    eq(hw, len(sent_values), "high watermark")
    eq(len(got), len(sent_values), "records fetched")
    check([r["value"] for r in got] == sent_values, "fetched values differ from the values produced")
    check(srv.alive(), "the server died")


if __name__ == "__main__":
    S.run(setup)
