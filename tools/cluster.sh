#!/bin/sh
# A local samsa cluster on loopback ports, for development and tests.
#
#   tools/cluster.sh start [--split] [--dir DIR]   format (first time) and start, wait until ready
#   tools/cluster.sh stop  [--dir DIR]             SIGTERM every node, wait for them to exit
#   tools/cluster.sh status [--dir DIR]            samsactl quorum status and cluster describe
#
# Default: 3 combined nodes (broker + controller) from etc/cluster/node1-3.conf,
# brokers on 127.0.0.1:9091-9093, controllers on 9101-9103. --split: 3
# controllers (etc/cluster/controller1-3.conf) and 3 brokers
# (etc/cluster/broker4-6.conf, on 9091-9093). Data, logs and pid files go
# to DIR (default ./cluster-data); every node is formatted with one
# cluster id the first time. SAMSA_BIN / SAMSACTL_BIN override the
# binaries (default: the in-tree build).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SAMSA=${SAMSA_BIN:-$ROOT/samsa}
SAMSACTL=${SAMSACTL_BIN:-$ROOT/samsactl}
CONF=$ROOT/etc/cluster
DIR=./cluster-data
SPLIT=0

cmd=${1:-}
[ -n "$cmd" ] && shift
while [ $# -gt 0 ]; do
    case $1 in
        --split) SPLIT=1 ;;
        --dir) DIR=$2; shift ;;
        *) echo "cluster.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)

if [ -f "$DIR/layout" ]; then SPLIT=$(cat "$DIR/layout"); fi
if [ "$SPLIT" = 1 ]; then
    NODES="controller1 controller2 controller3 broker4 broker5 broker6"
else
    NODES="node1 node2 node3"
fi
BOOTSTRAP=127.0.0.1:9091,127.0.0.1:9092,127.0.0.1:9093

alive() { [ -f "$DIR/$1.pid" ] && kill -0 "$(cat "$DIR/$1.pid")" 2>/dev/null; }

start() {
    echo "$SPLIT" >"$DIR/layout"
    if [ ! -f "$DIR/cluster-id" ]; then
        "$SAMSA" random-uuid >"$DIR/cluster-id"
    fi
    cid=$(cat "$DIR/cluster-id")
    for n in $NODES; do
        if [ ! -f "$DIR/$n/meta.properties" ]; then
            "$SAMSA" format -c "$CONF/$n.conf" --override "log.dirs=$DIR/$n" --cluster-id "$cid" >/dev/null
        fi
    done
    for n in $NODES; do
        if alive "$n"; then echo "$n already running (pid $(cat "$DIR/$n.pid"))"; continue; fi
        "$SAMSA" -c "$CONF/$n.conf" --override "log.dirs=$DIR/$n" >>"$DIR/$n.log" 2>&1 &
        echo $! >"$DIR/$n.pid"
    done
    # ready: a quorum leader, and every broker unfenced
    want=3
    i=0
    while [ $i -lt 300 ]; do
        n=$("$SAMSACTL" --bootstrap-server "$BOOTSTRAP" cluster describe 2>/dev/null | grep -c ' unfenced$' || true)
        if [ "$n" -ge "$want" ]; then
            echo "cluster ready (cluster id $cid): brokers $BOOTSTRAP, data and logs in $DIR"
            return 0
        fi
        sleep 0.1
        i=$((i + 1))
    done
    echo "cluster.sh: not ready after 30 s; see $DIR/*.log" >&2
    return 1
}

stop() {
    for n in $NODES; do
        if alive "$n"; then kill "$(cat "$DIR/$n.pid")"; fi
    done
    for n in $NODES; do
        i=0
        while alive "$n" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
        if alive "$n"; then kill -9 "$(cat "$DIR/$n.pid")"; fi
        rm -f "$DIR/$n.pid"
    done
    echo "cluster stopped"
}

case $cmd in
    start) start ;;
    stop) stop ;;
    status)
        "$SAMSACTL" --bootstrap-server "$BOOTSTRAP" quorum status --replication
        echo
        "$SAMSACTL" --bootstrap-server "$BOOTSTRAP" cluster describe
        ;;
    *) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
