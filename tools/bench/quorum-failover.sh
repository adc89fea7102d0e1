#!/bin/sh
# Metadata quorum failover: time from kill -9 of the active controller of a
# local 3-node cluster to the next committed metadata change, against the
# failure detection floor (controller.quorum.fetch.timeout.ms).
#
#   tools/bench/quorum-failover.sh [ROUNDS]     (default 5)
#
# SAMSA_BIN / SAMSACTL_BIN: the binaries (default: the in-tree build).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export SAMSA_BIN="${SAMSA_BIN:-$ROOT/samsa}" SAMSACTL_BIN="${SAMSACTL_BIN:-$ROOT/samsactl}"
export INTEROP_WORK=$(mktemp -d "${TMPDIR:-/tmp}/samsa-quorum-bench.XXXXXX")
trap 'rm -rf "$INTEROP_WORK"' EXIT
exec /usr/bin/python3 -u "$ROOT/tools/bench/quorum_bench.py" failover "${1:-5}"
