#!/usr/bin/env bash
# Request-path locks (issue 12, "no global lock on the produce or fetch
# path"), run by hand: one fresh samsa with num.network.threads=2 on free
# loopback ports, 400 000 records preloaded into 8 partitions, then at once
# a producer sending one record per Produce (--batch-num 1, linger 0:
# LOCKS_RECORDS requests) and a consumer reading the preload in 1 KiB
# fetches (~60 000 Fetch requests). Prints the server's CPU ticks
# (utime+stime from /proc/PID/stat) and wall time of that phase. With
# PERF=1 it also records a perf profile of the phase
# (/tmp/samsa-locks.perf.data; `perf report --sort symbol`), with PSTAT=1
# it counts the server's futex syscalls (lock waits and wakes).
#
#   tools/bench/locks.sh [SAMSA_BINARY]     (default: ./samsa)
#   LOCKS_RECORDS=200000                     requests of the producer
set -u
SRC=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tools/bench/lib.sh
. "$SRC/tools/bench/lib.sh"
SAMSA=${1:-$SRC/samsa}
LG=$SRC/tools/loadgen/samsa-loadgen
N=${LOCKS_RECORDS:-200000}
[ -x "$LG" ] || { echo "locks: no $LG" >&2; exit 1; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/samsa-locks.XXXXXX")
read -r PORT CPORT < <(free_ports 2)
"$SAMSA" --override node.id=1 --override "listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT" \
    --override "controller.quorum.voters=1@127.0.0.1:$CPORT" --override "log.dirs=$TMP/data" \
    --override num.network.threads=2 >"$TMP/log" 2>&1 &
SPID=$!
cleanup() { kill -TERM $SPID 2>/dev/null; wait $SPID 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done
ticks() { local s; s=$(cat /proc/$SPID/stat); s=${s##*) }; awk '{print $12+$13}' <<<"$s"; }
B=127.0.0.1:$PORT
"$LG" produce -b "$B" -t pre -p 8 -n 400000 -s 100 >/dev/null 2>&1 || { echo "locks: preload failed" >&2; exit 1; }
t0=$(ticks); s0=$(date +%s.%N)
"$LG" produce -b "$B" -t t1 -p 8 -n "$N" -s 100 --batch-num 1 --linger-ms 0 >/dev/null 2>&1 &
P1=$!
"$LG" consume -b "$B" -t pre -X message.max.bytes=2048 -X fetch.max.bytes=2048 -X max.partition.fetch.bytes=1024 >/dev/null 2>"$TMP/consume.err" &
P2=$!
[ -n "${PSTAT:-}" ] && { perf stat -e syscalls:sys_enter_futex -p $SPID -o "$TMP/pstat" >/dev/null 2>&1 & PS=$!; }
[ -n "${PERF:-}" ] && { perf record -q -o /tmp/samsa-locks.perf.data -p $SPID >/dev/null 2>&1 & PP=$!; }
wait $P1 || echo "locks: producer failed" >&2
wait $P2 || { echo "locks: consumer failed:" >&2; tail -3 "$TMP/consume.err" >&2; }
[ -n "${PERF:-}" ] && { kill -INT $PP; wait $PP; }
[ -n "${PSTAT:-}" ] && { kill -INT $PS; wait $PS; awk '/futex/ { print "futex syscalls", $1 }' "$TMP/pstat"; }
t1=$(ticks); s1=$(date +%s.%N)
echo "server CPU ticks $((t1 - t0)) (HZ $(getconf CLK_TCK)), wall $(awk "BEGIN { print $s1 - $s0 }") s"
