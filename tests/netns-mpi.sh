#!/bin/sh
# shellcheck disable=SC2086 # word splitting of option lists is meant
# SPDX-License-Identifier: BSD-2-Clause
#
# netns-mpi.sh - Open MPI jobs over "droce;ofi_rxm" (pml cm + mtl ofi):
# three network namespaces stand in for three hosts, joined by a bridge in
# a fourth, each with its own address on an interface of the same name:
#
#   drmp<pid>h1: drm<pid> N.1/24 --+
#   drmp<pid>h2: drm<pid> N.2/24 --+-- br0 in drmp<pid>br (nft counters)
#   drmp<pid>h3: drm<pid> N.3/24 --+
#
# mpirun runs in h1; an rsh agent starts ORTE's daemon in the other
# namespaces ("ip netns exec", each with its own UTS hostname, so that ORTE
# takes them for three nodes).  --map-by node deals the ranks round-robin
# over the hosts, so ring neighbours are always on different hosts and the
# ranks of one host (same interface, same address) reach each other through
# droce's same-host delivery.  --bind-to none: to ORTE every namespace is a
# node of its own and would pin each one's first rank to the same core.
# The job runs in a cpu cgroup of its own (see "one scheduling group").
#
# No FI_DROCE_* variable is set: droce picks net_af_packet on the
# namespace's interface and its address by itself.  For each job
# (DROCE_MPI_PER_HOST ranks per host, default "2 4": 6 and 12 ranks) it
# asserts:
#  1. tests/mpi-check (built here with mpicc) passes every phase with the
#     data verified: ring, allreduce, alltoall, a 16 MiB message around the
#     ring, 100 MPI_Barriers whose ordering is checked through files in a
#     directory all ranks share; mpirun exits 0, "PASS N ranks";
#  2. the ranks sat where meant: PER ranks on each of the three hosts;
#  3. it was droce: in every rank's own stderr (mpirun --output-filename,
#     FI_LOG_LEVEL=info), libfabric opened fabric "droce", droce opened its
#     port on the rank's host's interface with that host's address, and
#     Open MPI's mtl ofi chose the domain named after that interface, and
#     (2 or more ranks a host) droce's close logged frames both sent and
#     received on the host-local wire between the ranks of a host;
#  4. and the data went as RoCEv2: the bridge forwarded at least N x 16 MiB
#     of UDP to port 4791 (the 16 MiB ring alone crosses hosts N times).
# Then the same job with rank 1 corrupting one byte of its ring messages
# (mpi-check -x ring) must fail with "FAIL ring": the checks can fail.
# Open MPI (openmpi-bin, libopenmpi-dev) and nftables are installed with
# apt-get when missing.
# Knobs for trying by hand: DROCE_MPI_PER_HOST, DROCE_MPI_RNDV_WRITE (see
# below), DROCE_MPI_PROVIDER (e.g. "tcp;ofi_rxm", to check this script
# against another provider: then only 1 and 2 are asserted), DROCE_MPI_BIG
# (bytes, default 16 MiB).
# Exit: 0 pass, 1 fail, 77 skip (not root, no ip netns; see netns-lib.sh),
# 99 hard error.  Bounded: every job under timeout.

set -u

. "$(dirname "$0")/netns-lib.sh"

PER_HOST=${DROCE_MPI_PER_HOST:-2 4}
PROVIDER=${DROCE_MPI_PROVIDER:-droce;ofi_rxm}
BIG=${DROCE_MPI_BIG:-16777216}
NHOSTS=3
budget=${DROCE_NETNS_BUDGET:-300}
# ofi_rxm's defaults: messages over its SAR limit (128 KiB) go by its
# read rendezvous, one RDMA read of the whole message (16 MiB in "big"),
# which droce's requester asks for in window-sized READ requests (before
# that, one unpaced burst of 16384 responses overran the receiver's packet
# ring: 1.1-1.34 GB on the bridge for 48-96 MiB, or retries exceeded).
# DROCE_MPI_RNDV_WRITE=1 tries rxm's write rendezvous instead.
if [ "${DROCE_MPI_RNDV_WRITE:-0}" = 1 ]; then
	FI_OFI_RXM_USE_RNDV_WRITE=1
	export FI_OFI_RXM_USE_RNDV_WRITE
	MPI_X="-x FI_OFI_RXM_USE_RNDV_WRITE"
else
	unset FI_OFI_RXM_USE_RNDV_WRITE
	MPI_X=""
fi

apt_install() { # package...
	echo "installing $* (apt-get)"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1 ||
		{ apt-get update -q >/dev/null 2>&1 &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1; } ||
		hard "apt-get install $* failed"
}
if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
	apt_install openmpi-bin libopenmpi-dev
fi
command -v nft >/dev/null 2>&1 || apt_install nftables
command -v unshare >/dev/null 2>&1 || hard "unshare (util-linux) not found"

P=drmp$$
BR=${P}br
IF=drm$$
net=10.76.$(($$ % 200 + 20))
tmp=$(mktemp -d "${TMPDIR:-/tmp}/netns-mpi.XXXXXX") || hard "mktemp failed"
chmod 755 "$tmp"
fail=0
hosts=""
for i in $(seq $NHOSTS); do
	hosts="$hosts ${P}h$i"
done

cleanup() {
	trap - EXIT INT TERM HUP
	# mpirun and every ORTE daemon and rank live in our namespaces only
	teardown_ns "" $hosts "$BR"
	# what ranks killed by mpirun (the corrupting job) could not remove;
	# the names hold our interface's (our PID's) and namespaces' names
	rm -f /run/droce/"$IF"@net* /dev/shm/droce/"$IF"@net*
	cg_remove
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 1' INT TERM HUP

# ---- one scheduling group ----------------------------------------------------------

# The three "hosts" share this kernel's scheduler, which takes them for
# what they are: sessions.  ORTE's daemons start sessions of their own,
# and with autogroups (kernel.sched_autogroup_enabled, on by default)
# each session is one scheduling entity; 12 ranks polling (and yielding,
# mpi_yield_when_idle) on 2 CPUs that way left ranks runnable but not run
# for 0.3-5.7 s at a time (their /proc schedstat; perf sched showed two
# ranks handing one CPU to each other by sched_yield every 5 us while the
# others waited on the other CPU's queue), often a whole host's four at
# once.  droce answers only while its process runs, so their peers' timers
# backed off, phases took 10-30 s instead of 1-4, and a rank off its CPU
# for the 12.8 s of retries failed the job ("transport retry counter
# exceeded").  Real hosts do not share one scheduler.  A task group of
# their own puts the ranks back on equal terms: autogroups apply to the
# root task group only.  CG: the group, empty when none could be made
# (no cpu controller, a read-only cgroup file system): then the job runs
# as the kernel places it, and the output says so.
CG=""
autogroups=$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null || echo absent)
# sh -c "$cg_join" sh FILE CMD...: CMD in the cgroup whose cgroup.procs is FILE
cg_join='echo $$ >"$1" && shift && exec "$@"'
cg_make() {
	[ "$autogroups" = 1 ] || return 0
	# cgroup v1: the hierarchy the cpu controller is mounted on
	cg_m=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ { print $2; exit }' /proc/self/mounts)
	if [ -n "$cg_m" ]; then
		cg_p=$cg_m$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ { print $3; exit }' /proc/self/cgroup)
	else
		# cgroup v2: a sibling of ours, if our parent gives its children cpu
		cg_m=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
		[ -n "$cg_m" ] || return 0
		cg_p=$cg_m$(dirname "$(awk -F: '$1 == 0 { print $3; exit }' /proc/self/cgroup)")
		grep -qw cpu "$cg_p/cgroup.subtree_control" 2>/dev/null || return 0
	fi
	cg_p=${cg_p%/}
	mkdir "$cg_p/droce-mpi-$$" 2>/dev/null || return 0
	# and a process can join it (a hierarchy may refuse: v2's rules on
	# where processes may live), or the job would not start
	if sh -c "$cg_join" sh "$cg_p/droce-mpi-$$/cgroup.procs" true 2>/dev/null; then
		CG=$cg_p/droce-mpi-$$
	else
		rmdir "$cg_p/droce-mpi-$$"
	fi
}
# Every process left in it (only the job's run there) is ended, then the
# group goes; a process leaves it as it exits, a moment after the SIGKILL
# (at most 5 s of waiting for that)
cg_remove() {
	[ -n "$CG" ] && [ -d "$CG" ] || return 0
	for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do
		kill -KILL "$p" 2>/dev/null
	done
	i=0
	while ! rmdir "$CG" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 50 ] || { echo "cannot remove cgroup $CG"; return 0; }
		sleep 0.1
	done
}

# ---- the program -----------------------------------------------------------------

CHECK_SRC=$top_srcdir/tests/mpi-check.c
[ -f "$CHECK_SRC" ] || hard "$CHECK_SRC not found"
mpicc -O2 -Wall -o "$tmp/mpi-check" "$CHECK_SRC" >"$tmp/mpicc.txt" 2>&1 || {
	cat "$tmp/mpicc.txt"
	hard "mpicc failed on $CHECK_SRC"
}

# ---- the hosts -------------------------------------------------------------------

setup_ns "$BR"
ip -n "$BR" link add br0 type bridge || hard "cannot create a bridge"
ip -n "$BR" link set br0 up
hi=0
for ns in $hosts; do
	hi=$((hi + 1))
	setup_ns "$ns"
	ip -n "$ns" link add "$IF" type veth peer name "${IF}p$hi" netns "$BR" ||
		hard "cannot create veth pair $IF/${IF}p$hi"
	ip -n "$BR" link set "${IF}p$hi" master br0
	ip -n "$BR" link set "${IF}p$hi" mtu 1500 up
	ip -n "$ns" link set "$IF" mtu 1500 up
	ip -n "$ns" addr add "$net.$hi/24" dev "$IF"
	veth_wait_up "$ns" "$IF" "$BR" "${IF}p$hi"
done
# the RoCEv2 (UDP 4791) bytes the bridge forwards between the hosts
ip netns exec "$BR" nft -f - <<EOF || hard "nft failed"
table bridge drmpi {
	chain forward_roce {
		type filter hook forward priority 0; policy accept;
		udp dport 4791 counter
	}
}
EOF
roce_bytes() {
	ip netns exec "$BR" nft list table bridge drmpi |
		sed -n 's/.*udp dport 4791 counter packets [0-9]* bytes \([0-9]*\).*/\1/p'
}
echo "topology: $NHOSTS hosts${hosts} ($IF $net.1-$NHOSTS/24) on br0 in $BR"
cg_make
if [ -n "$CG" ]; then
	echo "scheduling: the jobs run in cpu cgroup $CG (no autogroup per session)"
else
	echo "scheduling: no cpu cgroup made (autogroups $autogroups): ranks are scheduled as the kernel places them"
fi

# The rsh agent: host N.i is namespace ${P}hi, with its own hostname (ORTE
# tells nodes apart by name; its session directories are per hostname).
cat >"$tmp/agent.sh" <<EOF
#!/bin/sh
h=\$1
shift
n=${P}h\${h##*.}
exec ip netns exec "\$n" unshare --uts sh -c "hostname \$n; \$*"
EOF
chmod +x "$tmp/agent.sh"

# ---- one job ---------------------------------------------------------------------

# run_job PER NAME [mpi-check args]: PER ranks on each host; output in
# $tmp/NAME.txt; returns mpirun's status
run_job() {
	per=$1 name=$2
	shift 2
	np=$((per * NHOSTS))
	: >"$tmp/hosts"
	for i in $(seq $NHOSTS); do
		echo "$net.$i slots=$per" >>"$tmp/hosts"
	done
	rm -rf "$tmp/barrier"
	mkdir "$tmp/barrier"
	yield=""
	[ $np -gt "$(nproc)" ] && yield="--mca mpi_yield_when_idle 1"
	FI_LOG_LEVEL=info ${CG:+sh -c "$cg_join" sh "$CG/cgroup.procs"} \
		timeout -k 10 $budget \
		ip netns exec "${P}h1" unshare --uts sh -c 'hostname "$0" && exec "$@"' "${P}h1" \
		mpirun --allow-run-as-root -np $np --hostfile "$tmp/hosts" \
		--map-by node --bind-to none $yield \
		--mca plm_rsh_agent "$tmp/agent.sh" --mca plm_rsh_no_tree_spawn 1 \
		--mca oob_tcp_if_include "$net.0/24" \
		--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$PROVIDER" \
		--mca mtl_base_verbose 10 --output-filename "$tmp/$name.ranks" \
		-x FI_PROVIDER_PATH -x FI_LOG_LEVEL $MPI_X \
		"$tmp/mpi-check" -b "$tmp/barrier" -l "$BIG" "$@" >"$tmp/$name.txt" 2>&1
	rc=$?
	# after a failure or a timeout, ORTE daemons and ranks may be left in
	# the namespaces: none may see the next job (only ours live there)
	if [ $rc -ne 0 ]; then
		for ns in $hosts; do
			for p in $(ip netns pids "$ns" 2>/dev/null); do
				kill -KILL "$p" 2>/dev/null
			done
		done
	fi
	return $rc
}

# the lines of a job's output that are not libfabric's or Open MPI's logs
show_job() { # name
	grep -E -e '^(mpi-check:|ok |FAIL|PASS|rank [0-9]+: |mpirun|Primary job|timeout)' \
		-e '^libfabric:[0-9]+:[0-9]+:[^:]*:[^:]*:[^:]*:[^<]*<(warn|error)>' \
		-e '\*\*\*' "$tmp/$1.txt" | head -n 60
}

for per in $PER_HOST; do
	np=$((per * NHOSTS))
	name=job$np
	b0=$(roce_bytes)
	t1=$(date +%s)
	run_job $per $name
	rc=$?
	t2=$(date +%s)
	b1=$(roce_bytes)
	out=$tmp/$name.txt
	ok=1
	why=""

	# 1. the job and its data
	[ $rc -eq 0 ] || { ok=0; why="$why; mpirun exit $rc"; }
	grep -qx "PASS $np ranks.*" "$out" || { ok=0; why="$why; no 'PASS $np ranks'"; }
	for p in allreduce ring alltoall big barrier; do
		[ "$(grep -c "^ok $p: " "$out")" -eq 1 ] || { ok=0; why="$why; no 'ok $p'"; }
	done
	grep -q "^ok barrier: .*found the files" "$out" ||
		{ ok=0; why="$why; barrier ordering not checked"; }

	# 2. PER ranks on each host
	i=0
	for ns in $hosts; do
		i=$((i + 1))
		n=$(sed -n 's/^mpi-check: [0-9]* ranks on hosts://p' "$out" |
			tr ' ' '\n' | grep -c ":$ns\$")
		[ "$n" -eq $per ] || { ok=0; why="$why; $n ranks on $ns, expected $per"; }
	done

	# 3. and 4. droce carried it
	if [ "$PROVIDER" = "droce;ofi_rxm" ]; then
		# each rank's own stderr (mpirun --output-filename), not the
		# merged stream, where lines of different ranks may interleave;
		# rank r is on host r mod 3 + 1 (--map-by node)
		bad="" badlocal="" local_frames=0
		maxr=$((np - 1))
		r=0
		while [ $r -lt $np ]; do
			# rank.N, zero-padded to the width of the largest rank
			f=$(echo "$tmp/$name.ranks"/*/rank.$(printf "%0${#maxr}d" $r)/stderr)
			h=$((r % NHOSTS + 1))
			if ! [ -f "$f" ] ||
				! grep -q '^libfabric:[0-9]*:[0-9]*::core:core:fi_fabric_():[0-9]*<info> Opened fabric: droce$' "$f" ||
				! grep -q "^libfabric:[0-9]*:[0-9]*::droce:domain:port_log():[0-9]*<info> packet_$IF: port [0-9]*, MAC [0-9a-f:]*, IPv4 $net.$h/24," "$f" ||
				! grep -q "mtl:ofi:provider: $IF\$" "$f"; then
				bad="$bad $r"
			fi
			# the ranks of one host reached each other through
			# droce's host-local wire (logged when the domain closes)
			n=$(sed -n 's/.*droce:domain:.*local wire (slot [0-9]*): sent \([0-9]*\) .*received \([0-9]*\) .*/\1 \2/p' "$f" 2>/dev/null | head -n 1)
			if [ $per -ge 2 ]; then
				if [ -z "$n" ] || [ "${n% *}" -eq 0 ] || [ "${n#* }" -eq 0 ]; then
					badlocal="$badlocal $r"
				else
					local_frames=$((local_frames + ${n% *}))
				fi
			fi
			r=$((r + 1))
		done
		[ -z "$bad" ] ||
			{ ok=0; why="$why; ranks$bad: no 'Opened fabric: droce', droce port on $IF with their host's address and mtl ofi domain $IF in their stderr"; }
		[ -z "$badlocal" ] ||
			{ ok=0; why="$why; ranks$badlocal: sent or received no frame on droce's host-local wire"; }
		roce=$((b1 - b0))
		[ $roce -ge $((np * BIG)) ] ||
			{ ok=0; why="$why; the bridge forwarded $roce B of RoCEv2, expected >= $((np * BIG))"; }
		what="every rank opened droce on $IF with its host's address, mtl ofi on domain $IF; $roce B of RoCEv2 through the bridge, $local_frames frames on the host-local wires"
	else
		what="provider $PROVIDER"
	fi

	# every rank closed droce: its registry and host-local wire files
	# (/run/droce, /dev/shm/droce, named after the interface) are gone
	if [ "$PROVIDER" = "droce;ofi_rxm" ]; then
		left=$(ls /run/droce /dev/shm/droce 2>/dev/null | grep -c "^$IF@") || true
		[ "$left" -eq 0 ] || { ok=0; why="$why; $left registry or wire files of $IF left behind"; }
	fi

	if [ $ok -eq 1 ]; then
		echo "ok: $np ranks ($per per host) over $PROVIDER in $((t2 - t1)) s: $what"
		grep '^ok ' "$out" | sed 's/^/    /'
	else
		echo "FAIL: $np ranks ($per per host) over $PROVIDER${why}"
		show_job $name
		fail=1
	fi
done

# ---- the checks can fail -----------------------------------------------------------

per=${PER_HOST%% *}
np=$((per * NHOSTS))
run_job $per corrupt -x ring -l 65536
rc=$?
if [ $rc -ne 0 ] && grep -q '^FAIL ring: ' "$tmp/corrupt.txt" &&
	grep -q '^rank [0-9]*: MISMATCH ring.* from rank 1, ' "$tmp/corrupt.txt"; then
	echo "ok: $np ranks, rank 1 corrupting its ring messages: mpirun exit $rc," \
		"$(grep '^FAIL ring' "$tmp/corrupt.txt")"
else
	echo "FAIL: $np ranks with rank 1 corrupting its ring messages: mpirun exit $rc"
	show_job corrupt
	fail=1
fi

echo "total $(elapsed)s"
exit $fail
