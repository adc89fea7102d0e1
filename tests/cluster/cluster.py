"""Several samsa processes on loopback ports (or in network namespaces),
for the cluster tests: the interop harness's Server, with the roles,
listeners and voters of a multi-node cluster, formatted with one cluster
id, and helpers to find the active controller and to create and list
topics with a real client (confluent-kafka's AdminClient).

Every wait is bounded (harness.bound stretches the bounds for sanitizer
builds). Environment: as tests/interop/harness.py (SAMSA_BIN,
SAMSACTL_BIN, SAMSA_SANITIZED, INTEROP_WORK).
"""

import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "interop"))
import harness  # noqa: E402
from harness import Failure, Skip, bound, check, eq, free_ports, log  # noqa: E402,F401

SAMSA_BIN = harness.SAMSA_BIN
SAMSACTL_BIN = harness.SAMSACTL_BIN

# Quick failure detection, so a suite stays within its time budget:
# a broker is fenced 3 s after its last heartbeat.
FAST = {
    "broker.heartbeat.interval.ms": "300",
    "broker.session.timeout.ms": "3000",
    "auto.create.topics.enable": "false",
}


class Node(harness.Server):
    """One node of a cluster. host: the address it listens on and is
    reached at (loopback, or a veth address inside a namespace); netns:
    the network namespace it runs in (None: this one)."""

    def __init__(self, cluster, node_id, roles, overrides=None, host="127.0.0.1", netns=None):
        self.cluster = cluster
        self.node_id = node_id
        self.roles = roles
        self.host = host
        self.netns = netns
        ov = dict(FAST)
        ov.update(overrides or {})
        super().__init__(ov, name="node%d" % node_id, start=False)
        self.broker = "broker" in roles
        self.controller = "controller" in roles

    @property
    def bootstrap(self):
        return "%s:%d" % (self.host, self.port)

    @property
    def controller_address(self):
        return "%s:%d" % (self.host, self.cport)

    def argv(self):
        listeners = []
        if self.broker:
            listeners.append("PLAINTEXT://%s:%d" % (self.host, self.port))
        if self.controller:
            listeners.append("CONTROLLER://%s:%d" % (self.host, self.cport))
        a = [SAMSA_BIN,
             "--override", "node.id=%d" % self.node_id,
             "--override", "process.roles=%s" % ",".join(self.roles),
             "--override", "listeners=%s" % ",".join(listeners),
             "--override", "controller.listener.names=CONTROLLER",
             "--override", "controller.quorum.voters=%s" % self.cluster.voters(),
             "--override", "log.dirs=%s" % self.data]
        for k, v in self.overrides.items():
            a += ["--override", "%s=%s" % (k, v)]
        if self.netns:
            a = ["ip", "netns", "exec", self.netns] + a
        return a

    def format(self, cluster_id):
        argv = self.argv()
        i = argv.index(SAMSA_BIN)
        cmd = argv[:i + 1] + ["format", "--cluster-id", cluster_id] + argv[i + 1:]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        check(out.returncode == 0, "samsa format of node %d failed: %s", self.node_id, out.stderr.strip())

    def start(self, wait=False):
        """Starts the process; a node waits for its cluster, so readiness
        is the cluster's to check (Cluster.wait_ready)."""
        check(not self.alive(), "%s already running", self.name)
        self.starts += 1
        argv = self.argv()
        with open(self.log_path, "ab") as f:
            self.run_log_start = f.tell()
            f.write(("=== harness: start #%d: %s\n" % (self.starts, " ".join(argv))).encode())
        logf = open(self.log_path, "ab")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                                     cwd=self.dir)
        logf.close()
        with open(os.path.join(harness.WORK, "pids"), "a") as f:
            f.write("%d\n" % self.proc.pid)
        self._killed = False
        if wait:
            self.cluster.wait_ready()


def pause(nodes, limit=5.0):
    """SIGSTOP each node and wait (bounded) until every thread of each is
    stopped: the signal only marks the stop, and on a loaded machine a
    thread may still run for a moment (a follower answering one more
    fetch) after kill() returned."""
    for n in nodes:
        n.proc.send_signal(signal.SIGSTOP)
    deadline = time.monotonic() + bound(limit)
    for n in nodes:
        while True:
            states = []
            for t in os.listdir("/proc/%d/task" % n.proc.pid):
                try:
                    with open("/proc/%d/task/%s/stat" % (n.proc.pid, t)) as f:
                        states.append(f.read().rsplit(")", 1)[1].split()[0])
                except OSError:
                    pass  # a thread that ended
            if all(st in ("T", "t") for st in states):
                break
            check(time.monotonic() < deadline, "node %d not stopped within %.0fs (thread states %s)",
                  n.node_id, bound(limit), "".join(states))
            time.sleep(0.005)


def samsactl(*args, limit=20):
    out = subprocess.run([SAMSACTL_BIN] + list(args), capture_output=True, text=True, timeout=bound(limit))
    return out.returncode, out.stdout, out.stderr


class Cluster:
    """combined: n nodes with both roles (ids 1..n, all voters). split:
    n controllers (ids 1..n) and m brokers (ids n+1..n+m)."""

    def __init__(self, controllers=3, brokers=0, overrides=None, netns_for=None, hosts=None):
        self.nodes = []
        self.hosts = hosts or {}
        overrides = overrides or {}
        combined = brokers == 0
        for i in range(1, controllers + 1):
            roles = ["broker", "controller"] if combined else ["controller"]
            self.nodes.append(Node(self, i, roles, overrides, host=self.hosts.get(i, "127.0.0.1"),
                                   netns=(netns_for or {}).get(i)))
        for i in range(controllers + 1, controllers + brokers + 1):
            self.nodes.append(Node(self, i, ["broker"], overrides, host=self.hosts.get(i, "127.0.0.1"),
                                   netns=(netns_for or {}).get(i)))
        # The harness stops its servers in list order at the end: brokers
        # first (see stop()).
        harness._servers.sort(key=lambda s: getattr(s, "controller", False))
        rc, out, err = 0, subprocess.run([SAMSA_BIN, "random-uuid"], capture_output=True, text=True).stdout, ""
        self.cluster_id = out.strip()
        for n in self.nodes:
            n.format(self.cluster_id)

    def voters(self):
        return ",".join("%d@%s:%d" % (n.node_id, n.host, n.cport) for n in self.nodes if n.controller)

    def node(self, node_id):
        return [n for n in self.nodes if n.node_id == node_id][0]

    @property
    def brokers(self):
        return [n for n in self.nodes if n.broker]

    @property
    def controllers(self):
        return [n for n in self.nodes if n.controller]

    def start(self):
        for n in self.nodes:
            n.start()
        self.wait_ready()

    def quorum(self, via=None, limit=10.0):
        """(leader, epoch, high watermark) as the leader reports it, asked
        through the controllers' listeners (via: only those nodes)."""
        nodes = via or [n for n in self.controllers if n.alive() and not n.netns]
        addrs = ",".join(n.controller_address for n in nodes)
        deadline = time.monotonic() + bound(limit)
        last = ""
        while time.monotonic() < deadline:
            rc, out, err = samsactl("quorum", "status", "--bootstrap-controller", addrs, limit=5)
            if rc == 0:
                f = dict(re.findall(r"^(\w+):\s+(\S+)", out, re.M))
                return int(f["LeaderId"]), int(f["LeaderEpoch"]), int(f["HighWatermark"])
            last = (out + err).strip()
            time.sleep(0.1)
        raise Failure("no quorum leader answered within %.0fs: %s" % (bound(limit), last))

    def unfenced(self, via):
        """Broker ids the given broker's DescribeCluster lists."""
        rc, out, err = samsactl("--bootstrap-server", via.bootstrap, "cluster", "describe", limit=5)
        if rc != 0:
            return None
        return sorted(int(l.split()[0]) for l in out.splitlines() if l.endswith(" unfenced"))

    def wait_ready(self, limit=30.0, brokers=None):
        """A leader, and every running broker listing every running broker."""
        want = sorted(n.node_id for n in (brokers or self.brokers) if n.alive())
        deadline = time.monotonic() + bound(limit)
        last = None
        while time.monotonic() < deadline:
            for n in self.nodes:
                if n.proc is not None and n.proc.poll() is not None and not getattr(n, "_killed", False):
                    raise Failure("node %d exited with status %s; log tail:\n%s"
                                  % (n.node_id, n.proc.returncode, n.log_tail(30)))
            ok = True
            for b in (brokers or self.brokers):
                if not b.alive() or b.netns:
                    continue
                got = self.unfenced(b)
                last = (b.node_id, got)
                if got != want:
                    ok = False
                    break
            if ok:
                return
            time.sleep(0.1)
        raise Failure("cluster not ready within %.0fs (brokers %s; last seen %s); logs:\n%s"
                      % (bound(limit), want, last, "\n".join(n.log_tail(8) for n in self.nodes)))

    def stop(self):
        # Brokers first, as Kafka's operators do: a broker's SIGTERM waits
        # for the active controller to approve its controlled shutdown.
        for n in sorted(self.nodes, key=lambda n: n.controller):
            if n.alive():
                n.stop()


# ---------------------------------------------------------------- clients

def admin(node):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": node.bootstrap, "socket.timeout.ms": 10000})


def create_topics(node, names, partitions=1, rf=1, limit=30.0, retries=True, assignment=None):
    """Creates the topics through node with confluent-kafka; retries what
    fails with a retriable error (NOT_CONTROLLER, timeouts) until the
    bound. assignment: replica ids per partition (the first leads), in
    place of partitions and rf. Returns the set of names created (or
    already there)."""
    from confluent_kafka.admin import NewTopic
    from confluent_kafka import KafkaException
    a = admin(node)
    todo = list(names)
    done = set()
    deadline = time.monotonic() + bound(limit)
    last = {}
    while todo and time.monotonic() < deadline:
        fs = a.create_topics([NewTopic(t, len(assignment), replica_assignment=assignment) if assignment
                              else NewTopic(t, partitions, rf) for t in todo], operation_timeout=10,
                             request_timeout=15)
        again = []
        for t, f in fs.items():
            try:
                f.result()
                done.add(t)
            except KafkaException as e:
                err = e.args[0]
                if err.name() == "TOPIC_ALREADY_EXISTS":
                    done.add(t)
                elif retries and (err.retriable() or err.name() in ("NOT_CONTROLLER", "REQUEST_TIMED_OUT",
                                                                      "_TIMED_OUT", "_TRANSPORT")):
                    again.append(t)
                    last[t] = err.name()
                else:
                    raise Failure("creating %s through node %d: %s" % (t, node.node_id, err))
        todo = again
        if todo:
            time.sleep(0.2)
    check(not todo, "%d topic(s) not created through node %d within %.0fs (last errors %s)", len(todo),
          node.node_id, bound(limit), dict(list(last.items())[:3]))
    return done


def topics(node):
    md = admin(node).list_topics(timeout=10)
    return set(t for t in md.topics if not t.startswith("__"))


def wait_topics(node, want, limit=15.0):
    """Until node's Metadata lists every topic in want."""
    deadline = time.monotonic() + bound(limit)
    got = set()
    while time.monotonic() < deadline:
        try:
            got = topics(node)
        except Exception:  # noqa: BLE001  (a broker starting up)
            got = set()
        if set(want) <= got:
            return got
        time.sleep(0.1)
    missing = sorted(set(want) - got)
    raise Failure("node %d lists %d of %d topics after %.0fs (missing %s...)"
                  % (node.node_id, len(set(want) & got), len(want), bound(limit), missing[:5]))


# ---------------------------------------------------------------- partitions

def partitions_state(node, topic):
    """{partition: (leader, sorted ISR)} from node's Metadata."""
    md = admin(node).list_topics(topic, timeout=10)
    ps = md.topics[topic].partitions
    return {i: (ps[i].leader, sorted(ps[i].isrs)) for i in ps}


def wait_partitions(cl, topic, pred, what, limit=25.0):
    """Asks every live node until pred({partition: (leader, isr)}) holds;
    returns that state. Fails after the bound."""
    deadline = time.monotonic() + bound(limit)
    st = None
    while time.monotonic() < deadline:
        for n in cl.nodes:
            if not n.alive():
                continue
            try:
                st = partitions_state(n, topic)
                if st and pred(st):
                    return st
            except Exception:  # noqa: BLE001  (a node starting or stopping)
                pass
        time.sleep(0.1)
    raise Failure("%s: not reached within %.0fs (partition: (leader, isr) = %s)" % (what, bound(limit), st))


def call_leader(cl, topic, call, done, what, limit=20.0, partition=0):
    """call(conn) on a connection to the partition's live leader until
    done(answer) holds (retrying transport errors and answers that are not
    done, e.g. NOT_LEADER while leadership settles); returns the answer."""
    import kwire
    deadline = time.monotonic() + bound(limit)
    last = None
    while time.monotonic() < deadline:
        st = wait_partitions(cl, topic, lambda s: s[partition][0] >= 0 and cl.node(s[partition][0]).alive(),
                             "a live leader of %s-%d" % (topic, partition))
        try:
            c = kwire.Conn(cl.node(st[partition][0]).port)
            try:
                r = call(c)
            finally:
                c.close()
        except (OSError, kwire.Closed) as e:
            last = repr(e)
            time.sleep(0.2)
            continue
        if done(r):
            return r
        last = r
        time.sleep(0.2)
    raise Failure("%s: not done within %.0fs: %s" % (what, bound(limit), last))
