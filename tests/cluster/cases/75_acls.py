"""ACLs on a 3-node combined cluster (authorizer.class.name=acl, each
node with a SASL_PLAINTEXT listener for clients; nodes reach each other
as User:ANONYMOUS on PLAINTEXT, a super user): an ACL created through one
node (forwarded to the active controller when that node is not it) is
enforced by the others, for a real producer that reaches the partition
leader wherever it is, and a user without ALTER on the cluster is refused
by the controller, which the envelope tells who asked; deleting it
through a third node takes the permission away everywhere."""
# limit: 120

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cluster as C  # noqa: E402
from cluster import Failure, check, eq, log  # noqa: E402,F401

S = C.harness.Suite("75_acls", case_limit=90)
CL = None
TOPIC = "clu-acl"
USERS = {"admin": "admin-secret", "alice": "alice-secret", "eve": "eve-secret"}
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join('user_%s="%s"' % (u, p) for u, p in sorted(USERS.items())) + ";")
TOPIC_AUTHORIZATION_FAILED = 29


def setup():
    global CL
    CL = C.Cluster(3, overrides=dict(C.FAST, **{
        "authorizer.class.name": "acl",
        "super.users": "User:admin;User:ANONYMOUS",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    }))
    for n in CL.nodes:
        n.sasl_port = C.free_ports(1)[0]
        n.overrides["listeners"] = "PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (
            n.port, n.sasl_port, n.cport)
    CL.start()
    C.create_topics(CL.node(1), [TOPIC], partitions=1, rf=3)


def sasl(node):
    return "127.0.0.1:%d" % node.sasl_port


def kp_admin(node, user="admin"):
    from kafka import KafkaAdminClient
    return KafkaAdminClient(bootstrap_servers=sasl(node), security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                            sasl_plain_username=user, sasl_plain_password=USERS[user],
                            request_timeout_ms=int(C.bound(15000)))


def alice_write_acl():
    from kafka.admin import ACL, ResourcePattern, ResourceType, ACLOperation, ACLPermissionType
    return ACL("User:alice", "*", ACLOperation.WRITE, ACLPermissionType.ALLOW,
               ResourcePattern(ResourceType.TOPIC, TOPIC))


def produce_codes(node, user, n=1):
    import harness as h
    recs = [h.rec(b"k", ("v-%s-%d" % (user, i)).encode()) for i in range(n)]
    conf = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": user,
            "sasl.password": USERS[user], "message.timeout.ms": int(C.bound(8000))}
    out, _ = h.ck_produce_errors(sasl(node), TOPIC, recs, conf=conf, limit=15)
    return [r["error"].code() if "error" in r else None for r in out]


def until(what, fn, want, limit=15.0):
    """fn() until it returns want: each node applies the metadata log on
    its own, so a change reaches the others a moment later."""
    deadline = time.monotonic() + C.bound(limit)
    got = None
    while time.monotonic() < deadline:
        got = fn()
        if got == want:
            return
        time.sleep(0.2)
    raise Failure("%s: got %s, want %s" % (what, got, want))


@S.case
def acl_created_on_one_node_enforced_by_the_others():
    leader, _, _ = CL.quorum()
    via = [n for n in CL.nodes if n.node_id != leader][0]  # forwarded to the active controller
    others = [n for n in CL.nodes if n is not via]
    for n in CL.nodes:
        eq(produce_codes(n, "alice"), [TOPIC_AUTHORIZATION_FAILED], "alice through node %d before the ACL" % n.node_id)
    # forwarded in an envelope naming alice: the controller refuses her
    a = kp_admin(via, "alice")
    try:
        res = a.create_acls([alice_write_acl()])
        eq([e.__name__ if isinstance(e, type) else type(e).__name__ for _, e in res["failed"]],
           ["ClusterAuthorizationFailedError"], "alice's create_acls through node %d" % via.node_id)
    finally:
        a.close()
    a = kp_admin(via)
    try:
        res = a.create_acls([alice_write_acl()])
        eq(res["failed"], [], "create_acls through node %d" % via.node_id)
    finally:
        a.close()
    log("ACL created through node %d (active controller %d)", via.node_id, leader)
    for n in others:
        until("alice through node %d after the ACL" % n.node_id, lambda: produce_codes(n, "alice"), [None])
        eq(produce_codes(n, "eve"), [TOPIC_AUTHORIZATION_FAILED], "eve through node %d" % n.node_id)


@S.case
def acl_deleted_through_a_third_node():
    from kafka.admin import ACLFilter, ResourcePatternFilter, ResourceType, ACLOperation, ACLPermissionType, \
        ACLResourcePatternType
    n3 = CL.node(3)
    a = kp_admin(n3)
    try:
        f = ACLFilter("User:alice", None, ACLOperation.ANY, ACLPermissionType.ANY,
                      ResourcePatternFilter(ResourceType.TOPIC, TOPIC, ACLResourcePatternType.LITERAL))
        res = a.delete_acls([f])
        eq(len(res[0][1]), 1, "ACLs deleted through node 3")
    finally:
        a.close()
    for n in CL.nodes:
        until("alice through node %d after the deletion" % n.node_id, lambda: produce_codes(n, "alice"),
              [TOPIC_AUTHORIZATION_FAILED])


if __name__ == "__main__":
    S.run(setup)
