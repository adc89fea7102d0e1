"""A controller cut off in its own network namespace: a 3-node combined
cluster where node 3 runs in a namespace of its own, reached through a
veth pair. Node 3 is made the leader, then its link goes down: it cannot
commit (a CreateTopics sent to it never succeeds and never shows up),
the other two elect a leader and go on; when the link comes back node 3
follows that leader and catches up, without bumping the epoch (pre-vote
keeps an isolated node from disrupting the quorum when it returns).

Needs root and `ip netns` (iproute2); prints SKIP otherwise."""
# limit: 150

import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cluster as C  # noqa: E402
from cluster import Failure, Skip, check, eq, log  # noqa: E402,F401

S = C.harness.Suite("30_netns", case_limit=100)
NS = "samsa-ct-%d" % os.getpid()
VROOT, VNS = "sct%d-a" % (os.getpid() % 100000), "sct%d-b" % (os.getpid() % 100000)
SUBNET = 10 + os.getpid() % 200
ROOT_IP, NS_IP = "10.231.%d.1" % SUBNET, "10.231.%d.2" % SUBNET
CL = None
have_ns = False


def sh(*args, check_rc=True):
    out = subprocess.run(list(args), capture_output=True, text=True, timeout=20)
    if check_rc and out.returncode != 0:
        raise Failure("%s: %s" % (" ".join(args), out.stderr.strip()))
    return out


def netns_up():
    global have_ns
    if os.geteuid() != 0:
        raise Skip("not root: cannot create network namespaces")
    try:
        r = sh("ip", "netns", "add", NS, check_rc=False)
    except FileNotFoundError:
        raise Skip("no ip(8) (iproute2)")
    if r.returncode != 0:
        raise Skip("cannot create a network namespace: %s" % r.stderr.strip())
    have_ns = True
    sh("ip", "link", "add", VROOT, "type", "veth", "peer", "name", VNS)
    sh("ip", "link", "set", VNS, "netns", NS)
    sh("ip", "addr", "add", ROOT_IP + "/30", "dev", VROOT)
    sh("ip", "link", "set", VROOT, "up")
    sh("ip", "netns", "exec", NS, "ip", "addr", "add", NS_IP + "/30", "dev", VNS)
    sh("ip", "netns", "exec", NS, "ip", "link", "set", VNS, "up")
    sh("ip", "netns", "exec", NS, "ip", "link", "set", "lo", "up")


def netns_down():
    if have_ns:
        sh("ip", "link", "del", VROOT, check_rc=False)
        sh("ip", "netns", "del", NS, check_rc=False)


def link(up):
    sh("ip", "netns", "exec", NS, "ip", "link", "set", VNS, "up" if up else "down")


def setup():
    global CL
    CL = C.Cluster(3, hosts={1: ROOT_IP, 2: ROOT_IP, 3: NS_IP}, netns_for={3: NS})
    CL.start()


def make_node3_leader():
    """Node 3 wins the next election by construction, not by chance: the
    other follower is stopped (SIGSTOP) while the leader and node 3
    commit two more changes, so that follower's log is behind node 3's
    (only two: the first still reaches the stopped node, as the answer
    to the fetch it had parked at the leader, waiting in its socket).
    Then the leader dies (SIGKILL) and the follower resumes: node 3 is
    the only voter whose log is up to date, so it is the only one the
    other can grant a (pre-)vote to."""
    for attempt in range(3):
        leader, epoch, hw = CL.quorum(via=CL.controllers)
        if leader == 3:
            return epoch
        lead = CL.node(leader)
        other = CL.node(3 - leader)  # the follower that is neither the leader nor node 3
        os.kill(other.proc.pid, signal.SIGSTOP)
        try:
            C.create_topics(lead, ["ahead-%d-a" % attempt])
            C.create_topics(lead, ["ahead-%d-b" % attempt])
            lead.kill9()
        finally:
            os.kill(other.proc.pid, signal.SIGCONT)
        CL.quorum(via=[CL.node(3), other], limit=20)
        lead.start()
        CL.wait_ready()
    raise Failure("node 3 never became the leader")


@S.case
def cut_off_leader_cannot_commit_and_rejoins_cleanly():
    C.create_topics(CL.node(1), ["before-%d" % i for i in range(5)])
    epoch3 = make_node3_leader()
    log("node 3 leads in epoch %d; cutting its link", epoch3)
    link(False)
    t0 = time.monotonic()
    # The stale leader takes the request but cannot commit it.
    # One CreateTopics with a 3 s timeout (confluent-kafka inside the
    # namespace): the stale leader takes it but cannot commit it, and
    # once it has resigned it cannot forward it anywhere either.
    prog = ("from confluent_kafka.admin import AdminClient, NewTopic\n"
            "a = AdminClient({'bootstrap.servers': '%s'})\n"
            "f = a.create_topics([NewTopic('cutoff', 1, 1)], operation_timeout=3, request_timeout=6)['cutoff']\n"
            "try:\n    f.result(); print('created')\nexcept Exception as e:\n    print('refused:', e)\n"
            % CL.node(3).bootstrap)
    r = subprocess.run(["ip", "netns", "exec", NS, "/usr/bin/python3", "-c", prog], capture_output=True,
                       text=True, timeout=C.bound(30))
    said = r.stdout.strip()
    check(said.startswith("refused"), "a CreateTopics on the cut-off node: %s %s", said, r.stderr[-500:])
    log("CreateTopics on the cut-off node after %.1fs: %s", time.monotonic() - t0, said)
    majority = [CL.node(1), CL.node(2)]
    leader, epoch, hw = CL.quorum(via=majority, limit=20)
    check(leader in (1, 2) and epoch > epoch3, "majority side: leader %d epoch %d", leader, epoch)
    C.create_topics(CL.node(1), ["during-%d" % i for i in range(5)])
    check("cutoff" not in C.topics(CL.node(2)), "the cut-off node's change was committed")
    # Node 3 alone: not a leader any more (it resigned when it stopped
    # hearing from a majority), and it never moved the epoch on.
    r = subprocess.run(["ip", "netns", "exec", NS, C.SAMSACTL_BIN, "quorum", "status", "--bootstrap-controller",
                        CL.node(3).controller_address], capture_output=True, text=True, timeout=C.bound(20))
    check(r.returncode != 0, "the cut-off node still says it leads: %s", r.stdout)
    # whatever it still held for that request has expired by now
    time.sleep(max(0.0, 6.5 - (time.monotonic() - t0)))
    link(True)
    C.wait_topics(CL.node(3), ["before-%d" % i for i in range(5)] + ["during-%d" % i for i in range(5)], limit=30)
    l2, e2, hw2 = CL.quorum(via=CL.controllers)
    eq((l2, e2), (leader, epoch), "leader and epoch after node 3 came back (no disruption)")
    check("cutoff" not in C.topics(CL.node(3)), "the uncommitted topic survived on node 3")
    CL.wait_ready()
    log("node 3 rejoined: follows leader %d in epoch %d", l2, e2)


try:
    netns_up()
except Skip as e:
    netns_down()
    print("  SKIP cut_off_leader_cannot_commit_and_rejoins_cleanly (0.0s): %s" % e, flush=True)
    sys.exit(77)
except Exception:
    netns_down()
    raise

# Suite.run ends the process with os._exit: the namespace goes first.
_finish = S._finish


def _finish_and_clean(code):
    for s in C.harness._servers:
        if s.alive():
            s.proc.kill()
    netns_down()
    _finish(code)


S._finish = _finish_and_clean
S.run(setup)
