"""Compression codecs (issue 4): batches compressed by one client are read
intact by another; the broker validates compressed batches through its
codec modules, keeps a producer's batch byte for byte when the topic's
compression.type allows it, and otherwise recompresses to the topic's codec
(Kafka's LogValidator), checked record by record after decompression.

Clients: kcat and confluent-kafka (librdkafka, -z/compression.codec),
kafkajs with kafkajs-snappy, kafkajs-lz4 and zstd-napi (js/codecs_kafkajs.mjs),
raw Produce/Fetch (kwire) for byte-level checks, samsactl consume.
"""
# limit: 300
import gzip
import json
import os
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness as h  # noqa: E402
import kwire  # noqa: E402

CODECS = ["gzip", "snappy", "lz4", "zstd"]
CODEC_ID = {"none": 0, "uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
JS = os.path.join(h.HERE, "js", "codecs_kafkajs.mjs")

suite = h.Suite("81_test_codecs_interop", case_limit=90)
srv = None


def setup():
    global srv
    srv = h.Server()
    # The server under test must have every codec (its build's modules).
    p = h.run([h.SAMSA_BIN, "--list-plugins"], limit=20)
    listing = p.stdout.decode()
    for c in CODECS:
        if "codec:%s(%d)" % (c, CODEC_ID[c]) not in listing:
            raise h.Failure("samsa --list-plugins lacks codec %s:\n%s" % (c, listing))


def records(n, tag, ts0=None):
    """Compressible records with keys (some null), values and headers; one
    header set for all (kcat's -H applies to every record)."""
    ts0 = ts0 or int(time.time() * 1000) - 5000
    out = []
    for i in range(n):
        key = None if i % 7 == 3 else ("key-%s-%d" % (tag, i)).encode()
        value = ("%s record %d: " % (tag, i)).encode() + b"the quick brown fox jumps over the lazy dog " * (1 + i % 5)
        out.append(h.rec(key, value, headers=[("h1", b"v1"), ("h2", b"%s" % tag.encode())], timestamp=ts0 + i))
    return out


def js(op, args, stdin=None, limit=60.0):
    argv = [h.NODE, JS, op, srv.bootstrap, json.dumps(args)]
    p = h.run(argv, input=json.dumps(stdin).encode() if stdin is not None else b"", limit=limit, check_rc=False)
    lines = p.stdout.decode("utf-8", "replace").strip().splitlines()
    try:
        res = json.loads(lines[-1])
    except (ValueError, IndexError):
        raise h.Failure("node %s exited %d without JSON; stderr:\n%s" % (op, p.returncode, p.stderr.decode()[-2000:]))
    if res.get("skip"):
        raise h.Skip(res.get("error"))
    if not res.get("ok"):
        raise h.Failure("node %s failed: %s" % (op, res.get("error")))
    return res


def js_fetch(topic, count, offset=0):
    return h.from_json_records(js("fetch", {"topic": topic, "partition": 0, "offset": offset, "count": count})["records"])


def create(topic, config=None):
    h.ck_create_topic(srv.bootstrap, topic, 1, 1, config=config or {})


def raw_batches(topic):
    """(attributes codec, bytes) of every stored batch, by raw Fetch v4."""
    c = kwire.Conn(srv.port)
    try:
        data = kwire.fetch_v4(c, topic, 0, 0, max_bytes=8 << 20)["records"] or b""
    finally:
        c.close()
    out = []
    pos = 0
    while len(data) - pos >= 61:
        blen = struct.unpack(">i", data[pos + 8:pos + 12])[0]
        end = pos + 12 + blen
        if end > len(data):
            break
        attrs = struct.unpack(">h", data[pos + 21:pos + 23])[0]
        out.append((attrs & 7, data[pos:end]))
        pos = end
    return out


def librdkafka_lz4():
    c = kwire.Conn(srv.port)
    try:
        keys = kwire.api_versions(c, 0)["api_keys"]
    finally:
        c.close()
    return 10 in keys  # {api_key: (min, max)}


def expected(produced, base=0):
    return [dict(r, offset=base + i) for i, r in enumerate(produced)]


def check_consumers(topic, want, skip=()):
    """Every consumer reads want exactly: confluent-kafka, kcat, kafkajs."""
    n = len(want)
    if "ck" not in skip:
        h.compare_records(h.ck_consume(srv.bootstrap, topic, 0, 0, n), want, "confluent-kafka read of " + topic)
    if "kcat" not in skip:
        got = h.kcat_consume(srv.bootstrap, topic, 0, 0, n)
        h.compare_records(got, want, "kcat read of " + topic)
    if "kafkajs" not in skip:
        h.compare_records(js_fetch(topic, n), want, "kafkajs read of " + topic)


# ------------------------------------------------------------ client to client

def make_kcat_case(codec):
    def case():
        topic = "kcat-" + codec
        create(topic)
        want = records(40, "kcat-" + codec)
        h.kcat_produce(srv.bootstrap, topic, 0, want, headers=want[0]["headers"],
                       extra=["-z", codec, "-X", "linger.ms=50", "-X", "batch.num.messages=1000"])
        batches = raw_batches(topic)
        h.check(batches, "nothing stored in %s", topic)
        # kcat sets no timestamps of ours: compare without them
        exp = [dict(r, timestamp=None, offset=i) for i, r in enumerate(want)]
        if codec == "lz4" and not librdkafka_lz4():
            # rdkafka_feature.c: librdkafka compresses with lz4 only for
            # brokers that offer FindCoordinator; until samsa does, it
            # sends lz4 batches uncompressed ("Broker does not support
            # compression type lz4"). kafkajs covers lz4 meanwhile.
            h.eq(sorted({b[0] for b in batches}), [0], "librdkafka's fallback to no compression")
            h.compare_records(js_fetch(topic, len(want)), exp, "kafkajs read", timestamps=False)
            raise h.Skip("librdkafka sends lz4 only to brokers with FindCoordinator (API 10), not offered yet")
        h.eq(sorted({b[0] for b in batches}), [CODEC_ID[codec]], "codecs of the stored batches")
        h.compare_records(js_fetch(topic, len(want)), exp, "kafkajs read of kcat's %s batches" % codec,
                          timestamps=False)
        h.compare_records(h.ck_consume(srv.bootstrap, topic, 0, 0, len(want)), exp,
                          "confluent-kafka read of kcat's %s batches" % codec, timestamps=False)
        # samsactl decompresses through the same modules as the server
        p = h.run([h.SAMSACTL_BIN, "--bootstrap-server", srv.bootstrap, "consume", "--topic", topic,
                   "--from-beginning", "--max-messages", str(len(want))], limit=30)
        h.eq(p.stdout.decode().splitlines(), [r["value"].decode() for r in want], "samsactl consume values")
    case.__name__ = "kcat_%s_read_by_kafkajs_confluent_samsactl" % codec
    return case


def make_kafkajs_case(codec):
    def case():
        topic = "kafkajs-" + codec
        create(topic)
        want = records(30, "kjs-" + codec)
        res = js("produce", {"topic": topic, "partition": 0, "codec": codec}, stdin=h.to_json_records(want))
        h.eq(res["errorCode"], 0, "kafkajs produce error code")
        batches = raw_batches(topic)
        h.eq([b[0] for b in batches], [CODEC_ID[codec]], "one %s batch stored" % codec)
        check_consumers(topic, expected(want), skip=("kafkajs",))
    case.__name__ = "kafkajs_%s_read_by_kcat_confluent" % codec
    return case


for _c in CODECS:
    suite.case(make_kcat_case(_c))
    suite.case(make_kafkajs_case(_c))


# ------------------------------------------------------------ recompression

def make_recompress_case(target, source, level_key=None, level=None):
    def case():
        topic = "recompress-%s-from-%s" % (target, source)
        cfg = {"compression.type": target}
        if level_key:
            cfg[level_key] = str(level)
        create(topic, cfg)
        want = records(60, topic)
        if source == "lz4":
            # librdkafka would send lz4 uncompressed to samsa (see above)
            res = js("produce", {"topic": topic, "partition": 0, "codec": source}, stdin=h.to_json_records(want))
            h.eq(res["errorCode"], 0, "kafkajs produce error code")
        else:
            conf = {"compression.codec": source, "linger.ms": 50}
            produced = h.ck_produce(srv.bootstrap, topic, want, conf=conf)
            h.eq([p["offset"] for p in produced], list(range(len(want))), "offsets assigned")
        batches = raw_batches(topic)
        h.check(batches, "nothing stored")
        h.eq(sorted({b[0] for b in batches}), [CODEC_ID[target]], "codec of every stored batch")
        check_consumers(topic, expected(want))
    case.__name__ = "recompress_%s_to_%s%s" % (source, target, "_level_%s" % level if level is not None else "")
    return case


suite.case(make_recompress_case("gzip", "lz4", "compression.gzip.level", 9))
suite.case(make_recompress_case("snappy", "zstd"))
suite.case(make_recompress_case("lz4", "none", "compression.lz4.level", 1))
suite.case(make_recompress_case("zstd", "gzip", "compression.zstd.level", 19))
suite.case(make_recompress_case("uncompressed", "snappy"))
suite.case(make_recompress_case("zstd", "zstd"))


# ------------------------------------------------------------ raw batches

def gzip_batch(recs, base_ts, count=None, payload=None):
    """A v2 batch whose records block is gzip-compressed by Python's zlib."""
    body = b"".join(kwire.encode_record(i, r[3] - base_ts, r[0], r[1], r[2]) for i, r in enumerate(recs))
    comp = payload if payload is not None else gzip.compress(body)
    n = len(recs) if count is None else count
    max_ts = max(r[3] for r in recs)
    after_crc = (kwire.W().i16(1).i32(n - 1).i64(base_ts).i64(max_ts).i64(-1).i16(-1).i32(-1).i32(n).bytes() + comp)
    crc = kwire.crc32c(after_crc)
    return kwire.W().i64(0).i32(4 + 1 + 4 + len(after_crc)).i32(-1).i8(2).u32(crc).bytes() + after_crc


def raw_produce(topic, batch):
    c = kwire.Conn(srv.port)
    try:
        return kwire.produce(c, topic, 0, batch)
    finally:
        c.close()


@suite.case
def producer_batch_kept_byte_for_byte():
    """compression.type=producer, and a topic codec equal to the batch's:
    the stored batch is the producer's, but for baseOffset and the
    partition leader epoch (outside the CRC)."""
    now = int(time.time() * 1000)
    recs = [(b"k%d" % i, b"value %d " % i * 20, [("h", b"x")], now + i) for i in range(25)]
    batch = gzip_batch(recs, now)
    for topic, cfg in (("bytes-producer", {}), ("bytes-gzip", {"compression.type": "gzip"})):
        create(topic, cfg)
        for _ in range(2):
            res = raw_produce(topic, batch)
            h.eq(res["error_code"], 0, "produce error code (%s)" % res.get("error_message"))
        stored = raw_batches(topic)
        h.eq(len(stored), 2, "batches stored in " + topic)
        for i, (codec, b) in enumerate(stored):
            h.eq(struct.unpack(">q", b[:8])[0], i * 25, "baseOffset of batch %d" % i)
            h.eq(b[8:12], batch[8:12], "batchLength")
            h.check(b[16:] == batch[16:], "%s batch %d differs from the producer's after byte 16", topic, i)
    # and a client reads it
    want = [h.rec(k, v, hs, timestamp=ts) for k, v, hs, ts in recs] * 2
    h.compare_records(h.ck_consume(srv.bootstrap, "bytes-gzip", 0, 0, 50), expected(want), "confluent-kafka read")


@suite.case
def recompressed_batch_keeps_producer_fields():
    """A rebuilt batch keeps the producer id, epoch and base sequence, the
    transactional bit's absence, and every record timestamp."""
    topic = "recompress-producer-fields"
    create(topic, {"compression.type": "zstd"})
    now = int(time.time() * 1000)
    recs = [(b"k%d" % i, b"v%d" % i * 10, [("h", b"%d" % i)], now - 100 + i * 3) for i in range(12)]
    batch = kwire.build_batch(recs, base_timestamp=now - 100, producer_id=7077, producer_epoch=3, base_sequence=0)
    res = raw_produce(topic, batch)
    h.eq(res["error_code"], 0, "produce error code (%s)" % res.get("error_message"))
    (codec, b), = raw_batches(topic)
    h.eq(codec, 4, "stored codec")
    pid, epoch, seq = struct.unpack(">qhi", b[43:57])
    h.eq((pid, epoch, seq), (7077, 3, 0), "producer id, epoch, base sequence")
    base_ts, max_ts = struct.unpack(">qq", b[27:43])
    h.eq((base_ts, max_ts), (now - 100, now - 100 + 33), "base and max timestamps")
    want = [h.rec(k, v, hs, timestamp=ts) for k, v, hs, ts in recs]
    check_consumers(topic, expected(want))


@suite.case
def decompression_bomb_refused():
    """A batch declaring one record whose block inflates to 64 MiB:
    the codec stops at records x max.message.bytes and the partition
    gets MESSAGE_TOO_LARGE; the server stays up."""
    topic = "bomb"
    create(topic)
    now = int(time.time() * 1000)
    bomb = gzip.compress(b"\0" * (64 << 20), compresslevel=9)
    res = raw_produce(topic, gzip_batch([(b"k", b"v", [], now)], now, payload=bomb))
    h.eq(res["error_code"], 10, "error code (MESSAGE_TOO_LARGE)")
    # garbage instead of gzip: CORRUPT_MESSAGE
    res = raw_produce(topic, gzip_batch([(b"k", b"v", [], now)], now, payload=b"this is not gzip at all"))
    h.eq(res["error_code"], 2, "error code (CORRUPT_MESSAGE)")
    # record count disagreeing with the decompressed records: INVALID_RECORD
    recs = [(b"k%d" % i, b"v", [], now) for i in range(3)]
    body = b"".join(kwire.encode_record(i, 0, r[0], r[1], r[2]) for i, r in enumerate(recs[:2]))
    res = raw_produce(topic, gzip_batch(recs, now, payload=gzip.compress(body)))
    h.eq(res["error_code"], 87, "error code (INVALID_RECORD)")
    h.check(srv.alive(), "server died")
    res = raw_produce(topic, gzip_batch(recs, now))
    h.eq(res["error_code"], 0, "a good batch after the bad ones")


if __name__ == "__main__":
    suite.run(setup)
