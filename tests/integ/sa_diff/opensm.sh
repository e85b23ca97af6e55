#!/usr/bin/env bash
# opensm.sh - run one command against OpenSM 3.3.23 on a private ibsim fabric.
#
#   opensm.sh [-n HCAS] [-M MCASTCAP] [-k] -- CMD [ARG...]
#
# The fabric is our own: one switch S1 and HCAS+1 single-port HCAs, H1 (where
# OpenSM runs, SIM_HOST=H1) and H2..H(HCAS+1); HCAS defaults to 2.  -M sets
# ibsim's MulticastFDBCap (default 1024, so OpenSM has MLIDs 0xC000..0xC3FF).
#
# Everything belongs to this run: a temporary directory (the topology, the
# logs, OpenSM's cache and tmp files, umad2sim's ./sys-PID trees) and a
# private IBSIM_SOCKNAME, so parallel runs and other sessions never meet.
# ibsim starts first; OpenSM starts under umad2sim (LD_PRELOAD) once ibsim
# says it is ready; CMD runs once OpenSM's log says SUBNET UP.  Both waits
# are bounded (SA_DIFF_UP_TIMEOUT seconds, default 30) and fail early when
# a daemon exits.  On any exit, both daemons are stopped by PID (TERM, then
# KILL after a bounded wait) and the directory is removed (-k keeps it).
#
# CMD runs in the temporary directory with IBSIM_SOCKNAME,
# SA_DIFF_UMAD2SIM (the umad2sim library: preload it for a node's client,
# with SIM_HOST=Hn) and SA_DIFF_DIR set, and without LD_PRELOAD.
#
# Exit status: CMD's; 77 if ibsim, opensm or umad2sim is not installed;
# 3 if the fabric did not come up.
set -u

hcas=2
mcastcap=
keep=0
while [ $# -gt 0 ]; do
	case "$1" in
	-n) hcas=$2; shift 2 ;;
	-M) mcastcap=$2; shift 2 ;;
	-k) keep=1; shift ;;
	--) shift; break ;;
	*) echo "usage: $0 [-n HCAS] [-M MCASTCAP] [-k] -- CMD [ARG...]" >&2; exit 2 ;;
	esac
done
[ $# -gt 0 ] || { echo "$0: no command" >&2; exit 2; }
case "$hcas" in '' | *[!0-9]*) echo "$0: -n needs a number" >&2; exit 2 ;; esac
[ "$hcas" -ge 1 ] && [ "$hcas" -le 30 ] || { echo "$0: -n 1..30" >&2; exit 2; }

# --- what is installed ----------------------------------------------------------
umad2sim=${SA_DIFF_UMAD2SIM:-}
if [ -z "$umad2sim" ]; then
	for f in /usr/lib/*/umad2sim/libumad2sim.so /usr/lib/umad2sim/libumad2sim.so \
		/usr/lib64/umad2sim/libumad2sim.so; do
		[ -f "$f" ] && { umad2sim=$f; break; }
	done
fi
ibsim_bin=$(command -v ibsim || true)
opensm_bin=$(command -v opensm || { [ -x /usr/sbin/opensm ] && echo /usr/sbin/opensm; } || true)
if [ -z "$ibsim_bin" ] || [ -z "$opensm_bin" ] || [ ! -f "$umad2sim" ]; then
	echo "SKIP: needs ibsim (ibsim-utils), opensm and umad2sim (libumad2sim0)" >&2
	exit 77
fi

# --- the run's own directory, socket name and clean-up ----------------------------
dir=$(mktemp -d "${TMPDIR:-/tmp}/umc-opensm.XXXXXX") || exit 3
ibsim_pid=
osm_pid=
watchdog_pid=

# shellcheck source=../../lib/wait.sh
. "$(dirname "$0")/../../lib/wait.sh"

stop() { # PID: TERM, a bounded wait, then KILL
	[ -z "$1" ] || stop_pids 5 "$1"
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	[ -n "$watchdog_pid" ] && kill -KILL "$watchdog_pid" 2>/dev/null && wait "$watchdog_pid" 2>/dev/null
	stop "$osm_pid"
	stop "$ibsim_pid"
	if [ "$keep" = 1 ]; then
		echo "opensm.sh: kept $dir" >&2
	else
		rm -rf "$dir"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# If this script is killed outright (SIGKILL: no trap runs), the watchdog
# stops the daemons: it checks every half second that the script lives.
# The daemons' PIDs are in $dir/pids.
watchdog() {
	while kill -0 $$ 2>/dev/null; do sleep 0.5; done
	kill -KILL $(cat "$dir/pids" 2>/dev/null) 2>/dev/null
	rm -rf "$dir"
}
watchdog </dev/null >/dev/null 2>&1 &
watchdog_pid=$!

export IBSIM_SOCKNAME="umcsa${$}x${RANDOM}"
cd "$dir" || exit 3

# --- the topology: S1 with H1..H(hcas+1) ---------------------------------------------
nports=$((hcas + 1))
[ "$nports" -ge 8 ] || nports=8
{
	echo "Switch	$nports \"S1\""
	for ((i = 1; i <= hcas + 1; i++)); do
		echo "[$i]	\"H$i\"[1]"
	done
	for ((i = 1; i <= hcas + 1; i++)); do
		echo
		echo "Hca	1 \"H$i\""
		echo "[1]	\"S1\"[$i]"
	done
} >net.topo

# Wait until FILE has a line matching PATTERN while PID lives, at most the
# configured time.  Polls: neither daemon offers a readiness descriptor.
wait_for() { # FILE PATTERN PID WHAT
	wait_grep "$1" "$2" "${SA_DIFF_UP_TIMEOUT:-30}" "$3" && return 0
	if gone "$3"; then
		echo "opensm.sh: $4 exited before it was ready" >&2
	else
		echo "opensm.sh: $4 not ready after ${SA_DIFF_UP_TIMEOUT:-30} s" >&2
	fi
	return 1
}

show_logs() {
	echo "--- ibsim.log" >&2; tail -20 ibsim.log >&2
	echo "--- osm.log" >&2; tail -20 osm.log >&2 2>/dev/null
}

"$ibsim_bin" -s -n ${mcastcap:+-M "$mcastcap"} net.topo >ibsim.log 2>&1 </dev/null &
ibsim_pid=$!
echo "$ibsim_pid" >>pids
wait_for ibsim.log "Network simulator ready" "$ibsim_pid" ibsim || { show_logs; exit 3; }

# -d2 flushes the log per line (SUBNET UP is in the log file only); an empty
# config file and a partition file that does not exist give OpenSM's
# defaults whatever /etc/opensm holds.
: >opensm.conf
SIM_HOST=H1 OSM_TMP_DIR=$dir OSM_CACHE_DIR=$dir LD_PRELOAD=$umad2sim \
	"$opensm_bin" -F "$dir/opensm.conf" -P "$dir/no-partitions.conf" -d2 \
	-f "$dir/osm.log" -D 0x03 >opensm.out 2>&1 </dev/null &
osm_pid=$!
echo "$osm_pid" >>pids
wait_for osm.log "SUBNET UP" "$osm_pid" opensm || { show_logs; exit 3; }

export SA_DIFF_UMAD2SIM=$umad2sim SA_DIFF_DIR=$dir
"$@"
