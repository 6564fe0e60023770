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
