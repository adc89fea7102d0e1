"""KIP-226: a TLS listener's key store changed at run time.

Certificates are made with the openssl CLI: a CA and a new CA, the
server's certificate (CN=localhost, SAN 127.0.0.1 and localhost) from
each, one from the new CA with another subject, and a PKCS12 copy of the
new one under a password. The server starts with an SSL listener on the
first. @platformatic/kafka's IncrementalAlterConfigs sets
listener.name.ssl.ssl.keystore.* on the broker resource: the new store is
loaded and checked before the change is accepted (a wrong password, an
unreadable file, another subject without ssl.allow.dn.changes: each
INVALID_CONFIG with Kafka's message; the cluster default: INVALID_REQUEST),
then new connections get it while a confluent-kafka producer connected
before keeps producing over its connection. A client trusting only the
new CA connects; one trusting only the old CA is refused. A key store
rewritten in place and set again under the same path is checked the same
way and reloaded; set again unchanged, nothing happens. After a restart
the stored dynamic key store is the one in use. On an inter-broker
listener (a second node: SSL with a trust store and
ssl.client.auth=required) the new stores must also complete in-memory
TLS handshakes with the current ones both ways, as Kafka's
SslEngineValidator: a key store of another CA, or a trust store without
the CA of the current certificates, is refused with INVALID_CONFIG and
the old stores keep serving; a new key of the same CA is taken. (The checks read files:
they run off the network worker while the request waits; the answers are
the ones asserted here.)"""
# limit: 200
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness as h  # noqa: E402

suite = h.Suite("96_test_tls_reload", case_limit=60)
state = {}

TOPIC = "reload-topic"
CERTS = os.path.join(h.WORK, "tls-reload-certs")
JS = os.path.join(h.HERE, "js", "configs_platformatic.mjs")
P12_PASS = "p12-secret"
INVALID_CONFIG = 40
INVALID_REQUEST = 42
BROKER = 4
SET, DELETE = 0, 1
PREFIX = "listener.name.ssl."


def path(name):
    return os.path.join(CERTS, name)


def openssl(*args):
    h.run(["openssl"] + list(args), limit=30)


def make_ca(name, cn):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", path(name + ".key"), "-out", path(name + ".pem"), "-days", "2", "-subj", "/CN=" + cn)


def make_cert(name, ca, subj, san):
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", path(name + ".key"), "-out", path(name + ".csr"), "-subj", subj)
    ext = path(name + ".ext")
    with open(ext, "w") as f:
        f.write("basicConstraints=CA:FALSE\nsubjectAltName=%s\n" % san)
    openssl("x509", "-req", "-in", path(name + ".csr"), "-CA", path(ca + ".pem"), "-CAkey", path(ca + ".key"),
            "-CAcreateserial", "-out", path(name + ".pem"), "-days", "2", "-extfile", ext)
    # a PEM key store: the key and the chain in one file
    with open(path(name + "-ks.pem"), "w") as f:
        for part in (name + ".key", name + ".pem", ca + ".pem"):
            with open(path(part)) as g:
                f.write(g.read())


def make_certs():
    os.makedirs(CERTS, exist_ok=True)
    make_ca("ca", "samsa-reload-old-ca")
    make_ca("newca", "samsa-reload-new-ca")
    san = "IP:127.0.0.1,DNS:localhost"
    make_cert("server", "ca", "/CN=localhost", san)
    make_cert("server2", "newca", "/CN=localhost", san)
    make_cert("other", "newca", "/CN=another-host", san)
    make_cert("moresan", "newca", "/CN=localhost", san + ",DNS:extra.example")
    # the inter-broker listener's: a new key from the same CA, and the
    # certificate its clients present (ssl.client.auth=required)
    make_cert("server3", "ca", "/CN=localhost", san)
    make_cert("client", "ca", "/CN=peer", san)
    openssl("pkcs12", "-export", "-in", path("server2.pem"), "-inkey", path("server2.key"), "-certfile",
            path("newca.pem"), "-out", path("server2.p12"), "-passout", "pass:" + P12_PASS, "-name", "server")


def srv():
    return state["server"]


def ssl_bs():
    return "127.0.0.1:%d" % state["ssl_port"]


def setup():
    make_certs()
    s = h.Server(name="tlsreload", start=False)
    (ssl_port,) = h.free_ports(1)
    s.overrides.update({
        "listeners": "PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d"
                     % (s.port, ssl_port, s.cport),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT",
        PREFIX + "ssl.keystore.type": "PEM",
        PREFIX + "ssl.keystore.location": path("server-ks.pem"),
        # one network worker: a check that blocked it would stall every
        # other client (checks_leave_the_worker_free)
        "num.network.threads": "1",
    })
    s.start()
    state["server"] = s
    state["ssl_port"] = ssl_port
    h.ck_create_topic(s.bootstrap, TOPIC, 1)


def alter(configs, name="1", validate_only=False, server=None):
    """IncrementalAlterConfigs of the broker resource name (on server,
    else the suite's); returns (error_code, error_message) of its one
    answer."""
    arg = {"resources": [{"resourceType": BROKER, "resourceName": name,
                          "configs": [{"name": k, "configOperation": op, "value": v} for k, op, v in configs]}],
           "validateOnly": validate_only}
    p = h.run([h.NODE, JS, (server or srv()).bootstrap, json.dumps(arg)], limit=40, check_rc=False)
    lines = p.stdout.decode("utf-8", "replace").strip().splitlines()
    try:
        res = json.loads(lines[-1])
    except (IndexError, ValueError):
        raise h.Failure("configs_platformatic.mjs: no JSON; stdout:\n%s\nstderr:\n%s" % (
            "\n".join(lines[-20:]), p.stderr.decode("utf-8", "replace")[-2000:]))
    h.check(res.get("ok"), "configs_platformatic.mjs failed: %s", res.get("error"))
    r = res["result"]["responses"]
    h.eq(len(r), 1, "answers")
    return r[0]["errorCode"], r[0]["errorMessage"]


def ck(ca, **extra):
    c = {"security.protocol": "SSL", "ssl.ca.location": path(ca + ".pem")}
    c.update(extra)
    return c


def refused(ca):
    """A new confluent-kafka client trusting only ca: the handshake
    fails with a certificate verification error."""
    from confluent_kafka import Producer
    errs = []
    p = Producer(h.ck_conf(ssl_bs(), **ck(ca, error_cb=errs.append)))
    deadline = time.monotonic() + h.bound(15)
    while not errs and time.monotonic() < deadline:
        p.poll(0.1)
    h.check(errs, "a client trusting only %s connected", ca)
    h.check("certificate verify failed" in str(errs[0]), "confluent-kafka error: %s", errs[0])


def produce_on(p, tag, n=3):
    """n records through producer p (its connections as they are);
    returns their offsets."""
    offsets, errs = [], []

    def cb(err, msg):
        if err is not None:
            errs.append(err)
        else:
            offsets.append(msg.offset())
    for i in range(n):
        p.produce(TOPIC, key=("%s-%d" % (tag, i)).encode(), value=b"v", partition=0, on_delivery=cb)
    left = p.flush(h.bound(20))
    h.eq((left, errs), (0, []), "%s: records left and errors" % tag)
    return offsets


def next_offset():
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer(h.ck_conf(srv().bootstrap, **{"group.id": "unused"}))
    try:
        return c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=h.bound(10))[1]
    finally:
        c.close()


@suite.case
def bad_stores_refused():
    """Nothing changes when the new store cannot be used."""
    code, msg = alter([(PREFIX + "ssl.keystore.location", SET, path("missing.pem"))])
    h.eq(code, INVALID_CONFIG, "unreadable key store: error (%s)" % msg)
    h.check("Validation of dynamic config update of SSLFactory failed" in msg and "cannot be opened" in msg
            and "missing.pem" in msg, "message: %s", msg)
    code, msg = alter([(PREFIX + "ssl.keystore.type", SET, "PKCS12"),
                       (PREFIX + "ssl.keystore.location", SET, path("server2.p12")),
                       (PREFIX + "ssl.keystore.password", SET, "not-the-password")])
    h.eq(code, INVALID_CONFIG, "wrong key store password: error (%s)" % msg)
    h.check("wrong listener.name.ssl.ssl.keystore.password" in msg, "message: %s", msg)
    code, msg = alter([(PREFIX + "ssl.keystore.location", SET, path("other-ks.pem"))])
    h.eq(code, INVALID_CONFIG, "another subject: error (%s)" % msg)
    h.check("Keystore DistinguishedName does not match: existing={DN=CN=localhost}, new={DN=CN=another-host}"
            in msg, "message: %s", msg)
    code, msg = alter([(PREFIX + "ssl.keystore.location", SET, path("moresan-ks.pem"))])
    h.eq(code, INVALID_CONFIG, "other alternative names: error (%s)" % msg)
    h.check("Keystore SubjectAltName does not match" in msg and "DNS:extra.example" in msg, "message: %s", msg)
    code, msg = alter([(PREFIX + "ssl.keystore.location", SET, path("server2-ks.pem"))], name="")
    h.eq((code, msg), (INVALID_REQUEST, "Cannot update these configs at default cluster level, broker id must be "
                                        "specified: Set(listener.name.ssl.ssl.keystore.location)"), "cluster default")
    # validate_only loads and checks, and changes nothing
    code, msg = alter([(PREFIX + "ssl.keystore.location", SET, path("server2-ks.pem"))], validate_only=True)
    h.eq(code, 0, "validate_only with a good store: error (%s)" % msg)
    refused("newca")
    got = h.ck_produce(ssl_bs(), TOPIC, [h.rec(b"k", b"v")], conf=ck("ca"))
    h.check(got[0]["offset"] >= 0, "old CA client: %s", got)


@suite.case
def checks_leave_the_worker_free():
    """The new store is read off the network worker: a key store that is
    a FIFO nobody writes yet blocks its reader; meanwhile new clients on
    the one worker are served, and once the FIFO is written (garbage) the
    alter gets the same answer as for any unreadable store."""
    import threading
    fifo = path("blocking.pem")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    out = []
    t = threading.Thread(target=lambda: out.append(alter([(PREFIX + "ssl.keystore.location", SET, fifo)])))
    t.start()
    try:
        time.sleep(1.0)  # the alter is waiting for the FIFO by now
        h.eq(out, [], "the alter answered before its key store could be read")
        for i in range(3):
            t0 = time.monotonic()
            got = h.ck_produce(srv().bootstrap, TOPIC, [h.rec(b"during-%d" % i, b"v")])
            h.check(got[0]["offset"] >= 0, "produce while a check waits: %s", got)
            h.check(time.monotonic() - t0 < h.bound(10), "a client waited %.1f s behind the check",
                    time.monotonic() - t0)
        got = h.ck_produce(ssl_bs(), TOPIC, [h.rec(b"k", b"v")], conf=ck("ca"))
        h.check(got[0]["offset"] >= 0, "an SSL client while a check waits: %s", got)
        h.eq(out, [], "the alter answered before its key store could be read")
    finally:
        # each time the check opens the FIFO (it may open the store more
        # than once) it reads garbage
        h.feed_fifo(fifo, b"not a key store\n", t)
    h.eq(len(out), 1, "the alter's answer")
    code, msg = out[0]
    h.eq(code, INVALID_CONFIG, "garbage key store: error (%s)" % msg)
    h.check(msg.startswith("Validation of dynamic config update of SSLFactory failed: ") and "blocking.pem" in msg,
            "message: %s", msg)


@suite.case
def rotate_to_new_ca():
    """The established connection keeps producing; new clients see the
    new certificate."""
    from confluent_kafka import Producer
    old = Producer(h.ck_conf(ssl_bs(), **ck("ca", **{"linger.ms": 5, "acks": "all"})))
    md = old.list_topics(TOPIC, timeout=h.bound(10))
    h.check(TOPIC in md.topics and md.topics[TOPIC].error is None, "metadata over the old certificate")
    start = next_offset()
    h.eq(produce_on(old, "before"), [start, start + 1, start + 2], "offsets before the rotation")
    since = srv().log_size()
    code, msg = alter([(PREFIX + "ssl.keystore.type", SET, "PKCS12"),
                       (PREFIX + "ssl.keystore.location", SET, path("server2.p12")),
                       (PREFIX + "ssl.keystore.password", SET, P12_PASS)])
    h.eq((code, msg), (0, None), "rotation to the new CA's PKCS12 store")
    # the client trusting only the old CA could not reconnect: these go
    # over the connection made before
    h.eq(produce_on(old, "after"), [start + 3, start + 4, start + 5], "offsets after the rotation, same connection")
    want = [h.rec(b"new-%d" % i, b"n") for i in range(3)]
    got = h.ck_produce(ssl_bs(), TOPIC, want, conf=ck("newca"))
    h.eq([r["offset"] for r in got], [start + 6, start + 7, start + 8], "new-CA client offsets")
    srv().wait_log(r"listener SSL: TLS key and trust stores reloaded", since)
    refused("ca")
    h.eq(produce_on(old, "later"), [start + 9, start + 10, start + 11], "the old connection still serves")
    old.flush(h.bound(5))
    got = h.ck_consume(srv().bootstrap, TOPIC, 0, start, 12)
    h.eq([r["key"] for r in got], [b"before-0", b"before-1", b"before-2", b"after-0", b"after-1", b"after-2",
                                   b"new-0", b"new-1", b"new-2", b"later-0", b"later-1", b"later-2"], "keys")


@suite.case
def allow_dn_changes():
    """ssl.allow.dn.changes lets a certificate with another subject in."""
    code, msg = alter([(PREFIX + "ssl.keystore.type", SET, "PEM"),
                       (PREFIX + "ssl.keystore.location", SET, path("other-ks.pem")),
                       (PREFIX + "ssl.keystore.password", DELETE, None),
                       (PREFIX + "ssl.allow.dn.changes", SET, "true")])
    h.eq((code, msg), (0, None), "another subject with ssl.allow.dn.changes")
    # back to the new CA's localhost certificate for the restart case
    code, msg = alter([(PREFIX + "ssl.keystore.location", SET, path("server2-ks.pem"))])
    h.eq((code, msg), (0, None), "back to CN=localhost")
    got = h.ck_produce(ssl_bs(), TOPIC, [h.rec(b"k", b"v")], conf=ck("newca"))
    h.check(got[0]["offset"] >= 0, "new CA client: %s", got)


def copy_file(src, dst):
    """Writes src's bytes over dst in place (same inode, as an editor or
    a certificate renewal that rewrites the file does)."""
    with open(path(src), "rb") as f:
        data = f.read()
    with open(path(dst), "r+b" if os.path.exists(path(dst)) else "wb") as f:
        f.write(data)
        f.truncate()


RELOADED = r"listener SSL: TLS key and trust stores reloaded"


@suite.case
def in_place_change():
    """Kafka reloads a key store set again under the same path when the
    file changed (SslFactory: its modification time), with the same
    checks as for a new path; when nothing changed, setting it again does
    nothing."""
    code, msg = alter([(PREFIX + "ssl.allow.dn.changes", DELETE, None)])
    h.eq((code, msg), (0, None), "ssl.allow.dn.changes back to its default")
    copy_file("server2-ks.pem", "inplace-ks.pem")
    since = srv().log_size()
    code, msg = alter([(PREFIX + "ssl.keystore.location", SET, path("inplace-ks.pem"))])
    h.eq((code, msg), (0, None), "a new path (a copy of the store in use)")
    got = h.ck_produce(ssl_bs(), TOPIC, [h.rec(b"k", b"v")], conf=ck("newca"))
    h.check(got[0]["offset"] >= 0, "new CA client: %s", got)
    srv().wait_log(RELOADED, since)
    # the same path, the file unchanged: accepted, nothing reloaded
    since = srv().log_size()
    code, msg = alter([(PREFIX + "ssl.keystore.location", SET, path("inplace-ks.pem"))])
    h.eq((code, msg), (0, None), "the same path, unchanged")
    got = h.ck_produce(ssl_bs(), TOPIC, [h.rec(b"k", b"v")], conf=ck("newca"))
    h.check(got[0]["offset"] >= 0, "new CA client: %s", got)
    h.check(RELOADED[-8:] not in srv().log_text(since), "reloaded although nothing changed:\n%s",
            srv().log_text(since)[-2000:])


@suite.case
def in_place_change_checked_and_reloaded():
    """(continues in_place_change: inplace-ks.pem in use)"""
    # rewritten in place with another subject: refused as a new path
    # would be, the store in use stays
    copy_file("other-ks.pem", "inplace-ks.pem")
    code, msg = alter([(PREFIX + "ssl.keystore.location", SET, path("inplace-ks.pem"))])
    h.eq(code, INVALID_CONFIG, "changed in place to another subject: error (%s)" % msg)
    h.check("Keystore DistinguishedName does not match: existing={DN=CN=localhost}, new={DN=CN=another-host}"
            in msg, "message: %s", msg)
    got = h.ck_produce(ssl_bs(), TOPIC, [h.rec(b"k", b"v")], conf=ck("newca"))
    h.check(got[0]["offset"] >= 0, "the store in use still serves: %s", got)
    # validate_only with a good store in place: checked, nothing reloaded
    copy_file("server-ks.pem", "inplace-ks.pem")
    since = srv().log_size()
    code, msg = alter([(PREFIX + "ssl.keystore.location", SET, path("inplace-ks.pem"))], validate_only=True)
    h.eq((code, msg), (0, None), "validate_only, changed in place")
    got = h.ck_produce(ssl_bs(), TOPIC, [h.rec(b"k", b"v")], conf=ck("newca"))
    h.check(got[0]["offset"] >= 0, "validate_only reloaded nothing: %s", got)
    h.check(RELOADED[-8:] not in srv().log_text(since), "validate_only reloaded:\n%s", srv().log_text(since)[-2000:])
    # rewritten in place with the old CA's certificate for the same
    # subject: reloaded, new clients see it
    code, msg = alter([(PREFIX + "ssl.keystore.location", SET, path("inplace-ks.pem"))])
    h.eq((code, msg), (0, None), "changed in place, same subject")
    got = h.ck_produce(ssl_bs(), TOPIC, [h.rec(b"k", b"v")], conf=ck("ca"))
    h.check(got[0]["offset"] >= 0, "old CA client after the in-place reload: %s", got)
    srv().wait_log(RELOADED, since)
    refused("newca")
    # back to the new CA's store for the restart case
    code, msg = alter([(PREFIX + "ssl.keystore.location", SET, path("server2-ks.pem"))])
    h.eq((code, msg), (0, None), "back to server2-ks.pem")
    got = h.ck_produce(ssl_bs(), TOPIC, [h.rec(b"k", b"v")], conf=ck("newca"))
    h.check(got[0]["offset"] >= 0, "new CA client: %s", got)


IB = "listener.name.internal."
IB_TOPIC = "reload-ib-topic"


def ib_server():
    """A second node whose inter-broker listener INTERNAL is SSL with a
    trust store (the old CA) and ssl.client.auth=required: Kafka checks
    a new key store there by handshakes with the current stores."""
    if "ib" not in state:
        s = h.Server(name="tlsreload-ib", start=False)
        (port,) = h.free_ports(1)
        s.overrides.update({
            "listeners": "PLAINTEXT://127.0.0.1:%d,INTERNAL://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d"
                         % (s.port, port, s.cport),
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SSL,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
            IB + "ssl.keystore.type": "PEM",
            IB + "ssl.keystore.location": path("server-ks.pem"),
            IB + "ssl.truststore.type": "PEM",
            IB + "ssl.truststore.location": path("ca.pem"),
            IB + "ssl.client.auth": "required",
        })
        s.start()
        h.ck_create_topic(s.bootstrap, IB_TOPIC, 1)
        state["ib"] = (s, "127.0.0.1:%d" % port)
    return state["ib"]


def ib_conf(**extra):
    c = ck("ca", **{"ssl.certificate.location": path("client.pem"), "ssl.key.location": path("client.key")})
    c.update(extra)
    return c


def ib_produce(p, tag):
    offsets, errs = [], []

    def cb(err, msg):
        (errs if err is not None else offsets).append(err if err is not None else msg.offset())
    for i in range(2):
        p.produce(IB_TOPIC, key=("%s-%d" % (tag, i)).encode(), value=b"v", partition=0, on_delivery=cb)
    left = p.flush(h.bound(20))
    h.eq((left, errs), (0, []), "%s: records left and errors" % tag)
    return offsets


@suite.case
def inter_broker_new_ca_refused():
    """A key store of a CA the current trust store does not hold, and a
    trust store that no longer holds the CA of the current client
    certificates: each INVALID_CONFIG, and the old stores stay in force
    for established and new connections."""
    from confluent_kafka import Producer
    s, bs = ib_server()
    old = Producer(h.ck_conf(bs, **ib_conf(**{"linger.ms": 5, "acks": "all"})))
    first = ib_produce(old, "before")
    h.eq(len(first), 2, "produced over the inter-broker listener")
    code, msg = alter([(IB + "ssl.keystore.location", SET, path("server2-ks.pem"))], server=s)
    h.eq(code, INVALID_CONFIG, "key store of another CA: error (%s)" % msg)
    h.check(msg.startswith("Validation of dynamic config update of SSLFactory failed: listener INTERNAL: a client "
                           "with the new key and trust stores cannot connect to a server with the current ones: "
                           "the client's certificate is not trusted by the server"), "message: %s", msg)
    code, msg = alter([(IB + "ssl.truststore.location", SET, path("newca.pem"))], server=s)
    h.eq(code, INVALID_CONFIG, "trust store without the clients' CA: error (%s)" % msg)
    h.check(msg.startswith("Validation of dynamic config update of SSLFactory failed: listener INTERNAL: a client "
                           "with the new key and trust stores cannot connect to a server with the current ones: "
                           "the server's certificate is not trusted by the client"), "message: %s", msg)
    h.eq(ib_produce(old, "after"), [first[1] + 1, first[1] + 2], "the established connection still serves")
    got = h.ck_produce(bs, IB_TOPIC, [h.rec(b"k", b"v")], conf=ib_conf())
    h.eq(got[0]["offset"], first[1] + 3, "a new client on the old CA")
    old.flush(h.bound(5))


@suite.case
def inter_broker_same_ca_rotation():
    """A new key of the same CA passes the handshakes and is used."""
    from confluent_kafka import Producer
    s, bs = ib_server()
    old = Producer(h.ck_conf(bs, **ib_conf(**{"linger.ms": 5, "acks": "all"})))
    first = ib_produce(old, "before")
    since = s.log_size()
    code, msg = alter([(IB + "ssl.keystore.location", SET, path("server3-ks.pem"))], server=s)
    h.eq((code, msg), (0, None), "rotation within the CA")
    got = h.ck_produce(bs, IB_TOPIC, [h.rec(b"k", b"v")], conf=ib_conf())
    h.eq(got[0]["offset"], first[1] + 1, "a new client after the rotation")
    s.wait_log(r"listener INTERNAL: TLS key and trust stores reloaded", since)
    h.eq(ib_produce(old, "after"), [first[1] + 2, first[1] + 3], "the established connection still serves")
    old.flush(h.bound(5))


@suite.case
def survives_restart():
    """The stored dynamic key store is the one used after a restart."""
    srv().restart()
    got = h.ck_produce(ssl_bs(), TOPIC, [h.rec(b"k", b"v")], conf=ck("newca"))
    h.check(got[0]["offset"] >= 0, "new CA client after the restart: %s", got)
    refused("ca")


@suite.case
def stored_store_refused_at_restart():
    """A stored dynamic key store that fails Kafka's checks when the node
    starts again (rewritten while it was down with another subject): the
    listener keeps the store of its static configuration, with one line,
    as a Kafka broker whose dynamic update fails keeps its old one."""
    s = srv()
    s.stop()
    with open(path("server2-ks.pem"), "rb") as f:
        kept = f.read()
    copy_file("other-ks.pem", "server2-ks.pem")
    since = s.log_size()
    try:
        s.start()
        got = h.ck_produce(ssl_bs(), TOPIC, [h.rec(b"k", b"v")], conf=ck("ca"))
        h.check(got[0]["offset"] >= 0, "old CA client (the static store) after the restart: %s", got)
        refused("newca")
        line = r"listener SSL: the changed TLS configuration cannot be used; new connections keep the previous one"
        s.wait_log(line, since)
        text = s.log_text(since)
        h.eq(len(re.findall(line, text)), 1, "lines naming the refused store:\n%s" % text[-3000:])
        h.check("Keystore DistinguishedName does not match" in text, "reason in the log:\n%s", text[-3000:])
    finally:
        with open(path("server2-ks.pem"), "wb") as f:
            f.write(kept)


suite.run(setup)
