#!/usr/bin/env bash
# Consume throughput through sendfile(2), and the server's CPU-seconds per
# GB served next to a bare sendfile loop over the same segment file in the
# same run (tools/bench/floor.c; goal: within 1.3x).
#
# One partition is filled with STORAGE_BENCH_MB megabytes by samsa-loadgen
# (one segment: segment.bytes is raised to hold it), then read from offset
# 0 to the end by samsa-loadgen consume, STORAGE_BENCH_RUNS times; the
# server's utime+stime (/proc/PID/stat) is sampled around each read. The
# floor sendfile()s the segment file to a loopback socket the same way.
#
#   STORAGE_BENCH_MB=800      data size
#   STORAGE_BENCH_RUNS=5      reads (median and least CPU are reported; the
#                             floor reports its least over as many runs)
#   STORAGE_BENCH_DIR=...     where data goes (default: a temp dir under /tmp)
set -u -o pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
MB=${STORAGE_BENCH_MB:-800}
RUNS=${STORAGE_BENCH_RUNS:-5}
HZ=$(getconf CLK_TCK)
SAMSA=$SRC/samsa
LOADGEN=$SRC/tools/loadgen/samsa-loadgen
TMP=$(mktemp -d "${STORAGE_BENCH_DIR:-${TMPDIR:-/tmp}}/samsa-storage-consume.XXXXXX") || exit 1
SPID=
cleanup() {
    [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
die() { echo "storage-consume: $*" >&2; exit 1; }
[ -x "$SAMSA" ] && [ -x "$LOADGEN" ] || die "build samsa and tools/loadgen/samsa-loadgen first"
cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -o "$TMP/floor" "$SRC/tools/bench/floor.c" || die "cannot build floor"

server_ticks() {
    local stat
    stat=$(cat "/proc/$SPID/stat") || { echo 0; return; }
    stat=${stat##*) }
    awk '{ print $12 + $13 }' <<<"$stat"
}

read -r PORT CPORT < <("$TMP/floor" ports 2)
DATA=$TMP/data
"$SAMSA" --override node.id=1 \
    --override "listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT" \
    --override "controller.quorum.voters=1@127.0.0.1:$CPORT" \
    --override "log.dirs=$DATA" >"$TMP/samsa.log" 2>&1 &
SPID=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done
B=127.0.0.1:$PORT
"$SRC/samsactl" --bootstrap-server "$B" topics create --topic cons --partitions 1 \
    --config segment.bytes=2147483647 >/dev/null || die "create failed"
n=$(( MB * 1024 ))  # 1000-byte records
echo "storage-consume: producing $MB MB"
"$LOADGEN" produce -b "$B" -t cons -n "$n" -s 1000 -a 1 --linger-ms 5 >"$TMP/produce.out" 2>&1 ||
    { cat "$TMP/produce.out"; die "produce failed"; }
SEG=$(ls "$DATA"/cons-0/*.log | head -1)
BYTES=$(stat -c %s "$SEG")
[ "$(ls "$DATA"/cons-0/*.log | wc -l)" = 1 ] || die "expected one segment"
sync

: >"$TMP/cpus"
for r in $(seq "$RUNS"); do
    t0=$(server_ticks)
    "$LOADGEN" consume -b "$B" -t cons -n "$n" >"$TMP/consume.out" 2>&1 || { cat "$TMP/consume.out"; die "consume failed"; }
    t1=$(server_ticks)
    cpu=$(awk -v a="$t0" -v b="$t1" -v hz="$HZ" 'BEGIN { printf "%.3f", (b - a) / hz }')
    line=$(grep -m1 "consume:" "$TMP/consume.out")
    echo "  read $r: server cpu ${cpu} s; $line"
    mbps=$(sed -n 's/.* \([0-9.]*\) MB\/s.*/\1/p' <<<"$line")
    echo "$cpu $mbps" >>"$TMP/cpus"
done
med_cpu=$(sort -n "$TMP/cpus" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
best_cpu=$(sort -n "$TMP/cpus" | head -1 | cut -d' ' -f1)
med_mbps=$(sort -n -k2 "$TMP/cpus" | awk '{ v[NR] = $2 } END { print v[int((NR + 1) / 2)] }')
fl=$("$TMP/floor" sendfile "$SEG" "$RUNS") || die "floor failed"
echo "  floor: $fl"
fcpu=$(sed -n 's/.* server_cpu=\([0-9.]*\).*/\1/p' <<<"$fl")
fmbps=$(sed -n 's/.* mb_per_s=\([0-9.]*\).*/\1/p' <<<"$fl")
gb=$(awk -v b="$BYTES" 'BEGIN { printf "%.3f", b / 1e9 }')
echo
echo "summary: $gb GB served from one segment"
awk -v c="$med_cpu" -v cb="$best_cpu" -v f="$fcpu" -v g="$gb" -v m="$med_mbps" -v fm="$fmbps" 'BEGIN {
    printf "  samsa:          %.3f server CPU-s per GB (median of reads; least %.3f), %s MB/s to the consumer (median)\n", c / g, cb / g, m
    printf "  sendfile floor: %.3f CPU-s per GB (least of its runs), %s MB/s\n", f / g, fm
    printf "  ratio median/floor (goal <= 1.3): %.2f; least/floor: %.2f\n", (f > 0) ? c / f : 0, (f > 0) ? cb / f : 0 }'
