"""Inter-node traffic over TLS and SASL on a 3-node combined cluster.

Every node has three listeners: PLAINTEXT for the clients of this test,
INTERNAL (SASL_SSL, the inter.broker.listener.name, SASL PLAIN with
sasl.mechanism.inter.broker.protocol=PLAIN) and CONTROLLER (SSL with
listener.name.controller.ssl.client.auth=required: mTLS). A CA and one
node certificate (SAN IP:127.0.0.1) are made with the openssl CLI.

The ACL authorizer is on, with the nodes' principals (User:broker over
INTERNAL, User:CN=node,O=samsa from the certificate on CONTROLLER) as
super users; an ACL on the cluster resource takes the
allow.everyone.if.no.acl.found pass away from it, so replication,
registration, Raft and forwarded requests pass as the nodes' own
principals only (the test's plaintext clients act where no ACL exists).

- The quorum forms and every broker registers over mTLS; a topic with
  replication factor 3 and min.insync.replicas=2 takes acks=all records
  (the followers fetch over INTERNAL: established connections to every
  node's INTERNAL port, none of the replicas missing from the ISR), and a
  consumer reads them back exactly.
- The controller listener refuses a client without a certificate;
  samsactl with the node certificate reads the quorum over it.
- A node restarted with a wrong inter-broker password logs one clear
  line (the login refused) and its replicas leave the ISR while acks=all
  produce goes on with the other two; restarted with the right password
  it catches up and rejoins the ISR.
- Startup refuses an inter-broker mechanism the listener does not enable
  (Kafka's default GSSAPI) and a SASL inter-broker listener without this
  node's credentials, with one line each."""
# limit: 240

import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cluster as C  # noqa: E402
from cluster import Failure, check, eq, log  # noqa: E402,F401

S = C.harness.Suite("65_secure_peers", case_limit=90)
CL = None
TOPIC = "secure-repl"
CERTS = os.path.join(C.harness.WORK, "peer-certs")
INTERNAL = {}  # node id -> INTERNAL port
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" '
        'password="%s" user_broker="broker-secret";')


def path(name):
    return os.path.join(CERTS, name)


def openssl(*args):
    C.harness.run(["openssl"] + list(args), limit=30)


def make_certs():
    os.makedirs(CERTS, exist_ok=True)
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", path("ca.key"), "-out", path("ca.pem"), "-days", "2", "-subj", "/CN=samsa-peers-ca")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", path("node.key"), "-out", path("node.csr"), "-subj", "/O=samsa/CN=node")
    with open(path("node.ext"), "w") as f:
        f.write("basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", path("node.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
            "-CAcreateserial", "-out", path("node.pem"), "-days", "2", "-extfile", path("node.ext"))
    with open(path("node-keystore.pem"), "w") as f:
        for n in ("node.key", "node.pem", "ca.pem"):
            with open(path(n)) as g:
                f.write(g.read())


def secure(node, password="broker-secret"):
    port = INTERNAL.setdefault(node.node_id, C.free_ports(1)[0])
    node.overrides.update({
        "listeners": "PLAINTEXT://127.0.0.1:%d,INTERNAL://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d"
                     % (node.port, port, node.cport),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL,CONTROLLER:SSL",
        "inter.broker.listener.name": "INTERNAL",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.internal.plain.sasl.jaas.config": JAAS % password,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": path("node-keystore.pem"),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": path("ca.pem"),
        "listener.name.controller.ssl.client.auth": "required",
        # authorization on: the nodes' principals (SASL on INTERNAL, the
        # certificate on CONTROLLER) are super users, as Kafka asks
        "authorizer.class.name": "acl",
        "super.users": "User:broker;User:CN=node,O=samsa",
        "allow.everyone.if.no.acl.found": "true",
    })


def setup():
    global CL
    make_certs()
    CL = C.Cluster(3, overrides={"replica.lag.time.max.ms": "2000", "replica.fetch.backoff.ms": "200",
                                 "broker.session.timeout.ms": "6000"})
    for n in CL.nodes:
        secure(n)
    CL.start()
    rc, out, err = C.samsactl("--bootstrap-server", CL.nodes[0].bootstrap, "acls", "create", "--allow-principal",
                              "User:admin", "--operation", "Alter", "--cluster")
    check(rc == 0, "samsactl acls create on the cluster: %s", err.strip())


def established(port):
    """Established TCP connections to 127.0.0.1:port (from any process)."""
    out = subprocess.run(["ss", "-Htn", "state", "established", "( dport = :%d )" % port],
                         capture_output=True, text=True, timeout=10).stdout
    return len([l for l in out.splitlines() if l.strip()])


def produce(first, count, via=None, limit=40):
    from confluent_kafka import Producer
    nodes = via or [n for n in CL.nodes if n.alive()]
    p = Producer({"bootstrap.servers": ",".join(n.bootstrap for n in nodes), "acks": "all",
                  "message.timeout.ms": 30000, "linger.ms": 5, "enable.idempotence": True})
    res = []
    for i in range(first, first + count):
        p.produce(TOPIC, key=b"k%04d" % i, value=b"v%04d" % i, partition=0,
                  on_delivery=lambda err, msg: res.append((err, msg.offset())))
    left = p.flush(C.bound(limit))
    eq(left, 0, "records not delivered")
    errs = [e for e, _ in res if e is not None]
    check(not errs, "delivery errors: %s", errs[:3])
    return sorted(o for _, o in res)


def consume_all(n):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": CL.nodes[0].bootstrap, "group.id": "sp-reader",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    got = []
    deadline = time.monotonic() + C.bound(30)
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append((m.offset(), m.key(), m.value()))
    c.close()
    return got


def isr_of(via):
    return C.partitions_state(via, TOPIC)[0][1]


def wait_isr(want, limit=30):
    deadline = time.monotonic() + C.bound(limit)
    last = None
    while time.monotonic() < deadline:
        try:
            last = isr_of(CL.nodes[0])
            if last == want:
                return
        except Exception as e:  # noqa: BLE001
            last = str(e)
        time.sleep(0.2)
    raise Failure("ISR %s, want %s, after %.0fs" % (last, want, C.bound(limit)))


@S.case
def replication_over_sasl_ssl():
    """acks=all records replicated over the SASL_SSL inter-broker
    listener; all three replicas in the ISR; read back exactly."""
    for n in CL.nodes:
        n.wait_log(r"connections to peers: brokers over INTERNAL with SASL PLAIN, controllers over CONTROLLER",
                   0, limit=5)
    C.create_topics(CL.nodes[0], [TOPIC], partitions=1, rf=3)
    from confluent_kafka.admin import ConfigResource
    a = C.admin(CL.nodes[0])
    res = ConfigResource(ConfigResource.Type.TOPIC, TOPIC, set_config={"min.insync.replicas": "2"})
    for f in a.alter_configs([res]).values():
        f.result(C.bound(15))
    wait_isr([1, 2, 3])
    offs = produce(0, 50)
    eq(offs, list(range(50)), "acknowledged offsets")
    got = consume_all(50)
    eq(got, [(i, b"k%04d" % i, b"v%04d" % i) for i in range(50)], "records read back")
    wait_isr([1, 2, 3])
    # the followers fetch over INTERNAL: the leader's INTERNAL port has
    # established connections (the fetchers' and the marker senders')
    leader = C.partitions_state(CL.nodes[0], TOPIC)[0][0]
    check(established(INTERNAL[leader]) >= 2, "connections to the leader's INTERNAL port: %d, want >= 2",
          established(INTERNAL[leader]))


@S.case
def controller_listener_needs_a_certificate():
    """A client without a certificate is refused by the mTLS controller
    listener; samsactl with the node's certificate reads the quorum."""
    n1 = CL.nodes[0]
    # plaintext bytes to a TLS listener: no Kafka answer, the connection closes
    s = socket.create_connection(("127.0.0.1", n1.cport), timeout=5)
    s.sendall(b"\x00\x00\x00\x0b\x00\x12\x00\x00\x00\x00\x00\x01\x00\x01x")
    try:
        data = s.recv(100)
    except (ConnectionResetError, socket.timeout):
        data = b""
    s.close()
    check(not data.startswith(b"\x00\x00\x00"), "a plaintext ApiVersions on the SSL controller listener was "
          "answered: %r", data[:20])
    props = path("ctl.properties")
    with open(props, "w") as f:
        f.write("security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=%s\n"
                "ssl.keystore.type=PEM\nssl.keystore.location=%s\n" % (path("ca.pem"), path("node-keystore.pem")))
    addrs = ",".join(n.controller_address for n in CL.nodes)
    rc, out, err = C.samsactl("quorum", "status", "--bootstrap-controller", addrs, "--command-config", props)
    eq(rc, 0, "samsactl quorum status over mTLS exit status (stderr %s)" % err.strip())
    check("LeaderId:" in out and "CurrentVoters:" in out, "quorum status: %s", out)
    with open(props, "w") as f:
        f.write("security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=%s\n" % path("ca.pem"))
    rc, out, err = C.samsactl("quorum", "status", "--bootstrap-controller", CL.nodes[0].controller_address,
                              "--command-config", props, limit=30)
    check(rc != 0, "samsactl without a certificate read the quorum: %s", out)


@S.case
def wrong_inter_broker_password():
    """A node with a wrong inter-broker password cannot fetch: one clear
    line, its replica leaves the ISR, acks=all goes on; with the right
    password it rejoins."""
    leader = C.partitions_state(CL.nodes[0], TOPIC)[0][0]
    victim = [n for n in CL.nodes if n.node_id != leader][-1]
    victim.stop()
    secure(victim, password="not-the-secret")
    since = victim.log_size()
    victim.start()
    victim.wait_log(r"kclient 127\.0\.0\.1:%d \(listener INTERNAL\): SASL PLAIN login as broker refused: "
                    r"SASL_AUTHENTICATION_FAILED" % INTERNAL[leader], since, limit=30)
    others = sorted(n.node_id for n in CL.nodes if n is not victim)
    offs = produce(50, 20, via=[n for n in CL.nodes if n is not victim])
    eq(offs, list(range(50, 70)), "acknowledged offsets without the victim")
    wait_isr(others)
    # the line is not repeated for every retry
    time.sleep(1.5)
    with open(victim.log_path, "rb") as f:
        f.seek(since)
        lines = [l for l in f.read().decode("utf-8", "replace").splitlines() if "login as broker refused" in l]
    check(1 <= len(lines) <= 3, "login refusal logged %d times in ~2 s (want once per peer)", len(lines))
    victim.stop()
    secure(victim)
    victim.start()
    wait_isr([1, 2, 3], limit=40)
    got = consume_all(70)
    eq(got, [(i, b"k%04d" % i, b"v%04d" % i) for i in range(70)], "records read back")


def refused(extra, want):
    n = CL.nodes[0]
    argv = n.argv()
    for k, v in extra.items():
        argv += ["--override", "%s=%s" % (k, v)]
    argv += ["--override", "log.dirs=%s" % os.path.join(C.harness.WORK, "refused-dir")]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=C.bound(20))
    check(p.returncode != 0, "samsa started with %s", extra)
    out = (p.stdout + p.stderr)
    check(want in out, "startup error: want %r in:\n%s", want, out[-1500:])


@S.case
def startup_refuses_unusable_peer_security():
    refused({"sasl.mechanism.inter.broker.protocol": "GSSAPI"},
            "sasl.mechanism.inter.broker.protocol=GSSAPI must be one of the mechanisms listener INTERNAL enables "
            "(PLAIN)")
    refused({"listener.name.internal.plain.sasl.jaas.config": ""},
            "listener INTERNAL speaks SASL_SSL: this node logs in to its peers with the username and password "
            "of listener.name.internal.plain.sasl.jaas.config, which is not set")


if __name__ == "__main__":
    S.run(setup)
