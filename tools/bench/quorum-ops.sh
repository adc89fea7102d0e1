#!/bin/sh
# Metadata operations per second on a local 3-node cluster (CreateTopics
# one at a time, and 200 per request), against the disk's fsync rate
# measured in the same run (each committed change costs an fsync on a
# majority).
#
#   tools/bench/quorum-ops.sh [N]     (N sequential ops, 4N in bulk; default 200)
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export SAMSA_BIN="${SAMSA_BIN:-$ROOT/samsa}" SAMSACTL_BIN="${SAMSACTL_BIN:-$ROOT/samsactl}"
export INTEROP_WORK=$(mktemp -d "${TMPDIR:-/tmp}/samsa-quorum-bench.XXXXXX")
trap 'rm -rf "$INTEROP_WORK"' EXIT
exec /usr/bin/python3 -u "$ROOT/tools/bench/quorum_bench.py" ops "${1:-200}"
