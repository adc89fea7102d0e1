#!/usr/bin/env bash
# TLS against plaintext (issue 10): produce and consume throughput and the
# server's CPU-seconds per GB over an SSL listener, next to the same job over
# a PLAINTEXT listener of the same node in the same run, so the ratios are
# what matters. samsa-loadgen (librdkafka) talks SSL through -X.
#
#   (p) produce TLS_BENCH_RECORDS x 1 KiB, acks=1, PLAINTEXT
#   (q) consume (p), PLAINTEXT: sendfile(2) from the segment
#   (s) as (p) over SSL (TLSv1.3, ECDSA P-256 server key)
#   (t) consume (s) over SSL: the record data copied through a bounded
#       buffer and SSL_write (kTLS with SSL_sendfile if this kernel had it:
#       the probe below says why not)
#
# Floors in the same run: the CPU one core needs to AES-256-GCM encrypt a GB
# (`openssl speed -evp aes-256-gcm`, 16 KiB blocks: the TLSv1.3 record size
# and the cipher librdkafka and samsa agree on), which is the least that TLS
# adds per GB on the server's side of a consume (and decryption for produce).
#
#   TLS_BENCH_RECORDS=500000  records per phase
#   TLS_BENCH_RUNS=3          rounds; medians are shown with the spread
#   BENCH_BUILDDIR=dir        where samsa and samsa-loadgen are built
#
# Output on stdout; the summary also goes to tools/bench/tls-last-run.txt.
set -u -o pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BENCH_BUILDDIR:-$SRC}
RECORDS=${TLS_BENCH_RECORDS:-500000}
RUNS=${TLS_BENCH_RUNS:-3}
SAMSA=$BUILD/samsa
LOADGEN=$BUILD/tools/loadgen/samsa-loadgen
OUT=$SRC/tools/bench/tls-last-run.txt
HZ=$(getconf CLK_TCK)

die() { echo "tls-bench: $*" >&2; exit 1; }
case $RECORDS in '' | *[!0-9]* | 0) die "TLS_BENCH_RECORDS must be a positive integer" ;; esac
case $RUNS in '' | *[!0-9]* | 0) die "TLS_BENCH_RUNS must be a positive integer" ;; esac
[ -x "$SAMSA" ] && [ -x "$LOADGEN" ] || die "build samsa and tools/loadgen/samsa-loadgen first"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/samsa-tls-bench.XXXXXX") || die "mktemp failed"
SPID=
cleanup() {
    if [ -n "$SPID" ] && kill -0 "$SPID" 2>/dev/null; then
        kill -TERM "$SPID" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$SPID" 2>/dev/null || break; sleep 0.2; done
        kill -0 "$SPID" 2>/dev/null && kill -KILL "$SPID" 2>/dev/null
        wait "$SPID" 2>/dev/null
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -o "$TMP/floor" "$SRC/tools/bench/floor.c" ||
    die "cannot build the floor helper"

# ---- certificates: a CA and a server certificate for 127.0.0.1 ------------
ossl() { openssl "$@" >/dev/null 2>&1 || die "openssl $1 failed"; }
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$TMP/ca.key" \
    -out "$TMP/ca.pem" -days 2 -subj /CN=samsa-bench-ca
ossl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$TMP/server.key" \
    -out "$TMP/server.csr" -subj /CN=localhost
printf 'basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$TMP/server.ext"
ossl x509 -req -in "$TMP/server.csr" -CA "$TMP/ca.pem" -CAkey "$TMP/ca.key" -CAcreateserial \
    -out "$TMP/server.pem" -days 2 -extfile "$TMP/server.ext"
cat "$TMP/server.key" "$TMP/server.pem" "$TMP/ca.pem" >"$TMP/keystore.pem"

# ---- server -------------------------------------------------------------------
server_ticks() {
    local stat
    stat=$(cat "/proc/$SPID/stat" 2>/dev/null) || { echo 0; return; }
    stat=${stat##*) }
    awk '{ print $12 + $13 }' <<<"$stat"
}
read -r PORT SPORT CPORT < <("$TMP/floor" ports 3) || die "no free ports"
"$SAMSA" --override node.id=1 \
    --override "listeners=PLAINTEXT://127.0.0.1:$PORT,SSL://127.0.0.1:$SPORT,CONTROLLER://127.0.0.1:$CPORT" \
    --override "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT" \
    --override "controller.quorum.voters=1@127.0.0.1:$CPORT" \
    --override "ssl.keystore.type=PEM" --override "ssl.keystore.location=$TMP/keystore.pem" \
    --override "log.dirs=$TMP/data" >"$TMP/samsa.log" 2>&1 &
SPID=$!
for _ in $(seq 100); do
    kill -0 "$SPID" 2>/dev/null || { tail -20 "$TMP/samsa.log"; die "samsa exited during start-up"; }
    (exec 3<>"/dev/tcp/127.0.0.1/$SPORT") 2>/dev/null && break
    sleep 0.1
done
echo "tls-bench: samsa pid $SPID, PLAINTEXT 127.0.0.1:$PORT, SSL 127.0.0.1:$SPORT"
SSL_X=(-X security.protocol=SSL -X "ssl.ca.location=$TMP/ca.pem")

FAILED=0
# phase ID loadgen-args...: leaves $TMP/ID.out and CPU_ID (server seconds)
phase() {
    local id=$1; shift
    sync
    local t0 t1
    t0=$(server_ticks)
    if ! "$LOADGEN" "$@" --stall-timeout 30 >"$TMP/$id.out" 2>&1; then
        FAILED=1
        echo "tls-bench: phase $id FAILED:"; tail -5 "$TMP/$id.out"
        rm -f "$TMP/$id.out"
    fi
    t1=$(server_ticks)
    eval "CPU_$id=$(awk -v a="$t0" -v b="$t1" -v hz="$HZ" 'BEGIN { printf "%.3f", (b - a) / hz }')"
    [ -f "$TMP/$id.out" ] && echo "  $id: $(grep -m1 -E 'produce:|consume:' "$TMP/$id.out"), server CPU $(eval echo "\$CPU_$id") s"
}
for r in $(seq "$RUNS"); do
    echo "tls-bench: round $r of $RUNS"
    phase "p$r" produce -b "127.0.0.1:$PORT" -t "plain-$r" -p 1 -n "$RECORDS" -s 1024 -a 1
    phase "q$r" consume -b "127.0.0.1:$PORT" -t "plain-$r" -n "$RECORDS" -s 1024
    phase "s$r" produce -b "127.0.0.1:$SPORT" "${SSL_X[@]}" -t "tls-$r" -p 1 -n "$RECORDS" -s 1024 -a 1
    phase "t$r" consume -b "127.0.0.1:$SPORT" "${SSL_X[@]}" -t "tls-$r" -n "$RECORDS" -s 1024
done

# ---- floors and facts -------------------------------------------------------------
KTLS=$("$TMP/floor" ktls)
# the kernel's build options, when it publishes them
KCONF=$( (zcat /proc/config.gz 2>/dev/null || cat "/boot/config-$(uname -r)" 2>/dev/null) |
    grep -E '^(# )?CONFIG_(TLS|MODULES)( |=)' | tr '\n' ';' | sed 's/;$//; s/;/; /g')
# "aes-256-gcm  ... <16384-byte figure in kB/s>" is the last column
AES_KBS=$(openssl speed -evp aes-256-gcm -bytes 16384 -seconds 1 2>/dev/null | awk '/^AES-256-GCM|^aes-256-gcm/ { v = $NF } END { sub(/k$/, "", v); print v }')
AES_CPU_GB=$(awk -v k="${AES_KBS:-0}" 'BEGIN { if (k > 0) printf "%.3f", 1e9 / (k * 1000); else print "?" }')
CIPHER=$(grep -o -m1 'TLS_[A-Z0-9_]*' "$TMP/samsa.log" || true)

# ---- summary ------------------------------------------------------------------------
mbps() { sed -n 's/.* \([0-9.]*\) MB\/s.*/\1/p' "$TMP/$1.out" 2>/dev/null | head -1; }
median() { sort -n | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'; }
range() { sort -n | awk '{ a[NR] = $1 } END { if (NR) printf "%s..%s", a[1], a[NR] }'; }
GB=$(awk -v n="$RECORDS" 'BEGIN { printf "%.6f", n * 1024 / 1e9 }')
col() {   # letter what: mbps | cpugb
    for r in $(seq "$RUNS"); do
        [ -f "$TMP/$1$r.out" ] || continue
        if [ "$2" = mbps ]; then mbps "$1$r"; else
            awk -v c="$(eval echo "\$CPU_$1$r")" -v g="$GB" 'BEGIN { printf "%.3f\n", c / g }'; fi
    done
}
for x in p q s t; do
    eval "MB_$x=$(col $x mbps | median)"; eval "CG_$x=$(col $x cpugb | median)"
    eval "MBR_$x=$(col $x mbps | range)"; eval "CGR_$x=$(col $x cpugb | range)"
done
v() { eval "echo \${$1:-}"; }
ratio() { awk -v a="$(v "$1")" -v b="$(v "$2")" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx", a / b; else print "n/a" }'; }
{
    echo "samsa TLS bench, $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), kernel $(uname -r), $(openssl version)"
    echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15-min load average at the end)"
    echo "commit:  $(git -C "$SRC" describe --always --dirty 2>/dev/null || echo unknown)"
    echo "setup:   1 node, 1 partition/topic, $RECORDS x 1 KiB per phase, acks=1, librdkafka" \
        "$(pkg-config --modversion rdkafka 2>/dev/null || echo '?') defaults, median of $RUNS run(s)${CIPHER:+, cipher $CIPHER}"
    echo
    printf '%-34s %9s %14s %14s %16s\n' phase "MB/s" "(spread)" "srv CPU s/GB" "(spread)"
    printf '%-34s %9s %14s %14s %16s\n' "(p) produce 1 KiB, PLAINTEXT" "$MB_p" "$MBR_p" "$CG_p" "$CGR_p"
    printf '%-34s %9s %14s %14s %16s\n' "(s) produce 1 KiB, SSL" "$MB_s" "$MBR_s" "$CG_s" "$CGR_s"
    printf '%-34s %9s %14s %14s %16s\n' "(q) consume, PLAINTEXT (sendfile)" "$MB_q" "$MBR_q" "$CG_q" "$CGR_q"
    printf '%-34s %9s %14s %14s %16s\n' "(t) consume, SSL (copy path)" "$MB_t" "$MBR_t" "$CG_t" "$CGR_t"
    printf '%-34s %9s %14s %14s\n' "floor: AES-256-GCM, one core" "$(awk -v k="${AES_KBS:-0}" 'BEGIN { printf "%.0f", k / 1000 }')" - "$AES_CPU_GB"
    echo
    echo "ratios (medians, SSL against PLAINTEXT in the same run):"
    echo "  produce: throughput $(ratio MB_s MB_p), server CPU/GB $(ratio CG_s CG_p)"
    echo "  consume: throughput $(ratio MB_t MB_q), server CPU/GB $(ratio CG_t CG_q)"
    echo "  consume over SSL spends $(awk -v t="$CG_t" -v q="$CG_q" -v f="$AES_CPU_GB" 'BEGIN { if (f > 0) printf "%.1fx", (t - q) / f; else print "?" }') the AES-256-GCM floor beyond the plaintext consume"
    echo
    echo "kTLS: $KTLS${KCONF:+ (kernel: $KCONF)}"
    echo "  (OpenSSL $(openssl version | cut -d' ' -f2) is built with kTLS; without the kernel's tls ULP"
    echo "  SSL_OP_ENABLE_KTLS cannot take effect, so Fetch over SSL uses the copy path)"
    echo
    echo "MB = 10^6 B, GB = 10^9 B of payload. srv CPU = samsa utime+stime during the"
    echo "phase. On $(nproc) CPUs the client (librdkafka, which also decrypts or encrypts)"
    echo "competes with the server, so SSL throughput is partly bound by the client."
    [ $FAILED = 0 ] || echo "SOME PHASES FAILED: see the output above."
} >"$TMP/summary.txt"
echo
cat "$TMP/summary.txt"
cp "$TMP/summary.txt" "$OUT" && echo && echo "tls-bench: summary written to $OUT"
exit $FAILED
