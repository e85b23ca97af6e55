#!/usr/bin/env bash
# test_abi_list.sh - tests/abi/abi_list.h lists what include/ declares today:
# a struct, field or constant added to a public header without running
# scripts/abi-list.py would otherwise never be compared with rdma-core's.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if ! command -v clang >/dev/null || ! command -v python3 >/dev/null; then
	echo "SKIP: needs clang and python3"
	exit 77
fi
new=$(mktemp)
trap 'rm -f "$new"' EXIT
"$root/scripts/abi-list.py" >"$new" || exit 1
if ! diff -u "$here/abi_list.h" "$new"; then
	echo "FAIL: tests/abi/abi_list.h is out of date: run scripts/abi-list.py > tests/abi/abi_list.h"
	exit 1
fi
echo "ok: abi_list.h is current ($(grep -c '^UMC_ABI_' "$here/abi_list.h") entries)"
