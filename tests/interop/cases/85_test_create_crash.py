"""Partition creation is crash safe (issue 12): the logs of one metadata
image are created together, without an fsync each, and made durable as a
group before CreateTopics is answered. So:

- kill -9 right after CreateTopics answered: after the restart every
  acknowledged partition is there and serving, and a produce to each
  lands at offset 0 and reads back exactly;
- kill -9 while a large CreateTopics is being applied: whatever the
  metadata committed comes back whole (every partition serving at offset
  0), whatever it did not is absent, nothing is offline;
- what a crash before the group sync may leave on disk (an empty
  partition.metadata, a partition directory without segment files, a
  segment without its indexes, a missing partition directory) is created
  again at the next start: those partitions serve from offset 0 and the
  log dir stays online."""
# limit: 240
import base64
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Server, Suite, check, eq, bound, log  # noqa: E402
import kwire  # noqa: E402

S = Suite("create_crash", case_limit=120)
PARTS = 50
srv = None
# topic -> partitions, every topic whose CreateTopics was answered 0
acked = {}


def all_serving(topics, limit=60.0):
    """Every partition of topics has leader 1 and answers ListOffsets
    (earliest and latest) 0: its log is open and empty."""
    deadline = time.monotonic() + bound(limit)
    last = None
    while time.monotonic() < deadline:
        c = kwire.Conn(srv.port)
        try:
            md = kwire.metadata_v12(c, topics=sorted(topics))
            bad = [(t["name"], t["error_code"]) for t in md["topics"] if t["error_code"] != 0]
            bad += [(t["name"], p["partition"], p["error_code"], p["leader"]) for t in md["topics"]
                    for p in t["partitions"] if p["error_code"] != 0 or p["leader"] != 1]
            counts = {t["name"]: len(t["partitions"]) for t in md["topics"] if t["error_code"] == 0}
            if not bad and counts == topics:
                errs = []
                for t, n in sorted(topics.items()):
                    for p in range(n):
                        for ts in (-2, -1):
                            r = kwire.list_offsets_v2(c, t, p, timestamp=ts)
                            if r["error_code"] != 0 or r["offset"] != 0:
                                errs.append((t, p, ts, r["error_code"], r["offset"]))
                if not errs:
                    return
                last = "ListOffsets: %s" % errs[:5]
            else:
                last = "bad: %s, partitions %s" % (bad[:5], {k: v for k, v in counts.items() if topics.get(k) != v})
        except (OSError, kwire.Closed) as e:
            last = repr(e)
        finally:
            c.close()
        time.sleep(0.3)
    raise AssertionError("not every acknowledged partition serves within %.0fs: %s" % (bound(limit), last))


def produce_each(topics, tag):
    """One batch of two records to every partition: each lands at offset 0
    and reads back exactly."""
    c = kwire.Conn(srv.port)
    try:
        for t, n in sorted(topics.items()):
            for p in range(n):
                recs = [(b"k%d" % i, ("%s-%s-%d-%d" % (tag, t, p, i)).encode()) for i in range(2)]
                b = kwire.build_batch([(k, v, []) for k, v in recs], base_timestamp=1720000000000)
                r = kwire.produce(c, t, p, b)
                eq(r["error_code"], 0, "produce error of %s-%d" % (t, p))
                eq(r["base_offset"], 0, "base offset of %s-%d" % (t, p))
                f = kwire.fetch_v4(c, t, p, 0)
                eq(f["error_code"], 0, "fetch error of %s-%d" % (t, p))
                got = [(x["offset"], x["key"], x["value"]) for x in kwire.parse_batches(f["records"])]
                eq(got, [(i, k, v) for i, (k, v) in enumerate(recs)], "records of %s-%d" % (t, p))
    finally:
        c.close()


def no_offline():
    text = srv.log_text()
    check("is offline" not in text, "a log dir or partition went offline:\n%s",
          "\n".join(l for l in text.splitlines() if "offline" in l)[:2000])


def metadata_topics(prefix):
    c = kwire.Conn(srv.port)
    try:
        md = kwire.metadata_v12(c, topics=None)
    finally:
        c.close()
    return {t["name"]: len(t["partitions"]) for t in md["topics"]
            if t["name"].startswith(prefix) and t["error_code"] == 0}


def setup():
    global srv
    srv = Server()


@S.case(limit=150)
def kill9_right_after_create_topics_answered():
    for rnd in range(3):
        names = ["acked-%d-%d" % (rnd, i) for i in range(4)]
        c = kwire.Conn(srv.port, timeout=bound(60))
        try:
            res = kwire.create_topics_v4(c, [(n, PARTS, 1, {}) for n in names], timeout_ms=60000)
        finally:
            c.close()
        eq([r["error_code"] for r in res], [0] * len(names), "CreateTopics errors (%s)" % res)
        srv.kill9()  # at once: the answer said the partitions exist
        for n in names:
            acked[n] = PARTS
        srv.start()
        all_serving({n: PARTS for n in names})
    all_serving(acked)
    produce_each(acked, "a")
    no_offline()


@S.case(limit=150)
def kill9_while_creating():
    """CreateTopics of 20 x 50 partitions; kill -9 while the node is
    creating their logs. The restarted node has, for every one of those
    topics, either all of it serving at offset 0 or nothing."""
    names = ["mid-%02d" % i for i in range(20)]
    c = kwire.Conn(srv.port, timeout=bound(60))
    try:
        c.send(kwire.CREATE_TOPICS, 4, kwire.create_topics_v4_body([(n, PARTS, 1, {}) for n in names],
                                                                   timeout_ms=60000))
        # the metadata commit is quick, the 1 000 logs take longer: kill
        # once 150 partition directories exist
        deadline = time.monotonic() + bound(20)
        while time.monotonic() < deadline and len([d for d in os.listdir(srv.data) if d.startswith("mid-")]) < 150:
            time.sleep(0.001)
        made = len([d for d in os.listdir(srv.data) if d.startswith("mid-")])
        srv.kill9()
    finally:
        c.close()
    log("killed with %d of %d partition directories made", made, len(names) * PARTS)
    srv.start()
    have = metadata_topics("mid-")
    log("after the restart the metadata has %d of the %d topics", len(have), len(names))
    eq(set(have.values()) <= {PARTS}, True, "partition counts %s" % have)
    all_serving(have)
    produce_each(have, "b")
    no_offline()


@S.case(limit=150)
def leftovers_of_a_crash_before_the_sync_are_created_again():
    names = ["left-%d" % i for i in range(2)]
    c = kwire.Conn(srv.port, timeout=bound(60))
    try:
        res = kwire.create_topics_v4(c, [(n, 8, 1, {}) for n in names], timeout_ms=60000)
    finally:
        c.close()
    eq([r["error_code"] for r in res], [0, 0], "CreateTopics errors (%s)" % res)
    srv.kill9()
    d = srv.data
    seg = "00000000000000000000"
    # an empty partition.metadata (created, never written)
    open(os.path.join(d, "left-0-0", "partition.metadata"), "w").close()
    # no segment files at all
    for ext in (".log", ".index", ".timeindex"):
        os.unlink(os.path.join(d, "left-0-1", seg + ext))
    # a segment without its indexes
    for ext in (".index", ".timeindex"):
        os.unlink(os.path.join(d, "left-0-2", seg + ext))
    # empty partition.metadata and no segment
    open(os.path.join(d, "left-0-3", "partition.metadata"), "w").close()
    os.unlink(os.path.join(d, "left-0-3", seg + ".log"))
    # the whole directory missing
    for name in os.listdir(os.path.join(d, "left-1-0")):
        os.unlink(os.path.join(d, "left-1-0", name))
    os.rmdir(os.path.join(d, "left-1-0"))
    # an empty directory
    for name in os.listdir(os.path.join(d, "left-1-1")):
        os.unlink(os.path.join(d, "left-1-1", name))
    srv.start()
    topics = {n: 8 for n in names}
    all_serving(topics)
    produce_each(topics, "c")
    # the rewritten partition.metadata carries the topic's id
    c = kwire.Conn(srv.port)
    try:
        md = kwire.metadata_v12(c, topics=["left-0"])
    finally:
        c.close()
    tid = md["topics"][0]["topic_id"]
    with open(os.path.join(d, "left-0-0", "partition.metadata")) as f:
        text = f.read()
    want = base64.urlsafe_b64encode(uuid.UUID(tid).bytes).rstrip(b"=").decode()
    eq(text, "version: 0\ntopic_id: %s\n" % want, "the rewritten partition.metadata")
    no_offline()
    # and everything acknowledged before still serves, with its records
    srv.stop(limit=60)
    srv.start()
    c = kwire.Conn(srv.port)
    try:
        for t, n in sorted(topics.items()):
            for p in range(n):
                r = kwire.list_offsets_v2(c, t, p)
                eq((r["error_code"], r["offset"]), (0, 2), "latest offset of %s-%d" % (t, p))
    finally:
        c.close()
    no_offline()
    srv.stop(limit=60)


if __name__ == "__main__":
    S.run(setup)
