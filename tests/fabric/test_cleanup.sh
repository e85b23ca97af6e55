#!/usr/bin/env bash
# test_cleanup.sh - nothing of a fabric is left after `fabric.sh run`,
# whichever way it ends: its command fails; it gets SIGTERM, SIGINT or
# SIGHUP while its command runs; it is killed with SIGKILL (then the next
# fabric removes what it left); and `fabric.sh up` / `down` by hand.  Each
# time the command starts a process on a host of the fabric (a child of
# `fabric.sh exec`); afterwards no namespace of the fabric exists and
# neither that process nor the command is alive.
set -u
here=$(cd "$(dirname "$0")" && pwd)
FABRIC=$here/fabric.sh
# shellcheck source=../lib/wait.sh
. "$here/../lib/wait.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for network namespaces"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/umcfab-cleanup.XXXXXX")
RUN=
trap '[ -n "$RUN" ] && kill -KILL "$RUN" 2>/dev/null; rm -rf "$WORK"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# The command (bash -c CMD _ WORK FABRIC END): note the fabric's name and
# its own pid, start a process on host a, wait until it is there (bounded:
# 10 s), note its pid, then END: "wait" (for that process, which does not
# end by itself in time) or "exit 3".
CMD='. "$1/wait.sh"; in_a() { [ -n "$(ip netns pids "$FAB-a")" ]; }
echo "$FAB $$" >"$1/fab"; "$2" exec "$FAB" a sleep 300 & p=$!
wait_until 10 in_a; echo $p >"$1/inner"; $3'
cp "$here/../lib/wait.sh" "$WORK/wait.sh"

# nothing_left WHAT: the fabric named in WORK/fab, its command and the
# process on host a are all gone (bounded: 5 s).
nothing_left() {
	local fab cmd='' inner
	read -r fab cmd <"$WORK/fab"
	inner=$(cat "$WORK/inner")
	wait_until 5 all_gone "$fab" "$cmd" "$inner"
	ip netns list | grep -q "^$fab-" && fail "$1: namespaces left: $(ip netns list | grep "^$fab-")"
	[ -n "$cmd" ] && ! gone "$cmd" && fail "$1: its command ($cmd) is still running"
	gone "$inner" || fail "$1: the process on host a ($inner) is still running"
	all_gone "$fab" "$cmd" "$inner" && echo "ok: $1: nothing left of $fab"
	return 0
}
all_gone() {
	! ip netns list | grep -q "^$1-" && { [ -z "$2" ] || gone "$2"; } && gone "$3"
}

# in_ns NS: a process is in namespace NS.
in_ns() { [ -n "$(ip netns pids "$1")" ]; }

# started: the command has started its process on host a (bounded: 10 s).
started() {
	wait_until 10 test -s "$WORK/inner" && return 0
	fail "the command did not start"
	return 1
}

# 1. the command fails
rm -f "$WORK/fab" "$WORK/inner"
"$FABRIC" run a:0 b:0 -- bash -c "$CMD" _ "$WORK" "$FABRIC" "exit 3" >"$WORK/run.out" 2>&1
rc=$?
if [ $rc -eq 3 ]; then echo "ok: a failing command's status passes through: 3"; else fail "run exited $rc, want 3"; fi
nothing_left "failing command"

# 2. signals while the command runs
for sig in TERM INT HUP; do
	rm -f "$WORK/fab" "$WORK/inner"
	# (a job started with & ignores SIGINT unless told otherwise)
	env --default-signal=INT "$FABRIC" run -r a:0 b:1 -- bash -c "$CMD" _ "$WORK" "$FABRIC" wait \
		>"$WORK/run.out" 2>&1 &
	RUN=$!
	started || break # (the EXIT trap kills RUN)
	kill -s $sig $RUN
	if ! wait_until 10 gone $RUN; then
		fail "SIG$sig: fabric.sh run did not end"
		kill -KILL $RUN
	fi
	wait $RUN
	echo "# SIG$sig: fabric.sh run exited $?"
	RUN=
	nothing_left "SIG$sig"
done

# 3. SIGKILL: what is left is removed by the next fabric
rm -f "$WORK/fab" "$WORK/inner"
"$FABRIC" run a:0 -- bash -c "$CMD" _ "$WORK" "$FABRIC" wait >"$WORK/run.out" 2>&1 &
RUN=$!
if started; then
	kill -KILL $RUN
	wait $RUN 2>/dev/null
	RUN=
	read -r fab cmd <"$WORK/fab"
	kill -TERM "$cmd" # the command, now an orphan of this test
	if ip netns list | grep -q "^$fab-a"; then
		echo "ok: after SIGKILL, $fab-a is still there"
	else
		fail "after SIGKILL the fabric is already gone (the check would be empty)"
	fi
	"$FABRIC" run a:0 -- true >"$WORK/run.out" 2>&1 || fail "the next run failed: $(cat "$WORK/run.out")"
	nothing_left "SIGKILL, then another run"
fi

# 4. by hand
if fab=$("$FABRIC" up a:0 b:0); then
	"$FABRIC" exec "$fab" a sleep 300 &
	echo "$fab" >"$WORK/fab" # no command here
	echo $! >"$WORK/inner"
	wait_until 10 in_ns "$fab-a" || fail "no process on host a"
	"$FABRIC" down "$fab" || fail "fabric.sh down $fab"
	wait "$(cat "$WORK/inner")" 2>/dev/null
	nothing_left "up and down by hand"
else
	fail "fabric.sh up: $fab"
fi

echo "$fails failed"
[ $fails -eq 0 ]
