"""EnvelopeRequest (KIP-590) on the controller listener, driven raw: what
a broker sends when it forwards an admin request to the active
controller with the client's principal and address.

- A CreateTopics v4 in an envelope is run by the controller and its
  exact answer comes back inside the EnvelopeResponse (the inner
  correlation id kept); the topic exists afterwards (Metadata).
- A principal that does not deserialize answers
  PRINCIPAL_DESERIALIZATION_FAILURE; a client address that is not 4 or
  16 bytes, an envelope inside an envelope, an inner API the controller
  does not serve and an inner request that does not parse answer
  INVALID_REQUEST, each without closing the broker's connection (the
  next envelope on it is answered).
- On a client listener, Envelope is not an API: the connection closes.

Forwarding itself (brokers wrapping what they forward) is exercised by
the split-cluster tests (tests/cluster/cases/20_split.py)."""
# limit: 60
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness as h  # noqa: E402
import kwire as K  # noqa: E402

suite = h.Suite("98_test_envelope", case_limit=30)
state = {}
ENVELOPE = 58


def srv():
    return state["server"]


def setup():
    state["server"] = h.Server()


def principal(ptype="User", name="alice", version=0):
    return struct.pack(">h", version) + K.W().cstring(ptype).cstring(name).boolean(False).tags().bytes()


def inner_frame(api_key, version, body, corr, header_version=1):
    return K.frame(api_key, version, body, header_version, corr, "inner-client")[4:]


def envelope(conn, data, princ, addr=b"\x7f\x00\x00\x01"):
    """(error_code, response_data) of one EnvelopeRequest v0."""
    body = K.W().cbytes(data).cbytes(princ).cbytes(addr).tags().bytes()
    r = conn.request(ENVELOPE, 0, body, flexible=True)
    data = r.cbytes()
    err = r.i16()
    r.tags()
    h.eq(r.remaining(), 0, "EnvelopeResponse bytes left over")
    return err, data


def create_topics_inner(name, corr):
    return inner_frame(K.CREATE_TOPICS, 4, K.create_topics_v4_body([(name, 2, 1, {})]), corr)


@suite.case
def create_topics_in_an_envelope():
    c = K.Conn(srv().cport)
    try:
        err, data = envelope(c, create_topics_inner("env-topic", 4242), principal())
    finally:
        c.close()
    h.eq(err, 0, "envelope error code")
    r = K.R(data)
    h.eq(r.i32(), 4242, "inner correlation id")
    r.i32()  # throttle
    res = r.array(lambda r: (r.string(), r.i16(), r.string()))
    h.eq(res, [("env-topic", 0, None)], "inner CreateTopics answer")
    h.eq(r.remaining(), 0, "inner answer bytes left over")
    from confluent_kafka.admin import AdminClient
    a = AdminClient({"bootstrap.servers": srv().bootstrap})
    t = a.list_topics("env-topic", timeout=10).topics["env-topic"]
    h.eq((t.error, sorted(t.partitions)), (None, [0, 1]), "env-topic in Metadata")


@suite.case
def bad_envelopes_answer_errors():
    c = K.Conn(srv().cport)
    try:
        inner = create_topics_inner("never-made", 1)
        h.eq(envelope(c, inner, b"\x00\x07junk")[0], 97, "unknown principal version")
        h.eq(envelope(c, inner, b"\x00")[0], 97, "truncated principal")
        h.eq(envelope(c, inner, principal(ptype=""))[0], 97, "empty principal type")
        h.eq(envelope(c, inner, principal(), addr=b"\x01\x02\x03")[0], 42, "3-byte client address")
        nested = inner_frame(ENVELOPE, 0, K.W().cbytes(inner).cbytes(principal()).cbytes(b"\x7f\0\0\1").tags()
                             .bytes(), 2, header_version=2)
        h.eq(envelope(c, nested, principal())[0], 42, "envelope in an envelope")
        produce = inner_frame(K.PRODUCE, 3, b"\x00" * 16, 3)
        h.eq(envelope(c, produce, principal())[0], 42, "Produce: not a controller API")
        broken = inner_frame(K.CREATE_TOPICS, 4, b"\x00\x00\x00\x05\x00", 4)
        h.eq(envelope(c, broken, principal())[0], 42, "inner CreateTopics that does not parse")
        # the connection is still served
        err, data = envelope(c, create_topics_inner("after-errors", 5), principal(name="bob"))
        h.eq(err, 0, "an envelope after the refused ones")
        h.eq(K.R(data).i32(), 5, "its inner correlation id")
    finally:
        c.close()
    from confluent_kafka.admin import AdminClient
    a = AdminClient({"bootstrap.servers": srv().bootstrap})
    names = set(a.list_topics(timeout=10).topics)
    h.check("never-made" not in names, "a refused envelope created its topic")
    h.check("after-errors" in names, "the last envelope's topic is missing")


@suite.case
def not_an_api_on_client_listeners():
    c = K.Conn(srv().port)
    try:
        body = K.W().cbytes(create_topics_inner("x", 1)).cbytes(principal()).cbytes(b"\x7f\0\0\1").tags().bytes()
        c.send(ENVELOPE, 0, body, header_version=2)
        h.eq(c.expect_closed(), b"", "bytes before the close")
    finally:
        c.close()


if __name__ == "__main__":
    suite.run(setup)
