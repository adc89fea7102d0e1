#!/bin/sh
# The whole test suite, as CI runs it (.ci/run):
#   0. checks of the committed tree (scripts/check-tree.sh: no committed
#      ELF binary, core/'s include layers) and scripts/check-kinds.sh
#      (every plugin kind has a call site, a provider and a test);
#   1. setup (packages, in-tree build), unit tests, interop tests;
#   2. a -Werror build with AddressSanitizer + UndefinedBehaviorSanitizer
#      in build/asan, and the unit and interop tests again with it;
#   3. the fuzz targets, each for a bounded time.
# Every stage is bounded; the first failure stops the run (exit 1).
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
JOBS=$(nproc)
FUZZ_SECONDS=${FUZZ_SECONDS:-30}

START=$(date +%s)
stage() { printf '\n=== %s (at %ss) ===\n' "$*" "$(( $(date +%s) - START ))"; }

stage "tree checks (committed binaries, core/ include layers)"
./scripts/check-tree.sh
stage "every plugin kind real (call site, provider, test; pending ones named)"
./scripts/check-kinds.sh

stage "setup and build"
./scripts/setup.sh

stage "unit tests"
make -j"$JOBS" check || { cat tests/unit/*.log 2>/dev/null | tail -100; exit 1; }

stage "interop tests (real clients)"
SAMSA_BIN="$ROOT/samsa" SAMSACTL_BIN="$ROOT/samsactl" ./tests/interop/run.sh
SAMSA_BIN="$ROOT/samsa" SAMSACTL_BIN="$ROOT/samsactl" ./tests/cluster/run.sh  # several nodes, faults

stage "sanitizer build (-Werror, ASan+UBSan)"
rm -rf build/asan
mkdir -p build/asan
git ls-files -z | xargs -0 tar cf - | (cd build/asan && tar xf -)
# generated files that are committed but may be newer in the work tree
(cd build/asan && autoreconf -fi >/dev/null 2>&1 && \
    { ./configure -q --enable-werror --enable-sanitizers CC=gcc >config.out 2>&1 || { cat config.out; false; }; } && \
    make -j"$JOBS" >/dev/null)

stage "unit tests under ASan+UBSan"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build/asan && make -j"$JOBS" check) || { cat build/asan/tests/unit/*.log | tail -100; exit 1; }

stage "interop tests under ASan+UBSan"
SAMSA_BIN="$ROOT/build/asan/samsa" SAMSACTL_BIN="$ROOT/build/asan/samsactl" SAMSA_SANITIZED=1 \
    ./tests/interop/run.sh

stage "fuzzing (${FUZZ_SECONDS}s per target)"
make fuzz >/dev/null
make fuzz-run FUZZ_SECONDS="$FUZZ_SECONDS"

stage "all tests passed"
