#!/bin/sh
# Authorization decisions per second with 10 000 ACLs: the ACL matcher
# uncached and authz_decide with a connection's decision cache, against a
# hash-map lookup of the same names (floor).
#
#   tools/bench/authz.sh [ACLS [DECISIONS]]
set -eu
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BENCH_BUILDDIR:-$SRC}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/samsa-authz-bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
[ -f "$BUILD/core/libsamsacore.a" ] || make -C "$BUILD" -j"$(nproc)" core/libsamsacore.a >/dev/null
cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -I"$SRC/core" -I"$SRC/include" -I"$SRC" -I"$BUILD/core" -I"$BUILD" -o "$TMP/authz_bench" \
    "$SRC/tools/bench/authz_bench.c" "$BUILD/core/libsamsacore.a" -lev -lssl -lcrypto -lpthread -lm -ldl
"$TMP/authz_bench" "${1:-10000}" "${2:-2000000}"
