"""ACL authorization (authorizer.class.name=acl, Kafka's StandardAuthorizer
rules) through real clients on a SASL_PLAINTEXT listener (PLAIN users):
kafka-python's, kafkajs's and librdkafka's createAcls/describeAcls/
deleteAcls with exact results (confluent-kafka 1.7, the Debian client, has
no Python binding for them: a small C program calls librdkafka's);
a confluent-kafka producer without WRITE gets TOPIC_AUTHORIZATION_FAILED
and a consumer without READ on its group GROUP_AUTHORIZATION_FAILED, each
succeeding once the ACL is added; Metadata leaves out topics the principal
may not DESCRIBE; super.users bypass; DENY beats ALLOW; prefixed patterns;
allow.everyone.if.no.acl.found; one connection's cached decisions
following ACL changes, with InitProducerId (idempotent:
CLUSTER_AUTHORIZATION_FAILED until WRITE on some topic; transactional:
TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and Metadata auto-creation needing
DESCRIBE and CREATE; ACLs survive a restart (through a metadata snapshot);
samsactl acls; SECURITY_DISABLED without an authorizer; an unknown
authorizer stops startup with one line."""
# limit: 300
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness as h  # noqa: E402
import kwire  # noqa: E402

suite = h.Suite("97_test_acls", case_limit=90)
state = {}

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret",
         "eve": "eve-secret", "dave": "dave-secret"}
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join('user_%s="%s"' % (u, p) for u, p in sorted(USERS.items())) + ";")
TOPICS = ["acl-orders", "acl-secret", "pre-a", "pre-b", "other"]

TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
CLUSTER_AUTHORIZATION_FAILED = 31
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53


def srv():
    return state["server"]


def sasl_bootstrap():
    return "127.0.0.1:%d" % state["sasl_port"]


def samsactl(*args, rc=0, bootstrap=None, limit=30):
    p = h.run([h.SAMSACTL_BIN, "--bootstrap-server", bootstrap or srv().bootstrap] + list(args), limit=limit,
              check_rc=False)
    h.eq(p.returncode, rc, "samsactl %s exit status; stderr: %s" % (" ".join(args[:4]), p.stderr.decode()))
    return p.stdout.decode(), p.stderr.decode()


def acl_server(name, **extra):
    s = h.Server(name=name, start=False)
    sport = h.free_ports(1)[0]
    s.overrides.update({
        "listeners": "PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d"
                     % (s.port, sport, s.cport),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "acl",
        # the PLAINTEXT listener (samsactl in setup, the node's own
        # inter-broker requests) is User:ANONYMOUS
        "super.users": "User:admin;User:ANONYMOUS",
        # small, so that the ACLs reach a snapshot before the restart case
        "metadata.log.max.record.bytes.between.snapshots": "4096",
    })
    s.overrides.update(extra)
    s.start()
    return s, sport


def setup():
    s, sport = acl_server("acls")
    state["server"] = s
    state["sasl_port"] = sport
    for t in TOPICS:
        samsactl("topics", "create", "--topic", t, "--partitions", "1", "--replication-factor", "1")


def ck_sasl(user):
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": user,
            "sasl.password": USERS[user]}


def kp_admin(user):
    from kafka import KafkaAdminClient
    return KafkaAdminClient(bootstrap_servers=sasl_bootstrap(), security_protocol="SASL_PLAINTEXT",
                            sasl_mechanism="PLAIN", sasl_plain_username=user, sasl_plain_password=USERS[user],
                            request_timeout_ms=int(h.bound(15000)))


def acl(principal, op, perm, rtype, name, pattern="LITERAL", host="*"):
    from kafka.admin import ACL, ResourcePattern, ResourceType, ACLOperation, ACLPermissionType, \
        ACLResourcePatternType
    return ACL(principal, host, getattr(ACLOperation, op), getattr(ACLPermissionType, perm),
               ResourcePattern(getattr(ResourceType, rtype), name, getattr(ACLResourcePatternType, pattern)))


def any_filter(principal=None, rtype="ANY", name=None, pattern="ANY"):
    from kafka.admin import ACLFilter, ResourcePatternFilter, ResourceType, ACLOperation, ACLPermissionType, \
        ACLResourcePatternType
    return ACLFilter(principal, None, ACLOperation.ANY, ACLPermissionType.ANY,
                     ResourcePatternFilter(getattr(ResourceType, rtype), name,
                                           getattr(ACLResourcePatternType, pattern)))


def ename(e):
    """kafka-python hands error classes (and sometimes instances)."""
    return e.__name__ if isinstance(e, type) else type(e).__name__


def key(a):
    return (a.resource_pattern.resource_type.name, a.resource_pattern.resource_name,
            a.resource_pattern.pattern_type.name, a.principal, a.host, a.operation.name, a.permission_type.name)


def grant(*acls):
    a = kp_admin("admin")
    try:
        res = a.create_acls(list(acls))
        h.eq(res["failed"], [], "create_acls failures")
        h.eq(sorted(key(x) for x in res["succeeded"]), sorted(key(x) for x in acls), "create_acls succeeded")
    finally:
        a.close()


def records(tag, n=3):
    return [h.rec(("k-%s-%d" % (tag, i)).encode(), ("v-%s-%d" % (tag, i)).encode()) for i in range(n)]


def end_offset(topic):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer(h.ck_conf(srv().bootstrap, **{"group.id": "unused"}))
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=h.bound(10))[1]
    finally:
        c.close()


def produce_codes(user, topic, n=2):
    """The delivery error codes of a confluent-kafka producer (None: delivered)."""
    out, _ = h.ck_produce_errors(sasl_bootstrap(), topic, records("deny-" + user, n),
                                 conf=dict(ck_sasl(user), **{"message.timeout.ms": int(h.bound(8000))}), limit=15)
    return [r["error"].code() if "error" in r else None for r in out]


def produce_ok(user, topic, tag):
    want = records(tag)
    start = end_offset(topic)
    sent = h.ck_produce(sasl_bootstrap(), topic, want, conf=ck_sasl(user))
    h.eq([r["offset"] for r in sent], list(range(start, start + len(want))), "%s's produced offsets" % user)
    return start, want


def first_consumer_error(conf, topic=None, assign=None, limit=15):
    """The first error a confluent-kafka consumer reports (poll or error_cb)."""
    from confluent_kafka import Consumer, TopicPartition
    errs = []
    c = Consumer(dict(h.ck_conf(sasl_bootstrap(), **conf), error_cb=lambda e: errs.append(e.code())))
    try:
        if assign:
            c.assign([TopicPartition(assign, 0, 0)])
        else:
            c.subscribe([topic])
        deadline = time.monotonic() + h.bound(limit)
        while time.monotonic() < deadline and not errs:
            m = c.poll(0.2)
            if m is not None and m.error() is not None and m.error().code() != -191:  # not _PARTITION_EOF
                return m.error().code()
        return errs[0] if errs else None
    finally:
        c.close()


@suite.case
def kafka_python_admin():
    """kafka-python 2.0.2: CreateAcls v1, DescribeAcls v1, DeleteAcls v1."""
    want = [acl("User:kp1", "WRITE", "ALLOW", "TOPIC", "kp-t"),
            acl("User:kp1", "READ", "ALLOW", "TOPIC", "kp-", "PREFIXED"),
            acl("User:kp2", "ALL", "DENY", "GROUP", "kp-g", host="10.0.0.7"),
            acl("User:kp2", "ALTER", "ALLOW", "CLUSTER", "kafka-cluster")]
    grant(*want)
    a = kp_admin("admin")
    try:
        got, err = a.describe_acls(any_filter())
        h.eq(err.errno, 0, "describe_acls error")
        h.eq(sorted(key(x) for x in got if x.principal.startswith("User:kp")), sorted(key(x) for x in want),
             "describe_acls ANY")
        got, _ = a.describe_acls(any_filter(principal="User:kp2"))
        h.eq(sorted(key(x) for x in got), sorted(key(x) for x in want[2:]), "describe_acls principal User:kp2")
        got, _ = a.describe_acls(any_filter(rtype="TOPIC", name="kp-t", pattern="MATCH"))
        h.eq(sorted(key(x) for x in got), sorted(key(x) for x in want[:2]), "describe_acls MATCH topic kp-t")
        # a cluster resource must be named kafka-cluster; an empty name is refused
        res = a.create_acls([acl("User:kp3", "ALTER", "ALLOW", "CLUSTER", "other-cluster"),
                             acl("User:kp3", "READ", "ALLOW", "TOPIC", "")])
        h.eq(len(res["failed"]), 2, "invalid bindings refused")
        h.eq(sorted(ename(e) for _, e in res["failed"]), ["InvalidRequestError", "InvalidRequestError"],
             "invalid bindings' errors")
        res = a.delete_acls([any_filter(principal="User:kp1"), any_filter(principal="User:kp2", rtype="GROUP")])
        h.eq([sorted(key(x) for x, _ in matched) for _, matched, _ in res],
             [sorted(key(x) for x in want[:2]), [key(want[2])]], "delete_acls matched")
        h.eq([e.errno for _, _, e in res], [0, 0], "delete_acls errors")
        got, _ = a.describe_acls(any_filter())
        h.eq(sorted(key(x) for x in got if x.principal.startswith("User:kp")), [key(want[3])], "after delete_acls")
        a.delete_acls([any_filter(principal="User:kp2")])
    finally:
        a.close()
    from kafka.errors import ClusterAuthorizationFailedError
    e = kp_admin("alice")
    try:
        try:
            e.describe_acls(any_filter())
            raise h.Failure("alice's describe_acls succeeded")
        except ClusterAuthorizationFailedError:
            pass
        res = e.create_acls([acl("User:alice", "ALL", "ALLOW", "TOPIC", "*")])
        h.eq([ename(x) for _, x in res["failed"]], ["ClusterAuthorizationFailedError"], "alice's create_acls")
    finally:
        e.close()


@suite.case
def librdkafka_admin():
    """librdkafka's CreateAcls / DescribeAcls / DeleteAcls (the C calls
    newer confluent-kafka wraps), through tests/interop/c/acls_rdkafka.c
    compiled here."""
    exe = os.path.join(h.WORK, "acls_rdkafka")
    h.run(["cc", "-std=c11", "-o", exe, os.path.join(h.HERE, "c", "acls_rdkafka.c"), "-lrdkafka"], limit=60)

    def call(user, what):
        p = h.run([exe, sasl_bootstrap(), user, USERS[user], what], limit=40)
        return sorted(p.stdout.decode().splitlines())

    lit = "TOPIC|rk-t|LITERAL|User:rk|*|WRITE|ALLOW"
    pre = "TOPIC|rk-|PREFIXED|User:rk|*|READ|DENY"
    h.eq(call("admin", "create"), ["error 0", "error 0"], "CreateAcls results")
    h.eq(call("admin", "describe"), sorted([lit, pre]), "DescribeAcls of User:rk")
    h.eq(call("admin", "delete"), sorted(["error 0", pre]), "DeleteAcls of the rk- prefix")
    h.eq(call("admin", "describe"), [lit], "DescribeAcls after DeleteAcls")
    # (librdkafka 2.0.2 hands a DescribeAcls' top-level error to nobody:
    # alice's is seen through kafka-python and kafkajs above and below)
    h.eq(call("alice", "create"), ["error %d" % CLUSTER_AUTHORIZATION_FAILED] * 2, "alice's CreateAcls")


@suite.case
def kafkajs_admin():
    p = h.run([h.NODE, os.path.join(h.HERE, "js", "acls_kafkajs.mjs"), sasl_bootstrap()], limit=60, check_rc=False)
    out = p.stdout.decode("utf-8", "replace")
    for line in out.splitlines():
        print("      js: " + line.strip(), flush=True)
    if p.returncode != 0:
        raise h.Failure("acls_kafkajs.mjs exited %d: %s" % (p.returncode, p.stderr.decode()[-2000:]))


@suite.case
def producer_without_write():
    # DESCRIBE only: the topic is visible, Produce is refused
    grant(acl("User:alice", "DESCRIBE", "ALLOW", "TOPIC", "acl-orders"))
    h.eq(produce_codes("alice", "acl-orders"), [TOPIC_AUTHORIZATION_FAILED] * 2, "alice's delivery errors")
    grant(acl("User:alice", "WRITE", "ALLOW", "TOPIC", "acl-orders"))
    start, want = produce_ok("alice", "acl-orders", "alice")
    got = h.ck_consume(srv().bootstrap, "acl-orders", 0, start, len(want))
    h.compare_records(got, [dict(r, offset=start + i) for i, r in enumerate(want)], "alice's records",
                      timestamps=False)
    log = srv().log_text()
    h.check("authorizer: Principal = User:alice is Denied operation = WRITE from host = 127.0.0.1 on resource = "
            "Topic:LITERAL:acl-orders for request = Produce based on rule DefaultDeny" in log,
            "no denial line for alice's Produce in the log")


@suite.case
def consumer_without_group_read():
    grant(acl("User:alice", "READ", "ALLOW", "TOPIC", "acl-orders"),
          acl("User:alice", "DESCRIBE", "ALLOW", "GROUP", "alice-group"))
    conf = dict(ck_sasl("alice"), **{"group.id": "alice-group", "auto.offset.reset": "earliest",
                                     "enable.auto.commit": False})
    h.eq(first_consumer_error(conf, topic="acl-orders"), GROUP_AUTHORIZATION_FAILED, "alice's consumer error")
    grant(acl("User:alice", "READ", "ALLOW", "GROUP", "alice-group"))
    from confluent_kafka import Consumer
    c = Consumer(h.ck_conf(sasl_bootstrap(), **conf))
    try:
        c.subscribe(["acl-orders"])
        got = []
        deadline = time.monotonic() + h.bound(20)
        want = end_offset("acl-orders")
        while time.monotonic() < deadline and len(got) < want:
            m = c.poll(0.2)
            if m is None:
                continue
            h.check(m.error() is None, "alice's consumer error: %s", m.error())
            got.append(m.offset())
        h.eq(got, list(range(want)), "alice's group consumer offsets")
        c.commit(asynchronous=False)
    finally:
        c.close()


@suite.case
def metadata_hides_topics():
    from confluent_kafka.admin import AdminClient
    grant(acl("User:bob", "DESCRIBE", "ALLOW", "TOPIC", "pre-", "PREFIXED"))
    a = AdminClient(h.ck_conf(sasl_bootstrap(), **ck_sasl("bob")))
    md = a.list_topics(timeout=h.bound(10))
    h.eq(sorted(md.topics), ["pre-a", "pre-b"], "topics bob sees")
    md = a.list_topics("acl-secret", timeout=h.bound(10))
    h.eq(md.topics["acl-secret"].error.code(), TOPIC_AUTHORIZATION_FAILED, "acl-secret by name for bob")
    # the super user sees them all
    a = AdminClient(h.ck_conf(sasl_bootstrap(), **ck_sasl("admin")))
    h.eq(sorted(t for t in a.list_topics(timeout=h.bound(10)).topics if not t.startswith("__")), sorted(TOPICS),
         "topics admin sees")


@suite.case
def prefixed_write():
    grant(acl("User:bob", "WRITE", "ALLOW", "TOPIC", "pre-", "PREFIXED"))
    produce_ok("bob", "pre-a", "bob-a")
    produce_ok("bob", "pre-b", "bob-b")
    h.eq(produce_codes("bob", "other"), [TOPIC_AUTHORIZATION_FAILED] * 2, "bob's delivery errors on other")


@suite.case
def deny_beats_allow():
    grant(acl("User:carol", "READ", "ALLOW", "TOPIC", "*"),
          acl("User:carol", "READ", "DENY", "TOPIC", "acl-secret"),
          acl("User:carol", "READ", "ALLOW", "GROUP", "carol-group"))
    conf = dict(ck_sasl("carol"), **{"group.id": "carol-group", "enable.partition.eof": False})
    h.eq(first_consumer_error(conf, assign="acl-secret", limit=8), TOPIC_AUTHORIZATION_FAILED,
         "carol's fetch of acl-secret")
    n = end_offset("acl-orders")
    got = h.ck_consume(sasl_bootstrap(), "acl-orders", 0, 0, n, conf=dict(ck_sasl("carol"), **{"group.id": "carol-group"}))
    h.eq([r["offset"] for r in got], list(range(n)), "carol reads acl-orders (wildcard ALLOW)")


@suite.case
def admin_api_matrix():
    """kafka-python's admin calls as dave, each refused with Kafka's error
    until the ACL it needs exists: CreateTopics (CREATE on the cluster or
    the topic), DescribeConfigs (DESCRIBE_CONFIGS, implied by
    ALTER_CONFIGS), AlterConfigs (ALTER_CONFIGS), DeleteTopics (DELETE)."""
    from kafka.admin import NewTopic, ConfigResource, ConfigResourceType
    from kafka.errors import TopicAuthorizationFailedError
    a = kp_admin("dave")
    try:
        try:
            a.create_topics([NewTopic("m-1", 1, 1)])
            raise h.Failure("dave's create_topics succeeded without CREATE")
        except TopicAuthorizationFailedError:
            pass
        grant(acl("User:dave", "CREATE", "ALLOW", "TOPIC", "m-", "PREFIXED"))
        a.create_topics([NewTopic("m-1", 1, 1)])
        grant(acl("User:dave", "CREATE", "ALLOW", "CLUSTER", "kafka-cluster"))
        a.create_topics([NewTopic("x-1", 1, 1)])  # CREATE on the cluster: any name

        def configs_error():
            r = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "m-1")])
            return r[0].resources[0][0]

        def alter_error():
            r = a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "m-1", {"retention.ms": "3600000"})])
            return r.resources[0][0]

        h.eq(configs_error(), TOPIC_AUTHORIZATION_FAILED, "DescribeConfigs without DESCRIBE_CONFIGS")
        h.eq(alter_error(), TOPIC_AUTHORIZATION_FAILED, "AlterConfigs without ALTER_CONFIGS")
        grant(acl("User:dave", "ALTER_CONFIGS", "ALLOW", "TOPIC", "m-1"))
        h.eq(configs_error(), 0, "DescribeConfigs with ALTER_CONFIGS (implies DESCRIBE_CONFIGS)")
        h.eq(alter_error(), 0, "AlterConfigs with ALTER_CONFIGS")
        try:
            a.delete_topics(["m-1"])
            raise h.Failure("dave's delete_topics succeeded without DELETE")
        except TopicAuthorizationFailedError:
            pass
        grant(acl("User:dave", "DELETE", "ALLOW", "TOPIC", "m-", "PREFIXED"))
        a.delete_topics(["m-1"])
    finally:
        a.close()


@suite.case
def super_user_and_no_acl_default():
    # admin is a super user: no ACL names it
    produce_ok("admin", "other", "admin")
    # eve has no ACL and other has none: allow.everyone.if.no.acl.found=false denies
    h.eq(produce_codes("eve", "other"), [TOPIC_AUTHORIZATION_FAILED] * 2, "eve's delivery errors")


@suite.case
def allow_everyone_if_no_acl_found():
    s, sport = acl_server("acls-open", **{"allow.everyone.if.no.acl.found": "true"})
    try:
        out, _ = samsactl("topics", "create", "--topic", "open", "--partitions", "1", "--replication-factor", "1",
                          bootstrap=s.bootstrap)
        samsactl("topics", "create", "--topic", "guarded", "--partitions", "1", "--replication-factor", "1",
                 bootstrap=s.bootstrap)
        samsactl("acls", "create", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "guarded",
                 bootstrap=s.bootstrap)
        b = "127.0.0.1:%d" % sport
        sent = h.ck_produce(b, "open", records("eve-open"), conf=ck_sasl("eve"))
        h.eq([r["offset"] for r in sent], [0, 1, 2], "eve's offsets on a topic without ACLs")
        out, _ = h.ck_produce_errors(b, "guarded", records("eve-guarded", 1),
                                     conf=dict(ck_sasl("eve"), **{"message.timeout.ms": int(h.bound(8000))}),
                                     limit=15)
        h.eq([r["error"].code() for r in out], [TOPIC_AUTHORIZATION_FAILED], "eve on a topic with ACLs")
    finally:
        s.stop()


@suite.case
def decision_cache_follows_acl_changes():
    """One connection keeps its decisions cached until the ACLs change:
    User:ANONYMOUS (the PLAINTEXT listener; no super user here) asks the
    same things before and after each ACL change on one connection."""
    s, sport = acl_server("acls-cache", **{"super.users": "User:admin", "auto.create.topics.enable": "true"})
    sasl = ["--sasl-mechanism", "PLAIN", "--sasl-username", "admin", "--sasl-password", USERS["admin"]]
    b = "127.0.0.1:%d" % sport
    c = None
    try:
        samsactl(*sasl, "topics", "create", "--topic", "cached", "--partitions", "1", "--replication-factor", "1",
                 bootstrap=b)
        c = kwire.Conn(s.port, timeout=h.bound(10))

        def described():
            md = kwire.metadata_v12(c, topics=["cached"])
            return md["topics"][0]["error_code"]

        def produced():
            batch = kwire.build_batch([(b"k", b"v", ())])
            return kwire.produce(c, "cached", 0, batch)["error_code"]

        h.eq([described(), described()], [TOPIC_AUTHORIZATION_FAILED] * 2, "Metadata before any ACL")
        h.eq(produced(), TOPIC_AUTHORIZATION_FAILED, "Produce before any ACL")
        h.eq(kwire.offset_for_leader_epoch_v3(c, {"cached": [(0, -1, 0)]}),
             {("cached", 0): (TOPIC_AUTHORIZATION_FAILED, -1, -1)}, "OffsetForLeaderEpoch before any ACL")
        h.eq(kwire.describe_log_dirs_v1(c), [], "DescribeLogDirs v1 without DESCRIBE on the cluster: no dirs")
        # an idempotent producer needs IDEMPOTENT_WRITE on the cluster or
        # WRITE on some topic; a transactional one WRITE on its id
        h.eq(kwire.init_producer_id(c, 4)["error_code"], CLUSTER_AUTHORIZATION_FAILED, "idempotent InitProducerId")
        h.eq(kwire.init_producer_id(c, 4, transactional_id="tx-1")["error_code"],
             TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "transactional InitProducerId")
        samsactl(*sasl, "acls", "create", "--allow-principal", "User:ANONYMOUS", "--operation", "Write",
                 "--topic", "cached", bootstrap=b)
        h.eq([described(), described()], [0, 0], "Metadata after ALLOW WRITE (implies DESCRIBE)")
        h.eq(produced(), 0, "Produce after ALLOW WRITE")
        h.eq(kwire.offset_for_leader_epoch_v3(c, {"cached": [(0, -1, 0)]})[("cached", 0)][0], 0,
             "OffsetForLeaderEpoch after ALLOW WRITE (implies DESCRIBE)")
        h.eq(kwire.init_producer_id(c, 4)["error_code"], 0, "idempotent InitProducerId with WRITE on a topic")
        samsactl(*sasl, "acls", "create", "--deny-principal", "User:ANONYMOUS", "--deny-host", "127.0.0.1",
                 "--operation", "Write", "--topic", "cached", bootstrap=b)
        h.eq(produced(), TOPIC_AUTHORIZATION_FAILED, "Produce after DENY WRITE from 127.0.0.1")
        h.eq(described(), 0, "Metadata after DENY WRITE (a DENY of WRITE does not deny DESCRIBE)")
        samsactl(*sasl, "acls", "delete", "--topic", "cached", bootstrap=b)
        h.eq(described(), TOPIC_AUTHORIZATION_FAILED, "Metadata after the ACLs are deleted")
        # Metadata's auto-creation needs DESCRIBE and CREATE
        md = kwire.metadata_v12(c, topics=["auto-1"], allow_auto=True)
        h.eq(md["topics"][0]["error_code"], TOPIC_AUTHORIZATION_FAILED, "auto-creation without ACLs")
        samsactl(*sasl, "acls", "create", "--allow-principal", "User:ANONYMOUS", "--operation", "Describe",
                 "--topic", "auto-", "--resource-pattern-type", "prefixed", bootstrap=b)
        md = kwire.metadata_v12(c, topics=["auto-1"], allow_auto=True)
        h.eq(md["topics"][0]["error_code"], TOPIC_AUTHORIZATION_FAILED, "auto-creation with DESCRIBE only")
        samsactl(*sasl, "acls", "create", "--allow-principal", "User:ANONYMOUS", "--operation", "Create",
                 "--topic", "auto-", "--resource-pattern-type", "prefixed", bootstrap=b)
        md = kwire.metadata_v12(c, topics=["auto-1"], allow_auto=True)
        h.eq((md["topics"][0]["error_code"], len(md["topics"][0]["partitions"])), (0, 1),
             "auto-creation with DESCRIBE and CREATE")
    finally:
        if c:
            c.close()
        s.stop()


LIST_ORDERS = ("Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=acl-orders, patternType=LITERAL)`:\n"
               " \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n"
               " \t(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)\n"
               " \t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)\n\n")


@suite.case
def samsactl_acls():
    out, _ = samsactl("acls", "list", "--topic", "acl-orders")
    h.eq(out, LIST_ORDERS, "samsactl acls list --topic acl-orders")
    out, _ = samsactl("acls", "add", "--allow-principal", "User:dan", "--allow-principal", "User:erin",
                      "--operation", "Read", "--operation", "Describe", "--group", "team-", "--resource-pattern-type",
                      "prefixed")
    h.eq(out.count("Added ACL for resource `ResourcePattern(resourceType=GROUP, name=team-, patternType=PREFIXED)`"),
         4, "samsactl acls add output:\n" + out)
    out, _ = samsactl("acls", "list", "--group", "team-", "--resource-pattern-type", "PREFIXED")
    h.eq(out, "Current ACLs for resource `ResourcePattern(resourceType=GROUP, name=team-, patternType=PREFIXED)`:\n"
              " \t(principal=User:dan, host=*, operation=READ, permissionType=ALLOW)\n"
              " \t(principal=User:dan, host=*, operation=DESCRIBE, permissionType=ALLOW)\n"
              " \t(principal=User:erin, host=*, operation=READ, permissionType=ALLOW)\n"
              " \t(principal=User:erin, host=*, operation=DESCRIBE, permissionType=ALLOW)\n\n",
         "samsactl acls list --group team-")
    out, _ = samsactl("acls", "remove", "--group", "team-", "--resource-pattern-type", "prefixed",
                      "--allow-principal", "User:dan")
    h.eq(out.count("Removed ACL"), 2, "samsactl acls remove output:\n" + out)
    out, _ = samsactl("acls", "delete", "--group", "team-", "--resource-pattern-type", "prefixed", "--force")
    h.eq(out.count("Removed ACL"), 2, "samsactl acls delete output:\n" + out)
    out, _ = samsactl("acls", "list", "--group", "team-", "--resource-pattern-type", "prefixed")
    h.eq(out, "", "no ACLs left on team-")
    # a user who is not a super user: Kafka's error, non-zero exit
    out, err = samsactl("--sasl-mechanism", "PLAIN", "--sasl-username", "alice", "--sasl-password",
                        USERS["alice"], "acls", "list", rc=1, bootstrap=sasl_bootstrap())
    h.check("CLUSTER_AUTHORIZATION_FAILED" in err, "samsactl as alice: %s", err)
    # bad vocabulary is a usage error
    samsactl("acls", "create", "--allow-principal", "User:x", "--operation", "Fly", "--topic", "t", rc=2)


@suite.case
def acls_survive_restart():
    before, _ = samsactl("acls", "list")
    h.check("User:alice" in before and "User:bob" in before, "ACLs before the restart:\n%s", before)
    snaps = [f for f in os.listdir(os.path.join(srv().data, "__cluster_metadata-0")) if f.endswith(".checkpoint")]
    h.check(snaps, "no metadata snapshot was written before the restart")
    srv().restart()
    after, _ = samsactl("acls", "list")
    h.eq(after, before, "samsactl acls list after the restart")
    produce_ok("alice", "acl-orders", "alice-after-restart")
    h.eq(produce_codes("eve", "acl-orders", 1), [TOPIC_AUTHORIZATION_FAILED], "eve after the restart")


@suite.case
def security_disabled_without_authorizer():
    from kafka import KafkaAdminClient
    from kafka.errors import SecurityDisabledError
    s = h.Server(name="acls-none")
    try:
        a = KafkaAdminClient(bootstrap_servers=s.bootstrap, request_timeout_ms=int(h.bound(15000)))
        try:
            try:
                a.describe_acls(any_filter())
                raise h.Failure("describe_acls without an authorizer succeeded")
            except SecurityDisabledError:
                pass
            res = a.create_acls([acl("User:x", "READ", "ALLOW", "TOPIC", "t")])
            h.eq([ename(x) for _, x in res["failed"]], ["SecurityDisabledError"], "create_acls")
        finally:
            a.close()
    finally:
        s.stop()


@suite.case
def unknown_authorizer_refused():
    s = h.Server(name="acls-bad", start=False, overrides={"authorizer.class.name": "acl,no-such-authorizer"})
    p = h.run(s.argv(), limit=20, check_rc=False)
    h.eq(p.returncode, 2, "exit status")
    err = (p.stdout + p.stderr).decode()
    lines = [ln for ln in err.splitlines() if "authorizer.class.name" in ln and "no-such-authorizer" in ln]
    h.eq(len(lines), 1, "lines naming the unknown authorizer in:\n" + err)
    h.check("no authorizer 'no-such-authorizer'" in lines[0], "the refusal line: %s", lines[0])


if __name__ == "__main__":
    suite.run(setup)
