#!/usr/bin/env bash
# test_pyverbs.sh - rdma-core's own pyverbs multicast tests, unchanged, on
# umcast under umc-run: test_rdmacm_async_multicast_traffic,
# test_rdmacm_async_ex_multicast_traffic and
# test_rdmacm_async_ex_leave_multicast_traffic of test_rdmacm.CMTestCase.
# Each forks two processes that join 230.0.0.1 from 127.0.0.1 (the tests
# derive the group from the address) and pass ten 1024-byte UD datagrams,
# each checked by the receiver; the leave test then expects no more to
# arrive after the leave.  All three must pass: a skip is a failure here.
#
# The tests come from Debian's python3-pyverbs (/usr/share/doc/rdma-core/
# tests, some files gzipped): they are copied and unpacked, not changed,
# and run with their run_tests.py on device umc_lo (--dev), so traffic
# stays on loopback.  They find the device's netdev in
# /sys/class/infiniband/umc_lo/device/net/, which umc-run provides when run
# as root (umc-run(1), "The sysfs view").
#
# Env: UMC_BIN (umc-run; ctest sets it), PYVERBS_TESTS (default
# /usr/share/doc/rdma-core/tests), PYTHON (a python3 that has pyverbs).
# Skipped (77) without pyverbs or its tests, or when not root.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=test_mckey_lib.sh
. "$here/test_mckey_lib.sh"
# shellcheck source=prebuilt_lib.sh
. "$here/prebuilt_lib.sh"

TESTS=(test_rdmacm_async_multicast_traffic test_rdmacm_async_ex_multicast_traffic
       test_rdmacm_async_ex_leave_multicast_traffic)
src=${PYVERBS_TESTS:-/usr/share/doc/rdma-core/tests}

py=
for cand in ${PYTHON:-} /usr/bin/python3 python3; do
	if "$cand" -c 'import pyverbs.device' >/dev/null 2>&1; then
		py=$cand
		break
	fi
done
if [ -z "$py" ] || [ ! -f "$src/run_tests.py" ]; then
	echo "SKIP: needs python3-pyverbs and its tests in $src"
	exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: umc-run makes the sysfs view the tests need only as root"
	exit 77
fi

cp -r "$src" "$WORK/tests"
find "$WORK/tests" -name '*.py.gz' -exec gunzip {} +
prebuilt_env

args=()
for t in "${TESTS[@]}"; do
	args+=("test_rdmacm.CMTestCase.$t")
done
cd "$WORK/tests" || exit 1
start run 300 "$UMC_RUN" "$py" run_tests.py --dev umc_lo -v "${args[@]}"
finish run
# unittest reports on stderr.
cp "$WORK/run.err" "$WORK/report.out"
expect_rc run 0
for t in "${TESTS[@]}"; do
	if grep -Eq "^$t \(.*\) \.\.\. ok$" "$WORK/report.out"; then
		pass "$t ... ok"
	else
		fail "$t did not pass"
	fi
done
expect_count report '^Ran 3 tests in ' 1
expect_count report 'skipped' 0
[ "$FAILS" -eq 0 ] || show run
summary
