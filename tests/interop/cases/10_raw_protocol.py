"""Raw protocol errors, framed by hand (kwire): UNSUPPORTED_VERSION,
INVALID_REQUEST, CORRUPT_MESSAGE, INVALID_RECORD, UNKNOWN_TOPIC_ID,
UNKNOWN_TOPIC_OR_PARTITION, and the exact answer of a good batch."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Server, Suite, check, eq, bound, ck_create_topic, raw_read_all, compare_records  # noqa: E402
import kwire  # noqa: E402

S = Suite("raw_protocol")
srv = None
TOPIC = "raw-t"
TS0 = 1700000000000


def setup():
    global srv
    srv = Server()
    ck_create_topic(srv.bootstrap, TOPIC, partitions=2)


def conn():
    return kwire.Conn(srv.port, timeout=bound(10))


def produce_good(c, n, base_ts):
    recs = [(b"k%d" % i, b"v%d" % i, [("h", b"x%d" % i)], base_ts + i) for i in range(n)]
    return kwire.produce(c, TOPIC, 0, kwire.build_batch(recs, base_timestamp=base_ts))


@S.case
def api_versions_v99_unsupported_version():
    c = conn()
    try:
        # A future client sends request header v2 for ApiVersions v3+.
        corr = c.send(kwire.API_VERSIONS, 99, kwire.api_versions_body(3), header_version=2)
        r = c.recv(corr, 0)
        res = kwire.parse_api_versions(r, 0)
        eq(res["error_code"], 35, "ApiVersions v99 error_code (UNSUPPORTED_VERSION)")
        check(18 in res["api_keys"], "the v0 fallback lists ApiVersions: %s" % res["api_keys"])
        lo, hi = res["api_keys"][18]
        eq(lo, 0, "ApiVersions min version")
        check(3 <= hi < 99, "ApiVersions max version %d" % hi)
        for key in (0, 1, 3):
            check(key in res["api_keys"], "v0 fallback lists API %d" % key)
        eq(res["trailing"], 0, "bytes after the v0 body (the answer must be v0-format)")
        # The connection stays usable: a v3 request now works.
        res3 = kwire.api_versions(c, 3)
        eq(res3["error_code"], 0, "ApiVersions v3 after the fallback")
        eq(res3["api_keys"], res["api_keys"], "the v3 list equals the v0 fallback list")
    finally:
        c.close()


@S.case
def other_api_unsupported_version_closes():
    for key, ver in ((kwire.METADATA, 99), (kwire.PRODUCE, 99), (kwire.FETCH, 9999 % 32768)):
        mark = srv.log_size()
        c = conn()
        try:
            c.send(key, ver, b"\x00" * 16)
            got = c.expect_closed(bound(5))
            eq(got, b"", "bytes sent back for API %d v%d before closing" % (key, ver))
        finally:
            c.close()
        srv.wait_log(r"unsupported version|version %d" % ver, mark)
    # The server still serves.
    c = conn()
    try:
        eq(kwire.api_versions(c, 0)["error_code"], 0, "ApiVersions after the closes")
    finally:
        c.close()


@S.case
def api_versions_v3_invalid_software_name():
    for name, ver in (("bad name!", "1.0"), ("-leading-dash", "1.0"), ("ok-name", "1.0 beta"), ("", "1.0")):
        c = conn()
        try:
            corr = c.send(kwire.API_VERSIONS, 3, kwire.api_versions_body(3, name, ver), header_version=2)
            res = kwire.parse_api_versions(c.recv(corr, 0), 3)
            eq(res["error_code"], 42, "ApiVersions v3 client_software %r/%r error (INVALID_REQUEST)" % (name, ver))
        finally:
            c.close()
    c = conn()
    try:
        corr = c.send(kwire.API_VERSIONS, 3, kwire.api_versions_body(3, "valid.name-1", "2.0.1-x"), header_version=2)
        eq(kwire.parse_api_versions(c.recv(corr, 0), 3)["error_code"], 0, "valid software name")
    finally:
        c.close()


@S.case
def produce_good_batch_exact():
    c = conn()
    try:
        before, hw0 = raw_read_all(srv.bootstrap, TOPIC, 0)
        p = produce_good(c, 3, TS0)
        eq(p["error_code"], 0, "produce error")
        eq(p["base_offset"], hw0, "base offset of the new batch")
        eq(p["log_append_time_ms"], -1, "log_append_time_ms for a CreateTime topic")
        after, hw1 = raw_read_all(srv.bootstrap, TOPIC, 0)
        eq(hw1, hw0 + 3, "high watermark")
        want = before + [{"offset": hw0 + i, "timestamp": TS0 + i, "key": b"k%d" % i, "value": b"v%d" % i,
                          "headers": [("h", b"x%d" % i)]} for i in range(3)]
        for w in want:
            w.setdefault("partition", 0)
        got = [dict(r, partition=0) for r in after]
        compare_records(got, want, "records read back")
    finally:
        c.close()


def _refused(batch, code, what):
    c = conn()
    try:
        if not raw_read_all(srv.bootstrap, TOPIC, 0)[0]:
            eq(produce_good(c, 2, TS0 + 100)["error_code"], 0, "seed produce")
        before, hw0 = raw_read_all(srv.bootstrap, TOPIC, 0)
        p = kwire.produce(c, TOPIC, 0, batch)
        eq(p["error_code"], code, "%s: produce error_code" % what)
        eq(p["base_offset"], -1, "%s: base_offset" % what)
        # The connection stays usable and nothing was appended.
        after, hw1 = raw_read_all(srv.bootstrap, TOPIC, 0)
        eq(hw1, hw0, "%s: high watermark after the refused batch" % what)
        eq(after, before, "%s: stored records after the refused batch" % what)
        eq(produce_good(c, 1, TS0 + 200)["base_offset"], hw0, "%s: next good batch's offset" % what)
        return p
    finally:
        c.close()


@S.case
def corrupt_message_bad_crc():
    recs = [(b"a", b"value-a", [], TS0), (b"b", b"value-b", [], TS0 + 1)]
    good = kwire.build_batch(recs, base_timestamp=TS0)
    # flip one byte of the last record's value: the stored CRC no longer matches
    bad = bytearray(good)
    bad[-3] ^= 0x01
    _refused(bytes(bad), 2, "value byte flipped")
    # a wrong CRC field over intact data
    _refused(kwire.build_batch(recs, base_timestamp=TS0, crc_fix=lambda c: c ^ 0x80000000), 2, "CRC field flipped")


@S.case
def invalid_record_count_mismatch():
    recs = [(b"a", b"1", [], TS0), (b"b", b"2", [], TS0)]
    _refused(kwire.build_batch(recs, base_timestamp=TS0, count=3), 87, "count 3 for 2 records")
    _refused(kwire.build_batch(recs, base_timestamp=TS0, count=1), 87, "count 1 for 2 records")


@S.case
def unknown_topic_or_partition_produce():
    c = conn()
    try:
        batch = kwire.build_batch([(None, b"x", [])])
        eq(kwire.produce(c, TOPIC, 7, batch)["error_code"], 3, "produce to partition 7 of a 2-partition topic")
        eq(kwire.produce(c, "no-such-topic", 0, batch)["error_code"], 3, "produce to a missing topic")
        eq(kwire.produce(c, TOPIC, -1, batch)["error_code"], 3, "produce to partition -1")
    finally:
        c.close()


@S.case
def unknown_topic_id_metadata_and_fetch():
    c = conn()
    try:
        md = kwire.metadata_v12(c, [TOPIC])
        t = md["topics"][0]
        eq(t["error_code"], 0, "Metadata v12 by name")
        real_id = t["topic_id"]
        check(real_id != "00000000-0000-0000-0000-000000000000", "the topic has an id")
        # by id: the real one resolves to the name
        md = kwire.metadata_v12(c, topic_ids=[real_id])
        eq([(x["error_code"], x["name"], x["topic_id"]) for x in md["topics"]], [(0, TOPIC, real_id)],
           "Metadata v12 by the real topic id")
        rid = kwire.random_uuid()
        md = kwire.metadata_v12(c, topic_ids=[rid])
        eq([(x["error_code"], x["topic_id"]) for x in md["topics"]], [(100, rid)],
           "Metadata v12 by a random topic id (UNKNOWN_TOPIC_ID)")
        for ver in (13, 17):
            f = kwire.fetch_v13(c, rid, 0, 0, version=ver)
            eq(f["error_code"], 0, "Fetch v%d top-level error" % ver)
            eq(len(f["responses"]), 1, "Fetch v%d topics in the answer" % ver)
            tid, parts = f["responses"][0]
            eq(tid, rid, "Fetch v%d echoes the topic id" % ver)
            eq([(p["partition"], p["error_code"]) for p in parts], [(0, 100)],
               "Fetch v%d partition error for a random topic id (UNKNOWN_TOPIC_ID)" % ver)
        # positive control: the real id fetches
        f = kwire.fetch_v13(c, real_id, 0, 0)
        tid, parts = f["responses"][0]
        eq((tid, parts[0]["error_code"]), (real_id, 0), "Fetch v13 by the real topic id")
    finally:
        c.close()


if __name__ == "__main__":
    S.run(setup)
