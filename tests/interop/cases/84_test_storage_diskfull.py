"""Disk full and EIO on append (issue 3, "Durability and recovery"):
KAFKA_STORAGE_ERROR to the producer, the log left consistent, and after
space is freed and the server restarted nothing acknowledged is missing.

What Kafka does, and what is asserted here. Kafka turns an IOException
of an append (ENOSPC included) into KAFKA_STORAGE_ERROR (56) for that
produce and marks the whole log dir offline (LogDirFailureChannel): every
partition of the dir then answers 56 until a restart, and a broker whose
last log dir went offline halts. samsa is finer-grained, and this file
asserts samsa's behaviour: an append whose write fails with ENOSPC or EIO,
and whose partial bytes could be cut off again, fails alone with 56 and
leaves the log online and byte-for-byte as it was, so producing resumes
as soon as space is freed; a failed fdatasync (the page cache can no
longer be trusted) takes the log dir offline as Kafka does -- Produce and
Fetch answer 56 for its partitions until a restart -- but neither the
server nor the other log dirs.

Disk full: the server's log.dirs is a 24 MiB tmpfs mounted here (needs
root; otherwise every case is a SKIP saying why). A filler file on the
same tmpfs leaves a few MiB; raw Produce v8 (64 KiB batches, acks=-1, two
partitions, 1 MiB segments so that the log rolls while filling; offset
checkpoints every 200 ms so that they too run into the full disk) goes on
until appends fail, then a second filler takes every page left. Asserted:
every failed append answers 56 with base offset -1 and only 0 or 56 are
ever answered; ApiVersions and Metadata still answer (both partitions
online, leader 1); confluent-kafka (retries=0) gets KAFKA_STORAGE_ERROR;
raw Fetch returns exactly the acknowledged records at their acknowledged
offsets, offsets 0..HW-1 without a gap, and the .log files hold exactly
the acknowledged batches' bytes (a failed append leaves nothing). Three
ways back, each followed by the same exact checks and a produce that
works: space freed and produce without restart, then SIGTERM restart;
kill -9 while full, space freed, start; SIGTERM while full (exit 0),
space freed, start.

Index page on a full disk: a segment's .index is a sparse file written
through a shared mapping, and on a full disk the first store into a page
without a block behind it is SIGBUS, not an error code. A log with an
index entry per batch is brought to the last slot of an index page, the
disk filled while the .log's last page still has room, and one more small
batch produced: the server must stay up and answer 56 (nothing written)
or 0 (the record stored), consistently with what Fetch then returns.

EIO: an LD_PRELOAD shim (built here with cc; SKIP without one) fails
pwrite or fdatasync with EIO on one partition's files while a trigger
file names them; pwrite writes half of what it is given first, so the cut
of a partial write is exercised. pwrite: 56, the log online and unchanged,
produce resumes when the fault goes. fdatasync with flush.messages=1: 56,
the log dir offline while the other log dir serves, and after a restart
without the fault every acknowledged record is there. (A device-mapper
"error" target would need loop devices and dmsetup; the shim gives the
same errno at the same calls.)"""
# limit: 120
import errno
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
from harness import Server, Suite, Skip, Failure, check, eq, bound, log, ck_conf, SANITIZED, WORK  # noqa: E402
import kwire  # noqa: E402

STORAGE_ERROR = 56
NOT_LEADER_OR_FOLLOWER = 6
TMPFS_SIZE = "24m"
T = "diskfull"
PARTS = 2
BATCH_RECORDS = 16
VALUE_SIZE = 4000  # 16 records: a batch of about 64 KiB
MiB = 1024 * 1024
OVERRIDES = {"log.flush.offset.checkpoint.interval.ms": "200",
             "log.flush.start.offset.checkpoint.interval.ms": "200"}


def cleanup():
    """Servers first (a busy mount cannot go), then the tmpfs. Runs at
    the end, on a setup failure and on SIGTERM; idempotent."""
    global mounted
    for s in harness._servers:
        if s.alive():
            s.proc.kill()
            s.proc.wait(timeout=10)
    if mounted:
        if subprocess.call(["umount", mounted], stderr=subprocess.DEVNULL) != 0:
            subprocess.call(["umount", "-l", mounted])
        mounted = None


class DiskSuite(Suite):
    def _finish(self, code):
        cleanup()
        super()._finish(code)


S = DiskSuite("storage-diskfull", case_limit=60)
srv = None
mounted = None
skip_why = None
acked = {}                          # (partition, offset) -> record id, topic T
batch_bytes = {p: 0 for p in range(PARTS)}   # bytes of T's acknowledged batches
next_id = [0]


def on_sigterm(signum, frame):
    cleanup()
    harness._on_sigterm(signum, frame)


def setup():
    global srv, mounted, skip_why
    signal.signal(signal.SIGTERM, on_sigterm)  # after Suite.run installed its own
    srv = Server(OVERRIDES, name="full", start=False)
    os.makedirs(srv.data, exist_ok=True)
    if os.geteuid() != 0:
        skip_why = "not root (euid %d): cannot mount a tmpfs as the log dir" % os.geteuid()
        return
    try:
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0755" % TMPFS_SIZE, "tmpfs", srv.data],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        out = p.stdout.decode(errors="replace").strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        p, out = None, str(e)
    if p is None or p.returncode != 0:
        skip_why = "cannot mount a tmpfs as the log dir: %s" % (out or "mount exited %d" % p.returncode)
        return
    mounted = srv.data
    srv.start()
    create_topic(srv, T, PARTS, {"segment.bytes": str(MiB)})


def disk_case(fn):
    """A case on the tmpfs: SKIP without it; the fillers are gone before
    and after (a failed case must not leave the next one a full disk)."""
    def run():
        if skip_why:
            raise Skip(skip_why)
        free_space()
        if srv.proc is None:  # a failed case stopped it
            srv.start()
        try:
            fn()
        finally:
            free_space()
    run.__name__ = fn.__name__
    return S.case(run)


# ---------------------------------------------------------------- helpers

def create_topic(s, name, parts, config):
    c = kwire.Conn(s.port)
    try:
        res = kwire.create_topics_v4(c, [(name, parts, 1, config)])
    finally:
        c.close()
    eq([(r["name"], r["error_code"]) for r in res], [(name, 0)], "CreateTopics %s" % name)
    harness.wait_topic(s.bootstrap, name, parts)


def free_bytes():
    st = os.statvfs(mounted)
    return st.f_bavail * st.f_frsize


def write_zeros(path, n):
    """Appends up to n bytes of zeros; stops quietly at ENOSPC. Returns
    the bytes written."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    done = 0
    chunk = b"\0" * MiB
    try:
        while done < n:
            try:
                done += os.write(fd, chunk[:min(len(chunk), n - done)])
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                if len(chunk) == 4096:
                    break
                chunk = b"\0" * 4096  # the last pages one at a time
    finally:
        os.close(fd)
    return done


def place_filler(leave):
    """A filler file leaving about `leave` bytes free."""
    write_zeros(os.path.join(mounted, "filler"), free_bytes() - leave)
    log("filler placed: %d KiB free", free_bytes() // 1024)


def top_up():
    """Takes every page left: the disk is exactly full."""
    write_zeros(os.path.join(mounted, "filler-top"), 1 << 40)
    eq(free_bytes(), 0, "free bytes on the tmpfs after the top-up")


def free_space():
    for f in ("filler", "filler-top"):
        if mounted and os.path.exists(os.path.join(mounted, f)):
            os.unlink(os.path.join(mounted, f))


def value(i, size=VALUE_SIZE):
    return b"id-%08d-" % i + b"x" * (size - 12)


def id_of(v):
    return int(v[3:11])


def produce(c, part, n=BATCH_RECORDS, size=VALUE_SIZE):
    """One raw Produce v8 (acks=-1) of one batch of n records to T; notes
    what was acknowledged. Returns the error code."""
    ids = list(range(next_id[0], next_id[0] + n))
    next_id[0] += n
    batch = kwire.build_batch([(None, value(i, size), []) for i in ids])
    r = kwire.produce(c, T, part, batch)
    if r["error_code"] == 0:
        for k, i in enumerate(ids):
            acked[(part, r["base_offset"] + k)] = i
        batch_bytes[part] += len(batch)
    else:
        eq(r["base_offset"], -1, "base offset of a failed produce (error %d)" % r["error_code"])
    return r["error_code"]


def fill(c, limit=400):
    """Produces until appends fail (four failures in a row), then tops the
    disk up; every answer must be 0 or KAFKA_STORAGE_ERROR."""
    codes = {}
    in_row = 0
    for i in range(limit):
        code = produce(c, i % PARTS)
        codes[code] = codes.get(code, 0) + 1
        in_row = in_row + 1 if code else 0
        if in_row >= 4:
            break
    check(in_row >= 4, "no failing append after %d batches of 64 KiB: answers %s", limit, codes)
    eq(sorted(codes), [0, STORAGE_ERROR], "produce answers while filling the disk")
    top_up()
    for i in range(4):
        eq(produce(c, i % PARTS), STORAGE_ERROR, "produce to a full disk")
    log("filled: %d batches acknowledged, %d answered KAFKA_STORAGE_ERROR; %d records acknowledged so far",
        codes[0], codes[STORAGE_ERROR] + 4, len(acked))


def read_partition(port, topic, part, limit=15.0):
    """Every record of a partition through raw Fetch v4, retrying
    NOT_LEADER_OR_FOLLOWER while the log opens after a restart. Returns
    (records, high watermark)."""
    deadline = time.monotonic() + bound(limit)
    c = kwire.Conn(port)
    try:
        out, off = [], 0
        while True:
            p = kwire.fetch_v4(c, topic, part, off, max_bytes=8 * MiB)
            if p["error_code"] == NOT_LEADER_OR_FOLLOWER and not out and time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            eq(p["error_code"], 0, "Fetch %s-%d at offset %d: error code" % (topic, part, off))
            recs = [r for r in kwire.parse_batches(p["records"]) if r["offset"] >= off]
            out += recs
            if not recs or recs[-1]["offset"] + 1 >= p["high_watermark"]:
                return out, p["high_watermark"]
            off = recs[-1]["offset"] + 1
    finally:
        c.close()


def log_bytes(s, topic, part):
    d = os.path.join(s.data, "%s-%d" % (topic, part))
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if f.endswith(".log"))


def verify(what):
    """Exactly the acknowledged records of T, each at its acknowledged
    offset, offsets 0..HW-1, and on disk exactly their batches' bytes."""
    for p in range(PARTS):
        recs, hw = read_partition(srv.port, T, p)
        offs = [r["offset"] for r in recs]
        check(offs == list(range(hw)), "%s: partition %d: offsets not 0..%d without gaps: %s",
              what, p, hw - 1, harness.short(offs, 200))
        got = {r["offset"]: id_of(r["value"]) for r in recs}
        want = {o: i for (q, o), i in acked.items() if q == p}
        missing = sorted((o, i) for o, i in want.items() if got.get(o) != i)
        eq(missing[:5], [], "%s: partition %d: acknowledged (offset, id) not found (%d of %d)"
           % (what, p, len(missing), len(want)))
        eq(hw, len(want), "%s: partition %d: high watermark = records acknowledged "
           "(a failed append must leave nothing)" % (what, p))
        eq(log_bytes(srv, T, p), batch_bytes[p], "%s: partition %d: bytes in its .log files "
           "= bytes of the acknowledged batches" % (what, p))
    log("%s: %d acknowledged records all at their offsets, nothing else stored", what, len(acked))


def still_serving(what):
    check(srv.alive(), "%s: samsa exited (status %s)", what, srv.proc.poll())
    c = kwire.Conn(srv.port)
    try:
        av = kwire.api_versions(c, 0)
        eq(av["error_code"], 0, "%s: ApiVersions error code" % what)
        check(0 in av["api_keys"], "%s: ApiVersions lists no Produce", what)
        md = kwire.metadata_v12(c, [T])
    finally:
        c.close()
    eq([(t["name"], t["error_code"]) for t in md["topics"]], [(T, 0)], "%s: Metadata topic" % what)
    eq(sorted((p["partition"], p["error_code"], p["leader"]) for p in md["topics"][0]["partitions"]),
       [(p, 0, 1) for p in range(PARTS)], "%s: Metadata (partition, error, leader)" % what)


def produce_works(what):
    c = kwire.Conn(srv.port)
    try:
        for p in range(PARTS):
            eq(produce(c, p, n=4, size=100), 0, "%s: produce to partition %d" % (what, p))
    finally:
        c.close()
    verify(what + ", then produce")


def ck_produce_one(v, **conf):
    """One record with confluent-kafka (acks=all, no retries); returns
    (error or None, offset)."""
    from confluent_kafka import Producer
    c = ck_conf(srv.bootstrap, **{"acks": "all", "retries": 0, "enable.idempotence": False, "linger.ms": 0,
                                  "message.timeout.ms": int(bound(10000))})
    c.update(conf)
    p = Producer(c)
    res = []
    p.produce(T, value=v, partition=0, on_delivery=lambda err, msg: res.append((err, msg.offset())))
    eq(p.flush(bound(15)), 0, "confluent-kafka: records left undelivered")
    return res[0]


# ---------------------------------------------------------------- disk full

@disk_case
def full_disk_answers_kafka_storage_error():
    since = srv.log_size()
    place_filler(5 * MiB)
    c = kwire.Conn(srv.port)
    try:
        fill(c)
    finally:
        c.close()
    line = srv.wait_log(r"No space left on device", since)
    log("server: %s", line.split(" samsa ")[-1][:200])
    time.sleep(0.5)  # offset checkpoints (every 200 ms) meet the full disk too
    still_serving("disk full")
    err, off = ck_produce_one(value(next_id[0], 64 * 1024))
    next_id[0] += 1
    check(err is not None, "confluent-kafka: a 64 KiB record was acknowledged (offset %d) on a full disk", off)
    from confluent_kafka import KafkaError
    eq((err.code(), err.name()), (KafkaError.KAFKA_STORAGE_ERROR, "KAFKA_STORAGE_ERROR"),
       "confluent-kafka delivery error on a full disk")
    verify("disk full")


@disk_case
def produce_resumes_once_space_is_freed_then_sigterm_restart():
    # No restart needed: the failed appends left the logs online.
    produce_works("space freed")
    before = log_bytes(srv, T, 0)
    err, off = ck_produce_one(value(next_id[0], 200))
    eq(err, None, "confluent-kafka delivery after space was freed")
    acked[(0, off)] = next_id[0]
    next_id[0] += 1
    batch_bytes[0] += log_bytes(srv, T, 0) - before  # the size of confluent-kafka's batch is its own
    verify("space freed, confluent-kafka record")
    srv.restart()  # SIGTERM: exit 0 within the bound, no sanitizer report
    verify("after SIGTERM and restart")
    produce_works("after SIGTERM and restart")


@disk_case
def kill9_while_disk_full_then_free_and_start():
    place_filler(3 * MiB)
    c = kwire.Conn(srv.port)
    try:
        fill(c)
    finally:
        c.close()
    still_serving("disk full again")
    srv.kill9()
    free_space()
    srv.start()
    verify("after kill -9 while full")
    produce_works("after kill -9 while full")


@disk_case
def sigterm_while_disk_full_then_free_and_start():
    place_filler(3 * MiB)
    c = kwire.Conn(srv.port)
    try:
        fill(c)
    finally:
        c.close()
    since = srv.log_size()
    srv.stop()  # with the disk still full: exit 0 within the bound, no sanitizer report
    for line in srv.log_text(since).splitlines():
        if " ERROR: " in line or " WARN: " in line:
            log("shutdown on a full disk: %s", line.split(" samsa ")[-1][:200])
    free_space()
    srv.start()
    verify("after SIGTERM while full")
    produce_works("after SIGTERM while full")


@disk_case
def index_page_on_full_disk():
    """index.interval.bytes=0: an offset-index entry (8 bytes) for every
    batch but the first, so 513 batches fill the index's first page
    exactly and the 514th stores into the second. All batches carry one
    timestamp: the time index keeps its single first entry."""
    topic = "diskfull-idx"
    create_topic(srv, topic, 1, {"index.interval.bytes": "0"})
    ts = int(time.time() * 1000)

    def batch(i, size):
        return kwire.build_batch([(None, value(i, size), [])], base_timestamp=ts)

    small = len(batch(0, 40))
    # the first batch sized so that after 513 batches the .log ends a
    # little into a page: the 514th fits in that page's rest
    vsize = 300
    while not 64 <= (len(batch(0, vsize)) + 512 * small) % 4096 < 256:
        vsize += 1
    ids = {}
    c = kwire.Conn(srv.port)
    try:
        eq(kwire.produce(c, topic, 0, batch(0, vsize))["error_code"], 0, "produce batch 1")
        ids[0] = 0
        for k in range(1, 513):
            r = kwire.produce(c, topic, 0, batch(k, 40))
            eq((r["error_code"], r["base_offset"]), (0, k), "produce batch %d" % (k + 1))
            ids[k] = k
        seg = os.path.join(srv.data, topic + "-0", "00000000000000000000.log")
        size = os.path.getsize(seg)
        check(64 <= size % 4096 < 256, ".log size after 513 batches: %d", size)
        top_up()
        try:
            r = kwire.produce(c, topic, 0, batch(513, 40))
        except (kwire.Closed, OSError) as e:
            try:
                srv.proc.wait(timeout=bound(5))
            except subprocess.TimeoutExpired:
                pass
            raise Failure("no answer to the append whose index entry starts a new page of the sparse .index "
                          "on a full disk (%s); samsa exit status %s (-7: SIGBUS); log tail:\n%s"
                          % (e, srv.proc.poll(), srv.log_tail(10)))
        check(srv.alive(), "samsa exited (status %s) after the append at the index page boundary", srv.proc.poll())
        code = r["error_code"]
        check(code in (0, STORAGE_ERROR), "answer to the append at the index page boundary: %d", code)
        if code == 0:
            eq(r["base_offset"], 513, "offset of the batch at the index page boundary")
            ids[513] = 513
        else:
            eq(os.path.getsize(seg), size, ".log size after the failed append")
        log("append at the index page boundary on a full disk: %s",
            "stored at offset 513" if code == 0 else "KAFKA_STORAGE_ERROR, nothing written")
        free_space()
        r = kwire.produce(c, topic, 0, batch(514, 40))
        eq((r["error_code"], r["base_offset"]), (0, len(ids)), "produce after space was freed")
        ids[len(ids)] = 514
    finally:
        c.close()
    recs, hw = read_partition(srv.port, topic, 0)
    eq([(r["offset"], id_of(r["value"])) for r in recs], sorted(ids.items()), "records of %s" % topic)
    eq(hw, len(ids), "high watermark of %s" % topic)


# ---------------------------------------------------------------- EIO

SHIM_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* While the file named by $SAMSA_EIO_TRIGGER holds "write PATTERN" or
 * "sync PATTERN", pwrite (after writing half of what it is given) or
 * fdatasync/fsync fail with EIO on files whose path contains PATTERN. */
static int inject(int fd, const char *op)
{
    const char *t = getenv("SAMSA_EIO_TRIGGER");
    if (!t)
        return 0;
    int e = errno;
    int hit = 0;
    int tfd = open(t, O_RDONLY | O_CLOEXEC);
    if (tfd >= 0) {
        char buf[512], link[64], path[4096];
        ssize_t n = read(tfd, buf, sizeof buf - 1);
        close(tfd);
        if (n > 0) {
            buf[n] = 0;
            buf[strcspn(buf, "\n")] = 0;
            char *sp = strchr(buf, ' ');
            if (sp) {
                *sp = 0;
                snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
                ssize_t m = readlink(link, path, sizeof path - 1);
                if (m > 0) {
                    path[m] = 0;
                    hit = strcmp(buf, op) == 0 && strstr(path, sp + 1) != NULL;
                }
            }
        }
    }
    errno = e;
    return hit;
}

#define PWRITE(name)                                                              \
    ssize_t name(int fd, const void *b, size_t n, off_t off)                      \
    {                                                                             \
        static ssize_t (*real)(int, const void *, size_t, off_t);                 \
        if (!real)                                                                \
            real = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, #name); \
        if (inject(fd, "write")) {                                                \
            if (n >= 2)                                                           \
                return real(fd, b, n / 2, off);                                   \
            errno = EIO;                                                          \
            return -1;                                                            \
        }                                                                         \
        return real(fd, b, n, off);                                               \
    }
PWRITE(pwrite)
PWRITE(pwrite64)

#define SYNC(name)                                                                \
    int name(int fd)                                                              \
    {                                                                             \
        static int (*real)(int);                                                  \
        if (!real)                                                                \
            real = (int (*)(int))dlsym(RTLD_NEXT, #name);                         \
        if (inject(fd, "sync")) {                                                 \
            errno = EIO;                                                          \
            return -1;                                                            \
        }                                                                         \
        return real(fd);                                                          \
    }
SYNC(fdatasync)
SYNC(fsync)
"""

eio = {}


def eio_server():
    """A second server (two log dirs, plain disk) with the shim preloaded."""
    if "srv" in eio:
        if not eio["srv"].alive():
            start_with_shim(eio["srv"])
        return eio["srv"], eio["trigger"], eio["dirs"]
    if "skip" in eio:
        raise Skip(eio["skip"])
    cc = next((os.path.join(d, x) for x in ("cc", "gcc") for d in os.environ.get("PATH", "").split(":")
               if os.access(os.path.join(d, x), os.X_OK)), None)
    if not cc:
        eio["skip"] = "no C compiler to build the EIO shim"
        raise Skip(eio["skip"])
    src, so = os.path.join(WORK, "eio_shim.c"), os.path.join(WORK, "eio_shim.so")
    with open(src, "w") as f:
        f.write(SHIM_C)
    p = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", so, src, "-ldl"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    if p.returncode != 0:
        eio["skip"] = "cannot build the EIO shim: %s" % p.stdout.decode(errors="replace")[-300:]
        raise Skip(eio["skip"])
    s = Server(dict(OVERRIDES), name="eio", start=False)
    d1, d2 = os.path.join(s.dir, "d1"), os.path.join(s.dir, "d2")
    s.data = d1  # argv() passes log.dirs=<data>: give both
    s.overrides["log.dirs"] = "%s,%s" % (d1, d2)
    eio.update(srv=s, so=so, trigger=os.path.join(WORK, "eio-trigger"), dirs=(d1, d2))
    start_with_shim(s)
    return s, eio["trigger"], eio["dirs"]


def start_with_shim(s):
    saved = {k: os.environ.get(k) for k in ("LD_PRELOAD", "SAMSA_EIO_TRIGGER", "ASAN_OPTIONS")}
    os.environ["LD_PRELOAD"] = eio["so"]
    os.environ["SAMSA_EIO_TRIGGER"] = eio["trigger"]
    if SANITIZED:  # libasan wants to come first; the shim only forwards
        os.environ["ASAN_OPTIONS"] = ":".join(x for x in (saved["ASAN_OPTIONS"], "verify_asan_link_order=0") if x)
    try:
        s.start()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def raw_produce(s, topic, part, ids, size=1000):
    c = kwire.Conn(s.port)
    try:
        return kwire.produce(c, topic, part, kwire.build_batch([(None, value(i, size), []) for i in ids]))
    finally:
        c.close()


def raw_fetch_code(s, topic, part):
    c = kwire.Conn(s.port)
    try:
        return kwire.fetch_v4(c, topic, part, 0)["error_code"]
    finally:
        c.close()


def part_dir(dirs, topic, part):
    found = [d for d in dirs if os.path.isdir(os.path.join(d, "%s-%d" % (topic, part)))]
    eq(len(found), 1, "log dirs holding %s-%d" % (topic, part))
    return os.path.join(found[0], "%s-%d" % (topic, part))


def check_log(s, topic, part, want, what, exact=True):
    """want: {offset: id}. exact: nothing else stored; else other records
    may follow (written, never acknowledged)."""
    recs, hw = read_partition(s.port, topic, part)
    got = {r["offset"]: id_of(r["value"]) for r in recs}
    eq([r["offset"] for r in recs], list(range(hw)), "%s: offsets 0..HW-1" % what)
    eq(sorted((o, i) for o, i in want.items() if got.get(o) != i), [], "%s: acknowledged records missing" % what)
    if exact:
        eq(hw, len(want), "%s: high watermark" % what)
    return got


@S.case
def eio_on_write_fails_the_append_only():
    s, trig, dirs = eio_server()
    topic = "eio-write"
    create_topic(s, topic, 1, {})
    want, n = {}, 0
    for k in range(3):
        r = raw_produce(s, topic, 0, range(n, n + 10))
        eq((r["error_code"], r["base_offset"]), (0, n), "produce before the fault")
        want.update({n + j: n + j for j in range(10)})
        n += 10
    d = part_dir(dirs, topic, 0)
    seg = os.path.join(d, "00000000000000000000.log")
    size = os.path.getsize(seg)
    since = s.log_size()
    with open(trig, "w") as f:
        f.write("write /%s-0/\n" % topic)
    try:
        for k in range(3):
            r = raw_produce(s, topic, 0, range(1000 + 10 * k, 1010 + 10 * k))
            eq((r["error_code"], r["base_offset"]), (STORAGE_ERROR, -1), "produce while pwrite fails with EIO")
    finally:
        os.unlink(trig)
    line = s.wait_log(r"Input/output error", since)
    log("server: %s", line.split(" samsa ")[-1][:200])
    check(s.alive(), "samsa exited after EIO on write")
    eq(os.path.getsize(seg), size, ".log size after three failed appends (the partial writes cut off)")
    check_log(s, topic, 0, want, "after EIO on write")
    # the log stayed online: no restart needed
    r = raw_produce(s, topic, 0, range(n, n + 10))
    eq((r["error_code"], r["base_offset"]), (0, n), "produce once the fault is gone")
    want.update({n + j: n + j for j in range(10)})
    s.stop()
    start_with_shim(s)
    check_log(s, topic, 0, want, "after EIO on write and a restart")


@S.case
def eio_on_fsync_takes_the_log_dir_offline():
    s, trig, dirs = eio_server()
    topic = "eio-sync"
    create_topic(s, topic, 2, {"flush.messages": "1"})
    where = {p: part_dir(dirs, topic, p) for p in (0, 1)}
    check(os.path.dirname(where[0]) != os.path.dirname(where[1]), "partitions in one log dir: %s", where)
    bad, good = 1, 0
    want = {bad: {}, good: {}}
    for p in (bad, good):
        r = raw_produce(s, topic, p, range(100 * p, 100 * p + 10))
        eq((r["error_code"], r["base_offset"]), (0, 0), "produce to %s-%d before the fault" % (topic, p))
        want[p].update({j: 100 * p + j for j in range(10)})
    since = s.log_size()
    with open(trig, "w") as f:
        f.write("sync /%s-%d/\n" % (topic, bad))
    try:
        r = raw_produce(s, topic, bad, range(500, 510))
        eq((r["error_code"], r["base_offset"]), (STORAGE_ERROR, -1),
           "produce (flush.messages=1) while fdatasync fails with EIO")
        s.wait_log(r"fdatasync failed: Input/output error", since)
        line = s.wait_log(r"log dir %s is offline" % os.path.dirname(where[bad]), since)
        log("server: %s", line.split(" samsa ")[-1][:200])
    finally:
        os.unlink(trig)
    check(s.alive(), "samsa exited after EIO on fdatasync")
    # As Kafka: the dir stays offline (until a restart), the fault gone or not.
    eq(raw_produce(s, topic, bad, range(510, 520))["error_code"], STORAGE_ERROR, "produce to the offline dir")
    eq(raw_fetch_code(s, topic, bad), STORAGE_ERROR, "fetch from the offline dir")
    r = raw_produce(s, topic, good, range(110, 120))
    eq((r["error_code"], r["base_offset"]), (0, 10), "produce to the other log dir")
    want[good].update({10 + j: 110 + j for j in range(10)})
    eq(raw_fetch_code(s, topic, good), 0, "fetch from the other log dir")
    c = kwire.Conn(s.port)
    try:
        eq(kwire.api_versions(c, 0)["error_code"], 0, "ApiVersions with a log dir offline")
        md = kwire.metadata_v12(c, [topic])
    finally:
        c.close()
    log("Metadata with the dir offline: %s",
        sorted((p["partition"], p["error_code"], p["leader"], p["offline"]) for p in md["topics"][0]["partitions"]))
    s.stop()
    start_with_shim(s)
    got = check_log(s, topic, bad, want[bad], "after EIO on fdatasync and a restart", exact=False)
    check(set(got.values()) <= set(range(100 * bad, 100 * bad + 10)) | set(range(500, 510)),
          "records never produced in %s-%d: %s", topic, bad, sorted(set(got.values()))[:20])
    check_log(s, topic, good, want[good], "other dir after the restart")
    r = raw_produce(s, topic, bad, range(520, 530))
    eq((r["error_code"], r["base_offset"]), (0, len(got)), "produce to the dir back online after the restart")


if __name__ == "__main__":
    S.run(setup)
