"""offsets.topic.compression.codec: the group coordinator writes
__consumer_offsets batches compressed with that codec (4: zstd, through
its plugin), they load back after a restart, and a codec no loaded
plugin provides stops startup with one line."""
import glob
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import SAMSA_BIN, Server, Suite, check, eq, bound, ck_create_topic, ck_conf, free_ports  # noqa: E402

S = Suite("offsets_compression")
T = "oc-t"


def offsets_batch_codecs(data_dir):
    """The codec ids of every data batch in the __consumer_offsets logs."""
    codecs = []
    for path in glob.glob(os.path.join(data_dir, "__consumer_offsets-*", "*.log")):
        with open(path, "rb") as f:
            data = f.read()
        pos = 0
        while len(data) - pos >= 61:
            batch_len = struct.unpack(">i", data[pos + 8:pos + 12])[0]
            attrs = struct.unpack(">h", data[pos + 21:pos + 23])[0]
            if not attrs & 0x20:  # control batches are never compressed
                codecs.append(attrs & 0x7)
            pos += 12 + batch_len
    return codecs


def commit_and_read(srv, group, offset):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer(ck_conf(srv.bootstrap, **{"group.id": group, "enable.auto.commit": False}))
    try:
        if offset is not None:
            c.commit(offsets=[TopicPartition(T, 0, offset)], asynchronous=False)
        got = c.committed([TopicPartition(T, 0)], timeout=bound(20))
        return got[0].offset
    finally:
        c.close()


@S.case
def zstd_offsets_written_and_reloaded():
    srv = Server({"offsets.topic.compression.codec": "4", "offsets.topic.num.partitions": "1"})
    try:
        ck_create_topic(srv.bootstrap, T, 1)
        eq(commit_and_read(srv, "oc-g", 7), 7, "committed offset read back")
        codecs = offsets_batch_codecs(srv.data)
        check(len(codecs) >= 1, "__consumer_offsets has data batches: %r" % codecs)
        eq(set(codecs), {4}, "every coordinator batch is zstd")
        srv.restart()
        eq(commit_and_read(srv, "oc-g", None), 7, "the compressed commit loads after a restart")
    finally:
        srv.stop()


@S.case
def codec_without_plugin_refused():
    port, cport = free_ports(2)
    args = ["--override", "node.id=1",
            "--override", "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (port, cport),
            "--override", "controller.quorum.voters=1@127.0.0.1:%d" % cport,
            "--override", "log.dirs=%s" % os.path.join(os.environ.get("TMPDIR", "/tmp"), "oc-none-%d" % port),
            "--override", "plugins=codec-gzip",
            "--override", "offsets.topic.compression.codec=4"]
    p = subprocess.run([SAMSA_BIN] + args, stdin=subprocess.DEVNULL, capture_output=True, timeout=bound(20))
    eq(p.returncode, 2, "exit status (stderr: %r)" % p.stderr[-300:])
    lines = [l for l in p.stderr.decode("utf-8", "replace").splitlines()
             if l.strip() and " samsa INFO: " not in l]
    eq(len(lines), 1, "one line: %r" % lines)
    check("offsets.topic.compression.codec" in lines[0] and "zstd" in lines[0], "names key and codec: %r" % lines[0])


if __name__ == "__main__":
    S.run()
