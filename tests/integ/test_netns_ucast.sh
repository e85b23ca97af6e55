#!/usr/bin/env bash
# test_netns_ucast.sh netns|rxe - UD unicast across "hosts": two network
# namespaces joined by a veth pair (addresses inside the namespaces only).
#
#   netns  two umcast processes on each host; ping-pong across the link,
#          each host's unicast demultiplexer passing on what arrives there
#          (uc_procs netns).
#   rxe    the hosts are 10.77.0.1 (umcast) and 10.77.0.2 (rxe's address in
#          tests/data/rxe-mckey-ipv4.pcap): rxe's captured packets replayed
#          from 10.77.0.2 to a umcast unicast QP, and its replies checked as
#          rxe would check them (uc_procs rxe).
#
# Needs root (network namespaces, a raw socket for the replay): exits 77
# otherwise.  The namespaces are deleted on exit.
set -u
BIN=${UMC_BIN:?UMC_BIN is set by ctest}/uc_procs
DATA=${UMC_TEST_DATA:?UMC_TEST_DATA is set by ctest}
MODE=${1:?usage: test_netns_ucast.sh netns|rxe}
SKIP=77

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for network namespaces"; exit $SKIP; }
command -v ip >/dev/null 2>&1 || { echo "SKIP: iproute2 not installed"; exit $SKIP; }

NSA=umc-uc-a-$$
NSB=umc-uc-b-$$
if [ "$MODE" = rxe ]; then
	ADDR_A=10.77.0.1 ADDR_B=10.77.0.2
else
	X=$(($$ % 250 + 1))
	ADDR_A=10.96.$X.1 ADDR_B=10.96.$X.2
fi
trap 'ip netns del $NSA 2>/dev/null; ip netns del $NSB 2>/dev/null' EXIT
trap 'exit 130' INT TERM HUP

# Namespaces of an earlier run that was killed (SIGKILL skips the trap).
for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
	case $ns in
	umc-uc-[ab]-*)
		pid=${ns##*-}
		kill -0 "$pid" 2>/dev/null || ip netns del "$ns" 2>/dev/null
		;;
	esac
done
ip netns add "$NSA" 2>/dev/null || { echo "SKIP: cannot create network namespaces"; exit $SKIP; }
ip netns add "$NSB" || exit 1
ip -n "$NSA" link add veth-a type veth peer name veth-b netns "$NSB" || exit 1
ip -n "$NSA" addr add "$ADDR_A/24" dev veth-a
ip -n "$NSB" addr add "$ADDR_B/24" dev veth-b
for ns in "$NSA" "$NSB"; do
	ip -n "$ns" link set lo up
	ip -n "$ns" link set "veth-${ns:7:1}" up
done

case $MODE in
netns) "$BIN" netns "$NSA" "$NSB" "$ADDR_A" "$ADDR_B" ;;
rxe) "$BIN" rxe "$NSA" "$NSB" "$ADDR_A" "$ADDR_B" "$DATA/rxe-mckey-ipv4.pcap" ;;
*) echo "unknown mode $MODE"; exit 2 ;;
esac
