#!/usr/bin/env bash
# Server CPU per appended 100-byte record, two binaries interleaved (run by
# hand; README, "Produce path, CPU per record"):
#
#   tools/bench/produce-cpu.sh OLD_SAMSA NEW_SAMSA
#
# Each round runs OLD then NEW, each on a fresh node on free loopback
# ports: a warm-up of 500 000 records (so the node's own start-up and
# first allocations are not measured), then PRODUCE_CPU_RECORDS x 100 B at
# acks=1 from samsa-loadgen with librdkafka's defaults into one partition.
# The server's CPU is the sum of its threads' on-CPU time from
# /proc/PID/task/*/schedstat (nanoseconds; the 10 ms ticks of
# /proc/PID/stat are too coarse for a 0.3 s phase), around that phase only.
# On a small shared machine single runs vary by 2x: compare the medians
# and the per-round ratios, never one pair.
#
#   PRODUCE_CPU_ROUNDS=10        rounds
#   PRODUCE_CPU_RECORDS=3000000  records in the measured phase
#   PRODUCE_CPU_PERF=dir         also `perf record` (flat) each measured
#                                phase into dir/<round>-<old|new>.data
#   PRODUCE_CPU_NEW_OVERRIDES="k=v ..."
#                                configs for NEW only, e.g. the same binary
#                                twice with samsa.record.validation=batch
#   PRODUCE_CPU_LOADGEN="opt ..."  more samsa-loadgen options for both,
#                                e.g. "--compression lz4 --payload fixed"
#
# Prints one line per run and a summary (medians, ranges, ratios).
set -u -o pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tools/bench/lib.sh
. "$SRC/tools/bench/lib.sh"
LOADGEN=$SRC/tools/loadgen/samsa-loadgen
ROUNDS=${PRODUCE_CPU_ROUNDS:-10}
N=${PRODUCE_CPU_RECORDS:-3000000}
PERFDIR=${PRODUCE_CPU_PERF:-}
die() { echo "produce-cpu: $*" >&2; exit 1; }
if [ $# != 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then die "usage: $0 OLD_SAMSA NEW_SAMSA"; fi
[ -x "$LOADGEN" ] || die "no $LOADGEN (make tools/loadgen/samsa-loadgen)"
OLD=$1
NEW=$2
TMP=$(mktemp -d "${TMPDIR:-/tmp}/samsa-produce-cpu.XXXXXX") || exit 1
SPID=
cleanup() {
    [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT


# one LABEL BIN ROUND: prints "LABEL ns" (0 when the run failed)
one() {
    local label=$1 bin=$2 round=$3 port cport pp='' n0 n1 rc kv extra=()
    read -r port cport < <(free_ports 2)
    rm -rf "$TMP/data"
    if [ "$label" = new ]; then
        for kv in ${PRODUCE_CPU_NEW_OVERRIDES:-}; do extra+=(--override "$kv"); done
    fi
    "$bin" "${extra[@]}" --override node.id=1 --override "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport" \
        --override "controller.quorum.voters=1@127.0.0.1:$cport" --override "log.dirs=$TMP/data" \
        >"$TMP/samsa.log" 2>&1 &
    SPID=$!
    for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
    "$LOADGEN" produce -b "127.0.0.1:$port" -t warm -p 1 -n 500000 -s 100 -a 1 ${PRODUCE_CPU_LOADGEN:-} >/dev/null 2>&1
    sync
    if [ -n "$PERFDIR" ]; then
        perf record -F 4999 -p "$SPID" -o "$PERFDIR/$round-$label.data" >/dev/null 2>&1 &
        pp=$!
        sleep 0.5
    fi
    n0=$(cpu_ns "$SPID")
    "$LOADGEN" produce -b "127.0.0.1:$port" -t m -p 1 -n "$N" -s 100 -a 1 ${PRODUCE_CPU_LOADGEN:-} >/dev/null 2>"$TMP/err"
    rc=$?
    n1=$(cpu_ns "$SPID")
    [ -n "$pp" ] && kill -INT "$pp" && wait "$pp"
    kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
    SPID=
    if [ "$rc" != 0 ] || [ "${n0:-0}" = 0 ] || [ "${n1:-0}" = 0 ]; then
        echo "produce-cpu: $label run failed (loadgen exit $rc): $(tail -1 "$TMP/err") $(tail -1 "$TMP/samsa.log")" >&2
        echo "$label 0"
        return
    fi
    echo "$label $((n1 - n0))"
}

[ -n "$PERFDIR" ] && mkdir -p "$PERFDIR"
for r in $(seq "$ROUNDS"); do
    for side in old new; do
        bin=$OLD
        [ $side = new ] && bin=$NEW
        line=$(one $side "$bin" "$r")
        echo "$line" >>"$TMP/runs"
        awk -v n="$N" -v r="$r" '{ if ($2 > 0) printf "round %d %s: server CPU %.3f s, %.2f M records per CPU-second\n", r, $1, $2 / 1e9, n / $2 * 1e3; else printf "round %d %s: failed\n", r, $1 }' <<<"$line"
    done
done

awk -v n="$N" '
    function med(a, k,   i, j, t) {
        for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }
    $1 == "old" { last = $2; if ($2 > 0) o[++no] = $2 / 1e9 }
    $1 == "new" { if ($2 > 0) { w[++nw] = $2 / 1e9; if (last > 0) q[++nq] = $2 / last } }
    END {
        if (!no || !nw) { print "produce-cpu: no complete runs"; exit 1 }
        mo = med(o, no); mw = med(w, nw)
        printf "old: median %.3f s (%.3f-%.3f), %.2f M records per server CPU-second, %d runs\n", mo, o[1], o[no], n / mo / 1e6, no
        printf "new: median %.3f s (%.3f-%.3f), %.2f M records per server CPU-second, %d runs\n", mw, w[1], w[nw], n / mw / 1e6, nw
        if (nq) { lo = 0; for (i = 1; i <= nq; i++) lo += q[i] < 1; printf "new/old per round: median %.3f, %d of %d below 1\n", med(q, nq), lo, nq }
    }' "$TMP/runs"
