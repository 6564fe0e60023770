#!/bin/sh
# Build droce out of tree (in ./build) and run every test: make check (unit,
# golden-capture, tshark, memif and, as root, network-namespace tests), the
# three fuzzers (frame parser, QP pair, CM) under ASan+UBSan for
# FUZZ_SECONDS each (default 60), make
# distcheck (its make check without the namespace tests, which make check
# has just run), as root the interoperability suite against rdma_rxe in qemu
# (make check-interop; INTEROP=0 leaves it out), and, under CI (CI=true,
# root), `make install` followed by a plain `fi_info -l`.
# Ends with one line: "tests: N passed, N failed, N skipped".
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
jobs=$(nproc 2>/dev/null || echo 2)
passed=0 failed=0 skipped=0

step() { # name command...
	name=$1
	shift
	echo "==> $name"
	if "$@"; then
		echo "PASS: $name"
		passed=$((passed + 1))
	else
		echo "FAIL: $name"
		failed=$((failed + 1))
	fi
}

configure_build() {
	[ -x "$top/configure" ] || (cd "$top" && autoreconf -fi) || return 1
	mkdir -p "$build" && cd "$build" || return 1
	[ -f Makefile ] || "$top/configure" --enable-werror -q || return 1
	make -j"$jobs"
}

make_check() {
	cd "$build" && make -j"$jobs" check
	rc=$?
	# the Check suites' own summaries, and any failure log in full
	grep -h '^[0-9]*%: Checks' tests/*.log 2>/dev/null
	# (automake's .trs files say ":test-result: FAIL")
	for f in tests/*.log tests/interop/*.log; do
		[ -f "$f" ] || continue
		grep -Eq '^:test-result: (FAIL|ERROR)' "${f%.log}.trs" 2>/dev/null || continue
		echo "---- $f (last 80 lines)"
		tail -n 80 "$f"
	done
	# no summary (the tests did not build): one failure
	[ -f test-suite.log ] || { echo "make check: the tests did not build"; return 1; }
	set -- $(awk '/^# PASS:/{p=$3}/^# SKIP:/{s=$3}/^# (FAIL|ERROR|XPASS):/{f+=$3}
		END{print p+0, f+0, s+0}' test-suite.log)
	echo "make check: $1 passed, $2 failed, $3 skipped"
	passed=$((passed + $1))
	skipped=$((skipped + $3))
	[ "$2" -eq 0 ] && [ "$rc" -eq 0 ]
}

fuzz() { FUZZ_SECONDS=${FUZZ_SECONDS:-60} sh "$top/.ci/fuzz.sh"; }

# the tarball built, installed and checked; its make check leaves out the
# namespace tests, which make check has just run on the same sources
# (Makefile.am: print-distcheck-tests, distcheck-hook)
distcheck() {
	cd "$build" && tests=$(make -s print-distcheck-tests) && [ -n "$tests" ] || return 1
	echo "distcheck's make check: $(echo $tests | wc -w) tests (not the namespace ones)"
	make -j"$jobs" distcheck TESTS="$tests" >distcheck.log 2>&1 || {
		tail -50 distcheck.log
		return 1
	}
}

installed_fi_info() {
	cd "$build" && make install >/dev/null &&
		env -u FI_PROVIDER_PATH fi_info -l | grep -qx 'droce:' &&
		echo "plain 'fi_info -l' lists droce after make install"
}

step "configure and build (-Werror)" configure_build || true
if [ "$failed" -eq 0 ]; then
	echo "==> make check"
	if make_check; then
		echo "PASS: make check"
	else
		echo "FAIL: make check"
		failed=$((failed + 1))
	fi
	step "fuzzing: parser, QP pair, CM (ASan+UBSan)" fuzz
	step "make distcheck" distcheck
	if [ "$(id -u)" -eq 0 ] && [ "${INTEROP:-1}" != 0 ]; then
		step "interop with rdma_rxe (make check-interop)" \
			sh -c "cd '$build' && make check-interop"
	else
		echo "SKIP: interop with rdma_rxe: needs root (network namespaces, qemu)"
		skipped=$((skipped + 1))
	fi
	if [ "${CI:-}" = true ] && [ "$(id -u)" -eq 0 ]; then
		step "make install + plain fi_info -l" installed_fi_info
	fi
fi
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
