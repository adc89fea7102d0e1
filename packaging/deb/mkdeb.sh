#!/bin/sh
# Builds a Debian package of a configured and built samsa tree: samsa,
# samsactl, the modules this build includes (and only those), the public
# plugin headers and samsa-plugin.pc, the config and the systemd unit
# (samsa.service, run as the system user samsa, which the package's
# postinst creates). Run through `make deb`.
#
#   mkdeb.sh BUILDDIR VERSION "MODULES" OUT.deb
#
# The package installs under the configured prefix: configure with
# --prefix=/usr (and --sysconfdir=/etc) for Debian's layout. Depends is
# computed from the shared libraries the installed files need.
set -eu
builddir=$1
version=$2
modules=$3
out=$4

command -v dpkg-deb >/dev/null || { echo "mkdeb: dpkg-deb not found" >&2; exit 1; }
stage=$(mktemp -d "${TMPDIR:-/tmp}/samsa-deb.XXXXXX")
trap 'rm -rf "$stage"' EXIT
root=$stage/root

make -C "$builddir" -s install DESTDIR="$root" >/dev/null
# libtool's archives are of no use in a binary package
find "$root" -name '*.la' -delete

arch=$(dpkg --print-architecture)
deps=$(find "$root" -type f | while read -r f; do
           objdump -p "$f" 2>/dev/null | awk '/NEEDED/ { print $2 }'
       done | sort -u | while read -r lib; do
           dpkg -S "*/$lib" 2>/dev/null | head -1 | cut -d: -f1
       done | sort -u | paste -sd, - | sed 's/,/, /g')
size=$(du -sk "$root" | cut -f1)
[ -n "$modules" ] || modules=none

mkdir -p "$root/DEBIAN"
# the config is the operator's once installed (with --sysconfdir=/etc)
conffiles=$(cd "$root" && find etc -type f 2>/dev/null | sed 's|^|/|')
[ -z "$conffiles" ] || printf '%s\n' $conffiles >"$root/DEBIAN/conffiles"
cat >"$root/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
# samsa.service runs as the system user samsa, its data in /var/lib/samsa
# (the unit's StateDirectory).
set -e
if [ "$1" = configure ] && ! getent passwd samsa >/dev/null; then
    adduser --system --group --home /var/lib/samsa --no-create-home --quiet samsa
fi
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || true
fi
POSTINST
chmod 0755 "$root/DEBIAN/postinst"
deps="${deps:+$deps, }adduser"
{
    echo "Package: samsa"
    echo "Version: $version"
    echo "Architecture: $arch"
    echo "Maintainer: samsa maintainers <samsa@localhost>"
    echo "Installed-Size: $size"
    [ -n "$deps" ] && echo "Depends: $deps"
    echo "Section: net"
    echo "Priority: optional"
    echo "Description: Kafka-compatible event-streaming broker"
    echo " samsa speaks the Kafka protocol to any Kafka client. This build"
    echo " includes the modules: $modules."
} >"$root/DEBIAN/control"

dpkg-deb --root-owner-group --build "$root" "$out" >/dev/null
echo "mkdeb: wrote $out (modules: $modules)"
