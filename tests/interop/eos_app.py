"""A consume-transform-produce application for interop 41: a
read_committed consumer in a group on the input topic, a transactional
producer writing one transformed record per input record to the output
topic, and the consumer's position committed inside the same transaction
(send_offsets_to_transaction), every --every records or when the input
runs dry. Exits 0 when its committed position has reached --end on every
input partition (the test produced all input before starting it).

Run as a separate /usr/bin/python3 process so that the test can kill -9
it anywhere; prints one line per event ("ready", "committed N", "done")
to stdout, flushed, for the test to follow.

  eos_app.py BOOTSTRAP TXN_ID GROUP IN OUT --end P:OFF,... [--every N] [--record-ms MS] [--limit S]
"""
import argparse
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


def transform(value):
    return b"T(" + value + b")"


def say(*a):
    print(*a, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bootstrap")
    ap.add_argument("tid")
    ap.add_argument("group")
    ap.add_argument("inp")
    ap.add_argument("out")
    ap.add_argument("--end", required=True, help="P:OFF,... high watermarks of the input")
    ap.add_argument("--every", type=int, default=25)
    ap.add_argument("--record-ms", type=float, default=0.0,
                    help="time the transform takes per record (so a kill finds work in progress)")
    ap.add_argument("--limit", type=float, default=60.0, help="seconds before giving up (exit 3)")
    ap.add_argument("--timeout", type=float, default=30.0, help="bound of each blocking client call")
    a = ap.parse_args()
    end = {int(p): int(o) for p, o in (x.split(":") for x in a.end.split(","))}
    deadline = time.monotonic() + a.limit

    p = Producer({"bootstrap.servers": a.bootstrap, "transactional.id": a.tid,
                  "transaction.timeout.ms": 20000, "socket.timeout.ms": 10000,
                  "message.timeout.ms": 20000, "linger.ms": 5})
    # fences the killed predecessor and aborts its open transaction, so
    # that the offsets committed below are stable before the consumer
    # fetches them
    p.init_transactions(a.timeout)
    # static membership: the restarted process takes the killed one's
    # place without waiting for its session to time out
    c = Consumer({"bootstrap.servers": a.bootstrap, "group.id": a.group,
                  "group.instance.id": a.tid, "session.timeout.ms": 6000,
                  "isolation.level": "read_committed", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "fetch.wait.max.ms": 50,
                  "socket.timeout.ms": 10000})
    c.subscribe([a.inp])
    say("ready")
    p.begin_transaction()
    pending = 0
    done = 0
    while True:
        if time.monotonic() > deadline:
            say("timeout after %.0fs with %d records committed" % (a.limit, done))
            sys.exit(3)
        msgs = c.consume(num_messages=a.every - pending, timeout=0.2)
        for m in msgs:
            if m.error():
                say("consumer error: %s" % m.error())
                sys.exit(2)
            if a.record_ms:
                time.sleep(a.record_ms / 1000.0)
            p.produce(a.out, key=m.key(), value=transform(m.value()))
            pending += 1
        if pending and (pending >= a.every or not msgs):
            asg = c.assignment()
            pos = [tp for tp in c.position(asg) if tp.offset >= 0]
            p.send_offsets_to_transaction(pos, c.consumer_group_metadata(), a.timeout)
            p.commit_transaction(a.timeout)
            done += pending
            say("committed %d" % pending)
            pending = 0
            if {tp.partition: tp.offset for tp in pos} == end:
                break
            p.begin_transaction()
        elif not msgs and not pending:
            # nothing to read: finished when the group's committed
            # offsets (from an earlier run) already cover the input
            asg = c.assignment()
            if len(asg) == len(end):
                com = c.committed(asg, timeout=a.timeout)
                if {tp.partition: tp.offset for tp in com} == end:
                    p.abort_transaction(a.timeout)
                    break
    say("done %d" % done)
    c.close()
    p.flush(a.timeout)


if __name__ == "__main__":
    try:
        main()
    except KafkaException as e:
        say("kafka error: %s" % e)
        sys.exit(2)
