#!/bin/sh
# Check that the C lines a change touched are formatted as .clang-format
# says (docs/style.md).  Only changed lines are checked, so older code that
# predates a rule is left alone until someone edits it.
#
#   tools/check-format.sh            the last commit (HEAD~1..HEAD)
#   tools/check-format.sh BASE       every commit since BASE (BASE..HEAD)
#
# Covers *.c and *.h under src/ include/ tools/ tests/ bench/ fuzz/.  Prints
# the diff clang-format wants and exits 1 when there is one; exits 0 when
# the lines are clean or nothing C changed.  Outside a git checkout, or
# when BASE is not in the clone (a shallow clone), it says so and checks
# nothing.  Needs git-clang-format (Debian package clang-format).
set -eu

cd "$(dirname "$0")/.."
base=${1:-HEAD~1}

if ! command -v git-clang-format >/dev/null 2>&1; then
	echo "check-format: git-clang-format not found (apt-get install clang-format)" >&2
	exit 2
fi
if ! git rev-parse --git-dir >/dev/null 2>&1; then
	echo "check-format: not a git checkout; nothing checked"
	exit 0
fi
if ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
	echo "check-format: $base is not in this clone; nothing checked"
	exit 0
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
# Two commits: the blobs of HEAD are formatted, not the working tree, so
# uncommitted edits neither hide nor cause a failure.  git-clang-format 14
# exits 0 whether or not it prints a diff, so the diff itself decides.
if ! git clang-format --diff --extensions c,h "$base" HEAD -- \
	src include tools tests bench fuzz >"$out" 2>&1; then
	cat "$out" >&2
	echo "check-format: git clang-format failed" >&2
	exit 2
fi
if grep -q '^diff --git' "$out"; then
	cat "$out"
	echo "check-format: the lines above, changed since $base, differ from" \
		".clang-format; fix them with: git clang-format $base" >&2
	exit 1
fi
echo "check-format: lines changed since $base are formatted"
