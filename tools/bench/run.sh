#!/usr/bin/env bash
# make bench: a fresh samsa on free loopback ports, driven by samsa-loadgen,
# next to floors measured in the same run (a bare socket-to-file copy for
# produce, a bare sendfile loop for consume), so the numbers that matter are
# ratios that survive a change of machine.
#
#   (a) produce BENCH_RECORDS x 100 B, acks=1
#   (b) produce BENCH_RECORDS x 1 KiB, acks=1
#   (c) consume all of (b)
#   (d) produce BENCH_RECORDS x 100 B, acks=all
#   (e) as (d) with an idempotent producer (enable.idempotence=true, which
#       needs acks=all): the price of the leader's producer-state check
#   (f) as (e) with a transactional producer committing every 100 records
#   (g) as (f) with transactions of 10 000 records: (f) and (g) are shown
#       as throughput ratios to (e)
#   (w) as (a) with 3 x BENCH_RECORDS (a phase of ~0.1 s measures
#       noise) on reused memory: right before it the bench writes and
#       unlinks a scratch file of that size, so the page cache grows into
#       pages just freed, as a broker whose page cache is full gets them
#       from reclaim; (a) grows it into guest memory the host backs lazily
#       (with free page reporting, a host fault per page). Server CPU of
#       (w) and (r) is summed from /proc/PID/task/*/schedstat (ns)
#   (r) next to (a): Redis Streams, XADD of BENCH_RECORDS x 100 B pipelined
#       (redis-benchmark, one connection, 100 commands per round trip) on a
#       redis-server started and stopped by the bench, no persistence: the
#       records each server appends per CPU-second (skipped with a line when
#       redis-server/redis-benchmark are absent: scripts/setup.sh --bench)
#   (h) end-to-end latency at BENCH_E2E_RATE records/s from a transactional
#       producer (transactions of BENCH_E2E_TXN records) to a read_committed
#       and a read_uncommitted consumer reading at once (samsa-loadgen e2e:
#       produce call to consumed, in one process on one clock)
#
# Each of (a)-(c) runs BENCH_RUNS times on fresh topics, each followed by its
# floor, and the summary shows medians (single runs on a small shared VM vary
# by 2x and more) with the spread below them.
#
# Environment:
#   BENCH_RECORDS=1000000     records in (a) and (b)
#   BENCH_RUNS=3              rounds of (a)-(c)
#   BENCH_PARTITIONS=1        partitions of each topic
#   BENCH_ACKS=1              acks of (a) and (b)
#   BENCH_PRODUCE_ARGS=...    extra samsa-loadgen produce options (-X k=v ...)
#   BENCH_TXN_RECORDS=N       records in (f) and (g) (BENCH_RECORDS)
#   BENCH_E2E_RECORDS=100000  records in (h)
#   BENCH_E2E_RATE=10000      records/s in (h)
#   BENCH_E2E_TXN=100         records per transaction in (h)
#   BENCH_NO_BUILD=1          use the binaries as they are
#   BENCH_BUILDDIR=dir        where samsa and samsa-loadgen are built
#   BENCH_KEEP=1              keep the temp dir (data, logs) for a post-mortem
#   BENCH_SERVER_OVERRIDES="k=v ..."  server configs for the run, e.g.
#                             socket.receive.buffer.bytes=-1 (see README,
#                             "Produce path, CPU per record")
#
# Server CPU is utime+stime of the samsa process from /proc/<pid>/stat
# around each phase; peak RSS is its VmHWM. Everything goes to stdout and
# the summary also to tools/bench/last-run.txt. Exit status is non-zero
# when any phase failed.
set -u -o pipefail

SRC=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tools/bench/lib.sh
. "$SRC/tools/bench/lib.sh"
BUILD=${BENCH_BUILDDIR:-$SRC}
RECORDS=${BENCH_RECORDS:-1000000}
RUNS=${BENCH_RUNS:-3}
PARTITIONS=${BENCH_PARTITIONS:-1}
ACKS=${BENCH_ACKS:-1}
PRODUCE_ARGS=${BENCH_PRODUCE_ARGS:-}
TXN_RECORDS=${BENCH_TXN_RECORDS:-$RECORDS}
W_RECORDS=$((RECORDS * 3))
E2E_RECORDS=${BENCH_E2E_RECORDS:-100000}
E2E_RATE=${BENCH_E2E_RATE:-10000}
E2E_TXN=${BENCH_E2E_TXN:-100}
SAMSA=$BUILD/samsa
SERVER_OVERRIDES=()
for kv in ${BENCH_SERVER_OVERRIDES:-}; do SERVER_OVERRIDES+=(--override "$kv"); done
LOADGEN=$BUILD/tools/loadgen/samsa-loadgen
OUT=$SRC/tools/bench/last-run.txt
HZ=$(getconf CLK_TCK)

die() { echo "bench: $*" >&2; exit 1; }

case $RECORDS in '' | *[!0-9]* | 0) die "BENCH_RECORDS must be a positive integer" ;; esac
case $RUNS in '' | *[!0-9]* | 0) die "BENCH_RUNS must be a positive integer" ;; esac
for n in "$TXN_RECORDS" "$E2E_RECORDS" "$E2E_RATE" "$E2E_TXN"; do
    case $n in '' | *[!0-9]* | 0) die "BENCH_TXN_RECORDS and BENCH_E2E_* must be positive integers" ;; esac
done

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
RPID=
cleanup() {
    if [ -n "$RPID" ] && kill -0 "$RPID" 2>/dev/null; then
        kill -TERM "$RPID" 2>/dev/null
        wait "$RPID" 2>/dev/null
    fi
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
v() { eval "echo \${$1:-}"; }   # value of a variable named at run time, or ""

# utime+stime of the server in clock ticks; the comm field may hold spaces,
# so fields are counted after its closing parenthesis
server_ticks() {
    local stat
    stat=$(cat "/proc/${1:-$SPID}/stat" 2>/dev/null) || { echo 0; return; }
    stat=${stat##*) }
    awk '{ print $12 + $13 }' <<<"$stat"
}
# recycle_pages BYTES: write and unlink a scratch file of that size, so the
# next page-cache growth takes pages just freed (see (w) above)
recycle_pages() {
    dd if=/dev/zero of="$TMP/recycle" bs=1M count=$(($1 / 1048576 + 1)) status=none 2>/dev/null
    rm -f "$TMP/recycle"
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
    --override "log.dirs=$DATA" "${SERVER_OVERRIDES[@]}" >"$TMP/samsa.log" 2>&1 &
SPID=$!
for _ in $(seq 100); do
    alive || { server_log_tail; die "samsa exited during start-up"; }
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    sleep 0.1
done
(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null || { server_log_tail; die "samsa not listening on $PORT after 10 s"; }
echo "bench: samsa pid $SPID on 127.0.0.1:$PORT, data in $DATA"
BROKER=127.0.0.1:$PORT

# ---- Redis, for (r) -----------------------------------------------------------
REDIS_NOTE=
if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
    read -r RPORT < <("$FLOOR" ports 1)
    redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$TMP" \
        >"$TMP/redis.log" 2>&1 &
    RPID=$!
    for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$RPORT") 2>/dev/null && break; sleep 0.1; done
    (exec 3<>"/dev/tcp/127.0.0.1/$RPORT") 2>/dev/null || { REDIS_NOTE="redis-server did not start"; RPID=; }
else
    REDIS_NOTE="redis-server or redis-benchmark not installed (scripts/setup.sh --bench)"
fi
REDIS_VALUE=$(head -c 100 /dev/zero | tr '\0' x)

# redis_phase ID: BENCH_RECORDS XADDs of 100 B; leaves R_ID_{secs,cpu}
redis_phase() {
    local id=$1 t0 t1 s0 s1
    [ -n "$RPID" ] || return 0
    redis-cli -p "$RPORT" del bench >/dev/null
    sync
    t0=$(cpu_ns "$RPID"); s0=$(date +%s.%N)
    redis-benchmark -p "$RPORT" --csv -c 1 -P 100 -n "$RECORDS" XADD bench '*' v "$REDIS_VALUE" \
        >"$TMP/$id.redis" 2>&1 || { echo "bench: redis-benchmark failed"; return 0; }
    t1=$(cpu_ns "$RPID"); s1=$(date +%s.%N)
    local n
    n=$(redis-cli -p "$RPORT" xlen bench)
    [ "$n" = "$RECORDS" ] || { echo "bench: Redis stream holds $n records, not $RECORDS"; return 0; }
    eval "R_${id}_cpu=$(calc %.4f "($t1 - $t0) / 1e9")"
    eval "R_${id}_secs=$(calc %.3f "$s1 - $s0")"
    echo "  redis $id: $RECORDS XADD in $(v "R_${id}_secs") s, server CPU $(v "R_${id}_cpu") s (schedstat)"
}

# ---- phases -----------------------------------------------------------------
# phase ID loadgen-args...: one loadgen run between two samples of the
# server's CPU; leaves $TMP/ID.json and P_ID_{rc,cpu,hwm}
phase() {
    local id=$1; shift
    # start every measured step with no dirty pages from the previous one,
    # so writeback of old data is not billed to the next phase
    sync
    local t0 t1 rc
    t0=$(server_ticks)
    "$LOADGEN" "$@" --json --stall-timeout 30 >"$TMP/$id.out" 2>"$TMP/$id.err"
    rc=$?
    t1=$(server_ticks)
    grep -v '^{' "$TMP/$id.out"
    grep '^{' "$TMP/$id.out" >"$TMP/$id.json"
    [ "$rc" = 0 ] || rm -f "$TMP/$id.json"   # a failed run is no sample
    if [ -s "$TMP/$id.err" ]; then
        sed 's/^/  loadgen: /' "$TMP/$id.err" | head -n 20
    fi
    eval "P_${id}_rc=$rc"
    eval "P_${id}_cpu=$(calc %.2f "($t1 - $t0) / $HZ")"
    eval "P_${id}_hwm=$(server_hwm_kb)"
    if [ "$rc" != 0 ]; then
        FAILED=1
        echo "bench: phase $id FAILED (samsa-loadgen exit $rc)"
    fi
    if ! alive; then
        FAILED=1
        echo "bench: samsa is gone after phase $id"
        server_log_tail
        return 1
    fi
    return 0
}

# floor ID floor-args...: leaves F_ID_{secs,cpu}
floor() {
    local id=$1; shift
    sync
    if "$FLOOR" "$@" >"$TMP/$id.floor"; then
        echo "  floor $id: $(cat "$TMP/$id.floor")"
        eval "F_${id}_secs=$(sed -n 's/.* seconds=\([0-9.]*\).*/\1/p' "$TMP/$id.floor")"
        eval "F_${id}_cpu=$(sed -n 's/.* server_cpu=\([0-9.]*\).*/\1/p' "$TMP/$id.floor")"
    else
        FAILED=1
        echo "bench: floor $id failed"
    fi
}

# Each floor runs right after the samsa phase it stands for and, like
# samsa, leaves its file in place until the end: on a VM whose memory the
# host backs lazily, growing the page cache into never-touched guest pages
# costs ~10x the CPU of reusing freed ones, so a floor that rewrote one file
# would be measured on cheaper memory than samsa.
for r in $(seq "$RUNS"); do
    echo "bench: round $r of $RUNS"
    # shellcheck disable=SC2086
    phase "a$r" produce -b "$BROKER" -t "bench-100b-$r" -p "$PARTITIONS" -n "$RECORDS" -s 100 \
        -a "$ACKS" $PRODUCE_ARGS || break
    la=$(log_bytes "bench-100b-$r")
    [ "$la" -gt 0 ] && floor "a$r" copy "$la" "$TMP/floor-a$r.dat"
    redis_phase "a$r"
    [ "$la" -gt 0 ] && recycle_pages $((la * 3))
    W0=$(cpu_ns "$SPID")
    # shellcheck disable=SC2086
    phase "w$r" produce -b "$BROKER" -t "bench-100b-reused-$r" -p "$PARTITIONS" -n "$W_RECORDS" -s 100 \
        -a "$ACKS" $PRODUCE_ARGS || break
    eval "W_${r}_cpu=$(calc %.4f "($(cpu_ns "$SPID") - $W0) / 1e9")"
    echo "  (w) on reused memory: server CPU $(v "W_${r}_cpu") s (schedstat)"
    # shellcheck disable=SC2086
    phase "b$r" produce -b "$BROKER" -t "bench-1k-$r" -p "$PARTITIONS" -n "$RECORDS" -s 1024 \
        -a "$ACKS" $PRODUCE_ARGS || break
    lb=$(log_bytes "bench-1k-$r")
    [ "$lb" -gt 0 ] && floor "b$r" copy "$lb" "$TMP/floor-b$r.dat"
    phase "c$r" consume -b "$BROKER" -t "bench-1k-$r" -n "$RECORDS" -s 1024 || break
    [ -f "$TMP/floor-b$r.dat" ] && floor "c$r" sendfile "$TMP/floor-b$r.dat"
    # shellcheck disable=SC2086
    phase "d$r" produce -b "$BROKER" -t "bench-100b-all-$r" -p "$PARTITIONS" -n "$RECORDS" -s 100 \
        -a all $PRODUCE_ARGS || break
    # shellcheck disable=SC2086
    phase "e$r" produce -b "$BROKER" -t "bench-100b-idem-$r" -p "$PARTITIONS" -n "$RECORDS" -s 100 \
        -a all --idempotence $PRODUCE_ARGS || break
    # shellcheck disable=SC2086
    phase "f$r" produce -b "$BROKER" -t "bench-txn100-$r" -p "$PARTITIONS" -n "$TXN_RECORDS" -s 100 \
        -a all --txn-size 100 $PRODUCE_ARGS || break
    # shellcheck disable=SC2086
    phase "g$r" produce -b "$BROKER" -t "bench-txn10k-$r" -p "$PARTITIONS" -n "$TXN_RECORDS" -s 100 \
        -a all --txn-size 10000 $PRODUCE_ARGS || break
    phase "h$r" e2e -b "$BROKER" -t "bench-e2e-$r" -p "$PARTITIONS" -n "$E2E_RECORDS" -s 100 \
        --rate "$E2E_RATE" --txn-size "$E2E_TXN" || break
    [ "$r" = 1 ] && { LA=$la; LB=$lb; }
done
rm -f "$TMP"/floor-*.dat

# ---- summary ----------------------------------------------------------------
# Per phase letter, the run with the median time gives the throughput and
# latency columns; server CPU and the floors are medians of their own
# samples, since they need not come from the same run.
median() { sort -n | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'; }
range() { sort -n | awk -v f="$1" '{ a[NR] = $1 } END { if (NR) printf f ".." f, a[1], a[NR] }'; }
ok_runs() { for r in $(seq "$RUNS"); do [ -s "$TMP/$1$r.json" ] && echo "$r"; done; }
for x in a b c d e f g h; do
    # (h) runs at a fixed rate: its median run is by read_committed p99
    key=seconds; [ $x = h ] && key=rc_p99
    eval "M_${x}_run=$(for r in $(ok_runs $x); do echo "$(jget $key "$TMP/$x$r.json") $r"; done |
        sort -n | awk '{ a[NR] = $2 } END { if (NR) print a[int((NR + 1) / 2)] }')"
    eval "M_${x}_n=$(ok_runs $x | wc -l)"
    eval "M_${x}_cpu=$(for r in $(ok_runs $x); do v "P_$x${r}_cpu"; done | median)"
    eval "M_${x}_fail=$(for r in $(seq "$RUNS"); do
        rc=$(v "P_$x${r}_rc"); [ -n "$rc" ] && [ "$rc" != 0 ] && echo "$r:rc=$rc"
    done | paste -sd, -)"
    eval "FM_${x}_secs=$(for r in $(seq "$RUNS"); do v "F_$x${r}_secs"; done | grep . | median)"
    eval "FM_${x}_cpu=$(for r in $(seq "$RUNS"); do v "F_$x${r}_cpu"; done | grep . | median)"
done
RM_cpu=$(for r in $(seq "$RUNS"); do v "R_a${r}_cpu"; done | grep . | median)
WM_cpu=$(for r in $(ok_runs w); do v "W_${r}_cpu"; done | grep . | median)
WM_range=$(for r in $(ok_runs w); do v "W_${r}_cpu"; done | grep . | range %.4f)
RM_secs=$(for r in $(seq "$RUNS"); do v "R_a${r}_secs"; done | grep . | median)

HWM_KB=$(server_hwm_kb)
# A virtio balloon with free page reporting (feature bit 5) hands freed
# guest memory back to the host, so page-cache growth pays a host fault per
# page: worth knowing when reading produce CPU/GB.
BALLOON=
for d in /sys/bus/virtio/devices/*; do
    [ "$(cat "$d/device" 2>/dev/null)" = 0x0005 ] || continue
    f=$(cat "$d/features" 2>/dev/null)
    [ "${f:5:1}" = 1 ] && BALLOON=", virtio-balloon free page reporting on"
done
COMMIT=$(git -C "$SRC" describe --always --dirty 2>/dev/null || echo unknown)
CPU_MODEL=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
PA=$((RECORDS * 100))
PB=$((RECORDS * 1024))
LA=${LA:-0}
LB=${LB:-0}

row_phase() {   # letter label payload_bytes
    local x=$1 label=$2 pb=$3 r j
    r=$(v "M_${x}_run")
    if [ -z "$r" ]; then
        if [ -n "$(v "M_${x}_fail")" ]; then
            printf '%-30s FAILED in every run (%s)\n' "$label" "$(v "M_${x}_fail")"
        else
            printf '%-30s not run\n' "$label"
        fi
        return
    fi
    j=$TMP/$x$r.json
    local cpu lat status
    cpu=$(v "M_${x}_cpu")
    if [ "$(jget phase "$j")" = produce ]; then
        lat=$(calc "%.1f/%.1f/%.1f/%.1f/%.1f" "$(jget p50 "$j")/1e3, $(jget p90 "$j")/1e3, $(jget p99 "$j")/1e3, $(jget p99_9 "$j")/1e3, $(jget max "$j")/1e3")
    else
        lat=-
    fi
    status=ok
    [ -z "$(v "M_${x}_fail")" ] || status="FAILED runs $(v "M_${x}_fail")"
    printf '%-30s %8s %6.2f %8.0f %7.1f  %-30s %7.2f %8.2f %6.0f %7.2f  %s\n' \
        "$label" "$(jget records "$j")" "$(jget seconds "$j")" "$(jget records_per_s "$j")" \
        "$(jget mb_per_s "$j")" "$lat" "$cpu" "$(calc %.2f "$cpu / ($pb / 1e9)")" \
        "$(($(v "P_$x${r}_hwm") / 1024))" "$(jget client_cpu_s "$j")" "$status"
}
row_floor() {   # letter label payload_bytes (of the phase it stands for)
    local x=$1 label=$2 pb=$3 secs cpu
    secs=$(v "FM_${x}_secs"); cpu=$(v "FM_${x}_cpu")
    if [ -z "$secs" ]; then printf '%-30s not run\n' "$label"; return; fi
    printf '%-30s %8s %6.2f %8s %7.1f  %-30s %7.2f %8.2f %6s %7s\n' "$label" - "$secs" - \
        "$(calc %.1f "$pb / $secs / 1e6")" - "$cpu" "$(calc %.2f "$cpu / ($pb / 1e9)")" - -
}
ratio() {   # label letter
    local x=$2 r secs cpu fsecs fcpu
    r=$(v "M_${x}_run"); fsecs=$(v "FM_${x}_secs"); fcpu=$(v "FM_${x}_cpu")
    if [ -z "$r" ] || [ -z "$fsecs" ]; then printf '  %-20s n/a\n' "$1"; return; fi
    secs=$(jget seconds "$TMP/$x$r.json"); cpu=$(v "M_${x}_cpu")
    printf '  %-20s throughput %s of the floor, server CPU/GB %sx the floor\n' "$1" \
        "$(calc %.2fx "$fsecs / $secs")" "$(calc %.1f "$cpu / ($fcpu > 0 ? $fcpu : 0.001)")"
}
spread() {   # label letter payload_bytes
    local x=$2 pb=$3 r mbs cgb fmbs fcgb
    [ "$(v "M_${x}_n")" -gt 0 ] || return
    mbs=$(for r in $(ok_runs "$x"); do jget mb_per_s "$TMP/$x$r.json"; done | range %.1f)
    cgb=$(for r in $(ok_runs "$x"); do calc '%.3f\n' "$(v "P_$x${r}_cpu") / ($pb / 1e9)"; done | range %.2f)
    fmbs=$(for r in $(seq "$RUNS"); do
        s=$(v "F_$x${r}_secs"); [ -n "$s" ] && calc '%.3f\n' "$pb / $s / 1e6"; done | range %.1f)
    fcgb=$(for r in $(seq "$RUNS"); do
        c=$(v "F_$x${r}_cpu"); [ -n "$c" ] && calc '%.3f\n' "$c / ($pb / 1e9)"; done | range %.2f)
    printf '  %-20s samsa MB/s %s, CPU s/GB %s; floor MB/s %s, CPU s/GB %s (%s runs)\n' \
        "$1" "$mbs" "$cgb" "${fmbs:--}" "${fcgb:--}" "$(v "M_${x}_n")"
}

{
    echo "samsa bench, $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "machine: $(nproc) CPUs, $CPU_MODEL, kernel $(uname -r), $(awk '/^MemTotal:/ { printf "%.0f GB RAM", $2 / 1048576 }' /proc/meminfo)$BALLOON"
    echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15-min load average at the end; other work on the machine skews timings)"
    echo "commit:  $COMMIT"
    echo "setup:   1 node (broker+controller) on loopback, $PARTITIONS partition(s)/topic, acks=$ACKS," \
        "librdkafka $(pkg-config --modversion rdkafka 2>/dev/null || echo '?') defaults${PRODUCE_ARGS:+ + $PRODUCE_ARGS};" \
        "median of $RUNS run(s)"
    echo
    printf '%-30s %8s %6s %8s %7s  %-30s %7s %8s %6s %7s\n' phase records secs rec/s MB/s \
        "latency ms p50/p90/p99/p99.9/max" "srv CPU" "CPU s/GB" "RSS MB" "cli CPU"
    row_phase a "(a) produce 100 B" "$PA"
    row_phase b "(b) produce 1 KiB" "$PB"
    row_phase c "(c) consume (b)" "$PB"
    row_phase d "(d) produce 100 B, acks=all" "$PA"
    row_phase e "(e) (d) idempotent" "$PA"
    row_phase f "(f) (e) txns of 100" "$((TXN_RECORDS * 100))"
    row_phase g "(g) (e) txns of 10 000" "$((TXN_RECORDS * 100))"
    row_floor a "floor: copy to file, (a) bytes" "$PA"
    row_floor b "floor: copy to file, (b) bytes" "$PB"
    row_floor c "floor: sendfile, (c) bytes" "$PB"
    echo
    echo "ratios (medians, samsa against the floor for the same job):"
    ratio "(a) produce 100 B" a
    ratio "(b) produce 1 KiB" b
    ratio "(c) consume" c
    rd=$(v M_d_run); re=$(v M_e_run)
    if [ -n "$rd" ] && [ -n "$re" ]; then
        printf '  %-20s throughput %s of (d), server CPU %sx (d)\n' "(e) idempotent" \
            "$(calc %.2fx "$(jget seconds "$TMP/d$rd.json") / $(jget seconds "$TMP/e$re.json")")" \
            "$(calc %.2f "$(v M_e_cpu) / ($(v M_d_cpu) > 0 ? $(v M_d_cpu) : 0.001)")"
    else
        printf '  %-20s n/a\n' "(e) idempotent"
    fi
    for x in f g; do
        rx=$(v "M_${x}_run")
        label="(f) txns of 100"; [ $x = g ] && label="(g) txns of 10 000"
        if [ -n "$re" ] && [ -n "$rx" ]; then
            # records per second, since (f)/(g) may move another count
            printf '  %-20s throughput %s of (e), server CPU per record %sx (e); commit_transaction ms p50 %s p99 %s\n' \
                "$label" \
                "$(calc %.2fx "$(jget records_per_s "$TMP/$x$rx.json") / $(jget records_per_s "$TMP/e$re.json")")" \
                "$(calc %.2f "($(v M_${x}_cpu) / $TXN_RECORDS) / ($(v M_e_cpu) > 0 ? $(v M_e_cpu) / $RECORDS : 0.001)")" \
                "$(calc %.2f "$(jget commit_p50_us "$TMP/$x$rx.json") / 1e3")" \
                "$(calc %.2f "$(jget commit_p99_us "$TMP/$x$rx.json") / 1e3")"
        else
            printf '  %-20s n/a\n' "$label"
        fi
    done
    echo
    echo "records appended per server CPU-second, 100 B (medians):"
    if [ -n "$(v M_a_run)" ]; then
        SAMSA_RPS=$(calc %.0f "$RECORDS / ($(v M_a_cpu) > 0 ? $(v M_a_cpu) : 0.001)")
        printf '  %-20s %s M/s (on new guest memory, CPU in ticks)\n' "samsa (a)" "$(calc %.2f "$SAMSA_RPS / 1e6")"
    fi
    if [ -n "$WM_cpu" ]; then
        SAMSA_RPS=$(calc %.0f "$W_RECORDS / ($WM_cpu > 0 ? $WM_cpu : 0.001)")
        printf '  %-20s %s M/s (issue goal: 10 M/s; on reused memory, CPU from schedstat, %s s per run)\n' \
            "samsa (w)" "$(calc %.2f "$SAMSA_RPS / 1e6")" "$WM_range"
    fi
    if [ -n "$RM_cpu" ]; then
        REDIS_RPS=$(calc %.0f "$RECORDS / ($RM_cpu > 0 ? $RM_cpu : 0.001)")
        printf '  %-20s %s M/s (XADD pipelined 100 deep, 1 connection, %s s wall); samsa %sx\n' \
            "Redis Streams (r)" "$(calc %.2f "$REDIS_RPS / 1e6")" "$RM_secs" \
            "$(calc %.1f "${SAMSA_RPS:-0} / $REDIS_RPS")"
    else
        printf '  %-20s not run: %s\n' "Redis Streams (r)" "${REDIS_NOTE:-no sample}"
    fi
    echo
    rh=$(v M_h_run)
    if [ -n "$rh" ]; then
        j=$TMP/h$rh.json
        echo "(h) end-to-end latency, produce call to consumed, $E2E_RECORDS records x 100 B at $E2E_RATE rec/s"
        echo "    ($(calc %.0f "$(jget records_per_s "$j")") achieved) in transactions of $E2E_TXN records (median of $(v M_h_n) run(s) by read_committed p99):"
        printf '  %-20s p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms\n' read_committed \
            "$(calc %.3f "$(jget rc_p50 "$j") / 1e3")" "$(calc %.3f "$(jget rc_p99 "$j") / 1e3")" \
            "$(calc %.3f "$(jget rc_max "$j") / 1e3")"
        printf '  %-20s p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms\n' read_uncommitted \
            "$(calc %.3f "$(jget ru_p50 "$j") / 1e3")" "$(calc %.3f "$(jget ru_p99 "$j") / 1e3")" \
            "$(calc %.3f "$(jget ru_max "$j") / 1e3")"
        printf '  %-20s p50 %7.2f ms  p99 %7.2f ms; server CPU %s s\n' commit_transaction \
            "$(calc %.3f "$(jget commit_p50_us "$j") / 1e3")" "$(calc %.3f "$(jget commit_p99_us "$j") / 1e3")" \
            "$(v M_h_cpu)"
    elif [ -n "$(v M_h_fail)" ]; then
        echo "(h) end-to-end latency: FAILED in every run ($(v M_h_fail))"
    fi
    echo
    echo "spread over the runs (min..max):"
    spread "(a) produce 100 B" a "$PA"
    spread "(b) produce 1 KiB" b "$PB"
    spread "(c) consume" c "$PB"
    spread "(d) acks=all" d "$PA"
    spread "(e) idempotent" e "$PA"
    spread "(f) txns of 100" f "$((TXN_RECORDS * 100))"
    spread "(g) txns of 10 000" g "$((TXN_RECORDS * 100))"
    echo
    echo "MB = 10^6 B and GB = 10^9 B of payload. The floors move the bytes samsa stored"
    echo "for that phase ($(calc %.1f "$LA/1e6") MB for (a), $(calc %.1f "$LB/1e6") MB for (b) and (c): payload plus"
    echo "record-batch framing) and are shown per GB of the phase's payload, so each ratio"
    echo "is the ratio of the columns. srv CPU = samsa utime+stime during the phase; RSS MB"
    echo "is its VmHWM after the phase (peak at the end: $((HWM_KB / 1024)) MB); cli CPU = samsa-loadgen's"
    echo "own CPU seconds: on $(nproc) CPUs the client competes with the server, and a"
    echo "phase whose cli CPU nears secs x $(nproc) is bound by the client. Latency is produce"
    echo "call to delivery report with the client's queue kept full, so it is mostly queueing."
    [ -z "$BALLOON" ] || {
        echo "With free page reporting, new page cache costs CPU for host faults (seen here as"
        echo "1-4 s/GB of system time, varying with what the host holds), in samsa and in the"
        echo "copy floor alike: each floor runs right after its samsa phase to share them."
    }
    [ $FAILED = 0 ] || echo "SOME PHASES FAILED: see the output above."
} >"$TMP/summary.txt"

echo
cat "$TMP/summary.txt"
cp "$TMP/summary.txt" "$OUT" && echo && echo "bench: summary written to $OUT"
exit $FAILED
