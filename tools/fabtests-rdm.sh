#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# fabtests-rdm.sh - libfabric's own fabtests RDM programs over droce;ofi_rxm
# (and any other providers named) between two network namespaces, each
# program run by hand: server in one namespace, client in the other.  Not
# part of `make check` (Debian does not package fabtests); the issue notes
# quote its pass lists.  Never runs runfabtests.sh (it kills every fi_*
# process on the machine).
#
# usage (root, from the build directory):
#   tools/fabtests-rdm.sh [-f FABTESTS_BIN_DIR | -t fabtests-1.17.0.tar.gz] [-T SECONDS]
#                         [-m] [PROVIDER...]
#   -t  build fabtests from this tarball into a temporary directory first
#       (default: ../shared/thirdparty/fabtests-1.17.0.tar.gz beside the source tree)
#   -f  use fabtests already built (the directory holding fi_rdm ...)
#   -T  time limit of one program (default 120)
#   -m  the MSG programs over plain droce instead (fi_msg, fi_msg_pingpong,
#       fi_msg_bw, fi_rma_bw -e msg, fi_cm_data, fi_cq_data -e msg, ...)
#   PROVIDER...  default: "droce;ofi_rxm" "tcp;ofi_rxm"
# Prints "PASS|FAIL provider program args" per run and a summary per
# provider; keeps the outputs in a directory it names.  Namespaces, veth and
# addresses carry this script's PID; everything is removed on exit.

set -u
top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=$(pwd)
[ -f "$builddir/.libs/libdroce-fi.so" ] || {
	echo "run from the build directory (no .libs/libdroce-fi.so here)"
	exit 2
}
[ "$(id -u)" -eq 0 ] || {
	echo "needs root (network namespaces)"
	exit 77
}
tarball=$top_srcdir/../shared/thirdparty/fabtests-1.17.0.tar.gz
bindir=""
tmo=120
msg=0
while getopts "f:t:T:m" o; do
	case $o in
	f) bindir=$OPTARG ;;
	t) tarball=$OPTARG ;;
	T) tmo=$OPTARG ;;
	m) msg=1 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -eq 0 ]; then
	if [ $msg -eq 1 ]; then set -- droce; else set -- "droce;ofi_rxm" "tcp;ofi_rxm"; fi
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/fabtests-rdm.XXXXXX") || exit 99
NSA=drft$$a
NSB=drft$$b
IPA=10.81.$(($$ % 200 + 20)).1
IPB=10.81.$(($$ % 200 + 20)).2
cleanup() {
	for ns in $NSA $NSB; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
		ip netns del "$ns" 2>/dev/null
	done
	echo "outputs kept in $work"
}
trap cleanup EXIT

if [ -z "$bindir" ]; then
	echo "building fabtests from $tarball in $work (a few minutes)"
	tar xzf "$tarball" -C "$work" || exit 99
	src=$(dirname "$(find "$work" -name configure.ac -path '*fabtests*' | head -n 1)")
	(cd "$src" && { [ -x configure ] || ./autogen.sh; } &&
		./configure -q --prefix="$work/inst" && make -j"$(nproc)" && make install) \
		>"$work/build.log" 2>&1 || {
		echo "fabtests build failed: $work/build.log"
		exit 99
	}
	bindir=$work/inst/bin
fi

for ns in $NSA $NSB; do
	ip netns add "$ns" || exit 99
	ip -n "$ns" link set lo up
done
ip -n "$NSA" link add va$$ type veth peer name vb$$ netns "$NSB" || exit 99
ip -n "$NSA" link set va$$ up
ip -n "$NSB" link set vb$$ up
ip -n "$NSA" addr add "$IPA/24" dev va$$
ip -n "$NSB" addr add "$IPB/24" dev vb$$
sleep 1

export FI_PROVIDER_PATH=$builddir/.libs
unset FI_PROVIDER
out=$work/out
mkdir -p "$out"

run() { # provider program args...
	local prov=$1 name=$2 tag sp cr sr
	shift 2
	tag=$(echo "$prov-$name-$*" | tr ' ;/' '___')
	ip netns exec "$NSA" timeout -k 3 "$tmo" "$bindir/$name" -p "$prov" "$@" \
		>"$out/$tag.server" 2>&1 &
	sp=$!
	sleep 0.5
	ip netns exec "$NSB" timeout -k 3 "$tmo" "$bindir/$name" -p "$prov" "$@" "$IPA" \
		>"$out/$tag.client" 2>&1
	cr=$?
	wait $sp
	sr=$?
	if [ $cr -eq 0 ] && [ $sr -eq 0 ]; then
		echo "PASS $prov $name $*"
	else
		echo "FAIL $prov $name $* (server $sr, client $cr; $out/$tag.*)"
	fi
}

if [ $msg -eq 1 ]; then
	progs="fi_msg|fi_msg_pingpong|fi_msg_bw|fi_msg_inject|fi_rma_bw -e msg -o write|fi_rma_bw -e msg -o read|fi_rma_bw -e msg -o writedata|fi_cm_data|fi_cq_data -e msg|fi_msg_epoll"
else
	progs="fi_rdm|fi_rdm_tagged_peek|fi_rdm_pingpong|fi_rdm_tagged_pingpong|fi_rdm_tagged_bw|fi_rdm_cntr_pingpong|fi_rdm_multi_client|fi_rma_bw -e rdm -o write|fi_rma_bw -e rdm -o read|fi_rma_bw -e rdm -o writedata|fi_multi_recv -e rdm|fi_unexpected_msg -e rdm|fi_rdm_atomic"
fi
for prov in "$@"; do
	pass=0
	total=0
	IFS='|'
	for p in $progs; do
		IFS=' '
		# shellcheck disable=SC2086 # the program and its arguments
		line=$(run "$prov" $p)
		echo "$line"
		total=$((total + 1))
		case $line in PASS*) pass=$((pass + 1)) ;; esac
		IFS='|'
	done
	IFS=' '
	echo "== $prov: $pass of $total passed"
done
