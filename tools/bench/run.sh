#!/usr/bin/env bash
# make bench: a fresh samsa on free loopback ports, driven by samsa-loadgen,
# next to floors measured in the same run (a bare socket-to-file copy for
# produce, a bare sendfile loop for consume), so the numbers that matter are
# ratios that survive a change of machine.
#
#   (a) produce BENCH_RECORDS x 100 B, acks=1
#   (b) produce BENCH_RECORDS x 1 KiB, acks=1
#   (c) consume all of (b)
#
# Environment:
#   BENCH_RECORDS=1000000     records in (a) and (b)
#   BENCH_PARTITIONS=1        partitions of each topic
#   BENCH_ACKS=1              acks of (a) and (b)
#   BENCH_FLOOR_REPS=3        floors keep the best of this many runs
#   BENCH_PRODUCE_ARGS=...    extra samsa-loadgen produce options (-X k=v ...)
#   BENCH_NO_BUILD=1          use the binaries as they are
#   BENCH_BUILDDIR=dir        where samsa and samsa-loadgen are built
#   BENCH_KEEP=1              keep the temp dir (data, logs) for a post-mortem
#
# Server CPU is utime+stime of the samsa process from /proc/<pid>/stat
# around each phase; peak RSS is its VmHWM. Everything goes to stdout and
# the summary also to tools/bench/last-run.txt. Exit status is non-zero
# when any phase failed.
set -u -o pipefail

SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BENCH_BUILDDIR:-$SRC}
RECORDS=${BENCH_RECORDS:-1000000}
PARTITIONS=${BENCH_PARTITIONS:-1}
ACKS=${BENCH_ACKS:-1}
REPS=${BENCH_FLOOR_REPS:-3}
PRODUCE_ARGS=${BENCH_PRODUCE_ARGS:-}
SAMSA=$BUILD/samsa
LOADGEN=$BUILD/tools/loadgen/samsa-loadgen
OUT=$SRC/tools/bench/last-run.txt
HZ=$(getconf CLK_TCK)

die() { echo "bench: $*" >&2; exit 1; }

case $RECORDS in '' | *[!0-9]* | 0) die "BENCH_RECORDS must be a positive integer" ;; esac

# ---- build ----------------------------------------------------------------
if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
    echo "bench: building samsa and samsa-loadgen"
    make -C "$BUILD" -j"$(nproc)" samsa tools/loadgen/samsa-loadgen >/dev/null ||
        die "build failed (BENCH_NO_BUILD=1 runs the binaries as they are)"
fi
[ -x "$SAMSA" ] || die "no $SAMSA"
[ -x "$LOADGEN" ] || die "no $LOADGEN: configure found no librdkafka (apt-get install librdkafka-dev)"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/samsa-bench.XXXXXX") || die "mktemp failed"
DATA=$TMP/data
FLOOR=$TMP/floor
SPID=
cleanup() {
    if [ -n "$SPID" ] && kill -0 "$SPID" 2>/dev/null; then
        kill -TERM "$SPID" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$SPID" 2>/dev/null || break; sleep 0.2; done
        if kill -0 "$SPID" 2>/dev/null; then
            echo "bench: samsa (pid $SPID) ignored SIGTERM for 10 s; killing it" >&2
            kill -KILL "$SPID" 2>/dev/null
        fi
        wait "$SPID" 2>/dev/null
    fi
    if [ "${BENCH_KEEP:-0}" = 1 ]; then
        echo "bench: kept $TMP"
    else
        rm -rf "$TMP"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -o "$FLOOR" "$SRC/tools/bench/floor.c" ||
    die "cannot build the floor helper"

# ---- helpers ----------------------------------------------------------------
calc() { awk "BEGIN { printf \"$1\", $2 }"; }

# utime+stime of the server in clock ticks; the comm field may hold spaces,
# so fields are counted after its closing parenthesis
server_ticks() {
    local stat
    stat=$(cat "/proc/$SPID/stat" 2>/dev/null) || { echo -1; return; }
    stat=${stat##*) }
    awk '{ print $12 + $13 }' <<<"$stat"
}
server_hwm_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$SPID/status" 2>/dev/null || echo 0; }

# one field of a flat JSON line (the keys loadgen prints are unique)
jget() { grep -o "\"$1\":[^,}]*" "$2" | head -1 | cut -d: -f2 | tr -d '"'; }

# bytes of the .log segments of a topic: what samsa stored, record framing
# included, which is what the floors move
log_bytes() {
    find "$DATA" -path "$DATA/$1-*" -name '*.log' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'
}

alive() { kill -0 "$SPID" 2>/dev/null; }

FAILED=0
server_log_tail() {
    echo "---- last lines of the samsa log ($TMP/samsa.log) ----"
    tail -n 20 "$TMP/samsa.log"
    echo "-------------------------------------------------------"
}

# ---- server -----------------------------------------------------------------
read -r PORT CPORT < <("$FLOOR" ports 2) || die "no free ports"
mkdir -p "$DATA"
"$SAMSA" --override node.id=1 \
    --override "listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT" \
    --override "controller.quorum.voters=1@127.0.0.1:$CPORT" \
    --override "log.dirs=$DATA" >"$TMP/samsa.log" 2>&1 &
SPID=$!
for _ in $(seq 100); do
    alive || { server_log_tail; die "samsa exited during start-up"; }
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    sleep 0.1
done
(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null || { server_log_tail; die "samsa not listening on $PORT after 10 s"; }
echo "bench: samsa pid $SPID on 127.0.0.1:$PORT, data in $DATA"
BROKER=127.0.0.1:$PORT

# ---- phases -----------------------------------------------------------------
# phase NAME -- loadgen args: runs one loadgen phase around server CPU
# samples; leaves P_<NAME>_* variables for the summary
phase() {
    local name=$1; shift
    # start every measured step with no dirty pages from the previous one,
    # so writeback of old data is not billed to the next phase
    sync
    local t0 t1 rc
    t0=$(server_ticks)
    "$LOADGEN" "$@" --json --stall-timeout 30 >"$TMP/$name.out" 2>"$TMP/$name.err"
    rc=$?
    t1=$(server_ticks)
    grep -v '^{' "$TMP/$name.out"
    grep '^{' "$TMP/$name.out" >"$TMP/$name.json"
    if [ -s "$TMP/$name.err" ]; then
        sed 's/^/  loadgen: /' "$TMP/$name.err" | head -n 20
    fi
    eval "P_${name}_rc=$rc"
    eval "P_${name}_cpu=$(calc %.2f "($t1 - $t0) / $HZ")"
    eval "P_${name}_hwm=$(server_hwm_kb)"
    if [ "$rc" != 0 ]; then
        FAILED=1
        echo "bench: phase $name FAILED (samsa-loadgen exit $rc)"
    fi
    if ! alive; then
        FAILED=1
        echo "bench: samsa is gone after phase $name"
        server_log_tail
        return 1
    fi
    return 0
}

TA=bench-100b
TB=bench-1k
echo "bench: (a) produce $RECORDS x 100 B acks=$ACKS"
# shellcheck disable=SC2086
phase a produce -b "$BROKER" -t "$TA" -p "$PARTITIONS" -n "$RECORDS" -s 100 -a "$ACKS" $PRODUCE_ARGS
up=$?
if [ $up = 0 ]; then
    echo "bench: (b) produce $RECORDS x 1024 B acks=$ACKS"
    # shellcheck disable=SC2086
    phase b produce -b "$BROKER" -t "$TB" -p "$PARTITIONS" -n "$RECORDS" -s 1024 -a "$ACKS" $PRODUCE_ARGS
    up=$?
fi
if [ $up = 0 ]; then
    echo "bench: (c) consume all of $TB"
    phase c consume -b "$BROKER" -t "$TB" -n "$RECORDS" -s 1024
    up=$?
fi

# ---- floors -----------------------------------------------------------------
LA=$(log_bytes "$TA")
LB=$(log_bytes "$TB")
floor_run() {
    local name=$1; shift
    sync
    "$FLOOR" "$@" >"$TMP/$name.floor" || { FAILED=1; echo "bench: floor $name failed"; return 1; }
    eval "F_${name}_secs=$(sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' "$TMP/$name.floor")"
    eval "F_${name}_cpu=$(sed -n 's/.*server_cpu=\([0-9.]*\).*/\1/p' "$TMP/$name.floor")"
    eval "F_${name}_bytes=$(sed -n 's/.*bytes=\([0-9]*\).*/\1/p' "$TMP/$name.floor")"
}
echo "bench: floors (best of $REPS)"
[ "$LA" -gt 0 ] && floor_run a copy "$LA" "$TMP/floor-a.dat" "$REPS" && rm -f "$TMP/floor-a.dat"
if [ "$LB" -gt 0 ]; then
    floor_run b copy "$LB" "$TMP/floor-b.dat" "$REPS" &&
        floor_run c sendfile "$TMP/floor-b.dat" "$REPS"
    rm -f "$TMP/floor-b.dat"
fi

# ---- summary ----------------------------------------------------------------
HWM_KB=$(server_hwm_kb)
COMMIT=$(git -C "$SRC" describe --always --dirty 2>/dev/null || echo unknown)
CPU_MODEL=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)

v() { eval "echo \${$1:-}"; }   # value of a variable named at run time, or ""

row_phase() {   # name label payload_bytes
    local n=$1 label=$2 pb=$3 j=$TMP/$1.json
    if [ ! -s "$j" ]; then
        printf '%-30s %s\n' "$label" "not run"
        return
    fi
    local recs secs rps mbs cpu cgb hwm lat status
    recs=$(jget records "$j"); secs=$(jget seconds "$j")
    rps=$(jget records_per_s "$j"); mbs=$(jget mb_per_s "$j")
    cpu=$(v "P_${n}_cpu"); hwm=$(v "P_${n}_hwm")
    cgb=$(calc %.2f "$cpu / ($pb / 1e9)")
    if [ "$(jget phase "$j")" = produce ]; then
        lat=$(calc "%.1f/%.1f/%.1f/%.1f/%.1f" "$(jget p50 "$j")/1e3, $(jget p90 "$j")/1e3, $(jget p99 "$j")/1e3, $(jget p99_9 "$j")/1e3, $(jget max "$j")/1e3")
    else
        lat=-
    fi
    status=ok; [ "$(v "P_${n}_rc")" = 0 ] || status="FAILED(rc=$(v "P_${n}_rc"))"
    printf '%-30s %9s %8.2f %9.0f %8.1f  %-30s %7.2f %8.2f %7.0f  %s\n' \
        "$label" "$recs" "$secs" "$rps" "$mbs" "$lat" "$cpu" "$cgb" "$((hwm / 1024))" "$status"
}
row_floor() {   # name label payload_bytes (of the phase it stands for)
    local n=$1 label=$2 pb=$3 secs cpu
    secs=$(v "F_${n}_secs"); cpu=$(v "F_${n}_cpu")
    if [ -z "$secs" ]; then printf '%-30s %s\n' "$label" "not run"; return; fi
    printf '%-30s %9s %8.2f %9s %8.1f  %-30s %7.2f %8.2f %7s\n' "$label" - "$secs" - \
        "$(calc %.1f "$pb / $secs / 1e6")" - "$cpu" "$(calc %.2f "$cpu / ($pb / 1e9)")" -
}
ratio() {   # label phase floor payload_bytes what(produce|consume)
    local p=$2 f=$3 j=$TMP/$2.json
    [ -s "$j" ] && [ -n "$(v "F_${f}_secs")" ] || { printf '  %-28s n/a\n' "$1"; return; }
    local secs cpu fsecs fcpu
    secs=$(jget seconds "$j"); cpu=$(v "P_${p}_cpu")
    fsecs=$(v "F_${f}_secs"); fcpu=$(v "F_${f}_cpu")
    printf '  %-28s throughput %s of the floor, server CPU/GB %sx the floor\n' "$1" \
        "$(calc %.2fx "$fsecs / $secs")" "$(calc %.1f "$cpu / ($fcpu > 0 ? $fcpu : 0.001)")"
}

PA=$((RECORDS * 100))
PB=$((RECORDS * 1024))
{
    echo "samsa bench, $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "machine: $(nproc) CPUs, $CPU_MODEL, kernel $(uname -r)"
    echo "commit:  $COMMIT"
    echo "setup:   1 node (broker+controller) on loopback, $PARTITIONS partition(s)/topic, acks=$ACKS," \
        "librdkafka $(pkg-config --modversion rdkafka 2>/dev/null || echo '?') defaults${PRODUCE_ARGS:+ + $PRODUCE_ARGS}"
    echo
    printf '%-30s %9s %8s %9s %8s  %-30s %7s %8s %7s\n' phase records secs rec/s MB/s \
        "latency ms p50/p90/p99/p99.9/max" "srv CPU" "CPU s/GB" "RSS MB"
    row_phase a "(a) produce 100 B" "$PA"
    row_phase b "(b) produce 1 KiB" "$PB"
    row_phase c "(c) consume (b)" "$PB"
    row_floor a "floor: copy to file, (a) bytes" "$PA"
    row_floor b "floor: copy to file, (b) bytes" "$PB"
    row_floor c "floor: sendfile, (c) bytes" "$PB"
    echo
    echo "ratios (samsa against the floor for the same job):"
    ratio "(a) produce 100 B" a a
    ratio "(b) produce 1 KiB" b b
    ratio "(c) consume" c c
    echo
    echo "MB = 10^6 B and GB = 10^9 B of payload. The floors move the bytes samsa stored"
    echo "for that phase ($(calc %.1f "$LA/1e6") MB for (a), $(calc %.1f "$LB/1e6") MB for (b) and (c): payload plus"
    echo "record-batch framing) and are shown per GB of the phase's payload, so each ratio"
    echo "is the ratio of the columns. srv CPU = samsa utime+stime during the phase; its"
    echo "RSS MB is VmHWM after the phase (peak at the end: $((HWM_KB / 1024)) MB). Latency is produce"
    echo "call to delivery report with the client's queue kept full, so it is mostly"
    echo "queueing. On $(nproc) CPUs the client competes with the server: loadgen CPU s"
    echo "was $(for n in a b c; do [ -s "$TMP/$n.json" ] && printf '%s %s  ' "($n)" "$(jget client_cpu_s "$TMP/$n.json")"; done)"
    [ $FAILED = 0 ] || echo "SOME PHASES FAILED: see the output above."
} >"$TMP/summary.txt"

echo
cat "$TMP/summary.txt"
cp "$TMP/summary.txt" "$OUT" && echo && echo "bench: summary written to $OUT"
exit $FAILED
