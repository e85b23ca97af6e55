#!/usr/bin/env bash
# test_netns_gid_gone.sh - the kernel's cma_make_mc_event(): a join whose source
# address is no longer on the interface completes with
# RDMA_CM_EVENT_MULTICAST_ERROR, status 0 (no GID to build the AH from);
# with the address still there, the same join gives MULTICAST_JOIN.
# In a network namespace with a veth pair (root; 77 otherwise).
set -u
BIN=${UMC_BIN:?UMC_BIN is set by ctest}/gid_gone
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for network namespaces"; exit 77; }
NS=umc-gid-$$ X=$(($$ % 250 + 1))
ADDR=10.97.$X.1
# shellcheck source=../lib/wait.sh
. "$(dirname "$0")/../lib/wait.sh"
trap 'ip netns del $NS 2>/dev/null' EXIT
ip netns add "$NS" 2>/dev/null || { echo "SKIP: cannot create a namespace"; exit 77; }
ip -n "$NS" link set lo up
ip -n "$NS" link add d0 type veth peer name d1
ip -n "$NS" link set d0 up
ip -n "$NS" link set d1 up

# run REMOVE: bind, optionally remove the address, join; prints the event line.
run() {
	ip -n "$NS" addr add "$ADDR/24" dev d0 2>/dev/null
	coproc P { ip netns exec "$NS" timeout 20 "$BIN" "$ADDR" 239.97.$X.1; }
	local line pid=$P_PID
	IFS= read -r -t 10 -u "${P[0]}" line
	if [ "$line" != bound ]; then
		echo "FAIL: no 'bound' line ($line)"
		stop_pids 5 "$pid"
		return 1
	fi
	[ "$1" = remove ] && ip -n "$NS" addr del "$ADDR/24" dev d0
	echo go >&"${P[1]}"
	IFS= read -r -t 10 -u "${P[0]}" line
	wait_pid 10 "$pid"
	echo "$line"
}

fails=0
out=$(run keep)
[ "$out" = "RDMA_CM_EVENT_MULTICAST_JOIN status 0" ] && echo "ok: address present: $out" ||
	{ echo "FAIL: address present: $out"; fails=$((fails + 1)); }
out=$(run remove)
[ "$out" = "RDMA_CM_EVENT_MULTICAST_ERROR status 0" ] && echo "ok: address gone: $out" ||
	{ echo "FAIL: address gone: $out"; fails=$((fails + 1)); }
echo "$((2 - fails)) passed, $fails failed"
[ $fails -eq 0 ]
