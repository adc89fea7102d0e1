# Sourced by the by-hand benches (codecs.sh, lua-produce.sh): one fresh
# samsa on two free loopback ports with its data in a temp dir, stopped
# and removed at exit (BENCH_KEEP=1 keeps the dir). The caller sets
# SRC, SAMSA, SAMSACTL, BENCH_NAME and die(); this sets TMP, PORT, CPORT, BOOT
# and PID.
# shellcheck source=tools/bench/lib.sh
. "$SRC/tools/bench/lib.sh"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/samsa-$BENCH_NAME.XXXXXX")
read -r PORT CPORT < <(free_ports 2)
BOOT=127.0.0.1:$PORT

"$SAMSA" --override node.id=1 --override process.roles=broker,controller \
    --override "listeners=PLAINTEXT://$BOOT,CONTROLLER://127.0.0.1:$CPORT" \
    --override "controller.quorum.voters=1@127.0.0.1:$CPORT" \
    --override "log.dirs=$TMP/data" --override auto.create.topics.enable=false \
    >"$TMP/samsa.log" 2>&1 &
PID=$!
cleanup() {
    kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    [ "${BENCH_KEEP:-0}" = 1 ] && echo "$BENCH_NAME: kept $TMP" || rm -rf "$TMP"
}
trap cleanup EXIT
for _ in $(seq 100); do
    "$SAMSACTL" --bootstrap-server "$BOOT" topics list >/dev/null 2>&1 && break
    sleep 0.1
done
kill -0 "$PID" 2>/dev/null || die "samsa did not start: $(tail -3 "$TMP/samsa.log")"
