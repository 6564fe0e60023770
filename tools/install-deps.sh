#!/bin/sh
# Install the Debian 12 packages droce needs to build, test and demo.
# Idempotent: installs only what is missing.  Needs root (or sudo).
set -eu

PKGS="gcc make autoconf automake libtool pkg-config binutils
libfabric-dev libfabric-bin libdpdk-dev check tshark
clang clang-format libclang-rt-14-dev iproute2
openmpi-bin libopenmpi-dev nftables ethtool"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing="$missing $p"
done
if [ -z "$missing" ]; then
	echo "install-deps: all packages present"
	exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null 2>&1 || {
		echo "install-deps: need root to install:$missing" >&2
		exit 1
	}
	SUDO=sudo
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
