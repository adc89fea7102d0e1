"""SASL/OAUTHBEARER (module sasl-oauthbearer, Kafka's unsecured JWS
validator) on a SASL_PLAINTEXT listener through real clients:
confluent-kafka with librdkafka's own unsecured token
(enable.sasl.oauthbearer.unsecure.jwt), kafkajs and kafka-python with
tokens this test makes. Each produces and reads back exact records as
the token's principal; the listener's JAAS options are Kafka's
(unsecuredValidatorRequiredScope, unsecuredValidatorPrincipalClaimName).
An expired token, a signed one (alg HS256), a token without the required
scope and garbage are refused with Kafka's answers (the JSON error
challenge, then SASL_AUTHENTICATION_FAILED with it as the message).

A second listener, SIGNED, takes Kafka's OAuthBearerValidatorCallbackHandler
(KIP-768): tokens signed RS256 or ES256 (made with the openssl CLI) by a
key of the JWKS file at sasl.oauthbearer.jwks.endpoint.url, with the
expected audience; confluent-kafka (oauth_cb), kafkajs and kafka-python
authenticate as the token's subject. A token signed by a key the JWKS
lacks, an expired one, one for another audience and an unsecured one are
refused; a key added to the JWKS file later is picked up when a token
names it (that first token refused, the refresh brought forward).

A second server fetches its JWKS over HTTPS from a loopback python
http.server + ssl with a certificate of the test's own CA (JAAS option
ssl.truststore.location), refreshed every second: a key the server drops
stops validating, one it adds starts; a listener trusting another CA
logs one certificate verification failure and refuses its logins."""
# limit: 180
import base64
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness as h  # noqa: E402

suite = h.Suite("93_test_oauthbearer", case_limit=60)
state = {}
TOPIC = "oauth-topic"
JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
        'unsecuredValidatorRequiredScope="kafka" unsecuredValidatorAllowableClockSkewMs="1000";')


def srv():
    return state["server"]


def bootstrap():
    return "127.0.0.1:%d" % state["port"]


KEYS = os.path.join(h.WORK, "oauth-keys")


def kpath(name):
    return os.path.join(KEYS, name)


def openssl(*args, data=None):
    return subprocess.run(["openssl"] + list(args), input=data, capture_output=True, check=True, timeout=30).stdout


def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def make_key(name, kind):
    if kind == "RSA":
        openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", kpath(name))
        mod = openssl("rsa", "-in", kpath(name), "-noout", "-modulus").decode().strip().split("=", 1)[1]
        return {"kty": "RSA", "kid": name, "use": "sig", "alg": "RS256", "n": b64u(bytes.fromhex(mod)), "e": "AQAB"}
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", kpath(name))
    der = openssl("pkey", "-in", kpath(name), "-pubout", "-outform", "DER")
    pt = der[-65:]
    return {"kty": "EC", "kid": name, "crv": "P-256", "x": b64u(pt[1:33]), "y": b64u(pt[33:65])}


def write_jwks(keys):
    tmp = kpath("jwks.json.tmp")
    with open(tmp, "w") as f:
        json.dump({"keys": keys}, f)
    os.rename(tmp, kpath("jwks.json"))


def der_to_raw(sig, size=32):
    """An ECDSA DER signature as JWS's r || s."""
    assert sig[0] == 0x30
    i = 2 if sig[1] < 0x80 else 2 + (sig[1] & 0x7f)
    out = b""
    for _ in range(2):
        assert sig[i] == 0x02
        n = sig[i + 1]
        v = sig[i + 2:i + 2 + n].lstrip(b"\x00")
        out += v.rjust(size, b"\x00")
        i += 2 + n
    return out


def signed(kid, sub="svc-a", exp_in=600, aud="samsa-test", alg=None):
    kind = "EC" if kid.startswith("e") else "RSA"
    alg = alg or ("ES256" if kind == "EC" else "RS256")
    now = int(time.time())
    claims = {"sub": sub, "iat": now, "exp": now + exp_in, "aud": aud, "iss": "samsa-issuer"}
    head = "%s.%s" % (b64url({"alg": alg, "kid": kid, "typ": "JWT"}), b64url(claims))
    sig = openssl("dgst", "-sha256", "-sign", kpath(kid), data=head.encode())
    if kind == "EC":
        sig = der_to_raw(sig)
    return head + "." + b64u(sig)


def setup():
    os.makedirs(KEYS, exist_ok=True)
    state["jwks"] = [make_key("r1", "RSA"), make_key("e1", "EC")]
    state["r2"] = make_key("r2", "RSA")  # not in the JWKS until later
    make_key("rogue", "RSA")
    write_jwks(state["jwks"])
    s = h.Server(name="oauth", start=False)
    port, sport = h.free_ports(2)
    s.overrides.update({
        "listeners": "PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d,SIGNED://127.0.0.1:%d,"
                     "CONTROLLER://127.0.0.1:%d" % (s.port, port, sport, s.cport),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SIGNED:SASL_PLAINTEXT,"
                                          "CONTROLLER:PLAINTEXT",
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": JAAS,
        "listener.name.signed.oauthbearer.sasl.jaas.config":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
        "listener.name.signed.oauthbearer.sasl.server.callback.handler.class":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
        "sasl.oauthbearer.jwks.endpoint.url": "file://" + kpath("jwks.json"),
        "sasl.oauthbearer.expected.audience": "other-app,samsa-test",
        "sasl.oauthbearer.expected.issuer": "samsa-issuer",
        "samsa.log.level": "debug",
    })
    s.start()
    state["server"] = s
    state["port"] = port
    state["sport"] = sport
    p = h.run([h.SAMSACTL_BIN, "--bootstrap-server", s.bootstrap, "topics", "create", "--topic", TOPIC,
               "--partitions", "1", "--replication-factor", "1"])
    h.eq(p.returncode, 0, "topic creation")


def b64url(obj):
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


def token(sub="alice", exp_in=600, scope=("kafka",), alg="none", sig=""):
    now = int(time.time())
    claims = {"sub": sub, "iat": now, "exp": now + exp_in}
    if scope is not None:
        claims["scope"] = list(scope)
    return "%s.%s.%s" % (b64url({"alg": alg}), b64url(claims), sig)


def records(tag, n=3):
    return [h.rec(("k-%s-%d" % (tag, i)).encode(), ("v-%s-%d" % (tag, i)).encode(), []) for i in range(n)]


def next_offset():
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer(h.ck_conf(srv().bootstrap, **{"group.id": "oauth-probe"}))
    try:
        return c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)[1]
    finally:
        c.close()


def ck_oauth(principal, scope="kafka"):
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
            "enable.sasl.oauthbearer.unsecure.jwt": True,
            "sasl.oauthbearer.config": "principal=%s scope=%s lifeSeconds=600" % (principal, scope)}


@suite.case
def confluent_unsecured_jwt():
    want = records("ck")
    start = next_offset()
    since = srv().log_size()
    sent = h.ck_produce(bootstrap(), TOPIC, want, conf=ck_oauth("alice"))
    h.eq([r["offset"] for r in sent], list(range(start, start + 3)), "produced offsets")
    got = h.ck_consume(bootstrap(), TOPIC, 0, start, 3, conf=ck_oauth("alice"))
    h.compare_records(got, [dict(r, offset=start + i) for i, r in enumerate(want)], "confluent-kafka OAUTHBEARER",
                      timestamps=False)
    srv().wait_log(r"on SASL_PLAINTEXT authenticated as User:alice \(OAUTHBEARER\)", since)


@suite.case
def confluent_without_required_scope():
    """librdkafka's token with scope "other": the JSON challenge names
    the missing scope, then the login fails with it."""
    from confluent_kafka import Producer
    errs = []
    conf = h.ck_conf(bootstrap(), **ck_oauth("alice", scope="other"))
    conf["error_cb"] = lambda e: errs.append(str(e))
    p = Producer(conf)
    deadline = time.monotonic() + h.bound(15)
    while not any("insufficient_scope" in e for e in errs) and time.monotonic() < deadline:
        p.poll(0.2)
    h.check(any('{"status":"insufficient_scope", "scope":"[kafka]"}' in e for e in errs),
            "librdkafka errors: %s", errs[:3])


@suite.case
def kafkajs_token():
    want = records("js")
    start = next_offset()
    sasl = {"sasl": {"mechanism": "oauthbearer", "token": token(sub="bob")}}
    since = srv().log_size()
    res = h.node("kafkajs-produce", bootstrap(), {"topic": TOPIC, "kafkajs": sasl}, stdin=h.to_json_records(want))
    h.check(res.get("ok"), "kafkajs produce: %s", res)
    res = h.node("kafkajs-fetch", bootstrap(), {"topic": TOPIC, "partition": 0, "offset": start, "count": 3,
                                                 "kafkajs": sasl})
    got = h.from_json_records(res["records"])
    h.compare_records(got, [dict(r, offset=start + i) for i, r in enumerate(want)], "kafkajs OAUTHBEARER",
                      timestamps=False)
    srv().wait_log(r"on SASL_PLAINTEXT authenticated as User:bob \(OAUTHBEARER\)", since)


@suite.case
def kafkajs_refused_tokens():
    """kafkajs takes the server's JSON challenge for success and sends its
    next request, which ends the connection (as against Kafka): it
    cannot produce, and the server logs why the token was refused.
    A token with characters RFC 7628 does not allow fails the exchange
    at once with Kafka's message."""
    cases = [("expired", token(exp_in=-60), "The indicated time minus allowable clock skew was on or after the "
                                            "Expiration Time value"),
             ("signed", token(alg="HS256", sig="c2lnbmF0dXJl"), "Unsecured JWS must have 'none' for an algorithm"),
             ("no scope", token(scope=None), r"The provided scope was missing a required scope \(kafka\)"),
             ("not a JWS", "not-a-jws", "Unsecured JWS compact serializations must have 3 dot-separated "
                                       "Base64URL-encoded values"),
             ("garbage", "bad token!", None)]
    for what, tok, reason in cases:
        since = srv().log_size()
        res = h.node("kafkajs-produce", bootstrap(), {"topic": TOPIC, "kafkajs": {"sasl": {
            "mechanism": "oauthbearer", "token": tok}}}, stdin=h.to_json_records(records("bad")), check_rc=False)
        h.check(not res.get("ok"), "kafkajs with a %s token produced", what)
        if reason:
            srv().wait_log(r"OAUTHBEARER token refused: " + reason, since)
        else:
            want = "Authentication failed during authentication due to invalid credentials with SASL mechanism " \
                   "OAUTHBEARER"
            h.check(want in res.get("error", ""), "kafkajs %s token error: %s", what, res.get("error"))


def signed_bootstrap():
    return "127.0.0.1:%d" % state["sport"]


@suite.case
def signed_tokens_real_clients():
    """RS256 through confluent-kafka's oauth_cb and kafkajs, ES256
    through kafka-python: each reads back what it wrote."""
    from confluent_kafka import Producer
    want = records("signed-ck")
    start = next_offset()
    since = srv().log_size()
    tok = signed("r1", sub="svc-ck")
    conf = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
            "oauth_cb": lambda cfg: (tok, time.time() + 600)}
    sent = h.ck_produce(signed_bootstrap(), TOPIC, want, conf=conf)
    h.eq([r["offset"] for r in sent], list(range(start, start + 3)), "confluent-kafka produced offsets")
    srv().wait_log(r"on SIGNED authenticated as User:svc-ck \(OAUTHBEARER\)", since)
    del Producer
    sasl = {"sasl": {"mechanism": "oauthbearer", "token": signed("r1", sub="svc-js")}}
    res = h.node("kafkajs-fetch", signed_bootstrap(), {"topic": TOPIC, "partition": 0, "offset": start, "count": 3,
                                                        "kafkajs": sasl})
    h.compare_records(h.from_json_records(res["records"]), [dict(r, offset=start + i) for i, r in enumerate(want)],
                      "kafkajs signed token", timestamps=False)
    srv().wait_log(r"on SIGNED authenticated as User:svc-js \(OAUTHBEARER\)", since)
    kw = dict(security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
              sasl_oauth_token_provider=Provider(signed("e1", sub="svc-kp")))
    got = h.kp_consume(signed_bootstrap(), TOPIC, 0, start, 3, **kw)
    h.compare_records(got, [dict(r, offset=start + i) for i, r in enumerate(want)], "kafka-python ES256 token",
                      timestamps=False)
    srv().wait_log(r"on SIGNED authenticated as User:svc-kp \(OAUTHBEARER\)", since)


@suite.case
def signed_tokens_refused_and_key_rotation():
    cases = [("a key the JWKS lacks", signed("rogue"), "no key of the JWKS matches it"),
             ("expired", signed("r1", exp_in=-120), "the token has expired"),
             ("another audience", signed("e1", aud="someone-else"), "no expected audience in aud"),
             ("unsecured", token(), "algorithm none is not accepted")]
    for what, tok, reason in cases:
        since = srv().log_size()
        res = h.node("kafkajs-produce", signed_bootstrap(), {"topic": TOPIC, "kafkajs": {"sasl": {
            "mechanism": "oauthbearer", "token": tok}}}, stdin=h.to_json_records(records("bad")), check_rc=False)
        h.check(not res.get("ok"), "kafkajs with a token signed by %s produced", what)
        srv().wait_log(r"OAUTHBEARER token refused: .*" + reason, since)
    # a new key in the JWKS: as Kafka's RefreshingHttpsJwks, the first
    # login naming it is refused and brings the background refresh
    # forward (at most once a second); kafkajs's retry then gets in
    write_jwks(state["jwks"] + [state["r2"]])
    time.sleep(1.1)
    since = srv().log_size()
    want = records("rotated")
    start = next_offset()
    res = h.node("kafkajs-produce", signed_bootstrap(), {"topic": TOPIC, "kafkajs": {"sasl": {
        "mechanism": "oauthbearer", "token": signed("r2", sub="svc-new")}}}, stdin=h.to_json_records(want))
    h.check(res.get("ok"), "kafkajs with a token of the new key: %s", res)
    text = srv().log_text(since)
    refused = text.find("OAUTHBEARER token refused: Could not validate the access token: no key of the JWKS")
    read = text.find("OAUTHBEARER: read 3 usable key(s) from file://")
    ok = text.find("on SIGNED authenticated as User:svc-new (OAUTHBEARER)")
    # (the refusal's line and the refresh's may come in either order: the
    # thread may fetch before the worker logs)
    h.check(0 <= refused < ok and 0 <= read < ok, "refused (%d) and the refresh (%d), then accepted (%d):\n%s",
            refused, read, ok, text[-3000:])
    got = h.ck_consume(srv().bootstrap, TOPIC, 0, start, 3)
    h.compare_records(got, [dict(r, offset=start + i) for i, r in enumerate(want)], "records of the new key",
                      timestamps=False)


class Provider:
    def __init__(self, tok):
        self.tok = tok

    def token(self):
        return self.tok

    def extensions(self):
        return {}


# ------------------------------------------------------------ JWKS over HTTPS

def start_https(certs):
    """A loopback HTTPS server (python's http.server over ssl) serving
    state["https_keys"] as /jwks.json; every GET is counted."""
    import http.server
    import ssl
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            state["https_hits"] += 1
            if self.path != "/jwks.json":
                self.send_error(404)
                return
            body = json.dumps({"keys": state["https_keys"]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(certs, "web.pem"), os.path.join(certs, "web.key"))
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    state["https_hits"] = 0
    return httpd


def https_setup():
    """Once: a CA and a certificate for 127.0.0.1, the HTTPS server, and a
    samsa whose listener HTTPS validates against its JWKS (refreshed every
    second) and whose listener BADCA trusts another CA."""
    if "https" in state:
        return state["https"]
    certs = os.path.join(h.WORK, "oauth-web")
    os.makedirs(certs, exist_ok=True)
    for ca in ("webca", "otherca"):
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                os.path.join(certs, ca + ".key"), "-out", os.path.join(certs, ca + ".pem"), "-days", "2", "-subj",
                "/CN=" + ca)
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
            os.path.join(certs, "web.key"), "-out", os.path.join(certs, "web.csr"), "-subj", "/CN=jwks")
    with open(os.path.join(certs, "web.ext"), "w") as f:
        f.write("basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", os.path.join(certs, "web.csr"), "-CA", os.path.join(certs, "webca.pem"),
            "-CAkey", os.path.join(certs, "webca.key"), "-CAcreateserial", "-out", os.path.join(certs, "web.pem"),
            "-days", "2", "-extfile", os.path.join(certs, "web.ext"))
    state["https_keys"] = [state["jwks"][0]]  # r1
    httpd = start_https(certs)
    url = "https://127.0.0.1:%d/jwks.json" % httpd.server_address[1]
    s = h.Server(name="oauth-https", start=False)
    port, bad = h.free_ports(2)
    handler = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
    module = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
    s.overrides.update({
        "listeners": "PLAINTEXT://127.0.0.1:%d,HTTPS://127.0.0.1:%d,BADCA://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d"
                     % (s.port, port, bad, s.cport),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,HTTPS:SASL_PLAINTEXT,BADCA:SASL_PLAINTEXT,"
                                          "CONTROLLER:PLAINTEXT",
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.https.oauthbearer.sasl.jaas.config":
            '%s ssl.truststore.type="PEM" ssl.truststore.location="%s";' % (module, os.path.join(certs, "webca.pem")),
        "listener.name.https.oauthbearer.sasl.server.callback.handler.class": handler,
        "listener.name.https.sasl.oauthbearer.jwks.endpoint.url": url,
        "listener.name.https.sasl.oauthbearer.jwks.endpoint.refresh.ms": "1000",
        "listener.name.badca.oauthbearer.sasl.jaas.config":
            '%s ssl.truststore.location="%s";' % (module, os.path.join(certs, "otherca.pem")),
        "listener.name.badca.oauthbearer.sasl.server.callback.handler.class": handler,
        "listener.name.badca.sasl.oauthbearer.jwks.endpoint.url": url.replace("127.0.0.1", "localhost"),
        "sasl.oauthbearer.expected.audience": "samsa-test",
        "sasl.oauthbearer.expected.issuer": "samsa-issuer",
        "samsa.log.level": "debug",
    })
    s.start()
    p = h.run([h.SAMSACTL_BIN, "--bootstrap-server", s.bootstrap, "topics", "create", "--topic", TOPIC,
               "--partitions", "1", "--replication-factor", "1"])
    h.eq(p.returncode, 0, "topic creation")
    state["https"] = (s, "127.0.0.1:%d" % port, "127.0.0.1:%d" % bad, url)
    return state["https"]


def js_produce(bs, tok, tag):
    return h.node("kafkajs-produce", bs, {"topic": TOPIC, "kafkajs": {"sasl": {"mechanism": "oauthbearer",
                                                                               "token": tok}}},
                  stdin=h.to_json_records(records(tag)), check_rc=False)


@suite.case
def jwks_over_https():
    """The JWKS is fetched at startup by the module's thread over HTTPS
    (the JAAS option ssl.truststore.location names the CA), refreshed every
    sasl.oauthbearer.jwks.endpoint.refresh.ms: a key the server drops
    stops validating and one it adds starts, with no login waiting on it."""
    s, bs, _, url = https_setup()
    s.wait_log(r"OAUTHBEARER: read 1 usable key\(s\) from " + url.replace(".", r"\."), 0, limit=10)
    since = s.log_size()
    res = js_produce(bs, signed("r1", sub="svc-https"), "https-r1")
    h.check(res.get("ok"), "kafkajs with a token of the served key: %s", res)
    s.wait_log(r"on HTTPS authenticated as User:svc-https \(OAUTHBEARER\)", since)
    # the issuer rotates: r2 in, r1 out; the next refresh (<= 1 s) sees it
    hits = state["https_hits"]
    state["https_keys"] = [state["r2"]]
    deadline = time.monotonic() + h.bound(10)
    while state["https_hits"] < hits + 2:
        h.check(time.monotonic() < deadline, "no refresh within 10 s (%d fetches)", state["https_hits"] - hits)
        time.sleep(0.1)
    since = s.log_size()
    res = js_produce(bs, signed("r2", sub="svc-rotated"), "https-r2")
    h.check(res.get("ok"), "kafkajs with a token of the new key: %s", res)
    s.wait_log(r"on HTTPS authenticated as User:svc-rotated \(OAUTHBEARER\)", since)
    res = js_produce(bs, signed("r1", sub="svc-old"), "https-old")
    h.check(not res.get("ok"), "a token of the dropped key was accepted")
    s.wait_log(r"OAUTHBEARER token refused: .*no key of the JWKS matches it", since)


@suite.case
def jwks_over_https_untrusted():
    """A JWKS server whose certificate the listener's trust store does
    not accept: one warning, and logins there are refused."""
    s, _, bad, url = https_setup()
    s.wait_log(r"OAUTHBEARER: cannot refresh the JWKS \(the previous keys stay\): https://localhost:\d+/jwks\.json: "
               r"TLS: certificate verification failed", 0, limit=10)
    since = s.log_size()
    res = js_produce(bad, signed("r1", sub="svc-bad"), "https-bad")
    h.check(not res.get("ok"), "a login against an untrusted JWKS server was accepted")
    s.wait_log(r"OAUTHBEARER token refused: the JWKS of https://localhost:\d+/jwks\.json has not been retrieved yet",
               since)


@suite.case
def kafka_python_token():
    want = records("kp")
    start = next_offset()
    kw = dict(security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
              sasl_oauth_token_provider=Provider(token(sub="carol")))
    since = srv().log_size()
    sent = h.kp_produce(bootstrap(), TOPIC, want, **kw)
    h.eq([r["offset"] for r in sent], list(range(start, start + 3)), "kafka-python produced offsets")
    got = h.kp_consume(bootstrap(), TOPIC, 0, start, 3, **kw)
    h.compare_records(got, [dict(r, offset=start + i) for i, r in enumerate(want)], "kafka-python OAUTHBEARER",
                      timestamps=False)
    srv().wait_log(r"on SASL_PLAINTEXT authenticated as User:carol \(OAUTHBEARER\)", since)


if __name__ == "__main__":
    suite.run(setup)
