#!/bin/sh
# Parking benchmark, run by hand: idle CPU with 10 000 parked long-poll
# Fetches, CPU per append with and without them, and ApiVersions latency on
# a worker that auto-creates 200 topics (tools/bench/park_bench.py).
#   PARK_BENCH_FETCHES=10000 PARK_BENCH_APPENDS=20000 PARK_BENCH_IDLE_SECONDS=5
set -eu
SRC=$(cd "$(dirname "$0")/../.." && pwd)
export SAMSA_BIN="${SAMSA_BIN:-$SRC/samsa}"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/samsa-park-bench.XXXXXX")
export INTEROP_WORK="$WORK"
ulimit -n 65536 2>/dev/null || true
trap 'for p in $(cat "$WORK/pids" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$WORK"' EXIT
/usr/bin/python3 "$SRC/tools/bench/park_bench.py"
