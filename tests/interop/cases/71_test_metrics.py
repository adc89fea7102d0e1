"""The metrics endpoint (samsa.metrics.listener), as an operator's
Prometheus sees it: every scrape parses with the Prometheus client
library's own text parser, and the figures follow what real clients do.

- records appended by kcat, confluent-kafka and kafkajs are counted
  exactly (samsa_produce_records_total, and by topic), as are the requests by API,
  whose latency histograms are cumulative and end in their count;
- an idempotent producer's retried batch is counted once, as it is
  appended once;
- a gzip batch from confluent-kafka shows in the codec plugin's counter
  (plugin metrics are exposed, not only registered);
- partitions hosted, led and in the cluster match what was created,
  none under-replicated or offline; the node is the active controller;
- groups are counted by type and state: a confluent-kafka member makes
  its classic group Stable, and Empty once it leaves; so for a KIP-848
  group;
- open connections are counted up and down, and a refusal by
  max.connections is counted;
- bad HTTP gets 400/404/405 and a log line, and the endpoint still
  serves; a busy metrics port or a malformed value stops startup with
  one line naming the key.
"""
# limit: 150
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import (SAMSA_BIN, WORK, Server, Suite, bound, check, ck_create_topic, ck_produce, eq,  # noqa: E402
                     free_ports, kcat_produce, kp_consume, log, node, rec, to_json_records)
import kgroups  # noqa: E402
import kwire  # noqa: E402

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

S = Suite("metrics", case_limit=60)
srv = None
mport = None


def setup():
    global srv, mport
    mport = free_ports(1)[0]
    srv = Server({"samsa.metrics.listener": "127.0.0.1:%d" % mport})


def scrape(port=None):
    """{(name, frozenset(labels)): value} of one scrape, parsed by the
    Prometheus client's parser (which raises on a malformed line)."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % (port or mport), timeout=bound(10)) as r:
        eq(r.status, 200, "status of /metrics")
        ctype = r.headers.get("Content-Type")
        check(ctype.startswith("text/plain; version=0.0.4"), "content type %r", ctype)
        text = r.read().decode("utf-8")
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def val(m, name, **labels):
    key = (name, frozenset(labels.items()))
    check(key in m, "metric %s%s missing", name, labels or "")
    return m[key]


def count(m, name, **labels):
    """A labelled counter: a series appears with its first count."""
    return m.get((name, frozenset(labels.items())), 0.0)


def wait_metric(name, want, limit=5.0, **labels):
    deadline = time.monotonic() + bound(limit)
    while True:
        got = val(scrape(), name, **labels)
        if got == want:
            return
        if time.monotonic() > deadline:
            eq(got, want, name)
        time.sleep(0.05)


@S.case
def produce_and_requests_are_counted():
    ck_create_topic(srv.bootstrap, "m1", 3)
    m0 = scrape()
    kcat_produce(srv.bootstrap, "m1", 0, [rec(b"k%d" % i, b"v%d" % i) for i in range(5)])
    ck_produce(srv.bootstrap, "m1", [rec(b"c%d" % i, b"w%d" % i, partition=1) for i in range(4)])
    node("kafkajs-produce", srv.bootstrap, {"topic": "m1"},
         stdin=to_json_records([rec(b"j%d" % i, b"x%d" % i, partition=2) for i in range(3)]), limit=60)
    got = kp_consume(srv.bootstrap, "m1", 0, 0, 5)
    eq([r["value"] for r in got], [b"v%d" % i for i in range(5)], "kafka-python read back")
    m1 = scrape()
    eq(val(m1, "samsa_produce_records_total") - val(m0, "samsa_produce_records_total"), 12.0,
       "records appended by kcat (5), confluent-kafka (4) and kafkajs (3)")
    check(val(m1, "samsa_produce_bytes_total") - val(m0, "samsa_produce_bytes_total") > 12 * 10,
          "produce bytes did not grow with 12 records")
    # by topic: m1 is new, so its sums are exactly this case's
    eq(val(m1, "samsa_topic_produce_records_total", topic="m1"), 12.0, "records appended to m1")
    eq(val(m1, "samsa_topic_produce_bytes_total", topic="m1"),
       val(m1, "samsa_produce_bytes_total") - val(m0, "samsa_produce_bytes_total"), "bytes appended to m1")
    eq(count(m0, "samsa_topic_fetch_bytes_total", topic="m1"), 0.0, "m1 fetched before the consumer")
    check(val(m1, "samsa_topic_fetch_bytes_total", topic="m1") > 0, "kafka-python's fetch of m1 not counted")
    # the log holds what was appended (batches as stored: the appended bytes)
    eq(val(m1, "samsa_topic_log_bytes", topic="m1"), val(m1, "samsa_topic_produce_bytes_total", topic="m1"),
       "m1's log size")
    check(val(m1, "samsa_log_bytes") >= val(m1, "samsa_topic_log_bytes", topic="m1"), "log bytes in all")
    produces = val(m1, "samsa_requests_total", api="Produce") - count(m0, "samsa_requests_total", api="Produce")
    check(3 <= produces <= 12, "%d Produce requests for three clients' 12 records", produces)
    check(val(m1, "samsa_requests_total", api="Fetch") > count(m0, "samsa_requests_total", api="Fetch"),
          "kafka-python's fetches not counted")
    check(val(m1, "samsa_network_received_bytes_total") > val(m0, "samsa_network_received_bytes_total"),
          "bytes received did not grow")
    check(val(m1, "samsa_network_sent_bytes_total") > val(m0, "samsa_network_sent_bytes_total"),
          "bytes sent did not grow")
    # every histogram: cumulative buckets ending in +Inf == _count == requests_total
    apis = [dict(k[1])["api"] for k in m1 if k[0] == "samsa_requests_total"]
    check("Produce" in apis and "Metadata" in apis and "ApiVersions" in apis, "APIs counted: %s", apis)
    for api in apis:
        buckets = sorted(((float(dict(k[1])["le"]), v) for k, v in m1.items()
                          if k[0] == "samsa_request_duration_seconds_bucket" and dict(k[1])["api"] == api))
        check(len(buckets) == 16, "%s: %d buckets", api, len(buckets))
        check(all(buckets[i][1] <= buckets[i + 1][1] for i in range(15)), "%s: buckets not cumulative", api)
        eq(buckets[-1][1], val(m1, "samsa_request_duration_seconds_count", api=api), api + " +Inf bucket")
        eq(val(m1, "samsa_request_duration_seconds_count", api=api), val(m1, "samsa_requests_total", api=api),
           api + " histogram count")
    # a ready node's answers to Produce take well under a second
    pb = {float(dict(k[1])["le"]): v for k, v in m1.items()
          if k[0] == "samsa_request_duration_seconds_bucket" and dict(k[1])["api"] == "Produce"}
    eq(pb[1.0], pb[float("inf")], "Produce requests slower than 1 s")
    log("%d Produce requests, %d APIs seen", produces, len(apis))


@S.case
def a_retried_batch_is_counted_once():
    """An idempotent producer's retry appends nothing, so it adds nothing
    (raw Produce: the same batch twice, as a client whose answer was lost
    sends it)."""
    ck_create_topic(srv.bootstrap, "m3", 1)
    b = kwire.build_batch([(b"k", b"r%d" % i, []) for i in range(5)], producer_id=777, producer_epoch=0,
                          base_sequence=0)
    m0 = scrape()
    c = kwire.Conn(srv.port)
    try:
        for what in ("first", "retry"):
            r = kwire.produce(c, "m3", 0, b)
            eq((r["error_code"], r["base_offset"]), (0, 0), what + " answer")
    finally:
        c.close()
    m1 = scrape()
    eq(val(m1, "samsa_topic_produce_records_total", topic="m3"), 5.0, "m3's records")
    eq(val(m1, "samsa_produce_records_total") - val(m0, "samsa_produce_records_total"), 5.0, "records in all")
    eq(val(m1, "samsa_topic_log_bytes", topic="m3"), val(m1, "samsa_topic_produce_bytes_total", topic="m3"),
       "m3's log holds the bytes counted")


@S.case
def plugin_counters_are_exposed():
    name = "samsa_plugin_codec_gzip_batches_decompressed_total"
    m0 = scrape()
    ck_produce(srv.bootstrap, "m1", [rec(b"g%d" % i, b"gzip" * 50, partition=0) for i in range(20)],
               conf={"compression.codec": "gzip", "linger.ms": 200}, metadata_first=True)
    m1 = scrape()
    eq(val(m1, name) - val(m0, name), 1.0, "gzip batches the codec module decompressed (one batch)")
    eq(val(m1, "samsa_produce_records_total") - val(m0, "samsa_produce_records_total"), 20.0, "records")


@S.case
def partitions_and_cluster_state():
    ck_create_topic(srv.bootstrap, "m2", 4)
    m = scrape()
    # every topic of the cluster: the test's two and the internal ones
    c = kwire.Conn(srv.port)
    try:
        md = kwire.metadata_v12(c, None)
    finally:
        c.close()
    topics = md["topics"]
    nparts = sum(len(t["partitions"]) for t in topics)
    eq(val(m, "samsa_cluster_topics"), float(len(topics)), "topics")
    eq(val(m, "samsa_cluster_partitions"), float(nparts), "partitions in the cluster")
    eq(val(m, "samsa_partitions"), float(nparts), "partitions hosted here (one node)")
    eq(val(m, "samsa_partition_leaders"), float(nparts), "partitions led here")
    eq(val(m, "samsa_under_replicated_partitions"), 0.0, "under-replicated")
    eq(val(m, "samsa_under_min_isr_partitions"), 0.0, "under min ISR")
    eq(val(m, "samsa_cluster_offline_partitions"), 0.0, "offline")
    eq(val(m, "samsa_cluster_brokers"), 1.0, "brokers")
    eq(val(m, "samsa_cluster_brokers_alive"), 1.0, "brokers alive")
    eq(val(m, "samsa_controller_active"), 1.0, "active controller")
    eq(val(m, "samsa_quorum_leader"), 1.0, "quorum leader")
    eq(val(m, "samsa_log_dirs"), 1.0, "log dirs")
    eq(val(m, "samsa_log_dirs_offline"), 0.0, "offline log dirs")
    eq(val(m, "samsa_log_cleaner_uncleanable_partitions"), 0.0, "uncleanable partitions")
    st = os.statvfs(srv.data)
    eq(val(m, "samsa_log_dir_volume_bytes", dir=srv.data), float(st.f_blocks * st.f_frsize), "volume bytes")
    usable = val(m, "samsa_log_dir_volume_usable_bytes", dir=srv.data)
    check(abs(usable - st.f_bavail * st.f_frsize) < 1 << 30, "usable bytes %d, statvfs says %d", usable,
          st.f_bavail * st.f_frsize)
    # the version `samsa --version` prints
    version = subprocess.run([SAMSA_BIN, "--version"], capture_output=True, text=True).stdout.split()[1]
    eq(val(m, "samsa_build_info", version=version, node_id="1"), 1.0, "build info")
    check(val(m, "process_resident_memory_bytes") > 1 << 20, "RSS")
    check(val(m, "process_open_fds") > 5, "open fds")
    check(abs(val(m, "process_start_time_seconds") - time.time()) < 3600, "start time")


def groups(m):
    return {(dict(k[1])["type"], dict(k[1])["state"]): v for k, v in m.items() if k[0] == "samsa_groups"}


@S.case
def groups_by_type_and_state():
    """A classic group (confluent-kafka) while its member is in, then
    after it left; a KIP-848 group while its member is in, then Empty."""
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": srv.bootstrap, "group.id": "mg-classic", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 10000})
    try:
        c.subscribe(["m1"])
        deadline = time.monotonic() + bound(30)
        while not c.assignment() and time.monotonic() < deadline:
            c.poll(0.2)
        check(c.assignment(), "no assignment")
        g = groups(scrape())
        eq(g.get(("classic", "Stable")), 1.0, "Stable classic groups (%s)" % g)
    finally:
        c.close()
    deadline = time.monotonic() + bound(10)
    while True:
        g = groups(scrape())
        if g.get(("classic", "Empty")) == 1.0 and ("classic", "Stable") not in g:
            break
        check(time.monotonic() < deadline, "the classic group did not become Empty: %s" % g)
        time.sleep(0.1)
    # a KIP-848 member joins (ConsumerGroupHeartbeat by hand) and leaves
    conn = kwire.Conn(srv.port)
    try:
        hb = kgroups.consumer_heartbeat(conn, "mg-848", "", 0, topics=["m1"], owned=[])
        eq(hb["error_code"], 0, "ConsumerGroupHeartbeat")
        g = groups(scrape())
        check(sum(v for (t, _), v in g.items() if t == "consumer") == 1.0, "KIP-848 groups: %s" % g)
        eq(kgroups.consumer_heartbeat(conn, "mg-848", hb["member_id"], -1)["error_code"], 0, "leave")
    finally:
        conn.close()
    g = groups(scrape())
    eq(g.get(("consumer", "Empty")), 1.0, "the KIP-848 group after its member left (%s)" % g)


@S.case
def connections_counted_up_and_down():
    wait_metric("samsa_connections", 0.0)  # the clients of earlier cases have gone
    conns = [kwire.Conn(srv.port) for _ in range(5)]
    for c in conns:
        eq(kwire.api_versions(c, 0)["error_code"], 0, "ApiVersions")
    wait_metric("samsa_connections", 5.0)
    for c in conns:
        c.close()
    wait_metric("samsa_connections", 0.0)


@S.case
def refusals_are_counted():
    p = free_ports(1)[0]
    s = Server({"samsa.metrics.listener": "127.0.0.1:%d" % p, "max.connections": "2"})
    try:
        def conns():
            return val(scrape(p), "samsa_connections")
        deadline = time.monotonic() + bound(5)
        while conns() != 0 and time.monotonic() < deadline:  # the readiness probe
            time.sleep(0.05)
        held = [kwire.Conn(s.port) for _ in range(2)]
        for c in held:
            eq(kwire.api_versions(c, 0)["error_code"], 0, "ApiVersions within the limit")
        before = val(scrape(p), "samsa_connections_refused_total", reason="limit")
        extra = socket.create_connection(("127.0.0.1", s.port), timeout=bound(5))
        extra.settimeout(bound(5))
        eq(extra.recv(1), b"", "the third connection is closed")
        extra.close()
        after = val(scrape(p), "samsa_connections_refused_total", reason="limit")
        eq(after - before, 1.0, "refusals by max.connections")
        for c in held:
            c.close()
    finally:
        s.stop()


def raw_http(data):
    with socket.create_connection(("127.0.0.1", mport), timeout=bound(5)) as c:
        c.sendall(data)
        out = b""
        while True:
            b = c.recv(65536)
            if not b:
                return out
            out += b


@S.case
def bad_http_is_refused_and_served_after():
    since = srv.log_size()
    eq(raw_http(b"GARBAGE\r\n\r\n").split(b"\r\n")[0], b"HTTP/1.1 400 Bad Request", "garbage")
    srv.wait_log(r"samsa\.metrics\.listener: bad request from a client: malformed request line", since)
    eq(raw_http(b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n").split(b"\r\n")[0],
       b"HTTP/1.1 405 Method Not Allowed", "POST")
    try:
        urllib.request.urlopen("http://127.0.0.1:%d/nothing" % mport, timeout=bound(5))
        raise AssertionError("no 404")
    except urllib.error.HTTPError as e:
        eq(e.code, 404, "status of /nothing")
    head = raw_http(b"HEAD /metrics HTTP/1.0\r\n\r\n")
    check(head.endswith(b"\r\n\r\n") and b"Content-Length: " in head, "HEAD answer %r", head[:200])
    # a TLS client hello on the HTTP port
    eq(raw_http(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03").split(b"\r\n")[0],
       b"HTTP/1.1 400 Bad Request", "TLS hello")
    check(srv.alive(), "samsa died")
    scrape()


def start_fail(extra):
    ports = free_ports(2)
    d = os.path.join(WORK, "fail%d" % ports[0])
    argv = [SAMSA_BIN, "--override", "node.id=1", "--override", "process.roles=broker,controller",
            "--override", "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % tuple(ports),
            "--override", "controller.quorum.voters=1@127.0.0.1:%d" % ports[1],
            "--override", "log.dirs=%s" % d] + extra
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=bound(20))
    lines = [l for l in p.stderr.decode("utf-8", "replace").splitlines() if l.strip() and " INFO: " not in l]
    return p.returncode, lines


@S.case
def startup_errors_name_the_key():
    rc, lines = start_fail(["--override", "samsa.metrics.listener=127.0.0.1:%d" % mport])  # in use by srv
    eq(rc, 2, "exit status with a busy metrics port")
    eq(len(lines), 1, "error lines %r" % lines)
    check("samsa.metrics.listener: cannot listen on 127.0.0.1:%d: Address already in use" % mport in lines[0],
          "busy port line: %s", lines[0])
    rc, lines = start_fail(["--override", "samsa.metrics.listener=nonsense"])
    eq(rc, 2, "exit status with a malformed value")
    eq(len(lines), 1, "error lines %r" % lines)
    check("samsa.metrics.listener" in lines[0] and "nonsense" in lines[0], "malformed line: %s", lines[0])


if __name__ == "__main__":
    S.run(setup)
