#!/bin/sh
# The built provider DSO loads into stock libfabric: `fi_info -l` lists
# droce, and the DSO exports fi_prov_ini and nothing else.
set -eu
: "${top_builddir:?run from make check}"
dso="$top_builddir/.libs/libdroce-fi.so"

if ! command -v fi_info >/dev/null 2>&1; then
	echo "SKIP: fi_info not installed (Debian package libfabric-bin)"
	exit 77
fi
[ -f "$dso" ] || { echo "FAIL: $dso was not built"; exit 1; }

exports=$(nm -D --defined-only "$dso" | awk '$2 != "A" { print $3 }' | sort)
if [ "$exports" != "fi_prov_ini" ]; then
	echo "FAIL: the DSO must export only fi_prov_ini, it exports:"
	echo "$exports"
	exit 1
fi

out=$(FI_PROVIDER_PATH="$top_builddir/.libs" fi_info -l 2>&1)
if ! printf '%s\n' "$out" | grep -qx 'droce:'; then
	echo "FAIL: fi_info -l does not list droce:"
	printf '%s\n' "$out"
	exit 1
fi
echo "PASS: fi_info -l lists droce; the DSO exports only fi_prov_ini"

# RDM through ofi_rxm (issue 12): fi_info lists droce;ofi_rxm RDM endpoints
# on both in-process ports, and droce alone says at FI_LOG_LEVEL=info why it
# has no FI_EP_RDM of its own (exactly once: no utility provider asked)
export FI_PROVIDER_PATH="$top_builddir/.libs"
export FI_DROCE_DEVICE="pair:fiinfo:0;pair:fiinfo:1" FI_DROCE_ADDR="192.0.2.1/24;192.0.2.2/24"
unset FI_PROVIDER FI_LOG_LEVEL
out=$(fi_info -p "droce;ofi_rxm" -t FI_EP_RDM 2>&1) || {
	echo "FAIL: fi_info -p \"droce;ofi_rxm\" -t FI_EP_RDM:"
	printf '%s\n' "$out"
	exit 1
}
n=$(printf '%s\n' "$out" | grep -c '^provider: droce;ofi_rxm$')
d=$(printf '%s\n' "$out" | sed -n 's/^    domain: //p' | sort -u | tr '\n' ' ')
if [ "$n" -lt 2 ] || [ "$d" != "pair:fiinfo:0 pair:fiinfo:1 " ] ||
	printf '%s\n' "$out" | grep '^    type:' | grep -qv FI_EP_RDM; then
	echo "FAIL: fi_info -p \"droce;ofi_rxm\" -t FI_EP_RDM lists:"
	printf '%s\n' "$out"
	exit 1
fi
log=$(FI_LOG_LEVEL=info fi_info -p "droce;^ofi_rxm;^ofi_rxd" -t FI_EP_RDM 2>&1 >/dev/null) || true
want='droce: getinfo refuses the hints: ep_attr->type FI_EP_RDM; droce offers FI_EP_MSG (FI_EP_RDM through "droce;ofi_rxm")'
n=$(printf '%s\n' "$log" | grep -c 'droce: getinfo refuses the hints: ')
if [ "$n" -ne 1 ] || ! printf '%s\n' "$log" | grep -qF "$want"; then
	echo "FAIL: FI_LOG_LEVEL=info fi_info -p droce -t FI_EP_RDM does not say why, once:"
	printf '%s\n' "$log" | grep droce
	exit 1
fi
echo "PASS: fi_info -p \"droce;ofi_rxm\" -t FI_EP_RDM lists both ports; droce alone logs why not"
