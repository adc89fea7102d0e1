#!/usr/bin/env bash
# Recovery time after a crash, 100 partitions:
#
#   (a) the log alone: tools/bench/storage_bench.c fills 100 partition logs
#       with STORAGE_BENCH_GB gigabytes, leaves them as after kill -9 (no
#       clean-shutdown marker, no recovery point: every batch's length and
#       CRC is checked), then opens them all on one thread per CPU; next to
#       it the floor: the same files read with pread and CRC-32C'ed, nothing
#       else. Page cache warm, as after kill -9 (STORAGE_BENCH_COLD=1 drops
#       it first; needs root).
#   (b) the server: samsa with a 100-partition topic filled by samsa-loadgen
#       (STORAGE_BENCH_SERVER_GB, 0 to skip), kill -9, restart; the time
#       from exec to every partition answering ListOffsets, and what the
#       server log says about each partition's recovery.
#
#   STORAGE_BENCH_GB="1 10"   sizes for (a)
#   STORAGE_BENCH_SERVER_GB=1 size for (b)
#   STORAGE_BENCH_DIR=...     where data goes (default: a temp dir under /tmp)
#   STORAGE_BENCH_KEEP=1      keep it (data, samsa.log) afterwards
set -u -o pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tools/bench/lib.sh
. "$SRC/tools/bench/lib.sh"
SIZES=${STORAGE_BENCH_GB:-1 10}
SGB=${STORAGE_BENCH_SERVER_GB:-1}
NCPU=$(nproc)
TMP=$(mktemp -d "${STORAGE_BENCH_DIR:-${TMPDIR:-/tmp}}/samsa-storage-recovery.XXXXXX") || exit 1
SPID=
cleanup() {
    [ -n "$SPID" ] && kill -9 "$SPID" 2>/dev/null
    if [ "${STORAGE_BENCH_KEEP:-0}" = 1 ]; then echo "storage-recovery: kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
die() { echo "storage-recovery: $*" >&2; exit 1; }
BIN=$TMP/storage_bench
[ -f "$SRC/core/libsamsacore.a" ] || make -C "$SRC" -j"$NCPU" core/libsamsacore.a >/dev/null || exit 1
cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -I"$SRC/core" -I"$SRC/include" -I"$SRC" -o "$BIN" \
    "$SRC/tools/bench/storage_bench.c" "$SRC/core/libsamsacore.a" -lpthread -lm || exit 1
drop_caches() {
    [ "${STORAGE_BENCH_COLD:-0}" = 1 ] || return 0
    sync && echo 3 >/proc/sys/vm/drop_caches || die "cannot drop caches (STORAGE_BENCH_COLD=1 needs root)"
}
: >"$TMP/summary"

# ---- (a) the log alone --------------------------------------------------------
for gb in $SIZES; do
    avail=$(df -Pk "$TMP" | awk 'NR == 2 { print $4 }')
    if [ "$avail" -lt $(( (gb + 1) * 1024 * 1024 )) ]; then
        echo "storage-recovery: skipping $gb GB: not enough disk space"
        continue
    fi
    echo "storage-recovery: (a) filling $gb GB across 100 partitions"
    "$BIN" fill "$TMP/logs" 100 $((gb * 1024)) 1000 || die "fill failed"
    sync
    drop_caches
    rec=$("$BIN" recover "$TMP/logs" 100 "$NCPU") || die "recover failed"
    echo "  $rec"
    drop_caches
    scan=$("$BIN" scan "$TMP/logs" 100 "$NCPU") || die "scan failed"
    echo "  $scan"
    rs=$(sed -n 's/.* seconds=\([0-9.]*\).*/\1/p' <<<"$rec")
    ss=$(sed -n 's/.* seconds=\([0-9.]*\).*/\1/p' <<<"$scan")
    printf '(a) log alone, %3s GB / 100 partitions: recovery %6.2f s, floor (pread + CRC) %6.2f s, ratio %.2f\n' \
        "$gb" "$rs" "$ss" "$(awk -v a="$rs" -v b="$ss" 'BEGIN { printf "%.2f", (b > 0) ? a / b : 0 }')" >>"$TMP/summary"
    rm -rf "$TMP/logs"
done

# ---- (b) the server -------------------------------------------------------------
if [ "$SGB" != 0 ]; then
    SAMSA=$SRC/samsa
    LOADGEN=$SRC/tools/loadgen/samsa-loadgen
    [ -x "$SAMSA" ] && [ -x "$LOADGEN" ] || die "build samsa and tools/loadgen/samsa-loadgen first"
    read -r PORT CPORT < <(free_ports 2)
    DATA=$TMP/data
    start_server() {
        date +%s.%N >"$TMP/t_exec"
        "$SAMSA" --override node.id=1 \
            --override "listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT" \
            --override "controller.quorum.voters=1@127.0.0.1:$CPORT" \
            --override "log.dirs=$DATA" >>"$TMP/samsa.log" 2>&1 &
        SPID=$!
    }
    start_server
    for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done
    B=127.0.0.1:$PORT
    "$SRC/samsactl" --bootstrap-server "$B" topics create --topic rec --partitions 100 >/dev/null || die "create failed"
    n=$(( SGB * 1024 * 1024 ))  # 1 KiB records
    echo "storage-recovery: (b) producing $SGB GB into 100 partitions"
    "$LOADGEN" produce -b "$B" -t rec -n "$n" -s 1000 -a 1 --linger-ms 5 >"$TMP/produce.out" 2>&1 ||
        { cat "$TMP/produce.out"; die "produce failed"; }
    tail -n 3 "$TMP/produce.out" | sed 's/^/  /'
    kill -9 "$SPID"
    wait "$SPID" 2>/dev/null
    mark=$(wc -l <"$TMP/samsa.log")
    start_server
    t_exec=$(cat "$TMP/t_exec")
    # ready = every partition answers ListOffsets (librdkafka asks again on
    # NOT_LEADER_OR_FOLLOWER, which a partition still recovering answers)
    /usr/bin/python3 - "$B" <<'PY' || die "partitions did not all come back"
import sys, time
from confluent_kafka import Consumer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "bench", "log_level": 0})
left = set(range(100))
deadline = time.monotonic() + 300
while left and time.monotonic() < deadline:
    for p in sorted(left):
        try:
            c.get_watermark_offsets(TopicPartition("rec", p), timeout=5, cached=False)
            left.discard(p)
        except Exception:
            pass
    if left:
        time.sleep(0.01)
c.close()
sys.exit(1 if left else 0)
PY
    t_ready=$(date +%s.%N)
    total=$(awk -v a="$t_exec" -v b="$t_ready" 'BEGIN { printf "%.2f", b - a }')
    tail -n +"$((mark + 1))" "$TMP/samsa.log" | grep -E "rec-[0-9]+: recovered" >"$TMP/recovered"
    nrec=$(wc -l <"$TMP/recovered")
    maxms=$(sed -n 's/.* in \([0-9]*\) ms.*/\1/p' "$TMP/recovered" | sort -n | tail -1)
    first=$(tail -n +"$((mark + 1))" "$TMP/samsa.log" | head -1 | awk '{ print $2 }')
    last=$(tail -n 1 "$TMP/recovered" | awk '{ print $2 }')
    bytes=$(find "$DATA" -path "$DATA/rec-*" -name '*.log' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
    echo "  exec to all 100 partitions ready: $total s; $nrec partition(s) recovered, slowest ${maxms:-?} ms;" \
         "log: first line $first, last recovery $last; $bytes bytes on disk"
    printf '(b) server, %s GB / 100 partitions: kill -9, restart: every partition ready %s s after exec (slowest partition %s ms)\n' \
        "$SGB" "$total" "${maxms:-?}" >>"$TMP/summary"
    kill "$SPID" && wait "$SPID" 2>/dev/null
    SPID=
fi
echo
echo "summary:"
cat "$TMP/summary"
