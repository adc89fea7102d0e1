"""samsactl groups against a real consumer group (confluent-kafka 1.7 /
librdkafka 2.0.2): list and describe while two members consume (exact
member count, client ids, assignments, committed offsets, log end
offsets and lag), the refusals Kafka gives while the group is active
(reset-offsets and delete: NON_EMPTY_GROUP), reset-offsets as a dry run
and with --execute once the members are gone, a new member resuming
from exactly the reset offsets, delete (then describe answers
GROUP_ID_NOT_FOUND), and usage errors. Cross-checked with raw
OffsetFetch and DescribeGroups (kgroups.py)."""
# limit: 240
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness as h  # noqa: E402
import kgroups as kg  # noqa: E402
import kwire  # noqa: E402

suite = h.Suite("92_test_samsactl_groups", case_limit=90)
srv = None
TOPIC, GROUP, SIMPLE = "sg", "ctl-g", "aaa-simple"
EARLY = 10           # records per partition the first members commit
LATE = {0: 5, 1: 3}  # records produced afterwards, never committed
state = {}           # what a case leaves for the next ones


def setup():
    global srv
    h.check(os.access(h.SAMSACTL_BIN, os.X_OK), "no samsactl at %s", h.SAMSACTL_BIN)
    srv = h.Server({"group.initial.rebalance.delay.ms": "200", "offsets.topic.num.partitions": "5"})
    h.ck_create_topic(srv.bootstrap, TOPIC, 3, 1)


def ctl(*args, rc=0, limit=40):
    """Runs samsactl groups ARGS; checks the exit status (rc None: any)."""
    argv = [h.SAMSACTL_BIN, "--bootstrap-server", srv.bootstrap, "groups"] + list(args)
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=h.bound(limit))
    except subprocess.TimeoutExpired:
        raise h.Failure("samsactl groups %s timed out" % " ".join(args))
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    if rc is not None and p.returncode != rc:
        raise h.Failure("samsactl groups %s exited %d (want %d); stdout:\n%s\nstderr:\n%s"
                        % (" ".join(args), p.returncode, rc, out[-2000:], err[-2000:]))
    return out, err


def rows(text):
    """A table's lines split into words (header first)."""
    return [l.split() for l in text.splitlines() if l.strip()]


def describe(*extra):
    """describe's sections: {"state": [...], "members": [...] or the
    no-members line, "offsets": [...]}, each a list of rows without the
    header."""
    out, _ = ctl("describe", "--group", GROUP, *extra)
    got = {}
    for sec in out.strip("\n").split("\n\n"):
        t = rows(sec)
        head = " ".join(t[0])
        if head.startswith("GROUP COORDINATOR"):
            got["state"] = t[1:]
        elif head.startswith("GROUP MEMBER-ID"):
            got["members"] = t[1:]
        elif head.startswith("GROUP TOPIC PARTITION CURRENT-OFFSET"):
            got["offsets"] = t[1:]
        elif sec.strip() == "Consumer group '%s' has no active members." % GROUP:
            got["members"] = "none"
        else:
            raise h.Failure("describe printed an unknown section:\n%s" % sec)
    return got, out


def wait_state(want, limit=20.0):
    deadline = time.monotonic() + h.bound(limit)
    while True:
        got, out = describe("--state")
        st = got["state"][0][4]
        if st == want:
            return got
        if time.monotonic() > deadline:
            raise h.Failure("group state %s, want %s; describe:\n%s" % (st, want, out))
        time.sleep(0.1)


def committed(group=GROUP):
    """{partition: offset} from a raw OffsetFetch v1 (-1: none)."""
    def fetch():
        c = kwire.Conn(srv.port)
        try:
            _, offs = kg.offset_fetch(c, group, {TOPIC: [0, 1, 2]})
        finally:
            c.close()
        return offs[(TOPIC, 0)][2], offs
    err, offs = kg.until_loaded(fetch, limit=h.bound(10))
    h.eq(err, 0, "OffsetFetch error")
    return {p: offs[(TOPIC, p)][0] for p in range(3)}


def produce(per_partition, prefix):
    from confluent_kafka import Producer
    p = Producer(h.ck_conf(srv.bootstrap, **{"linger.ms": 2, "acks": "all"}))
    for part, n in sorted(per_partition.items()):
        for i in range(n):
            p.produce(TOPIC, value=b"%s-%d-%d" % (prefix, part, i), partition=part)
    h.check(p.flush(h.bound(20)) == 0, "producer did not flush")


def consumer_conf(client_id):
    return h.ck_conf(srv.bootstrap, **{
        "group.id": GROUP, "client.id": client_id, "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "session.timeout.ms": 6000, "heartbeat.interval.ms": 300,
        "enable.partition.eof": False, "fetch.wait.max.ms": 100, "topic.metadata.refresh.interval.ms": 2000})


class Member:
    """A confluent-kafka group member in its own thread: reads everything
    and, with commit, commits (synchronously) the records whose value
    starts with b"early", so the committed offsets are known exactly."""

    def __init__(self, client_id, commit=True):
        from confluent_kafka import Consumer
        self.client_id = client_id
        self.commit = commit
        self.lock = threading.Lock()
        self.assigned = set()
        self.committed = {}  # partition -> offset committed
        self.first = {}      # partition -> first offset read
        self.errors = []
        self.stop_flag = False
        self.closed = False
        self.c = Consumer(consumer_conf(client_id))
        self.c.subscribe([TOPIC], on_assign=self.on_assign, on_revoke=self.on_revoke)
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def on_assign(self, consumer, parts):
        with self.lock:
            self.assigned = {p.partition for p in parts}

    def on_revoke(self, consumer, parts):
        with self.lock:
            self.assigned = set()

    def run(self):
        try:
            while not self.stop_flag:
                m = self.c.poll(0.1)
                if m is None:
                    continue
                if m.error():
                    self.errors.append(str(m.error()))
                    continue
                with self.lock:
                    self.first.setdefault(m.partition(), m.offset())
                if self.commit and m.value().startswith(b"early"):
                    try:
                        self.c.commit(message=m, asynchronous=False)
                        with self.lock:
                            self.committed[m.partition()] = m.offset() + 1
                    except Exception as e:  # noqa: BLE001
                        self.errors.append("commit %d@%d: %s" % (m.partition(), m.offset(), e))
        finally:
            self.c.close()  # LeaveGroup
            self.closed = True

    def stop(self):
        self.stop_flag = True
        self.t.join(h.bound(20))
        h.check(self.closed, "%s did not close", self.client_id)


def settle(members, limit=40.0):
    """Waits until the members' assignments split {0,1,2}, each member
    with some, unchanged a moment later."""
    deadline = time.monotonic() + h.bound(limit)
    last = None
    while time.monotonic() < deadline:
        sets = [set(m.assigned) for m in members]
        if set().union(*sets) == {0, 1, 2} and sum(map(len, sets)) == 3 and all(sets):
            time.sleep(0.5)
            if [set(m.assigned) for m in members] == sets:
                return sets
        last = sets
        time.sleep(0.05)
    raise h.Failure("assignments never settled: %s" % last)


def assignment_text(parts):
    return "%s(%s)" % (TOPIC, ",".join(str(p) for p in sorted(parts)))


@suite.case(limit=150)
def list_and_describe_live_group():
    produce({0: EARLY, 1: EARLY, 2: EARLY}, b"early")
    # a group of offsets only (no members, protocol type ""), to be listed first
    c = kwire.Conn(srv.port)
    try:
        kg.coordinator_port(srv.port, SIMPLE, limit=h.bound(10))
        _, res = kg.until_loaded(lambda: (lambda r: (r[(TOPIC, 0)], r))(
            kg.offset_commit(c, SIMPLE, {TOPIC: [(0, 3, "")]})), limit=h.bound(10))
        h.eq(res, {(TOPIC, 0): 0}, "manual commit for %s" % SIMPLE)
    finally:
        c.close()
    members = [Member("ctl-a"), Member("ctl-b")]
    try:
        sets = settle(members)
        deadline = time.monotonic() + h.bound(30)
        while True:
            done = {}
            for m in members:
                with m.lock:
                    for p, o in m.committed.items():
                        done[p] = max(done.get(p, 0), o)
            if done == {0: EARLY, 1: EARLY, 2: EARLY}:
                break
            h.check(time.monotonic() < deadline, "members committed only %s", done)
            time.sleep(0.05)
        produce(LATE, b"late")
        h.eq(committed(), {0: EARLY, 1: EARLY, 2: EARLY}, "committed offsets (raw OffsetFetch)")
        wait_state("Stable")

        out, _ = ctl("list")
        h.eq(rows(out), [["GROUP", "STATE", "PROTOCOL-TYPE"], [SIMPLE, "Empty", "-"], [GROUP, "Stable", "consumer"]],
             "groups list")

        got, text = describe()
        h.log("describe of the live group:\n    %s", text.replace("\n", "\n    "))
        h.eq(got["state"], [[GROUP, "127.0.0.1:%d" % srv.port, "(1)", "range", "Stable", "2"]],
             "state section:\n" + text)
        by_client = {r[2]: r for r in got["members"]}
        h.eq(sorted(by_client), ["ctl-a", "ctl-b"], "members' client ids:\n" + text)
        ids = {}
        for m, mine in zip(members, sets):
            r = by_client[m.client_id]
            h.check(r[1].startswith(m.client_id + "-"), "member id %r is librdkafka's client id + uuid", r[1])
            h.eq(r[3:], ["/127.0.0.1", str(len(mine)), assignment_text(mine)], "member %s" % m.client_id)
            ids[m.client_id] = r[1]
        owner = {p: m.client_id for m, mine in zip(members, sets) for p in mine}
        # raw DescribeGroups agrees on the member ids
        c = kwire.Conn(srv.port)
        try:
            raw = kg.describe_groups(c, [GROUP])[0]
        finally:
            c.close()
        h.eq(sorted(x["member_id"] for x in raw["members"]), sorted(ids.values()), "member ids (raw DescribeGroups)")
        want = []
        for p in range(3):
            end = EARLY + LATE.get(p, 0)
            want.append([GROUP, TOPIC, str(p), str(EARLY), str(end), str(end - EARLY), ids[owner[p]], "/127.0.0.1",
                         owner[p]])
        h.eq(got["offsets"], want, "offsets section:\n" + text)

        # sections one at a time, as Kafka's --state/--members/--offsets
        for opt, key in (("--state", "state"), ("--members", "members"), ("--offsets", "offsets")):
            one, _ = describe(opt)
            h.eq(list(one), [key], "sections printed for %s" % opt)
            h.eq(one[key], got[key], "%s section alone" % opt)

        # an active group is neither reset nor deleted
        out, err = ctl("reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-earliest", "--execute", rc=1)
        h.eq(err, "Error: NON_EMPTY_GROUP: Assignments can only be reset if the group '%s' is inactive, but the "
                  "current state is Stable.\n" % GROUP, "reset of a Stable group")
        h.eq(out, "", "nothing printed on stdout for the refused reset")
        out, err = ctl("delete", "--group", GROUP, rc=1)
        h.eq(err, "Error: NON_EMPTY_GROUP: Group '%s' could not be deleted due to: The group is not empty.\n" % GROUP,
             "delete of a Stable group")
        h.eq(committed(), {0: EARLY, 1: EARLY, 2: EARLY}, "committed offsets after the refusals")
    finally:
        for m in members:
            if not m.closed:
                m.stop()
    h.eq(members[0].errors + members[1].errors, [], "consumer errors")

    got, text = describe()
    h.log("describe after the members left:\n    %s", text.replace("\n", "\n    "))
    h.eq(got["state"][0][4:], ["Empty", "0"], "state after the members left:\n" + text)
    h.eq(got["members"], "none", "no active members:\n" + text)
    h.eq(got["offsets"], [[GROUP, TOPIC, str(p), str(EARLY), str(EARLY + LATE.get(p, 0)), str(LATE.get(p, 0)),
                           "-", "-", "-"] for p in range(3)], "offsets of the empty group:\n" + text)
    state["described"] = True


@suite.case(limit=120)
def reset_offsets_and_resume():
    h.check(state.get("described"), "needs list_and_describe_live_group (the group and its offsets)")
    ends = {p: EARLY + LATE.get(p, 0) for p in range(3)}

    # dry runs: the plan on stdout, nothing committed
    out, err = ctl("reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-earliest")
    h.eq(rows(out), [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]] + [[GROUP, TOPIC, str(p), "0"] for p in range(3)],
         "dry run --to-earliest")
    h.check("No action will be performed as the --execute option is missing" in err, "dry-run warning: %r", err)
    out, err = ctl("reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-offset", "12", "--dry-run")
    h.eq(rows(out)[1:], [[GROUP, TOPIC, "0", "12"], [GROUP, TOPIC, "1", "12"], [GROUP, TOPIC, "2", "10"]],
         "dry run --to-offset 12 (clamped to the log end of partition 2)")
    h.eq(err, "WARN: New offset (12) is higher than latest offset for topic partition %s-2. Value will be set to 10\n"
         % TOPIC, "clamp warning (and no missing --execute warning with --dry-run)")
    out, _ = ctl("reset-offsets", "--group", GROUP, "--topic", TOPIC + ":1", "--to-latest", "--dry-run")
    h.eq(rows(out)[1:], [[GROUP, TOPIC, "1", str(ends[1])]], "dry run --to-latest of partition 1 only")
    h.eq(committed(), {0: EARLY, 1: EARLY, 2: EARLY}, "committed offsets after the dry runs")

    # --execute commits as an admin client (generation -1, no member)
    out, err = ctl("reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-offset", "7", "--execute")
    h.eq(rows(out)[1:], [[GROUP, TOPIC, str(p), "7"] for p in range(3)], "--execute --to-offset 7")
    h.eq(err, "", "stderr of the executed reset")
    h.eq(committed(), {0: 7, 1: 7, 2: 7}, "committed offsets after the reset (raw OffsetFetch)")
    got, text = describe("--offsets")
    h.eq([r[:6] for r in got["offsets"]], [[GROUP, TOPIC, str(p), "7", str(ends[p]), str(ends[p] - 7)]
                                            for p in range(3)], "offsets and lag after the reset:\n" + text)

    # a new member resumes exactly there
    m = Member("ctl-c", commit=False)
    try:
        deadline = time.monotonic() + h.bound(40)
        while True:
            with m.lock:
                first = dict(m.first)
            if len(first) == 3:
                break
            h.check(time.monotonic() < deadline, "the new member read only partitions %s", sorted(first))
            time.sleep(0.05)
        h.eq(first, {0: 7, 1: 7, 2: 7}, "first offsets the new member read")
        h.eq(m.errors, [], "consumer errors")
    finally:
        m.stop()
    # it committed nothing (auto commit off, commits disabled)
    h.eq(committed(), {0: 7, 1: 7, 2: 7}, "committed offsets after the new member")
    state["reset"] = True


@suite.case
def delete_group():
    h.check(state.get("reset"), "needs reset_offsets_and_resume")
    wait_state("Empty")
    out, err = ctl("delete", "--group", GROUP)
    h.eq(out, "Deletion of requested consumer groups ('%s') was successful.\n" % GROUP, "delete output")
    h.eq(err, "", "delete stderr")
    out, err = ctl("describe", "--group", GROUP, rc=1)
    h.eq((out, err), ("", "Error: GROUP_ID_NOT_FOUND: Consumer group '%s' does not exist.\n" % GROUP),
         "describe of the deleted group")
    c = kwire.Conn(srv.port)
    try:
        raw = kg.describe_groups(c, [GROUP])[0]
    finally:
        c.close()
    h.eq((raw["error_code"], raw["state"]), (0, "Dead"), "raw DescribeGroups of the deleted group")
    h.eq(committed(), {0: -1, 1: -1, 2: -1}, "committed offsets of the deleted group")
    out, _ = ctl("list")
    h.eq(rows(out), [["GROUP", "STATE", "PROTOCOL-TYPE"], [SIMPLE, "Empty", "-"]], "groups list after the delete")
    out, err = ctl("delete", "--group", GROUP, rc=1)
    h.eq(err, "Error: GROUP_ID_NOT_FOUND: Group '%s' could not be deleted due to: The group id does not exist.\n"
         % GROUP, "second delete")


@suite.case
def usage_and_errors():
    for args, want in ((["describe"], "--group is required for groups describe"),
                       (["reset-offsets", "--group", "g", "--topic", TOPIC],
                        "One of the reset specifications should be defined"),
                       (["reset-offsets", "--group", "g", "--to-latest"], "One of the reset scopes should be defined"),
                       (["list", "--group", "g"], "option '--group' is not valid with groups list"),
                       (["frobnicate"], "unknown action 'frobnicate'")):
        _, err = ctl(*args, rc=2)
        h.check(want in err, "samsactl groups %s: stderr %r lacks %r", " ".join(args), err, want)
    out, _ = ctl("--help")
    for word in ("list", "describe", "delete", "reset-offsets", "--to-earliest", "--execute"):
        h.check(word in out, "groups --help mentions %s", word)
    p = h.run([h.SAMSACTL_BIN, "--help"])
    h.check(b"groups" in p.stdout, "samsactl --help lists groups")
    _, err = ctl("reset-offsets", "--group", "g", "--topic", "no-such-topic", "--to-latest", rc=1)
    h.check(err.startswith("Error: UNKNOWN_TOPIC_OR_PARTITION: "), "reset of an unknown topic: %r", err)
    _, err = ctl("reset-offsets", "--group", "g", "--topic", TOPIC + ":9", "--to-latest", rc=1)
    h.eq(err, "Error: UNKNOWN_TOPIC_OR_PARTITION: Partition %s-9 does not exist\n" % TOPIC,
         "reset of an unknown partition")


suite.run(setup)
