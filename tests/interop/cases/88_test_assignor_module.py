"""A third-party server-side assignor (KIP-848) loaded as a module and
chosen by a real client: the example module assignor-roundrobin
(modules/assignor-roundrobin) offers "roundrobin" (members sorted by
member id, partitions dealt in turn), listed in group.consumer.assignors.

- @platformatic/kafka 1.35.0 members (groupProtocol 'consumer', their
  groupRemoteAssignor option: ConsumerGroupHeartbeat's ServerAssignor)
  naming "roundrobin": ConsumerGroupDescribe reports the group's
  assignor as "roundrobin", and every member, in the coordinator's view
  and in its own, owns exactly the partitions p with p % n == its rank
  by member id (three members over 6 partitions, then two after one
  leaves).
- A raw ConsumerGroupHeartbeat naming an assignor nobody offers
  ("sticky") is UNSUPPORTED_ASSIGNOR (112), as Kafka answers.
- Startup: group.consumer.assignors naming an assignor no loaded plugin
  offers (plugins= leaving the module out; a plugin.dir without
  assignor-uniform and assignor-range, as a site build without them)
  stops samsa with one line and exit status 2, as Kafka refuses a class
  it cannot load; such a build starts with group.consumer.assignors
  naming what it has (roundrobin), or with the key unset."""
# limit: 120
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness as h  # noqa: E402
import kgroups as kg  # noqa: E402
import kwire  # noqa: E402

suite = h.Suite("88_test_assignor_module", case_limit=90)
srv = None
JS = os.path.join(h.HERE, "js", "groups_kip848.mjs")
BUILD = os.path.dirname(os.path.abspath(h.SAMSA_BIN))
MODULE = os.path.join(BUILD, "modules", ".libs", "assignor-roundrobin.so")
UNSUPPORTED_ASSIGNOR = 112


def setup():
    global srv
    if not os.path.exists(MODULE):
        return
    srv = h.Server({
        "group.consumer.assignors": "uniform,range,roundrobin",
        "offsets.topic.num.partitions": "1",
        "group.consumer.heartbeat.interval.ms": "300",
        "group.consumer.min.heartbeat.interval.ms": "300",
        "group.consumer.session.timeout.ms": "6000",
        "group.consumer.min.session.timeout.ms": "6000",
    })
    kg.coordinator_port(srv.port, "warm-up", limit=h.bound(10))


def need_module():
    if srv is None:
        raise h.Skip("module assignor-roundrobin not built as a shared object in this build")


def describe(group):
    c = kwire.Conn(srv.port)
    try:
        return kg.consumer_group_describe(c, group)
    finally:
        c.close()


class Member:
    """A @platformatic/kafka member (js/groups_kip848.mjs member) naming
    a server assignor; a thread keeps its latest assignment event."""

    def __init__(self, topic, group, name, assignor):
        argv = [h.NODE, JS, "member", srv.bootstrap,
                json.dumps({"topic": topic, "group": group, "clientId": name, "limitMs": 30000,
                            "assignor": assignor})]
        self.name = name
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lock = threading.Lock()
        self.member_id, self.assignment, self.closed, self.errors = None, None, None, []
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                if ev.get("event") == "assignment":
                    self.member_id, self.assignment = ev["memberId"], ev["assignment"]
                elif ev.get("event") == "error":
                    self.errors.append(ev["error"])
                elif ev.get("event") == "closed":
                    self.closed = ev

    def close(self):
        try:
            self.proc.stdin.write(b"close\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        try:
            self.proc.wait(timeout=h.bound(20))
        except subprocess.TimeoutExpired:
            self.kill()
            raise h.Failure("member %s did not close" % self.name)
        self.t.join(timeout=h.bound(5))
        h.check(self.closed and self.closed.get("ok"), "member %s closed: %s; stderr: %s", self.name, self.closed,
                self.proc.stderr.read().decode("utf-8", "replace")[-2000:])

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def roundrobin(member_ids, nparts):
    """What the module computes for one topic: by member id, in turn."""
    order = sorted(member_ids)
    return {m: [p for p in range(nparts) if p % len(order) == i] for i, m in enumerate(order)}


def settled(group, topic, members, nparts, limit=30.0):
    deadline = time.monotonic() + h.bound(limit)
    last = None
    while time.monotonic() < deadline:
        d = describe(group)
        mine = {}
        for m in members:
            with m.lock:
                mine[m.member_id] = (m.assignment or {}).get(topic, [])
        want = roundrobin([m["member_id"] for m in d["members"]], nparts)
        theirs = {m["member_id"]: m["assignment"].get(topic, []) for m in d["members"]}
        last = {"state": d["state"], "assignor": d["assignor"], "want": want, "coordinator": theirs,
                "clients": mine}
        if (d["error_code"] == 0 and d["state"] == "Stable" and len(d["members"]) == len(members) and
                d["assignor"] == "roundrobin" and theirs == want and mine == want and
                all(m["target"] == m["assignment"] for m in d["members"])):
            return want
        time.sleep(0.1)
    raise h.Failure("group %s: not settled on roundrobin within %.0fs; last: %s" % (group, h.bound(limit),
                                                                                     h.short(last, 3000)))


@suite.case
def client_chooses_module_assignor():
    need_module()
    topic, group = "rr-topic", "rr-group"
    h.ck_create_topic(srv.bootstrap, topic, 6, 1)
    members = []
    try:
        for i in range(3):
            members.append(Member(topic, group, "rr-%d" % i, "roundrobin"))
        want = settled(group, topic, members, 6)
        h.eq(sorted(len(v) for v in want.values()), [2, 2, 2], "partitions per member")
        gone = members.pop(1)
        gone.close()
        settled(group, topic, members, 6)
        for m in members:
            h.eq(m.errors, [], "errors of member %s" % m.name)
    finally:
        for m in members:
            m.kill()


@suite.case
def unknown_assignor():
    need_module()
    h.ck_create_topic(srv.bootstrap, "rr-raw", 2, 1)
    c = kwire.Conn(srv.port)
    try:
        r = kg.consumer_heartbeat(c, "rr-raw-g", "", 0, topics=["rr-raw"], owned=[], assignor="sticky")
    finally:
        c.close()
    h.eq(r["error_code"], UNSUPPORTED_ASSIGNOR, "ServerAssignor sticky")


def plugin_dir(names):
    """A plugin.dir holding only the named modules of this build (as
    symlinks), i.e. a site build without the others."""
    d = tempfile.mkdtemp(prefix="asg-plugins-", dir=h.WORK)
    for n in names:
        os.symlink(os.path.join(BUILD, "modules", ".libs", n + ".so"), os.path.join(d, n + ".so"))
    return d


def start_fails(overrides, name):
    s = h.Server(overrides, name=name, start=False)
    try:
        p = subprocess.run(s.argv(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=h.bound(20))
    except subprocess.TimeoutExpired:
        raise h.Failure("samsa did not exit (it should refuse group.consumer.assignors)")
    out = p.stdout.decode("utf-8", "replace").splitlines()
    h.eq(p.returncode, 2, "exit status; output:\n%s\n" % "\n".join(out))
    return [l for l in out if "group.consumer.assignors" in l]


def refusal(name):
    return ("samsa: config 'group.consumer.assignors': no assignor '%s' (no loaded plugin offers it; uniform and "
            "range come from the modules assignor-uniform and assignor-range, see samsa --list-plugins)" % name)


@suite.case
def startup_refuses_missing_assignor():
    """plugins= leaving the example module out: naming roundrobin refuses."""
    need_module()
    got = start_fails({"group.consumer.assignors": "uniform,roundrobin", "plugins": "assignor-uniform"},
                      "rr-missing")
    h.eq(got, [refusal("roundrobin")], "the refusal line")


@suite.case
def build_without_uniform_and_range():
    """A site build without assignor-uniform and assignor-range (its
    plugin.dir lacks them): naming one refuses to start with one line and
    exit status 2; with group.consumer.assignors=roundrobin it starts and
    a KIP-848 member gets roundrobin's assignment; unset, it starts too,
    and a join without ServerAssignor is UNSUPPORTED_ASSIGNOR (no default
    assignor is loaded)."""
    need_module()
    d = plugin_dir(["codec-gzip", "assignor-roundrobin"])
    h.eq(start_fails({"plugin.dir": d, "group.consumer.assignors": "uniform,range"}, "no-asg-1"),
         [refusal("uniform")], "the refusal line (uniform)")
    h.eq(start_fails({"plugin.dir": d, "group.consumer.assignors": "roundrobin,range"}, "no-asg-2"),
         [refusal("range")], "the refusal line (range)")
    s = h.Server({"plugin.dir": d, "group.consumer.assignors": "roundrobin", "offsets.topic.num.partitions": "1"},
                 name="no-asg-rr")
    try:
        listing = h.run([h.SAMSA_BIN, "--override", "plugin.dir=" + d, "--list-plugins"], limit=20)
        h.eq(sorted(l.split()[0] for l in listing.stdout.decode().splitlines()[1:]),
             ["assignor-roundrobin", "codec-gzip"], "--list-plugins of that plugin.dir")
        h.ck_create_topic(s.bootstrap, "nrr", 3, 1)
        port = kg.coordinator_port(s.port, "nrr-g", limit=h.bound(10))[2]
        r = join(port, "nrr-g", "nrr")
        c = kwire.Conn(port)
        try:
            h.eq(r["error_code"], 0, "join (default assignor roundrobin): %s" % r.get("error_message"))
            mid = r["member_id"]
            deadline = time.monotonic() + h.bound(10)
            while sum(len(v) for v in (r["assignment"] or {}).values()) < 3 and time.monotonic() < deadline:
                time.sleep(0.2)
                r = kg.consumer_heartbeat(c, "nrr-g", mid, r["member_epoch"], owned=None)
                h.eq(r["error_code"], 0, "heartbeat")
            h.eq(sorted(p for v in (r["assignment"] or {}).values() for p in v), [0, 1, 2], "the lone member's partitions")
        finally:
            c.close()
        h.eq(describe_at(port, "nrr-g")["assignor"], "roundrobin", "the group's assignor")
    finally:
        s.stop()
    s = h.Server({"plugin.dir": d, "offsets.topic.num.partitions": "1"}, name="no-asg-unset")
    try:
        h.ck_create_topic(s.bootstrap, "nun", 1, 1)
        port = kg.coordinator_port(s.port, "nun-g", limit=h.bound(10))[2]
        r = join(port, "nun-g", "nun")
        h.eq(r["error_code"], UNSUPPORTED_ASSIGNOR, "join without ServerAssignor, no assignor loaded")
    finally:
        s.stop()


def join(port, group, topic):
    """A raw KIP-848 join, again while the coordinator loads (14)."""
    deadline = time.monotonic() + h.bound(10)
    while True:
        c = kwire.Conn(port)
        try:
            r = kg.consumer_heartbeat(c, group, "", 0, topics=[topic], owned=[])
        finally:
            c.close()
        if r["error_code"] != 14 or time.monotonic() > deadline:
            return r
        time.sleep(0.1)


def describe_at(port, group):
    c = kwire.Conn(port)
    try:
        return kg.consumer_group_describe(c, group)
    finally:
        c.close()


if __name__ == "__main__":
    suite.run(setup)
