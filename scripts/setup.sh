#!/bin/sh
# Installs what samsa needs to build and test on Debian 12 (as root, or
# with sudo), then builds it in place; with --bench also what `make bench`
# compares against (redis-server) and profiles with (perf). Safe to run again: it only
# installs what is missing and rebuilds what changed.
set -eu
cd "$(dirname "$0")/.."

DEBS="build-essential autoconf automake libtool pkg-config clang libclang-rt-14-dev \
libev-dev libssl-dev libzstd-dev liblz4-dev libsnappy-dev zlib1g-dev liblua5.4-dev libcmocka-dev \
librdkafka-dev kcat python3 python3-confluent-kafka python3-kafka python3-prometheus-client iproute2 openssl"
# Node.js may come from elsewhere (e.g. NodeSource, which bundles npm and
# conflicts with Debian's npm package): only ask Debian when it is absent.
command -v node >/dev/null 2>&1 || DEBS="$DEBS nodejs"
# --bench: what `make bench` compares against and profiles with.
[ "${1:-}" = --bench ] && DEBS="$DEBS redis-server redis-tools linux-perf"
command -v npm >/dev/null 2>&1 || DEBS="$DEBS npm"

missing=""
for p in $DEBS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "setup: installing Debian packages:$missing"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get update -qq || true
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

# JavaScript clients for the interop tests, pinned in tests/interop/package.json.
if [ ! -d tests/interop/node_modules/kafkajs ] || [ ! -d tests/interop/node_modules/@platformatic/kafka ] || \
   [ tests/interop/package.json -nt tests/interop/node_modules ]; then
    echo "setup: installing npm packages for the interop tests"
    (cd tests/interop && npm install --no-audit --no-fund --loglevel=error >/dev/null)
    touch tests/interop/node_modules
fi

if [ ! -f configure ] || [ configure.ac -nt configure ]; then
    autoreconf -fi >/dev/null 2>&1
fi
if [ ! -f Makefile ] || [ configure -nt Makefile ]; then
    # configure's cleanup of core dumps trips over the core/ folder
    # ("rm: cannot remove 'core'"): keep its output unless it fails.
    ./configure -q >config.out 2>&1 || { cat config.out; exit 1; }
fi
make -j"$(nproc)" >/dev/null
echo "setup: built ./samsa and ./samsactl"
