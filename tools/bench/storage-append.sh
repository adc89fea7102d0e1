#!/usr/bin/env bash
# Append throughput into the partition log alone (no network, no request
# parsing): tools/bench/storage_bench.c appending 100-record batches of
# 100-byte records into fresh logs, 1 and 100 partitions, from 1 thread and
# from one thread per CPU. Also the cost of an fsync per append (what a
# flush.messages=1 topic pays without the flusher's group commit).
#
#   STORAGE_BENCH_MB=2000     megabytes per run
#   STORAGE_BENCH_RUNS=3      runs of each case (the best is reported)
#   STORAGE_BENCH_DIR=...     where the logs go (default: a temp dir under /tmp)
#
# Prints one key=value line per run and a summary.
set -u -o pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
MB=${STORAGE_BENCH_MB:-2000}
RUNS=${STORAGE_BENCH_RUNS:-3}
NCPU=$(nproc)
TMP=$(mktemp -d "${STORAGE_BENCH_DIR:-${TMPDIR:-/tmp}}/samsa-storage-append.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
BIN=$TMP/storage_bench
[ -f "$SRC/core/libsamsacore.a" ] || make -C "$SRC" -j"$NCPU" core/libsamsacore.a >/dev/null || exit 1
cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -I"$SRC/core" -I"$SRC/include" -I"$SRC" -o "$BIN" \
    "$SRC/tools/bench/storage_bench.c" "$SRC/core/libsamsacore.a" -lpthread -lm || exit 1

best() { # case args...: runs RUNS times, keeps the line with the highest MBps
    local id=$1; shift
    local line bestl="" bestv=0
    for _ in $(seq "$RUNS"); do
        sync
        line=$("$BIN" append "$TMP/d" "$@") || { echo "storage-append: $id failed"; exit 1; }
        rm -rf "$TMP/d"
        echo "  $id: $line"
        v=$(sed -n 's/.* MBps=\([0-9.]*\).*/\1/p' <<<"$line")
        if awk -v a="$v" -v b="$bestv" 'BEGIN { exit !(a > b) }'; then bestv=$v; bestl=$line; fi
    done
    printf '%-28s %s\n' "$id" "$bestl" >>"$TMP/summary"
}

echo "storage-append: $MB MB per run, best of $RUNS, $NCPU CPU(s)"
best "1 partition, 1 thread" 1 "$MB" 100 100 1
best "1 partition, $NCPU threads" 1 "$MB" 100 100 "$NCPU"
best "100 partitions, 1 thread" 100 "$MB" 100 100 1
best "100 partitions, $NCPU threads" 100 "$MB" 100 100 "$NCPU"
# fsync per append: a few hundred appends are enough to see its cost
FMB=$(( MB / 200 > 4 ? MB / 200 : 4 ))
best "1 partition, fsync each" 1 "$FMB" 100 100 1 flush
echo
echo "summary (best run of each):"
sed 's/ batch_bytes=[0-9]*//; s/ batches=[0-9]*//' "$TMP/summary"
