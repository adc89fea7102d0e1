"""TLS on client listeners (SSL and SASL_SSL) through real clients.

A CA, a server certificate (SAN 127.0.0.1 and localhost), a client
certificate and one from another CA are made with the openssl CLI in the
test's directory. One server has a PLAINTEXT listener, an SSL listener
(PEM key store file, ssl.client.auth=requested), an mTLS listener MTLS
(SSL with listener.name.mtls.ssl.client.auth=required, its key store given
inline as ssl.keystore.key / ssl.keystore.certificate.chain with an
encrypted key and ssl.key.password) and a SASL_SSL listener (PKCS12 key
store under listener.name.sasl_ssl.*, SCRAM). confluent-kafka, kcat,
kafka-python, kafkajs and @platformatic/kafka produce and read back exact
records over TLS; the principal of a certificate is Kafka's RFC 2253 form;
clients without a certificate or with one of another CA are refused on the
mTLS listener with one log line; garbage and half-open handshakes do not
hold up another client; bad key stores stop startup with one line naming
the listener and the key."""
# limit: 300
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness as h  # noqa: E402
import kwire  # noqa: E402

suite = h.Suite("96_test_tls", case_limit=90)
state = {}

TOPIC = "tls-topic"
CERTS = os.path.join(h.WORK, "tls-certs")
KEYSTORE_PASS = "store-secret"
KEY_PASS = "key-secret"


def path(name):
    return os.path.join(CERTS, name)


def openssl(*args):
    h.run(["openssl"] + list(args), limit=30)


def make_ca(name, cn):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", path(name + ".key"), "-out", path(name + ".pem"), "-days", "2", "-subj", "/CN=" + cn)


def make_cert(name, ca, subj, san=None):
    openssl("req", "-utf8", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", path(name + ".key"), "-out", path(name + ".csr"), "-subj", subj)
    ext = path(name + ".ext")
    with open(ext, "w") as f:
        f.write("basicConstraints=CA:FALSE\n")
        if san:
            f.write("subjectAltName=%s\n" % san)
    openssl("x509", "-req", "-in", path(name + ".csr"), "-CA", path(ca + ".pem"), "-CAkey", path(ca + ".key"),
            "-CAcreateserial", "-out", path(name + ".pem"), "-days", "2", "-extfile", ext)


def read(name):
    with open(path(name)) as f:
        return f.read()


def make_certs():
    os.makedirs(CERTS, exist_ok=True)
    make_ca("ca", "samsa-test-ca")
    make_ca("otherca", "samsa-other-ca")
    make_cert("server", "ca", "/CN=localhost", "IP:127.0.0.1,DNS:localhost")
    make_cert("client", "ca", "/O=samsa/OU=test/CN=client")
    make_cert("stranger", "otherca", "/CN=stranger")
    make_cert("jorg", "ca", "/O=samsa/CN=j\u00f6rg, x")
    make_cert("mail", "ca", "/emailAddress=a@b.c/CN=mail")
    # PEM key store: the key and the chain in one file
    with open(path("server-keystore.pem"), "w") as f:
        f.write(read("server.key") + read("server.pem") + read("ca.pem"))
    # the same key encrypted (ssl.key.password), for the inline key store
    openssl("pkey", "-in", path("server.key"), "-aes256", "-passout", "pass:" + KEY_PASS,
            "-out", path("server-enc.key"))
    # PKCS12 key store, and a trust store of the CA alone
    openssl("pkcs12", "-export", "-nokeys", "-in", path("ca.pem"), "-out", path("ca.p12"),
            "-passout", "pass:" + KEYSTORE_PASS)
    openssl("pkcs12", "-export", "-in", path("server.pem"), "-inkey", path("server.key"), "-certfile",
            path("ca.pem"), "-out", path("server.p12"), "-passout", "pass:" + KEYSTORE_PASS, "-name", "server")


def srv():
    return state["server"]


def bs(listener):
    return "127.0.0.1:%d" % state["ports"][listener]


def tls_server(name, **extra):
    s = h.Server(name=name, start=False)
    ssl_port, mtls_port, sasl_port = h.free_ports(3)
    s.overrides.update({
        "listeners": "PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d,MTLS://127.0.0.1:%d,SASL_SSL://127.0.0.1:%d,"
                     "CONTROLLER://127.0.0.1:%d" % (s.port, ssl_port, mtls_port, sasl_port, s.cport),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_SSL:SASL_SSL,"
                                          "CONTROLLER:PLAINTEXT",
        "samsa.log.level": "debug",
        # broker-wide: a PEM key store file
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": path("server-keystore.pem"),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": path("ca.pem"),
        "ssl.client.auth": "requested",
        # the mTLS listener: inline PEM, an encrypted key, client certificates required
        "listener.name.mtls.ssl.keystore.key": read("server-enc.key"),
        "listener.name.mtls.ssl.keystore.certificate.chain": read("server.pem") + read("ca.pem"),
        "listener.name.mtls.ssl.key.password": KEY_PASS,
        "listener.name.mtls.ssl.keystore.location": "",
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.truststore.type": "PEM",
        "listener.name.mtls.ssl.truststore.certificates": read("ca.pem"),
        "listener.name.mtls.ssl.truststore.location": "",
        # SASL_SSL: a PKCS12 key store, SCRAM over TLS
        "listener.name.sasl_ssl.ssl.keystore.type": "PKCS12",
        "listener.name.sasl_ssl.ssl.keystore.location": path("server.p12"),
        "listener.name.sasl_ssl.ssl.keystore.password": KEYSTORE_PASS,
        # (the broker-wide ssl.client.auth does not apply to SASL_SSL: KIP-684)
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
    })
    s.overrides.update(extra)
    s.start()
    return s, {"PLAINTEXT": s.port, "SSL": ssl_port, "MTLS": mtls_port, "SASL_SSL": sasl_port}


def samsactl(*args):
    p = h.run([h.SAMSACTL_BIN, "--bootstrap-server", srv().bootstrap] + list(args), limit=30, check_rc=False)
    h.eq(p.returncode, 0, "samsactl %s exit status; stderr: %s" % (" ".join(args[:4]), p.stderr.decode()))
    return p.stdout.decode()


def setup():
    make_certs()
    s, ports = tls_server("tls")
    state["server"] = s
    state["ports"] = ports
    noeffect = [l for l in s.log_text().splitlines() if "ssl" in l and "has no effect" in l]
    h.eq(noeffect, [], "ssl keys reported without effect")
    samsactl("topics", "create", "--topic", TOPIC, "--partitions", "1", "--replication-factor", "1")
    samsactl("users", "scram", "set", "--user", "carol", "--password", "carol-512", "--mechanism", "SCRAM-SHA-512")


def records(tag, n=3, size=1):
    return [h.rec(("k-%s-%d" % (tag, i)).encode(), ("v-%s-%d|" % (tag, i)).encode() * (size * (i + 1)),
                  [("h", ("x%d" % i).encode())]) for i in range(n)]


def next_offset():
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer(h.ck_conf(srv().bootstrap, **{"group.id": "unused"}))
    try:
        return c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=h.bound(10))[1]
    finally:
        c.close()


def at(want, start):
    return [dict(r, offset=start + i) for i, r in enumerate(want)]


CK_SSL = {"security.protocol": "SSL", "ssl.ca.location": path("ca.pem")}


def ck_mtls(cert="client", ca="ca"):
    return {"security.protocol": "SSL", "ssl.ca.location": path(ca + ".pem"),
            "ssl.certificate.location": path(cert + ".pem"), "ssl.key.location": path(cert + ".key")}


# ------------------------------------------------------------ confluent-kafka

@suite.case
def confluent_ssl_roundtrip():
    """Exact records over TLS both ways; large enough that a fetch answer
    goes through the copy path in many TLS records; the same records read
    over PLAINTEXT too."""
    want = records("ck", n=40, size=400)
    start = next_offset()
    sent = h.ck_produce(bs("SSL"), TOPIC, want, conf=CK_SSL)
    h.eq([r["offset"] for r in sent], list(range(start, start + len(want))), "confluent-kafka produced offsets")
    got = h.ck_consume(bs("SSL"), TOPIC, 0, start, len(want), conf=CK_SSL)
    h.compare_records(got, at(want, start), "confluent-kafka over SSL", timestamps=False)
    got = h.ck_consume(srv().bootstrap, TOPIC, 0, start, len(want))
    h.compare_records(got, at(want, start), "confluent-kafka over PLAINTEXT", timestamps=False)


@suite.case
def confluent_wrong_ca_refused():
    """A client that does not trust the server's CA gives up; the
    server logs the failed handshake."""
    from confluent_kafka import Producer
    since = srv().log_size()
    errs = []
    conf = h.ck_conf(bs("SSL"), **{"security.protocol": "SSL", "ssl.ca.location": path("otherca.pem"),
                                   "error_cb": errs.append})
    p = Producer(conf)
    deadline = time.monotonic() + h.bound(15)
    while not errs and time.monotonic() < deadline:
        p.poll(0.1)
    h.check(errs, "confluent-kafka reported no error with a wrong CA")
    h.check("certificate verify failed" in str(errs[0]), "confluent-kafka error: %s", errs[0])
    srv().wait_log(r"closing connection from 127\.0\.0\.1:\d+: TLS handshake failed on listener SSL", since)


# ------------------------------------------------------------ kcat, kafka-python, kafkajs, platformatic

@suite.case
def kcat_ssl():
    x = ["-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + path("ca.pem")]
    want = records("kcat", n=3)
    start = next_offset()
    h.kcat_produce(bs("SSL"), TOPIC, 0, [dict(r, headers=[]) for r in want], extra=x)
    got = h.kcat_consume(bs("SSL"), TOPIC, 0, start, len(want), extra=x)
    h.compare_records(got, at([dict(r, headers=[]) for r in want], start), "kcat over SSL", timestamps=False)


@suite.case
def kafka_python_ssl():
    kw = dict(security_protocol="SSL", ssl_cafile=path("ca.pem"))
    want = records("kp", n=3, size=50)
    start = next_offset()
    sent = h.kp_produce(bs("SSL"), TOPIC, want, **kw)
    h.eq([r["offset"] for r in sent], list(range(start, start + len(want))), "kafka-python produced offsets")
    got = h.kp_consume(bs("SSL"), TOPIC, 0, start, len(want), **kw)
    h.compare_records(got, at(want, start), "kafka-python over SSL", timestamps=False)


@suite.case
def kafkajs_ssl():
    ssl = {"ssl": {"ca": [read("ca.pem")]}}
    want = records("js", n=3, size=50)
    start = next_offset()
    res = h.node("kafkajs-produce", bs("SSL"), {"topic": TOPIC, "kafkajs": ssl}, stdin=h.to_json_records(want))
    h.check(res.get("ok"), "kafkajs produce: %s", res)
    res = h.node("kafkajs-fetch", bs("SSL"), {"topic": TOPIC, "partition": 0, "offset": start, "count": len(want),
                                             "kafkajs": ssl})
    h.compare_records(h.from_json_records(res["records"]), at(want, start), "kafkajs over SSL", timestamps=False)


@suite.case
def platformatic_ssl():
    opts = {"platformatic": {"tls": {"ca": [read("ca.pem")]}}}
    want = records("plat", n=3, size=50)
    start = next_offset()
    res = h.node("plat-produce", bs("SSL"), dict(topic=TOPIC, **opts), stdin=h.to_json_records(want))
    h.check(res.get("ok"), "platformatic produce: %s", res)
    res = h.node("plat-fetch", bs("SSL"), dict(topic=TOPIC, partition=0, offset=start, count=len(want), **opts))
    h.compare_records(h.from_json_records(res["records"]), at(want, start), "platformatic over SSL",
                      timestamps=False)


# ------------------------------------------------------------ mTLS and principals

@suite.case
def principal_from_certificate():
    """ssl.client.auth=requested: with a certificate the principal is its
    subject as Kafka writes it, without one User:ANONYMOUS."""
    since = srv().log_size()
    want = records("principal", n=1)
    start = next_offset()
    h.ck_produce(bs("SSL"), TOPIC, want, conf=ck_mtls())
    srv().wait_log(r"on SSL: TLSv1\.3 \S+, principal User:CN=client,OU=test,O=samsa$", since)
    since = srv().log_size()
    h.ck_consume(bs("SSL"), TOPIC, 0, start, 1, conf=CK_SSL)
    srv().wait_log(r"on SSL: TLSv1\.3 \S+, principal User:ANONYMOUS$", since)
    # RFC 2253 as Java writes it: a comma escaped, UTF-8 as is
    since = srv().log_size()
    h.ck_consume(bs("SSL"), TOPIC, 0, start, 1, conf=ck_mtls(cert="jorg"))
    srv().wait_log(r"on SSL: TLSv1\.3 \S+, principal User:CN=j\u00f6rg\\, x,O=samsa$", since)
    # an attribute without an RFC 2253 keyword: its OID and DER in hex
    since = srv().log_size()
    h.ck_consume(bs("SSL"), TOPIC, 0, start, 1, conf=ck_mtls(cert="mail"))
    srv().wait_log(r"on SSL: TLSv1\.3 \S+, principal User:CN=mail,1\.2\.840\.113549\.1\.9\.1=#16056140622e63$",
                   since)


@suite.case
def principal_mapping_rules():
    """ssl.principal.mapping.rules on one listener: the first rule that
    applies names the principal (upper-cased here); a certificate no rule
    applies to is refused with a log line; no certificate stays
    ANONYMOUS; a malformed rule stops the start with one line."""
    rules = "RULE:^CN=(.*?),OU=test,O=samsa$/$1/U, RULE:^CN=mail,.*$/the-mail/"
    s, ports = tls_server("rules", **{"listener.name.ssl.ssl.principal.mapping.rules": rules})
    try:
        b = "127.0.0.1:%d" % ports["SSL"]
        h.ck_create_topic("127.0.0.1:%d" % ports["PLAINTEXT"], "rules-t", partitions=1)
        since = s.log_size()
        h.ck_produce(b, "rules-t", records("rules", n=1), conf=ck_mtls())
        s.wait_log(r"on SSL: TLSv1\.3 \S+, principal User:CLIENT$", since)
        since = s.log_size()
        h.ck_consume(b, "rules-t", 0, 0, 1, conf=ck_mtls(cert="mail"))
        s.wait_log(r"on SSL: TLSv1\.3 \S+, principal User:the-mail$", since)
        since = s.log_size()
        h.ck_consume(b, "rules-t", 0, 0, 1, conf=CK_SSL)
        s.wait_log(r"on SSL: TLSv1\.3 \S+, principal User:ANONYMOUS$", since)
        since = s.log_size()
        ck_first_error(b, ck_mtls(cert="jorg"))
        s.wait_log(r"no ssl\.principal\.mapping\.rules rule applies to the client certificate's subject "
                   r"CN=j\u00f6rg\\, x,O=samsa", since)
        # the other listeners keep Kafka's DEFAULT
        since = s.log_size()
        h.ck_consume("127.0.0.1:%d" % ports["MTLS"], "rules-t", 0, 0, 1, conf=ck_mtls())
        s.wait_log(r"on MTLS: TLSv1\.3 \S+, principal User:CN=client,OU=test,O=samsa$", since)
    finally:
        s.stop()
    line = start_refused({"ssl.keystore.type": "PEM", "ssl.keystore.location": path("server-keystore.pem"),
                          "ssl.principal.mapping.rules": "RULE:^CN=(.*$/$1/"})
    h.check(line.startswith("samsa: ssl.principal.mapping.rules: rule pattern ^CN=(.*$"),
            "a malformed rule: %s", line)


@suite.case
def mtls_required():
    want = records("mtls", n=3, size=20)
    start = next_offset()
    since = srv().log_size()
    sent = h.ck_produce(bs("MTLS"), TOPIC, want, conf=ck_mtls())
    h.eq([r["offset"] for r in sent], list(range(start, start + len(want))), "mTLS produced offsets")
    got = h.ck_consume(bs("MTLS"), TOPIC, 0, start, len(want), conf=ck_mtls())
    h.compare_records(got, at(want, start), "confluent-kafka over mTLS", timestamps=False)
    srv().wait_log(r"on MTLS: TLSv1\.3 \S+, principal User:CN=client,OU=test,O=samsa$", since)
    # kafka-python with its certificate too
    kw = dict(security_protocol="SSL", ssl_cafile=path("ca.pem"), ssl_certfile=path("client.pem"),
              ssl_keyfile=path("client.key"))
    got = h.kp_consume(bs("MTLS"), TOPIC, 0, start, len(want), **kw)
    h.compare_records(got, at(want, start), "kafka-python over mTLS", timestamps=False)


def ck_first_error(bootstrap, conf):
    from confluent_kafka import Producer
    errs = []
    c = h.ck_conf(bootstrap, **conf)
    c["error_cb"] = errs.append
    p = Producer(c)
    deadline = time.monotonic() + h.bound(15)
    while not errs and time.monotonic() < deadline:
        p.poll(0.1)
    h.check(errs, "confluent-kafka reported no error within %.0fs", h.bound(15))
    return errs[0]


@suite.case
def mtls_without_certificate_refused():
    since = srv().log_size()
    err = ck_first_error(bs("MTLS"), CK_SSL)
    h.check("SSL" in str(err) or "ssl" in str(err), "confluent-kafka error: %s", err)
    srv().wait_log(r"TLS handshake failed on listener MTLS: .*peer did not return a certificate", since)


@suite.case
def mtls_certificate_of_another_ca_refused():
    since = srv().log_size()
    err = ck_first_error(bs("MTLS"), ck_mtls(cert="stranger"))
    h.check("SSL" in str(err) or "ssl" in str(err), "confluent-kafka error: %s", err)
    srv().wait_log(r"TLS handshake failed on listener MTLS: client certificate refused: "
                   r"unable to get local issuer certificate", since)


# ------------------------------------------------------------ SASL_SSL

@suite.case
def sasl_ssl_scram():
    conf = {"security.protocol": "SASL_SSL", "ssl.ca.location": path("ca.pem"), "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "carol", "sasl.password": "carol-512"}
    want = records("sasl-ssl", n=3, size=100)
    start = next_offset()
    since = srv().log_size()
    sent = h.ck_produce(bs("SASL_SSL"), TOPIC, want, conf=conf)
    h.eq([r["offset"] for r in sent], list(range(start, start + len(want))), "SASL_SSL produced offsets")
    got = h.ck_consume(bs("SASL_SSL"), TOPIC, 0, start, len(want), conf=conf)
    h.compare_records(got, at(want, start), "confluent-kafka over SASL_SSL", timestamps=False)
    srv().wait_log(r"on SASL_SSL authenticated as User:carol \(SCRAM-SHA-512\)", since)
    # a wrong password fails as over SASL_PLAINTEXT
    err = ck_first_error(bs("SASL_SSL"), dict(conf, **{"sasl.password": "wrong"}))
    h.check("Authentication failed" in str(err), "wrong password error: %s", err)


@suite.case
def sasl_ssl_other_clients():
    """kafka-python (SaslHandshake v0, raw tokens) and kafkajs over SASL_SSL."""
    kw = dict(security_protocol="SASL_SSL", ssl_cafile=path("ca.pem"), sasl_mechanism="SCRAM-SHA-512",
              sasl_plain_username="carol", sasl_plain_password="carol-512")
    want = records("kp-sasl-ssl", n=3, size=30)
    start = next_offset()
    sent = h.kp_produce(bs("SASL_SSL"), TOPIC, want, **kw)
    h.eq([r["offset"] for r in sent], list(range(start, start + len(want))), "kafka-python SASL_SSL offsets")
    got = h.kp_consume(bs("SASL_SSL"), TOPIC, 0, start, len(want), **kw)
    h.compare_records(got, at(want, start), "kafka-python over SASL_SSL", timestamps=False)
    js = {"ssl": {"ca": [read("ca.pem")]},
          "sasl": {"mechanism": "scram-sha-512", "username": "carol", "password": "carol-512"}}
    want = records("js-sasl-ssl", n=3, size=30)
    start = next_offset()
    res = h.node("kafkajs-produce", bs("SASL_SSL"), {"topic": TOPIC, "kafkajs": js}, stdin=h.to_json_records(want))
    h.check(res.get("ok"), "kafkajs produce: %s", res)
    res = h.node("kafkajs-fetch", bs("SASL_SSL"), {"topic": TOPIC, "partition": 0, "offset": start,
                                                  "count": len(want), "kafkajs": js})
    h.compare_records(h.from_json_records(res["records"]), at(want, start), "kafkajs over SASL_SSL",
                      timestamps=False)


# ------------------------------------------------------------ bad handshakes never stall a worker

def samsactl_with(listener, props):
    """samsactl topics list through listener with --command-config props;
    (exit status, stdout, stderr)."""
    cfg = path("samsactl-%s-%d.properties" % (listener.lower(), len(state.setdefault("cfgs", []))))
    state["cfgs"].append(cfg)
    with open(cfg, "w") as f:
        f.write("".join("%s=%s\n" % kv for kv in props.items()))
    p = h.run([h.SAMSACTL_BIN, "--bootstrap-server", bs(listener), "--command-config", cfg, "topics", "list"],
              limit=30, check_rc=False)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


@suite.case
def samsactl_over_tls():
    """samsactl's own client speaks TLS (Kafka's and librdkafka's PEM
    property names in --command-config): SSL, mTLS with a client
    certificate, SASL_SSL with SCRAM; a wrong CA or a missing client
    certificate fail with a clear error."""
    with open(path("client-keystore.pem"), "w") as f:
        f.write(read("client.key") + read("client.pem"))
    ok = lambda r, what: h.check(r[0] == 0 and TOPIC in r[1].split(), "%s: exit %d, stdout %r, stderr %r",
                                 what, r[0], r[1], r[2])
    ok(samsactl_with("SSL", {"security.protocol": "SSL", "ssl.truststore.location": path("ca.pem")}),
       "samsactl over SSL")
    ok(samsactl_with("MTLS", {"security.protocol": "SSL", "ssl.truststore.location": path("ca.pem"),
                              "ssl.keystore.type": "PEM", "ssl.keystore.location": path("client-keystore.pem")}),
       "samsactl over mTLS (PEM key store)")
    ok(samsactl_with("MTLS", {"security.protocol": "SSL", "ssl.ca.location": path("ca.pem"),
                              "ssl.certificate.location": path("client.pem"),
                              "ssl.key.location": path("client.key")}),
       "samsactl over mTLS (librdkafka names)")
    ok(samsactl_with("SASL_SSL", {"security.protocol": "SASL_SSL", "ssl.truststore.location": path("ca.pem"),
                                  "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "carol",
                                  "sasl.password": "carol-512"}),
       "samsactl over SASL_SSL")
    r = samsactl_with("SSL", {"security.protocol": "SSL", "ssl.truststore.location": path("otherca.pem")})
    h.check(r[0] != 0 and "TLS handshake" in r[2] and "certificate" in r[2],
            "samsactl trusting another CA: exit %d, stderr %r", r[0], r[2])
    r = samsactl_with("MTLS", {"security.protocol": "SSL", "ssl.truststore.location": path("ca.pem")})
    h.check(r[0] != 0 and TOPIC not in r[1] and "NETWORK_EXCEPTION" in r[2]
            and "127.0.0.1:%d" % state["ports"]["MTLS"] in r[2],
            "samsactl without a client certificate on the mTLS listener: exit %d, stdout %r, stderr %r",
            r[0], r[1], r[2])


def api_versions_ms(port):
    t = time.monotonic()
    c = kwire.Conn(port, timeout=5)
    try:
        res = kwire.api_versions(c, 0)
    finally:
        c.close()
    h.eq(res["error_code"], 0, "ApiVersions error")
    return (time.monotonic() - t) * 1000.0


@suite.case
def garbage_and_half_open_handshakes():
    """Many half-open TLS connections (nothing sent) and many sending
    garbage or a partial ClientHello: other clients are answered as fast
    as before, garbage is closed at once, half-open ones after the bound."""
    since = srv().log_size()
    before = max(api_versions_ms(srv().port) for _ in range(5))
    held = []
    t0 = time.monotonic()
    for i in range(40):
        s = socket.create_connection(("127.0.0.1", state["ports"]["SSL"]), timeout=5)
        if i % 4 == 1:
            s.sendall(os.urandom(300))
        elif i % 4 == 2:
            # the first bytes of a TLS record header, then silence
            s.sendall(b"\x16\x03\x01\x02\x00\x01")
        held.append(s)
    worst = 0.0
    for _ in range(20):
        worst = max(worst, api_versions_ms(srv().port))
    h.check(worst < max(200.0, before * 20), "ApiVersions took %.1f ms with bad handshakes pending (before %.1f)",
            worst, before)
    # a TLS client on the same listener is served too
    want = records("during-bad", n=1)
    start = next_offset()
    h.ck_produce(bs("SSL"), TOPIC, want, conf=CK_SSL)
    h.compare_records(h.ck_consume(bs("SSL"), TOPIC, 0, start, 1, conf=CK_SSL), at(want, start),
                      "TLS client during bad handshakes", timestamps=False)
    srv().wait_log(r"TLS handshake failed on listener SSL: .*(wrong version number|unknown protocol|"
                   r"http request|record layer failure|packet length too long)", since, limit=5)
    srv().wait_log(r"TLS handshake not finished within 10 s", since, limit=20)
    took = time.monotonic() - t0
    h.check(9.5 <= took <= h.bound(14), "half-open handshakes closed after %.1f s (bound: 10 s + a 2.5 s sweep)",
            took)
    # the server closed them: each reads EOF (or a reset) within the bound
    for s in held:
        s.settimeout(h.bound(15))
        try:
            while s.recv(4096):
                pass
        except ConnectionResetError:
            pass
        s.close()
    h.check(srv().alive(), "samsa died")


# ------------------------------------------------------------ versions and suites

@suite.case
def enabled_protocols_and_cipher_suites():
    """ssl.enabled.protocols=TLSv1.2 with one suite by its Kafka (IANA)
    name: that is what is negotiated; a TLSv1.3-only client is refused.
    Then ssl.protocol=TLSv1.2 caps the default list the same way (with
    client certificates required, trusted through a PKCS12 trust store)."""
    for extra, suite_name in (({"ssl.enabled.protocols": "TLSv1.2",
                                "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"},
                               "ECDHE-ECDSA-AES128-GCM-SHA256"),
                              ({"ssl.protocol": "TLSv1.2", "ssl.client.auth": "required",
                                "ssl.truststore.type": "PKCS12", "ssl.truststore.location": path("ca.p12"),
                                "ssl.truststore.password": KEYSTORE_PASS}, r"\S+")):
        s = h.Server(name="tls12-%d" % len(suite_name), start=False)
        sport = h.free_ports(1)[0]
        s.overrides.update({
            "listeners": "PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d"
                         % (s.port, sport, s.cport),
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT",
            "samsa.log.level": "debug", "ssl.keystore.type": "PEM",
            "ssl.keystore.location": path("server-keystore.pem"), "auto.create.topics.enable": "true"})
        s.overrides.update(extra)
        s.start()
        try:
            since = s.log_size()
            from confluent_kafka.admin import AdminClient
            mtls = "ssl.client.auth" in extra
            a = AdminClient(h.ck_conf("127.0.0.1:%d" % sport, **(ck_mtls() if mtls else CK_SSL)))
            md = a.list_topics(timeout=h.bound(10))
            h.eq(sorted(md.brokers), [1], "brokers seen over TLSv1.2")
            s.wait_log(r"on SSL: TLSv1\.2 %s, principal %s$"
                       % (suite_name, "User:CN=client,OU=test,O=samsa" if mtls else "User:ANONYMOUS"), since)
            p = h.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % sport, "-tls1_3", "-CAfile",
                       path("ca.pem")], input=b"", check_rc=False, limit=15)
            h.check(p.returncode != 0, "a TLSv1.3-only handshake succeeded: %s", p.stdout.decode()[-500:])
        finally:
            s.stop()


# ------------------------------------------------------------ startup refusals

def start_refused(extra):
    port, cport = h.free_ports(2)
    argv = [h.SAMSA_BIN, "--override", "node.id=1",
            "--override", "listeners=SSL://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (port, cport),
            "--override", "listener.security.protocol.map=SSL:SSL,CONTROLLER:PLAINTEXT",
            "--override", "inter.broker.listener.name=SSL",
            "--override", "controller.quorum.voters=1@127.0.0.1:%d" % cport,
            "--override", "log.dirs=%s" % os.path.join(h.WORK, "refused")]
    for k, v in extra.items():
        argv += ["--override", "%s=%s" % (k, v)]
    p = h.run(argv, check_rc=False, limit=20)
    h.eq(p.returncode, 2, "exit status; stderr: %s" % p.stderr.decode())
    return p.stderr.decode().strip().splitlines()[-1]


@suite.case
def startup_refuses_bad_key_stores():
    line = start_refused({"listener.name.ssl.ssl.client.auth": "bogus"})
    h.check(line.startswith("samsa: config 'listener.name.ssl.ssl.client.auth' value 'bogus': "),
            "bad per-listener value: %s", line)
    line = start_refused({})
    h.eq(line, "samsa: listener SSL: a TLS listener needs a key store: ssl.keystore.location, or ssl.keystore.key "
         "and ssl.keystore.certificate.chain (with ssl.keystore.type=PEM)", "no key store")
    line = start_refused({"ssl.keystore.type": "PEM", "ssl.keystore.location": path("missing.pem")})
    h.eq(line, "samsa: listener SSL: ssl.keystore.location '%s' cannot be opened" % path("missing.pem"),
         "missing key store")
    line = start_refused({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": path("server.p12"),
                          "listener.name.ssl.ssl.keystore.password": "wrong"})
    h.check(line.startswith("samsa: listener SSL: ssl.keystore.location '%s': wrong "
                            "listener.name.ssl.ssl.keystore.password or no key and certificate in it"
                            % path("server.p12")), "bad PKCS12 password: %s", line)
    line = start_refused({"ssl.keystore.type": "PEM", "ssl.keystore.key": read("server-enc.key"),
                          "ssl.keystore.certificate.chain": read("server.pem"), "ssl.key.password": "wrong"})
    h.check(line.startswith("samsa: listener SSL: no private key readable from ssl.keystore.key (wrong or missing "
                            "ssl.key.password?)"), "bad key password: %s", line)
    line = start_refused({"ssl.keystore.type": "PEM", "ssl.keystore.location": path("server-keystore.pem"),
                          "ssl.enabled.protocols": "TLSv1.1"})
    h.eq(line, "samsa: listener SSL: ssl.enabled.protocols: 'TLSv1.1' is not a TLS version samsa speaks "
         "(TLSv1.2, TLSv1.3)", "TLSv1.1")
    line = start_refused({"ssl.keystore.type": "PEM", "ssl.keystore.location": path("server-keystore.pem"),
                          "listener.name.ssl.ssl.cipher.suites": "TLS_AES_128_GCM_SHA256,TLS_NO_SUCH_SUITE"})
    h.eq(line, "samsa: listener SSL: listener.name.ssl.ssl.cipher.suites: 'TLS_NO_SUCH_SUITE' is not a cipher suite "
         "this OpenSSL knows", "unknown suite")
    line = start_refused({"ssl.keystore.type": "PEM", "ssl.keystore.location": path("server-keystore.pem"),
                          "ssl.protocol": "SSLv3"})
    h.eq(line, "samsa: listener SSL: ssl.protocol=SSLv3: use TLSv1.3, TLSv1.2 or TLS", "ssl.protocol")
    # the inter-broker listener's client must trust its own certificate
    # (Kafka's SslFactory check at configure); OpenSSL's default CAs do not
    line = start_refused({"ssl.keystore.type": "PEM", "ssl.keystore.location": path("server-keystore.pem")})
    h.check(line.startswith("samsa: listener SSL: a client with this inter-broker listener's key and trust stores "
                            "cannot connect to a server with them: the server's certificate is not trusted by the "
                            "client: "), "key store its trust store cannot verify: %s", line)
    line = start_refused({"ssl.keystore.type": "PEM", "ssl.keystore.location": path("server-keystore.pem"),
                          "ssl.truststore.type": "PKCS12", "ssl.truststore.location": path("server.p12"),
                          "ssl.truststore.password": "wrong"})
    h.check(line.startswith("samsa: listener SSL: ssl.truststore.location '%s': wrong ssl.truststore.password?"
                            % path("server.p12")), "bad trust store password: %s", line)


def keytool(src):
    return ("keytool -importkeystore -srckeystore %s -srcstoretype JKS -destkeystore %s -deststoretype PKCS12"
            % (src, src[:-4] + ".p12" if src.endswith(".jks") else src + ".p12"))


@suite.case
def startup_refuses_jks():
    """Kafka's default store type is JKS, a Java format OpenSSL does not
    read: unset or JKS, startup stops with one line naming the key and
    the keytool conversion, never an OpenSSL parse error."""
    jks = path("server.jks")
    with open(jks, "wb") as f:
        f.write(b"\xfe\xed\xfe\xed\x00\x00\x00\x02")  # a JKS header
    line = start_refused({"ssl.keystore.location": jks})
    h.eq(line, "samsa: listener SSL: ssl.keystore.type (or listener.name.ssl.ssl.keystore.type) is not set and "
         "Kafka's default is JKS, a Java format samsa does not read: set it to PEM or PKCS12; convert a JKS store "
         "with %s" % keytool(jks), "type unset, .jks file")
    line = start_refused({"ssl.keystore.location": path("server-keystore.pem")})
    h.eq(line, "samsa: listener SSL: ssl.keystore.type (or listener.name.ssl.ssl.keystore.type) is not set and "
         "Kafka's default is JKS, a Java format samsa does not read: set it to PEM or PKCS12; convert a JKS store "
         "with %s" % keytool(path("server-keystore.pem")), "type unset, PEM file")
    for key in ("ssl.keystore.type", "listener.name.ssl.ssl.keystore.type"):
        line = start_refused({key: "JKS", "ssl.keystore.location": jks})
        h.eq(line, "samsa: listener SSL: %s=JKS: samsa does not read Java key stores (OpenSSL has no JKS); convert "
             "the store to PKCS12 with %s and set %s=PKCS12, or use PEM" % (key, keytool(jks), key), key)
    line = start_refused({"ssl.keystore.type": "PEM", "ssl.keystore.location": path("server-keystore.pem"),
                          "ssl.truststore.location": jks})
    h.eq(line, "samsa: listener SSL: ssl.truststore.type (or listener.name.ssl.ssl.truststore.type) is not set and "
         "Kafka's default is JKS, a Java format samsa does not read: set it to PEM or PKCS12; convert a JKS store "
         "with %s" % keytool(jks), "trust store type unset")


suite.run(setup)
