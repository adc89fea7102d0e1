"""The clean-shutdown marker is one file per log dir, as Kafka's
LogManager writes it (issue 12: restart of many partitions):

- a clean shutdown (SIGTERM) leaves `.kafka_cleanshutdown` in the log
  dir, written after every log closed, carrying the broker epoch
  (KIP-966), and none in the partition directories;
- the next start opens every log on it (the log manager's line counts
  them), removes it before serving, and registers the broker with that
  previous epoch;
- after kill -9 there is no marker: every log is checked from its
  recovery point, none on a marker, and the records produced before
  read back exactly; the broker registers with previous epoch -1;
- the metadata log, closed after the log dirs' markers are written,
  vouches for itself with a marker in its own directory: a clean restart
  does not recover it, a start after kill -9 does;
- a marker samsa wrote before this change (the broker epoch alone,
  written before the logs closed) gives the epoch but vouches for no log.
"""
# limit: 180
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Server, Suite, check, eq, bound, ck_create_topic, ck_produce, rec, raw_read_all  # noqa: E402

S = Suite("clean_marker", case_limit=90)
srv = None
TOPIC = "cm"
PARTS = 6
MARKER = ".kafka_cleanshutdown"
METADATA_LOG = "__cluster_metadata-0"
METADATA_RECOVERED = r"log: \S*/" + METADATA_LOG + r": recovered after an unclean shutdown"
produced = {}  # partition -> [(key, value)]


def setup():
    global srv
    srv = Server()
    ck_create_topic(srv.bootstrap, TOPIC, PARTS)


def marker_path():
    return os.path.join(srv.data, MARKER)


def partition_markers():
    return sorted(d for d in os.listdir(srv.data)
                  if d != METADATA_LOG and os.path.isdir(os.path.join(srv.data, d))
                  and os.path.exists(os.path.join(srv.data, d, MARKER)))


def metadata_marker():
    return os.path.exists(os.path.join(srv.data, METADATA_LOG, MARKER))


def metadata_recovered(since):
    return re.search(METADATA_RECOVERED, srv.log_text(since)) is not None


def registered_epoch(since):
    line = srv.wait_log(r"broker 1: registered \(epoch \d+\)", since, limit=20)
    return int(re.search(r"registered \(epoch (\d+)\)", line).group(1))


def previous_epoch_sent(since):
    line = srv.wait_log(r"registering broker 1 \(epoch \d+, previous epoch -?\d+\)", since, limit=20)
    return int(re.search(r"previous epoch (-?\d+)", line).group(1))


def open_counts(since):
    """(logs, on the marker, checked from recovery points, failed),
    summed over the log manager's lines for the start-up opens."""
    srv.wait_log(r"log manager: \d+ log\(s\) opened", since, limit=30)
    total = [0, 0, 0, 0]
    rx = re.compile(r"(\d+) log\(s\) opened in \d+ ms: (\d+) on their log dir's clean-shutdown marker, "
                    r"(\d+) checked from their recovery points, (\d+) failed")
    for line in srv.log_text(since).splitlines():
        m = rx.search(line)
        if m:
            total = [a + int(b) for a, b in zip(total, m.groups())]
    return tuple(total)


def produce_some(tag, n=5):
    for p in range(PARTS):
        recs = [(b"k%d" % i, b"%s-%d-%d" % (tag.encode(), p, i)) for i in range(n)]
        res = ck_produce(srv.bootstrap, TOPIC, [rec(k, v, [], p) for k, v in recs])
        base = len(produced.get(p, []))
        eq([r["offset"] for r in res], list(range(base, base + n)), "offsets of %s in partition %d" % (tag, p))
        produced.setdefault(p, []).extend(recs)


def read_back(what):
    deadline = time.monotonic() + bound(20)
    for p in range(PARTS):
        while True:
            try:
                got, _ = raw_read_all(srv.bootstrap, TOPIC, p)
                break
            except Exception:  # noqa: BLE001  (not serving yet after the restart)
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        eq([(r["key"], r["value"]) for r in got], produced[p], "%s: records of partition %d" % (what, p))
        eq([r["offset"] for r in got], list(range(len(produced[p]))), "%s: offsets of partition %d" % (what, p))


@S.case
def clean_restart_uses_the_dir_marker():
    produce_some("first")
    since = srv.log_size()
    epoch = registered_epoch(0)
    srv.stop()
    # one marker, in the log dir, with the epoch; none per partition
    with open(marker_path()) as f:
        content = json.load(f)
    eq(content, {"version": 0, "brokerEpoch": epoch, "logsClosed": True}, "the log dir's marker")
    eq(partition_markers(), [], "partition directories with a marker of their own")
    check(metadata_marker(), "no marker in %s after a clean shutdown", METADATA_LOG)
    since = srv.log_size()
    srv.start()
    check(not os.path.exists(marker_path()), "the marker is still there after the start")
    check(not metadata_marker(), "the metadata log's marker is still there after the start")
    eq(previous_epoch_sent(since), epoch, "BrokerRegistration's previous broker epoch")
    read_back("after a clean restart")
    logs, clean, checked, failed = open_counts(since)
    eq((clean, checked, failed), (logs, 0, 0), "opens after a clean shutdown (logs, on the marker, checked, failed)")
    check(logs >= PARTS, "only %d logs opened", logs)
    check(not metadata_recovered(since), "the metadata log was recovered after a clean shutdown")
    lines = len(re.findall(r"log manager: \d+ log\(s\) opened", srv.log_text(since)))
    eq(lines, 1, "the log manager's lines for the start-up opens")
    produce_some("second")
    read_back("after appending")


@S.case
def kill9_recovers_every_log():
    since = srv.log_size()
    srv.kill9()
    check(not os.path.exists(marker_path()), "a marker after kill -9")
    srv.start()
    eq(previous_epoch_sent(since), -1, "previous broker epoch after kill -9")
    read_back("after kill -9")
    logs, clean, checked, failed = open_counts(since)
    eq((clean, failed), (0, 0), "opens after kill -9 (on the marker, failed)")
    check(checked >= PARTS, "only %d logs checked from their recovery points", checked)
    check(metadata_recovered(since), "the metadata log was not recovered after kill -9")
    produce_some("third")
    # the recovered dir gets its marker again at the next clean shutdown
    epoch = registered_epoch(since)
    srv.stop()
    with open(marker_path()) as f:
        eq(json.load(f)["brokerEpoch"], epoch, "the marker's epoch after recovery and a clean shutdown")
    since = srv.log_size()
    srv.start()
    read_back("after recovery and a clean restart")
    logs, clean, checked, failed = open_counts(since)
    eq((clean, checked, failed), (logs, 0, 0), "opens after the next clean shutdown")
    check(logs >= PARTS, "only %d logs opened", logs)


@S.case
def old_marker_gives_the_epoch_only():
    since = srv.log_size()
    srv.kill9()
    # what samsa wrote before: the broker epoch alone, before the logs closed
    with open(marker_path(), "w") as f:
        f.write('{"version":0,"brokerEpoch":77}')
    srv.start()
    eq(previous_epoch_sent(since), 77, "previous broker epoch from the old marker")
    check(not os.path.exists(marker_path()), "the old marker is still there after the start")
    read_back("after an old marker")
    logs, clean, checked, failed = open_counts(since)
    eq((clean, failed), (0, 0), "opens on an old marker (on the marker, failed)")
    check(checked >= PARTS, "only %d logs checked", checked)


if __name__ == "__main__":
    S.run(setup)
