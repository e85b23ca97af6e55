#!/usr/bin/env bash
# test_guard_test.sh - test_guard (test_guard.c) keeps its promises: the
# test's exit status passes through; a process left running, even one that
# left its session, is named, killed and fails the test; a test that runs
# too long fails within its bound, naming what it runs; as root, a network
# namespace left in /run/netns is named, deleted and fails the test.
# $TEST_GUARD is the program (ctest sets it).
set -u
G=${TEST_GUARD:?}
W=$(mktemp -d "${TMPDIR:-/tmp}/umc-guard.XXXXXX")
trap 'rm -rf "$W"' EXIT
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

# guard WANT_RC SECS CMD... : run CMD under the guard; its stderr in $W/err.
guard() {
	local want=$1 rc=0
	shift
	"$G" "$@" 2>"$W/err" || rc=$?
	[ "$rc" -eq "$want" ] || { fail "test_guard $* exited $rc, expected $want"; cat "$W/err"; }
}

# killed PIDFILE : the process whose pid is in PIDFILE is gone, reaped too.
killed() {
	local pid
	pid=$(cat "$1") || { fail "no pid in $1"; return; }
	if kill -0 "$pid" 2>/dev/null; then
		fail "pid $pid is still there ($(cat "/proc/$pid/stat" 2>/dev/null))"
		kill -KILL "$pid"
	fi
}

guard 0 5 true
guard 3 5 sh -c 'exit 3'
guard 77 5 sh -c 'exit 77'

# Left running by a test that passed, and by one that skipped.
for rc in 0 77; do
	guard 1 5 sh -c 'sleep 1000 & echo $! >"$1"; exit "$2"' sh "$W/pid" "$rc"
	grep -q 'left running by the test' "$W/err" && grep -q "pid $(cat "$W/pid"): sleep 1000" "$W/err" ||
		{ fail "the leftover is not named"; cat "$W/err"; }
	killed "$W/pid"
done
# A test that failed keeps its status.
guard 4 5 sh -c 'sleep 1000 & echo $! >"$1"; exit 4' sh "$W/pid"
killed "$W/pid"
# A daemon in a session of its own, its parent gone: reparented to the guard.
guard 1 5 sh -c 'setsid sh -c "sleep 1000 & echo \$! >$1" & wait' sh "$W/pid"
killed "$W/pid"
# A process on its way out is let go.
guard 0 5 sh -c '(sleep 0.2 &); exit 0'

# Too long: fails at its bound, naming the process and what it waits in.
start=$SECONDS
guard 1 1 sh -c 'echo $$ >"$1"; exec sleep 1000' sh "$W/pid"
[ $((SECONDS - start)) -le 4 ] || fail "the 1 s bound ended the test after $((SECONDS - start)) s"
grep -q 'did not end within 1 s' "$W/err" && grep -q "pid $(cat "$W/pid") .*: sleep 1000" "$W/err" ||
	{ fail "the hung process is not named"; cat "$W/err"; }
killed "$W/pid"

if [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null; then
	ns=umc-guard-$$
	guard 1 5 ip netns add "$ns"
	grep -q "^test_guard:   $ns\$" "$W/err" || { fail "the namespace is not named"; cat "$W/err"; }
	! ip netns list | grep -qw "$ns" || { fail "$ns survived"; ip netns delete "$ns"; }
	guard 0 5 sh -c 'ip netns add "$1" && ip netns delete "$1"' sh "$ns"
else
	echo "network namespaces not checked (not root, or no ip)"
fi

[ "$FAILS" -eq 0 ] || { echo "$FAILS failure(s)"; exit 1; }
echo "all passed"
