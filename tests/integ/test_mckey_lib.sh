# shellcheck shell=bash
# test_mckey_lib.sh - helpers shared by the integration tests that run
# programs in the background: test_mckey.sh, test_mckey_compat.sh,
# test_ib_mckey.sh, test_foreign_sender.sh and the capture tests (sourced,
# not a test by itself).
#
# Processes run in the background with stdout and stderr in files under
# $WORK; readiness is a line in that output, polled with a bound
# (wait_line), never a fixed sleep.  Every process started here is stopped by
# its pid on exit, and waited for (tests/lib/wait.sh).

set -u
# shellcheck source=../lib/wait.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/wait.sh"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/umc-$(basename "$0" .sh).XXXXXX")
PIDS=()
FAILS=0

cleanup() {
	stop_pids 10 "${PIDS[@]}"
	if [ "$FAILS" -eq 0 ] && [ -z "${KEEP_WORK:-}" ]; then
		rm -rf "$WORK"
	else
		echo "# outputs kept in $WORK"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP	# so that cleanup runs then too

# A group in 239.0.0.0/8 unlikely to be used by a concurrent test.
random_group() {
	echo "239.$(( ($$ >> 8) % 250 + 1 )).$(( $$ % 256 )).$(( RANDOM % 250 + 1 ))"
}

# start NAME TIMEOUT CMD... : run CMD in the background under timeout(1);
# its output goes to $WORK/NAME.out and $WORK/NAME.err, its pid to PID_NAME.
start() {
	local name=$1 secs=$2
	shift 2
	: >"$WORK/$name.out"	# exists before wait_line looks at it
	timeout -k 2 "$secs" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
	PIDS+=("$!")
	printf -v "PID_$name" '%s' "$!"
}

# count_lines NAME REGEX : how many lines of NAME's stdout match REGEX
count_lines() {
	local n
	n=$(grep -Ec -- "$2" "$WORK/$1.out" 2>/dev/null)
	echo "${n:-0}"
}

# lines_or_gone NAME REGEX N PID : NAME's stdout has N lines matching REGEX,
# or PID is gone.
lines_or_gone() {
	[ "$(count_lines "$1" "$2")" -ge "$3" ] || gone "$4"
}

# wait_line NAME REGEX SECS [N] : wait until NAME's stdout has N (default 1)
# lines matching REGEX.  Fails early if the process exits first.
wait_line() {
	local name=$1 re=$2 secs=$3 want=${4:-1} pidvar="PID_$1"
	wait_until "$secs" lines_or_gone "$name" "$re" "$want" "${!pidvar}"
	[ "$(count_lines "$name" "$re")" -ge "$want" ] && return 0
	if gone "${!pidvar}"; then
		fail "$name exited before printing $want line(s) /$re/"
	else
		fail "$name did not print $want line(s) /$re/ within ${secs}s"
	fi
	return 1
}

# finish NAME [SECS] : wait for NAME, up to SECS seconds if given (then it
# is stopped: status 124), else until its own bound (start's timeout), and
# set RC_NAME to its exit status.
finish() {
	local pidvar="PID_$1" rc=0
	if [ -n "${2:-}" ]; then
		wait_pid "$2" "${!pidvar}" || rc=$?
	else
		wait "${!pidvar}" || rc=$?
	fi
	printf -v "RC_$1" '%s' "$rc"
}

fail() {
	echo "FAIL: $*"
	FAILS=$((FAILS + 1))
}

pass() {
	echo "ok: $*"
}

show() {
	local f
	for f in "$@"; do
		echo "--- $f.out"; cat "$WORK/$f.out"
		if [ -s "$WORK/$f.err" ]; then echo "--- $f.err"; cat "$WORK/$f.err"; fi
	done
}

# expect_rc NAME WANT : NAME's exit status is WANT ("nonzero" accepted).
expect_rc() {
	local rcvar="RC_$1"
	local rc=${!rcvar}
	if [ "$2" = nonzero ]; then
		[ "$rc" -ne 0 ] && pass "$1 exit status $rc (non-zero)" && return 0
	elif [ "$rc" -eq "$2" ]; then
		pass "$1 exit status $rc"
		return 0
	fi
	fail "$1 exit status $rc, expected $2"
	show "$1"
	return 1
}

# expect_line NAME TEXT : NAME's stdout has exactly the line TEXT.
expect_line() {
	if grep -Fxq -- "$2" "$WORK/$1.out"; then
		pass "$1: '$2'"
	else
		fail "$1 lacks the line '$2'"
		show "$1"
	fi
}

# expect_count NAME REGEX N : NAME's stdout has N lines matching REGEX.
expect_count() {
	local n
	n=$(count_lines "$1" "$2")
	if [ "$n" -eq "$3" ]; then
		pass "$1: $3 line(s) /$2/"
	else
		fail "$1 has $n line(s) /$2/, expected $3"
		show "$1"
	fi
}

# expect_output NAME EXPECTED : NAME's whole stdout equals EXPECTED.
expect_output() {
	if diff -u <(printf '%s\n' "$2") "$WORK/$1.out" >"$WORK/$1.diff"; then
		pass "$1: output as expected"
	else
		fail "$1 output differs"
		cat "$WORK/$1.diff"
		show "$1"
	fi
}

summary() {
	if [ "$FAILS" -ne 0 ]; then
		echo "$FAILS failure(s)"
		exit 1
	fi
	echo "all passed"
	exit 0
}
