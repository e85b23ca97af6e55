# shellcheck shell=bash
# check_lib.sh - what the tests that check files and commands, one ok or
# FAIL line each, share (sourced, not a test by itself): test_man.sh,
# test_man_examples.sh, test_install.sh, test_tools.sh, test_bench_plot.sh,
# test_join_storm.sh, test_shm_full.sh.
#
#   $work          a directory of the test's own, removed at exit
#   ok TEXT        a check that held;  bad TEXT   one that did not
#   install_to PREFIX [ARG...]
#                  `cmake --install $UMC_BUILD_DIR --prefix PREFIX ARG...`;
#                  a failure ends the test
#   summary        the counts; the test's exit status (0: nothing failed)
set -u
work=$(mktemp -d "${TMPDIR:-/tmp}/umc-$(basename "$0" .sh).XXXXXX")
trap 'rm -rf "$work"' EXIT
fails=0 passes=0
ok() { echo "ok: $*"; passes=$((passes + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

install_to() {
	local prefix=$1
	shift
	if ! cmake --install "${UMC_BUILD_DIR:?UMC_BUILD_DIR is set by ctest}" --prefix "$prefix" "$@" \
		>"$work/install.log" 2>&1; then
		cat "$work/install.log"
		echo "FAIL: cmake --install"
		exit 1
	fi
}

summary() {
	echo "$passes passed, $fails failed"
	[ "$fails" -eq 0 ]
	exit
}
