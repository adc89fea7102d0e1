#!/usr/bin/env bash
# Produce with a Lua partitioner against librdkafka's default (issue 11,
# goal: within 10 %), run by hand or `make bench-lua-produce`:
#   tools/bench/lua-produce.sh
# A fresh samsa on free loopback ports; samsa-loadgen (librdkafka)
# produces BENCH_RECORDS keyed records ("k<i mod BENCH_KEYS>", 100 B
# values, acks=1) into a topic of BENCH_PARTITIONS partitions, alternating
#   default  librdkafka's murmur2_random partitioner (Java-compatible);
#   lua      samsa-partitioner.so with lua/partitioners/murmur2.lua, which
#            puts every key in the same partition as murmur2_random.
# Reported per run: records/s and the client's CPU (user+sys) per record;
# at the end the medians and lua/default ratios. The server and the
# machine are shared by both rows, so only the ratio carries.
#
# Environment:
#   BENCH_RECORDS=500000  BENCH_KEYS=1000  BENCH_PARTITIONS=6
#   BENCH_ROUNDS=4        rounds of (default, lua), alternating which goes first
#   BENCH_SCRIPT=path     the partitioner script (lua/partitioners/murmur2.lua)
#   BENCH_BUILDDIR=dir    where samsa, samsactl, samsa-loadgen and the plugin are built
#   BENCH_KEEP=1          keep the temp dir (data, logs)
set -u -o pipefail

SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BENCH_BUILDDIR:-$SRC}
RECORDS=${BENCH_RECORDS:-500000}
KEYS=${BENCH_KEYS:-1000}
PARTS=${BENCH_PARTITIONS:-6}
ROUNDS=${BENCH_ROUNDS:-4}
SCRIPT=${BENCH_SCRIPT:-$SRC/lua/partitioners/murmur2.lua}
SAMSA=$BUILD/samsa
SAMSACTL=$BUILD/samsactl
LOADGEN=$BUILD/tools/loadgen/samsa-loadgen
PLUGIN=$BUILD/tools/rdkafka-partitioner/.libs/samsa-partitioner.so

die() { echo "bench-lua-produce: $*" >&2; exit 1; }
[ -x "$SAMSA" ] && [ -x "$SAMSACTL" ] || die "build samsa and samsactl first ($BUILD)"
[ -x "$LOADGEN" ] || die "samsa-loadgen not built (needs librdkafka-dev at configure time)"
[ -f "$PLUGIN" ] || die "samsa-partitioner.so not built ($PLUGIN)"
[ -x /usr/bin/time ] || die "needs /usr/bin/time for the client's CPU"

BENCH_NAME=bench-lua-produce
# shellcheck source=one-node.sh
. "$SRC/tools/bench/one-node.sh"

printf 'samsa produce with a Lua partitioner: %s records x 100 B, %s keys, %s partitions, %s\n' \
    "$RECORDS" "$KEYS" "$PARTS" "$(date -u +%FT%TZ)"
printf 'script %s\n' "$SCRIPT"
printf '%-8s %-5s %12s %16s\n' row round "records/s" "client us/rec"
: >"$TMP/results"
status=0
run() { # row round
    local row=$1 r=$2 topic="bench-$1-$2" x=()
    if [ "$row" = lua ]; then
        x=(-X "plugin.library.paths=$PLUGIN" -X "samsa.partitioner.script=$SCRIPT")
    else
        x=(-X partitioner=murmur2_random)
    fi
    "$SAMSACTL" --bootstrap-server "$BOOT" topics create --topic "$topic" --partitions "$PARTS" >/dev/null ||
        { echo "create $topic failed"; status=1; return; }
    if ! /usr/bin/time -f '%U %S' -o "$TMP/time" "$LOADGEN" produce -b "$BOOT" -t "$topic" -n "$RECORDS" -s 100 \
        --keys "$KEYS" --json "${x[@]}" >"$TMP/out" 2>"$TMP/err"; then
        echo "$row round $r failed: $(tail -2 "$TMP/err")"; status=1; return
    fi
    local rate cpu
    rate=$(grep '^{"phase":"produce"' "$TMP/out" | tail -1 |
        python3 -c 'import json,sys; print(round(json.loads(sys.stdin.read())["records_per_s"]))') ||
        { echo "$row round $r: no JSON line"; status=1; return; }
    cpu=$(awk -v n="$RECORDS" '{ printf "%.3f", ($1 + $2) * 1e6 / n }' "$TMP/time")
    printf '%-8s %-5s %12s %16s\n' "$row" "$r" "$rate" "$cpu"
    echo "$row $rate $cpu" >>"$TMP/results"
}
# Odd rounds run default first, even rounds lua first: the second run of
# a round meets a warmer server and page cache.
for r in $(seq "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then
        run default "$r"; run lua "$r"
    else
        run lua "$r"; run default "$r"
    fi
done
python3 - "$TMP/results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    row, rate, cpu = line.split()
    rows.setdefault(row, []).append((float(rate), float(cpu)))
if "default" in rows and "lua" in rows:
    d = [statistics.median(x) for x in zip(*rows["default"])]
    l = [statistics.median(x) for x in zip(*rows["lua"])]
    print("median   default %.0f records/s, %.3f us/rec; lua %.0f records/s, %.3f us/rec" % (d[0], d[1], l[0], l[1]))
    print("ratio    lua/default throughput %.3f, client CPU per record %.3f" % (l[0] / d[0], l[1] / d[1]))
PY
exit $status
