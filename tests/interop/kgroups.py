"""The group APIs by hand (on kwire's framing), for raw-protocol group
tests: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
OffsetCommit, OffsetFetch, ListGroups, DescribeGroups, DeleteGroups,
OffsetDelete, TxnOffsetCommit, and Kafka's ConsumerProtocol subscription/assignment
encodings. Non-flexible versions unless a function says otherwise."""

from kwire import W, R

FIND_COORDINATOR = 10
JOIN_GROUP = 11
HEARTBEAT = 12
LEAVE_GROUP = 13
SYNC_GROUP = 14
DESCRIBE_GROUPS = 15
LIST_GROUPS = 16
OFFSET_COMMIT = 8
OFFSET_FETCH = 9
DELETE_GROUPS = 42
OFFSET_DELETE = 47

NONE = 0
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
OFFSET_METADATA_TOO_LARGE = 12
UNKNOWN_TOPIC_OR_PARTITION = 3
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79
FENCED_INSTANCE_ID = 82
GROUP_SUBSCRIBED_TO_TOPIC = 86
UNSTABLE_OFFSET_COMMIT = 88
TXN_OFFSET_COMMIT = 28


# ---------------------------------------------------------------- consumer protocol

def subscription(topics, user_data=None, version=0):
    """ConsumerProtocolSubscription (version prefix included)."""
    w = W().i16(version).array(topics, lambda w, t: w.string(t)).bytes_(user_data)
    if version >= 1:
        w.i32(0)  # owned partitions: none
    return w.bytes()


def assignment(parts, user_data=None, version=0):
    """ConsumerProtocolAssignment from {topic: [partitions]}."""
    w = W().i16(version)
    w.array(sorted(parts.items()), lambda w, tp: (w.string(tp[0]), w.array(tp[1], lambda w, p: w.i32(p))))
    w.bytes_(user_data)
    return w.bytes()


def parse_assignment(data):
    """{topic: [partitions]} of a ConsumerProtocolAssignment."""
    if not data:
        return {}
    r = R(data)
    r.i16()
    out = {}
    for t, ps in r.array(lambda r: (r.string(), r.array(lambda r: r.i32()))) or []:
        out[t] = ps
    return out


# ---------------------------------------------------------------- requests

def find_coordinator(conn, key, version=0, key_type=0):
    if version >= 4:
        body = W().i8(key_type).carray([key] if isinstance(key, str) else key, lambda w, k: w.cstring(k)).tags().bytes()
        r = conn.request(FIND_COORDINATOR, version, body, flexible=True)
        r.i32()

        def coord(r):
            c = {"key": r.cstring(), "node_id": r.i32(), "host": r.cstring(), "port": r.i32(),
                 "error_code": r.i16(), "error_message": r.cstring()}
            r.tags()
            return c
        return r.carray(coord)
    w = W().string(key)
    if version >= 1:
        w.i8(key_type)
    r = conn.request(FIND_COORDINATOR, version, w.bytes())
    out = {}
    if version >= 1:
        out["throttle_time_ms"] = r.i32()
    out["error_code"] = r.i16()
    if version >= 1:
        out["error_message"] = r.string()
    out["node_id"] = r.i32()
    out["host"] = r.string()
    out["port"] = r.i32()
    return out


def join_group(conn, group, member_id="", protocols=(("range", b""),), session_ms=10000, rebalance_ms=30000,
               version=5, instance_id=None, protocol_type="consumer", timeout=None):
    """JoinGroup v0-5 (non-flexible)."""
    w = W().string(group).i32(session_ms)
    if version >= 1:
        w.i32(rebalance_ms)
    w.string(member_id)
    if version >= 5:
        w.string(instance_id)
    w.string(protocol_type)
    w.array(list(protocols), lambda w, p: (w.string(p[0]), w.bytes_(p[1])))
    r = conn.request(JOIN_GROUP, version, w.bytes(), timeout=timeout)
    out = {}
    if version >= 2:
        out["throttle_time_ms"] = r.i32()
    out["error_code"] = r.i16()
    out["generation_id"] = r.i32()
    out["protocol_name"] = r.string()
    out["leader"] = r.string()
    out["member_id"] = r.string()

    def member(r):
        m = {"member_id": r.string()}
        if version >= 5:
            m["group_instance_id"] = r.string()
        m["metadata"] = r.bytes_()
        return m
    out["members"] = r.array(member)
    return out


def join_group_v9(conn, group, member_id="", protocols=(("range", b""),), session_ms=10000, rebalance_ms=30000,
                  instance_id=None, protocol_type="consumer", reason=None, timeout=None):
    """JoinGroup v9 (flexible: protocol type/name, skip_assignment)."""
    w = W().cstring(group).i32(session_ms).i32(rebalance_ms).cstring(member_id).cstring(instance_id)
    w.cstring(protocol_type)
    w.carray(list(protocols), lambda w, p: (w.cstring(p[0]), w.cbytes(p[1]), w.tags()))
    w.cstring(reason).tags()
    r = conn.request(JOIN_GROUP, 9, w.bytes(), flexible=True, timeout=timeout)
    out = {"throttle_time_ms": r.i32(), "error_code": r.i16(), "generation_id": r.i32(),
           "protocol_type": r.cstring(), "protocol_name": r.cstring(), "leader": r.cstring(),
           "skip_assignment": r.boolean(), "member_id": r.cstring()}

    def member(r):
        m = {"member_id": r.cstring(), "group_instance_id": r.cstring(), "metadata": r.cbytes()}
        r.tags()
        return m
    out["members"] = r.carray(member)
    r.tags()
    return out


def sync_group(conn, group, generation, member_id, assignments=(), version=3, instance_id=None,
               protocol_type=None, protocol_name=None, timeout=None):
    """SyncGroup v0-3, or v5 (flexible) with protocol type and name."""
    if version >= 4:
        w = W().cstring(group).i32(generation).cstring(member_id).cstring(instance_id)
        w.cstring(protocol_type).cstring(protocol_name)
        w.carray(list(assignments), lambda w, a: (w.cstring(a[0]), w.cbytes(a[1]), w.tags())).tags()
        r = conn.request(SYNC_GROUP, version, w.bytes(), flexible=True, timeout=timeout)
        out = {"throttle_time_ms": r.i32(), "error_code": r.i16(), "protocol_type": r.cstring(),
               "protocol_name": r.cstring(), "assignment": r.cbytes()}
        r.tags()
        return out
    w = W().string(group).i32(generation).string(member_id)
    if version >= 3:
        w.string(instance_id)
    w.array(list(assignments), lambda w, a: (w.string(a[0]), w.bytes_(a[1])))
    r = conn.request(SYNC_GROUP, version, w.bytes(), timeout=timeout)
    out = {}
    if version >= 1:
        out["throttle_time_ms"] = r.i32()
    out["error_code"] = r.i16()
    out["assignment"] = r.bytes_()
    return out


def heartbeat(conn, group, generation, member_id, version=3, instance_id=None):
    w = W().string(group).i32(generation).string(member_id)
    if version >= 3:
        w.string(instance_id)
    r = conn.request(HEARTBEAT, version, w.bytes())
    if version >= 1:
        r.i32()
    return r.i16()


def leave_group(conn, group, member_id=None, members=None, version=1):
    """v0-2: member_id; v3: members [(member_id, instance_id)]. Returns
    (top-level error, [(member_id, instance_id, error)])."""
    w = W().string(group)
    if version >= 3:
        w.array(members, lambda w, m: (w.string(m[0]), w.string(m[1])))
    else:
        w.string(member_id)
    r = conn.request(LEAVE_GROUP, version, w.bytes())
    if version >= 1:
        r.i32()
    err = r.i16()
    ms = []
    if version >= 3:
        ms = r.array(lambda r: (r.string(), r.string(), r.i16()))
    return err, ms


def offset_commit(conn, group, offsets, generation=-1, member_id="", version=2, instance_id=None,
                  retention_ms=-1):
    """offsets: {topic: [(partition, offset, metadata)]}. Returns
    {(topic, partition): error}. v1-7 (non-flexible)."""
    w = W().string(group)
    if version >= 1:
        w.i32(generation).string(member_id)
    if version >= 7:
        w.string(instance_id)
    if 2 <= version <= 4:
        w.i64(retention_ms)

    def part(w, p):
        w.i32(p[0]).i64(p[1])
        if version >= 6:
            w.i32(-1)
        if version == 1:
            w.i64(-1)
        w.string(p[2])
    w.array(sorted(offsets.items()), lambda w, t: (w.string(t[0]), w.array(t[1], part)))
    r = conn.request(OFFSET_COMMIT, version, w.bytes())
    if version >= 3:
        r.i32()
    out = {}
    for t, ps in r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16())))):
        for p, e in ps:
            out[(t, p)] = e
    return out


def offset_fetch(conn, group, topics=None, version=1):
    """topics: {topic: [partitions]} or None (all, v2+). Returns
    (top-level error or None, {(topic, partition): (offset, metadata, error)})."""
    w = W().string(group)
    if topics is None:
        w.i32(-1)
    else:
        w.array(sorted(topics.items()), lambda w, t: (w.string(t[0]), w.array(t[1], lambda w, p: w.i32(p))))
    if version >= 7:
        w.boolean(False)
    r = conn.request(OFFSET_FETCH, version, w.bytes())
    if version >= 3:
        r.i32()

    def part(r):
        p = r.i32()
        off = r.i64()
        if version >= 5:
            r.i32()
        meta = r.string()
        err = r.i16()
        return p, off, meta, err
    out = {}
    for t, ps in r.array(lambda r: (r.string(), r.array(part))):
        for p, off, meta, err in ps:
            out[(t, p)] = (off, meta, err)
    top = r.i16() if version >= 2 else None
    return top, out


def list_groups(conn, version=2, states=None):
    """v0-2, or v4 (flexible) with a states filter. [(group, protocol_type, state or None)]."""
    if version >= 3:
        w = W()
        if version >= 4:
            w.carray(states or [], lambda w, s: w.cstring(s))
        w.tags()
        r = conn.request(LIST_GROUPS, version, w.bytes(), flexible=True)
        r.i32()
        err = r.i16()

        def g(r):
            x = (r.cstring(), r.cstring(), r.cstring() if version >= 4 else None)
            r.tags()
            return x
        return err, r.carray(g)
    r = conn.request(LIST_GROUPS, version, b"")
    if version >= 1:
        r.i32()
    err = r.i16()
    return err, [(g, p, None) for g, p in r.array(lambda r: (r.string(), r.string()))]


def describe_groups(conn, groups, version=4):
    w = W().array(groups, lambda w, g: w.string(g))
    if version >= 3:
        w.boolean(False)
    r = conn.request(DESCRIBE_GROUPS, version, w.bytes())
    if version >= 1:
        r.i32()

    def member(r):
        m = {"member_id": r.string()}
        if version >= 4:
            m["group_instance_id"] = r.string()
        m["client_id"] = r.string()
        m["client_host"] = r.string()
        m["metadata"] = r.bytes_()
        m["assignment"] = r.bytes_()
        return m

    def group(r):
        g = {"error_code": r.i16(), "group_id": r.string(), "state": r.string(), "protocol_type": r.string(),
             "protocol_data": r.string(), "members": r.array(member)}
        if version >= 3:
            g["authorized_operations"] = r.i32()
        return g
    return r.array(group)


def delete_groups(conn, groups, version=1):
    r = conn.request(DELETE_GROUPS, version, W().array(groups, lambda w, g: w.string(g)).bytes())
    r.i32()
    return dict(r.array(lambda r: (r.string(), r.i16())))


def offset_delete(conn, group, topics):
    """topics: {topic: [partitions]}. (top-level error, {(t, p): error})."""
    w = W().string(group)
    w.array(sorted(topics.items()), lambda w, t: (w.string(t[0]), w.array(t[1], lambda w, p: w.i32(p))))
    r = conn.request(OFFSET_DELETE, 0, w.bytes())
    err = r.i16()
    r.i32()
    out = {}
    for t, ps in r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16())))) or []:
        for p, e in ps:
            out[(t, p)] = e
    return err, out


CONSUMER_GROUP_HEARTBEAT = 68
CONSUMER_GROUP_DESCRIBE = 69


def consumer_heartbeat(conn, group, member_id, epoch, topics=None, owned=None, version=0, rebalance_ms=10000,
                       assignor=None, instance_id=None, regex=None):
    """ConsumerGroupHeartbeat (KIP-848, flexible); owned: [(topic_id,
    [partitions])] or None. Returns the decoded answer (assignment: None
    or {topic uuid: [partitions]})."""
    import uuid
    w = W().cstring(group).cstring(member_id).i32(epoch).cstring(instance_id).cstring(None).i32(rebalance_ms)
    w.carray(topics, lambda w, t: w.cstring(t))
    if version >= 1:
        w.cstring(regex)
    w.cstring(assignor)
    w.carray(owned, lambda w, tp: (w.uuid(uuid.UUID(tp[0])), w.carray(tp[1], lambda w, p: w.i32(p)), w.tags()))
    w.tags()
    r = conn.request(CONSUMER_GROUP_HEARTBEAT, version, w.bytes(), flexible=True)
    out = {"throttle": r.i32(), "error_code": r.i16(), "error_message": r.cstring(), "member_id": r.cstring(),
           "member_epoch": r.i32(), "heartbeat_interval_ms": r.i32()}
    if r.i8() >= 0:
        def tp(r):
            x = (r.uuid(), r.carray(lambda r: r.i32()) or [])
            r.tags()
            return x
        out["assignment"] = dict(r.carray(tp) or [])
        r.tags()
    else:
        out["assignment"] = None
    return out


def consumer_group_describe(conn, group):
    """ConsumerGroupDescribe v0 (KIP-848, flexible) of one group: its
    error, state, epochs, assignor and members, each member's assignment
    and target as {topic name: [partitions]}."""
    w = W().carray([group], lambda w, g: w.cstring(g)).boolean(False).tags()
    r = conn.request(CONSUMER_GROUP_DESCRIBE, 0, w.bytes(), flexible=True)
    r.i32()

    def assignment(r):
        def tp(r):
            x = (r.uuid(), r.cstring(), sorted(r.carray(lambda r: r.i32()) or []))
            r.tags()
            return x
        tps = r.carray(tp) or []
        r.tags()
        return {name: parts for _, name, parts in tps}

    def member(r):
        m = {"member_id": r.cstring(), "instance_id": r.cstring(), "rack_id": r.cstring(), "epoch": r.i32(),
             "client_id": r.cstring(), "client_host": r.cstring(),
             "topics": r.carray(lambda r: r.cstring()), "regex": r.cstring()}
        m["assignment"] = assignment(r)
        m["target"] = assignment(r)
        r.tags()
        return m

    def grp(r):
        g = {"error_code": r.i16(), "error_message": r.cstring(), "group_id": r.cstring(), "state": r.cstring(),
             "epoch": r.i32(), "assignment_epoch": r.i32(), "assignor": r.cstring(),
             "members": r.carray(member) or []}
        g["authorized_operations"] = r.i32()
        r.tags()
        return g
    return r.carray(grp)[0]


def offset_commit_v9_body(group, member_id, epoch, topic, parts):
    """The body of an OffsetCommit v9 of {partition: offset} (flexible)."""
    w = W().cstring(group).i32(epoch).cstring(member_id).cstring(None)

    def part(w, po):
        w.i32(po[0]).i64(po[1]).i32(-1).cstring("").tags()
    w.carray([topic], lambda w, t: (w.cstring(t), w.carray(sorted(parts.items()), part), w.tags()))
    w.tags()
    return w.bytes()


def parse_offset_commit_v9(r):
    """{partition: error} of an OffsetCommit v8+ answer (one topic)."""
    r.i32()
    out = {}

    def pr(r):
        x = (r.i32(), r.i16())
        r.tags()
        return x

    def tr(r):
        r.cstring()
        for p, e in r.carray(pr) or []:
            out[p] = e
        r.tags()
    r.carray(tr)
    return out


def offset_commit_v9(conn, group, member_id, epoch, topic, parts):
    """OffsetCommit v9 of {partition: offset}; {partition: error}."""
    return parse_offset_commit_v9(conn.request(OFFSET_COMMIT, 9, offset_commit_v9_body(group, member_id, epoch,
                                                                                      topic, parts), flexible=True))


def coordinator_port(port, group, limit=10.0):
    """Asks FindCoordinator until it names a coordinator (the first ask
    creates __consumer_offsets); returns (node_id, host, port)."""
    import time
    import kwire
    deadline = time.monotonic() + limit
    last = None
    while time.monotonic() < deadline:
        c = kwire.Conn(port)
        try:
            res = find_coordinator(c, group, version=1)
        finally:
            c.close()
        if res["error_code"] == NONE:
            return res["node_id"], res["host"], res["port"]
        last = res
        time.sleep(0.05)
    raise AssertionError("FindCoordinator(%s) never answered: %s" % (group, last))


def until_loaded(fn, limit=10.0):
    """Calls fn() until it stops answering COORDINATOR_LOAD_IN_PROGRESS
    (returns its last result); fn returns (error, result)."""
    import time
    deadline = time.monotonic() + limit
    while True:
        err, res = fn()
        if err != COORDINATOR_LOAD_IN_PROGRESS or time.monotonic() > deadline:
            return err, res
        time.sleep(0.05)



# ---------------------------------------------------------------- transactional offsets

def txn_offset_commit(conn, group, pid, epoch, offsets, version=3, tid="tx", generation=-1, member_id="",
                      instance_id=None):
    """TxnOffsetCommit v0-4 (flexible from v3). offsets: {topic:
    [(partition, offset, metadata)]}. Returns {(topic, partition): error}."""
    flex = version >= 3
    w = W()
    string = w.cstring if flex else w.string
    string(tid)
    string(group)
    w.i64(pid).i16(epoch)
    if version >= 3:
        w.i32(generation)
        w.cstring(member_id)
        w.cstring(instance_id)

    def part(w, p):
        w.i32(p[0]).i64(p[1])
        if version >= 2:
            w.i32(-1)
        (w.cstring if flex else w.string)(p[2])
        if flex:
            w.tags()

    def topic(w, t):
        (w.cstring if flex else w.string)(t[0])
        (w.carray if flex else w.array)(t[1], part)
        if flex:
            w.tags()
    (w.carray if flex else w.array)(sorted(offsets.items()), topic)
    if flex:
        w.tags()
    r = conn.request(TXN_OFFSET_COMMIT, version, w.bytes(), flexible=flex)
    r.i32()

    def part_r(r):
        p = (r.i32(), r.i16())
        if flex:
            r.tags()
        return p

    def topic_r(r):
        name = r.cstring() if flex else r.string()
        ps = (r.carray if flex else r.array)(part_r)
        if flex:
            r.tags()
        return name, ps
    out = {}
    for t, ps in (r.carray if flex else r.array)(topic_r):
        for p, e in ps:
            out[(t, p)] = e
    return out


def offset_fetch_v7(conn, group, parts, require_stable):
    """OffsetFetch v7 (flexible, RequireStable). parts: {topic:
    [partitions]}. Returns (top-level error, {(topic, partition): (offset,
    error)})."""
    w = W().cstring(group)
    w.carray(sorted(parts.items()), lambda w, t: (w.cstring(t[0]), w.carray(t[1], lambda w, p: w.i32(p)), w.tags()))
    w.boolean(require_stable)
    w.tags()
    r = conn.request(OFFSET_FETCH, 7, w.bytes(), flexible=True)
    r.i32()

    def part(r):
        p, off, _epoch, _meta, err = r.i32(), r.i64(), r.i32(), r.cstring(), r.i16()
        r.tags()
        return p, off, err

    def topic(r):
        name = r.cstring()
        ps = r.carray(part)
        r.tags()
        return name, ps
    out = {}
    for t, ps in r.carray(topic):
        for p, off, err in ps:
            out[(t, p)] = (off, err)
    return r.i16(), out


def partition_for(group, n=50):
    """Kafka's partitionFor: abs(String.hashCode) % n."""
    u = group.encode("utf-16-be")
    hsh = 0
    for i in range(0, len(u), 2):
        hsh = (31 * hsh + int.from_bytes(u[i:i + 2], "big")) & 0xFFFFFFFF
    if hsh >= 1 << 31:
        hsh -= 1 << 32
    return (0 if hsh == -(1 << 31) else abs(hsh)) % n
