"""KIP-368 between nodes: connections this node opened with a SASL login
re-authenticate before the peer's session expires, instead of being
closed and reopened.

A 3-node combined cluster whose inter-broker listener INTERNAL and
controller listener CONTROLLER are both SASL_PLAINTEXT (PLAIN), with
connections.max.reauth.ms=3000: every session the nodes' own connections
(replica fetchers, Raft, heartbeats, AlterPartition) open lives 3 s.
Over 10 s of acks=all produce with replication factor 3:

- every record is acknowledged and read back exactly, the ISR stays
  whole;
- no node closes a connection for an expired session;
- the established connections to every INTERNAL and CONTROLLER port at
  the start are still there, the same ones (by address and port), at the
  end: none was reopened;
- the server logs at least 3 logins on each of those connections (the
  first and the re-authentications every 2.55-2.85 s)."""
# limit: 150

import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cluster as C  # noqa: E402
from cluster import Failure, check, eq, log  # noqa: E402,F401

S = C.harness.Suite("66_peer_reauth", case_limit=90)
CL = None
TOPIC = "reauth-repl"
INTERNAL = {}
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" '
        'password="broker-secret" user_broker="broker-secret";')


def secure(node):
    port = INTERNAL.setdefault(node.node_id, C.free_ports(1)[0])
    node.overrides.update({
        "listeners": "PLAINTEXT://127.0.0.1:%d,INTERNAL://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d"
                     % (node.port, port, node.cport),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.internal.plain.sasl.jaas.config": JAAS,
        "listener.name.controller.plain.sasl.jaas.config": JAAS,
        "connections.max.reauth.ms": "3000",
        "samsa.log.level": "debug",
    })


def setup():
    global CL
    CL = C.Cluster(3, overrides={"replica.lag.time.max.ms": "2000", "replica.fetch.backoff.ms": "200",
                                 "broker.session.timeout.ms": "6000"})
    for n in CL.nodes:
        secure(n)
    for n in CL.nodes:
        n.start()
    CL.wait_ready()


def peer_ports(port):
    """Peer addresses ("127.0.0.1:N") of the established connections to
    127.0.0.1:port."""
    out = subprocess.run(["ss", "-Htn", "state", "established", "( sport = :%d )" % port],
                         capture_output=True, text=True, timeout=10).stdout
    got = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 4:
            got.add(f[3])
    return got


def connections():
    """{(listener, node id): set of peer addresses} for every node's
    INTERNAL and CONTROLLER port."""
    out = {}
    for n in CL.nodes:
        out[("INTERNAL", n.node_id)] = peer_ports(INTERNAL[n.node_id])
        out[("CONTROLLER", n.node_id)] = peer_ports(n.cport)
    return out


def produce(first, count):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": ",".join(n.bootstrap for n in CL.nodes), "acks": "all",
                  "message.timeout.ms": 20000, "linger.ms": 5, "enable.idempotence": True})
    res = []
    for i in range(first, first + count):
        p.produce(TOPIC, key=b"k%04d" % i, value=b"v%04d" % i, partition=0,
                  on_delivery=lambda err, msg: res.append((err, msg.offset())))
    eq(p.flush(C.bound(25)), 0, "records not delivered")
    errs = [e for e, _ in res if e is not None]
    check(not errs, "delivery errors: %s", errs[:3])
    return sorted(o for _, o in res)


@S.case
def replication_keeps_its_connections():
    C.create_topics(CL.nodes[0], [TOPIC], partitions=1, rf=3)
    from confluent_kafka.admin import ConfigResource
    a = C.admin(CL.nodes[0])
    res = ConfigResource(ConfigResource.Type.TOPIC, TOPIC, set_config={"min.insync.replicas": "2"})
    for f in a.alter_configs([res]).values():
        f.result(C.bound(15))
    deadline = time.monotonic() + C.bound(20)
    while C.partitions_state(CL.nodes[0], TOPIC)[0][1] != [1, 2, 3]:
        check(time.monotonic() < deadline, "ISR not whole: %s", C.partitions_state(CL.nodes[0], TOPIC))
        time.sleep(0.2)
    eq(produce(0, 10), list(range(10)), "first offsets")
    before = connections()
    since = {n.node_id: n.log_size() for n in CL.nodes}
    t0 = time.monotonic()
    first, rounds = 10, 0
    while time.monotonic() - t0 < 10:
        eq(produce(first, 5), list(range(first, first + 5)), "offsets at %.1fs" % (time.monotonic() - t0))
        first += 5
        rounds += 1
        time.sleep(0.5)
    after = connections()
    log("%d rounds of 5 records; connections before %s after %s", rounds, before, after)
    eq(C.partitions_state(CL.nodes[0], TOPIC)[0][1], [1, 2, 3], "ISR after 10 s")
    # the followers' fetchers to the leader's INTERNAL port; Raft and
    # heartbeats to the controllers'
    leader = C.partitions_state(CL.nodes[0], TOPIC)[0][0]
    eq(len(before[("INTERNAL", leader)]), 2, "fetcher connections to the leader's INTERNAL port")
    check(any(p for k, p in before.items() if k[0] == "CONTROLLER"), "no connection to a controller listener")
    expired = []
    for n in CL.nodes:
        text = n.log_text(since[n.node_id])
        expired += [l for l in text.splitlines() if "after the SASL session expired" in l]
    eq(expired, [], "connections closed for an expired session")
    for key, peers in before.items():
        kept = peers & after[key]
        eq(sorted(kept), sorted(peers), "connections to %s of node %d kept" % key)
        node = CL.node(key[1])
        text = node.log_text(since[key[1]])
        for peer in sorted(kept):
            logins = len(re.findall(r"connection from %s on %s authenticated as User:broker" % (re.escape(peer), key[0]),
                                    text))
            check(logins >= 3, "%d logins on connection %s to %s of node %d in 10 s (want >= 3)",
                  logins, peer, key[0], key[1])
    # and every record is there, in order
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": CL.nodes[0].bootstrap, "group.id": "reauth-reader",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    got = []
    deadline = time.monotonic() + C.bound(20)
    while len(got) < first and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append((m.offset(), m.key()))
    c.close()
    eq(got, [(i, b"k%04d" % i) for i in range(first)], "records read back")


if __name__ == "__main__":
    S.run(setup)
