#!/bin/sh
# Every FI_DROCE_* parameter the provider defines (fi_info -e, i.e. the
# fi_param_define calls) is documented in man/fi_droce.7's RUNTIME
# PARAMETERS section, and the man page documents no parameter that does not
# exist.
set -eu
: "${top_srcdir:?run from make check}" "${top_builddir:?run from make check}"
if ! command -v fi_info >/dev/null 2>&1; then
	echo "SKIP: fi_info not installed (Debian package libfabric-bin)"
	exit 77
fi
man="$top_srcdir/man/fi_droce.7"
code=$(FI_PROVIDER_PATH="$top_builddir/.libs" fi_info -e 2>/dev/null | tr -d '\000' |
	sed -n 's/^# \(FI_DROCE_[A-Z0-9_]*\):.*/\1/p' | sort -u)
doc=$(sed -n '/^\.SH RUNTIME PARAMETERS/,/^\.SH /p' "$man" |
	sed -n 's/^\.B \(FI_DROCE_[A-Z0-9_]*\)$/\1/p' | sort -u)
if [ -z "$code" ]; then
	echo "FAIL: fi_info -e lists no FI_DROCE_* parameter"
	exit 1
fi
missing=$(printf '%s\n' "$code" | grep -vxF "$doc" || true)
stale=$(printf '%s\n' "$doc" | grep -vxF "$code" || true)
[ -z "$missing" ] || { echo "FAIL: not documented in man/fi_droce.7:"; echo "$missing"; }
[ -z "$stale" ] || { echo "FAIL: documented but not defined:"; echo "$stale"; }
[ -z "$missing$stale" ] || exit 1
echo "PASS: $(printf '%s\n' "$code" | wc -l) parameters, code and man page agree"
