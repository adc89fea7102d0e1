#!/bin/sh
# Produce latency at 10 000 records/s with replication factor 3 and
# acks=all on three local nodes, through segment rolls, retention,
# compaction and a follower catching up (tools/bench/latency_bench.py).
#   LATENCY_BENCH_RATE=10000 LATENCY_BENCH_SECONDS=10
set -eu
SRC=$(cd "$(dirname "$0")/../.." && pwd)
export SAMSA_BIN="${SAMSA_BIN:-$SRC/samsa}"
export SAMSACTL_BIN="${SAMSACTL_BIN:-$SRC/samsactl}"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/samsa-latency-bench.XXXXXX")
export INTEROP_WORK="$WORK"
trap 'for p in $(cat "$WORK/pids" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$WORK"' EXIT
/usr/bin/python3 "$SRC/tools/bench/latency_bench.py"
