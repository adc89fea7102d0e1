#!/bin/sh
# Interop tests: real Kafka clients (kcat, confluent-kafka, kafka-python,
# kafkajs, @platformatic/kafka) against a running samsa.
#
#   SAMSA_BIN=... SAMSACTL_BIN=... [SAMSA_SANITIZED=1] ./tests/interop/run.sh [NAME...]
#
# Runs every cases/NN_*.py (or only those whose name contains a NAME),
# each under `timeout`; each starts its own samsa on free loopback ports
# with a fresh data dir. Prints one line per test file and one per case
# (PASS/FAIL/SKIP with duration); on a failure, the file's output and the
# tail of its server logs. Exit status 1 if anything failed.
#
# INTEROP_KEEP=1 keeps the work directory even when everything passed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
: "${SAMSA_BIN:=$ROOT/samsa}"
: "${SAMSACTL_BIN:=$ROOT/samsactl}"
: "${SAMSA_SANITIZED:=0}"
PY=/usr/bin/python3
export SAMSA_BIN SAMSACTL_BIN SAMSA_SANITIZED

if [ "$SAMSA_SANITIZED" = 1 ]; then SCALE=4; else SCALE=1; fi
export INTEROP_TIMEOUT_SCALE="${INTEROP_TIMEOUT_SCALE:-$SCALE}"

fail_setup() { echo "interop: $*" >&2; exit 1; }
[ -x "$SAMSA_BIN" ] || fail_setup "SAMSA_BIN '$SAMSA_BIN' is not an executable (build samsa first)"
[ -x "$PY" ] || fail_setup "$PY not found (Debian's python3 with python3-confluent-kafka and python3-kafka)"
"$PY" -c 'import confluent_kafka, kafka' 2>/dev/null || fail_setup "$PY lacks confluent_kafka or kafka (apt-get install python3-confluent-kafka python3-kafka)"
command -v kcat >/dev/null || fail_setup "kcat not found (apt-get install kcat)"
command -v node >/dev/null || fail_setup "node not found (apt-get install nodejs npm)"
[ -d "$HERE/node_modules/kafkajs" ] && [ -d "$HERE/node_modules/@platformatic/kafka" ] || \
    fail_setup "npm packages missing: (cd tests/interop && npm install)"
command -v timeout >/dev/null || fail_setup "timeout (coreutils) not found"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/samsa-interop.XXXXXX") || fail_setup "mktemp failed"
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# Kills what a test file left running: only the PIDs its harness recorded,
# and only while they are still samsa processes.
reap() {
    [ -f "$1/pids" ] || return 0
    while read -r pid; do
        [ -n "$pid" ] || continue
        if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "^$SAMSA_BIN "; then
            echo "    (killing samsa pid $pid left behind by the test)"
            kill -9 "$pid" 2>/dev/null
        fi
    done <"$1/pids"
}

passed=0 failed=0 skipped=0
failed_names=""
t_all=$(now)
echo "interop: samsa=$SAMSA_BIN sanitized=$SAMSA_SANITIZED work=$WORK"
for f in "$HERE"/cases/[0-9]*_*.py; do
    name=$(basename "$f" .py)
    if [ $# -gt 0 ]; then
        want=0
        for a in "$@"; do case "$name" in *"$a"*) want=1 ;; esac; done
        [ $want = 1 ] || continue
    fi
    # per-file bound: "# limit: SECONDS" in the file, default 120
    lim=$(sed -n 's/^# limit: *\([0-9][0-9]*\).*/\1/p' "$f" | head -1)
    lim=${lim:-120}
    lim=$(awk -v l="$lim" -v s="$INTEROP_TIMEOUT_SCALE" 'BEGIN { printf "%d", l * s }')
    dir="$WORK/$name"
    mkdir -p "$dir"
    t0=$(now)
    INTEROP_WORK="$dir" timeout -k 10 "$lim" "$PY" -u "$f" >"$dir/output.txt" 2>&1
    rc=$?
    dt=$(elapsed "$t0" "$(now)")
    reap "$dir"
    case $rc in
        0) st=PASS; passed=$((passed + 1)) ;;
        77) st=SKIP; skipped=$((skipped + 1)) ;;
        124|137) st=FAIL; failed=$((failed + 1)); echo "  (timed out after ${lim}s)" >>"$dir/output.txt" ;;
        *) st=FAIL; failed=$((failed + 1)) ;;
    esac
    printf '%s %-32s %6ss\n' "$st" "$name" "$dt"
    grep -E '^ +(PASS|FAIL|SKIP) ' "$dir/output.txt" | sed 's/^/    /'
    if [ $st = FAIL ]; then
        failed_names="$failed_names $name"
        [ $rc = 124 ] || [ $rc = 137 ] && echo "    TIMED OUT after ${lim}s (exit $rc)"
        echo "    ---------------- output of $name (exit $rc, last 150 lines)"
        tail -n 150 "$dir/output.txt" | sed 's/^/    | /'
        for lf in "$dir"/*.log; do
            [ -f "$lf" ] || continue
            echo "    ---------------- server log $(basename "$lf") (last 40 lines)"
            tail -n 40 "$lf" | sed 's/^/    | /'
        done
        echo "    ----------------"
    fi
done
dt=$(elapsed "$t_all" "$(now)")
echo "interop: $passed passed, $failed failed, $skipped skipped in ${dt}s"
if [ $failed -gt 0 ]; then
    echo "interop: FAILED:$failed_names (logs kept in $WORK)"
    exit 1
fi
if [ "${INTEROP_KEEP:-0}" = 1 ]; then
    echo "interop: work directory kept: $WORK"
else
    rm -rf "$WORK"
fi
exit 0
