#!/usr/bin/env bash
# Codec benchmark (issue 4), run by hand, never timed in CI:
#   tools/bench/codecs.sh
# A fresh samsa on free loopback ports; for none and each codec module,
# samsa-loadgen (librdkafka) produces BENCH_RECORDS x BENCH_SIZE bytes
# and consumes them back, in two modes:
#   producer  the client compresses (compression.codec), the topic keeps
#             the producer's batches: the server decompresses to validate;
#   topic     the client sends uncompressed batches, the topic's
#             compression.type makes the server compress them (rebuild).
# Reported per row: produce and consume MB/s (of uncompressed payload),
# the server's CPU seconds per GB of payload for each phase (utime+stime
# from /proc/<pid>/stat), and the bytes stored. Ratios against the "none"
# row of the same run are what carry across machines.
#
# librdkafka compresses with lz4 only for brokers that offer FindCoordinator
# (rdkafka_feature.c); until samsa does, "lz4 producer" sends uncompressed
# batches and the row says so ("stored" equals none's).
#
# Environment:
#   BENCH_RECORDS=300000   records per phase
#   BENCH_SIZE=1000        payload bytes per record
#   BENCH_PAYLOAD=fixed    fixed (compressible) or random (incompressible)
#   BENCH_BUILDDIR=dir     where samsa, samsactl and samsa-loadgen are built
#   BENCH_CODECS="gzip snappy lz4 zstd"
#   BENCH_KEEP=1           keep the temp dir (data, log)
set -u -o pipefail

SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BENCH_BUILDDIR:-$SRC}
RECORDS=${BENCH_RECORDS:-300000}
SIZE=${BENCH_SIZE:-1000}
PAYLOAD=${BENCH_PAYLOAD:-fixed}
CODECS=${BENCH_CODECS:-gzip snappy lz4 zstd}
SAMSA=$BUILD/samsa
SAMSACTL=$BUILD/samsactl
LOADGEN=$BUILD/tools/loadgen/samsa-loadgen
HZ=$(getconf CLK_TCK)

die() { echo "bench-codecs: $*" >&2; exit 1; }
[ -x "$SAMSA" ] && [ -x "$SAMSACTL" ] || die "build samsa and samsactl first ($BUILD)"
[ -x "$LOADGEN" ] || die "samsa-loadgen not built (needs librdkafka-dev at configure time)"

BENCH_NAME=bench-codecs
# shellcheck source=one-node.sh
. "$SRC/tools/bench/one-node.sh"

cpu() { awk '{ print $14 + $15 }' "/proc/$PID/stat"; }
json() { grep "^{\"phase\":\"$1\"" | tail -1; }
field() { python3 -c 'import json,sys; print(json.loads(sys.stdin.read())[sys.argv[1]])' "$1"; }

printf 'samsa codec benchmark: %s records x %s B (%s payload), %s\n' "$RECORDS" "$SIZE" "$PAYLOAD" "$(date -u +%FT%TZ)"
printf '%-7s %-9s %10s %10s %12s %12s %12s\n' codec mode "prod MB/s" "cons MB/s" "prod cpu/GB" "cons cpu/GB" "stored MB"
GB=$(awk -v n="$RECORDS" -v s="$SIZE" 'BEGIN { printf "%.6f", n * s / 1e9 }')
status=0
run() { # codec mode client-codec topic-compression
    local codec=$1 mode=$2 client=$3 tcomp=$4 topic="bench-$1-$2"
    "$SAMSACTL" --bootstrap-server "$BOOT" topics create --topic "$topic" --partitions 1 \
        --config "compression.type=$tcomp" >/dev/null || { echo "create $topic failed"; status=1; return; }
    local c0 c1 c2 p c
    c0=$(cpu)
    p=$("$LOADGEN" produce -b "$BOOT" -t "$topic" -n "$RECORDS" -s "$SIZE" --payload "$PAYLOAD" \
        --compression "$client" --linger-ms 20 --json 2>&1 | json produce) || true
    c1=$(cpu)
    c=$("$LOADGEN" consume -b "$BOOT" -t "$topic" -n "$RECORDS" --json 2>&1 | json consume) || true
    c2=$(cpu)
    if [ -z "$p" ] || [ -z "$c" ]; then
        echo "$codec $mode: loadgen failed"; status=1; return
    fi
    local stored
    stored=$(du -sk "$TMP/data/$topic-0" | awk '{ printf "%.1f", $1 / 1024 }')
    printf '%-7s %-9s %10.1f %10.1f %12.2f %12.2f %12s\n' "$codec" "$mode" \
        "$(echo "$p" | field mb_per_s)" "$(echo "$c" | field mb_per_s)" \
        "$(awk -v a="$c0" -v b="$c1" -v hz="$HZ" -v gb="$GB" 'BEGIN { print (b - a) / hz / gb }')" \
        "$(awk -v a="$c1" -v b="$c2" -v hz="$HZ" -v gb="$GB" 'BEGIN { print (b - a) / hz / gb }')" \
        "$stored"
}
run none producer none producer
for z in $CODECS; do
    run "$z" producer "$z" producer
    run "$z" topic none "$z"
done
printf 'cpu/GB: server CPU seconds per GB of uncompressed payload.\n'
exit $status
