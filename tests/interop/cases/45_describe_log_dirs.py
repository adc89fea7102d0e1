"""DescribeLogDirs (kafka-log-dirs.sh, admin clients' describeLogDirs) on a
node with two log dirs, through @platformatic/kafka's DescribeLogDirs v4
(flexible, with the volume's total and usable bytes) and raw v1: each dir by its
absolute path, every hosted partition in exactly one of them with its
size as on disk and no lag; a topic filter keeps only the asked-for
partitions, and, as Kafka, still names every topic a dir holds.
samsactl log-dirs describe prints the same (its --json as
kafka-log-dirs.sh --describe)."""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness as h  # noqa: E402
import kwire  # noqa: E402

S = h.Suite("describe_log_dirs")
srv = None
DIRS = []


def setup():
    global srv
    DIRS.extend(os.path.join(h.WORK, "logdirs", "d%d" % i) for i in (1, 2))
    srv = h.Server({"log.dirs": ",".join(DIRS)})
    h.ck_create_topic(srv.bootstrap, "ld", 4)
    h.ck_create_topic(srv.bootstrap, "ld2", 1)
    h.ck_produce(srv.bootstrap, "ld", [h.rec(b"k%d" % i, b"v" * 100, [], 0) for i in range(10)])


def describe(topics):
    args = [None if topics is None else [{"name": n, "partitions": ps} for n, ps in topics.items()]]
    r = h.platformatic_raw(srv.bootstrap, "describeLogDirsV4", args, client_id="logdirs")
    h.eq(r["errorCode"], 0, "top-level error code")
    return r["results"]


def on_disk(dir_, topic, partition):
    return sum(os.path.getsize(f) for f in glob.glob(os.path.join(dir_, "%s-%d" % (topic, partition), "*.log")))


@S.case
def every_partition_in_one_dir_with_its_size():
    res = describe(None)
    h.eq(sorted(r["logDir"] for r in res), sorted(os.path.realpath(d) for d in DIRS), "log dirs")
    seen = {}
    for r in res:
        h.eq(r["errorCode"], 0, "%s: error code" % r["logDir"])
        total, usable = int(r["totalBytes"]), int(r["usableBytes"])
        h.check(0 < usable <= total, "%s: usable %d of total %d bytes", r["logDir"], usable, total)
        for t in r["topics"]:
            for p in t["partitions"]:
                key = (t["name"], p["partitionIndex"])
                h.check(key not in seen, "%s-%d in two dirs", *key)
                seen[key] = (r["logDir"], int(p["partitionSize"]))
                h.eq((int(p["offsetLag"]), p["isFutureKey"]), (0, False), "%s-%d: lag and future" % key)
    h.eq(sorted(seen), [("ld", i) for i in range(4)] + [("ld2", 0)], "hosted partitions")
    h.eq(len({d for d, _ in seen.values()}), 2, "both dirs hold partitions")
    for (t, i), (d, size) in seen.items():
        h.eq(size, on_disk(d, t, i), "%s-%d: size" % (t, i))
    h.check(seen[("ld", 0)][1] > 1000, "ld-0 holds the 10 records: %d bytes", seen[("ld", 0)][1])
    # the same through v1 (not flexible, no volume sizes)
    c = kwire.Conn(srv.port)
    try:
        v1 = kwire.describe_log_dirs_v1(c)
    finally:
        c.close()
    h.eq({k: (d, v[0]) for err, d, parts in v1 for k, v in parts.items()}, seen, "DescribeLogDirs v1")
    h.eq([err for err, _, _ in v1], [0, 0], "v1 error codes")


@S.case
def a_filter_keeps_the_asked_partitions():
    res = describe({"ld": [1, 3], "ld-missing": [0]})
    got = {}
    for r in res:
        for t in r["topics"]:
            got.setdefault(t["name"], []).extend(p["partitionIndex"] for p in t["partitions"])
    h.eq(sorted(got.get("ld", [])), [1, 3], "ld's asked partitions")
    h.eq(got.get("ld2"), [], "ld2, not asked for: named with no partition (as Kafka)")
    h.check("ld-missing" not in got, "an unknown topic is not listed: %s", got)


def samsactl(*args):
    return h.run([h.SAMSACTL_BIN, "--bootstrap-server", srv.bootstrap, "log-dirs", "describe"] + list(args),
                 limit=20).stdout.decode()


@S.case
def samsactl_log_dirs():
    want = {}
    for r in describe(None):
        for t in r["topics"]:
            for p in t["partitions"]:
                want["%s-%d" % (t["name"], p["partitionIndex"])] = (r["logDir"], int(p["partitionSize"]))
    js = json.loads(samsactl("--json"))
    h.eq(js["version"], 1, "JSON version")
    h.eq([b["broker"] for b in js["brokers"]], [1], "brokers")
    got = {}
    for d in js["brokers"][0]["logDirs"]:
        h.eq(d["error"], None, "%s: error" % d["logDir"])
        for p in d["partitions"]:
            h.eq((p["offsetLag"], p["isFuture"]), (0, False), "%s: lag and future" % p["partition"])
            got[p["partition"]] = (d["logDir"], p["size"])
    h.eq(got, want, "samsactl --json against DescribeLogDirs")
    lines = samsactl("--topic-list", "ld2").splitlines()
    h.eq(lines[0].split(), ["BROKER", "LOG_DIR", "TOTAL_BYTES", "USABLE_BYTES", "ERROR"], "dirs header")
    h.eq(sorted(ln.split()[1] for ln in lines[1:3]), sorted(os.path.realpath(d) for d in DIRS), "dirs")
    h.eq(lines[3], "", "blank line between the tables")
    h.eq(lines[4].split(), ["BROKER", "LOG_DIR", "PARTITION", "SIZE", "OFFSET_LAG"], "partitions header")
    h.eq([ln.split() for ln in lines[5:]], [["1", want["ld2-0"][0], "ld2-0", str(want["ld2-0"][1]), "0"]],
         "ld2's partition alone")
    p = h.run([h.SAMSACTL_BIN, "--bootstrap-server", srv.bootstrap, "log-dirs", "describe", "--broker-list", "7"],
              limit=20, check_rc=False)
    h.eq(p.returncode, 1, "exit status for an unknown broker")
    h.check(b"broker 7 is not in the cluster metadata" in p.stderr, "stderr: %r", p.stderr)


if __name__ == "__main__":
    S.run(setup)
