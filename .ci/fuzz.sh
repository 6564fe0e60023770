#!/bin/sh
# Fuzz the RoCEv2 frame parser (fuzz/fuzz_parse.c) with libFuzzer under
# ASan+UBSan for a bounded time, starting from seeds cut from the golden
# rxe captures plus one frame per opcode built by the codec.
#
#   FUZZ_SECONDS   time budget (default 60)
#   FUZZ_ARTIFACT_DIR  where crashing inputs are kept (default: ./fuzz-artifacts)
#
# Builds from the sources (the codec in src/roce, include/), installs nothing, leaves
# nothing behind but crash artifacts.  Exits non-zero on any finding.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
secs=${FUZZ_SECONDS:-60}
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

# The frame codec: everything dr_pkt_parse/dr_pkt_build need.  src/roce also
# holds the DPDK port glue and other users of the codec; the fuzzer needs none.
# (paths relative to $top, so that a space in it cannot split them)
codec="src/roce/opcode.c src/roce/icrc.c src/roce/pkt.c"

cflags="-std=gnu11 -g -O1 -D_GNU_SOURCE -Iinclude -Itools
	-Wall -Wextra -Wno-unused-parameter -Werror"
san="-fsanitize=address,undefined -fno-sanitize-recover=all"

echo "fuzz.sh: building the harness with $(clang --version | head -n1)"
# shellcheck disable=SC2086
(cd "$top" && clang $cflags $san -fsanitize=fuzzer $codec fuzz/fuzz_parse.c -o "$work/fuzz_parse")
# shellcheck disable=SC2086
(cd "$top" && clang $cflags $san $codec tools/pcapng.c fuzz/mkseeds.c -o "$work/mkseeds")

mkdir "$work/seeds" "$work/corpus" "$work/crash"
set --
for f in "$top"/tests/golden/*.pcapng; do
	[ -f "$f" ] && set -- "$@" "$f"
done
[ $# -gt 0 ] || echo "fuzz.sh: no captures in tests/golden/: codec-built seeds only"
"$work/mkseeds" "$work/seeds" "$@"

echo "fuzz.sh: fuzzing for ${secs}s"
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
rc=0
# -max_len: the largest frame is 4206 bytes (VLAN, IPv6, RETH, 4096 + ICRC);
# leave room for TOO_LONG payloads and Ethernet trailers
"$work/fuzz_parse" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=4608 \
	-use_value_profile=1 -print_final_stats=1 -artifact_prefix="$work/crash/" \
	"$work/corpus" "$work/seeds" >"$work/log" 2>&1 || rc=$?

grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' "$work/log" || true
execs=$(sed -n 's/^stat::number_of_executed_units:[[:space:]]*//p' "$work/log")
rate=$(sed -n 's/^stat::average_exec_per_sec:[[:space:]]*//p' "$work/log")
cov=$(grep -E '^#[0-9]+' "$work/log" |
	sed -n 's/.* cov: \([0-9]*\) ft: \([0-9]*\).*/\1 edges, \2 features/p' | tail -n1)

if [ "$rc" -ne 0 ] || [ -n "$(ls -A "$work/crash")" ]; then
	echo "fuzz.sh: FINDING (libFuzzer exit status $rc); log tail:" >&2
	tail -n 60 "$work/log" >&2
	mkdir -p "$artifacts"
	for a in "$work"/crash/*; do
		[ -f "$a" ] || continue
		cp "$a" "$artifacts/"
		echo "fuzz.sh: input $artifacts/$(basename "$a") ($(wc -c <"$a") bytes):" >&2
		od -An -tx1 -v "$a" | head -n 40 >&2
	done
	echo "fuzz.sh: ${execs:-?} executions before the finding" >&2
	exit 1
fi
if [ -z "$execs" ]; then
	echo "fuzz.sh: no final statistics from libFuzzer; log tail:" >&2
	tail -n 30 "$work/log" >&2
	exit 1
fi
echo "fuzz.sh: $execs executions in ${secs}s (${rate} exec/s), coverage ${cov:-?}, no finding"
