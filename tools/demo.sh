#!/bin/sh
# droce's main job, from a fresh Debian 12 machine: install what is missing,
# build, write a capture holding one RoCEv2 frame of every opcode droce's
# codec speaks, check every ICRC in it with droce's own parser, and print
# tshark's one-line summary of each frame.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}

sh "$top/tools/install-deps.sh"
[ -x "$top/configure" ] || (cd "$top" && autoreconf -fi)
mkdir -p "$build"
cd "$build"
[ -f Makefile ] || "$top/configure" -q
make -j"$(nproc)" >/dev/null

out="$build/demo/droce-opcodes.pcapng"
mkdir -p "$build/demo"
./tools/droce-pcapgen "$out"
if cmp -s "$out" "$top/pcaps/droce-opcodes.pcapng"; then
	echo "wrote $out (identical to pcaps/droce-opcodes.pcapng)"
else
	echo "wrote $out (differs from the checked-in pcaps/droce-opcodes.pcapng!)"
fi
./tools/droce-pcapgen --verify "$out"
echo
tshark -r "$out"
