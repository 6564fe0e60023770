#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# tshark-opcodes.sh - ask Wireshark whether pcaps/droce-opcodes.pcapng is what
# tools/droce-pcapgen meant to write.
#
# 1. Regenerating the capture gives the checked-in file byte for byte (it
#    never drifts from the generator; fix with `make pcaps`).
# 2. Our own parser accepts every frame, ICRC included, and rebuilds it
#    byte-exact (droce-pcapgen --verify): Wireshark does not check the ICRC
#    (docs/protocol.md E).
# 3. Every frame dissects as eth:ethertype:ip:udp:infiniband, and the BTH,
#    RETH, AETH, AtomicETH, AtomicAckETH, ImmDt, IETH, DETH and MAD fields
#    tshark shows equal the table `droce-pcapgen --expect` prints from the
#    same frame descriptions the capture was built from.
# 4. tshark reports no malformed frame and no expert error.
#
# Run by `make check` with top_srcdir, top_builddir and TSHARK exported;
# exits 77 (skip) when tshark is not installed, 1 (fail) then if CI=true.

set -u

srcdir_guess=$(cd "$(dirname "$0")/.." && pwd)
top_srcdir=${top_srcdir:-$srcdir_guess}
top_builddir=${top_builddir:-.}
TSHARK=${TSHARK:-}
[ -n "$TSHARK" ] || TSHARK=$(command -v tshark 2>/dev/null || true)

if [ -z "$TSHARK" ] || [ ! -x "$TSHARK" ]; then
	# in CI (CI=true) tools/install-deps.sh installs it: its absence fails
	[ "${CI:-}" != true ] || { echo "FAIL: tshark not found, and CI=true"; exit 1; }
	echo "SKIP: tshark not found (install the tshark package, then re-run configure)"
	exit 77
fi

gen=$top_builddir/tools/droce-pcapgen
cap=$top_srcdir/pcaps/droce-opcodes.pcapng
fail=0

if [ ! -x "$gen" ]; then
	echo "FAIL: $gen not built"
	exit 99
fi
if [ ! -f "$cap" ]; then
	echo "FAIL: $cap missing (run: make pcaps)"
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tshark-opcodes.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM
# A private, empty Wireshark profile: user preferences must not change what
# the dissectors decode.
mkdir "$tmp/wsconf"
WIRESHARK_CONFIG_DIR=$tmp/wsconf
export WIRESHARK_CONFIG_DIR

tshark_run() {
	"$TSHARK" -n -r "$cap" "$@" 2>"$tmp/tshark.err"
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "FAIL: tshark $* exited $rc:"
		cat "$tmp/tshark.err"
		exit 1
	fi
}

echo "tshark: $("$TSHARK" --version 2>/dev/null | head -n 1)"

# 1. reproducible
if ! "$gen" "$tmp/regen.pcapng"; then
	echo "FAIL: droce-pcapgen could not regenerate the capture"
	exit 1
fi
if cmp -s "$tmp/regen.pcapng" "$cap"; then
	echo "ok: regenerating gives the checked-in capture byte for byte"
else
	echo "FAIL: $cap differs from what droce-pcapgen writes now (run: make pcaps)"
	fail=1
fi

# 2. our parser: every frame OK, ICRC valid, rebuild byte-exact
if "$gen" --verify "$cap"; then
	echo "ok: every frame parses with dr_pkt_parse and its ICRC is valid"
else
	echo "FAIL: droce-pcapgen --verify"
	fail=1
fi

# 3. tshark's view, field by field
"$gen" --expect >"$tmp/expect.txt" || { echo "FAIL: droce-pcapgen --expect"; exit 1; }
fields=$(head -n 1 "$tmp/expect.txt")
set --
oldifs=$IFS
IFS='|'
for f in $fields; do
	set -- "$@" -e "$f"
done
IFS=$oldifs
# occurrence=f: the dissector adds ImmDt and IETH twice (subtree and value)
tshark_run -T fields -E separator='|' -E occurrence=f "$@" >"$tmp/got.raw"
# booleans print 0/1 in tshark 4.0 and True/False in later releases
awk -F'|' -v OFS='|' '{
	for (i = 1; i <= NF; i++) {
		if ($i == "True") $i = 1
		else if ($i == "False") $i = 0
	}
	print
}' "$tmp/got.raw" >"$tmp/got.txt"
tail -n +2 "$tmp/expect.txt" >"$tmp/want.txt"
nwant=$(wc -l <"$tmp/want.txt")
ngot=$(wc -l <"$tmp/got.txt")
if [ "$nwant" -eq 0 ] || [ "$nwant" -ne "$ngot" ]; then
	echo "FAIL: droce-pcapgen describes $nwant frames, tshark read $ngot"
	fail=1
fi
if diff -u "$tmp/want.txt" "$tmp/got.txt" >"$tmp/fields.diff"; then
	echo "ok: $ngot frames: tshark's fields equal the expected table"
else
	echo "FAIL: tshark fields differ from droce-pcapgen --expect"
	echo "      fields: $fields"
	cat "$tmp/fields.diff"
	fail=1
fi

tshark_run -T fields -e frame.number -e frame.protocols >"$tmp/protos.txt"
if grep -v -E '^[0-9]+	eth:ethertype:ip:udp:infiniband(:|$)' "$tmp/protos.txt" \
	>"$tmp/protos.bad"; then
	echo "FAIL: frames not dissected as InfiniBand over UDP:"
	cat "$tmp/protos.bad"
	fail=1
else
	echo "ok: every frame is eth:ethertype:ip:udp:infiniband"
fi

# 4. no malformed frame, no expert error
tshark_run -Y '_ws.malformed || _ws.expert.severity == error' \
	-T fields -e frame.number -e _ws.expert.message >"$tmp/errors.txt"
if [ -s "$tmp/errors.txt" ]; then
	echo "FAIL: malformed frames or expert errors:"
	cat "$tmp/errors.txt"
	"$TSHARK" -n -r "$cap" -q -z expert,error 2>/dev/null
	fail=1
else
	echo "ok: no malformed frame, no expert error"
fi

exit $fail
