#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# build-guest.sh - build the rdma_rxe guest for the interop suite: Debian 12's
# kernel (linux-image-amd64, downloaded with apt-get) and a busybox initramfs
# holding rdma_rxe and its modules, rdma-core (libibverbs + the rxe provider,
# librdmacm, rping, rdma), libfabric (fi_info, fi_pingpong, the verbs provider)
# and the extra programs given with -x (droce-xfer, ...) plus their libraries.
# Adapted from the rxe lab (shared/rxe-lab/build.sh); nothing here reads it.
#
# Cache (default /var/cache/droce-interop, env DROCE_INTEROP_CACHE):
#   debs/       the kernel .deb          kroot/   what the suite extracted of it
#   vmlinuz     the guest kernel         initrd.gz  the guest initramfs
#   initrd.inputs  fingerprint of what initrd.gz was built from
# The kernel is downloaded and extracted once; the initramfs is rebuilt only
# when an input changes (this script, guest/*, the host binaries it copies,
# the -x programs), or with -f.
#
# usage: build-guest.sh [-f] [-x DIR]...   (-x: ship every executable regular
#        file of DIR, not recursive, into the guest's /opt/extra, on PATH)
# Needs root for apt-get when host packages are missing (CI is root).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${DROCE_INTEROP_CACHE:-/var/cache/droce-interop}
FORCE=0
EXTRAS=()
while getopts "fx:" o; do
	case $o in
	f) FORCE=1 ;;
	x) EXTRAS+=("$OPTARG") ;;
	*) sed -n '3,22p' "$0"; exit 2 ;;
	esac
done
T0=$(date +%s.%N)
log() { printf '[build-guest %6.1fs] %s\n' "$(awk -v a="$(date +%s.%N)" -v b="$T0" 'BEGIN{print a-b}')" "$*"; }
mkdir -p "$CACHE/debs"

# ---- 1. host packages: the suite's tools and what the guest gets a copy of ----
PKGS="qemu-system-x86 busybox-static cpio kmod ibverbs-utils ibverbs-providers
      rdmacm-utils iproute2 tshark libfabric1 libfabric-bin ethtool nftables"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
	log "installing host packages:$missing"
	apt-get update -qq || true
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >/dev/null
fi
log "host packages ok"

# ---- 2. the kernel: apt-get download + extract what the guest needs ----
KPKG=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
if [ -z "$KPKG" ]; then
	apt-get update -qq || true
	KPKG=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
fi
[ -n "$KPKG" ] || { echo "build-guest: cannot resolve linux-image-amd64"; exit 1; }
KDEB=$(ls "$CACHE/debs/${KPKG}"_*.deb 2>/dev/null | head -1 || true)
if [ -z "$KDEB" ]; then
	(cd "$CACHE/debs" && apt-get -o APT::Sandbox::User=root download -q "$KPKG" >/dev/null)
	KDEB=$(ls "$CACHE/debs/${KPKG}"_*.deb | head -1)
	log "downloaded $(basename "$KDEB") ($(du -h "$KDEB" | cut -f1))"
fi
KR=$CACHE/kroot
if [ ! -f "$KR/.extracted-$(basename "$KDEB")" ]; then
	rm -rf "$KR"; mkdir -p "$KR"
	# the image and the modules (the guest takes what modprobe resolves)
	dpkg-deb --fsys-tarfile "$KDEB" | tar -x -C "$KR" --wildcards './boot/vmlinuz-*' './lib/modules/*'
	touch "$KR/.extracted-$(basename "$KDEB")"
	log "extracted $(basename "$KDEB") ($(du -sh "$KR" | cut -f1))"
fi
KVER=$(ls "$KR/lib/modules" | head -1)
cp -u "$KR/boot/vmlinuz-$KVER" "$CACHE/vmlinuz"
echo "$KVER" >"$CACHE/kver"
log "kernel $KPKG KVER=$KVER"

# ---- 3. is the initramfs up to date? ----
BINS="ibv_devinfo rping fi_info fi_pingpong fi_strerror"
INITRD=$CACHE/initrd.gz
fingerprint() {
	{
		echo "kver $KVER"
		find "$HERE/build-guest.sh" "$HERE/guest" -type f -printf '%p %s %T@\n' | sort
		for b in $BINS rdma ip busybox; do ls -lL "$(command -v "$b")"; done
		for d in "${EXTRAS[@]:+${EXTRAS[@]}}"; do
			echo "extra $d"
			find "$d" -maxdepth 1 \( -type f -o -type l \) -printf '%P %s %T@ %m\n' | sort
		done
	} | sha256sum | cut -d' ' -f1
}
FP=$(fingerprint)
if [ $FORCE = 0 ] && [ -f "$INITRD" ] && [ "$(cat "$CACHE/initrd.inputs" 2>/dev/null)" = "$FP" ]; then
	log "initramfs up to date: $INITRD"
	exit 0
fi

# ---- 4. assemble the initramfs tree ----
ROOT=$CACHE/initramfs-root
rm -rf "$ROOT"
mkdir -p "$ROOT"/{etc,proc,sys,dev,tmp,run,root,usr/bin,usr/sbin,usr/lib,usr/lib64,var/log,opt/extra}
for d in bin sbin lib lib64; do ln -s usr/$d "$ROOT/$d"; done
cp /bin/busybox "$ROOT/usr/bin/busybox"

# 4a. modules: rdma_rxe and friends + dependencies in load order.  rdma_rxe
# (6.1) needs the crc32 shash at link-add time but has no softdep on it.
WANT="crc32_generic crc32_pclmul rdma_rxe ib_core ib_uverbs ib_cm iw_cm rdma_cm rdma_ucm
      udp_tunnel ip6_udp_tunnel virtio_net virtio_pci virtio_ring virtio af_packet"
[ -f "$KR/lib/modules/$KVER/modules.dep" ] || depmod -b "$KR" "$KVER"
: >"$ROOT/etc/modules.order"
for m in $WANT; do
	modprobe -d "$KR" -S "$KVER" --show-depends "$m" 2>/dev/null || echo "missing $m"
done | while read -r kind path _; do
	case $kind in
	insmod)
		rel=${path#"$KR"}
		if ! grep -qxF "$rel" "$ROOT/etc/modules.order"; then
			mkdir -p "$ROOT$(dirname "$rel")"
			cp "$path" "$ROOT$rel"
			echo "$rel" >>"$ROOT/etc/modules.order"
		fi ;;
	missing) echo "build-guest: WARN module $path not found" ;;
	esac
done
while read -r rel; do
	case $rel in
	*.ko.xz) xz -d "$ROOT$rel" ;;
	*.ko.zst) zstd -q -d --rm "$ROOT$rel" ;;
	esac
done <"$ROOT/etc/modules.order"
sed -i -e 's/\.ko\.xz$/.ko/' -e 's/\.ko\.zst$/.ko/' "$ROOT/etc/modules.order"
cp "$KR/lib/modules/$KVER"/modules.{order,builtin,builtin.modinfo} "$ROOT/lib/modules/$KVER/" 2>/dev/null || true
depmod -b "$ROOT" "$KVER"
log "modules: $(wc -l <"$ROOT/etc/modules.order") to insmod"

# 4b. userspace binaries + the libraries ldd shows
copy_with_libs() {
	local f=$1 dst=${2:-$1}
	[ -e "$f" ] || { echo "build-guest: WARN $f not found"; return 0; }
	mkdir -p "$ROOT$(dirname "$dst")"
	cp -L "$f" "$ROOT$dst"
	ldd "$f" 2>/dev/null | grep -oE '(/[^ ]+)' | while read -r lib; do
		[ -e "$lib" ] || continue
		if [ ! -e "$ROOT$lib" ]; then
			mkdir -p "$ROOT$(dirname "$lib")"
			cp -L "$lib" "$ROOT$lib"
		fi
	done
}
for b in $BINS; do
	p=$(command -v "$b" || true)
	[ -n "$p" ] && copy_with_libs "$p" "/usr/bin/$b" || echo "build-guest: WARN no $b"
done
copy_with_libs "$(command -v rdma)" /usr/sbin/rdma
copy_with_libs "$(command -v ip)" /usr/sbin/ip
mkdir -p "$ROOT/etc/libibverbs.d"
cp /etc/libibverbs.d/rxe.driver "$ROOT/etc/libibverbs.d/"
for so in /usr/lib/x86_64-linux-gnu/libibverbs/librxe-*.so; do copy_with_libs "$so"; done
for so in /usr/lib/x86_64-linux-gnu/libibverbs.so.1 /usr/lib/x86_64-linux-gnu/librdmacm.so.1; do
	copy_with_libs "$so"
done
# glibc dlopen()s libgcc_s for pthread_exit (rping aborts without it)
copy_with_libs /usr/lib/x86_64-linux-gnu/libgcc_s.so.1
[ -e "$ROOT/lib64/ld-linux-x86-64.so.2" ] || cp -L /lib64/ld-linux-x86-64.so.2 "$ROOT/lib64/"
echo "root:x:0:0:root:/root:/bin/sh" >"$ROOT/etc/passwd"
echo "root:x:0:" >"$ROOT/etc/group"
printf 'hosts: files\n' >"$ROOT/etc/nsswitch.conf"
printf '127.0.0.1 localhost\n' >"$ROOT/etc/hosts"
touch "$ROOT/etc/ld.so.conf"
[ -d /etc/iproute2 ] && cp -r /etc/iproute2 "$ROOT/etc/" || true

# 4c. extra programs (-x DIR): executables of DIR, flat, + their libraries
nx=0
for d in "${EXTRAS[@]:+${EXTRAS[@]}}"; do
	[ -d "$d" ] || { echo "build-guest: -x $d: not a directory"; exit 2; }
	for f in "$d"/*; do
		[ -f "$f" ] && [ -x "$f" ] || continue
		copy_with_libs "$f" "/opt/extra/$(basename "$f")"
		nx=$((nx + 1))
	done
done
ls "$ROOT/opt/extra" >"$ROOT/opt/extra.manifest"
[ $nx = 0 ] || log "extra: $nx programs -> /opt/extra ($(tr '\n' ' ' <"$ROOT/opt/extra.manifest"))"

# 4d. init + test commands
cp "$HERE/guest/init" "$ROOT/init"
chmod 755 "$ROOT/init"
echo "$KVER" >"$ROOT/etc/kver"

# 4e. pack
(cd "$ROOT" && find . -print0 | cpio --null -o -H newc --quiet | gzip -4 >"$INITRD.tmp")
mv "$INITRD.tmp" "$INITRD"
echo "$FP" >"$CACHE/initrd.inputs"
rm -rf "$ROOT"
log "initramfs $INITRD $(du -h "$INITRD" | cut -f1)"
