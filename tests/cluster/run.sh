#!/bin/sh
# Cluster tests: several samsa processes on loopback ports (and one in a
# network namespace), killed, restarted and cut off.
#
#   SAMSA_BIN=... SAMSACTL_BIN=... [SAMSA_SANITIZED=1] ./tests/cluster/run.sh [NAME...]
#
# Runs every cases/NN_*.py (or those whose name contains a NAME), each
# under `timeout` with its "# limit:" bound; prints one line per file and
# per case (PASS/FAIL/SKIP with duration), and on a failure the file's
# output and the tail of every node's log. Exit status 1 if anything failed.
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

[ -x "$SAMSA_BIN" ] || { echo "cluster: SAMSA_BIN '$SAMSA_BIN' is not an executable" >&2; exit 1; }
"$PY" -c 'import confluent_kafka' 2>/dev/null || { echo "cluster: $PY lacks confluent_kafka" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/samsa-cluster.XXXXXX")
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
reap() {
    [ -f "$1/pids" ] || return 0
    while read -r pid; do
        [ -n "$pid" ] || continue
        if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "$SAMSA_BIN "; then
            echo "    (killing samsa pid $pid left behind by the test)"
            kill -9 "$pid" 2>/dev/null
        fi
    done <"$1/pids"
}

passed=0 failed=0 skipped=0 names=""
t_all=$(now)
echo "cluster: samsa=$SAMSA_BIN sanitized=$SAMSA_SANITIZED work=$WORK"
for f in "$HERE"/cases/[0-9]*_*.py; do
    name=$(basename "$f" .py)
    if [ $# -gt 0 ]; then
        want=0
        for a in "$@"; do case "$name" in *"$a"*) want=1 ;; esac; done
        [ $want = 1 ] || continue
    fi
    lim=$(sed -n 's/^# limit: *\([0-9][0-9]*\).*/\1/p' "$f" | head -1)
    lim=$(awk -v l="${lim:-120}" -v s="$INTEROP_TIMEOUT_SCALE" 'BEGIN { printf "%d", l * s }')
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
        *) st=FAIL; failed=$((failed + 1)); names="$names $name" ;;
    esac
    printf '%s %-32s %6ss\n' "$st" "$name" "$dt"
    grep -E '^ +(PASS|FAIL|SKIP) |^    [a-z0-9].*' "$dir/output.txt" | grep -v '^    ---' | sed 's/^/    /'
    if [ $st = FAIL ]; then
        [ $rc = 124 ] || [ $rc = 137 ] && echo "    TIMED OUT after ${lim}s"
        echo "    ---------------- output of $name (exit $rc, last 120 lines)"
        tail -n 120 "$dir/output.txt" | sed 's/^/    | /'
        for lf in "$dir"/*.log; do
            [ -f "$lf" ] || continue
            echo "    ---------------- $(basename "$lf") (last 25 lines)"
            tail -n 25 "$lf" | sed 's/^/    | /'
        done
    fi
done
echo "cluster: $passed passed, $failed failed, $skipped skipped in $(elapsed "$t_all" "$(now)")s"
if [ $failed -gt 0 ]; then
    echo "cluster: FAILED:$names (logs kept in $WORK)"
    exit 1
fi
rm -rf "$WORK"
