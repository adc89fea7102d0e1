"""Kafka wire protocol by hand, for the raw-socket interop tests.

Only what the tests need: primitive encoders/decoders (classic and compact
types, varints, UUIDs, tagged fields), request framing with request header
v1/v2, a blocking connection that tells a response from a closed socket,
CRC-32C in pure Python (table-driven), and record batch v2 build/parse.
Everything is written from the protocol documentation
(../shared/kafka-protocol), independent of samsa's own codecs.
"""

import os
import socket
import struct
import time
import uuid as uuidlib

# ---------------------------------------------------------------- CRC-32C

def _crc32c_table():
    poly = 0x82F63B78  # Castagnoli, reflected
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    t = _CRC_TABLE
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283  # the standard check value


# ---------------------------------------------------------------- writer

class W:
    def __init__(self):
        self.b = bytearray()

    def raw(self, data):
        self.b += data
        return self

    def i8(self, v):
        self.b += struct.pack(">b", v)
        return self

    def u8(self, v):
        self.b += struct.pack(">B", v)
        return self

    def boolean(self, v):
        return self.u8(1 if v else 0)

    def i16(self, v):
        self.b += struct.pack(">h", v)
        return self

    def i32(self, v):
        self.b += struct.pack(">i", v)
        return self

    def u32(self, v):
        self.b += struct.pack(">I", v)
        return self

    def i64(self, v):
        self.b += struct.pack(">q", v)
        return self

    def uvarint(self, v):
        self.b += enc_uvarint(v)
        return self

    def varint(self, v):
        self.b += enc_varint(v)
        return self

    def string(self, s):  # INT16 length; None -> -1
        if s is None:
            return self.i16(-1)
        d = s.encode() if isinstance(s, str) else bytes(s)
        self.i16(len(d))
        self.b += d
        return self

    def cstring(self, s):  # COMPACT(_NULLABLE)_STRING
        if s is None:
            return self.uvarint(0)
        d = s.encode() if isinstance(s, str) else bytes(s)
        self.uvarint(len(d) + 1)
        self.b += d
        return self

    def bytes_(self, d):  # INT32 length; None -> -1
        if d is None:
            return self.i32(-1)
        self.i32(len(d))
        self.b += d
        return self

    def cbytes(self, d):
        if d is None:
            return self.uvarint(0)
        self.uvarint(len(d) + 1)
        self.b += d
        return self

    def uuid(self, u):
        if u is None:
            self.b += bytes(16)
        elif isinstance(u, (bytes, bytearray)):
            assert len(u) == 16
            self.b += u
        else:
            self.b += uuidlib.UUID(str(u)).bytes if not isinstance(u, uuidlib.UUID) else u.bytes
        return self

    def array(self, items, fn):  # INT32 count
        if items is None:
            return self.i32(-1)
        self.i32(len(items))
        for it in items:
            fn(self, it)
        return self

    def carray(self, items, fn):  # COMPACT_ARRAY
        if items is None:
            return self.uvarint(0)
        self.uvarint(len(items) + 1)
        for it in items:
            fn(self, it)
        return self

    def tags(self):  # empty tagged-field buffer
        return self.uvarint(0)

    def bytes(self):
        return bytes(self.b)


def enc_uvarint(v):
    assert v >= 0
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def enc_varint(v):  # zigzag, 64-bit
    return enc_uvarint((v << 1) ^ (v >> 63) if v < 0 else v << 1)


# ---------------------------------------------------------------- reader

class ParseError(Exception):
    pass


class R:
    def __init__(self, data, pos=0):
        self.d = bytes(data)
        self.p = pos

    def remaining(self):
        return len(self.d) - self.p

    def take(self, n):
        if n < 0 or self.p + n > len(self.d):
            raise ParseError("need %d bytes at %d, have %d" % (n, self.p, len(self.d) - self.p))
        v = self.d[self.p:self.p + n]
        self.p += n
        return v

    def _u(self, fmt, n):
        return struct.unpack(fmt, self.take(n))[0]

    def i8(self):
        return self._u(">b", 1)

    def boolean(self):
        return self._u(">B", 1) != 0

    def i16(self):
        return self._u(">h", 2)

    def i32(self):
        return self._u(">i", 4)

    def u32(self):
        return self._u(">I", 4)

    def i64(self):
        return self._u(">q", 8)

    def uvarint(self):
        shift = 0
        v = 0
        while True:
            b = self.take(1)[0]
            v |= (b & 0x7F) << shift
            if not b & 0x80:
                return v
            shift += 7
            if shift > 63:
                raise ParseError("varint too long")

    def varint(self):
        v = self.uvarint()
        return (v >> 1) ^ -(v & 1)

    def string(self):
        n = self.i16()
        return None if n < 0 else self.take(n).decode("utf-8", "replace")

    def cstring(self):
        n = self.uvarint()
        return None if n == 0 else self.take(n - 1).decode("utf-8", "replace")

    def bytes_(self):
        n = self.i32()
        return None if n < 0 else self.take(n)

    def cbytes(self):
        n = self.uvarint()
        return None if n == 0 else self.take(n - 1)

    def uuid(self):
        return str(uuidlib.UUID(bytes=self.take(16)))

    def array(self, fn):
        n = self.i32()
        return None if n < 0 else [fn(self) for _ in range(n)]

    def carray(self, fn):
        n = self.uvarint()
        return None if n == 0 else [fn(self) for _ in range(n - 1)]

    def tags(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


# ---------------------------------------------------------------- connection

class Closed(Exception):
    """The broker closed the connection."""


def frame(api_key, version, body, header_version=1, corr=1, client_id="samsa-interop"):
    """A whole request frame: size, request header v0/v1/v2, body."""
    h = W().i16(api_key).i16(version).i32(corr)
    if header_version >= 1:
        h.string(client_id)
    if header_version >= 2:
        h.tags()
    payload = h.bytes() + body
    return struct.pack(">i", len(payload)) + payload


class Conn:
    """One blocking TCP connection to a broker."""

    def __init__(self, port, host="127.0.0.1", timeout=10.0, client_id="samsa-interop"):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.client_id = client_id
        self.corr = 0

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send_raw(self, data):
        self.sock.sendall(data)

    def frame(self, api_key, version, body, header_version=1, corr=None, client_id=None):
        if corr is None:
            self.corr += 1
            corr = self.corr
        return frame(api_key, version, body, header_version, corr,
                     self.client_id if client_id is None else client_id), corr

    def send(self, api_key, version, body, header_version=1, **kw):
        data, corr = self.frame(api_key, version, body, header_version, **kw)
        self.send_raw(data)
        return corr

    def _recv_exact(self, n, deadline):
        out = bytearray()
        while len(out) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("timed out waiting for %d bytes (got %d)" % (n, len(out)))
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(n - len(out))
            except (ConnectionResetError, BrokenPipeError) as e:
                raise Closed("connection reset: %s" % e)
            if not chunk:
                raise Closed("connection closed by the broker after %d of %d bytes" % (len(out), n))
            out += chunk
        return bytes(out)

    def recv_frame(self, timeout=None):
        """Returns the response payload (correlation id included)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        size = struct.unpack(">i", self._recv_exact(4, deadline))[0]
        if size < 4 or size > 256 * 1024 * 1024:
            raise ParseError("bad response size %d" % size)
        return self._recv_exact(size, deadline)

    def recv(self, corr, header_version=0, timeout=None):
        """Returns a reader positioned at the response body."""
        payload = self.recv_frame(timeout)
        r = R(payload)
        got = r.i32()
        if got != corr:
            raise ParseError("correlation id %d, expected %d" % (got, corr))
        if header_version >= 1:
            r.tags()
        return r

    def request(self, api_key, version, body, flexible=False, timeout=None):
        """Sends a request and returns a reader at its response body.
        flexible: request header v2 / response header v1 (ApiVersions
        stays on response header v0 whatever its version)."""
        corr = self.send(api_key, version, body, header_version=2 if flexible else 1)
        resp_hv = 1 if (flexible and api_key != API_VERSIONS) else 0
        return self.recv(corr, resp_hv, timeout)

    def expect_closed(self, timeout=None):
        """Waits until the broker closes the connection. Returns the bytes
        received before the close (b'' when the broker said nothing);
        raises socket.timeout if it stays open."""
        deadline = time.monotonic() + (timeout or self.timeout)
        got = bytearray()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("the broker kept the connection open for %.1fs (received %d bytes)"
                                     % (timeout or self.timeout, len(got)))
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except (ConnectionResetError, BrokenPipeError):
                return bytes(got)
            except socket.timeout:
                continue
            if not chunk:
                return bytes(got)
            got += chunk


# ---------------------------------------------------------------- API keys

PRODUCE = 0
FETCH = 1
LIST_OFFSETS = 2
METADATA = 3
API_VERSIONS = 18
CREATE_TOPICS = 19
INIT_PRODUCER_ID = 22
DELETE_TOPICS = 20

# ---------------------------------------------------------------- ApiVersions

def api_versions_body(version, software_name="samsa-interop", software_version="1.0"):
    w = W()
    if version >= 3:
        w.cstring(software_name).cstring(software_version).tags()
    return w.bytes()


def parse_api_versions(r, version):
    """Parses an ApiVersions response body of the given version."""
    out = {"error_code": r.i16()}
    if version >= 3:
        def key(r):
            k = (r.i16(), r.i16(), r.i16())
            r.tags()
            return k
        keys = r.carray(key) or []
    else:
        keys = r.array(lambda r: (r.i16(), r.i16(), r.i16())) or []
    out["api_keys"] = {k: (lo, hi) for k, lo, hi in keys}
    if version >= 1:
        out["throttle_time_ms"] = r.i32()
    if version >= 3:
        r.tags()
    out["trailing"] = r.remaining()
    return out


def api_versions(conn, version=0):
    corr = conn.send(API_VERSIONS, version, api_versions_body(version),
                     header_version=2 if version >= 3 else 1)
    return parse_api_versions(conn.recv(corr, 0), version)


# ---------------------------------------------------------------- record batch v2

def encode_record(offset_delta, ts_delta, key, value, headers=(), attributes=0):
    body = W()
    body.i8(attributes).varint(ts_delta).varint(offset_delta)
    if key is None:
        body.varint(-1)
    else:
        body.varint(len(key)).raw(key)
    if value is None:
        body.varint(-1)
    else:
        body.varint(len(value)).raw(value)
    body.varint(len(headers))
    for hk, hv in headers:
        hkb = hk.encode() if isinstance(hk, str) else hk
        body.varint(len(hkb)).raw(hkb)
        if hv is None:
            body.varint(-1)
        else:
            body.varint(len(hv)).raw(hv)
    b = body.bytes()
    return enc_varint(len(b)) + b


def build_batch(records, base_timestamp=None, base_offset=0, attributes=0, producer_id=-1,
                producer_epoch=-1, base_sequence=-1, count=None, crc_fix=None,
                partition_leader_epoch=-1):
    """records: list of (key, value, headers) or (key, value, headers, ts).
    count overrides the record count field (CRC still correct);
    crc_fix(crc) may return a different CRC to store."""
    if base_timestamp is None:
        base_timestamp = int(time.time() * 1000)
    recs = b""
    max_ts = base_timestamp
    for i, rec in enumerate(records):
        key, value, headers = rec[0], rec[1], rec[2]
        ts = rec[3] if len(rec) > 3 else base_timestamp
        max_ts = max(max_ts, ts)
        recs += encode_record(i, ts - base_timestamp, key, value, headers)
    n = len(records) if count is None else count
    after_crc = (W().i16(attributes).i32(len(records) - 1).i64(base_timestamp).i64(max_ts)
                 .i64(producer_id).i16(producer_epoch).i32(base_sequence).i32(n).bytes() + recs)
    crc = crc32c(after_crc)
    if crc_fix:
        crc = crc_fix(crc)
    # batchLength counts from partitionLeaderEpoch to the end
    batch_len = 4 + 1 + 4 + len(after_crc)
    return (W().i64(base_offset).i32(batch_len).i32(partition_leader_epoch).i8(2).u32(crc).bytes()
            + after_crc)


def parse_batches(data):
    """Parses a record set (uncompressed v2 batches). Returns a list of
    dicts: offset, timestamp, key, value, headers, plus batch fields.
    A partial trailing batch is ignored, as clients do."""
    out = []
    pos = 0
    data = bytes(data or b"")
    while len(data) - pos >= 12:
        base_offset, batch_len = struct.unpack(">qi", data[pos:pos + 12])
        end = pos + 12 + batch_len
        if end > len(data):
            break
        r = R(data[:end], pos + 12)
        ple = r.i32()
        magic = r.i8()
        if magic != 2:
            raise ParseError("magic %d at %d" % (magic, pos))
        crc = r.u32()
        if crc32c(data[r.p:end]) != crc:
            raise ParseError("CRC mismatch in batch at offset %d" % base_offset)
        attrs = r.i16()
        r.i32()  # last offset delta
        base_ts = r.i64()
        r.i64()  # max ts
        pid = r.i64()
        epoch = r.i16()
        base_seq = r.i32()
        n = r.i32()
        if attrs & 0x7:
            raise ParseError("compressed batch (attributes %d): not handled here" % attrs)
        for _ in range(n):
            r.varint()  # length
            r.i8()
            ts_delta = r.varint()
            off_delta = r.varint()
            kl = r.varint()
            key = None if kl < 0 else r.take(kl)
            vl = r.varint()
            value = None if vl < 0 else r.take(vl)
            hs = []
            for _ in range(r.varint()):
                hkl = r.varint()
                hk = r.take(hkl).decode()
                hvl = r.varint()
                hs.append((hk, None if hvl < 0 else r.take(hvl)))
            out.append({"offset": base_offset + off_delta, "timestamp": base_ts + ts_delta,
                        "key": key, "value": value, "headers": hs, "control": bool(attrs & 0x20),
                        "producer_id": pid, "producer_epoch": epoch,
                        "sequence": base_seq + off_delta if base_seq >= 0 else -1,
                        "partition_leader_epoch": ple})
        pos = end
    return out


# ---------------------------------------------------------------- Produce v8

def produce_body(topic, partition, records_bytes, acks=-1, timeout_ms=10000, transactional_id=None):
    w = W().string(transactional_id).i16(acks).i32(timeout_ms)
    w.array([topic], lambda w, t: (w.string(t).array([partition], lambda w, p: w.i32(p).bytes_(records_bytes))))
    return w.bytes()


def parse_produce_v8(r):
    def part(r):
        p = {"index": r.i32(), "error_code": r.i16(), "base_offset": r.i64(),
             "log_append_time_ms": r.i64(), "log_start_offset": r.i64()}
        p["record_errors"] = r.array(lambda r: (r.i32(), r.string())) or []
        p["error_message"] = r.string()
        return p

    topics = r.array(lambda r: (r.string(), r.array(part)))
    r.i32()
    return {name: {p["index"]: p for p in parts} for name, parts in topics}


def produce(conn, topic, partition, records_bytes, acks=-1, transactional_id=None):
    r = conn.request(PRODUCE, 8, produce_body(topic, partition, records_bytes, acks,
                                              transactional_id=transactional_id))
    return parse_produce_v8(r)[topic][partition]


# ---------------------------------------------------------------- Fetch v4 (by name) / v13 (by id)

def fetch_v4(conn, topic, partition, offset, max_bytes=1 << 20, max_wait_ms=100, isolation=0):
    """isolation 1 = read_committed (up to the LSO, with AbortedTransactions
    as a list of (producer id, first offset))."""
    w = W().i32(-1).i32(max_wait_ms).i32(1).i32(max_bytes).i8(isolation)
    w.array([topic], lambda w, t: w.string(t).array([partition], lambda w, p: w.i32(p).i64(offset).i32(max_bytes)))
    r = conn.request(FETCH, 4, w.bytes())
    r.i32()  # throttle

    def part(r):
        p = {"partition": r.i32(), "error_code": r.i16(), "high_watermark": r.i64(),
             "last_stable_offset": r.i64()}
        p["aborted"] = r.array(lambda r: (r.i64(), r.i64()))
        p["records"] = r.bytes_()
        return p

    topics = r.array(lambda r: (r.string(), r.array(part)))
    return {name: {p["partition"]: p for p in parts} for name, parts in topics}[topic][partition]


def fetch_v13(conn, topic_id, partition, offset, max_bytes=1 << 20, max_wait_ms=100, version=13):
    w = W()
    if version < 15:
        w.i32(-1)  # replica id (a tagged ReplicaState from v15)
    w.i32(max_wait_ms).i32(1).i32(max_bytes).i8(0).i32(0).i32(-1)

    def part(w, p):
        w.i32(p).i32(-1).i64(offset).i32(-1).i64(-1).i32(max_bytes).tags()

    w.carray([topic_id], lambda w, t: (w.uuid(t).carray([partition], part).tags()))
    w.carray([], None)  # forgotten topics
    w.cstring("")  # rack id
    w.tags()
    r = conn.request(FETCH, version, w.bytes(), flexible=True)
    out = {"throttle_time_ms": r.i32(), "error_code": r.i16(), "session_id": r.i32()}

    def part_r(r):
        p = {"partition": r.i32(), "error_code": r.i16(), "high_watermark": r.i64(),
             "last_stable_offset": r.i64(), "log_start_offset": r.i64()}

        def ab(r):
            a = (r.i64(), r.i64())
            r.tags()
            return a

        p["aborted"] = r.carray(ab)
        p["preferred_read_replica"] = r.i32()
        p["records"] = r.cbytes()
        r.tags()
        return p

    def topic_r(r):
        tid = r.uuid()
        parts = r.carray(part_r)
        r.tags()
        return tid, parts

    out["responses"] = r.carray(topic_r) or []
    r.tags()
    return out


# ---------------------------------------------------------------- Metadata v12

def metadata_v12(conn, topics=None, topic_ids=None, allow_auto=False):
    """topics: names; topic_ids: ids (sent with a null name)."""
    items = None
    if topics is not None or topic_ids is not None:
        items = [(None, n) for n in (topics or [])] + [(i, None) for i in (topic_ids or [])]
    w = W()
    w.carray(items, lambda w, it: w.uuid(it[0]).cstring(it[1]).tags())
    w.boolean(allow_auto).boolean(False).tags()
    r = conn.request(METADATA, 12, w.bytes(), flexible=True)
    out = {"throttle_time_ms": r.i32()}

    def broker(r):
        b = {"node_id": r.i32(), "host": r.cstring(), "port": r.i32(), "rack": r.cstring()}
        r.tags()
        return b

    out["brokers"] = r.carray(broker) or []
    out["cluster_id"] = r.cstring()
    out["controller_id"] = r.i32()

    def part(r):
        p = {"error_code": r.i16(), "partition": r.i32(), "leader": r.i32(), "leader_epoch": r.i32()}
        p["replicas"] = r.carray(lambda r: r.i32()) or []
        p["isr"] = r.carray(lambda r: r.i32()) or []
        p["offline"] = r.carray(lambda r: r.i32()) or []
        r.tags()
        return p

    def topic(r):
        t = {"error_code": r.i16(), "name": r.cstring(), "topic_id": r.uuid(), "is_internal": r.boolean()}
        t["partitions"] = r.carray(part) or []
        t["authorized_operations"] = r.i32()
        r.tags()
        return t

    out["topics"] = r.carray(topic) or []
    r.tags()
    return out


# ---------------------------------------------------------------- CreateTopics v4

def create_topics_v4_body(topics, timeout_ms=10000, validate_only=False):
    """topics: list of (name bytes/str, partitions, replication_factor, {config: value})."""
    def topic(w, t):
        name, parts, rf, cfg = t
        w.string(name).i32(parts).i16(rf)
        w.array([], None)
        w.array(sorted(cfg.items()), lambda w, kv: w.string(kv[0]).string(kv[1]))

    return W().array(topics, topic).i32(timeout_ms).boolean(validate_only).bytes()


def create_topics_v4(conn, topics, **kw):
    r = conn.request(CREATE_TOPICS, 4, create_topics_v4_body(topics, **kw))
    r.i32()
    res = r.array(lambda r: (r.string(), r.i16(), r.string()))
    return [{"name": n, "error_code": e, "error_message": m} for n, e, m in res]


def random_uuid():
    return str(uuidlib.UUID(bytes=os.urandom(16)))


# ---------------------------------------------------------------- InitProducerId v0-5

def init_producer_id(conn, version, transactional_id=None, timeout_ms=60000, producer_id=-1, producer_epoch=-1):
    """Returns {error_code, producer_id, producer_epoch, throttle_time_ms}."""
    flexible = version >= 2
    w = W()
    (w.cstring if flexible else w.string)(transactional_id)
    w.i32(timeout_ms)
    if version >= 3:
        w.i64(producer_id).i16(producer_epoch)
    if flexible:
        w.tags()
    r = conn.request(INIT_PRODUCER_ID, version, w.bytes(), flexible=flexible)
    res = {"throttle_time_ms": r.i32(), "error_code": r.i16(), "producer_id": r.i64(), "producer_epoch": r.i16()}
    if flexible:
        r.tags()
    if r.remaining():
        raise ParseError("InitProducerId v%d: %d bytes left over" % (version, r.remaining()))
    return res


# ---------------------------------------------------------------- DescribeProducers v0

DESCRIBE_PRODUCERS = 61


def describe_producers(conn, topic, partitions):
    """{partition: {"error_code", "producers": [dict per producer]}}."""
    w = W()
    w.carray([topic], lambda w, t: (w.cstring(t).carray(partitions, lambda w, p: w.i32(p)).tags()))
    w.tags()
    r = conn.request(DESCRIBE_PRODUCERS, 0, w.bytes(), flexible=True)
    r.i32()  # throttle

    def producer(r):
        p = {"producer_id": r.i64(), "producer_epoch": r.i32(), "last_sequence": r.i32(),
             "last_timestamp": r.i64(), "coordinator_epoch": r.i32(), "current_txn_start_offset": r.i64()}
        r.tags()
        return p

    def part(r):
        p = {"partition": r.i32(), "error_code": r.i16(), "error_message": r.cstring()}
        p["producers"] = r.carray(producer)
        r.tags()
        return p

    def topic_(r):
        name = r.cstring()
        parts = r.carray(part)
        r.tags()
        return name, parts

    topics = r.carray(topic_)
    r.tags()
    return {p["partition"]: p for _n, parts in topics for p in parts}


# ---------------------------------------------------------------- transactions: AddPartitionsToTxn v0-3, EndTxn v0-3

ADD_PARTITIONS_TO_TXN = 24
END_TXN = 26


def add_partitions_to_txn(conn, version, transactional_id, producer_id, producer_epoch, topics):
    """topics: {name: [partitions]} (v0-3, the client's form). Returns
    {(topic, partition): error_code}."""
    flexible = version >= 3
    w = W()
    string = w.cstring if flexible else w.string
    arr = w.carray if flexible else w.array
    string(transactional_id)
    w.i64(producer_id).i16(producer_epoch)

    def topic(w, t):
        (w.cstring if flexible else w.string)(t[0])
        (w.carray if flexible else w.array)(t[1], lambda w, p: w.i32(p))
        if flexible:
            w.tags()

    arr(sorted(topics.items()), topic)
    if flexible:
        w.tags()
    r = conn.request(ADD_PARTITIONS_TO_TXN, version, w.bytes(), flexible=flexible)
    r.i32()  # throttle
    rarr = r.carray if flexible else r.array

    def part_r(r):
        p = (r.i32(), r.i16())
        if flexible:
            r.tags()
        return p

    def topic_r(r):
        name = r.cstring() if flexible else r.string()
        parts = (r.carray if flexible else r.array)(part_r)
        if flexible:
            r.tags()
        return name, parts

    res = rarr(topic_r)
    if flexible:
        r.tags()
    if r.remaining():
        raise ParseError("AddPartitionsToTxn v%d: %d bytes left over" % (version, r.remaining()))
    return {(n, p): e for n, parts in res for p, e in parts}


def end_txn(conn, version, transactional_id, producer_id, producer_epoch, commit):
    """Returns the error code."""
    flexible = version >= 3
    w = W()
    (w.cstring if flexible else w.string)(transactional_id)
    w.i64(producer_id).i16(producer_epoch).boolean(commit)
    if flexible:
        w.tags()
    r = conn.request(END_TXN, version, w.bytes(), flexible=flexible)
    r.i32()  # throttle
    err = r.i16()
    if flexible:
        r.tags()
    if r.remaining():
        raise ParseError("EndTxn v%d: %d bytes left over" % (version, r.remaining()))
    return err


# ---------------------------------------------------------------- DescribeTransactions v0, ListTransactions v0-1

DESCRIBE_TRANSACTIONS = 65
LIST_TRANSACTIONS = 66


def describe_transactions(conn, ids):
    """A list of dicts (error_code, transactional_id, state, timeout_ms,
    start_time_ms, producer_id, producer_epoch, topics {name: [partitions]}),
    in the answer's order."""
    w = W().carray(ids, lambda w, i: w.cstring(i)).tags()
    r = conn.request(DESCRIBE_TRANSACTIONS, 0, w.bytes(), flexible=True)
    r.i32()  # throttle

    def topic(r):
        t = (r.cstring(), r.carray(lambda r: r.i32()))
        r.tags()
        return t

    def state(r):
        s = {"error_code": r.i16(), "transactional_id": r.cstring(), "state": r.cstring(),
             "timeout_ms": r.i32(), "start_time_ms": r.i64(), "producer_id": r.i64(), "producer_epoch": r.i16()}
        s["topics"] = dict(r.carray(topic) or [])
        r.tags()
        return s

    res = r.carray(state)
    r.tags()
    if r.remaining():
        raise ParseError("DescribeTransactions: %d bytes left over" % r.remaining())
    return res


def list_transactions(conn, version=1, states=(), producer_ids=(), duration_ms=-1):
    """Returns {error_code, unknown_state_filters, transactions: [(id, producer_id, state)]}."""
    w = W().carray(list(states), lambda w, s: w.cstring(s)).carray(list(producer_ids), lambda w, p: w.i64(p))
    if version >= 1:
        w.i64(duration_ms)
    w.tags()
    r = conn.request(LIST_TRANSACTIONS, version, w.bytes(), flexible=True)
    r.i32()  # throttle
    out = {"error_code": r.i16(), "unknown_state_filters": r.carray(lambda r: r.cstring())}

    def state(r):
        s = (r.cstring(), r.i64(), r.cstring())
        r.tags()
        return s

    out["transactions"] = r.carray(state)
    r.tags()
    if r.remaining():
        raise ParseError("ListTransactions v%d: %d bytes left over" % (version, r.remaining()))
    return out


# ---------------------------------------------------------------- ListOffsets v2 (isolation level)

def list_offsets_v2(conn, topic, partition, timestamp=-1, isolation=0):
    """Returns {error_code, timestamp, offset}."""
    w = W().i32(-1).i8(isolation)
    w.array([topic], lambda w, t: w.string(t).array([partition], lambda w, p: w.i32(p).i64(timestamp)))
    r = conn.request(LIST_OFFSETS, 2, w.bytes())
    r.i32()  # throttle

    def part(r):
        return {"partition": r.i32(), "error_code": r.i16(), "timestamp": r.i64(), "offset": r.i64()}

    topics = r.array(lambda r: (r.string(), r.array(part)))
    return {name: {p["partition"]: p for p in parts} for name, parts in topics}[topic][partition]


OFFSET_FOR_LEADER_EPOCH = 23


def offset_for_leader_epoch_v3(conn, topics, replica_id=-1):
    """topics: {name: [(partition, current_leader_epoch, leader_epoch), ...]}.
    Returns {(name, partition): (error_code, leader_epoch, end_offset)}."""
    w = W().i32(replica_id)
    w.array(list(topics.items()), lambda w, t: w.string(t[0]).array(
        t[1], lambda w, p: w.i32(p[0]).i32(p[1]).i32(p[2])))
    r = conn.request(OFFSET_FOR_LEADER_EPOCH, 3, w.bytes())
    r.i32()  # throttle
    out = {}
    for name, parts in r.array(lambda r: (r.string(), r.array(lambda r: (r.i16(), r.i32(), r.i32(), r.i64())))):
        for err, part, epoch, end in parts:
            out[(name, part)] = (err, epoch, end)
    return out


DESCRIBE_LOG_DIRS = 35


def describe_log_dirs_v1(conn, topics=None):
    """topics: {name: [partition, ...]} or None for all. Returns the
    results: [(error_code, log_dir, {(topic, partition): (size, lag, future)})]."""
    w = W()
    if topics is None:
        w.i32(-1)
    else:
        w.array(list(topics.items()), lambda w, t: w.string(t[0]).array(t[1], lambda w, p: w.i32(p)))
    r = conn.request(DESCRIBE_LOG_DIRS, 1, w.bytes())
    r.i32()  # throttle

    def result(r):
        err, d = r.i16(), r.string()
        parts = {}
        for name, ps in r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i64(), r.i64(), r.boolean())))):
            for p, size, lag, fut in ps:
                parts[(name, p)] = (size, lag, fut)
        return (err, d, parts)

    return r.array(result) or []


def list_offsets_v2_many(conn, topics, timestamp=-1, isolation=0):
    """topics: {name: [partition, ...]}, all in one request. Returns
    {(name, partition): {error_code, timestamp, offset}}."""
    w = W().i32(-1).i8(isolation)
    w.array(sorted(topics.items()),
            lambda w, t: w.string(t[0]).array(list(t[1]), lambda w, p: w.i32(p).i64(timestamp)))
    r = conn.request(LIST_OFFSETS, 2, w.bytes())
    r.i32()  # throttle

    def part(r):
        return {"partition": r.i32(), "error_code": r.i16(), "timestamp": r.i64(), "offset": r.i64()}

    out = {}
    for name, parts in r.array(lambda r: (r.string(), r.array(part))):
        for p in parts:
            out[(name, p["partition"])] = p
    return out


# ---------------------------------------------------------------- WriteTxnMarkers v0-1

WRITE_TXN_MARKERS = 27


def write_txn_markers(conn, markers, version=1, timeout=None):
    """markers: list of dicts producer_id, producer_epoch, commit (bool),
    coordinator_epoch, topics {name: [partitions]}. Returns
    {producer_id: {(topic, partition): error_code}} (a list of those when a
    producer id appears twice)."""
    flexible = version >= 1
    w = W()
    arr = w.carray if flexible else w.array
    string = W.cstring if flexible else W.string

    def topic(w, t):
        string(w, t[0])
        (w.carray if flexible else w.array)(t[1], lambda w, p: w.i32(p))
        if flexible:
            w.tags()

    def marker(w, m):
        w.i64(m["producer_id"]).i16(m["producer_epoch"]).boolean(m["commit"])
        (w.carray if flexible else w.array)(sorted(m["topics"].items()), topic)
        w.i32(m["coordinator_epoch"])
        if flexible:
            w.tags()

    arr(markers, marker)
    if flexible:
        w.tags()
    r = conn.request(WRITE_TXN_MARKERS, version, w.bytes(), flexible=flexible, timeout=timeout)
    rarr = r.carray if flexible else r.array
    rstring = r.cstring if flexible else r.string

    def part_r(r):
        p = (r.i32(), r.i16())
        if flexible:
            r.tags()
        return p

    def topic_r(r):
        name = rstring()
        parts = (r.carray if flexible else r.array)(part_r)
        if flexible:
            r.tags()
        return name, parts

    def marker_r(r):
        pid = r.i64()
        topics = (r.carray if flexible else r.array)(topic_r)
        if flexible:
            r.tags()
        return pid, {(n, p): e for n, parts in topics for p, e in parts}

    res = rarr(marker_r)
    if flexible:
        r.tags()
    if r.remaining():
        raise ParseError("WriteTxnMarkers v%d: %d bytes left over" % (version, r.remaining()))
    return res
