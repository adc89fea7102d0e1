"""SASL authentication on a SASL_PLAINTEXT listener, with the PLAIN
(sasl-plain) and SCRAM-SHA-256/512 (sasl-scram) mechanisms, through real
clients: confluent-kafka and kcat (librdkafka: SaslHandshake v1 +
SaslAuthenticate v1), kafkajs, @platformatic/kafka (SaslAuthenticate v2),
and kafka-python (SaslHandshake v0, raw tokens). Each produces and reads back exact records after authenticating;
a wrong password fails with each client's own form of
SASL_AUTHENTICATION_FAILED and Kafka's message; a request other than
ApiVersions/SaslHandshake before authentication closes the connection;
SCRAM users come and go with samsactl users scram set/delete (stored in
the metadata log: they survive a restart)."""
# limit: 300
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness as h  # noqa: E402
import kwire  # noqa: E402

suite = h.Suite("94_test_sasl", case_limit=90)
state = {}

TOPIC = "sasl-topic"
PLAIN_USERS = {"alice": "alice-secret", "admin": "admin-secret"}
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
PLAIN_FAIL = "Authentication failed: Invalid username or password"


def scram_fail(mech):
    return "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mech


def srv():
    return state["server"]


def sasl_bootstrap():
    return "127.0.0.1:%d" % state["sasl_port"]


def samsactl(*args, rc=0, bootstrap=None, limit=30):
    p = h.run([h.SAMSACTL_BIN, "--bootstrap-server", bootstrap or srv().bootstrap] + list(args), limit=limit,
              check_rc=False)
    h.eq(p.returncode, rc, "samsactl %s exit status; stderr: %s" % (" ".join(args[:4]), p.stderr.decode()))
    return p.stdout.decode(), p.stderr.decode()


def sasl_server(name, **extra):
    """A server with a SASL_PLAINTEXT listener next to the PLAINTEXT one;
    returns it (started) and the SASL port."""
    s = h.Server(name=name, start=False)
    sport = h.free_ports(1)[0]
    s.overrides.update({
        "listeners": "PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d"
                     % (s.port, sport, s.cport),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    })
    s.overrides.update(extra)
    s.start()
    return s, sport


def setup():
    s, sport = sasl_server("sasl")
    state["server"] = s
    state["sasl_port"] = sport
    samsactl("topics", "create", "--topic", TOPIC, "--partitions", "1", "--replication-factor", "1")
    samsactl("users", "scram", "set", "--user", "carol", "--password", "carol-256", "--mechanism", "SCRAM-SHA-256")
    samsactl("users", "scram", "set", "--user", "carol", "--password", "carol-512", "--mechanism", "SCRAM-SHA-512",
             "--iterations", "8192")


def records(tag, n=3):
    return [h.rec(("k-%s-%d" % (tag, i)).encode(), ("v-%s-%d" % (tag, i)).encode() * (i + 1),
                  [("h", ("x%d" % i).encode())]) for i in range(n)]


def next_offset():
    """The log end offset of the topic (through the PLAINTEXT listener)."""
    from confluent_kafka import Consumer, TopicPartition, KafkaException
    import time
    c = Consumer(h.ck_conf(srv().bootstrap, **{"group.id": "unused"}))
    try:
        # After a restart the partition answers NOT_LEADER_OR_FOLLOWER until
        # its log has recovered (slow under sanitizers); a client retries.
        deadline = time.monotonic() + h.bound(20)
        while True:
            try:
                lo, hi = c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=h.bound(10))
                return hi
            except KafkaException as e:
                if e.args[0].code() != 6 or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    finally:
        c.close()


def ck_sasl(mech, user, password):
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mech, "sasl.username": user,
            "sasl.password": password}


def ck_roundtrip(mech, user, password, tag):
    conf = ck_sasl(mech, user, password)
    want = records(tag)
    start = next_offset()
    sent = h.ck_produce(sasl_bootstrap(), TOPIC, want, conf=conf)
    h.eq([r["offset"] for r in sent], list(range(start, start + len(want))), "confluent-kafka produced offsets")
    got = h.ck_consume(sasl_bootstrap(), TOPIC, 0, start, len(want), conf=conf)
    h.compare_records(got, [dict(r, offset=start + i) for i, r in enumerate(want)], "confluent-kafka %s" % mech,
                      timestamps=False)


def ck_auth_error(mech, user, password):
    """The first error a confluent-kafka producer reports (error_cb)."""
    from confluent_kafka import Producer
    errs = []
    conf = h.ck_conf(sasl_bootstrap(), **ck_sasl(mech, user, password))
    conf["error_cb"] = errs.append
    p = Producer(conf)
    import time
    deadline = time.monotonic() + h.bound(15)
    while not errs and time.monotonic() < deadline:
        p.poll(0.1)
    h.check(errs, "confluent-kafka reported no error within %.0fs", h.bound(15))
    return errs[0]


# ------------------------------------------------------------ confluent-kafka

@suite.case
def confluent_plain():
    ck_roundtrip("PLAIN", "alice", "alice-secret", "ck-plain")


@suite.case
def confluent_scram_sha_256():
    ck_roundtrip("SCRAM-SHA-256", "carol", "carol-256", "ck-256")


@suite.case
def confluent_scram_sha_512():
    ck_roundtrip("SCRAM-SHA-512", "carol", "carol-512", "ck-512")


@suite.case
def confluent_wrong_password():
    from confluent_kafka import KafkaError
    for mech, user, pw, msg in (("PLAIN", "alice", "wrong", PLAIN_FAIL),
                                ("SCRAM-SHA-256", "carol", "carol-512", scram_fail("SCRAM-SHA-256")),
                                ("SCRAM-SHA-512", "nobody", "x", scram_fail("SCRAM-SHA-512"))):
        e = ck_auth_error(mech, user, pw)
        h.eq(e.code(), KafkaError._AUTHENTICATION, "%s error code (%s)" % (mech, e))
        h.check("SASL authentication error: %s" % msg in e.str(), "%s error text: %s", mech, e.str())


# ------------------------------------------------------------ kcat

def kcat_x(mech, user, password):
    return ["-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=" + mech, "-X", "sasl.username=" + user,
            "-X", "sasl.password=" + password]


@suite.case
def kcat_plain_and_scram():
    for mech, user, pw in (("PLAIN", "admin", "admin-secret"), ("SCRAM-SHA-256", "carol", "carol-256"),
                           ("SCRAM-SHA-512", "carol", "carol-512")):
        want = [h.rec(("kk-%s-%d" % (mech, i)).encode(), ("kv-%s-%d" % (mech, i)).encode()) for i in range(3)]
        start = next_offset()
        h.kcat_produce(sasl_bootstrap(), TOPIC, 0, want, extra=kcat_x(mech, user, pw))
        got = h.kcat_consume(sasl_bootstrap(), TOPIC, 0, start, len(want), extra=kcat_x(mech, user, pw))
        h.compare_records(got, [dict(r, offset=start + i) for i, r in enumerate(want)], "kcat " + mech,
                          timestamps=False)


@suite.case
def kcat_wrong_password():
    for mech, user, pw, msg in (("PLAIN", "alice", "nope", PLAIN_FAIL),
                                ("SCRAM-SHA-512", "carol", "carol-256", scram_fail("SCRAM-SHA-512"))):
        p = h.run([h.KCAT, "-L", "-b", sasl_bootstrap(), "-m", "3"] + kcat_x(mech, user, pw), check_rc=False,
                  limit=20)
        err = p.stderr.decode()
        h.check(p.returncode != 0, "kcat -L with a wrong %s password succeeded", mech)
        h.check("SASL authentication error: %s" % msg in err, "kcat %s stderr: %s", mech, err[-800:])


# ------------------------------------------------------------ kafkajs

def js_sasl(mech, user, pw):
    return {"sasl": {"mechanism": mech, "username": user, "password": pw}}


@suite.case
def kafkajs_plain_and_scram():
    for mech, user, pw in (("plain", "alice", "alice-secret"), ("scram-sha-256", "carol", "carol-256"),
                           ("scram-sha-512", "carol", "carol-512")):
        want = records("js-" + mech)
        start = next_offset()
        res = h.node("kafkajs-produce", sasl_bootstrap(), {"topic": TOPIC, "kafkajs": js_sasl(mech, user, pw)},
                     stdin=h.to_json_records(want))
        h.check(res.get("ok"), "kafkajs produce: %s", res)
        res = h.node("kafkajs-fetch", sasl_bootstrap(), {"topic": TOPIC, "partition": 0, "offset": start,
                                                         "count": len(want), "kafkajs": js_sasl(mech, user, pw)})
        got = h.from_json_records(res["records"])
        h.compare_records(got, [dict(r, offset=start + i) for i, r in enumerate(want)], "kafkajs " + mech,
                          timestamps=False)


@suite.case
def kafkajs_wrong_password():
    for mech, user, pw, msg in (("plain", "alice", "bad", PLAIN_FAIL),
                                ("scram-sha-256", "carol", "bad", scram_fail("SCRAM-SHA-256"))):
        res = h.node("kafkajs-produce", sasl_bootstrap(), {"topic": TOPIC, "kafkajs": js_sasl(mech, user, pw)},
                     stdin=h.to_json_records(records("bad")), check_rc=False)
        h.check(not res.get("ok"), "kafkajs %s with a wrong password succeeded", mech)
        name = {"plain": "PLAIN", "scram-sha-256": "SCRAM SHA256"}[mech]
        want = "KafkaJSSASLAuthenticationError: SASL %s authentication failed: %s" % (name, msg)
        h.check(want in res.get("error", ""), "kafkajs %s error: %s", mech, res.get("error"))


@suite.case
def platformatic_plain_and_scram():
    """@platformatic/kafka speaks SaslAuthenticate v2 (flexible)."""
    for mech, user, pw in (("PLAIN", "alice", "alice-secret"), ("SCRAM-SHA-256", "carol", "carol-256"),
                           ("SCRAM-SHA-512", "carol", "carol-512")):
        sasl = {"platformatic": {"sasl": {"mechanism": mech, "username": user, "password": pw}}}
        want = records("plat-" + mech)
        start = next_offset()
        res = h.node("plat-produce", sasl_bootstrap(), dict(topic=TOPIC, **sasl), stdin=h.to_json_records(want))
        h.check(res.get("ok"), "platformatic produce: %s", res)
        res = h.node("plat-fetch", sasl_bootstrap(), dict(topic=TOPIC, partition=0, offset=start, count=len(want),
                                                          **sasl))
        got = h.from_json_records(res["records"])
        h.compare_records(got, [dict(r, offset=start + i) for i, r in enumerate(want)], "platformatic " + mech,
                          timestamps=False)
    res = h.node("plat-produce", sasl_bootstrap(),
                 {"topic": TOPIC, "platformatic": {"sasl": {"mechanism": "PLAIN", "username": "alice",
                                                            "password": "bad"}}},
                 stdin=h.to_json_records(records("plat-bad")), check_rc=False)
    h.check(not res.get("ok"), "platformatic with a wrong password succeeded")
    h.check("SASL_AUTHENTICATION_FAILED" in res.get("types", []), "platformatic error: %s %s", res.get("error"),
            res.get("types"))


# ------------------------------------------------------------ kafka-python

def kp_sasl(mech, user, pw):
    return dict(security_protocol="SASL_PLAINTEXT", sasl_mechanism=mech, sasl_plain_username=user,
                sasl_plain_password=pw)


@suite.case
def kafka_python_plain_and_scram():
    """kafka-python 2.0.2 speaks SaslHandshake v0 and raw tokens."""
    for mech, user, pw in (("PLAIN", "alice", "alice-secret"), ("SCRAM-SHA-256", "carol", "carol-256"),
                           ("SCRAM-SHA-512", "carol", "carol-512")):
        want = records("kp-" + mech)
        start = next_offset()
        sent = h.kp_produce(sasl_bootstrap(), TOPIC, want, **kp_sasl(mech, user, pw))
        h.eq([r["offset"] for r in sent], list(range(start, start + len(want))), "kafka-python produced offsets")
        got = h.kp_consume(sasl_bootstrap(), TOPIC, 0, start, len(want), **kp_sasl(mech, user, pw))
        h.compare_records(got, [dict(r, offset=start + i) for i, r in enumerate(want)], "kafka-python " + mech,
                          timestamps=False)


@suite.case
def kafka_python_wrong_password():
    """After a v0 handshake Kafka closes the connection on a failed
    exchange without an answer: kafka-python finds no broker."""
    from kafka.errors import NoBrokersAvailable
    for mech in ("PLAIN", "SCRAM-SHA-256"):
        since = srv().log_size()
        try:
            p = h.kp_producer(sasl_bootstrap(), **kp_sasl(mech, "alice" if mech == "PLAIN" else "carol", "wrong"))
            p.close(timeout=2)
            raise h.Failure("kafka-python %s with a wrong password connected" % mech)
        except NoBrokersAvailable:
            pass
        srv().wait_log(r"SASL authentication with %s failed: %s" % (mech, (PLAIN_FAIL if mech == "PLAIN"
                                                                           else scram_fail(mech))), since)


# ------------------------------------------------------------ the protocol by hand

def handshake_body(mech):
    return kwire.W().string(mech).bytes()


def parse_handshake(r):
    return r.i16(), r.array(lambda r: r.string())


@suite.case
def request_before_authentication_closes():
    c = kwire.Conn(state["sasl_port"], timeout=h.bound(5))
    try:
        av = kwire.api_versions(c, 0)
        h.eq(av["error_code"], 0, "ApiVersions error before authentication")
        h.eq(av["api_keys"].get(17), (0, 1), "SaslHandshake versions")
        h.eq(av["api_keys"].get(36), (0, 2), "SaslAuthenticate versions")
        since = srv().log_size()
        c.send(3, 0, kwire.W().i32(0).bytes())  # Metadata v0, all topics
        h.eq(c.expect_closed(timeout=h.bound(5)), b"", "bytes received before the close")
        srv().wait_log(r"unexpected Kafka request of type Metadata during SASL handshake", since)
    finally:
        c.close()
    # after a v1 handshake only SaslAuthenticate
    c = kwire.Conn(state["sasl_port"], timeout=h.bound(5))
    try:
        err, mechs = parse_handshake(c.request(17, 1, handshake_body("PLAIN")))
        h.eq((err, mechs), (0, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]), "SaslHandshake v1 answer")
        c.send(18, 0, kwire.api_versions_body(0))
        c.expect_closed(timeout=h.bound(5))
    finally:
        c.close()


@suite.case
def handshake_unsupported_mechanism_and_plaintext_listener():
    c = kwire.Conn(state["sasl_port"], timeout=h.bound(5))
    try:
        err, mechs = parse_handshake(c.request(17, 1, handshake_body("GSSAPI")))
        h.eq((err, mechs), (33, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]),
             "UNSUPPORTED_SASL_MECHANISM with the enabled mechanisms")
        c.expect_closed(timeout=h.bound(5))
    finally:
        c.close()
    # On a PLAINTEXT listener KafkaApis answers ILLEGAL_SASL_STATE.
    c = kwire.Conn(srv().port, timeout=h.bound(5))
    try:
        err, mechs = parse_handshake(c.request(17, 1, handshake_body("PLAIN")))
        h.eq((err, mechs), (34, []), "SaslHandshake on PLAINTEXT")
        r = c.request(36, 0, kwire.W().bytes_(b"\0alice\0alice-secret").bytes())
        h.eq((r.i16(), r.string()), (34, "SaslAuthenticate request received after successful authentication"),
             "SaslAuthenticate on PLAINTEXT")
        av = kwire.api_versions(c, 0)
        h.eq(av["error_code"], 0, "the connection stays usable")
    finally:
        c.close()


@suite.case
def sasl_authenticate_failure_by_hand():
    c = kwire.Conn(state["sasl_port"], timeout=h.bound(5))
    try:
        h.eq(parse_handshake(c.request(17, 1, handshake_body("PLAIN")))[0], 0, "handshake")
        r = c.request(36, 1, kwire.W().bytes_(b"\0alice\0wrong").bytes())
        err, msg, auth, lifetime = r.i16(), r.string(), r.bytes_(), r.i64()
        h.eq((err, msg, auth, lifetime), (58, PLAIN_FAIL, b"", 0), "SaslAuthenticate v1 answer")
        c.expect_closed(timeout=h.bound(5))
    finally:
        c.close()


# ------------------------------------------------------------ SCRAM users, samsactl

@suite.case
def scram_users_set_describe_delete():
    samsactl("users", "scram", "set", "--user", "dave", "--password", "dave-pw")
    out, _ = samsactl("users", "scram", "describe", "--user", "dave", "--user", "carol")
    h.eq(out.splitlines(), ["SCRAM credential configs for user-principal 'dave' are SCRAM-SHA-256=iterations=4096",
                            "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-256=iterations=4096, "
                            "SCRAM-SHA-512=iterations=8192"], "describe output")
    # dave can log in (samsactl over SASL, --sasl-* options)
    out, _ = samsactl("--sasl-mechanism", "SCRAM-SHA-256", "--sasl-username", "dave", "--sasl-password", "dave-pw",
                      "topics", "list", bootstrap=sasl_bootstrap())
    h.check(TOPIC in out.split(), "topics list over SCRAM: %s", out)
    samsactl("users", "scram", "delete", "--user", "dave")
    _, err = samsactl("users", "scram", "describe", "--user", "dave", rc=1)
    h.check("RESOURCE_NOT_FOUND" in err and "attemptToDescribeUserThatDoesNotExist: dave" in err, "stderr: %s", err)
    _, err = samsactl("--sasl-mechanism", "SCRAM-SHA-256", "--sasl-username", "dave", "--sasl-password", "dave-pw",
                      "topics", "list", bootstrap=sasl_bootstrap(), rc=1)
    h.check("SASL_AUTHENTICATION_FAILED" in err and scram_fail("SCRAM-SHA-256") in err, "stderr: %s", err)
    e = ck_auth_error("SCRAM-SHA-256", "dave", "dave-pw")
    h.check(scram_fail("SCRAM-SHA-256") in e.str(), "confluent-kafka after delete: %s", e.str())


@suite.case
def scram_alter_errors():
    _, err = samsactl("users", "scram", "set", "--user", "erin", "--password", "x", "--iterations", "100", rc=1)
    h.check("UNACCEPTABLE_CREDENTIAL" in err and "Too few iterations" in err, "stderr: %s", err)
    _, err = samsactl("users", "scram", "set", "--user", "erin", "--password", "x", "--iterations", "20000", rc=1)
    h.check("UNACCEPTABLE_CREDENTIAL" in err and "Too many iterations" in err, "stderr: %s", err)
    _, err = samsactl("users", "scram", "delete", "--user", "erin", rc=1)
    h.check("RESOURCE_NOT_FOUND" in err and "Attempt to delete a user credential that does not exist" in err,
            "stderr: %s", err)


@suite.case
def samsactl_command_config():
    path = os.path.join(h.WORK, "client.properties")
    with open(path, "w") as f:
        f.write("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                "username=\"carol\" password=\"carol-512\";\n")
    out, _ = samsactl("--command-config", path, "topics", "list", bootstrap=sasl_bootstrap())
    h.check(TOPIC in out.split(), "topics list with --command-config: %s", out)
    with open(path, "w") as f:
        f.write("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                "username=\"alice\" password=\"wrong\";\n")
    _, err = samsactl("--command-config", path, "topics", "list", bootstrap=sasl_bootstrap(), rc=1)
    h.check("SASL_AUTHENTICATION_FAILED: " + PLAIN_FAIL in err, "stderr: %s", err)


def plain_login(c, user, pw, version=1):
    err, _ = parse_handshake(c.request(17, 1, handshake_body("PLAIN")))
    h.eq(err, 0, "SaslHandshake error")
    r = c.request(36, version, kwire.W().bytes_(b"\0" + user.encode() + b"\0" + pw.encode()).bytes())
    return r.i16(), r.string(), r.bytes_(), r.i64()


@suite.case
def reauthentication_kip368():
    """connections.max.reauth.ms: SaslAuthenticate v1 answers the session
    lifetime; re-authenticating (same mechanism and principal) extends it;
    another principal fails; an expired session may send nothing else."""
    import time
    s, sport = sasl_server("reauth", **{"connections.max.reauth.ms": "3000"})
    try:
        c = kwire.Conn(sport, timeout=h.bound(5))
        try:
            h.eq(plain_login(c, "alice", "alice-secret"), (0, None, b"", 3000), "SaslAuthenticate v1 answer")
            c.request(3, 0, kwire.W().i32(0).bytes())  # Metadata v0 is served
            time.sleep(2.0)
            h.eq(plain_login(c, "alice", "alice-secret"), (0, None, b"", 3000), "re-authentication")
            time.sleep(2.0)  # past the first session's end, within the second's
            c.request(3, 0, kwire.W().i32(0).bytes())
        finally:
            c.close()
        c = kwire.Conn(sport, timeout=h.bound(5))
        try:
            h.eq(plain_login(c, "alice", "alice-secret")[0], 0, "login")
            err, msg, _, _ = plain_login(c, "admin", "admin-secret")
            h.eq((err, msg), (58, "Cannot change principals during re-authentication from User:alice: User:admin"),
                 "re-authentication as another principal")
            c.expect_closed(timeout=h.bound(5))
        finally:
            c.close()
        c = kwire.Conn(sport, timeout=h.bound(5))
        try:
            h.eq(plain_login(c, "alice", "alice-secret")[0], 0, "login")
            time.sleep(3.3)
            since = s.log_size()
            c.send(3, 0, kwire.W().i32(0).bytes())
            h.eq(c.expect_closed(timeout=h.bound(5)), b"", "bytes before the close")
            s.wait_log(r"unexpected Kafka request of type Metadata after the SASL session expired", since)
        finally:
            c.close()
    finally:
        s.stop()


@suite.case
def credentials_survive_restart():
    srv().restart()
    ck_roundtrip("SCRAM-SHA-512", "carol", "carol-512", "after-restart")


@suite.case
def startup_refuses_unknown_mechanism():
    port, cport = h.free_ports(2)
    p = h.run([h.SAMSA_BIN, "--override", "node.id=1",
               "--override", "listeners=SASL_PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (port, cport),
               "--override", "listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
               "--override", "security.inter.broker.protocol=SASL_PLAINTEXT",
               "--override", "controller.quorum.voters=1@127.0.0.1:%d" % cport,
               "--override", "log.dirs=%s" % os.path.join(h.WORK, "refused"),
               "--override", "sasl.enabled.mechanisms=GSSAPI"], check_rc=False, limit=20)
    h.eq(p.returncode, 2, "exit status")
    h.eq(p.stderr.decode().strip().splitlines()[-1], "samsa: listener SASL_PLAINTEXT: SASL mechanism GSSAPI is enabled but no loaded "
         "plugin provides it (modules sasl-plain: PLAIN, sasl-scram: SCRAM-SHA-256 and SCRAM-SHA-512, "
         "sasl-oauthbearer: OAUTHBEARER)",
         "startup error")


suite.run(setup)
