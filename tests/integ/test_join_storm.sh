#!/usr/bin/env bash
# test_join_storm.sh - bench/join-storm.c, the join storms' load tool, does
# what bench/join-storm.sh relies on, small enough for the suite:
#
#  1. -m procs: 20 processes of the library, each on its umc_ib0 port,
#     join 2 groups, the same for all, at once: 40 joins, all ok, no
#     timeout, latencies printed, exit status 0; umc-sm created 2 groups;
#  2. -m ports: 200 ports simulated over umc-sm's protocol join 4 groups of
#     their own each: 800 joins and 800 groups, all ok;
#  3. -m procs -f 64: one process whose descriptors run out joins 200
#     groups: what does not succeed fails with EMFILE (errno_24), none
#     times out;
#  4. 10 ports join 2 groups while umc-sm rejects one of them (umc-ctl):
#     10 joins ok, 10 errors with EINVAL (the library's errno for a MAD
#     status), no timeout, exit status 0.
#
# Env: UMC_BIN (ctest sets it).
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=check_lib.sh
. "$here/check_lib.sh"
# shellcheck source=../lib/wait.sh
. "$here/../lib/wait.sh"
bin=${UMC_BIN:?UMC_BIN is set by ctest}
sm=

start_sm() {
	rm -f "$work/ready"
	mkfifo "$work/ready"
	"$bin/umc-sm" -v --listen 127.0.0.1:0 --ready-fd 3 3>"$work/ready" >/dev/null \
		2>"$work/sm.log" &
	sm=$!
	read -r -t 10 ready <"$work/ready" || { bad "umc-sm did not get ready"; summary; }
	addr=${ready#*ready on }
	addr=${addr%% *}
}
stop_sm() {
	stop_pids 10 "$sm"
	sm=
}
trap 'stop_pids 5 $sm; rm -rf "$work"' EXIT

# storm NAME ARGS...: join-storm against umc-sm, bounded; exit status 0
storm() {
	local name=$1 rc=0
	shift
	timeout 60 "$bin/join-storm" -S "$addr" -t 20 "$@" >"$work/$name.out" 2>"$work/$name.err" ||
		rc=$?
	if [ "$rc" = 0 ]; then
		ok "$name: exit status 0"
	else
		bad "$name: exit status $rc: $(cat "$work/$name.err")"
	fi
}
# has NAME KEY VALUE: the result line "result KEY VALUE"
has() {
	if grep -qx "result $2 $3" "$work/$1.out"; then
		ok "$1: $2 $3"
	else
		bad "$1: no 'result $2 $3' in: $(tr '\n' ' ' <"$work/$1.out")"
	fi
}
# created N WHAT: umc-sm, stopped, created N groups
created() {
	local n
	n=$(sed -n 's/^umc-sm: counter groups_created //p' "$work/sm.log")
	if [ "$n" = "$1" ]; then
		ok "$2: umc-sm created $1 groups"
	else
		bad "$2: umc-sm created '$n' groups, not $1"
	fi
}

start_sm
storm procs -m procs -n 20 -g 2
has procs joins 40
has procs ok 40
has procs timeouts 0
if grep -q '^result p99_ms [0-9.]*$' "$work/procs.out"; then
	ok "procs: p99 printed"
else
	bad "procs: no p99_ms line"
fi
stop_sm
created 2 procs

start_sm
storm ports -m ports -n 200 -g 4 -o
has ports joins 800
has ports ok 800
has ports timeouts 0
stop_sm
created 800 ports

start_sm
storm fdlimit -m procs -n 1 -g 200 -f 64
okn=$(sed -n 's/^result ok //p' "$work/fdlimit.out")
emfile=$(sed -n 's/^result errno_24 //p' "$work/fdlimit.out")
if [ -n "$okn" ] && [ -n "$emfile" ] && [ "$okn" -gt 0 ] && [ "$okn" -lt 64 ] &&
	[ $((okn + emfile)) = 200 ]; then
	ok "fdlimit: $okn JOIN, $emfile EMFILE"
else
	bad "fdlimit: ok '$okn', EMFILE '$emfile' of 200"
fi
has fdlimit timeouts 0
has fdlimit errors "$emfile"
stop_sm

start_sm
if ! timeout 10 "$bin/umc-ctl" "$sm" reject 225.0.0.1 insufficient_components \
	>"$work/ctl.out" 2>&1; then
	bad "umc-ctl reject: $(cat "$work/ctl.out")"
fi
storm reject -m ports -n 10 -g 2
has reject ok 10
has reject errors 10
has reject errno_22 10
has reject timeouts 0
stop_sm
summary
