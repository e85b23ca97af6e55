#!/usr/bin/env bash
# fabric.sh - the switched test fabric by hand (as root): hosts in network
# namespaces on Linux bridges with IGMP/MLD snooping and a querier, or two
# such segments joined by a router that forwards no multicast
# (fabric_lib.sh says what it is made of).
#
#   fabric.sh up [-r] [-2] HOST:SEG[,SEG]...    make one; prints its name
#   fabric.sh exec NAME HOST|sw|rt CMD...       run CMD on one of its hosts
#   fabric.sh down NAME                         end its processes, remove it
#   fabric.sh run [-r] [-2] HOST:SEG... -- CMD  up, CMD (with FAB=NAME in its
#                                               environment), down, then check
#                                               that nothing of it is left
#   fabric.sh list                              the fabrics there are
#
# -r: routed (segments 0 and 1 joined by the router rt); -2: the queriers
# speak IGMPv2.  Example: a receiver on a, a send-only sender on b:
#
#   fab=$(tests/fabric/fabric.sh up a:0 b:0)
#   tests/fabric/fabric.sh exec $fab a build/bin/umc-mckey -m 239.1.2.3 -b 10.77.1.1 &
#   tests/fabric/fabric.sh exec $fab b build/bin/umc-mckey -m 239.1.2.3 -b 10.77.1.2 -s -o -w 500
#   tests/fabric/fabric.sh exec $fab sw bridge mdb show
#   tests/fabric/fabric.sh down $fab
#
# A fabric made by "up" belongs to nobody: it stays until "down".  One made
# by "run" is removed when CMD ends or "run" is interrupted (INT, TERM,
# HUP), and by the next fabric made after "run" was killed (SIGKILL).
set -u
# shellcheck source=fabric_lib.sh
. "$(dirname "$0")/fabric_lib.sh"

usage() {
	sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

# The work directory of fabric $FAB, made by "up".
fab_find_work() {
	FAB_WORK=$(ls -d "${TMPDIR:-/tmp}/$FAB".* 2>/dev/null | head -1)
	[ -n "$FAB_WORK" ] || FAB_WORK=/nonexistent
}

[ "$(id -u)" -eq 0 ] || { echo "fabric.sh: needs root (network namespaces)" >&2; exit 1; }
cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
up)
	fab_new 0
	if ! fab_up "$@" >&2; then
		fab_down
		rm -rf "$FAB_WORK"
		exit 1
	fi
	echo "$FAB"
	;;
exec)
	[ $# -ge 3 ] || usage
	FAB=$1
	ns=$(fab_ns "$2")
	shift 2
	exec ip netns exec "$ns" "$@"
	;;
down)
	[ $# -eq 1 ] || usage
	FAB=$1
	fab_find_work
	fab_down
	why=$(fab_gone) || { echo "fabric.sh: $why" >&2; exit 1; }
	rm -rf "$FAB_WORK"
	;;
run)
	args=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
	[ $# -ge 2 ] || usage
	shift
	fab_new
	cmd_pid=
	# CMD runs in the background, so that a signal ends the wait at once;
	# it is ended with the fabric.
	run_end() {
		local rc=$?
		[ -n "$cmd_pid" ] && kill -TERM "$cmd_pid" 2>/dev/null && wait "$cmd_pid"
		(exit $rc)
		fab_end
	}
	trap run_end EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
	fab_up "${args[@]}" || exit 1
	FAB=$FAB FAB_WORK=$FAB_WORK "$@" &
	cmd_pid=$!
	wait $cmd_pid
	;;
list)
	ip netns list | awk '$1 ~ /^umcfab/ {sub(/-[^-]*$/, "", $1); print $1}' | sort -u
	;;
*) usage ;;
esac
