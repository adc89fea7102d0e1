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
- Startup: group.consumer.assignors naming an assignor that is neither
  built in nor offered by a loaded plugin (here: plugins= leaves the
  module out) stops samsa with one line, as Kafka refuses a class it
  cannot load."""
# limit: 120
import json
import os
import subprocess
import sys
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


@suite.case
def startup_refuses_missing_assignor():
    need_module()
    s = h.Server({"group.consumer.assignors": "uniform,roundrobin", "plugins": "codec-gzip"},
                 name="rr-missing", start=False)
    try:
        p = subprocess.run(s.argv(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=h.bound(20))
    except subprocess.TimeoutExpired:
        raise h.Failure("samsa did not exit (it should refuse group.consumer.assignors)")
    out = p.stdout.decode("utf-8", "replace").splitlines()
    h.eq(p.returncode, 2, "exit status; output:\n%s\n" % "\n".join(out))
    h.eq([l for l in out if "group.consumer.assignors" in l],
         ["samsa: config 'group.consumer.assignors': no assignor 'roundrobin' (built in: uniform, range; others "
          "come from a loaded plugin, see samsa --list-plugins)"], "the refusal line")


if __name__ == "__main__":
    suite.run(setup)
