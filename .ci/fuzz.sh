#!/bin/sh
# Run droce's three libFuzzer targets under ASan+UBSan, each for a bounded
# time, from seed corpora generated here (nothing binary is committed):
#
#   fuzz_parse  the RoCEv2 frame parser (fuzz/fuzz_parse.c); seeds: one frame
#               per opcode built by the codec plus frames cut from the golden
#               rxe captures (fuzz/mkseeds.c)
#   fuzz_qp     a connected QP pair (requester, responder, completer, MR keys)
#               on the simulated link, driven by scripts of posts, link
#               faults, forged and mutated frames (fuzz/fuzz_qp.c; seeds:
#               fuzz/mkseeds_qp.c)
#   fuzz_mad    the IB CM MAD codec and two CMs fed forged, raw and mutated
#               MADs (fuzz/fuzz_mad.c; seeds: fuzz/mkseeds_mad.c)
#
#   FUZZ_SECONDS       time budget per target (default 60: 3 minutes in all)
#   FUZZ_TARGETS       which to run (default "fuzz_parse fuzz_qp fuzz_mad")
#   FUZZ_ARTIFACT_DIR  where crashing inputs are kept (default: ./fuzz-artifacts)
#
# Builds from the sources, installs nothing, leaves nothing behind but crash
# artifacts.  Exits non-zero on any finding and prints the input and the
# command that replays it.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
secs=${FUZZ_SECONDS:-60}
targets=${FUZZ_TARGETS:-fuzz_parse fuzz_qp fuzz_mad}
artifacts=${FUZZ_ARTIFACT_DIR:-$PWD/fuzz-artifacts}

if ! command -v clang >/dev/null 2>&1; then
	echo "fuzz.sh: clang not found; it is needed for -fsanitize=fuzzer" \
		"(Debian: clang libclang-rt-14-dev, see tools/install-deps.sh)" >&2
	exit 1
fi
case $secs in
'' | *[!0-9]*)
	echo "fuzz.sh: FUZZ_SECONDS must be a whole number of seconds, not '$secs'" >&2
	exit 1
	;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/droce-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

# What each target links (paths relative to $top, so that a space in it
# cannot split them).  The frame codec: everything dr_pkt_parse/dr_pkt_build
# need; src/roce also holds the DPDK port glue, which no fuzzer needs.
codec="src/roce/opcode.c src/roce/icrc.c src/roce/pkt.c"
engine="src/qp/qp.c src/qp/req.c src/qp/resp.c src/qp/comp.c src/qp/cc.c src/qp/mr.c src/qp/ids.c"
# target_info NAME: sets src (the harness), seedsrc (its seed generator) and
# maxlen (libFuzzer -max_len: fuzz_parse's largest frame is 4206 bytes --
# VLAN, IPv6, RETH, 4096 + ICRC -- with room for TOO_LONG payloads and
# Ethernet trailers; the scripts of the other two stop after a few hundred
# actions anyway)
target_info() {
	case $1 in
	fuzz_parse)
		src="$codec fuzz/fuzz_parse.c"
		seedsrc="$codec tools/pcapng.c fuzz/mkseeds.c"
		maxlen=4608
		;;
	fuzz_qp)
		src="$codec $engine src/qp/simlink.c fuzz/fuzz_qp.c"
		seedsrc="fuzz/mkseeds_qp.c"
		maxlen=4096
		;;
	fuzz_mad)
		src="$codec src/roce/cm_mad.c $engine src/qp/cm.c fuzz/fuzz_mad.c"
		seedsrc="src/roce/cm_mad.c fuzz/mkseeds_mad.c"
		maxlen=4096
		;;
	*)
		echo "fuzz.sh: unknown target '$1'" >&2
		exit 1
		;;
	esac
}

cflags="-std=gnu11 -g -O1 -D_GNU_SOURCE -Dgetrandom=dr_fuzz_getrandom -Iinclude -Itools -Isrc/qp
	-Wall -Wextra -Wno-unused-parameter -Werror"
san="-fsanitize=address,undefined -fno-sanitize-recover=all"
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

echo "fuzz.sh: building with $(clang --version | head -n1)"
for t in $targets; do
	target_info "$t"
	# shellcheck disable=SC2086
	(cd "$top" && clang $cflags $san -fsanitize=fuzzer $src -o "$work/$t")
	# shellcheck disable=SC2086
	(cd "$top" && clang $cflags $san $seedsrc -o "$work/mkseeds-$t")
done

finding=0
for t in $targets; do
	target_info "$t"
	mkdir "$work/seeds-$t" "$work/corpus-$t" "$work/crash-$t"
	if [ "$t" = fuzz_parse ]; then
		set --
		for f in "$top"/tests/golden/*.pcapng; do
			[ -f "$f" ] && set -- "$@" "$f"
		done
		[ $# -gt 0 ] || echo "fuzz.sh: no captures in tests/golden/: codec-built seeds only"
		"$work/mkseeds-$t" "$work/seeds-$t" "$@"
	else
		"$work/mkseeds-$t" "$work/seeds-$t"
	fi

	echo "fuzz.sh: $t: fuzzing for ${secs}s"
	rc=0
	"$work/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len="$maxlen" \
		-use_value_profile=1 -print_final_stats=1 -artifact_prefix="$work/crash-$t/" \
		"$work/corpus-$t" "$work/seeds-$t" >"$work/log-$t" 2>&1 || rc=$?

	grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' "$work/log-$t" || true
	execs=$(sed -n 's/^stat::number_of_executed_units:[[:space:]]*//p' "$work/log-$t")
	rate=$(sed -n 's/^stat::average_exec_per_sec:[[:space:]]*//p' "$work/log-$t")
	cov=$(grep -E '^#[0-9]+' "$work/log-$t" |
		sed -n 's/.* cov: \([0-9]*\) ft: \([0-9]*\).*/\1 edges, \2 features/p' | tail -n1)

	if [ "$rc" -ne 0 ] || [ -n "$(ls -A "$work/crash-$t")" ]; then
		finding=1
		echo "fuzz.sh: $t: FINDING (libFuzzer exit status $rc); log tail:" >&2
		tail -n 60 "$work/log-$t" >&2
		mkdir -p "$artifacts"
		for a in "$work/crash-$t"/*; do
			[ -f "$a" ] || continue
			cp "$a" "$artifacts/$t-$(basename "$a")"
			a="$artifacts/$t-$(basename "$a")"
			echo "fuzz.sh: $t: input $a ($(wc -c <"$a") bytes):" >&2
			od -An -tx1 -v "$a" | head -n 40 >&2
			echo "fuzz.sh: $t: replay with:" >&2
			# shellcheck disable=SC2086
			echo "  cd '$top' && clang" $cflags $san -fsanitize=fuzzer $src "-o /tmp/$t &&" \
				"/tmp/$t '$a'" >&2
		done
		echo "fuzz.sh: $t: ${execs:-?} executions before the finding" >&2
		continue
	fi
	if [ -z "$execs" ]; then
		echo "fuzz.sh: $t: no final statistics from libFuzzer; log tail:" >&2
		tail -n 30 "$work/log-$t" >&2
		finding=1
		continue
	fi
	echo "fuzz.sh: $t: $execs executions in ${secs}s (${rate} exec/s), coverage ${cov:-?}, no finding"
done
exit "$finding"
