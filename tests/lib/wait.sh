# shellcheck shell=bash
# wait.sh - the bounded waits of the shell tests (sourced, not a test).
#
# Every wait of a shell test goes through wait_until, so that each has a
# bound, in seconds, and polls at one pace; stop_pids ends background
# processes and waits for them, so that none outlives the test (test_guard
# fails a test that leaves one).  Bash 5 (EPOCHREALTIME).

# wait_until SECS CMD... : run CMD every 20 ms until it succeeds (status 0)
# or SECS seconds (a decimal number) have passed (status 1).
wait_until() {
	local now end
	now=${EPOCHREALTIME/[.,]/}
	end=$((now + $(awk -v s="$1" 'BEGIN { printf "%d", s * 1000000 }')))
	shift
	until "$@"; do
		now=${EPOCHREALTIME/[.,]/}
		[ "$now" -lt "$end" ] || return 1
		sleep 0.02
	done
}

# gone PID... : none of the PIDs runs any more (a child of this shell that
# has exited but is not yet reaped counts as gone).
gone() {
	local pid state
	for pid in "$@"; do
		state=$(awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$pid/stat" 2>/dev/null) || continue
		[ -z "$state" ] || [ "$state" = Z ] || return 1
	done
}

# line_or_gone FILE ERE [PID] : FILE has a line matching ERE, or process PID
# (when given) is gone.
line_or_gone() {
	grep -Eq -- "$2" "$1" 2>/dev/null || { [ -n "${3:-}" ] && gone "$3"; }
}

# wait_grep FILE ERE SECS [PID] : wait up to SECS seconds until FILE has a
# line matching ERE; status 1 at the bound, or at once when PID exits first.
wait_grep() {
	wait_until "$3" line_or_gone "$1" "$2" "${4:-}" && grep -Eq -- "$2" "$1"
}

# wait_pid SECS PID : wait up to SECS seconds for child PID to exit: its exit
# status, or 124 (as timeout(1)) when it had to be stopped at the bound.
wait_pid() {
	if wait_until "$1" gone "$2"; then
		wait "$2"
		return
	fi
	stop_pids 2 "$2"
	return 124
}

# stop_pids SECS PID... : SIGTERM each PID, and the process group it leads if
# it leads one (timeout(1) does, for its command); wait up to SECS seconds
# for them to go, then SIGKILL what is left; the children of this shell
# among them are reaped.
stop_pids() {
	local secs=$1 pid
	shift
	[ $# -gt 0 ] || return 0
	for pid in "$@"; do
		kill -TERM -- "-$pid" 2>/dev/null
		kill -TERM "$pid" 2>/dev/null
	done
	if ! wait_until "$secs" gone "$@"; then
		for pid in "$@"; do
			kill -KILL -- "-$pid" 2>/dev/null
			kill -KILL "$pid" 2>/dev/null
		done
		wait_until 5 gone "$@"
	fi
	for pid in "$@"; do
		wait "$pid" 2>/dev/null
	done
	return 0
}
