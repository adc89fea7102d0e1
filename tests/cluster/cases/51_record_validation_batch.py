"""samsa.record.validation=batch on a 3-node cluster: records a leader
stores unread replicate as they were sent. confluent-kafka at acks=all
(uncompressed and lz4) with replication factor 3 is acknowledged and read
back exactly; a malformed but CRC-valid batch is acknowledged at acks=all
too, so the followers took it (they check the CRC and the header, as
Kafka's); every replica's segment file is byte-identical."""
# limit: 120

import glob
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cluster as C  # noqa: E402
from cluster import Failure, check, eq  # noqa: E402
import kwire  # noqa: E402

S = C.harness.Suite("51_record_validation_batch", case_limit=60)
CL = None
TOPIC = "vb"


def setup():
    global CL
    CL = C.Cluster(3, overrides={"samsa.record.validation": "batch"})
    CL.start()


def produce(first, count, **extra):
    from confluent_kafka import Producer
    conf = {"bootstrap.servers": ",".join(n.bootstrap for n in CL.nodes), "acks": "all",
            "message.timeout.ms": 30000, "linger.ms": 5}
    conf.update(extra)
    p = Producer(conf)
    results = []
    for i in range(first, first + count):
        p.produce(TOPIC, key=b"k%04d" % i, value=b"v%04d" % i, partition=0,
                  on_delivery=lambda err, msg: results.append((err, msg.offset())))
    check(p.flush(C.bound(30)) == 0, "records not delivered within 30 s")
    errs = [e for e, _ in results if e is not None]
    check(not errs, "delivery errors: %s", errs[:3])
    return sorted(o for _, o in results)


def malformed_batch():
    """One record whose length counts a byte its fields do not use, under a
    correct CRC: Kafka (and samsa's full mode) refuse it as INVALID_RECORD."""
    r = kwire.encode_record(0, 0, b"k", b"v")
    body = r[1:]
    blob = kwire.enc_varint(len(body) + 1) + body + b"\x00"
    now = int(time.time() * 1000)
    after_crc = kwire.W().i16(0).i32(0).i64(now).i64(now).i64(-1).i16(-1).i32(-1).i32(1).bytes() + blob
    return (kwire.W().i64(0).i32(9 + len(after_crc)).i32(-1).i8(2).u32(kwire.crc32c(after_crc)).bytes()
            + after_crc)


def segment_bytes(node):
    files = sorted(glob.glob(os.path.join(node.data, "%s-0" % TOPIC, "*.log")))
    check(files, "node %d has no segment of %s-0", node.node_id, TOPIC)
    out = b""
    for f in files:
        with open(f, "rb") as fh:
            out += fh.read()
    return out


@S.case
def replicated_as_sent():
    C.create_topics(CL.nodes[0], [TOPIC], partitions=1, rf=3)
    C.wait_partitions(CL, TOPIC, lambda st: st[0][0] > 0 and len(st[0][1]) == 3, "leader and ISR of 3")
    eq(produce(0, 100), list(range(100)), "uncompressed offsets")
    eq(produce(100, 100, **{"compression.codec": "lz4"}), list(range(100, 200)), "lz4 offsets")

    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": CL.nodes[0].bootstrap, "group.id": "vb", "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    got = []
    deadline = time.monotonic() + C.bound(20)
    while len(got) < 200 and time.monotonic() < deadline:
        for m in c.consume(num_messages=200 - len(got), timeout=0.5):
            if m.error():
                raise Failure("consumer error: %s" % m.error())
            got.append((m.offset(), m.key(), m.value()))
    c.close()
    eq(got, [(i, b"k%04d" % i, b"v%04d" % i) for i in range(200)], "records read back")

    batch = malformed_batch()
    r = C.call_leader(CL, TOPIC, lambda conn: kwire.produce(conn, TOPIC, 0, batch, acks=-1),
                      lambda a: a["error_code"] not in (6, 7), "acks=all produce of the malformed batch")
    eq((r["error_code"], r["base_offset"]), (0, 200), "acknowledged by all three replicas")

    deadline = time.monotonic() + C.bound(20)
    while True:
        segs = [segment_bytes(n) for n in CL.nodes]
        if all(s == segs[0] for s in segs) and segs[0].endswith(batch[16:]):
            break
        if time.monotonic() > deadline:
            raise Failure("replica segments differ after 20 s: sizes %s" % [len(s) for s in segs])
        time.sleep(0.2)


if __name__ == "__main__":
    S.run(setup)
