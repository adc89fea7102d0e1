#!/bin/sh
# The metadata image with 100 000 partitions (1000 topics x 100, RF 3, 3
# brokers by default): time to replay them into an image (a snapshot load
# or a log replay on any node), the image's memory, and the cost of one
# more CreateTopics on top, against decoding the same records (floor).
#
#   tools/bench/quorum-image.sh [TOPICS [PARTITIONS [RF [BROKERS]]]]
set -eu
SRC=$(cd "$(dirname "$0")/../.." && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/samsa-quorum-image.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
[ -f "$SRC/core/libsamsacore.a" ] || make -C "$SRC" -j"$(nproc)" core/libsamsacore.a >/dev/null
cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -I"$SRC/core" -I"$SRC/include" -I"$SRC" -o "$TMP/quorum_image_bench" \
    "$SRC/tools/bench/quorum_image_bench.c" "$SRC/core/libsamsacore.a" -lev -lssl -lcrypto -lpthread -lm
"$TMP/quorum_image_bench" "${1:-1000}" "${2:-100}" "${3:-3}" "${4:-3}"
