"""OffsetForLeaderEpoch (KIP-320), which consumers send after a leader
change to detect a truncated log: advertised v0-v4; the end offset of each
epoch from the leader's epoch cache, as Kafka's endOffsetFor (the latest
epoch ends at the log end, an earlier one where the next starts, an
unknown one is -1/-1 without an error); FENCED_LEADER_EPOCH and
UNKNOWN_LEADER_EPOCH for a stale or future current leader epoch; unknown
topics and partitions. Asked raw (v3) and through @platformatic/kafka's
offsetForLeaderEpochV4 (flexible; its parser swaps two fields, so only
answers it reads right by chance are compared)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness as h  # noqa: E402
import kwire  # noqa: E402

S = h.Suite("offset_for_leader_epoch")
T = "ofle"
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75
UNKNOWN_TOPIC_OR_PARTITION = 3
srv = None


def setup():
    global srv
    srv = h.Server()
    h.ck_create_topic(srv.bootstrap, T, 1)


def leader_epoch():
    c = kwire.Conn(srv.port)
    try:
        md = kwire.metadata_v12(c, topics=[T])
    finally:
        c.close()
    t = [t for t in md["topics"] if t["name"] == T][0]
    return [p for p in t["partitions"] if p["partition"] == 0][0]["leader_epoch"]


def ask(topics):
    c = kwire.Conn(srv.port)
    try:
        return kwire.offset_for_leader_epoch_v3(c, topics)
    finally:
        c.close()


def ask_platformatic(topics):
    """topics: {name: [(partition, current, epoch)]} through the client's
    v4 request; the same shape back as ask(). For partition 0 without an
    error only: @platformatic/kafka 1.35 reads each answer's Partition
    before its ErrorCode, the reverse of Kafka's schema, so any other
    answer comes back garbled (its parseResponse in
    apis/consumer/offset-for-leader-epoch-v4.js)."""
    args = [-1, [{"name": n, "partitions": [{"partitionIndex": p, "currentLeaderEpoch": cur, "leaderEpoch": e}
                                            for p, cur, e in ps]} for n, ps in topics.items()]]
    res = h.platformatic_raw(srv.bootstrap, "offsetForLeaderEpochV4", args, client_id="ofle")
    out = {}
    for t in res["topics"]:
        for p in t["partitions"]:
            out[(t["topic"], p["partition"])] = (p["errorCode"], p["leaderEpoch"], int(p["endOffset"]))
    return out


@S.case
def advertised_v0_to_v4():
    c = kwire.Conn(srv.port)
    try:
        apis = kwire.api_versions(c, 3)
    finally:
        c.close()
    h.eq(apis["api_keys"].get(kwire.OFFSET_FOR_LEADER_EPOCH), (0, 4), "OffsetForLeaderEpoch versions")


@S.case
def end_offsets_across_a_leader_change():
    h.ck_produce(srv.bootstrap, T, [h.rec(b"k%d" % i, b"v%d" % i, [], 0) for i in range(5)])
    e0 = leader_epoch()
    want = {(T, 0): (0, e0, 5)}
    h.eq(ask({T: [(0, e0, e0)]}), want, "the latest epoch ends at the log end")
    h.eq(ask_platformatic({T: [(0, e0, e0)]}), want, "@platformatic/kafka: the latest epoch")
    h.eq(ask({T: [(0, -1, e0 + 1)]}), {(T, 0): (0, -1, -1)}, "an epoch above the latest: unknown, no error")
    h.eq(ask({T: [(0, e0 + 1, e0)]}), {(T, 0): (UNKNOWN_LEADER_EPOCH, -1, -1)}, "a future current epoch")

    # a restart moves the leadership away and back: a new epoch
    srv.restart()
    h.wait_topic(srv.bootstrap, T, 1)
    e1 = leader_epoch()
    # the controlled shutdown leaves the partition leaderless (one epoch),
    # the restart elects its only replica again (another)
    h.eq(e1, e0 + 2, "leader epoch after a restart (was %d)" % e0)
    h.ck_produce(srv.bootstrap, T, [h.rec(b"k%d" % i, b"v%d" % i, [], 0) for i in range(5, 8)])
    h.eq(ask({T: [(0, e1, e0)]}), {(T, 0): (0, e0, 5)}, "the old epoch ends where the new one starts")
    h.eq(ask({T: [(0, e1, e1)]}), {(T, 0): (0, e1, 8)}, "the new epoch ends at the log end")
    h.eq(ask({T: [(0, -1, e0 + 1)]}), {(T, 0): (0, e0, 5)}, "an epoch no batch was written in: the one before")
    h.eq(ask({T: [(0, e0, e1)]}), {(T, 0): (FENCED_LEADER_EPOCH, -1, -1)}, "a stale current epoch")
    h.eq(ask_platformatic({T: [(0, e1, e0)]}), {(T, 0): (0, e0, 5)}, "@platformatic/kafka: the old epoch")


@S.case
def unknown_topics_and_partitions():
    got = ask({T: [(9, -1, 0)], "ofle-missing": [(0, -1, 0)]})
    h.eq(got, {(T, 9): (UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
               ("ofle-missing", 0): (UNKNOWN_TOPIC_OR_PARTITION, -1, -1)}, "unknown partition and topic")


if __name__ == "__main__":
    S.run(setup)
